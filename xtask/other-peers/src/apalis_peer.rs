//! apalis 1.0 with its Redis storage (`apalis-redis` 1.0), through the APIs its READMEs show.
//!
//! The producer is a `RedisStorage` on one `ConnectionManager` (`apalis_redis::connect`), and
//! `TaskSink::push` runs one Lua script per task. The worker is a `WorkerBuilder` with
//! `.concurrency(n).parallelize(tokio::spawn)`, on a storage made by `RedisStorageFactory`: the
//! storage that subscribes to the queue's pub/sub channel and fetches when a push announces a
//! task. The plain `RedisStorage` backend, fetching only when a handler finishes or its 30 s
//! heartbeat fires, would leave an idle worker asleep for up to 30 s. Everything else is the
//! default `Config` (batches of 10, a heartbeat every 30 s, locks, results and events on), with
//! the queue named [`QUEUE`]; the factory's own `create()` would name it after the argument type,
//! whose `::` its channel parsing does not expect.

use std::sync::Arc;

use apalis::prelude::*;
use apalis_redis::factory::RedisStorageFactory;
use apalis_redis::{Client, Config, ConnectionManager, RedisStorage};

use crate::{Error, Payload, Probe, QUEUE, WorkerRun};

/// The storage [`Payload`]s are pushed with, one at a time.
pub(crate) struct Producer {
    storage: RedisStorage<Payload, ConnectionManager>,
}

impl Producer {
    /// Connects to the Redis at `url`.
    pub(crate) async fn connect(url: &str) -> Result<Self, Error> {
        let conn = apalis_redis::connect(url).await?;
        Ok(Self { storage: RedisStorage::new(conn).with_config(Config::default().queue(QUEUE)) })
    }

    /// Pushes one task and waits for Redis to have it.
    pub(crate) async fn push(&mut self) -> Result<(), Error> {
        self.storage.push(Payload::new()).await?;
        Ok(())
    }
}

/// The handler: reports its start and returns.
async fn noop(_task: Payload, probe: Data<Arc<Probe>>) -> Result<(), BoxDynError> {
    probe.ran();
    Ok(())
}

/// Starts a worker at `concurrency`, woken by the storage's pub/sub channel, whose no-op handler
/// reports to `probe`: the worker runs while the returned future is polled.
pub(crate) async fn start_worker(url: &str, concurrency: usize, probe: Arc<Probe>) -> Result<WorkerRun, Error> {
    // The factory's subscription takes pushed messages, which only RESP3 connections carry.
    let separator = if url.contains('?') { '&' } else { '?' };
    let mut factory = RedisStorageFactory::new(Client::open(format!("{url}{separator}protocol=resp3"))?).await?;
    let backend = BackendFactory::<Payload>::create_with_config(&mut factory, Config::default().queue(QUEUE))?;
    let worker = WorkerBuilder::new("other-peers-apalis")
        .backend(backend)
        .concurrency(concurrency)
        .parallelize(tokio::spawn)
        .data(probe)
        .build(noop);
    Ok(Box::pin(async move {
        worker.run().await.map_err(|error| format!("the apalis worker stopped: {error}"))?;
        Err("the apalis worker stopped".into())
    }))
}
