//! A fleet folder read replica by replica through the one path ([`load::load_run_folding`]
//! into core's admitted run), and the fleet's T22 from every replica's recording read
//! again on the fleet's grid: what `report DIR` of a fleet folder and the library's
//! `Fleet` and `FleetReader` both read a fleet by. One replica's run is held at a time:
//! the reader keeps only what the grid and T22 need of each (its recording's summary,
//! its own recording's file and window, the requests it finished).

use std::path::{Path, PathBuf};

use inferlint_core::analyses::fleet_grid::FleetGrid;
use inferlint_core::judging::checks::series::{SeriesStats, SeriesWindow};
use inferlint_core::judging::identity::{self, Admitted};
use inferlint_core::judging::status::CheckResult;
use inferlint_core::model::{SampleFold, SeriesSample};
use inferlint_core::Engine;

use crate::files::{self, RunFiles};
use crate::fleet::Manifest;
use crate::load::{self, EngineChoice, FoldStart, Folded, LoadError, NamedBy};

/// A fleet folder opened: every replica's files found, none read yet.
#[derive(Debug)]
pub struct FleetFiles {
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
}

/// One replica read: its name, folder and files, its run as the gate admitted it, the
/// notes the reading left and the caller's fold of its recording.
#[derive(Debug)]
pub struct ReplicaRead<F> {
    /// The replica's name, as the manifest gives it.
    pub name: String,
    /// Its folder, relative to the fleet folder.
    pub folder: String,
    /// The files its run was read from.
    pub files: RunFiles,
    /// Its run, admitted.
    pub run: Admitted,
    /// What a reader should know that did not stop the load.
    pub notes: Vec<String>,
    /// The caller's fold of the recording, from the checks' pass.
    pub folded: Option<Folded<F>>,
}

impl FleetFiles {
    /// The fleet of `manifest` in `dir`: each replica's files found. `engine` refuses
    /// every file of another engine (`--engine`); `requested` is each replica's
    /// concurrency asked for (T8). A manifest that names no replica is the caller's to
    /// refuse (it says so in its own words).
    pub fn open(
        dir: &Path,
        manifest: &Manifest,
        engine: Option<(Engine, NamedBy)>,
        requested: Option<u64>,
    ) -> Result<FleetFiles, LoadError> {
        let found = manifest
            .replicas
            .iter()
            .map(|replica| {
                let files = load::find_run(&dir.join(&replica.folder))?;
                Ok((replica.name.clone(), replica.folder.clone(), files))
            })
            .collect::<Result<Vec<_>, LoadError>>()?;
        Ok(FleetFiles {
            source: manifest.source.clone(),
            interval_s: manifest.interval_s,
            engine,
            requested,
            stats: Vec::with_capacity(found.len()),
            recordings: Vec::with_capacity(found.len()),
            finished: Vec::with_capacity(found.len()),
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

    /// Whether the manifest names no replica.
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

    /// Reads the next replica's run through the one loader (its recording folded by
    /// `side` too, as [`load::load_run_folding`] folds it), keeping what the grid and T22
    /// need of it; `None` once every replica is read.
    pub fn read_next<F: SampleFold>(
        &mut self,
        side: impl FnOnce(FoldStart<'_>) -> Option<F>,
    ) -> Result<Option<ReplicaRead<F>>, LoadError> {
        let Some((name, folder, files)) = self.found.get(self.stats.len()) else {
            return Ok(None);
        };
        let mut choice = EngineChoice::new(self.engine);
        let (run, folded) = load::load_run_folding(&mut choice, files, self.requested, None, side)?;
        let own = own_recording(&run, files).map(|(path, window)| (path.to_owned(), window));
        // A recording the gate sets aside (two recordings in one file, another time's)
        // spans nothing of the fleet's grid either.
        self.stats
            .push(run.series.clone().filter(|_| own.is_some()));
        self.recordings.push(own);
        self.finished.push(finished(&run));
        Ok(Some(ReplicaRead {
            name: name.clone(),
            folder: folder.clone(),
            files: files.clone(),
            run,
            notes: choice.take_notes(),
            folded,
        }))
    }

    /// The grid of the replicas read so far: the fleet's once every one is read.
    pub fn grid(&self) -> FleetGrid {
        FleetGrid::of(self.stats.iter().map(Option::as_ref), self.interval_s)
    }

    /// T22: every replica's own recording read again on the grid of the replicas read
    /// (read them all first), each sample handed to `on_sample` with its replica's index
    /// too (the fleet page's chart, drawn in the same pass).
    pub fn balance(
        &self,
        on_sample: &mut impl FnMut(usize, &SeriesSample),
    ) -> Result<CheckResult, LoadError> {
        let grid = self.grid();
        let names: Vec<String> = self.found.iter().map(|(name, _, _)| name.clone()).collect();
        let mut balance = grid.balance(&names);
        for (index, &finished) in self.finished.iter().enumerate() {
            balance.finished(index, finished);
        }
        for (index, own) in self.recordings.iter().enumerate() {
            let Some((series, window)) = own else {
                continue;
            };
            files::read_series(series, |sample| {
                // Only the samples between the replica's readings are of its run.
                if window.is_some_and(|w| w.place(sample) != std::cmp::Ordering::Equal) {
                    return;
                }
                balance.push(index, sample);
                on_sample(index, sample);
            })?;
        }
        Ok(balance.check())
    }
}

/// A replica's recording as T22 may read it: the file, with the readings' window its
/// samples are read within; `None` when it has none, or when the gate sets it aside
/// (two recordings in one file, a recording of another time): another run's samples
/// never stand for this replica's.
fn own_recording<'a>(
    run: &Admitted,
    files: &'a RunFiles,
) -> Option<(&'a Path, Option<SeriesWindow>)> {
    let path = files.series.as_deref()?;
    run.series.as_ref()?;
    let window = match (&run.before, &run.after) {
        (Some(b), Some(a)) => identity::series_window(b, a),
        _ => None,
    };
    Some((path, window))
}

/// The requests a replica's run finished between its readings, by its own counter.
fn finished(run: &Admitted) -> Option<f64> {
    inferlint_core::judging::checks::fleet::finished_between(
        run.engine,
        run.before.as_ref(),
        run.after.as_ref(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferlint_core::judging::status::Tripwire;

    /// The real two-replica fleet (fixtures/real/vllm-0.32-cpu/fleet-one-idle, its
    /// MADE.md): each replica recorded its own series between its own readings. Read one
    /// replica at a time, T22 is judged from each replica's own samples: every replica
    /// hands the chart some, and none more than its file holds.
    #[test]
    fn t22_sees_each_replicas_own_samples() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/real/vllm-0.32-cpu/fleet-one-idle");
        let manifest = crate::fleet::read_manifest(&dir)
            .expect("the manifest reads")
            .expect("a fleet folder");
        let mut fleet = FleetFiles::open(&dir, &manifest, None, None).expect("opened");
        assert_eq!(fleet.len(), 2);
        let mut in_file = Vec::new();
        while let Some(replica) = fleet
            .read_next(|_| None::<SeriesStats>)
            .expect("each replica reads")
        {
            assert!(replica.run.series.is_some(), "{}", replica.name);
            let mut n = 0usize;
            files::read_series(
                replica.files.series.as_deref().expect("a recording"),
                |_| n += 1,
            )
            .expect("the recording reads");
            in_file.push(n);
        }
        assert!(fleet.grid().has_samples());
        let mut seen = [0usize; 2];
        let balance = fleet
            .balance(&mut |index, _| seen[index] += 1)
            .expect("T22 judged");
        assert_eq!(balance.tripwire, Tripwire::T22);
        for (seen, in_file) in seen.iter().zip(&in_file) {
            assert!(*seen > 0 && seen <= in_file, "{seen} of {in_file}");
        }
    }
}
