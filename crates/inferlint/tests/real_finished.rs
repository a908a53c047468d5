//! The step plugin's finished-request lines as the server's own record of each request,
//! on the real vLLM 0.32 CPU build (`fixtures/real/vllm-0.32-cpu/steps-healthy`, its
//! MADE.md): no spans were exported, so T24 and T25 set `vllm bench serve`'s rows
//! against those lines. Every expected value is read from the case's files (bench.json,
//! steps.jsonl, load.log), never from what inferlint printed.

use std::path::PathBuf;

use inferlint::{CheckResult, Report, Run, Status, Tripwire};

fn checked() -> (Run, Report) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real/vllm-0.32-cpu/steps-healthy");
    let run = Run::from_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let report = run.check();
    (run, report)
}

fn result(report: &Report, t: Tripwire) -> CheckResult {
    report
        .results()
        .iter()
        .chain(report.not_checked())
        .find(|r| r.tripwire() == t)
        .cloned()
        .unwrap_or_else(|| panic!("no verdict for {t}"))
}

/// steps.jsonl holds 41 finished lines: 9 of xray's probe (`cmpl-inferlint-probe-...`)
/// and 32 named `cmpl-bench-da69c59a-{i}-0`, the load's `--request-id-prefix
/// bench-da69c59a-` (load.log's arguments) with vLLM's `cmpl-` and `-0` around it: each
/// of bench.json's 32 rows joins its line by id, and the probe's are told apart.
///
/// T25: bench.json's `output_lens` sum to 1,024 (32 each, `--ignore-eos`), and the 32
/// lines' `out` sum to 1,024 (32 each; vLLM's counter also moved by 1,024): the tool
/// counted what the engine generated. Pass.
///
/// T24: the engine's TTFT of a request is its `queued` plus its `prefill` (the engine
/// core's queue entry to its first token, vLLM's stats.py); their median over the 32 is
/// 4.6 ms, bench.json's `ttfts` median 33.5 ms, and the median of each request's
/// difference 27.5 ms: above T24's 25 ms floor (10% of 4.6 ms is less), and positive, so
/// the tool's clock is not late: the 27.5 ms is the transport and the API server's work
/// around the engine (tokenising, the hop to the engine core and back), which no line
/// covers. Warn.
#[test]
fn the_finished_lines_stand_for_the_servers_record_of_each_request() {
    let (run, report) = checked();
    assert!(
        run.notes()
            .iter()
            .any(|n| n.contains("finished-request lines") && n.contains("steps.jsonl")),
        "{:?}",
        run.notes()
    );

    let t25 = result(&report, Tripwire::T25);
    assert_eq!(t25.status(), Status::Pass, "{}", t25.message());
    assert_eq!(t25.evidence_f64("joined"), Some(32.0), "{}", t25.message());
    assert_eq!(t25.evidence_f64("tool_counted_tokens"), Some(1024.0));
    assert_eq!(t25.evidence_f64("server_generated_tokens"), Some(1024.0));

    let t24 = result(&report, Tripwire::T24);
    assert_eq!(t24.status(), Status::Warn, "{}", t24.message());
    assert_eq!(t24.evidence_f64("joined"), Some(32.0), "{}", t24.message());
    // No line gives the API server's receipt: the engine's TTFT is named for where it
    // starts.
    assert!(
        t24.message().contains("from its engine's queue"),
        "{}",
        t24.message()
    );
    let ev = |k: &str| t24.evidence_f64(k).unwrap_or_else(|| panic!("no {k}"));
    assert!(
        (0.004..=0.005).contains(&ev("server_ttft_p50_s")),
        "{}",
        t24.message()
    );
    assert!(
        (0.033..=0.034).contains(&ev("client_ttft_p50_s")),
        "{}",
        t24.message()
    );
    assert!(
        (0.027..=0.028).contains(&ev("difference_p50_s")),
        "{}",
        t24.message()
    );
}

/// The same run with the server's spans beside the step file: one account of each
/// request, the spans first. The spans here are written from the finished lines (each
/// request's engine entry as its start) with 16 completion tokens each where the lines say
/// 32, so which one T25 read shows: the spans' 32 x 16 = 512 generated, and a note says
/// the finished lines were not read.
#[test]
fn spans_beside_the_step_file_are_read_first() {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real/vllm-0.32-cpu/steps-healthy");
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "bench.json",
        "load.log",
        "boot.log",
        "steps.jsonl",
        "before.snapshot.json",
        "after.snapshot.json",
        "run.series.jsonl",
    ] {
        std::fs::copy(fixture.join(name), dir.path().join(name)).unwrap();
    }
    let steps = std::fs::read_to_string(fixture.join("steps.jsonl")).unwrap();
    let mut lines = steps
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap());
    let t_wall = lines.next().unwrap()["t_wall"].as_f64().unwrap();
    let mut spans = String::new();
    for (n, line) in lines.filter(|l| l.get("fin").is_some()).enumerate() {
        let f = |k: &str| line[k].as_f64().unwrap();
        let start = t_wall + f("t") - f("infer") - f("queued");
        let attr = |k: &str, v: serde_json::Value| serde_json::json!({"key": k, "value": v});
        let span = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [{
            "name": "llm_request",
            "traceId": format!("{n:032x}"),
            "spanId": format!("{n:016x}"),
            "startTimeUnixNano": format!("{}", (start * 1e9) as u64),
            "attributes": [
                attr("gen_ai.request.id", serde_json::json!({"stringValue": line["fin"]})),
                attr("gen_ai.usage.prompt_tokens", serde_json::json!({"intValue": "32"})),
                attr("gen_ai.usage.completion_tokens", serde_json::json!({"intValue": "16"})),
                attr("gen_ai.latency.time_to_first_token", serde_json::json!({"doubleValue": f("queued") + f("prefill")})),
            ]
        }]}]}]});
        spans.push_str(&format!("{span}\n"));
    }
    std::fs::write(dir.path().join("spans.otlp.jsonl"), spans).unwrap();

    let run = Run::from_dir(dir.path()).unwrap();
    assert!(
        run.notes()
            .iter()
            .any(|n| n.contains("finished requests in") && n.contains("are not read")),
        "{:?}",
        run.notes()
    );
    let report = run.check();
    let t25 = result(&report, Tripwire::T25);
    assert_eq!(
        t25.evidence_f64("server_generated_tokens"),
        Some(512.0),
        "{}",
        t25.message()
    );
}

/// The page says what each record's arrival is: the finished lines carry no API-server
/// receipt, so a joined request's line reads "queued by the engine", and its table's
/// column "Server queued by the engine"; never "received", which a span's arrival is.
#[cfg(feature = "report")]
#[test]
fn the_page_says_the_engine_queued_what_the_lines_place() {
    let (run, report) = checked();
    let page = run.html(&report, None).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        page.contains("(joined by id): queued by the engine "),
        "no joined request's line says the engine queued it"
    );
    assert!(page.contains("Server queued by the engine"));
    assert!(!page.contains("(joined by id): received "));
    assert!(!page.contains("Server received"));
}
