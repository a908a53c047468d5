//! A fleet: replicas of one server behind one router, each recorded into its own run
//! folder under a fleet folder (`fleet.json` names them), as `inferlint watch URL URL …`
//! and `inferlint report --prometheus` write it. Each replica is checked as its own run;
//! T22 (replicas unevenly loaded) reads every replica's recording again on the fleet's
//! grid.

use std::path::Path;

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

    /// The files the replica's run was read from (outside the stable API, as
    /// [`Run::model`] is).
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
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Fleet, Error> {
        let dir = dir.as_ref();
        let manifest = fleet::read_manifest(dir)
            .map_err(|e| Error::from(LoadError::File(e)))?
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
            })?;
        Fleet::read(dir, &manifest, None, None)
    }

    /// The fleet of `manifest` in `dir` (outside the stable API: the command line reads
    /// the manifest itself, to tell a fleet folder from a run folder). `engine` refuses
    /// every file of another engine, as `--engine` does; `requested` is each replica's
    /// concurrency asked for (T8).
    pub fn read(
        dir: &Path,
        manifest: &Manifest,
        engine: Option<(Engine, NamedBy)>,
        requested: Option<u64>,
    ) -> Result<Fleet, Error> {
        if manifest.replicas.is_empty() {
            let path = dir.join(fleet::MANIFEST);
            return Err(Error::new(
                ErrorKind::Invalid,
                format!("{} names no replica", path.display()),
            )
            .with_path(&path));
        }
        let mut replicas = Vec::with_capacity(manifest.replicas.len());
        for replica in &manifest.replicas {
            let files = load::find_run(&dir.join(&replica.folder))?;
            let run = Run::read(&files, &mut EngineChoice::new(engine), requested)?;
            replicas.push(Replica {
                name: replica.name.clone(),
                folder: replica.folder.clone(),
                files,
                run,
            });
        }
        let grid = FleetGrid::of(
            replicas.iter().map(|r| r.run.inner.series.as_ref()),
            manifest.interval_s,
        );
        Ok(Fleet {
            source: manifest.source.clone(),
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
    pub fn check(&self) -> Result<FleetReport, Error> {
        self.check_seeing(|_, _| {})
    }

    /// [`Fleet::check`], handing each sample read for T22 to `on_sample` with its
    /// replica's index too (the command line draws the fleet's chart from them, in the
    /// same pass).
    pub fn check_seeing(
        &self,
        mut on_sample: impl FnMut(usize, &SeriesSample),
    ) -> Result<FleetReport, Error> {
        let names: Vec<String> = self.replicas.iter().map(|r| r.name.clone()).collect();
        let mut balance = self.grid.balance(&names);
        for (index, replica) in self.replicas.iter().enumerate() {
            let Some(series) = &replica.files.series else {
                continue;
            };
            files::read_series(series, |sample| {
                balance.push(index, sample);
                on_sample(index, sample);
            })
            .map_err(|e| Error::from(LoadError::File(e)))?;
        }
        Ok(FleetReport {
            replicas: self.replicas.iter().map(|r| r.run.check()).collect(),
            balance: balance.check(),
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
