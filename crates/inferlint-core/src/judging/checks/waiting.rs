//! Why requests waited at the server, where the engine splits its waiting gauge by reason
//! ([`crate::engine::WaitingReasons`]): for T8 and T17, whose advice differs with it. A
//! request that waits for room (`capacity`) starts when the running limit or the KV cache
//! has room for it; one that is deferred (a KV transfer under way, another transient
//! block, a structured-output grammar still compiling) starts when that ends, whatever the
//! limit.
//!
//! The recording's samples are snapshots of the gauge a quarter of a second apart, so the
//! sum of a reason's readings over the samples is that reason's request-samples: its share
//! of the summed readings is its share of the time requests spent waiting, as the
//! recording saw it.

use crate::judging::status::{CheckResult, Status};
use crate::model::SeriesSample;
use crate::story::fmt;

/// The waiting gauge's split by reason, folded over a recording.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WaitingSplit {
    /// Samples that carried the split.
    pub readings: usize,
    /// The most requests waiting for room at once.
    pub peak_capacity: f64,
    /// The most requests deferred at once.
    pub peak_deferred: f64,
    /// The readings of requests waiting for room, summed over the samples.
    pub sum_capacity: f64,
    /// The readings of deferred requests, summed over the samples.
    pub sum_deferred: f64,
}

/// Which reason held most of the waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mostly {
    /// Most of the waiting was for room in the batch or the KV cache.
    Capacity,
    /// Most of the waiting was deferred.
    Deferred,
}

impl WaitingSplit {
    /// Folds one sample in; one without the split (an engine or release that exports
    /// none) adds nothing.
    pub fn push(&mut self, sample: &SeriesSample) {
        let read = |v: Option<f64>| v.filter(|v| v.is_finite() && *v >= 0.0);
        let (capacity, deferred) = (read(sample.waiting_capacity), read(sample.waiting_deferred));
        if capacity.is_none() && deferred.is_none() {
            return;
        }
        let (c, d) = (capacity.unwrap_or(0.0), deferred.unwrap_or(0.0));
        self.readings += 1;
        self.peak_capacity = self.peak_capacity.max(c);
        self.peak_deferred = self.peak_deferred.max(d);
        self.sum_capacity += c;
        self.sum_deferred += d;
    }

    /// Joins the fold of the samples that follow.
    pub fn merge(&mut self, right: WaitingSplit) {
        self.readings += right.readings;
        self.peak_capacity = self.peak_capacity.max(right.peak_capacity);
        self.peak_deferred = self.peak_deferred.max(right.peak_deferred);
        self.sum_capacity += right.sum_capacity;
        self.sum_deferred += right.sum_deferred;
    }

    /// The deferred share of the waiting the samples saw; `None` where the recording has
    /// no split or nothing waited.
    pub fn deferred_share(&self) -> Option<f64> {
        let all = self.sum_capacity + self.sum_deferred;
        (self.readings > 0 && all > 0.0).then(|| self.sum_deferred / all)
    }

    /// The reason that held more than half of the waiting, if one did.
    pub fn mostly(&self) -> Option<Mostly> {
        let share = self.deferred_share()?;
        if share > 0.5 {
            Some(Mostly::Deferred)
        } else if share < 0.5 {
            Some(Mostly::Capacity)
        } else {
            None
        }
    }

    /// `every request that waited at the server waited for room ...`: what the split says,
    /// or `None` where the recording has no split or nothing waited.
    pub fn sentence(&self) -> Option<String> {
        let share = self.deferred_share()?;
        let deferred = format!(
            "deferred (a KV transfer, a grammar still compiling or another transient block held them, not the running limit; at most {} at once)",
            fmt::g(self.peak_deferred)
        );
        let room = format!(
            "for room in the batch or the KV cache (at most {} at once)",
            fmt::g(self.peak_capacity)
        );
        Some(if self.sum_capacity == 0.0 {
            format!("every request that waited at the server was {deferred}")
        } else if self.sum_deferred == 0.0 {
            format!("every request that waited at the server waited {room}; none was deferred")
        } else {
            format!(
                "of the waiting at the server, {} was {deferred} and the rest {room}",
                fmt::percent(share, 0)
            )
        })
    }

    /// `result` with the split's evidence where the recording has it, and its sentence
    /// added to a failed or warned message where anything waited.
    pub fn annotate(&self, result: CheckResult) -> CheckResult {
        if self.readings == 0 {
            return result;
        }
        let mut result = result
            .with("peak_waiting_capacity", self.peak_capacity)
            .with("peak_waiting_deferred", self.peak_deferred);
        if let Some(share) = self.deferred_share() {
            result = result.with("waiting_deferred_share", share);
        }
        if matches!(result.status, Status::Fail | Status::Warn) {
            if let Some(sentence) = self.sentence() {
                result.message.push_str("; ");
                result.message.push_str(&sentence);
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judging::status::Tripwire;

    fn sample(capacity: Option<f64>, deferred: Option<f64>) -> SeriesSample {
        SeriesSample {
            waiting_capacity: capacity,
            waiting_deferred: deferred,
            ..SeriesSample::default()
        }
    }

    fn fold(samples: &[SeriesSample]) -> WaitingSplit {
        let mut split = WaitingSplit::default();
        for s in samples {
            split.push(s);
        }
        split
    }

    /// Three samples with 3, 1 and 0 waiting for room and 0, 2 and 2 deferred: 4
    /// request-samples of room and 4 deferred, half each, so neither reason held most.
    /// Folding the halves apart and joining them gives the same.
    #[test]
    fn the_split_sums_request_samples_and_joins_halves() {
        let samples = [
            sample(Some(3.0), Some(0.0)),
            sample(Some(1.0), Some(2.0)),
            sample(Some(0.0), Some(2.0)),
        ];
        let whole = fold(&samples);
        assert_eq!(
            (whole.readings, whole.peak_capacity, whole.peak_deferred),
            (3, 3.0, 2.0)
        );
        assert_eq!(whole.deferred_share(), Some(0.5));
        assert_eq!(whole.mostly(), None);
        let mut left = fold(&samples[..1]);
        left.merge(fold(&samples[1..]));
        assert_eq!(left, whole);
    }

    /// A recording without the split (older vLLM, SGLang, TensorRT-LLM) leaves a verdict
    /// as it was: no evidence, no sentence.
    #[test]
    fn no_split_leaves_the_verdict_alone() {
        let split = fold(&[sample(None, None), sample(None, None)]);
        let result = CheckResult::new(Tripwire::T8, Status::Fail, "held back");
        let annotated = split.annotate(result.clone());
        assert_eq!(annotated.message, result.message);
        assert!(annotated.evidence.is_empty());
    }

    /// Nothing waited: the peaks are 0 and there is no share to say.
    #[test]
    fn nothing_waiting_says_nothing() {
        let split = fold(&[sample(Some(0.0), Some(0.0))]);
        let annotated = split.annotate(CheckResult::new(Tripwire::T8, Status::Fail, "held"));
        assert_eq!(annotated.message, "held");
        assert_eq!(annotated.evidence["peak_waiting_deferred"], 0.0);
        assert!(annotated.evidence.get("waiting_deferred_share").is_none());
    }
}
