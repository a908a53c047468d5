//! Run folders through the facade: the engine named, notes, the serialised report.

use std::path::PathBuf;

use inferlint::{Engine, ErrorKind, Outcome, Run, Status, Tripwire};

fn sim(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sim")
        .join(name)
}

/// Naming another engine than the files' is refused, as `report --engine` refuses it.
#[test]
fn a_folder_of_another_engine_than_the_one_named_is_refused() {
    let error = Run::from_dir_as(sim("sglang-capped"), Engine::Vllm).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Engine);
    assert!(
        error
            .to_string()
            .starts_with("the engine named is vLLM, but "),
        "{error}"
    );
    let run = Run::from_dir_as(sim("sglang-capped"), Engine::Sglang).unwrap();
    assert_eq!(run.engine(), Engine::Sglang);
}

/// The report splits verdicts from the not-checked list and serialises both, with the
/// outcome and the insights.
#[test]
fn a_report_serialises_its_verdicts_not_checked_list_and_insights() {
    let report = Run::from_dir(sim("vllm-hybrid")).unwrap().check();
    assert!(report
        .results()
        .iter()
        .all(|r| r.status() != Status::NotChecked));
    assert!(report
        .not_checked()
        .iter()
        .all(|r| r.status() == Status::NotChecked));
    let t8 = report
        .results()
        .iter()
        .find(|r| r.tripwire() == Tripwire::T8)
        .unwrap();
    assert_eq!(t8.status(), Status::Fail);
    assert_eq!(t8.evidence_as::<u64>("requested"), Some(32));
    assert_eq!(t8.tripwire().to_string(), "T8");
    assert!(!report.insights().is_empty());
    assert_eq!(report.outcome(), Outcome::TripwireFailed);
    let value = serde_json::to_value(&report).unwrap();
    assert_eq!(value["outcome"], "tripwire_failed");
    let results = value["results"].as_array().unwrap();
    assert_eq!(results.len(), report.results().len());
    let t8 = results.iter().find(|r| r["tripwire"] == "T8").unwrap();
    assert_eq!(t8["status"], "fail");
    assert_eq!(t8["evidence"]["requested"], 32);
    assert!(value["insights"][0]["title"].is_string());
    assert!(report.to_text().contains("[ T8] TRIPWIRE-FAILED"));
}

/// Files that say nothing of their engine are read as vLLM's, with a note that says so.
#[test]
fn files_that_do_not_say_their_engine_leave_a_note() {
    let dir = tempfile::tempdir().unwrap();
    // Bare text with no engine's metric name at all.
    std::fs::write(dir.path().join("before.snapshot.json"), "some_metric 1\n").unwrap();
    std::fs::write(dir.path().join("after.snapshot.json"), "some_metric 2\n").unwrap();
    let run = Run::from_dir(dir.path()).unwrap();
    assert_eq!(run.engine(), Engine::Vllm);
    assert!(
        run.notes().iter().any(|n| n.contains("read as vLLM's")),
        "{:?}",
        run.notes()
    );
}

/// A `bench.json` cut short is no tool's file to the folder's search; the library reads
/// it all the same, so that the error names it, rather than checking the run as if the
/// load had left no result (T15 would then only say it needs one).
#[test]
fn a_truncated_result_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["before.snapshot.json", "after.snapshot.json", "boot.log"] {
        std::fs::copy(sim("vllm-hybrid").join(name), dir.path().join(name)).unwrap();
    }
    let whole = std::fs::read(sim("vllm-hybrid").join("bench.json")).unwrap();
    std::fs::write(dir.path().join("bench.json"), &whole[..whole.len() / 2]).unwrap();
    let error = Run::from_dir(dir.path()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Invalid, "{error}");
    assert_eq!(error.path(), Some(dir.path().join("bench.json").as_path()));
    assert!(error.to_string().contains("bench.json"), "{error}");
    // The whole file is read as the run's result.
    std::fs::write(dir.path().join("bench.json"), &whole).unwrap();
    let report = Run::from_dir(dir.path()).unwrap().check();
    assert!(report
        .results()
        .iter()
        .any(|r| r.tripwire() == Tripwire::T15));
}
