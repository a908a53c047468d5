//! The timeline folded in the checks' own pass over the recording: each stretch of the
//! file on its own thread, the stretches joined in file order.
//!
//! A [`TimelineBuilder`] needs the recording's span before its
//! first sample, to cut it into equal stretches of time, and it folds in order: the
//! seconds at each level, the preemptions gained and the tokens-per-second window each
//! carry over from the sample before. A [`TimelinePass`] takes the span from the
//! recording's first and last sample, which the file's ends show before the pass, and
//! folds what carries over at a stretch's edges when the stretches are joined: the
//! interval across the edge, the preemptions gained at the first reading after it, and
//! the rates of the samples in the first second after it, worked out again from the
//! window the stretch before ended with.
//!
//! What the ends show is checked against what the pass counted ([`TimelinePass::finish`]):
//! when the first sample, the clock or the span differ (a refused line at either end, a
//! sample without a monotonic clock), the pass gives no timeline and the caller reads the
//! recording again, as it did before there was a pass. The same goes for a block count
//! the checks trust that is not the one the after reading names, and for a preemption
//! counter that is not a whole number: summed stretch by stretch, its fractions could
//! round otherwise than summed sample by sample. Whenever the pass gives a timeline, it
//! is the one the builder makes of the same samples.

use inferlint_core::judging::checks::series::{usable_blocks_named, SeriesStats};
use inferlint_core::model::{SampleFold, MAX_EXACT_COUNT};
use inferlint_core::{Engine, EngineDescriptor, SeriesSample, Snapshot};

use crate::timeline::{
    finite, fit_at, row_count, row_index, row_step_for, stretch_index, widen, Levels, Range,
    RateWindow, Reading, Stretch, Timeline, TimelineBuilder, TimelineSetup, MAX_POINTS,
};

/// What the checks' pass over a recording brought for the charts: its fold, and the
/// interval and address the recording's header names.
#[derive(Debug, Clone, Copy)]
pub struct PassCharts<'a> {
    /// The fold, every sample the checks read folded in.
    pub pass: &'a TimelinePass,
    /// The sampling interval the recording's header names.
    pub interval_s: Option<f64>,
    /// The address the recording's header names.
    pub url: Option<&'a str>,
}

/// The recording folded for drawing, with the address its header names: the checks'
/// pass's timeline where it vouches for it ([`TimelinePass::finish`]), else what
/// `read_again` folds into a builder set up from the same statistics, with the interval
/// and address the header it read names. `None` when the recording has no samples.
///
/// Every page that draws a checked run takes its charts through here, so a page drawn
/// in the pass and one drawn from the file read again are the same page.
pub fn charts_timeline<E>(
    stats: &SeriesStats,
    engine: &EngineDescriptor,
    usable_blocks: Option<u64>,
    pass: Option<PassCharts<'_>>,
    read_again: impl FnOnce(&mut TimelineBuilder) -> Result<(Option<f64>, Option<String>), E>,
) -> Result<Option<(Timeline, Option<String>)>, E> {
    if let Some(charts) = pass {
        if let Some(mut timeline) = charts.pass.finish(stats, engine, usable_blocks) {
            timeline.setup.interval_s = charts.interval_s;
            return Ok(Some((timeline, charts.url.map(str::to_owned))));
        }
    }
    let Some(setup) = TimelineSetup::new(stats, engine, usable_blocks, None) else {
        return Ok(None);
    };
    let mut builder = TimelineBuilder::new(setup);
    let (interval_s, url) = read_again(&mut builder)?;
    let mut timeline = builder.finish();
    timeline.setup.interval_s = interval_s;
    Ok(Some((timeline, url)))
}

/// What the pass takes from the recording's ends: where its time starts, which clock it
/// reads, how long it is, and so how its stretches and rows are cut.
#[derive(Debug, Clone, PartialEq)]
struct Layout {
    first_t_wall: f64,
    /// The first sample's monotonic clock, when the first and the last sample have one.
    first_t_mono_ns: Option<i64>,
    span_s: f64,
    row_step_s: f64,
    rows: usize,
    /// The usable block count the after reading names: the one T14 passes with, if it
    /// passes. The fit in the cache is folded with it and without it.
    blocks: Option<u64>,
}

/// A stretch of the charts or the tables as the pass folds it.
#[derive(Debug, Clone, Default, PartialEq)]
struct Point {
    /// The stretch; its `fit_in_cache` counted without a block count.
    stretch: Stretch,
    /// How many fit, counted in the layout's blocks.
    fit_blocks: Option<Range>,
    /// The pass's count of samples before the stretch's last sample.
    last_sample: usize,
}

impl Point {
    fn fold(&mut self, t: f64, reading: &Reading, fit_blocks: Option<f64>, sample: usize) {
        self.stretch.fold(t, reading);
        widen(&mut self.fit_blocks, fit_blocks);
        self.last_sample = sample;
    }

    /// The stretch with `right`'s samples, which follow this one's, folded in after.
    fn then(self, right: Point) -> Point {
        let (a, b) = (self.stretch, right.stretch);
        Point {
            stretch: Stretch {
                t_first: a.t_first,
                t_last: b.t_last,
                samples: a.samples + b.samples,
                running: in_order(a.running, b.running),
                waiting: in_order(a.waiting, b.waiting),
                kv_usage: in_order(a.kv_usage, b.kv_usage),
                fit_in_cache: in_order(a.fit_in_cache, b.fit_in_cache),
                tokens_per_s: in_order(a.tokens_per_s, b.tokens_per_s),
                preemptions: a.preemptions + b.preemptions,
                preemptions_so_far: b.preemptions_so_far,
            },
            fit_blocks: in_order(self.fit_blocks, right.fit_blocks),
            last_sample: right.last_sample,
        }
    }

    fn into_stretch(self, blocks: bool, tokens_per_second: bool) -> Stretch {
        let mut stretch = self.stretch;
        if blocks {
            stretch.fit_in_cache = self.fit_blocks;
        }
        if !tokens_per_second {
            stretch.tokens_per_s = None;
        }
        stretch
    }
}

/// The readings of `a`, then those of `b`: the lowest, the highest, and `b`'s last.
fn in_order(a: Option<Range>, b: Option<Range>) -> Option<Range> {
    match (a, b) {
        (Some(a), Some(b)) => Some(Range {
            min: a.min.min(b.min),
            max: a.max.max(b.max),
            last: b.last,
        }),
        (a, b) => b.or(a),
    }
}

/// Stretches that start at a given index, in order of their index: only those with
/// samples are kept, so a pass over part of the file holds only its own.
#[derive(Debug, Clone, Default, PartialEq)]
struct Stretches(Vec<(usize, Point)>);

impl Stretches {
    /// Folds a sample into the stretch at `index`. False when the index is below the
    /// last one's: time went back, and the pass's layout was not the recording's.
    fn fold(
        &mut self,
        index: usize,
        t: f64,
        reading: &Reading,
        fit_blocks: Option<f64>,
        sample: usize,
    ) -> bool {
        match self.0.last_mut() {
            Some((last, point)) if *last == index => {
                point.fold(t, reading, fit_blocks, sample);
                true
            }
            last => {
                let in_order = last.is_none_or(|(last, _)| *last < index);
                let mut point = Point::default();
                point.fold(t, reading, fit_blocks, sample);
                self.0.push((index, point));
                in_order
            }
        }
    }

    /// Appends the stretches of the samples that follow. False when they start before
    /// this one's last.
    fn append(&mut self, right: Stretches) -> bool {
        let mut right = right.0.into_iter().peekable();
        let mut in_order = true;
        if let (Some((last, point)), Some((first, _))) = (self.0.last_mut(), right.peek()) {
            if *last == *first {
                if let Some((_, next)) = right.next() {
                    *point = std::mem::take(point).then(next);
                }
            } else {
                in_order = *last < *first;
            }
        }
        self.0.extend(right);
        in_order
    }

    fn at(&mut self, index: usize) -> Option<&mut Point> {
        self.0.iter_mut().find(|(i, _)| *i == index).map(|(_, p)| p)
    }

    fn points_mut(&mut self) -> impl Iterator<Item = &mut Point> {
        self.0.iter_mut().map(|(_, p)| p)
    }
}

/// Puts `rates` (the stretch index each falls in, and the rate, in sample order) before
/// the rates each stretch already holds.
fn prepend_rates(stretches: &mut Stretches, rates: impl Iterator<Item = (usize, f64)>) {
    let mut grouped: Vec<(usize, Option<Range>)> = Vec::new();
    for (index, rate) in rates {
        match grouped.last_mut() {
            Some((last, range)) if *last == index => widen(range, Some(rate)),
            _ => {
                let mut range = None;
                widen(&mut range, Some(rate));
                grouped.push((index, range));
            }
        }
    }
    for (index, range) in grouped {
        if let Some(p) = stretches.at(index) {
            p.stretch.tokens_per_s = in_order(range, p.stretch.tokens_per_s);
        }
    }
}

/// The pass's first reading of the preemption counter: what it gained there is known only
/// when the stretch before is joined.
#[derive(Debug, Clone, Copy, PartialEq)]
struct FirstReading {
    value: f64,
    sample: usize,
    point: usize,
    row: usize,
}

/// A reading of the generation counter in the pass's first second, before the window
/// held a reading a second older: its rate is known only when the stretch before is
/// joined.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Head {
    t: f64,
    generated: f64,
    sample: usize,
    point: usize,
    row: usize,
}

/// The recording folded for drawing in the checks' pass, a stretch of the file at a time
/// (see the module's documentation). Made from the recording's ends with
/// [`TimelinePass::new`], folded as a [`SampleFold`], and turned into the
/// [`Timeline`] a [`TimelineBuilder`] would make with
/// [`TimelinePass::finish`].
#[derive(Debug, Clone, PartialEq)]
pub struct TimelinePass {
    layout: Layout,
    samples: usize,
    /// Each sample's own point, while the pass has no more than the charts draw.
    each: Option<Vec<Point>>,
    points: Stretches,
    rows: Stretches,
    levels: Levels,
    first_t: Option<f64>,
    /// The last sample's time and running requests.
    previous: Option<(f64, Option<f64>)>,
    first_reading: Option<FirstReading>,
    last_preemptions: Option<f64>,
    /// Preemptions gained within the pass (at its first reading, none: see
    /// `first_reading`).
    gained: f64,
    preemption_readings: usize,
    /// Every counter reading a whole number: sums of them are exact in any order.
    whole_counts: bool,
    window: RateWindow,
    /// Whether every reading of the generation counter so far is in `head`: no rate yet,
    /// and no restart of the counter.
    head_open: bool,
    head: Vec<Head>,
    /// False when time went back between stretches, or a stretch started before the
    /// last one ended: the layout was not the recording's, or the reader folds the file
    /// again in one pass.
    in_order: bool,
}

impl TimelinePass {
    /// The empty pass for a recording whose first and last sample are these (as the
    /// file's ends show them), with the block count the after reading names, if any.
    /// `None` when the two give no span to lay the charts out on.
    pub fn new(
        first: &SeriesSample,
        last: &SeriesSample,
        after: Option<&Snapshot>,
    ) -> Option<TimelinePass> {
        let first_t_mono_ns = first.t_mono_ns.filter(|_| last.t_mono_ns.is_some());
        // As the statistics count it: monotonic when every sample has that clock.
        let span_s = match (first_t_mono_ns, last.t_mono_ns) {
            (Some(a), Some(b)) => b.checked_sub(a)? as f64 / 1e9,
            _ => last.t_wall - first.t_wall,
        };
        let span_s = if span_s.is_finite() { span_s } else { 0.0 };
        let row_step_s = row_step_for(span_s);
        // The engines whose tables keep a block count: the one whose run this is decides
        // which, once the checks ran; a count that is not T14's reads the file again.
        let blocks = after.and_then(|after| {
            Engine::ALL
                .into_iter()
                .find_map(|e| usable_blocks_named(e.descriptor(), after))
        });
        Some(TimelinePass {
            layout: Layout {
                first_t_wall: first.t_wall,
                first_t_mono_ns,
                span_s,
                row_step_s,
                rows: row_count(span_s, row_step_s),
                blocks,
            },
            samples: 0,
            each: Some(Vec::new()),
            points: Stretches::default(),
            rows: Stretches::default(),
            levels: Levels::default(),
            first_t: None,
            previous: None,
            first_reading: None,
            last_preemptions: None,
            gained: 0.0,
            preemption_readings: 0,
            whole_counts: true,
            window: RateWindow::default(),
            head_open: true,
            head: Vec::new(),
            in_order: true,
        })
    }

    /// Seconds from the first sample, as the builder counts them.
    fn seconds(&self, sample: &SeriesSample) -> f64 {
        match (self.layout.first_t_mono_ns, sample.t_mono_ns) {
            // Wrapping: a clock the layout did not foresee gives no timeline, never a
            // panic.
            (Some(first), Some(now)) => now.wrapping_sub(first) as f64 / 1e9,
            _ => sample.t_wall - self.layout.first_t_wall,
        }
    }

    /// The timeline of every sample folded, as a [`TimelineBuilder`]
    /// set up from `stats` (the checks' statistics of the same pass), the run's
    /// `engine` and `usable_blocks` (T14's, from the results) would make it; `None` when
    /// the pass cannot vouch for that (see the module's documentation): the caller then
    /// reads the recording again into a builder. The interval is left for the caller to
    /// set from the recording's header, as it sets a builder's.
    pub fn finish(
        &self,
        stats: &SeriesStats,
        engine: &EngineDescriptor,
        usable_blocks: Option<u64>,
    ) -> Option<Timeline> {
        let setup = TimelineSetup::new(stats, engine, usable_blocks, None)?;
        let layout = &self.layout;
        let laid_out_so = setup.first_t_wall.to_bits() == layout.first_t_wall.to_bits()
            && setup.first_t_mono_ns == layout.first_t_mono_ns
            && setup.span_s.to_bits() == layout.span_s.to_bits()
            && setup.samples == self.samples;
        if !(laid_out_so && self.in_order && self.whole_counts && self.gained <= MAX_EXACT_COUNT) {
            return None;
        }
        let blocks = match usable_blocks {
            None => false,
            Some(b) if Some(b) == layout.blocks => true,
            Some(_) => return None,
        };
        let tokens = setup.tokens_per_second;
        let stretch = |p: &Point| p.clone().into_stretch(blocks, tokens);
        let points = if setup.downsampled() {
            self.points.0.iter().map(|(_, p)| stretch(p)).collect()
        } else {
            self.each.as_ref()?.iter().map(stretch).collect()
        };
        Some(Timeline {
            bucket_s: setup
                .downsampled()
                .then(|| setup.span_s / MAX_POINTS as f64),
            points,
            rows: self.rows.0.iter().map(|(_, p)| stretch(p)).collect(),
            row_step_s: layout.row_step_s,
            seconds_at_level: self.levels.seconds(),
            samples: self.samples,
            preemptions: self.gained,
            has_preemption_counter: self.preemption_readings > 0,
            setup,
        })
    }
}

impl SampleFold for TimelinePass {
    fn push(&mut self, sample: &SeriesSample) {
        let t = self.seconds(sample);
        let index = self.samples;
        let point = stretch_index(t, self.layout.span_s, MAX_POINTS);
        let row = row_index(t, self.layout.row_step_s, self.layout.rows);
        let running = finite(sample.running);
        let kv_usage = finite(sample.kv_usage);
        let fit_blocks = self
            .layout
            .blocks
            .and_then(|b| fit_at(running, kv_usage, Some(b)));
        // The rate is worked out whatever the engine: the finish leaves it out where the
        // engine counts tokens only when a request ends.
        let mut tokens_per_s = None;
        if let Some(generated) = finite(sample.generation_tokens) {
            let (rate, reset) = self.window.push(t, generated);
            if reset || rate.is_some() {
                self.head_open = false;
            }
            if self.head_open {
                self.head.push(Head {
                    t,
                    generated,
                    sample: index,
                    point,
                    row,
                });
            }
            tokens_per_s = rate;
        }
        let mut gained = 0.0;
        if let Some(p) = finite(sample.preemptions) {
            self.preemption_readings += 1;
            self.whole_counts &= p.fract() == 0.0;
            if self.first_reading.is_none() {
                self.first_reading = Some(FirstReading {
                    value: p,
                    sample: index,
                    point,
                    row,
                });
            }
            // A counter that went down was reset (a restart): count from its new value.
            if let Some(before) = self.last_preemptions.filter(|b| p > *b) {
                gained = p - before;
            }
            self.last_preemptions = Some(p);
        }
        self.gained += gained;
        self.levels.add(self.previous, t);
        self.previous = Some((t, running));
        self.first_t.get_or_insert(t);
        let reading = Reading {
            running,
            waiting: finite(sample.waiting),
            kv_usage,
            fit_in_cache: fit_at(running, kv_usage, None),
            tokens_per_s,
            preemptions_gained: gained,
            preemptions_so_far: self.gained,
        };
        self.samples += 1;
        if self.samples > MAX_POINTS {
            self.each = None;
        }
        if let Some(each) = self.each.as_mut() {
            let mut own = Point::default();
            own.fold(t, &reading, fit_blocks, index);
            each.push(own);
        }
        self.in_order &= self.points.fold(point, t, &reading, fit_blocks, index);
        self.in_order &= self.rows.fold(row, t, &reading, fit_blocks, index);
    }

    fn merge(mut self, mut right: TimelinePass) -> TimelinePass {
        if right.samples == 0 || self.layout != right.layout {
            self.in_order &= right.in_order && self.layout == right.layout;
            return self;
        }
        if self.samples == 0 {
            right.in_order &= self.in_order;
            return right;
        }
        let (Some((t_before, _)), Some(t_first)) = (self.previous, right.first_t) else {
            return self;
        };
        self.in_order &= right.in_order && t_first >= t_before;
        let offset = self.samples;

        // The interval across the edge.
        self.levels.add(self.previous, t_first);
        self.levels.join(std::mem::take(&mut right.levels));

        // The preemptions gained at the right's first reading, counted from the left's
        // last; every count after it carries the left's whole.
        let first_reading = right.first_reading;
        let at_edge = match (self.last_preemptions, first_reading) {
            (Some(before), Some(first)) if first.value > before => first.value - before,
            _ => 0.0,
        };
        let carried = self.gained;
        let shift = |p: &mut Point| {
            let edge = match first_reading {
                Some(first) if p.last_sample >= first.sample => at_edge,
                _ => 0.0,
            };
            p.stretch.preemptions_so_far += carried + edge;
            p.last_sample += offset;
        };
        if let Some(first) = first_reading {
            for p in [right.points.at(first.point), right.rows.at(first.row)]
                .into_iter()
                .flatten()
            {
                p.stretch.preemptions += at_edge;
            }
            if let Some(p) = right.each.as_mut().and_then(|e| e.get_mut(first.sample)) {
                p.stretch.preemptions += at_edge;
            }
        }
        right.points.points_mut().for_each(shift);
        right.rows.points_mut().for_each(shift);
        if let Some(each) = right.each.as_mut() {
            each.iter_mut().for_each(shift);
        }

        // The rates of the right's first second, from the window the left ended with;
        // they come before every rate the right worked out itself.
        let mut window = std::mem::take(&mut self.window);
        let rates: Vec<(Head, f64)> = right
            .head
            .iter()
            .filter_map(|head| Some((*head, window.push(head.t, head.generated).0?)))
            .collect();
        prepend_rates(&mut right.points, rates.iter().map(|(h, r)| (h.point, *r)));
        prepend_rates(&mut right.rows, rates.iter().map(|(h, r)| (h.row, *r)));
        if let Some(each) = right.each.as_mut() {
            for (head, rate) in &rates {
                if let Some(p) = each.get_mut(head.sample) {
                    let mut own = None;
                    widen(&mut own, Some(*rate));
                    p.stretch.tokens_per_s = in_order(own, p.stretch.tokens_per_s);
                }
            }
        }
        self.window = if right.head_open {
            window
        } else {
            std::mem::take(&mut right.window)
        };

        self.in_order &= self.points.append(right.points);
        self.in_order &= self.rows.append(right.rows);
        self.each = match (self.each.take(), right.each) {
            (Some(mut left), Some(right)) if left.len() + right.len() <= MAX_POINTS => {
                left.extend(right);
                Some(left)
            }
            _ => None,
        };
        if let Some(first) = first_reading.filter(|_| self.first_reading.is_none()) {
            self.first_reading = Some(FirstReading {
                sample: first.sample + offset,
                ..first
            });
        }
        self.last_preemptions = right.last_preemptions.or(self.last_preemptions);
        self.gained = carried + at_edge + right.gained;
        self.preemption_readings += right.preemption_readings;
        self.whole_counts &= right.whole_counts;
        self.previous = right.previous;
        self.samples += right.samples;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TimelineBuilder;
    use inferlint_core::engine::{SGLANG, VLLM};

    /// A small deterministic generator (xorshift), so that the cases are the same on every
    /// run.
    struct Dice(u64);

    impl Dice {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// A recording with what makes a stretch's edge hard: gaps over a second and bursts
    /// well under one (so the rate window reaches across edges by one reading or many),
    /// restarts of the generation and the preemption counters, readings missing from some
    /// samples, a cache now and then full (the fit in the cache), and running requests
    /// that change level.
    fn recording(n: usize, seed: u64, mono: bool) -> Vec<SeriesSample> {
        let mut dice = Dice(seed);
        let (mut t, mut generated, mut preempted) = (0.0, 1000.0, 3.0);
        (0..n)
            .map(|_| {
                t += match dice.below(12) {
                    0 => 1.75,
                    1 | 2 => 0.0625,
                    3 => 0.4,
                    _ => 0.25,
                };
                let running = dice.below(6) as f64;
                generated = if dice.below(40) == 0 {
                    7.0
                } else {
                    generated + running * 3.0 + dice.below(3) as f64
                };
                preempted = match dice.below(50) {
                    0 => 0.0,
                    1..=6 => preempted + 1.0 + dice.below(2) as f64,
                    _ => preempted,
                };
                SeriesSample {
                    // The wall clock carries a little jitter against the monotonic one.
                    t_wall: 1_790_000_000.0 + t + dice.below(5) as f64 * 1e-3,
                    t_mono_ns: mono.then(|| 9_000_000_000 + (t * 1e9) as i64),
                    running: (dice.below(15) != 0).then_some(running),
                    waiting: Some(dice.below(4) as f64),
                    kv_usage: Some(0.8 + dice.below(21) as f64 / 100.0),
                    preemptions: (dice.below(10) != 0).then_some(preempted),
                    generation_tokens: (dice.below(7) != 0).then_some(generated),
                    ..SeriesSample::default()
                }
            })
            .collect()
    }

    fn stats_of(samples: &[SeriesSample]) -> SeriesStats {
        let mut stats = SeriesStats::new();
        samples.iter().for_each(|s| stats.push(s));
        stats
    }

    /// The reference: the builder, sample by sample, set up from the statistics.
    fn built(samples: &[SeriesSample], engine: &EngineDescriptor, usable: Option<u64>) -> Timeline {
        let setup = TimelineSetup::new(&stats_of(samples), engine, usable, None).unwrap();
        let mut builder = TimelineBuilder::new(setup);
        samples.iter().for_each(|s| builder.push(s));
        builder.finish()
    }

    /// The pass over the recording cut at `cuts`, each stretch folded apart and the
    /// stretches joined in order, as the reader's threads do.
    fn passed(samples: &[SeriesSample], cuts: &[usize], blocks: Option<u64>) -> TimelinePass {
        let mut empty = TimelinePass::new(&samples[0], &samples[samples.len() - 1], None).unwrap();
        empty.layout.blocks = blocks;
        let mut edges = vec![0];
        edges.extend_from_slice(cuts);
        edges.push(samples.len());
        edges
            .windows(2)
            .map(|w| {
                let mut part = empty.clone();
                samples[w[0]..w[1]].iter().for_each(|s| part.push(s));
                part
            })
            .reduce(SampleFold::merge)
            .unwrap()
    }

    fn assert_same(samples: &[SeriesSample], cuts: &[usize], engine: &EngineDescriptor) {
        let stats = stats_of(samples);
        for usable in [None, Some(48)] {
            let pass = passed(samples, cuts, Some(48));
            let timeline = pass.finish(&stats, engine, usable);
            assert_eq!(
                timeline.as_ref(),
                Some(&built(samples, engine, usable)),
                "cut at {cuts:?}, blocks {usable:?}"
            );
        }
    }

    /// Every place one cut can fall in a recording the charts draw sample by sample.
    #[test]
    fn one_cut_anywhere_gives_the_builders_timeline() {
        for (seed, mono) in [(1, true), (2, false), (3, true)] {
            let samples = recording(240, seed, mono);
            for cut in 0..=samples.len() {
                assert_same(&samples, &[cut], &VLLM);
            }
        }
    }

    /// Many cuts, some a sample apart (a stretch of one sample, or none), in a recording
    /// long enough to be drawn in stretches of time.
    #[test]
    fn many_cuts_in_a_downsampled_recording_give_the_builders_timeline() {
        for seed in 1..=12 {
            let samples = recording(2600, seed, seed % 3 != 0);
            let mut dice = Dice(seed * 7919);
            let mut cuts: Vec<usize> = (0..=dice.below(9))
                .map(|_| dice.below(samples.len() as u64 + 1) as usize)
                .collect();
            cuts.push(cuts[0] + 1);
            cuts.sort_unstable();
            cuts.iter_mut().for_each(|c| *c = (*c).min(samples.len()));
            let timeline = built(&samples, &VLLM, None);
            assert!(timeline.downsampled(), "the case draws stretches of time");
            assert!(timeline.preemptions > 0.0 && timeline.has_rate());
            assert_same(&samples, &cuts, &VLLM);
            assert_same(&samples, &cuts, &SGLANG);
        }
    }

    /// A stretch whose every sample lies within a second of the stretch before: its
    /// rates all come from the window the stretch before ended with, and so does the
    /// window it leaves to the next.
    #[test]
    fn a_stretch_shorter_than_the_rate_window_carries_the_window_through() {
        let samples: Vec<SeriesSample> = (0..40)
            .map(|i| SeriesSample {
                t_wall: 1_790_000_000.0 + i as f64 * 0.125,
                t_mono_ns: Some(i * 125_000_000),
                running: Some(2.0),
                generation_tokens: Some(i as f64 * 10.0),
                preemptions: Some((i / 7) as f64),
                ..SeriesSample::default()
            })
            .collect();
        let timeline = built(&samples, &VLLM, None);
        // From the ninth sample on, a reading a second older is in the window.
        assert!(timeline.points[7].tokens_per_s.is_none());
        assert_eq!(timeline.points[8].tokens_per_s.map(|r| r.last), Some(80.0));
        assert_same(&samples, &[10, 13, 15, 16], &VLLM);
    }

    fn one_second_apart(n: i64) -> Vec<SeriesSample> {
        (0..n)
            .map(|i| SeriesSample {
                t_wall: 1_790_000_000.0 + i as f64,
                t_mono_ns: Some(i * 1_000_000_000),
                running: Some(1.0),
                preemptions: Some(i as f64),
                ..SeriesSample::default()
            })
            .collect()
    }

    /// A preemption counter that is not a whole number: its gains summed stretch by
    /// stretch could round otherwise than summed in order, so the pass gives no timeline.
    #[test]
    fn a_counter_with_fractions_gives_no_timeline() {
        let mut samples = one_second_apart(10);
        assert!(passed(&samples, &[5], None)
            .finish(&stats_of(&samples), &VLLM, None)
            .is_some());
        samples[7].preemptions = Some(6.5);
        assert!(passed(&samples, &[5], None)
            .finish(&stats_of(&samples), &VLLM, None)
            .is_none());
    }

    /// Ends that are not the recording's (the first sample refused, say) and a block
    /// count the checks trust that is not the after reading's give no timeline.
    #[test]
    fn what_the_pass_cannot_vouch_for_gives_no_timeline() {
        let samples = one_second_apart(10);
        let stats = stats_of(&samples);
        let mut late = TimelinePass::new(&samples[1], &samples[9], None).unwrap();
        samples.iter().for_each(|s| late.push(s));
        assert!(late.finish(&stats, &VLLM, None).is_none());
        let mut no_mono_at_the_end = samples[9];
        no_mono_at_the_end.t_mono_ns = None;
        let mut wall = TimelinePass::new(&samples[0], &no_mono_at_the_end, None).unwrap();
        samples.iter().for_each(|s| wall.push(s));
        assert!(wall.finish(&stats, &VLLM, None).is_none());
        let pass = passed(&samples, &[4], Some(42));
        assert!(pass.finish(&stats, &VLLM, Some(42)).is_some());
        assert!(pass.finish(&stats, &VLLM, Some(43)).is_none());
    }

    /// Stretches joined out of order (time going back at an edge, which the reader then
    /// folds again in one pass) give no timeline, and no panic.
    #[test]
    fn stretches_out_of_order_give_no_timeline() {
        let samples = one_second_apart(10);
        let empty = TimelinePass::new(&samples[0], &samples[9], None).unwrap();
        let fold = |range: std::ops::Range<usize>| {
            let mut part = empty.clone();
            samples[range].iter().for_each(|s| part.push(s));
            part
        };
        assert!(fold(0..5)
            .merge(fold(5..10))
            .finish(&stats_of(&samples), &VLLM, None)
            .is_some());
        let joined = fold(5..10).merge(fold(0..5));
        assert!(joined.finish(&stats_of(&samples), &VLLM, None).is_none());
    }
}
