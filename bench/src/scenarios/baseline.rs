//! The baselines the other scenarios are bounded by: Redis round trips (`PING`, alone or
//! pipelined) and the price of one `redis.call` from a script.

use crate::measure::{Measurement, Timer};
use anyhow::{Context as _, ensure};

/// The baseline the other scenarios are bounded by: `commands` `PING`s (rounded up to whole
/// pipelines) on one connection, `pipeline` per round trip, each round trip awaited before the
/// next. With `pipeline` 1 this is the rate of Redis round trips on this machine.
pub async fn redis_ping(redis_url: &str, commands: u64, pipeline: usize) -> anyhow::Result<Measurement> {
    ensure!(pipeline > 0, "the pipeline must hold at least one command");
    let round_trips = commands.div_ceil(pipeline as u64);
    let client = redis::Client::open(redis_url).with_context(|| format!("bad Redis URL {redis_url}"))?;
    let mut connection =
        client.get_multiplexed_async_connection().await.with_context(|| format!("could not connect to {redis_url}"))?;
    let mut ping = redis::pipe();
    for _ in 0..pipeline {
        ping.cmd("PING");
    }
    let timer = Timer::start();
    for _ in 0..round_trips {
        let _: Vec<String> = ping.query_async(&mut connection).await.context("PING failed")?;
    }
    Ok(timer.finish("redis-ping", round_trips * pipeline as u64, None, true))
}

/// How many `redis.call`s one `EVAL` of [`redis_calls_from_lua`] makes: a few milliseconds of
/// Redis, well under the 10 ms no command may take.
pub const CALLS_PER_EVAL: u64 = 5_000;

/// The baseline of the scripts' own cost: `calls` `HGET`s of one small hash (rounded up to whole
/// `EVAL`s of [`CALLS_PER_EVAL`]), each made by `redis.call` from Lua. Redis's CPU per call,
/// less the `HGET`'s own time in `INFO commandstats`, is what a script pays to call Redis once:
/// the price of each command our scripts (and Go's) run per task.
pub async fn redis_calls_from_lua(redis_url: &str, calls: u64) -> anyhow::Result<Measurement> {
    let evals = calls.div_ceil(CALLS_PER_EVAL);
    let client = redis::Client::open(redis_url).with_context(|| format!("bad Redis URL {redis_url}"))?;
    let mut connection =
        client.get_multiplexed_async_connection().await.with_context(|| format!("could not connect to {redis_url}"))?;
    let key = "asynq-bench:calls-from-lua";
    let () = redis::cmd("HSET")
        .arg(key)
        .arg(&["msg", &"m".repeat(106), "state", "pending"])
        .query_async(&mut connection)
        .await
        .context("HSET failed")?;
    let script =
        redis::Script::new("for _ = 1, tonumber(ARGV[1]) do redis.call('HGET', KEYS[1], 'state') end return ARGV[1]");
    // Loaded before the timer starts, so the runs below are all EVALSHA.
    let _: String = script.key(key).arg(0).invoke_async(&mut connection).await.context("EVAL failed")?;
    let timer = Timer::start();
    for _ in 0..evals {
        let _: String =
            script.key(key).arg(CALLS_PER_EVAL).invoke_async(&mut connection).await.context("EVAL failed")?;
    }
    let measurement = timer.finish("redis-calls-from-lua", evals * CALLS_PER_EVAL, None, true);
    let () = redis::cmd("DEL").arg(key).query_async(&mut connection).await.context("DEL failed")?;
    Ok(measurement)
}
