//! Knobs for the workspace's own tests (the feature `testing`, outside semantic versioning).

use asynq_core::QueueName;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

static FETCH_TOKENS: LazyLock<Mutex<HashMap<QueueName, u32>>> = LazyLock::new(Default::default);

/// Makes every fetch of `queue`, in this process, draw `token` (in `1..2^19`) for the started
/// lease score it writes, so that a test can make two fetches draw the same.
pub fn fix_fetch_token(queue: &QueueName, token: u32) {
    assert!((1..1 << 19).contains(&token), "a fetch token is in 1..2^19");
    FETCH_TOKENS.lock().unwrap_or_else(PoisonError::into_inner).insert(queue.clone(), token);
}

/// The token fixed for `queue`, if any.
pub(crate) fn fixed_fetch_token(queue: &QueueName) -> Option<u32> {
    FETCH_TOKENS.lock().unwrap_or_else(PoisonError::into_inner).get(queue).copied()
}
