//! A sweep: one simulated vLLM setup run at concurrency 4, 8, 16 and 32, with its three
//! places set by the setup and computed here from it, so that a test can hold `inferlint
//! sweep` to them.
//!
//! The setup is a plain model (one KV cache group, 16-token blocks) with a pool that holds
//! a handful of whole requests. Each request is 88 prompt and 200 output tokens, so it
//! holds 6 blocks when it starts and 18 when it ends:
//! - while every request of the load fits whole, throughput grows with the load; once
//!   more run than fit whole, they preempt each other and throughput stops growing: the
//!   knee is the largest concurrency swept that fits whole ([`Expected::knee`]);
//! - preemption starts at the first concurrency above that ([`Expected::preemption_starts`]);
//! - the most the server runs at once stops reaching the concurrency asked at the first
//!   concurrency above what fits at the start, 6 blocks each ([`Expected::stops_reaching`]).

use crate::bootlog::BootInfo;
use crate::runfolder::Case;
use crate::sched::{EngineModel, Load, StepCost, VllmConfig};

/// The concurrencies swept.
pub const CONCURRENCIES: [usize; 4] = [4, 8, 16, 32];

/// Requests each run sends: a whole number of waves at every concurrency swept, and
/// enough for a p99 that is not merely the slowest (100 or more: `slo`'s thin evidence).
pub const REQUESTS: usize = 128;

const PROMPT: u64 = 88;
const OUTPUT: u64 = 200;
const BLOCK: u64 = 16;
/// Usable blocks: 8 whole requests (18 blocks each), 24 started ones (6 blocks each).
const USABLE_BLOCKS: u64 = 144;

fn config() -> VllmConfig {
    VllmConfig {
        block_size: BLOCK,
        num_gpu_blocks: USABLE_BLOCKS + 1,
        kv_groups: 1,
        state_blocks_per_request: 0,
        max_num_seqs: 256,
        max_num_queued_reqs: None,
        prefill_chunk_tokens: None,
    }
}

/// The places the setup puts, as concurrencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected {
    /// Requests the pool holds whole, and at their start.
    pub whole: u64,
    /// Requests the pool holds at their start.
    pub started: u64,
    /// The concurrency of the knee.
    pub knee: usize,
    /// The first concurrency with preemption.
    pub preemption_starts: usize,
    /// The first concurrency the server's peak running stays below.
    pub stops_reaching: usize,
}

/// The places, from the setup's numbers (not from a run).
pub fn expected() -> Expected {
    let model = EngineModel::Vllm(config());
    let usable = model.usable_units();
    let whole = usable / model.units_for(PROMPT + OUTPUT);
    let started = usable / model.units_for(PROMPT);
    let first_above = |n: u64| {
        *CONCURRENCIES
            .iter()
            .find(|c| **c as u64 > n)
            .expect("the sweep goes past it")
    };
    Expected {
        whole,
        started,
        knee: *CONCURRENCIES
            .iter()
            .rfind(|c| **c as u64 <= whole)
            .expect("the smallest load fits"),
        preemption_starts: first_above(whole),
        stops_reaching: first_above(started),
    }
}

/// The folder name of one concurrency: `c04`, ..., `c32` (so that names sort in order).
pub fn folder(concurrency: usize) -> String {
    format!("c{concurrency:02}")
}

/// One case per concurrency; `name` is the folder's.
pub fn cases() -> Vec<(String, Case)> {
    CONCURRENCIES
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let case = Case {
                name: "sweep",
                model: EngineModel::Vllm(config()),
                cost: StepCost {
                    fixed_s: 0.0185,
                    per_running_s: 0.0006,
                    per_prefill_token_s: 0.000_02,
                },
                load: Load {
                    requests: REQUESTS,
                    concurrency: c,
                    prompt: PROMPT,
                    output: OUTPUT,
                    initial_test: true,
                },
                seed: 40 + i as u64,
                boot: BootInfo {
                    model_path: "/models/sim-8B".into(),
                    served_model_name: "sim-8b".into(),
                    pid: 4101,
                    port: 8000,
                    // Each run on its own fresh server, an hour apart.
                    start_wall: 1_796_140_800.0 + 3600.0 * i as f64,
                    ready_after_s: 124.0,
                    max_model_len: 4096,
                },
                // Each request's record (`--save-detailed`), so that a service level can
                // be held to every request of each run (`sweep --slo`).
                save_detailed: true,
                traces: false,
            };
            (folder(c), case)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_places_follow_from_the_pool() {
        assert_eq!(
            expected(),
            Expected {
                whole: 8,
                started: 24,
                knee: 8,
                preemption_starts: 16,
                stops_reaching: 32
            }
        );
    }
}
