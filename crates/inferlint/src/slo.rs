//! A service level held to every request of a run, and the capacity of a sweep under it
//! (`inferlint sweep --slo`, docs/slo.md).
//!
//! Each percentile counts a failed, timed-out or unfinished request as an infinite
//! latency, by nearest rank; a percentile with more misses than its rank leaves room for
//! is infinite, "not met", never a number. Goodput is the requests (and their output
//! tokens) per second that met every bound. A capacity is found only between a measured
//! point that meets the service level and one that does not.
//!
//! ```
//! # let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/loadtools/vllm/all-failed-detailed");
//! use inferlint::slo::{self, Verdict};
//! let level = slo::parse("ttft:p95<=2s,tpot:p99<=60ms")?;
//! let run = inferlint::Run::from_dir(dir)?;
//! let held = run.service_level(&level);
//! // Every request failed: each percentile is infinite, and nothing met the level.
//! assert_eq!(held.verdict, Verdict::NotMet);
//! assert!(held.bounds.iter().all(|b| b.infinite && b.value_ms.is_none()));
//! assert_eq!(held.goodput.map(|g| g.good_requests), Some(0));
//! # Ok::<(), inferlint::Error>(())
//! ```
//!
//! Outside the stable API: the types are `inferlint-core`'s, re-exported with their
//! public fields, which may still change. [`parse`] and [`crate::Run::service_level`]
//! are this crate's; `ServiceLevel::parse` keeps its own error type, [`SloError`].

pub use inferlint_core::analyses::slo::{
    capacity, capacity_text, goodput_gate, run_text, Bound, BoundResult, Capacity, CapacityPoint,
    CapacityVerdict, Cost, Counted, GateVerdict, Goodput, GoodputGate, GpuPrice, Metric, RunSlo,
    ServiceLevel, SloError, Verdict,
};

/// Reads a service level as `--slo` does: bounds separated by commas or lines,
/// `METRIC[:pNN]<=LIMIT` each (`ttft:p95<=2s,tpot:p99<=60ms,e2e<=30s`), a bound without
/// a percentile holding every request, `#` starting a comment; `tool` for the thresholds
/// each run's load tool was given for its goodput. Text that is none of these (an
/// unknown metric, a limit without a unit, a bound given twice, nothing) is an
/// [`ErrorKind::Invalid`](crate::ErrorKind::Invalid) error naming what was wrong.
///
/// ```
/// let error = inferlint::slo::parse("ttft:p95<=fast").unwrap_err();
/// assert_eq!(error.kind(), inferlint::ErrorKind::Invalid);
/// assert_eq!(error.input(), Some("the service level"));
/// ```
pub fn parse(text: &str) -> Result<ServiceLevel, crate::Error> {
    ServiceLevel::parse(text).map_err(|e| crate::Error::invalid_input("the service level", e))
}

impl crate::Run {
    /// Holds a service level to this run's load-tool result, every request counted (the
    /// result as the identity gate admits it: one set aside as not of this run counts
    /// nothing).
    pub fn service_level(&self, level: &ServiceLevel) -> RunSlo {
        inferlint_core::analyses::slo::hold_run(level, "this run", &self.inner)
    }
}
