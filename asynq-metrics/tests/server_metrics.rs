//! The servers and their workers, as the servers record them in the broker, in the scrape of a
//! standalone exporter (what `asynq metrics` and `asynq web --metrics` serve): on a real Redis
//! from records written through the broker, and on the memory broker from a running server; none
//! while the broker cannot be read.
#![allow(clippy::disallowed_methods)] // a test reads the wall clock as it likes

mod support;

use asynq_client::{Client, Inspector, Task, TaskOptions};
use asynq_core::broker::ServerState;
use asynq_core::{Broker, ServerInfo, ServerStatus, WorkerInfo};
use asynq_memory::MemoryBroker;
use asynq_server::{Server, handler_fn};
use asynq_tests::{FlakyBroker, Harness, RedisServer, redis_broker, secs};
use prometheus_parse::Scrape;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::{Served, find, parse, value};

/// The heartbeat TTL the records get (Go's: twice the 5-second heartbeat).
const TTL: Duration = Duration::from_secs(10);

fn server(host: &str, pid: u32, status: ServerStatus, queues: &[&str]) -> ServerInfo {
    ServerInfo {
        host: host.into(),
        pid,
        server_id: format!("id-{host}-{pid}"),
        concurrency: 8,
        queues: queues.iter().map(|q| ((*q).to_owned(), 1)).collect::<BTreeMap<_, _>>(),
        strict_priority: false,
        status,
        started: UNIX_EPOCH + Duration::from_secs(1_795_000_000),
        active_workers: 0,
    }
}

fn worker(server: &ServerInfo, task_id: &str, queue: &str, task_type: &str) -> WorkerInfo {
    let now = SystemTime::now();
    WorkerInfo {
        host: server.host.clone(),
        pid: server.pid,
        server_id: server.server_id.clone(),
        task_id: task_id.into(),
        task_type: task_type.into(),
        task_payload: "{}".into(),
        queue: queue.into(),
        started: now,
        deadline: now + Duration::from_secs(1800),
    }
}

/// One scrape of the exporter `asynq metrics` serves over `broker`.
async fn scrape(broker: impl Broker) -> Scrape {
    let served = Served::start(asynq_metrics::queue_exporter(Inspector::new(broker))).await;
    let body = served.get("/metrics").await.body;
    served.stop().await;
    parse(&body)
}

fn labels<'a>(server: &'a ServerInfo, pid: &'a str) -> [(&'static str, &'a str); 3] {
    [("server_id", &server.server_id), ("host", &server.host), ("pid", pid)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standalone_exporter_exports_the_servers_recorded_in_redis() {
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(asynq_core::SystemClock)).await;
    let client = Client::new(broker.clone());
    for queue in ["default", "orphan"] {
        client.enqueue(&Task::new("email", ""), TaskOptions::new().queue(queue)).await.unwrap();
    }
    client.enqueue(&Task::new("digest", ""), TaskOptions::new().group("daily")).await.unwrap();

    // One active server running three tasks, one stopping server running none.
    let a = server("a", 1, ServerStatus::Active, &["critical", "default"]);
    let workers = [
        worker(&a, "t1", "default", "email"),
        worker(&a, "t2", "default", "email"),
        worker(&a, "t3", "critical", "sms"),
    ];
    broker.write_server_state(&a, &workers, TTL).await.unwrap();
    let b = server("b", 2, ServerStatus::Stopped, &["default", "low"]);
    broker.write_server_state(&b, &[], TTL).await.unwrap();

    let s = scrape(broker.clone()).await;
    assert_eq!(value(&s, "asynq_up", &[]), 1.0);
    let [id, host, pid] = labels(&a, "1");
    assert_eq!(value(&s, "asynq_server_info", &[id, host, pid, ("status", "active")]), 1.0);
    assert_eq!(value(&s, "asynq_server_concurrency", &labels(&a, "1")), 8.0);
    assert_eq!(value(&s, "asynq_server_active_workers", &labels(&a, "1")), 3.0);
    assert_eq!(value(&s, "asynq_server_start_time_seconds", &labels(&a, "1")), 1_795_000_000.0);
    let [id, host, pid] = labels(&b, "2");
    assert_eq!(value(&s, "asynq_server_info", &[id, host, pid, ("status", "stopped")]), 1.0);
    assert_eq!(value(&s, "asynq_server_active_workers", &labels(&b, "2")), 0.0);
    let info_series = s.samples.iter().filter(|x| x.metric == "asynq_server_info").count();
    assert_eq!(info_series, 2, "one series per live server");

    let running = |queue, task_type| find(&s, "asynq_active_workers", &[("queue", queue), ("task_type", task_type)]);
    assert_eq!((running("default", "email"), running("critical", "sms")), (Some(2.0), Some(1.0)));
    assert_eq!(s.samples.iter().filter(|x| x.metric == "asynq_active_workers").count(), 2);

    // The stopping server no longer takes tasks; a known queue nobody serves shows 0.
    let servers = |queue| value(&s, "asynq_queue_servers", &[("queue", queue)]);
    assert_eq!([servers("default"), servers("critical"), servers("low"), servers("orphan")], [1.0, 1.0, 0.0, 0.0]);
    let state = |queue, state| value(&s, "asynq_tasks_enqueued_total", &[("queue", queue), ("state", state)]);
    assert_eq!(state("orphan", "pending"), 1.0);
    assert_eq!(state("default", "aggregating"), 1.0, "the grouped task waits in its group");

    // A server that shut down cleared its records: its series go with them.
    broker.clear_server_state(&a).await.unwrap();
    let s = scrape(broker.clone()).await;
    assert_eq!(find(&s, "asynq_server_concurrency", &labels(&a, "1")), None);
    assert_eq!(s.samples.iter().filter(|x| x.metric == "asynq_active_workers").count(), 0);
    assert_eq!(value(&s, "asynq_queue_servers", &[("queue", "default")]), 0.0);
    assert_eq!(value(&s, "asynq_server_concurrency", &labels(&b, "2")), 8.0);

    // Two exporters of one Redis serve the same series, which `max by` counts once.
    let (first, second) = (scrape(broker.clone()).await, scrape(broker.clone()).await);
    let series = |s: &Scrape| {
        let mut lines: Vec<String> = s
            .samples
            .iter()
            .filter(|x| x.metric.starts_with("asynq_server") || x.metric == "asynq_queue_servers")
            .map(|x| format!("{} {:?} {:?}", x.metric, x.labels.iter().collect::<BTreeMap<_, _>>(), x.value))
            .collect();
        lines.sort();
        lines
    };
    assert_eq!(series(&first), series(&second));
}

/// The commands `redis` ran since its counters were reset that Redis flags as writes, and how
/// many times each ran; every command that ran, with its count.
fn commands_run(redis: &RedisServer) -> (Vec<String>, BTreeMap<String, u64>) {
    let stats = redis.info("commandstats").unwrap();
    let mut run = BTreeMap::new();
    let mut writes = Vec::new();
    for name in stats.keys().filter_map(|key| key.strip_prefix("cmdstat_")) {
        let name = name.replace('|', " ");
        let calls = redis.command_calls(&name.replace(' ', "|"));
        let info = redis.command(&["COMMAND", "INFO", name.split(' ').next().unwrap()]).unwrap();
        let flags = info.as_array().and_then(|i| i.first()).and_then(|c| c.as_array()).and_then(|c| c.get(2)).cloned();
        let flags: Vec<String> = flags
            .as_ref()
            .and_then(|f| f.as_array())
            .map(|f| f.iter().filter_map(|flag| flag.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        if flags.iter().any(|flag| flag == "write") {
            writes.push(name.clone());
        }
        run.insert(name, calls);
    }
    (writes, run)
}

/// How many changes Redis made to its data since its last save.
fn changes(redis: &RedisServer) -> u64 {
    redis.info("persistence").unwrap()["rdb_changes_since_last_save"].parse().unwrap()
}

/// A scrape only reads: no write command, no change to the data, even with an expired server
/// entry in `asynq:servers` (a server that died), which the next heartbeat prunes instead; the
/// servers are read in one pass, a record and a workers hash per live server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_writes_nothing_and_reads_each_server_once() {
    let redis = RedisServer::start();
    let broker = redis_broker(&redis.url(), Arc::new(asynq_core::SystemClock)).await;
    let client = Client::new(broker.clone());
    client.enqueue(&Task::new("email", ""), TaskOptions::new().queue("default")).await.unwrap();
    client.enqueue(&Task::new("digest", ""), TaskOptions::new().group("daily")).await.unwrap();
    let servers: Vec<ServerInfo> = (0..20).map(|n| server("h", n, ServerStatus::Active, &["default"])).collect();
    for (n, s) in servers.iter().enumerate() {
        let workers: Vec<WorkerInfo> =
            (0..n % 3).map(|w| worker(s, &format!("t{n}-{w}"), "default", "email")).collect();
        broker.write_server_state(s, &workers, TTL).await.unwrap();
    }
    let dead = "asynq:servers:{h:99:dead}";
    redis.command(&["ZADD", "asynq:servers", "1000", dead]).unwrap();
    redis.command(&["CONFIG", "RESETSTAT"]).unwrap();
    let before = changes(&redis);

    let s = scrape(broker.clone()).await;
    assert_eq!(s.samples.iter().filter(|x| x.metric == "asynq_server_info").count(), 20);
    assert_eq!(value(&s, "asynq_server_active_workers", &labels(&servers[2], "2")), 2.0);
    let (writes, run) = commands_run(&redis);
    assert_eq!(writes, Vec::<String>::new(), "a scrape ran write commands: {run:?}");
    assert_eq!(changes(&redis), before, "a scrape changed the data: {run:?}");
    assert_eq!(run.get("hvals"), Some(&20), "the workers of each live server read once, the dead one's not: {run:?}");
    assert!(run.get("get").is_some_and(|&n| n >= 20), "each live server's record read: {run:?}");
    assert!(redis.command(&["ZSCORE", "asynq:servers", dead]).unwrap().as_str().is_some(), "left for the heartbeat");

    // The next heartbeat prunes the dead server's entry.
    broker.write_server_state(&servers[0], &[], TTL).await.unwrap();
    assert_eq!(redis.command(&["ZSCORE", "asynq:servers", dead]).unwrap(), asynq_tests::RespValue::Nil);
}

#[tokio::test(start_paused = true)]
async fn a_running_server_shows_in_the_scrape_of_an_exporter_outside_it() {
    let h = Harness::new();
    let mut server = Server::new(h.broker.clone(), h.config("default", 3)).unwrap();
    let (release, released) = tokio::sync::watch::channel(false);
    server
        .start(handler_fn(move |_ctx, _task: Task| {
            let mut released = released.clone();
            async move {
                let _ = released.wait_for(|r| *r).await;
                Ok(())
            }
        }))
        .unwrap();
    h.client.enqueue(&Task::new("report", ""), TaskOptions::new()).await.unwrap();

    // Scraped in process: the exporter's encoding, without a socket for paused time to skip over.
    let exporter = asynq_metrics::queue_exporter(Inspector::new(h.broker.clone()));
    let give_up = tokio::time::Instant::now() + secs(60);
    let s = loop {
        let s = parse(&exporter.scrape().await.unwrap());
        if find(&s, "asynq_active_workers", &[("queue", "default"), ("task_type", "report")]) == Some(1.0) {
            break s;
        }
        assert!(tokio::time::Instant::now() < give_up, "the heartbeat never recorded the running task");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let info: Vec<_> = s.samples.iter().filter(|x| x.metric == "asynq_server_info").collect();
    assert_eq!(info.len(), 1, "{info:?}");
    assert_eq!(info[0].labels.get("status"), Some("active"));
    let pid = std::process::id().to_string();
    assert_eq!(info[0].labels.get("pid"), Some(pid.as_str()));
    assert_eq!(value(&s, "asynq_queue_servers", &[("queue", "default")]), 1.0);
    let id = info[0].labels.get("server_id").expect("a server ID").to_owned();
    let host = info[0].labels.get("host").expect("a host").to_owned();
    let per_server = [("server_id", id.as_str()), ("host", host.as_str()), ("pid", pid.as_str())];
    assert_eq!(value(&s, "asynq_server_concurrency", &per_server), 3.0);
    assert_eq!(value(&s, "asynq_server_active_workers", &per_server), 1.0);

    release.send(true).unwrap();
    server.shutdown().await;
    let s = parse(&exporter.scrape().await.unwrap());
    assert_eq!(s.samples.iter().filter(|x| x.metric == "asynq_server_info").count(), 0, "shut down");
    assert_eq!(value(&s, "asynq_queue_servers", &[("queue", "default")]), 0.0);
}

#[tokio::test]
async fn while_the_broker_is_unreadable_no_stale_server_series_are_served() {
    let broker = FlakyBroker::new(MemoryBroker::new());
    let a = server("a", 1, ServerStatus::Active, &["default"]);
    broker.write_server_state(&a, &[worker(&a, "t1", "default", "email")], TTL).await.unwrap();
    let exporter = asynq_metrics::queue_exporter(Inspector::new(broker.clone()));
    let s = parse(&exporter.scrape().await.unwrap());
    assert_eq!(value(&s, "asynq_server_active_workers", &labels(&a, "1")), 1.0);

    broker.go_down();
    let s = parse(&exporter.scrape().await.unwrap());
    assert_eq!(value(&s, "asynq_up", &[]), 0.0);
    let server_series: Vec<_> = s
        .samples
        .iter()
        .filter(|x| {
            x.metric.starts_with("asynq_server") || x.metric.ends_with("_workers") || x.metric.ends_with("_servers")
        })
        .collect();
    assert!(server_series.is_empty(), "stale: {server_series:?}");

    broker.come_back();
    let s = parse(&exporter.scrape().await.unwrap());
    assert_eq!(value(&s, "asynq_queue_servers", &[("queue", "default")]), 1.0);
}
