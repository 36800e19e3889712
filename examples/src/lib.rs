//! Runnable examples of the asynq workspace; see the `examples/` directory. The README's code is
//! compiled here as a doctest, so it cannot drift from the API.

#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
