//! The receiver's server: one listening socket on 127.0.0.1 that speaks HTTP/1.1 and, when
//! a client opens with the HTTP/2 preface, HTTP/2 (hyper-util tells them apart), each
//! connection on a task of its own; each request answered as its transport expects.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{
    HeaderMap, HeaderName, HeaderValue, ALLOW, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE,
};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;

use super::sink::Sink;
use super::wire::{
    decode_request, empty_response, grpc_frame, grpc_message, grpc_message_header, rpc_status,
    Codec, GrpcCode, Refusal, ACCEPTED_ENCODINGS, GRPC_PATH, HTTP_PATH, MAX_MESSAGE_BYTES,
};

/// How much of a body over the bound is still read (and dropped) so that its sender gets
/// the refusal rather than a connection reset; past it the connection is closed.
const DRAIN_LIMIT: usize = 64 << 20;

/// The server's bounds in time and connections.
#[derive(Debug, Clone, Copy)]
pub(super) struct Settings {
    /// How long a request's headers and body may take to arrive.
    pub body_timeout: Duration,
    /// How long requests still arriving when the receiver stops may take to finish.
    pub stop_grace: Duration,
    /// Connections served at once; one more is closed unread.
    pub max_connections: usize,
    /// Bytes the bodies arriving at once may hold together.
    pub max_bytes_held: usize,
}

/// HTTP/2 streams one connection may have open at once: an exporter sends one batch at
/// a time, and each stream may hold a body of up to [`MAX_MESSAGE_BYTES`].
const STREAMS_PER_CONNECTION: u32 = 8;

/// The bytes every body being received holds, against the receiver's budget.
#[derive(Debug)]
struct Held {
    bytes: AtomicUsize,
    budget: usize,
}

/// Bytes one body holds of the budget, given back when it is dropped.
struct Reserved<'a> {
    held: &'a Held,
    bytes: usize,
}

impl Held {
    /// Takes `more` bytes for `reserved`, or refuses when the budget would be passed.
    fn take(&self, reserved: &mut Reserved<'_>, more: usize) -> Result<(), Refusal> {
        self.bytes
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                now.checked_add(more).filter(|after| *after <= self.budget)
            })
            .map_err(|_| Refusal::OverBudget(self.budget))?;
        reserved.bytes += more;
        Ok(())
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.held.bytes.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

/// Serves until `stop` resolves (or its sender is dropped), then lets the requests in
/// flight finish within the grace. Returns the connections still open at its end, which
/// are closed.
pub(super) async fn serve(
    listener: tokio::net::TcpListener,
    sink: Arc<Sink>,
    settings: Settings,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) -> u64 {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(settings.body_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(STREAMS_PER_CONNECTION)
        .max_header_list_size(64 << 10);
    let graceful = GracefulShutdown::new();
    // Set when the receiver stops: a connection still waiting for its first byte closes.
    let (closing, closed) = tokio::sync::watch::channel(false);
    let open = Arc::new(AtomicUsize::new(0));
    let held = Arc::new(Held {
        bytes: AtomicUsize::new(0),
        budget: settings.max_bytes_held,
    });
    let ended = Arc::new(tokio::sync::Notify::new());
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of descriptors, or a connection reset before it was taken: the
                // listener is still good; a pause keeps a lasting error from spinning.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        if open.load(Ordering::SeqCst) >= settings.max_connections {
            sink.connection_refused();
            drop(stream);
            continue;
        }
        let _ = stream.set_nodelay(true);
        let service_sink = Arc::clone(&sink);
        let service_held = Arc::clone(&held);
        let service = hyper::service::service_fn(move |request| {
            handle(
                request,
                Arc::clone(&service_sink),
                Arc::clone(&service_held),
                settings.body_timeout,
            )
        });
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let mut closed = closed.clone();
        let (open, ended, broken) = (Arc::clone(&open), Arc::clone(&ended), Arc::clone(&sink));
        open.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            // Until its first byte a connection is nobody's: hyper would wait for it
            // without a deadline (it reads the first bytes to tell HTTP/1.1 from HTTP/2).
            // One that sends nothing within the deadline, or before the stop, is closed.
            let mut first = [0u8; 1];
            let began = tokio::select! {
                peeked = tokio::time::timeout(settings.body_timeout, stream.peek(&mut first)) => {
                    matches!(peeked, Ok(Ok(n)) if n > 0)
                }
                _ = closed.changed() => false,
            };
            if began {
                let connection = builder
                    .serve_connection(TokioIo::new(stream), service)
                    .into_owned();
                // A connection that ends in an error sent what is not HTTP or broke off
                // mid-request: counted; it held no one else. One closed because no
                // request head came in time is an idle keep-alive connection (an
                // exporter between batches) or one stalled in its headers: closed, not
                // counted.
                if let Err(e) = watcher.watch(connection).await {
                    let timed_out = e
                        .downcast_ref::<hyper::Error>()
                        .is_some_and(hyper::Error::is_timeout);
                    if !timed_out {
                        broken.connection_broken();
                    }
                }
            }
            open.fetch_sub(1, Ordering::SeqCst);
            ended.notify_one();
        });
    }
    drop(listener);
    let _ = closing.send(true);
    let deadline = tokio::time::Instant::now() + settings.stop_grace;
    let _ = tokio::time::timeout_at(deadline, graceful.shutdown()).await;
    // Every connection's task says when it ends; those still open at the deadline are cut.
    while open.load(Ordering::SeqCst) > 0 {
        if tokio::time::timeout_at(deadline, ended.notified())
            .await
            .is_err()
        {
            break;
        }
    }
    open.load(Ordering::SeqCst) as u64
}

/// A request, by its path and content type: gRPC's method, or OTLP/HTTP.
async fn handle(
    request: Request<Incoming>,
    sink: Arc<Sink>,
    held: Arc<Held>,
    body_timeout: Duration,
) -> Result<Response<Reply>, Infallible> {
    let grpc_type = content_type(request.headers()).starts_with("application/grpc");
    let path = request.uri().path();
    if path == GRPC_PATH || (grpc_type && path != HTTP_PATH) {
        let outcome = receive_grpc(request, &sink, &held, body_timeout).await;
        Ok(match outcome {
            Ok(()) => grpc_ok(),
            Err(refusal) => {
                sink.refused("grpc", &refusal);
                grpc_refusal(&refusal)
            }
        })
    } else {
        let outcome = receive_http(request, &sink, &held, body_timeout).await;
        Ok(match outcome {
            Ok(()) => http_ok(),
            Err(refusal) => {
                sink.refused("http", &refusal);
                http_refusal(&refusal)
            }
        })
    }
}

/// The content type without its parameters, in lower case; empty when there is none.
fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

fn header_text(headers: &HeaderMap, name: impl hyper::header::AsHeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Refuses at once a body its sender announces as more than [`DRAIN_LIMIT`]: one over the
/// bound but under that is read and dropped, so that its sender can read the refusal.
fn announced_too_large(headers: &HeaderMap) -> Result<(), Refusal> {
    let announced = header_text(headers, CONTENT_LENGTH).and_then(|v| v.trim().parse::<u64>().ok());
    match announced {
        Some(n) if n > DRAIN_LIMIT as u64 => Err(Refusal::TooLarge),
        _ => Ok(()),
    }
}

async fn receive_grpc(
    request: Request<Incoming>,
    sink: &Sink,
    held: &Held,
    body_timeout: Duration,
) -> Result<(), Refusal> {
    if request.method() != Method::POST {
        return Err(Refusal::Method(request.method().to_string()));
    }
    if request.uri().path() != GRPC_PATH {
        return Err(Refusal::Path(request.uri().path().to_owned()));
    }
    let kind = content_type(request.headers());
    if kind != "application/grpc" && kind != "application/grpc+proto" {
        return Err(Refusal::ContentType(kind));
    }
    let limit = MAX_MESSAGE_BYTES + 5;
    announced_too_large(request.headers())?;
    let encoding = header_text(request.headers(), "grpc-encoding").map(str::to_owned);
    let (body, _reserved) = read_body(request.into_body(), limit, held, body_timeout).await?;
    sink.keep_body("grpc", encoding.as_deref(), &body);
    let message = grpc_message(&body, encoding.as_deref())?;
    let export = decode_request(&message)?;
    sink.write(&export)
}

async fn receive_http(
    request: Request<Incoming>,
    sink: &Sink,
    held: &Held,
    body_timeout: Duration,
) -> Result<(), Refusal> {
    if request.uri().path() != HTTP_PATH {
        return Err(Refusal::Path(request.uri().path().to_owned()));
    }
    if request.method() != Method::POST {
        return Err(Refusal::Method(request.method().to_string()));
    }
    let kind = content_type(request.headers());
    if kind != "application/x-protobuf" {
        return Err(Refusal::ContentType(if kind.is_empty() {
            "none".into()
        } else {
            kind
        }));
    }
    let encoding = header_text(request.headers(), CONTENT_ENCODING).map(str::to_owned);
    let codec = Codec::named(encoding.as_deref())?;
    announced_too_large(request.headers())?;
    let (body, _reserved) =
        read_body(request.into_body(), MAX_MESSAGE_BYTES, held, body_timeout).await?;
    sink.keep_body("http", encoding.as_deref(), &body);
    let message = codec.decode(&body)?;
    let export = decode_request(&message)?;
    sink.write(&export)
}

/// The body, at most `limit` bytes, within `deadline`, and the bytes it holds of the
/// receiver's budget (`held`), given back when the caller is done with it. A body over
/// the bound is read on and dropped (up to [`DRAIN_LIMIT`]) so that its sender is
/// answered before the connection closes; one that would pass the budget is refused as
/// it arrives, and what it held given back.
async fn read_body<'h>(
    mut body: Incoming,
    limit: usize,
    held: &'h Held,
    deadline: Duration,
) -> Result<(Vec<u8>, Reserved<'h>), Refusal> {
    let read = async {
        let mut reserved = Reserved { held, bytes: 0 };
        let mut bytes = Vec::new();
        let mut seen = 0usize;
        let mut over = false;
        while let Some(frame) = body.frame().await {
            let frame =
                frame.map_err(|e| Refusal::BrokenFrame(format!("the body broke off: {e}")))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            seen = seen.saturating_add(data.len());
            if over {
                if seen > DRAIN_LIMIT {
                    break;
                }
            } else if bytes.len() + data.len() > limit {
                over = true;
                bytes = Vec::new();
            } else {
                held.take(&mut reserved, data.len())?;
                bytes.extend_from_slice(&data);
            }
        }
        if over {
            Err(Refusal::TooLarge)
        } else {
            Ok((bytes, reserved))
        }
    };
    tokio::time::timeout(deadline, read)
        .await
        .unwrap_or(Err(Refusal::Stalled))
}

fn header(response: &mut Response<Reply>, name: HeaderName, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        response.headers_mut().insert(name, value);
    }
}

fn grpc_status_headers(code: GrpcCode, message: Option<&str>) -> HeaderMap {
    let mut map = HeaderMap::new();
    map.insert("grpc-status", HeaderValue::from(code as i32));
    if let Some(message) = message {
        if let Ok(value) = HeaderValue::from_str(&grpc_message_header(message)) {
            map.insert("grpc-message", value);
        }
    }
    map
}

/// An empty `ExportTraceServiceResponse` in its frame, then `grpc-status: 0` in trailers.
fn grpc_ok() -> Response<Reply> {
    let mut response = Response::new(Reply {
        data: Some(Bytes::from(grpc_frame(&empty_response()))),
        trailers: Some(grpc_status_headers(GrpcCode::Ok, None)),
    });
    header(&mut response, CONTENT_TYPE, "application/grpc");
    header(
        &mut response,
        HeaderName::from_static("grpc-accept-encoding"),
        ACCEPTED_ENCODINGS,
    );
    response
}

/// A gRPC error as "Trailers-Only": the status in the headers, no body. A request that is
/// not gRPC at all (another method, another content type) gets the HTTP status gRPC's
/// protocol names for it (405, 415).
fn grpc_refusal(refusal: &Refusal) -> Response<Reply> {
    let mut response = Response::new(Reply::empty());
    match refusal {
        Refusal::Method(_) | Refusal::ContentType(_) => {
            *response.status_mut() =
                StatusCode::from_u16(refusal.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
            if matches!(refusal, Refusal::Method(_)) {
                header(&mut response, ALLOW, "POST");
            }
            header(&mut response, CONTENT_TYPE, "text/plain");
            *response.body_mut() = Reply::text(refusal.to_string());
        }
        _ => {
            header(&mut response, CONTENT_TYPE, "application/grpc");
            header(
                &mut response,
                HeaderName::from_static("grpc-accept-encoding"),
                ACCEPTED_ENCODINGS,
            );
            response.headers_mut().extend(grpc_status_headers(
                refusal.grpc_code(),
                Some(&refusal.to_string()),
            ));
        }
    }
    response
}

/// 200 with an empty `ExportTraceServiceResponse` (zero bytes).
fn http_ok() -> Response<Reply> {
    let mut response = Response::new(Reply::bytes(empty_response()));
    header(&mut response, CONTENT_TYPE, "application/x-protobuf");
    response
}

/// The refusal's status, with a `google.rpc.Status` body as OTLP/HTTP answers an error.
fn http_refusal(refusal: &Refusal) -> Response<Reply> {
    let body = rpc_status(refusal.grpc_code(), &refusal.to_string());
    let mut response = Response::new(Reply::bytes(body));
    *response.status_mut() =
        StatusCode::from_u16(refusal.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    header(&mut response, CONTENT_TYPE, "application/x-protobuf");
    match refusal {
        Refusal::Method(_) => header(&mut response, ALLOW, "POST"),
        Refusal::Compression(_) => header(
            &mut response,
            HeaderName::from_static("accept-encoding"),
            ACCEPTED_ENCODINGS,
        ),
        _ => {}
    }
    response
}

/// An answer's body: some bytes, then (gRPC) trailers.
#[derive(Debug)]
pub(super) struct Reply {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl Reply {
    fn empty() -> Reply {
        Reply {
            data: None,
            trailers: None,
        }
    }

    fn bytes(bytes: Vec<u8>) -> Reply {
        Reply {
            data: (!bytes.is_empty()).then(|| Bytes::from(bytes)),
            trailers: None,
        }
    }

    fn text(text: String) -> Reply {
        Reply::bytes(text.into_bytes())
    }
}

impl Body for Reply {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some(data) = this.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        if let Some(trailers) = this.trailers.take() {
            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        match (&self.data, &self.trailers) {
            (data, None) => SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64)),
            _ => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two bodies arriving at once share the budget: the second is refused when both
    /// together would pass it, and once the first is done what it held is free again.
    #[test]
    fn bodies_share_the_budget_and_give_it_back() {
        let held = Held {
            bytes: AtomicUsize::new(0),
            budget: 100,
        };
        let mut first = Reserved {
            held: &held,
            bytes: 0,
        };
        held.take(&mut first, 60).unwrap();
        {
            let mut second = Reserved {
                held: &held,
                bytes: 0,
            };
            held.take(&mut second, 30).unwrap();
            assert_eq!(
                held.take(&mut second, 11).unwrap_err(),
                Refusal::OverBudget(100)
            );
            assert_eq!(held.bytes.load(Ordering::SeqCst), 90);
        }
        assert_eq!(held.bytes.load(Ordering::SeqCst), 60);
        drop(first);
        assert_eq!(held.bytes.load(Ordering::SeqCst), 0);
    }
}
