//! Starting the server and the load so that nothing of theirs outlives xray, and the
//! server's whole tree is found and stopped, daemons included.
//!
//! ```text
//! xray ──(lifeline: its stdin)── supervisor ── trampoline ═exec═> server ── workers …
//!  │                            (subreaper,                                └─ setsid daemon
//!  │                             own group)     (parent-death signal, joins the cgroup)
//!  └─(lifeline)── load supervisor ── trampoline ═exec═> load command ── …
//!                 (subreaper,                              └─ (setsid child &)
//!                  xray's group)
//! ```
//!
//! - **The supervisor** is this binary again (`inferlint __supervise …`). It marks itself
//!   a child subreaper, so every orphan of the server's tree (a daemon that called
//!   `setsid` and forked twice) is re-parented to it instead of to init, and the tree
//!   stays the supervisor's descendants. Where the machine allows one, the server also
//!   runs in a cgroup of its own (`inferlint_gpu::cgroup`). xray stops the tree itself
//!   (`inferlint_gpu::tree`: SIGTERM to every member by PID, the grace period, the cgroup
//!   killed whole or SIGKILL by PID). When xray dies without stopping it (`kill -9`, a
//!   crash), the supervisor reads end-of-file on its stdin, the one pipe only xray
//!   holds, and stops the tree by the same rule. Its parent-death signal (SIGTERM,
//!   caught) says the same thing a second way.
//! - **The trampoline** is this binary once more (`inferlint __exec …`): it sets its
//!   parent-death signal (SIGKILL), checks that its parent is still the process that
//!   started it (the parent may have died before the signal was set), joins the cgroup,
//!   and replaces itself with the program (`CommandExt::exec`), which keeps the signal.
//!   So the server dies with its supervisor, and the load command with its own. This is
//!   how a child's first steps run in safe Rust: `CommandExt::pre_exec` needs `unsafe`,
//!   which this workspace forbids.
//! - **The load supervisor** (`inferlint __supervise --load …`) holds the load command's
//!   tree the same way, without a cgroup: a child subreaper in xray's process group
//!   (Ctrl-C in the terminal reaches the load), whose stdout and stderr are the load's
//!   output. When the load's own process exits, what it left running (a detached child,
//!   a helper holding its output) gets [`LOAD_STRAYS_WAIT`] to end, then is stopped by
//!   the tree rule, and the supervisor exits with the load's code; so xray never waits
//!   on the load's output for longer than that bound and the load's stop times.
//! - The parent-death signal fires when the **thread** that started the child ends, not
//!   the process. xray starts its children from one thread kept for that ([`spawn`])
//!   that lives as long as the process; the supervisor starts the server from its main
//!   thread.
//!
//! Nothing here signals a process we did not start or that does not descend from one we
//! started: every signal goes to one PID after its start time is checked again, never to
//! the caller or its ancestors (`inferlint_gpu::tree`).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{mpsc, Arc, Condvar, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use inferlint_gpu::tree::{Member, StopTimes, TreeStop};

/// The hidden first argument of the two internal modes.
pub const SUPERVISE: &str = "__supervise";
pub const EXEC: &str = "__exec";

/// How long a started supervisor may take to say it started the server.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How often the supervisor reaps its children and looks for the end of xray.
const SUPERVISOR_POLL: Duration = Duration::from_millis(100);
/// Between looks at the process table while stopping.
pub const STOP_POLL: Duration = Duration::from_millis(50);
/// Exit codes of the trampoline when the program cannot be run, as shells use them.
const NOT_FOUND: i32 = 127;
const NOT_RUNNABLE: i32 = 126;

/// Runs one of the internal modes when the command line asks for it; `None` for any
/// other command line.
pub fn internal(args: &[OsString]) -> Option<i32> {
    let mode = args.get(1)?.to_str()?;
    if mode != SUPERVISE && mode != EXEC {
        return None;
    }
    let parsed = match InternalArgs::parse(&args[2..]) {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("inferlint: {mode}: {e}");
            return Some(NOT_RUNNABLE);
        }
    };
    #[cfg(target_os = "linux")]
    {
        Some(if mode == SUPERVISE && parsed.load {
            linux::load_supervisor(&parsed)
        } else if mode == SUPERVISE {
            linux::supervisor(&parsed)
        } else {
            linux::trampoline(&parsed)
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = parsed;
        eprintln!("inferlint: {mode} needs Linux");
        Some(NOT_RUNNABLE)
    }
}

/// The options both internal modes take: `--parent PID [--cgroup DIR] [--grace-ms N]
/// [--kill-ms N] [--arg0 WORD] [--env K=V]... -- PROGRAM [ARGS...]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct InternalArgs {
    /// The process that started this one: if another is our parent, it has died.
    parent: u32,
    cgroup: Option<PathBuf>,
    grace_ms: u64,
    kill_ms: u64,
    /// The program's name as the user wrote it (argv[0]); `program` is its path.
    arg0: Option<OsString>,
    env: Vec<(OsString, OsString)>,
    program: OsString,
    args: Vec<OsString>,
    /// The load's supervisor (`--load`): the program's stdout and stderr are the
    /// supervisor's own, nothing is reported, and the supervisor exits with the
    /// program's code once what the program left running is stopped.
    load: bool,
}

impl InternalArgs {
    fn parse(words: &[OsString]) -> Result<InternalArgs, String> {
        let mut parsed = InternalArgs::default();
        let mut i = 0;
        let value = |i: usize| {
            words
                .get(i + 1)
                .cloned()
                .ok_or_else(|| format!("{} needs a value", words[i].to_string_lossy()))
        };
        let number = |i: usize| -> Result<u64, String> {
            value(i)?
                .to_str()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{} needs a number", words[i].to_string_lossy()))
        };
        while let Some(word) = words.get(i) {
            match word.to_str() {
                Some("--") => {
                    let mut rest = words[i + 1..].iter().cloned();
                    parsed.program = rest.next().ok_or("no program after --")?;
                    parsed.args = rest.collect();
                    if parsed.parent == 0 {
                        return Err("no --parent".to_owned());
                    }
                    return Ok(parsed);
                }
                Some("--parent") => {
                    parsed.parent = u32::try_from(number(i)?).map_err(|e| e.to_string())?
                }
                Some("--cgroup") => parsed.cgroup = Some(PathBuf::from(value(i)?)),
                Some("--grace-ms") => parsed.grace_ms = number(i)?,
                Some("--kill-ms") => parsed.kill_ms = number(i)?,
                Some("--arg0") => parsed.arg0 = Some(value(i)?),
                Some("--load") => {
                    parsed.load = true;
                    i += 1;
                    continue;
                }
                Some("--env") => {
                    let pair = value(i)?;
                    parsed
                        .env
                        .push(split_assignment(&pair).ok_or("--env needs K=V")?);
                }
                _ => return Err(format!("unknown option {}", word.to_string_lossy())),
            }
            i += 2;
        }
        Err("no -- before the program".to_owned())
    }

    /// The words that pass these options on, up to and including the program's.
    fn to_words(&self) -> Vec<OsString> {
        let mut words: Vec<OsString> = vec!["--parent".into(), self.parent.to_string().into()];
        if let Some(dir) = &self.cgroup {
            words.extend(["--cgroup".into(), dir.clone().into_os_string()]);
        }
        if self.grace_ms > 0 || self.kill_ms > 0 {
            words.extend([
                "--grace-ms".into(),
                self.grace_ms.to_string().into(),
                "--kill-ms".into(),
                self.kill_ms.to_string().into(),
            ]);
        }
        if let Some(arg0) = &self.arg0 {
            words.extend(["--arg0".into(), arg0.clone()]);
        }
        if self.load {
            words.push("--load".into());
        }
        for (key, value) in &self.env {
            let mut pair = key.clone();
            pair.push("=");
            pair.push(value);
            words.extend(["--env".into(), pair]);
        }
        words.push("--".into());
        words.push(self.program.clone());
        words.extend(self.args.iter().cloned());
        words
    }
}

/// `KEY=VALUE` split at the first `=`.
fn split_assignment(pair: &OsStr) -> Option<(OsString, OsString)> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let bytes = pair.as_bytes();
        let at = bytes.iter().position(|&b| b == b'=')?;
        Some((
            OsStr::from_bytes(&bytes[..at]).to_owned(),
            OsStr::from_bytes(&bytes[at + 1..]).to_owned(),
        ))
    }
    #[cfg(not(unix))]
    {
        let text = pair.to_str()?;
        let (key, value) = text.split_once('=')?;
        Some((key.into(), value.into()))
    }
}

/// Where `program` is, searched as `execvp` would (the `PATH` the child will have, when
/// the command sets one), so that a missing program fails here, with the same error a
/// plain spawn gives, and not later inside the trampoline.
pub fn find_program(program: &str, path_override: Option<&str>) -> io::Result<PathBuf> {
    let not_found = || io::Error::from_raw_os_error(2);
    if program.is_empty() {
        return Err(not_found());
    }
    if program.contains('/') {
        let path = PathBuf::from(program);
        return if path.exists() {
            Ok(path)
        } else {
            Err(not_found())
        };
    }
    let search = match path_override {
        Some(path) => OsString::from(path),
        None => std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
    };
    std::env::split_paths(&search)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(not_found)
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// The `PATH` an env list sets, if it sets one.
fn path_in(env: &[(String, String)]) -> Option<&str> {
    env.iter()
        .rev()
        .find(|(key, _)| key == "PATH")
        .map(|(_, value)| value.as_str())
}

/// Starts `command` from a thread that lives as long as this process, so that a child's
/// parent-death signal fires when the process ends, not when the calling thread does.
pub fn spawn(command: Command) -> io::Result<Child> {
    type Job = (Command, mpsc::Sender<io::Result<Child>>);
    static SPAWNER: OnceLock<Option<Mutex<mpsc::Sender<Job>>>> = OnceLock::new();
    let gone = || io::Error::other("the thread that starts processes is gone");
    let sender = SPAWNER.get_or_init(|| {
        let (jobs, queue) = mpsc::channel::<Job>();
        thread::Builder::new()
            .name("inferlint-spawner".into())
            .spawn(move || {
                // The sender lives in a static, so this loop ends only with the process.
                while let Ok((mut command, reply)) = queue.recv() {
                    let _ = reply.send(command.spawn());
                }
            })
            .ok()
            .map(|_| Mutex::new(jobs))
    });
    let sender = sender.as_ref().ok_or_else(gone)?;
    let (reply, answer) = mpsc::channel();
    sender
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .send((command, reply))
        .map_err(|_| gone())?;
    answer.recv().map_err(|_| gone())?
}

/// A command that runs `program` with the variables `env` sets, where there is no
/// supervisor (not Linux). A program that cannot be found fails here.
#[cfg(not(target_os = "linux"))]
fn tied(program: &str, env: &[(String, String)]) -> io::Result<Command> {
    let path = find_program(program, path_in(env))?;
    let mut command = Command::new(path);
    command.envs(env.iter().map(|(k, v)| (k, v)));
    Ok(command)
}

/// After the load command's own process exits, what it left running (a detached child,
/// a helper still holding its output) gets this long to end by itself before its
/// supervisor stops it (SIGTERM, the load's grace period, SIGKILL). So xray waits for the
/// load's output at most this plus the load's stop times after the load itself exited.
pub const LOAD_STRAYS_WAIT: Duration = Duration::from_secs(2);

/// The load command under a supervisor of its own, as the server is: a child subreaper
/// every orphan of the load's tree is re-parented to, so that nothing the load starts
/// outlives it (see the module's notes). The supervisor's stdout and stderr are the
/// load's; it exits with the load's exit code (128 + the signal for a killed load) once
/// the load's whole tree is gone.
#[derive(Debug)]
pub struct SupervisedLoad {
    /// The supervisor: its stdout and stderr are the load's output.
    pub child: Child,
    /// Open while xray wants the load to run; closing it stops the load's tree.
    lifeline: Option<ChildStdin>,
    anchor: Option<Member>,
}

impl SupervisedLoad {
    /// Starts `program` under a load supervisor in this process's group (Ctrl-C in the
    /// terminal reaches it), with piped stdout and stderr and `stdin` as the load's
    /// stdin where the platform has no supervisor (on Linux the load's stdin is null). `times` is the stop of what is left of the load's tree, once it ended or
    /// was asked to.
    #[cfg(target_os = "linux")]
    pub fn start(
        program: &str,
        args: &[String],
        env: &[(String, String)],
        stdin: Stdio,
        times: StopTimes,
    ) -> io::Result<SupervisedLoad> {
        let path = find_program(program, path_in(env))?;
        // Here the supervisor's stdin is its lifeline, and the load's is always null.
        drop(stdin);
        let options = InternalArgs {
            parent: std::process::id(),
            grace_ms: millis(times.grace),
            kill_ms: millis(times.kill_wait),
            arg0: Some(program.into()),
            env: env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v)))
                .collect(),
            program: path.into_os_string(),
            args: args.iter().map(OsString::from).collect(),
            load: true,
            ..InternalArgs::default()
        };
        let mut command = this_binary();
        command
            .arg(SUPERVISE)
            .args(options.to_words())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = spawn(command)?;
        let anchor = inferlint_gpu::procs::read_process(child.id()).map(|p| Member {
            pid: p.pid,
            start_time: p.start_time,
        });
        let lifeline = child.stdin.take();
        Ok(SupervisedLoad {
            child,
            lifeline,
            anchor,
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub fn start(
        program: &str,
        args: &[String],
        env: &[(String, String)],
        stdin: Stdio,
        _times: StopTimes,
    ) -> io::Result<SupervisedLoad> {
        let mut command = tied(program, env)?;
        command
            .args(args)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Ok(SupervisedLoad {
            child: spawn(command)?,
            lifeline: None,
            anchor: None,
        })
    }

    /// The supervisor, every process of the load's tree descends from.
    pub fn anchor(&self) -> Option<Member> {
        self.anchor
    }

    /// Asks the supervisor to stop the load's tree (SIGTERM, grace, SIGKILL) and end.
    pub fn release(&mut self) {
        drop(self.lifeline.take());
    }
}

impl Drop for SupervisedLoad {
    /// On every path: a supervisor whose lifeline closes stops what is left of the tree.
    fn drop(&mut self) {
        self.release();
    }
}

/// SIGKILL at once to every process of the tree below `anchor` (a supervisor of ours),
/// and to every process in `cgroup`: a second Ctrl-C waits for nothing. Returns how many
/// processes were sent the signal and whether any survived `kill_wait`.
#[cfg(target_os = "linux")]
pub fn kill_tree_now(anchor: Member, cgroup: Option<PathBuf>, kill_wait: Duration) -> TreeStop {
    let source = inferlint_gpu::tree::Contained {
        anchor: Some(anchor),
        cgroup: cgroup.map(inferlint_gpu::cgroup::OwnCgroup::at),
    };
    let times = StopTimes {
        grace: Duration::ZERO,
        kill_wait,
        poll: STOP_POLL,
    };
    match inferlint_gpu::system::LinuxProcesses::new(false) {
        Ok(mut processes) => inferlint_gpu::tree::stop_tree(
            &source,
            &mut processes,
            &mut inferlint_gpu::system::SystemClock::new(),
            times,
        ),
        Err(e) => TreeStop {
            unreadable: Some(format!("could not {e}")),
            ..TreeStop::default()
        },
    }
}

#[cfg(not(target_os = "linux"))]
pub fn kill_tree_now(_anchor: Member, _cgroup: Option<PathBuf>, _kill_wait: Duration) -> TreeStop {
    TreeStop::default()
}

/// A command that runs this very binary again. Through `/proc/self/exe`, which the child
/// resolves to the file its parent runs even when that path was replaced or deleted
/// since (a rebuild during a long run); argv[0] keeps the path a reader of `ps` knows.
#[cfg(target_os = "linux")]
fn this_binary() -> Command {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new("/proc/self/exe");
    if let Ok(path) = std::env::current_exe() {
        command.arg0(path);
    }
    command
}

/// How the server's first process ended, as its supervisor saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Code(i32),
    Signal(i32),
    /// The supervisor itself ended without saying (killed by someone else).
    SupervisorGone,
}

/// What the supervisor said so far.
#[derive(Debug, Default)]
struct Reports {
    started: Option<Member>,
    failed: Option<String>,
    ended: Option<Ended>,
    /// Its stdout closed.
    closed: bool,
}

/// A server started under a supervisor: see the module's notes.
#[derive(Debug)]
pub struct Supervised {
    supervisor: Child,
    /// Open while xray wants the server alive; closing it asks the supervisor to stop the
    /// tree and end.
    lifeline: Option<ChildStdin>,
    anchor: Member,
    server: Member,
    containment: Containment,
    reports: Arc<(Mutex<Reports>, Condvar)>,
    stopped: bool,
}

/// How the tree is held together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Containment {
    /// A cgroup of its own, at this directory.
    Cgroup(PathBuf),
    /// Only the supervisor as a child subreaper; why there is no cgroup.
    Subreaper(String),
}

impl Containment {
    pub fn describe(&self) -> String {
        match self {
            Containment::Cgroup(dir) => format!("tracked in cgroup {}", dir.display()),
            Containment::Subreaper(why) => {
                format!("tracked as descendants of a subreaper; no cgroup: {why}")
            }
        }
    }
}

/// What to start as the server.
#[derive(Debug)]
pub struct ServerSpec<'a> {
    pub program: &'a str,
    pub args: &'a [String],
    pub env: &'a [(String, String)],
    /// Where its stdout and stderr go (the boot log).
    pub log: File,
    /// The stop's times, also used by the supervisor should xray end without stopping.
    pub times: StopTimes,
}

/// Set to `off` (or `0`) to run the server without a cgroup even where one is allowed;
/// its tree is then held by the subreaper alone.
pub const CGROUP_VARIABLE: &str = "INFERLINT_CGROUP";

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Supervised {
    /// Starts the server under a supervisor, in a process group of its own (so that
    /// Ctrl-C in the terminal reaches xray and the load, not the server), in a cgroup
    /// where allowed. Fails as a plain spawn would when the program cannot be found.
    #[cfg(target_os = "linux")]
    pub fn start(spec: ServerSpec<'_>) -> io::Result<Supervised> {
        use std::os::unix::process::CommandExt;
        let path = find_program(spec.program, path_in(spec.env))?;
        let (cgroup, containment) = linux::own_cgroup();
        let options = InternalArgs {
            parent: std::process::id(),
            cgroup: cgroup.as_ref().map(|c| c.dir().to_owned()),
            grace_ms: millis(spec.times.grace),
            kill_ms: millis(spec.times.kill_wait),
            arg0: Some(spec.program.into()),
            env: spec
                .env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v)))
                .collect(),
            program: path.into_os_string(),
            args: spec.args.iter().map(OsString::from).collect(),
            load: false,
        };
        let mut command = this_binary();
        command
            .arg(SUPERVISE)
            .args(options.to_words())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(spec.log)
            .process_group(0);
        // Not the server's own error: a missing supervisor must not read as a missing
        // server program.
        let mut supervisor = spawn(command)
            .map_err(|e| io::Error::other(format!("cannot start its supervisor: {e}")))?;
        let remove_cgroup = || {
            if let Some(c) = &cgroup {
                let _ = c.remove();
            }
        };
        let anchor = match inferlint_gpu::procs::read_process(supervisor.id()) {
            Some(p) => Member {
                pid: p.pid,
                start_time: p.start_time,
            },
            None => {
                let _ = supervisor.kill();
                let _ = supervisor.wait();
                remove_cgroup();
                return Err(io::Error::other("the server's supervisor ended at once"));
            }
        };
        let lifeline = supervisor.stdin.take();
        let reports = Arc::new((Mutex::new(Reports::default()), Condvar::new()));
        if let Some(out) = supervisor.stdout.take() {
            let reports = Arc::clone(&reports);
            thread::Builder::new()
                .name("inferlint-supervisor".into())
                .spawn(move || read_reports(out, &reports))?;
        }
        let mut supervised = Supervised {
            supervisor,
            lifeline,
            anchor,
            server: anchor,
            containment,
            reports,
            stopped: false,
        };
        match supervised.wait_started() {
            Ok(server) => {
                supervised.server = server;
                Ok(supervised)
            }
            Err(e) => {
                supervised.release(Duration::from_secs(5));
                supervised.stopped = true;
                remove_cgroup();
                Err(e)
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn start(_spec: ServerSpec<'_>) -> io::Result<Supervised> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "starting a server needs Linux",
        ))
    }

    fn wait_started(&self) -> io::Result<Member> {
        let (reports, changed) = &*self.reports;
        let deadline = Instant::now() + START_TIMEOUT;
        let mut now = lock(reports);
        loop {
            if let Some(server) = now.started {
                return Ok(server);
            }
            if let Some(why) = &now.failed {
                return Err(io::Error::other(why.clone()));
            }
            if now.closed {
                return Err(io::Error::other("the server's supervisor ended at once"));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::other(
                    "the server's supervisor did not start it in time",
                ));
            }
            now = changed
                .wait_timeout(now, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    /// The server's first process (the program xray was asked to start).
    pub fn pid(&self) -> u32 {
        self.server.pid
    }

    /// The process every process of the server's tree descends from: its supervisor.
    pub fn root_pid(&self) -> u32 {
        self.anchor.pid
    }

    pub fn containment(&self) -> &Containment {
        &self.containment
    }

    /// The supervisor as a member (pid and start time): what a kill of the whole tree
    /// starts from.
    pub fn anchor(&self) -> Member {
        self.anchor
    }

    /// The tree's cgroup, if it has one.
    pub fn cgroup(&self) -> Option<PathBuf> {
        match &self.containment {
            Containment::Cgroup(dir) => Some(dir.clone()),
            Containment::Subreaper(_) => None,
        }
    }

    /// How the server's first process ended, once it has.
    pub fn ended(&self) -> Option<Ended> {
        let reports = lock(&self.reports.0);
        reports
            .ended
            .or_else(|| reports.closed.then_some(Ended::SupervisorGone))
    }

    /// Stops every process of the server's tree (see `inferlint_gpu::tree::stop_tree`),
    /// then lets the supervisor go. Safe to call twice: the second finds nothing.
    #[cfg(target_os = "linux")]
    pub fn stop(&mut self, times: StopTimes) -> TreeStop {
        let source = inferlint_gpu::tree::Contained {
            anchor: Some(self.anchor),
            cgroup: match &self.containment {
                Containment::Cgroup(dir) => Some(inferlint_gpu::cgroup::OwnCgroup::at(dir.clone())),
                Containment::Subreaper(_) => None,
            },
        };
        let outcome = match inferlint_gpu::system::LinuxProcesses::new(false) {
            Ok(mut processes) => inferlint_gpu::tree::stop_tree(
                &source,
                &mut processes,
                &mut inferlint_gpu::system::SystemClock::new(),
                times,
            ),
            Err(e) => TreeStop {
                unreadable: Some(format!("could not {e}")),
                ..TreeStop::default()
            },
        };
        self.release(Duration::from_secs(5));
        if outcome.complete() {
            if let Some(cgroup) = &source.cgroup {
                let _ = cgroup.remove();
            }
        }
        self.stopped = true;
        outcome
    }

    #[cfg(not(target_os = "linux"))]
    pub fn stop(&mut self, _times: StopTimes) -> TreeStop {
        let _ = self.supervisor.kill();
        let _ = self.supervisor.wait();
        self.stopped = true;
        TreeStop::default()
    }

    /// Closes the lifeline and waits up to `limit` for the supervisor to end (it stops
    /// whatever is left of the tree first). Reaps it when it has.
    fn release(&mut self, limit: Duration) {
        drop(self.lifeline.take());
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if !matches!(self.supervisor.try_wait(), Ok(None)) {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Supervised {
    /// Without a stop (a panic on the way), closing the lifeline makes the supervisor
    /// stop the tree by itself.
    fn drop(&mut self) {
        if !self.stopped {
            self.release(Duration::from_secs(1));
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Reads the supervisor's lines (`started PID START`, `failed WHY`, `exited code N`,
/// `exited signal N`) into `reports` until its stdout closes.
fn read_reports(out: impl io::Read, reports: &(Mutex<Reports>, Condvar)) {
    let (state, changed) = reports;
    for line in BufReader::new(out).lines() {
        let Ok(line) = line else { break };
        let mut now = lock(state);
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["started", pid, start] => {
                if let (Ok(pid), Ok(start_time)) = (pid.parse(), start.parse()) {
                    now.started = Some(Member { pid, start_time });
                }
            }
            ["exited", "code", code] => now.ended = code.parse().ok().map(Ended::Code),
            ["exited", "signal", signal] => {
                now.ended = signal.parse().ok().map(Ended::Signal);
            }
            ["failed", ..] => {
                now.failed = Some(line.trim_start_matches("failed").trim().to_owned());
            }
            _ => {}
        }
        changed.notify_all();
    }
    lock(state).closed = true;
    changed.notify_all();
}

/// Writes one report line to xray; an xray that is gone reads nothing, and that is fine.
fn report(line: &str) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;

    use std::os::unix::process::CommandExt;

    use inferlint_gpu::cgroup::OwnCgroup;
    use inferlint_gpu::system::{LinuxProcesses, Processes, SystemClock};
    use inferlint_gpu::tree::{stop_tree, Contained};
    use nix::sys::prctl;
    use nix::sys::signal::Signal;
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    use nix::unistd::{getppid, Pid};

    /// A cgroup for the server where the machine allows one (and the user did not turn
    /// it off), else why not.
    pub(super) fn own_cgroup() -> (Option<OwnCgroup>, Containment) {
        let off = std::env::var(CGROUP_VARIABLE).is_ok_and(|v| v == "off" || v == "0");
        if off {
            return (
                None,
                Containment::Subreaper(format!("{CGROUP_VARIABLE}=off")),
            );
        }
        const PREFIX: &str = "inferlint-xray-";
        let name = format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        );
        match OwnCgroup::create(&name) {
            Ok(cgroup) => {
                cgroup.remove_stale_siblings(PREFIX, |pid| {
                    inferlint_gpu::procs::read_process(pid).is_some()
                });
                let dir = cgroup.dir().to_owned();
                (Some(cgroup), Containment::Cgroup(dir))
            }
            Err(why) => (None, Containment::Subreaper(why.to_string())),
        }
    }

    /// Whether our parent is still the process that started us.
    fn parent_is(expected: u32) -> bool {
        i32::try_from(expected).is_ok_and(|pid| getppid() == Pid::from_raw(pid))
    }

    /// `inferlint __exec`: the parent-death signal, the parent check, the cgroup, then
    /// the program in place of this process.
    pub(super) fn trampoline(args: &InternalArgs) -> i32 {
        // SIGKILL: the program may not catch or ignore it, so it cannot outlive its
        // parent by choice.
        if prctl::set_pdeathsig(Signal::SIGKILL).is_err() || !parent_is(args.parent) {
            // The parent died before the signal was set (we were re-parented): starting
            // the program now would leave it running with no one to stop it.
            return NOT_RUNNABLE;
        }
        if let Some(dir) = &args.cgroup {
            // The program and everything it starts are in the cgroup from the first
            // instruction on. Should joining fail, the supervisor's subreaper still
            // holds the tree.
            let _ = OwnCgroup::at(dir.clone()).join_self();
        }
        let mut command = Command::new(&args.program);
        command
            .args(&args.args)
            .envs(args.env.iter().map(|(k, v)| (k, v)));
        let shown = args.arg0.as_ref().unwrap_or(&args.program);
        command.arg0(shown);
        let error = command.exec();
        eprintln!(
            "inferlint: cannot start {}: {error}",
            shown.to_string_lossy()
        );
        if error.kind() == io::ErrorKind::NotFound {
            NOT_FOUND
        } else {
            NOT_RUNNABLE
        }
    }

    /// Why the supervisor stops the tree.
    enum Event {
        /// Its stdin closed: xray ended, or asked for the end.
        Lifeline,
        /// SIGTERM or SIGINT (the parent-death signal among them).
        Signal,
    }

    /// SIGTERM and SIGINT become an event (through inferlint-live's handlers, on a
    /// thread of their own). Returns once the handlers are installed.
    fn catch_signals(events: mpsc::Sender<Event>) {
        let (installed, ready) = mpsc::channel();
        let spawned = thread::Builder::new()
            .name("supervisor-signals".into())
            .spawn(move || {
                let Ok(runtime) = inferlint_live::runtime() else {
                    let _ = installed.send(());
                    return;
                };
                let signal = {
                    let _inside = runtime.enter();
                    inferlint_live::interrupted()
                };
                let _ = installed.send(());
                runtime.block_on(signal);
                let _ = events.send(Event::Signal);
            });
        if spawned.is_ok() {
            let _ = ready.recv();
        }
    }

    /// The lifeline: end-of-file (or an error) on stdin becomes an event.
    fn watch_lifeline(events: mpsc::Sender<Event>) {
        let _ = thread::Builder::new()
            .name("supervisor-lifeline".into())
            .spawn(move || {
                let mut sink = [0u8; 64];
                let mut stdin = io::stdin().lock();
                while matches!(io::Read::read(&mut stdin, &mut sink), Ok(n) if n > 0) {}
                let _ = events.send(Event::Lifeline);
            });
    }

    /// How a watched child ended.
    enum Ended {
        Code(i32),
        Signal(i32),
    }

    /// Collects every child that ended (a subreaper inherits the tree's orphans too);
    /// how `watched` ended, when it did.
    fn reap_all(watched: u32) -> Option<Ended> {
        let mut ended = None;
        loop {
            match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code))
                    if i64::from(pid.as_raw()) == i64::from(watched) =>
                {
                    ended = Some(Ended::Code(code));
                }
                Ok(WaitStatus::Signaled(pid, signal, _))
                    if i64::from(pid.as_raw()) == i64::from(watched) =>
                {
                    ended = Some(Ended::Signal(signal as i32));
                }
                Ok(WaitStatus::StillAlive) | Err(_) => return ended,
                Ok(_) => {}
            }
        }
    }

    /// Collects every child that ended (the server, and orphans re-parented to us);
    /// reports the server's end once.
    fn reap(server: u32, reported: &mut bool) {
        if let Some(ended) = reap_all(server) {
            if !*reported {
                report(&match ended {
                    Ended::Code(code) => format!("exited code {code}"),
                    Ended::Signal(signal) => format!("exited signal {signal}"),
                });
                *reported = true;
            }
        }
    }

    /// `inferlint __supervise`: starts the server through the trampoline and holds its
    /// tree until xray lets go (or dies), then stops what is left of it.
    pub(super) fn supervisor(args: &InternalArgs) -> i32 {
        let (events, queue) = mpsc::channel();
        catch_signals(events.clone());
        // Caught above: a dying xray becomes a stop, never the end of the supervisor.
        let _ = prctl::set_pdeathsig(Signal::SIGTERM);
        if !parent_is(args.parent) {
            return NOT_RUNNABLE;
        }
        let subreaper = prctl::set_child_subreaper(true);
        watch_lifeline(events);
        let me = std::process::id();
        let trampoline_args = InternalArgs {
            parent: me,
            grace_ms: 0,
            kill_ms: 0,
            ..args.clone()
        };
        // The server's stdout goes where our stderr goes (the boot log); our stdout is
        // the report pipe to xray.
        let log = io::stderr()
            .as_fd_clone()
            .map(Stdio::from)
            .unwrap_or_else(|_| Stdio::null());
        let started = this_binary()
            .arg(EXEC)
            .args(trampoline_args.to_words())
            .stdin(Stdio::null())
            .stdout(log)
            .spawn();
        let server = match started {
            Ok(child) => child.id(),
            Err(e) => {
                report(&format!(
                    "failed cannot start {}: {e}",
                    args.program.to_string_lossy()
                ));
                return NOT_RUNNABLE;
            }
        };
        let start_time = inferlint_gpu::procs::read_process(server).map_or(0, |p| p.start_time);
        report(&format!("started {server} {start_time}"));
        if subreaper.is_err() {
            eprintln!(
                "inferlint: cannot become a child subreaper; a daemon the server starts may escape the stop"
            );
        }
        let mut reported = false;
        loop {
            reap(server, &mut reported);
            match queue.recv_timeout(SUPERVISOR_POLL) {
                Ok(_) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
        let source = Contained {
            anchor: inferlint_gpu::procs::read_process(me).map(|p| Member {
                pid: me,
                start_time: p.start_time,
            }),
            cgroup: args.cgroup.clone().map(OwnCgroup::at),
        };
        let times = StopTimes {
            grace: Duration::from_millis(args.grace_ms),
            kill_wait: Duration::from_millis(args.kill_ms),
            poll: STOP_POLL,
        };
        if let Ok(mut processes) = LinuxProcesses::new(false) {
            let stop = stop_tree(&source, &mut processes, &mut SystemClock::new(), times);
            if stop.terminated > 0 {
                // Only when xray did not stop the server itself: a note in the boot log
                // for whoever reads it later.
                eprintln!(
                    "inferlint: xray ended without stopping the server; stopped its {} remaining process{}{}",
                    stop.terminated,
                    if stop.terminated == 1 { "" } else { "es" },
                    if stop.complete() { "" } else { " (some survived SIGKILL)" }
                );
            }
        }
        reap(server, &mut reported);
        if let Some(cgroup) = &source.cgroup {
            let _ = cgroup.remove();
        }
        0
    }

    /// Collects every child that ended; the load's code (128 + the signal for a killed
    /// one) once it has.
    fn reap_load(load: u32, code: &mut Option<i32>) {
        match reap_all(load) {
            Some(Ended::Code(exited)) => *code = Some(exited),
            Some(Ended::Signal(signal)) => *code = Some(128 + signal),
            None => {}
        }
    }

    /// `inferlint __supervise --load`: starts the load through the trampoline (its
    /// stdout and stderr are ours) and holds its tree as a child subreaper. Once the
    /// load's own process exits, what it left running gets [`LOAD_STRAYS_WAIT`] to end,
    /// then is stopped by the tree rule; so is the whole tree when xray asks (SIGTERM,
    /// the lifeline closing) or dies. Exits with the load's code.
    pub(super) fn load_supervisor(args: &InternalArgs) -> i32 {
        let (events, queue) = mpsc::channel();
        catch_signals(events.clone());
        let _ = prctl::set_pdeathsig(Signal::SIGTERM);
        if !parent_is(args.parent) {
            return NOT_RUNNABLE;
        }
        if prctl::set_child_subreaper(true).is_err() {
            eprintln!(
                "inferlint: cannot become a child subreaper; a process the load detaches may escape the stop"
            );
        }
        watch_lifeline(events);
        let me = std::process::id();
        let trampoline_args = InternalArgs {
            parent: me,
            grace_ms: 0,
            kill_ms: 0,
            load: false,
            ..args.clone()
        };
        let started = this_binary()
            .arg(EXEC)
            .args(trampoline_args.to_words())
            .stdin(Stdio::null())
            .spawn();
        let load = match started {
            Ok(child) => child.id(),
            Err(e) => {
                eprintln!(
                    "inferlint: cannot start {}: {e}",
                    args.program.to_string_lossy()
                );
                return NOT_RUNNABLE;
            }
        };
        let mut code = None;
        let mut asked = false;
        while code.is_none() {
            reap_load(load, &mut code);
            if code.is_some() {
                break;
            }
            match queue.recv_timeout(SUPERVISOR_POLL) {
                Ok(_) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                    asked = true;
                    break;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
        let source = Contained {
            anchor: inferlint_gpu::procs::read_process(me).map(|p| Member {
                pid: me,
                start_time: p.start_time,
            }),
            cgroup: None,
        };
        let Ok(mut processes) = LinuxProcesses::new(false) else {
            return code.unwrap_or(NOT_RUNNABLE);
        };
        if !asked {
            // The load exited: what it left gets a bounded moment to end by itself.
            let deadline = Instant::now() + LOAD_STRAYS_WAIT;
            while Instant::now() < deadline {
                let empty = processes.table().is_ok_and(|table| {
                    inferlint_gpu::tree::members(&table, &source, me).is_empty()
                });
                if empty || queue.try_recv().is_ok() {
                    break;
                }
                reap_load(load, &mut code);
                thread::sleep(STOP_POLL);
            }
        }
        let times = StopTimes {
            grace: Duration::from_millis(args.grace_ms),
            kill_wait: Duration::from_millis(args.kill_ms),
            poll: STOP_POLL,
        };
        let stop = stop_tree(&source, &mut processes, &mut SystemClock::new(), times);
        let left = stop.terminated.max(stop.killed);
        if left > 0 && !asked {
            eprintln!(
                "inferlint: the load command left {left} process{} running; stopped {}{}",
                if left == 1 { "" } else { "es" },
                if left == 1 { "it" } else { "them" },
                if stop.complete() {
                    ""
                } else {
                    " (some survived SIGKILL)"
                }
            );
        }
        reap_load(load, &mut code);
        code.unwrap_or(NOT_RUNNABLE)
    }

    /// A duplicate of stderr's descriptor, to hand to a child as its stdout.
    trait CloneFd {
        fn as_fd_clone(&self) -> io::Result<std::os::fd::OwnedFd>;
    }

    impl CloneFd for io::Stderr {
        fn as_fd_clone(&self) -> io::Result<std::os::fd::OwnedFd> {
            use std::os::fd::AsFd;
            self.as_fd().try_clone_to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_options_read_back_as_written() {
        let options = InternalArgs {
            parent: 42,
            cgroup: Some("/sys/fs/cgroup/x y".into()),
            grace_ms: 30_000,
            kill_ms: 10_000,
            arg0: Some("vllm".into()),
            env: vec![("A".into(), "1=2".into()), ("EMPTY".into(), "".into())],
            program: "/usr/bin/vllm".into(),
            args: vec!["serve".into(), "--".into(), "--env".into()],
            load: false,
        };
        assert_eq!(
            InternalArgs::parse(&options.to_words()),
            Ok(options.clone())
        );
        let load = InternalArgs {
            load: true,
            ..options
        };
        assert_eq!(InternalArgs::parse(&load.to_words()), Ok(load));
    }

    #[test]
    fn internal_options_without_a_program_or_a_parent_are_refused() {
        let words = |w: &[&str]| w.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(InternalArgs::parse(&words(&["--parent", "1"])).is_err());
        assert!(InternalArgs::parse(&words(&["--", "x"])).is_err());
        assert!(InternalArgs::parse(&words(&["--parent", "x", "--", "x"])).is_err());
        assert!(InternalArgs::parse(&words(&["--env", "novalue", "--", "x"])).is_err());
    }

    #[test]
    fn other_command_lines_are_not_internal() {
        let args: Vec<OsString> = ["inferlint", "report", "run"].map(OsString::from).to_vec();
        assert_eq!(internal(&args), None);
        assert_eq!(internal(&[OsString::from("inferlint")]), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_program_is_found_on_the_path_the_child_will_have() {
        assert!(find_program("sh", None).is_ok_and(|p| p.is_absolute()));
        let missing = find_program("inferlint-no-such-program", None).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        // The command's own PATH decides, as it would for the child.
        let dir = std::env::temp_dir();
        assert!(find_program("sh", Some(dir.to_str().unwrap_or("/nonexistent"))).is_err());
        assert!(find_program("/bin/sh", Some("")).is_ok());
        assert!(find_program("/no/such/program", None).is_err());
        assert!(find_program("", None).is_err());
    }
}
