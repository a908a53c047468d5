//! Writing report.html: glue between the report command and inferlint-report.
//!
//! The checks folded the recording into statistics only; the charts need its shape, so
//! the recording is streamed once more into a [`TimelineBuilder`] sized from those
//! statistics (a day-long recording is downsampled while it is read, never held). The page
//! is then rendered and written to a temporary file beside the target and renamed over
//! it, so a reader never sees half a report and a failed write leaves the old one.
//!
//! Where it goes: `-o FILE` when given (parent folders created); else `RUN/report.html`
//! for a run folder; else, with only files named, nowhere (a note says to give `-o`),
//! because writing into whatever folder the command ran in would surprise. A run folder
//! marked read-only (no write permission bits) is left alone even for root, who could
//! write anyway: recordings kept read-only stay as they were, and the note says so.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use inferlint_core::insights::Insight;
use inferlint_core::run::Run;
use inferlint_core::status::CheckResult;
use inferlint_engines::files;
use inferlint_report::{Report, Timeline, TimelineBuilder, TimelineSetup};

use crate::exit::CliError;

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
    pub run: &'a Run,
    pub results: &'a [CheckResult],
    pub insights: &'a [Insight],
    /// The recording, read again for the charts.
    pub series: Option<&'a Path>,
    pub made_from: Vec<String>,
    pub title: Option<&'a str>,
}

/// The file names the report was made from, in the order boot logs, before, after,
/// series, result file.
pub fn made_from(boot_logs: &[PathBuf], others: [Option<&Path>; 4]) -> Vec<String> {
    boot_logs
        .iter()
        .map(PathBuf::as_path)
        .chain(others.into_iter().flatten())
        .map(|p| {
            p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        })
        .collect()
}

/// The recording folded for drawing, with the address its header names.
fn timeline(inputs: &Inputs) -> Result<Option<(Timeline, Option<String>)>, CliError> {
    let (Some(path), Some(stats)) = (inputs.series, inputs.run.series.as_ref()) else {
        return Ok(None);
    };
    let usable_blocks = inferlint_report::usable_blocks(inputs.results);
    let Some(setup) = TimelineSetup::new(stats, inputs.run.engine, usable_blocks, None) else {
        return Ok(None);
    };
    let mut builder = TimelineBuilder::new(setup);
    let summary = files::read_series(path, |sample| builder.push(sample))?;
    let mut timeline = builder.finish();
    let header = summary.header.unwrap_or_default();
    timeline.setup.interval_s = header.interval_s;
    Ok(Some((timeline, header.url)))
}

/// The whole page.
pub fn render(inputs: &Inputs) -> Result<String, CliError> {
    let folded = timeline(inputs)?;
    let generator = format!("inferlint {}", env!("CARGO_PKG_VERSION"));
    let report = Report {
        run: inputs.run,
        results: inputs.results,
        insights: inputs.insights,
        timeline: folded.as_ref().map(|(t, _)| t),
        series_url: folded.as_ref().and_then(|(_, u)| u.as_deref()),
        title: inputs.title,
        made_from: &inputs.made_from,
        generator: &generator,
    };
    Ok(inferlint_report::render(&report))
}

/// Writes the report where it should go. `Ok(Some(path))` when written; `Ok(None)` when
/// it was not to be written, or a run folder could not take it (a note says why); an
/// error only when `-o` named a file that could not be written.
pub fn write(destination: &Destination, inputs: &Inputs) -> Result<Option<PathBuf>, CliError> {
    match destination {
        Destination::Nowhere => {
            eprintln!("note: no report written: give -o FILE (or a run folder) to write one");
            Ok(None)
        }
        Destination::Asked(path) => {
            let html = render(inputs)?;
            write_atomically(path, &html).map_err(|e| {
                CliError::usage(format!("cannot write the report {}: {e}", path.display()))
            })?;
            Ok(Some(path.clone()))
        }
        Destination::RunFolder(path) => {
            let folder = path.parent().unwrap_or(Path::new("."));
            if marked_read_only(folder) {
                eprintln!(
                    "note: report.html not written: {} is read-only; give -o FILE to write it elsewhere",
                    folder.display()
                );
                return Ok(None);
            }
            let html = render(inputs)?;
            match write_atomically(path, &html) {
                Ok(()) => Ok(Some(path.clone())),
                Err(e) => {
                    eprintln!(
                        "note: report.html not written: {}: {e}; give -o FILE to write it elsewhere",
                        path.display()
                    );
                    Ok(None)
                }
            }
        }
    }
}

/// A folder with no write permission bits at all.
fn marked_read_only(folder: &Path) -> bool {
    fs::metadata(folder).is_ok_and(|m| m.permissions().readonly())
}

/// Writes `text` to a temporary file beside `path`, then renames it over `path`. Parent
/// folders are created first.
pub fn write_atomically(path: &Path, text: &str) -> io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent)?;
    let name = path.file_name().map_or_else(
        || "report.html".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    let temporary = parent.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = fs::File::create(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        fs::rename(&temporary, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    result
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
