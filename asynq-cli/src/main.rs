//! `asynq`: the command-line tool of asynq, compatible with Go asynq's (`tools/asynq`). It
//! inspects and manages the queues, tasks, servers and schedulers kept in Redis, whether Go or
//! Rust wrote them, and shows a live dashboard (`asynq dash`). Exit codes and output formats are
//! described in `asynq --help`.

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
    let matches = cli::Cli::command().get_matches();
    let mut cli = match cli::Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
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
        Err(e) => {
            if !e.reported {
                eprintln!("{e}");
            }
            ExitCode::from(e.failure.exit_code())
        }
    }
}
