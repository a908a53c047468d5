//! Counter arithmetic shared by T1, T10 and T15: deltas between two snapshots, the
//! SGLang witness rule, and restart and order detection.

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
