//! `asynq workflow`: list, inspect and cancel workflows.

use super::*;

/// `asynq workflow ...`
#[derive(Debug, Subcommand)]
pub(crate) enum WorkflowCommand {
    /// List the workflows kept (for 7 days after they are stored), newest first
    #[command(visible_alias = "list", name = "ls")]
    #[command(after_help = "Example:\n  asynq workflow ls --page 2 --size 50")]
    List(WorkflowListArgs),
    /// Show a workflow's tasks, parents first, with each task's state
    #[command(after_help = "Example:\n  asynq workflow inspect 2f1d6c1e-8e8f-4f0c-9d0c-5b8d3f6f3a51 --json")]
    Inspect(WorkflowInspectArgs),
    /// Cancel a workflow: its waiting, pending, scheduled and retry tasks are archived without
    /// running; servers are asked to stop its running ones
    #[command(after_help = "Example:\n  asynq workflow cancel 2f1d6c1e-8e8f-4f0c-9d0c-5b8d3f6f3a51")]
    Cancel(WorkflowInspectArgs),
}

/// `asynq workflow ls`
#[derive(Debug, Args)]
pub(crate) struct WorkflowListArgs {
    /// Page number, from 1 (at most 1000000)
    #[arg(long, default_value_t = 1, value_parser = in_range::<1, MAX_PAGE>)]
    pub(crate) page: u32,
    /// Page size (1 to 10000)
    #[arg(long, default_value_t = 30, value_parser = in_range::<1, MAX_PAGE_SIZE>)]
    pub(crate) size: u32,
}

/// `asynq workflow inspect` and `asynq workflow cancel`
#[derive(Debug, Args)]
pub(crate) struct WorkflowInspectArgs {
    /// The workflow's ID
    pub(crate) id: String,
}
