//! Writing report.html: glue between the report command and inferlint-report.
//!
//! The charts need the recording's shape, which the checks' pass over it folded beside
//! their statistics ([`TimelinePass`], a day-long recording downsampled while it is read,
//! never held). Where that pass cannot vouch for its timeline (the file's ends were not
//! the first and last sample on the clock the checks timed the recording by, or the
//! preemption counter has fractions), the recording is streamed once more into a
//! [`TimelineBuilder`] sized from the statistics, as it always was before. The page is then rendered and written to
//! a temporary file beside the target and renamed over it, so a reader never sees half a
//! report and a failed write leaves the old one.
//!
//! What it may write over: nothing the report reads, `--force` or not; a report inferlint
//! wrote (so `report RUN` again regenerates RUN/report.html); any other file only with
//! `--force`, and a symbolic link is then replaced, never followed.
//!
//! Where it goes: `-o FILE` when given (parent folders created); else `RUN/report.html`
//! for a run folder; else, with only files named, nowhere (a note says to give `-o`),
//! because writing into whatever folder the command ran in would surprise. A run folder
//! marked read-only (no write permission bits) is left alone even for root, who could
//! write anyway: recordings kept read-only stay as they were, and the note says so.

use std::fs;
use std::path::{Path, PathBuf};

use inferlint_core::judging::identity::Admitted;
use inferlint_core::judging::status::CheckResult;
use inferlint_core::story::account::Account;
use inferlint_core::story::insights::Insight;
use inferlint_engines::files;
use inferlint_engines::load::Folded;
use inferlint_engines::output::{self, OutputError, Rule};
use inferlint_report::{charts_timeline, PassCharts, Report, Timeline, TimelinePass};

use crate::exit::CliError;
use crate::output::eprint_line;

/// Where the report is to be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// `-o FILE`: a failure to write it is an error.
    Asked(PathBuf),
    /// `RUN/report.html`: a folder that cannot take it gets a note, not an error.
    RunFolder(PathBuf),
    /// Only files were named, and no `-o`.
    Nowhere,
}

impl Destination {
    pub fn new(run_folder: Option<&Path>, out: Option<&Path>) -> Destination {
        match (out, run_folder) {
            (Some(out), _) => Destination::Asked(out.to_owned()),
            (None, Some(folder)) => Destination::RunFolder(folder.join("report.html")),
            (None, None) => Destination::Nowhere,
        }
    }
}

/// What the report needs besides the checked run.
#[derive(Debug)]
pub struct Inputs<'a> {
    pub run: &'a Admitted,
    pub results: &'a [CheckResult],
    /// The run's one account ([`inferlint_core::run::check`] made it): the page's figures.
    pub account: &'a Account,
    pub insights: &'a [Insight],
    /// The recording, read again for the charts when `charts` cannot vouch for them.
    pub series: Option<&'a Path>,
    /// The timeline the checks' pass over the recording folded for the charts.
    pub charts: Option<&'a Folded<TimelinePass>>,
    pub made_from: Vec<String>,
    pub title: Option<&'a str>,
}

/// The file names the report was made from, in the order boot logs, before, after,
/// series, result file. A file read through a symbolic link is named with where the
/// link leads (`run.series.jsonl -> ../other/run.series.jsonl`), so the report says which
/// file it read.
pub fn made_from(boot_logs: &[PathBuf], others: [Option<&Path>; 4]) -> Vec<String> {
    boot_logs
        .iter()
        .map(PathBuf::as_path)
        .chain(others.into_iter().flatten())
        .map(|p| {
            let name = p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            match fs::read_link(p) {
                Ok(target) => format!("{name} -> {}", target.display()),
                Err(_) => name,
            }
        })
        .collect()
}

/// The recording folded for drawing, with the address its header names (one rule for
/// every page: [`inferlint_report::charts_timeline`]).
fn timeline(inputs: &Inputs) -> Result<Option<(Timeline, Option<String>)>, CliError> {
    let (Some(path), Some(stats)) = (inputs.series, inputs.run.series.as_ref()) else {
        return Ok(None);
    };
    let pass = inputs.charts.map(|charts| PassCharts {
        pass: &charts.fold,
        interval_s: charts.header.interval_s,
        url: charts.header.url.as_deref(),
    });
    charts_timeline(
        stats,
        inputs.run.engine,
        inferlint_report::usable_blocks(inputs.results),
        pass,
        |builder| {
            let summary = files::read_series(path, |sample| builder.push(sample))?;
            let header = summary.header.unwrap_or_default();
            Ok((header.interval_s, header.url))
        },
    )
}

/// The whole page.
pub fn render(inputs: &Inputs) -> Result<String, CliError> {
    with_report(inputs, inferlint_report::render)
}

/// The run's timeline as Chrome trace event JSON (`report --trace`), from the same
/// report the page is made from.
pub fn trace(inputs: &Inputs) -> Result<String, CliError> {
    with_report(inputs, inferlint_report::trace::chrome_trace)
}

fn with_report(inputs: &Inputs, make: fn(&Report) -> String) -> Result<String, CliError> {
    let folded = timeline(inputs)?;
    let generator = format!("inferlint {}", env!("CARGO_PKG_VERSION"));
    let report = Report {
        run: inputs.run,
        results: inputs.results,
        account: inputs.account,
        insights: inputs.insights,
        timeline: folded.as_ref().map(|(t, _)| t),
        series_url: folded.as_ref().and_then(|(_, u)| u.as_deref()),
        title: inputs.title,
        made_from: &inputs.made_from,
        generator: &generator,
    };
    Ok(make(&report))
}

/// How a report may be written over what is already there.
#[derive(Debug, Clone, Copy)]
pub struct Overwrite<'a> {
    /// `--force`: replace any file but an input.
    pub force: bool,
    /// Every file the report reads, with a few words naming each: never written over.
    pub reads: &'a [(&'a Path, &'a str)],
}

impl Overwrite<'_> {
    fn rule(&self) -> Rule<'_> {
        Rule {
            force: self.force,
            reads: self.reads,
            ours: Some(is_our_report),
        }
    }
}

/// Whether a file is a report inferlint wrote: it opens with the page's doctype and names
/// inferlint as its generator in its head. Regenerating such a report loses nothing the
/// run folder does not still hold, so `report RUN` twice replaces its own report; any
/// other file needs `--force`.
pub fn is_our_report(path: &Path) -> bool {
    use std::io::Read;
    let Ok(file) = fs::File::open(path) else {
        return false;
    };
    let mut head = Vec::new();
    if file.take(8 << 10).read_to_end(&mut head).is_err() {
        return false;
    }
    let head = String::from_utf8_lossy(&head);
    head.starts_with("<!DOCTYPE html>")
        && head.contains("<meta name=\"generator\" content=\"inferlint ")
}

/// Checks, before anything is read or rendered, that the report may go where it is to
/// go: an error when `-o` names a file it may not replace, a note (and no report) when a
/// run folder's report.html is not ours. Returns whether to write it.
pub fn check(destination: &Destination, overwrite: &Overwrite) -> Result<bool, CliError> {
    match destination {
        Destination::Nowhere => Ok(false),
        Destination::Asked(path) => output::check(path, &overwrite.rule())
            .map(|()| true)
            .map_err(|e| cannot_write(path, e)),
        Destination::RunFolder(path) => match output::check(path, &overwrite.rule()) {
            Ok(()) => Ok(true),
            Err(e) => {
                eprint_line!("note: report.html not written: {e}; or give -o FILE");
                Ok(false)
            }
        },
    }
}

/// Writes the report where it should go. `Ok(Some(path))` when written; `Ok(None)` when
/// it was not to be written, or a run folder could not take it (a note says why); an
/// error only when `-o` named a file that could not be written.
pub fn write(
    destination: &Destination,
    inputs: &Inputs,
    overwrite: &Overwrite,
) -> Result<Option<PathBuf>, CliError> {
    match destination {
        Destination::Nowhere => {
            eprint_line!("note: no report written: give -o FILE (or a run folder) to write one");
            Ok(None)
        }
        Destination::Asked(path) => {
            publish(stage(path, inputs, overwrite)?)?;
            Ok(Some(path.clone()))
        }
        Destination::RunFolder(path) => {
            let folder = path.parent().unwrap_or(Path::new("."));
            if marked_read_only(folder) {
                eprint_line!(
                    "note: report.html not written: {} is read-only; give -o FILE to write it elsewhere",
                    folder.display()
                );
                return Ok(None);
            }
            let html = render(inputs)?;
            match output::write_file(path, html.as_bytes(), &overwrite.rule()) {
                Ok(()) => Ok(Some(path.clone())),
                Err(OutputError::Io { source, .. }) => {
                    eprint_line!(
                        "note: report.html not written: {}: {source}; give -o FILE to write it elsewhere",
                        path.display()
                    );
                    Ok(None)
                }
                Err(e) => {
                    eprint_line!("note: report.html not written: {e}; or give -o FILE");
                    Ok(None)
                }
            }
        }
    }
}

/// Renders the report and writes it beside `path`, to be put there by [`publish`]: a
/// command that writes several pages (a fleet's) stages each as it is made and publishes
/// them once every one is, so that an error on the way leaves none of them.
pub fn stage(
    path: &Path,
    inputs: &Inputs,
    overwrite: &Overwrite,
) -> Result<output::Staged, CliError> {
    let html = render(inputs)?;
    output::stage(path, html.as_bytes(), &overwrite.rule()).map_err(|e| cannot_write(path, e))
}

/// Puts a staged report in place.
pub fn publish(staged: output::Staged) -> Result<(), CliError> {
    let path = staged.path().to_owned();
    staged.publish().map_err(|e| cannot_write(&path, e))
}

/// The error of an `-o` file that may not or cannot be written.
fn cannot_write(path: &Path, e: OutputError) -> CliError {
    match e {
        OutputError::Io { source, .. } => CliError::cannot_write(format!(
            "cannot write the report {}: {source}",
            path.display()
        )),
        refused => CliError::from(refused),
    }
}

/// A folder with no write permission bits at all.
fn marked_read_only(folder: &Path) -> bool {
    fs::metadata(folder).is_ok_and(|m| m.permissions().readonly())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn where_the_report_goes() {
        assert_eq!(
            Destination::new(Some(Path::new("run")), None),
            Destination::RunFolder(PathBuf::from("run/report.html"))
        );
        assert_eq!(
            Destination::new(Some(Path::new("run")), Some(Path::new("x.html"))),
            Destination::Asked(PathBuf::from("x.html"))
        );
        assert_eq!(Destination::new(None, None), Destination::Nowhere);
    }

    #[test]
    fn made_from_lists_names_in_order() {
        let logs = vec![PathBuf::from("a/boot.log")];
        let names = made_from(
            &logs,
            [
                Some(Path::new("a/before.snapshot.json")),
                None,
                Some(Path::new("/x/run.series.jsonl")),
                Some(Path::new("bench.json")),
            ],
        );
        assert_eq!(
            names,
            [
                "boot.log",
                "before.snapshot.json",
                "run.series.jsonl",
                "bench.json"
            ]
        );
    }
}
