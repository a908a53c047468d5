//! The probe (T7): one completion, then a burst of them at once, then `/health`.
//! Some settings start cleanly and crash on the first real request, or on the first
//! few at once; the probe finds out before a benchmark does.

use std::time::{Duration, Instant};

pub use inferlint_core::judging::checks::probe::{judge_reply, verdict, ProbeReport, Reply};
use serde_json::{json, Value};

use crate::http::{BaseUrl, HttpClient};

/// The prompt every probe request sends.
pub const PROMPT: &str = "Write one sentence about the weather.";

/// How to probe: the model, the burst, and the time each step may take.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeOptions {
    /// The model to ask for; `None` takes the first `/v1/models` lists.
    pub model: Option<String>,
    /// Requests sent at once after the first.
    pub concurrency: u32,
    /// Tokens each request asks for.
    pub max_tokens: u32,
    /// Each completion (a cold server compiles kernels on its first request).
    pub request_timeout: Duration,
    /// `GET /health`.
    pub health_timeout: Duration,
    /// `GET /v1/models`.
    pub models_timeout: Duration,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            model: None,
            concurrency: 8,
            max_tokens: 16,
            request_timeout: Duration::from_secs(300),
            health_timeout: Duration::from_secs(10),
            models_timeout: Duration::from_secs(30),
        }
    }
}

/// The first model `/v1/models` lists.
async fn first_model(
    client: &HttpClient,
    base: &BaseUrl,
    timeout: Duration,
) -> Result<String, String> {
    let url = base.join("/v1/models");
    let answer = client
        .get(&url, timeout)
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    if answer.status != hyper::StatusCode::OK {
        return Err(format!("{url}: {}", answer.status_text()));
    }
    let v: Value = serde_json::from_slice(&answer.body)
        .map_err(|_| format!("{url}: the answer is not JSON"))?;
    v.pointer("/data/0/id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("{url} lists no model"))
}

/// Sends one completion named `request_id` (see [`probe_request_id`]).
async fn complete(
    client: &HttpClient,
    base: &BaseUrl,
    body: &str,
    request_id: &str,
    timeout: Duration,
) -> Reply {
    let started = Instant::now();
    let result = client
        .post_json_as(
            &base.join("/v1/completions"),
            body.to_owned(),
            request_id,
            timeout,
        )
        .await;
    let seconds = started.elapsed().as_secs_f64();
    match result {
        Ok(answer) => judge_reply(answer.status.as_u16(), &answer.body, seconds),
        Err(e) => Reply {
            status: None,
            seconds,
            tokens: None,
            error: Some(e.to_string()),
        },
    }
}

async fn alive(client: &HttpClient, base: &BaseUrl, timeout: Duration) -> bool {
    client
        .get(&base.join("/health"), timeout)
        .await
        .is_ok_and(|a| a.status == hyper::StatusCode::OK)
}

/// The `X-Request-Id` of the probe's request `n` in the probe started at `run` (Unix
/// milliseconds): the server's records of it then say it was the probe's, the tool's own
/// ([`inferlint_core::model::lives::PROBE_REQUEST_ID`]), and two probes never share an id.
pub fn probe_request_id(run: u128, n: usize) -> String {
    format!(
        "{}{run}-{n}",
        inferlint_core::model::lives::PROBE_REQUEST_ID
    )
}

/// Runs the probe against a server.
pub async fn probe(client: &HttpClient, base: &BaseUrl, options: &ProbeOptions) -> ProbeReport {
    let model = match &options.model {
        Some(m) => m.clone(),
        None => match first_model(client, base, options.models_timeout).await {
            Ok(m) => m,
            Err(error) => return ProbeReport::NoModel { error },
        },
    };
    let body = json!({
        "model": model,
        "prompt": PROMPT,
        "max_tokens": options.max_tokens,
        "temperature": 0.0,
    })
    .to_string();
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let first = complete(
        client,
        base,
        &body,
        &probe_request_id(run, 0),
        options.request_timeout,
    )
    .await;
    if !first.ok() {
        let alive_after = alive(client, base, options.health_timeout).await;
        return ProbeReport::FirstFailed {
            model,
            first,
            alive_after,
        };
    }
    // All at once: each on its own connection, polled together.
    let ids: Vec<String> = (1..=options.concurrency)
        .map(|i| probe_request_id(run, i as usize))
        .collect();
    let burst = ids
        .iter()
        .map(|id| complete(client, base, &body, id, options.request_timeout));
    let burst = join_all(burst.collect()).await;
    let alive_after = alive(client, base, options.health_timeout).await;
    ProbeReport::Done {
        model,
        first,
        burst,
        alive_after,
    }
}

/// Awaits every future, in order, polling them together on this task.
async fn join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let handles: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = handles.iter().map(|_| None).collect();
    let mut handles: Vec<Option<_>> = handles.into_iter().map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (slot, output) in handles.iter_mut().zip(outputs.iter_mut()) {
            if let Some(fut) = slot {
                match fut.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        *output = Some(v);
                        *slot = None;
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}
