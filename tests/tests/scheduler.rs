//! The scheduler and the periodic task manager on the memory broker, in tokio's paused time:
//! fires come on time for `@every`, five-field specs and time zones; entries and history are
//! published and cleared; replicas enqueue each fire once; the manager follows its provider.

use asynq_client::{Task, TaskOptions, TaskState};
use asynq_core::Error;
use asynq_core::QueueName;
use asynq_core::broker::{Inspect, Page, SchedulerEntry, SchedulerState};
use asynq_memory::MemoryBroker;
use asynq_scheduler::{
    FireOutcome, PeriodicTaskConfig, PeriodicTaskConfigProvider, PeriodicTaskManager, PeriodicTaskManagerConfig,
    ProviderError, Scheduler, SchedulerConfig, SchedulerError, SpecError, SyncReport,
};
use asynq_server::Server;
use asynq_tests::{EPOCH, FlakyBroker, Harness, Recorder, TokioClock, secs};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `offset` seconds after the harness clock's start.
fn at(offset: u64) -> SystemTime {
    UNIX_EPOCH + EPOCH + secs(offset)
}

fn config(h: &Harness) -> SchedulerConfig {
    SchedulerConfig { clock: h.clock.clone(), ..SchedulerConfig::default() }
}

fn scheduler(h: &Harness) -> Scheduler {
    Scheduler::new(h.broker.clone(), config(h)).unwrap()
}

/// The fire times entry `entry_id` recorded, oldest first.
async fn fire_times(broker: &MemoryBroker, entry_id: &str) -> Vec<SystemTime> {
    let page = Page { size: 10_000, number: 0 };
    let events = broker.scheduler_history(entry_id, page).await.unwrap();
    events.into_iter().rev().map(|e| e.enqueued_at).collect()
}

/// The IDs of the pending tasks of `queue`.
async fn pending_ids(broker: &MemoryBroker, queue: &str) -> Vec<String> {
    let page = Page { size: 10_000, number: 0 };
    broker
        .list_tasks(&QueueName::new(queue).unwrap(), TaskState::Pending, page)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.id.into_string())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn an_every_30s_entry_enqueues_on_time() {
    let h = Harness::new();
    let mut s = scheduler(&h);
    let entry =
        s.register("@every 30s", Task::new("metrics:flush", "p"), TaskOptions::new().queue("periodic")).unwrap();
    s.start().unwrap();

    tokio::time::sleep(secs(95)).await;

    assert_eq!(fire_times(&h.broker, &entry).await, [at(30), at(60), at(90)]);
    let tasks =
        h.broker.list_tasks(&QueueName::from_static("periodic"), TaskState::Pending, Page::default()).await.unwrap();
    assert_eq!(tasks.len(), 3);
    assert!(tasks.iter().all(|t| t.type_name == "metrics:flush" && t.payload == "p"));
    s.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_five_field_spec_fires_at_the_matching_minutes() {
    let h = Harness::new();
    let mut s = scheduler(&h);
    let quarter = s.register("*/15 * * * *", Task::new("quarter", ""), TaskOptions::new()).unwrap();
    let at_ten_past = s.register("10 0 * * *", Task::new("daily", ""), TaskOptions::new()).unwrap();
    s.start().unwrap();

    tokio::time::sleep(secs(3_600 + 60)).await;

    assert_eq!(fire_times(&h.broker, &quarter).await, [at(900), at(1_800), at(2_700), at(3_600)]);
    assert_eq!(fire_times(&h.broker, &at_ten_past).await, [at(600)]);
    s.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn cron_fields_are_read_in_the_scheduler_or_spec_time_zone() {
    let h = Harness::new();
    let tokyo = SchedulerConfig { location: "Asia/Tokyo".into(), heartbeat_interval: secs(3_600), ..config(&h) };
    let mut s = Scheduler::new(h.broker.clone(), tokyo).unwrap();
    // 09:00 in Tokyo is 00:00 UTC; the clock starts at 00:00 UTC, so the first fire is a day on.
    let tokyo_nine = s.register("0 9 * * *", Task::new("tokyo", ""), TaskOptions::new()).unwrap();
    // New York is on EST (UTC-5) in November: 09:00 there is 14:00 UTC.
    let new_york_nine =
        s.register("CRON_TZ=America/New_York 0 9 * * *", Task::new("new-york", ""), TaskOptions::new()).unwrap();
    s.start().unwrap();

    tokio::time::sleep(secs(25 * 3_600)).await;

    assert_eq!(fire_times(&h.broker, &new_york_nine).await, [at(14 * 3_600)]);
    assert_eq!(fire_times(&h.broker, &tokyo_nine).await, [at(24 * 3_600)]);
    s.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn history_is_recorded_per_enqueue_and_keeps_the_newest_1000() {
    let h = Harness::new();
    let mut s = scheduler(&h);
    let entry = s.register("@every 1s", Task::new("tick", ""), TaskOptions::new()).unwrap();
    s.start().unwrap();

    tokio::time::sleep(secs(1_003) + Duration::from_millis(500)).await;

    let times = fire_times(&h.broker, &entry).await;
    assert_eq!(times.len(), 1_000);
    assert_eq!((times[0], times[999]), (at(4), at(1_003)));
    let events = h.broker.scheduler_history(&entry, Page { size: 1, number: 0 }).await.unwrap();
    let ids = pending_ids(&h.broker, "default").await;
    assert_eq!(ids.len(), 1_003, "every fire enqueued a task");
    assert!(ids.contains(&events[0].task_id), "the newest event names its task");
    s.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn entries_are_published_by_the_heartbeat_and_cleared_at_shutdown() {
    let h = Harness::new();
    let mut s = scheduler(&h);
    let options = TaskOptions::new().queue("periodic").max_retry(3).timeout(secs(90));
    let entry = s.register("@every 30s", Task::new("report", "r"), options).unwrap();
    s.start().unwrap();
    tokio::task::yield_now().await;

    let published = SchedulerEntry {
        id: entry.clone(),
        spec: "@every 30s".into(),
        task_type: "report".into(),
        task_payload: "r".into(),
        options: vec![r#"Queue("periodic")"#.into(), "MaxRetry(3)".into(), "Timeout(1m30s)".into()],
        next: Some(at(30)),
        prev: None,
    };
    let only = std::slice::from_ref(&published);
    assert_eq!(h.broker.scheduler_entries().await.unwrap(), only, "written at start, never fired");
    assert_eq!(s.entries(), only);

    tokio::time::sleep(secs(45)).await;
    let fired = SchedulerEntry { next: Some(at(60)), prev: Some(at(30)), ..published };
    assert_eq!(h.broker.scheduler_entries().await.unwrap(), [fired]);
    assert_eq!(fire_times(&h.broker, &entry).await.len(), 1);

    s.shutdown().await;
    assert!(h.broker.scheduler_entries().await.unwrap().is_empty());
    assert!(fire_times(&h.broker, &entry).await.is_empty(), "the history is cleared");
    assert_eq!(pending_ids(&h.broker, "periodic").await.len(), 1, "the enqueued task stays");
}

#[tokio::test(start_paused = true)]
async fn dropping_a_started_scheduler_stops_its_timers() {
    let h = Harness::new();
    let mut s = scheduler(&h);
    s.register("@every 10s", Task::new("tick", ""), TaskOptions::new()).unwrap();
    s.start().unwrap();
    tokio::time::sleep(secs(15)).await;

    drop(s);
    tokio::time::sleep(secs(30)).await;
    assert_eq!(pending_ids(&h.broker, "default").await.len(), 1, "only the fire before the drop");
    assert!(h.broker.scheduler_entries().await.unwrap().is_empty(), "the heartbeat removes the entries as it stops");
}

#[tokio::test(start_paused = true)]
async fn three_replicas_enqueue_each_fire_exactly_once() {
    let h = Harness::new();
    let mut replicas: Vec<Scheduler> = (0..3).map(|_| scheduler(&h)).collect();
    let mut entries = Vec::new();
    for s in &mut replicas {
        entries.push(s.register("@every 10s", Task::new("sync", "all"), TaskOptions::new().queue("q")).unwrap());
        s.start().unwrap();
    }

    tokio::time::sleep(secs(65)).await;

    let ids = pending_ids(&h.broker, "q").await;
    assert_eq!(ids.len(), 6, "fires at 10, 20, ..., 60 s, once each");
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 6);
    let mut fired = Vec::new();
    for entry in &entries {
        fired.extend(fire_times(&h.broker, entry).await);
    }
    fired.sort();
    assert_eq!(fired, (1..=6).map(|n| at(10 * n)).collect::<Vec<_>>(), "one replica recorded each fire");
    for s in &mut replicas {
        s.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_lagging_replica_does_not_enqueue_a_fire_whose_task_already_ran() {
    let h = Harness::new();
    // The second replica's clock is 3 s behind: it fires 3 s after the first, by when a worker
    // has run and deleted the first one's task, so its task ID no longer conflicts.
    let lagging_clock = Arc::new(TokioClock::new(UNIX_EPOCH + EPOCH - secs(3)));
    let lagging = SchedulerConfig { clock: lagging_clock, ..config(&h) };
    let mut replicas = [scheduler(&h), Scheduler::new(h.broker.clone(), lagging).unwrap()];
    for s in &mut replicas {
        s.register("@every 10s", Task::new("sync", ""), TaskOptions::new()).unwrap();
        s.start().unwrap();
    }
    let rec = Recorder::default();
    let mut server = Server::new(h.broker.clone(), h.config("default", 2)).unwrap();
    server.start(rec.handler(h.clock.clone(), |_, _| async { Ok(()) })).unwrap();

    tokio::time::sleep(secs(45)).await;

    let calls = rec.calls();
    let ran: Vec<SystemTime> = calls.iter().map(|c| c.at).collect();
    // The lagging replica starts at 23:59:57 by its clock, so it alone has the 00:00:00 fire
    // (3 s in); every later fire ran once, when the first replica enqueued it.
    assert_eq!(ran, [at(3), at(10), at(20), at(30), at(40)]);
    assert_eq!(calls.iter().map(|c| &c.id).collect::<BTreeSet<_>>().len(), 5);
    server.shutdown().await;
    for s in &mut replicas {
        s.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn fires_during_a_broker_outage_are_lost_and_the_next_ones_enqueue() {
    let h = Harness::new();
    let flaky = FlakyBroker::new(h.broker.clone());
    let mut s = Scheduler::new(flaky.clone(), config(&h)).unwrap();
    let entry = s.register("@every 10s", Task::new("tick", ""), TaskOptions::new()).unwrap();
    s.start().unwrap();
    tokio::time::sleep(secs(5)).await;

    flaky.go_down();
    tokio::time::sleep(secs(20)).await;
    assert!(h.broker.queues().await.unwrap().is_empty(), "the fires at 10 s and 20 s failed");
    flaky.come_back();
    tokio::time::sleep(secs(20)).await;

    assert_eq!(fire_times(&h.broker, &entry).await, [at(30), at(40)]);
    assert_eq!(pending_ids(&h.broker, "default").await.len(), 2);
    let published = h.broker.scheduler_entries().await.unwrap();
    assert_eq!(published.iter().map(|e| e.prev).collect::<Vec<_>>(), [Some(at(40))], "the heartbeat resumed");
    s.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_second_replica_finds_the_fire_marked_or_its_task_id_taken() {
    let h = Harness::new();
    let conflicts = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = conflicts.clone();
    let short_marks = SchedulerConfig { dedup_window: secs(1), ..config(&h) };
    let hooked = SchedulerConfig {
        post_enqueue: Some(Arc::new(move |result| {
            if let Err(Error::TaskIdConflict { id, .. }) = result {
                seen.lock().unwrap().push(id.to_string());
            }
        })),
        ..short_marks.clone()
    };
    let (a, b) =
        (Scheduler::new(h.broker.clone(), short_marks).unwrap(), Scheduler::new(h.broker.clone(), hooked).unwrap());
    let task = Task::new("sync", "");
    let entry_a = a.register("@daily", task.clone(), TaskOptions::new()).unwrap();
    let entry_b = b.register("@daily", task, TaskOptions::new()).unwrap();

    let first = a.fire(&entry_a, at(86_400)).await.unwrap();
    let FireOutcome::Enqueued(info) = first else { panic!("expected an enqueue, got {first:?}") };
    let marked = b.fire(&entry_b, at(86_400)).await.unwrap();
    assert_eq!(marked, FireOutcome::AlreadyEnqueued { fire_id: info.id.to_string() });
    assert!(conflicts.lock().unwrap().is_empty(), "the mark stopped it before any enqueue");

    // Once the mark is gone, the task (still pending) holds its ID.
    tokio::time::sleep(secs(2)).await;
    let conflicting = b.fire(&entry_b, at(86_400)).await.unwrap();
    assert_eq!(conflicting, FireOutcome::AlreadyEnqueued { fire_id: info.id.to_string() });
    assert_eq!(*conflicts.lock().unwrap(), [info.id]);

    let another_day = b.fire(&entry_b, at(2 * 86_400)).await.unwrap();
    assert!(matches!(another_day, FireOutcome::Enqueued(_)), "{another_day:?}");
    assert_eq!(pending_ids(&h.broker, "default").await.len(), 2);
    assert!(matches!(a.fire("unknown", at(0)).await, Err(SchedulerError::EntryNotFound { .. })));
}

#[tokio::test(start_paused = true)]
async fn entries_registered_or_unregistered_while_running_start_or_stop_firing() {
    let h = Harness::new();
    let mut s = scheduler(&h);
    let early = s.register("@every 10s", Task::new("early", ""), TaskOptions::new()).unwrap();
    s.start().unwrap();
    tokio::time::sleep(secs(15)).await;
    let late = s.register("@every 10s", Task::new("late", ""), TaskOptions::new()).unwrap();
    s.unregister(&early).unwrap();
    tokio::time::sleep(secs(20)).await;

    assert_eq!(fire_times(&h.broker, &early).await, [at(10)]);
    assert_eq!(fire_times(&h.broker, &late).await, [at(20), at(30)]);
    assert!(matches!(s.unregister(&early), Err(SchedulerError::EntryNotFound { id }) if id == early));
    s.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn hooks_see_every_enqueue_and_its_result() {
    let h = Harness::new();
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let (before, after) = (seen.clone(), seen.clone());
    let hooked = SchedulerConfig {
        pre_enqueue: Some(Arc::new(move |task, _| before.lock().unwrap().push(format!("pre {}", task.type_name())))),
        post_enqueue: Some(Arc::new(move |result| {
            let line = match result {
                Ok(info) => format!("post ok {}", info.type_name),
                Err(e) => format!("post err {e}"),
            };
            after.lock().unwrap().push(line);
        })),
        ..config(&h)
    };
    let mut s = Scheduler::new(h.broker.clone(), hooked).unwrap();
    s.register("@every 10s", Task::new("ok", ""), TaskOptions::new()).unwrap();
    // A fixed task ID conflicts from the second fire on, while the first task is still there.
    s.register("@every 10s", Task::new("fixed", ""), TaskOptions::new().task_id("same")).unwrap();
    s.start().unwrap();
    tokio::time::sleep(secs(25)).await;

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.iter().filter(|l| *l == "pre ok").count(), 2);
    assert_eq!(seen.iter().filter(|l| *l == "post ok ok").count(), 2);
    assert_eq!(seen.iter().filter(|l| *l == "post ok fixed").count(), 1);
    assert_eq!(seen.iter().filter(|l| l.starts_with("post err task ID conflicts")).count(), 1, "{seen:?}");
    s.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn bad_registrations_and_configurations_are_refused_before_anything_runs() {
    let h = Harness::new();
    let s = scheduler(&h);
    let spec_error = |spec: &str| match s.register(spec, Task::new("t", ""), TaskOptions::new()) {
        Err(SchedulerError::InvalidSpec { spec: refused, reason }) if refused == spec => reason,
        other => panic!("expected InvalidSpec for {spec:?}, got {other:?}"),
    };
    assert_eq!(spec_error(""), SpecError::Empty);
    assert_eq!(spec_error("@reboot"), SpecError::UnknownDescriptor("@reboot".into()));
    assert_eq!(spec_error("@every never"), SpecError::InvalidInterval("never".into()));
    assert_eq!(spec_error("TZ=Nowhere/Atlantis 0 * * * *"), SpecError::UnknownTimeZone("Nowhere/Atlantis".into()));
    assert!(matches!(spec_error("0 0 * *"), SpecError::InvalidExpression(_)));
    assert_eq!(spec_error("0 0 30 2 *"), SpecError::NeverFires);
    let bad_task = s.register("@hourly", Task::new(" ", ""), TaskOptions::new());
    assert!(matches!(bad_task, Err(SchedulerError::InvalidTask(Error::InvalidArgument { field: "task type", .. }))));
    let bad_queue = s.register("@hourly", Task::new("t", ""), TaskOptions::new().queue("a{b}"));
    assert!(matches!(bad_queue, Err(SchedulerError::InvalidTask(Error::InvalidArgument { field: "queue", .. }))));
    assert!(s.entries().is_empty(), "nothing was registered");

    let unknown_zone = SchedulerConfig { location: "Mars/Olympus".into(), ..config(&h) };
    let refused = Scheduler::new(h.broker.clone(), unknown_zone);
    assert!(matches!(refused, Err(SchedulerError::InvalidConfig { field: "location", .. })));
    let no_heartbeat = SchedulerConfig { heartbeat_interval: Duration::ZERO, ..config(&h) };
    let refused = Scheduler::new(h.broker.clone(), no_heartbeat);
    assert!(matches!(refused, Err(SchedulerError::InvalidConfig { field: "heartbeat interval", .. })));
}

#[tokio::test(start_paused = true)]
async fn a_scheduler_starts_once_and_not_after_shutdown() {
    let h = Harness::new();
    let mut s = scheduler(&h);
    s.start().unwrap();
    assert!(matches!(s.start(), Err(SchedulerError::AlreadyStarted)));
    s.shutdown().await;
    assert!(matches!(s.start(), Err(SchedulerError::ShutDown)));
    let parts: Vec<&str> = s.id().rsplitn(3, ':').collect();
    assert_eq!(parts[1], std::process::id().to_string(), "host:pid:uuid");
    assert_eq!(parts[0].len(), 36);
}

/// A provider whose configs (or failure) the test changes.
#[derive(Clone)]
struct Configs(Arc<Mutex<Result<Vec<PeriodicTaskConfig>, String>>>);

impl Default for Configs {
    fn default() -> Self {
        Self(Arc::new(Mutex::new(Ok(Vec::new()))))
    }
}

impl Configs {
    fn set(&self, configs: Vec<PeriodicTaskConfig>) {
        *self.0.lock().unwrap() = Ok(configs);
    }

    fn fail(&self, reason: &str) {
        *self.0.lock().unwrap() = Err(reason.to_owned());
    }
}

#[async_trait::async_trait]
impl PeriodicTaskConfigProvider for Configs {
    async fn get_configs(&self) -> Result<Vec<PeriodicTaskConfig>, ProviderError> {
        self.0.lock().unwrap().clone().map_err(Into::into)
    }
}

fn periodic(spec: &str, type_name: &str) -> PeriodicTaskConfig {
    PeriodicTaskConfig::new(spec, Task::new(type_name, ""), TaskOptions::new())
}

/// The task types of the scheduler's entries, with their IDs.
fn registered(manager: &PeriodicTaskManager) -> Vec<(String, String)> {
    let mut entries: Vec<(String, String)> =
        manager.scheduler().entries().into_iter().map(|e| (e.task_type, e.id)).collect();
    entries.sort();
    entries
}

#[tokio::test(start_paused = true)]
async fn the_periodic_task_manager_follows_its_provider() {
    let h = Harness::new();
    let provider = Configs::default();
    provider.set(vec![periodic("@every 10s", "a"), periodic("@hourly", "b")]);
    let mut manager =
        PeriodicTaskManager::new(scheduler(&h), provider.clone(), PeriodicTaskManagerConfig::default()).unwrap();
    manager.start().await.unwrap();
    let before = registered(&manager);
    assert_eq!(before.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(), ["a", "b"]);

    provider.set(vec![periodic("@hourly", "b"), periodic("@every 10s", "c")]);
    tokio::time::sleep(secs(179)).await;
    assert_eq!(registered(&manager), before, "the next sync is 3 min after start");
    tokio::time::sleep(secs(2)).await;
    let after = registered(&manager);
    assert_eq!(after.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(), ["b", "c"]);
    assert_eq!(after[0], before[1], "an unchanged config keeps its entry");

    // The removed entry stopped firing at the sync; the new one fires from then on.
    let a_fired = pending_ids(&h.broker, "default").await.len();
    tokio::time::sleep(secs(30)).await;
    let entries = manager.scheduler().entries();
    let c = entries.iter().find(|e| e.task_type == "c").unwrap();
    assert_eq!(fire_times(&h.broker, &c.id).await, [at(190), at(200), at(210)]);
    assert_eq!(pending_ids(&h.broker, "default").await.len(), a_fired + 3);
    assert_eq!(manager.sync().await.unwrap(), SyncReport::default(), "nothing changed since");
    manager.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_sync_applies_all_or_nothing() {
    let h = Harness::new();
    let provider = Configs::default();
    provider.fail("database down");
    let mut manager =
        PeriodicTaskManager::new(scheduler(&h), provider.clone(), PeriodicTaskManagerConfig::default()).unwrap();
    let refused = manager.start().await;
    assert!(matches!(&refused, Err(SchedulerError::ConfigProvider(e)) if e.to_string() == "database down"));

    provider.set(vec![periodic("@hourly", "a")]);
    manager.start().await.unwrap();
    let before = registered(&manager);

    provider.set(vec![periodic("@daily", "b"), periodic("not a spec", "c")]);
    assert!(matches!(manager.sync().await, Err(SchedulerError::InvalidSpec { spec, .. }) if spec == "not a spec"));
    assert_eq!(registered(&manager), before, "an invalid config changes nothing");

    provider.set(vec![periodic("@daily", "b"), periodic("@daily", "b")]);
    let report = manager.sync().await.unwrap();
    assert_eq!((report.added, report.removed), (1, 1), "a config listed twice is registered once");
    manager.shutdown().await;
}
