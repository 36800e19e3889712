//! The time-bounded claim a worker holds on an active task.

use crate::Clock;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::SystemTime;

/// A worker's claim on an active task, valid until its expiry.
///
/// The heartbeater [extends](Lease::extend) valid leases; once the expiry has passed, the lease
/// can no longer be extended, and [`Lease::notify_expired`] wakes everything waiting on
/// [`Lease::expired`] (once). A worker whose lease expired must not write the task's outcome:
/// another server may already have recovered it. Clones share the same lease.
#[derive(Clone)]
pub struct Lease {
    inner: Arc<Inner>,
}

struct Inner {
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
}

struct State {
    expiry: SystemTime,
    notified: bool,
    waiters: Vec<Waker>,
}

impl Lease {
    /// A lease that expires at `expiry`, judged by `clock`.
    pub fn new(expiry: SystemTime, clock: Arc<dyn Clock>) -> Self {
        let state = State { expiry, notified: false, waiters: Vec::new() };
        Self { inner: Arc::new(Inner { clock, state: Mutex::new(state) }) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// When the lease expires.
    pub fn expiry(&self) -> SystemTime {
        self.state().expiry
    }

    /// True until the clock passes the expiry.
    pub fn is_valid(&self) -> bool {
        let now = self.inner.clock.now();
        now <= self.state().expiry
    }

    /// Moves the expiry to `expiry` if the lease is still valid; returns whether it did.
    pub fn extend(&self, expiry: SystemTime) -> bool {
        let now = self.inner.clock.now();
        let mut state = self.state();
        if now > state.expiry || state.notified {
            return false;
        }
        state.expiry = expiry;
        true
    }

    /// If the lease has expired, wakes the waiters of [`Lease::expired`] (the first time only)
    /// and returns true; returns false while it is still valid.
    pub fn notify_expired(&self) -> bool {
        let now = self.inner.clock.now();
        let waiters = {
            let mut state = self.state();
            if now <= state.expiry {
                return false;
            }
            if state.notified {
                return true;
            }
            state.notified = true;
            std::mem::take(&mut state.waiters)
        };
        waiters.into_iter().for_each(Waker::wake);
        true
    }

    /// Resolves once [`Lease::notify_expired`] has fired.
    pub fn expired(&self) -> Expired {
        Expired { lease: self.clone() }
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state();
        f.debug_struct("Lease").field("expiry", &state.expiry).field("notified", &state.notified).finish()
    }
}

/// The future returned by [`Lease::expired`].
#[derive(Debug)]
#[must_use = "futures do nothing unless polled"]
pub struct Expired {
    lease: Lease,
}

impl Future for Expired {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.lease.state();
        if state.notified {
            return Poll::Ready(());
        }
        if !state.waiters.iter().any(|w| w.will_wake(cx.waker())) {
            state.waiters.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SimulatedClock;
    use futures::FutureExt;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn a_lease_extends_while_valid_and_notifies_once_after_expiry() {
        let clock = SimulatedClock::new(UNIX_EPOCH + Duration::from_secs(100));
        let lease = Lease::new(UNIX_EPOCH + Duration::from_secs(130), Arc::new(clock.clone()));
        let mut expired = lease.expired();
        assert!((&mut expired).now_or_never().is_none());
        assert!(!lease.notify_expired());

        clock.advance(Duration::from_secs(30));
        assert!(lease.is_valid(), "valid up to and including the expiry");
        assert!(lease.extend(UNIX_EPOCH + Duration::from_secs(160)));

        clock.advance(Duration::from_secs(31));
        assert!(!lease.is_valid());
        assert!(!lease.extend(UNIX_EPOCH + Duration::from_secs(200)));
        assert!(lease.notify_expired());
        assert!(expired.now_or_never().is_some());
        assert!(lease.notify_expired());
        assert!(lease.expired().now_or_never().is_some());
    }
}
