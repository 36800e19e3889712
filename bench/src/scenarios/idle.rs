//! The idle scenarios: what a server (or many) costs Redis with nothing to do, and how long
//! `Inspector::servers()` takes with many servers.

use super::latency::Layout;
use super::{connect, noop, server_config, with_empty_queues};
use crate::measure::{Measurement, Timer, percentile};
use crate::workload::IDLE_QUEUES;
use anyhow::{Context as _, ensure};
use asynq_server::{Config, Server, handler_fn};
use std::time::{Duration, Instant};

/// Runs a server with `concurrency` on three empty queues ([`IDLE_QUEUES`]), or on the queues
/// of `layout` (the sampled queue included), for `duration`; what it costs Redis meanwhile is
/// measured from outside.
pub async fn idle(
    redis_url: &str,
    concurrency: usize,
    layout: Option<Layout>,
    duration: Duration,
) -> anyhow::Result<Measurement> {
    let config = match layout {
        Some(layout) => layout.prepare(redis_url, concurrency).await?.0,
        None => server_config(concurrency, &with_empty_queues(&IDLE_QUEUES, 0)),
    };
    serve_idle(redis_url, config, "idle", duration).await
}

/// Runs a no-op server with `config` for `duration`, measured as scenario `name`.
pub(super) async fn serve_idle(
    redis_url: &str,
    config: Config,
    name: &str,
    duration: Duration,
) -> anyhow::Result<Measurement> {
    let concurrency = config.concurrency;
    let mut server = Server::new(connect(redis_url).await?, config)?;
    let timer = Timer::start();
    server.start(handler_fn(noop))?;
    tokio::time::sleep(duration).await;
    let measurement = timer.finish(name, 0, Some(concurrency), false);
    server.shutdown().await;
    Ok(measurement)
}

/// How many times `idle --servers` times `Inspector::servers()` after its idle time; it
/// reports the median.
const SERVERS_LS_CALLS: usize = 5;

/// Runs `servers` servers in this process, each with its own connection and `concurrency`, on
/// the three queues of [`IDLE_QUEUES`], for `duration`; what they cost Redis meanwhile is
/// measured from outside. Then times `Inspector::servers()` (what `asynq server ls` calls)
/// 5 times and reports the median as
/// [`Measurement::servers_ls_ms`], after checking that it lists every server.
pub async fn idle_servers(
    redis_url: &str,
    servers: usize,
    concurrency: usize,
    duration: Duration,
) -> anyhow::Result<Measurement> {
    ensure!(servers > 0, "there must be at least one server");
    let config = server_config(concurrency, &with_empty_queues(&IDLE_QUEUES, 0));
    let mut running = Vec::with_capacity(servers);
    for _ in 0..servers {
        running.push(Server::new(connect(redis_url).await?, config.clone())?);
    }
    let timer = Timer::start();
    for server in &mut running {
        server.start(handler_fn(noop))?;
    }
    tokio::time::sleep(duration).await;
    let mut measurement = timer.finish("idle", 0, Some(concurrency), false);
    let inspector = asynq_client::Inspector::new(connect(redis_url).await?);
    let mut listed = Vec::new();
    let mut took_ms = Vec::new();
    for _ in 0..SERVERS_LS_CALLS {
        let started = Instant::now();
        listed = inspector.servers().await.context("Inspector::servers failed")?;
        took_ms.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let mut stopping = tokio::task::JoinSet::new();
    for mut server in running {
        stopping.spawn(async move { server.shutdown().await });
    }
    while stopping.join_next().await.is_some() {}
    ensure!(listed.len() >= servers, "Inspector::servers listed {} servers of {servers}", listed.len());
    took_ms.sort_by(f64::total_cmp);
    measurement.servers_ls_ms = percentile(&took_ms, 50.0);
    Ok(measurement)
}
