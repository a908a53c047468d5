//! The simulated server and load generator (feature `sim`), for a harness's own tests:
//! an HTTP server on 127.0.0.1 that serves a scheduler model of vLLM, SGLang or
//! TensorRT-LLM in the engine's real formats (every file and answer it writes says it is
//! simulated), and a load with `vllm bench serve`'s result fields.
//!
//! These are `inferlint-sim`'s own types, outside the stable API (see the crate's docs).

pub use inferlint_sim::load::{run_in_runtime, LoadConfig, LoadError, LoadResult};
pub use inferlint_sim::server::{spawn, Faults, ServerConfig, ServerHandle};

use crate::run::ClientSummary;

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
