//! `asynq group ls`: the groups of a queue with tasks waiting to be aggregated; a queue that
//! does not exist is not found (exit 3), as for every other command that reads a queue.

use super::Context;
use crate::cli::GroupCommand;
use crate::error::CliResult;
use crate::output::{self, outln, print_json, print_table};
use crate::view::GroupView;
use asynq_client::Error;
use asynq_core::QueueName;

/// Runs `asynq group <command>`.
pub(crate) async fn run(ctx: &Context, command: GroupCommand) -> CliResult {
    let GroupCommand::List(args) = command;
    let inspector = &ctx.conn.inspector;
    let groups = inspector.groups(&args.queue).await?;
    // Listing groups reads only the queue's group keys, which a missing queue lacks as well as
    // a queue without groups; the queue list tells them apart.
    if groups.is_empty() && !inspector.queues().await?.iter().any(|q| *q == args.queue) {
        return Err(Error::QueueNotFound { queue: QueueName::new(args.queue)? }.into());
    }
    if ctx.json {
        print_json(&groups.iter().map(GroupView::from).collect::<Vec<_>>())?;
    } else if groups.is_empty() {
        outln!("No groups found for queue {:?}", args.queue)?;
    } else {
        let mut table = output::table(["Group", "Size"]);
        for g in &groups {
            table.add_row([g.group.to_string(), g.size.to_string()]);
        }
        print_table(&table)?;
    }
    Ok(())
}
