//! A scenario's stage: its Redis, its worker and producer processes, and what it reads back from
//! them (Redis's keys, the ledgers) to count what was lost.

use super::*;
use crate::produce::Summary;
use crate::worker::LedgerLine;
use anyhow::bail;
use asynq_redis::keys::Namespace;

impl Stage {
    /// A stage on one redis-server started with `redis_args`.
    pub(super) fn new(scenario: Scenario, bin: &Path, redis_args: &[&str]) -> anyhow::Result<Self> {
        Self::on(scenario, bin, Backend::Single(RedisServer::start_with(redis_args)))
    }

    /// A stage whose Redis is a master, a replica and a sentinel.
    pub(super) fn with_sentinel(scenario: Scenario, bin: &Path) -> anyhow::Result<Self> {
        Self::on(scenario, bin, Backend::Sentinel(Box::new(RedisSentinel::start("asynq-chaos"))))
    }

    /// A stage whose Redis is a Cluster of three masters with a replica each.
    pub(super) fn with_cluster(scenario: Scenario, bin: &Path) -> anyhow::Result<Self> {
        Self::on(scenario, bin, Backend::Cluster(Box::new(RedisCluster::start_with_replicas(3))))
    }

    /// A stage whose Redis is a Cluster of three masters, whose workers serve `queues`, each of
    /// which must be served by another master than the others, as the Cluster reports it.
    pub(super) fn with_cluster_queues(scenario: Scenario, bin: &Path, queues: &[&'static str]) -> anyhow::Result<Self> {
        let mut stage = Self::on(scenario, bin, Backend::Cluster(Box::new(RedisCluster::start(3))))?;
        stage.queues = queues.to_vec();
        let mut masters = Vec::new();
        for queue in queues {
            let master = stage.redis.data(queue)?.addr();
            if masters.contains(&master) {
                bail!("the queues {queues:?} must be served by different masters, but {master} serves two of them");
            }
            stage.notes.push(format!("queue {queue}: slot {} on master {master}", queue_slot(queue)));
            masters.push(master);
        }
        Ok(stage)
    }

    pub(super) fn on(scenario: Scenario, bin: &Path, redis: Backend) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new().prefix(&format!("asynq-chaos-{}-", scenario.name())).tempdir()?;
        Ok(Self {
            scenario: scenario.name(),
            bin: bin.to_owned(),
            queues: vec![QUEUE],
            sharded: false,
            redis,
            replication_window: None,
            dir,
            procs: Vec::new(),
            notes: Vec::new(),
            failures: Vec::new(),
        })
    }

    /// The one redis-server of a single-server stage.
    pub(super) fn single(&mut self) -> &mut RedisServer {
        match &mut self.redis {
            Backend::Single(redis) => redis,
            _ => panic!("{} does not run on one server", self.scenario),
        }
    }

    /// The Sentinel set of a Sentinel stage.
    pub(super) fn sentinel(&mut self) -> &mut RedisSentinel {
        match &mut self.redis {
            Backend::Sentinel(set) => set,
            _ => panic!("{} does not run behind Sentinel", self.scenario),
        }
    }

    /// The Cluster of a Cluster stage.
    pub(super) fn cluster(&mut self) -> &mut RedisCluster {
        match &mut self.redis {
            Backend::Cluster(cluster) => cluster,
            _ => panic!("{} does not run on a Cluster", self.scenario),
        }
    }

    pub(super) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub(super) fn spawn(&mut self, label: &str, args: Vec<String>, ends_by_itself: bool) -> anyhow::Result<ProcId> {
        let out = self.path(&format!("{label}.out"));
        let log = self.path(&format!("{label}.log"));
        let child = Command::new(&self.bin)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(File::create(&out)?)
            .stderr(File::create(&log)?)
            .spawn()
            .with_context(|| format!("could not start {} {}", self.bin.display(), args.join(" ")))?;
        self.procs.push(Proc { label: label.to_owned(), child, out, log, expected_alive: true, ends_by_itself });
        Ok(ProcId(self.procs.len() - 1))
    }

    /// Starts a worker whose ledger is `<label>.ledger`.
    pub(super) fn worker(&mut self, label: &str, spec: &WorkerSpec) -> anyhow::Result<ProcId> {
        let mut args = vec![
            "worker".to_owned(),
            format!("--redis-url={}", self.redis.url()),
            format!("--ledger={}", self.path(&format!("{label}.ledger")).display()),
            format!("--concurrency={}", spec.concurrency),
            format!("--shutdown-timeout-ms={}", spec.shutdown_timeout.as_millis()),
            format!("--recoverer-interval-ms={}", spec.recoverer_interval.as_millis()),
            format!("--delayed-task-check-interval-ms={}", spec.delayed_task_check_interval.as_millis()),
            format!("--retry-delay-ms={}", spec.retry_delay.as_millis()),
            format!("--response-timeout-ms={}", spec.response_timeout.as_millis()),
        ];
        if self.sharded {
            args.push(format!("--sharded-queue={}", self.queues[0]));
        } else {
            args.extend(self.queues.iter().map(|queue| format!("--queue={queue}")));
        }
        if let Some(max) = spec.max_sleep {
            args.push(format!("--max-sleep-ms={}", max.as_millis()));
        }
        if let Some(after) = spec.oversized_enqueue_after {
            args.push(format!("--oversized-enqueue-after-ms={}", after.as_millis()));
        }
        if let Some(limit) = spec.shared_limit {
            args.push(format!("--shared-limit={limit}"));
        }
        self.spawn(label, args, false)
    }

    /// Starts a producer whose acknowledged ledger is `<label>.acked`.
    /// Two workers of concurrency 10, and a producer of `count` tasks at `rate` a second;
    /// returns the producer once a third of the tasks are acknowledged.
    pub(super) fn steady_load(&mut self, count: u64, rate: u32) -> anyhow::Result<ProcId> {
        let spec = WorkerSpec { concurrency: 10, ..WorkerSpec::default() };
        self.worker("worker-1", &spec)?;
        self.worker("worker-2", &spec)?;
        let producer = self.producer(
            "producer",
            &ProducerSpec { count, sleep: Duration::from_millis(5), rate: Some(rate), ..ProducerSpec::default() },
        )?;
        self.poll("a third of the tasks to be acknowledged", Duration::from_secs(120), |stage| {
            Ok(stage.acknowledged()?.len() as u64 >= count / 3)
        })?;
        Ok(producer)
    }

    pub(super) fn producer(&mut self, label: &str, spec: &ProducerSpec) -> anyhow::Result<ProcId> {
        let mut args = vec![
            "produce".to_owned(),
            format!("--redis-url={}", self.redis.url()),
            format!("--queue={}", self.queues[0]),
            format!("--acked={}", self.path(&format!("{label}.acked")).display()),
            format!("--count={}", spec.count),
            format!("--first-seq={}", spec.first_seq),
            format!("--sleep-ms={}", spec.sleep.as_millis()),
            format!("--unique-every={}", spec.unique_every),
            format!("--response-timeout-ms={}", spec.response_timeout.as_millis()),
        ];
        if let Some(rate) = spec.rate {
            args.push(format!("--rate={rate}"));
        }
        if let Some(max_retry) = spec.max_retry {
            args.push(format!("--max-retry={max_retry}"));
        }
        if let Some(chain) = spec.workflow_chain {
            args.push(format!("--workflow-chain={chain}"));
        }
        if let Some(queue) = spec.alternate_queue {
            args.push(format!("--alternate-queue={queue}"));
        }
        self.spawn(label, args, true)
    }

    pub(super) fn proc(&mut self, id: ProcId) -> &mut Proc {
        &mut self.procs[id.0]
    }

    pub(super) fn pid(&mut self, id: ProcId) -> u32 {
        self.proc(id).child.id()
    }

    /// Sends `signal` (`TERM`, `TSTP`, ...) with kill(1).
    pub(super) fn signal(&mut self, id: ProcId, signal: &str) -> anyhow::Result<()> {
        let pid = self.pid(id);
        let status =
            Command::new("kill").args(["-s", signal, &pid.to_string()]).status().context("could not run kill")?;
        if !status.success() {
            bail!("kill -s {signal} {pid} ({}) failed: {status}", self.proc(id).label);
        }
        Ok(())
    }

    /// `kill -9`, and waits for it to go.
    pub(super) fn kill9(&mut self, id: ProcId) {
        let proc = self.proc(id);
        proc.expected_alive = false;
        let _ = proc.child.kill();
        let _ = proc.child.wait();
    }

    /// Polls until the process exits, for up to `limit`; `None` if it still runs.
    pub(super) fn wait_exit(&mut self, id: ProcId, limit: Duration) -> anyhow::Result<Option<ExitStatus>> {
        self.proc(id).expected_alive = false;
        let give_up = Instant::now() + limit;
        loop {
            if let Some(status) = self.proc(id).child.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= give_up {
                return Ok(None);
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits for a producer to finish, which must succeed; returns its summary.
    pub(super) fn finish_producer(&mut self, id: ProcId, limit: Duration) -> anyhow::Result<Summary> {
        let status = self.wait_exit(id, limit)?;
        let proc = self.proc(id);
        let out = std::fs::read_to_string(&proc.out).unwrap_or_default();
        let summary = out.lines().rev().find_map(Summary::parse);
        let log = tail(&proc.log);
        match (status, summary) {
            (Some(status), Some(summary)) if status.success() => Ok(summary),
            (None, _) => bail!("producer {} still runs after {limit:?}; its log ends:\n{log}", proc.label),
            (Some(status), _) => bail!("producer {} failed ({status}); its log ends:\n{log}", proc.label),
        }
    }

    /// SIGTERM to `id`, which must exit successfully within `limit`; returns how long it took.
    pub(super) fn terminate(&mut self, id: ProcId, limit: Duration) -> anyhow::Result<Duration> {
        let started = Instant::now();
        self.signal(id, "TERM")?;
        let label = self.proc(id).label.clone();
        match self.wait_exit(id, limit)? {
            Some(status) if status.success() => {}
            Some(status) => self.failures.push(format!("{label} exited with {status} after SIGTERM")),
            None => {
                self.failures.push(format!("{label} hung: still running {limit:?} after SIGTERM"));
                self.kill9(id);
            }
        }
        Ok(started.elapsed())
    }

    /// Polls `done` until it holds, for up to `limit`.
    pub(super) fn poll(
        &mut self,
        what: &str,
        limit: Duration,
        mut done: impl FnMut(&mut Self) -> anyhow::Result<bool>,
    ) -> anyhow::Result<()> {
        let give_up = Instant::now() + limit;
        loop {
            if done(self)? {
                return Ok(());
            }
            for proc in self.procs.iter_mut().filter(|proc| proc.expected_alive) {
                let alive_or_done = match proc.child.try_wait() {
                    Ok(None) => true,
                    Ok(Some(status)) => proc.ends_by_itself && status.success(),
                    Err(_) => false,
                };
                if !alive_or_done {
                    bail!("{} died while waiting for {what}; its log ends:\n{}", proc.label, tail(&proc.log));
                }
            }
            if Instant::now() >= give_up {
                bail!("timed out after {limit:?} waiting for {what}");
            }
            std::thread::sleep(POLL);
        }
    }

    /// Runs a command on the server holding the first queue's keys (every key's server, but on
    /// a Cluster).
    pub(super) fn command(&self, args: &[&str]) -> anyhow::Result<RespValue> {
        self.command_on(self.queues[0], args)
    }

    /// Runs a command on the server holding the keys of `queue`.
    pub(super) fn command_on(&self, queue: &str, args: &[&str]) -> anyhow::Result<RespValue> {
        self.redis.data(queue)?.command(args).map_err(|e| anyhow::anyhow!("redis {args:?}: {e}"))
    }

    pub(super) fn int_on(&self, queue: &str, args: &[&str]) -> anyhow::Result<i64> {
        let reply = self.command_on(queue, args)?;
        reply.as_int().with_context(|| format!("redis {args:?} replied {reply:?}"))
    }

    pub(super) fn key(queue: &str, suffix: &str) -> String {
        format!("{}{suffix}", Namespace::DEFAULT.queue(queue).prefix())
    }

    /// The counts of every queue, summed. Each queue's are of one moment; the queues are read
    /// one after the other, which misses nothing a drain check needs: a task never moves from
    /// one queue's containers to another's (a workflow task that waits is counted where it
    /// waits until it is released there).
    pub(super) fn queue_counts(&self) -> anyhow::Result<QueueCounts> {
        let mut total = QueueCounts::default();
        for queue in &self.queues {
            let counts = self.queue_counts_of(queue)?;
            total.pending += counts.pending;
            total.active += counts.active;
            total.scheduled += counts.scheduled;
            total.retry += counts.retry;
            total.archived += counts.archived;
            total.waiting += counts.waiting;
        }
        Ok(total)
    }

    pub(super) fn queue_counts_of(&self, queue: &str) -> anyhow::Result<QueueCounts> {
        // One script, so the five sizes are of one moment: read one by one, a batch the
        // forwarder moves from retry to pending between two reads would be counted in neither.
        const SIZES: &str = "return {redis.call('LLEN', KEYS[1]), redis.call('LLEN', KEYS[2]), \
            redis.call('ZCARD', KEYS[3]), redis.call('ZCARD', KEYS[4]), redis.call('ZCARD', KEYS[5]), \
            redis.call('ZCARD', KEYS[6])}";
        let keys =
            ["pending", "active", "scheduled", "retry", "archived", "wf:waiting"].map(|key| Self::key(queue, key));
        let mut args = vec!["EVAL", SIZES, "6"];
        args.extend(keys.iter().map(String::as_str));
        let reply = self.command_on(queue, &args)?;
        let sizes: Vec<i64> = reply.as_array().unwrap_or_default().iter().filter_map(RespValue::as_int).collect();
        let [pending, active, scheduled, retry, archived, waiting] = sizes[..] else {
            anyhow::bail!("queue sizes: unexpected reply {reply:?}");
        };
        Ok(QueueCounts { pending, active, scheduled, retry, archived, waiting })
    }

    /// The task IDs every producer acknowledged.
    pub(super) fn acknowledged(&self) -> anyhow::Result<Vec<String>> {
        let mut ids = Vec::new();
        for text in self.read_all("acked")? {
            ids.extend(text.lines().filter(|line| !line.is_empty()).map(str::to_owned));
        }
        Ok(ids)
    }

    /// One worker's ledger lines.
    pub(super) fn ledger(&self, label: &str) -> String {
        std::fs::read_to_string(self.path(&format!("{label}.ledger"))).unwrap_or_default()
    }

    /// How many handlers one worker started.
    pub(super) fn starts(&self, label: &str) -> usize {
        self.ledger(label).lines().filter(|line| matches!(LedgerLine::parse(line), Some(LedgerLine::Start(..)))).count()
    }

    /// How many handlers one worker finished.
    pub(super) fn finished(&self, label: &str) -> usize {
        self.ledger(label).lines().filter(|line| matches!(LedgerLine::parse(line), Some(LedgerLine::Ran(_)))).count()
    }

    /// How many distinct tasks the workers finished, over every ledger.
    pub(super) fn finished_tasks(&self) -> anyhow::Result<usize> {
        Ok(count_runs(&self.read_all("ledger")?).len())
    }

    /// Keeps an event log of about `cap` events for every queue, as `EventLog::set_event_cap`
    /// does; done before any process starts, so that every process writes it from the start.
    pub(super) fn keep_event_logs(&self, cap: u32) -> anyhow::Result<()> {
        let settings = Namespace::DEFAULT.event_caps();
        let node = self.redis.node_for(&settings)?;
        for queue in &self.queues {
            let set = node.command(&["HSET", &settings, queue, &cap.to_string()]);
            set.map_err(|e| anyhow::anyhow!("HSET {settings} {queue} {cap}: {e}"))?;
        }
        Ok(())
    }

    /// Per task, how many events of each kind the queues' event logs hold (see
    /// [`Stage::keep_event_logs`]).
    pub(super) fn event_counts(&self) -> anyhow::Result<HashMap<String, EventCounts>> {
        let mut counts: HashMap<String, EventCounts> = HashMap::new();
        for queue in &self.queues {
            let stream = Namespace::DEFAULT.queue(queue).events();
            let events = self.command_on(queue, &["XRANGE", &stream, "-", "+"])?;
            let events = events.as_array().with_context(|| format!("XRANGE {stream} replied {events:?}"))?;
            if events.len() >= EVENT_CAP as usize {
                bail!("{queue}'s event log reached its cap of {EVENT_CAP}: events may have been trimmed");
            }
            for event in events {
                let fields = event.as_array().and_then(|entry| entry.get(1)).map(RespValue::to_map).unwrap_or_default();
                let (Some(kind), Some(task)) = (fields.get("kind"), fields.get("task")) else {
                    bail!("an event of {stream} without a kind or a task: {event:?}");
                };
                let entry = counts.entry(task.clone()).or_default();
                match kind.as_str() {
                    "enqueued" => entry.enqueued += 1,
                    "started" => entry.started += 1,
                    "requeued" | "retried" => entry.put_back += 1,
                    _ => {}
                }
            }
        }
        Ok(counts)
    }

    /// Per queue, its outbox's length and how many tasks are pending or active there, each
    /// queue's of one moment, read through `connections` (one per queue, in [`Stage::queues`]
    /// order).
    pub(super) fn relay_state(&self, connections: &mut [RespConnection]) -> anyhow::Result<Vec<RelayState>> {
        const STATE: &str =
            "return {redis.call('LLEN', KEYS[1]), redis.call('LLEN', KEYS[2]), redis.call('LLEN', KEYS[3])}";
        let mut states = Vec::with_capacity(self.queues.len());
        for (queue, connection) in self.queues.iter().zip(connections) {
            let keys = Namespace::DEFAULT.queue(queue);
            let reply = connection
                .command(&["EVAL", STATE, "3", &keys.workflow_outbox(), &keys.pending(), &keys.active()])
                .map_err(|e| anyhow::anyhow!("the relay state of {queue}: {e}"))?;
            let lengths: Vec<i64> = reply.as_array().unwrap_or_default().iter().filter_map(RespValue::as_int).collect();
            let [outbox, pending, active] = lengths[..] else {
                bail!("the relay state of {queue}: unexpected reply {reply:?}");
            };
            states.push(RelayState { outbox, pending, active });
        }
        Ok(states)
    }

    /// `kill -9` of `victim`, the only worker running, `delay` after an outbox first holds an
    /// entry, and the queues are as `when` says: a relay is then under way, the victim's own
    /// after it settled a task, and a longer delay cuts it off further on. Looks every
    /// [`RELAY_POLL`], for up to [`RELAY_WAIT`], then kills anyway. Returns what it saw: whether
    /// it caught a relay under way, and where the dead worker left each relay.
    pub(super) fn kill_while_relaying(
        &mut self,
        victim: ProcId,
        when: KillWhen,
        delay: Duration,
    ) -> anyhow::Result<RelayKill> {
        let mut connections = Vec::with_capacity(self.queues.len());
        for queue in &self.queues {
            connections.push(self.redis.data(queue)?.connect().map_err(|e| anyhow::anyhow!("connect: {e}"))?);
        }
        let give_up = Instant::now() + RELAY_WAIT;
        let caught = loop {
            let states = self.relay_state(&mut connections)?;
            let busy = states.iter().any(|state| state.outbox > 0);
            let ready = match when {
                KillWhen::Relaying => true,
                KillWhen::RelayingIdle => states.iter().all(|state| state.pending + state.active == 0),
            };
            if busy && ready {
                break true;
            }
            if Instant::now() >= give_up {
                break false;
            }
            if let Some(status) = self.proc(victim).child.try_wait()? {
                let proc = self.proc(victim);
                bail!("{} died ({status}) before it could be killed; its log ends:\n{}", proc.label, tail(&proc.log));
            }
            std::thread::sleep(RELAY_POLL);
        };
        std::thread::sleep(delay); // Where the relay is cut off.
        self.kill9(victim);
        Ok(RelayKill { caught, left: self.relay_progress()? })
    }

    /// How far the relay of each entry left in an outbox got, read from what each of its steps
    /// writes (see `asynq-redis`'s `scripts/workflow.lua`): the pass marks each dependent with
    /// the parent it heard of (`wf_p:<length of the parent's queue>:<queue>:<ID>` in the
    /// dependent's hash), then the parent's children list is deleted, then the entry.
    pub(super) fn relay_progress(&self) -> anyhow::Result<RelayProgress> {
        let mut progress = RelayProgress::default();
        for queue in &self.queues {
            let keys = Namespace::DEFAULT.queue(queue);
            let entries = self.command_on(queue, &["LRANGE", &keys.workflow_outbox(), "0", "-1"])?;
            for entry in entries.as_array().unwrap_or_default().iter().filter_map(RespValue::as_str) {
                let (_, parent) = entry.split_once(':').with_context(|| format!("an outbox entry {entry:?}"))?;
                let children = self.command_on(queue, &["LRANGE", &keys.workflow_children(parent), "0", "-1"])?;
                let children: Vec<&str> =
                    children.as_array().unwrap_or_default().iter().filter_map(RespValue::as_str).collect();
                if children.is_empty() {
                    progress.after_children_deleted += 1;
                    continue;
                }
                let mark = format!("wf_p:{}:{queue}:{parent}", queue.len());
                let mut told = 0;
                for pair in children.chunks_exact(2) {
                    let task = Namespace::DEFAULT.queue(pair[0]).task(pair[1]);
                    told += self.int_on(pair[0], &["HEXISTS", &task, &mark])?;
                }
                match told {
                    0 => progress.before_pass += 1,
                    n if n as usize == children.len() / 2 => progress.after_pass += 1,
                    _ => progress.mid_pass += 1,
                }
            }
        }
        Ok(progress)
    }

    /// The non-empty lines of one file of the stage.
    pub(super) fn read_lines(&self, name: &str) -> anyhow::Result<Vec<String>> {
        let path = self.path(name);
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        Ok(text.lines().filter(|line| !line.is_empty()).map(str::to_owned).collect())
    }

    pub(super) fn read_all(&self, extension: &str) -> anyhow::Result<Vec<String>> {
        let mut texts = Vec::new();
        for entry in std::fs::read_dir(self.dir.path())? {
            let path = entry?.path();
            if path.extension().is_some_and(|ext| ext == extension) {
                texts.push(std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?);
            }
        }
        Ok(texts)
    }

    /// IDs in the active lists that have no lease.
    pub(super) fn orphaned_active(&self) -> anyhow::Result<usize> {
        let mut orphaned = 0;
        for queue in &self.queues {
            let active = self.command_on(queue, &["LRANGE", &Self::key(queue, "active"), "0", "-1"])?;
            for id in active.as_array().unwrap_or_default().iter().filter_map(RespValue::as_str) {
                if self.command_on(queue, &["ZSCORE", &Self::key(queue, "lease"), id])? == RespValue::Nil {
                    orphaned += 1;
                }
            }
        }
        Ok(orphaned)
    }

    /// Uniqueness locks whose task hash is gone.
    pub(super) fn stale_locks(&self) -> anyhow::Result<usize> {
        let mut stale = 0;
        for queue in &self.queues {
            let locks = self.command_on(queue, &["KEYS", &Self::key(queue, "unique:*")])?;
            for lock in locks.as_array().unwrap_or_default().iter().filter_map(RespValue::as_str) {
                let owner = self.command_on(queue, &["GET", lock])?;
                let exists = match owner.as_str() {
                    Some(id) => self.int_on(queue, &["EXISTS", &Self::key(queue, &format!("t:{id}"))])? == 1,
                    None => false,
                };
                if !exists {
                    stale += 1;
                }
            }
        }
        Ok(stale)
    }

    /// Waits (up to `limit`) until the queue holds nothing unfinished, stops the workers still
    /// running with SIGTERM, and counts. Producers must have finished.
    pub(super) fn finish(mut self, limit: Duration) -> anyhow::Result<Report> {
        let started = Instant::now();
        let at_start = self.queue_counts()?;
        if at_start.unfinished() > 0 {
            self.notes.push(format!(
                "unfinished when the producers and the fault were done: pending={} active={} scheduled={} retry={}",
                at_start.pending, at_start.active, at_start.scheduled, at_start.retry
            ));
        }
        let drained = self.poll("the queue to drain", limit, |stage| Ok(stage.queue_counts()?.unfinished() == 0));
        match drained {
            Ok(()) => self.notes.push(format!("the queue drained {:.1} s later", started.elapsed().as_secs_f64())),
            Err(e) => self.failures.push(format!("{e:#}; left: {:?}", self.queue_counts().ok())),
        }
        let acknowledged = self.acknowledged()?;
        let ledgers = self.read_all("ledger")?;
        let runs = count_runs(&ledgers);
        let broken: Vec<String> = ledgers
            .iter()
            .flat_map(|text| text.lines())
            .filter_map(|line| match LedgerLine::parse(line) {
                Some(LedgerLine::Broken(id, what)) => Some(format!("{id} ({what})")),
                _ => None,
            })
            .collect();
        if !broken.is_empty() {
            self.failures.push(format!(
                "{} workflow tasks ran without every parent's result, the first: {}",
                broken.len(),
                broken[0]
            ));
        }
        let mut archived: Vec<String> = Vec::new();
        for queue in &self.queues {
            let listed = self.command_on(queue, &["ZRANGE", &Self::key(queue, "archived"), "0", "-1"])?;
            archived
                .extend(listed.as_array().unwrap_or_default().iter().filter_map(RespValue::as_str).map(str::to_owned));
        }
        let starts = count_starts(&ledgers);
        let counts = self.queue_counts()?;
        if counts.archived > 0 {
            self.notes.push(format!("{} tasks archived", counts.archived));
        }
        // Recovered tasks (lease expired) count as failures, like handler errors.
        let mut failed = 0;
        for queue in &self.queues {
            let count = self.command_on(queue, &["GET", &Self::key(queue, "failed")])?;
            failed += count.as_str().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
        }
        if failed > 0 {
            self.notes.push(format!("{failed} attempts failed (lease expired and recovered, or handler error)"));
        }
        if let Some(first) = acknowledged.iter().find(|id| !runs.contains_key(*id)) {
            self.notes.push(format!("first lost task: {first}"));
        }
        let mut report = Report {
            orphaned_active: self.orphaned_active()?,
            stale_locks: self.stale_locks()?,
            failed_unrun: failed_unrun(&starts, &runs, &archived),
            ..Report::tally(self.scenario, &acknowledged, &runs)
        };
        let failed_after_start = acknowledged
            .iter()
            .filter(|id| !runs.contains_key(*id) && archived.contains(id) && starts.contains_key(*id))
            .count();
        if failed_after_start > 0 {
            report.lost -= failed_after_start;
            self.notes.push(format!(
                "{failed_after_start} tasks archived after their handler started (charged for an attempt that ran): failed, not lost"
            ));
        }
        if let Some((producer, window)) = self.replication_window.clone() {
            let in_window: Vec<String> = self.read_lines(&format!("{producer}.acked"))?[window.clone()].to_vec();
            let replication_lost = in_window.iter().filter(|id| !runs.contains_key(*id)).count();
            self.notes.push(format!(
                "{replication_lost} of the {} enqueues acknowledged during the failover were lost to it",
                window.len()
            ));
            report.lost -= replication_lost;
            report.replication_lost = Some(replication_lost);
        }
        let ran_unacknowledged = runs.len().saturating_sub(report.ran);
        if ran_unacknowledged > 0 {
            self.notes.push(format!("{ran_unacknowledged} tasks ran whose enqueue was not acknowledged"));
        }
        // The workers still running must have survived the fault and must stop on SIGTERM.
        let running: Vec<usize> = (0..self.procs.len()).filter(|i| self.procs[*i].expected_alive).collect();
        for index in running {
            let proc = &mut self.procs[index];
            if let Ok(Some(status)) = proc.child.try_wait() {
                let failure = format!("{} died during the scenario ({status}); log:\n{}", proc.label, tail(&proc.log));
                self.failures.push(failure);
                continue;
            }
            self.terminate(ProcId(index), Duration::from_secs(30))?;
        }
        for proc in &self.procs {
            let log = std::fs::read_to_string(&proc.log).unwrap_or_default();
            if log.contains("panicked") {
                self.failures.push(format!("{} panicked; log:\n{}", proc.label, tail(&proc.log)));
            }
        }
        report.notes = std::mem::take(&mut self.notes);
        report.failures = std::mem::take(&mut self.failures);
        if !report.passed() {
            let kept = self.dir.path().to_owned();
            let dir = std::mem::replace(&mut self.dir, tempfile::tempdir()?);
            let _ = dir.keep();
            report.failures.push(format!("ledgers and logs kept in {}", kept.display()));
        }
        Ok(report)
    }
}

/// The retry counts each task ID's handlers started at, over the text of every worker ledger.
pub(super) fn count_starts(ledgers: &[String]) -> HashMap<String, BTreeSet<u32>> {
    let mut starts: HashMap<String, BTreeSet<u32>> = HashMap::new();
    for line in ledgers.iter().flat_map(|text| text.lines()) {
        if let Some(LedgerLine::Start(id, retry)) = LedgerLine::parse(line) {
            starts.entry(id.to_owned()).or_default().insert(retry);
        }
    }
    starts
}

/// How many tasks were charged a failure for an attempt no handler started: a task that ran
/// (last at retry count `r`, the highest it started at) was charged `r` failures, one after a
/// started attempt at each retry count below `r`; an archived task was charged at least once.
pub(super) fn failed_unrun(
    starts: &HashMap<String, BTreeSet<u32>>,
    runs: &HashMap<String, usize>,
    archived: &[String],
) -> usize {
    let no_starts = BTreeSet::new();
    let ran_unstarted_attempts = runs.keys().filter(|id| {
        let started = starts.get(*id).unwrap_or(&no_starts);
        let last = started.last().copied().unwrap_or(0);
        (0..last).any(|retry| !started.contains(&retry))
    });
    let archived_unstarted = archived.iter().filter(|id| !runs.contains_key(*id) && !starts.contains_key(*id));
    ran_unstarted_attempts.count() + archived_unstarted.count()
}

/// How many times each task ID was finished, over the text of every worker ledger.
pub(super) fn count_runs(ledgers: &[String]) -> HashMap<String, usize> {
    let mut runs = HashMap::new();
    for line in ledgers.iter().flat_map(|text| text.lines()) {
        if let Some(LedgerLine::Ran(id)) = LedgerLine::parse(line) {
            *runs.entry(id.to_owned()).or_insert(0) += 1;
        }
    }
    runs
}

/// The last lines of a log file, for error messages.
pub(super) fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}
