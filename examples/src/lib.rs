//! Runnable examples; see the `examples/` directory.
