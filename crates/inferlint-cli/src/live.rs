//! `snapshot`, `watch` and `probe`: glue between the command line and inferlint-live.
//! Files are written here; every request, clock and schedule lives in the library.

use std::cell::RefCell;
use std::io::{self, IsTerminal, Write};
use std::path::Path;

use inferlint_core::{story::fmt, Engine};
use inferlint_engines::files;
use inferlint_engines::load::{EngineChoice, Source};
use inferlint_engines::output::{self, OutputError, Rule};
use inferlint_live::probe::{self, ProbeOptions};
use inferlint_live::verdicts::VerdictChange;
use inferlint_live::watch::{Event, Progress, WatchOptions, MAX_FAILED_SHARE};
use inferlint_live::{BaseUrl, Recorder, Scrape, Scraper};

use crate::cli::{GlobalArgs, WatchArgs};
use crate::exit::{CliError, ExitCode};
use crate::output::eprint_line;
use crate::recorder::{LiveSetup, RecorderObserver, ServerRoot, Shown};
use crate::{flags, output as terminal};

pub(crate) fn recorder() -> Result<Recorder, CliError> {
    Recorder::new()
        .map_err(|e| CliError::cannot_write(format!("cannot start the HTTP client: {e}")))
}

fn cannot_write(path: &Path, e: io::Error) -> CliError {
    CliError::cannot_write(format!("cannot write {}: {e}", path.display()))
}

fn refused(e: OutputError) -> CliError {
    CliError::from(e)
}

/// The first scrape of `snapshot` and `watch`: it must find an engine's metrics, and
/// the engine the user named, if any.
pub(crate) fn first_scrape(
    choice: &EngineChoice,
    recorder: &Recorder,
    url: &str,
) -> Result<(Scraper, Scrape, Engine), CliError> {
    let base = BaseUrl::parse(url)?;
    let mut scraper = recorder.scraper(base.clone());
    let (scrape, engine) = recorder
        .first_scrape(&mut scraper)
        .map_err(|e| CliError::input(e.message(choice.named())))?;
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
    terminal::emit(&format!(
        "{} samples, scrape {:.3}s -> {}\n",
        scrape.snapshot.metrics.len(),
        scrape.stamp.latency_s,
        out.display()
    ))?;
    Ok(ExitCode::Passed)
}

/// `watch URL -o FILE`: a series on a fixed schedule until the duration ends or a
/// signal arrives. The file is created exclusively and locked while it is written;
/// `force` replaces an existing one that no other recorder holds. Each sample carries a
/// reading of the server's GPUs where they can be read; the mid-run verdicts are judged
/// as samples arrive, shown in the status area, one log line per change and, with
/// `--json-events`, written as JSON lines. `--steps FILE` copies the server's step file
/// for the window recorded into `steps.jsonl` beside the recording. Ends with exit 2
/// when more than
/// [`MAX_FAILED_SHARE`] of the scrapes failed.
pub fn watch(choice: &mut EngineChoice, args: &WatchArgs, url: &str) -> Result<ExitCode, CliError> {
    let out = args.out.as_path();
    let options = WatchOptions {
        interval: flags::interval(args.interval)?,
        duration: args.duration.map(flags::duration).transpose()?,
        pages: crate::flags::pages(args.whole_pages),
    };
    // The boot log is this command's input: never written over, --force or not.
    let reads: Vec<(&Path, &str)> = args
        .boot_log
        .as_deref()
        .map(|p| (p, "the boot log"))
        .into_iter()
        .collect();
    let rule = Rule {
        force: args.force,
        reads: &reads,
        ours: None,
    };
    output::check(out, &rule).map_err(refused)?;
    if let Some(events) = &args.json_events {
        if output::same_file(events, out) || events == out {
            return Err(CliError::usage(format!(
                "--json-events {} is the recording itself: give another file",
                events.display()
            )));
        }
        output::check(events, &rule).map_err(refused)?;
    }
    let boot = args
        .boot_log
        .as_deref()
        .map(|p| crate::loaded::noted(choice, |c| inferlint_engines::load::load_boot(c, p)))
        .transpose()?;
    // The server's spans and KV events, beside the recording, from before its first
    // scrape: each on a thread of its own.
    let beside = |name: &str| {
        out.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| Path::new(name).to_path_buf(), |p| p.join(name))
    };
    let otlp = match args.otlp {
        Some(port) => {
            let options = inferlint_live::otlp::OtlpOptions {
                force: args.force,
                ..inferlint_live::otlp::OtlpOptions::default()
            };
            let receiver = inferlint_live::otlp::OtlpReceiver::start_with(
                inferlint_live::otlp::Listen::Port(port),
                &beside(inferlint_engines::files::SPANS_FILE),
                &options,
            )
            .map_err(|e| CliError::usage(format!("--otlp {port}: {e}")))?;
            eprint_line!(
                "note: receiving spans at {} (start the server with --otlp-traces-endpoint {})",
                receiver.grpc_endpoint(),
                receiver.grpc_endpoint()
            );
            Some(receiver)
        }
        None => None,
    };
    let kv = match &args.kv_events {
        Some(endpoint) => {
            let mut options = inferlint_live::kv_events::KvOptions::new(endpoint);
            options.replay_endpoint = args.kv_replay.clone();
            options.force = args.force;
            Some(
                inferlint_live::kv_events::KvSubscriber::start_with(
                    options,
                    &beside(inferlint_engines::files::KV_EVENTS_FILE),
                )
                .map_err(|e| CliError::usage(format!("--kv-events: {e}")))?,
            )
        }
        None => None,
    };
    let recorder = recorder()?;
    // The step file is followed from just before the first scrape (the before reading):
    // what the server wrote earlier is another window's.
    let steps = match &args.steps {
        Some(source) => Some(start_steps(source, &beside, out, args)?),
        None => None,
    };
    let (mut scraper, first, engine) = match first_scrape(choice, &recorder, url) {
        Ok(found) => found,
        Err(e) => {
            discard_steps(steps);
            return Err(e);
        }
    };
    if steps.is_some() && engine.descriptor().step_plugin.is_none() {
        discard_steps(steps);
        return Err(CliError::usage(format!(
            "--steps: the step plugin is vLLM's (a stat logger); {} has none",
            engine.name()
        )));
    }
    // The server's endpoints that forget what they return, drained beside the recording
    // on a thread of its own: the engine is known now.
    let drainer = if args.drain {
        Some(start_drain(scraper.base(), engine, &beside, args.force)?)
    } else {
        None
    };
    let mut file = output::create_stream(out, &rule).map_err(refused)?;
    let events = args
        .json_events
        .as_deref()
        .map(|p| output::create_stream(p, &rule))
        .transpose()
        .map_err(refused)?;
    let (sampler, sampling, note) =
        crate::recorder::gpu_sampler(args.no_gpu, ServerRoot::of_url(scraper.base()));
    if let Some(note) = note {
        eprint_line!("note: {note}");
    }
    let status = RefCell::new(StatusLine::new(io::stderr().is_terminal()));
    let mut observer = RecorderObserver::new(
        engine,
        (sampler, sampling),
        LiveSetup {
            requested: args.requested,
            boot,
            expect_cache_hits: args.expect_cache_hits,
            events,
        },
        Box::new(|shown| status.borrow_mut().shown(shown)),
    );
    // The command owns the process: Ctrl-C and `kill %1` end the recording cleanly.
    let stop = {
        let _inside = recorder.enter();
        inferlint_live::interrupted()
    };
    let progress = recorder
        .watch_observed(
            &mut scraper,
            first,
            engine,
            &options,
            &mut file,
            stop,
            |event, progress| status.borrow_mut().show(event, progress),
            &mut observer,
        )
        .map_err(|e| cannot_write(out, e))?;
    let ended = observer.finish();
    status.borrow_mut().finish();
    file.sync_all().map_err(|e| cannot_write(out, e))?;
    if let Some(receiver) = otlp {
        eprint_line!("note: waiting a few seconds for the server's last spans");
        let (summary, requests) =
            receiver.stop_after_last_spans(engine.descriptor(), None, &|| false);
        terminal::emit(&format!(
            "{}\n",
            crate::receivers::spans_line(&summary, requests)
        ))?;
    }
    if let Some(subscriber) = kv {
        terminal::emit(&format!(
            "{}\n",
            crate::receivers::kv_line(&subscriber.stop())
        ))?;
    }
    if let Some(follower) = steps {
        let summary = follower.stop();
        terminal::emit(&format!("{}\n", fmt::terminal_safe(&summary.line())))?;
        if let Some(warning) = summary.warning() {
            eprint_line!("warning: {}", fmt::terminal_safe(&warning));
        }
    }
    if let Some(drainer) = drainer {
        let summary = drainer.stop();
        for line in crate::receivers::drain_lines(&summary) {
            terminal::emit(&format!("{line}\n"))?;
        }
        if let Some(e) = summary.write_error {
            eprint_line!("inferlint: {e}");
        }
    }
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
    terminal::emit(&format!("{line}\n"))?;
    let verdicts = observer.status_text();
    if !verdicts.is_empty() {
        terminal::emit(&format!(
            "verdicts at the end: {}\n",
            fmt::terminal_safe(&verdicts)
        ))?;
    }
    ended.map_err(CliError::cannot_write)?;
    if progress.too_many_failed() {
        return Err(CliError::Undecided(format!(
            "{} of {} scrapes failed, more than {}%: a peak can hide in the gaps of {}",
            progress.failed,
            progress.attempts,
            MAX_FAILED_SHARE * 100.0,
            out.display()
        )));
    }
    Ok(ExitCode::Passed)
}

/// Starts following the server's step file (`--steps FILE`) into `steps.jsonl` beside
/// the recording; refused when that copy would be the recording or its events file, when
/// FILE's first line is not a step file's header, or when the copy may not be written.
fn start_steps(
    source: &Path,
    beside: &dyn Fn(&str) -> std::path::PathBuf,
    out: &Path,
    args: &WatchArgs,
) -> Result<inferlint_live::steps_follow::StepsFollower, CliError> {
    use inferlint_live::steps_follow::{StepsError, StepsFollower};
    let copy = beside(inferlint_engines::files::STEPS_FILE);
    let clash = |other: &Path| other == copy || output::same_file(other, &copy);
    if clash(out) || args.json_events.as_deref().is_some_and(clash) {
        return Err(CliError::usage(format!(
            "--steps copies into {}, which -o or --json-events names: record the series under another name",
            copy.display()
        )));
    }
    let follower = StepsFollower::start(source, &copy, args.force).map_err(|e| match e {
        StepsError::NotSteps { .. } | StepsError::Read { .. } => {
            CliError::input(format!("--steps: {e}"))
        }
        StepsError::Output(e) => refused(e),
        e => CliError::cannot_write(format!("--steps: {e}")),
    })?;
    eprint_line!(
        "note: copying the server's steps from {} into {}",
        source.display(),
        copy.display()
    );
    if !follower.started_with_header() {
        eprint_line!(
            "note: {} holds no step header yet (the plugin writes it at the server's first step): the copy begins then",
            source.display()
        );
    }
    Ok(follower)
}

/// Stops following for a recording that never began, and removes the copy begun.
fn discard_steps(steps: Option<inferlint_live::steps_follow::StepsFollower>) {
    if let Some(out) = steps.and_then(|follower| follower.stop().out) {
        let _ = std::fs::remove_file(out);
    }
}

/// Starts draining `engine`'s endpoints that forget what they return (`--drain`) into
/// the files beside the recording, and says that another reader loses what it takes.
fn start_drain(
    base: &inferlint_live::BaseUrl,
    engine: inferlint_core::Engine,
    beside: &dyn Fn(&str) -> std::path::PathBuf,
    force: bool,
) -> Result<inferlint_live::drain::Drainer, CliError> {
    use inferlint_live::drain::{destructive_warning, drains, DrainOptions, Drainer};
    let d = engine.descriptor();
    let (requests, kv) = drains(d);
    if requests.is_none() && kv.is_none() {
        return Err(CliError::usage(format!(
            "--drain: {} serves nothing that forgets what it returns (its account of each request and its KV events come by --otlp and --kv-events, or from files it writes)",
            d.name
        )));
    }
    let mut options = DrainOptions::new(base.clone(), d);
    options.requests_out = requests.map(|_| beside(inferlint_engines::files::SERVER_REQUESTS_FILE));
    options.kv_events_out = kv.map(|_| beside(inferlint_engines::files::KV_EVENTS_FILE));
    options.force = force;
    let drainer = Drainer::start(options).map_err(|e| CliError::usage(format!("--drain: {e}")))?;
    eprint_line!("warning: {}", destructive_warning(base, d));
    for drain in [requests, kv].into_iter().flatten() {
        eprint_line!(
            "note: {} holds nothing unless the server is started for it: {}",
            drain.path,
            drain.needs
        );
    }
    Ok(drainer)
}

/// `watch` of a fleet (several URLs, `--targets`) judges nothing while it records (T22 is
/// judged by `report` of the folder): the flags of one server's live verdicts are refused
/// rather than left unused.
pub(crate) fn fleet_takes_no_live_verdicts(args: &WatchArgs) -> Result<(), CliError> {
    let given = [
        ("--requested", args.requested.is_some()),
        ("--boot-log", args.boot_log.is_some()),
        ("--json-events", args.json_events.is_some()),
        ("--expect-cache-hits", args.expect_cache_hits),
        ("--otlp", args.otlp.is_some()),
        ("--kv-events", args.kv_events.is_some()),
        ("--drain", args.drain),
        ("--steps", args.steps.is_some()),
    ];
    match given.iter().find(|(_, given)| *given) {
        Some((flag @ ("--otlp" | "--kv-events" | "--drain" | "--steps"), _)) => Err(CliError::usage(format!(
            "{flag} receives one server's traces: record each replica's with a watch of its own"
        ))),
        Some((flag, _)) => Err(CliError::usage(format!(
            "{flag} is for one server's live verdicts: a fleet's recording is judged by report of its folder"
        ))),
        None => Ok(()),
    }
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

/// The live status area on a terminal (stderr): the recorder's counts on one line, the
/// verdicts and the limit on a second; the gap, restart and verdict notes above it.
#[derive(Debug)]
struct StatusLine {
    terminal: bool,
    /// Lines of the status area on the screen now.
    shown: usize,
    verdicts: String,
    progress: Option<Progress>,
}

impl StatusLine {
    fn new(terminal: bool) -> StatusLine {
        StatusLine {
            terminal,
            shown: 0,
            verdicts: String::new(),
            progress: None,
        }
    }

    fn clear(&mut self, err: &mut impl Write) {
        if self.shown > 0 {
            let _ = write!(err, "\r\x1b[K");
            for _ in 1..self.shown {
                let _ = write!(err, "\x1b[1A\r\x1b[K");
            }
            self.shown = 0;
        }
    }

    fn draw(&mut self, err: &mut impl Write) {
        if !self.terminal {
            return;
        }
        let Some(counts) = self.progress.as_ref().map(status_text) else {
            return;
        };
        self.clear(err);
        let _ = write!(err, "{counts}");
        self.shown = 1;
        if !self.verdicts.is_empty() {
            let _ = write!(err, "\n{}", fmt::terminal_safe(&self.verdicts));
            self.shown = 2;
        }
        let _ = err.flush();
    }

    fn note(&mut self, line: &str) {
        let mut err = io::stderr().lock();
        self.clear(&mut err);
        let _ = writeln!(err, "{line}");
        self.draw(&mut err);
    }

    /// What the observer shows: a verdict that changed, or the verdicts now.
    fn shown(&mut self, shown: Shown<'_>) {
        match shown {
            Shown::Change(change) => self.note(&change_line(change)),
            Shown::Status(text) => self.verdicts = text,
        }
    }

    fn show(&mut self, event: Event<'_>, progress: &Progress) {
        self.progress = Some(progress.clone());
        match event {
            Event::Sample(_) => {}
            Event::Gap(reason) => {
                self.note(&format!("scrape failed: {}", fmt::terminal_safe(reason)))
            }
            Event::Missed(reason) => self.note(&format!("gap: {}", fmt::terminal_safe(reason))),
            Event::Skipped(what) => self.note(&format!(
                "note: {}; the rest of each scrape is recorded",
                fmt::terminal_safe(what)
            )),
            Event::Restart(what) => self.note(&format!(
                "note: the server restarted ({}); recording goes on",
                fmt::terminal_safe(what)
            )),
        }
        let mut err = io::stderr().lock();
        self.draw(&mut err);
    }

    fn finish(&mut self) {
        if self.shown > 0 {
            let _ = writeln!(io::stderr());
            self.shown = 0;
        }
    }
}

/// The log line of a verdict that changed: `verdict: [ T8] TRIPWIRE-FAILED  requested 32
/// concurrent, server never ran more than 10 (was PASS)`.
pub(crate) fn change_line(change: &VerdictChange) -> String {
    let mut line = format!("verdict: {}", change.result.terminal_line());
    if let Some(previous) = change.previous {
        line.push_str(&format!(" (was {})", previous.terminal_label()));
    }
    fmt::terminal_safe(&line).into_owned()
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
    timeout: f64,
) -> Result<ExitCode, CliError> {
    if global.engine.is_some() {
        return Err(CliError::usage(
            "probe takes no --engine: it sends the same requests to every engine",
        ));
    }
    let concurrency = flags::count("--concurrency", concurrency, &flags::PROBE_CONCURRENCY)?;
    let max_tokens = flags::count("--max-tokens", max_tokens, &flags::PROBE_MAX_TOKENS)?;
    let request_timeout =
        flags::positive_seconds("--timeout", timeout, flags::MAX_PROBE_TIMEOUT_S)?;
    let base = BaseUrl::parse(url)?;
    let options = ProbeOptions {
        model: model.map(str::to_owned),
        concurrency,
        max_tokens,
        request_timeout,
        ..ProbeOptions::default()
    };
    let report = recorder()?.probe(&base, &options);
    let results = [probe::verdict(&report)];
    terminal::emit(&terminal::results_text(&results, global.json))?;
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
