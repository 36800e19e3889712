//! `asynq task archiveall` against the archive's limits: with a small configured limit, an
//! archive that would drop archived tasks is refused without `--force` (exit 4, nothing
//! written), and with it archives and reports what the trims dropped, by size and by age.
#![allow(clippy::disallowed_methods)] // a test reads the wall clock as it likes

mod common;

use asynq_client::{Client, Inspector, Task, TaskOptions, TaskSet, TaskState};
use asynq_core::SimulatedClock;
use asynq_redis::{RedisBroker, RedisConfig};
use asynq_tests::RedisServer;
use common::{asynq_at, block_on, broker};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Enqueues `n` pending tasks into `queue`.
fn enqueue(server: &RedisServer, queue: &str, n: usize) {
    block_on(async {
        let client = Client::new(broker(server).await);
        for i in 0..n {
            client.enqueue(&Task::new("t", format!("{i}")), TaskOptions::new().queue(queue)).await.expect("enqueue");
        }
    });
}

/// The pending and archived counts of `queue`.
fn counts(server: &RedisServer, queue: &str) -> (usize, usize) {
    block_on(async {
        let info = Inspector::new(broker(server).await).queue_info(queue).await.expect("queue info");
        (info.pending, info.archived)
    })
}

#[test]
fn an_archive_that_would_trim_is_refused_without_force_and_reported_with_it() {
    let server = RedisServer::start();
    enqueue(&server, "bulkq", 5);
    let small = ["--archive-max-size", "4"];
    let archiveall = ["task", "archiveall", "-q", "bulkq", "-s", "pending"];

    let refused = asynq_at(&server, &[&small[..], &archiveall[..]].concat());
    assert_eq!(refused.code, 4, "a refused archive is a failed precondition: {refused:#?}");
    for needle in
        ["would drop 2 archived tasks", "size limit of 4", "keeps the newest 3", "nothing was archived", "--force"]
    {
        assert!(refused.stderr.contains(needle), "{needle:?} in {}", refused.stderr);
    }
    assert_eq!(refused.stdout, "");
    assert_eq!(counts(&server, "bulkq"), (5, 0), "a refused archive writes nothing");

    let json = asynq_at(&server, &[&small[..], &archiveall[..], &["--force", "--json"]].concat()).ok().json();
    assert_eq!(
        json,
        serde_json::json!({
            "queue": "bulkq", "state": "pending", "action": "archived", "count": 5,
            "trimmed": 2, "trimmed_by_size": 2, "trimmed_by_age": 0,
            "archive_max_size": 4, "archive_max_age_secs": 90 * 86_400,
        })
    );
    assert_eq!(counts(&server, "bulkq"), (0, 3));

    // Room left: no --force needed, and the report says nothing was trimmed.
    enqueue(&server, "roomy", 2);
    asynq_at(&server, &["task", "archiveall", "-q", "roomy", "-s", "pending"]).ok().shows(&["2 tasks archived"]);
    enqueue(&server, "bulkq", 2);
    let forced = asynq_at(&server, &[&small[..], &archiveall[..], &["--force"]].concat()).ok();
    forced.shows(&[
        "2 tasks archived; the archive's limits dropped 2 archived tasks (2 over the size limit of 4, 0 past",
    ]);
    assert_eq!(counts(&server, "bulkq"), (0, 3));

    // One task archived says what its trim dropped too.
    block_on(async {
        let options = TaskOptions::new().queue("bulkq").task_id("one");
        Client::new(broker(&server).await).enqueue(&Task::new("t", "one"), options).await.expect("enqueue");
    });
    let one = asynq_at(&server, &[&small[..], &["task", "archive", "-q", "bulkq", "-i", "one"]].concat()).ok();
    one.shows(&["task archived; the archive's limits dropped 1 older archived task(s)"]);
    assert_eq!(counts(&server, "bulkq"), (0, 3));
}

#[test]
fn tasks_past_the_age_limit_are_counted_apart() {
    let server = RedisServer::start();
    // Two tasks archived two days ago, by a broker whose clock says so.
    block_on(async {
        let clock = SimulatedClock::new(SystemTime::now() - Duration::from_secs(2 * 86_400));
        let config = RedisConfig { clock: Arc::new(clock), ..RedisConfig::from_url(&server.url()).expect("url") };
        let past = RedisBroker::connect_with(config).await.expect("connect");
        let client = Client::new(past.clone());
        for i in 0..2 {
            client.enqueue(&Task::new("t", format!("{i}")), TaskOptions::new().queue("aged")).await.expect("enqueue");
        }
        let archived = Inspector::new(past).archive_all("aged", &TaskSet::State(TaskState::Pending)).await;
        assert_eq!(archived.expect("archive"), 2);
    });
    enqueue(&server, "aged", 1);
    let day = ["--archive-max-age", "24h", "task", "archiveall", "-q", "aged", "-s", "pending"];
    let refused = asynq_at(&server, &day);
    assert_eq!(refused.code, 4, "{refused:#?}");
    assert!(refused.stderr.contains("would drop 2 archived tasks: 0 over"), "{}", refused.stderr);
    assert!(refused.stderr.contains("2 past its age limit of 1 day"), "{}", refused.stderr);
    assert_eq!(counts(&server, "aged"), (1, 2));
    // Go's 90 days keep them: nothing to refuse.
    let json = asynq_at(&server, &["task", "archiveall", "-q", "aged", "-s", "pending", "--json"]).ok().json();
    assert_eq!((json["count"].as_u64(), json["trimmed"].as_u64()), (Some(1), Some(0)));
    assert_eq!(counts(&server, "aged"), (0, 3));
}

#[test]
fn limits_the_broker_would_refuse_are_usage_errors() {
    let server = RedisServer::start();
    enqueue(&server, "q", 1);
    for flags in [
        &["--archive-max-size", "1"][..],
        &["--archive-max-size", "0"][..],
        &["--archive-max-age", "0s"][..],
        &["--archive-max-age", "1.5s"][..],
        &["--archive-max-age", "soon"][..],
    ] {
        let run = asynq_at(&server, &[flags, &["task", "archiveall", "-q", "q", "-s", "pending", "--force"]].concat());
        assert_eq!(run.code, 2, "{flags:?}: {run:#?}");
        assert!(run.stderr.contains("archive"), "{flags:?}: {}", run.stderr);
    }
    assert_eq!(counts(&server, "q"), (1, 0), "nothing was archived");
}
