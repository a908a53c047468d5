//! One read of a server's Prometheus page, with its clocks.
//!
//! TensorRT-LLM answers `/metrics` with JSON (its iteration statistics) and serves
//! Prometheus text at `/prometheus/metrics`. A scrape asks `/metrics` first; when the
//! answer is JSON it asks `/prometheus/metrics` and remembers that path for this server,
//! until a scrape of it fails.

use std::time::Duration;

use std::collections::BTreeSet;
use std::sync::Arc;

use inferlint_core::engine::scrape_metrics;
use inferlint_core::model::metrics::{MetricSet, Sample};
use inferlint_core::model::{PageRequest, Snapshot};
use inferlint_core::Engine;
use inferlint_engines::prom::KeptNames;
use inferlint_engines::{detect, prom};

use crate::clock::{self, Stamp};
use crate::http::{Answer, BaseUrl, HttpClient, HttpError};

/// How long one scrape may take (the Python tool's timeout too).
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(10);

const METRICS_PATH: &str = "/metrics";
const TRT_METRICS_PATH: &str = "/prometheus/metrics";

/// A scrape that gave no metrics, named by its real cause. The text reads after
/// "scrape failed:".
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScrapeError {
    /// No answer.
    #[error("{url}: {error}")]
    Http {
        /// The address read.
        url: String,
        /// Why there was no answer.
        error: HttpError,
    },
    /// An answer other than 200 (or a redirect); `detail` is the start of its body.
    #[error("{url}: {status}{detail}")]
    Status {
        /// The address read.
        url: String,
        /// The status line (`HTTP 404 Not Found`).
        status: String,
        /// The start of the body, with its separator, or nothing.
        detail: String,
    },
    /// A redirect, which a scrape does not follow.
    #[error(
        "{url}: {status} to {location}; give the address the server itself serves its metrics at"
    )]
    Redirect {
        /// The address read.
        url: String,
        /// The status line.
        status: String,
        /// Where it points.
        location: String,
    },
    /// JSON at `/metrics` and at TensorRT-LLM's `/prometheus/metrics` alike.
    #[error("{url} answers JSON, and so does {fallback}")]
    OnlyJson {
        /// The address read first.
        url: String,
        /// The fallback address read next.
        fallback: String,
    },
    /// A page in which no sample line reads.
    #[error("{url}: not Prometheus text ({message})")]
    NotPrometheus {
        /// The address read.
        url: String,
        /// What the parser said.
        message: String,
    },
}

impl ScrapeError {
    /// Whether the failure looks like metrics that are switched off or asked for at the
    /// wrong address (nothing listens, a 404, JSON only), where the engine's hint on
    /// turning its metrics on helps. A body too large, an error status, a redirect or a
    /// page that is not Prometheus text is its own cause, and the hint would mislead.
    pub fn calls_for_the_hint(&self) -> bool {
        match self {
            ScrapeError::Http { error, .. } => {
                matches!(error, HttpError::Refused | HttpError::TimedOut(_))
            }
            ScrapeError::Status { status, .. } => status.starts_with("HTTP 404"),
            ScrapeError::OnlyJson { .. } => true,
            ScrapeError::Redirect { .. } | ScrapeError::NotPrometheus { .. } => false,
        }
    }
}

/// One scrape: the address read, the text as served, its metrics and its clocks.
#[derive(Debug, Clone)]
pub struct Scrape {
    /// The address the page was read from.
    pub url: String,
    /// The clocks around the request.
    pub stamp: Stamp,
    /// The monotonic clock just before the request that returned the text.
    pub requested_ns: i64,
    /// The page as a snapshot (its text, metrics and clocks).
    pub snapshot: Snapshot,
    /// The lines of the page that could not be read, when any were: `2 lines skipped
    /// (line 17: not UTF-8 text)`.
    pub skipped: Option<String>,
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
    /// What a recording's samples read of each page, once [`Scraper::ask_for_less`]
    /// chose it.
    narrow: Option<Narrow>,
    /// What [`Scraper::ask_for_less`] chose, once it has.
    chosen: Option<PageRequest>,
    /// A snapshot handed back to be read into again ([`Scraper::recycle`]).
    spare: Option<Snapshot>,
}

/// How a recording's scrapes after the first read the page.
#[derive(Debug, Clone)]
struct Narrow {
    /// The samples kept.
    keep: Arc<KeptNames>,
    /// What the first page said once for all (the cache's info metric), added to each.
    carried: Arc<Vec<Sample>>,
    /// The path and query asked when the server honours `name[]`; `None` reads the
    /// whole page.
    filtered: Option<String>,
}

impl Scraper {
    /// A scraper of the server at `base` through `client`.
    pub fn new(client: HttpClient, base: BaseUrl) -> Scraper {
        Scraper {
            client,
            base,
            timeout: SCRAPE_TIMEOUT,
            remembered: None,
            narrow: None,
            chosen: None,
            spare: None,
        }
    }

    /// The longest one scrape may take.
    pub fn with_timeout(mut self, timeout: Duration) -> Scraper {
        self.timeout = timeout;
        self
    }

    /// The server's address.
    pub fn base(&self) -> &BaseUrl {
        &self.base
    }

    /// The path its whole page is read at: `/metrics`, or TensorRT-LLM's
    /// `/prometheus/metrics` once `/metrics` answered JSON.
    pub fn path(&self) -> &'static str {
        self.remembered.unwrap_or(METRICS_PATH)
    }

    /// Reads the whole metrics page once. The clocks are read just before and just
    /// after the request that returned the text, so they bound the moment the server
    /// wrote it.
    pub async fn scrape(&mut self) -> Result<Scrape, ScrapeError> {
        self.scrape_page(None).await
    }

    /// Reads the page for a recording's sample: what [`Scraper::ask_for_less`] chose
    /// (only the samples a recording reads, asked of the server with `name[]` where it
    /// honours that, else the whole page read narrowly), or the whole page when it was
    /// not called. The snapshot holds the kept samples only.
    ///
    /// A snapshot handed back with [`Scraper::recycle`] is read into again when the page
    /// holds the same series as the one it was read from (a server's page at every
    /// scrape), changing only its values: a sample then costs no allocation of names and
    /// labels. Otherwise the page is read anew; either way the snapshot is the same.
    pub async fn scrape_sample(&mut self) -> Result<Scrape, ScrapeError> {
        let Some(narrow) = self.narrow.clone() else {
            return self.scrape().await;
        };
        let (answer, stamp, url) = match &narrow.filtered {
            Some(path_and_query) => self.fetch(path_and_query).await?,
            None => self.fetch_page().await?,
        };
        if let Some(scrape) = self.reread(&narrow, &answer, stamp, &url) {
            return Ok(scrape);
        }
        parse(url, answer, stamp, Some(&narrow.keep), &narrow.carried)
    }

    /// Makes `snapshot` (a whole page of this server's, as the first scrape reads it) hold
    /// only what [`Scraper::scrape_sample`] keeps of a page once the page is chosen: the
    /// same samples and checks read from it, as from a later sample's, and no text. Left
    /// as it is until a choice has been made. A fleet narrows its replicas' first pages
    /// before its schedule starts, so that no slot pays for setting a whole page's
    /// samples free.
    pub fn narrow_snapshot(&self, snapshot: &mut Snapshot) {
        // Only a choice made: one cut short (it took too long) is made again from the
        // whole first page, which must then still be there.
        let (Some(narrow), Some(_)) = (&self.narrow, &self.chosen) else {
            return;
        };
        let kept = std::mem::take(&mut snapshot.metrics)
            .into_samples()
            .into_iter()
            .filter(|s| narrow.keep.contains(&s.name));
        snapshot.metrics = with_carried(kept.collect(), &narrow.carried);
        // The whole page's text goes too: what is left is read for its samples, and a
        // whole page is too large to set free in a slot.
        snapshot.text = String::new();
    }

    /// Hands back a snapshot of this scraper's that is no longer needed (a recording's
    /// last sample once a newer one is kept), for [`Scraper::scrape_sample`] to read the
    /// next page into. Any snapshot is safe to give: one whose series are not the next
    /// page's, in its order, is set free and the page read anew.
    pub fn recycle(&mut self, snapshot: Snapshot) {
        self.spare = Some(snapshot);
    }

    /// The spare snapshot read again from `answer` ([`prom::reread_kept`]), when the
    /// page holds the series it holds, in the same order, every line reading cleanly.
    fn reread(
        &mut self,
        narrow: &Narrow,
        answer: &Answer,
        stamp: Stamp,
        url: &str,
    ) -> Option<Scrape> {
        let mut snapshot = self.spare.take()?;
        let page_samples = snapshot.metrics.len().checked_sub(narrow.carried.len())?;
        if !prom::reread_kept(
            &answer.body,
            &narrow.keep,
            &mut snapshot.metrics,
            page_samples,
        ) {
            return None;
        }
        // The first page, narrowed, was read from the whole page's address.
        if snapshot.url != url {
            snapshot.url = url.to_owned();
        }
        // The text as the full read keeps it: as served, or made UTF-8 where it is not.
        match std::str::from_utf8(&answer.body) {
            Ok(text) => {
                snapshot.text.clear();
                snapshot.text.push_str(text);
            }
            Err(_) => snapshot.text = String::from_utf8_lossy(&answer.body).into_owned(),
        }
        snapshot.t_wall = Some(stamp.t_wall);
        snapshot.t_mono_ns = Some(stamp.t_mono_ns);
        snapshot.latency_s = Some(stamp.latency_s);
        Some(Scrape {
            url: url.to_owned(),
            stamp,
            requested_ns: requested_ns(stamp),
            snapshot,
            skipped: None,
        })
    }

    /// The whole page's answer, at the path this server serves it at.
    async fn fetch_page(&mut self) -> Result<(Answer, Stamp, String), ScrapeError> {
        if let Some(path) = self.remembered {
            let result = self.fetch(path).await;
            if result.is_err() {
                // A restarted server may serve somewhere else now: start over next time.
                self.remembered = None;
            }
            return result;
        }
        let (answer, stamp, url) = self.fetch(METRICS_PATH).await?;
        if !looks_like_json(&answer.body) {
            return Ok((answer, stamp, url));
        }
        let (fallback, stamp, fallback_url) = self.fetch(TRT_METRICS_PATH).await?;
        if looks_like_json(&fallback.body) {
            return Err(ScrapeError::OnlyJson {
                url,
                fallback: fallback_url,
            });
        }
        self.remembered = Some(TRT_METRICS_PATH);
        Ok((fallback, stamp, fallback_url))
    }

    async fn scrape_page(&mut self, keep: Option<&KeptNames>) -> Result<Scrape, ScrapeError> {
        let (answer, stamp, url) = self.fetch_page().await?;
        parse(url, answer, stamp, keep, &[])
    }

    /// Chooses how a recording's samples read the page after `first` (a whole page of
    /// `engine`'s server), and says what was chosen, for the series header.
    ///
    /// A sample needs only `EngineDescriptor::recorded_sample_names`, with what the
    /// first page stated once for all (`EngineDescriptor::static_sample_names`, carried
    /// into each sample); the rest of a page, histogram buckets mostly, costs the server
    /// its rendering and the recorder its reading. A server that renders its page with
    /// Python's prometheus_client honours `name[]=NAME` in the query and serves those
    /// samples alone. vLLM serves `/metrics` with a handler of its own that ignores the
    /// query, and mounts prometheus_client's application beside it at `/metrics/` (0.32:
    /// about 3 KB filtered against 50 KB whole). So the filter is
    /// asked at the path, then at the path with a slash, and taken only where the
    /// answer is proven narrowed: every sample name in it is one asked, and every asked
    /// name the whole page served is in it. An answer with names not asked ignored the
    /// filter; one that lacks a name the whole page had dropped it (prometheus_client
    /// in multiprocess mode finds no collector by name and serves nothing): either way,
    /// and on any failure, the whole page is read, narrowly, and the header says why.
    pub async fn ask_for_less(&mut self, engine: Engine, first: &Snapshot) -> PageRequest {
        let chosen = self.choose_pages(engine, first).await;
        self.chosen = Some(chosen.clone());
        chosen
    }

    /// What [`Scraper::ask_for_less`] chose, once it has returned.
    pub fn page_choice(&self) -> Option<&PageRequest> {
        self.chosen.as_ref()
    }

    async fn choose_pages(&mut self, engine: Engine, first: &Snapshot) -> PageRequest {
        let descriptor = engine.descriptor();
        let keep = Arc::new(KeptNames::new(descriptor.recorded_sample_names()));
        let once = KeptNames::new(descriptor.static_sample_names());
        let carried: Arc<Vec<Sample>> = Arc::new(
            first
                .metrics
                .samples()
                .iter()
                .filter(|s| once.contains(&s.name))
                .cloned()
                .collect(),
        );
        let path = self.path();
        let whole = |why: String| PageRequest {
            path: path.to_owned(),
            filtered_to: None,
            whole_because: Some(why),
        };
        let served: BTreeSet<String> = match prom::read_kept(first.text.as_bytes(), &keep) {
            Ok(read) => read.samples.into_iter().map(|s| s.name).collect(),
            Err(e) => BTreeSet::from([e.to_string()]),
        };
        self.narrow = Some(Narrow {
            keep: Arc::clone(&keep),
            carried: Arc::clone(&carried),
            filtered: None,
        });
        // Only what this server has: a kept name it serves, or one of a family its page
        // declares (`# TYPE F ...`, written before a labelled family has its first
        // series). Every name asked is in the query at each scrape, and in the server's
        // access log line for it.
        let declared = declared_samples(&first.text);
        let asked = KeptNames::new(
            keep.names()
                .iter()
                .filter(|name| served.contains(*name) || declared.contains(name.as_str()))
                .cloned(),
        );
        let query = asked
            .names()
            .iter()
            .map(|name| format!("name%5B%5D={}", query_encoded(name)))
            .collect::<Vec<_>>()
            .join("&");
        let mut why = String::new();
        for candidate in [path.to_owned(), format!("{path}/")] {
            let path_and_query = format!("{candidate}?{query}");
            let verdict = match self.fetch(&path_and_query).await {
                Err(e) => Err(format!("{candidate}?name[]=...: {}", short_error(&e))),
                Ok((answer, _, _)) => narrowed(&answer.body, &asked, &served)
                    .map_err(|e| format!("{candidate}?name[]=... {e}")),
            };
            match verdict {
                Ok(()) => {
                    let filtered_to = asked.names().len() as u64;
                    self.narrow = Some(Narrow {
                        keep: Arc::new(asked),
                        carried,
                        filtered: Some(path_and_query),
                    });
                    return PageRequest {
                        path: candidate,
                        filtered_to: Some(filtered_to),
                        whole_because: None,
                    };
                }
                Err(e) => {
                    if !why.is_empty() {
                        why.push_str("; ");
                    }
                    why.push_str(&e);
                }
            }
        }
        whole(why)
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
        if answer.status.is_redirection() {
            return Err(ScrapeError::Redirect {
                url,
                status: answer.status_text(),
                location: answer.location.clone().unwrap_or_else(|| "nowhere".into()),
            });
        }
        if answer.status != hyper::StatusCode::OK {
            let excerpt: String = String::from_utf8_lossy(&answer.body)
                .trim()
                .chars()
                .take(200)
                .collect();
            return Err(ScrapeError::Status {
                url,
                status: answer.status_text(),
                detail: if excerpt.is_empty() {
                    String::new()
                } else {
                    format!(" ({excerpt})")
                },
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

/// Reads a page line by line: a line that cannot be read (bad syntax, a byte that is not
/// UTF-8) is skipped and counted, never the whole scrape; only a page past the sample
/// cap, or one of which not a single line reads, is refused.
fn parse(
    url: String,
    answer: Answer,
    stamp: Stamp,
    keep: Option<&KeptNames>,
    carried: &[Sample],
) -> Result<Scrape, ScrapeError> {
    let not_prometheus = |message: String| ScrapeError::NotPrometheus {
        url: url.clone(),
        message,
    };
    let exposition = match keep {
        Some(keep) => prom::read_kept(&answer.body, keep),
        None => prom::read(&answer.body),
    }
    .map_err(|e| not_prometheus(e.to_string()))?;
    if exposition.read == 0 {
        if let Some(first) = exposition.problems.first() {
            return Err(not_prometheus(first.to_string()));
        }
    }
    let skipped = exposition.skipped_note();
    let text = match String::from_utf8(answer.body) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok(Scrape {
        requested_ns: requested_ns(stamp),
        snapshot: Snapshot {
            url: url.clone(),
            t_wall: Some(stamp.t_wall),
            t_mono_ns: Some(stamp.t_mono_ns),
            latency_s: Some(stamp.latency_s),
            text,
            metrics: with_carried(exposition.samples, carried),
        },
        url,
        stamp,
        skipped,
    })
}

/// A page's samples as a set, with what the first page stated once for all after them
/// (the order [`prom::reread_kept`] reads a later page into).
fn with_carried(mut samples: Vec<Sample>, carried: &[Sample]) -> MetricSet {
    samples.extend(carried.iter().cloned());
    scrape_metrics(samples)
}

/// The monotonic clock when the request went out, from its stamp (the midpoint less half
/// the latency).
fn requested_ns(stamp: Stamp) -> i64 {
    stamp.t_mono_ns - (stamp.latency_s * 5e8).round() as i64
}

/// Whether a page asked with `name[]` is narrowed as asked: every sample name in it is
/// kept, and every kept name the whole page served is in it. The error says what shows
/// otherwise, after the address.
fn narrowed(body: &[u8], keep: &KeptNames, served: &BTreeSet<String>) -> Result<(), String> {
    let read = prom::read(body).map_err(|e| format!("is not Prometheus text ({e})"))?;
    let names: BTreeSet<&str> = read.samples.iter().map(|s| s.name.as_str()).collect();
    let others: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !keep.contains(n))
        .collect();
    if let Some(first) = others.first() {
        return Err(format!(
            "ignores the filter (its answer holds {} sample name(s) not asked, e.g. {first})",
            others.len()
        ));
    }
    let missing: Vec<&String> = served
        .iter()
        .filter(|n| !names.contains(n.as_str()))
        .collect();
    if let Some(first) = missing.first() {
        return Err(format!(
            "drops what it was asked for ({} of the {} asked names the whole page serves are missing, e.g. {first})",
            missing.len(),
            served.len()
        ));
    }
    if names.is_empty() {
        return Err("answers no sample at all".into());
    }
    Ok(())
}

/// The sample names the families a page declares (`# TYPE NAME KIND`) serve: a gauge,
/// an untyped or an info family its name; a counter `NAME_total` (the text format
/// declares it by that name already) and `NAME_created`; a histogram or a summary
/// `NAME_sum`, `NAME_count` and `NAME_created`.
fn declared_samples(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for rest in text
        .lines()
        .filter_map(|line| line.trim().strip_prefix("# TYPE "))
    {
        let mut words = rest.split_whitespace();
        let (Some(name), kind) = (words.next(), words.next().unwrap_or("untyped")) else {
            continue;
        };
        let suffixes: &[&str] = match kind {
            "counter" => &["_total", "_created"],
            "histogram" | "summary" | "gaugehistogram" => &["_sum", "_count", "_created"],
            _ => &[""],
        };
        let base = match kind {
            "counter" => name.strip_suffix("_total").unwrap_or(name),
            _ => name,
        };
        names.extend(suffixes.iter().map(|suffix| format!("{base}{suffix}")));
    }
    names
}

/// A failure in a few words, for the header's reason.
fn short_error(error: &ScrapeError) -> String {
    match error {
        ScrapeError::Http { error, .. } => error.to_string(),
        ScrapeError::Status { status, .. } | ScrapeError::Redirect { status, .. } => status.clone(),
        other => other.to_string(),
    }
}

/// A sample name as a query value: the format's name bytes are letters, digits, `_` and
/// `:`, of which only `:` is not left as it is (percent-encoded, as a form encodes it).
fn query_encoded(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// No engine's metrics at an address: the first scrape failed, or what it read holds no
/// vLLM, SGLang or TensorRT-LLM metric.
#[derive(Debug, Clone, PartialEq)]
pub struct NoMetrics {
    /// The server's address.
    pub base: BaseUrl,
    /// What went wrong, in a few words.
    pub error: String,
    /// Whether the engines' hints on turning their metrics on fit the failure (see
    /// [`ScrapeError::calls_for_the_hint`]).
    pub hint: bool,
}

impl NoMetrics {
    /// `no vLLM, SGLang or TensorRT-LLM metrics at URL (ERR): HINT`, with the named
    /// engine's hint or all three; `cannot read the metrics at URL: ERR` when the failure
    /// has a cause of its own (a body too large, an error status, a redirect).
    pub fn message(&self, named: Option<Engine>) -> String {
        if !self.hint {
            return format!("cannot read the metrics at {}: {}", self.base, self.error);
        }
        let hint = match named {
            Some(engine) => engine.descriptor().metrics_hint.to_owned(),
            None => Engine::ALL
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

impl std::fmt::Display for NoMetrics {
    /// [`NoMetrics::message`] with no engine named: every engine's hint.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message(None))
    }
}

impl std::error::Error for NoMetrics {}

/// The first scrape of a recording, which must find some engine's metrics.
pub async fn first_scrape(scraper: &mut Scraper) -> Result<(Scrape, Engine), NoMetrics> {
    let base = scraper.base().clone();
    let no_metrics = |error: String, hint: bool| NoMetrics { base, error, hint };
    let scrape = match scraper.scrape().await {
        Ok(s) => s,
        Err(e) => return Err(no_metrics(e.to_string(), e.calls_for_the_hint())),
    };
    match scrape.engine() {
        Some(engine) => Ok((scrape, engine)),
        None => {
            let skipped = scrape
                .skipped
                .as_deref()
                .map_or(String::new(), |s| format!("; {s}"));
            Err(no_metrics(
                format!(
                    "{} serves {} samples, none named vllm:, sglang: or trtllm_{skipped}",
                    scrape.url,
                    scrape.snapshot.metrics.len()
                ),
                true,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A first page is narrowed only once its choice is made: a choice cut short (it
    /// took too long) is made again from the whole page's text and samples.
    #[tokio::test]
    async fn a_first_page_is_narrowed_only_once_the_choice_is_made() {
        let mut scraper = Scraper::new(
            HttpClient::new(),
            BaseUrl::parse("127.0.0.1:1").expect("reads"),
        );
        scraper.narrow = Some(Narrow {
            keep: Arc::new(KeptNames::new(["kept"])),
            carried: Arc::new(Vec::new()),
            filtered: None,
        });
        let page = "kept 1\nother 2\n";
        let read = prom::read(page.as_bytes()).expect("reads");
        let mut snapshot = Snapshot {
            url: "http://127.0.0.1:1/metrics".into(),
            t_wall: None,
            t_mono_ns: None,
            latency_s: None,
            text: page.into(),
            metrics: scrape_metrics(read.samples),
        };
        let whole = snapshot.clone();
        scraper.narrow_snapshot(&mut snapshot);
        assert_eq!(snapshot, whole);
        scraper.chosen = Some(PageRequest {
            path: "/metrics".into(),
            filtered_to: None,
            whole_because: Some("whole pages were asked for".into()),
        });
        scraper.narrow_snapshot(&mut snapshot);
        assert_eq!(snapshot.metrics.len(), 1);
        assert_eq!(snapshot.metrics.total("kept"), Some(1.0));
        assert!(snapshot.text.is_empty());
    }

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
            hint: true,
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
