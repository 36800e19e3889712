//! The queue list's graphs, as Go's `asynq dash` draws them beside its tables: a bar chart of
//! the selected queue's tasks by state, and sparklines of its size and of the tasks it
//! processed per refresh, sampled by the dashboard itself ([`super::history`]).

use super::app::App;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Bar, BarChart, BarGroup, Block, Borders, Paragraph, Sparkline};

/// The rows the graphs take.
pub(crate) const GRAPHS_HEIGHT: u16 = 8;

/// Draws the graphs of the selected queue into `area`.
pub(crate) fn draw_queue_graphs(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let Some(q) = app.queue() else { return };
    let [bars_area, history_area] = Layout::horizontal([Constraint::Length(50), Constraint::Min(20)]).areas(area);
    let states = [
        ("act", q.active, Color::Green),
        ("pend", q.pending, Color::Blue),
        ("aggr", q.aggregating, Color::Cyan),
        ("sch", q.scheduled, Color::Cyan),
        ("retry", q.retry, Color::Yellow),
        ("arch", q.archived, Color::Red),
        ("done", q.completed, Color::Reset),
        ("wait", q.waiting, Color::Magenta),
    ];
    let bars: Vec<Bar<'_>> = states
        .iter()
        .map(|(label, n, colour)| Bar::with_label(*label, *n as u64).style(Style::new().fg(*colour)))
        .collect();
    let chart = BarChart::default()
        .block(Block::default().borders(Borders::ALL).title(" Tasks by state "))
        .data(BarGroup::default().bars(&bars))
        .bar_width(5)
        .bar_gap(1)
        .value_style(Style::new().fg(Color::Black).bg(Color::White));
    frame.render_widget(chart, bars_area);

    let name = q.queue.as_str();
    let (sizes, processed) = (app.history.sizes(name), app.history.processed(name));
    let block = Block::default().borders(Borders::ALL).title(format!(" History, {} refreshes ", sizes.len()));
    let inner = block.inner(history_area);
    frame.render_widget(block, history_area);
    let [size_label, size_line, processed_label, processed_line] =
        Layout::vertical([Constraint::Length(1), Constraint::Length(2), Constraint::Length(1), Constraint::Length(2)])
            .areas(inner);
    // The newest samples that fit, newest at the right.
    let fit = |samples: &[u64]| samples[samples.len().saturating_sub(usize::from(inner.width))..].to_vec();
    let max = |samples: &[u64]| samples.iter().copied().max().unwrap_or(0);
    let label = format!("size {} (max {})", q.size, max(&sizes));
    frame.render_widget(Paragraph::new(Line::from(label)), size_label);
    frame.render_widget(Sparkline::default().data(fit(&sizes)).style(Style::new().fg(Color::Blue)), size_line);
    let last = processed.last().copied().unwrap_or(0);
    let label = format!("processed {last} per refresh (max {})", max(&processed));
    frame.render_widget(Paragraph::new(Line::from(label)), processed_label);
    frame
        .render_widget(Sparkline::default().data(fit(&processed)).style(Style::new().fg(Color::Green)), processed_line);
}

#[cfg(test)]
mod tests {
    use crate::dash::app::tests::queues;
    use crate::dash::app::{App, Key, Msg};
    use crate::dash::ui::draw;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::buffer::Buffer;

    fn render(app: &App, width: u16, height: u16) -> Buffer {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|frame| draw(frame, app)).unwrap();
        terminal.backend().buffer().clone()
    }

    fn lines(buffer: &Buffer) -> Vec<String> {
        (0..buffer.area.height)
            .map(|y| (0..buffer.area.width).map(|x| buffer[(x, y)].symbol()).collect::<String>())
            .collect()
    }

    /// The row and column of the first cell of `text` on screen.
    fn find(screen: &[String], text: &str) -> (usize, usize) {
        for (y, line) in screen.iter().enumerate() {
            if let Some(byte) = line.find(text) {
                return (y, line[..byte].chars().count());
            }
        }
        panic!("{text:?} is not on screen: {screen:#?}");
    }

    /// How many cells of column `x` above row `label_y` hold a bar's block.
    fn bar_height(buffer: &Buffer, x: usize, label_y: usize) -> usize {
        (0..label_y).filter(|y| "█▇▆▅▄▃▂▁".contains(buffer[(x as u16, *y as u16)].symbol())).count()
    }

    /// The dashboard after three refreshes of the queues: the selected queue (critical) grew
    /// from 2 to 6 tasks and processed 5, then 0 more.
    fn sampled() -> App {
        let mut app = App::new("8s");
        let mut first = queues();
        (first[1].size, first[1].processed_total) = (2, 100);
        app.update(Msg::Queues(Ok(first)));
        let mut second = queues();
        (second[1].size, second[1].processed_total) = (4, 105);
        app.update(Msg::Queues(Ok(second)));
        let mut third = queues();
        third[1].processed_total = 105;
        app.update(Msg::Queues(Ok(third)));
        app
    }

    #[test]
    fn the_queue_list_charts_the_selected_queue_by_state_and_its_history() {
        let app = sampled();
        let buffer = render(&app, 100, 24);
        let screen = lines(&buffer);
        assert!(
            screen.iter().any(|l| l.contains("Tasks by state") && l.contains("History, 3 refreshes")),
            "{screen:#?}"
        );
        assert!(screen.iter().any(|l| l.contains("size 6 (max 6)")), "{screen:#?}");
        assert!(screen.iter().any(|l| l.contains("processed 0 per refresh (max 5)")), "{screen:#?}");
        // critical: 1 active, 3 pending, 2 retry; the bars' heights follow the counts.
        let (label_y, pending_x) = find(&screen, "pend");
        let (_, active_x) = find(&screen, "act ");
        let (_, retry_x) = find(&screen, "retry");
        let (_, archived_x) = find(&screen, "arch");
        let pending = bar_height(&buffer, pending_x, label_y);
        let (active, retry) = (bar_height(&buffer, active_x, label_y), bar_height(&buffer, retry_x, label_y));
        assert!(pending > retry && retry > active && active > 0, "{pending} {retry} {active}: {screen:#?}");
        assert_eq!(bar_height(&buffer, archived_x, label_y), 0, "no archived task, no bar");
        // The size sparkline rises: the newest sample (6) is drawn taller than the oldest (2).
        let (size_y, size_x) = find(&screen, "size 6");
        let cell = |dx: usize| buffer[((size_x + dx) as u16, (size_y + 2) as u16)].symbol().to_owned();
        let levels = " ▁▂▃▄▅▆▇█";
        let level = |s: &str| levels.chars().position(|c| s.starts_with(c)).unwrap_or(0);
        assert!(level(&cell(2)) > level(&cell(0)), "{:?} then {:?}: {screen:#?}", cell(0), cell(2));
    }

    #[test]
    fn the_graphs_follow_the_selection_and_give_way_on_a_small_terminal() {
        let mut app = sampled();
        app.update(Msg::Key(Key::Char('j')));
        let screen = lines(&render(&app, 100, 24));
        assert!(screen.iter().any(|l| l.contains("size 7 (max 7)")), "default's history: {screen:#?}");
        assert!(screen.iter().any(|l| l.contains("processed 0 per refresh (max 0)")), "{screen:#?}");
        let small = lines(&render(&app, 100, 16));
        assert!(!small.iter().any(|l| l.contains("Tasks by state")), "{small:#?}");
        assert!(small.iter().any(|l| l.contains("default") && l.contains("paused")), "the table stays: {small:#?}");
    }
}
