//! One read of a server's Prometheus page, with its clocks.
//!
//! TensorRT-LLM answers `/metrics` with JSON (its iteration statistics) and serves
//! Prometheus text at `/prometheus/metrics`. A scrape asks `/metrics` first; when the
//! answer is JSON it asks `/prometheus/metrics` and remembers that path for this server,
//! until a scrape of it fails.

use std::time::Duration;

use inferlint_core::model::Snapshot;
use inferlint_core::Engine;
use inferlint_engines::{detect, prom};

use crate::clock::{self, Stamp};
use crate::http::{Answer, BaseUrl, HttpClient, HttpError};

/// How long one scrape may take (the Python tool's timeout too).
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(10);

const METRICS_PATH: &str = "/metrics";
const TRT_METRICS_PATH: &str = "/prometheus/metrics";

/// A scrape that gave no metrics. The text reads after "scrape failed:".
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScrapeError {
    #[error("{url}: {error}")]
    Http { url: String, error: HttpError },
    #[error("{url}: {status}")]
    Status { url: String, status: String },
    #[error("{url} answers JSON, and so does {fallback}")]
    OnlyJson { url: String, fallback: String },
    #[error("{url}: not Prometheus text ({message})")]
    NotPrometheus { url: String, message: String },
}

/// One scrape: the address read, the text as served, its metrics and its clocks.
#[derive(Debug, Clone)]
pub struct Scrape {
    pub url: String,
    pub stamp: Stamp,
    /// The monotonic clock just before the request that returned the text.
    pub requested_ns: i64,
    pub snapshot: Snapshot,
}

impl Scrape {
    /// The engine whose metric names the page holds, if any.
    pub fn engine(&self) -> Option<Engine> {
        detect::engine_from_metric_names(self.snapshot.metrics.names())
    }
}

/// Scrapes one server, remembering where its Prometheus page is.
#[derive(Debug, Clone)]
pub struct Scraper {
    client: HttpClient,
    base: BaseUrl,
    timeout: Duration,
    /// `/prometheus/metrics` once `/metrics` answered JSON.
    remembered: Option<&'static str>,
}

impl Scraper {
    pub fn new(client: HttpClient, base: BaseUrl) -> Scraper {
        Scraper {
            client,
            base,
            timeout: SCRAPE_TIMEOUT,
            remembered: None,
        }
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Scraper {
        self.timeout = timeout;
        self
    }

    pub fn base(&self) -> &BaseUrl {
        &self.base
    }

    /// Reads the metrics page once. The clocks are read just before and just after the
    /// request that returned the text, so they bound the moment the server wrote it.
    pub async fn scrape(&mut self) -> Result<Scrape, ScrapeError> {
        if let Some(path) = self.remembered {
            let result = self.fetch(path).await;
            if result.is_err() {
                // A restarted server may serve somewhere else now: start over next time.
                self.remembered = None;
            }
            return result.and_then(|(answer, stamp, url)| parse(url, answer, stamp));
        }
        let (answer, stamp, url) = self.fetch(METRICS_PATH).await?;
        if !looks_like_json(&answer.body) {
            return parse(url, answer, stamp);
        }
        let (fallback, stamp, fallback_url) = self.fetch(TRT_METRICS_PATH).await?;
        if looks_like_json(&fallback.body) {
            return Err(ScrapeError::OnlyJson {
                url,
                fallback: fallback_url,
            });
        }
        self.remembered = Some(TRT_METRICS_PATH);
        parse(fallback_url, fallback, stamp)
    }

    /// GETs one path; a status other than 200 is an error.
    async fn fetch(&self, path: &str) -> Result<(Answer, Stamp, String), ScrapeError> {
        let url = self.base.join(path);
        let before = clock::now();
        let result = self.client.get(&url, self.timeout).await;
        let after = clock::now();
        let answer = result.map_err(|error| ScrapeError::Http {
            url: url.clone(),
            error,
        })?;
        if answer.status != hyper::StatusCode::OK {
            return Err(ScrapeError::Status {
                url,
                status: answer.status_text(),
            });
        }
        Ok((answer, clock::midpoint(before, after), url))
    }
}

/// Whether a body starts, after whitespace, with `{` or `[`.
fn looks_like_json(body: &[u8]) -> bool {
    matches!(
        body.iter().find(|b| !b.is_ascii_whitespace()),
        Some(b'{' | b'[')
    )
}

fn parse(url: String, answer: Answer, stamp: Stamp) -> Result<Scrape, ScrapeError> {
    let text = String::from_utf8(answer.body.to_vec()).map_err(|_| ScrapeError::NotPrometheus {
        url: url.clone(),
        message: "not UTF-8".into(),
    })?;
    let metrics = prom::parse(&text).map_err(|e| ScrapeError::NotPrometheus {
        url: url.clone(),
        message: e.to_string(),
    })?;
    let requested_ns = stamp.t_mono_ns - (stamp.latency_s * 5e8).round() as i64;
    Ok(Scrape {
        requested_ns,
        snapshot: Snapshot {
            url: url.clone(),
            t_wall: Some(stamp.t_wall),
            t_mono_ns: Some(stamp.t_mono_ns),
            latency_s: Some(stamp.latency_s),
            text,
            metrics,
        },
        url,
        stamp,
    })
}

/// No engine's metrics at an address: the first scrape failed, or what it read holds no
/// vLLM, SGLang or TensorRT-LLM metric.
#[derive(Debug, Clone, PartialEq)]
pub struct NoMetrics {
    pub base: BaseUrl,
    /// What went wrong, in a few words.
    pub error: String,
}

impl NoMetrics {
    /// `no vLLM, SGLang or TensorRT-LLM metrics at URL (ERR): HINT`, with the named
    /// engine's hint or all three.
    pub fn message(&self, named: Option<Engine>) -> String {
        let hint = match named {
            Some(engine) => engine.descriptor().metrics_hint.to_owned(),
            None => [Engine::Vllm, Engine::Sglang, Engine::Trtllm]
                .iter()
                .map(|e| format!("for {}, {}", e.name(), e.descriptor().metrics_hint))
                .collect::<Vec<_>>()
                .join("; "),
        };
        format!(
            "no vLLM, SGLang or TensorRT-LLM metrics at {} ({}): {hint}",
            self.base, self.error
        )
    }
}

/// The first scrape of a recording, which must find some engine's metrics.
pub async fn first_scrape(scraper: &mut Scraper) -> Result<(Scrape, Engine), NoMetrics> {
    let base = scraper.base().clone();
    let no_metrics = |error: String| NoMetrics { base, error };
    let scrape = match scraper.scrape().await {
        Ok(s) => s,
        Err(e) => return Err(no_metrics(e.to_string())),
    };
    match scrape.engine() {
        Some(engine) => Ok((scrape, engine)),
        None => Err(no_metrics(format!(
            "{} serves {} samples, none named vllm:, sglang: or trtllm_",
            scrape.url,
            scrape.snapshot.metrics.len()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_bodies() {
        assert!(looks_like_json(b"  \n{\"a\": 1}"));
        assert!(looks_like_json(b"[]"));
        assert!(!looks_like_json(b"# HELP x\nx 1\n"));
        assert!(!looks_like_json(b""));
    }

    #[test]
    fn the_hint_names_the_engine_or_all_three() {
        let n = NoMetrics {
            base: BaseUrl::parse("127.0.0.1:1").expect("reads"),
            error: "connection refused".into(),
        };
        assert_eq!(
            n.message(Some(Engine::Sglang)),
            "no vLLM, SGLang or TensorRT-LLM metrics at http://127.0.0.1:1 (connection refused): start SGLang with --enable-metrics"
        );
        let all = n.message(None);
        assert!(all.contains(": for vLLM, vLLM serves them"));
        assert!(
            all.contains("; for SGLang, start SGLang with --enable-metrics; for TensorRT-LLM, put")
        );
    }
}
