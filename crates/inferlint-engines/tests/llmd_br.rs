//! llm-d's Benchmark Report read as a load tool's result: the format package's own
//! example (fixtures/llmd-br), the partial reports inference-perf 0.7.0 wrote itself
//! (fixtures/loadtools/inference-perf), a run's stages joined, and the files refused.
//! Every expected value is argued from the file's own fields.

// The helpers below are test code too: a fixture that does not read is the test's failure.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use inferlint_core::model::client::LoadTool;
use inferlint_engines::loadtools;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn partial(case: &str) -> PathBuf {
    fixtures()
        .join("loadtools/inference-perf")
        .join(case)
        .join("inference-perf/inference-perf.partial.stage_0.yaml")
}

fn close(a: Option<f64>, b: f64, what: &str) {
    let a = a.unwrap_or_else(|| panic!("{what}: none"));
    assert!(
        (a - b).abs() <= 1e-9 * b.abs().max(1.0),
        "{what}: {a} != {b}"
    );
}

#[test]
fn the_packages_example_reads_as_its_values_say() {
    let path = fixtures().join("llmd-br/br_v0_2_example.yaml");
    let a = loadtools::read_result(&path).unwrap();
    assert_eq!(a.tool, LoadTool::LlmdBr);
    // `version: '0.2.1'`.
    assert_eq!(a.tool_version.as_deref(), Some("0.2.1"));
    // requests: total 500, failures 0, no `incomplete`: 500 came back.
    assert_eq!(a.sent, Some(500));
    assert_eq!(a.failed, Some(0));
    assert_eq!(a.incomplete, None);
    assert_eq!(a.completed, Some(500));
    // input_length and output_length: mean 2262.448 tokens (`units: count`) over the 500
    // that came back: 1,131,224 tokens each.
    assert_eq!(a.total_input_tokens, Some(1_131_224));
    assert_eq!(a.total_output_tokens, Some(1_131_224));
    // run.time.duration `PT49.97206788184121S`, not the 16 min 21 s between its start and
    // end: the format's own field for the run's length.
    close(a.duration, 49.972_067_881_841_21, "duration");
    // throughput.output_token_rate.mean, tokens/s.
    close(a.output_throughput, 2262.448, "output throughput");
    // latency.time_to_first_token in `s`: mean, p50, p99 as milliseconds.
    close(a.mean_ttft_ms, 36.857_823_412_865_4, "mean TTFT");
    close(a.median_ttft_ms, 36.229_309_393_092_99, "median TTFT");
    close(a.p99_ttft_ms, 50.294_897_216_372_18, "p99 TTFT");
    // latency.time_per_output_token in `s/token`.
    close(a.mean_tpot_ms, 36.857_823_412_865_4, "mean TPOT");
    // scenario.load.standardized: `rate_qps: 10`, `concurrency: .inf` (no limit).
    assert_eq!(a.request_rate, Some(10.0));
    assert_eq!(a.max_concurrency, None);
    // input_seq_len is fixed at 2148 but a shared prefix is given (whether 2148 holds it
    // is the tool's matter); output_seq_len is gaussian: no length asked for is a number.
    assert_eq!(a.advertised.input_tokens, None);
    assert_eq!(a.advertised.output_tokens, None);
    // The stack's one inference_engine serves Qwen/Qwen3-0.6B (the router names none).
    assert_eq!(a.identity.model.as_deref(), Some("Qwen/Qwen3-0.6B"));
    // run.time.start 2025-11-05T18:00:42Z and end 18:17:03Z.
    assert_eq!(a.identity.start_unix_s, Some(1_762_365_642.0));
    assert_eq!(a.identity.end_unix_s, Some(1_762_366_623.0));
    // The format keeps no request's record.
    assert!(a.requests.is_empty());
    assert_eq!(a.parts, 1);
    assert!(
        a.notes.iter().any(|n| n.contains("inference-perf 0.3.0")),
        "{:?}",
        a.notes
    );
}

#[test]
fn inference_perfs_own_partial_counts_as_its_lifecycle_report() {
    // The same stage, read from the tool's native stage report and from the partial it
    // wrote beside it: 32 sent, 6 answered 500, 26 of 32 tokens each way.
    let dir = fixtures().join("loadtools/inference-perf/some-errored/inference-perf");
    let native = loadtools::read_result(&dir.join("stage_0_lifecycle_metrics.json")).unwrap();
    let br = loadtools::read_result(&partial("some-errored")).unwrap();
    assert_eq!(br.tool, LoadTool::LlmdBr);
    assert_eq!(
        (br.sent, br.completed, br.failed),
        (Some(32), Some(26), Some(6))
    );
    assert_eq!(
        (br.sent, br.completed, br.failed),
        (native.sent, native.completed, native.failed)
    );
    assert_eq!(br.total_input_tokens, Some(832));
    assert_eq!(br.total_input_tokens, native.total_input_tokens);
    assert_eq!(br.total_output_tokens, native.total_output_tokens);
    // run.time.duration `PT4.007S`.
    close(br.duration, 4.007, "duration");
}

#[test]
fn a_folder_reads_the_tools_own_files_before_its_partial() {
    // The partial lies beside the lifecycle reports, which keep each request: those.
    let run = fixtures().join("loadtools/inference-perf/some-errored");
    let found = loadtools::find_result(&run).unwrap().unwrap();
    assert_eq!(
        found.file_name().unwrap(),
        "summary_lifecycle_metrics.json",
        "{found:?}"
    );
}

/// The two real partials (two runs' stage 0) in one folder, the second given the first's
/// `run.eid` when `one_run`.
fn pair(one_run: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let first = std::fs::read_to_string(partial("concurrent-8")).unwrap();
    let mut second = std::fs::read_to_string(partial("some-errored")).unwrap();
    if one_run {
        second = second.replace(
            "inference-perf-experiment-9cc894c4",
            "inference-perf-experiment-64f4d377",
        );
        second = second.replace("inference-perf-stage-0-", "inference-perf-stage-1-");
    }
    std::fs::write(
        dir.path().join("inference-perf.partial.stage_0.yaml"),
        first,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("inference-perf.partial.stage_1.yaml"),
        second,
    )
    .unwrap();
    dir
}

#[test]
fn the_stages_of_one_run_join_into_one_account() {
    let dir = pair(true);
    // One of the two is the folder's result: reading it reads the other.
    let found = loadtools::find_results(dir.path()).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    let a = loadtools::read_result(&found[0]).unwrap();
    // Stage 0: 32 sent, none failed, 32 + 32 tokens each; stage 1: 32 sent, 6 failed,
    // 26 × 32 tokens.
    assert_eq!(
        (a.sent, a.completed, a.failed),
        (Some(64), Some(58), Some(6))
    );
    assert_eq!(a.total_input_tokens, Some(32 * 32 + 26 * 32));
    assert_eq!(a.total_output_tokens, Some(32 * 32 + 26 * 32));
    // PT4.009S + PT4.007S, and the output over that time.
    close(a.duration, 8.016, "duration");
    close(a.output_throughput, 1856.0 / 8.016, "output throughput");
    // No statistic of the whole is made from the stages'.
    assert_eq!(
        (a.mean_ttft_ms, a.median_ttft_ms, a.mean_tpot_ms),
        (None, None, None)
    );
    assert_eq!(a.parts, 2);
    // Stage 0 starts 2026-12-01T02:58:22.374357Z, stage 1 ends 02:58:34.779387Z.
    let day = 1_796_083_200.0; // 2026-12-01T00:00:00Z
    close(
        a.identity.start_unix_s,
        day + 2.0 * 3600.0 + 58.0 * 60.0 + 22.374_357,
        "start",
    );
    close(
        a.identity.end_unix_s,
        day + 2.0 * 3600.0 + 58.0 * 60.0 + 34.779_387,
        "end",
    );
}

#[test]
fn reports_of_different_runs_are_refused_naming_their_ids() {
    let dir = pair(false);
    let found = loadtools::find_results(dir.path()).unwrap();
    let err = loadtools::read_result(&found[0]).unwrap_err().to_string();
    assert!(!err.contains('\n'), "{err}");
    for id in [
        "run.eid inference-perf-experiment-64f4d377",
        "run.eid inference-perf-experiment-9cc894c4",
    ] {
        assert!(err.contains(id), "{err}");
    }
}

#[test]
fn cut_off_and_foreign_reports_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, String, &str); 5] = [
        // JSON cut inside the request counts.
        (
            "cut.json",
            r#"{"version": "0.2.1", "run": {"uid": "x"}, "results": {"request_performance": {"aggregate": {"requests": {"total": 3"#.into(),
            "cut off",
        ),
        // The example cut before its results: still YAML, but no request is counted.
        (
            "cut.yaml",
            std::fs::read_to_string(fixtures().join("llmd-br/br_v0_2_example.yaml"))
                .unwrap()
                .lines()
                .take(30)
                .collect::<Vec<_>>()
                .join("\n"),
            "no 'results.request_performance.aggregate.requests.total'",
        ),
        // The older line of the format.
        (
            "old.yaml",
            "version: '0.1'\nrun:\n  uid: x\nresults: {}\n".into(),
            "version 0.1 (this reader reads 0.2 and 0.2.1)",
        ),
        // The 0.1 line as it is shaped: no `run`, its figures under `metrics`.
        (
            "v01.yaml",
            "version: '0.1'\nscenario:\n  load: {}\nmetrics:\n  requests: {}\n".into(),
            "version 0.1 (this reader reads 0.2 and 0.2.1)",
        ),
        // Something else in YAML.
        (
            "config.yaml",
            "load:\n  type: constant\nserver:\n  type: vllm\n".into(),
            "not a load tool result",
        ),
    ];
    for (name, text, expected) in cases {
        let sub = dir.path().join(name.replace('.', "-"));
        std::fs::create_dir(&sub).unwrap();
        let path = sub.join(name);
        std::fs::write(&path, text).unwrap();
        let err = loadtools::read_result(&path).unwrap_err().to_string();
        assert!(err.contains(expected), "{name}: {err}");
        assert!(err.contains(name), "{name}: {err}");
        assert!(!err.contains('\n'), "{name}: {err}");
    }
}
