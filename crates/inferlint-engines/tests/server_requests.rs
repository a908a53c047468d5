//! The engines' own per-request records, read through their tables: TensorRT-LLM's
//! `/perf_metrics` items as a drain wrote them, and SGLang's `--export-metrics-to-file`
//! lines, each case built from the engine's format (the fields and their clocks are
//! cited in `inferlint_core::engine`, `TRTLLM_REQUEST_RECORD` and
//! `SGLANG_REQUEST_RECORD`). Times are sums of powers of two so that each difference the
//! reader takes is exact.

// The helpers below unwrap as the tests do: a failure is the test failing.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use inferlint_core::engine::{SGLANG, TRTLLM, VLLM};
use inferlint_core::model::traces::{ClockAnchor, RequestSource, ServerRequest};
use inferlint_core::Engine;
use inferlint_engines::files::{
    failed_drain_json, read_server_requests, read_server_requests_from, server_record_json,
    server_requests_end_json, server_requests_header_json, DrainTotals, ServerRequestsHeader,
};
use serde_json::{json, Value};

/// The poller's start: 999 s on the host's monotonic clock at Unix 1700000000.5.
const ANCHOR: ClockAnchor = ClockAnchor {
    t_wall: 1_700_000_000.5,
    t_mono_ns: 999_000_000_000,
};

fn drain_header(same_host: bool) -> String {
    server_requests_header_json(&ServerRequestsHeader {
        engine: Engine::Trtllm,
        source: RequestSource::TrtllmPerfMetrics,
        url: "http://127.0.0.1:8000/perf_metrics".into(),
        same_host,
        anchor: ANCHOR,
    })
}

/// One `/perf_metrics` item as `OpenAIServer.get_perf_metrics` writes it: steady-clock
/// seconds, the API server's arrival first.
fn perf_item(id: u64, arrival: f64, scheduled: f64, first: f64, last: f64) -> Value {
    json!({
        "request_id": id,
        "perf_metrics": {
            "first_iter": 5,
            "last_iter": 20,
            "timing_metrics": {
                "server_arrival_time": arrival,
                "arrival_time": arrival + 0.001953125,
                "first_scheduled_time": scheduled,
                "first_token_time": first,
                "server_first_token_time": first + 0.0009765625,
                "last_token_time": last,
            },
            "kv_cache_metrics": {
                "num_total_allocated_blocks": 3,
                "num_new_allocated_blocks": 2,
                "num_reused_blocks": 1,
                "num_missed_blocks": 2,
            },
        }
    })
}

fn drained(lines: &[String]) -> Result<inferlint_core::model::traces::ServerRequests, String> {
    let text = lines.join("\n") + "\n";
    read_server_requests_from(Path::new("server-requests.jsonl"), text.as_bytes(), &TRTLLM)
        .map_err(|e| e.to_string())
}

fn at(t: f64) -> ClockAnchor {
    ClockAnchor {
        t_wall: t,
        t_mono_ns: ((t - ANCHOR.t_wall) * 1e9) as i64 + ANCHOR.t_mono_ns,
    }
}

/// Arrival at the API server at 1000 s of the monotonic clock, at the executor 1/512 s
/// later, first scheduled at 7.8 ms, first token at 46.9 ms, last at 343.75 ms: TTFT and
/// e2e run from the API server's arrival, the queue from the executor's (7.8125 - 1.953125
/// ms), prefill and decode between the executor's stamps; the arrival is placed on the
/// wall clock through the header's reading of both (1000 + 1700000000.5 - 999).
#[test]
fn a_perf_metrics_item_is_one_request() {
    let item = perf_item(32, 1000.0, 1000.0078125, 1000.046875, 1000.34375);
    let got = drained(&[
        drain_header(true),
        server_record_json(&item, at(1_700_000_002.0)),
        server_requests_end_json(
            &DrainTotals {
                drains: 3,
                failed_drains: 0,
                records: 1,
                cut: 0,
            },
            at(1_700_000_003.0),
        ),
    ])
    .unwrap();
    assert_eq!(got.source, RequestSource::TrtllmPerfMetrics);
    assert_eq!(got.anchor, Some(ANCHOR));
    assert_eq!(
        got.requests,
        [ServerRequest {
            id: Some("32".into()),
            arrival: Some(1_700_000_001.5),
            queue_s: Some(0.005859375),
            ttft_s: Some(0.046875),
            prefill_s: Some(0.0390625),
            decode_s: Some(0.296875),
            e2e_s: Some(0.34375),
            reused_blocks: Some(1),
            missed_blocks: Some(2),
            ..Default::default()
        }]
    );
    assert_eq!((got.skipped, got.unreadable_values), (0, 0));
}

/// A server on another host: its monotonic clock is not ours, so no arrival is placed;
/// the durations, differences of its own stamps, still are.
#[test]
fn another_hosts_clock_is_not_placed() {
    let item = perf_item(1, 1000.0, 1000.0078125, 1000.046875, 1000.34375);
    let got = drained(&[drain_header(false), server_record_json(&item, ANCHOR)]).unwrap();
    assert_eq!(got.requests[0].arrival, None);
    assert_eq!(got.requests[0].ttft_s, Some(0.046875));
}

/// A request that got no first token (cancelled in its prefill): its time point is the
/// clock's epoch, written 0.0, which is no stamp; a `server_arrival_time` of null (a
/// request without an HTTP request) falls back to the executor's arrival.
#[test]
fn a_stamp_never_set_is_none() {
    let mut item = perf_item(7, 1000.0, 1000.0078125, 0.0, 1000.5);
    item["perf_metrics"]["timing_metrics"]["server_arrival_time"] = Value::Null;
    let got = drained(&[drain_header(true), server_record_json(&item, ANCHOR)]).unwrap();
    let r = &got.requests[0];
    assert_eq!(r.ttft_s, None);
    assert_eq!(r.decode_s, None);
    // The executor's arrival, 1000 + 1/512 s, on the wall clock.
    assert_eq!(r.arrival, Some(1_700_000_001.5 + 1.0 / 512.0));
    assert_eq!(r.queue_s, Some(0.005859375));
    assert_eq!(got.unreadable_values, 0);
}

/// Damage: a line that is not JSON, a record that is not an object, a time that is a
/// string; the poller's failed drain is no request. Each is counted, nothing panics.
#[test]
fn damage_is_counted() {
    let mut item = perf_item(2, 1000.0, 1000.0078125, 1000.046875, 1000.34375);
    item["perf_metrics"]["timing_metrics"]["last_token_time"] = json!("soon");
    let got = drained(&[
        drain_header(true),
        "{\"record\": ".into(),
        "{\"record\": 5, \"t_wall\": 1}".into(),
        server_record_json(&item, ANCHOR),
        failed_drain_json("timed out after 10 s", ANCHOR),
    ])
    .unwrap();
    assert_eq!(got.requests.len(), 1);
    assert_eq!(got.skipped, 2);
    assert_eq!(got.unreadable_values, 1);
    assert_eq!(got.requests[0].decode_s, None);
    assert!(got.first_problem.unwrap().starts_with("line 2:"));
}

/// A drain's file must start with its header; another schema, or records of an engine
/// whose table keeps none, are refused in one line.
#[test]
fn what_is_not_a_drains_file_is_refused() {
    let item = perf_item(1, 1000.0, 1000.0078125, 1000.046875, 1000.34375);
    let e = drained(&[item.to_string()]).unwrap_err();
    assert!(e.contains("not a file of drained records"), "{e}");
    assert!(e.contains("/perf_metrics"), "{e}");
    let e = drained(&["{\"schema\": \"inferlint.series/1\"}".into()]).unwrap_err();
    assert!(e.contains("inferlint.series/1"), "{e}");
    let e = read_server_requests_from(Path::new("x"), item.to_string().as_bytes(), &VLLM)
        .unwrap_err()
        .to_string();
    assert!(e.contains("vLLM keeps no per-request records"), "{e}");
    assert!(drained(&[]).unwrap_err().contains("empty"));
}

/// One line of SGLang's file as `FileRequestMetricsExporter` writes it with
/// `--enable-metrics`: the request's parameters as a string, then `meta_info`.
fn sglang_line(rid: &str, received: f64) -> String {
    json!({
        "request_parameters": format!("{{\"rid\": \"{rid}\", \"stream\": true}}"),
        "id": rid,
        "finish_reason": {"type": "length", "length": 9},
        "prompt_tokens": 32,
        "weight_version": "default",
        "num_retractions": 1,
        "reasoning_tokens": 0,
        "completion_tokens": 9,
        "cached_tokens": 16,
        "e2e_latency": 0.5,
        "request_received_ts": received,
        "api_server_dispatch_finish_ts": received + 0.00390625,
        "response_sent_to_client_ts": received + 0.5078125,
        "request_finished_ts": received + 0.5,
        "decode_throughput": 32.0,
        "forward_entry_time": received + 0.0625,
        "prefill_finished_time": received + 0.125,
        "queue_time": 0.0546875,
    })
    .to_string()
}

/// 9 tokens at 32 a second after the first: 8 / 32 = 0.25 s of decode, so the first
/// token came 0.5 - 0.25 = 0.25 s after the receipt; the prefill ran from the first
/// forward pass to its end (0.125 - 0.0625); the queue time is the scheduler's own.
#[test]
fn an_sglang_line_is_one_request() {
    let text = sglang_line("bench-5f9676fc-3", 1_700_000_000.25) + "\n";
    let got = read_server_requests_from(Path::new("m.log"), text.as_bytes(), &SGLANG).unwrap();
    assert_eq!(got.source, RequestSource::SglangRequestFile);
    assert_eq!(
        got.requests,
        [ServerRequest {
            id: Some("bench-5f9676fc-3".into()),
            arrival: Some(1_700_000_000.25),
            queue_s: Some(0.0546875),
            ttft_s: Some(0.25),
            prefill_s: Some(0.0625),
            decode_s: Some(0.25),
            e2e_s: Some(0.5),
            prompt_tokens: Some(32),
            output_tokens: Some(9),
            cached_tokens: Some(16),
            preemptions: Some(1),
            ..Default::default()
        }]
    );
}

/// Without `--enable-metrics` the line has no stamps: the e2e and the counts are read,
/// the rest is None, and none of it is a problem.
#[test]
fn an_sglang_line_without_its_stamps() {
    let line = json!({"request_parameters": "{}", "id": "a", "prompt_tokens": 8,
        "completion_tokens": 4, "cached_tokens": 0, "num_retractions": 0, "e2e_latency": 0.25});
    let got =
        read_server_requests_from(Path::new("m.log"), format!("{line}\n").as_bytes(), &SGLANG)
            .unwrap();
    let r = &got.requests[0];
    assert_eq!((r.arrival, r.ttft_s, r.e2e_s), (None, None, Some(0.25)));
    assert_eq!(got.unreadable_values, 0);
}

/// A folder of SGLang's hourly files is read in the order of their names; files of
/// another name are passed over; an empty folder is refused.
#[test]
fn a_folder_of_hourly_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("sglang-request-metrics-20260101_11.log"),
        sglang_line("b", 1_700_003_600.0) + "\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("sglang-request-metrics-20260101_10.log"),
        sglang_line("a", 1_700_000_000.0) + "\n" + &sglang_line("a2", 1_700_000_001.0) + "\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not json\n").unwrap();
    let got = read_server_requests(dir.path(), &SGLANG).unwrap();
    let ids: Vec<_> = got.requests.iter().map(|r| r.id.clone().unwrap()).collect();
    assert_eq!(ids, ["a", "a2", "b"]);
    let empty = tempfile::tempdir().unwrap();
    let e = read_server_requests(empty.path(), &SGLANG)
        .unwrap_err()
        .to_string();
    assert!(e.contains("sglang-request-metrics-*.log"), "{e}");
}

/// Garbage throughout, a cut last line: refused or counted, never a panic.
#[test]
fn garbage_is_refused() {
    let e = read_server_requests_from(Path::new("m.log"), &b"\x00\xff garbage\n{{{\n"[..], &SGLANG)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no line is a request record"), "{e}");
    let cut = sglang_line("a", 1_700_000_000.0) + "\n" + &sglang_line("b", 1.0)[..40];
    let got = read_server_requests_from(Path::new("m.log"), cut.as_bytes(), &SGLANG).unwrap();
    assert_eq!((got.requests.len(), got.skipped), (1, 1));
}
