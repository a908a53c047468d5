//! A recording in two calls, for a harness that runs its own load: [`Session::start`]
//! returns once the before reading is taken (the load may start from then on without
//! racing it), [`Session::finish`] stops the series, takes the after reading and always
//! returns what was recorded, whatever failed on the way. [`Session::events`] streams
//! what happens in between: each sample, each gap and why, each restart, each verdict of
//! the mid-run tripwires that changed.
//!
//! The series runs as a task of the caller's tokio runtime, so the caller's own code may
//! block or run its load while it samples.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use inferlint_core::judging::checks::series::SeriesStats;
use inferlint_core::model::{SeriesSample, Snapshot};
use inferlint_core::Engine;
use inferlint_engines::load::{Mismatch, NamedBy, Source};
use inferlint_engines::output::{self, Rule, StreamFile};
use tokio::sync::mpsc;

use crate::http::{BaseUrl, HttpClient};
use crate::record::{
    write_snapshot, RecordError, RecordOptions, Recording, AFTER_FILE, BEFORE_FILE, SERIES_FILE,
};
use crate::scrape::{self, ScrapeError, Scraper};
use crate::stop::Stop;
use crate::verdicts::{LiveVerdicts, VerdictChange};
use crate::watch::{
    self, Event, Observer, Progress, StopMidScrape, WatchOptions, MAX_DURATION, MAX_INTERVAL,
    MIN_INTERVAL,
};

/// Something that happened while the series was recorded.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum LiveEvent {
    /// A sample, as the series holds it.
    Sample(Box<SeriesSample>),
    /// A scrape that failed, with why.
    Failed(String),
    /// Slots that passed unsampled because a scrape ran past them, with how many.
    Overrun(String),
    /// The server restarted, and how that showed.
    Restart(String),
    /// The first scrape with lines that could not be read, and what they were.
    Skipped(String),
    /// A verdict of a mid-run tripwire that changed.
    Verdict(Box<VerdictChange>),
}

/// The events of one session, as they happen. Ends once the session is finished.
#[derive(Debug)]
pub struct LiveEvents {
    receiver: Option<mpsc::UnboundedReceiver<LiveEvent>>,
}

impl LiveEvents {
    /// The next event, or `None` once the series has ended (or the events were taken
    /// before).
    pub async fn next(&mut self) -> Option<LiveEvent> {
        match &mut self.receiver {
            Some(receiver) => receiver.recv().await,
            None => None,
        }
    }

    /// The next event if one is waiting, without waiting.
    pub fn try_next(&mut self) -> Option<LiveEvent> {
        self.receiver.as_mut()?.try_recv().ok()
    }
}

/// What the series task holds, shared so that nothing it read is lost with it.
#[derive(Debug, Default)]
struct Collected {
    series: SeriesStats,
    samples: Vec<SeriesSample>,
    notes: Vec<String>,
    progress: Progress,
    /// Sends the events once [`Session::events`] was called; until then none is kept.
    sender: Option<mpsc::UnboundedSender<LiveEvent>>,
}

impl Collected {
    fn send(&mut self, event: LiveEvent) {
        if let Some(sender) = &self.sender {
            // A receiver dropped: nobody listens any more.
            if sender.send(event).is_err() {
                self.sender = None;
            }
        }
    }
}

fn lock(shared: &Mutex<Collected>) -> MutexGuard<'_, Collected> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Judges the mid-run tripwires on each sample, and sends the changes.
#[derive(Debug)]
struct VerdictObserver {
    verdicts: LiveVerdicts,
    shared: Arc<Mutex<Collected>>,
}

impl VerdictObserver {
    fn tell(&self, changes: Vec<VerdictChange>) {
        let mut shared = lock(&self.shared);
        for change in changes {
            shared.send(LiveEvent::Verdict(Box::new(change)));
        }
    }
}

impl Observer for VerdictObserver {
    fn sampled(&mut self, sample: &SeriesSample, scrape: &Snapshot) {
        let changes = self.verdicts.push(sample, scrape);
        self.tell(changes);
    }

    fn ended(&mut self, last: &Snapshot) {
        self.verdicts.last_scrape(last);
        let changes = self.verdicts.finish();
        self.tell(changes);
    }
}

/// What the series task gives back.
#[derive(Debug)]
struct Ended {
    scraper: Scraper,
    /// Why the series file could not be written, when it could not.
    write_error: Option<String>,
}

/// Stops the series when dropped: a session dropped without [`Session::finish`] leaves no
/// task scraping the server for the rest of the process.
#[derive(Debug)]
struct StopOnDrop(Stop);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// A recording under way (see the module's docs). Dropped without [`Session::finish`],
/// its series stops (what it read is dropped with it).
#[derive(Debug)]
pub struct Session {
    engine: Engine,
    url: String,
    before: Snapshot,
    interval: Duration,
    folder: Option<PathBuf>,
    stop: StopOnDrop,
    /// Stopped once the series task has ended, by itself or stopped.
    done: Stop,
    shared: Arc<Mutex<Collected>>,
    task: tokio::task::JoinHandle<Ended>,
}

/// What a finished session holds: everything read, and what went wrong.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The engine the server runs, from its metric names.
    pub engine: Engine,
    /// The server's address.
    pub url: String,
    /// The reading taken before the series.
    pub before: Snapshot,
    /// The reading taken after it, or why it could not be taken.
    pub after: Result<Snapshot, ScrapeError>,
    /// The series folded for the checks.
    pub series: SeriesStats,
    /// Every sample of the series, in order.
    pub samples: Vec<SeriesSample>,
    /// The time between two readings.
    pub interval: Duration,
    /// What the recorder counted: samples, failed scrapes, gaps, restarts.
    pub progress: Progress,
    /// What a reader should know: lines a scrape could not read, gaps, restarts.
    pub notes: Vec<String>,
    /// Why a file of the run folder asked for could not be written, when one could not
    /// (the recording in memory is whole all the same).
    pub write_error: Option<String>,
}

/// Refuses an interval or a duration the recorder cannot keep.
pub fn check_options(options: &RecordOptions) -> Result<(), RecordError> {
    if options.interval < MIN_INTERVAL || options.interval > MAX_INTERVAL {
        return Err(RecordError::Interval(options.interval));
    }
    if let Some(duration) = options.duration {
        if duration.is_zero() || duration > MAX_DURATION {
            return Err(RecordError::Duration(duration));
        }
    }
    Ok(())
}

impl Session {
    /// Takes the before reading of the server at `url` and starts the series on the
    /// current tokio runtime (time and I/O drivers on); returns once the before reading
    /// is taken (and written, with [`RecordOptions::folder`]). Errors: the options
    /// ([`RecordError::Interval`], [`RecordError::Duration`]), the address, no engine's
    /// metrics, another engine than the one asked for, a file of the folder that exists
    /// or cannot be written.
    pub async fn start(url: &str, options: &RecordOptions) -> Result<Session, RecordError> {
        check_options(options)?;
        let base = BaseUrl::parse(url).map_err(RecordError::Address)?;
        let mut scraper = Scraper::new(HttpClient::new(), base.clone());
        let (first, engine) =
            scrape::first_scrape(&mut scraper)
                .await
                .map_err(|error| RecordError::NoMetrics {
                    error,
                    named: options.engine,
                })?;
        if let Some(named) = options.engine.filter(|named| *named != engine) {
            return Err(RecordError::Mismatch(Mismatch {
                named,
                by: NamedBy::Caller,
                source: Source::Server(base.to_string()),
                found: engine,
            }));
        }
        let mut collected = Collected::default();
        if let Some(skipped) = &first.skipped {
            collected.notes.push(format!("{}: {skipped}", first.url));
        }
        let series_file: Option<StreamFile> = match &options.folder {
            Some(folder) => {
                write_snapshot(&folder.join(BEFORE_FILE), &first.snapshot)?;
                Some(output::create_stream(
                    &folder.join(SERIES_FILE),
                    &Rule::NEW,
                )?)
            }
            None => None,
        };
        let before = first.snapshot.clone();
        let shared = Arc::new(Mutex::new(collected));
        let stop = Stop::new();
        let done = Stop::new();
        let watch_options = WatchOptions {
            interval: options.interval,
            duration: options.duration,
            pages: options.pages,
        };
        let observer = VerdictObserver {
            verdicts: LiveVerdicts::new(engine, options.requested, None, options.expect_cache_hits),
            shared: Arc::clone(&shared),
        };
        let task = {
            let shared = Arc::clone(&shared);
            let stopped = stop.stopped();
            let done = done.clone();
            let path = options.folder.as_ref().map(|f| f.join(SERIES_FILE));
            tokio::spawn(async move {
                let mut observer = observer;
                let on_event = |event: Event<'_>, progress: &Progress| {
                    let mut shared = lock(&shared);
                    shared.progress = progress.clone();
                    let event = match event {
                        Event::Sample(sample) => {
                            shared.series.push(sample);
                            shared.samples.push(*sample);
                            LiveEvent::Sample(Box::new(*sample))
                        }
                        Event::Gap(reason) => {
                            shared.notes.push(format!("gap: {reason}"));
                            LiveEvent::Failed(reason.to_owned())
                        }
                        Event::Missed(reason) => {
                            shared.notes.push(format!("gap: {reason}"));
                            LiveEvent::Overrun(reason.to_owned())
                        }
                        Event::Restart(what) => {
                            shared.notes.push(format!("the server restarted ({what})"));
                            LiveEvent::Restart(what.to_owned())
                        }
                        Event::Skipped(what) => {
                            shared.notes.push(what.to_owned());
                            LiveEvent::Skipped(what.to_owned())
                        }
                    };
                    shared.send(event);
                };
                let write_failed = |error: std::io::Error| {
                    let path = path.as_deref().unwrap_or(std::path::Path::new(SERIES_FILE));
                    format!("cannot write {}: {error}", path.display())
                };
                let (written, file) = match series_file {
                    Some(mut file) => {
                        let written = watch::watch_session(
                            &mut scraper,
                            first,
                            engine,
                            &watch_options,
                            &mut file,
                            stopped,
                            on_event,
                            &mut observer,
                            StopMidScrape::NoGap,
                        )
                        .await;
                        (written, Some(file))
                    }
                    None => {
                        let written = watch::watch_session(
                            &mut scraper,
                            first,
                            engine,
                            &watch_options,
                            &mut std::io::sink(),
                            stopped,
                            on_event,
                            &mut observer,
                            StopMidScrape::NoGap,
                        )
                        .await;
                        (written, None)
                    }
                };
                let mut write_error = None;
                match written {
                    Ok(progress) => lock(&shared).progress = progress,
                    Err(error) => write_error = Some(write_failed(error)),
                }
                if let (Some(file), None) = (&file, &write_error) {
                    write_error = file.sync_all().err().map(write_failed);
                }
                done.stop();
                Ended {
                    scraper,
                    write_error,
                }
            })
        };
        Ok(Session {
            engine,
            url: base.to_string(),
            before,
            interval: options.interval,
            folder: options.folder.clone(),
            stop: StopOnDrop(stop),
            done,
            shared,
            task,
        })
    }

    /// The engine the server runs.
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// The before reading.
    pub fn before(&self) -> &Snapshot {
        &self.before
    }

    /// The events from now on (the first call; a later one's stream is empty). Until
    /// this is called none is kept, so a session nobody listens to holds no queue.
    pub fn events(&mut self) -> LiveEvents {
        let mut shared = lock(&self.shared);
        if shared.sender.is_some() {
            return LiveEvents { receiver: None };
        }
        let (sender, receiver) = mpsc::unbounded_channel();
        shared.sender = Some(sender);
        LiveEvents {
            receiver: Some(receiver),
        }
    }

    /// What the recorder counted so far.
    pub fn progress(&self) -> Progress {
        lock(&self.shared).progress.clone()
    }

    /// Resolves once the series has ended: [`RecordOptions::duration`] passed (with no
    /// duration, only once [`Session::finish`] stops it).
    pub fn ended(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.done.stopped()
    }

    /// Stops the series (a scrape under way is abandoned, and is no gap), takes the
    /// after reading, and returns everything recorded: a failed after reading or a file
    /// that could not be written is said in the result, never lost with it.
    pub async fn finish(self) -> Finished {
        self.stop.0.stop();
        let ended = self.task.await;
        let collected = {
            let mut shared = lock(&self.shared);
            // The events end with the series.
            shared.sender = None;
            std::mem::take(&mut *shared)
        };
        let (after, mut write_error) = match ended {
            Ok(mut ended) => {
                let after = ended.scraper.scrape().await.map(|s| s.snapshot);
                (after, ended.write_error)
            }
            Err(error) => (
                Err(ScrapeError::Http {
                    url: self.url.clone(),
                    error: crate::http::HttpError::Other(format!(
                        "the recorder's task ended before the after reading: {error}"
                    )),
                }),
                None,
            ),
        };
        if let (Some(folder), Ok(after)) = (&self.folder, &after) {
            if let Err(error) = write_snapshot(&folder.join(AFTER_FILE), after) {
                write_error.get_or_insert(error.to_string());
            }
        }
        Finished {
            engine: self.engine,
            url: self.url,
            before: self.before,
            after,
            series: collected.series,
            samples: collected.samples,
            interval: self.interval,
            progress: collected.progress,
            notes: collected.notes,
            write_error,
        }
    }
}

/// Records the server at `url`: a before reading, a series every `options.interval`
/// until `stop` resolves (or `options.duration` passes), then an after reading. Must be
/// awaited inside a tokio runtime with its time and I/O drivers on. Installs no signal
/// handler. All or nothing: a failed after reading or series file is an error, and what
/// was read is dropped with it; [`Session`] keeps it.
pub async fn record(
    url: &str,
    options: &RecordOptions,
    stop: impl std::future::Future<Output = ()>,
) -> Result<Recording, RecordError> {
    let session = Session::start(url, options).await?;
    let ended = session.ended();
    tokio::select! {
        () = stop => {}
        () = ended => {}
    }
    let finished = session.finish().await;
    if let Some(message) = finished.write_error {
        return Err(RecordError::Write {
            path: options
                .folder
                .as_deref()
                .map_or_else(PathBuf::new, |f| f.join(SERIES_FILE)),
            source: std::io::Error::other(message),
        });
    }
    Ok(Recording {
        engine: finished.engine,
        url: finished.url,
        before: finished.before,
        after: finished.after.map_err(RecordError::After)?,
        series: finished.series,
        samples: finished.samples,
        interval_s: options.interval.as_secs_f64(),
        progress: finished.progress,
        notes: finished.notes,
    })
}
