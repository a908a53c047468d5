//! Why requests waited at the server, from vLLM 0.32's waiting gauge split by reason, on
//! a real run.

use std::path::PathBuf;

use inferlint::{Run, Status, Tripwire};
use inferlint_engines::load;
use serde_json::Value;

fn real(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real/vllm-0.32-cpu")
        .join(name)
}

/// The most of each key over the recording's samples, read from the file itself, after
/// checking in each sample that the split sums to the waiting gauge, as vLLM documents
/// (`vllm:num_requests_waiting_by_reason`'s help text).
fn most_of(dir: &std::path::Path) -> impl Fn(&str) -> f64 {
    let text = std::fs::read_to_string(dir.join("run.series.jsonl")).expect("the test's own setup");
    let samples: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("the test's own setup"))
        .filter(|v| v.get("t_wall").is_some())
        .collect();
    let number = |v: &Value, key: &str| v[key].as_f64().expect("the recording has the split");
    for s in &samples {
        assert_eq!(
            number(s, "waiting_capacity") + number(s, "waiting_deferred"),
            number(s, "waiting"),
            "{s}"
        );
    }
    move |key: &str| samples.iter().map(|s| number(s, key)).fold(0.0, f64::max)
}

/// The real run of `waiting-for-room` (its MADE.md): vLLM 0.32 started with
/// `--max-num-seqs 2`, the load keeping 8 requests open. At most 2 run, so at most the
/// other 6 wait, and they wait for room in the batch (`capacity`): nothing defers a
/// request there (no KV connector, no LoRA, no streamed input), so none is `deferred`.
/// The recording carries the split in every sample, and vLLM documents its two reasons
/// as summing to the waiting gauge, which the file is read against first. T8 fails on
/// the running limit and says every waiting request waited for room; its advice names
/// the limit, not a KV transfer.
#[test]
fn t8_says_the_waiting_was_for_room_on_a_real_run() {
    let dir = real("waiting-for-room");
    let most = most_of(&dir);
    assert_eq!(
        (
            most("running"),
            most("waiting_capacity"),
            most("waiting_deferred")
        ),
        (2.0, 6.0, 0.0),
        "the run MADE.md describes"
    );

    let run = Run::from_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
    let report = run.check();
    let t8 = report
        .results()
        .iter()
        .find(|r| r.tripwire() == Tripwire::T8)
        .expect("T8 judged");
    assert_eq!(t8.status(), Status::Fail, "{}", t8.message());
    assert!(
        t8.message().ends_with(
            "; every request that waited at the server waited for room in the batch or the KV cache (at most 6 at once); none was deferred"
        ),
        "{}",
        t8.message()
    );
    assert_eq!(t8.evidence()["peak_waiting_capacity"], 6.0);
    assert_eq!(t8.evidence()["peak_waiting_deferred"], 0.0);
    assert_eq!(t8.evidence()["waiting_deferred_share"], 0.0);
    assert!(
        t8.advice()
            .iter()
            .any(|a| a.starts_with("the waiting requests waited for room")
                && a.contains("--max-num-seqs")),
        "{:?}",
        t8.advice()
    );
}

/// The real run of `waiting-deferred` (its MADE.md): 12 completions at once, each with a
/// JSON schema of its own, against `--max-num-seqs 1`. vLLM holds a request whose grammar
/// is still compiling in a blocked status, which its split counts as `deferred`; the
/// recording's samples (4, the run being short) saw 11 and then 4 waiting, all deferred,
/// none running. The load is a plain script with no result file, so the concurrency it
/// asked for (12) is given as `--requested` would give it. T8 fails (none of the 12 ran
/// in a sample) and says every waiting request was deferred, not held by the running
/// limit; its advice points away from the limit and the cache.
#[test]
fn t8_says_the_waiting_was_deferred_on_a_real_run() {
    let dir = real("waiting-deferred");
    let most = most_of(&dir);
    assert_eq!(
        (
            most("running"),
            most("waiting_capacity"),
            most("waiting_deferred")
        ),
        (0.0, 0.0, 11.0),
        "the run MADE.md describes"
    );
    // Read and checked by the one path `report --requested 12` takes.
    let files = load::find_run(&dir).unwrap_or_else(|e| panic!("{e}"));
    let known = load::Known {
        requested: Some(12),
        ..load::Known::default()
    };
    let (_, checked, _) = load::check_files(
        &mut load::EngineChoice::new(None),
        &files,
        &known,
        &inferlint_core::run::CheckOptions::default(),
        |_| None::<inferlint_core::judging::checks::series::SeriesStats>,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let t8 = checked
        .results
        .iter()
        .find(|r| r.tripwire() == Tripwire::T8)
        .expect("T8 judged");
    assert_eq!(t8.status(), Status::Fail, "{}", t8.message());
    assert!(
        t8.message().ends_with(
            "; every request that waited at the server was deferred (a KV transfer, a grammar still compiling or another transient block held them, not the running limit; at most 11 at once)"
        ),
        "{}",
        t8.message()
    );
    assert_eq!(t8.evidence()["peak_waiting_deferred"], 11.0);
    assert_eq!(t8.evidence()["waiting_deferred_share"], 1.0);
    assert!(
        t8.advice()[0]
            .starts_with("all of the waiting requests were deferred (at most 11 at once)"),
        "{:?}",
        t8.advice()
    );
    assert!(
        !t8.advice().iter().any(|a| a.contains("--max-num-seqs")),
        "{:?}",
        t8.advice()
    );
}
