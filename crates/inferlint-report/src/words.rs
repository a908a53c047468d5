//! Small pieces of wording shared by the sections: durations, lists, status labels and
//! badges, clock times, the first result of a tripwire.

use inferlint_core::story::fmt;
use inferlint_core::{CheckResult, Status, Tripwire};
use maud::{html, Markup};

/// The first result for a tripwire: its status and message (its figures are the
/// account's).
pub fn find(results: &[CheckResult], tripwire: Tripwire) -> Option<&CheckResult> {
    results.iter().find(|r| r.tripwire == tripwire)
}

/// The status badge: icon and word, never colour alone.
pub fn badge(status: Status) -> Markup {
    html! {
        span class={"status " (status_class(status))} {
            span.icon aria-hidden="true" { (status_icon(status)) }
            " " (status.human())
        }
    }
}

/// The engine's word for a preemption, capitalised and plural: `Preemptions`.
pub fn preemption_heading(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => format!("{}{}s", first.to_uppercase(), chars.as_str()),
        None => String::new(),
    }
}

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
        // A status added later (`Status` is non-exhaustive): shown as one that cannot tell.
        _ => "unknown",
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
        _ => "?",
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
        _ => (
            "A verdict this report does not know; read the finding's message.",
            "Read the finding.",
        ),
    }
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
}
