//! `asynq server ls`: the live worker servers, from their heartbeats.

use super::Context;
use crate::cli::ServerCommand;
use crate::error::CliResult;
use crate::output::{self, outln, print_json, print_table, rfc3339, state_cell};
use crate::view::ServerView;
use comfy_table::Cell;

/// Runs `asynq server <command>`.
pub(crate) async fn run(ctx: &Context, command: ServerCommand) -> CliResult {
    let ServerCommand::List = command;
    let mut servers = ctx.conn.inspector.servers().await?;
    servers.sort_by(|a, b| (&a.server.host, a.server.pid).cmp(&(&b.server.host, b.server.pid)));
    if ctx.json {
        print_json(&servers.iter().map(ServerView::from).collect::<Vec<_>>())?;
        return Ok(());
    }
    if servers.is_empty() {
        outln!("No running servers")?;
        return Ok(());
    }
    let mut table = output::table(["Host", "PID", "State", "Active Workers", "Queues", "Started"]);
    for r in &servers {
        let s = &r.server;
        table.add_row(vec![
            Cell::new(&s.host),
            Cell::new(s.pid),
            state_cell(s.status.as_str()),
            Cell::new(format!("{}/{}", r.workers.len(), s.concurrency)),
            Cell::new(output::queue_weights(&s.queues)),
            Cell::new(rfc3339(s.started)),
        ]);
    }
    print_table(&table)?;
    Ok(())
}
