//! snapshot, watch and probe against the simulated engine's HTTP server
//! (`inferlint_sim::server`), on 127.0.0.1 only. Every server is stopped when its handle
//! drops and every `watch` we start is killed by its guard, on every path; every wait is
//! bounded.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use inferlint_core::judging::checks::series::MIN_DISTINCT_READINGS;
use inferlint_core::Engine;
use inferlint_engines::files;
use inferlint_sim::load;
use inferlint_sim::server::{self, Faults, ServerConfig, ServerHandle};
use serde_json::Value;

use crate::common::{inferlint, inferlint_env, json_results, no_panic, stderr, stdout};
use crate::common::{UNUSABLE_INPUT, USAGE};

fn sim(engine: Engine) -> ServerHandle {
    server::spawn(ServerConfig::new(engine)).unwrap()
}

fn sim_with(engine: Engine, faults: Faults) -> ServerHandle {
    let mut config = ServerConfig::new(engine);
    config.faults = faults;
    server::spawn(config).unwrap()
}

fn wall_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// A port where nothing listens (bound, then let go).
fn closed_port() -> u16 {
    crate::common::free_port()
}

/// One completion, as a load tool would send it; the answer does not matter.
fn one_completion(base: &str) {
    let _ = load::fetch(
        "POST",
        &format!("{base}/v1/completions"),
        Some(r#"{"model": "sim-model", "prompt": "a b c", "max_tokens": 4}"#),
        Duration::from_secs(10),
    );
}

/// A `watch` running in the background, killed when dropped.
struct Background {
    child: Option<Child>,
}

impl Background {
    fn watch(dir: &Path, args: &[&str]) -> Background {
        let child = Command::new(env!("CARGO_BIN_EXE_inferlint"))
            .current_dir(dir)
            .arg("watch")
            .args(args)
            .env_remove("INFERLINT_ENGINE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Background { child: Some(child) }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    fn signal(&self, name: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{name}"), &self.pid().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{name} failed");
    }

    /// Waits for the process to end, at most `limit`; kills it if it does not. The
    /// wait is the child's own (on a thread, which also reads its output as it comes,
    /// so a full pipe cannot stall it), told over a channel: no polling.
    fn wait(mut self, limit: Duration) -> (ExitStatus, String, String) {
        let child = self.child.take().unwrap();
        let pid = child.id();
        let (ended, end) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = ended.send(child.wait_with_output());
        });
        match end.recv_timeout(limit) {
            Ok(output) => {
                let output = output.unwrap();
                (
                    output.status,
                    String::from_utf8_lossy(&output.stdout).into_owned(),
                    String::from_utf8_lossy(&output.stderr).into_owned(),
                )
            }
            Err(_) => {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
                panic!("watch did not end within {limit:?}");
            }
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Waits until the records of a series file meet `enough` (at most 20 s). `watch`
/// writes each record (header, sample, gap, restart) as a line the moment it makes it,
/// so the file is the event: a few records take well under a second at the intervals
/// used here, and only a recorder that stopped writing reaches the bound.
fn wait_for(path: &Path, what: &str, enough: impl Fn(&[Value]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if std::fs::metadata(path).is_ok() && enough(&records(path)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} never held {what}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until a file holds at least `n` records.
fn wait_for_lines(path: &Path, n: usize) {
    wait_for(path, &format!("{n} records"), |recs| recs.len() >= n);
}

/// Whether a sample follows a restart record.
fn sampled_after_a_restart(recs: &[Value]) -> bool {
    recs.iter()
        .position(|r| r.get("restart").is_some())
        .is_some_and(|at| recs[at..].iter().any(|r| r.get("running").is_some()))
}

/// Sample records in a series file's records.
fn samples(recs: &[Value]) -> usize {
    recs.iter().filter(|r| r.get("running").is_some()).count()
}

/// Gap records in a series file's records.
fn gaps(recs: &[Value]) -> usize {
    recs.iter().filter(|r| r.get("gap").is_some()).count()
}

/// Every line of a series file as JSON (a cut-off last line is left out).
fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn samples_in(path: &Path) -> usize {
    files::read_series(path, |_| {}).unwrap().samples
}

fn temp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

// ---- snapshot ----

#[test]
fn snapshot_writes_the_schema_and_midpoint_clocks() {
    let server = sim(Engine::Vllm);
    let dir = temp();
    let out = dir.path().join("sub/before.json");
    let wall_before = wall_now();
    let o = inferlint(
        dir.path(),
        &["snapshot", &server.base_url, "-o", "sub/before.json"],
    );
    let wall_after = wall_now();
    no_panic(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let line = stdout(&o);
    assert!(
        line.contains(" samples, scrape ") && line.trim_end().ends_with("-> sub/before.json"),
        "{line}"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["schema"], "inferlint.snapshot/1");
    assert_eq!(v["url"], format!("{}/metrics", server.base_url));
    let t_wall = v["t_wall"].as_f64().unwrap();
    assert!(wall_before <= t_wall && t_wall <= wall_after, "{t_wall}");
    assert!(v["t_mono_ns"].as_i64().unwrap() > 0);
    assert!(v["latency_s"].as_f64().unwrap() >= 0.0);
    let snap = files::read_snapshot(&out).unwrap();
    assert!(snap.metrics.has("vllm:num_requests_running"));
    // Nothing but the snapshot is left in the folder (the temporary file was renamed).
    let names: Vec<_> = std::fs::read_dir(dir.path().join("sub"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["before.json"]);
}

#[test]
fn tensorrt_llm_metrics_are_read_at_prometheus_metrics() {
    let server = sim(Engine::Trtllm);
    let dir = temp();
    let o = inferlint(dir.path(), &["snapshot", &server.base_url, "-o", "s.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let snap = files::read_snapshot(&dir.path().join("s.json")).unwrap();
    assert_eq!(snap.url, format!("{}/prometheus/metrics", server.base_url));
    assert!(snap.metrics.names().any(|n| n.starts_with("trtllm_")));
    // watch remembers the path: every scrape after the first reads. Stopped once three
    // samples are on record; a slot a loaded machine let pass is a gap that says
    // "missed", not a scrape that failed.
    let path = dir.path().join("t.jsonl");
    let watch = Background::watch(
        dir.path(),
        &[&server.base_url, "-o", "t.jsonl", "--interval", "0.05"],
    );
    wait_for(&path, "3 samples", |recs| samples(recs) >= 3);
    watch.signal("TERM");
    let (status, _, err) = watch.wait(Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{err}");
    let recs = records(&path);
    assert_eq!(recs[0]["engine"], "trtllm");
    assert!(
        recs.iter()
            .filter_map(|r| r["gap"].as_str())
            .all(|g| g.contains("slot(s) missed") || g.contains("when recording ended")),
        "{recs:?}"
    );
    assert!(recs[1].get("paused").is_some() && recs[1].get("preemptions").is_none());
}

#[test]
fn no_metrics_is_a_clear_error_and_no_file() {
    let server = sim_with(
        Engine::Sglang,
        Faults {
            no_metrics: true,
            ..Faults::default()
        },
    );
    let dir = temp();
    for command in ["snapshot", "watch"] {
        let o = inferlint(dir.path(), &[command, &server.base_url, "-o", "x"]);
        no_panic(&o);
        assert_eq!(o.status.code(), Some(UNUSABLE_INPUT));
        let err = stderr(&o);
        assert!(
            err.starts_with(&format!(
                "inferlint: no vLLM, SGLang or TensorRT-LLM metrics at {} (",
                server.base_url
            )),
            "{err}"
        );
        assert!(err.contains("HTTP 404"), "{err}");
        assert!(
            err.contains("): for vLLM, vLLM serves them at /metrics without a flag; check that the address is the server's; for SGLang, start SGLang with --enable-metrics; for TensorRT-LLM, put 'return_perf_metrics: true'"),
            "{err}"
        );
        assert!(stdout(&o).is_empty());
        assert!(!dir.path().join("x").exists());
    }
    // With the engine named, only its hint.
    let o = inferlint_env(
        dir.path(),
        &["snapshot", &server.base_url, "-o", "x"],
        &[("INFERLINT_ENGINE", "sglang")],
    );
    assert_eq!(o.status.code(), Some(UNUSABLE_INPUT));
    assert!(
        stderr(&o)
            .trim_end()
            .ends_with("): start SGLang with --enable-metrics"),
        "{}",
        stderr(&o)
    );
    // Nothing listening at all.
    let url = format!("http://127.0.0.1:{}", closed_port());
    let o = inferlint(dir.path(), &["snapshot", &url, "-o", "x"]);
    assert_eq!(o.status.code(), Some(UNUSABLE_INPUT));
    assert!(stderr(&o).contains("connection refused"), "{}", stderr(&o));
    assert!(!dir.path().join("x").exists());
}

#[test]
fn a_server_of_another_engine_than_the_one_named_is_refused() {
    let server = sim(Engine::Sglang);
    let dir = temp();
    let o = inferlint(
        dir.path(),
        &[
            "--engine",
            "vllm",
            "snapshot",
            &server.base_url,
            "-o",
            "x.json",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o).trim_end(),
        format!(
            "inferlint: --engine vllm, but the server at {} runs SGLang. Check the server address or the file, or name the engine it came from.",
            server.base_url
        )
    );
    assert!(!dir.path().join("x.json").exists());
    let o = inferlint_env(
        dir.path(),
        &["watch", &server.base_url, "-o", "x.jsonl"],
        &[("INFERLINT_ENGINE", "trtllm")],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with("inferlint: INFERLINT_ENGINE=trtllm, but the server at "));
    assert!(!dir.path().join("x.jsonl").exists());
}

// ---- watch ----

/// A simulated run recorded as the tutorial records one, then checked.
#[test]
fn a_recorded_simulated_run_checks_as_its_setup_implies() {
    // In real time (speed 1), so that the run lasts long enough to be sampled.
    let mut config = ServerConfig::new(Engine::Vllm);
    config.speed = 1.0;
    let server = server::spawn(config).unwrap();
    let dir = temp();
    let base = server.base_url.clone();
    let o = inferlint(dir.path(), &["snapshot", &base, "-o", "before.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let watch = Background::watch(
        dir.path(),
        &[&base, "-o", "run.series.jsonl", "--interval", "0.05"],
    );
    wait_for_lines(&dir.path().join("run.series.jsonl"), 3);
    // T14 infers the block count only from MIN_DISTINCT_READINGS distinct readings of
    // the cache in use; which moments of a load a recording catches is the machine's
    // business (a loaded one catches fewer). So the load runs again, up to five times,
    // until the recording holds enough: the count is the recording's, not a guess.
    let series = dir.path().join("run.series.jsonl");
    let distinct_usage = || {
        let mut seen: Vec<u64> = records(&series)
            .iter()
            .filter_map(|r| r["kv_usage"].as_f64())
            .filter(|u| *u > 0.0)
            .map(f64::to_bits)
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    };
    for _ in 0..5 {
        let result = load::run(&base, load::LoadConfig::default()).unwrap();
        assert_eq!(result.failed(), 0);
        if distinct_usage() >= MIN_DISTINCT_READINGS {
            break;
        }
    }
    // Two more samples once the load is done: the recording holds the server after the
    // load, idle, whatever the machine's speed.
    let so_far = samples(&records(&series));
    wait_for(&series, "2 samples after the load", |recs| {
        samples(recs) >= so_far + 2
    });
    let o = inferlint(dir.path(), &["snapshot", &base, "-o", "after.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    watch.signal("TERM");
    let (status, out, err) = watch.wait(Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{err}");
    // (A loaded test machine may add "(N gap(s), ...)".)
    assert!(out.contains(" samples -> run.series.jsonl"), "{out}");

    // Nine requests of 32 + 32 tokens fit the 128 blocks of 16 at once: no preemption,
    // 8 running at the peak, the block count read from the after snapshot.
    let o = inferlint(
        dir.path(),
        &[
            "--json",
            "preemption",
            "before.json",
            "after.json",
            "--series",
            "run.series.jsonl",
        ],
    );
    let r = json_results(&o);
    assert_eq!(
        (r[0]["tripwire"].as_str(), r[0]["status"].as_str()),
        (Some("T1"), Some("pass")),
        "{r:?}"
    );
    let o = inferlint(dir.path(), &["--json", "rate", "before.json", "after.json"]);
    let r = json_results(&o);
    assert_eq!(r[0]["tripwire"], "T10");
    assert_ne!(r[0]["status"], "unknown", "{r:?}");
    let o = inferlint(
        dir.path(),
        &[
            "--json",
            "series",
            "run.series.jsonl",
            "--snapshot",
            "after.json",
            "--requested",
            "8",
        ],
    );
    no_panic(&o);
    assert!(!stderr(&o).contains("skipped"), "{}", stderr(&o));
    let r = json_results(&o);
    let status_of = |t: &str| {
        r.iter()
            .find(|x| x["tripwire"] == t)
            .map(|x| x["status"].as_str().unwrap().to_owned())
    };
    assert_eq!(status_of("T14").as_deref(), Some("pass"), "{r:?}");
    assert_eq!(status_of("T8").as_deref(), Some("pass"), "{r:?}");
}

#[test]
fn watch_with_a_duration_writes_a_header_and_samples_series_reads() {
    let server = sim(Engine::Sglang);
    let dir = temp();
    let o = inferlint(
        dir.path(),
        &[
            "watch",
            &server.base_url,
            "-o",
            "w/s.jsonl",
            "--interval",
            "0.05",
            "--duration",
            "1",
        ],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let path = dir.path().join("w/s.jsonl");
    let recs = records(&path);
    assert_eq!(recs[0]["schema"], "inferlint.series/1");
    assert_eq!(recs[0]["engine"], "sglang");
    assert_eq!(recs[0]["interval_s"], 0.05);
    assert_eq!(recs[0]["url"], server.base_url.as_str());
    // 20 slots are due in the second (0 to 0.95 s): each is a sample, or on record as
    // missed. How many are samples is the machine's business (a loaded one misses
    // some); that none goes unaccounted, and none is sampled twice, is the recorder's.
    let n = samples_in(&path);
    let unsampled: usize = recs
        .iter()
        .filter_map(|r| r["gap"].as_str())
        .map(|gap| match gap.split_once(" slot(s) missed") {
            Some((count, _)) => count.parse::<usize>().unwrap(),
            None => 1,
        })
        .sum();
    assert!((1..=20).contains(&n), "{n} samples");
    assert!(
        n + unsampled >= 20,
        "{n} samples and {unsampled} slots missed"
    );
    assert!(stdout(&o).starts_with(&format!("{n} samples -> w/s.jsonl")));
    // Samples are on the monotonic clock, in order, never all-null.
    let monos: Vec<i64> = recs[1..]
        .iter()
        .filter_map(|r| r["t_mono_ns"].as_i64())
        .collect();
    assert!(monos.windows(2).all(|w| w[0] < w[1]));
    let o = inferlint(dir.path(), &["series", "w/s.jsonl"]);
    no_panic(&o);
    assert!(stdout(&o).contains("[ T9]"), "{}", stdout(&o));
    // Nothing on standard error but, where a loaded machine made the recorder miss
    // slots, the note that says so.
    let gap_records = gaps(&recs);
    let expected = if gap_records == 0 {
        String::new()
    } else {
        format!("note: w/s.jsonl: {gap_records} gap or restart record(s): the recorder missed readings there, so a peak may be missing\n")
    };
    assert_eq!(stderr(&o), expected);
}

#[test]
fn watch_refuses_an_interval_below_50_ms() {
    let o = inferlint(
        Path::new("."),
        &["watch", "127.0.0.1:1", "-o", "x", "--interval", "0.01"],
    );
    assert_eq!(o.status.code(), Some(USAGE));
    assert!(stderr(&o).contains("--interval 0.01"), "{}", stderr(&o));
}

#[test]
fn a_watch_killed_with_sigkill_leaves_a_file_that_reads() {
    let server = sim(Engine::Vllm);
    let dir = temp();
    let path = dir.path().join("k.jsonl");
    let watch = Background::watch(
        dir.path(),
        &[&server.base_url, "-o", "k.jsonl", "--interval", "0.05"],
    );
    // Five samples on record (a loaded machine may put gaps between them).
    wait_for(&path, "5 samples", |recs| samples(recs) >= 5);
    watch.signal("KILL");
    let (status, _, _) = watch.wait(Duration::from_secs(10));
    assert!(!status.success());
    assert!(samples_in(&path) >= 5);
    let o = inferlint(dir.path(), &["series", "k.jsonl"]);
    no_panic(&o);
    assert!(stdout(&o).contains("[ T9]"));
    // A cut-off last line, as a kill during a write leaves it, still reads.
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, &text[..text.len() - 20]).unwrap();
    assert!(samples_in(&path) >= 4);
}

#[test]
fn sigterm_closes_the_file_and_exits_0() {
    let server = sim(Engine::Vllm);
    let dir = temp();
    let path = dir.path().join("t.jsonl");
    let watch = Background::watch(
        dir.path(),
        &[&server.base_url, "-o", "t.jsonl", "--interval", "0.05"],
    );
    wait_for_lines(&path, 3);
    watch.signal("TERM");
    let (status, out, err) = watch.wait(Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{err}");
    let n = samples_in(&path);
    assert!(out.starts_with(&format!("{n} samples -> t.jsonl")), "{out}");
    // Not a terminal: no status line.
    assert!(!err.contains("running"), "{err}");
    assert!(std::fs::read_to_string(&path).unwrap().ends_with('\n'));
}

/// A vLLM simulator with `faults`, watched into `name` every `interval` s for `duration`
/// s, sent one completion (which sets a request-counted fault off) once the recording has
/// begun.
fn watch_through_one_completion(
    faults: Faults,
    name: &str,
    interval: &str,
    duration: &str,
) -> (ServerHandle, tempfile::TempDir, PathBuf, Background) {
    let server = sim_with(Engine::Vllm, faults);
    let dir = temp();
    let path = dir.path().join(name);
    let watch = Background::watch(
        dir.path(),
        &[
            &server.base_url,
            "-o",
            name,
            "--interval",
            interval,
            "--duration",
            duration,
        ],
    );
    wait_for_lines(&path, 3);
    one_completion(&server.base_url);
    (server, dir, path, watch)
}

#[test]
fn a_server_that_dies_mid_watch_leaves_gaps_not_zeros_and_watch_goes_on() {
    let (server, _dir, path, watch) = watch_through_one_completion(
        Faults {
            die_on_request: Some(1),
            ..Faults::default()
        },
        "d.jsonl",
        "0.1",
        "2",
    );
    assert!(server.is_dead());
    let (status, _, err) = watch.wait(Duration::from_secs(15));
    // Most of the 2 s went unrecorded: the recording is kept, and the status says so.
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("scrape failed: "), "{err}");
    assert!(err.contains("scrapes failed, more than 10%"), "{err}");
    let recs = records(&path);
    // It kept going until the duration, not until the server died: the gaps reach
    // to within a slot or two of the end of the 2 s.
    let span = recs.last().unwrap()["t_mono_ns"].as_i64().unwrap()
        - recs[1]["t_mono_ns"].as_i64().unwrap();
    assert!(span >= 1_700_000_000, "{recs:?}");
    let first_gap = recs
        .iter()
        .position(|r| r.get("gap").is_some())
        .expect("a gap record");
    let gaps = &recs[first_gap..];
    assert!(gaps.len() >= 5, "{gaps:?}");
    for g in gaps {
        assert!(g["gap"].as_str().unwrap().contains("/metrics"), "{g}");
        assert!(g["t_wall"].as_f64().unwrap() > 1e9);
        assert!(g["t_mono_ns"].as_i64().unwrap() > 0);
    }
    // Every sample read is a real one: none after the death, none all-null.
    let mut samples = vec![];
    files::read_series(&path, |s| samples.push(*s)).unwrap();
    assert_eq!(samples.len(), first_gap - 1);
    assert!(samples
        .iter()
        .all(|s| s.running.is_some() && s.generation_tokens.is_some()));
}

#[test]
fn a_restart_is_marked_and_recording_goes_on() {
    let (_server, _dir, path, watch) = watch_through_one_completion(
        Faults {
            restart_after_requests: Some(1),
            ..Faults::default()
        },
        "r.jsonl",
        "0.05",
        "60",
    );
    // Ended once a sample follows the restart: the 60 s are only a bound.
    wait_for(&path, "a sample after a restart", sampled_after_a_restart);
    watch.signal("TERM");
    let (status, out, err) = watch.wait(Duration::from_secs(15));
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(out.contains("(1 restart(s))"), "{out}");
    assert!(err.contains("note: the server restarted ("), "{err}");
    let recs = records(&path);
    let at = recs
        .iter()
        .position(|r| r.get("restart").is_some())
        .expect("a restart record");
    assert!(recs[at]["t_wall"].as_f64().unwrap() > 1e9);
    assert!(
        recs[at + 1..].iter().any(|r| r.get("running").is_some()),
        "samples after it"
    );
}

/// The server goes away for six slots or more and a new one comes up on the same port.
#[test]
fn a_server_down_for_a_while_gives_gaps_then_samples_again() {
    let server = sim(Engine::Vllm);
    let port = server.addr.port();
    let base = server.base_url.clone();
    let dir = temp();
    let path = dir.path().join("g.jsonl");
    let watch = Background::watch(dir.path(), &[&base, "-o", "g.jsonl", "--interval", "0.25"]);
    wait_for_lines(&path, 3);
    drop(server);
    // Down until the recording holds six gaps (a second and a half of slots at 0.25 s
    // on an idle machine, longer on a loaded one): the count is the recording's own, not
    // a guess at how many slots a sleep lets pass.
    wait_for(&path, "6 gaps", |recs| gaps(recs) >= 6);
    let mut config = ServerConfig::new(Engine::Vllm);
    config.port = port;
    let again = server::spawn(config).unwrap();
    // Stopped once the new server's first sample is on record, not after a duration
    // that a loaded machine might fill before the server is back.
    wait_for(&path, "a sample after a restart", sampled_after_a_restart);
    watch.signal("TERM");
    let (status, _, err) = watch.wait(Duration::from_secs(20));
    drop(again);
    // Half the slots failed: more than the share a recording may lose.
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("scrapes failed, more than 10%"), "{err}");
    let recs = records(&path);
    let kinds: Vec<&str> = recs[1..]
        .iter()
        .map(|r| {
            if r.get("gap").is_some() {
                "gap"
            } else if r.get("restart").is_some() {
                "restart"
            } else {
                "sample"
            }
        })
        .collect();
    let first_gap = kinds.iter().position(|k| *k == "gap").expect("gaps");
    let restart = kinds
        .iter()
        .position(|k| *k == "restart")
        .expect("a restart");
    assert!(first_gap < restart, "{kinds:?}");
    assert!(
        kinds[first_gap..restart].iter().all(|k| *k == "gap"),
        "{kinds:?}"
    );
    // The six gaps waited for above all came before the server was back.
    assert!(restart - first_gap >= 6, "{kinds:?}");
    assert_eq!(kinds.get(restart + 1), Some(&"sample"), "{kinds:?}");
}

/// A server that stops answering /metrics: each scrape waits for its timeout, and the
/// end of the duration still ends the recording, with the lost slot on record.
#[test]
fn a_server_that_hangs_on_metrics_ends_with_a_gap_on_time() {
    let server = sim(Engine::Vllm);
    let port = server.addr.port();
    let base = server.base_url.clone();
    let dir = temp();
    let path = dir.path().join("h.jsonl");
    let watch = Background::watch(
        dir.path(),
        &[
            &base,
            "-o",
            "h.jsonl",
            "--interval",
            "0.1",
            "--duration",
            "3",
        ],
    );
    wait_for_lines(&path, 3);
    drop(server);
    let mut config = ServerConfig::new(Engine::Vllm);
    config.port = port;
    config.faults.hang = true;
    let hanging = server::spawn(config).unwrap();
    let (status, _, err) = watch.wait(Duration::from_secs(20));
    drop(hanging);
    // A scrape that lands between the two servers is refused, and one failure in the
    // few tries of 3 s is more than the share a recording may lose: the status says so.
    match status.code() {
        Some(0) => {}
        Some(2) => assert!(err.contains("scrapes failed, more than 10%"), "{err}"),
        other => panic!("exit {other:?}: {err}"),
    }
    let recs = records(&path);
    let last = recs.last().unwrap();
    assert!(
        last["gap"]
            .as_str()
            .unwrap()
            .contains("when recording ended"),
        "{last}"
    );
}

#[test]
fn slow_scrapes_skip_their_slots_and_say_so() {
    let server = sim_with(
        Engine::Vllm,
        Faults {
            slow_metrics_ms: Some(180),
            ..Faults::default()
        },
    );
    let dir = temp();
    let o = inferlint(
        dir.path(),
        &[
            "watch",
            &server.base_url,
            "-o",
            "s.jsonl",
            "--interval",
            "0.1",
            "--duration",
            "1.5",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let recs = records(&dir.path().join("s.jsonl"));
    let missed: Vec<&str> = recs
        .iter()
        .filter_map(|r| r["gap"].as_str())
        .filter(|g| g.contains("slot(s) missed"))
        .collect();
    assert!(!missed.is_empty(), "{recs:?}");
    // Samples land on slots of the schedule: whole multiples of 0.1 s apart, give or
    // take their own latency (not asserted as a duration: just that none is between).
    let monos: Vec<i64> = recs
        .iter()
        .filter(|r| r.get("running").is_some())
        .filter_map(|r| r["t_mono_ns"].as_i64())
        .collect();
    assert!(monos.len() >= 3);
}

// ---- probe ----

fn probe(url: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let mut args = vec!["probe", url];
    args.extend_from_slice(extra);
    let o = inferlint(Path::new("."), &args);
    no_panic(&o);
    (o.status.code(), stdout(&o), stderr(&o))
}

#[test]
fn probe_passes_a_healthy_server() {
    for engine in [Engine::Vllm, Engine::Sglang, Engine::Trtllm] {
        let server = sim(engine);
        let (code, out, err) = probe(&server.base_url, &[]);
        assert_eq!(
            out, "[ T7] PASS  1 + 8 concurrent requests served, server alive\n",
            "{err}"
        );
        assert_eq!(code, Some(0));
    }
    let server = sim(Engine::Vllm);
    let (code, out, _) = probe(
        &server.base_url,
        &["--json", "--concurrency", "3", "--model", "sim-model"],
    );
    assert_eq!(code, Some(0));
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        r[0]["message"],
        "1 + 3 concurrent requests served, server alive"
    );
    assert_eq!(r[0]["evidence"]["model"], "sim-model");
    assert_eq!(r[0]["evidence"]["burst"]["failed"], 0);
    assert_eq!(r[0]["evidence"]["alive_after"], true);
}

#[test]
fn probe_fails_a_server_that_dies_on_its_first_request() {
    let server = sim_with(
        Engine::Vllm,
        Faults {
            die_on_request: Some(1),
            ..Faults::default()
        },
    );
    let (code, out, _) = probe(&server.base_url, &["--json"]);
    assert_eq!(code, Some(1));
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r[0]["status"], "fail");
    assert!(
        r[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("first request failed: "),
        "{out}"
    );
    assert_eq!(r[0]["evidence"]["alive_after"], false);
}

#[test]
fn probe_fails_a_server_that_dies_on_its_fourth_request() {
    let server = sim_with(
        Engine::Sglang,
        Faults {
            die_on_request: Some(4),
            ..Faults::default()
        },
    );
    let (code, out, _) = probe(&server.base_url, &[]);
    assert_eq!(code, Some(1));
    // The first passed; the burst's third request (the fourth in all) killed it, and
    // every request still open died with it.
    assert!(out.starts_with("[ T7] TRIPWIRE-FAILED  "), "{out}");
    assert!(out.contains("/8 burst requests failed"), "{out}");
    assert!(out.contains("server is dead after it"), "{out}");
}

#[test]
fn probe_fails_empty_completions() {
    let server = sim_with(
        Engine::Trtllm,
        Faults {
            empty_completions: true,
            ..Faults::default()
        },
    );
    let (code, out, _) = probe(&server.base_url, &[]);
    assert_eq!(code, Some(1));
    assert_eq!(
        out,
        "[ T7] TRIPWIRE-FAILED  first request failed: empty completion\n"
    );
}

/// Nothing listens at the address: no server answered, so there is no server whose crash
/// after ready T7 could tell. An input that cannot be used (65), one line naming the
/// address, as `snapshot` says of it; with a model named too.
#[test]
fn probe_with_nothing_listening_is_unusable_input() {
    let url = format!("http://127.0.0.1:{}", closed_port());
    for extra in [&[][..], &["--model", "m"][..]] {
        let (code, out, err) = probe(&url, extra);
        assert_eq!(code, Some(UNUSABLE_INPUT), "{extra:?}: {out}{err}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&url) && err.contains("connection refused"),
            "{err}"
        );
    }
}

#[test]
fn probe_takes_no_engine() {
    let (code, _, err) = probe("127.0.0.1:1", &["--engine", "vllm"]);
    assert_eq!(code, Some(USAGE));
    assert!(err.contains("probe takes no --engine"), "{err}");
}

/// A step line as the step plugin writes it (docs/steps.md), at `t` s after the header's
/// anchor: `r` running, `w` waiting, the decode batch `dr`/`dt`, `gen` tokens generated,
/// `pre` requests preempted.
fn step_line(t: f64, i: u64, w: u64, gen: u64, pre: u64) -> String {
    format!(
        r#"{{"t":{t:.6},"i":{i},"r":2,"w":{w},"d":0,"kv":0.2,"pr":0,"pt":0,"dr":2,"dt":2,"ms":10.0,"gen":{gen},"prompt":0,"pre":{pre}}}"#
    )
}

fn append_to(path: &Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// `watch --steps FILE` beside a server already running: FILE is the server's step file
/// (the test writes it as the plugin would, on this host's monotonic clock). The copy in
/// the run folder holds FILE's header and exactly the lines appended while the watch
/// recorded; report judges T29 to T31 from them.
#[test]
fn watch_steps_copies_the_window_of_a_running_servers_step_file() {
    // In real time (speed 1), so that the load's requests last long enough to be
    // sampled: report judges a recording that shows requests running.
    let mut config = ServerConfig::new(Engine::Vllm);
    config.port = crate::common::free_port();
    config.speed = 1.0;
    let server = server::spawn(config).unwrap();
    let dir = temp();
    let source = dir.path().join("server-steps.jsonl");
    // The server has been up a minute: its header's anchor, and steps of an earlier
    // window that would fail T29 (4 requests waited 2.5 s, nothing generated) and count
    // in T31 (2 preempted) if they were copied.
    let anchor_ns = inferlint_live::clock::monotonic_ns() - 60_000_000_000;
    let header = format!(
        r#"{{"schema":"inferlint.steps/1","plugin":"0.1.0","engine":"vllm","engine_version":"0.32.0","engine_index":0,"pid":4242,"t_wall":{:.6},"t_mono_ns":{anchor_ns},"iteration_details":true,"unread":[]}}"#,
        wall_now() - 60.0
    );
    append_to(
        &source,
        &format!(
            "{header}\n{}\n{}\n",
            step_line(1.0, 1, 4, 0, 1),
            step_line(3.5, 2, 4, 0, 1)
        ),
    );
    // The readings before and after the watch, as the tutorial takes them: T31 counts
    // the steps between them against the server's preemption counter.
    let o = inferlint(
        dir.path(),
        &[
            "snapshot",
            &server.base_url,
            "-o",
            "run/before.snapshot.json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let watch = Background::watch(
        dir.path(),
        &[
            &server.base_url,
            "-o",
            "run/run.series.jsonl",
            "--interval",
            "0.05",
            "--steps",
            "server-steps.jsonl",
        ],
    );
    let series = dir.path().join("run/run.series.jsonl");
    // The header and a sample after the first: the before reading is taken.
    wait_for(&series, "2 samples", |recs| samples(recs) >= 2);
    // A light load (one request at a time, 16 tokens in and out, in a cache of eight
    // 256-token requests: nothing to preempt), run again until a sample caught a request
    // running, at most five times.
    let ran = || {
        records(&series)
            .iter()
            .any(|r| r["running"].as_f64().is_some_and(|n| n > 0.0))
    };
    for _ in 0..5 {
        let config = load::LoadConfig {
            requests: 4,
            concurrency: 1,
            prompt_tokens: 16,
            output_tokens: 16,
            ..load::LoadConfig::default()
        };
        assert_eq!(load::run(&server.base_url, config).unwrap().failed(), 0);
        if ran() {
            break;
        }
    }
    assert!(ran(), "no sample caught a request running");
    // Four decode steps now, 10 ms apart, none waiting: the second preempted 2 requests,
    // the third 1; then a line the server is still writing.
    let now = (inferlint_live::clock::monotonic_ns() - anchor_ns) as f64 / 1e9;
    let during: Vec<String> = (0..4u64)
        .map(|k| {
            let pre = [0, 2, 1, 0][k as usize];
            step_line(now + 0.01 * k as f64, 10 + k, 0, 2, pre)
        })
        .collect();
    append_to(&source, &format!("{}\n", during.join("\n")));
    let partial = step_line(now + 0.05, 14, 0, 2, 5);
    append_to(&source, &partial[..40]);
    let copy = dir.path().join("run").join(files::STEPS_FILE);
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&copy).map_or(0, |t| t.lines().count()) < 5 {
        assert!(
            Instant::now() < deadline,
            "the copy never held the four steps"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Two samples more: the after reading comes after the steps.
    let taken = samples(&records(&series));
    wait_for(&series, "2 more samples", |recs| samples(recs) >= taken + 2);
    watch.signal("TERM");
    let (status, out, err) = watch.wait(Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{err}");
    let o = inferlint(
        dir.path(),
        &[
            "snapshot",
            &server.base_url,
            "-o",
            "run/after.snapshot.json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Written after the watch ended: not in the window.
    append_to(&source, &format!("{}\n", &partial[40..]));
    let mut expected = vec![header.clone()];
    expected.extend(during.iter().cloned());
    assert_eq!(
        std::fs::read_to_string(&copy).unwrap(),
        format!("{}\n", expected.join("\n"))
    );
    assert!(
        out.contains("4 step-file line(s) from server-steps.jsonl -> run/steps.jsonl"),
        "{out}"
    );
    assert!(!err.contains("warning"), "{err}");

    let o = inferlint(dir.path(), &["--json", "report", "run"]);
    no_panic(&o);
    let results = json_results(&o);
    let result = |id: &str| {
        results
            .iter()
            .find(|r| r["tripwire"] == id)
            .unwrap_or_else(|| panic!("no {id} in {}", stdout(&o)))
            .clone()
    };
    // T29: nobody waited in the four steps copied (the earlier window's stall is not in
    // the copy).
    let t29 = result("T29");
    assert_eq!(t29["status"], "pass", "{t29}");
    assert_eq!(t29["evidence"]["steps"], 4, "{t29}");
    assert_eq!(t29["evidence"]["queued_steps"], 0, "{t29}");
    // T30: four decode steps, none with a prefill beside.
    let t30 = result("T30");
    assert_eq!(t30["status"], "pass", "{t30}");
    assert_eq!(t30["evidence"]["decode_only_steps"], 4, "{t30}");
    assert_eq!(t30["evidence"]["prefill_beside_decode_steps"], 0, "{t30}");
    // T31: 2 + 1 preempted in 2 steps, 10 ms and one step apart: one burst; the
    // simulated server preempted nothing (its load never filled the cache), so its
    // counter did not move, and T31 says the steps say 3 more.
    let t31 = result("T31");
    assert_eq!(t31["status"], "fail", "{t31}");
    assert_eq!(t31["evidence"]["preempted"], 3, "{t31}");
    assert_eq!(t31["evidence"]["preempting_steps"], 2, "{t31}");
    assert_eq!(
        t31["evidence"]["bursts"].as_array().map(Vec::len),
        Some(1),
        "{t31}"
    );
    assert_eq!(t31["evidence"]["counter_moved"], 0.0, "{t31}");
    assert!(
        t31["message"].as_str().is_some_and(|m| m.contains(
            "between the readings (vllm:num_preemptions_total moved 0: 3 fewer than the steps say)"
        )),
        "{t31}"
    );
}

/// `watch --steps` refuses, before recording anything, a FILE that is no step file, a
/// copy that would be the recording itself, a fleet, and a server of another engine.
#[test]
fn watch_steps_refusals() {
    let server = sim(Engine::Vllm);
    let dir = temp();
    std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
    let cases: [(&[&str], i32, &str); 3] = [
        (
            &["-o", "r1/s.jsonl", "--steps", "notes.txt"],
            UNUSABLE_INPUT,
            "--steps: notes.txt: not a step file",
        ),
        (
            &["-o", "r2/steps.jsonl", "--steps", "notes.txt"],
            USAGE,
            "--steps copies into r2/steps.jsonl",
        ),
        (
            &["http://127.0.0.1:9", "-o", "r3", "--steps", "notes.txt"],
            USAGE,
            "--steps receives one server's traces",
        ),
    ];
    for (args, code, expected) in cases {
        let mut all = vec!["watch", server.base_url.as_str()];
        all.extend_from_slice(args);
        let o = inferlint(dir.path(), &all);
        no_panic(&o);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(expected), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    }
    // The step plugin is vLLM's: a server of another engine is refused once its first
    // scrape names it, before the series or the copy is made.
    std::fs::write(
        dir.path().join("steps-file.jsonl"),
        "{\"schema\":\"inferlint.steps/1\",\"t_wall\":1.0,\"t_mono_ns\":1}\n",
    )
    .unwrap();
    let sglang = sim(Engine::Sglang);
    let o = inferlint(
        dir.path(),
        &[
            "watch",
            &sglang.base_url,
            "-o",
            "r4/s.jsonl",
            "--steps",
            "steps-file.jsonl",
        ],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(USAGE), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--steps: the step plugin is vLLM's (a stat logger); SGLang has none"),
        "{}",
        stderr(&o)
    );
    for run in ["r1", "r2", "r3"] {
        assert!(!dir.path().join(run).exists(), "{run}");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path().join("r4"))
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}
