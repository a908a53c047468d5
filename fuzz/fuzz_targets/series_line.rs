//! One line of a series recording, as raw bytes, through the line reader. It must never
//! panic, and on a line that is valid JSON it must read what a full JSON parser reads:
//! the reader's fast path for sample lines may only be faster, never different.

#![no_main]

use inferlint_engines::files::{parse_series_bytes, SeriesLine};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Equal, with NaN equal to NaN and the sign of zero kept.
fn same(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let read = parse_series_bytes(data);
    // What a full JSON parser makes of the line, where it is JSON at all.
    let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if object.contains_key("schema") {
        assert!(matches!(read, SeriesLine::Header(_)), "{read:?}");
        return;
    }
    if object.contains_key("gap") || object.contains_key("restart") {
        assert_eq!(read, SeriesLine::Marker);
        return;
    }
    let Some(t_wall) = object.get("t_wall").and_then(Value::as_f64) else {
        assert_eq!(read, SeriesLine::Skipped);
        return;
    };
    let SeriesLine::Sample(sample) = read else {
        panic!("a sample line read as {read:?}");
    };
    assert!(same(Some(sample.t_wall), Some(t_wall)), "t_wall {}", sample.t_wall);
    let t_mono_ns = object
        .get("t_mono_ns")
        .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)));
    assert_eq!(sample.t_mono_ns, t_mono_ns, "t_mono_ns");
    for (key, value) in [
        ("running", sample.running),
        ("waiting", sample.waiting),
        ("kv_usage", sample.kv_usage),
        ("preemptions", sample.preemptions),
        ("generation_tokens", sample.generation_tokens),
        ("prompt_tokens", sample.prompt_tokens),
        ("paused", sample.paused),
    ] {
        let expected = object.get(key).and_then(Value::as_f64);
        assert!(same(value, expected), "{key}: {value:?}, JSON says {expected:?}");
    }
});
