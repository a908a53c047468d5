//! Reading a run's files into the run model, and the one-engine rule: the one way the
//! command line, xray, the report's tests and benches and the library facade load a run.
//!
//! [`load_run`] is the entry point: the files of a run ([`RunFiles`], found in a folder by
//! [`find_run`] or named one by one) become a [`Run`] that core checks. Every input says
//! which engine wrote it where it can (a log's markers, a snapshot's metric names, a
//! recording's header); an [`EngineChoice`] holds the engine the caller named, if any,
//! and refuses an input from another engine, or two inputs that disagree, since a run's
//! files come from one server. With nothing named and nothing said, inputs are read as
//! vLLM's, with a note.
//!
//! Nothing here prints. What a reader should know but that does not stop the load (a
//! line skipped in a snapshot, gap records in a recording, an engine version not tested)
//! is a note, kept in the [`EngineChoice`] until [`EngineChoice::take_notes`].

use std::fmt;
use std::path::{Path, PathBuf};

use inferlint_core::judging::checks::boot;
use inferlint_core::judging::checks::counters::out_of_order;
use inferlint_core::judging::checks::series::SeriesStats;
use inferlint_core::judging::identity::{self, Admitted};
use inferlint_core::model::client::Keep;
use inferlint_core::model::{BootFacts, SampleFold, SeriesHeader, SeriesSample, Snapshot};
use inferlint_core::run::{CheckOptions, Checked, Run};
use inferlint_core::Engine;

use crate::files::{self, RunFiles};
use crate::input::FileError;
use crate::{detect, loadtools};

// How a message names a path, where callers have always found it.
pub use crate::input::{shown, STDIN};

/// Where the named engine came from; it shapes the refusal message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedBy {
    /// `--engine` on the command line.
    Flag,
    /// The `INFERLINT_ENGINE` environment variable.
    Environment,
    /// A program that calls the library named it.
    Caller,
}

impl NamedBy {
    /// How a message names the choice: `--engine vllm`, `INFERLINT_ENGINE=vllm`, `the
    /// engine named is vLLM`.
    pub fn prefix(self, engine: Engine) -> String {
        match self {
            NamedBy::Flag => format!("--engine {}", engine.key()),
            NamedBy::Environment => format!("INFERLINT_ENGINE={}", engine.key()),
            NamedBy::Caller => format!("the engine named is {}", engine.name()),
        }
    }
}

/// What turned out to come from another engine than the one named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// An input file (or several, `the snapshots`), as messages name it.
    Input(String),
    /// The server at an address.
    Server(String),
    /// The command xray was given to start the server.
    ServeCommand,
}

/// An input, a server or a command from another engine than the one named: the one
/// message for all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The engine named.
    pub named: Engine,
    /// Where it was named.
    pub by: NamedBy,
    /// What came from another engine.
    pub source: Source,
    /// The engine it came from.
    pub found: Engine,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = self.by.prefix(self.named);
        let found = self.found.name();
        match &self.source {
            Source::Input(what) => write!(
                f,
                "{prefix}, but {what} came from {found}. Check the server address or the file, or name the engine it came from."
            ),
            Source::Server(url) => write!(
                f,
                "{prefix}, but the server at {url} runs {found}. Check the server address or the file, or name the engine it came from."
            ),
            Source::ServeCommand => write!(
                f,
                "{prefix}, but the --serve command starts {found}. Check the command, or name the engine it starts."
            ),
        }
    }
}

/// Why a run's files could not be loaded. Each message is one line that names the file
/// (or the input) and what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// A file that could not be read or is not what it should be.
    #[error("cannot read {0}")]
    File(#[from] FileError),
    /// An engine name that is none of the three.
    #[error("{}", unknown_engine(text, *by))]
    UnknownEngine {
        /// The name as given.
        text: String,
        /// Where it was given.
        by: NamedBy,
    },
    /// An input from another engine than the one named.
    #[error("{0}")]
    Mismatch(Mismatch),
    /// Two inputs from different engines, with none named.
    #[error("{first_what} came from {}, but {what} came from {}; a run's files must come from one server (name the engine with --engine to say which)", first.name(), found.name())]
    MixedEngines {
        /// The input read first, as messages name it.
        first_what: String,
        /// The engine it came from.
        first: Engine,
        /// The input that disagrees.
        what: String,
        /// The engine that one came from.
        found: Engine,
    },
    /// A file given as a boot log that is no server's log.
    #[error("{} is not a server log: {why}", shown(path))]
    NotALog {
        /// The file.
        path: PathBuf,
        /// What it is instead, in a few words.
        why: &'static str,
    },
    /// One file given as both snapshots.
    #[error("{} is given as both the before and the after snapshot; give the one taken before the run and the one taken after", shown(path))]
    SameSnapshot {
        /// The file.
        path: PathBuf,
    },
    /// Snapshots given in the wrong order.
    #[error(
        "{} (before) and {} (after): {reason}; give the earlier snapshot first",
        shown(before),
        shown(after)
    )]
    OutOfOrder {
        /// The file given as the before snapshot.
        before: PathBuf,
        /// The file given as the after snapshot.
        after: PathBuf,
        /// What the clocks or counters say.
        reason: String,
    },
    /// A run folder that is not a folder.
    #[error("{} is not a folder", shown(path))]
    NotAFolder {
        /// The path given.
        path: PathBuf,
    },
    /// A folder that holds none of a run's files.
    #[error(
        "no run files in {} (boot.log, *.snapshot.json, *.series.jsonl)",
        shown(path)
    )]
    NoRunFiles {
        /// The folder.
        path: PathBuf,
    },
    /// A folder that holds several runs rather than one: each named, with where several
    /// are read.
    #[error(
        "{} holds several runs, not one ({runs}); report reads one run: give one of them (a subfolder, or a boot log with --boot-log and its files), or set them side by side with `inferlint compare` or `inferlint sweep`",
        shown(path)
    )]
    SeveralRuns {
        /// The folder.
        path: PathBuf,
        /// The runs it holds, in words.
        runs: String,
    },
    /// Several result files found for one run, none of which, or more than one of which,
    /// fits the server's files: which is the run's cannot be told. The message names each
    /// file, why it fits or not, and `--bench-result`.
    #[error("{0}")]
    ResultChoice(String),
}

fn unknown_engine(text: &str, by: NamedBy) -> String {
    match by {
        NamedBy::Environment => format!(
            "INFERLINT_ENGINE='{}' is not an engine (known: vllm, sglang, trtllm)",
            text.trim()
        ),
        NamedBy::Flag | NamedBy::Caller => format!(
            "unknown engine '{}' (known: vllm, sglang, trtllm)",
            text.trim()
        ),
    }
}

impl LoadError {
    /// The file the error concerns, when it concerns one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            LoadError::File(FileError::Io { path, .. } | FileError::Invalid { path, .. })
            | LoadError::NotALog { path, .. }
            | LoadError::SameSnapshot { path }
            | LoadError::NotAFolder { path }
            | LoadError::NoRunFiles { path }
            | LoadError::SeveralRuns { path, .. } => Some(path),
            LoadError::OutOfOrder { before, .. } => Some(before),
            LoadError::UnknownEngine { .. }
            | LoadError::Mismatch(_)
            | LoadError::MixedEngines { .. }
            | LoadError::ResultChoice(_) => None,
        }
    }
}

/// The engine a run's inputs are read as: the one the caller named, checked against
/// what each input says of itself, and the notes the reading left.
#[derive(Debug, Clone, Default)]
pub struct EngineChoice {
    named: Option<(Engine, NamedBy)>,
    identified: Option<(Engine, String)>,
    unidentified: Vec<String>,
    notes: Vec<String>,
}

impl EngineChoice {
    /// A choice with the engine named, or none.
    pub fn new(named: Option<(Engine, NamedBy)>) -> EngineChoice {
        EngineChoice {
            named,
            ..EngineChoice::default()
        }
    }

    /// The command line's choice: `--engine` when given, else a non-blank
    /// `INFERLINT_ENGINE`, else none.
    pub fn from_args(flag: Option<&str>) -> Result<EngineChoice, LoadError> {
        let named = match flag {
            Some(text) => Some((parse_engine(text, NamedBy::Flag)?, NamedBy::Flag)),
            None => match std::env::var("INFERLINT_ENGINE") {
                Ok(text) if !text.trim().is_empty() => Some((
                    parse_engine(&text, NamedBy::Environment)?,
                    NamedBy::Environment,
                )),
                _ => None,
            },
        };
        Ok(EngineChoice::new(named))
    }

    /// The engine named, if any.
    pub fn named(&self) -> Option<Engine> {
        self.named.map(|(engine, _)| engine)
    }

    /// The engine named and where, if any.
    pub fn named_by(&self) -> Option<(Engine, NamedBy)> {
        self.named
    }

    /// Refuses `found` when another engine was named.
    pub fn check(&self, source: Source, found: Engine) -> Result<(), LoadError> {
        match self.named {
            Some((named, by)) if named != found => Err(LoadError::Mismatch(Mismatch {
                named,
                by,
                source,
                found,
            })),
            _ => Ok(()),
        }
    }

    /// Records what one input says it came from. An input from another engine than the
    /// named one is refused; so is one that disagrees with an earlier input.
    pub fn input(&mut self, what: &str, engine: Option<Engine>) -> Result<(), LoadError> {
        let Some(engine) = engine else {
            self.unidentified.push(what.to_owned());
            return Ok(());
        };
        self.check(Source::Input(what.to_owned()), engine)?;
        match &self.identified {
            Some((first, first_what)) if *first != engine => Err(LoadError::MixedEngines {
                first_what: first_what.clone(),
                first: *first,
                what: what.to_owned(),
                found: engine,
            }),
            Some(_) => Ok(()),
            None => {
                self.identified = Some((engine, what.to_owned()));
                Ok(())
            }
        }
    }

    /// The engine to read every input as: the named one, else the one the inputs said.
    /// With neither, vLLM, with a note naming each input that did not say.
    pub fn resolve(&mut self) -> Engine {
        if let Some((engine, _)) = self.named {
            return engine;
        }
        if let Some((engine, _)) = &self.identified {
            return *engine;
        }
        for what in std::mem::take(&mut self.unidentified) {
            self.notes.push(format!(
                "{what} does not say which engine it came from; read as {}'s (--engine or INFERLINT_ENGINE names it)",
                Engine::DEFAULT.name()
            ));
        }
        Engine::DEFAULT
    }

    /// Adds a note.
    pub fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }

    /// A note when the boot facts name an engine version inferlint was not tested
    /// against (the version the log gave, or the one the server reported).
    pub fn note_version(&mut self, facts: &BootFacts) {
        if let (Some(engine), Some(version)) = (facts.engine, &facts.version) {
            if let Some(note) = engine.descriptor().untested_version_note(version) {
                self.notes.push(note);
            }
        }
    }

    /// The notes so far, in the order they were made; the choice keeps none.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }
}

fn parse_engine(text: &str, by: NamedBy) -> Result<Engine, LoadError> {
    Engine::parse(text).ok_or_else(|| LoadError::UnknownEngine {
        text: text.to_owned(),
        by,
    })
}

/// Reads one snapshot (our JSON, or bare Prometheus text) and records its engine; `what`
/// names it in a refusal (`the snapshots`).
pub fn load_snapshot(
    choice: &mut EngineChoice,
    path: &Path,
    what: &str,
) -> Result<Snapshot, LoadError> {
    let (snapshot, skipped) = files::read_snapshot_noted(path)?;
    if let Some(skipped) = skipped {
        choice.note(format!("{}: {skipped}", shown(path)));
    }
    choice.input(
        what,
        detect::engine_from_metric_names(snapshot.metrics.names()),
    )?;
    Ok(snapshot)
}

/// Reads the before and the after snapshot, refusing one file given as both and two
/// given in the wrong order.
pub fn load_snapshots(
    choice: &mut EngineChoice,
    before: &Path,
    after: &Path,
) -> Result<(Snapshot, Snapshot), LoadError> {
    let snapshots = (
        load_snapshot(choice, before, "the snapshots")?,
        load_snapshot(choice, after, "the snapshots")?,
    );
    refuse_one_file_twice(before, after)?;
    in_order(&snapshots.0, before, &snapshots.1, after)?;
    Ok(snapshots)
}

/// Refuses two snapshots given in the wrong order: every counter would seem to go down
/// and be read as a restart.
fn in_order(
    before: &Snapshot,
    before_path: &Path,
    after: &Snapshot,
    after_path: &Path,
) -> Result<(), LoadError> {
    match out_of_order(before, after) {
        Some(reason) => Err(LoadError::OutOfOrder {
            before: before_path.to_owned(),
            after: after_path.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

/// The before and the after snapshot must be two readings: one file given as both holds
/// no run between them, and nothing counted over no time can pass.
fn refuse_one_file_twice(before: &Path, after: &Path) -> Result<(), LoadError> {
    if crate::output::same_file(before, after) {
        return Err(LoadError::SameSnapshot {
            path: before.to_owned(),
        });
    }
    Ok(())
}

/// Folds a recording into the series statistics (on every core for a large file; once,
/// in order, for [`STDIN`]), recording its engine and noting gap records and skipped
/// lines.
pub fn load_series(choice: &mut EngineChoice, path: &Path) -> Result<SeriesStats, LoadError> {
    load_series_with(choice, path, None::<SeriesStats>, None).map(|(stats, _)| stats)
}

/// [`load_series`], with `side` folded in the same pass over the file, when the recording
/// is a file; it comes back with the recording's header.
fn load_series_with<F: SampleFold>(
    choice: &mut EngineChoice,
    path: &Path,
    side: Option<F>,
    window: Option<inferlint_core::judging::checks::series::SeriesWindow>,
) -> Result<(SeriesStats, Option<Folded<F>>), LoadError> {
    let (stats, summary, side) = if path.as_os_str() == STDIN {
        // A pipe is read once, in order, to its end.
        let (stats, summary) = files::read_series_stats_from(
            Path::new("standard input"),
            std::io::stdin().lock(),
            window,
        )?;
        (stats, summary, None)
    } else {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        files::read_series_stats_with(path, threads, side, window)?
    };
    let side = side.map(|fold| Folded {
        fold,
        header: summary.header.clone().unwrap_or_default(),
    });
    let engine = summary.header.as_ref().and_then(|h| h.engine);
    choice.input(&shown(path), engine)?;
    if summary.markers > 0 {
        choice.note(format!(
            "{}: {} gap or restart record(s): the recorder missed readings there, so a peak may be missing",
            shown(path),
            summary.markers
        ));
    }
    if summary.skipped > 0 {
        choice.note(format!(
            "{}: {} line(s) skipped (not a sample; a recorder killed mid-write leaves a cut-off last line)",
            shown(path),
            summary.skipped
        ));
    }
    // Samples are refused only when the monotonic clock (or, without it, the wall
    // clock) goes back; a wall clock that stepped while the monotonic one ran on is said.
    if let Some(step) = stats.wall_steps.message() {
        choice.note(format!("{}: {step}", shown(path)));
    }
    Ok((stats, side))
}

/// What a caller folded in the pass over the recording, beside the checks' statistics
/// ([`load_run_folding`]), with the recording's header (its interval, its address).
#[derive(Debug, Clone)]
pub struct Folded<F> {
    /// The caller's fold, every sample the checks read folded in.
    pub fold: F,
    /// The recording's header (the last one, as the reader keeps it); empty without one.
    pub header: SeriesHeader,
}

/// What a caller's fold may need to know before the pass over the recording begins: the
/// recording's first and last sample, read from the file's ends ([`files::series_ends`];
/// the pass counts them again, so the caller checks its fold against the statistics), and
/// the after reading, when there is one.
#[derive(Debug, Clone, Copy)]
pub struct FoldStart<'a> {
    /// The first sample, as the file's head shows it.
    pub first: &'a SeriesSample,
    /// The last sample, as the file's tail shows it.
    pub last: &'a SeriesSample,
    /// The after reading.
    pub after: Option<&'a Snapshot>,
}

/// Reads one boot log into its facts, recording its engine; a file that is no server's
/// log is refused.
pub fn load_boot(choice: &mut EngineChoice, path: &Path) -> Result<BootFacts, LoadError> {
    let log = files::read_boot_log(path, choice.named())?;
    choice.input(&shown(path), log.engine)?;
    if let Some(why) = log.not_a_log {
        return Err(LoadError::NotALog {
            path: path.to_owned(),
            why,
        });
    }
    let facts = log.facts;
    choice.note_version(&facts);
    Ok(facts)
}

/// Each boot log, labelled by the shortest part of its path that tells it from the others.
pub fn load_boots(
    choice: &mut EngineChoice,
    logs: &[PathBuf],
) -> Result<Vec<(String, BootFacts)>, LoadError> {
    let shown_logs: Vec<String> = logs.iter().map(|p| shown(p)).collect();
    let labels = boot::labels_for(&shown_logs.iter().map(String::as_str).collect::<Vec<_>>());
    logs.iter()
        .zip(labels)
        .map(|(path, label)| Ok((label, load_boot(choice, path)?)))
        .collect()
}

/// The files a run was given, as messages name them (boot logs, then the before, after,
/// series and result file): what "no check could run on ..." lists.
pub fn given(files: &RunFiles) -> Vec<String> {
    files
        .boot_logs
        .iter()
        .chain(
            [&files.before, &files.after, &files.series, &files.bench]
                .into_iter()
                .flatten(),
        )
        .map(|p| shown(p))
        .collect()
}

/// The files of the run folder `dir`, found by name and content as `inferlint report DIR`
/// finds them ([`files::discover_run`]); a path that is no folder, or a folder with none
/// of a run's files, is refused.
pub fn find_run(dir: &Path) -> Result<RunFiles, LoadError> {
    if !dir.is_dir() {
        return Err(LoadError::NotAFolder {
            path: dir.to_owned(),
        });
    }
    let mut found = files::discover_run(dir)?;
    let held = runs_held(dir, &found)?;
    if let Some(runs) = held.several() {
        return Err(LoadError::SeveralRuns {
            path: dir.to_owned(),
            runs: runs.join("; "),
        });
    }
    // Nothing is read from a subfolder that holds a run of its own (xray's earlier-TIME/).
    let outside = |p: &PathBuf| !held.subfolders.iter().any(|s| p.starts_with(s));
    found.bench_candidates.retain(outside);
    if !found.bench.as_ref().is_some_and(outside) {
        found.bench = found.bench_candidates.first().cloned();
    }
    if found.bench_candidates.len() == 1 {
        found.bench_candidates.clear();
    }
    if found.is_empty() {
        return Err(LoadError::NoRunFiles {
            path: dir.to_owned(),
        });
    }
    Ok(found)
}

/// The files and folders of a folder that each stand for a run of their own.
#[derive(Debug, Default)]
struct RunsHeld {
    /// The server logs found by report's own loose name (`*boot*.log`), when the folder has
    /// no `boot.log` to say which is the run's.
    loose_logs: Vec<String>,
    /// The before snapshots, when there is no `before.snapshot.json` (likewise after).
    loose_befores: Vec<String>,
    loose_afters: Vec<String>,
    /// The recordings, when there is no `run.series.jsonl`.
    loose_series: Vec<String>,
    /// Subfolders holding a boot log, a snapshot or a recording: runs of their own.
    subfolders: Vec<PathBuf>,
    /// Whether the folder holds a server file of its own.
    own: bool,
}

/// The prefix of the folder xray moves an earlier run into (`xray --force`): a run of
/// its own, kept beside the folder's run and never read with it.
const EARLIER: &str = "earlier-";

impl RunsHeld {
    /// The runs named, when the folder is several runs rather than one: two or more server
    /// logs that report would choose among by name (each a server start: report reads one
    /// and `--boot-log` names the others of a restart), two or more before or after
    /// snapshots (two pairs of readings cannot bracket one load), two or more recordings,
    /// or subfolders that each hold a run (other than xray's `earlier-TIME/` beside a run
    /// of the folder's own). One of each kind, or xray's own names, is one run.
    fn several(&self) -> Option<Vec<String>> {
        let mut runs = Vec::new();
        for (list, what) in [
            (&self.loose_logs, "boot logs"),
            (&self.loose_befores, "before snapshots"),
            (&self.loose_afters, "after snapshots"),
            (&self.loose_series, "recordings"),
        ] {
            if list.len() > 1 {
                runs.push(format!("{} {what}: {}", list.len(), list.join(", ")));
            }
        }
        let subfolders: Vec<String> = self
            .subfolders
            .iter()
            .filter(|p| {
                !(self.own
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(EARLIER)))
            })
            .filter_map(|p| p.file_name().and_then(|n| n.to_str()))
            .map(|n| format!("{n}/"))
            .collect();
        if !subfolders.is_empty() {
            runs.push(format!(
                "{} with a run's files: {}",
                if subfolders.len() == 1 {
                    "a subfolder"
                } else {
                    "subfolders"
                },
                subfolders.join(", ")
            ));
        }
        (!runs.is_empty()).then_some(runs)
    }
}

/// What in `dir` stands for a run: its loose server files by report's names, and the
/// subfolders that hold a server file of their own.
fn runs_held(dir: &Path, found: &RunFiles) -> Result<RunsHeld, FileError> {
    let mut names = Vec::new();
    let mut subfolders = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| FileError::io(dir, e))? {
        let Ok(entry) = entry else { continue };
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            // A subfolder of the engine's own per-request files is the run's.
            if path.file_name().and_then(|n| n.to_str()) != Some(files::REQUEST_METRICS_DIR)
                && files::discover_run(&path).is_ok_and(|f| !f.is_empty())
            {
                subfolders.push(path);
            }
        } else if let Ok(name) = entry.file_name().into_string() {
            names.push(name);
        }
    }
    names.sort();
    subfolders.sort();
    let loose = |exact: &str, pred: &dyn Fn(&str) -> bool| -> Vec<String> {
        if names.iter().any(|n| n == exact) {
            return Vec::new();
        }
        names.iter().filter(|n| pred(n)).cloned().collect()
    };
    Ok(RunsHeld {
        loose_logs: loose("boot.log", &|n| n.contains("boot") && n.ends_with(".log")),
        loose_befores: loose("before.snapshot.json", &|n| {
            n.contains("before") && n.ends_with(".json")
        }),
        loose_afters: loose("after.snapshot.json", &|n| {
            n.contains("after") && n.ends_with(".json")
        }),
        loose_series: loose("run.series.jsonl", &|n| n.ends_with(".series.jsonl")),
        subfolders,
        own: !found.is_empty(),
    })
}

/// The one of several result files of one tool that fits the run the readings bracket
/// and the boot logs describe ([`identity::choose_result`]), with a note naming each one
/// left out and why. Every candidate is read: one that cannot be is an error, as it would
/// be alone, since it might be the run's own. Refused, naming each, when none fits or
/// several do.
fn choose_bench(
    choice: &mut EngineChoice,
    candidates: &[PathBuf],
    before: Option<&Snapshot>,
    after: Option<&Snapshot>,
    boots: &[(String, BootFacts)],
    keep: Keep,
) -> Result<(String, inferlint_core::model::client::ClientAccount), LoadError> {
    let mut read = candidates
        .iter()
        .map(|p| Ok((shown(p), files::read_bench_result_kept(p, keep)?)))
        .collect::<Result<Vec<_>, LoadError>>()?;
    let chosen =
        identity::choose_result(&read, before, after, boots).map_err(LoadError::ResultChoice)?;
    for note in chosen.notes {
        choice.note(note);
    }
    Ok(read.swap_remove(chosen.index))
}

/// What a caller knows of a run besides its files, given to the one path
/// ([`check_files`]) so that the gate places the run with it: the concurrency asked for,
/// the engine it asked the server for, why the load failed, the version the server
/// reported, and whether the result file is read for the replay alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Known {
    /// The concurrency the load asked for (else the result file's `max_concurrency`).
    pub requested: Option<u64>,
    /// The engine to read the run as, whatever the inputs said (xray, which asked the
    /// server); `None` resolves it from the choice.
    pub engine: Option<Engine>,
    /// Why the load command failed, when the caller ran it and it did.
    pub load_failure: Option<String>,
    /// The version the server reported of itself, for a last boot log that states none.
    pub server_version: Option<String>,
    /// The result file's records read as the replay reads them ([`load_run_for_replay`]).
    pub for_replay: bool,
}

/// The one path by which every command checks a run's files: the files read into the run
/// model with what the caller knows ([`Known`]), the identity gate (once), then core's
/// [`run::check`](inferlint_core::run::check): the checks, the account and the story.
/// `side` folds the caller's own pass over the recording, as in [`load_run_folding`].
/// The library's `Run::check` calls the same core function on the run it read through
/// [`load_run_folding`].
pub fn check_files<F: SampleFold>(
    choice: &mut EngineChoice,
    files: &RunFiles,
    known: &Known,
    options: &CheckOptions,
    side: impl FnOnce(FoldStart<'_>) -> Option<F>,
) -> Result<(Admitted, Checked, Option<Folded<F>>), LoadError> {
    let keep = if known.for_replay {
        Keep::ForReplay
    } else {
        Keep::Records
    };
    let (run, folded) = load_run_kept(choice, files, known, side, keep)?;
    let checked = inferlint_core::run::check(&run, options);
    Ok((run, checked, folded))
}

/// Reads a run's files into the run model, as `report`, xray and the library load a
/// run: boot logs labelled by their shortest distinct paths, every input checked against
/// the engine named and against each other, the snapshots refused when one file is given
/// as both or they are in the wrong order, the untimed requests the load tool announced
/// (in its result file, else in `load.log`), and the concurrency asked for (`requested`,
/// else the result file's `max_concurrency`). When the folder held several result files
/// of one tool ([`RunFiles::bench_candidates`]) each is read and the one that fits the
/// readings and boot logs is kept, the others named in notes; none or several fitting is
/// [`LoadError::ResultChoice`]. `engine` reads the run as that engine whatever the inputs
/// said (xray, which asked the server); `None` resolves it from the choice.
pub fn load_run(
    choice: &mut EngineChoice,
    files: &RunFiles,
    requested: Option<u64>,
    engine: Option<Engine>,
) -> Result<Run, LoadError> {
    load_run_folding(choice, files, requested, engine, |_| None::<SeriesStats>)
        .map(|(run, _)| run.into_run())
}

/// [`load_run`] for the replay of the run's load alone (`whatif`): the result file's
/// request records are kept as what the replay reads of them ([`Keep::ForReplay`]), their
/// counts, errors and times counted as the account reads them, and no
/// [`ClientRequest`](inferlint_core::model::client::ClientRequest) nor gap between tokens held.
/// Everything else is read as [`load_run`] reads it; a check that reads each request
/// sees none.
pub fn load_run_for_replay(
    choice: &mut EngineChoice,
    files: &RunFiles,
    requested: Option<u64>,
) -> Result<Admitted, LoadError> {
    let known = Known {
        requested,
        ..Known::default()
    };
    load_run_kept(
        choice,
        files,
        &known,
        |_| None::<SeriesStats>,
        Keep::ForReplay,
    )
    .map(|(run, _)| run)
}

/// [`load_run`], with a fold of the caller's in the same pass over the recording as the
/// checks' statistics, so that a caller that needs more of the recording (the report's
/// charts) does not read it again. `side` is asked for its empty fold once the readings
/// are read, with the recording's ends ([`FoldStart`]); it returns `None` to fold nothing.
/// No fold comes back for a recording read from standard input (nothing shows its last
/// sample before the pass), for a recording whose ends show no sample, or for a run
/// without a recording.
pub fn load_run_folding<F: SampleFold>(
    choice: &mut EngineChoice,
    files: &RunFiles,
    requested: Option<u64>,
    engine: Option<Engine>,
    side: impl FnOnce(FoldStart<'_>) -> Option<F>,
) -> Result<(Admitted, Option<Folded<F>>), LoadError> {
    let known = Known {
        requested,
        engine,
        ..Known::default()
    };
    load_run_kept(choice, files, &known, side, Keep::Records)
}

fn load_run_kept<F: SampleFold>(
    choice: &mut EngineChoice,
    files: &RunFiles,
    known: &Known,
    side: impl FnOnce(FoldStart<'_>) -> Option<F>,
    keep: Keep,
) -> Result<(Admitted, Option<Folded<F>>), LoadError> {
    let boots = load_boots(choice, &files.boot_logs)?;
    let before = files
        .before
        .as_deref()
        .map(|p| load_snapshot(choice, p, "the snapshots"))
        .transpose()?;
    let after = files
        .after
        .as_deref()
        .map(|p| load_snapshot(choice, p, "the snapshots"))
        .transpose()?;
    if let (Some(before), Some(after)) = (&files.before, &files.after) {
        refuse_one_file_twice(before, after)?;
    }
    let (series, folded) = match files.series.as_deref() {
        Some(path) => {
            let side = if path.as_os_str() == STDIN {
                None
            } else {
                // A file whose ends cannot be read now fails in the pass, which says why.
                files::series_ends(path)
                    .ok()
                    .flatten()
                    .and_then(|(first, last)| {
                        side(FoldStart {
                            first: &first,
                            last: &last,
                            after: after.as_ref(),
                        })
                    })
            };
            // Only the samples between the readings are the run's: a recorder started
            // early or left running into the next load is read for what it saw of this
            // run alone.
            let window = match (&before, &after) {
                (Some(b), Some(a)) => inferlint_core::judging::identity::series_window(b, a),
                _ => None,
            };
            let (stats, folded) = load_series_with(choice, path, side, window)?;
            (Some(stats), folded)
        }
        None => (None, None),
    };
    let mut bench = if files.bench_candidates.len() > 1 {
        Some(choose_bench(
            choice,
            &files.bench_candidates,
            before.as_ref(),
            after.as_ref(),
            &boots,
            keep,
        )?)
    } else {
        files
            .bench
            .as_deref()
            .map(|p| files::read_bench_result_kept(p, keep).map(|b| (shown(p), b)))
            .transpose()?
    };
    if let (Some((_, account)), Some(log)) = (bench.as_mut(), files.load_log.as_deref()) {
        loadtools::console::complete_from_console_file(account, log)?;
    }
    // The untimed requests the result file itself counts (AIPerf's warm-up), else those
    // the tool announced on its console.
    let expected_extra_requests = match (
        bench.as_ref().and_then(|(_, b)| b.span.untimed_requests),
        &files.load_log,
    ) {
        (Some(n), _) => n,
        (None, Some(p)) => {
            let n = files::untimed_requests_in(p)?;
            // The console was read: what it announced, none included, is known.
            if let Some((_, b)) = bench.as_mut() {
                b.span.untimed_requests = Some(n);
            }
            n
        }
        (None, None) => 0,
    };
    if let (Some(b), Some(a), Some(bp), Some(ap)) = (&before, &after, &files.before, &files.after) {
        in_order(b, bp, a, ap)?;
    }
    let engine = known.engine.unwrap_or_else(|| choice.resolve());
    let mut notes = Vec::new();
    // The server's spans are read through its engine's table: an engine whose spans carry
    // no request's account has none to read, which a note says.
    let spans = match files.spans.as_deref() {
        Some(path) if engine.descriptor().request_span.is_none() => {
            notes.push(format!(
                "{} is not read: {}'s spans carry no request's account inferlint reads",
                shown(path),
                engine.name()
            ));
            None
        }
        Some(path) => Some(files::read_spans(path, engine.descriptor())?),
        None => None,
    };
    // Else its own records (a drain's file, the files it wrote), read through its table:
    // one account of each request, the spans first where both were kept.
    let server_requests = match (spans, files.server_requests.as_deref()) {
        (Some(spans), Some(path)) => {
            notes.push(format!(
                "{} is not read: the server's spans already give its account of each request",
                shown(path)
            ));
            Some(spans)
        }
        (Some(spans), None) => Some(spans),
        (None, Some(path)) if engine.descriptor().request_records.is_none() => {
            notes.push(format!(
                "{} is not read: {} keeps no per-request records inferlint reads",
                shown(path),
                engine.name()
            ));
            None
        }
        (None, Some(path)) => Some(files::read_server_requests(path, engine.descriptor())?),
        (None, None) => None,
    };
    let kv_events = files
        .kv_events
        .as_deref()
        .map(files::read_kv_events)
        .transpose()?;
    let steps = files.steps.as_deref().map(files::read_steps).transpose()?;
    // Else the step file's finished-request lines: the engine's own times of each request,
    // from its queue on (docs/steps.md). One account of each request: a note says which
    // was not read.
    // The step reader counted them: a file without one is not read again.
    let finished_lines = files
        .steps
        .as_deref()
        .filter(|_| steps.as_ref().is_some_and(|s| s.finished > 0));
    let server_requests = match (server_requests, finished_lines) {
        (Some(records), Some(path)) => {
            notes.push(format!(
                "the finished requests in {} are not read: {} already give the server's account of each request",
                shown(path),
                records.source.words()
            ));
            Some(records)
        }
        (None, Some(path)) => match files::read_finished_requests(path)? {
            Some(finished) => {
                let mut note = format!(
                    "the server's account of each request is {}'s finished-request lines: the engine's times from its queue on, without the API server's work before it (no line gives the request's receipt)",
                    shown(path)
                );
                if finished.not_kept > 0 {
                    note.push_str(&format!(
                        "; {} past the first {} were not kept",
                        finished.not_kept,
                        files::MAX_FINISHED_REQUESTS
                    ));
                }
                notes.push(note);
                Some(finished.requests)
            }
            None => None,
        },
        (records, None) => records,
    };
    // The version the server reported stands for a last boot log that states none.
    let mut boots = boots;
    if let Some((_, facts)) = boots.last_mut() {
        if facts.version.is_none() {
            facts.version.clone_from(&known.server_version);
        }
    }
    // Each input is placed against the others before anything reads it: a result file,
    // recording, reading or trace of another run is set aside here, and contributes
    // nothing.
    let mut run = identity::admit(Run {
        engine: engine.descriptor(),
        boots,
        before,
        after,
        series,
        bench,
        expected_extra_requests,
        requested: known.requested,
        load_failure: known.load_failure.clone(),
        rejected: Vec::new(),
        server_requests,
        kv_events,
        steps,
        notes,
    });
    // A result file written without a concurrency limit says 0 or nothing: no number.
    // Only a result file of this run says what the load asked for.
    let requested = run.requested.or_else(|| {
        run.bench
            .as_ref()
            .and_then(|(_, b)| b.max_concurrency)
            .and_then(|c| u64::try_from(c).ok())
            .filter(|c| *c > 0)
    });
    run.set_requested(requested);
    for note in &run.notes {
        choice.note(note.clone());
    }
    Ok((run, folded))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_mismatch_message_for_files_servers_and_commands() {
        let mismatch = |by, source| {
            Mismatch {
                named: Engine::Vllm,
                by,
                source,
                found: Engine::Sglang,
            }
            .to_string()
        };
        assert_eq!(
            mismatch(NamedBy::Flag, Source::Input("the snapshots".into())),
            "--engine vllm, but the snapshots came from SGLang. Check the server address or the file, or name the engine it came from."
        );
        assert_eq!(
            mismatch(
                NamedBy::Environment,
                Source::Server("http://127.0.0.1:1".into())
            ),
            "INFERLINT_ENGINE=vllm, but the server at http://127.0.0.1:1 runs SGLang. Check the server address or the file, or name the engine it came from."
        );
        assert!(mismatch(NamedBy::Caller, Source::ServeCommand)
            .starts_with("the engine named is vLLM, but the --serve command starts SGLang."));
    }

    /// Two inputs from different engines are refused even with nothing named; an input
    /// that says nothing is read as the engine the others said, without a note.
    #[test]
    fn inputs_must_agree() {
        let mut choice = EngineChoice::new(None);
        choice
            .input("boot.log", Some(Engine::Sglang))
            .unwrap_or_else(|e| panic!("{e}"));
        choice
            .input("run.series.jsonl", None)
            .unwrap_or_else(|e| panic!("{e}"));
        let mixed = choice.input("the snapshots", Some(Engine::Trtllm));
        assert!(
            matches!(mixed, Err(LoadError::MixedEngines { .. })),
            "{mixed:?}"
        );
        assert_eq!(choice.resolve(), Engine::Sglang);
        assert!(choice.take_notes().is_empty());
        let mut unsaid = EngineChoice::new(None);
        unsaid
            .input("a.prom", None)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(unsaid.resolve(), Engine::DEFAULT);
        assert_eq!(unsaid.take_notes().len(), 1);
    }

    /// A wall clock stepped back mid-recording, while the monotonic clock ran on, is a
    /// note and no refusal: every sample is read, and time is the monotonic clock's. The
    /// same step without monotonic stamps is time going back, refused.
    #[test]
    fn a_wall_step_under_a_running_monotonic_clock_is_a_note() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("run.series.jsonl");
        let lines = |mono: bool| -> String {
            (0..6i64)
                .map(|i| {
                    let wall = 1_790_000_000.0 + i as f64 - if i >= 3 { 60.0 } else { 0.0 };
                    let mono = if mono {
                        format!(", \"t_mono_ns\": {}", 9_000_000_000 + i * 1_000_000_000)
                    } else {
                        String::new()
                    };
                    format!("{{\"t_wall\": {wall}{mono}, \"running\": 1.0}}\n")
                })
                .collect()
        };
        std::fs::write(&path, lines(true)).unwrap();
        let mut choice = EngineChoice::new(None);
        let stats = load_series(&mut choice, &path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stats.samples, 6);
        assert_eq!(stats.refused, None);
        assert_eq!(stats.span_s(), Some(5.0));
        let notes = choice.take_notes();
        assert!(
            notes.iter().any(|n| n.ends_with(
                "the wall clock stepped back 60.0 s while the monotonic clock ran on; the recording's times are judged on the monotonic clock"
            )),
            "{notes:?}"
        );
        std::fs::write(&path, lines(false)).unwrap();
        let mut choice = EngineChoice::new(None);
        let stats = load_series(&mut choice, &path).unwrap_or_else(|e| panic!("{e}"));
        let refused = stats.refused.expect("wall time going back is refused");
        assert_eq!(refused.line, 4);
        assert!(
            refused.what.starts_with("t_wall does not move forward"),
            "{}",
            refused.what
        );
    }

    #[test]
    fn errors_name_their_file() {
        let e = LoadError::NotAFolder {
            path: PathBuf::from("-"),
        };
        assert_eq!(e.to_string(), "standard input is not a folder");
        assert_eq!(e.path(), Some(Path::new("-")));
        let unknown = EngineChoice::new(None);
        assert_eq!(unknown.named(), None);
    }
}
