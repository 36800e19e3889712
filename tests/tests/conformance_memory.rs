//! The broker conformance suite (`asynq_conformance`) against `MemoryBroker`, which
//! reads every instant, expiries included, from the clock it is given and so lacks nothing. It
//! does no IO, so the suite runs on tokio's paused time: its waits take no real time.

use asynq_conformance::{BrokerFactory, Capability};
use asynq_core::{ArchiveLimits, Clock};
use asynq_memory::{MemoryBroker, MemoryConfig};
use std::sync::Arc;

/// Makes a fresh `MemoryBroker` per case.
struct MemoryFactory;

impl BrokerFactory for MemoryFactory {
    type Broker = MemoryBroker;
    type Store = MemoryBroker;

    fn name(&self) -> &'static str {
        "memory"
    }

    fn lacks(&self) -> &'static [Capability] {
        &[]
    }

    async fn broker(&self, clock: Arc<dyn Clock>) -> MemoryBroker {
        MemoryBroker::with_clock(clock)
    }

    async fn broker_with_archive_limits(&self, clock: Arc<dyn Clock>, limits: ArchiveLimits) -> MemoryBroker {
        MemoryBroker::with_config(MemoryConfig { clock, archive_limits: limits })
    }

    fn store(&self, broker: &MemoryBroker) -> MemoryBroker {
        broker.clone()
    }
}

asynq_conformance::broker_conformance!(MemoryFactory, paused_time);
