//! The pure heart of inferlint: the run model, the verdict type, the catalogue of the
//! tripwires and every check as a function of the model.
//!
//! Key design decision: this crate does no I/O and knows no file format, no HTTP, no GPU
//! and no HTML. Everything it needs arrives as plain data (parsed samples, boot facts,
//! series readings), and every engine difference arrives as an [`engine::EngineDescriptor`]
//! table rather than as `if engine == …` branches. That keeps each check a small pure
//! function that a benchmark harness can call directly, and lets a new engine be added by
//! writing a table.
//!
//! The crate is laid out by role, in the order a run goes through it:
//!
//! - [`model`]: what a server and its load recorded of one run, as plain data (the
//!   snapshots, the series, the client's account, each request's life, the spans and
//!   step records), and the facts read once from it;
//! - [`judging`]: which inputs belong to the run ([`judging::identity`]), the checks
//!   ([`judging::checks`], declared once in its registry), the cross-checks, the verdict
//!   type ([`judging::status`]) and the one rule of a run's outcome;
//! - [`story`]: the run's account (every figure computed once), what limited the run,
//!   the advice, the catalogue's words, the `--json` contract and its schemas;
//! - [`analyses`]: what reads several runs or replays one: compare, sweep, SLO and
//!   goodput, whatif, a run's profile and a fleet's grid;
//! - [`engine`]: the engines as data; [`run`]: the whole run, loaded and checked at once.

#![deny(missing_docs)]

pub mod analyses;
pub mod engine;
pub mod judging;
pub mod model;
pub mod run;
pub mod story;
#[cfg(test)]
mod testing;

pub use engine::{Engine, EngineDescriptor};
pub use judging::status::{CheckResult, Evidence, Status, Tripwire};
pub use model::client::{ClientAccount, LoadTool};
pub use model::metrics::{MetricSet, Sample};
pub use model::{BootFacts, SeriesHeader, SeriesSample, Snapshot};
