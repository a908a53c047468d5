//! T16, T17, T19 and T21 on real runs: none fires on a recording or a load tool's run that
//! does not have its trap, and each fires on a minimal edit of a real recording that
//! gives it the trap.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{
    copy_run, copy_tree, fixtures, inferlint, json_results, no_panic, recorded, RECORDED_RUNS,
};

const NEW: [&str; 4] = ["T16", "T17", "T19", "T21"];

/// `report` on a folder: the results and the exit status.
fn report(dir: &Path, extra: &[&str]) -> (Vec<Value>, i32) {
    let page = dir.join("report.html");
    let mut args = vec![
        "report",
        ".",
        "--json",
        "--force",
        "-o",
        page.to_str().unwrap(),
    ];
    args.extend(extra);
    let out = inferlint(dir, &args);
    no_panic(&out);
    (json_results(&out), out.status.code().unwrap())
}

fn result<'a>(results: &'a [Value], tripwire: &str) -> &'a Value {
    results
        .iter()
        .find(|r| r["tripwire"] == tripwire)
        .unwrap_or_else(|| panic!("no {tripwire} in {results:#?}"))
}

fn status(results: &[Value], tripwire: &str) -> String {
    result(results, tripwire)["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn message(results: &[Value], tripwire: &str) -> String {
    result(results, tripwire)["message"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Fails, with the tripwire's message, unless its status is `expected`.
#[track_caller]
fn assert_status(results: &[Value], tripwire: &str, expected: &str) {
    assert_eq!(
        status(results, tripwire),
        expected,
        "{tripwire}: {}",
        message(results, tripwire)
    );
}

/// Edits the metrics text inside a snapshot file, line by line.
fn edit_snapshot(path: &Path, edit: impl Fn(&str) -> String) {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let text = v["text"].as_str().unwrap().to_owned();
    let new: String = text.lines().map(|l| format!("{}\n", edit(l))).collect();
    assert_ne!(new, text, "the edit changed nothing");
    v["text"] = Value::String(new);
    std::fs::write(path, serde_json::to_string(&v).unwrap()).unwrap();
}

/// Sets a metric's value wherever a line starts with `prefix`.
fn set_value(prefix: &'static str, value: f64) -> impl Fn(&str) -> String {
    move |line: &str| {
        if line.starts_with(prefix) {
            let (name, _) = line.rsplit_once(' ').unwrap();
            format!("{name} {value:?}")
        } else {
            line.to_owned()
        }
    }
}

/// Rewrites each line of a series through `edit` (the header too).
fn edit_series(path: &Path, edit: impl Fn(&mut serde_json::Map<String, Value>)) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        edit(v.as_object_mut().unwrap());
        out.push_str(&v.to_string());
        out.push('\n');
    }
    std::fs::write(path, out).unwrap();
}

/// No new tripwire warns or fails on a recording without its trap. The one trap the
/// recordings have is T19's on vLLM 0.28: its kernel JIT monitor logged compiles
/// ("Triton kernel JIT compilation during inference") inside both runs' windows.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn the_new_tripwires_fire_on_no_recording_without_their_trap() {
    let dir = recorded();
    for run in RECORDED_RUNS {
        let results = report_copy(&dir.join(run));
        for tripwire in NEW {
            let got = status(&results, tripwire);
            let has_trap = run.starts_with("vllm-0.28/") && tripwire == "T19";
            if has_trap {
                assert_eq!(got, "fail", "{run} {tripwire}");
                assert!(
                    message(&results, tripwire).contains("JIT compilation during inference"),
                    "{run}: {}",
                    message(&results, tripwire)
                );
            } else {
                assert!(
                    got != "fail" && got != "warn",
                    "{run} {tripwire}: {got}: {}",
                    message(&results, tripwire)
                );
            }
        }
    }
}

/// The load tools' real runs (against the simulated server): none has a trap of the new
/// tripwires, and none fires.
#[test]
fn the_new_tripwires_fire_on_no_load_tools_run() {
    let runs = run_folders(&fixtures().join("loadtools"));
    assert!(runs.len() >= 20, "{} load tool runs", runs.len());
    for run in runs {
        let results = report_copy(&run);
        for tripwire in NEW {
            let got = status(&results, tripwire);
            assert!(
                got != "fail" && got != "warn",
                "{} {tripwire}: {got}: {}",
                run.display(),
                message(&results, tripwire)
            );
        }
    }
}

/// The simulated runs (fixtures/sim, fixtures/sweep) have none of the four traps: their
/// load sends prompts that differ from the first word, keeps its concurrency open, sends
/// an untimed request first, and their server uses no GPU. Each new tripwire passes or
/// does not apply there; none is Can't tell, since those folders hold every input.
#[test]
fn the_new_tripwires_pass_on_every_simulated_run() {
    let mut runs = Vec::new();
    for set in ["sim", "sweep"] {
        let folder = fixtures().join(set);
        runs.extend(
            std::fs::read_dir(&folder)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.is_dir()),
        );
    }
    assert!(runs.len() >= 8, "{} simulated runs", runs.len());
    for run in runs {
        let results = report_copy(&run);
        for tripwire in NEW {
            let expected = if tripwire == "T21" {
                "not_applicable"
            } else {
                "pass"
            };
            assert_eq!(
                status(&results, tripwire),
                expected,
                "{} {tripwire}: {}",
                run.display(),
                message(&results, tripwire)
            );
        }
    }
}

/// The run folders one level below each folder of `root` (a tool's runs).
fn run_folders(root: &Path) -> Vec<PathBuf> {
    let mut runs = Vec::new();
    for tool in std::fs::read_dir(root).unwrap() {
        for run in std::fs::read_dir(tool.unwrap().path()).unwrap() {
            runs.push(run.unwrap().path());
        }
    }
    runs
}

/// `report` on a copy of a run folder: its results.
fn report_copy(run: &Path) -> Vec<Value> {
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("run");
    copy_tree(run, &copy);
    report(&copy, &[]).0
}

/// T16 on each engine's recording: the cache's counter raised to most of the run's
/// prompt tokens warns, unless the run is said to be meant to reuse prefixes.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t16_fires_when_the_cache_served_the_run() {
    let cases: [(&str, &'static str, f64); 3] = [
        ("vllm-0.28/xray", "vllm:prefix_cache_hits_total", 2_464.0),
        (
            "sglang-0.5/qwen3-8b",
            "sglang:cached_tokens_total",
            2_048.0 + 48.0,
        ),
        (
            "trtllm-1.3/qwen3-8b",
            "trtllm_prompt_cached_tokens_total",
            2_006.0,
        ),
    ];
    for (run, counter, value) in cases {
        let (_tmp, dir) = copy_run(run);
        let (results, _) = report(&dir, &[]);
        assert_eq!(status(&results, "T16"), "pass", "{run}");
        edit_snapshot(&dir.join("after.snapshot.json"), set_value(counter, value));
        let (results, _) = report(&dir, &[]);
        assert_eq!(status(&results, "T16"), "warn", "{run}: {results:#?}");
        assert!(
            result(&results, "T16")["advice"][0]
                .as_str()
                .is_some_and(|a| a.starts_with("measure fresh prompts")),
            "{run}"
        );
        let (results, _) = report(&dir, &["--expect-cache-hits"]);
        assert_eq!(status(&results, "T16"), "pass", "{run}");
    }
}

/// T17 on the vLLM 0.28 xray run, whose client kept all 32 open while the cache held 10:
/// with the queue edited away the client never had more than the server ran. Behind a
/// full cache that is not the client's doing (warn); with room in the cache it is (fail).
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t17_tells_the_client_from_the_server() {
    let (_tmp, dir) = copy_run("vllm-0.28/xray");
    let (results, _) = report(&dir, &[]);
    assert_eq!(status(&results, "T17"), "pass");
    edit_series(&dir.join("run.series.jsonl"), |s| {
        if s.contains_key("waiting") {
            s.insert("waiting".into(), Value::from(0.0));
        }
    });
    let (results, _) = report(&dir, &[]);
    assert_status(&results, "T17", "warn");
    assert!(message(&results, "T17").contains("no room for one more request"));
    edit_series(&dir.join("run.series.jsonl"), |s| {
        if let Some(u) = s.get("kv_usage").and_then(Value::as_f64) {
            s.insert("kv_usage".into(), Value::from(u / 3.0));
        }
    });
    let (results, code) = report(&dir, &[]);
    assert_status(&results, "T17", "fail");
    assert!(message(&results, "T17").contains("the shortfall is the client's"));
    assert_eq!(code, 1);
}

/// T19 on the vLLM 0.30 run, whose log shows no compile after the ready line: a JIT
/// compile line stamped inside the run fails, one stamped before it passes, one without
/// a time stamp is Can't tell.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t19_places_compile_lines_against_the_run() {
    let (_tmp, dir) = copy_run("vllm-0.30/live");
    let (results, _) = report(&dir, &[]);
    assert_eq!(status(&results, "T19"), "pass");
    let log = std::fs::read_to_string(dir.join("boot.log")).unwrap();
    let ready = log
        .lines()
        .position(|l| l.contains("Application startup complete"))
        .unwrap();
    let with_line = |line: &str| {
        let mut lines: Vec<&str> = log.lines().collect();
        lines.insert(ready + 5, line);
        let mut text = lines.join("\n");
        text.push('\n');
        std::fs::write(dir.join("boot.log"), text).unwrap();
    };
    // The run: 20:12:13 to 20:14:01 in the log's zone (UTC-7).
    let jit = |stamp: &str| {
        format!("(EngineCore pid=949) WARNING 09-30 {stamp} [jit_monitor.py:141] Triton kernel JIT compilation during inference: _topk_topp_kernel. This causes a latency spike; consider extending warmup to cover this shape/config.")
    };
    with_line(&jit("20:13:00"));
    let (results, code) = report(&dir, &[]);
    assert_status(&results, "T19", "fail");
    assert_eq!(code, 1);
    with_line(&jit("20:12:05"));
    let (results, _) = report(&dir, &[]);
    assert_status(&results, "T19", "pass");
    with_line("Capturing CUDA graphs (decode, FULL):  29%|██▊       | 2/7");
    let (results, _) = report(&dir, &[]);
    assert_status(&results, "T19", "unknown");
}

/// An SGLang log has no process start time in its snapshots and no stamped line after
/// its shutdown: a capture line after the ready line cannot be placed, and that is never
/// a pass.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t19_a_line_it_cannot_place_is_cant_tell() {
    let (_tmp, dir) = copy_run("sglang-0.5/qwen3-8b");
    let mut log = std::fs::read_to_string(dir.join("boot.log")).unwrap();
    log.push_str("[2026-10-01 01:42:10] Capture cuda graph begin. This can take up to several minutes. avail mem=20.00 GB\n");
    std::fs::write(dir.join("boot.log"), log).unwrap();
    let (results, _) = report(&dir, &[]);
    assert_status(&results, "T19", "unknown");
    assert!(message(&results, "T19").contains("could not be placed"));
}

/// T19 from the load tool's records: `vllm bench serve --save-detailed`'s run against the
/// simulated server, its first wave's times to first token made 40 s.
#[test]
fn t19_a_first_wave_far_slower_than_the_rest_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    copy_tree(
        &fixtures().join("loadtools/vllm/concurrent-16-detailed"),
        &dir,
    );
    let bench = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            std::fs::read_to_string(p).is_ok_and(|t| t.contains("\"ttfts\"") && t.starts_with('{'))
        })
        .expect("a result with per-request records");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&bench).unwrap()).unwrap();
    let ttfts = v["ttfts"].as_array_mut().unwrap();
    let n = ttfts.len();
    for t in ttfts.iter_mut().take(n / 2) {
        *t = Value::from(40.0);
    }
    std::fs::write(&bench, v.to_string()).unwrap();
    let (results, _) = report(&dir, &[]);
    assert_status(&results, "T19", "fail");
    assert!(message(&results, "T19").contains("paid for a cold engine"));
}

/// T21 from GPU readings added to the vLLM 0.28 xray series: none is not checked, a clean
/// card passes, another tenant computing fails, a thermal slowdown fails, and a recorder
/// that found no GPU makes it not apply.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t21_judges_the_readings_stored_beside_the_samples() {
    let (_tmp, dir) = copy_run("vllm-0.28/xray");
    let series = dir.join("run.series.jsonl");
    let original = std::fs::read_to_string(&series).unwrap();
    let (results, _) = report(&dir, &[]);
    assert_eq!(status(&results, "T21"), "not_checked");
    let with_readings = |sampling: &str, reading: Value| {
        std::fs::write(&series, &original).unwrap();
        edit_series(&series, |s| {
            if s.contains_key("schema") {
                s.insert("gpu".into(), Value::from(sampling));
            } else if sampling == "nvml" {
                for (k, v) in reading.as_object().unwrap() {
                    s.insert(k.clone(), v.clone());
                }
            }
        });
        report(&dir, &[]).0
    };
    let clean = serde_json::json!({"gpu_other_mib": 0.0, "gpu_other_util": 0.0, "gpu_util": 97.0,
        "gpu_throttle": 0.0, "gpu_sm_mhz": 1980.0, "gpu_sm_max_mhz": 1980.0});
    let results = with_readings("nvml", clean.clone());
    assert_status(&results, "T21", "pass");
    let mut tenant = clean.clone();
    tenant["gpu_other_mib"] = Value::from(20_480.0);
    tenant["gpu_other_util"] = Value::from(35.0);
    let results = with_readings("nvml", tenant);
    assert_status(&results, "T21", "fail");
    assert!(message(&results, "T21").contains("another process used up to 35%"));
    let mut hot = clean;
    hot["gpu_throttle"] = Value::from(64.0);
    hot["gpu_sm_mhz"] = Value::from(1100.0);
    let results = with_readings("nvml", hot);
    assert_status(&results, "T21", "fail");
    assert!(message(&results, "T21").contains("hardware thermal slowdown"));
    let results = with_readings("none", Value::Null);
    assert_eq!(status(&results, "T21"), "not_applicable");
}

/// A load paced by a rate (`vllm bench serve --request-rate 8 --max-concurrency 32`,
/// arrivals/baseline of the real engine) keeps open only what its arrivals bring: 32 is
/// the most it may keep open, and on a server with room to spare it ran at most 4. That
/// is no concurrency shortfall: T8 does not apply (T17 says the same of the client). The
/// same load on a server limited to 4 (`--max-num-seqs 4`, arrivals/max-num-seqs-4) ran
/// at that limit, where an arriving request waits: there T8 judges, and names the limit.
/// A recording too thin to show whether any request waited cannot make T8 not apply.
#[test]
fn a_load_paced_by_a_rate_is_held_to_t8_only_where_the_server_held_it_back() {
    let root = fixtures().join("real/vllm-0.32-cpu/whatif/arrivals");
    let tmp = tempfile::tempdir().unwrap();
    let paced = tmp.path().join("paced");
    copy_tree(&root.join("baseline"), &paced);
    let (results, _) = report(&paced, &[]);
    assert_status(&results, "T8", "not_applicable");
    assert!(message(&results, "T8").contains("paced at 8 requests/s"));
    assert_eq!(result(&results, "T8")["evidence"]["request_rate"], 8.0);
    assert_status(&results, "T17", "pass");
    // "None waited" needs samples that saw the load: the same recording cut to two of
    // its 79 samples, 10 s apart, cannot say, and T8 says so rather than not applying.
    let thin = tmp.path().join("thin");
    copy_tree(&root.join("baseline"), &thin);
    let series = thin.join("run.series.jsonl");
    let kept: Vec<String> = std::fs::read_to_string(&series)
        .unwrap()
        .lines()
        .enumerate()
        .filter(|(i, _)| *i == 0 || i % 40 == 1)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    std::fs::write(&series, kept.concat()).unwrap();
    let (results, _) = report(&thin, &[]);
    assert_status(&results, "T8", "unknown");
    assert!(message(&results, "T8").contains("the recording covered"));
    let capped = tmp.path().join("capped");
    copy_tree(&root.join("max-num-seqs-4"), &capped);
    let (results, _) = report(&capped, &[]);
    assert_status(&results, "T8", "fail");
    assert!(
        message(&results, "T8").contains("--max-num-seqs 4"),
        "{}",
        message(&results, "T8")
    );
}
