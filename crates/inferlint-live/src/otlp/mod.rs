//! Receives the OpenTelemetry spans a server exports during a run and writes each export
//! request to a file as it arrives, in the OTLP/JSON encoding the OpenTelemetry
//! Collector's file exporter writes, after a header line with the clock anchor: the file
//! `inferlint_engines::files::read_spans` reads into the server's account of each request.
//!
//! ```no_run
//! use inferlint_live::otlp::{Listen, OtlpReceiver};
//! let receiver = OtlpReceiver::start(Listen::AnyPort, "run/spans.otlp.jsonl".into())?;
//! // vllm serve ... --otlp-traces-endpoint <receiver.grpc_endpoint()>
//! //   (or OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf and receiver.http_endpoint())
//! println!("{}", receiver.grpc_endpoint());
//! // ... the run; stop the server, whose exporter sends what it still holds on its way out ...
//! let summary = receiver.stop();
//! println!("{} spans in {} export requests", summary.spans, summary.requests);
//! # Ok::<(), inferlint_live::otlp::OtlpError>(())
//! ```
//!
//! What it serves, on one port of 127.0.0.1 (never another address):
//!
//! - **gRPC**: `POST /opentelemetry.proto.collector.trace.v1.TraceService/Export` over
//!   HTTP/2 with prior knowledge (`application/grpc`), one length-prefixed message,
//!   uncompressed or `grpc-encoding: gzip` or `deflate`; answered with an empty
//!   `ExportTraceServiceResponse` and `grpc-status: 0` in trailers. An error is answered
//!   "Trailers-Only" with its status: a message over the bound `RESOURCE_EXHAUSTED` (8),
//!   another compression `UNIMPLEMENTED` (12), another method of the service
//!   `UNIMPLEMENTED`, bytes that are not an export request `INVALID_ARGUMENT` (3), a
//!   frame that is not one whole message `INTERNAL` (13), a body that does not arrive in
//!   time `DEADLINE_EXCEEDED` (4), a line that could not be written `UNAVAILABLE` (14, so
//!   the exporter sends it again).
//! - **OTLP/HTTP**: `POST /v1/traces` (HTTP/1.1 or HTTP/2), `application/x-protobuf`,
//!   uncompressed or `Content-Encoding: gzip` or `deflate`; answered 200 with an empty
//!   response. Errors: 413 over the bound, 415 another content type (OTLP/JSON is not
//!   received) or compression, 400 not an export request, 405 another method, 404 another
//!   path, 408 a body that does not arrive in time, 503 not written; each with a
//!   `google.rpc.Status` body saying why.
//!
//! Bounds: a message of at most [`MAX_MESSAGE_BYTES`] (4 MiB, counted as sent and once
//! decompressed; a body that inflates past it is refused when it passes it), a request's
//! headers and body within [`OtlpOptions::body_timeout`], [`OtlpOptions::max_connections`]
//! connections at once, each of them at most 8 HTTP/2 streams at once, and the bodies
//! of every request arriving at once together at most [`OtlpOptions::max_bytes_held`]
//! (160 MiB): a body that would pass it is refused as it arrives (`UNAVAILABLE`, 503:
//! exporters send it again) and counted, so whatever the senders do the bodies never
//! hold more, and with hyper's flow-control windows (1 MiB a connection, 64 connections)
//! the receiver stays under 256 MiB. A client that stalls or sends garbage holds only its own
//! connection: every connection is a task of its own, and nothing it sends is written.
//!
//! The receiver runs on a thread of its own with a runtime of its own, so decoding spans
//! never delays a recorder's sampler on another runtime. Each export request is written as
//! one line with one `write` before it is answered, so an exporter that was answered has
//! its spans in the file, and a receiver killed mid-run leaves every line it answered.

mod json;
mod serve;
mod sink;
pub mod wire;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use inferlint_core::model::traces::ClockAnchor;
use inferlint_core::EngineDescriptor;
use inferlint_engines::files::{otlp_header_json, OtlpHeader};
use inferlint_engines::output::OutputError;

pub use json::export_request_json;
pub use sink::OtlpTally;
pub use wire::{GRPC_PATH, HTTP_PATH, MAX_MESSAGE_BYTES};

use serve::{serve, Settings};
use sink::Sink;

/// How long after a run's load the server's spans are waited for at most
/// ([`OtlpReceiver::stop_after_last_spans`]): vLLM's exporter sends what it holds every 5 s.
pub const SPANS_WAIT: Duration = Duration::from_secs(12);
/// A wait for spans ends once this long has passed with no new request span.
pub const SPANS_QUIET: Duration = Duration::from_secs(6);

/// Where the receiver listens: always 127.0.0.1, on a port the system chooses or the one
/// given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listen {
    /// A free port the system chooses; [`OtlpReceiver::local_addr`] says which.
    AnyPort,
    /// This port.
    Port(u16),
}

/// How a receiver runs; [`OtlpOptions::default`] is what [`OtlpReceiver::start`] uses.
#[derive(Debug, Clone)]
pub struct OtlpOptions {
    /// Replace an existing file at the output path (`--force`); without it an existing
    /// file is refused and left as it is.
    pub force: bool,
    /// Also keep each body exactly as it came, one file each in this folder
    /// (`0001-grpc.bin`, `0002-http-gzip.bin`: the order received, the transport, the
    /// compression named), refused ones included: for making test fixtures of what an
    /// engine really sends.
    pub keep_bodies: Option<PathBuf>,
    /// How long a request's headers and then its body may take to arrive (10 s): an
    /// exporter on the same machine sends a batch in milliseconds. A connection that
    /// sends nothing in that time, and an HTTP/1.1 connection that brings no request head
    /// in that time (an exporter idle between batches), is closed; an exporter opens
    /// another.
    pub body_timeout: Duration,
    /// How long [`OtlpReceiver::stop`] lets requests still arriving finish (2 s).
    pub stop_grace: Duration,
    /// Connections served at once (64); one more is closed unread and counted. An
    /// engine's exporter keeps one or two.
    pub max_connections: usize,
    /// Bytes the bodies of every request arriving at once may hold together (160 MiB):
    /// one that would pass it is refused as it arrives and counted
    /// ([`OtlpSummary::over_budget`]). An engine's exporter sends one batch at a time.
    pub max_bytes_held: usize,
}

impl Default for OtlpOptions {
    fn default() -> OtlpOptions {
        OtlpOptions {
            force: false,
            keep_bodies: None,
            body_timeout: Duration::from_secs(10),
            stop_grace: Duration::from_secs(2),
            max_connections: 64,
            max_bytes_held: 160 << 20,
        }
    }
}

/// Why a receiver could not start.
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    /// The port could not be had.
    #[error("cannot listen on {addr} for OpenTelemetry spans: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The file could not be made (it exists, it is a link, the folder cannot be written).
    #[error(transparent)]
    Output(#[from] OutputError),
    /// No thread or runtime could be made for it.
    #[error("cannot start the OpenTelemetry receiver: {0}")]
    Runtime(#[source] std::io::Error),
}

/// What a receiver took in, when it stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpSummary {
    /// The file it wrote.
    pub file: PathBuf,
    /// Export requests written, one line each.
    pub requests: u64,
    /// Spans in them.
    pub spans: u64,
    /// Requests refused: answered with an error and not written.
    pub refused: u64,
    /// Of those, bodies over [`MAX_MESSAGE_BYTES`].
    pub too_large: u64,
    /// Of those, bodies refused because the requests arriving at once held
    /// [`OtlpOptions::max_bytes_held`].
    pub over_budget: u64,
    /// Connections closed unread because [`OtlpOptions::max_connections`] were open.
    pub connections_refused: u64,
    /// Connections that ended in an error: bytes that are not HTTP, a client gone
    /// mid-request.
    pub broken_connections: u64,
    /// The first refusal, in words (`http: content type 'application/json' is not
    /// received here ...`).
    pub first_refusal: Option<String>,
    /// Connections still sending when the grace after the stop ended, closed: a request
    /// on one of them was not written.
    pub cut_at_stop: u64,
    /// Why the file could not be flushed to the disk at the stop, if it could not.
    pub sync_error: Option<String>,
}

/// A running receiver. Dropping it stops it as [`OtlpReceiver::stop`] does.
#[derive(Debug)]
pub struct OtlpReceiver {
    addr: SocketAddr,
    file: PathBuf,
    sink: Arc<Sink>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<u64>>,
}

impl OtlpReceiver {
    /// Starts receiving on 127.0.0.1 (`listen`), writing to `out` with the default
    /// options: the file must not exist yet. Returns once the port is bound and the
    /// header is written, so an engine started after it cannot miss it.
    pub fn start(listen: Listen, out: PathBuf) -> Result<OtlpReceiver, OtlpError> {
        OtlpReceiver::start_with(listen, &out, &OtlpOptions::default())
    }

    /// [`OtlpReceiver::start`] with options.
    pub fn start_with(
        listen: Listen,
        out: &Path,
        options: &OtlpOptions,
    ) -> Result<OtlpReceiver, OtlpError> {
        let port = match listen {
            Listen::AnyPort => 0,
            Listen::Port(port) => port,
        };
        let asked = SocketAddr::from(([127, 0, 0, 1], port));
        let bind_error = |source| OtlpError::Bind {
            addr: asked,
            source,
        };
        let listener = std::net::TcpListener::bind(asked).map_err(bind_error)?;
        listener.set_nonblocking(true).map_err(bind_error)?;
        let addr = listener.local_addr().map_err(bind_error)?;
        let now = crate::clock::now();
        let header = otlp_header_json(&OtlpHeader {
            received_on: addr.to_string(),
            grpc: grpc_endpoint(addr),
            http: http_endpoint(addr),
            anchor: ClockAnchor {
                t_wall: now.wall_s,
                t_mono_ns: now.mono_ns,
            },
        });
        let sink = Arc::new(Sink::create(
            out,
            options.force,
            &header,
            options.keep_bodies.clone(),
        )?);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(OtlpError::Runtime)?;
        let listener = {
            let _inside = runtime.enter();
            tokio::net::TcpListener::from_std(listener).map_err(bind_error)?
        };
        let settings = Settings {
            body_timeout: options.body_timeout,
            stop_grace: options.stop_grace,
            max_connections: options.max_connections.max(1),
            max_bytes_held: options.max_bytes_held.max(1),
        };
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let serving = Arc::clone(&sink);
        let thread = std::thread::Builder::new()
            .name("otlp-receiver".into())
            .spawn(move || runtime.block_on(serve(listener, serving, settings, stopped)))
            .map_err(OtlpError::Runtime)?;
        Ok(OtlpReceiver {
            addr,
            file: out.to_owned(),
            sink,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// What a gRPC exporter is given: `http://127.0.0.1:PORT` (vLLM's
    /// `--otlp-traces-endpoint` under the default `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc`).
    pub fn grpc_endpoint(&self) -> String {
        grpc_endpoint(self.addr)
    }

    /// What an OTLP/HTTP exporter is given: `http://127.0.0.1:PORT/v1/traces` (the
    /// Python exporter posts to the endpoint as given, with
    /// `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf`).
    pub fn http_endpoint(&self) -> String {
        http_endpoint(self.addr)
    }

    /// The file it writes.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// What it has taken in so far.
    pub fn tally(&self) -> OtlpTally {
        self.sink.tally()
    }

    /// Stops listening, lets requests still arriving finish within
    /// [`OtlpOptions::stop_grace`], flushes the file and says what was received. Stop it
    /// after the server: an engine's exporter sends the spans it still holds when the
    /// server shuts down (vLLM's batches wait up to 5 s otherwise).
    pub fn stop(mut self) -> OtlpSummary {
        let cut_at_stop = self.shut_down();
        let sync_error = self.sink.sync().err().map(|e| e.to_string());
        let tally = self.sink.tally();
        OtlpSummary {
            file: self.file.clone(),
            requests: tally.requests,
            spans: tally.spans,
            refused: tally.refused,
            too_large: tally.too_large,
            over_budget: tally.over_budget,
            connections_refused: tally.connections_refused,
            broken_connections: tally.broken_connections,
            first_refusal: tally.first_refusal,
            cut_at_stop,
            sync_error,
        }
    }

    /// Waits for the server's last spans, then stops ([`OtlpReceiver::stop`]): until a
    /// request span has come for each of `finished` requests (where the server's counter
    /// says), or none has come for [`SPANS_QUIET`], at most [`SPANS_WAIT`], or until
    /// `interrupted`. vLLM's exporter sends what it holds every 5 s, so the spans of a
    /// run's last requests come after its load ends. Returns what was received and how
    /// many request spans (of `engine`'s table) the file holds.
    pub fn stop_after_last_spans(
        self,
        engine: &EngineDescriptor,
        finished: Option<f64>,
        interrupted: &dyn Fn() -> bool,
    ) -> (OtlpSummary, usize) {
        let count = || {
            inferlint_engines::files::read_spans(self.file(), engine)
                .map(|s| s.requests.len())
                .unwrap_or(0)
        };
        let deadline = Instant::now() + SPANS_WAIT;
        let (mut last, mut since) = (count(), Instant::now());
        while Instant::now() < deadline
            && finished.is_none_or(|f| (last as f64) < f)
            && since.elapsed() < SPANS_QUIET
            && !interrupted()
        {
            std::thread::sleep(Duration::from_millis(200));
            let now = count();
            if now != last {
                (last, since) = (now, Instant::now());
            }
        }
        (self.stop(), last)
    }

    fn shut_down(&mut self) -> u64 {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // A receiver thread that panicked cut whatever it held; nothing else is known.
        self.thread
            .take()
            .map_or(0, |thread| thread.join().unwrap_or(0))
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.shut_down();
    }
}

fn grpc_endpoint(addr: SocketAddr) -> String {
    format!("http://{addr}")
}

fn http_endpoint(addr: SocketAddr) -> String {
    format!("http://{addr}{HTTP_PATH}")
}
