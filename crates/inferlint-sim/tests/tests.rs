//! Tests of the simulated engine.
#![expect(
    clippy::unwrap_used,
    reason = "a test that cannot read its own inputs should stop there"
)]

/// The scheduler models against what the recorded runs show.
mod calibration;
/// The `inferlint-sim` command line.
mod cli;
/// The committed load-tool fixtures: each says how it was made and its files parse.
mod loadtools;
/// The KV event batches and spans set against the real vLLM's.
mod real_formats;
/// Simulated run folders: deterministic, marked as simulated, readable by our parsers.
mod runfolder;
/// The HTTP server over real sockets, its faults, and the load generator against it.
mod server;
/// Streamed chunks of several tokens, the load's per-request lists, the KV event stream.
mod traces;
