//! apalis 1.0 with its Redis storage (`apalis-redis` 1.0), through the APIs its READMEs show.
//!
//! The producer and the worker each use a `RedisStorage` on a `ConnectionManager`
//! (`apalis_redis::connect`), with the default `Config` (batches of 10, a heartbeat every 30 s,
//! locks, results and events on) but the queue named [`QUEUE`] (`RedisStorage::new` names it
//! after the argument type). `TaskSink::push` runs one Lua script per task, which stores the task
//! in the queue's scheduled set, due at once; the worker's next fetch moves due tasks to the
//! active list and takes them. The worker is a `WorkerBuilder` with
//! `.concurrency(n).parallelize(tokio::spawn)`. It does not poll: an idle worker fetches again
//! when a handler of its own finishes or its heartbeat fires, so a task pushed to an idle worker
//! can wait up to 30 s.

use std::sync::Arc;

use apalis::prelude::*;
use apalis_redis::{Config, ConnectionManager, RedisStorage};

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

/// Starts a worker at `concurrency` whose no-op handler reports to `probe`: the worker runs
/// while the returned future is polled.
pub(crate) async fn start_worker(url: &str, concurrency: usize, probe: Arc<Probe>) -> Result<WorkerRun, Error> {
    let conn = apalis_redis::connect(url).await?;
    let backend = RedisStorage::<Payload, _>::new(conn).with_config(Config::default().queue(QUEUE));
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
