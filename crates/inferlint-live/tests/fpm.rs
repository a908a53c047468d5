//! The forward-pass metrics subscriber against a publisher made here with the zeromq
//! crate's PUB socket on 127.0.0.1, sending what vLLM's `ZmqForwardPassMetricsPublisher`
//! sends (`["", sequence as 8 bytes big-endian, msgpack map of the struct]`): steps, a
//! heartbeat, a hole in the sequence, a key of a later release, another version and a
//! payload cut short. The file written is read back by the project's own step reader.
//! Every wait is for a line in the subscriber's file, never for a time.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use inferlint_engines::files::read_steps;
use inferlint_live::fpm::FpmSubscriber;
use serde_json::Value;
use tokio::runtime::Runtime;
use zeromq::{PubSocket, Socket, SocketSend, ZmqMessage};

use crate::common::LIMIT;

/// What one message says, in the struct's terms.
#[derive(Clone, Copy, Default)]
struct Frame {
    version: Option<i64>,
    wall_time: f64,
    prefill_requests: u64,
    prefill_tokens: u64,
    decode_requests: u64,
    queued_prefill: u64,
    queued_decode: u64,
    /// A key this reader does not know, as a later release might add.
    later_key: bool,
    /// Left out: SGLang's first form has no `queued_requests`... nor `version`.
    without_queue: bool,
}

/// The payload as msgspec writes the struct: a map of field names, nested maps.
fn payload(seq: u64, f: &Frame) -> Vec<u8> {
    use rmp::encode::*;
    let mut out = Vec::new();
    let fields =
        6 + u32::from(f.version.is_some()) + u32::from(f.later_key) + u32::from(!f.without_queue);
    write_map_len(&mut out, fields).unwrap();
    if let Some(v) = f.version {
        write_str(&mut out, "version").unwrap();
        write_sint(&mut out, v).unwrap();
    }
    write_str(&mut out, "worker_id").unwrap();
    write_str(&mut out, "engine-0").unwrap();
    write_str(&mut out, "dp_rank").unwrap();
    write_uint(&mut out, 0).unwrap();
    write_str(&mut out, "counter_id").unwrap();
    write_uint(&mut out, seq).unwrap();
    write_str(&mut out, "timing_scope").unwrap();
    write_str(&mut out, "execute_model_cuda").unwrap();
    if f.later_key {
        write_str(&mut out, "spec_decode").unwrap();
        write_map_len(&mut out, 2).unwrap();
        write_str(&mut out, "accepted").unwrap();
        write_uint(&mut out, 9).unwrap();
        write_str(&mut out, "per_position").unwrap();
        write_array_len(&mut out, 2).unwrap();
        write_uint(&mut out, 5).unwrap();
        write_uint(&mut out, 4).unwrap();
    }
    write_str(&mut out, "wall_time").unwrap();
    write_f64(&mut out, f.wall_time).unwrap();
    write_str(&mut out, "scheduled_requests").unwrap();
    write_map_len(&mut out, 7).unwrap();
    for (k, v) in [
        ("num_prefill_requests", f.prefill_requests),
        ("sum_prefill_tokens", f.prefill_tokens),
        ("sum_prefill_kv_tokens", 0),
        ("num_decode_requests", f.decode_requests),
        ("sum_decode_kv_tokens", f.decode_requests * 100),
    ] {
        write_str(&mut out, k).unwrap();
        write_uint(&mut out, v).unwrap();
    }
    for k in ["var_prefill_length", "var_decode_kv_tokens"] {
        write_str(&mut out, k).unwrap();
        write_f64(&mut out, 0.0).unwrap();
    }
    if !f.without_queue {
        write_str(&mut out, "queued_requests").unwrap();
        write_map_len(&mut out, 6).unwrap();
        for (k, v) in [
            ("num_prefill_requests", f.queued_prefill),
            ("sum_prefill_tokens", f.queued_prefill * 50),
            ("num_decode_requests", f.queued_decode),
            ("sum_decode_kv_tokens", f.queued_decode * 70),
        ] {
            write_str(&mut out, k).unwrap();
            write_uint(&mut out, v).unwrap();
        }
        for k in ["var_prefill_length", "var_decode_kv_tokens"] {
            write_str(&mut out, k).unwrap();
            write_f64(&mut out, 0.0).unwrap();
        }
    }
    out
}

/// The heartbeat vLLM's publisher sends after a second with nothing to send: the
/// default struct with the worker's identity.
fn heartbeat(seq: u64) -> Vec<u8> {
    payload(
        seq,
        &Frame {
            version: Some(1),
            ..Frame::default()
        },
    )
}

struct Publisher {
    runtime: Runtime,
    socket: PubSocket,
    endpoint: String,
}

impl Publisher {
    fn start() -> Publisher {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (socket, endpoint) = runtime.block_on(async {
            let mut socket = PubSocket::new();
            let endpoint = socket.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            (socket, endpoint)
        });
        Publisher {
            runtime,
            socket,
            endpoint,
        }
    }

    fn send(&mut self, seq: u64, body: Vec<u8>) {
        let frames = vec![
            Bytes::new(),
            Bytes::copy_from_slice(&seq.to_be_bytes()),
            Bytes::from(body),
        ];
        let message = ZmqMessage::try_from(frames).unwrap();
        self.runtime.block_on(self.socket.send(message)).unwrap();
    }
}

/// The file's lines past the header, as JSON.
fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn wait_for(path: &Path, what: &str, matches: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !lines(path).iter().any(&matches) {
        assert!(
            Instant::now() < deadline,
            "{} never held {what}:\n{}",
            path.display(),
            std::fs::read_to_string(path).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A warm-up step: one decode, nothing else; sent until one arrives, since a PUB socket
/// drops what it sends before the subscription reaches it.
const WARM: Frame = Frame {
    version: Some(1),
    wall_time: 0.001,
    prefill_requests: 0,
    prefill_tokens: 0,
    decode_requests: 1,
    queued_prefill: 0,
    queued_decode: 0,
    later_key: false,
    without_queue: false,
};

#[test]
fn steps_heartbeats_holes_and_garbage_are_written_as_the_step_reader_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steps.jsonl");
    let mut publisher = Publisher::start();
    let opened = inferlint_live::clock::now();
    let sub = FpmSubscriber::start(&publisher.endpoint, &path).unwrap();
    // The publisher was listening first: messages before the subscription are not a
    // hole, so the first received starts the sequence.
    let deadline = Instant::now() + LIMIT;
    let mut n = 0;
    loop {
        publisher.send(n, payload(n, &WARM));
        n += 1;
        if !lines(&path).is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "no warm-up step arrived");
        std::thread::sleep(Duration::from_millis(5));
    }
    // n: a step of 2 prefills (300 tokens) beside 4 decodes, 12 ms, 3 requests waiting
    // for their prefill and 1 preempted, with a key of a later release.
    publisher.send(
        n,
        payload(
            n,
            &Frame {
                version: Some(1),
                wall_time: 0.012,
                prefill_requests: 2,
                prefill_tokens: 300,
                decode_requests: 4,
                queued_prefill: 3,
                queued_decode: 1,
                later_key: true,
                without_queue: false,
            },
        ),
    );
    // n+1: a heartbeat. n+2..=n+4: never sent (lost). n+5: 4 decodes, 5 ms, in SGLang's
    // first form (no version, no queue: nobody waiting, by the struct's default).
    publisher.send(n + 1, heartbeat(n + 1));
    publisher.send(
        n + 5,
        payload(
            n + 5,
            &Frame {
                version: None,
                wall_time: 0.005,
                decode_requests: 4,
                without_queue: true,
                ..Frame::default()
            },
        ),
    );
    // n+6: version 2 (not read); n+7: a payload cut in half.
    publisher.send(
        n + 6,
        payload(
            n + 6,
            &Frame {
                version: Some(2),
                wall_time: 0.009,
                decode_requests: 8,
                ..Frame::default()
            },
        ),
    );
    let whole = payload(n + 7, &WARM);
    publisher.send(n + 7, whole[..whole.len() / 2].to_vec());
    // n+8: one prefill of 64 tokens alone, 20 ms.
    publisher.send(
        n + 8,
        payload(
            n + 8,
            &Frame {
                version: Some(1),
                wall_time: 0.020,
                prefill_requests: 1,
                prefill_tokens: 64,
                ..Frame::default()
            },
        ),
    );
    wait_for(&path, "the last step", |l| l["pt"] == 64);
    let summary = sub.stop();
    let closed = inferlint_live::clock::now();

    // The warm-up steps received: each a line of one decode and nothing prefilled.
    let all = lines(&path);
    let warm = all.iter().filter(|l| l["dr"] == 1 && l["pt"] == 0).count() as u64;
    assert!(warm >= 1);

    let steps = read_steps(&path).unwrap();
    // Three steps besides the warm-up (n, n+5, n+8); the heartbeat, the other version
    // and the cut payload are none.
    assert_eq!(steps.steps, warm + 3);
    assert_eq!(steps.skipped, 0, "every line is one the reader knows");
    // Every line carries the batch: all are detailed.
    assert!(steps.iteration_details);
    assert_eq!(steps.detailed, warm + 3);
    // The gap lines, in order: 3 lost (n+2..=n+4), 1 of version 2, 1 unreadable.
    let gaps: Vec<u64> = steps.gaps.iter().map(|g| g.steps).collect();
    assert_eq!(gaps, vec![3, 1, 1], "{:?}", steps.gaps);
    assert_eq!(steps.dropped, 5);
    assert!(
        steps.gaps[0].reason.contains("skipped 3"),
        "{}",
        steps.gaps[0].reason
    );
    assert!(
        steps.gaps[1].reason.contains("version 2"),
        "{}",
        steps.gaps[1].reason
    );
    assert!(
        steps.gaps[2].reason.contains("could not be read"),
        "{}",
        steps.gaps[2].reason
    );
    // Only step n had requests queued (3 + 1).
    assert_eq!(steps.queued_steps, 1);
    let queued_max = steps.bins.values().map(|b| b.queued_max).max();
    assert_eq!(queued_max, Some(4));
    // Prompt tokens: 300 (n) and 64 (n+8); the warm-up prefilled none.
    let prefill: u64 = steps.bins.values().map(|b| b.prefill_tokens).sum();
    assert_eq!(prefill, 364);
    // Decode batches of 4: step n carried a prefill (12 ms), step n+5 did not (5 ms).
    let four = &steps.mix[&inferlint_core::model::steps::decode_bucket(4)];
    assert_eq!((four.mixed, four.pure), (1, 1));
    assert!((four.mixed_ms - 12.0).abs() < 1e-9 && (four.pure_ms - 5.0).abs() < 1e-9);
    // No key the stream does not carry was written.
    let step_n = all.iter().find(|l| l["pt"] == 300).unwrap();
    let mut keys: Vec<&str> = step_n
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["dr", "ms", "pr", "pt", "t", "w"]);
    // Receipt times, on the header's clocks: within the subscriber's life, in order.
    let ts: Vec<f64> = all.iter().filter_map(|l| l["t"].as_f64()).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
    let first = steps.wall(steps.first_t.unwrap());
    let last = steps.wall(steps.last_t.unwrap());
    assert!(first >= opened.wall_s - 0.01 && last <= closed.wall_s + 0.01);
    // The end line and the totals agree with what was sent.
    let end = steps.end.unwrap();
    assert_eq!((end.steps, end.dropped), (Some(warm + 3), Some(5)));
    let t = &summary.totals;
    assert_eq!(
        (t.steps, t.heartbeats, t.gaps, t.missed),
        (warm + 3, 1, 1, 3)
    );
    assert_eq!((t.bad_frames, t.other_version, t.restarts), (1, 1, 0));
    assert_eq!(t.versions_not_read, vec![2]);
    let end_line = all.last().unwrap();
    assert_eq!(end_line["heartbeats"], 1);
    assert_eq!(end_line["worker_id"], "engine-0");
    assert_eq!(summary.listening_at_start, Some(true));
    assert_eq!(summary.write_error, None);
}

/// A publisher that starts again (an engine restart) sends from 0 again: a gap line
/// that says so, and what follows is read.
#[test]
fn a_sequence_that_goes_back_is_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steps.jsonl");
    let mut publisher = Publisher::start();
    let sub = FpmSubscriber::start(&publisher.endpoint, &path).unwrap();
    let deadline = Instant::now() + LIMIT;
    let mut n = 10;
    loop {
        publisher.send(n, payload(n, &WARM));
        n += 1;
        if !lines(&path).is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "no warm-up step arrived");
        std::thread::sleep(Duration::from_millis(5));
    }
    // The new run's message 2 (0 and 1 lost), then its 3.
    let step = Frame {
        version: Some(1),
        wall_time: 0.004,
        decode_requests: 6,
        ..Frame::default()
    };
    publisher.send(2, payload(2, &step));
    publisher.send(3, payload(3, &step));
    wait_for(&path, "the step after the restart", |l| {
        l["dr"] == 6 && l["t"].is_number()
    });
    wait_for(&path, "both steps after the restart", |_| {
        lines(&path).iter().filter(|l| l["dr"] == 6).count() == 2
    });
    let summary = sub.stop();
    let steps = read_steps(&path).unwrap();
    assert_eq!(steps.gap_lines, 1);
    assert_eq!(steps.gaps[0].steps, 2, "messages 0 and 1 of the new run");
    assert!(
        steps.gaps[0].reason.contains("started again"),
        "{}",
        steps.gaps[0].reason
    );
    assert_eq!(summary.totals.restarts, 1);
    assert_eq!(summary.totals.gaps, 0);
}

/// A port nothing listens on now (bound, read, released), for a publisher that binds it
/// after the subscriber started.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The engine comes up after the subscriber: every message from 0 belongs to the
/// recording, so those lost before the subscription took hold (here 0 to 4, never sent,
/// and any a PUB socket dropped while the subscriber joined) are one hole from 0, and
/// every message up to the last is either a step line or in that hole.
#[test]
fn a_publisher_that_starts_after_the_subscriber_leaves_a_hole_from_zero() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steps.jsonl");
    let port = free_port();
    let sub = FpmSubscriber::start(&format!("tcp://*:{port}"), &path).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let socket = runtime.block_on(async {
        let mut socket = PubSocket::new();
        socket
            .bind(&format!("tcp://127.0.0.1:{port}"))
            .await
            .unwrap();
        socket
    });
    let mut publisher = Publisher {
        runtime,
        socket,
        endpoint: format!("tcp://127.0.0.1:{port}"),
    };
    let deadline = Instant::now() + LIMIT;
    let mut seq = 5;
    loop {
        publisher.send(seq, payload(seq, &WARM));
        seq += 1;
        if !lines(&path).is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "no step arrived");
        std::thread::sleep(Duration::from_millis(5));
    }
    let last = seq - 1;
    wait_for(&path, "every step sent", |_| {
        read_steps(&path).is_ok_and(|s| s.steps + s.dropped == last + 1)
    });
    let summary = sub.stop();
    assert_eq!(summary.listening_at_start, Some(false));
    let steps = read_steps(&path).unwrap();
    assert_eq!(steps.gap_lines, 1, "{:?}", steps.gaps);
    assert!(steps.gaps[0].steps >= 5, "{:?}", steps.gaps);
    assert!(
        steps.gaps[0]
            .reason
            .contains("started after the subscriber"),
        "{}",
        steps.gaps[0].reason
    );
    assert_eq!(steps.steps + steps.dropped, last + 1);
    assert_eq!(summary.totals.missed, steps.gaps[0].steps);
}

/// Stopped before anything listened (or dropped), the file still closes with its end
/// line: the step reader reads it as a file of no step.
#[test]
fn a_subscriber_stopped_before_anything_listened_closes_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steps.jsonl");
    let sub = FpmSubscriber::start(&format!("127.0.0.1:{}", free_port()), &path).unwrap();
    let summary = sub.stop();
    assert_eq!(
        (summary.subscribed, summary.listening_at_start),
        (None, Some(false))
    );
    let steps = read_steps(&path).unwrap();
    assert_eq!((steps.steps, steps.gap_lines), (0, 0));
    assert_eq!(steps.end.and_then(|e| e.steps), Some(0));
    let dropped = dir.path().join("dropped.jsonl");
    drop(FpmSubscriber::start(&format!("127.0.0.1:{}", free_port()), &dropped).unwrap());
    assert!(read_steps(&dropped).unwrap().end.is_some());
    // An existing file is not written over, and the refusal is one line.
    let again = FpmSubscriber::start(&format!("127.0.0.1:{}", free_port()), &path);
    let err = again.unwrap_err().to_string();
    assert!(!err.contains('\n'), "{err}");
}
