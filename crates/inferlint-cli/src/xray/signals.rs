//! Ctrl-C and SIGTERM during xray: what the signal thread and the main thread share, the
//! guard that stops the server on every path, and the turn of a first signal into a
//! clean stop (a second, or a clean stop that takes too long, stops the server at once).

use super::*;

/// What the signal thread and the main thread share.
#[derive(Debug, Default)]
pub(super) struct Shared {
    /// 1 once SIGINT or SIGTERM arrived.
    pub(super) signal: AtomicI32,
    pub(super) server: Mutex<Option<ServerProcess>>,
    pub(super) load_pid: Mutex<Option<u32>>,
    /// The server's tree while it may be alive (its supervisor and cgroup), kept apart
    /// from `server` so that a second signal reaches it while the main thread stops it.
    pub(super) server_tree: Mutex<Option<(Member, Option<PathBuf>)>>,
    /// The load's supervisor while the load runs: every process of the load's tree
    /// descends from it.
    pub(super) load_tree: Mutex<Option<Member>>,
}

impl Shared {
    pub(super) fn interrupted(&self) -> bool {
        self.signal.load(Ordering::SeqCst) != 0
    }
}

/// The started server, under its supervisor.
#[derive(Debug)]
pub(super) struct ServerProcess {
    pub(super) server: Supervised,
    /// How it is stopped (the grace `--stop-grace` gave).
    pub(super) times: StopTimes,
}

/// Stops the server's processes when dropped, whatever path leads there.
#[derive(Debug)]
pub(super) struct ServerGuard(pub(super) Arc<Shared>);

impl Drop for ServerGuard {
    fn drop(&mut self) {
        stop_server(&self.0);
    }
}

/// Waits for SIGINT and SIGTERM on a thread of its own, through inferlint-live's
/// handlers. Not `sigwait` with the signals blocked: a blocked mask is inherited by the
/// server and the load command, which then could not be stopped with SIGTERM. A handler,
/// unlike a mask, is reset to the default when a child starts its program. Returns once
/// the handlers are installed.
pub(super) fn catch_signals(shared: &Arc<Shared>) -> Result<(), CliError> {
    let cannot = |e: String| CliError::cannot_write(format!("cannot catch Ctrl-C: {e}"));
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
            // One set of handlers for every signal: a second Ctrl-C that arrives while
            // the first is answered is kept for the next wait, not lost.
            let mut interrupts = {
                let _inside = runtime.enter();
                inferlint_live::interrupts()
            };
            let _ = installed.send(Ok(()));
            loop {
                runtime.block_on(interrupts.next());
                on_signal(&shared);
            }
        })
        .map_err(|e| cannot(e.to_string()))?;
    ready
        .recv()
        .map_err(|e| cannot(e.to_string()))?
        .map_err(cannot)
}

pub(super) fn on_signal(shared: &Arc<Shared>) {
    let first = shared
        .signal
        .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    if !first {
        // A second Ctrl-C: no more waiting, SIGKILL to both trees at once.
        eprint_line!("inferlint: stopping the server now");
        kill_now(shared);
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
            kill_now(&shared);
            std::process::exit(ExitCode::Interrupted.code());
        });
}

/// SIGKILL at once to every process of the server's tree and of the load's, whether or
/// not the main thread is stopping them (a stop in its grace period waits for nothing
/// then), then the server's stop to release its supervisor and cgroup (it finds the tree
/// empty).
pub(super) fn kill_now(shared: &Shared) {
    let server = lock(&shared.server_tree).clone();
    let load = *lock(&shared.load_tree);
    if let Some((anchor, cgroup)) = server {
        let _ = supervise::kill_tree_now(anchor, cgroup, STOP_TIMES.kill_wait);
    }
    if let Some(anchor) = load {
        let _ = supervise::kill_tree_now(anchor, None, STOP_TIMES.kill_wait);
    }
    stop_server(shared);
}

/// SIGTERM to one process (the load command).
#[cfg(unix)]
pub(super) fn terminate(pid: u32) {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    if let Ok(pid) = i32::try_from(pid) {
        if pid > 1 {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
    }
}

#[cfg(not(unix))]
pub(super) fn terminate(_pid: u32) {}
