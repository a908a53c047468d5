//! A fleet's report: `report DIR` of a fleet folder (`fleet.json`, one run folder per
//! replica) and `report --prometheus URL --start T --end T`, which first reads the
//! window from Prometheus into such a folder. Glue only: the fleet is read by the engines'
//! `load_fleet::FleetFiles` (each replica's run in turn, the fleet's grid, T22) and each
//! replica checked by core's one path (`run::check`), the page is inferlint-report's; here are the flags, the pages' places and the
//! printing.
//!
//! Each replica is checked as `report REPLICA_DIR` would check it, and its own report is
//! written beside the fleet page; the fleet's verdict (T22) comes from every replica's
//! recording read again on the fleet's grid. One replica's run is held at a time: its
//! page is staged beside its place and the run let go before the next is read; the pages
//! are put in place once every one is made, so a replica that cannot be read leaves no
//! page written.

use std::path::{Path, PathBuf};
use std::time::Duration;

use inferlint_core::judging::outcome::worst_of;
use inferlint_core::judging::status::{count_line, CheckResult, Outcome};
use inferlint_core::run::{self, CheckOptions, Checked};
use inferlint_engines::fleet::{self, Manifest};
use inferlint_engines::load::{shown, EngineChoice};
use inferlint_engines::load_fleet::{FleetFiles, ReplicaRead};
use inferlint_engines::prometheus as api;
use inferlint_live::prometheus::{fetch_into, FetchOptions, PromSource, DEFAULT_TIMEOUT};
use inferlint_live::BaseUrl;
use inferlint_report::fleet::{FleetChart, FleetPage, ReplicaRow};
use inferlint_report::TimelinePass;

use crate::cli::ReportArgs;
use crate::exit::{CliError, ExitCode};
use crate::output::{self, eprint_line};
use crate::report_html::{self, Destination, Overwrite};

/// The fleet's report when `report` was given one: `Ok(None)` for an ordinary run.
pub fn report_if_fleet(
    choice: &EngineChoice,
    args: &ReportArgs,
    json: bool,
    strict: bool,
) -> Result<Option<ExitCode>, CliError> {
    if let Some(url) = &args.prometheus.prometheus {
        return from_prometheus(choice, url, args, json, strict).map(Some);
    }
    let Some(dir) = args.run.as_deref().filter(|d| d.is_dir()) else {
        return Ok(None);
    };
    let Some(manifest) = fleet::read_manifest(dir)? else {
        return Ok(None);
    };
    // A fleet's files are its replicas'; a file named beside it would belong to none.
    let named = [
        (!args.boot_logs.is_empty(), "--boot-log"),
        (args.before.is_some(), "--before"),
        (args.after.is_some(), "--after"),
        (args.series.is_some(), "--series"),
        (args.bench_result.is_some(), "--bench-result"),
        (args.baseline.is_some(), "--baseline"),
        (
            args.slo.slo.is_some() || args.slo.slo_file.is_some(),
            "--slo",
        ),
    ];
    if let Some((_, flag)) = named.iter().find(|(given, _)| *given) {
        return Err(CliError::usage(format!(
            "{} is a fleet folder ({}): {flag} belongs to one replica; give it with that replica's folder (report {}/REPLICA {flag} ...)",
            dir.display(),
            fleet::MANIFEST,
            dir.display()
        )));
    }
    let pages = match &args.out {
        Some(out) => Pages::Beside(out.clone()),
        None => Pages::InFolder(dir.join("report.html")),
    };
    report_fleet(choice, dir, &manifest, &pages, args, json, strict).map(Some)
}

/// A folder this command made for the run and removes when it ends, on every path.
#[derive(Debug)]
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, CliError> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "inferlint-prometheus-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir(&path).map_err(|e| {
            CliError::cannot_write(format!("cannot create the folder {}: {e}", path.display()))
        })?;
        Ok(Scratch(path))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn from_prometheus(
    choice: &EngineChoice,
    url: &str,
    args: &ReportArgs,
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    let p = &args.prometheus;
    let time = |t: &Option<String>, which: &str| -> Result<f64, CliError> {
        let text = t
            .as_deref()
            .ok_or_else(|| CliError::usage(format!("--prometheus needs --{which}")))?;
        api::parse_time(text).map_err(|e| CliError::usage(format!("--{which}: {e}")))
    };
    let (start, end) = (time(&p.start, "start")?, time(&p.end, "end")?);
    if end <= start {
        return Err(CliError::usage(format!(
            "--end ({end}) must come after --start ({start})"
        )));
    }
    let step = match p.step {
        Some(s) if s.is_finite() && (0.001..=3600.0).contains(&s) => {
            Some(Duration::from_secs_f64(s))
        }
        Some(s) => {
            return Err(CliError::usage(format!(
                "--step {s} is not a number of seconds from 0.001 to 3600"
            )))
        }
        None => None,
    };
    let base = BaseUrl::parse(url)?;
    // `-o` is settled before the server is asked or a folder made: a window of a day
    // takes seconds to read, and a refusal after it would leave a --save folder behind.
    if let Some(out) = &args.out {
        let rule = inferlint_engines::output::Rule {
            force: args.force,
            reads: &[],
            ours: Some(report_html::is_our_report),
        };
        inferlint_engines::output::check(out, &rule)?;
    }
    // The folder the run is read into: kept with --save, else removed at the end.
    let (dir, _scratch) = match &p.save {
        Some(dir) => {
            // A new or empty folder, marked as ours before anything is read into it.
            crate::run_folder::prepare_fleet(dir, "report", "--save")?;
            (dir.clone(), None)
        }
        None => {
            let scratch = Scratch::new()?;
            (scratch.0.clone(), Some(scratch))
        }
    };
    let options = FetchOptions {
        start,
        end,
        selector: p.selector.clone(),
        engine: choice.named(),
        step,
        timeout: DEFAULT_TIMEOUT,
    };
    let runtime = inferlint_live::runtime()
        .map_err(|e| CliError::cannot_write(format!("cannot start the HTTP client: {e}")))?;
    let fetched = runtime
        .block_on(async {
            let source = PromSource::new(base.clone(), options.timeout);
            fetch_into(&source, &options, &dir, |_, _| {}).await
        })
        .map_err(CliError::from)?;
    for note in &fetched.notes {
        eprint_line!("note: {note}");
    }
    eprint_line!(
        "read {} replica(s) from {base}: {} range quer{} at a {} s step, at most {} points a series each, the largest answer {}",
        fetched.manifest.replicas.len(),
        fetched.range_queries,
        if fetched.range_queries == 1 { "y" } else { "ies" },
        inferlint_core::story::fmt::g(fetched.step_ms as f64 / 1000.0),
        fetched.max_points_per_query,
        inferlint_engines::input::size_text(fetched.largest_answer_bytes)
    );
    let pages = match (&args.out, &p.save) {
        (Some(out), _) => Pages::Beside(out.clone()),
        (None, Some(dir)) => Pages::InFolder(dir.join("report.html")),
        (None, None) => Pages::Nowhere,
    };
    report_fleet(choice, &dir, &fetched.manifest, &pages, args, json, strict)
}

/// Where the pages go.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pages {
    /// The fleet page at this path in the fleet folder, each replica's as
    /// `REPLICA/report.html` beside it.
    InFolder(PathBuf),
    /// The fleet page at `-o FILE`, each replica's beside it as `FILE-REPLICA.html`.
    Beside(PathBuf),
    /// No page (a run read into a folder that is removed, and no `-o`).
    Nowhere,
}

impl Pages {
    fn fleet(&self) -> Option<&Path> {
        match self {
            Pages::InFolder(p) | Pages::Beside(p) => Some(p),
            Pages::Nowhere => None,
        }
    }

    /// The replica's page and its link from the fleet page.
    fn replica(&self, folder: &str) -> Option<(PathBuf, String)> {
        match self {
            Pages::InFolder(page) => {
                let dir = page.parent().unwrap_or(Path::new("."));
                Some((
                    dir.join(folder).join("report.html"),
                    format!("{folder}/report.html"),
                ))
            }
            Pages::Beside(page) => {
                let stem = page
                    .file_stem()
                    .map_or_else(|| "report".into(), |s| s.to_string_lossy().into_owned());
                let name = format!("{stem}-{folder}.html");
                Some((page.with_file_name(&name), name))
            }
            Pages::Nowhere => None,
        }
    }
}

fn report_fleet(
    choice: &EngineChoice,
    dir: &Path,
    manifest: &Manifest,
    pages: &Pages,
    args: &ReportArgs,
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    // One replica's run is held at a time: each is read, checked and its page staged,
    // then let go before the next is read.
    if manifest.replicas.is_empty() {
        return Err(CliError::Input(format!(
            "{} names no replica",
            dir.join(fleet::MANIFEST).display()
        )));
    }
    let mut reader = FleetFiles::open(dir, manifest, choice.named_by(), args.requested)?;
    let names: Vec<(String, String)> = reader
        .names()
        .map(|(name, folder)| (name.to_owned(), folder.to_owned()))
        .collect();
    let inputs: Vec<(PathBuf, String)> = reader
        .inputs()
        .into_iter()
        .map(|(path, what)| (path.to_owned(), what.to_owned()))
        .collect();
    let fleet_reads: Vec<(&Path, &str)> = inputs
        .iter()
        .map(|(path, what)| (path.as_path(), what.as_str()))
        .collect();
    let fleet_rule = inferlint_engines::output::Rule {
        force: args.force,
        reads: &fleet_reads,
        ours: Some(report_html::is_our_report),
    };
    // A replica's page never replaces any replica's input, not only its own.
    let overwrite = Overwrite {
        force: args.force,
        reads: &fleet_reads,
    };
    settle_pages(pages, &names, &fleet_rule, &overwrite)?;

    let mut staged = Vec::new();
    let mut rows = Vec::with_capacity(names.len());
    let mut checked = Vec::with_capacity(names.len());
    // Each replica through the one path: its files, the gate, the checks, the account,
    // the story; its page's charts folded in the same pass.
    while let Some(replica) =
        reader.read_next(|ends| TimelinePass::new(ends.first, ends.last, ends.after))?
    {
        for note in &replica.notes {
            eprint_line!("note: {note}");
        }
        let report = run::check(&replica.run, &CheckOptions::default());
        let href = match pages.replica(&replica.folder) {
            Some((path, href)) => {
                staged.push(stage_replica_page(&replica, &report, &path, &overwrite)?);
                Some(href)
            }
            None => None,
        };
        rows.push(ReplicaRow {
            name: replica.name.clone(),
            href,
            results: report.results.clone(),
            peak_running: replica.run.series.as_ref().and_then(|s| s.peak_running),
        });
        checked.push(report);
    }
    // The chart is drawn from the samples T22 reads, in the same pass.
    let grid = reader.grid();
    let mut chart = grid.has_samples().then(|| {
        FleetChart::new(
            grid.first_t_wall,
            grid.interval_s,
            grid.span_s(),
            names.len(),
        )
    });
    let source = reader.source().to_owned();
    let balance = reader.balance(&mut |index, sample| {
        if let Some(chart) = chart.as_mut() {
            chart.push(index, sample);
        }
    })?;
    let fleet_results = vec![balance];
    let fleet_page = match pages.fleet() {
        Some(path) => {
            let generator = format!("inferlint {}", env!("CARGO_PKG_VERSION"));
            let html = inferlint_report::fleet::render(&FleetPage {
                title: args.title.as_deref(),
                source: &source,
                rows: &rows,
                fleet_results: &fleet_results,
                chart: chart.as_ref(),
                generator: &generator,
            });
            let page = inferlint_engines::output::stage(path, html.as_bytes(), &fleet_rule)?;
            Some(page)
        }
        None => {
            eprint_line!(
                "note: no report written: give -o FILE (or --save DIR) to write the fleet's page and each replica's"
            );
            None
        }
    };
    // Every page is made: now they are put in place, the fleet's last.
    let written = Written {
        fleet_page: fleet_page.as_ref().map(|page| page.path().to_owned()),
        replica_pages: staged.len(),
    };
    for page in staged {
        report_html::publish(page)?;
    }
    if let Some(page) = fleet_page {
        page.publish()?;
    }
    // The fleet's outcome: the worst of every replica's and T22's.
    let code = ExitCode::of(
        checked
            .iter()
            .fold(Outcome::of(&fleet_results, strict), |worst, replica| {
                worst_of(worst, replica.outcome(strict))
            }),
    );
    output::emit(&fleet_text(
        &names,
        &checked,
        &fleet_results,
        &written,
        json,
    ))?;
    Ok(code)
}

/// The pages written: the fleet's (where it went) and how many replicas' pages.
struct Written {
    fleet_page: Option<PathBuf>,
    replica_pages: usize,
}

/// Settles every page's place before any run is read or any page written: a refusal (an
/// input, or a file that is not an earlier report, without --force) comes first and
/// leaves nothing half-written.
fn settle_pages(
    pages: &Pages,
    names: &[(String, String)],
    fleet_rule: &inferlint_engines::output::Rule,
    overwrite: &Overwrite,
) -> Result<(), CliError> {
    if let Some(path) = pages.fleet() {
        inferlint_engines::output::check(path, fleet_rule)?;
    }
    for (_, folder) in names {
        if let Some((path, _)) = pages.replica(folder) {
            report_html::check(&Destination::Asked(path), overwrite)?;
        }
    }
    Ok(())
}

/// A replica's own page, rendered and staged beside `path`, to be put in place once
/// every page is made.
fn stage_replica_page(
    replica: &ReplicaRead<TimelinePass>,
    report: &Checked,
    path: &Path,
    overwrite: &Overwrite,
) -> Result<inferlint_engines::output::Staged, CliError> {
    let title = format!("replica {}", replica.name);
    let files = &replica.files;
    let run = &replica.run;
    let inputs = report_html::Inputs {
        run,
        results: &report.results,
        account: &report.account,
        insights: &report.insights,
        series: files.series.as_deref(),
        charts: replica.folded.as_ref(),
        made_from: report_html::made_from(
            &files.boot_logs,
            [
                files.before.as_deref(),
                files.after.as_deref(),
                files.series.as_deref(),
                files.chosen_bench(run),
            ],
        ),
        title: Some(&title),
    };
    report_html::stage(path, &inputs, overwrite)
}

/// The terminal's lines (or one JSON array of every result, each replica's marked).
fn fleet_text(
    names: &[(String, String)],
    checked: &[Checked],
    fleet_results: &[CheckResult],
    written: &Written,
    json: bool,
) -> String {
    let each = || names.iter().zip(checked);
    if json {
        let all: Vec<CheckResult> = each()
            .flat_map(|((name, _), report)| {
                report
                    .results
                    .iter()
                    .cloned()
                    .map(|r| r.with("replica", name.as_str()))
            })
            .chain(fleet_results.iter().cloned())
            .collect();
        return output::results_text(&all, true);
    }
    let mut text = String::new();
    for ((name, folder), report) in each() {
        let results = &report.results;
        text.push_str(&format!("== replica {name} ({folder})\n"));
        text.push_str(&output::results_text(results, false));
        text.push_str(&count_line(results));
        text.push('\n');
    }
    let replicas = names.len();
    text.push_str(&format!("== the fleet: {replicas} replicas\n"));
    text.push_str(&output::results_text(fleet_results, false));
    let all: Vec<CheckResult> = checked
        .iter()
        .flat_map(|report| report.results.iter().cloned())
        .chain(fleet_results.iter().cloned())
        .collect();
    text.push_str(&format!("{} over {replicas} replicas", count_line(&all)));
    if let Some(path) = &written.fleet_page {
        text.push_str(&format!(" -> {}", shown(path)));
        if written.replica_pages > 0 {
            text.push_str(&format!(" (and {} replica page(s))", written.replica_pages));
        }
    }
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_go_in_the_folder_or_beside_the_file() {
        let folder = Pages::InFolder(PathBuf::from("fleet/report.html"));
        assert_eq!(
            folder.replica("r-0"),
            Some((
                PathBuf::from("fleet/r-0/report.html"),
                "r-0/report.html".into()
            ))
        );
        let beside = Pages::Beside(PathBuf::from("out/day.html"));
        assert_eq!(
            beside.replica("r-0"),
            Some((PathBuf::from("out/day-r-0.html"), "day-r-0.html".into()))
        );
        assert_eq!(Pages::Nowhere.replica("r-0"), None);
    }
}
