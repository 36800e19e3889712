//! Groups and aggregation: notifications are grouped by user, and a server with a group
//! aggregator turns each user's group into one digest email once no notification joined it for
//! the grace period, or at the next check once it holds the max size. Runs on the embedded
//! memory broker and exits once every notification went out in a digest.
//!
//! ```text
//! cargo run --example aggregation
//! ```

use rasynq::{Client, Config, MemoryBroker, ServeMux, Server, Task, TaskOptions, aggregator_fn};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The notifications to send: (user, how many).
const NOTIFICATIONS: [(&str, usize); 3] = [("ann", 12), ("bob", 3), ("cat", 1)];

/// One digest per group: the group is the user, the payload lists the notifications.
fn digest(user: &str, notifications: Vec<Task>) -> Task {
    let lines: Vec<&[u8]> = notifications.iter().map(|task| task.payload().as_ref()).collect();
    Task::new("email:digest", lines.join(&b'\n')).with_header("user", user)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let broker = MemoryBroker::new();
    let client = Client::new(broker.clone());

    let sent = Arc::new(AtomicUsize::new(0));
    let counted = sent.clone();
    let started = Instant::now();
    let mut mux = ServeMux::new();
    mux.handle_fn("email:digest", move |_ctx, task| {
        let user = task.headers().get("user").cloned().unwrap_or_default();
        let lines = task.payload().split(|b| *b == b'\n').count();
        counted.fetch_add(lines, Ordering::SeqCst);
        let plural = if lines == 1 { "" } else { "s" };
        println!("{:>5.1}s  digest for {user}: {lines} notification{plural}", started.elapsed().as_secs_f64());
        async { Ok(()) }
    });
    let config = Config {
        concurrency: 4,
        group_aggregator: Some(Arc::new(aggregator_fn(digest))),
        // A group goes out 2 s after its last notification, or at the next check (every
        // `min(7 s, grace period)`) once it holds 10.
        group_grace_period: Duration::from_secs(2),
        group_max_size: Some(10),
        ..Config::default()
    };
    let mut server = Server::new(broker, config)?;
    server.start(mux)?;

    for (user, count) in NOTIFICATIONS {
        for n in 1..=count {
            let notification = Task::new("notify", format!("{user}: you have a new follower (#{n})"));
            client.enqueue(&notification, TaskOptions::new().group(user)).await?;
        }
    }
    let total: usize = NOTIFICATIONS.iter().map(|(_, count)| count).sum();
    while sent.load(Ordering::SeqCst) < total {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("{total} notifications went out in digests");
    server.shutdown().await;
    Ok(())
}
