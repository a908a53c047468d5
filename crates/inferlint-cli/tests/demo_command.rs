//! `inferlint demo`: from an empty folder, as a new user after `cargo install` runs it.
//! The run folder is made in-process, so nothing outside the binary is needed.

use serde_json::Value;

use crate::common::USAGE;
use crate::common::{inferlint, json_results, no_panic, stderr, stdout};

fn status<'a>(results: &'a [Value], tripwire: &str) -> &'a str {
    results
        .iter()
        .find(|r| r["tripwire"] == tripwire)
        .and_then(|r| r["status"].as_str())
        .unwrap_or_else(|| panic!("no {tripwire}"))
}

#[test]
fn demo_in_an_empty_folder_shows_the_traps() {
    let tmp = tempfile::tempdir().unwrap();
    let out = inferlint(tmp.path(), &["demo", "-o", "run", "--json"]);
    no_panic(&out);
    let results = json_results(&out);
    assert_eq!(status(&results, "T1"), "fail", "silent preemptions");
    assert_eq!(status(&results, "T9"), "warn", "the ceiling falls");
    assert_eq!(status(&results, "T8"), "fail", "fewer ran than were sent");
    assert_eq!(status(&results, "T14"), "pass");
    assert_eq!(status(&results, "T15"), "pass");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("simulated"), "{}", stderr(&out));
    for name in [
        "boot.log",
        "before.snapshot.json",
        "after.snapshot.json",
        "run.series.jsonl",
        "bench.json",
        "load.log",
    ] {
        assert!(tmp.path().join("run").join(name).is_file(), "{name}");
    }
}

#[test]
fn demo_writes_to_inferlint_demo_by_default_and_may_run_again() {
    let tmp = tempfile::tempdir().unwrap();
    let first = inferlint(tmp.path(), &["demo"]);
    no_panic(&first);
    let text = stdout(&first);
    assert!(text.contains("[ T1] TRIPWIRE-FAILED"), "{text}");
    assert!(text.contains("[ T9] WARN"), "{text}");
    assert!(text.contains("[ T8] TRIPWIRE-FAILED"), "{text}");
    assert!(tmp.path().join("inferlint-demo/boot.log").is_file());
    let again = inferlint(tmp.path(), &["demo"]);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
}

#[test]
fn demo_refuses_a_folder_holding_something_else() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "mine").unwrap();
    let out = inferlint(tmp.path(), &["demo", "-o", "."]);
    no_panic(&out);
    assert_eq!(out.status.code(), Some(USAGE));
    assert!(stderr(&out).contains("not empty"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("notes.txt")).unwrap(),
        "mine"
    );
}
