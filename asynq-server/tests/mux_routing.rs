//! ServeMux routing and middleware order.

use asynq_core::{QueueName, StoredTask, Task, TaskId};
use asynq_memory::MemoryBroker;
use asynq_server::{Handler, HandlerError, ServeMux, TaskContext, handler_fn};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

type Log = Arc<Mutex<Vec<String>>>;

fn tagged(log: &Log, tag: &'static str) -> impl Handler {
    let log = log.clone();
    handler_fn(move |_ctx, _task| {
        log.lock().unwrap().push(tag.to_owned());
        async { Ok(()) }
    })
}

fn context(type_name: &str) -> TaskContext {
    let message = StoredTask::new(TaskId::from_static("id-1"), QueueName::default(), type_name);
    let deadline = UNIX_EPOCH + Duration::from_secs(2_000_000_000);
    TaskContext::new(&message, deadline, Arc::new(MemoryBroker::new()), CancellationToken::new())
}

#[tokio::test]
async fn exact_match_beats_the_longest_prefix_which_beats_shorter_ones() {
    let log = Log::default();
    let mut mux = ServeMux::new();
    mux.handle("email:", tagged(&log, "prefix"))
        .handle("email:welcome:", tagged(&log, "longer"))
        .handle("email:welcome", tagged(&log, "exact"));
    for type_name in ["email:welcome", "email:welcome:vip", "email:other"] {
        mux.process_task(context(type_name), Task::new(type_name, "")).await.unwrap();
    }
    assert_eq!(*log.lock().unwrap(), ["exact", "longer", "prefix"]);
    let err = mux.process_task(context("emai"), Task::new("emai", "")).await.unwrap_err();
    assert!(err.is_handler_not_found());
}

#[test]
fn registering_a_pattern_twice_is_a_programming_error() {
    let log = Log::default();
    let panic = std::panic::catch_unwind(|| {
        let mut mux = ServeMux::new();
        mux.handle("a", tagged(&log, "1")).handle("a", tagged(&log, "2"));
    })
    .unwrap_err();
    let message = panic.downcast_ref::<String>().map(String::as_str).unwrap_or_default();
    assert!(message.contains("multiple registrations for a"), "{message}");
}

struct Tag {
    log: Log,
    name: &'static str,
    next: Arc<dyn Handler>,
}

#[async_trait::async_trait]
impl Handler for Tag {
    async fn process_task(&self, ctx: TaskContext, task: Task) -> Result<(), HandlerError> {
        self.log.lock().unwrap().push(format!("{} before", self.name));
        let result = self.next.process_task(ctx, task).await;
        self.log.lock().unwrap().push(format!("{} after", self.name));
        result
    }
}

#[tokio::test]
async fn the_first_middleware_added_is_the_outermost() {
    let log = Log::default();
    let mut mux = ServeMux::new();
    mux.handle("job", tagged(&log, "handler"));
    for name in ["outer", "inner"] {
        let log = log.clone();
        mux.middleware(move |next| Arc::new(Tag { log: log.clone(), name, next }));
    }
    mux.process_task(context("job"), Task::new("job", "")).await.unwrap();
    assert_eq!(*log.lock().unwrap(), ["outer before", "inner before", "handler", "inner after", "outer after"]);
}
