//! Integration tests of the report crate, on the simulated runs of `fixtures/sim` (the
//! first is the run `inferlint demo` writes) and on runs built in code.
#![expect(
    clippy::unwrap_used,
    reason = "a test that cannot read its own inputs should stop there"
)]

/// Reading and checking the demo run, and rendering it.
mod common;
/// Every figure the page states is the run's own: throughput, percentiles, spans, a
/// simulated run, a hybrid pool, the charts' time axis.
mod figures;
/// Escaping: a run whose logs, model name and file names carry markup; nothing runs.
mod hostile;
/// A day-long recording: downsampled, small, and nothing lost.
mod long_run;
/// The demo report: well-formed, every verdict, self-contained, its data and charts.
mod render;
/// The report reads no verdict's evidence by key: its figures are the account's.
mod tidy;
/// The small HTML checker the tests use (also included by the command's tests).
mod wellformed;
