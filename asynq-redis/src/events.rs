//! Task event logs for [`RedisBroker`]: a stream per queue, `<ns>:{q}:events`, written by the
//! scripts that change tasks, in the same step as the change, while `<ns>:event_caps` names the
//! queue. Each script takes the stream as its last key and the cap as its last argument (see
//! `scripts/events.lua`); an empty cap means no log, so a queue without one costs one empty
//! argument per call and no Redis work.
//!
//! Every process keeps the settings it read from `<ns>:event_caps` for at most
//! [`EVENT_SETTINGS_DELAY`]: a queue's log starts (or stops) being written by other processes
//! within that long after [`EventLog::set_event_cap`]. Events of tasks a Go server runs are not
//! written: Go's scripts know nothing of the log.

use crate::RedisBroker;
use crate::error::{broker_error, unexpected};
use crate::scripts::ScriptCall;
use async_trait::async_trait;
use asynq_core::broker::EventLog;
use asynq_core::events::{EVENT_SETTINGS_DELAY, EventCap, EventId, EventKind, EventPage, EventPosition, QueueEvent};
use asynq_core::{QueueName, Result};
use redis::{AsyncCommands, Script};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, PoisonError, RwLock};

static READ_EVENTS: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/read_events.lua")));

/// The caps of the queues that keep logs, as this process last read them.
#[derive(Debug, Default)]
pub(crate) struct EventSettings {
    snapshot: RwLock<Option<Snapshot>>,
    /// Set while one caller refreshes a stale snapshot, so that the others go on with it.
    refreshing: AtomicBool,
}

#[derive(Debug, Clone)]
struct Snapshot {
    read_at: tokio::time::Instant,
    caps: EventCaps,
}

/// The caps of the queues that keep logs, by queue name.
#[derive(Debug, Clone, Default)]
pub(crate) struct EventCaps(Arc<HashMap<String, u32>>);

impl EventCaps {
    /// The last script argument for a call on `queue`: its cap, or "" for no log.
    pub(crate) fn arg(&self, queue: &str) -> String {
        self.0.get(queue).map(u32::to_string).unwrap_or_default()
    }

    /// Whether `queue` keeps a log.
    pub(crate) fn logs(&self, queue: &str) -> bool {
        self.0.contains_key(queue)
    }
}

impl RedisBroker {
    /// The queues' caps, read again when this process's copy is older than
    /// [`EVENT_SETTINGS_DELAY`] (by one caller; the others meanwhile use the copy).
    pub(crate) async fn event_caps_now(&self) -> Result<EventCaps> {
        let settings = self.event_settings();
        let current = settings.snapshot.read().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(snapshot) = &current
            && (snapshot.read_at.elapsed() < EVENT_SETTINGS_DELAY || settings.refreshing.swap(true, Ordering::AcqRel))
        {
            return Ok(snapshot.caps.clone());
        }
        let read = {
            // Cleared however the read ends, a caller's future dropped mid-read included.
            let _refreshing = Refreshing(&settings.refreshing);
            self.read_event_caps().await
        };
        match (read, current) {
            (Ok(caps), _) => {
                let snapshot = Snapshot { read_at: tokio::time::Instant::now(), caps: caps.clone() };
                *settings.snapshot.write().unwrap_or_else(PoisonError::into_inner) = Some(snapshot);
                Ok(caps)
            }
            // The call that needs the settings will meet the same trouble; the old copy is
            // still the best guess.
            (Err(_), Some(stale)) => Ok(stale.caps),
            (Err(e), None) => Err(e),
        }
    }

    async fn read_event_caps(&self) -> Result<EventCaps> {
        let caps: HashMap<String, u32> = self
            .conn()
            .hgetall(self.namespace().event_caps())
            .await
            .map_err(|e| broker_error("read the event log settings", e))?;
        Ok(EventCaps(Arc::new(caps)))
    }
}

/// Clears the refreshing flag when dropped.
struct Refreshing<'a>(&'a AtomicBool);

impl Drop for Refreshing<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

#[async_trait]
impl EventLog for RedisBroker {
    /// Writes the setting and trims the stream to it, then drops this process's copy so that its
    /// next call reads it again; turning a log off also deletes its stream.
    async fn set_event_cap(&self, queue: &QueueName, cap: Option<EventCap>) -> Result<()> {
        let settings = self.namespace().event_caps();
        let mut conn = self.conn();
        match cap {
            Some(cap) => {
                let _: i64 = conn
                    .hset(settings, queue.as_str(), cap.get())
                    .await
                    .map_err(|e| broker_error("set an event cap", e))?;
                // A lower cap applies to what the log holds now, as the memory broker's does.
                let _: i64 = redis::cmd("XTRIM")
                    .arg(self.queue_keys(queue).events())
                    .arg("MAXLEN")
                    .arg(cap.get())
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| broker_error("trim an event log to its cap", e))?;
            }
            None => {
                let _: i64 =
                    conn.hdel(settings, queue.as_str()).await.map_err(|e| broker_error("disable events", e))?;
                let _: i64 = conn
                    .del(self.queue_keys(queue).events())
                    .await
                    .map_err(|e| broker_error("delete an event log", e))?;
            }
        }
        *self.event_settings().snapshot.write().unwrap_or_else(PoisonError::into_inner) = None;
        Ok(())
    }

    async fn event_caps(&self) -> Result<Vec<(QueueName, EventCap)>> {
        let caps = self.read_event_caps().await?;
        let mut listed = Vec::with_capacity(caps.0.len());
        for (queue, cap) in caps.0.iter() {
            // A field written by hand that names no queue or holds no cap configures nothing.
            if let (Ok(queue), Ok(cap)) = (QueueName::new(queue.as_str()), EventCap::new(*cap)) {
                listed.push((queue, cap));
            }
        }
        listed.sort();
        Ok(listed)
    }

    async fn read_events(&self, queue: &QueueName, from: EventPosition, max: usize) -> Result<EventPage> {
        let start = match from {
            EventPosition::Oldest => "-".to_owned(),
            EventPosition::After(id) => format!("({id}"),
            EventPosition::Latest => "$".to_owned(),
        };
        let mut call = ScriptCall::new(&READ_EVENTS);
        call.key(self.queue_keys(queue).events()).arg(start).arg(max);
        let (missed, newest, entries): (i64, String, Vec<(String, HashMap<String, Vec<u8>>)>) =
            call.run(&mut self.conn(), "read events").await?;
        let mut events = Vec::with_capacity(entries.len());
        for (id, fields) in entries {
            let id: EventId = id.parse().map_err(|_| unexpected("read events", format!("stream ID {id:?}")))?;
            // An entry written by hand that names no kind is no event of ours.
            if let Some(event) = task_event(id, fields) {
                events.push(event);
            }
        }
        let next = match (from, events.last(), newest.parse::<EventId>()) {
            (_, Some(last), _) => EventPosition::After(last.id),
            (EventPosition::Latest, None, Ok(newest)) => EventPosition::After(newest),
            // An empty log: what comes next is all there will be.
            (EventPosition::Latest, None, Err(_)) => EventPosition::Oldest,
            (from, None, _) => from,
        };
        Ok(EventPage { events, next, missed: missed == 1 })
    }
}

/// The event of stream entry `id` with `fields`, if it is one of ours.
fn task_event(id: EventId, mut fields: HashMap<String, Vec<u8>>) -> Option<QueueEvent> {
    let mut text = |name: &str| fields.remove(name).map(|value| String::from_utf8_lossy(&value).into_owned());
    let kind = EventKind::from_name(&text("kind")?)?;
    let error = text("error").filter(|error| !error.is_empty());
    let progress = text("progress").and_then(|report| crate::progress::decode(report.as_bytes()));
    let name = text("name");
    let (task_id, task_type) = (text("task")?, text("type").unwrap_or_default());
    Some(QueueEvent { id, kind, task_id, task_type, error, progress, name })
}
