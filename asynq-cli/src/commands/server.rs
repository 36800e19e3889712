//! `asynq server ls`: the live worker servers, from their heartbeats; `asynq server quiet` and
//! `asynq server stop`: requests that those servers read on their next heartbeat.

use super::Context;
use crate::cli::{ServerCommand, ServerRequestArgs};
use crate::error::{Batch, CliResult};
use crate::output::{self, outln, print_json, print_table, rfc3339, state_cell};
use crate::view::ServerView;
use asynq_client::ServerRequest;
use comfy_table::Cell;
use serde::Serialize;

/// Runs `asynq server <command>`.
pub(crate) async fn run(ctx: &Context, command: ServerCommand) -> CliResult {
    match command {
        ServerCommand::List => list(ctx).await,
        ServerCommand::Quiet(args) => request(ctx, args, ServerRequest::Quiet).await,
        ServerCommand::Stop(args) => request(ctx, args, ServerRequest::Stop).await,
    }
}

async fn list(ctx: &Context) -> CliResult {
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
    let mut table = output::table(["ID", "Host", "PID", "State", "Active Workers", "Queues", "Started"]);
    for r in &servers {
        let s = &r.server;
        table.add_row(vec![
            Cell::new(&s.server_id),
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

/// One request sent, in JSON.
#[derive(Debug, Serialize)]
struct RequestSent {
    server: String,
    request: &'static str,
}

/// Sends `request` to each server named (every live one with `--all`), reporting each refusal
/// (an unknown ID writes nothing) and going on with the others.
async fn request(ctx: &Context, args: ServerRequestArgs, request: ServerRequest) -> CliResult {
    let ids = if args.all {
        ctx.conn.inspector.servers().await?.into_iter().map(|r| r.server.server_id).collect()
    } else {
        args.ids
    };
    if ids.is_empty() && !ctx.json {
        outln!("No running servers")?;
    }
    let mut batch = Batch::new();
    let mut sent = Vec::new();
    for id in ids {
        match ctx.conn.inspector.request_server(&id, request).await {
            Ok(()) => {
                if !ctx.json {
                    let what = match request {
                        ServerRequest::Quiet => "it finishes its running tasks and takes no new ones",
                        ServerRequest::Stop => "it shuts down gracefully",
                    };
                    outln!("Sent {request} request to server {id}: {what} after its next heartbeat")?;
                }
                sent.push(RequestSent { server: id, request: request.as_str() });
            }
            Err(e) => batch.fail(e.into()),
        }
    }
    if ctx.json {
        print_json(&sent)?;
    }
    batch.finish()
}
