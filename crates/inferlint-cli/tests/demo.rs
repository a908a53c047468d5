//! The demo run (the simulated vLLM run `inferlint demo` writes, kept in fixtures/sim),
//! and the README's demo command. Neither needs anything outside the repository.

use crate::common::{demo_copy, inferlint, no_panic, stdout};

#[test]
fn the_demo_report_in_the_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    demo_copy(&tmp.path().join("demo"));
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
    let readme = std::fs::read_to_string(crate::common::fixtures().join("../README.md")).unwrap();
    assert!(
        readme.contains(&stdout(&out)),
        "README.md's demo output is stale: paste the output of `inferlint demo`"
    );
}
