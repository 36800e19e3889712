//! `asynq group ls`: the groups of a queue with tasks waiting to be aggregated.

use super::Context;
use crate::cli::GroupCommand;
use crate::error::CliResult;
use crate::output::{self, print_json, print_table};
use crate::view::GroupView;

/// Runs `asynq group <command>`.
pub(crate) async fn run(ctx: &Context, command: GroupCommand) -> CliResult {
    let GroupCommand::List(args) = command;
    let groups = ctx.conn.inspector.groups(&args.queue).await?;
    if ctx.json {
        print_json(&groups.iter().map(GroupView::from).collect::<Vec<_>>());
    } else if groups.is_empty() {
        println!("No groups found for queue {:?}", args.queue);
    } else {
        let mut table = output::table(["Group", "Size"]);
        for g in &groups {
            table.add_row([g.group.clone(), g.size.to_string()]);
        }
        print_table(&table);
    }
    Ok(())
}
