//! `asynq events`: a queue's task events, printed once or followed as they happen, and the
//! switch for its event log.

use super::Context;
use crate::cli::{EventsAction, EventsArgs};
use crate::error::{CliError, CliResult};
use crate::output::{self, errln, outln, print_json, print_table};
use asynq_core::events::{EventCap, EventPage, EventPosition, QueueEvent};
use serde::Serialize;
use std::future::Future;
use std::time::Duration;

/// How long `--follow` waits after a read that found nothing new.
const FOLLOW_POLL: Duration = Duration::from_millis(250);
/// How many events one read of `--follow` takes.
const FOLLOW_BATCH: usize = 500;
/// How long `--follow` waits before it reads again after a failed read.
const FOLLOW_RETRY: Duration = Duration::from_secs(1);

/// One event, as `--json` prints it.
#[derive(Debug, Serialize)]
struct EventView {
    id: String,
    time: String,
    kind: &'static str,
    task_id: String,
    task_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    progress: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    progress_message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
}

impl From<&QueueEvent> for EventView {
    fn from(event: &QueueEvent) -> Self {
        Self {
            id: event.id.to_string(),
            time: chrono::DateTime::<chrono::Utc>::from(event.id.at())
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            kind: event.kind.as_str(),
            task_id: event.task_id.clone(),
            task_type: event.task_type.clone(),
            error: event.error.clone(),
            progress: event.progress.as_ref().map(|p| p.fraction()),
            progress_message: event.progress.as_ref().map(|p| p.message().to_owned()),
            name: event.name.clone(),
        }
    }
}

impl EventView {
    /// One line: time, kind, task ID, type, then the error, the progress, or the step's or
    /// signal's name.
    fn line(&self) -> String {
        let mut line = format!("{}  {:<9}  {}  {}", self.time, self.kind, self.task_id, self.task_type);
        if let Some(name) = &self.name {
            line.push_str(&format!("  {name}"));
        }
        if let Some(error) = &self.error {
            line.push_str(&format!("  error: {error}"));
        }
        if let (Some(fraction), Some(message)) = (self.progress, &self.progress_message) {
            line.push_str(&format!("  {:.0}% {message}", fraction * 100.0));
        }
        line
    }
}

/// Runs `asynq events ...`; `--follow` stops when `stop` resolves.
pub(crate) async fn run(ctx: &Context, args: EventsArgs, stop: impl Future<Output = ()>) -> CliResult {
    let inspector = &ctx.conn.inspector;
    match args.action {
        Some(EventsAction::Enable(enable)) => {
            let cap = EventCap::new(enable.cap)?;
            inspector.enable_events(&enable.queue, cap).await?;
            outln!("Queue {:?} keeps about {cap} events", enable.queue)
        }
        Some(EventsAction::Disable(disable)) => {
            inspector.disable_events(&disable.queue).await?;
            outln!("Queue {:?} keeps no events", disable.queue)
        }
        Some(EventsAction::List) => {
            let caps = inspector.event_caps().await?;
            if ctx.json {
                let view: Vec<_> = caps
                    .iter()
                    .map(|(queue, cap)| serde_json::json!({ "queue": queue.as_str(), "cap": cap.get() }))
                    .collect();
                return print_json(&view);
            }
            if caps.is_empty() {
                return outln!("No queue keeps an event log");
            }
            let mut table = output::table(["Queue", "Cap"]);
            for (queue, cap) in &caps {
                table.add_row([queue.as_str(), &cap.to_string()]);
            }
            print_table(&table)
        }
        None => {
            let queue = args.queue.ok_or_else(|| CliError::usage("--queue is required"))?;
            let from = position(args.from.as_deref(), args.follow)?;
            if args.follow {
                follow(ctx, &queue, from, stop).await
            } else {
                let page = inspector.read_events(&queue, from, args.limit.max(1)).await?;
                print_page(ctx, &page, false)
            }
        }
    }
}

/// The position `--from` names.
fn position(from: Option<&str>, follow: bool) -> Result<EventPosition, CliError> {
    match from {
        None if follow => Ok(EventPosition::Latest),
        None => Ok(EventPosition::Oldest),
        Some(from) => from.parse().map_err(|e: asynq_core::Error| CliError::usage(e.to_string())),
    }
}

/// Prints `page`'s events: a JSON array (or, following, one JSON object per line) or a line each.
fn print_page(ctx: &Context, page: &EventPage, following: bool) -> CliResult {
    if page.missed {
        errln!("asynq: some events were trimmed before they were read (the log keeps about its cap)");
    }
    let views: Vec<EventView> = page.events.iter().map(EventView::from).collect();
    match (ctx.json, following) {
        (true, false) => print_json(&views),
        (true, true) => {
            for view in &views {
                let line = serde_json::to_string(view)
                    .map_err(|e| CliError::new(crate::error::Failure::Failed, format!("cannot write JSON: {e}")))?;
                outln!("{line}")?;
            }
            Ok(())
        }
        (false, _) => {
            if views.is_empty() && !following {
                return outln!("No events");
            }
            views.iter().try_for_each(|view| outln!("{}", view.line()))
        }
    }
}

/// Prints events as they come until `stop` resolves. A failed read (Redis out of reach) is
/// reported and tried again from the same position, so nothing the log still keeps is lost.
async fn follow(ctx: &Context, queue: &str, mut from: EventPosition, stop: impl Future<Output = ()>) -> CliResult {
    tokio::pin!(stop);
    loop {
        let pause = match ctx.conn.inspector.read_events(queue, from, FOLLOW_BATCH).await {
            Ok(page) => {
                print_page(ctx, &page, true)?;
                from = page.next;
                if page.events.len() == FOLLOW_BATCH { Duration::ZERO } else { FOLLOW_POLL }
            }
            Err(e) => {
                errln!("asynq: could not read events ({e}); trying again");
                FOLLOW_RETRY
            }
        };
        tokio::select! {
            _ = &mut stop => return Ok(()),
            _ = tokio::time::sleep(pause) => {}
        }
    }
}
