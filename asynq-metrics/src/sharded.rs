//! Sharded queues in the metrics: each per-queue series of a queue that belongs to a declared
//! sharded queue (a shard, or the plain queue of the logical name) carries the label
//! `logical_queue`, so that `sum by (logical_queue)` shows the logical queue as one; other
//! queues keep Go's labels alone. One more gauge, `asynq_sharded_queue_shards{logical_queue}`,
//! gives each declared logical queue's shard count. No series is added per shard. The worker
//! metrics label a server's sharded queues alike ([`logical_queue_of`]).

use asynq_core::shard::{ShardedQueue, logical_of};
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use std::collections::BTreeSet;
use std::fmt;

/// The logical names of the declared sharded queues.
#[derive(Debug, Default)]
pub(crate) struct Logical<'a>(BTreeSet<&'a str>);

impl<'a> Logical<'a> {
    /// The logical names of `declared`.
    pub(crate) fn new(declared: &'a [ShardedQueue]) -> Self {
        Self(declared.iter().map(|sharded| sharded.logical().as_str()).collect())
    }

    /// The logical queue `queue` belongs to: its own name when it is the plain queue of a
    /// declared logical name, the part before `~` when that is one (a shard of any generation).
    pub(crate) fn of<'q>(&self, queue: &'q str) -> Option<&'q str> {
        logical_queue_of(queue, |name| self.0.contains(name))
    }

    /// The labels of a series of `queue`: `queue`, then `logical_queue` when it belongs to one,
    /// then `extra`.
    pub(crate) fn labels<'q>(&self, queue: &'q str, extra: &[(&'static str, &'q str)]) -> Vec<(&'static str, &'q str)> {
        let mut labels = vec![("queue", queue)];
        if let Some(logical) = self.of(queue) {
            labels.push(("logical_queue", logical));
        }
        labels.extend_from_slice(extra);
        labels
    }
}

/// The logical queue `queue` belongs to, given which names are logical queues (`is_logical`):
/// its own name when it is one (the plain queue of the logical name), the part before `~` when
/// that is one (a shard of any generation), otherwise none.
pub(crate) fn logical_queue_of(queue: &str, is_logical: impl Fn(&str) -> bool) -> Option<&str> {
    if is_logical(queue) {
        return Some(queue);
    }
    logical_of(queue).filter(|logical| is_logical(logical))
}

/// Encodes `asynq_sharded_queue_shards`: each declared sharded queue's shard count.
pub(crate) fn encode_shard_counts(
    declared: &[ShardedQueue],
    encoder: &mut DescriptorEncoder,
) -> Result<(), fmt::Error> {
    if declared.is_empty() {
        return Ok(());
    }
    let mut family = encoder.encode_descriptor(
        "sharded_queue_shards",
        "How many shards a declared sharded queue has; its shards' and its plain queue's series carry its name as \
         logical_queue.",
        None,
        MetricType::Gauge,
    )?;
    for sharded in declared {
        let labels = [("logical_queue", sharded.logical().as_str())];
        ConstGauge::new(sharded.count() as f64).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::QueueName;

    #[test]
    fn a_shard_and_the_plain_queue_of_a_logical_name_carry_it() {
        let declared = [ShardedQueue::plain(QueueName::from_static("orders"), 2).unwrap()];
        let logical = Logical::new(&declared);
        assert_eq!(logical.of("orders~1"), Some("orders"));
        assert_eq!(logical.of("orders~7~3"), Some("orders"), "a shard of another generation");
        assert_eq!(logical.of("orders"), Some("orders"));
        assert_eq!(logical.of("other~1"), None, "not declared");
        assert_eq!(logical.labels("default", &[("state", "pending")]), [("queue", "default"), ("state", "pending")]);
        assert_eq!(logical.labels("orders~0", &[]), [("queue", "orders~0"), ("logical_queue", "orders")]);
    }
}
