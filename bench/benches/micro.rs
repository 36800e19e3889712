//! Criterion micro-benchmarks of the hot paths that need no Redis: encoding and decoding the
//! stored task message, building key names, choosing the queue order for a dequeue, and one
//! task's enqueue, dequeue and finish on the memory broker.
//!
//! `cargo bench -p asynq-bench --bench micro` runs them (`cargo xtask bench` does too);
//! `cargo test` runs each once as a smoke test.

use asynq_bench::workload::{self, QUEUE};
use asynq_core::broker::{Dequeue, Enqueue, Outcome};
use asynq_core::queue::QueuePriorities;
use asynq_core::{Clock, QueueName, StoredTask, SystemClock, TaskOptions, resolve_enqueue};
use asynq_memory::MemoryBroker;
use asynq_redis::keys::Namespace;
use asynq_redis::proto;
use criterion::{Criterion, criterion_group, criterion_main};
use prost::Message;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

/// A task ID of the length the client generates (a UUID).
const TASK_ID: &str = "6f1c2b9e-0d4a-4c57-9a7e-2f3b5c8d1e40";

/// The stored message of one benchmark task, as the client builds it.
fn benchmark_message() -> StoredTask {
    resolve_enqueue(&workload::task(), &TaskOptions::new(), SystemClock.now(), || TASK_ID.to_owned())
        .expect("the benchmark task is valid")
        .message
}

/// Encoding and decoding the protobuf `TaskMessage`, with the conversions the broker does.
fn task_message(c: &mut Criterion) {
    let message = benchmark_message();
    let bytes = proto::TaskMessage::from(&message).encode_to_vec();
    let mut group = c.benchmark_group("task_message");
    group.bench_function("encode", |b| b.iter(|| proto::TaskMessage::from(black_box(&message)).encode_to_vec()));
    group.bench_function("decode", |b| {
        b.iter(|| {
            StoredTask::try_from(proto::TaskMessage::decode(black_box(bytes.as_slice())).expect("decodes"))
                .expect("reads")
        })
    });
    group.finish();
}

/// Building key names: per queue, and the set one dequeue call needs.
fn keys(c: &mut Criterion) {
    let mut group = c.benchmark_group("keys");
    group.bench_function("namespace_queue_keys", |b| b.iter(|| Namespace::DEFAULT.queue(black_box(QUEUE))));
    let keys = Namespace::DEFAULT.queue(QUEUE);
    group.bench_function("task_key", |b| b.iter(|| black_box(&keys).task(black_box(TASK_ID))));
    group.bench_function("dequeue_keys", |b| {
        b.iter(|| {
            let keys = Namespace::DEFAULT.queue(black_box(QUEUE));
            (keys.pending(), keys.paused(), keys.active(), keys.lease(), keys.task_prefix())
        })
    });
    group.finish();
}

/// The queue order of one dequeue, with the thread-local RNG the processor uses.
fn queue_selection(c: &mut Criterion) {
    let config = |queues: &[(&str, u32)]| -> BTreeMap<String, u32> {
        queues.iter().map(|(name, priority)| ((*name).to_owned(), *priority)).collect()
    };
    let one = QueuePriorities::new(&config(&[(QUEUE, 1)]), false).expect("valid queues");
    let three = config(&[("critical", 6), ("default", 3), ("low", 1)]);
    let weighted = QueuePriorities::new(&three, false).expect("valid queues");
    let strict = QueuePriorities::new(&three, true).expect("valid queues");
    let mut group = c.benchmark_group("queue_order");
    for (name, priorities) in [("one_queue", &one), ("three_weighted", &weighted), ("three_strict", &strict)] {
        group.bench_function(name, |b| b.iter(|| black_box(priorities).order(&mut rand::rng())));
    }
    group.finish();
}

/// One task through the memory broker: build the request, enqueue, dequeue, finish as done.
fn memory_broker(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a tokio runtime");
    let broker = MemoryBroker::new();
    let task = workload::task();
    let options = TaskOptions::new();
    let queues = [QueueName::from_static(QUEUE)];
    let mut next_id = 0_u64;
    c.bench_function("memory_broker/enqueue_dequeue_finish", |b| {
        b.iter(|| {
            runtime.block_on(async {
                next_id += 1;
                let request = resolve_enqueue(&task, &options, SystemClock.now(), || format!("task-{next_id}"))
                    .expect("the benchmark task is valid");
                broker.enqueue(request).await.expect("enqueue");
                let taken = broker.dequeue(&queues, 1).await.expect("dequeue");
                broker.finish(&taken[0].message, Outcome::Done).await.expect("finish");
            })
        })
    });
}

criterion_group! {
    name = micro;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = task_message, keys, queue_selection, memory_broker
}
criterion_main!(micro);
