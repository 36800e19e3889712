//! Runnable examples of the asynq workspace; see the `examples/` directory. Each uses the
//! `rasynq` facade, as an application would.
