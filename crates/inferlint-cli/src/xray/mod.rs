//! `xray`: the whole routine in one command. Start the server (or attach to one), check
//! that the server answering is the one started (T13), check its boot log, probe it,
//! record it while the user's own load runs, check the run, stop the server.
//!
//! This is glue: every decision comes from the library crates. The checks at the end are
//! made from the files written into the run folder, exactly as `inferlint report DIR`
//! makes them, so the folder reads back to the same verdicts.
//!
//! Stopping the server on every path is the point of this module. The server runs under
//! a supervisor (`supervise/`) that holds its whole tree, daemons included, and stops
//! it should xray die; [`ServerGuard`] stops the whole tree when it is dropped
//! (normal end, an early stop, an error inside inferlint, a panic), and a thread waiting
//! on inferlint-live's signal handlers turns SIGINT and SIGTERM into a clean stop: the
//! load is ended, the run so far is checked and saved, the server is stopped, and the
//! command exits 130. A second signal, or a clean stop that takes too long, stops the
//! server at once and exits.
//!
//! The parts: [`stages`] (the stage machine and the end on every path), [`supervision`]
//! (the server's start, readiness, T13's facts, the GPU gates and the stop), [`signals`]
//! (Ctrl-C and SIGTERM, the guard), [`load`] (the user's load beside the recorder) and
//! [`status`] (the lines printed and the live status line). HTTP, the server's version,
//! the recorder's runtime and its stop flag are inferlint-live's; T13's verdicts are
//! core's.

use std::fs::{self, File};
use std::io::{self, IsTerminal, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

use inferlint_core::judging::checks::owner;
use inferlint_core::judging::status::{count_line, CheckResult, Status, Tripwire};
use inferlint_core::{run, story::contract, Engine};
use inferlint_engines::load::{self as loading, shown, EngineChoice, Source};
use inferlint_engines::loadcmd::{self, LoadPlan};
use inferlint_engines::output::Rule;
use inferlint_engines::{detect, files, loadtools};
use inferlint_gpu::tree::{Member, StopTimes};
use inferlint_live::probe::ProbeOptions;
use inferlint_live::watch::{self, WatchOptions};
use inferlint_live::{BaseUrl, Recorder};

use crate::cli::XrayArgs;
use crate::exit::run_exit;
use crate::exit::{CliError, ExitCode};
use crate::flags;
use crate::loaded::noted;
use crate::output;
use crate::output::eprint_line;
use crate::recorder::{LiveSetup, RecorderObserver, ServerRoot, Shown};
use crate::run_folder::folder_name;
use crate::supervise::{self, Ended, ServerSpec, Supervised};

mod load;
mod signals;
mod stages;
mod status;
mod supervision;
mod traces;

use signals::{catch_signals, terminate, ServerGuard, ServerProcess, Shared};
use status::{say, say_results, LiveLine};
use supervision::{clear_card_after_stop, last_line, stop_server};

/// How often the boot log and `/health` are read while the server starts. Shorter than
/// the Python tool's 2 s: a simulated server is ready in a fraction of a second.
const READY_POLL: Duration = Duration::from_millis(250);
/// SIGTERM to every process of the server, then `--stop-grace` (30 s by default) before
/// SIGKILL; then this long for the kill.
const STOP_TIMES: StopTimes = StopTimes {
    grace: Duration::from_secs(30),
    kill_wait: Duration::from_secs(10),
    poll: supervise::STOP_POLL,
};

/// [`STOP_TIMES`] with the grace `--stop-grace` gives.
fn stop_times(grace_s: f64) -> StopTimes {
    StopTimes {
        grace: Duration::try_from_secs_f64(grace_s).unwrap_or(STOP_TIMES.grace),
        ..STOP_TIMES
    }
}
/// After SIGINT or SIGTERM the clean stop (after snapshot, checks, report) may take this
/// long; then the server is stopped at once and xray exits.
const CLEAN_STOP_LIMIT: Duration = Duration::from_secs(60);
/// After SIGINT or SIGTERM the load command gets this long to end before SIGKILL.
const LOAD_STOP_GRACE: Duration = Duration::from_secs(5);

/// The probe's bounds in xray: the `probe` command's defaults (300 s a completion, a cold
/// server compiling kernels on its first request; 10 s for `/health`, 30 s for
/// `/v1/models`), each cut to `--ready-timeout` when that is shorter. The probe is the
/// server's first real work, the last step of getting it ready: a user who says the
/// server is ready within N seconds has said that no step of it may wait longer, and
/// with `--ready-timeout 30` xray must not wait 300 s, twice, on a server that hangs.
fn probe_options(ready_timeout: f64) -> ProbeOptions {
    let defaults = ProbeOptions::default();
    let ready = Duration::try_from_secs_f64(ready_timeout).unwrap_or(defaults.request_timeout);
    ProbeOptions {
        request_timeout: defaults.request_timeout.min(ready),
        health_timeout: defaults.health_timeout.min(ready),
        models_timeout: defaults.models_timeout.min(ready),
        ..defaults
    }
}

/// Why the run stopped before its end.
#[derive(Debug)]
enum Stop {
    /// A step failed: the message, and the exit status it calls for.
    Problem(String, ExitCode),
    Interrupted,
}

fn problem(message: impl Into<String>) -> Stop {
    Stop::Problem(message.into(), ExitCode::TripwireFailed)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The folder name when `-o` is not given: `xray-YYYYmmdd-HHMMSS` (UTC).
fn default_folder() -> PathBuf {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    PathBuf::from(folder_name(secs))
}

/// Everything one xray run knows and has found so far.
#[derive(Debug)]
struct Xray<'a> {
    args: &'a XrayArgs,
    strict: bool,
    dir: PathBuf,
    base: BaseUrl,
    /// The engine from --engine or the --serve command, before the server is asked.
    engine: Option<Engine>,
    shared: Arc<Shared>,
    started: Instant,
    terminal: bool,
    /// Every result, in the order they were made.
    results: Vec<CheckResult>,
    load_plan: LoadPlan,
    /// Why the load command failed, when it did: the run is then not a benchmark.
    load_failure: Option<String>,
    /// Why the started server never came up (it could not be started, or it exited
    /// before it was ready): T12 fails with it when the log names no cause.
    start_failure: Option<String>,
    load_started: Option<SystemTime>,
    boot_checked: bool,
    /// What the boot log said, for the recording's live verdicts (the running cap).
    boot_facts: Option<inferlint_core::model::BootFacts>,
    /// The version the server reports (`/version`, `/get_server_info`): SGLang prints
    /// none in its log.
    server_version: Option<String>,
    /// The span receiver and the KV event subscriber, when asked for (`--otlp`,
    /// `--kv-events`): stopped after the load, or when dropped.
    receivers: traces::Receivers,
}

pub fn xray(
    choice: &mut EngineChoice,
    args: &XrayArgs,
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    if json {
        // The stages stream lines while the run goes on; the JSON results are the file.
        return Err(CliError::usage(
            "xray takes no --json: it writes every result to DIR/results.json",
        ));
    }
    if args.load.is_empty() {
        return Err(CliError::usage(
            "give the load command after --, e.g. inferlint xray -o run/ --serve \"vllm serve MODEL\" -- vllm bench serve --model MODEL ...",
        ));
    }
    flags::interval(args.interval)?;
    flags::positive_seconds(
        "--ready-timeout",
        args.ready_timeout,
        flags::MAX_READY_TIMEOUT_S,
    )?;
    flags::positive_seconds("--stop-grace", args.stop_grace, 3600.0)?;
    let serve_words = match &args.serve {
        Some(command) => {
            let words = loadcmd::shell_words(command)
                .ok_or_else(|| CliError::usage("--serve: a quote is left open"))?;
            if loadcmd::program(&words).is_none() {
                return Err(CliError::usage("--serve names no command to start"));
            }
            Some(words)
        }
        None => None,
    };
    let from_command = args.serve.as_deref().and_then(detect::engine_from_command);
    let named = choice.named();
    if let Some(command) = from_command {
        choice.check(Source::ServeCommand, command)?;
    }
    let engine = named.or(from_command);
    let url = match (&args.url, &serve_words) {
        (Some(url), _) => url.clone(),
        (None, words) => loadcmd::serve_url(
            words.as_deref().unwrap_or_default(),
            engine.unwrap_or(Engine::DEFAULT),
        ),
    };
    let base = BaseUrl::parse(&url)?;
    refuse_other_port(&base, serve_words.as_deref())?;
    traces::check_flags(args, engine)?;
    check_inputs_first(args)?;
    let dir = args.out.clone().unwrap_or_else(default_folder);
    // One folder, one run: the files of an earlier one are never read as this one's.
    let keep: Vec<&Path> = [args.boot_log.as_deref(), args.bench_result.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    if let Some(aside) = crate::run_folder::prepare(&dir, args.force, &keep)? {
        eprint_line!(
            "note: {} held an earlier run; its files are now in {}",
            shown(&dir),
            shown(&aside)
        );
    }
    let shared = Arc::new(Shared::default());
    catch_signals(&shared)?;

    match (named, from_command) {
        (Some(e), _) => say(&format!("== engine: {}", e.name())),
        (None, Some(e)) => say(&format!(
            "== engine: {} (from the --serve command)",
            e.name()
        )),
        (None, None) => {}
    }
    let load_plan = loadcmd::plan_load(&args.load, &dir);
    let mut xray = Xray {
        args,
        strict,
        dir,
        base,
        engine,
        shared: Arc::clone(&shared),
        started: Instant::now(),
        terminal: io::stdout().is_terminal(),
        results: Vec::new(),
        load_plan,
        load_failure: None,
        start_failure: None,
        load_started: None,
        boot_checked: false,
        boot_facts: None,
        server_version: None,
        receivers: traces::Receivers::default(),
    };
    // The guard exists before the server does: whatever happens below, including an
    // error returned with `?`, its drop stops the server.
    let guard = ServerGuard(Arc::clone(&shared));
    let outcome = xray.stages(choice, serve_words.as_deref());
    let ended = xray.finish(choice, outcome);
    drop(guard);
    ended
}

/// A file the run writes as it goes (the server's and the load's output), created new:
/// never over a file or through a link left in the folder.
fn create_new(path: &Path) -> Result<File, inferlint_engines::output::OutputError> {
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => inferlint_engines::output::OutputError::Exists {
                path: path.to_owned(),
            },
            _ => inferlint_engines::output::OutputError::Io {
                path: path.to_owned(),
                source: e,
            },
        })
}

/// `--url` and a `--serve` command that listens on another port cannot both be right:
/// xray would start one server and record another (or none). Refused, naming both.
fn refuse_other_port(base: &BaseUrl, serve: Option<&[String]>) -> Result<(), CliError> {
    let Some(words) = serve else {
        return Ok(());
    };
    let Some(asked) = loadcmd::flag_value(words, "--port") else {
        return Ok(());
    };
    let Ok(serve_port) = asked.trim().parse::<u16>() else {
        return Ok(());
    };
    match base.host_port() {
        Some((_, url_port)) if url_port != serve_port => Err(CliError::usage(format!(
            "--url {base} is port {url_port}, but the --serve command listens on port {serve_port} (--port {asked}): give one port, or leave --url out"
        ))),
        _ => Ok(()),
    }
}

/// The files xray reads that exist before the run (an attached server's `--boot-log`),
/// checked before any server is contacted or started: a missing or unreadable one, or a
/// pipe or a device, is an unusable input (exit 65), and nothing is asked of the server.
fn check_inputs_first(args: &XrayArgs) -> Result<(), CliError> {
    if args.serve.is_some() {
        // The started server's boot log is the one xray writes, DIR/boot.log.
        return Ok(());
    }
    if let Some(path) = args.boot_log.as_deref() {
        files::open_input(path).map_err(|e| CliError::input(format!("--boot-log: {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/xray.md: each probe step waits at most the `probe` command's bound, or
    /// `--ready-timeout` when that is shorter; the default 900 s leaves the 300 s.
    #[test]
    fn the_probe_waits_no_longer_than_the_ready_timeout() {
        let short = probe_options(2.0);
        assert_eq!(short.request_timeout, Duration::from_secs(2));
        assert_eq!(short.health_timeout, Duration::from_secs(2));
        assert_eq!(short.models_timeout, Duration::from_secs(2));
        let default = probe_options(900.0);
        assert_eq!(default.request_timeout, Duration::from_secs(300));
        assert_eq!(default.health_timeout, Duration::from_secs(10));
        assert_eq!(default.models_timeout, Duration::from_secs(30));
        assert_eq!(default.concurrency, 8);
    }
}
