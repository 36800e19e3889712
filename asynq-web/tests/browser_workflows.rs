//! The workflow pages in a real headless Chromium, over a real redis-server: the list, a
//! workflow's graph with each task's state, its task table, and waiting tasks elsewhere.
//!
//! Needs Chromium and chromedriver: `cargo xtask test` installs them (see `asynq_tests::browser`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use asynq_client::{Client, FlowProducer, Task, TaskOptions, TaskState};
use asynq_core::broker::{Dequeue, Outcome};
use asynq_core::workflow::Flow;
use asynq_core::{Clock, Progress, QueueName, SystemClock, TaskId};
use asynq_tests::browser::Browser;
use asynq_tests::redis_broker;
use serde_json::{Value, json};

mod support;
use support::dashboard::{Dashboard, accept_confirmations, screenshot_path};

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

/// The workflows list pages through 45 workflows 20 a page: Last goes to the third page (the
/// 5 oldest), which says where it is, and First back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workflows_list_has_first_and_last_page_buttons() {
    let dash = Dashboard::start(None).await;
    let broker = redis_broker(&dash.redis.url(), Arc::new(SystemClock)).await;
    let producer = FlowProducer::new(broker);
    for n in 0..45 {
        let id = format!("report-{n:02}");
        let flow = Flow::task(Task::new("report:build", "{}"), TaskOptions::new().queue("reports").task_id(&id));
        producer.enqueue(&flow).await.expect("a workflow");
    }
    let browser = Browser::start().await;
    browser.set_viewport(1280, 800).await;
    browser.goto(&dash.page("#/workflows")).await;
    let info = "#workflows-page-info";
    browser.wait_for_text(info, "the first page", |t| t == "Page 1 of 3 · 45 workflow(s)").await;
    assert_eq!(browser.count("#workflows tr[data-workflow-id]").await, 20);
    assert!(browser.attr("#workflows-first", "disabled").await.is_some(), "First is off on the first page");

    browser.click("#workflows-last").await;
    browser.wait_for_text(info, "the last page", |t| t.starts_with("Page 3 of 3")).await;
    let rows = "#workflows tr[data-workflow-id]";
    browser.poll("the last page's 5 rows", || async { (browser.count(rows).await == 5).then_some(()) }).await;
    for button in ["#workflows-last", "#workflows-next"] {
        assert!(browser.attr(button, "disabled").await.is_some(), "{button} is off on the last page");
    }
    assert!(browser.attr("#workflows-first", "disabled").await.is_none());
    browser.screenshot(&screenshot_path("workflows-last-page")).await;

    browser.click("#workflows-first").await;
    browser.wait_for_text(info, "the first page again", |t| t.starts_with("Page 1 of 3")).await;
    assert!(browser.attr("#workflows-last", "disabled").await.is_none());
}

/// A workflow task a Go server ran (Go deletes a task that succeeded without retention and
/// records no outcome) shows its type and "settled (outcome not recorded)", in a colour of its
/// own, not as a grey box titled with its ID.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_a_go_server_ran_shows_its_type_and_that_no_outcome_was_recorded() {
    let dash = Dashboard::start(None).await;
    let broker = redis_broker(&dash.redis.url(), Arc::new(SystemClock)).await;
    let step = |id: &str, type_name: &str| {
        Flow::task(Task::new(type_name, id.to_owned()), TaskOptions::new().queue("flows").task_id(id))
    };
    let flow = step("render", "page:render").then(step("publish", "page:publish"));
    let id = FlowProducer::new(broker.clone()).enqueue(&flow).await.expect("a workflow").id.into_string();
    let queue = QueueName::from_static("flows");
    let taken = broker.dequeue(std::slice::from_ref(&queue), 1).await.expect("dequeue");
    broker.finish(&taken[0].message, Outcome::Done).await.expect("done");
    // Go's server takes `publish`, runs it and deletes it.
    for command in [&["LREM", "asynq:{flows}:pending", "0", "publish"][..], &["DEL", "asynq:{flows}:t:publish"]] {
        assert_eq!(dash.redis.command(command).expect("a Go-like move").as_int(), Some(1), "{command:?}");
    }

    let browser = Browser::start().await;
    browser.set_viewport(1280, 800).await;
    browser.goto(&dash.page(&format!("#/workflows/{id}"))).await;
    let publish = r#"#workflow-graph .graph-node[data-task-id="publish"]"#;
    browser.wait_for(&format!("{publish}.state-unrecorded")).await;
    assert_eq!(browser.text(&format!("{publish} .graph-label")).await, "page:publish");
    assert_eq!(browser.text(&format!("{publish} .graph-detail")).await, "settled (not recorded)");
    let row = r#"#workflow-tasks tr[data-task-id="publish"]"#;
    assert_eq!(browser.text(&format!(r#"{row} td[data-field="type"]"#)).await, "page:publish");
    assert_eq!(browser.text(&format!(r#"{row} td[data-field="state"]"#)).await, "settled (outcome not recorded)");
    browser.wait_for(r#"#workflow-graph .graph-node.state-succeeded[data-task-id="render"]"#).await;
    let colours: Value = browser
        .eval(
            &format!(
                "const swatch = (s) => getComputedStyle(document.querySelector(`#workflow-legend .state-${{s}}`), '::before').backgroundColor; \
                 return [getComputedStyle(document.querySelector('{publish} rect')).stroke, swatch('unrecorded')];"
            ),
            vec![],
        )
        .await;
    assert_eq!(colours[0], colours[1], "drawn in the legend's colour for it: {colours}");
    assert_eq!(browser.text("#workflow-summary .badge").await, "succeeded");
    assert!(browser.text("#workflow-legend").await.contains("settled (outcome not recorded)"));
    browser.screenshot(&screenshot_path("workflow-go-ran")).await;
}
