//! Checks on a series recording: T14 (reserved null block), T9 (falling ceiling) and T8
//! (concurrency not reached).
//!
//! A series can hold a day of readings at 4 Hz, so the checks never see the samples: the
//! reader folds each sample into [`SeriesStats`], which keeps only what the checks need
//! (peaks, the distinct KV readings, and the distinct (running, usage) pairs of busy
//! samples with their counts). Real recordings have a few hundred distinct pairs at most.

use inferlint_sched::fit::StepSums;
use std::collections::{BTreeSet, HashMap};

use crate::engine::{CacheInfo, EngineDescriptor};
use crate::judging::checks::flight::FlightStats;
use crate::judging::checks::gpu_fold::GpuStats;
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::{BootFacts, GpuSampling, SampleFold, SeriesSample, Snapshot};
use crate::story::fmt;

/// KV usage at or above this counts as a full cache for T9.
pub const SATURATED_USAGE: f64 = 0.9;
/// T9 judges the ceiling from this many full-cache samples at least: whether it stayed
/// put or moved is a comparison of two readings of it.
pub const MIN_FULL_SAMPLES: usize = 2;
/// The largest block count T14 will infer.
pub const MAX_BLOCKS: u64 = 65_536;
/// T14 trusts an inferred denominator only with this many distinct readings.
pub const MIN_DISTINCT_READINGS: usize = 5;
/// Between two samples, the wall clock moved this many seconds more or less than the
/// monotonic clock at most before it counts as a step (NTP, a resumed VM). Both clocks
/// are read around one scrape, and they drift apart by parts per million, so a second is
/// no drift: it is the tolerance T10 gives the snapshots' two clocks.
pub const WALL_STEP_TOLERANCE_S: f64 = 1.0;

/// Two readings further apart than this (a gap in the recording) tell nothing of how the
/// server stepped between them.
pub const STEPPING_PAIR_AT_MOST_S: f64 = 2.0;

/// Pairs of readings with no preemption between them that the per-step fit wants before
/// it leaves out the others (whose recompute no counter counts).
pub const CALM_PAIRS_WANTED: usize = 8;

/// The wall clock stepping while the monotonic clock ran on, between consecutive samples
/// that both carry a monotonic stamp. Time in the recording is then judged on the
/// monotonic clock; the step is noted, not refused.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WallSteps {
    /// Pairs of consecutive samples across which the wall clock stepped.
    pub count: usize,
    /// The largest step, in seconds of wall time beyond the monotonic time (negative when
    /// the wall clock went back).
    pub largest_s: f64,
    /// The wall clock of the sample after the largest step.
    pub at_t_wall: f64,
}

impl WallSteps {
    fn add(&mut self, step_s: f64, at_t_wall: f64) {
        self.count += 1;
        if step_s.abs() > self.largest_s.abs() {
            self.largest_s = step_s;
            self.at_t_wall = at_t_wall;
        }
    }

    fn merge(&mut self, right: WallSteps) {
        self.count += right.count;
        if right.largest_s.abs() > self.largest_s.abs() {
            self.largest_s = right.largest_s;
            self.at_t_wall = right.at_t_wall;
        }
    }

    /// `the wall clock stepped back 30.0 s (and 1 more time) while the monotonic clock ran
    /// on`, when it stepped.
    pub fn message(&self) -> Option<String> {
        if self.count == 0 {
            return None;
        }
        let way = if self.largest_s < 0.0 {
            "back"
        } else {
            "forward"
        };
        let more = match self.count - 1 {
            0 => String::new(),
            1 => " (and 1 more time)".to_owned(),
            n => format!(" (and {n} more times)"),
        };
        Some(format!(
            "the wall clock stepped {way} {:.1} s{more} while the monotonic clock ran on; the recording's times are judged on the monotonic clock",
            self.largest_s.abs()
        ))
    }
}

/// A line of the recording the reader refused: a reading that cannot be (a count that is
/// infinite, a KV usage above 1), time that went back, or a second header. The samples
/// around it may be fine, but the recording is not what it claims, so every check of it
/// answers Can't tell, naming the first such line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedReading {
    /// The 1-based line in the file.
    pub line: usize,
    /// What is wrong, e.g. `running is inf, which no count of requests can be`.
    pub what: String,
    /// How many lines were refused in all.
    pub count: usize,
}

impl RefusedReading {
    /// `line 12 of the recording: running is inf, ...; the recording cannot be trusted`.
    pub fn message(&self) -> String {
        let more = match self.count.saturating_sub(1) {
            0 => String::new(),
            1 => " (and 1 more such line)".to_owned(),
            n => format!(" (and {n} more such lines)"),
        };
        format!(
            "line {} of the recording: {}{more}; a recording that holds what cannot be is not trusted",
            self.line, self.what
        )
    }
}

#[derive(Debug, Clone, Copy)]
struct PairStat {
    count: usize,
    first_index: usize,
}

/// A counter's readings in a series: the first and the last (time, value), and whether it
/// ever went down between two consecutive readings (it only resets on restart).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CounterTrack {
    /// The first reading: (wall time, value).
    pub first: Option<(f64, f64)>,
    /// The last reading: (wall time, value).
    pub last: Option<(f64, f64)>,
    /// Whether it went down between two readings.
    pub went_down: bool,
}

impl CounterTrack {
    fn push(&mut self, t_wall: f64, value: f64) {
        if self.last.is_some_and(|(_, last)| value < last) {
            self.went_down = true;
        }
        self.first.get_or_insert((t_wall, value));
        self.last = Some((t_wall, value));
    }

    fn merge(self, right: CounterTrack) -> CounterTrack {
        let dropped_between = matches!(
            (self.last, right.first),
            (Some((_, left)), Some((_, first))) if first < left
        );
        CounterTrack {
            first: self.first.or(right.first),
            last: right.last.or(self.last),
            went_down: self.went_down || right.went_down || dropped_between,
        }
    }
}

/// Everything the series checks and the report's summary need, folded one sample at a
/// time.
#[derive(Debug, Clone, Default)]
pub struct SeriesStats {
    /// Samples folded in.
    pub samples: usize,
    /// Samples with a reading of the running gauge.
    pub running_readings: usize,
    /// The most requests running at once.
    pub peak_running: Option<f64>,
    /// The most requests running or waiting at once.
    pub peak_in_flight: Option<f64>,
    /// Samples with a reading of the paused gauge (TensorRT-LLM).
    pub paused_readings: usize,
    /// Samples with a paused request.
    pub paused_nonzero: usize,
    /// The most requests paused at once.
    pub paused_max: f64,
    /// The preemption counter at the first sample that had it.
    pub first_preemptions: Option<f64>,
    /// The preemption counter at the last sample that had it.
    pub last_preemptions: Option<f64>,
    /// The first sample's wall clock, Unix seconds.
    pub first_t_wall: Option<f64>,
    /// The last sample's wall clock, Unix seconds.
    pub last_t_wall: Option<f64>,
    /// The first sample's monotonic clock, nanoseconds.
    pub first_t_mono_ns: Option<i64>,
    /// The last sample's monotonic clock, nanoseconds.
    pub last_t_mono_ns: Option<i64>,
    /// Whether every sample had a monotonic clock.
    pub all_mono: bool,
    /// Where the wall clock stepped while the monotonic clock moved forward.
    pub wall_steps: WallSteps,
    /// The preemption counter's readings, for comparison with the snapshots'.
    pub preemption_track: CounterTrack,
    /// The generation-token counter's readings.
    pub generation_track: CounterTrack,
    /// The prefix cache's hit and queried counters' readings (T16).
    pub prefix_hits_track: CounterTrack,
    /// The prefix cache's queried counter's readings (T16).
    pub prefix_queries_track: CounterTrack,
    /// Requests in flight against the room the server had, sample by sample (T17).
    pub flight: FlightStats,
    /// The waiting gauge's split by reason, where the engine exports it (T8, T17).
    pub waiting_split: super::waiting::WaitingSplit,
    /// The GPU readings beside the samples (T21).
    pub gpu: GpuStats,
    /// What the recording's header said about GPU readings; set by the reader.
    pub gpu_sampling: Option<GpuSampling>,
    /// The first line the reader refused, if any: the checks then say Can't tell.
    pub refused: Option<RefusedReading>,
    /// The generation-token counter's first reading: (value, t_wall, t_mono_ns).
    first_generation: Option<(f64, f64, Option<i64>)>,
    /// Its last reading.
    last_generation: Option<f64>,
    /// The sample at which the generation counter last rose: (t_wall, t_mono_ns). After it
    /// the engine generated nothing the recording saw.
    pub generation_last_rise: Option<(f64, Option<i64>)>,
    /// Distinct non-zero KV readings in (0, 1], as bits.
    kv_distinct: BTreeSet<u64>,
    /// Busy samples (running > 0, usage > 0) by distinct (running, usage).
    busy_pairs: HashMap<(u64, u64), PairStat>,
    busy_index: usize,
    first: Option<SeriesSample>,
    previous: Option<SeriesSample>,
    busy_running_dt_mono: f64,
    busy_dt_mono: f64,
    busy_running_dt_wall: f64,
    busy_dt_wall: f64,
    /// The server's seconds per step against its running count and the prompt tokens it
    /// prefilled, between readings: what `whatif` fits its per-step cost on.
    pub stepping: StepSums,
    /// The same, only between readings across which the server preempted nothing.
    pub stepping_calm: StepSums,
    /// The span the readings bracket, where the recording was read against them: a
    /// sample outside it is set aside, counted and not folded.
    pub window: Option<SeriesWindow>,
    /// Samples set aside because they came before the before reading.
    pub outside_before: usize,
    /// Samples set aside because they came after the after reading.
    pub outside_after: usize,
}

/// The span of a run as its two readings bracket it, widened by how far each reading
/// may be off (half its latency) and the recorder's and reader's clocks may disagree: a
/// sample of the recording outside it was taken before the run began or after it ended
/// (a recorder started early, or left running into the next load), and no check reads
/// it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeriesWindow {
    /// The earliest and latest wall-clock time a sample of the run can carry.
    pub wall: (f64, f64),
    /// The same on the host's monotonic clock, where both readings carry it: used for a
    /// sample of the same boot (its wall minus monotonic within a second of theirs).
    pub mono_ns: Option<(i64, i64)>,
    /// The readings' boot time on the wall clock (wall minus monotonic), with `mono_ns`.
    pub boot_wall: Option<f64>,
}

impl SeriesWindow {
    /// Where `sample` lies: before the window (`Less`), in it, or after it (`Greater`).
    pub fn place(&self, sample: &SeriesSample) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        let same_boot = match (self.mono_ns, self.boot_wall, sample.t_mono_ns) {
            (Some(_), Some(boot), Some(mono)) => {
                (sample.t_wall - mono as f64 / 1e9 - boot).abs() <= 1.0
            }
            _ => false,
        };
        match (self.mono_ns, sample.t_mono_ns) {
            (Some((from, to)), Some(mono)) if same_boot => {
                if mono < from {
                    Ordering::Less
                } else if mono > to {
                    Ordering::Greater
                } else {
                    Ordering::Equal
                }
            }
            _ => {
                if sample.t_wall < self.wall.0 {
                    Ordering::Less
                } else if sample.t_wall > self.wall.1 {
                    Ordering::Greater
                } else {
                    Ordering::Equal
                }
            }
        }
    }
}

impl SeriesStats {
    /// Nothing folded yet.
    pub fn new() -> SeriesStats {
        SeriesStats {
            all_mono: true,
            ..SeriesStats::default()
        }
    }

    /// Nothing folded yet, and samples outside `window` to be set aside and counted.
    pub fn within(window: Option<SeriesWindow>) -> SeriesStats {
        SeriesStats {
            window,
            ..SeriesStats::new()
        }
    }

    /// Folds one sample in. Samples must arrive in recording order. One outside the
    /// window is counted and not folded.
    pub fn push(&mut self, sample: &SeriesSample) {
        if let Some(window) = &self.window {
            match window.place(sample) {
                std::cmp::Ordering::Less => {
                    self.outside_before += 1;
                    return;
                }
                std::cmp::Ordering::Greater => {
                    self.outside_after += 1;
                    return;
                }
                std::cmp::Ordering::Equal => {}
            }
        }
        self.samples += 1;
        if let Some(r) = sample.running.filter(|r| !r.is_nan()) {
            self.running_readings += 1;
            self.peak_running = Some(self.peak_running.map_or(r, |p| p.max(r)));
            if let Some(w) = sample.waiting.filter(|w| !w.is_nan()) {
                let in_flight = r + w;
                self.peak_in_flight =
                    Some(self.peak_in_flight.map_or(in_flight, |p| p.max(in_flight)));
            }
        }
        if let Some(p) = sample.paused.filter(|p| !p.is_nan()) {
            self.paused_readings += 1;
            if p > 0.0 {
                self.paused_nonzero += 1;
                self.paused_max = self.paused_max.max(p);
            }
        }
        if let Some(p) = sample.preemptions.filter(|p| !p.is_nan()) {
            self.first_preemptions.get_or_insert(p);
            self.last_preemptions = Some(p);
            self.preemption_track.push(sample.t_wall, p);
        }
        if let Some(g) = sample.generation_tokens.filter(|g| g.is_finite()) {
            self.generation_track.push(sample.t_wall, g);
            if self.last_generation.is_some_and(|previous| g > previous) {
                self.generation_last_rise = Some((sample.t_wall, sample.t_mono_ns));
            }
            self.first_generation
                .get_or_insert((g, sample.t_wall, sample.t_mono_ns));
            self.last_generation = Some(g);
        }
        if let Some(h) = sample.prefix_hits.filter(|h| h.is_finite()) {
            self.prefix_hits_track.push(sample.t_wall, h);
        }
        if let Some(q) = sample.prefix_queries.filter(|q| q.is_finite()) {
            self.prefix_queries_track.push(sample.t_wall, q);
        }
        self.flight.push(sample);
        self.waiting_split.push(sample);
        self.gpu.push(sample);
        if let Some(u) = sample.kv_usage.filter(|u| *u > 0.0 && *u <= 1.0) {
            self.kv_distinct.insert(u.to_bits());
        }
        if let (Some(r), Some(u)) = (sample.running, sample.kv_usage) {
            if r > 0.0 && u > 0.0 {
                let index = self.busy_index;
                self.busy_index += 1;
                self.busy_pairs
                    .entry((r.to_bits(), u.to_bits()))
                    .and_modify(|p| p.count += 1)
                    .or_insert(PairStat {
                        count: 1,
                        first_index: index,
                    });
            }
        }
        self.first_t_wall.get_or_insert(sample.t_wall);
        self.last_t_wall = Some(sample.t_wall);
        match sample.t_mono_ns {
            Some(m) => {
                self.first_t_mono_ns.get_or_insert(m);
                self.last_t_mono_ns = Some(m);
            }
            None => self.all_mono = false,
        }
        if let Some(prev) = self.previous {
            self.accumulate_pair(&prev, sample);
        }
        self.first.get_or_insert(*sample);
        self.previous = Some(*sample);
    }

    /// Busy time between two consecutive samples (the first had requests running), and
    /// a wall-clock step between them.
    fn accumulate_pair(&mut self, prev: &SeriesSample, sample: &SeriesSample) {
        if let (Some(a), Some(b)) = (prev.t_mono_ns, sample.t_mono_ns) {
            if b > a {
                let step = (sample.t_wall - prev.t_wall) - (b - a) as f64 / 1e9;
                if step.abs() > WALL_STEP_TOLERANCE_S {
                    self.wall_steps.add(step, sample.t_wall);
                }
            }
        }
        self.stepping_pair(prev, sample);
        if let Some(r) = prev.running.filter(|r| *r > 0.0) {
            let dt_wall = sample.t_wall - prev.t_wall;
            self.busy_running_dt_wall += r * dt_wall;
            self.busy_dt_wall += dt_wall;
            if let (Some(a), Some(b)) = (prev.t_mono_ns, sample.t_mono_ns) {
                let dt = (b - a) as f64 / 1e9;
                self.busy_running_dt_mono += r * dt;
                self.busy_dt_mono += dt;
            }
        }
    }

    /// The server's stepping between two readings with requests running at both: `g`
    /// tokens generated while `r` ran (the earlier reading's count) took `g / r` steps,
    /// each step giving each running request one token, and the prompt counter's rise is
    /// what they prefilled. Pairs across a gap (more than [`STEPPING_PAIR_AT_MOST_S`]
    /// apart), a restart (a counter going back) or with nothing generated say nothing;
    /// those in which the server preempted (its recompute is prefill no counter counts)
    /// are kept apart as well, in `stepping` only.
    fn stepping_pair(&mut self, prev: &SeriesSample, sample: &SeriesSample) {
        let (Some(r0), Some(r1)) = (prev.running, sample.running) else {
            return;
        };
        let (Some(g0), Some(g1)) = (prev.generation_tokens, sample.generation_tokens) else {
            return;
        };
        let dt = match (prev.t_mono_ns, sample.t_mono_ns) {
            (Some(a), Some(b)) => (b - a) as f64 / 1e9,
            _ => sample.t_wall - prev.t_wall,
        };
        let tokens = g1 - g0;
        let prompt = match (prev.prompt_tokens, sample.prompt_tokens) {
            (Some(p0), Some(p1)) if p1 >= p0 => p1 - p0,
            (None, None) => 0.0,
            _ => return,
        };
        let preempted = match (prev.preemptions, sample.preemptions) {
            (Some(e0), Some(e1)) => e1 != e0,
            _ => false,
        };
        if r0 >= 1.0 && r1 >= 1.0 && dt > 0.0 && dt <= STEPPING_PAIR_AT_MOST_S && tokens > 0.0 {
            let steps = tokens / r0;
            self.stepping.add(r0, prompt / steps, dt / steps);
            if !preempted {
                self.stepping_calm.add(r0, prompt / steps, dt / steps);
            }
        }
    }

    /// Joins the statistics of two consecutive stretches of one recording (`self` first),
    /// as if every sample had been pushed into one: a reader can fold the two halves of a
    /// file on two cores.
    pub fn merge(mut self, mut right: SeriesStats) -> SeriesStats {
        let outside = (
            self.outside_before + right.outside_before,
            self.outside_after + right.outside_after,
        );
        if right.samples == 0 {
            (self.outside_before, self.outside_after) = outside;
            return self;
        }
        if self.samples == 0 {
            (right.outside_before, right.outside_after) = outside;
            return right;
        }
        (self.outside_before, self.outside_after) = outside;
        if let (Some(prev), Some(first)) = (self.previous, right.first) {
            self.accumulate_pair(&prev, &first);
        }
        let max = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        };
        self.samples += right.samples;
        self.running_readings += right.running_readings;
        self.peak_running = max(self.peak_running, right.peak_running);
        self.peak_in_flight = max(self.peak_in_flight, right.peak_in_flight);
        self.paused_readings += right.paused_readings;
        self.paused_nonzero += right.paused_nonzero;
        self.paused_max = self.paused_max.max(right.paused_max);
        self.first_preemptions = self.first_preemptions.or(right.first_preemptions);
        self.last_preemptions = right.last_preemptions.or(self.last_preemptions);
        self.last_t_wall = right.last_t_wall.or(self.last_t_wall);
        self.first_t_mono_ns = self.first_t_mono_ns.or(right.first_t_mono_ns);
        self.last_t_mono_ns = right.last_t_mono_ns.or(self.last_t_mono_ns);
        self.all_mono &= right.all_mono;
        self.wall_steps.merge(right.wall_steps);
        self.preemption_track = self.preemption_track.merge(right.preemption_track);
        self.generation_track = self.generation_track.merge(right.generation_track);
        self.prefix_hits_track = self.prefix_hits_track.merge(right.prefix_hits_track);
        self.prefix_queries_track = self.prefix_queries_track.merge(right.prefix_queries_track);
        self.flight.merge(right.flight);
        self.waiting_split.merge(right.waiting_split);
        self.gpu.merge(right.gpu);
        self.gpu_sampling = self.gpu_sampling.or(right.gpu_sampling);
        self.refused = self.refused.or(right.refused);
        // A rise between the last reading on the left and the first on the right.
        if let (Some(left), Some((first, t_wall, t_mono))) =
            (self.last_generation, right.first_generation)
        {
            if first > left {
                self.generation_last_rise = Some((t_wall, t_mono));
            }
        }
        self.generation_last_rise = right.generation_last_rise.or(self.generation_last_rise);
        self.first_generation = self.first_generation.or(right.first_generation);
        self.last_generation = right.last_generation.or(self.last_generation);
        self.kv_distinct.extend(right.kv_distinct);
        let offset = self.busy_index;
        for (key, pair) in right.busy_pairs {
            let shifted = PairStat {
                count: pair.count,
                first_index: pair.first_index + offset,
            };
            self.busy_pairs
                .entry(key)
                .and_modify(|p| p.count += shifted.count)
                .or_insert(shifted);
        }
        self.busy_index += right.busy_index;
        self.busy_running_dt_mono += right.busy_running_dt_mono;
        self.busy_dt_mono += right.busy_dt_mono;
        self.busy_running_dt_wall += right.busy_running_dt_wall;
        self.busy_dt_wall += right.busy_dt_wall;
        self.stepping.merge(&right.stepping);
        self.stepping_calm.merge(&right.stepping_calm);
        self.previous = right.previous;
        self
    }

    /// The number of distinct non-zero KV readings.
    pub fn distinct_kv_readings(&self) -> usize {
        self.kv_distinct.len()
    }

    /// Preemptions the series counter saw (last minus first reading).
    pub fn preemptions_seen(&self) -> Option<f64> {
        Some(self.last_preemptions? - self.first_preemptions?)
    }

    /// The per-step cost of the server's own stepping: from the pairs of readings with no
    /// preemption between them where there are [`CALM_PAIRS_WANTED`], else from all.
    pub fn step_fit(&self) -> Option<inferlint_sched::fit::Fit> {
        if self.stepping_calm.count() >= CALM_PAIRS_WANTED {
            self.stepping_calm.fit()
        } else {
            self.stepping.fit()
        }
    }

    /// Mean running requests while the server was busy: Σ running·dt / Σ dt over
    /// consecutive pairs whose first sample had requests running.
    pub fn busy_mean_running(&self) -> Option<f64> {
        let (num, den) = if self.all_mono {
            (self.busy_running_dt_mono, self.busy_dt_mono)
        } else {
            (self.busy_running_dt_wall, self.busy_dt_wall)
        };
        (den > 0.0).then(|| num / den)
    }

    /// Seconds during which requests were running: Σ dt over consecutive pairs whose
    /// first sample had requests running (monotonic when every sample had it).
    pub fn busy_seconds(&self) -> Option<f64> {
        let seconds = if self.all_mono {
            self.busy_dt_mono
        } else {
            self.busy_dt_wall
        };
        (seconds > 0.0).then_some(seconds)
    }

    /// Seconds from the first to the last sample (monotonic when every sample had it).
    pub fn span_s(&self) -> Option<f64> {
        if self.all_mono {
            Some((self.last_t_mono_ns? - self.first_t_mono_ns?) as f64 / 1e9)
        } else {
            Some(self.last_t_wall? - self.first_t_wall?)
        }
    }

    /// The usable-block count the KV readings imply, or why none can be inferred.
    pub fn infer_usable_blocks(&self) -> Result<u64, String> {
        let readings: Vec<f64> = self
            .kv_distinct
            .iter()
            .map(|b| f64::from_bits(*b))
            .collect();
        infer_denominator(&readings)
    }

    /// Whether the KV readings are whole numbers of blocks over `blocks` (a hypothesis a
    /// snapshot names, not one inferred blind), or `None` with no reading strictly between
    /// empty and full (0 and 1 are whole over every count).
    pub fn readings_fit(&self, blocks: u64) -> Option<bool> {
        let readings: Vec<f64> = self
            .kv_distinct
            .iter()
            .map(|b| f64::from_bits(*b))
            .filter(|v| *v > 0.0 && *v < 1.0)
            .collect();
        (!readings.is_empty() && blocks > 0).then(|| fits_whole_blocks(&readings, blocks))
    }
}

impl SampleFold for SeriesStats {
    fn push(&mut self, sample: &SeriesSample) {
        SeriesStats::push(self, sample);
    }

    fn merge(self, right: SeriesStats) -> SeriesStats {
        SeriesStats::merge(self, right)
    }
}

/// Each reading is used blocks / `blocks`, up to float rounding: within
/// [`WHOLE_BLOCK_TOLERANCE`] of a whole number of blocks.
fn fits_whole_blocks(readings: &[f64], blocks: u64) -> bool {
    let d = blocks as f64;
    readings
        .iter()
        .all(|v| (v * d - (v * d).round()).abs() <= WHOLE_BLOCK_TOLERANCE)
}

/// How far, in blocks, a reading may sit from a whole number of blocks over the count
/// tested. The engine divides two integers in float64 and prints the quotient exactly
/// (`repr`), so a true reading is within about 1e-12 blocks of whole even on a pool of a
/// million blocks; a reading over another count lands this close to whole by luck with
/// odds of about 2e-6, so even one such reading tells the two counts apart.
pub const WHOLE_BLOCK_TOLERANCE: f64 = 1e-6;

/// Infers N such that every reading is a multiple of 1/N: each reading's best rational
/// with a denominator up to [`MAX_BLOCKS`], then the least common multiple of the
/// denominators, trusted only with [`MIN_DISTINCT_READINGS`] distinct readings.
pub fn infer_denominator(readings: &[f64]) -> Result<u64, String> {
    const NOT_MULTIPLES: &str = "readings are not multiples of any 1/N with N within range";
    let readings: Vec<f64> = readings
        .iter()
        .copied()
        .filter(|v| *v > 0.0 && *v <= 1.0)
        .collect();
    if readings.is_empty() {
        return Err("no non-zero KV usage reading in the series".into());
    }
    let mut n: u64 = 1;
    for &v in &readings {
        let (_, q) = limit_denominator(v, MAX_BLOCKS);
        n = lcm(n, q);
        if n > MAX_BLOCKS {
            return Err(NOT_MULTIPLES.into());
        }
    }
    let nf = n as f64;
    let worst = readings
        .iter()
        .map(|v| (v * nf - (v * nf).round()).abs())
        .fold(0.0, f64::max);
    if worst > 1e-6 * nf {
        return Err(NOT_MULTIPLES.into());
    }
    let mut distinct: Vec<u64> = readings.iter().map(|v| v.to_bits()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < MIN_DISTINCT_READINGS {
        return Err(format!(
            "only {} distinct readings; a divisor of N could fit by luck",
            distinct.len()
        ));
    }
    Ok(n)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

fn lcm(a: u64, b: u64) -> u64 {
    a / gcd(a, b) * b
}

/// The closest fraction p/q to `value` with q <= `max_q` (the continued-fraction method),
/// computed on the float's exact binary value so that it matches an exact-rational
/// implementation. `value` must be in (0, 1].
pub fn limit_denominator(value: f64, max_q: u64) -> (u64, u64) {
    // Exact value = mantissa / 2^shift, with shift capped at 64 (values below 2^-11 lose
    // bits beyond 2^-64, far below anything a 1/65536 grid can tell apart).
    let bits = value.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    let mut mantissa = (bits & ((1u64 << 52) - 1)) as i128;
    let mut shift: i32 = 1075 - exponent;
    if exponent != 0 {
        mantissa |= 1 << 52;
    } else {
        shift = 1074;
    }
    if shift < 0 {
        return (value as u64, 1);
    }
    if shift > 64 {
        mantissa >>= (shift - 64).min(127);
        shift = 64;
    }
    let num0 = mantissa;
    let den0: i128 = 1i128 << shift;
    let g = gcd_i128(num0, den0);
    let (num0, den0) = (num0 / g, den0 / g);
    let max_q = max_q as i128;
    if den0 <= max_q {
        return (num0 as u64, den0 as u64);
    }
    let (mut p0, mut q0, mut p1, mut q1) = (0i128, 1i128, 1i128, 0i128);
    let (mut n, mut d) = (num0, den0);
    loop {
        let a = n / d;
        let q2 = q0 + a * q1;
        if q2 > max_q {
            break;
        }
        (p0, q0, p1, q1) = (p1, q1, p0 + a * p1, q2);
        (n, d) = (d, n - a * d);
        if d == 0 {
            break;
        }
    }
    if q1 == 0 {
        return (0, 1);
    }
    let k = (max_q - q0) / q1;
    let (bp, bq) = (p0 + k * p1, q0 + k * q1);
    // |p/q - num0/den0| compared without division.
    let dist = |p: i128, q: i128| (p * den0 - num0 * q).abs();
    if dist(p1, q1) * bq <= dist(bp, bq) * q1 {
        (p1 as u64, q1 as u64)
    } else {
        (bp as u64, bq as u64)
    }
}

fn gcd_i128(mut a: i128, mut b: i128) -> i128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.abs().max(1)
}

/// The KV blocks each engine core reports on the after reading's info metric: one info
/// series per engine, and data-parallel vLLM has several, each holding back its own null
/// block. `None` when a series lacks the count, or there is none.
fn blocks_per_engine(info: CacheInfo, after: &Snapshot) -> Option<Vec<u64>> {
    let per_engine: Option<Vec<u64>> = after
        .metrics
        .series(info.metric)
        .map(|s| {
            s.label(info.blocks_label)
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .collect();
    per_engine.filter(|v| !v.is_empty())
}

/// The usable block count the after reading names for `engine`: the blocks its engine
/// cores report, less the null block each holds back. When T14 passes, this is the count
/// it passes with (its `inferred_usable_blocks`), whichever way it got there; `None` for
/// an engine whose table keeps no such count, or a reading that does not state it. A
/// caller that folds the recording before the checks have run folds for this count.
pub fn usable_blocks_named(engine: &EngineDescriptor, after: &Snapshot) -> Option<u64> {
    let info = engine.cache_info?;
    let per_engine = blocks_per_engine(info, after)?;
    let engines = per_engine.len() as u64;
    let reported: u64 = per_engine.iter().sum();
    Some(reported.saturating_sub(engines * info.null_blocks))
}

/// T14: the KV usage gauge's denominator is `num_gpu_blocks - 1`, because vLLM holds one
/// block back as the null block. A mismatch means the gauge's meaning changed or the
/// series is not from this boot.
pub fn null_block(
    engine: &EngineDescriptor,
    stats: &SeriesStats,
    after: &Snapshot,
) -> (CheckResult, Option<u64>) {
    let t14 = |status, message: String| CheckResult::new(Tripwire::T14, status, message);
    let Some(info) = engine.cache_info else {
        return (not_applicable_t14(engine), None);
    };
    let Some(per_engine) = blocks_per_engine(info, after) else {
        return (
            t14(
                Status::Unknown,
                format!("{} has no {} label", info.metric, info.blocks_label),
            ),
            None,
        );
    };
    let engines = per_engine.len() as u64;
    let reported: u64 = per_engine.iter().sum();
    let held = engines * info.null_blocks;
    let expected = reported.saturating_sub(held);
    let reported_words = if engines == 1 {
        format!("num_gpu_blocks ({reported}) - 1 null block")
    } else {
        format!("num_gpu_blocks ({reported}, over {engines} engines) - {engines} null blocks")
    };
    match stats.infer_usable_blocks() {
        Err(reason) => tested_block_count(stats, reported, held, &reported_words, reason, engines),
        Ok(n) => {
            let evidence = |r: CheckResult| {
                let r = r
                    .with("reported_num_gpu_blocks", reported)
                    .with("inferred_usable_blocks", n)
                    .with("distinct_readings", stats.distinct_kv_readings());
                if engines > 1 {
                    r.with("engines", engines)
                } else {
                    r
                }
            };
            if reported >= held && n == expected {
                (
                    evidence(t14(
                        Status::Pass,
                        format!("gauge denominator is {n} = {reported_words}"),
                    )),
                    Some(n),
                )
            } else if reported > held && n > 1 && expected % n == 0 {
                // The gauge is used blocks / usable blocks. When every reading happens to
                // hold a multiple of (expected / n) blocks (identical requests running in
                // step), the readings sit on a coarser grid of 1/n: a divisor of the
                // usable count, which fits it. Only a grid that does not divide it
                // contradicts the null block (and one that divides the reported count
                // instead is the gauge without it); gcd(R, R - 1) = 1, so no grid above 1
                // fits both.
                let result = t14(
                    Status::Pass,
                    format!(
                        "gauge denominator fits {expected} = {reported_words}: every reading is a multiple of 1/{n}, and {n} divides {expected}, not {reported}"
                    ),
                )
                .with("reported_num_gpu_blocks", reported)
                .with("inferred_usable_blocks", expected)
                .with("reading_grid", n)
                .with("distinct_readings", stats.distinct_kv_readings());
                let result = if engines > 1 {
                    result.with("engines", engines)
                } else {
                    result
                };
                (result, Some(expected))
            } else {
                (
                    evidence(t14(
                        Status::Fail,
                        format!(
                            "gauge denominator is {n}, expected {} = {expected}; the usage semantics changed, or the series is not from this boot",
                            if engines == 1 { "num_gpu_blocks - 1".to_owned() } else { format!("num_gpu_blocks - {engines}") }
                        ),
                    )),
                    None,
                )
            }
        }
    }
}

/// T14 when the readings are too few (or the pool too large) to infer the gauge's
/// denominator blind: the snapshot names two candidates, the usable count (reported minus
/// the null blocks) and the reported count, and each reading either is a whole number of
/// blocks over a candidate or is not. A reading strictly between empty and full cannot be
/// whole over both (gcd(R, R - 1) = 1), so one that fits only the usable count is the null
/// block seen, one that fits only the reported count is a gauge without it, and readings
/// that fit neither leave the blind inference's reason standing.
fn tested_block_count(
    stats: &SeriesStats,
    reported: u64,
    held: u64,
    reported_words: &str,
    reason: String,
    engines: u64,
) -> (CheckResult, Option<u64>) {
    let expected = reported.saturating_sub(held);
    let distinct = stats.distinct_kv_readings();
    let fits_usable = (reported > held)
        .then(|| stats.readings_fit(expected))
        .flatten();
    let fits_reported = stats.readings_fit(reported);
    let with_engines = |r: CheckResult| {
        let r = r
            .with("reported_num_gpu_blocks", reported)
            .with("distinct_readings", distinct);
        if engines > 1 {
            r.with("engines", engines)
        } else {
            r
        }
    };
    match (fits_usable, fits_reported) {
        (Some(true), Some(false)) => (
            with_engines(
                CheckResult::new(
                    Tripwire::T14,
                    Status::Pass,
                    format!(
                        "gauge denominator is {expected} = {reported_words}: each of the {distinct} distinct readings is a whole number of blocks over {expected} and not over {reported} (too few readings to infer the count blind, enough to test the one the snapshot names)"
                    ),
                )
                .with("inferred_usable_blocks", expected)
                .with("tested_against_snapshot", true),
            ),
            Some(expected),
        ),
        (Some(false), Some(true)) => (
            with_engines(
                CheckResult::new(
                    Tripwire::T14,
                    Status::Fail,
                    format!(
                        "gauge denominator is {reported}, expected {expected} = {reported_words}: each of the {distinct} distinct readings is a whole number of blocks over {reported}, none over {expected}; the usage semantics changed, or the series is not from this boot"
                    ),
                )
                .with("inferred_usable_blocks", reported)
                .with("tested_against_snapshot", true),
            ),
            None,
        ),
        _ => (
            with_engines(CheckResult::new(
                Tripwire::T14,
                Status::Unknown,
                format!("block count not inferable: {reason}"),
            )),
            None,
        ),
    }
}

/// T14 on an engine without vLLM's null block.
pub fn not_applicable_t14(engine: &EngineDescriptor) -> CheckResult {
    CheckResult::new(
        Tripwire::T14,
        Status::NotApplicable,
        format!(
            "does not apply to {}: T14 is about vLLM's reserved null block",
            engine.name
        ),
    )
    .with("engine", engine.key)
}

/// How many requests of the sample's size fit in the cache: with the usable block count,
/// `(blocks × running) // blocks_in_use`; without it, `floor(running / usage)`.
pub fn ceiling(running: f64, usage: f64, usable_blocks: Option<u64>) -> i64 {
    if let Some(b) = usable_blocks {
        let blocks_in_use = fmt::round_half_even(usage * b as f64) as i64;
        if blocks_in_use > 0 {
            return (b as i64 * running.trunc() as i64).div_euclid(blocks_in_use);
        }
    }
    (running / usage + 1e-9).floor() as i64
}

/// T9: how many requests fit in the cache, sample by sample, on the samples where the
/// cache was full ([`SATURATED_USAGE`] or more in use). When that ceiling moves as answers
/// grow, concurrency was not a constant of the run.
///
/// Below that the quotient `running / usage` is not a ceiling: a cache at 23% with 2
/// requests "fits" 8, and one with 3 requests of the same size 13, though no request was
/// ever turned away for room. So the busy samples that never filled the cache are judged
/// only as that: the readings show the cache never held the run back, which is the pass
/// the catalogue names, with no ceiling (and no cap to set) in the evidence. A ceiling
/// that stays put or moves needs two readings of it: with fewer full samples than
/// [`MIN_FULL_SAMPLES`] the answer is Can't tell, naming how many there were.
pub fn falling_ceiling(
    engine: &EngineDescriptor,
    stats: &SeriesStats,
    usable_blocks: Option<u64>,
) -> CheckResult {
    let t9 = |status, message: String| CheckResult::new(Tripwire::T9, status, message);
    if stats.busy_pairs.is_empty() {
        let mut message = "no sample with requests running and KV in use".to_owned();
        if stats.running_readings == 0 {
            if let Some(hint) = engine.gauges_hint {
                message.push_str("; ");
                message.push_str(hint);
            }
        }
        return t9(Status::Unknown, message);
    }
    let busy: Vec<(f64, f64, PairStat)> = stats
        .busy_pairs
        .iter()
        .map(|(&(r, u), &p)| (f64::from_bits(r), f64::from_bits(u), p))
        .collect();
    let busy_samples: usize = busy.iter().map(|p| p.2.count).sum();
    let fullest_usage = busy.iter().map(|p| p.1).fold(0.0, f64::max);
    let pairs: Vec<(f64, f64, PairStat)> = busy
        .iter()
        .copied()
        .filter(|&(_, u, _)| u >= SATURATED_USAGE)
        .collect();
    let basis = "saturated";
    let pool = engine.kv_usage_pool_words;
    let pct = |v: f64| fmt::percent(v, 1);
    let lag = |readings: usize| {
        if engine.gauges_lag {
            format!(
                " (from {readings} readings; {} updates its gauges only when a request completes)",
                engine.name
            )
        } else {
            String::new()
        }
    };
    let full_samples: usize = pairs.iter().map(|p| p.2.count).sum();
    if full_samples == 0 {
        let (share_min, share_max) = busy.iter().fold(
            (f64::INFINITY, f64::NEG_INFINITY),
            |(lo, hi), &(r, u, _)| (lo.min(u / r), hi.max(u / r)),
        );
        let mut result = t9(
            Status::Pass,
            format!(
                "{pool} was never full: at most {} of it in use on {busy_samples} busy samples, below the {} at which T9 judges a ceiling, so no ceiling of it held the run's concurrency down{}",
                pct(fullest_usage),
                fmt::percent(SATURATED_USAGE, 0),
                if engine.gauges_lag {
                    format!(
                        " ({} updates its gauges only when a request completes, so it may have been fuller between readings)",
                        engine.name
                    )
                } else {
                    String::new()
                }
            ),
        )
        .with("full_samples", 0)
        .with("busy_samples", busy_samples)
        .with("usage_max", fullest_usage)
        .with("share_min", share_min)
        .with("share_max", share_max);
        if engine.gauges_lag {
            result = result.with("gauges_lag", true);
        }
        return result;
    }
    if full_samples < MIN_FULL_SAMPLES {
        let mut result = t9(
            Status::Unknown,
            format!(
                "only {full_samples} of {busy_samples} busy samples had {pool} full (at least {} in use); whether the ceiling stayed put takes {MIN_FULL_SAMPLES} readings of it at least{}",
                fmt::percent(SATURATED_USAGE, 0),
                lag(busy_samples)
            ),
        )
        .with("full_samples", full_samples)
        .with("busy_samples", busy_samples)
        .with("usage_max", fullest_usage);
        if engine.gauges_lag {
            result = result.with("gauges_lag", true);
        }
        return result;
    }
    let samples = full_samples;
    let mut lo = i64::MAX;
    let mut hi = i64::MIN;
    let mut share_min = f64::INFINITY;
    let mut share_max = f64::NEG_INFINITY;
    let mut ran_min = f64::INFINITY;
    let mut ran_max = f64::NEG_INFINITY;
    for &(r, u, _) in &pairs {
        let c = ceiling(r, u, usable_blocks);
        lo = lo.min(c);
        hi = hi.max(c);
        ran_min = ran_min.min(r.trunc());
        ran_max = ran_max.max(r.trunc());
        let share = u / r;
        share_min = share_min.min(share);
        share_max = share_max.max(share);
    }
    // The fullest sample: highest usage, first in recording order among ties.
    let fullest = pairs
        .iter()
        .max_by(|a, b| {
            a.1.total_cmp(&b.1)
                .then(b.2.first_index.cmp(&a.2.first_index))
        })
        .map(|&(r, u, _)| ceiling(r, u, usable_blocks));
    // The quotients are what would fit, read from a cache not quite full; what ran is
    // whole requests. When the server ran the same number on every full sample, the
    // quotients differ by the cache's unused sliver, not by a request: no request was
    // ever turned away for a ceiling that fell, so the ceiling did not move.
    let held = lo != hi && ran_min == ran_max;
    if held {
        lo = fullest.unwrap_or(lo);
        hi = lo;
    }
    let mut message = if held {
        format!(
            "the server ran {} on every {basis} sample while one request held {} to {} of {pool}: the quotients floor(1/share) range over less than one request that ran, so the ceiling stayed put, {lo} at the fullest sample",
            ran_min,
            pct(share_min),
            pct(share_max)
        )
    } else if lo == hi {
        let share = if pct(share_min) == pct(share_max) {
            pct(share_min)
        } else {
            format!("{} to {}", pct(share_min), pct(share_max))
        };
        format!("one request holds {share} of {pool}; ceiling = floor(1/share) = {lo} on every {basis} sample")
    } else {
        format!(
            "ceiling moved between {lo} and {hi} as requests grew (one request held {} to {} of {pool}); concurrency was not a constant of this run",
            pct(share_min),
            pct(share_max)
        )
    };
    message.push_str(&lag(samples));
    let status = if lo == hi { Status::Pass } else { Status::Warn };
    let mut result = t9(status, message)
        .with("ceiling_min", lo)
        .with("ceiling_max", hi)
        .with("ceiling_at_fullest", fullest)
        .with("share_min", share_min)
        .with("share_max", share_max)
        .with("samples", samples)
        .with("basis", basis)
        .with("usable_blocks", usable_blocks);
    if held {
        result = result.with("running_on_full_samples", ran_min);
    }
    if let Some(b) = usable_blocks {
        result = result
            .with("blocks_per_request_min", share_min * b as f64)
            .with("blocks_per_request_max", share_max * b as f64);
    }
    if engine.gauges_lag {
        result = result.with("gauges_lag", true);
    }
    result
}

/// Fewer samples than this inside the load's span cannot say what the server never ran.
pub const MIN_SAMPLES_IN_LOAD: f64 = 4.0;
/// Nor can a recording that covers less than this share of the load's span.
pub const MIN_LOAD_COVERAGE: f64 = 0.5;

/// How much of the load's span the recording's samples covered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coverage {
    /// The load's span, seconds.
    pub load_s: f64,
    /// The part of it between the recording's first and last sample, seconds.
    pub covered_s: f64,
    /// About how many samples fell inside it, at the recording's own spacing.
    pub samples: f64,
}

impl Coverage {
    /// Too little to say what the server never ran at once: a finding of "never more
    /// than" rests on the samples that saw the load, and these saw too little of it.
    pub fn thin(&self) -> bool {
        self.samples < MIN_SAMPLES_IN_LOAD || self.covered_s < MIN_LOAD_COVERAGE * self.load_s
    }
}

/// The recording's coverage of the load's span `from`..`to` (wall clock, Unix seconds):
/// the samples are folded, so those inside the span are counted at the recording's mean
/// spacing. A scrape still under way when the recording ended left no sample, and counts
/// as missed. `None` when the span or the recording's times are unknown.
pub fn coverage(stats: &SeriesStats, from: f64, to: f64) -> Option<Coverage> {
    if !(from.is_finite() && to.is_finite() && to > from) {
        return None;
    }
    let (first, last) = (stats.first_t_wall?, stats.last_t_wall?);
    let covered_s = (to.min(last) - from.max(first)).max(0.0);
    let inside = |t: f64| (from..=to).contains(&t);
    let samples = if stats.samples > 1 && last > first {
        let spacing = (last - first) / (stats.samples - 1) as f64;
        if covered_s > 0.0 {
            (covered_s / spacing).floor() + 1.0
        } else {
            f64::from(u8::from(inside(first) || inside(last)))
        }
    } else {
        f64::from(u8::from(stats.samples > 0 && inside(first)))
    };
    Some(Coverage {
        load_s: to - from,
        covered_s,
        samples,
    })
}

/// A T8 or T17 failure ("never ran more than", "kept fewer in flight") judged only on
/// what the samples covered: on a recording that saw too little of the load it is Can't
/// tell, naming the coverage. Other verdicts are returned as they are.
pub fn judged_on_coverage(result: CheckResult, coverage: Option<Coverage>) -> CheckResult {
    let Some(c) = coverage.filter(|c| result.status == Status::Fail && c.thin()) else {
        return result;
    };
    let message = format!(
        "the recording covered {} of the load's {} s with about {} sample{}: too little to say what the server never did (it says: {})",
        fmt::percent(c.covered_s / c.load_s, 0),
        fmt::g((c.load_s * 1000.0).round() / 1000.0),
        fmt::g(c.samples),
        fmt::plural(c.samples),
        result.message
    );
    let mut unknown = CheckResult::new(result.tripwire, Status::Unknown, message);
    unknown.evidence = result.evidence;
    unknown
        .with("load_s", c.load_s)
        .with("covered_s", c.covered_s)
        .with("samples_in_load", c.samples)
}

/// T8: the concurrency the load asked for against the most the server ran at once.
pub fn concurrency(
    engine: &EngineDescriptor,
    stats: &SeriesStats,
    requested: u64,
    boot: Option<&BootFacts>,
) -> CheckResult {
    let t8 = |status, message: String| CheckResult::new(Tripwire::T8, status, message);
    let n = requested as f64;
    let with_evidence = |r: CheckResult| {
        let mut r = r
            .with("requested", requested)
            .with("peak_running", stats.peak_running)
            .with("peak_in_flight", stats.peak_in_flight);
        if let Some(f) = boot {
            if let Some(c) = f.max_concurrency {
                r = r.with("boot_line_max_concurrency", c);
            }
            if let Some(len) = f.max_concurrency_request_len {
                r = r.with("boot_line_request_len", len);
            }
            if let Some(v) = f.setting("max_num_queued_reqs").and_then(|v| v.as_i64()) {
                r = r.with("max_num_queued_reqs", v);
            }
            if let Some(v) = f.setting("max_num_queued_tokens").and_then(|v| v.as_i64()) {
                r = r.with("max_num_queued_tokens", v);
            }
            if let Some(cap) = f.running_cap {
                r = r.with("running_cap", cap);
            }
        }
        if engine.gauges_lag {
            r = r.with("gauges_lag", true);
        }
        r
    };
    let Some(peak) = stats.peak_running else {
        let mut message = "series has no num_requests_running samples".to_owned();
        if let Some(hint) = engine.gauges_hint {
            message.push_str("; ");
            message.push_str(hint);
        }
        return with_evidence(t8(Status::Unknown, message));
    };
    if peak >= n {
        return with_evidence(t8(
            Status::Pass,
            format!("reached {} running (requested {requested})", fmt::g(peak)),
        ));
    }
    if engine.gauges_lag {
        return with_evidence(t8(
            Status::Unknown,
            format!(
                "requested {requested} concurrent, the recording never showed more than {}; {} updates the gauge only when a request completes, so it may have run more in between",
                fmt::g(peak),
                engine.name
            ),
        ));
    }
    let mut message = format!(
        "requested {requested} concurrent, server never ran more than {}",
        fmt::g(peak)
    );
    if let Some(reason) =
        boot.and_then(|f| limit_reason(engine, f, requested, peak, stats.peak_in_flight))
    {
        message.push_str("; ");
        message.push_str(&reason);
    }
    with_evidence(t8(Status::Fail, message))
}

/// Why the server held the run below the requested concurrency, when its settings say:
/// admission control that rejected requests, or a running cap the peak reached.
pub fn limit_reason(
    engine: &EngineDescriptor,
    facts: &BootFacts,
    requested: u64,
    peak: f64,
    peak_in_flight: Option<f64>,
) -> Option<String> {
    if let Some(limit) = facts
        .setting("max_num_queued_reqs")
        .and_then(|v| v.as_i64())
    {
        if limit >= 0
            && (limit as u64) < requested
            && peak_in_flight.is_some_and(|p| p >= limit as f64)
        {
            return Some(format!(
                "admission control (--max-num-queued-reqs {limit}) kept at most {limit} in flight, so the other {} were rejected, not queued",
                requested - limit as u64
            ));
        }
    }
    cap_reason(engine, facts, requested, peak)
}

/// The running-cap sentence, when the peak reached a cap below the requested concurrency.
pub fn cap_reason(
    engine: &EngineDescriptor,
    facts: &BootFacts,
    requested: u64,
    peak: f64,
) -> Option<String> {
    let cap = facts.running_cap?;
    if peak < cap as f64 || cap >= requested {
        return None;
    }
    match (&facts.running_cap_reason, facts.requested_running) {
        (Some(reason), Some(asked)) if asked > cap => Some(format!(
            "{} lowered its limit to {cap} running because of the {reason}, although it was started with {} {asked}",
            engine.name, engine.running_cap_flag
        )),
        _ => Some(format!(
            "the server runs at most {cap} at once ({} {cap})",
            engine.running_cap_flag
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{SGLANG, VLLM};

    #[test]
    fn limit_denominator_matches_exact_rationals() {
        assert_eq!(limit_denominator(0.9523809523809523, 65536), (20, 21));
        assert_eq!(limit_denominator(0.25, 65536), (1, 4));
        assert_eq!(limit_denominator(1.0, 65536), (1, 1));
        assert_eq!(limit_denominator(1.0 / 3.0, 10), (1, 3));
        assert_eq!(limit_denominator(std::f64::consts::PI - 3.0, 100), (14, 99));
    }

    #[test]
    fn infers_exact_block_counts() {
        for n in [7u64, 44, 52, 53, 97, 400, 1021] {
            let ks: Vec<u64> = (0..12).map(|i| 1 + (i * 7919 + 13) % n).collect();
            let mut readings: Vec<f64> = ks.iter().map(|k| *k as f64 / n as f64).collect();
            // Make sure the set generates the full denominator.
            readings.push(1.0 / n as f64);
            assert_eq!(infer_denominator(&readings), Ok(n), "n = {n}");
        }
        let few = [2.0 / 52.0, 4.0 / 52.0, 8.0 / 52.0];
        let err = infer_denominator(&few).unwrap_err();
        assert!(err.starts_with("only 3 distinct readings"), "{err}");
        assert!(
            infer_denominator(&[0.123456789, 0.987654321, 0.5555555, 0.3141592, 0.2718281])
                .is_err()
        );
        assert!(infer_denominator(&[]).is_err());
        assert!(infer_denominator(&[0.0, 0.0]).is_err());
    }

    #[test]
    fn ceilings() {
        assert_eq!(ceiling(1.0, 0.125, None), 8);
        assert_eq!(ceiling(1.0, 0.308, None), 3);
        assert_eq!(ceiling(1.0, 0.423, None), 2);
        assert_eq!(ceiling(1.0, 0.538, None), 1);
        assert_eq!(ceiling(2.0, 0.25, None), 8);
        assert_eq!(ceiling(1.0, 0.164, None), 6);
        assert_eq!(ceiling(1.0, 6.0 / 48.0 + 1e-12, Some(48)), 8);
    }

    fn sample(running: f64, waiting: f64, usage: f64) -> SeriesSample {
        SeriesSample {
            t_wall: 0.0,
            running: Some(running),
            waiting: Some(waiting),
            kv_usage: Some(usage),
            ..SeriesSample::default()
        }
    }

    fn cache_info_snapshot(blocks: &[u64]) -> Snapshot {
        let samples = blocks
            .iter()
            .enumerate()
            .map(|(i, b)| crate::model::metrics::Sample {
                name: "vllm:cache_config_info".into(),
                labels: vec![
                    ("engine".into(), i.to_string()),
                    ("num_gpu_blocks".into(), b.to_string()),
                ],
                value: 1.0,
                timestamp_ms: None,
            })
            .collect();
        Snapshot {
            url: String::new(),
            t_wall: None,
            t_mono_ns: None,
            latency_s: None,
            text: String::new(),
            metrics: crate::model::metrics::MetricSet::new(samples),
        }
    }

    /// vLLM's gauge is used blocks / (num_gpu_blocks - 1). Eight identical requests
    /// running in step each hold the same number of blocks, so every reading is a multiple
    /// of 8/128 = 1/16: a divisor of the usable count, not a contradiction of it (T14
    /// failed such a run, "gauge denominator is 64, expected 128").
    #[test]
    fn readings_on_a_coarser_grid_that_divides_the_usable_blocks_pass() {
        let num_gpu_blocks = 129u64;
        let usable = (num_gpu_blocks - 1) as f64;
        let mut stats = SeriesStats::new();
        // 8 requests of 16-token blocks, 32 prompt tokens growing to 96: 2 to 6 blocks
        // each; fewer running as the last ones finish.
        for (running, blocks_each) in [
            (8.0, 2.0),
            (8.0, 3.0),
            (8.0, 4.0),
            (8.0, 5.0),
            (8.0, 6.0),
            (4.0, 6.0),
        ] {
            let used = running * blocks_each;
            stats.push(&sample(running, 0.0, used / usable));
        }
        let (r, blocks) = null_block(&VLLM, &stats, &cache_info_snapshot(&[num_gpu_blocks]));
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(blocks, Some(128), "T9 uses the usable count, not the grid");
        assert_eq!(r.evidence["inferred_usable_blocks"], 128);
        assert_eq!(r.evidence["reading_grid"], 16);
        assert!(r.message.contains("divides 128, not 129"), "{}", r.message);

        // The same load on a gauge without the null block (used / num_gpu_blocks) gives
        // readings on a grid that divides 129, not 128: a real contradiction.
        let mut old = SeriesStats::new();
        for k in [3.0, 10.0, 17.0, 41.0, 60.0, 84.0, 100.0] {
            old.push(&sample(4.0, 0.0, k / num_gpu_blocks as f64));
        }
        let (r, _) = null_block(&VLLM, &old, &cache_info_snapshot(&[num_gpu_blocks]));
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        // And a recording of another start with 96 usable blocks does not fit either.
        let mut other = SeriesStats::new();
        for k in [5.0, 7.0, 11.0, 13.0, 29.0, 31.0] {
            other.push(&sample(4.0, 0.0, k / 96.0));
        }
        let (r, _) = null_block(&VLLM, &other, &cache_info_snapshot(&[num_gpu_blocks]));
        assert_eq!(r.status, Status::Fail, "{}", r.message);
    }

    /// vLLM's CPU build on a short real run: a pool of 8,192 blocks, 8 requests of one
    /// block each, so the readings are 1/8191, 7/8191 and 8/8191 (as recorded in
    /// fixtures/real/vllm-0.32-cpu/healthy-vllm-bench): three distinct readings, too few to
    /// infer a count blind among 65,536 candidates, and a pool too large for the blind
    /// inference anyway. Tested against the two counts the snapshot names, they tell the
    /// null block apart: k/8191 is whole over 8191 and, for 0 < k < 8191, never over 8192.
    #[test]
    fn few_readings_are_tested_against_the_counts_the_snapshot_names() {
        let reported = 8192u64;
        let mut with_null = SeriesStats::new();
        for k in [1.0, 7.0, 8.0] {
            with_null.push(&sample(8.0, 0.0, k / 8191.0));
        }
        let (r, blocks) = null_block(&VLLM, &with_null, &cache_info_snapshot(&[reported]));
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(blocks, Some(8191));
        assert_eq!(r.evidence["tested_against_snapshot"], true);
        assert!(
            r.message
                .starts_with("gauge denominator is 8191 = num_gpu_blocks (8192) - 1 null block"),
            "{}",
            r.message
        );

        // The same readings over the reported count: a gauge without the null block.
        let mut without = SeriesStats::new();
        for k in [1.0, 7.0, 8.0] {
            without.push(&sample(8.0, 0.0, k / 8192.0));
        }
        let (r, blocks) = null_block(&VLLM, &without, &cache_info_snapshot(&[reported]));
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        assert_eq!(blocks, None);

        // Readings of another start (a pool of 5,000) fit neither: not inferable.
        let mut other = SeriesStats::new();
        for k in [1.0, 7.0, 8.0] {
            other.push(&sample(8.0, 0.0, k / 5000.0));
        }
        let (r, _) = null_block(&VLLM, &other, &cache_info_snapshot(&[reported]));
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert!(
            r.message.starts_with("block count not inferable"),
            "{}",
            r.message
        );

        // Only empty and full readings are whole over every count: nothing to test.
        let mut bare = SeriesStats::new();
        bare.push(&sample(8.0, 0.0, 1.0));
        let (r, _) = null_block(&VLLM, &bare, &cache_info_snapshot(&[reported]));
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
    }

    #[test]
    fn t14_on_data_parallel_engines_expects_one_null_block_each() {
        let mut stats = SeriesStats::new();
        for k in [3.0, 10.0, 17.0, 41.0, 60.0, 84.0] {
            stats.push(&sample(4.0, 0.0, k / 84.0));
        }
        let (r, blocks) = null_block(&VLLM, &stats, &cache_info_snapshot(&[43, 43]));
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(
            r.message,
            "gauge denominator is 84 = num_gpu_blocks (86, over 2 engines) - 2 null blocks"
        );
        assert_eq!(blocks, Some(84));
        let (r, _) = null_block(&VLLM, &stats, &cache_info_snapshot(&[86]));
        assert_eq!(r.status, Status::Fail);
    }

    /// The count a fold made before the checks folds for is the one T14 passes with:
    /// every pass above gave num_gpu_blocks less one null block per engine core, which is
    /// what the after reading names; an engine without vLLM's block count names none,
    /// and a reading without the label neither.
    #[test]
    fn the_named_block_count_is_the_one_t14_passes_with() {
        let mut stats = SeriesStats::new();
        for k in [3.0, 10.0, 17.0, 41.0, 60.0, 84.0] {
            stats.push(&sample(4.0, 0.0, k / 84.0));
        }
        let mut one = SeriesStats::new();
        for k in [3.0, 10.0, 17.0, 41.0, 60.0, 84.0] {
            one.push(&sample(4.0, 0.0, k / 85.0));
        }
        for (stats, blocks) in [(&stats, vec![43, 43]), (&one, vec![86])] {
            let after = cache_info_snapshot(&blocks);
            let (r, passed_with) = null_block(&VLLM, stats, &after);
            assert_eq!(r.status, Status::Pass, "{}", r.message);
            assert_eq!(usable_blocks_named(&VLLM, &after), passed_with);
            assert_eq!(
                r.evidence_as::<u64>("inferred_usable_blocks"),
                usable_blocks_named(&VLLM, &after)
            );
        }
        let after = cache_info_snapshot(&[86]);
        assert_eq!(usable_blocks_named(&crate::engine::SGLANG, &after), None);
        assert_eq!(usable_blocks_named(&VLLM, &cache_info_snapshot(&[])), None);
    }

    #[test]
    fn merging_halves_equals_one_pass() {
        let samples: Vec<SeriesSample> = (0..40)
            .map(|i| SeriesSample {
                // The wall clock steps back 30 s at sample 20 and forward 2 s at 31.
                t_wall: 100.0 + i as f64 * 0.25 - if i >= 20 { 30.0 } else { 0.0 }
                    + if i >= 31 { 2.0 } else { 0.0 },
                t_mono_ns: Some(1_000_000_000 + i * 250_000_000),
                running: Some(((i * 7) % 11) as f64),
                waiting: Some(((i * 3) % 5) as f64),
                kv_usage: Some(((i * 5) % 43) as f64 / 42.0),
                preemptions: Some((i / 4) as f64),
                generation_tokens: Some(((i * 13) % 17) as f64),
                paused: (i % 9 == 0).then_some((i % 3) as f64),
                ..SeriesSample::default()
            })
            .collect();
        let mut whole = SeriesStats::new();
        samples.iter().for_each(|s| whole.push(s));
        let key = |s: &SeriesStats| {
            format!(
                "{} {:?} {:?} {} {} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
                s.samples,
                s.peak_running,
                s.peak_in_flight,
                s.paused_nonzero,
                s.distinct_kv_readings(),
                s.preemptions_seen(),
                s.busy_mean_running(),
                s.busy_seconds(),
                s.span_s(),
                falling_ceiling(&VLLM, s, Some(42)).evidence,
                s.infer_usable_blocks(),
                s.preemption_track,
                s.generation_track,
                s.generation_last_rise,
                s.wall_steps,
            )
        };
        for split in 0..=samples.len() {
            let (mut a, mut b) = (SeriesStats::new(), SeriesStats::new());
            samples[..split].iter().for_each(|s| a.push(s));
            samples[split..].iter().for_each(|s| b.push(s));
            assert_eq!(key(&a.merge(b)), key(&whole), "split at {split}");
        }
    }

    /// A wall clock stepped back mid-run (NTP, a resumed VM) while the monotonic clock ran
    /// on: the recording's time is the monotonic clock's, and the step is a note.
    #[test]
    fn a_wall_step_is_noted_and_time_is_the_monotonic_clocks() {
        let mut stats = SeriesStats::new();
        for i in 0..8i64 {
            stats.push(&SeriesSample {
                t_wall: 1000.0 + i as f64 - if i >= 4 { 30.0 } else { 0.0 },
                t_mono_ns: Some(5_000_000_000 + i * 1_000_000_000),
                running: Some(2.0),
                ..SeriesSample::default()
            });
        }
        assert_eq!(stats.wall_steps.count, 1);
        assert!((stats.wall_steps.largest_s + 30.0).abs() < 1e-9);
        assert_eq!(stats.wall_steps.at_t_wall, 974.0);
        assert_eq!(
            stats.wall_steps.message().unwrap(),
            "the wall clock stepped back 30.0 s while the monotonic clock ran on; the recording's times are judged on the monotonic clock"
        );
        assert_eq!(stats.span_s(), Some(7.0));
        assert_eq!(stats.busy_seconds(), Some(7.0));
        assert_eq!(stats.busy_mean_running(), Some(2.0));
        // A second off is the clocks' reading, not a step.
        let mut steady = SeriesStats::new();
        for (wall, mono) in [(0.0, 0), (1.9, 1_000_000_000), (2.0, 2_000_000_000)] {
            steady.push(&SeriesSample {
                t_wall: 1000.0 + wall,
                t_mono_ns: Some(mono),
                ..SeriesSample::default()
            });
        }
        assert_eq!(steady.wall_steps, WallSteps::default());
        assert_eq!(steady.wall_steps.message(), None);
    }

    #[test]
    fn t8_boundary_is_exact() {
        let mut stats = SeriesStats::new();
        for s in [sample(4.0, 28.0, 0.95), sample(3.0, 29.0, 0.9)] {
            stats.push(&s);
        }
        assert_eq!(concurrency(&VLLM, &stats, 4, None).status, Status::Pass);
        assert_eq!(concurrency(&VLLM, &stats, 5, None).status, Status::Fail);
    }

    /// A run whose cache never passed 23% warned "ceiling moved between 8 and 13" and
    /// advised a cap: `running / usage` on a cache with room is no ceiling. The catalogue
    /// judges the ceiling where the cache was full, so a cache that never filled passes,
    /// with no ceiling in the evidence for the advice to quote.
    #[test]
    fn t9_judges_no_ceiling_on_a_cache_that_never_filled() {
        let mut stats = SeriesStats::new();
        // Requests of 11.5% of the cache: 8 "fit" at 2 running, 13 at 3 of 7.7%.
        stats.push(&sample(2.0, 0.0, 0.23));
        stats.push(&sample(3.0, 0.0, 0.23));
        stats.push(&sample(1.0, 0.0, 0.05));
        let r = falling_ceiling(&VLLM, &stats, None);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(
            r.message,
            "the cache was never full: at most 23.0% of it in use on 3 busy samples, below the 90% at which T9 judges a ceiling, so no ceiling of it held the run's concurrency down"
        );
        assert_eq!(r.evidence["full_samples"], 0);
        assert_eq!(r.evidence["usage_max"], 0.23);
        for key in ["ceiling_min", "ceiling_max", "blocks_per_request_min"] {
            assert!(r.evidence.get(key).is_none(), "{key} in {:?}", r.evidence);
        }
        // Just below the line is not full; at it, it is.
        let mut edge = SeriesStats::new();
        edge.push(&sample(9.0, 0.0, 0.899_999));
        edge.push(&sample(9.0, 0.0, 0.9));
        edge.push(&sample(9.0, 0.0, 0.9));
        let r = falling_ceiling(&VLLM, &edge, None);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(r.evidence["samples"], 2, "{}", r.message);
        assert_eq!(r.evidence["basis"], "saturated");
    }

    /// T9 passed from a single full sample: one reading of a ceiling says nothing of
    /// whether it stayed put.
    #[test]
    fn t9_from_one_full_sample_is_cant_tell_naming_the_count() {
        let mut stats = SeriesStats::new();
        stats.push(&sample(4.0, 0.0, 0.5));
        stats.push(&sample(8.0, 0.0, 0.95));
        let r = falling_ceiling(&VLLM, &stats, None);
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert_eq!(
            r.message,
            "only 1 of 2 busy samples had the cache full (at least 90% in use); whether the ceiling stayed put takes 2 readings of it at least"
        );
        assert_eq!(r.evidence["full_samples"], 1);
        // A second full reading of the same ceiling lets it pass.
        stats.push(&sample(8.0, 0.0, 0.95));
        let r = falling_ceiling(&VLLM, &stats, None);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(r.evidence["samples"], 2);
    }

    #[test]
    fn t9_warns_when_the_ceiling_moves_and_is_unknown_when_idle() {
        let mut stats = SeriesStats::new();
        stats.push(&sample(10.0, 22.0, 0.95));
        stats.push(&sample(7.0, 22.0, 0.95));
        let r = falling_ceiling(&VLLM, &stats, None);
        assert_eq!(r.status, Status::Warn);
        assert_eq!(r.evidence["ceiling_min"], 7);
        let mut idle = SeriesStats::new();
        idle.push(&sample(0.0, 0.0, 0.0));
        assert_eq!(falling_ceiling(&VLLM, &idle, None).status, Status::Unknown);
    }

    /// A load of 0.35 s recorded at the default 250 ms: two samples, one before the
    /// requests ran and one as they began, saw "never more than 0". A slow /metrics
    /// (a scrape every 2 s) on a 3 s load: two samples. Neither recording saw enough of
    /// the load to say what the server never ran; one that read it every 250 ms did.
    #[test]
    fn t8_judges_only_what_the_samples_covered() {
        let recording = |times: &[f64], running: f64| {
            let mut stats = SeriesStats::new();
            for &t in times {
                stats.push(&SeriesSample {
                    t_wall: t,
                    ..sample(running, 0.0, 0.1)
                });
            }
            stats
        };
        let short = recording(&[100.0, 100.25], 0.0);
        let c = coverage(&short, 100.05, 100.4).unwrap();
        assert_eq!(c.samples, 1.0);
        let r = judged_on_coverage(concurrency(&VLLM, &short, 8, None), Some(c));
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert!(
            r.message
                .starts_with("the recording covered 57% of the load's 0.35 s with about 1 sample"),
            "{}",
            r.message
        );
        let slow = recording(&[100.0, 102.0, 104.0], 4.0);
        let c = coverage(&slow, 100.5, 103.5).unwrap();
        assert_eq!(c.samples, 2.0);
        let r = judged_on_coverage(concurrency(&VLLM, &slow, 8, None), Some(c));
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        let times: Vec<f64> = (0..16).map(|i| 100.0 + f64::from(i) * 0.25).collect();
        let dense = recording(&times, 4.0);
        let c = coverage(&dense, 100.5, 103.5).unwrap();
        assert!(!c.thin(), "{c:?}");
        let r = judged_on_coverage(concurrency(&VLLM, &dense, 8, None), Some(c));
        assert_eq!(r.status, Status::Fail, "{}", r.message);
    }

    /// The recorded SGLang 0.5 run (qwen3-8b) ran 29 requests on each of its 7 saturated
    /// samples, at 91% (3 samples) and 95% (4) of the pool: `29 / 0.91` and `29 / 0.95`
    /// floor to 31 and 30, a "move" no request made. The server ran 29 throughout, so the
    /// ceiling held; at the fullest sample it is 30.
    #[test]
    fn t9_a_ceiling_that_moved_by_less_than_a_request_that_ran_held() {
        let mut stats = SeriesStats::new();
        for usage in [0.91, 0.91, 0.91, 0.95, 0.95, 0.95, 0.95] {
            stats.push(&sample(29.0, 3.0, usage));
        }
        let r = falling_ceiling(&SGLANG, &stats, None);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(r.evidence["ceiling_min"], 30);
        assert_eq!(r.evidence["ceiling_max"], 30);
        assert_eq!(r.evidence["running_on_full_samples"], 29.0);
        assert!(
            r.message
                .starts_with("the server ran 29 on every saturated sample"),
            "{}",
            r.message
        );
        // Whole requests moving is a move: 29 then 28 running at a full cache.
        stats.push(&sample(28.0, 3.0, 0.97));
        assert_eq!(falling_ceiling(&SGLANG, &stats, None).status, Status::Warn);
    }
}
