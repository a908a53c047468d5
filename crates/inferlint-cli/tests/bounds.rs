//! Every input and every wait bounded: `watch --targets` by the input rules (a FIFO or a
//! device refused at once), `probe --timeout` ending a completion that never comes.
//! Every server here is on 127.0.0.1 and stops with the test; every inferlint started is
//! killed by its handle if it overruns its bound.

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{no_panic, stderr, stdout, UNUSABLE_INPUT};

/// Kills the child by its handle when dropped, whatever path leaves the test.
struct Killed(Option<Child>);

impl Drop for Killed {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs inferlint, asserting it ends within `bound`; killed otherwise.
#[track_caller]
fn within(cwd: &Path, args: &[&str], bound: Duration) -> (Output, Duration) {
    let started = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_inferlint"))
        .current_dir(cwd)
        .args(args)
        .env_remove("INFERLINT_ENGINE")
        .env("COLUMNS", "88")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut guard = Killed(Some(child));
    loop {
        let child = guard.0.as_mut().unwrap();
        if child.try_wait().unwrap().is_some() {
            let out = guard.0.take().unwrap().wait_with_output().unwrap();
            return (out, started.elapsed());
        }
        assert!(
            started.elapsed() < bound,
            "inferlint {args:?} still runs after {bound:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `watch --targets` with a FIFO (no writer: a plain read blocks for ever) or
/// `/dev/zero` (never ends) is refused at once with exit 65, nothing recorded.
#[cfg(unix)]
#[test]
fn watch_targets_that_are_a_fifo_or_a_device_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let made = Command::new("mkfifo")
        .arg(dir.path().join("targets.fifo"))
        .status()
        .unwrap();
    assert!(made.success());
    for (targets, words) in [
        ("targets.fifo", "a pipe (FIFO)"),
        ("/dev/zero", "a character device"),
    ] {
        let (out, _) = within(
            dir.path(),
            &["watch", "--targets", targets, "-o", "fleet"],
            Duration::from_secs(20),
        );
        no_panic(&out);
        assert_eq!(out.status.code(), Some(UNUSABLE_INPUT), "{}", stderr(&out));
        assert!(stderr(&out).contains(words), "{}", stderr(&out));
        assert!(!dir.path().join("fleet").exists());
    }
}

/// `probe --timeout 1` against a server that accepts and never answers: the completion
/// fails after 1 s, and the health check after it takes its own 10 s, so the probe ends
/// well within 30 s (without the flag each completion waited 300 s). T7 fails.
#[test]
fn probe_timeout_ends_a_completion_that_never_comes() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopping = std::sync::Arc::clone(&stop);
    // Accepts and reads, never answers; ends when the test does.
    let silent = std::thread::spawn(move || {
        let mut held = Vec::new();
        while !stopping.load(std::sync::atomic::Ordering::SeqCst) {
            if let Ok((mut stream, _)) = listener.accept() {
                let _ = stream.set_nonblocking(true);
                let mut sink = [0u8; 1024];
                let _ = stream.read(&mut sink);
                held.push(stream);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let args = [
        "probe",
        url.as_str(),
        "--model",
        "m",
        "--concurrency",
        "1",
        "--timeout",
        "1",
    ];
    let (out, took) = within(dir.path(), &args, Duration::from_secs(30));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    silent.join().unwrap();
    no_panic(&out);
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(
        stdout(&out).contains("first request failed: timed out after 1 s"),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
}

/// `probe --timeout` takes seconds above 0 and at most a day.
#[test]
fn probe_timeout_out_of_range_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for value in ["0", "-1", "86401", "nan"] {
        let (out, _) = within(
            dir.path(),
            &["probe", "http://127.0.0.1:9", &format!("--timeout={value}")],
            Duration::from_secs(20),
        );
        assert_eq!(out.status.code(), Some(64), "{value}: {}", stderr(&out));
        assert!(stderr(&out).contains("--timeout"), "{}", stderr(&out));
    }
}

/// `report --prometheus` over a year at `--step 0.001` would take 2.9 million range
/// queries: refused with exit 64 naming the bound and the numbers, before any range
/// query is sent.
#[test]
fn a_prometheus_window_of_too_many_queries_is_refused_before_any_is_sent() {
    use inferlint_sim::prometheus::{self as fake, FleetHistory};
    const START_MS: i64 = 1_764_547_200_000;
    let prometheus = fake::spawn(FleetHistory::new(2, START_MS, 1000, 10), 0).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let start = (START_MS / 1000).to_string();
    let end = (START_MS / 1000 + 365 * 86_400).to_string();
    let args = [
        "report",
        "--prometheus",
        prometheus.base_url.as_str(),
        "--start",
        start.as_str(),
        "--end",
        end.as_str(),
        "--step",
        "0.001",
    ];
    let (out, _) = within(dir.path(), &args, Duration::from_secs(60));
    no_panic(&out);
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "inferlint: a window of 31,536,000 s at a step of 0.001 s takes 2,866,910 range queries of at most 11,000 points, more than the 1,000 one read sends: give a shorter window or a longer --step\n"
    );
    assert_eq!(
        prometheus
            .max_points_asked
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
}
