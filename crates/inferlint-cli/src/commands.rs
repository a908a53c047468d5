//! Each command: read the files, hand them to the library, print what comes back.

use std::path::{Path, PathBuf};

use inferlint_core::checks::counters::out_of_order;
use inferlint_core::checks::series::SeriesStats;
use inferlint_core::checks::{boot, snapshots};
use inferlint_core::model::{BootFacts, Snapshot};
use inferlint_core::run::{self, Run};
use inferlint_core::status::{any_verdict, count_line, CheckResult, Status};
use inferlint_core::{catalogue, contract, insights, Engine};
use inferlint_engines::{detect, files, loadtools};

use crate::cli::{Cli, Command, ReportArgs};
use crate::engine_choice::EngineChoice;
use crate::exit::{CliError, ExitCode};
use crate::output;
use crate::output::eprint_line;

pub fn dispatch(cli: &Cli) -> Result<ExitCode, CliError> {
    let g = &cli.global;
    let mut choice = EngineChoice::from_args(g.engine.as_deref())?;
    match &cli.command {
        Command::CheckLog { logs } => check_log(&mut choice, logs, g.json, g.strict),
        Command::BootFacts { log } => boot_facts(&mut choice, log, g.json, g.strict),
        Command::Preemption {
            before,
            after,
            series,
            boot_log,
        } => {
            let (before, after) = load_snapshots(&mut choice, before, after)?;
            let stats = series
                .as_deref()
                .map(|p| load_series(&mut choice, p))
                .transpose()?;
            let facts = boot_log
                .as_deref()
                .map(|p| load_boot(&mut choice, p))
                .transpose()?;
            let engine = choice.resolve().descriptor();
            let result =
                snapshots::preemption(engine, &before, &after, stats.as_ref(), facts.as_ref());
            finish(&[result], g.json, g.strict)
        }
        Command::Rate {
            before,
            after,
            counter,
        } => {
            let (before, after) = load_snapshots(&mut choice, before, after)?;
            let engine = choice.resolve().descriptor();
            let result = snapshots::rate(engine, &before, &after, counter.as_deref());
            finish(&[result], g.json, g.strict)
        }
        Command::Series {
            series,
            snapshot,
            requested,
            boot_log,
        } => {
            let stats = load_series(&mut choice, series)?;
            let after = snapshot
                .as_deref()
                .map(|p| load_snapshot(&mut choice, p, "the snapshot"))
                .transpose()?;
            let facts = boot_log
                .as_deref()
                .map(|p| load_boot(&mut choice, p))
                .transpose()?;
            let engine = choice.resolve().descriptor();
            let results =
                run::series_checks(engine, &stats, after.as_ref(), *requested, facts.as_ref());
            finish(&results, g.json, g.strict)
        }
        Command::Xray(args) => crate::xray::xray(&mut choice, args, g.json, g.strict),
        Command::Report(args) => report(&mut choice, args, g.json, g.strict),
        Command::Snapshot { url, out, force } => crate::live::snapshot(&choice, url, out, *force),
        Command::Watch(args) => crate::live::watch(&mut choice, args),
        Command::Probe {
            url,
            model,
            concurrency,
            max_tokens,
        } => crate::live::probe(g, url, model.as_deref(), *concurrency, *max_tokens),
        Command::GpuInspect(args) => crate::gpu::gpu_inspect(&choice, args, g.json, g.strict),
        Command::Teardown(args) => crate::gpu::teardown(&choice, args, g.json, g.strict),
        Command::Demo { out, force } => crate::demo::demo(out.as_deref(), *force, g.json, g.strict),
        Command::Explain { ids } => explain(&choice, ids),
        Command::Compare(args) => {
            crate::compare::compare_command(g.engine.as_deref(), args, g.json, g.strict)
        }
        Command::Sweep(args) => {
            crate::compare::sweep_command(g.engine.as_deref(), args, g.json, g.strict)
        }
        Command::Schema { which } => schema(which),
        Command::Completions { shell } => completions(shell),
    }
}

/// The command's name as typed, for `--junit` and its messages.
pub fn name(command: &Command) -> &'static str {
    match command {
        Command::Xray(_) => "xray",
        Command::Report(_) => "report",
        Command::CheckLog { .. } => "check-log",
        Command::BootFacts { .. } => "boot-facts",
        Command::Preemption { .. } => "preemption",
        Command::Rate { .. } => "rate",
        Command::Series { .. } => "series",
        Command::Compare(_) => "compare",
        Command::Sweep(_) => "sweep",
        Command::Snapshot { .. } => "snapshot",
        Command::Watch { .. } => "watch",
        Command::Probe { .. } => "probe",
        Command::GpuInspect(_) => "gpu-inspect",
        Command::Teardown(_) => "teardown",
        Command::Demo { .. } => "demo",
        Command::Explain { .. } => "explain",
        Command::Schema { .. } => "schema",
        Command::Completions { .. } => "completions",
    }
}

fn schema(which: &str) -> Result<ExitCode, CliError> {
    let schema = inferlint_core::schema::by_name(which).ok_or_else(|| {
        CliError::usage(format!(
            "no schema named '{which}' (known: {})",
            inferlint_core::schema::NAMES.join(", ")
        ))
    })?;
    let mut text = contract::to_indent1(&schema);
    text.push('\n');
    print(&text)?;
    Ok(ExitCode::Passed)
}

fn completions(shell: &str) -> Result<ExitCode, CliError> {
    use clap::CommandFactory;
    use clap_complete::Shell;
    let shell = match shell {
        "bash" => Shell::Bash,
        "zsh" => Shell::Zsh,
        "fish" => Shell::Fish,
        "powershell" => Shell::PowerShell,
        other => {
            return Err(CliError::usage(format!(
                "no completions for '{other}' (bash, zsh, fish, powershell)"
            )))
        }
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "inferlint", &mut script);
    // The script is ours, not text from a run: it goes out as it is (completions carry
    // no control characters, and escaping would break none either).
    print(&String::from_utf8_lossy(&script))?;
    Ok(ExitCode::Passed)
}

/// Prints results and returns the exit status they call for.
fn finish(results: &[CheckResult], json: bool, strict: bool) -> Result<ExitCode, CliError> {
    print(&output::results_text(results, json))?;
    Ok(ExitCode::for_results(results, strict))
}

fn print(text: &str) -> Result<(), CliError> {
    output::print(text).map_err(|e| CliError::usage(format!("cannot write the output: {e}")))
}

pub(crate) fn shown(path: &Path) -> String {
    if path.as_os_str() == STDIN {
        return "standard input".into();
    }
    path.display().to_string()
}

pub(crate) fn load_snapshot(
    choice: &mut EngineChoice,
    path: &Path,
    what: &str,
) -> Result<Snapshot, CliError> {
    let (snapshot, skipped) = files::read_snapshot_noted(path)?;
    if let Some(skipped) = skipped {
        eprint_line!("note: {}: {skipped}", shown(path));
    }
    choice.input(
        what,
        detect::engine_from_metric_names(snapshot.metrics.names()),
    )?;
    Ok(snapshot)
}

fn load_snapshots(
    choice: &mut EngineChoice,
    before: &Path,
    after: &Path,
) -> Result<(Snapshot, Snapshot), CliError> {
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
) -> Result<(), CliError> {
    match out_of_order(before, after) {
        Some(reason) => Err(CliError::usage(format!(
            "{} (before) and {} (after): {reason}; give the earlier snapshot first",
            shown(before_path),
            shown(after_path)
        ))),
        None => Ok(()),
    }
}

/// The before and the after snapshot must be two readings: one file given as both holds
/// no run between them, and nothing counted over no time can pass.
pub(crate) fn refuse_one_file_twice(before: &Path, after: &Path) -> Result<(), CliError> {
    if inferlint_engines::output::same_file(before, after) {
        return Err(CliError::usage(format!(
            "{} is given as both the before and the after snapshot; give the one taken before the run and the one taken after",
            shown(before)
        )));
    }
    Ok(())
}

/// The path that names standard input where a command reads a stream (`series -`).
pub(crate) const STDIN: &str = "-";

pub(crate) fn load_series(choice: &mut EngineChoice, path: &Path) -> Result<SeriesStats, CliError> {
    let (stats, summary) = if path.as_os_str() == STDIN {
        // A pipe is read once, in order, to its end.
        files::read_series_stats_from(Path::new("standard input"), std::io::stdin().lock())?
    } else {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        files::read_series_stats(path, threads)?
    };
    let engine = summary.header.as_ref().and_then(|h| h.engine);
    choice.input(&shown(path), engine)?;
    if summary.markers > 0 {
        eprint_line!(
            "note: {}: {} gap or restart record(s): the recorder missed readings there, so a peak may be missing",
            shown(path),
            summary.markers
        );
    }
    if summary.skipped > 0 {
        eprint_line!(
            "note: {}: {} line(s) skipped (not a sample; a recorder killed mid-write leaves a cut-off last line)",
            shown(path),
            summary.skipped
        );
    }
    Ok(stats)
}

pub(crate) fn load_boot(choice: &mut EngineChoice, path: &Path) -> Result<BootFacts, CliError> {
    let hint = choice.named.map(|(e, _)| e);
    let log = files::read_boot_log(path, hint)?;
    choice.input(&shown(path), log.engine)?;
    if let Some(why) = log.not_a_log {
        return Err(CliError::usage(format!(
            "{} is not a server log: {why}",
            shown(path)
        )));
    }
    let facts = log.facts;
    note_version(&facts);
    Ok(facts)
}

/// Each boot log, labelled by the shortest part of its path that tells it from the others.
fn load_boots(
    choice: &mut EngineChoice,
    logs: &[PathBuf],
) -> Result<Vec<(String, BootFacts)>, CliError> {
    let shown_logs: Vec<String> = logs.iter().map(|p| shown(p)).collect();
    let labels = boot::labels_for(&shown_logs.iter().map(String::as_str).collect::<Vec<_>>());
    logs.iter()
        .zip(labels)
        .map(|(path, label)| Ok((label, load_boot(choice, path)?)))
        .collect()
}

/// A note on stderr when the boot facts name an engine version inferlint was not tested
/// against (the version the log gave, or the one xray asked the server for).
pub(crate) fn note_version(facts: &BootFacts) {
    if let (Some(engine), Some(version)) = (facts.engine, &facts.version) {
        if let Some(note) = engine.descriptor().untested_version_note(version) {
            eprint_line!("note: {note}");
        }
    }
}

fn check_log(
    choice: &mut EngineChoice,
    logs: &[PathBuf],
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    let boots = load_boots(choice, logs)?;
    let results = run::check_logs(&boots);
    finish(&results, json, strict)
}

fn boot_facts(
    choice: &mut EngineChoice,
    log: &Path,
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    let facts = load_boot(choice, log)?;
    let text = if json {
        let mut t = output::json_safe(contract::to_indent1(&facts));
        t.push('\n');
        t
    } else {
        boot_facts_text(&facts)
    };
    print(&text)?;
    Ok(if strict && !facts.unparsed.is_empty() {
        ExitCode::Undecided
    } else {
        ExitCode::Passed
    })
}

/// One line per fact that the log gave, then the settings, conflicts and unreadable lines.
fn boot_facts_text(facts: &BootFacts) -> String {
    use serde_json::Value;
    let mut text = String::new();
    let value = serde_json::to_value(facts).unwrap_or(Value::Null);
    let skip = [
        "unparsed",
        "conflicts",
        "non_default_args",
        "server_args",
        "llm_args",
    ];
    if let Value::Object(map) = &value {
        for (name, v) in map {
            if skip.contains(&name.as_str()) {
                continue;
            }
            let shown = match v {
                Value::Null => continue,
                Value::Array(a) if a.is_empty() => continue,
                Value::String(s) if s.is_empty() => continue,
                Value::String(s) => s.clone(),
                Value::Array(a) => a
                    .iter()
                    .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned))
                    .collect::<Vec<_>>()
                    .join(", "),
                other => other.to_string(),
            };
            text.push_str(&format!("{name:<28} {shown}\n"));
        }
    }
    if let Some(args) = &facts.non_default_args {
        let keys: Vec<&str> = args.keys().map(String::as_str).collect();
        text.push_str(&format!("{:<28} {}\n", "non_default_args", keys.join(", ")));
    }
    if let Some(args) = &facts.server_args {
        text.push_str(&format!(
            "{:<28} {} settings (--json lists them)\n",
            "server_args",
            args.len()
        ));
    }
    for (field, values) in &facts.conflicts {
        text.push_str(&format!("CONFLICT {field}: [{}]\n", values.join(", ")));
    }
    for u in &facts.unparsed {
        text.push_str(&format!(
            "UNPARSED {} (line {}): {}\n",
            u.field, u.lineno, u.text
        ));
    }
    text
}

pub(crate) fn report(
    choice: &mut EngineChoice,
    args: &ReportArgs,
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    let mut found = files::RunFiles::default();
    if let Some(dir) = &args.run {
        if !dir.is_dir() {
            return Err(CliError::usage(format!("{} is not a folder", shown(dir))));
        }
        found = files::discover_run(dir)?;
        if found.is_empty() {
            return Err(CliError::usage(format!(
                "no run files in {} (boot.log, *.snapshot.json, *.series.jsonl)",
                shown(dir)
            )));
        }
    }
    if !args.boot_logs.is_empty() {
        found.boot_logs = args.boot_logs.clone();
    }
    let pick = |flag: &Option<PathBuf>, found: Option<PathBuf>| flag.clone().or(found);
    let before_path = pick(&args.before, found.before.clone());
    let after_path = pick(&args.after, found.after.clone());
    let series_path = pick(&args.series, found.series.clone());
    let bench_path = pick(&args.bench_result, found.bench.clone());
    if args.run.is_none()
        && found.boot_logs.is_empty()
        && before_path.is_none()
        && after_path.is_none()
        && series_path.is_none()
    {
        return Err(CliError::usage(
            "give a run folder, or -o and the files to read (--boot-log, --before, --after, --series)",
        ));
    }

    let paths = files::RunFiles {
        boot_logs: found.boot_logs.clone(),
        before: before_path.clone(),
        after: after_path.clone(),
        series: series_path.clone(),
        bench: bench_path.clone(),
        load_log: found.load_log.clone(),
    };
    if series_path
        .as_deref()
        .is_some_and(|p| p.as_os_str() == STDIN)
    {
        // The checks and the charts each read the recording: a stream can be read once.
        return Err(CliError::usage(
            "report reads the recording twice (the checks, then the charts): give it as a file, not as - (standard input)",
        ));
    }
    // Where the report goes is settled before anything is read: never over an input,
    // never over a file that is not an earlier report without --force.
    let destination =
        crate::report_html::Destination::new(args.run.as_deref(), args.out.as_deref());
    let reads = inputs_of(&paths);
    let overwrite = crate::report_html::Overwrite {
        force: args.force,
        reads: &reads,
    };
    let write_report = crate::report_html::check(&destination, &overwrite)?;
    let run = assemble_run(choice, &paths, args.requested, None)?;
    let results = run::check_run_with(
        &run,
        run::RunOptions {
            expect_cache_hits: args.expect_cache_hits,
            live_log: false,
        },
    );
    if !any_verdict(&results) {
        return Err(CliError::usage(nothing_checked(&paths, &results)));
    }
    let limits = insights::what_limited(&run, &results);
    // The HTML report is written first, so that the count line can say where it went.
    let inputs = crate::report_html::Inputs {
        run: &run,
        results: &results,
        insights: &limits,
        series: series_path.as_deref(),
        made_from: crate::report_html::made_from(
            &found.boot_logs,
            [
                before_path.as_deref(),
                after_path.as_deref(),
                series_path.as_deref(),
                bench_path.as_deref(),
            ],
        ),
        title: args.title.as_deref(),
    };
    let written = if write_report || destination == crate::report_html::Destination::Nowhere {
        crate::report_html::write(&destination, &inputs, &overwrite)
    } else {
        // Refused above, with a note.
        Ok(None)
    };
    if json {
        print(&output::results_text(&results, true))?;
    } else {
        let mut text = output::results_text(&results, false);
        text.push_str(&insights::terminal_lines(&limits));
        text.push_str(&count_line(&results));
        if let Ok(Some(path)) = &written {
            text.push_str(&format!(" -> {}", shown(path)));
        }
        text.push('\n');
        print(&text)?;
    }
    written?;
    let code = run_exit(&run, &results, strict);
    match &args.baseline {
        Some(baseline) => {
            let label = args
                .run
                .as_deref()
                .map_or_else(|| "this run".to_owned(), shown);
            let profile = inferlint_core::profile::RunProfile::of(&label, &run, &results);
            let margin = args
                .max_regression
                .unwrap_or(crate::compare::DEFAULT_MARGIN);
            let gate = crate::compare::baseline_gate(
                choice.named.map(|(e, _)| e.key()),
                baseline,
                &profile,
                margin,
                json,
                strict,
            )?;
            Ok(worst(code, gate))
        }
        None => Ok(code),
    }
}

/// The more serious of two exit statuses: a failure, else a Can't tell, else a pass.
pub(crate) fn worst(a: ExitCode, b: ExitCode) -> ExitCode {
    let rank = |c: ExitCode| match c {
        ExitCode::Passed => 0,
        ExitCode::Undecided => 1,
        ExitCode::TripwireFailed => 2,
        ExitCode::Interrupted => 3,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// The exit status of a whole run: the results' (a failed tripwire, a warning under
/// `--strict`, a Can't tell), except that a run that was not a benchmark never exits 0
/// (its load-dependent tripwires were not checked) but 2, or 1 when a tripwire failed.
pub(crate) fn run_exit(run: &Run, results: &[CheckResult], strict: bool) -> ExitCode {
    match ExitCode::for_results(results, strict) {
        ExitCode::Passed if run::not_a_benchmark(run).is_some() => ExitCode::Undecided,
        code => code,
    }
}

/// The one-line error when no check could run: the files given and what the checks need.
fn nothing_checked(paths: &files::RunFiles, results: &[CheckResult]) -> String {
    let given: Vec<String> = paths
        .boot_logs
        .iter()
        .chain(&paths.before)
        .chain(&paths.after)
        .chain(&paths.series)
        .chain(&paths.bench)
        .map(|p| shown(p))
        .collect();
    let mut needs: Vec<(String, Vec<String>)> = Vec::new();
    for r in results.iter().filter(|r| r.status == Status::NotChecked) {
        let what = r.message.trim_start_matches("needs ").to_owned();
        match needs.iter_mut().find(|(m, _)| *m == what) {
            Some((_, ids)) => ids.push(r.tripwire.to_string()),
            None => needs.push((what, vec![r.tripwire.to_string()])),
        }
    }
    let needs: Vec<String> = needs
        .iter()
        .map(|(what, ids)| match ids.split_last() {
            Some((last, [])) => format!("{last} needs {what}"),
            Some((last, rest)) => format!("{} and {last} need {what}", rest.join(", ")),
            None => String::new(),
        })
        .collect();
    format!(
        "no check could run on {}: {}",
        if given.is_empty() {
            "nothing".to_owned()
        } else {
            given.join(", ")
        },
        needs.join("; ")
    )
}

/// Every file a run's check reads, with a few words naming each, so that no output is
/// ever written over one.
pub(crate) fn inputs_of(paths: &files::RunFiles) -> Vec<(&Path, &'static str)> {
    let mut reads: Vec<(&Path, &'static str)> = paths
        .boot_logs
        .iter()
        .map(|p| (p.as_path(), "a boot log"))
        .collect();
    let named = [
        (&paths.before, "the before snapshot"),
        (&paths.after, "the after snapshot"),
        (&paths.series, "the recording"),
        (&paths.bench, "the load tool's result"),
        (&paths.load_log, "the load tool's log"),
    ];
    for (path, what) in named {
        if let Some(path) = path {
            reads.push((path.as_path(), what));
        }
    }
    reads
}

/// Reads a run's files into the run model, as `report` and xray both need it: boot logs
/// labelled by their shortest distinct paths, every input checked against the engine
/// named, the untimed requests the load tool announced in `load.log`, and the requested
/// concurrency (given, else the result file's `max_concurrency`).
pub(crate) fn assemble_run(
    choice: &mut EngineChoice,
    paths: &files::RunFiles,
    requested: Option<u64>,
    engine: Option<Engine>,
) -> Result<Run, CliError> {
    let boots = load_boots(choice, &paths.boot_logs)?;
    let before = paths
        .before
        .as_deref()
        .map(|p| load_snapshot(choice, p, "the snapshots"))
        .transpose()?;
    let after = paths
        .after
        .as_deref()
        .map(|p| load_snapshot(choice, p, "the snapshots"))
        .transpose()?;
    if let (Some(before), Some(after)) = (&paths.before, &paths.after) {
        refuse_one_file_twice(before, after)?;
    }
    let series = paths
        .series
        .as_deref()
        .map(|p| load_series(choice, p))
        .transpose()?;
    let mut bench = paths
        .bench
        .as_deref()
        .map(|p| files::read_bench_result(p).map(|b| (shown(p), b)))
        .transpose()?;
    if let (Some((_, account)), Some(log)) = (bench.as_mut(), paths.load_log.as_deref()) {
        loadtools::console::complete_from_console_file(account, log)?;
    }
    // The untimed requests the result file itself counts (AIPerf's warm-up), else those
    // the tool announced on its console.
    let expected_extra_requests = match (
        bench.as_ref().and_then(|(_, b)| b.span.untimed_requests),
        &paths.load_log,
    ) {
        (Some(n), _) => n,
        (None, Some(p)) => files::untimed_requests_in(p)?,
        (None, None) => 0,
    };
    if let (Some(b), Some(a), Some(bp), Some(ap)) = (&before, &after, &paths.before, &paths.after) {
        in_order(b, bp, a, ap)?;
    }
    // A result file written without a concurrency limit says 0 or nothing: no number.
    let requested = requested.or_else(|| {
        bench
            .as_ref()
            .and_then(|(_, b)| b.max_concurrency)
            .and_then(|c| u64::try_from(c).ok())
            .filter(|c| *c > 0)
    });
    let engine = engine.unwrap_or_else(|| choice.resolve());
    Ok(Run {
        engine: engine.descriptor(),
        boots,
        before,
        after,
        series,
        bench,
        expected_extra_requests,
        requested,
        load_failure: None,
    })
}

fn explain(choice: &EngineChoice, ids: &[String]) -> Result<ExitCode, CliError> {
    let only = choice.named.map(|(e, _)| e);
    let width = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
        .map_or(88, |c| c.clamp(40, 88));
    let infos: Vec<&catalogue::TripwireInfo> = if ids.is_empty() {
        catalogue::all().iter().collect()
    } else {
        ids.iter()
            .map(|id| {
                catalogue::find(id).ok_or_else(|| {
                    CliError::usage(format!(
                        "unknown tripwire: {id} (known: {}, or a name such as silent-preemption)",
                        inferlint_core::Tripwire::all_named()
                    ))
                })
            })
            .collect::<Result<_, _>>()?
    };
    let text: Vec<String> = infos
        .iter()
        .map(|info| catalogue::render_explain(info, only, width))
        .collect();
    print(&format!("{}\n", text.join("\n").trim_end()))?;
    Ok(ExitCode::Passed)
}
