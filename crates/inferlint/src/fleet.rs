//! A fleet: replicas of one server behind one router, each recorded into its own run
//! folder under a fleet folder (`fleet.json` names them), as `inferlint watch URL URL …`
//! and `inferlint report --prometheus` write it. Each replica is checked as its own run;
//! T22 (replicas unevenly loaded) reads every replica's recording again on the fleet's
//! grid.
//!
//! [`Fleet`] holds every replica's run at once; [`FleetReader`] reads and checks one
//! replica at a time and lets its run go before the next, so that a fleet of hundreds of
//! replicas over a day is held in the memory of one replica's run and every replica's
//! report.

use std::path::{Path, PathBuf};

use inferlint_core::checks::series::{SeriesStats, SeriesWindow};
use inferlint_core::fleet_grid::FleetGrid;
use inferlint_core::model::SeriesSample;
use inferlint_core::outcome::worst_of;
use inferlint_core::status::{CheckResult, Outcome};
use inferlint_core::Engine;
use inferlint_engines::files::{self, RunFiles};
use inferlint_engines::fleet::{self, Manifest};
use inferlint_engines::load::{self, EngineChoice, LoadError, NamedBy};

use crate::error::{Error, ErrorKind};
use crate::report::Report;
use crate::run::Run;

/// A fleet folder read: each replica's run, and the grid they were recorded on.
#[derive(Debug)]
pub struct Fleet {
    source: String,
    grid: FleetGrid,
    replicas: Vec<Replica>,
}

/// One replica of a fleet: its name, its folder and its run.
#[derive(Debug)]
pub struct Replica {
    name: String,
    folder: String,
    files: RunFiles,
    run: Run,
}

impl Replica {
    /// The replica's name, as the manifest gives it (its address, say).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The replica's folder, relative to the fleet folder.
    pub fn folder(&self) -> &str {
        &self.folder
    }

    /// The replica's run.
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// The files the replica's run was read from (outside the API, as [`Run::model`] is:
    /// the engines crate's type, for the command line).
    #[doc(hidden)]
    pub fn files(&self) -> &RunFiles {
        &self.files
    }
}

impl Fleet {
    /// Reads the fleet folder `dir`: its `fleet.json`, then each replica's folder as
    /// [`Run::from_dir`] reads one (a replica that allows no check is read all the
    /// same: its report lists what it lacks). Refused: a folder without `fleet.json`, or
    /// one that names no replica ([`ErrorKind::NoRun`], [`ErrorKind::Invalid`]), and
    /// each refusal of a replica's files.
    ///
    /// ```no_run
    /// let fleet = inferlint::Fleet::from_dir("fleet/")?;
    /// let report = fleet.check()?;
    /// println!("{} {:?}", report.balance().tripwire(), report.balance().status());
    /// # Ok::<(), inferlint::Error>(())
    /// ```
    ///
    /// # Blocking
    ///
    /// Reads the manifest and every replica's run on the calling thread, for as long as
    /// [`Run::from_dir`] takes on each: from async code, call it inside
    /// `tokio::task::spawn_blocking` (or read the fleet with [`FleetReader`] there).
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Fleet, Error> {
        let dir = dir.as_ref();
        Fleet::read(dir, &manifest_of(dir)?, None, None)
    }

    /// The fleet of `manifest` in `dir` (outside the API, as [`Run::model`] is: the
    /// command line reads the manifest itself, to tell a fleet folder from a run folder).
    /// `engine` refuses every file of another engine, as `--engine` does; `requested` is
    /// each replica's concurrency asked for (T8). Blocks as [`Fleet::from_dir`] does.
    #[doc(hidden)]
    pub fn read(
        dir: &Path,
        manifest: &Manifest,
        engine: Option<(Engine, NamedBy)>,
        requested: Option<u64>,
    ) -> Result<Fleet, Error> {
        let mut reader = FleetReader::open(dir, manifest, engine, requested)?;
        let mut replicas = Vec::with_capacity(reader.len());
        while let Some(replica) = reader.read_next()? {
            replicas.push(replica);
        }
        let grid = reader.grid();
        Ok(Fleet {
            source: reader.source,
            grid,
            replicas,
        })
    }

    /// Where the runs came from: `watch`, or `prometheus URL SELECTOR`.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The replicas, in the manifest's order.
    pub fn replicas(&self) -> &[Replica] {
        &self.replicas
    }

    /// The grid every replica's recording is read on: from the earliest sample to the
    /// latest, at the manifest's interval (else the replicas' own spacing).
    pub fn grid(&self) -> &FleetGrid {
        &self.grid
    }

    /// Checks each replica as its own run, and the fleet: T22 from every replica's
    /// recording read again on the fleet's grid. A recording that cannot be read again
    /// is refused as [`Run::from_dir`] refuses it.
    ///
    /// # Blocking
    ///
    /// Reads every replica's recording file again on the calling thread, and checks each
    /// replica there: from async code, call it inside `tokio::task::spawn_blocking`.
    pub fn check(&self) -> Result<FleetReport, Error> {
        self.check_seeing(|_, _| {})
    }

    /// [`Fleet::check`], handing each sample read for T22 to `on_sample` with its
    /// replica's index too (outside the API, as [`Run::model`] is: the command line draws
    /// the fleet's chart from the core's samples, in the same pass). Blocks as
    /// [`Fleet::check`] does.
    #[doc(hidden)]
    pub fn check_seeing(
        &self,
        mut on_sample: impl FnMut(usize, &SeriesSample),
    ) -> Result<FleetReport, Error> {
        let names: Vec<String> = self.replicas.iter().map(|r| r.name.clone()).collect();
        let series = self
            .replicas
            .iter()
            .map(|r| own_recording(&r.run, &r.files));
        let finished: Vec<Option<f64>> = self.replicas.iter().map(|r| finished(&r.run)).collect();
        Ok(FleetReport {
            replicas: self.replicas.iter().map(|r| r.run.check()).collect(),
            balance: check_balance(&self.grid, &names, series, &finished, &mut on_sample)?,
        })
    }

    /// Every file the fleet was read from, with what it is: what no output may replace.
    pub fn inputs(&self) -> Vec<(&Path, &str)> {
        self.replicas
            .iter()
            .flat_map(|r| r.files.inputs())
            .collect()
    }
}

/// A fleet read one replica at a time: each replica's run is read and checked in turn,
/// handed to the caller with its report, and let go before the next is read; T22 then
/// reads every replica's recording again on the fleet's grid. Memory holds one replica's
/// run and every replica's report, where [`Fleet`] holds every run: for a fleet of
/// hundreds of replicas over a day, the difference is hundreds of MiB.
///
/// Every replica's files are found when the reader is opened, before any run is read, so
/// [`FleetReader::inputs`] names every file the fleet is read from (what no output may
/// replace) before anything is written.
///
/// ```no_run
/// let mut reader = inferlint::FleetReader::from_dir("fleet/")?;
/// while let Some((replica, report)) = reader.next_replica()? {
///     println!("{}: {:?}", replica.name(), report.outcome());
/// }
/// let report = reader.finish()?;
/// println!("{} {:?}", report.balance().tripwire(), report.balance().status());
/// # Ok::<(), inferlint::Error>(())
/// ```
#[derive(Debug)]
pub struct FleetReader {
    source: String,
    interval_s: Option<f64>,
    engine: Option<(Engine, NamedBy)>,
    requested: Option<u64>,
    /// Each replica's name, folder and files, in the manifest's order.
    found: Vec<(String, String, RunFiles)>,
    /// What the grid needs of each replica read so far: its recording's summary.
    stats: Vec<Option<SeriesStats>>,
    /// Each replica read so far: its own recording, as T22 reads it ([`own_recording`]).
    recordings: Vec<Option<(PathBuf, Option<SeriesWindow>)>>,
    /// What T22 needs of each replica read so far beside its recording: the requests its
    /// own counter says it finished.
    finished: Vec<Option<f64>>,
    /// Each replica's report, for those read and checked.
    reports: Vec<Report>,
}

impl FleetReader {
    /// Opens the fleet folder `dir` as [`Fleet::from_dir`] reads it, finding each
    /// replica's files; no run is read yet. Refused as [`Fleet::from_dir`] refuses.
    ///
    /// # Blocking
    ///
    /// Reads the manifest and looks through every replica's folder on the calling
    /// thread. From async code, call it, [`FleetReader::next_replica`] and
    /// [`FleetReader::finish`] inside `tokio::task::spawn_blocking`.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<FleetReader, Error> {
        let dir = dir.as_ref();
        FleetReader::open(dir, &manifest_of(dir)?, None, None)
    }

    /// The reader of `manifest` in `dir` (outside the stable API, as [`Fleet::read`] is).
    /// Blocks as [`FleetReader::from_dir`] does.
    #[doc(hidden)]
    pub fn open(
        dir: &Path,
        manifest: &Manifest,
        engine: Option<(Engine, NamedBy)>,
        requested: Option<u64>,
    ) -> Result<FleetReader, Error> {
        if manifest.replicas.is_empty() {
            let path = dir.join(fleet::MANIFEST);
            return Err(Error::new(
                ErrorKind::Invalid,
                format!("{} names no replica", path.display()),
            )
            .with_path(&path));
        }
        let found = manifest
            .replicas
            .iter()
            .map(|replica| {
                let files = load::find_run(&dir.join(&replica.folder)).map_err(Error::from_load)?;
                Ok((replica.name.clone(), replica.folder.clone(), files))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(FleetReader {
            source: manifest.source.clone(),
            interval_s: manifest.interval_s,
            engine,
            requested,
            stats: Vec::with_capacity(found.len()),
            recordings: Vec::with_capacity(found.len()),
            finished: Vec::with_capacity(found.len()),
            reports: Vec::with_capacity(found.len()),
            found,
        })
    }

    /// Where the runs came from: `watch`, or `prometheus URL SELECTOR`.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// How many replicas the manifest names.
    pub fn len(&self) -> usize {
        self.found.len()
    }

    /// Whether the manifest names no replica (never, for a reader that opened).
    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// Each replica's name and folder, in the manifest's order.
    pub fn names(&self) -> impl Iterator<Item = (&str, &str)> {
        self.found
            .iter()
            .map(|(name, folder, _)| (name.as_str(), folder.as_str()))
    }

    /// Every file the fleet is read from, with what it is: what no output may replace.
    pub fn inputs(&self) -> Vec<(&Path, &str)> {
        self.found
            .iter()
            .flat_map(|(_, _, files)| files.inputs())
            .collect()
    }

    /// Reads the next replica's run and checks it: the replica, and its report, which
    /// the reader keeps for [`FleetReader::finish`]. `None` once every replica is read.
    /// A replica's files that are refused end the reading with that refusal.
    ///
    /// # Blocking
    ///
    /// Reads the replica's run and checks it on the calling thread, as [`Run::from_dir`]
    /// and [`Run::check`] do.
    pub fn next_replica(&mut self) -> Result<Option<(Replica, &Report)>, Error> {
        let Some(replica) = self.read_next()? else {
            return Ok(None);
        };
        self.reports.push(replica.run.check());
        let report = self.reports.last().expect("the report just pushed");
        Ok(Some((replica, report)))
    }

    /// The next replica's run, unchecked; its recording's summary is kept for the grid.
    fn read_next(&mut self) -> Result<Option<Replica>, Error> {
        let Some((name, folder, files)) = self.found.get(self.stats.len()) else {
            return Ok(None);
        };
        let run = Run::read(files, &mut EngineChoice::new(self.engine), self.requested)?;
        let own = own_recording(&run, files).map(|(path, window)| (path.to_owned(), window));
        // A recording the gate sets aside (two recordings in one file, another time's)
        // spans nothing of the fleet's grid either.
        self.stats
            .push(run.inner.series.clone().filter(|_| own.is_some()));
        self.recordings.push(own);
        self.finished.push(finished(&run));
        Ok(Some(Replica {
            name: name.clone(),
            folder: folder.clone(),
            files: files.clone(),
            run,
        }))
    }

    /// The grid of the replicas read so far: the fleet's once every one is read.
    pub fn grid(&self) -> FleetGrid {
        FleetGrid::of(self.stats.iter().map(Option::as_ref), self.interval_s)
    }

    /// Checks the fleet: reads and checks every replica not yet read (each let go at
    /// once), then T22 from every replica's recording read again on the fleet's grid.
    ///
    /// # Blocking
    ///
    /// Reads the replicas not yet read and every replica's recording file again on the
    /// calling thread, as [`Fleet::check`] does.
    pub fn finish(self) -> Result<FleetReport, Error> {
        self.finish_seeing(|_, _| {})
    }

    /// [`FleetReader::finish`], handing each sample read for T22 to `on_sample` with its
    /// replica's index, as [`Fleet::check_seeing`] does (outside the API, as it is).
    /// Blocks as [`FleetReader::finish`] does.
    #[doc(hidden)]
    pub fn finish_seeing(
        mut self,
        mut on_sample: impl FnMut(usize, &SeriesSample),
    ) -> Result<FleetReport, Error> {
        while self.next_replica()?.is_some() {}
        let grid = self.grid();
        let names: Vec<String> = self.found.iter().map(|(name, _, _)| name.clone()).collect();
        let series = self
            .recordings
            .iter()
            .map(|own| own.as_ref().map(|(path, window)| (path.as_path(), *window)));
        let balance = check_balance(&grid, &names, series, &self.finished, &mut on_sample)?;
        Ok(FleetReport {
            replicas: self.reports,
            balance,
        })
    }
}

/// The manifest of the fleet folder `dir`; a folder without one is no fleet.
fn manifest_of(dir: &Path) -> Result<Manifest, Error> {
    fleet::read_manifest(dir)
        .map_err(|e| Error::from_load(LoadError::File(e)))?
        .ok_or_else(|| {
            Error::new(
                ErrorKind::NoRun,
                format!(
                    "{} holds no {}: it is no fleet folder",
                    load::shown(dir),
                    fleet::MANIFEST
                ),
            )
            .with_path(dir)
        })
}

/// T22: every replica's recording (`None` where it has none) read again on `grid`, each
/// sample handed to `on_sample` too. A recording that cannot be read again is refused as
/// [`Run::from_dir`] refuses it.
fn check_balance<'a>(
    grid: &FleetGrid,
    names: &[String],
    series: impl Iterator<Item = Option<(&'a Path, Option<SeriesWindow>)>>,
    finished: &[Option<f64>],
    on_sample: &mut impl FnMut(usize, &SeriesSample),
) -> Result<CheckResult, Error> {
    let mut balance = grid.balance(names);
    for (index, &finished) in finished.iter().enumerate() {
        balance.finished(index, finished);
    }
    for (index, series) in series.enumerate() {
        let Some((series, window)) = series else {
            continue;
        };
        files::read_series(series, |sample| {
            // Only the samples between the replica's readings are of its run.
            if window.is_some_and(|w| w.place(sample) != std::cmp::Ordering::Equal) {
                return;
            }
            balance.push(index, sample);
            on_sample(index, sample);
        })
        .map_err(|e| Error::from_load(LoadError::File(e)))?;
    }
    Ok(balance.check())
}

/// A replica's recording as T22 may read it: the file, with the readings' window its
/// samples are read within; `None` when it has none, or when the gate sets it aside
/// (two recordings in one file, a recording of another time): another run's samples
/// never stand for this replica's.
fn own_recording<'a>(run: &Run, files: &'a RunFiles) -> Option<(&'a Path, Option<SeriesWindow>)> {
    let path = files.series.as_deref()?;
    let admitted = &run.inner;
    admitted.series.as_ref()?;
    let window = match (&admitted.before, &admitted.after) {
        (Some(b), Some(a)) => inferlint_core::identity::series_window(b, a),
        _ => None,
    };
    Some((path, window))
}

/// The requests a replica's run finished between its readings, by its own counter.
fn finished(run: &Run) -> Option<f64> {
    inferlint_core::checks::fleet::finished_between(
        run.inner.engine,
        run.inner.before.as_ref(),
        run.inner.after.as_ref(),
    )
}

/// A fleet checked: each replica's report, in the manifest's order, and T22's verdict.
#[derive(Debug, Clone)]
pub struct FleetReport {
    replicas: Vec<Report>,
    balance: CheckResult,
}

impl FleetReport {
    /// Each replica's report, in the manifest's order.
    pub fn replicas(&self) -> &[Report] {
        &self.replicas
    }

    /// T22's verdict: whether one replica queued or preempted while another had room.
    pub fn balance(&self) -> &CheckResult {
        &self.balance
    }

    /// The fleet's outcome: the worst of every replica's and T22's.
    pub fn outcome(&self) -> Outcome {
        self.outcome_with(false)
    }

    /// [`FleetReport::outcome`] under `--strict`: a warning counts as a failed tripwire.
    pub fn strict_outcome(&self) -> Outcome {
        self.outcome_with(true)
    }

    fn outcome_with(&self, strict: bool) -> Outcome {
        self.replicas.iter().fold(
            Outcome::of(std::slice::from_ref(&self.balance), strict),
            |worst, r| {
                let replica = if strict {
                    r.strict_outcome()
                } else {
                    r.outcome()
                };
                worst_of(worst, replica)
            },
        )
    }
}
