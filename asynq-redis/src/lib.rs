//! The Redis broker for asynq, wire-compatible with Go asynq v0.26: the same keys, the same
//! script semantics, the same protobuf messages.
//!
//! This crate is being built in steps. Available now: the key layout ([`keys`]) and the
//! protobuf messages ([`proto`]), both pinned by golden tests against what Go asynq writes.
#![doc(test(attr(deny(warnings))))]

pub mod keys;
pub mod proto;
