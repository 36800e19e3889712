//! [`ShardedQueues`] for [`RedisBroker`]: declarations in one hash
//! ([`Namespace::sharded_queues`](crate::keys::Namespace::sharded_queues)), and on a Cluster
//! shard names salted so that the shards' hash slots land on distinct masters.
//!
//! A declaration is checked (the registered queues, the declaration as it is), then written with
//! `HSETNX`, so two processes declaring one queue at once agree on the first one written; its
//! shards are then registered as queues. A reshard, and the drop of a drained generation, write
//! with `swap_sharded_queue.lua` only if the declaration is still the one read. These are
//! single-key commands: a script could not touch the hash and `<ns>:queues` at once on a Cluster.

use crate::RedisBroker;
use crate::backend::SlotRange;
use crate::error::{broker_error, unexpected};
use crate::scripts::{SCRIPTS, ScriptCall};
use async_trait::async_trait;
use asynq_core::broker::{Inspect, ShardedQueues, drained_totals, remove_dropped_strays, remove_shard_queues};
use asynq_core::shard::{RetiredTotals, ShardedQueue, check_declaration, check_reshard, generation_shard_name};
use asynq_core::{Error, QueueName, Result};
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
            let shards = spread_over_masters(logical, 1, count, &ranges);
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

    async fn reshard_queue(&self, logical: &QueueName, count: usize) -> Result<ShardedQueue> {
        let (declared, read) = self.read_declaration(logical).await?;
        let registered = Inspect::queues(self).await?;
        if let Some(answer) = check_reshard(logical, count, declared.as_ref(), registered.iter().map(|q| q.as_str()))? {
            return Ok(answer);
        }
        let (Some(declared), Some(read)) = (declared, read) else {
            return Err(unexpected("reshard queue", "check_reshard passed a queue not declared"));
        };
        let generation = declared.generation() + 1;
        let shards = if self.kind() == crate::backend::CLUSTER {
            let ranges = crate::backend::slot_ranges(&mut self.conn()).await?;
            spread_over_masters(logical, generation, count, &ranges)
        } else {
            ShardedQueue::plain_shards(logical, generation, count)?
        };
        let resharded = declared.resharded(shards, self.now())?;
        if !self.swap_declaration(logical, &read, &resharded).await? {
            // Another process changed it meanwhile: a reshard to this count stands.
            let (now_declared, _) = self.read_declaration(logical).await?;
            return match check_reshard(logical, count, now_declared.as_ref(), [])? {
                Some(answer) => Ok(answer),
                None => Err(Error::FailedPrecondition(format!(
                    "the declaration of {logical:?} changed while it was being resharded; nothing was written"
                ))),
            };
        }
        for shard in resharded.shards() {
            self.register_queue(shard).await?;
        }
        Ok(resharded)
    }

    async fn drop_drained_shards(&self, logical: &QueueName) -> Result<bool> {
        let registered = Inspect::queues(self).await?;
        let (Some(declared), Some(read)) = self.read_declaration(logical).await? else { return Ok(false) };
        // Removing strays writes no declaration; the writes below check it is still `read`.
        let removed = remove_dropped_strays(self, &declared, &registered).await?;
        let Some(draining) = declared.draining() else { return Ok(removed) };
        let Some(totals) = drained_totals(self, draining, self.now()).await? else { return Ok(removed) };
        // The totals are recorded before any shard goes, so that a drop cut short and taken up
        // again (here or by another server) still counts the shards it removed.
        let recorded = declared.clone().with_drained_totals(totals);
        let read = if recorded == declared {
            read
        } else {
            if !self.swap_declaration(logical, &read, &recorded).await? {
                return Ok(removed);
            }
            encode(&recorded)
        };
        if !remove_shard_queues(self, draining).await? {
            return Ok(removed);
        }
        Ok(self.swap_declaration(logical, &read, &recorded.drained(totals)).await? || removed)
    }

    async fn sharded_queue(&self, logical: &QueueName) -> Result<Option<ShardedQueue>> {
        Ok(self.read_declaration(logical).await?.0)
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

impl RedisBroker {
    /// The declaration of `logical`, if any, and its record as read (for
    /// [`RedisBroker::swap_declaration`]).
    async fn read_declaration(&self, logical: &QueueName) -> Result<(Option<ShardedQueue>, Option<String>)> {
        let value: Option<String> = self
            .conn()
            .hget(self.namespace().sharded_queues(), logical.as_str())
            .await
            .map_err(|e| broker_error("read sharded queue", e))?;
        let declared = value.as_deref().map(|value| decode(logical.as_str(), value)).transpose()?;
        Ok((declared, value))
    }

    /// Writes `sharded` as the declaration of `logical` if its record is still `read`; returns
    /// whether it did.
    async fn swap_declaration(&self, logical: &QueueName, read: &str, sharded: &ShardedQueue) -> Result<bool> {
        let mut call = ScriptCall::new(&SCRIPTS.swap_sharded_queue);
        call.key(self.namespace().sharded_queues()).arg(logical.as_str()).arg(read).arg(encode(sharded));
        match call.run::<i64>(&mut self.conn(), "swap sharded queue").await? {
            1 => Ok(true),
            0 => Ok(false),
            n => Err(unexpected("swap sharded queue", format!("the script returned {n}"))),
        }
    }
}

/// A declaration as the hash keeps it: `<generation>\n<shard 0>\n<shard 1>…`, and while a
/// generation drains `\n\n<its generation> <unix ms it drains since>\n<its shard 0>…`, its
/// head line ending ` <processed> <failed>` once its totals are recorded for its drop. Once a
/// generation was dropped, the first line is `<generation> <processed> <failed>`: the dropped
/// generations' totals ([`ShardedQueue::retired`]).
fn encode(sharded: &ShardedQueue) -> String {
    let mut value = sharded.generation().to_string();
    let retired = sharded.retired();
    if retired != RetiredTotals::default() {
        value.push_str(&format!(" {} {}", retired.processed, retired.failed));
    }
    for shard in sharded.shards() {
        value.push('\n');
        value.push_str(shard);
    }
    if let Some(draining) = sharded.draining() {
        let since = draining.since().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
        value.push_str(&format!("\n\n{} {since}", draining.generation()));
        if let Some(totals) = draining.totals() {
            value.push_str(&format!(" {} {}", totals.processed, totals.failed));
        }
        for shard in draining.shards() {
            value.push('\n');
            value.push_str(shard);
        }
    }
    value
}

/// The declaration of `logical` read from `value`; a record that breaks the rules is reported as
/// corrupt rather than used.
fn decode(logical: &str, value: &str) -> Result<ShardedQueue> {
    let corrupt =
        |why: String| unexpected("read sharded queue", format!("the declaration of {logical:?} is corrupt: {why}"));
    let (newest, draining) = match value.split_once("\n\n") {
        Some((newest, draining)) => (newest, Some(draining)),
        None => (value, None),
    };
    let names = |lines: std::str::Split<'_, char>| {
        lines.map(QueueName::new).collect::<Result<Vec<_>>>().map_err(|e| corrupt(e.to_string()))
    };
    let mut lines = newest.split('\n');
    let head = lines.next().unwrap_or_default();
    let numbers = head.split(' ').map(str::parse::<u64>).collect::<std::result::Result<Vec<_>, _>>();
    let (generation, retired) = match numbers.as_deref() {
        Ok([generation]) => (*generation, RetiredTotals::default()),
        Ok([generation, processed, failed]) => (*generation, RetiredTotals { processed: *processed, failed: *failed }),
        _ => return Err(corrupt(format!("generation {head:?}"))),
    };
    let logical = QueueName::new(logical).map_err(|e| corrupt(e.to_string()))?;
    let sharded = ShardedQueue::new(logical, names(lines)?, generation)
        .map_err(|e| corrupt(e.to_string()))?
        .with_retired(retired);
    let Some(draining) = draining else { return Ok(sharded) };
    let mut lines = draining.split('\n');
    let head = lines.next().unwrap_or_default();
    let numbers = head.split(' ').map(str::parse::<u64>).collect::<std::result::Result<Vec<_>, _>>();
    let (old, since, totals) = match numbers.as_deref() {
        Ok([old, since]) => (*old, *since, None),
        Ok([old, since, processed, failed]) => {
            (*old, *since, Some(RetiredTotals { processed: *processed, failed: *failed }))
        }
        _ => return Err(corrupt(format!("draining generation {head:?}"))),
    };
    let since = std::time::UNIX_EPOCH + std::time::Duration::from_millis(since);
    let sharded = sharded.with_draining(old, names(lines)?, since).map_err(|e| corrupt(e.to_string()))?;
    Ok(match totals {
        Some(totals) => sharded.with_drained_totals(totals),
        None => sharded,
    })
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

/// Names `count` shards of generation `generation` of `logical` so that their slots' masters
/// (by `ranges`, `CLUSTER SLOTS`) carry as equal a number of shards as can be: shard by shard,
/// the first salt whose slot lands on a master with the fewest shards so far (or the best of
/// [`MAX_SALT`] tried).
fn spread_over_masters(logical: &QueueName, generation: u64, count: usize, ranges: &[SlotRange]) -> Vec<QueueName> {
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
                let name = generation_shard_name(logical, generation, index, salt);
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
            1,
        )
        .unwrap();
        assert_eq!(encode(&sharded), "1\no~0~9\no~1");
        assert_eq!(decode("o", &encode(&sharded)).unwrap(), sharded);
        let since = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_800_000_000_123);
        let shards = ShardedQueue::plain_shards(&QueueName::from_static("o"), 2, 3).unwrap();
        let resharded = sharded.resharded(shards, since).unwrap();
        assert_eq!(encode(&resharded), "2\no~g2~0\no~g2~1\no~g2~2\n\n1 1800000000123\no~0~9\no~1");
        assert_eq!(decode("o", &encode(&resharded)).unwrap(), resharded);
        let recorded = resharded.clone().with_drained_totals(RetiredTotals { processed: 12, failed: 3 });
        assert_eq!(encode(&recorded), "2\no~g2~0\no~g2~1\no~g2~2\n\n1 1800000000123 12 3\no~0~9\no~1");
        assert_eq!(decode("o", &encode(&recorded)).unwrap(), recorded);
        let dropped = resharded.drained(RetiredTotals { processed: 12, failed: 3 });
        assert_eq!(encode(&dropped), "2 12 3\no~g2~0\no~g2~1\no~g2~2");
        assert_eq!(decode("o", &encode(&dropped)).unwrap(), dropped);
        for corrupt in [
            "x\no~0",
            "1\nother~0",
            "1",
            "2\no~g2~0\n\n1\no~0",
            "2\no~g2~0\n\n2 5\no~g2~0",
            "2\no~g2~0\n\n1 5",
            "2 12\no~g2~0",
            "2 12 x\no~g2~0",
            "2\no~g2~0\n\n1 5 7\no~0",
        ] {
            assert!(decode("o", corrupt).is_err(), "{corrupt:?}");
        }
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
            let shards = spread_over_masters(&QueueName::from_static("orders"), 1, count, &ranges);
            let mut per_master = [0usize; 3];
            for shard in &shards {
                per_master[master(queue_slot(shard))] += 1;
            }
            let (least, most) = (per_master.iter().min().unwrap(), per_master.iter().max().unwrap());
            assert!(most - least <= 1, "{count} shards: {per_master:?}");
            assert!(ShardedQueue::new(QueueName::from_static("orders"), shards, 1).is_ok());
        }
        let later = spread_over_masters(&QueueName::from_static("orders"), 3, 4, &ranges);
        assert!(ShardedQueue::new(QueueName::from_static("orders"), later, 3).is_ok());
    }
}
