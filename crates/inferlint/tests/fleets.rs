//! A fleet folder and a side's repeats through the facade: what `report FLEET_DIR` and
//! `compare`/`sweep` read, for a harness that embeds the library.

use std::path::{Path, PathBuf};

use inferlint::{ErrorKind, Fleet, Outcome, Tripwire};
use inferlint_engines::fleet::{Manifest, MANIFEST};

fn fixtures(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name)
}

fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a folder for the copy");
    for entry in std::fs::read_dir(from).expect("the fixture folder lists") {
        let path = entry.expect("an entry").path();
        if let (true, Some(name)) = (path.is_file(), path.file_name()) {
            std::fs::copy(&path, to.join(name)).expect("the fixture copies");
        }
    }
}

/// Two replicas (two runs of the simulated sweep) under one `fleet.json`: each is checked
/// as its own run, T22 is the fleet's, and the fleet's outcome is the worst of them.
#[test]
fn a_fleet_folder_is_checked_replica_by_replica_and_as_a_fleet() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["a:8000".to_owned(), "b:8000".to_owned()];
    let manifest = Manifest::new(
        "watch".to_owned(),
        None,
        None,
        &names,
        &["a".to_owned(), "b".to_owned()],
    );
    for (replica, run) in manifest.replicas.iter().zip(["c04", "c08"]) {
        copy_folder(
            &fixtures("sweep").join(run),
            &dir.path().join(&replica.folder),
        );
    }
    std::fs::write(dir.path().join(MANIFEST), manifest.to_json()).unwrap();

    let fleet = Fleet::from_dir(dir.path()).unwrap();
    assert_eq!(fleet.source(), "watch");
    let shown: Vec<&str> = fleet.replicas().iter().map(|r| r.name()).collect();
    assert_eq!(shown, ["a:8000", "b:8000"]);
    assert!(fleet.grid().has_samples());
    assert!(fleet.grid().interval_s > 0.0);

    let mut seen = [0usize; 2];
    let report = fleet.check_seeing(|index, _| seen[index] += 1).unwrap();
    assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
    assert_eq!(report.balance().tripwire(), Tripwire::T22);
    assert_eq!(report.replicas().len(), 2);
    let worst = report
        .replicas()
        .iter()
        .map(inferlint::Report::outcome)
        .chain([Outcome::of(std::slice::from_ref(report.balance()), false)]);
    let rank = |o: Outcome| match o {
        Outcome::Passed => 0,
        Outcome::Undecided => 1,
        Outcome::TripwireFailed => 2,
        other => panic!("an outcome this test does not rank: {other:?}"),
    };
    assert_eq!(
        rank(report.outcome()),
        worst.map(rank).max().unwrap(),
        "the fleet's outcome is the worst of its replicas' and T22's"
    );
}

/// A folder without `fleet.json` is no fleet; a manifest naming no replica is refused.
#[test]
fn a_folder_without_a_manifest_is_no_fleet() {
    let error = Fleet::from_dir(fixtures("sim").join("vllm-hybrid")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoRun);
    let dir = tempfile::tempdir().unwrap();
    let empty = Manifest::new("watch".to_owned(), None, None, &[], &[]);
    std::fs::write(dir.path().join(MANIFEST), empty.to_json()).unwrap();
    let error = Fleet::from_dir(dir.path()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Invalid);
    assert!(error.to_string().ends_with("names no replica"), "{error}");
}

/// A folder of runs gives each, in name order; a run folder gives itself; a folder with
/// no run anywhere is refused.
#[test]
fn repeats_are_the_folder_itself_or_its_run_subfolders() {
    let sweep = fixtures("sweep");
    let runs = inferlint::repeats(&sweep).unwrap();
    let names: Vec<String> = runs
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["c04", "c08", "c16", "c32"]);
    assert_eq!(
        inferlint::repeats(sweep.join("c04")).unwrap(),
        [sweep.join("c04")]
    );
    let empty = tempfile::tempdir().unwrap();
    let error = inferlint::repeats(empty.path()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoRun);
    assert!(error.to_string().contains("or its subfolders"), "{error}");
    let error = inferlint::repeats(empty.path().join("none")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoRun);
}
