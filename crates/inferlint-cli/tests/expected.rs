//! Differential tests: each file in spec/expected holds the established tool's `--json`
//! verdicts on one recording and the command it ran. We run the same command and must
//! agree on every verdict, message and key number. Where we deliberately differ, the
//! difference is listed in `DELIBERATE` with the reason.

use std::path::Path;

use serde_json::Value;

use crate::common::{expected_dir, inferlint, json_results, no_panic, recorded, stderr};

/// (case, tripwire, our message) where we do better than the established tool on purpose.
///
/// TensorRT-LLM counts no pauses, so T1 counts the pause lines of its log. The established
/// tool counts the whole file, including the probe's and the load tool's warm-up requests
/// answered before the before snapshot. We line the log up with the snapshots' request
/// counters and count only the run's (see `mutations::trtllm_pauses_*`).
///
/// T9 judges the ceiling only where the cache was at least 90% full, as its entry in the
/// catalogue says. The established tool falls back to every busy sample when none was,
/// and reports `running / usage` there as a "ceiling": on a cache with room that is room
/// left, not a limit (a run at 23% "warned" that its ceiling moved). In the SGLang capped
/// run (one request, 80% of the pool) and the TensorRT-LLM run (32 requests, 89.3%) the
/// cache never reached 90%: the verdict is the same pass, and the message says why.
///
/// In the SGLang qwen3-8b run the server ran 29 requests on every saturated sample; the
/// established tool's quotients (30 at 95% full, 31 at 91%) differ by the pool's unused
/// sliver, which it calls a ceiling that moved. No request that ran moved, so we pass
/// (`DELIBERATE_STATUS`).
const DELIBERATE: &[(&str, &str, &str)] = &[
    (
        "sglang-0.5-qwen3-8b",
        "T9",
        "the server ran 29 on every saturated sample while one request held 3.1% to 3.3% of the fullest memory pool (KV cache or request state): the quotients floor(1/share) range over less than one request that ran, so the ceiling stayed put, 30 at the fullest sample",
    ),
    (
        "sglang-0.5-capped",
        "T9",
        "the fullest memory pool (KV cache or request state) was never full: at most 80.0% of it in use on 2339 busy samples, below the 90% at which T9 judges a ceiling, so no ceiling of it held the run's concurrency down",
    ),
    (
        "trtllm-1.3-qwen3-8b",
        "T9",
        "the cache was never full: at most 89.3% of it in use on 2 busy samples, below the 90% at which T9 judges a ceiling, so no ceiling of it held the run's concurrency down (TensorRT-LLM updates its gauges only when a request completes, so it may have been fuller between readings)",
    ),
    (
        "trtllm-1.3-qwen3-8b",
        "T1",
        "no pause in the server log during the run, which covers its 32 answered requests (9 answered outside the run, such as a probe's, left out)",
    ),
    (
        "trtllm-1.3-no-iter-stats",
        "T1",
        "no pause in the server log during the run, which covers its 33 answered requests (9 answered outside the run, such as a probe's, left out)",
    ),
];

/// (case, tripwire, the established tool's status, ours) where our verdict differs on
/// purpose, for the reason `DELIBERATE` gives.
const DELIBERATE_STATUS: &[(&str, &str, &str, &str)] =
    &[("sglang-0.5-qwen3-8b", "T9", "warn", "pass")];

/// Cases where the established tool cuts a failure's cause at 200 characters and its
/// line at 300, mid-word, and with them the engine's own advice at the end of the line
/// (`Try: (1) reduce --max-running-requ`). We keep both whole: our message and line must
/// continue theirs.
const UNCUT: &[&str] = &["sglang-0.5-fail-mamba", "sglang-0.5-fail-mem"];

/// Tripwires whose message continues the established tool's, which it keeps whole, with
/// what its figure is, and how each continuation starts: T10's rate is the server's count
/// over the readings' window, not the run's throughput (the load tool's); T1's failure
/// says how the preemptions fell on the requests that finished, from the engine's
/// per-request histogram, which the established tool does not read (vLLM 0.30's run: 22
/// over 16 of its 32 requests).
const LABELLED: &[(&str, &str)] = &[
    ("T10", ", the server's count over the readings' window"),
    ("T1", ", over "),
    ("T1", ", of the "),
    ("T1", "; "),
];

/// The tripwires the established tool has. Ours adds T18 (failures left out) and T20
/// (request lengths as advertised), which it never prints: a script that keeps the
/// tripwires it knows sees exactly its verdicts.
const ESTABLISHED: std::ops::RangeInclusive<u64> = 1..=15;

fn established(result: &Value) -> bool {
    result["tripwire"]
        .as_str()
        .and_then(|t| t.strip_prefix('T'))
        .and_then(|n| n.parse::<u64>().ok())
        .is_some_and(|n| ESTABLISHED.contains(&n))
}

/// Our `--json` (contract version 2) adds `not_checked` entries, after every verdict,
/// for tripwires whose input was missing; the established tool leaves them out. A script
/// that keeps the statuses it knows sees exactly its verdicts, which is what is compared.
fn verdicts_only(results: &[Value], name: &str) -> Vec<Value> {
    let first_not_checked = results
        .iter()
        .position(|r| r["status"] == "not_checked")
        .unwrap_or(results.len());
    assert!(
        results[first_not_checked..]
            .iter()
            .all(|r| r["status"] == "not_checked"),
        "{name}: a verdict follows a not_checked entry"
    );
    results[..first_not_checked]
        .iter()
        .filter(|r| established(r))
        .cloned()
        .collect()
}

/// Ours equals theirs, or (for the cases in [`UNCUT`]) continues it.
fn same_text(name: &str, theirs: &Value, ours: &Value) -> bool {
    match (theirs.as_str(), ours.as_str()) {
        (Some(t), Some(o)) if UNCUT.contains(&name) => o.starts_with(t),
        _ => theirs == ours,
    }
}

fn close(a: f64, b: f64, key: &str) -> bool {
    let tolerance = if key.contains("rate") {
        0.01
    } else {
        1e-6 * a.abs().max(b.abs()).max(1.0)
    };
    (a - b).abs() <= tolerance
}

fn same_value(expected: &Value, ours: &Value, key: &str) -> bool {
    match (expected, ours) {
        (Value::Number(a), Value::Number(b)) => {
            close(a.as_f64().unwrap(), b.as_f64().unwrap(), key)
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y, key))
        }
        (Value::Object(a), Value::Object(b)) => a
            .iter()
            .all(|(k, v)| b.get(k).is_some_and(|w| same_value(v, w, k))),
        _ => expected == ours,
    }
}

/// The exit status the rule gives for a set of statuses.
fn rule_exit(results: &[Value]) -> i32 {
    let has = |s: &str| results.iter().any(|r| r["status"] == s);
    if has("fail") {
        1
    } else if has("unknown") {
        2
    } else {
        0
    }
}

fn check_case(name: &str) {
    let dir = recorded();
    let path = expected_dir(&dir).join(format!("{name}.json"));
    let expected: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let args_line = expected["args"].as_str().unwrap();
    let mut args: Vec<&str> = args_line.split_whitespace().collect();
    args.push("--json");
    // The report page goes to a temporary folder, never into the recordings.
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("report.html");
    let page = page.to_str().unwrap().to_owned();
    if args_line.starts_with("report") {
        args.extend(["-o", &page]);
    }
    let out = inferlint(&dir, &args);
    no_panic(&out);
    let ours = verdicts_only(&json_results(&out), name);
    let theirs = expected["results"].as_array().unwrap();
    assert_eq!(
        ours.iter()
            .map(|r| format!("{} {}", r["tripwire"], r["status"]))
            .collect::<Vec<_>>(),
        theirs
            .iter()
            .map(|r| {
                let status = DELIBERATE_STATUS
                    .iter()
                    .find(|(case, tw, was, _)| {
                        *case == name && r["tripwire"] == *tw && r["status"] == *was
                    })
                    .map_or_else(|| r["status"].clone(), |(_, _, _, ours)| Value::from(*ours));
                format!("{} {}", r["tripwire"], status)
            })
            .collect::<Vec<_>>(),
        "{name}: verdicts differ\nstderr: {}",
        stderr(&out)
    );
    for (o, t) in ours.iter().zip(theirs) {
        let tripwire = t["tripwire"].as_str().unwrap();
        let deliberate = DELIBERATE
            .iter()
            .find(|(case, tw, _)| *case == name && *tw == tripwire);
        match deliberate {
            Some((_, _, message)) => assert_eq!(o["message"], *message, "{name} {tripwire}"),
            None => {
                let labelled = o["message"]
                    .as_str()
                    .zip(t["message"].as_str())
                    .is_some_and(|(o, t)| {
                        o.starts_with(t)
                            && LABELLED.iter().any(|(tw, continued)| {
                                *tw == tripwire && o[t.len()..].starts_with(continued)
                            })
                    });
                assert!(
                    labelled || same_text(name, &t["message"], &o["message"]),
                    "{name} {tripwire}: message differs\n ours: {}\ntheirs: {}",
                    o["message"],
                    t["message"]
                );
                for (key, value) in t["evidence"].as_object().unwrap() {
                    let mine = o["evidence"].get(key).unwrap_or(&Value::Null);
                    assert!(
                        same_value(value, mine, key)
                            || (key == "line" && same_text(name, value, mine)),
                        "{name} {tripwire}: evidence {key} is {mine}, expected {value}"
                    );
                }
            }
        }
    }
    let code = out.status.code().unwrap();
    let every_verdict: Vec<Value> = json_results(&out)
        .into_iter()
        .filter(|r| r["status"] != "not_checked")
        .collect();
    assert_eq!(
        code,
        rule_exit(&every_verdict),
        "{name}: exit status breaks the rule"
    );
    if !args_line.starts_with("report") {
        // The established `report` always exits 0; ours follows the rule above.
        assert_eq!(
            code,
            expected["exit_code"].as_i64().unwrap() as i32,
            "{name}: exit status"
        );
    }
}

/// Every expected file has a test below: a new file without one fails here.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn every_expected_case_has_a_test() {
    let dir = recorded();
    let this = include_str!("expected.rs");
    for entry in std::fs::read_dir(expected_dir(&dir)).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let case = name.trim_end_matches(".json");
        assert!(
            this.contains(&format!(
                "case!({}, \"{case}\")",
                case.replace(['-', '.'], "_")
            )),
            "no test for {case}"
        );
    }
    let _ = Path::new("");
}

macro_rules! case {
    ($fn:ident, $name:literal) => {
        #[test]
        #[cfg_attr(
            not(recorded),
            ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
        )]
        fn $fn() {
            check_case($name);
        }
    };
}

case!(vllm_0_28_blocks, "vllm-0.28-blocks");
case!(vllm_0_28_cudagraphs_eager, "vllm-0.28-cudagraphs-eager");
case!(vllm_0_28_fail_accelerator, "vllm-0.28-fail-accelerator");
case!(vllm_0_28_fail_cccl, "vllm-0.28-fail-cccl");
case!(vllm_0_28_fp8_triton, "vllm-0.28-fp8-triton");
case!(vllm_0_28_ladder, "vllm-0.28-ladder");
case!(vllm_0_28_live, "vllm-0.28-live");
case!(vllm_0_28_pool_levels, "vllm-0.28-pool-levels");
case!(vllm_0_28_preempted_silently, "vllm-0.28-preempted-silently");
case!(vllm_0_28_preempted, "vllm-0.28-preempted");
case!(vllm_0_28_rate, "vllm-0.28-rate");
case!(vllm_0_28_restart, "vllm-0.28-restart");
case!(vllm_0_28_spec_backend, "vllm-0.28-spec-backend");
case!(vllm_0_28_xray, "vllm-0.28-xray");
case!(vllm_0_30_fail_cccl, "vllm-0.30-fail-cccl");
case!(vllm_0_30_fail_cudart, "vllm-0.30-fail-cudart");
case!(vllm_0_30_fail_ptx, "vllm-0.30-fail-ptx");
case!(vllm_0_30_live, "vllm-0.30-live");
case!(sglang_0_5_capped, "sglang-0.5-capped");
case!(sglang_0_5_fail_mamba, "sglang-0.5-fail-mamba");
case!(sglang_0_5_fail_mem, "sglang-0.5-fail-mem");
case!(sglang_0_5_live, "sglang-0.5-live");
case!(sglang_0_5_qwen3_8b, "sglang-0.5-qwen3-8b");
case!(trtllm_1_3_fail_cuda_home, "trtllm-1.3-fail-cuda-home");
case!(trtllm_1_3_fail_w4a16, "trtllm-1.3-fail-w4a16");
case!(trtllm_1_3_no_iter_stats, "trtllm-1.3-no-iter-stats");
case!(trtllm_1_3_qwen3_8b, "trtllm-1.3-qwen3-8b");
case!(trtllm_1_3_two_starts, "trtllm-1.3-two-starts");
