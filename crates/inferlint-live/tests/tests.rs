//! Integration tests of the live crate, against the simulated server on 127.0.0.1
//! (`inferlint_sim::server::spawn`): no GPU, no engine, no network beyond the machine.

/// The blocking face: refused inside a runtime, with an error and not a panic.
mod blocking;
/// Waiting for the lines a recording wrote.
mod common;
/// The poller of TensorRT-LLM's drained endpoints against an HTTP server made in the
/// test: the records and events it takes, the gaps in the event ids, a server that
/// answers badly or not at all.
mod drain;
/// The forward-pass metrics subscriber against a ZeroMQ publisher made in the test:
/// steps, heartbeats, holes, another version, garbage, a restart; read back as a step file.
mod fpm;
/// The KV event subscriber against a ZeroMQ publisher made in the test: holes, replay,
/// garbage, restarts.
mod kv_events;
/// The OTLP receiver: both transports, the real engine's bodies, every refusal.
mod otlp;
/// What each scrape after the first asks of the server, and that nothing is lost.
mod pages;
/// A run read from a stand-in Prometheus: the split, the replicas, the errors.
mod prometheus;
/// A whole recording while the simulated load runs, in memory and in a run folder.
mod record;
/// No signal handler unless the caller asks for one.
mod signals;
/// The step follower against a step file the test writes: the window, a line under
/// way, a restart.
mod steps_follow;
