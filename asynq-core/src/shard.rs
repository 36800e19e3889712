//! Sharded queues: one logical queue stored as K ordinary queues (its shards), so that on a Redis
//! Cluster one queue is spread over several masters instead of one hash slot.
//!
//! A [`ShardedQueue`] is a declaration, as [`ShardedQueues`](crate::broker::ShardedQueues)
//! keeps it: the logical name, its shards' queue names, and a generation. The rules live here:
//! - the logical name holds no [`SHARD_SEPARATOR`] (`~`), so a shard name tells its logical queue;
//! - the count is 1 to [`MAX_SHARDS`];
//! - shard `i` of `orders` is named `orders~i`, or `orders~i~s` with a salt `s` a broker chose
//!   so that the shard's hash slot lands on a master with few shards ([`shard_name`]).
//!
//! Shards are ordinary queues: Go asynq's servers and CLI see K queues.
//!
//! ```
//! use asynq_core::QueueName;
//! use asynq_core::shard::ShardedQueue;
//!
//! let orders = ShardedQueue::plain(QueueName::from_static("orders"), 4)?;
//! assert_eq!(orders.shards()[2], "orders~2");
//! // A key always picks the same shard, so tasks of one key keep their order.
//! assert_eq!(orders.shard_for_key(b"customer-7"), orders.shard_for_key(b"customer-7"));
//! assert!(ShardedQueue::plain(QueueName::from_static("orders"), 0).is_err());
//! # Ok::<(), asynq_core::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::info::QueueInfo;
use crate::names::QueueName;

/// The most shards one logical queue may have.
pub const MAX_SHARDS: usize = 64;

/// What separates a logical queue's name from a shard's index (and salt) in a shard's name.
pub const SHARD_SEPARATOR: char = '~';

/// A logical queue stored as K shards, each an ordinary queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardedQueue {
    logical: QueueName,
    shards: Vec<QueueName>,
    generation: u64,
}

/// Checks that `count` shards are allowed: 1 to [`MAX_SHARDS`].
///
/// Errors: [`Error::InvalidArgument`] (field `"shards"`) otherwise.
pub fn check_shard_count(count: usize) -> Result<()> {
    if count == 0 || count > MAX_SHARDS {
        return Err(Error::invalid("shards", format!("a sharded queue has 1 to {MAX_SHARDS} shards, not {count}")));
    }
    Ok(())
}

/// Checks that `logical` may name a sharded queue: it holds no [`SHARD_SEPARATOR`].
///
/// Errors: [`Error::InvalidArgument`] (field `"queue"`) otherwise.
pub fn check_logical_name(logical: &QueueName) -> Result<()> {
    if logical.contains(SHARD_SEPARATOR) {
        let why =
            format!("a sharded queue's name cannot hold {SHARD_SEPARATOR:?}, which names its shards: {logical:?}");
        return Err(Error::invalid("queue", why));
    }
    Ok(())
}

/// The name of shard `index` of `logical` with `salt`: `<logical>~<index>`, or
/// `<logical>~<index>~<salt>` for a salt above 0.
pub fn shard_name(logical: &QueueName, index: usize, salt: u32) -> QueueName {
    let name = if salt == 0 {
        format!("{logical}{SHARD_SEPARATOR}{index}")
    } else {
        format!("{logical}{SHARD_SEPARATOR}{index}{SHARD_SEPARATOR}{salt}")
    };
    QueueName::new(name).expect("a checked queue name with a separator and digits is a queue name")
}

/// The logical queue a queue named `queue` would be a shard of: the part before its first
/// [`SHARD_SEPARATOR`]; `None` for a name without one.
pub fn logical_of(queue: &str) -> Option<&str> {
    queue.split_once(SHARD_SEPARATOR).map(|(logical, _)| logical).filter(|l| !l.trim().is_empty())
}

/// Whether `queue` is, or would be taken for, a shard of `logical`: its name begins with
/// `<logical>~`.
pub fn is_shard_of(queue: &str, logical: &QueueName) -> bool {
    logical_of(queue) == Some(logical.as_str())
}

/// A stable 64-bit hash of `bytes` (FNV-1a): the same in every process and version, so a key
/// always picks the same shard.
pub fn stable_hash(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// What a broker does with a declaration of `logical` with `count` shards, given its
/// declaration as it is (`declared`) and the registered queues: `Ok(Some(_))` answers the
/// declaration made already with this count, `Ok(None)` lets the broker declare it.
///
/// Errors: as [`ShardedQueues::declare_sharded_queue`](crate::broker::ShardedQueues::declare_sharded_queue).
pub fn check_declaration<'a>(
    logical: &QueueName,
    count: usize,
    declared: Option<&ShardedQueue>,
    registered: impl IntoIterator<Item = &'a str>,
) -> Result<Option<ShardedQueue>> {
    check_logical_name(logical)?;
    check_shard_count(count)?;
    if let Some(declared) = declared {
        if declared.count() == count {
            return Ok(Some(declared.clone()));
        }
        let reason = format!(
            "it is declared with {} shards, not {count} (changing the count is not supported yet)",
            declared.count()
        );
        return Err(Error::QueueNameConflict { queue: logical.clone(), reason });
    }
    for queue in registered {
        if queue == logical.as_str() {
            let reason = "a queue of this name exists".to_owned();
            return Err(Error::QueueNameConflict { queue: logical.clone(), reason });
        }
        if is_shard_of(queue, logical) {
            let reason = format!("a queue named {queue:?}, which its shards would be taken for, exists");
            return Err(Error::QueueNameConflict { queue: logical.clone(), reason });
        }
    }
    Ok(None)
}

impl ShardedQueue {
    /// A declaration of `logical` with `shards`, checked: a logical name without
    /// [`SHARD_SEPARATOR`], 1 to [`MAX_SHARDS`] shards, shard `i` named `<logical>~i` or
    /// `<logical>~i~<salt>`.
    ///
    /// Errors: [`Error::InvalidArgument`] naming the rule broken.
    pub fn new(logical: QueueName, shards: Vec<QueueName>, generation: u64) -> Result<Self> {
        check_logical_name(&logical)?;
        check_shard_count(shards.len())?;
        for (index, shard) in shards.iter().enumerate() {
            let plain = shard_name(&logical, index, 0);
            let salted = shard
                .strip_prefix(plain.as_str())
                .and_then(|rest| rest.strip_prefix(SHARD_SEPARATOR))
                .is_some_and(|salt| salt.parse::<u32>().is_ok_and(|s| s > 0 && s.to_string() == salt));
            if shard != &plain && !salted {
                let why =
                    format!("shard {index} of {logical:?} must be named {plain:?} or {plain:?}~<salt>, not {shard:?}");
                return Err(Error::invalid("shards", why));
            }
        }
        Ok(Self { logical, shards, generation })
    }

    /// `logical` with `count` shards named without salt (`<logical>~0` …), generation 1.
    ///
    /// Errors: as [`ShardedQueue::new`].
    pub fn plain(logical: QueueName, count: usize) -> Result<Self> {
        check_logical_name(&logical)?;
        check_shard_count(count)?;
        let shards = (0..count).map(|index| shard_name(&logical, index, 0)).collect();
        Self::new(logical, shards, 1)
    }

    /// The logical queue's name.
    pub fn logical(&self) -> &QueueName {
        &self.logical
    }

    /// The shards' queue names, shard 0 first.
    pub fn shards(&self) -> &[QueueName] {
        &self.shards
    }

    /// How many shards it has.
    pub fn count(&self) -> usize {
        self.shards.len()
    }

    /// The declaration's generation: 1 when first declared.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The shard a task with placement key `key` goes to: [`stable_hash`] of the key, modulo
    /// the count. Tasks of one key go to one shard, where they keep their order.
    pub fn shard_for_key(&self, key: &[u8]) -> &QueueName {
        let count = self.shards.len() as u64;
        &self.shards[usize::try_from(stable_hash(key) % count).unwrap_or(0)]
    }

    /// Shard `turn` modulo the count, for round-robin placement.
    pub fn shard_at(&self, turn: usize) -> &QueueName {
        &self.shards[turn % self.shards.len()]
    }

    /// Whether `queue` is one of its shards.
    pub fn has_shard(&self, queue: &str) -> bool {
        self.shards.iter().any(|shard| shard == queue)
    }
}

/// The info of the logical queue `sharded` from its shards' `infos`: counts, statistics and
/// memory summed, the latency and the timestamp the largest, paused when every shard is, and
/// the shards listed.
pub fn logical_queue_info(sharded: &ShardedQueue, infos: &[QueueInfo]) -> QueueInfo {
    let timestamp = infos.iter().map(|i| i.timestamp).max().unwrap_or(std::time::UNIX_EPOCH);
    let mut sum = QueueInfo::empty(sharded.logical(), timestamp);
    for info in infos {
        sum.latency = sum.latency.max(info.latency);
        sum.size += info.size;
        sum.groups += info.groups;
        sum.pending += info.pending;
        sum.active += info.active;
        sum.scheduled += info.scheduled;
        sum.retry += info.retry;
        sum.archived += info.archived;
        sum.completed += info.completed;
        sum.aggregating += info.aggregating;
        sum.waiting += info.waiting;
        sum.processed += info.processed;
        sum.failed += info.failed;
        sum.processed_total += info.processed_total;
        sum.failed_total += info.failed_total;
        sum.memory_usage += info.memory_usage;
    }
    sum.paused = !infos.is_empty() && infos.iter().all(|i| i.paused);
    sum.shards = sharded.shards().to_vec();
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(name: &'static str) -> QueueName {
        QueueName::from_static(name)
    }

    #[test]
    fn counts_out_of_range_are_refused() {
        assert!(matches!(ShardedQueue::plain(q("o"), 0), Err(Error::InvalidArgument { field: "shards", .. })));
        assert!(matches!(ShardedQueue::plain(q("o"), MAX_SHARDS + 1), Err(Error::InvalidArgument { .. })));
        assert_eq!(ShardedQueue::plain(q("o"), MAX_SHARDS).map(|s| s.count()).ok(), Some(MAX_SHARDS));
    }

    #[test]
    fn a_logical_name_with_the_separator_is_refused() {
        let refused = ShardedQueue::plain(q("orders~1"), 2);
        assert!(matches!(refused, Err(Error::InvalidArgument { field: "queue", .. })), "{refused:?}");
    }

    #[test]
    fn shard_names_carry_index_and_salt() {
        assert_eq!(shard_name(&q("orders"), 3, 0), "orders~3");
        assert_eq!(shard_name(&q("orders"), 3, 17), "orders~3~17");
        let salted = ShardedQueue::new(q("orders"), vec![q("orders~0~5"), q("orders~1")], 2).unwrap();
        assert_eq!(salted.generation(), 2);
        assert!(salted.has_shard("orders~0~5"));
        for bad in [vec![q("orders~1")], vec![q("orders~0~0")], vec![q("orders~0~x")], vec![q("other~0")]] {
            assert!(ShardedQueue::new(q("orders"), bad.clone(), 1).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_shard_name_tells_its_logical_queue() {
        assert_eq!(logical_of("orders~3~17"), Some("orders"));
        assert_eq!(logical_of("orders"), None);
        assert!(is_shard_of("orders~0", &q("orders")));
        assert!(!is_shard_of("orders2~0", &q("orders")));
    }

    #[test]
    fn declarations_are_checked_against_what_exists() {
        let declared = ShardedQueue::plain(q("o"), 2).unwrap();
        assert_eq!(check_declaration(&q("o"), 2, Some(&declared), []).unwrap(), Some(declared.clone()));
        let other_count = check_declaration(&q("o"), 3, Some(&declared), []);
        assert!(matches!(other_count, Err(Error::QueueNameConflict { .. })), "{other_count:?}");
        for taken in ["o", "o~5", "o~0~1"] {
            let refused = check_declaration(&q("o"), 2, None, ["a", taken]);
            assert!(matches!(refused, Err(Error::QueueNameConflict { .. })), "{taken}: {refused:?}");
        }
        assert_eq!(check_declaration(&q("o"), 2, None, ["o2", "p~0"]).unwrap(), None);
        assert!(matches!(check_declaration(&q("o"), 0, None, []), Err(Error::InvalidArgument { .. })));
    }

    #[test]
    fn a_logical_queue_info_sums_its_shards() {
        let sharded = ShardedQueue::plain(q("o"), 2).unwrap();
        let at = |s: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s);
        let mut a = QueueInfo::empty(&q("o~0"), at(10));
        (a.size, a.pending, a.processed, a.latency, a.paused) = (2, 2, 5, std::time::Duration::from_secs(4), true);
        let mut b = QueueInfo::empty(&q("o~1"), at(12));
        (b.size, b.retry, b.processed, b.latency) = (1, 1, 1, std::time::Duration::from_secs(1));
        let sum = logical_queue_info(&sharded, &[a, b]);
        assert_eq!((sum.queue.as_str(), sum.size, sum.pending, sum.retry, sum.processed), ("o", 3, 2, 1, 6));
        assert_eq!((sum.latency, sum.timestamp, sum.paused), (std::time::Duration::from_secs(4), at(12), false));
        assert_eq!(sum.shards, sharded.shards());
        assert_eq!(sum.sum_of_states(), sum.size);
    }

    #[test]
    fn keys_pick_stable_shards_spread_over_all() {
        let sharded = ShardedQueue::plain(q("o"), 8).unwrap();
        // FNV-1a's published test vector: the hash is the same everywhere.
        assert_eq!(stable_hash(b"a"), 0xaf63_dc4c_8601_ec8c);
        let picked: std::collections::BTreeSet<_> =
            (0..200).map(|i| sharded.shard_for_key(format!("key-{i}").as_bytes()).clone()).collect();
        assert_eq!(picked.len(), 8);
        assert_eq!(sharded.shard_at(9), "o~1");
    }
}
