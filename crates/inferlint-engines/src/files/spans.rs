//! The spans a server exported over OpenTelemetry, as a file of JSON lines in the OTLP/JSON
//! encoding: what `inferlint-live`'s receiver writes (a header line with the clock anchor,
//! then one export request a line) and what the OpenTelemetry Collector's file exporter
//! writes (the same lines without the header). Each span the engine's table names as its
//! request span ([`inferlint_core::engine::RequestSpan`]) becomes one
//! [`ServerRequest`]; every other record is counted, and a damaged line is skipped and
//! counted, never fatal.
//!
//! Format (OTLP specification, "JSON Protobuf Encoding"): a line is an
//! `ExportTraceServiceRequest`, `{"resourceSpans": [{"resource": ..., "scopeSpans":
//! [{"scope": ..., "spans": [SPAN, ...]}]}]}`; a span's `startTimeUnixNano` is a decimal
//! string (or a number), its `attributes` a list of `{"key": K, "value": {"stringValue":
//! S} | {"intValue": "I"} | {"doubleValue": D} | ...}`. Collector releases before 0.50
//! wrote `instrumentationLibrarySpans` for `scopeSpans`; both are read.

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;

use inferlint_core::engine::{EngineDescriptor, RequestSpan};
use inferlint_core::model::object::JsonObject;
use inferlint_core::model::traces::{ClockAnchor, RequestSource, ServerRequest, ServerRequests};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

use super::series_line::python_style_json;
use crate::input::{for_each_line_within, open_input, shown, FileError, MAX_SPAN_LINE_BYTES};

/// The header line's schema.
pub const OTLP_SCHEMA: &str = "inferlint.otlp/1";

/// The header of a receiver's file: where it listened, and when it started on both
/// clocks.
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpHeader {
    /// The address it listened on, `127.0.0.1:PORT`.
    pub received_on: String,
    /// The address a gRPC exporter is given.
    pub grpc: String,
    /// The address an OTLP/HTTP exporter is given.
    pub http: String,
    /// When it started.
    pub anchor: ClockAnchor,
}

/// The header line (without its line break): `{"schema": "inferlint.otlp/1",
/// "received_on": "127.0.0.1:PORT", "grpc": URL, "http": URL, "t_wall": ..., "t_mono_ns":
/// ...}`.
pub fn otlp_header_json(header: &OtlpHeader) -> String {
    let mut object = JsonObject::new();
    object.insert("schema".into(), OTLP_SCHEMA.into());
    object.insert("received_on".into(), header.received_on.clone().into());
    object.insert("grpc".into(), header.grpc.clone().into());
    object.insert("http".into(), header.http.clone().into());
    object.insert("t_wall".into(), header.anchor.t_wall.into());
    object.insert("t_mono_ns".into(), header.anchor.t_mono_ns.into());
    python_style_json(&object)
}

/// Reads a file of spans (the receiver's, or a Collector file exporter's) into the
/// server's requests, through the engine's request-span table. Refused: an engine whose
/// table names no request span, a file that is another recording, and a file of which no
/// line is an export request.
pub fn read_spans(path: &Path, engine: &EngineDescriptor) -> Result<ServerRequests, FileError> {
    let (file, _) = open_input(path)?;
    read_spans_from(path, file, engine)
}

/// [`read_spans`] of what `reader` gives; `path` names it.
pub fn read_spans_from(
    path: &Path,
    reader: impl Read,
    engine: &EngineDescriptor,
) -> Result<ServerRequests, FileError> {
    let Some(table) = engine.request_span else {
        return Err(FileError::invalid(
            path,
            format!(
                "{}'s spans are not read: no span of it carries a request's account (its table names no request span)",
                engine.name
            ),
        ));
    };
    let mut fold = SpanFold::new(table, shown(path));
    for_each_line_within(path, reader, MAX_SPAN_LINE_BYTES, |line| fold.line(line))?;
    fold.finish(path)
}

/// One line: the header, an export request of traces, or another signal's.
#[derive(Deserialize)]
struct Line {
    schema: Option<String>,
    t_wall: Option<f64>,
    t_mono_ns: Option<i64>,
    #[serde(rename = "resourceSpans")]
    resource_spans: Option<Vec<ResourceSpans>>,
    #[serde(rename = "resourceMetrics")]
    resource_metrics: Option<IgnoredAny>,
    #[serde(rename = "resourceLogs")]
    resource_logs: Option<IgnoredAny>,
    #[serde(rename = "resourceProfiles")]
    resource_profiles: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct ResourceSpans {
    #[serde(rename = "scopeSpans", alias = "instrumentationLibrarySpans")]
    scope_spans: Option<Vec<ScopeSpans>>,
}

#[derive(Deserialize)]
struct ScopeSpans {
    spans: Option<Vec<SpanJson>>,
}

/// A span, each member as it came: a member of the wrong type makes this span unread,
/// never the line it is on.
#[derive(Deserialize)]
struct SpanJson {
    name: Option<Value>,
    #[serde(rename = "traceId")]
    trace_id: Option<Value>,
    #[serde(rename = "spanId")]
    span_id: Option<Value>,
    #[serde(rename = "startTimeUnixNano")]
    start: Option<Value>,
    attributes: Option<Value>,
}

struct SpanFold {
    table: RequestSpan,
    out: ServerRequests,
    line: u64,
    /// Lines that were a header or an export request.
    readable: u64,
    header_seen: bool,
    /// A line of another recording's header as the first line: not a file of spans.
    foreign: Option<String>,
    /// (trace id, span id) of every request read.
    seen: HashSet<(String, String)>,
}

impl SpanFold {
    fn new(table: RequestSpan, file: String) -> SpanFold {
        SpanFold {
            table,
            out: ServerRequests::new(RequestSource::OtlpSpan, file),
            line: 0,
            readable: 0,
            header_seen: false,
            foreign: None,
            seen: HashSet::new(),
        }
    }

    fn problem(&mut self, why: String) {
        if self.out.first_problem.is_none() {
            self.out.first_problem = Some(format!("line {}: {why}", self.line));
        }
    }

    fn skip(&mut self, why: String) {
        self.out.skipped += 1;
        self.problem(why);
    }

    fn unreadable(&mut self, why: String) {
        self.out.unreadable_values += 1;
        self.problem(why);
    }

    fn line(&mut self, line: Option<&[u8]>) {
        self.line += 1;
        if self.foreign.is_some() {
            return;
        }
        let Some(line) = line else {
            self.skip(format!(
                "longer than {} MiB, not read",
                MAX_SPAN_LINE_BYTES >> 20
            ));
            return;
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let parsed: Line = match serde_json::from_slice(line) {
            Ok(parsed) => parsed,
            Err(e) => {
                let what = if serde_json::from_slice::<IgnoredAny>(line).is_ok() {
                    format!("not an OTLP/JSON export request ({e})")
                } else {
                    format!("not JSON ({e})")
                };
                self.skip(what);
                return;
            }
        };
        if let Some(schema) = parsed.schema {
            self.header(&schema, parsed.t_wall, parsed.t_mono_ns);
            return;
        }
        self.readable += 1;
        if parsed.resource_metrics.is_some()
            || parsed.resource_logs.is_some()
            || parsed.resource_profiles.is_some()
        {
            self.out.other_records += 1;
        }
        for resource in parsed.resource_spans.into_iter().flatten() {
            for scope in resource.scope_spans.into_iter().flatten() {
                for span in scope.spans.into_iter().flatten() {
                    self.span(span);
                }
            }
        }
    }

    fn header(&mut self, schema: &str, t_wall: Option<f64>, t_mono_ns: Option<i64>) {
        if schema != OTLP_SCHEMA {
            if self.readable == 0 && self.out.skipped == 0 {
                self.foreign = Some(schema.to_owned());
            } else {
                self.skip(format!("a header of another recording ({schema})"));
            }
            return;
        }
        if self.header_seen {
            self.skip(
                "a second header: two receivers' files in one; the first one's clocks are kept"
                    .into(),
            );
            return;
        }
        self.header_seen = true;
        self.readable += 1;
        match (t_wall, t_mono_ns) {
            (Some(t_wall), Some(t_mono_ns)) if t_wall.is_finite() && t_wall > 0.0 => {
                self.out.anchor = Some(ClockAnchor { t_wall, t_mono_ns });
            }
            _ => self.unreadable("the header has no clock anchor (t_wall and t_mono_ns)".into()),
        }
    }

    fn span(&mut self, span: SpanJson) {
        let table = self.table;
        let name = match &span.name {
            Some(Value::String(name)) => name.as_str(),
            None => "",
            Some(_) => {
                self.skip("a span whose name is not a string".into());
                return;
            }
        };
        if name != table.name {
            self.out.other_records += 1;
            return;
        }
        let attributes = match span.attributes {
            None => Vec::new(),
            Some(Value::Array(list)) => list,
            Some(_) => {
                self.skip(format!(
                    "a {} span whose attributes are not a list",
                    table.name
                ));
                return;
            }
        };
        if let (Some(Value::String(trace)), Some(Value::String(id))) =
            (&span.trace_id, &span.span_id)
        {
            if !self.seen.insert((trace.clone(), id.clone())) {
                self.out.repeated += 1;
                return;
            }
        }
        let mut request = ServerRequest::default();
        if table.starts_at_arrival {
            match span.start.as_ref().map(nanos) {
                Some(Some(ns)) if ns > 0 => request.arrival = Some(unix_seconds(ns)),
                None => self.unreadable(format!("a {} span without a start time", table.name)),
                Some(_) => self.unreadable(format!(
                    "a {} span whose start time is not a time",
                    table.name
                )),
            }
        }
        let attribute = |key: &str| -> Option<&Value> {
            attributes.iter().find_map(|kv| {
                (kv.get("key").and_then(Value::as_str) == Some(key))
                    .then(|| kv.get("value").unwrap_or(&Value::Null))
            })
        };
        let mut bad: Vec<String> = Vec::new();
        let seconds = |v: &Value| {
            any_number(v)
                .filter(|d| d.is_finite() && *d >= 0.0)
                .map(|d| d * table.seconds_per_unit)
        };
        request.queue_s = field(&attribute, table.queue, seconds, &mut bad);
        request.ttft_s = field(&attribute, table.ttft, seconds, &mut bad);
        request.prefill_s = field(&attribute, table.prefill, seconds, &mut bad);
        request.decode_s = field(&attribute, table.decode, seconds, &mut bad);
        request.e2e_s = field(&attribute, table.e2e, seconds, &mut bad);
        request.prompt_tokens = field(&attribute, table.prompt_tokens, any_count, &mut bad);
        request.output_tokens = field(&attribute, table.output_tokens, any_count, &mut bad);
        if let Some(value) = attribute(table.id) {
            match value.get("stringValue").and_then(Value::as_str) {
                Some(id) => request.id = Some(id.to_owned()),
                None => bad.push(format!("{} is {value}", table.id)),
            }
        }
        for why in bad {
            self.unreadable(format!("in a {} span, {why}, not a value read", table.name));
        }
        self.out.requests.push(request);
    }

    fn finish(self, path: &Path) -> Result<ServerRequests, FileError> {
        if let Some(schema) = self.foreign {
            return Err(FileError::invalid(
                path,
                format!("a recording of another kind ({schema}), not spans ({OTLP_SCHEMA})"),
            ));
        }
        if self.readable == 0 && self.out.skipped > 0 {
            return Err(FileError::invalid(
                path,
                format!(
                    "no line is an OTLP/JSON export request ({})",
                    self.out.first_problem.as_deref().unwrap_or("none read")
                ),
            ));
        }
        Ok(self.out)
    }
}

/// The value of the attribute `key` (when the table names one and the span has it), read
/// by `read`; one that does not read is noted in `bad`.
fn field<'a, T>(
    attribute: &impl Fn(&str) -> Option<&'a Value>,
    key: Option<&str>,
    read: impl Fn(&Value) -> Option<T>,
    bad: &mut Vec<String>,
) -> Option<T> {
    let key = key?;
    let value = attribute(key)?;
    let got = read(value);
    if got.is_none() {
        bad.push(format!("{key} is {value}"));
    }
    got
}

/// Nanoseconds since the Unix epoch, as OTLP/JSON writes them (a decimal string) or as a
/// JSON number.
fn nanos(v: &Value) -> Option<u64> {
    match v {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

/// Unix seconds of a time in nanoseconds: whole seconds and the fraction apart, so the
/// only rounding is the sum's.
fn unix_seconds(ns: u64) -> f64 {
    (ns / 1_000_000_000) as f64 + (ns % 1_000_000_000) as f64 / 1e9
}

/// A number an attribute's value holds: a `doubleValue` (a number, or proto3 JSON's
/// `"NaN"`, `"Infinity"`, `"-Infinity"`) or an `intValue` (a decimal string, or a number).
fn any_number(v: &Value) -> Option<f64> {
    if let Some(d) = v.get("doubleValue") {
        return match d {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => match s.as_str() {
                "NaN" => Some(f64::NAN),
                "Infinity" => Some(f64::INFINITY),
                "-Infinity" => Some(f64::NEG_INFINITY),
                other => other.parse().ok(),
            },
            _ => None,
        };
    }
    let i = v.get("intValue")?;
    match i {
        Value::String(s) => s.parse::<i64>().ok().map(|i| i as f64),
        Value::Number(n) => n.as_i64().map(|i| i as f64),
        _ => None,
    }
}

/// A count an attribute's value holds: an `intValue` not negative, or a `doubleValue`
/// that is a whole number from 0 to 2^53.
fn any_count(v: &Value) -> Option<u64> {
    if let Some(i) = v.get("intValue") {
        return match i {
            Value::String(s) => s.parse::<u64>().ok(),
            Value::Number(n) => n.as_u64(),
            _ => None,
        };
    }
    let d = any_number(v)?;
    (d.is_finite() && d >= 0.0 && d.fract() == 0.0 && d <= 9_007_199_254_740_992.0)
        .then_some(d as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferlint_core::engine::{SGLANG, VLLM};
    use serde_json::json;

    /// A span as vLLM 0.32's `do_tracing` makes it: named `llm_request`, started at the
    /// request's arrival, its latencies in seconds as doubles, its token counts as ints.
    fn vllm_span(id: &str, span_id: &str, start_ns: &str, ttft: f64) -> Value {
        json!({
            "traceId": "5b8aa5a2d2c872e8321cf37308d69df2",
            "spanId": span_id,
            "name": "llm_request",
            "kind": 2,
            "startTimeUnixNano": start_ns,
            "endTimeUnixNano": "1700000002000000000",
            "attributes": [
                {"key": "gen_ai.latency.time_to_first_token", "value": {"doubleValue": ttft}},
                {"key": "gen_ai.latency.e2e", "value": {"doubleValue": 1.25}},
                {"key": "gen_ai.latency.time_in_queue", "value": {"doubleValue": 0.5}},
                {"key": "gen_ai.usage.prompt_tokens", "value": {"intValue": "32"}},
                {"key": "gen_ai.usage.completion_tokens", "value": {"intValue": 16}},
                {"key": "gen_ai.latency.time_in_model_prefill", "value": {"doubleValue": 0.25}},
                {"key": "gen_ai.latency.time_in_model_decode", "value": {"doubleValue": 0.375}},
                {"key": "gen_ai.latency.time_in_model_inference", "value": {"doubleValue": 0.625}},
                {"key": "gen_ai.request.id", "value": {"stringValue": id}},
                {"key": "gen_ai.request.max_tokens", "value": {"intValue": "16"}}
            ]
        })
    }

    fn export(spans: Vec<Value>) -> String {
        json!({"resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "vllm"}}]},
            "scopeSpans": [{"scope": {"name": "vllm.tracing.otel"}, "spans": spans}]
        }]})
        .to_string()
    }

    fn read(text: &str) -> Result<ServerRequests, FileError> {
        read_spans_from(Path::new("spans.jsonl"), text.as_bytes(), &VLLM)
    }

    #[test]
    fn a_request_span_becomes_one_request_read_from_its_attributes() {
        let header = otlp_header_json(&OtlpHeader {
            received_on: "127.0.0.1:4317".into(),
            grpc: "http://127.0.0.1:4317".into(),
            http: "http://127.0.0.1:4317/v1/traces".into(),
            anchor: ClockAnchor {
                t_wall: 1_700_000_000.5,
                t_mono_ns: 123_456_789,
            },
        });
        let text = format!(
            "{header}\n{}\n",
            export(vec![vllm_span(
                "cmpl-a0-0",
                "00f067aa0ba902b7",
                "1700000000750000000",
                0.875
            )])
        );
        let got = read(&text).unwrap();
        assert_eq!(
            got.anchor,
            Some(ClockAnchor {
                t_wall: 1_700_000_000.5,
                t_mono_ns: 123_456_789
            })
        );
        assert_eq!(got.source, RequestSource::OtlpSpan);
        assert_eq!(
            got.requests,
            [ServerRequest {
                id: Some("cmpl-a0-0".into()),
                // The span's start, 1700000000.75 s: vLLM starts it at the arrival.
                arrival: Some(1_700_000_000.75),
                queue_s: Some(0.5),
                ttft_s: Some(0.875),
                prefill_s: Some(0.25),
                decode_s: Some(0.375),
                e2e_s: Some(1.25),
                prompt_tokens: Some(32),
                output_tokens: Some(16),
                ..Default::default()
            }]
        );
        assert_eq!(
            (
                got.skipped,
                got.other_records,
                got.repeated,
                got.unreadable_values
            ),
            (0, 0, 0, 0)
        );
    }

    #[test]
    fn the_header_reads_back_as_written() {
        let header = otlp_header_json(&OtlpHeader {
            received_on: "127.0.0.1:1".into(),
            grpc: "g".into(),
            http: "h".into(),
            anchor: ClockAnchor {
                t_wall: 1_767_225_600.123_456_7,
                t_mono_ns: 9_007_199_254_740_993,
            },
        });
        assert!(header.starts_with("{\"schema\": \"inferlint.otlp/1\", \"received_on\": "));
        let got = read(&header).unwrap();
        assert_eq!(got.anchor.unwrap().t_wall, 1_767_225_600.123_456_7);
        assert_eq!(got.anchor.unwrap().t_mono_ns, 9_007_199_254_740_993);
    }

    #[test]
    fn a_collector_file_without_a_header_reads_the_same_requests() {
        let text = format!(
            "{}\n{}\n",
            export(vec![vllm_span(
                "a",
                "0000000000000001",
                "1700000000000000000",
                0.5
            )]),
            export(vec![vllm_span(
                "b",
                "0000000000000002",
                "1700000001000000000",
                0.25
            )])
        );
        let got = read(&text).unwrap();
        assert_eq!(got.anchor, None);
        let ids: Vec<_> = got.requests.iter().map(|r| r.id.clone().unwrap()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(got.requests[1].arrival, Some(1_700_000_001.0));
    }

    #[test]
    fn other_spans_and_other_signals_are_counted_not_read_as_requests() {
        let other = json!({"traceId": "aa", "spanId": "bb", "name": "load_model", "startTimeUnixNano": "1"});
        let text = format!(
            "{}\n{}\n",
            export(vec![
                other,
                vllm_span("a", "01", "1700000000000000000", 0.5)
            ]),
            json!({"resourceMetrics": [{"scopeMetrics": []}]})
        );
        let got = read(&text).unwrap();
        assert_eq!(got.requests.len(), 1);
        assert_eq!(got.other_records, 2);
        assert_eq!(got.skipped, 0);
    }

    #[test]
    fn a_damaged_line_is_skipped_and_counted_and_the_rest_is_read() {
        let good = export(vec![vllm_span("a", "01", "1700000000000000000", 0.5)]);
        let text = format!(
            "{good}\n{{\"resourceSpans\": [{{\"scopeSpans\": [{{\"spans\": [\n[1,2]\n\"x\"\n{}\n",
            export(vec![vllm_span("b", "02", "1700000000000000000", 0.5)])
        );
        let got = read(&text).unwrap();
        assert_eq!(got.requests.len(), 2);
        assert_eq!(got.skipped, 3);
        let first = got.first_problem.unwrap();
        assert!(first.starts_with("line 2: not JSON"), "{first}");
    }

    #[test]
    fn a_cut_off_last_line_is_one_skipped_line() {
        let good = export(vec![vllm_span("a", "01", "1700000000000000000", 0.5)]);
        let text = format!("{good}\n{}", &good[..good.len() / 2]);
        let got = read(&text).unwrap();
        assert_eq!((got.requests.len(), got.skipped), (1, 1));
    }

    #[test]
    fn a_span_sent_again_is_kept_once_and_counted() {
        let span = vllm_span("a", "01", "1700000000000000000", 0.5);
        let text = format!("{}\n{}\n", export(vec![span.clone()]), export(vec![span]));
        let got = read(&text).unwrap();
        assert_eq!((got.requests.len(), got.repeated), (1, 1));
    }

    #[test]
    fn values_that_cannot_be_durations_are_none_and_counted() {
        let mut span = vllm_span("a", "01", "not a time", -0.5);
        span["attributes"][1] =
            json!({"key": "gen_ai.latency.e2e", "value": {"doubleValue": "NaN"}});
        span["attributes"][3] =
            json!({"key": "gen_ai.usage.prompt_tokens", "value": {"intValue": "-3"}});
        let got = read(&export(vec![span])).unwrap();
        let r = &got.requests[0];
        assert_eq!(
            (r.arrival, r.ttft_s, r.e2e_s, r.prompt_tokens),
            (None, None, None, None)
        );
        // The queue time next to them is read.
        assert_eq!(r.queue_s, Some(0.5));
        assert_eq!(got.unreadable_values, 4);
        assert!(got.first_problem.unwrap().contains("start time"));
    }

    #[test]
    fn an_attribute_the_span_lacks_is_none_and_not_a_problem() {
        let mut span = vllm_span("a", "01", "1700000000000000000", 0.5);
        span["attributes"] = json!([{"key": "gen_ai.request.id", "value": {"stringValue": "a"}}]);
        let got = read(&export(vec![span])).unwrap();
        assert_eq!(
            got.requests[0],
            ServerRequest {
                id: Some("a".into()),
                arrival: Some(1_700_000_000.0),
                ..Default::default()
            }
        );
        assert_eq!(got.unreadable_values, 0);
    }

    #[test]
    fn another_recording_and_a_file_of_no_request_are_refused() {
        let series = "{\"schema\": \"inferlint.series/1\", \"url\": \"u\"}\n";
        let e = read(series).unwrap_err().to_string();
        assert!(e.contains("inferlint.series/1"), "{e}");
        let e = read("not json\n\u{0}\n").unwrap_err().to_string();
        assert!(e.contains("no line is an OTLP/JSON export request"), "{e}");
        // Nothing at all: no request, and nothing to refuse.
        assert!(read("").unwrap().requests.is_empty());
    }

    #[test]
    fn an_engine_without_a_request_span_is_refused_by_name() {
        let e = read_spans_from(Path::new("f"), &b""[..], &SGLANG)
            .unwrap_err()
            .to_string();
        assert!(e.contains("SGLang's spans are not read"), "{e}");
    }

    #[test]
    fn a_line_over_the_bound_is_skipped_without_being_held() {
        let good = export(vec![vllm_span("a", "01", "1700000000000000000", 0.5)]);
        let mut text = " ".repeat(MAX_SPAN_LINE_BYTES + 1);
        text.push('\n');
        text.push_str(&good);
        let got = read(&text).unwrap();
        assert_eq!((got.requests.len(), got.skipped), (1, 1));
        assert!(got
            .first_problem
            .unwrap()
            .starts_with("line 1: longer than"));
    }

    #[test]
    fn nanoseconds_become_seconds_without_losing_the_fraction() {
        assert_eq!(unix_seconds(1_700_000_000_750_000_000), 1_700_000_000.75);
        assert_eq!(unix_seconds(0), 0.0);
        assert_eq!(nanos(&json!("18446744073709551615")), Some(u64::MAX));
        assert_eq!(
            nanos(&json!(1_700_000_000_000_000_001u64)),
            Some(1_700_000_000_000_000_001)
        );
        assert_eq!(nanos(&json!("-1")), None);
    }
}
