//! The task lifecycle as a pure transition function.
//!
//! ```text
//! enqueue ──► pending ──dequeue──► active ──done──► (deleted)
//! schedule ─► scheduled ─forward─► pending          active ──complete──► completed ──expire──► (deleted)
//! group ────► aggregating ─aggregate─► (deleted)    active ──retry──► retry ──forward──► pending
//!                                                   active ──archive──► archived
//!                                                   active ──requeue──► pending
//!                                                   active ──park──► scheduled (a handler's sleep or signal wait)
//!                       (a lease that expired before any handler started the task also requeues)
//! inspector: run (scheduled, retry, archived, aggregating, completed → pending),
//!            archive (any state but active → archived), delete (any state but active → deleted)
//! ```

use std::fmt;
use std::str::FromStr;

/// The state of a stored task. The discriminants are Go asynq's `TaskState` numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TaskState {
    /// Leased to a worker and running.
    Active = 1,
    /// Ready to run.
    Pending = 2,
    /// Waiting for its process time.
    Scheduled = 3,
    /// Failed, waiting for its retry time.
    Retry = 4,
    /// Failed for good (or skipped retry); kept for inspection.
    Archived = 5,
    /// Succeeded and kept for its retention period.
    Completed = 6,
    /// Waiting in a group to be aggregated.
    Aggregating = 7,
    /// A workflow task waiting for the tasks it depends on to settle (ours: Go asynq has no
    /// such state, and no list of Go's holds such a task).
    Waiting = 8,
}

impl TaskState {
    /// Every state Go asynq has, in its numeric order: those every broker lists. A workflow's
    /// waiting tasks ([`TaskState::Waiting`]) are listed apart.
    pub const ALL: [TaskState; 7] = [
        TaskState::Active,
        TaskState::Pending,
        TaskState::Scheduled,
        TaskState::Retry,
        TaskState::Archived,
        TaskState::Completed,
        TaskState::Aggregating,
    ];

    /// The lowercase name asynq stores in the task's `state` field.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Active => "active",
            TaskState::Pending => "pending",
            TaskState::Scheduled => "scheduled",
            TaskState::Retry => "retry",
            TaskState::Archived => "archived",
            TaskState::Completed => "completed",
            TaskState::Aggregating => "aggregating",
            TaskState::Waiting => "waiting",
        }
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing an unknown state name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown task state {0:?}; expected one of active, pending, scheduled, retry, archived, completed, aggregating, \
     waiting"
)]
pub struct UnknownState(pub String);

impl FromStr for TaskState {
    type Err = UnknownState;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TaskState::ALL
            .into_iter()
            .chain([TaskState::Waiting])
            .find(|st| st.as_str() == s)
            .ok_or_else(|| UnknownState(s.to_owned()))
    }
}

/// Something that happens to a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    /// A client enqueues it, ready now.
    Enqueue,
    /// A client enqueues it for later.
    Schedule,
    /// A client enqueues it into a group.
    AddToGroup,
    /// The forwarder finds it due and makes it pending.
    Forward,
    /// The forwarder finds it due and it belongs to a group.
    ForwardToGroup,
    /// A worker takes it.
    Dequeue,
    /// Its handler succeeded without retention, or revoked it.
    Done,
    /// Its handler succeeded and it has a retention period.
    Complete,
    /// Its handler failed (or its lease expired) with retries left.
    Retry,
    /// It failed for good, or an operator archived it.
    Archive,
    /// Its worker gave it back unfinished (shutdown).
    Requeue,
    /// Its group was aggregated into a new task.
    Aggregate,
    /// An operator ran it now.
    Run,
    /// An operator deleted it.
    Delete,
    /// Its retention ran out.
    Expire,
    /// Its handler parked it until a time (a durable sleep, or a wait for a signal): it is
    /// scheduled again, charged nothing.
    Park,
}

impl Event {
    /// Every event.
    pub const ALL: [Event; 16] = [
        Event::Enqueue,
        Event::Schedule,
        Event::AddToGroup,
        Event::Forward,
        Event::ForwardToGroup,
        Event::Dequeue,
        Event::Done,
        Event::Complete,
        Event::Retry,
        Event::Archive,
        Event::Requeue,
        Event::Aggregate,
        Event::Run,
        Event::Delete,
        Event::Expire,
        Event::Park,
    ];
}

/// Where a task is after an event: in a state, or gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Next {
    /// The task is stored in this state.
    State(TaskState),
    /// The task no longer exists.
    Deleted,
}

/// An event that cannot happen to a task in its current state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cannot apply {event:?} to a task that is {}", from.map_or("absent", TaskState::as_str))]
pub struct InvalidTransition {
    /// The state the task was in (`None`: it did not exist).
    pub from: Option<TaskState>,
    /// The event.
    pub event: Event,
}

/// Applies `event` to a task in state `from` (`None` for a task that does not exist yet).
pub fn transition(from: Option<TaskState>, event: Event) -> Result<Next, InvalidTransition> {
    use Event as E;
    use TaskState as S;
    let next = match (from, event) {
        (None, E::Enqueue) => Next::State(S::Pending),
        (None, E::Schedule) => Next::State(S::Scheduled),
        (None, E::AddToGroup) => Next::State(S::Aggregating),
        (Some(S::Scheduled | S::Retry), E::Forward) => Next::State(S::Pending),
        (Some(S::Scheduled | S::Retry), E::ForwardToGroup) => Next::State(S::Aggregating),
        (Some(S::Pending), E::Dequeue) => Next::State(S::Active),
        (Some(S::Active), E::Done) => Next::Deleted,
        (Some(S::Active), E::Complete) => Next::State(S::Completed),
        (Some(S::Active), E::Retry) => Next::State(S::Retry),
        (Some(S::Active), E::Requeue) => Next::State(S::Pending),
        (Some(S::Active), E::Park) => Next::State(S::Scheduled),
        (Some(s), E::Archive) if s != S::Archived => Next::State(S::Archived),
        (Some(S::Aggregating), E::Aggregate) => Next::Deleted,
        (Some(S::Scheduled | S::Retry | S::Archived | S::Aggregating | S::Completed), E::Run) => {
            Next::State(S::Pending)
        }
        (Some(s), E::Delete) if s != S::Active => Next::Deleted,
        (Some(S::Completed), E::Expire) => Next::Deleted,
        (from, event) => return Err(InvalidTransition { from, event }),
    };
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    /// The edges of the lifecycle as the wire-format spec (section 4) draws them, written out
    /// independently of `transition`. `None` stands for "no task".
    fn allowed_edges() -> HashSet<(Option<TaskState>, Option<TaskState>)> {
        use TaskState::*;
        let mut edges = HashSet::new();
        for created in [Pending, Scheduled, Aggregating] {
            edges.insert((None, Some(created)));
        }
        for (from, to) in [
            (Pending, Active),
            (Scheduled, Pending),
            (Scheduled, Aggregating),
            (Retry, Pending),
            (Retry, Aggregating),
            (Active, Completed),
            (Active, Retry),
            (Active, Archived),
            (Active, Pending),
            (Active, Scheduled),
        ] {
            edges.insert((Some(from), Some(to)));
        }
        // Operator actions: run, archive and delete anything that is not running.
        for s in [Scheduled, Retry, Archived, Aggregating, Completed] {
            edges.insert((Some(s), Some(Pending)));
        }
        for s in [Pending, Scheduled, Retry, Aggregating, Completed] {
            edges.insert((Some(s), Some(Archived)));
        }
        for s in [Pending, Scheduled, Retry, Archived, Aggregating, Completed, Active] {
            edges.insert((Some(s), None));
        }
        edges
    }

    proptest! {
        #[test]
        fn no_sequence_of_events_takes_a_forbidden_edge(events in proptest::collection::vec(0..Event::ALL.len(), 0..64)) {
            let allowed = allowed_edges();
            let mut state = None;
            for i in events {
                let event = Event::ALL[i];
                if let Ok(next) = transition(state, event) {
                    let to = match next { Next::State(s) => Some(s), Next::Deleted => None };
                    prop_assert!(allowed.contains(&(state, to)), "{state:?} --{event:?}--> {to:?} is not in the spec");
                    // Only a dequeue makes a task active, and an active task is never deleted
                    // by an operator.
                    prop_assert!(to != Some(TaskState::Active) || event == Event::Dequeue);
                    prop_assert!(!(state == Some(TaskState::Active) && event == Event::Delete));
                    state = to;
                }
            }
        }
    }

    #[test]
    fn every_state_round_trips_through_its_name() {
        for s in TaskState::ALL {
            assert_eq!(s.as_str().parse::<TaskState>(), Ok(s));
        }
        assert!("running".parse::<TaskState>().is_err());
    }

    #[test]
    fn active_tasks_cannot_be_deleted_or_run() {
        assert!(transition(Some(TaskState::Active), Event::Delete).is_err());
        assert!(transition(Some(TaskState::Active), Event::Run).is_err());
        assert!(transition(Some(TaskState::Pending), Event::Run).is_err());
        assert!(transition(Some(TaskState::Archived), Event::Archive).is_err());
    }
}
