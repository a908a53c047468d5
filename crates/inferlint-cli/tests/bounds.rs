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

/// `probe --timeout 1` against a server that accepts a completion and never answers it:
/// the completion fails after 1 s (without the flag each completion waited 300 s), and
/// T7 fails naming the timeout. The server answers `GET /health` (which the probe asks
/// after a failed completion, to say whether the server still lives) at once, so the
/// probe ends on the completion's bound and not on the health check's own 10 s.
#[test]
fn probe_timeout_ends_a_completion_that_never_comes() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopping = std::sync::Arc::clone(&stop);
    // Reads each request's head; answers `/health`, holds every other request unanswered;
    // ends when the test does.
    let silent = std::thread::spawn(move || {
        let mut held = Vec::new();
        while !stopping.load(std::sync::atomic::Ordering::SeqCst) {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    if answer_health(&mut stream) {
                        continue;
                    }
                    held.push(stream);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
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

/// Reads a request's head (up to its blank line, at most 5 s and 64 KiB) and answers it
/// with 200 and `{}` when it is `GET /health`; says whether it answered.
fn answer_health(stream: &mut std::net::TcpStream) -> bool {
    use std::io::Write;
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 65_536 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    if !head.starts_with(b"GET /health ") {
        return false;
    }
    let _ = stream.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    );
    true
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

/// A stand-in in front of a simulated server whose first connection waits `first_delay`
/// before it is passed on: a replica whose first scrape is slow. On 127.0.0.1; its
/// threads end with the test process, holding nothing but sockets.
fn slow_first_answer(upstream: std::net::SocketAddr, first_delay: Duration) -> String {
    use std::io::copy;
    use std::net::TcpStream;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut first = true;
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let delay = if first { first_delay } else { Duration::ZERO };
            first = false;
            std::thread::spawn(move || {
                std::thread::sleep(delay);
                let Ok(server) = TcpStream::connect(upstream) else {
                    return;
                };
                let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let up = std::thread::spawn(move || {
                    let _ = copy(&mut c2, &mut s2);
                    let _ = s2.shutdown(std::net::Shutdown::Write);
                });
                let (mut client, mut server) = (client, server);
                let _ = copy(&mut server, &mut client);
                let _ = client.shutdown(std::net::Shutdown::Write);
                let _ = up.join();
            });
        }
    });
    format!("http://127.0.0.1:{port}")
}

/// One replica whose first scrape takes 3 s (interval 0.5 s): every replica's first
/// scrape is asked at once and the schedule starts once all have answered, so no
/// replica records a gap for it, and no gap anywhere says a scrape took 0.000 s (before,
/// the healthy replica recorded 5 missed slots, "the scrape took 0.000 s").
#[test]
fn a_replica_whose_first_scrape_is_slow_puts_no_gap_in_any_recording() {
    use inferlint_core::Engine;
    use inferlint_sim::server::{self, ServerConfig};
    let healthy = server::spawn(ServerConfig::new(Engine::Vllm)).unwrap();
    let behind = server::spawn(ServerConfig::new(Engine::Vllm)).unwrap();
    let slow = slow_first_answer(behind.addr, Duration::from_secs(3));
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "watch",
        slow.as_str(),
        healthy.base_url.as_str(),
        "-o",
        "fleet",
        "--interval",
        "0.5",
        "--duration",
        "6",
    ];
    let (out, _) = within(dir.path(), &args, Duration::from_secs(60));
    no_panic(&out);
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("fleet/fleet.json")).unwrap(),
    )
    .unwrap();
    let folder = |i: usize| {
        dir.path()
            .join("fleet")
            .join(manifest["replicas"][i]["folder"].as_str().unwrap())
            .join("run.series.jsonl")
    };
    let gaps = |i: usize| -> Vec<String> {
        std::fs::read_to_string(folder(i))
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v.get("gap").and_then(|g| g.as_str()).map(str::to_owned))
            .collect()
    };
    assert_eq!(gaps(1), Vec::<String>::new(), "{}", stderr(&out));
    assert_eq!(gaps(0), Vec::<String>::new(), "{}", stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
