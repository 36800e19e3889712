//! Chaos tests of asynq over Redis: real worker and producer processes against real
//! redis-server processes, a fault injected (a worker or Redis killed, Redis paused, signals),
//! and a ledger that proves no acknowledged task is lost.
//!
//! One binary, `asynq-chaos`, has three subcommands: `worker` ([`worker`]) and `produce`
//! ([`produce`]) are the processes under test; `run` is the orchestrator ([`scenario`]),
//! which `cargo xtask chaos` runs with `--profile full` and the integration test
//! `tests/quick.rs` runs with the quick profile. The workers also run the durable-steps tasks of
//! the `durable-steps` scenario ([`steps`]).

pub mod produce;
pub mod scenario;
pub mod steps;
pub mod worker;

pub use scenario::{Profile, Report, Scenario};
