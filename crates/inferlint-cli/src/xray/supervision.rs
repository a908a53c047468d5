//! The server xray starts: its start under the supervisor, the wait until it is ready,
//! T13 after the start, the GPU gates before the start and after the stop, and the stop
//! of its whole tree.

use super::*;
use inferlint_core::judging::checks::clear_card;

/// How a stop ended: the line to print, the processes still alive after it and the
/// server's cgroup, if it had one (the clear-card wait counts what is alive in either).
#[derive(Debug)]
pub(super) struct Stopped {
    pub(super) text: String,
    pub(super) survivors: Vec<Member>,
    pub(super) cgroup: Option<PathBuf>,
}

/// SIGTERM to every process of the server's tree, a grace period, SIGKILL to what is
/// left. Returns how it ended, or `None` when there was no server to stop (already
/// stopped). Safe to call twice.
pub(super) fn stop_server(shared: &Shared) -> Option<Stopped> {
    let mut process = lock(&shared.server).take()?;
    let server = &mut process.server;
    // The first process may have ended already; its tree may not have.
    let ended = match server.ended() {
        Some(Ended::Code(code)) => format!("the server had exited with code {code}; "),
        Some(Ended::Signal(_)) => "the server had been killed by a signal; ".to_owned(),
        Some(Ended::SupervisorGone) => "the server's supervisor had ended; ".to_owned(),
        None => String::new(),
    };
    let times = process.times;
    let stop = server.stop(times);
    let how = server.containment().describe();
    let cgroup = server.cgroup();
    *lock(&shared.server_tree) = None;
    let text = if let Some(why) = &stop.unreadable {
        format!("cannot see the server's processes to stop them ({why})")
    } else if !stop.survivors.is_empty() {
        let pids: Vec<String> = stop.survivors.iter().map(|m| m.pid.to_string()).collect();
        format!(
            "{} process{} of the server still alive {} s after SIGKILL: pid {} ({how})",
            pids.len(),
            if pids.len() == 1 { "" } else { "es" },
            times.kill_wait.as_secs(),
            pids.join(", ")
        )
    } else if stop.killed > 0 {
        format!(
            "the server's processes did not stop within {} s of SIGTERM; {} killed ({how})",
            inferlint_core::story::fmt::g(times.grace.as_secs_f64()),
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
pub(super) fn count_of(n: usize) -> String {
    format!("{n} process{}", if n == 1 { "" } else { "es" })
}

/// The socket addresses of a base URL's host and port.
pub(super) fn socket_addrs(base: &BaseUrl) -> Vec<SocketAddr> {
    base.host_port()
        .and_then(|(host, port)| (host.as_str(), port).to_socket_addrs().ok())
        .map(Iterator::collect)
        .unwrap_or_default()
}

/// Whether anything accepts a TCP connection at the address.
pub(super) fn something_answers(addrs: &[SocketAddr]) -> bool {
    addrs
        .iter()
        .any(|a| TcpStream::connect_timeout(a, Duration::from_secs(1)).is_ok())
}

impl Xray<'_> {
    pub(super) fn start_server(
        &mut self,
        words: &[String],
        health: &dyn Fn(&BaseUrl, Duration) -> bool,
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
        let mut program =
            loadcmd::program(words).ok_or_else(|| problem("--serve names no command"))?;
        // `--steps`: the step plugin in the server's process writes where this says.
        program.env.extend(self.steps_env());
        let log = create_new(&boot_path).map_err(|e| problem(e.to_string()))?;
        // Under a supervisor, in a process group of its own (Ctrl-C in the terminal does
        // not reach it) and a cgroup where the machine allows: the stop reaches every
        // process it starts, and the server does not outlive xray.
        let started = Supervised::start(ServerSpec {
            program: &program.program,
            args: &program.args,
            env: &program.env,
            log,
            times: stop_times(self.args.stop_grace),
        });
        let server = match started {
            Ok(server) => server,
            Err(e) => {
                let cause = format!("{}: {}", program.program, spawn_error(&e));
                self.start_failure = Some(cause.clone());
                self.boot_checked = true;
                self.record(inferlint_core::judging::checks::boot::start_failure(&cause));
                return Err(problem(format!("cannot start {cause}")));
            }
        };
        let (pid, root) = (server.pid(), server.root_pid());
        *lock(&self.shared.server_tree) = Some((server.anchor(), server.cgroup()));
        *lock(&self.shared.server) = Some(ServerProcess {
            server,
            times: stop_times(self.args.stop_grace),
        });
        self.wait_ready(&boot_path, health)?;
        say(&format!(
            "server ready after {:.1} s (pid {pid})",
            self.started.elapsed().as_secs_f64()
        ));
        self.check_owner(root, pid, &addrs)
    }

    /// T2 before the start, or why it does not apply.
    pub(super) fn gpu_gate(&mut self) -> Result<(), Stop> {
        self.stage("is the GPU free?");
        if self.args.no_gpu {
            self.record(clear_card::no_gpu());
            return Ok(());
        }
        let result = free_card().map_err(|e| problem(e.message()))?;
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

    pub(super) fn wait_ready(
        &mut self,
        boot_path: &Path,
        health: &dyn Fn(&BaseUrl, Duration) -> bool,
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
                    .map(|b| ready_line_in(&String::from_utf8_lossy(&b)))
                    .unwrap_or(false);
            }
            // `/health` is given the time the server has left to get ready, no more.
            if logged_ready && health(&self.base, limit.saturating_sub(begun.elapsed())) {
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
    pub(super) fn check_owner(
        &mut self,
        root: u32,
        pid: u32,
        addrs: &[SocketAddr],
    ) -> Result<(), Stop> {
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
    pub(super) fn server_exited(&self) -> Option<String> {
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
}

/// Why a program could not be started, in a shell's words where there is one.
pub(super) fn spawn_error(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "command not found".to_owned(),
        io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => e.to_string(),
    }
}

/// The last non-empty line of a file, for a log that names no cause. Only its last
/// 64 KiB are read: a server's log can be gigabytes.
pub(super) fn last_line(path: &Path) -> Option<String> {
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

#[cfg(target_os = "linux")]
pub(super) fn owner_result(
    base: &BaseUrl,
    root: u32,
    pid: u32,
    addrs: &[SocketAddr],
) -> CheckResult {
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
pub(super) fn owner_result(
    base: &BaseUrl,
    _root: u32,
    _pid: u32,
    _addrs: &[SocketAddr],
) -> CheckResult {
    owner::cannot_tell(&base.to_string(), "that needs Linux's /proc")
}

/// T2 before a server starts: gpu-inspect's free-card check (10 s at most).
pub(super) fn free_card() -> Result<CheckResult, CliError> {
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
pub(super) fn clear_card_after_stop(
    survivors: &[Member],
    cgroup: Option<&Path>,
) -> Result<CheckResult, CliError> {
    let mut machine = crate::gpu::machine("xray's clear-card wait")?;
    Ok(match machine.processes.as_mut() {
        Err(e) => clear_card::processes_unreadable(&e.to_string()),
        Ok(processes) => {
            inferlint_gpu::wait::wait_for_clear_card_with(
                clear_card::Asker::Teardown,
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
pub(super) fn left_of_tree(
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

/// Whether a log holds the line an engine prints once it serves (its table's
/// `ready_line`), whichever engine the server turns out to be.
fn ready_line_in(log: &str) -> bool {
    Engine::ALL
        .iter()
        .any(|engine| log.contains(engine.descriptor().ready_line))
}

impl Xray<'_> {
    /// The version the server reports about itself, from the version endpoints of its
    /// engine's table (the engine found, else the log's, else every engine's in turn).
    pub(super) fn server_version(&self, from_log: Option<Engine>) -> Option<String> {
        let engines = match self.engine.or(from_log) {
            Some(engine) => vec![engine],
            None => Engine::ALL.to_vec(),
        };
        let recorder = Recorder::new().ok()?;
        engines
            .into_iter()
            .find_map(|engine| recorder.version(&self.base, engine))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
