//! rusty-sidekiq 0.15, through the APIs its README shows.
//!
//! The producer is `Worker::perform_async` on a `bb8` pool of its own (the README's advice to
//! keep the enqueue pool apart from the fetch pool), with bb8's defaults. The worker is a
//! `Processor` on [`QUEUE`] with `ProcessorConfig::num_workers(n)`: n loops, each a blocking
//! `BRPOP` with the crate's fixed 2 s timeout, so an idle worker sends about n / 2 `BRPOP`s a
//! second, plus a stats heartbeat and a retry/schedule poll every 5 s and a periodic-jobs poll
//! every 30 s. Its pool holds n + 2 connections: each of the n loops holds one while it blocks,
//! and with bb8's default of 10 the pollers and the per-job work-set writes would wait for a
//! `BRPOP` to time out.

use std::sync::Arc;

use async_trait::async_trait;
use sidekiq::{Processor, ProcessorConfig, RedisConnectionManager, RedisPool, Worker};

use crate::{Error, Payload, Probe, QUEUE, WorkerRun};

/// The job: a no-op that reports to its probe.
#[derive(Clone)]
struct BenchWorker {
    probe: Arc<Probe>,
}

#[async_trait]
impl Worker<Payload> for BenchWorker {
    fn opts() -> sidekiq::WorkerOpts<Payload, Self> {
        sidekiq::WorkerOpts::new().queue(QUEUE)
    }

    async fn perform(&self, _args: Payload) -> sidekiq::Result<()> {
        self.probe.ran();
        Ok(())
    }
}

/// The enqueue pool [`Payload`]s are pushed with, one at a time.
pub(crate) struct Producer {
    pool: RedisPool,
}

impl Producer {
    /// Connects to the Redis at `url`.
    pub(crate) async fn connect(url: &str) -> Result<Self, Error> {
        let pool = bb8::Pool::builder().build(RedisConnectionManager::new(url)?).await?;
        Ok(Self { pool })
    }

    /// Pushes one job and waits for Redis to have it.
    pub(crate) async fn push(&mut self) -> Result<(), Error> {
        BenchWorker::perform_async(&self.pool, Payload::new()).await?;
        Ok(())
    }
}

/// Starts a processor of `concurrency` workers whose no-op job reports to `probe`: it runs while
/// the returned future is polled.
pub(crate) async fn start_worker(url: &str, concurrency: usize, probe: Arc<Probe>) -> Result<WorkerRun, Error> {
    let size = u32::try_from(concurrency + 2)?;
    let pool = bb8::Pool::builder().max_size(size).build(RedisConnectionManager::new(url)?).await?;
    let config = ProcessorConfig::default().num_workers(concurrency);
    let mut processor = Processor::new(pool, vec![QUEUE.to_owned()]).with_config(config);
    processor.register(BenchWorker { probe });
    Ok(Box::pin(async move {
        processor.run().await;
        Err("the sidekiq processor stopped".into())
    }))
}
