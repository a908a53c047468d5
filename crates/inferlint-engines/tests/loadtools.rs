//! Every load tool's real result files (fixtures/loadtools, see docs/loadtools.md) read
//! into the client's account with the counts the tool wrote; cut-off, foreign and
//! misshapen files give a one-line error that names the file and, where the start of the
//! file shows it, the tool.

use std::path::{Path, PathBuf};

use inferlint_core::model::client::{
    ClientAccount, Keep, LoadTool, ReplayRecord, ReplayRecords, RequestClock,
};
use inferlint_engines::loadtools::{self, identify, Role};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/loadtools")
}

/// What one fixture's account must say.
struct Case {
    folder: &'static str,
    tool: LoadTool,
    version: Option<&'static str>,
    sent: Option<i64>,
    completed: i64,
    failed: Option<i64>,
    /// Prompt and output tokens of the completed requests.
    tokens: (i64, i64),
    /// Per-request records, and how many of them completed.
    records: (usize, usize),
    concurrency: Option<i64>,
    untimed: Option<u64>,
    clock: Option<RequestClock>,
    /// The failure reason the file gives, with its count.
    reason: Option<(&'static str, u64)>,
}

const CASES: &[Case] = &[
    Case {
        folder: "vllm/concurrent-16",
        tool: LoadTool::VllmBench,
        version: None,
        sent: Some(32),
        completed: 32,
        failed: Some(0),
        tokens: (1024, 1024),
        records: (0, 0),
        concurrency: Some(16),
        untimed: None,
        clock: None,
        reason: None,
    },
    Case {
        folder: "vllm/some-errored-detailed",
        tool: LoadTool::VllmBench,
        version: None,
        sent: Some(32),
        completed: 26,
        failed: Some(6),
        tokens: (832, 832),
        records: (32, 26),
        concurrency: Some(16),
        untimed: None,
        clock: Some(RequestClock::Monotonic),
        reason: Some(("Internal Server Error", 6)),
    },
    Case {
        folder: "vllm/all-failed-detailed",
        tool: LoadTool::VllmBench,
        version: None,
        sent: Some(32),
        completed: 0,
        failed: Some(32),
        tokens: (0, 0),
        records: (32, 0),
        concurrency: Some(16),
        untimed: None,
        clock: Some(RequestClock::Monotonic),
        reason: Some(("Internal Server Error", 32)),
    },
    Case {
        folder: "sglang/concurrent-16",
        tool: LoadTool::SglangBench,
        version: None,
        // SGLang's line holds no request count: its console says it.
        sent: None,
        completed: 32,
        failed: None,
        tokens: (1024, 1024),
        records: (0, 0),
        concurrency: Some(16),
        untimed: None,
        clock: None,
        reason: None,
    },
    Case {
        folder: "sglang/some-errored-details",
        tool: LoadTool::SglangBench,
        version: None,
        sent: Some(32),
        completed: 26,
        failed: Some(6),
        tokens: (832, 832),
        records: (32, 26),
        concurrency: Some(16),
        untimed: None,
        clock: None,
        reason: Some(("Internal Server Error", 6)),
    },
    Case {
        folder: "trtllm/some-errored-detailed",
        tool: LoadTool::TrtllmBench,
        version: None,
        sent: Some(32),
        completed: 26,
        failed: Some(6),
        tokens: (832, 832),
        records: (32, 26),
        concurrency: Some(8),
        untimed: None,
        clock: None,
        reason: Some(("Internal Server Error", 6)),
    },
    Case {
        folder: "guidellm/concurrent-8",
        tool: LoadTool::GuideLlm,
        version: Some("0.8.1"),
        sent: Some(32),
        completed: 32,
        failed: Some(0),
        tokens: (1024, 1024),
        records: (32, 32),
        concurrency: Some(8),
        untimed: None,
        clock: Some(RequestClock::Unix),
        reason: None,
    },
    Case {
        folder: "guidellm/some-errored",
        tool: LoadTool::GuideLlm,
        version: Some("0.8.1"),
        sent: Some(32),
        completed: 26,
        failed: Some(6),
        tokens: (832, 832),
        records: (32, 26),
        concurrency: Some(8),
        untimed: None,
        clock: Some(RequestClock::Unix),
        reason: Some(("500 Internal Server Error", 6)),
    },
    Case {
        folder: "guidellm/all-failed-404",
        tool: LoadTool::GuideLlm,
        version: Some("0.8.1"),
        sent: Some(32),
        completed: 0,
        failed: Some(32),
        tokens: (0, 0),
        records: (32, 0),
        concurrency: Some(8),
        untimed: None,
        clock: Some(RequestClock::Unix),
        reason: Some(("404 Not Found", 32)),
    },
    Case {
        folder: "aiperf/concurrency-8",
        tool: LoadTool::AiPerf,
        version: Some("0.13.0"),
        sent: Some(32),
        completed: 32,
        failed: Some(0),
        tokens: (1024, 1024),
        records: (32, 32),
        concurrency: Some(8),
        untimed: Some(2),
        clock: Some(RequestClock::Unix),
        reason: None,
    },
    Case {
        folder: "aiperf/some-errored",
        tool: LoadTool::AiPerf,
        version: Some("0.13.0"),
        sent: Some(32),
        completed: 26,
        failed: Some(6),
        tokens: (832, 832),
        records: (32, 26),
        concurrency: Some(8),
        untimed: Some(2),
        clock: Some(RequestClock::Unix),
        reason: Some(("500 Internal Server Error", 6)),
    },
    Case {
        folder: "inference-perf/concurrent-8",
        tool: LoadTool::InferencePerf,
        version: None,
        sent: Some(32),
        completed: 32,
        failed: Some(0),
        tokens: (1024, 1024),
        records: (32, 32),
        concurrency: Some(8),
        untimed: None,
        clock: Some(RequestClock::Monotonic),
        reason: None,
    },
    Case {
        folder: "inference-perf/some-errored",
        tool: LoadTool::InferencePerf,
        version: None,
        sent: Some(32),
        completed: 26,
        failed: Some(6),
        tokens: (832, 832),
        records: (32, 26),
        concurrency: Some(8),
        untimed: None,
        clock: Some(RequestClock::Monotonic),
        reason: Some(("500 - Internal Server Error", 6)),
    },
    Case {
        folder: "genai-perf/concurrency-8",
        tool: LoadTool::GenAiPerf,
        version: None,
        sent: Some(32),
        completed: 32,
        // Its summary counts no failure; every record came back.
        failed: Some(0),
        tokens: (1024, 1024),
        records: (32, 32),
        concurrency: Some(8),
        untimed: None,
        clock: Some(RequestClock::Unix),
        reason: None,
    },
    Case {
        folder: "llmperf/some-errored",
        tool: LoadTool::LlmPerf,
        version: Some("2023-08-31"),
        sent: Some(32),
        completed: 26,
        failed: Some(6),
        tokens: (832, 832),
        records: (32, 26),
        concurrency: Some(8),
        untimed: None,
        clock: None,
        reason: Some(("HTTP 500", 6)),
    },
    Case {
        folder: "llmperf/all-failed",
        tool: LoadTool::LlmPerf,
        version: Some("2023-08-31"),
        sent: Some(32),
        completed: 0,
        failed: Some(32),
        tokens: (0, 0),
        records: (32, 0),
        concurrency: Some(8),
        untimed: None,
        clock: None,
        reason: Some(("HTTP 500", 32)),
    },
];

fn read_folder(folder: &str) -> (PathBuf, ClientAccount) {
    let dir = fixtures().join(folder);
    let path = loadtools::find_result(&dir)
        .unwrap_or_else(|e| panic!("{folder}: {e}"))
        .unwrap_or_else(|| panic!("{folder}: no result found"));
    let account = loadtools::read_result(&path).unwrap_or_else(|e| panic!("{folder}: {e}"));
    (path, account)
}

#[test]
fn every_tools_real_files_read_with_the_counts_it_wrote() {
    for case in CASES {
        let (_, a) = read_folder(case.folder);
        let f = case.folder;
        assert_eq!(a.tool, case.tool, "{f}");
        assert_eq!(a.tool_version.as_deref(), case.version, "{f}");
        assert_eq!(a.sent, case.sent, "{f}: sent");
        assert_eq!(a.completed, Some(case.completed), "{f}: completed");
        assert_eq!(a.failed, case.failed, "{f}: failed");
        assert_eq!(
            (a.total_input_tokens, a.total_output_tokens),
            (Some(case.tokens.0), Some(case.tokens.1)),
            "{f}: tokens"
        );
        let completed = a.requests.iter().filter(|r| r.completed()).count();
        assert_eq!((a.requests.len(), completed), case.records, "{f}: records");
        assert_eq!(a.max_concurrency, case.concurrency, "{f}: concurrency");
        assert_eq!(a.span.untimed_requests, case.untimed, "{f}: untimed");
        assert_eq!(a.clock, case.clock, "{f}: clock");
        match case.reason {
            Some((reason, count)) => assert_eq!(
                a.failure_reasons
                    .iter()
                    .map(|r| (r.reason.as_str(), r.count))
                    .collect::<Vec<_>>(),
                [(reason, count)],
                "{f}: reasons"
            ),
            None => assert!(a.failure_reasons.is_empty(), "{f}: {:?}", a.failure_reasons),
        }
        assert!(
            a.duration.is_some_and(|d| d > 0.0) || case.completed == 0,
            "{f}: duration"
        );
        // A run with no completed request has no latency to report.
        if case.completed == 0 {
            assert_eq!((a.median_ttft_ms, a.p99_ttft_ms), (None, None), "{f}");
        } else {
            assert!(a.median_ttft_ms.is_some_and(|t| t > 0.0), "{f}: TTFT");
        }
    }
}

/// Read for the replay alone (`whatif`), every tool's file gives the account it gives
/// read whole, but for the records: each is what the replay reads of the whole record,
/// none is kept as a record, and no gap between tokens is held.
#[test]
fn every_tools_file_read_for_the_replay_gives_the_same_account() {
    let mut rows = 0;
    for case in CASES {
        let (path, whole) = read_folder(case.folder);
        let kept = loadtools::read_result_kept(&path, Keep::ForReplay)
            .unwrap_or_else(|e| panic!("{}: {e}", case.folder));
        let f = case.folder;
        assert!(
            kept.requests.is_empty() && kept.inter_token_ms.is_empty(),
            "{f}"
        );
        assert_eq!(kept.record_count(), whole.requests.len(), "{f}");
        let replayed: Vec<ReplayRecord> = whole
            .requests
            .iter()
            .filter_map(|r| ReplayRecord::of(r).ok())
            .collect();
        assert_eq!(kept.replay.rows, replayed, "{f}");
        rows += replayed.len();
        let mut same = kept.clone();
        same.keep = Keep::Records;
        same.replay = ReplayRecords::default();
        same.requests = whole.requests.clone();
        same.inter_token_ms = whole.inter_token_ms.clone();
        assert_eq!(same, whole, "{f}");
        assert_eq!(kept.records_span(), whole.records_span(), "{f}");
    }
    assert!(rows > 200, "{rows}");
}

/// Each record's times are the tool's own: sent before first token before end, each
/// completed one with a first token.
#[test]
fn records_keep_each_requests_times() {
    for case in CASES
        .iter()
        .filter(|c| c.clock.is_some() && c.completed > 0)
    {
        let (_, a) = read_folder(case.folder);
        for r in a.requests.iter().filter(|r| r.completed()) {
            let (Some(sent), Some(first), Some(end)) =
                (r.sent_s.get(), r.first_token_at(), r.end_at())
            else {
                panic!(
                    "{}: a completed record without its times: {r:?}",
                    case.folder
                );
            };
            assert!(sent <= first && first <= end, "{}: {r:?}", case.folder);
        }
    }
}

/// The per-request file and the summary read as one account whichever of the two is
/// named, and the tool's other output beside them (AIPerf's own scrape of /metrics, its
/// per-phase copies, inference-perf's stage reports) is never taken for the result.
#[test]
fn a_summary_or_its_records_give_one_account() {
    let pairs = [
        (
            "aiperf/some-errored/aiperf",
            "profile_export_aiperf.json",
            "profile_export.jsonl",
        ),
        (
            "inference-perf/some-errored/inference-perf",
            "summary_lifecycle_metrics.json",
            "per_request_lifecycle_metrics.json",
        ),
        (
            "llmperf/some-errored/result_outputs",
            "sim-model_32_32_summary.json",
            "sim-model_32_32_individual_responses.json",
        ),
        (
            "genai-perf/concurrency-8/artifacts/sim-model-openai-completions-concurrency8",
            "profile_export_genai_perf.json",
            "profile_export.json",
        ),
    ];
    for (dir, summary, records) in pairs {
        let dir = fixtures().join(dir);
        let a = loadtools::read_result(&dir.join(summary)).unwrap();
        let b = loadtools::read_result(&dir.join(records)).unwrap();
        assert_eq!(
            (a.sent, a.completed, a.failed, a.requests.len()),
            (b.sent, b.completed, b.failed, b.requests.len()),
            "{}",
            dir.display()
        );
    }
    let aiperf = fixtures().join("aiperf/some-errored/aiperf");
    for other in [
        "server_metrics_export.json",
        "inputs.json",
        "phase_manifest.json",
    ] {
        let head = std::fs::read(aiperf.join(other)).unwrap();
        assert_eq!(identify(&head), None, "{other}");
    }
    let found = loadtools::find_result(&fixtures().join("aiperf/some-errored")).unwrap();
    assert_eq!(found, Some(aiperf.join("profile_export_aiperf.json")));
    let stage = std::fs::read(
        fixtures()
            .join("inference-perf/some-errored/inference-perf/stage_0_lifecycle_metrics.json"),
    )
    .unwrap();
    assert_eq!(identify(&stage).map(|k| k.role), Some(Role::Stage));
}

/// A file cut off mid-write (a tool killed, a copy interrupted) is refused in one line
/// naming the file and, where its start shows it, the tool and version.
#[test]
fn a_cut_off_file_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    for case in CASES {
        let (path, _) = read_folder(case.folder);
        let bytes = std::fs::read(&path).unwrap();
        let cut = tmp.path().join(path.file_name().unwrap());
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
        let e = loadtools::read_result(&cut)
            .map(|a| format!("read as {a:?}"))
            .unwrap_err_or_message(case.folder);
        assert!(!e.contains('\n'), "{}: {e}", case.folder);
        assert!(
            e.contains(&cut.display().to_string()),
            "{}: {e}",
            case.folder
        );
        assert!(
            e.contains("cut off") || e.contains("bad JSON"),
            "{}: {e}",
            case.folder
        );
        if let Some(v) = case.version {
            assert!(e.contains(v), "{}: names the version: {e}", case.folder);
        }
        std::fs::remove_file(&cut).unwrap();
    }
}

/// JSON of something else, text, binary and empty files are no result.
#[test]
fn a_foreign_file_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8], &str); 5] = [
        (
            "other.json",
            br#"{"model": "m", "accuracy": 0.9}"#,
            "JSON with none of the fields of",
        ),
        ("empty.json", b"", "empty file"),
        ("text.json", b"Benchmarking complete\n", "not JSON"),
        ("binary.json", &[0xff, 0xfe, 0x00, 0x01], "not UTF-8"),
        ("list.json", b"[1, 2, 3]", "JSON with none of the fields of"),
    ];
    for (name, bytes, expected) in cases {
        let path = tmp.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let e = loadtools::read_result(&path).unwrap_err().to_string();
        assert!(e.contains(expected), "{name}: {e}");
        assert!(e.starts_with(&path.display().to_string()), "{name}: {e}");
        assert!(!e.contains('\n'), "{name}: {e}");
    }
}

/// A file that is a known tool's but in a shape its reader does not know (another
/// release, a hand edit) is an error naming the tool and its version, never read as a
/// run with nothing in it.
#[test]
fn a_known_tools_file_in_an_unknown_shape_names_the_tool() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"{"metadata": {"guidellm_version": "0.9.0"}, "benchmarks": [{"type_": "generative_benchmark", "metrics": {}}]}"#,
            "GuideLLM 0.9.0 result in a shape this reader does not understand",
        ),
        (
            r#"{"metadata": {"guidellm_version": "0.9.0"}, "runs": []}"#,
            "GuideLLM 0.9.0 result in a shape this reader does not understand: no 'benchmarks' list",
        ),
        (
            r#"{"schema_version": "2.0", "aiperf_version": "0.20.0", "request_throughput": {"avg": 1.0}}"#,
            "AIPerf 0.20.0 result in a shape this reader does not understand: no 'request_count.avg'",
        ),
        (
            r#"{"load_summary": {"sent": 32}, "successes": {}, "failures": {}}"#,
            "inference-perf (version not recorded) result in a shape this reader does not understand",
        ),
        (
            r#"{"version": "2025-01-01", "num_concurrent_requests": 8, "results_num_requests_started": 32}"#,
            "LLMPerf (result format 2025-01-01) result in a shape this reader does not understand",
        ),
        (
            r#"{"completed": 3, "total_output_tokens": 9, "errors": ["", ""], "ttfts": [0.1]}"#,
            "vllm bench serve (version not recorded) result in a shape this reader does not understand",
        ),
    ];
    for (i, (text, expected)) in cases.iter().enumerate() {
        let path = tmp.path().join(format!("r{i}.json"));
        std::fs::write(&path, text).unwrap();
        let e = loadtools::read_result(&path).unwrap_err().to_string();
        assert!(e.contains(expected), "{text}\n{e}");
    }
}

/// The fuzzing entry point: bytes in, an account or an error out, never a panic.
#[test]
fn bytes_read_without_a_file() {
    let bytes = std::fs::read(fixtures().join("vllm/some-errored-detailed/bench.json")).unwrap();
    let a = loadtools::read_bytes_named("bench.json", &bytes).unwrap();
    assert_eq!(a.failed, Some(6));
    for cut in [0, 1, 7, bytes.len() / 3] {
        assert!(loadtools::read_bytes_named("bench.json", &bytes[..cut]).is_err());
    }
}

/// A negative count of requests, whatever the tool, is refused in one line naming what it
/// counts: LLMPerf's `results_number_errors: -3` read as -3 failures, and T18 took it as
/// none.
#[test]
fn a_negative_count_is_refused_for_every_tool() {
    let dir = fixtures().join("llmperf/concurrent-8/result_outputs");
    let summary = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("_summary.json"))
        .unwrap();
    let text = std::fs::read_to_string(&summary).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["results_number_errors"] = serde_json::Value::from(-3);
    let e = loadtools::read_bytes_named("summary.json", value.to_string().as_bytes())
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with("result: its count of failed requests is -3, which no count can be"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "{e}");
}

trait ErrOrMessage {
    fn unwrap_err_or_message(self, what: &str) -> String;
}

impl ErrOrMessage for Result<String, inferlint_engines::files::FileError> {
    fn unwrap_err_or_message(self, what: &str) -> String {
        match self {
            Ok(read) => panic!("{what}: a cut-off file {read}"),
            Err(e) => e.to_string(),
        }
    }
}

/// Found by fuzzing (loadtool_result): a gap between two tokens too large for the `f32`
/// the account keeps it in (1e39 ms) was kept as infinite, and the profile's
/// inter-token percentiles read `inf`. Every reader that keeps gaps leaves such a gap out
/// and keeps the others.
#[test]
fn a_token_gap_too_large_to_keep_is_left_out_not_kept_as_infinite() {
    use serde_json::Value;
    /// A real file, and how to make one of its gaps 1e39 ms (its last text-carrying
    /// token time, or one gap itself, far in the future).
    struct Case {
        file: &'static str,
        edit: fn(&mut Value),
    }
    /// GenAI-Perf: the time of the request's last response that carries text.
    fn last_token(request: &mut Value, huge: f64) {
        let outputs = request["response_outputs"].as_array().unwrap();
        let at = outputs
            .iter()
            .rposition(|o| {
                let text = o["response"].as_str().unwrap();
                text.contains(r#""text":""#) && !text.contains(r#""text":"""#)
            })
            .unwrap();
        request["response_timestamps"][at] = huge.into();
    }
    let cases = [
        Case {
            file: "vllm/some-errored-detailed/bench.json",
            edit: |v| v["itls"][0][0] = 1e36.into(),
        },
        Case {
            file: "inference-perf/concurrent-8/inference-perf/per_request_lifecycle_metrics.json",
            edit: |v| {
                let times = &mut v[0]["info"]["response_metrics"]["output_token_times"];
                let last = times.as_array().unwrap().len() - 1;
                times[last] = 1e39.into();
            },
        },
        Case {
            file: "genai-perf/concurrency-8/artifacts/sim-model-openai-completions-concurrency8/profile_export.json",
            edit: |v| last_token(&mut v["experiments"][0]["requests"][0], 1e45),
        },
    ];
    let read = |name: &str, bytes: &[u8]| {
        loadtools::read_bytes_named(name, bytes)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .inter_token_ms
    };
    let mut checked: Vec<(String, Vec<u8>)> = cases
        .iter()
        .map(|case| {
            let path = fixtures().join(case.file);
            let mut json: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            (case.edit)(&mut json);
            (case.file.to_owned(), serde_json::to_vec(&json).unwrap())
        })
        .collect();
    // AIPerf's records are JSON lines: the first completed record's first gap.
    let records = "aiperf/concurrency-8/aiperf/profile_export.jsonl";
    let text = std::fs::read_to_string(fixtures().join(records)).unwrap();
    let key = r#""inter_chunk_latency":{"value":["#;
    let profiling = text.find(r#""benchmark_phase":"profiling""#).unwrap();
    let at = profiling + text[profiling..].find(key).unwrap() + key.len();
    let edited = format!("{}1e39,{}", &text[..at], &text[at..]);
    checked.push((records.to_owned(), edited.into_bytes()));
    for (file, bytes) in checked {
        let name = Path::new(&file).file_name().unwrap().to_str().unwrap();
        let original = read(name, &std::fs::read(fixtures().join(&file)).unwrap());
        let gaps = read(name, &bytes);
        let infinite: Vec<&f32> = gaps.iter().filter(|g| !g.is_finite()).collect();
        assert!(infinite.is_empty(), "{file}: {infinite:?}");
        // The one impossible gap is gone (replaced, or added, in the edit); the rest stay.
        let expected = if file.ends_with(".jsonl") {
            original.len()
        } else {
            original.len() - 1
        };
        assert_eq!(gaps.len(), expected, "{file}");
    }
}

/// What one fixture's result file says of the run it measured, as the tool wrote it.
struct Said {
    folder: &'static str,
    model: Option<&'static str>,
    /// A time of day without a zone, as seconds since 1970 read as UTC, and its step.
    saved: Option<(f64, f64)>,
    start: Option<f64>,
    end: Option<f64>,
    /// SGLang's `server_info`: model path, port, version.
    server: Option<(&'static str, u16, &'static str)>,
}

/// Each tool's file read for what ties it to its run. The numbers are the files' own:
/// `date -u -d '2026-12-01 02:42:26' +%s` is 1796092946 (vllm's `date` 20261201-024226);
/// 1796094040 is TensorRT-LLM's 20261201-030040; 1796093838 AIPerf's `end_time`
/// 2026-12-01T02:57:18.785443 to the second; GuideLLM's `start_time` and `end_time`,
/// perf_analyzer's `window_boundaries` (ns) and LLMPerf's `timestamp` are Unix times.
#[test]
fn each_tools_file_says_which_run_it_measured() {
    let cases = [
        Said {
            folder: "vllm/concurrent-16",
            model: Some("sim-model"),
            saved: Some((1_796_092_946.0, 1.0)),
            start: None,
            end: None,
            server: None,
        },
        Said {
            folder: "trtllm/concurrent-8-detailed",
            model: Some("sim-model"),
            saved: Some((1_796_094_040.0, 1.0)),
            start: None,
            end: None,
            server: None,
        },
        Said {
            folder: "sglang/concurrent-16",
            model: None,
            saved: None,
            start: None,
            end: None,
            server: Some(("/models/sim-model", 36331, "0.5.20")),
        },
        Said {
            folder: "guidellm/concurrent-8",
            model: Some("sim-model"),
            saved: None,
            start: Some(1_796_092_831.431_263_2),
            end: Some(1_796_092_833.964_271_8),
            server: None,
        },
        Said {
            folder: "aiperf/concurrency-8",
            model: Some("sim-model"),
            saved: Some((1_796_093_838.785_443, 1e-6)),
            start: None,
            end: None,
            server: None,
        },
        Said {
            folder: "inference-perf/concurrent-8",
            model: Some("sim-model"),
            saved: None,
            start: None,
            end: None,
            server: None,
        },
        Said {
            folder: "genai-perf/concurrency-8",
            model: Some("sim-model"),
            saved: None,
            start: Some(1_796_094_051.966_359_7),
            end: Some(1_796_094_054.483_353_2),
            server: None,
        },
        Said {
            folder: "llmperf/concurrent-8",
            model: Some("sim-model"),
            saved: None,
            start: None,
            end: Some(1_796_094_047.0),
            server: None,
        },
    ];
    let near = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() < 1e-5,
        (None, None) => true,
        _ => false,
    };
    for case in cases {
        let (_, a) = read_folder(case.folder);
        let (f, id) = (case.folder, &a.identity);
        assert_eq!(id.model.as_deref(), case.model, "{f}: model");
        assert!(
            near(id.saved_local_s, case.saved.map(|s| s.0)),
            "{f}: saved {:?}",
            id.saved_local_s
        );
        if let Some((_, step)) = case.saved {
            assert!((id.saved_resolution_s - step).abs() < 1e-12, "{f}: step");
        }
        assert!(
            near(id.start_unix_s, case.start),
            "{f}: start {:?}",
            id.start_unix_s
        );
        assert!(
            near(id.end_unix_s, case.end),
            "{f}: end {:?}",
            id.end_unix_s
        );
        let server = (
            id.server_model.as_deref(),
            id.server_port,
            id.server_version.as_deref(),
        );
        match case.server {
            Some((model, port, version)) => {
                assert_eq!(server, (Some(model), Some(port), Some(version)), "{f}")
            }
            None => assert_eq!(server, (None, None, None), "{f}"),
        }
    }
}

/// Every tool's own result file fits the run it was made in, and is placed by what it
/// says (its model, times or server), not let through for saying nothing: read as
/// `report DIR` reads the folder, the gate sets nothing aside.
#[test]
fn every_tools_own_result_fits_its_run() {
    use inferlint_core::judging::identity::{result_fit, Fit};
    use inferlint_engines::load::{self, EngineChoice};
    for case in CASES {
        let dir = fixtures().join(case.folder);
        let files = load::find_run(&dir).unwrap_or_else(|e| panic!("{}: {e}", case.folder));
        let mut choice = EngineChoice::new(None);
        let run = load::load_run(&mut choice, &files, None, None)
            .unwrap_or_else(|e| panic!("{}: {e}", case.folder));
        assert!(
            run.rejected.is_empty(),
            "{}: {:?}",
            case.folder,
            run.rejected
        );
        let (_, account) = run.bench.as_ref().expect("the result is kept");
        assert_eq!(
            result_fit(account, run.before.as_ref(), run.after.as_ref(), &run.boots),
            Fit::Fits,
            "{}",
            case.folder
        );
    }
}

/// A folder may hold several runs of one tool (`vllm bench serve` names each result after
/// its date): every one at the nearest depth is a candidate, in name order, xray's
/// `bench.json` first; another tool's or a deeper one is not; `find_result` is the first.
#[test]
fn every_result_of_the_one_tool_is_a_candidate() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let vllm = std::fs::read(fixtures().join("vllm/concurrent-16/bench.json")).unwrap();
    let later = dir.join("openai-infqps-concurrency16-sim-model-20261201-024226.json");
    let earlier = dir.join("openai-infqps-concurrency16-sim-model-20261130-024226.json");
    std::fs::write(&later, &vllm).unwrap();
    std::fs::write(&earlier, &vllm).unwrap();
    // A deeper result of the same tool, and a snapshot beside them, are no candidates.
    std::fs::create_dir(dir.join("old")).unwrap();
    std::fs::write(dir.join("old/bench.json"), &vllm).unwrap();
    std::fs::copy(
        fixtures().join("vllm/concurrent-16/before.snapshot.json"),
        dir.join("before.snapshot.json"),
    )
    .unwrap();
    let found = loadtools::find_results(dir).unwrap();
    assert_eq!(found, [earlier.clone(), later.clone()]);
    assert_eq!(loadtools::find_result(dir).unwrap(), Some(earlier.clone()));
    // xray's own name comes first, with the others of its tool beside it.
    let own = dir.join("bench.json");
    std::fs::write(&own, &vllm).unwrap();
    assert_eq!(
        loadtools::find_results(dir).unwrap(),
        [own.clone(), earlier.clone(), later.clone()]
    );
    // Another tool's result beside bench.json is no candidate for it.
    let guidellm = fixtures().join("guidellm/concurrent-8/guidellm.json");
    std::fs::copy(&guidellm, dir.join("guidellm.json")).unwrap();
    assert_eq!(loadtools::find_results(dir).unwrap(), [own, earlier, later]);
}

/// Entries of a tool's request lists that hold no request (a `0` where a record object
/// belongs) are counted, not kept: the real GuideLLM and GenAI-Perf files with 100,000
/// `0`s put at the head of their first request list read to the records they had, with a
/// note; a record kept for each would cost a hundred times its two bytes.
#[test]
fn list_entries_that_hold_no_request_are_counted_not_kept() {
    for (folder, list) in [
        ("guidellm/concurrent-8", "\"successful\": ["),
        ("genai-perf/concurrency-8", "\"requests\": ["),
    ] {
        let (path, account) = read_folder(folder);
        // The result and the files beside it (GenAI-Perf keeps its records in
        // profile_export.json beside its summary), with the first file that holds the
        // list flooded.
        let copy = tempfile::tempdir().unwrap();
        let mut flooded_one = false;
        for entry in std::fs::read_dir(path.parent().unwrap()).unwrap() {
            let from = entry.unwrap().path();
            let text = std::fs::read_to_string(&from).unwrap();
            let to = copy.path().join(from.file_name().unwrap());
            match text.find(list) {
                Some(at) if !flooded_one => {
                    flooded_one = true;
                    let at = at + list.len();
                    let text = format!("{}{}{}", &text[..at], "0, ".repeat(100_000), &text[at..]);
                    std::fs::write(to, text).unwrap();
                }
                _ => std::fs::write(to, text).unwrap(),
            }
        }
        assert!(flooded_one, "{folder}: no {list}");
        let flooded = loadtools::read_result(&copy.path().join(path.file_name().unwrap()))
            .unwrap_or_else(|e| panic!("{folder}: {e}"));
        assert_eq!(
            flooded.requests.len(),
            account.requests.len(),
            "{folder}: the records kept"
        );
        assert!(
            flooded
                .notes
                .iter()
                .any(|n| n.starts_with("100000 entries") && n.contains("hold no request")),
            "{folder}: {:?}",
            flooded.notes
        );
    }
}

/// The dataset each tool says it sent, as its file names it: GuideLLM's
/// `config.spec.data[].kind`, AIPerf's `input_config.datasets[].type`.
#[test]
fn each_tools_file_says_which_dataset_it_sent() {
    for (folder, dataset) in [
        ("guidellm/concurrent-8", "synthetic_text"),
        ("aiperf/some-errored", "synthetic"),
    ] {
        let (_, a) = read_folder(folder);
        assert_eq!(a.advertised.dataset.as_deref(), Some(dataset), "{folder}");
    }
}
