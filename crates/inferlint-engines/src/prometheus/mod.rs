//! A run read from a Prometheus server's HTTP API, without the network: the queries to
//! ask, the answers read, and each replica's snapshots and series built from them.
//! `inferlint-live` asks the questions; everything that decides what an answer means is
//! here, so the tests need no server.
//!
//! What is asked:
//! - the before and after snapshots are instant queries (`/api/v1/query`) at the window's
//!   start and end for every series of the engines (`{__name__=~"vllm:.*|…", SELECTOR}`),
//!   rendered back into exposition text so that every check reads them as it reads a
//!   scrape;
//! - the series is range queries (`/api/v1/query_range`) of the metrics a recorder writes,
//!   at a step equal to the scrape interval (read from the raw samples' spacing), split
//!   so that no query asks more than [`MAX_POINTS`] points of one series (Prometheus
//!   refuses more than 11,000) and no answer can pass [`RANGE_ANSWER_BYTES`] for the
//!   series the snapshots show ([`points_per_query`]): a piece of a large fleet is a
//!   shorter stretch of the window than a small fleet's.
//!
//! The answers are read typed, in one pass over their bytes ([`read_answer`]); a range
//! answer goes straight into each replica's samples ([`RangeReader`]).
//!
//! Each replica is one `pod` (where the series have that label, as Kubernetes service
//! discovery sets it) or else one `instance`; vLLM's `engine` label inside a replica stays
//! as a scrape has it and is summed by [`crate::record`]. A counter that goes down inside
//! the window is a restart: the series keeps the raw readings, so the series checks and
//! the cross-checks see the drop as they see it in a recording (and, where the engine
//! exports `*_created` stamps, the snapshots' stamps differ too).

use inferlint_core::engine::scrape_metrics;
use inferlint_core::model::metrics::Sample;
use inferlint_core::model::{SeriesSample, Snapshot};
use inferlint_core::{Engine, EngineDescriptor};

use crate::prom;

mod answer;
mod range;

pub use answer::{
    parse_answer, parse_value, read_answer, ApiError, ApiSeries, Collect, RawSeries, SeriesSink,
};
pub use range::{PieceRead, RangeReader};

/// The most points one range query asks of one series. Prometheus refuses a query
/// over 11,000 points per series ("exceeded maximum resolution").
pub const MAX_POINTS: u64 = 11_000;
/// The most range queries one read of a window sends: at most 11 million points of each
/// series (127 days at 1 s, for a fleet whose pieces are [`MAX_POINTS`] long), and at
/// most 1,000 answers of up to [`RANGE_ANSWER_BYTES`]. A year at 1 ms would be 2.9
/// million queries, hours of work.
pub const MAX_RANGE_QUERIES: u64 = 1_000;

/// The most bytes one point of a range answer takes, `[t,"v"],` as Prometheus writes
/// it: a time of at most 11 digits of seconds (a wall time is below 10^11 s) and a
/// fraction of three (`marshalTimestamp`), 15 bytes; a value of at most 25 (Go's shortest
/// text, `'f'` from 1e-6 to 1e21 such as `-0.0000012345678901234567`, `'e'` outside such
/// as `-1.2345678901234567e-308`); and `[`, `,"`, `"]` and `,`, 6.
pub const MAX_POINT_BYTES: u64 = 46;
/// The most bytes a range query's answer is sized for: half the most an answer may be
/// ([`prom::MAX_BODY_BYTES`], 64 MiB), so that series the snapshots did not show (a
/// replica that came and went inside the window) leave room. At most about this much
/// of an answer is held while it is read, with its points as numbers.
pub const RANGE_ANSWER_BYTES: u64 = 32 << 20;
/// The bytes of a series in a range answer besides its labels and points:
/// `{"metric":`, `,"values":[`, `]}` and `,`.
const SERIES_BYTES: u64 = 24;
/// The bytes of a range answer besides its series, with room for warnings:
/// `{"status":"success","data":{"resultType":"matrix","result":[` and `]}}` are 63.
const ENVELOPE_BYTES: u64 = 1024;

/// What a range query's answer holds besides its points, from the snapshots: how many
/// series, and the bytes of their labels as the API writes them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RangeSize {
    /// Series the range query answers.
    pub series: u64,
    /// The bytes of their `"metric"` objects, at most.
    pub metric_bytes: u64,
}

/// The series a range query of `names` (each with or without `_total`, as
/// [`names_query`] asks them) answers, counted in the snapshots' instant answers (a
/// series in both counted once), with the bytes of their labels at most as the API
/// writes them (Go escapes `<`, `>`, `&` and control characters as `\u00XX`).
pub fn range_size<'a>(
    answers: impl IntoIterator<Item = &'a [ApiSeries]>,
    names: &[&str],
) -> RangeSize {
    let bases: Vec<&str> = names
        .iter()
        .map(|n| n.strip_suffix("_total").unwrap_or(n))
        .collect();
    let asked = |name: &str| {
        let base = name.strip_suffix("_total").unwrap_or(name);
        bases.contains(&base)
    };
    let mut seen: std::collections::HashSet<(&str, &[(String, String)])> =
        std::collections::HashSet::new();
    let mut size = RangeSize::default();
    for s in answers.into_iter().flatten() {
        if !asked(&s.name) || !seen.insert((s.name.as_str(), s.labels.as_slice())) {
            continue;
        }
        let labels: u64 = s
            .labels
            .iter()
            .map(|(k, v)| json_text_bytes(k) + 1 + json_text_bytes(v) + 1)
            .sum();
        size.series += 1;
        size.metric_bytes +=
            2 + json_text_bytes("__name__") + 1 + json_text_bytes(&s.name) + labels;
    }
    size
}

/// The most bytes `text` takes as a JSON string written by Go, quotes included.
fn json_text_bytes(text: &str) -> u64 {
    let inner: usize = text
        .chars()
        .map(|c| match c {
            '"' | '\\' => 2,
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => 6,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        })
        .sum();
    inner as u64 + 2
}

/// The most bytes an answer to a range query of `points` points a series takes, for the
/// series `size` counts.
pub fn range_answer_bytes(size: RangeSize, points: u64) -> u64 {
    ENVELOPE_BYTES
        .saturating_add(size.metric_bytes)
        .saturating_add(size.series.saturating_mul(SERIES_BYTES))
        .saturating_add(
            size.series
                .saturating_mul(points)
                .saturating_mul(MAX_POINT_BYTES),
        )
}

/// How many points of each series one range query asks: the most whose answer stays
/// within [`RANGE_ANSWER_BYTES`] ([`range_answer_bytes`]), at most [`MAX_POINTS`] and at
/// least one: eight replicas of seven series ask 11,000 points a query, 256 about 400.
pub fn points_per_query(size: RangeSize) -> u64 {
    let fixed = range_answer_bytes(size, 0);
    let per_point = size.series.max(1).saturating_mul(MAX_POINT_BYTES);
    (RANGE_ANSWER_BYTES.saturating_sub(fixed) / per_point).clamp(1, MAX_POINTS)
}

/// How many range queries [`split_range`] cuts the window into, counted without making
/// the pieces (a century at 1 ms would be a list of 290 million).
pub fn range_queries(start_ms: i64, end_ms: i64, step_ms: i64, max_points: u64) -> u64 {
    if max_points == 0 {
        return 0;
    }
    points_in(start_ms, end_ms, step_ms).div_ceil(max_points)
}

/// Drops every point outside `[from_ms, to_ms]` (a Prometheus that answers beyond the
/// window asked); returns how many were dropped.
pub fn keep_within(series: &mut [ApiSeries], from_ms: i64, to_ms: i64) -> u64 {
    let mut dropped = 0;
    for s in series {
        let before = s.points.len();
        s.points.retain(|&(t, _)| {
            let t_ms = (t * 1000.0).round();
            t_ms >= from_ms as f64 && t_ms <= to_ms as f64
        });
        dropped += (before - s.points.len()) as u64;
    }
    dropped
}

/// Reads a time as the command line takes it: Unix seconds (`1764547200`,
/// `1764547200.5`) or RFC 3339 (`2025-12-01T00:00:00Z`, `2025-12-01T01:00:00.5+01:00`).
pub fn parse_time(text: &str) -> Result<f64, TimeError> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<f64>() {
        if (0.0..inferlint_core::model::MAX_WALL_TIME).contains(&seconds) {
            return Ok(seconds);
        }
        return Err(TimeError::OutOfRange(text.to_owned()));
    }
    rfc3339(text).ok_or_else(|| TimeError::NotATime(text.to_owned()))
}

/// Why a time given on the command line cannot be read; each holds the text as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// A number that is no Unix time in seconds (negative, or past the year 9999).
    #[error("'{0}' is not a Unix time in seconds")]
    OutOfRange(String),
    /// Neither a number nor an RFC 3339 time.
    #[error("'{0}' is neither Unix seconds nor an RFC 3339 time (2025-12-01T09:30:00Z)")]
    NotATime(String),
}

fn rfc3339(text: &str) -> Option<f64> {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' {
        return None;
    }
    if !matches!(bytes[10], b'T' | b't' | b' ') || bytes[13] != b':' || bytes[16] != b':' {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut fraction = 0.0;
    if let Some(after_dot) = rest.strip_prefix('.') {
        let n = after_dot.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        fraction = format!("0.{}", &after_dot[..n]).parse().ok()?;
        rest = &after_dot[n..];
    }
    let offset_s = match rest {
        "Z" | "z" => 0,
        zone if zone.len() == 6 && (zone.starts_with('+') || zone.starts_with('-')) => {
            let z = zone.as_bytes();
            if z[3] != b':' {
                return None;
            }
            let h: i64 = zone[1..3].parse().ok()?;
            let m: i64 = zone[4..6].parse().ok()?;
            let sign = if z[0] == b'-' { -1 } else { 1 };
            sign * (h * 3600 + m * 60)
        }
        _ => return None,
    };
    let days = inferlint_core::model::civil::days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    (seconds >= 0).then_some(seconds as f64 + fraction)
}

/// The window `[start_ms, end_ms]` at `step_ms` cut into pieces that each ask at most
/// `max_points` points: Prometheus answers a range query with the points `start`,
/// `start + step`, … up to `end`, so each piece starts on the same grid one step after
/// the last point of the piece before it, and together they ask every point of the
/// window exactly once.
pub fn split_range(start_ms: i64, end_ms: i64, step_ms: i64, max_points: u64) -> Vec<(i64, i64)> {
    if end_ms < start_ms || step_ms <= 0 || max_points == 0 {
        return Vec::new();
    }
    let per_piece = i64::try_from(max_points).unwrap_or(i64::MAX);
    let span = step_ms.saturating_mul(per_piece - 1);
    let mut pieces = Vec::new();
    let mut from = start_ms;
    while from <= end_ms {
        let to = from.saturating_add(span).min(end_ms);
        // The last point of this piece on the grid.
        let last = from + (to - from) / step_ms * step_ms;
        pieces.push((from, last));
        match last.checked_add(step_ms) {
            Some(next) => from = next,
            None => break,
        }
    }
    pieces
}

/// How many points Prometheus answers for a piece.
pub fn points_in(start_ms: i64, end_ms: i64, step_ms: i64) -> u64 {
    if end_ms < start_ms || step_ms <= 0 {
        return 0;
    }
    ((end_ms - start_ms) / step_ms) as u64 + 1
}

/// The scrape interval, from the raw samples' times of a range vector (`metric[5m]`):
/// the median gap between neighbouring samples of one series, in whole milliseconds.
pub fn scrape_interval_ms(series: &[ApiSeries]) -> Option<i64> {
    let mut gaps: Vec<i64> = series
        .iter()
        .flat_map(|s| {
            s.points
                .windows(2)
                .map(|w| ((w[1].0 - w[0].0) * 1000.0).round() as i64)
        })
        .filter(|g| *g > 0)
        .collect();
    if gaps.is_empty() {
        return None;
    }
    gaps.sort_unstable();
    // The lower median: with an even count, the smaller of the two middle gaps.
    Some(gaps[(gaps.len() - 1) / 2])
}

/// The label matchers of `--selector`, without braces: `{job="vllm"}` gives
/// `job="vllm"`; an empty selector gives none. A selector that names a metric is refused:
/// the queries name their own.
pub fn selector_matchers(selector: Option<&str>) -> Result<String, SelectorError> {
    let Some(text) = selector.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(String::new());
    };
    let inner = text
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .ok_or_else(|| SelectorError::NotInBraces(text.to_owned()))?;
    if inner.contains("__name__") {
        return Err(SelectorError::NamesAMetric(text.to_owned()));
    }
    Ok(inner.trim().trim_end_matches(',').to_owned())
}

/// Why `--selector` cannot be used; each holds the selector as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// Not label matchers in braces.
    #[error("--selector '{0}' is not label matchers in braces, e.g. '{{job=\"vllm\"}}'")]
    NotInBraces(String),
    /// A selector that names a metric, which the queries name themselves.
    #[error("--selector '{0}' names a metric; give only labels (the queries name the metrics)")]
    NamesAMetric(String),
}

/// The name as a reader that escapes the engine's colon stores it (`sglang:x` as
/// `sglang_x`), for an engine whose metrics are known to reach Prometheus so.
fn escaped_name(name: &str) -> Option<String> {
    Engine::ALL.iter().find_map(|e| {
        let d = e.descriptor();
        Some(format!(
            "{}{}",
            d.escaped_prefix?,
            name.strip_prefix(d.metric_prefix)?
        ))
    })
}

/// A selector of the series named `names` (exactly, each with or without `_total`, and
/// as a colon-escaping reader stores an engine's name where it is known to) and the
/// user's matchers.
pub fn names_query(names: &[&str], matchers: &str) -> String {
    let mut alternatives: Vec<String> = Vec::new();
    for name in names {
        let base = name.strip_suffix("_total").unwrap_or(name);
        let mut forms = vec![base.to_owned(), format!("{base}_total")];
        if let Some(escaped) = escaped_name(base) {
            forms.extend([format!("{escaped}_total"), escaped]);
        }
        for n in forms {
            let escaped = regex_escape(&n);
            if !alternatives.contains(&escaped) {
                alternatives.push(escaped);
            }
        }
    }
    selector_with(&alternatives.join("|"), matchers)
}

/// A selector of every series of the engines given (by their metric prefix) and the
/// user's matchers: what a snapshot holds.
pub fn prefixes_query(engines: &[Engine], matchers: &str) -> String {
    let alternatives: Vec<String> = engines
        .iter()
        .flat_map(|e| {
            let d = e.descriptor();
            std::iter::once(d.metric_prefix).chain(d.escaped_prefix)
        })
        .map(|prefix| format!("{}.*", regex_escape(prefix)))
        .collect();
    selector_with(&alternatives.join("|"), matchers)
}

fn selector_with(name_regex: &str, matchers: &str) -> String {
    if matchers.is_empty() {
        format!("{{__name__=~\"{name_regex}\"}}")
    } else {
        format!("{{__name__=~\"{name_regex}\",{matchers}}}")
    }
}

/// Escapes a metric name for a PromQL regular expression in a double-quoted string.
fn regex_escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            // One backslash for the regular expression, doubled for the string.
            out.push_str("\\\\");
        }
        out.push(c);
    }
    out
}

/// The metrics a series sample is built from ([`crate::record::sample_from_metrics`]), with the
/// info metric that weighs data-parallel engines' KV usage.
pub fn series_metric_names(engine: &EngineDescriptor) -> Vec<&'static str> {
    let mut names = vec![
        engine.running,
        engine.waiting,
        engine.kv_usage,
        engine.generation_tokens,
        engine.prompt_tokens,
    ];
    names.extend(engine.preemption_counter);
    names.extend(engine.preemption_witness);
    names.extend(engine.paused_gauge);
    names.extend(engine.cache_info.map(|c| c.metric));
    names
}

/// The replicas the answers name, in order, with the series that have neither `pod`
/// nor `instance` counted (they cannot be placed). Give the snapshots' answers at the
/// window's start and end: a replica that stopped answering during the window is in the
/// first only, one that joined in the second only, and both were part of the run.
pub fn replicas_of<'a>(answers: impl IntoIterator<Item = &'a [ApiSeries]>) -> (Vec<String>, usize) {
    let mut names: Vec<String> = Vec::new();
    let mut unplaced = 0;
    for s in answers.into_iter().flatten() {
        match s.replica() {
            Some(r) if !names.iter().any(|n| n == r) => names.push(r.to_owned()),
            Some(_) => {}
            None => unplaced += 1,
        }
    }
    names.sort();
    (names, unplaced)
}

/// One replica's snapshot at `t`: every series of an instant query that belongs to it,
/// as exposition text and parsed samples. `None` when none does.
pub fn snapshot_of(series: &[ApiSeries], replica: &str, source: &str) -> Option<Snapshot> {
    let mut samples: Vec<Sample> = Vec::new();
    let mut t_wall: Option<f64> = None;
    for s in series.iter().filter(|s| s.replica() == Some(replica)) {
        let Some(&(t, value)) = s.points.last() else {
            continue;
        };
        t_wall = Some(t_wall.map_or(t, |w: f64| w.max(t)));
        samples.push(Sample {
            name: s.name.clone(),
            labels: s.labels.clone(),
            value,
            timestamp_ms: None,
        });
    }
    let t_wall = t_wall?;
    samples.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.labels.cmp(&b.labels)));
    let mut text = String::new();
    for sample in &samples {
        prom::write_sample(&mut text, sample);
    }
    Some(Snapshot {
        url: source.to_owned(),
        t_wall: Some(t_wall),
        t_mono_ns: None,
        latency_s: None,
        text,
        metrics: scrape_metrics(samples),
    })
}

/// One replica's series samples from a range answer, in time order: at each step, the
/// series that have a point there become one scrape, read through the engine's table as
/// a recorder reads a scrape. A step where the replica has no point at all is left out
/// (Prometheus had no reading within its look-back): a gap, never zeros. A window is read
/// a piece at a time by [`RangeReader`], which reads the answer's bytes the same way.
pub fn samples_of(
    series: &[ApiSeries],
    replica: &str,
    engine: &EngineDescriptor,
) -> Vec<SeriesSample> {
    let mut columns: Vec<range::Column> = series
        .iter()
        .filter(|s| s.replica() == Some(replica))
        .map(|s| range::Column {
            sample: Sample {
                name: s.name.clone(),
                labels: s.labels.clone(),
                value: f64::NAN,
                timestamp_ms: None,
            },
            points: s
                .points
                .iter()
                .map(|&(t, v)| ((t * 1000.0).round() as i64, v))
                .collect(),
        })
        .collect();
    let mut out = Vec::new();
    let _ = range::assemble(engine, &mut columns, |s| {
        out.push(*s);
        Ok::<(), std::convert::Infallible>(())
    });
    out
}

/// A folder name for a replica: its name with every character outside `A-Z a-z 0-9 . _ -`
/// as `_` (an `instance` is `host:port`), never empty, never `.` or `..`.
pub fn folder_name(replica: &str) -> String {
    let name: String = replica
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match name.as_str() {
        "" | "." | ".." => format!("replica{}", name.replace('.', "_")),
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn range_queries_are_counted_as_split_range_cuts_them() {
        for (start, end, step) in [(0, 0, 1), (0, 10_999, 1), (0, 11_000, 1), (5, 1_000_000, 7)] {
            assert_eq!(
                range_queries(start, end, step, MAX_POINTS),
                split_range(start, end, step, MAX_POINTS).len() as u64
            );
        }
        // A year at 1 ms, counted at once.
        let year_ms = 365 * 86_400_000;
        assert_eq!(range_queries(0, year_ms, 1, MAX_POINTS), 2_866_910);
    }

    /// Points 11.6 days before and after the piece asked are dropped and counted; the
    /// piece's own ends are kept.
    #[test]
    fn points_outside_the_window_are_dropped_and_counted() {
        let far = 11.6 * 86_400.0;
        let mut series = vec![ApiSeries {
            points: vec![
                (100.0 - far, 1.0),
                (100.0, 2.0),
                (110.0, 3.0),
                (110.0 + far, 4.0),
            ],
            name: "x".into(),
            labels: Vec::new(),
        }];
        assert_eq!(keep_within(&mut series, 100_000, 110_000), 2);
        assert_eq!(series[0].points, [(100.0, 2.0), (110.0, 3.0)]);
    }

    proptest! {
        /// Every point of the window is asked exactly once, in order, and no piece asks
        /// more than the limit.
        #[test]
        fn the_split_asks_every_point_once_within_the_limit(
            start in 0i64..2_000_000_000_000,
            len in 0i64..400_000_000,
            step in 1i64..120_000,
            max in 1u64..20_000,
        ) {
            let end = start + len;
            let pieces = split_range(start, end, step, max);
            let total: u64 = pieces.iter().map(|&(a, b)| points_in(a, b, step)).sum();
            prop_assert_eq!(total, points_in(start, end, step));
            let mut expected = start;
            for &(a, b) in &pieces {
                prop_assert_eq!(a, expected);
                prop_assert!(points_in(a, b, step) <= max);
                prop_assert!(b <= end);
                prop_assert_eq!((b - start) % step, 0);
                expected = b + step;
            }
            prop_assert!(expected > end);
        }

        /// With the piece size chosen for a fleet's series, every point of the window is
        /// still asked exactly once, in order; no piece asks more than 11,000 points a
        /// series, and each answer stays within the bytes it is sized for (where the
        /// labels alone leave room for one point a series).
        #[test]
        fn the_sized_split_asks_every_point_once_within_both_bounds(
            start in 0i64..2_000_000_000_000,
            len in 0i64..400_000_000,
            step in 1i64..120_000,
            series in 0u64..20_000,
            label_bytes in 0u64..4_000,
        ) {
            let size = RangeSize { series, metric_bytes: series * label_bytes };
            let max = points_per_query(size);
            prop_assert!((1..=MAX_POINTS).contains(&max));
            if range_answer_bytes(size, 1) <= RANGE_ANSWER_BYTES {
                prop_assert!(range_answer_bytes(size, max) <= RANGE_ANSWER_BYTES);
            }
            if max < MAX_POINTS {
                // The largest piece that fits: one point more would not.
                prop_assert!(range_answer_bytes(size, max + 1) > RANGE_ANSWER_BYTES);
            }
            let end = start + len;
            prop_assume!(range_queries(start, end, step, max) <= 100_000);
            let pieces = split_range(start, end, step, max);
            prop_assert_eq!(pieces.len() as u64, range_queries(start, end, step, max));
            let total: u64 = pieces.iter().map(|&(a, b)| points_in(a, b, step)).sum();
            prop_assert_eq!(total, points_in(start, end, step));
            let mut expected = start;
            for &(a, b) in &pieces {
                prop_assert_eq!(a, expected);
                prop_assert!(points_in(a, b, step) <= max);
                prop_assert!(b <= end);
                prop_assert_eq!((b - start) % step, 0);
                expected = b + step;
            }
            prop_assert!(expected > end);
        }

        #[test]
        fn unix_seconds_read_back(t in 0.0f64..1e10) {
            prop_assert_eq!(parse_time(&t.to_string()), Ok(t));
        }
    }

    #[test]
    fn a_day_at_one_second_is_eight_queries() {
        let pieces = split_range(0, 86_400_000, 1000, MAX_POINTS);
        assert_eq!(pieces.len(), 8);
        assert!(pieces
            .iter()
            .all(|&(a, b)| points_in(a, b, 1000) <= MAX_POINTS));
        assert!(split_range(10, 5, 1000, MAX_POINTS).is_empty());
        assert_eq!(split_range(0, 0, 1000, MAX_POINTS), vec![(0, 0)]);
    }

    /// The series a range query answers are counted from the snapshots: only the names it
    /// asks (with or without `_total`), a series in both snapshots once, and its labels'
    /// bytes as the API writes `"metric"`, with `<` written `\u003c` (Go's escape).
    #[test]
    fn the_range_is_sized_from_the_snapshots_series() {
        let series = |name: &str, pod: &str| ApiSeries {
            name: name.into(),
            labels: vec![("pod".into(), pod.into())],
            points: vec![(1.0, 1.0)],
        };
        let before = vec![
            series("a_total", "p<"),
            series("b", "p<"),
            series("zzz", "p<"),
        ];
        let after = vec![series("a_total", "p<"), series("a_total", "q")];
        let size = range_size([before.as_slice(), after.as_slice()], &["a", "b_total"]);
        assert_eq!(size.series, 3, "a_total of p< once, b of p<, a_total of q");
        let p_lt = r#"{"__name__":"a_total","pod":"p\u003c"}"#.len() as u64;
        let b = r#"{"__name__":"b","pod":"p\u003c"}"#.len() as u64;
        let q = r#"{"__name__":"a_total","pod":"q"}"#.len() as u64;
        assert_eq!(size.metric_bytes, p_lt + b + q);
    }

    /// A small fleet asks the most points Prometheus allows; a large one asks fewer, so
    /// that its answer stays within the bytes it is sized for. Eight replicas of seven
    /// series whose labels take 100 bytes each: 11,000 points are at most 1,024 + 56 ×
    /// 124 + 56 × 11,000 × 46 = 28.3 million bytes, within 32 MiB. 256 replicas (1,792
    /// series): (33,554,432 − 1,024 − 1,792 × 124) / (1,792 × 46) = 404 points.
    #[test]
    fn pieces_shrink_as_the_fleet_grows() {
        let fleet = |replicas: u64| RangeSize {
            series: replicas * 7,
            metric_bytes: replicas * 7 * 100,
        };
        assert_eq!(points_per_query(fleet(8)), MAX_POINTS);
        assert_eq!(points_per_query(fleet(256)), 404);
        assert!(range_answer_bytes(fleet(256), 404) <= RANGE_ANSWER_BYTES);
        assert!(range_answer_bytes(fleet(256), 405) > RANGE_ANSWER_BYTES);
        // No series seen: the most Prometheus allows; labels that fill the budget alone:
        // one point, and the window's length then decides whether it may be read.
        assert_eq!(points_per_query(RangeSize::default()), MAX_POINTS);
        let huge = RangeSize {
            series: 1,
            metric_bytes: RANGE_ANSWER_BYTES,
        };
        assert_eq!(points_per_query(huge), 1);
        // A day at 1 s of 1,024 replicas of seven series still fits the query bound.
        let day = split_range(0, 86_399_000, 1000, points_per_query(fleet(1024)));
        assert!(day.len() as u64 <= MAX_RANGE_QUERIES, "{}", day.len());
    }

    #[test]
    fn rfc3339_times() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Ok(0.0));
        assert_eq!(parse_time("2025-12-01T00:00:00Z"), Ok(1_764_547_200.0));
        assert_eq!(
            parse_time("2025-12-01T01:00:00.5+01:00"),
            Ok(1_764_547_200.5)
        );
        assert_eq!(parse_time("2024-02-29T12:00:00-00:30"), Ok(1_709_209_800.0));
        for bad in [
            "2025-13-01T00:00:00Z",
            "yesterday",
            "2025-12-01",
            "-5",
            "2025-12-01T00:00:00",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn strings_the_api_writes_for_special_values() {
        assert!(parse_value("NaN").is_some_and(f64::is_nan));
        assert_eq!(parse_value("+Inf"), Some(f64::INFINITY));
        assert_eq!(parse_value("-Inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_value("0.25"), Some(0.25));
        assert_eq!(parse_value("1e3"), Some(1000.0));
        assert_eq!(parse_value("inf"), None, "the API writes +Inf");
        assert_eq!(parse_value("x"), None);
    }

    #[test]
    fn answers_vectors_matrices_and_errors() {
        let vector = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"__name__":"vllm:num_requests_running","instance":"a:8000","job":"vllm"},"value":[100.5,"3"]},
            {"metric":{"__name__":"vllm:kv_cache_usage_perc","instance":"b:8000"},"value":[100.5,"NaN"]}]}}"#;
        let series = parse_answer(vector).expect("reads");
        assert_eq!(series[0].name, "vllm:num_requests_running");
        assert_eq!(series[0].replica(), Some("a:8000"));
        assert_eq!(series[0].points, vec![(100.5, 3.0)]);
        assert!(series[1].points[0].1.is_nan());
        let matrix = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"__name__":"x","pod":"p-0","instance":"10.0.0.1:8000"},"values":[[1,"1"],[2,"+Inf"]]}]}}"#;
        let m = parse_answer(matrix).expect("reads");
        assert_eq!(m[0].replica(), Some("p-0"), "pod before instance");
        assert_eq!(m[0].points[1].1, f64::INFINITY);
        let refused = br#"{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:2: parse error"}"#;
        let e = parse_answer(refused).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the Prometheus server refused the query (bad_data): invalid parameter \"query\": 1:2: parse error"
        );
        assert!(matches!(parse_answer(b"<html>"), Err(ApiError::Shape(_))));
        assert!(matches!(
            parse_answer(br#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"oops"]]}]}}"#),
            Err(ApiError::Shape(_))
        ));
    }

    #[test]
    fn selectors_and_queries() {
        assert_eq!(
            selector_matchers(Some("{job=\"vllm\"}")),
            Ok("job=\"vllm\"".into())
        );
        assert_eq!(selector_matchers(None), Ok(String::new()));
        assert_eq!(selector_matchers(Some(" {} ")), Ok(String::new()));
        assert!(selector_matchers(Some("job=\"vllm\"")).is_err());
        assert!(selector_matchers(Some("{__name__=\"up\"}")).is_err());
        let q = names_query(
            &["vllm:num_preemptions_total", "vllm:num_requests_running"],
            "job=\"v\"",
        );
        assert_eq!(
            q,
            "{__name__=~\"vllm:num_preemptions|vllm:num_preemptions_total|vllm:num_requests_running|vllm:num_requests_running_total\",job=\"v\"}"
        );
        assert_eq!(
            prefixes_query(&[Engine::Vllm, Engine::Trtllm], ""),
            format!(
                "{{__name__=~\"vllm:.*|{}.*\"}}",
                Engine::Trtllm.descriptor().metric_prefix
            )
        );
        // SGLang's names reach a colon-escaping Prometheus as `sglang_*`: both forms are
        // asked for.
        assert_eq!(
            names_query(&["sglang:num_running_reqs"], ""),
            "{__name__=~\"sglang:num_running_reqs|sglang:num_running_reqs_total|sglang_num_running_reqs_total|sglang_num_running_reqs\"}"
        );
        assert_eq!(
            prefixes_query(&[Engine::Sglang], ""),
            "{__name__=~\"sglang:.*|sglang_.*\"}"
        );
    }

    #[test]
    fn scrape_interval_is_the_median_gap() {
        let s = ApiSeries {
            name: "x".into(),
            labels: vec![],
            points: vec![
                (0.0, 1.0),
                (1.0, 1.0),
                (2.001, 1.0),
                (3.0, 1.0),
                (10.0, 1.0),
            ],
        };
        assert_eq!(scrape_interval_ms(&[s]), Some(1000));
        assert_eq!(scrape_interval_ms(&[]), None);
    }

    /// A step where a replica has readings becomes one sample through the engine's
    /// table; a step it lacks is no sample; two replicas stay apart.
    #[test]
    fn samples_per_replica_and_step() {
        let series = |name: &str, instance: &str, points: Vec<(f64, f64)>| ApiSeries {
            name: name.into(),
            labels: vec![("instance".into(), instance.into())],
            points,
        };
        let answer = vec![
            series(
                "vllm:num_requests_running",
                "a",
                vec![(1.0, 2.0), (2.0, 3.0)],
            ),
            series(
                "vllm:num_requests_waiting",
                "a",
                vec![(1.0, 0.0), (2.0, 1.0), (3.0, 4.0)],
            ),
            series("vllm:num_requests_running", "b", vec![(1.0, 7.0)]),
        ];
        let d = Engine::Vllm.descriptor();
        let a = samples_of(&answer, "a", d);
        assert_eq!(a.len(), 3);
        assert_eq!((a[1].running, a[1].waiting), (Some(3.0), Some(1.0)));
        assert_eq!(
            (a[2].running, a[2].waiting),
            (None, Some(4.0)),
            "missing is None, never 0"
        );
        let b = samples_of(&answer, "b", d);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].running, Some(7.0));
        assert_eq!(
            replicas_of([answer.as_slice()]),
            (vec!["a".to_owned(), "b".to_owned()], 0)
        );
        let snap = snapshot_of(&answer, "b", "prometheus").expect("b has series");
        assert_eq!(snap.text, "vllm:num_requests_running{instance=\"b\"} 7.0\n");
        assert!(snapshot_of(&answer, "c", "prometheus").is_none());
    }

    #[test]
    fn folder_names() {
        assert_eq!(folder_name("10.0.0.1:8000"), "10.0.0.1_8000");
        assert_eq!(folder_name("vllm-0"), "vllm-0");
        assert_eq!(folder_name(".."), "replica__");
        assert_eq!(folder_name(""), "replica");
        assert_eq!(folder_name("a/b"), "a_b");
    }
}
