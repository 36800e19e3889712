//! Model-based testing of the brokers: proptest generates sequences of client, server-role,
//! operator and clock operations ([`asynq_tests::model::Op`]) and runs each sequence against
//! the reference model, a `MemoryBroker` and a `RedisBroker`; after every step the replies
//! (errors by kind) and everything the inspector shows (queue counts and the tasks of every
//! state) must be equal, and so must the task events each queue's log gained (memory against
//! Redis: the model keeps no log). A failing case is shrunk to a minimal sequence, printed with
//! the step at which the backends parted.
//!
//! Every broker reads its own `SimulatedClock`, advanced identically. One redis-server serves
//! the whole test and is flushed between cases.
//!
//! `ASYNQ_MODEL_CASES` sets the number of generated sequences (of up to 40 operations each), and
//! `ASYNQ_MODEL_BUDGET_SECS` the time the search may take: the search stops at whichever comes
//! first, after at least 20 sequences, and a failure found is shrunk whatever the time. The
//! defaults, 200 sequences in at most 20 s, are the CI profile: a 2-core machine with the other
//! core busy runs fewer sequences, never past a quarter of nextest's 2-minute limit. The full
//! profile runs 5 000, about 11 minutes, so run it with `cargo test`:
//!
//! ```text
//! ASYNQ_MODEL_CASES=5000 ASYNQ_MODEL_BUDGET_SECS=3600 cargo test -p asynq-tests --test model_based -- --nocapture
//! ```
//!
//! With `--nocapture` (nextest: `--no-capture`) a passing run prints how often each kind of
//! operation got each kind of reply, to show what the sequences cover.

use asynq_conformance::fixture::START_SECS;
use asynq_core::broker::EventLog;
use asynq_core::broker::Steps;
use asynq_core::broker::Workflows;
use asynq_core::broker::{ExpiredLease, LeaseStage, Outcome, Page};
use asynq_core::events::{EventCap, EventKind, EventPosition};
use asynq_core::steps::{ParkReason, Parked, StepName, StepRecord};
use asynq_core::time::{from_unix_secs, unix_secs};
use asynq_core::workflow::{DagTask, Flow, OnParentFailure, TaskRef, WorkflowPlan};
use asynq_core::{
    Broker, Clock, EnqueueRequest, FREE_STALLS, QueueName, Replace, SimulatedClock, StoredTask, Task, TaskId, TaskInfo,
    TaskOptions, TaskState, resolve_enqueue,
};
use asynq_memory::MemoryBroker;
use asynq_redis::RedisBroker;
use asynq_tests::model::{
    ErrorKind, FinishWith, GROUPS, IDS, Model, NewTask, OBSERVED_STATES, Observation, Op, PAYLOADS, ParkFor,
    ParkedView, QUEUES, QueueView, RECOVER_RETRY_DELAY, Reply, Row, SIGNALS, STEPS, Set, TASK_TYPE, Target, UNIQUE_TTL,
    When, WorkflowTask, hand, pick_batch, pick_handed,
};
use asynq_tests::{RedisServer, redis_broker};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Generated sequences in the CI profile.
const DEFAULT_CASES: u32 = 200;
/// The time the search may take in the CI profile.
const DEFAULT_BUDGET: Duration = Duration::from_secs(20);
/// Sequences run whatever the budget.
const MIN_CASES: u32 = 20;
/// The longest generated sequence.
const MAX_OPS: usize = 40;
/// A page that holds every task of a queue.
const ALL: Page = Page { size: 1_000, number: 0 };

/// A broker under test, its clock and the last message each task was handed out with (what a
/// worker or the recoverer finishes), most recent last.
struct Backend<B> {
    name: &'static str,
    broker: B,
    clock: SimulatedClock,
    handed: Vec<(String, String)>,
    messages: HashMap<(String, String), StoredTask>,
}

impl<B: Broker + Workflows + Steps> Backend<B> {
    fn new(name: &'static str, broker: B, clock: SimulatedClock) -> Self {
        Self { name, broker, clock, handed: Vec::new(), messages: HashMap::new() }
    }

    fn hand(&mut self, messages: Vec<StoredTask>) -> Vec<(String, String)> {
        let keys: Vec<(String, String)> = messages.iter().map(|m| (m.queue.to_string(), m.id.to_string())).collect();
        hand(&mut self.handed, &keys);
        self.messages.extend(keys.iter().cloned().zip(messages));
        keys
    }

    fn now_plus(&self, secs: u64) -> std::time::SystemTime {
        self.clock.now() + Duration::from_secs(secs)
    }

    fn request(&self, new: &NewTask) -> EnqueueRequest {
        let mut options = TaskOptions::new();
        if new.unique {
            options = options.unique(UNIQUE_TTL);
        }
        options = match new.when {
            When::Now => options,
            When::In(secs) => options.process_in(Duration::from_secs(secs)),
            When::Group(group) => options.group(group),
            When::GroupIn(group, secs) => options.group(group).process_in(Duration::from_secs(secs)),
        };
        self.resolve(new, options)
    }

    /// The request for `task` with `options` (queue, ID, retries and retention are the task's).
    fn resolve(&self, task: &NewTask, options: TaskOptions) -> EnqueueRequest {
        let mut options = options.queue(task.queue).task_id(task.id).max_retry(task.max_retry);
        if task.priority != 0 {
            options = options.priority(i32::from(task.priority));
        }
        if task.retention > 0 {
            options = options.retention(Duration::from_secs(task.retention));
        }
        let payload = Task::new(TASK_TYPE, task.payload.as_bytes().to_vec());
        resolve_enqueue(&payload, &options, self.clock.now(), || unreachable!("the ID is given"))
            .expect("generated options are valid")
    }

    fn outcome(&self, with: FinishWith) -> Outcome {
        match with {
            FinishWith::Done => Outcome::Done,
            FinishWith::Complete => Outcome::Complete,
            FinishWith::Retry { in_secs, is_failure } => {
                Outcome::Retry { retry_at: self.now_plus(in_secs), error: "boom".into(), is_failure }
            }
            FinishWith::Archive => Outcome::Archive { error: "gave up".into() },
            FinishWith::Requeue => Outcome::Requeue,
        }
    }

    async fn apply(&mut self, op: &Op) -> Reply {
        let b = &self.broker;
        match op {
            Op::Enqueue(task) => Reply::of_unit(b.enqueue(self.request(task)).await),
            Op::EnqueueBatch(tasks) => {
                let requests = tasks.iter().map(|t| self.request(t)).collect();
                Reply::Each(b.enqueue_batch(requests).await.into_iter().map(Reply::of_unit).collect())
            }
            Op::FinishBatch(picks) => {
                let items: Vec<(StoredTask, Outcome)> = pick_batch(&self.handed, picks)
                    .into_iter()
                    .map(|(key, with)| (self.messages[&key].clone(), self.outcome(with)))
                    .collect();
                if items.is_empty() {
                    return Reply::Skipped;
                }
                Reply::Each(b.finish_batch(items).await.into_iter().map(Reply::of_unit).collect())
            }
            Op::Dequeue { queues, max } => match b.dequeue(&names(queues), *max).await {
                Ok(taken) => Reply::Tasks(self.hand(taken.into_iter().map(|d| d.message).collect())),
                Err(e) => Reply::Err(ErrorKind::of(&e)),
            },
            Op::Finish { pick, with } => {
                let Some(key) = pick_handed(&self.handed, *pick) else {
                    return Reply::Skipped;
                };
                let message = &self.messages[key];
                Reply::of_unit(b.finish(message, self.outcome(*with)).await)
            }
            Op::Start { pick } => {
                let Some(key) = pick_handed(&self.handed, *pick) else {
                    return Reply::Skipped;
                };
                let message = &self.messages[key];
                let ids = [message.id.clone()];
                match b.extend_leases(&message.queue, &ids).await {
                    Ok(_) => Reply::Ok,
                    Err(e) => Reply::Err(ErrorKind::of(&e)),
                }
            }
            Op::Advance { secs } => {
                self.clock.advance(Duration::from_secs(*secs));
                Reply::Ok
            }
            Op::Forward { queues } => {
                Reply::of_count(b.forward_ready(&names(queues)).await.map(|forwarded| forwarded.moved))
            }
            Op::Recover { queues, wait } => {
                self.clock.advance(Duration::from_secs(*wait));
                let cutoff = from_unix_secs(unix_secs(self.clock.now()) - asynq_tests::model::LEASE_SECS);
                let mut expired = match b.list_lease_expired(&names(queues), cutoff).await {
                    Ok(expired) => expired,
                    Err(e) => return Reply::Err(ErrorKind::of(&e)),
                };
                expired.sort_by(|x, y| (&x.message.queue, &x.message.id).cmp(&(&y.message.queue, &y.message.id)));
                let mut items = Vec::with_capacity(expired.len());
                for ExpiredLease { message, stage, stalls } in &expired {
                    let outcome = if *stage == LeaseStage::Taken {
                        Outcome::Requeue
                    } else if *stalls < FREE_STALLS {
                        Outcome::Stalled
                    } else if message.retries_exhausted() {
                        Outcome::Archive { error: "lease expired".into() }
                    } else {
                        let retry_at = self.now_plus(RECOVER_RETRY_DELAY.as_secs());
                        Outcome::Retry { retry_at, error: "lease expired".into(), is_failure: true }
                    };
                    items.push((message.clone(), outcome));
                }
                if let Some(Err(e)) = b.recover(items, cutoff).await.into_iter().find(Result::is_err) {
                    return Reply::Err(ErrorKind::of(&e));
                }
                Reply::Tasks(self.hand(expired.into_iter().map(|expired| expired.message).collect()))
            }
            Op::Janitor { queue, batch } => {
                Reply::of_count(b.delete_expired_completed(&QueueName::new(*queue).unwrap(), *batch).await)
            }
            Op::RunTask { queue, id } => {
                Reply::of_unit(b.run_task(&QueueName::new(*queue).unwrap(), &TaskId::new(*id).unwrap()).await)
            }
            Op::ArchiveTask { queue, id } => {
                Reply::of_unit(b.archive_task(&QueueName::new(*queue).unwrap(), &TaskId::new(*id).unwrap()).await)
            }
            Op::DeleteTask { queue, id } => {
                Reply::of_unit(b.delete_task(&QueueName::new(*queue).unwrap(), &TaskId::new(*id).unwrap()).await)
            }
            Op::RunAll { queue, set } => {
                Reply::of_count(b.run_all(&QueueName::new(*queue).unwrap(), &set.task_set()).await)
            }
            Op::ArchiveAll { queue, set } => {
                Reply::of_count(b.archive_all(&QueueName::new(*queue).unwrap(), &set.task_set()).await)
            }
            Op::DeleteAll { queue, set } => {
                Reply::of_count(b.delete_all(&QueueName::new(*queue).unwrap(), &set.task_set()).await)
            }
            Op::Pause { queue } => Reply::of_unit(b.pause_queue(&QueueName::new(*queue).unwrap()).await),
            Op::Unpause { queue } => Reply::of_unit(b.unpause_queue(&QueueName::new(*queue).unwrap()).await),
            Op::DeleteQueue { queue, force } => {
                Reply::of_unit(b.delete_queue(&QueueName::new(*queue).unwrap(), *force).await)
            }
            Op::Debounce { task, key, window } => {
                let options = TaskOptions::new().debounce(*key, Duration::from_secs(*window));
                Reply::of_unit(b.enqueue(self.resolve(task, options)).await)
            }
            Op::Replace(task) => {
                let options = match task.when {
                    When::In(secs) => TaskOptions::new().process_in(Duration::from_secs(secs)),
                    _ => TaskOptions::new(),
                };
                let mut request = self.resolve(task, options);
                request.replace = Some(Replace::Waiting);
                Reply::of_unit(b.enqueue(request).await)
            }
            Op::Workflow { queue, tasks } => match self.plan(queue, tasks, format!("wf{}", self.handed.len())) {
                Ok(plan) => Reply::of_unit(b.store_workflow(&plan).await),
                Err(e) => Reply::Err(ErrorKind::of(&e)),
            },
            Op::CancelWaiting { queue, id } => {
                let task = TaskRef { queue: QueueName::new(*queue).unwrap(), id: TaskId::new(*id).unwrap() };
                match b.cancel_waiting(&task).await {
                    Ok(cancelled) => Reply::Count(usize::from(cancelled)),
                    Err(e) => Reply::Err(ErrorKind::of(&e)),
                }
            }
            Op::RecordStep { pick, step } => {
                let Some(key) = pick_handed(&self.handed, *pick) else {
                    return Reply::Skipped;
                };
                let message = &self.messages[key];
                let name = StepName::new(*step).expect("a valid step name");
                let record = StepRecord::new(name, "done", self.clock.now()).expect("a small result");
                Reply::of_unit(b.record_step(&message.queue, &message.id, &record).await)
            }
            Op::Park { pick, why, secs, step } => {
                let Some(key) = pick_handed(&self.handed, *pick) else {
                    return Reply::Skipped;
                };
                let message = &self.messages[key];
                let reason = match why {
                    ParkFor::Sleep => ParkReason::Sleep,
                    ParkFor::Signal(name) => ParkReason::Signal(StepName::new(*name).expect("a valid signal name")),
                };
                let parked = Parked::new(reason, self.now_plus(*secs));
                let record = step.map(|step| {
                    let name = StepName::new(step).expect("a valid step name");
                    StepRecord::new(name, "parked", self.clock.now()).expect("a small result")
                });
                Reply::of_unit(b.park(message, &parked, record.as_ref()).await)
            }
            Op::Signal { to, name } => {
                let (queue, id) = match to {
                    Target::Task(queue, id) => (QueueName::new(*queue).unwrap(), TaskId::new(*id).unwrap()),
                    Target::Handed(pick) => match pick_handed(&self.handed, *pick) {
                        Some((queue, id)) => {
                            (QueueName::new(queue.as_str()).unwrap(), TaskId::new(id.as_str()).unwrap())
                        }
                        None => return Reply::Skipped,
                    },
                };
                let name = StepName::new(*name).expect("a valid signal name");
                match b.signal(&queue, &id, &name, bytes::Bytes::from_static(b"\"v\"")).await {
                    Ok(woke) => Reply::Count(usize::from(woke)),
                    Err(e) => Reply::Err(ErrorKind::of(&e)),
                }
            }
        }
    }

    /// The plan of the workflow `tasks`, all in `queue`, as a client makes it before storing.
    fn plan(&self, queue: &str, tasks: &[WorkflowTask], id: String) -> asynq_core::Result<WorkflowPlan> {
        let flow = Flow::dag(tasks.iter().map(|t| {
            let mut options = TaskOptions::new().queue(queue).task_id(t.id).max_retry(t.max_retry);
            if t.retention > 0 {
                options = options.retention(Duration::from_secs(t.retention));
            }
            if let Some(delay) = t.delay {
                options = options.process_in(Duration::from_secs(delay));
            }
            let task =
                DagTask::new(t.id, Task::new(TASK_TYPE, "w"), options).after(t.after.iter().map(|&p| tasks[p].id));
            if t.run_anyway { task.on_parent_failure(OnParentFailure::RunAnyway) } else { task }
        }));
        let mut id = Some(id);
        flow.plan(tasks.len(), self.clock.now(), || id.take().expect("only the workflow's ID is generated"))
    }

    /// The relay that follows every operation (see [`Model::apply`]), as a server's relayer
    /// would run it: on Redis the outboxes are empty when it returns.
    async fn relay(&self) -> Result<(), TestCaseError> {
        let fail = |e: asynq_core::Error| TestCaseError::fail(format!("{}: relay: {e}", self.name));
        self.broker.relay(&names(&QUEUES)).await.map_err(fail)?;
        Ok(())
    }

    async fn observe(&self, lookups: bool) -> Observation {
        let b = &self.broker;
        let queues = match b.queues().await {
            Ok(queues) => queues.into_iter().map(QueueName::into_string).collect(),
            Err(e) => vec![format!("<queues failed: {e}>")],
        };
        let mut views = Vec::new();
        for name in QUEUES {
            let counts = b
                .queue_info(&QueueName::new(name).unwrap())
                .await
                .map(|info| (&info).into())
                .map_err(|e| ErrorKind::of(&e));
            let mut tasks = Vec::new();
            for state in OBSERVED_STATES {
                let rows =
                    b.list_tasks(&QueueName::new(name).unwrap(), state, ALL).await.map_err(|e| ErrorKind::of(&e)).map(
                        |listed| {
                            let due = |t: &TaskInfo| match state {
                                TaskState::Scheduled | TaskState::Retry => t.next_process_at.map(unix_secs),
                                _ => None,
                            };
                            let mut rows: Vec<Row> = listed
                                .into_iter()
                                .map(|t| Row { due: due(&t), id: t.id.into_string(), retried: t.retried })
                                .collect();
                            if matches!(state, TaskState::Aggregating | TaskState::Waiting) {
                                rows.sort();
                            }
                            rows
                        },
                    );
                tasks.push((state, rows));
            }
            views.push((name.to_owned(), QueueView { counts, tasks }));
        }
        let mut found = Vec::new();
        let mut steps = Vec::new();
        let mut signals = Vec::new();
        if lookups {
            for queue in QUEUES {
                for id in IDS {
                    let (queue_name, task_id) = (QueueName::new(queue).unwrap(), TaskId::new(id).unwrap());
                    let names = match b.step_records(&queue_name, &task_id).await {
                        Ok(records) => {
                            let mut names: Vec<String> = records.iter().map(|r| r.name().to_string()).collect();
                            names.sort();
                            names
                        }
                        Err(e) => vec![format!("<step_records failed: {e}>")],
                    };
                    steps.push((queue.to_owned(), id.to_owned(), names));
                    let mut sent = Vec::new();
                    for name in SIGNALS {
                        match b.signal_value(&queue_name, &task_id, &StepName::new(name).unwrap()).await {
                            Ok(Some(_)) => sent.push(name.to_owned()),
                            Ok(None) => {}
                            Err(e) => sent.push(format!("<signal_value failed: {e}>")),
                        }
                    }
                    signals.push((queue.to_owned(), id.to_owned(), sent));
                    let info = b
                        .task_info(&queue_name, &task_id)
                        .await
                        .map(|t| (t.state, t.retried, t.parked.as_ref().map(parked_view)))
                        .map_err(|e| ErrorKind::of(&e));
                    found.push((queue.to_owned(), id.to_owned(), info));
                }
            }
        }
        Observation { queues, views, lookups: found, steps, signals }
    }
}

/// How often each kind of operation got each kind of reply, to show what the generated
/// sequences cover (printed with `--no-capture`).
#[derive(Default)]
struct Tally(Mutex<BTreeMap<String, usize>>);

impl Tally {
    fn count(&self, op: &Op, reply: &Reply) {
        let op = format!("{op:?}");
        let op = op.split([' ', '{', '(']).next().unwrap_or_default();
        let reply = match reply {
            Reply::Count(0) => "Count(0)".to_owned(),
            Reply::Count(_) => "Count(n)".to_owned(),
            Reply::Tasks(tasks) if tasks.is_empty() => "Tasks(none)".to_owned(),
            Reply::Tasks(_) => "Tasks(some)".to_owned(),
            Reply::Each(replies) if replies.contains(&Reply::Ok) => "Each(some Ok)".to_owned(),
            Reply::Each(_) => "Each(no Ok)".to_owned(),
            other => format!("{other:?}"),
        };
        *self.0.lock().expect("tally lock").entry(format!("{op} -> {reply}")).or_default() += 1;
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (what, n) in self.0.lock().expect("tally lock").iter() {
            writeln!(f, "  {what}: {n}")?;
        }
        Ok(())
    }
}

/// How the model shows `parked`: its reason (a signal's name from the pool) and until when.
fn parked_view(parked: &Parked) -> ParkedView {
    let why = match &parked.reason {
        ParkReason::Signal(name) => match SIGNALS.iter().copied().find(|s| *s == name.as_str()) {
            Some(name) => ParkFor::Signal(name),
            None => panic!("a signal outside the pool: {name}"),
        },
        _ => ParkFor::Sleep,
    };
    (why, (parked.until_millis() / 1_000) as i64)
}

fn names(queues: &[&str]) -> Vec<QueueName> {
    queues.iter().map(|q| QueueName::new(*q).expect("a valid queue name")).collect()
}

fn queue() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(&QUEUES[..])
}

fn id() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(&IDS[..])
}

fn group() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(&GROUPS[..])
}

fn queue_list() -> impl Strategy<Value = Vec<&'static str>> {
    proptest::sample::select(vec![vec!["q0"], vec!["q1"], vec!["q0", "q1"], vec!["q1", "q0"]])
}

/// Seconds from one second to a hundred days, most often short; the longest spans reach the
/// archive's 90-day limit.
fn span() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 1u64..60,
        6 => 60u64..3_600,
        4 => 3_600u64..86_400,
        2 => 86_400u64..3 * 86_400,
        1 => 30 * 86_400u64..100 * 86_400,
    ]
}

fn when() -> impl Strategy<Value = When> {
    prop_oneof![
        6 => Just(When::Now),
        2 => (1u64..600).prop_map(When::In),
        2 => group().prop_map(When::Group),
        1 => (group(), 1u64..600).prop_map(|(g, s)| When::GroupIn(g, s)),
    ]
}

fn finish_with() -> impl Strategy<Value = FinishWith> {
    prop_oneof![
        Just(FinishWith::Done),
        Just(FinishWith::Complete),
        (0u64..600, any::<bool>()).prop_map(|(in_secs, is_failure)| FinishWith::Retry { in_secs, is_failure }),
        Just(FinishWith::Archive),
        Just(FinishWith::Requeue),
    ]
}

fn set() -> impl Strategy<Value = Set> {
    prop_oneof![
        3 => proptest::sample::select(&OBSERVED_STATES[..]).prop_map(Set::State),
        1 => group().prop_map(Set::Group),
    ]
}

fn new_task() -> impl Strategy<Value = NewTask> {
    (
        queue(),
        id(),
        proptest::sample::select(&PAYLOADS[..]),
        when(),
        proptest::bool::weighted(0.3),
        prop_oneof![Just(0u64), 1u64..120],
        0u32..3,
        prop_oneof![3 => Just(0i8), 1 => proptest::sample::select(&[-3i8, 2, 5][..])],
    )
        .prop_map(|(queue, id, payload, when, unique, retention, max_retry, priority)| {
            // A grouped task cannot have a priority (the client refuses it before any call).
            let priority = if matches!(when, When::Group(_) | When::GroupIn(..)) { 0 } else { priority };
            NewTask { queue, id, payload, when, unique, retention, max_retry, priority }
        })
}

/// A workflow of up to four tasks with distinct IDs from the pool (one time in eight, the
/// first ID again, which is refused), each waiting for up to two earlier ones.
fn workflow_tasks() -> impl Strategy<Value = Vec<WorkflowTask>> {
    let task = (
        proptest::collection::vec(any::<prop::sample::Index>(), 0..3),
        prop_oneof![3 => Just(false), 1 => Just(true)],
        prop_oneof![3 => Just(None), 1 => span().prop_map(Some)],
        prop_oneof![Just(0u64), Just(3_600)],
        0u32..3,
    );
    let ids = proptest::sample::subsequence(&IDS[..], 1..=4).prop_shuffle();
    (ids, proptest::collection::vec(task, 4), proptest::bool::weighted(0.125)).prop_map(|(ids, tasks, reuse)| {
        let mut ids = ids;
        if reuse {
            ids.push(ids[0]);
        }
        ids.iter()
            .zip(tasks.into_iter().cycle())
            .enumerate()
            .map(|(index, (&id, (after, run_anyway, delay, retention, max_retry)))| {
                let mut after: Vec<usize> =
                    if index == 0 { Vec::new() } else { after.iter().map(|a| a.index(index)).collect() };
                after.sort_unstable();
                after.dedup();
                let delay = if after.is_empty() { delay } else { None };
                WorkflowTask { id, after, run_anyway, delay, retention, max_retry }
            })
            .collect()
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        22 => new_task().prop_map(Op::Enqueue),
        3 => proptest::collection::vec(new_task(), 1..8).prop_map(Op::EnqueueBatch),
        3 => proptest::collection::vec((0usize..4, finish_with()), 1..4).prop_map(Op::FinishBatch),
        14 => (queue_list(), 1usize..4).prop_map(|(queues, max)| Op::Dequeue { queues, max }),
        16 => (0usize..4, finish_with()).prop_map(|(pick, with)| Op::Finish { pick, with }),
        6 => (0usize..4).prop_map(|pick| Op::Start { pick }),
        8 => span().prop_map(|secs| Op::Advance { secs }),
        6 => queue_list().prop_map(|queues| Op::Forward { queues }),
        5 => (queue_list(), prop_oneof![Just(0u64), Just(59), Just(60), 61u64..300])
            .prop_map(|(queues, wait)| Op::Recover { queues, wait }),
        4 => (queue(), 1usize..4).prop_map(|(queue, batch)| Op::Janitor { queue, batch }),
        3 => (queue(), id()).prop_map(|(queue, id)| Op::RunTask { queue, id }),
        2 => (queue(), id()).prop_map(|(queue, id)| Op::ArchiveTask { queue, id }),
        2 => (queue(), id()).prop_map(|(queue, id)| Op::DeleteTask { queue, id }),
        3 => (queue(), set()).prop_map(|(queue, set)| Op::RunAll { queue, set }),
        2 => (queue(), set()).prop_map(|(queue, set)| Op::ArchiveAll { queue, set }),
        2 => (queue(), set()).prop_map(|(queue, set)| Op::DeleteAll { queue, set }),
        1 => queue().prop_map(|queue| Op::Pause { queue }),
        4 => queue().prop_map(|queue| Op::Unpause { queue }),
        2 => (queue(), any::<bool>()).prop_map(|(queue, force)| Op::DeleteQueue { queue, force }),
        4 => (new_task(), proptest::sample::select(&["k1", "k2"][..]), 1u64..600)
            .prop_map(|(task, key, window)| Op::Debounce { task, key, window }),
        3 => new_task().prop_map(Op::Replace),
        8 => (queue(), workflow_tasks()).prop_map(|(queue, tasks)| Op::Workflow { queue, tasks }),
        3 => (queue(), id()).prop_map(|(queue, id)| Op::CancelWaiting { queue, id }),
        6 => (0usize..4, proptest::sample::select(&STEPS[..])).prop_map(|(pick, step)| Op::RecordStep { pick, step }),
        5 => (0usize..4, park_for(), prop_oneof![Just(0u64), 1u64..600, span()], proptest::option::of(step()))
            .prop_map(|(pick, why, secs, step)| Op::Park { pick, why, secs, step }),
        5 => (target(), signal()).prop_map(|(to, name)| Op::Signal { to, name }),
    ]
}

fn step() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(&STEPS[..])
}

fn signal() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(&SIGNALS[..])
}

/// Most often a handed-out task (perhaps parked), else any task of the pools.
fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        3 => (0usize..4).prop_map(Target::Handed),
        1 => (queue(), id()).prop_map(|(queue, id)| Target::Task(queue, id)),
    ]
}

fn park_for() -> impl Strategy<Value = ParkFor> {
    prop_oneof![1 => Just(ParkFor::Sleep), 2 => signal().prop_map(ParkFor::Signal)]
}

/// Runs `ops` against the model and both brokers, failing at the first step where a broker's
/// reply or observation differs from the model's.
async fn run_case(server: &RedisServer, ops: &[Op], tally: &Tally) -> Result<(), TestCaseError> {
    server.command(&["FLUSHALL"]).map_err(|e| TestCaseError::fail(format!("FLUSHALL: {e}")))?;
    let start = from_unix_secs(START_SECS);
    let mut model = Model::new(START_SECS);
    let memory_clock = SimulatedClock::new(start);
    let mut memory = Backend::new("memory", MemoryBroker::with_clock(Arc::new(memory_clock.clone())), memory_clock);
    let redis_clock = SimulatedClock::new(start);
    let redis_broker = redis_broker(&server.url(), Arc::new(redis_clock.clone())).await;
    let mut redis = Backend::new("redis", redis_broker, redis_clock);
    let mut logs = EventLogs::new(&memory.broker, &redis.broker).await?;
    for (step, op) in ops.iter().enumerate() {
        let expected = model.apply(op);
        tally.count(op, &expected);
        // Looking every task up by ID costs as much again, so it is done after the last step.
        let lookups = step + 1 == ops.len();
        let expected_view = model.observe(lookups);
        let memory_reply = memory.apply(op).await;
        memory.relay().await?;
        let redis_reply = redis.apply(op).await;
        redis.relay().await?;
        let got = [
            (memory.name, memory_reply, memory.observe(lookups).await),
            (redis.name, redis_reply, redis.observe(lookups).await),
        ];
        let mut differences = Vec::new();
        for (name, reply, view) in got {
            if reply != expected {
                differences.push(format!("{name} replied {reply:?}, the model {expected:?}"));
            } else if view != expected_view {
                differences.push(format!("{name} shows\n{view}the model shows\n{expected_view}"));
            }
        }
        if differences.is_empty() {
            differences.extend(logs.compare(&memory.broker, &redis.broker).await);
        }
        if !differences.is_empty() {
            return Err(TestCaseError::fail(format!("at step {step} {op:?}:\n{}", differences.join("\n"))));
        }
    }
    Ok(())
}

/// Every queue's task event log, on both brokers: after each step the events it added must be
/// the same on both (in any order within the step: a bulk action walks its tasks in its
/// backend's order).
struct EventLogs {
    /// Per queue, where each broker's next read starts.
    next: Vec<(QueueName, EventPosition, EventPosition)>,
}

/// What an event says, without its ID and time (which are the backend's).
type EventFacts = (EventKind, String, String, Option<String>, Option<u32>, Option<String>);

impl EventLogs {
    async fn new(memory: &MemoryBroker, redis: &RedisBroker) -> Result<Self, TestCaseError> {
        let cap = EventCap::new(100_000).expect("a valid cap");
        let mut next = Vec::new();
        for queue in QUEUES {
            let queue = QueueName::new(queue).unwrap();
            for broker in [memory as &dyn EventLog, redis as &dyn EventLog] {
                broker.set_event_cap(&queue, Some(cap)).await.map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
            next.push((queue, EventPosition::Oldest, EventPosition::Oldest));
        }
        Ok(Self { next })
    }

    async fn read(broker: &dyn EventLog, queue: &QueueName, from: &mut EventPosition) -> Vec<EventFacts> {
        let page = broker.read_events(queue, *from, 10_000).await.expect("read events");
        assert!(!page.missed, "nothing is trimmed under a cap of 100 000");
        *from = page.next;
        let mut facts: Vec<EventFacts> = page
            .events
            .into_iter()
            .map(|e| {
                let progress = e.progress.map(|p| (p.fraction() * 1e6).round() as u32);
                (e.kind, e.task_id, e.task_type, e.error, progress, e.name)
            })
            .collect();
        facts.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
        facts
    }

    /// The differences between the events each broker logged since the last comparison.
    async fn compare(&mut self, memory: &MemoryBroker, redis: &RedisBroker) -> Vec<String> {
        let mut differences = Vec::new();
        for (queue, memory_next, redis_next) in &mut self.next {
            let in_memory = Self::read(memory, queue, memory_next).await;
            let in_redis = Self::read(redis, queue, redis_next).await;
            if in_memory != in_redis {
                differences.push(format!("queue {queue} logged\n  memory: {in_memory:?}\n  redis:  {in_redis:?}"));
            }
        }
        differences
    }
}

#[test]
fn brokers_follow_the_reference_model() {
    let cases = std::env::var("ASYNQ_MODEL_CASES")
        .ok()
        .map(|v| v.parse().expect("ASYNQ_MODEL_CASES is a number of cases"))
        .unwrap_or(DEFAULT_CASES);
    let budget = std::env::var("ASYNQ_MODEL_BUDGET_SECS")
        .ok()
        .map(|v| Duration::from_secs(v.parse().expect("ASYNQ_MODEL_BUDGET_SECS is a number of seconds")))
        .unwrap_or(DEFAULT_BUDGET);
    let server = RedisServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new(config);
    let began = Instant::now();
    let strategy = proptest::collection::vec(op(), 1..=MAX_OPS);
    let tally = Tally::default();
    let search = Search::new(budget);
    let result = runner.run(&strategy, |ops| {
        if !search.should_run() {
            return Ok(());
        }
        let outcome = runtime.block_on(run_case(&server, &ops, &tally));
        search.record(outcome.is_err());
        outcome
    });
    match result {
        Ok(()) => {
            let ran = search.ran();
            assert!(ran >= MIN_CASES.min(cases), "only {ran} sequences ran");
            eprintln!("{ran} sequences of up to {MAX_OPS} operations agreed in {:?}", began.elapsed());
            eprintln!("operations by reply (from the model):\n{tally}");
        }
        Err(TestError::Fail(reason, ops)) => {
            let steps: Vec<String> = ops.iter().enumerate().map(|(i, op)| format!("  {i}: {op:?}")).collect();
            panic!("{reason}\nminimal failing sequence:\n{}", steps.join("\n"));
        }
        Err(TestError::Abort(reason)) => panic!("aborted: {reason}"),
    }
}

/// How far the random search went: it runs sequences until the time budget is spent (after
/// [`MIN_CASES`]), then lets proptest's remaining cases pass unrun; once a sequence failed, every
/// call runs, so the failure is shrunk to its end.
struct Search {
    began: Instant,
    budget: Duration,
    ran: std::cell::Cell<u32>,
    failed: std::cell::Cell<bool>,
}

impl Search {
    fn new(budget: Duration) -> Self {
        Self { began: Instant::now(), budget, ran: Default::default(), failed: Default::default() }
    }

    /// Whether the next sequence runs.
    fn should_run(&self) -> bool {
        self.failed.get() || self.ran.get() < MIN_CASES || self.began.elapsed() < self.budget
    }

    /// Counts a sequence that ran.
    fn record(&self, failed: bool) {
        self.ran.set(self.ran.get() + 1);
        self.failed.set(self.failed.get() || failed);
    }

    /// Sequences run so far, shrinking steps included.
    fn ran(&self) -> u32 {
        self.ran.get()
    }
}

/// Parks and signals in one sequence, so that every run sees each rule: a signal to a missing
/// task, one before the park (the wait is due at once), one of another name, one that wakes the
/// task and one to a running task; a sleep, forwarded when due; an operator's run ending a wait.
#[test]
fn parks_and_signals_follow_the_model() {
    let task = |id| {
        Op::Enqueue(NewTask {
            queue: "q0",
            id,
            payload: "x",
            when: When::Now,
            unique: false,
            retention: 0,
            max_retry: 1,
            priority: 0,
        })
    };
    let take = Op::Dequeue { queues: vec!["q0"], max: 1 };
    let ops = vec![
        Op::Signal { to: Target::Task("q0", "a"), name: "go" },
        task("a"),
        take.clone(),
        Op::Signal { to: Target::Task("q0", "a"), name: "go" },
        Op::Park { pick: 0, why: ParkFor::Signal("go"), secs: 600, step: Some("s0") },
        Op::Forward { queues: vec!["q0"] },
        take.clone(),
        Op::Park { pick: 0, why: ParkFor::Sleep, secs: 30, step: Some("s1") },
        Op::Signal { to: Target::Task("q0", "a"), name: "go" },
        task("b"),
        take.clone(),
        Op::Park { pick: 0, why: ParkFor::Signal("stop"), secs: 3_600, step: None },
        Op::Signal { to: Target::Task("q0", "b"), name: "go" },
        Op::Signal { to: Target::Task("q0", "b"), name: "stop" },
        take.clone(),
        Op::Signal { to: Target::Task("q0", "b"), name: "stop" },
        Op::Advance { secs: 30 },
        Op::Forward { queues: vec!["q0"] },
        take.clone(),
        Op::Park { pick: 0, why: ParkFor::Signal("stop"), secs: 60, step: None },
        Op::RunTask { queue: "q0", id: "a" },
        take,
        Op::Park { pick: 0, why: ParkFor::Signal("go"), secs: 60, step: None },
        Op::Park { pick: 1, why: ParkFor::Sleep, secs: 120, step: Some("s0") },
        Op::Finish { pick: 2, with: FinishWith::Done },
    ];
    let mut model = Model::new(START_SECS);
    let replies: Vec<Reply> = ops.iter().map(|op| model.apply(op)).collect();
    let woke: Vec<&Reply> = replies.iter().filter(|r| matches!(r, Reply::Count(_))).collect();
    assert_eq!(woke.len(), 7, "{replies:?}");
    assert_eq!(replies[0], Reply::Err(ErrorKind::TaskNotFound), "a signal to no task");
    assert_eq!(replies[13], Reply::Count(1), "the signal the task waits for wakes it");
    let server = RedisServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    if let Err(reason) = runtime.block_on(run_case(&server, &ops, &Tally::default())) {
        panic!("{reason}\nsequence: {ops:?}");
    }
}

/// A started task in one sequence, so that every run sees the rules the random search seldom
/// reaches: a debounce with the key of a parked task stores its own task beside it (and one
/// under the parked task's ID is refused), the next debounce replaces that one, and a
/// replacement by ID is refused while the task is parked and once it is pending with its
/// records; a grouped task an operator ran, parked, is pending when due, not back in its group.
#[test]
fn started_tasks_follow_the_model() {
    let task = |id, when| NewTask {
        queue: "q0",
        id,
        payload: "x",
        when,
        unique: false,
        retention: 0,
        max_retry: 1,
        priority: 0,
    };
    let debounce = |id| Op::Debounce { task: task(id, When::Now), key: "k1", window: 10 };
    let take = Op::Dequeue { queues: vec!["q0"], max: 1 };
    let forward = Op::Forward { queues: vec!["q0"] };
    let ops = vec![
        debounce("a"),
        Op::Advance { secs: 10 },
        forward.clone(),
        take.clone(),
        Op::Park { pick: 0, why: ParkFor::Sleep, secs: 100, step: Some("s0") },
        debounce("a"),
        debounce("b"),
        debounce("c"),
        Op::Replace(task("a", When::Now)),
        Op::Enqueue(task("d", When::Group("g0"))),
        Op::Enqueue(task("e", When::Group("g0"))),
        Op::RunTask { queue: "q0", id: "d" },
        take.clone(),
        Op::Park { pick: 0, why: ParkFor::Signal("go"), secs: 30, step: None },
        Op::Advance { secs: 100 },
        forward,
        Op::Replace(task("a", When::Now)),
        Op::Replace(task("d", When::Now)),
        take.clone(),
        take,
    ];
    let mut model = Model::new(START_SECS);
    let replies: Vec<Reply> = ops.iter().map(|op| model.apply(op)).collect();
    assert_eq!(replies[5], Reply::Err(ErrorKind::TaskIdConflict), "the parked task's ID is taken: {replies:?}");
    assert_eq!(replies[6], Reply::Ok, "stored beside the parked task");
    assert_eq!(replies[8], Reply::Err(ErrorKind::FailedPrecondition), "parked: not replaced");
    assert_eq!(replies[15], Reply::Count(3), "a, c and d due: d pending, not back in g0");
    assert_eq!(replies[16], Reply::Err(ErrorKind::FailedPrecondition), "pending with its records: not replaced");
    assert_eq!(replies[17], Reply::Ok, "d parked without a record and is pending now: not started");
    let server = RedisServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    if let Err(reason) = runtime.block_on(run_case(&server, &ops, &Tally::default())) {
        panic!("{reason}\nsequence: {ops:?}");
    }
}

/// Sequences the random search once found the brokers and the model to disagree on, replayed
/// on every run: each pins down a rule the model had wrong or missed.
#[test]
fn sequences_found_once_agree() {
    let archive_all_of_nothing_still_trims = vec![
        Op::Enqueue(NewTask {
            queue: "q0",
            id: "a",
            payload: "x",
            when: When::Now,
            unique: false,
            retention: 0,
            max_retry: 0,
            priority: 0,
        }),
        Op::ArchiveTask { queue: "q0", id: "a" },
        Op::Advance { secs: 90 * 86_400 },
        // No pending task to archive, yet the archive is trimmed, as Go's archiveAll scripts do.
        Op::ArchiveAll { queue: "q0", set: Set::State(TaskState::Pending) },
    ];
    let server = RedisServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    for ops in [archive_all_of_nothing_still_trims] {
        if let Err(reason) = runtime.block_on(run_case(&server, &ops, &Tally::default())) {
            panic!("{reason}\nsequence: {ops:?}");
        }
    }
}
