//! Workflows (`Workflows`): a stored plan's roots are pending and the rest wait, unseen by
//! dequeues and listings; each task is released once its parents settled for good, with their
//! outcomes in its plan's order; a failure cancels what waits for it down the workflow, unless
//! a task runs anyway; retries release nothing; outcomes reach other queues and large fan-outs
//! through [`Workflows::relay`], or [`Workflows::relay_settled`] when a relay is wanted; a taken
//! task ID stores nothing.

use super::BrokerFactory;
use super::fixture::{Fixture, archive, assert_id_conflict, at, millis, names, retry, secs};
use asynq_core::broker::Wait;
use asynq_core::broker::Workflows;
use asynq_core::broker::{Dequeue, Manage, Outcome, Page, Recover};
use asynq_core::workflow::{
    CancelMark, DEFAULT_MAX_WORKFLOW_TASKS, DagTask, Flow, OnParentFailure, PARENT_FAILED_ERROR, ParentOutcome,
    TaskRef, WORKFLOW_CANCELLED_ERROR, WORKFLOW_HEADER, WorkflowCancellation, WorkflowPlan, parent_vanished_error,
};
use asynq_core::{Broker, Error, QueueName, StoredTask, Task, TaskId, TaskOptions, TaskState, WorkflowId};
use bytes::Bytes;
use std::time::SystemTime;

fn task(queue: &str, id: &str) -> Flow {
    Flow::task(Task::new("t", id.to_owned()), TaskOptions::new().queue(queue).task_id(id))
}

fn task_ref(queue: &str, id: &str) -> TaskRef {
    TaskRef { queue: QueueName::new(queue).unwrap(), id: TaskId::new(id).unwrap() }
}

impl<B: Broker + Workflows + Clone> Fixture<B> {
    /// Plans `flow` at the fixture's time and stores it as workflow `the-workflow`.
    async fn store(&self, flow: &Flow) -> asynq_core::Result<WorkflowPlan> {
        self.store_as(flow, "the-workflow").await
    }

    /// Plans `flow` at the fixture's time and stores it as workflow `id` (every task has its ID).
    async fn store_as(&self, flow: &Flow, id: &str) -> asynq_core::Result<WorkflowPlan> {
        let plan = flow.plan(DEFAULT_MAX_WORKFLOW_TASKS, self.now(), || id.to_owned())?;
        self.broker.store_workflow(&plan).await?;
        Ok(plan)
    }

    /// Relays what settling left to do in `queues`, as a server does after settling.
    async fn relay(&self, queues: &[&str]) {
        self.broker.relay(&names(queues)).await.expect("relay");
    }

    /// Relays as a server's relayer does when woken, for as long as a relay is wanted now;
    /// returns how many rounds it took.
    async fn relay_wanted_rounds(&self) -> usize {
        let mut rounds = 0;
        while futures::FutureExt::now_or_never(self.broker.relay_wanted()).is_some() {
            self.broker.relay_settled().await.expect("relay_settled");
            rounds += 1;
            assert!(rounds < 100, "a relay is wanted forever");
        }
        rounds
    }

    /// The outcomes of the parents of `id` in `queue`, as its handler sees them.
    async fn parents(&self, queue: &str, id: &str) -> Vec<(String, ParentOutcome)> {
        let results = self.broker.parent_results(&task_ref(queue, id)).await.expect("parent_results");
        results.into_iter().map(|r| (r.task.id.into_string(), r.outcome)).collect()
    }

    /// Takes task `id` of `queue`, writes `result` as its result, and finishes it with `Done`.
    async fn succeed(&self, queue: &str, id: &str, result: &str) -> StoredTask {
        let message = self.take(queue, id).await.message;
        let (q, task_id) = (QueueName::new(queue).unwrap(), TaskId::new(id).unwrap());
        self.broker.write_result(&q, &task_id, Bytes::from(result.to_owned())).await.unwrap();
        self.finish(&message, Outcome::Done).await;
        message
    }
}

fn succeeded(result: &str) -> ParentOutcome {
    ParentOutcome::Succeeded { result: Some(Bytes::from(result.to_owned())) }
}

/// A chain: only its first task is pending; each next one is released when the one before
/// succeeds (with or without retention), and sees its result; a retry releases nothing.
pub async fn case_a_chain_runs_each_task_after_the_one_before<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Workflows,
{
    let t = Fixture::new(factory).await;
    let plan = t.store(&task("q", "a").then(task("q", "b")).then(task("q", "c"))).await.unwrap();
    assert_eq!(plan.id, "the-workflow");
    let info = t.counts("q").await;
    assert_eq!((info.pending, info.waiting, info.size), (1, 2, 1), "waiting tasks are counted apart from Go's");
    assert_eq!(t.all_ids("q", TaskState::Waiting).await, ["b", "c"]);
    let c = t.task("q", "c").await;
    assert_eq!(
        (c.state, c.headers.get(WORKFLOW_HEADER).map(String::as_str)),
        (TaskState::Waiting, Some("the-workflow"))
    );
    let waited = t.broker.wait_for_outcome(&QueueName::from_static("q"), &c.id, millis(200)).await;
    assert!(matches!(waited, Err(Error::WaitTimeout { .. })), "a waiting task is not finished: {waited:?}");
    let a = t.take("q", "a").await.message;
    assert!(t.dequeue(&["q"], 10).await.is_empty(), "only the root is pending");
    t.finish(&a, retry(t.now(), "flaky", true)).await;
    t.relay(&["q"]).await;
    let info = t.counts("q").await;
    assert_eq!((info.pending, info.retry, info.waiting), (0, 1, 2), "b and c still wait");
    asynq_core::broker::Forward::forward_ready(&t.broker, &names(&["q"])).await.unwrap();

    t.succeed("q", "a", "A").await;
    t.relay(&["q"]).await;
    assert_eq!(t.parents("q", "b").await, [("a".to_owned(), succeeded("A"))]);
    let b = t.take("q", "b").await.message;
    t.finish(&b, Outcome::Complete).await;
    t.relay(&["q"]).await;
    assert_eq!(t.parents("q", "c").await, [("b".to_owned(), ParentOutcome::Succeeded { result: None })]);
    t.take("q", "c").await;
    assert_eq!(t.parents("q", "a").await, [], "a root waits for nothing");
    assert_eq!(t.counts("q").await.waiting, 0);
    assert!(t.all_ids("q", TaskState::Waiting).await.is_empty());
}

/// A chord: the callback is released only once every member settled, in whatever order they
/// finish, and sees their outcomes in member order.
pub async fn case_a_chord_callback_waits_for_every_member<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Workflows,
{
    let t = Fixture::new(factory).await;
    let members = ["m1", "m2", "m3"].map(|id| task("q", id));
    t.store(&Flow::chord(members, task("q", "sum"))).await.unwrap();
    let taken: Vec<StoredTask> = t.dequeue(&["q"], 10).await.into_iter().map(|d| d.message).collect();
    let mut ids: Vec<&str> = taken.iter().map(|m| m.id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["m1", "m2", "m3"]);
    for (n, id) in ["m3", "m1"].into_iter().enumerate() {
        let message = taken.iter().find(|m| m.id == id).unwrap();
        let q = QueueName::from_static("q");
        t.broker.write_result(&q, &message.id, Bytes::from(format!("r{n}"))).await.unwrap();
        t.finish(message, Outcome::Done).await;
        t.relay(&["q"]).await;
        assert!(t.dequeue_ids(&["q"], 10).await.is_empty(), "the callback waits for m2");
    }
    let m2 = taken.iter().find(|m| m.id == "m2").unwrap();
    t.finish(m2, archive("broken")).await;
    t.relay(&["q"]).await;
    assert!(t.dequeue_ids(&["q"], 10).await.is_empty(), "a failed member cancels the callback");
    let sum = t.task("q", "sum").await;
    assert_eq!((sum.state, sum.last_error.as_deref()), (TaskState::Archived, Some(PARENT_FAILED_ERROR)));
    let info = t.counts("q").await;
    assert_eq!((info.processed, info.failed, info.archived, info.waiting), (3, 1, 2, 0), "the callback never ran");
}

/// Under `RunAnyway` a task runs once every parent settled, failures included, and sees each
/// parent's outcome; under `FailWorkflow` (the default) the failure flows on down the workflow:
/// every task below is archived with `PARENT_FAILED_ERROR` and its own dependents hear of it.
pub async fn case_a_failure_cancels_down_the_workflow_unless_a_task_runs_anyway<
    F: BrokerFactory<Broker: asynq_core::Broker>,
>(
    factory: &F,
) where
    F::Broker: Workflows,
{
    let t = Fixture::new(factory).await;
    let dag = Flow::dag([
        DagTask::new("x", Task::new("t", "x"), TaskOptions::new().queue("q").task_id("x")),
        DagTask::new("y", Task::new("t", "y"), TaskOptions::new().queue("q").task_id("y")),
        DagTask::new("below-x", Task::new("t", "bx"), TaskOptions::new().queue("q").task_id("below-x")).after(["x"]),
        DagTask::new("below-that", Task::new("t", "bt"), TaskOptions::new().queue("q").task_id("below-that"))
            .after(["below-x"]),
        DagTask::new("report", Task::new("t", "r"), TaskOptions::new().queue("q").task_id("report"))
            .after(["below-that", "y"])
            .on_parent_failure(OnParentFailure::RunAnyway),
    ]);
    t.store(&dag).await.unwrap();
    let mut taken = t.dequeue(&["q"], 10).await;
    taken.sort_by(|a, b| a.message.id.cmp(&b.message.id));
    assert_eq!(taken.iter().map(|d| d.message.id.as_str()).collect::<Vec<_>>(), ["x", "y"]);
    t.finish(&taken[0].message, archive("x broke")).await;
    t.relay(&["q"]).await;
    for id in ["below-x", "below-that"] {
        let info = t.task("q", id).await;
        assert_eq!((info.state, info.last_error.as_deref()), (TaskState::Archived, Some(PARENT_FAILED_ERROR)), "{id}");
    }
    assert!(t.dequeue_ids(&["q"], 10).await.is_empty(), "report waits for y");
    t.finish(&taken[1].message, Outcome::Done).await;
    t.relay(&["q"]).await;
    t.take("q", "report").await;
    let failed = ParentOutcome::Failed { error: PARENT_FAILED_ERROR.to_owned() };
    let ok = ParentOutcome::Succeeded { result: None };
    assert_eq!(t.parents("q", "report").await, [("below-that".to_owned(), failed), ("y".to_owned(), ok)]);
}

/// A task waiting in another queue than its parent is released there (through the relay), as
/// are the many dependents of one parent, each exactly once even when relayed twice.
pub async fn case_dependents_in_other_queues_and_large_fan_outs_are_released<
    F: BrokerFactory<Broker: asynq_core::Broker>,
>(
    factory: &F,
) where
    F::Broker: Workflows,
{
    let t = Fixture::new(factory).await;
    let fan_out = Flow::group((0..150).map(|n| task("wide", &format!("w{n}"))));
    let flow = task("first", "root").then(Flow::group([task("second", "other"), fan_out]));
    t.store(&flow).await.unwrap();
    assert!(t.dequeue_ids(&["second", "wide"], 10).await.is_empty());
    t.succeed("first", "root", "R").await;
    t.relay(&["first", "second", "wide"]).await;
    t.relay(&["first", "second", "wide"]).await;
    t.take("second", "other").await;
    assert_eq!(t.parents("second", "other").await, [("root".to_owned(), succeeded("R"))]);
    assert_eq!(t.dequeue(&["wide"], 1_000).await.len(), 150, "each dependent once");
    assert_eq!(t.parents("wide", "w149").await, [("root".to_owned(), succeeded("R"))]);
}

/// What settling through the broker leaves to relay needs no periodic [`Workflows::relay`]: a
/// server's relayer, woken by [`Workflows::relay_wanted`] (at once, here), relays it with
/// [`Workflows::relay_settled`], a cascade across queues included, going round while more is
/// wanted; a broker that passes everything on as it settles has released it already.
pub async fn case_settles_are_relayed_when_wanted_without_the_periodic_relay<
    F: BrokerFactory<Broker: asynq_core::Broker>,
>(
    factory: &F,
) where
    F::Broker: Workflows,
{
    let t = Fixture::new(factory).await;
    let fan_out = Flow::group((0..70).map(|n| task("first", &format!("w{n}"))));
    let flow = task("first", "root").then(Flow::group([task("second", "other"), fan_out]));
    t.store_as(&flow, "fan-out").await.unwrap();
    t.store_as(&task("first", "broken").then(task("second", "mid")).then(task("third", "leaf")), "cascade")
        .await
        .unwrap();
    t.succeed("first", "root", "R").await;
    let broken = t.take("first", "broken").await;
    t.finish(&broken.message, archive("broke")).await;
    let rounds = t.relay_wanted_rounds().await;
    assert!(rounds <= 4, "{rounds} rounds");
    t.take("second", "other").await;
    assert_eq!(t.parents("second", "other").await, [("root".to_owned(), succeeded("R"))]);
    let mut released = t.dequeue_ids(&["first"], 1_000).await;
    released.sort_unstable();
    let mut fan_out: Vec<String> = (0..70).map(|n| format!("w{n}")).collect();
    fan_out.sort_unstable();
    assert_eq!(released, fan_out, "each dependent once");
    for (queue, id) in [("second", "mid"), ("third", "leaf")] {
        let info = t.task(queue, id).await;
        assert_eq!((info.state, info.last_error.as_deref()), (TaskState::Archived, Some(PARENT_FAILED_ERROR)), "{id}");
    }
    assert_eq!(t.relay_wanted_rounds().await, 0, "nothing is left wanted");
    assert_eq!(t.broker.relay_settled().await.expect("relay_settled"), 0, "nothing is left to relay");
}

/// A recovered parent settles as a finished one does: archived by the recoverer, its dependents
/// are cancelled.
pub async fn case_a_recovered_parent_passes_its_outcome_on<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Workflows,
{
    let t = Fixture::new(factory).await;
    t.store(&task("q", "a").then(task("q", "b"))).await.unwrap();
    let a = t.take("q", "a").await;
    t.advance(secs(60));
    t.broker.recover(vec![(a.message, archive("lease expired"))], t.now()).await.remove(0).unwrap();
    t.relay(&["q"]).await;
    assert_eq!(t.task("q", "b").await.state, TaskState::Archived);
}

/// A workflow whose task ID is taken in its queue stores nothing; a waiting task's ID is taken.
pub async fn case_a_taken_task_id_stores_nothing<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Workflows,
{
    let t = Fixture::new(factory).await;
    t.plain("q2", "b").await;
    assert_id_conflict(t.store(&task("q", "a").then(task("q2", "b"))).await, "q2", "b");
    assert_eq!(t.dequeue_ids(&["q", "q2"], 10).await, ["b"], "the root a was not stored");
    t.store(&task("q", "a").then(task("q", "waiting"))).await.unwrap();
    assert_id_conflict(t.enqueue("waiting", &Task::new("t", ""), TaskOptions::new().queue("q")).await, "q", "waiting");
}

/// A parent an operator archives passes its failure on, and one an operator deletes counts as
/// succeeded, once relayed: no settle script of the broker saw them.
pub async fn case_a_parent_an_operator_settles_passes_its_outcome_on<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) where
    F::Broker: Workflows,
{
    let t = Fixture::new(factory).await;
    t.store(&Flow::group([task("q", "a").then(task("q", "b")), task("q", "x").then(task("q", "y"))])).await.unwrap();
    let q = QueueName::from_static("q");
    t.broker.archive_task(&q, &TaskId::from_static("a")).await.unwrap();
    t.broker.delete_task(&q, &TaskId::from_static("x")).await.unwrap();
    assert_eq!(t.counts("q").await.waiting, 2, "nothing is passed on before a relay");
    t.relay(&["q"]).await;
    let b = t.task("q", "b").await;
    assert_eq!((b.state, b.last_error.as_deref()), (TaskState::Archived, Some(PARENT_FAILED_ERROR)));
    t.take("q", "y").await;
    assert_eq!(t.parents("q", "y").await, [("x".to_owned(), ParentOutcome::Succeeded { result: None })]);
    t.relay(&["q"]).await;
    assert_eq!(t.counts("q").await.waiting, 0);
}

/// Stored workflows are listed newest first with their size, each with its tasks in plan order
/// and the edges between them; one refused stores no record; an unknown ID is not found.
pub async fn case_workflows_are_kept_for_operators<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Workflows,
{
    let t = Fixture::new(factory).await;
    // A chord of three members across two queues, then a chain of two.
    let chord = Flow::chord([task("q", "a"), task("q2", "m2"), task("q", "m3")], task("q2", "b"));
    t.store_as(&chord.then(task("q", "d")), "first").await.unwrap();
    t.advance(secs(10));
    t.store_as(&task("q", "c"), "second").await.unwrap();
    assert_id_conflict(t.store_as(&task("q", "a"), "refused").await, "q", "a");
    let listed = t.broker.list_workflows(Page::default()).await.unwrap();
    let listed: Vec<(&str, usize, SystemTime)> =
        listed.iter().map(|w| (w.id.as_str(), w.tasks, w.created_at)).collect();
    assert_eq!(listed, [("second", 1, at(10)), ("first", 5, at(0))]);
    let second_page = t.broker.list_workflows(Page { size: 1, number: 1 }).await.unwrap();
    assert_eq!(second_page.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(), ["first"]);
    assert_eq!(t.broker.count_workflows().await.unwrap(), 2, "the refused one is not counted");
    let first = t.broker.workflow_tasks(&WorkflowId::from_static("first")).await.unwrap();
    let first: Vec<(TaskRef, &[usize])> =
        first.iter().map(|node| (node.task.clone(), node.parents.as_slice())).collect();
    assert_eq!(
        first,
        [
            (task_ref("q", "a"), &[][..]),
            (task_ref("q2", "m2"), &[]),
            (task_ref("q", "m3"), &[]),
            (task_ref("q2", "b"), &[0, 1, 2]),
            (task_ref("q", "d"), &[3]),
        ]
    );
    let second = t.broker.workflow_tasks(&WorkflowId::from_static("second")).await.unwrap();
    assert_eq!(
        second.iter().map(|node| (&node.task, node.parents.len())).collect::<Vec<_>>(),
        [(&task_ref("q", "c"), 0)]
    );
    let missing = t.broker.workflow_tasks(&WorkflowId::from_static("refused")).await;
    assert!(matches!(missing, Err(Error::WorkflowNotFound { ref id }) if id == "refused"), "{missing:?}");
    // Forgotten once the TTL has passed since it was stored: the first goes, the second stays.
    t.advance(asynq_core::workflow::WORKFLOW_RESULT_TTL - secs(5));
    assert_eq!(t.broker.count_workflows().await.unwrap(), 1);
    let listed = t.broker.list_workflows(Page::default()).await.unwrap();
    assert_eq!(listed.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(), ["second"]);
}

/// An operator's run, archive or delete of a waiting task is refused. A waiting task cancelled is
/// archived unrun with `WORKFLOW_CANCELLED_ERROR`, counted nowhere, and its failure flows on (once
/// relayed) to what waits for it; a task that is not waiting is left alone.
pub async fn case_a_cancelled_waiting_task_is_archived_and_fails_what_waits_for_it<
    F: BrokerFactory<Broker: asynq_core::Broker>,
>(
    factory: &F,
) where
    F::Broker: Workflows,
{
    let t = Fixture::new(factory).await;
    t.store(&task("q", "a").then(task("q", "b")).then(task("q", "c"))).await.unwrap();
    let (q, b) = (QueueName::from_static("q"), TaskId::from_static("b"));
    for refused in
        [t.broker.run_task(&q, &b).await, t.broker.archive_task(&q, &b).await, t.broker.delete_task(&q, &b).await]
    {
        assert!(
            matches!(refused, Err(Error::FailedPrecondition(ref why)) if why.contains("cancel the workflow")),
            "{refused:?}"
        );
    }
    assert_eq!(
        t.task("q", "b").await.state,
        TaskState::Waiting,
        "an operator's action on a waiting task writes nothing"
    );
    assert!(!t.broker.cancel_waiting(&task_ref("q", "a")).await.unwrap(), "a is pending, not waiting");
    assert!(t.broker.cancel_waiting(&task_ref("q", "b")).await.unwrap());
    assert!(!t.broker.cancel_waiting(&task_ref("q", "b")).await.unwrap(), "b is no longer waiting");
    t.relay(&["q"]).await;
    let b = t.task("q", "b").await;
    assert_eq!((b.state, b.last_error.as_deref()), (TaskState::Archived, Some(WORKFLOW_CANCELLED_ERROR)));
    let c = t.task("q", "c").await;
    assert_eq!((c.state, c.last_error.as_deref()), (TaskState::Archived, Some(PARENT_FAILED_ERROR)));
    let info = t.counts("q").await;
    assert_eq!((info.pending, info.archived, info.waiting, info.failed), (1, 2, 0, 0));
}

/// A signal sent to a workflow task while it waits for its parents wakes nothing and is kept
/// for when it runs: through its release (made pending) and through a cancel (archived).
pub async fn case_a_signal_to_a_waiting_task_is_kept_for_when_it_runs<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) where
    F::Broker: Workflows + asynq_core::broker::Steps,
{
    use asynq_core::broker::Steps;
    let t = Fixture::new(factory).await;
    t.store(&task("q", "a").then(task("q", "b"))).await.unwrap();
    t.store_as(&task("q", "c").then(task("q", "d")), "other").await.unwrap();
    let (q, go) = (QueueName::from_static("q"), asynq_core::steps::StepName::new("go").unwrap());
    let sent = || Some(Bytes::from_static(b"1"));
    for id in ["b", "d"] {
        let id = TaskId::new(id).unwrap();
        assert!(!t.broker.signal(&q, &id, &go, Bytes::from_static(b"1")).await.unwrap(), "a waiting task wakes not");
        assert_eq!(t.broker.signal_value(&q, &id, &go).await.unwrap(), sent());
    }
    let a = t.take("q", "a").await.message;
    t.finish(&a, Outcome::Done).await;
    t.relay(&["q"]).await;
    assert_eq!(t.task("q", "b").await.state, TaskState::Pending);
    assert!(t.broker.cancel_waiting(&task_ref("q", "d")).await.unwrap());
    assert_eq!(t.task("q", "d").await.state, TaskState::Archived);
    for id in ["b", "d"] {
        assert_eq!(t.broker.signal_value(&q, &TaskId::new(id).unwrap(), &go).await.unwrap(), sent(), "{id} keeps it");
    }
}

/// A workflow's cancel mark: none at first; the first mark says so, a later one that the first
/// has not recorded what it did, then what it recorded; listings and `is_cancelled` show it; an
/// unknown workflow is not found and nothing is marked.
pub async fn case_a_cancel_mark_is_kept_and_reported<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Workflows,
{
    let t = Fixture::new(factory).await;
    t.store_as(&task("q", "a").then(task("q", "b")), "first").await.unwrap();
    t.store_as(&task("q", "c"), "second").await.unwrap();
    let first = WorkflowId::from_static("first");
    assert!(!t.broker.is_cancelled(&first).await.unwrap());
    let cancelled = |listed: Vec<asynq_core::workflow::WorkflowSummary>| {
        listed.into_iter().map(|w| (w.id.into_string(), w.cancelled)).collect::<Vec<_>>()
    };
    let listed = cancelled(t.broker.list_workflows(Page::default()).await.unwrap());
    assert_eq!(listed, [("second".to_owned(), false), ("first".to_owned(), false)]);
    let done = WorkflowCancellation { archived: 1, stopping: 1 };
    t.broker.record_cancellation(&first, done).await.unwrap();
    assert!(!t.broker.is_cancelled(&first).await.unwrap(), "recording marks nothing");
    assert_eq!(t.broker.mark_cancelled(&first).await.unwrap(), CancelMark::Marked);
    assert_eq!(t.broker.mark_cancelled(&first).await.unwrap(), CancelMark::Unfinished);
    t.broker.record_cancellation(&first, done).await.unwrap();
    assert_eq!(t.broker.mark_cancelled(&first).await.unwrap(), CancelMark::Done(done));
    assert!(t.broker.is_cancelled(&first).await.unwrap());
    assert!(!t.broker.is_cancelled(&WorkflowId::from_static("second")).await.unwrap());
    let listed = cancelled(t.broker.list_workflows(Page::default()).await.unwrap());
    assert_eq!(listed, [("second".to_owned(), false), ("first".to_owned(), true)]);
    let ghost = WorkflowId::from_static("ghost");
    let missing = t.broker.mark_cancelled(&ghost).await;
    assert!(matches!(missing, Err(Error::WorkflowNotFound { ref id }) if id == "ghost"), "{missing:?}");
    assert!(!t.broker.is_cancelled(&ghost).await.unwrap(), "an unknown workflow is not marked");
    assert_eq!(t.task("q", "b").await.state, TaskState::Waiting, "marking moves no task");
}

/// A DAG's task names are kept in its workflow's record beside each task (a task of no DAG has
/// none), and a name is no task ID: two runs of one DAG keep the same names for their own tasks.
pub async fn case_a_dag_s_names_are_kept_in_its_record<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Workflows,
{
    let t = Fixture::new(factory).await;
    let dag = || {
        Flow::dag([
            DagTask::new("fetch", Task::new("t", ""), TaskOptions::new().queue("q")),
            DagTask::new("line\nbreak", Task::new("t", ""), TaskOptions::new().queue("q2")).after(["fetch"]),
        ])
        .then(Flow::task(Task::new("t", ""), TaskOptions::new().queue("q")))
    };
    let mut runs = Vec::new();
    for run in ["run-1", "run-2"] {
        let mut n = 0;
        let plan = dag()
            .plan(DEFAULT_MAX_WORKFLOW_TASKS, t.now(), || {
                n += 1;
                format!("{run}-{n}")
            })
            .unwrap();
        t.broker.store_workflow(&plan).await.unwrap();
        runs.push(plan.id);
    }
    for (run, id) in ["run-1", "run-2"].iter().zip(&runs) {
        let kept = t.broker.workflow_tasks(id).await.unwrap();
        let kept: Vec<(Option<&str>, String, &[usize])> =
            kept.iter().map(|node| (node.name.as_deref(), node.task.id.to_string(), node.parents.as_slice())).collect();
        let [fetch, line, plain] = [1, 2, 3].map(|n| format!("{run}-{n}"));
        assert_eq!(kept, [(Some("fetch"), fetch, &[][..]), (Some("line\nbreak"), line, &[0]), (None, plain, &[1])]);
    }
}

/// A task others wait for that a forced queue removal deletes unsettled vanished: once relayed,
/// each task waiting for it, in any queue and whatever its policy, is archived unrun with an
/// error naming it, and that failure flows on; the removed queue's own waiting task is archived
/// too (seen once the queue is known again). It never counts as succeeded.
pub async fn case_a_parent_removed_with_its_queue_vanishes<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Workflows,
{
    let t = Fixture::new(factory).await;
    let step = |queue: &str, id: &str| {
        DagTask::new(id, Task::new("t", id.to_owned()), TaskOptions::new().queue(queue).task_id(id))
    };
    let dag = Flow::dag([
        step("q", "a"),
        step("q2", "b").after(["a"]).on_parent_failure(OnParentFailure::RunAnyway),
        step("q", "c").after(["a"]),
        step("q2", "d").after(["b"]),
    ]);
    t.store(&dag).await.unwrap();
    t.broker.delete_queue(&QueueName::from_static("q"), true).await.unwrap();
    t.relay(&["q", "q2"]).await;
    t.relay(&["q", "q2"]).await;
    let vanished = parent_vanished_error(&task_ref("q", "a"));
    assert!(vanished.contains(r#"task a of queue "q""#), "{vanished}");
    let b = t.task("q2", "b").await;
    assert_eq!((b.state, b.last_error.as_deref()), (TaskState::Archived, Some(vanished.as_str())), "it never runs");
    let d = t.task("q2", "d").await;
    assert_eq!((d.state, d.last_error.as_deref()), (TaskState::Archived, Some(PARENT_FAILED_ERROR)));
    assert!(t.dequeue(&["q", "q2"], 10).await.is_empty(), "nothing runs");
    t.plain("q", "again").await;
    let c = t.task("q", "c").await;
    assert_eq!((c.state, c.last_error.as_deref()), (TaskState::Archived, Some(vanished.as_str())));
}

/// A workflow's record keeps each task's type, and the broker keeps how each workflow task
/// settled for good, so that an operator tells a task that succeeded without retention (and is
/// gone) from one deleted: one others wait for with its result, one nothing waits for without;
/// a failure with its error; a task deleted, or not settled yet, is unknown.
pub async fn case_operators_see_how_gone_workflow_tasks_settled<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) where
    F::Broker: Workflows,
{
    let t = Fixture::new(factory).await;
    let typed = |queue: &str, id: &str, type_name: &str| {
        Flow::task(Task::new(type_name, id.to_owned()), TaskOptions::new().queue(queue).task_id(id))
    };
    t.store_as(&typed("q", "a", "fetch").then(typed("q", "b", "report:send")), "chain").await.unwrap();
    let group = Flow::group([typed("q2", "c", "t"), typed("q2", "d", "t"), typed("q2", "e", "t")]);
    t.store_as(&group, "group").await.unwrap();
    let chain = t.broker.workflow_tasks(&WorkflowId::from_static("chain")).await.unwrap();
    let types: Vec<Option<&str>> = chain.iter().map(|node| node.type_name.as_deref()).collect();
    assert_eq!(types, [Some("fetch"), Some("report:send")]);
    let refs = [("q", "a"), ("q", "b"), ("q2", "c"), ("q2", "d"), ("q2", "e")].map(|(queue, id)| task_ref(queue, id));
    assert_eq!(t.broker.settled_outcomes(&refs).await.unwrap(), vec![ParentOutcome::Unknown; 5], "nothing settled yet");

    t.succeed("q", "a", "A").await;
    t.relay(&["q"]).await;
    t.succeed("q", "b", "B").await;
    let c = t.take("q2", "c").await.message;
    t.finish(&c, archive("boom")).await;
    t.broker.delete_task(&QueueName::from_static("q2"), &TaskId::from_static("d")).await.unwrap();
    t.relay(&["q", "q2"]).await;
    let settled = t.broker.settled_outcomes(&refs).await.unwrap();
    assert_eq!(
        settled,
        [
            succeeded("A"),
            ParentOutcome::Succeeded { result: None },
            ParentOutcome::Failed { error: "boom".to_owned() },
            ParentOutcome::Unknown,
            ParentOutcome::Unknown,
        ],
        "a and b succeeded (only a, which b waited for, keeps its result), c failed, d was deleted, e is pending"
    );
    assert_eq!(t.broker.settled_outcomes(&[]).await.unwrap(), []);
}
