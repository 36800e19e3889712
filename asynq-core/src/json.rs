//! Typed payloads: tasks built from any `Serialize` value and payloads decoded into any
//! `Deserialize` type, as JSON (what Go asynq's users put in payloads, so Go and Rust share
//! typed tasks).

use crate::error::{Error, Result};
use crate::task::{Task, TaskInfo};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt;

impl Task {
    /// A task of type `type_name` whose payload is `payload` encoded as JSON.
    ///
    /// Errors: [`Error::InvalidArgument`] (field `"payload"`) when `payload` cannot be encoded,
    /// e.g. a map with non-string keys.
    ///
    /// ```
    /// use asynq_core::Task;
    ///
    /// #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    /// struct Welcome {
    ///     user_id: u64,
    /// }
    ///
    /// let task = Task::json("email:welcome", &Welcome { user_id: 42 })?;
    /// assert_eq!(task.payload().as_ref(), br#"{"user_id":42}"#);
    /// assert_eq!(task.json_payload::<Welcome>()?, Welcome { user_id: 42 });
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn json<T: Serialize + ?Sized>(type_name: impl Into<String>, payload: &T) -> Result<Self> {
        let bytes = serde_json::to_vec(payload)
            .map_err(|e| Error::invalid("payload", format!("cannot be encoded as JSON: {e}")))?;
        Ok(Task::new(type_name, bytes))
    }

    /// The payload decoded from JSON into `T`.
    ///
    /// Errors: a [`PayloadError`] naming the task type, `T` and what serde reported.
    pub fn json_payload<T: DeserializeOwned>(&self) -> Result<T, PayloadError> {
        decode(Decoded::Payload(self.type_name().to_owned()), self.payload())
    }
}

impl TaskInfo {
    /// The payload decoded from JSON into `T`.
    ///
    /// Errors: a [`PayloadError`] naming the task type, `T` and what serde reported.
    pub fn json_payload<T: DeserializeOwned>(&self) -> Result<T, PayloadError> {
        decode(Decoded::Payload(self.type_name.clone()), &self.payload)
    }

    /// The result the handler wrote, decoded from JSON into `T`; `None` when it wrote none.
    ///
    /// Errors: a [`PayloadError`] naming the task type, `T` and what serde reported.
    pub fn json_result<T: DeserializeOwned>(&self) -> Result<Option<T>, PayloadError> {
        self.result.as_deref().map(|bytes| decode(Decoded::Result(self.type_name.clone()), bytes)).transpose()
    }
}

impl crate::workflow::ParentResult {
    /// The result the parent's handler wrote, decoded from JSON into `T`; `None` when it wrote
    /// none, failed, or its outcome is not known.
    ///
    /// Errors: a [`PayloadError`] naming the parent (its queue and ID), `T` and what serde
    /// reported. A handler that returns it (with `?`) fails its task for good, as one whose own
    /// payload does not decode: the same bytes will not decode any better on a retry.
    pub fn json_result<T: DeserializeOwned>(&self) -> Result<Option<T>, PayloadError> {
        match &self.outcome {
            crate::workflow::ParentOutcome::Succeeded { result: Some(bytes) } => {
                decode(Decoded::ParentResult(self.task.clone()), bytes).map(Some)
            }
            _ => Ok(None),
        }
    }
}

pub(crate) fn decode<T: DeserializeOwned>(what: Decoded, bytes: &[u8]) -> Result<T, PayloadError> {
    serde_json::from_slice(bytes).map_err(|source| PayloadError { what, target: std::any::type_name::<T>(), source })
}

/// What was decoded.
#[derive(Debug)]
pub(crate) enum Decoded {
    /// The payload of a task of this type.
    Payload(String),
    /// The result of a task of this type.
    Result(String),
    /// The result of a workflow task's parent.
    ParentResult(crate::workflow::TaskRef),
}

/// A payload or result (a task's own, or a workflow parent's) that does not decode as the type
/// a caller asked for.
///
/// A worker whose handler returns one fails the task without retrying it, whichever data it
/// was: the same bytes will not decode any better on the next attempt.
#[derive(Debug)]
pub struct PayloadError {
    pub(crate) what: Decoded,
    pub(crate) target: &'static str,
    pub(crate) source: serde_json::Error,
}

impl PayloadError {
    /// The type name of the task whose payload or result failed to decode; empty for a
    /// workflow parent's result (see [`PayloadError::parent`]).
    pub fn task_type(&self) -> &str {
        match &self.what {
            Decoded::Payload(task_type) | Decoded::Result(task_type) => task_type,
            Decoded::ParentResult(_) => "",
        }
    }

    /// The workflow parent whose result failed to decode, if that is what it was.
    pub fn parent(&self) -> Option<&crate::workflow::TaskRef> {
        match &self.what {
            Decoded::ParentResult(parent) => Some(parent),
            _ => None,
        }
    }

    /// The Rust type it was decoded into, as `std::any::type_name` spells it.
    pub fn target(&self) -> &'static str {
        self.target
    }
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.what {
            Decoded::Payload(task_type) => write!(f, "payload of task type {task_type:?}")?,
            Decoded::Result(task_type) => write!(f, "result of task type {task_type:?}")?,
            Decoded::ParentResult(parent) => {
                write!(f, "result of parent task {:?} in queue {:?}", parent.id.as_str(), parent.queue.as_str())?
            }
        }
        write!(f, " does not decode as {}: {}", self.target, self.source)
    }
}

impl std::error::Error for PayloadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Resize {
        url: String,
        width: u32,
    }

    #[test]
    fn a_payload_round_trips_through_json() {
        let task = Task::json("image:resize", &Resize { url: "a.png".into(), width: 640 }).unwrap();
        assert_eq!(task.type_name(), "image:resize");
        assert_eq!(task.json_payload::<Resize>().unwrap(), Resize { url: "a.png".into(), width: 640 });
    }

    #[test]
    fn a_payload_that_does_not_decode_names_the_task_type_the_rust_type_and_the_field() {
        let task = Task::new("image:resize", r#"{"url":"a.png"}"#);
        let err = task.json_payload::<Resize>().unwrap_err();
        assert_eq!(err.task_type(), "image:resize");
        assert!(err.target().ends_with("Resize"), "{}", err.target());
        let message = err.to_string();
        assert!(message.contains(r#"task type "image:resize""#), "{message}");
        assert!(message.contains("Resize"), "{message}");
        assert!(message.contains("missing field `width`"), "{message}");
    }

    #[test]
    fn a_value_json_cannot_encode_is_an_invalid_payload() {
        let mut map = HashMap::new();
        map.insert((1, 2), "tuple keys are not strings");
        let err = Task::json("t", &map).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { field: "payload", .. }), "{err:?}");
    }

    #[test]
    fn results_decode_and_a_missing_result_is_none() {
        let msg = crate::StoredTask::new(crate::TaskId::from_static("a"), crate::QueueName::default(), "image:resize");
        let mut info = TaskInfo::new(&msg, crate::TaskState::Completed, None, None);
        assert_eq!(info.json_result::<u32>().unwrap(), None);
        info.result = Some(bytes::Bytes::from_static(b"640"));
        assert_eq!(info.json_result::<u32>().unwrap(), Some(640));
        info.result = Some(bytes::Bytes::from_static(b"wide"));
        let err = info.json_result::<u32>().unwrap_err();
        assert_eq!((err.task_type(), err.parent()), ("image:resize", None));
        assert!(err.to_string().starts_with(r#"result of task type "image:resize" does not decode as u32: "#), "{err}");
    }

    #[test]
    fn a_parent_result_that_does_not_decode_names_the_parent_in_the_same_words() {
        use crate::workflow::{ParentOutcome, ParentResult, TaskRef};
        let task =
            TaskRef { queue: crate::QueueName::from_static("images"), id: crate::TaskId::from_static("resize-a") };
        let parent = ParentResult {
            task: task.clone(),
            outcome: ParentOutcome::Succeeded { result: Some(bytes::Bytes::from_static(b"not json")) },
        };
        let err = parent.json_result::<Resize>().unwrap_err();
        assert_eq!((err.task_type(), err.parent()), ("", Some(&task)));
        let message = err.to_string();
        assert!(
            message.starts_with(r#"result of parent task "resize-a" in queue "images" does not decode as "#),
            "{message}"
        );
        assert!(message.contains("Resize"), "{message}");
    }
}
