//! Arbitrary text as a boot log of no named engine, seeded with failed boots: the failure
//! classifier (which runs on every log) must never panic, and the failure it names must
//! point at a line of the log, with its text and cause cut to their stated lengths.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common/bootlog.rs"]
mod bootlog;

fuzz_target!(|data: &[u8]| {
    bootlog::check(data, None);
});
