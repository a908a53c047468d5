//! The real vLLM (0.32, the CPU build) in the loop: the fixtures of
//! `fixtures/real/vllm-0.32-cpu/`, made by `scripts/real-vllm/` (docs/real-engine.md), each
//! checked for the verdicts that what moved on the server implies. Every expected value is
//! argued from the case's MADE.md (vLLM's own counters after minus before, the pool its boot
//! log announced) and the flags the server and load were given, never from what inferlint
//! printed. One test drives the real engine itself, where its venv exists.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{
    copy_tree, fixtures, inferlint, inferlint_env, json_results, no_panic, stderr, stdout,
};

fn real(case: &str) -> PathBuf {
    fixtures().join("real/vllm-0.32-cpu").join(case)
}

/// `report --json` of a copy of the case (report writes its page beside the files).
fn report(case: &str) -> (Vec<Value>, i32) {
    report_copy(&real(case))
}

/// `report --json` of a copy of the run folder `from`.
fn report_copy(from: &Path) -> (Vec<Value>, i32) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(from.file_name().unwrap());
    copy_tree(from, &dir);
    report_in(&dir)
}

/// `report --json` of the run folder `dir`, its page written beside the files.
fn report_in(dir: &Path) -> (Vec<Value>, i32) {
    let page = dir.join("report.html");
    let out = inferlint(
        dir.parent().unwrap(),
        &[
            "report",
            "--json",
            "-o",
            page.to_str().unwrap(),
            dir.to_str().unwrap(),
        ],
    );
    no_panic(&out);
    (json_results(&out), out.status.code().unwrap_or(-1))
}

/// The report page of a copy of the case.
fn report_page(case: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(case);
    copy_tree(&real(case), &dir);
    let page = dir.join("report.html");
    let out = inferlint(
        tmp.path(),
        &[
            "report",
            "-o",
            page.to_str().unwrap(),
            dir.to_str().unwrap(),
        ],
    );
    no_panic(&out);
    std::fs::read_to_string(&page).unwrap()
}

fn verdict<'a>(results: &'a [Value], tripwire: &str) -> &'a Value {
    results
        .iter()
        .find(|r| r["tripwire"] == tripwire)
        .unwrap_or_else(|| panic!("no {tripwire} among {results:#?}"))
}

fn status(results: &[Value], tripwire: &str) -> String {
    verdict(results, tripwire)["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn message(results: &[Value], tripwire: &str) -> String {
    verdict(results, tripwire)["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Asserts each (tripwire, status) pair, naming every mismatch at once.
fn expect(case: &str, results: &[Value], wanted: &[(&str, &str)]) {
    let wrong: Vec<String> = wanted
        .iter()
        .filter(|(t, s)| status(results, t) != *s)
        .map(|(t, s)| {
            format!(
                "{t}: wanted {s}, got {} ({})",
                status(results, t),
                message(results, t)
            )
        })
        .collect();
    assert!(wrong.is_empty(), "{case}:\n{}", wrong.join("\n"));
}

/// The venv the real-engine test runs, from `INFERLINT_REAL_VLLM` (scripts/real-vllm/setup.sh
/// prints it), with the model beside it as setup.sh makes it.
fn real_vllm() -> (PathBuf, PathBuf) {
    let venv = PathBuf::from(std::env::var_os("INFERLINT_REAL_VLLM").expect(
        "INFERLINT_REAL_VLLM is not set: this test runs the real vLLM venv (scripts/real-vllm/setup.sh makes it)",
    ));
    let model = std::env::var_os("REAL_VLLM_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| venv.parent().unwrap_or(&venv).join("model"));
    (venv, model)
}

/// Every `pid=N` the boot log names: vLLM prefixes each line with its process
/// (`(APIServer pid=7957)`, `(EngineCore pid=8114)`, `(Worker pid=9088)`).
fn pids_in_log(log: &str) -> Vec<u32> {
    let mut pids: Vec<u32> = log
        .split("pid=")
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// A process of vLLM's is still alive under `pid`: it exists and its command line names
/// vLLM or its venv (a pid reused since by another program is not one).
fn vllm_alive(pid: u32, venv: &Path) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let cmdline = String::from_utf8_lossy(&cmdline);
    cmdline.contains("vllm") || cmdline.contains(&*venv.to_string_lossy())
}

/// `xray` in `tmp` around the real server (scripts/real-vllm/serve.sh with the venv and
/// model given) and the healthy load (`vllm bench serve`: 32 random prompts of 32
/// tokens, 32 out with --ignore-eos, 8 at once, seed 0), its run folder `out`, with
/// `extra` among xray's flags.
fn xray_on_the_real_engine(
    venv: &Path,
    model: &Path,
    tmp: &Path,
    out: &Path,
    extra: &[&str],
) -> std::process::Output {
    let port = crate::common::free_port();
    let url = format!("http://127.0.0.1:{port}");
    let serve = fixtures()
        .join("../scripts/real-vllm/serve.sh")
        .canonicalize()
        .unwrap();
    let serve_cmd = format!("bash {}", serve.display());
    let vllm = venv.join("bin/vllm");
    let result_dir = out.to_str().unwrap().to_owned();
    let port_text = port.to_string();
    let model_text = model.to_str().unwrap().to_owned();
    let home = venv.parent().unwrap().to_str().unwrap().to_owned();
    let mut args = vec!["xray", "-o", &result_dir, "--no-gpu", "--engine", "vllm"];
    args.extend_from_slice(extra);
    args.extend([
        "--url",
        &url,
        "--serve",
        &serve_cmd,
        "--",
        vllm.to_str().unwrap(),
        "bench",
        "serve",
        "--backend",
        "openai",
        "--base-url",
        &url,
        "--model",
        "tiny-llama",
        "--tokenizer",
        &model_text,
        "--dataset-name",
        "random",
        "--random-input-len",
        "32",
        "--random-output-len",
        "32",
        "--ignore-eos",
        "--num-prompts",
        "32",
        "--max-concurrency",
        "8",
        "--seed",
        "0",
        "--disable-tqdm",
    ]);
    inferlint_env(
        tmp,
        &args,
        &[
            ("PORT", &port_text),
            ("REAL_VLLM_HOME", &home),
            ("REAL_VLLM_VENV", venv.to_str().unwrap()),
            ("REAL_VLLM_MODEL", &model_text),
            ("HF_HUB_OFFLINE", "1"),
            ("HF_DATASETS_OFFLINE", "1"),
            ("TRANSFORMERS_OFFLINE", "1"),
        ],
    )
}

#[test]
#[cfg_attr(
    not(real_vllm),
    ignore = "needs INFERLINT_REAL_VLLM, the real vLLM venv (scripts/real-vllm/setup.sh makes it)"
)]
fn xray_drives_the_real_engine_and_leaves_nothing_running() {
    let (venv, model) = real_vllm();
    assert!(
        venv.join("bin/vllm").is_file(),
        "INFERLINT_REAL_VLLM={} has no bin/vllm",
        venv.display()
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let run = xray_on_the_real_engine(&venv, &model, tmp.path(), &out, &[]);
    no_panic(&run);
    let log = std::fs::read_to_string(out.join("boot.log")).unwrap_or_default();
    let pids = pids_in_log(&log);
    // The API server, the engine core and its worker at least: three processes, each named.
    assert!(
        pids.len() >= 3,
        "the boot log names {pids:?}, not the server's three processes\n{}",
        stderr(&run)
    );
    let alive: Vec<u32> = pids.into_iter().filter(|p| vllm_alive(*p, &venv)).collect();
    assert!(
        alive.is_empty(),
        "xray left the server's processes {alive:?} running"
    );
    // What the healthy case argues (healthy_runs_pass_everything_they_can_judge), plus
    // xray's own: the card check does not apply with --no-gpu, the server xray started
    // answered its probe (T7) and was its own (T13).
    let text = std::fs::read_to_string(out.join("results.json")).unwrap_or_else(|e| {
        panic!(
            "xray wrote no results.json ({e})\n{}\n{}",
            stdout(&run),
            stderr(&run)
        )
    });
    let results: Vec<Value> = match serde_json::from_str(&text) {
        Ok(Value::Array(a)) => a,
        _ => panic!("results.json is not a JSON array:\n{text}"),
    };
    expect(
        "xray against the real engine",
        &results,
        &HEALTHY
            .iter()
            .copied()
            .chain([("T7", "pass"), ("T13", "pass")])
            .collect::<Vec<_>>(),
    );
    assert_eq!(
        run.status.code(),
        Some(0),
        "every check passed or did not apply, so xray exits 0\n{}",
        stdout(&run)
    );
}

/// A healthy run's verdicts: the server counted every request the load tool sent as
/// finished (`vllm:request_success_total` moved by the tool's count, none `abort` or
/// `error`), preempted none (`vllm:num_preemptions_total` did not move), served no prompt
/// token from its prefix cache (`vllm:prefix_cache_hits_total` did not move), counted the
/// lengths asked for (prompt and generation tokens over requests), and its pool of
/// 1,048,576 tokens was never near full with 8 requests of 64 tokens. The boot log has no
/// failure, no block-size override and no `--attention-backend` asked for; the usage
/// gauge is a whole number of the 8,191 usable blocks (num_gpu_blocks 8192 less the null
/// block); xray's probe answered before the before reading, so the server was warm; no
/// NVIDIA GPU was used.
const HEALTHY: &[(&str, &str)] = &[
    ("T12", "pass"),
    ("T5", "pass"),
    ("T6", "pass"),
    ("T1", "pass"),
    ("T10", "pass"),
    ("T15", "pass"),
    ("T18", "pass"),
    ("T20", "pass"),
    ("T16", "pass"),
    ("T14", "pass"),
    ("T9", "pass"),
    ("T8", "pass"),
    ("T17", "pass"),
    ("T19", "pass"),
    ("T21", "not_applicable"),
];

/// HEALTHY with some verdicts replaced.
fn healthy_but(changed: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    HEALTHY
        .iter()
        .map(|(t, s)| {
            changed
                .iter()
                .find(|(c, _)| c == t)
                .copied()
                .unwrap_or((*t, *s))
        })
        .collect()
}

#[test]
fn healthy_runs_pass_everything_they_can_judge() {
    // vllm bench serve: 32 of 32 finished, 1,024 prompt and 1,024 generation tokens, no
    // preemption, no prefix hit (MADE.md).
    let (results, code) = report("healthy-vllm-bench");
    expect("healthy-vllm-bench", &results, HEALTHY);
    assert_eq!(code, 0, "report exits 0 on a run it could check");
    // The counts T15 compares are the server's own: 32 finished, 1,024 generated.
    assert!(
        message(&results, "T15").contains("32 requests, 1,024 output tokens"),
        "{}",
        message(&results, "T15")
    );
}

#[test]
fn the_cpu_builds_boot_lines_are_read() {
    // `CPU KV cache size: 1,048,576 tokens, Maximum concurrency for 512 tokens per
    // request: 2048.00x` and `Explicitly set (1.0/23.54) GiB for KV cache on node 0.`:
    // VLLM_CPU_KVCACHE_SPACE=1 gave 1 GiB at 1 KiB a token.
    let tmp = tempfile::tempdir().unwrap();
    let log = real("healthy-vllm-bench").join("boot.log");
    let out = inferlint(tmp.path(), &["boot-facts", log.to_str().unwrap()]);
    no_panic(&out);
    let text = stdout(&out);
    let fact = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_owned()))
            .unwrap_or_else(|| panic!("no {name} in\n{text}"))
    };
    assert_eq!(fact("kv_pool_tokens"), "1048576");
    assert_eq!(fact("max_concurrency_request_len"), "512");
    assert_eq!(fact("available_kv_cache_gib"), "1.0");
    assert_eq!(fact("version"), "0.32.0");
    // 0.32 is tested now: no note that it is not.
    assert!(
        !stderr(&out).contains("not a tested version"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_running_cap_below_the_concurrency_fails_t8() {
    // --max-num-seqs 2 under a load of 8: the server ran 2 at once and queued the rest;
    // every request still finished (32 of 32), so only T8 fails. The load did keep 8
    // open (the server's waiting gauge held the rest), so T17 is the server's, not the
    // client's, and passes.
    let (results, _) = report("running-cap");
    expect("running-cap", &results, &healthy_but(&[("T8", "fail")]));
    assert!(
        message(&results, "T8").contains("--max-num-seqs 2"),
        "{}",
        message(&results, "T8")
    );
}

#[test]
fn a_shared_prefix_warns_t16() {
    // Every prompt opens with the same 256 tokens (block size 128: two whole blocks), so
    // the 31 prompts after the first find them cached: vllm:prefix_cache_hits_total
    // moved by 31 x 256 = 7,936 of the 9,216 prompt tokens (MADE.md), 86.1%.
    let (results, _) = report("shared-prefix");
    expect("shared-prefix", &results, &healthy_but(&[("T16", "warn")]));
    assert!(
        message(&results, "T16").contains("7,936 of 9,216"),
        "{}",
        message(&results, "T16")
    );
}

/// The same run's cached tokens by tier: vLLM 0.32 counts the 7,936 hits under
/// `prompt_tokens_cached_by_source{source="device"}` (its own prefix cache; the server had
/// no offload tier or connector) and the 9,216 - 7,936 = 1,280 prompt tokens it prefilled
/// under `prompt_tokens_by_source{source="local_compute"}`. Started with
/// `--kv-offloading-size 4` (the boot log's non-default args, edited to say so) the same
/// counters mean the host tier served none of it: T16 says so beside its warm-cache
/// warning.
#[test]
fn the_shared_prefix_came_from_the_device_cache_and_no_offload_tier() {
    let (results, _) = report("shared-prefix");
    let t16 = verdict(&results, "T16");
    let evidence = &t16["evidence"];
    assert_eq!(evidence["device_tokens"], 7_936.0, "{t16:#}");
    assert_eq!(evidence["offload_tokens"], 0.0, "{t16:#}");
    assert_eq!(evidence["peer_tokens"], 0.0, "{t16:#}");
    assert_eq!(evidence["computed_tokens"], 1_280.0, "{t16:#}");
    assert!(!message(&results, "T16").contains("offload"), "{t16:#}");

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("shared-prefix");
    copy_tree(&real("shared-prefix"), &dir);
    let boot = dir.join("boot.log");
    let text = std::fs::read_to_string(&boot).unwrap();
    let edited = text.replacen(
        "non-default args: {",
        "non-default args: {'kv_offloading_size': 4.0, ",
        1,
    );
    assert_ne!(edited, text);
    std::fs::write(&boot, edited).unwrap();
    let (results, _) = report_in(&dir);
    assert_eq!(status(&results, "T16"), "warn");
    let said = message(&results, "T16");
    assert!(
        said.contains(
            "an offload tier was configured (kv_offloading_size 4.0, as the boot log shows) and served none of the run's prompt tokens (device cache 7,936, host or disk offload 0, peer or external connector 0, computed 1,280)"
        ),
        "{said}"
    );
}

/// The argued decode instances of fixtures/argued/vllm-0.32-disagg (the shared-prefix run
/// with a NIXL `kv_transfer_config` in its boot log; MADE.md argues each change). Left as
/// the real run counted (0 by `external_kv_transfer`, 1,280 `local_compute`), a
/// `kv_consumer` that decoded 32 tokens a request moved no KV: T28 fails. With the 1,280
/// counted as a decode instance counts them at admission, all by transfer and none
/// computed, 100% came by transfer: T28 passes, and T16's split counts the 1,280 as tier
/// p2p.
#[test]
fn a_decode_instance_that_moved_no_kv_fails_t28_and_one_that_did_passes() {
    let argued = |case: &str| fixtures().join("argued/vllm-0.32-disagg").join(case);
    let (results, code) = report_copy(&argued("never-transferred"));
    assert_eq!(status(&results, "T28"), "fail");
    assert_eq!(code, 1);
    let t28 = verdict(&results, "T28");
    assert_eq!(t28["evidence"]["transferred_tokens"], 0.0, "{t28:#}");
    assert_eq!(t28["evidence"]["computed_tokens"], 1_280.0, "{t28:#}");
    assert_eq!(t28["evidence"]["role"], "kv_consumer", "{t28:#}");

    let (results, _) = report_copy(&argued("transferred"));
    assert_eq!(
        status(&results, "T28"),
        "pass",
        "{}",
        message(&results, "T28")
    );
    assert!(
        message(&results, "T28").starts_with(
            "disaggregated as declared (NixlConnector, kv_both): 100.0% of the prompt tokens not in the instance's own cache came by transfer (1,280 by transfer, 0 prefilled here, 7,936 from its own prefix cache)"
        ),
        "{}",
        message(&results, "T28")
    );
    let t16 = verdict(&results, "T16");
    assert_eq!(t16["evidence"]["peer_tokens"], 1_280.0, "{t16:#}");
    assert_eq!(t16["evidence"]["device_tokens"], 7_936.0, "{t16:#}");
}

#[test]
fn requests_too_long_for_the_model_fail_t18() {
    // Prompts of 200 to 600 tokens with 16 to 48 to generate against --max-model-len
    // 512: bench.json's own errors are 8 x "Bad Request" (vLLM refuses a prompt and
    // answer that cannot fit), the server counted 24 finished, none aborted. T15 agrees
    // (24 and 24); T18 fails for the 8; T20 warns: the server counted 364.3 prompt tokens
    // per served request (8,744 / 24), 0.91 of the 400 advertised, because the refused
    // ones were the longest.
    let (results, _) = report("too-long-refused");
    expect(
        "too-long-refused",
        &results,
        &healthy_but(&[("T18", "fail"), ("T20", "warn")]),
    );
    assert!(
        message(&results, "T18").contains("8 of 32 requests failed"),
        "{}",
        message(&results, "T18")
    );
}

#[test]
fn a_client_starved_of_cpu_fails_t17() {
    // GuideLLM on 2 busy cores: its own result says its concurrency averaged 7.58 of the
    // 8 streams (guidellm.json, request_concurrency.successful.mean) and it warned that
    // data generation held it back, while the server had nothing waiting. Everything
    // else is the healthy run's.
    let (results, _) = report("healthy-guidellm");
    expect(
        "healthy-guidellm",
        &results,
        &healthy_but(&[("T17", "fail")]),
    );
    assert!(
        message(&results, "T17").contains("the shortfall is the client's"),
        "{}",
        message(&results, "T17")
    );
}

#[test]
fn a_kv_cache_too_small_preempts_and_the_advice_names_what_sizes_it() {
    // --kv-cache-memory-bytes 786432: 768 tokens, 6 blocks of 128 (vllm:cache_config_info
    // block_size="128", num_gpu_blocks="6"), 5 usable beside the null block. 8 requests
    // of 32 + 224 tokens hold 1 block when they start and 2 at full length, so 5 start
    // and 2 fit to the end: vllm:num_preemptions_total moved by 11 (MADE.md). T1 fails
    // on the 11, T8 on a peak of 5 of the 8 asked, T9 warns that the ceiling fell as the
    // requests grew, and every request still finished (16 of 16).
    let (results, _) = report("kv-too-small");
    expect(
        "kv-too-small",
        &results,
        &healthy_but(&[("T1", "fail"), ("T8", "fail"), ("T9", "warn")]),
    );
    assert!(
        message(&results, "T1").starts_with("11 preemptions"),
        "{}",
        message(&results, "T1")
    );
    assert!(
        message(&results, "T14")
            .starts_with("gauge denominator is 5 = num_gpu_blocks (6) - 1 null block"),
        "{}",
        message(&results, "T14")
    );
    // The advice must be one this server can follow: its cache was sized outright by
    // --kv-cache-memory-bytes (the boot log's non-default args), which makes
    // --gpu-memory-utilization ignored, and its blocks hold 128 tokens, not the GPU
    // build's 16. 786432 bytes bought 6 blocks, 131072 a block; 8 requests at full
    // length need 16 usable blocks, 17 with the null block: 2228224 bytes.
    for t in ["T1", "T8"] {
        let advice = verdict(&results, t)["advice"].to_string();
        assert!(
            advice.contains("--kv-cache-memory-bytes` from 786432 to 2228224"),
            "{t}: {advice}"
        );
        assert!(
            !advice.contains("--gpu-memory-utilization"),
            "{t}: {advice}"
        );
    }
    let t8 = verdict(&results, "T8")["advice"].to_string();
    assert!(t8.contains("5 usable blocks of 128 tokens"), "{t8}");
    assert!(t8.contains("2 at full length (2 blocks each)"), "{t8}");
    // The page states the same block size as the advice, not the GPU build's default.
    let page = report_page("kv-too-small");
    assert!(
        page.contains("128 tokens (the server&#39;s cache info)")
            || page.contains("128 tokens (the server's cache info)"),
        "no 128-token block on the page"
    );
    assert!(
        !page.contains("16 tokens (default)"),
        "the page names the GPU default"
    );
}

#[test]
fn aiperfs_warm_up_is_counted_and_its_starved_client_fails_t17() {
    // AIPerf sent 2 warm-up requests before its 32: the server finished 34 and generated
    // 1,088 tokens (MADE.md), 32 x 32 timed plus 2 x 32 untimed, so T15 agrees with the
    // warm-up named. On 2 busy cores the client fell below 8 open requests for part of
    // its sending time while the server had nothing waiting: T17 is the client's.
    let (results, _) = report("healthy-aiperf");
    expect("healthy-aiperf", &results, &healthy_but(&[("T17", "fail")]));
    assert!(
        message(&results, "T15").contains("plus 2 untimed requests"),
        "{}",
        message(&results, "T15")
    );
}

#[test]
fn a_server_killed_and_restarted_mid_run_is_never_a_pass_of_its_counters() {
    // The server was SIGKILLed 25 s into a paced load and started again on its port: the
    // counters restarted from zero (the after reading's `_created` stamps are the second
    // boot's), the load tool's 100 requests sent while it was down failed to connect and
    // 20 finished. Every check built on the counters' difference cannot tell (T10, T15,
    // T16) and T1 fails on the restart itself; T18 fails for the 100 and names the error
    // Python raised, not the first line of its traceback; T20 compares what the load tool
    // counted with what it asked (the server's counts span two boots) and passes.
    let (results, _) = report("restart-mid-run");
    expect(
        "restart-mid-run",
        &results,
        &healthy_but(&[
            ("T1", "fail"),
            ("T10", "unknown"),
            ("T15", "unknown"),
            ("T16", "unknown"),
            ("T18", "fail"),
        ]),
    );
    assert!(
        message(&results, "T15").starts_with("server restarted between snapshots"),
        "{}",
        message(&results, "T15")
    );
    let t18 = message(&results, "T18");
    assert!(t18.starts_with("100 of 120 requests failed"), "{t18}");
    assert!(
        t18.contains("ClientConnectorError: Cannot connect to host"),
        "{t18}"
    );
    assert!(!t18.contains("Traceback"), "{t18}");
    // T20 says nothing of a restart "the snapshots do not show": they show it.
    assert!(
        !message(&results, "T20").contains("do not show"),
        "{}",
        message(&results, "T20")
    );
}

#[test]
fn a_fleet_whose_idle_recorder_missed_the_busy_moments_fails_t22_by_its_counters() {
    // Two servers on 2 cores: the loaded one (--max-num-seqs 2, 8 at once) queued, but
    // the idle one's recorder missed most of those slots (its series holds a gap record
    // of 11 slots missed). The one moment compared had it idle, the rest are unknown:
    // the recordings cannot tell. The replicas' own counters can: the loaded one
    // finished all 32 requests (MADE.md), the idle one none.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fleet");
    copy_tree(&real("fleet-one-idle"), &dir);
    let out = inferlint(tmp.path(), &["report", "--json", dir.to_str().unwrap()]);
    no_panic(&out);
    let results = json_results(&out);
    let t22: Vec<&Value> = results.iter().filter(|r| r["tripwire"] == "T22").collect();
    assert_eq!(t22.len(), 1, "{results:#?}");
    assert_eq!(t22[0]["status"], "fail", "{}", t22[0]["message"]);
    assert_eq!(t22[0]["evidence"]["basis"], "counters");
    assert_eq!(t22[0]["evidence"]["busy_finished"], 32.0);
    assert_eq!(t22[0]["evidence"]["idle_finished"], 0.0);
    assert!(
        t22[0]["evidence"]["busy_moments_not_compared"].as_u64() > Some(2),
        "{}",
        t22[0]["evidence"]
    );
}

#[test]
fn answers_that_stop_at_end_of_sequence_fail_t20() {
    // The server's generation config made one token id in sixteen a stop token and the
    // load asked for 64 tokens without ignore_eos (load.log's settings: custom_output_len
    // =64, ignore_eos=False): every request finished with finished_reason="stop" (32 of
    // 32) and the server generated 589 tokens, 18.4 a request, 0.29 of the 64 asked.
    // vllm bench serve counted the same, so T15 agrees; T20 fails on the length.
    let (results, _) = report("stops-early");
    for (t, s) in [
        ("T15", "pass"),
        ("T18", "pass"),
        ("T20", "fail"),
        ("T1", "pass"),
        ("T16", "pass"),
    ] {
        assert_eq!(status(&results, t), s, "{t}: {}", message(&results, t));
    }
    let t20 = message(&results, "T20");
    assert!(t20.contains("asked for 64"), "{t20}");
    assert!(t20.contains("end-of-sequence"), "{t20}");
    // T8: the whole load took 1.1 s and the recorder saw it on 4 busy samples 0.25 s
    // apart, the most running or waiting among them 7, while bench.json's own send and
    // end times hold 8 requests open for more than two of those intervals: the samples
    // fell between the short requests, and T8 says it cannot tell rather than fail.
    assert_eq!(
        status(&results, "T8"),
        "unknown",
        "{}",
        message(&results, "T8")
    );
    let t8 = message(&results, "T8");
    assert!(t8.contains("8 requests open at once"), "{t8}");
    assert!(t8.contains("showed more than 7 running or waiting"), "{t8}");
}

/// A result file's per-request list, read straight from `vllm bench serve`'s JSON.
fn bench_list(case: &str, key: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(real(case).join("bench.json")).unwrap();
    let bench: Value = serde_json::from_str(&text).unwrap();
    bench[key].as_array().unwrap().clone()
}

fn evidence_f64(results: &[Value], tripwire: &str, key: &str) -> f64 {
    verdict(results, tripwire)["evidence"][key]
        .as_f64()
        .unwrap_or_else(|| panic!("{tripwire} has no {key}: {results:#?}"))
}

/// `xray --otlp --kv-events` on a normal run (traced-healthy, MADE.md): 32 random prompts
/// of 224 tokens, 32 generated each (ignore_eos), 8 at once.
/// - vllm bench serve sends request `i` as `X-Request-Id: PREFIX{i}` and vLLM names its
///   span `cmpl-PREFIX{i}-0`, one span per finished request: all 32 join, by id.
/// - The server generated 32 x 32 = 1,024 tokens, as the tool counted from its usage.
/// - Each request of 256 tokens fills floor(255 / 128) = 1 block of the CPU build's 128;
///   random prompts share none, so the prefix cache stores 32 blocks and vLLM publishes
///   each: 32 stored, every batch from 0 on received.
#[test]
fn traced_runs_join_every_request_by_id_and_their_kv_stream_is_whole() {
    let case = "traced-healthy";
    let (results, code) = report(case);
    expect(
        case,
        &results,
        &[
            ("T23", "pass"),
            ("T24", "pass"),
            ("T25", "pass"),
            ("T26", "pass"),
        ],
    );
    assert_eq!(code, 0);
    for t in ["T24", "T25"] {
        assert_eq!(evidence_f64(&results, t, "joined"), 32.0, "{t}");
        assert_eq!(evidence_f64(&results, t, "requests"), 32.0, "{t}");
    }
    assert_eq!(evidence_f64(&results, "T25", "tool_counted_tokens"), 1024.0);
    assert_eq!(
        evidence_f64(&results, "T25", "server_generated_tokens"),
        1024.0
    );
    assert_eq!(evidence_f64(&results, "T26", "stored_blocks"), 32.0);
    assert_eq!(evidence_f64(&results, "T26", "missed"), 0.0);
    assert_eq!(evidence_f64(&results, "T26", "first_seq"), 0.0);
    let page = report_page(case);
    assert!(page.contains("32 of 32 requests joined with the server's records (by id)"));
    // The lane splits each joined request into its phases, and the KV lane is drawn.
    for class in ["r-front", "r-prefill", "r-decode"] {
        assert!(page.contains(&format!("class=\"{class}\"")), "{class}");
    }
    assert!(page.contains("id=\"fig-kv-events\""));
    assert!(page.contains("32 blocks stored"));
}

/// An open loop its cap holds back (traced-rate-capped): 32 requests due at 20 a second,
/// at most 2 at once. vllm bench serve's own `queue_times` (how long each waited for a
/// slot after it was due) say how many waited past 50 ms and a tenth of their latency:
/// T23 counts the same requests and fails, as more than a tenth waited.
#[test]
fn an_open_loop_held_back_by_its_cap_fails_t23() {
    let case = "traced-rate-capped";
    let queue = bench_list(case, "queue_times");
    let latency = bench_list(case, "latencies");
    let waited = queue
        .iter()
        .zip(&latency)
        .filter(|(q, l)| {
            let (q, l) = (q.as_f64().unwrap(), l.as_f64().unwrap());
            q > 0.05f64.max(0.1 * l) + 0.002
        })
        .count();
    assert!(
        waited * 10 >= queue.len(),
        "{waited} of {} waited",
        queue.len()
    );
    let (results, _) = report(case);
    expect(
        case,
        &results,
        &[("T23", "fail"), ("T24", "pass"), ("T25", "pass")],
    );
    assert_eq!(evidence_f64(&results, "T23", "waited"), waited as f64);
    assert_eq!(verdict(&results, "T23")["evidence"]["loop"], "open");
}

/// A server streaming four tokens a chunk (`--stream-interval 4`, traced-stream-interval):
/// each answer of 32 tokens comes as its first token, then 31 in chunks of 4: 1 + 8 = 9
/// chunks, 288 over 32 requests, 1,024 / 288 = 3.56 tokens a chunk. vllm bench serve
/// counts the tokens from the usage (1,024, the server's count), its inter-token gaps are
/// the chunks': T25 warns. The chunk count is the tool's own (gaps plus one per request).
#[test]
fn a_server_streaming_four_tokens_a_chunk_warns_t25() {
    let case = "traced-stream-interval";
    let chunks: usize = bench_list(case, "itls")
        .iter()
        .map(|gaps| gaps.as_array().unwrap().len() + 1)
        .sum();
    assert_eq!(chunks, 32 * 9);
    let (results, _) = report(case);
    expect(case, &results, &[("T25", "warn"), ("T24", "pass")]);
    assert_eq!(evidence_f64(&results, "T25", "chunks"), chunks as f64);
    assert_eq!(evidence_f64(&results, "T25", "tool_counted_tokens"), 1024.0);
    assert_eq!(evidence_f64(&results, "T25", "tokens_per_chunk"), 3.56);
}

/// KV events asked of a server with prefix caching off (traced-no-prefix-cache): each
/// request of 256 tokens fills a block a cache would store, but vLLM's block pool
/// publishes only what it caches, and it caches nothing: no batch came (T26 fails, naming
/// the setting); the prefix cache served nothing, and T16 passes by the boot log's
/// `enable_prefix_caching: False` rather than Can't tell.
#[test]
fn kv_events_asked_of_a_server_without_prefix_caching_fail_t26() {
    let case = "traced-no-prefix-cache";
    let (results, code) = report(case);
    expect(case, &results, &[("T26", "fail"), ("T16", "pass")]);
    assert_eq!(code, 1);
    assert_eq!(evidence_f64(&results, "T26", "batches"), 0.0);
    assert!(message(&results, "T26").contains("enable_prefix_caching False"));
    assert!(message(&results, "T16").starts_with("the prefix cache was off"));
}

/// The kv-too-small case through `--kv-events` (traced-kv-too-small, MADE.md: 11
/// preemptions): the cache of 6 blocks evicts blocks as requests are preempted and
/// recomputed, and the stream says so: blocks removed, every batch received, at least one
/// block stored for each of the 16 requests of 256 tokens.
#[test]
fn the_kv_stream_of_a_cache_too_small_shows_its_evictions() {
    let case = "traced-kv-too-small";
    let (results, _) = report(case);
    expect(case, &results, &[("T1", "fail"), ("T26", "pass")]);
    assert!(message(&results, "T1").starts_with("11 preemptions"));
    assert!(evidence_f64(&results, "T26", "removed_blocks") >= 1.0);
    assert!(evidence_f64(&results, "T26", "stored_blocks") >= 16.0);
    assert_eq!(evidence_f64(&results, "T26", "missed"), 0.0);
}

/// N-gram speculation (3 tokens a draft, `--speculative-config`) on the real engine
/// (spec-random and spec-repetitive, MADE.md):
/// - spec-random: vllm bench serve's random prompts, which it sends with ignore_eos
///   although its printed settings say `ignore_eos=False`; the server counted 35 drafts,
///   104 draft tokens, none accepted: 0%, a mean accepted length of 1 + 0 / 35 = 1.0 of
///   the 4 a whole draft gives. T27 warns, naming the random prompts and ignore_eos.
/// - spec-repetitive: a custom dataset, greedy, without ignore_eos, 32 tokens asked (more
///   than a draft of 3): 300 drafts, 742 draft tokens, 542 accepted: 73%, 1 + 542 / 300 =
///   2.8 of 4, by position 248, 177 and 117 of 300 (83%, 59%, 39%). T27 passes. Its
///   bench.json holds 460 gaps over 32 answers (`itls`), so 492 chunks carried the 1,024
///   tokens: 2.1 a chunk, which the message says.
/// - healthy-vllm-bench: no speculative config, no draft counter: T27 does not apply.
#[test]
fn speculative_decoding_measured_on_random_prompts_warns_t27() {
    let (results, _) = report("spec-random");
    assert_eq!(
        status(&results, "T27"),
        "warn",
        "{}",
        message(&results, "T27")
    );
    let t27 = message(&results, "T27");
    assert!(
        t27.starts_with(
            "acceptance 0% (0 of 104 draft tokens), mean accepted length 1.0 of 4 (by position 0%, 0%, 0%), measured on random prompts with ignore_eos: "
        ),
        "{t27}"
    );
    let (results, _) = report("spec-repetitive");
    assert_eq!(
        status(&results, "T27"),
        "pass",
        "{}",
        message(&results, "T27")
    );
    assert_eq!(
        message(&results, "T27"),
        "acceptance 73% (542 of 742 draft tokens), mean accepted length 2.8 of 4 (by position 83%, 59%, 39%), measured on the custom dataset without ignore_eos (its answers arrived 2.1 tokens a chunk on average, so the load tool's inter-token gaps are between chunks)"
    );
    assert_eq!(evidence_f64(&results, "T27", "drafts"), 300.0);
    let (results, _) = report("healthy-vllm-bench");
    assert_eq!(
        status(&results, "T27"),
        "not_applicable",
        "{}",
        message(&results, "T27")
    );
}

/// `xray --steps` against the real engine, the step plugin installed in its venv
/// (scripts/real-vllm/steps.sh installs it): the plugin's lines account for what the
/// server's own counters moved between xray's readings. vLLM's Prometheus logger adds
/// each iteration's `num_generation_tokens`, `num_prompt_tokens` and `num_preempted_reqs`
/// to `vllm:generation_tokens_total`, `vllm:prompt_tokens_total` and
/// `vllm:num_preemptions_total` (vllm/v1/metrics/loggers.py, `record`); the plugin writes
/// the same three attributes of the same iteration stats as `gen`, `prompt` and `pre`
/// (docs/steps.md). So, with no step dropped (no gap line), the steps between the
/// readings (by the monotonic clock of the header and the snapshots) sum to each
/// counter's move exactly. The load is the healthy one: 32 requests of 32 tokens out
/// with --ignore-eos, so at least 1,024 generated tokens, and no preemption in a pool of
/// 8,191 blocks.
#[test]
#[cfg_attr(
    not(real_vllm),
    ignore = "needs INFERLINT_REAL_VLLM, the real vLLM venv (scripts/real-vllm/setup.sh makes it)"
)]
fn xray_steps_on_the_real_engine_sum_to_the_servers_counters() {
    let (venv, model) = real_vllm();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let run = xray_on_the_real_engine(&venv, &model, tmp.path(), &out, &["--steps"]);
    no_panic(&run);
    let log = std::fs::read_to_string(out.join("boot.log")).unwrap_or_default();
    let alive: Vec<u32> = pids_in_log(&log)
        .into_iter()
        .filter(|p| vllm_alive(*p, &venv))
        .collect();
    assert!(
        alive.is_empty(),
        "xray left the server's processes {alive:?} running"
    );
    let steps_text = std::fs::read_to_string(out.join("steps.jsonl")).unwrap_or_else(|e| {
        panic!(
            "no steps.jsonl ({e}): is the plugin installed in {}?\n{}",
            venv.display(),
            stderr(&run)
        )
    });
    let snapshot = |name: &str| {
        inferlint_engines::files::read_snapshot(&out.join(name))
            .unwrap_or_else(|e| panic!("{e}\n{}", stderr(&run)))
    };
    let (before, after) = (
        snapshot("before.snapshot.json"),
        snapshot("after.snapshot.json"),
    );
    let mut lines = steps_text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap());
    let header = lines.next().unwrap();
    let anchor = header["t_mono_ns"].as_i64().unwrap();
    let t_of = |s: &inferlint_core::model::Snapshot| (s.t_mono_ns.unwrap() - anchor) as f64 / 1e9;
    let (from, to) = (t_of(&before), t_of(&after));
    let (mut steps, mut gaps) = (0u64, 0u64);
    let (mut generated, mut prompt, mut preempted) = (0.0, 0.0, 0.0);
    for line in lines {
        let Some(t) = line["t"].as_f64() else {
            continue;
        };
        if t < from || t > to {
            continue;
        }
        if line.get("gap").is_some() {
            gaps += 1;
        }
        if line.get("fin").is_some() || line.get("end").is_some() || line.get("gap").is_some() {
            continue;
        }
        steps += 1;
        generated += line["gen"].as_f64().unwrap_or(0.0);
        prompt += line["prompt"].as_f64().unwrap_or(0.0);
        preempted += line["pre"].as_f64().unwrap_or(0.0);
    }
    let moved =
        |name: &str| after.metrics.total(name).unwrap() - before.metrics.total(name).unwrap();
    eprintln!(
        "steps between the readings: {steps}; gen {generated}, prompt {prompt}, pre {preempted}; counters moved: generation {}, prompt {}, preemptions {}",
        moved("vllm:generation_tokens_total"),
        moved("vllm:prompt_tokens_total"),
        moved("vllm:num_preemptions_total")
    );
    assert!(steps > 0, "no step between the readings");
    assert_eq!(gaps, 0, "the plugin dropped steps");
    assert!(generated >= 1024.0, "{generated} tokens generated");
    assert_eq!(generated, moved("vllm:generation_tokens_total"));
    assert_eq!(prompt, moved("vllm:prompt_tokens_total"));
    assert_eq!(preempted, moved("vllm:num_preemptions_total"));
    assert_eq!(preempted, 0.0);
    // And inferlint's own reading of the file says the same of T31.
    let results: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(
        status(&results, "T31"),
        "pass",
        "{}",
        message(&results, "T31")
    );
}

/// A process group started by a test (the real server: serve.sh, vLLM's API server, its
/// engine core), ended when dropped on every path: SIGTERM to the group, then SIGKILL
/// after 30 s.
struct Group(Option<std::process::Child>);

impl Group {
    fn spawn(command: &mut std::process::Command) -> Group {
        use std::os::unix::process::CommandExt;
        Group(Some(command.process_group(0).spawn().unwrap()))
    }

    fn signal(&self, signal: nix::sys::signal::Signal) {
        if let Some(child) = &self.0 {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
                signal,
            );
        }
    }

    /// Waits for the leader to end, at most `limit`; `None` past it.
    fn wait(&mut self, limit: std::time::Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + limit;
        let child = self.0.as_mut()?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                self.0 = None;
                return Some(status);
            }
            if std::time::Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        use nix::sys::signal::Signal;
        if self.0.is_none() {
            return;
        }
        self.signal(Signal::SIGTERM);
        if self.wait(std::time::Duration::from_secs(30)).is_none() {
            self.signal(Signal::SIGKILL);
            let _ = self.wait(std::time::Duration::from_secs(10));
        }
    }
}

/// `watch --steps` beside the real engine already running with the step plugin
/// (INFERLINT_STEPS=FILE, --enable-logging-iteration-details): one warm-up request runs
/// before the before reading and its steps are in FILE, then `watch --steps FILE` records
/// while `vllm bench serve` sends 16 requests of 32 tokens out (--ignore-eos), and the
/// after reading is taken once the watch ended. The copy holds FILE's header and only
/// the window's lines: the server is idle outside the load (vLLM calls the plugin only
/// with engine outputs), so the steps copied sum to exactly what
/// `vllm:generation_tokens_total` and `vllm:prompt_tokens_total` moved between the
/// readings (the logger adds the same iteration stats, loggers.py), at least 16 x 32
/// generated, and the warm-up's steps, had they been copied, would add to it. Nothing is
/// preempted in the pool of 8,191 blocks: T31 passes, its counter moved 0.
#[test]
#[cfg_attr(
    not(real_vllm),
    ignore = "needs INFERLINT_REAL_VLLM, the real vLLM venv (scripts/real-vllm/setup.sh makes it)"
)]
fn watch_steps_beside_the_real_engine_copies_the_window_only() {
    use std::time::{Duration, Instant};
    let (venv, model) = real_vllm();
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("server-steps.jsonl");
    let port = crate::common::free_port();
    let url = format!("http://127.0.0.1:{port}");
    let serve = fixtures()
        .join("../scripts/real-vllm/serve.sh")
        .canonicalize()
        .unwrap();
    let home = venv.parent().unwrap().to_owned();
    let server_log = std::fs::File::create(tmp.path().join("server.log")).unwrap();
    let _server = Group::spawn(
        std::process::Command::new("bash")
            .arg(&serve)
            .arg("--enable-logging-iteration-details")
            .env("PORT", port.to_string())
            .env("REAL_VLLM_HOME", &home)
            .env("REAL_VLLM_VENV", &venv)
            .env("REAL_VLLM_MODEL", &model)
            .env("INFERLINT_STEPS", &source)
            .env("HF_HUB_OFFLINE", "1")
            .env("TRANSFORMERS_OFFLINE", "1")
            .stdin(std::process::Stdio::null())
            .stdout(server_log.try_clone().unwrap())
            .stderr(server_log),
    );
    // Ready when /health answers 200: a CPU build boots in a minute or two.
    let deadline = Instant::now() + Duration::from_secs(600);
    while !inferlint_sim::load::fetch(
        "GET",
        &format!("{url}/health"),
        None,
        Duration::from_secs(5),
    )
    .is_ok_and(|r| r.status == 200)
    {
        assert!(
            Instant::now() < deadline,
            "the server never answered /health\n{}",
            std::fs::read_to_string(tmp.path().join("server.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let warm_up = inferlint_sim::load::fetch(
        "POST",
        &format!("{url}/v1/completions"),
        Some(
            r#"{"model": "tiny-llama", "prompt": "a b c d", "max_tokens": 8, "ignore_eos": true}"#,
        ),
        Duration::from_secs(120),
    )
    .unwrap();
    assert_eq!(warm_up.status, 200);
    let in_file_before = std::fs::read_to_string(&source).unwrap();
    assert!(
        in_file_before.lines().count() > 1,
        "the warm-up wrote no step: is the plugin installed in {}?",
        venv.display()
    );
    let before = inferlint(
        tmp.path(),
        &["snapshot", &url, "-o", "run/before.snapshot.json"],
    );
    assert_eq!(before.status.code(), Some(0), "{}", stderr(&before));
    let mut watch = Group::spawn(
        std::process::Command::new(env!("CARGO_BIN_EXE_inferlint"))
            .current_dir(tmp.path())
            .args([
                "watch",
                &url,
                "-o",
                "run/run.series.jsonl",
                "--interval",
                "0.25",
                "--no-gpu",
            ])
            .arg("--steps")
            .arg(&source)
            .stdin(std::process::Stdio::null())
            .stdout(std::fs::File::create(tmp.path().join("watch.out")).unwrap())
            .stderr(std::fs::File::create(tmp.path().join("watch.err")).unwrap()),
    );
    let series = tmp.path().join("run/run.series.jsonl");
    let samples = || {
        std::fs::read_to_string(&series)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"running\""))
            .count()
    };
    let wait_samples = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while samples() < n {
            assert!(
                Instant::now() < deadline,
                "the watch never took {n} samples"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_samples(2);
    let load = std::process::Command::new(venv.join("bin/vllm"))
        .args(["bench", "serve", "--backend", "openai", "--base-url", &url])
        .args(["--model", "tiny-llama", "--tokenizer"])
        .arg(&model)
        .args(["--dataset-name", "random", "--random-input-len", "32"])
        .args([
            "--random-output-len",
            "32",
            "--ignore-eos",
            "--num-prompts",
            "16",
        ])
        .args(["--max-concurrency", "4", "--seed", "0", "--disable-tqdm"])
        .env("HF_HUB_OFFLINE", "1")
        .env("TRANSFORMERS_OFFLINE", "1")
        .output()
        .unwrap();
    assert!(
        load.status.success(),
        "{}",
        String::from_utf8_lossy(&load.stderr)
    );
    let taken = samples();
    wait_samples(taken + 2);
    watch.signal(nix::sys::signal::Signal::SIGTERM);
    let ended = watch.wait(Duration::from_secs(30));
    let watch_err = std::fs::read_to_string(tmp.path().join("watch.err")).unwrap_or_default();
    assert_eq!(ended.and_then(|s| s.code()), Some(0), "{watch_err}");
    let after = inferlint(
        tmp.path(),
        &["snapshot", &url, "-o", "run/after.snapshot.json"],
    );
    assert_eq!(after.status.code(), Some(0), "{}", stderr(&after));

    let copy = std::fs::read_to_string(tmp.path().join("run/steps.jsonl")).unwrap();
    assert_eq!(
        copy.lines().next(),
        in_file_before.lines().next(),
        "the copy begins with FILE's header"
    );
    let mut generated = 0.0;
    let mut prompt = 0.0;
    let (mut steps, mut gaps) = (0u64, 0u64);
    for line in copy.lines().skip(1) {
        let v: Value = serde_json::from_str(line).unwrap();
        if v.get("gap").is_some() {
            gaps += 1;
        }
        if v.get("gen").is_some() {
            steps += 1;
            generated += v["gen"].as_f64().unwrap();
            prompt += v["prompt"].as_f64().unwrap_or(0.0);
        }
    }
    let reading = |name: &str| {
        inferlint_engines::files::read_snapshot(&tmp.path().join("run").join(name)).unwrap()
    };
    let (b, a) = (
        reading("before.snapshot.json"),
        reading("after.snapshot.json"),
    );
    let moved = |name: &str| a.metrics.total(name).unwrap() - b.metrics.total(name).unwrap();
    eprintln!(
        "copied {steps} steps: gen {generated}, prompt {prompt}; counters moved: generation {}, prompt {}; the file held {} lines before the watch",
        moved("vllm:generation_tokens_total"),
        moved("vllm:prompt_tokens_total"),
        in_file_before.lines().count()
    );
    assert_eq!(gaps, 0, "the plugin dropped steps");
    assert!(generated >= 512.0, "{generated}");
    assert_eq!(generated, moved("vllm:generation_tokens_total"));
    assert_eq!(prompt, moved("vllm:prompt_tokens_total"));
    let (results, _) = report_in(&tmp.path().join("run"));
    assert_eq!(
        status(&results, "T31"),
        "pass",
        "{}",
        message(&results, "T31")
    );
    assert_eq!(
        evidence_f64(&results, "T31", "counter_moved"),
        0.0,
        "{}",
        message(&results, "T31")
    );
}
