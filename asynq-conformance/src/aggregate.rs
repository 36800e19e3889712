//! Groups and their aggregation: which groups are listed, when a group is ready (max size, max
//! delay, grace period), what an aggregation set holds, how completing or deleting a set
//! removes its members, and how a stale set goes back to its group.

use super::BrokerFactory;
use super::fixture::{Fixture, assert_id_conflict, assert_task_not_found, at, millis, secs};
use asynq_core::broker::{Aggregate, AggregationLimits, GroupInfo, Inspect};
use asynq_core::{
    Broker, EnqueueRequest, Error, GroupName, QueueName, Result, StoredTask, Task, TaskId, TaskOptions, TaskState,
    resolve_enqueue,
};
use std::fmt::Debug;
use std::time::Duration;

/// Limits with a grace period of `grace` seconds and the given max delay (seconds) and size.
fn limits(grace: u64, max_delay: Option<u64>, max_size: Option<usize>) -> AggregationLimits {
    AggregationLimits { grace_period: secs(grace), max_delay: max_delay.map(Duration::from_secs), max_size }
}

impl<B: Broker + Aggregate + Clone> Fixture<B> {
    /// Enqueues task `id` of type `"t"`, with `id` as payload, into `group` of `queue`.
    pub async fn grouped(&self, queue: &str, group: &str, id: &str) -> StoredTask {
        let task = Task::new("t", id.to_owned());
        self.enqueue(id, &task, TaskOptions::new().queue(queue).group(group))
            .await
            .unwrap_or_else(|e| panic!("enqueue {id} into group {group}: {e}"))
    }

    /// The groups of `queue` as `(name, size)` pairs.
    pub async fn groups(&self, queue: &QueueName) -> Vec<(String, usize)> {
        let groups = self.broker.groups(queue).await.unwrap_or_else(|e| panic!("groups({queue:?}): {e}"));
        groups.into_iter().map(|GroupInfo { group, size, .. }| (group.into_string(), size)).collect()
    }

    /// Runs the aggregation check of `group` in `queue`, which must not fail.
    pub async fn check(&self, queue: &str, group: &str, limits: AggregationLimits) -> Option<String> {
        let checked = self
            .broker
            .aggregation_check(&QueueName::new(queue).unwrap(), &GroupName::new(group).unwrap(), limits)
            .await;
        checked.unwrap_or_else(|e| panic!("aggregation_check({queue:?}, {group:?}): {e}"))
    }

    /// The IDs of the members of set `set_id`, which must exist, in the order they joined.
    pub async fn set_ids(&self, queue: &str, group: &str, set_id: &str) -> Vec<String> {
        let set = self
            .broker
            .read_aggregation_set(&QueueName::new(queue).unwrap(), &GroupName::new(group).unwrap(), set_id)
            .await;
        let set = set.unwrap_or_else(|e| panic!("read_aggregation_set({queue:?}, {group:?}, {set_id:?}): {e}"));
        set.messages.into_iter().map(|m| m.id.into_string()).collect()
    }

    /// Completes set `set_id` of `group` in `queue` with the aggregated task `request`.
    pub async fn complete_set(&self, queue: &str, group: &str, set_id: &str, request: EnqueueRequest) -> Result<()> {
        let (queue, group) = (QueueName::new(queue).unwrap(), GroupName::new(group).unwrap());
        self.broker.complete_aggregation(&queue, &group, set_id, request).await
    }

    /// The request that stores a pending task `id` of type `"aggregated"` in `queue`.
    pub fn aggregated(&self, queue: &str, id: &str) -> EnqueueRequest {
        let task = Task::new("aggregated", id.to_owned());
        resolve_enqueue(&task, &TaskOptions::new().queue(queue).task_id(id), self.now(), || unreachable!())
            .expect("a valid aggregated task")
    }
}

/// Checks that `result` is [`Error::AggregationSetNotFound`] for this set.
#[track_caller]
fn assert_set_not_found<T: Debug>(result: Result<T>, queue: &str, group: &str, set_id: &str) {
    match result {
        Err(Error::AggregationSetNotFound { queue: q, group: g, set_id: s })
            if q == queue && g == group && s == set_id => {}
        other => panic!("expected AggregationSetNotFound {{ {queue:?}, {group:?}, {set_id:?} }}, got {other:?}"),
    }
}

/// Checks that `result` is [`Error::InvalidArgument`] about `field`.
#[track_caller]
fn assert_invalid<T: Debug>(result: Result<T>, field: &str) {
    match result {
        Err(Error::InvalidArgument { field: f, .. }) if f == field => {}
        other => panic!("expected InvalidArgument {{ field: {field:?} }}, got {other:?}"),
    }
}

/// The groups of a queue are listed by name with their sizes; a queue without groups, or that
/// does not exist, has none.
pub async fn case_groups_are_listed_by_name_with_their_sizes<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Aggregate,
{
    let t = Fixture::new(factory).await;
    assert!(t.groups(&QueueName::from_static("q")).await.is_empty());
    for (id, group) in [("h1", "h"), ("g1", "g"), ("h2", "h"), ("x1", "x")] {
        t.grouped("q", group, id).await;
    }
    t.grouped("other", "g", "o1").await;
    t.plain("q", "plain").await;

    assert_eq!(
        t.groups(&QueueName::from_static("q")).await,
        [("g".to_owned(), 1), ("h".to_owned(), 2), ("x".to_owned(), 1)]
    );
    assert_eq!(t.groups(&QueueName::from_static("other")).await, [("g".to_owned(), 1)]);
    assert!(t.groups(&QueueName::from_static("unknown")).await.is_empty());
    let broker = &t.broker;
    let names = |queue: &'static str| async move {
        let names = broker.group_names(&QueueName::from_static(queue)).await.unwrap();
        names.iter().map(GroupName::as_str).map(str::to_owned).collect::<Vec<_>>()
    };
    assert_eq!(names("q").await, ["g", "h", "x"], "the same groups' names, in the same order");
    assert!(names("unknown").await.is_empty());
}

/// `ready_groups` names the groups ready by the max size, then the max delay, then the grace
/// period (each once, up to the limit), and, while only the broker writes, no other: not one
/// its check found not ready, nor one the check emptied.
pub async fn case_ready_groups_names_the_groups_each_rule_makes_ready<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) where
    F::Broker: Aggregate,
{
    let t = Fixture::new(factory).await;
    let q = QueueName::from_static("q");
    let ready = |limits: AggregationLimits, limit: usize| {
        let (broker, q) = (t.broker.clone(), q.clone());
        async move {
            let named = broker.ready_groups(&q, limits, limit).await.unwrap_or_else(|e| panic!("ready_groups: {e}"));
            named.into_iter().map(GroupName::into_string).collect::<Vec<_>>()
        }
    };
    let all = limits(60, Some(60), Some(3));
    assert!(ready(all, 10).await.is_empty());
    t.grouped("q", "late", "l1").await;
    t.grouped("q", "delayed", "d1").await;
    t.advance(secs(50));
    t.grouped("q", "delayed", "d2").await;
    for id in ["b1", "b2", "b3"] {
        t.grouped("q", "big", id).await;
    }
    t.grouped("q", "fresh", "f1").await;
    t.grouped("other", "late", "o1").await;
    assert_eq!(ready(all, 10).await, ["big"], "only the size rule has been reached yet");
    t.advance(secs(15));

    assert_eq!(ready(all, 10).await, ["big", "delayed", "late"], "size first, then delay, then grace");
    assert_eq!(ready(all, 2).await, ["big", "delayed"]);
    assert_eq!(ready(limits(60, None, None), 10).await, ["late"]);
    assert_eq!(ready(limits(10, None, None), 10).await, ["late", "big", "delayed", "fresh"]);
    let unknown = t.broker.ready_groups(&QueueName::from_static("unknown"), all, 10).await;
    assert!(unknown.expect("ready_groups of an unknown queue").is_empty());
    assert_invalid(t.broker.ready_groups(&q, limits(60, None, Some(0)), 10).await, "group max size");

    let size = |group: &'static str| {
        let (broker, q) = (t.broker.clone(), q.clone());
        async move { broker.group_size(&q, &GroupName::from_static(group)).await }
    };
    assert_eq!((size("big").await.unwrap(), size("delayed").await.unwrap(), size("none").await.unwrap()), (3, 2, 0));
    assert_eq!(t.check("q", "fresh", all).await, None);
    assert!(t.check("q", "big", all).await.is_some());
    assert_eq!(size("big").await.unwrap(), 0, "the check took the group's tasks");
    assert_eq!(ready(all, 10).await, ["delayed", "late"], "an emptied group is not named");
    assert!(t.check("q", "late", limits(60, None, None)).await.is_some());
    assert_eq!(ready(all, 10).await, ["delayed"]);
    assert_eq!(
        t.broker
            .ready_groups(&QueueName::from_static("other"), limits(10, None, None), 10)
            .await
            .expect("ready_groups"),
        [GroupName::new("late").unwrap()]
    );
}

/// An empty or unknown group is never ready, whatever the limits.
pub async fn case_an_empty_group_is_never_aggregated<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Aggregate,
{
    let t = Fixture::new(factory).await;
    let eager = limits(1, Some(1), Some(1));
    assert_eq!(t.check("q", "g", eager).await, None);
    t.grouped("q", "g", "a").await;
    assert_eq!(t.check("q", "h", eager).await, None);
    t.advance(secs(3_600));
    assert_eq!(t.check("other", "g", eager).await, None);
    assert_eq!(t.groups(&QueueName::from_static("q")).await, [("g".to_owned(), 1)]);
}

/// A group is ready once its newest task has waited the grace period (whole seconds): the whole
/// group goes into a set due two minutes later, and the group is no longer listed.
pub async fn case_grace_period_aggregates_an_idle_group<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Aggregate,
{
    let t = Fixture::new(factory).await;
    t.grouped("q", "g", "a").await;
    t.advance(secs(5));
    t.grouped("q", "g", "b").await;
    t.advance(millis(9_999));
    assert_eq!(t.check("q", "g", limits(10, None, None)).await, None, "b has waited 9.999 s");

    t.advance(millis(1));
    let set_id = t.check("q", "g", limits(10, None, None)).await.expect("b has waited 10 s");

    let set = t
        .broker
        .read_aggregation_set(&QueueName::from_static("q"), &GroupName::from_static("g"), &set_id)
        .await
        .unwrap();
    assert_eq!(set.messages.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(set.deadline, at(15 + 120));
    assert!(t.groups(&QueueName::from_static("q")).await.is_empty());
    let info = t.info("q").await;
    assert_eq!((info.aggregating, info.groups), (0, 0), "members of a set are not counted, as in Go");
    assert_eq!(t.task("q", "a").await.state, TaskState::Aggregating);
    assert_eq!(t.check("q", "g", limits(10, None, None)).await, None, "nothing is taken twice");
}

/// A group holding at least the max size is ready at once: the max size oldest tasks are taken,
/// the rest stay listed, and the group is unlisted once a check empties it.
pub async fn case_max_size_takes_the_oldest_tasks_first<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Aggregate,
{
    let t = Fixture::new(factory).await;
    for id in ["a", "b", "c", "d", "e"] {
        t.grouped("q", "g", id).await;
        t.advance(secs(1));
    }
    let by_size = limits(60, None, Some(2));

    let first = t.check("q", "g", by_size).await.expect("5 tasks reach the max size of 2");
    assert_eq!(t.set_ids("q", "g", &first).await, ["a", "b"]);
    assert_eq!(t.groups(&QueueName::from_static("q")).await, [("g".to_owned(), 3)]);
    let second = t.check("q", "g", by_size).await.expect("3 tasks still reach it");
    assert_ne!(first, second);
    assert_eq!(t.set_ids("q", "g", &second).await, ["c", "d"]);
    assert_eq!(t.check("q", "g", by_size).await, None, "one task, short of the size and the grace period");

    t.grouped("q", "g", "f").await;
    let third = t.check("q", "g", by_size).await.expect("2 tasks reach the max size");
    assert_eq!(t.set_ids("q", "g", &third).await, ["e", "f"]);
    assert!(t.groups(&QueueName::from_static("q")).await.is_empty(), "a group emptied by the size rule is unlisted");
}

/// A group whose oldest task has waited the max delay is ready, however recently a task joined.
pub async fn case_max_delay_aggregates_a_busy_group<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Aggregate,
{
    let t = Fixture::new(factory).await;
    let busy = limits(10, Some(16), Some(100));
    for id in ["a", "b", "c"] {
        t.grouped("q", "g", id).await;
        t.advance(secs(5));
        assert_eq!(t.check("q", "g", busy).await, None, "a task joined 5 s ago");
    }
    t.grouped("q", "g", "d").await;
    t.advance(secs(1));
    assert_eq!(t.check("q", "g", limits(10, None, Some(100))).await, None, "no max delay, no aggregation");

    let set_id = t.check("q", "g", busy).await.expect("a has waited 16 s");
    assert_eq!(t.set_ids("q", "g", &set_id).await, ["a", "b", "c", "d"]);
    assert!(t.groups(&QueueName::from_static("q")).await.is_empty());
}

/// Invalid limits are refused before anything moves (names cannot be invalid: their types
/// check them).
pub async fn case_aggregation_check_refuses_invalid_input<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Aggregate,
{
    let t = Fixture::new(factory).await;
    t.grouped("q", "g", "a").await;
    t.advance(secs(60));
    assert_invalid(
        t.broker
            .aggregation_check(&QueueName::from_static("q"), &GroupName::from_static("g"), limits(0, None, None))
            .await,
        "group grace period",
    );
    assert_invalid(
        t.broker
            .aggregation_check(&QueueName::from_static("q"), &GroupName::from_static("g"), limits(1, None, Some(0)))
            .await,
        "group max size",
    );
    let short_delay = AggregationLimits { max_delay: Some(millis(500)), ..limits(1, None, None) };
    assert_invalid(
        t.broker.aggregation_check(&QueueName::from_static("q"), &GroupName::from_static("g"), short_delay).await,
        "group max delay",
    );
    assert_eq!(t.groups(&QueueName::from_static("q")).await, [("g".to_owned(), 1)]);
}

/// Completing a set stores the aggregated task as an enqueue would and deletes the set and its
/// members; a set completed once is gone, and completing it again writes nothing.
pub async fn case_complete_aggregation_enqueues_and_deletes_the_members<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) where
    F::Broker: Aggregate,
{
    let t = Fixture::new(factory).await;
    t.grouped("q", "g", "a").await;
    t.grouped("q", "g", "b").await;
    t.advance(secs(1));
    let set_id = t.check("q", "g", limits(1, None, None)).await.expect("ready");

    t.complete_set("q", "g", &set_id, t.aggregated("q", "sum")).await.unwrap();

    assert_eq!(t.all_ids("q", TaskState::Pending).await, ["sum"]);
    assert_eq!(t.task("q", "sum").await.type_name, "aggregated");
    assert_task_not_found(t.broker.task_info(&QueueName::from_static("q"), &TaskId::from_static("a")).await, "q", "a");
    assert_task_not_found(t.broker.task_info(&QueueName::from_static("q"), &TaskId::from_static("b")).await, "q", "b");
    assert_set_not_found(
        t.broker.read_aggregation_set(&QueueName::from_static("q"), &GroupName::from_static("g"), &set_id).await,
        "q",
        "g",
        &set_id,
    );
    let again = t.complete_set("q", "g", &set_id, t.aggregated("q", "sum2")).await;
    assert_set_not_found(again, "q", "g", &set_id);
    assert_eq!(t.info("q").await.size, 1, "only the aggregated task is left");
    assert_eq!(t.take("q", "sum").await.message.payload, "sum");
}

/// A refused completion writes nothing: the set keeps its members, and can be completed later.
pub async fn case_refused_completion_keeps_the_set<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Aggregate,
{
    let t = Fixture::new(factory).await;
    t.plain("q", "taken").await;
    t.grouped("q", "g", "a").await;
    t.advance(secs(1));
    let set_id = t.check("q", "g", limits(1, None, None)).await.expect("ready");

    let conflict = t.complete_set("q", "g", &set_id, t.aggregated("q", "taken")).await;
    assert_id_conflict(conflict, "q", "taken");
    let elsewhere = t.complete_set("q", "g", &set_id, t.aggregated("other", "sum")).await;
    assert_invalid(elsewhere, "queue");
    let wrong_group = t.complete_set("q", "h", &set_id, t.aggregated("q", "sum")).await;
    assert_set_not_found(wrong_group, "q", "h", &set_id);
    assert_invalid(t.complete_set("q", "g", "", t.aggregated("q", "sum")).await, "aggregation set ID");

    assert_eq!(t.set_ids("q", "g", &set_id).await, ["a"]);
    assert_eq!(t.all_ids("q", TaskState::Pending).await, ["taken"]);
    t.complete_set("q", "g", &set_id, t.aggregated("q", "sum")).await.unwrap();
    assert_eq!(t.all_ids("q", TaskState::Pending).await, ["taken", "sum"]);
}

/// Completing keeps the members' uniqueness locks until their TTL, as Go does.
pub async fn case_completing_keeps_the_members_uniqueness_locks<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) where
    F::Broker: Aggregate,
{
    let t = Fixture::new(factory).await;
    let unique = || TaskOptions::new().queue("q").group("g").unique(secs(3_600));
    t.enqueue("a", &Task::new("t", "same"), unique()).await.unwrap();
    t.advance(secs(1));
    let set_id = t.check("q", "g", limits(1, None, None)).await.expect("ready");
    t.complete_set("q", "g", &set_id, t.aggregated("q", "sum")).await.unwrap();

    let again = t.enqueue("b", &Task::new("t", "same"), unique()).await;
    assert!(matches!(again, Err(Error::DuplicateTask { .. })), "the lock outlives its task: {again:?}");
}

/// Deleting a set deletes its members; deleting a set that does not exist is no error.
pub async fn case_delete_aggregation_set_deletes_its_members<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Aggregate,
{
    let t = Fixture::new(factory).await;
    t.grouped("q", "g", "a").await;
    t.advance(secs(1));
    let set_id = t.check("q", "g", limits(1, None, None)).await.expect("ready");
    t.grouped("q", "g", "later").await;

    t.broker.delete_aggregation_set(&QueueName::from_static("q"), &GroupName::from_static("g"), &set_id).await.unwrap();

    assert_task_not_found(t.broker.task_info(&QueueName::from_static("q"), &TaskId::from_static("a")).await, "q", "a");
    assert_set_not_found(
        t.broker.read_aggregation_set(&QueueName::from_static("q"), &GroupName::from_static("g"), &set_id).await,
        "q",
        "g",
        &set_id,
    );
    assert_eq!(
        t.groups(&QueueName::from_static("q")).await,
        [("g".to_owned(), 1)],
        "a task that joined later is not in the set"
    );
    t.broker.delete_aggregation_set(&QueueName::from_static("q"), &GroupName::from_static("g"), &set_id).await.unwrap();
    assert_eq!(t.info("q").await.size, 1);
}

/// A set whose deadline has passed goes back to its group: its members keep their order, the
/// group is listed again, and the next check aggregates them anew.
pub async fn case_stale_sets_are_reclaimed_into_their_group<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: Aggregate,
{
    let t = Fixture::new(factory).await;
    t.grouped("q", "g", "a").await;
    t.advance(secs(1));
    t.grouped("q", "g", "b").await;
    t.advance(secs(1));
    let set_id = t.check("q", "g", limits(1, None, None)).await.expect("ready");
    assert!(t.groups(&QueueName::from_static("q")).await.is_empty());

    t.advance(millis(119_999));
    assert_eq!(
        t.broker.reclaim_stale_aggregation_sets(&QueueName::from_static("q")).await.unwrap(),
        0,
        "before the deadline"
    );
    assert_eq!(t.set_ids("q", "g", &set_id).await, ["a", "b"]);
    t.advance(millis(1));
    assert_eq!(
        t.broker.reclaim_stale_aggregation_sets(&QueueName::from_static("q")).await.unwrap(),
        1,
        "at the deadline"
    );

    assert_set_not_found(
        t.broker.read_aggregation_set(&QueueName::from_static("q"), &GroupName::from_static("g"), &set_id).await,
        "q",
        "g",
        &set_id,
    );
    assert_eq!(t.groups(&QueueName::from_static("q")).await, [("g".to_owned(), 2)]);
    assert_eq!(t.all_ids("q", TaskState::Aggregating).await, ["a", "b"]);
    assert_eq!(t.broker.reclaim_stale_aggregation_sets(&QueueName::from_static("q")).await.unwrap(), 0);
    // Back with the scores they joined with: both have waited the grace period long since.
    let again = t.check("q", "g", limits(60, None, None)).await.expect("ready again");
    assert_eq!(t.set_ids("q", "g", &again).await, ["a", "b"]);
    let completed = t.complete_set("q", "g", &set_id, t.aggregated("q", "late")).await;
    assert_set_not_found(completed, "q", "g", &set_id);
}
