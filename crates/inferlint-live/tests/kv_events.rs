//! The KV event subscriber against a publisher made here with the zeromq crate's PUB and
//! ROUTER sockets on 127.0.0.1, speaking vLLM's wire format (`[topic, seq, payload]`,
//! the replay `["", topic, seq, payload]` then the end marker), that skips sequence
//! numbers on purpose, answers the replay or does not, and sends garbage. Every wait is
//! for a line in the subscriber's file, never for a time.

// The helpers below unwrap as the tests do: a failure is the test failing.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use inferlint_engines::files::{parse_kv_line, read_kv_events, KvLine};
use inferlint_live::kv_events::{connect_address, KvError, KvOptions, KvSubscriber};
use tokio::runtime::Runtime;
use zeromq::{PubSocket, RouterSocket, Socket, SocketRecv, SocketSend, ZmqMessage};

use crate::common::LIMIT;

/// One batch storing `blocks` blocks of 16 tokens, as vLLM 0.32 encodes it:
/// `[ts, [{"type": "BlockStored", "block_hashes": [...], "token_ids": [...]}], 0]`.
fn payload(ts: f64, blocks: u32) -> Vec<u8> {
    use rmp::encode::*;
    let mut out = Vec::new();
    write_array_len(&mut out, 3).unwrap();
    write_f64(&mut out, ts).unwrap();
    write_array_len(&mut out, 1).unwrap();
    write_map_len(&mut out, 4).unwrap();
    write_str(&mut out, "type").unwrap();
    write_str(&mut out, "BlockStored").unwrap();
    write_str(&mut out, "block_hashes").unwrap();
    write_array_len(&mut out, blocks).unwrap();
    for b in 0..blocks {
        write_uint(&mut out, 0xABCD_0000 + u64::from(b)).unwrap();
    }
    write_str(&mut out, "token_ids").unwrap();
    write_array_len(&mut out, blocks * 16).unwrap();
    for t in 0..blocks * 16 {
        write_uint(&mut out, u64::from(t)).unwrap();
    }
    write_str(&mut out, "medium").unwrap();
    write_str(&mut out, "GPU").unwrap();
    write_uint(&mut out, 0).unwrap();
    out
}

/// The batches a publisher holds for replay: sequence number and payload.
type Held = Arc<Mutex<Vec<(u64, Vec<u8>)>>>;

#[derive(Clone, Copy, PartialEq)]
enum ReplayMode {
    /// Answers as vLLM does.
    Answers,
    /// Reads each request and never answers.
    Silent,
}

/// A publisher on 127.0.0.1: a PUB socket, and a ROUTER holding what was "published"
/// for replay, as the engines keep it.
struct Publisher {
    runtime: Runtime,
    socket: PubSocket,
    endpoint: String,
    replay_endpoint: String,
    held: Held,
}

impl Publisher {
    /// Binds the PUB socket on any free port, and the ROUTER.
    fn start(mode: ReplayMode) -> Publisher {
        Publisher::start_on(0, mode, true)
    }

    /// Binds the ROUTER, and the PUB socket on `pub_port` (0: any free port) now or,
    /// unless `bind_now`, when [`Publisher::bind`] is called.
    fn start_on(pub_port: u16, mode: ReplayMode, bind_now: bool) -> Publisher {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let held: Held = Arc::default();
        let (socket, endpoint, replay_endpoint) = runtime.block_on(async {
            let mut socket = PubSocket::new();
            let mut endpoint = format!("tcp://127.0.0.1:{pub_port}");
            if bind_now {
                endpoint = socket.bind(&endpoint).await.unwrap().to_string();
            }
            let mut router = RouterSocket::new();
            let replay_endpoint = router.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let held = held.clone();
            tokio::spawn(async move {
                while let Ok(request) = router.recv().await {
                    let frames = request.into_vec();
                    if mode == ReplayMode::Silent || frames.len() != 3 {
                        continue;
                    }
                    let id = frames[0].clone();
                    let start = u64::from_be_bytes(frames[2].as_ref().try_into().unwrap());
                    let batches: Vec<(u64, Vec<u8>)> = held
                        .lock()
                        .unwrap()
                        .iter()
                        .filter(|(seq, _)| *seq >= start)
                        .cloned()
                        .collect();
                    for (seq, payload) in batches {
                        let reply = vec![
                            id.clone(),
                            Bytes::new(),
                            Bytes::new(),
                            Bytes::copy_from_slice(&seq.to_be_bytes()),
                            Bytes::from(payload),
                        ];
                        if router
                            .send(ZmqMessage::try_from(reply).unwrap())
                            .await
                            .is_err()
                        {
                            break;
                        }
                    }
                    let end = vec![
                        id,
                        Bytes::new(),
                        Bytes::new(),
                        Bytes::copy_from_slice(&(-1i64).to_be_bytes()),
                        Bytes::new(),
                    ];
                    let _ = router.send(ZmqMessage::try_from(end).unwrap()).await;
                }
            });
            (socket, endpoint, replay_endpoint)
        });
        Publisher {
            runtime,
            socket,
            endpoint,
            replay_endpoint,
            held,
        }
    }

    fn bind(&mut self) {
        let endpoint = self.endpoint.clone();
        self.runtime.block_on(self.socket.bind(&endpoint)).unwrap();
    }

    fn send(&mut self, frames: Vec<Vec<u8>>) {
        let message =
            ZmqMessage::try_from(frames.into_iter().map(Bytes::from).collect::<Vec<_>>()).unwrap();
        self.runtime.block_on(self.socket.send(message)).unwrap();
    }

    /// Publishes batch `seq` (held for replay too).
    fn publish(&mut self, seq: u64, blocks: u32) {
        let body = payload(1_000.0 + seq as f64 / 10.0, blocks);
        self.held.lock().unwrap().push((seq, body.clone()));
        self.send(vec![vec![], seq.to_be_bytes().to_vec(), body]);
    }

    /// Holds batch `seq` for replay without sending it: a message the subscriber misses.
    fn hold_only(&mut self, seq: u64, blocks: u32) {
        let body = payload(1_000.0 + seq as f64 / 10.0, blocks);
        self.held.lock().unwrap().push((seq, body));
    }

    /// Publishes from `seq` on, one batch every few milliseconds, until the subscriber's
    /// file holds a batch (the subscription is in force at the publisher); returns the
    /// next sequence number. Batches sent before that are not the subscriber's: the
    /// publisher was listening before it subscribed.
    fn warm_up(&mut self, mut seq: u64, file: &Path) -> u64 {
        let deadline = Instant::now() + LIMIT;
        loop {
            self.publish(seq, 1);
            seq += 1;
            if lines(file).iter().any(|l| matches!(l, KvLine::Batch(_))) {
                return seq;
            }
            assert!(
                Instant::now() < deadline,
                "the subscriber never received a batch"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn lines(path: &Path) -> Vec<KvLine> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(parse_kv_line)
        .collect()
}

/// Waits until the file holds a line `matches` accepts; panics past [`LIMIT`].
fn wait_for(path: &Path, what: &str, matches: impl Fn(&KvLine) -> bool) {
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

fn batch_seq(line: &KvLine, seq: u64) -> bool {
    matches!(line, KvLine::Batch(b) if b.seq == seq)
}

fn out(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("kv-events.jsonl")
}

#[test]
fn a_skipped_stretch_is_fetched_by_replay_and_what_the_replay_lacks_is_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let path = out(&dir);
    let mut publisher = Publisher::start(ReplayMode::Answers);
    let sub =
        KvSubscriber::start(&publisher.endpoint, Some(&publisher.replay_endpoint), &path).unwrap();
    let next = publisher.warm_up(0, &path);
    // n: received; n+1..=n+3: missed, held for replay; n+4: received, which shows the
    // hole. Then n+5 and n+6 missed and no longer held (the replay buffer dropped them),
    // n+7 missed but held, n+8 received.
    let n = next;
    publisher.publish(n, 2);
    for seq in n + 1..=n + 3 {
        publisher.hold_only(seq, 3);
    }
    publisher.publish(n + 4, 1);
    wait_for(&path, "the batch after the hole", |l| batch_seq(l, n + 4));
    publisher.hold_only(n + 7, 5);
    publisher.publish(n + 8, 1);
    wait_for(&path, "the batch after the second hole", |l| {
        batch_seq(l, n + 8)
    });
    let summary = sub.stop();

    let kv = read_kv_events(&path).unwrap();
    let first = kv.seq_range.unwrap().0;
    // Every batch from the first received to n+8, but n+5 and n+6: the warm-up's
    // received ones, n, n+1..=n+3 (replayed), n+4, n+7 (replayed), n+8.
    assert_eq!(kv.batches, (n - first) + 1 + 3 + 1 + 1 + 1);
    assert_eq!(kv.replayed, 4);
    assert_eq!(kv.seq_range, Some((first, n + 8)));
    let gaps: Vec<(u64, u64)> = kv.gaps.iter().map(|g| (g.from_seq, g.to_seq)).collect();
    assert_eq!(gaps, vec![(n + 5, n + 6)], "{:?}", kv.gaps);
    assert!(
        kv.gaps[0].reason.contains("no longer held"),
        "{}",
        kv.gaps[0].reason
    );
    // Blocks: one a warm-up batch, 2 + 3*3 + 1 + 5 + 1 after it.
    assert_eq!(kv.stored_blocks(), (n - first) + 2 + 9 + 1 + 5 + 1);
    assert_eq!(kv.stored_tokens(), kv.stored_blocks() * 16);
    assert_eq!(kv.media, vec!["GPU".to_owned()]);
    assert!(kv.end.is_some());
    assert_eq!(summary.totals.batches, kv.batches);
    assert_eq!(summary.totals.replayed, 4);
    assert_eq!((summary.totals.gaps, summary.totals.missed), (1, 2));
    assert_eq!(summary.listening_at_start, Some(true));
    assert!(summary.subscribed.is_some());
    assert_eq!(summary.write_error, None);
    // The replayed batches were written before the batch that showed their hole, in
    // order: the file is in sequence order.
    let seqs: Vec<u64> = lines(&path)
        .iter()
        .filter_map(|l| match l {
            KvLine::Batch(b) => Some(b.seq),
            _ => None,
        })
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
}

#[test]
fn without_a_replay_endpoint_a_hole_is_a_gap_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = out(&dir);
    let mut publisher = Publisher::start(ReplayMode::Answers);
    let sub = KvSubscriber::start(&publisher.endpoint, None, &path).unwrap();
    let n = publisher.warm_up(0, &path);
    publisher.publish(n + 10, 1);
    wait_for(&path, "the batch after the hole", |l| batch_seq(l, n + 10));
    let summary = sub.stop();
    let kv = read_kv_events(&path).unwrap();
    let gaps: Vec<(u64, u64)> = kv.gaps.iter().map(|g| (g.from_seq, g.to_seq)).collect();
    assert_eq!(gaps, vec![(n, n + 9)]);
    assert!(kv.gaps[0].reason.contains("no replay endpoint"));
    assert_eq!(kv.replayed, 0);
    assert_eq!(summary.totals.missed, 10);
}

#[test]
fn a_replay_that_never_answers_is_waited_for_a_bounded_time_then_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let path = out(&dir);
    let mut publisher = Publisher::start(ReplayMode::Silent);
    let mut options = KvOptions::new(&publisher.endpoint);
    options.replay_endpoint = Some(publisher.replay_endpoint.clone());
    options.replay_wait = Duration::from_millis(300);
    let sub = KvSubscriber::start_with(options, &path).unwrap();
    let n = publisher.warm_up(0, &path);
    publisher.hold_only(n, 1);
    publisher.hold_only(n + 1, 1);
    let asked = Instant::now();
    publisher.publish(n + 2, 1);
    // The gap record comes, and the batch after it, once the wait is over.
    wait_for(&path, "the batch after the hole", |l| batch_seq(l, n + 2));
    let waited = asked.elapsed();
    let summary = sub.stop();
    let kv = read_kv_events(&path).unwrap();
    let gaps: Vec<(u64, u64)> = kv.gaps.iter().map(|g| (g.from_seq, g.to_seq)).collect();
    assert_eq!(gaps, vec![(n, n + 1)]);
    assert!(
        kv.gaps[0].reason.contains("did not answer within 0.3 s"),
        "{}",
        kv.gaps[0].reason
    );
    // The wait is the bound: at least the 0.3 s asked, and nowhere near the test's limit.
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert_eq!(summary.totals.missed, 2);
}

#[test]
fn garbage_frames_are_recorded_and_counted_and_the_stream_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = out(&dir);
    let mut publisher = Publisher::start(ReplayMode::Answers);
    let sub = KvSubscriber::start(&publisher.endpoint, None, &path).unwrap();
    let n = publisher.warm_up(0, &path);
    // Two frames; a 5-byte sequence number; a good sequence number with a payload that
    // is not MessagePack; then a good batch right after (the bad batch's number counts:
    // no hole).
    publisher.send(vec![vec![], n.to_be_bytes().to_vec()]);
    publisher.send(vec![vec![], vec![0, 0, 0, 0, 1], payload(1.0, 1)]);
    publisher.send(vec![
        vec![],
        n.to_be_bytes().to_vec(),
        b"\xc1garbage".to_vec(),
    ]);
    publisher.publish(n + 1, 1);
    wait_for(&path, "the batch after the garbage", |l| {
        batch_seq(l, n + 1)
    });
    let summary = sub.stop();
    let bad: Vec<Option<u64>> = lines(&path)
        .iter()
        .filter_map(|l| match l {
            KvLine::BadFrame { seq, .. } => Some(*seq),
            _ => None,
        })
        .collect();
    assert_eq!(bad, vec![None, None, Some(n)]);
    assert_eq!(summary.totals.bad_frames, 3);
    let kv = read_kv_events(&path).unwrap();
    assert!(kv.gaps.is_empty(), "{:?}", kv.gaps);
    assert_eq!(kv.skipped, 3);
}

/// A port nothing listens on now (bound, read, released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_publisher_that_starts_after_the_subscriber_is_recorded_from_zero() {
    // The engine comes up after the subscriber: whatever it publishes before the
    // subscription is in force (ZeroMQ's slow joiner) belongs to the recording, so a
    // first batch above 0 is a hole from 0, filled by replay.
    let dir = tempfile::tempdir().unwrap();
    let path = out(&dir);
    let port = free_port();
    // The ROUTER is up, the PUB port not yet (the engine's engine-core binds both at
    // once; the order does not matter here, the PUB is what the subscriber waits for).
    let mut publisher = Publisher::start_on(port, ReplayMode::Answers, false);
    let mut options = KvOptions::new(&format!("tcp://*:{port}"));
    options.replay_endpoint = Some(publisher.replay_endpoint.clone());
    let sub = KvSubscriber::start_with(options, &path).unwrap();
    // start() returned without a subscription: nothing listened.
    assert!(lines(&path).iter().any(|l| matches!(l, KvLine::Header(_))));
    assert!(!lines(&path)
        .iter()
        .any(|l| matches!(l, KvLine::Subscribed { .. })));
    publisher.bind();
    // 0 to 4 went out before the subscription was in force (held, not sent: what a PUB
    // socket drops while a subscriber joins).
    for seq in 0..5 {
        publisher.hold_only(seq, 1);
    }
    let next = publisher.warm_up(5, &path);
    wait_for(&path, "the last warm-up batch", |l| batch_seq(l, next - 1));
    let summary = sub.stop();
    assert_eq!(summary.listening_at_start, Some(false));
    let kv = read_kv_events(&path).unwrap();
    // Every batch from 0: received or replayed (0 to 4 at least), none missed.
    assert_eq!(kv.seq_range, Some((0, next - 1)));
    assert_eq!(kv.batches, next);
    assert!(kv.replayed >= 5, "{} replayed", kv.replayed);
    assert!(kv.gaps.is_empty(), "{:?}", kv.gaps);
    let subscribed = lines(&path).into_iter().find_map(|l| match l {
        KvLine::Subscribed {
            listening_at_start, ..
        } => listening_at_start,
        _ => None,
    });
    assert_eq!(subscribed, Some(false));
}

#[test]
fn a_sequence_that_goes_back_is_a_restart_and_the_new_one_counts_from_zero() {
    let dir = tempfile::tempdir().unwrap();
    let path = out(&dir);
    let mut publisher = Publisher::start(ReplayMode::Answers);
    let sub =
        KvSubscriber::start(&publisher.endpoint, Some(&publisher.replay_endpoint), &path).unwrap();
    // The first run of the publisher is far along: 100 on.
    let n = publisher.warm_up(100, &path);
    wait_for(&path, "the warm-up's last batch", |l| batch_seq(l, n - 1));
    // The engine restarts: its replay buffer starts empty, then holds 0 and 1 of the
    // new sequence, of which the subscriber receives 2 first.
    publisher.held.lock().unwrap().clear();
    publisher.hold_only(0, 1);
    publisher.hold_only(1, 1);
    publisher.publish(2, 1);
    wait_for(&path, "the restart's batch 2", |l| batch_seq(l, 2));
    let summary = sub.stop();
    assert_eq!(summary.totals.restarts, 1);
    let kv = read_kv_events(&path).unwrap();
    assert_eq!(kv.restarts, 1);
    assert!(kv.gaps.is_empty(), "{:?}", kv.gaps);
    assert_eq!(kv.replayed, 2);
    // The range runs from the first run's first batch received to the second's last.
    assert_eq!(kv.seq_range.map(|r| r.1), Some(2));
}

#[test]
fn a_subscriber_stopped_before_anything_listened_closes_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = out(&dir);
    let sub = KvSubscriber::start(&format!("127.0.0.1:{}", free_port()), None, &path).unwrap();
    let summary = sub.stop();
    assert_eq!(summary.subscribed, None);
    assert_eq!(summary.listening_at_start, Some(false));
    let kv = read_kv_events(&path).unwrap();
    assert!(kv.end.is_some() && kv.subscribed.is_none() && kv.batches == 0);
    // Dropping one stops it too, and the file is closed with its end line.
    let path2 = dir.path().join("dropped.jsonl");
    drop(KvSubscriber::start(&format!("127.0.0.1:{}", free_port()), None, &path2).unwrap());
    assert!(read_kv_events(&path2).unwrap().end.is_some());
}

#[test]
fn bad_addresses_and_existing_files_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let path = out(&dir);
    for bad in [
        "ipc:///tmp/kv",
        "tcp://127.0.0.1",
        "tcp://127.0.0.1:0",
        "127.0.0.1:x",
    ] {
        let err = KvSubscriber::start(bad, None, &path).unwrap_err();
        assert!(matches!(err, KvError::Endpoint { .. }), "{bad}: {err}");
        assert!(!path.exists());
    }
    let mut options = KvOptions::new("127.0.0.1:5557");
    options.backfill_from = Some(0);
    assert!(matches!(
        KvSubscriber::start_with(options, &path),
        Err(KvError::BackfillWithoutReplay)
    ));
    std::fs::write(&path, "keep me").unwrap();
    let err = KvSubscriber::start("127.0.0.1:5557", None, &path).unwrap_err();
    assert!(matches!(err, KvError::Output(_)), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me");
    // The engine's own bind address is subscribed to on 127.0.0.1.
    assert_eq!(
        connect_address("tcp://*:5557").unwrap().0,
        "tcp://127.0.0.1:5557"
    );
}

/// The messages the real vLLM 0.32 CPU build published
/// (fixtures/real/vllm-0.32-cpu/kv-events/frames.hex: frames in hex, one message a line).
fn real_messages() -> Vec<Vec<Vec<u8>>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real/vllm-0.32-cpu/kv-events/frames.hex");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            line.split(' ')
                .map(|hex| {
                    (0..hex.len())
                        .step_by(2)
                        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                        .collect()
                })
                .collect()
        })
        .collect()
}

#[test]
fn the_real_engine_s_batches_with_holes_are_made_whole_by_replay() {
    // The real engine's 29 messages published again, byte for byte, but 3 to 5 and 20
    // only held for replay, as if the subscriber had missed them; the subscriber is told
    // to backfill from 0, so what went out before its subscription took hold comes by
    // replay too. The file then holds the real run whole: MADE.md's 126 blocks stored
    // (32 requests of 4 blocks, less the 2 the prefix cache served).
    //
    // The engine's replay buffer holds every batch it published, whenever the subscriber
    // asks: the buffer is filled before the subscriber starts, so its backfill from 0
    // finds them whatever the order of its request and the live sends.
    let dir = tempfile::tempdir().unwrap();
    let path = out(&dir);
    let messages = real_messages();
    let mut publisher = Publisher::start(ReplayMode::Answers);
    let seq_of =
        |frames: &Vec<Vec<u8>>| u64::from_be_bytes(frames[1].as_slice().try_into().unwrap());
    for frames in &messages {
        publisher
            .held
            .lock()
            .unwrap()
            .push((seq_of(frames), frames[2].clone()));
    }
    let mut options = KvOptions::new(&publisher.endpoint);
    options.replay_endpoint = Some(publisher.replay_endpoint.clone());
    options.backfill_from = Some(0);
    let sub = KvSubscriber::start_with(options, &path).unwrap();
    wait_for(&path, "the subscription", |l| {
        matches!(l, KvLine::Subscribed { .. })
    });
    let missed = [3u64, 4, 5, 20];
    let last = messages.len() as u64 - 1;
    for frames in &messages[..messages.len() - 1] {
        if !missed.contains(&seq_of(frames)) {
            publisher.send(frames.clone());
        }
    }
    // Only a batch received starts the backfill, and a publisher drops what it sends
    // before the subscription reaches it (ZeroMQ's slow joiner): on a loaded machine every
    // batch above went that way. The last one is sent again for as long as the file holds
    // no batch at all: the subscriber never received it, so it is no repeat.
    let deadline = Instant::now() + LIMIT;
    loop {
        publisher.send(messages[messages.len() - 1].clone());
        let quiet = Instant::now() + Duration::from_millis(500);
        while Instant::now() < quiet && !lines(&path).iter().any(|l| matches!(l, KvLine::Batch(_)))
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        if lines(&path).iter().any(|l| matches!(l, KvLine::Batch(_))) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the subscriber never received a batch"
        );
    }
    wait_for(&path, "the last batch", |l| batch_seq(l, last));
    let summary = sub.stop();
    let kv = read_kv_events(&path).unwrap();
    assert_eq!(kv.batches, messages.len() as u64);
    assert_eq!(kv.seq_range, Some((0, last)));
    assert!(kv.gaps.is_empty(), "{:?}", kv.gaps);
    assert!(kv.replayed >= missed.len() as u64);
    assert_eq!(kv.stored_blocks(), 126);
    assert_eq!(kv.stored_tokens(), 126 * 32);
    assert_eq!(kv.seconds.iter().map(|s| s.cleared).sum::<u64>(), 1);
    assert_eq!(summary.totals.bad_frames, 0);
}

/// 500 batches published at once and the subscriber stopped as soon as they are sent:
/// what its socket already held is read and written at the stop, so every batch sent is
/// in the file and the stream is whole, never batches received but dropped at the stop
/// and read as never sent.
#[test]
fn batches_queued_at_the_stop_are_written_not_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = out(&dir);
    let mut publisher = Publisher::start(ReplayMode::Answers);
    let sub = KvSubscriber::start(&publisher.endpoint, None, &path).unwrap();
    let n = publisher.warm_up(0, &path);
    for seq in n..n + 500 {
        publisher.publish(seq, 1);
    }
    let summary = sub.stop();
    let kv = read_kv_events(&path).unwrap();
    assert_eq!(kv.seq_range.map(|(_, last)| last), Some(n + 499));
    assert_eq!(kv.missed_batches(), 0);
    assert_eq!(summary.totals.missed, 0);
}
