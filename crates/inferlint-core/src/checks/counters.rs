//! Counter arithmetic shared by T1, T10 and T15: deltas between two snapshots, the
//! SGLang witness rule, and restart and order detection.

use std::collections::BTreeSet;

use serde_json::json;

use crate::engine::EngineDescriptor;
use crate::fmt;
use crate::metrics::MetricSet;
use crate::model::Snapshot;
use crate::status::Evidence;

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
