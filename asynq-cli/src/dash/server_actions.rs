//! The servers view's keys: moving the selection, and asking the selected server to quiet
//! (`Q`) or stop (`S`), each pressed twice, as the web dashboard asks for a confirmation. The
//! request waits for the server's next heartbeat to read it; Go asynq's servers never read it.

use super::app::{App, Fetch, Key, Screen};
use asynq_client::{ServerRequest, ServerStatus};

/// What an operator can ask of a live server from the servers view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerAction {
    /// Finish the running tasks and take no new ones (`Q`, pressed twice).
    Quiet,
    /// Shut down gracefully, as on SIGTERM (`S`, pressed twice).
    Stop,
}

impl ServerAction {
    /// The action a key asks for.
    fn of_key(key: Key) -> Option<Self> {
        match key {
            Key::Char('Q') => Some(Self::Quiet),
            Key::Char('S') => Some(Self::Stop),
            _ => None,
        }
    }

    /// The key that asks for it.
    fn key(self) -> char {
        match self {
            Self::Quiet => 'Q',
            Self::Stop => 'S',
        }
    }

    /// The verb, as the status line says it.
    pub(crate) fn verb(self) -> &'static str {
        self.request().as_str()
    }

    /// The request the server's heartbeat reads.
    pub(crate) fn request(self) -> ServerRequest {
        match self {
            Self::Quiet => ServerRequest::Quiet,
            Self::Stop => ServerRequest::Stop,
        }
    }

    /// What the server does, for the confirmation.
    fn effect(self) -> &'static str {
        match self {
            Self::Quiet => "it finishes its tasks and takes no new ones",
            Self::Stop => "it shuts down gracefully, as on SIGTERM",
        }
    }
}

impl App {
    /// A key on the servers view; `confirm` holds what the previous key asked for, if anything.
    pub(crate) fn on_servers_key(&mut self, key: Key, confirm: Option<(ServerAction, String)>) -> Vec<Fetch> {
        if let Some(action) = ServerAction::of_key(key) {
            return self.on_server_action(action, confirm);
        }
        let count = self.servers.as_ref().map_or(0, Vec::len);
        match key {
            Key::Up | Key::Char('k') => self.selected_server = self.selected_server.saturating_sub(1),
            Key::Down | Key::Char('j') => {
                self.selected_server = (self.selected_server + 1).min(count.saturating_sub(1))
            }
            Key::Esc | Key::Char('q') => {
                self.screen = Screen::Queues;
                self.servers = None;
            }
            _ => {}
        }
        Vec::new()
    }

    /// `action` on the selected server: refused with a notice when it does not apply (only an
    /// active server can be quieted), asked for again before it is sent.
    fn on_server_action(&mut self, action: ServerAction, confirm: Option<(ServerAction, String)>) -> Vec<Fetch> {
        let Some(report) = self.servers.as_ref().and_then(|servers| servers.get(self.selected_server)) else {
            return Vec::new();
        };
        let server = &report.server;
        let (id, name) = (server.server_id.clone(), format!("{}:{}", server.host, server.pid));
        if action == ServerAction::Quiet && server.status != ServerStatus::Active {
            self.notice = Some(format!("cannot quiet server {name}: it is {}, not active", server.status.as_str()));
            return Vec::new();
        }
        if confirm.as_ref() != Some(&(action, id.clone())) {
            let (verb, key, effect) = (action.verb(), action.key(), action.effect());
            self.notice = Some(format!("{verb} server {name}? press {key} again to confirm ({effect})"));
            self.confirm_server = Some((action, id));
            return Vec::new();
        }
        vec![Fetch::Control { action, server_id: id, name }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dash::app::Msg;
    use crate::dash::app::tests::queues;
    use asynq_client::{ServerInfo, ServerReport};

    fn report(id: &str, pid: u32, status: ServerStatus) -> ServerReport {
        let server = ServerInfo {
            host: "worker-1.internal".into(),
            pid,
            server_id: id.into(),
            concurrency: 10,
            queues: [("critical".to_owned(), 6)].into(),
            strict_priority: false,
            status,
            started: asynq_core::time::from_unix_secs(1_795_317_000),
            active_workers: 0,
        };
        ServerReport { server, workers: Vec::new() }
    }

    /// The servers view with an active server selected and a quiet one below it.
    fn on_servers() -> App {
        let mut app = App::new("8s");
        app.update(Msg::Queues(Ok(queues())));
        app.update(Msg::Key(Key::Char('s')));
        app.update(Msg::Servers(Ok(vec![
            report("s-1", 1, ServerStatus::Active),
            report("s-2", 2, ServerStatus::Stopped),
        ])));
        app
    }

    fn press(app: &mut App, key: char) -> Vec<Fetch> {
        app.update(Msg::Key(Key::Char(key)))
    }

    #[test]
    fn quiet_and_stop_are_sent_to_the_selected_server_once_confirmed() {
        let mut app = on_servers();
        assert!(press(&mut app, 'Q').is_empty(), "asked first");
        let asked = app.notice.clone().unwrap_or_default();
        let expected =
            "quiet server worker-1.internal:1? press Q again to confirm (it finishes its tasks and takes no new ones)";
        assert_eq!(asked, expected);
        let sent = press(&mut app, 'Q');
        assert_eq!(
            sent,
            vec![Fetch::Control {
                action: ServerAction::Quiet,
                server_id: "s-1".into(),
                name: "worker-1.internal:1".into()
            }]
        );
        assert_eq!(app.confirm_server, None, "sent once");

        // Another key in between cancels the confirmation; a confirmation is for one server.
        assert!(press(&mut app, 'S').is_empty());
        assert!(press(&mut app, 'j').is_empty());
        assert!(press(&mut app, 'S').is_empty(), "asked again, for the server now selected");
        assert!(app.notice.as_deref().is_some_and(|n| n.starts_with("stop server worker-1.internal:2? press S again")));
        let sent = press(&mut app, 'S');
        assert_eq!(
            sent,
            vec![Fetch::Control {
                action: ServerAction::Stop,
                server_id: "s-2".into(),
                name: "worker-1.internal:2".into()
            }]
        );

        // A server that is not active cannot be quieted; lowercase q still goes back.
        assert!(press(&mut app, 'Q').is_empty());
        assert_eq!(app.notice.as_deref(), Some("cannot quiet server worker-1.internal:2: it is stopped, not active"));
        assert_eq!(app.confirm_server, None);
        app.update(Msg::Acted(Ok("sent stop".into())));
        assert_eq!(app.refresh(), vec![Fetch::Queues, Fetch::Servers], "the list is read again after a request");
        press(&mut app, 'q');
        assert_eq!(app.screen, Screen::Queues);
    }

    #[test]
    fn quiet_and_stop_keys_do_nothing_elsewhere_or_without_servers() {
        let mut app = App::new("8s");
        app.update(Msg::Queues(Ok(queues())));
        assert!(press(&mut app, 'S').is_empty() && app.notice.is_none(), "no server action on the queue list");
        app.update(Msg::Key(Key::Char('s')));
        assert!(press(&mut app, 'Q').is_empty() && app.notice.is_none(), "nothing to act on before the list arrives");
    }
}
