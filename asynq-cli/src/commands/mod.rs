//! The commands: one module per command group, each taking the parsed arguments and a
//! [`Context`] holding the connection and the output mode.

mod archive;
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

use crate::cli::{Cli, Command, GlobalArgs};
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

/// Serves the queue metrics on `listen` until ctrl-c or SIGTERM. When Redis does not answer at
/// start it serves `asynq_up 0` meanwhile, and keeps trying to connect in the background, so
/// that an exporter started before its Redis (a container) does not exit.
async fn metrics(global: &GlobalArgs, listen: std::net::SocketAddr) -> CliResult {
    let queue_metrics = asynq_metrics::QueueMetrics::awaiting_broker();
    let reconnect = match connect::connect_or_retry(global).await? {
        connect::Start::Connected(conn) => {
            queue_metrics.connect(conn.inspector);
            None
        }
        connect::Start::Unreachable(reconnect) => Some(reconnect),
    };
    let failed = |e: std::io::Error| {
        CliError::new(
            Failure::Failed,
            format!("cannot serve metrics on {listen}: {e} (is the address in use? try --listen)"),
        )
    };
    let listener = tokio::net::TcpListener::bind(listen).await.map_err(failed)?;
    if let Some(reconnect) = reconnect {
        let why = &reconnect.error().message;
        errln!("warning: {why}; serving asynq_up 0 until Redis answers, retrying in the background");
        let queue_metrics = queue_metrics.clone();
        tokio::spawn(async move {
            queue_metrics.connect(reconnect.connect().await.inspector);
        });
    }
    let listen = listener.local_addr().unwrap_or(listen);
    errln!("serving metrics at http://{listen}/metrics (ctrl-c to stop)");
    asynq_metrics::serve(listener, queue_metrics.exporter(), shutdown_signal()).await.map_err(failed)
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
    // These serve while Redis is down, and connect when it answers.
    match &cli.command {
        Command::Metrics(args) => return metrics(&global, args.listen).await,
        Command::Web(args) => return web::run_connecting(&global, args, shutdown_signal()).await,
        _ => {}
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
        Command::Metrics(_) | Command::Web(_) => Ok(()), // Served above, connected or not.
        Command::Version => Ok(()),
    }
}
