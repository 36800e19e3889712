//! Typed jobs: a task type name bound to its payload type, so that the producer that enqueues
//! a job and the worker that runs it cannot disagree on either.
//!
//! A [`Job`] is a serde type that names its task type once, in its `impl`. The client enqueues
//! it (`Client::enqueue_job`), the worker's mux routes exactly that type name to a handler that
//! receives the decoded value (`ServeMux::handle_job`), and whoever reads a task back decodes
//! it with [`TaskInfo::job`], which refuses a task of another type. Strings stay for what has
//! no Rust type: tasks of Go producers and handlers, and types chosen at run time.

use crate::error::Result;
use crate::json::{Decoded, PayloadError, decode};
use crate::task::{Task, TaskInfo};
use serde::Serialize;
use serde::de::{DeserializeOwned, Error as _};

/// A payload type bound to the task type name its tasks carry.
///
/// Its tasks are JSON, as [`Task::json`] writes them, so a Go handler of the same type name
/// decodes them as it decodes any JSON payload.
///
/// ```
/// use asynq_core::{Job, Task};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Debug, PartialEq)]
/// struct Resize {
///     url: String,
///     width: u32,
/// }
///
/// impl Job for Resize {
///     const TYPE_NAME: &'static str = "image:resize";
/// }
///
/// let task = Task::job(&Resize { url: "cat.png".into(), width: 640 })?;
/// assert_eq!(task.type_name(), "image:resize");
/// assert_eq!(task.job_payload::<Resize>()?, Resize { url: "cat.png".into(), width: 640 });
///
/// // A task of another type is not a `Resize`, whatever its payload holds.
/// let other = Task::json("image:crop", &Resize { url: "cat.png".into(), width: 640 })?;
/// assert!(other.job_payload::<Resize>().is_err());
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
pub trait Job: Serialize + DeserializeOwned + Send + 'static {
    /// The type name of every task of this job: what Go's handlers and our mux route on, what
    /// `asynq task ls` shows. Checked as any type name is when a task is enqueued.
    const TYPE_NAME: &'static str;
}

impl Task {
    /// A task of `J`'s type name whose payload is `job` encoded as JSON.
    ///
    /// Errors: [`Error::InvalidArgument`](crate::Error::InvalidArgument) (field `"payload"`)
    /// when `job` cannot be encoded, as [`Task::json`].
    pub fn job<J: Job>(job: &J) -> Result<Self> {
        Task::json(J::TYPE_NAME, job)
    }
}

/// What [`Task::job`] and [`TaskInfo::job`] share: the type name checked, then the payload.
fn decode_job<J: Job>(type_name: &str, payload: &[u8]) -> std::result::Result<J, PayloadError> {
    if type_name != J::TYPE_NAME {
        return Err(PayloadError {
            what: Decoded::Payload(type_name.to_owned()),
            target: std::any::type_name::<J>(),
            source: serde_json::Error::custom(format!(
                "it is a task of type {type_name:?}, not of the job's type {:?}",
                J::TYPE_NAME
            )),
        });
    }
    decode(Decoded::Payload(type_name.to_owned()), payload)
}

impl Task {
    /// The payload decoded as the job `J`, when the task is of `J`'s type name.
    ///
    /// Errors: a [`PayloadError`] naming the task type and `J` when the task is of another
    /// type, or when its payload does not decode.
    pub fn job_payload<J: Job>(&self) -> std::result::Result<J, PayloadError> {
        decode_job(self.type_name(), self.payload())
    }
}

impl TaskInfo {
    /// The payload decoded as the job `J`, when the task is of `J`'s type name.
    ///
    /// Errors: a [`PayloadError`] naming the task type and `J` when the task is of another
    /// type, or when its payload does not decode.
    pub fn job<J: Job>(&self) -> std::result::Result<J, PayloadError> {
        decode_job(&self.type_name, &self.payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Welcome {
        user_id: u64,
    }

    impl Job for Welcome {
        const TYPE_NAME: &'static str = "email:welcome";
    }

    #[test]
    fn a_job_is_a_json_task_of_its_type_name() {
        let task = Task::job(&Welcome { user_id: 42 }).unwrap();
        assert_eq!(task.type_name(), "email:welcome");
        assert_eq!(task.payload().as_ref(), br#"{"user_id":42}"#);
        assert_eq!(task.job_payload::<Welcome>().unwrap(), Welcome { user_id: 42 });
    }

    #[test]
    fn a_task_of_another_type_is_refused_naming_both_types() {
        let task = Task::json("email:goodbye", &Welcome { user_id: 42 }).unwrap();
        let err = task.job_payload::<Welcome>().unwrap_err();
        assert_eq!(err.task_type(), "email:goodbye");
        let message = err.to_string();
        assert!(message.contains(r#"not of the job's type "email:welcome""#), "{message}");
        assert!(message.contains("Welcome"), "{message}");
    }

    #[test]
    fn task_info_decodes_a_job_and_says_why_it_cannot() {
        let msg = crate::StoredTask::new(crate::TaskId::from_static("a"), crate::QueueName::default(), "email:welcome");
        let mut info = TaskInfo::new(&msg, crate::TaskState::Pending, None, None);
        info.payload = bytes::Bytes::from_static(br#"{"user_id":7}"#);
        assert_eq!(info.job::<Welcome>().unwrap(), Welcome { user_id: 7 });
        info.payload = bytes::Bytes::from_static(br#"{"user":7}"#);
        assert!(info.job::<Welcome>().unwrap_err().to_string().contains("missing field `user_id`"));
    }
}
