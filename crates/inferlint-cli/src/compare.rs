//! `compare`, `sweep` and the `--baseline` gate: read each run folder as `report` does,
//! hand the checked runs to core, print what comes back.
//!
//! A side is a run folder, or a folder whose subfolders are run folders (repeats of one
//! setup, whose spread is the run-to-run noise; `inferlint::repeats` finds them). Every
//! run is read by [`load_run`], the one place a run folder becomes a checked run here.

use std::path::{Path, PathBuf};

use inferlint_core::analyses::compare::{self, Comparison, GateVerdict, Side, Verdict};
use inferlint_core::analyses::profile::RunProfile;
use inferlint_core::analyses::sweep;
use inferlint_core::judging::status::CheckResult;
use inferlint_core::run;
use inferlint_engines::files;
use inferlint_engines::output::{self as writer, Rule};

use inferlint_core::analyses::slo::{self, GpuPrice, RunSlo, ServiceLevel};

use crate::cli::{CompareArgs, SloArgs, SweepArgs};
use inferlint_engines::load::{self, shown, EngineChoice};

use crate::exit::{CliError, ExitCode};
use crate::loaded::noted;
use crate::output;

/// A checked run, its profile and the files it was read from.
pub(crate) struct Checked {
    pub profile: RunProfile,
    pub results: Vec<CheckResult>,
    /// The folder and the files the run was read from.
    pub files: RunInputs,
    /// The service level held to it, when one was given.
    pub slo: Option<RunSlo>,
}

/// The service level `--slo` or `--slo-file` gives, if any. A file that cannot be read
/// is an input error; one whose bounds do not read is a wrong command line, as a bad
/// `--slo` is.
pub(crate) fn service_level(args: &SloArgs) -> Result<Option<ServiceLevel>, CliError> {
    if let Some(level) = &args.slo {
        return Ok(Some(level.as_ref().clone()));
    }
    let Some(path) = &args.slo_file else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::input(format!(
            "cannot read the service level {}: {e}",
            path.display()
        ))
    })?;
    ServiceLevel::parse(&text)
        .map(Some)
        .map_err(|e| CliError::usage(format!("the service level in {}: {e}", path.display())))
}

/// A run's folder and the files it was read from, each with what it is: enough to tell
/// one run given twice.
#[derive(Debug, Clone)]
pub(crate) struct RunInputs {
    pub dir: Option<PathBuf>,
    pub files: Vec<(PathBuf, &'static str)>,
}

impl RunInputs {
    pub(crate) fn of(dir: Option<&Path>, found: &files::RunFiles) -> RunInputs {
        RunInputs {
            dir: dir.map(Path::to_owned),
            files: found
                .inputs()
                .into_iter()
                .map(|(path, what)| (path.to_owned(), what))
                .collect(),
        }
    }
}

/// Whether two files hold the same bytes; a file that cannot be read is not the same.
fn same_bytes(a: &Path, b: &Path) -> bool {
    use std::io::Read;
    let (Ok((fa, la)), Ok((fb, lb))) = (files::open_input(a), files::open_input(b)) else {
        return false;
    };
    if la != lb {
        return false;
    }
    let (mut ra, mut rb) = (std::io::BufReader::new(fa), std::io::BufReader::new(fb));
    let (mut ba, mut bb) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let n = match ra.read(&mut ba) {
            Ok(n) => n,
            Err(_) => return false,
        };
        if n == 0 {
            // Both ended together, or b holds more.
            return matches!(rb.read(&mut bb[..1]), Ok(0));
        }
        if rb.read_exact(&mut bb[..n]).is_err() || ba[..n] != bb[..n] {
            return false;
        }
    }
}

/// Why two runs are one: the same folder, or files of the same kinds holding the same
/// bytes (a copy). `None` when they are two runs.
pub(crate) fn one_run(a: &RunInputs, b: &RunInputs) -> Option<String> {
    let canonical = |d: &Option<PathBuf>| d.as_ref().and_then(|d| std::fs::canonicalize(d).ok());
    if let (Some(x), Some(y)) = (canonical(&a.dir), canonical(&b.dir)) {
        if x == y {
            return Some("it is the same folder".to_owned());
        }
    }
    let same_kinds =
        a.files.len() == b.files.len() && a.files.iter().zip(&b.files).all(|(x, y)| x.1 == y.1);
    if a.files.is_empty() || !same_kinds {
        return None;
    }
    let same_files = a.files.iter().zip(&b.files).all(|(x, y)| {
        canonical(&Some(x.0.clone())).is_some_and(|c| Some(c) == canonical(&Some(y.0.clone())))
            || same_bytes(&x.0, &y.0)
    });
    same_files.then(|| {
        let names: Vec<String> = a
            .files
            .iter()
            .map(|(p, _)| {
                p.file_name()
                    .map_or_else(|| shown(p), |n| n.to_string_lossy().into_owned())
            })
            .collect();
        format!(
            "their files are the same byte for byte ({})",
            names.join(", ")
        )
    })
}

/// Refuses a comparison in which one run is given twice (the same folder, or a copy of
/// its files): a run compared with itself, or repeats that are copies, measure nothing.
fn refuse_one_run_twice(runs: &[(String, &RunInputs)]) -> Result<(), CliError> {
    for (i, (a_label, a)) in runs.iter().enumerate() {
        for (b_label, b) in &runs[i + 1..] {
            if let Some(why) = one_run(a, b) {
                return Err(CliError::usage(format!(
                    "{a_label} and {b_label} are one run: {why}; a run compared with itself is no comparison, give runs of their own"
                )));
            }
        }
    }
    Ok(())
}

/// Reads and checks one run folder exactly as `report RUN` does (the engine named with
/// `--engine` or `INFERLINT_ENGINE` checked against each of its files); the folder is
/// searched once, for the run and for the list of files it was read from.
pub(crate) fn check(
    engine: Option<&str>,
    dir: &Path,
    level: Option<&ServiceLevel>,
) -> Result<Checked, CliError> {
    let found = load::find_run(dir)?;
    let mut choice = EngineChoice::from_args(engine)?;
    let (run, checked, _) = noted(&mut choice, |c| {
        load::check_files(
            c,
            &found,
            &load::Known::default(),
            &run::CheckOptions::default(),
            |_| None::<inferlint_core::judging::checks::series::SeriesStats>,
        )
    })?;
    let results = checked.results;
    let label = shown(dir);
    Ok(Checked {
        slo: level.map(|l| slo::hold_run(l, &label, &run)),
        profile: RunProfile::of(&label, &run, &results),
        results,
        files: RunInputs::of(Some(dir), &found),
    })
}

/// The run folders of one side: the folder itself when it holds a run, else each of its
/// subfolders that does, in name order (the library finds them). An empty subfolder
/// beside them is refused, named: a repeat or a load level whose run was never written
/// would otherwise drop out of the spread or the curve without a word.
pub(crate) fn runs_of(path: &Path) -> Result<Vec<PathBuf>, CliError> {
    let runs = inferlint::repeats(path)?;
    if runs.iter().any(|r| r == path) {
        return Ok(runs);
    }
    let mut empty: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| CliError::input(format!("cannot read {}: {e}", path.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir()
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                && writer::is_empty_folder(p)
        })
        .collect();
    empty.sort();
    if let Some(first) = empty.first() {
        let names: Vec<String> = empty.iter().map(|p| p.display().to_string()).collect();
        return Err(CliError::input(format!(
            "{} is an empty folder beside the runs in {} (a run never written?): remove it, or give the run folders one by one{}",
            first.display(),
            path.display(),
            if names.len() > 1 {
                format!(" (empty: {})", names.join(", "))
            } else {
                String::new()
            }
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

fn side(
    engine: Option<&str>,
    i: usize,
    path: &Path,
    level: Option<&ServiceLevel>,
) -> Result<(Side, Vec<Checked>), CliError> {
    side_of(engine, i, &[path], level)
}

/// One side made of every run in `paths` (each a run folder or a folder of repeats): the
/// repeats of one setup, given as `--baseline A --baseline A2`.
fn side_of(
    engine: Option<&str>,
    i: usize,
    paths: &[&Path],
    level: Option<&ServiceLevel>,
) -> Result<(Side, Vec<Checked>), CliError> {
    let mut runs = Vec::new();
    let mut checked = Vec::new();
    for path in paths {
        for dir in runs_of(path)? {
            let one = check(engine, &dir, level)?;
            runs.push(one.profile.clone());
            checked.push(one);
        }
    }
    Ok((
        Side {
            label: side_label(i),
            runs,
        },
        checked,
    ))
}

/// The exit status of a comparison: the gate's when there is one, else the verdict's;
/// with a service level, the worse of that and the goodput gate's.
pub(crate) fn comparison_exit(c: &Comparison) -> ExitCode {
    let code = figures_exit(c);
    match compare::goodput_verdict(c) {
        Some(slo::GateVerdict::Passed) | None => code,
        Some(slo::GateVerdict::Regressed) => crate::exit::worst(code, ExitCode::TripwireFailed),
        Some(slo::GateVerdict::CannotGate) => crate::exit::worst(code, ExitCode::Undecided),
    }
}

fn figures_exit(c: &Comparison) -> ExitCode {
    match c.gate.as_ref().map(|g| g.verdict) {
        Some(GateVerdict::Passed) => ExitCode::Passed,
        Some(GateVerdict::Regressed) => ExitCode::TripwireFailed,
        Some(GateVerdict::CannotGate | GateVerdict::Inconclusive) => ExitCode::Undecided,
        None => match c.verdict {
            Verdict::Comparable => ExitCode::Passed,
            Verdict::NotComparable => ExitCode::TripwireFailed,
            Verdict::CannotTell => ExitCode::Undecided,
        },
    }
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
    writer::write_file(path, html.as_bytes(), &rule).map_err(CliError::from)
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
    // Each side is one or more paths: every --baseline is a repeat of the baseline side,
    // every --candidate a repeat of the side after it, each positional RUN a side.
    let mut paths: Vec<Vec<&Path>> = Vec::new();
    for group in [&args.baseline, &args.candidate] {
        if !group.is_empty() {
            paths.push(group.iter().map(PathBuf::as_path).collect());
        }
    }
    paths.extend(args.runs.iter().map(|p| vec![p.as_path()]));
    if paths.len() < 2 {
        return Err(CliError::usage(
            "give two runs or more (or --baseline RUN and one run or more)",
        ));
    }
    let level = service_level(&args.slo)?;
    let mut sides = Vec::new();
    let mut all_checked = Vec::new();
    let mut slo_sides: Vec<(String, Vec<RunSlo>)> = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let (side, checked) = side_of(engine, i, path, level.as_ref())?;
        slo_sides.push((
            side.label.clone(),
            checked.iter().filter_map(|c| c.slo.clone()).collect(),
        ));
        all_checked.extend(checked);
        sides.push(side);
    }
    let named: Vec<(String, &RunInputs)> = sides
        .iter()
        .flat_map(|s| {
            s.runs
                .iter()
                .map(move |r| format!("{} ({})", r.label, s.label))
        })
        .zip(all_checked.iter().map(|c| &c.files))
        .collect();
    refuse_one_run_twice(&named)?;
    let mut all_results = Vec::new();
    let mut inputs = Vec::new();
    for checked in all_checked {
        all_results.push((checked.profile.label.clone(), checked.results));
        inputs.extend(checked.files.files.into_iter().map(|(path, _)| path));
    }
    let mut comparison = compare::compare(&sides, strict);
    if !args.baseline.is_empty() || args.max_regression.is_some() {
        let margin = args.max_regression.unwrap_or(DEFAULT_MARGIN);
        comparison.gate = Some(compare::gate(&comparison, margin));
    }
    if let Some(level) = &level {
        compare::with_service_level(&mut comparison, level, slo_sides, args.max_regression);
    }
    for (label, results) in &all_results {
        crate::junit::run_suite(
            &format!("inferlint compare: {label}"),
            "inferlint.compare.run",
            results,
            strict,
        );
    }
    crate::junit::add_cases(crate::junit::comparison_cases(&comparison, strict));
    if let Some(out) = &args.page.out {
        let html = inferlint_report::compare::render(
            &comparison,
            &generator(),
            args.page.title.as_deref(),
        );
        write_page(out, &html, args.page.force, &inputs)?;
    }
    if json {
        let mut text = output::json_safe(inferlint_core::story::contract::to_indent1(&comparison));
        text.push('\n');
        output::emit(&text)?;
    } else {
        let mut text = compare::terminal_text(&comparison);
        if let Some(out) = &args.page.out {
            text.push_str(&format!("-> {}\n", out.display()));
        }
        output::emit(&text)?;
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
    run: (&RunProfile, &RunInputs),
    margin: f64,
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    let (run, run_files) = run;
    let (base, checked) = side(engine, 0, baseline, None)?;
    let mut named: Vec<(String, &RunInputs)> = base
        .runs
        .iter()
        .map(|r| format!("the baseline {}", r.label))
        .zip(checked.iter().map(|c| &c.files))
        .collect();
    named.push((format!("this run {}", run.label), run_files));
    refuse_one_run_twice(&named)?;
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
    crate::junit::add_cases(crate::junit::comparison_cases(&comparison, strict));
    let text = gate_lines(&comparison);
    if json {
        // The --json array is a contract: the gate's words go to stderr.
        for line in text.lines() {
            crate::output::print_err(line);
        }
    } else {
        output::emit(&text)?;
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
    let level = service_level(&args.slo)?;
    if args.gpu_price.is_some() && level.is_none() {
        return Err(CliError::usage(
            "--gpu-price prices the capacity under a service level: give --slo (or --slo-file) too",
        ));
    }
    let price = args.gpu_price.map(|usd| GpuPrice {
        usd_per_gpu_hour: usd,
        gpus: args.gpus.unwrap_or(1),
    });
    let mut dirs = Vec::new();
    for path in &args.runs {
        dirs.extend(runs_of(path)?);
    }
    if dirs.len() < 2 {
        return Err(CliError::usage(
            "a sweep needs two runs or more: give their folders, or one folder holding them",
        ));
    }
    let mut all_checked = Vec::new();
    for dir in &dirs {
        all_checked.push(check(engine, dir, level.as_ref())?);
    }
    // One run given twice is one point of the curve, not two.
    let named: Vec<(String, &RunInputs)> = all_checked
        .iter()
        .map(|c| (c.profile.label.clone(), &c.files))
        .collect();
    refuse_one_run_twice(&named)?;
    let mut profiles = Vec::new();
    let mut inputs = Vec::new();
    let mut slos = Vec::new();
    for checked in all_checked {
        slos.extend(checked.slo);
        crate::junit::run_suite(
            &format!("inferlint sweep: {}", checked.profile.label),
            "inferlint.sweep.run",
            &checked.results,
            strict,
        );
        inputs.extend(checked.files.files.into_iter().map(|(path, _)| path));
        profiles.push(checked.profile);
    }
    let mut analysis = sweep::sweep(profiles, strict);
    if let Some(level) = &level {
        sweep::with_service_level(&mut analysis, level, slos, price);
    }
    if let Some(out) = &args.page.out {
        let html =
            inferlint_report::sweep::render(&analysis, &generator(), args.page.title.as_deref());
        write_page(out, &html, args.page.force, &inputs)?;
    }
    if json {
        let mut text = output::json_safe(inferlint_core::story::contract::to_indent1(&analysis));
        text.push('\n');
        output::emit(&text)?;
    } else {
        let mut text = sweep::terminal_text(&analysis);
        if let Some(out) = &args.page.out {
            text.push_str(&format!("-> {}\n", out.display()));
        }
        output::emit(&text)?;
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

    /// Same bytes means every byte: files of one length past the read buffer that differ
    /// only in their last byte are two files; a file and its copy are one.
    #[test]
    fn files_are_the_same_only_byte_for_byte() {
        let tmp = tempfile::tempdir().unwrap();
        let text: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut other = text.clone();
        *other.last_mut().unwrap() ^= 1;
        let (a, b, c) = (
            tmp.path().join("a"),
            tmp.path().join("b"),
            tmp.path().join("c"),
        );
        std::fs::write(&a, &text).unwrap();
        std::fs::write(&b, &text).unwrap();
        std::fs::write(&c, &other).unwrap();
        assert!(same_bytes(&a, &b));
        assert!(!same_bytes(&a, &c));
        assert!(!same_bytes(&a, &tmp.path().join("missing")));
        let run = |dir: &str, file: &Path| RunInputs {
            dir: Some(tmp.path().join(dir)),
            files: vec![(file.to_owned(), "a boot log")],
        };
        assert!(one_run(&run("x", &a), &run("y", &b)).is_some());
        assert_eq!(one_run(&run("x", &a), &run("y", &c)), None);
        // Another kind of file with the same bytes is not the same run either.
        let mut kind = run("y", &b);
        kind.files[0].1 = "the recording";
        assert_eq!(one_run(&run("x", &a), &kind), None);
    }

    #[test]
    fn sides_are_lettered() {
        assert_eq!(side_label(0), "A");
        assert_eq!(side_label(25), "Z");
        assert_eq!(side_label(26), "S27");
    }
}
