//! `snapshot`, `watch` and `probe`: glue between the command line and inferlint-live.
//! Files are written here; every request, clock and schedule lives in the library.

use std::fs::{self, File};
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use inferlint_core::Engine;
use inferlint_engines::files;
use inferlint_live::probe::{self, ProbeOptions};
use inferlint_live::watch::{Event, Progress, WatchOptions, MIN_INTERVAL};
use inferlint_live::{BaseUrl, Recorder, Scrape, Scraper};

use crate::cli::GlobalArgs;
use crate::engine_choice::{EngineChoice, NamedBy};
use crate::exit::{CliError, ExitCode};
use crate::output;

fn recorder() -> Result<Recorder, CliError> {
    Recorder::new().map_err(|e| CliError::usage(format!("cannot start the HTTP client: {e}")))
}

fn print(text: &str) -> Result<(), CliError> {
    output::print(text).map_err(|e| CliError::usage(format!("cannot write the output: {e}")))
}

fn cannot_write(path: &Path, e: io::Error) -> CliError {
    CliError::usage(format!("cannot write {}: {e}", path.display()))
}

/// Creates the folders above an output file.
fn make_parent(path: &Path) -> Result<(), CliError> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => {
            fs::create_dir_all(dir).map_err(|e| cannot_write(path, e))
        }
        _ => Ok(()),
    }
}

/// The first scrape of `snapshot` and `watch`: it must find an engine's metrics, and
/// the engine the user named, if any.
fn first_scrape(
    choice: &EngineChoice,
    recorder: &Recorder,
    url: &str,
) -> Result<(Scraper, Scrape, Engine), CliError> {
    let base = BaseUrl::parse(url).map_err(CliError::usage)?;
    let mut scraper = recorder.scraper(base.clone());
    let named = choice.named.map(|(engine, _)| engine);
    let (scrape, engine) = recorder
        .first_scrape(&mut scraper)
        .map_err(|e| CliError::usage(e.message(named)))?;
    if let Some((named, by)) = choice.named {
        if named != engine {
            let prefix = match by {
                NamedBy::Flag => format!("--engine {}", named.key()),
                NamedBy::Environment => format!("INFERLINT_ENGINE={}", named.key()),
            };
            return Err(CliError::usage(format!(
                "{prefix}, but the server at {base} runs {}. Check the server address or the file, or name the engine it came from.",
                engine.name()
            )));
        }
    }
    Ok((scraper, scrape, engine))
}

/// `snapshot URL -o FILE`: one scrape, written whole or not at all.
pub fn snapshot(choice: &EngineChoice, url: &str, out: &Path) -> Result<ExitCode, CliError> {
    let recorder = recorder()?;
    let (_, scrape, _) = first_scrape(choice, &recorder, url)?;
    make_parent(out)?;
    write_atomically(out, files::snapshot_json(&scrape.snapshot).as_bytes())
        .map_err(|e| cannot_write(out, e))?;
    print(&format!(
        "{} samples, scrape {:.3}s -> {}\n",
        scrape.snapshot.metrics.len(),
        scrape.stamp.latency_s,
        out.display()
    ))?;
    Ok(ExitCode::Passed)
}

/// Writes a temporary file beside `path`, then renames it over `path`: a reader sees
/// the old file or the whole new one, never half of it.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "snapshot".into());
    let temporary: PathBuf = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = File::create(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written
}

/// `watch URL -o FILE`: a series on a fixed schedule until the duration ends or a
/// signal arrives.
pub fn watch(
    choice: &EngineChoice,
    url: &str,
    out: &Path,
    interval: f64,
    duration: Option<f64>,
) -> Result<ExitCode, CliError> {
    if !interval.is_finite() || interval < MIN_INTERVAL.as_secs_f64() {
        return Err(CliError::usage(format!(
            "--interval {interval}: give seconds, {} or more",
            MIN_INTERVAL.as_secs_f64()
        )));
    }
    if let Some(d) = duration {
        if !d.is_finite() || d <= 0.0 {
            return Err(CliError::usage(format!(
                "--duration {d}: give a number of seconds above 0"
            )));
        }
    }
    let options = WatchOptions {
        interval: Duration::from_secs_f64(interval),
        duration: duration.map(Duration::from_secs_f64),
    };
    let recorder = recorder()?;
    let (mut scraper, first, engine) = first_scrape(choice, &recorder, url)?;
    make_parent(out)?;
    let mut file = File::create(out).map_err(|e| cannot_write(out, e))?;
    let mut status = StatusLine::new(io::stderr().is_terminal());
    let progress = recorder
        .watch(
            &mut scraper,
            first,
            engine,
            &options,
            &mut file,
            |event, progress| status.show(event, progress),
        )
        .map_err(|e| cannot_write(out, e))?;
    status.finish();
    file.sync_all().map_err(|e| cannot_write(out, e))?;
    let mut line = format!("{} samples -> {}", progress.samples, out.display());
    if progress.gaps > 0 {
        line.push_str(&format!(
            " ({} gap(s), {} slot(s) missed)",
            progress.gaps, progress.missed_slots
        ));
    }
    if progress.restarts > 0 {
        line.push_str(&format!(" ({} restart(s))", progress.restarts));
    }
    print(&format!("{line}\n"))?;
    Ok(ExitCode::Passed)
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
            Event::Sample => {}
            Event::Gap(reason) => {
                self.clear(&mut err);
                let _ = writeln!(err, "scrape failed: {reason}");
            }
            Event::Missed(reason) => {
                self.clear(&mut err);
                let _ = writeln!(err, "gap: {reason}");
            }
            Event::Restart(what) => {
                self.clear(&mut err);
                let _ = writeln!(
                    err,
                    "note: the server restarted ({what}); recording goes on"
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
    if concurrency == 0 {
        return Err(CliError::usage("--concurrency must be at least 1"));
    }
    if max_tokens == 0 {
        return Err(CliError::usage("--max-tokens must be at least 1"));
    }
    let base = BaseUrl::parse(url).map_err(CliError::usage)?;
    let options = ProbeOptions {
        model: model.map(str::to_owned),
        concurrency,
        max_tokens,
        ..ProbeOptions::default()
    };
    let report = recorder()?.probe(&base, &options);
    let results = [probe::verdict(&report)];
    print(&output::results_text(&results, global.json))?;
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
