//! The read-only commands of `asynq` against a redis-server holding Go-written fixtures and
//! tasks our client enqueued: tables and `--json` output of `queue`, `task`, `group`, `server`,
//! `cron` and `stats`, and where connection settings come from.
#![allow(clippy::disallowed_methods)] // a test reads the wall clock as it likes

mod common;

use common::{asynq, asynq_at, seeded_server};
use serde_json::{Value, json};

#[test]
fn queues_are_listed_and_inspected() {
    let (server, _) = seeded_server();
    let ls = asynq_at(&server, &["queue", "ls"]).ok();
    assert_eq!(ls.stdout.lines().collect::<Vec<_>>(), ["critical", "interop", "interop-processed"]);
    let json = asynq_at(&server, &["queue", "ls", "--json"]).ok().json();
    assert_eq!(json, serde_json::json!([{"queue": "critical"}, {"queue": "interop"}, {"queue": "interop-processed"}]));

    let inspect = asynq_at(&server, &["queue", "inspect", "critical", "interop-processed"]).ok();
    inspect.shows(&["Queue Info", "Name:    critical", "Size:    4", "Paused:  false", "Name:    interop-processed"]);
    let counts = inspect.stdout.lines().skip_while(|l| !l.contains("aggregating")).nth(2).expect("counts row");
    let counts: Vec<&str> = counts.split_whitespace().collect();
    assert_eq!(
        counts,
        ["0", "3", "0", "1", "0", "0", "0", "0"],
        "active pending aggregating scheduled retry archived completed waiting"
    );

    let json = asynq_at(&server, &["queue", "inspect", "critical", "interop-processed", "--json"]).ok().json();
    assert_eq!(
        (json[0]["queue"].as_str(), json[0]["size"].as_u64(), json[0]["pending"].as_u64()),
        (Some("critical"), Some(4), Some(3))
    );
    let processed = &json[1];
    assert_eq!(processed["retry"], 1);
    assert_eq!(processed["archived"], 2);
    assert_eq!(processed["completed"], 1);
    assert_eq!((processed["processed_total"].as_u64(), processed["failed_total"].as_u64()), (Some(5), Some(3)));
    assert_eq!(processed["paused"], false);
    assert!(processed["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')), "{processed}");
}

#[test]
fn tasks_are_listed_per_state_and_inspected() {
    let (server, seeded) = seeded_server();
    let pending = asynq_at(&server, &["task", "ls", "-q", "critical", "-s", "pending"]).ok();
    pending.shows(&["ID", "Type", "Payload", &seeded.pending[0], &seeded.pending[1], r#"{"to":"a@example.com"}"#]);
    assert!(pending.line("bin-1").contains("hex:ff0001"), "{}", pending.stdout);
    let json = asynq_at(&server, &["task", "ls", "-q", "critical", "-s", "pending", "--json"]).ok().json();
    let tasks = json.as_array().expect("an array");
    assert_eq!(tasks.len(), 3);
    let binary = tasks.iter().find(|t| t["id"] == "bin-1").expect("bin-1");
    assert_eq!((binary["payload"].as_str(), binary["payload_encoding"].as_str()), (Some("/wAB"), Some("base64")));
    assert_eq!((tasks[0]["state"].as_str(), tasks[0]["timeout_seconds"].as_u64()), (Some("pending"), Some(1800)));

    // Pages count from 1, as in Go's tool.
    let page2 =
        asynq_at(&server, &["task", "ls", "-q", "critical", "-s", "pending", "--page", "2", "--size", "2", "--json"]);
    assert_eq!(page2.ok().json().as_array().map(Vec::len), Some(1));

    let scheduled = asynq_at(&server, &["task", "ls", "-q", "critical", "-s", "scheduled"]).ok();
    assert!(scheduled.line(&seeded.scheduled).contains("in "), "{}", scheduled.stdout);
    scheduled.shows(&["Process In", "report:build"]);

    let retry = asynq_at(&server, &["task", "ls", "-q", "interop-processed", "-s", "retry"]).ok();
    let row: Vec<&str> = retry.line("fail-retry").split_whitespace().collect();
    assert!(row.contains(&"boom") && row.ends_with(&["1", "3"]), "{row:?}");
    let archived = asynq_at(&server, &["task", "ls", "-q", "interop-processed", "-s", "archived"]).ok();
    archived.shows(&["fail-archive", "fail-skipretry", "no retry: skip retry for the task", "2026-11-22T03:24:59Z"]);
    let completed =
        asynq_at(&server, &["task", "ls", "-q", "interop-processed", "-s", "completed", "--json"]).ok().json();
    assert_eq!(completed[0]["id"], "ok-retained");
    assert_eq!(completed[0]["retention_seconds"], 3600);
    assert_eq!(completed[0]["completed_at"], "2026-11-22T03:24:59Z");

    let grouped = asynq_at(&server, &["task", "ls", "-q", "interop", "-s", "aggregating", "-g", "g1"]).ok();
    grouped.shows(&["6677ab5c-2c3e-4128-aa83-5bd227cae320", "interop:group", "g1"]);
    let no_group = asynq_at(&server, &["task", "ls", "-q", "interop", "-s", "aggregating"]);
    assert_eq!(no_group.code, 2, "{no_group:#?}");
    assert!(no_group.stderr.contains("--group is required"), "{}", no_group.stderr);
    let empty = asynq_at(&server, &["task", "ls", "-q", "critical", "-s", "active"]).ok();
    empty.shows(&[r#"No active tasks in "critical" queue"#]);

    let inspect = asynq_at(&server, &["task", "inspect", "-q", "interop", "-i", "fixed-id"]).ok();
    inspect.shows(&["Task Info", "interop:taskid", r#"{"k":"taskid"}"#, "0/25", "30m0s"]);
    assert!(inspect.line("State").contains("pending"), "{}", inspect.stdout);
    let json = asynq_at(&server, &["task", "inspect", "-q", "interop", "-i", "fixed-id", "--json"]).ok().json();
    assert_eq!(json["type"], "interop:taskid");
    assert_eq!(json["payload"], r#"{"k":"taskid"}"#);
    assert_eq!(json["payload_encoding"], "utf-8");
    assert_eq!(json["max_retry"], 25);
    assert_eq!(json["state"], "pending");
}

#[test]
fn groups_servers_and_cron_entries_are_listed() {
    let (server, _) = seeded_server();
    let groups = asynq_at(&server, &["group", "ls", "-q", "interop"]).ok();
    assert_eq!(groups.line("g1").split_whitespace().collect::<Vec<_>>(), ["g1", "1"]);
    let json = asynq_at(&server, &["group", "ls", "-q", "interop", "--json"]).ok().json();
    assert_eq!(json, serde_json::json!([{"group": "g1", "size": 1}]));
    asynq_at(&server, &["group", "ls", "-q", "critical"]).ok().shows(&[r#"No groups found for queue "critical""#]);

    let servers = asynq_at(&server, &["server", "ls"]).ok();
    let row = servers.line("worker-1");
    for cell in ["4242", "active", "1/10", "critical:6, default:3"] {
        assert!(row.contains(cell), "{cell:?} missing in {row:?}");
    }
    let json = asynq_at(&server, &["server", "ls", "--json"]).ok().json();
    assert_eq!(json[0]["id"], "srv-1");
    assert_eq!(json[0]["queues"]["critical"], 6);
    assert_eq!(json[0]["workers"][0]["task_id"], "running-1");

    let cron = asynq_at(&server, &["cron", "ls"]).ok();
    let row = cron.line("entry-1");
    for cell in ["@every 30s", "report:daily", "daily", r#"Queue("critical")"#, "2026-11-22T03:24:56Z"] {
        assert!(row.contains(cell), "{cell:?} missing in {row:?}");
    }
    let json = asynq_at(&server, &["cron", "ls", "--json"]).ok().json();
    assert_eq!((json[0]["id"].as_str(), json[0]["type"].as_str()), (Some("entry-1"), Some("report:daily")));
    assert_eq!(json[0]["prev"], "2026-11-22T03:24:56Z");

    let history = asynq_at(&server, &["cron", "history", "entry-1"]).ok();
    history.shows(&["Entry: entry-1", "cron-task-1"]);
    let newest_first = history.stdout.find("cron-task-2") < history.stdout.find("cron-task-1");
    assert!(newest_first, "{}", history.stdout);
    let json = asynq_at(&server, &["cron", "history", "entry-1", "--size", "1", "--page", "2", "--json"]).ok().json();
    assert_eq!(
        json[0]["events"],
        serde_json::json!([{"task_id": "cron-task-1", "enqueued_at": "2026-11-22T03:24:26Z"}])
    );
}

#[test]
fn stats_and_history_sum_the_queues() {
    let (server, _) = seeded_server();
    let stats = asynq_at(&server, &["stats"]).ok();
    stats.shows(&["Task Count by State", "Task Count by Queue", "Daily Stats", "Redis Info", "interop-processed"]);
    let json = asynq_at(&server, &["stats", "--json"]).ok().json();
    assert_eq!(json["aggregate"]["pending"], 7, "3 in critical, 4 in interop: {json}");
    assert_eq!(json["aggregate"]["archived"], 2);
    assert_eq!(json["queues"].as_array().map(Vec::len), Some(3));
    assert_eq!(json["backend"]["kind"], "redis");
    assert!(json["backend"]["fields"]["redis_version"].is_string(), "{json}");
    assert_eq!(json["backend"]["eviction_risks"], serde_json::json!([]), "noeviction keeps every task");
    assert!(!stats.stdout.contains("WARNING"), "{}", stats.stdout);

    let history = asynq_at(&server, &["queue", "history", "interop-processed", "-x", "3"]).ok();
    history.shows(&["Queue: interop-processed", "date (UTC)", "error rate"]);
    let json =
        asynq_at(&server, &["queue", "history", "interop-processed", "critical", "--days", "2", "--json"]).ok().json();
    let days: &Vec<Value> = json.as_array().expect("an array");
    assert_eq!(days.len(), 4);
    assert!(days.iter().all(|d| d["date"].as_str().is_some_and(|s| s.len() == 10)), "{json}");
}

#[test]
fn stats_warn_when_redis_may_evict_tasks() {
    let (server, _) = seeded_server();
    server.command(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]).unwrap();
    let stats = asynq_at(&server, &["stats"]).ok();
    let first = stats.stdout.lines().next().unwrap_or_default();
    assert!(first.starts_with("WARNING: Redis evicts keys when it is full"), "{}", stats.stdout);
    assert!(first.contains("maxmemory-policy allkeys-lru") && first.contains("set maxmemory-policy noeviction"));
    stats.shows(&["Task Count by State", "Redis Info"]);

    let json = asynq_at(&server, &["stats", "--json"]).ok().json();
    let risks = json["backend"]["eviction_risks"].as_array().expect("an array");
    assert_eq!(risks.len(), 1, "{json}");
    assert_eq!(risks[0]["policy"], "allkeys-lru");
    assert_eq!(risks[0]["warning"].as_str(), first.strip_prefix("WARNING: "));
}

#[test]
fn settings_come_from_flags_env_and_the_config_file() {
    let (server, _) = seeded_server();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("asynq.yaml");
    std::fs::write(&config, format!("uri: {}\ndb: 0\n", server.addr())).unwrap();
    let config = config.to_str().unwrap();
    asynq(&["--config", config, "queue", "ls"]).ok().shows(&["interop-processed"]);
    // A flag wins over the file.
    let flag = asynq(&["--config", config, "-u", "127.0.0.1:1", "queue", "ls"]);
    assert_eq!(flag.code, 5, "{flag:#?}");
    // A full URL works too.
    asynq(&["-u", &server.url(), "queue", "ls"]).ok().shows(&["critical"]);

    std::fs::write(dir.path().join("bad.yaml"), "url: x\n").unwrap();
    let bad = asynq(&["--config", dir.path().join("bad.yaml").to_str().unwrap(), "queue", "ls"]);
    assert_eq!(bad.code, 2, "{bad:#?}");
    assert!(bad.stderr.contains("unknown field `url`"), "{}", bad.stderr);
}

#[test]
fn a_namespace_shows_its_own_queues_only() {
    let (server, _) = seeded_server();
    common::block_on(async {
        let url = format!("{}?namespace=billing", server.url());
        let billing = asynq_redis::RedisBroker::connect(&url).await.expect("the test Redis accepts connections");
        let client = asynq_client::Client::new(billing);
        let task = asynq_client::Task::new("invoice:send", "42");
        client.enqueue(&task, asynq_client::TaskOptions::new().queue("invoices")).await.expect("enqueued");
    });

    let ls = asynq_at(&server, &["--namespace", "billing", "queue", "ls"]).ok();
    assert_eq!(ls.stdout.lines().collect::<Vec<_>>(), ["invoices"]);
    let uri = format!("redis://{}/0?namespace=billing", server.addr());
    let ls = asynq(&["-u", &uri, "queue", "ls"]).ok();
    assert_eq!(ls.stdout.lines().collect::<Vec<_>>(), ["invoices"]);
    let default = asynq_at(&server, &["queue", "ls"]).ok();
    assert!(!default.stdout.contains("invoices"), "{}", default.stdout);

    asynq_at(&server, &["--namespace", "billing", "stats"]).ok().shows(&["Namespace: billing"]);
    assert!(!asynq_at(&server, &["stats"]).ok().stdout.contains("Namespace:"), "Go's layout prints as Go's CLI does");
    let json = asynq_at(&server, &["--namespace", "billing", "stats", "--json"]).ok().json();
    assert_eq!(json["backend"]["namespace"], "billing");

    let bad = asynq_at(&server, &["--namespace", "a:b", "queue", "ls"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("invalid namespace"), "{}", bad.stderr);
}

#[test]
fn slots_of_shared_limits_are_listed_with_their_holders() {
    use asynq_core::broker::ConcurrencySlots;
    use asynq_core::slots::SharedLimit;
    let (server, _) = seeded_server();
    common::block_on(async {
        let broker = common::broker(&server).await;
        let limit = SharedLimit::new("type:video:encode", 2).unwrap();
        let now = std::time::SystemTime::now();
        let holder = asynq_core::TaskId::new("t-1").unwrap();
        assert!(broker.take_slot(&limit, &holder, now, now + std::time::Duration::from_secs(60)).await.unwrap());
    });
    asynq_at(&server, &["slots", "type:video:encode"]).ok().shows(&["type:video:encode", "t-1"]);
    let json = asynq_at(&server, &["slots", "type:video:encode", "tenant:7", "--json"]).ok().json();
    assert_eq!(json.as_array().map(Vec::len), Some(1), "{json}");
    assert_eq!((json[0]["key"].as_str(), json[0]["task_id"].as_str()), (Some("type:video:encode"), Some("t-1")));
    asynq_at(&server, &["slots", "tenant:7"]).ok().shows(&["No slots held"]);
}

#[test]
fn a_queue_event_log_is_turned_on_printed_followed_and_dropped() {
    use asynq_core::broker::Enqueue;
    use std::io::BufRead;
    let (server, _) = seeded_server();
    asynq_at(&server, &["events", "-q", "critical"]).ok().shows(&["No events"]);
    asynq_at(&server, &["events", "enable", "-q", "critical", "--cap", "500"]).ok().shows(&["about 500 events"]);
    asynq_at(&server, &["events", "ls"]).ok().shows(&["critical", "500"]);

    let mut follower = std::process::Command::new(env!("CARGO_BIN_EXE_asynq"))
        .args(["-u", &server.addr(), "events", "-q", "critical", "--follow", "--from", "oldest", "--json"])
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the asynq binary runs");
    let stdout = follower.stdout.take().expect("piped stdout");
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    common::block_on(async {
        let broker = common::broker(&server).await;
        for (id, type_name) in [("ev-1", "email:send"), ("ev-2", "report:build")] {
            let task = asynq_core::Task::new(type_name, "{}");
            let options = asynq_core::TaskOptions::new().queue("critical").task_id(id);
            let request = asynq_core::resolve_enqueue(&task, &options, std::time::SystemTime::now(), || unreachable!())
                .expect("a valid request");
            broker.enqueue(request).await.expect("enqueued");
        }
    });
    let followed: Vec<Value> = (0..2)
        .map(|_| {
            let line = received.recv_timeout(std::time::Duration::from_secs(30)).expect("a followed event");
            serde_json::from_str(&line).expect("one JSON object per line")
        })
        .collect();
    let _ = follower.kill();
    let _ = follower.wait();
    let seen: Vec<(&str, &str, &str)> = followed
        .iter()
        .map(|e| (e["kind"].as_str().unwrap(), e["task_id"].as_str().unwrap(), e["task_type"].as_str().unwrap()))
        .collect();
    assert_eq!(seen, [("enqueued", "ev-1", "email:send"), ("enqueued", "ev-2", "report:build")]);

    let printed = asynq_at(&server, &["events", "-q", "critical"]).ok();
    printed.shows(&["enqueued", "ev-1", "email:send", "ev-2"]);
    let first = followed[0]["id"].as_str().unwrap();
    let after = asynq_at(&server, &["events", "-q", "critical", "--from", first, "--json"]).ok().json();
    assert_eq!(after.as_array().map(Vec::len), Some(1), "{after}");
    assert_eq!(after[0]["task_id"], "ev-2");

    let zero = asynq_at(&server, &["events", "enable", "-q", "critical", "--cap", "0"]);
    assert_eq!(zero.code, 2, "{}", zero.stderr);
    assert!(zero.stderr.contains("event cap"), "{}", zero.stderr);
    let bad = asynq_at(&server, &["events", "-q", "critical", "--from", "yesterday"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);

    asynq_at(&server, &["events", "disable", "-q", "critical"]).ok();
    asynq_at(&server, &["events", "ls"]).ok().shows(&["No queue keeps an event log"]);
    asynq_at(&server, &["events", "-q", "critical"]).ok().shows(&["No events"]);
}

#[test]
fn workflows_are_listed_and_inspected() {
    use asynq_client::{FlowProducer, Task, TaskOptions};
    use asynq_core::workflow::Flow;
    let server = asynq_tests::RedisServer::start();
    let step = |id: &str| Flow::task(Task::new("step", id.to_owned()), TaskOptions::new().queue("flows").task_id(id));
    let stored = common::block_on(async {
        let broker = common::broker(&server).await;
        FlowProducer::new(broker).enqueue(&step("first").then(step("second"))).await.expect("stored")
    });
    let id = stored.id.to_string();
    asynq_at(&server, &["workflow", "ls"]).ok().shows(&["ID", "Created", "Tasks", &id]);
    let listed = asynq_at(&server, &["workflow", "ls", "--json"]).ok().json();
    assert_eq!((listed[0]["id"].as_str(), listed[0]["tasks"].as_u64()), (Some(id.as_str()), Some(2)));

    let inspect = asynq_at(&server, &["workflow", "inspect", &id]).ok();
    inspect.shows(&[&format!("Workflow {id}: running (2 tasks)"), "Parents", "first", "second"]);
    assert!(inspect.line("first").contains("pending"), "{}", inspect.stdout);
    let second = inspect.line("second");
    assert!(
        second.contains("waiting") && second.split_whitespace().any(|w| w == "1"),
        "second waits for #1, first: {}",
        inspect.stdout
    );
    let json = asynq_at(&server, &["workflow", "inspect", &id, "--json"]).ok().json();
    assert_eq!(json["state"], "running");
    assert_eq!(json["tasks"][1]["task"]["state"], "waiting");
    assert_eq!((&json["tasks"][0]["parents"], &json["tasks"][1]["parents"]), (&json!([]), &json!(["first"])));
    asynq_at(&server, &["task", "ls", "-q", "flows", "-s", "waiting"]).ok().shows(&["second", "Workflow", &id]);

    asynq_at(&server, &["workflow", "cancel", &id]).ok().shows(&["2 tasks archived, 0 running tasks asked to stop"]);
    asynq_at(&server, &["workflow", "cancel", &id]).ok().shows(&["2 tasks archived, 0 running tasks asked to stop"]);
    let json = asynq_at(&server, &["workflow", "inspect", &id, "--json"]).ok().json();
    assert_eq!(json["state"], "cancelled");
    let listed = asynq_at(&server, &["workflow", "ls", "--json"]).ok().json();
    assert_eq!(listed[0]["cancelled"], json!(true));
    assert_eq!(json["tasks"][1]["task"]["last_error"], asynq_core::workflow::WORKFLOW_CANCELLED_ERROR);

    let missing = asynq_at(&server, &["workflow", "inspect", "no-such-workflow"]);
    assert_eq!(missing.code, 3, "{missing:#?}");
    assert!(missing.stderr.contains("asynq workflow ls"), "{missing:#?}");

    // A task that succeeded without retention keeps its type and its success; one deleted is gone.
    let other =
        |id: &str| Flow::task(Task::new("fetch", id.to_owned()), TaskOptions::new().queue("flows2").task_id(id));
    let done = common::block_on(async {
        use asynq_core::broker::{Dequeue, Manage, Outcome};
        let broker = common::broker(&server).await;
        let stored = FlowProducer::new(broker.clone()).enqueue(&other("fetched").then(other("dropped"))).await.unwrap();
        let queue = asynq_core::QueueName::from_static("flows2");
        let taken = broker.dequeue(std::slice::from_ref(&queue), 1).await.unwrap();
        broker.finish(&taken[0].message, Outcome::Done).await.unwrap();
        // Released in the step its parent succeeded in (one queue), then deleted.
        broker.delete_task(&queue, &asynq_core::TaskId::from_static("dropped")).await.unwrap();
        stored.id.to_string()
    });
    let inspect = asynq_at(&server, &["workflow", "inspect", &done]).ok();
    let fetched = inspect.line("fetched");
    assert!(fetched.contains("succeeded (not kept)") && fetched.contains("fetch"), "{}", inspect.stdout);
    let dropped = inspect.line("dropped");
    assert!(dropped.contains("outcome not recorded") && dropped.contains("fetch"), "{}", inspect.stdout);
}

#[test]
fn waiting_workflow_tasks_are_counted_in_stats_and_queue_views() {
    use asynq_client::{FlowProducer, Task, TaskOptions};
    use asynq_core::workflow::Flow;
    let server = asynq_tests::RedisServer::start();
    // The first task pends in `flows`, the second waits for it in `flows-next`, alone there.
    let step = |id: &str, queue: &str| {
        Flow::task(Task::new("step", id.to_owned()), TaskOptions::new().queue(queue).task_id(id))
    };
    common::block_on(async {
        let broker = common::broker(&server).await;
        FlowProducer::new(broker)
            .enqueue(&step("first", "flows").then(step("second", "flows-next")))
            .await
            .expect("stored")
    });

    let ls = asynq_at(&server, &["queue", "ls"]).ok();
    assert_eq!(ls.stdout.lines().collect::<Vec<_>>(), ["flows", "flows-next"], "a queue of waiting tasks is listed");
    let json = asynq_at(&server, &["queue", "ls", "--json"]).ok().json();
    assert_eq!(json, json!([{"queue": "flows"}, {"queue": "flows-next"}]));

    let inspect = asynq_at(&server, &["queue", "inspect", "flows-next"]).ok();
    inspect.shows(&["Size:    0", "waiting"]);
    let header: Vec<&str> = inspect.line("aggregating").split_whitespace().collect();
    assert_eq!(header.last(), Some(&"waiting"), "{}", inspect.stdout);
    let counts = inspect.stdout.lines().skip_while(|l| !l.contains("aggregating")).nth(2).expect("counts row");
    assert_eq!(counts.split_whitespace().collect::<Vec<_>>(), ["0", "0", "0", "0", "0", "0", "0", "1"]);
    let json = asynq_at(&server, &["queue", "inspect", "flows", "flows-next", "--json"]).ok().json();
    assert_eq!((&json[0]["waiting"], &json[0]["pending"]), (&json!(0), &json!(1)));
    assert_eq!((&json[1]["waiting"], &json[1]["size"]), (&json!(1), &json!(0)), "waiting is apart from size");

    let stats = asynq_at(&server, &["stats"]).ok();
    assert!(stats.stdout.lines().all(|l| l.len() <= 100), "{}", stats.stdout);
    let counts = stats.stdout.lines().skip_while(|l| !l.contains("aggregating")).nth(2).expect("counts row");
    assert_eq!(counts.split_whitespace().collect::<Vec<_>>(), ["0", "1", "0", "0", "0", "0", "0", "1"]);
    let per_queue: Vec<&str> = stats.line("flows-next").split_whitespace().collect();
    assert_eq!(per_queue, ["flows-next", "0", "1", "running"], "queue size waiting state: {}", stats.stdout);
    let json = asynq_at(&server, &["stats", "--json"]).ok().json();
    assert_eq!((&json["aggregate"]["waiting"], &json["aggregate"]["pending"]), (&json!(1), &json!(1)));
    assert_eq!(json["queues"][1]["waiting"], 1, "{json}");
}
