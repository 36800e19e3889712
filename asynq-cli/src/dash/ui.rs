//! The dashboard's view: draws an [`App`] into a ratatui frame. Nothing here changes the model.

use super::app::{App, STATES, Screen};
use super::graphs::{GRAPHS_HEIGHT, draw_queue_graphs};
use crate::output::{bytes_text, due, error_rate, go_duration, past, payload_text, queue_weights, rfc3339};
use asynq_client::{TaskInfo, TaskState};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, TableState, Tabs, Wrap};

/// The keys each screen takes, for its footer.
fn footer_keys(screen: Screen) -> &'static str {
    match screen {
        Screen::Queues => "↑/k ↓/j: select   Enter: tasks   s: servers   ?: help   q/Esc: quit",
        Screen::Tasks => {
            "↑↓: select  Tab/←→: state  [/]: page  Enter: details  r/a/d/c: run/archive/delete/cancel  ?: help"
        }
        Screen::Task => "r/a/d/c: run/archive/delete/cancel   ?: help   q/Esc: back",
        Screen::Servers => "↑/k ↓/j: select   Q: quiet   S: stop   ?: help   q/Esc: back",
    }
}

/// Draws the whole dashboard.
pub(crate) fn draw(frame: &mut Frame<'_>, app: &App) {
    let [title, body, footer] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(3), Constraint::Length(1)]).areas(frame.area());
    let refreshed = app.refreshed_at.map(rfc3339).unwrap_or_else(|| "never".to_owned());
    let title_text = format!(" asynq dashboard   refreshed {refreshed} (every {})", app.refresh_label);
    frame.render_widget(Paragraph::new(title_text).style(Style::new().add_modifier(Modifier::BOLD)), title);
    match app.screen {
        Screen::Queues => draw_queues(frame, body, app),
        Screen::Tasks => draw_tasks(frame, body, app),
        Screen::Task => draw_task(frame, body, app),
        Screen::Servers => draw_servers(frame, body, app),
    }
    let footer_line = match (&app.error, &app.notice) {
        (Some(e), _) => Line::from(Span::styled(format!(" error: {e}"), Style::new().fg(Color::Red))),
        (None, Some(notice)) => Line::from(Span::styled(format!(" {notice}"), Style::new().fg(Color::Yellow))),
        (None, None) => Line::from(format!(" {}", footer_keys(app.screen))),
    };
    frame.render_widget(Paragraph::new(footer_line), footer);
    if app.show_help {
        draw_help(frame, frame.area());
    }
}

fn draw_queues(frame: &mut Frame<'_>, area: Rect, app: &App) {
    // The graphs, when the terminal leaves the table room for a few queues beside them.
    let graphs = if area.height >= 9 + GRAPHS_HEIGHT { GRAPHS_HEIGHT } else { 0 };
    let [table_area, graphs_area, summary_area] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(graphs), Constraint::Length(4)]).areas(area);
    if graphs > 0 {
        draw_queue_graphs(frame, graphs_area, app);
    }
    let header =
        Row::new(["Queue", "State", "Size", "Waiting", "Latency", "Memory", "Processed", "Failed", "Error rate"])
            .style(Style::new().add_modifier(Modifier::BOLD));
    let rows = app.queues.iter().map(|q| {
        let state = if q.paused {
            Cell::from("paused").style(Style::new().fg(Color::Yellow))
        } else {
            Cell::from("run").style(Style::new().fg(Color::Green))
        };
        Row::new(vec![
            Cell::from(q.queue.to_string()),
            state,
            Cell::from(q.size.to_string()),
            Cell::from(q.waiting.to_string()),
            Cell::from(go_duration(q.latency)),
            Cell::from(bytes_text(q.memory_usage)),
            Cell::from(q.processed.to_string()),
            Cell::from(q.failed.to_string()),
            Cell::from(error_rate(q.processed, q.failed)),
        ])
    });
    let widths = [
        Constraint::Min(12),
        Constraint::Length(7),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(10),
        Constraint::Length(8),
        Constraint::Length(10),
    ];
    let table = Table::new(rows, widths)
        .header(header)
        .block(Block::default().borders(Borders::ALL).title(" Queues "))
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .highlight_symbol("> ");
    let mut state = TableState::default().with_selected((!app.queues.is_empty()).then_some(app.selected_queue));
    frame.render_stateful_widget(table, table_area, &mut state);

    let summary = match app.queue() {
        Some(q) => {
            let counts = [
                ("active", q.active),
                ("pending", q.pending),
                ("aggregating", q.aggregating),
                ("scheduled", q.scheduled),
                ("retry", q.retry),
                ("archived", q.archived),
                ("completed", q.completed),
                ("waiting", q.waiting),
            ];
            let spans: Vec<Span<'_>> = counts
                .iter()
                .flat_map(|(name, n)| {
                    [Span::styled(format!("{name} "), state_style(name)), Span::raw(format!("{n}  "))]
                })
                .collect();
            vec![Line::from(spans), Line::from(format!("groups {}", q.groups))]
        }
        None => vec![Line::from("No queues yet: enqueue a task to create one.")],
    };
    let title = app.queue().map(|q| format!(" {} ", q.queue)).unwrap_or_default();
    frame.render_widget(
        Paragraph::new(summary).block(Block::default().borders(Borders::ALL).title(title)),
        summary_area,
    );
}

/// The colour of a state's name.
fn state_style(state: &str) -> Style {
    let colour = match state {
        "active" => Color::Green,
        "pending" => Color::Blue,
        "aggregating" | "scheduled" => Color::Cyan,
        "retry" => Color::Yellow,
        "archived" => Color::Red,
        "waiting" => Color::Magenta,
        _ => Color::Reset,
    };
    Style::new().fg(colour)
}

/// The number of tasks of `state` in the selected queue.
fn count(app: &App, state: TaskState) -> usize {
    app.queue().map_or(0, |q| match state {
        TaskState::Active => q.active,
        TaskState::Pending => q.pending,
        TaskState::Aggregating => q.aggregating,
        TaskState::Scheduled => q.scheduled,
        TaskState::Retry => q.retry,
        TaskState::Archived => q.archived,
        TaskState::Completed => q.completed,
        TaskState::Waiting => q.waiting,
    })
}

fn draw_tasks(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let [tabs_area, table_area] = Layout::vertical([Constraint::Length(3), Constraint::Min(3)]).areas(area);
    let queue = app.queue().map(|q| q.queue.as_str()).unwrap_or_default();
    // Compact, so that the eight states fit a 100-column terminal: the selected one is reversed.
    let titles = STATES.iter().map(|s| format!("{s} {}", count(app, *s)));
    let tabs = Tabs::new(titles)
        .divider("")
        .select(app.state_tab)
        .block(Block::default().borders(Borders::ALL).title(format!(" Queue {queue} ")))
        .highlight_style(Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED));
    frame.render_widget(tabs, tabs_area);

    let block = Block::default().borders(Borders::ALL).title(format!(" {} tasks, page {} ", app.state(), app.page + 1));
    let Some(tasks) = &app.tasks else {
        frame.render_widget(Paragraph::new("Loading…").block(block), table_area);
        return;
    };
    if tasks.is_empty() {
        frame.render_widget(Paragraph::new(format!("No {} tasks", app.state())).block(block), table_area);
        return;
    }
    let (extra, width) = extra_column(app.state());
    let header = Row::new(["ID", "Type", "Payload", extra]).style(Style::new().add_modifier(Modifier::BOLD));
    let rows = tasks.iter().map(|t| {
        Row::new(vec![t.id.to_string(), t.type_name.clone(), payload_text(&t.payload), extra_value(app.state(), t)])
    });
    let widths = [Constraint::Length(38), Constraint::Min(12), Constraint::Min(16), Constraint::Length(width)];
    let table = Table::new(rows, widths)
        .header(header)
        .block(block)
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .highlight_symbol("> ");
    let mut state = TableState::default().with_selected(Some(app.selected_task));
    frame.render_stateful_widget(table, table_area, &mut state);
}

/// The state-specific column of the task list: its title and width.
fn extra_column(state: TaskState) -> (&'static str, u16) {
    match state {
        TaskState::Scheduled => ("Process In", 14),
        TaskState::Retry => ("Last Error", 30),
        TaskState::Archived => ("Last Error", 30),
        TaskState::Completed => ("Completed At", 21),
        TaskState::Aggregating => ("Group", 16),
        TaskState::Active => ("Progress", 24),
        TaskState::Pending => ("Retried", 8),
        TaskState::Waiting => ("Workflow", 38),
    }
}

fn extra_value(state: TaskState, t: &TaskInfo) -> String {
    match state {
        TaskState::Scheduled => due(t.next_process_at),
        TaskState::Retry | TaskState::Archived => t.last_error.clone().unwrap_or_default(),
        TaskState::Completed => past(t.completed_at),
        TaskState::Aggregating => t.group.as_ref().map(ToString::to_string).unwrap_or_default(),
        TaskState::Active => t.progress.as_ref().map(ToString::to_string).unwrap_or_default(),
        TaskState::Pending => format!("{}/{}", t.retried, t.max_retry),
        TaskState::Waiting => crate::view::workflow_of(t),
    }
}

fn draw_task(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let block = Block::default().borders(Borders::ALL).title(" Task ");
    let Some(t) = &app.task else {
        frame.render_widget(Paragraph::new("Loading…").block(block), area);
        return;
    };
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let field =
        |name: &str, value: String| Line::from(vec![Span::styled(format!("{name:<14}"), bold), Span::raw(value)]);
    let mut lines = vec![
        field("ID", t.id.to_string()),
        field("Queue", t.queue.to_string()),
        field("Type", t.type_name.clone()),
        Line::from(vec![
            Span::styled(format!("{:<14}", "State"), bold),
            Span::styled(t.state.as_str(), state_style(t.state.as_str())),
        ]),
        field("Retried", format!("{}/{}", t.retried, t.max_retry)),
        field("Next process", t.next_process_at.map(rfc3339).unwrap_or_else(|| "n/a".to_owned())),
        field("Timeout", t.timeout.map(go_duration).unwrap_or_default()),
        field("Deadline", past(t.deadline)),
    ];
    if let Some(group) = &t.group {
        lines.push(field("Group", group.to_string()));
    }
    if let Some(error) = &t.last_error {
        lines.push(field("Last failed", past(t.last_failed_at)));
        lines.push(field("Last error", error.clone()));
    }
    if let Some(completed) = t.completed_at {
        lines.push(field("Completed at", rfc3339(completed)));
    }
    if let Some(result) = &t.result {
        lines.push(field("Result", payload_text(result)));
    }
    if let Some(progress) = &t.progress {
        lines.push(field("Progress", format!("{progress} (reported {})", past(Some(progress.reported_at())))));
    }
    lines.push(Line::default());
    lines.push(Line::styled("Payload", bold));
    lines.push(Line::from(payload_text(&t.payload)));
    frame.render_widget(Paragraph::new(lines).block(block).wrap(Wrap { trim: false }), area);
}

fn draw_servers(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let block = Block::default().borders(Borders::ALL).title(" Servers ");
    let Some(servers) = &app.servers else {
        frame.render_widget(Paragraph::new("Loading…").block(block), area);
        return;
    };
    if servers.is_empty() {
        frame.render_widget(Paragraph::new("No running servers").block(block), area);
        return;
    }
    let header = Row::new(["Host", "PID", "State", "Workers", "Queues", "Started"])
        .style(Style::new().add_modifier(Modifier::BOLD));
    let rows = servers.iter().map(|r| {
        let s = &r.server;
        Row::new(vec![
            Cell::from(s.host.clone()),
            Cell::from(s.pid.to_string()),
            Cell::from(s.status.as_str()).style(state_style(if s.status.as_str() == "active" {
                "active"
            } else {
                "retry"
            })),
            Cell::from(format!("{}/{}", r.workers.len(), s.concurrency)),
            Cell::from(queue_weights(&s.queues)),
            Cell::from(rfc3339(s.started)),
        ])
    });
    let widths = [
        Constraint::Min(16),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Min(16),
        Constraint::Length(21),
    ];
    let table = Table::new(rows, widths)
        .header(header)
        .block(block)
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .highlight_symbol("> ");
    let mut state = TableState::default().with_selected(Some(app.selected_server));
    frame.render_stateful_widget(table, area, &mut state);
}

fn draw_help(frame: &mut Frame<'_>, area: Rect) {
    let lines = vec![
        Line::from("↑ ↓ / k j     move the selection"),
        Line::from("Enter         open the queue's tasks, or the task"),
        Line::from("Tab ← →       switch task state (h l too)"),
        Line::from("[ ] / p n     previous and next page of tasks"),
        Line::from("r             run the task now"),
        Line::from("a, d          archive, delete the task (press twice)"),
        Line::from("c             cancel the running task"),
        Line::from("s             the servers (from the queue list)"),
        Line::from("Q / S         quiet / stop the selected server (press twice to confirm)"),
        Line::from("q / Esc       back; quit from the queue list"),
        Line::from("Ctrl-C        quit"),
        Line::from("?             this help (any key closes it)"),
    ];
    let width = 56.min(area.width);
    let height = (lines.len() as u16 + 2).min(area.height);
    let popup = Rect { x: area.x + (area.width - width) / 2, y: area.y + (area.height - height) / 2, width, height };
    frame.render_widget(Clear, popup);
    frame.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" Help ")), popup);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dash::app::tests::{queues, task};
    use crate::dash::app::{Key, Msg};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    /// The text of `app` drawn on a 100×20 screen, one string per row.
    fn render(app: &App) -> Vec<String> {
        let mut terminal = Terminal::new(TestBackend::new(100, 20)).unwrap();
        terminal.draw(|frame| draw(frame, app)).unwrap();
        let buffer = terminal.backend().buffer();
        (0..buffer.area.height)
            .map(|y| (0..buffer.area.width).map(|x| buffer[(x, y)].symbol()).collect::<String>())
            .collect()
    }

    fn contains(screen: &[String], text: &str) -> bool {
        screen.iter().any(|line| line.contains(text))
    }

    /// The dashboard on the pending tasks of `critical`: one task, `t1`.
    fn pending_list_of_t1() -> App {
        let mut app = App::new("8s");
        app.update(Msg::Queues(Ok(queues())));
        app.update(Msg::Key(Key::Enter));
        app.update(Msg::Key(Key::Tab));
        app.update(Msg::Tasks {
            queue: "critical".into(),
            state: TaskState::Pending,
            page: 0,
            tasks: Ok(vec![task("critical", "t1")]),
        });
        app
    }

    #[test]
    fn the_queue_table_shows_every_queue_and_the_selected_ones_counts() {
        let mut app = App::new("8s");
        app.update(Msg::Queues(Ok(queues())));
        let screen = render(&app);
        assert!(contains(&screen, "asynq dashboard"), "{screen:#?}");
        assert!(contains(&screen, "refreshed 2026-11-22T03:24:56Z (every 8s)"), "{screen:#?}");
        let critical = screen.iter().find(|l| l.contains("critical") && l.contains("run")).expect("critical row");
        assert!(critical.contains("> "), "the first queue is selected: {critical}");
        assert!(critical.contains("40") && critical.contains("25.00%"), "{critical}");
        assert!(screen.iter().any(|l| l.contains("default") && l.contains("paused")), "{screen:#?}");
        assert!(contains(&screen, "pending 3"), "{screen:#?}");
        assert!(contains(&screen, "Enter: tasks"), "{screen:#?}");
    }

    #[test]
    fn the_task_list_shows_tabs_with_counts_and_the_tasks() {
        let mut app = App::new("8s");
        app.update(Msg::Queues(Ok(queues())));
        app.update(Msg::Key(Key::Enter));
        assert!(contains(&render(&app), "Loading…"));
        app.update(Msg::Key(Key::Tab));
        let tasks = vec![task("critical", "task-1"), task("critical", "task-2")];
        app.update(Msg::Tasks { queue: "critical".into(), state: TaskState::Pending, page: 0, tasks: Ok(tasks) });
        let screen = render(&app);
        assert!(contains(&screen, "Queue critical"), "{screen:#?}");
        assert!(contains(&screen, "pending 3") && contains(&screen, "retry 2"), "{screen:#?}");
        let first = screen.iter().find(|l| l.contains("task-1")).expect("task-1 row");
        assert!(first.contains("> ") && first.contains("email:welcome") && first.contains(r#"{"user":42}"#), "{first}");
        assert!(contains(&screen, "0/25"), "{screen:#?}");
    }

    #[test]
    fn waiting_workflow_tasks_are_counted_in_the_queue_table_the_summary_and_their_tab() {
        let mut app = App::new("8s");
        app.update(Msg::Queues(Ok(queues())));
        let screen = render(&app);
        let header = screen.iter().find(|l| l.contains("Queue") && l.contains("Size")).expect("header");
        assert!(header.contains("Size     Waiting"), "{screen:#?}");
        let critical = screen.iter().find(|l| l.contains("critical") && l.contains("run")).expect("critical row");
        assert!(critical.contains(" 6        1 "), "size 6, 1 waiting: {critical}");
        assert!(contains(&screen, "completed 0  waiting 1"), "{screen:#?}");

        app.update(Msg::Key(Key::Enter));
        app.update(Msg::Key(Key::BackTab));
        let mut waiting = task("critical", "w1");
        waiting.state = TaskState::Waiting;
        waiting.headers.insert(asynq_core::workflow::WORKFLOW_HEADER.to_owned(), "wf-1".to_owned());
        app.update(Msg::Tasks {
            queue: "critical".into(),
            state: TaskState::Waiting,
            page: 0,
            tasks: Ok(vec![waiting]),
        });
        let screen = render(&app);
        assert!(contains(&screen, " completed 0  waiting 1 "), "{screen:#?}");
        assert!(contains(&screen, "waiting tasks, page 1") && contains(&screen, "Workflow"), "{screen:#?}");
        let row = screen.iter().find(|l| l.contains("w1")).expect("the waiting task's row");
        assert!(row.contains("wf-1"), "{row}");
    }

    #[test]
    fn active_tasks_show_their_progress() {
        let mut app = App::new("8s");
        app.update(Msg::Queues(Ok(queues())));
        app.update(Msg::Key(Key::Enter));
        let mut running = task("critical", "t1");
        running.state = TaskState::Active;
        let reported = asynq_core::time::from_unix_secs(1_795_317_800);
        running.progress = Some(asynq_core::Progress::new(0.42, "resizing", reported).unwrap());
        app.update(Msg::Tasks {
            queue: "critical".into(),
            state: TaskState::Active,
            page: 0,
            tasks: Ok(vec![running]),
        });
        let screen = render(&app);
        let row = screen.iter().find(|l| l.contains("t1")).expect("t1 row");
        assert!(contains(&screen, "Progress") && row.contains("42% resizing"), "{screen:#?}");
        app.update(Msg::Key(Key::Enter));
        let screen = render(&app);
        assert!(screen.iter().any(|l| l.contains("Progress") && l.contains("42% resizing (reported")), "{screen:#?}");
    }

    #[test]
    fn the_task_view_shows_the_task_and_help_overlays_it() {
        let mut app = pending_list_of_t1();
        app.update(Msg::Key(Key::Enter));
        let screen = render(&app);
        assert!(contains(&screen, "email:welcome") && contains(&screen, "30m0s"), "{screen:#?}");
        assert!(contains(&screen, r#"{"user":42}"#), "{screen:#?}");
        app.update(Msg::Key(Key::Char('?')));
        let screen = render(&app);
        assert!(contains(&screen, "Help") && contains(&screen, "switch task state"), "{screen:#?}");
        app.update(Msg::Queues(Err("cannot reach Redis".into())));
        assert!(contains(&render(&app), "error: cannot reach Redis"));
    }

    #[test]
    fn the_servers_view_lists_each_server() {
        use asynq_client::{ServerInfo, ServerReport, ServerStatus};
        let mut app = App::new("8s");
        app.update(Msg::Queues(Ok(queues())));
        app.update(Msg::Key(Key::Char('s')));
        assert!(contains(&render(&app), "Loading…"));
        let server = ServerInfo {
            host: "worker-1.internal".into(),
            pid: 4242,
            server_id: "s-1".into(),
            concurrency: 10,
            queues: [("critical".to_owned(), 6), ("default".to_owned(), 3)].into(),
            strict_priority: false,
            status: ServerStatus::Active,
            started: asynq_core::time::from_unix_secs(1_795_317_000),
            active_workers: 0,
        };
        app.update(Msg::Servers(Ok(vec![ServerReport { server, workers: Vec::new() }])));
        let screen = render(&app);
        let row = screen.iter().find(|l| l.contains("worker-1.internal")).expect("the server's row");
        assert!(row.contains("4242") && row.contains("active") && row.contains("0/10"), "{row}");
        assert!(row.contains("critical:6, default:3"), "{row}");
        assert!(contains(&screen, "Q: quiet   S: stop"), "the footer names the keys");
        app.update(Msg::Key(Key::Char('Q')));
        assert!(contains(&render(&app), "press Q again to confirm"), "the status line asks first");
    }

    #[test]
    fn the_task_list_names_its_page_and_the_footer_says_what_an_action_did() {
        let mut app = pending_list_of_t1();
        assert!(contains(&render(&app), "pending tasks, page 1"));
        app.update(Msg::Key(Key::Char('d')));
        assert!(contains(&render(&app), "delete task t1? press d again to confirm"));
        app.update(Msg::Acted(Ok("task t1 deleted".into())));
        assert!(contains(&render(&app), "task t1 deleted"));
    }
}
