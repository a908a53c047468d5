//! /proc and signals on a real process this test starts (Linux): it renames itself as
//! vLLM's engine does, is found by that name alone, survives a signal aimed at a wrong
//! start time (a reused PID) and stops at one aimed at its own.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Kills the child on every path out of the test; by the handle, so only our own child.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The real Python interpreter (not a pyenv or venv shim script). The tests that need it
/// are ignored unless the build found `python3` or `CI` was set (build.rs:
/// `cfg(python3)`); one that runs without it fails here.
pub fn python() -> String {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .expect("no python3 that runs on PATH: these tests start their processes with it");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
#[cfg_attr(not(python3), ignore = "needs python3 on PATH")]
fn a_renamed_process_is_found_and_signalled_only_by_its_start_time() {
    use inferlint_core::Engine;
    use inferlint_gpu::procs::{
        read_process, read_process_table, send_signal, SignalOutcome, StopSignal,
    };
    use inferlint_gpu::servers::{discover, match_server, Scope};

    let python = python();
    let child = Command::new(python)
        .args([
            "-c",
            // A session of its own, so that no other test that looks only at its own
            // session sees this look-alike engine.
            "import ctypes, os, time\n\
             os.setsid()\n\
             ctypes.CDLL(None).prctl(15, b'VLLM::EngineCore', 0, 0, 0)\n\
             print('ready', flush=True)\n\
             time.sleep(600)",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut guard = KillOnDrop(child);
    let pid = guard.0.id();
    let mut line = String::new();
    BufReader::new(guard.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");

    let p = read_process(pid).unwrap();
    assert_eq!(p.comm, "VLLM::EngineCor", "comm holds 15 characters");
    assert_eq!(p.ppid, std::process::id());
    assert_eq!(match_server(&p).unwrap().engine, Engine::Vllm);
    let found = discover(
        &read_process_table().unwrap(),
        std::process::id(),
        Scope::Everything,
    );
    assert!(found
        .targets
        .iter()
        .any(|t| t.pid == pid && t.name == "VLLM::EngineCor"));

    // A PID whose start time changed is another process: never signalled.
    assert_eq!(
        send_signal(pid, p.start_time + 1, StopSignal::Term),
        SignalOutcome::Reused
    );
    assert!(read_process(pid).unwrap().is_alive());

    assert_eq!(
        send_signal(pid, p.start_time, StopSignal::Term),
        SignalOutcome::Sent
    );
    let status = guard.0.wait().unwrap();
    assert!(!status.success());
    // Reaped: the PID is gone, or already someone else's.
    assert_ne!(
        send_signal(pid, p.start_time, StopSignal::Term),
        SignalOutcome::Sent
    );
}
