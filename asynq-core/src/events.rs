//! Task events: a durable, capped log per queue of what happened to its tasks (enqueued,
//! started, progress, succeeded, retried, requeued, archived, deleted, and the durable steps'
//! step, parked and signalled), for other processes to follow, as BullMQ's `QueueEvents` do.
//!
//! The log is opt-in per queue ([`EventLog::set_event_cap`](crate::broker::EventLog::set_event_cap)): a queue without it costs nothing.
//! Each event is written in the same atomic step as the change it reports, so a reader sees
//! every change the log kept, in order. The log keeps the last [`EventCap`] events; a
//! reader resumes from the [`EventId`] it read last, and learns from [`EventPage::missed`] when
//! the events after it were trimmed before it came back. Go asynq neither writes nor reads it:
//! tasks a Go server runs leave no events.

use crate::{Error, Progress, Result};
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What happened to a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventKind {
    /// Stored: pending, scheduled, or waiting in a group (also when a task is replaced or
    /// debounced in place).
    Enqueued,
    /// Taken by a worker.
    Started,
    /// Its handler reported progress.
    Progress,
    /// Its handler succeeded (deleted, or kept as completed).
    Succeeded,
    /// An attempt failed and a retry is scheduled.
    Retried,
    /// Given back to pending without an attempt charged (a shutdown, or a recovered lease).
    Requeued,
    /// Archived: out of retries, told to skip them, or archived by an operator.
    Archived,
    /// Deleted by an operator.
    Deleted,
    /// Its handler recorded the result of a durable step ([`QueueEvent::name`] names it).
    Step,
    /// Its handler parked it, scheduled to go on without a retry charged: a durable sleep, or a
    /// wait for the signal [`QueueEvent::name`] names.
    Parked,
    /// A signal was sent to it ([`QueueEvent::name`] names it); it went on at once if it was
    /// parked waiting for it.
    Signalled,
}

impl EventKind {
    /// Every kind.
    pub const ALL: [EventKind; 11] = [
        EventKind::Enqueued,
        EventKind::Started,
        EventKind::Progress,
        EventKind::Succeeded,
        EventKind::Retried,
        EventKind::Requeued,
        EventKind::Archived,
        EventKind::Deleted,
        EventKind::Step,
        EventKind::Parked,
        EventKind::Signalled,
    ];

    /// Its name in the log: `enqueued`, `started`, …, `step`, `parked`, `signalled`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Enqueued => "enqueued",
            EventKind::Started => "started",
            EventKind::Progress => "progress",
            EventKind::Succeeded => "succeeded",
            EventKind::Retried => "retried",
            EventKind::Requeued => "requeued",
            EventKind::Archived => "archived",
            EventKind::Deleted => "deleted",
            EventKind::Step => "step",
            EventKind::Parked => "parked",
            EventKind::Signalled => "signalled",
        }
    }

    /// The kind named `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an event sits in its queue's log, as Redis Streams number entries: the Unix
/// millisecond it was written and a sequence number within that millisecond. IDs grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventId {
    millis: u64,
    seq: u64,
}

impl EventId {
    /// The ID `millis`-`seq`.
    pub fn new(millis: u64, seq: u64) -> Self {
        Self { millis, seq }
    }

    /// When the event was written.
    pub fn at(self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.millis)
    }

    /// The Unix millisecond it was written.
    pub fn millis(self) -> u64 {
        self.millis
    }

    /// Its sequence number within that millisecond.
    pub fn seq(self) -> u64 {
        self.seq
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.millis, self.seq)
    }
}

impl FromStr for EventId {
    type Err = Error;

    /// Reads `<millis>-<seq>` (or `<millis>`, sequence 0).
    fn from_str(s: &str) -> Result<Self> {
        let bad = || Error::invalid("event id", format!("{s:?} is not <unix millis>-<sequence>"));
        let (millis, seq) = s.split_once('-').unwrap_or((s, "0"));
        Ok(Self { millis: millis.parse().map_err(|_| bad())?, seq: seq.parse().map_err(|_| bad())? })
    }
}

/// About how many events a queue's log keeps: between 1 and [`EventCap::MAX`]. A backend may
/// keep a few more (Redis trims whole stream nodes, `MAXLEN ~`), never fewer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventCap(u32);

impl EventCap {
    /// The most a log may be asked to keep.
    pub const MAX: u32 = 10_000_000;
    /// What a log keeps unless told otherwise.
    pub const DEFAULT: EventCap = EventCap(10_000);

    /// A cap of `events`.
    ///
    /// Errors: [`Error::InvalidArgument`] for zero (a log that keeps nothing) or more than
    /// [`EventCap::MAX`].
    pub fn new(events: u32) -> Result<Self> {
        match events {
            0 => Err(Error::invalid("event cap", "a log that keeps no events would be no log; disable it instead")),
            n if n > Self::MAX => Err(Error::invalid("event cap", format!("{n} events, more than {}", Self::MAX))),
            n => Ok(Self(n)),
        }
    }

    /// How many events.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl Default for EventCap {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl fmt::Display for EventCap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Where a read starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventPosition {
    /// At the oldest event the log keeps.
    Oldest,
    /// After the event with this ID: where a reader that read it resumes.
    After(EventId),
    /// After the newest event now in the log: only what happens from now on.
    Latest,
}

impl fmt::Display for EventPosition {
    /// `oldest`, `latest`, or the ID of the event to read after.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventPosition::Oldest => f.write_str("oldest"),
            EventPosition::After(id) => id.fmt(f),
            EventPosition::Latest => f.write_str("latest"),
        }
    }
}

impl FromStr for EventPosition {
    type Err = Error;

    /// Reads what [`Display`](fmt::Display) writes: `oldest`, `latest`, or an event ID.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "oldest" => Ok(EventPosition::Oldest),
            "latest" => Ok(EventPosition::Latest),
            id => id.parse().map(EventPosition::After),
        }
    }
}

/// One event of a queue's log.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueEvent {
    /// Where it sits in the log; its time is [`EventId::at`].
    pub id: EventId,
    /// What happened.
    pub kind: EventKind,
    /// The task's ID.
    pub task_id: String,
    /// The task's type name.
    pub task_type: String,
    /// The error of the failed attempt, for [`EventKind::Retried`] and [`EventKind::Archived`]
    /// after a failure.
    pub error: Option<String>,
    /// The report, for [`EventKind::Progress`].
    pub progress: Option<Progress>,
    /// The step's name for [`EventKind::Step`], the signal's for [`EventKind::Signalled`] and for
    /// [`EventKind::Parked`] when the task waits for one; `None` otherwise.
    pub name: Option<String>,
}

/// What one read returned.
#[derive(Debug, Clone, PartialEq)]
pub struct EventPage {
    /// The events, oldest first.
    pub events: Vec<QueueEvent>,
    /// Where the next read resumes: after the last event returned, or where this read started
    /// if it returned none.
    pub next: EventPosition,
    /// Whether events after the position read from may have been trimmed before they were
    /// read: the event read last was trimmed since (or the log was turned off meanwhile). A
    /// log keeps no record of which events it trimmed, so this is told when the reader's own
    /// last event went, even if nothing after it did.
    pub missed: bool,
}

/// How long a process at most keeps writing (or not writing) a queue's events after another
/// process turned its log on or off.
pub const EVENT_SETTINGS_DELAY: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_read_back_and_order_by_time_then_sequence() {
        let id: EventId = "1700000000123-4".parse().unwrap();
        assert_eq!((id.millis(), id.seq()), (1_700_000_000_123, 4));
        assert_eq!(id.to_string(), "1700000000123-4");
        assert_eq!("17".parse::<EventId>().unwrap(), EventId::new(17, 0));
        assert!(EventId::new(1, 9) < EventId::new(2, 0));
        assert!(EventId::new(2, 0) < EventId::new(2, 1));
        for bad in ["", "x-1", "1-", "-1", "1-2-3"] {
            assert!(bad.parse::<EventId>().is_err(), "{bad:?}");
        }
        for position in [EventPosition::Oldest, EventPosition::Latest, EventPosition::After(id)] {
            assert_eq!(position.to_string().parse::<EventPosition>().unwrap(), position);
        }
        assert!("newest".parse::<EventPosition>().is_err());
    }

    #[test]
    fn caps_refuse_zero_and_too_many() {
        assert!(EventCap::new(0).is_err());
        assert!(EventCap::new(EventCap::MAX + 1).is_err());
        assert_eq!(EventCap::new(EventCap::MAX).unwrap().get(), EventCap::MAX);
        assert_eq!(EventCap::default().get(), 10_000);
    }

    #[test]
    fn kinds_round_trip_through_their_names() {
        for kind in EventKind::ALL {
            assert_eq!(EventKind::from_name(kind.as_str()), Some(kind));
        }
        assert_eq!(EventKind::from_name("exploded"), None);
    }
}
