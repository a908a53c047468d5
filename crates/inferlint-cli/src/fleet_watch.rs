//! `watch URL URL … -o DIR` (or `--targets FILE`): a fleet recorded on one schedule into
//! a fleet folder (`fleet.json`, one run folder per replica, `fleet.series.jsonl`), which
//! `report DIR` checks replica by replica and as a fleet. The schedule and the sum are
//! inferlint-live's; files are opened here.

use std::path::Path;

use inferlint_core::Engine;
use inferlint_engines::fleet::{self, Manifest};
use inferlint_engines::load::{EngineChoice, Source};
use inferlint_engines::output::{self, Rule};
use inferlint_live::fleet_watch::{FleetProgress, Member};
use inferlint_live::watch::{WatchOptions, MAX_FAILED_SHARE};
use inferlint_live::{Recorder, Scrape, Scraper};

use crate::exit::{CliError, ExitCode};
use crate::flags;
use crate::live::first_scrape;
use crate::output::eprint_line;

/// The most replicas one `watch` records.
pub const MAX_TARGETS: usize = 256;

/// The largest `--targets` file read: 256 addresses of a few dozen bytes, with comments.
pub const MAX_TARGETS_BYTES: u64 = 1 << 20;

/// The addresses to record: those on the command line, then those of `--targets`.
fn addresses(urls: &[String], targets: Option<&Path>) -> Result<Vec<String>, CliError> {
    let mut all: Vec<String> = urls.to_vec();
    if let Some(path) = targets {
        // By the input rules of every input: a regular file (a FIFO would block, a device
        // never end) of a bounded size.
        let bytes =
            inferlint_engines::input::read_bounded(path, MAX_TARGETS_BYTES, "a targets file")
                .map_err(|e| CliError::input(format!("cannot read {e}")))?;
        let text = String::from_utf8_lossy(&bytes);
        all.extend(
            text.lines()
                .map(|l| l.split('#').next().unwrap_or("").trim())
                .filter(|l| !l.is_empty())
                .map(str::to_owned),
        );
    }
    if all.is_empty() {
        return Err(match targets {
            Some(path) => CliError::input(format!("{} names no address", path.display())),
            None => CliError::usage("give the addresses to record"),
        });
    }
    if all.len() > MAX_TARGETS {
        return Err(CliError::usage(format!(
            "{} addresses, more than the {MAX_TARGETS} one watch records",
            all.len()
        )));
    }
    let mut seen: Vec<&str> = Vec::new();
    for url in &all {
        let key = url.trim_end_matches('/');
        if seen.contains(&key) {
            return Err(CliError::usage(format!(
                "{url} is given twice; each replica is recorded once"
            )));
        }
        seen.push(key);
    }
    Ok(all)
}

pub fn watch_fleet(
    choice: &EngineChoice,
    urls: &[String],
    targets: Option<&Path>,
    out: &Path,
    interval: f64,
    duration: Option<f64>,
    whole_pages: bool,
) -> Result<ExitCode, CliError> {
    let options = WatchOptions {
        interval: flags::interval(interval)?,
        duration: duration.map(flags::duration).transpose()?,
        pages: flags::pages(whole_pages),
    };
    let urls = addresses(urls, targets)?;
    crate::run_folder::prepare_fleet(out, "watch", "-o")?;
    // Every replica is a task, all on one thread. Spread over a worker per core, the
    // same fleet measured worse on two cores at every size: more processor time (twice
    // it with whole pages), more missed slots and a wider p99 off the schedule, as the
    // workers woke and stole each other's replicas mid-slot. A narrowed scrape leaves
    // little but the request itself to do, and one thread does 256 of them at 4 Hz in
    // about a tenth of a core (docs/fleet.md).
    let recorder = Recorder::new()
        .map_err(|e| CliError::cannot_write(format!("cannot start the HTTP client: {e}")))?;
    let (firsts, engine) = one_answer_each(choice, &recorder, &urls)?;
    let names: Vec<String> = firsts
        .iter()
        .map(|(scraper, _)| scraper.base().to_string())
        .collect();
    let hosts: Vec<String> = names
        .iter()
        .map(|n| {
            n.split_once("://")
                .map_or(n.as_str(), |(_, h)| h)
                .to_owned()
        })
        .collect();
    let manifest = Manifest::new(
        "watch".into(),
        Some(engine),
        Some(options.interval.as_secs_f64()),
        &names,
        &hosts,
    );
    let rule = Rule::NEW;
    let refused = CliError::from;
    output::write_file(
        &out.join(fleet::MANIFEST),
        manifest.to_json().as_bytes(),
        &rule,
    )
    .map_err(refused)?;
    let mut members = Vec::with_capacity(firsts.len());
    for ((scraper, first), replica) in firsts.into_iter().zip(&manifest.replicas) {
        let path = out.join(&replica.folder).join("run.series.jsonl");
        let file = output::create_stream(&path, &rule).map_err(refused)?;
        members.push(Member {
            scraper,
            first,
            out: file,
        });
    }
    let sum_path = out.join(fleet::SUM_SERIES);
    let mut sum = output::create_stream(&sum_path, &rule).map_err(refused)?;
    // The command owns the process: Ctrl-C and `kill %1` end the recording cleanly.
    let stop = {
        let _inside = recorder.enter();
        inferlint_live::interrupted()
    };
    let (progress, writers) = recorder
        .watch_fleet(members, engine, &options, &mut sum, stop)
        .map_err(|e| CliError::cannot_write(format!("cannot write {}: {e}", out.display())))?;
    for writer in &writers {
        writer.sync_all().map_err(|e| {
            CliError::cannot_write(format!("cannot write {}: {e}", writer.path().display()))
        })?;
    }
    sum.sync_all()
        .map_err(|e| CliError::cannot_write(format!("cannot write {}: {e}", sum_path.display())))?;
    tell(&names, &progress, out)
}

/// Every replica answers once, with one engine, before anything is written: each one's
/// scraper and first scrape (asked of all at the same moment), and the fleet's engine.
fn one_answer_each(
    choice: &EngineChoice,
    recorder: &Recorder,
    urls: &[String],
) -> Result<(Vec<(Scraper, Scrape)>, Engine), CliError> {
    // All at once, each on a thread of its own: the fleet's schedule starts at the
    // earliest request, so a replica whose first scrape is slow must not delay the
    // others' first requests (they would start late on the shared schedule).
    let answers: Vec<Result<(Scraper, Scrape, Engine), CliError>> = std::thread::scope(|scope| {
        let asked: Vec<_> = urls
            .iter()
            .map(|url| scope.spawn(move || first_scrape(choice, recorder, url)))
            .collect();
        asked
            .into_iter()
            .map(|thread| {
                thread
                    .join()
                    .unwrap_or_else(|_| Err(CliError::usage("a replica's first scrape failed")))
            })
            .collect()
    });
    let mut firsts = Vec::with_capacity(urls.len());
    for answer in answers {
        let (scraper, scrape, found) = answer?;
        choice.check(Source::Server(scraper.base().to_string()), found)?;
        firsts.push((scraper, scrape, found));
    }
    let engines = urls
        .iter()
        .map(String::as_str)
        .zip(firsts.iter().map(|f| f.2));
    let Some(engine) =
        fleet::one_engine(engines).map_err(|e| CliError::OtherEngine(e.to_string()))?
    else {
        return Err(CliError::usage("give the addresses to record"));
    };
    Ok((firsts.into_iter().map(|(s, f, _)| (s, f)).collect(), engine))
}

/// Each replica's samples and gaps, the fleet's line; an error when a replica lost more
/// of its scrapes than a recording may.
fn tell(names: &[String], progress: &FleetProgress, out: &Path) -> Result<ExitCode, CliError> {
    let mut failed = Vec::new();
    for (name, p) in names.iter().zip(&progress.replicas) {
        let line = format!("{name}: {} samples{}", p.samples, crate::live::holes(p));
        eprint_line!("{line}");
        if p.too_many_failed() {
            failed.push(format!("{name} ({} of {})", p.failed, p.attempts));
        }
    }
    crate::output::print(&format!(
        "{} replicas, {} summed slots ({} with a replica missing) -> {}\n",
        names.len(),
        progress.summed,
        progress.sum_gaps,
        out.display()
    ))
    .map_err(|e| CliError::cannot_write(format!("cannot write the output: {e}")))?;
    if !failed.is_empty() {
        return Err(CliError::Undecided(format!(
            "more than {}% of the scrapes failed on {}: a peak can hide in the gaps",
            MAX_FAILED_SHARE * 100.0,
            failed.join(", ")
        )));
    }
    Ok(ExitCode::Passed)
}
