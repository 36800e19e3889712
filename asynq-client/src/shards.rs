//! Placement on sharded queues: the [`Client`](crate::Client)'s hook that sends a task enqueued to
//! a logical queue to one of its shards ([`asynq_core::shard`]), reading the declarations from
//! the broker when it keeps them, or from the directory given to
//! [`Client::with_sharded_queues`](crate::Client::with_sharded_queues).
//!
//! The client keeps the declarations it read ([`ShardedQueues::sharded_queues`]) and reads them
//! again when they are [`SHARD_REFRESH`] old, so an enqueue to a queue that is not sharded costs
//! no broker call of its own: one read per cadence, whatever the number of enqueues.
//!
//! Tasks go to the newest generation's shards only: after a reshard a client places on the new
//! shards once it reads the declarations again, within [`SHARD_REFRESH`], far less than the
//! [`DRAIN_GRACE`] before the previous generation may be dropped. While one caller reads them
//! again, the others go on with those kept, but only while they are younger than
//! [`SHARD_KEPT_AT_MOST`] (half the grace): past it they wait for the read, so a read that hangs
//! cannot make a client place tasks on a generation dropped meanwhile, where no server would
//! take them.
//!
//! A task goes to the shard its key picks ([`ShardedQueue::shard_for_key`]), the first key that
//! applies: its group (so a group aggregates on one shard), its type and payload when it is
//! unique (so the uniqueness lock is the one of the logical queue), its debounce key, its
//! [`TaskOptions::shard_key`], its task ID when one is given (so an ID conflicts over the logical
//! queue, and [`Client::replace`](crate::Client::replace) finds the task); otherwise the next
//! shard in turn.

use asynq_core::broker::ShardedQueues;
use asynq_core::shard::{DRAIN_GRACE, ShardedQueue};
use asynq_core::workflow::{TaskRef, WorkflowPlan};
use asynq_core::{Clock, EnqueueRequest, Error, Placement, QueueName, Replace, Result, Task, TaskOptions};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

/// How old the declarations a client keeps may grow before it reads them again.
pub const SHARD_REFRESH: Duration = Duration::from_secs(1);

/// How old the declarations a client keeps may be for it to go on placing tasks by them while
/// another caller reads them again: half of [`DRAIN_GRACE`], the least time after a reshard
/// before the previous generation's shards may be dropped. Older, it waits for the read.
pub const SHARD_KEPT_AT_MOST: Duration = Duration::from_secs(DRAIN_GRACE.as_secs() / 2);

/// The longest [`TaskOptions::shard_key`], in bytes.
pub const MAX_SHARD_KEY_LEN: usize = 1024;

/// The declarations a client keeps, and the turn of round-robin placement.
pub(crate) struct ShardRouter {
    directory: Arc<dyn ShardedQueues>,
    kept: RwLock<Kept>,
    /// Held by the one caller that reads the declarations again.
    reading: futures::lock::Mutex<()>,
    turn: AtomicUsize,
}

#[derive(Default)]
struct Kept {
    /// When the read that answered them began; `None` before the first read.
    read_at: Option<SystemTime>,
    /// How many reads answered: a caller that waited for a read sees that one did.
    reads: u64,
    by_name: HashMap<QueueName, Arc<ShardedQueue>>,
}

impl Kept {
    /// Their age at `now`; `None` before the first read, or when `now` is before the read (a
    /// clock that went back), which counts as too old.
    fn age(&self, now: SystemTime) -> Option<Duration> {
        self.read_at.and_then(|at| now.duration_since(at).ok())
    }

    /// Whether they are younger than `limit` at `now`.
    fn younger_than(&self, limit: Duration, now: SystemTime) -> bool {
        self.age(now).is_some_and(|age| age < limit)
    }

    /// The declaration of `queue` among them, if it is a sharded queue.
    fn declaration(&self, queue: &QueueName) -> Option<Arc<ShardedQueue>> {
        self.by_name.get(queue).cloned()
    }
}

impl ShardRouter {
    pub(crate) fn new(directory: Arc<dyn ShardedQueues>) -> Self {
        Self {
            directory,
            kept: RwLock::new(Kept::default()),
            reading: futures::lock::Mutex::new(()),
            turn: AtomicUsize::new(0),
        }
    }

    /// Sends `request`, enqueued with `options` over `task`'s own, to a shard when its queue is
    /// sharded; leaves it as it is otherwise. `replacing`: a replacement by ID, placed by its ID.
    ///
    /// Errors: [`Error::InvalidArgument`] for a shard key that is blank, too long, or given with
    /// an option that places the task by its own key; [`Error::Broker`] when the declarations
    /// could not be read (nothing was sent).
    pub(crate) async fn place(
        &self,
        request: &mut EnqueueRequest,
        task: &Task,
        options: &TaskOptions,
        clock: &dyn Clock,
        replacing: bool,
    ) -> Result<()> {
        let Some(sharded) = self.declaration(request.queue(), clock).await? else { return Ok(()) };
        let shard_key = options.shard_key_option().or_else(|| task.options().shard_key_option());
        let key = if replacing {
            Some(request.message.id.as_bytes().to_vec())
        } else {
            let explicit_id = options.has_task_id() || task.options().has_task_id();
            placement_key(request, shard_key, explicit_id)?
        };
        let shard = match key {
            Some(key) => sharded.shard_for_key(&key),
            None => sharded.shard_at(self.turn.fetch_add(1, Ordering::Relaxed)),
        };
        request.message.queue = shard.clone();
        Ok(())
    }

    /// The declaration of `queue`, if it is a sharded queue, from the declarations kept: read
    /// again first when they are [`SHARD_REFRESH`] old, by one caller at a time. The others
    /// meanwhile use those kept while they are younger than [`SHARD_KEPT_AT_MOST`], and wait for
    /// the read otherwise, then take what it read if it is that young still (reading again
    /// themselves when it failed, or began too long ago).
    async fn declaration(&self, queue: &QueueName, clock: &dyn Clock) -> Result<Option<Arc<ShardedQueue>>> {
        let now = clock.now();
        if let Some(found) = self.kept_if(queue, |kept| kept.younger_than(SHARD_REFRESH, now)) {
            return Ok(found);
        }
        let reads_seen = self.kept().reads;
        let reading = match self.reading.try_lock() {
            Some(guard) => guard,
            None => {
                if let Some(found) = self.kept_if(queue, |kept| kept.younger_than(SHARD_KEPT_AT_MOST, now)) {
                    return Ok(found);
                }
                let guard = self.reading.lock().await;
                // The wait may have been long: ages count from now.
                let now = clock.now();
                let usable = |kept: &Kept| {
                    let read_meanwhile = kept.reads != reads_seen && kept.younger_than(SHARD_KEPT_AT_MOST, now);
                    read_meanwhile || kept.younger_than(SHARD_REFRESH, now)
                };
                if let Some(found) = self.kept_if(queue, usable) {
                    return Ok(found);
                }
                guard
            }
        };
        let read_at = clock.now();
        if let Some(found) = self.kept_if(queue, |kept| kept.younger_than(SHARD_REFRESH, read_at)) {
            return Ok(found);
        }
        let declared = self.directory.sharded_queues().await?;
        let by_name: HashMap<_, _> = declared.into_iter().map(|s| (s.logical().clone(), Arc::new(s))).collect();
        let found = by_name.get(queue).cloned();
        {
            let mut kept = self.kept.write().unwrap_or_else(PoisonError::into_inner);
            let reads = kept.reads + 1;
            *kept = Kept { read_at: Some(read_at), reads, by_name };
        }
        drop(reading);
        Ok(found)
    }

    /// The declarations kept, to read.
    fn kept(&self) -> std::sync::RwLockReadGuard<'_, Kept> {
        self.kept.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The declaration of `queue` among those kept, if they are `usable`.
    fn kept_if(&self, queue: &QueueName, usable: impl FnOnce(&Kept) -> bool) -> Option<Option<Arc<ShardedQueue>>> {
        let kept = self.kept();
        usable(&kept).then(|| kept.declaration(queue))
    }
}

impl ShardRouter {
    /// Sends the tasks of `plan` whose queue is sharded to its shards, and their references in
    /// the plan with them: a task with a shard key goes where its key places it; one whose ID
    /// its producer gave (one not in `generated`) where its ID places it, as the client places
    /// it, so that the ID conflicts over the logical queue; the others where the workflow's ID
    /// places them, so that one run's tasks of a logical queue share one shard (stored in one
    /// step, released in their queue's own step) while runs spread over the shards.
    ///
    /// Errors, with the plan unchanged: [`Error::InvalidArgument`] for a shard key of a task of a
    /// sharded queue that is blank or too long; [`Error::Broker`] when the declarations could
    /// not be read.
    pub(crate) async fn place_workflow(
        &self,
        plan: &mut WorkflowPlan,
        generated: &HashSet<String>,
        clock: &dyn Clock,
    ) -> Result<()> {
        let mut placed = Vec::new();
        for (index, task) in plan.tasks.iter().enumerate() {
            let message = &task.request.message;
            let Some(sharded) = self.declaration(&message.queue, clock).await? else { continue };
            let key = match &task.shard_key {
                Some(key) => {
                    check_shard_key(key)?;
                    key.as_str()
                }
                None if generated.contains(message.id.as_str()) => plan.id.as_str(),
                None => message.id.as_str(),
            };
            placed.push((index, sharded.shard_for_key(key.as_bytes()).clone()));
        }
        let mut moved: HashMap<TaskRef, TaskRef> = HashMap::new();
        for (index, shard) in placed {
            let message = &mut plan.tasks[index].request.message;
            let before = TaskRef::of(message);
            message.queue = shard;
            moved.insert(before, TaskRef::of(message));
        }
        if moved.is_empty() {
            return Ok(());
        }
        for task in &mut plan.tasks {
            for reference in task.parents.iter_mut().chain(task.children.iter_mut()) {
                if let Some(placed) = moved.get(reference) {
                    *reference = placed.clone();
                }
            }
        }
        Ok(())
    }
}

/// Checks that `key` may be a shard key: not blank, at most [`MAX_SHARD_KEY_LEN`] bytes.
fn check_shard_key(key: &str) -> Result<()> {
    if key.trim().is_empty() || key.len() > MAX_SHARD_KEY_LEN {
        let why = format!("a shard key is not blank and at most {MAX_SHARD_KEY_LEN} bytes");
        return Err(Error::invalid("shard key", why));
    }
    Ok(())
}

/// The key that places `request` on its shard, if one does (see the module docs).
fn placement_key(request: &EnqueueRequest, shard_key: Option<&str>, explicit_id: bool) -> Result<Option<Vec<u8>>> {
    let own_key = match (&request.placement, &request.replace) {
        (Placement::Grouped { group }, _) => Some(("group", [b"group\0", group.as_bytes()].concat())),
        _ if request.unique_ttl.is_some() => {
            let message = &request.message;
            Some(("unique", [message.type_name.as_bytes(), b"\0", &message.payload].concat()))
        }
        (_, Some(Replace::Debounced(debounce))) => Some(("debounce", debounce.key().as_bytes().to_vec())),
        _ => None,
    };
    if let Some(key) = shard_key {
        check_shard_key(key)?;
        if let Some((option, _)) = own_key {
            let why = format!("a {option} task is placed by its {option} key; it cannot take a shard key");
            return Err(Error::invalid("shard key", why));
        }
        return Ok(Some(key.as_bytes().to_vec()));
    }
    Ok(own_key.map(|(_, key)| key).or_else(|| explicit_id.then(|| request.message.id.as_bytes().to_vec())))
}

impl crate::Client {
    /// Places tasks enqueued to a sharded queue on its shards, reading the declarations from
    /// `directory` instead of the broker's own: see [`TaskOptions::shard_key`] and the guide.
    /// A client does this by itself when its broker keeps sharded queues
    /// ([`as_sharded_queues`](asynq_core::broker::Capabilities::as_sharded_queues), as the memory
    /// and Redis brokers do): this is for a broker that does not show them, a wrapper say, whose
    /// declarations are kept elsewhere. The declarations are kept and read again every
    /// [`SHARD_REFRESH`]; clones share them.
    ///
    /// ```
    /// use asynq_client::{Client, Task, TaskOptions};
    /// use asynq_core::broker::{Capabilities, Enqueue};
    /// use asynq_core::{EnqueueRequest, QueueName};
    /// use asynq_memory::MemoryBroker;
    /// use std::sync::Arc;
    ///
    /// /// A producer's view of a broker, showing none of its capabilities.
    /// struct Producer(MemoryBroker);
    ///
    /// impl Capabilities for Producer {}
    ///
    /// #[async_trait::async_trait]
    /// impl Enqueue for Producer {
    ///     async fn enqueue(&self, request: EnqueueRequest) -> asynq_client::Result<()> {
    ///         self.0.enqueue(request).await
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), asynq_client::Error> {
    /// let broker = Arc::new(MemoryBroker::new());
    /// let shards = broker.clone().as_sharded_queues().expect("the memory broker shards queues");
    /// shards.declare_sharded_queue(&QueueName::new("orders")?, 4).await?;
    /// let client = Client::new(Producer(MemoryBroker::clone(&broker))).with_sharded_queues(shards);
    /// let info = client.enqueue(&Task::new("ship", "o-1"), TaskOptions::new().queue("orders").shard_key("cust-7")).await?;
    /// assert!(info.queue.starts_with("orders~"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_sharded_queues(mut self, directory: Arc<dyn ShardedQueues>) -> Self {
        self.shards = Some(Arc::new(ShardRouter::new(directory)));
        self
    }

    /// The hook of every enqueue path: sends `request` to a shard when its queue is sharded and
    /// the client places tasks on shards, and tells `info`.
    pub(crate) async fn place_on_shard(
        &self,
        request: &mut EnqueueRequest,
        info: &mut asynq_core::TaskInfo,
        task: &Task,
        options: &TaskOptions,
        replacing: bool,
    ) -> Result<()> {
        let Some(router) = &self.shards else { return Ok(()) };
        router.place(request, task, options, self.clock.as_ref(), replacing).await?;
        info.queue = request.message.queue.clone();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Client;
    use asynq_core::broker::{Capabilities, Inspect};
    use asynq_core::{SimulatedClock, TaskState};
    use asynq_memory::MemoryBroker;
    use std::collections::BTreeMap;

    /// A directory that counts its reads, which fail while `down`, and wait for a permit of
    /// `gate` while `blocked`.
    struct Counting {
        inner: Arc<dyn ShardedQueues>,
        reads: AtomicUsize,
        down: std::sync::atomic::AtomicBool,
        blocked: std::sync::atomic::AtomicBool,
        gate: tokio::sync::Semaphore,
    }

    #[async_trait::async_trait]
    impl ShardedQueues for Counting {
        async fn declare_sharded_queue(&self, logical: &QueueName, count: usize) -> Result<ShardedQueue> {
            self.inner.declare_sharded_queue(logical, count).await
        }
        async fn reshard_queue(&self, logical: &QueueName, count: usize) -> Result<ShardedQueue> {
            self.inner.reshard_queue(logical, count).await
        }
        async fn drop_drained_shards(&self, logical: &QueueName) -> Result<bool> {
            self.inner.drop_drained_shards(logical).await
        }
        async fn sharded_queue(&self, logical: &QueueName) -> Result<Option<ShardedQueue>> {
            self.inner.sharded_queue(logical).await
        }
        async fn sharded_queues(&self) -> Result<Vec<ShardedQueue>> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            if self.blocked.load(Ordering::Relaxed) {
                self.gate.acquire().await.unwrap().forget();
            }
            if self.down.load(Ordering::Relaxed) {
                return Err(Error::Broker(asynq_core::BrokerError::permanent("connection refused")));
            }
            self.inner.sharded_queues().await
        }
    }

    struct Setup {
        broker: Arc<MemoryBroker>,
        client: Client,
        directory: Arc<Counting>,
        clock: SimulatedClock,
        orders: ShardedQueue,
    }

    async fn setup() -> Setup {
        let clock = SimulatedClock::new(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000));
        let broker = Arc::new(MemoryBroker::with_clock(Arc::new(clock.clone())));
        let inner = broker.clone().as_sharded_queues().unwrap();
        let orders = inner.declare_sharded_queue(&QueueName::from_static("orders"), 4).await.unwrap();
        let directory = Arc::new(Counting {
            inner,
            reads: AtomicUsize::new(0),
            down: Default::default(),
            blocked: Default::default(),
            gate: tokio::sync::Semaphore::new(0),
        });
        let client = Client::from_shared(broker.clone())
            .with_clock(Arc::new(clock.clone()))
            .with_sharded_queues(directory.clone());
        Setup { broker, client, directory, clock, orders }
    }

    fn on(queue: &str) -> TaskOptions {
        TaskOptions::new().queue(queue)
    }

    /// The pending tasks' payloads per shard, in their order.
    async fn pending(s: &Setup) -> BTreeMap<String, Vec<String>> {
        let mut per_shard = BTreeMap::new();
        for shard in s.orders.shards() {
            let page = asynq_core::broker::Page { size: 100, number: 0 };
            let tasks = s.broker.list_tasks(shard, TaskState::Pending, page).await.unwrap();
            let payloads = tasks.iter().map(|t| String::from_utf8_lossy(&t.payload).into_owned()).collect();
            per_shard.insert(shard.to_string(), payloads);
        }
        per_shard
    }

    #[tokio::test]
    async fn tasks_go_round_robin_and_a_key_keeps_its_shard_and_order() {
        let s = setup().await;
        for i in 0..8 {
            let info = s.client.enqueue(&Task::new("t", format!("rr{i}")), on("orders")).await.unwrap();
            assert_eq!(info.queue, s.orders.shards()[i % 4]);
        }
        assert!(pending(&s).await.values().all(|tasks| tasks.len() == 2), "{:?}", pending(&s).await);
        for i in 0..5 {
            let keyed = on("orders").shard_key("customer-7");
            let info = s.client.enqueue(&Task::new("t", format!("k{i}")), keyed).await.unwrap();
            assert_eq!(&info.queue, s.orders.shard_for_key(b"customer-7"));
        }
        let keyed: Vec<String> = pending(&s).await.remove(s.orders.shard_for_key(b"customer-7").as_str()).unwrap();
        let keyed: Vec<&String> = keyed.iter().filter(|p| p.starts_with('k')).collect();
        assert_eq!(keyed, ["k0", "k1", "k2", "k3", "k4"]);
        assert_eq!(s.directory.reads.load(Ordering::Relaxed), 1, "one read for every enqueue within the cadence");
    }

    #[tokio::test]
    async fn uniqueness_ids_and_groups_hold_over_the_logical_queue() {
        let s = setup().await;
        let unique = || on("orders").unique(Duration::from_secs(60));
        s.client.enqueue(&Task::new("t", "same"), unique()).await.unwrap();
        let again = s.client.enqueue(&Task::new("t", "same"), unique()).await;
        assert!(matches!(again, Err(Error::DuplicateTask { .. })), "{again:?}");
        s.client.enqueue(&Task::new("t", "a"), on("orders").task_id("id-1")).await.unwrap();
        let again = s.client.enqueue(&Task::new("t", "b"), on("orders").task_id("id-1")).await;
        assert!(matches!(again, Err(Error::TaskIdConflict { .. })), "{again:?}");
        let mut shards = Vec::new();
        for i in 0..4 {
            let info = s.client.enqueue(&Task::new("t", format!("g{i}")), on("orders").group("g")).await.unwrap();
            shards.push(info.queue);
        }
        assert!(shards.iter().all(|shard| shard == &shards[0]), "one group, one shard: {shards:?}");
    }

    #[tokio::test]
    async fn bad_shard_keys_are_refused_and_plain_queues_are_left_alone() {
        let s = setup().await;
        for options in [
            on("orders").shard_key(" "),
            on("orders").shard_key("k".repeat(MAX_SHARD_KEY_LEN + 1)),
            on("orders").shard_key("k").unique(Duration::from_secs(60)),
            on("orders").shard_key("k").group("g"),
        ] {
            let refused = s.client.enqueue(&Task::new("t", "x"), options.clone()).await;
            assert!(
                matches!(refused, Err(Error::InvalidArgument { field: "shard key", .. })),
                "{options:?}: {refused:?}"
            );
        }
        assert!(pending(&s).await.values().all(Vec::is_empty), "nothing written");
        let plain = s.client.enqueue(&Task::new("t", "x"), on("plain").shard_key("k")).await.unwrap();
        assert_eq!(plain.queue, "plain");
    }

    #[tokio::test]
    async fn batches_are_placed_and_new_declarations_seen_after_the_cadence() {
        let s = setup().await;
        let batch: Vec<_> = (0..4).map(|i| (Task::new("t", format!("b{i}")), on("orders"))).collect();
        let results = s.client.enqueue_batch(&batch).await;
        let queues: Vec<QueueName> = results.into_iter().map(|r| r.unwrap().queue).collect();
        assert_eq!(queues, s.orders.shards());

        let later = s.directory.declare_sharded_queue(&QueueName::from_static("later"), 2).await.unwrap();
        let before = s.client.enqueue(&Task::new("t", "x"), on("audit")).await.unwrap();
        assert_eq!(before.queue, "audit", "an undeclared queue is a plain queue");
        s.clock.advance(SHARD_REFRESH);
        let after = s.client.enqueue(&Task::new("t", "x"), on("later")).await.unwrap();
        assert!(later.has_shard(&after.queue), "{after:?}");
        assert_eq!(s.directory.reads.load(Ordering::Relaxed), 2);
    }

    #[tokio::test]
    async fn a_client_over_a_broker_that_keeps_sharded_queues_places_on_them_by_itself() {
        let s = setup().await;
        let client = Client::from_shared(s.broker.clone()).with_clock(Arc::new(s.clock.clone()));
        for i in 0..6 {
            let info = client.enqueue(&Task::new("t", format!("rr{i}")), on("orders")).await.unwrap();
            assert_eq!(info.queue, s.orders.shards()[i % 4]);
        }
        let keyed = client.enqueue(&Task::new("t", "k"), on("orders").shard_key("customer-7")).await.unwrap();
        assert_eq!(&keyed.queue, s.orders.shard_for_key(b"customer-7"));
        let flow = asynq_core::workflow::Flow::task(Task::new("t", "f"), on("orders"));
        let stored = crate::FlowProducer::new(MemoryBroker::clone(&s.broker)).enqueue(&flow).await.unwrap();
        assert_eq!(&stored.tasks[0].queue, s.orders.shard_for_key(stored.id.as_str().as_bytes()));
    }

    #[tokio::test]
    async fn when_the_declarations_cannot_be_read_the_enqueue_fails_and_writes_nothing() {
        let s = setup().await;
        s.directory.down.store(true, Ordering::Relaxed);
        for queue in ["orders", "plain"] {
            let refused = s.client.enqueue(&Task::new("t", "x"), on(queue)).await;
            assert!(matches!(refused, Err(Error::Broker(_))), "{refused:?}");
        }
        let batch = s.client.enqueue_batch(&[(Task::new("t", "b"), on("orders"))]).await;
        assert!(matches!(batch[..], [Err(Error::Broker(_))]), "{batch:?}");
        assert!(pending(&s).await.values().all(Vec::is_empty), "nothing written");
        let queues = s.broker.queues().await.unwrap();
        assert!(queues.iter().all(|queue| s.orders.has_shard(queue)), "no queue made but the shards: {queues:?}");
        s.directory.down.store(false, Ordering::Relaxed);
        let placed = s.client.enqueue(&Task::new("t", "x"), on("orders")).await.unwrap();
        assert!(s.orders.has_shard(&placed.queue), "{placed:?}");
    }

    /// Resolves `future` if it can finish without waiting on anything but tokio's (paused) timers;
    /// gives it back otherwise.
    async fn finishes<F: std::future::Future + Unpin>(future: &mut F) -> Option<F::Output> {
        tokio::time::timeout(Duration::from_secs(10), future).await.ok()
    }

    /// After a first enqueue (the declarations read) and `after` more on the clock, an enqueue of
    /// `task` to `orders` whose read of the declarations hangs, started and pending.
    async fn a_hung_read<'a>(
        s: &'a Setup,
        task: &'a Task,
        after: Duration,
    ) -> std::pin::Pin<Box<impl std::future::Future<Output = Result<crate::TaskInfo>> + 'a>> {
        s.client.enqueue(&Task::new("t", "first"), on("orders")).await.unwrap();
        s.directory.blocked.store(true, Ordering::Relaxed);
        s.clock.advance(after);
        let mut reader = Box::pin(s.client.enqueue(task, on("orders")));
        assert!(finishes(&mut reader).await.is_none(), "the read hangs");
        reader
    }

    #[tokio::test(start_paused = true)]
    async fn while_a_read_hangs_the_others_use_the_kept_declarations_only_while_young() {
        let s = setup().await;
        let reader_task = Task::new("t", "reader");
        let reader = a_hung_read(&s, &reader_task, SHARD_REFRESH).await;
        assert_eq!(s.directory.reads.load(Ordering::Relaxed), 2);

        // Others go on with the kept declarations while they are young enough.
        s.clock.advance(SHARD_KEPT_AT_MOST - SHARD_REFRESH - Duration::from_millis(1));
        let young_task = Task::new("t", "young");
        let mut young = Box::pin(s.client.enqueue(&young_task, on("orders")));
        let young = finishes(&mut young).await.expect("the kept declarations serve").unwrap();
        assert!(s.orders.has_shard(&young.queue), "{young:?}");

        // A reshard; once the kept declarations are too old, a caller waits for the read.
        let resharded = s.directory.reshard_queue(&QueueName::from_static("orders"), 2).await.unwrap();
        s.clock.advance(Duration::from_millis(1));
        let old_task = Task::new("t", "old");
        let mut old = Box::pin(s.client.enqueue(&old_task, on("orders")));
        assert!(finishes(&mut old).await.is_none(), "waits for the read rather than use declarations this old");
        assert_eq!(s.directory.reads.load(Ordering::Relaxed), 2, "one read at a time");

        // The read answers: the reader places by it, and so does the one that waited, the read
        // having begun less than the bound ago.
        s.directory.gate.add_permits(1);
        let reader = reader.await.unwrap();
        let old = old.await.unwrap();
        assert!(resharded.has_shard(&reader.queue) && resharded.has_shard(&old.queue), "{reader:?} {old:?}");
        assert_eq!(s.directory.reads.load(Ordering::Relaxed), 2);
        assert_eq!(pending(&s).await.values().map(Vec::len).sum::<usize>(), 2, "first and young, on the old shards");
    }

    #[tokio::test(start_paused = true)]
    async fn callers_that_waited_for_a_recent_read_take_what_it_read() {
        let s = setup().await;
        let reader_task = Task::new("t", "reader");
        let reader = a_hung_read(&s, &reader_task, SHARD_KEPT_AT_MOST).await;
        let tasks: Vec<Task> = (0..3).map(|i| Task::new("t", format!("w{i}"))).collect();
        let mut waiters: Vec<_> = tasks.iter().map(|task| Box::pin(s.client.enqueue(task, on("orders")))).collect();
        for waiter in &mut waiters {
            assert!(finishes(waiter).await.is_none(), "the kept declarations are too old");
        }
        s.directory.gate.add_permits(1);
        reader.await.unwrap();
        for waiter in waiters {
            waiter.await.unwrap();
        }
        assert_eq!(s.directory.reads.load(Ordering::Relaxed), 2, "one read served them all");
    }

    #[tokio::test(start_paused = true)]
    async fn a_caller_that_waited_for_a_read_begun_too_long_ago_reads_again() {
        let s = setup().await;
        let reader_task = Task::new("t", "reader");
        let reader = a_hung_read(&s, &reader_task, SHARD_REFRESH).await;
        s.clock.advance(SHARD_KEPT_AT_MOST);
        let waiter_task = Task::new("t", "waiter");
        let mut waiter = Box::pin(s.client.enqueue(&waiter_task, on("orders")));
        assert!(finishes(&mut waiter).await.is_none(), "the kept declarations are too old");
        s.directory.gate.add_permits(2);
        reader.await.unwrap();
        waiter.await.unwrap();
        assert_eq!(s.directory.reads.load(Ordering::Relaxed), 3, "what the hung read answered is too old too");
    }

    #[tokio::test]
    async fn a_replacement_by_id_finds_a_task_placed_by_its_id() {
        let s = setup().await;
        let first = s.client.enqueue(&Task::new("t", "v1"), on("orders").task_id("r-1")).await.unwrap();
        let replaced = s.client.replace("r-1", &Task::new("t", "v2"), on("orders")).await.unwrap();
        assert_eq!(replaced.queue, first.queue);
        assert_eq!(pending(&s).await[first.queue.as_str()], ["v2"]);
    }
}
