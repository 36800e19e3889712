//! `asynq events`: print a queue's events, or manage its log.

use super::*;

/// `asynq events`: print a queue's events, or manage its log.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct EventsArgs {
    #[command(subcommand)]
    pub(crate) action: Option<EventsAction>,
    /// Queue whose events to print
    #[arg(short = 'q', long, required = true)]
    pub(crate) queue: Option<String>,
    /// Keep printing events as they happen, until interrupted
    #[arg(short = 'f', long)]
    pub(crate) follow: bool,
    /// Where to start: `oldest` (the oldest event kept), `latest` (only new ones) or the ID of
    /// the event printed last [default: oldest, or latest with --follow]
    #[arg(long, value_name = "POSITION")]
    pub(crate) from: Option<String>,
    /// The most events to print (without --follow)
    #[arg(long, default_value_t = 100)]
    pub(crate) limit: usize,
}

/// `asynq events <action>`
#[derive(Debug, Subcommand)]
pub(crate) enum EventsAction {
    /// Keep a log of the queue's task events (ours; Go asynq neither writes nor reads it)
    #[command(after_help = "Example:\n  asynq events enable -q emails --cap 100000")]
    Enable(EventsEnableArgs),
    /// Stop keeping the queue's event log, and drop it
    #[command(after_help = "Example:\n  asynq events disable -q emails")]
    Disable(EventsQueue),
    /// List the queues that keep event logs
    #[command(visible_alias = "list", name = "ls", after_help = "Example:\n  asynq events ls")]
    List,
}

/// `asynq events enable`
#[derive(Debug, Args)]
pub(crate) struct EventsEnableArgs {
    /// Queue whose events to log
    #[arg(short = 'q', long)]
    pub(crate) queue: String,
    /// About how many of the newest events to keep
    #[arg(long, default_value_t = asynq_core::events::EventCap::DEFAULT.get())]
    pub(crate) cap: u32,
}

/// `asynq events disable`
#[derive(Debug, Args)]
pub(crate) struct EventsQueue {
    /// Queue whose event log to drop
    #[arg(short = 'q', long)]
    pub(crate) queue: String,
}
