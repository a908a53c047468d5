//! The ranges the numeric flags must fall in, checked before a command starts anything:
//! a value out of range is a one-line error and exit 2, never a panic (a duration of
//! `1e308` seconds does not fit a `Duration`) or an hour of work nobody asked for.

use std::ops::RangeInclusive;
use std::time::Duration;

use inferlint_live::watch::{Pages, MAX_DURATION, MAX_INTERVAL, MIN_INTERVAL};

use crate::exit::CliError;

/// `probe --concurrency`: a burst of more would measure the machine running the probe,
/// and hold thousands of sockets.
pub const PROBE_CONCURRENCY: RangeInclusive<u32> = 1..=256;
/// `probe --max-tokens`.
pub const PROBE_MAX_TOKENS: RangeInclusive<u32> = 1..=4096;
/// `xray --ready-timeout`, in seconds: a day.
pub const MAX_READY_TIMEOUT_S: f64 = 86_400.0;
/// `probe --timeout`, in seconds: a day.
pub const MAX_PROBE_TIMEOUT_S: f64 = 86_400.0;
/// `gpu-inspect --timeout` and `teardown --timeout`, in seconds: a day.
pub const MAX_CARD_TIMEOUT_S: f64 = 86_400.0;

/// A number as a user reads it: `1e308` rather than three hundred digits, `3,600` for a
/// whole bound.
fn shown(value: f64) -> String {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e15 {
        inferlint_core::story::fmt::thousands(value as i64)
    } else if value.is_finite() && value.abs() < 1e15 {
        value.to_string()
    } else {
        format!("{value:e}")
    }
}

/// A number of seconds within `min..=max`, as a duration.
pub fn seconds(flag: &str, value: f64, min: f64, max: f64) -> Result<Duration, CliError> {
    if value.is_finite() && (min..=max).contains(&value) {
        return Ok(Duration::from_secs_f64(value));
    }
    Err(CliError::usage(format!(
        "{flag} {}: give a number of seconds from {} to {}",
        shown(value),
        shown(min),
        shown(max)
    )))
}

/// A number of seconds above 0 and at most `max`.
pub fn positive_seconds(flag: &str, value: f64, max: f64) -> Result<Duration, CliError> {
    if value.is_finite() && value > 0.0 && value <= max {
        return Ok(Duration::from_secs_f64(value));
    }
    Err(CliError::usage(format!(
        "{flag} {}: give a number of seconds above 0, at most {}",
        shown(value),
        shown(max)
    )))
}

/// `--interval` of watch and xray.
pub fn interval(value: f64) -> Result<Duration, CliError> {
    seconds(
        "--interval",
        value,
        MIN_INTERVAL.as_secs_f64(),
        MAX_INTERVAL.as_secs_f64(),
    )
}

/// `watch --duration`.
pub fn duration(value: f64) -> Result<Duration, CliError> {
    positive_seconds("--duration", value, MAX_DURATION.as_secs_f64())
}

/// A count within a range.
pub fn count(flag: &str, value: u32, range: &RangeInclusive<u32>) -> Result<u32, CliError> {
    if range.contains(&value) {
        return Ok(value);
    }
    Err(CliError::usage(format!(
        "{flag} {value}: give a number from {} to {}",
        range.start(),
        range.end()
    )))
}

/// What `--whole-pages` asks of each scrape after the first.
pub fn pages(whole_pages: bool) -> Pages {
    if whole_pages {
        Pages::Whole
    } else {
        Pages::AskForLess
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Guards against the panics `Duration::from_secs_f64` gives for values too large.
    #[test]
    fn huge_and_odd_seconds_are_errors_not_panics() {
        for v in [
            1e308,
            1e20,
            f64::INFINITY,
            f64::NAN,
            -1.0,
            0.0,
            0.01,
            3601.0,
        ] {
            assert!(interval(v).is_err(), "{v}");
        }
        assert_eq!(interval(0.25).ok(), Some(Duration::from_millis(250)));
        for v in [1e20, 0.0, -5.0, f64::NAN, 31.0 * 86_400.0] {
            assert!(duration(v).is_err(), "{v}");
        }
        assert!(duration(2.0).is_ok());
        assert!(count("--concurrency", 100_000, &PROBE_CONCURRENCY).is_err());
        assert!(count("--concurrency", 0, &PROBE_CONCURRENCY).is_err());
    }
}
