//! `asynq workflow ls`, `inspect` and `cancel`: the workflows kept with their states, one
//! workflow's tasks with their states and their parents (by position, in rows that fit 100
//! columns; `--json` keeps the full IDs), and cancelling one; an unknown workflow is not found
//! (exit 3).

use super::Context;
use crate::cli::WorkflowCommand;
use crate::error::CliResult;
use crate::output::{self, outln, past, payload_text, print_json, print_table};
use crate::view::{TaskView, WorkflowSummaryView};
use asynq_client::{Inspector, WorkflowReport, WorkflowState, WorkflowSummary, WorkflowTask};
use asynq_core::broker::Page;
use asynq_core::workflow::ParentOutcome;
use comfy_table::{Cell, ColumnConstraint, Table};
use futures::StreamExt as _;
use serde::Serialize;

/// Runs `asynq workflow <command>`.
pub(crate) async fn run(ctx: &Context, command: WorkflowCommand) -> CliResult {
    let inspector = &ctx.conn.inspector;
    match command {
        WorkflowCommand::List(args) => {
            let page = Page { size: args.size as usize, number: args.page as usize - 1 };
            let workflows = inspector.workflows(page).await?;
            let states = states_of(inspector, &workflows).await?;
            if ctx.json {
                let views = workflows.iter().zip(&states).map(|(w, state)| WorkflowSummaryView::new(w, *state));
                print_json(&views.collect::<Vec<_>>())?;
            } else if workflows.is_empty() {
                outln!("No workflows found")?;
            } else {
                let mut table = output::table(["ID", "Created", "Tasks", "State"]);
                for (w, state) in workflows.iter().zip(&states) {
                    let state = state.map_or_else(|| Cell::new(UNREAD_STATE), |s| output::state_cell(s.as_str()));
                    table.add_row([Cell::new(&w.id), Cell::new(past(Some(w.created_at))), Cell::new(w.tasks), state]);
                }
                print_table(fit(&mut table))?;
                if states.iter().any(Option::is_none) {
                    outln!(
                        "{UNREAD_STATE}: more than {MAX_LISTED_STATE_TASKS} tasks; `asynq workflow inspect <ID>` shows its state"
                    )?;
                }
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

/// The widest a table of these commands is drawn (or the terminal's width, when narrower).
const MAX_WIDTH: u16 = 100;
/// The most characters the Parents column shows; past it, the count of the rest.
const MAX_PARENTS_TEXT: usize = 24;
/// The most tasks of a listed workflow whose state `workflow ls` works out (it reads each task).
const MAX_LISTED_STATE_TASKS: usize = 1_000;
/// How many listed workflows have their state worked out at once.
const STATES_AT_ONCE: usize = 4;
/// The state shown for a workflow too large to have its state worked out in a listing.
const UNREAD_STATE: &str = "-";

/// Each workflow's state; `None` for one of more than [`MAX_LISTED_STATE_TASKS`] tasks, or one
/// forgotten since it was listed. A cancelled one's state needs no read.
async fn states_of(inspector: &Inspector, workflows: &[WorkflowSummary]) -> CliResult<Vec<Option<WorkflowState>>> {
    let reads = workflows.iter().map(|w| async move {
        if w.cancelled {
            return Ok(Some(WorkflowState::Cancelled));
        }
        if w.tasks > MAX_LISTED_STATE_TASKS {
            return Ok(None);
        }
        match inspector.workflow(w.id.as_str()).await {
            Ok(report) => Ok(Some(report.state())),
            Err(asynq_core::Error::WorkflowNotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    });
    futures::stream::iter(reads).buffered(STATES_AT_ONCE).collect::<Vec<CliResult<_>>>().await.into_iter().collect()
}

/// Makes `table` fit [`MAX_WIDTH`] columns (or the terminal, when narrower), wrapping its cells.
fn fit(table: &mut Table) -> &Table {
    let width = table.width().map_or(MAX_WIDTH, |w| w.min(MAX_WIDTH));
    table.set_width(width)
}

/// The positions (from 1, as the `#` column numbers the tasks) of the tasks `task` waits for,
/// runs of consecutive ones as ranges (`1-3, 7`), cut after [`MAX_PARENTS_TEXT`] characters
/// with the count of those left out (`1-3, 7, 9 +40`); `-` for none.
fn parent_positions(parents: &[usize]) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for position in parents.iter().map(|p| p + 1) {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == position => *end = position,
            _ => runs.push((position, position)),
        }
    }
    if runs.is_empty() {
        return "-".to_owned();
    }
    let all = parents.len();
    let mut text = String::new();
    let mut shown = 0;
    for (start, end) in runs {
        let run = if start == end { start.to_string() } else { format!("{start}-{end}") };
        let count = end - start + 1;
        let rest = all - shown - count;
        let tail = if rest > 0 { format!(" +{rest}").len() } else { 0 };
        if !text.is_empty() && text.len() + 2 + run.len() + tail > MAX_PARENTS_TEXT {
            break;
        }
        if !text.is_empty() {
            text.push_str(", ");
        }
        text.push_str(&run);
        shown += count;
    }
    if shown < all {
        text.push_str(&format!(" +{}", all - shown));
    }
    text
}

/// The columns of `workflow inspect`; those no task fills (beyond the first six) are left out.
const INSPECT_COLUMNS: [&str; 9] = ["#", "Queue", "ID", "Type", "State", "Parents", "Name", "Last Error", "Result"];
/// A column whose widest cell is at most this wide is never wrapped.
const NARROW: usize = 16;
/// ...nor is the ID column while every ID is at most this long (a UUID is 36), so IDs can be
/// copied whole.
const WHOLE_ID: usize = 40;

fn print_report(report: &WorkflowReport) -> CliResult {
    outln!("Workflow {}: {} ({} tasks)", report.id, report.state().as_str(), report.tasks.len())?;
    let rows: Vec<[String; 9]> = report
        .tasks
        .iter()
        .enumerate()
        .map(|(position, task)| {
            let (type_name, state, error, result) = match &task.info {
                Some(info) => (
                    info.type_name.clone(),
                    info.state.as_str().to_owned(),
                    info.last_error.clone().unwrap_or_default(),
                    info.result.as_deref().map(payload_text).unwrap_or_default(),
                ),
                // No longer stored: its outcome as the broker recorded it, or none (a Go server
                // ran it, or it was deleted).
                None => {
                    let (state, error, result) = match &task.settled {
                        ParentOutcome::Succeeded { result } => {
                            ("succeeded (not kept)", String::new(), result.as_deref().map(payload_text))
                        }
                        ParentOutcome::Failed { error } => ("failed (not kept)", error.clone(), None),
                        _ => ("settled (outcome not recorded)", String::new(), None),
                    };
                    (task.type_name.clone().unwrap_or_default(), state.to_owned(), error, result.unwrap_or_default())
                }
            };
            [
                (position + 1).to_string(),
                task.task.queue.to_string(),
                task.task.id.to_string(),
                type_name,
                state,
                parent_positions(&task.parents),
                task.name.clone().unwrap_or_default(),
                error,
                result,
            ]
        })
        .collect();
    let widest = |column: usize| rows.iter().map(|row| row[column].chars().count()).max().unwrap_or(0);
    let kept: Vec<usize> = (0..INSPECT_COLUMNS.len()).filter(|&c| c < 6 || widest(c) > 0).collect();
    let mut table = output::table(kept.iter().map(|&c| INSPECT_COLUMNS[c]));
    for row in &rows {
        table.add_row(kept.iter().map(|&c| if c == 4 { output::state_cell(&row[c]) } else { Cell::new(&row[c]) }));
    }
    for (index, &c) in kept.iter().enumerate() {
        let whole = widest(c).max(INSPECT_COLUMNS[c].len()) <= if c == 2 { WHOLE_ID } else { NARROW };
        if let (true, Some(column)) = (whole, table.column_mut(index)) {
            column.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
    print_table(fit(&mut table))?;
    if report.tasks.iter().any(|t| t.info.is_none()) {
        outln!("not kept: no longer stored; \"outcome not recorded\": a Go server ran it, or it was deleted")?;
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_show_as_positions_in_ranges_cut_with_a_count() {
        assert_eq!(parent_positions(&[]), "-");
        assert_eq!(parent_positions(&[0]), "1");
        assert_eq!(parent_positions(&[0, 1, 2, 6]), "1-3, 7");
        let many: Vec<usize> = (0..500).collect();
        assert_eq!(parent_positions(&many), "1-500");
        let every_other: Vec<usize> = (0..500).step_by(2).collect();
        let text = parent_positions(&every_other);
        assert!(text.starts_with("1, 3, 5") && text.ends_with(" +244"), "{text}");
        assert!(text.len() <= MAX_PARENTS_TEXT + 6, "{text}");
    }
}
