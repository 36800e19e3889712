//! A small image pipeline as one workflow: the images are resized side by side (fan-out), an
//! archive is built once every resize has succeeded, from their results in image order (fan-in),
//! and a notification follows the archive. One image is broken: run it with `--broken` to see a
//! failed resize cancel what waits for it. Runs on the embedded memory broker, or on Redis when
//! `REDIS_URL` is set, and exits by itself.
//!
//! ```text
//! cargo run --example workflow
//! cargo run --example workflow -- --broken
//! REDIS_URL=redis://127.0.0.1:6379 cargo run --example workflow
//! ```

use rasynq::core::Broker;
use rasynq::core::broker::Workflows;
use rasynq::{
    Config, Flow, FlowProducer, HandlerError, Inspector, MemoryBroker, ParentOutcome, RedisBroker, ServeMux, Server,
    Task, TaskContext, TaskOptions, TaskState,
};
use std::sync::Arc;
use std::time::Duration;

/// The handlers: `image:resize` writes the resized image's name (and fails for good on a
/// broken image), `image:archive` and `image:notify` read what their parents wrote.
fn handlers() -> ServeMux {
    let mut mux = ServeMux::new();
    mux.handle_fn("image:resize", |ctx: TaskContext, task: Task| async move {
        let image = String::from_utf8_lossy(task.payload()).into_owned();
        if image.starts_with("broken") {
            return Err(HandlerError::skip_retry(format!("{image} is not an image")));
        }
        tokio::time::sleep(Duration::from_millis(100)).await; // the work
        ctx.result_writer().write(image.replace(".png", "-640.png")).await?;
        Ok(())
    });
    mux.handle_fn("image:archive", |ctx: TaskContext, _task: Task| async move {
        let mut names = Vec::new();
        for parent in ctx.parent_results().await.map_err(HandlerError::new)? {
            if let ParentOutcome::Succeeded { result: Some(name) } = parent.outcome {
                names.push(String::from_utf8_lossy(&name).into_owned());
            }
        }
        println!("archive: packing {}", names.join(", "));
        ctx.result_writer().write(format!("images-{}.zip", names.len())).await?;
        Ok(())
    });
    mux.handle_fn("image:notify", |ctx: TaskContext, _task: Task| async move {
        let parents = ctx.parent_results().await.map_err(HandlerError::new)?;
        if let Some(ParentOutcome::Succeeded { result: Some(archive) }) = parents.first().map(|p| &p.outcome) {
            println!("notify: {} is ready", String::from_utf8_lossy(archive));
        }
        Ok(())
    });
    mux
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let broken = std::env::args().any(|arg| arg == "--broken");
    let (broker, workflows): (Arc<dyn Broker>, Arc<dyn Workflows>) = match std::env::var("REDIS_URL") {
        Ok(url) => {
            println!("Using Redis at {url}");
            let broker = RedisBroker::connect(&url).await?;
            (Arc::new(broker.clone()), Arc::new(broker))
        }
        Err(_) => {
            let broker = MemoryBroker::new();
            (Arc::new(broker.clone()), Arc::new(broker))
        }
    };
    let mut server = Server::from_shared(broker.clone(), Config { concurrency: 4, ..Config::default() })?;
    server.start(handlers())?;

    let images = ["cat.png", if broken { "broken.png" } else { "dog.png" }, "owl.png"];
    let resize = |image: &str| Flow::task(Task::new("image:resize", image.to_owned()), TaskOptions::new());
    let archive = Flow::task(Task::new("image:archive", ""), TaskOptions::new().retention(Duration::from_secs(600)));
    let notify = Flow::task(Task::new("image:notify", ""), TaskOptions::new().retention(Duration::from_secs(600)));
    let flow = Flow::chord(images.map(resize), archive).then(notify);
    let workflow = FlowProducer::from_shared(workflows).enqueue(&flow).await?;
    println!("workflow {}: {} tasks stored", workflow.id, workflow.tasks.len());

    // The last task settles last: completed when everything ran, archived unrun otherwise.
    let last = workflow.tasks.last().expect("a workflow has tasks");
    let inspector = Inspector::from_shared(broker.clone());
    let give_up = tokio::time::Instant::now() + Duration::from_secs(30);
    let state = loop {
        match inspector.task_info(&last.queue, &last.id).await {
            Ok(info) if matches!(info.state, TaskState::Completed | TaskState::Archived) => break info,
            _ if tokio::time::Instant::now() > give_up => anyhow::bail!("the workflow did not finish in 30 s"),
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    match state.state {
        TaskState::Completed => println!("done: every task ran, each after the tasks it waits for"),
        _ => println!(
            "a resize failed, so the archive and the notification did not run: {}",
            state.last_error.unwrap_or_default()
        ),
    }
    server.shutdown().await;
    Ok(())
}
