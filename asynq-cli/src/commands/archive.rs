//! `asynq task archiveall`: archives every task of a state or group, first saying what the
//! archive's limits would drop. When the trim after the archive would delete archived tasks
//! (over the size limit, or past the age limit), the command refuses without `--force`
//! (exit 4, as other refused preconditions), naming the count and the limits, and archives
//! nothing; with `--force` it archives and reports what the trims dropped, as they counted it.

use super::Context;
use crate::cli::ArchiveAllArgs;
use crate::error::{CliError, CliResult, Failure};
use crate::output::{BulkBar, outln, print_json};
use asynq_core::{ArchiveLimits, ArchiveOutlook, ArchiveReport, TaskSet};
use serde::Serialize;

/// What `archiveall` did, in JSON: the fields of the other bulk actions (`queue`, `state`,
/// `group`, `action`, `count`), and what the archive's trims dropped.
#[derive(Debug, Serialize)]
struct ArchiveAllView<'a> {
    queue: &'a str,
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<&'a str>,
    action: &'static str,
    /// Tasks archived.
    count: usize,
    /// Archived tasks the trims deleted, for both reasons.
    trimmed: usize,
    /// ... of which over the size limit.
    trimmed_by_size: usize,
    /// ... of which past the age limit.
    trimmed_by_age: usize,
    /// The limits trimmed to.
    archive_max_size: usize,
    archive_max_age_secs: u64,
}

/// `asynq task archiveall`.
pub(super) async fn archive_all(ctx: &Context, args: ArchiveAllArgs) -> CliResult {
    let ArchiveAllArgs { bulk, force } = args;
    let (state, set) = super::task::bulk_set(&bulk)?;
    let inspector = &ctx.conn.inspector;
    let outlook = inspector.archive_all_outlook(&bulk.queue, &set).await?;
    if !outlook.drops_nothing() && !force {
        return Err(refused(&bulk.queue, &set, &outlook));
    }
    let bar = BulkBar::new(ctx.json, "archiving");
    let report = inspector.archive_all_reporting(&bulk.queue, &set, |p| bar.update(p)).await?;
    drop(bar);
    let limits = inspector.archive_limits();
    if ctx.json {
        let group = match &set {
            TaskSet::Group(group) => Some(group.as_str()),
            TaskSet::State(_) => None,
        };
        return print_json(&ArchiveAllView {
            queue: &bulk.queue,
            state: state.as_str(),
            group,
            action: "archived",
            count: report.archived,
            trimmed: report.trimmed(),
            trimmed_by_size: report.trimmed_by_size,
            trimmed_by_age: report.trimmed_by_age,
            archive_max_size: limits.max_size(),
            archive_max_age_secs: limits.max_age().as_secs(),
        });
    }
    outln!("{}", report_text(&report, &limits))
}

/// The refusal of an archive that would drop archived tasks: exit 4, with the count, the
/// limits, and what to do.
fn refused(queue: &str, set: &TaskSet, outlook: &ArchiveOutlook) -> CliError {
    let limits = outlook.limits;
    let message = format!(
        "archiving the {} {set} of queue {queue:?} would drop {} archived tasks: {} over the archive's size limit \
         of {} (it keeps the newest {}) and {} past its age limit of {}; nothing was archived",
        outlook.adding,
        outlook.dropped(),
        outlook.over_size,
        limits.max_size(),
        limits.kept(),
        outlook.expired,
        limits.max_age_text(),
    );
    CliError::new(Failure::Precondition, message).with_hint(
        "run again with --force to archive anyway, or raise --archive-max-size / --archive-max-age \
         (to the limits the servers of this queue use: Go asynq's servers trim to 10000 and 90 days)",
    )
}

/// The text report: how many tasks were archived and, when the trims dropped any, how many and
/// why.
fn report_text(report: &ArchiveReport, limits: &ArchiveLimits) -> String {
    let archived = format!("{} tasks archived", report.archived);
    if report.trimmed() == 0 {
        return archived;
    }
    format!(
        "{archived}; the archive's limits dropped {} archived tasks ({} over the size limit of {}, {} past the age \
         limit of {})",
        report.trimmed(),
        report.trimmed_by_size,
        limits.max_size(),
        report.trimmed_by_age,
        limits.max_age_text(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_report_names_what_was_trimmed_and_why() {
        let limits = ArchiveLimits::new(5, Duration::from_secs(3600)).unwrap();
        assert_eq!(report_text(&ArchiveReport::new(3, 0, 0), &limits), "3 tasks archived");
        assert_eq!(
            report_text(&ArchiveReport::new(8, 1, 4), &limits),
            "8 tasks archived; the archive's limits dropped 5 archived tasks (4 over the size limit of 5, \
             1 past the age limit of 1 hour)"
        );
    }
}
