//! Records a running vLLM, SGLang or TensorRT-LLM server: one snapshot of its counters,
//! a series sampled on a schedule while a load runs, and a probe of a few real requests.
//!
//! It also subscribes to an engine's KV-cache event stream (ZeroMQ, [`kv_events`]) and
//! writes what arrives, holes stated, on a thread and runtime of its own; and to the
//! engines' native forward-pass metrics stream ([`fpm`]), written as a step file.
//!
//! Key design decision: this is the only crate that touches the network, and it reads
//! nothing back from disk (but the step file a server writes, which
//! [`steps_follow`] copies as bytes, parsing only its header). It turns each scrape into the same run model and the same file
//! lines that `inferlint-engines` reads (through `files::snapshot_json`,
//! `files::series_sample_json` and `record::sample_from_metrics`), so a recording made
//! here and a recording read from a file can never disagree. The file readers, benches and
//! fuzz target stay free of tokio and hyper.
//!
//! The API is async first: [`Session::start`] takes the before reading and returns, the
//! series runs on a task while the caller's load runs, and [`Session::finish`] takes the
//! after reading and returns whatever was read, failures included. [`record()`] is the
//! same in one call, ending when the caller's stop future resolves, all or nothing.
//! [`blocking`] wraps it for a program without a runtime, and refuses (with an error, not
//! a panic) to run inside one. Nothing here installs a signal handler unless the caller
//! asks for one with [`interrupted`].
//!
//! [`drain::Drainer`] drains the endpoints that forget what they return (TensorRT-LLM's
//! `/perf_metrics` and `/kv_cache_events`) on a thread of its own, into the same files.
//!
//! [`steps_follow::StepsFollower`] follows the step file a vLLM server's plugin writes
//! (`INFERLINT_STEPS`) for the window of a recording, into the run folder's copy.
//!
//! [`otlp::OtlpReceiver`] receives the OpenTelemetry spans a server exports during a run
//! (gRPC and OTLP/HTTP on 127.0.0.1, on a thread and runtime of its own) and writes them
//! to a file that `inferlint-engines` reads back.
//!
//! The decisions that a test should pin without a network or a clock are plain functions:
//! the sampling schedule and its statistics ([`schedule`]), the gap and restart records
//! ([`watch::gap_json`], [`watch::restart_json`]) and the probe's verdict
//! ([`probe::verdict`]).

#![deny(missing_docs)]

pub mod blocking;
pub mod clock;
pub mod drain;
pub mod fleet_watch;
pub mod fpm;
pub mod http;
pub mod kv_events;
pub mod otlp;
pub mod probe;
pub mod prometheus;
mod receiving;
pub mod record;
pub mod schedule;
pub mod scrape;
pub mod server;
pub mod session;
pub mod steps_follow;
pub mod stop;
pub mod verdicts;
pub mod watch;

use std::future::Future;

pub use blocking::Recorder;
pub use http::{BaseUrl, BaseUrlError, HttpClient, HttpError};
pub use otlp::{Listen, OtlpError, OtlpOptions, OtlpReceiver, OtlpSummary};
pub use record::{RecordError, RecordOptions, Recording};
pub use scrape::{NoMetrics, Scrape, ScrapeError, Scraper};
pub use session::record;
pub use session::{Finished, LiveEvent, LiveEvents, Session};
pub use stop::Stop;

/// A tokio runtime on the calling thread: everything here runs one request or one
/// burst at a time, so one thread is enough and keeps the recorder's CPU cost small.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// A future that resolves when the process gets SIGINT or SIGTERM (Ctrl-C, or
/// `kill %1` in the tutorial); elsewhere than Unix, only Ctrl-C.
///
/// Calling it installs handlers for both signals, for the rest of the process: from then
/// on neither ends the process by itself, whether or not the future is still polled. Only
/// a program that owns the process (a command line) should call it; nothing else in this
/// crate does. The handlers are installed by this call, not when the future is first
/// polled, so a signal that arrives in between is not lost. Call it inside a runtime
/// (`Runtime::enter`).
pub fn interrupted() -> impl Future<Output = ()> {
    let mut interrupts = interrupts();
    async move { interrupts.next().await }
}

/// [`interrupted`] for a program that answers more than one signal (a second Ctrl-C that
/// stops at once): the same handlers, kept between signals, so that a second signal
/// that arrives while the first is being answered waits for the next call to
/// [`Interrupts::next`] instead of being lost. Call it inside a runtime (`Runtime::enter`).
pub fn interrupts() -> Interrupts {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(int), Ok(term)) => Interrupts(Some((int, term))),
            // No handler could be installed: the default action ends the process as it
            // would have without us.
            _ => Interrupts(None),
        }
    }
    #[cfg(not(unix))]
    {
        Interrupts(())
    }
}

/// The process's SIGINT and SIGTERM handlers, one signal at a time ([`interrupts`]).
#[derive(Debug)]
pub struct Interrupts(
    #[cfg(unix)] Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
    #[cfg(not(unix))] (),
);

impl Interrupts {
    /// Resolves at the next SIGINT or SIGTERM, including one that arrived since the last
    /// call returned.
    pub async fn next(&mut self) {
        #[cfg(unix)]
        {
            let Some((int, term)) = &mut self.0 else {
                return std::future::pending().await;
            };
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}
