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

mod args;
mod load;
#[cfg(target_os = "linux")]
mod modes;
mod server;

pub use args::find_program;
use args::{path_in, InternalArgs};
pub use load::{SupervisedLoad, LOAD_STRAYS_WAIT};
pub use server::{Containment, Ended, ServerSpec, Supervised, CGROUP_VARIABLE};

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::{mpsc, Mutex, OnceLock};
use std::thread;
use std::time::Duration;

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
            modes::load_supervisor(&parsed)
        } else if mode == SUPERVISE {
            modes::supervisor(&parsed)
        } else {
            modes::trampoline(&parsed)
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = parsed;
        eprintln!("inferlint: {mode} needs Linux");
        Some(NOT_RUNNABLE)
    }
}

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

/// SIGKILL at once to every process of the tree below `anchor` (a supervisor of ours),
/// and to every process in `cgroup`: a second Ctrl-C waits for nothing. Returns how many
/// processes were sent the signal and whether any survived `kill_wait`.
#[cfg(target_os = "linux")]
pub fn kill_tree_now(anchor: Member, cgroup: Option<PathBuf>, kill_wait: Duration) -> TreeStop {
    let times = StopTimes {
        grace: Duration::ZERO,
        kill_wait,
        poll: STOP_POLL,
    };
    stop_contained(anchor, cgroup, times)
}

/// Every process of the tree below `anchor` and in `cgroup` stopped by the tree rule
/// (`inferlint_gpu::tree::stop_tree`) with `times`; a process table that cannot be read
/// is said in the outcome.
#[cfg(target_os = "linux")]
fn stop_contained(anchor: Member, cgroup: Option<PathBuf>, times: StopTimes) -> TreeStop {
    let source = inferlint_gpu::tree::Contained {
        anchor: Some(anchor),
        cgroup: cgroup.map(inferlint_gpu::cgroup::OwnCgroup::at),
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

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Writes one report line to xray; an xray that is gone reads nothing, and that is fine.
fn report(line: &str) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}
