//! What the inspector shows of the model: an [`Observation`] of every queue, and its text.

use super::vocab::*;
use super::{DAY_SECS, Model, Queue, ZSet};
use asynq_core::TaskState;
use std::collections::BTreeSet;
use std::fmt;

impl Model {
    /// What the inspector shows now; with `lookups`, including every task looked up by ID.
    pub fn observe(&self, lookups: bool) -> Observation {
        let views = QUEUES.iter().map(|name| (name.to_string(), self.view(name))).collect();
        let mut found = Vec::new();
        let mut steps = Vec::new();
        let mut signals = Vec::new();
        if lookups {
            for queue in QUEUES {
                for id in IDS {
                    let task = self.queues.get(queue).and_then(|q| q.tasks.get(id));
                    let info = self.check_known(queue).and_then(|()| {
                        task.map(|t| {
                            let parked = if t.state == TaskState::Scheduled { t.parked } else { None };
                            (t.state, t.retried, parked)
                        })
                        .ok_or(ErrorKind::TaskNotFound)
                    });
                    found.push((queue.to_owned(), id.to_owned(), info));
                    let names = task.map(|t| t.steps.iter().cloned().collect()).unwrap_or_default();
                    steps.push((queue.to_owned(), id.to_owned(), names));
                    let sent = SIGNALS
                        .iter()
                        .filter(|name| task.is_some_and(|t| t.signals.contains(**name)))
                        .map(|name| name.to_string())
                        .collect();
                    signals.push((queue.to_owned(), id.to_owned(), sent));
                }
            }
        }
        Observation { queues: self.known.iter().cloned().collect(), views, lookups: found, steps, signals }
    }

    pub(super) fn view(&self, name: &str) -> QueueView {
        let empty = Queue::default();
        let q = self.queues.get(name).unwrap_or(&empty);
        let row = |id: &String| Row { id: id.clone(), retried: q.tasks[id].retried, due: None };
        let zrows = |set: &ZSet| set.iter().map(|(_, id)| row(id)).collect::<Vec<_>>();
        let due_rows =
            |set: &ZSet| set.iter().map(|(score, id)| Row { due: Some(*score), ..row(id) }).collect::<Vec<_>>();
        let tasks = OBSERVED_STATES
            .into_iter()
            .map(|state| {
                let rows = match state {
                    TaskState::Active => q.active.iter().map(row).collect(),
                    TaskState::Pending => q.pending.iter().map(row).collect(),
                    TaskState::Scheduled => due_rows(&q.scheduled),
                    TaskState::Retry => due_rows(&q.retry),
                    TaskState::Archived => zrows(&q.archived),
                    TaskState::Completed => zrows(&q.completed),
                    TaskState::Aggregating => {
                        let mut rows: Vec<Row> =
                            q.group_names.iter().filter_map(|g| q.groups.get(g)).flat_map(zrows).collect();
                        rows.sort();
                        rows
                    }
                    TaskState::Waiting => q.waiting.keys().map(row).collect(),
                };
                let listed = if self.known.contains(name) { Ok(rows) } else { Err(ErrorKind::QueueNotFound) };
                (state, listed)
            })
            .collect();
        let counts = self.check_known(name).map(|()| {
            let aggregating = q.group_names.iter().filter_map(|g| q.groups.get(g)).map(BTreeSet::len).sum();
            let (processed, failed) = q.daily.get(&self.now.div_euclid(DAY_SECS)).copied().unwrap_or_default();
            let mut counts = Counts {
                size: 0,
                groups: q.group_names.len(),
                pending: q.pending.len(),
                active: q.active.len(),
                scheduled: q.scheduled.len(),
                retry: q.retry.len(),
                archived: q.archived.len(),
                completed: q.completed.len(),
                aggregating,
                waiting: q.waiting.len(),
                processed,
                failed,
                processed_total: q.processed_total,
                failed_total: q.failed_total,
                paused: q.paused,
            };
            counts.size = counts.pending
                + counts.active
                + counts.scheduled
                + counts.retry
                + counts.archived
                + counts.completed
                + counts.aggregating;
            counts
        });
        QueueView { counts, tasks }
    }
}

impl fmt::Display for Observation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "known queues: {:?}", self.queues)?;
        for (name, view) in &self.views {
            writeln!(f, "{name}: {:?}", view.counts)?;
            for (state, rows) in &view.tasks {
                match rows {
                    Ok(rows) if rows.is_empty() => {}
                    Ok(rows) => {
                        let shown: Vec<String> = rows
                            .iter()
                            .map(|r| match r.due {
                                Some(due) => format!("{}/{}@{due}", r.id, r.retried),
                                None => format!("{}/{}", r.id, r.retried),
                            })
                            .collect();
                        writeln!(f, "  {state}: {}", shown.join(" "))?;
                    }
                    Err(kind) if view.counts.as_ref().err() == Some(kind) => {}
                    Err(kind) => writeln!(f, "  {state}: {kind:?}")?,
                }
            }
        }
        for (queue, id, info) in &self.lookups {
            writeln!(f, "task {queue}/{id}: {info:?}")?;
        }
        for (queue, id, names) in self.steps.iter().filter(|(_, _, names)| !names.is_empty()) {
            writeln!(f, "steps of {queue}/{id}: {names:?}")?;
        }
        for (queue, id, names) in self.signals.iter().filter(|(_, _, names)| !names.is_empty()) {
            writeln!(f, "signals of {queue}/{id}: {names:?}")?;
        }
        Ok(())
    }
}
