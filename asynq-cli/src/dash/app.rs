//! The dashboard's model and its update function: what is shown, and how keys and fetched data
//! change it. Pure: no terminal, no IO; `update` returns the fetches the runner must do.

use asynq_client::{QueueInfo, ServerReport, TaskInfo, TaskState};
use std::time::SystemTime;

/// The task states in the order the dashboard's tabs show them: Go's dashboard order, then our
/// workflow tasks waiting for their parents.
pub(crate) const STATES: [TaskState; 8] = [
    TaskState::Active,
    TaskState::Pending,
    TaskState::Aggregating,
    TaskState::Scheduled,
    TaskState::Retry,
    TaskState::Archived,
    TaskState::Completed,
    TaskState::Waiting,
];

/// How many tasks of one state the task list fetches.
pub(crate) const TASK_PAGE_SIZE: usize = 100;

/// A key press, as the dashboard understands it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    /// Arrow up.
    Up,
    /// Arrow down.
    Down,
    /// Arrow left.
    Left,
    /// Arrow right.
    Right,
    /// Tab.
    Tab,
    /// Shift-Tab.
    BackTab,
    /// Enter.
    Enter,
    /// Escape.
    Esc,
    /// Ctrl-C.
    Interrupt,
    /// A character key.
    Char(char),
}

/// Something that happened: a key, a refresh tick, or data that arrived.
#[derive(Debug)]
pub(crate) enum Msg {
    /// A key press.
    Key(Key),
    /// Time to refresh what is shown.
    Tick,
    /// Every queue's statistics, or why they could not be fetched.
    Queues(Result<Vec<QueueInfo>, String>),
    /// A page of tasks of `queue` in `state`.
    Tasks {
        /// The queue.
        queue: String,
        /// The state.
        state: TaskState,
        /// The page number, from 0.
        page: usize,
        /// The tasks, or why they could not be fetched.
        tasks: Result<Vec<TaskInfo>, String>,
    },
    /// One task, or why it could not be fetched.
    Task(Result<Box<TaskInfo>, String>),
    /// The live servers, or why they could not be fetched.
    Servers(Result<Vec<ServerReport>, String>),
    /// What an action on a task did: a sentence to show, or why it failed.
    Acted(Result<String, String>),
}

/// What an operator can do to one task from the dashboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Make it pending now (`r`).
    Run,
    /// Archive it (`a`, pressed twice).
    Archive,
    /// Delete it (`d`, pressed twice).
    Delete,
    /// Ask the server running it to cancel it (`c`).
    Cancel,
}

impl Action {
    /// The action a key asks for.
    fn of_key(key: Key) -> Option<Self> {
        match key {
            Key::Char('r') => Some(Self::Run),
            Key::Char('a') => Some(Self::Archive),
            Key::Char('d') => Some(Self::Delete),
            Key::Char('c') => Some(Self::Cancel),
            _ => None,
        }
    }

    /// The verb, as the status line says it.
    pub(crate) fn verb(self) -> &'static str {
        match self {
            Self::Run => "run",
            Self::Archive => "archive",
            Self::Delete => "delete",
            Self::Cancel => "cancel",
        }
    }

    /// Whether it applies to a task in `state`; the server refuses it otherwise (a waiting
    /// task takes no action of its own: its workflow is cancelled instead).
    fn applies_to(self, state: TaskState) -> bool {
        if state == TaskState::Waiting {
            return false;
        }
        match self {
            Self::Run => !matches!(state, TaskState::Active | TaskState::Pending),
            Self::Archive => !matches!(state, TaskState::Active | TaskState::Archived),
            Self::Delete => state != TaskState::Active,
            Self::Cancel => state == TaskState::Active,
        }
    }

    /// Whether it loses something, and so is asked for twice.
    fn needs_confirmation(self) -> bool {
        matches!(self, Self::Archive | Self::Delete)
    }
}

/// Data the runner must fetch and hand back as a [`Msg`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fetch {
    /// Every queue's statistics.
    Queues,
    /// Page `page` (from 0) of the tasks of `queue` in `state`.
    Tasks {
        /// The queue.
        queue: String,
        /// The state.
        state: TaskState,
        /// The page number, from 0.
        page: usize,
    },
    /// One task.
    Task {
        /// The queue.
        queue: String,
        /// The task ID.
        id: String,
    },
    /// The live servers and what they run.
    Servers,
    /// Ask server `server_id` (`name`, its host and process ID) to do `action`.
    Control {
        /// What to ask.
        action: super::server_actions::ServerAction,
        /// The server's ID.
        server_id: String,
        /// Its host and process ID, for the notice.
        name: String,
    },
    /// Do `action` to task `id` of `queue`.
    Act {
        /// What to do.
        action: Action,
        /// The queue.
        queue: String,
        /// The task ID.
        id: String,
    },
}

/// Which view is on screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Screen {
    /// The table of queues.
    Queues,
    /// The tasks of the selected queue, one state per tab.
    Tasks,
    /// One task in full.
    Task,
    /// The live servers.
    Servers,
}

/// Everything the dashboard shows.
#[derive(Debug)]
pub(crate) struct App {
    /// The view on screen.
    pub(crate) screen: Screen,
    /// Whether the help overlay is shown.
    pub(crate) show_help: bool,
    /// Every queue's statistics, sorted by name.
    pub(crate) queues: Vec<QueueInfo>,
    /// The index of the selected queue.
    pub(crate) selected_queue: usize,
    /// The index in [`STATES`] of the state whose tasks are shown.
    pub(crate) state_tab: usize,
    /// The tasks shown, `None` until they arrive.
    pub(crate) tasks: Option<Vec<TaskInfo>>,
    /// The page of tasks shown, from 0.
    pub(crate) page: usize,
    /// The live servers, `None` until they arrive.
    pub(crate) servers: Option<Vec<ServerReport>>,
    /// The selected server.
    pub(crate) selected_server: usize,
    /// An action asked for once that must be asked for again: the action and the task's ID.
    pub(crate) confirm: Option<(Action, String)>,
    /// A request to a server asked for once that must be asked for again: it and the server's ID.
    pub(crate) confirm_server: Option<(super::server_actions::ServerAction, String)>,
    /// What the last action did, shown until the next key.
    pub(crate) notice: Option<String>,
    /// The index of the selected task.
    pub(crate) selected_task: usize,
    /// The task shown in full, `None` until it arrives.
    pub(crate) task: Option<TaskInfo>,
    /// The last fetch error, shown until the next successful fetch.
    pub(crate) error: Option<String>,
    /// When the queues were last fetched.
    pub(crate) refreshed_at: Option<SystemTime>,
    /// The refresh interval, for the title.
    pub(crate) refresh_label: String,
    /// Set when the user asked to leave.
    pub(crate) quit: bool,
    /// Each queue's sizes and throughput at each refresh, for the graphs.
    pub(crate) history: super::history::QueueHistory,
}

impl App {
    /// A dashboard with nothing fetched yet.
    pub(crate) fn new(refresh_label: impl Into<String>) -> Self {
        Self {
            screen: Screen::Queues,
            show_help: false,
            queues: Vec::new(),
            selected_queue: 0,
            state_tab: 0,
            tasks: None,
            page: 0,
            servers: None,
            selected_server: 0,
            confirm: None,
            confirm_server: None,
            notice: None,
            selected_task: 0,
            task: None,
            error: None,
            refreshed_at: None,
            refresh_label: refresh_label.into(),
            quit: false,
            history: Default::default(),
        }
    }

    /// The selected queue's statistics.
    pub(crate) fn queue(&self) -> Option<&QueueInfo> {
        self.queues.get(self.selected_queue)
    }

    /// The state of the tab shown.
    pub(crate) fn state(&self) -> TaskState {
        STATES[self.state_tab]
    }

    /// What to fetch to show the current screen afresh.
    pub(crate) fn refresh(&self) -> Vec<Fetch> {
        let mut fetches = vec![Fetch::Queues];
        match (self.screen, self.queue()) {
            (Screen::Servers, _) => fetches.push(Fetch::Servers),
            (Screen::Tasks, Some(q)) => fetches.push(self.tasks_fetch(q)),
            (Screen::Task, Some(q)) => {
                if let Some(task) = &self.task {
                    fetches.push(Fetch::Task { queue: q.queue.to_string(), id: task.id.to_string() });
                }
            }
            _ => {}
        }
        fetches
    }

    /// The fetch of the current page of tasks of `queue` in the state shown.
    fn tasks_fetch(&self, queue: &QueueInfo) -> Fetch {
        Fetch::Tasks { queue: queue.queue.to_string(), state: self.state(), page: self.page }
    }

    /// Applies `msg`; returns what to fetch next.
    pub(crate) fn update(&mut self, msg: Msg) -> Vec<Fetch> {
        match msg {
            Msg::Tick => self.refresh(),
            Msg::Key(key) => self.on_key(key),
            Msg::Queues(Ok(mut queues)) => {
                queues.sort_by(|a, b| a.queue.cmp(&b.queue));
                self.history.record(&queues);
                // Keep the same queue selected when others appear or go.
                let selected = self.queue().map(|q| q.queue.clone());
                self.queues = queues;
                self.selected_queue = selected
                    .and_then(|name| self.queues.iter().position(|q| q.queue == name))
                    .unwrap_or(self.selected_queue.min(self.queues.len().saturating_sub(1)));
                self.refreshed_at = self.queues.first().map(|q| q.timestamp).or(self.refreshed_at);
                self.error = None;
                Vec::new()
            }
            Msg::Tasks { queue, state, page, tasks } => {
                // Ignore a page that arrives after the user moved on.
                if self.queue().is_some_and(|q| q.queue == queue) && self.state() == state && self.page == page {
                    match tasks {
                        Ok(tasks) => {
                            self.selected_task = self.selected_task.min(tasks.len().saturating_sub(1));
                            self.tasks = Some(tasks);
                            self.error = None;
                        }
                        Err(e) => self.error = Some(e),
                    }
                }
                Vec::new()
            }
            Msg::Task(Ok(task)) => {
                self.task = Some(*task);
                self.error = None;
                Vec::new()
            }
            Msg::Servers(Ok(servers)) => {
                self.selected_server = self.selected_server.min(servers.len().saturating_sub(1));
                self.servers = Some(servers);
                self.error = None;
                Vec::new()
            }
            Msg::Acted(Ok(notice)) => {
                self.notice = Some(notice);
                self.error = None;
                self.refresh()
            }
            Msg::Queues(Err(e)) | Msg::Task(Err(e)) | Msg::Servers(Err(e)) | Msg::Acted(Err(e)) => {
                self.error = Some(e);
                Vec::new()
            }
        }
    }

    fn on_key(&mut self, key: Key) -> Vec<Fetch> {
        if key == Key::Interrupt {
            self.quit = true;
            return Vec::new();
        }
        if self.show_help {
            // Any key closes the help.
            self.show_help = false;
            return Vec::new();
        }
        if key == Key::Char('?') {
            self.show_help = true;
            return Vec::new();
        }
        self.notice = None;
        let confirm = self.confirm.take();
        let confirm_server = self.confirm_server.take();
        if let (Some(action), Screen::Tasks | Screen::Task) = (Action::of_key(key), self.screen) {
            return self.on_action(action, confirm);
        }
        match self.screen {
            Screen::Queues => self.on_queues_key(key),
            Screen::Tasks => self.on_tasks_key(key),
            Screen::Task => {
                if matches!(key, Key::Esc | Key::Char('q') | Key::Left | Key::Char('h')) {
                    self.screen = Screen::Tasks;
                    self.task = None;
                }
                Vec::new()
            }
            Screen::Servers => self.on_servers_key(key, confirm_server),
        }
    }

    /// The task an action applies to: the one shown in full, or the one selected in the list.
    fn target(&self) -> Option<&TaskInfo> {
        match self.screen {
            Screen::Task => self.task.as_ref(),
            _ => self.tasks.as_ref().and_then(|tasks| tasks.get(self.selected_task)),
        }
    }

    /// `action` on the target task: refused with a notice when it does not apply, asked for
    /// again when it loses something (`confirm` holds what the previous key asked for).
    fn on_action(&mut self, action: Action, confirm: Option<(Action, String)>) -> Vec<Fetch> {
        let Some(task) = self.target() else { return Vec::new() };
        let (queue, id, state) = (task.queue.to_string(), task.id.to_string(), task.state);
        if !action.applies_to(state) {
            self.notice = Some(format!("cannot {} a task that is {state}", action.verb()));
            return Vec::new();
        }
        if action.needs_confirmation() && confirm.as_ref() != Some(&(action, id.clone())) {
            let key = action.verb().chars().next().unwrap_or('?');
            self.notice = Some(format!("{} task {id}? press {key} again to confirm", action.verb()));
            self.confirm = Some((action, id));
            return Vec::new();
        }
        vec![Fetch::Act { action, queue, id }]
    }

    fn on_queues_key(&mut self, key: Key) -> Vec<Fetch> {
        match key {
            Key::Up | Key::Char('k') => self.selected_queue = self.selected_queue.saturating_sub(1),
            Key::Down | Key::Char('j') => {
                self.selected_queue = (self.selected_queue + 1).min(self.queues.len().saturating_sub(1));
            }
            Key::Enter | Key::Right | Key::Char('l') if self.queue().is_some() => {
                self.screen = Screen::Tasks;
                self.tasks = None;
                self.selected_task = 0;
                self.page = 0;
                return self.queue().map(|q| self.tasks_fetch(q)).into_iter().collect();
            }
            Key::Char('s') => {
                self.screen = Screen::Servers;
                self.servers = None;
                return vec![Fetch::Servers];
            }
            Key::Esc | Key::Char('q') => self.quit = true,
            _ => {}
        }
        Vec::new()
    }

    fn on_tasks_key(&mut self, key: Key) -> Vec<Fetch> {
        let count = self.tasks.as_ref().map_or(0, Vec::len);
        match key {
            Key::Up | Key::Char('k') => self.selected_task = self.selected_task.saturating_sub(1),
            Key::Down | Key::Char('j') => self.selected_task = (self.selected_task + 1).min(count.saturating_sub(1)),
            Key::Tab | Key::Right | Key::Char('l') => return self.switch_state((self.state_tab + 1) % STATES.len()),
            Key::BackTab | Key::Left | Key::Char('h') => {
                return self.switch_state((self.state_tab + STATES.len() - 1) % STATES.len());
            }
            Key::Enter => {
                let selected = self.tasks.as_ref().and_then(|tasks| tasks.get(self.selected_task));
                if let Some(task) = selected {
                    let fetch = Fetch::Task { queue: task.queue.to_string(), id: task.id.to_string() };
                    self.task = Some(task.clone());
                    self.screen = Screen::Task;
                    return vec![fetch];
                }
            }
            // A full page may have a next one; the first has no previous.
            Key::Char(']' | 'n') if count == TASK_PAGE_SIZE => return self.turn_page(self.page + 1),
            Key::Char('[' | 'p') if self.page > 0 => return self.turn_page(self.page - 1),
            Key::Esc | Key::Char('q') => {
                self.screen = Screen::Queues;
                self.tasks = None;
            }
            _ => {}
        }
        Vec::new()
    }

    fn turn_page(&mut self, page: usize) -> Vec<Fetch> {
        self.page = page;
        self.tasks = None;
        self.selected_task = 0;
        self.queue().map(|q| self.tasks_fetch(q)).into_iter().collect()
    }

    fn switch_state(&mut self, tab: usize) -> Vec<Fetch> {
        self.state_tab = tab;
        self.turn_page(0)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use asynq_core::time::from_unix_secs;
    use asynq_core::{QueueName, StoredTask, TaskId};

    /// Two queues with fixed numbers.
    pub(crate) fn queues() -> Vec<QueueInfo> {
        let at = from_unix_secs(1_795_317_896);
        let mut critical = QueueInfo::empty(&QueueName::from_static("critical"), at);
        (critical.pending, critical.active, critical.retry, critical.size, critical.waiting) = (3, 1, 2, 6, 1);
        (critical.processed, critical.failed) = (40, 10);
        let mut default = QueueInfo::empty(&QueueName::default(), at);
        (default.pending, default.size, default.paused) = (7, 7, true);
        vec![default, critical]
    }

    /// A pending task of `queue`.
    pub(crate) fn task(queue: &str, id: &str) -> TaskInfo {
        let msg = StoredTask {
            payload: r#"{"user":42}"#.into(),
            max_retry: 25,
            timeout: Some(std::time::Duration::from_secs(1800)),
            ..StoredTask::new(TaskId::new(id).unwrap(), QueueName::new(queue).unwrap(), "email:welcome")
        };
        TaskInfo::new(&msg, TaskState::Pending, Some(from_unix_secs(1_795_317_896)), None)
    }

    #[test]
    fn keys_walk_from_queues_to_tasks_to_a_task_and_back() {
        let mut app = App::new("8s");
        app.update(Msg::Queues(Ok(queues())));
        assert_eq!(app.queue().unwrap().queue, "critical");
        app.update(Msg::Key(Key::Char('j')));
        assert_eq!(app.queue().unwrap().queue, "default");
        app.update(Msg::Key(Key::Down));
        assert_eq!(app.selected_queue, 1, "stays on the last queue");
        app.update(Msg::Key(Key::Up));
        let fetches = app.update(Msg::Key(Key::Enter));
        assert_eq!(app.screen, Screen::Tasks);
        assert_eq!(fetches, vec![Fetch::Tasks { queue: "critical".into(), state: TaskState::Active, page: 0 }]);
        let fetches = app.update(Msg::Key(Key::Tab));
        assert_eq!(fetches, vec![Fetch::Tasks { queue: "critical".into(), state: TaskState::Pending, page: 0 }]);
        assert_eq!(
            app.update(Msg::Key(Key::Left)),
            vec![Fetch::Tasks { queue: "critical".into(), state: TaskState::Active, page: 0 }]
        );
        app.update(Msg::Key(Key::Right));
        let tasks = vec![task("critical", "a"), task("critical", "b")];
        app.update(Msg::Tasks { queue: "critical".into(), state: TaskState::Pending, page: 0, tasks: Ok(tasks) });
        app.update(Msg::Key(Key::Char('j')));
        let fetches = app.update(Msg::Key(Key::Enter));
        assert_eq!(fetches, vec![Fetch::Task { queue: "critical".into(), id: "b".into() }]);
        assert_eq!(app.screen, Screen::Task);
        app.update(Msg::Key(Key::Esc));
        assert_eq!(app.screen, Screen::Tasks);
        app.update(Msg::Key(Key::Char('q')));
        assert_eq!(app.screen, Screen::Queues);
        assert!(!app.quit);
        app.update(Msg::Key(Key::Char('q')));
        assert!(app.quit);
    }

    #[test]
    fn help_opens_and_any_key_closes_it() {
        let mut app = App::new("8s");
        app.update(Msg::Key(Key::Char('?')));
        assert!(app.show_help);
        app.update(Msg::Key(Key::Char('q')));
        assert!(!app.show_help && !app.quit);
    }

    #[test]
    fn late_pages_for_another_state_are_ignored_and_errors_are_kept() {
        let mut app = App::new("8s");
        app.update(Msg::Queues(Ok(queues())));
        app.update(Msg::Key(Key::Enter));
        app.update(Msg::Tasks {
            queue: "critical".into(),
            state: TaskState::Retry,
            page: 0,
            tasks: Ok(vec![task("critical", "x")]),
        });
        assert!(app.tasks.is_none());
        app.update(Msg::Queues(Err("connection refused".into())));
        assert_eq!(app.error.as_deref(), Some("connection refused"));
        assert_eq!(
            app.refresh(),
            vec![Fetch::Queues, Fetch::Tasks { queue: "critical".into(), state: TaskState::Active, page: 0 }]
        );
    }

    /// `n` tasks of `state` in `critical`, IDs `t0`, `t1`, ...
    fn page_of(state: TaskState, n: usize) -> Vec<TaskInfo> {
        (0..n)
            .map(|i| {
                let mut t = task("critical", &format!("t{i}"));
                t.state = state;
                t
            })
            .collect()
    }

    /// An app on the tasks of `critical` in `state`, showing `tasks`.
    fn on_tasks(state: TaskState, tasks: Vec<TaskInfo>) -> App {
        let mut app = App::new("8s");
        app.update(Msg::Queues(Ok(queues())));
        app.update(Msg::Key(Key::Enter));
        app.switch_state(STATES.iter().position(|s| *s == state).unwrap());
        app.update(Msg::Tasks { queue: "critical".into(), state, page: 0, tasks: Ok(tasks) });
        app
    }

    #[test]
    fn a_full_page_turns_to_the_next_and_back() {
        let mut app = on_tasks(TaskState::Pending, page_of(TaskState::Pending, TASK_PAGE_SIZE));
        let next = app.update(Msg::Key(Key::Char(']')));
        assert_eq!(next, vec![Fetch::Tasks { queue: "critical".into(), state: TaskState::Pending, page: 1 }]);
        assert_eq!(app.refresh()[1], next[0], "a refresh fetches the page shown");
        let late = Msg::Tasks { queue: "critical".into(), state: TaskState::Pending, page: 0, tasks: Ok(Vec::new()) };
        app.update(late);
        assert!(app.tasks.is_none(), "a page arriving after the user turned it is ignored");
        app.update(Msg::Tasks {
            queue: "critical".into(),
            state: TaskState::Pending,
            page: 1,
            tasks: Ok(page_of(TaskState::Pending, 3)),
        });
        assert!(app.update(Msg::Key(Key::Char('n'))).is_empty(), "a short page is the last");
        let back = app.update(Msg::Key(Key::Char('[')));
        assert_eq!(back, vec![Fetch::Tasks { queue: "critical".into(), state: TaskState::Pending, page: 0 }]);
        assert!(app.update(Msg::Key(Key::Char('p'))).is_empty(), "the first page has no previous");
        app.update(Msg::Key(Key::Tab));
        assert_eq!(app.page, 0, "another state starts on its first page");
    }

    #[test]
    fn actions_apply_to_the_selected_task_and_losing_ones_are_asked_twice() {
        let mut app = on_tasks(TaskState::Retry, page_of(TaskState::Retry, 2));
        app.update(Msg::Key(Key::Down));
        assert_eq!(
            app.update(Msg::Key(Key::Char('r'))),
            vec![Fetch::Act { action: Action::Run, queue: "critical".into(), id: "t1".into() }]
        );
        assert!(app.update(Msg::Key(Key::Char('d'))).is_empty(), "a delete is asked for twice");
        assert!(app.notice.as_deref().is_some_and(|n| n.contains("press d again")), "{:?}", app.notice);
        assert_eq!(
            app.update(Msg::Key(Key::Char('d'))),
            vec![Fetch::Act { action: Action::Delete, queue: "critical".into(), id: "t1".into() }]
        );
        app.update(Msg::Key(Key::Char('a')));
        app.update(Msg::Key(Key::Up));
        assert!(app.update(Msg::Key(Key::Char('a'))).is_empty(), "another key in between asks again");
        let refreshed = app.update(Msg::Acted(Ok("task t1 deleted".into())));
        assert_eq!(app.notice.as_deref(), Some("task t1 deleted"));
        assert!(refreshed.contains(&Fetch::Queues), "an action refreshes what is shown");

        let mut app = on_tasks(TaskState::Active, page_of(TaskState::Active, 1));
        assert!(app.update(Msg::Key(Key::Char('d'))).is_empty());
        assert_eq!(app.notice.as_deref(), Some("cannot delete a task that is active"));
        assert_eq!(
            app.update(Msg::Key(Key::Char('c'))),
            vec![Fetch::Act { action: Action::Cancel, queue: "critical".into(), id: "t0".into() }]
        );
        app.update(Msg::Acted(Err("cannot cancel task t0: no such task".into())));
        assert_eq!(app.error.as_deref(), Some("cannot cancel task t0: no such task"));
    }

    #[test]
    fn waiting_workflow_tasks_have_the_last_tab_and_take_no_action_of_their_own() {
        let mut app = App::new("8s");
        app.update(Msg::Queues(Ok(queues())));
        app.update(Msg::Key(Key::Enter));
        let fetches = app.update(Msg::Key(Key::BackTab));
        assert_eq!(fetches, vec![Fetch::Tasks { queue: "critical".into(), state: TaskState::Waiting, page: 0 }]);

        let mut app = on_tasks(TaskState::Waiting, page_of(TaskState::Waiting, 1));
        for (key, verb) in [('r', "run"), ('a', "archive"), ('d', "delete"), ('c', "cancel")] {
            assert!(app.update(Msg::Key(Key::Char(key))).is_empty(), "{verb}");
            assert_eq!(app.notice, Some(format!("cannot {verb} a task that is waiting")));
        }
    }

    #[test]
    fn the_servers_view_opens_from_the_queue_list() {
        let mut app = App::new("8s");
        app.update(Msg::Queues(Ok(queues())));
        assert_eq!(app.update(Msg::Key(Key::Char('s'))), vec![Fetch::Servers]);
        assert_eq!(app.screen, Screen::Servers);
        assert_eq!(app.refresh(), vec![Fetch::Queues, Fetch::Servers]);
        app.update(Msg::Servers(Ok(Vec::new())));
        assert_eq!(app.servers.as_ref().map(Vec::len), Some(0));
        app.update(Msg::Key(Key::Char('r')));
        assert!(app.notice.is_none(), "no task actions on the servers view");
        app.update(Msg::Key(Key::Esc));
        assert_eq!(app.screen, Screen::Queues);
    }
}
