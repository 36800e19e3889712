//! Bulk operator actions on Redis go in bounded steps (`asynq_redis::BULK_STEP` tasks per
//! script call), report their progress, leave every task whole when interrupted, and finish
//! when run again.

use asynq_client::{BulkAction, BulkProgress, Client, Inspector, Task, TaskOptions, TaskSet, TaskState};
use asynq_core::{GroupName, SystemClock};
use asynq_redis::BULK_STEP;
use asynq_tests::{RedisServer, redis_broker};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const QUEUE: &str = "bulk";

async fn setup() -> (RedisServer, Client, Inspector) {
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(SystemClock)).await;
    (redis, Client::new(broker.clone()), Inspector::new(broker))
}

/// Enqueues `n` tasks with `options` into [`QUEUE`], in batches; returns their IDs.
async fn enqueue(client: &Client, n: usize, options: TaskOptions) -> Vec<String> {
    let mut ids = Vec::with_capacity(n);
    let tasks: Vec<_> = (0..n).map(|i| (Task::new("job", format!("{i}")), options.clone().queue(QUEUE))).collect();
    for chunk in tasks.chunks(400) {
        for result in client.enqueue_batch(chunk).await {
            ids.push(result.expect("enqueued").id.to_string());
        }
    }
    ids
}

/// Collects the progress reports of one action.
#[derive(Default, Clone)]
struct Reports(Arc<Mutex<Vec<BulkProgress>>>);

impl Reports {
    fn record(&self) -> impl Fn(BulkProgress) + Send + Sync + use<> {
        let reports = self.0.clone();
        move |p| reports.lock().unwrap().push(p)
    }

    fn taken(&self) -> Vec<BulkProgress> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

/// Every report counts up by at most one step, towards a total that holds still, and the last
/// says everything was done.
fn assert_steps(reports: &[BulkProgress], tasks: usize) {
    assert_eq!(reports.len(), tasks.div_ceil(BULK_STEP), "one report per step: {reports:?}");
    let mut done = 0;
    for report in reports {
        assert!(report.done > done && report.done - done <= BULK_STEP, "{reports:?}");
        assert_eq!(report.total, tasks, "{reports:?}");
        done = report.done;
    }
    assert_eq!(done, tasks);
}

fn count_keys(redis: &RedisServer, pattern: &str) -> usize {
    let keys = redis.command(&["KEYS", pattern]).expect("KEYS");
    keys.as_array().map_or(0, |keys| keys.len())
}

#[tokio::test]
async fn bulk_actions_go_in_bounded_steps_and_report_each() {
    let (redis, client, inspector) = setup().await;
    let plain = enqueue(&client, 1_200, TaskOptions::new()).await;
    let prioritized = enqueue(&client, 50, TaskOptions::new().priority(5)).await;
    let tasks = plain.len() + prioritized.len();
    let reports = Reports::default();
    let pending = TaskSet::State(TaskState::Pending);

    let archived = inspector.bulk_action(QUEUE, BulkAction::Archive, &pending, reports.record()).await.unwrap();
    assert_eq!(archived, tasks);
    assert_steps(&reports.taken(), tasks);
    let info = inspector.queue_info(QUEUE).await.unwrap();
    assert_eq!((info.pending, info.archived), (0, tasks));

    let archived_set = TaskSet::State(TaskState::Archived);
    let ran = inspector.bulk_action(QUEUE, BulkAction::Run, &archived_set, reports.record()).await.unwrap();
    assert_eq!(ran, tasks);
    assert_steps(&reports.taken(), tasks);
    let info = inspector.queue_info(QUEUE).await.unwrap();
    assert_eq!((info.pending, info.archived), (tasks, 0));
    let in_set = redis.command(&["ZCARD", "asynq:{bulk}:prioritized"]).unwrap();
    assert_eq!(in_set.as_int(), Some(prioritized.len() as i64), "a run task keeps its priority");

    let deleted = inspector.bulk_action(QUEUE, BulkAction::Delete, &pending, reports.record()).await.unwrap();
    assert_eq!(deleted, tasks);
    assert_steps(&reports.taken(), tasks);
    assert_eq!(count_keys(&redis, "asynq:{bulk}:t:*"), 0, "every task hash is deleted");
    assert_eq!(inspector.queue_info(QUEUE).await.unwrap().pending, 0);
}

#[tokio::test]
async fn a_group_leaves_the_registry_with_its_last_step() {
    let (redis, client, inspector) = setup().await;
    let tasks = BULK_STEP + 200;
    enqueue(&client, tasks, TaskOptions::new().group("daily")).await;
    let group = TaskSet::Group(GroupName::new("daily").unwrap());
    let reports = Reports::default();
    let deleted = inspector.bulk_action(QUEUE, BulkAction::Delete, &group, reports.record()).await.unwrap();
    assert_eq!(deleted, tasks);
    assert_steps(&reports.taken(), tasks);
    let registered = redis.command(&["SISMEMBER", "asynq:{bulk}:groups", "daily"]).unwrap();
    assert_eq!(registered.as_int(), Some(0));
    assert!(inspector.groups(QUEUE).await.unwrap().is_empty());
}

#[tokio::test]
async fn an_interrupted_delete_leaves_whole_tasks_and_finishes_when_run_again() {
    let (redis, client, inspector) = setup().await;
    let tasks = 3 * BULK_STEP;
    let ids = enqueue(&client, tasks, TaskOptions::new().unique(Duration::from_secs(3600))).await;
    let pending = TaskSet::State(TaskState::Pending);

    // Cut the action off once its first step has reported.
    let (first_step, stepped) = tokio::sync::oneshot::channel::<()>();
    let first_step = Mutex::new(Some(first_step));
    let notify = move |_: BulkProgress| {
        if let Some(tx) = first_step.lock().unwrap().take() {
            let _ = tx.send(());
        }
    };
    tokio::select! {
        biased;
        _ = stepped => {}
        result = inspector.bulk_action(QUEUE, BulkAction::Delete, &pending, notify) => {
            panic!("the action finished before it was cut off: {result:?}")
        }
    }

    // Each task is whole (hash, place in the list, uniqueness lock) or wholly gone.
    let listed = redis.command(&["LRANGE", "asynq:{bulk}:pending", "0", "-1"]).unwrap();
    let listed: Vec<String> = listed.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect();
    assert!(listed.len() < tasks && listed.len() >= tasks - 2 * BULK_STEP, "{} left", listed.len());
    let locks = count_keys(&redis, "asynq:{bulk}:unique:*");
    assert_eq!(locks, listed.len(), "a lock for each task left, none for a deleted one");
    for id in &ids {
        let exists = redis.command(&["EXISTS", &format!("asynq:{{bulk}}:t:{id}")]).unwrap().as_int() == Some(1);
        assert_eq!(exists, listed.contains(id), "task {id}");
    }

    let rest = inspector.delete_all(QUEUE, &pending).await.unwrap();
    assert_eq!(rest, listed.len());
    assert_eq!(count_keys(&redis, "asynq:{bulk}:t:*"), 0);
    assert_eq!(count_keys(&redis, "asynq:{bulk}:unique:*"), 0);
}

#[tokio::test]
async fn a_forced_queue_removal_deletes_the_tasks_in_steps() {
    let (redis, client, inspector) = setup().await;
    let pending = enqueue(&client, BULK_STEP + 100, TaskOptions::new()).await.len();
    let scheduled = enqueue(&client, 300, TaskOptions::new().process_in(Duration::from_secs(3600))).await.len();
    let reports = Reports::default();
    inspector.delete_queue_with_progress(QUEUE, true, reports.record()).await.unwrap();
    let reports = reports.taken();
    // One report per step of each state.
    assert_eq!(reports.len(), pending.div_ceil(BULK_STEP) + scheduled.div_ceil(BULK_STEP), "{reports:?}");
    assert!(reports.iter().all(|p| p.total == pending + scheduled), "{reports:?}");
    assert_eq!(reports.last().unwrap().done, pending + scheduled);
    assert!(!inspector.queues().await.unwrap().iter().any(|q| q.as_str() == QUEUE));
    assert_eq!(count_keys(&redis, "asynq:{bulk}:t:*"), 0);
}

#[tokio::test]
async fn bulk_actions_on_groups_keep_the_group_index() {
    let (redis, client, inspector) = setup().await;
    // Past 100 groups, queue info counts aggregating tasks from the index.
    for n in 0..150 {
        enqueue(&client, 2, TaskOptions::new().group(format!("g{n}"))).await;
    }
    enqueue(&client, BULK_STEP + 50, TaskOptions::new().group("big")).await;
    let aggregating = || async { inspector.queue_info(QUEUE).await.unwrap().aggregating };
    assert_eq!(aggregating().await, 300 + BULK_STEP + 50);

    let group = |name: &str| TaskSet::Group(GroupName::new(name).unwrap());
    assert_eq!(inspector.delete_all(QUEUE, &group("big")).await.unwrap(), BULK_STEP + 50);
    assert_eq!(aggregating().await, 300);
    assert_eq!(inspector.archive_all(QUEUE, &group("g0")).await.unwrap(), 2);
    assert_eq!(inspector.run_all(QUEUE, &group("g1")).await.unwrap(), 2);
    assert_eq!(aggregating().await, 296);
    for gone in ["big", "g0", "g1"] {
        let entry = redis.command(&["ZSCORE", "asynq:{bulk}:groups:size", gone]).unwrap();
        assert!(entry.as_str().is_none() && entry.as_int().is_none(), "{gone}: {entry:?}");
    }
}
