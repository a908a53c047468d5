//! `report`: the files a run folder holds or the flags name, checked by the one path
//! every command and the library take (`inferlint_engines::load::check_files`: the gate,
//! the verdicts, the account, what limited the run, the outcome), then printed, written
//! as report.html, and gated on `--baseline`.
//! A fleet folder goes to `fleet`.

use std::path::PathBuf;

use inferlint_core::judging::identity::Admitted;
use inferlint_core::judging::status::count_line;
use inferlint_core::run::{CheckOptions, RunOptions};
use inferlint_core::story::insights;
use inferlint_engines::files::RunFiles;
use inferlint_engines::load::{self, shown, EngineChoice, Known};
use inferlint_engines::output::{self as writer, Rule};
use inferlint_report::TimelinePass;

use crate::cli::ReportArgs;
use crate::exit::{worst, CliError, ExitCode};
use crate::loaded::noted;
use crate::output;
use crate::report_html::{self, Destination, Overwrite};

pub(crate) fn report(
    choice: &mut EngineChoice,
    args: &ReportArgs,
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    // A fleet folder, or a fleet read from Prometheus, is checked replica by replica.
    if let Some(code) = crate::fleet::report_if_fleet(choice, args, json, strict)? {
        return Ok(code);
    }
    let (paths, found_boot_logs) = files_named(args)?;
    // Where the report goes is settled before anything is read: never over an input,
    // never over a file that is not an earlier report without --force.
    let destination = Destination::new(args.run.as_deref(), args.out.as_deref());
    let reads = paths.inputs();
    let overwrite = Overwrite {
        force: args.force,
        reads: &reads,
    };
    let write_report = report_html::check(&destination, &overwrite)?;
    if let Some(path) = &args.llmd_br {
        crate::llmd_br::check(path, args.force, &reads)?;
    }
    if let Some(path) = &args.trace {
        writer::check(path, &trace_rule(args.force, &reads))
            .map_err(|e| CliError::from(e).prefixed("--trace: "))?;
    }
    // The one path: the files, the gate, the checks, the account, the story; the charts
    // are folded in the checks' pass over the recording.
    let known = Known {
        requested: args.requested,
        ..Known::default()
    };
    let options = CheckOptions {
        run: RunOptions {
            expect_cache_hits: args.expect_cache_hits,
            live_log: false,
        },
        after_missing: None,
    };
    let (run, checked, charts) = noted(choice, |c| {
        load::check_files(c, &paths, &known, &options, |ends| {
            TimelinePass::new(ends.first, ends.last, ends.after)
        })
    })?;
    if let Some(why) = checked.nothing_checked(&load::given(&paths)) {
        return Err(CliError::Undecided(why));
    }
    let results = &checked.results;
    // The HTML report is written first, so that the count line can say where it went.
    let inputs = report_html::Inputs {
        run: &run,
        results,
        account: &checked.account,
        insights: &checked.insights,
        series: paths.series.as_deref(),
        charts: charts.as_ref(),
        made_from: report_html::made_from(
            &found_boot_logs,
            [
                paths.before.as_deref(),
                paths.after.as_deref(),
                paths.series.as_deref(),
                paths.chosen_bench(&run),
            ],
        ),
        title: args.title.as_deref(),
    };
    if let Some(path) = &args.trace {
        write_trace(path, &inputs, (args.force, &reads))?;
    }
    if let Some(path) = &args.llmd_br {
        crate::llmd_br::write(
            path,
            (&run, results, &checked.account),
            (args.force, &reads),
            paths.chosen_bench(&run),
        )?;
    }
    let written = if write_report || destination == Destination::Nowhere {
        report_html::write(&destination, &inputs, &overwrite)
    } else {
        // Refused above, with a note.
        Ok(None)
    };
    if json {
        output::emit(&output::results_text(results, true))?;
    } else {
        let mut text = output::results_text(results, false);
        text.push_str(&insights::terminal_throughput(&checked.account));
        text.push_str(&insights::terminal_lines(&checked.insights));
        text.push_str(&count_line(results));
        if let Ok(Some(path)) = &written {
            text.push_str(&format!(" -> {}", shown(path)));
        }
        text.push('\n');
        output::emit(&text)?;
    }
    written?;
    // A service level that is not met fails the run (1); one that cannot be told is a
    // Can't tell (2), as a tripwire's would be.
    let mut slo_code = ExitCode::Passed;
    if let Some(level) = crate::compare::service_level(&args.slo)? {
        let label = args
            .run
            .as_deref()
            .map_or_else(|| "this run".to_owned(), shown);
        let held = inferlint_core::analyses::slo::hold_run(&level, &label, &run);
        slo_code = match held.verdict {
            inferlint_core::analyses::slo::Verdict::Met => ExitCode::Passed,
            inferlint_core::analyses::slo::Verdict::NotMet => ExitCode::TripwireFailed,
            inferlint_core::analyses::slo::Verdict::CannotTell => ExitCode::Undecided,
        };
        let text = inferlint_core::analyses::slo::run_text(&held, &level);
        if json {
            // The --json array is a contract: the service level's lines go to stderr.
            for line in text.lines() {
                output::print_err(line);
            }
        } else {
            output::emit(&text)?;
        }
    }
    let code = worst(ExitCode::of(checked.outcome(strict)), slo_code);
    match &args.baseline {
        Some(baseline) => {
            let gate = baseline_gate(
                choice,
                (args, baseline),
                &run,
                results,
                &paths,
                json,
                strict,
            )?;
            Ok(worst(code, gate))
        }
        None => Ok(code),
    }
}

/// The files to read: the run folder's, each replaced by the file its flag names. Refused:
/// nothing to read, and a recording on standard input (the charts are laid out from the
/// recording's first and last sample, read from the file's two ends before the pass over
/// the rest, and a stream shows its last sample only at its end).
fn files_named(args: &ReportArgs) -> Result<(RunFiles, Vec<PathBuf>), CliError> {
    let mut found = RunFiles::default();
    if let Some(dir) = &args.run {
        found = load::find_run(dir)?;
    }
    if !args.boot_logs.is_empty() {
        found.boot_logs = args.boot_logs.clone();
    }
    let pick = |flag: &Option<PathBuf>, found: Option<PathBuf>| flag.clone().or(found);
    let paths = RunFiles {
        boot_logs: found.boot_logs.clone(),
        before: pick(&args.before, found.before.clone()),
        after: pick(&args.after, found.after.clone()),
        series: pick(&args.series, found.series.clone()),
        bench: pick(&args.bench_result, found.bench.clone()),
        // `--bench-result` names the run's result: nothing to choose among.
        bench_candidates: if args.bench_result.is_some() {
            Vec::new()
        } else {
            found.bench_candidates.clone()
        },
        load_log: found.load_log.clone(),
        spans: pick(&args.spans, found.spans.clone()),
        kv_events: pick(&args.kv_events, found.kv_events.clone()),
        server_requests: pick(&args.server_requests, found.server_requests.clone()),
        steps: pick(&args.steps, found.steps.clone()),
    };
    if args.run.is_none()
        && paths.boot_logs.is_empty()
        && paths.before.is_none()
        && paths.after.is_none()
        && paths.series.is_none()
    {
        return Err(CliError::usage(
            "give a run folder, or -o and the files to read (--boot-log, --before, --after, --series)",
        ));
    }
    if paths
        .series
        .as_deref()
        .is_some_and(|p| p.as_os_str() == load::STDIN)
    {
        return Err(CliError::usage(
            "report lays its charts out from the recording's first and last sample before it reads the rest: give it as a file, not as - (standard input)",
        ));
    }
    Ok((paths, found.boot_logs))
}

/// `--baseline`: this run's profile against the baseline's, by compare's gate.
fn baseline_gate(
    choice: &EngineChoice,
    (args, baseline): (&ReportArgs, &std::path::Path),
    run: &Admitted,
    results: &[inferlint_core::judging::status::CheckResult],
    paths: &RunFiles,
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    let label = args
        .run
        .as_deref()
        .map_or_else(|| "this run".to_owned(), shown);
    let profile = inferlint_core::analyses::profile::RunProfile::of(&label, run, results);
    let margin = args
        .max_regression
        .unwrap_or(crate::compare::DEFAULT_MARGIN);
    let files = crate::compare::RunInputs::of(args.run.as_deref(), paths);
    crate::compare::baseline_gate(
        choice.named().map(|e| e.key()),
        baseline,
        (&profile, &files),
        margin,
        json,
        strict,
    )
}

/// `--trace FILE` under the command's rule for outputs (the one `--llmd-br` and the page
/// follow): never a file the report reads, a trace inferlint wrote earlier replaced, any
/// other file only with `--force`.
fn trace_rule<'a>(force: bool, reads: &'a [(&'a std::path::Path, &'a str)]) -> Rule<'a> {
    Rule {
        force,
        reads,
        ours: Some(is_our_trace),
    }
}

/// Whether a file is a trace inferlint wrote: JSON whose `otherData` names our generator.
fn is_our_trace(path: &std::path::Path) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|v| v["otherData"]["generator"].as_str().map(str::to_owned))
        .is_some_and(|g| g.starts_with("inferlint "))
}

/// `--trace FILE`: the run's timeline as Chrome trace event JSON.
fn write_trace(
    path: &std::path::Path,
    inputs: &report_html::Inputs,
    (force, reads): (bool, &[(&std::path::Path, &str)]),
) -> Result<(), CliError> {
    let text = report_html::trace(inputs)?;
    writer::write_file(path, text.as_bytes(), &trace_rule(force, reads))
        .map_err(|e| CliError::from(e).prefixed("--trace: "))
}
