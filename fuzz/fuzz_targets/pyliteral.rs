//! The Python literal reader (vLLM's `non-default args: {...}`, SGLang's `server_args`):
//! never a panic, never a stack overflow on deep nesting, and a dict it reads is a dict.

#![no_main]

use inferlint_engines::bootlog::pyliteral::{parse_dict, parse_value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let value = parse_value(text);
    if let Ok(entries) = parse_dict(text) {
        assert!(matches!(value, Ok(inferlint_core::model::PyValue::Dict(ref e)) if e.len() == entries.len()));
    }
    if let Err(e) = value {
        assert!(e.offset <= text.len());
    }
});
