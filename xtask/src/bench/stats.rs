//! What Redis did during a measurement: CPU time from `INFO cpu` and commands executed from
//! `INFO commandstats`, as the difference of two snapshots.
//!
//! Command counts include the commands Lua scripts run (`redis.call`), as Redis counts them:
//! an `EVALSHA` whose script calls `LMOVE` and `HSET` counts three. They are the work Redis
//! does; round trips are fewer.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::Context as _;

use super::resp::Reply;
use super::server::RedisServer;

/// The `INFO` calls a snapshot makes. The first snapshot's second call and the second
/// snapshot's first call fall between the two, so a difference counts this many of them.
const SNAPSHOT_INFO_CALLS: u64 = 2;

/// The commands whose time includes that of the commands they run (`redis.call`), which
/// commandstats also times on their own.
const SCRIPT_COMMANDS: [&str; 6] = ["eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"];

/// Redis's cumulative counters at one moment.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Snapshot {
    /// `used_cpu_sys + used_cpu_user`: every thread of the process, in seconds.
    cpu_s: f64,
    /// `used_cpu_sys_main_thread + used_cpu_user_main_thread` (Redis 7+), in seconds.
    main_thread_cpu_s: Option<f64>,
    /// Calls per command, from `INFO commandstats` (`get`, `evalsha`, `config|resetstat`...).
    calls: BTreeMap<String, u64>,
    /// Microseconds spent inside each command, from `INFO commandstats`.
    usec: BTreeMap<String, u64>,
}

/// What Redis did between two snapshots.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Usage {
    /// CPU seconds, all threads.
    pub(crate) cpu_s: f64,
    /// CPU seconds of the main thread, where Redis reports it.
    pub(crate) main_thread_cpu_s: Option<f64>,
    /// Calls per command, without those of the snapshots themselves.
    pub(crate) calls: BTreeMap<String, u64>,
    /// Microseconds Redis spent inside the commands that read and write data, those run by
    /// scripts included; the script calls themselves (their Lua, argument and reply handling),
    /// request parsing, system calls and the snapshots' own commands are left out.
    pub(crate) data_command_us: f64,
    /// The longest command Redis ran, in microseconds, from its `SLOWLOG`: `None` when none
    /// took [`SLOW_COMMAND_US`] or more.
    pub(crate) longest_command_us: Option<u64>,
    /// The longest command's first words (the command, and for a script its SHA, key count and
    /// first keys, which name it), from the same `SLOWLOG` entry.
    pub(crate) longest_command: Option<String>,
}

/// Commands that take at least this long (in microseconds) go to Redis's `SLOWLOG` during a
/// measurement, which names the longest.
pub(crate) const SLOW_COMMAND_US: u64 = 1_000;

/// How many slow commands the `SLOWLOG` keeps.
const SLOWLOG_LEN: &str = "1024";

impl Usage {
    /// Every command executed.
    pub(crate) fn total_calls(&self) -> u64 {
        self.calls.values().sum()
    }
}

/// What Redis did over two measurements together.
impl std::ops::Add for Usage {
    type Output = Usage;

    fn add(mut self, other: Usage) -> Usage {
        for (command, calls) in other.calls {
            *self.calls.entry(command).or_default() += calls;
        }
        let (longest_command_us, longest_command) = if other.longest_command_us > self.longest_command_us {
            (other.longest_command_us, other.longest_command)
        } else {
            (self.longest_command_us, self.longest_command)
        };
        Usage {
            cpu_s: self.cpu_s + other.cpu_s,
            main_thread_cpu_s: self.main_thread_cpu_s.zip(other.main_thread_cpu_s).map(|(a, b)| a + b),
            calls: self.calls,
            data_command_us: self.data_command_us + other.data_command_us,
            longest_command_us,
            longest_command,
        }
    }
}

impl Snapshot {
    /// Reads the counters of `server`.
    pub(crate) fn take(server: &mut RedisServer) -> anyhow::Result<Self> {
        let cpu = server.command(&["INFO", "cpu"])?.into_text()?;
        let commands = server.command(&["INFO", "commandstats"])?.into_text()?;
        Self::parse(&cpu, &commands)
    }

    /// Parses the text of `INFO cpu` and `INFO commandstats`.
    fn parse(cpu: &str, commands: &str) -> anyhow::Result<Self> {
        let fields: BTreeMap<&str, &str> = info_fields(cpu).collect();
        let seconds = |name: &str| -> Option<f64> { fields.get(name).and_then(|value| value.parse().ok()) };
        let sum = |a: &str, b: &str| Some(seconds(a)? + seconds(b)?);
        let cpu_s = sum("used_cpu_sys", "used_cpu_user")
            .with_context(|| format!("INFO cpu has no used_cpu_sys and used_cpu_user:\n{cpu}"))?;
        let main_thread_cpu_s = sum("used_cpu_sys_main_thread", "used_cpu_user_main_thread");
        let (mut calls, mut usec) = (BTreeMap::new(), BTreeMap::new());
        for (field, value) in info_fields(commands) {
            let Some(command) = field.strip_prefix("cmdstat_") else { continue };
            let number = |name: &str| -> anyhow::Result<u64> {
                value
                    .split(',')
                    .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
                    .and_then(|number| number.parse().ok())
                    .with_context(|| format!("no {name} in `{field}:{value}`"))
            };
            calls.insert(command.to_owned(), number("calls")?);
            usec.insert(command.to_owned(), number("usec")?);
        }
        Ok(Self { cpu_s, main_thread_cpu_s, calls, usec })
    }

    /// What happened between `earlier` and this snapshot.
    pub(crate) fn since(&self, earlier: &Snapshot) -> Usage {
        let mut calls: BTreeMap<String, u64> = self
            .calls
            .iter()
            .map(|(command, count)| {
                (command.clone(), count.saturating_sub(earlier.calls.get(command).copied().unwrap_or(0)))
            })
            .collect();
        if let Some(info) = calls.get_mut("info") {
            *info = info.saturating_sub(SNAPSHOT_INFO_CALLS);
        }
        calls.retain(|_, count| *count > 0);
        let data_command_us = self
            .usec
            .iter()
            .filter(|(command, _)| {
                !SCRIPT_COMMANDS.contains(&command.as_str()) && *command != "info" && !command.starts_with("config|")
            })
            .map(|(command, usec)| usec.saturating_sub(earlier.usec.get(command).copied().unwrap_or(0)) as f64)
            .sum();
        Usage {
            longest_command_us: None,
            longest_command: None,
            data_command_us,
            cpu_s: (self.cpu_s - earlier.cpu_s).max(0.0),
            main_thread_cpu_s: self.main_thread_cpu_s.zip(earlier.main_thread_cpu_s).map(|(a, b)| (a - b).max(0.0)),
            calls,
        }
    }
}

/// Runs `work` and returns what it returned, what Redis did meanwhile and how long it took, in
/// seconds.
pub(crate) fn measure<T>(
    server: &mut RedisServer,
    work: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<(T, Usage, f64)> {
    measure_all(std::slice::from_mut(server), work)
}

/// [`measure`] over several servers (a Cluster's masters): their usages added up, the longest
/// command the longest of any.
pub(crate) fn measure_all<T>(
    servers: &mut [RedisServer],
    work: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<(T, Usage, f64)> {
    let mut before = Vec::with_capacity(servers.len());
    for server in servers.iter_mut() {
        server.command(&["CONFIG", "SET", "slowlog-log-slower-than", &SLOW_COMMAND_US.to_string()])?;
        server.command(&["CONFIG", "SET", "slowlog-max-len", SLOWLOG_LEN])?;
        server.command(&["SLOWLOG", "RESET"])?;
        before.push(Snapshot::take(server)?);
    }
    let started = Instant::now();
    let value = work()?;
    let window_s = started.elapsed().as_secs_f64();
    let mut total: Option<Usage> = None;
    for (server, before) in servers.iter_mut().zip(&before) {
        let mut usage = Snapshot::take(server)?.since(before);
        if let Some((us, command)) = longest_logged(&server.command(&["SLOWLOG", "GET", SLOWLOG_LEN])?) {
            (usage.longest_command_us, usage.longest_command) = (Some(us), Some(command));
        }
        total = Some(match total {
            Some(total) => total + usage,
            None => usage,
        });
    }
    Ok((value, total.unwrap_or_default(), window_s))
}

/// How many of the longest command's arguments are kept: a script's SHA, key count and first
/// keys.
const LONGEST_COMMAND_WORDS: usize = 5;

/// The longest entry in a `SLOWLOG GET` reply: its duration (microseconds, each entry's third
/// field) and its first [`LONGEST_COMMAND_WORDS`] arguments (the fourth), the SHA shortened.
/// The measurement's own `SLOWLOG RESET`, which Redis logs after emptying the log (freeing the
/// previous scenario's entries can take milliseconds), is left out.
fn longest_logged(reply: &Reply) -> Option<(u64, String)> {
    let Reply::Array(entries) = reply else { return None };
    entries
        .iter()
        .filter_map(|entry| {
            let Reply::Array(fields) = entry else { return None };
            let Some(Reply::Integer(us)) = fields.get(2) else { return None };
            if let Some(Reply::Array(args)) = fields.get(3)
                && matches!(args.first(), Some(Reply::Text(command)) if command.eq_ignore_ascii_case("slowlog"))
            {
                return None;
            }
            let words = match fields.get(3) {
                Some(Reply::Array(args)) => args
                    .iter()
                    .take(LONGEST_COMMAND_WORDS)
                    .map(|arg| match arg {
                        Reply::Text(text) if text.len() == 40 => format!("{}…", &text[..8]),
                        Reply::Text(text) => text.clone(),
                        Reply::Integer(n) => n.to_string(),
                        _ => "?".to_owned(),
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
                _ => String::new(),
            };
            Some((u64::try_from(*us).ok()?, words))
        })
        .max_by_key(|(us, _)| *us)
}

/// The `field:value` lines of an `INFO` reply, without section headers.
fn info_fields(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once(':'))
        .map(|(f, v)| (f, v.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPU: &str = "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:0.0\r\n\
                       used_cpu_user_children:0.0\r\nused_cpu_sys_main_thread:1.25\r\nused_cpu_user_main_thread:2.0\r\n";

    fn commands(evalsha: u64, info: u64) -> String {
        format!(
            "# Commandstats\r\ncmdstat_evalsha:calls={evalsha},usec=10,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n\
             cmdstat_info:calls={info},usec=5,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n\
             cmdstat_config|resetstat:calls=1,usec=1,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n\
             cmdstat_hset:calls={evalsha},usec={evalsha},usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n"
        )
    }

    #[test]
    fn parses_cpu_and_command_counts() {
        let snapshot = Snapshot::parse(CPU, &commands(7, 1)).unwrap();
        assert_eq!(snapshot.cpu_s, 3.75);
        assert_eq!(snapshot.main_thread_cpu_s, Some(3.25));
        assert_eq!(snapshot.calls["evalsha"], 7);
        assert_eq!(snapshot.calls["config|resetstat"], 1);
        let old_redis = Snapshot::parse("used_cpu_sys:1\nused_cpu_user:1\n", "").unwrap();
        assert_eq!((old_redis.cpu_s, old_redis.main_thread_cpu_s), (2.0, None));
        assert!(Snapshot::parse("# CPU\n", "").is_err());
        assert!(Snapshot::parse(CPU, "cmdstat_get:usec=1\n").is_err());
    }

    #[test]
    fn differences_leave_out_the_snapshots_own_info_calls() {
        let before = Snapshot::parse(CPU, &commands(7, 1)).unwrap();
        let cpu_after = CPU.replace("used_cpu_user:2.250000", "used_cpu_user:3.250000");
        let after = Snapshot::parse(&cpu_after, &commands(107, 4)).unwrap();
        let usage = after.since(&before);
        assert!((usage.cpu_s - 1.0).abs() < 1e-9);
        assert_eq!(usage.main_thread_cpu_s, Some(0.0));
        assert_eq!(
            usage.calls,
            BTreeMap::from([("evalsha".to_owned(), 100), ("hset".to_owned(), 100), ("info".to_owned(), 1)])
        );
        assert_eq!(usage.total_calls(), 201);
        // Only the HSETs' time: the script calls that ran them, INFO and CONFIG are left out.
        assert_eq!(usage.data_command_us, 100.0);
    }

    #[test]
    fn the_longest_slowlog_entry_is_found() {
        let entry = |id: i64, us: i64| {
            let args =
                ["EVALSHA", "0123456789abcdef0123456789abcdef01234567", "2", "asynq:{default}:scheduled", "b", "c"];
            let args = args.iter().map(|arg| Reply::Text((*arg).to_owned())).collect();
            Reply::Array(vec![Reply::Integer(id), Reply::Integer(1), Reply::Integer(us), Reply::Array(args)])
        };
        assert_eq!(
            longest_logged(&Reply::Array(vec![entry(1, 1_200), entry(2, 9_000), entry(3, 3_000)])),
            Some((9_000, "EVALSHA 01234567… 2 asynq:{default}:scheduled b".to_owned()))
        );
        assert_eq!(longest_logged(&Reply::Array(vec![])), None);
        let reset = Reply::Array(vec![
            Reply::Integer(4),
            Reply::Integer(1),
            Reply::Integer(4_400),
            Reply::Array(vec![Reply::Text("SLOWLOG".to_owned()), Reply::Text("RESET".to_owned())]),
        ]);
        assert_eq!(longest_logged(&Reply::Array(vec![reset.clone(), entry(5, 1_100)])).unwrap().0, 1_100);
        assert_eq!(longest_logged(&Reply::Array(vec![reset])), None, "the measurement's own reset");
    }

    #[test]
    fn usages_add_up_command_by_command() {
        let usage = |cpu_s, main_thread_cpu_s, calls: &[(&str, u64)], data_command_us| Usage {
            cpu_s,
            main_thread_cpu_s,
            calls: calls.iter().map(|(command, count)| ((*command).to_owned(), *count)).collect(),
            data_command_us,
            longest_command_us: None,
            longest_command: None,
        };
        let enqueue = usage(1.5, Some(1.0), &[("evalsha", 10), ("hset", 10)], 20.0);
        let drain = usage(2.0, Some(1.5), &[("evalsha", 10), ("hget", 10)], 30.0);
        assert_eq!(
            enqueue.clone() + drain,
            usage(3.5, Some(2.5), &[("evalsha", 20), ("hget", 10), ("hset", 10)], 50.0)
        );
        assert_eq!((enqueue + usage(1.0, None, &[], 0.0)).main_thread_cpu_s, None);
    }
}
