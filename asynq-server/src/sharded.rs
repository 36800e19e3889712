//! The served priorities of sharded queues (`Config::sharded_queues`): each declared logical
//! queue's priority split over its shards, so that the logical queue as a whole weighs what its
//! priority says against the server's other queues, and each shard is tried first in turn with
//! the others (the weighted order is drawn anew for every fetch).

use asynq_core::QueueName;
use asynq_core::shard::ShardedQueue;

/// The most the other queues' priorities are multiplied by to split a logical queue's priority
/// over its shards in whole numbers; past it the split is rounded.
const MAX_SCALE: u32 = 64;

/// The shards of `sharded` (logical names with priorities) that `declared` names, each with its
/// part of its logical queue's priority, and the factor by which every other queue's priority
/// is to be multiplied. With strict priority nothing is split: each shard takes its logical
/// queue's priority, and it is tried among the queues of that priority in random order.
/// A logical queue not declared yet serves nothing (it is looked for again on every refresh).
pub(crate) fn shard_priorities(
    sharded: &[(QueueName, u32)],
    declared: &[ShardedQueue],
    strict: bool,
) -> (Vec<(QueueName, u32)>, u32) {
    let served: Vec<(&ShardedQueue, u32)> = sharded
        .iter()
        .filter_map(|(logical, priority)| Some((declared.iter().find(|d| d.logical() == logical)?, *priority)))
        .collect();
    if strict {
        let shards = served
            .iter()
            .flat_map(|(declared, priority)| declared.shards().iter().map(move |shard| (shard.clone(), *priority)))
            .collect();
        return (shards, 1);
    }
    let counts = served.iter().map(|(declared, _)| u32::try_from(declared.count()).unwrap_or(MAX_SCALE));
    let lcm = counts.clone().try_fold(1u32, |l, k| Some(l / gcd(l, k) * k).filter(|l| *l <= MAX_SCALE));
    let scale = lcm.unwrap_or_else(|| counts.max().unwrap_or(1));
    let shards = served
        .iter()
        .flat_map(|(declared, priority)| {
            let count = u32::try_from(declared.count()).unwrap_or(MAX_SCALE);
            let part = (priority.saturating_mul(scale) + count / 2) / count;
            declared.shards().iter().map(move |shard| (shard.clone(), part.max(1)))
        })
        .collect();
    (shards, scale)
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(logical: &'static str, count: usize) -> ShardedQueue {
        ShardedQueue::plain(QueueName::from_static(logical), count).unwrap()
    }

    #[test]
    fn a_priority_is_split_over_the_shards() {
        let sharded = [(QueueName::from_static("orders"), 3), (QueueName::from_static("later"), 1)];
        let (shards, scale) = shard_priorities(&sharded, &[declared("orders", 4)], false);
        assert_eq!(scale, 4, "the other queues weigh 4 times their priority");
        assert_eq!(shards.len(), 4, "an undeclared queue serves nothing");
        assert!(shards.iter().all(|(_, p)| *p == 3), "{shards:?}");
    }

    #[test]
    fn counts_share_one_scale_or_are_rounded() {
        let sharded = [(QueueName::from_static("a"), 2), (QueueName::from_static("b"), 1)];
        let (shards, scale) = shard_priorities(&sharded, &[declared("a", 2), declared("b", 3)], false);
        assert_eq!(scale, 6);
        let weight = |prefix: &str| shards.iter().filter(|(q, _)| q.starts_with(prefix)).map(|(_, p)| p).sum::<u32>();
        assert_eq!((weight("a~"), weight("b~")), (12, 6));
        let (_, scale) = shard_priorities(&sharded, &[declared("a", 64), declared("b", 63)], false);
        assert_eq!(scale, 64, "past the limit: the largest count");
    }

    #[test]
    fn strict_priority_splits_nothing() {
        let sharded = [(QueueName::from_static("a"), 5)];
        let (shards, scale) = shard_priorities(&sharded, &[declared("a", 3)], true);
        assert_eq!(scale, 1);
        assert_eq!(shards.iter().map(|(_, p)| *p).collect::<Vec<_>>(), [5, 5, 5]);
    }
}
