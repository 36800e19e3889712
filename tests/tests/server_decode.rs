//! Data that does not decode fails a task for good, whatever the data: a task's own payload
//! and a workflow parent's result alike are archived at the first attempt, never retried, with
//! messages in the same words. On the memory broker, in paused time.

use asynq_client::{FlowProducer, Task, TaskOptions, TaskState};
use asynq_core::broker::Inspect;
use asynq_core::workflow::Flow;
use asynq_core::{QueueName, TaskId};
use asynq_server::{HandlerError, ServeMux, Server, TaskContext};
use asynq_tests::{Harness, secs};

/// `widths` writes a result that is no JSON number; `scale` reads its parents' results as
/// numbers; `resize` reads its own payload as one.
fn handlers() -> ServeMux {
    let mut mux = ServeMux::new();
    mux.handle_fn("widths", |ctx: TaskContext, _task: Task| async move {
        ctx.result_writer().write("six hundred and forty").await?;
        Ok(())
    });
    mux.handle_fn("scale", |ctx: TaskContext, _task: Task| async move {
        for parent in ctx.parent_results().await? {
            let _width: Option<u32> = parent.json_result()?;
        }
        Ok(())
    });
    mux.handle_fn("resize", |_ctx: TaskContext, task: Task| async move {
        let _width: u32 = task.json_payload()?;
        Ok::<_, HandlerError>(())
    });
    mux
}

#[tokio::test(start_paused = true)]
async fn a_payload_and_a_parent_result_that_do_not_decode_are_archived_at_once_alike() {
    let h = Harness::new();
    let mut server = Server::new(h.broker.clone(), h.config("default", 2)).unwrap();
    server.start(handlers()).unwrap();
    let retried = TaskOptions::new().max_retry(25);
    let flow = Flow::task(Task::new("widths", ""), TaskOptions::new().task_id("widths"))
        .then(Flow::task(Task::new("scale", ""), retried.clone().task_id("scale")));
    FlowProducer::new(h.broker.clone()).with_clock(h.clock.clone()).enqueue(&flow).await.unwrap();
    h.client.enqueue(&Task::new("resize", "wide"), retried.task_id("resize")).await.unwrap();

    let queue = QueueName::from_static("default");
    let archived = |id: &'static str| {
        let (broker, queue) = (h.broker.clone(), queue.clone());
        async move { broker.task_info(&queue, &TaskId::from_static(id)).await.is_ok_and(|t| t.state == TaskState::Archived) }
    };
    h.eventually(secs(30), "both tasks archived", || async { archived("scale").await && archived("resize").await })
        .await;
    server.shutdown().await;

    let scale = h.broker.task_info(&queue, &TaskId::from_static("scale")).await.unwrap();
    let resize = h.broker.task_info(&queue, &TaskId::from_static("resize")).await.unwrap();
    for task in [&scale, &resize] {
        assert_eq!(task.retried, 0, "{}: archived at its first attempt", task.id);
        let error = task.last_error.as_deref().unwrap_or_default();
        assert!(error.contains("does not decode as u32") && error.ends_with(": skip retry for the task"), "{error}");
    }
    assert!(scale.last_error.unwrap().starts_with(r#"result of parent task "widths" in queue "default""#));
    assert!(resize.last_error.unwrap().starts_with(r#"payload of task type "resize""#));
}

/// A job bound to its type name.
#[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
struct Resize {
    url: String,
    width: u32,
}

impl asynq_core::Job for Resize {
    const TYPE_NAME: &'static str = "image:resize";
}

#[tokio::test(start_paused = true)]
async fn a_job_reaches_its_handler_decoded_and_a_longer_type_name_does_not() {
    let h = Harness::new();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut mux = ServeMux::new();
    let recorded = seen.clone();
    mux.handle_job(move |_ctx: TaskContext, job: Resize| {
        recorded.lock().unwrap().push((job.url, job.width));
        async { Ok::<_, HandlerError>(()) }
    });
    let mut server = Server::new(h.broker.clone(), h.config("default", 2)).unwrap();
    server.start(mux).unwrap();
    let job = Resize { url: "cat.png".into(), width: 640 };
    h.client.enqueue_job(&job, TaskOptions::new().task_id("job")).await.unwrap();
    // A type that merely starts with the job's is not the job's: no handler, so it is retried.
    h.client.enqueue(&Task::json("image:resize:v2", &job).unwrap(), TaskOptions::new().task_id("v2")).await.unwrap();

    let queue = QueueName::from_static("default");
    h.eventually(secs(30), "the job ran and the other task failed once", || async {
        let job_gone = h.broker.task_info(&queue, &TaskId::from_static("job")).await.is_err();
        let v2 = h.broker.task_info(&queue, &TaskId::from_static("v2")).await;
        job_gone && v2.is_ok_and(|t| t.state == TaskState::Retry)
    })
    .await;
    server.shutdown().await;
    assert_eq!(seen.lock().unwrap().as_slice(), [("cat.png".to_owned(), 640)]);
    let v2 = h.broker.task_info(&queue, &TaskId::from_static("v2")).await.unwrap();
    assert!(v2.last_error.as_deref().unwrap_or_default().contains("handler not found"), "{:?}", v2.last_error);
}
