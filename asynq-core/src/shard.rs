//! Sharded queues: one logical queue stored as K ordinary queues (its shards), so that on a Redis
//! Cluster one queue is spread over several masters instead of one hash slot.
//!
//! A [`ShardedQueue`] is a declaration, as [`ShardedQueues`](crate::broker::ShardedQueues)
//! keeps it: the logical name, its shards' queue names, and a generation. The rules live here:
//! - the logical name holds no [`SHARD_SEPARATOR`] (`~`), so a shard name tells its logical queue;
//! - the count is 1 to [`MAX_SHARDS`];
//! - shard `i` of `orders` is named `orders~i`, or `orders~i~s` with a salt `s` a broker chose
//!   so that the shard's hash slot lands on a master with few shards ([`shard_name`]);
//! - a reshard (a new count) makes a new generation `g` whose shards are named `orders~g<g>~i`
//!   (salted alike), which no shard of another generation can be taken for
//!   ([`generation_shard_name`]); the previous generation is kept as [`DrainingShards`], served
//!   until it is dropped: [`DRAIN_GRACE`] after the reshard at the earliest, and only once its
//!   shards are empty ([`is_drained`]). One generation drains at a time.
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
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The most shards one logical queue may have.
pub const MAX_SHARDS: usize = 64;

/// What separates a logical queue's name from a shard's index (and salt) in a shard's name.
pub const SHARD_SEPARATOR: char = '~';

/// How long, at the least, the previous generation of a resharded queue keeps being served
/// after the reshard before it may be dropped (once its shards are empty too). A producer
/// keeps the declarations it read for up to a second (the client's `SHARD_REFRESH`), and never
/// places a task by declarations older than half the grace (`SHARD_KEPT_AT_MOST`), so until then
/// it may still place a task on the previous generation: the grace is far longer.
pub const DRAIN_GRACE: Duration = Duration::from_secs(60);

/// A logical queue stored as K shards, each an ordinary queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardedQueue {
    logical: QueueName,
    shards: Vec<QueueName>,
    generation: u64,
    draining: Option<DrainingShards>,
    retired: RetiredTotals,
}

/// What the generations of a sharded queue that were dropped had processed and failed in all
/// (their queues' `processed_total` and `failed_total` when they went), kept in the declaration
/// so that the logical queue's totals never fall when a drained generation is dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetiredTotals {
    /// Tasks the dropped generations processed.
    pub processed: u64,
    /// Attempts that failed in the dropped generations.
    pub failed: u64,
}

impl RetiredTotals {
    /// The totals of `infos`, the infos of shards about to be dropped.
    pub fn of(infos: &[QueueInfo]) -> Self {
        infos.iter().fold(Self::default(), |sum, info| Self {
            processed: sum.processed.saturating_add(info.processed_total),
            failed: sum.failed.saturating_add(info.failed_total),
        })
    }

    /// Both sums of `self` and `other`.
    pub fn plus(self, other: Self) -> Self {
        Self {
            processed: self.processed.saturating_add(other.processed),
            failed: self.failed.saturating_add(other.failed),
        }
    }
}

/// The shards of a sharded queue's previous generation after a reshard: no producer places
/// tasks there any more, servers still run what they hold until they are dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainingShards {
    generation: u64,
    shards: Vec<QueueName>,
    since: SystemTime,
    /// What its shards had processed and failed, recorded once they were found drained and
    /// before the first was removed ([`ShardedQueue::with_drained_totals`]).
    totals: Option<RetiredTotals>,
}

impl DrainingShards {
    /// The generation these shards were.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Their queue names, shard 0 first.
    pub fn shards(&self) -> &[QueueName] {
        &self.shards
    }

    /// When the reshard replaced them (whole milliseconds).
    pub fn since(&self) -> SystemTime {
        self.since
    }

    /// What its shards had processed and failed in all, once recorded before their removal.
    pub fn totals(&self) -> Option<RetiredTotals> {
        self.totals
    }

    /// Whether [`DRAIN_GRACE`] has passed since the reshard at `now`.
    pub fn grace_over(&self, now: SystemTime) -> bool {
        now.duration_since(self.since).is_ok_and(|waited| waited >= DRAIN_GRACE)
    }
}

/// Whether `draining` may be dropped at `now`: [`DRAIN_GRACE`] has passed since the reshard
/// and every one of `infos`, those of its shards that exist, holds no task in any state
/// ([`QueueInfo::sum_of_states`]: pending, active, scheduled, retry, archived, completed and
/// aggregating tasks all keep a generation draining).
pub fn is_drained(draining: &DrainingShards, infos: &[QueueInfo], now: SystemTime) -> bool {
    draining.grace_over(now) && infos.iter().all(|info| info.sum_of_states() == 0 && info.size == 0)
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

/// The name of shard `index` of `logical`'s first generation with `salt`: `<logical>~<index>`,
/// or `<logical>~<index>~<salt>` for a salt above 0.
pub fn shard_name(logical: &QueueName, index: usize, salt: u32) -> QueueName {
    generation_shard_name(logical, 1, index, salt)
}

/// The name of shard `index` of `logical`'s generation `generation` with `salt`: as
/// [`shard_name`] for generation 1, `<logical>~g<generation>~<index>` (and `~<salt>` for a salt
/// above 0) for a later one.
pub fn generation_shard_name(logical: &QueueName, generation: u64, index: usize, salt: u32) -> QueueName {
    let mut name = logical.to_string();
    if generation > 1 {
        name.push_str(&format!("{SHARD_SEPARATOR}g{generation}"));
    }
    name.push_str(&format!("{SHARD_SEPARATOR}{index}"));
    if salt > 0 {
        name.push_str(&format!("{SHARD_SEPARATOR}{salt}"));
    }
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

/// The generation of `logical` whose shards a queue named `queue` is named as
/// ([`generation_shard_name`]): 1 for `<logical>~<index>` (and `~<salt>`), `g` for
/// `<logical>~g<g>~<index>` (and `~<salt>`); `None` for any other name.
pub fn shard_generation(queue: &str, logical: &QueueName) -> Option<u64> {
    let rest = queue.strip_prefix(logical.as_str())?.strip_prefix(SHARD_SEPARATOR)?;
    let canonical = |part: &str| part.parse::<u64>().ok().filter(|n| n.to_string() == part);
    let mut parts = rest.split(SHARD_SEPARATOR);
    let first = parts.next()?;
    let (generation, index) = match first.strip_prefix('g') {
        Some(generation) => (canonical(generation).filter(|g| *g > 1)?, parts.next()?),
        None => (1, first),
    };
    canonical(index).filter(|i| *i < MAX_SHARDS as u64)?;
    match (parts.next(), parts.next()) {
        (None, _) => Some(generation),
        (Some(salt), None) if canonical(salt).is_some_and(|s| s > 0) => Some(generation),
        _ => None,
    }
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
        let reason =
            format!("it is declared with {} shards, not {count} (a reshard changes the count)", declared.count());
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

/// What a broker does with a reshard of `logical` to `count` shards, given its declaration as
/// it is (`declared`) and the registered queues: `Ok(Some(_))` answers the declaration as it is
/// when its newest generation has `count` shards already, `Ok(None)` lets the broker make the
/// next generation.
///
/// Errors: as [`ShardedQueues::reshard_queue`](crate::broker::ShardedQueues::reshard_queue).
pub fn check_reshard<'a>(
    logical: &QueueName,
    count: usize,
    declared: Option<&ShardedQueue>,
    registered: impl IntoIterator<Item = &'a str>,
) -> Result<Option<ShardedQueue>> {
    check_logical_name(logical)?;
    check_shard_count(count)?;
    let Some(declared) = declared else {
        return Err(Error::FailedPrecondition(format!(
            "{logical:?} is not a sharded queue: declare it before resharding it"
        )));
    };
    if declared.count() == count {
        return Ok(Some(declared.clone()));
    }
    if let Some(draining) = declared.draining() {
        return Err(Error::FailedPrecondition(format!(
            "generation {} of {logical:?} still drains ({}); a reshard waits until it is dropped, {} s after \
             the last reshard at the earliest and once its shards hold no task in any state (archived and \
             retained completed tasks too: run or delete them)",
            draining.generation(),
            draining.shards().iter().map(QueueName::as_str).collect::<Vec<_>>().join(", "),
            DRAIN_GRACE.as_secs()
        )));
    }
    let next = generation_shard_name(logical, declared.generation() + 1, 0, 0);
    let prefix = next.strip_suffix('0').unwrap_or(&next);
    if let Some(queue) = registered.into_iter().find(|queue| queue.starts_with(prefix)) {
        let reason = format!("a queue named {queue:?}, which the next generation's shards would be taken for, exists");
        return Err(Error::QueueNameConflict { queue: logical.clone(), reason });
    }
    Ok(None)
}

/// `since` to whole milliseconds, as a declaration's record keeps it.
fn whole_millis(since: SystemTime) -> SystemTime {
    let millis = since.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or(u64::MAX))
}

/// Checks that `shards` are named as generation `generation` of `logical` names them.
fn check_shard_names(logical: &QueueName, generation: u64, shards: &[QueueName]) -> Result<()> {
    if generation == 0 {
        return Err(Error::invalid("generation", format!("the generations of {logical:?} count from 1")));
    }
    check_shard_count(shards.len())?;
    for (index, shard) in shards.iter().enumerate() {
        let plain = generation_shard_name(logical, generation, index, 0);
        let salted = shard
            .strip_prefix(plain.as_str())
            .and_then(|rest| rest.strip_prefix(SHARD_SEPARATOR))
            .is_some_and(|salt| salt.parse::<u32>().is_ok_and(|s| s > 0 && s.to_string() == salt));
        if shard != &plain && !salted {
            let why = format!(
                "shard {index} of generation {generation} of {logical:?} must be named {plain:?} or {plain:?}~<salt>, \
                 not {shard:?}"
            );
            return Err(Error::invalid("shards", why));
        }
    }
    Ok(())
}

impl ShardedQueue {
    /// A declaration of `logical` with `shards` of generation `generation`, none draining,
    /// checked: a logical name without [`SHARD_SEPARATOR`], 1 to [`MAX_SHARDS`] shards, shard
    /// `i` named as [`generation_shard_name`] names it, with or without a salt.
    ///
    /// Errors: [`Error::InvalidArgument`] naming the rule broken.
    pub fn new(logical: QueueName, shards: Vec<QueueName>, generation: u64) -> Result<Self> {
        check_logical_name(&logical)?;
        check_shard_names(&logical, generation, &shards)?;
        Ok(Self { logical, shards, generation, draining: None, retired: RetiredTotals::default() })
    }

    /// This declaration with `draining` as its previous generation's shards, draining since
    /// `since` (kept to whole milliseconds), checked as [`ShardedQueue::new`] checks shards and
    /// older than this generation.
    ///
    /// Errors: [`Error::InvalidArgument`] naming the rule broken.
    pub fn with_draining(mut self, generation: u64, draining: Vec<QueueName>, since: SystemTime) -> Result<Self> {
        if generation >= self.generation {
            let why = format!("a draining generation is older than the newest, {}, not {generation}", self.generation);
            return Err(Error::invalid("generation", why));
        }
        check_shard_names(&self.logical, generation, &draining)?;
        self.draining = Some(DrainingShards { generation, shards: draining, since: whole_millis(since), totals: None });
        Ok(self)
    }

    /// The next generation of this declaration, with `shards` (named as [`generation_shard_name`]
    /// names generation [`generation`](ShardedQueue::generation) + 1), this one's shards draining
    /// since `now`.
    ///
    /// Errors: [`Error::FailedPrecondition`] when a generation drains already;
    /// [`Error::InvalidArgument`] for shards named wrongly.
    pub fn resharded(&self, shards: Vec<QueueName>, now: SystemTime) -> Result<Self> {
        if let Some(draining) = &self.draining {
            let why = format!("generation {} of {:?} still drains", draining.generation, self.logical);
            return Err(Error::FailedPrecondition(why));
        }
        let next = Self { retired: self.retired, ..Self::new(self.logical.clone(), shards, self.generation + 1)? };
        next.with_draining(self.generation, self.shards.clone(), now)
    }

    /// This declaration with `retired` as what its dropped generations processed and failed.
    pub fn with_retired(self, retired: RetiredTotals) -> Self {
        Self { retired, ..self }
    }

    /// This declaration with `totals` recorded as what its draining generation's shards had
    /// processed and failed ([`DrainingShards::totals`]), as a broker writes it before it
    /// removes the first of them; unchanged without a draining generation.
    pub fn with_drained_totals(mut self, totals: RetiredTotals) -> Self {
        if let Some(draining) = &mut self.draining {
            draining.totals = Some(totals);
        }
        self
    }

    /// This declaration without its draining generation, whose shards' queues went with
    /// `totals` processed and failed: added to [`ShardedQueue::retired`].
    pub fn drained(&self, totals: RetiredTotals) -> Self {
        Self { draining: None, retired: self.retired.plus(totals), ..self.clone() }
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

    /// `count` shards of generation `generation` of `logical`, named without salt.
    ///
    /// Errors: [`Error::InvalidArgument`] for a name or count that breaks the rules.
    pub fn plain_shards(logical: &QueueName, generation: u64, count: usize) -> Result<Vec<QueueName>> {
        check_logical_name(logical)?;
        check_shard_count(count)?;
        Ok((0..count).map(|index| generation_shard_name(logical, generation, index, 0)).collect())
    }

    /// The logical queue's name.
    pub fn logical(&self) -> &QueueName {
        &self.logical
    }

    /// The newest generation's shards' queue names, shard 0 first: where producers place tasks.
    pub fn shards(&self) -> &[QueueName] {
        &self.shards
    }

    /// How many shards its newest generation has.
    pub fn count(&self) -> usize {
        self.shards.len()
    }

    /// The newest generation: 1 when first declared, one more with each reshard.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The previous generation's shards while they drain after a reshard.
    pub fn draining(&self) -> Option<&DrainingShards> {
        self.draining.as_ref()
    }

    /// What the generations dropped so far had processed and failed in all.
    pub fn retired(&self) -> RetiredTotals {
        self.retired
    }

    /// Every shard a server serves: the newest generation's, then the draining one's.
    pub fn all_shards(&self) -> impl Iterator<Item = &QueueName> {
        self.shards.iter().chain(self.draining.iter().flat_map(|d| d.shards.iter()))
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

    /// Whether `queue` is one of its shards, of the newest generation or the draining one.
    pub fn has_shard(&self, queue: &str) -> bool {
        self.all_shards().any(|shard| shard == queue)
    }

    /// Whether `queue` is a stray of this logical queue: named `<logical>~…`, as its shards are,
    /// but none of those declared. A task placed on a shard after its generation was dropped
    /// (by a producer whose call was held up past the grace, or one given the shard's name)
    /// makes one; the servers of the logical queue serve it, so that no task is stranded.
    pub fn is_stray(&self, queue: &str) -> bool {
        is_shard_of(queue, &self.logical) && !self.has_shard(queue)
    }

    /// Whether `queue` is a stray named as a shard of a generation dropped already (older than
    /// every generation declared), which a broker's
    /// [`drop_drained_shards`](crate::broker::ShardedQueues::drop_drained_shards) removes once
    /// it holds no task. Other strays are served, never removed: their names are someone's.
    pub fn is_dropped_shard(&self, queue: &str) -> bool {
        let oldest = self.draining.as_ref().map_or(self.generation, |d| d.generation);
        self.is_stray(queue) && shard_generation(queue, &self.logical).is_some_and(|g| g < oldest)
    }
}

/// The info of the logical queue `sharded` from its shards' `infos` (of both generations while
/// one drains) and those of its `strays` ([`ShardedQueue::is_stray`]): counts, statistics and
/// memory summed, the latency and the timestamp the largest, paused when every shard is, and the
/// shards listed, the draining ones and the strays apart. The totals (`processed_total`,
/// `failed_total`) count the dropped generations' too ([`ShardedQueue::retired`]); the day's
/// counts only the generations there are. A stray adds its tasks, not its statistics: its
/// counters are its name's, which hold its dropped generation's counts again.
pub fn logical_queue_info(sharded: &ShardedQueue, infos: &[QueueInfo], strays: &[QueueInfo]) -> QueueInfo {
    let timestamp = infos.iter().chain(strays).map(|i| i.timestamp).max().unwrap_or(std::time::UNIX_EPOCH);
    let mut sum = QueueInfo::empty(sharded.logical(), timestamp);
    for info in infos.iter().chain(strays) {
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
        sum.memory_usage += info.memory_usage;
    }
    for info in infos {
        sum.processed += info.processed;
        sum.failed += info.failed;
        sum.processed_total += info.processed_total;
        sum.failed_total += info.failed_total;
    }
    sum.processed_total = sum.processed_total.saturating_add(sharded.retired.processed);
    sum.failed_total = sum.failed_total.saturating_add(sharded.retired.failed);
    sum.paused = !infos.is_empty() && infos.iter().all(|i| i.paused);
    sum.shards = sharded.shards().to_vec();
    let draining = sharded.draining().map(|d| d.shards.clone()).unwrap_or_default();
    sum.draining_shards = draining.into_iter().chain(strays.iter().map(|s| s.queue.clone())).collect();
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
    fn a_shard_name_tells_its_generation() {
        let orders = q("orders");
        for (name, generation) in [("orders~3", Some(1)), ("orders~3~17", Some(1)), ("orders~g4~0", Some(4))] {
            assert_eq!(shard_generation(name, &orders), generation, "{name}");
        }
        assert_eq!(shard_generation("orders~g4~1~9", &orders), Some(4));
        for name in
            ["orders", "orders~", "orders~x", "orders~01", "orders~g1~0", "orders~g4", "orders~3~0", "orders~3~1~2"]
        {
            assert_eq!(shard_generation(name, &orders), None, "{name}");
        }
        assert_eq!(shard_generation("orders~64", &orders), None, "past the most shards");
        assert_eq!(shard_generation("order~3", &orders), None);
    }

    #[test]
    fn strays_are_served_and_only_dropped_generations_removed() {
        let first = ShardedQueue::plain(q("orders"), 2).unwrap();
        let second = first.resharded(ShardedQueue::plain_shards(&q("orders"), 2, 3).unwrap(), UNIX_EPOCH).unwrap();
        let third = second.drained(RetiredTotals::default());
        assert!(!second.is_stray("orders~1") && !second.is_stray("orders~g2~2"), "declared shards");
        assert!(second.is_stray("orders~x") && !second.is_stray("other~0") && !second.is_stray("orders"));
        assert!(!second.is_dropped_shard("orders~1"), "generation 1 still drains");
        assert!(third.is_dropped_shard("orders~1") && third.is_dropped_shard("orders~5~3"), "generation 1 was dropped");
        assert!(!third.is_dropped_shard("orders~g2~0"), "declared");
        assert!(!third.is_dropped_shard("orders~g3~0"), "a generation to come");
        assert!(third.is_stray("orders~x") && !third.is_dropped_shard("orders~x"), "a name of someone's");
    }

    #[test]
    fn shard_names_carry_index_and_salt() {
        assert_eq!(shard_name(&q("orders"), 3, 0), "orders~3");
        assert_eq!(shard_name(&q("orders"), 3, 17), "orders~3~17");
        let salted = ShardedQueue::new(q("orders"), vec![q("orders~0~5"), q("orders~1")], 1).unwrap();
        assert_eq!(salted.generation(), 1);
        assert!(salted.has_shard("orders~0~5"));
        for bad in [vec![q("orders~1")], vec![q("orders~0~0")], vec![q("orders~0~x")], vec![q("other~0")]] {
            assert!(ShardedQueue::new(q("orders"), bad.clone(), 1).is_err(), "{bad:?}");
        }
        assert_eq!(generation_shard_name(&q("orders"), 2, 3, 0), "orders~g2~3");
        assert_eq!(generation_shard_name(&q("orders"), 12, 0, 9), "orders~g12~0~9");
        let later = ShardedQueue::new(q("orders"), vec![q("orders~g2~0~5"), q("orders~g2~1")], 2).unwrap();
        assert_eq!(later.generation(), 2);
        for (bad, generation) in [(q("orders~0"), 2), (q("orders~g2~0"), 1), (q("orders~g3~0"), 2), (q("orders~0"), 0)]
        {
            assert!(ShardedQueue::new(q("orders"), vec![bad.clone()], generation).is_err(), "{bad:?} {generation}");
        }
    }

    #[test]
    fn a_shard_name_tells_its_logical_queue() {
        assert_eq!(logical_of("orders~3~17"), Some("orders"));
        assert_eq!(logical_of("orders~g2~3~17"), Some("orders"));
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
    fn a_reshard_makes_a_generation_and_keeps_the_previous_one_draining() {
        let at = |ms: u64| UNIX_EPOCH + Duration::from_millis(ms);
        let first = ShardedQueue::plain(q("o"), 3).unwrap();
        assert_eq!(check_reshard(&q("o"), 3, Some(&first), []).unwrap(), Some(first.clone()), "the same count");
        assert_eq!(check_reshard(&q("o"), 5, Some(&first), ["o~0", "o~g20~1"]).unwrap(), None);
        let taken = check_reshard(&q("o"), 5, Some(&first), ["o~g2~7"]);
        assert!(matches!(taken, Err(Error::QueueNameConflict { .. })), "{taken:?}");
        let none = check_reshard(&q("o"), 5, None, []);
        assert!(matches!(none, Err(Error::FailedPrecondition(_))), "{none:?}");
        assert!(matches!(check_reshard(&q("o"), 0, Some(&first), []), Err(Error::InvalidArgument { .. })));

        let second = first.resharded(ShardedQueue::plain_shards(&q("o"), 2, 5).unwrap(), at(1_500)).unwrap();
        assert_eq!((second.generation(), second.count(), second.shards()[4].as_str()), (2, 5, "o~g2~4"));
        let draining = second.draining().unwrap();
        assert_eq!((draining.generation(), draining.shards(), draining.since()), (1, first.shards(), at(1_500)));
        assert_eq!(second.all_shards().count(), 8);
        assert!(second.has_shard("o~2") && second.has_shard("o~g2~2"));
        let again = check_reshard(&q("o"), 2, Some(&second), []);
        assert!(matches!(again, Err(Error::FailedPrecondition(_))), "one generation drains at a time: {again:?}");
        assert!(second.resharded(ShardedQueue::plain_shards(&q("o"), 3, 2).unwrap(), at(2_000)).is_err());
        assert_eq!(check_reshard(&q("o"), 5, Some(&second), []).unwrap(), Some(second.clone()));

        let empty = QueueInfo::empty(&q("o~0"), at(0));
        let mut busy = empty.clone();
        (busy.size, busy.archived) = (1, 1);
        assert!(!is_drained(
            draining,
            std::slice::from_ref(&empty),
            at(1_500) + DRAIN_GRACE - Duration::from_millis(1)
        ));
        assert!(is_drained(draining, std::slice::from_ref(&empty), at(1_500) + DRAIN_GRACE));
        assert!(!is_drained(draining, &[empty.clone(), busy], at(1_500) + DRAIN_GRACE));
        let mut processed = empty.clone();
        (processed.processed_total, processed.failed_total) = (7, 2);
        let totals = RetiredTotals::of(&[processed.clone(), processed]);
        let dropped = second.drained(totals);
        assert_eq!((dropped.draining(), dropped.shards()), (None, second.shards()));
        assert_eq!(dropped.retired(), RetiredTotals { processed: 14, failed: 4 });
        let third = dropped.resharded(ShardedQueue::plain_shards(&q("o"), 3, 2).unwrap(), at(3_000)).unwrap();
        assert_eq!(third.drained(totals).retired(), RetiredTotals { processed: 28, failed: 8 }, "kept and added");
        assert!(second.clone().with_draining(2, first.shards().to_vec(), at(0)).is_err(), "not older");
    }

    #[test]
    fn a_logical_queue_info_sums_its_shards() {
        let sharded = ShardedQueue::plain(q("o"), 2).unwrap();
        let at = |s: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s);
        let mut a = QueueInfo::empty(&q("o~0"), at(10));
        (a.size, a.pending, a.processed, a.latency, a.paused) = (2, 2, 5, std::time::Duration::from_secs(4), true);
        let mut b = QueueInfo::empty(&q("o~1"), at(12));
        (b.size, b.retry, b.processed, b.latency) = (1, 1, 1, std::time::Duration::from_secs(1));
        (a.processed_total, b.processed_total, b.failed_total) = (50, 10, 3);
        let sharded = sharded.with_retired(RetiredTotals { processed: 100, failed: 7 });
        let sum = logical_queue_info(&sharded, &[a.clone(), b.clone()], &[]);
        assert_eq!((sum.queue.as_str(), sum.size, sum.pending, sum.retry, sum.processed), ("o", 3, 2, 1, 6));
        assert_eq!((sum.processed_total, sum.failed_total), (160, 10), "the dropped generations' totals kept");
        assert_eq!((sum.latency, sum.timestamp, sum.paused), (std::time::Duration::from_secs(4), at(12), false));
        assert_eq!(sum.shards, sharded.shards());
        assert_eq!(sum.draining_shards, Vec::<QueueName>::new());
        assert_eq!(sum.sum_of_states(), sum.size);

        // A stray adds its tasks, not the counters its name kept from its dropped generation.
        let mut stray = QueueInfo::empty(&q("o~g9~0"), at(13));
        (stray.size, stray.pending, stray.processed, stray.processed_total) = (1, 1, 40, 400);
        let with_stray = logical_queue_info(&sharded, &[a, b], &[stray]);
        assert_eq!((with_stray.size, with_stray.pending, with_stray.processed), (4, 3, 6));
        assert_eq!((with_stray.processed_total, with_stray.timestamp), (160, at(13)));
        assert_eq!(with_stray.draining_shards, vec![q("o~g9~0")]);
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
