//! The engines' own accounts beyond spans and streams, through the command line: what
//! `xray --drain`, `--request-metrics` and `watch --drain` refuse for an engine without
//! the feature (each a usage error naming why, from the engine's table); `watch --drain`
//! and `xray --drain` beside a recording of the simulated TensorRT-LLM server on
//! 127.0.0.1, behind a server made here that answers the two endpoints; and `report`
//! judging T26 on what was drained.

// The helpers below unwrap as the tests do: a failure is the test failing.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use inferlint_core::Engine;
use inferlint_sim::server::{self, ServerConfig};
use serde_json::{json, Value};

use crate::common::{inferlint, json_results, no_panic, stderr, stdout, UNUSABLE_INPUT, USAGE};

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// vLLM serves nothing that forgets what it returns (its accounts are its spans and its
/// stream); TensorRT-LLM writes no per-request files (it serves them from
/// /perf_metrics), and publishes no stream to subscribe to; SGLang's files need --serve.
/// Each is refused before anything starts, naming the way that does exist.
#[test]
fn a_flag_of_a_feature_the_engine_lacks_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["xray", "-o", "r1", "--drain", "--serve", "vllm serve m", "--", "true"],
            "--drain: vLLM serves nothing that forgets what it returns: its account of each request is its spans (--otlp)",
        ),
        (
            &["xray", "-o", "r2", "--request-metrics", "--serve", "trtllm-serve m", "--", "true"],
            "--request-metrics: TensorRT-LLM writes no per-request files: it serves them from /perf_metrics (--drain)",
        ),
        (
            &["xray", "-o", "r3", "--kv-events", "--serve", "trtllm-serve m", "--", "true"],
            "it serves them from /kv_cache_events, which --drain reads",
        ),
        (
            &["--engine", "sglang", "xray", "-o", "r4", "--request-metrics", "--url", "http://127.0.0.1:9", "--", "true"],
            "--request-metrics needs --serve",
        ),
    ];
    for (args, expected) in cases {
        let o = inferlint(dir.path(), args);
        no_panic(&o);
        assert_eq!(o.status.code(), Some(USAGE), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(expected), "{args:?}: {}", stderr(&o));
    }
    // Nothing was made: the refusal came first.
    for run in ["r1", "r2", "r3", "r4"] {
        assert!(!dir.path().join(run).exists(), "{run}");
    }
}

/// `watch --drain` of a vLLM server: refused once the first scrape says what it is.
#[test]
fn watch_drain_of_an_engine_without_the_endpoints() {
    let server = server::spawn(ServerConfig::new(Engine::Vllm)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let o = inferlint(
        dir.path(),
        &[
            "watch",
            &server.base_url,
            "-o",
            "w/s.jsonl",
            "--drain",
            "--duration",
            "1",
        ],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(USAGE), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--drain: vLLM serves nothing"),
        "{}",
        stderr(&o)
    );
}

/// `watch --drain` of the simulated TensorRT-LLM server, which serves neither endpoint
/// (it answers 404): the warning that the drains are destructive, one note per file that
/// the server has no such endpoint, no failed drain (nothing was handed out), both files
/// closed, and the recording beside them as without the flag.
#[test]
fn watch_drain_writes_both_files_beside_the_recording() {
    let server = server::spawn(ServerConfig::new(Engine::Trtllm)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let o = inferlint(
        dir.path(),
        &[
            "watch",
            &server.base_url,
            "-o",
            "w/s.jsonl",
            "--drain",
            "--duration",
            "1",
        ],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: draining /perf_metrics and /kv_cache_events of"),
        "{}",
        stderr(&o)
    );
    let requests = lines(&dir.path().join("w/server-requests.jsonl"));
    assert_eq!(requests[0]["schema"], "inferlint.server-requests/1");
    assert_eq!(requests[0]["engine"], "trtllm");
    assert_eq!(requests[0]["same_host"], true);
    let notes: Vec<_> = requests.iter().filter_map(|l| l["note"].as_str()).collect();
    assert_eq!(notes.len(), 1, "{requests:?}");
    assert!(notes[0].contains("serves no such endpoint"), "{}", notes[0]);
    let end = requests.last().unwrap();
    assert_eq!(
        (end["end"].as_str(), end["failed_drains"].as_u64()),
        (Some("stopped"), Some(0))
    );
    let kv = lines(&dir.path().join("w/kv-events.jsonl"));
    assert_eq!(kv[0]["drained"], true);
    assert_eq!(kv[0]["numbered_by"], "event");
    assert!(kv.last().unwrap()["end"].is_string());
    assert!(
        stdout(&o).contains("drain: 0 answer(s), 0 record(s) -> w/server-requests.jsonl"),
        "{}",
        stdout(&o)
    );
}

/// A server on 127.0.0.1 in front of the simulated TensorRT-LLM server: it answers
/// `/perf_metrics` and `/kv_cache_events` itself, each answer once (what the engine hands
/// out it forgets: later answers are `[]`), and passes every other request to the
/// simulator. Dropping it stops it, on every path of a test.
struct Drained {
    base: String,
    port: u16,
    stopping: Arc<AtomicBool>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Drained {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

fn drained_in_front_of(sim: SocketAddr, perf: Value, kv: Value) -> Drained {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let stopping = Arc::new(AtomicBool::new(false));
    let stop = Arc::clone(&stopping);
    let held = Arc::new(Mutex::new(vec![
        ("/perf_metrics", Some(perf)),
        ("/kv_cache_events", Some(kv)),
    ]));
    let accept = std::thread::spawn(move || {
        let mut answering = Vec::new();
        for stream in listener.incoming() {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let Ok(stream) = stream else { continue };
            let held = Arc::clone(&held);
            answering.push(std::thread::spawn(move || relay(stream, sim, &held)));
        }
        for thread in answering {
            let _ = thread.join();
        }
    });
    Drained {
        base: format!("http://127.0.0.1:{port}"),
        port,
        stopping,
        accept: Some(accept),
    }
}

type Held = Mutex<Vec<(&'static str, Option<Value>)>>;

fn relay(mut stream: TcpStream, sim: SocketAddr, held: &Held) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).unwrap_or(0) == 0 {
        return;
    }
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let mut words = first.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let answer = {
        let mut held = held.lock().unwrap();
        held.iter_mut()
            .find(|(p, _)| *p == path)
            .map(|(_, v)| v.take().unwrap_or(Value::Array(Vec::new())))
    };
    let reply = match answer {
        Some(v) => {
            let bytes = v.to_string();
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{bytes}",
                bytes.len()
            )
            .into_bytes()
        }
        None => {
            let Ok(mut upstream) = TcpStream::connect(sim) else {
                return;
            };
            let ask = format!(
                "{method} {path} HTTP/1.1\r\nhost: {sim}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = upstream.write_all(ask.as_bytes());
            let _ = upstream.write_all(&body);
            let mut reply = Vec::new();
            let _ = upstream.read_to_end(&mut reply);
            reply
        }
    };
    let _ = stream.write_all(&reply);
}

/// `watch --drain` of a TensorRT-LLM server whose endpoints hold what
/// `OpenAIServer.get_perf_metrics` and `KVCacheEventSerializer` write: three finished
/// requests, and events 0 to 3 (the cache created; 2 blocks stored; 1 removed; 1
/// stored). Each is handed out once, whichever drain asks first. The records go to
/// server-requests.jsonl as given, the events to kv-events.jsonl numbered by event, and
/// `report` of the folder judges T26 on them: ids 0 to 3 without a hole are 4 events,
/// 3 blocks stored and 1 removed. `report --server-requests` reads the records from
/// where they are named.
#[test]
fn watch_drain_then_report_judges_the_drained_events() {
    let sim = server::spawn(ServerConfig::new(Engine::Trtllm)).unwrap();
    let item = |id: u64, arrival: f64| {
        json!({"request_id": id, "perf_metrics": {"first_iter": 1, "last_iter": 9,
            "timing_metrics": {"server_arrival_time": arrival, "arrival_time": arrival + 0.001953125,
                "first_scheduled_time": arrival + 0.0078125, "first_token_time": arrival + 0.03125,
                "server_first_token_time": arrival + 0.03125, "last_token_time": arrival + 0.25},
            "kv_cache_metrics": {"num_total_allocated_blocks": 2, "num_new_allocated_blocks": 1,
                "num_reused_blocks": 1, "num_missed_blocks": 1}}})
    };
    let block = |hash: u64| {
        json!({"type": "stored_block", "block_hash": hash, "cache_level": 0, "priority": 35,
            "tokens": vec![json!({"type": "unique_token", "token_id": 1, "token_extra_id": 0}); 32]})
    };
    let front = drained_in_front_of(
        sim.addr,
        json!([item(32, 100.0), item(33, 100.5), item(34, 101.0)]),
        json!([
            {"event_id": 0, "window_size": 4096, "data": {"type": "created", "num_blocks_per_cache_level": [1180, 0]}},
            {"event_id": 1, "window_size": 4096, "data": {"type": "stored", "parent_hash": null, "blocks": [block(11), block(12)]}},
            {"event_id": 2, "window_size": 4096, "data": {"type": "removed", "block_hashes": [11]}},
            {"event_id": 3, "window_size": 4096, "data": {"type": "stored", "parent_hash": 12, "blocks": [block(13)]}},
        ]),
    );
    let dir = tempfile::tempdir().unwrap();
    let o = inferlint(
        dir.path(),
        &[
            "watch",
            &front.base,
            "-o",
            "w/run.series.jsonl",
            "--drain",
            "--duration",
            "2",
        ],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("3 record(s) -> w/server-requests.jsonl"),
        "{}",
        stdout(&o)
    );
    let requests = lines(&dir.path().join("w/server-requests.jsonl"));
    let ids: Vec<_> = requests
        .iter()
        .filter_map(|l| l["record"]["request_id"].as_u64())
        .collect();
    assert_eq!(ids, [32, 33, 34]);

    let o = inferlint(dir.path(), &["report", "--json", "w"]);
    no_panic(&o);
    let results = json_results(&o);
    let t26 = results
        .iter()
        .find(|r| r["tripwire"] == "T26")
        .unwrap_or_else(|| panic!("no T26 in {results:#?}"));
    assert_eq!(t26["status"], "pass", "{t26:#?}");
    assert_eq!(t26["evidence"]["drained"], true);
    assert_eq!(t26["evidence"]["stored_blocks"], 3);
    assert_eq!(t26["evidence"]["removed_blocks"], 1);
    assert_eq!(
        (
            t26["evidence"]["first_seq"].as_u64(),
            t26["evidence"]["last_seq"].as_u64()
        ),
        (Some(0), Some(3))
    );
    let message = t26["message"].as_str().unwrap();
    assert!(
        message.starts_with("every KV event from id 0 to 3 reached the recorder (4 events in "),
        "{message}"
    );

    // The records named where they are: moved out of the folder, given by the flag.
    std::fs::rename(
        dir.path().join("w/server-requests.jsonl"),
        dir.path().join("elsewhere.jsonl"),
    )
    .unwrap();
    let o = inferlint(
        dir.path(),
        &[
            "report",
            "--json",
            "--server-requests",
            "missing.jsonl",
            "w",
        ],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(UNUSABLE_INPUT), "{}", stderr(&o));
    assert!(stderr(&o).contains("missing.jsonl"), "{}", stderr(&o));
    let o = inferlint(
        dir.path(),
        &[
            "report",
            "--json",
            "--server-requests",
            "elsewhere.jsonl",
            "w",
        ],
    );
    no_panic(&o);
    let results = json_results(&o);
    assert!(results.iter().any(|r| r["tripwire"] == "T26"));
    drop(front);
}

/// `xray --drain` of a TensorRT-LLM server already running (`--url`): the poller starts
/// before the first scrape and drains once more after the load, so the run folder holds
/// both files, what the endpoints held in them: request 7, and events 0 and 1 (the cache
/// created, one block stored). Without the engine named, xray cannot know what to drain
/// before it scrapes, and says so.
#[test]
fn xray_drain_of_a_running_server() {
    let sim = server::spawn(ServerConfig::new(Engine::Trtllm)).unwrap();
    let item = json!({"request_id": 7, "perf_metrics": {"first_iter": 1, "last_iter": 2,
        "timing_metrics": {"server_arrival_time": 50.0, "arrival_time": 50.0,
            "first_scheduled_time": 50.25, "first_token_time": 50.5,
            "server_first_token_time": 50.5, "last_token_time": 51.0},
        "kv_cache_metrics": {"num_total_allocated_blocks": 1, "num_new_allocated_blocks": 1,
            "num_reused_blocks": 0, "num_missed_blocks": 1}}});
    let front = drained_in_front_of(
        sim.addr,
        json!([item]),
        json!([
            {"event_id": 0, "window_size": 64, "data": {"type": "created", "num_blocks_per_cache_level": [8, 0]}},
            {"event_id": 1, "window_size": 64, "data": {"type": "stored", "parent_hash": null,
                "blocks": [{"type": "stored_block", "block_hash": 5, "cache_level": 0, "priority": 35, "tokens": []}]}},
        ]),
    );
    let dir = tempfile::tempdir().unwrap();
    let o = inferlint(
        dir.path(),
        &[
            "xray",
            "-o",
            "run",
            "--drain",
            "--url",
            &front.base,
            "--no-probe",
            "--",
            "true",
        ],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(USAGE), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--drain needs the engine"),
        "{}",
        stderr(&o)
    );
    let o = inferlint(
        dir.path(),
        &[
            "--engine",
            "trtllm",
            "xray",
            "-o",
            "run",
            "--drain",
            "--no-gpu",
            "--url",
            &front.base,
            "--no-probe",
            "--",
            "true",
        ],
    );
    no_panic(&o);
    assert!(
        stdout(&o).contains("== drain: draining /perf_metrics and /kv_cache_events of"),
        "{}\n{}",
        stdout(&o),
        stderr(&o)
    );
    let requests = lines(&dir.path().join("run/server-requests.jsonl"));
    let ids: Vec<_> = requests
        .iter()
        .filter_map(|l| l["record"]["request_id"].as_u64())
        .collect();
    assert_eq!(ids, [7]);
    assert_eq!(requests.last().unwrap()["end"], "stopped");
    let kv = lines(&dir.path().join("run/kv-events.jsonl"));
    let batches: Vec<_> = kv
        .iter()
        .filter(|l| l["seq"].is_u64())
        .map(|l| {
            (
                l["seq"].as_u64(),
                l["seq_to"].as_u64(),
                l["stored_blocks"].as_u64(),
            )
        })
        .collect();
    assert_eq!(batches, [(Some(0), Some(1), Some(1))]);
    drop(front);
}
