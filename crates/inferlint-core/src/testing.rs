//! Builders the unit tests of several modules share.

use crate::model::metrics::{MetricSet, Sample};
use crate::model::Snapshot;

/// One sample line.
pub fn sample(name: &str, labels: &[(&str, &str)], value: f64) -> Sample {
    Sample {
        name: name.into(),
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        value,
        timestamp_ms: None,
    }
}

/// A snapshot of these samples read at `t_wall` (with a matching monotonic clock and a
/// 4 ms request), or without clocks.
pub fn snapshot(t_wall: Option<f64>, samples: Vec<Sample>) -> Snapshot {
    Snapshot {
        url: String::new(),
        t_wall,
        t_mono_ns: t_wall.map(|t| (t * 1e9) as i64),
        latency_s: t_wall.map(|_| 0.004),
        text: String::new(),
        metrics: MetricSet::new(samples),
    }
}

/// A snapshot of unlabelled samples, without clocks.
pub fn plain_snapshot(samples: &[(&str, f64)]) -> Snapshot {
    snapshot(
        None,
        samples
            .iter()
            .map(|(name, value)| sample(name, &[], *value))
            .collect(),
    )
}

/// A TensorRT-LLM snapshot of the counters a run's requests move, read at `t_wall`.
pub fn trtllm_counters(t_wall: f64, finished: f64, prompt: f64, generated: f64) -> Snapshot {
    snapshot(
        Some(t_wall),
        vec![
            sample(
                "trtllm_request_success_total",
                &[("finished_reason", "length")],
                finished,
            ),
            sample("trtllm_prompt_tokens_total", &[], prompt),
            sample("trtllm_generation_tokens_total", &[], generated),
        ],
    )
}

/// Asserts a verdict is Can't tell with a message holding `words`.
pub fn assert_unknown_saying(r: &crate::judging::status::CheckResult, words: &str) {
    assert_eq!(
        r.status,
        crate::judging::status::Status::Unknown,
        "{}",
        r.message
    );
    assert!(r.message.contains(words), "{}", r.message);
}

/// A run of `engine` with nothing given.
pub fn empty_run(engine: &'static crate::engine::EngineDescriptor) -> crate::run::model::Run {
    crate::run::model::Run::empty(engine)
}
