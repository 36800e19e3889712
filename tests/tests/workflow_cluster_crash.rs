//! The cross-queue workflow relay on a 3-master Redis Cluster, cut off after each of its steps
//! as a `kill -9` of the process running it would cut it, then finished by a new process.
//!
//! A parent in queue `qa` passes its outcome on to dependents in `qb` and `qc`; the three queues
//! hash to slots of three different masters (checked against the live cluster), so no script can
//! touch two of them. The protocol's steps, each one script or command:
//!
//! 1. the settle (`workflow_settle.lua`, in qa's slot) records the parent's outcome and leaves an
//!    entry in qa's outbox (the dependents are in other slots);
//! 2. the pass (`workflow_pass.lua`, once per dependent queue, in its slot) releases (or, for a
//!    failure, archives) each dependent whose parents have all settled, marking in each the
//!    parent it heard of, so that hearing again changes nothing;
//! 3. the parent's children list is deleted, then 4. its outbox entry (both in qa's slot).
//!
//! Each test brings a broker (the doomed process) to the end of one step (a broker relays only
//! when a server's relayer tells it to, and none runs here; the test seam
//! `RedisBroker::pass_on_oldest_outbox_entry` runs step 2 alone; step 3 is one `DEL`, done here
//! by hand), drops it, and has new brokers run `Workflows::relay`, what every server's relayer
//! runs each second. Each dependent must then be released (or archived) exactly once: in its
//! queue's pending list once (a list, so a second release would show as a second entry), with
//! one `enqueued` (or `archived`) event in its queue's event log, which the releasing script
//! writes in the same step as the release; a dependent that also waits for a parent that has
//! not settled must still wait (had it heard of the first parent twice, the second hearing would
//! have stood for the other parent); and a relay repeated afterwards changes nothing.
//!
//! What the finishing brokers do is their `relay` call alone, which must finish a cascade across
//! the three slots by itself.

use asynq_core::broker::EventLog;
use asynq_core::broker::Workflows;
use asynq_core::broker::{Dequeue, Inspect, Outcome};
use asynq_core::events::{EventCap, EventKind, EventPosition};
use asynq_core::workflow::{DagTask, Flow, OnParentFailure, PARENT_FAILED_ERROR, ParentOutcome, TaskRef};
use asynq_core::{Clock, QueueName, SystemClock, Task, TaskId, TaskOptions, TaskState};
use asynq_redis::RedisBroker;
use asynq_redis::keys::Namespace;
use asynq_tests::{RedisCluster, RedisServer, redis_broker};
use bytes::Bytes;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The parent's queue and the dependents' queues, each served by another master.
const QA: &str = "qa";
const QB: &str = "qb";
const QC: &str = "qc";
const QUEUES: [&str; 3] = [QA, QB, QC];

/// The parent's ID and result.
const PARENT: &str = "parent";
const RESULT: &[u8] = b"the parent's result";

/// The step after which the doomed process dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DiesAfter {
    /// After step 1: the parent settled, its outbox entry left, nothing passed on.
    Settle,
    /// After step 2: the dependents told, the children list and the outbox entry left.
    Pass,
    /// After step 3: the children list deleted, the outbox entry left.
    ChildrenDeleted,
}

/// The cluster, with one namespace per case so that cases share it without meeting.
struct World {
    cluster: RedisCluster,
}

impl World {
    /// Starts a 3-master cluster and checks that `qa`, `qb` and `qc` are served by three
    /// different masters, as the cluster itself reports.
    fn start() -> Self {
        let cluster = RedisCluster::start(3);
        let mut masters: Vec<String> = QUEUES
            .iter()
            .map(|queue| {
                let slot = RedisCluster::key_slot(format!("{{{queue}}}"));
                let live = cluster.master_now(slot).unwrap_or_else(|e| panic!("the master of {queue}'s slot: {e}"));
                assert_eq!(live.addr(), cluster.node_for_slot(slot).addr(), "the slot map of {queue}");
                live.addr()
            })
            .collect();
        masters.sort_unstable();
        masters.dedup();
        assert_eq!(masters.len(), QUEUES.len(), "{QUEUES:?} must hash to slots of three different masters");
        Self { cluster }
    }

    /// A new process's broker in namespace `ns`.
    async fn broker(&self, ns: &Namespace) -> RedisBroker {
        let url = format!("redis-cluster://{}?namespace={}", self.cluster.addrs().join(","), ns.as_str());
        redis_broker(&url, Arc::new(SystemClock)).await
    }

    fn node(&self, queue: &str) -> &RedisServer {
        self.cluster.node_for_key(format!("{{{queue}}}"))
    }

    /// The list `key` of `queue`'s slot.
    fn list(&self, queue: &str, key: &str) -> Vec<String> {
        let reply = self.node(queue).command(&["LRANGE", key, "0", "-1"]).expect("LRANGE");
        reply.as_array().expect("a list").iter().map(|item| item.as_str().expect("a string").to_owned()).collect()
    }

    fn exists(&self, queue: &str, key: &str) -> bool {
        self.node(queue).command(&["EXISTS", key]).expect("EXISTS").as_int() == Some(1)
    }

    fn del(&self, queue: &str, key: &str) {
        self.node(queue).command(&["DEL", key]).expect("DEL");
    }

    /// The outbox of `queue`, oldest entry first.
    fn outbox(&self, ns: &Namespace, queue: &str) -> Vec<String> {
        self.list(queue, &ns.queue(queue).workflow_outbox())
    }

    /// The pending list of `queue`, sorted.
    fn pending(&self, ns: &Namespace, queue: &str) -> Vec<String> {
        let mut pending = self.list(queue, &ns.queue(queue).pending());
        pending.sort_unstable();
        pending
    }

    /// Checks that nothing is left to relay: no outbox entry, no children list of the parent,
    /// the parent no longer open.
    fn assert_relayed(&self, ns: &Namespace) {
        for queue in QUEUES {
            assert_eq!(self.outbox(ns, queue), Vec::<String>::new(), "{queue}'s outbox");
        }
        let parent = ns.queue(QA);
        assert!(!self.exists(QA, &parent.workflow_children(PARENT)), "the parent's children list is left");
        let open = self.node(QA).command(&["HEXISTS", &parent.workflow_open(), PARENT]).expect("HEXISTS");
        assert_eq!(open.as_int(), Some(0), "the parent is still open");
    }
}

fn queue(name: &'static str) -> QueueName {
    QueueName::from_static(name)
}

/// Keeps an event log of every queue, in `broker`'s namespace, so that each release and
/// archive is logged in the step that makes it.
async fn log_events(broker: &RedisBroker) {
    for name in QUEUES {
        broker.set_event_cap(&queue(name), Some(EventCap::DEFAULT)).await.expect("set an event cap");
    }
}

/// How many events of `kind` `queue`'s log holds for each task.
async fn events(broker: &RedisBroker, name: &'static str, kind: EventKind) -> BTreeMap<String, usize> {
    let page = broker.read_events(&queue(name), EventPosition::Oldest, 10_000).await.expect("read the event log");
    assert!(!page.missed, "{name}'s event log was trimmed");
    let mut counts = BTreeMap::new();
    for event in page.events.into_iter().filter(|event| event.kind == kind) {
        *counts.entry(event.task_id).or_insert(0) += 1;
    }
    counts
}

/// Stores `flow`.
async fn store(broker: &RedisBroker, flow: &Flow) {
    let plan = flow.plan(1_000, SystemClock.now(), || "wf".to_owned()).expect("a valid workflow");
    broker.store_workflow(&plan).await.expect("store the workflow");
}

/// The second parent of the joint dependent, a root in `qc`, and the joint dependent, in `qc`,
/// which waits for the parent and for it.
const OTHER_PARENT: &str = "other-parent";
const JOINT: &str = "joint";

/// A parent in `qa` with `in_qb` dependents in `qb` that wait for it alone, and [`JOINT`] in
/// `qc` that waits for it and for [`OTHER_PARENT`]; returns the workflow and the IDs of the
/// dependents in `qb`, sorted.
fn fan_out(in_qb: usize) -> (Flow, Vec<String>) {
    let task = |queue: &'static str, id: &str| {
        DagTask::new(id.to_owned(), Task::new("t", id.to_owned()), TaskOptions::new().queue(queue).task_id(id))
    };
    let mut dependents: Vec<String> = (0..in_qb).map(|n| format!("b-{n}")).collect();
    let mut tasks = vec![task(QA, PARENT), task(QC, OTHER_PARENT)];
    tasks.extend(dependents.iter().map(|id| task(QB, id).after([PARENT])));
    tasks.push(task(QC, JOINT).after([PARENT, OTHER_PARENT]));
    dependents.sort_unstable();
    (Flow::dag(tasks), dependents)
}

/// Takes the only pending task of `name`, which must be `id`, and settles it with `outcome`
/// (writing `result` first when it succeeds).
async fn settle(broker: &RedisBroker, name: &'static str, id: &str, result: &'static [u8], outcome: Outcome) {
    let taken = broker.dequeue(&[queue(name)], 10).await.expect("dequeue");
    let [task] = &taken[..] else { panic!("expected {id} alone in {name}, took {}", taken.len()) };
    assert_eq!(task.message.id.as_str(), id);
    if outcome == Outcome::Done {
        broker.write_result(&queue(name), &task.message.id, Bytes::from_static(result)).await.expect("write a result");
    }
    broker.finish(&task.message, outcome).await.expect("settle");
}

async fn state(broker: &RedisBroker, name: &'static str, id: &str) -> TaskState {
    let id = TaskId::new(id).expect("a task ID");
    broker.task_info(&queue(name), &id).await.expect("task info").state
}

/// What `id` of `name` sees of its parents: each one's ID and outcome, in order.
async fn parents_seen(broker: &RedisBroker, name: &'static str, id: &str) -> Vec<(String, ParentOutcome)> {
    let task = TaskRef { queue: queue(name), id: TaskId::new(id).expect("a task ID") };
    let parents = broker.parent_results(&task).await.expect("parent results");
    parents.into_iter().map(|parent| (parent.task.id.to_string(), parent.outcome)).collect()
}

fn succeeded(id: &str, result: &'static [u8]) -> (String, ParentOutcome) {
    (id.to_owned(), ParentOutcome::Succeeded { result: Some(Bytes::from_static(result)) })
}

/// Runs the doomed process of a fan-out with `in_qb` dependents in `qb` in namespace `ns` up to
/// `cut`, checking the state it leaves; returns the dependents in `qb`.
async fn doomed_fan_out(world: &World, ns: &Namespace, in_qb: usize, cut: DiesAfter) -> Vec<String> {
    let doomed = world.broker(ns).await;
    log_events(&doomed).await;
    let (flow, dependents) = fan_out(in_qb);
    store(&doomed, &flow).await;
    settle(&doomed, QA, PARENT, RESULT, Outcome::Done).await;
    let entry = vec![format!("1:{PARENT}")];
    assert_eq!(world.outbox(ns, QA), entry, "the settle leaves the parent in the outbox");
    let released = match cut {
        DiesAfter::Settle => false,
        DiesAfter::Pass | DiesAfter::ChildrenDeleted => {
            let told = doomed.pass_on_oldest_outbox_entry(&queue(QA)).await.expect("pass on");
            assert_eq!(told, in_qb + 1, "the pass tells every dependent");
            if cut == DiesAfter::ChildrenDeleted {
                world.del(QA, &ns.queue(QA).workflow_children(PARENT));
            }
            true
        }
    };
    assert_eq!(world.outbox(ns, QA), entry, "the outbox entry outlives the doomed process");
    let pending = if released { dependents.clone() } else { Vec::new() };
    assert_eq!(world.pending(ns, QB), pending, "qb's pending list when the process dies ({cut:?})");
    let expected = if released { TaskState::Pending } else { TaskState::Waiting };
    for id in &dependents {
        assert_eq!(state(&doomed, QB, id).await, expected, "{id} when the process dies ({cut:?})");
    }
    assert_eq!(state(&doomed, QC, JOINT).await, TaskState::Waiting, "{JOINT} when the process dies ({cut:?})");
    dependents
}

/// Checks that each dependent of the parent alone was released exactly once, with the parent's
/// result, and that the joint dependent still waits for its other parent.
async fn assert_released_once(world: &World, ns: &Namespace, broker: &RedisBroker, dependents: &[String]) {
    world.assert_relayed(ns);
    assert_eq!(world.pending(ns, QB), dependents, "qb's pending list holds each dependent once");
    let once: BTreeMap<String, usize> = dependents.iter().map(|id| (id.clone(), 1)).collect();
    assert_eq!(events(broker, QB, EventKind::Enqueued).await, once, "qb's log: each dependent released once");
    for id in dependents {
        assert_eq!(state(broker, QB, id).await, TaskState::Pending, "{id}");
        assert_eq!(parents_seen(broker, QB, id).await, [succeeded(PARENT, RESULT)], "{id}");
    }
    // Heard of the parent once: a second hearing would have counted as the other parent's.
    assert_eq!(state(broker, QC, JOINT).await, TaskState::Waiting, "{JOINT}, whose other parent has not settled");
    assert_eq!(world.pending(ns, QC), [OTHER_PARENT], "qc's pending list");
}

/// The other parent settles: the joint dependent is released, once, with both results.
async fn release_the_joint_dependent(world: &World, ns: &Namespace, broker: &RedisBroker) {
    const OTHER_RESULT: &[u8] = b"the other parent's result";
    settle(broker, QC, OTHER_PARENT, OTHER_RESULT, Outcome::Done).await;
    assert_eq!(world.pending(ns, QC), [JOINT]);
    let enqueued = events(broker, QC, EventKind::Enqueued).await;
    assert_eq!(enqueued, BTreeMap::from([(OTHER_PARENT.to_owned(), 1), (JOINT.to_owned(), 1)]), "qc's log");
    let seen = parents_seen(broker, QC, JOINT).await;
    assert_eq!(seen, [succeeded(PARENT, RESULT), succeeded(OTHER_PARENT, OTHER_RESULT)]);
}

/// Each cut, with one dependent in `qb` (named in the parent's open entry) and with 70 (more
/// than a settle names there, listed apart from the store on): a new process's relay releases
/// each dependent exactly once, relaying again changes nothing, and the dependent that also
/// waits for another parent waits until that one settles.
#[tokio::test]
async fn a_relay_cut_off_after_any_step_releases_each_dependent_once() {
    let world = World::start();
    for (case, (cut, in_qb)) in [DiesAfter::Settle, DiesAfter::Pass, DiesAfter::ChildrenDeleted]
        .into_iter()
        .flat_map(|cut| [(cut, 1), (cut, 70)])
        .enumerate()
    {
        let ns = Namespace::new(format!("case-{case}")).expect("a namespace");
        let dependents = doomed_fan_out(&world, &ns, in_qb, cut).await;
        let all: Vec<QueueName> = QUEUES.map(queue).to_vec();
        let finisher = world.broker(&ns).await;
        finisher.relay(&all).await.expect("relay");
        assert_released_once(&world, &ns, &finisher, &dependents).await;
        let again = world.broker(&ns).await;
        again.relay(&all).await.expect("relay again");
        assert_released_once(&world, &ns, &again, &dependents).await;
        release_the_joint_dependent(&world, &ns, &again).await;
    }
}

/// Two new processes finish the same cut-off relay at once, as two servers' relayers do: each
/// dependent is released exactly once.
#[tokio::test]
async fn two_processes_finishing_one_relay_at_once_release_each_dependent_once() {
    let world = World::start();
    for cut in [DiesAfter::Settle, DiesAfter::Pass] {
        let ns = Namespace::new(format!("race-{cut:?}").to_lowercase()).expect("a namespace");
        let dependents = doomed_fan_out(&world, &ns, 70, cut).await;
        let (first, second) = (world.broker(&ns).await, world.broker(&ns).await);
        let all: Vec<QueueName> = QUEUES.map(queue).to_vec();
        let (a, b) = tokio::join!(first.relay(&all), second.relay(&all));
        a.expect("the first relay");
        b.expect("the second relay");
        assert_released_once(&world, &ns, &first, &dependents).await;
        release_the_joint_dependent(&world, &ns, &second).await;
    }
}

/// The step after which the doomed process dies, in a cascade of failures.
#[derive(Debug, Clone, Copy)]
enum CascadeDiesAfter {
    /// The parent archived; its outbox entry left.
    Settle,
    /// `d` (in qb) archived by the pass, which left `d`'s entry in qb's outbox; the parent's
    /// entry left too.
    Pass,
    /// qa's outbox relayed to the end; `d`'s entry left in qb's.
    FirstOutbox,
}

/// A parent in `qa` fails for good; `d` in `qb` waits for it, `e` in `qa` for `d`, `f` in `qc`
/// for `e`, each under the default policy (`OnParentFailure::FailWorkflow`), and `g` in `qc`
/// waits for `d` but runs anyway. Cut off after each step, a new process's relay archives `d`,
/// `e` and `f` unrun exactly once each, releases `g` once, and relaying again changes nothing.
#[tokio::test]
async fn a_failure_cut_off_anywhere_in_its_cascade_fails_each_dependent_once() {
    let world = World::start();
    let failed: [(&'static str, &str); 3] = [(QB, "d"), (QA, "e"), (QC, "f")];
    let cuts = [CascadeDiesAfter::Settle, CascadeDiesAfter::Pass, CascadeDiesAfter::FirstOutbox];
    for (case, cut) in cuts.into_iter().enumerate() {
        let ns = Namespace::new(format!("cascade-{case}")).expect("a namespace");
        let doomed = world.broker(&ns).await;
        log_events(&doomed).await;
        let task = |queue: &'static str, id: &str| {
            DagTask::new(id.to_owned(), Task::new("t", id.to_owned()), TaskOptions::new().queue(queue).task_id(id))
        };
        let flow = Flow::dag([
            task(QA, PARENT),
            task(QB, "d").after([PARENT]),
            task(QA, "e").after(["d"]),
            task(QC, "f").after(["e"]),
            task(QC, "g").after(["d"]).on_parent_failure(OnParentFailure::RunAnyway),
        ]);
        store(&doomed, &flow).await;
        settle(&doomed, QA, PARENT, RESULT, Outcome::Archive { error: "the parent broke".to_owned() }).await;
        let parent_entry = vec![format!("0:{PARENT}")];
        assert_eq!(world.outbox(&ns, QA), parent_entry, "the settle leaves the parent in the outbox");
        match cut {
            CascadeDiesAfter::Settle => {}
            CascadeDiesAfter::Pass => {
                assert_eq!(doomed.pass_on_oldest_outbox_entry(&queue(QA)).await.expect("pass on"), 1);
                assert_eq!(world.outbox(&ns, QA), parent_entry, "the outbox entry outlives the pass");
            }
            CascadeDiesAfter::FirstOutbox => {
                doomed.relay(&[queue(QA)]).await.expect("relay qa");
                assert_eq!(world.outbox(&ns, QA), Vec::<String>::new(), "qa's outbox, relayed");
            }
        }
        if !matches!(cut, CascadeDiesAfter::Settle) {
            assert_eq!(state(&doomed, QB, "d").await, TaskState::Archived, "{cut:?}");
            assert_eq!(world.outbox(&ns, QB), ["0:d"], "{cut:?}: d's failure, left to relay");
            assert_eq!(state(&doomed, QA, "e").await, TaskState::Waiting, "{cut:?}");
        }
        drop(doomed);

        let all: Vec<QueueName> = QUEUES.map(queue).to_vec();
        for round in ["relay", "relay again"] {
            let finisher = world.broker(&ns).await;
            finisher.relay(&all).await.expect(round);
            for name in QUEUES {
                assert_eq!(world.outbox(&ns, name), Vec::<String>::new(), "{name}'s outbox ({cut:?}, {round})");
                let pending = if name == QC { vec!["g".to_owned()] } else { Vec::new() };
                assert_eq!(world.pending(&ns, name), pending, "{name}'s pending list ({cut:?}, {round})");
            }
            for (name, id) in failed {
                let info = finisher.task_info(&queue(name), &TaskId::new(id).expect("an ID")).await.expect("task info");
                assert_eq!(info.state, TaskState::Archived, "{id} ({cut:?}, {round})");
                assert_eq!(info.last_error.as_deref(), Some(PARENT_FAILED_ERROR), "{id} ({cut:?}, {round})");
                let archived = events(&finisher, name, EventKind::Archived).await;
                assert_eq!(archived.get(id), Some(&1), "{name}'s log: {id} archived once ({cut:?}, {round})");
            }
            let enqueued = events(&finisher, QC, EventKind::Enqueued).await;
            assert_eq!(enqueued, BTreeMap::from([("g".to_owned(), 1)]), "qc's log: g released once ({cut:?}, {round})");
            let failure = ParentOutcome::Failed { error: PARENT_FAILED_ERROR.to_owned() };
            assert_eq!(parents_seen(&finisher, QC, "g").await, [("d".to_owned(), failure)], "{cut:?}, {round}");
        }
    }
}
