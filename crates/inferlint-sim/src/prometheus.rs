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
//! at a step; one reading can be NaN. Each replica can also serve the other series of a
//! real engine's page (`page`) in the instant answers, so that the snapshots are the size
//! a real server's are.
//!
//! It writes its answers as Prometheus does (a time as whole seconds and, when it has
//! one, a fraction of three digits; a value as the shortest text that reads back, `'e'`
//! below 1e-6 and from 1e21), straight into one buffer, so that it can serve a day of
//! hundreds of replicas: its own cost is not what a benchmark of the reader measures.

use std::convert::Infallible;
use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use inferlint_core::{Engine, Sample};

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
    /// Series each replica also serves in instant answers, with their constant values: the
    /// rest of a real engine's page (labels of the page's own, the replica's `instance`
    /// and `job` added). Series of a name the history models are left out.
    pub page: Vec<Sample>,
    /// Every request answered is appended to this file as one line, its path and query
    /// as sent (`/api/v1/query_range?query=…`), so that a benchmark can ask the same.
    pub query_log: Option<PathBuf>,
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
            page: Vec::new(),
            query_log: None,
        }
    }

    /// The replica's `instance` label.
    pub fn instance(replica: usize) -> String {
        format!("replica-{replica}:8000")
    }

    /// The names of the metrics the history models, in the order [`FleetHistory::value`]
    /// numbers them.
    pub fn names() -> [&'static str; 7] {
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

/// Writes the history as OpenMetrics text, the input of `promtool tsdb
/// create-blocks-from openmetrics`: a real Prometheus given the blocks it makes answers
/// the same questions from the same readings (a benchmark's second server). The page's
/// series are written at the first and the last scrape only, as the instant answers need
/// them; a replica's series end where it stops answering.
pub fn write_openmetrics(
    history: &FleetHistory,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    let names = FleetHistory::names();
    let mut line = String::new();
    let stamp = |out: &mut String, step: i64| {
        let t = history.start_ms + step * history.interval_ms;
        let _ = writeln!(out, " {}.{:03}", t.div_euclid(1000), t.rem_euclid(1000));
    };
    let labels_text = |labels: &[(String, String)]| -> String {
        let parts: Vec<String> = labels
            .iter()
            .map(|(k, v)| {
                let v = v
                    .replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('\n', "\\n");
                format!("{k}=\"{v}\"")
            })
            .collect();
        format!("{{{}}}", parts.join(","))
    };
    for (m, name) in names.iter().enumerate() {
        match name.strip_suffix("_total") {
            Some(family) => writeln!(out, "# TYPE {family} counter")?,
            None => writeln!(out, "# TYPE {name} gauge")?,
        }
        for replica in 0..history.replicas {
            let labels = labels_text(&labels_of(history, replica));
            for step in (0..history.steps).take_while(|&s| history.present(replica, s)) {
                line.clear();
                line.push_str(name);
                line.push_str(&labels);
                line.push(' ');
                push_value(&mut line, history.value(replica, m, step));
                stamp(&mut line, step);
                out.write_all(line.as_bytes())?;
            }
        }
    }
    let mut page: Vec<&Sample> = history
        .page
        .iter()
        .filter(|s| !names.contains(&s.name.as_str()))
        .collect();
    page.sort_by(|a, b| a.name.cmp(&b.name));
    let mut family = "";
    for sample in page {
        if sample.name != family {
            family = &sample.name;
            writeln!(out, "# TYPE {family} unknown")?;
        }
        for replica in 0..history.replicas {
            let labels = labels_text(&page_labels(history, replica, sample));
            let last = (0..history.steps)
                .take_while(|&s| history.present(replica, s))
                .last();
            for step in [Some(0), last]
                .into_iter()
                .flatten()
                .collect::<std::collections::BTreeSet<_>>()
            {
                line.clear();
                line.push_str(&sample.name);
                line.push_str(&labels);
                line.push(' ');
                push_value(&mut line, sample.value);
                stamp(&mut line, step);
                out.write_all(line.as_bytes())?;
            }
        }
    }
    writeln!(out, "# EOF")
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
    if let Some(log) = &history.query_log {
        let line = request
            .uri()
            .path_and_query()
            .map_or_else(String::new, |p| p.as_str().to_owned());
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            let _ = std::io::Write::write_all(&mut file, format!("{line}\n").as_bytes());
        }
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
                Some(range) => {
                    let first = history.start_ms.max(time - range + 1);
                    let from =
                        (first - history.start_ms + history.interval_ms - 1) / history.interval_ms;
                    let to =
                        ((time - history.start_ms) / history.interval_ms).min(history.steps - 1);
                    let times: Vec<(i64, i64)> = (from.max(0)..=to)
                        .map(|s| (history.start_ms + s * history.interval_ms, s))
                        .collect();
                    matrix(history, &selector, &times)
                }
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
            let times: Vec<(i64, i64)> = (0..points as i64)
                .map(|k| start + k * step)
                .filter_map(|t| history.step_at(t).map(|s| (t, s)))
                .collect();
            matrix(history, &selector, &times)
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

/// A page series' labels as a replica serves it: the page's own, with the replica's
/// `instance` and `job` in place of any the page had, sorted by name.
fn page_labels(history: &FleetHistory, replica: usize, sample: &Sample) -> Vec<(String, String)> {
    let mut labels: Vec<(String, String)> = sample
        .labels
        .iter()
        .filter(|(k, _)| k != "instance" && k != "job")
        .cloned()
        .collect();
    labels.push(("instance".into(), FleetHistory::instance(replica)));
    labels.push(("job".into(), history.job.clone()));
    labels.sort();
    labels
}

/// A JSON string, escaped as serde_json escapes it.
fn push_json_string(out: &mut String, text: &str) {
    // A string always serializes.
    out.push_str(&serde_json::to_string(text).unwrap_or_default());
}

fn push_metric(out: &mut String, name: &str, labels: &[(String, String)]) {
    out.push_str("{\"__name__\":");
    push_json_string(out, name);
    for (k, v) in labels {
        out.push(',');
        push_json_string(out, k);
        out.push(':');
        push_json_string(out, v);
    }
    out.push('}');
}

/// A time as Prometheus writes it: whole seconds and, when there is one, a fraction of
/// three digits (`1764547200`, `1764547200.050`).
fn push_time(out: &mut String, t_ms: i64) {
    if t_ms < 0 {
        out.push('-');
    }
    let t = t_ms.unsigned_abs();
    let _ = write!(out, "{}", t / 1000);
    if t % 1000 != 0 {
        let _ = write!(out, ".{:03}", t % 1000);
    }
}

/// A value as Prometheus writes it (Go's `strconv.FormatFloat(v, 'f', -1, 64)`, `'e'`
/// below 1e-6 and from 1e21; `NaN`, `+Inf`, `-Inf`), without the quotes.
fn push_value(out: &mut String, v: f64) {
    let abs = v.abs();
    if v.is_nan() {
        out.push_str("NaN");
    } else if v == f64::INFINITY {
        out.push_str("+Inf");
    } else if v == f64::NEG_INFINITY {
        out.push_str("-Inf");
    } else if v.fract() == 0.0 && abs < 1e15 {
        let _ = write!(out, "{}", v as i64);
    } else if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust writes 1.5e-7 where Go writes 1.5e-07, and 1e21 where Go writes 1e+21.
        let text = format!("{v:e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let (sign, digits) = match exponent.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', exponent),
        };
        let _ = write!(out, "{mantissa}e{sign}{digits:0>2}");
    } else {
        let _ = write!(out, "{v}");
    }
}

fn vector(history: &FleetHistory, selector: &Selector, time: i64) -> Response<Full<Bytes>> {
    let mut out = String::new();
    let mut first = true;
    let mut item = |out: &mut String, name: &str, labels: &[(String, String)], value: f64| {
        if !std::mem::take(&mut first) {
            out.push(',');
        }
        out.push_str("{\"metric\":");
        push_metric(out, name, labels);
        out.push_str(",\"value\":[");
        push_time(out, time);
        out.push_str(",\"");
        push_value(out, value);
        out.push_str("\"]}");
    };
    if let Some(step) = history.step_at(time) {
        let names = FleetHistory::names();
        for replica in (0..history.replicas).filter(|&r| history.present(r, step)) {
            let labels = labels_of(history, replica);
            for (m, name) in names.iter().enumerate() {
                if selector.matches(name, &labels) {
                    item(&mut out, name, &labels, history.value(replica, m, step));
                }
            }
            for sample in history
                .page
                .iter()
                .filter(|s| !names.contains(&s.name.as_str()))
            {
                let labels = page_labels(history, replica, sample);
                if selector.matches(&sample.name, &labels) {
                    item(&mut out, &sample.name, &labels, sample.value);
                }
            }
        }
    }
    success("vector", &out)
}

/// A matrix of the history's series at `times` ((Unix ms, step) pairs), written as
/// Prometheus writes it, each time's text made once for every series.
fn matrix(
    history: &FleetHistory,
    selector: &Selector,
    times: &[(i64, i64)],
) -> Response<Full<Bytes>> {
    let mut time_text = String::new();
    let mut ends = Vec::with_capacity(times.len());
    for &(t, _) in times {
        push_time(&mut time_text, t);
        ends.push(time_text.len());
    }
    let mut out = String::new();
    let mut first = true;
    for replica in 0..history.replicas {
        let labels = labels_of(history, replica);
        for (m, name) in FleetHistory::names().iter().enumerate() {
            if !selector.matches(name, &labels) {
                continue;
            }
            // Prometheus leaves out a series with no point in the range.
            let mut points = times
                .iter()
                .enumerate()
                .filter(|(_, &(_, s))| history.present(replica, s))
                .peekable();
            if points.peek().is_none() {
                continue;
            }
            if !std::mem::take(&mut first) {
                out.push(',');
            }
            out.push_str("{\"metric\":");
            push_metric(&mut out, name, &labels);
            out.push_str(",\"values\":[");
            for (k, (i, &(_, s))) in points.enumerate() {
                if k > 0 {
                    out.push(',');
                }
                out.push('[');
                out.push_str(&time_text[if i == 0 { 0 } else { ends[i - 1] }..ends[i]]);
                out.push_str(",\"");
                push_value(&mut out, history.value(replica, m, s));
                out.push_str("\"]");
            }
            out.push_str("]}");
        }
    }
    success("matrix", &out)
}

fn success(kind: &str, items: &str) -> Response<Full<Bytes>> {
    let mut body = String::with_capacity(items.len() + 64);
    body.push_str("{\"status\":\"success\",\"data\":{\"resultType\":\"");
    body.push_str(kind);
    body.push_str("\",\"result\":[");
    body.push_str(items);
    body.push_str("]}}");
    json_response(StatusCode::OK, body)
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

    fn value_text(v: f64) -> String {
        let mut text = String::new();
        push_value(&mut text, v);
        text
    }

    fn time_text(t_ms: i64) -> String {
        let mut text = String::new();
        push_time(&mut text, t_ms);
        text
    }

    /// Times and values as Prometheus writes them: `marshalTimestamp` writes whole
    /// seconds and a fraction of exactly three digits when there is one; values are Go's
    /// `strconv.FormatFloat(v, 'f', -1, 64)`, `'e'` (two exponent digits at least, a
    /// sign always) below 1e-6 and from 1e21, and `NaN`, `+Inf`, `-Inf`.
    #[test]
    fn times_and_values_are_written_as_prometheus_writes_them() {
        assert_eq!(time_text(1_764_547_200_000), "1764547200");
        assert_eq!(time_text(1_764_547_200_050), "1764547200.050");
        assert_eq!(time_text(1_764_547_200_500), "1764547200.500");
        assert_eq!(time_text(5), "0.005");
        assert_eq!(value_text(16.0), "16");
        assert_eq!(value_text(0.97), "0.97");
        assert_eq!(value_text(-0.5), "-0.5");
        assert_eq!(value_text(0.000001), "0.000001");
        assert_eq!(value_text(1.5e-7), "1.5e-07");
        assert_eq!(value_text(1e21), "1e+21");
        assert_eq!(value_text(1e300), "1e+300");
        assert_eq!(value_text(f64::NAN), "NaN");
        assert_eq!(value_text(f64::INFINITY), "+Inf");
        assert_eq!(value_text(f64::NEG_INFINITY), "-Inf");
    }

    /// A range answer is the API's matrix: every series of every replica the selector
    /// matches, with one point per step of the history inside the range, in order.
    #[test]
    fn a_range_answer_is_a_matrix_of_the_history() {
        let mut h = FleetHistory::new(2, 1_000_000, 500, 10);
        h.nan_at = Some((1, 3));
        let selector = Selector::parse("{__name__=~\"vllm:kv_cache_usage_perc\",job=\"vllm\"}")
            .expect("reads");
        let times: Vec<(i64, i64)> = (2..5).map(|s| (1_000_000 + s * 500, s)).collect();
        let body = matrix(&h, &selector, &times).into_body();
        let bytes = futures_body(body);
        let v: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
        assert_eq!(v["status"], "success");
        assert_eq!(v["data"]["resultType"], "matrix");
        let result = v["data"]["result"].as_array().expect("a list");
        assert_eq!(result.len(), 2, "one series per replica");
        assert_eq!(result[1]["metric"]["instance"], "replica-1:8000");
        // A balanced replica's KV usage is 0.2 + |step mod 20 - 10| / 100: 0.28 at step
        // 2, 0.26 at step 4; step 3 is the NaN asked for.
        assert_eq!(
            result[1]["values"],
            serde_json::json!([[1001, "0.28"], [1001.5, "NaN"], [1002, "0.26"]])
        );
    }

    /// A replica given a page serves its other series in instant answers, with its own
    /// `instance` and `job`; the series the history models keep the history's value.
    #[test]
    fn a_page_fills_the_instant_answers() {
        let mut h = FleetHistory::new(2, 0, 1000, 10);
        h.page = vec![
            Sample {
                name: "vllm:num_requests_running".into(),
                labels: vec![],
                value: 99.0,
                timestamp_ms: None,
            },
            Sample {
                name: "vllm:iteration_tokens_total_bucket".into(),
                labels: vec![("le".into(), "1.0".into()), ("instance".into(), "x".into())],
                value: 3.0,
                timestamp_ms: None,
            },
        ];
        let selector = Selector::parse("{__name__=~\"vllm:.*\",job=\"vllm\"}").expect("reads");
        let bytes = futures_body(vector(&h, &selector, 2000).into_body());
        let v: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
        let result = v["data"]["result"].as_array().expect("a list");
        assert_eq!(result.len(), 2 * (7 + 1));
        let bucket: Vec<&serde_json::Value> = result
            .iter()
            .filter(|s| s["metric"]["__name__"] == "vllm:iteration_tokens_total_bucket")
            .collect();
        assert_eq!(bucket.len(), 2);
        assert_eq!(bucket[1]["metric"]["instance"], "replica-1:8000");
        assert_eq!(bucket[1]["metric"]["le"], "1.0");
        assert_eq!(bucket[1]["value"], serde_json::json!([2, "3"]));
        let running: Vec<&serde_json::Value> = result
            .iter()
            .filter(|s| s["metric"]["__name__"] == "vllm:num_requests_running")
            .collect();
        assert_eq!(running.len(), 2, "the history's series, not the page's");
        // Running on a balanced replica is 4 + |step mod 20 - 10| / 5, rounded: 5.6 at
        // step 2 reads 6.
        assert_eq!(running[0]["value"][1], "6");
    }

    /// The whole body of an answer (a `Full` is ready at once).
    fn futures_body(body: Full<Bytes>) -> Bytes {
        use http_body_util::BodyExt;
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(body.collect())
            .map(|c| c.to_bytes())
            .unwrap_or_default()
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
