//! An order as durable steps: reserve the stock, charge the card, wait for a manager's approval
//! (a signal) without holding a worker, then ship. The first attempt fails once after charging,
//! as a crash would: its retry skips the steps already recorded, so the card is charged once.
//! Ends by printing how many times each step's body ran. Runs on the embedded memory broker, or
//! on Redis when `REDIS_URL` is set, and exits by itself.
//!
//! ```text
//! cargo run --example durable_steps
//! REDIS_URL=redis://127.0.0.1:6379 cargo run --example durable_steps
//! ```

use rasynq::core::Broker;
use rasynq::core::broker::Steps;
use rasynq::{
    Client, Config, HandlerError, MemoryBroker, RedisBroker, ServeMux, Server, SignalWait, Task, TaskContext,
    TaskOptions, TaskState, Tracker,
};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How many times each step's body ran, by step.
type Runs = Arc<Mutex<BTreeMap<&'static str, u32>>>;

fn ran(runs: &Runs, step: &'static str) {
    *runs.lock().unwrap().entry(step).or_default() += 1;
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Approval {
    by: String,
}

fn handlers(runs: Runs) -> ServeMux {
    let mut mux = ServeMux::new();
    mux.handle_fn("order:place", move |ctx: TaskContext, task: Task| {
        let runs = runs.clone();
        async move {
            let order = String::from_utf8_lossy(task.payload()).into_owned();
            let r = runs.clone();
            let reservation: String = ctx
                .step("reserve", || async move {
                    ran(&r, "reserve");
                    Ok::<_, HandlerError>(format!("res-{order}"))
                })
                .await?;
            let r = runs.clone();
            // Keyed by the task: a payment API that dedupes on the key charges once even if a
            // crash between the charge and its record runs this body again.
            let key = format!("{}:charge", ctx.task_id());
            let receipt: String = ctx
                .step("charge", || async move {
                    ran(&r, "charge");
                    Ok::<_, HandlerError>(format!("receipt for {key}"))
                })
                .await?;
            if ctx.retry_count() == 0 {
                return Err(HandlerError::new("the worker crashed after charging (simulated)"));
            }
            let approval = match ctx.wait_for_signal::<Approval>("approved", Duration::from_secs(3600)).await? {
                SignalWait::Received(approval) => approval,
                SignalWait::TimedOut => return Err(HandlerError::skip_retry("nobody approved the order in time")),
            };
            let r = runs.clone();
            ctx.step("ship", || async move {
                ran(&r, "ship");
                println!("shipping {reservation} ({receipt}), approved by {}", approval.by);
                Ok::<_, HandlerError>(())
            })
            .await?;
            Ok(())
        }
    });
    mux
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (broker, steps): (Arc<dyn Broker>, Arc<dyn Steps>) = match std::env::var("REDIS_URL") {
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
    let runs = Runs::default();
    let config = Config {
        concurrency: 2,
        retry_delay: Arc::new(|_, _, _| Duration::from_secs(1)),
        delayed_task_check_interval: Duration::from_millis(200),
        ..Config::default()
    };
    let mut server = Server::from_shared(broker.clone(), config)?;
    server.start(handlers(runs.clone()))?;

    let client = Client::from_shared(broker.clone()).with_steps(steps);
    let order = client
        .enqueue(
            &Task::new("order:place", "o-17"),
            TaskOptions::new().queue("default").retention(Duration::from_secs(600)),
        )
        .await?;
    let inspector = rasynq::Inspector::from_shared(broker.clone());
    // Wait until the order is parked, waiting for its approval.
    loop {
        let info = inspector.task_info(&order.queue, &order.id).await?;
        if let (TaskState::Scheduled, Some(parked)) = (info.state, &info.parked) {
            println!("order {}: {parked} (steps recorded: {})", order.id, info.steps.len());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    client.signal(&order.queue, &order.id, "approved", &Approval { by: "dana".into() }).await?;
    let tracker = Tracker::from_parts(broker.clone(), broker.clone());
    let outcome = tracker.wait(&order.queue, &order.id, Duration::from_secs(30)).await?;
    println!("order {}: {:?}", order.id, outcome.state());
    server.shutdown().await;
    for (step, count) in runs.lock().unwrap().iter() {
        println!("{step}: ran {count} time(s)");
    }
    Ok(())
}
