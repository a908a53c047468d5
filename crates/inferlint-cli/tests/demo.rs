//! The demo run (the simulated vLLM run `inferlint demo` writes, kept in fixtures/sim),
//! and the README's demo command. Neither needs anything outside the repository.

use crate::common::{demo_copy, inferlint, no_panic, stdout};

/// `report` on the demo's folder prints what `demo` printed when it wrote that folder (the
/// README's block, held by the test below), but for where the page went: `demo` checks
/// the run it writes as `report` would.
#[test]
fn report_on_the_demo_folder_prints_what_demo_printed() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = inferlint(tmp.path(), &["demo"]);
    no_panic(&demo);
    let copy = tempfile::tempdir().unwrap();
    demo_copy(&copy.path().join("demo"));
    let report = inferlint(copy.path(), &["report", "demo"]);
    no_panic(&report);
    assert_eq!(report.status.code(), demo.status.code());
    let (demo_text, report_text) = (stdout(&demo), stdout(&report));
    assert_eq!(
        report_text.replace("-> demo/report.html", "-> inferlint-demo/report.html"),
        demo_text
    );
    assert!(
        report_text.ends_with(" -> demo/report.html\n"),
        "{report_text}"
    );
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
