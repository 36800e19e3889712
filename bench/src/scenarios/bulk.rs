//! The bulk operator actions (`archiveall`, `deleteall`, `runall`, `queue rm --force`) on a
//! queue's tasks.

use super::connect;
use crate::measure::{Measurement, Timer};
use crate::workload::QUEUE;

/// A bulk operator action of the `bulk` scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BulkKind {
    /// `Inspector::archive_all` of the pending tasks.
    Archive,
    /// `Inspector::delete_all` of the pending tasks.
    Delete,
    /// `Inspector::run_all` of the scheduled tasks.
    Run,
    /// `Inspector::delete_queue` with force.
    Remove,
}

/// Times one bulk action on the queue's `tasks` tasks ([`fill`](super::fill), or [`fill_scheduled`](super::fill_scheduled) for
/// [`BulkKind::Run`]), as `asynq task archiveall` and the others run it; fails unless it acted
/// on all of them.
pub async fn bulk(redis_url: &str, kind: BulkKind, tasks: u64) -> anyhow::Result<Measurement> {
    use asynq_client::{BulkAction, TaskSet, TaskState};
    let inspector = asynq_client::Inspector::new(connect(redis_url).await?);
    let pending = TaskSet::State(TaskState::Pending);
    let timer = Timer::start();
    let acted = match kind {
        BulkKind::Archive => inspector.bulk_action(QUEUE, BulkAction::Archive, &pending, |_| {}).await?,
        BulkKind::Delete => inspector.bulk_action(QUEUE, BulkAction::Delete, &pending, |_| {}).await?,
        BulkKind::Run => {
            inspector.bulk_action(QUEUE, BulkAction::Run, &TaskSet::State(TaskState::Scheduled), |_| {}).await?
        }
        BulkKind::Remove => {
            let deleted = std::sync::atomic::AtomicUsize::new(0);
            inspector
                .delete_queue_with_progress(QUEUE, true, |p| {
                    deleted.store(p.done, std::sync::atomic::Ordering::Relaxed)
                })
                .await?;
            deleted.into_inner()
        }
    };
    anyhow::ensure!(acted as u64 == tasks, "the {kind:?} action acted on {acted} of {tasks} tasks");
    Ok(timer.finish("bulk", tasks, None, true))
}
