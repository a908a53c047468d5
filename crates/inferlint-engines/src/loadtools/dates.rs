//! The times of day the load tools write as text, read without a date library: each as
//! seconds since 1970-01-01 00:00 read as if the time were UTC, with the zone the text
//! names, if it names one.
//!
//! Python writes a time without a zone when it formats `datetime.now()` or
//! `datetime.fromtimestamp(t)` (the client's local time), and with one only from an aware
//! datetime. A time without a zone places a run only up to the zone, which the identity
//! gate tries in turn ([`inferlint_core::model::client::ResultIdentity::saved_local_s`]).

use inferlint_core::model::civil::days_from_civil;

/// A time read from text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TextTime {
    /// Seconds since 1970 of the date and time as written, read as if UTC.
    pub local_s: f64,
    /// The zone's offset from UTC in seconds (`+02:00` is 7200), when the text names one.
    pub offset_s: Option<i64>,
    /// How finely the text gives the time, in seconds (1 for whole seconds).
    pub resolution_s: f64,
}

impl TextTime {
    /// The Unix time, when the text names its zone.
    pub fn unix_s(&self) -> Option<f64> {
        self.offset_s.map(|o| self.local_s - o as f64)
    }
}

/// Days in a month of the proleptic Gregorian calendar.
fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// Seconds since 1970 of a civil date and time read as UTC; `None` when it is no date
/// (month 13, 31 April, hour 24). A leap second (`:60`) is allowed, as Python prints none
/// but other writers may.
fn civil_seconds(date: (i64, i64, i64), time: (i64, i64, i64)) -> Option<i64> {
    let (year, month, day) = date;
    let (hour, minute, second) = time;
    let valid = (1..=9999).contains(&year)
        && (1..=12).contains(&month)
        && (1..=days_in_month(year, month)).contains(&day)
        && (0..=23).contains(&hour)
        && (0..=59).contains(&minute)
        && (0..=60).contains(&second);
    valid.then(|| days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second)
}

/// The number of `n` ASCII digits at `at`.
fn digits(text: &[u8], at: usize, n: usize) -> Option<i64> {
    let part = text.get(at..at + n)?;
    part.iter().try_fold(0i64, |v, d| {
        d.is_ascii_digit().then(|| v * 10 + i64::from(d - b'0'))
    })
}

/// `20260930-204849`: `datetime.now().strftime("%Y%m%d-%H%M%S")`, as `vllm bench serve`
/// and TensorRT-LLM's `benchmark_serving` write their `date`; no zone, to the second.
pub(crate) fn compact(text: &str) -> Option<TextTime> {
    let b = text.as_bytes();
    if b.len() != 15 || b[8] != b'-' {
        return None;
    }
    let seconds = civil_seconds(
        (digits(b, 0, 4)?, digits(b, 4, 2)?, digits(b, 6, 2)?),
        (digits(b, 9, 2)?, digits(b, 11, 2)?, digits(b, 13, 2)?),
    )?;
    Some(TextTime {
        local_s: seconds as f64,
        offset_s: None,
        resolution_s: 1.0,
    })
}

/// `2026-12-01T02:57:16.246873`, Python's `datetime.isoformat()` (a space for the `T` is
/// allowed, as `str(datetime)` writes it): the fraction when there is one (Python leaves
/// it out when it is zero), then `Z` or `+HH:MM` when the datetime knew its zone.
pub(crate) fn iso(text: &str) -> Option<TextTime> {
    let b = text.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let seconds = civil_seconds(
        (digits(b, 0, 4)?, digits(b, 5, 2)?, digits(b, 8, 2)?),
        (digits(b, 11, 2)?, digits(b, 14, 2)?, digits(b, 17, 2)?),
    )?;
    let mut rest = &text[19..];
    let (mut fraction, mut resolution_s) = (0.0, 1.0);
    if let Some(after_dot) = rest.strip_prefix('.') {
        let n = after_dot.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 || n > 9 {
            return None;
        }
        fraction = format!("0.{}", &after_dot[..n]).parse().ok()?;
        resolution_s = 10f64.powi(-(n as i32));
        rest = &after_dot[n..];
    }
    let offset_s = match rest.as_bytes() {
        [] => None,
        [b'Z' | b'z'] => Some(0),
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let z = [*h1, *h2, *m1, *m2];
            let (h, m) = (digits(&z, 0, 2)?, digits(&z, 2, 2)?);
            if h > 23 || m > 59 {
                return None;
            }
            let sign = if *sign == b'-' { -1 } else { 1 };
            Some(sign * (h * 3600 + m * 60))
        }
        _ => return None,
    };
    Some(TextTime {
        local_s: seconds as f64 + fraction,
        offset_s,
        resolution_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dates are read against `date -u -d '2026-09-30 20:48:49' +%s` (1790801329).
    #[test]
    fn the_clients_compact_date() {
        let t = compact("20260930-204849").unwrap();
        assert_eq!(t.local_s, 1_790_801_329.0);
        assert_eq!((t.offset_s, t.resolution_s), (None, 1.0));
        // 2024 is a leap year, 2026 is not.
        assert!(compact("20240229-000000").is_some());
        for bad in [
            "20260229-000000",
            "20261301-000000",
            "20260431-000000",
            "20260930-244849",
            "20260930-206049",
            "20260930 204849",
            "2026093-2048490",
            "20260930-20484",
            "",
            "2026O930-204849",
        ] {
            assert_eq!(compact(bad), None, "{bad}");
        }
    }

    #[test]
    fn python_isoformat() {
        let t = iso("2026-12-01T02:57:16.246873").unwrap();
        // date -u -d '2026-12-01 02:57:16' +%s
        assert_eq!(t.local_s, 1_796_093_836.246_873);
        assert_eq!(t.offset_s, None);
        assert!((t.resolution_s - 1e-6).abs() < 1e-12);
        assert_eq!(t.unix_s(), None);
        let whole = iso("2026-12-01 02:57:16").unwrap();
        assert_eq!((whole.local_s, whole.resolution_s), (1_796_093_836.0, 1.0));
        let zoned = iso("2026-12-01T04:57:16+02:00").unwrap();
        assert_eq!(zoned.unix_s(), Some(1_796_093_836.0));
        assert_eq!(
            iso("2026-12-01T02:57:16Z").unwrap().unix_s(),
            Some(1_796_093_836.0)
        );
        assert_eq!(
            iso("2026-12-01T00:57:16-02:00").unwrap().unix_s(),
            Some(1_796_093_836.0)
        );
        for bad in [
            "2026-12-01T02:57",
            "2026-12-01T02:57:16.",
            "2026-12-01T02:57:16+0200",
            "2026-12-01T02:57:16+24:00",
            "2026-12-32T02:57:16",
            "2026/12/01T02:57:16",
            "2026-12-01X02:57:16",
            "2026-12-01T02:57:16 UTC",
        ] {
            assert_eq!(iso(bad), None, "{bad}");
        }
    }
}
