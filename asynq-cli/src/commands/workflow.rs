//! `asynq workflow ls`, `inspect` and `cancel`: the workflows kept, one workflow's tasks with
//! their states, and cancelling one; an unknown workflow is not found (exit 3).

use super::Context;
use crate::cli::WorkflowCommand;
use crate::error::CliResult;
use crate::output::{self, outln, past, payload_text, print_json, print_table};
use crate::view::{TaskView, WorkflowSummaryView};
use asynq_client::{WorkflowReport, WorkflowTask};
use asynq_core::broker::Page;
use asynq_core::workflow::ParentOutcome;
use serde::Serialize;

/// Runs `asynq workflow <command>`.
pub(crate) async fn run(ctx: &Context, command: WorkflowCommand) -> CliResult {
    let inspector = &ctx.conn.inspector;
    match command {
        WorkflowCommand::List(args) => {
            let page = Page { size: args.size as usize, number: args.page as usize - 1 };
            let workflows = inspector.workflows(page).await?;
            if ctx.json {
                print_json(&workflows.iter().map(WorkflowSummaryView::from).collect::<Vec<_>>())?;
            } else if workflows.is_empty() {
                outln!("No workflows found")?;
            } else {
                let mut table = output::table(["ID", "Created", "Tasks", "Cancelled"]);
                for w in &workflows {
                    let cancelled = if w.cancelled { "yes" } else { "no" };
                    table.add_row([
                        w.id.to_string(),
                        past(Some(w.created_at)),
                        w.tasks.to_string(),
                        cancelled.to_owned(),
                    ]);
                }
                print_table(&table)?;
            }
        }
        WorkflowCommand::Cancel(args) => {
            let done = inspector.cancel_workflow(&args.id).await?;
            outln!(
                "Cancelled workflow {}: {} tasks archived, {} running tasks asked to stop",
                args.id,
                done.archived,
                done.stopping
            )?;
        }
        WorkflowCommand::Inspect(args) => {
            let report = inspector.workflow(&args.id).await?;
            if ctx.json {
                print_json(&WorkflowView::from(&report))?;
            } else {
                print_report(&report)?;
            }
        }
    }
    Ok(())
}

/// The IDs of the tasks `task` waits for.
fn parent_ids(report: &WorkflowReport, task: &WorkflowTask) -> Vec<String> {
    task.parents.iter().map(|&parent| report.tasks[parent].task.id.to_string()).collect()
}

fn print_report(report: &WorkflowReport) -> CliResult {
    outln!("Workflow {}: {} ({} tasks)", report.id, report.state().as_str(), report.tasks.len())?;
    let mut table = output::table(["Queue", "ID", "Name", "Type", "State", "Parents", "Last Error", "Result"]);
    for task in &report.tasks {
        let (type_name, state, error, result) = match &task.info {
            Some(info) => (
                info.type_name.clone(),
                info.state.to_string(),
                info.last_error.clone().unwrap_or_default(),
                info.result.as_deref().map(payload_text).unwrap_or_default(),
            ),
            // No longer stored: it succeeded without retention (as the broker saw), or it was
            // deleted (or settled where the broker did not see it).
            None => {
                let state = match task.settled {
                    ParentOutcome::Succeeded { .. } => "succeeded (not kept)",
                    _ => "gone (deleted)",
                };
                (task.type_name.clone().unwrap_or_default(), state.to_owned(), String::new(), String::new())
            }
        };
        let parents = parent_ids(report, task).join(", ");
        table.add_row([
            task.task.queue.to_string(),
            task.task.id.to_string(),
            task.name.clone().unwrap_or_default(),
            type_name,
            state,
            parents,
            error,
            result,
        ]);
    }
    print_table(&table)
}

/// `asynq workflow inspect --json`.
#[derive(Debug, Serialize)]
struct WorkflowView {
    id: String,
    state: &'static str,
    /// Its tasks, parents first; `task` is `null` for a task that is gone.
    tasks: Vec<WorkflowTaskView>,
}

#[derive(Debug, Serialize)]
struct WorkflowTaskView {
    queue: String,
    id: String,
    /// Its name in its DAG; `null` for a task of no DAG.
    name: Option<String>,
    /// The IDs of the tasks it waits for, in the order its handler sees their results.
    parents: Vec<String>,
    task: Option<TaskView>,
}

impl From<&WorkflowReport> for WorkflowView {
    fn from(report: &WorkflowReport) -> Self {
        Self {
            id: report.id.to_string(),
            state: report.state().as_str(),
            tasks: report
                .tasks
                .iter()
                .map(|t| WorkflowTaskView {
                    queue: t.task.queue.to_string(),
                    id: t.task.id.to_string(),
                    name: t.name.clone(),
                    parents: parent_ids(report, t),
                    task: t.info.as_ref().map(TaskView::from),
                })
                .collect(),
        }
    }
}
