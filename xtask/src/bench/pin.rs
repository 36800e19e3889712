//! `--pin`: Redis on CPU 0 and every benchmark process on CPU 1, through `taskset`, so that the
//! two never compete for a core and ratios between runs are stable.

use std::ffi::OsStr;
use std::process::{Command, Stdio};

use crate::step;

/// The CPU Redis runs on when pinned.
const REDIS_CPU: &str = "0";
/// The CPU the benchmark processes run on when pinned.
const BENCH_CPU: &str = "1";

/// How processes are placed on CPUs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pinning {
    enabled: bool,
}

impl Pinning {
    /// Pinning as asked for; without `taskset` on `PATH`, a warning and no pinning.
    pub(crate) fn new(requested: bool) -> Self {
        let enabled = requested && taskset_available();
        if requested && !enabled {
            step("warning: --pin needs `taskset` (util-linux), which is not installed; running unpinned");
        }
        Self { enabled }
    }

    /// Whether processes are pinned.
    pub(crate) fn is_enabled(self) -> bool {
        self.enabled
    }

    /// A command that runs `program` as Redis: on [`REDIS_CPU`] when pinned.
    pub(crate) fn redis(self, program: impl AsRef<OsStr>) -> Command {
        self.command(REDIS_CPU, program)
    }

    /// A command that runs `program` as a benchmark process: on [`BENCH_CPU`] when pinned.
    pub(crate) fn bench(self, program: impl AsRef<OsStr>) -> Command {
        self.command(BENCH_CPU, program)
    }

    /// `taskset` execs the program, so the child's process ID is the program's own.
    fn command(self, cpu: &str, program: impl AsRef<OsStr>) -> Command {
        if self.enabled {
            let mut command = Command::new("taskset");
            command.args(["-c", cpu]).arg(program);
            command
        } else {
            Command::new(program)
        }
    }
}

fn taskset_available() -> bool {
    Command::new("taskset")
        .arg("-V")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
