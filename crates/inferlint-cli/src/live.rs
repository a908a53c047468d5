//! `snapshot`, `watch` and `probe`: glue between the command line and inferlint-live.
//! Files are written here; every request, clock and schedule lives in the library.

use std::io::{self, IsTerminal, Write};
use std::path::Path;

use inferlint_core::{fmt, Engine};
use inferlint_engines::files;
use inferlint_engines::load::{EngineChoice, Source};
use inferlint_engines::output::{self, OutputError, Rule};
use inferlint_live::probe::{self, ProbeOptions};
use inferlint_live::watch::{Event, Progress, WatchOptions, MAX_FAILED_SHARE};
use inferlint_live::{BaseUrl, Recorder, Scrape, Scraper};

use crate::cli::GlobalArgs;
use crate::exit::{CliError, ExitCode};
use crate::output::eprint_line;
use crate::{flags, output as terminal};

pub(crate) fn recorder() -> Result<Recorder, CliError> {
    Recorder::new().map_err(|e| CliError::usage(format!("cannot start the HTTP client: {e}")))
}

fn print(text: &str) -> Result<(), CliError> {
    terminal::print(text).map_err(|e| CliError::usage(format!("cannot write the output: {e}")))
}

fn cannot_write(path: &Path, e: io::Error) -> CliError {
    CliError::usage(format!("cannot write {}: {e}", path.display()))
}

fn refused(e: OutputError) -> CliError {
    CliError::usage(e.to_string())
}

/// The first scrape of `snapshot` and `watch`: it must find an engine's metrics, and
/// the engine the user named, if any.
pub(crate) fn first_scrape(
    choice: &EngineChoice,
    recorder: &Recorder,
    url: &str,
) -> Result<(Scraper, Scrape, Engine), CliError> {
    let base = BaseUrl::parse(url).map_err(CliError::usage)?;
    let mut scraper = recorder.scraper(base.clone());
    let (scrape, engine) = recorder
        .first_scrape(&mut scraper)
        .map_err(|e| CliError::usage(e.message(choice.named())))?;
    choice.check(Source::Server(base.to_string()), engine)?;
    Ok((scraper, scrape, engine))
}

/// `snapshot URL -o FILE`: one scrape, written whole or not at all. An existing FILE is
/// refused unless `force` (a second `snapshot -o before.json` would lose the reading
/// taken before the run).
pub fn snapshot(
    choice: &EngineChoice,
    url: &str,
    out: &Path,
    force: bool,
) -> Result<ExitCode, CliError> {
    let rule = Rule::force(force);
    // Refused before the server is asked anything.
    output::check(out, &rule).map_err(refused)?;
    let recorder = recorder()?;
    let (_, scrape, _) = first_scrape(choice, &recorder, url)?;
    if let Some(skipped) = &scrape.skipped {
        eprint_line!("note: {}: {skipped}", scrape.url);
    }
    output::write_file(
        out,
        files::snapshot_json(&scrape.snapshot).as_bytes(),
        &rule,
    )
    .map_err(refused)?;
    print(&format!(
        "{} samples, scrape {:.3}s -> {}\n",
        scrape.snapshot.metrics.len(),
        scrape.stamp.latency_s,
        out.display()
    ))?;
    Ok(ExitCode::Passed)
}

/// `watch URL -o FILE`: a series on a fixed schedule until the duration ends or a
/// signal arrives. The file is created exclusively and locked while it is written;
/// `force` replaces an existing one that no other recorder holds. Ends with exit 2 when
/// more than [`MAX_FAILED_SHARE`] of the scrapes failed.
pub fn watch(
    choice: &EngineChoice,
    url: &str,
    out: &Path,
    interval: f64,
    duration: Option<f64>,
    force: bool,
) -> Result<ExitCode, CliError> {
    let options = WatchOptions {
        interval: flags::interval(interval)?,
        duration: duration.map(flags::duration).transpose()?,
    };
    let rule = Rule::force(force);
    output::check(out, &rule).map_err(refused)?;
    let recorder = recorder()?;
    let (mut scraper, first, engine) = first_scrape(choice, &recorder, url)?;
    let mut file = output::create_stream(out, &rule).map_err(refused)?;
    let mut status = StatusLine::new(io::stderr().is_terminal());
    // The command owns the process: Ctrl-C and `kill %1` end the recording cleanly.
    let stop = {
        let _inside = recorder.enter();
        inferlint_live::interrupted()
    };
    let progress = recorder
        .watch(
            &mut scraper,
            first,
            engine,
            &options,
            &mut file,
            stop,
            |event, progress| status.show(event, progress),
        )
        .map_err(|e| cannot_write(out, e))?;
    status.finish();
    file.sync_all().map_err(|e| cannot_write(out, e))?;
    let mut line = format!(
        "{} samples -> {}{}",
        progress.samples,
        out.display(),
        holes(&progress)
    );
    if progress.damaged > 0 {
        line.push_str(&format!(
            " ({} scrape(s) with unreadable lines)",
            progress.damaged
        ));
    }
    print(&format!("{line}\n"))?;
    if progress.too_many_failed() {
        return Err(CliError::usage(format!(
            "{} of {} scrapes failed, more than {}%: a peak can hide in the gaps of {}",
            progress.failed,
            progress.attempts,
            MAX_FAILED_SHARE * 100.0,
            out.display()
        )));
    }
    Ok(ExitCode::Passed)
}

/// What a recording missed, for its last line: ` (2 gap(s), 3 slot(s) missed) (1
/// restart(s))`, or nothing.
pub(crate) fn holes(progress: &Progress) -> String {
    let mut text = String::new();
    if progress.gaps > 0 {
        text.push_str(&format!(
            " ({} gap(s), {} slot(s) missed)",
            progress.gaps, progress.missed_slots
        ));
    }
    if progress.restarts > 0 {
        text.push_str(&format!(" ({} restart(s))", progress.restarts));
    }
    text
}

/// The live status line on a terminal (stderr), and the gap and restart notes.
#[derive(Debug)]
struct StatusLine {
    terminal: bool,
    shown: bool,
}

impl StatusLine {
    fn new(terminal: bool) -> StatusLine {
        StatusLine {
            terminal,
            shown: false,
        }
    }

    fn clear(&mut self, err: &mut impl Write) {
        if self.shown {
            let _ = write!(err, "\r\x1b[K");
            self.shown = false;
        }
    }

    fn show(&mut self, event: Event<'_>, progress: &Progress) {
        let mut err = io::stderr().lock();
        match event {
            Event::Sample(_) => {}
            Event::Gap(reason) => {
                self.clear(&mut err);
                let _ = writeln!(err, "scrape failed: {}", fmt::terminal_safe(reason));
            }
            Event::Missed(reason) => {
                self.clear(&mut err);
                let _ = writeln!(err, "gap: {}", fmt::terminal_safe(reason));
            }
            Event::Skipped(what) => {
                self.clear(&mut err);
                let _ = writeln!(
                    err,
                    "note: {}; the rest of each scrape is recorded",
                    fmt::terminal_safe(what)
                );
            }
            Event::Restart(what) => {
                self.clear(&mut err);
                let _ = writeln!(
                    err,
                    "note: the server restarted ({}); recording goes on",
                    fmt::terminal_safe(what)
                );
            }
        }
        if self.terminal {
            let _ = write!(err, "\r\x1b[K{}", status_text(progress));
            let _ = err.flush();
            self.shown = true;
        }
    }

    fn finish(&mut self) {
        if self.shown {
            let _ = writeln!(io::stderr());
            self.shown = false;
        }
    }
}

/// `412 samples  running 8  waiting 2  KV 41%  preemptions 3  gaps 0`.
pub(crate) fn status_text(p: &Progress) -> String {
    let number = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.0}"));
    let kv = p
        .kv_usage
        .map_or("-".to_owned(), |v| format!("{:.0}%", v * 100.0));
    let mut text = format!(
        "{} samples  running {}  waiting {}  KV {kv}",
        p.samples,
        number(p.running),
        number(p.waiting)
    );
    if p.paused.is_some() {
        text.push_str(&format!("  paused {}", number(p.paused)));
    } else {
        text.push_str(&format!("  preemptions {}", number(p.preemptions)));
    }
    text.push_str(&format!("  gaps {}", p.gaps));
    if p.restarts > 0 {
        text.push_str(&format!("  restarts {}", p.restarts));
    }
    text
}

/// `probe URL`: T7.
pub fn probe(
    global: &GlobalArgs,
    url: &str,
    model: Option<&str>,
    concurrency: u32,
    max_tokens: u32,
) -> Result<ExitCode, CliError> {
    if global.engine.is_some() {
        return Err(CliError::usage(
            "probe takes no --engine: it sends the same requests to every engine",
        ));
    }
    let concurrency = flags::count("--concurrency", concurrency, &flags::PROBE_CONCURRENCY)?;
    let max_tokens = flags::count("--max-tokens", max_tokens, &flags::PROBE_MAX_TOKENS)?;
    let base = BaseUrl::parse(url).map_err(CliError::usage)?;
    let options = ProbeOptions {
        model: model.map(str::to_owned),
        concurrency,
        max_tokens,
        ..ProbeOptions::default()
    };
    let report = recorder()?.probe(&base, &options);
    let results = [probe::verdict(&report)];
    print(&terminal::results_text(&results, global.json))?;
    Ok(ExitCode::for_results(&results, global.strict))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line() {
        let p = Progress {
            samples: 412,
            gaps: 1,
            running: Some(8.0),
            waiting: Some(2.0),
            kv_usage: Some(0.414),
            preemptions: Some(3.0),
            ..Progress::default()
        };
        assert_eq!(
            status_text(&p),
            "412 samples  running 8  waiting 2  KV 41%  preemptions 3  gaps 1"
        );
    }
}
