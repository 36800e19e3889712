//! Bad input on the command line: an unknown task state is a usage error (exit 2) that lists the
//! valid states, and nothing is read or written.

mod common;

use asynq_tests::RedisServer;
use common::asynq_at;

#[test]
fn an_unknown_state_exits_2_and_lists_the_valid_ones() {
    let server = RedisServer::start();
    for command in [["task", "ls"], ["task", "runall"], ["task", "archiveall"], ["task", "deleteall"]] {
        let run = asynq_at(&server, &[command[0], command[1], "-q", "default", "-s", "bogus"]);
        assert_eq!(run.code, 2, "{run:#?}");
        assert!(run.stderr.contains("\"bogus\""), "{}", run.stderr);
        for state in ["active", "pending", "scheduled", "retry", "archived", "completed", "aggregating"] {
            assert!(run.stderr.contains(state), "{state} missing from: {}", run.stderr);
        }
    }
    let keys = server.command(&["DBSIZE"]).unwrap();
    assert_eq!(keys.as_int(), Some(0), "nothing was written");
}
