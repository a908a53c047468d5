//! The recording, folded for drawing: one pass over the samples, constant memory.
//!
//! A day at 4 Hz is 345,600 samples; a chart is under a thousand pixels wide. Drawing
//! every sample would make a report of a hundred megabytes that no browser opens
//! comfortably, and picking every n-th sample would lose the peaks and the preemptions
//! the report exists to show. So the span is cut into at most [`MAX_POINTS`] equal
//! stretches of time and each stretch keeps the lowest, the highest and the last reading
//! of every gauge, and the preemptions gained in it: no peak and no preemption
//! disappears. A recording with fewer samples than that keeps every sample as it is.
//!
//! The data tables get their own, coarser stretches ([`MAX_ROWS`] at most, on round
//! steps such as every 5 s or every hour), folded in the same pass.

use std::collections::{BTreeMap, VecDeque};

use inferlint_core::judging::checks::series::{SeriesStats, SATURATED_USAGE};
use inferlint_core::{EngineDescriptor, SeriesSample};

/// The most points a time chart draws.
pub const MAX_POINTS: usize = 1000;
/// The most rows a data table shows.
pub const MAX_ROWS: usize = 40;
/// Round table steps, in seconds.
const ROW_STEPS: [f64; 22] = [
    0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0,
    7200.0, 10800.0, 21600.0, 43200.0, 86400.0, 172800.0, 604800.0,
];
/// The window of the output-tokens-per-second line.
const RATE_WINDOW_S: f64 = 1.0;
/// 2^64: seconds are summed in units of 2^-64 s ([`Levels`]).
const FIXED_UNITS_PER_S: f64 = 18_446_744_073_709_551_616.0;

/// The lowest, highest and last reading of one gauge within a stretch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    /// The lowest reading.
    pub min: f64,
    /// The highest reading.
    pub max: f64,
    /// The last reading.
    pub last: f64,
}

pub(crate) fn widen(range: &mut Option<Range>, value: Option<f64>) {
    let Some(v) = value.filter(|v| v.is_finite()) else {
        return;
    };
    match range {
        Some(r) => {
            r.min = r.min.min(v);
            r.max = r.max.max(v);
            r.last = v;
        }
        None => {
            *range = Some(Range {
                min: v,
                max: v,
                last: v,
            })
        }
    }
}

/// One stretch of the recording (a single sample when nothing was downsampled).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stretch {
    /// Seconds from the first sample to the stretch's first and last sample.
    pub t_first: f64,
    /// See `t_first`.
    pub t_last: f64,
    /// Samples in the stretch.
    pub samples: usize,
    /// Requests running.
    pub running: Option<Range>,
    /// Requests waiting.
    pub waiting: Option<Range>,
    /// KV cache use, 0 to 1.
    pub kv_usage: Option<Range>,
    /// How many requests of the sizes running fit in the cache, on samples with the cache
    /// at least 90% full (T9's arithmetic).
    pub fit_in_cache: Option<Range>,
    /// Output tokens per second over the second before each sample.
    pub tokens_per_s: Option<Range>,
    /// Preemptions the series counter gained in this stretch.
    pub preemptions: f64,
    /// Preemptions since the recording began, at the stretch's last sample.
    pub preemptions_so_far: f64,
}

impl Stretch {
    pub(crate) fn fold(&mut self, t: f64, s: &Reading) {
        if self.samples == 0 {
            self.t_first = t;
        }
        self.samples += 1;
        self.t_last = t;
        widen(&mut self.running, s.running);
        widen(&mut self.waiting, s.waiting);
        widen(&mut self.kv_usage, s.kv_usage);
        widen(&mut self.fit_in_cache, s.fit_in_cache);
        widen(&mut self.tokens_per_s, s.tokens_per_s);
        self.preemptions += s.preemptions_gained;
        self.preemptions_so_far = s.preemptions_so_far;
    }
}

/// What the timeline needs to know before the samples arrive, from the first pass over
/// the recording (the checks' [`SeriesStats`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineSetup {
    /// Samples the first pass counted.
    pub samples: usize,
    /// The first sample's wall clock, Unix seconds.
    pub first_t_wall: f64,
    /// The first sample's monotonic clock, when every sample has one: times are then
    /// monotonic, else wall.
    pub first_t_mono_ns: Option<i64>,
    /// Seconds from the first sample to the last.
    pub span_s: f64,
    /// The recording interval its header names.
    pub interval_s: Option<f64>,
    /// Usable KV blocks, when T14 passed.
    pub usable_blocks: Option<u64>,
    /// Whether the engine's token counter moves as tokens are made (vLLM), so that a
    /// tokens-per-second line means something.
    pub tokens_per_second: bool,
}

impl TimelineSetup {
    /// The setup for a recording the checks already folded; `None` without samples.
    pub fn new(
        stats: &SeriesStats,
        engine: &EngineDescriptor,
        usable_blocks: Option<u64>,
        interval_s: Option<f64>,
    ) -> Option<TimelineSetup> {
        let first_t_wall = stats.first_t_wall?;
        Some(TimelineSetup {
            samples: stats.samples,
            first_t_wall,
            first_t_mono_ns: if stats.all_mono {
                stats.first_t_mono_ns
            } else {
                None
            },
            span_s: stats.span_s().filter(|s| s.is_finite()).unwrap_or(0.0),
            interval_s,
            usable_blocks,
            tokens_per_second: !engine.tokens_at_finish,
        })
    }

    /// Whether the charts draw stretches rather than every sample.
    pub fn downsampled(&self) -> bool {
        self.samples > MAX_POINTS
    }

    /// The table step: the smallest round step that keeps the table within
    /// [`MAX_ROWS`] rows.
    pub fn row_step_s(&self) -> f64 {
        row_step_for(self.span_s)
    }
}

/// The table step of a recording `span_s` long: the smallest round step that keeps the
/// table within [`MAX_ROWS`] rows.
pub(crate) fn row_step_for(span_s: f64) -> f64 {
    let wanted = span_s / MAX_ROWS as f64;
    // Past the longest round step (a recording of years, or a damaged clock), the step
    // is the span's own share: the table never has more than MAX_ROWS + 1 rows.
    ROW_STEPS
        .iter()
        .copied()
        .find(|s| *s >= wanted)
        .unwrap_or(wanted)
}

/// How many table rows of `row_step_s` a recording `span_s` long has room for.
pub(crate) fn row_count(span_s: f64, row_step_s: f64) -> usize {
    if span_s > 0.0 {
        (span_s / row_step_s).floor() as usize + 1
    } else {
        1
    }
}

/// The table row a sample `t` seconds into the recording falls in.
pub(crate) fn row_index(t: f64, row_step_s: f64, rows: usize) -> usize {
    whole_part(t / row_step_s).min(rows - 1)
}

/// The whole part of `x`, 0 below 0 (and for NaN): `x.floor().max(0.0) as usize`, which a
/// cast gives alone (it truncates toward zero and saturates), without a call to `floor`
/// for each sample.
fn whole_part(x: f64) -> usize {
    x as usize
}

/// One sample, with what the timeline derives from it.
pub(crate) struct Reading {
    pub(crate) running: Option<f64>,
    pub(crate) waiting: Option<f64>,
    pub(crate) kv_usage: Option<f64>,
    pub(crate) fit_in_cache: Option<f64>,
    pub(crate) tokens_per_s: Option<f64>,
    pub(crate) preemptions_gained: f64,
    pub(crate) preemptions_so_far: f64,
}

/// A reading of a gauge, when it is a number.
pub(crate) fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite())
}

/// How many requests fit in the cache at a sample with `running` requests and the cache
/// `kv_usage` full, counted only on a full cache ([`SATURATED_USAGE`] or more).
pub(crate) fn fit_at(
    running: Option<f64>,
    kv_usage: Option<f64>,
    usable_blocks: Option<u64>,
) -> Option<f64> {
    match (running, kv_usage) {
        (Some(r), Some(u)) if r > 0.0 && u >= SATURATED_USAGE => {
            Some(fit_in_cache(r, u, usable_blocks))
        }
        _ => None,
    }
}

/// Seconds spent at each number of running requests: each interval between two samples
/// counted at the earlier sample's number. Each interval is held in units of 2^-64 s and
/// the units are summed as integers, so the sum is exact and the same whatever the order
/// the intervals are added in (one by one, or a stretch of the file at a time and the
/// stretches joined); it is rounded to seconds once, at the end.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Levels(BTreeMap<i64, i128>);

impl Levels {
    /// Counts the interval from the sample `before` (its time and running requests) to
    /// the next one, at `t`.
    pub(crate) fn add(&mut self, before: Option<(f64, Option<f64>)>, t: f64) {
        if let Some((t_before, Some(level))) = before {
            if level >= 0.0 && t > t_before {
                let units = ((t - t_before) * FIXED_UNITS_PER_S).round() as i128;
                let sum = self.0.entry(level.round() as i64).or_insert(0);
                *sum = sum.wrapping_add(units);
            }
        }
    }

    /// Adds the intervals of `other`, folded apart.
    pub(crate) fn join(&mut self, other: Levels) {
        for (level, units) in other.0 {
            let sum = self.0.entry(level).or_insert(0);
            *sum = sum.wrapping_add(units);
        }
    }

    /// Seconds at each level, in the order of the levels.
    pub(crate) fn seconds(&self) -> Vec<(i64, f64)> {
        self.0
            .iter()
            .map(|(level, units)| (*level, *units as f64 / FIXED_UNITS_PER_S))
            .collect()
    }
}

/// The last second or so of readings of the generation counter: (time, counter).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RateWindow(VecDeque<(f64, f64)>);

impl RateWindow {
    /// Folds in a reading of the counter at `t`: the output tokens per second over the
    /// window that ends there (from the latest reading at least [`RATE_WINDOW_S`]
    /// earlier), and whether the counter went back (a restart), which empties the window
    /// first.
    pub(crate) fn push(&mut self, t: f64, generated: f64) -> (Option<f64>, bool) {
        let reset = self.0.back().is_some_and(|&(_, g)| generated < g);
        if reset {
            self.0.clear();
        }
        self.0.push_back((t, generated));
        while self.0.len() >= 2 && self.0[1].0 <= t - RATE_WINDOW_S {
            self.0.pop_front();
        }
        let rate = self
            .0
            .front()
            .filter(|&&(t0, _)| t0 <= t - RATE_WINDOW_S && t > t0)
            .map(|&(t0, g0)| (generated - g0) / (t - t0));
        (rate, reset)
    }
}

/// Folds samples, in recording order, into a [`Timeline`].
#[derive(Debug)]
pub struct TimelineBuilder {
    setup: TimelineSetup,
    points: Vec<Stretch>,
    rows: Vec<Stretch>,
    row_step_s: f64,
    seconds_at_level: Levels,
    previous: Option<(f64, Option<f64>)>,
    last_preemptions: Option<f64>,
    preemptions_so_far: f64,
    preemption_readings: usize,
    rate_window: RateWindow,
    samples: usize,
}

impl TimelineBuilder {
    /// A builder sized from the first pass's counts.
    pub fn new(setup: TimelineSetup) -> TimelineBuilder {
        let row_step_s = setup.row_step_s();
        let rows = row_count(setup.span_s, row_step_s);
        let points = if setup.downsampled() {
            vec![Stretch::default(); MAX_POINTS]
        } else {
            Vec::with_capacity(setup.samples)
        };
        TimelineBuilder {
            points,
            rows: vec![Stretch::default(); rows],
            row_step_s,
            seconds_at_level: Levels::default(),
            previous: None,
            last_preemptions: None,
            preemptions_so_far: 0.0,
            preemption_readings: 0,
            rate_window: RateWindow::default(),
            samples: 0,
            setup,
        }
    }

    /// Seconds from the first sample, on the clock the checks use.
    fn seconds(&self, sample: &SeriesSample) -> f64 {
        match (self.setup.first_t_mono_ns, sample.t_mono_ns) {
            (Some(first), Some(now)) => (now - first) as f64 / 1e9,
            _ => sample.t_wall - self.setup.first_t_wall,
        }
    }

    /// Folds one sample in.
    pub fn push(&mut self, sample: &SeriesSample) {
        let t = self.seconds(sample);
        let running = finite(sample.running);
        let kv_usage = finite(sample.kv_usage);
        let fit_in_cache = fit_at(running, kv_usage, self.setup.usable_blocks);
        let tokens_per_s = if self.setup.tokens_per_second {
            finite(sample.generation_tokens).and_then(|g| self.rate_window.push(t, g).0)
        } else {
            None
        };
        let mut preemptions_gained = 0.0;
        if let Some(p) = finite(sample.preemptions) {
            self.preemption_readings += 1;
            // A counter that went down was reset (a restart): count from its new value.
            if let Some(before) = self.last_preemptions.filter(|b| p > *b) {
                preemptions_gained = p - before;
            }
            self.last_preemptions = Some(p);
        }
        self.preemptions_so_far += preemptions_gained;
        self.seconds_at_level.add(self.previous, t);
        self.previous = Some((t, running));
        let reading = Reading {
            running,
            waiting: finite(sample.waiting),
            kv_usage,
            fit_in_cache,
            tokens_per_s,
            preemptions_gained,
            preemptions_so_far: self.preemptions_so_far,
        };
        if self.setup.downsampled() {
            let index = stretch_index(t, self.setup.span_s, MAX_POINTS);
            self.points[index].fold(t, &reading);
        } else {
            let mut point = Stretch::default();
            point.fold(t, &reading);
            self.points.push(point);
        }
        let row = row_index(t, self.row_step_s, self.rows.len());
        self.rows[row].fold(t, &reading);
        self.samples += 1;
    }

    /// The timeline, once every sample was pushed.
    pub fn finish(self) -> Timeline {
        let keep = |v: Vec<Stretch>| v.into_iter().filter(|s| s.samples > 0).collect();
        Timeline {
            bucket_s: self
                .setup
                .downsampled()
                .then(|| self.setup.span_s / MAX_POINTS as f64),
            points: keep(self.points),
            rows: keep(self.rows),
            row_step_s: self.row_step_s,
            seconds_at_level: self.seconds_at_level.seconds(),
            samples: self.samples,
            preemptions: self.preemptions_so_far,
            has_preemption_counter: self.preemption_readings > 0,
            setup: self.setup,
        }
    }
}

pub(crate) fn stretch_index(t: f64, span_s: f64, count: usize) -> usize {
    if span_s <= 0.0 || !t.is_finite() {
        return 0;
    }
    whole_part(t / span_s * count as f64).min(count - 1)
}

/// How many requests of the size the running ones have fit in the cache: T9's arithmetic
/// (core's `checks::series` ceiling), with whole blocks when the usable block count is
/// known. Kept in step with it by the test `fit_in_cache_matches_t9` below.
pub fn fit_in_cache(running: f64, usage: f64, usable_blocks: Option<u64>) -> f64 {
    // The same arithmetic as T9's, so the chart's line and the verdict never disagree.
    inferlint_core::judging::checks::series::ceiling(running, usage, usable_blocks) as f64
}

/// The recording as the charts draw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// What the first pass over the recording counted.
    pub setup: TimelineSetup,
    /// What the time charts draw: every sample, or at most [`MAX_POINTS`] stretches.
    pub points: Vec<Stretch>,
    /// What the data tables show, one row per `row_step_s`.
    pub rows: Vec<Stretch>,
    /// Seconds between two rows of the tables.
    pub row_step_s: f64,
    /// The width of a chart stretch when the charts are downsampled.
    pub bucket_s: Option<f64>,
    /// Seconds spent at each number of running requests (each sample's level until the
    /// next sample).
    pub seconds_at_level: Vec<(i64, f64)>,
    /// Samples folded.
    pub samples: usize,
    /// Preemptions the series counter gained over the recording.
    pub preemptions: f64,
    /// Whether the recording has a preemption counter at all (TensorRT-LLM's has none).
    pub has_preemption_counter: bool,
}

impl Timeline {
    /// Folds a whole recording held in memory (tests and benchmarks; the command line
    /// streams the file instead).
    pub fn from_samples(
        engine: &EngineDescriptor,
        usable_blocks: Option<u64>,
        interval_s: Option<f64>,
        samples: &[SeriesSample],
    ) -> Option<Timeline> {
        let mut stats = SeriesStats::new();
        for s in samples {
            stats.push(s);
        }
        let setup = TimelineSetup::new(&stats, engine, usable_blocks, interval_s)?;
        let mut builder = TimelineBuilder::new(setup);
        for s in samples {
            builder.push(s);
        }
        Some(builder.finish())
    }

    /// Seconds from the first sample to the last.
    pub fn span_s(&self) -> f64 {
        self.setup.span_s
    }

    /// Whether the charts draw stretches rather than every sample.
    pub fn downsampled(&self) -> bool {
        self.bucket_s.is_some()
    }

    /// Whether any sample had a tokens-per-second reading.
    pub fn has_rate(&self) -> bool {
        self.points.iter().any(|p| p.tokens_per_s.is_some())
    }

    /// Whether any sample had a reading of `gauge`.
    pub fn has(&self, gauge: fn(&Stretch) -> Option<Range>) -> bool {
        self.points.iter().any(|p| gauge(p).is_some())
    }

    /// The highest reading of a gauge over the recording.
    pub fn peak(&self, gauge: fn(&Stretch) -> Option<Range>) -> Option<f64> {
        self.points
            .iter()
            .filter_map(|p| gauge(p).map(|r| r.max))
            .reduce(f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferlint_core::engine::VLLM;

    fn sample(t: f64, running: f64, waiting: f64, usage: f64, preemptions: f64) -> SeriesSample {
        SeriesSample {
            t_wall: 1000.0 + t,
            t_mono_ns: Some((t * 1e9) as i64),
            running: Some(running),
            waiting: Some(waiting),
            kv_usage: Some(usage),
            preemptions: Some(preemptions),
            generation_tokens: Some(t * 100.0),
            ..SeriesSample::default()
        }
    }

    #[test]
    fn a_short_recording_keeps_every_sample() {
        let samples: Vec<_> = (0..20)
            .map(|i| sample(i as f64 * 0.25, 4.0, 0.0, 0.5, 0.0))
            .collect();
        let t = Timeline::from_samples(&VLLM, None, Some(0.25), &samples).unwrap();
        assert_eq!(t.points.len(), 20);
        assert!(!t.downsampled());
        assert_eq!(t.row_step_s, 0.25);
        let rate = t.points[10].tokens_per_s.unwrap();
        assert!((rate.last - 100.0).abs() < 1e-6, "{rate:?}");
        assert!(t.points[2].tokens_per_s.is_none(), "no full second yet");
    }

    /// A day at 4 Hz with one spike and one preemption hidden in it: both survive.
    #[test]
    fn downsampling_keeps_every_peak_and_preemption() {
        let n = 345_600;
        let mut preempted = 0.0;
        let samples: Vec<_> = (0..n)
            .map(|i| {
                let t = i as f64 * 0.25;
                let running = if i == 123_457 { 31.0 } else { 10.0 };
                if i == 200_001 || i == 300_000 {
                    preempted += 1.0;
                }
                sample(t, running, 3.0, 0.95, preempted)
            })
            .collect();
        let t = Timeline::from_samples(&VLLM, Some(42), Some(0.25), &samples).unwrap();
        assert!(t.downsampled());
        assert!(t.points.len() <= MAX_POINTS);
        assert_eq!(t.peak(|p| p.running), Some(31.0));
        let marked: f64 = t.points.iter().map(|p| p.preemptions).sum();
        assert_eq!(marked, 2.0);
        assert_eq!(t.preemptions, 2.0);
        assert!(t.rows.len() <= MAX_ROWS + 1);
        let rows_marked: f64 = t.rows.iter().map(|p| p.preemptions).sum();
        assert_eq!(rows_marked, 2.0);
        let counted: usize = t.points.iter().map(|p| p.samples).sum();
        assert_eq!(counted, n);
        let seconds: f64 = t.seconds_at_level.iter().map(|(_, s)| s).sum();
        assert!((seconds - (n - 1) as f64 * 0.25).abs() < 1e-3);
    }

    #[test]
    fn fit_in_cache_matches_t9() {
        // The spec's ceiling cases (reference-behaviour section 8).
        for (usage, running, want) in [
            (0.125, 1.0, 8.0),
            (0.308, 1.0, 3.0),
            (0.423, 1.0, 2.0),
            (0.538, 1.0, 1.0),
            (0.25, 2.0, 8.0),
            (0.164, 1.0, 6.0),
        ] {
            assert_eq!(
                fit_in_cache(running, usage, None),
                want,
                "{usage} {running}"
            );
        }
        assert_eq!(fit_in_cache(1.0, 6.0 / 48.0 + 1e-12, Some(48)), 8.0);
        assert_eq!(fit_in_cache(10.0, 40.0 / 42.0, Some(42)), 10.0);
    }

    /// Seconds at a level are the exact sum of the intervals, rounded once: ten
    /// intervals of 0.1 s (each a little over a tenth as a binary fraction) read 1.0 s,
    /// where adding them one at a time would round down to 0.9999999999999999; and the
    /// sum is the same in any order the intervals are added.
    #[test]
    fn seconds_at_a_level_are_summed_exactly() {
        let naive: f64 = (0..10).map(|_| 0.1).sum();
        assert_eq!(naive, 0.9999999999999999);
        let mut levels = Levels::default();
        for _ in 0..10 {
            levels.add(Some((0.0, Some(1.0))), 0.1);
        }
        assert_eq!(levels.seconds(), vec![(1, 1.0)]);
        let (mut first, mut second) = (Levels::default(), Levels::default());
        let intervals = [0.1, 1e-9, 0.3, 2.5e-7, 0.7];
        for (i, dt) in intervals.iter().enumerate() {
            first.add(Some((0.0, Some(2.0))), *dt);
            second.add(Some((0.0, Some(2.0))), intervals[intervals.len() - 1 - i]);
        }
        assert_eq!(first, second);
        let mut split = Levels::default();
        let mut rest = Levels::default();
        for dt in &intervals[..2] {
            split.add(Some((0.0, Some(2.0))), *dt);
        }
        for dt in &intervals[2..] {
            rest.add(Some((0.0, Some(2.0))), *dt);
        }
        split.join(rest);
        assert_eq!(split, first);
    }

    /// The cast the stretch and row indices take is the floor they were written with,
    /// for every value a division can give.
    #[test]
    fn the_whole_part_is_the_floor() {
        for x in [
            0.0,
            -0.0,
            0.4,
            0.999_999_999_999_999_9,
            1.0,
            7.5,
            999.999,
            -0.5,
            -3.0,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ] {
            assert_eq!(whole_part(x), x.floor().max(0.0) as usize, "{x}");
        }
    }

    #[test]
    fn a_counter_reset_is_not_a_preemption() {
        let samples = vec![
            sample(0.0, 1.0, 0.0, 0.5, 5.0),
            sample(1.0, 1.0, 0.0, 0.5, 7.0),
            sample(2.0, 1.0, 0.0, 0.5, 0.0),
            sample(3.0, 1.0, 0.0, 0.5, 1.0),
        ];
        let t = Timeline::from_samples(&VLLM, None, None, &samples).unwrap();
        assert_eq!(t.preemptions, 3.0);
    }
}
