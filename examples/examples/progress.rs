//! A handler that reports how far it has come: three video transcodes, each reporting its
//! progress as it works through its chunks, followed from the producer's side with
//! `Tracker::watch` until each finishes. Runs on the embedded memory broker, or on Redis when
//! `REDIS_URL` is set, and exits by itself (`CHUNKS`, 10 by default, half a second each).
//!
//! On Redis an operator can watch the same reports while it runs: `asynq task inspect -q media
//! -i <ID>` prints a task's last report, `asynq task ls -q media -s active` and the dashboard's
//! task pages show a progress bar, and `asynq server quiet <server ID>` lets the transcodes under
//! way finish while the server takes no new one.
//!
//! ```text
//! cargo run --example progress
//! REDIS_URL=redis://127.0.0.1:6379 CHUNKS=60 cargo run --example progress
//! ```

use futures::StreamExt as _;
use rasynq::core::Broker;
use rasynq::{
    Client, Config, MemoryBroker, RedisBroker, ServeMux, Server, Task, TaskContext, TaskEvent, TaskOptions,
    TaskOutcome, Tracker,
};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What to transcode.
#[derive(Serialize, Deserialize)]
struct Video {
    name: String,
    chunks: u32,
}

fn handlers() -> ServeMux {
    let mut mux = ServeMux::new();
    mux.handle_json("video:transcode", |ctx: TaskContext, video: Video| async move {
        for chunk in 1..=video.chunks {
            tokio::time::sleep(Duration::from_millis(500)).await; // the work
            // Written at most once a second, so reporting every step costs nothing more.
            let done = f64::from(chunk) / f64::from(video.chunks);
            ctx.progress().report(done, format!("{}: chunk {chunk} of {}", video.name, video.chunks))?;
        }
        ctx.result_writer().write(format!(r#"{{"file":"{}.mp4"}}"#, video.name)).await?;
        Ok(())
    });
    mux
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let chunks = match std::env::var("CHUNKS") {
        Ok(n) => n.parse().map_err(|e| anyhow::anyhow!("CHUNKS={n:?} is not a count: {e}"))?,
        Err(_) => 10,
    };
    match std::env::var("REDIS_URL") {
        Ok(url) => {
            println!("Using Redis at {url}");
            run(RedisBroker::connect(&url).await?, chunks).await
        }
        Err(_) => run(MemoryBroker::new(), chunks).await,
    }
}

/// Transcodes three videos of `chunks` chunks on `broker`, printing each report.
async fn run<B: Broker + Clone>(broker: B, chunks: u32) -> anyhow::Result<()> {
    let client = Client::new(broker.clone());
    let tracker = Tracker::new(broker.clone());
    let config = Config { concurrency: 3, queues: [("media".to_owned(), 1)].into(), ..Config::default() };
    let mut server = Server::new(broker, config)?;
    server.start(handlers())?;
    println!("server {} runs the transcodes", server.id());

    // A retention keeps each task, its last report and its result after it succeeds.
    let options = TaskOptions::new().queue("media").retention(Duration::from_secs(3600));
    let mut watches = Vec::new();
    for name in ["intro", "keynote", "outro"] {
        let video = Video { name: name.to_owned(), chunks };
        let info = client.enqueue(&Task::json("video:transcode", &video)?, options.clone()).await?;
        println!("{name}: task {} in queue {}", info.id, info.queue);
        let limit = Duration::from_secs(60) + Duration::from_secs(u64::from(chunks));
        let mut events = tracker.watch(&info.queue, &info.id, limit)?;
        watches.push(tokio::spawn(async move {
            while let Some(event) = events.next().await {
                match event? {
                    TaskEvent::Progress(p) => println!("  {:>5.1}%  {}", p.fraction() * 100.0, p.message()),
                    TaskEvent::Finished(TaskOutcome::Completed(task)) => {
                        let result = task.result.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
                        println!("{name}: done, result {result}");
                    }
                    TaskEvent::Finished(other) => println!("{name}: finished: {other:?}"),
                    _ => {}
                }
            }
            anyhow::Ok(())
        }));
    }
    for watch in watches {
        watch.await??;
    }
    server.shutdown().await;
    Ok(())
}
