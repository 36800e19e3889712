//! The tokio plumbing that the asynq worker server (`asynq-server`) and the scheduler
//! (`asynq-scheduler`) share: background roles with a stop token, the loop of periodic roles,
//! the signals that stop a process, the host name a process reports, and a clock that follows
//! tokio's paused time in tests.
//!
//! It is plumbing for those crates, not an API of its own: applications use `rasynq`.
//!
//! ```
//! use asynq_runtime::{FirstRun, Role, run_every};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let role = Role::spawn(|stop| {
//!     tokio::spawn(async move {
//!         run_every(Duration::from_secs(5), FirstRun::Immediately, &stop, || async {}).await;
//!     })
//! });
//! role.stop().await;
//! # }
//! ```
#![doc(test(attr(deny(warnings))))]

mod clock;
mod periodic;
mod role;
mod signals;

pub use clock::TokioClock;
pub use periodic::{FirstRun, run_every};
pub use role::Role;
pub use signals::wait_for_shutdown;

/// The host name a server or scheduler reports in its records, as Go asynq's `os.Hostname`
/// does; `"unknown-host"` when none can be read.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown-host".to_owned())
}
