//! The guide: one chapter per capability, each with examples that compile and run as this
//! crate's doctests. The same chapters read as Markdown under `docs/guide/` in the repository.

#[doc = include_str!("../guide/typed-jobs.md")]
pub mod typed_jobs {}

#[doc = include_str!("../guide/retries-and-errors.md")]
pub mod retries_and_errors {}

#[doc = include_str!("../guide/scheduling.md")]
pub mod scheduling {}

#[doc = include_str!("../guide/uniqueness-and-debounce.md")]
pub mod uniqueness_and_debounce {}

#[doc = include_str!("../guide/groups.md")]
pub mod groups {}

#[doc = include_str!("../guide/workflows.md")]
pub mod workflows {}

#[doc = include_str!("../guide/progress-and-events.md")]
pub mod progress_and_events {}

#[doc = include_str!("../guide/durable-steps.md")]
pub mod durable_steps {}

#[doc = include_str!("../guide/queues.md")]
pub mod queues {}

#[doc = include_str!("../guide/limits.md")]
pub mod limits {}

#[doc = include_str!("../guide/periodic-tasks.md")]
pub mod periodic_tasks {}

#[doc = include_str!("../guide/operating.md")]
pub mod operating {}

#[doc = include_str!("../guide/redis.md")]
pub mod redis {}

#[doc = include_str!("../guide/testing.md")]
pub mod testing {}

#[doc = include_str!("../guide/coming-from.md")]
pub mod coming_from {}
