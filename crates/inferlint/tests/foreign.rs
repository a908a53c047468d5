//! Another run's data mixed into this run's files: only what lies inside the run counts.

use std::path::{Path, PathBuf};

use inferlint::{Run, Status, Tripwire};
use serde_json::Value;

fn real(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real/vllm-0.32-cpu")
        .join(name)
}

fn t8(dir: &Path) -> (Status, String, Vec<String>) {
    let run = Run::from_dir(dir).unwrap_or_else(|e| panic!("{e}"));
    let report = run.check();
    let t8 = report
        .results()
        .iter()
        .chain(report.not_checked())
        .find(|r| r.tripwire() == Tripwire::T8)
        .expect("the test's own setup");
    (t8.status(), t8.message().to_owned(), run.notes().to_vec())
}

/// The real healthy run (vllm bench serve at 8, the server running 8) with its
/// recording capped at 4 running, the rest waiting: T8 fails, the server never ran the 8 asked. Four
/// samples at 8 running appended after the after reading (a recorder left running into
/// the next load) and four put 60 s before the before reading (one started early, over
/// another load) are not this run's: T8 still fails on what the run's own samples show,
/// and a note counts the eight set aside. Where they were read, T8 passed.
#[test]
fn samples_outside_the_readings_decide_nothing() {
    let from = real("healthy-vllm-bench");
    let dir = tempfile::tempdir().expect("the test's own setup");
    for entry in std::fs::read_dir(&from).expect("the test's own setup") {
        let path = entry.expect("the test's own setup").path();
        std::fs::copy(
            &path,
            dir.path()
                .join(path.file_name().expect("the test's own setup")),
        )
        .expect("the test's own setup");
    }
    let series = dir.path().join("run.series.jsonl");
    let text = std::fs::read_to_string(&series).expect("the test's own setup");
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("the test's own setup"))
        .collect();
    // The requests over 4 wait instead of running: what a server capped at 4 shows, the
    // load's 8 all accounted for at the server (running or waiting).
    for line in lines.iter_mut().skip(1) {
        if let Some(r) = line["running"].as_f64().filter(|r| *r > 4.0) {
            let waiting = line["waiting"].as_f64().unwrap_or(0.0);
            line["running"] = Value::from(4.0);
            line["waiting"] = Value::from(waiting + r - 4.0);
        }
    }
    let write = |lines: &[Value]| {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&series, text).expect("the test's own setup");
    };
    write(&lines);
    let (capped, message, _) = t8(dir.path());
    assert_eq!(capped, Status::Fail, "{message}");

    let reading = |name: &str| -> (f64, i64) {
        let v: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(name)).expect("the test's own setup"),
        )
        .expect("the test's own setup");
        (
            v["t_wall"].as_f64().expect("the test's own setup"),
            v["t_mono_ns"].as_i64().expect("the test's own setup"),
        )
    };
    let (before_wall, before_mono) = reading("before.snapshot.json");
    let (after_wall, after_mono) = reading("after.snapshot.json");
    let last = lines.last().expect("the test's own setup").clone();
    let at = |wall: f64, mono: i64| {
        let mut sample = last.clone();
        sample["t_wall"] = Value::from(wall);
        sample["t_mono_ns"] = Value::from(mono);
        sample["running"] = Value::from(8.0);
        sample
    };
    let mut late = lines.clone();
    for i in 1..=4 {
        late.push(at(
            after_wall + f64::from(i),
            after_mono + i64::from(i) * 1_000_000_000,
        ));
    }
    write(&late);
    let (status, message, notes) = t8(dir.path());
    assert_eq!(status, Status::Fail, "{message}");
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("4 of the recording's samples lie outside the readings")),
        "{notes:?}"
    );

    let mut early = vec![lines[0].clone()];
    for i in 0..4 {
        early.push(at(
            before_wall - 60.0 + f64::from(i),
            before_mono - 60_000_000_000 + i64::from(i) * 1_000_000_000,
        ));
    }
    early.extend(lines.iter().skip(1).cloned());
    write(&early);
    let (status, message, notes) = t8(dir.path());
    assert_eq!(status, Status::Fail, "{message}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("4 taken before the before reading")),
        "{notes:?}"
    );
}

fn verdict(report: &inferlint::Report, t: Tripwire) -> (Status, String) {
    let r = report
        .results()
        .iter()
        .find(|r| r.tripwire() == t)
        .unwrap_or_else(|| panic!("no verdict for {t}"));
    (r.status(), r.message().to_owned())
}

/// A real vLLM server that served a second client beside the load (MADE.md): the load's
/// 96 requests of 32 + 32 tokens and 6 of `other-client.py`'s, 160 + 8 each (its
/// beside.log holds the usage the server answered each with), so the server's counters
/// hold 102 requests and 96 * 32 + 6 * 160 = 4,032 prompt tokens, 52.2 a request against
/// the 32 asked. One story: T15 fails naming the 6 and their lengths, read from the
/// server's spans of the requests no row of the load joined (their ids are the second
/// client's `X-Request-Id`s); T20 compares the load's own counts and does not blame a
/// chat template for the other client's prompts; the counters' other readers say the
/// traffic is in their figures.
#[test]
fn a_second_client_on_the_server_is_named_once_by_t15() {
    let run = Run::from_dir(real("other-traffic")).unwrap_or_else(|e| panic!("{e}"));
    let report = run.check();
    let (t15, m15) = verdict(&report, Tripwire::T15);
    assert_eq!(t15, Status::Fail, "{m15}");
    assert!(
        m15.contains("6 requests besides the load's, 160 prompt and 8 output tokens each on average (the server's records of them, ids like cmpl-other-client-"),
        "{m15}"
    );
    let (t20, m20) = verdict(&report, Tripwire::T20);
    assert_eq!(t20, Status::Pass, "{m20}");
    assert!(!m20.contains("chat template"), "{m20}");
    assert!(
        m20.contains("they include 6 requests of other traffic (T15)"),
        "{m20}"
    );
    for t in [Tripwire::T1, Tripwire::T10, Tripwire::T16, Tripwire::T18] {
        let (_, m) = verdict(&report, t);
        assert!(m.contains("6 requests of other traffic (T15)"), "{t}: {m}");
    }
}
