//! Integration tests of the engines crate, one module per concern.

/// Boot-log parsing and failure classification on every recorded log.
mod bootlog;
/// Shared helpers: where the recordings are.
mod common;
/// Snapshot, series and result files: reading, writing, damaged input.
mod files;
/// The KV-cache event stream: batches in both encodings, frames, the file and its holes.
mod kv_events;
/// llm-d's Benchmark Report read as a load tool's result: its example, inference-perf's
/// partials, a run's stages joined, refusals.
mod llmd_br;
/// Every load tool's result files, real and damaged.
mod loadtools;
/// Our Prometheus text parser on real scrapes and generated expositions.
mod prom;
/// The engines' own per-request records: TensorRT-LLM's drained `/perf_metrics`, SGLang's
/// metrics files.
mod server_requests;
/// The server's spans: the real vLLM's over both transports, and a Collector's file.
mod spans;
