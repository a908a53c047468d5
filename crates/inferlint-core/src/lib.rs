//! The pure heart of inferlint: the run model, the verdict type, the catalogue of the
//! tripwires and every check as a function of the model.
//!
//! Key design decision: this crate does no I/O and knows no file format, no HTTP, no GPU
//! and no HTML. Everything it needs arrives as plain data (parsed samples, boot facts,
//! series readings), and every engine difference arrives as an [`engine::EngineDescriptor`]
//! table rather than as `if engine == …` branches. That keeps each check a small pure
//! function that a benchmark harness can call directly, and lets a new engine be added by
//! writing a table.

#![deny(missing_docs)]

pub mod account;
pub mod advice;
pub mod catalogue;
pub mod checks;
pub mod client;
pub mod compare;
pub mod contract;
pub mod crosscheck;
pub mod engine;
pub mod evidence;
pub mod facts;
pub mod fleet_grid;
pub mod fmt;
pub mod identity;
pub mod insights;
pub mod junit;
pub mod live;
pub mod lives;
pub mod metrics;
pub mod model;
pub mod object;
pub mod other_traffic;
pub mod outcome;
pub mod profile;
pub mod replayed;
pub mod requests;
pub mod run;
pub mod schema;
pub mod server_records;
pub mod slo;
pub mod status;
pub mod steps;
pub mod sweep;
#[cfg(test)]
mod testing;
pub mod traces;
pub mod whatif;

pub use client::{ClientAccount, LoadTool};
pub use engine::{Engine, EngineDescriptor};
pub use metrics::{MetricSet, Sample};
pub use model::{BootFacts, SeriesHeader, SeriesSample, Snapshot};
pub use status::{CheckResult, Evidence, Status, Tripwire};
