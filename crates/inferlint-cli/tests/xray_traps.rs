//! Each new trap made on purpose by the simulated server or its load and caught end to
//! end: by `xray` (the whole routine, its recording judging the mid-run tripwires as it
//! goes) and by `watch` beside a load (the verdicts live, as JSON lines).

#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::USAGE;
use crate::common::{inferlint_env, stderr};
use crate::xray::{
    assert_none_left, code, finish, free_port, results_json, shown, sim, start_xray_with,
    status_of, url,
};

/// xray on a simulated vLLM with `serve_extra` on its command line and the simulated load
/// with `load_extra`: its run folder, with the verdict changes the recording judged in
/// `events.jsonl` beside it.
fn xray_run(
    tmp: &Path,
    port: u16,
    serve_extra: &str,
    load_extra: &str,
    xray_extra: &[&str],
    env: &[(&str, &str)],
) -> std::process::Output {
    let serve = format!(
        "{} serve --engine vllm --port {port} {serve_extra}",
        sim().display()
    );
    let load = format!(
        "{} load {} --num-prompts 16 --max-concurrency 8 --input-len 32 --output-len 64 --result-file run/bench.json {load_extra}",
        sim().display(),
        url(port)
    );
    let mut args = vec![
        "-o",
        "run",
        "--engine",
        "vllm",
        "--interval",
        "0.05",
        "--json-events",
        "events.jsonl",
        "--serve",
        &serve,
    ];
    args.extend(xray_extra);
    args.push("--");
    let load_words: Vec<&str> = load.split_whitespace().collect();
    args.extend(load_words);
    let mut env = env.to_vec();
    env.push(("INFERLINT_SESSION_ONLY", "1"));
    let out = finish(start_xray_with(tmp, &args, &env));
    assert_none_left(port);
    out
}

/// The changes the recording wrote, as (tripwire, status).
fn events(tmp: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(tmp.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["tripwire"].as_str().unwrap().to_owned(),
                v["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn final_status(events: &[(String, String)], tripwire: &str) -> Option<String> {
    events
        .iter()
        .rev()
        .find(|(t, _)| t == tripwire)
        .map(|(_, s)| s.clone())
}

/// A simulated vLLM on `port` with `extra` on its command line, once it listens.
fn serve_sim(port: u16, extra: &[&str]) -> Child {
    let port_arg = port.to_string();
    let mut args = vec!["serve", "--engine", "vllm", "--port", &port_arg];
    args.extend(extra);
    let server = quiet(&args);
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

/// The simulated load against `port` with `args`.
fn load_sim(port: u16, args: &[&str]) -> Child {
    let url = url(port);
    let mut all = vec!["load", url.as_str()];
    all.extend(args);
    quiet(&all)
}

/// `watch` of the simulated server on `port` into `run.series.jsonl` every 0.1 s, with
/// `extra` flags and `readings` as the GPU readings file (empty: the driver's).
fn watch_beside(
    cwd: &std::path::Path,
    port: u16,
    extra: &[&str],
    readings: &str,
) -> std::process::Output {
    let url = url(port);
    let mut args = vec![
        "watch",
        url.as_str(),
        "-o",
        "run.series.jsonl",
        "--interval",
        "0.1",
    ];
    args.extend(extra);
    inferlint_env(cwd, &args, &[("INFERLINT_NVML_READINGS", readings)])
}

/// The simulator with `args`, its output thrown away.
fn quiet(args: &[&str]) -> Child {
    Command::new(sim())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Every request sends the same prompt: the simulated prefix cache serves all but the
/// first, T16 warns in the run's results and while it was recorded.
#[test]
fn repeated_prompts_warm_the_prefix_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let out = xray_run(tmp.path(), port, "", "--repeat-prompt", &["--no-gpu"], &[]);
    let results = results_json(&tmp.path().join("run"));
    assert_eq!(
        status_of(&results, "T16").as_deref(),
        Some("warn"),
        "{}",
        shown(&out)
    );
    assert_eq!(
        final_status(&events(tmp.path()), "T16").as_deref(),
        Some("warn")
    );
    assert!(
        stderr(&out).contains("verdict: [T16] WARN"),
        "{}",
        shown(&out)
    );
    // The same load with its own prompts: no warning.
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let out = xray_run(tmp.path(), port, "", "", &["--no-gpu"], &[]);
    let results = results_json(&tmp.path().join("run"));
    assert_eq!(
        status_of(&results, "T16").as_deref(),
        Some("pass"),
        "{}",
        shown(&out)
    );
}

/// A load asked for 8 that keeps 2 open while the server has room: T17 fails, live too.
/// At real speed, so that the recording holds many samples of the 2 running: at the
/// simulator's default speed the load is over in a few samples, one of which may catch a
/// request admitted but not yet running (a queue), and the live verdict then rightly
/// warns.
#[test]
fn a_client_that_keeps_fewer_open_fails_t17() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let out = xray_run(
        tmp.path(),
        port,
        "--speed 1",
        "--open-limit 2 --save-detailed",
        &["--no-gpu", "--requested", "8"],
        &[],
    );
    assert_eq!(code(&out), Some(1), "{}", shown(&out));
    let results = results_json(&tmp.path().join("run"));
    assert_eq!(status_of(&results, "T17").as_deref(), Some("fail"));
    assert_eq!(
        final_status(&events(tmp.path()), "T17").as_deref(),
        Some("fail")
    );
    // What limited the run names the client, and never says the load kept 8 open.
    let said = crate::common::stdout(&out);
    assert!(
        said.contains("The load tool, not the server, kept fewer requests open"),
        "{said}"
    );
    assert!(!said.contains("The load kept 8 requests open"), "{said}");
}

/// A cold engine: the second wave meets a kernel the engine did not compile at start-up
/// (as vLLM 0.28's JIT monitor logged a few seconds into the recorded runs); the compile
/// is logged inside the run, seconds from either reading. T19 fails on the compile line.
#[test]
fn a_compile_inside_the_run_fails_t19() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let out = xray_run(
        tmp.path(),
        port,
        "--speed 1 --cold-start-ms 1000 --cold-start-at-request 10",
        "--save-detailed --output-len 120",
        &["--no-gpu", "--no-probe"],
        &[],
    );
    let results = results_json(&tmp.path().join("run"));
    assert_eq!(
        status_of(&results, "T19").as_deref(),
        Some("fail"),
        "{}",
        shown(&out)
    );
    let t19 = results
        .iter()
        .rev()
        .find(|r| r["tripwire"] == "T19")
        .unwrap();
    assert!(
        t19["message"]
            .as_str()
            .unwrap()
            .contains("JIT compilation during inference"),
        "{t19}"
    );
}

/// A cold first wave: no probe and no test request warm the engine, and its first work
/// waits for a compile. The load's own records show the first wave far slower than the
/// rest.
#[test]
fn a_cold_first_wave_shows_in_the_records() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let out = xray_run(
        tmp.path(),
        port,
        "--cold-start-ms 2500",
        "--no-test-request --save-detailed",
        &["--no-gpu", "--no-probe", "--requested", "8"],
        &[],
    );
    let report =
        crate::common::inferlint(tmp.path(), &["report", "run", "--json", "-o", "again.html"]);
    let results = crate::common::json_results(&report);
    let t19 = results.iter().find(|r| r["tripwire"] == "T19").unwrap();
    assert!(
        t19["evidence"]["first_wave_ttft_s"].as_f64().unwrap() >= 2.5,
        "{t19}\n{}",
        shown(&out)
    );
    assert_eq!(t19["status"], "fail", "{t19}");
    assert!(t19["message"]
        .as_str()
        .unwrap()
        .contains("paid for a cold engine"));
}

/// A GPU tenant: the simulated server writes its card's NVML readings to a file xray
/// replays; another process joins at the third request. T21 fails, and the gate before
/// the start and the clear card after the stop read the same card.
#[test]
fn another_tenant_on_the_gpu_fails_t21() {
    let tmp = tempfile::tempdir().unwrap();
    let readings = tmp.path().join("gpu.json");
    // The card before the server starts: idle.
    std::fs::write(
        &readings,
        inferlint_sim::gpu::reading(None, false).to_string(),
    )
    .unwrap();
    // At real speed, so that the recording sees requests running.
    let readings_arg = format!(
        "--speed 1 --gpu-readings {} --gpu-tenant-at-request 3",
        readings.display()
    );
    let port = free_port();
    let out = xray_run(
        tmp.path(),
        port,
        &readings_arg,
        "",
        &[],
        &[("INFERLINT_NVML_READINGS", readings.to_str().unwrap())],
    );
    let results = results_json(&tmp.path().join("run"));
    assert_eq!(
        status_of(&results, "T21").as_deref(),
        Some("fail"),
        "{}",
        shown(&out)
    );
    assert_eq!(
        final_status(&events(tmp.path()), "T21").as_deref(),
        Some("fail")
    );
    let header = std::fs::read_to_string(tmp.path().join("run/run.series.jsonl")).unwrap();
    assert!(header.lines().next().unwrap().contains("\"gpu\": \"nvml\""));
    // The card is clear again once the server stopped.
    assert_eq!(status_of(&results, "T2").as_deref(), Some("pass"));
}

/// `watch --requested N` beside a load judges the mid-run tripwires as samples arrive:
/// a load that holds 2 of 8 open with repeated prompts shows T17 failing and T16 warning
/// live, in a log line each and in the JSON lines.
#[test]
fn watch_shows_the_verdicts_live() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut server = serve_sim(port, &[]);
    let load = load_sim(
        port,
        &[
            "--num-prompts",
            "24",
            "--max-concurrency",
            "8",
            "--open-limit",
            "2",
            "--repeat-prompt",
            "--output-len",
            "200",
        ],
    );
    let out = watch_beside(
        tmp.path(),
        port,
        &[
            "--duration",
            "4",
            "--requested",
            "8",
            "--json-events",
            "events.jsonl",
        ],
        "",
    );
    let _ = finish(load);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
    let events = events(tmp.path());
    assert_eq!(
        final_status(&events, "T17").as_deref(),
        Some("fail"),
        "{events:?}"
    );
    assert_eq!(
        final_status(&events, "T16").as_deref(),
        Some("warn"),
        "{events:?}"
    );
    assert_eq!(
        final_status(&events, "T1").as_deref(),
        Some("pass"),
        "{events:?}"
    );
    let err = stderr(&out);
    assert!(err.contains("verdict: [T17] TRIPWIRE-FAILED"), "{err}");
    // One log line per change, never one per sample.
    let changes = err.lines().filter(|l| l.starts_with("verdict: ")).count();
    assert_eq!(changes, events.len(), "{err}");
    assert_none_left(port);
}

/// `--json-events` follows the writers' rules: an existing file is refused before the
/// server is asked, and the recording itself can never be the events file.
#[test]
fn watch_never_writes_its_events_over_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("events.jsonl"), "kept\n").unwrap();
    // Nothing listens on this port: a refusal must come before any request.
    let port = free_port();
    let out = inferlint_env(
        tmp.path(),
        &[
            "watch",
            &url(port),
            "-o",
            "run.series.jsonl",
            "--json-events",
            "events.jsonl",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(USAGE), "{}", shown(&out));
    assert!(stderr(&out).contains("events.jsonl"), "{}", shown(&out));
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("events.jsonl")).unwrap(),
        "kept\n"
    );
    let out = inferlint_env(
        tmp.path(),
        &[
            "watch",
            &url(port),
            "-o",
            "same.jsonl",
            "--json-events",
            "same.jsonl",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(USAGE), "{}", shown(&out));
    assert!(
        stderr(&out).contains("is the recording itself"),
        "{}",
        shown(&out)
    );
    assert!(!tmp.path().join("same.jsonl").exists());
}

/// GPU readings that cannot be taken (here a readings file that is not there, as NVML
/// failing on a machine with a driver): the recorder says so once, the header still says
/// it was to read them, no sample holds a reading, and T21 is Can't tell, naming why,
/// never a pass.
#[test]
fn readings_that_cannot_be_taken_leave_t21_cant_tell() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut server = serve_sim(port, &["--speed", "1"]);
    // Requests run while it records: T21 judges the samples taken while requests ran.
    let load = load_sim(
        port,
        &[
            "--num-prompts",
            "8",
            "--max-concurrency",
            "4",
            "--output-len",
            "100",
        ],
    );
    let missing = tmp.path().join("no-such-readings.json");
    let out = watch_beside(
        tmp.path(),
        port,
        &["--duration", "1"],
        missing.to_str().unwrap(),
    );
    let _ = finish(load);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
    assert!(
        stderr(&out).contains("the recording has no GPU readings (T21)"),
        "{}",
        shown(&out)
    );
    let series = std::fs::read_to_string(tmp.path().join("run.series.jsonl")).unwrap();
    let mut lines = series.lines();
    assert!(
        lines.next().unwrap().contains("\"gpu\": \"nvml\""),
        "{series}"
    );
    assert!(lines.all(|l| !l.contains("gpu_")), "{series}");
    let report = crate::common::inferlint(
        tmp.path(),
        &[
            "report",
            "--series",
            "run.series.jsonl",
            "--json",
            "-o",
            "r.html",
        ],
    );
    let results = crate::common::json_results(&report);
    let t21 = results.iter().find(|r| r["tripwire"] == "T21").unwrap();
    assert_eq!(t21["status"], "unknown", "{t21}");
    assert!(
        t21["message"]
            .as_str()
            .unwrap()
            .contains("no sample holds a reading"),
        "{t21}"
    );
    assert_none_left(port);
}
