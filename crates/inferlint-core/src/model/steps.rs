//! Each engine step, as a stat-logger plugin inside the server recorded it
//! (`inferlint.steps/1`, docs/steps.md), folded as it is read: what the step checks (T29,
//! T30, T31) and the report's step lane take from it, in memory bounded for a day's file
//! (4.3 M steps at 50 a second). Nothing here keeps every step: the stretches, the
//! preemptions and the gaps are kept up to a bound (and counted beyond it), the rest is
//! summed (per decode batch, per step-time bin, per time bin).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::traces::ClockAnchor;

/// The most stretches, preemption steps and gaps each kept; beyond them they are
/// counted, not kept.
pub const MAX_KEPT: usize = 1 << 16;

/// The most time bins the lane's sums keep: when a step falls past them, every two bins
/// become one (the width doubles), so a file of any length keeps at most this many.
pub const MAX_TIME_BINS: usize = 4096;

/// The first time bins' width, seconds.
pub const FIRST_BIN_S: f64 = 0.01;

/// The shortest stretch of waiting without progress kept: T29's threshold is never
/// below it.
pub const MIN_STRETCH_S: f64 = 2.0;

/// The ratio between a step-time histogram bin's edges (2%).
const MS_BIN_RATIO: f64 = 1.02;

/// One step line, as read (a value the plugin could not read is `None`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepLine {
    /// Seconds since the header's anchor, on the host's monotonic clock.
    pub t: f64,
    /// The engine's iteration index.
    pub i: Option<u64>,
    /// Requests running.
    pub r: Option<u64>,
    /// Requests waiting (not deferred).
    pub w: Option<u64>,
    /// Requests deferred.
    pub d: Option<u64>,
    /// KV cache use, 0 to 1.
    pub kv: Option<f64>,
    /// Prefill requests in the step.
    pub pr: Option<u64>,
    /// Their tokens.
    pub pt: Option<u64>,
    /// Decode requests in the step.
    pub dr: Option<u64>,
    /// Their tokens.
    pub dt: Option<u64>,
    /// The step's elapsed milliseconds.
    pub ms: Option<f64>,
    /// Tokens generated.
    pub gen: Option<u64>,
    /// Prompt tokens processed.
    pub prompt: Option<u64>,
    /// Requests preempted.
    pub pre: Option<u64>,
}

impl StepLine {
    /// Requests waiting, deferred ones included, where the line says.
    pub fn queued(&self) -> Option<u64> {
        match (self.w, self.d) {
            (None, None) => None,
            (w, d) => Some(w.unwrap_or(0) + d.unwrap_or(0)),
        }
    }

    /// Whether the step admitted or generated anything: a prompt token processed or a
    /// token generated (by the iteration's stats, else its batch), or a decode request
    /// scheduled (`dr`: each generates a token in the step that runs it; the engines'
    /// forward-pass stream gives the decode requests, not their tokens).
    pub fn progressed(&self) -> bool {
        [self.gen, self.prompt, self.pt, self.dt, self.dr]
            .into_iter()
            .flatten()
            .any(|n| n > 0)
    }
}

/// A gap line: steps the plugin dropped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepGap {
    /// Seconds since the anchor, of the last drop.
    pub t: f64,
    /// Steps dropped.
    pub steps: u64,
    /// Why (`queue full`, `record failed`).
    pub reason: String,
}

/// A step that preempted requests.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Preemption {
    /// Seconds since the anchor.
    pub t: f64,
    /// The step's ordinal among the file's step lines (0 the first).
    pub step: u64,
    /// The engine's iteration index, where the line gave it.
    pub i: Option<u64>,
    /// Requests preempted in it.
    pub n: u64,
}

/// A stretch during which requests waited and no step admitted or generated anything.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stretch {
    /// Seconds since the anchor: the last step that made progress with requests waiting
    /// (or the first step that saw them wait).
    pub from: f64,
    /// Seconds since the anchor when the next progressing step began (its end less its
    /// elapsed time), or when the waiting ended.
    pub to: f64,
    /// The most requests waiting (not deferred) any step of it saw.
    pub waiting: u64,
    /// The most requests deferred.
    pub deferred: u64,
    /// Step lines inside it that made no progress.
    pub idle_steps: u64,
}

impl Stretch {
    /// How long it lasted, seconds.
    pub fn seconds(&self) -> f64 {
        self.to - self.from
    }
}

/// Steps of one decode batch size, those that carried a prefill beside the decodes and
/// those that did not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct MixBucket {
    /// Steps with a prefill beside the decodes.
    pub mixed: u64,
    /// Their milliseconds, summed.
    pub mixed_ms: f64,
    /// Decode-only steps.
    pub pure: u64,
    /// Their milliseconds, summed.
    pub pure_ms: f64,
}

/// The sums of the steps that ended in one time bin.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct StepBin {
    /// Step lines.
    pub steps: u64,
    /// Prefill tokens scheduled (`pt`).
    pub prefill_tokens: u64,
    /// Decode tokens scheduled (`dt`).
    pub decode_tokens: u64,
    /// Steps' elapsed milliseconds, summed.
    pub ms_sum: f64,
    /// Steps that gave their elapsed time.
    pub ms_steps: u64,
    /// The longest step's milliseconds.
    pub ms_max: f64,
    /// The most requests waiting and deferred any step saw.
    pub queued_max: u64,
    /// The most requests running.
    pub running_max: u64,
    /// Requests preempted.
    pub preempted: u64,
}

impl StepBin {
    /// Folds another bin's sums into this one.
    pub fn add(&mut self, other: &StepBin) {
        self.steps += other.steps;
        self.prefill_tokens += other.prefill_tokens;
        self.decode_tokens += other.decode_tokens;
        self.ms_sum += other.ms_sum;
        self.ms_steps += other.ms_steps;
        self.ms_max = self.ms_max.max(other.ms_max);
        self.queued_max = self.queued_max.max(other.queued_max);
        self.running_max = self.running_max.max(other.running_max);
        self.preempted += other.preempted;
    }
}

/// The end line's totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct StepsEnd {
    /// Seconds since the anchor.
    pub t: f64,
    /// Step lines the plugin wrote.
    pub steps: Option<u64>,
    /// Steps it dropped.
    pub dropped: Option<u64>,
    /// `record` calls.
    pub calls: Option<u64>,
    /// Nanoseconds spent inside `record`.
    pub record_ns: Option<u64>,
}

/// A steps file, folded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Steps {
    /// The file, as shown to a reader.
    pub file: String,
    /// The header's anchor: `t` is seconds after `t_mono_ns`, `wall = t_wall + t`.
    pub anchor: ClockAnchor,
    /// The engine's version, as the header gave it.
    pub engine_version: Option<String>,
    /// Whether the server filled the per-step batch composition.
    pub iteration_details: bool,
    /// Step lines read.
    pub steps: u64,
    /// Of them, those that gave the batch composition and the elapsed time.
    pub detailed: u64,
    /// Finished-request lines read.
    pub finished: u64,
    /// The first and last step's `t`.
    pub first_t: Option<f64>,
    /// See `first_t`.
    pub last_t: Option<f64>,
    /// Lines that could not be read (a cut line, a line of no known kind, not JSON):
    /// damage, counted.
    pub skipped: u64,
    /// Gap lines, up to [`MAX_KEPT`].
    pub gaps: Vec<StepGap>,
    /// Gap lines read, all of them.
    pub gap_lines: u64,
    /// Steps the gap lines say were dropped.
    pub dropped: u64,
    /// The end line, where the server shut down cleanly.
    pub end: Option<StepsEnd>,
    /// The steps that preempted, up to [`MAX_KEPT`].
    pub preemptions: Vec<Preemption>,
    /// Requests preempted, every step summed.
    pub preempted: u64,
    /// Steps that gave `pre`.
    pub pre_steps: u64,
    /// Stretches of waiting without progress of [`MIN_STRETCH_S`] or more, up to
    /// [`MAX_KEPT`].
    pub stretches: Vec<Stretch>,
    /// Such stretches, all of them.
    pub stretch_count: u64,
    /// Steps that saw requests waiting or deferred.
    pub queued_steps: u64,
    /// Decode-carrying steps by decode batch bucket ([`decode_bucket`]).
    pub mix: BTreeMap<u32, MixBucket>,
    /// Decode-carrying steps' elapsed times: histogram bin ([`ms_bin`]) to (steps, of
    /// them with a prefill beside).
    pub ms_hist: BTreeMap<i32, (u64, u64)>,
    /// The time bins' width, seconds.
    pub bin_s: f64,
    /// Time bin `k` covers `[k * bin_s, (k + 1) * bin_s)` after the anchor.
    pub bins: BTreeMap<u64, StepBin>,
    /// Each detailed step's time against its batch, summed for the whatif's per-step
    /// cost ([`Steps::step_fit`]): seconds a step (`ms`) against the requests it ran
    /// (`pr + dr`) and the prompt tokens it prefilled (`pt`).
    pub cost: inferlint_sched::fit::StepSums,
    /// The stretch being followed: not yet closed.
    open: Option<Stretch>,
}

/// A decode batch's bucket: its size up to 16, then buckets 10% wide, so that steps of a
/// similar decode batch are compared.
pub fn decode_bucket(dr: u64) -> u32 {
    if dr <= 16 {
        dr as u32
    } else {
        16 + ((dr as f64 / 16.0).ln() / 1.1f64.ln()).round() as u32
    }
}

/// A step time's histogram bin (2% wide); `i32::MIN` for none or zero.
pub fn ms_bin(ms: f64) -> i32 {
    if ms.is_finite() && ms > 0.0 {
        (ms.ln() / MS_BIN_RATIO.ln()).floor() as i32
    } else {
        i32::MIN
    }
}

/// The lower edge of a step-time bin, milliseconds.
pub fn ms_bin_floor(bin: i32) -> f64 {
    if bin == i32::MIN {
        0.0
    } else {
        MS_BIN_RATIO.powi(bin)
    }
}

impl Steps {
    /// An empty fold of `file`, anchored at `anchor`.
    pub fn new(file: String, anchor: ClockAnchor) -> Steps {
        Steps {
            file,
            anchor,
            bin_s: FIRST_BIN_S,
            ..Steps::default()
        }
    }

    /// The per-step cost measured on the engine's own steps: `seconds = fixed +
    /// per_running x requests in the step + per_prefill_token x prompt tokens it
    /// prefilled`, each term kept only where it lowers the error (as
    /// [`inferlint_sched::fit::StepSums::fit`] fits a recording's); `None` without
    /// detailed steps (the server ran without iteration details) or with too few.
    pub fn step_fit(&self) -> Option<inferlint_sched::fit::Fit> {
        self.cost.fit()
    }

    /// The wall clock of `t`.
    pub fn wall(&self, t: f64) -> f64 {
        self.anchor.t_wall + t
    }

    /// `t` of a monotonic reading on the same host.
    pub fn t_of_mono(&self, mono_ns: i64) -> f64 {
        (mono_ns - self.anchor.t_mono_ns) as f64 / 1e9
    }

    /// Folds one step line in.
    pub fn step(&mut self, s: &StepLine) {
        let ordinal = self.steps;
        self.steps += 1;
        self.first_t = Some(self.first_t.map_or(s.t, |f| f.min(s.t)));
        self.last_t = Some(self.last_t.map_or(s.t, |l| l.max(s.t)));
        let queued = s.queued();
        if queued.is_some_and(|q| q > 0) {
            self.queued_steps += 1;
        }
        if let Some(n) = s.pre {
            self.pre_steps += 1;
            self.preempted += n;
            if n > 0 && self.preemptions.len() < MAX_KEPT {
                self.preemptions.push(Preemption {
                    t: s.t,
                    step: ordinal,
                    i: s.i,
                    n,
                });
            }
        }
        self.follow_stretch(s);
        if let (Some(ms), Some(dr), Some(pt)) = (s.ms, s.dr, s.pt) {
            self.detailed += 1;
            // A step that ran no request is the engine idling, not a cost of the batch.
            let running = dr + s.pr.unwrap_or(0);
            if running > 0 {
                self.cost.add(running as f64, pt as f64, ms / 1000.0);
            }
            if dr > 0 {
                let mixed = pt > 0;
                let bucket = self.mix.entry(decode_bucket(dr)).or_default();
                if mixed {
                    bucket.mixed += 1;
                    bucket.mixed_ms += ms;
                } else {
                    bucket.pure += 1;
                    bucket.pure_ms += ms;
                }
                let bin = self.ms_hist.entry(ms_bin(ms)).or_default();
                bin.0 += 1;
                bin.1 += u64::from(mixed);
            }
        }
        let bin = self.time_bin(s.t);
        bin.steps += 1;
        bin.prefill_tokens += s.pt.unwrap_or(0);
        bin.decode_tokens += s.dt.unwrap_or(0);
        if let Some(ms) = s.ms.filter(|m| m.is_finite() && *m >= 0.0) {
            bin.ms_sum += ms;
            bin.ms_steps += 1;
            bin.ms_max = bin.ms_max.max(ms);
        }
        bin.queued_max = bin.queued_max.max(queued.unwrap_or(0));
        bin.running_max = bin.running_max.max(s.r.unwrap_or(0));
        bin.preempted += s.pre.unwrap_or(0);
    }

    /// Folds a gap line in: what was dropped cannot be told to have progressed or not, so
    /// a stretch being followed ends at it, not kept.
    pub fn gap(&mut self, gap: StepGap) {
        self.gap_lines += 1;
        self.dropped += gap.steps;
        self.open = None;
        if self.gaps.len() < MAX_KEPT {
            self.gaps.push(gap);
        }
    }

    /// Closes the fold: the stretch still open at the file's end is kept as far as the
    /// file saw it (the waiting never ended within it).
    pub fn finish(&mut self) {
        if let Some(open) = self.open.take() {
            self.keep_stretch(open);
        }
    }

    fn follow_stretch(&mut self, s: &StepLine) {
        let queued = s.queued().unwrap_or(0);
        let progressed = s.progressed();
        if let Some(mut open) = self.open.take() {
            open.waiting = open.waiting.max(s.w.unwrap_or(0));
            open.deferred = open.deferred.max(s.d.unwrap_or(0));
            if progressed || queued == 0 {
                // The step ran for its elapsed time before its line: the stretch ended
                // when it began.
                let began = s.t - s.ms.filter(|m| m.is_finite() && *m > 0.0).unwrap_or(0.0) / 1e3;
                open.to = began.max(open.from);
                self.keep_stretch(open);
            } else {
                open.idle_steps += 1;
                open.to = s.t;
                self.open = Some(open);
                return;
            }
        }
        if queued > 0 {
            self.open = Some(Stretch {
                from: s.t,
                to: s.t,
                waiting: s.w.unwrap_or(0),
                deferred: s.d.unwrap_or(0),
                idle_steps: u64::from(!progressed),
            });
        }
    }

    fn keep_stretch(&mut self, stretch: Stretch) {
        if stretch.seconds() >= MIN_STRETCH_S {
            self.stretch_count += 1;
            if self.stretches.len() < MAX_KEPT {
                self.stretches.push(stretch);
            }
        }
    }

    fn time_bin(&mut self, t: f64) -> &mut StepBin {
        let t = t.max(0.0);
        let mut k = (t / self.bin_s) as u64;
        while k >= MAX_TIME_BINS as u64 {
            self.bin_s *= 2.0;
            let old = std::mem::take(&mut self.bins);
            for (key, bin) in old {
                self.bins.entry(key / 2).or_default().add(&bin);
            }
            k = (t / self.bin_s) as u64;
        }
        self.bins.entry(k).or_default()
    }

    /// The decode-carrying steps' time at quantile `q` (0 to 1), by the histogram: the
    /// lower edge of the bin it falls in; `None` without such steps.
    pub fn decode_ms_quantile(&self, q: f64) -> Option<(i32, f64)> {
        let total: u64 = self.ms_hist.values().map(|(n, _)| n).sum();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (bin, (n, _)) in &self.ms_hist {
            seen += n;
            if seen >= rank {
                return Some((*bin, ms_bin_floor(*bin)));
            }
        }
        None
    }

    /// The upper edge of the bin holding the decode-carrying steps' 99th percentile step
    /// time, milliseconds: a step above it is in the slowest 1%.
    pub fn step_ms_p99(&self) -> Option<f64> {
        self.decode_ms_quantile(0.99)
            .map(|(b, _)| ms_bin_floor(b + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steps whose time is exactly 2 ms + 0.5 ms per request in the batch + 0.01 ms per
    /// prompt token prefilled, over batches of 1 to 8 requests and prefills of 0 to 600
    /// tokens: the per-step cost measured on them is that cost, every term kept. Steps
    /// without a request (the engine idling) and steps without iteration details add
    /// nothing.
    #[test]
    fn the_per_step_cost_is_measured_on_the_steps() {
        let mut steps = Steps::new("steps.jsonl".into(), ClockAnchor::default());
        let mut t = 0.0;
        for running in 1..=8u64 {
            for prefill in [0u64, 16, 200, 600] {
                let pr = u64::from(prefill > 0);
                let ms = 2.0 + 0.5 * running as f64 + 0.01 * prefill as f64;
                t += ms / 1000.0;
                steps.step(&StepLine {
                    t,
                    pr: Some(pr),
                    pt: Some(prefill),
                    dr: Some(running - pr),
                    dt: Some(running - pr),
                    ms: Some(ms),
                    ..StepLine::default()
                });
            }
        }
        steps.step(&StepLine {
            t: t + 0.1,
            pr: Some(0),
            pt: Some(0),
            dr: Some(0),
            ms: Some(50.0),
            ..StepLine::default()
        });
        steps.step(&StepLine {
            t: t + 0.2,
            r: Some(3),
            ..StepLine::default()
        });
        let fit = steps.step_fit().unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(fit.cost.fixed_s, 0.002), "{fit:?}");
        assert!(close(fit.cost.per_running_s, 0.0005), "{fit:?}");
        assert!(close(fit.cost.per_prefill_token_s, 0.000_01), "{fit:?}");
        assert_eq!(fit.used, 32);
    }

    fn line(t: f64, w: u64, gen: u64) -> StepLine {
        StepLine {
            t,
            r: Some(1),
            w: Some(w),
            d: Some(0),
            gen: Some(gen),
            prompt: Some(0),
            pre: Some(0),
            ..StepLine::default()
        }
    }

    /// Requests waiting across a 10 s hole between two steps, the second of which
    /// generates, is one stretch of 10 s less the second step's own time; the waiting
    /// ended by a step that generates closes it.
    #[test]
    fn a_wait_without_steps_is_one_stretch_ended_by_the_step_that_progressed() {
        let mut steps = Steps::new("s".into(), ClockAnchor::default());
        steps.step(&line(1.0, 3, 1));
        let mut next = line(11.0, 3, 1);
        next.ms = Some(500.0);
        steps.step(&next);
        steps.step(&line(11.01, 0, 1));
        steps.finish();
        assert_eq!(steps.stretch_count, 1);
        let s = steps.stretches[0];
        assert!((s.seconds() - 9.5).abs() < 1e-9, "{s:?}");
        assert_eq!(s.waiting, 3);
    }

    /// Decode steps as the forward-pass stream writes them (the decode requests, no
    /// token counts) run every 10 ms for 3 s while 2 requests wait: each generated a
    /// token for each of its 4 decodes, so nothing stalled and no stretch is kept.
    #[test]
    fn decode_requests_scheduled_are_progress_without_token_counts() {
        let mut steps = Steps::new("s".into(), ClockAnchor::default());
        for k in 0..=300 {
            steps.step(&StepLine {
                t: f64::from(k) * 0.01,
                w: Some(2),
                pr: Some(0),
                pt: Some(0),
                dr: Some(4),
                ms: Some(8.0),
                ..StepLine::default()
            });
        }
        steps.finish();
        assert_eq!(steps.queued_steps, 301);
        assert_eq!(steps.stretch_count, 0, "{:?}", steps.stretches);
    }

    /// A gap line ends the stretch unkept: dropped steps may have progressed.
    #[test]
    fn a_gap_line_ends_a_stretch_unkept() {
        let mut steps = Steps::new("s".into(), ClockAnchor::default());
        steps.step(&line(1.0, 3, 1));
        steps.gap(StepGap {
            t: 5.0,
            steps: 100,
            reason: "queue full".into(),
        });
        steps.step(&line(20.0, 3, 1));
        steps.finish();
        assert_eq!(steps.stretch_count, 0);
        assert_eq!(steps.dropped, 100);
    }

    /// Time bins stay within their bound over a day at 50 steps a second, and every step
    /// is counted in them.
    #[test]
    fn a_day_of_steps_keeps_a_bounded_number_of_bins() {
        let mut steps = Steps::new("s".into(), ClockAnchor::default());
        let n = 86_400 * 5;
        for k in 0..n {
            steps.step(&line(k as f64 / 5.0, 0, 1));
        }
        assert!(steps.bins.len() <= MAX_TIME_BINS);
        assert_eq!(steps.bins.values().map(|b| b.steps).sum::<u64>(), n);
    }
}
