//! Records a running vLLM, SGLang or TensorRT-LLM server: one snapshot of its counters,
//! a series sampled on a schedule while a load runs, and a probe of a few real requests.
//!
//! Key design decision: this is the only crate that touches the network, and it reads
//! nothing back from disk. It turns each scrape into the same run model and the same file
//! lines that `inferlint-engines` reads (through `files::snapshot_json`,
//! `files::series_sample_json` and `record::sample_from_metrics`), so a recording made
//! here and a recording read from a file can never disagree. The file readers, benches and
//! fuzz target stay free of tokio and hyper.
//!
//! The decisions that a test should pin without a network or a clock are plain functions:
//! the sampling schedule and its statistics ([`schedule`]), the gap and restart records
//! ([`watch::gap_json`], [`watch::restart_json`]) and the probe's verdict
//! ([`probe::verdict`]).

pub mod clock;
pub mod http;
pub mod probe;
pub mod schedule;
pub mod scrape;
pub mod verdicts;
pub mod watch;

use std::future::Future;

pub use http::{BaseUrl, HttpClient, HttpError};
pub use scrape::{NoMetrics, Scrape, ScrapeError, Scraper};

/// A tokio runtime on the calling thread: everything here runs one request or one
/// burst at a time, so one thread is enough and keeps the recorder's CPU cost small.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// A future that resolves when the process gets SIGINT or SIGTERM (Ctrl-C, or
/// `kill %1` in the tutorial); elsewhere than Unix, only Ctrl-C. The handlers are
/// installed by this call, not when the future is first polled, so a signal that arrives
/// in between is not lost. Call it inside a runtime (`Runtime::enter`).
pub fn interrupted() -> impl Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let handlers = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        );
        async move {
            let (Ok(mut int), Ok(mut term)) = handlers else {
                // No handler could be installed: the default action ends the process
                // as it would have without us.
                return std::future::pending().await;
            };
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// The blocking face of this crate, for a command line: one runtime on the calling
/// thread and one HTTP client whose connections stay open between requests.
#[derive(Debug)]
pub struct Recorder {
    runtime: tokio::runtime::Runtime,
    client: HttpClient,
}

impl Recorder {
    pub fn new() -> std::io::Result<Recorder> {
        let runtime = runtime()?;
        let client = {
            let _inside = runtime.enter();
            HttpClient::new()
        };
        Ok(Recorder { runtime, client })
    }

    /// A scraper of the server at `base`.
    pub fn scraper(&self, base: BaseUrl) -> Scraper {
        Scraper::new(self.client.clone(), base)
    }

    /// Scrapes once; the recording's first scrape must find an engine's metrics.
    pub fn first_scrape(
        &self,
        scraper: &mut Scraper,
    ) -> Result<(Scrape, inferlint_core::Engine), NoMetrics> {
        self.runtime.block_on(scrape::first_scrape(scraper))
    }

    /// Records until the duration ends or SIGINT/SIGTERM arrives (see [`watch::watch`]).
    /// The signal handlers are installed here, before the first wait.
    pub fn watch<W: std::io::Write>(
        &self,
        scraper: &mut Scraper,
        first: Scrape,
        engine: inferlint_core::Engine,
        options: &watch::WatchOptions,
        out: &mut W,
        on_event: impl FnMut(watch::Event<'_>, &watch::Progress),
    ) -> std::io::Result<watch::Progress> {
        self.watch_observed(
            scraper,
            first,
            engine,
            options,
            out,
            on_event,
            &mut watch::NoObserver,
        )
    }

    /// [`Recorder::watch`], with an observer that adds readings to each sample and sees
    /// it (the GPUs, the live verdicts).
    #[expect(
        clippy::too_many_arguments,
        reason = "watch's inputs plus the observer; a struct would only rename them"
    )]
    pub fn watch_observed<W: std::io::Write>(
        &self,
        scraper: &mut Scraper,
        first: Scrape,
        engine: inferlint_core::Engine,
        options: &watch::WatchOptions,
        out: &mut W,
        on_event: impl FnMut(watch::Event<'_>, &watch::Progress),
        observer: &mut dyn watch::Observer,
    ) -> std::io::Result<watch::Progress> {
        let stop = {
            let _inside = self.runtime.enter();
            interrupted()
        };
        self.runtime.block_on(watch::watch_observed(
            scraper, first, engine, options, out, stop, on_event, observer,
        ))
    }

    /// Runs the probe (see [`probe::probe`]).
    pub fn probe(&self, base: &BaseUrl, options: &probe::ProbeOptions) -> probe::ProbeReport {
        self.runtime
            .block_on(probe::probe(&self.client, base, options))
    }
}
