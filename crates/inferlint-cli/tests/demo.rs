//! The demo run that ships in fixtures/demo (synthetic), and the README's demo command.
//! Neither needs anything outside the repository.

use serde_json::Value;

use crate::common::{copy_tree, fixtures, inferlint, json_results, no_panic, stdout};

fn status<'a>(results: &'a [Value], tripwire: &str) -> &'a str {
    results
        .iter()
        .find(|r| r["tripwire"] == tripwire)
        .and_then(|r| r["status"].as_str())
        .unwrap_or_else(|| panic!("no {tripwire}"))
}

/// A copy of fixtures/demo in a temporary folder: `report` writes report.html into the
/// run folder, and the repository's files stay as they are.
fn demo_copy() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&fixtures().join("demo"), &tmp.path().join("demo"));
    tmp
}

#[test]
fn the_demo_run_catches_what_the_server_did_not_say() {
    let tmp = demo_copy();
    let out = inferlint(tmp.path(), &["report", "demo", "--json"]);
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
    let tmp = demo_copy();
    let out = inferlint(tmp.path(), &["report", "demo"]);
    no_panic(&out);
    insta::assert_snapshot!("demo_report_terminal", stdout(&out));
}

/// The README shows the output of its first command; it must be what the command prints.
#[test]
fn the_readme_shows_the_demo_as_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let out = inferlint(tmp.path(), &["demo"]);
    no_panic(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the demo's tripwires fail on purpose"
    );
    let readme = std::fs::read_to_string(fixtures().join("../README.md")).unwrap();
    assert!(
        readme.contains(&stdout(&out)),
        "README.md's demo output is stale: paste the output of `inferlint demo`"
    );
}
