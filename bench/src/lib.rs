//! Benchmarks of asynq: the end-to-end scenarios that `cargo xtask bench` runs against Redis, one
//! per process of the `asynq-bench` binary, and (under `benches/`) criterion micro-benchmarks.
//!
//! Every scenario uses the same workload ([`workload`]): no-op tasks of type `bench:noop` with a
//! 40-byte payload in the queue `default`, as the peer benchmark of the `asynq` 0.1.8 crate
//! does. Each returns one [`Measurement`] of its timed phase only (connecting and shutting down
//! are outside it); the Redis side (CPU, commands) is measured by the caller around the process,
//! which is why filling a queue is a scenario of its own ([`scenarios::fill`]).

pub mod limits;
pub mod measure;
pub mod scenarios;
pub mod schedule;
pub mod steps;
pub mod workload;

pub use measure::Measurement;
