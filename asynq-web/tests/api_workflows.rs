//! The dashboard's workflow API, driven in-process through the router: listing, one
//! workflow's graph and pages of its tasks, cancelling.
#![allow(clippy::disallowed_methods)] // a test reads the wall clock as it likes

use asynq_client::{Client, FlowProducer, Inspector, Task, TaskOptions};
use asynq_core::workflow::{Flow, WORKFLOW_CANCELLED_ERROR};
use asynq_core::{Clock, Progress, QueueName, SimulatedClock, SystemClock, TaskId};
use asynq_memory::MemoryBroker;
use asynq_tests::{RedisServer, redis_broker};
use asynq_web::WebConfig;
use axum::body::Bytes;
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

mod support;
use support::{Web, ids, queue};

/// A step of a workflow in queue `queue`, with task ID `id`.
fn step(queue: &str, id: &str) -> Flow {
    Flow::task(Task::new("media:step", id.to_owned()), TaskOptions::new().queue(queue).task_id(id))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflows_are_listed_shown_with_their_edges_and_cancelled() {
    use asynq_core::broker::{Dequeue, Outcome};
    let redis = RedisServer::start();
    let clock = Arc::new(SimulatedClock::new(SystemClock.now()));
    let broker = redis_broker(&redis.url(), clock.clone()).await;
    let producer = FlowProducer::new(broker.clone());
    let solo = producer.enqueue(&step("misc", "solo")).await.unwrap().id.into_string();
    clock.advance(Duration::from_secs(10));
    // A chord of three members, then a chain of two.
    let kept = Flow::task(
        Task::new("media:step", "m1"),
        TaskOptions::new().queue("media").task_id("m1").retention(Duration::from_secs(3600)),
    );
    let chord = Flow::chord([kept, step("media", "m2"), step("media", "m3")], step("media", "merge"));
    let media = producer.enqueue(&chord.then(step("media", "publish"))).await.unwrap().id.into_string();
    let taken = broker.dequeue(&[QueueName::from_static("media")], 3).await.unwrap();
    let message = |id: &str| &taken.iter().find(|t| t.message.id == id).expect("a member was taken").message;
    let (q, m1) = (QueueName::from_static("media"), TaskId::from_static("m1"));
    broker.write_result(&q, &m1, Bytes::from_static(b"thumb.png")).await.unwrap();
    broker.finish(message("m1"), Outcome::Complete).await.unwrap();
    broker.finish(message("m2"), Outcome::Done).await.unwrap();
    let report = Progress::new(0.5, "encoding", clock.now()).unwrap();
    broker.write_progress(&q, &TaskId::from_static("m3"), &report).await.unwrap();
    let web = Web::with_session(WebConfig::new(Inspector::new(broker.clone()))).await;

    // The list: newest first, with sizes and states, paged.
    let list = web.read("/api/workflows").await;
    let rows: Vec<(&str, u64, &str)> = list["workflows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["id"].as_str().unwrap(), w["tasks"].as_u64().unwrap(), w["state"].as_str().unwrap()))
        .collect();
    assert_eq!(rows, [(media.as_str(), 5, "running"), (solo.as_str(), 1, "running")]);
    assert_eq!((&list["has_next"], &list["total"]), (&json!(false), &json!(2)));
    let first = web.read("/api/workflows?size=1").await;
    assert_eq!(first["total"], 2, "the count of every workflow kept, whatever the page size");
    assert_eq!((first["workflows"][0]["id"].as_str(), &first["has_next"]), (Some(media.as_str()), &json!(true)));
    let second = web.read("/api/workflows?size=1&page=2").await;
    assert_eq!((second["workflows"][0]["id"].as_str(), &second["has_next"]), (Some(solo.as_str()), &json!(false)));

    // One workflow: its state, counts, graph (every task with its parents) and a page of tasks.
    let shown = web.read(&format!("/api/workflows/{media}")).await;
    assert_eq!((&shown["state"], &shown["total"], &shown["graph_limit"]), (&json!("running"), &json!(5), &json!(300)));
    assert_eq!(shown["counts"], json!({ "active": 1, "completed": 1, "succeeded": 1, "waiting": 2 }));
    let graph = shown["graph"].as_array().expect("a workflow of five tasks is drawn");
    let edges: Vec<(&str, &str, Value)> =
        graph.iter().map(|t| (t["id"].as_str().unwrap(), t["state"].as_str().unwrap(), t["parents"].clone())).collect();
    assert_eq!(
        edges,
        [
            ("m1", "completed", json!([])),
            ("m2", "succeeded", json!([])),
            ("m3", "active", json!([])),
            ("merge", "waiting", json!([0, 1, 2])),
            ("publish", "waiting", json!([3])),
        ]
    );
    assert_eq!(shown["tasks"], shown["graph"], "one page holds every task");
    let m1 = &graph[0];
    assert_eq!(
        (&m1["type"], &m1["result_size"], &m1["result_preview"]),
        (&json!("media:step"), &json!(9), &json!("thumb.png"))
    );
    assert_eq!(
        (&graph[1]["type"], &graph[1]["queue"]),
        (&json!("media:step"), &json!("media")),
        "a task that succeeded without retention keeps its type"
    );
    assert_eq!(
        (&graph[2]["progress"]["fraction"], &graph[2]["progress"]["message"]),
        (&json!(0.5), &json!("encoding"))
    );
    let page = web.read(&format!("/api/workflows/{media}?page=2&size=3")).await;
    let indices: Vec<&Value> = page["tasks"].as_array().unwrap().iter().map(|t| &t["index"]).collect();
    assert_eq!((indices, &page["has_next"]), (vec![&json!(3), &json!(4)], &json!(false)));

    assert_eq!(web.get("/api/workflows/nope").await.error(StatusCode::NOT_FOUND), "workflow_not_found");
    assert_eq!(web.post("/api/workflows/nope/cancel", None).await.error(StatusCode::NOT_FOUND), "workflow_not_found");
    assert_eq!(web.get("/api/workflows/%20").await.error(StatusCode::BAD_REQUEST), "invalid_workflow_id");
    assert_eq!(web.get("/api/workflows?size=0").await.error(StatusCode::BAD_REQUEST), "invalid_page_size");

    // Read-only: no cancel.
    let read_only = Web::with_session(WebConfig::new(Inspector::new(broker.clone())).read_only(true)).await;
    let refused = read_only.post(&format!("/api/workflows/{solo}/cancel"), None).await;
    assert_eq!(refused.error(StatusCode::FORBIDDEN), "read_only");
    assert_eq!(web.read(&format!("/api/workflows/{solo}")).await["state"], "running");

    // Cancelled: what is still to run is archived, what runs is asked to stop.
    assert_eq!(web.act(&format!("/api/workflows/{solo}/cancel"), None).await, json!({ "archived": 1, "stopping": 0 }));
    assert_eq!(web.read(&format!("/api/workflows/{solo}")).await["state"], "cancelled");
    let done = web.act(&format!("/api/workflows/{media}/cancel"), None).await;
    assert_eq!(done["stopping"], 1, "m3 runs: {done}");
    let merge = &web.read(&format!("/api/workflows/{media}")).await["graph"][3];
    assert_eq!((&merge["state"], &merge["last_error"]), (&json!("archived"), &json!(WORKFLOW_CANCELLED_ERROR)));
    // A task deleted is gone with no outcome recorded, not succeeded; it keeps its type.
    web.act("/api/queues/misc/tasks/solo/delete", None).await;
    let solo_task = &web.read(&format!("/api/workflows/{solo}")).await["graph"][0];
    assert_eq!((&solo_task["state"], &solo_task["type"]), (&json!("unrecorded"), &json!("media:step")));
}

#[tokio::test]
async fn a_workflow_too_large_to_draw_comes_without_its_graph_and_pages_its_tasks() {
    let broker = MemoryBroker::new();
    let members: Vec<Flow> = (0..301).map(|n| step("wide", &format!("member-{n}"))).collect();
    let flow = Flow::chord(members, step("wide", "callback"));
    let id = FlowProducer::new(broker.clone()).enqueue(&flow).await.unwrap().id.into_string();
    let web = Web::with_session(WebConfig::new(Inspector::new(broker))).await;

    let listed = web.read("/api/workflows").await;
    assert_eq!((&listed["workflows"][0]["tasks"], &listed["workflows"][0]["state"]), (&json!(302), &Value::Null));
    let shown = web.read(&format!("/api/workflows/{id}?page=4&size=100")).await;
    assert_eq!((&shown["total"], &shown["graph"], &shown["state"]), (&json!(302), &Value::Null, &json!("running")));
    assert_eq!(shown["counts"], json!({ "pending": 301, "waiting": 1 }));
    let tasks = shown["tasks"].as_array().unwrap();
    assert_eq!(tasks.iter().map(|t| t["index"].as_u64().unwrap()).collect::<Vec<_>>(), [300, 301]);
    assert_eq!(tasks[1]["parents"].as_array().map(Vec::len), Some(301));
    assert_eq!(shown["has_next"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_workflow_tasks_and_priorities_are_shown() {
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(SystemClock)).await;
    let flow = step("steps", "first").then(step("steps", "second"));
    let workflow = FlowProducer::new(broker.clone()).enqueue(&flow).await.unwrap().id.into_string();
    let client = Client::new(broker.clone());
    let steps = TaskOptions::new().queue("steps");
    client.enqueue(&Task::new("report:user", "7"), steps.clone().task_id("vip").priority(8)).await.unwrap();
    client.enqueue(&Task::new("report:all", ""), steps.task_id("backfill").priority(-5)).await.unwrap();
    let web = Web::with_session(WebConfig::new(Inspector::new(broker))).await;

    // The queue counts the waiting task apart from its size, which counts Go's states.
    let queue = &web.read("/api/queues/steps").await["queue"];
    assert_eq!((&queue["waiting"], &queue["pending"], &queue["size"]), (&json!(1), &json!(3), &json!(3)), "{queue}");
    assert_eq!(self::queue(&web.read("/api/queues").await, "steps")["waiting"], 1);

    // Listed in its own state, with its workflow; its page says so too.
    let waiting = web.read("/api/queues/steps/states/waiting/tasks").await;
    assert_eq!((ids(&waiting), &waiting["total"]), (vec!["second".to_owned()], &json!(1)));
    assert_eq!(
        (&waiting["tasks"][0]["state"], &waiting["tasks"][0]["workflow"]),
        (&json!("waiting"), &json!(workflow))
    );
    let second = web.read("/api/queues/steps/tasks/second").await;
    assert_eq!((&second["state"], &second["workflow"]), (&json!("waiting"), &json!(workflow)));
    // It takes no action of its own (its workflow's page cancels it).
    for action in ["run", "archive", "delete"] {
        let refused = web.post(&format!("/api/queues/steps/tasks/second/{action}"), None).await;
        assert_eq!(refused.error(StatusCode::CONFLICT), "failed_precondition", "{action}");
    }
    assert_eq!(web.read("/api/queues/steps/tasks/second").await["state"], "waiting");

    // Pending tasks in the order they run, each with its priority.
    let pending = web.read("/api/queues/steps/states/pending/tasks").await;
    let listed: Vec<(&str, &Value)> =
        pending["tasks"].as_array().unwrap().iter().map(|t| (t["id"].as_str().unwrap(), &t["priority"])).collect();
    assert_eq!(listed, [("vip", &json!(8)), ("first", &json!(0)), ("backfill", &json!(-5))]);
    let vip = web.read("/api/queues/steps/tasks/vip").await;
    assert_eq!((&vip["priority"], &vip["workflow"]), (&json!(8), &Value::Null));
    assert_eq!(web.read("/api/queues/steps/tasks/first").await["workflow"], json!(workflow));
}

/// A task that is no longer stored shows what the broker recorded of how it settled: failed
/// with its error, succeeded with its result; one a Go server ran (Go records no outcome) shows
/// that none was recorded, with its type. The workflow's state follows the recorded failures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_no_longer_stored_show_their_recorded_outcomes() {
    use asynq_core::broker::{Dequeue, Outcome};
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(SystemClock)).await;
    let producer = FlowProducer::new(broker.clone());
    let step = |id: &str, type_name: &str| {
        Flow::task(Task::new(type_name, id.to_owned()), TaskOptions::new().queue("flows").task_id(id))
    };
    let queue = QueueName::from_static("flows");
    // Failed, then deleted: only its recorded outcome remains.
    let failed = producer.enqueue(&step("fetch", "feed:fetch")).await.unwrap();
    let taken = broker.dequeue(std::slice::from_ref(&queue), 1).await.unwrap();
    broker.finish(&taken[0].message, Outcome::Archive { error: "feed unreachable".to_owned() }).await.unwrap();
    // Succeeded with a result; its dependent then run by a Go server, which deletes a task that
    // succeeded without retention and records nothing else.
    let go = producer.enqueue(&step("render", "page:render").then(step("publish", "page:publish"))).await.unwrap();
    let taken = broker.dequeue(std::slice::from_ref(&queue), 1).await.unwrap();
    broker.write_result(&queue, &TaskId::from_static("render"), Bytes::from_static(b"page.html")).await.unwrap();
    broker.finish(&taken[0].message, Outcome::Done).await.unwrap();
    assert_eq!(redis.command(&["LREM", "asynq:{flows}:pending", "0", "publish"]).unwrap().as_int(), Some(1));
    assert_eq!(redis.command(&["DEL", "asynq:{flows}:t:publish"]).unwrap().as_int(), Some(1));
    let web = Web::with_session(WebConfig::new(Inspector::new(broker))).await;
    web.act("/api/queues/flows/tasks/fetch/delete", None).await;

    let shown = web.read(&format!("/api/workflows/{}", failed.id)).await;
    let fetch = &shown["graph"][0];
    assert_eq!(
        (&fetch["state"], &fetch["type"], &fetch["last_error"]),
        (&json!("failed"), &json!("feed:fetch"), &json!("feed unreachable"))
    );
    assert_eq!((&shown["state"], &shown["counts"]), (&json!("failed"), &json!({ "failed": 1 })), "not succeeded");

    let shown = web.read(&format!("/api/workflows/{}", go.id)).await;
    let (render, publish) = (&shown["graph"][0], &shown["graph"][1]);
    assert_eq!(
        (&render["state"], &render["result_preview"], &render["result_size"]),
        (&json!("succeeded"), &json!("page.html"), &json!(9))
    );
    assert_eq!((&publish["state"], &publish["type"]), (&json!("unrecorded"), &json!("page:publish")));
    assert_eq!(shown["state"], "succeeded");
}
