//! `inferlint xray` end to end, with `inferlint-sim serve` as the server and
//! `inferlint-sim load` (or a plain command) as the load, on 127.0.0.1 only.
//!
//! Each test gives its server a port of its own; the port is the marker by which the
//! test finds every process it caused, and each test asserts that none is left.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::USAGE;
use crate::common::{inferlint, no_panic, stderr, stdout};

/// The simulated server's binary: built beside `inferlint` (same target folder), once.
pub fn sim() -> &'static Path {
    static SIM: OnceLock<PathBuf> = OnceLock::new();
    SIM.get_or_init(|| {
        let inferlint = PathBuf::from(env!("CARGO_BIN_EXE_inferlint"));
        let sim =
            inferlint.with_file_name(format!("inferlint-sim{}", std::env::consts::EXE_SUFFIX));
        if !sim.is_file() {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let built = Command::new(cargo)
                .args(["build", "-p", "inferlint-sim", "--bin", "inferlint-sim"])
                .status()
                .expect("cargo runs");
            assert!(built.success(), "cannot build inferlint-sim");
        }
        sim
    })
}

pub use crate::common::free_port;

fn serve(port: u16, extra: &str) -> String {
    format!(
        "{} serve --engine vllm --port {port} {extra}",
        sim().display()
    )
}

pub fn url(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// Every live process (not a zombie), with its argv, from /proc.
pub fn live_processes() -> Vec<(u32, Vec<String>)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let argv: Vec<String> = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']))
            })
            .unwrap_or(true);
        if !zombie {
            found.push((pid, argv));
        }
    }
    found
}

/// Live processes whose command line mentions the port: the simulated server and load
/// of one test.
fn processes_of(port: u16) -> Vec<String> {
    let marker = port.to_string();
    live_processes()
        .into_iter()
        .filter(|(_, argv)| {
            let is_sim = argv.first().is_some_and(|a| a.ends_with("inferlint-sim"));
            let mentions = argv.iter().any(|a| a == &marker || a.contains(&url(port)));
            is_sim && mentions
        })
        .map(|(pid, argv)| format!("{pid}: {}", argv.join(" ")))
        .collect()
}

/// Asserts that no process of the test is left (a moment is allowed for the kernel to
/// reap what was just stopped).
pub fn assert_none_left(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_of(port);
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "processes left: {left:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts xray with a pinned environment; its output goes to files in `dir`'s parent.
fn start_xray(cwd: &Path, args: &[&str]) -> Child {
    start_xray_with(cwd, args, &[])
}

/// [`start_xray`] with more environment variables.
pub fn start_xray_with(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_inferlint"))
        .current_dir(cwd)
        .arg("xray")
        .args(args)
        .env_remove("INFERLINT_ENGINE")
        .env("COLUMNS", "88")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for xray with a bound; a run that hangs is killed and fails the test.
pub fn finish(mut child: Child) -> Output {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "xray did not end in 120 s:\n{}\n{}",
                stdout(&out),
                stderr(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn xray(cwd: &Path, args: &[&str]) -> Output {
    let out = finish(start_xray(cwd, args));
    no_panic(&out);
    out
}

pub fn code(out: &Output) -> Option<i32> {
    out.status.code()
}

pub fn shown(out: &Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", stdout(out), stderr(out))
}

/// Fails, showing everything xray printed, when its stdout lacks `text`.
#[track_caller]
fn assert_says(out: &Output, text: &str) {
    assert!(stdout(out).contains(text), "{}", shown(out));
}

/// `(tripwire, status)` of every result in a JSON array.
fn verdicts(results: &[Value]) -> Vec<(String, String)> {
    results
        .iter()
        .map(|r| {
            (
                r["tripwire"].as_str().unwrap().to_owned(),
                r["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

pub fn results_json(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("results.json")).unwrap();
    serde_json::from_str::<Vec<Value>>(&text).unwrap()
}

pub fn status_of(results: &[Value], tripwire: &str) -> Option<String> {
    results
        .iter()
        .rev()
        .find(|r| r["tripwire"] == tripwire)
        .map(|r| r["status"].as_str().unwrap().to_owned())
}

/// A simulated server the test starts itself (for the taken port and --url).
struct OwnServer(Child);

impl OwnServer {
    fn start(port: u16) -> OwnServer {
        let child = Command::new(sim())
            .args(["serve", "--engine", "vllm", "--port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = OwnServer(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the simulated server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The headline: a simulated vLLM that preempts. Every file lands in the folder, the
/// checks fail where the recordings' run failed, the server is stopped, and `report DIR`
/// reads the folder back to the same verdicts.
#[test]
fn a_preempting_run_is_checked_saved_and_stopped() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let load = format!(
        "{} load {} --num-prompts 32 --max-concurrency 32 --input-len 88 --output-len 1000 --result-file run/bench.json",
        sim().display(),
        url(port)
    );
    let serve = format!(
        "{} serve --case vllm-hybrid --port {port} --speed 200",
        sim().display()
    );
    let mut args = vec![
        "-o",
        "run",
        "--engine",
        "vllm",
        "--no-gpu",
        "--requested",
        "32",
        "--serve",
        &serve,
        "--",
    ];
    args.extend(load.split(' '));
    let out = xray(tmp.path(), &args);
    assert_eq!(code(&out), Some(1), "{}", shown(&out));
    let text = stdout(&out);
    for line in [
        "== engine: vLLM",
        "== is the GPU free?",
        "[ T2] N/A  --no-gpu",
        "== start the server (output in run/boot.log)",
        &format!(
            "[T13] PASS  the server at {} is the one xray started (pid ",
            url(port)
        ),
        "== boot log",
        "== probe: one request, then 8 at once",
        "[ T7] PASS",
        "== load: ",
        "== checks",
        "[ T1] TRIPWIRE-FAILED",
        "[ T8] TRIPWIRE-FAILED  requested 32 concurrent",
        "[T15] PASS",
        "== stop the server",
        "== what limited this run",
        "report: run/report.html",
        "files:  run",
    ] {
        assert!(text.contains(line), "missing {line:?}\n{}", shown(&out));
    }
    let dir = tmp.path().join("run");
    for file in [
        "boot.log",
        "before.snapshot.json",
        "after.snapshot.json",
        "run.series.jsonl",
        "load.log",
        "bench.json",
        "report.html",
        "results.json",
    ] {
        assert!(dir.join(file).is_file(), "no {file} in the run folder");
    }
    assert_none_left(port);

    let saved = results_json(&dir);
    assert_eq!(status_of(&saved, "T13").as_deref(), Some("pass"));
    assert_eq!(status_of(&saved, "T1").as_deref(), Some("fail"));
    // report DIR reads the folder back to the same verdicts for every check it makes.
    let report = inferlint(
        tmp.path(),
        &["report", "run", "--json", "--requested", "32"],
    );
    assert_eq!(code(&report), Some(1), "{}", shown(&report));
    let read_back = verdicts(&crate::common::json_results(&report));
    assert!(!read_back.is_empty());
    for (tripwire, status) in &read_back {
        assert_eq!(
            status_of(&saved, tripwire).as_ref(),
            Some(status),
            "{tripwire} differs between xray and report"
        );
    }
}

/// Ctrl-C during the load: the load ends, the server is stopped, exit 130.
#[test]
fn sigint_during_the_load_stops_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let serve = serve(port, "");
    let target = url(port);
    let sim_path = sim().display().to_string();
    let child = start_xray(
        tmp.path(),
        &[
            "-o",
            "run",
            "--engine",
            "vllm",
            "--no-gpu",
            "--no-probe",
            "--serve",
            &serve,
            "--",
            &sim_path,
            "load",
            &target,
            "--num-prompts",
            "100000",
            "--max-concurrency",
            "1",
            "--timeout",
            "100",
        ],
    );
    // The load prints its request rate once its test request came back and the main run
    // begins (as `vllm bench serve` does), and xray copies each line to load.log.
    let deadline = Instant::now() + Duration::from_secs(60);
    let log = tmp.path().join("run/load.log");
    while !std::fs::read_to_string(&log).is_ok_and(|t| t.contains("Traffic request rate:")) {
        assert!(
            Instant::now() < deadline,
            "the load never started its main run"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    signal(&child, nix::sys::signal::Signal::SIGINT);
    let out = finish(child);
    no_panic(&out);
    assert_eq!(code(&out), Some(130), "{}", shown(&out));
    assert_says(&out, "== stop the server");
    assert!(tmp.path().join("run/results.json").is_file());
    assert_none_left(port);
}

/// SIGTERM while the server boots (it never answers): stopped, exit 130.
#[test]
fn sigterm_during_boot_stops_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let serve = serve(port, "--hang");
    let child = start_xray(
        tmp.path(),
        &[
            "-o", "run", "--engine", "vllm", "--no-gpu", "--serve", &serve, "--", "true",
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while processes_of(port).is_empty() {
        assert!(Instant::now() < deadline, "the server never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    signal(&child, nix::sys::signal::Signal::SIGTERM);
    let out = finish(child);
    no_panic(&out);
    assert_eq!(code(&out), Some(130), "{}", shown(&out));
    assert_none_left(port);
}

fn signal(child: &Child, signal: nix::sys::signal::Signal) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, signal).unwrap();
}

/// A server that never gets ready: stopped after --ready-timeout, its boot log checked.
#[test]
fn a_server_that_never_gets_ready_is_stopped() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let serve = serve(port, "--hang");
    let out = xray(
        tmp.path(),
        &[
            "-o",
            "run",
            "--engine",
            "vllm",
            "--no-gpu",
            "--ready-timeout",
            "2",
            "--serve",
            &serve,
            "--",
            "true",
        ],
    );
    assert_eq!(code(&out), Some(1), "{}", shown(&out));
    let text = stdout(&out);
    assert!(
        text.contains("the server was not ready after 2 s"),
        "{}",
        shown(&out)
    );
    assert!(text.contains("== boot log"), "{}", shown(&out));
    assert!(text.contains("== stop the server"), "{}", shown(&out));
    assert!(!tmp.path().join("run/load.log").exists(), "the load ran");
    assert_none_left(port);
}

/// A server that dies on the probe's first request: T7 fails, the run stops early.
#[test]
fn a_server_that_dies_on_the_probe() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let serve = serve(port, "--die-on-request 1");
    let out = xray(
        tmp.path(),
        &[
            "-o", "run", "--engine", "vllm", "--no-gpu", "--serve", &serve, "--", "true",
        ],
    );
    assert_eq!(code(&out), Some(1), "{}", shown(&out));
    assert_says(&out, "[ T7] TRIPWIRE-FAILED  first request failed");
    let saved = results_json(&tmp.path().join("run"));
    assert_eq!(status_of(&saved, "T7").as_deref(), Some("fail"));
    assert_none_left(port);
}

/// The probe waited 300 s a completion whatever `--ready-timeout` said: a server that is
/// ready but whose first completion compiles for a minute held xray there a minute, then
/// passed T7. docs/xray.md: each probe request waits at most `--ready-timeout` when that
/// is shorter than 300 s. So with `--ready-timeout 5` the first request gives up after 5
/// s, T7 fails naming the timeout, and the run (load, checks, stop) ends long before the
/// minute is over.
#[test]
fn the_probe_follows_the_ready_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let serve = serve(port, "--cold-start-ms 60000");
    let started = Instant::now();
    let out = xray(
        tmp.path(),
        &[
            "-o",
            "run",
            "--engine",
            "vllm",
            "--no-gpu",
            "--ready-timeout",
            "5",
            "--serve",
            &serve,
            "--",
            "true",
        ],
    );
    let took = started.elapsed();
    assert_says(&out, "[ T7] TRIPWIRE-FAILED  first request failed: ");
    assert_says(&out, "timed out after 5");
    assert!(
        took < Duration::from_secs(45),
        "took {took:?}: {}",
        shown(&out)
    );
    let saved = results_json(&tmp.path().join("run"));
    assert_eq!(status_of(&saved, "T7").as_deref(), Some("fail"));
    assert_none_left(port);
}

/// A load command that fails before it sends a request: the run is not a benchmark.
/// xray says so and exits 2; T8 gives no verdict on a load that never ran (it used to
/// fail: "requested 8 concurrent, server never ran more than 0"). The after snapshot is
/// still taken and the server stopped, and `report DIR` reads the folder the same way.
#[test]
fn a_failing_load_is_not_a_benchmark() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let serve = serve(port, "");
    let out = xray(
        tmp.path(),
        &[
            "-o",
            "run",
            "--engine",
            "vllm",
            "--no-gpu",
            "--no-probe",
            "--requested",
            "8",
            "--serve",
            &serve,
            "--",
            "false",
        ],
    );
    assert_eq!(code(&out), Some(2), "{}", shown(&out));
    assert_says(&out, "the load command exited with code 1");
    assert_says(&out, "This run was not a benchmark");
    assert!(
        !stdout(&out).contains("server never ran more than 0"),
        "{}",
        shown(&out)
    );
    let run = tmp.path().join("run");
    assert!(run.join("after.snapshot.json").is_file());
    let saved = results_json(&run);
    assert_eq!(status_of(&saved, "T8").as_deref(), Some("not_checked"));
    assert_none_left(port);
    // The folder alone: the server finished no request between the readings.
    let again = inferlint(tmp.path(), &["report", "run", "--requested", "8", "--json"]);
    no_panic(&again);
    assert_eq!(again.status.code(), Some(2), "{}", shown(&again));
    let results: Vec<Value> = serde_json::from_str(&stdout(&again)).unwrap();
    let t8 = results.iter().find(|r| r["tripwire"] == "T8").unwrap();
    assert_eq!(t8["status"], "not_checked");
    assert!(t8["message"]
        .as_str()
        .unwrap()
        .starts_with("not a benchmark: the server finished no request"));
}

/// A server whose program is not installed never started: T12 fails with the cause
/// (it used to pass: the empty boot log showed no failure).
#[test]
fn a_server_that_cannot_start_fails_t12_with_the_cause() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let missing = format!("inferlint-no-such-engine-{port}");
    let cases = [
        // Started directly, the program is not found.
        (
            format!("{missing} serve m"),
            format!("could not start: {missing}: command not found"),
        ),
        // Through a shell, the same server exits 127 before it is ready.
        (
            format!("sh -c '{missing} serve m'"),
            "could not start: the server exited with code 127 (command not found) before it was ready".to_owned(),
        ),
    ];
    for (i, (serve, cause)) in cases.iter().enumerate() {
        let dir = format!("run{i}");
        let out = xray(
            tmp.path(),
            &[
                "-o",
                &dir,
                "--engine",
                "vllm",
                "--no-gpu",
                "--url",
                &url(port),
                "--serve",
                serve,
                "--",
                "true",
            ],
        );
        assert_eq!(code(&out), Some(1), "{}", shown(&out));
        assert_says(&out, &format!("[T12] TRIPWIRE-FAILED  {cause}"));
        assert!(!stdout(&out).contains("[T12] PASS"), "{}", shown(&out));
    }
    assert_none_left(port);
}

/// A port already served by another server: T13 fails, nothing is started or stopped.
#[test]
fn a_taken_port_fails_t13_and_touches_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut other = OwnServer::start(port);
    let serve = serve(port, "");
    let out = xray(
        tmp.path(),
        &[
            "-o", "run", "--engine", "vllm", "--no-gpu", "--serve", &serve, "--", "true",
        ],
    );
    assert_eq!(code(&out), Some(1), "{}", shown(&out));
    assert_says(
        &out,
        &format!(
            "[T13] TRIPWIRE-FAILED  something already answers at {}",
            url(port)
        ),
    );
    assert!(
        !tmp.path().join("run/boot.log").exists(),
        "a server was started"
    );
    assert!(!stdout(&out).contains("== stop the server"));
    assert!(other.alive(), "the other server was stopped");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    let saved = results_json(&tmp.path().join("run"));
    assert_eq!(status_of(&saved, "T13").as_deref(), Some("fail"));
    drop(other);
    assert_none_left(port);
}

/// xray on a server it did not start (`--url`), with no probe and a short load, writing
/// into `run`; `extra` flags go before `--url`.
fn xray_on_url(dir: &Path, target: &str, extra: &[&str]) -> Output {
    let mut args = vec!["-o", "run"];
    args.extend_from_slice(extra);
    args.extend(["--url", target, "--no-probe", "--", "sleep", "0.5"]);
    xray(dir, &args)
}

/// A server of another engine than the one named is refused in the words every command
/// uses for it (xray used to word its own), and xray stops nothing it did not start.
#[test]
fn a_named_engine_refuses_a_server_of_another_as_every_command_does() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut server = OwnServer::start(port);
    let target = url(port);
    let out = xray_on_url(tmp.path(), &target, &["--engine", "sglang"]);
    assert_eq!(code(&out), Some(2), "{}", shown(&out));
    let expected = format!(
        "--engine sglang, but the server at {} runs vLLM. Check the server address or the file, or name the engine it came from.",
        target.trim_end_matches('/')
    );
    assert!(
        stdout(&out).contains(&format!("stopped early: {expected}")),
        "{}",
        shown(&out)
    );
    assert!(server.alive(), "xray stopped a server it did not start");
    drop(server);
    assert_none_left(port);
}

/// --url without --serve: the server is checked as it is and left running.
#[test]
fn url_without_serve_stops_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut server = OwnServer::start(port);
    let target = url(port);
    let out = xray_on_url(tmp.path(), &target, &[]);
    assert_ne!(code(&out), Some(130), "{}", shown(&out));
    let text = stdout(&out);
    assert!(
        text.contains("== engine: vLLM (from its metrics)"),
        "{}",
        shown(&out)
    );
    assert!(!text.contains("== stop the server"), "{}", shown(&out));
    assert!(server.alive(), "xray stopped a server it did not start");
    let saved = results_json(&tmp.path().join("run"));
    assert_eq!(status_of(&saved, "T13").as_deref(), Some("not_applicable"));
    // Nothing vanishes: no probe, no boot log, and a load that sent no request.
    assert_eq!(status_of(&saved, "T7").as_deref(), Some("not_checked"));
    assert_eq!(status_of(&saved, "T12").as_deref(), Some("not_checked"));
    assert_eq!(status_of(&saved, "T8").as_deref(), Some("not_checked"));
    assert_says(&out, "[T12] NOT-CHECKED  needs the server's boot log");
    assert_says(&out, "This run was not a benchmark");
    assert_eq!(code(&out), Some(2), "{}", shown(&out));
    assert!(tmp.path().join("run/after.snapshot.json").is_file());
    drop(server);
    assert_none_left(port);
}

/// The engine named and the --serve command's disagree: stop before anything starts.
#[test]
fn an_engine_mismatch_starts_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = xray(
        tmp.path(),
        &[
            "-o",
            "run",
            "--engine",
            "sglang",
            "--serve",
            "vllm serve some-model",
            "--",
            "true",
        ],
    );
    assert_eq!(code(&out), Some(2), "{}", shown(&out));
    assert!(
        stderr(&out).contains("--engine sglang, but the --serve command starts vLLM."),
        "{}",
        shown(&out)
    );
    assert!(!tmp.path().join("run").exists());
}

/// No load command after `--`: a usage error.
#[test]
fn no_load_command_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = xray(tmp.path(), &["-o", "run", "--no-gpu"]);
    assert_eq!(code(&out), Some(USAGE), "{}", shown(&out));
    assert!(stderr(&out).contains("give the load command after --"));
    let out = xray(tmp.path(), &["-o", "run", "--json", "--", "true"]);
    assert_eq!(code(&out), Some(USAGE), "{}", shown(&out));
    assert!(stderr(&out).contains("results.json"));
    assert!(!tmp.path().join("run").exists());
}

/// SGLang prints no version in its log; xray asks the server (`/get_server_info`), so
/// the report's head and the results name it.
#[test]
fn sglang_version_comes_from_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let serve = format!(
        "{} serve --engine sglang --port {port} --speed 200",
        sim().display()
    );
    let load = format!(
        "{} load {} --num-prompts 4 --max-concurrency 4 --input-len 16 --output-len 32 --result-file elsewhere.json",
        sim().display(),
        url(port)
    );
    // An unknown load tool's result file, outside the run folder, named with --bench-result.
    let mut args = vec![
        "-o",
        "run",
        "--no-gpu",
        "--no-probe",
        "--requested",
        "4",
        "--bench-result",
        "elsewhere.json",
        "--serve",
        &serve,
        "--",
    ];
    args.extend(load.split(' '));
    let out = xray(tmp.path(), &args);
    assert!(matches!(code(&out), Some(0..=2)), "{}", shown(&out));
    let page = std::fs::read_to_string(tmp.path().join("run/report.html")).unwrap();
    assert!(page.contains("0.5.20"), "the report names SGLang's version");
    let results = results_json(&tmp.path().join("run"));
    assert!(
        status_of(&results, "T15").is_some(),
        "T15 from --bench-result: {results:?}"
    );
    assert_none_left(port);
}

/// xray into an earlier run's folder wrote over its files and then read the old
/// bench.json as this run's result, failing T15 on a mix of two runs. The folder is
/// refused; with --force the earlier run moves aside whole, and no file older than this
/// run's load is read as its result.
#[test]
fn an_earlier_runs_folder_is_never_mixed_with_a_new_run() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let serve = serve(port, "");
    let run = tmp.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let old_bench = r#"{"completed": 999, "total_output_tokens": 1, "max_concurrency": 4}"#;
    std::fs::write(run.join("bench.json"), old_bench).unwrap();
    std::fs::write(run.join("boot.log"), "the earlier run's log\n").unwrap();
    let args = |extra: &[&'static str]| {
        let mut args: Vec<String> = ["-o", "run", "--engine", "vllm", "--no-gpu", "--no-probe"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args.extend([
            "--serve".to_owned(),
            serve.clone(),
            "--".to_owned(),
            "true".to_owned(),
        ]);
        args
    };
    let refused = xray(
        tmp.path(),
        &args(&[]).iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_eq!(code(&refused), Some(USAGE), "{}", shown(&refused));
    assert!(
        stderr(&refused).contains("run is not empty (an earlier run?)"),
        "{}",
        shown(&refused)
    );
    assert_eq!(
        std::fs::read_to_string(run.join("bench.json")).unwrap(),
        old_bench
    );
    assert_none_left(port);

    let out = xray(
        tmp.path(),
        &args(&["--force"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(matches!(code(&out), Some(0..=2)), "{}", shown(&out));
    let aside: Vec<_> = std::fs::read_dir(&run)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("earlier-")
        })
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        std::fs::read_to_string(aside[0].join("bench.json")).unwrap(),
        old_bench
    );
    assert!(!run.join("bench.json").exists());
    assert_ne!(
        std::fs::read_to_string(run.join("boot.log")).unwrap(),
        "the earlier run's log\n"
    );
    let t15 = status_of(&results_json(&run), "T15");
    assert!(
        !matches!(t15.as_deref(), Some("pass" | "fail")),
        "no old result read: T15 {t15:?}"
    );
    assert_none_left(port);

    // A result file named with --bench-result that this run's load did not write.
    std::fs::write(tmp.path().join("old.json"), old_bench).unwrap();
    let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(tmp.path().join("old.json"))
        .unwrap()
        .set_modified(an_hour_ago)
        .unwrap();
    let mut with_old = args(&[]);
    with_old[1] = "run2".to_owned();
    with_old.splice(2..2, ["--bench-result".to_owned(), "old.json".to_owned()]);
    let out = xray(
        tmp.path(),
        &with_old.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert!(
        stderr(&out).contains("old.json is older than this run's load"),
        "{}",
        shown(&out)
    );
    let t15 = status_of(&results_json(&tmp.path().join("run2")), "T15");
    assert!(
        !matches!(t15.as_deref(), Some("pass" | "fail")),
        "T15 {t15:?}"
    );
    assert_none_left(port);
}

/// A load tool xray does not drive but knows (here a stand-in named `aiperf` that leaves
/// AIPerf's real export files in the artifact folder its command names, outside the run
/// folder): xray finds the result it wrote during the load, reads it, and names the tool
/// on its terminal and in the report's head.
#[test]
fn another_load_tools_result_is_found_and_named() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let serve = serve(port, "");
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let tool = bin.join("aiperf");
    let export = crate::common::fixtures().join("loadtools/aiperf/some-errored/aiperf");
    // The stand-in writes AIPerf's real export as if it had run now: every time in it
    // (the records' `*_ns` stamps, the summary's zoneless local `start_time` and
    // `end_time`) moved by one offset, so the file is this run's as a real AIPerf's would
    // be; a copy of the old file as it is belongs to another run, and xray sets it aside.
    std::fs::write(
        &tool,
        format!(
            r#"#!/usr/bin/env python3
# aiperf profile --url URL --artifact-dir DIR
import datetime, json, os, sys, time
src, out = '{0}', sys.argv[5]
os.makedirs(out, exist_ok=True)
lines = [json.loads(l) for l in open(os.path.join(src, 'profile_export.jsonl'))]
first = min(l['metadata']['credit_issued_ns'] for l in lines)
shift = time.time_ns() - first
for l in lines:
    for k, v in l['metadata'].items():
        if k.endswith('_ns') and isinstance(v, int):
            l['metadata'][k] = v + shift
with open(os.path.join(out, 'profile_export.jsonl'), 'w') as f:
    f.writelines(json.dumps(l) + '\n' for l in lines)
summary = json.load(open(os.path.join(src, 'profile_export_aiperf.json')))
for k in ('start_time', 'end_time'):
    t = datetime.datetime.fromisoformat(summary[k]) + datetime.timedelta(microseconds=shift // 1000)
    summary[k] = t.isoformat()
json.dump(summary, open(os.path.join(out, 'profile_export_aiperf.json'), 'w'))
# As long as the run it stands for took, so the readings after it bracket it.
last = max(v for l in lines for k, v in l['metadata'].items() if k.endswith('_ns') and isinstance(v, int))
time.sleep(max(0, last - time.time_ns()) / 1e9 + 0.2)
"#,
            export.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let tool = tool.display().to_string();
    let target = url(port);
    let out = xray(
        tmp.path(),
        &[
            "-o",
            "run",
            "--engine",
            "vllm",
            "--no-gpu",
            "--no-probe",
            "--serve",
            &serve,
            "--",
            &tool,
            "profile",
            "--url",
            &target,
            "--artifact-dir",
            "art",
        ],
    );
    assert_says(
        &out,
        "load tool: AIPerf 0.13.0, its result in art/profile_export_aiperf.json",
    );
    let run = tmp.path().join("run");
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(
        html.contains("load: AIPerf 0.13.0"),
        "the report's head names the tool"
    );
    let saved = results_json(&run);
    // The export says 6 of 32 failed: T18 reads them from it.
    assert_eq!(status_of(&saved, "T18").as_deref(), Some("fail"));
    assert_none_left(port);
}
