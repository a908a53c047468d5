//! `compare`, `sweep` and the `--baseline` gate: read each run folder as `report` does,
//! hand the checked runs to core, print what comes back.
//!
//! A side is a run folder, or a folder whose subfolders are run folders (repeats of one
//! setup, whose spread is the run-to-run noise). Every run is read by [`load_run`], the
//! one place a run folder becomes a checked run here.

use std::path::{Path, PathBuf};

use inferlint_core::compare::{self, Comparison, GateVerdict, Side, Verdict};
use inferlint_core::profile::RunProfile;
use inferlint_core::run;
use inferlint_core::status::CheckResult;
use inferlint_core::sweep;
use inferlint_engines::files;
use inferlint_engines::output::{self as writer, Rule};

use crate::cli::{CompareArgs, SweepArgs};
use inferlint_engines::load::{self, shown, EngineChoice};

use crate::commands::noted;
use crate::exit::{CliError, ExitCode};
use crate::output;

/// A checked run, its profile and the files it was read from.
pub(crate) struct Checked {
    pub profile: RunProfile,
    pub results: Vec<CheckResult>,
    pub inputs: Vec<PathBuf>,
}

/// Reads and checks one run folder exactly as `report RUN` does (the engine named with
/// `--engine` or `INFERLINT_ENGINE` checked against each of its files); the folder is
/// searched once, for the run and for the list of files it was read from.
pub(crate) fn check(engine: Option<&str>, dir: &Path) -> Result<Checked, CliError> {
    let found = load::find_run(dir)?;
    let mut choice = EngineChoice::from_args(engine)?;
    let run = noted(&mut choice, |c| load::load_run(c, &found, None, None))?;
    let results = run::check_run(&run);
    let inputs = found
        .inputs()
        .into_iter()
        .map(|(path, _)| path.to_owned())
        .collect();
    Ok(Checked {
        profile: RunProfile::of(&shown(dir), &run, &results),
        results,
        inputs,
    })
}

/// Whether a folder holds a run's own files (not only subfolders).
fn holds_a_run(dir: &Path) -> bool {
    files::discover_run(dir).is_ok_and(|f| !f.is_empty())
}

/// The run folders of one side: the folder itself when it holds a run, else each of its
/// subfolders that does, in name order.
pub(crate) fn runs_of(path: &Path) -> Result<Vec<PathBuf>, CliError> {
    if !path.is_dir() {
        return Err(CliError::usage(format!("{} is not a folder", shown(path))));
    }
    if holds_a_run(path) {
        return Ok(vec![path.to_owned()]);
    }
    let mut runs: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", shown(path))))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && holds_a_run(p))
        .collect();
    runs.sort();
    if runs.is_empty() {
        return Err(CliError::usage(format!(
            "no run files in {} or its subfolders (boot.log, *.snapshot.json, *.series.jsonl)",
            shown(path)
        )));
    }
    Ok(runs)
}

/// `A`, `B`, ... `Z`, then `S27`...
fn side_label(i: usize) -> String {
    u8::try_from(i).ok().filter(|i| *i < 26).map_or_else(
        || format!("S{}", i + 1),
        |i| char::from(b'A' + i).to_string(),
    )
}

fn side(engine: Option<&str>, i: usize, path: &Path) -> Result<(Side, Vec<Checked>), CliError> {
    let mut runs = Vec::new();
    let mut checked = Vec::new();
    for dir in runs_of(path)? {
        let one = check(engine, &dir)?;
        runs.push(one.profile.clone());
        checked.push(one);
    }
    Ok((
        Side {
            label: side_label(i),
            runs,
        },
        checked,
    ))
}

/// The exit status of a comparison: the gate's when there is one, else the verdict's.
pub(crate) fn comparison_exit(c: &Comparison) -> ExitCode {
    match c.gate.as_ref().map(|g| g.verdict) {
        Some(GateVerdict::Passed) => ExitCode::Passed,
        Some(GateVerdict::Regressed) => ExitCode::TripwireFailed,
        Some(GateVerdict::CannotGate) => ExitCode::Undecided,
        None => match c.verdict {
            Verdict::Comparable => ExitCode::Passed,
            Verdict::NotComparable => ExitCode::TripwireFailed,
            Verdict::CannotTell => ExitCode::Undecided,
        },
    }
}

fn print(text: &str) -> Result<(), CliError> {
    output::print(text).map_err(|e| CliError::usage(format!("cannot write the output: {e}")))
}

/// Writes a page that `compare` or `sweep` made, by the report's rules: never over a file
/// it read, over an earlier page of ours, over anything else only with `--force`.
fn write_page(path: &Path, html: &str, force: bool, reads: &[PathBuf]) -> Result<(), CliError> {
    let reads: Vec<(&Path, &str)> = reads
        .iter()
        .map(|p| (p.as_path(), "a run's file"))
        .collect();
    let rule = Rule {
        force,
        reads: &reads,
        ours: Some(crate::report_html::is_our_report),
    };
    writer::write_file(path, html.as_bytes(), &rule).map_err(|e| CliError::usage(e.to_string()))
}

fn generator() -> String {
    format!("inferlint {}", env!("CARGO_PKG_VERSION"))
}

pub(crate) fn compare_command(
    engine: Option<&str>,
    args: &CompareArgs,
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    let mut paths: Vec<&Path> = Vec::new();
    if let Some(base) = &args.baseline {
        paths.push(base);
    }
    paths.extend(args.runs.iter().map(PathBuf::as_path));
    if paths.len() < 2 {
        return Err(CliError::usage(
            "give two runs or more (or --baseline RUN and one run or more)",
        ));
    }
    let mut sides = Vec::new();
    let mut all_results = Vec::new();
    let mut inputs = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let (side, checked) = side(engine, i, path)?;
        for (run, checked) in side.runs.iter().zip(checked) {
            all_results.push((run.label.clone(), checked.results));
            inputs.extend(checked.inputs);
        }
        sides.push(side);
    }
    let mut comparison = compare::compare(&sides, strict);
    if args.baseline.is_some() || args.max_regression.is_some() {
        let margin = args.max_regression.unwrap_or(DEFAULT_MARGIN);
        comparison.gate = Some(compare::gate(&comparison, margin));
    }
    for (label, results) in &all_results {
        crate::junit::run_suite(
            &format!("inferlint compare: {label}"),
            "inferlint.compare.run",
            results,
            strict,
        );
    }
    crate::junit::cases(inferlint_core::junit::comparison_cases(&comparison, strict));
    if let Some(out) = &args.page.out {
        let html = inferlint_report::compare::render(
            &comparison,
            &generator(),
            args.page.title.as_deref(),
        );
        write_page(out, &html, args.page.force, &inputs)?;
    }
    if json {
        let mut text = output::json_safe(inferlint_core::contract::to_indent1(&comparison));
        text.push('\n');
        print(&text)?;
    } else {
        let mut text = compare::terminal_text(&comparison);
        if let Some(out) = &args.page.out {
            text.push_str(&format!("-> {}\n", out.display()));
        }
        print(&text)?;
    }
    Ok(comparison_exit(&comparison))
}

/// The margin `--baseline` uses without `--max-regression`.
pub(crate) const DEFAULT_MARGIN: f64 = 0.05;

/// `report RUN --baseline BASE`: the run against its baseline, printed after the report.
/// Returns the gate's exit status.
pub(crate) fn baseline_gate(
    engine: Option<&str>,
    baseline: &Path,
    run: &RunProfile,
    margin: f64,
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    let (base, _) = side(engine, 0, baseline)?;
    let sides = [
        base,
        Side {
            label: side_label(1),
            runs: vec![run.clone()],
        },
    ];
    let mut comparison = compare::compare(&sides, strict);
    let gate = compare::gate(&comparison, margin);
    comparison.gate = Some(gate);
    crate::junit::cases(inferlint_core::junit::comparison_cases(&comparison, strict));
    let text = gate_lines(&comparison);
    if json {
        // The --json array is a contract: the gate's words go to stderr.
        for line in text.lines() {
            crate::output::print_err(line);
        }
    } else {
        print(&text)?;
    }
    Ok(comparison_exit(&comparison))
}

/// The gate's lines for `report --baseline`: against what, and its answer.
fn gate_lines(c: &Comparison) -> String {
    let mut out = format!(
        "baseline: A = {}; this run: B = {}\n",
        c.sides[0].runs.join(", "),
        c.sides[1].runs.join(", ")
    );
    let full = compare::terminal_text(c);
    // The verdict and gate lines close the terminal text.
    for line in full.lines().filter(|l| {
        l.starts_with("gate:")
            || l.starts_with("comparable")
            || l.starts_with("not comparable")
            || l.starts_with("cannot tell")
    }) {
        out.push_str(line);
        out.push('\n');
    }
    out
}

pub(crate) fn sweep_command(
    engine: Option<&str>,
    args: &SweepArgs,
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    let mut dirs = Vec::new();
    for path in &args.runs {
        dirs.extend(runs_of(path)?);
    }
    if dirs.len() < 2 {
        return Err(CliError::usage(
            "a sweep needs two runs or more: give their folders, or one folder holding them",
        ));
    }
    let mut profiles = Vec::new();
    let mut inputs = Vec::new();
    for dir in &dirs {
        let checked = check(engine, dir)?;
        crate::junit::run_suite(
            &format!("inferlint sweep: {}", checked.profile.label),
            "inferlint.sweep.run",
            &checked.results,
            strict,
        );
        inputs.extend(checked.inputs);
        profiles.push(checked.profile);
    }
    let analysis = sweep::sweep(profiles, strict);
    if let Some(out) = &args.page.out {
        let html =
            inferlint_report::sweep::render(&analysis, &generator(), args.page.title.as_deref());
        write_page(out, &html, args.page.force, &inputs)?;
    }
    if json {
        let mut text = output::json_safe(inferlint_core::contract::to_indent1(&analysis));
        text.push('\n');
        print(&text)?;
    } else {
        let mut text = sweep::terminal_text(&analysis);
        if let Some(out) = &args.page.out {
            text.push_str(&format!("-> {}\n", out.display()));
        }
        print(&text)?;
    }
    Ok(sweep::exit_word(&analysis).into())
}

impl From<sweep::Outcome> for ExitCode {
    fn from(o: sweep::Outcome) -> ExitCode {
        match o {
            sweep::Outcome::Found => ExitCode::Passed,
            sweep::Outcome::NotOneSetup => ExitCode::TripwireFailed,
            sweep::Outcome::CannotTell => ExitCode::Undecided,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_are_lettered() {
        assert_eq!(side_label(0), "A");
        assert_eq!(side_label(25), "Z");
        assert_eq!(side_label(26), "S27");
    }
}
