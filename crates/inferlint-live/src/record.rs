//! What a whole recording in one call takes and gives: the before reading, a series
//! sampled while the load runs, and the after reading, held in memory (and written to a
//! run folder when asked), ready to be checked. The call itself,
//! [`record`](crate::session::record), sits beside the session it runs.
//!
//! It is async and takes the stop as a future, so a harness runs it beside its own load on its own runtime and stops it when the load ends. It installs no signal
//! handler: a caller that wants Ctrl-C to stop it passes [`crate::interrupted`] (or its
//! own future) as the stop.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use inferlint_core::judging::checks::series::SeriesStats;
use inferlint_core::model::{SeriesSample, Snapshot};
use inferlint_core::Engine;
use inferlint_engines::files;
use inferlint_engines::load::Mismatch;
use inferlint_engines::output::{self, OutputError, Rule};

use crate::scrape::{NoMetrics, ScrapeError};
use crate::watch::{self, Progress};

/// How to record.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RecordOptions {
    /// Time between two readings of the series (0.25 s unless set).
    pub interval: Duration,
    /// Stop after this long even if the stop future has not resolved.
    pub duration: Option<Duration>,
    /// The engine the server must run; a server of another engine is refused.
    pub engine: Option<Engine>,
    /// A run folder to write the recording into as it is made (`before.snapshot.json`,
    /// `run.series.jsonl`, `after.snapshot.json`, the files `inferlint report DIR`
    /// reads); it is created when missing and must hold none of these files.
    pub folder: Option<PathBuf>,
    /// The concurrency the load asks for, which the mid-run verdicts judge T8 against.
    pub requested: Option<u64>,
    /// Whether the run is meant to reuse prompt prefixes (T16's mid-run verdict).
    pub expect_cache_hits: bool,
    /// What each scrape of the series after the first asks of the server (only the
    /// samples a recording reads, unless set).
    pub pages: crate::watch::Pages,
}

impl Default for RecordOptions {
    fn default() -> RecordOptions {
        RecordOptions {
            interval: Duration::from_millis(250),
            duration: None,
            engine: None,
            folder: None,
            requested: None,
            expect_cache_hits: false,
            pages: crate::watch::Pages::default(),
        }
    }
}

impl RecordOptions {
    /// The time between two readings (from [`watch::MIN_INTERVAL`] to
    /// [`watch::MAX_INTERVAL`]).
    pub fn interval(mut self, interval: Duration) -> RecordOptions {
        self.interval = interval;
        self
    }

    /// The longest the recording may run.
    pub fn duration(mut self, duration: Duration) -> RecordOptions {
        self.duration = Some(duration);
        self
    }

    /// Refuse a server of another engine.
    pub fn engine(mut self, engine: Engine) -> RecordOptions {
        self.engine = Some(engine);
        self
    }

    /// The concurrency the load asks for (the mid-run verdict of T8).
    pub fn requested(mut self, requested: u64) -> RecordOptions {
        self.requested = Some(requested);
        self
    }

    /// A run meant to reuse prompt prefixes (the mid-run verdict of T16).
    pub fn expect_cache_hits(mut self, expect: bool) -> RecordOptions {
        self.expect_cache_hits = expect;
        self
    }

    /// Also write the recording into this run folder.
    pub fn folder(mut self, folder: impl Into<PathBuf>) -> RecordOptions {
        self.folder = Some(folder.into());
        self
    }

    /// What each scrape of the series after the first asks of the server.
    pub fn pages(mut self, pages: crate::watch::Pages) -> RecordOptions {
        self.pages = pages;
        self
    }
}

/// What a recording holds.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The engine the server runs, from its metric names.
    pub engine: Engine,
    /// The server's address.
    pub url: String,
    /// The reading taken before the series.
    pub before: Snapshot,
    /// The reading taken after it.
    pub after: Snapshot,
    /// The series folded for the checks.
    pub series: SeriesStats,
    /// Every sample of the series, in order (about 100 bytes each: a day at 4 Hz holds
    /// some 35 MB).
    pub samples: Vec<SeriesSample>,
    /// The time between two readings, in seconds.
    pub interval_s: f64,
    /// What the recorder counted: samples, failed scrapes, gaps, restarts.
    pub progress: Progress,
    /// What a reader should know: lines a scrape could not read, gaps, restarts.
    pub notes: Vec<String>,
}

/// Why a recording could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// An interval outside what the recorder keeps.
    #[error("an interval of {} s is outside {} s to {} s", .0.as_secs_f64(), watch::MIN_INTERVAL.as_secs_f64(), watch::MAX_INTERVAL.as_secs_f64())]
    Interval(Duration),
    /// A duration of zero, or longer than the recorder runs.
    #[error("a duration of {} s is outside what a recording runs (more than 0 s, at most {} days)", .0.as_secs_f64(), watch::MAX_DURATION.as_secs() / 86_400)]
    Duration(Duration),
    /// The address is not one a server can have.
    #[error("{0}")]
    Address(#[from] crate::http::BaseUrlError),
    /// No engine's metrics at the address.
    #[error("{}", .error.message(*.named))]
    NoMetrics {
        /// What the first scrape found.
        error: NoMetrics,
        /// The engine asked for, whose hint the message gives.
        named: Option<Engine>,
    },
    /// The server runs another engine than the one asked for.
    #[error("{0}")]
    Mismatch(Mismatch),
    /// The after reading could not be taken.
    #[error("cannot take the after reading: {0}")]
    After(ScrapeError),
    /// A file of the run folder may not or could not be written.
    #[error("{0}")]
    Output(#[from] OutputError),
    /// The series could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The series file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// A blocking call made inside an async runtime, where it would block the runtime's
    /// thread (tokio refuses by panicking): await the async function instead.
    #[error("the blocking recorder cannot run inside an async runtime; await inferlint_live::record instead")]
    InsideRuntime,
    /// The blocking recorder's own runtime could not start.
    #[error("cannot start the recorder's runtime: {0}")]
    Runtime(io::Error),
}

/// The file names a recording is written under, as xray names them.
pub const BEFORE_FILE: &str = "before.snapshot.json";
/// See [`BEFORE_FILE`].
pub const SERIES_FILE: &str = "run.series.jsonl";
/// See [`BEFORE_FILE`].
pub const AFTER_FILE: &str = "after.snapshot.json";

pub(crate) fn write_snapshot(path: &Path, snapshot: &Snapshot) -> Result<(), RecordError> {
    output::write_file(path, files::snapshot_json(snapshot).as_bytes(), &Rule::NEW)?;
    Ok(())
}
