//! `asynq cron ...`: the entries of the live schedulers, and the tasks each entry enqueued.

use super::Context;
use crate::cli::{CronCommand, CronHistoryArgs};
use crate::error::{Batch, CliResult};
use crate::output::{self, due, outln, past, payload_text, print_json, print_table, rfc3339};
use crate::view::{CronEntryView, EnqueueEventView};
use asynq_client::Page;
use serde::Serialize;

/// Runs `asynq cron <command>`.
pub(crate) async fn run(ctx: &Context, command: CronCommand) -> CliResult {
    match command {
        CronCommand::List => list(ctx).await,
        CronCommand::History(args) => history(ctx, args).await,
    }
}

async fn list(ctx: &Context) -> CliResult {
    let mut entries = ctx.conn.inspector.scheduler_entries().await?;
    entries.sort_by(|a, b| a.spec.cmp(&b.spec).then(a.id.cmp(&b.id)));
    if ctx.json {
        print_json(&entries.iter().map(CronEntryView::from).collect::<Vec<_>>())?;
        return Ok(());
    }
    if entries.is_empty() {
        outln!("No scheduler entries")?;
        return Ok(());
    }
    let mut table = output::table(["EntryID", "Spec", "Type", "Payload", "Options", "Next", "Prev"]);
    for e in &entries {
        table.add_row([
            e.id.clone(),
            e.spec.clone(),
            e.task_type.clone(),
            payload_text(&e.task_payload),
            e.options.join(", "),
            due(e.next),
            past(e.prev),
        ]);
    }
    print_table(&table)?;
    Ok(())
}

/// The tasks one entry enqueued, in JSON.
#[derive(Debug, Serialize)]
struct EntryHistory {
    entry_id: String,
    events: Vec<EnqueueEventView>,
}

async fn history(ctx: &Context, args: CronHistoryArgs) -> CliResult {
    let page = Page { size: args.size as usize, number: args.page as usize - 1 };
    let mut batch = Batch::new();
    let mut histories = Vec::new();
    for (i, entry) in args.entries.iter().enumerate() {
        let events = match ctx.conn.inspector.scheduler_history(entry, page).await {
            Ok(events) => events,
            Err(e) => {
                batch.fail(e.into());
                continue;
            }
        };
        if ctx.json {
            let events = events.iter().map(EnqueueEventView::from).collect();
            histories.push(EntryHistory { entry_id: entry.clone(), events });
            continue;
        }
        if i > 0 {
            outln!()?;
        }
        outln!("Entry: {entry}\n")?;
        if events.is_empty() {
            outln!("No scheduler enqueue events found")?;
            continue;
        }
        let mut table = output::table(["TaskID", "EnqueuedAt"]);
        for ev in &events {
            table.add_row([ev.task_id.clone(), rfc3339(ev.enqueued_at)]);
        }
        print_table(&table)?;
    }
    if ctx.json {
        print_json(&histories)?;
    }
    batch.finish()
}
