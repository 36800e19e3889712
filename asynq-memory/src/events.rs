//! Task event logs for [`MemoryBroker`]: one capped log per queue that keeps one, written by the
//! queue's own changes under the broker's lock, so events come in the order of the changes.
//! IDs are numbered as Redis Streams number entries (the clock's millisecond, then a sequence
//! within it); the cap is kept exactly, where Redis keeps a few more.

use super::*;
use asynq_core::Progress;
use asynq_core::broker::EventLog;
use asynq_core::events::{EventCap, EventId, EventKind, EventPage, EventPosition, QueueEvent};
use asynq_core::time::unix_nanos;
use std::collections::VecDeque;

/// One queue's log.
#[derive(Debug)]
pub(crate) struct EventStream {
    cap: EventCap,
    events: VecDeque<QueueEvent>,
    /// The last ID given, so that IDs grow even if the clock steps back.
    last: Option<EventId>,
    /// The newest ID trimmed away.
    trimmed: Option<EventId>,
}

impl EventStream {
    pub(crate) fn new(cap: EventCap) -> Self {
        Self { cap, events: VecDeque::new(), last: None, trimmed: None }
    }

    pub(crate) fn cap(&self) -> EventCap {
        self.cap
    }

    pub(crate) fn set_cap(&mut self, cap: EventCap) {
        self.cap = cap;
        self.trim();
    }

    /// Appends an event written at `now`.
    pub(crate) fn push(
        &mut self,
        now: SystemTime,
        kind: EventKind,
        task: &StoredTask,
        error: Option<&str>,
        progress: Option<&Progress>,
    ) {
        self.push_named(now, kind, task, error, progress, None);
    }

    /// Appends an event written at `now` that names a step or a signal.
    pub(crate) fn push_named(
        &mut self,
        now: SystemTime,
        kind: EventKind,
        task: &StoredTask,
        error: Option<&str>,
        progress: Option<&Progress>,
        name: Option<&str>,
    ) {
        let millis = u64::try_from(unix_nanos(now) / 1_000_000).unwrap_or_default();
        let id = match self.last {
            Some(last) if last.millis() >= millis => EventId::new(last.millis(), last.seq() + 1),
            _ => EventId::new(millis, 0),
        };
        self.last = Some(id);
        self.events.push_back(QueueEvent {
            id,
            kind,
            task_id: task.id.to_string(),
            task_type: task.type_name.clone(),
            error: error.map(str::to_owned),
            progress: progress.cloned(),
            name: name.map(str::to_owned),
        });
        self.trim();
    }

    fn trim(&mut self) {
        while self.events.len() > self.cap.get() as usize {
            self.trimmed = self.events.pop_front().map(|event| event.id);
        }
    }

    /// Up to `max` events from `from`.
    pub(crate) fn read(&self, from: EventPosition, max: usize) -> EventPage {
        let after = match from {
            EventPosition::Oldest => None,
            EventPosition::After(id) => Some(id),
            EventPosition::Latest => {
                let next = self.last.map_or(EventPosition::Oldest, EventPosition::After);
                return EventPage { events: Vec::new(), next, missed: false };
            }
        };
        let events: Vec<QueueEvent> =
            self.events.iter().filter(|event| after.is_none_or(|after| event.id > after)).take(max).cloned().collect();
        // The rule Redis can apply: the event read last is gone (trimming goes oldest first).
        let missed = after.is_some_and(|after| self.trimmed.is_some_and(|trimmed| trimmed >= after));
        let next = events.last().map_or(from, |event| EventPosition::After(event.id));
        EventPage { events, next, missed }
    }
}

#[async_trait]
impl EventLog for MemoryBroker {
    async fn set_event_cap(&self, queue: &QueueName, cap: Option<EventCap>) -> Result<()> {
        let mut state = self.state();
        let q = state.queue_entry(queue);
        match (cap, &mut q.events) {
            (None, events) => *events = None,
            (Some(cap), Some(log)) => log.set_cap(cap),
            (Some(cap), events) => *events = Some(EventStream::new(cap)),
        }
        Ok(())
    }

    async fn event_caps(&self) -> Result<Vec<(QueueName, EventCap)>> {
        let state = self.state();
        let mut caps: Vec<(QueueName, EventCap)> = state
            .queues
            .iter()
            .filter_map(|(name, queue)| queue.events.as_ref().map(|log| (name.clone(), log.cap())))
            .collect();
        caps.sort();
        Ok(caps)
    }

    async fn read_events(&self, queue: &QueueName, from: EventPosition, max: usize) -> Result<EventPage> {
        let state = self.state();
        Ok(match state.queues.get(queue).and_then(|q| q.events.as_ref()) {
            Some(log) => log.read(from, max),
            None => EventPage { events: Vec::new(), next: from, missed: false },
        })
    }
}
