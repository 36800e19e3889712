//! What a scenario reports ([`Measurement`]) and how its timed phase is taken ([`Timer`]):
//! monotonic elapsed time, wall-clock bounds (to combine processes that ran side by side), and
//! this process's CPU time and peak memory, read from `/proc` (Linux; `None` elsewhere).

use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The clock ticks per second of the times in `/proc/<pid>/stat` (`USER_HZ`): 100 on every
/// Linux platform; reading `sysconf(_SC_CLK_TCK)` would need `unsafe`, which the workspace
/// forbids.
const CLOCK_TICKS_PER_SEC: f64 = 100.0;

/// The numbers one scenario run measured, printed by `asynq-bench` as one JSON line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The scenario's name, as on the command line.
    pub scenario: String,
    /// Tasks the timed phase covered (for `pickup-latency`, the samples taken).
    pub tasks: u64,
    /// The server's concurrency, when the scenario runs a server.
    pub concurrency: Option<usize>,
    /// Length of the timed phase, from a monotonic clock.
    pub elapsed_s: f64,
    /// `tasks / elapsed_s`, for throughput scenarios.
    pub tasks_per_s: Option<f64>,
    /// Median enqueue-to-handler-start latency, for `pickup-latency`.
    pub pickup_p50_ms: Option<f64>,
    /// 99th percentile of the same latency.
    pub pickup_p99_ms: Option<f64>,
    /// Median time of `Inspector::servers()` (what `asynq server ls` calls), for `idle
    /// --servers`.
    #[serde(default)]
    pub servers_ls_ms: Option<f64>,
    /// The rate producers achieved against their timetable, tasks per second from the first
    /// scheduled send to the last enqueue's return, for the streaming scenarios.
    #[serde(default)]
    pub offered_per_s: Option<f64>,
    /// Median time of each operator read, by name, in milliseconds, for `group-reads`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub reads_ms: std::collections::BTreeMap<String, f64>,
    /// The most handlers that ran at once, across the process's servers, for
    /// `shared-limit-wait`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_running: Option<u64>,
    /// The tasks this process's handler ran, for the sharded drain, whose caller checks that
    /// every task ran once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handled: Option<u64>,
    /// CPU time (user + system, all threads) this process spent in the timed phase.
    pub cpu_s: Option<f64>,
    /// This process's peak resident memory (`VmHWM`) at the end of the timed phase, in MiB.
    pub peak_rss_mb: Option<f64>,
    /// Wall-clock start of the timed phase, in microseconds since the Unix epoch.
    pub started_unix_us: u64,
    /// Wall-clock end of the timed phase, in microseconds since the Unix epoch.
    pub finished_unix_us: u64,
}

/// Times one phase of a scenario: elapsed time, wall-clock bounds and CPU time.
#[derive(Debug)]
pub struct Timer {
    started: Instant,
    started_wall: SystemTime,
    cpu_at_start: Option<Duration>,
}

impl Timer {
    /// Starts timing now.
    pub fn start() -> Self {
        Self { cpu_at_start: process_cpu_time(), started_wall: SystemTime::now(), started: Instant::now() }
    }

    /// Time since [`Timer::start`].
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Stops timing and reports `tasks` done in the phase. `tasks_per_s` is filled in when
    /// `throughput` is true.
    pub fn finish(self, scenario: &str, tasks: u64, concurrency: Option<usize>, throughput: bool) -> Measurement {
        let elapsed = self.started.elapsed();
        let finished_wall = SystemTime::now();
        let cpu = process_cpu_time().zip(self.cpu_at_start).map(|(end, start)| end.saturating_sub(start));
        let elapsed_s = elapsed.as_secs_f64();
        Measurement {
            scenario: scenario.to_owned(),
            tasks,
            concurrency,
            elapsed_s,
            tasks_per_s: throughput.then(|| tasks as f64 / elapsed_s),
            pickup_p50_ms: None,
            pickup_p99_ms: None,
            servers_ls_ms: None,
            offered_per_s: None,
            reads_ms: std::collections::BTreeMap::new(),
            max_running: None,
            handled: None,
            cpu_s: cpu.map(|cpu| cpu.as_secs_f64()),
            peak_rss_mb: peak_rss_mb(),
            started_unix_us: unix_micros(self.started_wall),
            finished_unix_us: unix_micros(finished_wall),
        }
    }
}

/// The `p`-th percentile (0 < p ≤ 100) of `sorted` by the nearest-rank method; `None` when
/// empty.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

fn unix_micros(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_micros() as u64)
}

/// User plus system CPU time of this process, all threads, from `/proc/self/stat`.
fn process_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let ticks = parse_cpu_ticks(&stat)?;
    Some(Duration::from_secs_f64(ticks as f64 / CLOCK_TICKS_PER_SEC))
}

/// `utime + stime` (fields 14 and 15) of a `/proc/<pid>/stat` line. The second field, the
/// command name in parentheses, may contain spaces, so fields are counted after its `)`.
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let (_, after_name) = stat.rsplit_once(')')?;
    let mut fields = after_name.split_whitespace().skip(11); // field 3 is the first after `)`
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

/// This process's peak resident set size (`VmHWM` in `/proc/self/status`), in MiB.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_hwm_kib(&status).map(|kib| kib as f64 / 1024.0)
}

/// The `VmHWM:` line of `/proc/<pid>/status`, in KiB.
fn parse_vm_hwm_kib(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|line| line.strip_prefix("VmHWM:"))?;
    line.trim().strip_suffix("kB")?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cpu_ticks_after_a_command_name_with_spaces_and_parentheses() {
        let stat = "4242 (tokio (rt) worker) S 1 4242 4242 0 -1 4194560 300 0 0 0 170 33 0 0 20 0 5 0 1 0 0";
        assert_eq!(parse_cpu_ticks(stat), Some(203));
        assert_eq!(parse_cpu_ticks("4242 (x) S 1"), None);
    }

    #[test]
    fn reads_the_peak_resident_set() {
        let status = "Name:\tasynq-bench\nVmPeak:\t  20000 kB\nVmHWM:\t   12288 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(parse_vm_hwm_kib(status), Some(12288));
        assert_eq!(parse_vm_hwm_kib("Name:\tx\n"), None);
    }

    #[test]
    fn this_process_has_cpu_time_and_memory_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(process_cpu_time().is_some());
            assert!(peak_rss_mb().is_some_and(|mb| mb > 0.0));
        }
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&sorted, 50.0), Some(50.0));
        assert_eq!(percentile(&sorted, 99.0), Some(99.0));
        assert_eq!(percentile(&sorted, 100.0), Some(100.0));
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[1.0, 2.0, 3.0], 50.0), Some(2.0));
        assert_eq!(percentile(&[], 50.0), None);
    }
}
