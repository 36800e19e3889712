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
        decode(self.type_name(), self.payload())
    }
}

impl TaskInfo {
    /// The payload decoded from JSON into `T`.
    ///
    /// Errors: a [`PayloadError`] naming the task type, `T` and what serde reported.
    pub fn json_payload<T: DeserializeOwned>(&self) -> Result<T, PayloadError> {
        decode(&self.type_name, &self.payload)
    }

    /// The result the handler wrote, decoded from JSON into `T`; `None` when it wrote none.
    ///
    /// Errors: a [`PayloadError`] naming the task type, `T` and what serde reported.
    pub fn json_result<T: DeserializeOwned>(&self) -> Result<Option<T>, PayloadError> {
        self.result.as_deref().map(|bytes| decode(&self.type_name, bytes)).transpose()
    }
}

impl crate::workflow::ParentResult {
    /// The result the parent's handler wrote, decoded from JSON into `T`; `None` when it wrote
    /// none, failed, or its outcome is not known. A [`PayloadError`] names the parent's task ID
    /// where it would name a task type.
    ///
    /// Errors: a [`PayloadError`] naming the parent, `T` and what serde reported.
    pub fn json_result<T: DeserializeOwned>(&self) -> Result<Option<T>, PayloadError> {
        match &self.outcome {
            crate::workflow::ParentOutcome::Succeeded { result: Some(bytes) } => {
                decode(&format!("parent task {}", self.task.id), bytes).map(Some)
            }
            _ => Ok(None),
        }
    }
}

fn decode<T: DeserializeOwned>(task_type: &str, bytes: &[u8]) -> Result<T, PayloadError> {
    serde_json::from_slice(bytes).map_err(|source| PayloadError {
        task_type: task_type.to_owned(),
        target: std::any::type_name::<T>(),
        source,
    })
}

/// A payload (or result) that does not decode as the type a caller asked for.
///
/// A worker that meets one fails the task without retrying it: the same bytes will not decode
/// any better on the next attempt.
#[derive(Debug)]
pub struct PayloadError {
    task_type: String,
    target: &'static str,
    source: serde_json::Error,
}

impl PayloadError {
    /// The type name of the task whose payload failed to decode.
    pub fn task_type(&self) -> &str {
        &self.task_type
    }

    /// The Rust type it was decoded into, as `std::any::type_name` spells it.
    pub fn target(&self) -> &'static str {
        self.target
    }
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "payload of task type {:?} does not decode as {}: {}", self.task_type, self.target, self.source)
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
    }
}
