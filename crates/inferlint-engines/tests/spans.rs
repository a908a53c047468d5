//! The span reader on what the real vLLM 0.32 CPU build exported
//! (fixtures/real/vllm-0.32-cpu/otlp, made by scripts/real-vllm/otlp.sh), once over gRPC
//! and once over OTLP/HTTP, and on the same spans in the shape an OpenTelemetry
//! Collector's file exporter writes.
//!
//! Each expected value is argued from what vLLM's source sets on its `llm_request` span
//! (`vllm/v1/engine/output_processor.py` `do_tracing`, with the stamps of
//! `vllm/v1/metrics/stats.py`) and from what happened on the server: the load (vllm bench
//! serve, 8 prompts of 32 tokens, 16 output tokens each with ignore_eos, ids
//! `otlp-grpc-N` and `otlp-http-N`), and vLLM's own latency histograms, which its metrics
//! logger observes from the very values the span carries.

// The helpers below are test code too: a fixture that does not read is the test's failure.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use inferlint_core::engine::VLLM;
use inferlint_core::model::traces::{RequestSource, ServerRequest, ServerRequests};
use inferlint_core::MetricSet;
use inferlint_engines::files::{read_spans, read_spans_from};
use serde_json::{json, Value};

fn folder(transport: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real/vllm-0.32-cpu/otlp")
        .join(transport)
}

fn metrics(path: &Path) -> MetricSet {
    inferlint_engines::prom::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// What a histogram's `_sum` (or `_count`) moved by during the load.
fn moved(transport: &str, name: &str) -> f64 {
    let dir = folder(transport);
    let after = metrics(&dir.join("metrics-after.prom"))
        .total(name)
        .unwrap();
    let before = metrics(&dir.join("metrics-before.prom"))
        .total(name)
        .unwrap();
    after - before
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every span of a file's export requests, by the OTLP/JSON layout.
fn spans_of(lines: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for line in lines {
        for r in line["resourceSpans"].as_array().into_iter().flatten() {
            for s in r["scopeSpans"].as_array().into_iter().flatten() {
                out.extend(s["spans"].as_array().into_iter().flatten().cloned());
            }
        }
    }
    out
}

/// One duration of a request.
type Field = fn(&ServerRequest) -> Option<f64>;

fn sum(requests: &[ServerRequest], f: impl Fn(&ServerRequest) -> Option<f64>) -> f64 {
    requests.iter().map(|r| f(r).unwrap()).sum()
}

fn assert_close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
        "{what}: {got} against {want}"
    );
}

#[test]
fn vllm_s_spans_read_as_the_requests_its_metrics_counted() {
    for transport in ["grpc", "http"] {
        let path = folder(transport).join("spans.otlp.jsonl");
        let got = read_spans(&path, &VLLM).unwrap();
        assert_eq!(got.source, RequestSource::OtlpSpan);
        // One llm_request span per finished request (do_tracing runs for each request
        // that finished): as many as vLLM's e2e histogram counted.
        let finished = moved(transport, "vllm:e2e_request_latency_seconds_count");
        assert_eq!(finished, 8.0, "{transport}");
        assert_eq!(got.requests.len(), 8, "{transport}");
        // Every other span (vLLM's loaders' spans at boot) is another record; nothing was
        // damaged, sent twice or unreadable.
        let all = spans_of(&lines(&path)[1..]);
        assert_eq!(got.other_records as usize, all.len() - 8, "{transport}");
        assert!(got.other_records > 0);
        assert_eq!(
            (got.skipped, got.repeated, got.unreadable_values),
            (0, 0, 0),
            "{transport}: {:?}",
            got.first_problem
        );

        // The durations are the values vLLM's metrics logger observed in its histograms,
        // which are named in seconds: each sum matches the histogram's.
        let r = &got.requests;
        let pairs: [(&str, Field); 5] = [
            ("vllm:time_to_first_token_seconds_sum", |r| r.ttft_s),
            ("vllm:e2e_request_latency_seconds_sum", |r| r.e2e_s),
            ("vllm:request_queue_time_seconds_sum", |r| r.queue_s),
            ("vllm:request_prefill_time_seconds_sum", |r| r.prefill_s),
            ("vllm:request_decode_time_seconds_sum", |r| r.decode_s),
        ];
        for (histogram, field) in pairs {
            assert_close(sum(r, field), moved(transport, histogram), histogram);
        }
        // The load asked 32 prompt tokens and 16 output tokens of each (the word-level
        // tokenizer, ignore_eos); vLLM's token histograms say the same in total.
        for request in r {
            assert_eq!(request.prompt_tokens, Some(32));
            assert_eq!(request.output_tokens, Some(16));
        }
        assert_eq!(moved(transport, "vllm:request_prompt_tokens_sum"), 256.0);
        assert_eq!(
            moved(transport, "vllm:request_generation_tokens_sum"),
            128.0
        );

        // The id: the completion server's `cmpl-` and the X-Request-Id vllm bench serve
        // sent (its prefix and the prompt's index), then the choice's index.
        let ids: BTreeSet<String> = r.iter().map(|r| r.id.clone().unwrap()).collect();
        let sent: BTreeSet<String> = (0..8)
            .map(|i| format!("cmpl-otlp-{transport}-{i}-0"))
            .collect();
        assert_eq!(ids, sent);

        // Times, from the stamps vLLM takes: the first token comes after the queue and
        // the prefill the engine core timed inside the same interval, and before the end;
        // the decode is inside the end too.
        for request in r {
            let (queue, prefill, decode) = (
                request.queue_s.unwrap(),
                request.prefill_s.unwrap(),
                request.decode_s.unwrap(),
            );
            let (ttft, e2e) = (request.ttft_s.unwrap(), request.e2e_s.unwrap());
            assert!(queue + prefill <= ttft, "{request:?}");
            assert!(ttft <= e2e, "{request:?}");
            assert!(queue + prefill + decode <= e2e, "{request:?}");
        }

        // The arrival is the span's start (int(arrival_time * 1e9)); the span ends when
        // do_tracing runs, after the iteration whose stamp ends the e2e: so the end is
        // after arrival + e2e, and close to it.
        let ends: HashMap<String, f64> = all
            .iter()
            .filter(|s| s["name"] == "llm_request")
            .map(|s| {
                let id = s["attributes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|a| a["key"] == "gen_ai.request.id")
                    .unwrap()["value"]["stringValue"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                let end: u64 = s["endTimeUnixNano"].as_str().unwrap().parse().unwrap();
                (id, end as f64 / 1e9)
            })
            .collect();
        let anchor = got.anchor.unwrap();
        for request in r {
            let arrival = request.arrival.unwrap();
            let end = ends[request.id.as_ref().unwrap()];
            let after_e2e = end - (arrival + request.e2e_s.unwrap());
            assert!((0.0..0.05).contains(&after_e2e), "{request:?}: {after_e2e}");
            // The receiver was started before the server, so before any request came.
            assert!(anchor.t_wall < arrival, "{request:?}");
        }
    }
}

/// The same export requests as an OpenTelemetry Collector's file exporter writes them:
/// no header, and (pdata's JSON marshaller) every field at its default written too, ids
/// empty as `""`, the status as `{"message": "", "code": 0}`. Made here from the
/// receiver's lines, field by field; not a Collector's own output.
fn as_a_collector_writes(line: &Value) -> Value {
    let mut line = line.clone();
    for r in line["resourceSpans"].as_array_mut().unwrap() {
        r["schemaUrl"] = r.get("schemaUrl").cloned().unwrap_or(json!(""));
        r["resource"]["droppedAttributesCount"] = json!(0);
        for s in r["scopeSpans"].as_array_mut().unwrap() {
            s["schemaUrl"] = json!("");
            s["scope"]["version"] = s["scope"].get("version").cloned().unwrap_or(json!(""));
            for span in s["spans"].as_array_mut().unwrap() {
                let o = span.as_object_mut().unwrap();
                for (key, default) in [
                    ("traceState", json!("")),
                    ("parentSpanId", json!("")),
                    ("attributes", json!([])),
                    ("droppedAttributesCount", json!(0)),
                    ("events", json!([])),
                    ("droppedEventsCount", json!(0)),
                    ("links", json!([])),
                    ("droppedLinksCount", json!(0)),
                ] {
                    o.entry(key).or_insert(default);
                }
                o.insert("status".into(), json!({"message": "", "code": 0}));
            }
        }
    }
    line
}

fn read_text(text: &str) -> ServerRequests {
    read_spans_from(Path::new("collector.json"), text.as_bytes(), &VLLM).unwrap()
}

#[test]
fn a_collector_s_file_reads_as_the_same_requests() {
    for transport in ["grpc", "http"] {
        let path = folder(transport).join("spans.otlp.jsonl");
        let ours = read_spans(&path, &VLLM).unwrap();
        let exports = &lines(&path)[1..];
        let text: String = exports
            .iter()
            .map(|l| as_a_collector_writes(l).to_string() + "\n")
            .collect();
        let theirs = read_text(&text);
        assert_eq!(theirs.requests, ours.requests, "{transport}");
        assert_eq!(theirs.other_records, ours.other_records);
        // No header: no clock anchor, and nothing skipped for its lack.
        assert_eq!((theirs.anchor, theirs.skipped), (None, 0));

        // A Collector before 0.50 named the scope's list `instrumentationLibrarySpans`.
        let old: String = exports
            .iter()
            .map(|l| {
                l.to_string()
                    .replace("\"scopeSpans\"", "\"instrumentationLibrarySpans\"")
                    + "\n"
            })
            .collect();
        assert_eq!(read_text(&old).requests, ours.requests, "{transport}");

        // Windows line ends, blank lines and a metrics line of the same Collector between
        // the traces: the same requests, the metrics counted as another record.
        let mixed: String = exports
            .iter()
            .map(|l| format!("{l}\r\n\r\n{{\"resourceMetrics\": []}}\r\n"))
            .collect();
        let read = read_text(&mixed);
        assert_eq!(read.requests, ours.requests);
        assert_eq!(
            read.other_records,
            ours.other_records + exports.len() as u64
        );
    }
}

#[test]
fn a_damaged_copy_of_the_real_file_loses_only_its_damaged_lines() {
    // Over OTLP/HTTP vLLM sent its eight llm_request spans in two export requests, the
    // last two lines.
    let path = folder("http").join("spans.otlp.jsonl");
    let ours = read_spans(&path, &VLLM).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let all: Vec<&str> = text.lines().collect();
    // The last line (vLLM's batch of llm_request spans, the last export) cut in half, as a
    // receiver killed mid-write would leave it, and a line of garbage before it.
    let last = all[all.len() - 1];
    let mut damaged: Vec<String> = all[..all.len() - 1].iter().map(|l| l.to_string()).collect();
    damaged.push("\u{0}\u{1}garbage".into());
    damaged.push(last[..last.len() / 2].to_owned());
    let read = read_text(&damaged.join("\n"));
    let spans_in_last = spans_of(&[serde_json::from_str(last).unwrap()])
        .iter()
        .filter(|s| s["name"] == "llm_request")
        .count();
    assert!(0 < spans_in_last && spans_in_last < ours.requests.len());
    assert_eq!(read.requests.len(), ours.requests.len() - spans_in_last);
    assert_eq!(read.requests[..], ours.requests[..read.requests.len()]);
    assert_eq!(read.skipped, 2);
    assert!(read.first_problem.unwrap().contains("not JSON"));
}
