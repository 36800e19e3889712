//! `asynq`: the command-line tool of asynq, compatible with Go asynq's (`tools/asynq`). It
//! inspects and manages the queues, tasks, servers and schedulers kept in Redis, whether Go or
//! Rust wrote them, and shows a live dashboard (`asynq dash`). Exit codes and output formats are
//! described in `asynq --help`.

// Every line goes out through `output::outln!` and `output::errln!`, which do not panic when the
// reader has gone away (`asynq ... | head`).
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod cli;
mod commands;
mod config;
mod connect;
mod dash;
mod duration;
mod error;
mod output;
mod view;

use clap::{CommandFactory, FromArgMatches};
use std::process::ExitCode;

fn main() -> ExitCode {
    let matches = match cli::Cli::command().try_get_matches() {
        Ok(matches) => matches,
        Err(e) => return clap_exit(&e),
    };
    let mut cli = match cli::Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    let outcome = config::ConfigFile::load(cli.global.config.as_deref()).map(|config| {
        config.apply(&mut cli.global, &matches);
    });
    let outcome = outcome.and_then(|()| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| error::CliError::new(error::Failure::Failed, format!("cannot start the runtime: {e}")))?;
        runtime.block_on(commands::run(cli))
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(e),
    }
}

/// Prints what clap has to say (help and version on stdout, usage errors on stderr) and gives
/// its exit code (0 or 2). A failed write to stdout ends as any command's does (exit 141 when
/// the reader is gone), where clap's own `exit` would swallow it and say 0.
fn clap_exit(error: &clap::Error) -> ExitCode {
    match error.print() {
        Err(e) if !error.use_stderr() => report(error::CliError::stdout(e)),
        // A failure to write to stderr cannot be reported; the usage error keeps its code.
        _ => ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2)),
    }
}

/// Prints `error` on stderr, unless already done, and gives its exit code.
fn report(error: error::CliError) -> ExitCode {
    if !error.reported {
        output::errln!("{error}");
    }
    ExitCode::from(error.failure.exit_code())
}
