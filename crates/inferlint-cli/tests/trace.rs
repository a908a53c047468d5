//! `report --trace`: the run's timeline as Chrome trace event JSON (the Trace Event
//! Format that Perfetto's UI opens), held to the format and to the counts the run's own
//! files give.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::common::{fixtures, inferlint, json_results, no_panic, stderr, USAGE};

/// `report RUN --json --trace FILE` on a real run: its verdicts and the trace.
fn traced(case: &str) -> (Vec<Value>, Value) {
    let run = fixtures().join("real/vllm-0.32-cpu").join(case);
    let out = tempfile::tempdir().unwrap();
    let trace = out.path().join("run.trace.json");
    let page = out.path().join("report.html");
    let o = inferlint(
        out.path(),
        &[
            "report",
            run.to_str().unwrap(),
            "--json",
            "-o",
            page.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    no_panic(&o);
    let results = json_results(&o);
    let text = std::fs::read_to_string(&trace)
        .unwrap_or_else(|e| panic!("no trace written ({e}): {}", stderr(&o)));
    (results, serde_json::from_str(&text).unwrap())
}

/// The Trace Event Format's rules for the phases written: every event names its phase,
/// process, thread and name; every timed one has a finite `ts` (microseconds); each
/// async begin (`b`) has its end (`e`) with the same id, category and name, no earlier;
/// instants are global (`s: g`); counters carry numbers only.
fn well_formed(trace: &Value) -> &[Value] {
    let events = trace["traceEvents"]
        .as_array()
        .expect("traceEvents is an array");
    let mut open: HashMap<(u64, String, String, String), Vec<f64>> = HashMap::new();
    for e in events {
        let ph = e["ph"].as_str().expect("ph");
        assert!(["M", "b", "e", "C", "i"].contains(&ph), "phase {ph}");
        assert!(
            e["pid"].is_u64() && e["tid"].is_u64() && e["name"].is_string(),
            "{e}"
        );
        if ph == "M" {
            continue;
        }
        let ts = e["ts"].as_f64().expect("ts");
        assert!(ts.is_finite(), "{e}");
        let key = || {
            (
                e["pid"].as_u64().unwrap(),
                e["cat"].as_str().unwrap_or_default().to_owned(),
                e["id"].as_str().unwrap_or_default().to_owned(),
                e["name"].as_str().unwrap().to_owned(),
            )
        };
        match ph {
            "b" => open.entry(key()).or_default().push(ts),
            "e" => {
                let began = open.get_mut(&key()).and_then(Vec::pop);
                let began = began.unwrap_or_else(|| panic!("an end with no begin: {e}"));
                assert!(ts >= began, "{e} ends before it began");
            }
            "i" => assert_eq!(e["s"], "g", "{e}"),
            "C" => {
                let args = e["args"].as_object().expect("a counter's args");
                assert!(
                    !args.is_empty() && args.values().all(Value::is_number),
                    "{e}"
                );
            }
            _ => {}
        }
    }
    assert!(open.values().all(Vec::is_empty), "a begin with no end");
    events
}

fn top_level(events: &[Value], pid: u64, name: impl Fn(&str) -> bool) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["ph"] == "b" && e["pid"] == pid && name(e["name"].as_str().unwrap()))
        .collect()
}

fn lines_with(path: &Path, needle: &str) -> usize {
    std::fs::read_to_string(path)
        .unwrap()
        .matches(needle)
        .count()
}

/// The real run with a second client beside the load (MADE.md): one slice per request
/// the load tool timed (bench.json's 96 `ttfts`), one per request span the server sent
/// (each carries one `gen_ai.request.id`), of which the 6 the second client sent
/// (beside.log) are marked another client's and the 9 of xray's probe (1, then 8 at
/// once: xray-made runs) the probe's; one instant per verdict `--json` gave.
#[test]
fn a_real_runs_trace_holds_every_request_and_verdict() {
    let (results, trace) = traced("other-traffic");
    let events = well_formed(&trace);
    let run = fixtures().join("real/vllm-0.32-cpu/other-traffic");
    let bench: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("bench.json")).unwrap()).unwrap();
    let timed = bench["ttfts"].as_array().unwrap().len();
    assert_eq!(timed, 96);
    let is_request = |n: &str| n.starts_with("request ");
    assert_eq!(top_level(events, 1, is_request).len(), timed);
    let spans = lines_with(&run.join("spans.otlp.jsonl"), "\"gen_ai.request.id\"");
    let server_slices = top_level(events, 2, |n| {
        is_request(n) || n == "another client's request" || n == "inferlint's probe"
    });
    assert_eq!(server_slices.len(), spans);
    let sent_beside = lines_with(&run.join("beside.log"), "other-client-");
    assert_eq!(sent_beside, 6);
    assert_eq!(
        top_level(events, 2, |n| n == "another client's request").len(),
        sent_beside
    );
    assert_eq!(top_level(events, 2, |n| n == "inferlint's probe").len(), 9);
    // The load's own records: the spans less the other client's and the probe's.
    assert_eq!(top_level(events, 2, is_request).len(), spans - 6 - 9);
    let verdicts = results
        .iter()
        .filter(|r| !["not_applicable", "not_checked"].contains(&r["status"].as_str().unwrap()))
        .count();
    let instants: Vec<_> = events.iter().filter(|e| e["ph"] == "i").collect();
    assert_eq!(instants.len(), verdicts);
    assert!(instants
        .iter()
        .any(|e| e["args"]["tripwire"] == "T15" && e["args"]["status"] == "fail"));
    assert!(trace["otherData"]["t0_unix_s"].as_f64().is_some());
}

/// The real run whose KV cache was too small (11 preemptions, MADE.md): T1's failure is
/// drawn at each moment the recording's preemption counter moved (the counter lane steps
/// up there), and the KV lane's blocks stored and removed sum to what the subscriber's
/// file counts batch by batch.
#[test]
fn preemptions_and_kv_events_are_where_the_run_had_them() {
    let (_, trace) = traced("traced-kv-too-small");
    let events = well_formed(&trace);
    let counter = |name: &str| -> Vec<(f64, &Value)> {
        events
            .iter()
            .filter(|e| e["ph"] == "C" && e["name"] == name)
            .map(|e| (e["ts"].as_f64().unwrap(), &e["args"]))
            .collect()
    };
    let so_far = counter("preemptions so far");
    let t1: Vec<f64> = events
        .iter()
        .filter(|e| e["ph"] == "i" && e["args"]["tripwire"] == "T1")
        .map(|e| e["ts"].as_f64().unwrap())
        .collect();
    assert!(!t1.is_empty());
    for at in &t1 {
        let k = so_far
            .iter()
            .position(|(t, _)| t == at)
            .expect("T1 at a sample");
        let value = |i: usize| so_far[i].1["preemptions"].as_f64().unwrap();
        assert!(
            k > 0 && value(k) > value(k - 1),
            "T1 drawn where nothing moved"
        );
    }
    let last = so_far.last().unwrap().1["preemptions"].as_f64().unwrap();
    assert!(last > 0.0);
    let file = fixtures().join("real/vllm-0.32-cpu/traced-kv-too-small/kv-events.jsonl");
    let (mut stored, mut removed) = (0.0, 0.0);
    for line in std::fs::read_to_string(file).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v.get("seq").is_some() {
            stored += v["stored_blocks"].as_f64().unwrap();
            removed += v["removed_blocks"].as_f64().unwrap();
        }
    }
    let kv = counter("KV blocks per second");
    let sum = |key: &str| {
        kv.iter()
            .map(|(_, a)| a[key].as_f64().unwrap())
            .sum::<f64>()
    };
    assert_eq!((sum("stored"), sum("removed")), (stored, removed));
    assert!(stored > 0.0 && removed > 0.0);
}

/// `--trace` never over a file the report reads: a usage error (64, EX_USAGE, as `-o`
/// over an input is), the file untouched.
#[test]
fn a_trace_is_never_written_over_an_input() {
    let dir = tempfile::tempdir().unwrap();
    crate::common::copy_tree(
        &fixtures().join("real/vllm-0.32-cpu/healthy-vllm-bench"),
        dir.path(),
    );
    let bench = dir.path().join("bench.json");
    let before = std::fs::read(&bench).unwrap();
    let o = inferlint(
        dir.path(),
        &["report", ".", "--trace", bench.to_str().unwrap()],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(USAGE), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("which this command reads"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&bench).unwrap(), before);
}

/// `--trace` over a file that is not a trace inferlint wrote (someone's notes): refused
/// without `--force`, the file untouched, and replaced with it; a trace written earlier is
/// replaced without it.
#[test]
fn a_trace_replaces_only_an_earlier_trace_without_force() {
    let dir = tempfile::tempdir().unwrap();
    crate::common::copy_tree(
        &fixtures().join("real/vllm-0.32-cpu/healthy-vllm-bench"),
        &dir.path().join("run"),
    );
    let notes = dir.path().join("notes.json");
    std::fs::write(&notes, "{\"mine\": true}").unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["report", "run", "-o", "page.html", "--trace", "notes.json"];
        args.extend_from_slice(extra);
        let o = inferlint(dir.path(), &args);
        no_panic(&o);
        o
    };
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(USAGE), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "{\"mine\": true}");
    let o = run(&["--force"]);
    assert_ne!(o.status.code(), Some(USAGE), "{}", stderr(&o));
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&notes).unwrap()).unwrap();
    assert!(written["traceEvents"].is_array());
    // Now an earlier trace of ours: replaced without --force.
    let o = run(&[]);
    assert_ne!(o.status.code(), Some(USAGE), "{}", stderr(&o));
}
