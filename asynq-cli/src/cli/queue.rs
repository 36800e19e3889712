//! `asynq queue` and `asynq group`: list, inspect, pause, shard and remove queues, and list their
//! groups.

use super::*;

/// `asynq queue ls` arguments.
#[derive(Debug, Args)]
pub(crate) struct QueueListArgs {
    /// Only the queues a server's queue pattern (such as `tenant:*`) matches: those it serves
    #[arg(long = "match", value_name = "PATTERN")]
    pub(crate) pattern: Option<String>,
}

/// `asynq queue ...`
#[derive(Debug, Subcommand)]
pub(crate) enum QueueCommand {
    /// List queues
    #[command(visible_alias = "list", name = "ls")]
    #[command(after_help = "Example:\n  asynq queue ls\n  asynq queue ls --match 'tenant:*'")]
    List(QueueListArgs),
    /// Display detailed information on one or more queues
    #[command(after_help = "Example:\n  asynq queue inspect critical default")]
    Inspect(QueueNames),
    /// Display historical aggregate data from one or more queues
    #[command(after_help = "Example:\n  asynq queue history critical -x 30")]
    History(QueueHistoryArgs),
    /// Pause one or more queues
    #[command(after_help = "Example:\n  asynq queue pause emails")]
    Pause(QueueNames),
    /// Resume (unpause) one or more queues
    #[command(visible_alias = "unpause")]
    #[command(after_help = "Example:\n  asynq queue resume emails")]
    Resume(QueueNames),
    /// Remove one or more queues
    #[command(visible_aliases = ["rm", "delete"])]
    #[command(after_help = "Example:\n  asynq queue rm old-queue --force")]
    Remove(QueueRemoveArgs),
    /// Declare a sharded queue: one logical queue stored as K queues (its shards)
    ///
    /// Servers serve it with `Config::sharded_queue`, clients place tasks on its shards by
    /// themselves; declaring it again with the same count changes nothing.
    /// With `--reshard`, changes the count of a sharded queue: a new generation of shards takes
    /// the new tasks while the previous one drains (its tasks still run), dropped by the servers
    /// once empty, a minute after the reshard at the earliest.
    #[command(after_help = "Example:\n  asynq queue shard orders 8\n  asynq queue shard orders 12 --reshard")]
    Shard(QueueShardArgs),
}

/// `asynq queue shard`
#[derive(Debug, Args)]
pub(crate) struct QueueShardArgs {
    /// The logical queue's name (without `~`, which names its shards)
    #[arg(value_name = "QUEUE")]
    pub(crate) queue: String,
    /// How many shards (1 to 64)
    #[arg(value_name = "K")]
    pub(crate) shards: usize,
    /// Change the count of a queue declared already (refused while a previous reshard drains)
    #[arg(long)]
    pub(crate) reshard: bool,
}

/// One or more queue names.
#[derive(Debug, Args)]
pub(crate) struct QueueNames {
    /// Queue names
    #[arg(required = true, value_name = "QUEUE")]
    pub(crate) queues: Vec<String>,
}

/// `asynq queue history`
#[derive(Debug, Args)]
pub(crate) struct QueueHistoryArgs {
    /// Queue names
    #[arg(required = true, value_name = "QUEUE")]
    pub(crate) queues: Vec<String>,
    /// Show data from the last x days (1 to 90: Redis keeps daily statistics for 90 days)
    #[arg(short = 'x', long, default_value_t = 10, value_parser = in_range::<1, MAX_HISTORY_DAYS>)]
    pub(crate) days: u32,
}

/// `asynq queue remove`
#[derive(Debug, Args)]
pub(crate) struct QueueRemoveArgs {
    /// Queue names
    #[arg(required = true, value_name = "QUEUE")]
    pub(crate) queues: Vec<String>,
    /// Remove the queue regardless of its size
    #[arg(short = 'f', long)]
    pub(crate) force: bool,
}

/// `asynq group ...`
#[derive(Debug, Subcommand)]
pub(crate) enum GroupCommand {
    /// List groups of a queue
    #[command(visible_alias = "list", name = "ls")]
    #[command(after_help = "Example:\n  asynq group ls -q notifications")]
    List(GroupListArgs),
}

/// `asynq group ls`
#[derive(Debug, Args)]
pub(crate) struct GroupListArgs {
    /// Queue to inspect
    #[arg(short = 'q', long)]
    pub(crate) queue: String,
}
