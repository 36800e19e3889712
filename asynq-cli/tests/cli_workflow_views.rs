//! `asynq workflow ls` and `inspect` stay readable: the listing shows each workflow's state, and
//! a task waiting for many parents names them by position in a row that fits 100 columns, while
//! `--json` keeps the full IDs.

mod common;

use asynq_client::{FlowProducer, Task, TaskOptions};
use asynq_core::workflow::Flow;
use asynq_tests::RedisServer;
use common::{asynq_at, block_on, broker};

/// Stores a chord of `members` tasks with UUID-long IDs and a callback waiting for them all,
/// and a two-task chain; returns the chord's and the chain's workflow IDs.
fn store(server: &RedisServer, members: usize) -> (String, String, Vec<String>) {
    block_on(async {
        let producer = FlowProducer::new(broker(server).await);
        let ids: Vec<String> = (0..members).map(|i| format!("9f0c2d4e-51a7-4b3e-8c1d-{i:012}")).collect();
        let member =
            |id: &String| Flow::task(Task::new("fan:out", id.clone()), TaskOptions::new().queue("flows").task_id(id));
        let callback = Flow::task(Task::new("fan:in", "all"), TaskOptions::new().queue("flows").task_id("gather"));
        let chord = producer.enqueue(&Flow::chord(ids.iter().map(member), callback)).await.expect("chord stored");
        let step =
            |id: &str| Flow::task(Task::new("step", id.to_owned()), TaskOptions::new().queue("flows").task_id(id));
        let chain = producer.enqueue(&step("first").then(step("second"))).await.expect("chain stored");
        (chord.id.to_string(), chain.id.to_string(), ids)
    })
}

fn assert_fits(text: &str) {
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "a line of {} characters:\n{line}\n\nin:\n{text}", line.chars().count());
    }
}

#[test]
fn workflow_views_show_states_and_fit_100_columns() {
    let server = RedisServer::start();
    let (chord, chain, members) = store(&server, 120);

    let listed = asynq_at(&server, &["workflow", "ls"]).ok();
    assert_fits(&listed.stdout);
    listed.shows(&["ID", "Created", "Tasks", "State"]);
    let row = listed.line(&chord);
    assert!(row.contains("121") && row.contains("running"), "{}", listed.stdout);
    let json = asynq_at(&server, &["workflow", "ls", "--json"]).ok().json();
    assert!(json.as_array().unwrap().iter().all(|w| w["state"] == "running"), "{json}");

    let inspect = asynq_at(&server, &["workflow", "inspect", &chord]).ok();
    assert_fits(&inspect.stdout);
    inspect.shows(&[&format!("Workflow {chord}: running (121 tasks)"), "#", "State", "Parents"]);
    let gather = inspect.line("gather");
    assert!(gather.contains("waiting") && gather.contains("1-120"), "the callback waits for 1-120: {}", inspect.stdout);
    // Each member's full ID is on its row, to copy.
    assert!(inspect.line(&members[0]).contains("pending"), "{}", inspect.stdout);
    let json = asynq_at(&server, &["workflow", "inspect", &chord, "--json"]).ok().json();
    let parents = json["tasks"][120]["parents"].as_array().expect("parents");
    assert_eq!(parents.len(), 120);
    assert_eq!(parents[0], members[0].as_str(), "JSON keeps the full IDs");

    // Cancelled and settled states show too.
    asynq_at(&server, &["workflow", "cancel", &chain]).ok();
    let listed = asynq_at(&server, &["workflow", "ls"]).ok();
    assert_fits(&listed.stdout);
    assert!(listed.line(&chain).contains("cancelled"), "{}", listed.stdout);
    let inspect = asynq_at(&server, &["workflow", "inspect", &chain]).ok();
    assert_fits(&inspect.stdout);
    let second = inspect.line("second");
    assert!(
        second.contains("archived") && second.split_whitespace().any(|w| w == "1"),
        "second waits for #1: {}",
        inspect.stdout
    );
}
