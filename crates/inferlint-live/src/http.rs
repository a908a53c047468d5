//! A small HTTP/1 client: plain TCP, keep-alive, a connect timeout and a deadline for the
//! whole answer. It reads no proxy variables: a server on 127.0.0.1 is always asked
//! directly, whatever `HTTP_PROXY` says.

use std::error::Error as _;
use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Body as _;
use hyper::header::{HeaderValue, CONTENT_TYPE, LOCATION};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// How long a TCP connection may take to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest answer read: a /metrics page is tens of kilobytes. A larger answer is
/// refused as soon as it passes the bound, so it never takes more memory than that.
pub const BODY_LIMIT: usize = inferlint_engines::prom::MAX_BODY_BYTES;

/// Why what was typed is not a server's address; each names the text as typed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BaseUrlError {
    /// Not an address at all.
    #[error("'{text}' is not a server address{}", why.as_ref().map_or_else(String::new, |w| format!(" ({w})")))]
    NotAnAddress {
        /// The text as typed.
        text: String,
        /// What the address reader said, when it said something.
        why: Option<String>,
    },
    /// An address of another scheme than plain `http`.
    #[error("'{text}': only http:// is supported, not {scheme}://")]
    NotHttp {
        /// The text as typed.
        text: String,
        /// The scheme it names.
        scheme: String,
    },
    /// An address without a host.
    #[error("'{text}' names no host")]
    NoHost {
        /// The text as typed.
        text: String,
    },
    /// An address with a query, which a server's base address has not.
    #[error("'{text}': give the server's address without a query")]
    Query {
        /// The text as typed.
        text: String,
    },
}

/// A server's base address, `http://host:port` with an optional path prefix and no
/// trailing slash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl(String);

impl BaseUrl {
    /// Reads what the user typed: `http://127.0.0.1:8000`, `127.0.0.1:8000/`,
    /// `localhost:30000`. Only plain `http` is spoken.
    pub fn parse(text: &str) -> Result<BaseUrl, BaseUrlError> {
        let trimmed = text.trim();
        let with_scheme = if trimmed.contains("://") {
            trimmed.to_owned()
        } else {
            format!("http://{trimmed}")
        };
        let text = trimmed.to_owned();
        let uri: Uri = with_scheme
            .parse()
            .map_err(
                |e: hyper::http::uri::InvalidUri| BaseUrlError::NotAnAddress {
                    text: text.clone(),
                    why: Some(e.to_string()),
                },
            )?;
        match uri.scheme_str() {
            Some("http") => {}
            Some(other) => {
                return Err(BaseUrlError::NotHttp {
                    scheme: other.to_owned(),
                    text,
                })
            }
            None => return Err(BaseUrlError::NotAnAddress { text, why: None }),
        }
        if uri.host().is_none_or(str::is_empty) {
            return Err(BaseUrlError::NoHost { text });
        }
        if uri.query().is_some() {
            return Err(BaseUrlError::Query { text });
        }
        Ok(BaseUrl(with_scheme.trim_end_matches('/').to_owned()))
    }

    /// The address as text (`http://127.0.0.1:8000`, no trailing slash).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The host and port the address names (80, plain http's, when it names none), the
    /// host without an IPv6 address's brackets: what a socket connects to.
    pub fn host_port(&self) -> Option<(String, u16)> {
        let uri: Uri = self.0.parse().ok()?;
        let host = uri.host()?;
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        Some((host.to_owned(), uri.port_u16().unwrap_or(80)))
    }

    /// The address of `path` (which starts with `/`) on this server.
    pub fn join(&self, path: &str) -> String {
        format!("{}{path}", self.0)
    }
}

impl fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a request got no answer. The text reads after "failed:" and is short enough for
/// a gap record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// Nothing listens at the address.
    #[error("connection refused")]
    Refused,
    /// No whole answer within the time given (the time, in words).
    #[error("timed out after {0}")]
    TimedOut(String),
    /// The body is larger than the most read (the bound, in words).
    #[error("the answer is larger than {0}, the most read")]
    TooLarge(String),
    /// Any other failure, as the HTTP stack said it.
    #[error("{0}")]
    Other(String),
}

/// An answer: the status, where a redirect points, and the whole body.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The HTTP status.
    pub status: StatusCode,
    /// The `Location` header, when there is one.
    pub location: Option<String>,
    /// The whole body.
    pub body: Vec<u8>,
}

impl Answer {
    /// `HTTP 404 Not Found`.
    pub fn status_text(&self) -> String {
        format!(
            "HTTP {} {}",
            self.status.as_u16(),
            self.status.canonical_reason().unwrap_or("")
        )
        .trim_end()
        .to_owned()
    }
}

/// The client. Cloning it shares its pool of open connections.
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Default for HttpClient {
    fn default() -> Self {
        HttpClient::new()
    }
}

impl HttpClient {
    /// Must be called inside a tokio runtime.
    pub fn new() -> HttpClient {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(CONNECT_TIMEOUT));
        connector.set_nodelay(true);
        connector.enforce_http(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        HttpClient { client }
    }

    /// `GET url`, the whole answer within `timeout`.
    pub async fn get(&self, url: &str, timeout: Duration) -> Result<Answer, HttpError> {
        self.send(Method::GET, url, None, None, timeout).await
    }

    /// POSTs a JSON body.
    pub async fn post_json(
        &self,
        url: &str,
        body: String,
        timeout: Duration,
    ) -> Result<Answer, HttpError> {
        self.send(Method::POST, url, Some(body), None, timeout)
            .await
    }

    /// POSTs a JSON body named by `X-Request-Id: request_id`, which an engine that takes
    /// the header names the request by in its own records.
    pub async fn post_json_as(
        &self,
        url: &str,
        body: String,
        request_id: &str,
        timeout: Duration,
    ) -> Result<Answer, HttpError> {
        self.send(Method::POST, url, Some(body), Some(request_id), timeout)
            .await
    }

    async fn send(
        &self,
        method: Method,
        url: &str,
        json: Option<String>,
        request_id: Option<&str>,
        timeout: Duration,
    ) -> Result<Answer, HttpError> {
        let uri: Uri = url
            .parse()
            .map_err(|e| HttpError::Other(format!("bad address {url}: {e}")))?;
        let mut request = Request::builder().method(method).uri(uri);
        if json.is_some() {
            request = request.header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        if let Some(id) = request_id {
            let value = HeaderValue::from_str(id)
                .map_err(|e| HttpError::Other(format!("bad request id {id}: {e}")))?;
            request = request.header("x-request-id", value);
        }
        let request = request
            .body(Full::new(Bytes::from(json.unwrap_or_default())))
            .map_err(|e| HttpError::Other(e.to_string()))?;
        let exchange = async {
            let response = self.client.request(request).await.map_err(describe)?;
            let status = response.status();
            let location = response
                .headers()
                .get(LOCATION)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            let body = read_body(response.into_body()).await?;
            Ok(Answer {
                status,
                location,
                body,
            })
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(HttpError::TimedOut(seconds(timeout))),
        }
    }
}

/// Reads a whole body into one buffer, frame by frame, refusing it once it passes
/// [`BODY_LIMIT`]: a body is held once, never also as a list of frames and a copy.
async fn read_body(mut body: hyper::body::Incoming) -> Result<Vec<u8>, HttpError> {
    let too_large = || HttpError::TooLarge(format!("{} MiB", BODY_LIMIT >> 20));
    let mut bytes = Vec::new();
    // A size the server announced (Content-Length) is refused before a byte is read, and
    // otherwise saves the buffer its regrowths.
    if let Some(announced) = body.size_hint().exact() {
        let announced = usize::try_from(announced).unwrap_or(usize::MAX);
        if announced > BODY_LIMIT {
            return Err(too_large());
        }
        bytes.reserve_exact(announced);
    }
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| HttpError::Other(format!("reading the answer: {e}")))?;
        if let Ok(data) = frame.into_data() {
            if bytes.len() + data.len() > BODY_LIMIT {
                return Err(too_large());
            }
            bytes.extend_from_slice(&data);
        }
    }
    Ok(bytes)
}

/// `10 s`, `0.5 s`.
fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// The most useful words in a client error: the operating system's, when there is one.
fn describe(error: hyper_util::client::legacy::Error) -> HttpError {
    let mut source = error.source();
    let mut deepest = None;
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::ConnectionRefused => HttpError::Refused,
                std::io::ErrorKind::TimedOut => HttpError::TimedOut(seconds(CONNECT_TIMEOUT)),
                _ => HttpError::Other(io.to_string()),
            };
        }
        deepest = Some(e.to_string());
        source = e.source();
    }
    HttpError::Other(deepest.unwrap_or_else(|| error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls() {
        let b = BaseUrl::parse("127.0.0.1:8000/").expect("reads");
        assert_eq!(b.as_str(), "http://127.0.0.1:8000");
        assert_eq!(b.join("/metrics"), "http://127.0.0.1:8000/metrics");
        assert_eq!(
            BaseUrl::parse(" http://gpu-box:30000 ")
                .expect("reads")
                .as_str(),
            "http://gpu-box:30000"
        );
        assert!(BaseUrl::parse("https://x:1")
            .unwrap_err()
            .to_string()
            .contains("only http://"));
        assert!(matches!(
            BaseUrl::parse("https://x:1"),
            Err(BaseUrlError::NotHttp { .. })
        ));
        assert!(BaseUrl::parse("http://").is_err());
        let host_port = |text: &str| BaseUrl::parse(text).expect("reads").host_port();
        assert_eq!(
            host_port("127.0.0.1:8000"),
            Some(("127.0.0.1".into(), 8000))
        );
        assert_eq!(
            host_port("http://[::1]:30000/"),
            Some(("::1".into(), 30000))
        );
        assert_eq!(host_port("gpu-box"), Some(("gpu-box".into(), 80)));
    }

    #[test]
    fn nothing_listening_is_refused() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
            l.local_addr().expect("has an address").port()
        };
        let rt = crate::runtime().expect("runtime");
        let result = rt.block_on(async {
            HttpClient::new()
                .get(
                    &format!("http://127.0.0.1:{port}/metrics"),
                    Duration::from_secs(5),
                )
                .await
        });
        assert_eq!(result.unwrap_err(), HttpError::Refused);
    }
}
