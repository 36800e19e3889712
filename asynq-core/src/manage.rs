//! Operator actions on tasks and queues: run, archive or delete tasks one by one or all of a
//! state, change a scheduled task's payload, remove a queue.

use crate::{Error, GroupName, Result, TaskState};
use std::fmt;

/// The tasks of one queue a bulk action applies to: every task in one state, or every task
/// waiting in one group.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TaskSet {
    /// Every task of the queue in this state. Aggregating tasks are addressed by group instead.
    State(TaskState),
    /// Every task waiting in this group (state aggregating).
    Group(GroupName),
}

impl TaskSet {
    /// The state of the tasks in the set.
    pub fn state(&self) -> TaskState {
        match self {
            TaskSet::State(state) => *state,
            TaskSet::Group(_) => TaskState::Aggregating,
        }
    }
}

impl fmt::Display for TaskSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskSet::State(state) => write!(f, "{state} tasks"),
            TaskSet::Group(group) => write!(f, "aggregating tasks of group {group:?}"),
        }
    }
}

/// A bulk action of [`Manage`](crate::broker::Manage), for [`validate_bulk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BulkAction {
    /// Make the tasks pending ([`Manage::run_all`](crate::broker::Manage::run_all)).
    Run,
    /// Archive the tasks ([`Manage::archive_all`](crate::broker::Manage::archive_all)).
    Archive,
    /// Delete the tasks ([`Manage::delete_all`](crate::broker::Manage::delete_all)).
    Delete,
}

impl BulkAction {
    /// The states whose tasks the action applies to, besides groups (which every action
    /// accepts): Go asynq's `runall`, `archiveall` and `deleteall`.
    pub fn states(self) -> &'static [TaskState] {
        use TaskState::*;
        match self {
            BulkAction::Run => &[Scheduled, Retry, Archived],
            BulkAction::Archive => &[Pending, Scheduled, Retry],
            BulkAction::Delete => &[Pending, Scheduled, Retry, Archived, Completed],
        }
    }

    /// The action as a verb: "run", "archive" or "delete".
    pub fn verb(self) -> &'static str {
        match self {
            BulkAction::Run => "run",
            BulkAction::Archive => "archive",
            BulkAction::Delete => "delete",
        }
    }
}

/// How far a bulk action has come, reported after each of its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct BulkProgress {
    /// Tasks acted on so far.
    pub done: usize,
    /// Tasks the action means to act on: those the set held when it began, at least `done`. An
    /// action never acts on more, so tasks that join the set while it runs may be left.
    pub total: usize,
}

impl BulkProgress {
    /// Progress of `done` tasks out of `total` (raised to `done` when smaller).
    pub fn new(done: usize, total: usize) -> Self {
        Self { done, total: total.max(done) }
    }
}

/// Receives a bulk action's progress after each of its steps.
pub type OnProgress<'a> = &'a (dyn Fn(BulkProgress) + Send + Sync);

/// Refuses a bulk action on a set it does not apply to (active tasks are cancelled, not run,
/// archived or deleted; aggregating tasks are named by group), before anything is touched.
pub fn validate_bulk(action: BulkAction, set: &TaskSet) -> Result<()> {
    match set {
        TaskSet::Group(_) => Ok(()),
        TaskSet::State(TaskState::Aggregating) => {
            Err(Error::invalid("group", format!("to {} aggregating tasks, name their group", action.verb())))
        }
        TaskSet::State(state) if action.states().contains(state) => Ok(()),
        TaskSet::State(state) => {
            let allowed: Vec<&str> = action.states().iter().map(|s| s.as_str()).collect();
            let reason = format!(
                "cannot {} {state} tasks; the states it applies to are {} (and groups)",
                action.verb(),
                allowed.join(", ")
            );
            Err(Error::invalid("state", reason))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_actions_apply_to_go_asynqs_states_and_to_groups() {
        use TaskState::*;
        for action in [BulkAction::Run, BulkAction::Archive, BulkAction::Delete] {
            for state in [Pending, Active, Scheduled, Retry, Archived, Completed, Aggregating] {
                let result = validate_bulk(action, &TaskSet::State(state));
                assert_eq!(result.is_ok(), action.states().contains(&state), "{action:?} {state}");
            }
            assert!(validate_bulk(action, &TaskSet::Group(GroupName::from_static("daily"))).is_ok());
        }
        assert!(validate_bulk(BulkAction::Delete, &TaskSet::State(Active)).is_err());
    }
}
