//! The command line: every command, subcommand and flag, as clap types, following Go asynq's
//! `asynq` tool (`tools/asynq`): the same names, aliases, short flags and defaults.

mod events;
mod queue;
mod servers;
mod task;
mod views;
mod workflow;

use clap::builder::BoolishValueParser;
use clap::{Args, Parser, Subcommand};

pub(crate) use events::{EventsAction, EventsArgs};
pub(crate) use queue::{GroupCommand, QueueCommand};
pub(crate) use servers::{CronCommand, CronHistoryArgs, ServerCommand, ServerRequestArgs, SlotKeys};
pub(crate) use task::{ArchiveAllArgs, BulkArgs, TaskCommand, TaskEnqueueArgs, TaskListArgs, TaskRef};
pub(crate) use views::{DashArgs, MetricsArgs, WebArgs};
pub(crate) use workflow::WorkflowCommand;

/// The most days `queue history -x` shows: as long as Redis keeps daily statistics
/// (asynq-core's `DAILY_STATS_TTL`, 90 days, as Go).
pub(crate) const MAX_HISTORY_DAYS: u32 = (asynq_core::DAILY_STATS_TTL.as_secs() / 86_400) as u32;
/// The largest `--size` of a page of tasks or cron events.
pub(crate) const MAX_PAGE_SIZE: u32 = 10_000;
/// The largest `--page` number. With [`MAX_PAGE_SIZE`], a page starts at most 10^10 entries in:
/// exact in the scripts' Lua numbers (doubles, written with 14 significant digits) and far
/// inside Redis's `LRANGE` and `ZRANGE` integers.
pub(crate) const MAX_PAGE: u32 = 1_000_000;
/// The largest `--db`: Redis numbers its databases with C `int`s (`databases` in redis.conf, 16
/// by default, caps the index further; Redis refuses a higher one, see `connect.rs`).
pub(crate) const MAX_DB: u32 = i32::MAX as u32;
/// The largest `task enqueue --retry`: Go's `MaxRetry` is an `int32` in the task message.
pub(crate) const MAX_RETRY: u32 = i32::MAX as u32;

/// Parses a whole number from `MIN` to `MAX`. Whatever the text, a refusal names the range
/// (clap's own ranged parsers say only "number too large" past `i64`).
fn in_range<const MIN: u32, const MAX: u32>(text: &str) -> Result<u32, String> {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    match text.parse::<u32>() {
        Ok(n) if (MIN..=MAX).contains(&n) => Ok(n),
        _ if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            Err(format!("{text} is not in {MIN}..={MAX}"))
        }
        _ => Err(format!("not a whole number in {MIN}..={MAX}")),
    }
}

/// The help heading of the flags that say how to reach Redis.
pub(crate) const CONNECTION_HEADING: &str = "Connection";
/// The help heading of the other flags every command takes.
pub(crate) const GLOBAL_HEADING: &str = "Global";

/// What `--help` says after the flags: exit codes, JSON conventions, configuration.
const AFTER_LONG_HELP: &str = "\
Connection settings come from, in order of precedence: a flag, its environment variable
(ASYNQ_URI, ASYNQ_DB, ASYNQ_PASSWORD, ...), the config file (YAML, keys named like Go's
flags: uri, db, password, username, cluster, cluster_addrs, tls, tls_server, insecure,
tls_ca_cert, tls_cert, tls_key, sentinel_addrs, master), then the default. Flags are
kebab-case (--cluster-addrs); Go's snake_case spellings (--cluster_addrs) work too.

--uri takes host:port, or a full URL: redis://[user:password@]host:port[/db],
rediss://... (TLS), redis-cluster://host:port[,host:port...] (rediss-cluster:// for TLS) or
redis-sentinel://host:port[,host:port...][/db]?master=<name>. A full URL carries its own
credentials, database and TLS setting; --db, --password, --username and --tls apply to the
host:port form.

With --json every command prints JSON on stdout: times as RFC 3339 strings (UTC), durations as
numbers of seconds (fields ending in _seconds), and payloads and results as a string plus an
encoding field: \"utf-8\" when the bytes are valid UTF-8, otherwise \"base64\" (standard
alphabet, padded). Errors always go to stderr as text.

Exit codes:
  0  success
  1  the operation failed (a Redis error, or an unexpected reply)
  2  usage error: bad flags or arguments (numbers outside their range), bad config file, bad
     URI, a database index (--db) Redis refuses
  3  not found: no such queue or task (only `queue pause` accepts a queue that does not exist
     yet, as Go's tool does, warning on stderr)
  4  failed precondition: the task is in the wrong state, the queue is not empty, the task
     already exists
  5  cannot connect to Redis
141  stdout was closed before everything was written (e.g. `asynq task ls ... | head`): the
     command stops quietly, as the shell reports a process killed by SIGPIPE";

/// The asynq command-line tool.
#[derive(Debug, Parser)]
#[command(
    name = "asynq",
    version,
    about = "Inspect and manage the tasks and queues of asynq (Go asynq v0.26 compatible) in Redis",
    after_long_help = AFTER_LONG_HELP
)]
pub(crate) struct Cli {
    /// Connection and output settings, accepted before or after the subcommand.
    #[command(flatten)]
    pub(crate) global: GlobalArgs,
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The flags every command takes (Go's persistent flags), listed apart from each command's own:
/// how to reach Redis under "Connection", the rest under "Global".
#[derive(Debug, Args)]
#[command(next_help_heading = CONNECTION_HEADING)]
pub(crate) struct GlobalArgs {
    /// Redis server URI: host:port or a redis://, rediss://, redis-cluster://, redis-sentinel:// URL
    #[arg(short = 'u', long, global = true, env = "ASYNQ_URI", default_value = "127.0.0.1:6379")]
    pub(crate) uri: String,
    /// Redis database number (from 0; Redis has 16 unless configured otherwise)
    #[arg(short = 'n', long, global = true, env = "ASYNQ_DB", default_value_t = 0)]
    #[arg(value_parser = in_range::<0, MAX_DB>)]
    pub(crate) db: u32,
    /// Password to use when connecting to Redis
    #[arg(short = 'p', long, global = true, env = "ASYNQ_PASSWORD", hide_env_values = true)]
    pub(crate) password: Option<String>,
    /// Username to use when connecting to Redis (ACL)
    #[arg(short = 'U', long, global = true, env = "ASYNQ_USERNAME")]
    pub(crate) username: Option<String>,
    /// Connect to a Redis Cluster (at --cluster-addrs)
    #[arg(long, global = true, env = "ASYNQ_CLUSTER", value_parser = BoolishValueParser::new())]
    pub(crate) cluster: bool,
    /// Comma-separated addresses of Redis Cluster nodes
    #[arg(
        long = "cluster-addrs",
        alias = "cluster_addrs",
        global = true,
        env = "ASYNQ_CLUSTER_ADDRS",
        default_value = "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003,127.0.0.1:7004,127.0.0.1:7005"
    )]
    pub(crate) cluster_addrs: String,
    /// Connect with TLS
    #[arg(long, global = true, env = "ASYNQ_TLS", value_parser = BoolishValueParser::new())]
    pub(crate) tls: bool,
    /// Server name for TLS validation (implies --tls); must be the host of --uri (not with --cluster or --sentinel-addrs)
    #[arg(long = "tls-server", alias = "tls_server", global = true, env = "ASYNQ_TLS_SERVER")]
    pub(crate) tls_server: Option<String>,
    /// Allow insecure TLS connection by skipping certificate validation
    #[arg(long, global = true, env = "ASYNQ_INSECURE", value_parser = BoolishValueParser::new())]
    pub(crate) insecure: bool,
    /// PEM file of the certificate authorities to verify the server against, instead of the
    /// system's (implies --tls)
    #[arg(long = "tls-ca-cert", alias = "tls_ca_cert", global = true, env = "ASYNQ_TLS_CA_CERT", value_name = "FILE")]
    pub(crate) tls_ca_cert: Option<std::path::PathBuf>,
    /// PEM file of the client certificate to present (mutual TLS; with --tls-key; implies --tls)
    #[arg(
        long = "tls-cert",
        alias = "tls_cert",
        global = true,
        env = "ASYNQ_TLS_CERT",
        value_name = "FILE",
        requires = "tls_key"
    )]
    pub(crate) tls_cert: Option<std::path::PathBuf>,
    /// PEM file of the client certificate's private key (with --tls-cert)
    #[arg(
        long = "tls-key",
        alias = "tls_key",
        global = true,
        env = "ASYNQ_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    pub(crate) tls_key: Option<std::path::PathBuf>,
    /// Comma-separated addresses of Redis Sentinels (with --master): connect to the master they name
    #[arg(
        long = "sentinel-addrs",
        alias = "sentinel_addrs",
        global = true,
        env = "ASYNQ_SENTINEL_ADDRS",
        requires = "master"
    )]
    pub(crate) sentinel_addrs: Option<String>,
    /// Name of the master the Sentinels monitor (with --sentinel-addrs)
    #[arg(long, global = true, env = "ASYNQ_MASTER")]
    pub(crate) master: Option<String>,
    /// Key prefix of the queues to work on: several services can share one Redis, each in its own
    /// namespace [default: asynq, Go asynq's keys]
    #[arg(long, global = true, env = "ASYNQ_NAMESPACE")]
    pub(crate) namespace: Option<asynq_redis::Namespace>,
    /// Size limit of each queue's archive: archiving trims it to the newest N - 1 tasks; use the
    /// limit the servers of these queues use [default: 10000, Go asynq's]
    #[arg(long = "archive-max-size", global = true, env = "ASYNQ_ARCHIVE_MAX_SIZE", value_name = "N")]
    pub(crate) archive_max_size: Option<usize>,
    /// Age limit of each queue's archive: archiving deletes tasks archived this long ago or
    /// earlier, as a Go duration (e.g. 720h) [default: 2160h, Go asynq's 90 days]
    #[arg(long = "archive-max-age", global = true, env = "ASYNQ_ARCHIVE_MAX_AGE", value_name = "DURATION")]
    pub(crate) archive_max_age: Option<String>,
    /// Config file to set flag default values [default: $HOME/.asynq.yaml]
    #[arg(long, global = true, env = "ASYNQ_CONFIG", value_name = "FILE", help_heading = GLOBAL_HEADING)]
    pub(crate) config: Option<std::path::PathBuf>,
    /// Print machine-readable JSON instead of tables
    #[arg(long, global = true, help_heading = GLOBAL_HEADING)]
    pub(crate) json: bool,
}

/// The commands, as Go's tool names them. Commands served by other modules (`metrics`, `web`)
/// slot in as further variants.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// View the current state: tasks per state and queue, today's counts, Redis info
    #[command(after_help = "Example:\n  asynq stats
  asynq stats --json -u redis://:secret@10.0.0.5:6379/0")]
    Stats,
    /// Manage queues
    #[command(subcommand)]
    Queue(QueueCommand),
    /// Manage tasks
    #[command(subcommand)]
    Task(TaskCommand),
    /// Manage groups
    #[command(subcommand)]
    Group(GroupCommand),
    /// Manage servers
    #[command(subcommand)]
    Server(ServerCommand),
    /// Inspect workflows (chains, groups, chords and DAGs of tasks)
    #[command(subcommand)]
    Workflow(WorkflowCommand),
    /// Manage cron (periodic task) entries
    #[command(subcommand)]
    Cron(CronCommand),
    /// List the tasks holding slots of shared concurrency limits (`type:<type name>` for a
    /// per-type limit)
    #[command(after_help = "Example:\n  asynq slots type:video:encode tenant:42")]
    Slots(SlotKeys),
    /// Print a queue's task events (enqueued, started, progress, succeeded, retried, requeued,
    /// archived, deleted, step, parked, signalled), or turn its event log on and off
    #[command(after_help = "Examples:
  asynq events enable -q emails --cap 100000
  asynq events -q emails --follow
  asynq events -q emails --from 1764105601123-0 --limit 500
  asynq events ls
  asynq events disable -q emails")]
    Events(EventsArgs),
    /// View a live dashboard of queues and tasks in the terminal
    #[command(after_help = "Example:\n  asynq dash --refresh 2s")]
    Dash(DashArgs),
    /// Serve Prometheus metrics of the queues (Go's names) and live servers over HTTP until interrupted
    #[command(after_help = "Example:\n  asynq metrics --listen 0.0.0.0:9464")]
    Metrics(MetricsArgs),
    /// Serve the web dashboard until interrupted (token from ASYNQ_WEB_TOKEN)
    #[command(after_help = "Example:\n  ASYNQ_WEB_TOKEN=s3cret asynq web --listen 0.0.0.0:8080 --read-only")]
    Web(WebArgs),
    /// Print the version
    #[command(hide = true)]
    Version,
}

#[cfg(test)]
mod tests {
    use super::queue::{QueueHistoryArgs, QueueNames};
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_tree_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// The commands that do something (no subcommands of their own), with their full names.
    fn leaves(command: &clap::Command, path: &str) -> Vec<(String, clap::Command)> {
        let path = format!("{path} {}", command.get_name()).trim().to_owned();
        let subcommands: Vec<_> = command.get_subcommands().filter(|c| c.get_name() != "help").collect();
        if subcommands.is_empty() {
            return vec![(path, command.clone())];
        }
        subcommands.into_iter().flat_map(|c| leaves(c, &path)).collect()
    }

    /// The words of a help example, as a shell would split them (single quotes only), without
    /// leading `NAME=value` environment settings.
    fn words(example: &str) -> Vec<String> {
        let mut words = vec![String::new()];
        let mut quoted = false;
        for c in example.chars() {
            match c {
                '\'' => quoted = !quoted,
                ' ' if !quoted => words.push(String::new()),
                c => words.last_mut().expect("one word at least").push(c),
            }
        }
        words.into_iter().skip_while(|w| w.contains('=') && !w.starts_with('-')).collect()
    }

    #[test]
    fn every_command_shows_an_example_that_parses() {
        let mut hidden = 0;
        for (name, command) in leaves(&Cli::command(), "") {
            if command.is_hide_set() {
                hidden += 1;
                continue;
            }
            let help = command.get_after_help().map(ToString::to_string).unwrap_or_default();
            let examples: Vec<&str> = help.lines().filter_map(|l| l.strip_prefix("  ")).collect();
            assert!(help.starts_with("Example:") && !examples.is_empty(), "{name} has no example");
            for example in examples {
                let matches = Cli::command()
                    .try_get_matches_from(words(example))
                    .unwrap_or_else(|e| panic!("{example:?} does not parse: {e}"));
                let (mut path, mut level) = (vec!["asynq".to_owned()], &matches);
                while let Some((subcommand, inner)) = level.subcommand() {
                    path.push(subcommand.to_owned());
                    level = inner;
                }
                assert_eq!(path.join(" "), name, "the example {example:?} runs another command");
            }
        }
        assert_eq!(hidden, 1, "only `version` is hidden");
    }

    #[test]
    fn flags_are_kebab_case_and_gos_snake_case_still_parses() {
        let mut commands = vec![Cli::command()];
        while let Some(command) = commands.pop() {
            for arg in command.get_arguments() {
                if let Some(long) = arg.get_long() {
                    assert!(!long.contains('_'), "--{long} of {} is not kebab-case", command.get_name());
                }
            }
            commands.extend(command.get_subcommands().cloned());
        }
        let go = ["asynq", "--cluster", "--cluster_addrs", "a:1", "--tls_server", "h", "task", "enqueue"];
        let cli = Cli::parse_from(go.into_iter().chain(["-t", "x", "-l", "", "--process_in", "1m"]));
        assert_eq!((cli.global.cluster_addrs.as_str(), cli.global.tls_server.as_deref()), ("a:1", Some("h")));
        let Command::Task(TaskCommand::Enqueue(args)) = cli.command else { panic!("parsed as {:?}", cli.command) };
        assert_eq!(args.process_in.as_deref(), Some("1m"));
    }

    #[test]
    fn connection_flags_are_listed_apart_from_a_commands_own() {
        let mut cli = Cli::command();
        cli.build(); // global flags reach the subcommands when the tree is built
        let help = cli
            .find_subcommand_mut("task")
            .and_then(|t| t.find_subcommand_mut("ls"))
            .expect("task ls")
            .render_help()
            .to_string();
        let (own, rest) = help.split_once(&format!("{CONNECTION_HEADING}:")).expect("a Connection section");
        assert!(own.contains("--queue") && own.contains("--page") && !own.contains("--uri"), "{help}");
        let (connection, global) = rest.split_once(&format!("{GLOBAL_HEADING}:")).expect("a Global section");
        assert!(
            connection.contains("--uri") && connection.contains("--cluster-addrs") && !connection.contains("--json"),
            "{help}"
        );
        assert!(global.contains("--json") && global.contains("--config"), "{help}");
    }

    #[test]
    fn go_aliases_and_short_flags_parse() {
        let cli = Cli::parse_from(["asynq", "task", "rm", "-q", "default", "-i", "abc", "-u", "h:1"]);
        assert!(
            matches!(cli.command, Command::Task(TaskCommand::Delete(TaskRef { ref queue, ref id })) if queue == "default" && id == "abc")
        );
        assert_eq!(cli.global.uri, "h:1");
        let cli = Cli::parse_from(["asynq", "queue", "unpause", "a", "b"]);
        assert!(
            matches!(cli.command, Command::Queue(QueueCommand::Resume(QueueNames { ref queues })) if queues.len() == 2)
        );
        let cli = Cli::parse_from(["asynq", "queue", "history", "q", "-x", "3"]);
        assert!(matches!(cli.command, Command::Queue(QueueCommand::History(QueueHistoryArgs { days: 3, .. }))));
        assert!(Cli::try_parse_from(["asynq", "task", "ls", "-q", "q", "-s", "pending", "--page", "0"]).is_err());
    }

    #[test]
    fn numbers_are_bounded_and_the_error_names_the_bound() {
        assert_eq!(MAX_HISTORY_DAYS, 90);
        let refused = |argv: &[&str]| {
            let error = Cli::try_parse_from(argv).expect_err("out of range");
            assert_eq!(error.exit_code(), 2, "{error}");
            error.to_string()
        };
        let ls = |flag: &str, value: &str| refused(&["asynq", "task", "ls", "-q", "q", "-s", "pending", flag, value]);
        assert!(ls("--size", "10001").contains("1..=10000"));
        assert!(ls("--page", "1000001").contains("1..=1000000"));
        assert!(ls("--page", "4294967296").contains("1..=1000000"));
        assert!(refused(&["asynq", "queue", "history", "q", "-x", "91"]).contains("1..=90"));
        assert!(refused(&["asynq", "queue", "history", "q", "-x", "4294967295"]).contains("1..=90"));
        assert!(refused(&["asynq", "--db", "2147483648", "stats"]).contains("0..=2147483647"));
        assert!(refused(&["asynq", "--db=-1", "stats"]).contains("-1 is not in 0..=2147483647"));
        assert!(ls("--page", "18446744073709551616").contains("1..=1000000"));
        assert!(ls("--size", "1.5").contains("not a whole number in 1..=10000"));
        assert!(ls("--size", "").contains("not a whole number in 1..=10000"));
        let at_the_bounds = [
            &["asynq", "task", "ls", "-q", "q", "-s", "pending", "--page", "1000000", "--size", "10000"][..],
            &["asynq", "queue", "history", "q", "-x", "90"],
            &["asynq", "cron", "history", "e", "--page", "1000000", "--size", "10000"],
            &["asynq", "--db", "2147483647", "stats"],
            &["asynq", "task", "enqueue", "-t", "t", "-l", "p", "--retry", "2147483647"],
        ];
        for argv in at_the_bounds {
            assert!(Cli::try_parse_from(argv).is_ok(), "{argv:?}");
        }
    }
}
