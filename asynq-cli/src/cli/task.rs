//! `asynq task`: list, inspect, enqueue, cancel, run, archive and delete tasks, one or in bulk.

use super::*;

/// `asynq task ...`
#[derive(Debug, Subcommand)]
pub(crate) enum TaskCommand {
    /// List tasks of one state of a queue, one page at a time
    #[command(visible_alias = "list", name = "ls")]
    #[command(after_help = "Example:\n  asynq task ls -q default -s retry --size 10 --page 2")]
    List(TaskListArgs),
    /// Display detailed information on the specified task
    #[command(after_help = "Example:\n  asynq task inspect -q default -i 7f7c5f1e-2b8c-4c6e-9d0e-5a1b2c3d4e5f")]
    Inspect(TaskRef),
    /// Cancel one or more active tasks
    #[command(after_help = "Example:\n  asynq task cancel 7f7c5f1e-2b8c-4c6e-9d0e-5a1b2c3d4e5f")]
    Cancel(TaskCancelArgs),
    /// Archive a task with the given id
    #[command(after_help = "Example:\n  asynq task archive -q default -i report-q3")]
    Archive(TaskRef),
    /// Delete a task with the given id
    #[command(visible_aliases = ["remove", "rm"])]
    #[command(after_help = "Example:\n  asynq task delete -q default -i report-q3")]
    Delete(TaskRef),
    /// Run a task with the given id (make it pending now)
    #[command(after_help = "Example:\n  asynq task run -q default -i report-q3")]
    Run(TaskRef),
    /// Enqueue a task
    #[command(
        after_help = "Example:\n  asynq task enqueue -t report:build -l '{\"quarter\":3}' --queue critical --process-in 1h --id report-q3"
    )]
    Enqueue(Box<TaskEnqueueArgs>),
    /// Archive all tasks in the given state (pending, aggregating, scheduled, retry)
    #[command(after_help = "Example:\n  asynq task archiveall -q default -s retry
  asynq task archiveall -q default -s pending --force

Archiving trims the archive to its limits (--archive-max-size, --archive-max-age); when that would
drop archived tasks, archiveall says how many and archives nothing unless --force is given.")]
    Archiveall(ArchiveAllArgs),
    /// Delete all tasks in the given state (pending, aggregating, scheduled, retry, archived, completed)
    #[command(after_help = "Example:\n  asynq task deleteall -q default -s archived")]
    Deleteall(BulkArgs),
    /// Run all tasks in the given state (scheduled, retry, archived, aggregating)
    #[command(after_help = "Example:\n  asynq task runall -q default -s aggregating -g daily-digest")]
    Runall(BulkArgs),
}

/// `asynq task ls`
#[derive(Debug, Args)]
pub(crate) struct TaskListArgs {
    /// Queue to inspect
    #[arg(short = 'q', long)]
    pub(crate) queue: String,
    /// State of the tasks: active, pending, aggregating, scheduled, retry, archived or completed
    #[arg(short = 's', long)]
    pub(crate) state: String,
    /// Page number, from 1 (at most 1000000)
    #[arg(long, default_value_t = 1, value_parser = in_range::<1, MAX_PAGE>)]
    pub(crate) page: u32,
    /// Page size (1 to 10000)
    #[arg(long, default_value_t = 30, value_parser = in_range::<1, MAX_PAGE_SIZE>)]
    pub(crate) size: u32,
    /// Group to inspect (required for listing aggregating tasks)
    #[arg(short = 'g', long)]
    pub(crate) group: Option<String>,
}

/// A task named by queue and ID.
#[derive(Debug, Args)]
pub(crate) struct TaskRef {
    /// Queue to which the task belongs
    #[arg(short = 'q', long)]
    pub(crate) queue: String,
    /// ID of the task
    #[arg(short = 'i', long)]
    pub(crate) id: String,
}

/// `asynq task cancel`
#[derive(Debug, Args)]
pub(crate) struct TaskCancelArgs {
    /// IDs of the tasks to cancel
    #[arg(required = true, value_name = "TASK_ID")]
    pub(crate) ids: Vec<String>,
}

/// `asynq task enqueue`
#[derive(Debug, Args)]
pub(crate) struct TaskEnqueueArgs {
    /// Type name to enqueue the task as
    #[arg(short = 't', long = "type-name", alias = "type_name")]
    pub(crate) type_name: String,
    /// Payload to enqueue (taken as text)
    #[arg(short = 'l', long)]
    pub(crate) payload: String,
    /// Maximum retries (at most 2147483647)
    #[arg(long, value_parser = in_range::<0, MAX_RETRY>)]
    pub(crate) retry: Option<u32>,
    /// Queue to enqueue the task to [default: default]
    #[arg(long)]
    pub(crate) queue: Option<String>,
    /// ID to enqueue the task as [default: a new UUID]
    #[arg(long)]
    pub(crate) id: Option<String>,
    /// Timeout for the task (how long it can run), a Go duration such as 30s or 1m30s
    #[arg(long)]
    pub(crate) timeout: Option<String>,
    /// Deadline for the task, RFC 3339 (2024-12-14T01:23:45Z)
    #[arg(long)]
    pub(crate) deadline: Option<String>,
    /// Unique period for the task (a Go duration): no task of the same type and payload is enqueued
    /// into the queue within it
    #[arg(long)]
    pub(crate) unique: Option<String>,
    /// Process the task at this time, RFC 3339
    #[arg(long = "process-at", alias = "process_at")]
    pub(crate) process_at: Option<String>,
    /// Process the task after this delay, a Go duration
    #[arg(long = "process-in", alias = "process_in")]
    pub(crate) process_in: Option<String>,
    /// Retention window for the completed task, a Go duration
    #[arg(long)]
    pub(crate) retention: Option<String>,
    /// Group for the task (to be aggregated)
    #[arg(long)]
    pub(crate) group: Option<String>,
    /// Debounce key: the task takes the place of the task last enqueued with this key into the
    /// queue while that one is still scheduled (with --debounce-window)
    #[arg(long, requires = "debounce_window")]
    pub(crate) debounce: Option<String>,
    /// How long after the last enqueue with --debounce the task runs, a Go duration
    #[arg(long = "debounce-window", alias = "debounce_window", requires = "debounce")]
    pub(crate) debounce_window: Option<String>,
    /// Replace the waiting (pending or scheduled) task with this ID instead of adding one
    #[arg(long, value_name = "TASK_ID", conflicts_with_all = ["id", "debounce"])]
    pub(crate) replace: Option<String>,
    /// Priority of the task within its queue, from -10 to 10, higher first [default: 0, Go's
    /// pending list]
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) priority: Option<i32>,
}

/// `asynq task archiveall`
#[derive(Debug, Args)]
pub(crate) struct ArchiveAllArgs {
    /// The tasks to archive.
    #[command(flatten)]
    pub(crate) bulk: BulkArgs,
    /// Archive even when the archive's limits would drop archived tasks (without it, such an
    /// archive is refused, saying how many it would drop, and nothing is archived)
    #[arg(long)]
    pub(crate) force: bool,
}

/// `asynq task archiveall|deleteall|runall`
#[derive(Debug, Args)]
pub(crate) struct BulkArgs {
    /// Queue to which the tasks belong
    #[arg(short = 'q', long)]
    pub(crate) queue: String,
    /// State of the tasks
    #[arg(short = 's', long)]
    pub(crate) state: String,
    /// Group to which the tasks belong (required for aggregating tasks)
    #[arg(short = 'g', long)]
    pub(crate) group: Option<String>,
}
