//! The Redis broker for asynq, wire-compatible with Go asynq v0.26: the same keys, the same
//! script semantics (one documented Lua file per script under `src/scripts/`), the same
//! protobuf messages (the key layout and the messages are public modules, `keys` and `proto`,
//! with the feature `testing`, outside semantic versioning). A task a Go producer enqueues is run by a Rust server,
//! and the other way round; Go's `asynq` CLI and asynqmon read the queues.
//!
//! ```no_run
//! use asynq_redis::RedisBroker;
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let broker = RedisBroker::connect("redis://127.0.0.1:6379/0").await?;
//! let cluster = RedisBroker::connect("redis-cluster://10.0.0.1:7000,10.0.0.2:7000").await?;
//! let sentinel = RedisBroker::connect("redis-sentinel://10.0.0.1:26379?master=mymaster").await?;
//! # let _ = (broker, cluster, sentinel); Ok(()) }
//! ```
#![doc(test(attr(deny(warnings))))]

mod aggregate;
mod backend;
mod batch;
mod broker;
mod connection;
mod control;
mod error;
mod events;
mod footprint;
#[cfg(feature = "testing")]
pub mod keys;
#[cfg(not(feature = "testing"))]
#[allow(unreachable_pub, dead_code)]
mod keys;
mod manage;
mod progress;
#[cfg(feature = "testing")]
pub mod proto;
#[cfg(not(feature = "testing"))]
#[allow(unreachable_pub, dead_code)]
mod proto;
mod pubsub;
mod rate_limit;
mod safety;
mod schedulers;
mod scripts;
mod sentinel;
mod shards;
mod signals;
mod slots;
mod step_fields;
mod steps;
mod task_metrics;
#[cfg(feature = "testing")]
pub mod testing;
mod tls;
mod workflow;

pub use broker::{RedisBroker, RedisConfig};
pub use connection::RedisTarget;
pub use error::ConnectError;
pub use keys::Namespace;
pub use manage::BULK_STEP;
pub use signals::WAIT_POLL_INTERVAL;
pub use tls::{ClientCertificate, TlsOptions};
