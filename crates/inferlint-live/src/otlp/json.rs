//! An export request in the OTLP/JSON encoding (the OTLP specification's "JSON Protobuf
//! Encoding"): the proto3 JSON mapping with field names in lowerCamelCase, a field at its
//! default value left out, 64-bit integers as decimal strings, enums as integers, bytes
//! in base64, and the three exceptions OTLP makes to it: trace and span ids as lowercase
//! hex. It is what the OpenTelemetry Collector's file exporter writes a line of, so one
//! reader reads the receiver's file and a Collector's.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, EntityRef, InstrumentationScope, KeyValue,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, ResourceSpans, ScopeSpans, Span, Status};

/// The request as one line of JSON, without the line break.
pub fn export_request_json(request: &ExportTraceServiceRequest) -> String {
    let mut out = String::with_capacity(1024);
    let mut o = Fields::open(&mut out);
    o.list("resourceSpans", &request.resource_spans, resource_spans);
    o.close();
    out
}

fn resource_spans(out: &mut String, r: &ResourceSpans) {
    let mut o = Fields::open(out);
    if let Some(resource) = &r.resource {
        resource_json(o.key("resource"), resource);
    }
    o.list("scopeSpans", &r.scope_spans, scope_spans);
    o.string("schemaUrl", &r.schema_url);
    o.close();
}

fn resource_json(out: &mut String, r: &Resource) {
    let mut o = Fields::open(out);
    o.list("attributes", &r.attributes, key_value);
    o.number("droppedAttributesCount", r.dropped_attributes_count);
    o.list("entityRefs", &r.entity_refs, entity_ref);
    o.close();
}

fn entity_ref(out: &mut String, e: &EntityRef) {
    let mut o = Fields::open(out);
    o.string("schemaUrl", &e.schema_url);
    o.string("type", &e.r#type);
    o.list("idKeys", &e.id_keys, |out, s| push_string(out, s));
    o.list("descriptionKeys", &e.description_keys, |out, s| {
        push_string(out, s)
    });
    o.close();
}

fn scope_spans(out: &mut String, s: &ScopeSpans) {
    let mut o = Fields::open(out);
    if let Some(scope) = &s.scope {
        scope_json(o.key("scope"), scope);
    }
    o.list("spans", &s.spans, span_json);
    o.string("schemaUrl", &s.schema_url);
    o.close();
}

fn scope_json(out: &mut String, s: &InstrumentationScope) {
    let mut o = Fields::open(out);
    o.string("name", &s.name);
    o.string("version", &s.version);
    o.list("attributes", &s.attributes, key_value);
    o.number("droppedAttributesCount", s.dropped_attributes_count);
    o.close();
}

fn span_json(out: &mut String, s: &Span) {
    let mut o = Fields::open(out);
    o.hex("traceId", &s.trace_id);
    o.hex("spanId", &s.span_id);
    o.string("traceState", &s.trace_state);
    o.hex("parentSpanId", &s.parent_span_id);
    o.number("flags", s.flags);
    o.string("name", &s.name);
    o.number("kind", s.kind);
    o.int64("startTimeUnixNano", s.start_time_unix_nano);
    o.int64("endTimeUnixNano", s.end_time_unix_nano);
    o.list("attributes", &s.attributes, key_value);
    o.number("droppedAttributesCount", s.dropped_attributes_count);
    o.list("events", &s.events, event_json);
    o.number("droppedEventsCount", s.dropped_events_count);
    o.list("links", &s.links, link_json);
    o.number("droppedLinksCount", s.dropped_links_count);
    if let Some(status) = &s.status {
        status_json(o.key("status"), status);
    }
    o.close();
}

fn event_json(out: &mut String, e: &span::Event) {
    let mut o = Fields::open(out);
    o.int64("timeUnixNano", e.time_unix_nano);
    o.string("name", &e.name);
    o.list("attributes", &e.attributes, key_value);
    o.number("droppedAttributesCount", e.dropped_attributes_count);
    o.close();
}

fn link_json(out: &mut String, l: &span::Link) {
    let mut o = Fields::open(out);
    o.hex("traceId", &l.trace_id);
    o.hex("spanId", &l.span_id);
    o.string("traceState", &l.trace_state);
    o.list("attributes", &l.attributes, key_value);
    o.number("droppedAttributesCount", l.dropped_attributes_count);
    o.number("flags", l.flags);
    o.close();
}

fn status_json(out: &mut String, s: &Status) {
    let mut o = Fields::open(out);
    o.string("message", &s.message);
    o.number("code", s.code);
    o.close();
}

fn key_value(out: &mut String, kv: &KeyValue) {
    let mut o = Fields::open(out);
    o.string("key", &kv.key);
    if let Some(value) = &kv.value {
        any_value_json(o.key("value"), value);
    }
    o.number("keyStrindex", kv.key_strindex);
    o.close();
}

fn any_value_json(out: &mut String, v: &AnyValue) {
    let mut o = Fields::open(out);
    // A oneof field that is set is written even at its type's default (proto3 JSON keeps
    // a member's presence): `{"intValue": "0"}`, `{"boolValue": false}`.
    match &v.value {
        None => {}
        Some(any_value::Value::StringValue(s)) => push_string(o.key("stringValue"), s),
        Some(any_value::Value::BoolValue(b)) => {
            o.key("boolValue")
                .push_str(if *b { "true" } else { "false" })
        }
        Some(any_value::Value::IntValue(i)) => {
            let out = o.key("intValue");
            out.push('"');
            out.push_str(&i.to_string());
            out.push('"');
        }
        Some(any_value::Value::DoubleValue(d)) => push_double(o.key("doubleValue"), *d),
        Some(any_value::Value::ArrayValue(a)) => {
            let mut inner = Fields::open(o.key("arrayValue"));
            inner.list("values", &a.values, any_value_json);
            inner.close();
        }
        Some(any_value::Value::KvlistValue(l)) => {
            let mut inner = Fields::open(o.key("kvlistValue"));
            inner.list("values", &l.values, key_value);
            inner.close();
        }
        Some(any_value::Value::BytesValue(b)) => {
            let out = o.key("bytesValue");
            out.push('"');
            push_base64(out, b);
            out.push('"');
        }
        Some(any_value::Value::StringValueStrindex(i)) => {
            o.key("stringValueStrindex").push_str(&i.to_string())
        }
    }
    o.close();
}

/// The members of one JSON object being written, each left out at its default value.
struct Fields<'a> {
    out: &'a mut String,
    any: bool,
}

impl<'a> Fields<'a> {
    fn open(out: &'a mut String) -> Fields<'a> {
        out.push('{');
        Fields { out, any: false }
    }

    /// Starts a member: the value is written to what this returns.
    fn key(&mut self, key: &str) -> &mut String {
        if self.any {
            self.out.push(',');
        }
        self.any = true;
        push_string(self.out, key);
        self.out.push(':');
        self.out
    }

    fn string(&mut self, key: &str, value: &str) {
        if !value.is_empty() {
            push_string(self.key(key), value);
        }
    }

    fn hex(&mut self, key: &str, bytes: &[u8]) {
        if !bytes.is_empty() {
            let out = self.key(key);
            out.push('"');
            for b in bytes {
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 15)]));
            }
            out.push('"');
        }
    }

    fn number(&mut self, key: &str, value: impl Into<i64>) {
        let value = value.into();
        if value != 0 {
            self.key(key).push_str(&value.to_string());
        }
    }

    /// A 64-bit integer, as a decimal string.
    fn int64(&mut self, key: &str, value: u64) {
        if value != 0 {
            let out = self.key(key);
            out.push('"');
            out.push_str(&value.to_string());
            out.push('"');
        }
    }

    fn list<T>(&mut self, key: &str, items: &[T], each: impl Fn(&mut String, &T)) {
        if items.is_empty() {
            return;
        }
        let out = self.key(key);
        out.push('[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            each(out, item);
        }
        out.push(']');
    }

    fn close(self) {
        self.out.push('}');
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A JSON string: `"` and `\` escaped, control characters as `\n`, `\t`, `\r`, `\b`,
/// `\f` or `\u00XX`; everything else as it is (UTF-8).
fn push_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A double: the shortest decimal that reads back as the same number; proto3 JSON's
/// `"NaN"`, `"Infinity"` and `"-Infinity"` for the values JSON has no number for.
fn push_double(out: &mut String, d: f64) {
    if d.is_nan() {
        out.push_str("\"NaN\"");
    } else if d.is_infinite() {
        out.push_str(if d > 0.0 {
            "\"Infinity\""
        } else {
            "\"-Infinity\""
        });
    } else {
        match serde_json::Number::from_f64(d) {
            Some(n) => out.push_str(&n.to_string()),
            None => out.push_str("\"NaN\""),
        }
    }
}

/// Standard base64 with padding (RFC 4648 section 4), as proto3 JSON writes bytes.
fn push_base64(out: &mut String, bytes: &[u8]) {
    STANDARD.encode_string(bytes, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::{ArrayValue, KeyValueList};
    use serde_json::{json, Value};

    fn kv(key: &str, value: any_value::Value) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue { value: Some(value) }),
            ..Default::default()
        }
    }

    fn parsed(request: &ExportTraceServiceRequest) -> Value {
        let line = export_request_json(request);
        assert!(!line.contains('\n'));
        serde_json::from_str(&line).unwrap()
    }

    /// One span with every kind of field, and the JSON the OTLP specification's encoding
    /// rules give for it, written out by hand.
    #[test]
    fn a_span_is_written_in_the_otlp_json_encoding() {
        let request = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![kv(
                        "service.name",
                        any_value::Value::StringValue("vllm".into()),
                    )],
                    ..Default::default()
                }),
                scope_spans: vec![ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: "vllm.tracing.otel".into(),
                        ..Default::default()
                    }),
                    spans: vec![Span {
                        trace_id: vec![0x0a; 16],
                        span_id: vec![0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31],
                        flags: 0x100,
                        name: "llm_request".into(),
                        kind: 2,
                        start_time_unix_nano: 1_700_000_000_123_456_789,
                        end_time_unix_nano: 1_700_000_001_000_000_000,
                        attributes: vec![
                            kv("s", any_value::Value::StringValue("a\"b\n".into())),
                            kv("i", any_value::Value::IntValue(-9_007_199_254_740_993)),
                            kv("zero", any_value::Value::IntValue(0)),
                            kv("d", any_value::Value::DoubleValue(0.1)),
                            kv("inf", any_value::Value::DoubleValue(f64::INFINITY)),
                            kv("b", any_value::Value::BoolValue(false)),
                            kv("bytes", any_value::Value::BytesValue(b"hi!?".to_vec())),
                            kv(
                                "arr",
                                any_value::Value::ArrayValue(ArrayValue {
                                    values: vec![AnyValue {
                                        value: Some(any_value::Value::IntValue(1)),
                                    }],
                                }),
                            ),
                            kv(
                                "kv",
                                any_value::Value::KvlistValue(KeyValueList {
                                    values: vec![kv("k", any_value::Value::BoolValue(true))],
                                }),
                            ),
                        ],
                        events: vec![span::Event {
                            time_unix_nano: 5,
                            name: "e".into(),
                            ..Default::default()
                        }],
                        status: Some(Status {
                            message: String::new(),
                            code: 1,
                        }),
                        ..Default::default()
                    }],
                    schema_url: String::new(),
                }],
                schema_url: "https://opentelemetry.io/schemas/1.11.0".into(),
            }],
        };
        let expected = json!({"resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "vllm"}}]},
            "scopeSpans": [{
                "scope": {"name": "vllm.tracing.otel"},
                "spans": [{
                    "traceId": "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a",
                    "spanId": "b7ad6b7169203331",
                    "flags": 256,
                    "name": "llm_request",
                    "kind": 2,
                    "startTimeUnixNano": "1700000000123456789",
                    "endTimeUnixNano": "1700000001000000000",
                    "attributes": [
                        {"key": "s", "value": {"stringValue": "a\"b\n"}},
                        {"key": "i", "value": {"intValue": "-9007199254740993"}},
                        {"key": "zero", "value": {"intValue": "0"}},
                        {"key": "d", "value": {"doubleValue": 0.1}},
                        {"key": "inf", "value": {"doubleValue": "Infinity"}},
                        {"key": "b", "value": {"boolValue": false}},
                        {"key": "bytes", "value": {"bytesValue": "aGkhPw=="}},
                        {"key": "arr", "value": {"arrayValue": {"values": [{"intValue": "1"}]}}},
                        {"key": "kv", "value": {"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": true}}]}}}
                    ],
                    "events": [{"timeUnixNano": "5", "name": "e"}],
                    "status": {"code": 1}
                }]
            }],
            "schemaUrl": "https://opentelemetry.io/schemas/1.11.0"
        }]});
        assert_eq!(parsed(&request), expected);
    }

    #[test]
    fn an_empty_request_is_an_empty_object() {
        assert_eq!(
            export_request_json(&ExportTraceServiceRequest::default()),
            "{}"
        );
    }

    #[test]
    fn base64_pads_as_rfc_4648_says() {
        // RFC 4648 section 10's test vectors.
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            let mut out = String::new();
            push_base64(&mut out, plain.as_bytes());
            assert_eq!(out, coded, "{plain}");
        }
    }

    #[test]
    fn strings_with_control_characters_read_back_as_sent() {
        let text: String = (0u8..0x80)
            .map(char::from)
            .chain("é\u{2028}".chars())
            .collect();
        let mut out = String::new();
        push_string(&mut out, &text);
        assert_eq!(serde_json::from_str::<String>(&out).unwrap(), text);
    }

    #[test]
    fn doubles_read_back_as_the_same_number() {
        for d in [0.0, -0.0, 1.0, 0.1, 1e300, 5e-324, f64::MAX, 0.003_212_5] {
            let mut out = String::new();
            push_double(&mut out, d);
            let back: f64 = serde_json::from_str(&out).unwrap();
            assert_eq!(back.to_bits(), d.to_bits(), "{d}: {out}");
        }
        let mut out = String::new();
        push_double(&mut out, f64::NAN);
        assert_eq!(out, "\"NaN\"");
    }
}
