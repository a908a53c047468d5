//! Any bytes as a load tool's result file, through the reader of the tool whose fields
//! they hold (vLLM's, SGLang's and TensorRT-LLM's clients, GuideLLM, AIPerf summaries and
//! records, inference-perf summaries, stages and requests, GenAI-Perf, LLMPerf): an
//! account or an error, never a panic; an account only for a file a tool is recognised
//! in; and every number the account keeps is a number (finite), since a file can only
//! leave one out, never make it infinite.

#![no_main]

use inferlint_engines::loadtools::{identify, read_bytes_named};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let kind = identify(data);
    let Ok(account) = read_bytes_named("fuzz.json", data) else {
        return;
    };
    let kind = kind.expect("an account comes only from a recognised file");
    assert_eq!(account.tool, kind.tool);
    for (name, value) in [
        ("duration", account.duration),
        ("output_throughput", account.output_throughput),
        ("request_rate", account.request_rate),
        ("mean_ttft_ms", account.mean_ttft_ms),
        ("median_ttft_ms", account.median_ttft_ms),
        ("p99_ttft_ms", account.p99_ttft_ms),
        ("mean_tpot_ms", account.mean_tpot_ms),
    ] {
        if let Some(v) = value {
            assert!(v.is_finite(), "{name} = {v}");
        }
    }
    assert!(account.inter_token_ms.iter().all(|v| v.is_finite()));
});
