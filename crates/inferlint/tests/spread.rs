//! How a run's preemptions fell on its requests, from vLLM's own per-request histogram,
//! against what the engine said of each request as it finished.

use std::path::PathBuf;

use inferlint::{Run, Status, Tripwire};
use serde_json::Value;

fn real(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real/vllm-0.32-cpu")
        .join(name)
}

fn wall_of(file: &std::path::Path) -> f64 {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(file).expect("the test's own setup"))
            .expect("the test's own setup");
    v["t_wall"].as_f64().expect("the test's own setup")
}

/// The real run whose KV cache was too small, recorded with the step plugin: its
/// `steps.jsonl` holds each request's preemptions as the engine reported them when it
/// finished (`fin` lines, `pre`), independent of the Prometheus histogram T1 reads. Over
/// the requests that finished between the two readings, T1's split (how many requests
/// were preempted once, twice, ...) is theirs.
#[test]
fn t1_says_how_the_preemptions_fell_on_the_requests() {
    let dir = real("steps-preempting");
    let (from, to) = (
        wall_of(&dir.join("before.snapshot.json")),
        wall_of(&dir.join("after.snapshot.json")),
    );
    let text = std::fs::read_to_string(dir.join("steps.jsonl")).expect("the test's own setup");
    let mut lines = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("the test's own setup"));
    let header = lines.next().expect("the test's own setup");
    let t0 = header["t_wall"].as_f64().expect("the test's own setup");
    let mut by_times: std::collections::BTreeMap<u64, f64> = Default::default();
    let mut finished = 0.0;
    for line in lines.filter(|l| l.get("fin").is_some()) {
        let at = t0 + line["t"].as_f64().expect("the test's own setup");
        if (from..=to).contains(&at) {
            finished += 1.0;
            let pre = line["pre"].as_u64().expect("the test's own setup");
            if pre > 0 {
                *by_times.entry(pre).or_default() += 1.0;
            }
        }
    }
    assert!(!by_times.is_empty(), "the run preempted (MADE.md)");
    let run = Run::from_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
    let report = run.check();
    let t1 = report
        .results()
        .iter()
        .find(|r| r.tripwire() == Tripwire::T1)
        .expect("the test's own setup");
    assert_eq!(t1.status(), Status::Fail, "{}", t1.message());
    assert_eq!(t1.evidence()["finished_requests_histogram"], finished);
    let said: std::collections::BTreeMap<u64, f64> = t1.evidence()["preempted_times"]
        .as_array()
        .expect("the test's own setup")
        .iter()
        .map(|e| {
            (
                e["times"].as_u64().expect("the test's own setup"),
                e["requests"].as_f64().expect("the test's own setup"),
            )
        })
        .collect();
    assert_eq!(said, by_times, "{}", t1.message());
    let preempted: f64 = by_times.values().sum();
    assert!(
        t1.message().contains(&format!(
            "over {preempted} of the {finished} requests that finished"
        )),
        "{}",
        t1.message()
    );
}
