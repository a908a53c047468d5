//! The probe (T7): one completion, then a burst of them at once, then `/health`.
//! Some settings start cleanly and crash on the first real request, or on the first
//! few at once; the probe finds out before a benchmark does.

use std::time::{Duration, Instant};

use inferlint_core::{CheckResult, Status, Tripwire};
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

/// How one completion went.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// HTTP status, when there was an answer.
    pub status: Option<u16>,
    /// Seconds from sending to the whole answer (or the failure).
    pub seconds: f64,
    /// `usage.completion_tokens`, when the answer says.
    pub tokens: Option<u64>,
    /// Why it is not a good reply; `None` when it is.
    pub error: Option<String>,
}

impl Reply {
    /// Whether it is a good reply (HTTP 200 with tokens).
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    fn evidence(&self) -> Value {
        json!({
            "ok": self.ok(),
            "status": self.status,
            "seconds": (self.seconds * 1e3).round() / 1e3,
            "tokens": self.tokens,
            "error": self.error,
        })
    }
}

/// Everything the probe saw, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeReport {
    /// `/v1/models` gave no model.
    NoModel {
        /// Why: the answer, or the failure.
        error: String,
    },
    /// The first request was not a good reply; the burst was not sent.
    FirstFailed {
        /// The model asked for.
        model: String,
        /// The first request's reply.
        first: Reply,
        /// Whether `/health` still answered afterwards.
        alive_after: bool,
    },
    /// The first request and the burst were sent.
    Done {
        /// The model asked for.
        model: String,
        /// The first request's reply.
        first: Reply,
        /// The burst's replies, in sending order.
        burst: Vec<Reply>,
        /// Whether `/health` still answered afterwards.
        alive_after: bool,
    },
}

/// Judges a reply: HTTP 200 with tokens (`usage.completion_tokens` > 0, or text in
/// `choices[0].text`).
pub fn judge_reply(status: u16, body: &[u8], seconds: f64) -> Reply {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let tokens = parsed
        .as_ref()
        .and_then(|v| v.pointer("/usage/completion_tokens"))
        .and_then(Value::as_u64);
    let has_text = parsed
        .as_ref()
        .and_then(|v| v.pointer("/choices/0/text"))
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty());
    let error = if status != 200 {
        let detail = String::from_utf8_lossy(body);
        let detail: String = detail.trim().chars().take(200).collect();
        Some(if detail.is_empty() {
            format!("HTTP {status}")
        } else {
            format!("HTTP {status}: {detail}")
        })
    } else if parsed.is_none() {
        Some("the answer is not JSON".to_owned())
    } else if tokens.is_some_and(|n| n > 0) || has_text {
        None
    } else {
        Some("empty completion".to_owned())
    };
    Reply {
        status: Some(status),
        seconds,
        tokens,
        error,
    }
}

/// The T7 verdict of what the probe saw.
pub fn verdict(report: &ProbeReport) -> CheckResult {
    match report {
        ProbeReport::NoModel { error } => CheckResult::new(
            Tripwire::T7,
            Status::Fail,
            format!("cannot list models: {error}"),
        ),
        ProbeReport::FirstFailed {
            model,
            first,
            alive_after,
        } => CheckResult::new(
            Tripwire::T7,
            Status::Fail,
            format!(
                "first request failed: {}",
                first.error.as_deref().unwrap_or("no reply")
            ),
        )
        .with("model", model.as_str())
        .with("first", first.evidence())
        .with("alive_after", *alive_after),
        ProbeReport::Done {
            model,
            first,
            burst,
            alive_after,
        } => {
            let failed = burst.iter().filter(|r| !r.ok()).count();
            let c = burst.len();
            let max_seconds = burst.iter().map(|r| r.seconds).fold(0.0, f64::max);
            // The message is the established tool's, word for word (scripts match it);
            // what failed is added on the terminal line and listed in the evidence.
            let (status, message, suffix) = if failed > 0 {
                let first_error = burst
                    .iter()
                    .find_map(|r| r.error.as_deref())
                    .unwrap_or_default();
                let dead = if *alive_after {
                    ""
                } else {
                    ", and the server is dead after it"
                };
                (
                    Status::Fail,
                    format!("{failed}/{c} burst requests failed"),
                    Some(format!(" (e.g. {first_error}){dead}")),
                )
            } else if !alive_after {
                (
                    Status::Fail,
                    "server died after burst".to_owned(),
                    Some(" (/health does not answer 200)".to_owned()),
                )
            } else {
                (
                    Status::Pass,
                    format!("1 + {c} concurrent requests served, server alive"),
                    None,
                )
            };
            let errors: Vec<&str> = burst.iter().filter_map(|r| r.error.as_deref()).collect();
            let mut result = CheckResult::new(Tripwire::T7, status, message)
                .with("model", model.as_str())
                .with("first", first.evidence())
                .with(
                    "burst",
                    json!({
                        "concurrency": c,
                        "failed": failed,
                        "max_seconds": (max_seconds * 1e3).round() / 1e3,
                        "errors": errors,
                    }),
                )
                .with("alive_after", *alive_after);
            result.terminal_suffix = suffix;
            result
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
/// ([`inferlint_core::lives::PROBE_REQUEST_ID`]), and two probes never share an id.
pub fn probe_request_id(run: u128, n: usize) -> String {
    format!("{}{run}-{n}", inferlint_core::lives::PROBE_REQUEST_ID)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> Reply {
        judge_reply(
            200,
            br#"{"choices":[{"text":" It is sunny."}],"usage":{"completion_tokens":5}}"#,
            0.1,
        )
    }

    #[test]
    fn replies() {
        assert!(good().ok());
        assert_eq!(good().tokens, Some(5));
        let empty = judge_reply(
            200,
            br#"{"choices":[{"text":""}],"usage":{"completion_tokens":0}}"#,
            0.1,
        );
        assert_eq!(empty.error.as_deref(), Some("empty completion"));
        let text_only = judge_reply(200, br#"{"choices":[{"text":"hi"}]}"#, 0.1);
        assert!(text_only.ok());
        let bad = judge_reply(500, b"Internal Server Error", 0.1);
        assert_eq!(
            bad.error.as_deref(),
            Some("HTTP 500: Internal Server Error")
        );
    }

    #[test]
    fn verdicts() {
        let model = "m".to_owned();
        let pass = verdict(&ProbeReport::Done {
            model: model.clone(),
            first: good(),
            burst: vec![good(); 8],
            alive_after: true,
        });
        assert_eq!(pass.status, Status::Pass);
        assert_eq!(
            pass.message,
            "1 + 8 concurrent requests served, server alive"
        );
        let died = verdict(&ProbeReport::Done {
            model: model.clone(),
            first: good(),
            burst: vec![good(); 8],
            alive_after: false,
        });
        assert_eq!(
            (died.status, died.message.as_str()),
            (Status::Fail, "server died after burst")
        );
        let mut burst = vec![good(); 8];
        burst[2].error = Some("connection closed".into());
        burst[5].error = Some("connection closed".into());
        let some = verdict(&ProbeReport::Done {
            model: model.clone(),
            first: good(),
            burst,
            alive_after: false,
        });
        assert_eq!(some.status, Status::Fail);
        assert_eq!(some.message, "2/8 burst requests failed");
        assert!(some.terminal_line().ends_with(
            "2/8 burst requests failed (e.g. connection closed), and the server is dead after it"
        ));
        let first = verdict(&ProbeReport::FirstFailed {
            model,
            first: Reply {
                status: None,
                seconds: 0.0,
                tokens: None,
                error: Some("connection refused".into()),
            },
            alive_after: false,
        });
        assert_eq!(first.message, "first request failed: connection refused");
        assert_eq!(first.evidence["alive_after"], false);
        let none = verdict(&ProbeReport::NoModel {
            error: "connection refused".into(),
        });
        assert_eq!(none.message, "cannot list models: connection refused");
    }
}
