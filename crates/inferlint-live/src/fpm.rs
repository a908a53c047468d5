//! Subscribing to an engine's native forward-pass metrics (FPM) stream while a run goes
//! on, and writing what arrives as the run folder's `steps.jsonl` (`inferlint.steps/1`,
//! docs/steps.md), read back by `inferlint_engines::files::read_steps` like the
//! stat-logger plugin's file: one reader for vLLM's and SGLang's stream and for the plugin.
//!
//! The stream: vLLM's `--forward-pass-metrics-port PORT` (vllm-project/vllm,
//! `vllm/v1/metrics/forward_pass_metrics.py`) and SGLang's scheduler
//! (sgl-project/sglang, `python/sglang/srt/observability/forward_pass_metrics.py`) bind a
//! ZeroMQ PUB socket at `tcp://*:PORT` (vLLM: PORT plus the data-parallel rank) and send
//! one message per model execution, `["", sequence as 8 bytes big-endian,
//! msgpack(ForwardPassMetrics)]`. The payload is a msgspec struct, which msgspec writes
//! as a map of field names: `version` (1), `worker_id`, `dp_rank`, `counter_id` (the
//! sequence), `timing_scope`, `wall_time` (seconds the model execution took),
//! `scheduled_requests` and `queued_requests` (maps of counts). A publisher with nothing
//! to send for a second sends a heartbeat: the default struct, every number 0.
//!
//! ```no_run
//! use std::path::Path;
//! use inferlint_live::fpm::FpmSubscriber;
//!
//! let sub = FpmSubscriber::start("tcp://127.0.0.1:20380", Path::new("run/steps.jsonl"))?;
//! // ... the load runs ...
//! let summary = sub.stop();
//! println!("{} steps, {} missed", summary.totals.steps, summary.totals.missed);
//! # Ok::<(), inferlint_live::kv_events::KvError>(())
//! ```
//!
//! What is written, and why:
//! - The header: `schema`, `source` (`"forward-pass-metrics"`), `endpoint`, the clock
//!   anchor (`t_wall`, `t_mono_ns`: this host's clocks read together when the file is
//!   made, as the plugin anchors its own), `iteration_details` (`true`: every message
//!   carries the batch's composition), and `engine` where the caller names it (the
//!   stream does not say which engine sent it).
//! - A step line for each message that is not a heartbeat, with the keys whose meaning
//!   is the stream's: `pr`, `pt` (the scheduled prefill requests and their tokens),
//!   `dr` (the scheduled decode requests), `w` (the queued requests: waiting and
//!   deferred together, which the stream does not part), `ms` (`wall_time` in ms: the
//!   model execution, not the scheduling around it). What the stream does not carry is
//!   left out, never written as 0: `i`, `r`, `d`, `kv`, `dt`, `gen`, `prompt`, `pre`.
//! - `t` is the message's receipt on this host's monotonic clock: the stream carries no
//!   time of its own, so a step is placed when it arrived, after its execution and the
//!   publisher's queue (milliseconds on one host; more when its queue backs up).
//! - A heartbeat writes no line: its queue counts are the struct's defaults, not a
//!   reading, and a step line saying nobody waited would end a stall T29 is following.
//!   Heartbeats are counted in the end line.
//! - A gap line for each hole in the sequence (its size), for a restart of the publisher
//!   (the sequence going back), and for each message not read (a payload that cannot be
//!   decoded, or another `version`, recorded in the end line): each may have been a step,
//!   so T29 and T31 do not judge across it. A publisher drops a message without taking a
//!   sequence number when its own queue is full: that loss shows in no gap.
//! - The end line, at the stop: `steps`, `dropped` (the gap lines' total), `heartbeats`,
//!   `gaps`, `restarts`, `bad_frames`, `other_versions` (the versions seen and not read),
//!   and `worker_id` and `dp_rank` of the last message read.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use inferlint_core::model::traces::ClockAnchor;
use inferlint_engines::files::STEPS_SCHEMA;
use inferlint_engines::kv_frames::published_frame;
use inferlint_engines::output::{create_stream, OutputError, Rule, StreamFile};
use serde_json::{json, Value};
use zeromq::{Socket, SocketOptions, SocketRecv, SubSocket};

use crate::clock;
use crate::kv_events::{connect_address, KvError};
use crate::receiving::{LineWriter, Receiving, Summary};
use crate::stop::Stop;

/// The payload version this reader reads (vLLM's and SGLang's `FPM_VERSION`).
pub const FPM_VERSION: i64 = 1;

/// The `source` of the header this subscriber writes.
pub const FPM_SOURCE: &str = "forward-pass-metrics";

/// At the stop, how long the socket may stay silent before what it held is taken to be
/// read.
const QUEUED_IDLE: Duration = Duration::from_millis(100);
/// At the stop, the longest the messages the socket holds are read for.
const QUEUED_AT_MOST: Duration = Duration::from_secs(1);
/// Nesting deeper than this in a payload is refused rather than followed.
const MAX_DEPTH: usize = 32;

/// What to subscribe to and how.
#[derive(Debug, Clone)]
pub struct FpmOptions {
    /// The PUB endpoint: `tcp://HOST:PORT` (or `HOST:PORT`); the engine's own bind
    /// address `tcp://*:PORT` is subscribed to on 127.0.0.1.
    pub endpoint: String,
    /// The engine, written in the header where given (`"vllm"`, `"sglang"`).
    pub engine: Option<String>,
    /// The most [`FpmSubscriber::start_with`] waits to subscribe.
    pub start_wait: Duration,
    /// Replace an existing output file (`--force`).
    pub force: bool,
}

impl FpmOptions {
    /// Options for `endpoint`, with the default wait (that of the KV event subscriber).
    pub fn new(endpoint: &str) -> FpmOptions {
        FpmOptions {
            endpoint: endpoint.to_owned(),
            engine: None,
            start_wait: crate::kv_events::DEFAULT_START_WAIT,
            force: false,
        }
    }
}

/// What the subscriber received, as the end line says it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FpmTotals {
    /// Step lines written.
    pub steps: u64,
    /// Heartbeats received (no line).
    pub heartbeats: u64,
    /// Holes in the sequence.
    pub gaps: u64,
    /// Messages the holes lost.
    pub missed: u64,
    /// Times the sequence went back (the publisher started again).
    pub restarts: u64,
    /// Messages that could not be read.
    pub bad_frames: u64,
    /// Messages of another payload version, not read.
    pub other_version: u64,
    /// The versions those carried.
    pub versions_not_read: Vec<i64>,
    /// All the gap lines' counts together: the end line's `dropped`.
    pub dropped: u64,
}

/// What a subscriber did, when it stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct FpmSummary {
    /// The file written.
    pub path: PathBuf,
    /// The totals of the end line.
    pub totals: FpmTotals,
    /// When the subscription was made; `None` if it never was.
    pub subscribed: Option<ClockAnchor>,
    /// Whether the publisher was listening when the subscriber started.
    pub listening_at_start: Option<bool>,
    /// The first write that failed, if one did: the file stops there.
    pub write_error: Option<String>,
}

/// The requests one model execution scheduled (`scheduled_requests`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Scheduled {
    /// `num_prefill_requests`.
    pub prefill_requests: u64,
    /// `sum_prefill_tokens`: the prompt tokens this execution processed.
    pub prefill_tokens: u64,
    /// `sum_prefill_kv_tokens`: the prefills' tokens already in the cache.
    pub prefill_kv_tokens: u64,
    /// `num_decode_requests`.
    pub decode_requests: u64,
    /// `sum_decode_kv_tokens`: the decodes' context.
    pub decode_kv_tokens: u64,
}

/// The requests waiting after the execution (`queued_requests`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Queued {
    /// `num_prefill_requests`: waiting for their prefill.
    pub prefill_requests: u64,
    /// `sum_prefill_tokens`.
    pub prefill_tokens: u64,
    /// `num_decode_requests`: preempted, or waiting for KV from elsewhere.
    pub decode_requests: u64,
    /// `sum_decode_kv_tokens`.
    pub decode_kv_tokens: u64,
}

/// One message's payload, each key missing from it at its default, as msgspec decodes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fpm {
    /// `version` (1 where missing: SGLang's first form has none).
    pub version: i64,
    /// `worker_id`.
    pub worker_id: String,
    /// `dp_rank`.
    pub dp_rank: i64,
    /// `counter_id` (the sequence; 0 where missing).
    pub counter_id: u64,
    /// `timing_scope`, where sent.
    pub timing_scope: Option<String>,
    /// `wall_time`, seconds.
    pub wall_time: f64,
    /// `scheduled_requests`.
    pub scheduled: Scheduled,
    /// `queued_requests`.
    pub queued: Queued,
}

impl Default for Fpm {
    fn default() -> Fpm {
        Fpm {
            version: FPM_VERSION,
            worker_id: String::new(),
            dp_rank: 0,
            counter_id: 0,
            timing_scope: None,
            wall_time: 0.0,
            scheduled: Scheduled::default(),
            queued: Queued::default(),
        }
    }
}

impl Fpm {
    /// Whether this is a heartbeat: every number its default (the publisher's idle
    /// message). A model execution schedules at least one token, so a step never is.
    pub fn is_heartbeat(&self) -> bool {
        self.wall_time == 0.0
            && self.scheduled == Scheduled::default()
            && self.queued == Queued::default()
    }

    /// The step line's keys (without `t`): those the stream carries, nothing else.
    pub fn step_keys(&self) -> Value {
        let mut o = json!({
            "w": self.queued.prefill_requests + self.queued.decode_requests,
            "pr": self.scheduled.prefill_requests,
            "pt": self.scheduled.prefill_tokens,
            "dr": self.scheduled.decode_requests,
        });
        if self.wall_time.is_finite() && self.wall_time >= 0.0 {
            o["ms"] = json!((self.wall_time * 1e6).round() / 1e3);
        }
        o
    }
}

/// Reads one payload as msgspec would: a map of field names, unknown keys passed over,
/// missing keys at their defaults, a known key of the wrong type refused (msgspec refuses
/// it too), nothing after the map. The error says what is wrong, in a few words.
pub fn decode_fpm(payload: &[u8]) -> Result<Fpm, String> {
    let mut r = Reader {
        bytes: payload,
        at: 0,
    };
    let n = r
        .map_len()
        .map_err(|e| format!("not a forward-pass metrics payload: {e}"))?;
    let mut fpm = Fpm::default();
    for _ in 0..n {
        let key = r.key()?;
        match key.as_str() {
            "version" => fpm.version = r.int(&key)?,
            "worker_id" => fpm.worker_id = r.string(&key)?,
            "dp_rank" => fpm.dp_rank = r.int(&key)?,
            "counter_id" => fpm.counter_id = r.count(&key)?,
            "timing_scope" => fpm.timing_scope = Some(r.string(&key)?),
            "wall_time" => fpm.wall_time = r.float(&key)?,
            "scheduled_requests" => {
                let s = &mut fpm.scheduled;
                r.fields(&key, |r, k| {
                    match k {
                        "num_prefill_requests" => s.prefill_requests = r.count(k)?,
                        "sum_prefill_tokens" => s.prefill_tokens = r.count(k)?,
                        "sum_prefill_kv_tokens" => s.prefill_kv_tokens = r.count(k)?,
                        "num_decode_requests" => s.decode_requests = r.count(k)?,
                        "sum_decode_kv_tokens" => s.decode_kv_tokens = r.count(k)?,
                        "var_prefill_length" | "var_decode_kv_tokens" => {
                            r.float(k)?;
                        }
                        _ => r.skip(1)?,
                    }
                    Ok(())
                })?;
            }
            "queued_requests" => {
                let q = &mut fpm.queued;
                r.fields(&key, |r, k| {
                    match k {
                        "num_prefill_requests" => q.prefill_requests = r.count(k)?,
                        "sum_prefill_tokens" => q.prefill_tokens = r.count(k)?,
                        "num_decode_requests" => q.decode_requests = r.count(k)?,
                        "sum_decode_kv_tokens" => q.decode_kv_tokens = r.count(k)?,
                        "var_prefill_length" | "var_decode_kv_tokens" => {
                            r.float(k)?;
                        }
                        _ => r.skip(1)?,
                    }
                    Ok(())
                })?;
            }
            _ => r.skip(0)?,
        }
    }
    let left = payload.len() - r.at;
    if left > 0 {
        return Err(format!("{left} bytes after the payload"));
    }
    Ok(fpm)
}

/// A msgpack reader over one payload, every read bounded by what is left.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.bytes.len())
            .ok_or_else(|| "cut short".to_owned())?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn uint(&mut self, n: usize) -> Result<u64, String> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |v, b| (v << 8) | u64::from(*b)))
    }

    fn marker(&mut self) -> Result<rmp::Marker, String> {
        Ok(rmp::Marker::from_u8(self.take(1)?[0]))
    }

    fn map_len(&mut self) -> Result<u64, String> {
        use rmp::Marker::*;
        match self.marker()? {
            FixMap(n) => Ok(u64::from(n)),
            Map16 => self.uint(2),
            Map32 => self.uint(4),
            FixArray(_) | Array16 | Array32 => {
                Err("an array, not the map of field names msgspec writes".into())
            }
            other => Err(format!("a {other:?}, not a map")),
        }
    }

    fn str_len(&mut self, m: rmp::Marker) -> Result<Option<usize>, String> {
        use rmp::Marker::*;
        Ok(Some(match m {
            FixStr(n) => usize::from(n),
            Str8 => self.uint(1)? as usize,
            Str16 => self.uint(2)? as usize,
            Str32 => self.uint(4)? as usize,
            _ => return Ok(None),
        }))
    }

    fn key(&mut self) -> Result<String, String> {
        let m = self.marker()?;
        match self.str_len(m)? {
            Some(n) => Ok(String::from_utf8_lossy(self.take(n)?).into_owned()),
            None => Err(format!("a key that is a {m:?}, not a field name")),
        }
    }

    fn string(&mut self, key: &str) -> Result<String, String> {
        let m = self.marker()?;
        match self.str_len(m)? {
            Some(n) => Ok(String::from_utf8_lossy(self.take(n)?).into_owned()),
            None => Err(format!("{key} is a {m:?}, not a string")),
        }
    }

    /// An integer, as i128 so that every msgpack integer fits.
    fn integer(&mut self, key: &str) -> Result<i128, String> {
        use rmp::Marker::*;
        let m = self.marker()?;
        Ok(match m {
            FixPos(n) => i128::from(n),
            FixNeg(n) => i128::from(n),
            U8 => i128::from(self.uint(1)?),
            U16 => i128::from(self.uint(2)?),
            U32 => i128::from(self.uint(4)?),
            U64 => i128::from(self.uint(8)?),
            I8 => i128::from(self.uint(1)? as u8 as i8),
            I16 => i128::from(self.uint(2)? as u16 as i16),
            I32 => i128::from(self.uint(4)? as u32 as i32),
            I64 => i128::from(self.uint(8)? as i64),
            _ => return Err(format!("{key} is a {m:?}, not an integer")),
        })
    }

    fn int(&mut self, key: &str) -> Result<i64, String> {
        i64::try_from(self.integer(key)?).map_err(|_| format!("{key} is out of range"))
    }

    fn count(&mut self, key: &str) -> Result<u64, String> {
        u64::try_from(self.integer(key)?).map_err(|_| format!("{key} is negative"))
    }

    fn float(&mut self, key: &str) -> Result<f64, String> {
        use rmp::Marker::*;
        let start = self.at;
        match self.marker()? {
            F32 => Ok(f64::from(f32::from_bits(self.uint(4)? as u32))),
            F64 => Ok(f64::from_bits(self.uint(8)?)),
            _ => {
                // msgspec reads an integer into a float field.
                self.at = start;
                Ok(self.integer(key)? as f64)
            }
        }
    }

    /// A nested map's fields, each handed to `field` with its key.
    fn fields(
        &mut self,
        key: &str,
        mut field: impl FnMut(&mut Self, &str) -> Result<(), String>,
    ) -> Result<(), String> {
        let n = self.map_len().map_err(|e| format!("{key}: {e}"))?;
        for _ in 0..n {
            let k = self.key()?;
            field(self, &k)?;
        }
        Ok(())
    }

    /// Passes over one value of any kind, nested at `depth`.
    fn skip(&mut self, depth: usize) -> Result<(), String> {
        use rmp::Marker::*;
        if depth > MAX_DEPTH {
            return Err(format!("nested deeper than {MAX_DEPTH}"));
        }
        let m = self.marker()?;
        if let Some(n) = self.str_len(m)? {
            self.take(n)?;
            return Ok(());
        }
        let (items, pairs) = match m {
            FixPos(_) | FixNeg(_) | Null | True | False => return Ok(()),
            U8 | I8 => return self.take(1).map(drop),
            U16 | I16 => return self.take(2).map(drop),
            U32 | I32 | F32 => return self.take(4).map(drop),
            U64 | I64 | F64 => return self.take(8).map(drop),
            Bin8 => return self.uint(1).and_then(|n| self.take(n as usize).map(drop)),
            Bin16 => return self.uint(2).and_then(|n| self.take(n as usize).map(drop)),
            Bin32 => return self.uint(4).and_then(|n| self.take(n as usize).map(drop)),
            FixExt1 => return self.take(2).map(drop),
            FixExt2 => return self.take(3).map(drop),
            FixExt4 => return self.take(5).map(drop),
            FixExt8 => return self.take(9).map(drop),
            FixExt16 => return self.take(17).map(drop),
            Ext8 => {
                return self
                    .uint(1)
                    .and_then(|n| self.take(n as usize + 1).map(drop))
            }
            Ext16 => {
                return self
                    .uint(2)
                    .and_then(|n| self.take(n as usize + 1).map(drop))
            }
            Ext32 => {
                return self
                    .uint(4)
                    .and_then(|n| self.take(n as usize + 1).map(drop))
            }
            FixArray(n) => (u64::from(n), 1),
            Array16 => (self.uint(2)?, 1),
            Array32 => (self.uint(4)?, 1),
            FixMap(n) => (u64::from(n), 2),
            Map16 => (self.uint(2)?, 2),
            Map32 => (self.uint(4)?, 2),
            Reserved => return Err("a reserved msgpack byte (0xc1)".into()),
            _ => return Err(format!("a {m:?}")),
        };
        for _ in 0..items * pairs {
            self.skip(depth + 1)?;
        }
        Ok(())
    }
}

/// A subscriber running on its own thread. Dropping it stops it as
/// [`FpmSubscriber::stop`] does.
#[derive(Debug)]
pub struct FpmSubscriber {
    receiving: Receiving<FpmSummary>,
}

impl FpmSubscriber {
    /// Subscribes to `endpoint` and writes to `out` (which must not exist), with the
    /// default wait. See [`FpmSubscriber::start_with`].
    pub fn start(endpoint: &str, out: &Path) -> Result<FpmSubscriber, KvError> {
        FpmSubscriber::start_with(FpmOptions::new(endpoint), out)
    }

    /// Starts a subscriber: checks the address, creates `out` and writes its header,
    /// starts the thread, and returns once the subscription is made or the address was
    /// found not listening (at most `options.start_wait`).
    pub fn start_with(options: FpmOptions, out: &Path) -> Result<FpmSubscriber, KvError> {
        let (endpoint, probe) = connect_address(&options.endpoint)?;
        let runtime = crate::runtime().map_err(KvError::Start)?;
        let mut file = create_stream(out, &Rule::force(options.force))?;
        let anchor = clock::anchor_now();
        let mut header = json!({
            "schema": STEPS_SCHEMA,
            "source": FPM_SOURCE,
            "endpoint": endpoint,
            "t_wall": anchor.t_wall,
            "t_mono_ns": anchor.t_mono_ns,
            "iteration_details": true,
        });
        if let Some(engine) = &options.engine {
            header["engine"] = json!(engine);
        }
        let mut writer = LineWriter::default();
        writer.put(&mut file, header.to_string());
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
            anchor,
            stop: stop.clone(),
            file,
            writer,
            totals: FpmTotals::default(),
            last: None,
            path: out.to_owned(),
        };
        let thread = std::thread::Builder::new()
            .name("inferlint-fpm".into())
            .spawn(move || runtime.block_on(task.run(ready_tx)))
            .map_err(KvError::Start)?;
        let _ = ready_rx.recv_timeout(options.start_wait);
        Ok(FpmSubscriber {
            receiving: Receiving::new(stop, out.to_owned(), thread),
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        self.receiving.path()
    }

    /// Stops: reads what the socket already holds, writes the end line and returns the
    /// totals.
    pub fn stop(mut self) -> FpmSummary {
        self.receiving.finish()
    }
}

impl Summary for FpmSummary {
    fn lost(path: PathBuf, why: &str) -> FpmSummary {
        FpmSummary {
            path,
            totals: FpmTotals::default(),
            subscribed: None,
            listening_at_start: None,
            write_error: Some(why.to_owned()),
        }
    }
}

struct Task {
    endpoint: String,
    probe: String,
    anchor: ClockAnchor,
    stop: Stop,
    file: StreamFile,
    writer: LineWriter,
    totals: FpmTotals,
    /// `worker_id` and `dp_rank` of the last message read.
    last: Option<(String, i64)>,
    path: PathBuf,
}

/// Where the sequence stands.
struct Sequence {
    /// The next sequence number expected; `None` before the first message.
    next: Option<u64>,
    /// Whether a first message above 0 leaves a hole from 0 (the publisher started after
    /// the subscriber, so every message belongs to the recording).
    from_zero: bool,
}

impl Task {
    async fn run(mut self, ready: mpsc::Sender<()>) -> FpmSummary {
        let listening = self.listening().await;
        if !listening {
            let _ = ready.send(());
        }
        let mut subscribed = None;
        if let Some(mut sub) = self.subscribe().await {
            subscribed = Some(clock::anchor_now());
            let _ = ready.send(());
            let mut state = Sequence {
                next: None,
                from_zero: !listening,
            };
            self.receive(&mut sub, &mut state).await;
        }
        let t = self.t_now();
        let mut end = json!({
            "t": t,
            "end": true,
            "steps": self.totals.steps,
            "dropped": self.totals.dropped,
            "heartbeats": self.totals.heartbeats,
            "gaps": self.totals.gaps,
            "restarts": self.totals.restarts,
            "bad_frames": self.totals.bad_frames,
            "other_versions": self.totals.versions_not_read,
        });
        if let Some((worker, rank)) = &self.last {
            end["worker_id"] = json!(worker);
            end["dp_rank"] = json!(rank);
        }
        self.put(end.to_string());
        self.writer.sync(&self.file, &self.path);
        FpmSummary {
            path: self.path,
            totals: self.totals,
            subscribed,
            listening_at_start: Some(listening),
            write_error: self.writer.error,
        }
    }

    fn put(&mut self, line: String) {
        self.writer.put(&mut self.file, line);
    }

    /// Seconds since the header's anchor, to the microsecond (as the plugin writes `t`).
    fn t_now(&self) -> f64 {
        let ns = clock::monotonic_ns() - self.anchor.t_mono_ns;
        (ns as f64 / 1e3).round() / 1e6
    }

    async fn listening(&self) -> bool {
        let connect = tokio::net::TcpStream::connect(self.probe.as_str());
        matches!(
            tokio::time::timeout(Duration::from_secs(2), connect).await,
            Ok(Ok(_))
        )
    }

    /// Subscribes to every message and connects, trying again until it connects or the
    /// stop comes (`None`).
    async fn subscribe(&mut self) -> Option<SubSocket> {
        let mut socket_options = SocketOptions::default();
        socket_options.no_connect_timeout();
        let mut sub = SubSocket::with_options(socket_options);
        if sub.subscribe("").await.is_err() {
            return None;
        }
        loop {
            let stopped = self.stop.stopped();
            tokio::select! {
                () = stopped => return None,
                result = sub.connect(&self.endpoint) => if result.is_ok() {
                    return Some(sub);
                },
            }
            let stopped = self.stop.stopped();
            tokio::select! {
                () = stopped => return None,
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    }

    async fn receive(&mut self, sub: &mut SubSocket, state: &mut Sequence) {
        loop {
            let stopped = self.stop.stopped();
            let message = tokio::select! {
                () = stopped => {
                    self.take_what_was_queued(sub, state).await;
                    return;
                }
                m = sub.recv() => m,
            };
            match message {
                Ok(message) => self.published(&message.into_vec(), state),
                Err(_) => {
                    // No peer: the zeromq crate reconnects in the background.
                    let stopped = self.stop.stopped();
                    tokio::select! {
                        () = stopped => return,
                        () = tokio::time::sleep(Duration::from_millis(100)) => {}
                    }
                }
            }
        }
    }

    /// At the stop, the messages the socket already holds are read, so that they are not
    /// taken for messages never sent; at most [`QUEUED_AT_MOST`] of a publisher still
    /// sending.
    async fn take_what_was_queued(&mut self, sub: &mut SubSocket, state: &mut Sequence) {
        let began = tokio::time::Instant::now();
        while began.elapsed() < QUEUED_AT_MOST {
            match tokio::time::timeout(QUEUED_IDLE, sub.recv()).await {
                Ok(Ok(message)) => self.published(&message.into_vec(), state),
                _ => break,
            }
        }
    }

    fn gap(&mut self, n: u64, reason: &str) {
        self.totals.dropped += n;
        let t = self.t_now();
        self.put(json!({"t": t, "gap": n, "reason": reason}).to_string());
    }

    fn published(&mut self, frames: &[bytes::Bytes], state: &mut Sequence) {
        let frames: Vec<&[u8]> = frames.iter().map(|b| b.as_ref()).collect();
        let (seq, payload) = match published_frame(&frames) {
            Ok(read) => read,
            Err(why) => {
                self.totals.bad_frames += 1;
                self.gap(1, &format!("a message that could not be read: {why}"));
                return;
            }
        };
        match state.next {
            Some(next) if seq < next => {
                self.totals.restarts += 1;
                self.gap(
                    seq,
                    &format!(
                        "the publisher started again (its sequence went from {} back to {seq}): \
                         the {seq} messages before {seq} were missed, and what it sent after {} \
                         before it stopped is not known",
                        next - 1,
                        next - 1
                    ),
                );
            }
            Some(next) if seq > next => {
                self.totals.gaps += 1;
                self.totals.missed += seq - next;
                self.gap(
                    seq - next,
                    &format!(
                        "the sequence skipped {} message(s) ({next} to {}): lost between the publisher and this subscriber",
                        seq - next,
                        seq - 1
                    ),
                );
            }
            None if state.from_zero && seq > 0 => {
                self.totals.gaps += 1;
                self.totals.missed += seq;
                self.gap(
                    seq,
                    &format!(
                        "the first message received is {seq}: the publisher started after the subscriber, and messages 0 to {} were lost",
                        seq - 1
                    ),
                );
            }
            _ => {}
        }
        state.next = Some(seq.saturating_add(1));
        match decode_fpm(payload) {
            Err(why) => {
                self.totals.bad_frames += 1;
                self.gap(1, &format!("message {seq} could not be read: {why}"));
            }
            Ok(fpm) if fpm.version != FPM_VERSION => {
                self.totals.other_version += 1;
                if !self.totals.versions_not_read.contains(&fpm.version) {
                    self.totals.versions_not_read.push(fpm.version);
                }
                self.gap(
                    1,
                    &format!(
                        "message {seq} is of version {}, which this reader does not read (it reads version {FPM_VERSION})",
                        fpm.version
                    ),
                );
            }
            Ok(fpm) => {
                self.last = Some((fpm.worker_id.clone(), fpm.dp_rank));
                if fpm.is_heartbeat() {
                    self.totals.heartbeats += 1;
                    return;
                }
                let mut line = fpm.step_keys();
                line["t"] = json!(self.t_now());
                self.totals.steps += 1;
                self.put(line.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmp::encode::*;

    fn key(out: &mut Vec<u8>, k: &str) {
        write_str(out, k).unwrap();
    }

    /// A payload as msgspec writes vLLM's struct: a map of every field, nested maps.
    fn vllm_payload(version: i64, extra: bool) -> Vec<u8> {
        let mut out = Vec::new();
        write_map_len(&mut out, 8 + u32::from(extra)).unwrap();
        key(&mut out, "version");
        write_sint(&mut out, version).unwrap();
        key(&mut out, "worker_id");
        write_str(&mut out, "w0").unwrap();
        key(&mut out, "dp_rank");
        write_uint(&mut out, 1).unwrap();
        key(&mut out, "counter_id");
        write_uint(&mut out, 7).unwrap();
        key(&mut out, "timing_scope");
        write_str(&mut out, "execute_model_cuda").unwrap();
        if extra {
            key(&mut out, "later_field");
            write_map_len(&mut out, 1).unwrap();
            key(&mut out, "x");
            write_array_len(&mut out, 2).unwrap();
            write_f64(&mut out, 1.5).unwrap();
            write_bin(&mut out, b"ab").unwrap();
        }
        key(&mut out, "wall_time");
        write_f64(&mut out, 0.0125).unwrap();
        key(&mut out, "scheduled_requests");
        write_map_len(&mut out, 7).unwrap();
        for (k, v) in [
            ("num_prefill_requests", 2u64),
            ("sum_prefill_tokens", 300),
            ("sum_prefill_kv_tokens", 16),
            ("num_decode_requests", 4),
            ("sum_decode_kv_tokens", 900),
        ] {
            key(&mut out, k);
            write_uint(&mut out, v).unwrap();
        }
        key(&mut out, "var_prefill_length");
        write_f64(&mut out, 4.0).unwrap();
        key(&mut out, "var_decode_kv_tokens");
        write_uint(&mut out, 0).unwrap();
        key(&mut out, "queued_requests");
        write_map_len(&mut out, 2).unwrap();
        key(&mut out, "num_prefill_requests");
        write_uint(&mut out, 3).unwrap();
        key(&mut out, "num_decode_requests");
        write_uint(&mut out, 1).unwrap();
        out
    }

    /// Every field read as sent; an unknown key, nested, passed over; an integer in a
    /// float field read as msgspec reads it.
    #[test]
    fn a_payload_reads_as_sent_and_unknown_keys_are_passed_over() {
        for extra in [false, true] {
            let fpm = decode_fpm(&vllm_payload(1, extra)).unwrap();
            assert_eq!(fpm.version, 1);
            assert_eq!(
                (fpm.worker_id.as_str(), fpm.dp_rank, fpm.counter_id),
                ("w0", 1, 7)
            );
            assert_eq!(fpm.timing_scope.as_deref(), Some("execute_model_cuda"));
            assert_eq!(fpm.wall_time, 0.0125);
            assert_eq!(
                fpm.scheduled,
                Scheduled {
                    prefill_requests: 2,
                    prefill_tokens: 300,
                    prefill_kv_tokens: 16,
                    decode_requests: 4,
                    decode_kv_tokens: 900,
                }
            );
            assert_eq!(
                (fpm.queued.prefill_requests, fpm.queued.decode_requests),
                (3, 1)
            );
            assert!(!fpm.is_heartbeat());
            let keys = fpm.step_keys();
            assert_eq!(
                keys,
                json!({"w": 4, "pr": 2, "pt": 300, "dr": 4, "ms": 12.5})
            );
        }
    }

    /// SGLang's first form (no version, no counter, no timing scope) reads as version 1;
    /// an empty map is a heartbeat (every field its default).
    #[test]
    fn missing_keys_take_their_defaults() {
        let mut out = Vec::new();
        write_map_len(&mut out, 2).unwrap();
        key(&mut out, "worker_id");
        write_str(&mut out, "").unwrap();
        key(&mut out, "dp_rank");
        write_uint(&mut out, 0).unwrap();
        let fpm = decode_fpm(&out).unwrap();
        assert_eq!(fpm, Fpm::default());
        assert!(fpm.is_heartbeat());
    }

    /// What msgspec refuses is refused, in a few words: an array, a count of the wrong
    /// type or negative, a payload cut short, bytes after it, a key that is no string.
    #[test]
    fn malformed_payloads_are_refused() {
        let whole = vllm_payload(1, false);
        let cut = decode_fpm(&whole[..whole.len() / 2]).unwrap_err();
        assert!(cut.contains("cut short"), "{cut}");
        let mut after = whole.clone();
        after.push(0xc0);
        assert!(decode_fpm(&after).unwrap_err().contains("1 bytes after"));
        let mut array = Vec::new();
        write_array_len(&mut array, 1).unwrap();
        write_uint(&mut array, 1).unwrap();
        assert!(decode_fpm(&array).unwrap_err().contains("an array"));
        let mut typed = Vec::new();
        write_map_len(&mut typed, 1).unwrap();
        key(&mut typed, "wall_time");
        write_str(&mut typed, "soon").unwrap();
        assert!(decode_fpm(&typed).unwrap_err().contains("wall_time"));
        let mut negative = Vec::new();
        write_map_len(&mut negative, 1).unwrap();
        key(&mut negative, "scheduled_requests");
        write_map_len(&mut negative, 1).unwrap();
        key(&mut negative, "num_decode_requests");
        write_sint(&mut negative, -1).unwrap();
        assert!(decode_fpm(&negative).unwrap_err().contains("negative"));
        let mut not_a_key = Vec::new();
        write_map_len(&mut not_a_key, 1).unwrap();
        write_uint(&mut not_a_key, 1).unwrap();
        write_uint(&mut not_a_key, 1).unwrap();
        assert!(decode_fpm(&not_a_key).is_err());
        assert!(decode_fpm(&[]).is_err());
        assert!(decode_fpm(&[0xc1]).is_err());
    }
}
