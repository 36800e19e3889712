//! The dashboard in a real headless Chromium, over a real redis-server holding tasks written by
//! our client, by the broker's own moves and by Go asynq (the captured fixtures).
//!
//! Each test starts its own redis-server, dashboard (on 127.0.0.1:0) and chromedriver, so they
//! run in parallel; the walk-through reuses one browser session for every step. The pages are
//! saved as screenshots under `target/screenshots/`; with `ASYNQ_UPDATE_DOCS_SCREENSHOT=1` the
//! overview's is also written to `docs/web-overview.png`, which the README shows (opt-in, so a
//! test run never dirties the work tree).
//!
//! Needs Chromium and chromedriver: `cargo xtask test` installs them (see `asynq_tests::browser`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use asynq_client::{Client, FlowProducer, Inspector, Task, TaskOptions, TaskState};
use asynq_core::broker::{Dequeue, Outcome, ServerState};
use asynq_core::workflow::Flow;
use asynq_core::{Clock, Progress, QueueName, ServerInfo, ServerStatus, SystemClock, TaskId, WorkerInfo};
use asynq_redis::RedisBroker;
use asynq_tests::browser::{Browser, screenshot_dir};
use asynq_tests::{RedisServer, load_fixture, read_fixture, redis_broker};
use asynq_web::{Auth, WebConfig};
use serde_json::{Value, json};

/// The token of the dashboard under authentication.
const TOKEN: &str = "browser-test-token-0123456789abcdef";

/// The queue counters the overview shows as numbers, by `data-field`.
const COUNTERS: &[&str] =
    &["size", "pending", "active", "scheduled", "retry", "archived", "completed", "aggregating", "processed", "failed"];

/// A redis-server with tasks in every state, and the dashboard serving it on loopback.
struct Dashboard {
    /// `http://127.0.0.1:<port>/`.
    url: String,
    inspector: Inspector,
    /// Pending `email:welcome` tasks of queue `emails`, by recipient.
    welcome: BTreeMap<&'static str, String>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    // Dropped last: the dashboard's connections go first.
    redis: RedisServer,
}

impl Dashboard {
    /// Seeds a fresh redis-server and serves the dashboard over it, with `auth` if given,
    /// refreshing pages every second.
    async fn start(auth: Option<Auth>) -> Self {
        Self::start_with(auth, Duration::from_secs(1)).await
    }

    /// As [`Dashboard::start`], refreshing pages every `refresh`.
    async fn start_with(auth: Option<Auth>, refresh: Duration) -> Self {
        Self::start_configured(auth, |config| config.refresh(refresh)).await
    }

    /// As [`Dashboard::start`], with the settings `configure` makes.
    async fn start_configured(auth: Option<Auth>, configure: impl FnOnce(WebConfig) -> WebConfig) -> Self {
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
    fn page(&self, route: &str) -> String {
        format!("{}{route}", self.url)
    }

    /// The ID of the pending welcome email to `who`.
    fn welcome(&self, who: &str) -> &str {
        &self.welcome[who]
    }

    async fn state_of(&self, queue: &str, id: &str) -> TaskState {
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
async fn seed(broker: &RedisBroker, clock: &dyn Clock) -> BTreeMap<&'static str, String> {
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
    let server = ServerInfo {
        host: "worker-1.internal".to_owned(),
        pid: 4242,
        server_id: "5a0e6b1c-9d4f-4b7e-8a51-2c3d4e5f6a7b".to_owned(),
        concurrency: 10,
        queues: [
            ("billing".to_owned(), 6),
            ("emails".to_owned(), 3),
            ("default".to_owned(), 1),
            ("tenant:*".to_owned(), 2),
        ]
        .into(),
        strict_priority: false,
        status: ServerStatus::Active,
        started: now - Duration::from_secs(5400),
        active_workers: 1,
    };
    let worker = WorkerInfo {
        host: server.host.clone(),
        pid: server.pid,
        server_id: server.server_id.clone(),
        task_id: running.id.to_string(),
        task_type: running.type_name.clone(),
        task_payload: running.payload.clone(),
        queue: running.queue.to_string(),
        started: now - Duration::from_secs(2),
        deadline: now + Duration::from_secs(1798),
    };
    broker.write_server_state(&server, &[worker], Duration::from_secs(3600)).await.expect("server state");
    let report = Progress::new(0.42, "charging card", now).expect("a valid report");
    broker.write_progress(&running.queue, &running.id, &report).await.expect("progress");
    welcome
}

/// The number in overview cell `field` of `queue`'s row (thousands separators dropped).
async fn cell_number(browser: &Browser, queue: &str, field: &str) -> u64 {
    let css = format!(r#"#queues tr[data-queue="{queue}"] td[data-field="{field}"]"#);
    let text = browser.text(&css).await;
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    digits.parse().unwrap_or_else(|_| panic!("{css} shows {text:?}, not a number"))
}

/// `counter` of a queue's information, by its overview field name.
fn counter(info: &asynq_client::QueueInfo, field: &str) -> u64 {
    let count = match field {
        "size" => info.size,
        "pending" => info.pending,
        "active" => info.active,
        "scheduled" => info.scheduled,
        "retry" => info.retry,
        "archived" => info.archived,
        "completed" => info.completed,
        "aggregating" => info.aggregating,
        "processed" => return info.processed,
        "failed" => return info.failed,
        other => panic!("no counter {other}"),
    };
    count as u64
}

/// Waits until the overview shows exactly the inspector's queues and numbers.
async fn overview_matches_inspector(browser: &Browser, inspector: &Inspector) {
    let queues = inspector.queues().await.expect("queues");
    for queue in &queues {
        let info = inspector.queue_info(queue).await.expect("queue info");
        for field in COUNTERS {
            let want = counter(&info, field);
            let css = format!(r#"#queues tr[data-queue="{queue}"] td[data-field="{field}"]"#);
            browser
                .wait_for_text(&css, &format!("{want}"), |text| {
                    text.chars().filter(char::is_ascii_digit).collect::<String>() == want.to_string()
                })
                .await;
        }
        let paused = browser.text(&format!(r#"#queues tr[data-queue="{queue}"] td[data-field="paused"]"#)).await;
        assert_eq!(paused, if info.paused { "paused" } else { "running" }, "queue {queue}");
    }
    assert_eq!(browser.count("#queues tr[data-queue]").await, queues.len(), "one row per queue");
}

/// Where a page's screenshot goes.
fn screenshot_path(name: &str) -> PathBuf {
    screenshot_dir().join(format!("web-{name}.png"))
}

/// The README's screenshot of the overview.
fn docs_screenshot() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/web-overview.png")
}

/// Lets `window.confirm` answer yes, as an operator confirming a bulk action would.
async fn accept_confirmations(browser: &Browser) {
    browser.eval("window.confirm = () => true; return true;", vec![]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_walks_through_the_dashboard() {
    let dash = Dashboard::start(None).await;
    let browser = Browser::start().await;

    // (a) The overview lists every queue with the inspector's numbers, and the history chart.
    browser.set_viewport(1280, 800).await;
    browser.goto(&dash.url).await;
    browser.wait_for(r#"#queues tr[data-queue="emails"]"#).await;
    for queue in ["emails", "billing", "interop", "interop-processed"] {
        browser.wait_for(&format!(r#"#queues tr[data-queue="{queue}"]"#)).await;
    }
    overview_matches_inspector(&browser, &dash.inspector).await;
    assert_eq!(cell_number(&browser, "emails", "pending").await, 4);
    assert_eq!(cell_number(&browser, "billing", "active").await, 1);
    browser.wait_for("#history-chart svg").await;
    browser.wait_for_text("#last-updated", "a refresh time", |text| text.starts_with("Updated")).await;
    assert!(!browser.is_visible("#eviction-warning").await, "noeviction keeps every task: no warning");
    // At 1280 px the queue table fits: nothing is scrolled out of sight, Pause and Delete included.
    let fit = browser
        .eval(
            "const wrap = document.querySelector('#queues').closest('.table-wrap'); \
             const last = document.querySelector('#queues tbody tr td:last-child'); \
             return [wrap.scrollWidth, wrap.clientWidth, last.getBoundingClientRect().right, window.innerWidth];",
            vec![],
        )
        .await;
    let [scroll, client, right, viewport] = [0, 1, 2, 3].map(|i| fit[i].as_f64().expect("a number"));
    assert!(scroll <= client && right <= viewport, "the queue table overflows at 1280 px: {fit}");
    browser.screenshot(&screenshot_path("overview")).await;
    if std::env::var_os("ASYNQ_UPDATE_DOCS_SCREENSHOT").is_some_and(|v| v == "1") {
        browser.screenshot(&docs_screenshot()).await;
    }

    // (b) Archive one pending task with its row button: it leaves pending, shows up archived.
    accept_confirmations(&browser).await;
    browser.click(r#"#queues tr[data-queue="emails"] td[data-field="name"] a"#).await;
    let grace = dash.welcome("grace").to_owned();
    let grace_row = format!(r#"#tasks tr[data-task-id="{grace}"]"#);
    browser.wait_for(&grace_row).await;
    assert_eq!(browser.count("#tasks tr[data-task-id]").await, 4, "four pending welcome emails");
    browser
        .wait_for_text(&format!("{grace_row} td[data-field=\"type\"]"), "the task type", |t| t == "email:welcome")
        .await;
    browser.wait_for_text("#queue-summary", "the queue summary", |t| t.contains("latency")).await;
    let summary = browser.text("#queue-summary").await;
    assert!(!summary.contains("null"), "a queue outside a Cluster has no slot to show: {summary:?}");
    // The last hour, sampled by the dashboard since its first request: a line per state.
    browser.wait_for(r#"#series-sizes svg polyline[data-series="pending"]"#).await;
    browser.wait_for_text("#series-note", "how the history is sampled", |t| t.contains("every 10 s")).await;
    browser.screenshot(&screenshot_path("queue")).await;
    browser.click(&format!(r#"{grace_row} button[data-action="archive"]"#)).await;
    browser.wait_gone(&grace_row).await;
    browser.wait_for_text(r#"[data-count="archived"]"#, "one archived task", |t| t == "1").await;
    assert_eq!(dash.state_of("emails", &grace).await, TaskState::Archived);
    browser.click(r#"a[data-state="archived"]"#).await;
    browser.wait_for(&grace_row).await;

    // (c) Bulk-run archived tasks: the selected one, then every remaining one.
    let linus = dash.welcome("linus").to_owned();
    dash.inspector.archive_task("emails", &linus).await.expect("archive through the inspector");
    let linus_row = format!(r#"#tasks tr[data-task-id="{linus}"]"#);
    browser.wait_for(&linus_row).await; // the live refresh brings it in
    browser.click(&format!(r#"input[data-select="{linus}"]"#)).await;
    browser.click(r#"button[data-bulk="run"]"#).await;
    browser.wait_gone(&linus_row).await;
    assert_eq!(dash.state_of("emails", &linus).await, TaskState::Pending);
    assert!(browser.is_visible(&grace_row).await, "the unselected task stays archived");
    browser.click(r#"button[data-bulk-all="run"]"#).await;
    browser.wait_gone("#tasks tr[data-task-id]").await;
    assert_eq!(dash.state_of("emails", &grace).await, TaskState::Pending);
    let emails = dash.inspector.queue_info("emails").await.expect("queue info");
    assert_eq!((emails.archived, emails.pending, emails.scheduled), (0, 4, 1));

    // (d) The task page shows a JSON payload pretty-printed.
    browser.click(r#"a[data-state="pending"]"#).await;
    let ada = dash.welcome("ada").to_owned();
    browser.click(&format!(r#"#tasks tr[data-task-id="{ada}"] td[data-field="id"] a"#)).await;
    let payload_css = r#"#task pre[data-field="payload"]"#;
    browser.wait_for(payload_css).await;
    assert_eq!(browser.text(r#"#task [data-field="id"]"#).await, ada);
    assert_eq!(browser.text(r#"#task [data-field="type"]"#).await, "email:welcome");
    assert_eq!(browser.attr(payload_css, "data-format").await.as_deref(), Some("json"));
    let shown = browser.text(payload_css).await;
    let parsed: Value = serde_json::from_str(&shown).unwrap_or_else(|e| panic!("payload {shown:?} is not JSON: {e}"));
    assert_eq!(parsed, json!({ "to": "ada@example.com", "template": "welcome", "locale": "en" }));
    assert!(shown.lines().count() >= 5 && shown.contains("\n  \"to\": "), "pretty-printed: {shown:?}");
    browser.screenshot(&screenshot_path("task")).await;

    // (e) A running task shows its handler's last progress report as a bar.
    browser.goto(&dash.page("#/queues/billing/active")).await;
    let progress = r#"#tasks tr[data-state="active"] td[data-field="progress"]"#;
    browser.wait_for_text(progress, "the progress report", |t| t.trim() == "42% charging card").await;
    assert_eq!(browser.attr(&format!("{progress} progress"), "value").await.as_deref(), Some("0.42"));
    // Each state has the columns that matter in it: an active task its worker, start and
    // deadline; a retrying or archived one when it failed and why.
    let worker = r#"#tasks tr[data-state="active"] td[data-field="worker"]"#;
    browser.wait_for_text(worker, "the task's worker", |t| t == "worker-1.internal:4242").await;
    let started = r#"#tasks tr[data-state="active"] td[data-field="started"] time"#;
    assert!(browser.text(started).await.ends_with(" ago"), "a start is shown relative to now");
    assert!(
        browser.attr(started, "title").await.is_some_and(|t| t.contains("UTC")),
        "and in full, zone named, on hover"
    );
    let headers = "return [...document.querySelectorAll('#tasks thead th')].map((th) => th.textContent);";
    let active = browser.eval(headers, vec![]).await;
    for title in ["Started", "Deadline", "Worker", "Progress"] {
        assert!(active.as_array().unwrap().iter().any(|t| t == title), "{title} among {active}");
    }
    let fit = "const wrap = document.querySelector('#tasks').closest('.table-wrap'); \
               return [wrap.scrollWidth, wrap.clientWidth];";
    let fit = browser.eval(fit, vec![]).await;
    assert!(fit[0].as_f64() <= fit[1].as_f64(), "the active tasks fit 1280 px: {fit}");
    browser.screenshot(&screenshot_path("active")).await;
    browser.goto(&dash.page("#/queues/billing/archived")).await;
    let error = r#"#tasks tr[data-state="archived"] td[data-field="last_error"]"#;
    browser.wait_for_text(error, "the archived task's error", |t| t == "customer account closed").await;
    let failed_at = r#"#tasks tr[data-state="archived"] td[data-field="last_failed_at"] time"#;
    assert!(browser.attr(failed_at, "title").await.is_some_and(|t| t.contains("UTC")));
    let archived = browser.eval(headers, vec![]).await;
    browser.screenshot(&screenshot_path("archived")).await;
    assert!(!archived.as_array().unwrap().iter().any(|t| t == "Progress" || t == "Due"), "{archived}");

    // The other main pages: servers (with the running task) and Redis.
    browser.goto(&dash.page("#/servers")).await;
    browser.wait_for(r#"#servers tr[data-server-id="5a0e6b1c-9d4f-4b7e-8a51-2c3d4e5f6a7b"]"#).await;
    browser.wait_for_text(r#"#servers [data-field="host"]"#, "the server's host", |t| t == "worker-1.internal").await;
    browser.screenshot(&screenshot_path("servers")).await;
    // Quieting it keeps a request for its next heartbeat (the page's confirmation accepted).
    accept_confirmations(&browser).await;
    let server_id = "5a0e6b1c-9d4f-4b7e-8a51-2c3d4e5f6a7b";
    browser.click(&format!(r#"#servers tr[data-server-id="{server_id}"] button[data-action="quiet"]"#)).await;
    browser.wait_for_text("#server-request-sent", "the request sent", |t| t.starts_with("Sent quiet")).await;
    let broker = redis_broker(&dash.redis.url(), Arc::new(SystemClock)).await;
    let taken = asynq_core::ServerControl::take_server_request(&broker, server_id).await.unwrap();
    assert_eq!(taken, Some(asynq_core::ServerRequest::Quiet));
    browser.goto(&dash.page("#/redis")).await;
    browser.wait_for("#redis-info tr").await;
    browser.wait_for_text(r#"#redis-info tr[data-field="namespace"] td"#, "the namespace", |t| t == "asynq").await;
    browser.wait_for("#redis-nodes tr").await;
    browser.screenshot(&screenshot_path("redis")).await;

    // Dark mode: the theme button switches the page, the choice outlives a reload, and times
    // name their time zone.
    let background = "return getComputedStyle(document.documentElement).backgroundColor;";
    let light = browser.eval(background, vec![]).await;
    browser.click("#theme").await;
    assert_eq!(browser.attr("html", "data-theme").await.as_deref(), Some("dark"));
    let dark = browser.eval(background, vec![]).await;
    assert_ne!(light, dark, "the page's background changes");
    browser.goto(&dash.url).await;
    browser.wait_for_text("#last-updated", "a refresh time", |text| text.starts_with("Updated")).await;
    assert_eq!(browser.attr("html", "data-theme").await.as_deref(), Some("dark"), "the choice is remembered");
    let stamp = browser.text("#last-updated").await;
    assert!(stamp.contains("UTC") || stamp.contains("GMT"), "the time names its zone: {stamp}");
    browser.screenshot(&screenshot_path("overview-dark")).await;
    browser.click("#theme").await;
    assert_eq!(browser.attr("html", "data-theme").await.as_deref(), Some("light"));

    // (f) A phone-sized window still shows the queues, without the page scrolling sideways.
    browser.set_viewport(390, 844).await;
    browser.goto(&dash.url).await;
    browser.wait_visible(r#"#queues tr[data-queue="emails"] td[data-field="name"] a"#).await;
    overview_matches_inspector(&browser, &dash.inspector).await;
    let layout = browser
        .eval(
            "const name = document.querySelector('#queues tr[data-queue=\"emails\"] td[data-field=\"name\"]');\n\
             const box = name.getBoundingClientRect();\n\
             return { pageWidth: document.documentElement.scrollWidth, left: box.left, right: box.right };",
            vec![],
        )
        .await;
    assert!(layout["pageWidth"].as_f64().is_some_and(|w| w <= 390.0), "the page fits 390 px: {layout}");
    assert!(layout["left"].as_f64().is_some_and(|x| x >= 0.0), "the queue name is on screen: {layout}");
    assert!(layout["right"].as_f64().is_some_and(|x| x <= 390.0), "the queue name is on screen: {layout}");
    browser.screenshot(&screenshot_path("overview-narrow")).await;

    // Every other page fits a phone too: wide tables scroll inside their panel, not the page.
    let task_page = format!("#/queues/emails/tasks/{ada}");
    let pages = [
        ("task-narrow", task_page.as_str(), r#"#task [data-field="id"]"#),
        ("queue-narrow", "#/queues/emails/pending", "#tasks tr[data-task-id]"),
        ("active-narrow", "#/queues/billing/active", r#"#tasks tr[data-state="active"]"#),
        ("servers-narrow", "#/servers", "#servers tr[data-server-id]"),
        ("schedulers-narrow", "#/schedulers", "#schedulers"),
        ("redis-narrow", "#/redis", "#redis-info tr"),
    ];
    for (name, page, ready) in pages {
        browser.goto(&dash.page(page)).await;
        browser.wait_for(ready).await;
        let width = browser.eval("return document.documentElement.scrollWidth;", vec![]).await;
        assert!(width.as_f64().is_some_and(|w| w <= 390.0), "{page} fits 390 px: {width}");
        browser.screenshot(&screenshot_path(name)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_form_guards_the_dashboard() {
    let dash = Dashboard::start(Some(Auth::bearer(TOKEN).expect("a valid token"))).await;
    let browser = Browser::start().await;

    // (e) The login form comes first, and nothing of the data.
    browser.goto(&dash.url).await;
    browser.wait_visible("form#login").await;
    browser.wait_visible(r#"form#login input[name="token"]"#).await;
    assert_eq!(browser.count("#queues tr[data-queue]").await, 0, "no data before logging in");

    // A wrong token is refused with a message, and the form stays.
    browser.fill(r#"form#login input[name="token"]"#, "not-the-token").await;
    browser.click(r#"form#login button[type="submit"]"#).await;
    browser.wait_visible("#error").await;
    let error = browser.wait_for_text("#error", "an error message", |t| !t.trim().is_empty()).await;
    assert!(!error.contains(TOKEN) && !error.contains("not-the-token"), "the message echoes no token: {error}");
    assert!(browser.is_visible("form#login").await, "the form stays after a wrong token");
    assert_eq!(browser.count("#queues tr[data-queue]").await, 0);

    // The right one loads the overview, with a session cookie the page cannot read.
    browser.fill(r#"form#login input[name="token"]"#, TOKEN).await;
    browser.click(r#"form#login button[type="submit"]"#).await;
    browser.wait_visible(r#"#queues tr[data-queue="emails"]"#).await;
    assert!(!browser.is_visible("form#login").await, "the form is gone once logged in");
    assert!(!browser.is_visible("#error").await, "the error is cleared");
    overview_matches_inspector(&browser, &dash.inspector).await;
    let cookies = browser.eval("return document.cookie;", vec![]).await;
    assert!(
        !cookies.as_str().unwrap_or_default().contains("asynq_session"),
        "the session cookie is HttpOnly: {cookies}"
    );

    // A reload keeps the session.
    browser.goto(&dash.page("#/servers")).await;
    browser.wait_for("#servers tr[data-server-id]").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicting_redis_puts_a_warning_on_the_overview() {
    let dash = Dashboard::start(None).await;
    let browser = Browser::start().await;
    browser.goto(&dash.url).await;
    browser.wait_for(r#"#queues tr[data-queue="emails"]"#).await;
    browser.wait_for_text("#last-updated", "a refresh time", |text| text.starts_with("Updated")).await;
    assert!(!browser.is_visible("#eviction-warning").await);

    // The live refresh brings the warning in, worded as Redis's check words it.
    dash.redis.command(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]).expect("CONFIG SET");
    browser.wait_visible(r#"#eviction-warning p[data-policy="allkeys-lru"]"#).await;
    let text = browser.text("#eviction-warning").await;
    assert!(
        text.contains("maxmemory-policy allkeys-lru") && text.contains("set maxmemory-policy noeviction"),
        "{text}"
    );
    assert!(browser.is_visible(r#"#queues tr[data-queue="emails"]"#).await, "the queues stay shown");
    browser.screenshot(&screenshot_path("overview-eviction-warning")).await;
    browser.goto(&dash.page("#/redis")).await;
    browser.wait_visible(r#"#redis-eviction-warning p[data-policy="allkeys-lru"]"#).await;

    // Fixed, it goes away.
    browser.goto(&dash.url).await;
    browser.wait_visible("#eviction-warning").await;
    dash.redis.command(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]).expect("CONFIG SET");
    browser.wait_gone("#eviction-warning:not([hidden])").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_with_an_event_log_refreshes_as_its_events_arrive() {
    // Pages refresh every 10 minutes: within this test only the event log brings changes in.
    let dash = Dashboard::start_with(None, Duration::from_secs(600)).await;
    let cap = asynq_client::EventCap::new(1_000).expect("a valid cap");
    dash.inspector.enable_events("emails", cap).await.expect("events enabled");
    let browser = Browser::start().await;
    browser.set_viewport(1280, 800).await;
    browser.goto(&dash.page("#/queues/emails/pending")).await;
    let ada = dash.welcome("ada").to_owned();
    let ada_row = format!(r#"#tasks tr[data-task-id="{ada}"]"#);
    browser.wait_for(&ada_row).await;
    browser.wait_visible("#events-panel").await;

    dash.inspector.archive_task("emails", &ada).await.expect("archive through the inspector");
    browser.wait_for(&format!(r#"#queue-events li[data-event-kind="archived"][data-task-id="{ada}"]"#)).await;
    browser.wait_gone(&ada_row).await;
    browser.wait_for_text(r#"[data-count="archived"]"#, "one archived task", |t| t == "1").await;
    browser.screenshot(&screenshot_path("queue-events")).await;

    // A queue without a log shows no events panel; polling is all it gets.
    browser.goto(&dash.page("#/queues/billing/pending")).await;
    browser.wait_for_text("#queue-name", "the billing queue", |t| t == "billing").await;
    browser.wait_for_text("#queue-summary", "the queue summary", |t| t.contains("latency")).await;
    assert!(!browser.is_visible("#events-panel").await, "billing keeps no event log");
}

/// Stores a workflow in queue `pipeline`: a chord of three `extract` members whose callback is
/// `merge`, then `publish` and `notify`. The first member succeeded with its result kept
/// (completed), the second without (gone), the third runs with a progress report, and the rest
/// wait. Returns its ID.
async fn seed_workflow(dash: &Dashboard) -> String {
    let broker = redis_broker(&dash.redis.url(), Arc::new(SystemClock)).await;
    let step = |kind: &str, id: &str, options: TaskOptions| {
        let payload = json!({ "video": "launch.mp4", "step": id }).to_string();
        Flow::task(Task::new(format!("video:{kind}"), payload), options.queue("pipeline").task_id(id))
    };
    let members = [
        step("extract", "extract-audio", TaskOptions::new().retention(Duration::from_secs(3600))),
        step("extract", "extract-frames", TaskOptions::new()),
        step("extract", "extract-subtitles", TaskOptions::new()),
    ];
    let flow = Flow::chord(members, step("merge", "merge", TaskOptions::new()))
        .then(step("publish", "publish", TaskOptions::new()))
        .then(step("notify", "notify", TaskOptions::new()));
    let stored = FlowProducer::new(broker.clone()).enqueue(&flow).await.expect("the workflow is stored");
    let queue = QueueName::from_static("pipeline");
    let taken = broker.dequeue(std::slice::from_ref(&queue), 3).await.expect("dequeue");
    let message = |id: &str| &taken.iter().find(|t| t.message.id == id).expect("every member is taken").message;
    let audio = TaskId::from_static("extract-audio");
    broker.write_result(&queue, &audio, "audio.aac".into()).await.expect("result");
    broker.finish(message("extract-audio"), Outcome::Complete).await.expect("completed");
    broker.finish(message("extract-frames"), Outcome::Done).await.expect("done");
    let report = Progress::new(0.6, "subtitles", SystemClock.now()).expect("a valid report");
    broker.write_progress(&queue, &TaskId::from_static("extract-subtitles"), &report).await.expect("progress");
    stored.id.into_string()
}

/// Whether the page at this viewport fits its width, and the graph its box: `[page width,
/// viewport width, graph box scroll width, graph box width]`.
async fn graph_fit(browser: &Browser) -> [f64; 4] {
    let fit = browser
        .eval(
            "const box = document.querySelector('#workflow-graph'); \
             return [document.documentElement.scrollWidth, window.innerWidth, box.scrollWidth, box.clientWidth];",
            vec![],
        )
        .await;
    [0, 1, 2, 3].map(|i| fit[i].as_f64().expect("a number"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_page_draws_its_graph_with_each_task_s_state() {
    let dash = Dashboard::start(None).await;
    let id = seed_workflow(&dash).await;
    let browser = Browser::start().await;
    browser.set_viewport(1280, 800).await;

    // The list names it, its size and state.
    browser.goto(&dash.page("#/workflows")).await;
    let row = format!(r#"#workflows tr[data-workflow-id="{id}"]"#);
    browser.wait_for_text(&format!(r#"{row} td[data-field="state"]"#), "its state", |t| t == "running").await;
    assert_eq!(browser.text(&format!(r#"{row} td[data-field="tasks"]"#)).await, "6");
    assert_eq!(browser.attr(r#"#nav a[aria-current="page"]"#, "data-nav").await.as_deref(), Some("workflows"));
    browser.screenshot(&screenshot_path("workflows")).await;

    // Its page: one box per task, coloured by its state, and an edge per dependency.
    browser.click(&format!(r#"{row} td[data-field="id"] a"#)).await;
    browser.wait_for(r#"#workflow-graph svg .graph-node.state-active"#).await;
    let nodes = browser
        .eval(
            "return [...document.querySelectorAll('#workflow-graph svg .graph-node')]\
             .map((node) => [node.dataset.taskId, node.getAttribute('class')]);",
            vec![],
        )
        .await;
    let nodes: Vec<(String, String)> = serde_json::from_value(nodes).expect("pairs of strings");
    let nodes: BTreeMap<String, String> = nodes.into_iter().collect();
    let expected = [
        ("extract-audio", "completed"),
        // It succeeded without retention: no longer stored, it keeps its type and its success.
        ("extract-frames", "succeeded"),
        ("extract-subtitles", "active"),
        ("merge", "waiting"),
        ("publish", "waiting"),
        ("notify", "waiting"),
    ];
    assert_eq!(nodes.len(), expected.len(), "one box per task: {nodes:?}");
    for (task, state) in expected {
        assert_eq!(nodes.get(task).map(String::as_str), Some(format!("graph-node state-{state}").as_str()), "{task}");
    }
    assert_eq!(browser.count("#workflow-graph svg .graph-edge").await, 5, "three members into merge, then a chain");
    let merge_inputs = browser
        .eval(
            "return [...document.querySelectorAll('#workflow-graph .graph-edge')]\
             .filter((edge) => edge.dataset.to === '3').map((edge) => Number(edge.dataset.from));",
            vec![],
        )
        .await;
    assert_eq!(merge_inputs, json!([0, 1, 2]), "merge waits for the three members");
    let link = r#"#workflow-graph a:has(.graph-node[data-task-id="merge"])"#;
    assert_eq!(browser.attr(link, "href").await.as_deref(), Some("#/queues/pipeline/tasks/merge"));
    let subtitles = r#"#workflow-graph .graph-node[data-task-id="extract-subtitles"] .graph-detail"#;
    browser.wait_for_text(subtitles, "its progress", |t| t.starts_with("active · 60%")).await;

    // Above the graph, the counts and the workflow's state; below it, the tasks and their parents.
    let summary = browser.wait_for_text("#workflow-summary", "the counts", |t| t.contains("waiting 3")).await;
    for part in ["running", "6 task(s)", "completed 1", "active 1", "succeeded 1"] {
        assert!(summary.contains(part), "{part} in {summary:?}");
    }
    assert!(
        browser.is_visible(r#"button[data-action="cancel-workflow"]"#).await,
        "a running workflow can be cancelled"
    );
    assert_eq!(browser.count("#workflow-tasks tr[data-task-id]").await, 6);
    let parents = browser.text(r#"#workflow-tasks tr[data-task-id="merge"] td[data-field="parents"]"#).await;
    assert_eq!(parents, "extract-audio, extract-frames, extract-subtitles");
    let result = browser.text(r#"#workflow-tasks tr[data-task-id="extract-audio"] td[data-field="result"]"#).await;
    assert_eq!(result, "audio.aac");

    // Nothing stray: every label fits its box, and no value is missing from the page.
    let labels = browser
        .eval(
            "return [...document.querySelectorAll('#workflow-graph text')]\
             .map((text) => [text.textContent, text.getComputedTextLength()]);",
            vec![],
        )
        .await;
    for label in labels.as_array().expect("labels") {
        let (text, width) = (label[0].as_str().unwrap_or_default(), label[1].as_f64().unwrap_or(f64::MAX));
        assert!(!text.is_empty() && width <= 156.0, "label {text:?} is {width} px wide");
    }
    let page_text = browser.text("#view").await;
    for stray in ["undefined", "null", "NaN", "[object"] {
        assert!(!page_text.contains(stray), "{stray:?} on the page: {page_text}");
    }
    let [page, viewport, graph, graph_box] = graph_fit(&browser).await;
    assert!(
        page <= viewport && graph <= graph_box,
        "the workflow page overflows at 1280 px: {page} {viewport} {graph} {graph_box}"
    );
    let table = "const wrap = document.querySelector('#workflow-tasks').closest('.table-wrap'); \
                 return [wrap.scrollWidth, wrap.clientWidth];";
    let table = browser.eval(table, vec![]).await;
    assert!(table[0].as_f64() <= table[1].as_f64(), "the task table fits 1280 px: {table}");
    browser.screenshot(&screenshot_path("workflow")).await;

    // Dark mode recolours the boxes.
    let fill = r#"return getComputedStyle(document.querySelector('.graph-node[data-task-id="merge"] rect')).fill;"#;
    let light = browser.eval(fill, vec![]).await;
    browser.click("#theme").await;
    assert_ne!(browser.eval(fill, vec![]).await, light, "a waiting box is drawn darker in dark mode");
    browser.screenshot(&screenshot_path("workflow-dark")).await;
    browser.click("#theme").await;

    // A phone: the page keeps its width and the graph scrolls inside its box.
    browser.set_viewport(390, 844).await;
    browser.wait_visible("#workflow-graph svg").await;
    let [page, viewport, _, graph_box] = graph_fit(&browser).await;
    assert!(page <= viewport && graph_box < viewport, "the workflow page fits 390 px: {page} {viewport} {graph_box}");
    browser.screenshot(&screenshot_path("workflow-narrow")).await;
    browser.set_viewport(1280, 800).await;

    // A box opens its task's page, which leads back to the workflow.
    browser.click(link).await;
    browser.wait_for_text(r#"#task [data-field="state"]"#, "a waiting task", |t| t == "waiting").await;
    let back = r#"#task [data-field="workflow"] a"#;
    assert_eq!(browser.attr(back, "href").await, Some(format!("#/workflows/{id}")));
    browser.click(back).await;
    browser.wait_for(r#"#workflow-graph svg .graph-node.state-active"#).await;

    // Cancelling archives what waits, and the graph follows.
    accept_confirmations(&browser).await;
    browser.click(r#"button[data-action="cancel-workflow"]"#).await;
    browser.wait_for_text("#workflow-cancelled", "what the cancel did", |t| t.contains("asked to stop")).await;
    browser.wait_for(r#"#workflow-graph .graph-node.state-archived[data-task-id="merge"]"#).await;
    assert_eq!(dash.state_of("pipeline", "merge").await, TaskState::Archived);

    // A workflow too large to draw says so, and lists its tasks a page at a time.
    let broker = redis_broker(&dash.redis.url(), Arc::new(SystemClock)).await;
    let member = |n: usize| Flow::task(Task::new("shard:scan", n.to_string()), TaskOptions::new().queue("wide"));
    let chord =
        Flow::chord((0..301).map(member), Flow::task(Task::new("shard:sum", ""), TaskOptions::new().queue("wide")));
    let wide = FlowProducer::new(broker).enqueue(&chord).await.expect("the workflow is stored").id;
    browser.goto(&dash.page(&format!("#/workflows/{wide}"))).await;
    browser.wait_for_text("#workflow-graph-note", "why there is no graph", |t| t.contains("more than the 300")).await;
    assert!(!browser.is_visible("#workflow-graph").await && browser.count("#workflow-graph svg").await == 0);
    assert_eq!(browser.count("#workflow-tasks tr[data-task-id]").await, 20);
    assert!(browser.text("#workflow-page-info").await.starts_with("Page 1 of 16"));
    browser.click("#workflow-next").await;
    browser.wait_for_text("#workflow-page-info", "the second page", |t| t.starts_with("Page 2 of 16")).await;
    browser
        .wait_for_text(r#"#workflow-tasks tr[data-index="20"] td[data-field="index"]"#, "task 20", |t| t == "20")
        .await;
    // The last page and back to the first.
    browser.click("#workflow-last").await;
    browser.wait_for_text("#workflow-page-info", "the last page", |t| t.starts_with("Page 16 of 16")).await;
    browser.wait_for(r#"#workflow-tasks tr[data-index="301"]"#).await;
    browser.click("#workflow-first").await;
    browser.wait_for_text("#workflow-page-info", "the first page", |t| t.starts_with("Page 1 of 16")).await;
}

/// Asserts that the page shows no value the script failed to fill in.
async fn assert_no_stray_text(browser: &Browser) {
    let text = browser.text("#view").await;
    for stray in ["undefined", "null", "NaN", "[object"] {
        assert!(!text.contains(stray), "{stray:?} on {}: {text}", browser.url().await);
    }
}

/// `[page width, viewport width, table scroll width, table box width]` of the table `#{id}`.
async fn table_fit(browser: &Browser, id: &str) -> [f64; 4] {
    let script = format!(
        "const wrap = document.querySelector('#{id}').closest('.table-wrap'); \
         return [document.documentElement.scrollWidth, window.innerWidth, wrap.scrollWidth, wrap.clientWidth];"
    );
    let fit = browser.eval(&script, vec![]).await;
    [0, 1, 2, 3].map(|i| fit[i].as_f64().expect("a number"))
}

/// Asserts that the page and table `#{id}` fit the viewport: nothing scrolls sideways.
async fn assert_table_fits(browser: &Browser, id: &str) {
    let [page, viewport, table, table_box] = table_fit(browser, id).await;
    assert!(page <= viewport && table <= table_box, "#{id} overflows: {page} {viewport} {table} {table_box}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_tasks_priorities_slots_and_queue_patterns_are_shown() {
    use asynq_core::broker::Capabilities;
    use asynq_core::slots::SharedLimit;
    let dash = Dashboard::start(None).await;
    let workflow = seed_workflow(&dash).await;
    let broker = redis_broker(&dash.redis.url(), Arc::new(SystemClock)).await;
    let vip = Task::new("email:welcome", json!({ "to": "vip@example.com" }).to_string());
    Client::new(broker.clone())
        .enqueue(&vip, TaskOptions::new().queue("emails").task_id("vip-welcome").priority(8))
        .await
        .expect("a prioritized task");
    let slots = Arc::new(broker).as_concurrency_slots().expect("Redis keeps shared limits");
    let limit = SharedLimit::new("type:pdf:render", 4).expect("a valid limit");
    let now = SystemClock.now();
    let holder = TaskId::from_static("render-7");
    assert!(slots.take_slot(&limit, &holder, now, now + Duration::from_secs(600)).await.expect("a slot"));
    let browser = Browser::start().await;
    browser.set_viewport(1280, 800).await;

    // The queue's waiting tab counts and lists the workflow tasks waiting for others, each with
    // a link to its workflow and no action. (The overview has no room left for their count at
    // 1280 px.)
    browser.goto(&dash.url).await;
    browser.click(r#"#queues tr[data-queue="pipeline"] td[data-field="name"] a"#).await;
    browser.wait_for_text(r#"[data-count="waiting"]"#, "three waiting tasks", |t| t == "3").await;
    browser.click(r#"a[data-state="waiting"]"#).await;
    browser.wait_for(r#"#tasks tr[data-task-id="merge"]"#).await;
    assert_eq!(browser.count("#tasks tr[data-state=\"waiting\"]").await, 3);
    let link = r#"#tasks tr[data-task-id="merge"] td[data-field="workflow"] a"#;
    assert_eq!(browser.attr(link, "href").await, Some(format!("#/workflows/{workflow}")));
    assert_eq!(browser.count("#tasks button, #tasks input[data-select]").await, 0, "a waiting task takes no action");
    assert_eq!(browser.count("button[data-bulk], button[data-bulk-all]").await, 0);
    assert!(browser.is_visible("#waiting-note").await);
    assert_table_fits(&browser, "tasks").await;
    assert_no_stray_text(&browser).await;
    browser.screenshot(&screenshot_path("queue-waiting")).await;

    // A waiting task's page leads to its workflow, and back to the waiting tab.
    browser.click(r#"#tasks tr[data-task-id="merge"] td[data-field="id"] a"#).await;
    browser.wait_for_text(r#"#task [data-field="state"]"#, "a waiting task", |t| t == "waiting").await;
    let open = r#"#task a[data-action="open-workflow"]"#;
    assert_eq!(browser.attr(open, "href").await, Some(format!("#/workflows/{workflow}")));
    assert_eq!(browser.count("#task button[data-action]").await, 0, "no run, archive or delete");
    assert_eq!(browser.text(r#"#task [data-field="priority"]"#).await, "0 (the default)");
    assert_no_stray_text(&browser).await;
    browser.screenshot(&screenshot_path("task-waiting")).await;
    browser.click(r#"#task h1 a"#).await;
    browser.wait_for(r#"a[data-state="waiting"][aria-current="page"]"#).await;
    browser.wait_for(r#"#tasks tr[data-task-id="merge"]"#).await;
    browser.click(r#"#tasks tr[data-task-id="merge"] td[data-field="id"] a"#).await;
    browser.click(open).await;
    browser.wait_for(r#"#workflow-graph .graph-node[data-task-id="merge"]"#).await;

    // Pending tasks run highest priority first, which a Priority column shows.
    browser.goto(&dash.page("#/queues/emails/pending")).await;
    let vip_priority = r#"#tasks tr[data-task-id="vip-welcome"] td[data-field="priority"]"#;
    browser.wait_for_text(vip_priority, "its priority", |t| t == "8").await;
    assert!(browser.is_visible(r#"#tasks th[data-column="priority"]"#).await);
    let first = browser.attr("#tasks tbody tr:first-child", "data-task-id").await;
    assert_eq!(first.as_deref(), Some("vip-welcome"), "the highest priority runs first");
    let ada = dash.welcome("ada").to_owned();
    assert_eq!(browser.text(&format!(r#"#tasks tr[data-task-id="{ada}"] td[data-field="priority"]"#)).await, "0");
    assert_table_fits(&browser, "tasks").await;
    browser.screenshot(&screenshot_path("queue-priorities")).await;
    browser.click(r#"#tasks tr[data-task-id="vip-welcome"] td[data-field="id"] a"#).await;
    browser.wait_for_text(r#"#task [data-field="priority"]"#, "its priority", |t| t == "8").await;
    // A queue whose tasks all have the default priority needs no such column.
    browser.goto(&dash.page("#/queues/interop/pending")).await;
    browser.wait_for(r#"#tasks tr[data-task-id="fixed-id"]"#).await;
    assert!(!browser.is_visible(r#"#tasks th[data-column="priority"]"#).await);
    assert!(!browser.is_visible(r#"#tasks td[data-field="priority"]"#).await);

    // The Slots page: the operator types a key and sees who holds its slots, kept up to date.
    browser.click(r#"#nav a[data-nav="slots"]"#).await;
    browser.wait_for("#slot-form").await;
    assert!(!browser.is_visible("#slot-results").await, "nothing to show before a key");
    browser.fill("#slot-key", "type:pdf:render").await;
    browser.click(r#"#slot-form button[type="submit"]"#).await;
    let row = r#"#slot-holders tr[data-task-id="render-7"]"#;
    browser.wait_for(row).await;
    assert!(browser.url().await.ends_with("#/slots/type%3Apdf%3Arender"), "the key is in the route");
    assert_eq!(browser.attr(r#"#nav a[aria-current="page"]"#, "data-nav").await.as_deref(), Some("slots"));
    let until = browser.text(&format!(r#"{row} td[data-field="held_until"]"#)).await;
    assert!(until.starts_with("in "), "a hold runs out in the future: {until}");
    assert_eq!(browser.text("#slot-count").await, "1 task(s) hold a slot now.");
    assert_table_fits(&browser, "slot-holders").await;
    assert_no_stray_text(&browser).await;
    browser.screenshot(&screenshot_path("slots")).await;
    slots.release_slot(limit.key(), &holder).await.expect("released");
    browser.wait_gone(row).await;
    browser.wait_for_text("#slot-holders tr.empty", "no holder", |t| t.contains("No task holds a slot")).await;
    // A key the broker could not hold is refused with the reason.
    browser.fill("#slot-key", &"k".repeat(asynq_core::slots::MAX_SLOT_KEY_LEN + 1)).await;
    browser.click(r#"#slot-form button[type="submit"]"#).await;
    browser.wait_for_text("#error", "the refusal", |t| t.contains("more than 512")).await;

    // The servers page marks a queue pattern as one, and links only the queues.
    browser.goto(&dash.page("#/servers")).await;
    let pattern = r#"#servers td[data-field="queues"] .queue-pattern[data-pattern="tenant:*"]"#;
    browser.wait_for_text(pattern, "the pattern", |t| t == "tenant:* pattern").await;
    assert_eq!(browser.count(r#"#servers td[data-field="queues"] a"#).await, 3, "billing, emails and default");
    assert_eq!(
        browser.attr(r#"#servers td[data-field="queues"] a[data-queue="billing"]"#, "href").await.as_deref(),
        Some("#/queues/billing/pending")
    );
    assert_table_fits(&browser, "servers").await;
    assert_no_stray_text(&browser).await;
    browser.screenshot(&screenshot_path("servers-patterns")).await;

    // Dark mode.
    browser.goto(&dash.page("#/slots/type%3Apdf%3Arender")).await;
    browser.wait_for("#slot-holders tr.empty").await;
    browser.click("#theme").await;
    assert_eq!(browser.attr("html", "data-theme").await.as_deref(), Some("dark"));
    browser.screenshot(&screenshot_path("slots-dark")).await;
    browser.goto(&dash.page("#/queues/pipeline/waiting")).await;
    browser.wait_for(r#"#tasks tr[data-task-id="merge"]"#).await;
    browser.screenshot(&screenshot_path("queue-waiting-dark")).await;
    browser.click("#theme").await;

    // A phone: every new page keeps its width; wide tables scroll inside their panel.
    browser.set_viewport(390, 844).await;
    let pages = [
        ("queue-waiting-narrow", "#/queues/pipeline/waiting", r#"#tasks tr[data-task-id="merge"]"#),
        ("queue-priorities-narrow", "#/queues/emails/pending", r#"#tasks tr[data-task-id="vip-welcome"]"#),
        ("slots-narrow", "#/slots/type%3Apdf%3Arender", "#slot-holders tr.empty"),
        ("servers-patterns-narrow", "#/servers", pattern),
    ];
    for (name, page, ready) in pages {
        browser.goto(&dash.page(page)).await;
        browser.wait_for(ready).await;
        let width = browser.eval("return document.documentElement.scrollWidth;", vec![]).await;
        assert!(width.as_f64().is_some_and(|w| w <= 390.0), "{page} fits 390 px: {width}");
        assert_no_stray_text(&browser).await;
        browser.screenshot(&screenshot_path(name)).await;
    }
}

/// A bulk action still running when its request is answered shows a banner with its progress
/// until it ends, then the page shows its outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_bulk_action_shows_its_progress_until_it_ends() {
    // No reply wait: every bulk action is answered with its job while it runs.
    let dash = Dashboard::start_configured(None, |config| config.job_reply_wait(Duration::ZERO)).await;
    let client = Client::new(redis_broker(&dash.redis.url(), Arc::new(SystemClock)).await);
    let tasks: Vec<_> =
        (0..2_000).map(|n| (Task::new("bulk", format!("{n}")), TaskOptions::new().queue("big"))).collect();
    for chunk in tasks.chunks(500) {
        assert!(client.enqueue_batch(chunk).await.iter().all(Result::is_ok));
    }
    let browser = Browser::start().await;
    accept_confirmations(&browser).await;
    browser.goto(&dash.page("#/queues/big/pending")).await;
    browser.wait_for("#tasks tr[data-task-id]").await;
    accept_confirmations(&browser).await;
    browser.click(r#"button[data-bulk-all="archive"]"#).await;
    let banner = browser
        .wait_for_text("#jobs", "the job's banner", |t| t.starts_with(r#"Archive the pending tasks of queue "big""#))
        .await;
    assert!(banner.contains("tasks"), "{banner}");
    browser.wait_for_text("#jobs", "the banner gone", str::is_empty).await;
    assert!(!browser.is_visible("#jobs").await);
    assert!(!browser.is_visible("#error").await, "{}", browser.text("#error").await);
    browser.wait_gone("#tasks tr[data-task-id]").await;
    let big = dash.inspector.queue_info("big").await.expect("queue info");
    assert_eq!((big.pending, big.archived), (0, 2_000));
}

/// "Archive all" on a queue whose archive would drop tasks: the confirmation names how many and
/// the limits before anything is archived, and the page says afterwards what was dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_all_names_what_the_archive_s_limits_drop() {
    let redis = tokio::task::spawn_blocking(RedisServer::start).await.expect("redis-server starts");
    // The archive keeps 4 tasks.
    let limits = asynq_core::ArchiveLimits::new(5, Duration::from_secs(86_400)).unwrap();
    let broker = asynq_tests::redis_broker_with_archive_limits(&redis.url(), Arc::new(SystemClock), limits).await;
    let tasks: Vec<_> =
        (0..6).map(|n| (Task::new("bulk", format!("{n}")), TaskOptions::new().queue("small"))).collect();
    assert!(Client::new(broker.clone()).enqueue_batch(&tasks).await.iter().all(Result::is_ok));
    let inspector = Inspector::new(broker);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let url = format!("http://{}/", listener.local_addr().expect("bound address"));
    let config = WebConfig::new(inspector.clone()).refresh(Duration::from_secs(1));
    let server = tokio::spawn(asynq_web::serve(listener, config, std::future::pending()));

    let browser = Browser::start().await;
    browser.goto(&format!("{url}#/queues/small/pending")).await;
    browser.wait_for("#tasks tr[data-task-id]").await;
    // Record each confirmation, and decline the first.
    let record = "window.asked = []; window.confirm = (m) => { window.asked.push(m); return window.asked.length > 1; }; \
                  return true;";
    browser.eval(record, vec![]).await;
    browser.click(r#"button[data-bulk-all="archive"]"#).await;
    let first = browser
        .poll("the confirmation", || async {
            let asked = browser.eval("return window.asked;", vec![]).await;
            asked[0].as_str().map(str::to_owned)
        })
        .await;
    assert!(first.contains("This drops 2 archived task(s)") && first.contains("at most 4 tasks"), "{first}");
    assert_eq!(inspector.queue_info("small").await.unwrap().archived, 0, "declined: nothing archived");

    browser.click(r#"button[data-bulk-all="archive"]"#).await;
    let error = browser.wait_for_text("#error", "what was dropped", |t| t.contains("dropped")).await;
    assert!(error.contains("The archive's limits dropped 2 archived task(s): 2 over the size limit"), "{error}");
    let info = inspector.queue_info("small").await.unwrap();
    assert_eq!((info.pending, info.archived), (0, 4));
    server.abort();
}
