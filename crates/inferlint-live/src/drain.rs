//! Draining a server's endpoints that return what they hold and forget it, while a run
//! goes on: TensorRT-LLM's `/perf_metrics` (each finished request's timing) into
//! `server-requests.jsonl` (`inferlint.server-requests/1`) and its `/kv_cache_events`
//! into `kv-events.jsonl` (`inferlint.kv-events/1`, numbered by event). Which endpoints,
//! with which method, comes from the engine's table (`request_records`,
//! `kv_events_drain`).
//!
//! Draining is destructive: what one reader takes, no other reader gets. A dashboard
//! that reads the same endpoint loses what this poller takes, and this poller loses what
//! it takes; [`destructive_warning`] says so for the caller to print.
//!
//! ```no_run
//! use std::path::Path;
//! use inferlint_core::engine::TRTLLM;
//! use inferlint_live::drain::{DrainOptions, Drainer};
//! use inferlint_live::BaseUrl;
//!
//! let mut options = DrainOptions::new(BaseUrl::parse("http://127.0.0.1:8000")?, &TRTLLM);
//! options.requests_out = Some(Path::new("run/server-requests.jsonl").to_owned());
//! options.kv_events_out = Some(Path::new("run/kv-events.jsonl").to_owned());
//! let drainer = Drainer::start(options)?;
//! // ... the load runs ...
//! let summary = drainer.stop(); // one last drain of each, then the closing lines
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! How it works:
//! - [`Drainer::start`] creates the files (never over an existing one), writes their
//!   headers and starts a thread with a runtime of its own, so a recorder's sampler on
//!   another runtime is never slowed by it. The thread drains each endpoint every
//!   [`DrainOptions::interval`], and once more when stopped.
//! - A record of `/perf_metrics` is written as the server gave it, with the time of the
//!   answer that held it. An answer that cannot be read is a `failed_drain` line: what it
//!   held is lost, and the line says so.
//! - `/kv_cache_events` numbers every event (`event_id`, one counter per rank from 0 as
//!   the engine's cache manager starts): the events of each answer are written as runs of
//!   consecutive ids, and a jump between them is a gap record (another reader took them,
//!   or the engine's buffer dropped them when full). Ids before the first one received
//!   are a hole only when the poller started before the server
//!   ([`DrainOptions::server_started_after`]); an id at or below one received means the
//!   engine started again.
//! - Nothing panics on what a server answers: garbage, a cut answer, a server that hangs
//!   (each drain has [`DrainOptions::timeout`]) or goes away is a line in the file.

use std::path::PathBuf;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use inferlint_core::engine::{Drain, EngineDescriptor, RecordsFrom};
use inferlint_core::model::traces::{ClockAnchor, KvNumbering};
use inferlint_engines::files::{
    failed_drain_json, kv_bad_frame_json, kv_drained_batch_json, kv_end_json, kv_header_json,
    kv_note_json, kv_rank_gap_json, kv_restart_json, kv_subscribed_json, server_record_json,
    server_requests_end_json, server_requests_header_json, server_requests_note_json, DrainTotals,
    KvHeader, KvTotals, ServerRequestsHeader,
};
use inferlint_engines::kv_drained::read_drained_events;
use inferlint_engines::output::{create_stream, OutputError, Rule, StreamFile};

use crate::clock;
use crate::http::{Answer, BaseUrl, HttpClient, HttpError};
use crate::stop::Stop;

/// How often each endpoint is drained by default. The engine keeps a bounded number of
/// records and events between two drains (`perf_metrics_max_requests`,
/// `event_buffer_max_size`), dropping its oldest past them.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// The shortest and longest interval taken.
pub const INTERVAL_BOUNDS: (Duration, Duration) =
    (Duration::from_millis(100), Duration::from_secs(60));
/// How long one drain may take by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most records one answer of the per-request endpoint is written with. The engine
/// keeps at most `perf_metrics_max_requests` between two drains (1,000 in its examples);
/// more in one answer is no engine's, and is cut and counted.
pub const MAX_RECORDS_PER_ANSWER: u64 = 100_000;
/// The most bytes of records one run's file is written with (a record is about 700
/// bytes, so 1 GiB is a million and a half requests): past it, records are counted,
/// not written.
pub const MAX_RECORD_BYTES_PER_RUN: u64 = 1 << 30;

/// What to drain and how.
#[derive(Debug, Clone)]
pub struct DrainOptions {
    /// The server's base address.
    pub base: BaseUrl,
    /// Its engine, whose table names the endpoints.
    pub engine: &'static EngineDescriptor,
    /// Where the per-request records go, if they are drained.
    pub requests_out: Option<PathBuf>,
    /// Where the KV events go, if they are drained.
    pub kv_events_out: Option<PathBuf>,
    /// Time between two drains of an endpoint (kept within [`INTERVAL_BOUNDS`]).
    pub interval: Duration,
    /// The most one drain may take.
    pub timeout: Duration,
    /// The poller started before the server (xray starts it first): every event from id
    /// 0 belongs to the recording, and a first id above 0 is a hole.
    pub server_started_after: bool,
    /// Replace existing output files (`--force`).
    pub force: bool,
}

impl DrainOptions {
    /// Options for `base` of `engine`, draining nothing yet, at the default interval.
    pub fn new(base: BaseUrl, engine: &'static EngineDescriptor) -> DrainOptions {
        DrainOptions {
            base,
            engine,
            requests_out: None,
            kv_events_out: None,
            interval: DEFAULT_INTERVAL,
            timeout: DEFAULT_TIMEOUT,
            server_started_after: false,
            force: false,
        }
    }
}

/// Why a poller could not start.
#[derive(Debug, thiserror::Error)]
pub enum DrainError {
    /// The engine has no such endpoint.
    #[error("{0}")]
    NotDrained(String),
    /// An output file could not be created.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// The thread or its runtime could not be started.
    #[error("cannot start the drain: {0}")]
    Start(#[source] std::io::Error),
}

/// What a poller did, when it stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct DrainSummary {
    /// The records' file and what was written to it.
    pub requests: Option<(PathBuf, DrainTotals)>,
    /// The KV events' file and its totals.
    pub kv_events: Option<(PathBuf, KvTotals)>,
    /// The first write that failed, if one did: the file stops there.
    pub write_error: Option<String>,
}

/// A poller on its own thread. Dropping it stops it as [`Drainer::stop`] does.
#[derive(Debug)]
pub struct Drainer {
    stop: Stop,
    thread: Option<JoinHandle<DrainSummary>>,
}

/// The endpoints of `engine` a poller drains: the per-request records' and the KV
/// events', where its table has them.
pub fn drains(engine: &EngineDescriptor) -> (Option<Drain>, Option<Drain>) {
    let requests = match engine.request_records.map(|r| r.from) {
        Some(RecordsFrom::Drain(d)) => Some(d),
        _ => None,
    };
    (requests, engine.kv_events_drain)
}

/// The warning to print when a poller starts: the endpoints forget what they return.
pub fn destructive_warning(base: &BaseUrl, engine: &EngineDescriptor) -> String {
    let (requests, kv) = drains(engine);
    let paths: Vec<&str> = [requests, kv]
        .into_iter()
        .flatten()
        .map(|d| d.path)
        .collect();
    format!(
        "draining {} of {base}: the server forgets what each answer holds, so another reader of {} (a dashboard, a second recorder) loses what this one takes, and this one what the other takes",
        paths.join(" and "),
        if paths.len() > 1 { "them" } else { "it" }
    )
}

/// Whether the server at `base` is this host (its monotonic clock is ours): a loopback
/// address.
fn on_this_host(base: &BaseUrl) -> bool {
    base.host_port().is_some_and(|(host, _)| {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    })
}

/// Writes lines, each in one call, and keeps the first error (nothing more is written
/// to any file after it).
struct Out {
    file: StreamFile,
}

fn put(out: &mut Out, error: &mut Option<String>, mut line: String) {
    use std::io::Write;
    if error.is_some() {
        return;
    }
    line.push('\n');
    if let Err(e) = out.file.write_all(line.as_bytes()) {
        *error = Some(format!("cannot write {}: {e}", out.file.path().display()));
    }
}

impl Drainer {
    /// Checks that the engine has the endpoints asked for, creates the files and writes
    /// their headers, and starts the thread.
    pub fn start(options: DrainOptions) -> Result<Drainer, DrainError> {
        let (requests_drain, kv_drain) = drains(options.engine);
        let engine = options.engine;
        if options.requests_out.is_some() && requests_drain.is_none() {
            return Err(DrainError::NotDrained(format!(
                "{} serves no per-request records to drain",
                engine.name
            )));
        }
        if options.kv_events_out.is_some() && kv_drain.is_none() {
            return Err(DrainError::NotDrained(format!(
                "{} serves no KV events to drain",
                engine.name
            )));
        }
        let interval = options.interval.clamp(INTERVAL_BOUNDS.0, INTERVAL_BOUNDS.1);
        let runtime = crate::runtime().map_err(DrainError::Start)?;
        let anchor = clock::anchor_now();
        let same_host = on_this_host(&options.base);
        let mut error = None;
        let requests = match (&options.requests_out, requests_drain) {
            (Some(path), Some(drain)) => {
                let mut out = Out {
                    file: create_stream(path, &Rule::force(options.force))?,
                };
                let source = engine
                    .request_records
                    .map(|r| r.source)
                    .unwrap_or(inferlint_core::model::traces::RequestSource::TrtllmPerfMetrics);
                put(
                    &mut out,
                    &mut error,
                    server_requests_header_json(&ServerRequestsHeader {
                        engine: engine.engine,
                        source,
                        url: options.base.join(drain.path),
                        same_host,
                        anchor,
                    }),
                );
                Some((out, drain, path.clone()))
            }
            _ => None,
        };
        let kv = match (&options.kv_events_out, kv_drain) {
            (Some(path), Some(drain)) => {
                let mut out = Out {
                    file: create_stream(path, &Rule::force(options.force))?,
                };
                put(
                    &mut out,
                    &mut error,
                    kv_header_json(&KvHeader {
                        endpoint: options.base.join(drain.path),
                        replay_endpoint: None,
                        backfill_from: None,
                        anchor,
                        drained: true,
                        numbered_by: KvNumbering::Event,
                    }),
                );
                Some((out, drain, path.clone()))
            }
            _ => None,
        };
        if let Some(e) = error {
            return Err(DrainError::Output(OutputError::Io {
                path: options
                    .requests_out
                    .or(options.kv_events_out)
                    .unwrap_or_default(),
                source: std::io::Error::other(e),
            }));
        }
        let stop = Stop::new();
        let task = Task {
            base: options.base,
            timeout: options.timeout,
            interval,
            stop: stop.clone(),
            stop_deadline: None,
            requests: requests.map(|(out, drain, path)| RequestsDrain {
                out,
                drain,
                path,
                totals: DrainTotals::default(),
                bytes: 0,
                noted: None,
            }),
            kv: kv.map(|(out, drain, path)| KvDrain {
                out,
                drain,
                path,
                totals: KvTotals::default(),
                next: Vec::new(),
                expect_from_zero: options.server_started_after,
                started_after: options.server_started_after,
                answered: false,
                noted: None,
            }),
            error: None,
        };
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("inferlint-drain".into())
            .spawn(move || {
                let _ = ready_tx.send(());
                runtime.block_on(task.run())
            })
            .map_err(DrainError::Start)?;
        let _ = ready_rx.recv_timeout(Duration::from_secs(5));
        Ok(Drainer {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops: drains each endpoint once more, writes the closing lines and returns what
    /// was written. Takes at most one drain's timeout per endpoint.
    pub fn stop(mut self) -> DrainSummary {
        self.finish()
    }

    fn finish(&mut self) -> DrainSummary {
        self.stop.stop();
        let lost = |why: &str| DrainSummary {
            requests: None,
            kv_events: None,
            write_error: Some(why.to_owned()),
        };
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|_| lost("the drain's thread panicked")),
            None => lost("already stopped"),
        }
    }
}

impl Drop for Drainer {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.finish();
        }
    }
}

struct RequestsDrain {
    out: Out,
    drain: Drain,
    path: PathBuf,
    totals: DrainTotals,
    /// Bytes of records written so far.
    bytes: u64,
    /// The last trouble noted, so that a server down for a minute is one note.
    noted: Option<String>,
}

struct KvDrain {
    out: Out,
    drain: Drain,
    path: PathBuf,
    totals: KvTotals,
    /// The next id expected of each rank seen.
    next: Vec<(Option<i64>, u64)>,
    /// Ids from 0 on are the recording's (the server started after the poller).
    expect_from_zero: bool,
    started_after: bool,
    answered: bool,
    noted: Option<String>,
}

struct Task {
    base: BaseUrl,
    timeout: Duration,
    interval: Duration,
    stop: Stop,
    /// Once the poller is stopped: by when the drain in flight and the last drain must
    /// be done ([`STOP_GRACE`] after the stop).
    stop_deadline: Option<tokio::time::Instant>,
    requests: Option<RequestsDrain>,
    kv: Option<KvDrain>,
    error: Option<String>,
}

/// Hands each entry of the JSON list `body` to `each`, one at a time, and lets it go.
/// `Ok(false)`: the body is JSON but no list (nothing handed); an error: not JSON, or cut
/// off (the entries before the break were handed).
fn each_entry(body: &[u8], each: impl FnMut(serde_json::Value)) -> Result<bool, serde_json::Error> {
    use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
    struct Entries<F>(F);
    impl<'de, F: FnMut(serde_json::Value)> Visitor<'de> for Entries<F> {
        type Value = bool;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of records")
        }
        fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<bool, A::Error> {
            while let Some(entry) = seq.next_element::<serde_json::Value>()? {
                (self.0)(entry);
            }
            Ok(true)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(false)
        }
        fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_str<E>(self, _: &str) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_unit<E>(self) -> Result<bool, E> {
            Ok(false)
        }
    }
    let mut reader = serde_json::Deserializer::from_slice(body);
    let read = (&mut reader).deserialize_any(Entries(each))?;
    reader.end()?;
    Ok(read)
}

/// How long after the stop the drain in flight and the last drain may take, together: a
/// server that hangs holds the stop no longer than this, whatever the drains' timeout.
pub const STOP_GRACE: Duration = Duration::from_secs(1);

/// `asking`, until it answers or, once the poller is stopped, until `deadline`
/// ([`STOP_GRACE`] after the stop, set here when the stop comes): a drain cut there is a
/// failed drain, since what the server handed out in it, if anything, is lost.
async fn within_the_stop(
    asking: impl std::future::Future<Output = Got>,
    stop: &Stop,
    deadline: &mut Option<tokio::time::Instant>,
) -> Got {
    tokio::pin!(asking);
    let at = match *deadline {
        Some(at) => at,
        None => {
            tokio::select! {
                got = &mut asking => return got,
                () = stop.stopped() => {
                    let at = tokio::time::Instant::now() + STOP_GRACE;
                    *deadline = Some(at);
                    at
                }
            }
        }
    };
    match tokio::time::timeout_at(at, &mut asking).await {
        Ok(got) => got,
        Err(_) => Got::Failed(format!(
            "the poller was stopped while this drain was waiting, and it was cut {} s later",
            STOP_GRACE.as_secs_f64()
        )),
    }
}

/// What one request to an endpoint gave.
enum Got {
    /// A 200 answer's body.
    Body(Vec<u8>),
    /// Nothing listens (the server not up yet, or gone): nothing was handed out.
    NotListening(String),
    /// No answer that can be read: what the server handed out in it, if anything, is
    /// lost.
    Failed(String),
}

impl Task {
    async fn run(mut self) -> DrainSummary {
        let client = HttpClient::new();
        loop {
            self.drain_all(&client).await;
            let stopped = self.stop.stopped();
            tokio::select! {
                () = stopped => break,
                () = tokio::time::sleep(self.interval) => {}
            }
        }
        // The last drain: what finished since the one before.
        self.drain_all(&client).await;
        let at = clock::anchor_now();
        let mut summary = DrainSummary {
            requests: None,
            kv_events: None,
            write_error: None,
        };
        if let Some(mut r) = self.requests.take() {
            put(
                &mut r.out,
                &mut self.error,
                server_requests_end_json(&r.totals, at),
            );
            sync(&mut r.out, &mut self.error);
            summary.requests = Some((r.path, r.totals));
        }
        if let Some(mut k) = self.kv.take() {
            put(&mut k.out, &mut self.error, kv_end_json(&k.totals, at));
            sync(&mut k.out, &mut self.error);
            summary.kv_events = Some((k.path, k.totals));
        }
        summary.write_error = self.error;
        summary
    }

    async fn drain_all(&mut self, client: &HttpClient) {
        if let Some(drain) = self.requests.as_ref().map(|r| r.drain) {
            let asking = ask(client, &self.base, drain, self.timeout);
            let got = within_the_stop(asking, &self.stop, &mut self.stop_deadline).await;
            self.requests_answer(got);
        }
        if let Some(drain) = self.kv.as_ref().map(|k| k.drain) {
            let asking = ask(client, &self.base, drain, self.timeout);
            let got = within_the_stop(asking, &self.stop, &mut self.stop_deadline).await;
            self.kv_answer(got);
        }
    }

    fn requests_answer(&mut self, got: Got) {
        let Some(r) = self.requests.as_mut() else {
            return;
        };
        let at = clock::anchor_now();
        match got {
            Got::Body(body) => {
                r.noted = None;
                // Each entry is read, written and let go before the next: the answer is
                // never held as a tree, and what passes the bounds is only counted.
                let (mut written, mut past_bounds, mut no_record) = (0u64, 0u64, 0u64);
                let read = each_entry(&body, |entry| {
                    if !entry.is_object() {
                        no_record += 1;
                    } else if written >= MAX_RECORDS_PER_ANSWER
                        || r.bytes >= MAX_RECORD_BYTES_PER_RUN
                    {
                        past_bounds += 1;
                    } else {
                        written += 1;
                        let line = server_record_json(&entry, at);
                        r.bytes += line.len() as u64 + 1;
                        put(&mut r.out, &mut self.error, line);
                    }
                });
                r.totals.records += written;
                r.totals.cut += past_bounds + no_record;
                if past_bounds + no_record > 0 {
                    let line = server_requests_note_json(
                        &format!(
                            "{} of the answer's {} entries were not written: {past_bounds} past the most an answer ({MAX_RECORDS_PER_ANSWER}) or a run ({}) is written with, {no_record} not a record",
                            past_bounds + no_record,
                            written + past_bounds + no_record,
                            inferlint_engines::input::size_text(MAX_RECORD_BYTES_PER_RUN)
                        ),
                        at,
                    );
                    put(&mut r.out, &mut self.error, line);
                }
                match read {
                    Ok(true) => r.totals.drains += 1,
                    Ok(false) => {
                        r.totals.failed_drains += 1;
                        let line = failed_drain_json(
                            "the answer is not a list of records: what it held is lost",
                            at,
                        );
                        put(&mut r.out, &mut self.error, line);
                    }
                    Err(e) => {
                        r.totals.failed_drains += 1;
                        let line = failed_drain_json(
                            &format!("the answer is not JSON ({e}): what it held is lost"),
                            at,
                        );
                        put(&mut r.out, &mut self.error, line);
                    }
                }
            }
            Got::NotListening(why) => {
                if r.noted.as_deref() != Some(why.as_str()) {
                    let line = server_requests_note_json(&why, at);
                    put(&mut r.out, &mut self.error, line);
                    r.noted = Some(why);
                }
            }
            Got::Failed(why) => {
                r.totals.failed_drains += 1;
                let line = failed_drain_json(
                    &format!("{why}: what the server handed out in it, if anything, is lost"),
                    at,
                );
                put(&mut r.out, &mut self.error, line);
            }
        }
    }

    fn kv_answer(&mut self, got: Got) {
        let base = &self.base;
        let Some(k) = self.kv.as_mut() else {
            return;
        };
        let at = clock::anchor_now();
        let body = match got {
            Got::Body(body) => body,
            Got::NotListening(why) => {
                if k.noted.as_deref() != Some(why.as_str()) {
                    put(&mut k.out, &mut self.error, kv_note_json(&why, at));
                    k.noted = Some(why);
                }
                return;
            }
            Got::Failed(why) => {
                k.totals.bad_frames += 1;
                let line = kv_bad_frame_json(
                    None,
                    &format!("{why}: what the server handed out in it, if anything, is lost"),
                    0,
                    0,
                    at,
                    false,
                );
                put(&mut k.out, &mut self.error, line);
                return;
            }
        };
        k.noted = None;
        if !k.answered {
            k.answered = true;
            let line = kv_subscribed_json(&base.join(k.drain.path), !k.started_after, at);
            put(&mut k.out, &mut self.error, line);
        }
        let read = match read_drained_events(&body) {
            Ok(read) => read,
            Err(why) => {
                k.totals.bad_frames += 1;
                let line = kv_bad_frame_json(
                    None,
                    &format!("{why}: what it held is lost"),
                    1,
                    body.len(),
                    at,
                    false,
                );
                put(&mut k.out, &mut self.error, line);
                return;
            }
        };
        if read.unreadable > 0 {
            k.totals.bad_frames += read.unreadable;
            let line = kv_bad_frame_json(
                None,
                &format!(
                    "{} event(s) of the answer could not be read ({})",
                    read.unreadable,
                    read.first_problem.as_deref().unwrap_or("no reason kept")
                ),
                1,
                body.len(),
                at,
                false,
            );
            put(&mut k.out, &mut self.error, line);
        }
        for mut run in read.runs {
            let rank = run.batch.dp_rank;
            let next = k.next.iter().find(|(r, _)| *r == rank).map(|(_, n)| *n);
            match next {
                Some(next) if run.first_id < next => {
                    k.totals.restarts += 1;
                    let line = kv_restart_json(next - 1, run.first_id, at);
                    put(&mut k.out, &mut self.error, line);
                    if run.first_id > 0 {
                        gap(
                            k,
                            &mut self.error,
                            0,
                            run.first_id - 1,
                            rank,
                            at,
                            AFTER_RESTART,
                        );
                    }
                }
                Some(next) if run.first_id > next => {
                    gap(k, &mut self.error, next, run.first_id - 1, rank, at, TAKEN);
                }
                None if k.expect_from_zero && run.first_id > 0 => {
                    gap(
                        k,
                        &mut self.error,
                        0,
                        run.first_id - 1,
                        rank,
                        at,
                        BEFORE_FIRST,
                    );
                }
                _ => {}
            }
            match k.next.iter_mut().find(|(r, _)| *r == rank) {
                Some(slot) => slot.1 = run.last_id + 1,
                None => k.next.push((rank, run.last_id + 1)),
            }
            run.batch.ts = at.t_wall;
            k.totals.batches += 1;
            k.totals.stored_blocks += run.batch.stored_blocks;
            k.totals.removed_blocks += run.batch.removed_blocks;
            let line = kv_drained_batch_json(run.first_id, run.last_id, &run.batch, at);
            put(&mut k.out, &mut self.error, line);
        }
    }
}

/// Why ids between two received ones never came.
const TAKEN: &str = "never received: another reader of the endpoint took them, or the engine dropped them when its buffer (event_buffer_max_size) was full";
/// Why ids before the first received never came, when the server started after the
/// poller.
const BEFORE_FIRST: &str = "never received: the engine handed them out before the first drain (another reader took them), or dropped them when its buffer was full";
/// Why ids from 0 after a restart never came.
const AFTER_RESTART: &str = "never received after the engine started again: another reader took them, or its buffer dropped them";

fn gap(
    k: &mut KvDrain,
    error: &mut Option<String>,
    from: u64,
    to: u64,
    rank: Option<i64>,
    at: ClockAnchor,
    reason: &str,
) {
    k.totals.gaps += 1;
    k.totals.missed += to - from + 1;
    put(
        &mut k.out,
        error,
        kv_rank_gap_json(from, to, rank, reason, at),
    );
}

fn sync(out: &mut Out, error: &mut Option<String>) {
    if error.is_none() {
        if let Err(e) = out.file.sync_all() {
            *error = Some(format!("cannot write {}: {e}", out.file.path().display()));
        }
    }
}

/// Asks one endpoint once.
async fn ask(client: &HttpClient, base: &BaseUrl, drain: Drain, timeout: Duration) -> Got {
    let url = base.join(drain.path);
    let answer = if drain.post {
        client.post_json(&url, "{}".to_owned(), timeout).await
    } else {
        client.get(&url, timeout).await
    };
    match answer {
        Ok(Answer { status, body, .. }) if status.is_success() => Got::Body(body),
        Ok(answer) if answer.status.as_u16() == 404 => Got::NotListening(format!(
            "{url} answered {}: the server serves no such endpoint",
            answer.status_text()
        )),
        Ok(answer) => Got::Failed(format!("{url} answered {}", answer.status_text())),
        Err(HttpError::Refused) => Got::NotListening(format!(
            "nothing listens at {url} (the server is not up, or went away); trying again"
        )),
        Err(e) => Got::Failed(format!("{url}: {e}")),
    }
}
