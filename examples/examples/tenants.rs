//! Many tenants on one broker: two services in namespaces of their own, a debounced search-index
//! refresh (five quick edits, one refresh with the last text), a reminder replaced by its ID, a
//! concurrency limit the search service's servers share, a queue per customer that its server
//! serves through the pattern `tenant:*` from the first task enqueued into it, and priorities
//! within a customer's queue (a user's request before the nightly backfill enqueued first).
//! Runs on the embedded memory broker, where each broker value is a namespace of its own, and
//! exits by itself; with `REDIS_URL` the two services share one Redis, each under its own prefix.
//!
//! ```text
//! cargo run --example tenants
//! REDIS_URL=redis://127.0.0.1:6379 cargo run --example tenants
//! ```

use rasynq::core::Broker;
use rasynq::{Client, Config, Inspector, MemoryBroker, RedisBroker, ServeMux, Server, Task, TaskOptions};
use std::sync::Arc;
use std::time::Duration;

/// A broker for service `namespace`: on Redis, in that namespace; in memory, one of its own.
async fn broker_for(namespace: &str) -> anyhow::Result<Arc<dyn Broker>> {
    Ok(match std::env::var("REDIS_URL") {
        Ok(url) => {
            let separator = if url.contains('?') { '&' } else { '?' };
            Arc::new(RedisBroker::connect(&format!("{url}{separator}namespace={namespace}")).await?)
        }
        Err(_) => Arc::new(MemoryBroker::new()),
    })
}

/// Prints every task it runs, naming the service.
fn handlers(service: &'static str) -> ServeMux {
    let mut mux = ServeMux::new();
    for task_type in ["invoice:send", "index:refresh", "remind"] {
        mux.handle_fn(task_type, move |ctx, task| async move {
            let payload = String::from_utf8_lossy(task.payload());
            println!("{service}: ran {} {} ({payload})", task.type_name(), ctx.task_id());
            Ok(())
        });
    }
    mux
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (billing, search) = (broker_for("billing").await?, broker_for("search").await?);
    // Each service sees its own queues only, though both use `default`.
    let billing_client = Client::from_shared(billing.clone());
    billing_client.enqueue(&Task::new("invoice:send", "invoice 7"), TaskOptions::new()).await?;

    // Debounce: each edit of document 42 replaces the refresh still waiting, so a burst of
    // edits a shorter time apart than the window refreshes the index once, with the last text.
    let search_client = Client::from_shared(search.clone());
    let window = Duration::from_secs(1);
    for edit in 1..=5 {
        let refresh = Task::new("index:refresh", format!("doc 42, edit {edit}"));
        search_client.enqueue(&refresh, TaskOptions::new().debounce("doc:42", window)).await?;
    }
    // Replace by ID: the reminder keeps its ID and takes the new text and due time.
    let later = TaskOptions::new().process_in(Duration::from_secs(3600));
    let reminder = search_client.enqueue(&Task::new("remind", "in an hour"), later).await?;
    let sooner = TaskOptions::new().process_in(window);
    search_client.replace(&reminder.id, &Task::new("remind", "in a second, replaced"), sooner).await?;
    let queue = Inspector::from_shared(search.clone()).queue_info("default").await?;
    println!("search: {} tasks scheduled of 6 enqueued", queue.scheduled);

    let fast = || Config { delayed_task_check_interval: Duration::from_millis(200), ..Config::default() };
    let mut billing_server = Server::from_shared(billing, fast())?;
    billing_server.start(handlers("billing"))?;
    // At most one index refresh runs at once across every server of the search service.
    // Besides `default`, every customer's queue (`tenant:<name>`), found within a second of its
    // first task, each customer's backlog sharing the workers with the others'.
    let shared = Config {
        shared_type_concurrency: [("index:refresh".to_owned(), 1)].into(),
        queue_patterns: [("tenant:*".to_owned(), 1)].into(),
        ..fast()
    };
    let mut search_server = Server::from_shared(search.clone(), shared)?;
    search_server.start(handlers("search"))?;
    for (customer, what, priority) in [
        ("acme", "all of acme's documents, nightly", -5),
        ("acme", "the document a user opened", 5),
        ("globex", "all of globex's documents", 0),
    ] {
        let task = Task::new("index:refresh", what);
        let options = TaskOptions::new().queue(format!("tenant:{customer}")).priority(priority);
        search_client.enqueue(&task, options).await?;
    }
    let search_inspector = Inspector::from_shared(search);
    for queue in ["default", "tenant:acme", "tenant:globex"] {
        while search_inspector.queue_info(queue).await?.size > 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    billing_server.shutdown().await;
    search_server.shutdown().await;
    Ok(())
}
