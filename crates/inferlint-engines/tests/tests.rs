//! Integration tests of the engines crate, one module per concern.

/// Shared helpers: where the recordings are.
mod common;
/// Our Prometheus text parser on real scrapes and generated expositions.
mod prom;
/// Boot-log parsing and failure classification on every recorded log.
mod bootlog;
/// Snapshot, series and result files: reading, writing, damaged input.
mod files;
