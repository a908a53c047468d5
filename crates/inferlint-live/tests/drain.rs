//! The poller of TensorRT-LLM's drained endpoints against an HTTP server made in the test
//! on 127.0.0.1, which answers what each case scripts: `/perf_metrics` items and
//! `/kv_cache_events` events in the shapes `OpenAIServer.get_perf_metrics` and
//! `KVCacheEventSerializer` write them (`tensorrt_llm/serve/openai_server.py`,
//! `tensorrt_llm/_utils.py`), and garbage, a server that hangs, one that drops the
//! connection, one not listening at all.

// The helpers below unwrap as the tests do: a failure is the test failing.
#![allow(clippy::unwrap_used)]

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use inferlint_core::engine::TRTLLM;
use inferlint_core::judging::checks::kv_stream::{kv_events, KvStreamInputs};
use inferlint_core::model::traces::KvNumbering;
use inferlint_core::Status;
use inferlint_engines::files::{read_kv_events, read_server_requests};
use inferlint_live::drain::{destructive_warning, DrainOptions, Drainer};
use inferlint_live::BaseUrl;
use serde_json::{json, Value};

/// What the server answers one request with.
#[derive(Clone)]
enum Reply {
    Json(Value),
    Bytes(&'static [u8]),
    Status(u16),
    Hang,
    Drop,
}

#[derive(Default)]
struct Script {
    replies: HashMap<&'static str, VecDeque<Reply>>,
    asked: Vec<(String, String)>,
}

/// A server on 127.0.0.1 that answers each path's requests with its script, then `[]`.
/// Dropping it stops it on every path of a test, a failed assertion's too: its accept
/// loop is woken and joined, and a connection held by [`Reply::Hang`] is let go.
struct Server {
    base: BaseUrl,
    script: Arc<Mutex<Script>>,
    stopping: Arc<AtomicBool>,
    port: u16,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

fn serve(script: Script) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = Arc::new(Mutex::new(script));
    let stopping = Arc::new(AtomicBool::new(false));
    let (shared, stop) = (Arc::clone(&script), Arc::clone(&stopping));
    let accept = std::thread::spawn(move || {
        let mut answering = Vec::new();
        for stream in listener.incoming() {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let Ok(stream) = stream else { continue };
            let (script, stop) = (Arc::clone(&shared), Arc::clone(&stop));
            answering.push(std::thread::spawn(move || answer(stream, &script, &stop)));
        }
        for thread in answering {
            let _ = thread.join();
        }
    });
    Server {
        base: BaseUrl::parse(&format!("http://127.0.0.1:{port}")).unwrap(),
        script,
        stopping,
        port,
        accept: Some(accept),
    }
}

fn answer(mut stream: TcpStream, script: &Mutex<Script>, stopping: &AtomicBool) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
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
    let (method, path) = (
        words.next().unwrap_or("").to_owned(),
        words.next().unwrap_or("").to_owned(),
    );
    let reply = {
        let mut s = script.lock().unwrap();
        s.asked.push((method, path.clone()));
        s.replies
            .get_mut(path.as_str())
            .and_then(VecDeque::pop_front)
            .unwrap_or(Reply::Json(json!([])))
    };
    let (status, bytes) = match reply {
        Reply::Json(v) => (200, v.to_string().into_bytes()),
        Reply::Bytes(b) => (200, b.to_vec()),
        Reply::Status(code) => (code, b"{}".to_vec()),
        Reply::Hang => {
            // Holds the connection, answering nothing, until the server stops.
            while !stopping.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(10));
            }
            return;
        }
        Reply::Drop => return,
    };
    let head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        bytes.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&bytes);
}

fn script(pairs: Vec<(&'static str, Vec<Reply>)>) -> Script {
    Script {
        replies: pairs
            .into_iter()
            .map(|(path, replies)| (path, replies.into()))
            .collect(),
        asked: Vec::new(),
    }
}

/// A `/perf_metrics` item: steady-clock seconds on this host.
fn item(id: u64, arrival: f64) -> Value {
    json!({"request_id": id, "perf_metrics": {"first_iter": 1, "last_iter": 9,
        "timing_metrics": {"server_arrival_time": arrival, "arrival_time": arrival,
            "first_scheduled_time": arrival + 0.0078125, "first_token_time": arrival + 0.03125,
            "server_first_token_time": arrival + 0.03125, "last_token_time": arrival + 0.25},
        "kv_cache_metrics": {"num_total_allocated_blocks": 2, "num_new_allocated_blocks": 2,
            "num_reused_blocks": 0, "num_missed_blocks": 2}}})
}

fn stored(id: u64, blocks: usize) -> Value {
    let token = json!({"type": "unique_token", "token_id": 1, "token_extra_id": 0});
    let block = json!({"type": "stored_block", "block_hash": id, "cache_level": 0,
        "priority": 35, "tokens": vec![token; 32]});
    json!({"event_id": id, "window_size": 4096,
        "data": {"type": "stored", "parent_hash": null, "blocks": vec![block; blocks]}})
}

fn removed(id: u64, hashes: usize) -> Value {
    json!({"event_id": id, "window_size": 4096,
        "data": {"type": "removed", "block_hashes": vec![7; hashes]}})
}

fn options(base: BaseUrl, dir: &Path) -> DrainOptions {
    let mut o = DrainOptions::new(base, &TRTLLM);
    o.requests_out = Some(dir.join("server-requests.jsonl"));
    o.kv_events_out = Some(dir.join("kv-events.jsonl"));
    // One drain at the start, one at the stop, none between.
    o.interval = Duration::from_secs(60);
    o.timeout = Duration::from_millis(500);
    o
}

/// Waits until the server has been asked `n` times, at most 20 s.
fn asked(script: &Mutex<Script>, n: usize) {
    for _ in 0..2000 {
        if script.lock().unwrap().asked.len() >= n {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the server was asked fewer than {n} times");
}

/// Two drains of each endpoint: one at the start, the last at the stop, each taking
/// what the script held then. The records are read back as the requests they are, the
/// endpoints asked with the methods the engine's table names (GET, POST), and the KV
/// events of both answers, ids 0 to 4 without a break, read back as a whole stream.
#[test]
fn what_each_drain_takes_is_written_and_read_back() {
    let server = serve(script(vec![
        (
            "/perf_metrics",
            vec![
                Reply::Json(json!([item(32, 1000.0), item(33, 1000.5)])),
                Reply::Json(json!([item(34, 1001.0)])),
            ],
        ),
        (
            "/kv_cache_events",
            vec![
                Reply::Json(json!([
                    {"event_id": 0, "window_size": 4096, "data": {"type": "created", "num_blocks_per_cache_level": [100, 0]}},
                    stored(1, 2),
                    removed(2, 1),
                ])),
                Reply::Json(json!([stored(3, 1), removed(4, 2)])),
            ],
        ),
    ]));
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(server.base.clone(), dir.path());
    o.server_started_after = true;
    let drainer = Drainer::start(o).unwrap();
    asked(&server.script, 2);
    let summary = drainer.stop();
    assert_eq!(summary.write_error, None);
    let (_, totals) = summary.requests.unwrap();
    assert_eq!((totals.drains, totals.records), (2, 3));
    let asked = server.script.lock().unwrap().asked.clone();
    assert!(asked.contains(&("GET".into(), "/perf_metrics".into())));
    assert!(asked.contains(&("POST".into(), "/kv_cache_events".into())));
    assert!(!asked
        .iter()
        .any(|(m, p)| m == "GET" && p == "/kv_cache_events"));

    let requests =
        read_server_requests(&dir.path().join("server-requests.jsonl"), &TRTLLM).unwrap();
    let ids: Vec<_> = requests
        .requests
        .iter()
        .map(|r| r.id.clone().unwrap())
        .collect();
    assert_eq!(ids, ["32", "33", "34"]);
    assert_eq!(requests.requests[0].ttft_s, Some(0.03125));
    // 127.0.0.1 is this host: the monotonic arrival is placed on the wall clock.
    assert!(requests.requests[0].arrival.is_some());

    let events = read_kv_events(&dir.path().join("kv-events.jsonl")).unwrap();
    assert!(events.drained);
    assert_eq!(events.numbered_by, KvNumbering::Event);
    assert_eq!(events.seq_range, Some((0, 4)));
    assert_eq!(events.numbers_received, 5);
    assert_eq!(events.batches, 2);
    assert_eq!(events.missed_batches(), 0);
    assert_eq!((events.stored_blocks(), events.removed_blocks()), (3, 3));
    assert_eq!(events.stored_tokens(), 3 * 32);
    let verdict = judge(&events);
    assert_eq!(verdict.status, Status::Pass, "{}", verdict.message);
    assert!(
        verdict.message.starts_with(
            "every KV event from id 0 to 4 reached the recorder (5 events in 2 answer(s)"
        ),
        "{}",
        verdict.message
    );
}

fn judge(events: &inferlint_core::model::traces::KvEvents) -> inferlint_core::CheckResult {
    kv_events(&KvStreamInputs {
        events,
        server_finished: Some(3.0),
        block_size: None,
        largest_request: None,
        cache_off: None,
        drain_needs: TRTLLM.kv_events_drain.map(|d| d.needs),
    })
}

/// Ids 0 and 1, then 4: 2 and 3 went to another reader (or the engine's full buffer),
/// a gap record says so, and T26 fails counting events; a poller started before the
/// server whose first answer starts at id 3 missed 0 to 2.
#[test]
fn a_jump_in_the_event_ids_is_a_gap() {
    let server = serve(script(vec![(
        "/kv_cache_events",
        vec![
            Reply::Json(json!([stored(0, 1), removed(1, 1)])),
            Reply::Json(json!([removed(4, 1)])),
        ],
    )]));
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(server.base.clone(), dir.path());
    o.requests_out = None;
    let drainer = Drainer::start(o).unwrap();
    asked(&server.script, 1);
    let (_, totals) = drainer.stop().kv_events.unwrap();
    assert_eq!((totals.gaps, totals.missed), (1, 2));
    let events = read_kv_events(&dir.path().join("kv-events.jsonl")).unwrap();
    assert_eq!(events.missed_batches(), 2);
    let verdict = judge(&events);
    assert_eq!(verdict.status, Status::Fail);
    assert!(
        verdict
            .message
            .starts_with("2 of 5 KV events were lost and not recovered (1 hole(s), the first seq 2 to 3: never received: another reader"),
        "{}",
        verdict.message
    );

    let server = serve(script_kv(vec![Reply::Json(json!([removed(3, 1)]))]));
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(server.base.clone(), dir.path());
    o.requests_out = None;
    o.server_started_after = true;
    let drainer = Drainer::start(o).unwrap();
    asked(&server.script, 1);
    drainer.stop();
    let events = read_kv_events(&dir.path().join("kv-events.jsonl")).unwrap();
    assert_eq!(
        events
            .gaps
            .iter()
            .map(|g| (g.from_seq, g.to_seq))
            .collect::<Vec<_>>(),
        [(0, 2)]
    );
    // The same answer to a poller that joined a running server: ids before its first
    // drain are not the recording's, and no hole.
    let server = serve(script_kv(vec![Reply::Json(json!([removed(3, 1)]))]));
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(server.base.clone(), dir.path());
    o.requests_out = None;
    let drainer = Drainer::start(o).unwrap();
    asked(&server.script, 1);
    drainer.stop();
    let events = read_kv_events(&dir.path().join("kv-events.jsonl")).unwrap();
    assert!(events.gaps.is_empty());
}

fn script_kv(replies: Vec<Reply>) -> Script {
    script(vec![("/kv_cache_events", replies)])
}

/// Garbage, a list of the wrong things, a 500, a server that hangs past the timeout and
/// one that drops the connection: each drain is a line that says what it held is lost,
/// the file reads back, and nothing panics. A KV answer that could not be read makes T26
/// Can't tell.
#[test]
fn a_server_that_answers_badly() {
    let server = serve(script(vec![
        (
            "/perf_metrics",
            vec![
                Reply::Bytes(b"<html>oops"),
                Reply::Json(json!({"detail": "x"})),
                Reply::Status(500),
                Reply::Hang,
                Reply::Drop,
                Reply::Json(json!([item(1, 1000.0)])),
            ],
        ),
        (
            "/kv_cache_events",
            vec![Reply::Bytes(b"[{\"event_id\": 0, ")],
        ),
    ]));
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(server.base.clone(), dir.path());
    o.interval = Duration::from_millis(100);
    let drainer = Drainer::start(o).unwrap();
    asked(&server.script, 14);
    let summary = drainer.stop();
    let (_, totals) = summary.requests.unwrap();
    assert_eq!(totals.failed_drains, 5);
    assert_eq!(totals.records, 1);
    let text = std::fs::read_to_string(dir.path().join("server-requests.jsonl")).unwrap();
    assert!(text.contains("timed out"), "{text}");
    assert!(text.contains("HTTP 500"), "{text}");
    assert!(text.contains("is lost"), "{text}");
    let requests =
        read_server_requests(&dir.path().join("server-requests.jsonl"), &TRTLLM).unwrap();
    assert_eq!(requests.requests.len(), 1);
    let (_, kv) = summary.kv_events.unwrap();
    assert_eq!(kv.bad_frames, 1);
    let events = read_kv_events(&dir.path().join("kv-events.jsonl")).unwrap();
    assert_eq!(judge(&events).status, Status::Unknown);
}

/// Nothing listening: one note, no failed drain (nothing was handed out), and the
/// closing lines at the stop.
#[test]
fn a_server_not_listening() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let base = BaseUrl::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(base, dir.path());
    o.interval = Duration::from_millis(100);
    let drainer = Drainer::start(o).unwrap();
    let requests = dir.path().join("server-requests.jsonl");
    for _ in 0..2000 {
        if std::fs::read_to_string(&requests).is_ok_and(|t| t.contains("nothing listens")) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // What is checked is that no second note comes: three more drains are tried meanwhile.
    std::thread::sleep(Duration::from_millis(300));
    let summary = drainer.stop();
    let (_, totals) = summary.requests.unwrap();
    assert_eq!((totals.drains, totals.failed_drains), (0, 0));
    let text = std::fs::read_to_string(dir.path().join("server-requests.jsonl")).unwrap();
    assert_eq!(text.matches("nothing listens").count(), 1, "{text}");
    assert!(text.lines().last().unwrap().contains("\"end\""));
    let events = read_kv_events(&dir.path().join("kv-events.jsonl")).unwrap();
    assert_eq!(events.batches, 0);
    assert!(events.end.is_some());
}

/// The engine's table decides what is drained: vLLM has neither endpoint, and the
/// warning names both of TensorRT-LLM's.
#[test]
fn only_an_engine_with_the_endpoints_is_drained() {
    let base = BaseUrl::parse("http://127.0.0.1:9").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(base.clone(), dir.path());
    o.engine = &inferlint_core::engine::VLLM;
    let e = Drainer::start(o).unwrap_err().to_string();
    assert!(
        e.contains("vLLM serves no per-request records to drain"),
        "{e}"
    );
    let warning = destructive_warning(&base, &TRTLLM);
    assert!(
        warning.contains("/perf_metrics and /kv_cache_events"),
        "{warning}"
    );
    assert!(warning.contains("loses what this one takes"), "{warning}");
}

/// An answer past what any engine holds between two drains (100,050 records where
/// `perf_metrics_max_requests` keeps a thousand), with seven entries that are no record:
/// 100,000 records are written, the rest counted in the totals and in a note line that
/// says how many and why; the file reads back to the records written.
#[test]
fn an_answer_past_the_bounds_is_cut_and_counted() {
    // Records of the request id alone: 2 MB, where whole ones would be 40.
    let mut entries: Vec<Value> = (0..100_050).map(|i| json!({"request_id": i})).collect();
    entries.extend(std::iter::repeat_n(json!(0), 7));
    let server = serve(script(vec![(
        "/perf_metrics",
        vec![Reply::Json(Value::Array(entries))],
    )]));
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(server.base.clone(), dir.path());
    o.kv_events_out = None;
    o.timeout = Duration::from_secs(30);
    let drainer = Drainer::start(o).unwrap();
    asked(&server.script, 1);
    // The stop cuts a drain still in flight after a second: wait for this one's note.
    let file = dir.path().join("server-requests.jsonl");
    for _ in 0..2000 {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if text.contains("entries were not written") {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let summary = drainer.stop();
    assert_eq!(summary.write_error, None);
    let (path, totals) = summary.requests.unwrap();
    assert_eq!((totals.records, totals.cut), (100_000, 57));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("57 of the answer's 100057 entries were not written: 50 past the most"),
        "no note line"
    );
    let read = read_server_requests(&path, &TRTLLM).unwrap();
    assert_eq!(read.requests.len(), 100_000);
}

/// A server that hangs when the poller is stopped holds the stop for a second, not for
/// the drain's timeout (a minute here): the drain in flight is cut then and written as a
/// failed drain that says so, and the closing line follows.
#[test]
fn a_drain_in_flight_at_the_stop_is_cut_a_second_later() {
    let server = serve(script(vec![("/perf_metrics", vec![Reply::Hang])]));
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(server.base.clone(), dir.path());
    o.kv_events_out = None;
    o.timeout = Duration::from_secs(60);
    let drainer = Drainer::start(o).unwrap();
    asked(&server.script, 1);
    let summary = drainer.stop();
    let (path, totals) = summary.requests.unwrap();
    assert!(totals.failed_drains >= 1, "{totals:?}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("the poller was stopped while this drain was waiting"),
        "{text}"
    );
    assert!(text.contains("\"end\""), "{text}");
}
