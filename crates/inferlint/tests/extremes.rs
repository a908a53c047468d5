//! A harness's inputs at the ends of their types: every figure the library derives from
//! them is checked or saturating arithmetic, so `build` and `check` answer (a typed error,
//! Can't tell, a verdict) and never panic on overflow in a debug build or wrap in a
//! release one.

use inferlint::{ClientSummary, Engine, RequestRecord, Run};

/// vLLM's counters at `finished` requests, each counter at `value`.
fn counters(finished: f64, value: f64) -> String {
    format!(
        "# TYPE vllm:request_success_total counter\n\
         vllm:request_success_total{{finished_reason=\"length\",model_name=\"m\"}} {finished}\n\
         vllm:generation_tokens_total{{model_name=\"m\"}} {value}\n\
         vllm:prompt_tokens_total{{model_name=\"m\"}} {value}\n\
         vllm:num_preemptions_total{{model_name=\"m\"}} 0\n\
         vllm:num_requests_running{{model_name=\"m\"}} {value}\n\
         vllm:num_requests_waiting{{model_name=\"m\"}} {value}\n\
         vllm:kv_cache_usage_perc{{model_name=\"m\"}} 0.5\n"
    )
}

const TIMES: [f64; 7] = [-1e300, -1.0, 0.0, 1.0, 1_700_000_000.0, 1e18, 1e300];
const COUNTS: [u64; 5] = [0, 1, 1 << 53, u64::MAX / 2, u64::MAX];
const VALUES: [f64; 5] = [0.0, 1.0, 9.007_199_254_740_993e15, 1e300, f64::MAX];

/// Every pair of reading times, every count and every counter value: `build` gives a run
/// or a typed error, and `check` a report, without a panic.
#[test]
fn extreme_times_counts_and_counters_never_panic() {
    for (i, &t0) in TIMES.iter().enumerate() {
        for &t1 in &TIMES[i..] {
            for (&count, &value) in COUNTS.iter().zip(VALUES.iter()) {
                let builder = Run::builder()
                    .engine(Engine::Vllm)
                    .requested(count)
                    .client(ClientSummary::new(count, count, count, value))
                    .requests([
                        RequestRecord::new(t0, t1)
                            .first_token(t0)
                            .tokens(count, count),
                        RequestRecord::new(t0, t1).tokens(count, count).untimed(),
                    ]);
                let Ok(builder) = builder.before_metrics_at(&counters(0.0, 0.0), t0) else {
                    continue;
                };
                let Ok(builder) = builder.sample_metrics(&counters(value, value), t0) else {
                    continue;
                };
                let Ok(builder) = builder.after_metrics_at(&counters(value, value), t1) else {
                    continue;
                };
                if let Ok(run) = builder.build() {
                    let report = run.check();
                    // Something was judged or listed, whatever the figures.
                    assert!(
                        !report.results().is_empty() || !report.not_checked().is_empty(),
                        "t {t0}..{t1}, count {count}, value {value}"
                    );
                }
            }
        }
    }
}

/// A replay asked for a cache of `u64::MAX` blocks, or none, on a real run: a prediction
/// or an error, never an overflow (the blocks the engine keeps aside are added to it).
#[test]
fn a_replay_of_any_cache_size_never_panics() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real/vllm-0.32-cpu/kv-too-small");
    let run = Run::from_dir(&dir).expect("the real run reads");
    let base = run.whatif().expect("the real run replays");
    for usable in [0, 1, u64::MAX / 2, u64::MAX] {
        let _ = base.predict_pool(usable);
    }
}
