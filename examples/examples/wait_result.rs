//! Waits for the outcome of tasks a server runs: one completes and its result is read back (its
//! retention keeps it), one fails for good and its error is read back, and one succeeds without
//! retention, so nothing of it is left (its wait, begun after it finished, finds no task). Runs on the embedded memory broker and exits by itself.
//!
//! ```text
//! cargo run --example wait_result
//! ```

use rasynq::{
    Client, Config, Error, HandlerError, MemoryBroker, ServeMux, Server, Task, TaskOptions, TaskOutcome, Tracker,
};
use std::time::Duration;

/// Builds a quarterly report; the payload names the quarter, `q1` to `q4`.
fn handlers() -> ServeMux {
    let mut mux = ServeMux::new();
    mux.handle_fn("report:build", |ctx, task| async move {
        let quarter = std::str::from_utf8(task.payload()).unwrap_or_default().to_owned();
        if !matches!(quarter.as_str(), "q1" | "q2" | "q3" | "q4") {
            return Err(HandlerError::skip_retry(format!("no such quarter: {quarter:?}")));
        }
        tokio::time::sleep(Duration::from_millis(300)).await; // the work
        ctx.result_writer().write(format!(r#"{{"quarter":"{quarter}","revenue":1234}}"#)).await?;
        Ok(())
    });
    mux
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let broker = MemoryBroker::new();
    let client = Client::new(broker.clone());
    let tracker = Tracker::new(broker.clone());
    let mut server = Server::new(broker, Config { concurrency: 4, ..Config::default() })?;
    server.start(handlers())?;

    // A retention keeps a task, and the result its handler wrote, after it succeeds.
    let kept = TaskOptions::new().retention(Duration::from_secs(3600));
    let jobs = [("q3", kept.clone()), ("q5", kept), ("q4", TaskOptions::new())];
    let mut enqueued = Vec::new();
    for (quarter, options) in jobs {
        enqueued.push(client.enqueue(&Task::new("report:build", quarter), options).await?);
    }
    for info in enqueued {
        let payload = String::from_utf8_lossy(&info.payload);
        match tracker.wait(&info.queue, &info.id, Duration::from_secs(10)).await {
            Ok(TaskOutcome::Completed(task)) => {
                let result = task.result.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
                println!("{payload}: completed, result {result}");
            }
            Ok(TaskOutcome::Archived(task)) => {
                println!("{payload}: failed for good: {}", task.last_error.unwrap_or_default());
            }
            Ok(_deleted) => println!("{payload}: succeeded and was deleted (no retention, so no result to read)"),
            // It finished before its wait began, and without a retention nothing was kept.
            Err(Error::TaskNotFound { .. }) => println!("{payload}: gone before the wait began (no retention)"),
            Err(e) => return Err(e.into()),
        }
    }
    server.shutdown().await;
    Ok(())
}
