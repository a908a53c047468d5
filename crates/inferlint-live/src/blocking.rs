//! The blocking face of this crate, for a program without an async runtime (a command
//! line): one runtime on the calling thread, and one HTTP client whose connections stay
//! open between requests.
//!
//! Like `reqwest::blocking`, none of this may run inside an async runtime: it would block
//! the runtime's thread, and tokio refuses to start a runtime inside another by panicking.
//! Here that is an error instead ([`RecordError::InsideRuntime`]): from async code, await
//! [`crate::record()`] instead.

use std::future::Future;
use std::time::Duration;

use inferlint_core::Engine;

use crate::http::{BaseUrl, HttpClient};
use crate::probe::{self, ProbeOptions, ProbeReport};
use crate::record::{RecordError, RecordOptions, Recording};
use crate::scrape::{self, NoMetrics, Scrape, Scraper};
use crate::watch::{self, Event, Progress, WatchOptions};

/// Whether the calling thread is inside a tokio runtime.
fn inside_a_runtime() -> bool {
    tokio::runtime::Handle::try_current().is_ok()
}

/// A runtime of its own on the calling thread, refused inside another.
pub fn own_runtime() -> Result<tokio::runtime::Runtime, RecordError> {
    if inside_a_runtime() {
        return Err(RecordError::InsideRuntime);
    }
    crate::runtime().map_err(RecordError::Runtime)
}

/// [`crate::record()`], blocking until `stop` resolves (or the duration passes): `stop` is
/// polled on the recorder's own runtime (a channel's receiver, a timer, a flag's
/// [`crate::Stop::stopped`]).
pub fn record(
    url: &str,
    options: &RecordOptions,
    stop: impl Future<Output = ()>,
) -> Result<Recording, RecordError> {
    own_runtime()?.block_on(crate::record(url, options, stop))
}

/// One runtime and one client, for a command that makes several requests.
#[derive(Debug)]
pub struct Recorder {
    runtime: tokio::runtime::Runtime,
    client: HttpClient,
}

impl Recorder {
    /// A recorder; [`RecordError::InsideRuntime`] inside an async runtime. Its methods
    /// block on its own runtime: call them outside one too.
    pub fn new() -> Result<Recorder, RecordError> {
        Recorder::on(own_runtime()?)
    }

    fn on(runtime: tokio::runtime::Runtime) -> Result<Recorder, RecordError> {
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
    pub fn first_scrape(&self, scraper: &mut Scraper) -> Result<(Scrape, Engine), NoMetrics> {
        self.runtime.block_on(scrape::first_scrape(scraper))
    }

    /// Records until the duration ends or `stop` resolves (see [`watch::watch`]). A
    /// command that stops on Ctrl-C passes [`crate::interrupted`], made inside
    /// [`Recorder::enter`].
    #[expect(
        clippy::too_many_arguments,
        reason = "watch's own arguments, and the stop"
    )]
    pub fn watch<W: std::io::Write>(
        &self,
        scraper: &mut Scraper,
        first: Scrape,
        engine: Engine,
        options: &WatchOptions,
        out: &mut W,
        stop: impl Future<Output = ()>,
        on_event: impl FnMut(Event<'_>, &Progress),
    ) -> std::io::Result<Progress> {
        self.watch_observed(
            scraper,
            first,
            engine,
            options,
            out,
            stop,
            on_event,
            &mut watch::NoObserver,
        )
    }

    /// [`Recorder::watch`], with an observer that adds readings to each sample and sees
    /// it as it is taken (see [`watch::watch_observed`]): a command's GPU readings and
    /// live verdicts.
    #[expect(
        clippy::too_many_arguments,
        reason = "watch's own arguments, the stop and the observer"
    )]
    pub fn watch_observed<W: std::io::Write>(
        &self,
        scraper: &mut Scraper,
        first: Scrape,
        engine: Engine,
        options: &WatchOptions,
        out: &mut W,
        stop: impl Future<Output = ()>,
        on_event: impl FnMut(Event<'_>, &Progress),
        observer: &mut dyn watch::Observer,
    ) -> std::io::Result<Progress> {
        self.runtime.block_on(watch::watch_observed(
            scraper, first, engine, options, out, stop, on_event, observer,
        ))
    }

    /// Records a fleet on one schedule ([`crate::fleet_watch::watch_fleet`]) until the
    /// duration ends or `stop` resolves; the scrapers must be this recorder's (their
    /// connections live on its runtime).
    pub fn watch_fleet<W: std::io::Write + Send + 'static>(
        &self,
        members: Vec<crate::fleet_watch::Member<W>>,
        engine: Engine,
        options: &WatchOptions,
        sum_out: &mut impl std::io::Write,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<(crate::fleet_watch::FleetProgress, Vec<W>)> {
        self.runtime.block_on(async {
            let handle = crate::Stop::new();
            let stopper = handle.clone();
            let signal = tokio::spawn(async move {
                stop.await;
                stopper.stop();
            });
            let result =
                crate::fleet_watch::watch_fleet(members, engine, options, sum_out, &handle).await;
            signal.abort();
            result
        })
    }

    /// Enters the recorder's runtime, for making a future that must be made inside one
    /// ([`crate::interrupted`]).
    pub fn enter(&self) -> tokio::runtime::EnterGuard<'_> {
        self.runtime.enter()
    }

    /// Runs the probe (see [`probe::probe`]).
    pub fn probe(&self, base: &BaseUrl, options: &ProbeOptions) -> ProbeReport {
        self.runtime
            .block_on(probe::probe(&self.client, base, options))
    }

    /// Whether `GET /health` answers 200 (see [`crate::server::healthy`]).
    pub fn healthy(&self, base: &BaseUrl) -> bool {
        self.runtime
            .block_on(crate::server::healthy(&self.client, base))
    }

    /// Whether `GET /health` answers 200 within `within`, given up when `stop` says so
    /// (see [`crate::server::healthy_within`]).
    pub fn healthy_within(
        &self,
        base: &BaseUrl,
        within: Duration,
        stop: &dyn Fn() -> bool,
    ) -> bool {
        self.runtime.block_on(crate::server::healthy_within(
            &self.client,
            base,
            within,
            stop,
        ))
    }

    /// The version the server reports (see [`crate::server::version`]).
    pub fn version(&self, base: &BaseUrl, engine: Engine) -> Option<String> {
        self.runtime.block_on(crate::server::version(
            &self.client,
            base,
            engine.descriptor(),
        ))
    }
}
