//! `asynq dash`: a live terminal dashboard of queues, tasks and servers, with actions on tasks. [`app`] is the model and its
//! update function, [`ui`] draws it; this module runs the loop: it reads keys and refresh ticks,
//! feeds them to the model, and does the fetches the model asks for.

pub(crate) mod app;
pub(crate) mod graphs;
pub(crate) mod history;
pub(crate) mod ui;

use crate::error::{CliError, CliResult, Failure};
use app::{Action, App, Fetch, Key, Msg, TASK_PAGE_SIZE};
use asynq_client::{Inspector, Page};
use crossterm::event::{Event, EventStream, KeyCode, KeyEventKind, KeyModifiers};
use futures::StreamExt;
use std::time::Duration;

/// Runs the dashboard until the user quits, refreshing every `refresh`.
pub(crate) async fn run(inspector: Inspector, refresh: Duration) -> CliResult {
    let mut terminal =
        ratatui::try_init().map_err(|e| CliError::new(Failure::Failed, format!("cannot set up the terminal: {e}")))?;
    let outcome = event_loop(&mut terminal, &inspector, refresh).await;
    ratatui::restore();
    outcome.map_err(|e| CliError::new(Failure::Failed, format!("terminal error: {e}")))
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    inspector: &Inspector,
    refresh: Duration,
) -> std::io::Result<()> {
    let mut app = App::new(crate::output::go_duration(refresh));
    let mut events = EventStream::new();
    let mut ticks = tokio::time::interval(refresh);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !app.quit {
        terminal.draw(|frame| ui::draw(frame, &app))?;
        let msg = tokio::select! {
            _ = ticks.tick() => Msg::Tick,
            event = events.next() => match event {
                Some(Ok(Event::Key(key))) if key.kind != KeyEventKind::Release => match to_key(key.code, key.modifiers) {
                    Some(key) => Msg::Key(key),
                    None => continue,
                },
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e),
                None => break,
            },
        };
        let mut pending = app.update(msg);
        // Fetches answer with messages that may ask for more; do them all before drawing.
        while let Some(fetch) = pending.pop() {
            let msg = fetch_msg(inspector, fetch).await;
            pending.extend(app.update(msg));
        }
    }
    Ok(())
}

/// A terminal key as the model's [`Key`]; `None` for keys it does not use.
fn to_key(code: KeyCode, modifiers: KeyModifiers) -> Option<Key> {
    Some(match code {
        KeyCode::Char('c') if modifiers.contains(KeyModifiers::CONTROL) => Key::Interrupt,
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::Left => Key::Left,
        KeyCode::Right => Key::Right,
        KeyCode::Tab => Key::Tab,
        KeyCode::BackTab => Key::BackTab,
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Char(c) => Key::Char(c),
        _ => return None,
    })
}

/// Does one fetch and wraps its result as the message the model expects.
async fn fetch_msg(inspector: &Inspector, fetch: Fetch) -> Msg {
    match fetch {
        Fetch::Queues => {
            let result = async {
                let mut infos = Vec::new();
                for queue in inspector.queues().await? {
                    infos.push(inspector.queue_info(&queue).await?);
                }
                Ok::<_, asynq_client::Error>(infos)
            }
            .await;
            Msg::Queues(result.map_err(|e| e.to_string()))
        }
        Fetch::Tasks { queue, state, page } => {
            let tasks = inspector
                .list_tasks(&queue, state, Page { size: TASK_PAGE_SIZE, number: page })
                .await
                .map_err(|e| e.to_string());
            Msg::Tasks { queue, state, page, tasks }
        }
        Fetch::Task { queue, id } => {
            Msg::Task(inspector.task_info(&queue, &id).await.map(Box::new).map_err(|e| e.to_string()))
        }
        Fetch::Servers => Msg::Servers(inspector.servers().await.map_err(|e| e.to_string())),
        Fetch::Act { action, queue, id } => {
            let done = match action {
                Action::Run => inspector.run_task(&queue, &id).await.map(|()| "is now pending".to_owned()),
                Action::Archive => {
                    inspector.archive_task_reporting(&queue, &id).await.map(|report| match report.trimmed() {
                        0 => "archived".to_owned(),
                        n => format!("archived; the archive's limits dropped {n} older archived task(s)"),
                    })
                }
                Action::Delete => inspector.delete_task(&queue, &id).await.map(|()| "deleted".to_owned()),
                Action::Cancel => inspector.cancel(&id).await.map(|found| format!("asked to cancel: {found}")),
            };
            Msg::Acted(
                done.map(|what| format!("task {id} {what}"))
                    .map_err(|e| format!("cannot {} task {id}: {e}", action.verb())),
            )
        }
    }
}
