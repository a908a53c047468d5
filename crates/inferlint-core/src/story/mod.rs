//! What the tool tells of a checked run: its account (every figure that more than one
//! sentence speaks of, computed once), what limited it, what to change, the catalogue's
//! words for each tripwire, the number formats, and the `--json` contract with its schemas.

pub mod account;
pub mod advice;
pub mod catalogue;
pub mod contract;
pub mod fmt;
pub mod insights;
pub mod replayed;
pub mod schema;
