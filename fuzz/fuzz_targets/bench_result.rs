//! A load tool's result file (one JSON object, or JSON lines of which the last is the run,
//! as SGLang's client appends): never a panic, and every number it keeps is finite.

#![no_main]

use inferlint_engines::files::parse_bench_result;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(result) = parse_bench_result(text) else {
        return;
    };
    for value in [
        result.duration,
        result.output_throughput,
        result.mean_ttft_ms,
        result.median_ttft_ms,
        result.p99_ttft_ms,
        result.mean_tpot_ms,
    ]
    .into_iter()
    .flatten()
    {
        assert!(value.is_finite(), "{value}");
    }
});
