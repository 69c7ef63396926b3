//! Scheduled operations: the `schedule` expressions of `operations.json` and
//! the pure decision "is it time?" (the runtime's `schedule` runs them).
//!
//! Expressions: `every 15m` / `every 2h` (an interval since the last run),
//! `hourly` (the top of each hour) and `daily 09:00`, in the app's time zone.
//! The last run of each operation is stored; a slot missed while the server
//! was down runs once at the next start, not once per missed slot, because
//! the decision only asks whether any slot passed since the last run.
//! An operation never run before is not run at once: its first start only
//! records a baseline, so adding a schedule does not fire it on deploy.

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    Every(SignedDuration),
    Hourly,
    Daily { hour: i8, minute: i8 },
}

const FORMS: &str = "a schedule is \"every 15m\", \"every 2h\", \"hourly\" or \"daily 09:00\"";

pub fn parse(text: &str) -> Result<Schedule, String> {
    let text = text.trim();
    if text == "hourly" {
        return Ok(Schedule::Hourly);
    }
    if let Some(rest) = text.strip_prefix("every ") {
        let rest = rest.trim();
        let split = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let n: i64 = rest[..split].parse().map_err(|_| format!("bad interval \"{rest}\": {FORMS}"))?;
        // Bounded before any arithmetic: an author's typo must not overflow.
        let (d, max) = match &rest[split..] {
            "m" => (SignedDuration::from_mins(n.clamp(0, 10_080)), 10_080),
            "h" => (SignedDuration::from_hours(n.clamp(0, 168)), 168),
            _ => return Err(format!("bad interval \"{rest}\": use minutes (15m) or hours (2h); {FORMS}")),
        };
        if n < 1 || n > max {
            return Err(format!("interval \"{rest}\" must be between 1m and 168h"));
        }
        return Ok(Schedule::Every(d));
    }
    if let Some(rest) = text.strip_prefix("daily ") {
        let bad = || format!("bad time \"{}\": daily takes HH:MM (24 h, the app's time zone)", rest.trim());
        let (h, m) = rest.trim().split_once(':').ok_or_else(bad)?;
        let (hour, minute): (i8, i8) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
        if h.len() != 2 || m.len() != 2 || !(0..24).contains(&hour) || !(0..60).contains(&minute) {
            return Err(bad());
        }
        return Ok(Schedule::Daily { hour, minute });
    }
    Err(format!("unknown schedule \"{text}\": {FORMS}"))
}

/// The first slot strictly after `after`.
pub fn next_after(schedule: Schedule, after: Timestamp, tz: &TimeZone) -> Timestamp {
    let zoned = after.to_zoned_datetime(tz.clone());
    let far = || after.checked_add(SignedDuration::from_hours(24 * 365)).unwrap_or(Timestamp::MAX);
    match schedule {
        Schedule::Every(d) => after.checked_add(d).unwrap_or(Timestamp::MAX),
        Schedule::Hourly => {
            let dt = zoned.datetime();
            let top = dt.date().at(dt.hour(), 0, 0, 0);
            top.to_zoned_datetime(tz.clone())
                .ok()
                .and_then(|z| z.timestamp().checked_add(SignedDuration::from_hours(1)).ok())
                .unwrap_or_else(far)
        }
        Schedule::Daily { hour, minute } => {
            let at = |date: jiff::civil::Date| {
                date.at(hour, minute, 0, 0).to_zoned_datetime(tz.clone()).ok().map(|z| z.timestamp())
            };
            let today = zoned.date();
            match at(today) {
                Some(t) if t > after => t,
                _ => today.tomorrow().ok().and_then(at).unwrap_or_else(far),
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Never ran: record `now` as the baseline and wait for the next slot.
    Baseline,
    /// Not yet; the next slot.
    Wait(Timestamp),
    /// At least one slot passed since the last run: run once.
    Run,
}

/// Whether a scheduled operation is due. Pure: the clock is an argument.
pub fn decide(schedule: Schedule, last: Option<Timestamp>, now: Timestamp, tz: &TimeZone) -> Decision {
    let Some(last) = last else { return Decision::Baseline };
    let next = next_after(schedule, last, tz);
    if next <= now { Decision::Run } else { Decision::Wait(next) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn parses_the_forms_and_refuses_the_rest() {
        assert_eq!(parse("every 15m"), Ok(Schedule::Every(SignedDuration::from_mins(15))));
        assert_eq!(parse("every 2h"), Ok(Schedule::Every(SignedDuration::from_hours(2))));
        assert_eq!(parse("hourly"), Ok(Schedule::Hourly));
        assert_eq!(parse("daily 09:00"), Ok(Schedule::Daily { hour: 9, minute: 0 }));
        for bad in [
            "every 0m",
            "every 15",
            "every 3d",
            "every 99999999999999999h",
            "every 169h",
            "daily 9:00",
            "daily 24:00",
            "weekly",
            "",
            "daily 09:60",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn next_slots_follow_the_app_time_zone() {
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        let daily = Schedule::Daily { hour: 9, minute: 0 };
        // 06:30 UTC is 08:30 in Berlin (summer): 09:00 Berlin is 07:00 UTC.
        assert_eq!(next_after(daily, ts("2026-07-30T06:30:00Z"), &berlin), ts("2026-07-30T07:00:00Z"));
        // Exactly at the slot: the next one is tomorrow.
        assert_eq!(next_after(daily, ts("2026-07-30T07:00:00Z"), &berlin), ts("2026-07-31T07:00:00Z"));
        // Kolkata is +05:30: its hours start at :30 UTC.
        let kolkata = TimeZone::get("Asia/Kolkata").unwrap();
        assert_eq!(next_after(Schedule::Hourly, ts("2026-07-30T09:10:00Z"), &kolkata), ts("2026-07-30T09:30:00Z"));
        let every = Schedule::Every(SignedDuration::from_mins(15));
        assert_eq!(next_after(every, ts("2026-07-30T09:10:00Z"), &TimeZone::UTC), ts("2026-07-30T09:25:00Z"));
    }

    #[test]
    fn a_missed_slot_runs_once_and_a_new_schedule_waits() {
        let utc = TimeZone::UTC;
        let daily = Schedule::Daily { hour: 9, minute: 0 };
        let now = ts("2026-07-30T12:00:00Z");
        assert_eq!(decide(daily, None, now, &utc), Decision::Baseline);
        // Down for three days: three slots missed, one decision to run.
        assert_eq!(decide(daily, Some(ts("2026-07-27T09:00:00Z")), now, &utc), Decision::Run);
        // After that run (last = now), nothing until tomorrow 09:00.
        assert_eq!(decide(daily, Some(now), now, &utc), Decision::Wait(ts("2026-07-31T09:00:00Z")));
        assert_eq!(
            decide(daily, Some(ts("2026-07-30T09:00:00Z")), now, &utc),
            Decision::Wait(ts("2026-07-31T09:00:00Z"))
        );
    }
}
