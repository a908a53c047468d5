//! A fleet's report: `report DIR` of a fleet folder (`fleet.json`, one run folder per
//! replica) and `report --prometheus URL --start T --end T`, which first reads the
//! window from Prometheus into such a folder. Glue only: the runs load through
//! `load_run`, the checks and T22 are core's, the page is inferlint-report's.
//!
//! Each replica is checked as `report REPLICA_DIR` would check it, and its own report is
//! written beside the fleet page; the fleet's verdict (T22) comes from every replica's
//! recording read again on the fleet's grid.

use std::path::{Path, PathBuf};
use std::time::Duration;

use inferlint_core::checks::fleet::FleetBalance;
use inferlint_core::insights;
use inferlint_core::run::{self, Run};
use inferlint_core::status::{count_line, CheckResult};
use inferlint_engines::files::{self, RunFiles};
use inferlint_engines::fleet::{self, Manifest};
use inferlint_engines::load::{self, shown, EngineChoice};
use inferlint_engines::prometheus as api;
use inferlint_live::prometheus::{fetch_into, FetchOptions, PromSource, DEFAULT_TIMEOUT};
use inferlint_live::BaseUrl;
use inferlint_report::fleet::{FleetChart, FleetPage, ReplicaRow};

use crate::cli::ReportArgs;
use crate::commands::{noted, run_exit, worst};
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
            CliError::usage(format!("cannot create the folder {}: {e}", path.display()))
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
    let base = BaseUrl::parse(url).map_err(CliError::usage)?;
    // `-o` is settled before the server is asked or a folder made: a window of a day
    // takes seconds to read, and a refusal after it would leave a --save folder behind.
    if let Some(out) = &args.out {
        let rule = inferlint_engines::output::Rule {
            force: args.force,
            reads: &[],
            ours: Some(report_html::is_our_report),
        };
        inferlint_engines::output::check(out, &rule).map_err(|e| CliError::usage(e.to_string()))?;
    }
    // The folder the run is read into: kept with --save, else removed at the end.
    let (dir, _scratch) = match &p.save {
        Some(dir) => {
            empty_or_new(dir)?;
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
        .map_err(|e| CliError::usage(format!("cannot start the HTTP client: {e}")))?;
    let fetched = runtime
        .block_on(async {
            let source = PromSource::new(base.clone(), options.timeout);
            fetch_into(&source, &options, &dir, |_, _| {}).await
        })
        .map_err(|e| CliError::usage(e.to_string()))?;
    for note in &fetched.notes {
        eprint_line!("note: {note}");
    }
    eprint_line!(
        "read {} replica(s) from {base}: {} range quer{} at a {} s step, at most {} points a series each",
        fetched.manifest.replicas.len(),
        fetched.range_queries,
        if fetched.range_queries == 1 { "y" } else { "ies" },
        inferlint_core::fmt::g(fetched.step_ms as f64 / 1000.0),
        fetched.max_points_per_query
    );
    let pages = match (&args.out, &p.save) {
        (Some(out), _) => Pages::Beside(out.clone()),
        (None, Some(dir)) => Pages::InFolder(dir.join("report.html")),
        (None, None) => Pages::Nowhere,
    };
    report_fleet(choice, &dir, &fetched.manifest, &pages, args, json, strict)
}

/// `--save DIR` must be a new folder or an empty one: a fleet read from Prometheus is
/// never mixed with files already there.
fn empty_or_new(dir: &Path) -> Result<(), CliError> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(CliError::usage(format!(
                    "--save {}: the folder holds files; give a new or empty folder",
                    dir.display()
                )));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir_all(dir)
            .map_err(|e| CliError::usage(format!("cannot create {}: {e}", dir.display()))),
        Err(e) => Err(CliError::usage(format!("--save {}: {e}", dir.display()))),
    }
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

/// One replica checked.
#[derive(Debug)]
struct Checked {
    name: String,
    folder: String,
    files: RunFiles,
    run: Run,
    results: Vec<CheckResult>,
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
    if manifest.replicas.is_empty() {
        return Err(CliError::usage(format!(
            "{} names no replica",
            dir.join(fleet::MANIFEST).display()
        )));
    }
    let mut checked = Vec::with_capacity(manifest.replicas.len());
    for replica in &manifest.replicas {
        let folder = dir.join(&replica.folder);
        let files = load::find_run(&folder)?;
        let mut replica_choice = EngineChoice::new(choice.named_by());
        let run = noted(&mut replica_choice, |c| {
            load::load_run(c, &files, args.requested, None)
        })?;
        let results = run::check_run(&run);
        checked.push(Checked {
            name: replica.name.clone(),
            folder: replica.folder.clone(),
            files,
            run,
            results,
        });
    }

    // The fleet's grid: the manifest's interval, else the replicas' own spacing.
    let first = checked
        .iter()
        .filter_map(|c| c.run.series.as_ref()?.first_t_wall)
        .fold(f64::INFINITY, f64::min);
    let last = checked
        .iter()
        .filter_map(|c| c.run.series.as_ref()?.last_t_wall)
        .fold(f64::NEG_INFINITY, f64::max);
    let interval = manifest.interval_s.unwrap_or_else(|| {
        checked
            .iter()
            .filter_map(|c| {
                let s = c.run.series.as_ref()?;
                let span = s.last_t_wall? - s.first_t_wall?;
                (s.samples > 1).then(|| span / (s.samples - 1) as f64)
            })
            .fold(0.0, f64::max)
    });
    let names: Vec<String> = checked.iter().map(|c| c.name.clone()).collect();
    let mut balance = FleetBalance::new(interval, first, &names);
    let mut chart = first
        .is_finite()
        .then(|| FleetChart::new(first, interval, last - first, names.len()));
    for (index, c) in checked.iter().enumerate() {
        let Some(series) = &c.files.series else {
            continue;
        };
        files::read_series(series, |sample| {
            balance.push(index, sample);
            if let Some(chart) = chart.as_mut() {
                chart.push(index, sample);
            }
        })?;
    }
    let fleet_results = vec![balance.check()];

    // Every page's place is settled before any page is written: a refusal (an input, or
    // a file that is not an earlier report, without --force) leaves nothing half-written.
    let fleet_reads: Vec<(&Path, &str)> = checked.iter().flat_map(|c| c.files.inputs()).collect();
    let fleet_rule = inferlint_engines::output::Rule {
        force: args.force,
        reads: &fleet_reads,
        ours: Some(report_html::is_our_report),
    };
    if let Some(path) = pages.fleet() {
        inferlint_engines::output::check(path, &fleet_rule)
            .map_err(|e| CliError::usage(e.to_string()))?;
    }
    // A replica's page never replaces any replica's input, not only its own.
    let overwrite = Overwrite {
        force: args.force,
        reads: &fleet_reads,
    };
    for c in &checked {
        if let Some((path, _)) = pages.replica(&c.folder) {
            report_html::check(&Destination::Asked(path), &overwrite)?;
        }
    }

    // Each replica's own page, then the fleet's.
    let mut rows = Vec::with_capacity(checked.len());
    let mut written_pages = 0;
    for c in &checked {
        let limits = insights::what_limited(&c.run, &c.results);
        let href = match pages.replica(&c.folder) {
            Some((path, href)) => {
                let title = format!("replica {}", c.name);
                let inputs = report_html::Inputs {
                    run: &c.run,
                    results: &c.results,
                    insights: &limits,
                    series: c.files.series.as_deref(),
                    made_from: report_html::made_from(
                        &c.files.boot_logs,
                        [
                            c.files.before.as_deref(),
                            c.files.after.as_deref(),
                            c.files.series.as_deref(),
                            c.files.chosen_bench(&c.run),
                        ],
                    ),
                    title: Some(&title),
                };
                report_html::write(&Destination::Asked(path), &inputs, &overwrite)?;
                written_pages += 1;
                Some(href)
            }
            None => None,
        };
        rows.push(ReplicaRow {
            name: c.name.clone(),
            href,
            results: c.results.clone(),
            peak_running: c.run.series.as_ref().and_then(|s| s.peak_running),
        });
    }
    let fleet_page = match pages.fleet() {
        Some(path) => {
            let generator = format!("inferlint {}", env!("CARGO_PKG_VERSION"));
            let html = inferlint_report::fleet::render(&FleetPage {
                title: args.title.as_deref(),
                source: &manifest.source,
                rows: &rows,
                fleet_results: &fleet_results,
                chart: chart.as_ref(),
                generator: &generator,
            });
            inferlint_engines::output::write_file(path, html.as_bytes(), &fleet_rule)
                .map_err(|e| CliError::usage(e.to_string()))?;
            Some(path.to_owned())
        }
        None => {
            eprint_line!(
                "note: no report written: give -o FILE (or --save DIR) to write the fleet's page and each replica's"
            );
            None
        }
    };

    // The terminal (or one JSON array of every result, each replica's marked).
    let mut code = ExitCode::for_results(&fleet_results, strict);
    for c in &checked {
        code = worst(code, run_exit(&c.run, &c.results, strict));
    }
    if json {
        let all: Vec<CheckResult> = checked
            .iter()
            .flat_map(|c| {
                c.results
                    .iter()
                    .map(|r| r.clone().with("replica", c.name.as_str()))
            })
            .chain(fleet_results.iter().cloned())
            .collect();
        print(&output::results_text(&all, true))?;
        return Ok(code);
    }
    let mut text = String::new();
    for c in &checked {
        text.push_str(&format!("== replica {} ({})\n", c.name, c.folder));
        text.push_str(&output::results_text(&c.results, false));
        text.push_str(&count_line(&c.results));
        text.push('\n');
    }
    text.push_str(&format!("== the fleet: {} replicas\n", checked.len()));
    text.push_str(&output::results_text(&fleet_results, false));
    let all: Vec<CheckResult> = checked
        .iter()
        .flat_map(|c| c.results.iter().cloned())
        .chain(fleet_results.iter().cloned())
        .collect();
    text.push_str(&format!(
        "{} over {} replicas",
        count_line(&all),
        checked.len()
    ));
    if let Some(path) = &fleet_page {
        text.push_str(&format!(" -> {}", shown(path)));
        if written_pages > 0 {
            text.push_str(&format!(" (and {written_pages} replica page(s))"));
        }
    }
    text.push('\n');
    print(&text)?;
    Ok(code)
}

fn print(text: &str) -> Result<(), CliError> {
    output::print(text).map_err(|e| CliError::usage(format!("cannot write the output: {e}")))
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
