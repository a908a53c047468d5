//! A run read from a Prometheus server: the questions asked over its HTTP API, and a
//! fleet folder written from the answers ([`inferlint_engines::fleet`]), one run folder
//! per replica with its before and after snapshots and its series.
//!
//! What each answer means is decided in [`inferlint_engines::prometheus`]; here are the
//! requests, their timeouts and the files. A Prometheus that cannot be reached, answers
//! too slowly or refuses a query is one error naming the address and what went wrong;
//! nothing is written over an existing file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use inferlint_core::model::{SeriesHeader, SeriesSample};
use inferlint_core::Engine;
use inferlint_engines::fleet::{self, Manifest, Replica};
use inferlint_engines::output::{self, OutputError, Rule};
use inferlint_engines::prometheus::{self as api, ApiError, ApiSeries, RangeReader};
use inferlint_engines::{detect, files};
use serde_json::Value;

use crate::http::{Answer, BaseUrl, HttpClient, HttpError};

/// How long one query may take before the server counts as too slow.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The stretch of raw samples the scrape interval is read from.
const INTERVAL_PROBE_S: f64 = 600.0;

/// Why a run could not be read from Prometheus. Each message is one line naming the
/// server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PromError {
    /// No answer: refused, timed out, cut off.
    #[error("cannot read from the Prometheus server at {url}: {error}")]
    Unreachable {
        /// The server.
        url: String,
        /// Why no answer came.
        error: HttpError,
    },
    /// An answer that is no API answer (a proxy's page, a status without a body).
    #[error("the Prometheus server at {url} answered {status}: {detail}")]
    Status {
        /// The server.
        url: String,
        /// `HTTP 502 Bad Gateway`.
        status: String,
        /// The first line of the body.
        detail: String,
    },
    /// The API refused the query, or answered in a shape not understood.
    #[error("{url}: {error}")]
    Api {
        /// The server.
        url: String,
        /// What the API said, or why its answer could not be read.
        error: ApiError,
    },
    /// `--selector` is not label matchers.
    #[error("{0}")]
    Selector(#[from] inferlint_engines::prometheus::SelectorError),
    /// Nothing to read.
    #[error("{0}")]
    Nothing(String),
    /// The window at its step would take more range queries than one read sends.
    #[error("{0}")]
    TooManyQueries(String),
    /// Replicas from different engines, or from another engine than the one named.
    #[error("{0}")]
    Engines(String),
    /// A file of the fleet folder may not be written (it exists, or is an input).
    #[error("{0}")]
    Output(#[from] OutputError),
    /// A file of the fleet folder could not be written.
    #[error("cannot write {path}: {error}")]
    Write {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
}

/// What to read.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchOptions {
    /// The window's start, Unix seconds.
    pub start: f64,
    /// The window's end, Unix seconds.
    pub end: f64,
    /// Label matchers in braces (`{job="vllm"}`), or none.
    pub selector: Option<String>,
    /// The engine named, if any.
    pub engine: Option<Engine>,
    /// The step of the range queries; `None` reads the scrape interval.
    pub step: Option<Duration>,
    /// How long one query may take.
    pub timeout: Duration,
}

/// What was read.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    /// The fleet folder's manifest, as written.
    pub manifest: Manifest,
    /// The step the range queries used, in milliseconds.
    pub step_ms: i64,
    /// Range queries asked.
    pub range_queries: usize,
    /// The most points one range query asked of one series (never above [`api::MAX_POINTS`],
    /// fewer for a fleet of many series: [`api::points_per_query`]).
    pub max_points_per_query: u64,
    /// The largest range answer, in bytes.
    pub largest_answer_bytes: u64,
    /// Samples written, over every replica.
    pub samples: u64,
    /// What a reader should know: replicas that restarted, steps with no reading.
    pub notes: Vec<String>,
}

/// A Prometheus server's query API.
#[derive(Debug, Clone)]
pub struct PromSource {
    client: HttpClient,
    base: BaseUrl,
    timeout: Duration,
}

impl PromSource {
    /// The API of the server at `base`, each query given `timeout`. Must be called
    /// inside a tokio runtime.
    pub fn new(base: BaseUrl, timeout: Duration) -> PromSource {
        PromSource {
            client: HttpClient::new(),
            base,
            timeout,
        }
    }

    /// The server's address.
    pub fn base(&self) -> &BaseUrl {
        &self.base
    }

    async fn get(&self, path: &str, params: &[(&str, String)]) -> Result<Answer, PromError> {
        let query: Vec<String> = params
            .iter()
            .map(|(k, v)| format!("{k}={}", encode(v)))
            .collect();
        let url = format!("{}?{}", self.base.join(path), query.join("&"));
        self.client
            .get(&url, self.timeout)
            .await
            .map_err(|error| PromError::Unreachable {
                url: self.base.to_string(),
                error,
            })
    }

    /// Reads an answer with `read`, or says why it cannot be read ([`judge`]).
    fn judge<T>(
        &self,
        answer: &Answer,
        read: impl FnOnce(&[u8]) -> Result<T, ApiError>,
    ) -> Result<T, PromError> {
        judge(&self.base, answer, read)
    }

    /// An instant query at `time`.
    pub async fn query(&self, query: &str, time: f64) -> Result<Vec<ApiSeries>, PromError> {
        let answer = self
            .get(
                "/api/v1/query",
                &[("query", query.to_owned()), ("time", seconds_text(time))],
            )
            .await?;
        self.judge(&answer, api::parse_answer)
    }

    /// A range query; the caller keeps it within [`api::MAX_POINTS`].
    pub async fn query_range(
        &self,
        query: &str,
        start_ms: i64,
        end_ms: i64,
        step_ms: i64,
    ) -> Result<Vec<ApiSeries>, PromError> {
        let answer = self.range_answer(query, start_ms, end_ms, step_ms).await?;
        self.judge(&answer, api::parse_answer)
    }

    /// A range query's answer as it came, to be read by the caller
    /// ([`PromSource::judge`]).
    async fn range_answer(
        &self,
        query: &str,
        start_ms: i64,
        end_ms: i64,
        step_ms: i64,
    ) -> Result<Answer, PromError> {
        self.get(
            "/api/v1/query_range",
            &[
                ("query", query.to_owned()),
                ("start", ms_text(start_ms)),
                ("end", ms_text(end_ms)),
                ("step", ms_text(step_ms)),
            ],
        )
        .await
    }
}

/// Reads an answer of the server at `base` with `read`, or says why it cannot be read:
/// the API's refusal (Prometheus answers a refused query with 400 or 422 and the API's
/// JSON error, which says more than the status), an answer not understood, or a status
/// without the API's answer (a proxy's page).
fn judge<T>(
    base: &BaseUrl,
    answer: &Answer,
    read: impl FnOnce(&[u8]) -> Result<T, ApiError>,
) -> Result<T, PromError> {
    let shown = base.to_string();
    match read(&answer.body) {
        Ok(value) if answer.status.is_success() => Ok(value),
        Err(error @ ApiError::Refused { .. }) => Err(PromError::Api { url: shown, error }),
        Err(error) if answer.status.is_success() => Err(PromError::Api { url: shown, error }),
        _ => Err(PromError::Status {
            url: shown,
            status: answer.status_text(),
            detail: first_line(&answer.body),
        }),
    }
}

fn first_line(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(200)]);
    let line = text.lines().next().unwrap_or("").trim();
    if line.is_empty() {
        "no body".to_owned()
    } else {
        line.to_owned()
    }
}

fn seconds_text(t: f64) -> String {
    format!("{:.3}", t)
}

fn ms_text(ms: i64) -> String {
    format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
}

/// Percent-encodes a query parameter (every byte but the unreserved ones).
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The engine of the fleet, from the names of each replica's series: every replica
/// must run the same engine, and the one named if any.
fn engine_of_fleet(
    answers: &[&[ApiSeries]],
    replicas: &[String],
    named: Option<Engine>,
) -> Result<Engine, PromError> {
    let mut found = Vec::with_capacity(replicas.len());
    for replica in replicas {
        let names = answers
            .iter()
            .flat_map(|a| a.iter())
            .filter(|s| s.replica() == Some(replica.as_str()))
            .map(|s| s.name.as_str());
        let Some(engine) = detect::engine_from_metric_names(names) else {
            continue;
        };
        if let Some(named) = named.filter(|n| *n != engine) {
            return Err(PromError::Engines(format!(
                "--engine {}, but replica {replica} serves {}'s metrics; check --selector",
                named.key(),
                engine.name()
            )));
        }
        found.push((replica.as_str(), engine));
    }
    let one = fleet::one_engine(found)
        .map_err(|e| PromError::Engines(format!("{e} (narrow --selector)")))?;
    Ok(one.or(named).unwrap_or(Engine::DEFAULT))
}

/// How many bytes of lines a replica's writer holds before it writes them out: small,
/// as a fleet of a thousand replicas holds a thousand buffers.
const WRITE_BUFFER: usize = 16 * 1024;

/// One replica's series file being written, with what is needed to mark gaps and
/// restarts between two pieces of the window. Lines are gathered in a buffer and written
/// out when it fills and at the end of each piece.
struct ReplicaWriter {
    name: String,
    file: output::StreamFile,
    path: PathBuf,
    buffer: Vec<u8>,
    last: Option<SeriesSample>,
    samples: u64,
    missing_steps: u64,
    restarts: Vec<String>,
}

impl ReplicaWriter {
    fn put(&mut self, line: &str) -> Result<(), PromError> {
        self.buffer.extend_from_slice(line.as_bytes());
        self.line_written()
    }

    /// Ends the line in the buffer; writes the buffer out once it is full.
    fn line_written(&mut self) -> Result<(), PromError> {
        self.buffer.push(b'\n');
        if self.buffer.len() >= WRITE_BUFFER {
            self.write_out()?;
        }
        Ok(())
    }

    fn write_out(&mut self) -> Result<(), PromError> {
        self.file
            .write_all(&self.buffer)
            .map_err(|error| PromError::Write {
                path: self.path.clone(),
                error,
            })?;
        self.buffer.clear();
        Ok(())
    }

    fn push(
        &mut self,
        engine: Engine,
        sample: &SeriesSample,
        step_s: f64,
    ) -> Result<(), PromError> {
        if let Some(last) = self.last {
            let steps = ((sample.t_wall - last.t_wall) / step_s).round();
            if steps > 1.0 {
                self.missing_steps += steps as u64 - 1;
                let reason = format!(
                    "no reading in Prometheus for {} step(s) of {} s",
                    steps as u64 - 1,
                    inferlint_core::story::fmt::g(step_s)
                );
                self.put(&marker("gap", &reason, sample.t_wall))?;
            }
            let counters = [
                ("preemptions", last.preemptions, sample.preemptions),
                (
                    "generation_tokens",
                    last.generation_tokens,
                    sample.generation_tokens,
                ),
                ("prompt_tokens", last.prompt_tokens, sample.prompt_tokens),
            ];
            if let Some((name, Some(old), Some(new))) = counters
                .into_iter()
                .find(|(_, old, new)| matches!((old, new), (Some(o), Some(n)) if n < o))
            {
                let what = format!(
                    "{name} went down ({} -> {}); counters only reset on restart",
                    inferlint_core::story::fmt::g(old),
                    inferlint_core::story::fmt::g(new)
                );
                self.put(&marker("restart", &what, sample.t_wall))?;
                self.restarts.push(format!("{what} at {}", sample.t_wall));
            }
        }
        files::write_series_sample_json(&mut self.buffer, engine, sample);
        self.line_written()?;
        self.samples += 1;
        self.last = Some(*sample);
        Ok(())
    }
}

/// The window's series being read, a piece at a time: the reader of the answers and
/// each replica's writer, in the reader's order. It moves to a blocking thread to read
/// a piece while the next one is fetched, and comes back.
struct Assembly {
    reader: RangeReader,
    writers: Vec<ReplicaWriter>,
    engine: Engine,
    step_s: f64,
    outside: u64,
    unplaced: u64,
}

impl Assembly {
    /// Reads one piece's answer into every replica's file: one pass over the answer,
    /// then each replica's samples in time order.
    fn take(
        &mut self,
        base: &BaseUrl,
        answer: &Answer,
        (from, to): (i64, i64),
    ) -> Result<(), PromError> {
        let read = judge(base, answer, |body| self.reader.read(body, from, to))?;
        self.outside += read.outside;
        self.unplaced += read.unplaced;
        let (engine, step_s) = (self.engine, self.step_s);
        for (index, writer) in self.writers.iter_mut().enumerate() {
            self.reader
                .samples(index, |sample| writer.push(engine, sample, step_s))?;
            writer.write_out()?;
        }
        Ok(())
    }
}

/// A gap or restart record as `watch` writes them; Prometheus gives no monotonic time.
fn marker(key: &str, text: &str, t_wall: f64) -> String {
    format!(
        "{{\"{key}\": {}, \"t_wall\": {}, \"t_mono_ns\": null}}",
        Value::from(text),
        Value::from((t_wall * 1e6).round() / 1e6)
    )
}

/// Reads the window from Prometheus into the fleet folder `dir` (which must not hold a
/// fleet already): `fleet.json`, and per replica `before.snapshot.json`,
/// `after.snapshot.json` and `run.series.jsonl`. `on_piece` is told after each range
/// query how many of how many are done.
pub async fn fetch_into(
    source: &PromSource,
    options: &FetchOptions,
    dir: &Path,
    mut on_piece: impl FnMut(usize, usize),
) -> Result<Fetched, PromError> {
    let shown = source.base().to_string();
    let matchers = api::selector_matchers(options.selector.as_deref())?;
    let selector_words = options
        .selector
        .as_deref()
        .filter(|s| !s.trim().is_empty())
        .map_or_else(|| "any labels".to_owned(), str::to_owned);
    let engines: Vec<Engine> = match options.engine {
        Some(e) => vec![e],
        None => Engine::ALL.to_vec(),
    };
    let everything = api::prefixes_query(&engines, &matchers);
    let after = source.query(&everything, options.end).await?;
    let before = source.query(&everything, options.start).await?;
    let (replicas, _) = api::replicas_of([after.as_slice(), before.as_slice()]);
    if replicas.is_empty() {
        return Err(PromError::Nothing(format!(
            "no series of {} matching {selector_words} with an `instance` or `pod` label at {} or {} in the Prometheus server at {shown}",
            engines.iter().map(|e| e.name()).collect::<Vec<_>>().join(", "),
            seconds_text(options.start),
            seconds_text(options.end)
        )));
    }
    let engine = engine_of_fleet(&[&after, &before], &replicas, options.engine)?;
    let descriptor = engine.descriptor();
    let series_query = api::names_query(&api::series_metric_names(descriptor), &matchers);

    let start_ms = (options.start * 1000.0).round() as i64;
    let end_ms = (options.end * 1000.0).round() as i64;
    let step_ms = match options.step {
        Some(step) => i64::try_from(step.as_millis()).unwrap_or(i64::MAX).max(1),
        None => {
            let probe = INTERVAL_PROBE_S.min(options.end - options.start).max(1.0);
            let raw_query = format!(
                "{}[{}ms]",
                api::names_query(&[descriptor.running], &matchers),
                (probe * 1000.0).round() as i64
            );
            let raw = source
                .query(&raw_query, (options.start + probe).min(options.end))
                .await?;
            api::scrape_interval_ms(&raw).ok_or_else(|| {
                PromError::Nothing(format!(
                    "no two readings of {} matching {selector_words} in the first {} s of the window in the Prometheus server at {shown}, so its scrape interval cannot be read (give --step)",
                    descriptor.running,
                    inferlint_core::story::fmt::g(probe)
                ))
            })?
        }
    };
    let step_s = step_ms as f64 / 1000.0;
    // Each range answer is sized for the series the snapshots show.
    let size = api::range_size(
        [after.as_slice(), before.as_slice()],
        &api::series_metric_names(descriptor),
    );
    let per_piece = api::points_per_query(size);
    // Refused before anything is written or asked: a year at 1 ms is millions of queries.
    let queries = api::range_queries(start_ms, end_ms, step_ms, per_piece);
    if queries > api::MAX_RANGE_QUERIES {
        return Err(PromError::TooManyQueries(format!(
            "a window of {} s at a step of {} s takes {} range queries of at most {} points, more than the {} one read sends: give a shorter window or a longer --step",
            inferlint_core::story::fmt::thousands_f(options.end - options.start),
            inferlint_core::story::fmt::g(step_s),
            inferlint_core::story::fmt::thousands(i64::try_from(queries).unwrap_or(i64::MAX)),
            inferlint_core::story::fmt::thousands(i64::try_from(per_piece).unwrap_or(i64::MAX)),
            inferlint_core::story::fmt::thousands(api::MAX_RANGE_QUERIES as i64)
        )));
    }
    let rule = Rule::NEW;
    let manifest = Manifest::new(
        format!("prometheus {shown} {selector_words}"),
        Some(engine),
        Some(step_s),
        &replicas,
        &replicas,
    );
    // Marked unfinished before the first file of the fleet, and unmarked only once the
    // last one is whole: a read that stops part way leaves a folder that says so.
    output::write_file(
        &dir.join(fleet::INCOMPLETE),
        format!("inferlint is reading the fleet from {shown} into this folder; a read that stopped part way leaves this file\n").as_bytes(),
        &rule,
    )?;
    output::write_file(
        &dir.join(fleet::MANIFEST),
        manifest.to_json().as_bytes(),
        &rule,
    )?;
    let reader = RangeReader::new(descriptor, &replicas);
    let mut writers = Vec::with_capacity(replicas.len());
    {
        // The snapshots are written and let go before the series is read.
        let (mut after, mut before) = (by_replica(after), by_replica(before));
        // One writer per replica of the reader, in its order: the reader numbers them so.
        for name in reader.replicas() {
            let Some(Replica { folder, .. }) = manifest.replicas.iter().find(|r| &r.name == name)
            else {
                return Err(PromError::Nothing(format!(
                    "replica {name} has no folder in the fleet's manifest"
                )));
            };
            let folder = dir.join(folder);
            let where_from = format!("prometheus {shown} replica {name}");
            for (answer, file) in [
                (before.remove(name), "before.snapshot.json"),
                (after.remove(name), "after.snapshot.json"),
            ] {
                let snapshot = answer.and_then(|a| api::snapshot_of(&a, name, &where_from));
                if let Some(snapshot) = snapshot {
                    output::write_file(
                        &folder.join(file),
                        files::snapshot_json(&snapshot).as_bytes(),
                        &rule,
                    )?;
                }
            }
            let path = folder.join("run.series.jsonl");
            let mut file = output::create_stream(&path, &rule)?;
            let header = SeriesHeader {
                url: Some(where_from),
                interval_s: Some(step_s),
                engine: Some(engine),
                unknown_engine: None,
                // Prometheus holds the engines' metrics, not NVML's readings.
                gpu: None,
                pages: None,
            };
            let mut line = files::series_header_json(&header).into_bytes();
            line.push(b'\n');
            file.write_all(&line).map_err(|error| PromError::Write {
                path: path.clone(),
                error,
            })?;
            writers.push(ReplicaWriter {
                name: name.clone(),
                file,
                path,
                // A line is far below 1 KiB: the buffer never grows past this.
                buffer: Vec::with_capacity(WRITE_BUFFER + 1024),
                last: None,
                samples: 0,
                missing_steps: 0,
                restarts: Vec::new(),
            });
        }
    }

    let pieces = api::split_range(start_ms, end_ms, step_ms, per_piece);
    let mut assembly = Assembly {
        reader,
        writers,
        engine,
        step_s,
        outside: 0,
        unplaced: 0,
    };
    let mut max_points = 0;
    let mut largest = 0;
    let fetch = |(from, to): (i64, i64)| source.range_answer(&series_query, from, to, step_ms);
    // Each piece is read on a blocking thread while the next one is asked for and
    // arrives: the server works on the next answer while this one is read. At most two
    // answers are held, the one read and the one arriving.
    let mut answer = match pieces.first() {
        Some(&first) => Some(fetch(first).await?),
        None => None,
    };
    for (index, &piece) in pieces.iter().enumerate() {
        let Some(this) = answer.take() else {
            break;
        };
        max_points = max_points.max(api::points_in(piece.0, piece.1, step_ms));
        largest = largest.max(this.body.len() as u64);
        let base = source.base().clone();
        let mut moved = assembly;
        let read = tokio::task::spawn_blocking(move || {
            let result = moved.take(&base, &this, piece);
            (moved, result)
        });
        let next = async {
            match pieces.get(index + 1) {
                Some(&next) => Some(fetch(next).await),
                None => None,
            }
        };
        let (read, next) = tokio::join!(read, next);
        let (back, result) = match read {
            Ok(done) => done,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => {
                return Err(PromError::Nothing(format!(
                    "reading a piece was cancelled: {e}"
                )))
            }
        };
        assembly = back;
        result?;
        answer = next.transpose()?;
        on_piece(index + 1, pieces.len());
    }
    let Assembly {
        mut writers,
        outside,
        unplaced,
        ..
    } = assembly;
    let mut notes = Vec::new();
    if outside > 0 {
        notes.push(format!(
            "{outside} point(s) Prometheus gave outside the window asked were dropped"
        ));
    }
    if unplaced > 0 {
        notes.push(format!(
            "{unplaced} series with no replica of the snapshots' (no `pod` or `instance`, or one that answered at neither end of the window) were left out"
        ));
    }
    let mut samples = 0;
    for writer in &mut writers {
        writer.file.flush().map_err(|error| PromError::Write {
            path: writer.path.clone(),
            error,
        })?;
        samples += writer.samples;
        if writer.samples == 0 {
            notes.push(format!(
                "replica {}: no reading of {}'s gauges in the window",
                writer.name,
                engine.name()
            ));
        }
        if writer.missing_steps > 0 {
            notes.push(format!(
                "replica {}: {} step(s) with no reading in Prometheus (gap records in its recording)",
                writer.name, writer.missing_steps
            ));
        }
        match writer.restarts.as_slice() {
            [] => {}
            [one] => notes.push(format!("replica {} restarted: {one}", writer.name)),
            [first, ..] => notes.push(format!(
                "replica {} restarted {} times in the window (first: {first}); its recording has a restart record at each",
                writer.name,
                writer.restarts.len()
            )),
        }
    }
    // Every recording is flushed and closed: the folder is whole.
    drop(writers);
    let unfinished = dir.join(fleet::INCOMPLETE);
    std::fs::remove_file(&unfinished).map_err(|error| PromError::Write {
        path: unfinished,
        error,
    })?;
    // The manifest lists the replicas in its own order; the notes follow the reader's.
    Ok(Fetched {
        manifest,
        step_ms,
        range_queries: pieces.len(),
        max_points_per_query: max_points,
        largest_answer_bytes: largest,
        samples,
        notes,
    })
}

/// The series of an answer by replica (`pod`, else `instance`); a series of neither is
/// left out.
fn by_replica(series: Vec<ApiSeries>) -> std::collections::HashMap<String, Vec<ApiSeries>> {
    let mut groups: std::collections::HashMap<String, Vec<ApiSeries>> =
        std::collections::HashMap::new();
    for s in series {
        if let Some(replica) = s.replica() {
            let replica = replica.to_owned();
            groups.entry(replica).or_default().push(s);
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_percent_encoded() {
        assert_eq!(
            encode("{__name__=~\"vllm:.*\",job=\"a b\"}[5m]"),
            "%7B__name__%3D~%22vllm%3A.%2A%22%2Cjob%3D%22a%20b%22%7D%5B5m%5D"
        );
        assert_eq!(ms_text(1_764_547_200_500), "1764547200.500");
        assert_eq!(ms_text(5), "0.005");
    }

    #[test]
    fn markers_are_not_samples() {
        let line = marker("restart", "preemptions went down (3 -> 0)", 12.5);
        assert_eq!(files::parse_series_line(&line), files::SeriesLine::Marker);
    }
}
