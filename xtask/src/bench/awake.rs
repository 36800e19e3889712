//! `--awake`: keeps idle CPUs polling instead of halting for the length of the run, through
//! Linux's CPU latency QoS (`/dev/cpu_dma_latency` held at 0 µs, as `tuned`'s
//! latency-performance profile does).
//!
//! On a virtual machine whose idle vCPUs halt without polling first (Firecracker guests with
//! `haltpoll.guest_halt_poll_ns=0`, like this project's), every wake-up of an idle CPU is a
//! VM exit: a task queue that waits for Redis round trip by round trip pays two of them per
//! round trip, which costs far more than the work itself. Runtimes differ in how they wait:
//! Go's scheduler spins a little before it sleeps, tokio's workers sleep at once. Keeping the
//! CPUs awake measures the implementations rather than the hypervisor's wake-ups.

use std::fs::File;
use std::io::Write as _;

use crate::step;

/// Where Linux takes CPU latency requests: a 32-bit number of microseconds, held for as long
/// as the file stays open.
const CPU_LATENCY_QOS: &str = "/dev/cpu_dma_latency";

/// The request, while it holds; dropping it lets idle CPUs halt again.
#[derive(Debug)]
pub(crate) struct Awake {
    request: Option<File>,
}

impl Awake {
    /// Asks for idle CPUs to stay awake when `requested`; where that cannot be done (not
    /// Linux, or not root), a warning and nothing held.
    pub(crate) fn new(requested: bool) -> Self {
        if !requested {
            return Self { request: None };
        }
        let request = File::options().write(true).open(CPU_LATENCY_QOS).and_then(|mut file| {
            file.write_all(&0i32.to_ne_bytes())?;
            Ok(file)
        });
        match request {
            Ok(file) => Self { request: Some(file) },
            Err(e) => {
                step(format_args!("warning: --awake needs to write {CPU_LATENCY_QOS} ({e}); CPUs may halt when idle"));
                Self { request: None }
            }
        }
    }

    /// Whether idle CPUs are kept awake.
    pub(crate) fn is_enabled(&self) -> bool {
        self.request.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_held_unless_asked_for() {
        assert!(!Awake::new(false).is_enabled());
    }
}
