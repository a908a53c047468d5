//! A run to check: read from a run folder ([`Run::from_dir`]), put together from a
//! harness's own data ([`Run::builder`]), or recorded live (`Run::from_recording`, with
//! the `live` feature).

use std::path::{Path, PathBuf};

use inferlint_core::judging::checks::series::SeriesStats;
use inferlint_core::judging::identity::Admitted;
use inferlint_core::model::client::{ClientAccount, ClientRequest, LoadTool, RequestClock};
use inferlint_core::model::{BootFacts, GpuSampling, SeriesSample, Snapshot};
use inferlint_core::run::{self as core_run, Run as CoreRun};
use inferlint_core::Engine;
use inferlint_engines::load::{self, EngineChoice, NamedBy};
use inferlint_engines::{bootlog, detect, files, record};

use crate::error::{Error, ErrorKind};
use crate::own_data::{GpuReading, RequestRecord};
use crate::report::Report;

/// A benchmark run, read and ready to check with [`Run::check`].
///
/// Whatever a run left is optional: the boot log, the before and after readings of the
/// server's `/metrics`, a series sampled during the run, the load's own account. A check
/// whose input is missing is listed as not checked ([`Report::not_checked`]), never
/// passed.
#[derive(Debug)]
pub struct Run {
    pub(crate) inner: Admitted,
    /// What a reader should know that did not stop the load.
    notes: Vec<String>,
    /// Where the recording can be read again for the HTML report's charts.
    #[cfg_attr(
        not(feature = "report"),
        expect(dead_code, reason = "read by the report")
    )]
    pub(crate) series_source: SeriesSource,
    /// Why a recording has no after reading, when it has none: the checks that need it
    /// say Can't tell, naming it.
    after_missing: Option<String>,
    /// The check with the default options, where reading the run already made it (to
    /// refuse a run on which nothing could be checked): [`Run::check`] hands it out
    /// instead of checking again. A `Run` never changes once read, so it stays true.
    checked: Option<core_run::Checked>,
}

/// How to check a run: [`CheckOptions::default`] and the setters; more options may come
/// in a minor release.
///
/// ```
/// # let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/sim/vllm-hybrid");
/// use inferlint::{CheckOptions, Run};
/// let report = Run::from_dir(dir)?.check_with(&CheckOptions::default().expect_cache_hits(true));
/// # let _ = report;
/// # Ok::<(), inferlint::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckOptions {
    expect_cache_hits: bool,
}

impl CheckOptions {
    /// A run meant to reuse prompt prefixes (a multi-turn or shared-prefix benchmark),
    /// as `inferlint report --expect-cache-hits` checks it: T16 passes a high share of
    /// prompt tokens served from the prefix cache instead of warning.
    pub fn expect_cache_hits(mut self, expect: bool) -> CheckOptions {
        self.expect_cache_hits = expect;
        self
    }
}

/// Where the samples of a run's recording are, for drawing.
#[derive(Debug, Clone, Default)]
#[cfg_attr(
    not(feature = "report"),
    expect(dead_code, reason = "read by the HTML report")
)]
pub(crate) enum SeriesSource {
    /// No recording.
    #[default]
    None,
    /// A series file, read again.
    File(PathBuf),
    /// A series file, and its timeline folded in the checks' pass over it (read again
    /// only when the pass cannot vouch for it).
    #[cfg(feature = "report")]
    Folded(PathBuf, Box<load::Folded<inferlint_report::TimelinePass>>),
    /// Samples held in memory.
    Samples(Vec<SeriesSample>),
}

impl Run {
    /// Reads the run folder `dir` exactly as `inferlint report DIR` does: the boot logs,
    /// the before and after snapshots, the recording, the load tool's result file (any of
    /// the tools `inferlint` reads, told by content) and its console log, found by name
    /// and content. The same refusals: a path that is no folder or holds no run file
    /// ([`ErrorKind::NoRun`]), a damaged or foreign file ([`ErrorKind::Invalid`],
    /// [`ErrorKind::Io`]), files from two engines ([`ErrorKind::Engine`]), snapshots in
    /// the wrong order ([`ErrorKind::Readings`]), files that allow no check at all
    /// ([`ErrorKind::NothingChecked`]).
    ///
    /// The engine is the one the files say; files that say none are read as vLLM's, with
    /// a note ([`Run::notes`]). Unlike the command line, the library reads no
    /// environment variable: name the engine with [`Run::from_dir_as`].
    ///
    /// ```
    /// # let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/sim/vllm-hybrid");
    /// let run = inferlint::Run::from_dir(dir)?;
    /// let report = run.check();
    /// for result in report.results() {
    ///     println!("{} {:?} {}", result.tripwire(), result.status(), result.message());
    /// }
    /// assert_eq!(report.outcome(), inferlint::Outcome::TripwireFailed);
    /// # Ok::<(), inferlint::Error>(())
    /// ```
    ///
    /// # Blocking
    ///
    /// Reads the folder and the run's files on the calling thread, and folds the
    /// recording as it reads it: the longer the recording and the larger the result
    /// file, the longer it blocks. From async code, call it (and [`Run::check`]) inside
    /// `tokio::task::spawn_blocking` or your runtime's equivalent.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Run, Error> {
        Run::from_dir_with(dir.as_ref(), EngineChoice::new(None))
    }

    /// [`Run::from_dir`], with every file refused that came from another engine than
    /// `engine` (as `inferlint report --engine` refuses them).
    ///
    /// # Blocking
    ///
    /// Reads the run's files on the calling thread, as [`Run::from_dir`] does.
    pub fn from_dir_as(dir: impl AsRef<Path>, engine: Engine) -> Result<Run, Error> {
        Run::from_dir_with(
            dir.as_ref(),
            EngineChoice::new(Some((engine, NamedBy::Caller))),
        )
    }

    fn from_dir_with(dir: &Path, mut choice: EngineChoice) -> Result<Run, Error> {
        let found = load::find_run(dir).map_err(Error::from_load)?;
        if found.bench.is_none() {
            refuse_unread_result(dir)?;
        }
        Run::read(&found, &mut choice, None)?.checked_once(&load::given(&found))
    }

    /// The files found (or named), read as one run, with the notes loading left; no
    /// refusal of a run that allows no check (a fleet's replica is listed all the same).
    pub(crate) fn read(
        files: &files::RunFiles,
        choice: &mut EngineChoice,
        requested: Option<u64>,
    ) -> Result<Run, Error> {
        // With the HTML report, its charts are folded in the checks' pass.
        #[cfg(feature = "report")]
        let (inner, charts) = load::load_run_folding(choice, files, requested, None, |ends| {
            inferlint_report::TimelinePass::new(ends.first, ends.last, ends.after)
        })
        .map_err(Error::from_load)?;
        #[cfg(not(feature = "report"))]
        let (inner, _) =
            load::load_run_folding(choice, files, requested, None, |_| None::<SeriesStats>)
                .map_err(Error::from_load)?;
        let run = Run::of_read(inner, choice.take_notes(), files.series.clone());
        #[cfg(feature = "report")]
        let run = run.with_charts(charts);
        Ok(run)
    }

    /// A run the one loader read (admitted), with the notes reading left and the
    /// recording's file, read again for the HTML report's charts.
    pub(crate) fn of_read(inner: Admitted, notes: Vec<String>, series: Option<PathBuf>) -> Run {
        Run {
            inner,
            notes,
            series_source: series.map_or(SeriesSource::None, SeriesSource::File),
            after_missing: None,
            checked: None,
        }
    }

    /// This run, with the timeline its recording file's pass folded for the HTML
    /// report's charts ([`load::load_run_folding`] with
    /// [`TimelinePass`](inferlint_report::TimelinePass)), so that [`Run::html`] reads the
    /// file no more. Nothing changes for a run without a recording file.
    #[cfg(feature = "report")]
    pub(crate) fn with_charts(
        mut self,
        charts: Option<load::Folded<inferlint_report::TimelinePass>>,
    ) -> Run {
        if let (SeriesSource::File(path), Some(charts)) = (&self.series_source, charts) {
            self.series_source = SeriesSource::Folded(path.clone(), Box::new(charts));
        }
        self
    }

    /// A run put together from a harness's own data: the boot log's text, the
    /// `/metrics` text before and after, samples taken during the run, the client's
    /// counts.
    pub fn builder() -> RunBuilder {
        RunBuilder::default()
    }

    /// Checks the run: every check its inputs allow, in the order `inferlint report`
    /// prints them, then each tripwire a missing input left unchecked, and "what limited
    /// this run".
    ///
    /// # Blocking
    ///
    /// No I/O (the run is in memory), but the checks are CPU work on the calling thread
    /// over everything the run holds: from async code, run it with the call that read
    /// the run, inside the same `spawn_blocking`.
    pub fn check(&self) -> Report {
        self.check_with(&CheckOptions::default())
    }

    /// [`Run::check`] with options (see [`CheckOptions`]); it blocks as [`Run::check`]
    /// does.
    pub fn check_with(&self, options: &CheckOptions) -> Report {
        let checked = match &self.checked {
            Some(checked) if *options == CheckOptions::default() => checked.clone(),
            _ => self.checked_with(options),
        };
        Report::new(checked, self.notes.clone())
    }

    /// This run checked once with the default options, and kept so: refused, as every
    /// command refuses it, when no check could give a verdict (naming the inputs
    /// `given`), else the check [`Run::check`] hands out.
    fn checked_once(mut self, given: &[String]) -> Result<Run, Error> {
        let checked = self.checked_with(&CheckOptions::default());
        if let Some(why) = checked.nothing_checked(given) {
            return Err(Error::new(ErrorKind::NothingChecked, why));
        }
        self.checked = Some(checked);
        Ok(self)
    }

    fn checked_with(&self, options: &CheckOptions) -> core_run::Checked {
        core_run::check(
            &self.inner,
            &core_run::CheckOptions {
                run: core_run::RunOptions {
                    expect_cache_hits: options.expect_cache_hits,
                    live_log: false,
                },
                after_missing: self.after_missing.clone(),
            },
        )
    }

    /// [`Run::check_with`] with [`CheckOptions::expect_cache_hits`].
    #[deprecated(note = "use check_with(&CheckOptions::default().expect_cache_hits(true))")]
    pub fn check_expecting_cache_hits(&self) -> Report {
        self.check_with(&CheckOptions::default().expect_cache_hits(true))
    }

    /// The engine the run was read as.
    pub fn engine(&self) -> Engine {
        self.inner.engine.engine
    }

    /// What a reader should know that did not stop the load: lines a snapshot skipped,
    /// gap records in a recording, an engine version inferlint was not tested against,
    /// files read as vLLM's because they did not say.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The run's own load replayed through a scheduler model of its server, set up as the
    /// run was: the per-step cost fitted on the run, the replay's figures beside the
    /// measured ones. [`crate::whatif::predict`] then replays it changed (`inferlint
    /// whatif RUN --set KEY=VALUE`). An [`ErrorKind::Unmodelled`] error says why the model
    /// cannot speak for the run: no per-request records, a hybrid model, a restart, a pool
    /// or running limit the files do not state. The [`crate::whatif`] module is outside
    /// the stable API.
    ///
    /// No I/O: the fit and the replay are CPU work on the calling thread, growing with the
    /// run's requests.
    ///
    /// ```no_run
    /// let run = inferlint::Run::from_dir("runs/kv-too-small")?;
    /// let base = run.whatif()?;
    /// let change = inferlint::whatif::parse_change(run.engine(), "max-num-seqs=2")?;
    /// let p = inferlint::whatif::predict(&base, &[change])?;
    /// println!("preemptions: {:?}", p.predicted.evictions);
    /// # Ok::<(), inferlint::Error>(())
    /// ```
    pub fn whatif(&self) -> Result<crate::whatif::Baseline, Error> {
        inferlint_core::analyses::whatif::baseline(&self.inner).map_err(|why| {
            Error::new(
                ErrorKind::Unmodelled,
                format!("the replay cannot speak for this run: {why}"),
            )
        })
    }
}

/// A harness's own account of its load, in place of a load tool's result file.
///
/// Made with [`ClientSummary::new`] from the four counts, and the setters for the rest;
/// more optional fields may be added in a minor release (it is `#[non_exhaustive]`, so
/// it cannot be written as a struct literal outside this crate). Its fields are public to
/// read:
///
/// ```
/// let client = inferlint::ClientSummary::new(32, 0, 32_000, 99.0).untimed_requests(1);
/// assert_eq!((client.completed, client.untimed_requests), (32, 1));
/// ```
///
/// A duration of 0 (the default) or one that is not finite is read as unknown.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ClientSummary {
    /// Requests that came back whole.
    pub completed: u64,
    /// Requests that failed: an error answer, a timeout, a broken stream.
    pub failed: u64,
    /// Output tokens of the completed requests, as the client counted them.
    pub output_tokens: u64,
    /// The timed span of the load, in seconds.
    pub duration_s: f64,
    /// Prompt tokens of the completed requests, when the client counted them.
    pub input_tokens: Option<u64>,
    /// Requests sent outside the timed span (a test request, a warm-up), which the
    /// server counted too.
    pub untimed_requests: u64,
    /// The concurrency the load kept (T8 checks the server reached it); the builder's
    /// [`RunBuilder::requested`] wins when both are given.
    pub max_concurrency: Option<u64>,
}

impl ClientSummary {
    /// The load's counts: requests that came back whole and that failed, the completed
    /// requests' output tokens, and the timed span in seconds; nothing else known.
    pub fn new(completed: u64, failed: u64, output_tokens: u64, duration_s: f64) -> ClientSummary {
        ClientSummary {
            completed,
            failed,
            output_tokens,
            duration_s,
            ..ClientSummary::default()
        }
    }

    /// The completed requests' prompt tokens, as the client counted them.
    pub fn input_tokens(mut self, tokens: u64) -> ClientSummary {
        self.input_tokens = Some(tokens);
        self
    }

    /// Requests sent outside the timed span (a test request, a warm-up), which the server
    /// counted too.
    pub fn untimed_requests(mut self, requests: u64) -> ClientSummary {
        self.untimed_requests = requests;
        self
    }

    /// The concurrency the load kept (T8); [`RunBuilder::requested`] wins when both are
    /// given.
    pub fn max_concurrency(mut self, concurrency: u64) -> ClientSummary {
        self.max_concurrency = Some(concurrency);
        self
    }
}

impl ClientSummary {
    fn account(&self) -> Result<ClientAccount, Error> {
        let count = |what: &str, n: u64| {
            i64::try_from(n).map_err(|_| {
                Error::invalid_input("the client summary", format!("{what} {n} is too large"))
            })
        };
        let mut account = ClientAccount::new(LoadTool::Harness);
        account.completed = Some(count("completed", self.completed)?);
        account.failed = Some(count("failed", self.failed)?);
        account.sent = Some(count(
            "completed plus failed",
            self.completed.saturating_add(self.failed),
        )?);
        account.total_output_tokens = Some(count("output_tokens", self.output_tokens)?);
        account.total_input_tokens = self
            .input_tokens
            .map(|n| count("input_tokens", n))
            .transpose()?;
        account.duration = Some(self.duration_s).filter(|d| d.is_finite() && *d > 0.0);
        account.output_throughput = account.duration.map(|d| self.output_tokens as f64 / d);
        account.max_concurrency = self
            .max_concurrency
            .map(|n| count("max_concurrency", n))
            .transpose()?;
        account.span.untimed_requests = Some(self.untimed_requests);
        Ok(account)
    }
}

/// Puts a [`Run`] together from data a harness holds (see [`Run::builder`]).
///
/// ```
/// use inferlint::{ClientSummary, Engine, Run};
/// # let before = "vllm:num_requests_running 0\n";
/// # let after = "vllm:num_requests_running 0\n";
/// let run = Run::builder()
///     .engine(Engine::Vllm)
///     .before_metrics_at(before, 1_700_000_000.0)?
///     .after_metrics_at(after, 1_700_000_100.0)?
///     .client(ClientSummary::new(32, 0, 32_000, 99.0))
///     .requested(32)
///     .build()?;
/// let report = run.check();
/// # let _ = report;
/// # Ok::<(), inferlint::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct RunBuilder {
    named: Option<Engine>,
    /// Each input as messages name it, and the engine it said it came from.
    said: Vec<(String, Option<Engine>)>,
    boots: Vec<(String, BootFacts)>,
    /// A boot log that is no server's log: refused by `build`.
    not_a_log: Option<(String, &'static str)>,
    before: Option<Snapshot>,
    after: Option<Snapshot>,
    /// The recording, folded as it comes, with the engine its samples were read as.
    series: Option<(SeriesStats, Engine)>,
    samples: Vec<SeriesSample>,
    last_t_wall: Option<f64>,
    client: Option<ClientSummary>,
    requests: Vec<RequestRecord>,
    requested: Option<u64>,
    notes: Vec<String>,
    after_missing: Option<String>,
    /// The server's own account of each request and its KV event stream, as a
    /// recording's receivers took them.
    server_requests: Option<inferlint_core::model::traces::ServerRequests>,
    kv_events: Option<inferlint_core::model::traces::KvEvents>,
    /// The engine's steps a recording's follower copied.
    steps: Option<inferlint_core::model::steps::Steps>,
}

impl RunBuilder {
    /// Names the engine: an input from another one is refused by [`RunBuilder::build`].
    /// Without it, the engine is the one the inputs say (vLLM when none does, with a
    /// note). Name it before giving samples: they are read through its metric names.
    pub fn engine(mut self, engine: Engine) -> RunBuilder {
        self.named = Some(engine);
        self
    }

    /// Adds a boot log (the server's output from its start), read as `inferlint
    /// check-log` reads one. Several are allowed (T4 and T11 compare starts); the last one
    /// covers the run. Text that is no server's log is refused by [`RunBuilder::build`].
    pub fn boot_log(mut self, text: &str) -> RunBuilder {
        let label = format!("boot log {}", self.boots.len() + 1);
        let from_log = detect::engine_from_log(text);
        let facts = bootlog::parse_boot_log(text, from_log.or(self.named));
        if let Some(why) = bootlog::not_a_boot_log(text, &facts) {
            self.not_a_log.get_or_insert((label.clone(), why));
        }
        self.said.push((label.clone(), from_log));
        self.boots.push((label, facts));
        self
    }

    /// The server's `/metrics` text read before the load, without a clock: the checks
    /// that need the time between the readings (T10's rate) then say Can't tell. Text in
    /// which no sample line reads is an [`ErrorKind::Invalid`] error.
    pub fn before_metrics(self, text: &str) -> Result<RunBuilder, Error> {
        self.reading(text, None, true)
    }

    /// [`RunBuilder::before_metrics`], scraped at `t_wall` (Unix seconds).
    pub fn before_metrics_at(self, text: &str, t_wall: f64) -> Result<RunBuilder, Error> {
        self.reading(text, Some(t_wall), true)
    }

    /// The server's `/metrics` text read after the load (see
    /// [`RunBuilder::before_metrics`]).
    pub fn after_metrics(self, text: &str) -> Result<RunBuilder, Error> {
        self.reading(text, None, false)
    }

    /// [`RunBuilder::after_metrics`], scraped at `t_wall` (Unix seconds).
    pub fn after_metrics_at(self, text: &str, t_wall: f64) -> Result<RunBuilder, Error> {
        self.reading(text, Some(t_wall), false)
    }

    fn reading(
        mut self,
        text: &str,
        t_wall: Option<f64>,
        before: bool,
    ) -> Result<RunBuilder, Error> {
        let what = if before {
            "the before metrics"
        } else {
            "the after metrics"
        };
        let t_wall = match t_wall {
            Some(t) if !t.is_finite() => {
                return Err(Error::invalid_input(what, format!("t_wall {t} is no time")))
            }
            t => t,
        };
        let (mut snapshot, skipped) = files::parse_snapshot_noted(text, Path::new(what))
            .map_err(|e| Error::invalid_input(what, strip_name(&e.to_string(), what)))?;
        if let Some(skipped) = skipped {
            self.notes.push(format!("{what}: {skipped}"));
        }
        if snapshot.t_wall.is_none() {
            snapshot.t_wall = t_wall;
        }
        self.said.push((
            "the snapshots".to_owned(),
            detect::engine_from_metric_names(snapshot.metrics.names()),
        ));
        if before {
            self.before = Some(snapshot);
        } else {
            self.after = Some(snapshot);
        }
        Ok(self)
    }

    /// Adds one reading of `/metrics` taken during the run at `t_wall` (Unix seconds),
    /// folded at once into the series the checks read (T8, T9, T14), as `inferlint
    /// watch` samples a server. Samples come in time order; one that goes back in time,
    /// or text in which no sample line reads, is an [`ErrorKind::Invalid`] error and is
    /// not added.
    pub fn sample_metrics(self, text: &str, t_wall: f64) -> Result<RunBuilder, Error> {
        self.sample(text, t_wall, None)
    }

    /// [`RunBuilder::sample_metrics`], with the reading of the server's GPUs taken with
    /// it (T21). Give one with every sample, or with none.
    pub fn sample_metrics_with_gpu(
        self,
        text: &str,
        t_wall: f64,
        gpu: GpuReading,
    ) -> Result<RunBuilder, Error> {
        self.sample(text, t_wall, Some(gpu))
    }

    fn sample(
        mut self,
        text: &str,
        t_wall: f64,
        gpu: Option<GpuReading>,
    ) -> Result<RunBuilder, Error> {
        let what = format!("the sample at t_wall {t_wall}");
        if !t_wall.is_finite() {
            return Err(Error::invalid_input(&what, "not a time"));
        }
        if let Some(last) = self.last_t_wall.filter(|last| t_wall < *last) {
            return Err(Error::invalid_input(
                &what,
                format!("it is earlier than the sample before it (t_wall {last})"),
            ));
        }
        let snapshot = files::parse_snapshot_noted(text, Path::new(&what))
            .map_err(|e| Error::invalid_input(&what, strip_name(&e.to_string(), &what)))?
            .0;
        let said = detect::engine_from_metric_names(snapshot.metrics.names());
        let engine = match &self.series {
            Some((_, engine)) => *engine,
            None => self
                .named
                .or(said)
                .or_else(|| self.said.iter().find_map(|(_, e)| *e))
                .unwrap_or(Engine::DEFAULT),
        };
        let mut sample =
            record::sample_from_metrics(engine.descriptor(), &snapshot.metrics, t_wall, None);
        if let Some(gpu) = gpu {
            sample.gpu = gpu.inner;
        }
        if self.series.is_none() {
            self.said.push(("the samples".to_owned(), said));
        } else if let Some(said) = said.filter(|s| *s != engine) {
            self.said.push((what, Some(said)));
        }
        let (stats, _) = self
            .series
            .get_or_insert_with(|| (SeriesStats::new(), engine));
        if gpu.is_some() {
            stats.gpu_sampling = Some(GpuSampling::Nvml);
        }
        stats.push(&sample);
        // Held only for the HTML report's charts; the checks read the folded series.
        if cfg!(feature = "report") {
            self.samples.push(sample);
        }
        self.last_t_wall = Some(t_wall);
        Ok(self)
    }

    /// The client's own account of the load (T15, T18, T20; T17 and T19 read its counts
    /// of requests sent and untimed).
    pub fn client(mut self, client: ClientSummary) -> RunBuilder {
        self.client = Some(client);
        self
    }

    /// The client's record of each request it sent (T15, T18, T20 read their times and
    /// tokens: time to first token, the span the load kept the server busy). Without a
    /// [`RunBuilder::client`] summary, the counts are the records': the timed ones that
    /// succeeded, those that failed, their output tokens, the span from the first start
    /// to the last end, the untimed ones. A record that cannot be (ending before it
    /// starts, a first token outside its span) is refused by [`RunBuilder::build`].
    pub fn requests(mut self, requests: impl IntoIterator<Item = RequestRecord>) -> RunBuilder {
        self.requests.extend(requests);
        self
    }

    /// The concurrency the load asked for (T8).
    pub fn requested(mut self, requested: u64) -> RunBuilder {
        self.requested = Some(requested);
        self
    }

    /// The run: every input checked against the engine named and against each other, as
    /// `inferlint report` checks a folder's files. Refused: inputs from two engines or
    /// from another than the one named ([`ErrorKind::Engine`]), a boot log that is no
    /// server's log ([`ErrorKind::Invalid`]), readings in the wrong order
    /// ([`ErrorKind::Readings`]), nothing to check, the client's account alone with
    /// nothing of the server's included ([`ErrorKind::NothingChecked`]).
    pub fn build(self) -> Result<Run, Error> {
        let mut choice = EngineChoice::new(self.named.map(|e| (e, NamedBy::Caller)));
        for (what, said) in &self.said {
            choice.input(what, *said).map_err(Error::from_load)?;
        }
        if let Some((label, why)) = &self.not_a_log {
            return Err(Error::invalid_input(
                label,
                format!("not a server log: {why}"),
            ));
        }
        let engine = choice.resolve();
        if let Some((_, read_as)) = &self.series {
            if *read_as != engine {
                return Err(Error::new(
                    ErrorKind::Engine,
                    format!(
                        "the samples were read as {}'s, but the run is {}'s; name the engine before the first sample",
                        read_as.name(),
                        engine.name()
                    ),
                )
                .with_input("the samples"));
            }
        }
        for facts in self.boots.iter().map(|(_, f)| f) {
            choice.note_version(facts);
        }
        if let (Some(before), Some(after)) = (&self.before, &self.after) {
            if let Some(reason) =
                inferlint_core::judging::checks::counters::out_of_order(before, after)
            {
                return Err(Error::new(
                    ErrorKind::Readings,
                    format!(
                        "the before and the after metrics: {reason}; give the earlier reading first"
                    ),
                )
                .with_input("the before metrics"));
            }
        }
        let records = self
            .requests
            .iter()
            .enumerate()
            .map(|(i, r)| r.client_request(i))
            .collect::<Result<Vec<_>, _>>()?;
        // inferlint checks a load against what the server recorded of it: the client's
        // account alone holds nothing of the server's to hold it against.
        if self.client.is_some() || !self.requests.is_empty() {
            let servers = self.boots.is_empty()
                && self.before.is_none()
                && self.after.is_none()
                && self.series.is_none()
                && self.server_requests.is_none()
                && self.kv_events.is_none();
            if servers {
                return Err(Error::new(
                    ErrorKind::NothingChecked,
                    "only the client's account was given: inferlint checks a run against what the server recorded of it; give its /metrics before and after the load, samples of it during the load, or its boot log".to_owned(),
                )
                .with_input("the client summary"));
            }
        }
        let client = match (&self.client, records.is_empty()) {
            (None, false) => Some(summary_of(&self.requests)),
            (client, _) => client.clone(),
        };
        let mut account = client.as_ref().map(ClientSummary::account).transpose()?;
        if let Some(account) = account.as_mut().filter(|_| !records.is_empty()) {
            let timed: Vec<&ClientRequest> = records
                .iter()
                .zip(&self.requests)
                .filter(|(_, r)| r.is_timed())
                .map(|(c, _)| c)
                .collect();
            account.span.start_s = timed.iter().filter_map(|r| r.sent_s.get()).reduce(f64::min);
            account.span.end_s = timed.iter().filter_map(|r| r.end_s.get()).reduce(f64::max);
            let mut ttft_ms: Vec<f64> = timed
                .iter()
                .filter(|r| r.completed())
                .filter_map(|r| r.ttft_s.get().map(|t| t * 1e3))
                .collect();
            if !ttft_ms.is_empty() {
                ttft_ms.sort_by(f64::total_cmp);
                let at = |q: f64| ttft_ms[((ttft_ms.len() - 1) as f64 * q).round() as usize];
                account.mean_ttft_ms = Some(ttft_ms.iter().sum::<f64>() / ttft_ms.len() as f64);
                account.median_ttft_ms = Some(at(0.5));
                account.p99_ttft_ms = Some(at(0.99));
            }
            account.clock = Some(RequestClock::Unix);
            let timed_records = records
                .into_iter()
                .zip(&self.requests)
                .filter(|(_, r)| r.is_timed())
                .map(|(c, _)| c)
                .collect();
            account.keep_records(timed_records, Vec::new());
        }
        let expected_extra_requests = client.as_ref().map_or(0, |c| c.untimed_requests);
        let requested = self
            .requested
            .or_else(|| client.as_ref().and_then(|c| c.max_concurrency))
            .filter(|n| *n > 0 || self.requested.is_some());
        let mut given: Vec<String> = self.boots.iter().map(|(l, _)| l.clone()).collect();
        given.extend(
            self.before
                .as_ref()
                .map(|_| "the before metrics".to_owned()),
        );
        given.extend(self.after.as_ref().map(|_| "the after metrics".to_owned()));
        given.extend(self.series.as_ref().map(|_| "the samples".to_owned()));
        given.extend(account.as_ref().map(|_| "the client summary".to_owned()));
        let mut notes = self.notes;
        notes.extend(choice.take_notes());
        let inner = inferlint_core::judging::identity::admit(CoreRun {
            engine: engine.descriptor(),
            boots: self.boots,
            before: self.before,
            after: self.after,
            series: self.series.map(|(stats, _)| stats),
            bench: account.map(|a| ("the client summary".to_owned(), a)),
            expected_extra_requests,
            requested,
            load_failure: None,
            rejected: Vec::new(),
            server_requests: self.server_requests,
            kv_events: self.kv_events,
            steps: self.steps,
            notes: Vec::new(),
        });
        // A client summary set aside as another run's says nothing of the concurrency.
        let mut inner = inner;
        if inner.bench.is_none() && self.requested.is_none() {
            inner.set_requested(None);
        }
        notes.extend(inner.notes.iter().cloned());
        let run = Run {
            inner,
            notes,
            series_source: if self.samples.is_empty() {
                SeriesSource::None
            } else {
                SeriesSource::Samples(self.samples)
            },
            after_missing: self.after_missing,
            checked: None,
        };
        run.checked_once(&given)
    }
}

/// A file named as a load tool's result (`bench.json`, `bench.jsonl`) that the folder's
/// search passed over because its content is no tool's (cut short, say): read, so that
/// its error names it, rather than the run checked as if it had none.
fn refuse_unread_result(dir: &Path) -> Result<(), Error> {
    for name in ["bench.json", "bench.jsonl"] {
        let path = dir.join(name);
        if path.is_file() {
            files::read_bench_result(&path)
                .map_err(|e| Error::from_load(load::LoadError::File(e)))?;
        }
    }
    Ok(())
}

/// The counts of a client that gave only its request records.
fn summary_of(requests: &[RequestRecord]) -> ClientSummary {
    let timed: Vec<&RequestRecord> = requests.iter().filter(|r| r.is_timed()).collect();
    let done: Vec<&&RequestRecord> = timed.iter().filter(|r| r.succeeded()).collect();
    let start = timed.iter().map(|r| r.start()).reduce(f64::min);
    let end = timed.iter().map(|r| r.end()).reduce(f64::max);
    ClientSummary {
        completed: done.len() as u64,
        failed: (timed.len() - done.len()) as u64,
        output_tokens: done.iter().filter_map(|r| r.output_tokens()).sum(),
        duration_s: match (start, end) {
            (Some(start), Some(end)) => end - start,
            _ => 0.0,
        },
        input_tokens: done.iter().map(|r| r.input_tokens()).sum::<Option<u64>>(),
        untimed_requests: (requests.len() - timed.len()) as u64,
        max_concurrency: None,
    }
}

/// A file error's message without the pseudo-path it was given (`the before metrics:`),
/// which the library's own message names once already.
fn strip_name(message: &str, what: &str) -> String {
    message
        .strip_prefix(what)
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(message)
        .to_owned()
}

#[cfg(feature = "live")]
#[cfg_attr(docsrs, doc(cfg(feature = "live")))]
impl Run {
    /// A recording made by [`crate::live::Recorder`], with what else the harness knows
    /// (the server's boot log, the client's counts or request records) given through the
    /// builder it returns. The engine is the one the server's metrics named; the
    /// concurrency asked for is [`crate::live::RecordOptions::requested`]'s; the
    /// server's spans and KV events its receivers took
    /// ([`crate::live::RecordOptions::spans`], [`crate::live::RecordOptions::kv_events`])
    /// come with it, placed against the run as a folder's are. A recording whose after
    /// reading failed is checked all the same: the checks that need it say Can't tell,
    /// naming it.
    pub fn from_recording(recording: &crate::live::Recording) -> RunBuilder {
        let finished = &recording.finished;
        RunBuilder {
            named: Some(finished.engine),
            said: vec![("the recording".to_owned(), Some(finished.engine))],
            before: Some(finished.before.clone()),
            after: finished.after.as_ref().ok().cloned(),
            series: Some((finished.series.clone(), finished.engine)),
            samples: if cfg!(feature = "report") {
                finished.samples.clone()
            } else {
                Vec::new()
            },
            last_t_wall: finished.samples.last().map(|s| s.t_wall),
            notes: finished.notes.clone(),
            server_requests: recording.received.server_requests.clone(),
            kv_events: recording.received.kv_events.clone(),
            steps: recording.received.steps.clone(),
            requested: recording.requested,
            after_missing: recording.after_error.as_ref().map(|e| {
                let message = e.to_string();
                message
                    .strip_prefix("cannot take the after reading: ")
                    .unwrap_or(&message)
                    .to_owned()
            }),
            ..RunBuilder::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check a folder's reading kept (to refuse a run with nothing checked) is the
    /// check made afresh: `Run::check` hands out the kept one, options left at default.
    #[test]
    fn the_check_kept_from_reading_is_the_check_made_afresh() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sim");
        let mut folders = 0;
        for entry in std::fs::read_dir(&root).expect("the simulated fixtures") {
            let dir = entry.expect("a fixture").path();
            if !dir.is_dir() {
                continue;
            }
            let run = Run::from_dir(&dir).expect("a simulated run reads");
            assert!(run.checked.is_some(), "{} kept no check", dir.display());
            let fresh = Report::new(
                run.checked_with(&CheckOptions::default()),
                run.notes.clone(),
            );
            assert_eq!(
                format!("{:?}", run.check()),
                format!("{fresh:?}"),
                "{}",
                dir.display()
            );
            folders += 1;
        }
        assert!(
            folders >= 4,
            "only {folders} simulated folders under {}",
            root.display()
        );
    }

    /// A recording whose after reading could not be taken, with nothing but the before
    /// reading beside it: every check is waiting for that reading. The run is checked,
    /// not refused as having nothing checked: what needs the after reading says Can't
    /// tell, naming why, as `report` says it on the same files. Without the reason, the
    /// same inputs leave nothing checked and are refused.
    #[test]
    fn a_failed_after_reading_is_cant_tell_not_nothing_checked() {
        let before = "vllm:request_success_total{finished_reason=\"length\",model_name=\"m\"} 0\n\
                      vllm:num_preemptions_total{model_name=\"m\"} 0\n";
        let refused = Run::builder()
            .before_metrics(before)
            .expect("a vLLM reading")
            .build()
            .expect_err("nothing could be checked");
        assert_eq!(refused.kind(), ErrorKind::NothingChecked, "{refused}");
        let mut builder = Run::builder()
            .before_metrics(before)
            .expect("a vLLM reading");
        builder.after_missing = Some("the server stopped answering".to_owned());
        let report = builder.build().expect("checked, not refused").check();
        let told: Vec<_> = report
            .results()
            .iter()
            .filter(|r| r.status() == crate::Status::Unknown)
            .collect();
        assert!(!told.is_empty(), "{report:?}");
        for result in told {
            assert!(
                result.message().contains(
                    "needs the after reading, which could not be taken: the server stopped answering"
                ),
                "{}",
                result.message()
            );
        }
    }
}
