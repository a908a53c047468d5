//! The library's builder, as a harness feeds it: reading times, request records, client
//! counts and `/metrics` text taken from the fuzzer's bytes. `build` must give a run or a
//! typed error and `check` a report, for every input: no panic, no overflow (the fuzz
//! build keeps debug assertions, so a wrapped sum panics here).

#![no_main]

use inferlint::{ClientSummary, Engine, RequestRecord, Run};
use libfuzzer_sys::fuzz_target;

/// Reads the next 8 bytes as a number, or 0 when the input ran out.
fn next(data: &mut &[u8]) -> u64 {
    let mut word = [0u8; 8];
    let n = data.len().min(8);
    word[..n].copy_from_slice(&data[..n]);
    *data = &data[n..];
    u64::from_le_bytes(word)
}

fuzz_target!(|data: &[u8]| {
    let mut data = data;
    let t0 = f64::from_bits(next(&mut data));
    let t1 = f64::from_bits(next(&mut data));
    let first = f64::from_bits(next(&mut data));
    let count = next(&mut data);
    let tokens = next(&mut data);
    let duration = f64::from_bits(next(&mut data));
    // The rest, split at the first NUL: the before and after `/metrics` texts.
    let text = String::from_utf8_lossy(data);
    let (before, after) = text.split_once('\0').unwrap_or((&text, &text));
    let builder = Run::builder()
        .engine(Engine::Vllm)
        .requested(count)
        .client(ClientSummary::new(count, tokens, tokens, duration))
        .requests([
            RequestRecord::new(t0, t1).first_token(first).tokens(tokens, count),
            RequestRecord::new(t0, t1).tokens(count, tokens).failed(),
        ]);
    let Ok(builder) = builder.before_metrics_at(before, t0) else {
        return;
    };
    let Ok(builder) = builder.sample_metrics(after, first) else {
        return;
    };
    let Ok(builder) = builder.after_metrics_at(after, t1) else {
        return;
    };
    if let Ok(run) = builder.build() {
        let _ = run.check();
    }
});
