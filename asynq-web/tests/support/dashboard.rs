//! The dashboard the browser tests drive: a redis-server seeded with tasks of ours and Go's,
//! served on loopback; and what the browser tests share.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use asynq_client::{Client, Inspector, Task, TaskOptions, TaskState};
use asynq_core::broker::{Dequeue, Outcome, ServerState};
use asynq_core::{Clock, Progress, QueueName, ServerInfo, ServerStatus, StoredTask, SystemClock, WorkerInfo};
use asynq_redis::RedisBroker;
use asynq_tests::browser::{Browser, screenshot_dir};
use asynq_tests::{RedisServer, load_fixture, read_fixture, redis_broker};
use asynq_web::{Auth, WebConfig};
use serde_json::json;

/// A redis-server with tasks in every state, and the dashboard serving it on loopback.
pub(crate) struct Dashboard {
    /// `http://127.0.0.1:<port>/`.
    pub(crate) url: String,
    pub(crate) inspector: Inspector,
    /// Pending `email:welcome` tasks of queue `emails`, by recipient.
    pub(crate) welcome: BTreeMap<&'static str, String>,
    pub(crate) server: tokio::task::JoinHandle<std::io::Result<()>>,
    // Dropped last: the dashboard's connections go first.
    pub(crate) redis: RedisServer,
}

impl Dashboard {
    /// Seeds a fresh redis-server and serves the dashboard over it, with `auth` if given,
    /// refreshing pages every second.
    pub(crate) async fn start(auth: Option<Auth>) -> Self {
        Self::start_with(auth, Duration::from_secs(1)).await
    }

    /// As [`Dashboard::start`], refreshing pages every `refresh`.
    pub(crate) async fn start_with(auth: Option<Auth>, refresh: Duration) -> Self {
        Self::start_configured(auth, |config| config.refresh(refresh)).await
    }

    /// As [`Dashboard::start`], with the settings `configure` makes.
    pub(crate) async fn start_configured(auth: Option<Auth>, configure: impl FnOnce(WebConfig) -> WebConfig) -> Self {
        let redis = tokio::task::spawn_blocking(|| {
            let redis = RedisServer::start();
            // Go's queues: `interop` (pending, scheduled, aggregating, a unique lock) and
            // `interop-processed` (completed, retry, archived, with today's counters).
            load_fixture(&redis, &read_fixture("v0.26.0-enqueued.json"));
            load_fixture(&redis, &read_fixture("v0.26.0-processed.json"));
            redis
        })
        .await
        .expect("redis-server starts and the fixtures load");
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let broker = redis_broker(&redis.url(), clock.clone()).await;
        let welcome = seed(&broker, clock.as_ref()).await;
        let inspector = Inspector::new(broker);

        let mut config = configure(WebConfig::new(inspector.clone()).refresh(Duration::from_secs(1)));
        if let Some(auth) = auth {
            config = config.with_auth(auth);
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
        let url = format!("http://{}/", listener.local_addr().expect("bound address"));
        let server = tokio::spawn(asynq_web::serve(listener, config, std::future::pending()));
        Self { url, inspector, welcome, server, redis }
    }

    /// The URL of hash route `route` (such as `#/servers`).
    pub(crate) fn page(&self, route: &str) -> String {
        format!("{}{route}", self.url)
    }

    /// The ID of the pending welcome email to `who`.
    pub(crate) fn welcome(&self, who: &str) -> &str {
        &self.welcome[who]
    }

    pub(crate) async fn state_of(&self, queue: &str, id: &str) -> TaskState {
        self.inspector.task_info(queue, id).await.expect("task info").state
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Our side of the data: queue `emails` with JSON payloads (pending and scheduled), queue
/// `billing` with a task running on a (recorded) server, one waiting for a retry and one
/// archived by the broker's own failure path; the server serves a queue pattern besides its
/// queues. Returns the pending welcome emails' IDs.
pub(crate) async fn seed(broker: &RedisBroker, clock: &dyn Clock) -> BTreeMap<&'static str, String> {
    let client = Client::new(broker.clone());
    let mut welcome = BTreeMap::new();
    for who in ["ada", "grace", "linus", "margaret"] {
        let payload = json!({ "to": format!("{who}@example.com"), "template": "welcome", "locale": "en" });
        let task = Task::new("email:welcome", payload.to_string());
        let info = client.enqueue(&task, TaskOptions::new().queue("emails")).await.expect("enqueue");
        welcome.insert(who, info.id.into_string());
    }
    let reminder = Task::new("email:reminder", json!({ "to": "ada@example.com", "days": 3 }).to_string());
    client
        .enqueue(&reminder, TaskOptions::new().queue("emails").process_in(Duration::from_secs(3600)))
        .await
        .expect("schedule");

    for (n, customer) in ["acme", "globex", "initech"].into_iter().enumerate() {
        let charge = json!({ "customer": customer, "invoice": 1000 + n, "cents": 4200 * (n + 1) });
        client
            .enqueue(&Task::new("invoice:charge", charge.to_string()), TaskOptions::new().queue("billing").max_retry(5))
            .await
            .expect("enqueue");
    }
    let taken = broker.dequeue(&[QueueName::from_static("billing")], 3).await.expect("dequeue");
    assert_eq!(taken.len(), 3, "the three billing tasks are taken");
    let now = clock.now();
    let retry = Outcome::Retry {
        retry_at: now + Duration::from_secs(3600),
        error: "card declined: insufficient funds".to_owned(),
        is_failure: true,
    };
    broker.finish(&taken[1].message, retry).await.expect("retry");
    broker
        .finish(&taken[2].message, Outcome::Archive { error: "customer account closed".to_owned() })
        .await
        .expect("archive");

    // The first stays active; a server says it is running it.
    let running = &taken[0].message;
    let queues = [("billing", 6), ("emails", 3), ("default", 1), ("tenant:*", 2)];
    record_running_server(broker, "worker-1.internal", 4242, 10, &queues, running, now).await;
    let report = Progress::new(0.42, "charging card", now).expect("a valid report");
    broker.write_progress(&running.queue, &running.id, &report).await.expect("progress");
    welcome
}

/// Where a page's screenshot goes.
pub(crate) fn screenshot_path(name: &str) -> PathBuf {
    screenshot_dir().join(format!("web-{name}.png"))
}

/// Lets `window.confirm` answer yes, as an operator confirming a bulk action would.
pub(crate) async fn accept_confirmations(browser: &Browser) {
    browser.eval("window.confirm = () => true; return true;", vec![]).await;
}

/// Records a live server as the dashboard tests show one, for an hour: `host` and `pid`,
/// `concurrency` workers serving `queues` (with their weights), started 90 minutes before
/// `now`, running `task` since 2 s before `now` with 30 minutes in all.
pub(crate) async fn record_running_server(
    broker: &RedisBroker,
    host: &str,
    pid: u32,
    concurrency: u32,
    queues: &[(&str, u32)],
    task: &StoredTask,
    now: SystemTime,
) {
    let server = ServerInfo {
        host: host.to_owned(),
        pid,
        server_id: "5a0e6b1c-9d4f-4b7e-8a51-2c3d4e5f6a7b".to_owned(),
        concurrency,
        queues: queues.iter().map(|(queue, weight)| ((*queue).to_owned(), *weight)).collect(),
        strict_priority: false,
        status: ServerStatus::Active,
        started: now - Duration::from_secs(5400),
        active_workers: 1,
    };
    let worker = WorkerInfo {
        host: server.host.clone(),
        pid: server.pid,
        server_id: server.server_id.clone(),
        task_id: task.id.to_string(),
        task_type: task.type_name.clone(),
        task_payload: task.payload.clone(),
        queue: task.queue.to_string(),
        started: now - Duration::from_secs(2),
        deadline: now + Duration::from_secs(1798),
    };
    broker.write_server_state(&server, &[worker], Duration::from_secs(3600)).await.expect("server state");
}
