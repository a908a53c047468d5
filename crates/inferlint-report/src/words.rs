//! Small pieces of wording shared by the sections: durations, lists, status labels, clock
//! times.

use inferlint_core::fmt;
use inferlint_core::Status;

/// A duration as a person says it: `27.7 s`, `1 min 34 s`, `24 h 0 min`.
pub fn duration(seconds: f64) -> String {
    if !seconds.is_finite() {
        return "unknown".into();
    }
    if seconds < 60.0 {
        return format!("{seconds:.1} s");
    }
    let whole = seconds.round() as i64;
    if whole < 3600 {
        format!("{} min {} s", whole / 60, whole % 60)
    } else {
        let minutes = (seconds / 60.0).round() as i64;
        format!("{} h {} min", minutes / 60, minutes % 60)
    }
}

/// A point in the run for an axis or a read-out: `16 s`, `16.25 s`, `12 min 18 s`,
/// `3 h 20 min`. The page's script words a moment the same way.
pub fn moment(seconds: f64, span_s: f64) -> String {
    if span_s < 600.0 {
        format!("{} s", fmt::g(round_to(seconds, 2)))
    } else if span_s < 4.0 * 3600.0 {
        let whole = seconds.round() as i64;
        if whole % 60 == 0 {
            format!("{} min", whole / 60)
        } else {
            format!("{} min {} s", whole / 60, whole % 60)
        }
    } else {
        let minutes = (seconds / 60.0).round() as i64;
        if minutes % 60 == 0 {
            format!("{} h", minutes / 60)
        } else {
            format!("{} h {} min", minutes / 60, minutes % 60)
        }
    }
}

fn round_to(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// `a`, `a and b`, `a, b and c`.
pub fn and_list<S: AsRef<str>>(items: &[S]) -> String {
    match items {
        [] => String::new(),
        [one] => one.as_ref().to_owned(),
        [init @ .., last] => {
            let head: Vec<&str> = init.iter().map(AsRef::as_ref).collect();
            format!("{} and {}", head.join(", "), last.as_ref())
        }
    }
}

/// A count and a noun: `1 request`, `32 requests`.
pub fn count(n: f64, noun: &str) -> String {
    format!("{} {noun}{}", thousands(n), fmt::plural(n))
}

/// A whole number with thousands separators; other numbers as `%g`.
pub fn thousands(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        fmt::thousands(n as i64)
    } else {
        fmt::g(n)
    }
}

/// The CSS class of a status.
pub fn status_class(status: Status) -> &'static str {
    match status {
        Status::Fail => "fail",
        Status::Warn => "warn",
        Status::Unknown => "unknown",
        Status::Pass => "pass",
        Status::NotApplicable => "na",
        Status::NotChecked => "notchecked",
    }
}

/// The icon shown beside a status's word (never the status's only sign).
pub fn status_icon(status: Status) -> &'static str {
    match status {
        Status::Fail => "\u{2716}",          // heavy multiplication x
        Status::Warn => "\u{25B2}",          // black up-pointing triangle
        Status::Unknown => "?",              // a question mark
        Status::Pass => "\u{2714}",          // heavy check mark
        Status::NotApplicable => "\u{2013}", // en dash
        Status::NotChecked => "\u{2205}",    // empty set
    }
}

/// Every status, in the order results are listed.
pub const STATUSES: [Status; 6] = [
    Status::Fail,
    Status::Warn,
    Status::Unknown,
    Status::Pass,
    Status::NotApplicable,
    Status::NotChecked,
];

/// What a status means and what to do, for the report's glossary.
pub fn status_meaning(status: Status) -> (&'static str, &'static str) {
    match status {
        Status::Fail => (
            "The tripwire caught its problem in this run. For T7 and T12 the server itself \
             failed; for every other tripwire the server worked, but a number from the run \
             does not mean what it seems.",
            "Fix the setup and run again, or report the number together with the finding.",
        ),
        Status::Warn => (
            "Nothing is wrong on its own, but a setting or an effect changes how the numbers \
             should be read.",
            "Keep the warning with the results.",
        ),
        Status::Unknown => (
            "A counter, log line or file the check needs was missing. It never counts as a \
             pass.",
            "Supply the missing file, or check the engine's version.",
        ),
        Status::Pass => (
            "The check looked for its problem in this run and did not find it.",
            "Nothing. A pass covers this run only.",
        ),
        Status::NotApplicable => (
            "The tripwire is about a behaviour this engine does not have.",
            "Nothing.",
        ),
        Status::NotChecked => (
            "The tripwire applies to this run, but a file or number it needs was not given; \
             the finding says which. It is not a pass.",
            "Give what it needs and make the report again.",
        ),
    }
}

/// A Unix time as `2026-09-27 17:50:52 UTC`.
pub fn utc(unix_seconds: f64) -> Option<String> {
    if !(0.0..=1e11).contains(&unix_seconds) {
        return None;
    }
    let secs = unix_seconds.floor() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    Some(format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    ))
}

/// Days since 1970-01-01 to a (year, month, day) date (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Seconds between two boot-log stamps `MM-DD HH:MM:SS` of the same year; `None` when
/// either does not read or the span is negative (a boot across New Year).
pub fn stamp_span_s(first: &str, last: &str) -> Option<f64> {
    fn read(stamp: &str) -> Option<i64> {
        let (date, time) = stamp.trim().split_once(' ')?;
        let (month, day) = date.split_once('-')?;
        let mut hms = time.split(':');
        let mut next = || hms.next()?.parse::<i64>().ok();
        let (h, m, s) = (next()?, next()?, next()?);
        let month: i64 = month.parse().ok()?;
        let day: i64 = day.parse().ok()?;
        // Days from the start of a common year; good enough within one boot.
        const BEFORE_MONTH: [i64; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
        let before = *BEFORE_MONTH.get(usize::try_from(month - 1).ok()?)?;
        Some(((before + day) * 24 + h) * 3600 + m * 60 + s)
    }
    let span = read(last)? - read(first)?;
    (span >= 0).then_some(span as f64)
}

/// The time part of a boot-log stamp: `17:48:43`.
pub fn stamp_time(stamp: &str) -> &str {
    stamp.trim().split_once(' ').map_or(stamp, |(_, t)| t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration(27.727), "27.7 s");
        assert_eq!(duration(93.72), "1 min 34 s");
        assert_eq!(duration(86_400.0), "24 h 0 min");
    }

    #[test]
    fn lists() {
        assert_eq!(and_list(&["T2"]), "T2");
        assert_eq!(and_list(&["T2", "T3"]), "T2 and T3");
        assert_eq!(and_list(&["T5", "T6", "T12"]), "T5, T6 and T12");
    }

    #[test]
    fn clock() {
        assert_eq!(utc(0.0).unwrap(), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_790_470_252.2).unwrap(), "2026-09-27 00:50:52 UTC");
        assert_eq!(
            stamp_span_s("11-30 17:48:43", "11-30 17:50:47"),
            Some(124.0)
        );
        assert_eq!(stamp_span_s("12-31 23:59:00", "01-01 00:01:00"), None);
    }
}
