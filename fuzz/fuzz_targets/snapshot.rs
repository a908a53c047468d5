//! A snapshot file (our JSON or bare Prometheus text) through the snapshot reader. It must
//! never panic, and a snapshot it accepts survives a round trip: written with
//! `snapshot_json` and read again, it writes the same JSON.

#![no_main]

use std::path::Path;

use inferlint_engines::files::{parse_snapshot, snapshot_json};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("fuzz.snapshot.json");
    let Ok(snapshot) = parse_snapshot(text, path) else {
        return;
    };
    let written = snapshot_json(&snapshot);
    let again = match parse_snapshot(&written, path) {
        Ok(again) => again,
        Err(e) => panic!("a written snapshot does not read back: {e}\n{written}"),
    };
    assert_eq!(snapshot_json(&again), written);
    assert_eq!(again.text, snapshot.text);
});
