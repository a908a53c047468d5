//! Arbitrary text as a vLLM boot log. The parser must never panic and never point outside
//! the log: see `common/bootlog.rs` for what every parse must hold.

#![no_main]

use inferlint_core::Engine;
use libfuzzer_sys::fuzz_target;

#[path = "common/bootlog.rs"]
mod bootlog;

fuzz_target!(|data: &[u8]| {
    bootlog::check(data, Some(Engine::Vllm));
});
