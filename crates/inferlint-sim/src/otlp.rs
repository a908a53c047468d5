//! The OpenTelemetry spans vLLM exports (`--otlp-traces-endpoint`), as the real vLLM 0.32
//! sends them (`fixtures/real/vllm-0.32-cpu/otlp/MADE.md`): one `llm_request` span for
//! each request it finished, from its API server's process, and the spans its loaders
//! make at boot, from each of its processes. The messages are `opentelemetry-proto`'s
//! types; [`json_line`] writes one in the OTLP/JSON encoding, as inferlint's receiver
//! writes a line of `spans.otlp.jsonl`.
//!
//! Every resource carries one attribute the real engine does not,
//! `inferlint.simulated`: a span file made by the simulator says so.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};

use crate::rng::Rng;

/// The resource attribute that marks every simulated span.
pub const SIMULATED_ATTRIBUTE: &str = "inferlint.simulated";
/// Its value.
pub const SIMULATED_NOTE: &str = "simulated by inferlint-sim: not a real vLLM";

/// The name of vLLM's request span.
pub const REQUEST_SPAN: &str = "llm_request";

/// `SPAN_KIND_INTERNAL` and `SPAN_KIND_SERVER`.
const KIND_INTERNAL: i32 = 1;
const KIND_SERVER: i32 = 2;
/// `SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK`, and with `..._IS_REMOTE_MASK` (a parent in
/// another process).
const FLAGS_LOCAL: u32 = 256;
const FLAGS_REMOTE_PARENT: u32 = 768;

/// One request as the server timed it, for its span. Times are Unix seconds on the
/// server's wall clock, durations seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRecord {
    /// `gen_ai.request.id`: `cmpl-{X-Request-Id}-0`, or the server's own id.
    pub id: String,
    /// When the API server received it: the span's start.
    pub arrival: f64,
    /// When the span ended (after the step that finished the request).
    pub end: f64,
    /// Seconds in the queue before it was first scheduled.
    pub queue_s: f64,
    /// Seconds from arrival to the first token.
    pub ttft_s: f64,
    /// Seconds from first scheduled to the first token.
    pub prefill_s: f64,
    /// Seconds from the first token to the last.
    pub decode_s: f64,
    /// Seconds from arrival to the last token.
    pub e2e_s: f64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Output tokens generated.
    pub completion_tokens: u64,
    /// `max_tokens` asked for.
    pub max_tokens: u64,
}

/// vLLM's three kinds of process, each exporting from a resource of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Process {
    /// The API server (`vllm.llm_engine`): the request spans and the client's boot spans.
    ApiServer,
    /// The engine core.
    EngineCore,
    /// The worker.
    Worker,
}

/// The processes of one simulated server: their pids and instance ids.
#[derive(Debug, Clone)]
pub struct Processes {
    pids: [u32; 3],
    instances: [String; 3],
}

impl Processes {
    /// The processes of a server whose API server is `pid`, ids drawn from `rng`.
    pub fn new(pid: u32, rng: &mut Rng) -> Processes {
        let mut uuid = || {
            let (a, b) = (rng.next_u64(), rng.next_u64());
            let hex = format!("{a:016x}{b:016x}");
            format!(
                "{}-{}-4{}-a{}-{}",
                &hex[0..8],
                &hex[8..12],
                &hex[13..16],
                &hex[17..20],
                &hex[20..32]
            )
        };
        Processes {
            pids: [pid, pid + 1, pid + 2],
            instances: [uuid(), uuid(), uuid()],
        }
    }

    fn index(process: Process) -> usize {
        match process {
            Process::ApiServer => 0,
            Process::EngineCore => 1,
            Process::Worker => 2,
        }
    }

    /// The resource `process` exports from, with the attributes the real one has.
    pub fn resource(&self, process: Process) -> Resource {
        let i = Processes::index(process);
        let mut attributes = vec![
            string_kv("telemetry.sdk.language", "python"),
            string_kv("telemetry.sdk.name", "opentelemetry"),
            string_kv("telemetry.sdk.version", "1.45.2"),
            string_kv("service.instance.id", &self.instances[i]),
        ];
        let (module, kind) = match process {
            Process::ApiServer => ("vllm.llm_engine", None),
            Process::EngineCore => ("vllm.engine_core", Some(("engine_core", "EngineCore"))),
            Process::Worker => ("vllm.worker", Some(("worker", "Worker_0"))),
        };
        attributes.push(string_kv("vllm.instrumenting_module_name", module));
        attributes.push(string_kv("vllm.process_id", &self.pids[i].to_string()));
        if let Some((kind, name)) = kind {
            attributes.push(string_kv("vllm.process_kind", kind));
            attributes.push(string_kv("vllm.process_name", name));
        }
        attributes.push(string_kv("service.name", "unknown_service:python"));
        attributes.push(string_kv(SIMULATED_ATTRIBUTE, SIMULATED_NOTE));
        Resource {
            attributes,
            ..Resource::default()
        }
    }
}

fn string_kv(key: &str, value: &str) -> KeyValue {
    kv(key, any_value::Value::StringValue(value.to_owned()))
}

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

fn double(key: &str, v: f64) -> KeyValue {
    kv(key, any_value::Value::DoubleValue(v))
}

fn int(key: &str, v: u64) -> KeyValue {
    kv(
        key,
        any_value::Value::IntValue(i64::try_from(v).unwrap_or(i64::MAX)),
    )
}

/// Unix nanoseconds of a time in seconds, as Python's `int(t * 1e9)`.
pub fn unix_nanos(t: f64) -> u64 {
    if t.is_finite() && t > 0.0 {
        (t * 1e9) as u64
    } else {
        0
    }
}

/// Random ids for traces and spans.
fn trace_id(rng: &mut Rng) -> Vec<u8> {
    let mut id = rng.next_u64().to_be_bytes().to_vec();
    id.extend_from_slice(&rng.next_u64().to_be_bytes());
    id
}

fn span_id(rng: &mut Rng) -> Vec<u8> {
    // An all-zero id is invalid.
    rng.next_u64().max(1).to_be_bytes().to_vec()
}

/// The `llm_request` span of one request, with the attributes vLLM 0.32's `do_tracing`
/// sets, in its order.
pub fn request_span(r: &RequestRecord, rng: &mut Rng) -> Span {
    let attributes = vec![
        double("gen_ai.latency.time_to_first_token", r.ttft_s),
        double("gen_ai.latency.e2e", r.e2e_s),
        double("gen_ai.latency.time_in_queue", r.queue_s),
        int("gen_ai.usage.prompt_tokens", r.prompt_tokens),
        int("gen_ai.usage.completion_tokens", r.completion_tokens),
        double("gen_ai.latency.time_in_model_prefill", r.prefill_s),
        double("gen_ai.latency.time_in_model_decode", r.decode_s),
        double(
            "gen_ai.latency.time_in_model_inference",
            r.prefill_s + r.decode_s,
        ),
        string_kv("gen_ai.request.id", &r.id),
        double("gen_ai.request.top_p", 1.0),
        int("gen_ai.request.max_tokens", r.max_tokens),
        double("gen_ai.request.temperature", 1.0),
        int("gen_ai.request.n", 1),
    ];
    Span {
        trace_id: trace_id(rng),
        span_id: span_id(rng),
        flags: FLAGS_LOCAL,
        name: REQUEST_SPAN.to_owned(),
        kind: KIND_SERVER,
        start_time_unix_nano: unix_nanos(r.arrival),
        end_time_unix_nano: unix_nanos(r.end.max(r.arrival)),
        attributes,
        status: Some(Status::default()),
        ..Span::default()
    }
}

/// One export request of `spans` from `process`, under the instrumentation scope `scope`.
pub fn export_request(
    processes: &Processes,
    process: Process,
    scopes: Vec<(&str, Vec<Span>)>,
) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(processes.resource(process)),
            scope_spans: scopes
                .into_iter()
                .map(|(scope, spans)| ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: scope.to_owned(),
                        ..InstrumentationScope::default()
                    }),
                    spans,
                    ..ScopeSpans::default()
                })
                .collect(),
            ..ResourceSpans::default()
        }],
    }
}

/// The scope of the request spans.
pub const REQUEST_SCOPE: &str = "vllm.tracing.otel";

/// The export request of a batch of request spans, from the API server.
pub fn request_batch(processes: &Processes, spans: Vec<Span>) -> ExportTraceServiceRequest {
    export_request(processes, Process::ApiServer, vec![(REQUEST_SCOPE, spans)])
}

/// One span the loaders make at boot: its name, parent (an index in [`BOOT_SPANS`]), the
/// process and scope it comes from, the function it times, whether its parent is in
/// another process, and when it starts and ends as shares of the boot.
struct BootSpan {
    name: &'static str,
    parent: Option<usize>,
    process: Process,
    scope: &'static str,
    function: &'static str,
    remote_parent: bool,
    from: f64,
    to: f64,
}

/// The boot spans of the real capture, as a tree.
const BOOT_SPANS: [BootSpan; 13] = [
    BootSpan {
        name: "Overall Loading",
        parent: None,
        process: Process::ApiServer,
        scope: "vllm.v1.engine.core_client",
        function: "EngineCoreClient.make_async_mp_client",
        remote_parent: false,
        from: 0.0,
        to: 1.0,
    },
    BootSpan {
        name: "AsyncMPClient init",
        parent: Some(0),
        process: Process::ApiServer,
        scope: "vllm.v1.engine.core_client",
        function: "AsyncMPClient.__init__",
        remote_parent: false,
        from: 0.0,
        to: 1.0,
    },
    BootSpan {
        name: "EngineCoreProc init",
        parent: Some(1),
        process: Process::EngineCore,
        scope: "vllm.v1.engine.core",
        function: "EngineCoreProc.__init__",
        remote_parent: true,
        from: 0.32,
        to: 0.99,
    },
    BootSpan {
        name: "Executor init",
        parent: Some(2),
        process: Process::EngineCore,
        scope: "vllm.v1.executor.abstract",
        function: "Executor.__init__",
        remote_parent: false,
        from: 0.33,
        to: 0.77,
    },
    BootSpan {
        name: "Worker init",
        parent: Some(3),
        process: Process::Worker,
        scope: "vllm.v1.executor.multiproc_executor",
        function: "WorkerProc.__init__",
        remote_parent: true,
        from: 0.35,
        to: 0.76,
    },
    BootSpan {
        name: "Worker init",
        parent: Some(4),
        process: Process::Worker,
        scope: "vllm.v1.worker.worker_base",
        function: "WorkerWrapperBase.init_worker",
        remote_parent: false,
        from: 0.36,
        to: 0.41,
    },
    BootSpan {
        name: "Loading (CPU)",
        parent: Some(4),
        process: Process::Worker,
        scope: "vllm.v1.worker.cpu_model_runner",
        function: "CPUModelRunner.load_model",
        remote_parent: false,
        from: 0.42,
        to: 0.76,
    },
    BootSpan {
        name: "Load model",
        parent: Some(6),
        process: Process::Worker,
        scope: "vllm.model_executor.model_loader.base_loader",
        function: "BaseModelLoader.load_model",
        remote_parent: false,
        from: 0.43,
        to: 0.75,
    },
    BootSpan {
        name: "Initialize model",
        parent: Some(7),
        process: Process::Worker,
        scope: "vllm.model_executor.model_loader.utils",
        function: "initialize_model",
        remote_parent: false,
        from: 0.43,
        to: 0.5,
    },
    BootSpan {
        name: "Load weights",
        parent: Some(7),
        process: Process::Worker,
        scope: "vllm.model_executor.model_loader.default_loader",
        function: "DefaultModelLoader.load_weights",
        remote_parent: false,
        from: 0.5,
        to: 0.75,
    },
    BootSpan {
        name: "Warmup (CPU)",
        parent: Some(3),
        process: Process::Worker,
        scope: "vllm.v1.worker.cpu_model_runner",
        function: "CPUModelRunner.warming_up_model",
        remote_parent: true,
        from: 0.77,
        to: 0.95,
    },
    BootSpan {
        name: "Allocate KV cache",
        parent: Some(3),
        process: Process::Worker,
        scope: "vllm.v1.worker.gpu_worker",
        function: "Worker.initialize_from_config",
        remote_parent: true,
        from: 0.95,
        to: 0.98,
    },
    BootSpan {
        name: "Prepare model",
        parent: Some(2),
        process: Process::EngineCore,
        scope: "vllm.v1.engine.core",
        function: "EngineCore._initialize_kv_caches",
        remote_parent: false,
        from: 0.77,
        to: 0.98,
    },
];

/// How many spans the loaders export at boot.
pub const BOOT_SPAN_COUNT: usize = BOOT_SPANS.len();

/// The boot spans of a server that started at `start` and was ready at `ready` (Unix
/// seconds), one export request per process (worker, engine core, API server: the order
/// their exporters sent them in the capture), each span under its own scope.
pub fn boot_batches(
    processes: &Processes,
    start: f64,
    ready: f64,
    rng: &mut Rng,
) -> Vec<ExportTraceServiceRequest> {
    let trace = trace_id(rng);
    let ids: Vec<Vec<u8>> = BOOT_SPANS.iter().map(|_| span_id(rng)).collect();
    let at = |share: f64| unix_nanos(start + (ready - start).max(0.0) * share);
    let mut out = Vec::new();
    for process in [Process::Worker, Process::EngineCore, Process::ApiServer] {
        let mut scopes: Vec<(&str, Vec<Span>)> = Vec::new();
        for (i, b) in BOOT_SPANS.iter().enumerate() {
            if b.process != process {
                continue;
            }
            let span = Span {
                trace_id: trace.clone(),
                span_id: ids[i].clone(),
                parent_span_id: b.parent.map(|p| ids[p].clone()).unwrap_or_default(),
                flags: if b.remote_parent {
                    FLAGS_REMOTE_PARENT
                } else {
                    FLAGS_LOCAL
                },
                name: b.name.to_owned(),
                kind: KIND_INTERNAL,
                start_time_unix_nano: at(b.from),
                end_time_unix_nano: at(b.to),
                attributes: vec![
                    string_kv("code.function", b.function),
                    string_kv("code.namespace", b.scope),
                ],
                status: Some(Status::default()),
                ..Span::default()
            };
            match scopes.iter_mut().find(|(s, _)| *s == b.scope) {
                Some((_, spans)) => spans.push(span),
                None => scopes.push((b.scope, vec![span])),
            }
        }
        out.push(export_request(processes, process, scopes));
    }
    out
}

/// One export request as a line of OTLP/JSON (without the line break), in the encoding
/// inferlint's receiver writes: lowerCamelCase names, fields at their defaults left out,
/// ids in lowercase hex, 64-bit integers as decimal strings, enums as integers.
pub fn json_line(request: &ExportTraceServiceRequest) -> String {
    let mut out = String::with_capacity(1024);
    let mut o = Obj::open(&mut out);
    o.list("resourceSpans", &request.resource_spans, |out, r| {
        let mut o = Obj::open(out);
        if let Some(resource) = &r.resource {
            let mut inner = Obj::open(o.key("resource"));
            inner.list("attributes", &resource.attributes, key_value);
            inner.close();
        }
        o.list("scopeSpans", &r.scope_spans, |out, s| {
            let mut o = Obj::open(out);
            if let Some(scope) = &s.scope {
                let mut inner = Obj::open(o.key("scope"));
                inner.string("name", &scope.name);
                inner.string("version", &scope.version);
                inner.close();
            }
            o.list("spans", &s.spans, span_json);
            o.close();
        });
        o.close();
    });
    o.close();
    out
}

fn span_json(out: &mut String, s: &Span) {
    let mut o = Obj::open(out);
    o.hex("traceId", &s.trace_id);
    o.hex("spanId", &s.span_id);
    o.hex("parentSpanId", &s.parent_span_id);
    if s.flags != 0 {
        o.key("flags").push_str(&s.flags.to_string());
    }
    o.string("name", &s.name);
    if s.kind != 0 {
        o.key("kind").push_str(&s.kind.to_string());
    }
    o.int64("startTimeUnixNano", s.start_time_unix_nano);
    o.int64("endTimeUnixNano", s.end_time_unix_nano);
    o.list("attributes", &s.attributes, key_value);
    if let Some(status) = &s.status {
        let mut inner = Obj::open(o.key("status"));
        inner.string("message", &status.message);
        if status.code != 0 {
            inner.key("code").push_str(&status.code.to_string());
        }
        inner.close();
    }
    o.close();
}

fn key_value(out: &mut String, kv: &KeyValue) {
    let mut o = Obj::open(out);
    o.string("key", &kv.key);
    if let Some(value) = &kv.value {
        let mut inner = Obj::open(o.key("value"));
        match &value.value {
            Some(any_value::Value::StringValue(s)) => push_string(inner.key("stringValue"), s),
            Some(any_value::Value::IntValue(i)) => {
                let out = inner.key("intValue");
                out.push('"');
                out.push_str(&i.to_string());
                out.push('"');
            }
            Some(any_value::Value::DoubleValue(d)) => {
                let out = inner.key("doubleValue");
                match serde_json::Number::from_f64(*d) {
                    Some(n) => out.push_str(&n.to_string()),
                    None => out.push_str("\"NaN\""),
                }
            }
            Some(any_value::Value::BoolValue(b)) => {
                inner
                    .key("boolValue")
                    .push_str(if *b { "true" } else { "false" });
            }
            // The simulator sets no other kind of value.
            _ => {}
        }
        inner.close();
    }
    o.close();
}

/// The members of one JSON object being written.
struct Obj<'a> {
    out: &'a mut String,
    any: bool,
}

impl<'a> Obj<'a> {
    fn open(out: &'a mut String) -> Obj<'a> {
        out.push('{');
        Obj { out, any: false }
    }

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
                out.push_str(&format!("{b:02x}"));
            }
            out.push('"');
        }
    }

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

/// A JSON string (serde_json's escaping: the simulator's strings are plain ASCII).
fn push_string(out: &mut String, s: &str) {
    out.push_str(&serde_json::Value::from(s).to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> RequestRecord {
        RequestRecord {
            id: "cmpl-bench-3-0".into(),
            arrival: 1_796_399_044.784_104_4,
            end: 1_796_399_044.984_615,
            queue_s: 4.0e-5,
            ttft_s: 0.0418,
            prefill_s: 0.0335,
            decode_s: 0.1547,
            e2e_s: 0.1998,
            prompt_tokens: 32,
            completion_tokens: 16,
            max_tokens: 16,
        }
    }

    /// The span reads back, through the engines' reader and vLLM's table, as the request
    /// it was made from.
    #[test]
    fn a_request_span_reads_back_as_its_request() {
        let mut rng = Rng::new(7);
        let processes = Processes::new(4242, &mut rng);
        let span = request_span(&record(), &mut rng);
        let mut text = String::new();
        for batch in boot_batches(&processes, 1_796_399_000.0, 1_796_399_030.0, &mut rng) {
            text.push_str(&json_line(&batch));
            text.push('\n');
        }
        text.push_str(&json_line(&request_batch(&processes, vec![span])));
        text.push('\n');
        let read = inferlint_engines::files::read_spans_from(
            std::path::Path::new("spans.otlp.jsonl"),
            text.as_bytes(),
            inferlint_core::Engine::Vllm.descriptor(),
        )
        .expect("spans");
        assert_eq!(read.requests.len(), 1);
        assert_eq!(read.other_records, BOOT_SPAN_COUNT as u64);
        assert_eq!(read.skipped, 0);
        let r = &read.requests[0];
        assert_eq!(r.id.as_deref(), Some("cmpl-bench-3-0"));
        assert_eq!(r.ttft_s, Some(0.0418));
        assert_eq!(r.queue_s, Some(4.0e-5));
        assert_eq!(r.prefill_s, Some(0.0335));
        assert_eq!(r.decode_s, Some(0.1547));
        assert_eq!(r.e2e_s, Some(0.1998));
        assert_eq!((r.prompt_tokens, r.output_tokens), (Some(32), Some(16)));
        // Nanoseconds: the start reads back within a microsecond.
        assert!((r.arrival.unwrap() - 1_796_399_044.784_104_4).abs() < 1e-6);
    }
}
