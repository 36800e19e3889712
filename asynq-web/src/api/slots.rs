//! Shared concurrency limits: the tasks holding slots of a key now, and until when.

use super::{path, timestamp};
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use asynq_core::slots::SlotKey;
use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use serde::Serialize;

/// One task holding a slot.
#[derive(Debug, Serialize)]
pub(crate) struct HolderView {
    task_id: String,
    /// When its hold runs out unless the task's heartbeat renews it.
    held_until: String,
}

/// The holders of a key's slots.
#[derive(Debug, Serialize)]
pub(crate) struct SlotHolders {
    key: String,
    /// Soonest expiry first.
    holders: Vec<HolderView>,
}

/// A slot key from the path: a [`SlotKey`], or 400 `invalid_slot_key`.
fn slot_key(key: &str) -> ApiResult<SlotKey> {
    SlotKey::new(key).map_err(|e| ApiError::bad_request("invalid_slot_key", e.to_string()))
}

/// `GET /api/slots/{key}`: the tasks holding a slot of the shared concurrency limit `key`
/// (`type:<task type>` for `Config::shared_type_concurrency`) now; none on a broker without
/// shared limits.
pub(crate) async fn holders(
    State(app): State<AppState>,
    key: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<SlotHolders>> {
    let key = slot_key(&path(key)?)?;
    let holders = app
        .inspector
        .slot_holders(key.as_str())
        .await?
        .into_iter()
        .map(|(id, until)| HolderView { task_id: id.into_string(), held_until: timestamp(until) })
        .collect();
    Ok(Json(SlotHolders { key: key.as_str().to_owned(), holders }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_keys_are_checked() {
        assert_eq!(slot_key("type:pdf:render").map(|k| k.as_str().to_owned()).ok().as_deref(), Some("type:pdf:render"));
        for bad in [" ", "a\u{7}b"] {
            assert_eq!(slot_key(bad).map_err(|e| e.code()), Err("invalid_slot_key"), "{bad:?}");
        }
        let long = "k".repeat(asynq_core::slots::MAX_SLOT_KEY_LEN + 1);
        assert_eq!(slot_key(&long).map_err(|e| e.code()), Err("invalid_slot_key"));
    }
}
