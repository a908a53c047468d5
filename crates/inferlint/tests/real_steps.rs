//! Each engine step recorded inside the real vLLM 0.32 CPU build by the step plugin
//! (`integrations/vllm`, `scripts/real-vllm/steps.sh`), judged through the library. The
//! expected values are read from the step files by the rule T29 states (docs/steps.md),
//! never from what inferlint printed.

use std::path::PathBuf;

use inferlint::{Run, Status, Tripwire};

fn real(case: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real/vllm-0.32-cpu")
        .join(case)
}

fn t29(case: &str) -> inferlint::CheckResult {
    let run = Run::from_dir(real(case)).unwrap_or_else(|e| panic!("{case}: {e}"));
    let report = run.check();
    report
        .results()
        .iter()
        .find(|r| r.tripwire() == Tripwire::T29)
        .cloned()
        .unwrap_or_else(|| panic!("{case}: no T29"))
}

/// 12 requests, each with a JSON schema of its own, against `--max-num-seqs 1`: the
/// scheduler defers each while its grammar compiles, stepping with none running.
///
/// With 150 properties a schema (`steps-stall`) the longest run of steps that held
/// requests waiting or deferred and admitted or generated nothing (`gen`, `prompt`, `pt`
/// and `dt` all 0) lasts 0.10 s: every grammar compiled within T29's threshold, the larger
/// of 2 s and 20 times the slowest 1% of steps (22 ms, so 2 s). T29 passes.
///
/// With 1,500 (`steps-stall-long`) one such run lasts 2.19 s, from 12.68 s into the file,
/// 3 requests deferred at most, over a threshold of 2 s (the slowest 1% of steps took
/// 46 ms: 20 times that is 0.9 s). T29 fails on that one stretch, while `/health`
/// answered (xray's probe found the server ready before and after).
#[test]
fn a_scheduler_that_admits_nothing_for_seconds_fails_t29() {
    let short = t29("steps-stall");
    assert_eq!(short.status(), Status::Pass, "{}", short.message());

    let long = t29("steps-stall-long");
    assert_eq!(long.status(), Status::Fail, "{}", long.message());
    assert_eq!(long.evidence_f64("stalls"), Some(1.0), "{}", long.message());
    let seconds = long.evidence_f64("longest_stall_s").unwrap();
    assert!(
        (2.1..2.3).contains(&seconds),
        "{seconds}: {}",
        long.message()
    );
    assert_eq!(
        long.evidence_f64("deferred"),
        Some(3.0),
        "{}",
        long.message()
    );
    assert_eq!(long.evidence_f64("threshold_s"), Some(2.0));
}
