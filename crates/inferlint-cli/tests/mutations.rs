//! Every check fires on a minimal edit of a real recording: the edit is the smallest
//! change that should flip the verdict, so a check that cannot fail is caught here.

use std::path::Path;

use serde_json::Value;

use crate::common::{copy_run, inferlint, json_results, no_panic, recorded};

/// Edits the metrics text inside a snapshot file.
fn edit_snapshot(path: &Path, edit: impl Fn(&str) -> String) {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let text = v["text"].as_str().unwrap().to_owned();
    let new = edit(&text);
    assert_ne!(new, text, "the edit changed nothing");
    v["text"] = Value::String(new);
    std::fs::write(path, serde_json::to_string(&v).unwrap()).unwrap();
}

fn drop_lines(text: &str, name: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with(name))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn result<'a>(results: &'a [Value], tripwire: &str) -> &'a Value {
    results
        .iter()
        .find(|r| r["tripwire"] == tripwire)
        .unwrap_or_else(|| panic!("no {tripwire} in {results:?}"))
}

fn run_json(dir: &Path, args: &[&str]) -> (Vec<Value>, i32) {
    let mut args = args.to_vec();
    args.push("--json");
    let out = inferlint(dir, &args);
    no_panic(&out);
    (json_results(&out), out.status.code().unwrap())
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t1_without_the_preemption_counter_is_cant_tell() {
    let (_tmp, run) = copy_run("vllm-0.28/live");
    edit_snapshot(&run.join("after.snapshot.json"), |t| {
        drop_lines(t, "vllm:num_preemptions_total")
    });
    let (results, code) = run_json(
        &run,
        &["preemption", "before.snapshot.json", "after.snapshot.json"],
    );
    assert_eq!(results[0]["status"], "unknown");
    assert!(results[0]["message"]
        .as_str()
        .unwrap()
        .contains("vllm:num_preemptions_total absent"));
    assert_eq!(code, 2);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t1_passes_when_the_counter_did_not_move() {
    let (_tmp, run) = copy_run("vllm-0.28/live");
    let before: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("before.snapshot.json")).unwrap())
            .unwrap();
    let old_line = before["text"]
        .as_str()
        .unwrap()
        .lines()
        .find(|l| l.starts_with("vllm:num_preemptions_total"))
        .unwrap()
        .to_owned();
    edit_snapshot(&run.join("after.snapshot.json"), |t| {
        t.lines()
            .map(|l| {
                if l.starts_with("vllm:num_preemptions_total") {
                    old_line.clone()
                } else {
                    l.to_owned()
                }
            })
            .map(|l| l + "\n")
            .collect()
    });
    let (results, code) = run_json(
        &run,
        &["preemption", "before.snapshot.json", "after.snapshot.json"],
    );
    assert_eq!(results[0]["status"], "pass");
    assert_eq!(results[0]["message"], "no preemptions");
    assert_eq!(code, 0);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn a_moved_created_stamp_is_a_restart() {
    let (_tmp, run) = copy_run("vllm-0.28/live");
    edit_snapshot(&run.join("after.snapshot.json"), |t| {
        let mut done = false;
        t.lines()
            .map(|l| {
                if !done
                    && l.starts_with("vllm:")
                    && l.split_whitespace().next().unwrap().contains("_created")
                {
                    done = true;
                    let (head, value) = l.rsplit_once(' ').unwrap();
                    let v: f64 = value.parse().unwrap();
                    format!("{head} {}\n", v + 1000.0)
                } else {
                    format!("{l}\n")
                }
            })
            .collect()
    });
    let (results, code) = run_json(
        &run,
        &["preemption", "before.snapshot.json", "after.snapshot.json"],
    );
    assert_eq!(results[0]["status"], "fail");
    assert!(results[0]["message"]
        .as_str()
        .unwrap()
        .starts_with("server restarted between snapshots (1 *_created stamps moved"));
    assert_eq!(results[0]["evidence"]["restarted"], true);
    assert_eq!(code, 1);
    let (results, code) = run_json(
        &run,
        &["rate", "before.snapshot.json", "after.snapshot.json"],
    );
    assert_eq!(
        results[0]["status"], "unknown",
        "T10 refuses a delta across a restart"
    );
    assert_eq!(code, 2);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn a_counter_that_went_down_is_a_restart() {
    let (_tmp, run) = copy_run("vllm-0.28/live");
    edit_snapshot(&run.join("after.snapshot.json"), |t| {
        t.lines()
            .map(|l| {
                if l.starts_with("vllm:generation_tokens_total") {
                    let (head, _) = l.rsplit_once(' ').unwrap();
                    format!("{head} 1.0\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect()
    });
    let (results, _) = run_json(
        &run,
        &["rate", "before.snapshot.json", "after.snapshot.json"],
    );
    assert_eq!(results[0]["status"], "unknown");
    let message = results[0]["message"].as_str().unwrap();
    assert!(
        message.contains("went down") && message.contains("counters only reset on restart"),
        "{message}"
    );
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t14_fails_when_num_gpu_blocks_changes_and_cant_tell_without_it() {
    let (_tmp, run) = copy_run("vllm-0.28/live");
    let after = run.join("after.snapshot.json");
    edit_snapshot(&after, |t| {
        t.replace("num_gpu_blocks=\"43\"", "num_gpu_blocks=\"44\"")
    });
    let (results, code) = run_json(
        &run,
        &[
            "series",
            "run.series.jsonl",
            "--snapshot",
            "after.snapshot.json",
            "--requested",
            "32",
        ],
    );
    let t14 = result(&results, "T14");
    assert_eq!(t14["status"], "fail");
    assert_eq!(t14["message"], "gauge denominator is 42, expected num_gpu_blocks - 1 = 43; the usage semantics changed, or the series is not from this boot");
    // T9 no longer trusts the block count, so it falls back to the plain ceiling.
    assert_eq!(
        result(&results, "T9")["evidence"]["usable_blocks"],
        Value::Null
    );
    assert_eq!(code, 1);
    edit_snapshot(&after, |t| t.replace("num_gpu_blocks=\"44\",", ""));
    let (results, _) = run_json(
        &run,
        &[
            "series",
            "run.series.jsonl",
            "--snapshot",
            "after.snapshot.json",
        ],
    );
    assert_eq!(result(&results, "T14")["status"], "unknown");
    assert_eq!(
        result(&results, "T14")["message"],
        "vllm:cache_config_info has no num_gpu_blocks label"
    );
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t8_passes_at_the_peak_and_fails_one_above() {
    let (_tmp, run) = copy_run("vllm-0.28/live");
    let (results, _) = run_json(&run, &["series", "run.series.jsonl", "--requested", "10"]);
    assert_eq!(result(&results, "T8")["status"], "pass");
    assert_eq!(
        result(&results, "T8")["message"],
        "reached 10 running (requested 10)"
    );
    let (results, code) = run_json(&run, &["series", "run.series.jsonl", "--requested", "11"]);
    assert_eq!(result(&results, "T8")["status"], "fail");
    assert_eq!(code, 1);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t8_names_a_running_cap_the_peak_reached() {
    let (_tmp, run) = copy_run("vllm-0.28/live");
    let log = std::fs::read_to_string(run.join("boot.log")).unwrap();
    assert!(log.contains("'max_num_seqs': 32"));
    std::fs::write(
        run.join("boot.log"),
        log.replace("'max_num_seqs': 32", "'max_num_seqs': 10"),
    )
    .unwrap();
    let (results, _) = run_json(
        &run,
        &[
            "series",
            "run.series.jsonl",
            "--requested",
            "32",
            "--boot-log",
            "boot.log",
        ],
    );
    assert_eq!(
        result(&results, "T8")["message"],
        "requested 32 concurrent, server never ran more than 10; the server runs at most 10 at once (--max-num-seqs 10)"
    );
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t15_fails_when_the_client_claims_fewer_and_warns_on_tokens() {
    let (_tmp, run) = copy_run("vllm-0.28/xray");
    let bench_path = run.join("bench.json");
    let mut bench: Value =
        serde_json::from_str(&std::fs::read_to_string(&bench_path).unwrap()).unwrap();
    bench["completed"] = 30.into();
    std::fs::write(&bench_path, bench.to_string()).unwrap();
    let (results, code) = run_json(&run, &["report", "."]);
    let t15 = result(&results, "T15");
    assert_eq!(t15["status"], "fail");
    assert_eq!(
        t15["message"],
        "the server finished 2 more requests than the load tool sent; other traffic shared the server during the run"
    );
    assert_eq!(code, 1);
    bench["completed"] = 32.into();
    bench["total_output_tokens"] = 31000.into();
    std::fs::write(&bench_path, bench.to_string()).unwrap();
    let (results, _) = run_json(&run, &["report", "."]);
    assert_eq!(result(&results, "T15")["status"], "warn");
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t10_without_clocks_is_cant_tell() {
    let dir = recorded();
    let (results, code) = run_json(
        &dir,
        &[
            "rate",
            "vllm-0.28/metrics/preempted_before.prom",
            "vllm-0.28/metrics/preempted_after.prom",
        ],
    );
    assert_eq!(results[0]["status"], "unknown");
    assert_eq!(
        results[0]["message"],
        "snapshots carry no clock (bare Prometheus text); no span available"
    );
    assert_eq!(code, 2);
}

/// The wall clock stepped back 30 s halfway through a real run (NTP, a resumed VM): the
/// series' later samples and the after snapshot carry the step, their monotonic stamps
/// do not. T10 said Can't tell; every verdict is now the unedited run's, T10's rate is
/// the monotonic clock's with the step named, and the series' step is a note.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn a_wall_clock_step_mid_run_changes_no_verdict() {
    // 30 s, and an hour: a step longer than the whole run, which puts the later samples
    // and the after snapshot before the before snapshot on the wall clock.
    for step in [30.0, 3600.0] {
        wall_step_changes_no_verdict(step);
    }
}

fn wall_step_changes_no_verdict(step: f64) {
    let (tmp, run) = copy_run("vllm-0.28/xray");
    let report = |dir: &Path| {
        let out = inferlint(
            dir,
            &[
                "report",
                ".",
                "--json",
                "-o",
                tmp.path().join("r.html").to_str().unwrap(),
            ],
        );
        no_panic(&out);
        (json_results(&out), crate::common::stderr(&out))
    };
    let (unedited, _) = report(&run);
    let series = run.join("run.series.jsonl");
    let lines: Vec<String> = std::fs::read_to_string(&series)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let half = lines.len() / 2;
    let stepped: String = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let mut v: Value = serde_json::from_str(line).unwrap();
            if i >= half {
                if let Some(t) = v.get("t_wall").and_then(Value::as_f64) {
                    v["t_wall"] = Value::from(t - step);
                }
            }
            format!("{v}\n")
        })
        .collect();
    std::fs::write(&series, stepped).unwrap();
    let after = run.join("after.snapshot.json");
    let mut snapshot: Value =
        serde_json::from_str(&std::fs::read_to_string(&after).unwrap()).unwrap();
    snapshot["t_wall"] = Value::from(snapshot["t_wall"].as_f64().unwrap() - step);
    std::fs::write(&after, snapshot.to_string()).unwrap();
    let (results, stderr) = report(&run);
    let statuses = |r: &[Value]| {
        r.iter()
            .map(|r| format!("{} {}", r["tripwire"], r["status"]))
            .collect::<Vec<_>>()
    };
    assert_eq!(statuses(&results), statuses(&unedited));
    let (t10, before) = (result(&results, "T10"), result(&unedited, "T10"));
    assert_eq!(
        t10["evidence"]["rate_per_s"],
        before["evidence"]["rate_per_s"]
    );
    assert!(
        t10["message"].as_str().unwrap().ends_with(
            &format!("on the monotonic clock; the wall clock stepped back {step:.1} s between the snapshots, while one server process on this host answered both")
        ),
        "{}",
        t10["message"]
    );
    assert!(
        stderr.contains(
            &format!("run.series.jsonl: the wall clock stepped back {step:.1} s while the monotonic clock ran on")
        ),
        "{stderr}"
    );
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t9_passes_when_the_ceiling_holds() {
    let dir = recorded();
    let (results, _) = run_json(&dir, &["series", "vllm-0.28/series/ladder.series.jsonl"]);
    assert_eq!(result(&results, "T9")["status"], "pass");
}

/// Inserts a TensorRT-LLM pause line after line `after_line` (1-based) of the boot log.
/// Inserts pause lines, as TensorRT-LLM's executor writes them, after line `after_line`.
fn insert_pauses(run: &Path, after_line: usize, pauses: &[String]) {
    let log = std::fs::read_to_string(run.join("boot.log")).unwrap();
    let mut lines: Vec<&str> = log.lines().collect();
    for (i, pause) in pauses.iter().enumerate() {
        lines.insert(after_line + i, pause);
    }
    std::fs::write(run.join("boot.log"), lines.join("\n") + "\n").unwrap();
}

/// A pause line of the Python executor: stamped in the server's local time.
fn stamped_pause(stamp: &str, request_id: u64) -> String {
    format!("[{stamp}] [TRT-LLM] [I] MaxUtilizationScheduler: request ID {request_id} -> pause")
}

/// Shrinks the KV cache the boot log reports, so that the run's 32 requests of 1,088
/// tokens no longer fit (20,960 tokens hold 19 at full length).
fn shrink_cache(run: &Path) {
    let log = std::fs::read_to_string(run.join("boot.log")).unwrap();
    let edited = log.replace("paged KV cache (37760)", "paged KV cache (20960)");
    assert_ne!(edited, log);
    std::fs::write(run.join("boot.log"), edited).unwrap();
}

fn served_line_numbers(run: &Path) -> Vec<usize> {
    let log = std::fs::read_to_string(run.join("boot.log")).unwrap();
    log.lines()
        .enumerate()
        .filter(|(_, l)| l.contains("\"POST /v1/completions HTTP/1.1\" 200"))
        .map(|(i, _)| i + 1)
        .collect()
}

/// `preemption` on a run folder's snapshots, with its boot log for the pauses that
/// TensorRT-LLM only logs.
fn preemption_with_boot_log(run: &Path) -> (Vec<Value>, i32) {
    run_json(
        run,
        &[
            "preemption",
            "before.snapshot.json",
            "after.snapshot.json",
            "--boot-log",
            "boot.log",
        ],
    )
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn trtllm_pauses_flushed_after_the_runs_access_lines_count() {
    // The executor and the HTTP server write through their own buffers: the run's pause
    // lines land below its last access line. The cache could not hold the run, the probe
    // could not fill it, nothing was answered after the run, and the stamps fall inside
    // it: all 13 are the run's, wherever they sit.
    let (_tmp, run) = copy_run("trtllm-1.3/qwen3-8b");
    shrink_cache(&run);
    let served = served_line_numbers(&run);
    let pauses: Vec<String> = (0..13)
        .map(|i| stamped_pause("10/01/2026-01:44:12", 72 - i))
        .collect();
    insert_pauses(&run, *served.last().unwrap(), &pauses);
    let (results, code) = preemption_with_boot_log(&run);
    assert_eq!(results[0]["status"], "fail", "{results:?}");
    assert_eq!(
        results[0]["message"],
        "13 requests paused for recompute during the run, from the server log (TensorRT-LLM counts none)"
    );
    assert_eq!(results[0]["evidence"]["log_clock_offset_s"], -7 * 3600);
    assert_eq!(code, 1);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn trtllm_unstamped_pauses_after_the_run_count_by_the_cache_alone() {
    // The C++ scheduler's lines carry no time stamp: the cache arithmetic alone places
    // them in the run.
    let (_tmp, run) = copy_run("trtllm-1.3/qwen3-8b");
    shrink_cache(&run);
    let served = served_line_numbers(&run);
    let pauses: Vec<String> = (0..3)
        .map(|i| {
            format!(
                "[TensorRT-LLM][INFO] MaxUtilizationScheduler: request ID {} -> pause",
                60 - i
            )
        })
        .collect();
    insert_pauses(&run, *served.last().unwrap() + 1, &pauses);
    let (results, code) = preemption_with_boot_log(&run);
    assert_eq!(results[0]["status"], "fail", "{results:?}");
    assert_eq!(results[0]["evidence"]["paused_in_log"], 3);
    assert_eq!(code, 1);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn trtllm_pause_of_a_probe_request_is_left_out_by_its_id() {
    // A cache of 20 blocks the probe's nine requests could fill, and a pause of request
    // 35: the executor numbers requests from max_batch_size (32), so ids 32 to 40 were
    // the probe's.
    let (_tmp, run) = copy_run("trtllm-1.3/qwen3-8b");
    let log = std::fs::read_to_string(run.join("boot.log")).unwrap();
    std::fs::write(
        run.join("boot.log"),
        log.replace("paged KV cache (37760)", "paged KV cache (640)"),
    )
    .unwrap();
    let served = served_line_numbers(&run);
    insert_pauses(
        &run,
        served[3],
        &["[TensorRT-LLM][INFO] MaxUtilizationScheduler: request ID 35 -> pause".to_owned()],
    );
    let (results, code) = preemption_with_boot_log(&run);
    assert_eq!(results[0]["status"], "pass", "{results:?}");
    assert!(results[0]["message"]
        .as_str()
        .unwrap()
        .ends_with("; 1 pause outside the run left out (by request id)"));
    assert_eq!(results[0]["evidence"]["paused_outside_run"], 1);
    assert_eq!(code, 0);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn trtllm_pause_nothing_could_cause_cant_tell() {
    // The recorded cache holds the probe and the whole run at full length, and no
    // request was answered after the run: a pause line in this log contradicts the
    // arithmetic, so T1 cannot vouch for the run either way.
    let (_tmp, run) = copy_run("trtllm-1.3/qwen3-8b");
    let served = served_line_numbers(&run);
    insert_pauses(&run, served[3], &[stamped_pause("10/01/2026-01:44:12", 50)]);
    let (results, code) = preemption_with_boot_log(&run);
    assert_eq!(results[0]["status"], "unknown", "{results:?}");
    assert_eq!(code, 2);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn trtllm_log_cut_inside_a_pause_line_cant_tell() {
    let (_tmp, run) = copy_run("trtllm-1.3/qwen3-8b");
    let log = std::fs::read_to_string(run.join("boot.log")).unwrap();
    std::fs::write(
        run.join("boot.log"),
        format!("{log}[10/01/2026-01:44:28] [TRT-LLM] [I] MaxUtilizationScheduler: request ID 4"),
    )
    .unwrap();
    let (results, code) = preemption_with_boot_log(&run);
    assert_eq!(results[0]["status"], "unknown", "{results:?}");
    assert!(results[0]["message"]
        .as_str()
        .unwrap()
        .contains("cut pause line"));
    assert_eq!(code, 2);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn trtllm_log_cut_before_the_run_ended_cant_tell() {
    let (_tmp, run) = copy_run("trtllm-1.3/qwen3-8b");
    let served = served_line_numbers(&run);
    let log = std::fs::read_to_string(run.join("boot.log")).unwrap();
    let cut: Vec<&str> = log.lines().take(served[20]).collect();
    std::fs::write(run.join("boot.log"), cut.join("\n") + "\n").unwrap();
    let (results, code) = preemption_with_boot_log(&run);
    assert_eq!(results[0]["status"], "unknown");
    assert!(results[0]["message"]
        .as_str()
        .unwrap()
        .contains("does not cover the run"));
    assert_eq!(code, 2);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn trtllm_without_the_log_cant_tell() {
    let dir = recorded();
    let (results, code) = run_json(
        &dir,
        &[
            "preemption",
            "trtllm-1.3/qwen3-8b/before.snapshot.json",
            "trtllm-1.3/qwen3-8b/after.snapshot.json",
        ],
    );
    assert_eq!(results[0]["status"], "unknown");
    assert!(results[0]["message"]
        .as_str()
        .unwrap()
        .contains("server log saved until after the run is needed"));
    assert_eq!(code, 2);
}
