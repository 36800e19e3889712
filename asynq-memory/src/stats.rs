//! A queue's processed and failed counters: totals, and one counter per UTC date that expires
//! 90 days after its first increment, as Redis's `EXPIREAT` makes the daily keys do.

use asynq_core::DAILY_STATS_TTL;
use asynq_core::time::{from_unix_secs, unix_secs, utc_date};
use std::collections::BTreeMap;
use std::time::SystemTime;

/// The counters of one queue.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    processed_total: i64,
    failed_total: i64,
    processed_daily: Daily,
    failed_daily: Daily,
}

impl Stats {
    /// Counts one processed task (success or revocation).
    pub(crate) fn record_processed(&mut self, now: SystemTime) {
        self.processed_daily.increment(now);
        self.processed_total = if self.processed_total == i64::MAX { 1 } else { self.processed_total + 1 };
    }

    /// Counts one processed task that failed. Both totals restart at 1 together when the
    /// processed total is at `i64::MAX`, as Go's scripts do.
    pub(crate) fn record_failed(&mut self, now: SystemTime) {
        self.processed_daily.increment(now);
        self.failed_daily.increment(now);
        if self.processed_total == i64::MAX {
            (self.processed_total, self.failed_total) = (1, 1);
        } else {
            self.processed_total += 1;
            self.failed_total = self.failed_total.saturating_add(1);
        }
    }

    /// Tasks processed on the UTC date of `now`.
    pub(crate) fn processed_today(&self, now: SystemTime) -> u64 {
        self.processed_daily.get(&utc_date(now), now)
    }

    /// Tasks failed on the UTC date of `now`.
    pub(crate) fn failed_today(&self, now: SystemTime) -> u64 {
        self.failed_daily.get(&utc_date(now), now)
    }

    /// Tasks processed and failed on `date` (`YYYY-MM-DD`, UTC), as the counters read at `now`.
    pub(crate) fn on_date(&self, date: &str, now: SystemTime) -> (u64, u64) {
        (self.processed_daily.get(date, now), self.failed_daily.get(date, now))
    }

    /// Tasks processed ever (since the last reset).
    pub(crate) fn processed_total(&self) -> u64 {
        non_negative(self.processed_total)
    }

    /// Tasks failed ever (since the last reset).
    pub(crate) fn failed_total(&self) -> u64 {
        non_negative(self.failed_total)
    }
}

/// Counters keyed by UTC date.
#[derive(Debug, Default)]
struct Daily(BTreeMap<String, Counter>);

#[derive(Debug)]
struct Counter {
    count: i64,
    expires_at: SystemTime,
}

impl Counter {
    /// Redis drops a key once the clock is past its expiry.
    fn is_live(&self, now: SystemTime) -> bool {
        now <= self.expires_at
    }
}

impl Daily {
    fn increment(&mut self, now: SystemTime) {
        self.0.retain(|_, counter| counter.is_live(now));
        let expires_at = from_unix_secs(unix_secs(now) + DAILY_STATS_TTL.as_secs() as i64);
        self.0.entry(utc_date(now)).or_insert(Counter { count: 0, expires_at }).count += 1;
    }

    /// The count of `date`, zero once its counter has expired at `now`.
    fn get(&self, date: &str, now: SystemTime) -> u64 {
        self.0.get(date).filter(|counter| counter.is_live(now)).map_or(0, |counter| non_negative(counter.count))
    }
}

fn non_negative(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const DAY: Duration = Duration::from_secs(86_400);

    #[test]
    fn daily_counters_follow_the_utc_date() {
        let monday = from_unix_secs(1_700_000_000);
        let mut stats = Stats::default();
        stats.record_processed(monday);
        stats.record_failed(monday);
        assert_eq!((stats.processed_today(monday), stats.failed_today(monday)), (2, 1));
        assert_eq!((stats.processed_today(monday + DAY), stats.failed_today(monday + DAY)), (0, 0));
        assert_eq!((stats.processed_total(), stats.failed_total()), (2, 1));
    }

    #[test]
    fn totals_restart_at_one_after_i64_max() {
        let now = from_unix_secs(1_700_000_000);
        let mut stats = Stats { processed_total: i64::MAX, failed_total: 7, ..Stats::default() };
        stats.record_failed(now);
        assert_eq!((stats.processed_total(), stats.failed_total()), (1, 1));
        stats.processed_total = i64::MAX;
        stats.record_processed(now);
        assert_eq!((stats.processed_total(), stats.failed_total()), (1, 1));
    }

    #[test]
    fn daily_counters_expire_90_days_after_their_first_increment() {
        let start = from_unix_secs(1_700_000_000);
        let mut stats = Stats::default();
        stats.record_processed(start);
        stats.record_processed(start + 90 * DAY);
        assert_eq!(stats.processed_daily.0.len(), 2, "still live at exactly 90 days");
        stats.record_processed(start + 90 * DAY + Duration::from_secs(1));
        assert_eq!(stats.processed_daily.0.len(), 1, "the first day's counter is gone");
        assert_eq!(stats.processed_today(start), 0);
        assert_eq!(stats.processed_total(), 3);
    }

    #[test]
    fn a_past_date_reads_until_its_counter_expires() {
        let monday = from_unix_secs(1_700_000_000);
        let mut stats = Stats::default();
        stats.record_failed(monday);
        let date = utc_date(monday);
        assert_eq!(stats.on_date(&date, monday + DAY), (1, 1));
        assert_eq!(stats.on_date(&date, monday + 91 * DAY), (0, 0));
        assert_eq!(stats.on_date("1999-01-01", monday), (0, 0));
    }
}
