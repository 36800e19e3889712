//! Cron specs as Go asynq's scheduler (robfig/cron v3) reads them: five fields (minute, hour,
//! day of month, month, day of week), the descriptors `@yearly` (`@annually`), `@monthly`,
//! `@weekly`, `@daily` (`@midnight`) and `@hourly`, `@every <Go duration>`, and a leading
//! `CRON_TZ=<zone>` or `TZ=<zone>` that overrides the scheduler's time zone.
//!
//! [`croner`] parses and evaluates the five-field form in a [`chrono_tz`] zone; `@every` is ours.

use asynq_core::time::{from_unix_secs, parse_go_duration, unix_secs};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use std::time::{Duration, SystemTime};

/// Why a cron spec was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// The spec is blank.
    #[error("the spec is empty")]
    Empty,
    /// `CRON_TZ=` or `TZ=` names no IANA time zone, or nothing follows the zone.
    #[error("unknown time zone {0:?} (expected an IANA name such as \"Europe/Paris\")")]
    UnknownTimeZone(String),
    /// A descriptor other than the ones Go asynq knows, e.g. `@reboot`.
    #[error(
        "unknown descriptor {0:?} (expected @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every <duration>)"
    )]
    UnknownDescriptor(String),
    /// `@every` is not followed by a positive Go duration such as `30s` or `1h30m`.
    #[error("invalid interval {0:?} after @every (expected a positive Go duration such as 30s or 1h30m)")]
    InvalidInterval(String),
    /// The five-field expression does not parse; the text says why.
    #[error("invalid cron expression: {0}")]
    InvalidExpression(String),
    /// The spec parses but matches no time from now on, e.g. `0 0 30 2 *`.
    #[error("the spec never fires")]
    NeverFires,
}

/// When a registered entry fires.
#[derive(Debug, Clone)]
pub(crate) enum Schedule {
    /// At the times a cron expression matches on the wall clock of `zone`.
    Cron {
        /// The parsed expression.
        cron: Box<Cron>,
        /// The zone its fields are read in.
        zone: Tz,
    },
    /// Every `period` (whole seconds, at least one), at the multiples of `period` since the Unix
    /// epoch, so that replicas started at different times fire at the same instants.
    Every {
        /// The period.
        period: Duration,
    },
}

impl Schedule {
    /// Parses `spec`, reading its fields in `zone` unless the spec names its own.
    pub(crate) fn parse(spec: &str, zone: Tz) -> Result<Self, SpecError> {
        let spec = spec.trim();
        if spec.is_empty() {
            return Err(SpecError::Empty);
        }
        let (zone, spec) = match spec.strip_prefix("CRON_TZ=").or_else(|| spec.strip_prefix("TZ=")) {
            Some(rest) => {
                let (name, expression) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                let zone: Tz = name.parse().map_err(|_| SpecError::UnknownTimeZone(name.to_owned()))?;
                (zone, expression.trim())
            }
            None => (zone, spec),
        };
        if spec.is_empty() {
            return Err(SpecError::Empty);
        }
        if let Some(interval) = spec.strip_prefix("@every ") {
            let interval = interval.trim();
            let period = parse_go_duration(interval)
                .filter(|period| !period.is_zero())
                .ok_or_else(|| SpecError::InvalidInterval(interval.to_owned()))?;
            // robfig/cron's `Every`: whole seconds, at least one.
            return Ok(Schedule::Every { period: Duration::from_secs(period.as_secs().max(1)) });
        }
        let expression = match spec {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            descriptor if descriptor.starts_with('@') => {
                return Err(SpecError::UnknownDescriptor(descriptor.to_owned()));
            }
            fields => fields,
        };
        let cron = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .year(Year::Disallowed)
            .build()
            .parse(expression)
            .map_err(|e| SpecError::InvalidExpression(e.to_string()))?;
        Ok(Schedule::Cron { cron: Box::new(cron), zone })
    }

    /// The first fire strictly after `after`, or `None` when there is none.
    pub(crate) fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
        match self {
            Schedule::Every { period } => {
                let period = i64::try_from(period.as_secs()).ok()?;
                let next = unix_secs(after).div_euclid(period).checked_add(1)?.checked_mul(period)?;
                Some(from_unix_secs(next))
            }
            Schedule::Cron { cron, zone } => {
                let local = DateTime::<Utc>::from(after).with_timezone(zone);
                let next = cron.find_next_occurrence(&local, false).ok()?;
                Some(SystemTime::from(next.with_timezone(&Utc)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::time::from_unix_secs;

    /// 2026-11-22T00:00:00Z, a Sunday.
    const SUNDAY: i64 = 1_795_305_600;

    fn at(offset: i64) -> SystemTime {
        from_unix_secs(SUNDAY + offset)
    }

    fn next(spec: &str, after: SystemTime) -> SystemTime {
        Schedule::parse(spec, Tz::UTC).unwrap().next_after(after).unwrap()
    }

    #[test]
    fn every_fires_at_multiples_of_its_period_since_the_epoch() {
        assert_eq!(next("@every 30s", at(0)), at(30));
        assert_eq!(next("@every 30s", at(12) + Duration::from_millis(700)), at(30));
        assert_eq!(next("@every 30s", at(29) + Duration::from_millis(999)), at(30));
        assert_eq!(next("@every 1h30m", at(0)), from_unix_secs((SUNDAY / 5_400 + 1) * 5_400));
        // Sub-second parts are dropped and the period is at least a second, as in robfig/cron.
        assert_eq!(next("@every 1500ms", at(0)), at(1));
        assert_eq!(next("@every 10ms", at(0)), at(1));
    }

    #[test]
    fn five_fields_fire_strictly_after_the_given_instant() {
        assert_eq!(next("*/15 * * * *", at(0)), at(900));
        assert_eq!(next("*/15 * * * *", at(899) + Duration::from_millis(500)), at(900));
        assert_eq!(next("*/15 * * * *", at(900) + Duration::from_millis(1)), at(1_800));
        assert_eq!(next("30 9 * * 1-5", at(0)), at(86_400 + 9 * 3_600 + 1_800)); // Monday 09:30
    }

    #[test]
    fn descriptors_are_the_fields_go_gives_them() {
        assert_eq!(next("@hourly", at(1)), at(3_600));
        assert_eq!(next("@daily", at(1)), at(86_400));
        assert_eq!(next("@midnight", at(1)), at(86_400));
        assert_eq!(next("@weekly", at(1)), at(7 * 86_400)); // the next Sunday
        assert_eq!(next("@monthly", at(1)), from_unix_secs(1_796_083_200)); // 2026-12-01
        assert_eq!(next("@yearly", at(1)), from_unix_secs(1_798_761_600)); // 2027-01-01
        assert_eq!(next("@annually", at(1)), from_unix_secs(1_798_761_600));
    }

    #[test]
    fn fields_are_read_in_the_scheduler_zone_or_the_spec_zone() {
        let tokyo: Tz = "Asia/Tokyo".parse().unwrap();
        let in_tokyo = Schedule::parse("0 9 * * *", tokyo).unwrap();
        // 09:00 in Tokyo is 00:00 UTC.
        assert_eq!(in_tokyo.next_after(at(1)), Some(at(86_400)));
        // New York is on EST (UTC-5) in November.
        assert_eq!(next("CRON_TZ=America/New_York 0 9 * * *", at(0)), at(14 * 3_600));
        assert_eq!(next("TZ=America/New_York 0 9 * * *", at(0)), at(14 * 3_600));
        // A spec zone wins over the scheduler zone.
        let spec_zone = Schedule::parse("CRON_TZ=UTC 0 9 * * *", tokyo).unwrap();
        assert_eq!(spec_zone.next_after(at(0)), Some(at(9 * 3_600)));
    }

    #[test]
    fn bad_specs_are_refused_with_the_reason() {
        let error = |spec: &str| Schedule::parse(spec, Tz::UTC).unwrap_err();
        assert_eq!(error("  "), SpecError::Empty);
        assert_eq!(error("CRON_TZ=UTC"), SpecError::Empty);
        assert_eq!(error("CRON_TZ=Mars/Olympus 0 9 * * *"), SpecError::UnknownTimeZone("Mars/Olympus".into()));
        assert_eq!(error("@reboot"), SpecError::UnknownDescriptor("@reboot".into()));
        assert_eq!(error("@every soon"), SpecError::InvalidInterval("soon".into()));
        assert_eq!(error("@every -5s"), SpecError::InvalidInterval("-5s".into()));
        assert_eq!(error("@every 0s"), SpecError::InvalidInterval("0s".into()));
        assert!(matches!(error("* * * *"), SpecError::InvalidExpression(_)));
        assert!(matches!(error("0 0 * * * *"), SpecError::InvalidExpression(_)), "no seconds field");
        assert!(matches!(error("61 * * * *"), SpecError::InvalidExpression(_)));
        assert!(matches!(error("0 0 32 * *"), SpecError::InvalidExpression(_)));
    }

    #[test]
    fn a_spec_that_never_matches_has_no_next_fire() {
        let never = Schedule::parse("0 0 30 2 *", Tz::UTC).unwrap();
        assert_eq!(never.next_after(at(0)), None);
    }
}
