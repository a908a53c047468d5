//! The OTLP receiver over its two transports on 127.0.0.1: export requests made here and
//! the bodies the real vLLM sent (fixtures/real/vllm-0.32-cpu/otlp), every refusal, and
//! clients that stall or send garbage. Each test waits for an answer (or a closed
//! connection), never for a time: the receiver writes a request's line before it answers
//! it, so an answered export is in the file.

// The helpers below are test code too: a failed connection is the test's failure.
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::HeaderMap;
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use inferlint_core::engine::VLLM;
use inferlint_core::model::traces::ServerRequest;
use inferlint_engines::files::read_spans;
use inferlint_live::otlp::{
    Listen, OtlpOptions, OtlpReceiver, GRPC_PATH, HTTP_PATH, MAX_MESSAGE_BYTES,
};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;
use serde_json::Value;

/// What came back: the status, the headers, the body and (HTTP/2) the trailers.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Vec<u8>,
    trailers: Option<HeaderMap>,
}

impl Answer {
    /// The gRPC status: from the trailers, or from the headers of a Trailers-Only answer.
    fn grpc_status(&self) -> Option<String> {
        self.trailers
            .as_ref()
            .and_then(|t| t.get("grpc-status"))
            .or_else(|| self.headers.get("grpc-status"))
            .map(|v| v.to_str().unwrap().to_owned())
    }
}

async fn collect(response: hyper::Response<hyper::body::Incoming>) -> Answer {
    let (parts, body) = response.into_parts();
    let collected = body.collect().await.unwrap();
    let trailers = collected.trailers().cloned();
    Answer {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body: collected.to_bytes().to_vec(),
        trailers,
    }
}

/// One request over HTTP/2 with prior knowledge, as a gRPC client opens.
async fn h2(addr: SocketAddr, request: Request<Full<Bytes>>) -> Answer {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut send, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    let driving = tokio::spawn(connection);
    let answer = collect(send.send_request(request).await.unwrap()).await;
    drop(send);
    let _ = driving.await;
    answer
}

/// One request over HTTP/1.1, as the OTLP/HTTP exporters send it.
async fn h1(addr: SocketAddr, request: Request<Full<Bytes>>) -> Answer {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut send, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    let driving = tokio::spawn(connection);
    let answer = collect(send.send_request(request).await.unwrap()).await;
    drop(send);
    let _ = driving.await;
    answer
}

fn grpc_request(path: &str, encoding: Option<&str>, body: Vec<u8>) -> Request<Full<Bytes>> {
    let mut request = Request::post(format!("http://127.0.0.1{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(encoding) = encoding {
        request = request.header("grpc-encoding", encoding);
    }
    request.body(Full::new(Bytes::from(body))).unwrap()
}

fn http_request(
    method: &str,
    path: &str,
    kind: &str,
    encoding: Option<&str>,
    body: Vec<u8>,
) -> Request<Full<Bytes>> {
    let mut request = Request::builder()
        .method(method)
        .uri(format!("http://127.0.0.1{path}"))
        .header("host", "127.0.0.1")
        .header("content-type", kind);
    if let Some(encoding) = encoding {
        request = request.header("content-encoding", encoding);
    }
    request.body(Full::new(Bytes::from(body))).unwrap()
}

/// A message in a gRPC frame: flag, big-endian length, the message.
fn frame(flag: u8, message: &[u8]) -> Vec<u8> {
    let mut out = vec![flag];
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn attribute(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

/// An export request of one `llm_request` span as vLLM 0.32 makes it (its attributes and
/// their types, `vllm/v1/engine/output_processor.py` `do_tracing`) and one span of
/// another name, as vLLM's loaders export at boot.
fn vllm_export(id: &str, span_id: u8, start_ns: u64) -> ExportTraceServiceRequest {
    use any_value::Value::{DoubleValue, IntValue, StringValue};
    let request = Span {
        trace_id: vec![0x5b; 16],
        span_id: vec![span_id; 8],
        name: "llm_request".into(),
        kind: 2,
        start_time_unix_nano: start_ns,
        end_time_unix_nano: start_ns + 1_500_000_000,
        attributes: vec![
            attribute("gen_ai.latency.time_to_first_token", DoubleValue(0.125)),
            attribute("gen_ai.latency.e2e", DoubleValue(1.5)),
            attribute("gen_ai.latency.time_in_queue", DoubleValue(0.0625)),
            attribute("gen_ai.usage.prompt_tokens", IntValue(32)),
            attribute("gen_ai.usage.completion_tokens", IntValue(16)),
            attribute("gen_ai.latency.time_in_model_prefill", DoubleValue(0.03125)),
            attribute("gen_ai.latency.time_in_model_decode", DoubleValue(1.25)),
            attribute("gen_ai.request.id", StringValue(id.into())),
        ],
        ..Default::default()
    };
    let loading = Span {
        trace_id: vec![0x6c; 16],
        span_id: vec![span_id.wrapping_add(100); 8],
        name: "Load weights".into(),
        start_time_unix_nano: start_ns - 60_000_000_000,
        ..Default::default()
    };
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans: vec![request, loading],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// What the reader must make of [`vllm_export`]'s request span: each attribute's value as
/// sent, the arrival its start.
fn expected_request(id: &str, start_ns: u64) -> ServerRequest {
    ServerRequest {
        id: Some(id.into()),
        arrival: Some(start_ns as f64 / 1e9),
        queue_s: Some(0.0625),
        ttft_s: Some(0.125),
        prefill_s: Some(0.03125),
        decode_s: Some(1.25),
        e2e_s: Some(1.5),
        prompt_tokens: Some(32),
        output_tokens: Some(16),
        ..Default::default()
    }
}

fn start(dir: &Path, options: &OtlpOptions) -> (OtlpReceiver, PathBuf) {
    let out = dir.join("spans.otlp.jsonl");
    let receiver = OtlpReceiver::start_with(Listen::AnyPort, &out, options).unwrap();
    assert!(receiver.local_addr().ip().is_loopback());
    (receiver, out)
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn a_grpc_export_is_answered_ok_in_trailers_and_written() {
    let dir = tempfile::tempdir().unwrap();
    let before = inferlint_live::clock::now();
    let (receiver, out) = start(dir.path(), &OtlpOptions::default());
    let after = inferlint_live::clock::now();
    let start_ns = 1_796_399_044_784_104_448;
    let message = vllm_export("cmpl-a-0", 1, start_ns).encode_to_vec();
    let answer = h2(
        receiver.local_addr(),
        grpc_request(GRPC_PATH, None, frame(0, &message)),
    )
    .await;
    // gRPC over HTTP/2: 200, the empty response in its 5-byte frame, status 0 in trailers.
    assert_eq!(answer.status, 200);
    assert_eq!(answer.headers["content-type"], "application/grpc");
    assert_eq!(answer.body, [0, 0, 0, 0, 0]);
    assert_eq!(answer.grpc_status().as_deref(), Some("0"));
    let summary = receiver.stop();
    assert_eq!(
        (summary.requests, summary.spans, summary.refused),
        (1, 2, 0)
    );

    let file = lines(&out);
    assert_eq!(file[0]["schema"], "inferlint.otlp/1");
    let t_wall = file[0]["t_wall"].as_f64().unwrap();
    assert!(before.wall_s <= t_wall && t_wall <= after.wall_s);
    // The span as OTLP/JSON writes it: hex ids, the time a decimal string.
    let span = &file[1]["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
    assert_eq!(span["traceId"], "5b".repeat(16));
    assert_eq!(span["spanId"], "01".repeat(8));
    assert_eq!(span["startTimeUnixNano"], start_ns.to_string());

    let read = read_spans(&out, &VLLM).unwrap();
    assert_eq!(read.requests, [expected_request("cmpl-a-0", start_ns)]);
    assert_eq!(read.other_records, 1, "the loader's span is another record");
    assert_eq!(read.anchor.unwrap().t_wall, t_wall);
}

#[tokio::test]
async fn an_http_export_plain_or_gzipped_is_answered_200_and_written() {
    let dir = tempfile::tempdir().unwrap();
    let (receiver, out) = start(dir.path(), &OtlpOptions::default());
    let plain = vllm_export("a", 1, 1_700_000_000_000_000_000).encode_to_vec();
    let zipped = gzip(&vllm_export("b", 2, 1_700_000_001_000_000_000).encode_to_vec());
    for (body, encoding) in [(plain, None), (zipped, Some("gzip"))] {
        let request = http_request("POST", HTTP_PATH, "application/x-protobuf", encoding, body);
        let answer = h1(receiver.local_addr(), request).await;
        // OTLP/HTTP: 200 and an empty ExportTraceServiceResponse, which is zero bytes.
        assert_eq!(answer.status, 200);
        assert_eq!(answer.headers["content-type"], "application/x-protobuf");
        assert!(answer.body.is_empty());
    }
    // OTLP/HTTP over HTTP/2 is the same path.
    let request = http_request(
        "POST",
        HTTP_PATH,
        "application/x-protobuf",
        None,
        vllm_export("c", 3, 1_700_000_002_000_000_000).encode_to_vec(),
    );
    assert_eq!(h2(receiver.local_addr(), request).await.status, 200);
    let summary = receiver.stop();
    assert_eq!((summary.requests, summary.spans), (3, 6));
    let read = read_spans(&out, &VLLM).unwrap();
    assert_eq!(
        read.requests,
        [
            expected_request("a", 1_700_000_000_000_000_000),
            expected_request("b", 1_700_000_001_000_000_000),
            expected_request("c", 1_700_000_002_000_000_000),
        ]
    );
}

#[tokio::test]
async fn a_compressed_grpc_frame_is_read_by_its_encoding_and_refused_in_another() {
    let dir = tempfile::tempdir().unwrap();
    let (receiver, out) = start(dir.path(), &OtlpOptions::default());
    let message = vllm_export("z", 1, 1_700_000_000_000_000_000).encode_to_vec();
    let zipped = frame(1, &gzip(&message));
    let answer = h2(
        receiver.local_addr(),
        grpc_request(GRPC_PATH, Some("gzip"), zipped.clone()),
    )
    .await;
    assert_eq!(answer.grpc_status().as_deref(), Some("0"));
    // The same frame said to be zstd: UNIMPLEMENTED (12), the encodings served named.
    let answer = h2(
        receiver.local_addr(),
        grpc_request(GRPC_PATH, Some("zstd"), zipped.clone()),
    )
    .await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.grpc_status().as_deref(), Some("12"));
    assert!(answer.headers["grpc-accept-encoding"]
        .to_str()
        .unwrap()
        .contains("gzip"));
    // Flagged compressed with no grpc-encoding: a broken frame, INTERNAL (13).
    let answer = h2(receiver.local_addr(), grpc_request(GRPC_PATH, None, zipped)).await;
    assert_eq!(answer.grpc_status().as_deref(), Some("13"));
    let summary = receiver.stop();
    assert_eq!((summary.requests, summary.refused), (1, 2));
    assert_eq!(read_spans(&out, &VLLM).unwrap().requests.len(), 1);
}

#[tokio::test]
async fn a_message_over_the_bound_is_refused_on_both_transports() {
    let dir = tempfile::tempdir().unwrap();
    let (receiver, out) = start(dir.path(), &OtlpOptions::default());
    let addr = receiver.local_addr();
    // One byte over: its content does not matter, its size is refused first.
    let over = vec![0u8; MAX_MESSAGE_BYTES + 1];
    let answer = h2(addr, grpc_request(GRPC_PATH, None, frame(0, &over))).await;
    assert_eq!(
        answer.grpc_status().as_deref(),
        Some("8"),
        "RESOURCE_EXHAUSTED"
    );
    let answer = h1(
        addr,
        http_request(
            "POST",
            HTTP_PATH,
            "application/x-protobuf",
            None,
            over.clone(),
        ),
    )
    .await;
    assert_eq!(answer.status, 413);
    // The body is a google.rpc.Status: code RESOURCE_EXHAUSTED, a message saying why.
    let (code, message) = rpc_status(&answer.body);
    assert_eq!(code, 8);
    assert!(message.contains("4 MiB"), "{message}");
    // A gzip body that inflates past the bound is refused as large, however small it is.
    let bomb = gzip(&vec![0u8; 2 * MAX_MESSAGE_BYTES]);
    let answer = h1(
        addr,
        http_request(
            "POST",
            HTTP_PATH,
            "application/x-protobuf",
            Some("gzip"),
            bomb,
        ),
    )
    .await;
    assert_eq!(answer.status, 413);
    // Exactly the bound is taken: a request whose one attribute fills it out (its
    // length is set again until the nested lengths' varints settle).
    let mut full = vllm_export("full", 9, 1_700_000_000_000_000_000);
    let spans = &mut full.resource_spans[0].scope_spans[0].spans;
    spans[1].attributes.push(attribute(
        "filler",
        any_value::Value::StringValue(String::new()),
    ));
    for _ in 0..4 {
        let len = full.encoded_len() as i64;
        let last = full.resource_spans[0].scope_spans[0].spans[1]
            .attributes
            .last_mut()
            .unwrap();
        if let Some(AnyValue {
            value: Some(any_value::Value::StringValue(s)),
        }) = &mut last.value
        {
            let want = (s.len() as i64 + MAX_MESSAGE_BYTES as i64 - len).max(0) as usize;
            *s = "x".repeat(want);
        }
    }
    assert_eq!(full.encoded_len(), MAX_MESSAGE_BYTES);
    let answer = h1(
        addr,
        http_request(
            "POST",
            HTTP_PATH,
            "application/x-protobuf",
            None,
            full.encode_to_vec(),
        ),
    )
    .await;
    assert_eq!(answer.status, 200);
    let summary = receiver.stop();
    assert_eq!(
        (summary.too_large, summary.refused, summary.requests),
        (3, 3, 1)
    );
    assert!(summary.first_refusal.unwrap().contains("larger than 4 MiB"));
    assert_eq!(read_spans(&out, &VLLM).unwrap().requests.len(), 1);
}

/// `google.rpc.Status`'s code (field 1) and message (field 2).
fn rpc_status(body: &[u8]) -> (i32, String) {
    #[derive(Clone, PartialEq, prost::Message)]
    struct Status {
        #[prost(int32, tag = "1")]
        code: i32,
        #[prost(string, tag = "2")]
        message: String,
    }
    let status = Status::decode(body).unwrap();
    (status.code, status.message)
}

#[tokio::test]
async fn garbage_and_requests_of_another_kind_are_refused_with_their_statuses() {
    let dir = tempfile::tempdir().unwrap();
    let (receiver, out) = start(dir.path(), &OtlpOptions::default());
    let addr = receiver.local_addr();
    // Not protobuf: a field of wire type 7 does not exist.
    let garbage = vec![0xff, 0xff, 0xff, 0xff];
    let answer = h2(addr, grpc_request(GRPC_PATH, None, frame(0, &garbage))).await;
    assert_eq!(
        answer.grpc_status().as_deref(),
        Some("3"),
        "INVALID_ARGUMENT"
    );
    let answer = h1(
        addr,
        http_request("POST", HTTP_PATH, "application/x-protobuf", None, garbage),
    )
    .await;
    assert_eq!(answer.status, 400);
    assert_eq!(rpc_status(&answer.body).0, 3);
    // Another method of OTLP's services, over gRPC: UNIMPLEMENTED.
    let metrics = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";
    let answer = h2(addr, grpc_request(metrics, None, frame(0, &[]))).await;
    assert_eq!(answer.grpc_status().as_deref(), Some("12"));
    // Over HTTP: another method, another path, another content type, another encoding.
    let empty = || Vec::new();
    let get = h1(
        addr,
        http_request("GET", HTTP_PATH, "application/x-protobuf", None, empty()),
    )
    .await;
    assert_eq!(get.status, 405);
    assert_eq!(get.headers["allow"], "POST");
    let metrics = h1(
        addr,
        http_request(
            "POST",
            "/v1/metrics",
            "application/x-protobuf",
            None,
            empty(),
        ),
    )
    .await;
    assert_eq!(metrics.status, 404);
    let json = h1(
        addr,
        http_request("POST", HTTP_PATH, "application/json", None, b"{}".to_vec()),
    )
    .await;
    assert_eq!(json.status, 415);
    let zstd = h1(
        addr,
        http_request(
            "POST",
            HTTP_PATH,
            "application/x-protobuf",
            Some("zstd"),
            empty(),
        ),
    )
    .await;
    assert_eq!(zstd.status, 415);
    // A gRPC call that is not a POST: 405, as gRPC's protocol has it.
    let mut get = grpc_request(GRPC_PATH, None, Vec::new());
    *get.method_mut() = hyper::Method::GET;
    assert_eq!(h2(addr, get).await.status, 405);
    // Bytes that are not HTTP at all close their own connection.
    let mut raw = TcpStream::connect(addr).unwrap();
    raw.write_all(b"\x00\x01\x02 not http at all\r\n\r\n")
        .unwrap();
    let mut rest = Vec::new();
    let _ = raw.read_to_end(&mut rest);
    // And the receiver still receives.
    let good = vllm_export("after", 1, 1_700_000_000_000_000_000).encode_to_vec();
    let answer = h2(addr, grpc_request(GRPC_PATH, None, frame(0, &good))).await;
    assert_eq!(answer.grpc_status().as_deref(), Some("0"));
    let summary = receiver.stop();
    // Eight requests refused; the bytes that were not HTTP never made a request: their
    // connection is counted as broken.
    assert_eq!(
        (
            summary.requests,
            summary.refused,
            summary.broken_connections
        ),
        (1, 8, 1)
    );
    assert_eq!(read_spans(&out, &VLLM).unwrap().requests.len(), 1);
}

/// Sends the head of an OTLP/HTTP request that announces 100 bytes, waits for the
/// receiver's `100 Continue` (it is reading the body: the request is in its hands), sends
/// 10 of the bytes and stops.
fn stall(addr: SocketAddr) -> TcpStream {
    let mut raw = TcpStream::connect(addr).unwrap();
    // Only a guard against a receiver that never answers: the test waits for bytes.
    raw.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    raw.write_all(
        b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n",
    )
    .unwrap();
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        assert_eq!(
            raw.read(&mut byte).unwrap(),
            1,
            "closed before 100 Continue"
        );
        got.push(byte[0]);
    }
    assert!(
        got.starts_with(b"HTTP/1.1 100"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    raw.write_all(&[0u8; 10]).unwrap();
    raw
}

#[tokio::test]
async fn a_stalled_body_is_refused_at_its_deadline_and_holds_no_one_else() {
    let dir = tempfile::tempdir().unwrap();
    let options = OtlpOptions {
        body_timeout: Duration::from_millis(300),
        ..OtlpOptions::default()
    };
    let (receiver, out) = start(dir.path(), &options);
    let addr = receiver.local_addr();
    let mut stalled = tokio::task::spawn_blocking(move || stall(addr))
        .await
        .unwrap();
    // While it stalls, another exporter is served.
    let good = vllm_export("meanwhile", 1, 1_700_000_000_000_000_000).encode_to_vec();
    let answer = h2(addr, grpc_request(GRPC_PATH, None, frame(0, &good))).await;
    assert_eq!(answer.grpc_status().as_deref(), Some("0"));
    // Then its deadline passes: 408 on its own connection.
    let answer = tokio::task::spawn_blocking(move || {
        let mut text = Vec::new();
        let _ = stalled.read_to_end(&mut text);
        String::from_utf8_lossy(&text).into_owned()
    })
    .await
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let summary = receiver.stop();
    assert_eq!(
        (summary.requests, summary.refused, summary.cut_at_stop),
        (1, 1, 0)
    );
    assert_eq!(read_spans(&out, &VLLM).unwrap().requests.len(), 1);
}

#[tokio::test]
async fn stop_closes_a_stalled_client_after_its_grace_and_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let options = OtlpOptions {
        body_timeout: Duration::from_secs(600),
        stop_grace: Duration::from_millis(200),
        ..OtlpOptions::default()
    };
    let (receiver, out) = start(dir.path(), &options);
    let addr = receiver.local_addr();
    let mut stalled = tokio::task::spawn_blocking(move || stall(addr))
        .await
        .unwrap();
    let summary = tokio::task::spawn_blocking(move || receiver.stop())
        .await
        .unwrap();
    // The stalled request was still arriving when the grace ended: cut, and said.
    assert_eq!(summary.cut_at_stop, 1);
    assert_eq!(summary.requests, 0);
    // Its connection is closed: the client reads the end.
    let mut rest = Vec::new();
    tokio::task::spawn_blocking(move || stalled.read_to_end(&mut rest).map(|_| rest))
        .await
        .unwrap()
        .unwrap();
    // The file is the header alone: nothing half-written.
    assert_eq!(lines(&out).len(), 1);
}

#[tokio::test]
async fn a_client_that_connects_and_sends_nothing_is_closed_at_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let options = OtlpOptions {
        body_timeout: Duration::from_millis(300),
        max_connections: 1,
        ..OtlpOptions::default()
    };
    let (receiver, _out) = start(dir.path(), &options);
    let addr = receiver.local_addr();
    // It holds the one place there is, until the deadline closes it: the client reads the
    // end.
    tokio::task::spawn_blocking(move || {
        let mut raw = TcpStream::connect(addr).unwrap();
        raw.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut rest = Vec::new();
        raw.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
    })
    .await
    .unwrap();
    // Then an exporter is served: the place is free again (the receiver gives it back
    // before it closes the connection, so the end the client read says it is free).
    let body = vllm_export("after", 1, 1_700_000_000_000_000_000).encode_to_vec();
    let request = http_request("POST", HTTP_PATH, "application/x-protobuf", None, body);
    assert_eq!(h1(addr, request).await.status, 200);
    let summary = receiver.stop();
    // Closed for silence: neither broken nor cut.
    assert_eq!(summary.requests, 1);
    assert_eq!((summary.broken_connections, summary.cut_at_stop), (0, 0));
}

#[tokio::test]
async fn a_connection_past_the_limit_is_closed_unread_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let options = OtlpOptions {
        max_connections: 1,
        ..OtlpOptions::default()
    };
    let (receiver, _out) = start(dir.path(), &options);
    let addr = receiver.local_addr();
    // The one connection allowed, kept open after an answered export.
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut send, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    let driving = tokio::spawn(connection);
    let body = vllm_export("kept", 1, 1_700_000_000_000_000_000).encode_to_vec();
    let request = http_request("POST", HTTP_PATH, "application/x-protobuf", None, body);
    assert_eq!(
        collect(send.send_request(request).await.unwrap())
            .await
            .status,
        200
    );
    // A second one is closed before it is read.
    let closed = tokio::task::spawn_blocking(move || {
        let mut raw = TcpStream::connect(addr).unwrap();
        raw.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let _ = raw.write_all(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n\r\n");
        let mut rest = Vec::new();
        raw.read_to_end(&mut rest).map(|_| rest.len())
    })
    .await
    .unwrap();
    assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    assert_eq!(receiver.tally().connections_refused, 1);
    drop(send);
    let _ = driving.await;
    let summary = receiver.stop();
    assert_eq!((summary.requests, summary.connections_refused), (1, 1));
}

#[test]
fn an_existing_file_is_refused_and_a_port_in_use_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("spans.otlp.jsonl");
    std::fs::write(&out, "earlier\n").unwrap();
    let e = OtlpReceiver::start(Listen::AnyPort, out.clone()).unwrap_err();
    assert!(e.to_string().contains("exists"), "{e}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "earlier\n");
    // With force it is replaced.
    let forced = OtlpOptions {
        force: true,
        ..OtlpOptions::default()
    };
    let receiver = OtlpReceiver::start_with(Listen::AnyPort, &out, &forced).unwrap();
    let port = receiver.local_addr().port();
    let other = dir.path().join("other.jsonl");
    let e = OtlpReceiver::start(Listen::Port(port), other).unwrap_err();
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
    assert_eq!(receiver.stop().requests, 0);
    assert_eq!(lines(&out)[0]["schema"], "inferlint.otlp/1");
}

/// The bodies the real vLLM sent (fixtures/real/vllm-0.32-cpu/otlp/*/bodies), replayed
/// over the transport each came by: every one is taken, and each line written equals (as
/// JSON) what the receiver wrote when vLLM sent it and what the protobuf library of
/// vLLM's own venv decoded from the same bytes (python-rendering.jsonl).
#[tokio::test]
async fn the_real_engine_s_bodies_replayed_give_the_lines_written_then() {
    let fixtures =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/real/vllm-0.32-cpu/otlp");
    for transport in ["grpc", "http"] {
        let folder = fixtures.join(transport);
        let dir = tempfile::tempdir().unwrap();
        let (receiver, out) = start(dir.path(), &OtlpOptions::default());
        let mut names: Vec<PathBuf> = std::fs::read_dir(folder.join("bodies"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        assert!(names.len() >= 9, "{transport}: {names:?}");
        for name in &names {
            let body = std::fs::read(name).unwrap();
            let answer = if transport == "grpc" {
                let answer = h2(receiver.local_addr(), grpc_request(GRPC_PATH, None, body)).await;
                assert_eq!(answer.grpc_status().as_deref(), Some("0"), "{name:?}");
                answer
            } else {
                let request = http_request("POST", HTTP_PATH, "application/x-protobuf", None, body);
                h1(receiver.local_addr(), request).await
            };
            assert_eq!(answer.status, 200, "{name:?}");
        }
        let summary = receiver.stop();
        assert_eq!(summary.requests as usize, names.len());
        let replayed = lines(&out);
        let then = lines(&folder.join("spans.otlp.jsonl"));
        assert_eq!(replayed[1..], then[1..], "{transport}");
        let python: Vec<Value> = lines(&folder.join("python-rendering.jsonl"))
            .into_iter()
            .map(|mut l| l["request"].take())
            .collect();
        assert_eq!(replayed[1..], python[..], "{transport}");
    }
}

/// The bodies arriving at once are held to the receiver's budget, whatever the senders
/// do: with a budget of 64 KiB, a body of 100 KiB (well under the 4 MiB a message may
/// be) is refused as it arrives, on both transports, with the status an exporter sends
/// again on (503, `UNAVAILABLE`), and counted; what it held is given back, so the next
/// export that fits is written.
#[tokio::test]
async fn bodies_past_the_receivers_budget_are_refused_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let options = OtlpOptions {
        max_bytes_held: 64 << 10,
        ..OtlpOptions::default()
    };
    let (receiver, out) = start(dir.path(), &options);
    let addr = receiver.local_addr();
    let big = vec![0u8; 100 << 10];
    let request = http_request(
        "POST",
        HTTP_PATH,
        "application/x-protobuf",
        None,
        big.clone(),
    );
    assert_eq!(h1(addr, request).await.status, 503);
    let answer = h2(addr, grpc_request(GRPC_PATH, None, frame(0, &big))).await;
    assert_eq!(answer.grpc_status().as_deref(), Some("14"));
    let body = vllm_export("fits", 1, 1_700_000_000_000_000_000).encode_to_vec();
    assert!(body.len() < 64 << 10);
    let request = http_request("POST", HTTP_PATH, "application/x-protobuf", None, body);
    assert_eq!(h1(addr, request).await.status, 200);
    let summary = receiver.stop();
    assert_eq!(
        (summary.requests, summary.refused, summary.over_budget),
        (1, 2, 2)
    );
    assert!(
        summary
            .first_refusal
            .as_deref()
            .is_some_and(|r| r.contains("64 KiB")),
        "{:?}",
        summary.first_refusal
    );
    assert_eq!(read_spans(&out, &VLLM).unwrap().requests.len(), 1);
}
