//! How results are shown: tables (coloured only on a terminal, and never with `NO_COLOR`),
//! headings, JSON, and the text forms of payloads, times and durations.
//!
//! Every line goes out through [`write_line`] ([`outln!`]) or [`write_err`] ([`errln!`]), never
//! `println!`, which panics when the reader of stdout is gone (`asynq task ls ... | head`); the
//! crate denies `print_stdout` and `print_stderr` to keep it so.

use crate::error::{CliError, CliResult};
use asynq_core::{Clock, SystemClock};
use comfy_table::{Attribute, Cell, Color, ContentArrangement, LineStyle, Table, TableStyle};
use serde::Serialize;
use std::fmt;
use std::io::{IsTerminal, Write};
use std::time::{Duration, SystemTime};

/// Writes one line to stdout and flushes it. A reader that went away ends the command quietly
/// ([`Failure::Closed`](crate::error::Failure::Closed)); see [`CliError::stdout`].
pub(crate) fn write_line(text: fmt::Arguments<'_>) -> CliResult {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}").and_then(|()| out.flush()).map_err(CliError::stdout)
}

/// Writes one line to stderr. A failure is ignored: there is nowhere left to report it.
pub(crate) fn write_err(text: fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// `println!` that returns a [`CliResult`] instead of panicking: `outln!("{x}")?`.
macro_rules! outln {
    () => {
        $crate::output::write_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::output::write_line(format_args!($($arg)*))
    };
}
pub(crate) use outln;

/// `eprintln!` that never panics.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::write_err(format_args!($($arg)*))
    };
}
pub(crate) use errln;

/// A progress bar on stderr for a bulk action, which goes in many steps on a large set: drawn
/// only when stderr is a terminal and the output is not JSON, and cleared when dropped.
pub(crate) struct BulkBar(indicatif::ProgressBar);

impl BulkBar {
    /// A bar for tasks being `verb` (for example "archiving").
    pub(crate) fn new(json: bool, verb: &str) -> Self {
        let bar = if json || !std::io::stderr().is_terminal() {
            indicatif::ProgressBar::hidden()
        } else {
            indicatif::ProgressBar::new(0)
        };
        let style = indicatif::ProgressStyle::with_template("{msg} {bar:30} {pos}/{len} tasks ({elapsed})")
            .expect("a valid progress template");
        bar.set_style(style);
        bar.set_message(verb.to_owned());
        Self(bar)
    }

    /// Shows how far the action has come.
    pub(crate) fn update(&self, progress: asynq_core::BulkProgress) {
        self.0.set_length(progress.total as u64);
        self.0.set_position(progress.done as u64);
    }
}

impl Drop for BulkBar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// Whether to colour the output: stdout is a terminal and `NO_COLOR` is unset or empty.
pub(crate) fn colour_enabled() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The columns of a "Task Count by State" table: Go's seven states, then our workflow tasks
/// waiting for their parents.
pub(crate) const STATE_COLUMNS: [&str; 8] =
    ["active", "pending", "aggregating", "scheduled", "retry", "archived", "completed", "waiting"];

/// A table with a dashed line under the header and no other rules, like Go's tool prints.
pub(crate) fn table<I, S>(header: I) -> Table
where
    I: IntoIterator<Item = S>,
    S: ToString,
{
    let style = TableStyle::new().header_separator(LineStyle::none().fill('-').junction(' '));
    let mut table = Table::new();
    table.load_style(style).set_content_arrangement(ContentArrangement::Dynamic);
    let bold = colour_enabled();
    table.set_header(header.into_iter().map(|h| {
        let cell = Cell::new(h);
        if bold { cell.add_attribute(Attribute::Bold) } else { cell }
    }));
    table
}

/// A cell coloured by a task, server or queue state, when colour is on.
pub(crate) fn state_cell(state: &str) -> Cell {
    let cell = Cell::new(state);
    if !colour_enabled() {
        return cell;
    }
    let colour = match state {
        "active" | "running" => Color::Green,
        "pending" => Color::Blue,
        "paused" => Color::Yellow,
        "scheduled" | "aggregating" => Color::Cyan,
        "retry" => Color::Yellow,
        "archived" | "closed" => Color::Red,
        "completed" => Color::DarkGreen,
        _ => return cell,
    };
    cell.fg(colour)
}

/// Prints a table.
pub(crate) fn print_table(table: &Table) -> CliResult {
    outln!("{}", table.trim_fmt())
}

/// Prints a bold heading (plain when colour is off).
pub(crate) fn heading(text: &str) -> CliResult {
    if colour_enabled() { outln!("\x1b[1m{text}\x1b[0m") } else { outln!("{text}") }
}

/// Prints a line starting with `WARNING:` (bold yellow when colour is on), for what an
/// operator must act on.
pub(crate) fn warning(text: &str) -> CliResult {
    if colour_enabled() { outln!("\x1b[1;33mWARNING:\x1b[0m {text}") } else { outln!("WARNING: {text}") }
}

/// Prints `value` as pretty JSON.
pub(crate) fn print_json<T: Serialize>(value: &T) -> CliResult {
    // The views are plain data; serialising them fails only if a view is broken.
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| CliError::new(crate::error::Failure::Failed, format!("cannot write JSON: {e}")))?;
    outln!("{text}")
}

/// A payload as a table shows it: its text when it is printable UTF-8 (and not only
/// whitespace), else `hex:` and its bytes in hex, as Go's tool tells the two apart.
pub(crate) fn payload_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) if is_printable(text) => text.to_owned(),
        _ if bytes.is_empty() => String::new(),
        _ => {
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            format!("hex:{hex}")
        }
    }
}

/// Go's `isPrintable`: no control characters, not all whitespace.
fn is_printable(text: &str) -> bool {
    !text.chars().any(|c| c.is_control() && c != ' ') && !text.chars().all(char::is_whitespace)
}

/// `t` as RFC 3339 in UTC, whole seconds: `2026-11-22T03:24:56Z`.
pub(crate) fn rfc3339(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A past time for a table: RFC 3339, or empty when there is none.
pub(crate) fn past(t: Option<SystemTime>) -> String {
    t.map(rfc3339).unwrap_or_default()
}

/// A due time for a table, as Go's tool says it: `in 59m30s`, or `right now` once due.
pub(crate) fn due(t: Option<SystemTime>) -> String {
    let Some(t) = t else { return String::new() };
    match t.duration_since(SystemClock.now()) {
        Ok(left) => format!("in {}", go_duration(Duration::from_secs(left.as_secs()))),
        Err(_) => "right now".to_owned(),
    }
}

/// A whole-second duration as Go writes it: `0s`, `45s`, `1m30s`, `2h0m5s`.
pub(crate) fn go_duration(d: Duration) -> String {
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, m) => format!("{m}m{s}s"),
        (h, m) => format!("{h}h{m}m{s}s"),
    }
}

/// A byte count for people: `512B`, `1.50KB`, `3.20MB`.
pub(crate) fn bytes_text(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1024 {
        return format!("{n}B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.2}{}", UNITS[unit])
}

/// A server's queues and their weights, heaviest first: `critical:6, default:3`.
pub(crate) fn queue_weights(queues: &std::collections::BTreeMap<String, u32>) -> String {
    let mut queues: Vec<_> = queues.iter().collect();
    queues.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    queues.into_iter().map(|(queue, weight)| format!("{queue}:{weight}")).collect::<Vec<_>>().join(", ")
}

/// Failed over processed, as Go's tool shows it: `12.50%`, or `N/A` when nothing was processed.
pub(crate) fn error_rate(processed: u64, failed: u64) -> String {
    if processed == 0 { "N/A".to_owned() } else { format!("{:.2}%", failed as f64 / processed as f64 * 100.0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_show_as_text_or_hex() {
        assert_eq!(payload_text(br#"{"k":1}"#), r#"{"k":1}"#);
        assert_eq!(payload_text(&[0x0a, 0xff]), "hex:0aff");
        assert_eq!(payload_text(b"a\x01b"), "hex:610162");
        assert_eq!(payload_text(b"   "), "hex:202020");
        assert_eq!(payload_text(b""), "");
    }

    #[test]
    fn numbers_read_as_go_writes_them() {
        assert_eq!(go_duration(Duration::from_secs(5400)), "1h30m0s");
        assert_eq!(go_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(error_rate(0, 0), "N/A");
        assert_eq!(error_rate(8, 1), "12.50%");
        assert_eq!(bytes_text(1536), "1.50KB");
        assert_eq!(rfc3339(asynq_core::time::from_unix_secs(1_795_317_896)), "2026-11-22T03:24:56Z");
    }
}
