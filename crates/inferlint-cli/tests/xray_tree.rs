//! xray and the whole process tree of the server it starts, with real processes: a
//! daemon that leaves the server's process group and parent (`setsid`, two forks), a
//! server and a daemon that ignore SIGTERM, a daemon holding the server's port, and
//! `kill -9` of xray itself. A bystander with the daemon's very command line, started
//! by the test and not by xray, must survive every stop.
//!
//! Each test marks the processes it causes with numbers of its own (the port, `sleep`
//! durations made from it) and asserts that none is left; a guard kills what is left on
//! every path out, by PID, only processes whose command line carries those marks.

#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{no_panic, stdout};
use crate::xray::{finish, free_port, live_processes, shown, sim, start_xray_with, url};

/// `sleep` durations no other test uses: the port and a digit of the test's own.
fn mark(port: u16, k: u32) -> String {
    (7_000_000 + u64::from(port) * 10 + u64::from(k)).to_string()
}

/// What marks a test's processes: `sleep` durations of its own, and its port on our own
/// binaries' command lines (the simulated server, xray's supervisor). Another
/// checkout's tests may use the same port, never our binaries' paths.
#[derive(Debug, Clone)]
struct Marks {
    port: String,
    sleeps: Vec<String>,
}

impl Marks {
    fn new(port: u16, sleeps: usize) -> Marks {
        Marks {
            port: port.to_string(),
            sleeps: (1..=sleeps).map(|k| mark(port, k as u32)).collect(),
        }
    }

    fn sleep(&self, k: usize) -> &str {
        &self.sleeps[k - 1]
    }

    /// Whether a command line is one of the test's processes.
    fn carried_by(&self, argv: &[String]) -> bool {
        let words = || {
            argv.iter()
                .flat_map(|a| a.split([' ', ';', '&', '(', ')', '\'']))
        };
        let ours = [sim().to_path_buf(), env!("CARGO_BIN_EXE_inferlint").into()];
        let our_binary = argv
            .first()
            .is_some_and(|a| ours.iter().any(|p| Path::new(a) == p));
        words().any(|w| self.sleeps.iter().any(|m| m == w))
            || (our_binary && words().any(|w| w == self.port))
    }
}

/// Live processes (not zombies) of the test, with their command lines.
fn marked(marks: &Marks) -> Vec<(u32, String)> {
    live_processes()
        .into_iter()
        .filter(|(pid, argv)| *pid != std::process::id() && marks.carried_by(argv))
        .map(|(pid, argv)| (pid, argv.join(" ")))
        .collect()
}

/// Kills what is left of a test's processes when dropped, on every path out of the test.
struct Cleanup {
    marks: Marks,
    /// The bystander, killed by its handle.
    bystander: Option<Child>,
}

impl Drop for Cleanup {
    /// Everything but xray's supervisors first: a supervisor whose xray is gone stops
    /// what is left and removes its cgroup, which it could not do killed. Then whatever
    /// is still there after a few seconds.
    fn drop(&mut self) {
        if let Some(mut child) = self.bystander.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let is_supervisor = |cmd: &str| cmd.contains(" __supervise ");
        let kill = |pid: u32| {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        };
        for (pid, _) in marked(&self.marks)
            .into_iter()
            .filter(|(_, cmd)| !is_supervisor(cmd))
        {
            kill(pid);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && !marked(&self.marks).is_empty() {
            std::thread::sleep(Duration::from_millis(100));
        }
        for (pid, _) in marked(&self.marks) {
            kill(pid);
        }
    }
}

impl Cleanup {
    fn new(marks: &Marks) -> Cleanup {
        Cleanup {
            marks: marks.clone(),
            bystander: None,
        }
    }

    /// Starts the bystander: `sleep MARK`, the daemon's own command line, not xray's.
    fn start_bystander(&mut self, mark: &str) -> u32 {
        let child = Command::new("sleep")
            .arg(mark)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        self.bystander = Some(child);
        pid
    }

    /// Asserts that, but for `except`, none of the test's processes is left (a moment is
    /// allowed for the kernel to reap what was just stopped).
    #[track_caller]
    fn assert_none_left(&self, except: &[u32], within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let left: Vec<(u32, String)> = marked(&self.marks)
                .into_iter()
                .filter(|(pid, _)| !except.contains(pid))
                .collect();
            if left.is_empty() {
                return;
            }
            assert!(Instant::now() < deadline, "processes left: {left:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn bystander_alive(&mut self) -> bool {
        self.bystander
            .as_mut()
            .is_some_and(|c| c.try_wait().unwrap().is_none())
    }
}

/// One test's folder, port and processes.
struct Case {
    tmp: tempfile::TempDir,
    port: u16,
    marks: Marks,
    cleanup: Cleanup,
}

impl Case {
    /// A case whose processes carry its port and `sleeps` sleep marks of its own.
    fn new(sleeps: usize) -> Case {
        let port = free_port();
        let marks = Marks::new(port, sleeps);
        Case {
            tmp: tempfile::tempdir().unwrap(),
            port,
            cleanup: Cleanup::new(&marks),
            marks,
        }
    }

    fn xray(&self, serve: &str, load: &[&str], env: &[(&str, &str)]) -> Output {
        run_xray(self.tmp.path(), self.port, serve, load, env)
    }
}

/// The simulated vLLM on `port`, as a shell command line to prefix with what the test
/// needs (the daemon is started before the server, so it runs at the first request).
fn sim_serve(port: u16) -> String {
    format!("{} serve --engine vllm --port {port}", sim().display())
}

/// A shell that starts a daemon `sleep MARK`, then becomes the simulated server.
fn daemon_then_server(port: u16, mark: &str) -> String {
    format!("sh -c '{}; exec {}'", daemon(mark), sim_serve(port))
}

/// A daemon the way daemons make themselves: a child that forks again and exits (the
/// grandchild is orphaned), which then calls `setsid` (a session and group of its own).
fn daemon(mark: &str) -> String {
    format!("( (exec setsid sleep {mark}) & )")
}

/// xray's arguments for a test: the simulated vLLM at `target`, started with `serve`,
/// no GPU, no probe, then the load.
fn xray_args<'a>(target: &'a str, serve: &'a str, load: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "-o",
        "run",
        "--engine",
        "vllm",
        "--no-gpu",
        "--no-probe",
        "--url",
        target,
        "--serve",
        serve,
        "--",
    ];
    args.extend(load);
    args
}

fn run_xray(cwd: &Path, port: u16, serve: &str, load: &[&str], env: &[(&str, &str)]) -> Output {
    let target = url(port);
    let out = finish(start_xray_with(cwd, &xray_args(&target, serve, load), env));
    no_panic(&out);
    out
}

/// xray ran to its end: no load was sent (`true`), so some checks cannot tell, but
/// nothing was interrupted or failed inside inferlint.
#[track_caller]
fn assert_ran(out: &Output) {
    assert!(matches!(out.status.code(), Some(0..=2)), "{}", shown(out));
}

/// The line xray printed after `== stop the server`.
fn stop_line(out: &Output) -> String {
    let text = stdout(out);
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with("== stop the server"));
    lines.nth(1).unwrap_or_default().to_owned()
}

/// A server that starts a daemon (two forks and `setsid`: out of the server's process
/// group and re-parented away from it) is stopped with the daemon; the bystander with
/// the daemon's command line lives on. Where the machine allows, the tree is held in a
/// cgroup; elsewhere by the subreaper (the next test forces that).
#[test]
fn a_daemon_the_server_starts_is_stopped_with_it() {
    let mut case = Case::new(1);
    let (port, marks) = (case.port, case.marks.clone());
    let bystander = case.cleanup.start_bystander(marks.sleep(1));
    let serve = daemon_then_server(port, marks.sleep(1));
    let out = case.xray(&serve, &["true"], &[]);
    assert_ran(&out);
    let stopped = stop_line(&out);
    assert!(
        stopped.starts_with("the server's processes stopped on SIGTERM: 2 processes (tracked "),
        "{}",
        shown(&out)
    );
    case.cleanup
        .assert_none_left(&[bystander], Duration::from_secs(5));
    assert!(case.cleanup.bystander_alive(), "the bystander was stopped");
    let placement = inferlint_gpu::cgroup::own_placement();
    eprintln!("stop: {stopped}\n(cgroup placement here: {placement:?})");
}

/// Without a cgroup (turned off here, as a read-only cgroupfs would), the subreaper
/// alone still finds the daemon and stops it.
#[test]
fn without_a_cgroup_the_subreaper_still_stops_the_daemon() {
    let mut case = Case::new(1);
    let (port, marks) = (case.port, case.marks.clone());
    let bystander = case.cleanup.start_bystander(marks.sleep(1));
    let serve = daemon_then_server(port, marks.sleep(1));
    let out = case.xray(&serve, &["true"], &[("INFERLINT_CGROUP", "off")]);
    assert_ran(&out);
    assert_eq!(
        stop_line(&out),
        "the server's processes stopped on SIGTERM: 2 processes (tracked as descendants of a subreaper; no cgroup: INFERLINT_CGROUP=off)",
        "{}",
        shown(&out)
    );
    case.cleanup
        .assert_none_left(&[bystander], Duration::from_secs(5));
    assert!(case.cleanup.bystander_alive(), "the bystander was stopped");
}

/// A server whose first process ignores SIGTERM (a shell that traps it and waits), with
/// a daemon that ignores it too: both get SIGKILL once the grace period ends, the one
/// `--stop-grace` gives (2 s here, where the default 30 s would hold the test that long).
#[test]
fn a_server_and_a_daemon_that_ignore_sigterm_are_killed_after_the_grace_period() {
    let case = Case::new(2);
    let (port, marks) = (case.port, case.marks.clone());
    // The shell ignores SIGTERM, and so does every program it starts (an ignored signal
    // stays ignored across exec); the simulated server catches it and exits, after which
    // the shell goes on to a sleep of its own.
    let serve = format!(
        "sh -c 'trap \"\" TERM; {}; {}; sleep {}'",
        daemon(marks.sleep(1)),
        sim_serve(port),
        marks.sleep(2)
    );
    let started = Instant::now();
    let target = url(port);
    let mut args = vec!["--stop-grace", "2"];
    args.extend(xray_args(&target, &serve, &["true"]));
    let out = finish(start_xray_with(case.tmp.path(), &args, &[]));
    no_panic(&out);
    assert_ran(&out);
    assert_eq!(
        stop_line(&out).split(" (tracked").next(),
        Some("the server's processes did not stop within 2 s of SIGTERM; 3 processes killed"),
        "{}",
        shown(&out)
    );
    // The grace was waited out before the kill: the stop is no earlier than 2 s.
    assert!(started.elapsed() >= Duration::from_secs(2));
    case.cleanup.assert_none_left(&[], Duration::from_secs(5));
}

/// `kill -9` of xray while the server runs and the load waits: the supervisor sees its
/// lifeline close and stops the server and its daemon; the load dies with xray (its
/// parent-death signal). The bystander lives on.
#[test]
fn kill_9_of_xray_stops_the_server_its_daemon_and_the_load() {
    let mut case = Case::new(2);
    let (port, marks) = (case.port, case.marks.clone());
    let bystander = case.cleanup.start_bystander(marks.sleep(1));
    let serve = daemon_then_server(port, marks.sleep(1));
    let target = url(port);
    let mut xray = start_xray_with(
        case.tmp.path(),
        &xray_args(&target, &serve, &["sleep", marks.sleep(2)]),
        &[],
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let load = format!("sleep {}", marks.sleep(2));
    while marked(&marks).iter().all(|(_, cmd)| cmd != &load) {
        assert!(
            xray.try_wait().unwrap().is_none(),
            "xray ended before the load started"
        );
        assert!(Instant::now() < deadline, "the load never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let daemons = format!("sleep {}", marks.sleep(1));
    assert_eq!(
        marked(&marks)
            .iter()
            .filter(|(_, cmd)| cmd == &daemons)
            .count(),
        2,
        "the daemon and the bystander run"
    );
    xray.kill().unwrap();
    xray.wait().unwrap();
    case.cleanup
        .assert_none_left(&[bystander], Duration::from_secs(20));
    assert!(case.cleanup.bystander_alive(), "the bystander was stopped");
    let boot = std::fs::read_to_string(case.tmp.path().join("run/boot.log")).unwrap();
    assert!(
        boot.contains(
            "inferlint: xray ended without stopping the server; stopped its 2 remaining processes"
        ),
        "{boot}"
    );
}

/// T13 when the process holding the server's port is a daemon (re-parented away from the
/// first process): it is still the server xray started, since it descends from the
/// supervisor.
#[test]
fn t13_passes_when_a_daemon_of_the_server_holds_the_port() {
    let case = Case::new(1);
    let (port, marks) = (case.port, case.marks.clone());
    // The first process only waits; the server itself runs as a daemon.
    let serve = format!(
        "sh -c '( (exec setsid {}) & ); exec sleep {}'",
        sim_serve(port),
        marks.sleep(1)
    );
    let out = case.xray(&serve, &["true"], &[]);
    assert!(
        stdout(&out).contains(&format!(
            "[T13] PASS  the server at {} is the one xray started (pid ",
            url(port)
        )),
        "{}",
        shown(&out)
    );
    assert_ran(&out);
    case.cleanup.assert_none_left(&[], Duration::from_secs(5));
}

/// The trampoline xray starts its children through (`inferlint __exec`) ties the program
/// to the thread that started it: the program runs in the trampoline's place (same PID,
/// its own argv), and dies when that thread ends. This is why xray starts its children
/// from a thread that lives as long as it does.
#[test]
fn the_trampoline_ties_the_program_to_the_thread_that_started_it() {
    let case = Case::new(1);
    let marks = case.marks.clone();
    let parent = std::process::id().to_string();
    let mark = marks.sleep(1).to_owned();
    let mut child = std::thread::spawn(move || {
        let child = Command::new(env!("CARGO_BIN_EXE_inferlint"))
            .args(["__exec", "--parent", &parent, "--", "/bin/sleep", &mark])
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let sleeping = format!("/bin/sleep {mark}");
        while !live_processes()
            .iter()
            .any(|(p, argv)| *p == child.id() && argv.join(" ") == sleeping)
        {
            assert!(Instant::now() < deadline, "the program never ran");
            std::thread::sleep(Duration::from_millis(20));
        }
        // The thread ends here, its child still running.
        child
    })
    .join()
    .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    while live_processes().iter().any(|(p, _)| *p == pid) {
        assert!(
            Instant::now() < deadline,
            "the program outlived the thread that started it"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!child.wait().unwrap().success());
    case.cleanup.assert_none_left(&[], Duration::from_secs(5));
}

/// A trampoline whose parent is not the process that asked for it (that process died,
/// and the trampoline was re-parented) starts nothing: the program would run with no
/// one left to stop it.
#[test]
fn the_trampoline_starts_nothing_for_a_parent_that_is_gone() {
    let case = Case::new(1);
    let out = Command::new(env!("CARGO_BIN_EXE_inferlint"))
        .args([
            "__exec",
            "--parent",
            "1",
            "--",
            "/bin/sleep",
            case.marks.sleep(1),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(126), "{}", shown(&out));
    case.cleanup.assert_none_left(&[], Duration::from_secs(1));
}

/// A detached child of the load command (`(setsid sleep MARK &)`: its own session, and
/// re-parented away from the load when the subshell exits) is stopped with the load:
/// the load's supervisor is a child subreaper, so the child stays in the load's tree.
/// The load's output is still held by that child, so this also shows xray does not wait
/// on it: the load's supervisor waits the stated bound, then stops the child.
#[test]
fn a_detached_child_of_the_load_is_stopped_with_it() {
    let case = Case::new(1);
    let (port, marks) = (case.port, case.marks.clone());
    let load = format!("(setsid sleep {} &); echo load done", marks.sleep(1));
    let out = case.xray(&sim_serve(port), &["sh", "-c", &load], &[]);
    assert_ran(&out);
    // Gone when xray has ended: nothing of the load outlives it.
    case.cleanup
        .assert_none_left(&[], Duration::from_millis(500));
    let log = std::fs::read_to_string(case.tmp.path().join("run/load.log")).unwrap();
    assert!(
        log.contains("inferlint: the load command left 1 process running; stopped it"),
        "{log}\n{}",
        shown(&out)
    );
}

/// A background process that holds the load's output (`sleep MARK &`, a sleep of about
/// 80 days) does not make xray wait for it. The bound, from the load's end: the strays'
/// wait (2 s), the load's grace period (5 s, `sleep` ends on SIGTERM at once) and the
/// drain of the output (2 s); the whole run, server start and report included, is
/// asserted under 60 s, nowhere near the sleep.
#[test]
fn a_stray_holding_the_loads_output_is_not_waited_for() {
    let case = Case::new(1);
    let (port, marks) = (case.port, case.marks.clone());
    let load = format!("sleep {} & echo load done", marks.sleep(1));
    let started = Instant::now();
    let out = case.xray(&sim_serve(port), &["sh", "-c", &load], &[]);
    let took = started.elapsed();
    assert_ran(&out);
    assert!(took < Duration::from_secs(60), "xray took {took:?}");
    case.cleanup
        .assert_none_left(&[], Duration::from_millis(500));
    assert!(stdout(&out).contains("load done"), "{}", shown(&out));
}

/// A second SIGINT while the server (which ignores SIGTERM) is in its 30 s grace period
/// kills the whole tree at once: xray exits 130 well inside the grace period (10 s, the
/// bound on a kill), and at that moment nothing of the server or the load is alive.
#[test]
fn a_second_signal_kills_the_server_that_ignores_sigterm_at_once() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let case = Case::new(3);
    let (port, marks) = (case.port, case.marks.clone());
    let serve = format!(
        "sh -c 'trap \"\" TERM; {}; {}; sleep {}'",
        daemon(marks.sleep(1)),
        sim_serve(port),
        marks.sleep(2)
    );
    let target = url(port);
    let load = format!("trap \"\" TERM; sleep {}", marks.sleep(3));
    let mut xray = start_xray_with(
        case.tmp.path(),
        &xray_args(&target, &serve, &["sh", "-c", &load]),
        &[],
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let loading = format!("sleep {}", marks.sleep(3));
    while marked(&marks).iter().all(|(_, cmd)| cmd != &loading) {
        assert!(
            xray.try_wait().unwrap().is_none(),
            "xray ended before the load started"
        );
        assert!(Instant::now() < deadline, "the load never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    // xray's stderr, line by line, so that the second signal follows the first once xray
    // says it took it.
    let (lines, said) = std::sync::mpsc::channel::<String>();
    let stderr = xray.stderr.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = lines.send(line);
        }
    });
    let pid = Pid::from_raw(i32::try_from(xray.id()).unwrap());
    kill(pid, Signal::SIGINT).unwrap();
    // Into the clean stop: the load ignores SIGTERM too, so its 5 s grace runs from here,
    // and the server's 30 s after it.
    loop {
        let line = said
            .recv_timeout(Duration::from_secs(30))
            .expect("xray never said it took the first signal");
        if line.contains("inferlint: interrupted;") {
            break;
        }
    }
    kill(pid, Signal::SIGINT).unwrap();
    let second = Instant::now();
    let status = loop {
        if let Some(status) = xray.try_wait().unwrap() {
            break status;
        }
        assert!(
            second.elapsed() < Duration::from_secs(10),
            "xray still runs {:?} after the second signal",
            second.elapsed()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    // SIGKILL was sent and waited for before the exit; only the kernel's reaping is left.
    case.cleanup
        .assert_none_left(&[], Duration::from_millis(500));
}
