//! The server under a supervisor: started, watched through the supervisor's reports, stopped.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use inferlint_gpu::tree::{Member, StopTimes, TreeStop};

use super::{find_program, path_in, spawn, this_binary, InternalArgs, START_TIMEOUT, SUPERVISE};

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

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
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
        let (cgroup, containment) = super::modes::own_cgroup();
        let options = InternalArgs {
            cgroup: cgroup.as_ref().map(|c| c.dir().to_owned()),
            ..InternalArgs::supervising(spec.program, path, spec.args, spec.env, spec.times)
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
        let cgroup = match &self.containment {
            Containment::Cgroup(dir) => Some(dir.clone()),
            Containment::Subreaper(_) => None,
        };
        let outcome = super::stop_contained(self.anchor, cgroup.clone(), times);
        self.release(Duration::from_secs(5));
        if outcome.complete() {
            if let Some(dir) = cgroup {
                let _ = inferlint_gpu::cgroup::OwnCgroup::at(dir).remove();
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
