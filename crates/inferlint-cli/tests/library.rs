//! The library facade (`inferlint::Run::from_dir`) against the command (`inferlint
//! report --json DIR`), on every run folder of the fixtures and of the recordings: the
//! same results in the same order, the same outcome as the exit status, and the same
//! refusal where the command refuses a folder.

use std::path::Path;

use crate::common::{fixtures, no_panic, recorded, report_json_junit, run_of, stderr, stdout};
use crate::common::{UNDECIDED, UNUSABLE_INPUT};
use crate::pipelines::walk;

/// Checks one folder both ways; returns whether the command refused it. The command's
/// side is `report --json` (with `--junit`, which writes a file and changes neither the
/// output nor the status: a change would show here as a difference from the library),
/// run once per folder for every test that holds it to something.
pub(crate) fn agree(dir: &Path) -> bool {
    let ran = report_json_junit(dir);
    let cli = &ran.output;
    no_panic(cli);
    let code = cli.status.code().unwrap();
    match &*run_of(dir) {
        Ok(run) => {
            let report = run.check();
            assert_eq!(
                report.to_json(),
                stdout(cli),
                "{}: the library's results differ from report --json",
                dir.display()
            );
            let expected = match report.outcome() {
                inferlint::Outcome::Passed => 0,
                inferlint::Outcome::TripwireFailed => 1,
                inferlint::Outcome::Undecided => 2,
                other => panic!("an outcome the command line has no status for: {other:?}"),
            };
            assert_eq!(code, expected, "{}: {}", dir.display(), stderr(cli));
            // Serialised, the report holds the same entries, verdicts then not checked.
            let value = serde_json::to_value(&report).unwrap();
            let listed = value["results"].as_array().unwrap().len()
                + value["not_checked"].as_array().unwrap().len();
            let printed: Vec<serde_json::Value> = serde_json::from_str(&stdout(cli)).unwrap();
            assert_eq!(listed, printed.len(), "{}", dir.display());
            false
        }
        Err(error) => {
            // Each refusal's status by the README's table: another engine's input and a
            // run that allows no check are 2, any other refusal of a run's files is an
            // input that cannot be used.
            let expected = match error.kind() {
                inferlint::ErrorKind::Engine | inferlint::ErrorKind::NothingChecked => UNDECIDED,
                _ => UNUSABLE_INPUT,
            };
            assert_eq!(
                code,
                expected,
                "{}: the library refused ({error}), the command did not",
                dir.display()
            );
            assert!(stdout(cli).is_empty(), "{}", dir.display());
            assert!(
                stderr(cli).contains(&error.to_string()),
                "{}: the library's refusal {:?} is not the command's:\n{}",
                dir.display(),
                error.to_string(),
                stderr(cli)
            );
            true
        }
    }
}

#[test]
fn the_library_reads_every_fixture_folder_as_report_does() {
    let runs = walk(&fixtures()).0;
    assert!(runs.len() > 30, "{runs:?}");
    for dir in &runs {
        agree(dir);
    }
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn the_library_reads_every_recording_as_report_does() {
    let recorded = recorded();
    let runs = walk(&recorded).0;
    assert!(!runs.is_empty());
    for dir in &runs {
        agree(dir);
    }
}

/// The command's refusals, folder by folder: no folder, no run file, files from two
/// engines, files that allow no check.
#[test]
fn the_library_refuses_what_report_refuses() {
    let scratch = tempfile::tempdir().unwrap();
    let missing = scratch.path().join("missing");
    assert!(agree(&missing));
    let empty = scratch.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert!(agree(&empty));
    let error = inferlint::Run::from_dir(&empty).unwrap_err();
    assert_eq!(error.kind(), inferlint::ErrorKind::NoRun);
    assert_eq!(error.path(), Some(empty.as_path()));

    // A vLLM boot log beside SGLang's recording.
    let mixed = scratch.path().join("mixed");
    std::fs::create_dir(&mixed).unwrap();
    let sim = fixtures().join("sim");
    std::fs::copy(sim.join("vllm-hybrid/boot.log"), mixed.join("boot.log")).unwrap();
    std::fs::copy(
        sim.join("sglang-capped/run.series.jsonl"),
        mixed.join("run.series.jsonl"),
    )
    .unwrap();
    assert!(agree(&mixed));
    let error = inferlint::Run::from_dir(&mixed).unwrap_err();
    assert_eq!(error.kind(), inferlint::ErrorKind::Engine, "{error}");

    // Only the before reading: no check can run.
    let before_only = scratch.path().join("before-only");
    std::fs::create_dir(&before_only).unwrap();
    std::fs::copy(
        sim.join("vllm-hybrid/before.snapshot.json"),
        before_only.join("before.snapshot.json"),
    )
    .unwrap();
    assert!(agree(&before_only));
    let error = inferlint::Run::from_dir(&before_only).unwrap_err();
    assert_eq!(
        error.kind(),
        inferlint::ErrorKind::NothingChecked,
        "{error}"
    );
}
