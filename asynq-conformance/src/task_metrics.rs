//! Per task type metrics (`TaskMetrics`): samples add up per queue, type and bucket, at minute
//! and hour resolution; a bucket keeps a bounded number of types; bad samples write nothing.

use super::BrokerFactory;
use super::fixture::{Fixture, at, names, secs};
use asynq_core::broker::TaskMetrics;
use asynq_core::task_metrics::{MAX_METRIC_TYPES, MetricsResolution, OTHER_TYPES, TaskMetricsSample, TypeCounts};
use asynq_core::{Error, QueueName};
use std::time::SystemTime;

fn sample(queue: &QueueName, type_name: &str, at: SystemTime, runs: u64, failed: u64, ms: u64) -> TaskMetricsSample {
    let max_ms = if runs == 0 { 0 } else { ms.div_ceil(runs) };
    TaskMetricsSample {
        queue: queue.clone(),
        type_name: type_name.to_owned(),
        at,
        counts: TypeCounts { runs, failed, total_ms: ms, max_ms },
    }
}

/// Samples of two types over two minutes add up per minute and per hour, apart per queue;
/// a second write to a bucket adds to it and keeps the longest attempt; empty buckets are
/// left out of a read.
pub async fn case_task_metrics_add_up_per_type_and_bucket<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: TaskMetrics,
{
    let t = Fixture::new(factory).await;
    let [default, other]: [QueueName; 2] = names(&["default", "other"]).try_into().unwrap();
    let minute = at(120);
    t.broker
        .record_task_metrics(&[
            sample(&default, "email:send", minute, 3, 1, 30),
            sample(&default, "image:resize", minute + secs(59), 2, 0, 500),
            sample(&other, "email:send", minute, 7, 7, 70),
        ])
        .await
        .unwrap();
    t.broker
        .record_task_metrics(&[
            sample(&default, "email:send", minute + secs(60), 1, 0, 90),
            sample(&default, "email:send", minute + secs(1), 1, 0, 50),
        ])
        .await
        .unwrap();

    let read = |queue: QueueName, resolution| {
        let broker = &t.broker;
        async move { broker.task_metrics(&queue, resolution, at(0), at(600)).await.unwrap() }
    };
    let minutes = read(default.clone(), MetricsResolution::Minute).await;
    assert_eq!(minutes.iter().map(|b| b.start_time()).collect::<Vec<_>>(), vec![at(120), at(180)]);
    let email = minutes[0].types["email:send"];
    assert_eq!(email, TypeCounts { runs: 4, failed: 1, total_ms: 80, max_ms: 50 });
    assert_eq!(minutes[0].types["image:resize"], TypeCounts { runs: 2, failed: 0, total_ms: 500, max_ms: 250 });
    assert_eq!(minutes[1].types.len(), 1);
    assert_eq!(minutes[1].types["email:send"], TypeCounts { runs: 1, failed: 0, total_ms: 90, max_ms: 90 });

    let hours = read(default.clone(), MetricsResolution::Hour).await;
    assert_eq!(hours.len(), 1);
    assert_eq!(hours[0].start_time(), at(0));
    assert_eq!(hours[0].types["email:send"], TypeCounts { runs: 5, failed: 1, total_ms: 170, max_ms: 90 });

    let others = read(other.clone(), MetricsResolution::Minute).await;
    assert_eq!(others.len(), 1);
    assert_eq!(others[0].types["email:send"], TypeCounts { runs: 7, failed: 7, total_ms: 70, max_ms: 10 });

    let none = t.broker.task_metrics(&default, MetricsResolution::Minute, at(600), at(900)).await.unwrap();
    assert!(none.is_empty(), "{none:?}");
}

/// A bucket keeps at most `MAX_METRIC_TYPES` types; the attempts of others count under
/// `OTHER_TYPES`, so the totals stay right; the next bucket has room again.
pub async fn case_task_metrics_keep_a_bounded_number_of_types<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: TaskMetrics,
{
    let t = Fixture::new(factory).await;
    let queue = QueueName::default();
    let flood: Vec<TaskMetricsSample> =
        (0..MAX_METRIC_TYPES + 5).map(|i| sample(&queue, &format!("random:{i}"), at(0), 1, 0, 2)).collect();
    t.broker.record_task_metrics(&flood).await.unwrap();
    t.broker.record_task_metrics(&[sample(&queue, "late", at(1), 2, 1, 4)]).await.unwrap();
    t.broker.record_task_metrics(&[sample(&queue, "late", at(60), 1, 0, 1)]).await.unwrap();

    let minutes = t.broker.task_metrics(&queue, MetricsResolution::Minute, at(0), at(60)).await.unwrap();
    let first = &minutes[0].types;
    assert_eq!(first.keys().filter(|name| name.as_str() != OTHER_TYPES).count(), MAX_METRIC_TYPES);
    let runs: u64 = first.values().map(|c| c.runs).sum();
    assert_eq!(runs, MAX_METRIC_TYPES as u64 + 5 + 2, "every attempt is counted");
    assert_eq!(first[OTHER_TYPES].runs, 7);
    assert_eq!(first[OTHER_TYPES].failed, 1);
    assert!(!first.contains_key("late"));
    assert_eq!(minutes[1].types["late"].runs, 1, "the next minute has room");
}

/// A batch holding one bad sample (a blank type, more failures than runs) is refused whole and
/// writes nothing; a read of a reversed or too long range is refused.
pub async fn case_bad_task_metrics_write_nothing<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F)
where
    F::Broker: TaskMetrics,
{
    let t = Fixture::new(factory).await;
    let queue = QueueName::default();
    let good = sample(&queue, "ok", at(0), 1, 0, 1);
    for bad in [sample(&queue, " ", at(0), 1, 0, 1), sample(&queue, "x", at(0), 1, 2, 1)] {
        let err = t.broker.record_task_metrics(&[good.clone(), bad]).await.unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{err:?}");
    }
    let read = t.broker.task_metrics(&queue, MetricsResolution::Minute, at(0), at(60)).await.unwrap();
    assert!(read.is_empty(), "{read:?}");
    for (from, to) in [(at(60), at(0)), (at(0), at(2 * 86_400))] {
        let err = t.broker.task_metrics(&queue, MetricsResolution::Minute, from, to).await.unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{err:?}");
    }
}
