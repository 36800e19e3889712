//! `asynq server`, `asynq cron` and `asynq slots`: the running servers, the scheduler's entries and
//! the shared concurrency slots tasks hold.

use super::*;

/// `asynq slots`
#[derive(Debug, Args)]
pub(crate) struct SlotKeys {
    /// Keys of shared concurrency limits
    #[arg(required = true, value_name = "KEY")]
    pub(crate) keys: Vec<String>,
}

/// `asynq server ...`
#[derive(Debug, Subcommand)]
pub(crate) enum ServerCommand {
    /// List servers
    #[command(visible_alias = "list", name = "ls")]
    #[command(after_help = "Example:\n  asynq server ls")]
    List,
    /// Quiet servers: each finishes the tasks it runs and takes no new one, reporting itself
    /// `stopped` (as SIGTSTP does); read on its next heartbeat. Go asynq's servers ignore it
    #[command(
        after_help = "Example:\n  asynq server quiet 8f2a6c4e-1d3b-4f5a-9c7e-2b1d0e3f4a5b\n  asynq server quiet --all"
    )]
    Quiet(ServerRequestArgs),
    /// Stop servers gracefully, as SIGTERM does: each finishes or gives back its running tasks
    /// within its shutdown timeout and exits `run`; read on its next heartbeat. Go asynq's
    /// servers ignore it
    #[command(
        after_help = "Example:\n  asynq server stop 8f2a6c4e-1d3b-4f5a-9c7e-2b1d0e3f4a5b\n  asynq server stop --all"
    )]
    Stop(ServerRequestArgs),
}

/// `asynq server quiet` and `asynq server stop`
#[derive(Debug, Args)]
pub(crate) struct ServerRequestArgs {
    /// IDs of the servers (the ID column of `asynq server ls --json`)
    #[arg(value_name = "SERVER_ID", required_unless_present = "all", conflicts_with = "all")]
    pub(crate) ids: Vec<String>,
    /// Every live server
    #[arg(long)]
    pub(crate) all: bool,
}

/// `asynq cron ...`
#[derive(Debug, Subcommand)]
pub(crate) enum CronCommand {
    /// List cron entries
    #[command(visible_alias = "list", name = "ls")]
    #[command(after_help = "Example:\n  asynq cron ls")]
    List,
    /// Show the tasks one or more cron entries enqueued, newest first
    #[command(after_help = "Example:\n  asynq cron history 3f9a2c1e-0b7d-4e8f-a1c2-d3e4f5a6b7c8 --size 10")]
    History(CronHistoryArgs),
}

/// `asynq cron history`
#[derive(Debug, Args)]
pub(crate) struct CronHistoryArgs {
    /// Entry IDs
    #[arg(required = true, value_name = "ENTRY_ID")]
    pub(crate) entries: Vec<String>,
    /// Page number, from 1 (at most 1000000)
    #[arg(long, default_value_t = 1, value_parser = in_range::<1, MAX_PAGE>)]
    pub(crate) page: u32,
    /// Page size (1 to 10000)
    #[arg(long, default_value_t = 30, value_parser = in_range::<1, MAX_PAGE_SIZE>)]
    pub(crate) size: u32,
}
