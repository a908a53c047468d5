//! The server's own record beside the run, end to end: `xray --otlp --kv-events` on the
//! simulated vLLM (`inferlint-sim serve`, which exports vLLM's spans and publishes its KV
//! events as vLLM 0.32 does), and `watch --otlp --kv-events` beside a simulated server
//! already running. Each trap of T23 to T26 is made on purpose by the simulator or its
//! load, and each expected value is argued from what they were told to do.
//!
//! Every process a test starts is stopped on every path: xray stops the server it started
//! (each test then asserts that none of its processes is left), a `watch` is stopped by
//! its guard, an in-process server when its handle drops. 127.0.0.1 only; every wait is
//! for an event (a line in a file, a process's end), bounded.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use inferlint_core::Engine;
use inferlint_engines::files;
use serde_json::Value;

use crate::common::{inferlint, no_panic, stdout};
use crate::xray::{
    assert_none_left, finish, free_port, results_json, shown, sim, start_xray_with, url,
};

/// The load every xray test sends unless told otherwise: 16 requests of 32 prompt and 64
/// output tokens, 8 at once, with vllm bench serve's per-request records.
const LOAD: &str = "--num-prompts 16 --max-concurrency 8 --input-len 32 --output-len 64 --save-detailed --request-id-prefix trace-";

/// The simulated server's small case: blocks of 16 tokens, 128 of them usable.
const BLOCK: u64 = 16;

/// xray with `--otlp --kv-events` on a simulated vLLM with `serve_extra` on its command
/// line and the simulated load with `load_extra` after [`LOAD`]: its output, and the run
/// folder. The server's span exporter sends every 200 ms, so the spans of the last
/// requests come while xray waits for them.
fn traced_xray(tmp: &Path, serve_extra: &str, load_extra: &str) -> (Output, PathBuf) {
    let port = free_port();
    let serve = format!(
        "{} serve --engine vllm --port {port} {serve_extra}",
        sim().display()
    );
    let load = format!(
        "{} load {} {LOAD} --result-file run/bench.json {load_extra}",
        sim().display(),
        url(port)
    );
    let mut args = vec![
        "-o",
        "run",
        "--engine",
        "vllm",
        "--no-gpu",
        "--interval",
        "0.1",
        "--otlp",
        "--kv-events",
        "--serve",
        &serve,
        "--",
    ];
    args.extend(load.split_whitespace());
    let out = finish(start_xray_with(
        tmp,
        &args,
        &[
            ("INFERLINT_SESSION_ONLY", "1"),
            ("OTEL_BSP_SCHEDULE_DELAY", "200"),
        ],
    ));
    no_panic(&out);
    assert_none_left(port);
    // What xray printed, beside the run, for a verdict found missing later.
    std::fs::write(tmp.join("xray.out"), shown(&out)).unwrap();
    (out, tmp.join("run"))
}

/// A tripwire's result in a run's results.json; without it, fails showing what xray
/// printed for that run.
fn result_of(run: &Path, tripwire: &str) -> Value {
    results_json(run)
        .into_iter()
        .rev()
        .find(|r| r["tripwire"] == tripwire)
        .unwrap_or_else(|| {
            let printed = run
                .parent()
                .and_then(|tmp| std::fs::read_to_string(tmp.join("xray.out")).ok())
                .unwrap_or_default();
            panic!("no {tripwire} in {}\n{printed}", run.display())
        })
}

fn evidence(result: &Value, key: &str) -> f64 {
    result["evidence"][key]
        .as_f64()
        .unwrap_or_else(|| panic!("no {key} in {result}"))
}

/// The prefix of the load's request ids, from its settings line.
fn id_prefix(run: &Path) -> String {
    let log = std::fs::read_to_string(run.join("load.log")).unwrap();
    log.split("request_id_prefix='")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .unwrap()
        .to_owned()
}

/// On the simulated vLLM, xray's receivers keep the server's spans and KV events in the
/// run folder; each of the 16 requests the load sent carries its id to the server and
/// comes back in its span; the stream is whole; T24, T25 and T26 pass; the report draws
/// each request's phases and the KV cache.
///
/// The blocks stored follow from the setup: a request of 32 + 64 tokens computes 95 (its
/// last token never), so it fills 95 / 16 = 5 blocks of its own; the load's 16 and its
/// test request store 85. xray's probe sends one request and then 8 at once, all with
/// the same prompt and 16 output tokens: their first block holds the same tokens, so it is
/// stored once. Nothing is evicted: the run takes 16 x 6 + 6 + 9 x 2 = 120 blocks at most,
/// fewer than the 128 usable.
#[test]
fn xray_keeps_the_spans_and_kv_events_of_the_simulated_vllm() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, run) = traced_xray(tmp.path(), "", "");
    assert!(run.join("spans.otlp.jsonl").is_file(), "{}", shown(&out));
    assert!(run.join("kv-events.jsonl").is_file(), "{}", shown(&out));

    let spans =
        files::read_spans(&run.join("spans.otlp.jsonl"), Engine::Vllm.descriptor()).unwrap();
    assert_eq!((spans.skipped, spans.repeated), (0, 0));
    let prefix = id_prefix(&run);
    assert_eq!(prefix, "trace-");
    for i in 0..16 {
        let id = format!("cmpl-{prefix}{i}-0");
        let span = spans
            .requests
            .iter()
            .find(|r| r.id.as_deref() == Some(id.as_str()))
            .unwrap_or_else(|| panic!("no span {id}: {}", shown(&out)));
        assert_eq!(
            (span.prompt_tokens, span.output_tokens),
            (Some(32), Some(64))
        );
    }
    for tripwire in ["T24", "T25", "T26"] {
        let r = result_of(&run, tripwire);
        assert_eq!(r["status"], "pass", "{tripwire}: {r}\n{}", shown(&out));
    }
    // Every row joined with its span: by the id it sent.
    let t24 = result_of(&run, "T24");
    assert_eq!(
        (evidence(&t24, "joined"), evidence(&t24, "requests")),
        (16.0, 16.0)
    );
    let t26 = result_of(&run, "T26");
    let probe_blocks =
        (inferlint_live::probe::PROMPT.split_whitespace().count() as u64 + 16 - 1) / BLOCK;
    assert_eq!(probe_blocks, 1);
    assert_eq!(
        evidence(&t26, "stored_blocks"),
        (17 * 5 + probe_blocks) as f64
    );
    assert_eq!(evidence(&t26, "removed_blocks"), 0.0);
    assert_eq!(evidence(&t26, "missed"), 0.0);
    assert_eq!(
        evidence(&t26, "batches"),
        evidence(&t26, "last_seq") - evidence(&t26, "first_seq") + 1.0
    );
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains("Each request, lined up with the server"));
    // The phases of the joined requests, drawn only for requests the server's record
    // joined: the legend's key, and a bar for each of the 16 (each spent at least a step
    // in prefill and 63 in decode; a queue may be too short to draw).
    for phase in ["r-prefill", "r-decode"] {
        let drawn = html.matches(&format!("class=\"{phase}\"")).count();
        assert!(drawn > 16, "{phase}: {drawn}");
    }
    assert!(html.contains("class=\"r-queue\""));
    assert!(html.contains("The KV cache, event by event"));
    assert!(html.contains("No batch was lost."));
}

/// A load of 4 requests after xray's probe of 9 (one, then 8 at once): the probe's
/// requests reach the server before the load's span, and were taken for another run's
/// (9 of the 14 spans outside the span: "the file is another run's"), so T24 and T25
/// could not tell. The probe names each request (`X-Request-Id: inferlint-probe-...`), and
/// the server's spans carry the name: they are xray's own.
#[test]
fn the_probes_own_requests_are_not_another_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, run) = traced_xray(tmp.path(), "", "--num-prompts 4");
    let spans =
        files::read_spans(&run.join("spans.otlp.jsonl"), Engine::Vllm.descriptor()).unwrap();
    let probes = spans
        .requests
        .iter()
        .filter(|r| inferlint_core::model::lives::is_probe_request(r))
        .count();
    assert_eq!(probes, 9, "{}", shown(&out));
    for tripwire in ["T24", "T25"] {
        let r = result_of(&run, tripwire);
        assert_eq!(r["status"], "pass", "{tripwire}: {r}\n{}", shown(&out));
    }
    assert_eq!(evidence(&result_of(&run, "T24"), "joined"), 4.0);
}

/// An open loop the capped load cannot keep up with: 100 requests a second, at most 2
/// open, each request 64 tokens long. Every step of the simulated server lasts at least
/// 15 ms simulated, 3 ms at speed 5, so a request takes at least 64 x 3 = 192 ms; request
/// k (from 0) is due at k / 100 s but goes out only after k / 2 requests before it on its
/// slot ended, at least 192 ms x floor(k / 2) - k x 10 ms >= 172 ms late for every k >= 2:
/// beyond T23's floor of 50 ms and a tenth of its own latency. Requests 0 and 1 find their
/// slots free. So 14 of 16 waited, and T23 fails.
#[test]
fn an_open_loop_held_back_by_its_cap_fails_t23() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, run) = traced_xray(
        tmp.path(),
        "--speed 5",
        "--request-rate 100 --max-concurrency 2",
    );
    let t23 = result_of(&run, "T23");
    assert_eq!(t23["status"], "fail", "{t23}\n{}", shown(&out));
    assert_eq!(t23["evidence"]["loop"], "open");
    assert_eq!(
        (evidence(&t23, "waited"), evidence(&t23, "requests")),
        (14.0, 16.0)
    );
    assert!(evidence(&t23, "wait_p50_s") >= 0.172, "{t23}");
}

/// `--stream-interval 4`: the server sends the first token at once, then 4 a chunk, so a
/// 64-token answer comes in 1 + ceil(63 / 4) = 17 chunks. A load that counts chunks counts
/// 17 x 16 = 272 tokens where the server generated 16 x 64 = 1,024: T25 fails, off by
/// 1,024 / 272 = 3.76x. Counted from the server's usage, the counts agree but the chunks
/// carry 3.76 tokens each: T25 warns.
#[test]
fn chunks_of_four_tokens_fail_t25_when_counted_and_warn_when_not() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, run) = traced_xray(
        tmp.path(),
        "--speed 5 --stream-interval 4",
        "--count-chunks",
    );
    let t25 = result_of(&run, "T25");
    assert_eq!(t25["status"], "fail", "{t25}\n{}", shown(&out));
    assert_eq!(evidence(&t25, "tool_counted_tokens"), 272.0);
    assert_eq!(evidence(&t25, "server_generated_tokens"), 1024.0);
    assert_eq!(evidence(&t25, "chunks"), 272.0);

    let tmp = tempfile::tempdir().unwrap();
    let (out, run) = traced_xray(tmp.path(), "--speed 5 --stream-interval 4", "");
    let t25 = result_of(&run, "T25");
    assert_eq!(t25["status"], "warn", "{t25}\n{}", shown(&out));
    assert_eq!(evidence(&t25, "tool_counted_tokens"), 1024.0);
    assert_eq!(evidence(&t25, "chunks"), 272.0);
    assert_eq!(evidence(&t25, "tokens_per_chunk"), 3.76);
}

/// Batches 3 and 4 never sent on the PUB socket: with a replay that never answers they
/// stay lost, exactly those two, and T26 fails; with the replay, the subscriber fetches
/// both and T26 passes. At real speed the load outlasts the subscriber's 2 s wait for the
/// replay, so every later batch is received before it stops. The first five batches come
/// before the timed load: the probe's one, the test request's two prompt blocks at its
/// prefill and its three blocks filled while it decodes, one a step.
#[test]
fn batches_the_publisher_never_sent_fail_t26_unless_the_replay_sends_them() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, run) = traced_xray(
        tmp.path(),
        "--speed 1 --kv-drop-seq 3,4 --kv-replay-silent",
        "",
    );
    let t26 = result_of(&run, "T26");
    assert_eq!(t26["status"], "fail", "{t26}\n{}", shown(&out));
    assert_eq!(evidence(&t26, "missed"), 2.0);
    assert_eq!(evidence(&t26, "replayed"), 0.0);
    assert!(
        t26["message"]
            .as_str()
            .unwrap()
            .contains("the first seq 3 to 4"),
        "{t26}"
    );
    assert_eq!(
        evidence(&t26, "batches") + evidence(&t26, "missed"),
        evidence(&t26, "last_seq") + 1.0,
        "every number from 0 is a batch or a loss"
    );

    let tmp = tempfile::tempdir().unwrap();
    let (out, run) = traced_xray(tmp.path(), "--speed 1 --kv-drop-seq 3,4", "");
    let t26 = result_of(&run, "T26");
    assert_eq!(t26["status"], "pass", "{t26}\n{}", shown(&out));
    assert_eq!(evidence(&t26, "replayed"), 2.0);
    assert_eq!(evidence(&t26, "missed"), 0.0);
    assert_eq!(evidence(&t26, "batches"), evidence(&t26, "last_seq") + 1.0);
}

/// A client whose TTFT clock stops at the chat API's first chunk, the role chunk the
/// server sends before any token: at speed 0.25 each step of the server lasts at least
/// 15 / 0.25 = 60 ms, and a first token needs a step after the request arrived, so the
/// server's TTFT is at least 60 ms where the client's is one round trip on the loopback.
/// Its median falls short of the server's by more than T24's tolerance (25 ms, or a tenth
/// of the server's): T24 fails.
#[test]
fn a_ttft_clock_stopped_at_the_role_chunk_fails_t24() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, run) = traced_xray(
        tmp.path(),
        "--speed 0.25",
        "--endpoint /v1/chat/completions --ttft-first-chunk --num-prompts 8 --output-len 8",
    );
    let t24 = result_of(&run, "T24");
    assert_eq!(t24["status"], "fail", "{t24}\n{}", shown(&out));
    assert_eq!(evidence(&t24, "joined"), 8.0);
    let server = evidence(&t24, "server_ttft_p50_s");
    assert!(server >= 0.060, "{t24}");
    assert!(
        evidence(&t24, "difference_p50_s") < -evidence(&t24, "tolerance_s"),
        "{t24}"
    );
}

/// A `watch` in the background, stopped when dropped.
struct Watch(Option<Child>);

impl Watch {
    fn start(cwd: &Path, args: &[&str]) -> Watch {
        Watch(Some(
            Command::new(env!("CARGO_BIN_EXE_inferlint"))
                .current_dir(cwd)
                .arg("watch")
                .args(args)
                .env_remove("INFERLINT_ENGINE")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        ))
    }

    /// SIGTERM, and its end (killed if it does not end within 30 s).
    fn stop(mut self) -> Output {
        let child = self.0.take().unwrap();
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(out) => out.unwrap(),
            Err(_) => {
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
                panic!("watch did not stop on SIGTERM within 30 s");
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Waits until `done` holds of the file's text (at most `limit`, looking again each
/// 50 ms: the file is written by another process).
fn wait_for_file(path: &Path, limit: Duration, done: &dyn Fn(&str) -> bool) {
    let deadline = Instant::now() + limit;
    loop {
        if std::fs::read_to_string(path).is_ok_and(|t| done(&t)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} never got there",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `watch --otlp PORT --kv-events ENDPOINT` beside a simulated vLLM already running, the
/// other way round from xray: the server binds its PUB socket at a wildcard (`tcp://*`,
/// on the loopback) and the subscriber connects, and the spans go over OTLP/HTTP
/// (`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf`, to the endpoint as given). The
/// report of the folder joins the 8 requests with their spans by id and passes T24 to
/// T26.
#[test]
fn watch_receives_spans_over_http_and_subscribes_to_a_publisher_that_binds() {
    use inferlint_sim::kvpub::KvConfig;
    use inferlint_sim::kvwire::Encoding;
    use inferlint_sim::otlp_export::{OtlpConfig, Protocol};
    use inferlint_sim::server::{self, ServerConfig};

    let tmp = tempfile::tempdir().unwrap();
    let (otlp_port, pub_port, replay_port) = (free_port(), free_port(), free_port());
    let mut config = ServerConfig::new(Engine::Vllm);
    config.speed = 5.0;
    let mut otlp = OtlpConfig::new(&format!("http://127.0.0.1:{otlp_port}/v1/traces"));
    otlp.protocol = Protocol::HttpProtobuf;
    otlp.schedule_delay = Duration::from_millis(100);
    config.traces.otlp = Some(otlp);
    let kv = format!(
        r#"{{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:{pub_port}", "replay_endpoint": "tcp://*:{replay_port}"}}"#
    );
    config.traces.kv_events = KvConfig::parse(&kv, Encoding::VllmMaps).unwrap();
    let server = server::spawn(config).unwrap();

    let otlp_arg = otlp_port.to_string();
    let endpoint = format!("tcp://127.0.0.1:{pub_port}");
    let replay = format!("tcp://127.0.0.1:{replay_port}");
    let dir = tmp.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    let watch = Watch::start(
        &dir,
        &[
            &server.base_url,
            "-o",
            "run.series.jsonl",
            "--interval",
            "0.1",
            "--no-gpu",
            "--otlp",
            &otlp_arg,
            "--kv-events",
            &endpoint,
            "--kv-replay",
            &replay,
        ],
    );
    // The subscription is made (the publisher was listening), and the series has begun.
    wait_for_file(
        &dir.join("kv-events.jsonl"),
        Duration::from_secs(20),
        &|t| t.contains("\"subscribed\""),
    );
    wait_for_file(
        &dir.join("run.series.jsonl"),
        Duration::from_secs(20),
        &|t| t.lines().count() >= 3,
    );
    let load = inferlint_sim::load::run(
        &server.base_url,
        inferlint_sim::load::LoadConfig {
            requests: 8,
            concurrency: 4,
            prompt_tokens: 32,
            output_tokens: 32,
            save_detailed: true,
            request_id_prefix: Some("w-".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(load.completed(), 8);
    let bench = serde_json::to_string(&load.to_json()).unwrap();
    std::fs::write(dir.join("bench.json"), bench).unwrap();
    std::fs::write(dir.join("load.log"), &load.log).unwrap();
    // The spans of the 8 timed requests and the test request, exported every 100 ms.
    wait_for_file(
        &dir.join("spans.otlp.jsonl"),
        Duration::from_secs(20),
        &|t| t.matches("\"llm_request\"").count() >= 9,
    );
    let watched = watch.stop();
    assert!(
        watched.status.success(),
        "{}",
        String::from_utf8_lossy(&watched.stderr)
    );
    drop(server);

    let out = inferlint(&dir, &["report", ".", "--json"]);
    no_panic(&out);
    let results: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    let of = |t: &str| {
        results
            .iter()
            .rev()
            .find(|r| r["tripwire"] == t)
            .unwrap()
            .clone()
    };
    for tripwire in ["T24", "T25", "T26"] {
        assert_eq!(
            of(tripwire)["status"],
            "pass",
            "{tripwire}: {}",
            of(tripwire)
        );
    }
    assert_eq!(evidence(&of("T24"), "joined"), 8.0);
    // A request of 32 + 32 tokens fills (32 + 32 - 1) / 16 = 3 blocks: 9 requests, 27.
    assert_eq!(evidence(&of("T26"), "stored_blocks"), 27.0);
}

/// The simulator writes a run folder's spans as inferlint's receiver writes what it
/// receives: for the same export requests, the same line.
#[test]
fn the_simulated_span_file_is_the_receiver_s_encoding() {
    use inferlint_sim::otlp::{self, Processes, RequestRecord};
    use inferlint_sim::rng::Rng;

    let mut rng = Rng::new(3);
    let processes = Processes::new(77, &mut rng);
    let mut requests = otlp::boot_batches(&processes, 1_796_000_000.0, 1_796_000_120.5, &mut rng);
    let spans = (0..3)
        .map(|i| {
            otlp::request_span(
                &RequestRecord {
                    id: format!("cmpl-p{i}-0"),
                    arrival: 1_796_000_200.123_456_7 + f64::from(i),
                    end: 1_796_000_210.5 + f64::from(i),
                    queue_s: 0.001 * f64::from(i),
                    ttft_s: 0.25,
                    prefill_s: 0.2,
                    decode_s: 9.999_999_9,
                    e2e_s: 10.25,
                    prompt_tokens: 88,
                    completion_tokens: 1000,
                    max_tokens: 1000,
                },
                &mut rng,
            )
        })
        .collect();
    requests.push(otlp::request_batch(&processes, spans));
    for request in &requests {
        assert_eq!(
            otlp::json_line(request),
            inferlint_live::otlp::export_request_json(request)
        );
    }
}
