//! The capability to keep task event logs.

use crate::events::{EventCap, EventPage, EventPosition};
use crate::{QueueName, Result};
use async_trait::async_trait;

/// The broker role that keeps task event logs. A capability
/// ([`Capabilities::as_event_log`](crate::broker::Capabilities::as_event_log)).
#[async_trait]
pub trait EventLog: Send + Sync {
    /// Starts keeping the last `cap` events of `queue`'s tasks (trimming what the log holds now
    /// to it), or with `None` stops and drops the log. Writers in other processes follow within
    /// [`EVENT_SETTINGS_DELAY`](crate::events::EVENT_SETTINGS_DELAY) (the backend documents its own bound).
    async fn set_event_cap(&self, queue: &QueueName, cap: Option<EventCap>) -> Result<()>;

    /// The queues that keep event logs, with their caps, by name.
    async fn event_caps(&self) -> Result<Vec<(QueueName, EventCap)>>;

    /// Up to `max` events of `queue`'s log from `from`, oldest first; with `max` 0 none, but
    /// [`EventPage::next`] and [`EventPage::missed`] as a read of more would give them. A queue
    /// without a log reads as an empty one.
    async fn read_events(&self, queue: &QueueName, from: EventPosition, max: usize) -> Result<EventPage>;
}
