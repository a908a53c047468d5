//! The simulated server and load generator (feature `sim`), for a harness's own tests:
//! an HTTP server on 127.0.0.1 that serves a scheduler model of vLLM, SGLang or
//! TensorRT-LLM in the engine's real formats (every file and answer it writes says it is
//! simulated), and a load with `vllm bench serve`'s result fields.
//!
//! These are `inferlint-sim`'s own types, outside the stable API (see the crate's docs).

pub use inferlint_sim::kvpub::KvConfig;
pub use inferlint_sim::kvwire::Encoding;
pub use inferlint_sim::load::{run_in_runtime, LoadConfig, LoadError, LoadResult};
pub use inferlint_sim::otlp_export::{OtlpConfig, Protocol};
pub use inferlint_sim::server::{spawn, Faults, ServerConfig, ServerHandle, Traces};

use crate::own_data::RequestRecord;
use crate::run::ClientSummary;

/// The load's timed requests as the harness's own records: each placed on the wall
/// clock from its send on the monotonic clock (empty where that clock cannot be read).
pub fn request_records(load: &LoadResult) -> Vec<RequestRecord> {
    let Some(offset) = load.mono_to_wall_s else {
        return Vec::new();
    };
    load.requests
        .iter()
        .filter_map(|r| {
            let start = r.sent_mono_s? + offset;
            let mut record = RequestRecord::new(start, start + r.latency_s)
                .tokens(load.config.prompt_tokens, r.output_tokens);
            if let Some(ttft) = r.ttft_s {
                record = record.first_token(start + ttft);
            }
            Some(if r.ok { record } else { record.failed() })
        })
        .collect()
}

impl From<&LoadResult> for ClientSummary {
    /// The load's counts: its timed requests, and its untimed test request.
    fn from(load: &LoadResult) -> ClientSummary {
        let completed = load.completed() as u64;
        ClientSummary {
            completed,
            failed: load.failed() as u64,
            output_tokens: load.total_output_tokens(),
            duration_s: load.duration_s,
            input_tokens: Some(completed * load.config.prompt_tokens),
            untimed_requests: 1,
            max_concurrency: Some(load.config.concurrency as u64),
        }
    }
}
