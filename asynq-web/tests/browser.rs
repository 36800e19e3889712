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

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use asynq_client::{Client, Inspector, Task, TaskOptions, TaskState};
use asynq_core::SystemClock;
use asynq_tests::browser::Browser;
use asynq_tests::{RedisServer, redis_broker};
use asynq_web::{Auth, WebConfig};
use serde_json::{Value, json};

/// The token of the dashboard under authentication.
const TOKEN: &str = "browser-test-token-0123456789abcdef";

/// The queue counters the overview shows as numbers, by `data-field`.
const COUNTERS: &[&str] =
    &["size", "pending", "active", "scheduled", "retry", "archived", "completed", "aggregating", "processed", "failed"];

mod support;
use support::dashboard::{Dashboard, accept_confirmations, screenshot_path};

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

/// The README's screenshot of the overview.
fn docs_screenshot() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/web-overview.png")
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
