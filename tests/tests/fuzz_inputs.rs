//! The fuzz targets of `fuzz/` as proptests that run on stable in CI: random and adversarial
//! input for the stored task message decoder, the cron spec front end (`Scheduler::register`),
//! Go duration parsing, the client's option resolution, and the dashboard's HTTP requests. None
//! may panic; what decodes or parses must round-trip; no request gets a 5xx.

use asynq_client::{Client, Inspector};
use asynq_core::time::{from_unix_secs, parse_go_duration};
use asynq_core::{Task, TaskOptions, TaskState, resolve_enqueue};
use asynq_memory::MemoryBroker;
use asynq_redis::proto;
use asynq_scheduler::{Scheduler, SchedulerConfig};
use proptest::prelude::*;
use prost::Message;
use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tower::ServiceExt;

/// A valid encoded message with every field set, for mutation.
fn full_message() -> Vec<u8> {
    proto::TaskMessage {
        r#type: "email:welcome".into(),
        payload: vec![1, 2, 3].into(),
        headers: [("trace".to_owned(), "abc".to_owned())].into(),
        id: "2f1c9b0e-1111-4222-8333-444455556666".into(),
        queue: "critical".into(),
        retry: 25,
        retried: 3,
        error_msg: "boom".into(),
        last_failed_at: 1_795_317_896,
        timeout: 1800,
        deadline: 1_795_317_999,
        unique_key: "asynq:{critical}:unique:x".into(),
        group_key: "g".into(),
        retention: 3600,
        completed_at: 1_795_317_900,
    }
    .encode_to_vec()
}

/// The task-message property: decoding never panics, and the task a message is read as (its
/// corrupt numbers read into range) is written back as a message that reads as the same task.
fn check_task_message(data: &[u8]) {
    let Ok(decoded) = proto::TaskMessage::decode(data) else { return };
    let Ok(core) = asynq_core::StoredTask::try_from(decoded) else { return };
    let again = proto::TaskMessage::from(&core).encode_to_vec();
    assert_eq!(asynq_core::StoredTask::try_from(proto::TaskMessage::decode(again.as_slice()).unwrap()).unwrap(), core);
    let _ = asynq_core::TaskInfo::new(&core, TaskState::Archived, None, None);
}

static SCHEDULER: LazyLock<Scheduler> =
    LazyLock::new(|| Scheduler::new(MemoryBroker::new(), SchedulerConfig::default()).unwrap());

/// The cron property: a spec is refused or registered, never a panic.
fn check_cron_spec(spec: &str) {
    if let Ok(id) = SCHEDULER.register(spec, Task::new("fuzz", ""), TaskOptions::new()) {
        let _ = SCHEDULER.entries();
        SCHEDULER.unregister(&id).unwrap();
    }
}

/// The duration property: what parses prints (as Go does) to text that parses back the same.
fn check_go_duration(text: &str) {
    if let Some(d) = parse_go_duration(text) {
        let printed = TaskOptions::new().timeout(d).go_option_strings().remove(0);
        let inner = printed.strip_prefix("Timeout(").and_then(|s| s.strip_suffix(')')).unwrap();
        assert_eq!(parse_go_duration(inner), Some(d), "{text:?} printed as {inner:?}");
    }
}

/// Durations across every scale, up to the largest.
fn any_duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        (0u64..10_000).prop_map(Duration::from_millis),
        any::<u64>().prop_map(Duration::from_secs),
        (any::<u64>(), 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
        Just(Duration::MAX),
    ]
}

/// Instants around now, around the epoch, and far in either direction.
fn any_instant() -> impl Strategy<Value = SystemTime> {
    prop_oneof![
        (-1_000_000i64..1_000_000).prop_map(|s| from_unix_secs(1_795_317_896 + s)),
        (-1_000_000i64..1_000_000).prop_map(from_unix_secs),
        (0u64..=i64::MAX as u64 / 2).prop_map(|s| UNIX_EPOCH + Duration::from_secs(s)),
        (0u64..=i64::MAX as u64 / 2).prop_map(|s| UNIX_EPOCH - Duration::from_secs(s)),
    ]
}

/// The dashboard over a memory broker holding a pending, a scheduled, a grouped and a critical
/// task, with and without a token, and the runtime that serves them.
struct Dashboard {
    runtime: tokio::runtime::Runtime,
    routers: [axum::Router; 2],
}

static DASHBOARD: LazyLock<Dashboard> = LazyLock::new(|| {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let broker = MemoryBroker::new();
    runtime.block_on(async {
        let client = Client::new(broker.clone());
        for (id, options) in [
            ("p1", TaskOptions::new()),
            ("s1", TaskOptions::new().process_in(Duration::from_secs(600))),
            ("g1", TaskOptions::new().group("g")),
            ("c1", TaskOptions::new().queue("critical")),
        ] {
            client.enqueue(&Task::new("fuzz", r#"{"n":1}"#), options.task_id(id)).await.unwrap();
        }
    });
    let config = asynq_web::WebConfig::new(Inspector::new(broker));
    let guarded = config.clone().with_auth(asynq_web::Auth::bearer("fuzz-token").unwrap());
    Dashboard { runtime, routers: [asynq_web::router(config), asynq_web::router(guarded)] }
});

/// The dashboard property: every request is answered, and never with a 5xx.
fn check_web_request(method: &str, target: &str, headers: &[(String, String)], body: &[u8]) {
    use axum::http::Request;
    let mut builder = Request::builder().method(method).uri(target).header("host", "127.0.0.1:8080");
    for (name, value) in headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let Ok(request) = builder.body(()) else { return };
    let dashboard = &*DASHBOARD;
    for router in &dashboard.routers {
        let request = request.clone().map(|()| axum::body::Body::from(body.to_vec()));
        let response = dashboard.runtime.block_on(router.clone().oneshot(request)).unwrap();
        assert!(!response.status().is_server_error(), "{} for {method} {target}", response.status());
    }
}

/// Request paths made of the API's own words and random ones, with a random query.
fn any_api_target() -> impl Strategy<Value = String> {
    const WORDS: [&str; 39] = [
        "api",
        "queues",
        "default",
        "critical",
        "nosuch",
        "states",
        "pending",
        "scheduled",
        "retry",
        "archived",
        "completed",
        "active",
        "aggregating",
        "tasks",
        "p1",
        "s1",
        "g1",
        "groups",
        "g",
        "bulk",
        "batch",
        "run",
        "archive",
        "delete",
        "cancel",
        "pause",
        "unpause",
        "history",
        "servers",
        "schedulers",
        "redis",
        "session",
        "login",
        "logout",
        "openapi.json",
        "",
        "..",
        "%2F",
        "%00",
    ];
    let segment =
        prop_oneof![4 => proptest::sample::select(&WORDS[..]).prop_map(str::to_owned), 1 => "[a-zA-Z0-9%._~-]{0,12}"];
    let query = proptest::option::of("[a-z_]{0,8}=[a-zA-Z0-9%-]{0,12}(&[a-z_]{0,8}=[a-zA-Z0-9%-]{0,12}){0,3}");
    (proptest::collection::vec(segment, 0..7), query).prop_map(|(segments, query)| {
        let path = format!("/{}", segments.join("/"));
        query.map_or(path.clone(), |q| format!("{path}?{q}"))
    })
}

/// Header sets that matter to the dashboard: content type, CSRF token, cookie, authorization.
fn any_headers() -> impl Strategy<Value = Vec<(String, String)>> {
    let name = proptest::sample::select(&["content-type", "x-csrf-token", "cookie", "authorization", "accept"][..]);
    let value = prop_oneof![Just("application/json".to_owned()), Just("Bearer fuzz-token".to_owned()), "[ -~]{0,40}",];
    proptest::collection::vec((name.prop_map(str::to_owned), value), 0..4)
}

/// Request bodies: JSON of the shapes the API takes, or bytes.
fn any_body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(Vec::new()),
        r#"\{"(ids|token|force|payload|action)": ?(\[("[a-z0-9]{0,4}",?){0,3}\]|"[a-z]{0,10}"|true|-?[0-9]{1,20}|null|\{\})\}"#
            .prop_map(String::into_bytes),
        proptest::collection::vec(any::<u8>(), 0..64),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn task_messages_from_random_bytes(data in proptest::collection::vec(any::<u8>(), 0..256)) {
        check_task_message(&data);
    }

    #[test]
    fn task_messages_from_mutated_valid_ones(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut data = full_message();
        for (at, byte) in edits {
            let i = at.index(data.len());
            data[i] = byte;
        }
        check_task_message(&data);
        data.truncate(cut.index(data.len() + 1));
        check_task_message(&data);
    }

    #[test]
    fn cron_specs_from_cron_like_text(spec in "(TZ=[A-Za-z/_+-]{0,20} |CRON_TZ=UTC )?[0-9*/,?LW#@A-Za-z -]{0,40}") {
        check_cron_spec(&spec);
    }

    #[test]
    fn cron_specs_with_every(interval in "[0-9.+-]{0,25}(ns|us|µs|ms|s|m|h|d)?([0-9.]{0,5}(s|m|h))?") {
        check_cron_spec(&format!("@every {interval}"));
    }

    #[test]
    fn cron_specs_from_any_text(spec in any::<String>()) {
        check_cron_spec(&spec);
    }

    #[test]
    fn go_durations_from_duration_like_text(text in "\\+?([0-9]{0,22}(\\.[0-9]{0,12})?(ns|us|µs|μs|ms|s|m|h|x)?){0,4}") {
        check_go_duration(&text);
    }

    #[test]
    fn go_durations_from_any_text(text in any::<String>()) {
        check_go_duration(&text);
    }

    #[test]
    fn web_requests_never_get_a_server_error(
        method in proptest::sample::select(&["GET", "POST", "DELETE", "PUT", "HEAD"][..]),
        target in any_api_target(),
        headers in any_headers(),
        body in any_body(),
    ) {
        check_web_request(method, &target, &headers, &body);
    }

    #[test]
    fn enqueue_options_resolve_or_are_refused(
        timeout in proptest::option::of(any_duration()),
        retention in proptest::option::of(any_duration()),
        unique in proptest::option::of(any_duration()),
        process_in in proptest::option::of(any_duration()),
        process_at in proptest::option::of(any_instant()),
        deadline in proptest::option::of(any_instant()),
        max_retry in any::<u32>(),
        now in any_instant(),
    ) {
        let mut options = TaskOptions::new().max_retry(max_retry);
        if let Some(d) = timeout { options = options.timeout(d); }
        if let Some(d) = retention { options = options.retention(d); }
        if let Some(d) = unique { options = options.unique(d); }
        if let Some(t) = deadline { options = options.deadline(t); }
        match (process_in, process_at) {
            (Some(d), _) => options = options.process_in(d),
            (None, Some(t)) => options = options.process_at(t),
            (None, None) => {}
        }
        if let Ok(request) = resolve_enqueue(&Task::new("t", ""), &options, now, || "id".to_owned()) {
            // Whatever is accepted fits Go's fields.
            let m = &request.message;
            let fits = |d: Option<Duration>| d.is_none_or(|d| d <= asynq_core::MAX_DURATION);
            prop_assert!(fits(m.timeout) && fits(m.retention) && i32::try_from(m.max_retry).is_ok());
        }
    }
}
