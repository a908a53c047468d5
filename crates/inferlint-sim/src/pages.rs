//! A metrics page as a prometheus_client server narrows it, and a server of fixed pages.
//!
//! Python's prometheus_client honours `name[]=NAME` in the query of its exposition
//! application (`make_asgi_app`, `MetricsHandler`): the page then holds only the samples
//! whose names were asked, each family that keeps one with its `# HELP` and `# TYPE`
//! lines, and a family none of whose samples was asked is left out whole
//! (`RestrictedRegistry`, `Metric._restricted_metric`). vLLM 0.32 serves `/metrics` with a
//! handler of its own that ignores the query and mounts prometheus_client's application
//! beside it at `/metrics/`; the simulated servers do the same, for every engine (the
//! stand-in's choice; a real server's behaviour is what the recorder's probe finds).

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

/// What a server does with `name[]` at the path with a slash.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NameFilter {
    /// It serves the asked samples alone, as prometheus_client does.
    #[default]
    Honoured,
    /// It serves nothing: prometheus_client in multiprocess mode, whose one collector
    /// has no names to be found by.
    Empty,
    /// It serves the whole page whatever the query: a server whose exposition is its
    /// own code, not prometheus_client's.
    Ignored,
}

impl NameFilter {
    /// The answer to a query that asked for `asked`, of a server whose whole page is
    /// `page`.
    pub fn answer(self, page: &str, asked: &[String]) -> String {
        match self {
            NameFilter::Honoured => narrowed(page, asked),
            NameFilter::Empty => String::new(),
            NameFilter::Ignored => page.to_owned(),
        }
    }
}

/// The sample names asked in a query: each `name[]` value (`name%5B%5D` encoded or not),
/// percent-decoded, `+` read as a blank as a form encodes one.
pub fn asked_names(query: &str) -> Vec<String> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .filter(|(key, _)| {
            let key = decoded(key);
            key == "name[]"
        })
        .map(|(_, value)| decoded(value))
        .collect()
}

fn decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The page narrowed to the samples named in `asked`, as prometheus_client writes it: the
/// comment lines before a family's first kept sample (its `# HELP` and `# TYPE`) once,
/// then the kept samples; everything else left out.
pub fn narrowed(page: &str, asked: &[String]) -> String {
    let mut out = String::new();
    let mut pending = String::new();
    let mut family_open = false;
    for line in page.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') {
            if family_open {
                pending.clear();
                family_open = false;
            }
            pending.push_str(line);
            pending.push('\n');
            continue;
        }
        family_open = true;
        let name_end = trimmed
            .find(|c: char| c == '{' || c.is_whitespace())
            .unwrap_or(trimmed.len());
        if asked.iter().any(|n| n == &trimmed[..name_end]) {
            out.push_str(&pending);
            pending.clear();
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// `count` servers of one fixed page, each on a port of its own on 127.0.0.1, all on the
/// calling thread's runtime: `GET /metrics` answers the page whole (whatever the query),
/// `GET /metrics/` answers a `name[]` query as `filter` says (prometheus_client narrows
/// the page); anything else is a 404. Returns the listeners' ports; the servers run until the runtime ends.
pub async fn serve_pages(
    page: Arc<String>,
    count: usize,
    filter: NameFilter,
) -> std::io::Result<Vec<u16>> {
    serve_pages_slowly(page, count, filter, std::time::Duration::ZERO).await
}

/// [`serve_pages`] whose every answer at `/metrics/` comes `delay` late: a server slow
/// to render a filtered page (or a loaded machine).
pub async fn serve_pages_slowly(
    page: Arc<String>,
    count: usize,
    filter: NameFilter,
    delay: std::time::Duration,
) -> std::io::Result<Vec<u16>> {
    // The page is fixed, so each distinct query's answer is made once and then served
    // as it is: a fleet's bench then measures the recorder, not this server narrowing
    // the same 50 KB page for every replica's every scrape on one thread.
    let answers = Arc::new(Answers {
        page: Bytes::from(page.as_bytes().to_vec()),
        narrowed: Mutex::new(HashMap::new()),
        filter,
    });
    let mut ports = Vec::with_capacity(count);
    for _ in 0..count {
        let std_listener = std::net::TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))?;
        std_listener.set_nonblocking(true)?;
        ports.push(std_listener.local_addr()?.port());
        let listener = tokio::net::TcpListener::from_std(std_listener)?;
        let answers = Arc::clone(&answers);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let answers = Arc::clone(&answers);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                        let answers = Arc::clone(&answers);
                        async move {
                            if request.uri().path() == "/metrics/" && !delay.is_zero() {
                                tokio::time::sleep(delay).await;
                            }
                            Ok::<_, std::convert::Infallible>(answers.answer(&request))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
    }
    Ok(ports)
}

/// What the fixed-page servers answer: the page, and each query's narrowed page once made.
struct Answers {
    page: Bytes,
    narrowed: Mutex<HashMap<String, Bytes>>,
    filter: NameFilter,
}

impl Answers {
    fn answer(&self, request: &Request<Incoming>) -> Response<Full<Bytes>> {
        let body = match request.uri().path() {
            "/metrics" => self.page.clone(),
            "/metrics/" => {
                let query = request.uri().query().unwrap_or("");
                let mut made = self.narrowed.lock().unwrap_or_else(|e| e.into_inner());
                match made.get(query) {
                    Some(body) => body.clone(),
                    None => {
                        // The page is valid UTF-8: it was made from a String.
                        let page = std::str::from_utf8(&self.page).unwrap_or_default();
                        let body = Bytes::from(self.filter.answer(page, &asked_names(query)));
                        // A few queries are asked again and again; any others are answered
                        // without being kept, so the memo stays small whatever is asked.
                        if made.len() < 64 {
                            made.insert(query.to_owned(), body.clone());
                        }
                        body
                    }
                }
            }
            _ => {
                let mut response = Response::new(Full::new(Bytes::from_static(b"not found\n")));
                *response.status_mut() = StatusCode::NOT_FOUND;
                return response;
            }
        };
        let mut response = Response::new(Full::new(body));
        response.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        );
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_from_the_query_as_a_form_encodes_them() {
        assert_eq!(
            asked_names("name%5B%5D=vllm%3Anum_requests_running&name[]=a_total&other=x"),
            ["vllm:num_requests_running", "a_total"]
        );
        assert!(asked_names("").is_empty());
        assert_eq!(asked_names("name[]=%zz%4"), ["%zz%4"]);
    }

    #[test]
    fn a_narrowed_page_keeps_each_kept_family_with_its_comments() {
        let page = "# HELP a_total A counter.\n# TYPE a_total counter\na_total{x=\"1\"} 3.0\n\
# HELP a_created A stamp.\n# TYPE a_created gauge\na_created{x=\"1\"} 1.7e9\n\
# HELP h A histogram.\n# TYPE h histogram\nh_bucket{le=\"1.0\"} 1.0\nh_sum 2.0\nh_count 1.0\n";
        let asked = vec!["a_total".to_owned(), "h_sum".to_owned()];
        assert_eq!(
            narrowed(page, &asked),
            "# HELP a_total A counter.\n# TYPE a_total counter\na_total{x=\"1\"} 3.0\n\
# HELP h A histogram.\n# TYPE h histogram\nh_sum 2.0\n"
        );
        assert_eq!(narrowed(page, &[]), "");
    }
}
