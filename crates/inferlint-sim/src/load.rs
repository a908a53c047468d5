//! A load generator for any OpenAI-compatible server: one untimed test request, then
//! `requests` streamed completions with at most `concurrency` in flight (as fast as that
//! allows, or at a request rate held back by it), measured as `vllm bench serve`
//! measures them and written with its field names.
//!
//! Bounded by construction: a fixed number of requests, each and all of them given up at
//! one deadline (`timeout_s` after the start), so it never loops for ever.
//!
//! Plain HTTP/1.1 only (one connection per request, through hyper's client connection);
//! an `https://` URL is refused.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{CONTENT_TYPE, HOST};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use inferlint_core::story::contract::JsonObject;
use serde_json::{json, Value};

use crate::runfolder::{round, LatencySummary};

/// What to send.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadConfig {
    /// The model to ask for; `None` asks the server (`GET /v1/models`, the first id).
    pub model: Option<String>,
    /// Timed requests (the untimed test request comes on top).
    pub requests: usize,
    /// Requests kept open at once.
    pub concurrency: usize,
    /// Prompt length in words (the simulated server counts a word as a token).
    pub prompt_tokens: u64,
    /// Output tokens each request asks for (with `ignore_eos`).
    pub output_tokens: u64,
    /// The whole run, test request included, ends by then; requests still open fail.
    pub timeout_s: f64,
    /// Every request sends the same prompt (a benchmark repeated on one server, a dataset
    /// of one prompt): the prefix cache serves all but the first.
    pub repeat_prompt: bool,
    /// The client keeps at most this many open, whatever `concurrency` says (a load tool
    /// that falls short of its own setting); the result file still says `concurrency`.
    pub open_limit: Option<usize>,
    /// Send no untimed test request first (the engine is then cold for the timed ones).
    pub no_test_request: bool,
    /// Keep one record per request in the result file, as `vllm bench serve
    /// --save-detailed` does (with each request's send time on the monotonic clock).
    pub save_detailed: bool,
    /// Requests per second (an open loop): request `i` is due `i / rate` seconds after the
    /// start, evenly spaced, and waits in the client while `concurrency` are open. `None`:
    /// every request is due at the start, sent as a slot frees (`--request-rate inf`).
    pub request_rate: Option<f64>,
    /// Timed request `i` goes out with `X-Request-Id: PREFIX{i}` (`vllm bench serve
    /// --request-id-prefix`); `None`: no header.
    pub request_id_prefix: Option<String>,
    /// Count each streamed chunk with text as one output token, whatever the server's
    /// usage says (a load tool that counts chunks).
    pub count_chunks: bool,
    /// Send chat completions (`/v1/chat/completions`) instead of completions.
    pub chat: bool,
    /// Stop the TTFT clock at the first streamed chunk, text or not (a tool that times the
    /// first bytes of the answer: on the chat API, the role chunk sent before any token).
    pub ttft_first_chunk: bool,
}

impl Default for LoadConfig {
    fn default() -> LoadConfig {
        LoadConfig {
            model: None,
            requests: 8,
            concurrency: 8,
            prompt_tokens: 32,
            output_tokens: 32,
            timeout_s: 60.0,
            repeat_prompt: false,
            open_limit: None,
            no_test_request: false,
            save_detailed: false,
            request_rate: None,
            request_id_prefix: None,
            count_chunks: false,
            chat: false,
            ttft_first_chunk: false,
        }
    }
}

impl LoadConfig {
    /// The path requests go to.
    pub fn endpoint(&self) -> &'static str {
        if self.chat {
            "/v1/chat/completions"
        } else {
            "/v1/completions"
        }
    }
}

/// One request as the client saw it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestOutcome {
    /// Whether the answer came back whole.
    pub ok: bool,
    /// Why not, when it did not.
    pub error: Option<String>,
    /// Seconds from sending to the first chunk with text.
    pub ttft_s: Option<f64>,
    /// Seconds from sending to the end of the answer (or the failure).
    pub latency_s: f64,
    /// `usage.completion_tokens` when the server sent it, else the chunks with text.
    pub output_tokens: u64,
    /// When it was sent, seconds on the host's monotonic clock (as Python's
    /// `time.perf_counter()` on Linux), where that clock can be read.
    pub sent_mono_s: Option<f64>,
    /// Seconds it waited in the client after it was due (its place in the schedule, or
    /// the start at no rate) before it was sent.
    pub queue_s: f64,
    /// Seconds from sending to each streamed chunk that carried text.
    pub chunk_times: Vec<f64>,
}

impl RequestOutcome {
    /// Streamed chunks that carried text.
    pub fn chunks(&self) -> u64 {
        self.chunk_times.len() as u64
    }

    /// The gaps between consecutive chunks with text, seconds (`vllm bench serve`'s
    /// `itls`).
    pub fn itls(&self) -> Vec<f64> {
        self.chunk_times.windows(2).map(|w| w[1] - w[0]).collect()
    }
}

/// What a load run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadResult {
    /// The server's address.
    pub base_url: String,
    /// The model asked for.
    pub model: String,
    /// What was sent.
    pub config: LoadConfig,
    /// The untimed test request, unless it was skipped.
    pub initial_test: Option<RequestOutcome>,
    /// The timed requests, in sending order.
    pub requests: Vec<RequestOutcome>,
    /// Seconds from the timed run's start to its last answer.
    pub duration_s: f64,
    /// What the tool printed, line by line (`load.log`).
    pub log: String,
    /// Unix seconds less the monotonic clock's seconds, read together as the load ended:
    /// what places [`RequestOutcome::sent_mono_s`] on the wall clock.
    pub mono_to_wall_s: Option<f64>,
}

impl LoadResult {
    /// Timed requests that came back whole.
    pub fn completed(&self) -> usize {
        self.requests.iter().filter(|r| r.ok).count()
    }

    /// Timed requests that failed.
    pub fn failed(&self) -> usize {
        self.requests.len() - self.completed()
    }

    /// Output tokens of the completed timed requests.
    pub fn total_output_tokens(&self) -> u64 {
        self.requests
            .iter()
            .filter(|r| r.ok)
            .map(|r| r.output_tokens)
            .sum()
    }

    /// The result file, with `vllm bench serve`'s field names.
    pub fn to_json(&self) -> JsonObject {
        let done: Vec<&RequestOutcome> = self.requests.iter().filter(|r| r.ok).collect();
        let completed = done.len();
        let input = completed as u64 * self.config.prompt_tokens;
        let output = self.total_output_tokens();
        let duration = self.duration_s.max(1e-9);
        let mut ttft: Vec<f64> = done
            .iter()
            .filter_map(|r| r.ttft_s.map(|t| t * 1000.0))
            .collect();
        ttft.sort_by(f64::total_cmp);
        let mut tpot: Vec<f64> = done
            .iter()
            .filter(|r| r.output_tokens > 1)
            .filter_map(|r| {
                r.ttft_s
                    .map(|t| (r.latency_s - t) * 1000.0 / (r.output_tokens - 1) as f64)
            })
            .collect();
        tpot.sort_by(f64::total_cmp);
        let errors: Vec<&str> = self
            .requests
            .iter()
            .map(|r| r.error.as_deref().unwrap_or(""))
            .collect();
        let summary = LatencySummary::of(&ttft, &tpot);
        let mut value = JsonObject::from([
            ("note", json!("written by inferlint-sim load, not vllm bench serve; the field names are vllm bench serve's")),
            ("backend", json!("openai")),
            ("endpoint_type", json!("openai")),
            ("base_url", json!(self.base_url)),
            ("model_id", json!(self.model)),
            ("num_prompts", json!(self.config.requests)),
            ("request_rate", self.config.request_rate.map_or(json!("inf"), |r| json!(r))),
            ("burstiness", json!(1.0)),
            ("max_concurrency", json!(self.config.concurrency)),
            ("random_input_len", json!(self.config.prompt_tokens)),
            ("random_output_len", json!(self.config.output_tokens)),
            ("duration", json!(round(self.duration_s, 6))),
            ("completed", json!(completed)),
            ("failed", json!(self.failed())),
            ("total_input_tokens", json!(input)),
            ("total_output_tokens", json!(output)),
            ("request_throughput", json!(round(completed as f64 / duration, 6))),
            ("output_throughput", json!(round(output as f64 / duration, 6))),
            ("total_token_throughput", json!(round((input + output) as f64 / duration, 6))),
            ("mean_ttft_ms", json!(summary.mean_ttft_ms)),
            ("median_ttft_ms", json!(summary.median_ttft_ms)),
            ("p99_ttft_ms", json!(summary.p99_ttft_ms)),
            ("mean_tpot_ms", json!(summary.mean_tpot_ms)),
            ("median_tpot_ms", json!(summary.median_tpot_ms)),
            ("p99_tpot_ms", json!(summary.p99_tpot_ms)),
            ("errors", json!(errors)),
        ]);
        if self.config.save_detailed {
            let done = |r: &RequestOutcome, v: Value| if r.ok { v } else { json!(0.0) };
            let field = |f: &dyn Fn(&RequestOutcome) -> Value| -> Value {
                Value::Array(self.requests.iter().map(f).collect())
            };
            value.insert(
                "input_lens".into(),
                field(&|_| json!(self.config.prompt_tokens)),
            );
            value.insert("output_lens".into(), field(&|r| json!(r.output_tokens)));
            value.insert(
                "ttfts".into(),
                field(&|r| done(r, json!(r.ttft_s.unwrap_or(0.0)))),
            );
            value.insert("latencies".into(), field(&|r| done(r, json!(r.latency_s))));
            value.insert(
                "itls".into(),
                field(&|r| if r.ok { json!(r.itls()) } else { json!([]) }),
            );
            if self.requests.iter().all(|r| r.sent_mono_s.is_some()) {
                value.insert("start_times".into(), field(&|r| json!(r.sent_mono_s)));
                value.insert("queue_times".into(), field(&|r| json!(r.queue_s)));
            }
        }
        value
    }

    /// `vllm bench serve`'s result block.
    pub fn summary(&self) -> String {
        let v = self.to_json();
        let n = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        format!(
            "============ Serving Benchmark Result ============\n\
Successful requests:                     {:<10}\n\
Failed requests:                         {:<10}\n\
Maximum request concurrency:             {:<10}\n\
Benchmark duration (s):                  {:<10.2}\n\
Total input tokens:                      {:<10}\n\
Total generated tokens:                  {:<10}\n\
Output token throughput (tok/s):         {:<10.2}\n\
Mean TTFT (ms):                          {:<10.2}\n\
Median TTFT (ms):                        {:<10.2}\n\
P99 TTFT (ms):                           {:<10.2}\n\
Mean TPOT (ms):                          {:<10.2}\n\
==================================================\n",
            self.completed(),
            self.failed(),
            self.config.concurrency,
            self.duration_s,
            n("total_input_tokens"),
            n("total_output_tokens"),
            n("output_throughput"),
            n("mean_ttft_ms"),
            n("median_ttft_ms"),
            n("p99_ttft_ms"),
            n("mean_tpot_ms"),
        )
    }
}

/// Why a load run (or a fetch) could not be made.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// An address other than `http://HOST:PORT[/PATH]`.
    #[error("read the URL {0}: only http://HOST:PORT[/PATH] is supported")]
    BadUrl(String),
    /// `GET /v1/models` gave no model.
    #[error("list the models at {url}: {reason}")]
    Models {
        /// The address asked.
        url: String,
        /// Why no model came back.
        reason: String,
    },
    /// The untimed test request failed, so no timed request was sent.
    #[error("run the initial test request: {0}")]
    InitialTest(String),
    /// The client's runtime could not start.
    #[error("set up the client: {0}")]
    Io(#[from] std::io::Error),
    /// A plain request failed.
    #[error("fetch {url}: {reason}")]
    Fetch {
        /// The address asked.
        url: String,
        /// Why it failed.
        reason: String,
    },
    /// Settings that cannot be run (no request, a timeout of 0).
    #[error("read the load settings: {0}")]
    Config(String),
}

/// Where requests go.
#[derive(Debug, Clone)]
struct Target {
    host: String,
    port: u16,
    /// The base URL's path without its trailing slash ("" for none).
    prefix: String,
}

impl Target {
    fn parse(url: &str) -> Result<Target, LoadError> {
        let bad = || LoadError::BadUrl(url.to_owned());
        let rest = url.trim().strip_prefix("http://").ok_or_else(bad)?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
                (h, p.parse::<u16>().map_err(|_| bad())?)
            }
            _ => (authority, 80),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(bad());
        }
        Ok(Target {
            host: host.to_owned(),
            port,
            prefix: path.trim_end_matches('/').to_owned(),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}:{}{}{path}", self.host, self.port, self.prefix)
    }
}

/// A plain HTTP answer.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpReply {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type` header.
    pub content_type: Option<String>,
    /// The body, as text.
    pub body: String,
}

/// One request on a fresh connection; the response's body is left to the caller.
async fn send(
    target: &Target,
    method: Method,
    path: &str,
    body: Option<String>,
) -> Result<hyper::Response<hyper::body::Incoming>, String> {
    send_with_id(target, method, path, body, None).await
}

/// [`send`] with an `X-Request-Id` header when `request_id` is given.
async fn send_with_id(
    target: &Target,
    method: Method,
    path: &str,
    body: Option<String>,
    request_id: Option<&str>,
) -> Result<hyper::Response<hyper::body::Incoming>, String> {
    let stream = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(connection);
    let mut builder = Request::builder()
        .method(method)
        .uri(format!("{}{path}", target.prefix))
        .header(HOST, format!("{}:{}", target.host, target.port));
    if body.is_some() {
        builder = builder.header(CONTENT_TYPE, "application/json");
    }
    if let Some(id) = request_id {
        builder = builder.header("X-Request-Id", id);
    }
    let request = builder
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .map_err(|e| format!("build the request: {e}"))?;
    sender
        .send_request(request)
        .await
        .map_err(|e| format!("send: {e}"))
}

async fn fetch_async(
    target: &Target,
    method: Method,
    path: &str,
    body: Option<String>,
) -> Result<HttpReply, String> {
    let response = send(target, method, path, body).await?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("read the answer: {e}"))?
        .to_bytes();
    Ok(HttpReply {
        status,
        content_type,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

fn runtime() -> Result<tokio::runtime::Runtime, LoadError> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// One request to a full URL (`http://HOST:PORT/PATH`), blocking, with a timeout: a
/// small client for tests and tools. Must not be called from inside a tokio runtime.
pub fn fetch(
    method: &str,
    url: &str,
    body: Option<&str>,
    timeout: Duration,
) -> Result<HttpReply, LoadError> {
    // The whole path is the request's; the target keeps no prefix.
    let mut target = Target::parse(url)?;
    let path = std::mem::take(&mut target.prefix);
    let method = Method::from_bytes(method.as_bytes())
        .map_err(|_| LoadError::Config(format!("unknown HTTP method {method}")))?;
    let path = if path.is_empty() {
        "/".to_owned()
    } else {
        path
    };
    let rt = runtime()?;
    rt.block_on(async {
        match tokio::time::timeout(
            timeout,
            fetch_async(&target, method, &path, body.map(str::to_owned)),
        )
        .await
        {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(reason)) => Err(reason),
            Err(_) => Err(format!("no answer within {:.1} s", timeout.as_secs_f64())),
        }
    })
    .map_err(|reason| LoadError::Fetch {
        url: url.to_owned(),
        reason,
    })
}

/// `GET url`, blocking; see [`fetch`].
pub fn get(url: &str, timeout: Duration) -> Result<HttpReply, LoadError> {
    fetch("GET", url, None, timeout)
}

/// The seconds of the host's monotonic clock (`CLOCK_MONOTONIC`, which Python's
/// `time.perf_counter()` reads on Linux).
#[cfg(unix)]
fn monotonic_s() -> Option<f64> {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).ok()?;
    Some(t.tv_sec() as f64 + t.tv_nsec() as f64 / 1e9)
}

#[cfg(not(unix))]
fn monotonic_s() -> Option<f64> {
    None
}

/// Unix seconds now.
fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The prompt of request `index` (`None`: the test request). Each starts with its own
/// word, as a random dataset's prompts differ from their first token, so the prefix cache
/// serves none of it; with `repeat`, every one is the same.
fn prompt_of(words: u64, index: Option<usize>, repeat: bool) -> String {
    let text = prompt(words.saturating_sub(1));
    let first = match (repeat, index) {
        (true, _) => "same".to_owned(),
        (false, Some(i)) => format!("r{i}"),
        (false, None) => "test".to_owned(),
    };
    if words <= 1 {
        first
    } else {
        format!("{first} {text}")
    }
}

/// A prompt of `words` words.
fn prompt(words: u64) -> String {
    const VOCABULARY: [&str; 8] = [
        "tell",
        "me",
        "about",
        "the",
        "weather",
        "in",
        "simulated",
        "cities",
    ];
    (0..words)
        .map(|k| VOCABULARY[(k % VOCABULARY.len() as u64) as usize])
        .collect::<Vec<_>>()
        .join(" ")
}

/// One streamed completion, as `vllm bench serve` sends it with `--ignore-eos`; `due` is
/// when it was due (its wait in the client is counted from there).
async fn one_request(
    target: &Target,
    model: &str,
    config: &LoadConfig,
    index: Option<usize>,
    due: Instant,
) -> RequestOutcome {
    let prompt = prompt_of(config.prompt_tokens, index, config.repeat_prompt);
    let body = if config.chat {
        json!({
            "model": model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0.0,
            "max_completion_tokens": config.output_tokens,
            "stream": true,
            "stream_options": {"include_usage": true},
            "ignore_eos": true,
        })
    } else {
        json!({
            "model": model,
            "prompt": prompt,
            "temperature": 0.0,
            "max_tokens": config.output_tokens,
            "logprobs": null,
            "stream": true,
            "stream_options": {"include_usage": true},
            "ignore_eos": true,
        })
    };
    // The test request goes out without an id, as vllm bench serve's does.
    let request_id = index.and_then(|i| {
        config
            .request_id_prefix
            .as_ref()
            .map(|prefix| format!("{prefix}{i}"))
    });
    let start = Instant::now();
    let mut outcome = RequestOutcome {
        sent_mono_s: monotonic_s(),
        queue_s: start.saturating_duration_since(due).as_secs_f64(),
        ..RequestOutcome::default()
    };
    let result = streamed(
        target,
        config,
        body.to_string(),
        request_id.as_deref(),
        start,
        &mut outcome,
    )
    .await;
    outcome.latency_s = start.elapsed().as_secs_f64();
    match result {
        Ok(()) if outcome.output_tokens == 0 => {
            outcome.error = Some("empty completion".to_owned());
        }
        Ok(()) => outcome.ok = true,
        Err(e) => outcome.error = Some(e),
    }
    outcome
}

async fn streamed(
    target: &Target,
    config: &LoadConfig,
    body: String,
    request_id: Option<&str>,
    start: Instant,
    outcome: &mut RequestOutcome,
) -> Result<(), String> {
    let response = send_with_id(
        target,
        Method::POST,
        config.endpoint(),
        Some(body),
        request_id,
    )
    .await?;
    let status = response.status();
    let mut body = response.into_body();
    if !status.is_success() {
        let bytes = body
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        return Err(format!("HTTP {}: {}", status.as_u16(), text.trim()));
    }
    let mut pending: Vec<u8> = Vec::new();
    let mut usage_tokens: Option<u64> = None;
    let mut done = false;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("read the stream: {e}"))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        pending.extend_from_slice(&data);
        while let Some(end) = find_event_end(&pending) {
            let event: Vec<u8> = pending.drain(..end.0 + end.1).collect();
            let event = String::from_utf8_lossy(&event[..end.0]).into_owned();
            for line in event.lines() {
                let Some(payload) = line.strip_prefix("data:").map(str::trim) else {
                    continue;
                };
                if payload == "[DONE]" {
                    done = true;
                    continue;
                }
                let Ok(chunk) = serde_json::from_str::<Value>(payload) else {
                    return Err(format!("a chunk is not JSON: {payload}"));
                };
                let text = chunk
                    .pointer("/choices/0/text")
                    .or_else(|| chunk.pointer("/choices/0/delta/content"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let at = start.elapsed().as_secs_f64();
                if config.ttft_first_chunk {
                    outcome.ttft_s.get_or_insert(at);
                }
                if !text.is_empty() {
                    outcome.chunk_times.push(at);
                    outcome.ttft_s.get_or_insert(at);
                }
                if let Some(n) = chunk
                    .pointer("/usage/completion_tokens")
                    .and_then(Value::as_u64)
                {
                    usage_tokens = Some(n);
                }
            }
        }
    }
    outcome.output_tokens = match usage_tokens {
        Some(n) if !config.count_chunks => n,
        _ => outcome.chunks(),
    };
    if done {
        Ok(())
    } else {
        Err("the stream ended without [DONE]".to_owned())
    }
}

/// The end of the first SSE event in `buffer`: (its length, the separator's length).
fn find_event_end(buffer: &[u8]) -> Option<(usize, usize)> {
    let lf = buffer.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = buffer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

async fn model_name(target: &Target) -> Result<String, LoadError> {
    let url = target.url("/v1/models");
    let failed = |reason: String| LoadError::Models {
        url: url.clone(),
        reason,
    };
    let reply = fetch_async(target, Method::GET, "/v1/models", None)
        .await
        .map_err(&failed)?;
    if reply.status != 200 {
        return Err(failed(format!("HTTP {}", reply.status)));
    }
    let value: Value =
        serde_json::from_str(&reply.body).map_err(|e| failed(format!("not JSON: {e}")))?;
    value
        .pointer("/data/0/id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| failed("no data[0].id".to_owned()))
}

/// Runs a load, blocking (it makes its own runtime: do not call it from async code).
/// `on_line` sees each line of the tool's output as it is printed.
pub fn run_with_output(
    base_url: &str,
    config: LoadConfig,
    on_line: &mut dyn FnMut(&str),
) -> Result<LoadResult, LoadError> {
    let target = checked(base_url, &config)?;
    let rt = runtime()?;
    rt.block_on(run_async(base_url, &target, config, on_line))
}

/// Runs a load inside the caller's tokio runtime (time and I/O drivers on): what a harness
/// awaits beside a recording.
pub async fn run_in_runtime(base_url: &str, config: LoadConfig) -> Result<LoadResult, LoadError> {
    let target = checked(base_url, &config)?;
    run_async(base_url, &target, config, &mut |_| {}).await
}

/// The target of a load whose settings make sense.
fn checked(base_url: &str, config: &LoadConfig) -> Result<Target, LoadError> {
    if config.concurrency == 0 {
        return Err(LoadError::Config(
            "the concurrency must be at least 1".into(),
        ));
    }
    if !(config.timeout_s.is_finite() && config.timeout_s > 0.0) {
        return Err(LoadError::Config(
            "the timeout must be a positive number".into(),
        ));
    }
    if config
        .request_rate
        .is_some_and(|r| !(r.is_finite() && r > 0.0))
    {
        return Err(LoadError::Config(
            "the request rate must be a positive number (leave it out for inf)".into(),
        ));
    }
    Target::parse(base_url)
}

/// [`run_with_output`] without the live output.
pub fn run(base_url: &str, config: LoadConfig) -> Result<LoadResult, LoadError> {
    run_with_output(base_url, config, &mut |_| {})
}

async fn run_async(
    base_url: &str,
    target: &Target,
    config: LoadConfig,
    on_line: &mut dyn FnMut(&str),
) -> Result<LoadResult, LoadError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(config.timeout_s);
    let mut log = String::new();
    let mut say = |line: &str| {
        log.push_str(line);
        log.push('\n');
        on_line(line);
    };
    let model = match &config.model {
        Some(m) => m.clone(),
        None => tokio::time::timeout_at(deadline, model_name(target))
            .await
            .map_err(|_| LoadError::Models {
                url: target.url("/v1/models"),
                reason: "no answer before the timeout".into(),
            })??,
    };
    let rate = config
        .request_rate
        .map_or_else(|| "inf".to_owned(), |r| format!("{r:?}"));
    let prefix = config
        .request_id_prefix
        .as_ref()
        .map_or_else(|| "None".to_owned(), |p| format!("'{p}'"));
    say(&format!(
        "Namespace(backend='{}', base_url='{base_url}', endpoint='{}', dataset_name='random', model='{model}', num_prompts={}, max_concurrency={}, request_rate={rate}, burstiness=1.0, ignore_eos=True, random_input_len={}, random_output_len={}, request_id_prefix={prefix})",
        if config.chat { "openai-chat" } else { "openai" },
        config.endpoint(),
        config.requests,
        config.concurrency,
        config.prompt_tokens,
        config.output_tokens
    ));
    let initial_test = if config.no_test_request {
        say("Skipping initial test run. Starting main benchmark run...");
        None
    } else {
        say("Starting initial single prompt test run...");
        let test = tokio::time::timeout_at(
            deadline,
            one_request(target, &model, &config, None, Instant::now()),
        )
        .await
        .unwrap_or_else(|_| RequestOutcome {
            error: Some("no answer before the timeout".into()),
            ..RequestOutcome::default()
        });
        if !test.ok {
            let reason = test.error.clone().unwrap_or_default();
            say(&format!("Initial test run failed: {reason}"));
            return Err(LoadError::InitialTest(reason));
        }
        say("Initial test run completed. Starting main benchmark run...");
        Some(test)
    };
    say(&format!("Traffic request rate: {rate}"));
    say(&format!(
        "Maximum request concurrency: {}",
        config.concurrency
    ));

    let start = Instant::now();
    let outcomes: Arc<Mutex<Vec<Option<RequestOutcome>>>> =
        Arc::new(Mutex::new(vec![None; config.requests]));
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let config = Arc::new(config);
    let model = Arc::new(model);
    let mut workers = Vec::new();
    let open = config
        .open_limit
        .map_or(config.concurrency, |l| l.clamp(1, config.concurrency));
    for _ in 0..open.min(config.requests) {
        let (outcomes, next, config, model, target) = (
            Arc::clone(&outcomes),
            Arc::clone(&next),
            Arc::clone(&config),
            Arc::clone(&model),
            target.clone(),
        );
        workers.push(tokio::spawn(async move {
            loop {
                let index = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if index >= config.requests {
                    return;
                }
                // Due at its place in the schedule (at the start without a rate); a
                // request not due yet waits for it.
                let due = match config.request_rate {
                    Some(rate) => start + Duration::from_secs_f64(index as f64 / rate),
                    None => start,
                };
                if tokio::time::timeout_at(deadline, tokio::time::sleep_until(due.into()))
                    .await
                    .is_err()
                {
                    return;
                }
                let sent = Instant::now();
                let outcome = tokio::time::timeout_at(
                    deadline,
                    one_request(&target, &model, &config, Some(index), due),
                )
                .await
                .unwrap_or_else(|_| RequestOutcome {
                    error: Some("no answer before the timeout".into()),
                    latency_s: sent.elapsed().as_secs_f64(),
                    ..RequestOutcome::default()
                });
                outcomes.lock().unwrap_or_else(PoisonError::into_inner)[index] = Some(outcome);
            }
        }));
    }
    for worker in workers {
        // A worker that panicked leaves its requests unanswered: they count as failed.
        let _ = worker.await;
    }
    let duration_s = start.elapsed().as_secs_f64();
    let requests: Vec<RequestOutcome> = outcomes
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .map(|o| {
            o.clone().unwrap_or_else(|| RequestOutcome {
                error: Some("not sent before the timeout".into()),
                ..RequestOutcome::default()
            })
        })
        .collect();
    let mut result = LoadResult {
        base_url: base_url.to_owned(),
        model: model.as_ref().clone(),
        config: config.as_ref().clone(),
        initial_test,
        requests,
        duration_s,
        log: String::new(),
        mono_to_wall_s: monotonic_s().map(|mono| unix_now() - mono),
    };
    for line in result.summary().lines() {
        say(line);
    }
    result.log = log;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_are_read_or_refused() {
        let t = Target::parse("http://127.0.0.1:8000").expect("a plain URL");
        assert_eq!(
            (t.host.as_str(), t.port, t.prefix.as_str()),
            ("127.0.0.1", 8000, "")
        );
        let t = Target::parse("http://localhost:30000/api/").expect("with a path");
        assert_eq!(
            (t.host.as_str(), t.port, t.prefix.as_str()),
            ("localhost", 30000, "/api")
        );
        assert!(Target::parse("https://127.0.0.1:8000").is_err());
        assert!(Target::parse("127.0.0.1:8000").is_err());
        assert!(Target::parse("http://:80").is_err());
    }

    #[test]
    fn sse_events_end_at_a_blank_line() {
        assert_eq!(find_event_end(b"data: x\n\ndata: y"), Some((7, 2)));
        assert_eq!(find_event_end(b"data: x\r\n\r\n"), Some((7, 4)));
        assert_eq!(find_event_end(b"data: x\n"), None);
    }
}
