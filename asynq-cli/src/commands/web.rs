//! `asynq web`: serves the web dashboard (`asynq_web`) over the connection's inspector until
//! ctrl-c or SIGTERM. The token comes from `ASYNQ_WEB_TOKEN`, never from a flag (which `ps`
//! would show); a non-loopback `--listen` without one is refused unless `--insecure-no-auth`.
//! Started while Redis does not answer, it answers 503 until it connects.

use crate::cli::{GlobalArgs, WebArgs};
use crate::connect::{self, Start};
use crate::duration::refresh_flag;
use crate::error::{CliError, CliResult, Failure};
use crate::output::errln;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tower::ServiceExt;

/// The environment variable holding the dashboard's bearer token.
const TOKEN_VAR: &str = "ASYNQ_WEB_TOKEN";

/// The checked settings of `asynq web`.
#[derive(Debug)]
pub(crate) struct WebPlan {
    listen: SocketAddr,
    read_only: bool,
    refresh: Duration,
    auth: Option<asynq_web::Auth>,
    prometheus: Option<asynq_web::PrometheusAddr>,
}

/// Checks the flags and `ASYNQ_WEB_TOKEN`.
pub(crate) fn plan(args: &WebArgs) -> Result<WebPlan, CliError> {
    let token = match std::env::var(TOKEN_VAR) {
        Ok(token) => Some(token),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(_)) => {
            return Err(CliError::usage(format!("{TOKEN_VAR} is not valid UTF-8")));
        }
    };
    plan_with(args, token)
}

fn plan_with(args: &WebArgs, token: Option<String>) -> Result<WebPlan, CliError> {
    let refresh = refresh_flag(&args.refresh)?;
    let auth = match token {
        None => None,
        Some(token) => Some(asynq_web::Auth::bearer(token).map_err(|e| CliError::usage(format!("{TOKEN_VAR}: {e}")))?),
    };
    if auth.is_none() && !args.listen.ip().is_loopback() && !args.insecure_no_auth {
        return Err(CliError::usage(format!(
            "refusing to serve the dashboard on {} without authentication",
            args.listen
        ))
        .with_hint(format!(
            "set {TOKEN_VAR} to a long random token, listen on 127.0.0.1, or pass --insecure-no-auth"
        )));
    }
    let prometheus = match &args.prometheus_addr {
        None => None,
        Some(addr) => Some(
            asynq_web::PrometheusAddr::parse(addr).map_err(|e| CliError::usage(format!("--prometheus-addr: {e}")))?,
        ),
    };
    Ok(WebPlan { listen: args.listen, read_only: args.read_only, refresh, auth, prometheus })
}

/// Serves the dashboard until `shutdown` completes. When Redis does not answer at start it
/// listens all the same, answering 503 (`backend_unavailable`, saying Redis is unreachable)
/// to every request, connects in the background, and serves the dashboard once connected.
pub(crate) async fn run_connecting(
    global: &GlobalArgs,
    args: &WebArgs,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> CliResult {
    let reconnect = match connect::connect_or_retry(global).await? {
        Start::Connected(conn) => return run(conn.inspector, args, shutdown).await,
        Start::Unreachable(reconnect) => reconnect,
    };
    let plan = plan(args)?;
    let listener = bind(plan.listen).await?;
    let why = &reconnect.error().message;
    errln!("warning: {why}; answering 503 until Redis answers, retrying in the background");
    let live = Arc::new(OnceLock::new());
    let app = axum::Router::new().fallback({
        let live = live.clone();
        move |request: Request| serve_live(live.clone(), request)
    });
    errln!("serving the dashboard at http://{} ({}; ctrl-c to stop)", plan.listen, notes(&plan, args).join(", "));
    let metrics = args.metrics;
    tokio::spawn(async move {
        let inspector = reconnect.connect().await.inspector;
        let _ = live.set(asynq_web::router(web_config(inspector, plan, metrics)));
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|e| CliError::new(Failure::Failed, format!("the dashboard stopped: {e}")))
}

/// `request` answered by the dashboard once it is `live`, by a 503 before.
async fn serve_live(live: Arc<OnceLock<axum::Router>>, request: Request) -> Response {
    let Some(router) = live.get() else {
        let body = serde_json::json!({"error": {
            "code": "backend_unavailable",
            "message": "Redis is unreachable; the dashboard serves once it answers (retrying in the background)",
        }});
        return (StatusCode::SERVICE_UNAVAILABLE, [(header::RETRY_AFTER, "5")], axum::Json(body)).into_response();
    };
    match router.clone().oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// Binds the dashboard's address.
async fn bind(listen: SocketAddr) -> Result<tokio::net::TcpListener, CliError> {
    tokio::net::TcpListener::bind(listen).await.map_err(|e| {
        CliError::new(
            Failure::Failed,
            format!("cannot serve the dashboard on {listen}: {e} (is the address in use? try --listen)"),
        )
    })
}

/// The dashboard `plan` describes, over `inspector`, with the queue metrics when `metrics`.
fn web_config(inspector: asynq_client::Inspector, plan: WebPlan, metrics: bool) -> asynq_web::WebConfig {
    let mut config = asynq_web::WebConfig::new(inspector.clone()).read_only(plan.read_only).refresh(plan.refresh);
    if metrics {
        config = config.with_metrics(asynq_metrics::queue_exporter(inspector).router());
    }
    if let Some(auth) = plan.auth {
        config = config.with_auth(auth);
    }
    if let Some(prometheus) = plan.prometheus {
        config = config.with_prometheus(prometheus);
    }
    config
}

/// How the dashboard is served, for the line saying where.
fn notes(plan: &WebPlan, args: &WebArgs) -> Vec<&'static str> {
    let mut notes = vec![if plan.auth.is_some() { "token required" } else { "no authentication" }];
    if plan.read_only {
        notes.push("read-only");
    }
    if args.metrics {
        notes.push("metrics at /metrics");
    }
    notes
}

/// Serves the dashboard over `inspector` until `shutdown` completes.
pub(crate) async fn run(
    inspector: asynq_client::Inspector,
    args: &WebArgs,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> CliResult {
    let plan = plan(args)?;
    let listener = bind(plan.listen).await?;
    errln!("serving the dashboard at http://{} ({}; ctrl-c to stop)", plan.listen, notes(&plan, args).join(", "));
    asynq_web::serve(listener, web_config(inspector, plan, args.metrics), shutdown)
        .await
        .map_err(|e| CliError::new(Failure::Failed, format!("the dashboard stopped: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(listen: &str, insecure_no_auth: bool) -> WebArgs {
        WebArgs {
            listen: listen.parse().expect("a socket address"),
            read_only: false,
            refresh: "5s".into(),
            insecure_no_auth,
            metrics: false,
            prometheus_addr: None,
        }
    }

    #[test]
    fn a_prometheus_address_is_checked_before_serving() {
        let mut web = args("127.0.0.1:8080", false);
        web.prometheus_addr = Some("http://localhost:9090".into());
        let plan = plan_with(&web, None).expect("a plain HTTP address");
        assert_eq!(plan.prometheus.map(|p| p.to_string()).as_deref(), Some("http://localhost:9090"));
        web.prometheus_addr = Some("https://localhost:9090".into());
        let err = plan_with(&web, None).expect_err("TLS is not spoken to Prometheus");
        assert!(err.to_string().contains("--prometheus-addr"), "{err}");
    }

    /// The reply to `GET path` on `addr`, retried until the server listens.
    async fn get(addr: std::net::SocketAddr, path: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        for _ in 0..500 {
            let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await else {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
            stream.write_all(request.as_bytes()).await.expect("a request");
            let mut reply = String::new();
            stream.read_to_string(&mut reply).await.expect("a reply");
            return reply;
        }
        panic!("nothing listens on {addr}");
    }

    #[tokio::test]
    async fn the_metrics_flag_serves_the_queue_metrics_beside_the_dashboard() {
        let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let mut web = args(&addr.to_string(), false);
        web.metrics = true;
        let h = asynq_tests::Harness::new();
        h.client.enqueue(&asynq_client::Task::new("t", ""), asynq_client::TaskOptions::new()).await.unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let inspector = asynq_client::Inspector::new(h.broker.clone());
        let server = tokio::spawn(async move {
            run(inspector, &web, async {
                let _ = stopped.await;
            })
            .await
        });
        let scrape = get(addr, "/metrics").await;
        assert!(scrape.starts_with("HTTP/1.1 200"), "{scrape}");
        assert!(scrape.contains(r#"asynq_queue_size{queue="default"} 1"#), "{scrape}");
        assert!(get(addr, "/").await.starts_with("HTTP/1.1 200"), "the dashboard is still there");
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
    }

    #[test]
    fn a_public_address_needs_a_token_or_an_explicit_opt_out() {
        assert!(plan_with(&args("127.0.0.1:8080", false), None).is_ok());
        assert!(plan_with(&args("[::1]:8080", false), None).is_ok());
        let refused = plan_with(&args("0.0.0.0:8080", false), None).expect_err("refused");
        assert!(refused.to_string().contains("without authentication"));
        assert!(plan_with(&args("0.0.0.0:8080", true), None).is_ok());
        let plan = plan_with(&args("0.0.0.0:8080", false), Some("s3cret-token".into())).expect("a token suffices");
        assert!(plan.auth.is_some());
    }

    #[test]
    fn bad_tokens_and_refresh_intervals_are_usage_errors() {
        assert!(plan_with(&args("127.0.0.1:8080", false), Some(String::new())).is_err());
        let mut fast = args("127.0.0.1:8080", false);
        fast.refresh = "500ms".into();
        assert!(plan_with(&fast, None).is_err());
        fast.refresh = "soon".into();
        assert!(plan_with(&fast, None).is_err());
        fast.refresh = "600h".into();
        assert!(plan_with(&fast, None).is_err());
    }
}
