//! `report --llmd-br FILE`: the run written as llm-d's Benchmark Report 0.2.1, held to the
//! format's own JSON Schema (fixtures/llmd-br, from the `llmd-benchmark-report` 0.2.1
//! package) and read back as a load tool's result with the counts of the result file it
//! was made from.

use std::path::{Path, PathBuf};

use inferlint_core::model::client::LoadTool;
use inferlint_engines::loadtools;
use serde_json::Value;

use crate::common::{copy_tree, fixtures, inferlint, json_results, no_panic, stderr};

/// The format's schema, formats (`date-time`) asserted.
fn validator() -> jsonschema::Validator {
    let text =
        std::fs::read_to_string(fixtures().join("llmd-br/br_v0_2_json_schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&schema)
        .unwrap()
}

fn schema_errors(report: &Value) -> Vec<String> {
    validator()
        .iter_errors(report)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// `report RUN --json --llmd-br OUT/br.json`: its verdicts and the path written.
fn written(run: &Path, out: &Path) -> (Vec<Value>, PathBuf) {
    let br = out.join("br.json");
    let o = inferlint(
        out,
        &[
            "report",
            run.to_str().unwrap(),
            "--json",
            "-o",
            out.join("report.html").to_str().unwrap(),
            "--llmd-br",
            br.to_str().unwrap(),
        ],
    );
    no_panic(&o);
    let results = json_results(&o);
    assert!(br.is_file(), "no report written: {}", stderr(&o));
    (results, br)
}

/// The real healthy run copied to `out/run` with its result file replaced by the
/// Benchmark Report written from it: the run's verdicts as written, and the folder.
fn with_the_report_for_its_result(out: &Path) -> (Vec<Value>, PathBuf) {
    let run = fixtures().join("real/vllm-0.32-cpu/healthy-vllm-bench");
    let (results, br) = written(&run, out);
    let folder = out.join("run");
    copy_tree(&run, &folder);
    std::fs::remove_file(folder.join("bench.json")).unwrap();
    std::fs::copy(&br, folder.join("benchmark_report.json")).unwrap();
    (results, folder)
}

#[test]
fn the_schema_refuses_what_it_should() {
    // Not a vacuous validator: a report without `run.uid`, or with a count below 0, is
    // not one.
    assert!(
        !schema_errors(&serde_json::json!({"version": "0.2.1", "run": {}, "results": {}}))
            .is_empty()
    );
    assert!(!schema_errors(&serde_json::json!({
        "version": "0.2.1", "run": {"uid": "x"},
        "results": {"request_performance": {"aggregate": {"requests": {"total": -1}}}}
    }))
    .is_empty());
    // The package's own example is one (read from YAML, as the package writes it).
    let example = fixtures().join("llmd-br/br_v0_2_example.yaml");
    assert!(loadtools::read_result(&example).is_ok());
}

#[test]
fn a_real_run_written_holds_to_the_schema_and_reads_back_with_its_counts() {
    let run = fixtures().join("real/vllm-0.32-cpu/healthy-vllm-bench");
    let out = tempfile::tempdir().unwrap();
    let (verdicts, br) = written(&run, out.path());
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&br).unwrap()).unwrap();
    let errors = schema_errors(&report);
    assert!(errors.is_empty(), "{errors:#?}");
    // The verdicts go where the schema admits keys of its own, as --json gives them.
    let carried = &report["results"]["observability"]["inferlint"]["verdicts"];
    assert_eq!(carried.as_array().map(Vec::len), Some(verdicts.len()));
    for (c, v) in carried.as_array().unwrap().iter().zip(&verdicts) {
        assert_eq!(
            (&c["tripwire"], &c["status"]),
            (&v["tripwire"], &v["status"])
        );
    }
    // Read back as a load tool's result: the counts vllm bench serve wrote in bench.json
    // (`num_prompts` 32 sent, `completed` 32, `failed` 0, 1,024 prompt and 1,024 output
    // tokens, `max_concurrency` 8, `duration`).
    let original: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("bench.json")).unwrap()).unwrap();
    let back = loadtools::read_result(&br).unwrap();
    assert_eq!(back.tool, LoadTool::LlmdBr);
    assert_eq!(back.sent, original["num_prompts"].as_i64());
    assert_eq!(back.completed, original["completed"].as_i64());
    assert_eq!(back.failed, original["failed"].as_i64());
    assert_eq!(
        back.total_input_tokens,
        original["total_input_tokens"].as_i64()
    );
    assert_eq!(
        back.total_output_tokens,
        original["total_output_tokens"].as_i64()
    );
    assert_eq!(back.max_concurrency, original["max_concurrency"].as_i64());
    assert_eq!(back.duration, original["duration"].as_f64());
    assert_eq!(back.median_ttft_ms, original["median_ttft_ms"].as_f64());
}

#[test]
fn a_run_with_failures_and_wall_times_holds_to_the_schema() {
    // GuideLLM's result gives its benchmark's start and end as Unix times (written as
    // `date-time`) and counts 6 of its 32 requests errored.
    let run = fixtures().join("loadtools/guidellm/some-errored");
    let out = tempfile::tempdir().unwrap();
    let (_, br) = written(&run, out.path());
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&br).unwrap()).unwrap();
    let errors = schema_errors(&report);
    assert!(errors.is_empty(), "{errors:#?}");
    assert!(
        report["run"]["time"]["start"].is_string(),
        "{}",
        report["run"]
    );
    let original = loadtools::find_result(&run)
        .unwrap()
        .map(|p| loadtools::read_result(&p).unwrap())
        .unwrap();
    let back = loadtools::read_result(&br).unwrap();
    assert_eq!(
        (back.sent, back.completed, back.failed),
        (original.sent, original.completed, original.failed)
    );
    assert_eq!(back.failed, Some(6));
}

#[test]
fn report_reads_a_benchmark_report_beside_a_runs_readings() {
    // The real run's readings and boot log with its result replaced by the report written
    // from it: T15 holds the server's 32 finished requests (plus the untimed test request
    // vllm bench serve sent, which the console announced) to the report's 32.
    let out = tempfile::tempdir().unwrap();
    let (before, folder) = with_the_report_for_its_result(out.path());
    let o = inferlint(
        out.path(),
        &[
            "report",
            folder.to_str().unwrap(),
            "--json",
            "-o",
            out.path().join("again.html").to_str().unwrap(),
        ],
    );
    no_panic(&o);
    let after = json_results(&o);
    let t15 = |results: &[Value]| {
        results
            .iter()
            .find(|r| r["tripwire"] == "T15")
            .cloned()
            .unwrap()
    };
    let (was, is) = (t15(&before), t15(&after));
    assert_eq!(is["status"], was["status"], "{is}");
    assert_eq!(is["evidence"]["client_completed"], 32, "{is}");
    assert_eq!(
        is["evidence"]["client_completed"],
        was["evidence"]["client_completed"]
    );
}

#[test]
fn never_over_a_file_the_report_reads() {
    let run = fixtures().join("real/vllm-0.32-cpu/healthy-vllm-bench");
    let out = tempfile::tempdir().unwrap();
    let folder = out.path().join("run");
    copy_tree(&run, &folder);
    let target = folder.join("bench.json");
    let kept = std::fs::read(&target).unwrap();
    let o = inferlint(
        out.path(),
        &[
            "report",
            folder.to_str().unwrap(),
            "-o",
            out.path().join("r.html").to_str().unwrap(),
            "--llmd-br",
            target.to_str().unwrap(),
        ],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(64), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("which this command reads"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), kept);
    // Another file is replaced only with --force; an earlier report of ours always.
    let other = out.path().join("notes.json");
    std::fs::write(&other, "{}").unwrap();
    let page = out.path().join("r.html");
    let write = |extra: &[&str]| {
        let mut args = vec![
            "report",
            folder.to_str().unwrap(),
            "-o",
            page.to_str().unwrap(),
            "--llmd-br",
            other.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        inferlint(out.path(), &args)
    };
    let o = write(&[]);
    assert_eq!(o.status.code(), Some(64), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "{}");
    let o = write(&["--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = write(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn never_into_the_folder_of_a_report_read_as_the_runs() {
    // A report written beside the one read would be read as another stage next time.
    let out = tempfile::tempdir().unwrap();
    let (_, folder) = with_the_report_for_its_result(out.path());
    let o = inferlint(
        out.path(),
        &[
            "report",
            folder.to_str().unwrap(),
            "-o",
            out.path().join("r.html").to_str().unwrap(),
            "--llmd-br",
            folder.join("again.json").to_str().unwrap(),
        ],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(64), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("benchmark_report.json"),
        "{}",
        stderr(&o)
    );
    assert!(!folder.join("again.json").exists());
}

#[test]
fn the_packages_example_is_read_and_placed_by_the_model_it_names() {
    // The example's stack serves Qwen/Qwen3-0.6B (its inference_engine's model.name); the
    // real run's server serves tiny-llama: the gate sets the result aside by that name,
    // so it was read, not refused.
    let run = fixtures().join("real/vllm-0.32-cpu/healthy-vllm-bench");
    let example = fixtures().join("llmd-br/br_v0_2_example.yaml");
    let out = tempfile::tempdir().unwrap();
    let o = inferlint(
        out.path(),
        &[
            "report",
            run.to_str().unwrap(),
            "--json",
            "--bench-result",
            example.to_str().unwrap(),
            "-o",
            out.path().join("r.html").to_str().unwrap(),
        ],
    );
    no_panic(&o);
    let results = json_results(&o);
    let t15 = results.iter().find(|r| r["tripwire"] == "T15").unwrap();
    let message = t15["message"].as_str().unwrap();
    assert!(
        message.contains("names the model Qwen/Qwen3-0.6B"),
        "{message}"
    );
}
