//! The commands of `asynq` that change things, against a redis-server holding Go-written
//! fixtures and tasks our client enqueued: task actions one by one and in bulk, enqueueing,
//! pausing and removing queues, and the exit codes of refusals.

mod common;

use common::{asynq_at, seeded_server};

#[test]
fn tasks_are_run_archived_and_deleted_one_by_one() {
    let (server, seeded) = seeded_server();
    asynq_at(&server, &["task", "run", "-q", "critical", "-i", &seeded.scheduled]).ok().shows(&["task is now pending"]);
    let json = asynq_at(&server, &["task", "inspect", "-q", "critical", "-i", &seeded.scheduled, "--json"]).ok().json();
    assert_eq!(json["state"], "pending");
    let again = asynq_at(&server, &["task", "run", "-q", "critical", "-i", &seeded.scheduled]);
    assert_eq!(again.code, 4, "running a pending task is a failed precondition: {again:#?}");

    let archived = asynq_at(&server, &["task", "archive", "-q", "critical", "-i", "bin-1", "--json"]).ok().json();
    assert_eq!(archived, serde_json::json!({"queue": "critical", "id": "bin-1", "action": "archived"}));
    let again = asynq_at(&server, &["task", "archive", "-q", "critical", "-i", "bin-1"]);
    assert_eq!(again.code, 4, "{again:#?}");

    asynq_at(&server, &["task", "rm", "-q", "critical", "-i", "bin-1"]).ok().shows(&["task deleted"]);
    let gone = asynq_at(&server, &["task", "inspect", "-q", "critical", "-i", "bin-1"]);
    assert_eq!(gone.code, 3, "{gone:#?}");
    assert!(
        gone.stderr.contains("task not found") && gone.stderr.contains("asynq task ls -q critical"),
        "{}",
        gone.stderr
    );
    let cancel = asynq_at(&server, &["task", "cancel", &seeded.pending[0]]).ok();
    cancel.shows(&[&format!("Sent cancelation signal for task {}: not running (pending in queue ", seeded.pending[0])]);
    let unknown = asynq_at(&server, &["task", "cancel", "no-such-task", "--json"]).ok();
    unknown.shows(&[r#""outcome": "unknown_task""#]);
}

#[test]
fn every_task_of_a_state_or_group_is_acted_on_at_once() {
    let (server, _) = seeded_server();
    asynq_at(&server, &["task", "runall", "-q", "interop-processed", "-s", "archived"])
        .ok()
        .shows(&["2 tasks are now pending"]);
    let json =
        asynq_at(&server, &["task", "archiveall", "-q", "interop-processed", "-s", "pending", "--json"]).ok().json();
    assert_eq!(
        json,
        serde_json::json!({
            "queue": "interop-processed", "state": "pending", "action": "archived", "count": 2,
            "trimmed": 0, "trimmed_by_size": 0, "trimmed_by_age": 0,
            "archive_max_size": 10_000, "archive_max_age_secs": 90 * 86_400,
        })
    );
    let json = asynq_at(&server, &["task", "deleteall", "-q", "interop", "-s", "aggregating", "-g", "g1", "--json"])
        .ok()
        .json();
    assert_eq!((json["group"].as_str(), json["count"].as_u64()), (Some("g1"), Some(1)));
    asynq_at(&server, &["task", "deleteall", "-q", "interop-processed", "-s", "completed"])
        .ok()
        .shows(&["1 tasks deleted"]);

    let refused = asynq_at(&server, &["task", "archiveall", "-q", "interop-processed", "-s", "completed"]);
    assert_eq!(refused.code, 2, "archiving completed tasks is not an action Go offers: {refused:#?}");
    let unknown = asynq_at(&server, &["task", "runall", "-q", "interop", "-s", "sleeping"]);
    assert_eq!(unknown.code, 2, "{unknown:#?}");
    assert!(unknown.stderr.contains("unknown task state"), "{}", unknown.stderr);
}

#[test]
fn tasks_are_enqueued_with_go_style_options() {
    let (server, _) = seeded_server();
    let args = ["task", "enqueue", "-t", "greet", "-l", "hello", "--queue", "critical", "--retry", "3"];
    let json =
        asynq_at(&server, &[&args[..], &["--process_in", "1m30s", "--retention", "1h", "--json"]].concat()).ok().json();
    assert_eq!((json["type"].as_str(), json["payload"].as_str()), (Some("greet"), Some("hello")));
    assert_eq!((json["state"].as_str(), json["max_retry"].as_u64()), (Some("scheduled"), Some(3)));
    assert_eq!(json["retention_seconds"], 3600);
    let id = json["id"].as_str().expect("an id").to_owned();
    let info = asynq_at(&server, &["task", "inspect", "-q", "critical", "-i", &id, "--json"]).ok().json();
    assert_eq!(info["state"], "scheduled");

    let at = asynq_at(
        &server,
        &["task", "enqueue", "-t", "t", "-l", "p", "--deadline", "2099-01-01T00:00:00Z", "--id", "d-1"],
    );
    at.ok().shows(&["Enqueued task d-1 in queue \"default\" (pending)"]);
    let conflict =
        asynq_at(&server, &["task", "enqueue", "-t", "t", "-l", "p", "--queue", "interop", "--id", "fixed-id"]);
    assert_eq!(conflict.code, 4, "{conflict:#?}");
    assert!(conflict.stderr.contains("conflicts"), "{}", conflict.stderr);
    let bad = asynq_at(&server, &["task", "enqueue", "-t", "t", "-l", "p", "--timeout", "10 minutes"]);
    assert_eq!(bad.code, 2, "{bad:#?}");
    assert!(bad.stderr.contains("Go duration"), "{}", bad.stderr);
}

#[test]
fn tasks_are_debounced_and_replaced() {
    let (server, _) = seeded_server();
    let debounced = |payload: &str| {
        let args = ["task", "enqueue", "-t", "sync", "-l", payload, "--queue", "docs", "--debounce", "doc:42"];
        asynq_at(&server, &[&args[..], &["--debounce-window", "1m", "--json"]].concat()).ok().json()
    };
    let first = debounced("edit 1");
    let last = debounced("edit 2");
    assert_eq!(last["state"], "scheduled");
    let scheduled = asynq_at(&server, &["task", "ls", "-q", "docs", "-s", "scheduled", "--json"]).ok().json();
    let ids: Vec<&str> = scheduled.as_array().unwrap().iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, [last["id"].as_str().unwrap()], "the second took the place of the first ({first})");

    let id = last["id"].as_str().unwrap();
    assert_eq!(last["debounce_key"], "doc:42");
    asynq_at(&server, &["task", "inspect", "-q", "docs", "-i", id]).ok().shows(&["Debounce key", "doc:42"]);
    let replace = ["task", "enqueue", "-t", "sync", "-l", "now", "--queue", "docs", "--replace", id];
    asynq_at(&server, &replace).ok().shows(&[&format!("Replaced task {id} in queue \"docs\" (pending)")]);
    let gone = asynq_at(&server, &["task", "enqueue", "-t", "sync", "-l", "x", "--queue", "docs", "--replace", "nope"]);
    assert_eq!(gone.code, 3, "{gone:#?}");
    let alone = asynq_at(&server, &["task", "enqueue", "-t", "sync", "-l", "x", "--debounce", "k"]);
    assert_eq!(alone.code, 2, "--debounce needs --debounce-window: {alone:#?}");
}

#[test]
fn tasks_take_a_priority() {
    let (server, _) = seeded_server();
    let enqueue = |id: &str, priority: &str| {
        let args = ["task", "enqueue", "-t", "report", "-l", id, "--queue", "reports", "--id", id];
        asynq_at(&server, &[&args[..], &["--priority", priority, "--json"]].concat()).ok().json()
    };
    assert_eq!(enqueue("backfill", "-5")["priority"], -5);
    assert_eq!(enqueue("user-42", "0")["priority"], 0);
    assert_eq!(enqueue("user-7", "8")["priority"], 8);
    let listed = asynq_at(&server, &["task", "ls", "-q", "reports", "-s", "pending", "--json"]).ok().json();
    let order: Vec<&str> = listed.as_array().unwrap().iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(order, ["user-7", "user-42", "backfill"], "the order a server takes them in");
    let table = asynq_at(&server, &["task", "ls", "-q", "reports", "-s", "pending"]).ok();
    table.shows(&["Priority"]);
    let cell = |id: &str, value: &str| table.line(id).split_whitespace().any(|word| word == value);
    assert!(cell("user-7", "8") && cell("backfill", "-5") && cell("user-42", "0"), "{}", table.stdout);
    asynq_at(&server, &["task", "inspect", "-q", "reports", "-i", "user-7"]).ok().shows(&["Priority", "8"]);
    let out_of_range = asynq_at(&server, &["task", "enqueue", "-t", "report", "-l", "x", "--priority", "11"]);
    assert_eq!(out_of_range.code, 2, "{out_of_range:#?}");
    assert!(out_of_range.stderr.contains("priority"), "{}", out_of_range.stderr);
}

#[test]
fn queues_are_paused_resumed_and_removed() {
    let (server, _) = seeded_server();
    asynq_at(&server, &["queue", "pause", "critical"]).ok().shows(&[r#"Successfully paused queue "critical""#]);
    let json = asynq_at(&server, &["queue", "inspect", "critical", "--json"]).ok().json();
    assert_eq!(json[0]["paused"], true);
    let json = asynq_at(&server, &["queue", "resume", "critical", "--json"]).ok().json();
    assert_eq!(json, serde_json::json!([{"queue": "critical", "action": "unpaused"}]));

    let refused = asynq_at(&server, &["queue", "rm", "interop"]);
    assert_eq!(refused.code, 4, "{refused:#?}");
    assert!(refused.stderr.contains("asynq queue rm --force interop"), "{}", refused.stderr);
    asynq_at(&server, &["queue", "rm", "--force", "interop"]).ok().shows(&[r#"Successfully removed queue "interop""#]);
    let ls = asynq_at(&server, &["queue", "ls"]).ok();
    assert!(!ls.stdout.lines().any(|l| l == "interop"), "{}", ls.stdout);
}

#[test]
fn queue_ls_lists_the_queues_a_pattern_matches() {
    let (server, _) = seeded_server();
    let all = asynq_at(&server, &["queue", "ls", "--json"]).ok().json();
    let matched = asynq_at(&server, &["queue", "ls", "--match", "crit*", "--json"]).ok().json();
    assert!(all.as_array().unwrap().len() > 1, "{all}");
    assert_eq!(matched, serde_json::json!([{"queue": "critical"}]));
    let everything = asynq_at(&server, &["queue", "ls", "--match", "*"]);
    assert_eq!(everything.code, 2, "{everything:#?}");
    assert!(everything.stderr.contains("matches every queue"), "{}", everything.stderr);
}
