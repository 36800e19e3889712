//! The commands: one module per command group, each taking the parsed arguments and a
//! [`Context`] holding the connection and the output mode.

mod cron;
mod events;
mod group;
mod queue;
mod server;
mod slots;
mod stats;
mod task;
mod web;
mod workflow;

use crate::cli::{Cli, Command};
use crate::connect::{self, Connection};
use crate::duration::{MIN_REFRESH, refresh_flag};
use crate::error::{CliError, CliResult, Failure};
use crate::output::{errln, outln};

/// What every command needs.
#[derive(Debug)]
pub(crate) struct Context {
    /// The connection to Redis.
    pub(crate) conn: Connection,
    /// Print JSON instead of tables.
    pub(crate) json: bool,
    /// Connected to a Redis Cluster.
    pub(crate) cluster: bool,
}

/// Serves the queue metrics on `listen` until ctrl-c or SIGTERM.
async fn metrics(inspector: asynq_client::Inspector, listen: std::net::SocketAddr) -> CliResult {
    errln!("serving metrics at http://{listen}/metrics (ctrl-c to stop)");
    asynq_metrics::serve_queue_metrics(inspector, listen, shutdown_signal()).await.map_err(|e| {
        CliError::new(
            Failure::Failed,
            format!("cannot serve metrics on {listen}: {e} (is the address in use? try --listen)"),
        )
    })
}

/// Completes on ctrl-c or, on Unix, SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(term) => term,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

/// Runs the command `cli` names.
pub(crate) async fn run(cli: Cli) -> CliResult {
    let global = cli.global;
    // Check what needs no connection before connecting.
    let refresh = match &cli.command {
        Command::Version => {
            outln!("asynq version {}", env!("CARGO_PKG_VERSION"))?;
            return Ok(());
        }
        Command::Dash(args) => Some(refresh_flag(&args.refresh)?),
        _ => None,
    };
    if let Command::Web(args) = &cli.command {
        web::plan(args)?; // Refuse bad flags before connecting.
    }
    let conn = connect::connect(&global).await?;
    let cluster = global.cluster || global.uri.starts_with("redis-cluster://");
    let ctx = Context { conn, json: global.json, cluster };
    match cli.command {
        Command::Stats => stats::run(&ctx).await,
        Command::Queue(command) => queue::run(&ctx, command).await,
        Command::Task(command) => task::run(&ctx, command).await,
        Command::Group(command) => group::run(&ctx, command).await,
        Command::Workflow(command) => workflow::run(&ctx, command).await,
        Command::Server(command) => server::run(&ctx, command).await,
        Command::Cron(command) => cron::run(&ctx, command).await,
        Command::Events(args) => events::run(&ctx, args, shutdown_signal()).await,
        Command::Slots(args) => slots::run(&ctx, args).await,
        Command::Dash(_) => crate::dash::run(ctx.conn.inspector, refresh.unwrap_or(MIN_REFRESH)).await,
        Command::Metrics(args) => metrics(ctx.conn.inspector, args.listen).await,
        Command::Web(args) => web::run(ctx.conn.inspector, &args, shutdown_signal()).await,
        Command::Version => Ok(()),
    }
}
