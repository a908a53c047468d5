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

use std::path::Path;

use inferlint_core::analyses::fleet_grid::FleetGrid;
use inferlint_core::judging::outcome::worst_of;
use inferlint_core::judging::status::{CheckResult, Outcome};
use inferlint_engines::fleet::{self, Manifest};
use inferlint_engines::load::{self, LoadError};
use inferlint_engines::load_fleet::{FleetFiles, ReplicaRead};

use crate::error::{Error, ErrorKind};
use crate::report::Report;
use crate::run::Run;

/// A fleet folder read: each replica's run, and the grid they were recorded on.
#[derive(Debug)]
pub struct Fleet {
    files: FleetFiles,
    grid: FleetGrid,
    replicas: Vec<Replica>,
}

/// One replica of a fleet: its name, its folder and its run.
#[derive(Debug)]
pub struct Replica {
    name: String,
    folder: String,
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
        let mut reader = FleetReader::from_dir(dir)?;
        let mut replicas = Vec::with_capacity(reader.len());
        while let Some(replica) = reader.read_next()? {
            replicas.push(replica);
        }
        let grid = reader.grid();
        Ok(Fleet {
            files: reader.files,
            grid,
            replicas,
        })
    }

    /// Where the runs came from: `watch`, or `prometheus URL SELECTOR`.
    pub fn source(&self) -> &str {
        self.files.source()
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
        Ok(FleetReport {
            replicas: self.replicas.iter().map(|r| r.run.check()).collect(),
            balance: self
                .files
                .balance(&mut |_, _| {})
                .map_err(Error::from_load)?,
        })
    }

    /// Every file the fleet was read from, with what it is: what no output may replace.
    pub fn inputs(&self) -> Vec<(&Path, &str)> {
        self.files.inputs()
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
    /// The engines crate's reader of the fleet: the files, and what T22 needs of each
    /// replica read.
    files: FleetFiles,
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
        let manifest = manifest_of(dir)?;
        if manifest.replicas.is_empty() {
            let path = dir.join(fleet::MANIFEST);
            return Err(Error::new(
                ErrorKind::Invalid,
                format!("{} names no replica", path.display()),
            )
            .with_path(&path));
        }
        let files = FleetFiles::open(dir, &manifest, None, None).map_err(Error::from_load)?;
        Ok(FleetReader {
            reports: Vec::with_capacity(files.len()),
            files,
        })
    }

    /// Where the runs came from: `watch`, or `prometheus URL SELECTOR`.
    pub fn source(&self) -> &str {
        self.files.source()
    }

    /// How many replicas the manifest names.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether the manifest names no replica (never, for a reader that opened).
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Each replica's name and folder, in the manifest's order.
    pub fn names(&self) -> impl Iterator<Item = (&str, &str)> {
        self.files.names()
    }

    /// Every file the fleet is read from, with what it is: what no output may replace.
    pub fn inputs(&self) -> Vec<(&Path, &str)> {
        self.files.inputs()
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

    /// The next replica's run, unchecked, read as [`Run::from_dir`] reads one (the
    /// report's charts folded in the same pass).
    fn read_next(&mut self) -> Result<Option<Replica>, Error> {
        #[cfg(feature = "report")]
        let read = self.files.read_next(|ends| {
            inferlint_report::TimelinePass::new(ends.first, ends.last, ends.after)
        });
        #[cfg(not(feature = "report"))]
        let read = self
            .files
            .read_next(|_| None::<inferlint_core::judging::checks::series::SeriesStats>);
        let Some(ReplicaRead {
            name,
            folder,
            files,
            run,
            notes,
            folded,
        }) = read.map_err(Error::from_load)?
        else {
            return Ok(None);
        };
        let run = Run::of_read(run, notes, files.series);
        #[cfg(feature = "report")]
        let run = run.with_charts(folded);
        #[cfg(not(feature = "report"))]
        let _ = folded;
        Ok(Some(Replica { name, folder, run }))
    }

    /// The grid of the replicas read so far: the fleet's once every one is read.
    pub fn grid(&self) -> FleetGrid {
        self.files.grid()
    }

    /// Checks the fleet: reads and checks every replica not yet read (each let go at
    /// once), then T22 from every replica's recording read again on the fleet's grid.
    ///
    /// # Blocking
    ///
    /// Reads the replicas not yet read and every replica's recording file again on the
    /// calling thread, as [`Fleet::check`] does.
    pub fn finish(mut self) -> Result<FleetReport, Error> {
        while self.next_replica()?.is_some() {}
        let balance = self
            .files
            .balance(&mut |_, _| {})
            .map_err(Error::from_load)?;
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
