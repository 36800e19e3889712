//! `asynq dash`: a live terminal dashboard of queues, tasks and servers, with actions on tasks. [`app`] is the model and its
//! update function, [`ui`] draws it; this module runs the loop: it reads keys and refresh ticks,
//! feeds them to the model, and does the fetches the model asks for.

pub(crate) mod app;
pub(crate) mod graphs;
pub(crate) mod history;
pub(crate) mod server_actions;
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
        Fetch::Control { action, server_id, name } => Msg::Acted(
            inspector
                .request_server(&server_id, action.request())
                .await
                .map(|()| {
                    format!("sent {} to server {name} ({server_id}); it acts on its next heartbeat", action.verb())
                })
                .map_err(|e| format!("cannot {} server {name}: {e}", action.verb())),
        ),
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

#[cfg(test)]
mod tests {
    use super::*;
    use app::{Fetch, Msg};
    use asynq_client::{ServerInfo, ServerRequest, ServerStatus};
    use asynq_core::broker::{ServerControl, ServerState};
    use server_actions::ServerAction;

    #[tokio::test]
    async fn a_request_to_a_server_is_kept_for_its_heartbeat_and_reported() {
        let broker = asynq_memory::MemoryBroker::new();
        let server = ServerInfo {
            host: "worker-1.internal".into(),
            pid: 1,
            server_id: "s-1".into(),
            concurrency: 10,
            queues: [("default".to_owned(), 1)].into(),
            strict_priority: false,
            status: ServerStatus::Active,
            started: std::time::SystemTime::UNIX_EPOCH,
            active_workers: 0,
        };
        broker.write_server_state(&server, &[], Duration::from_secs(60)).await.unwrap();
        let inspector = Inspector::new(broker.clone());
        let control =
            |action, id: &str| Fetch::Control { action, server_id: id.into(), name: "worker-1.internal:1".into() };

        let Msg::Acted(Ok(sent)) = fetch_msg(&inspector, control(ServerAction::Quiet, "s-1")).await else {
            panic!("the quiet request is sent")
        };
        assert_eq!(sent, "sent quiet to server worker-1.internal:1 (s-1); it acts on its next heartbeat");
        assert_eq!(broker.take_server_request("s-1").await.unwrap(), Some(ServerRequest::Quiet));

        let Msg::Acted(Err(refused)) = fetch_msg(&inspector, control(ServerAction::Stop, "gone")).await else {
            panic!("a server that is not live is refused")
        };
        assert!(refused.starts_with("cannot stop server worker-1.internal:1: "), "{refused}");
    }
}
