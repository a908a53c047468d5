//! Subscribing to an engine's KV-cache event stream while a run goes on, and writing what
//! arrives to a file (`inferlint.kv-events/1`, read back by
//! `inferlint_engines::files::read_kv_events`), holes stated.
//!
//! vLLM and SGLang publish the stream when started with `--kv-events-config
//! '{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:5557",
//! "replay_endpoint": "tcp://*:5558"}'` (SGLang takes the same JSON without
//! `enable_kv_cache_events`): a ZeroMQ PUB socket, and a ROUTER that replays the batches
//! it still holds (vLLM and SGLang keep the last 10,000). The wire format is read in
//! `inferlint_engines::kv_frames`.
//!
//! ```no_run
//! use std::path::Path;
//! use inferlint_live::kv_events::KvSubscriber;
//!
//! let sub = KvSubscriber::start(
//!     "tcp://127.0.0.1:5557",
//!     Some("tcp://127.0.0.1:5558"),
//!     Path::new("run/kv-events.jsonl"),
//! )?;
//! // ... the load runs ...
//! let summary = sub.stop();
//! println!("{} batches, {} missed", summary.totals.batches, summary.totals.missed);
//! # Ok::<(), inferlint_live::kv_events::KvError>(())
//! ```
//!
//! How it works:
//! - [`KvSubscriber::start`] creates the file (never over an existing one), writes the
//!   header (the clock anchor) and starts a thread with a runtime of its own, so a
//!   recorder's sampler on another runtime is never slowed by it. It returns once the
//!   subscription is made, or once the address was found not listening (the engine not
//!   up yet: the thread goes on trying), at most [`KvOptions::start_wait`] later.
//! - Whether the publisher was already listening when the subscriber started decides
//!   what a first sequence number above 0 means. If it was, the batches before were
//!   published before the subscription: not a hole (unless [`KvOptions::backfill_from`]
//!   asks for them). If it was not, the publisher started after the subscriber, so every
//!   batch from 0 on belongs to the recording, and those a PUB socket drops while a new
//!   subscriber joins (ZeroMQ's "slow joiner") are a hole from 0.
//! - A batch whose sequence number jumps past the next one expected leaves a hole. The
//!   hole is asked of the replay endpoint where there is one, for at most
//!   [`KvOptions::replay_wait`]; what comes back is written (`"replayed": true`) and what
//!   does not is a gap record. Without a replay endpoint the hole is a gap record at once.
//! - A sequence number at or below one already received means the publisher started
//!   again (the engine restarted): a restart record, and the new sequence starts as an
//!   engine started after the subscriber does.
//! - A message that cannot be read is a bad-frame record, counted; nothing panics.
//! - [`KvSubscriber::stop`] writes the closing line (the end anchor and the totals) and
//!   returns the totals.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use inferlint_core::model::traces::ClockAnchor;
use inferlint_engines::files::{
    kv_bad_frame_json, kv_batch_json, kv_bound_json, kv_connected_json, kv_end_json, kv_gap_json,
    kv_header_json, kv_note_json, kv_restart_json, kv_subscribed_json, KvHeader, KvTotals,
};
use inferlint_engines::kv_frames::{decode_batch, published_frame, replayed_frame, Replayed};
use inferlint_engines::output::{create_stream, OutputError, Rule, StreamFile};
use zeromq::{DealerSocket, Socket, SocketOptions, SocketRecv, SocketSend, SubSocket, ZmqMessage};

use crate::clock;
use crate::receiving::{LineWriter, Receiving, Summary};
use crate::stop::Stop;

/// At the stop, how long the socket may stay silent before what it held is taken to be
/// read: a message already received is handed over at once.
const QUEUED_IDLE: Duration = Duration::from_millis(100);
/// At the stop, the longest the batches the socket holds are read for: a publisher
/// still flooding is cut there, and a note says so.
const QUEUED_AT_MOST: Duration = Duration::from_secs(1);

/// How long a hole waits for the replay endpoint by default: vLLM and SGLang answer a
/// replay between two batches, within a tenth of a second of the request.
pub const DEFAULT_REPLAY_WAIT: Duration = Duration::from_secs(2);

/// How long [`KvSubscriber::start`] waits by default to learn whether the address is
/// listening and to subscribe: a connection on one host takes milliseconds.
pub const DEFAULT_START_WAIT: Duration = Duration::from_secs(5);

/// What to subscribe to and how.
#[derive(Debug, Clone)]
pub struct KvOptions {
    /// The PUB endpoint: `tcp://HOST:PORT` (or `HOST:PORT`). The engine's own bind
    /// address `tcp://*:PORT` is subscribed to on 127.0.0.1.
    pub endpoint: String,
    /// The replay endpoint (the engine's `replay_endpoint`), asked for what a hole
    /// missed; `None` when the engine offers none.
    pub replay_endpoint: Option<String>,
    /// Also ask the replay endpoint for the batches published before the subscription,
    /// from this sequence number on (0: all it still holds). Needs a replay endpoint.
    pub backfill_from: Option<u64>,
    /// The most a hole waits for the replay endpoint.
    pub replay_wait: Duration,
    /// The most [`KvSubscriber::start`] waits to subscribe.
    pub start_wait: Duration,
    /// Replace an existing output file (`--force`).
    pub force: bool,
    /// Bind the endpoint and let the engine's publisher connect to it, instead of
    /// connecting to a publisher that binds. vLLM binds its publisher only at a wildcard
    /// address (`tcp://*:PORT`, every interface); given `tcp://127.0.0.1:PORT` it
    /// connects there, so a subscriber that binds it keeps the stream on the loopback
    /// (xray does this: it starts the subscriber before the engine). The engine starts
    /// after the subscriber, so a first batch above 0 is a hole from 0.
    pub bind: bool,
}

impl KvOptions {
    /// Options for `endpoint`, with the default waits, no replay, no backfill.
    pub fn new(endpoint: &str) -> KvOptions {
        KvOptions {
            endpoint: endpoint.to_owned(),
            replay_endpoint: None,
            backfill_from: None,
            replay_wait: DEFAULT_REPLAY_WAIT,
            start_wait: DEFAULT_START_WAIT,
            force: false,
            bind: false,
        }
    }
}

/// Why a subscriber could not start.
#[derive(Debug, thiserror::Error)]
pub enum KvError {
    /// An address that cannot be subscribed to.
    #[error("{given}: {why}")]
    Endpoint {
        /// The address as given.
        given: String,
        /// What is wrong with it.
        why: String,
    },
    /// Backfill asked for without a replay endpoint to ask.
    #[error("backfilling the KV events needs the engine's replay endpoint")]
    BackfillWithoutReplay,
    /// The output file could not be created.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// The thread or its runtime could not be started.
    #[error("cannot start the KV event subscriber: {0}")]
    Start(#[source] std::io::Error),
}

/// What a subscriber did, when it stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct KvSummary {
    /// The file written.
    pub path: PathBuf,
    /// The totals of the closing line.
    pub totals: KvTotals,
    /// When the subscription was made; `None` if it never was (nothing listened).
    pub subscribed: Option<ClockAnchor>,
    /// Whether the publisher was listening when the subscriber started.
    pub listening_at_start: Option<bool>,
    /// The first write that failed, if one did: the file stops there.
    pub write_error: Option<String>,
}

/// A subscriber running on its own thread. Dropping it stops it as [`KvSubscriber::stop`]
/// does.
#[derive(Debug)]
pub struct KvSubscriber {
    receiving: Receiving<KvSummary>,
}

/// The address to connect to: `tcp://HOST:PORT`, with a wildcard host (`*`, `0.0.0.0`,
/// the engine's bind address) read as 127.0.0.1, and the host and port for a plain TCP
/// connection.
pub fn connect_address(given: &str) -> Result<(String, String), KvError> {
    let bad = |why: &str| KvError::Endpoint {
        given: given.to_owned(),
        why: why.to_owned(),
    };
    let rest = match given.split_once("://") {
        Some(("tcp", rest)) => rest,
        Some((scheme, _)) => {
            return Err(bad(&format!(
                "only tcp:// endpoints are subscribed to, not {scheme}://"
            )))
        }
        None => given,
    };
    let (host, port) = rest
        .rsplit_once(':')
        .ok_or_else(|| bad("no port (tcp://HOST:PORT)"))?;
    match port.parse::<u16>() {
        Ok(p) if p > 0 => {}
        _ => return Err(bad(&format!("{port:?} is not a port"))),
    }
    let host = match host {
        "*" | "0.0.0.0" | "" => "127.0.0.1",
        "[::]" | "::" => "[::1]",
        other => other,
    };
    if host.contains(['/', ' ', '?', '#']) {
        return Err(bad(&format!("{host:?} is not a host")));
    }
    Ok((format!("tcp://{host}:{port}"), format!("{host}:{port}")))
}

impl KvSubscriber {
    /// Subscribes to `endpoint`, asking `replay` for holes, and writes to `out` (which
    /// must not exist), with the default waits. See [`KvSubscriber::start_with`].
    pub fn start(
        endpoint: &str,
        replay: Option<&str>,
        out: &Path,
    ) -> Result<KvSubscriber, KvError> {
        let mut options = KvOptions::new(endpoint);
        options.replay_endpoint = replay.map(str::to_owned);
        KvSubscriber::start_with(options, out)
    }

    /// Starts a subscriber: checks the addresses, creates `out` and writes its header,
    /// starts the thread, and returns once the subscription is made or the address was
    /// found not listening (at most `options.start_wait`).
    pub fn start_with(options: KvOptions, out: &Path) -> Result<KvSubscriber, KvError> {
        let (endpoint, probe) = connect_address(&options.endpoint)?;
        let replay = options
            .replay_endpoint
            .as_deref()
            .map(connect_address)
            .transpose()?
            .map(|(address, _)| address);
        if options.backfill_from.is_some() && replay.is_none() {
            return Err(KvError::BackfillWithoutReplay);
        }
        // An address this host cannot bind is refused now, not found out by the thread.
        if options.bind {
            std::net::TcpListener::bind(probe.as_str()).map_err(|e| KvError::Endpoint {
                given: options.endpoint.clone(),
                why: format!("cannot be bound: {e}"),
            })?;
        }
        let runtime = crate::runtime().map_err(KvError::Start)?;
        let mut file = create_stream(out, &Rule::force(options.force))?;
        let anchor = clock::anchor_now();
        let mut writer = LineWriter::default();
        writer.put(
            &mut file,
            kv_header_json(&KvHeader {
                endpoint: endpoint.clone(),
                replay_endpoint: replay.clone(),
                backfill_from: options.backfill_from,
                anchor,
                drained: false,
                numbered_by: inferlint_core::model::traces::KvNumbering::Batch,
            }),
        );
        if let Some(e) = writer.error.take() {
            return Err(KvError::Output(OutputError::Io {
                path: out.to_owned(),
                source: std::io::Error::other(e),
            }));
        }
        let stop = Stop::new();
        let (ready_tx, ready_rx) = mpsc::channel();
        let task = Task {
            endpoint,
            probe,
            bind: options.bind,
            monitor: None,
            replay,
            backfill_from: options.backfill_from,
            replay_wait: options.replay_wait,
            stop: stop.clone(),
            file,
            writer,
            totals: KvTotals::default(),
            path: out.to_owned(),
        };
        let thread = std::thread::Builder::new()
            .name("inferlint-kv-events".into())
            .spawn(move || runtime.block_on(task.run(ready_tx)))
            .map_err(KvError::Start)?;
        // Either answer, or none in time: the thread goes on either way.
        let _ = ready_rx.recv_timeout(options.start_wait);
        Ok(KvSubscriber {
            receiving: Receiving::new(stop, out.to_owned(), thread),
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        self.receiving.path()
    }

    /// Stops: writes the closing line and returns what was received. A subscriber
    /// waiting for a replay stops once that wait ends (at most
    /// [`KvOptions::replay_wait`]).
    pub fn stop(mut self) -> KvSummary {
        self.receiving.finish()
    }
}

impl Summary for KvSummary {
    fn lost(path: PathBuf, why: &str) -> KvSummary {
        KvSummary {
            path,
            totals: KvTotals::default(),
            subscribed: None,
            listening_at_start: None,
            write_error: Some(why.to_owned()),
        }
    }
}

/// What a first batch (of the subscription, or after a restart) means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum First {
    /// The publisher was up before the subscriber: earlier batches are not ours.
    NotAHole,
    /// Batches from this number on are asked for (0: the publisher started after the
    /// subscriber; else the caller's backfill).
    From(u64),
}

struct Task {
    endpoint: String,
    probe: String,
    bind: bool,
    /// The bound socket's events (a publisher connected), where it binds.
    monitor: Option<futures_channel::mpsc::Receiver<zeromq::SocketEvent>>,
    replay: Option<String>,
    backfill_from: Option<u64>,
    replay_wait: Duration,
    stop: Stop,
    file: StreamFile,
    writer: LineWriter,
    totals: KvTotals,
    path: PathBuf,
}

/// One message received, its bytes kept until it is written.
struct Received {
    frames: Vec<Bytes>,
    at: ClockAnchor,
}

impl Task {
    async fn run(mut self, ready: mpsc::Sender<()>) -> KvSummary {
        // A subscriber that binds is there before its publisher.
        let listening = !self.bind && self.listening().await;
        if !listening {
            // The engine is not up: the caller need not wait for it.
            let _ = ready.send(());
        }
        let mut subscribed = None;
        if let Some(mut sub) = self.subscribe().await {
            let at = clock::anchor_now();
            subscribed = Some(at);
            let line = kv_subscribed_json(&self.endpoint, listening, at);
            self.put(line);
            let _ = ready.send(());
            self.receive(&mut sub, listening).await;
        }
        let totals = self.totals;
        let line = kv_end_json(&totals, clock::anchor_now());
        self.put(line);
        self.writer.sync(&self.file, &self.path);
        KvSummary {
            path: self.path,
            totals,
            subscribed,
            listening_at_start: Some(listening),
            write_error: self.writer.error,
        }
    }

    fn put(&mut self, line: String) {
        self.writer.put(&mut self.file, line);
    }

    /// Whether something accepts a TCP connection at the address now.
    async fn listening(&self) -> bool {
        let connect = tokio::net::TcpStream::connect(self.probe.as_str());
        matches!(
            tokio::time::timeout(Duration::from_secs(2), connect).await,
            Ok(Ok(_))
        )
    }

    /// Subscribes to every topic and connects, trying again until it connects or the
    /// stop comes (`None`). The zeromq crate retries a refused connection by itself.
    async fn subscribe(&mut self) -> Option<SubSocket> {
        // No connect timeout: a publisher not up yet is waited for (the zeromq crate
        // retries a refused connection by itself) until it comes or the stop does.
        let mut socket_options = SocketOptions::default();
        socket_options.no_connect_timeout();
        let mut sub = SubSocket::with_options(socket_options);
        // Before the connection: the subscription goes out with the handshake.
        if let Err(e) = sub.subscribe("").await {
            let line = kv_note_json(&format!("cannot subscribe: {e}"), clock::anchor_now());
            self.put(line);
            return None;
        }
        if self.bind {
            // Each publisher that connects is said in the file: a stream that stays
            // silent can then be told from one that never connected.
            self.monitor = Some(sub.monitor());
            return match sub.bind(&self.endpoint).await {
                Ok(_) => {
                    let line = kv_bound_json(&self.endpoint, clock::anchor_now());
                    self.put(line);
                    Some(sub)
                }
                Err(e) => {
                    let line = kv_note_json(
                        &format!("cannot bind {}: {e}", self.endpoint),
                        clock::anchor_now(),
                    );
                    self.put(line);
                    None
                }
            };
        }
        let mut noted = false;
        loop {
            let stopped = self.stop.stopped();
            tokio::select! {
                () = stopped => return None,
                result = sub.connect(&self.endpoint) => match result {
                    Ok(()) => return Some(sub),
                    Err(e) => {
                        if !noted {
                            noted = true;
                            let line = kv_note_json(
                                &format!("cannot connect to {}: {e}; trying again", self.endpoint),
                                clock::anchor_now(),
                            );
                            self.put(line);
                        }
                    }
                },
            }
            let stopped = self.stop.stopped();
            tokio::select! {
                () = stopped => return None,
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    }

    async fn receive(&mut self, sub: &mut SubSocket, listening: bool) {
        let mut state = Sequence {
            next: None,
            first: match self.backfill_from {
                Some(from) => First::From(from),
                None if listening => First::NotAHole,
                None => First::From(0),
            },
        };
        let mut lost_noted = false;
        loop {
            let stopped = self.stop.stopped();
            let connected = async {
                match self.monitor.as_mut() {
                    Some(events) => events.next().await,
                    None => std::future::pending().await,
                }
            };
            let message = tokio::select! {
                () = stopped => {
                    self.take_what_was_queued(sub, &mut state).await;
                    return;
                }
                event = connected => {
                    match event {
                        Some(zeromq::SocketEvent::Accepted(..)) => {
                            let line = kv_connected_json(&self.endpoint, clock::anchor_now());
                            self.put(line);
                        }
                        Some(_) => {}
                        // The socket's monitor is gone: nothing more will be said of it.
                        None => self.monitor = None,
                    }
                    continue;
                }
                m = sub.recv() => m,
            };
            match message {
                Ok(message) => {
                    lost_noted = false;
                    let received = Received {
                        frames: message.into_vec(),
                        at: clock::anchor_now(),
                    };
                    self.published(received, &mut state).await;
                }
                Err(e) => {
                    // No peer (the engine went away): the zeromq crate reconnects in the
                    // background; look again shortly.
                    if !lost_noted {
                        lost_noted = true;
                        let line = kv_note_json(
                            &format!("no message from {}: {e}; waiting for it", self.endpoint),
                            clock::anchor_now(),
                        );
                        self.put(line);
                    }
                    let stopped = self.stop.stopped();
                    tokio::select! {
                        () = stopped => return,
                        () = tokio::time::sleep(Duration::from_millis(100)) => {}
                    }
                }
            }
        }
    }

    /// At the stop: the batches the socket already holds (received, not yet read) are
    /// read and written, so that they are not taken for batches never sent. Reading stops
    /// when none comes within [`QUEUED_IDLE`], or after [`QUEUED_AT_MOST`] of a publisher
    /// still sending, which a note says: what it sent after that was not read.
    async fn take_what_was_queued(&mut self, sub: &mut SubSocket, state: &mut Sequence) {
        let began = tokio::time::Instant::now();
        let mut taken = 0u64;
        let mut cut = false;
        loop {
            if began.elapsed() >= QUEUED_AT_MOST {
                cut = true;
                break;
            }
            match tokio::time::timeout(QUEUED_IDLE, sub.recv()).await {
                Ok(Ok(message)) => {
                    taken += 1;
                    let received = Received {
                        frames: message.into_vec(),
                        at: clock::anchor_now(),
                    };
                    self.published(received, state).await;
                }
                // Nothing more held, or no peer.
                _ => break,
            }
        }
        if taken > 0 || cut {
            let line = kv_note_json(
                &format!(
                    "at the stop, {taken} message(s) the socket already held were read and written{}",
                    if cut {
                        format!(
                            "; the publisher was still sending after {} s, and what it sent after that was not read",
                            QUEUED_AT_MOST.as_secs_f64()
                        )
                    } else {
                        String::new()
                    }
                ),
                clock::anchor_now(),
            );
            self.put(line);
        }
    }

    async fn published(&mut self, received: Received, state: &mut Sequence) {
        let frames: Vec<&[u8]> = received.frames.iter().map(|b| b.as_ref()).collect();
        let bytes = frames.iter().map(|f| f.len()).sum();
        let (seq, payload) = match published_frame(&frames) {
            Ok(read) => read,
            Err(why) => {
                self.totals.bad_frames += 1;
                let line = kv_bad_frame_json(None, &why, frames.len(), bytes, received.at, false);
                self.put(line);
                return;
            }
        };
        match state.next {
            Some(next) if seq < next => {
                self.totals.restarts += 1;
                let line = kv_restart_json(next - 1, seq, received.at);
                self.put(line);
                state.next = None;
                state.first = First::From(0);
            }
            _ => {}
        }
        let hole = match state.next {
            None => match state.first {
                First::From(from) if seq > from => Some((from, seq - 1)),
                _ => None,
            },
            Some(next) if seq > next => Some((next, seq - 1)),
            Some(_) => None,
        };
        if let Some((from, to)) = hole {
            self.fill(from, to).await;
        }
        state.next = Some(seq.saturating_add(1));
        self.write_batch(seq, payload, frames.len(), bytes, received.at, false);
    }

    fn write_batch(
        &mut self,
        seq: u64,
        payload: &[u8],
        frames: usize,
        bytes: usize,
        at: ClockAnchor,
        replayed: bool,
    ) {
        match decode_batch(payload) {
            Ok(batch) => {
                let totals = &mut self.totals;
                totals.batches += 1;
                totals.replayed += u64::from(replayed);
                totals.stored_blocks += batch.stored_blocks;
                totals.removed_blocks += batch.removed_blocks;
                self.put(kv_batch_json(seq, &batch, at, replayed));
            }
            Err(why) => {
                self.totals.bad_frames += 1;
                self.put(kv_bad_frame_json(
                    Some(seq),
                    &why,
                    frames,
                    bytes,
                    at,
                    replayed,
                ));
            }
        }
    }

    fn gap(&mut self, from: u64, to: u64, reason: &str) {
        self.totals.gaps += 1;
        self.totals.missed += to - from + 1;
        let line = kv_gap_json(from, to, reason, clock::anchor_now());
        self.put(line);
    }

    /// Asks the replay endpoint for `from..=to`, writes what comes back and states the
    /// rest as gaps.
    async fn fill(&mut self, from: u64, to: u64) {
        let Some(replay) = self.replay.clone() else {
            self.gap(
                from,
                to,
                "missed, and no replay endpoint was given to ask for them",
            );
            return;
        };
        let mut got: Vec<Received> = Vec::new();
        let mut bad: Vec<(String, Received)> = Vec::new();
        let wait = self.replay_wait;
        let asked = ask_replay(&replay, from, to, &mut got, &mut bad);
        let outcome = match tokio::time::timeout(wait, asked).await {
            Ok(Ok(())) => None,
            Ok(Err(why)) => Some(why),
            Err(_) if got.is_empty() && bad.is_empty() => Some(format!(
                "the replay endpoint {replay} did not answer within {} s",
                wait.as_secs_f64()
            )),
            Err(_) => Some(format!(
                "the replay from {replay} did not finish within {} s",
                wait.as_secs_f64()
            )),
        };
        for (why, message) in bad {
            self.totals.bad_frames += 1;
            let bytes = message.frames.iter().map(|f| f.len()).sum();
            let line = kv_bad_frame_json(None, &why, message.frames.len(), bytes, message.at, true);
            self.put(line);
        }
        let mut next = from;
        for message in got {
            let frames: Vec<&[u8]> = message.frames.iter().map(|b| b.as_ref()).collect();
            let bytes = frames.iter().map(|f| f.len()).sum();
            let Ok(Replayed::Batch { seq, payload }) = replayed_frame(&frames) else {
                continue;
            };
            if seq < next || seq > to {
                continue;
            }
            if seq > next {
                self.gap(
                    next,
                    seq - 1,
                    "the replay endpoint no longer held them (it keeps only the latest batches)",
                );
            }
            self.write_batch(seq, payload, frames.len(), bytes, message.at, true);
            next = seq + 1;
        }
        if next <= to {
            let reason = outcome.unwrap_or_else(|| {
                if next == from {
                    "the replay endpoint no longer held them (it keeps only the latest batches)"
                        .to_owned()
                } else {
                    "the replay ended without them".to_owned()
                }
            });
            self.gap(next, to, &reason);
        }
    }
}

struct Sequence {
    next: Option<u64>,
    first: First,
}

/// One replay: connects a DEALER, asks from `from`, and keeps every batch up to `to`
/// (in `got`, in the order sent) until the end marker or a batch past `to`. A message
/// that cannot be read goes to `bad`.
async fn ask_replay(
    endpoint: &str,
    from: u64,
    to: u64,
    got: &mut Vec<Received>,
    bad: &mut Vec<(String, Received)>,
) -> Result<(), String> {
    let mut dealer = DealerSocket::new();
    dealer
        .connect(endpoint)
        .await
        .map_err(|e| format!("cannot connect to the replay endpoint {endpoint}: {e}"))?;
    let request = ZmqMessage::try_from(vec![
        Bytes::new(),
        Bytes::copy_from_slice(&from.to_be_bytes()),
    ])
    .map_err(|e| e.to_string())?;
    dealer
        .send(request)
        .await
        .map_err(|e| format!("cannot ask the replay endpoint {endpoint}: {e}"))?;
    loop {
        let message = dealer
            .recv()
            .await
            .map_err(|e| format!("the replay endpoint {endpoint} stopped answering: {e}"))?;
        let received = Received {
            frames: message.into_vec(),
            at: clock::anchor_now(),
        };
        let frames: Vec<&[u8]> = received.frames.iter().map(|b| b.as_ref()).collect();
        match replayed_frame(&frames) {
            Ok(Replayed::End) => return Ok(()),
            Ok(Replayed::Batch { seq, .. }) if seq > to => return Ok(()),
            Ok(Replayed::Batch { seq, .. }) if seq < from => {}
            Ok(Replayed::Batch { .. }) => got.push(received),
            Err(why) => bad.push((format!("a replay message: {why}"), received)),
        }
    }
}
