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

    fn inner(&self) -> inferlint_live::RecordOptions {
        let mut options = inferlint_live::RecordOptions::default().interval(self.interval);
        options.duration = self.duration;
        options.engine = self.engine;
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

/// A recording under way: started by [`Recorder::start`], ended by
/// [`Recorder::finish`]. Dropped without `finish`, its series stops (a scrape under way
/// is abandoned) and what it read is lost.
#[derive(Debug)]
pub struct Recorder {
    session: Session,
    requested: Option<u64>,
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
        let session = Session::start(url, &options.inner())
            .await
            .map_err(|e| server_error(e, url))?;
        Ok(Recorder {
            session,
            requested: options.requested,
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
    pub async fn finish(self) -> Recording {
        let finished = self.session.finish().await;
        Recording::new(finished, self.requested)
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
    health: Health,
}

impl Recording {
    fn new(mut finished: Finished, requested: Option<u64>) -> Recording {
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
            health,
        }
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
    since = "0.1.1",
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
