//! Workflows, memory against Redis: random DAGs over two queues (random failure policies) are
//! stored on both brokers, then run by the same random steps (take every pending task of a
//! queue, finish a running one, picked by ID, with success, retry or archive, with a result),
//! each followed by a relay; tasks released together may be queued in another order on each
//! broker, which these steps do not depend on. After
//! every step both brokers must show every task in the same state with the same error, and the
//! same parents' outcomes to each task that runs. The Redis side runs its scripts on a real
//! redis-server, the cross-queue relay included; the memory broker passes everything on in one
//! step: the two must still agree once relayed.

use asynq_conformance::fixture::START_SECS;
use asynq_core::broker::Outcome;
use asynq_core::broker::Workflows;
use asynq_core::time::from_unix_secs;
use asynq_core::workflow::{DagTask, Flow, OnParentFailure, ParentResult, TaskRef};
use asynq_core::{Broker, QueueName, SimulatedClock, StoredTask, Task, TaskOptions};
use asynq_memory::MemoryBroker;
use asynq_tests::{RedisServer, redis_broker};
use bytes::Bytes;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use std::sync::Arc;
use std::time::Duration;

const QUEUES: [&str; 2] = ["wa", "wb"];

/// One task of a random DAG: its queue, the earlier tasks it waits for, and its policy.
#[derive(Debug, Clone)]
struct Node {
    queue: usize,
    after: Vec<usize>,
    run_anyway: bool,
}

/// One step: take every pending task of a queue, or finish the `pick`-th running task by ID.
#[derive(Debug, Clone)]
enum Step {
    Take(usize),
    Finish { pick: usize, how: u8 },
}

fn dag() -> impl Strategy<Value = Vec<Node>> {
    proptest::collection::vec(
        (0..2usize, proptest::collection::vec(any::<prop::sample::Index>(), 0..3), any::<bool>()),
        1..9,
    )
    .prop_map(|nodes| {
        nodes
            .into_iter()
            .enumerate()
            .map(|(i, (queue, after, run_anyway))| {
                let mut after: Vec<usize> =
                    if i == 0 { Vec::new() } else { after.iter().map(|a| a.index(i)).collect() };
                after.sort_unstable();
                after.dedup();
                Node { queue, after, run_anyway }
            })
            .collect()
    })
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        (0..2usize).prop_map(Step::Take),
        (any::<usize>(), 0..3u8).prop_map(|(pick, how)| Step::Finish { pick, how }),
    ];
    proptest::collection::vec(step, 1..40)
}

fn flow(nodes: &[Node]) -> Flow {
    Flow::dag(nodes.iter().enumerate().map(|(i, node)| {
        let options = TaskOptions::new().queue(QUEUES[node.queue]).task_id(format!("t{i}")).max_retry(1);
        let task = DagTask::new(format!("t{i}"), Task::new("t", format!("t{i}")), options)
            .after(node.after.iter().map(|a| format!("t{a}")));
        if node.run_anyway { task.on_parent_failure(OnParentFailure::RunAnyway) } else { task }
    }))
}

/// One broker under test, with the tasks it handed out and not yet finished.
struct Side<B> {
    broker: B,
    running: Vec<StoredTask>,
}

impl<B: Broker + Workflows + Clone> Side<B> {
    async fn step(&mut self, step: &Step, at: std::time::SystemTime) -> Result<(), TestCaseError> {
        let fail = |e: asynq_core::Error| TestCaseError::fail(e.to_string());
        match step {
            Step::Take(queue) => {
                let taken = self.broker.dequeue(&[QueueName::from_static(QUEUES[*queue])], 100).await.map_err(fail)?;
                self.running.extend(taken.into_iter().map(|d| d.message));
                self.running.sort_by(|a, b| a.id.cmp(&b.id));
            }
            Step::Finish { pick, how } => {
                if self.running.is_empty() {
                    return Ok(());
                }
                let message = self.running.remove(pick % self.running.len());
                let outcome = match how {
                    0 => {
                        let result = Bytes::from(format!("r-{}", message.id));
                        self.broker.write_result(&message.queue, &message.id, result).await.map_err(fail)?;
                        Outcome::Done
                    }
                    1 => Outcome::Archive { error: format!("{} broke", message.id) },
                    _ => Outcome::Retry { retry_at: at, error: "again".to_owned(), is_failure: true },
                };
                self.broker.finish(&message, outcome).await.map_err(fail)?;
            }
        }
        self.broker
            .relay(&[QueueName::from_static(QUEUES[0]), QueueName::from_static(QUEUES[1])])
            .await
            .map_err(fail)?;
        asynq_core::broker::Forward::forward_ready(
            &self.broker,
            &[QueueName::from_static(QUEUES[0]), QueueName::from_static(QUEUES[1])],
        )
        .await
        .map_err(fail)?;
        Ok(())
    }

    /// Each task's state and error (`None` once gone), and the parents' outcomes of the running
    /// ones.
    async fn view(&self, tasks: &[TaskRef]) -> Result<Vec<String>, TestCaseError> {
        let mut view = Vec::new();
        for task in tasks {
            let line = match self.broker.task_info(&task.queue, &task.id).await {
                Ok(info) => format!("{} {} {:?}", task.id, info.state, info.last_error),
                Err(asynq_core::Error::TaskNotFound { .. } | asynq_core::Error::QueueNotFound { .. }) => {
                    format!("{} gone", task.id)
                }
                Err(e) => return Err(TestCaseError::fail(e.to_string())),
            };
            view.push(line);
        }
        for message in &self.running {
            let parents: Vec<ParentResult> = self
                .broker
                .parent_results(&TaskRef::of(message))
                .await
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            view.push(format!(
                "{} sees {:?}",
                message.id,
                parents.iter().map(|p| (&p.task.id, &p.outcome)).collect::<Vec<_>>()
            ));
        }
        Ok(view)
    }
}

async fn run_case(server: &RedisServer, nodes: &[Node], steps: &[Step]) -> Result<(), TestCaseError> {
    server.command(&["FLUSHALL"]).map_err(|e| TestCaseError::fail(format!("FLUSHALL: {e}")))?;
    let start = from_unix_secs(START_SECS);
    let memory_clock = SimulatedClock::new(start);
    let redis_clock = SimulatedClock::new(start);
    let mut memory = Side { broker: MemoryBroker::with_clock(Arc::new(memory_clock.clone())), running: Vec::new() };
    let mut redis =
        Side { broker: redis_broker(&server.url(), Arc::new(redis_clock.clone())).await, running: Vec::new() };
    let plan =
        flow(nodes).plan(100, start, || "wf".to_owned()).map_err(|e| TestCaseError::fail(format!("plan: {e}")))?;
    memory.broker.store_workflow(&plan).await.map_err(|e| TestCaseError::fail(e.to_string()))?;
    redis.broker.store_workflow(&plan).await.map_err(|e| TestCaseError::fail(e.to_string()))?;
    let tasks: Vec<TaskRef> = plan.tasks.iter().map(|t| TaskRef::of(&t.request.message)).collect();
    for (n, step) in steps.iter().enumerate() {
        for clock in [&memory_clock, &redis_clock] {
            clock.advance(Duration::from_secs(1));
        }
        let at = asynq_core::Clock::now(&memory_clock);
        memory.step(step, at).await?;
        redis.step(step, at).await?;
        let (got_memory, got_redis) = (memory.view(&tasks).await?, redis.view(&tasks).await?);
        if got_memory != got_redis {
            return Err(TestCaseError::fail(format!(
                "after step {n} {step:?}:\nmemory:\n  {}\nredis:\n  {}",
                got_memory.join("\n  "),
                got_redis.join("\n  ")
            )));
        }
    }
    Ok(())
}

#[test]
fn memory_and_redis_run_workflows_alike() {
    let cases = std::env::var("ASYNQ_WORKFLOW_CASES").ok().map_or(48, |v| v.parse().expect("a number of cases"));
    let server = RedisServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let result = runner.run(&(dag(), steps()), |(nodes, steps)| runtime.block_on(run_case(&server, &nodes, &steps)));
    match result {
        Ok(()) => {}
        Err(TestError::Fail(reason, (nodes, steps))) => {
            panic!("{reason}\nminimal failing case:\n  nodes {nodes:?}\n  steps {steps:?}")
        }
        Err(TestError::Abort(reason)) => panic!("aborted: {reason}"),
    }
}
