//! The demo run that ships in fixtures/demo (synthetic), checked as the README runs it.
//! It needs nothing outside the repository.

use serde_json::Value;

use crate::common::{fixtures, inferlint, json_results, no_panic, stdout};

fn status<'a>(results: &'a [Value], tripwire: &str) -> &'a str {
    results
        .iter()
        .find(|r| r["tripwire"] == tripwire)
        .and_then(|r| r["status"].as_str())
        .unwrap_or_else(|| panic!("no {tripwire}"))
}

#[test]
fn the_demo_run_catches_what_the_server_did_not_say() {
    let out = inferlint(&fixtures(), &["report", "demo", "--json"]);
    no_panic(&out);
    let results = json_results(&out);
    assert_eq!(status(&results, "T12"), "pass");
    assert_eq!(
        status(&results, "T5"),
        "pass",
        "16-token blocks are vLLM's default"
    );
    assert_eq!(status(&results, "T6"), "pass");
    assert_eq!(status(&results, "T15"), "pass", "client and server agree");
    assert_eq!(
        status(&results, "T1"),
        "fail",
        "the scheduler preempted silently"
    );
    assert_eq!(status(&results, "T10"), "pass");
    assert_eq!(
        status(&results, "T14"),
        "pass",
        "161 blocks reported, 160 usable"
    );
    assert_eq!(
        status(&results, "T9"),
        "warn",
        "the ceiling falls as answers grow"
    );
    assert_eq!(
        status(&results, "T8"),
        "fail",
        "fewer ran at once than were sent"
    );
    assert_eq!(out.status.code(), Some(1));
    let t14 = results.iter().find(|r| r["tripwire"] == "T14").unwrap();
    assert_eq!(t14["evidence"]["inferred_usable_blocks"], 160);
}

#[test]
fn the_demo_report_in_the_terminal() {
    let out = inferlint(&fixtures(), &["report", "demo"]);
    no_panic(&out);
    insta::assert_snapshot!("demo_report_terminal", stdout(&out));
}

/// The README shows the demo's output; it must be what the command prints.
#[test]
fn the_readme_shows_the_demo_as_it_is() {
    let out = inferlint(&fixtures(), &["report", "demo"]);
    let readme = std::fs::read_to_string(fixtures().join("../README.md")).unwrap();
    assert!(
        readme.contains(&stdout(&out)),
        "README.md's demo output is stale: paste the output of `inferlint report fixtures/demo`"
    );
}
