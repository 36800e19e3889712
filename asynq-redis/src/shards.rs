//! [`ShardedQueues`] for [`RedisBroker`]: declarations in one hash
//! ([`Namespace::sharded_queues`](crate::keys::Namespace::sharded_queues)), and on a Cluster
//! shard names salted so that the shards' hash slots land on distinct masters.
//!
//! A declaration is checked (the registered queues, the declaration as it is), then written with
//! `HSETNX`, so two processes declaring one queue at once agree on the first one written; its
//! shards are then registered as queues. These are single-key commands: a script could not touch
//! the hash and `<ns>:queues` at once on a Cluster.

use crate::RedisBroker;
use crate::backend::SlotRange;
use crate::error::{broker_error, unexpected};
use async_trait::async_trait;
use asynq_core::broker::{Inspect, ShardedQueues};
use asynq_core::shard::{ShardedQueue, check_declaration, shard_name};
use asynq_core::{QueueName, Result};
use redis::AsyncCommands;
use std::collections::{BTreeMap, HashMap};

/// The number of hash slots of a Redis Cluster.
const SLOTS: u16 = 16384;

/// The most salts tried for one shard's name before taking the best found.
const MAX_SALT: u32 = 4096;

#[async_trait]
impl ShardedQueues for RedisBroker {
    async fn declare_sharded_queue(&self, logical: &QueueName, count: usize) -> Result<ShardedQueue> {
        let declared = self.sharded_queue(logical).await?;
        let registered = Inspect::queues(self).await?;
        if let Some(answer) =
            check_declaration(logical, count, declared.as_ref(), registered.iter().map(|q| q.as_str()))?
        {
            return Ok(answer);
        }
        let sharded = if self.kind() == crate::backend::CLUSTER {
            let ranges = crate::backend::slot_ranges(&mut self.conn()).await?;
            let shards = spread_over_masters(logical, count, &ranges);
            ShardedQueue::new(logical.clone(), shards, 1)?
        } else {
            ShardedQueue::plain(logical.clone(), count)?
        };
        let written: bool = self
            .conn()
            .hset_nx(self.namespace().sharded_queues(), logical.as_str(), encode(&sharded))
            .await
            .map_err(|e| broker_error("declare sharded queue", e))?;
        if !written {
            // Another process declared it meanwhile: its declaration stands, if the counts agree.
            let declared = self.sharded_queue(logical).await?;
            return check_declaration(logical, count, declared.as_ref(), [])?
                .ok_or_else(|| unexpected("declare sharded queue", "a declaration written and gone"));
        }
        for shard in sharded.shards() {
            self.register_queue(shard).await?;
        }
        Ok(sharded)
    }

    async fn sharded_queue(&self, logical: &QueueName) -> Result<Option<ShardedQueue>> {
        let value: Option<String> = self
            .conn()
            .hget(self.namespace().sharded_queues(), logical.as_str())
            .await
            .map_err(|e| broker_error("read sharded queue", e))?;
        value.map(|value| decode(logical.as_str(), &value)).transpose()
    }

    async fn sharded_queues(&self) -> Result<Vec<ShardedQueue>> {
        let all: BTreeMap<String, String> = self
            .conn()
            .hgetall(self.namespace().sharded_queues())
            .await
            .map_err(|e| broker_error("read sharded queues", e))?;
        all.iter().map(|(logical, value)| decode(logical, value)).collect()
    }
}

/// A declaration as the hash keeps it: `<generation>\n<shard 0>\n<shard 1>…`.
fn encode(sharded: &ShardedQueue) -> String {
    let mut value = sharded.generation().to_string();
    for shard in sharded.shards() {
        value.push('\n');
        value.push_str(shard);
    }
    value
}

/// The declaration of `logical` read from `value`; a record that breaks the rules is reported as
/// corrupt rather than used.
fn decode(logical: &str, value: &str) -> Result<ShardedQueue> {
    let corrupt =
        |why: String| unexpected("read sharded queue", format!("the declaration of {logical:?} is corrupt: {why}"));
    let mut lines = value.split('\n');
    let generation = lines.next().unwrap_or_default();
    let generation = generation.parse::<u64>().map_err(|_| corrupt(format!("generation {generation:?}")))?;
    let logical = QueueName::new(logical).map_err(|e| corrupt(e.to_string()))?;
    let shards = lines.map(QueueName::new).collect::<Result<Vec<_>>>().map_err(|e| corrupt(e.to_string()))?;
    ShardedQueue::new(logical, shards, generation).map_err(|e| corrupt(e.to_string()))
}

/// The hash slot of every key of queue `queue` (its keys' hash tag is `{<queue>}`): CRC16
/// (XMODEM) of the name, modulo the slots, as Redis Cluster computes it.
pub(crate) fn queue_slot(queue: &str) -> u16 {
    let mut crc: u16 = 0;
    for byte in queue.as_bytes() {
        crc ^= u16::from(*byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc % SLOTS
}

/// Names `count` shards of `logical` so that their slots' masters (by `ranges`, `CLUSTER SLOTS`)
/// carry as equal a number of shards as can be: shard by shard, the first salt whose slot
/// lands on a master with the fewest shards so far (or the best of [`MAX_SALT`] tried).
fn spread_over_masters(logical: &QueueName, count: usize, ranges: &[SlotRange]) -> Vec<QueueName> {
    let master_of = |slot: u16| {
        ranges
            .iter()
            .find(|range| range.start <= slot && slot <= range.end)
            .and_then(|range| range.nodes.first())
            .map(|node| node.addr.clone())
    };
    let mut load: HashMap<String, usize> =
        ranges.iter().filter_map(|range| range.nodes.first()).map(|node| (node.addr.clone(), 0)).collect();
    (0..count)
        .map(|index| {
            let fewest = load.values().copied().min().unwrap_or(0);
            let mut best: Option<(usize, QueueName, Option<String>)> = None;
            for salt in 0..MAX_SALT {
                let name = shard_name(logical, index, salt);
                let master = master_of(queue_slot(&name));
                let carried = master.as_ref().and_then(|m| load.get(m).copied()).unwrap_or(usize::MAX);
                if best.as_ref().is_none_or(|(least, _, _)| carried < *least) {
                    best = Some((carried, name, master));
                }
                if carried <= fewest {
                    break;
                }
            }
            let (_, name, master) = best.expect("at least one salt is tried");
            if let Some(master) = master {
                *load.entry(master).or_default() += 1;
            }
            name
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::NodeInfo;

    #[test]
    fn slots_are_those_redis_computes() {
        // Redis's documented values: CRC16("123456789") is 0x31C3; CLUSTER KEYSLOT foo is 12182.
        assert_eq!(queue_slot("123456789"), 0x31C3);
        assert_eq!(queue_slot("foo"), 12182);
    }

    #[test]
    fn declarations_read_back_as_written() {
        let sharded = ShardedQueue::new(
            QueueName::from_static("o"),
            vec![QueueName::from_static("o~0~9"), QueueName::from_static("o~1")],
            3,
        )
        .unwrap();
        assert_eq!(encode(&sharded), "3\no~0~9\no~1");
        assert_eq!(decode("o", &encode(&sharded)).unwrap(), sharded);
        assert!(decode("o", "x\no~0").is_err());
        assert!(decode("o", "1\nother~0").is_err());
        assert!(decode("o", "1").is_err());
    }

    #[test]
    fn shards_spread_evenly_over_masters() {
        let node = |port: u16| NodeInfo { id: String::new(), addr: format!("127.0.0.1:{port}") };
        let ranges = vec![
            SlotRange { start: 0, end: 5460, nodes: vec![node(1)] },
            SlotRange { start: 5461, end: 10922, nodes: vec![node(2)] },
            SlotRange { start: 10923, end: 16383, nodes: vec![node(3)] },
        ];
        let master = |slot: u16| ranges.iter().position(|r| r.start <= slot && slot <= r.end).unwrap();
        for count in [1, 3, 7, 64] {
            let shards = spread_over_masters(&QueueName::from_static("orders"), count, &ranges);
            let mut per_master = [0usize; 3];
            for shard in &shards {
                per_master[master(queue_slot(shard))] += 1;
            }
            let (least, most) = (per_master.iter().min().unwrap(), per_master.iter().max().unwrap());
            assert!(most - least <= 1, "{count} shards: {per_master:?}");
            assert!(ShardedQueue::new(QueueName::from_static("orders"), shards, 1).is_ok());
        }
    }
}
