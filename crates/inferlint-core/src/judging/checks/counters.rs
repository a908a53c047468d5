//! Counter arithmetic shared by T1, T10 and T15: deltas between two snapshots, the
//! SGLang witness rule, and restart and order detection.

use std::collections::BTreeSet;

use serde_json::json;

use crate::engine::EngineDescriptor;
use crate::judging::status::Evidence;
use crate::model::metrics::MetricSet;
use crate::model::Snapshot;
use crate::story::fmt;

/// Why two snapshots cannot be compared: the server restarted between them.
#[derive(Debug, Clone, PartialEq)]
pub struct Restart {
    /// What a result says of the restart.
    pub message: String,
    /// The counters that show it (`restarted`, `counter`, `before`, `after`).
    pub evidence: Evidence,
}

/// Detects a restart between two snapshots: a `*_created` stamp that moved, or a counter
/// that went down. Counters only ever reset when the process restarts, so a delta across
/// a restart is meaningless and every counter check must refuse it.
pub fn restart_between(before: &Snapshot, after: &Snapshot) -> Option<Restart> {
    let mut moved = 0usize;
    let mut example: Option<(&str, f64, f64)> = None;
    for (name, old, new) in paired(before, after, "_created") {
        if new != old && !(new.is_nan() && old.is_nan()) {
            moved += 1;
            example.get_or_insert((name, old, new));
        }
    }
    if let Some((name, old, new)) = example {
        let mut evidence = Evidence::new();
        evidence.insert("restarted".into(), json!(true));
        evidence.insert("created_changed".into(), json!(moved));
        evidence.insert("example".into(), json!(name));
        evidence.insert("before".into(), json!(old));
        evidence.insert("after".into(), json!(new));
        return Some(Restart {
            message: format!(
                "server restarted between snapshots ({moved} *_created stamps moved, e.g. {name}: {old:.3} -> {new:.3})"
            ),
            evidence,
        });
    }
    let (name, old, new) = paired(before, after, "_total").find(|(_, old, new)| new < old)?;
    let mut evidence = Evidence::new();
    evidence.insert("restarted".into(), json!(true));
    evidence.insert("counter".into(), json!(name));
    evidence.insert("before".into(), json!(old));
    evidence.insert("after".into(), json!(new));
    Some(Restart {
        message: format!(
            "{name} went down ({} -> {}); counters only reset on restart",
            fmt::g(old),
            fmt::g(new)
        ),
        evidence,
    })
}

/// Whether both readings came from one server process: its `*_created` stamps (the wall
/// time each counter was made, written once when the process starts) are there and all
/// the same in both. A restart makes them anew; `false` when there are none to compare.
pub fn same_process(before: &Snapshot, after: &Snapshot) -> bool {
    let mut stamps = paired(before, after, "_created").peekable();
    stamps.peek().is_some() && stamps.all(|(_, old, new)| old == new)
}

/// Why the before reading cannot have come first: it was taken after the after reading
/// (the files were given in the wrong order). `None` when the order is right or cannot be
/// told.
///
/// The clocks decide when the snapshots carry them: the monotonic clock when both have
/// it, but only where the wall clocks, if present, agree in direction (two readings from
/// different host boots have unrelated monotonic clocks). Bare Prometheus text has no
/// clock; then a counter that went down while every `*_created` stamp stayed the same
/// means one process read twice, in the wrong order: a restart would have moved them.
pub fn out_of_order(before: &Snapshot, after: &Snapshot) -> Option<String> {
    let (mono, wall) = clock_deltas(before, after);
    let earlier_by = match (mono, wall) {
        (Some(m), Some(w)) if m < 0.0 && w < 0.0 => Some(-m),
        (Some(_), Some(_)) => None,
        (Some(m), None) if m < 0.0 => Some(-m),
        (None, Some(w)) if w < 0.0 => Some(-w),
        _ => None,
    };
    if let Some(seconds) = earlier_by {
        return Some(format!(
            "the before reading was taken {seconds:.1} s after the after reading: the snapshots are in the wrong order"
        ));
    }
    if mono.is_some() || wall.is_some() {
        return None;
    }
    let stamps: Vec<(f64, f64)> = paired(before, after, "_created")
        .map(|(_, old, new)| (old, new))
        .collect();
    let same_process = !stamps.is_empty() && stamps.iter().all(|(old, new)| old == new);
    let went_down = paired(before, after, "_total").find(|(_, old, new)| new < old);
    match went_down {
        Some((name, old, new)) if same_process => Some(format!(
            "{name} went down ({} -> {}) while the server's start stamps (*_created) stayed the same: the snapshots are in the wrong order",
            fmt::g(old),
            fmt::g(new)
        )),
        _ => None,
    }
}

/// Seconds from the before to the after reading on the monotonic and on the wall clock,
/// each where both readings carry it.
pub fn clock_deltas(before: &Snapshot, after: &Snapshot) -> (Option<f64>, Option<f64>) {
    let mono = match (before.t_mono_ns, after.t_mono_ns) {
        (Some(a), Some(b)) => Some((b - a) as f64 / 1e9),
        _ => None,
    };
    let wall = match (before.t_wall, after.t_wall) {
        (Some(a), Some(b)) if a.is_finite() && b.is_finite() => Some(b - a),
        _ => None,
    };
    (mono, wall)
}

/// Every sample whose name ends in `suffix`, with its value before and after, where the
/// after snapshot has the same name and labels.
fn paired<'a>(
    before: &'a Snapshot,
    after: &'a Snapshot,
    suffix: &'a str,
) -> impl Iterator<Item = (&'a str, f64, f64)> + 'a {
    before
        .metrics
        .samples()
        .iter()
        .filter(move |old| old.name.ends_with(suffix))
        .filter_map(move |old| {
            let new = after
                .metrics
                .series(&old.name)
                .find(|s| s.labels == old.labels)?;
            Some((old.name.as_str(), old.value, new.value))
        })
}

/// The value of a counter in one snapshot, with the witness rule of [`counter_value_in`].
pub fn counter_value(engine: &EngineDescriptor, snapshot: &Snapshot, name: &str) -> Option<f64> {
    counter_value_in(engine, &snapshot.metrics, name)
}

/// The value of a counter in one scrape, with the witness rule: SGLang writes its
/// retraction counter only after the first retraction, so when the counter is missing
/// but its witness gauge is there, the counter reads as 0. A total no counter can hold
/// (negative, infinite or not a number) reads as NaN, which every check refuses, so that
/// `-5` before and `-5` after never make "no preemptions".
pub fn counter_value_in(engine: &EngineDescriptor, metrics: &MetricSet, name: &str) -> Option<f64> {
    let possible = |v: f64| {
        if v.is_finite() && v >= 0.0 {
            v
        } else {
            f64::NAN
        }
    };
    metrics.total(name).map(possible).or_else(|| {
        let witnessed = engine.preemption_counter == Some(name)
            && engine.preemption_witness.is_some_and(|w| metrics.has(w));
        witnessed.then_some(0.0)
    })
}

/// `after - before` summed over every label set; `None` when either side lacks it.
pub fn counter_delta(
    engine: &EngineDescriptor,
    before: &Snapshot,
    after: &Snapshot,
    name: &str,
) -> Option<f64> {
    Some(counter_value(engine, after, name)? - counter_value(engine, before, name)?)
}

/// A histogram's mean over the run from its `_sum` and `_count` deltas; `None` when
/// absent or when nothing was observed.
pub fn histogram_mean(
    engine: &EngineDescriptor,
    before: &Snapshot,
    after: &Snapshot,
    histogram: &str,
) -> Option<f64> {
    let sum = counter_delta(engine, before, after, &format!("{histogram}_sum"))?;
    let count = counter_delta(engine, before, after, &format!("{histogram}_count"))?;
    (count > 0.0).then(|| sum / count)
}

/// The label vLLM and TensorRT-LLM put on their success counter.
const FINISHED_REASON_LABEL: &str = "finished_reason";

/// The finish reasons in the order a report lists them; reasons outside this list follow
/// in alphabetical order, so a new one is shown rather than dropped.
const FINISHED_REASONS: &[&str] = &["length", "stop", "repetition", "abort", "error"];

/// What the server's counters say happened between the before and the after reading.
/// Every field is `None` when a reading lacked the counter: never 0.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CounterSummary {
    /// Requests the server finished.
    pub finished: Option<f64>,
    /// Finished requests by `finished_reason` (vLLM, TensorRT-LLM); empty for SGLang,
    /// whose counter has no reason.
    pub finished_by_reason: Vec<(String, f64)>,
    /// Output tokens generated.
    pub output_tokens: Option<f64>,
    /// Prompt tokens processed.
    pub prompt_tokens: Option<f64>,
    /// Preemptions (retractions); `None` for an engine that counts none.
    pub preemptions: Option<f64>,
    /// Mean end-to-end latency, seconds.
    pub mean_e2e_s: Option<f64>,
    /// Mean time to first token, seconds.
    pub mean_ttft_s: Option<f64>,
    /// Mean time in the queue, seconds.
    pub mean_queue_s: Option<f64>,
}

impl CounterSummary {
    /// Prompt plus output tokens per finished request.
    pub fn tokens_per_request(&self) -> Option<f64> {
        let finished = self.finished.filter(|f| *f > 0.0)?;
        Some((self.prompt_tokens? + self.output_tokens?) / finished)
    }

    /// Output tokens per finished request.
    pub fn output_per_request(&self) -> Option<f64> {
        let finished = self.finished.filter(|f| *f > 0.0)?;
        Some(self.output_tokens? / finished)
    }
}

/// The counter facts between two readings, with metric names from the engine's table;
/// `None` when the server restarted between them.
pub fn counter_summary(
    engine: &EngineDescriptor,
    before: &Snapshot,
    after: &Snapshot,
) -> Option<CounterSummary> {
    if restart_between(before, after).is_some() || out_of_order(before, after).is_some() {
        return None;
    }
    let delta = |name: &str| counter_delta(engine, before, after, name);
    let mean = |histogram: &str| histogram_mean(engine, before, after, histogram);
    Some(CounterSummary {
        finished: delta(engine.request_success),
        finished_by_reason: if engine.success_has_reason {
            finished_by_reason(engine.request_success, before, after)
        } else {
            Vec::new()
        },
        output_tokens: delta(engine.generation_tokens),
        prompt_tokens: delta(engine.prompt_tokens),
        preemptions: engine.preemption_counter.and_then(delta),
        mean_e2e_s: mean(engine.e2e_latency_histogram),
        mean_ttft_s: mean(engine.ttft_histogram),
        mean_queue_s: mean(engine.queue_time_histogram),
    })
}

/// The success counter's delta per finish reason, for every reason the after reading has.
///
/// A reason's series appears the first time a request finishes that way (TensorRT-LLM
/// creates them lazily), so when the before reading has the counter but not that
/// reason's series, no request had finished that way yet: its count was 0. When the
/// before reading lacks the counter altogether nothing is known, and nothing is listed.
fn finished_by_reason(name: &str, before: &Snapshot, after: &Snapshot) -> Vec<(String, f64)> {
    if !before.metrics.has(name) {
        return Vec::new();
    }
    let seen: BTreeSet<&str> = after
        .metrics
        .series(name)
        .filter_map(|s| s.label(FINISHED_REASON_LABEL))
        .collect();
    let known = FINISHED_REASONS
        .iter()
        .copied()
        .filter(|r| seen.contains(r));
    let others = seen
        .iter()
        .copied()
        .filter(|r| !FINISHED_REASONS.contains(r));
    known
        .chain(others)
        .filter_map(|reason| {
            let subset = [(FINISHED_REASON_LABEL, reason)];
            let after_count = after.metrics.total_matching(name, &subset)?;
            let before_count = before.metrics.total_matching(name, &subset).unwrap_or(0.0);
            Some((reason.to_owned(), after_count - before_count))
        })
        .collect()
}

/// How a run's preemptions fell on the requests that finished in it, from the engine's
/// per-request histogram ([`EngineDescriptor::request_preemptions_histogram`]), observed
/// once per request when it finishes.
#[derive(Debug, Clone, PartialEq)]
pub struct PreemptedRequests {
    /// Requests that finished between the readings (the histogram's count).
    pub finished: f64,
    /// Preemptions those requests carried (the histogram's sum).
    pub preemptions: f64,
    /// How many were preempted exactly `times`, most first, where the buckets tell it.
    pub by_times: Vec<(u64, f64)>,
    /// Requests preempted more often than the finest buckets tell apart (above the last
    /// of the buckets one apart: 5 on vLLM).
    pub beyond: Option<(u64, f64)>,
}

impl PreemptedRequests {
    /// Requests preempted at least once: known where none lies beyond the finest buckets
    /// (the buckets start at 1, so once and never are told apart only by the sum).
    pub fn preempted(&self) -> Option<f64> {
        self.beyond
            .is_none()
            .then(|| self.by_times.iter().map(|(_, n)| n).sum())
    }

    /// `over 7 of the 16 requests that finished (4 twice, 3 once)`, or, where some lie
    /// beyond the finest buckets, `of the 16 requests that finished, preempted: 2 more than
    /// five times, 4 twice`.
    pub fn words(&self) -> String {
        let times = |k: u64| match k {
            1 => "once".to_owned(),
            2 => "twice".to_owned(),
            3 => "three times".to_owned(),
            4 => "four times".to_owned(),
            5 => "five times".to_owned(),
            k => format!("{k} times"),
        };
        let mut parts: Vec<String> = Vec::new();
        if let Some((k, n)) = self.beyond {
            parts.push(format!("{} more than {}", fmt::g(n), times(k)));
        }
        parts.extend(
            self.by_times
                .iter()
                .map(|(k, n)| format!("{} {}", fmt::g(*n), times(*k))),
        );
        let finished = fmt::g(self.finished);
        match self.preempted() {
            Some(p) => format!(
                "over {} of the {finished} requests that finished ({})",
                fmt::g(p),
                parts.join(", ")
            ),
            None => format!(
                "of the {finished} requests that finished, preempted: {}",
                parts.join(", ")
            ),
        }
    }
}

/// The histogram's deltas read as requests preempted 1, 2, ... times.
///
/// The buckets are cumulative (`le`): requests preempted at most `le` times. vLLM's
/// start at 1, so "exactly k" is `B(k) - B(k-1)` for each k whose two buckets are both
/// integers one apart (2 to 5), requests above the last such bucket are `count - B(last)`,
/// and "exactly 1" is what the sum leaves: `sum - Σ k·n_k` over the exact ones, known only
/// when none lies above the last exact bucket (each of those could carry any number).
/// `None` when the engine has no such histogram, a reading lacks it, or it went back.
pub fn preempted_requests(
    engine: &EngineDescriptor,
    before: &Snapshot,
    after: &Snapshot,
) -> Option<PreemptedRequests> {
    let name = engine.request_preemptions_histogram?;
    let bucket = format!("{name}_bucket");
    let buckets = |s: &Snapshot| -> Vec<(f64, f64)> {
        let mut by_le: Vec<(f64, f64)> = Vec::new();
        for sample in s.metrics.series(&bucket) {
            let Some(le) = sample.label("le").and_then(|l| l.parse::<f64>().ok()) else {
                continue;
            };
            match by_le.iter_mut().find(|(l, _)| *l == le) {
                Some((_, v)) => *v += sample.value,
                None => by_le.push((le, sample.value)),
            }
        }
        by_le.sort_by(|a, b| a.0.total_cmp(&b.0));
        by_le
    };
    let (b0, b1) = (buckets(before), buckets(after));
    let finished = counter_delta(engine, before, after, &format!("{name}_count"))?;
    let preemptions = counter_delta(engine, before, after, &format!("{name}_sum"))?;
    if !(finished.is_finite() && preemptions.is_finite()) || finished < 0.0 || preemptions < 0.0 {
        return None;
    }
    let mut delta: Vec<(f64, f64)> = Vec::new();
    for (le, v) in &b1 {
        if !le.is_finite() {
            continue;
        }
        let was = b0.iter().find(|(l, _)| l == le).map_or(0.0, |(_, v)| *v);
        if *v < was {
            return None;
        }
        delta.push((*le, v - was));
    }
    // The run of integer buckets one apart from 1: 1, 2, 3, 4, 5 on vLLM.
    let mut exact_to = 0usize;
    while exact_to < delta.len() && delta[exact_to].0 == (exact_to + 1) as f64 {
        exact_to += 1;
    }
    if exact_to == 0 {
        return None;
    }
    let mut by_times: Vec<(u64, f64)> = (1..exact_to)
        .map(|i| ((i + 1) as u64, delta[i].1 - delta[i - 1].1))
        .filter(|(_, n)| *n > 0.0)
        .collect();
    let last = delta[exact_to - 1];
    let above = finished - last.1;
    let beyond = (above > 0.0).then_some((last.0 as u64, above));
    if beyond.is_none() {
        let many: f64 = by_times.iter().map(|(k, n)| *k as f64 * n).sum();
        let once = preemptions - many;
        if once > 0.0 {
            by_times.push((1, once));
        }
    }
    by_times.sort_by_key(|b| std::cmp::Reverse(b.0));
    Some(PreemptedRequests {
        finished,
        preemptions,
        by_times,
        beyond,
    })
}

#[cfg(test)]
mod spread_tests {
    use super::*;
    use crate::engine::VLLM;
    use crate::testing::{sample, snapshot};

    /// vLLM's per-request histogram at one reading: `counts[k]` requests preempted exactly
    /// k times (k = 0..), written as its cumulative buckets 1, 2, 3, 4, 5, 10, 20, +Inf, its
    /// count and its sum.
    fn reading(counts: &[u64]) -> Snapshot {
        let name = VLLM.request_preemptions_histogram.unwrap();
        let at_most = |le: f64| -> f64 {
            counts
                .iter()
                .enumerate()
                .filter(|(k, _)| *k as f64 <= le)
                .map(|(_, n)| *n as f64)
                .sum()
        };
        let mut samples: Vec<_> = ["1.0", "2.0", "3.0", "4.0", "5.0", "10.0", "20.0", "+Inf"]
            .iter()
            .map(|le| {
                let v = at_most(le.parse::<f64>().unwrap_or(f64::INFINITY));
                sample(&format!("{name}_bucket"), &[("engine", "0"), ("le", le)], v)
            })
            .collect();
        let count: u64 = counts.iter().sum();
        let sum: u64 = counts.iter().enumerate().map(|(k, n)| k as u64 * n).sum();
        samples.push(sample(
            &format!("{name}_count"),
            &[("engine", "0")],
            count as f64,
        ));
        samples.push(sample(
            &format!("{name}_sum"),
            &[("engine", "0")],
            sum as f64,
        ));
        snapshot(Some(1_700_000_000.0), samples)
    }

    /// Before: 9 requests never preempted. After: 10 more, 2 never, 3 once, 4 twice and
    /// 1 three times (14 preemptions). The buckets start at 1, so the 3 once are what the
    /// sum leaves after 4 × 2 + 1 × 3.
    #[test]
    fn the_buckets_tell_how_many_times_each_request_was_preempted() {
        let spread = preempted_requests(&VLLM, &reading(&[9]), &reading(&[11, 3, 4, 1])).unwrap();
        assert_eq!((spread.finished, spread.preemptions), (10.0, 14.0));
        assert_eq!(spread.by_times, vec![(3, 1.0), (2, 4.0), (1, 3.0)]);
        assert_eq!(spread.preempted(), Some(8.0));
        assert_eq!(
            spread.words(),
            "over 8 of the 10 requests that finished (1 three times, 4 twice, 3 once)"
        );
    }

    /// One request preempted 7 times lies between the buckets 5 and 10: it could carry any
    /// number from 6 to 10, so "once" cannot be had from the sum, and neither can how many
    /// were preempted at all.
    #[test]
    fn a_request_beyond_the_finest_buckets_leaves_once_and_never_apart() {
        let after = [2, 3, 4, 0, 0, 0, 0, 1];
        let spread = preempted_requests(&VLLM, &reading(&[]), &reading(&after)).unwrap();
        assert_eq!(spread.beyond, Some((5, 1.0)));
        assert_eq!(spread.by_times, vec![(2, 4.0)]);
        assert_eq!(spread.preempted(), None);
        assert_eq!(
            spread.words(),
            "of the 10 requests that finished, preempted: 1 more than five times, 4 twice"
        );
    }

    /// No histogram in a reading, or an engine without one: nothing is said.
    #[test]
    fn without_the_histogram_nothing_is_said() {
        let empty = snapshot(Some(1_700_000_000.0), Vec::new());
        assert_eq!(preempted_requests(&VLLM, &empty, &reading(&[1, 1])), None);
        assert_eq!(
            preempted_requests(&crate::engine::SGLANG, &reading(&[]), &reading(&[1, 1])),
            None
        );
    }
}
