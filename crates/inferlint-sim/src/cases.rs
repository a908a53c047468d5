//! The simulated setups, each named after the recorded run it imitates.

use crate::sched::{
    CapacityPolicy, EngineModel, Load, SglangConfig, StepCost, TrtllmConfig, VllmConfig,
};

/// The recorded vLLM 0.28 live run: a 27B hybrid model with 784-token blocks, 43 blocks
/// reported (42 usable), two attention groups and two Mamba state blocks per request.
pub fn vllm_live() -> (EngineModel, StepCost) {
    (
        EngineModel::Vllm(VllmConfig {
            block_size: 784,
            num_gpu_blocks: 43,
            kv_groups: 3,
            state_blocks_per_request: 1,
            max_num_seqs: 32,
            max_num_queued_reqs: None,
            prefill_chunk_tokens: Some(392),
        }),
        StepCost {
            fixed_s: 0.0185,
            per_running_s: 0.0006,
            per_prefill_token_s: 0.000_02,
        },
    )
}

/// The recorded SGLang 0.5 live run: a pool of 5,930 tokens, `--max-running-requests 10`.
pub fn sglang_live() -> (EngineModel, StepCost) {
    (
        EngineModel::Sglang(SglangConfig {
            max_total_num_tokens: 5930,
            page_size: 1,
            max_running_requests: 10,
            mamba_slots: None,
            new_token_ratio: 1.0,
        }),
        StepCost {
            fixed_s: 0.0185,
            per_running_s: 0.0004,
            per_prefill_token_s: 0.000_02,
        },
    )
}

/// The recorded TensorRT-LLM 1.3 Qwen3-8B run: 37,760 tokens in 32-token blocks,
/// 32 requests at most, GUARANTEED_NO_EVICT.
pub fn trtllm_qwen3_8b() -> (EngineModel, StepCost) {
    trtllm_with(CapacityPolicy::GuaranteedNoEvict, 1180)
}

/// TensorRT-LLM with a given policy and pool size (32-token blocks, 32 requests at most).
pub fn trtllm_with(policy: CapacityPolicy, blocks: u64) -> (EngineModel, StepCost) {
    (
        EngineModel::Trtllm(TrtllmConfig {
            tokens_per_block: 32,
            blocks,
            max_num_requests: 32,
            policy,
        }),
        StepCost {
            fixed_s: 0.0155,
            per_running_s: 0.0002,
            per_prefill_token_s: 0.000_01,
        },
    )
}

/// The recordings' standard load: 32 requests at once, 88 prompt and 1,000 output tokens.
pub fn standard_load() -> Load {
    Load {
        requests: 32,
        concurrency: 32,
        prompt: 88,
        output: 1000,
        initial_test: true,
    }
}
