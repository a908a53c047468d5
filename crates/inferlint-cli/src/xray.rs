//! `xray`: the whole routine in one command. Start the server (or attach to one), check
//! that the server answering is the one started (T13), check its boot log, probe it,
//! record it while the user's own load runs, check the run, stop the server.
//!
//! This is glue: every decision comes from the library crates. The checks at the end are
//! made from the files written into the run folder, exactly as `inferlint report DIR`
//! makes them, so the folder reads back to the same verdicts.
//!
//! Stopping the server on every path is the point of this module. The server runs under
//! a supervisor (`supervise.rs`) that holds its whole tree, daemons included, and stops
//! it should xray die; [`ServerGuard`] stops the whole tree when it is dropped
//! (normal end, an early stop, an error inside inferlint, a panic), and a thread waiting
//! on inferlint-live's signal handlers turns SIGINT and SIGTERM into a clean stop: the
//! load is ended, the run so far is checked and saved, the server is stopped, and the
//! command exits 130. A second signal, or a clean stop that takes too long, stops the
//! server at once and exits.

use std::fs::{self, File};
use std::io::{self, IsTerminal, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

use inferlint_core::checks::owner;
use inferlint_core::status::{count_line, CheckResult, Status, Tripwire};
use inferlint_core::{contract, insights, run, Engine};
use inferlint_engines::load::{self, shown, EngineChoice, Source};
use inferlint_engines::loadcmd::{self, LoadPlan};
use inferlint_engines::output::Rule;
use inferlint_engines::{detect, files, loadtools};
use inferlint_gpu::tree::{Member, StopTimes};
use inferlint_live::probe::{self, ProbeOptions};
use inferlint_live::watch::{self, WatchOptions};
use inferlint_live::{scrape, BaseUrl, HttpClient, Recorder, Scraper};

use crate::cli::XrayArgs;
use crate::commands::{noted, run_exit};
use crate::exit::{CliError, ExitCode};
use crate::flags;
use crate::output;
use crate::output::eprint_line;
use crate::supervise::{self, Ended, ServerSpec, Supervised};

/// The line every engine prints once it serves.
const READY_LINE: &str = "Application startup complete";
/// How often the boot log and `/health` are read while the server starts. Shorter than
/// the Python tool's 2 s: a simulated server is ready in a fraction of a second.
const READY_POLL: Duration = Duration::from_millis(250);
const HEALTH_TIMEOUT: Duration = Duration::from_secs(5);
/// SIGTERM to every process of the server, then this long before SIGKILL; then this long
/// for the kill.
const STOP_TIMES: StopTimes = StopTimes {
    grace: Duration::from_secs(30),
    kill_wait: Duration::from_secs(10),
    poll: supervise::STOP_POLL,
};
/// After SIGINT or SIGTERM the clean stop (after snapshot, checks, report) may take this
/// long; then the server is stopped at once and xray exits.
const CLEAN_STOP_LIMIT: Duration = Duration::from_secs(60);
/// After SIGINT or SIGTERM the load command gets this long to end before SIGKILL.
const LOAD_STOP_GRACE: Duration = Duration::from_secs(5);

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

/// What the signal thread and the main thread share.
#[derive(Debug, Default)]
struct Shared {
    /// 1 once SIGINT or SIGTERM arrived.
    signal: AtomicI32,
    server: Mutex<Option<ServerProcess>>,
    load_pid: Mutex<Option<u32>>,
}

impl Shared {
    fn interrupted(&self) -> bool {
        self.signal.load(Ordering::SeqCst) != 0
    }
}

/// The started server, under its supervisor.
#[derive(Debug)]
struct ServerProcess {
    server: Supervised,
}

/// Stops the server's processes when dropped, whatever path leads there.
#[derive(Debug)]
struct ServerGuard(Arc<Shared>);

impl Drop for ServerGuard {
    fn drop(&mut self) {
        stop_server(&self.0);
    }
}

/// How a stop ended: the line to print, the processes still alive after it and the
/// server's cgroup, if it had one (the clear-card wait counts what is alive in either).
#[derive(Debug)]
struct Stopped {
    text: String,
    survivors: Vec<Member>,
    cgroup: Option<PathBuf>,
}

/// SIGTERM to every process of the server's tree, a grace period, SIGKILL to what is
/// left. Returns how it ended, or `None` when there was no server to stop (already
/// stopped). Safe to call twice.
fn stop_server(shared: &Shared) -> Option<Stopped> {
    let mut process = lock(&shared.server).take()?;
    let server = &mut process.server;
    // The first process may have ended already; its tree may not have.
    let ended = match server.ended() {
        Some(Ended::Code(code)) => format!("the server had exited with code {code}; "),
        Some(Ended::Signal(_)) => "the server had been killed by a signal; ".to_owned(),
        Some(Ended::SupervisorGone) => "the server's supervisor had ended; ".to_owned(),
        None => String::new(),
    };
    let stop = server.stop(STOP_TIMES);
    let how = server.containment().describe();
    let cgroup = match server.containment() {
        supervise::Containment::Cgroup(dir) => Some(dir.clone()),
        supervise::Containment::Subreaper(_) => None,
    };
    let text = if let Some(why) = &stop.unreadable {
        format!("cannot see the server's processes to stop them ({why})")
    } else if !stop.survivors.is_empty() {
        let pids: Vec<String> = stop.survivors.iter().map(|m| m.pid.to_string()).collect();
        format!(
            "{} process{} of the server still alive {} s after SIGKILL: pid {} ({how})",
            pids.len(),
            if pids.len() == 1 { "" } else { "es" },
            STOP_TIMES.kill_wait.as_secs(),
            pids.join(", ")
        )
    } else if stop.killed > 0 {
        format!(
            "the server's processes did not stop within {} s of SIGTERM; {} killed ({how})",
            STOP_TIMES.grace.as_secs(),
            count_of(stop.killed)
        )
    } else if stop.terminated > 0 {
        format!(
            "the server's processes stopped on SIGTERM: {} ({how})",
            count_of(stop.terminated)
        )
    } else {
        format!("no process of the server was left to stop ({how})")
    };
    Some(Stopped {
        text: format!("{ended}{text}"),
        survivors: stop.survivors,
        cgroup,
    })
}

/// `1 process`, `3 processes`.
fn count_of(n: usize) -> String {
    format!("{n} process{}", if n == 1 { "" } else { "es" })
}

/// Waits for SIGINT and SIGTERM on a thread of its own, through inferlint-live's
/// handlers. Not `sigwait` with the signals blocked: a blocked mask is inherited by the
/// server and the load command, which then could not be stopped with SIGTERM. A handler,
/// unlike a mask, is reset to the default when a child starts its program. Returns once
/// the handlers are installed.
fn catch_signals(shared: &Arc<Shared>) -> Result<(), CliError> {
    let cannot = |e: String| CliError::usage(format!("cannot catch Ctrl-C: {e}"));
    let (installed, ready) = std::sync::mpsc::channel();
    let shared = Arc::clone(shared);
    thread::Builder::new()
        .name("xray-signals".into())
        .spawn(move || {
            let runtime = match inferlint_live::runtime() {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = installed.send(Err(e.to_string()));
                    return;
                }
            };
            let mut first = true;
            loop {
                let signal = {
                    let _inside = runtime.enter();
                    inferlint_live::interrupted()
                };
                if first {
                    let _ = installed.send(Ok(()));
                    first = false;
                }
                runtime.block_on(signal);
                on_signal(&shared);
            }
        })
        .map_err(|e| cannot(e.to_string()))?;
    ready
        .recv()
        .map_err(|e| cannot(e.to_string()))?
        .map_err(cannot)
}

fn on_signal(shared: &Arc<Shared>) {
    let first = shared
        .signal
        .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    if !first {
        // A second Ctrl-C: no more waiting.
        eprint_line!("inferlint: stopping the server now");
        stop_server(shared);
        std::process::exit(ExitCode::Interrupted.code());
    }
    eprint_line!("inferlint: interrupted; ending the load, saving the run, stopping the server (again to stop at once)");
    if let Some(pid) = *lock(&shared.load_pid) {
        terminate(pid);
    }
    let shared = Arc::clone(shared);
    let _ = thread::Builder::new()
        .name("xray-deadline".into())
        .spawn(move || {
            thread::sleep(CLEAN_STOP_LIMIT);
            // Once the server is being stopped or gone, the clean stop is past the part
            // that matters (the clear-card wait may take longer): let it finish.
            if lock(&shared.server).is_none() {
                return;
            }
            eprint_line!(
                "inferlint: no clean stop after {} s; stopping the server now",
                CLEAN_STOP_LIMIT.as_secs()
            );
            stop_server(&shared);
            std::process::exit(ExitCode::Interrupted.code());
        });
}

/// SIGTERM to one process (the load command).
#[cfg(unix)]
fn terminate(pid: u32) {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    if let Ok(pid) = i32::try_from(pid) {
        if pid > 1 {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
    }
}

#[cfg(not(unix))]
fn terminate(_pid: u32) {}

/// A stop request for the recorder thread: a future that resolves once `stop` is called.
#[derive(Debug, Default)]
struct StopFlag {
    state: Mutex<(bool, Option<Waker>)>,
}

impl StopFlag {
    fn stop(&self) {
        let mut state = lock(&self.state);
        state.0 = true;
        if let Some(waker) = state.1.take() {
            waker.wake();
        }
    }

    fn stopped(self: Arc<Self>) -> impl std::future::Future<Output = ()> {
        std::future::poll_fn(move |cx| {
            let mut state = lock(&self.state);
            if state.0 {
                Poll::Ready(())
            } else {
                state.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        })
    }
}

/// Prints a line; a closed stdout must not stop xray before the server is stopped.
fn say(text: &str) {
    let _ = output::print(&format!("{text}\n"));
}

fn say_results(results: &[CheckResult]) {
    let _ = output::print(&output::results_text(results, false));
}

/// The folder name when `-o` is not given: `xray-YYYYmmdd-HHMMSS` (UTC).
fn default_folder() -> PathBuf {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    PathBuf::from(folder_name(secs))
}

/// `xray-YYYYmmdd-HHMMSS` for seconds since 1970 (UTC).
pub(crate) fn folder_name(unix_secs: u64) -> String {
    let days = i64::try_from(unix_secs / 86_400).unwrap_or(0);
    let rest = unix_secs % 86_400;
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "xray-{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The socket addresses of a base URL's host and port.
fn socket_addrs(base: &BaseUrl) -> Vec<SocketAddr> {
    let text = base.as_str();
    let (default_port, rest) = match text.split_once("://") {
        Some(("https", rest)) => (443, rest),
        Some((_, rest)) => (80, rest),
        None => (80, text),
    };
    let authority = rest.split('/').next().unwrap_or(rest);
    let with_port = if authority.ends_with(']') || !authority.contains(':') {
        format!("{authority}:{default_port}")
    } else {
        authority.to_owned()
    };
    with_port
        .to_socket_addrs()
        .map(Iterator::collect)
        .unwrap_or_default()
}

/// Whether anything accepts a TCP connection at the address.
fn something_answers(addrs: &[SocketAddr]) -> bool {
    addrs
        .iter()
        .any(|a| TcpStream::connect_timeout(a, Duration::from_secs(1)).is_ok())
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
    /// The version the server reports (`/version`, `/get_server_info`): SGLang prints
    /// none in its log.
    server_version: Option<String>,
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
    let base = BaseUrl::parse(&url).map_err(CliError::usage)?;
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
        server_version: None,
    };
    // The guard exists before the server does: whatever happens below, including an
    // error returned with `?`, its drop stops the server.
    let guard = ServerGuard(Arc::clone(&shared));
    let outcome = xray.stages(choice, serve_words.as_deref());
    let ended = xray.finish(choice, outcome);
    drop(guard);
    ended
}

impl Xray<'_> {
    fn stage(&self, text: &str) {
        if self.terminal {
            say(&format!(
                "== {text}  ({:.1} s)",
                self.started.elapsed().as_secs_f64()
            ));
        } else {
            say(&format!("== {text}"));
        }
    }

    fn record(&mut self, result: CheckResult) {
        say_results(std::slice::from_ref(&result));
        self.results.push(result);
    }

    fn check_interrupt(&self) -> Result<(), Stop> {
        if self.shared.interrupted() {
            Err(Stop::Interrupted)
        } else {
            Ok(())
        }
    }

    fn boot_log_path(&self) -> Option<PathBuf> {
        if self.args.serve.is_some() {
            Some(self.dir.join("boot.log"))
        } else {
            self.args.boot_log.clone()
        }
    }

    /// Everything up to and including the load. Returns why it stopped early, if it did.
    fn stages(
        &mut self,
        choice: &mut EngineChoice,
        serve_words: Option<&[String]>,
    ) -> Result<(), Stop> {
        let recorder =
            Recorder::new().map_err(|e| problem(format!("cannot start the HTTP client: {e}")))?;
        let health =
            health_checker().map_err(|e| problem(format!("cannot start the HTTP client: {e}")))?;
        if let Some(words) = serve_words {
            self.start_server(words, &health)?;
        } else {
            if !health(&self.base) {
                return Err(problem(format!(
                    "no server answers at {}",
                    self.base.join("/health")
                )));
            }
            self.record(owner::not_started(&self.base.to_string()));
        }
        self.check_interrupt()?;
        self.identify(&recorder)?;
        self.boot_stage(choice)?;
        self.check_interrupt()?;
        if !self.args.no_probe {
            self.stage("probe: one request, then 8 at once");
            let report = recorder.probe(&self.base, &ProbeOptions::default());
            self.record(probe::verdict(&report));
            self.check_interrupt()?;
            if let Some(message) = self.server_exited() {
                return Err(problem(format!("{message} during the probe")));
            }
        } else {
            self.record(CheckResult::not_checked(
                Tripwire::T7,
                "needs the probe, which --no-probe left out",
                &["probe"],
            ));
        }
        self.snapshot(&recorder, "before.snapshot.json")?;
        self.load()
    }

    fn start_server(
        &mut self,
        words: &[String],
        health: &dyn Fn(&BaseUrl) -> bool,
    ) -> Result<(), Stop> {
        if !cfg!(target_os = "linux") {
            return Err(problem(
                "--serve needs Linux (or WSL): stopping the server reads /proc",
            ));
        }
        let addrs = socket_addrs(&self.base);
        if something_answers(&addrs) {
            self.record(owner::address_taken(&self.base.to_string()));
            return Err(problem(
                "the server's address is taken; xray started nothing and stopped nothing",
            ));
        }
        self.gpu_gate()?;
        self.check_interrupt()?;
        let boot_path = self.dir.join("boot.log");
        self.stage(&format!(
            "start the server (output in {})",
            shown(&boot_path)
        ));
        let program = loadcmd::program(words).ok_or_else(|| problem("--serve names no command"))?;
        let log = create_new(&boot_path).map_err(|e| problem(e.to_string()))?;
        // Under a supervisor, in a process group of its own (Ctrl-C in the terminal does
        // not reach it) and a cgroup where the machine allows: the stop reaches every
        // process it starts, and the server does not outlive xray.
        let started = Supervised::start(ServerSpec {
            program: &program.program,
            args: &program.args,
            env: &program.env,
            log,
            times: STOP_TIMES,
        });
        let server = match started {
            Ok(server) => server,
            Err(e) => {
                let cause = format!("{}: {}", program.program, spawn_error(&e));
                self.start_failure = Some(cause.clone());
                self.boot_checked = true;
                self.record(inferlint_core::checks::boot::start_failure(&cause));
                return Err(problem(format!("cannot start {cause}")));
            }
        };
        let (pid, root) = (server.pid(), server.root_pid());
        *lock(&self.shared.server) = Some(ServerProcess { server });
        self.wait_ready(&boot_path, health)?;
        say(&format!(
            "server ready after {:.1} s (pid {pid})",
            self.started.elapsed().as_secs_f64()
        ));
        self.check_owner(root, pid, &addrs)
    }

    /// T2 before the start, or why it does not apply.
    fn gpu_gate(&mut self) -> Result<(), Stop> {
        self.stage("is the GPU free?");
        if self.args.no_gpu {
            self.record(CheckResult::new(
                Tripwire::T2,
                Status::NotApplicable,
                "--no-gpu: the server uses no NVIDIA GPU on this machine, so there is no card to check",
            ));
            return Ok(());
        }
        let result = free_card().map_err(|e| problem(e.message))?;
        let status = result.status;
        self.record(result);
        match status {
            Status::Pass => Ok(()),
            // A gate that cannot tell must not let a server start: a card still held by
            // an earlier server would make this run measure less memory than it should.
            Status::Unknown => Err(Stop::Problem(
                "cannot tell whether the GPU is free; start no server on it (--no-gpu if the server uses none)".to_owned(),
                ExitCode::Undecided,
            )),
            _ => Err(problem("the GPU is not free; start no server on it")),
        }
    }

    fn wait_ready(
        &mut self,
        boot_path: &Path,
        health: &dyn Fn(&BaseUrl) -> bool,
    ) -> Result<(), Stop> {
        let begun = Instant::now();
        let limit = Duration::from_secs_f64(self.args.ready_timeout);
        let mut logged_ready = false;
        loop {
            self.check_interrupt()?;
            if let Some(message) = self.server_exited() {
                let cause = format!("{message} before it was ready");
                self.start_failure = Some(cause.clone());
                return Err(problem(cause));
            }
            if !logged_ready {
                logged_ready = fs::read(boot_path)
                    .map(|b| String::from_utf8_lossy(&b).contains(READY_LINE))
                    .unwrap_or(false);
            }
            if logged_ready && health(&self.base) {
                return Ok(());
            }
            if begun.elapsed() >= limit {
                return Err(problem(format!(
                    "the server was not ready after {} s",
                    self.args.ready_timeout
                )));
            }
            thread::sleep(READY_POLL);
        }
    }

    /// T13 after the start: the listening socket belongs to a process of the started
    /// server's tree (everything below its supervisor, `root`).
    fn check_owner(&mut self, root: u32, pid: u32, addrs: &[SocketAddr]) -> Result<(), Stop> {
        let result = owner_result(&self.base, root, pid, addrs);
        let failed = result.status == Status::Fail;
        self.record(result);
        if failed {
            return Err(problem(
                "the server that answers is not the one xray started",
            ));
        }
        Ok(())
    }

    /// `the server exited with code N` once the started server has ended.
    fn server_exited(&self) -> Option<String> {
        let ended = lock(&self.shared.server).as_ref()?.server.ended()?;
        Some(match ended {
            // The shell's and env's codes for a program that could not be run (the
            // trampoline that starts the server answers the same way).
            Ended::Code(127) => "the server exited with code 127 (command not found)".to_owned(),
            Ended::Code(126) => "the server exited with code 126 (not executable)".to_owned(),
            Ended::Code(code) => format!("the server exited with code {code}"),
            Ended::Signal(_) => "the server was killed by a signal".to_owned(),
            Ended::SupervisorGone => "the server's supervisor ended".to_owned(),
        })
    }

    /// The first scrape: the server's metrics, and the engine they belong to.
    fn identify(&mut self, recorder: &Recorder) -> Result<(), Stop> {
        let mut scraper = recorder.scraper(self.base.clone());
        let (_, engine) = recorder
            .first_scrape(&mut scraper)
            .map_err(|e| problem(e.message(self.engine)))?;
        match self.engine {
            Some(expected) if expected != engine => {
                return Err(Stop::Problem(
                    format!(
                        "the engine named is {}, but the server at {} is {}'s",
                        expected.name(),
                        self.base,
                        engine.name()
                    ),
                    ExitCode::Undecided,
                ))
            }
            Some(_) => {}
            None => say(&format!("== engine: {} (from its metrics)", engine.name())),
        }
        self.engine = Some(engine);
        Ok(())
    }

    fn boot_stage(&mut self, choice: &mut EngineChoice) -> Result<(), Stop> {
        let Some(path) = self.boot_log_path() else {
            return Ok(());
        };
        self.stage("boot log");
        self.boot_checked = true;
        let mut facts = match noted(choice, |c| load::load_boot(c, &path)) {
            Ok(facts) => facts,
            // A server that never came up can leave an empty log, or one with a line of
            // its shell's; the cause is then what xray saw, not what the log says.
            Err(e) => match self.start_failure.clone() {
                Some(cause) => {
                    let last = last_line(&path);
                    let mut result = inferlint_core::checks::boot::start_failure(&cause);
                    if let Some(line) = last {
                        result = result.with("line", line);
                    }
                    self.record(result);
                    return Ok(());
                }
                None => return Err(Stop::Problem(e.message, e.code)),
            },
        };
        if facts.version.is_none() && self.start_failure.is_none() {
            self.server_version = server_version(&self.base);
            facts.version.clone_from(&self.server_version);
            noted(choice, |c| {
                c.note_version(&facts);
                Ok(())
            })
            .map_err(|e| Stop::Problem(e.message, e.code))?;
        }
        let mut results = run::check_logs(&[(String::new(), facts)]);
        // A server that exited before it was ready failed, whatever its log shows: a
        // log that names no cause must not pass T12.
        if let Some(cause) = &self.start_failure {
            for r in &mut results {
                if r.tripwire == Tripwire::T12 && r.status == Status::Pass {
                    *r = inferlint_core::checks::boot::start_failure(cause);
                    if let Some(line) = last_line(&path) {
                        *r = r.clone().with("line", line);
                    }
                }
            }
        }
        for r in results {
            self.record(r);
        }
        Ok(())
    }

    fn snapshot(&mut self, recorder: &Recorder, name: &str) -> Result<(), Stop> {
        let path = self.dir.join(name);
        let mut scraper = recorder.scraper(self.base.clone());
        let (scrape, _) = recorder
            .first_scrape(&mut scraper)
            .map_err(|e| problem(format!("cannot take {name}: {}", e.message(self.engine))))?;
        inferlint_engines::output::write_file(
            &path,
            files::snapshot_json(&scrape.snapshot).as_bytes(),
            &Rule::NEW,
        )
        .map_err(|e| problem(e.to_string()))?;
        Ok(())
    }

    /// The recorder in the background, the load in the foreground, then the after
    /// snapshot whatever the load did.
    fn load(&mut self) -> Result<(), Stop> {
        let engine = self.engine.unwrap_or(Engine::DEFAULT);
        let stop = Arc::new(StopFlag::default());
        let live = Arc::new(Mutex::new(LiveLine::new()));
        let recorder = start_watch(
            self.base.clone(),
            engine,
            Duration::from_secs_f64(self.args.interval),
            self.dir.join("run.series.jsonl"),
            Arc::clone(&stop),
            Arc::clone(&live),
        );
        self.stage(&format!("load: {}", self.load_plan.words.join(" ")));
        self.load_started = Some(SystemTime::now());
        let load = run_load(
            &self.load_plan.words,
            &self.dir.join("load.log"),
            &self.shared,
            &live,
        );
        lock(&live).clear();
        let after = Recorder::new()
            .map_err(|e| problem(format!("cannot start the HTTP client: {e}")))
            .and_then(|r| self.snapshot(&r, "after.snapshot.json"));
        stop.stop();
        match recorder.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprint_line!("inferlint: the recording of {} failed: {e}", self.base),
            Err(_) => eprint_line!("inferlint: the recording of {} failed", self.base),
        }
        self.load_failure = match load {
            Ok(0) => None,
            Ok(code) => Some(format!("the load command exited with code {code}")),
            Err(e) => Some(format!("the load command failed: {e}")),
        };
        if let Some(failure) = &self.load_failure {
            say(failure);
        }
        self.check_interrupt()?;
        after
    }

    /// The result file the load wrote, if any: only one written since the load started,
    /// so that a file an earlier run left is never read as this run's.
    fn bench_path(&self) -> Option<PathBuf> {
        // Two seconds' grace: some file systems keep modification times in whole (or
        // even two) seconds.
        let started = self.load_started?;
        let since = started
            .checked_sub(Duration::from_secs(2))
            .unwrap_or(started);
        let written_by_this_load = |file: &PathBuf| {
            let fresh = fs::metadata(file)
                .and_then(|m| m.modified())
                .is_ok_and(|modified| modified >= since);
            if file.is_file() && !fresh {
                eprint_line!(
                    "note: {} is older than this run's load, so it is not read as its result",
                    shown(file)
                );
            }
            fresh
        };
        if let Some(file) = &self.args.bench_result {
            return Some(file.clone()).filter(written_by_this_load);
        }
        if let Some(file) = &self.load_plan.result_file {
            return Some(file.clone()).filter(written_by_this_load);
        }
        if let Some(dir) = &self.load_plan.result_dir_newest {
            return fs::read_dir(dir)
                .ok()?
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
                .filter(|(modified, _)| *modified >= since)
                .max()
                .map(|(_, path)| path);
        }
        // Another load tool writes into its own folder, which may hold earlier runs: the
        // result written during this load. The run folder itself is searched anyway.
        self.load_plan
            .result_dirs
            .iter()
            .filter(|dir| dir.is_dir())
            .find_map(|dir| {
                loadtools::find_result_written_since(dir, since)
                    .ok()
                    .flatten()
            })
    }

    /// The checks, the stop, the report and results.json: on every path.
    fn finish(
        &mut self,
        choice: &mut EngineChoice,
        outcome: Result<(), Stop>,
    ) -> Result<ExitCode, CliError> {
        let mut stop_code = None;
        match &outcome {
            Ok(()) => {}
            Err(Stop::Problem(message, code)) => {
                say(&format!("stopped early: {message}"));
                stop_code = Some(*code);
            }
            Err(Stop::Interrupted) => say("stopped early: interrupted"),
        }
        // A server that exited or timed out before it was ready still gets its boot log
        // checked, so that the failure is classified.
        if !self.boot_checked && self.boot_log_path().is_some_and(|p| p.is_file()) {
            if let Err(Stop::Problem(message, _)) = self.boot_stage(choice) {
                eprint_line!("inferlint: {message}");
            }
        }
        let assembled = self.assemble(choice);
        let checks: Vec<CheckResult> = match &assembled {
            Ok(Some((_, results, _))) => {
                let mut checks = ordered_run_checks(results);
                // What the run could not check and xray has not said yet (the boot
                // checks of an attached server given no --boot-log).
                let said: Vec<Tripwire> = self
                    .results
                    .iter()
                    .chain(&checks)
                    .map(|r| r.tripwire)
                    .collect();
                checks.extend(
                    results
                        .iter()
                        .filter(|r| r.status == Status::NotChecked && !said.contains(&r.tripwire))
                        .cloned(),
                );
                checks
            }
            _ => Vec::new(),
        };
        if let Ok(Some((run, _, _))) = &assembled {
            match &run.bench {
                Some((name, account)) => say(&format!(
                    "load tool: {}, its result in {name}",
                    account.tool_label()
                )),
                None if self.load_plan.tool.is_some() => say(&format!(
                    "load tool: {}, but no result of it was found",
                    self.load_plan.tool.map_or("", |t| t.name())
                )),
                None => {}
            }
        }
        if !checks.is_empty() {
            self.stage("checks");
            for r in checks {
                self.record(r);
            }
        }
        if lock(&self.shared.server).is_some() {
            self.stage("stop the server");
            let (survivors, cgroup) = match stop_server(&self.shared) {
                Some(stopped) => {
                    say(&stopped.text);
                    (stopped.survivors, stopped.cgroup)
                }
                None => (Vec::new(), None),
            };
            if !self.args.no_gpu {
                match clear_card_after_stop(&survivors, cgroup.as_deref()) {
                    Ok(r) => self.record(r),
                    Err(e) => eprint_line!("inferlint: {}", e.message),
                }
            }
        }
        let mut report_path = None;
        if let Ok(Some((run, run_results, paths))) = &assembled {
            let limits = insights::what_limited(run, run_results);
            if !limits.is_empty() {
                self.stage("what limited this run");
                for insight in &limits {
                    say(&format!("- {}. {}", insight.title, insight.text));
                }
            }
            let mut shown_results = run_results.clone();
            for tripwire in [Tripwire::T13, Tripwire::T7, Tripwire::T2] {
                if let Some(last) = self.results.iter().rev().find(|r| r.tripwire == tripwire) {
                    shown_results.push(last.clone());
                }
            }
            let destination = crate::report_html::Destination::Asked(self.dir.join("report.html"));
            let inputs = crate::report_html::Inputs {
                run,
                results: &shown_results,
                insights: &limits,
                series: paths.series.as_deref(),
                made_from: crate::report_html::made_from(
                    &paths.boot_logs,
                    [
                        paths.before.as_deref(),
                        paths.after.as_deref(),
                        paths.series.as_deref(),
                        paths.bench.as_deref(),
                    ],
                ),
                title: self.args.title.as_deref(),
            };
            let reads = paths.inputs();
            let overwrite = crate::report_html::Overwrite {
                force: false,
                reads: &reads,
            };
            match crate::report_html::write(&destination, &inputs, &overwrite) {
                Ok(path) => report_path = path,
                Err(e) => eprint_line!("inferlint: {}", e.message),
            }
        }
        if let Err(e) = &assembled {
            eprint_line!("inferlint: cannot check the run folder: {}", e.message);
        }
        let results_path = self.dir.join("results.json");
        let results_json = output::json_safe(contract::results_json(&self.results));
        if let Err(e) = inferlint_engines::output::write_file(
            &results_path,
            results_json.as_bytes(),
            &Rule::NEW,
        ) {
            eprint_line!("inferlint: {e}");
        }
        say(&count_line(&self.results));
        if let Some(path) = report_path {
            say(&format!("report: {}", shown(&path)));
        }
        say(&format!("files:  {}", shown(&self.dir)));
        let code = if self.shared.interrupted() {
            ExitCode::Interrupted
        } else if let Some(code) = stop_code {
            code
        } else {
            match &assembled {
                Ok(Some((run, _, _))) => run_exit(run, &self.results, self.strict),
                // A failed load with no run to check is still not a benchmark.
                _ if self.load_failure.is_some() => {
                    match ExitCode::for_results(&self.results, self.strict) {
                        ExitCode::Passed => ExitCode::Undecided,
                        code => code,
                    }
                }
                _ => ExitCode::for_results(&self.results, self.strict),
            }
        };
        Ok(code)
    }

    /// The run as `report DIR` reads it from the folder; `None` when the folder holds no
    /// boot log and not both snapshots.
    fn assemble(
        &self,
        choice: &mut EngineChoice,
    ) -> Result<Option<(run::Run, Vec<CheckResult>, files::RunFiles)>, CliError> {
        let mut found = files::discover_run(&self.dir)?;
        if let Some(path) = &self.args.boot_log {
            if self.args.serve.is_none() {
                found.boot_logs = vec![path.clone()];
            }
        }
        if let Some(bench) = self.bench_path() {
            found.bench = Some(bench);
        }
        if found.boot_logs.is_empty() && (found.before.is_none() || found.after.is_none()) {
            return Ok(None);
        }
        let requested = self.args.requested.or(self.load_plan.max_concurrency);
        let mut run = match noted(choice, |c| {
            load::load_run(c, &found, requested, self.engine)
        }) {
            Ok(run) => run,
            // A server that never came up can leave a log that is no server log; T12
            // already says why, and there is no run to check.
            Err(_) if self.start_failure.is_some() => return Ok(None),
            Err(e) => return Err(e),
        };
        run.load_failure.clone_from(&self.load_failure);
        if let Some((_, facts)) = run.boots.last_mut() {
            if facts.version.is_none() {
                facts.version.clone_from(&self.server_version);
            }
        }
        let results = run::check_run(&run);
        Ok(Some((run, results, found)))
    }
}

/// Why a program could not be started, in a shell's words where there is one.
fn spawn_error(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "command not found".to_owned(),
        io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => e.to_string(),
    }
}

/// The last non-empty line of a file, for a log that names no cause. Only its last
/// 64 KiB are read: a server's log can be gigabytes.
fn last_line(path: &Path) -> Option<String> {
    use std::io::{Seek, SeekFrom};
    const TAIL: u64 = 64 << 10;
    let (mut file, len) = files::open_input(path).ok()?;
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL))).ok()?;
    let mut bytes = Vec::new();
    file.take(TAIL).read_to_end(&mut bytes).ok()?;
    String::from_utf8_lossy(&bytes)
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .map(str::to_owned)
}

/// The run checks xray prints under `== checks`, in the tutorial's order: T1, T10, T14,
/// T9, T8, then the load tool's account against the server's (T15, T18, T20); the boot
/// checks were printed with the boot log.
fn ordered_run_checks(results: &[CheckResult]) -> Vec<CheckResult> {
    let mut checks: Vec<CheckResult> = results
        .iter()
        .filter(|r| matches!(r.tripwire.number(), 1 | 10 | 14 | 9 | 8))
        .cloned()
        .collect();
    for tripwire in [Tripwire::T15, Tripwire::T18, Tripwire::T20] {
        checks.extend(results.iter().filter(|r| r.tripwire == tripwire).cloned());
    }
    checks
}

#[cfg(target_os = "linux")]
fn owner_result(base: &BaseUrl, root: u32, pid: u32, addrs: &[SocketAddr]) -> CheckResult {
    use inferlint_gpu::listen::{descendants, port_owner, PortOwner};
    let base_text = base.to_string();
    let Some(port) = addrs.first().map(SocketAddr::port) else {
        return owner::cannot_tell(&base_text, "its address does not resolve");
    };
    let table = match inferlint_gpu::procs::read_process_table() {
        Ok(table) => table,
        Err(e) => return owner::cannot_tell(&base_text, &e.to_string()),
    };
    let ours = descendants(&table, root);
    let listener = match port_owner(port, &ours) {
        Some(PortOwner::Ours(owner)) => owner::Listener::Ours(owner),
        Some(PortOwner::Other) => owner::Listener::Other,
        Some(PortOwner::NotListening) => owner::Listener::Nobody,
        None => owner::Listener::Unreadable,
    };
    owner::after_start(&base_text, pid, port, listener)
}

#[cfg(not(target_os = "linux"))]
fn owner_result(base: &BaseUrl, _root: u32, _pid: u32, _addrs: &[SocketAddr]) -> CheckResult {
    owner::cannot_tell(&base.to_string(), "that needs Linux's /proc")
}

/// A blocking `GET /health` (200 or not) on a small runtime of its own.
fn health_checker() -> io::Result<impl Fn(&BaseUrl) -> bool> {
    let runtime = inferlint_live::runtime()?;
    let client = {
        let _inside = runtime.enter();
        HttpClient::new()
    };
    Ok(move |base: &BaseUrl| {
        runtime
            .block_on(client.get(&base.join("/health"), HEALTH_TIMEOUT))
            .is_ok_and(|answer| answer.status.as_u16() == 200)
    })
}

/// The version a server reports about itself: `/version`, else `/get_server_info`, each a
/// JSON object with a `version` string. `None` when neither answers so.
fn server_version(base: &BaseUrl) -> Option<String> {
    let runtime = inferlint_live::runtime().ok()?;
    let client = {
        let _inside = runtime.enter();
        HttpClient::new()
    };
    ["/version", "/get_server_info"].iter().find_map(|path| {
        let answer = runtime
            .block_on(client.get(&base.join(path), HEALTH_TIMEOUT))
            .ok()?;
        if answer.status.as_u16() != 200 {
            return None;
        }
        let value: serde_json::Value = serde_json::from_slice(answer.body.as_ref()).ok()?;
        value
            .get("version")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    })
}

/// T2 before a server starts: gpu-inspect's free-card check (10 s at most).
fn free_card() -> Result<CheckResult, CliError> {
    let mut machine = crate::gpu::machine("xray's free-card check")?;
    let mut shown = |text: &str| {
        if !text.is_empty() {
            let _ = output::print(text);
        }
    };
    Ok(inferlint_gpu::inspect::gpu_inspect(
        &mut machine,
        inferlint_gpu::ClearRule::gate(),
        &mut shown,
    ))
}

/// T2 after the server is stopped: wait for a clear card as teardown does, counting as
/// alive servers, besides every process that looks like one, whatever the stop left of
/// the server's tree (a daemon need not look like a server to hold the card).
fn clear_card_after_stop(
    survivors: &[Member],
    cgroup: Option<&Path>,
) -> Result<CheckResult, CliError> {
    let mut machine = crate::gpu::machine("xray's clear-card wait")?;
    Ok(match machine.processes.as_mut() {
        Err(e) => CheckResult::new(Tripwire::T2, Status::Unknown, e.to_string()),
        Ok(processes) => {
            inferlint_gpu::wait::wait_for_clear_card_with(
                inferlint_gpu::clear::Asker::Teardown,
                inferlint_gpu::ClearRule::teardown(),
                processes.as_mut(),
                machine.gpus.as_mut(),
                machine.clock.as_mut(),
                &|table| left_of_tree(table, survivors, cgroup),
            )
            .result
        }
    })
}

/// What is alive of the server's tree after its stop, in one look: the survivors the
/// stop named and everything they started since, and every process still in the tree's
/// cgroup (a stop that gave up leaves the cgroup in place, and a daemon a survivor starts
/// is listed there wherever it is re-parented).
fn left_of_tree(
    table: &inferlint_gpu::procs::ProcessTable,
    survivors: &[Member],
    cgroup: Option<&Path>,
) -> Vec<u32> {
    let mut alive: std::collections::BTreeSet<u32> =
        inferlint_gpu::tree::still_alive(table, survivors)
            .into_iter()
            .collect();
    #[cfg(target_os = "linux")]
    if let Some(dir) = cgroup {
        let leftover = inferlint_gpu::tree::Contained {
            anchor: None,
            cgroup: Some(inferlint_gpu::cgroup::OwnCgroup::at(dir.to_path_buf())),
        };
        let members = inferlint_gpu::tree::members(table, &leftover, std::process::id());
        alive.extend(members.iter().map(|m| m.pid));
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cgroup;
    alive.into_iter().collect()
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

/// Records the server into `path` on its own thread until `stop` is called.
fn start_watch(
    base: BaseUrl,
    engine: Engine,
    interval: Duration,
    path: PathBuf,
    stop: Arc<StopFlag>,
    live: Arc<Mutex<LiveLine>>,
) -> JoinHandle<Result<(), String>> {
    thread::spawn(move || {
        let runtime = inferlint_live::runtime().map_err(|e| e.to_string())?;
        let client = {
            let _inside = runtime.enter();
            HttpClient::new()
        };
        let mut scraper = Scraper::new(client, base);
        let mut file = inferlint_engines::output::create_stream(&path, &Rule::NEW)
            .map_err(|e| e.to_string())?;
        let options = WatchOptions {
            interval,
            duration: None,
        };
        runtime.block_on(async {
            let (first, _) = scrape::first_scrape(&mut scraper)
                .await
                .map_err(|e| e.message(Some(engine)))?;
            watch::watch(
                &mut scraper,
                first,
                engine,
                &options,
                &mut file,
                stop.stopped(),
                |_, progress| lock(&live).progress = Some(progress.clone()),
            )
            .await
            .map(|_| ())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
        })?;
        file.sync_all()
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    })
}

/// The live status line under the load's own output, on a terminal (stderr): the
/// recorder's latest reading. It is drawn only where the load's output ends a line, and
/// cleared before the load writes again, so the two never mix on one line.
#[derive(Debug)]
struct LiveLine {
    terminal: bool,
    shown: bool,
    at_line_start: bool,
    progress: Option<watch::Progress>,
}

impl LiveLine {
    fn new() -> LiveLine {
        LiveLine {
            terminal: io::stderr().is_terminal(),
            shown: false,
            at_line_start: true,
            progress: None,
        }
    }

    fn clear(&mut self) {
        if self.shown {
            let mut err = io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
            self.shown = false;
        }
    }

    fn draw(&mut self) {
        if !self.terminal || !self.at_line_start {
            return;
        }
        if let Some(progress) = &self.progress {
            let mut err = io::stderr().lock();
            let _ = write!(err, "\r\x1b[K{}", crate::live::status_text(progress));
            let _ = err.flush();
            self.shown = true;
        }
    }
}

/// Copies one output stream of the load to the terminal and to load.log.
fn copy_output(
    mut from: impl Read + Send + 'static,
    log: Arc<Mutex<File>>,
    live: Arc<Mutex<LiveLine>>,
    to_stderr: bool,
) -> JoinHandle<()> {
    thread::spawn(move || {
        let mut buffer = [0u8; 8192];
        loop {
            let n = match from.read(&mut buffer) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let chunk = &buffer[..n];
            // Held while writing, so that the status line is never drawn mid-chunk.
            let mut live = lock(&live);
            live.clear();
            live.at_line_start = chunk.ends_with(b"\n");
            if to_stderr {
                let mut err = io::stderr().lock();
                let _ = err.write_all(chunk).and_then(|()| err.flush());
            } else {
                let mut out = io::stdout().lock();
                let _ = out.write_all(chunk).and_then(|()| out.flush());
            }
            let _ = lock(&log).write_all(chunk);
        }
    })
}

/// Runs the load command, its output shown and saved. Returns its exit code (128 + the
/// signal for a killed one) or why it could not run.
fn run_load(
    words: &[String],
    log_path: &Path,
    shared: &Shared,
    live: &Arc<Mutex<LiveLine>>,
) -> Result<i32, String> {
    let program = loadcmd::program(words).ok_or("no command after --")?;
    let log = create_new(log_path).map_err(|e| e.to_string())?;
    let log = Arc::new(Mutex::new(log));
    // Through the trampoline, so that the load dies with xray.
    let mut command = supervise::tied(&program.program, &program.env)
        .map_err(|e| format!("cannot start {}: {e}", program.program))?;
    command
        .args(&program.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child =
        supervise::spawn(command).map_err(|e| format!("cannot start {}: {e}", program.program))?;
    *lock(&shared.load_pid) = Some(child.id());
    let mut copiers = Vec::new();
    if let Some(out) = child.stdout.take() {
        copiers.push(copy_output(out, Arc::clone(&log), Arc::clone(live), false));
    }
    if let Some(err) = child.stderr.take() {
        copiers.push(copy_output(err, Arc::clone(&log), Arc::clone(live), true));
    }
    let mut interrupted_at: Option<Instant> = None;
    let mut drawn = Instant::now();
    let status = loop {
        if drawn.elapsed() >= Duration::from_millis(500) {
            lock(live).draw();
            drawn = Instant::now();
        }
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) => {}
            Err(e) => break Err(e.to_string()),
        }
        if shared.interrupted() {
            // The signal thread sends SIGTERM to a load it knows of; one started just
            // after the signal gets it here.
            let since = *interrupted_at.get_or_insert_with(|| {
                terminate(child.id());
                Instant::now()
            });
            if since.elapsed() >= LOAD_STOP_GRACE {
                let _ = child.kill();
            }
        }
        thread::sleep(Duration::from_millis(50));
    };
    *lock(&shared.load_pid) = None;
    for copier in copiers {
        let _ = copier.join();
    }
    let status = status?;
    Ok(status.code().unwrap_or_else(|| {
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            128 + status.signal().unwrap_or(0)
        }
        #[cfg(not(unix))]
        {
            1
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_folder_is_named_by_the_utc_time() {
        assert_eq!(folder_name(0), "xray-19700101-000000");
        assert_eq!(folder_name(1_700_000_000), "xray-20231114-221320");
        assert_eq!(folder_name(951_825_600), "xray-20000229-120000");
    }

    #[test]
    fn run_checks_print_in_the_tutorial_order() {
        let results: Vec<CheckResult> = [15, 20, 18, 12, 1, 10, 14, 9, 8]
            .into_iter()
            .filter_map(Tripwire::new)
            .map(|t| CheckResult::new(t, Status::Pass, ""))
            .collect();
        let order: Vec<u8> = ordered_run_checks(&results)
            .iter()
            .map(|r| r.tripwire.number())
            .collect();
        assert_eq!(order, [1, 10, 14, 9, 8, 15, 18, 20]);
    }

    #[test]
    fn a_url_resolves_to_its_host_and_port() {
        let base = BaseUrl::parse("http://127.0.0.1:18000").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            socket_addrs(&base),
            [SocketAddr::from(([127, 0, 0, 1], 18000))]
        );
    }

    /// After a stop that gave up, the clear-card wait counts what is alive in the
    /// tree's cgroup as well as the survivors: a daemon a survivor started, re-parented
    /// to init, is in no survivor's tree but still in the cgroup. A zombie holds nothing.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_process_left_in_the_cgroup_counts_in_the_clear_card_wait() {
        use inferlint_gpu::procs::{ProcessInfo, ProcessTable};
        let process = |pid: u32, ppid: u32, state: char| ProcessInfo {
            pid,
            ppid,
            pgid: pid,
            sid: pid,
            state,
            start_time: u64::from(pid),
            comm: "x".into(),
            argv: vec![format!("p{pid}")],
        };
        // 40 survived the stop; 500 (a daemon, re-parented to init) and 501 (a zombie)
        // are in the cgroup; 600 is a bystander.
        let table = ProcessTable::new([
            process(1, 0, 'S'),
            process(40, 1, 'D'),
            process(500, 1, 'S'),
            process(501, 1, 'Z'),
            process(600, 1, 'S'),
        ]);
        let survivors = [Member {
            pid: 40,
            start_time: 40,
        }];
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("cgroup.procs"), "40\n500\n501\n").unwrap();
        assert_eq!(
            left_of_tree(&table, &survivors, Some(dir.path())),
            [40, 500]
        );
        assert_eq!(left_of_tree(&table, &survivors, None), [40]);
    }
}
