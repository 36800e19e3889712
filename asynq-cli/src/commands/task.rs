//! `asynq task ...`: list, inspect, cancel, archive, delete, run and enqueue tasks, and act on
//! every task of a state at once.

use super::Context;
use crate::cli::{BulkArgs, TaskCommand, TaskEnqueueArgs, TaskListArgs, TaskRef};
use crate::duration::{duration_flag, time_flag};
use crate::error::{Batch, CliError, CliResult};
use crate::output::{self, BulkBar, due, outln, past, payload_text, print_json, print_table, state_cell};
use crate::view::TaskView;
use asynq_client::{BulkAction, CancelOutcome, Page, Task, TaskInfo, TaskOptions, TaskSet, TaskState};
use asynq_core::GroupName;
use comfy_table::Cell;
use serde::Serialize;

/// Runs `asynq task <command>`.
pub(crate) async fn run(ctx: &Context, command: TaskCommand) -> CliResult {
    match command {
        TaskCommand::List(args) => list(ctx, args).await,
        TaskCommand::Inspect(args) => inspect(ctx, args).await,
        TaskCommand::Cancel(args) => cancel(ctx, &args.ids).await,
        TaskCommand::Archive(args) => act(ctx, args, Action::Archive).await,
        TaskCommand::Delete(args) => act(ctx, args, Action::Delete).await,
        TaskCommand::Run(args) => act(ctx, args, Action::Run).await,
        TaskCommand::Enqueue(args) => enqueue(ctx, *args).await,
        TaskCommand::Archiveall(args) => super::archive::archive_all(ctx, args).await,
        TaskCommand::Deleteall(args) => bulk(ctx, args, Action::Delete).await,
        TaskCommand::Runall(args) => bulk(ctx, args, Action::Run).await,
    }
}

/// Parses `--state`.
fn parse_state(text: &str) -> Result<TaskState, CliError> {
    text.parse().map_err(|e: asynq_core::state::UnknownState| CliError::usage(e.to_string()))
}

async fn list(ctx: &Context, args: TaskListArgs) -> CliResult {
    let state = parse_state(&args.state)?;
    let page = Page { size: args.size as usize, number: args.page as usize - 1 };
    let inspector = &ctx.conn.inspector;
    let tasks = match (state, &args.group) {
        (TaskState::Aggregating, Some(group)) => inspector.list_group_tasks(&args.queue, group, page).await?,
        (TaskState::Aggregating, None) => {
            return Err(CliError::usage("--group is required for listing aggregating tasks")
                .with_hint(format!("run `asynq group ls -q {}` to see the groups", args.queue)));
        }
        _ => inspector.list_tasks(&args.queue, state, page).await?,
    };
    if ctx.json {
        print_json(&tasks.iter().map(TaskView::from).collect::<Vec<_>>())?;
        return Ok(());
    }
    if tasks.is_empty() {
        match &args.group {
            Some(group) if state == TaskState::Aggregating => outln!("No aggregating tasks in group {group:?}")?,
            _ => outln!("No {state} tasks in {:?} queue", args.queue)?,
        }
        return Ok(());
    }
    print_table(&task_table(state, &tasks))?;
    Ok(())
}

/// The table of a page of tasks of one state, with the columns Go's tool shows for it.
fn task_table(state: TaskState, tasks: &[TaskInfo]) -> comfy_table::Table {
    let extra: &[&str] = match state {
        TaskState::Scheduled => &["Process In"],
        TaskState::Retry => &["Next Retry", "Last Error", "Last Failed", "Retried", "Max Retry"],
        TaskState::Archived => &["Last Failed", "Last Error"],
        TaskState::Completed => &["Completed At", "Result"],
        TaskState::Aggregating => &["Group"],
        TaskState::Active => &["Progress"],
        TaskState::Pending => &["Priority"],
        TaskState::Waiting => &["Workflow"],
    };
    let mut table = output::table(["ID", "Type", "Payload"].iter().chain(extra));
    for t in tasks {
        let mut row = vec![t.id.to_string(), t.type_name.clone(), payload_text(&t.payload)];
        let error = t.last_error.clone().unwrap_or_default();
        match state {
            TaskState::Scheduled => row.push(due(t.next_process_at)),
            TaskState::Retry => row.extend([
                due(t.next_process_at),
                error,
                past(t.last_failed_at),
                t.retried.to_string(),
                t.max_retry.to_string(),
            ]),
            TaskState::Archived => row.extend([past(t.last_failed_at), error]),
            TaskState::Completed => {
                row.extend([past(t.completed_at), t.result.as_deref().map(payload_text).unwrap_or_default()])
            }
            TaskState::Aggregating => row.push(t.group.as_ref().map(ToString::to_string).unwrap_or_default()),
            TaskState::Active => row.push(t.progress.as_ref().map(ToString::to_string).unwrap_or_default()),
            TaskState::Pending => row.push(t.priority.to_string()),
            TaskState::Waiting => row.push(crate::view::workflow_of(t)),
        }
        table.add_row(row);
    }
    table
}

async fn inspect(ctx: &Context, args: TaskRef) -> CliResult {
    let info = ctx.conn.inspector.task_info(&args.queue, &args.id).await?;
    if ctx.json {
        print_json(&TaskView::from(&info))?;
        return Ok(());
    }
    output::heading("Task Info")?;
    let mut table = output::table(["Field", "Value"]);
    let mut row = |name: &str, value: Cell| {
        table.add_row(vec![Cell::new(name), value]);
    };
    row("Queue", Cell::new(&info.queue));
    row("ID", Cell::new(&info.id));
    row("Type", Cell::new(&info.type_name));
    row("State", state_cell(info.state.as_str()));
    row("Payload", Cell::new(payload_text(&info.payload)));
    row("Retried", Cell::new(format!("{}/{}", info.retried, info.max_retry)));
    let next = match info.next_process_at {
        Some(t) if matches!(info.state, TaskState::Scheduled | TaskState::Retry) => {
            format!("{} ({})", output::rfc3339(t), due(Some(t)))
        }
        Some(_) if info.state == TaskState::Pending => "now".to_owned(),
        _ => "n/a".to_owned(),
    };
    row("Next process time", Cell::new(next));
    if let Some(timeout) = info.timeout {
        row("Timeout", Cell::new(output::go_duration(timeout)));
    }
    if let Some(deadline) = info.deadline {
        row("Deadline", Cell::new(output::rfc3339(deadline)));
    }
    if let Some(group) = &info.group {
        row("Group", Cell::new(group));
    }
    if let Some(retention) = info.retention {
        row("Retention", Cell::new(output::go_duration(retention)));
    }
    if let Some(completed) = info.completed_at {
        row("Completed at", Cell::new(output::rfc3339(completed)));
    }
    if let Some(result) = &info.result {
        row("Result", Cell::new(payload_text(result)));
    }
    if let Some(progress) = &info.progress {
        row("Progress", Cell::new(format!("{progress} (reported {})", past(Some(progress.reported_at())))));
    }
    if let Some(key) = &info.debounce_key {
        row("Debounce key", Cell::new(key));
    }
    if let Some(parked) = &info.parked {
        row("Parked", Cell::new(format!("{parked} until {}", output::rfc3339(parked.until))));
    }
    if !info.steps.is_empty() {
        let steps: Vec<String> = info
            .steps
            .iter()
            .map(|s| format!("{} = {} (recorded {})", s.name(), s.preview(60), past(Some(s.recorded_at()))))
            .collect();
        row("Steps", Cell::new(steps.join("\n")));
    }
    if !info.priority.is_default() {
        row("Priority", Cell::new(info.priority));
    }
    if let Some(error) = &info.last_error {
        row("Last failed at", Cell::new(past(info.last_failed_at)));
        row("Last error", Cell::new(error));
    }
    let mut headers: Vec<_> = info.headers.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if !headers.is_empty() {
        headers.sort();
        row("Headers", Cell::new(headers.join(", ")));
    }
    print_table(&table)?;
    Ok(())
}

/// The outcome of an action on one task, or on every task of a set, in JSON.
#[derive(Debug, Serialize)]
struct ActionView<'a> {
    queue: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<&'a str>,
    action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    count: Option<usize>,
}

/// What to do with tasks.
#[derive(Debug, Clone, Copy)]
enum Action {
    Archive,
    Delete,
    Run,
}

impl Action {
    fn past_tense(self) -> &'static str {
        match self {
            Action::Archive => "archived",
            Action::Delete => "deleted",
            Action::Run => "run",
        }
    }
}

async fn act(ctx: &Context, args: TaskRef, action: Action) -> CliResult {
    let inspector = &ctx.conn.inspector;
    let mut trimmed = 0;
    match action {
        Action::Archive => trimmed = inspector.archive_task_reporting(&args.queue, &args.id).await?.trimmed(),
        Action::Delete => inspector.delete_task(&args.queue, &args.id).await?,
        Action::Run => inspector.run_task(&args.queue, &args.id).await?,
    }
    if ctx.json {
        print_json(&ActionView {
            queue: &args.queue,
            id: Some(&args.id),
            state: None,
            group: None,
            action: action.past_tense(),
            count: None,
        })?;
    } else {
        match action {
            Action::Archive if trimmed > 0 => {
                outln!("task archived; the archive's limits dropped {trimmed} older archived task(s)")?
            }
            Action::Archive => outln!("task archived")?,
            Action::Delete => outln!("task deleted")?,
            Action::Run => outln!("task is now pending")?,
        }
    }
    Ok(())
}

/// The state and the set of tasks `--state` and `--group` name.
pub(super) fn bulk_set(args: &BulkArgs) -> Result<(TaskState, TaskSet), CliError> {
    let state = parse_state(&args.state)?;
    let set = match (state, &args.group) {
        (TaskState::Aggregating, Some(group)) => TaskSet::Group(GroupName::new(group.as_str())?),
        (TaskState::Aggregating, None) => {
            return Err(CliError::usage("--group is required for aggregating tasks")
                .with_hint(format!("run `asynq group ls -q {}` to see the groups", args.queue)));
        }
        (state, _) => TaskSet::State(state),
    };
    Ok((state, set))
}

async fn bulk(ctx: &Context, args: BulkArgs, action: Action) -> CliResult {
    let (state, set) = bulk_set(&args)?;
    let (bulk_action, verb) = match action {
        Action::Archive => (BulkAction::Archive, "archiving"),
        Action::Delete => (BulkAction::Delete, "deleting"),
        Action::Run => (BulkAction::Run, "running"),
    };
    let bar = BulkBar::new(ctx.json, verb);
    let count = ctx.conn.inspector.bulk_action(&args.queue, bulk_action, &set, |p| bar.update(p)).await?;
    drop(bar);
    if ctx.json {
        let group = match &set {
            TaskSet::Group(group) => Some(group.as_str()),
            _ => None,
        };
        print_json(&ActionView {
            queue: &args.queue,
            id: None,
            state: Some(state.as_str()),
            group,
            action: action.past_tense(),
            count: Some(count),
        })?;
    } else {
        match action {
            Action::Archive => outln!("{count} tasks archived")?,
            Action::Delete => outln!("{count} tasks deleted")?,
            Action::Run => outln!("{count} tasks are now pending")?,
        }
    }
    Ok(())
}

/// A cancellation request that went out for a task, and what it found, in JSON: `outcome` is
/// `running` (with the `servers` running it), `not_running` (with the task's `queue` and
/// `state`) or `unknown_task`.
#[derive(Debug, Serialize)]
struct CancelView {
    id: String,
    cancel_sent: bool,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    servers: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    queue: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'static str>,
}

impl CancelView {
    fn new(id: &str, found: &CancelOutcome) -> Self {
        let mut view =
            Self { id: id.to_owned(), cancel_sent: true, outcome: "", servers: Vec::new(), queue: None, state: None };
        match found {
            CancelOutcome::Running { servers } => (view.outcome, view.servers) = ("running", servers.clone()),
            CancelOutcome::NotRunning { queue, state } => {
                (view.outcome, view.queue, view.state) = ("not_running", Some(queue.to_string()), Some(state.as_str()));
            }
            CancelOutcome::UnknownTask => view.outcome = "unknown_task",
            _ => view.outcome = "other",
        }
        view
    }
}

async fn cancel(ctx: &Context, ids: &[String]) -> CliResult {
    let mut batch = Batch::new();
    let mut sent = Vec::new();
    for id in ids {
        match ctx.conn.inspector.cancel(id).await {
            Ok(found) => {
                if !ctx.json {
                    // Go's line, then what the request found (it is kept for a while in case a
                    // server takes the task).
                    outln!("Sent cancelation signal for task {id}: {found}")?;
                }
                sent.push(CancelView::new(id, &found));
            }
            Err(e) => batch.fail(CliError::from(e)),
        }
    }
    if ctx.json {
        print_json(&sent)?;
    }
    batch.finish()
}

/// The options `task enqueue`'s flags give.
fn enqueue_options(args: &TaskEnqueueArgs) -> Result<TaskOptions, CliError> {
    let mut options = TaskOptions::new();
    if let Some(retry) = args.retry {
        options = options.max_retry(retry);
    }
    if let Some(queue) = &args.queue {
        options = options.queue(queue);
    }
    if let Some(id) = &args.id {
        options = options.task_id(id);
    }
    if let Some(timeout) = &args.timeout {
        options = options.timeout(duration_flag("timeout", timeout)?);
    }
    if let Some(deadline) = &args.deadline {
        options = options.deadline(time_flag("deadline", deadline)?);
    }
    if let Some(unique) = &args.unique {
        options = options.unique(duration_flag("unique", unique)?);
    }
    if let Some(process_at) = &args.process_at {
        options = options.process_at(time_flag("process_at", process_at)?);
    }
    if let Some(process_in) = &args.process_in {
        options = options.process_in(duration_flag("process_in", process_in)?);
    }
    if let Some(retention) = &args.retention {
        options = options.retention(duration_flag("retention", retention)?);
    }
    if let Some(group) = &args.group {
        options = options.group(group);
    }
    if let (Some(key), Some(window)) = (&args.debounce, &args.debounce_window) {
        options = options.debounce(key, duration_flag("debounce_window", window)?);
    }
    if let Some(priority) = args.priority {
        options = options.priority(priority);
    }
    Ok(options)
}

async fn enqueue(ctx: &Context, args: TaskEnqueueArgs) -> CliResult {
    let options = enqueue_options(&args)?;
    let task = Task::new(args.type_name.clone(), args.payload.clone().into_bytes());
    let (info, done) = match &args.replace {
        Some(id) => (ctx.conn.client.replace(id, &task, options).await?, "Replaced"),
        None => (ctx.conn.client.enqueue(&task, options).await?, "Enqueued"),
    };
    if ctx.json {
        print_json(&TaskView::from(&info))?;
    } else {
        outln!("{done} task {} in queue {:?} ({})", info.id, info.queue, info.state)?;
    }
    Ok(())
}
