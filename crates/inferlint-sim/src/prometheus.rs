//! A stand-in for a Prometheus server's query API over a simulated fleet's history, for
//! the tests and the benchmark of `report --prometheus` (`inferlint-sim prometheus`).
//!
//! It answers the three kinds of question inferlint asks, in the API's JSON: an instant
//! query of every series whose name matches `__name__=~"…"` (a vector), a range vector
//! `…[Nms]` at a time (the raw samples, a matrix) and `query_range` (a matrix on the step
//! grid). Other label matchers must equal a series' label. Like Prometheus it refuses a
//! range query of more than 11,000 points per series with `bad_data`, and it writes
//! special values as `"NaN"` and `"+Inf"`. It is no PromQL engine: any other query is
//! answered `bad_data`.
//!
//! The history is vLLM's metrics for `replicas` replicas scraped every `interval_ms`
//! from `start_ms` for `steps` scrapes. Replica 0 can be made to queue and preempt while
//! the others idle (`imbalanced`); a replica can restart (its counters go back to zero)
//! at a step; one reading can be NaN.

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use inferlint_core::Engine;

/// Prometheus' own limit of points per series in one range query.
pub const MAX_POINTS: u64 = 11_000;

/// The simulated fleet's history.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetHistory {
    /// How many replicas (`instance` `replica-N:8000`).
    pub replicas: usize,
    /// The first scrape, Unix milliseconds.
    pub start_ms: i64,
    /// Milliseconds between scrapes.
    pub interval_ms: i64,
    /// How many scrapes the history holds.
    pub steps: i64,
    /// Replica 0 queues and preempts; the others idle.
    pub imbalanced: bool,
    /// (replica, step): that replica restarts there, its counters from zero again.
    pub restart: Option<(usize, i64)>,
    /// (replica, step): its KV usage reads NaN there.
    pub nan_at: Option<(usize, i64)>,
    /// (replica, step): that replica stops answering there, and Prometheus marks its
    /// series stale, so no query finds it from then on.
    pub gone: Option<(usize, i64)>,
    /// Every answer is delayed by this long.
    pub delay: Duration,
    /// Every query is refused with this `bad_data` message.
    pub refuse: Option<String>,
    /// Every series' `job` label.
    pub job: String,
}

impl FleetHistory {
    /// A balanced fleet's history, with no fault, its series labelled `job="vllm"`.
    pub fn new(replicas: usize, start_ms: i64, interval_ms: i64, steps: i64) -> FleetHistory {
        FleetHistory {
            replicas,
            start_ms,
            interval_ms,
            steps,
            imbalanced: false,
            restart: None,
            nan_at: None,
            gone: None,
            delay: Duration::ZERO,
            refuse: None,
            job: "vllm".into(),
        }
    }

    /// The replica's `instance` label.
    pub fn instance(replica: usize) -> String {
        format!("replica-{replica}:8000")
    }

    fn names() -> [&'static str; 7] {
        let d = Engine::Vllm.descriptor();
        [
            d.running,
            d.waiting,
            d.kv_usage,
            d.preemption_counter.unwrap_or("vllm:num_preemptions_total"),
            d.generation_tokens,
            d.prompt_tokens,
            d.request_success,
        ]
    }

    /// The value of one metric of one replica at a step.
    pub fn value(&self, replica: usize, metric: usize, step: i64) -> f64 {
        let busy = self.imbalanced && replica == 0;
        let since = match self.restart {
            Some((r, at)) if r == replica && step >= at => step - at,
            _ => step,
        };
        // A gentle wave, the same on every balanced replica.
        let wave = ((step % 20) as f64 - 10.0).abs();
        let running = if busy {
            16.0
        } else if self.imbalanced {
            1.0
        } else {
            4.0 + wave / 5.0
        };
        match metric {
            0 => running.round(),
            1 => {
                if busy {
                    6.0
                } else {
                    0.0
                }
            }
            2 => {
                if self.nan_at == Some((replica, step)) {
                    f64::NAN
                } else if busy {
                    0.97
                } else if self.imbalanced {
                    0.05
                } else {
                    0.2 + wave / 100.0
                }
            }
            3 => {
                if busy {
                    since as f64
                } else {
                    0.0
                }
            }
            // Tokens at the pace of the requests running, a counter that only grows.
            4 => {
                since as f64
                    * if busy {
                        160.0
                    } else if self.imbalanced {
                        10.0
                    } else {
                        50.0
                    }
            }
            5 => since as f64 * 100.0,
            6 => (since / 4) as f64,
            _ => f64::NAN,
        }
    }

    fn present(&self, replica: usize, step: i64) -> bool {
        !matches!(self.gone, Some((r, at)) if r == replica && step >= at)
    }

    fn step_at(&self, t_ms: i64) -> Option<i64> {
        // The latest scrape at or before t within Prometheus' five-minute look-back.
        if t_ms < self.start_ms {
            return None;
        }
        let step = ((t_ms - self.start_ms) / self.interval_ms).min(self.steps - 1);
        let at = self.start_ms + step * self.interval_ms;
        (step >= 0 && t_ms - at <= 300_000).then_some(step)
    }
}

/// A running stand-in; dropping it stops it.
#[derive(Debug)]
pub struct PromHandle {
    /// Where it listens.
    pub addr: SocketAddr,
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    /// The most points of one series any range query asked.
    pub max_points_asked: Arc<AtomicU64>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for PromHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Serves `history` on 127.0.0.1:`port` (0: any free port) on its own thread.
pub fn spawn(history: FleetHistory, port: u16) -> std::io::Result<PromHandle> {
    let listener = std::net::TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let history = Arc::new(history);
    let max_points = Arc::new(AtomicU64::new(0));
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let task_max = Arc::clone(&max_points);
    let thread = std::thread::Builder::new()
        .name(format!("inferlint-sim-prometheus-{}", addr.port()))
        .spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                let accept = async {
                    loop {
                        let Ok((stream, _)) = listener.accept().await else {
                            continue;
                        };
                        let history = Arc::clone(&history);
                        let max = Arc::clone(&task_max);
                        tokio::spawn(async move {
                            let service = hyper::service::service_fn(move |request| {
                                let history = Arc::clone(&history);
                                let max = Arc::clone(&max);
                                async move {
                                    Ok::<_, Infallible>(answer(&history, &max, request).await)
                                }
                            });
                            let _ = hyper::server::conn::http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        });
                    }
                };
                tokio::select! {
                    () = accept => {}
                    _ = stop_rx => {}
                }
            });
        })?;
    Ok(PromHandle {
        addr,
        base_url: format!("http://{addr}"),
        max_points_asked: max_points,
        stop: Some(stop_tx),
        thread: Some(thread),
    })
}

async fn answer(
    history: &FleetHistory,
    max_points: &AtomicU64,
    request: Request<hyper::body::Incoming>,
) -> Response<Full<Bytes>> {
    if !history.delay.is_zero() {
        tokio::time::sleep(history.delay).await;
    }
    let path = request.uri().path().to_owned();
    let params = parse_query(request.uri().query().unwrap_or(""));
    let param = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    if let Some(message) = &history.refuse {
        return refuse(message);
    }
    let Some(query) = param("query") else {
        return refuse("invalid parameter \"query\": no query");
    };
    let Some(selector) = Selector::parse(query) else {
        return refuse(&format!(
            "invalid parameter \"query\": cannot read {query:?}"
        ));
    };
    let seconds = |k: &str| {
        param(k)
            .and_then(|v| v.parse::<f64>().ok())
            .map(|s| (s * 1000.0).round() as i64)
    };
    match path.as_str() {
        "/api/v1/query" => {
            let Some(time) = seconds("time") else {
                return refuse("invalid parameter \"time\"");
            };
            match selector.range_ms {
                Some(range) => matrix(history, &selector, |_| {
                    let first = history.start_ms.max(time - range + 1);
                    let from =
                        (first - history.start_ms + history.interval_ms - 1) / history.interval_ms;
                    let to =
                        ((time - history.start_ms) / history.interval_ms).min(history.steps - 1);
                    (from.max(0)..=to)
                        .map(|s| (history.start_ms + s * history.interval_ms, s))
                        .collect()
                }),
                None => vector(history, &selector, time),
            }
        }
        "/api/v1/query_range" => {
            let (Some(start), Some(end), Some(step)) =
                (seconds("start"), seconds("end"), seconds("step"))
            else {
                return refuse("invalid parameter \"start\", \"end\" or \"step\"");
            };
            if step <= 0 || end < start {
                return refuse("invalid parameter \"step\"");
            }
            let points = ((end - start) / step) as u64 + 1;
            max_points.fetch_max(points, Ordering::Relaxed);
            if points > MAX_POINTS {
                return refuse("exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)");
            }
            matrix(history, &selector, |_| {
                (0..points as i64)
                    .map(|k| start + k * step)
                    .filter_map(|t| history.step_at(t).map(|s| (t, s)))
                    .collect()
            })
        }
        _ => json_response(StatusCode::NOT_FOUND, "404 page not found\n".into()),
    }
}

/// `{__name__=~"a|b.*",job="x"}[600000ms]` read back.
#[derive(Debug)]
struct Selector {
    names: Vec<String>,
    labels: Vec<(String, String)>,
    range_ms: Option<i64>,
}

impl Selector {
    fn parse(query: &str) -> Option<Selector> {
        let (body, range_ms) = match query.strip_suffix("ms]") {
            Some(rest) => {
                let (body, range) = rest.rsplit_once('[')?;
                (body, Some(range.parse().ok()?))
            }
            None => (query, None),
        };
        let inner = body.strip_prefix('{')?.strip_suffix('}')?;
        let mut names = Vec::new();
        let mut labels = Vec::new();
        for part in split_matchers(inner) {
            if let Some(regex) = part
                .strip_prefix("__name__=~\"")
                .and_then(|p| p.strip_suffix('"'))
            {
                names = regex.split('|').map(|n| n.replace("\\\\", "")).collect();
            } else {
                let (k, v) = part.split_once("=\"")?;
                labels.push((k.trim().to_owned(), v.strip_suffix('"')?.to_owned()));
            }
        }
        Some(Selector {
            names,
            labels,
            range_ms,
        })
    }

    fn matches(&self, name: &str, labels: &[(String, String)]) -> bool {
        let named = self.names.iter().any(|n| match n.strip_suffix(".*") {
            Some(prefix) => name.starts_with(prefix),
            None => n == name,
        });
        named
            && self
                .labels
                .iter()
                .all(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v))
    }
}

/// Splits matchers at commas outside quotes.
fn split_matchers(inner: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut quoted = false;
    let mut from = 0;
    let bytes = inner.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'"' if i == 0 || bytes[i - 1] != b'\\' => quoted = !quoted,
            b',' if !quoted => {
                parts.push(&inner[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    if from < inner.len() {
        parts.push(&inner[from..]);
    }
    parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

fn labels_of(history: &FleetHistory, replica: usize) -> Vec<(String, String)> {
    vec![
        ("instance".into(), FleetHistory::instance(replica)),
        ("job".into(), history.job.clone()),
        ("model_name".into(), "sim-model".into()),
    ]
}

fn metric_json(name: &str, labels: &[(String, String)]) -> String {
    let mut text = format!("{{\"__name__\":{}", serde_json::Value::from(name));
    for (k, v) in labels {
        text.push_str(&format!(
            ",{}:{}",
            serde_json::Value::from(k.as_str()),
            serde_json::Value::from(v.as_str())
        ));
    }
    text.push('}');
    text
}

fn value_text(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

fn vector(history: &FleetHistory, selector: &Selector, time: i64) -> Response<Full<Bytes>> {
    let mut items = Vec::new();
    if let Some(step) = history.step_at(time) {
        for replica in 0..history.replicas {
            let labels = labels_of(history, replica);
            for (m, name) in FleetHistory::names().iter().enumerate() {
                if selector.matches(name, &labels) && history.present(replica, step) {
                    items.push(format!(
                        "{{\"metric\":{},\"value\":[{},\"{}\"]}}",
                        metric_json(name, &labels),
                        time as f64 / 1000.0,
                        value_text(history.value(replica, m, step))
                    ));
                }
            }
        }
    }
    success("vector", &items)
}

fn matrix(
    history: &FleetHistory,
    selector: &Selector,
    points: impl Fn(()) -> Vec<(i64, i64)>,
) -> Response<Full<Bytes>> {
    let times = points(());
    let mut items = Vec::new();
    for replica in 0..history.replicas {
        let labels = labels_of(history, replica);
        for (m, name) in FleetHistory::names().iter().enumerate() {
            if !selector.matches(name, &labels) || times.is_empty() {
                continue;
            }
            let values: Vec<String> = times
                .iter()
                .filter(|&&(_, s)| history.present(replica, s))
                .map(|&(t, s)| {
                    format!(
                        "[{},\"{}\"]",
                        t as f64 / 1000.0,
                        value_text(history.value(replica, m, s))
                    )
                })
                .collect();
            // Prometheus leaves out a series with no point in the range.
            if values.is_empty() {
                continue;
            }
            items.push(format!(
                "{{\"metric\":{},\"values\":[{}]}}",
                metric_json(name, &labels),
                values.join(",")
            ));
        }
    }
    success("matrix", &items)
}

fn success(kind: &str, items: &[String]) -> Response<Full<Bytes>> {
    json_response(
        StatusCode::OK,
        format!(
            "{{\"status\":\"success\",\"data\":{{\"resultType\":\"{kind}\",\"result\":[{}]}}}}",
            items.join(",")
        ),
    )
}

fn refuse(message: &str) -> Response<Full<Bytes>> {
    json_response(
        StatusCode::BAD_REQUEST,
        format!(
            "{{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":{}}}",
            serde_json::Value::from(message)
        ),
    )
}

fn json_response(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// `a=1&b=%7B` into pairs, percent-decoded (`+` is a space, as forms write it).
fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match u8::from_str_radix(&text[i + 1..i + 3], 16) {
                Ok(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                Err(_) => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_read_back() {
        let s = Selector::parse("{__name__=~\"vllm:num_requests_running|vllm:num_requests_running_total\",job=\"vllm\"}[600000ms]")
            .expect("reads");
        assert_eq!(s.range_ms, Some(600_000));
        assert!(s.matches(
            "vllm:num_requests_running",
            &[("job".into(), "vllm".into())]
        ));
        assert!(!s.matches("vllm:num_requests_running", &[("job".into(), "x".into())]));
        let all = Selector::parse("{__name__=~\"vllm:.*|sglang:.*\"}").expect("reads");
        assert!(all.matches("vllm:anything", &[]));
        assert_eq!(decode("%7Bjob%3D%22a%20b%22%7D"), "{job=\"a b\"}");
    }

    #[test]
    fn counters_restart_and_look_back_ends() {
        let mut h = FleetHistory::new(2, 0, 1000, 100);
        h.imbalanced = true;
        h.restart = Some((0, 50));
        assert_eq!(h.value(0, 3, 49), 49.0);
        assert_eq!(h.value(0, 3, 50), 0.0);
        assert_eq!(h.step_at(1500), Some(1));
        assert_eq!(h.step_at(-1), None);
        assert_eq!(h.step_at(99_000 + 300_001), None);
    }
}
