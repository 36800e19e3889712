//! The served priorities of sharded queues (`Config::sharded_queues`): each declared logical
//! queue's priority split over its shards, so that the logical queue as a whole weighs what its
//! priority says against the server's other queues, and each shard is tried first in turn with
//! the others (the weighted order is drawn anew for every fetch).

use asynq_core::QueueName;
use asynq_core::shard::ShardedQueue;

/// The most the other queues' priorities are multiplied by to split a logical queue's priority
/// over its shards in whole numbers; past it the split is rounded.
const MAX_SCALE: u32 = 64;

/// The queues that serve `sharded` (logical names with priorities) as `declared`, each with its
/// part of its logical queue's priority, and the factor by which every other queue's priority is to
/// be multiplied. A declared logical queue is served as its shards and, with one shard's part, as
/// the plain queue of its own name, where a producer that does not place tasks on shards (Go's, or
/// ours over a broker that hides the declarations) puts them, and as its strays among
/// `registered` ([`ShardedQueue::is_stray`]), each with a shard's part too. One not declared yet
/// is served as that plain queue alone (it is looked for again on every refresh). With strict priority nothing is split: each takes its logical
/// queue's priority, and it is tried among the queues of that priority in random order.
pub(crate) fn shard_priorities(
    sharded: &[(QueueName, u32)],
    declared: &[ShardedQueue],
    registered: &[QueueName],
    strict: bool,
) -> (Vec<(QueueName, u32)>, u32) {
    let served: Vec<(Vec<QueueName>, u32)> = sharded
        .iter()
        .map(|(logical, priority)| {
            (members(logical, declared.iter().find(|d| d.logical() == logical), registered), *priority)
        })
        .collect();
    if strict {
        let queues = served
            .into_iter()
            .flat_map(|(members, priority)| members.into_iter().map(move |queue| (queue, priority)))
            .collect();
        return (queues, 1);
    }
    let counts = served.iter().map(|(members, _)| u32::try_from(members.len()).unwrap_or(MAX_SCALE));
    let lcm = counts.clone().try_fold(1u32, |l, k| Some(l / gcd(l, k) * k).filter(|l| *l <= MAX_SCALE));
    let scale = lcm.unwrap_or_else(|| counts.max().unwrap_or(1));
    let queues = served
        .into_iter()
        .flat_map(|(members, priority)| {
            let count = u32::try_from(members.len()).unwrap_or(MAX_SCALE);
            let part = (priority.saturating_mul(scale) + count / 2) / count;
            members.into_iter().map(move |queue| (queue, part.max(1)))
        })
        .collect();
    (queues, scale)
}

/// The queues serving one logical queue: its own name, then its shards once `declared` (the
/// newest generation's, then those of one draining after a reshard), then its strays among
/// `registered`.
fn members(logical: &QueueName, declared: Option<&ShardedQueue>, registered: &[QueueName]) -> Vec<QueueName> {
    let strays = registered.iter().filter(|queue| declared.is_some_and(|d| d.is_stray(queue)));
    std::iter::once(logical.clone())
        .chain(declared.into_iter().flat_map(|d| d.all_shards().cloned()))
        .chain(strays.cloned())
        .collect()
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
        let (queues, scale) = shard_priorities(&sharded, &[declared("orders", 3)], &[], false);
        assert_eq!(scale, 4, "the other queues weigh 4 times their priority");
        let names: Vec<&str> = queues.iter().map(|(q, _)| q.as_str()).collect();
        assert_eq!(names, ["orders", "orders~0", "orders~1", "orders~2", "later"], "{queues:?}");
        assert!(queues[..4].iter().all(|(_, p)| *p == 3), "{queues:?}");
        assert_eq!(queues[4].1, 4, "an undeclared queue is served as a plain queue");
    }

    #[test]
    fn counts_share_one_scale_or_are_rounded() {
        let sharded = [(QueueName::from_static("a"), 2), (QueueName::from_static("b"), 1)];
        let (queues, scale) = shard_priorities(&sharded, &[declared("a", 1), declared("b", 2)], &[], false);
        assert_eq!(scale, 6);
        let weight = |prefix: &str| queues.iter().filter(|(q, _)| q.starts_with(prefix)).map(|(_, p)| p).sum::<u32>();
        assert_eq!((weight("a"), weight("b")), (12, 6));
        let (_, scale) = shard_priorities(&sharded, &[declared("a", 63), declared("b", 62)], &[], false);
        assert_eq!(scale, 64, "past the limit: the largest count");
    }

    #[test]
    fn a_draining_generation_shares_the_priority() {
        let orders = declared("orders", 2);
        let next = ShardedQueue::plain_shards(orders.logical(), 2, 3).unwrap();
        let resharded = orders.resharded(next, std::time::UNIX_EPOCH).unwrap();
        let (queues, scale) = shard_priorities(&[(QueueName::from_static("orders"), 2)], &[resharded], &[], false);
        let names: Vec<&str> = queues.iter().map(|(q, _)| q.as_str()).collect();
        assert_eq!(names, ["orders", "orders~g2~0", "orders~g2~1", "orders~g2~2", "orders~0", "orders~1"]);
        assert_eq!((scale, queues.iter().map(|(_, p)| p).sum::<u32>()), (6, 12), "the priority as a whole");
    }

    #[test]
    fn strays_are_served_with_a_shard_s_part() {
        let registered = ["orders~0", "orders~g2~1", "orders~x", "other~0", "orders"].map(QueueName::from_static);
        let orders = ShardedQueue::plain_shards(&QueueName::from_static("orders"), 2, 2).unwrap();
        let orders = ShardedQueue::new(QueueName::from_static("orders"), orders, 2).unwrap();
        let sharded = [(QueueName::from_static("orders"), 1)];
        let (queues, _) = shard_priorities(&sharded, &[orders], &registered, false);
        let names: Vec<&str> = queues.iter().map(|(q, _)| q.as_str()).collect();
        assert_eq!(names, ["orders", "orders~g2~0", "orders~g2~1", "orders~0", "orders~x"]);
        assert!(queues.iter().all(|(_, p)| *p == queues[0].1), "{queues:?}");
        let (queues, _) = shard_priorities(&sharded, &[], &registered, false);
        let names: Vec<&str> = queues.iter().map(|(q, _)| q.as_str()).collect();
        assert_eq!(names, ["orders"], "not declared yet: no queue of another's name");
    }

    #[test]
    fn strict_priority_splits_nothing() {
        let sharded = [(QueueName::from_static("a"), 5)];
        let (shards, scale) = shard_priorities(&sharded, &[declared("a", 3)], &[], true);
        assert_eq!(scale, 1);
        assert_eq!(shards.iter().map(|(_, p)| *p).collect::<Vec<_>>(), [5, 5, 5, 5], "the logical name and 3 shards");
    }
}
