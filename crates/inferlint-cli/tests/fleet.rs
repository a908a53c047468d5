//! Fleets: `report --prometheus` against a stand-in Prometheus
//! (`inferlint_sim::prometheus`), `watch URL URL …` against simulated servers, and
//! `report DIR` of the fleet folders they write. Everything on 127.0.0.1; every server is
//! stopped when its handle drops.

use std::path::Path;

use inferlint_core::Engine;
use inferlint_sim::prometheus::{self as fake, FleetHistory};
use inferlint_sim::server::{self, ServerConfig};
use serde_json::Value;

use crate::common::{inferlint, json_results, no_panic, stderr, stdout};
use crate::common::{UNUSABLE_INPUT, USAGE};

const START_MS: i64 = 1_764_547_200_000;

fn window(steps: i64, interval_ms: i64) -> (String, String) {
    (
        (START_MS / 1000).to_string(),
        ((START_MS + (steps - 1) * interval_ms) / 1000).to_string(),
    )
}

/// `report --prometheus URL --start START --end END EXTRA…` in `dir`.
fn from_prometheus(
    dir: &Path,
    url: &str,
    start: &str,
    end: &str,
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec![
        "report",
        "--prometheus",
        url,
        "--start",
        start,
        "--end",
        end,
    ];
    args.extend_from_slice(extra);
    inferlint(dir, &args)
}

fn verdict<'a>(results: &'a [Value], tripwire: &str, replica: Option<&str>) -> &'a Value {
    results
        .iter()
        .find(|r| {
            r["tripwire"] == tripwire
                && r["evidence"].get("replica").and_then(Value::as_str) == replica
        })
        .unwrap_or_else(|| panic!("no {tripwire} for {replica:?} in {results:?}"))
}

/// One replica preempting and queueing while the others idle fails T22 (and that
/// replica's T1); the pages are written, the fleet's linking each replica's.
#[test]
fn a_fleet_with_one_replica_preempting_while_another_idles_fails_t22() {
    let mut history = FleetHistory::new(3, START_MS, 1000, 300);
    history.imbalanced = true;
    let prometheus = fake::spawn(history, 0).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (start, end) = window(300, 1000);
    let out = from_prometheus(
        dir.path(),
        &prometheus.base_url,
        &start,
        &end,
        &["--selector", "{job=\"vllm\"}", "-o", "fleet.html", "--json"],
    );
    no_panic(&out);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let results = json_results(&out);
    let t22 = verdict(&results, "T22", None);
    assert_eq!(t22["status"], "fail", "{t22}");
    assert_eq!(t22["evidence"]["busy_replica"], "replica-0:8000");
    assert_eq!(
        verdict(&results, "T1", Some("replica-0:8000"))["status"],
        "fail"
    );
    assert_eq!(
        verdict(&results, "T1", Some("replica-1:8000"))["status"],
        "pass"
    );
    let page = std::fs::read_to_string(dir.path().join("fleet.html")).unwrap();
    assert!(
        page.contains("href=\"fleet-replica-0_8000.html\""),
        "the row links the replica's own report"
    );
    assert!(dir.path().join("fleet-replica-2_8000.html").is_file());
    assert!(!page.contains("<script"));
    assert!(
        stderr(&out).contains("1 range query at a 1 s step, at most 300 points a series each"),
        "{}",
        stderr(&out)
    );
}

/// A balanced fleet passes T22; --save keeps the fleet folder, which `report DIR` reads
/// again to the same verdicts.
#[test]
fn a_balanced_fleet_passes_and_a_saved_folder_reports_the_same() {
    let prometheus = fake::spawn(FleetHistory::new(2, START_MS, 500, 200), 0).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (start, end) = window(200, 500);
    let from_prometheus = from_prometheus(
        dir.path(),
        &prometheus.base_url,
        &start,
        &end,
        &["--save", "saved", "--json"],
    );
    no_panic(&from_prometheus);
    let first = json_results(&from_prometheus);
    assert_eq!(verdict(&first, "T22", None)["status"], "pass");
    assert!(dir.path().join("saved/report.html").is_file());
    assert!(dir
        .path()
        .join("saved/replica-1_8000/report.html")
        .is_file());
    let again = inferlint(dir.path(), &["report", "saved", "--json"]);
    no_panic(&again);
    let second = json_results(&again);
    let statuses = |r: &[Value]| -> Vec<(String, String)> {
        r.iter()
            .map(|v| (v["tripwire"].to_string(), v["status"].to_string()))
            .collect()
    };
    assert_eq!(statuses(&first), statuses(&second));
    assert_eq!(from_prometheus.status.code(), again.status.code());
}

/// Down or refusing: one line on stderr, exit 65 (a server that cannot be read is an input
/// that cannot be used); wrongly asked: exit 64 (the command line); no panic.
#[test]
fn a_prometheus_down_or_refusing_is_one_line_and_exit_65() {
    let dir = tempfile::tempdir().unwrap();
    let port = crate::common::free_port();
    let down = format!("http://127.0.0.1:{port}");
    let out = from_prometheus(dir.path(), &down, "1764547200", "2025-12-01T01:00:00Z", &[]);
    no_panic(&out);
    assert_eq!(out.status.code(), Some(UNUSABLE_INPUT));
    assert_eq!(
        stderr(&out),
        format!(
            "inferlint: cannot read from the Prometheus server at {down}: connection refused\n"
        )
    );
    let mut refusing = FleetHistory::new(2, START_MS, 1000, 10);
    refusing.refuse = Some("invalid parameter \"query\": parse error".into());
    let prometheus = fake::spawn(refusing, 0).unwrap();
    let out = from_prometheus(
        dir.path(),
        &prometheus.base_url,
        "1764547200",
        "1764547209",
        &[],
    );
    assert_eq!(out.status.code(), Some(UNUSABLE_INPUT));
    assert!(
        stderr(&out).contains("refused the query (bad_data)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    for (start, end, says) in [
        (
            "yesterday",
            "1764547209",
            "--start: 'yesterday' is neither Unix seconds nor an RFC 3339 time",
        ),
        ("1764547209", "1764547200", "must come after --start"),
    ] {
        let out = from_prometheus(dir.path(), &prometheus.base_url, start, end, &[]);
        assert_eq!(out.status.code(), Some(USAGE));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
    let out = inferlint(
        dir.path(),
        &[
            "report",
            "--prometheus",
            &prometheus.base_url,
            "--start",
            "1",
        ],
    );
    assert_eq!(out.status.code(), Some(USAGE), "--end is required");
}

/// One replica is no fleet: T22 cannot tell, and says why.
#[test]
fn one_replica_cannot_tell_t22() {
    let prometheus = fake::spawn(FleetHistory::new(1, START_MS, 1000, 60), 0).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (start, end) = window(60, 1000);
    let out = from_prometheus(dir.path(), &prometheus.base_url, &start, &end, &[]);
    no_panic(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stdout(&out).contains("[T22] ????  one replica only: nothing to compare its load with"),
        "{}",
        stdout(&out)
    );
}

fn sims(n: usize) -> Vec<server::ServerHandle> {
    (0..n)
        .map(|_| server::spawn(ServerConfig::new(Engine::Vllm)).unwrap())
        .collect()
}

/// `watch` of three servers writes a fleet folder (a series per replica and the sum, on
/// one schedule) that `report DIR` checks replica by replica and as a fleet.
#[test]
fn watch_records_a_fleet_that_report_checks() {
    let servers = sims(3);
    let dir = tempfile::tempdir().unwrap();
    let targets = dir.path().join("targets.txt");
    std::fs::write(
        &targets,
        format!(
            "# the fleet\n{}\n{}\n\n{}\n",
            servers[0].base_url, servers[1].base_url, servers[2].base_url
        ),
    )
    .unwrap();
    let out = inferlint(
        dir.path(),
        &[
            "watch",
            "--targets",
            "targets.txt",
            "-o",
            "fleet",
            "--interval",
            "0.1",
            "--duration",
            "1.5",
        ],
    );
    no_panic(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("3 replicas, "), "{}", stdout(&out));
    let fleet = dir.path().join("fleet");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(fleet.join("fleet.json")).unwrap()).unwrap();
    let replicas = manifest["replicas"].as_array().unwrap();
    assert_eq!(replicas.len(), 3);
    let times = |folder: &Path| -> Vec<i64> {
        let mut t = Vec::new();
        inferlint_engines::files::read_series(&folder.join("run.series.jsonl"), |s| {
            t.push(s.t_mono_ns.unwrap());
        })
        .unwrap();
        t
    };
    // One schedule: the replicas' n-th samples were taken within a slot of each other.
    let first = times(&fleet.join(replicas[0]["folder"].as_str().unwrap()));
    let second = times(&fleet.join(replicas[1]["folder"].as_str().unwrap()));
    assert!(first.len() >= 10, "{}", first.len());
    for (a, b) in first.iter().zip(&second).skip(1) {
        assert!((a - b).abs() < 50_000_000, "{a} and {b} are not one slot");
    }
    let sum = std::fs::read_to_string(fleet.join("fleet.series.jsonl")).unwrap();
    assert!(sum.lines().count() >= 10);
    let report = inferlint(dir.path(), &["report", "fleet"]);
    no_panic(&report);
    let text = stdout(&report);
    for r in replicas {
        assert!(
            text.contains(&format!("== replica {}", r["name"].as_str().unwrap())),
            "{text}"
        );
    }
    assert!(text.contains("== the fleet: 3 replicas\n[T22] "), "{text}");
    assert!(fleet.join("report.html").is_file());
    // A file named beside a fleet folder belongs to no replica: refused, with the way.
    let named = inferlint(dir.path(), &["report", "fleet", "--before", "targets.txt"]);
    assert_eq!(named.status.code(), Some(USAGE));
    assert!(
        stderr(&named).contains("--before belongs to one replica"),
        "{}",
        stderr(&named)
    );
    // A folder that holds files is refused before any server is asked.
    let again = inferlint(
        dir.path(),
        &[
            "watch",
            &servers[0].base_url,
            &servers[1].base_url,
            "-o",
            "fleet",
        ],
    );
    assert_eq!(again.status.code(), Some(USAGE));
    assert!(stderr(&again).contains("holds files"), "{}", stderr(&again));
    drop(servers);
}

/// A replica whose counters went back to zero inside the window restarted: its counter
/// checks are not a pass (the rate over a restart means nothing), and a note says when.
#[test]
fn a_counter_reset_inside_the_window_is_a_restart_not_a_pass() {
    let mut history = FleetHistory::new(2, START_MS, 1000, 300);
    history.restart = Some((1, 100));
    let prometheus = fake::spawn(history, 0).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (start, end) = window(300, 1000);
    let out = from_prometheus(dir.path(), &prometheus.base_url, &start, &end, &["--json"]);
    no_panic(&out);
    assert!(
        stderr(&out)
            .contains("note: replica replica-1:8000 restarted: generation_tokens went down"),
        "{}",
        stderr(&out)
    );
    let results = json_results(&out);
    let rate = verdict(&results, "T10", Some("replica-1:8000"));
    assert_eq!(rate["status"], "unknown", "{rate}");
    assert_eq!(
        verdict(&results, "T10", Some("replica-0:8000"))["status"],
        "pass"
    );
}

/// A fleet's recording judges nothing while it runs: the flags of one server's live
/// verdicts are refused with several URLs, before a server is asked or a folder made,
/// rather than left unused.
#[test]
fn a_fleet_refuses_the_flags_of_one_servers_live_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    for flag in [
        &["--requested", "8"][..],
        &["--boot-log", "boot.log"],
        &["--json-events", "events.jsonl"],
        &["--expect-cache-hits"],
    ] {
        let mut args = vec![
            "watch",
            "http://127.0.0.1:9",
            "http://127.0.0.1:10",
            "-o",
            "fleet",
        ];
        args.extend_from_slice(flag);
        let out = inferlint(dir.path(), &args);
        no_panic(&out);
        assert_eq!(out.status.code(), Some(USAGE), "{flag:?}");
        assert_eq!(
            stderr(&out),
            format!(
                "inferlint: {} is for one server's live verdicts: a fleet's recording is judged by report of its folder\n",
                flag[0]
            )
        );
        assert!(!dir.path().join("fleet").exists());
        assert!(!dir.path().join("events.jsonl").exists());
    }
}

/// A fleet of `replicas` read from the stand-in (40 samples at 500 ms) and saved as
/// `saved` in a new folder: the server (still up), the folder and the window asked.
fn saved_fleet(replicas: usize) -> (fake::PromHandle, tempfile::TempDir, (String, String)) {
    let prometheus = fake::spawn(FleetHistory::new(replicas, START_MS, 500, 40), 0)
        .expect("the stand-in and a folder");
    let dir = tempfile::tempdir().expect("the stand-in and a folder");
    let (start, end) = window(40, 500);
    let saved = from_prometheus(
        dir.path(),
        &prometheus.base_url,
        &start,
        &end,
        &["--save", "saved"],
    );
    no_panic(&saved);
    (prometheus, dir, (start, end))
}

/// A fleet page refused (`-o` names a file that is not an earlier report) is refused
/// before any replica's page is written: nothing is left half-written, and the file
/// stays as it was.
#[test]
fn a_refused_fleet_page_leaves_no_replica_page_written() {
    let (prometheus, dir, (start, end)) = saved_fleet(2);
    std::fs::write(dir.path().join("notes.html"), "my notes").unwrap();
    let out = inferlint(dir.path(), &["report", "saved", "-o", "notes.html"]);
    no_panic(&out);
    assert_eq!(out.status.code(), Some(USAGE), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.html")).unwrap(),
        "my notes"
    );
    let pages: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("notes-"))
        .collect();
    assert!(pages.is_empty(), "replica pages written: {pages:?}");
    // Read from Prometheus, the same refusal comes before a --save folder is made.
    let out = from_prometheus(
        dir.path(),
        &prometheus.base_url,
        &start,
        &end,
        &["--save", "again", "-o", "notes.html"],
    );
    assert_eq!(out.status.code(), Some(USAGE), "{}", stderr(&out));
    assert!(!dir.path().join("again").exists());
    // With --force, every page is written.
    let forced = inferlint(
        dir.path(),
        &["report", "saved", "-o", "notes.html", "--force"],
    );
    no_panic(&forced);
    assert_ne!(
        std::fs::read_to_string(dir.path().join("notes.html")).unwrap(),
        "my notes"
    );
    assert!(dir.path().join("notes-replica-1_8000.html").is_file());
}

/// The replicas are read one at a time, each page made as its replica is read: a
/// replica whose files are refused, read after the others, still leaves no page at all,
/// neither the others' nor the fleet's, and no temporary file beside any of them.
#[test]
fn a_replica_refused_after_the_others_leaves_no_page_written() {
    let (_prometheus, dir, _) = saved_fleet(3);
    let fleet = dir.path().join("saved");
    // Only the files the fleet was read from are kept: the pages --save wrote go.
    let pages_in = |folder: &Path| -> Vec<String> {
        std::fs::read_dir(folder)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.contains("html") || n.ends_with(".tmp"))
            .collect()
    };
    let replicas = ["replica-0_8000", "replica-1_8000", "replica-2_8000"];
    std::fs::remove_file(fleet.join("report.html")).unwrap();
    for replica in replicas {
        std::fs::remove_file(fleet.join(replica).join("report.html")).unwrap();
    }
    // The last replica's after snapshot cut off mid-way: that run cannot be read.
    let after = fleet.join("replica-2_8000/after.snapshot.json");
    let text = std::fs::read_to_string(&after).unwrap();
    std::fs::write(&after, &text[..text.len() / 2]).unwrap();

    for extra in [&[][..], &["-o", "out/fleet.html"][..]] {
        let mut args = vec!["report", "saved"];
        args.extend_from_slice(extra);
        let out = inferlint(dir.path(), &args);
        no_panic(&out);
        assert_eq!(out.status.code(), Some(UNUSABLE_INPUT), "{}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
        assert!(stderr(&out).contains("replica-2_8000"), "{}", stderr(&out));
        assert!(pages_in(&fleet).is_empty(), "{:?}", pages_in(&fleet));
        for replica in replicas {
            let left = pages_in(&fleet.join(replica));
            assert!(left.is_empty(), "{replica}: {left:?}");
        }
        let out_dir = dir.path().join("out");
        if out_dir.exists() {
            assert!(pages_in(&out_dir).is_empty(), "{:?}", pages_in(&out_dir));
        }
    }
}
