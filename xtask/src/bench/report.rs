//! The report: one [`Row`] per scenario (the median of its runs), written as
//! `target/bench/report.json` and `target/bench/report.md` with the machine it ran on, and
//! printed as a table.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use serde::Serialize;

use super::micro::MicroResult;
use super::stats::Usage;

/// What one run of a scenario measured, before it becomes a [`Row`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Run {
    /// Tasks the run covered (samples for latency; 0 when idle).
    pub(crate) tasks: u64,
    /// The server concurrency (per process), when there is a server.
    pub(crate) concurrency: Option<usize>,
    /// Throughput, for throughput scenarios.
    pub(crate) tasks_per_s: Option<f64>,
    /// Pickup latency percentiles, for the latency scenario.
    pub(crate) pickup_p50_ms: Option<f64>,
    /// See `pickup_p50_ms`.
    pub(crate) pickup_p99_ms: Option<f64>,
    /// The offered load the producers achieved, tasks/s, for the streaming scenarios.
    pub(crate) offered_per_s: Option<f64>,
    /// Median time of `Inspector::servers()`, for the idle-servers scenarios.
    pub(crate) servers_ls_ms: Option<f64>,
    /// Median time of each operator read by name, for the group-reads scenario.
    pub(crate) reads_ms: BTreeMap<String, f64>,
    /// The most handlers that ran at once, for the shared-limit scenario.
    pub(crate) max_running: Option<u64>,
    /// CPU seconds of the benchmark processes (summed).
    pub(crate) client_cpu_s: Option<f64>,
    /// Peak resident memory of the benchmark processes (the largest).
    pub(crate) peak_rss_mb: Option<f64>,
    /// What Redis did during the measurement window, when measured.
    pub(crate) redis: Option<Usage>,
    /// Length of the window Redis was measured over, in seconds.
    pub(crate) window_s: f64,
}

/// One scenario in the report: the median of each number over its runs. The serialized field
/// names are the report's contract (`report.json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Row {
    pub(crate) scenario: String,
    pub(crate) runs: usize,
    pub(crate) concurrency: Option<usize>,
    pub(crate) tasks: u64,
    pub(crate) tasks_per_s: Option<f64>,
    pub(crate) pickup_p50_ms: Option<f64>,
    pub(crate) pickup_p99_ms: Option<f64>,
    /// The offered load the producers achieved against their timetable, tasks/s, for the
    /// streaming scenarios.
    pub(crate) offered_per_s: Option<f64>,
    /// Redis CPU (all threads) per task, in microseconds.
    pub(crate) redis_cpu_us_per_task: Option<f64>,
    /// Commands Redis executed per task, those inside scripts included.
    pub(crate) redis_cmds_per_task: Option<f64>,
    /// Commands Redis executed per second of the measurement window (the idle cost).
    pub(crate) redis_cmds_per_s: Option<f64>,
    pub(crate) client_cpu_s: Option<f64>,
    pub(crate) peak_rss_mb: Option<f64>,
    /// The longest command Redis ran, in milliseconds; 0 when none took
    /// [`SLOW_COMMAND_US`](super::stats::SLOW_COMMAND_US) or more. The longest of the runs,
    /// not their median.
    pub(crate) longest_command_ms: Option<f64>,
    /// Median time of `Inspector::servers()` (what `asynq server ls` calls) at the end of the
    /// idle-servers scenarios, in milliseconds.
    pub(crate) servers_ls_ms: Option<f64>,
    /// The most handlers that ran at once, for the shared-limit scenario: the most of the runs,
    /// not their median.
    pub(crate) max_running: Option<u64>,
    /// Redis CPU (all threads) over the measurement window, in percent of one CPU; in the
    /// checks only.
    #[serde(skip)]
    pub(crate) redis_cpu_pct: Option<f64>,
    /// Median time of each operator read by name, in milliseconds; in the checks only.
    #[serde(skip)]
    pub(crate) reads_ms: BTreeMap<String, f64>,
    /// The longest command's first words (the longest run's), from `SLOWLOG`; in the checks
    /// only.
    #[serde(skip)]
    pub(crate) longest_command: Option<String>,
    /// Redis main-thread CPU per task, in microseconds; in the Markdown report only.
    #[serde(skip)]
    pub(crate) redis_main_thread_cpu_us_per_task: Option<f64>,
    /// Microseconds per task that Redis spent inside the data commands (those scripts ran
    /// included), without the script calls themselves, parsing or system calls
    /// ([`Usage::data_command_us`]); in the Markdown report only.
    #[serde(skip)]
    pub(crate) redis_data_cmd_us_per_task: Option<f64>,
    /// Commands by command name, per task (per second of the window for scenarios without
    /// tasks); in the Markdown report only.
    #[serde(skip)]
    pub(crate) cmds_by_command: BTreeMap<String, f64>,
}

impl Row {
    /// The row of a single run.
    pub(crate) fn from_run(scenario: &str, run: &Run) -> Self {
        let per_task = |total: f64| (run.tasks > 0).then(|| total / run.tasks as f64);
        let per_second = |total: f64| (run.window_s > 0.0).then(|| total / run.window_s);
        let redis = run.redis.as_ref();
        Row {
            scenario: scenario.to_owned(),
            runs: 1,
            concurrency: run.concurrency,
            tasks: run.tasks,
            tasks_per_s: run.tasks_per_s,
            pickup_p50_ms: run.pickup_p50_ms,
            pickup_p99_ms: run.pickup_p99_ms,
            offered_per_s: run.offered_per_s,
            redis_cpu_us_per_task: redis.and_then(|usage| per_task(usage.cpu_s * 1e6)),
            redis_cmds_per_task: redis.and_then(|usage| per_task(usage.total_calls() as f64)),
            redis_cmds_per_s: redis.and_then(|usage| per_second(usage.total_calls() as f64)),
            client_cpu_s: run.client_cpu_s,
            peak_rss_mb: run.peak_rss_mb,
            longest_command_ms: redis.map(|usage| usage.longest_command_us.unwrap_or(0) as f64 / 1e3),
            servers_ls_ms: run.servers_ls_ms,
            max_running: run.max_running,
            redis_cpu_pct: redis.and_then(|usage| per_second(usage.cpu_s * 100.0)),
            reads_ms: run.reads_ms.clone(),
            longest_command: redis.and_then(|usage| usage.longest_command.clone()),
            redis_main_thread_cpu_us_per_task: redis
                .and_then(|usage| usage.main_thread_cpu_s)
                .and_then(|cpu_s| per_task(cpu_s * 1e6)),
            redis_data_cmd_us_per_task: redis.and_then(|usage| per_task(usage.data_command_us)),
            cmds_by_command: redis
                .map(|usage| {
                    let rate =
                        |calls: u64| if run.tasks > 0 { per_task(calls as f64) } else { per_second(calls as f64) };
                    usage.calls.iter().filter_map(|(command, calls)| Some((command.clone(), rate(*calls)?))).collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// Groups `rows` by scenario (in order of first appearance) and takes the median of every
/// number of each group: with three runs, each number is its middle value, which may come from
/// different runs.
pub(crate) fn medians(rows: Vec<Row>) -> Vec<Row> {
    let mut groups: Vec<Vec<Row>> = Vec::new();
    for row in rows {
        match groups.iter_mut().find(|group| group[0].scenario == row.scenario) {
            Some(group) => group.push(row),
            None => groups.push(vec![row]),
        }
    }
    groups.into_iter().map(|group| median_row(&group)).collect()
}

fn median_row(group: &[Row]) -> Row {
    let of = |field: fn(&Row) -> Option<f64>| median(group.iter().filter_map(field));
    let commands: std::collections::BTreeSet<&String> =
        group.iter().flat_map(|row| row.cmds_by_command.keys()).collect();
    Row {
        scenario: group[0].scenario.clone(),
        runs: group.len(),
        concurrency: group[0].concurrency,
        tasks: group[0].tasks,
        tasks_per_s: of(|row| row.tasks_per_s),
        pickup_p50_ms: of(|row| row.pickup_p50_ms),
        pickup_p99_ms: of(|row| row.pickup_p99_ms),
        offered_per_s: of(|row| row.offered_per_s),
        redis_cpu_us_per_task: of(|row| row.redis_cpu_us_per_task),
        redis_cmds_per_task: of(|row| row.redis_cmds_per_task),
        redis_cmds_per_s: of(|row| row.redis_cmds_per_s),
        client_cpu_s: of(|row| row.client_cpu_s),
        peak_rss_mb: of(|row| row.peak_rss_mb),
        longest_command_ms: group.iter().filter_map(|row| row.longest_command_ms).reduce(f64::max),
        servers_ls_ms: of(|row| row.servers_ls_ms),
        max_running: group.iter().filter_map(|row| row.max_running).max(),
        redis_cpu_pct: of(|row| row.redis_cpu_pct),
        reads_ms: group[0]
            .reads_ms
            .keys()
            .filter_map(|read| {
                Some((read.clone(), median(group.iter().filter_map(|row| row.reads_ms.get(read).copied()))?))
            })
            .collect(),
        longest_command: group
            .iter()
            .filter(|row| row.longest_command.is_some())
            .max_by(|a, b| a.longest_command_ms.unwrap_or(0.0).total_cmp(&b.longest_command_ms.unwrap_or(0.0)))
            .and_then(|row| row.longest_command.clone()),
        redis_main_thread_cpu_us_per_task: of(|row| row.redis_main_thread_cpu_us_per_task),
        redis_data_cmd_us_per_task: of(|row| row.redis_data_cmd_us_per_task),
        cmds_by_command: commands
            .into_iter()
            .filter_map(|command| {
                let values = group.iter().map(|row| row.cmds_by_command.get(command).copied().unwrap_or(0.0));
                Some((command.clone(), median(values)?))
            })
            .collect(),
    }
}

/// The median; the mean of the two middle values for an even count; `None` when empty.
fn median(values: impl Iterator<Item = f64>) -> Option<f64> {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    match values.len() {
        0 => None,
        n if n % 2 == 1 => Some(values[middle]),
        _ => Some((values[middle - 1] + values[middle]) / 2.0),
    }
}

/// A throughput of ours against the peer's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ratio {
    /// What is compared, for people.
    pub(crate) label: String,
    /// Our scenario.
    pub(crate) ours: &'static str,
    /// The peer's scenario.
    pub(crate) peer: &'static str,
}

impl Ratio {
    /// Ours / peer's tasks per second, when both rows are in `rows`.
    fn value(&self, rows: &[Row]) -> Option<f64> {
        let throughput = |name: &str| rows.iter().find(|row| row.scenario == name).and_then(|row| row.tasks_per_s);
        Some(throughput(self.ours)? / throughput(self.peer)?)
    }
}

/// Where and when the benchmark ran.
#[derive(Debug, Clone)]
pub(crate) struct Machine {
    cpus: usize,
    cpu_model: String,
    redis_version: String,
    date: String,
    commit: String,
    /// `/proc/loadavg`'s 1, 5 and 15 minute load averages: other work on the machine skews
    /// the numbers.
    load: String,
}

impl Machine {
    /// Describes this machine, with the version of the `redis-server` at `redis_binary`.
    pub(crate) fn detect(redis_binary: &Path) -> Self {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| {
                info.lines()
                    .find_map(|line| line.strip_prefix("model name"))
                    .and_then(|rest| rest.split_once(':'))
                    .map(|(_, model)| model.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown CPU".to_owned());
        let redis_version = output_of(Command::new(redis_binary).arg("--version")).unwrap_or_else(|| "unknown".into());
        let git = |args: &[&str]| output_of(Command::new("git").args(args).current_dir(crate::workspace_root()));
        let commit = match (git(&["rev-parse", "--short", "HEAD"]), git(&["status", "--porcelain"])) {
            (Some(commit), Some(changes)) if !changes.is_empty() => format!("{commit} with uncommitted changes"),
            (Some(commit), _) => commit,
            (None, _) => "unknown".to_owned(),
        };
        Self {
            cpus: std::thread::available_parallelism().map_or(1, usize::from),
            cpu_model,
            redis_version,
            date: utc_now(),
            commit,
            load: std::fs::read_to_string("/proc/loadavg")
                .map(|load| load.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
                .unwrap_or_else(|_| "unknown".to_owned()),
        }
    }
}

/// Trimmed stdout of a successful command.
fn output_of(command: &mut Command) -> Option<String> {
    let output = command.stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Everything the report holds.
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) machine: Machine,
    /// How it was run: sizes, runs, pinning, for people.
    pub(crate) settings: String,
    /// Whether idle CPUs were kept awake (`--awake`).
    pub(crate) cpus_awake: bool,
    pub(crate) rows: Vec<Row>,
    pub(crate) ratios: Vec<Ratio>,
    pub(crate) micro: Vec<MicroResult>,
}

impl Report {
    /// Writes `report.json` and `report.md` into `dir`.
    pub(crate) fn write(&self, dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let json = serde_json::to_string_pretty(&self.rows)?;
        for (name, text) in [("report.json", json + "\n"), ("report.md", self.markdown())] {
            let path = dir.join(name);
            std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        }
        Ok(())
    }

    /// The scenario table and the ratios to the peer, as printed at the end of a run.
    pub(crate) fn summary(&self) -> String {
        let mut text = self.table();
        let ratios = self.ratio_lines();
        if !ratios.is_empty() {
            text.push('\n');
            text.push_str(&ratios);
        }
        text.push('\n');
        text.push_str(&super::targets::markdown(&super::targets::check(
            &self.rows,
            self.cpus_awake,
            self.machine.cpus,
        )));
        text
    }

    fn markdown(&self) -> String {
        let m = &self.machine;
        let mut md = String::from("# asynq benchmark\n\n");
        let _ = writeln!(md, "- machine: {} CPUs, {}", m.cpus, m.cpu_model);
        let _ = writeln!(md, "- Redis: {}", m.redis_version);
        let _ = writeln!(md, "- date: {}; commit {}", m.date, m.commit);
        let _ = writeln!(md, "- load average when the report was written (1, 5, 15 min): {}", m.load);
        let _ = writeln!(md, "- settings: {}\n", self.settings);
        md.push_str(&self.table());
        let ratios = self.ratio_lines();
        if !ratios.is_empty() {
            md.push_str("\nOur throughput against the peers':\n\n");
            md.push_str(&ratios);
        }
        md.push_str(
            "\nEach number is the median over the runs. Redis CPU is the whole redis-server process \
             (`INFO cpu`); Redis commands are those `INFO commandstats` counts, the ones Lua scripts \
             run included; both cover the whole scenario process (for `idle`, a window in the middle \
             of its run). Client CPU is the benchmark processes' user + system time in the timed phase \
             (the peer's: its whole process). Pickup latency runs from just before an enqueue to the \
             start of its handler on an idle server.\n",
        );
        md.push_str("\n## Targets\n\nEach target of the performance issue against this run's numbers.\n\n");
        md.push_str(&super::targets::markdown(&super::targets::check(&self.rows, self.cpus_awake, self.machine.cpus)));
        md.push_str(&self.details());
        if !self.micro.is_empty() {
            md.push_str(
                "\n## Micro-benchmarks (criterion, median time per iteration)\n\n| benchmark | median |\n|---|---:|\n",
            );
            for result in &self.micro {
                let _ = writeln!(md, "| {} | {} |", result.name, format_duration_ns(result.median_ns));
            }
        }
        md
    }

    fn table(&self) -> String {
        let mut table = String::from(
            "| scenario | runs | concurrency | tasks | tasks/s | pickup p50 ms | pickup p99 ms | Redis CPU µs/task \
             | Redis cmds/task | Redis cmds/s | client CPU s | peak RSS MB | longest Redis cmd ms |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for row in &self.rows {
            let cells = [
                row.scenario.clone(),
                row.runs.to_string(),
                row.concurrency.map_or_else(|| "–".to_owned(), |c| c.to_string()),
                row.tasks.to_string(),
                number(row.tasks_per_s, 0),
                number(row.pickup_p50_ms, 2),
                number(row.pickup_p99_ms, 2),
                number(row.redis_cpu_us_per_task, 1),
                number(row.redis_cmds_per_task, 2),
                number(row.redis_cmds_per_s, 1),
                number(row.client_cpu_s, 2),
                number(row.peak_rss_mb, 1),
                match row.longest_command_ms {
                    Some(0.0) => format!("< {}", super::stats::SLOW_COMMAND_US as f64 / 1e3),
                    ms => number(ms, 1),
                },
            ];
            let _ = writeln!(table, "| {} |", cells.join(" | "));
        }
        table
    }

    fn ratio_lines(&self) -> String {
        let mut lines = String::new();
        for ratio in &self.ratios {
            if let Some(value) = ratio.value(&self.rows) {
                let _ = writeln!(lines, "- {}: {value:.2}× (`{}` / `{}`)", ratio.label, ratio.ours, ratio.peer);
            }
        }
        lines
    }

    /// Per scenario: the Redis main-thread CPU, the part of it inside data commands, and the
    /// commands behind `redis_cmds_per_task`.
    fn details(&self) -> String {
        let mut md = String::from(
            "\n## Redis work by scenario\n\nCommands per task, or per second for a scenario without tasks \
             (`idle`), largest first. In data commands: Redis's own timing (`INFO commandstats`) of the \
             commands that read and write data, those scripts run included; the rest of the CPU goes to \
             running scripts (Lua, arguments, replies), parsing requests and system calls.\n\n\
             | scenario | main-thread CPU µs/task | in data commands µs/task | commands |\n|---|---:|---:|---|\n",
        );
        for row in self.rows.iter().filter(|row| !row.cmds_by_command.is_empty()) {
            let mut commands: Vec<(&String, &f64)> = row.cmds_by_command.iter().collect();
            commands.sort_by(|a, b| b.1.total_cmp(a.1));
            let commands: Vec<String> = commands
                .into_iter()
                .filter(|(_, rate)| **rate >= 0.005)
                .map(|(command, rate)| format!("{command} {rate:.2}"))
                .collect();
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} |",
                row.scenario,
                number(row.redis_main_thread_cpu_us_per_task, 1),
                number(row.redis_data_cmd_us_per_task, 1),
                if commands.is_empty() { "–".to_owned() } else { commands.join(", ") }
            );
        }
        md
    }
}

/// `value` with `decimals` decimals, or a dash.
fn number(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "–".to_owned(), |value| format!("{value:.decimals$}"))
}

fn format_duration_ns(ns: f64) -> String {
    match ns {
        ns if ns >= 1e6 => format!("{:.2} ms", ns / 1e6),
        ns if ns >= 1e3 => format!("{:.2} µs", ns / 1e3),
        ns => format!("{ns:.1} ns"),
    }
}

/// The current UTC date and time, `YYYY-MM-DD HH:MM UTC`.
fn utc_now() -> String {
    let now = SystemTime::now();
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs());
    format!("{} {:02}:{:02} UTC", asynq_core::time::utc_date(now), secs % 86_400 / 3_600, secs % 3_600 / 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(tasks_per_s: f64, redis_cpu_s: f64) -> Run {
        Run {
            tasks: 1_000,
            concurrency: Some(10),
            tasks_per_s: Some(tasks_per_s),
            client_cpu_s: Some(0.5),
            peak_rss_mb: Some(12.0),
            redis: Some(Usage {
                cpu_s: redis_cpu_s,
                main_thread_cpu_s: Some(redis_cpu_s / 2.0),
                calls: BTreeMap::from([("evalsha".to_owned(), 2_000), ("get".to_owned(), 500)]),
                data_command_us: 1_500.0,
                longest_command_us: Some(2_500),
                longest_command: Some("EVALSHA 01234567… 1 asynq:{default}:pending".to_owned()),
            }),
            window_s: 2.0,
            ..Run::default()
        }
    }

    #[test]
    fn a_run_becomes_per_task_numbers() {
        let row = Row::from_run("drain-c10", &run(20_000.0, 0.01));
        assert_eq!(row.redis_cpu_us_per_task, Some(10.0));
        assert_eq!(row.redis_main_thread_cpu_us_per_task, Some(5.0));
        assert_eq!(row.redis_data_cmd_us_per_task, Some(1.5));
        assert_eq!(row.redis_cmds_per_task, Some(2.5));
        assert_eq!(row.redis_cmds_per_s, Some(1_250.0));
        assert_eq!(row.cmds_by_command["evalsha"], 2.0);
        let idle = Row::from_run("idle", &Run { tasks: 0, ..run(0.0, 0.01) });
        assert_eq!((idle.redis_cpu_us_per_task, idle.redis_cmds_per_task), (None, None));
        assert_eq!(idle.redis_cmds_per_s, Some(1_250.0));
        assert_eq!(idle.cmds_by_command["evalsha"], 1_000.0);
    }

    #[test]
    fn medians_are_taken_per_scenario_and_per_number() {
        let rows = vec![
            Row::from_run("a", &run(3.0, 0.003)),
            Row::from_run("b", &run(100.0, 0.1)),
            Row::from_run("a", &run(1.0, 0.009)),
            Row::from_run("a", &run(2.0, 0.001)),
        ];
        let medians = medians(rows);
        assert_eq!(medians.len(), 2);
        assert_eq!((medians[0].scenario.as_str(), medians[0].runs), ("a", 3));
        assert_eq!(medians[0].tasks_per_s, Some(2.0));
        assert_eq!(medians[0].redis_cpu_us_per_task, Some(3.0));
        assert_eq!((medians[1].scenario.as_str(), medians[1].runs), ("b", 1));
        assert_eq!(median([4.0, 1.0].into_iter()), Some(2.5));
        assert_eq!(median(std::iter::empty()), None);
    }

    #[test]
    fn json_has_exactly_the_report_fields() {
        let json = serde_json::to_value(Row::from_run("enqueue", &run(1.0, 0.1))).unwrap();
        let fields: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
        let mut expected = vec![
            "scenario",
            "runs",
            "concurrency",
            "tasks",
            "tasks_per_s",
            "pickup_p50_ms",
            "pickup_p99_ms",
            "offered_per_s",
            "redis_cpu_us_per_task",
            "redis_cmds_per_task",
            "redis_cmds_per_s",
            "client_cpu_s",
            "peak_rss_mb",
            "longest_command_ms",
            "servers_ls_ms",
            "max_running",
        ];
        expected.sort_unstable();
        let mut fields = fields;
        fields.sort_unstable();
        assert_eq!(fields, expected);
    }

    #[test]
    fn ratios_need_both_rows() {
        let ratio = Ratio { label: "enqueue".to_owned(), ours: "ours", peer: "peer" };
        let rows = vec![Row::from_run("ours", &run(30.0, 0.1)), Row::from_run("peer", &run(10.0, 0.1))];
        assert_eq!(ratio.value(&rows), Some(3.0));
        assert_eq!(ratio.value(&rows[..1]), None);
    }

    #[test]
    fn numbers_and_durations_read_well() {
        assert_eq!(number(Some(1234.5678), 1), "1234.6");
        assert_eq!(number(None, 2), "–");
        assert_eq!(format_duration_ns(12.34), "12.3 ns");
        assert_eq!(format_duration_ns(1_234.0), "1.23 µs");
        assert_eq!(format_duration_ns(2_500_000.0), "2.50 ms");
    }
}
