//! `asynq slots`: the tasks holding slots of shared concurrency limits, per key.

use super::Context;
use crate::cli::SlotKeys;
use crate::error::CliResult;
use crate::output::{self, outln, print_json, print_table, rfc3339};
use serde::Serialize;

/// One holder of a slot, as `--json` prints it.
#[derive(Debug, Serialize)]
struct HolderView {
    key: String,
    task_id: String,
    held_until: String,
}

/// Runs `asynq slots <key>...`.
pub(crate) async fn run(ctx: &Context, args: SlotKeys) -> CliResult {
    let mut holders = Vec::new();
    for key in &args.keys {
        for (id, until) in ctx.conn.inspector.slot_holders(key).await? {
            holders.push(HolderView { key: key.clone(), task_id: id.into_string(), held_until: rfc3339(until) });
        }
    }
    if ctx.json {
        print_json(&holders)?;
        return Ok(());
    }
    if holders.is_empty() {
        outln!("No slots held")?;
        return Ok(());
    }
    let mut table = output::table(["Key", "Task ID", "Held Until"]);
    for holder in &holders {
        table.add_row([&holder.key, &holder.task_id, &holder.held_until]);
    }
    print_table(&table)
}
