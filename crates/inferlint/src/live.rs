//! Recording a live server while a load runs (feature `live`).
//!
//! [`Recorder::start`] takes the server's `/metrics` before the load and returns once it
//! has it, so a load started after it can never run ahead of the before reading. From
//! then on the recorder samples `/metrics` every [`RecordOptions::interval`] on a task of
//! your tokio runtime (with its time and I/O drivers on), while your code runs the load;
//! [`Recorder::events`] streams what it sees as it sees it. [`Recorder::finish`] stops
//! it, takes the after reading and always returns the [`Recording`], with its
//! [`Health`]: a server that died mid-run leaves the before reading and every sample, and
//! a recording without an after reading is still checked for what it can judge (the
//! checks that need the after reading say Can't tell, naming it).
//!
//! ```
//! # #[cfg(not(feature = "sim"))] fn main() {}
//! # #[cfg(feature = "sim")]
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), inferlint::Error> {
//! # let server = inferlint::sim::spawn(inferlint::sim::ServerConfig::new(inferlint::Engine::Vllm)).unwrap();
//! # let url = server.base_url.clone();
//! # let my_load = inferlint::sim::run_in_runtime(&url, inferlint::sim::LoadConfig { requests: 8, concurrency: 4, ..Default::default() });
//! use inferlint::live::{RecordOptions, Recorder};
//!
//! let recorder = Recorder::start(&url, RecordOptions::default().requested(4)).await?;
//! let load = my_load.await.expect("the load ran"); // your load, once the before reading is taken
//! let recording = recorder.finish().await;
//! assert!(recording.after().is_ok() && recording.health().samples() >= 1);
//! let report = inferlint::Run::from_recording(&recording)
//!     .client((&load).into())
//!     .build()?
//!     .check();
//! println!("{}", report.to_json());
//! # Ok(())
//! # }
//! ```
//!
//! No signal handler is installed unless you ask for one: [`interrupted`] resolves on
//! Ctrl-C (it installs SIGINT and SIGTERM handlers for the rest of the process, which only
//! a program that owns the process should do).
//!
//! A program without a runtime uses [`blocking::record`], which, like
//! `reqwest::blocking`, must not be called inside an async runtime: there it returns
//! [`ErrorKind::InsideRuntime`] rather than panicking.
//!
//! [`ErrorKind::InsideRuntime`]: crate::ErrorKind::InsideRuntime

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use inferlint_core::model::steps::Steps;
use inferlint_core::model::traces::{KvEvents, ServerRequests};
use inferlint_engines::files::{self, KV_EVENTS_FILE, SPANS_FILE, STEPS_FILE};
use inferlint_live::kv_events::{KvError, KvOptions, KvSubscriber};
use inferlint_live::otlp::{Listen, OtlpError, OtlpOptions, OtlpReceiver};
use inferlint_live::steps_follow::{StepsError, StepsFollower};
pub use inferlint_live::{interrupted, Stop};
use inferlint_live::{Finished, LiveEvent, LiveEvents, Session};

use crate::error::{Error, ErrorKind};
use crate::{CheckResult, Engine, Status};

/// How to record: [`RecordOptions::default`] and the setters. More options may come in a
/// minor release.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RecordOptions {
    interval: Duration,
    duration: Option<Duration>,
    engine: Option<Engine>,
    folder: Option<PathBuf>,
    requested: Option<u64>,
    expect_cache_hits: bool,
    whole_pages: bool,
    spans: Option<u16>,
    kv_events: Option<String>,
    kv_replay: Option<String>,
    steps: Option<PathBuf>,
}

impl Default for RecordOptions {
    /// A reading every 250 ms, until [`Recorder::finish`]; any engine; nothing written.
    fn default() -> RecordOptions {
        RecordOptions {
            interval: Duration::from_millis(250),
            duration: None,
            engine: None,
            folder: None,
            requested: None,
            expect_cache_hits: false,
            whole_pages: false,
            spans: None,
            kv_events: None,
            kv_replay: None,
            steps: None,
        }
    }
}

impl RecordOptions {
    /// The time between two readings: from 50 ms to an hour, else [`Recorder::start`]
    /// refuses it ([`ErrorKind::Invalid`]).
    pub fn interval(mut self, interval: Duration) -> RecordOptions {
        self.interval = interval;
        self
    }

    /// The longest the series runs: it ends by itself then, and [`Recorder::finish`]
    /// takes the after reading. More than zero and at most 30 days.
    pub fn duration(mut self, duration: Duration) -> RecordOptions {
        self.duration = Some(duration);
        self
    }

    /// Refuse a server of another engine ([`ErrorKind::Engine`]).
    pub fn engine(mut self, engine: Engine) -> RecordOptions {
        self.engine = Some(engine);
        self
    }

    /// Also write the recording into this run folder as it is made
    /// (`before.snapshot.json`, `run.series.jsonl`, `after.snapshot.json`), the files
    /// [`crate::Run::from_dir`] reads. It is created when missing and must hold none of
    /// these files.
    pub fn folder(mut self, folder: impl Into<PathBuf>) -> RecordOptions {
        self.folder = Some(folder.into());
        self
    }

    /// The concurrency the load asks for: T8's verdict, live and in
    /// [`crate::Run::from_recording`].
    pub fn requested(mut self, requested: u64) -> RecordOptions {
        self.requested = Some(requested);
        self
    }

    /// A run meant to reuse prompt prefixes (T16's live verdict; check the recording
    /// with [`crate::CheckOptions::expect_cache_hits`] too).
    pub fn expect_cache_hits(mut self, expect: bool) -> RecordOptions {
        self.expect_cache_hits = expect;
        self
    }

    /// Read the whole page at every scrape of the series. Without it each scrape after
    /// the first asks only for the samples a recording reads (with prometheus_client's
    /// `name[]` filter where the server honours it), which costs the server less; the
    /// series header says which was done.
    pub fn whole_pages(mut self, whole: bool) -> RecordOptions {
        self.whole_pages = whole;
        self
    }

    /// Also receive the server's OpenTelemetry spans on 127.0.0.1:`port` (OTLP over gRPC
    /// or HTTP/protobuf) while recording, into [`RecordOptions::folder`]'s
    /// `spans.otlp.jsonl`: start vLLM with `--otlp-traces-endpoint
    /// http://127.0.0.1:PORT`. They are the server's own account of each request (its
    /// queue, prefill and decode): with the client's request records
    /// ([`crate::RunBuilder::requests`]) they judge T24 and T25, and the HTML report draws
    /// each request's phases. Needs a folder; port 0 is refused (the server is told the
    /// port before it starts).
    pub fn spans(mut self, port: u16) -> RecordOptions {
        self.spans = Some(port);
        self
    }

    /// Also subscribe to the server's KV-cache event stream at `endpoint` while
    /// recording (`tcp://127.0.0.1:5557`: the publisher of vLLM's or SGLang's
    /// `--kv-events-config`, whose `tcp://*:PORT` is read as the loopback), into
    /// [`RecordOptions::folder`]'s `kv-events.jsonl`: T26 (events lost or never sent) and
    /// the report's KV lane. A hole in the sequence is kept as a hole. Needs a folder.
    pub fn kv_events(mut self, endpoint: impl Into<String>) -> RecordOptions {
        self.kv_events = Some(endpoint.into());
        self
    }

    /// The publisher's replay endpoint (`replay_endpoint` of `--kv-events-config`), asked
    /// for the batches a hole in the stream missed. Needs [`RecordOptions::kv_events`].
    pub fn kv_replay(mut self, endpoint: impl Into<String>) -> RecordOptions {
        self.kv_replay = Some(endpoint.into());
        self
    }

    /// Also copy the step file of a vLLM server started with `INFERLINT_STEPS=path` (and
    /// the step plugin, `integrations/vllm`) into [`RecordOptions::folder`]'s
    /// `steps.jsonl`: its header (the clock anchors), then every complete line the
    /// server appends from the before reading until the after reading; what the file
    /// held before is another window's and is not copied. The engine's own account of
    /// each step judges T29 to T31 ([`crate::Run::from_recording`], or
    /// [`crate::Run::from_dir`] on the folder). A file whose first line is not a step
    /// file's header is refused at [`Recorder::start`] ([`ErrorKind::Invalid`]), as is a
    /// server of another engine ([`ErrorKind::Engine`]); a file that gets no header, or
    /// that the server begins anew (it restarted), is said in [`Recording::notes`], and
    /// the copy keeps what came before. Needs a folder.
    pub fn steps(mut self, path: impl Into<PathBuf>) -> RecordOptions {
        self.steps = Some(path.into());
        self
    }

    /// The receivers asked for, refused before anything starts when they cannot run.
    fn receivers(&self) -> Result<Option<ReceiverPlan>, Error> {
        let invalid = |why: String| Err(Error::new(ErrorKind::Invalid, why));
        if self.kv_replay.is_some() && self.kv_events.is_none() {
            return invalid("a KV replay endpoint needs the KV event stream (kv_events)".into());
        }
        if self.spans.is_none() && self.kv_events.is_none() && self.steps.is_none() {
            return Ok(None);
        }
        let Some(folder) = &self.folder else {
            return invalid(
                "the server's spans, KV events and steps are written into the run folder: give one (folder)"
                    .into(),
            );
        };
        if let (Some(_), Some(engine)) = (&self.steps, self.engine) {
            if engine.descriptor().step_plugin.is_none() {
                return Err(Error::new(
                    ErrorKind::Engine,
                    format!(
                        "the step plugin is vLLM's (a stat logger); {} has none",
                        engine.name()
                    ),
                ));
            }
        }
        if self.spans == Some(0) {
            return invalid(
                "the span receiver needs the port the server was told (--otlp-traces-endpoint), not 0"
                    .into(),
            );
        }
        let kv = self.kv_events.as_deref().map(|endpoint| {
            let mut options = KvOptions::new(endpoint);
            options.replay_endpoint = self.kv_replay.clone();
            options
        });
        Ok(Some(ReceiverPlan {
            folder: folder.clone(),
            spans: self.spans,
            kv,
            steps: self.steps.clone(),
        }))
    }

    fn inner(&self) -> inferlint_live::RecordOptions {
        let mut options = inferlint_live::RecordOptions::default().interval(self.interval);
        options.duration = self.duration;
        // The step plugin is vLLM's: a server of another engine is refused at its first
        // scrape, before anything is written.
        options.engine = self
            .engine
            .or_else(|| self.steps.as_ref().and_then(|_| step_plugin_engine()));
        options.folder = self.folder.clone();
        options.requested = self.requested;
        options.expect_cache_hits = self.expect_cache_hits;
        options.pages = if self.whole_pages {
            inferlint_live::watch::Pages::Whole
        } else {
            inferlint_live::watch::Pages::AskForLess
        };
        options
    }
}

/// The one engine with a step plugin (vLLM's stat logger), which
/// [`RecordOptions::steps`] requires of the server.
fn step_plugin_engine() -> Option<Engine> {
    let mut with = Engine::ALL
        .into_iter()
        .filter(|e| e.descriptor().step_plugin.is_some());
    match (with.next(), with.next()) {
        (Some(only), None) => Some(only),
        _ => None,
    }
}

/// A recording under way: started by [`Recorder::start`], ended by
/// [`Recorder::finish`]. Dropped without `finish`, its series stops (a scrape under way
/// is abandoned) and what it read is lost.
#[derive(Debug)]
pub struct Recorder {
    session: Session,
    requested: Option<u64>,
    receivers: Receivers,
}

/// The receivers a recording asked for: where they write, the span receiver's port, the
/// subscriber's options.
#[derive(Debug)]
struct ReceiverPlan {
    folder: PathBuf,
    spans: Option<u16>,
    kv: Option<KvOptions>,
    steps: Option<PathBuf>,
}

/// The span receiver and the KV event subscriber a recording runs beside its series,
/// each on a thread of its own.
#[derive(Debug, Default)]
struct Receivers {
    spans: Option<OtlpReceiver>,
    kv: Option<KvSubscriber>,
    steps: Option<StepsFollower>,
}

impl Receivers {
    /// Starts what `options` asks for (blocking: the subscriber waits for its
    /// subscription, at most a few seconds). A receiver that cannot start stops those
    /// started and removes the files they made.
    fn start(plan: ReceiverPlan) -> Result<Receivers, Error> {
        let ReceiverPlan {
            folder,
            spans,
            kv,
            steps,
        } = plan;
        let folder = folder.as_path();
        std::fs::create_dir_all(folder).map_err(|e| {
            Error::new(
                ErrorKind::Write,
                format!("cannot create {}: {e}", folder.display()),
            )
        })?;
        let mut started = Receivers::default();
        if let Some(port) = spans {
            let out = folder.join(SPANS_FILE);
            started.spans = Some(
                OtlpReceiver::start_with(Listen::Port(port), &out, &OtlpOptions::default())
                    .map_err(|e| {
                        // A file already there is someone's: refused, never replaced.
                        let kind = match e {
                            OtlpError::Output(_) => ErrorKind::Write,
                            _ => ErrorKind::Invalid,
                        };
                        Error::new(kind, format!("cannot receive spans on port {port}: {e}"))
                    })?,
            );
        }
        if let Some(options) = kv {
            let endpoint = options.endpoint.clone();
            match KvSubscriber::start_with(options, &folder.join(KV_EVENTS_FILE)) {
                Ok(subscriber) => started.kv = Some(subscriber),
                Err(e) => {
                    started.discard();
                    return Err(Error::new(
                        match e {
                            KvError::Output(_) => ErrorKind::Write,
                            _ => ErrorKind::Invalid,
                        },
                        format!("cannot subscribe to the KV events at {endpoint}: {e}"),
                    ));
                }
            }
        }
        // Last, so that it begins as close to the before reading as it can.
        if let Some(source) = steps {
            match StepsFollower::start(&source, &folder.join(STEPS_FILE), false) {
                Ok(follower) => started.steps = Some(follower),
                Err(e) => {
                    started.discard();
                    let kind = match e {
                        StepsError::NotSteps { .. } | StepsError::Read { .. } => ErrorKind::Invalid,
                        _ => ErrorKind::Write,
                    };
                    return Err(Error::new(kind, format!("cannot follow the steps: {e}"))
                        .with_input(source.display().to_string()));
                }
            }
        }
        Ok(started)
    }

    /// Stops them and removes their files: the recording they were for never started.
    fn discard(self) {
        if let Some(receiver) = self.spans {
            let _ = std::fs::remove_file(receiver.stop().file);
        }
        if let Some(subscriber) = self.kv {
            let _ = std::fs::remove_file(subscriber.stop().path);
        }
        if let Some(out) = self.steps.and_then(|follower| follower.stop().out) {
            let _ = std::fs::remove_file(out);
        }
    }

    /// Waits for the server's last spans (a request span for each of `finished`, or a
    /// quiet spell), stops both and reads what they wrote through `engine`'s table.
    fn finish(self, engine: Engine, finished: Option<f64>) -> Received {
        let mut received = Received::default();
        if let Some(receiver) = self.spans {
            let (summary, _) =
                receiver.stop_after_last_spans(engine.descriptor(), finished, &|| false);
            match files::read_spans(&summary.file, engine.descriptor()) {
                Ok(requests) => received.server_requests = Some(requests),
                Err(e) => received
                    .notes
                    .push(format!("the server's spans are not read: {e}")),
            }
        }
        if let Some(subscriber) = self.kv {
            let summary = subscriber.stop();
            match files::read_kv_events(&summary.path) {
                Ok(events) => received.kv_events = Some(events),
                Err(e) => received
                    .notes
                    .push(format!("the KV events are not read: {e}")),
            }
        }
        if let Some(follower) = self.steps {
            let summary = follower.stop();
            received.notes.extend(summary.warning());
            if let Some(out) = &summary.out {
                match files::read_steps(out) {
                    Ok(steps) => received.steps = Some(steps),
                    Err(e) => received.notes.push(format!("the steps are not read: {e}")),
                }
            }
        }
        received
    }
}

/// What the receivers wrote, read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Received {
    pub(crate) server_requests: Option<ServerRequests>,
    pub(crate) kv_events: Option<KvEvents>,
    pub(crate) steps: Option<Steps>,
    notes: Vec<String>,
}

impl Recorder {
    /// Takes the before reading of the server at `url` (`http://127.0.0.1:8000`, or
    /// `127.0.0.1:8000`) and starts the series on the current tokio runtime; returns
    /// once the before reading is taken, so the load may start as soon as this returns.
    ///
    /// Errors: an interval or duration out of bounds ([`ErrorKind::Invalid`]); an
    /// address no server can have, nothing answering, or no engine's metrics there
    /// ([`ErrorKind::Server`]); another engine than [`RecordOptions::engine`]
    /// ([`ErrorKind::Engine`]); a file of [`RecordOptions::folder`] that exists or cannot
    /// be written ([`ErrorKind::Write`]).
    pub async fn start(url: &str, options: RecordOptions) -> Result<Recorder, Error> {
        inferlint_live::session::check_options(&options.inner())
            .map_err(|e| server_error(e, url))?;
        // The receivers listen before the before reading: the load, started once this
        // returns, finds them there.
        let receivers = match options.receivers()? {
            Some(plan) => tokio::task::spawn_blocking(move || Receivers::start(plan))
                .await
                .map_err(|e| {
                    Error::new(
                        ErrorKind::Invalid,
                        format!("cannot start the receivers: {e}"),
                    )
                })??,
            None => Receivers::default(),
        };
        let session = match Session::start(url, &options.inner()).await {
            Ok(session) => session,
            Err(e) => {
                receivers.discard();
                return Err(server_error(e, url));
            }
        };

        Ok(Recorder {
            session,
            requested: options.requested,
            receivers,
        })
    }

    /// The engine the server runs, from its metric names.
    pub fn engine(&self) -> Engine {
        self.session.engine()
    }

    /// What happens from now on, as it happens: each sample, each gap and why, each
    /// restart of the server, each mid-run verdict that changed. The stream ends once the
    /// series has. Only the first call's stream gets the events (a later one's is
    /// empty), and none is kept until it is made.
    pub fn events(&mut self) -> Events {
        Events {
            inner: self.session.events(),
        }
    }

    /// The recording's health so far.
    pub fn health(&self) -> Health {
        Health::of(&self.session.progress(), None)
    }

    /// Resolves once the series has ended by itself ([`RecordOptions::duration`]
    /// passed); with no duration, never.
    pub fn ended(&self) -> impl Future<Output = ()> + Send + 'static {
        self.session.ended()
    }

    /// Stops the series (a scrape under way is abandoned, and is no gap), takes the
    /// after reading, and returns the recording: never an error, and never less than
    /// what was read. A failed after reading is [`Recording::after`]'s error.
    ///
    /// With [`RecordOptions::spans`], it then waits for the server's last spans (vLLM
    /// sends what it holds every 5 s): until one has come for each request the server
    /// finished during the recording, or none for 6 s, at most 12 s.
    pub async fn finish(self) -> Recording {
        let finished = self.session.finish().await;
        let engine = finished.engine;
        let request_success = engine.descriptor().request_success;
        let done = finished
            .after
            .as_ref()
            .ok()
            .and_then(|after| after.metrics.total(request_success))
            .map(|after| {
                after
                    - finished
                        .before
                        .metrics
                        .total(request_success)
                        .unwrap_or(0.0)
            });
        let receivers = self.receivers;
        let received = tokio::task::spawn_blocking(move || receivers.finish(engine, done))
            .await
            .unwrap_or_else(|e| Received {
                notes: vec![format!("the spans and KV events were lost: {e}")],
                ..Received::default()
            });
        Recording::new(finished, self.requested, received)
    }
}

/// The events of a recording (see [`Recorder::events`]).
#[derive(Debug)]
pub struct Events {
    inner: LiveEvents,
}

impl Events {
    /// The next event; `None` once the series has ended.
    pub async fn next(&mut self) -> Option<RecordEvent> {
        loop {
            match RecordEvent::of(self.inner.next().await?) {
                Some(event) => return Some(event),
                None => continue,
            }
        }
    }

    /// The next event if one is waiting, without waiting.
    pub fn try_next(&mut self) -> Option<RecordEvent> {
        loop {
            if let Some(event) = RecordEvent::of(self.inner.try_next()?) {
                return Some(event);
            }
        }
    }
}

/// Something the recorder saw. New kinds may come in a minor release: a `match` needs a
/// wildcard arm.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RecordEvent {
    /// A sample of the series.
    Sample(Sample),
    /// Slots that passed unsampled, and why.
    Gap(Gap),
    /// The server restarted (its counters went back), and how that showed.
    Restart(String),
    /// A mid-run tripwire's verdict that changed.
    Verdict(Verdict),
}

impl RecordEvent {
    fn of(event: LiveEvent) -> Option<RecordEvent> {
        Some(match event {
            LiveEvent::Sample(s) => RecordEvent::Sample(Sample {
                t_wall: s.t_wall,
                running: s.running,
                waiting: s.waiting,
                kv_usage: s.kv_usage,
            }),
            LiveEvent::Failed(reason) => RecordEvent::Gap(Gap {
                reason,
                overrun: false,
            }),
            LiveEvent::Overrun(reason) => RecordEvent::Gap(Gap {
                reason,
                overrun: true,
            }),
            LiveEvent::Restart(what) => RecordEvent::Restart(what),
            LiveEvent::Verdict(change) => RecordEvent::Verdict(Verdict {
                t_wall: change.t_wall,
                previous: change.previous,
                result: change.result,
            }),
            // Lines skipped are in the recording's notes.
            _ => return None,
        })
    }
}

/// One sample, as the series holds it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    t_wall: f64,
    running: Option<f64>,
    waiting: Option<f64>,
    kv_usage: Option<f64>,
}

impl Sample {
    /// When it was taken, Unix seconds.
    pub fn t_wall(&self) -> f64 {
        self.t_wall
    }

    /// Requests running.
    pub fn running(&self) -> Option<f64> {
        self.running
    }

    /// Requests waiting.
    pub fn waiting(&self) -> Option<f64> {
        self.waiting
    }

    /// KV cache use, 0 to 1.
    pub fn kv_usage(&self) -> Option<f64> {
        self.kv_usage
    }
}

/// Slots of the series that passed unsampled.
#[derive(Debug, Clone, PartialEq)]
pub struct Gap {
    reason: String,
    overrun: bool,
}

impl Gap {
    /// Why: the failed scrape's error, or how long the scrape that ran past its slots
    /// took.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// Whether a scrape ran past the next slots (rather than failing).
    pub fn is_overrun(&self) -> bool {
        self.overrun
    }
}

/// A mid-run verdict (T1, T8, T9, T14, T16, T17, T21 judged on the series so far).
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    t_wall: f64,
    previous: Option<Status>,
    result: CheckResult,
}

impl Verdict {
    /// The sample it was judged at, Unix seconds.
    pub fn t_wall(&self) -> f64 {
        self.t_wall
    }

    /// The verdict before this one; `None` for a tripwire's first.
    pub fn previous(&self) -> Option<Status> {
        self.previous
    }

    /// The verdict now.
    pub fn result(&self) -> &CheckResult {
        &self.result
    }
}

/// How a recording went: what the series holds and what it lost.
#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    samples: u64,
    failed: u64,
    overruns: u64,
    gaps: u64,
    missed_slots: u64,
    restarts: u64,
    write_error: Option<String>,
}

impl Health {
    fn of(progress: &inferlint_live::watch::Progress, write_error: Option<String>) -> Health {
        Health {
            samples: progress.samples,
            failed: progress.failed,
            // Each failed scrape loses its one slot; the rest an overrun let pass.
            overruns: progress.missed_slots.saturating_sub(progress.failed),
            gaps: progress.gaps,
            missed_slots: progress.missed_slots,
            restarts: progress.restarts,
            write_error,
        }
    }

    /// Samples taken.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Scrapes that failed (no answer, an error status, a page that was no metrics).
    pub fn failed(&self) -> u64 {
        self.failed
    }

    /// Slots that passed unsampled without a scrape that failed: a scrape ran past
    /// them, or the duration's end cut the last one short.
    pub fn overruns(&self) -> u64 {
        self.overruns
    }

    /// Gaps recorded: each failed scrape, and each run of slots an overrun let pass.
    pub fn gaps(&self) -> u64 {
        self.gaps
    }

    /// Slots that passed unsampled, failed and overrun alike.
    pub fn missed_slots(&self) -> u64 {
        self.missed_slots
    }

    /// Restarts of the server seen.
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    /// Whether more than a tenth of the series' slots passed unsampled (failed or
    /// overrun): too many holes for a peak to be trusted.
    pub fn too_many_missed(&self) -> bool {
        let slots = self.samples + self.missed_slots;
        slots > 0 && self.missed_slots as f64 > 0.1 * slots as f64
    }

    /// Why a file of [`RecordOptions::folder`] could not be written, when one could not
    /// (the recording in memory is whole all the same).
    pub fn write_error(&self) -> Option<&str> {
        self.write_error.as_deref()
    }
}

/// What a recording holds: the before reading, the series, the after reading or why
/// there is none, and how it went. Check it with [`crate::Run::from_recording`].
#[derive(Debug, Clone)]
pub struct Recording {
    pub(crate) finished: Finished,
    pub(crate) after_error: Option<Error>,
    pub(crate) requested: Option<u64>,
    pub(crate) received: Received,
    health: Health,
}

impl Recording {
    fn new(mut finished: Finished, requested: Option<u64>, received: Received) -> Recording {
        finished.notes.extend(received.notes.iter().cloned());
        let after_error = finished.after.as_ref().err().map(|e| {
            Error::new(
                ErrorKind::Server,
                format!("cannot take the after reading: {e}"),
            )
            .with_input(finished.url.clone())
        });
        let health = Health::of(&finished.progress, finished.write_error.take());
        Recording {
            finished,
            after_error,
            requested,
            received,
            health,
        }
    }

    /// How many requests the server's spans gave an account of
    /// ([`RecordOptions::spans`]); `None` without a span receiver, or when its file could
    /// not be read (a note says why).
    pub fn server_requests(&self) -> Option<usize> {
        self.received
            .server_requests
            .as_ref()
            .map(|s| s.requests.len())
    }

    /// How many KV event batches arrived, and how many the stream's numbers say were
    /// missed ([`RecordOptions::kv_events`]); `None` without a subscriber, or when its
    /// file could not be read.
    pub fn kv_batches(&self) -> Option<(u64, u64)> {
        self.received
            .kv_events
            .as_ref()
            .map(|k| (k.batches, k.missed_batches()))
    }

    /// How many engine steps the server's step file gave within the recording
    /// ([`RecordOptions::steps`]); `None` without it, or when no copy could be read (a
    /// note says why).
    pub fn steps(&self) -> Option<u64> {
        self.received.steps.as_ref().map(|s| s.steps)
    }

    /// The engine the server runs.
    pub fn engine(&self) -> Engine {
        self.finished.engine
    }

    /// The server's address.
    pub fn url(&self) -> &str {
        &self.finished.url
    }

    /// When the before reading was taken, Unix seconds.
    pub fn before_t_wall(&self) -> Option<f64> {
        self.finished.before.t_wall
    }

    /// When the after reading was taken (Unix seconds, when known), or why it could
    /// not be (an [`ErrorKind::Server`] error).
    pub fn after(&self) -> Result<Option<f64>, &Error> {
        match &self.after_error {
            Some(error) => Err(error),
            None => Ok(self.finished.after.as_ref().ok().and_then(|a| a.t_wall)),
        }
    }

    /// How the recording went.
    pub fn health(&self) -> &Health {
        &self.health
    }

    /// What a reader should know: lines a scrape could not read, gaps, restarts.
    pub fn notes(&self) -> &[String] {
        &self.finished.notes
    }
}

fn server_error(error: inferlint_live::RecordError, url: &str) -> Error {
    let error = Error::from_record(error);
    match error.kind() {
        ErrorKind::Server | ErrorKind::Engine => error.with_input(url),
        _ => error,
    }
}

/// The stop-future form: [`Recorder::start`], then [`Recorder::finish`] once `stop`
/// resolves (or the duration passes). A load started beside it may run ahead of the
/// before reading; start the load after [`Recorder::start`] returns instead.
#[deprecated(
    note = "use Recorder::start and Recorder::finish: the load then starts after the before reading"
)]
pub async fn record(
    url: &str,
    options: &RecordOptions,
    stop: impl Future<Output = ()>,
) -> Result<Recording, Error> {
    let recorder = Recorder::start(url, options.clone()).await?;
    let ended = recorder.ended();
    let stop = std::pin::pin!(stop);
    let ended = std::pin::pin!(ended);
    first_of(stop, ended).await;
    Ok(recorder.finish().await)
}

/// Resolves when either future does.
async fn first_of(
    mut a: std::pin::Pin<&mut impl Future<Output = ()>>,
    mut b: std::pin::Pin<&mut impl Future<Output = ()>>,
) {
    std::future::poll_fn(|cx| {
        if a.as_mut().poll(cx).is_ready() || b.as_mut().poll(cx).is_ready() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
}

/// The blocking face of the recorder, for a program without an async runtime.
///
/// Nothing here may be called inside an async runtime (it would block the runtime's
/// thread, and tokio panics when a runtime is started inside another): there it returns
/// an error of kind [`crate::ErrorKind::InsideRuntime`]. From async code, use
/// [`crate::live::Recorder`].
pub mod blocking {
    use std::future::Future;

    use super::{RecordOptions, Recorder, Recording};
    use crate::error::Error;

    /// Records the server at `url` on a runtime of its own on the calling thread: the
    /// before reading, the series until `stop` resolves (a [`super::Stop::stopped`]
    /// future stopped from another thread, a timer) or the duration passes, then the
    /// after reading. Errors are [`Recorder::start`]'s; what comes after is in the
    /// recording.
    ///
    /// # Blocking
    ///
    /// Blocks the calling thread for the whole recording: from the before reading until
    /// `stop` resolves or the duration passes, then the after reading (and, with
    /// [`RecordOptions::spans`], up to 12 s more for the server's last spans). Inside an
    /// async runtime it returns [`ErrorKind::InsideRuntime`](crate::ErrorKind::InsideRuntime)
    /// at once instead: use [`Recorder`] there.
    pub fn record(
        url: &str,
        options: &RecordOptions,
        stop: impl Future<Output = ()>,
    ) -> Result<Recording, Error> {
        let runtime = inferlint_live::blocking::own_runtime().map_err(Error::from_record)?;
        runtime.block_on(async {
            let recorder = Recorder::start(url, options.clone()).await?;
            let ended = recorder.ended();
            super::first_of(std::pin::pin!(stop), std::pin::pin!(ended)).await;
            Ok(recorder.finish().await)
        })
    }
}
