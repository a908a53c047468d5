//! Each scheduler model simulating a recorded run's setup reproduces what the recording
//! shows (spec §8): the peak of running requests, the falling ceiling and the evictions.

use inferlint_sim::cases;
use inferlint_sim::sched::{run_load, CapacityPolicy, EngineModel, LoadRun, VllmConfig};

/// The lowest and highest T9 ceiling over the saturated steps: (usable × running) // used.
fn ceilings(model: &EngineModel, run: &LoadRun) -> (u64, u64) {
    let usable = model.usable_units();
    let c: Vec<u64> = run
        .timeline
        .iter()
        .filter(|s| s.running > 0 && s.used_units as f64 >= 0.9 * usable as f64)
        .map(|s| usable * s.running as u64 / s.used_units)
        .collect();
    (*c.iter().min().unwrap(), *c.iter().max().unwrap())
}

#[test]
fn vllm_hybrid_run_matches_the_recorded_live_run() {
    let (model, cost) = cases::vllm_live();
    let run = run_load(model.clone(), cost, cases::standard_load());
    // Recorded: peak 10, ceiling 10 falling to 7, 22 preemptions.
    assert_eq!(run.peak_running(), 10);
    let (lo, hi) = ceilings(&model, &run);
    assert_eq!(hi, 10);
    assert!((6..=8).contains(&lo), "ceiling fell to {lo}, recorded 7");
    let preemptions = run.evictions() as f64;
    assert!(
        (22.0 * 0.7..=22.0 * 1.3).contains(&preemptions),
        "{preemptions} preemptions, recorded 22"
    );
    // Every request finished with its whole answer; the prompt counter counts each once.
    let last = run.timeline.last().unwrap();
    assert_eq!(last.finished, 33);
    assert_eq!(last.generated_tokens, 33 * 1000);
    assert_eq!(last.prompt_tokens, 33 * 88);
}

#[test]
fn sglang_run_matches_the_recorded_live_run() {
    let (model, cost) = cases::sglang_live();
    let run = run_load(model, cost, cases::standard_load());
    assert_eq!(run.peak_running(), 5, "recorded peak 5 under a cap of 10");
    assert_eq!(run.evictions(), 0, "recorded: no retractions");
}

#[test]
fn trtllm_run_matches_the_recorded_qwen3_8b_run() {
    let (model, cost) = cases::trtllm_qwen3_8b();
    let run = run_load(model, cost, cases::standard_load());
    assert_eq!(run.peak_running(), 32);
    assert_eq!(run.evictions(), 0, "GUARANTEED_NO_EVICT never pauses");
    assert!(run.timeline.iter().all(|s| s.paused == 0));
}

#[test]
fn trtllm_max_utilization_pauses_when_the_pool_is_short() {
    let (model, cost) = cases::trtllm_with(CapacityPolicy::MaxUtilization, 700);
    let run = run_load(model, cost, cases::standard_load());
    assert!(run.evictions() > 0);
    let (model, cost) = cases::trtllm_with(CapacityPolicy::GuaranteedNoEvict, 700);
    let run = run_load(model, cost, cases::standard_load());
    assert_eq!(run.evictions(), 0);
    assert!(run.peak_running() < 32, "only what fits whole is admitted");
}

#[test]
fn sglang_retracts_when_it_reserves_less_than_the_whole_answer() {
    let (mut model, cost) = cases::sglang_live();
    if let EngineModel::Sglang(c) = &mut model {
        c.new_token_ratio = 0.3;
    }
    let run = run_load(model, cost, cases::standard_load());
    assert!(run.peak_running() > 5);
    assert!(run.evictions() > 0);
}

#[test]
fn sglang_hybrid_lowers_the_running_limit() {
    let (mut model, cost) = cases::sglang_live();
    if let EngineModel::Sglang(c) = &mut model {
        c.mamba_slots = Some(1);
    }
    let run = run_load(model, cost, cases::standard_load());
    assert_eq!(run.peak_running(), 1);
}

#[test]
fn vllm_admission_control_rejects_beyond_the_queue_limit() {
    let (mut model, cost) = cases::vllm_live();
    if let EngineModel::Vllm(VllmConfig {
        max_num_queued_reqs,
        ..
    }) = &mut model
    {
        *max_num_queued_reqs = Some(8);
    }
    let run = run_load(model, cost, cases::standard_load());
    let last = run.timeline.last().unwrap();
    assert_eq!(
        last.rejected, 24,
        "8 of 32 in flight, the other 24 rejected"
    );
    assert_eq!(last.finished, 1 + 8);
}

#[test]
fn a_plain_vllm_model_holds_one_block_per_block_of_tokens() {
    let model = EngineModel::Vllm(VllmConfig {
        block_size: 16,
        num_gpu_blocks: 161,
        kv_groups: 1,
        state_blocks_per_request: 0,
        max_num_seqs: 32,
        max_num_queued_reqs: None,
        prefill_chunk_tokens: None,
    });
    assert_eq!(model.usable_units(), 160);
    assert_eq!(model.units_for(16), 1);
    assert_eq!(model.units_for(17), 2);
}
