//! What runs in the helper processes themselves: the supervisor, the load's supervisor and
//! the trampoline (Linux only).

use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use inferlint_gpu::cgroup::OwnCgroup;
use inferlint_gpu::system::{LinuxProcesses, Processes, SystemClock};
use inferlint_gpu::tree::{stop_tree, Contained, Member, StopTimes};
use nix::sys::prctl;
use nix::sys::signal::Signal;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{getppid, Pid};

use super::{
    report, this_binary, Containment, InternalArgs, CGROUP_VARIABLE, EXEC, LOAD_STRAYS_WAIT,
    NOT_FOUND, NOT_RUNNABLE, STOP_POLL, SUPERVISOR_POLL,
};

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
            Ok(WaitStatus::Exited(pid, code)) if i64::from(pid.as_raw()) == i64::from(watched) => {
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

/// What both supervisors do first: catch SIGINT and SIGTERM (a dying xray, whose
/// parent-death signal is SIGTERM, becomes a stop, never the supervisor's end), check
/// that the process that started it is still its parent, become a child subreaper, and
/// watch the lifeline. The events' queue and whether it became a subreaper; `None` when
/// its parent is already gone.
fn take_hold(args: &InternalArgs) -> Option<(mpsc::Receiver<Event>, nix::Result<()>)> {
    let (events, queue) = mpsc::channel();
    catch_signals(events.clone());
    let _ = prctl::set_pdeathsig(Signal::SIGTERM);
    if !parent_is(args.parent) {
        return None;
    }
    let subreaper = prctl::set_child_subreaper(true);
    watch_lifeline(events);
    Some((queue, subreaper))
}

/// The trampoline that runs the supervised program: this binary again, with this
/// process as the parent it checks, its stdin empty.
fn through_trampoline(args: &InternalArgs) -> Command {
    let words = InternalArgs {
        parent: std::process::id(),
        grace_ms: 0,
        kill_ms: 0,
        load: false,
        ..args.clone()
    }
    .to_words();
    let mut command = this_binary();
    command.arg(EXEC).args(words).stdin(Stdio::null());
    command
}

/// Every process below the supervisor `me` (and in `cgroup`, when it has one).
fn below(me: u32, cgroup: Option<PathBuf>) -> Contained {
    Contained {
        anchor: inferlint_gpu::procs::read_process(me).map(|p| Member {
            pid: me,
            start_time: p.start_time,
        }),
        cgroup: cgroup.map(OwnCgroup::at),
    }
}

/// The stop's times xray handed the supervisor.
fn stop_times(args: &InternalArgs) -> StopTimes {
    StopTimes {
        grace: Duration::from_millis(args.grace_ms),
        kill_wait: Duration::from_millis(args.kill_ms),
        poll: STOP_POLL,
    }
}

/// `inferlint __supervise`: starts the server through the trampoline and holds its
/// tree until xray lets go (or dies), then stops what is left of it.
pub(super) fn supervisor(args: &InternalArgs) -> i32 {
    let Some((queue, subreaper)) = take_hold(args) else {
        return NOT_RUNNABLE;
    };
    let me = std::process::id();
    // The server's stdout goes where our stderr goes (the boot log); our stdout is
    // the report pipe to xray.
    let log = io::stderr()
        .as_fd_clone()
        .map(Stdio::from)
        .unwrap_or_else(|_| Stdio::null());
    let started = through_trampoline(args).stdout(log).spawn();
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
    let source = below(me, args.cgroup.clone());
    if let Ok(mut processes) = LinuxProcesses::new(false) {
        let stop = stop_tree(
            &source,
            &mut processes,
            &mut SystemClock::new(),
            stop_times(args),
        );
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
    let Some((queue, subreaper)) = take_hold(args) else {
        return NOT_RUNNABLE;
    };
    if subreaper.is_err() {
        eprintln!(
            "inferlint: cannot become a child subreaper; a process the load detaches may escape the stop"
        );
    }
    let me = std::process::id();
    let started = through_trampoline(args).spawn();
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
    let source = below(me, None);
    let Ok(mut processes) = LinuxProcesses::new(false) else {
        return code.unwrap_or(NOT_RUNNABLE);
    };
    if !asked {
        // The load exited: what it left gets a bounded moment to end by itself.
        let deadline = Instant::now() + LOAD_STRAYS_WAIT;
        while Instant::now() < deadline {
            let empty = processes
                .table()
                .is_ok_and(|table| inferlint_gpu::tree::members(&table, &source, me).is_empty());
            if empty || queue.try_recv().is_ok() {
                break;
            }
            reap_load(load, &mut code);
            thread::sleep(STOP_POLL);
        }
    }
    let stop = stop_tree(
        &source,
        &mut processes,
        &mut SystemClock::new(),
        stop_times(args),
    );
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
