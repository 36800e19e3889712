//! The daily counters: keyed by the UTC date of the broker's clock at the moment an outcome is
//! recorded, while the totals keep counting across days.

use super::BrokerFactory;
use super::fixture::{DAY, Fixture, archive, at, millis, retry};
use asynq_core::QueueInfo;
use asynq_core::broker::Outcome;
use asynq_core::broker::WorkerBroker;

/// `(processed, failed, processed_total, failed_total)` of `info`.
fn counters(info: &QueueInfo) -> (u64, u64, u64, u64) {
    (info.processed, info.failed, info.processed_total, info.failed_total)
}

/// Outcomes count on the UTC date they are recorded (not the date the task was dequeued): at
/// midnight UTC today's counters start from zero and the totals carry on.
pub async fn case_daily_counters_follow_the_utc_date<F: BrokerFactory<Broker: WorkerBroker>>(factory: &F) {
    let t = Fixture::worker(factory).await;
    t.set(at(DAY - 1) + millis(500));
    t.run("q", "x", archive("x")).await;
    t.run("q", "d", Outcome::Done).await;
    let late = t.activate("q", "late").await;
    assert_eq!(counters(&t.info("q").await), (2, 1, 2, 1));

    t.advance(millis(500));
    assert_eq!(counters(&t.info("q").await), (0, 0, 2, 1), "a new UTC day");

    t.finish(&late, retry(at(DAY + 60), "boom", true)).await;
    assert_eq!(counters(&t.info("q").await), (1, 1, 3, 2));
    t.set(at(2 * DAY));
    assert_eq!(counters(&t.info("q").await), (0, 0, 3, 2));
}
