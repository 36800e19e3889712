//! Running child processes: printing them, and turning a failure into an error that keeps the
//! exit code.

use std::ffi::OsString;
use std::fmt;
use std::process::Command;

use anyhow::Context as _;

/// A child process ran but did not succeed.
#[derive(Debug)]
pub(crate) struct CommandFailed {
    /// The command line, for the message.
    pub(crate) command: String,
    /// Its exit code; `None` when it was killed by a signal.
    pub(crate) code: Option<i32>,
}

impl fmt::Display for CommandFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            Some(code) => write!(f, "`{}` failed with exit code {code}", self.command),
            None => write!(f, "`{}` was killed by a signal", self.command),
        }
    }
}

impl std::error::Error for CommandFailed {}

/// The cargo that runs us (`$CARGO`), so that children use the same toolchain; `cargo` otherwise.
pub(crate) fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// A `cargo` command with the given arguments, run from the workspace root.
pub(crate) fn cargo_command<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut command = Command::new(cargo());
    command.args(args).current_dir(crate::workspace_root());
    command
}

/// The command line as a user would type it (program name without its directory).
pub(crate) fn display(command: &Command) -> String {
    let program = command.get_program().to_string_lossy();
    let program = match program.rsplit_once('/') {
        Some((_, name)) => name.to_string(),
        None => program.into_owned(),
    };
    std::iter::once(program)
        .chain(command.get_args().map(|arg| arg.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Prints the command, runs it with inherited stdio, and fails unless it exits with 0.
pub(crate) fn run(command: &mut Command) -> anyhow::Result<()> {
    let shown = display(command);
    crate::step(format_args!("running `{shown}`"));
    let status = command.status().with_context(|| format!("could not start `{shown}`"))?;
    if status.success() { Ok(()) } else { Err(CommandFailed { command: shown, code: status.code() }.into()) }
}
