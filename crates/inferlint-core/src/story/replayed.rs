//! Each cure the advice names, replayed on the run's own load before it is given.
//!
//! Where the replay can speak for the run ([`crate::analyses::whatif::baseline`]), the advice's
//! numbers are checked against it: a running limit is lowered only as far as the replay
//! says stops the evictions (searching lower where the arithmetic's figure still
//! preempts), a cache is grown to the size the replay says suffices, and a cure the
//! replay says would not remove the trap is not given. Each cure given carries what the
//! replay predicts, each figure with its band calibrated on real changed runs
//! ([`crate::analyses::whatif::band`]), or why it has none.

use crate::analyses::whatif::{self, Baseline, Change, Prediction};
use crate::engine::{EngineDescriptor, Knob};
use crate::run::model::Run;

/// The run's replay, for the advice.
#[derive(Debug)]
pub struct Replay {
    base: Baseline,
    engine: &'static EngineDescriptor,
}

/// The most replays one search makes (a binary search over a range of this many halvings).
const SEARCH_STEPS: u32 = 24;

/// How far above the arithmetic's figure a cache size is searched: the replay is not
/// asked to find a cure beyond four times what the arithmetic says is needed.
pub const POOL_SEARCH_FACTOR: u64 = 4;

impl Replay {
    /// The run's replay, or `None` where the model cannot speak for it.
    pub fn of(run: &Run) -> Option<Replay> {
        Some(Replay {
            base: whatif::baseline(run).ok()?,
            engine: run.engine,
        })
    }

    fn change(&self, knob: Knob, name: &'static str, value: u64) -> Option<Prediction> {
        self.base
            .predict(&[Change {
                knob,
                value: value.to_string(),
                name,
            }])
            .ok()
    }

    /// The replay with the running limit at `n`.
    pub fn running_limit(&self, n: u64) -> Option<Prediction> {
        self.change(Knob::MaxRunning, self.engine.tuning.max_running.written, n)
    }

    /// The replay with the load keeping `n` requests open.
    pub fn concurrency(&self, n: u64) -> Option<Prediction> {
        self.change(Knob::Concurrency, "concurrency", n)
    }

    /// The replay with TensorRT-LLM's capacity policy set to `policy`.
    pub fn policy(&self, name: &'static str, policy: &str) -> Option<Prediction> {
        self.base
            .predict(&[Change {
                knob: Knob::Policy,
                value: policy.to_owned(),
                name,
            }])
            .ok()
    }

    /// The replay with the KV cache holding `units` usable units.
    pub fn pool(&self, units: u64) -> Option<Prediction> {
        self.base.predict_pool(units).ok()
    }

    /// The cache the model holds now, in its units.
    pub fn usable_units(&self) -> u64 {
        self.base.usable_units()
    }

    /// The highest running limit at most `at_most` whose replay evicts nothing, with its
    /// prediction; `None` when even a limit of 1 evicts.
    pub fn largest_limit_without_evictions(&self, at_most: u64) -> Option<(u64, Prediction)> {
        self.largest_calm(at_most, |n| self.running_limit(n))
    }

    /// The highest `n` at most `at_most` whose replay (`replay(n)`) evicts nothing, with
    /// its prediction: fewer at once never evicts more, each holding its blocks alone
    /// longer, so it is found by halving. `None` when even 1 evicts.
    pub fn largest_calm(
        &self,
        at_most: u64,
        replay: impl Fn(u64) -> Option<Prediction>,
    ) -> Option<(u64, Prediction)> {
        let calm = |n: u64| replay(n).filter(evicts_none);
        if let Some(p) = calm(at_most) {
            return Some((at_most, p));
        }
        let (mut lo, mut hi) = (0u64, at_most);
        let mut found = None;
        for _ in 0..SEARCH_STEPS {
            if hi - lo <= 1 {
                break;
            }
            let mid = lo + (hi - lo) / 2;
            match calm(mid) {
                Some(p) => {
                    lo = mid;
                    found = Some((mid, p));
                }
                None => hi = mid,
            }
        }
        if found.is_none() {
            found = calm(1).map(|p| (1, p));
        }
        found
    }

    /// The smallest cache of at least `at_least` units whose replay meets `good`, with
    /// its prediction; `None` when none up to [`POOL_SEARCH_FACTOR`] times does.
    pub fn smallest_pool(
        &self,
        at_least: u64,
        good: impl Fn(&Prediction) -> bool,
    ) -> Option<(u64, Prediction)> {
        let meets = |u: u64| self.pool(u).filter(|p| good(p));
        if let Some(p) = meets(at_least) {
            return Some((at_least, p));
        }
        let top = at_least
            .saturating_mul(POOL_SEARCH_FACTOR)
            .max(at_least + 1);
        let mut best = meets(top).map(|p| (top, p))?;
        let (mut lo, mut hi) = (at_least, top);
        for _ in 0..SEARCH_STEPS {
            if hi - lo <= 1 {
                break;
            }
            let mid = lo + (hi - lo) / 2;
            match meets(mid) {
                Some(p) => {
                    hi = mid;
                    best = (mid, p);
                }
                None => lo = mid,
            }
        }
        Some(best)
    }

    /// ` (replayed on this run's load: no preemptions, at most 3 running, ...)`.
    pub fn note(&self, p: &Prediction) -> String {
        format!(
            " (replayed on this run's load: {})",
            self.base.words(p, self.engine)
        )
    }
}

/// Whether a prediction evicts nothing.
pub fn evicts_none(p: &Prediction) -> bool {
    p.predicted.evictions == Some(0)
}

/// Whether a prediction runs `n` at once and evicts nothing.
pub fn runs(n: u64) -> impl Fn(&Prediction) -> bool {
    move |p: &Prediction| {
        evicts_none(p)
            && p.predicted
                .peak_running
                .is_some_and(|peak| peak >= n as f64)
    }
}
