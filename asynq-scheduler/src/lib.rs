//! Periodic tasks for asynq: a [`Scheduler`] enqueues tasks on cron specs through an
//! `asynq_client::Client`, and a [`PeriodicTaskManager`] keeps its entries in step with a
//! configuration source. It is the producer side's tool: a cron-only process depends on this
//! crate and a broker, not on the worker server.
//!
//! Specs have five fields, descriptors (`@hourly`, `@daily`, ...), `@every <Go duration>`, and
//! a time zone of the scheduler's or the spec's own (`CRON_TZ=Europe/Paris 0 9 * * 1-5`). The
//! scheduler publishes its entries and each entry's history where Go asynq's does, so Go's
//! `asynq cron ls` and `asynq cron history` show them; replicas enqueue each fire once between
//! them.
//!
//! ```
//! use asynq_core::{Task, TaskOptions};
//! use asynq_memory::MemoryBroker;
//! use asynq_scheduler::{Scheduler, SchedulerConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), asynq_scheduler::SchedulerError> {
//! let scheduler = Scheduler::new(MemoryBroker::new(), SchedulerConfig::default())?;
//! scheduler.register("@every 30s", Task::new("metrics:flush", ""), TaskOptions::new())?;
//! scheduler.register("0 9 * * 1-5", Task::new("report:daily", ""), TaskOptions::new().queue("low"))?;
//! # Ok(())
//! # }
//! ```
#![doc(test(attr(deny(warnings))))]

pub mod periodic_task_manager;
mod schedule;
pub mod scheduler;

pub use periodic_task_manager::{
    PeriodicTaskConfig, PeriodicTaskConfigProvider, PeriodicTaskManager, PeriodicTaskManagerConfig, ProviderError,
    SyncReport,
};
pub use schedule::SpecError;
pub use scheduler::{FireOutcome, PostEnqueueFn, PreEnqueueFn, Scheduler, SchedulerConfig, SchedulerError};
