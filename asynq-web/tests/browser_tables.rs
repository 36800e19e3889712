//! The dashboard's tables and charts in a real headless Chromium, measured from the elements'
//! bounding rectangles: at 1280 px every table fits whole, its row buttons in sight; on a phone
//! (390 px) a wide table scrolls inside its own box and its Actions column stays in sight at
//! that box's right edge; chart labels lie whole inside their chart, whatever their numbers.
//!
//! Needs Chromium and chromedriver (see `asynq_tests::browser`) and a redis-server.
#![allow(clippy::disallowed_methods)] // a test reads the wall clock as it likes

use std::sync::Arc;
use std::time::Duration;

use asynq_client::{Client, FlowProducer, Inspector, Task, TaskOptions};
use asynq_core::broker::{Dequeue, Outcome};
use asynq_core::workflow::Flow;
use asynq_core::{Clock, QueueName, SystemClock};
use asynq_tests::browser::{Browser, screenshot_dir};
use asynq_tests::{PlainProducer, RedisServer, redis_broker};
use asynq_web::WebConfig;
use serde_json::{Value, json};

mod support;
use support::dashboard::record_running_server;

/// A queue name as long as real ones get.
const QUEUE: &str = "invoices-eu-west-1-priority";

/// A failure message as long as real ones get.
const LONG_ERROR: &str = "charge failed: upstream payment gateway answered 503 Service Unavailable after 3 attempts \
     (request id 7f3a9c2e-55b1-4c1e-9a0e-2b7d8e6f4a10); will retry";

/// A redis-server with tasks of `QUEUE` in every state Go has, today's counters in six digits, a
/// queue with nothing pending (its latency is 0), and the dashboard serving them.
struct Dashboard {
    url: String,
    /// A workflow whose first task succeeded without retention: `fetch` (gone), then `publish`.
    workflow: String,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    _redis: RedisServer,
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Dashboard {
    async fn start() -> Self {
        let redis = tokio::task::spawn_blocking(RedisServer::start).await.expect("redis-server starts");
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let broker = redis_broker(&redis.url(), clock.clone()).await;
        let client = Client::new(broker.clone());
        let options = || TaskOptions::new().queue(QUEUE).max_retry(25).retention(Duration::from_secs(86_400));
        for n in 0..30 {
            let payload = json!({ "customer": format!("customer-{n:04}"), "invoice": 100_000 + n, "cents": 129_900 });
            client.enqueue(&Task::new("invoice:charge", payload.to_string()), options()).await.expect("enqueue");
        }
        let later = options().process_in(Duration::from_secs(7200));
        client.enqueue(&Task::new("invoice:remind", r#"{"customer":"customer-0001"}"#), later).await.expect("schedule");
        let taken = broker.dequeue(&[QueueName::new(QUEUE).unwrap()], 4).await.expect("dequeue");
        let now = clock.now();
        let retry =
            Outcome::Retry { retry_at: now + Duration::from_secs(600), error: LONG_ERROR.to_owned(), is_failure: true };
        broker.finish(&taken[1].message, retry).await.expect("retry");
        broker.finish(&taken[2].message, Outcome::Archive { error: LONG_ERROR.to_owned() }).await.expect("archive");
        let done = &taken[3].message;
        let receipt = br#"{"receipt":"r-000042","ok":true}"#.to_vec();
        broker.write_result(&done.queue, &done.id, receipt.into()).await.expect("a result");
        broker.finish(&taken[3].message, Outcome::Complete).await.expect("complete");
        let host = "worker-eu-west-1a-0042.internal.example.com";
        record_running_server(&broker, host, 424_242, 64, &[(QUEUE, 6)], &taken[0].message, now).await;
        // Only scheduled tasks: nothing waits, so the latency is 0.
        client
            .enqueue(
                &Task::new("report:weekly", "{}"),
                TaskOptions::new().queue("quiet").process_in(Duration::from_secs(60)),
            )
            .await
            .expect("schedule");
        // A workflow whose first task succeeded without retention, so is no longer stored.
        let step = |id: &str, type_name: &str| {
            Flow::task(Task::new(type_name, id.to_owned()), TaskOptions::new().queue("flows").task_id(id))
        };
        let flow = step("fetch", "feed:fetch").then(step("publish", "feed:publish"));
        let workflow = FlowProducer::new(broker.clone()).enqueue(&flow).await.expect("a workflow").id.into_string();
        let fetch = broker.dequeue(&[QueueName::from_static("flows")], 1).await.expect("dequeue");
        broker.finish(&fetch[0].message, Outcome::Done).await.expect("done");
        // Today's counters in six digits, as Go's keys hold them.
        let today = chrono::DateTime::<chrono::Utc>::from(now).format("%Y-%m-%d").to_string();
        for (counter, value) in [("processed", "100003"), ("failed", "12345")] {
            redis
                .command(&[String::from("SET"), format!("asynq:{{{QUEUE}}}:{counter}:{today}"), value.to_owned()])
                .unwrap();
        }

        let config = WebConfig::new(Inspector::new(broker)).refresh(Duration::from_secs(1));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
        let url = format!("http://{}/", listener.local_addr().expect("bound address"));
        let server = tokio::spawn(asynq_web::serve(listener, config, std::future::pending()));
        Self { url, workflow, server, _redis: redis }
    }
}

/// For every table of the page: its id, whether it is wider than its box, whether that box
/// scrolls sideways, and each action button that lies outside the box or the viewport (with
/// the box scrolled to its left end and to its right end). Also whether the page itself is
/// wider than the viewport.
const MEASURE_TABLES: &str = r#"
const out = { page: document.documentElement.scrollWidth, viewport: window.innerWidth, tables: [],
  wide: [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5
    && !e.closest('.table-wrap')).slice(0, 5).map((e) => `${e.tagName}#${e.id}.${e.className}`) };
for (const table of document.querySelectorAll('#view table')) {
  const wrap = table.closest('.table-wrap');
  const overflowX = getComputedStyle(wrap).overflowX;
  const entry = { id: table.id, wider: wrap.scrollWidth > wrap.clientWidth + 0.5, scrolls: overflowX === 'auto' || overflowX === 'scroll',
    buttons: 0, outside: [], widths: [wrap.scrollWidth, wrap.clientWidth],
    columns: [...table.querySelectorAll('thead th')].map((th) => `${th.textContent}:${Math.round(th.getBoundingClientRect().width)}`).join(' ') };
  for (const end of [0, wrap.scrollWidth]) {
    wrap.scrollLeft = end;
    const box = wrap.getBoundingClientRect();
    for (const button of table.querySelectorAll('td.actions button, th.actions')) {
      entry.buttons += 1;
      const r = button.getBoundingClientRect();
      const inBox = r.left >= box.left - 0.5 && r.right <= box.right + 0.5;
      const inViewport = r.left >= -0.5 && r.right <= window.innerWidth + 0.5;
      // What the browser shows at the button's centre: the button itself, not a cell over it.
      const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      const onTop = hit !== null && (hit === button || button.contains(hit));
      if (!inBox || !inViewport || (!onTop && r.top >= 0 && r.bottom <= window.innerHeight)) {
        entry.outside.push(`${button.textContent} at ${Math.round(r.left)}..${Math.round(r.right)} in ${Math.round(box.left)}..${Math.round(box.right)} (scrolled to ${end})`);
      }
    }
  }
  wrap.scrollLeft = 0;
  out.tables.push(entry);
}
return out;
"#;

/// Every chart label (`text.tick`) of the page with whether its box lies inside its chart's.
const MEASURE_LABELS: &str = r#"
const out = [];
for (const chart of document.querySelectorAll('#view .chart svg')) {
  const box = chart.getBoundingClientRect();
  for (const label of chart.querySelectorAll('text.tick')) {
    const r = label.getBoundingClientRect();
    const inside = r.left >= box.left - 0.5 && r.right <= box.right + 0.5 && r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5;
    out.push({ chart: chart.parentElement.id, text: label.textContent, inside, left: r.left, right: r.right, box: [box.left, box.right] });
  }
}
return out;
"#;

/// Asserts that every table of the page keeps its action buttons in sight: within its box and
/// the viewport, on top of what they pass over; at `fit_whole` no table is wider than its box.
async fn assert_actions_in_sight(browser: &Browser, page: &str, fit_whole: bool) -> usize {
    let measured = browser.eval(MEASURE_TABLES, vec![]).await;
    let (width, viewport) = (measured["page"].as_f64().unwrap(), measured["viewport"].as_f64().unwrap());
    assert!(width <= viewport, "{page}: the page is {width} px wide in a {viewport} px viewport: {}", measured["wide"]);
    let mut buttons = 0;
    for table in measured["tables"].as_array().unwrap() {
        let id = table["id"].as_str().unwrap_or_default();
        assert_eq!(table["outside"], json!([]), "{page}: #{id} has actions out of sight at {viewport} px");
        if fit_whole {
            assert_eq!(table["wider"], json!(false), "{page}: #{id} is cut at {viewport} px: {table}");
        } else if table["wider"] == json!(true) {
            assert_eq!(table["scrolls"], json!(true), "{page}: #{id} is wider than its box, which does not scroll");
        }
        buttons += table["buttons"].as_u64().unwrap() as usize;
    }
    buttons
}

/// Asserts that every chart label of the page lies inside its chart and reads as a number
/// should (no `1e-9`, no `NaN`); returns the labels.
async fn assert_labels_whole(browser: &Browser, page: &str) -> Vec<String> {
    let labels = browser.eval(MEASURE_LABELS, vec![]).await;
    let labels = labels.as_array().unwrap();
    assert!(!labels.is_empty(), "{page}: no chart labels");
    for label in labels {
        assert_eq!(label["inside"], json!(true), "{page}: a label sticks out of its chart: {label}");
        let text = label["text"].as_str().unwrap();
        assert!(!text.contains("e-") && !text.contains("NaN") && !text.is_empty(), "{page}: label {text:?}");
    }
    labels.iter().map(|l| l["text"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_table_keeps_its_actions_in_sight_and_every_chart_label_whole() {
    let started = std::time::Instant::now();
    let dash = Dashboard::start().await;
    eprintln!("seeded after {:?}", started.elapsed());
    let browser = Browser::start().await;
    eprintln!("browser after {:?}", started.elapsed());
    let queue_pages: Vec<(String, &str)> = [
        ("pending", "tr[data-task-id]"),
        ("active", "td.actions button"),
        ("scheduled", "tr[data-task-id]"),
        ("retry", "td.actions button[data-action=\"delete\"]"),
        ("archived", "tr[data-task-id]"),
        ("completed", "tr[data-task-id]"),
    ]
    .into_iter()
    .map(|(state, ready)| (format!("#/queues/{QUEUE}/{state}"), ready))
    .collect();
    for (width, height, fit_whole) in [(1280, 800, true), (390, 844, false)] {
        browser.set_viewport(width, height).await;
        // The overview: six-digit counters, a long queue name, Pause and Delete.
        browser.goto(&dash.url).await;
        let row = format!(r#"#queues tr[data-queue="{QUEUE}"] td[data-field="processed"]"#);
        browser.wait_for_text(&row, "the processed count", |t| t == "100,003").await;
        browser.wait_for("#history-chart svg").await;
        let buttons = assert_actions_in_sight(&browser, "the overview", fit_whole).await;
        assert!(buttons >= 5, "the overview's Actions header and each queue's buttons were measured: {buttons}");
        let labels = assert_labels_whole(&browser, "the overview").await;
        assert!(labels.contains(&"200,000".to_owned()), "the axis tops 100,003 with a round 200,000: {labels:?}");
        browser.screenshot(&screenshot_dir().join(format!("web-fit-overview-{width}.png"))).await;

        for (page, ready) in &queue_pages {
            browser.goto(&format!("{}{page}", dash.url)).await;
            browser.wait_for(&format!("#tasks {ready}")).await;
            let buttons = assert_actions_in_sight(&browser, page, fit_whole).await;
            assert!(buttons >= 2, "{page}: the Actions header and a row's buttons were measured");
        }
        browser.screenshot(&screenshot_dir().join(format!("web-fit-tasks-{width}.png"))).await;

        // The last hour's charts: the sizes chart has a line for every state it shows, the
        // quiet queue's latency axis reads 0 and 1 ms.
        browser.goto(&format!("{}#/queues/quiet/scheduled", dash.url)).await;
        for state in ["active", "pending", "scheduled", "retry", "archived", "aggregating", "waiting"] {
            browser.wait_for(&format!(r#"#series-sizes svg polyline[data-series="{state}"]"#)).await;
        }
        browser.wait_for("#series-latency svg").await;
        let labels = assert_labels_whole(&browser, "the quiet queue").await;
        assert!(labels.contains(&"1 ms".to_owned()) && labels.contains(&"0 ms".to_owned()), "{labels:?}");
        browser.goto(&format!("{}#/queues/{QUEUE}/pending", dash.url)).await;
        browser.wait_for("#series-latency svg polyline").await;
        assert_labels_whole(&browser, QUEUE).await;
        browser.screenshot(&screenshot_dir().join(format!("web-fit-charts-{width}.png"))).await;
    }

    // A workflow task that succeeded without retention keeps its type and shows as succeeded.
    browser.set_viewport(1280, 800).await;
    browser.goto(&format!("{}#/workflows/{}", dash.url, dash.workflow)).await;
    let fetch = r#"#workflow-graph .graph-node[data-task-id="fetch"]"#;
    browser.wait_for(&format!("{fetch}.state-succeeded")).await;
    assert_eq!(browser.text(&format!("{fetch} .graph-label")).await, "feed:fetch");
    assert_eq!(browser.text(&format!("{fetch} .graph-detail")).await, "succeeded");
    assert_eq!(browser.text(r#"#workflow-tasks tr[data-task-id="fetch"] td[data-field="type"]"#).await, "feed:fetch");
    browser.wait_for(r#"#workflow-graph .graph-node.state-pending[data-task-id="publish"]"#).await;
    let stroke: Value =
        browser.eval(&format!("return getComputedStyle(document.querySelector('{fetch} rect')).stroke;"), vec![]).await;
    let completed: Value = browser
        .eval(
            "return getComputedStyle(document.querySelector('.swatch.state-completed'), '::before').backgroundColor;",
            vec![],
        )
        .await;
    assert_eq!(stroke, completed, "drawn in the completed tasks' green, not the grey of a task that is gone");
    browser.screenshot(&screenshot_dir().join("web-workflow-succeeded.png")).await;
}

/// A sharded queue's row of sums (its shards' and the plain queue's of its name) sits right above
/// its shards' rows, which keep their actions; after a reshard the draining shards are marked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_queue_is_shown_above_its_shards() {
    let redis = RedisServer::start();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let broker = Arc::new(redis_broker(&redis.url(), clock).await);
    let inspector = Inspector::from_shared(broker.clone());
    inspector.declare_sharded_queue("orders", 2).await.unwrap();
    let client = Client::from_shared(broker.clone());
    for n in 0..3 {
        client.enqueue(&Task::new("ship", format!("{n}")), TaskOptions::new().queue("orders")).await.unwrap();
    }
    // A producer that does not place tasks on shards (Go's) puts them in the plain queue of the name.
    let plain = Client::new(PlainProducer(asynq_redis::RedisBroker::clone(&broker)));
    plain.enqueue(&Task::new("ship", "go"), TaskOptions::new().queue("orders")).await.unwrap();
    plain.enqueue(&Task::new("mail", "x"), TaskOptions::new().queue("emails")).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let server = tokio::spawn(asynq_web::serve(listener, WebConfig::new(inspector), std::future::pending()));

    let browser = Browser::start().await;
    browser.goto(&url).await;
    let logical = r#"#queues tr[data-sharded="orders"]"#;
    browser.wait_for_text(&format!(r#"{logical} td[data-field="pending"]"#), "4", |text| text == "4").await;
    assert_eq!(browser.text(&format!(r#"{logical} td[data-field="name"]"#)).await, "orders (2 shards)");
    let grouped = format!(r#"{logical} + tr[data-shard-of="orders"] + tr[data-shard-of="orders"]"#);
    assert_eq!(browser.count(&grouped).await, 1, "both shards right below the logical queue");
    assert_eq!(browser.count(r#"#queues tr[data-queue="emails"]:not([data-shard-of])"#).await, 1);
    assert_eq!(browser.count(r#"#queues tr[data-queue="orders"]"#).await, 0, "the plain queue is in the sums");
    assert_eq!(browser.count(r#"#queues tr[data-queue^="orders~"] button[data-action="pause"]"#).await, 2);
    assert_eq!(browser.count(&format!("{logical} button")).await, 0, "actions are the shards'");

    // After a reshard the old shards stay below the logical queue, marked, until they are dropped.
    Inspector::from_shared(broker.clone()).reshard_queue("orders", 3).await.unwrap();
    browser.goto(&url).await;
    let name = format!(r#"{logical} td[data-field="name"]"#);
    browser.wait_for_text(&name, "orders (3 shards, 2 draining)", |text| text.contains("draining")).await;
    assert_eq!(browser.count(r#"#queues tr[data-shard-of="orders"]"#).await, 5);
    let old = r#"#queues tr[data-queue="orders~0"] td[data-field="name"]"#;
    assert_eq!(browser.text(old).await, "orders~0 (draining)");
    server.abort();
}
