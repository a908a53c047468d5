//! A fleet folder and a side's repeats through the facade: what `report FLEET_DIR` and
//! `compare`/`sweep` read, for a harness that embeds the library.

use std::path::{Path, PathBuf};

use inferlint::{ErrorKind, Fleet, FleetReader, Outcome, Tripwire};
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

/// Two replicas (two runs of the simulated sweep, c04 and c08) under one `fleet.json`.
fn two_replicas() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
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
    std::fs::write(dir.path().join(MANIFEST), manifest.to_json()).expect("written");

    dir
}

/// Two replicas (two runs of the simulated sweep) under one `fleet.json`: each is checked
/// as its own run, T22 is the fleet's, and the fleet's outcome is the worst of them.
#[test]
fn a_fleet_folder_is_checked_replica_by_replica_and_as_a_fleet() {
    let dir = two_replicas();
    let fleet = Fleet::from_dir(dir.path()).unwrap();
    assert_eq!(fleet.source(), "watch");
    let shown: Vec<&str> = fleet.replicas().iter().map(|r| r.name()).collect();
    assert_eq!(shown, ["a:8000", "b:8000"]);
    assert!(fleet.grid().has_samples());
    assert!(fleet.grid().interval_s > 0.0);

    let report = fleet.check().unwrap();
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

/// Read one replica at a time, the fleet gives what it gives read whole: each replica
/// in the manifest's order with the same report, and the same T22 from the same
/// samples. `finish` reads and checks the replicas not yet read.
#[test]
fn a_fleet_read_one_replica_at_a_time_is_checked_as_one_read_whole() {
    let dir = two_replicas();
    let whole = Fleet::from_dir(dir.path()).expect("read whole");
    let expected = whole.check().expect("checked");
    let outcomes = |r: &inferlint::FleetReport| -> Vec<Outcome> {
        r.replicas()
            .iter()
            .map(inferlint::Report::outcome)
            .collect()
    };
    let statuses = |r: &inferlint::Report| -> Vec<(Tripwire, inferlint::Status)> {
        r.all().iter().map(|c| (c.tripwire(), c.status())).collect()
    };

    let mut reader = FleetReader::from_dir(dir.path()).expect("opened");
    assert_eq!(reader.len(), 2);
    assert_eq!(reader.source(), "watch");
    let names: Vec<(&str, &str)> = reader.names().collect();
    assert_eq!(names, [("a:8000", "a"), ("b:8000", "b")]);
    // Every replica's files are found before any run is read.
    assert_eq!(reader.inputs().len(), whole.inputs().len());
    let (first, report) = reader.next_replica().expect("read").expect("a first");
    assert_eq!(first.name(), "a:8000");
    assert_eq!(statuses(report), statuses(&expected.replicas()[0]));
    drop(first);
    let checked = reader
        .finish()
        .expect("the second read and the fleet checked");
    assert_eq!(outcomes(&checked), outcomes(&expected));
    for (got, want) in checked.replicas().iter().zip(expected.replicas()) {
        assert_eq!(statuses(got), statuses(want));
    }
    assert_eq!(checked.balance().status(), expected.balance().status());
    assert_eq!(checked.balance().message(), expected.balance().message());

    let mut reader = FleetReader::from_dir(dir.path()).expect("opened");
    let mut read = Vec::new();
    while let Some((replica, _)) = reader.next_replica().expect("read") {
        read.push(replica.name().to_owned());
    }
    assert_eq!(read, ["a:8000", "b:8000"]);
    assert_eq!(reader.grid(), *whole.grid());
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
    let error = FleetReader::from_dir(dir.path()).expect_err("no replica");
    assert_eq!(error.kind(), ErrorKind::Invalid);
    let error = FleetReader::from_dir(fixtures("sim").join("vllm-hybrid")).expect_err("no fleet");
    assert_eq!(error.kind(), ErrorKind::NoRun);
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

/// The recorded fleet-one-idle fleet (two vLLM 0.32 servers): the whole load, 32
/// requests, went to the first replica, which queued; its counter says 32 finished, the
/// second's 0. The recorders read the second in only one of the first's five queued
/// moments, too few to compare; the counters say the load went to one replica while the
/// other had room. Both readers judge it so.
#[test]
fn a_fleet_whose_recordings_are_thin_is_judged_by_its_finished_counters() {
    let dir = fixtures("real/vllm-0.32-cpu/fleet-one-idle");
    let fleet = Fleet::from_dir(&dir).unwrap().check().unwrap();
    let read = FleetReader::from_dir(&dir).unwrap().finish().unwrap();
    for report in [&fleet, &read] {
        let t22 = report.balance();
        assert_eq!(t22.status(), inferlint::Status::Fail, "{}", t22.message());
        assert_eq!(t22.evidence_as::<f64>("busy_finished"), Some(32.0));
        assert_eq!(
            t22.evidence_as::<String>("idle_replica").as_deref(),
            Some("http://127.0.0.1:48489")
        );
    }
}

/// A replica whose recording file holds two recordings (a second header, and another
/// run's samples after it) is refused for T22 as for its own checks: T22 says what it
/// says with that replica's recording missing, never what the mix of two recordings
/// shows.
#[test]
fn a_replica_file_of_two_recordings_is_refused_for_t22_too() {
    let balance = |dir: &Path| {
        let report = Fleet::from_dir(dir)
            .expect("the test's own setup")
            .check()
            .expect("the test's own setup");
        (
            report.balance().status(),
            report.balance().message().to_owned(),
        )
    };
    let mixed = two_replicas();
    let series_b = mixed.path().join("b").join("run.series.jsonl");
    let other = std::fs::read_to_string(mixed.path().join("a").join("run.series.jsonl"))
        .expect("the test's own setup");
    let mut text = std::fs::read_to_string(&series_b).expect("the test's own setup");
    text.push_str(&other);
    std::fs::write(&series_b, text).expect("the test's own setup");
    let without = two_replicas();
    std::fs::remove_file(without.path().join("b").join("run.series.jsonl"))
        .expect("the test's own setup");
    assert_eq!(balance(mixed.path()), balance(without.path()));
    // And read one replica at a time, the same.
    let reader = FleetReader::from_dir(mixed.path()).expect("the test's own setup");
    let report = reader.finish().expect("the test's own setup");
    assert_eq!(
        (
            report.balance().status(),
            report.balance().message().to_owned()
        ),
        balance(without.path())
    );
}
