//! The simulated server's span exporter: OpenTelemetry's batch span processor and OTLP
//! exporter as vLLM runs them (`--otlp-traces-endpoint URL`).
//!
//! - **Batching.** Finished requests' spans are queued; every
//!   `OTEL_BSP_SCHEDULE_DELAY` milliseconds (5,000 by default), and at once when
//!   `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (512) are queued, the queue goes out in export
//!   requests of at most that many spans; a span beyond `OTEL_BSP_MAX_QUEUE_SIZE`
//!   (2,048) queued is dropped, as the SDK drops it. At shutdown what is queued goes out.
//!   The boot spans go out first, one export request per process.
//! - **Transport.** `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` (else
//!   `OTEL_EXPORTER_OTLP_PROTOCOL`): `grpc` (the default) sends one unary call of
//!   `TraceService/Export` over HTTP/2 with prior knowledge to `http://HOST:PORT`;
//!   `http/protobuf` POSTs the message to the endpoint as given (`.../v1/traces`), as
//!   vLLM's exporters do. An export that fails is tried twice more, a second apart, then
//!   dropped and counted (the SDK retries within its timeout, then drops).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{CONTENT_TYPE, HOST};
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use tokio::sync::Notify;

use crate::otlp::{self, Processes};

/// The gRPC method every OTLP trace exporter calls.
pub const GRPC_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// How the exporter sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP over gRPC (vLLM's default).
    Grpc,
    /// OTLP/HTTP with a protobuf body.
    HttpProtobuf,
}

/// Where and how the spans go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpConfig {
    /// `--otlp-traces-endpoint`, as given.
    pub endpoint: String,
    /// The transport.
    pub protocol: Protocol,
    /// The batch span processor's interval.
    pub schedule_delay: Duration,
    /// The most spans in one export request.
    pub max_export_batch: usize,
    /// The most spans queued; more are dropped.
    pub max_queue: usize,
}

impl OtlpConfig {
    /// The exporter for `endpoint` with OpenTelemetry's defaults.
    pub fn new(endpoint: &str) -> OtlpConfig {
        OtlpConfig {
            endpoint: endpoint.to_owned(),
            protocol: Protocol::Grpc,
            schedule_delay: Duration::from_millis(5000),
            max_export_batch: 512,
            max_queue: 2048,
        }
    }

    /// The exporter for `endpoint` as the OpenTelemetry environment variables set it
    /// (`get` reads one), or why a value cannot be used.
    pub fn from_env(
        endpoint: &str,
        get: &dyn Fn(&str) -> Option<String>,
    ) -> Result<OtlpConfig, String> {
        let mut config = OtlpConfig::new(endpoint);
        let protocol = get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| get("OTEL_EXPORTER_OTLP_PROTOCOL"));
        config.protocol = match protocol.as_deref().map(str::trim) {
            None | Some("" | "grpc") => Protocol::Grpc,
            Some("http/protobuf") => Protocol::HttpProtobuf,
            Some(other) => {
                return Err(format!(
                    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL={other}: the simulator sends grpc or http/protobuf"
                ))
            }
        };
        let number = |name: &str| -> Result<Option<u64>, String> {
            get(name)
                .filter(|v| !v.trim().is_empty())
                .map(|v| {
                    v.trim()
                        .parse::<u64>()
                        .map_err(|_| format!("{name}={v}: not a whole number"))
                })
                .transpose()
        };
        if let Some(ms) = number("OTEL_BSP_SCHEDULE_DELAY")? {
            config.schedule_delay = Duration::from_millis(ms.max(1));
        }
        if let Some(n) = number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")? {
            config.max_export_batch = usize::try_from(n.max(1)).unwrap_or(usize::MAX);
        }
        if let Some(n) = number("OTEL_BSP_MAX_QUEUE_SIZE")? {
            config.max_queue = usize::try_from(n.max(1)).unwrap_or(usize::MAX);
        }
        Target::parse(&config.endpoint, config.protocol)?;
        Ok(config)
    }
}

/// What the exporter did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Export requests the receiver took.
    pub requests: u64,
    /// Spans in them.
    pub spans: u64,
    /// Export requests given up after their tries.
    pub failed: u64,
    /// Spans dropped: the queue was full, or their request failed.
    pub dropped_spans: u64,
}

/// The exporter's queue, shared by the server (which adds finished requests' spans) and
/// the exporting task.
#[derive(Debug)]
pub struct SpanQueue {
    config: OtlpConfig,
    queue: Mutex<VecDeque<Span>>,
    stats: Mutex<ExportStats>,
    wake: Notify,
}

impl SpanQueue {
    /// An empty queue for `config`.
    pub fn new(config: OtlpConfig) -> SpanQueue {
        SpanQueue {
            config,
            queue: Mutex::new(VecDeque::new()),
            stats: Mutex::new(ExportStats::default()),
            wake: Notify::new(),
        }
    }

    /// Queues a finished request's span (dropped, and counted, when the queue is full).
    pub fn push(&self, span: Span) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.len() >= self.config.max_queue {
            drop(queue);
            self.stats().dropped_spans += 1;
            return;
        }
        queue.push_back(span);
        if queue.len() >= self.config.max_export_batch {
            self.wake.notify_one();
        }
    }

    fn stats(&self) -> std::sync::MutexGuard<'_, ExportStats> {
        self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What was exported so far.
    pub fn exported(&self) -> ExportStats {
        *self.stats()
    }

    fn take_batch(&self) -> Vec<Span> {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let n = queue.len().min(self.config.max_export_batch);
        queue.drain(..n).collect()
    }

    /// Sends the boot spans, then every batch as it is due, until `stop` says; then
    /// what is left.
    pub async fn run(
        self: Arc<SpanQueue>,
        processes: Processes,
        boot: Vec<ExportTraceServiceRequest>,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        let Ok(target) = Target::parse(&self.config.endpoint, self.config.protocol) else {
            return;
        };
        for request in boot {
            self.export(&target, &request).await;
        }
        loop {
            tokio::select! {
                () = tokio::time::sleep(self.config.schedule_delay) => {}
                () = self.wake.notified() => {}
                _ = stop.wait_for(|s| *s) => break,
            }
            self.send_queued(&target, &processes).await;
        }
        self.send_queued(&target, &processes).await;
    }

    async fn send_queued(&self, target: &Target, processes: &Processes) {
        loop {
            let spans = self.take_batch();
            if spans.is_empty() {
                return;
            }
            self.export(target, &otlp::request_batch(processes, spans))
                .await;
        }
    }

    async fn export(&self, target: &Target, request: &ExportTraceServiceRequest) {
        let spans: u64 = request
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .map(|s| s.spans.len() as u64)
            .sum();
        let body = request.encode_to_vec();
        for attempt in 0..3 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            let sent = tokio::time::timeout(Duration::from_secs(10), target.send(&body)).await;
            if matches!(sent, Ok(Ok(()))) {
                let mut stats = self.stats();
                stats.requests += 1;
                stats.spans += spans;
                return;
            }
        }
        let mut stats = self.stats();
        stats.failed += 1;
        stats.dropped_spans += spans;
    }
}

/// Where export requests go.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    host: String,
    port: u16,
    /// The path posted to (gRPC's method, or the endpoint's own path).
    path: String,
    protocol: Protocol,
}

impl Target {
    fn parse(endpoint: &str, protocol: Protocol) -> Result<Target, String> {
        let bad = |why: &str| format!("--otlp-traces-endpoint {endpoint}: {why}");
        let rest = match endpoint.split_once("://") {
            Some(("http", rest)) => rest,
            Some((scheme, _)) => {
                return Err(bad(&format!(
                    "the simulator exports over plain http://, not {scheme}://"
                )))
            }
            None if protocol == Protocol::Grpc => endpoint,
            None => return Err(bad("an http:// URL is needed for http/protobuf")),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let (host, port) = authority
            .rsplit_once(':')
            .ok_or_else(|| bad("no port (http://HOST:PORT)"))?;
        let port: u16 = port.parse().map_err(|_| bad("not a port"))?;
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let path = match protocol {
            Protocol::Grpc => GRPC_PATH.to_owned(),
            Protocol::HttpProtobuf if path.is_empty() => "/".to_owned(),
            Protocol::HttpProtobuf => path.to_owned(),
        };
        Ok(Target {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port,
            path,
            protocol,
        })
    }

    /// One export request, answered OK or not.
    async fn send(&self, message: &[u8]) -> Result<(), String> {
        let stream = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let io = TokioIo::new(stream);
        let authority = format!("{}:{}", self.host, self.port);
        match self.protocol {
            Protocol::Grpc => {
                let (mut sender, connection) =
                    hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                        .await
                        .map_err(|e| format!("handshake: {e}"))?;
                tokio::spawn(connection);
                // One length-prefixed message, not compressed.
                let mut framed = Vec::with_capacity(message.len() + 5);
                framed.push(0);
                framed.extend_from_slice(
                    &u32::try_from(message.len())
                        .unwrap_or(u32::MAX)
                        .to_be_bytes(),
                );
                framed.extend_from_slice(message);
                let request = Request::post(format!("http://{authority}{}", self.path))
                    .header(CONTENT_TYPE, "application/grpc")
                    .header("te", "trailers")
                    .body(Full::new(Bytes::from(framed)))
                    .map_err(|e| e.to_string())?;
                let response = sender
                    .send_request(request)
                    .await
                    .map_err(|e| format!("send: {e}"))?;
                if !response.status().is_success() {
                    return Err(format!("HTTP {}", response.status()));
                }
                let in_headers = grpc_status(response.headers());
                let collected = response
                    .into_body()
                    .collect()
                    .await
                    .map_err(|e| format!("read: {e}"))?;
                let status = collected.trailers().and_then(grpc_status).or(in_headers);
                match status.as_deref() {
                    Some("0") => Ok(()),
                    Some(code) => Err(format!("grpc-status {code}")),
                    None => Err("no grpc-status".into()),
                }
            }
            Protocol::HttpProtobuf => {
                let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
                    .await
                    .map_err(|e| format!("handshake: {e}"))?;
                tokio::spawn(connection);
                let request = Request::post(self.path.as_str())
                    .header(HOST, authority)
                    .header(CONTENT_TYPE, "application/x-protobuf")
                    .body(Full::new(Bytes::copy_from_slice(message)))
                    .map_err(|e| e.to_string())?;
                let response = sender
                    .send_request(request)
                    .await
                    .map_err(|e| format!("send: {e}"))?;
                let status = response.status();
                // Read the answer whole, so the connection ends cleanly.
                let _ = response.into_body().collect().await;
                if status.is_success() {
                    Ok(())
                } else {
                    Err(format!("HTTP {status}"))
                }
            }
        }
    }
}

fn grpc_status(headers: &hyper::HeaderMap) -> Option<String> {
    headers
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k: &str| {
            pairs
                .iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_environment_sets_the_exporter_as_opentelemetry_reads_it() {
        let c = OtlpConfig::from_env("http://127.0.0.1:4317", &env(&[])).unwrap();
        assert_eq!(c.protocol, Protocol::Grpc);
        assert_eq!(c.schedule_delay, Duration::from_secs(5));
        let c = OtlpConfig::from_env(
            "http://127.0.0.1:4318/v1/traces",
            &env(&[
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
                ("OTEL_BSP_SCHEDULE_DELAY", "200"),
            ]),
        )
        .unwrap();
        assert_eq!(c.protocol, Protocol::HttpProtobuf);
        assert_eq!(c.schedule_delay, Duration::from_millis(200));
        assert!(OtlpConfig::from_env(
            "http://127.0.0.1:4318",
            &env(&[("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json")])
        )
        .is_err());
        assert!(OtlpConfig::from_env("https://127.0.0.1:4318", &env(&[])).is_err());
        let t = Target::parse("http://127.0.0.1:4318/v1/traces", Protocol::HttpProtobuf).unwrap();
        assert_eq!((t.port, t.path.as_str()), (4318, "/v1/traces"));
        let t = Target::parse("127.0.0.1:4317", Protocol::Grpc).unwrap();
        assert_eq!(t.path, GRPC_PATH);
    }
}
