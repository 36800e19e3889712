//! The dashboard's model and its update function: what is shown, and how keys and fetched data
//! change it. Pure: no terminal, no IO; `update` returns the fetches the runner must do.

use asynq_client::{QueueInfo, TaskInfo, TaskState};
use std::time::SystemTime;

/// The task states in the order the dashboard's tabs show them (Go's dashboard order).
pub(crate) const STATES: [TaskState; 7] = [
    TaskState::Active,
    TaskState::Pending,
    TaskState::Aggregating,
    TaskState::Scheduled,
    TaskState::Retry,
    TaskState::Archived,
    TaskState::Completed,
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
        /// The tasks, or why they could not be fetched.
        tasks: Result<Vec<TaskInfo>, String>,
    },
    /// One task, or why it could not be fetched.
    Task(Result<Box<TaskInfo>, String>),
}

/// Data the runner must fetch and hand back as a [`Msg`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fetch {
    /// Every queue's statistics.
    Queues,
    /// The first page of tasks of `queue` in `state`.
    Tasks {
        /// The queue.
        queue: String,
        /// The state.
        state: TaskState,
    },
    /// One task.
    Task {
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
            selected_task: 0,
            task: None,
            error: None,
            refreshed_at: None,
            refresh_label: refresh_label.into(),
            quit: false,
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
            (Screen::Tasks, Some(q)) => fetches.push(Fetch::Tasks { queue: q.queue.to_string(), state: self.state() }),
            (Screen::Task, Some(q)) => {
                if let Some(task) = &self.task {
                    fetches.push(Fetch::Task { queue: q.queue.to_string(), id: task.id.to_string() });
                }
            }
            _ => {}
        }
        fetches
    }

    /// Applies `msg`; returns what to fetch next.
    pub(crate) fn update(&mut self, msg: Msg) -> Vec<Fetch> {
        match msg {
            Msg::Tick => self.refresh(),
            Msg::Key(key) => self.on_key(key),
            Msg::Queues(Ok(mut queues)) => {
                queues.sort_by(|a, b| a.queue.cmp(&b.queue));
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
            Msg::Tasks { queue, state, tasks } => {
                // Ignore a page that arrives after the user moved on.
                if self.queue().is_some_and(|q| q.queue == queue) && self.state() == state {
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
            Msg::Queues(Err(e)) | Msg::Task(Err(e)) => {
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
        }
    }

    fn on_queues_key(&mut self, key: Key) -> Vec<Fetch> {
        match key {
            Key::Up | Key::Char('k') => self.selected_queue = self.selected_queue.saturating_sub(1),
            Key::Down | Key::Char('j') => {
                self.selected_queue = (self.selected_queue + 1).min(self.queues.len().saturating_sub(1));
            }
            Key::Enter | Key::Right | Key::Char('l') => {
                if let Some(queue) = self.queue() {
                    let fetch = Fetch::Tasks { queue: queue.queue.to_string(), state: self.state() };
                    self.screen = Screen::Tasks;
                    self.tasks = None;
                    self.selected_task = 0;
                    return vec![fetch];
                }
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
            Key::Esc | Key::Char('q') => {
                self.screen = Screen::Queues;
                self.tasks = None;
            }
            _ => {}
        }
        Vec::new()
    }

    fn switch_state(&mut self, tab: usize) -> Vec<Fetch> {
        self.state_tab = tab;
        self.tasks = None;
        self.selected_task = 0;
        match self.queue() {
            Some(q) => vec![Fetch::Tasks { queue: q.queue.to_string(), state: self.state() }],
            None => Vec::new(),
        }
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
        (critical.pending, critical.active, critical.retry, critical.size) = (3, 1, 2, 6);
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
        assert_eq!(fetches, vec![Fetch::Tasks { queue: "critical".into(), state: TaskState::Active }]);
        let fetches = app.update(Msg::Key(Key::Tab));
        assert_eq!(fetches, vec![Fetch::Tasks { queue: "critical".into(), state: TaskState::Pending }]);
        assert_eq!(
            app.update(Msg::Key(Key::Left)),
            vec![Fetch::Tasks { queue: "critical".into(), state: TaskState::Active }]
        );
        app.update(Msg::Key(Key::Right));
        let tasks = vec![task("critical", "a"), task("critical", "b")];
        app.update(Msg::Tasks { queue: "critical".into(), state: TaskState::Pending, tasks: Ok(tasks) });
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
            tasks: Ok(vec![task("critical", "x")]),
        });
        assert!(app.tasks.is_none());
        app.update(Msg::Queues(Err("connection refused".into())));
        assert_eq!(app.error.as_deref(), Some("connection refused"));
        assert_eq!(
            app.refresh(),
            vec![Fetch::Queues, Fetch::Tasks { queue: "critical".into(), state: TaskState::Active }]
        );
    }
}
