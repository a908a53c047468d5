//! A real Prometheus (Debian's `prometheus` package) scraping three simulated vLLM
//! servers every second while a load runs on them, one far harder than the others; then
//! `report --prometheus` must give, replica by replica, the verdicts that `watch` and
//! `snapshot` recorded directly give, and T22 must fail on both.
//!
//! The test starts its own Prometheus (its configuration and storage in a temporary
//! folder, listening on 127.0.0.1 only) and stops it by its PID on every path, through a
//! guard. It is ignored, saying so, unless the build found `prometheus` or `CI` was set
//! (build.rs: `cfg(prometheus)`); then a missing `prometheus` fails it.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use inferlint_core::Engine;
use inferlint_sim::load::{self, LoadConfig};
use inferlint_sim::server::{self, ServerConfig};
use serde_json::Value;

use crate::common::{inferlint, json_results, no_panic, spawn_inferlint, stderr};

/// A process this test started, killed (by its PID) and reaped when dropped.
struct Started(Child);

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn prometheus_binary() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("prometheus"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let debian = PathBuf::from("/usr/bin/prometheus");
        debian.is_file().then_some(debian)
    })
}

use crate::common::free_port;

fn wall_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// GET on 127.0.0.1 with HTTP/1.0 (the answer ends when the server closes).
fn get(port: u16, path: &str) -> Option<String> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
}

/// Waits until Prometheus has scraped every target and found it up.
fn wait_until_scraped(port: u16, targets: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Some(body) = get(port, "/api/v1/query?query=up%3D%3D1") {
            if let Ok(v) = serde_json::from_str::<Value>(&body) {
                if v["data"]["result"]
                    .as_array()
                    .is_some_and(|r| r.len() == targets)
                {
                    return;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("prometheus did not scrape the {targets} targets within 60 s");
}

/// Waits until every replica's recording under `dir` (`watch -o dir`) holds a sample
/// taken at or after `since` (wall seconds): watch has read each server then.
fn wait_until_recorded_since(dir: &Path, replicas: usize, since: f64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let series: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("run.series.jsonl"))
            .filter(|p| p.is_file())
            .collect();
        let last_walls: Vec<f64> = series
            .iter()
            .filter_map(|p| {
                let text = std::fs::read_to_string(p).ok()?;
                // The last whole sample (a line being written does not parse).
                text.lines()
                    .rev()
                    .find_map(|l| serde_json::from_str::<Value>(l).ok()?["t_wall"].as_f64())
            })
            .collect();
        if last_walls.len() == replicas && last_walls.iter().all(|&t| t >= since) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "watch recorded no sample of every replica after {since} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until Prometheus holds a scrape of each of `targets` taken at or after `since`
/// (wall seconds): `timestamp(up)` is when each target was last scraped.
fn wait_until_scraped_since(port: u16, targets: usize, since: f64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stamps: Vec<f64> = get(port, "/api/v1/query?query=timestamp(up)")
            .and_then(|body| serde_json::from_str::<Value>(&body).ok())
            .and_then(|v| {
                v["data"]["result"].as_array().map(|r| {
                    r.iter()
                        .filter_map(|s| s["value"][1].as_str()?.parse::<f64>().ok())
                        .collect()
                })
            })
            .unwrap_or_default();
        if stamps.len() == targets && stamps.iter().all(|&t| t >= since) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "prometheus scraped no target after {since} within 30 s: {stamps:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// (tripwire, replica port) -> status, for the verdicts (pass, warn, fail, unknown).
fn verdicts(
    results: &[Value],
    port_of: impl Fn(&str) -> String,
) -> BTreeMap<(String, String), String> {
    results
        .iter()
        .filter(|r| {
            ["pass", "warn", "fail", "unknown"].contains(&r["status"].as_str().unwrap_or(""))
        })
        .map(|r| {
            let replica = r["evidence"]
                .get("replica")
                .and_then(Value::as_str)
                .map_or_else(|| "fleet".to_owned(), &port_of);
            (
                (r["tripwire"].as_str().unwrap().to_owned(), replica),
                r["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn port_in(name: &str) -> String {
    name.trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap_or(name)
        .to_owned()
}

#[test]
#[cfg_attr(
    not(prometheus),
    ignore = "needs prometheus on PATH or at /usr/bin/prometheus (apt-get install prometheus)"
)]
fn report_from_a_real_prometheus_equals_watch_replica_by_replica() {
    let binary = prometheus_binary().expect(
        "no prometheus on PATH or at /usr/bin/prometheus: this test needs it (.ci/run installs Debian's package)",
    );
    // Real-speed servers: the load's requests last seconds, long enough for readings
    // every second to see them.
    // Replica 1 runs at a twentieth of real speed, so that each of its short requests
    // lasts seconds and every reading, whenever taken, sees it.
    let servers: Vec<_> = [2.0, 0.05, 2.0]
        .into_iter()
        .map(|speed| {
            server::spawn(ServerConfig {
                speed,
                ..ServerConfig::new(Engine::Vllm)
            })
            .unwrap()
        })
        .collect();
    let ports: Vec<u16> = servers.iter().map(|s| s.addr.port()).collect();
    let dir = tempfile::tempdir().unwrap();
    let prom_port = free_port();
    let config = dir.path().join("prometheus.yml");
    let targets: Vec<String> = ports.iter().map(|p| format!("'127.0.0.1:{p}'")).collect();
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: vllm\n    static_configs:\n      - targets: [{}]\n",
            targets.join(", ")
        ),
    )
    .unwrap();
    let _prometheus = Started(
        Command::new(&binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until_scraped(prom_port, 3);

    // Directly: a snapshot of each replica before, watch of the fleet during the load, a
    // snapshot after.
    let urls: Vec<String> = servers.iter().map(|s| s.base_url.clone()).collect();
    let snapshot = |url: &str, file: &Path| {
        let out = inferlint(dir.path(), &["snapshot", url, "-o", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    };
    for (i, url) in urls.iter().enumerate() {
        snapshot(url, &dir.path().join(format!("before-{i}.json")));
    }
    let start = wall_now();
    let mut watch = Started(spawn_inferlint(
        dir.path(),
        &[
            "watch",
            &urls[0],
            &urls[1],
            &urls[2],
            "-o",
            "direct",
            "--interval",
            "1",
        ],
        Stdio::null(),
    ));
    // Watch has read every server before the load begins.
    wait_until_recorded_since(&dir.path().join("direct"), urls.len(), start);
    // Replica 0 gets far more than its cache holds. Replica 1 gets one short request at
    // a time, each within one KV block from start to end, so that every reading of it,
    // whenever taken, shows the same share of the cache (a request that grows across
    // blocks is read at other sizes by recorders at other phases, and T9 then depends on
    // when each recorder happened to look). Replica 2 idles.
    let loads: Vec<_> = urls
        .iter()
        .take(2)
        .enumerate()
        .map(|(i, url)| {
            let url = url.clone();
            let config = if i == 0 {
                LoadConfig {
                    requests: 48,
                    concurrency: 24,
                    prompt_tokens: 64,
                    output_tokens: 200,
                    timeout_s: 120.0,
                    ..LoadConfig::default()
                }
            } else {
                LoadConfig {
                    requests: 4,
                    concurrency: 1,
                    prompt_tokens: 1,
                    output_tokens: 12,
                    timeout_s: 120.0,
                    ..LoadConfig::default()
                }
            };
            std::thread::spawn(move || load::run_with_output(&url, config, &mut |_| {}))
        })
        .collect();
    for l in loads {
        l.join().unwrap().unwrap();
    }
    // Both recorders have read every server after the load ended.
    let loaded = wall_now();
    wait_until_recorded_since(&dir.path().join("direct"), urls.len(), loaded);
    wait_until_scraped_since(prom_port, urls.len(), loaded);
    for (i, url) in urls.iter().enumerate() {
        snapshot(url, &dir.path().join(format!("after-{i}.json")));
    }
    let end = wall_now();
    // Stop watch as Ctrl-C would (SIGINT by PID), and let it end cleanly.
    let child = &mut watch.0;
    let pid = child.id().to_string();
    let _ = Command::new("kill").args(["-INT", &pid]).status();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "watch did not stop on SIGINT");
        std::thread::sleep(Duration::from_millis(50));
    }
    let direct = dir.path().join("direct");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(direct.join("fleet.json")).unwrap()).unwrap();
    for replica in manifest["replicas"].as_array().unwrap() {
        let i = urls.iter().position(|u| *u == replica["name"]).unwrap();
        let folder = direct.join(replica["folder"].as_str().unwrap());
        std::fs::rename(
            dir.path().join(format!("before-{i}.json")),
            folder.join("before.snapshot.json"),
        )
        .unwrap();
        std::fs::rename(
            dir.path().join(format!("after-{i}.json")),
            folder.join("after.snapshot.json"),
        )
        .unwrap();
    }
    // Prometheus holds the last scrape of the window.
    wait_until_scraped_since(prom_port, urls.len(), end);

    let watched = inferlint(dir.path(), &["report", "direct", "--json"]);
    no_panic(&watched);
    let prom_url = format!("http://127.0.0.1:{prom_port}");
    let (start, end) = (format!("{start:.3}"), format!("{end:.3}"));
    let read = inferlint(
        dir.path(),
        &[
            "report",
            "--prometheus",
            &prom_url,
            "--start",
            &start,
            "--end",
            &end,
            "--selector",
            "{job=\"vllm\"}",
            "--json",
        ],
    );
    no_panic(&read);
    assert!(
        stderr(&read).contains("read 3 replica(s)"),
        "{}",
        stderr(&read)
    );
    let direct_verdicts = verdicts(&json_results(&watched), port_in);
    let prom_verdicts = verdicts(&json_results(&read), port_in);
    eprintln!("verdicts recorded directly: {direct_verdicts:?}");
    assert_eq!(
        prom_verdicts,
        direct_verdicts,
        "stderr of report --prometheus: {}",
        stderr(&read)
    );
    let t22 = direct_verdicts.get(&("T22".to_owned(), "fleet".to_owned()));
    assert_eq!(t22.map(String::as_str), Some("fail"), "{direct_verdicts:?}");
    assert_eq!(read.status.code(), watched.status.code());
    drop(servers);
}
