//! `asynq queue ...`: list, inspect, history, pause, resume and remove queues, and declare
//! sharded ones.

use super::Context;
use crate::cli::QueueCommand;
use crate::error::{Batch, CliError, CliResult};
use crate::output::{
    self, BulkBar, bytes_text, errln, error_rate, go_duration, heading, outln, print_json, print_table,
};
use crate::view::{DailyStatsView, NodeView, QueueView};
use asynq_client::{Error, QueueInfo, QueueName};
use asynq_core::queue::QueuePattern;
use serde::Serialize;

/// What Go's tool prints between the reports of several queues.
const SEPARATOR: &str = "=================================================";

/// Runs `asynq queue <command>`.
pub(crate) async fn run(ctx: &Context, command: QueueCommand) -> CliResult {
    match command {
        QueueCommand::List(args) => list(ctx, args.pattern.as_deref()).await,
        QueueCommand::Inspect(args) => inspect(ctx, &args.queues).await,
        QueueCommand::History(args) => history(ctx, &args.queues, args.days as usize).await,
        QueueCommand::Pause(args) => pause(ctx, &args.queues, true).await,
        QueueCommand::Resume(args) => pause(ctx, &args.queues, false).await,
        QueueCommand::Remove(args) => remove(ctx, &args.queues, args.force).await,
        QueueCommand::Shard(args) => shard(ctx, &args.queue, args.shards, args.reshard).await,
    }
}

/// A queue in `queue ls --json`; on a Cluster with its hash slot and nodes.
#[derive(Debug, Serialize)]
struct QueueEntry {
    queue: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    slot: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nodes: Option<Vec<NodeView>>,
    /// The sharded queue it is a shard of, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    shard_of: Option<String>,
}

/// Lists the queues, or those `pattern` matches.
async fn list(ctx: &Context, pattern: Option<&str>) -> CliResult {
    let pattern = pattern.map(QueuePattern::new).transpose()?;
    let inspector = &ctx.conn.inspector;
    let mut entries = Vec::new();
    let queues = inspector.queues().await?;
    let sharded = inspector.sharded_queues().await?;
    let shard_of = |queue: &QueueName| sharded.iter().find(|s| s.has_shard(queue)).map(|s| s.logical().to_string());
    for queue in queues.into_iter().filter(|queue| pattern.as_ref().is_none_or(|p| p.matches(queue))) {
        let location = if ctx.cluster { inspector.queue_location(&queue).await? } else { None };
        let (slot, nodes) = match location {
            Some(l) => {
                let nodes = l.nodes.into_iter().map(|n| NodeView { id: n.id, addr: n.addr }).collect();
                (Some(l.slot), Some(nodes))
            }
            None => (None, None),
        };
        let shard_of = shard_of(&queue);
        entries.push(QueueEntry { queue: queue.into_string(), slot, nodes, shard_of });
    }
    if ctx.json {
        print_json(&entries)?;
    } else if ctx.cluster {
        let mut table = output::table(["Queue", "Cluster KeySlot", "Cluster Nodes"]);
        for e in &entries {
            let nodes: Vec<String> =
                e.nodes.iter().flatten().map(|n| format!("{} {}", n.addr, n.id).trim().to_owned()).collect();
            table.add_row([e.queue.clone(), e.slot.map(|s| s.to_string()).unwrap_or_default(), nodes.join(", ")]);
        }
        print_table(&table)?;
    } else {
        for e in &entries {
            outln!("{}", e.queue)?;
        }
    }
    let sharded: Vec<_> = sharded.iter().filter(|s| pattern.as_ref().is_none_or(|p| p.matches(s.logical()))).collect();
    if !ctx.json && !sharded.is_empty() {
        outln!("\nSharded queues:")?;
        for s in sharded {
            let shards: Vec<&str> = s.shards().iter().map(|shard| shard.as_str()).collect();
            outln!("{} ({} shards): {}", s.logical(), s.count(), shards.join(", "))?;
            if let Some(d) = s.draining() {
                let old: Vec<&str> = d.shards().iter().map(|shard| shard.as_str()).collect();
                outln!("  draining generation {} ({} shards): {}", d.generation(), old.len(), old.join(", "))?;
            }
        }
    }
    Ok(())
}

async fn inspect(ctx: &Context, queues: &[String]) -> CliResult {
    let mut batch = Batch::new();
    let mut views = Vec::new();
    for (i, queue) in queues.iter().enumerate() {
        match ctx.conn.inspector.queue_info(queue).await {
            Ok(info) if ctx.json => views.push(QueueView::from(&info)),
            Ok(info) => {
                if i > 0 {
                    outln!("\n{SEPARATOR}\n")?;
                }
                print_queue_info(&info)?;
            }
            Err(e) => batch.fail(e.into()),
        }
    }
    if ctx.json {
        print_json(&views)?;
    }
    batch.finish()
}

fn print_queue_info(info: &QueueInfo) -> CliResult {
    heading("Queue Info")?;
    outln!("Name:    {}", info.queue)?;
    outln!("Size:    {}", info.size)?;
    outln!("Groups:  {}", info.groups)?;
    outln!("Latency: {}", go_duration(info.latency))?;
    outln!("Memory:  {}", bytes_text(info.memory_usage))?;
    outln!("Paused:  {}", info.paused)?;
    if !info.shards.is_empty() {
        let shards: Vec<&str> = info.shards.iter().map(|shard| shard.as_str()).collect();
        outln!("Shards:  {}", shards.join(", "))?;
    }
    if !info.draining_shards.is_empty() {
        let shards: Vec<&str> = info.draining_shards.iter().map(|shard| shard.as_str()).collect();
        outln!("Draining: {}", shards.join(", "))?;
    }
    outln!()?;
    heading("Task Count by State")?;
    let mut table = output::table(output::STATE_COLUMNS);
    table.add_row([
        info.active,
        info.pending,
        info.aggregating,
        info.scheduled,
        info.retry,
        info.archived,
        info.completed,
        info.waiting,
    ]);
    print_table(&table)?;
    outln!()?;
    heading(&format!("Daily Stats {} UTC", &crate::output::rfc3339(info.timestamp)[..10]))?;
    let mut table = output::table(["processed", "failed", "error rate", "processed (total)", "failed (total)"]);
    table.add_row([
        info.processed.to_string(),
        info.failed.to_string(),
        error_rate(info.processed, info.failed),
        info.processed_total.to_string(),
        info.failed_total.to_string(),
    ]);
    print_table(&table)
}

async fn history(ctx: &Context, queues: &[String], days: usize) -> CliResult {
    let mut batch = Batch::new();
    let mut views = Vec::new();
    for (i, queue) in queues.iter().enumerate() {
        match ctx.conn.inspector.history(queue, days).await {
            Ok(stats) if ctx.json => views.extend(stats.iter().map(DailyStatsView::from)),
            Ok(stats) => {
                if i > 0 {
                    outln!("\n{SEPARATOR}\n")?;
                }
                outln!("Queue: {queue}\n")?;
                let mut table = output::table(["date (UTC)", "processed", "failed", "error rate"]);
                for s in &stats {
                    let rate = error_rate(s.processed, s.failed);
                    table.add_row([s.date.clone(), s.processed.to_string(), s.failed.to_string(), rate]);
                }
                print_table(&table)?;
            }
            Err(e) => batch.fail(e.into()),
        }
    }
    if ctx.json {
        print_json(&views)?;
    }
    batch.finish()
}

/// The result of `pause`, `resume` or `remove` for one queue, in JSON.
#[derive(Debug, Serialize)]
struct QueueAction {
    queue: String,
    action: &'static str,
}

async fn pause(ctx: &Context, queues: &[String], pause: bool) -> CliResult {
    let mut batch = Batch::new();
    let mut done = Vec::new();
    // As in Go, a queue may be paused before it exists; say so, as it may be a typo.
    let known = ctx.conn.inspector.queues().await?;
    for queue in queues {
        let is_known = known.iter().any(|k| k == queue);
        if pause && !is_known {
            errln!("warning: queue {queue:?} does not exist (yet); it is paused for when it does");
        }
        let result = if pause {
            ctx.conn.inspector.pause_queue(queue).await
        } else {
            ctx.conn.inspector.unpause_queue(queue).await
        };
        match result {
            Ok(()) => {
                let action = if pause { "paused" } else { "unpaused" };
                if !ctx.json {
                    outln!("Successfully {action} queue {queue:?}")?;
                }
                done.push(QueueAction { queue: queue.clone(), action });
            }
            // Neither there nor paused: there is no queue by that name to resume.
            Err(Error::FailedPrecondition(_)) if !pause && !is_known => match QueueName::new(queue.as_str()) {
                Ok(queue) => batch.fail(Error::QueueNotFound { queue }.into()),
                Err(e) => batch.fail(e.into()),
            },
            Err(e) => batch.fail(e.into()),
        }
    }
    if ctx.json {
        print_json(&done)?;
    }
    batch.finish()
}

async fn remove(ctx: &Context, queues: &[String], force: bool) -> CliResult {
    let mut batch = Batch::new();
    let mut done = Vec::new();
    for queue in queues {
        let bar = BulkBar::new(ctx.json || !force, "deleting the queue's tasks");
        let removed = ctx.conn.inspector.delete_queue_with_progress(queue, force, |p| bar.update(p)).await;
        drop(bar);
        match removed {
            Ok(()) => {
                if !ctx.json {
                    outln!("Successfully removed queue {queue:?}")?;
                }
                done.push(QueueAction { queue: queue.clone(), action: "removed" });
            }
            Err(e) => batch.fail(CliError::from(e)),
        }
    }
    if ctx.json {
        print_json(&done)?;
    }
    batch.finish()
}

/// A sharded queue declared, in `queue shard --json`.
#[derive(Debug, Serialize)]
struct ShardedEntry {
    queue: String,
    shards: Vec<String>,
    /// The previous generation's shards while they drain after a reshard.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    draining: Vec<String>,
}

/// Declares `queue` as a sharded queue of `count` shards (or finds it so declared already), or
/// with `reshard` changes its count.
async fn shard(ctx: &Context, queue: &str, count: usize, reshard: bool) -> CliResult {
    let inspector = &ctx.conn.inspector;
    let declared = if reshard {
        inspector.reshard_queue(queue, count).await?
    } else {
        inspector.declare_sharded_queue(queue, count).await?
    };
    let shards: Vec<String> = declared.shards().iter().map(ToString::to_string).collect();
    let draining: Vec<String> =
        declared.draining().map(|d| d.shards().iter().map(ToString::to_string).collect()).unwrap_or_default();
    if ctx.json {
        return print_json(&ShardedEntry { queue: declared.logical().to_string(), shards, draining });
    }
    let (name, count) = (declared.logical().as_str(), declared.count());
    outln!("Sharded queue {name:?} has {count} shards: {}", shards.join(", "))?;
    if !draining.is_empty() {
        outln!("Draining (still served until empty): {}", draining.join(", "))?;
    }
    Ok(())
}
