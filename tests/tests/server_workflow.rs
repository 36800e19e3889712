//! Workflows run by servers, end to end: a chord's members run side by side, its callback runs
//! once all have succeeded and reads their results in member order, and what follows reads the
//! callback's; a member that fails for good cancels what waits for it, which never runs. On the
//! memory broker (paused time) and on a real redis-server, with the callback in another queue
//! than its members, so its release goes through the relay. A workflow cancelled while a task
//! runs ends, its running task archived rather than retried.

use asynq_client::{FlowProducer, Task, TaskOptions, TaskState, WorkflowState};
use asynq_core::broker::Workflows;
use asynq_core::broker::{Inspect, WorkerBroker};
use asynq_core::workflow::{
    CancelMark, DagTask, Flow, PARENT_FAILED_ERROR, ParentOutcome, WORKFLOW_CANCELLED_ERROR, WORKFLOW_STOPPED_ERROR,
    is_cancelled_error,
};
use asynq_core::{Clock, QueueName, SystemClock, TaskId};
use asynq_redis::RedisBroker;
use asynq_server::{Config, HandlerError, Server, TaskContext, handler_fn};
use asynq_tests::{Harness, RedisServer};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the handlers did, in order: `(task ID, what its parents wrote)`.
type Log = Arc<Mutex<Vec<(String, Vec<String>)>>>;

/// `resize` writes `<payload>:small`, failing for good on a payload of `broken`; `archive` and
/// `notify` write what their parents wrote, joined by `+`. Each logs its ID and its parents'
/// results.
fn image_pipeline(log: Log) -> impl asynq_server::Handler {
    handler_fn(move |ctx: TaskContext, task: Task| {
        let log = log.clone();
        async move {
            let parents: Vec<String> = ctx
                .parent_results()
                .await
                .map_err(HandlerError::new)?
                .into_iter()
                .map(|parent| match parent.outcome {
                    ParentOutcome::Succeeded { result } => {
                        String::from_utf8_lossy(&result.unwrap_or_default()).into_owned()
                    }
                    other => format!("{other:?}"),
                })
                .collect();
            log.lock().unwrap().push((ctx.task_id().to_owned(), parents.clone()));
            let result = match task.type_name() {
                "resize" if task.payload().as_ref() == b"broken" => {
                    return Err(HandlerError::skip_retry("cannot decode the image"));
                }
                "resize" => format!("{}:small", String::from_utf8_lossy(task.payload())),
                _ => parents.join("+"),
            };
            ctx.result_writer().write(result).await.map_err(HandlerError::new)?;
            Ok(())
        }
    })
}

/// resize a, b and c (in "images"), then archive (in "archives") with their results, then
/// notify (in "archives") with archive's.
fn pipeline(images: [&str; 3]) -> Flow {
    let resize = |name: &str| {
        Flow::task(
            Task::new("resize", name.to_owned()),
            TaskOptions::new().queue("images").task_id(format!("resize-{name}")),
        )
    };
    let archive = Flow::task(Task::new("archive", ""), TaskOptions::new().queue("archives").task_id("archive"));
    let notify = Flow::task(Task::new("notify", ""), TaskOptions::new().queue("archives").task_id("notify"));
    Flow::chord(images.map(resize), archive).then(notify)
}

fn config(clock: Arc<dyn Clock>) -> Config {
    Config {
        concurrency: 3,
        queues: [("images".to_owned(), 1), ("archives".to_owned(), 1)].into(),
        clock,
        task_check_interval: Duration::from_millis(20),
        ..Config::default()
    }
}

/// The log's entry for `id`, once its handler ran.
fn entry(log: &Log, id: &str) -> Option<Vec<String>> {
    log.lock().unwrap().iter().find(|(ran, _)| ran == id).map(|(_, parents)| parents.clone())
}

/// Runs the pipeline of `images` on `broker` until notify ran or, with a broken image, until
/// it is archived (within 30 s of tokio time); returns the log.
async fn run<B: WorkerBroker + Inspect + Workflows + Clone>(
    broker: B,
    clock: Arc<dyn Clock>,
    images: [&str; 3],
) -> Log {
    let producer = FlowProducer::new(broker.clone()).with_clock(clock.clone());
    let log = Log::default();
    let mut server = Server::new(broker.clone(), config(clock)).unwrap();
    server.start(image_pipeline(log.clone())).unwrap();
    producer.enqueue(&pipeline(images)).await.unwrap();
    let broken = images.contains(&"broken");
    let give_up = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let finished = if broken {
            let notify = broker.task_info(&QueueName::from_static("archives"), &TaskId::from_static("notify")).await;
            notify.is_ok_and(|info| info.state == TaskState::Archived)
        } else {
            entry(&log, "notify").is_some()
        };
        if finished {
            break;
        }
        assert!(tokio::time::Instant::now() < give_up, "the workflow did not end: {log:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.shutdown().await;
    log
}

fn check_success(log: &Log) {
    let members = entry(log, "archive").expect("archive ran");
    assert_eq!(members, ["a:small", "b:small", "c:small"], "the callback sees its members' results in member order");
    assert_eq!(entry(log, "notify").expect("notify ran"), ["a:small+b:small+c:small"]);
    let ids: Vec<String> = log.lock().unwrap().iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(ids.len(), 5, "each task ran once: {ids:?}");
    assert_eq!(&ids[3..], ["archive", "notify"]);
}

#[tokio::test(start_paused = true)]
async fn a_chord_then_a_task_run_in_order_with_results_passed_on_the_memory_broker() {
    let h = Harness::new();
    let log = run(h.broker.clone(), h.clock.clone(), ["a", "b", "c"]).await;
    check_success(&log);
}

#[tokio::test(start_paused = true)]
async fn a_failed_member_cancels_the_callback_and_what_follows_on_the_memory_broker() {
    let h = Harness::new();
    let log = run(h.broker.clone(), h.clock.clone(), ["a", "broken", "c"]).await;
    assert!(entry(&log, "archive").is_none() && entry(&log, "notify").is_none(), "{log:?}");
    let archive =
        h.broker.task_info(&QueueName::from_static("archives"), &TaskId::from_static("archive")).await.unwrap();
    assert_eq!(archive.last_error.as_deref(), Some(PARENT_FAILED_ERROR));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chord_then_a_task_run_in_order_with_results_passed_on_redis_across_queues() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let log = run(broker, Arc::new(SystemClock), ["a", "b", "c"]).await;
    check_success(&log);
}

/// A Go server settles a parent without telling anyone: our servers notice within their relay
/// interval. Go's `done` deletes a task that succeeded (its dependent runs), Go's `archive`
/// archives one that failed for good (its dependent is archived unrun).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parents_a_go_server_settles_release_or_cancel_their_dependents() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let step = |id: &str| Flow::task(Task::new("go", id.to_owned()), TaskOptions::new().queue("go").task_id(id));
    let flow =
        Flow::group([step("done-by-go").then(step("after-done")), step("archived-by-go").then(step("after-archive"))]);
    FlowProducer::new(broker.clone()).enqueue(&flow).await.unwrap();
    // What Go's dequeue and its done and archive scripts write.
    let taken = asynq_core::broker::Dequeue::dequeue(&broker, &[QueueName::from_static("go")], 2).await.unwrap();
    assert_eq!(taken.len(), 2);
    for id in ["done-by-go", "archived-by-go"] {
        redis.command(&["LREM", "asynq:{go}:active", "0", id]).unwrap();
        redis.command(&["ZREM", "asynq:{go}:lease", id]).unwrap();
    }
    redis.command(&["DEL", "asynq:{go}:t:done-by-go"]).unwrap();
    redis.command(&["HSET", "asynq:{go}:t:archived-by-go", "state", "archived"]).unwrap();
    redis.command(&["ZADD", "asynq:{go}:archived", "1700000000", "archived-by-go"]).unwrap();

    let log = Log::default();
    let config = Config { queues: [("go".to_owned(), 1)].into(), ..config(Arc::new(SystemClock)) };
    let mut server = Server::new(broker.clone(), config).unwrap();
    server.start(image_pipeline(log.clone())).unwrap();
    let give_up = tokio::time::Instant::now() + asynq_server::WORKFLOW_RELAY_INTERVAL * 10;
    let go = QueueName::from_static("go");
    loop {
        let cancelled = broker.task_info(&go, &TaskId::from_static("after-archive")).await.unwrap().state;
        if entry(&log, "after-done").is_some() && cancelled == TaskState::Archived {
            break;
        }
        assert!(tokio::time::Instant::now() < give_up, "the relay did not notice Go's settles: {log:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(entry(&log, "after-done").unwrap(), [""], "a parent Go deleted succeeded, without a result");
    server.shutdown().await;
}

/// A tracker waits for a whole workflow: each task's outcome, parents first, a task that never
/// ran because a task it waited for failed archived with `PARENT_FAILED_ERROR`.
#[tokio::test(start_paused = true)]
async fn a_tracker_waits_for_a_whole_workflow() {
    let h = Harness::new();
    let mut server = Server::new(h.broker.clone(), config(h.clock.clone())).unwrap();
    server.start(image_pipeline(Log::default())).unwrap();
    let workflow = FlowProducer::new(h.broker.clone())
        .with_clock(h.clock.clone())
        .enqueue(&pipeline(["a", "broken", "c"]))
        .await
        .unwrap();
    let outcomes =
        asynq_client::Tracker::new(h.broker.clone()).wait_workflow(&workflow, Duration::from_secs(60)).await.unwrap();
    let states: Vec<Option<TaskState>> = outcomes.iter().map(|outcome| outcome.state()).collect();
    let archived = Some(TaskState::Archived);
    assert_eq!(states, [None, archived, None, archived, archived], "resize a and c succeeded without retention");
    let notify = outcomes[4].info().unwrap();
    assert_eq!(notify.last_error.as_deref(), Some(PARENT_FAILED_ERROR));
    server.shutdown().await;
}

/// `block` runs until its attempt is cancelled, then fails (so that, but for its workflow's
/// cancel, it would be retried); any other type succeeds. Each logs its ID as it starts.
fn blocking(log: Log) -> impl asynq_server::Handler {
    handler_fn(move |ctx: TaskContext, task: Task| {
        let log = log.clone();
        async move {
            log.lock().unwrap().push((ctx.task_id().to_owned(), Vec::new()));
            if task.type_name() == "block" {
                ctx.cancelled().await;
                return Err(HandlerError::new("stopped by its cancel"));
            }
            Ok(())
        }
    })
}

/// Waits (30 s of tokio time at most) until task `id` of `queue` is in `state`.
async fn until_state<B: Inspect>(broker: &B, queue: &str, id: &str, state: TaskState) {
    let give_up = tokio::time::Instant::now() + Duration::from_secs(30);
    let (queue, id) = (QueueName::new(queue).unwrap(), TaskId::new(id).unwrap());
    loop {
        if broker.task_info(&queue, &id).await.is_ok_and(|info| info.state == state) {
            return;
        }
        assert!(tokio::time::Instant::now() < give_up, "task {id} never became {state:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (30 s of tokio time at most) until the handler of task `id` has started.
async fn until_started(log: &Log, id: &str) {
    let give_up = tokio::time::Instant::now() + Duration::from_secs(30);
    while !log.lock().unwrap().iter().any(|(started, _)| started == id) {
        assert!(tokio::time::Instant::now() < give_up, "task {id} never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A workflow cancelled while its first task runs ends: the running task is stopped and
/// archived, never retried; the tasks waiting are archived unrun; the workflow reads
/// `cancelled`; a tracker's wait ends with every outcome saying so; a second cancel writes
/// nothing and reports what the first did.
async fn cancel_while_running<B>(broker: B, clock: Arc<dyn Clock>)
where
    B: WorkerBroker + Inspect + Workflows + asynq_core::broker::OperatorBroker + asynq_core::broker::Wait + Clone,
    B: asynq_core::broker::Cancel,
{
    let step = |kind: &str, id: &str| Flow::task(Task::new(kind, ""), TaskOptions::new().queue("images").task_id(id));
    let flow = step("block", "running").then(step("next", "waiting")).then(step("next", "last"));
    let workflow = FlowProducer::new(broker.clone()).with_clock(clock.clone()).enqueue(&flow).await.unwrap();
    let log = Log::default();
    let mut server = Server::new(broker.clone(), config(clock)).unwrap();
    server.start(blocking(log.clone())).unwrap();
    // Its handler runs (not merely its state reads active: a server that took it checks the
    // workflow's cancel mark before running it, and would archive it unrun).
    until_started(&log, "running").await;

    let inspector = asynq_client::Inspector::new(broker.clone());
    let done = inspector.cancel_workflow(workflow.id.as_str()).await.unwrap();
    assert_eq!((done.archived, done.stopping), (2, 1));
    assert_eq!(inspector.workflow(workflow.id.as_str()).await.unwrap().state(), WorkflowState::Cancelled);
    let outcomes =
        asynq_client::Tracker::new(broker.clone()).wait_workflow(&workflow, Duration::from_secs(30)).await.unwrap();
    let errors: Vec<String> = outcomes
        .iter()
        .map(|outcome| {
            let info = outcome.info().expect("each task is archived");
            assert_eq!(info.state, TaskState::Archived, "{info:?}");
            info.last_error.clone().unwrap_or_default()
        })
        .collect();
    assert!(errors.iter().all(|error| is_cancelled_error(error)), "{errors:?}");
    assert!(errors[0].starts_with(WORKFLOW_STOPPED_ERROR), "{errors:?}");
    assert_eq!(&errors[1..], [WORKFLOW_CANCELLED_ERROR, WORKFLOW_CANCELLED_ERROR]);
    let running = broker.task_info(&QueueName::from_static("images"), &TaskId::from_static("running")).await.unwrap();
    assert_eq!(running.retried, 0, "the stopped task was not retried");

    let again = inspector.cancel_workflow(workflow.id.as_str()).await.unwrap();
    assert_eq!(again, done, "a second cancel reports what the first did");
    let listed = inspector.workflows(asynq_core::broker::Page::default()).await.unwrap();
    assert!(listed.iter().any(|w| w.id == workflow.id && w.cancelled), "{listed:?}");
    let ran: Vec<String> = log.lock().unwrap().iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(ran, ["running"], "only the first task ever ran");
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_workflow_cancelled_while_a_task_runs_ends_on_the_memory_broker() {
    let h = Harness::new();
    cancel_while_running(h.broker.clone(), h.clock.clone()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_cancelled_while_a_task_runs_ends_on_redis() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    cancel_while_running(broker, Arc::new(SystemClock)).await;
}

/// A task of a cancelled workflow that a server picks up later (one a cancel did not reach) is
/// archived unrun, and what waits for it never runs.
async fn cancelled_tasks_picked_up_later_do_not_run<B>(broker: B, clock: Arc<dyn Clock>)
where
    B: WorkerBroker + Inspect + Workflows + Clone,
{
    let step = |id: &str| Flow::task(Task::new("next", ""), TaskOptions::new().queue("images").task_id(id));
    let workflow =
        FlowProducer::new(broker.clone()).with_clock(clock.clone()).enqueue(&step("root").then(step("child"))).await;
    let workflow = workflow.unwrap();
    assert_eq!(broker.mark_cancelled(&workflow.id).await.unwrap(), CancelMark::Marked);
    let log = Log::default();
    let mut server = Server::new(broker.clone(), config(clock)).unwrap();
    server.start(blocking(log.clone())).unwrap();
    until_state(&broker, "images", "child", TaskState::Archived).await;
    let root = broker.task_info(&QueueName::from_static("images"), &TaskId::from_static("root")).await.unwrap();
    assert_eq!((root.state, root.last_error.as_deref()), (TaskState::Archived, Some(WORKFLOW_CANCELLED_ERROR)));
    assert!(log.lock().unwrap().is_empty(), "nothing ran: {log:?}");
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn tasks_of_a_cancelled_workflow_picked_up_later_do_not_run_on_the_memory_broker() {
    let h = Harness::new();
    cancelled_tasks_picked_up_later_do_not_run(h.broker.clone(), h.clock.clone()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_of_a_cancelled_workflow_picked_up_later_do_not_run_on_redis() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    cancelled_tasks_picked_up_later_do_not_run(broker, Arc::new(SystemClock)).await;
}

/// A DAG's task names hold within one run: the same definition enqueued twice stores two runs
/// with their own task IDs, each run's dependent reads its own parent's result, and the report
/// and the enqueue name each task. A task ID the caller set holds for every run, so a second
/// run of a DAG with one conflicts, naming it, and stores nothing.
async fn a_dag_runs_twice<B>(broker: B, clock: Arc<dyn Clock>)
where
    B: WorkerBroker + Inspect + Workflows + asynq_core::broker::OperatorBroker + asynq_core::broker::Wait + Clone,
    B: asynq_core::broker::Cancel,
{
    let dag = |image: &str| {
        Flow::dag([
            DagTask::new("fetch", Task::new("resize", image.to_owned()), TaskOptions::new().queue("images")),
            DagTask::new("join", Task::new("archive", ""), TaskOptions::new().queue("images")).after(["fetch"]),
        ])
    };
    let producer = FlowProducer::new(broker.clone()).with_clock(clock.clone());
    let first = producer.enqueue(&dag("a")).await.unwrap();
    let second = producer.enqueue(&dag("b")).await.expect("the same DAG enqueued again");
    assert_ne!(first.names["join"], second.names["join"], "each run has its own task IDs");
    assert_eq!(first.names.keys().collect::<Vec<_>>(), ["fetch", "join"]);

    let log = Log::default();
    let mut server = Server::new(broker.clone(), config(clock)).unwrap();
    server.start(image_pipeline(log.clone())).unwrap();
    let tracker = asynq_client::Tracker::new(broker.clone());
    for run in [&first, &second] {
        tracker.wait_workflow(run, Duration::from_secs(30)).await.unwrap();
    }
    assert_eq!(entry(&log, first.names["join"].id.as_str()).unwrap(), ["a:small"]);
    assert_eq!(entry(&log, second.names["join"].id.as_str()).unwrap(), ["b:small"]);
    let report = asynq_client::Inspector::new(broker.clone()).workflow(second.id.as_str()).await.unwrap();
    let names: Vec<(Option<&str>, &TaskId)> =
        report.tasks.iter().map(|task| (task.name.as_deref(), &task.task.id)).collect();
    assert_eq!(names, [(Some("fetch"), &second.names["fetch"].id), (Some("join"), &second.names["join"].id)]);

    let fixed = || {
        Flow::dag([DagTask::new(
            "report",
            Task::new("never", ""),
            TaskOptions::new().queue("idle").task_id("report-1"),
        )])
    };
    producer.enqueue(&fixed()).await.unwrap();
    let inspector = asynq_client::Inspector::new(broker.clone());
    let kept = inspector.workflows(asynq_core::broker::Page::default()).await.unwrap().len();
    match producer.enqueue(&fixed()).await {
        Err(e @ asynq_core::Error::TaskIdConflict { .. }) => {
            assert_eq!(e.to_string(), r#"task ID conflicts with another task: queue "idle", id "report-1""#);
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(inspector.workflows(asynq_core::broker::Page::default()).await.unwrap().len(), kept, "no record");
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_dag_runs_twice_on_the_memory_broker() {
    let h = Harness::new();
    a_dag_runs_twice(h.broker.clone(), h.clock.clone()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dag_runs_twice_on_redis() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    a_dag_runs_twice(broker, Arc::new(SystemClock)).await;
}

/// Go's `asynq queue rm --force` deletes a queue's task hashes and lists but not our waiting
/// tasks: a task whose parent vanished so never runs, in the removed queue or another one; our
/// servers' relay archives it with an error naming the parent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dependents_of_a_parent_go_removed_with_its_queue_are_archived_naming_it() {
    let redis = RedisServer::start();
    let broker = RedisBroker::connect(&redis.url()).await.unwrap();
    let step =
        |queue: &str, id: &str| Flow::task(Task::new("go", id.to_owned()), TaskOptions::new().queue(queue).task_id(id));
    let flow = step("gone", "root").then(Flow::group([step("gone", "after-root"), step("kept", "elsewhere")]));
    FlowProducer::new(broker.clone()).enqueue(&flow).await.unwrap();
    // What Go's removeQueueForce writes: every task hash its lists name, the lists, and the
    // queue's name out of asynq:queues.
    redis.command(&["DEL", "asynq:{gone}:t:root"]).unwrap();
    for list in ["pending", "active", "scheduled", "retry", "archived", "lease"] {
        redis.command(&["DEL", &format!("asynq:{{gone}}:{list}")]).unwrap();
    }
    redis.command(&["SREM", "asynq:queues", "gone"]).unwrap();

    let log = Log::default();
    let config =
        Config { queues: [("gone".to_owned(), 1), ("kept".to_owned(), 1)].into(), ..config(Arc::new(SystemClock)) };
    let mut server = Server::new(broker.clone(), config).unwrap();
    server.start(image_pipeline(log.clone())).unwrap();
    let give_up = tokio::time::Instant::now() + asynq_server::WORKFLOW_RELAY_INTERVAL * 10;
    let kept = QueueName::from_static("kept");
    loop {
        let elsewhere = broker.task_info(&kept, &TaskId::from_static("elsewhere")).await.unwrap();
        let state = redis.command(&["HGET", "asynq:{gone}:t:after-root", "state"]).unwrap();
        if elsewhere.state == TaskState::Archived && state.as_str() == Some("archived") {
            let root = asynq_core::workflow::TaskRef {
                queue: QueueName::from_static("gone"),
                id: TaskId::from_static("root"),
            };
            assert_eq!(elsewhere.last_error, Some(asynq_core::workflow::parent_vanished_error(&root)));
            break;
        }
        assert!(tokio::time::Instant::now() < give_up, "the relay did not notice the removal: {log:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.shutdown().await;
    assert!(log.lock().unwrap().is_empty(), "nothing ran: {log:?}");
}
