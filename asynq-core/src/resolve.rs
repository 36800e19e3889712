//! Resolving a task and the options given at enqueue time into the request a broker stores.

use crate::error::{Error, Result};
use crate::names::{GroupName, QueueName, TaskId};
use crate::options::{Debounce, EnqueueRequest, Placement, ProcessAt, Replace, TaskOptions, check_duration};
use crate::priority::TaskPriority;
use crate::stored::StoredTask;
use crate::task::Task;
use crate::time::whole_secs;
use crate::{DEFAULT_MAX_RETRY, DEFAULT_TIMEOUT, MAX_DURATION};
use std::time::{Duration, SystemTime};

impl EnqueueRequest {
    /// The task as its handler will see it (type, payload, headers): what a test double checks.
    pub fn task(&self) -> Task {
        Task::from_message(&self.message)
    }
}

/// Validates `task` with `overrides` applied over its own options and turns it into the request
/// a broker stores, following Go asynq's client: a task due later is scheduled, a grouped task
/// aggregates, anything else is pending.
///
/// `new_id` supplies the task ID when no [`TaskOptions::task_id`] is given. Nothing is written
/// anywhere; every error is an [`Error::InvalidArgument`].
pub fn resolve_enqueue(
    task: &Task,
    overrides: &TaskOptions,
    now: SystemTime,
    new_id: impl FnOnce() -> String,
) -> Result<EnqueueRequest> {
    let opts = task.options().merge(overrides);
    if task.type_name().trim().is_empty() {
        return Err(Error::invalid("task type", "task type name cannot be empty"));
    }
    let queue = QueueName::new(opts.queue_name())?;
    let id = TaskId::new(opts.task_id.clone().unwrap_or_else(new_id))?;
    let group = opts.group.clone().map(GroupName::new).transpose()?;
    let max_retry = opts.max_retry.unwrap_or(DEFAULT_MAX_RETRY);
    if i32::try_from(max_retry).is_err() {
        return Err(Error::invalid("max retry", format!("{max_retry} is more than Go's limit of {}", i32::MAX)));
    }
    if let Some(timeout) = opts.timeout
        && timeout < Duration::from_secs(1)
    {
        return Err(Error::invalid("timeout", format!("{timeout:?} is less than one second")));
    }
    if let Some(deadline) = opts.deadline
        && deadline <= now
    {
        return Err(Error::invalid("deadline", "deadline is in the past"));
    }
    if let Some(retention) = opts.retention
        && retention < Duration::from_secs(1)
    {
        return Err(Error::invalid("retention", format!("{retention:?} is less than one second")));
    }
    if let Some(ttl) = opts.unique
        && ttl < Duration::from_secs(1)
    {
        return Err(Error::invalid("unique", "unique TTL cannot be less than 1s"));
    }
    for (field, d) in [("timeout", opts.timeout), ("retention", opts.retention), ("unique", opts.unique)] {
        d.map_or(Ok(()), |d| check_duration(field, d))?;
    }
    // A deadline or process time beyond the longest duration from now is as absurd as such a
    // duration; one before now is refused (deadline) or means now (process time).
    let latest = now.checked_add(MAX_DURATION);
    if let Some(deadline) = opts.deadline
        && latest.is_none_or(|latest| deadline > latest)
    {
        return Err(Error::invalid("deadline", "deadline is more than Go's longest duration away"));
    }
    let priority = opts.priority.map(TaskPriority::new).transpose()?.unwrap_or_default();
    let debounce = opts.debounce.clone().map(|(key, window)| Debounce::new(key, window)).transpose()?;
    if debounce.is_some() {
        let clash = [
            ("process at", opts.process_at.is_some()),
            ("unique", opts.unique.is_some()),
            ("group", opts.group.is_some()),
        ];
        if let Some((option, _)) = clash.iter().find(|(_, set)| *set) {
            return Err(Error::invalid(
                "debounce",
                format!("a debounced task runs its window after the last enqueue; it cannot take the {option} option"),
            ));
        }
    }
    let process_at = match (&debounce, opts.process_at) {
        (Some(debounce), _) => now
            .checked_add(debounce.window())
            .ok_or_else(|| Error::invalid("debounce window", format!("now + {:?} overflows", debounce.window())))?,
        (None, None) => now,
        (None, Some(ProcessAt::At(t))) if latest.is_none_or(|latest| t > latest) => {
            return Err(Error::invalid("process at", "process time is more than Go's longest duration away"));
        }
        (None, Some(ProcessAt::At(t))) => t,
        (None, Some(ProcessAt::In(d))) => {
            check_duration("process in", d)?;
            now.checked_add(d).ok_or_else(|| Error::invalid("process in", format!("now + {d:?} overflows")))?
        }
    };
    let timeout = match (opts.timeout, opts.deadline) {
        (None, None) => Some(DEFAULT_TIMEOUT),
        (t, _) => t,
    };
    let message = StoredTask {
        type_name: task.type_name().to_owned(),
        payload: task.payload().clone(),
        headers: task.headers().clone(),
        id,
        queue,
        max_retry,
        retried: 0,
        last_error: None,
        last_failed_at: None,
        timeout: timeout.map(|t| Duration::from_secs(t.as_secs())),
        deadline: opts.deadline.map(whole_secs),
        unique_key: None,
        group: group.clone(),
        retention: opts.retention.map(|r| Duration::from_secs(r.as_secs())),
        completed_at: None,
    };
    let placement = if process_at > now {
        Placement::Scheduled { process_at }
    } else if let Some(group) = group {
        Placement::Grouped { group }
    } else {
        Placement::Pending
    };
    let unique_ttl = opts.unique.map(|ttl| {
        let lock = match placement {
            Placement::Scheduled { process_at } => process_at.duration_since(now).unwrap_or_default() + ttl,
            _ => ttl,
        };
        Duration::from_secs(lock.as_secs().max(1))
    });
    let request =
        EnqueueRequest { message, placement, unique_ttl, replace: debounce.map(Replace::Debounced), priority };
    request.check_priority()?;
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::MAX_DEBOUNCE_KEY_LEN;
    use crate::time::from_unix_secs;

    fn now() -> SystemTime {
        from_unix_secs(1_000_000)
    }

    fn resolve(task: &Task, opts: &TaskOptions) -> Result<EnqueueRequest> {
        resolve_enqueue(task, opts, now(), || "generated".to_owned())
    }

    #[test]
    fn defaults_follow_go_asynq() {
        let req = resolve(&Task::new("t", "p"), &TaskOptions::new()).unwrap();
        let m = &req.message;
        assert_eq!(
            (m.queue.as_str(), m.max_retry, m.timeout, m.deadline),
            ("default", 25, Some(DEFAULT_TIMEOUT), None)
        );
        assert_eq!((m.id.as_str(), m.retention, m.group.as_deref()), ("generated", None, None));
        assert_eq!(req.placement, Placement::Pending);
        assert_eq!(req.unique_ttl, None);
    }

    #[test]
    fn enqueue_options_override_task_options() {
        let task = Task::new("t", "p")
            .with_options(TaskOptions::new().queue("a").max_retry(3).retention(Duration::from_secs(60)));
        let req = resolve(&task, &TaskOptions::new().queue("b")).unwrap();
        let m = &req.message;
        assert_eq!((m.queue.as_str(), m.max_retry, m.retention), ("b", 3, Some(Duration::from_secs(60))));
    }

    #[test]
    fn a_deadline_alone_means_no_default_timeout() {
        let deadline = now() + Duration::from_secs(90);
        let req = resolve(&Task::new("t", ""), &TaskOptions::new().deadline(deadline)).unwrap();
        assert_eq!((req.message.timeout, req.message.deadline), (None, Some(deadline)));
        let req = resolve(&Task::new("t", ""), &TaskOptions::new().deadline(deadline).timeout(Duration::from_secs(10)))
            .unwrap();
        assert_eq!((req.message.timeout, req.message.deadline), (Some(Duration::from_secs(10)), Some(deadline)));
    }

    #[test]
    fn placement_follows_process_time_then_group() {
        let later = TaskOptions::new().process_in(Duration::from_secs(30)).group("g");
        let req = resolve(&Task::new("t", ""), &later).unwrap();
        assert_eq!(req.placement, Placement::Scheduled { process_at: now() + Duration::from_secs(30) });
        let req = resolve(&Task::new("t", ""), &TaskOptions::new().group("g")).unwrap();
        assert_eq!(req.placement, Placement::Grouped { group: GroupName::from_static("g") });
        let past = TaskOptions::new().process_at(now() - Duration::from_secs(5));
        assert_eq!(resolve(&Task::new("t", ""), &past).unwrap().placement, Placement::Pending);
    }

    #[test]
    fn unique_lock_of_a_scheduled_task_lasts_until_due_plus_ttl() {
        let opts = TaskOptions::new().process_in(Duration::from_secs(3600)).unique(Duration::from_secs(600));
        assert_eq!(resolve(&Task::new("t", ""), &opts).unwrap().unique_ttl, Some(Duration::from_secs(4200)));
        let opts = TaskOptions::new().unique(Duration::from_millis(1500));
        assert_eq!(resolve(&Task::new("t", ""), &opts).unwrap().unique_ttl, Some(Duration::from_secs(1)));
    }

    #[test]
    fn bad_input_is_refused() {
        let field = |task: Task, opts: TaskOptions| match resolve(&task, &opts) {
            Err(Error::InvalidArgument { field, .. }) => field,
            other => panic!("expected an invalid argument, got {other:?}"),
        };
        assert_eq!(field(Task::new(" ", ""), TaskOptions::new()), "task type");
        assert_eq!(field(Task::new("t", ""), TaskOptions::new().queue("")), "queue");
        assert_eq!(field(Task::new("t", ""), TaskOptions::new().queue("a{b}")), "queue");
        assert_eq!(field(Task::new("t", ""), TaskOptions::new().task_id("  ")), "task ID");
        assert_eq!(field(Task::new("t", ""), TaskOptions::new().max_retry(u32::MAX)), "max retry");
        assert_eq!(field(Task::new("t", ""), TaskOptions::new().timeout(Duration::ZERO)), "timeout");
        assert_eq!(field(Task::new("t", ""), TaskOptions::new().deadline(now())), "deadline");
        assert_eq!(field(Task::new("t", ""), TaskOptions::new().unique(Duration::from_millis(10))), "unique");
        assert_eq!(field(Task::new("t", ""), TaskOptions::new().retention(Duration::from_millis(10))), "retention");
        assert_eq!(field(Task::new("t", ""), TaskOptions::new().group("")), "group");
    }

    #[test]
    fn a_debounced_task_is_scheduled_its_window_ahead_and_replaces_by_key() {
        let window = Duration::from_secs(30);
        let req = resolve(&Task::new("t", ""), &TaskOptions::new().debounce("user:42", window)).unwrap();
        assert_eq!(req.placement, Placement::Scheduled { process_at: now() + window });
        let Some(Replace::Debounced(debounce)) = &req.replace else { panic!("{:?}", req.replace) };
        assert_eq!((debounce.key(), debounce.window()), ("user:42", window));
        let defaulted = Task::new("t", "").with_options(TaskOptions::new().debounce("k", window));
        assert!(resolve(&defaulted, &TaskOptions::new()).unwrap().replace.is_some(), "a task's own option counts");
        assert_eq!(resolve(&Task::new("t", ""), &TaskOptions::new()).unwrap().replace, None);
    }

    #[test]
    fn bad_debounces_are_refused() {
        let field = |opts: TaskOptions| match resolve(&Task::new("t", ""), &opts) {
            Err(Error::InvalidArgument { field, .. }) => field,
            other => panic!("expected an invalid argument, got {other:?}"),
        };
        let window = Duration::from_secs(5);
        let long = "k".repeat(MAX_DEBOUNCE_KEY_LEN + 1);
        assert_eq!(field(TaskOptions::new().debounce(" ", window)), "debounce key");
        assert_eq!(field(TaskOptions::new().debounce(long, window)), "debounce key");
        assert_eq!(field(TaskOptions::new().debounce("a\nb", window)), "debounce key");
        assert_eq!(field(TaskOptions::new().debounce("k", Duration::ZERO)), "debounce window");
        assert_eq!(field(TaskOptions::new().debounce("k", MAX_DURATION + Duration::from_secs(1))), "debounce window");
        assert_eq!(field(TaskOptions::new().debounce("k", window).process_in(window)), "debounce");
        assert_eq!(field(TaskOptions::new().debounce("k", window).unique(window)), "debounce");
        assert_eq!(field(TaskOptions::new().debounce("k", window).group("g")), "debounce");
        assert!(TaskOptions::new().debounce("k", window).go_option_strings().is_empty(), "Go cannot read it");
    }

    #[test]
    fn a_replacement_cannot_be_unique_or_grouped() {
        let mut req = resolve(&Task::new("t", ""), &TaskOptions::new().unique(Duration::from_secs(5))).unwrap();
        assert!(req.check_replacement().is_ok(), "replacing nothing, anything goes");
        req.replace = Some(Replace::Waiting);
        assert!(matches!(req.check_replacement(), Err(Error::InvalidArgument { field: "unique", .. })));
        let mut req = resolve(&Task::new("t", ""), &TaskOptions::new().group("g")).unwrap();
        req.replace = Some(Replace::Waiting);
        assert!(matches!(req.check_replacement(), Err(Error::InvalidArgument { field: "group", .. })));
    }

    #[test]
    fn a_priority_is_checked_once_and_carried_by_the_request() {
        let field = |opts: TaskOptions| match resolve(&Task::new("t", ""), &opts) {
            Err(Error::InvalidArgument { field, .. }) => field,
            other => panic!("expected an invalid argument, got {other:?}"),
        };
        assert_eq!(field(TaskOptions::new().priority(11)), "priority");
        assert_eq!(field(TaskOptions::new().priority(-11)), "priority");
        assert_eq!(field(TaskOptions::new().priority(i32::MAX)), "priority");
        assert_eq!(field(TaskOptions::new().priority(1).group("g")), "priority");
        let priority = |opts: TaskOptions| resolve(&Task::new("t", ""), &opts).unwrap().priority.get();
        assert_eq!(priority(TaskOptions::new()), 0);
        assert_eq!(priority(TaskOptions::new().priority(10)), 10);
        assert_eq!(priority(TaskOptions::new().priority(-10)), -10);
        assert_eq!(priority(TaskOptions::new().priority(0).group("g")), 0, "the default is no priority");
        assert_eq!(priority(TaskOptions::new().priority(3).process_in(Duration::from_secs(60))), 3);
        assert_eq!(priority(TaskOptions::new().priority(3).unique(Duration::from_secs(60))), 3);
        assert_eq!(priority(TaskOptions::new().priority(3).debounce("k", Duration::from_secs(60))), 3);
        let task = Task::new("t", "").with_options(TaskOptions::new().priority(2));
        assert_eq!(resolve(&task, &TaskOptions::new()).unwrap().priority.get(), 2, "a task's own option counts");
        assert_eq!(resolve(&task, &TaskOptions::new().priority(-1)).unwrap().priority.get(), -1, "and is overridden");
        assert!(TaskOptions::new().priority(5).go_option_strings().is_empty(), "Go cannot read it");
        let mut grouped = resolve(&Task::new("t", ""), &TaskOptions::new().group("g")).unwrap();
        grouped.priority = TaskPriority::MAX;
        assert!(matches!(grouped.check_priority(), Err(Error::InvalidArgument { field: "priority", .. })));
    }

    #[test]
    fn durations_past_what_go_can_hold_are_refused() {
        let field = |opts: TaskOptions| match resolve(&Task::new("t", ""), &opts) {
            Err(Error::InvalidArgument { field, .. }) => field,
            other => panic!("expected an invalid argument, got {other:?}"),
        };
        let too_long = MAX_DURATION + Duration::from_secs(1);
        assert_eq!(field(TaskOptions::new().timeout(too_long)), "timeout");
        assert_eq!(field(TaskOptions::new().timeout(Duration::MAX)), "timeout");
        assert_eq!(field(TaskOptions::new().retention(Duration::MAX)), "retention");
        assert_eq!(field(TaskOptions::new().unique(Duration::MAX)), "unique");
        assert_eq!(field(TaskOptions::new().process_in(Duration::MAX)), "process in");
        assert_eq!(field(TaskOptions::new().process_in(too_long)), "process in");
        assert_eq!(field(TaskOptions::new().deadline(now() + too_long)), "deadline");
        assert_eq!(field(TaskOptions::new().process_at(now() + too_long)), "process at");
        // A deadline before the Unix epoch is in the past.
        let before_epoch = std::time::UNIX_EPOCH - Duration::from_secs(1);
        assert_eq!(field(TaskOptions::new().deadline(before_epoch)), "deadline");
        // The longest durations themselves are accepted, and stored in whole seconds.
        let req =
            resolve(&Task::new("t", ""), &TaskOptions::new().timeout(MAX_DURATION).retention(MAX_DURATION)).unwrap();
        let longest = Some(Duration::from_secs(9_223_372_036));
        assert_eq!((req.message.timeout, req.message.retention), (longest, longest));
        assert!(resolve(&Task::new("t", ""), &TaskOptions::new().process_in(MAX_DURATION)).is_ok());
    }
}
