//! The load tool's console log, read for the requests it sent outside its timed run (a
//! test request, warm-ups): never a panic, whatever counts the lines claim.

#![no_main]

use inferlint_engines::files::untimed_requests;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = untimed_requests(&text);
});
