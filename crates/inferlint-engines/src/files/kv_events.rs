//! The KV-cache event file (`inferlint.kv-events/1`): what a subscriber received of an
//! engine's KV event stream, one JSON object a line, written as it was received; and its
//! reader, into the run model's [`KvEvents`].
//!
//! Lines, each told by the key it has:
//! - the header, first: `{"schema", "endpoint", "replay_endpoint", "backfill_from",
//!   "t_wall", "t_mono_ns"}`, the subscriber's start on both clocks (the anchor); a
//!   stream drained from an endpoint that forgets what it returns (TensorRT-LLM's
//!   `/kv_cache_events`) adds `"drained": true` and `"numbered_by": "event"`: its
//!   sequence numbers are the engine's event ids, one per event, not one per batch;
//! - `{"subscribed": ENDPOINT, "listening_at_start", "t_wall", "t_mono_ns"}` once the
//!   subscription is made: whether the publisher was already listening when the
//!   subscriber started decides whether a first sequence number above 0 is a hole;
//! - a batch: `{"seq", "ts", "t_wall", "t_mono_ns", "dp_rank", "events",
//!   "stored_blocks", "stored_tokens", "removed_blocks", "cleared", "medium"}`, with
//!   `"other_events"` when it held events of an unknown type and `"replayed": true` when
//!   it came through the replay endpoint; `ts` is the engine's clock, `t_wall` and
//!   `t_mono_ns` the subscriber's when it received the batch. A drained batch (one
//!   answer's run of consecutive event ids of one rank) adds `"seq_to"`, its last event
//!   id, and its `ts` is the drain's time: the events carry none;
//! - `{"gap": REASON, "from_seq", "to_seq", "t_wall", "t_mono_ns"}`: batches never
//!   received, after the replay was asked for them where there was one;
//! - `{"bad_frame": REASON, "seq", "frames", "bytes", "t_wall", "t_mono_ns"}`: a message
//!   that could not be read (`seq` where its sequence number could);
//! - `{"restart": REASON, "seq", "t_wall", "t_mono_ns"}`: the sequence began again;
//! - `{"note": TEXT, "t_wall", "t_mono_ns"}`: what the subscriber met (a connection that
//!   failed);
//! - `{"bound": ENDPOINT, "t_wall", "t_mono_ns"}`: the subscriber bound the endpoint and
//!   waits for the engine's publisher to connect to it; then
//!   `{"publisher_connected": ENDPOINT, "t_wall", "t_mono_ns"}` each time one did;
//! - `{"end": "stopped", "t_wall", "t_mono_ns", totals...}`, last, when it stopped.
//!
//! Holes are never silent. The writer states each hole it found as a gap record; the
//! reader also finds the holes a file shows between consecutive sequence numbers without
//! a gap record (a file cut or edited) and names them so. Memory is bounded for a day's
//! stream: the reader keeps per-second sums, never the batches.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use inferlint_core::model::traces::{ClockAnchor, KvEvents, KvGap, KvNumbering, KvSecond};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::input::{open_input, shown, FileError};
use crate::kv_frames::KvBatch;

/// The schema string of the header line.
pub const KV_EVENTS_SCHEMA: &str = "inferlint.kv-events/1";

/// The longest line read: a batch line is about 250 bytes, a gap or bad-frame record
/// holds a reason of a few words. A longer line is skipped without being held.
pub const MAX_KV_LINE_BYTES: usize = 64 << 10;

/// The most seconds a reading keeps: 12 days of a stream with events every second. A
/// batch of a second beyond them is counted as skipped.
pub const MAX_KV_SECONDS: usize = 1 << 20;

/// The reason a reader gives a hole the file shows without a gap record.
pub const UNRECORDED_HOLE: &str =
    "the file holds no batch and no gap record for them (a file cut or edited)";

/// What the header says.
#[derive(Debug, Clone, PartialEq)]
pub struct KvHeader {
    /// The address subscribed to.
    pub endpoint: String,
    /// The replay endpoint asked for missed batches, where one was given.
    pub replay_endpoint: Option<String>,
    /// The sequence number from which batches published before the subscription were
    /// asked of the replay endpoint, where the subscriber was told to.
    pub backfill_from: Option<u64>,
    /// When the subscriber started.
    pub anchor: ClockAnchor,
    /// Drained from an endpoint that forgets what it returns, not subscribed to.
    pub drained: bool,
    /// What the sequence numbers count.
    pub numbered_by: KvNumbering,
}

/// The totals of the closing line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct KvTotals {
    /// Batches written, replayed ones included.
    pub batches: u64,
    /// Of them, batches fetched through the replay endpoint.
    pub replayed: u64,
    /// Gap records written.
    pub gaps: u64,
    /// Batches the gap records name: never received.
    pub missed: u64,
    /// Messages that could not be read.
    pub bad_frames: u64,
    /// Times the sequence began again.
    pub restarts: u64,
    /// Blocks stored, over every batch written.
    pub stored_blocks: u64,
    /// Blocks removed, over every batch written.
    pub removed_blocks: u64,
}

#[derive(Serialize)]
struct HeaderLine<'a> {
    schema: &'static str,
    endpoint: &'a str,
    replay_endpoint: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    backfill_from: Option<u64>,
    #[serde(skip_serializing_if = "is_false")]
    drained: bool,
    #[serde(skip_serializing_if = "is_batch")]
    numbered_by: KvNumbering,
    t_wall: f64,
    t_mono_ns: i64,
}

fn is_batch(n: &KvNumbering) -> bool {
    *n == KvNumbering::Batch
}

/// The header line.
pub fn kv_header_json(header: &KvHeader) -> String {
    to_line(&HeaderLine {
        schema: KV_EVENTS_SCHEMA,
        endpoint: &header.endpoint,
        replay_endpoint: header.replay_endpoint.as_deref(),
        backfill_from: header.backfill_from,
        drained: header.drained,
        numbered_by: header.numbered_by,
        t_wall: header.anchor.t_wall,
        t_mono_ns: header.anchor.t_mono_ns,
    })
}

#[derive(Serialize)]
struct SubscribedLine<'a> {
    subscribed: &'a str,
    listening_at_start: bool,
    t_wall: f64,
    t_mono_ns: i64,
}

#[derive(Serialize)]
struct BoundLine<'a> {
    bound: &'a str,
    t_wall: f64,
    t_mono_ns: i64,
}

/// The line that says the subscriber bound `endpoint` for the engine's publisher to
/// connect to (a stream that then stays silent can be told from one never connected).
pub fn kv_bound_json(endpoint: &str, at: ClockAnchor) -> String {
    to_line(&BoundLine {
        bound: endpoint,
        t_wall: at.t_wall,
        t_mono_ns: at.t_mono_ns,
    })
}

#[derive(Serialize)]
struct ConnectedLine<'a> {
    publisher_connected: &'a str,
    t_wall: f64,
    t_mono_ns: i64,
}

/// The line that says a publisher connected to the endpoint the subscriber bound.
pub fn kv_connected_json(endpoint: &str, at: ClockAnchor) -> String {
    to_line(&ConnectedLine {
        publisher_connected: endpoint,
        t_wall: at.t_wall,
        t_mono_ns: at.t_mono_ns,
    })
}

/// The line that says when the subscription was made, and whether the publisher was
/// already listening when the subscriber started (if it was, batches before the first
/// one received were published before the subscription; if not, the publisher started
/// after the subscriber, and every batch from 0 on belongs to the recording).
pub fn kv_subscribed_json(endpoint: &str, listening_at_start: bool, at: ClockAnchor) -> String {
    to_line(&SubscribedLine {
        subscribed: endpoint,
        listening_at_start,
        t_wall: at.t_wall,
        t_mono_ns: at.t_mono_ns,
    })
}

#[derive(Serialize)]
struct BatchLine<'a> {
    seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    seq_to: Option<u64>,
    ts: f64,
    t_wall: f64,
    t_mono_ns: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dp_rank: Option<i64>,
    events: u64,
    stored_blocks: u64,
    stored_tokens: u64,
    removed_blocks: u64,
    cleared: u64,
    medium: Option<&'a str>,
    #[serde(skip_serializing_if = "is_zero")]
    other_events: u64,
    #[serde(skip_serializing_if = "is_false")]
    replayed: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One batch's line: its summary, never its token ids or hashes.
pub fn kv_batch_json(seq: u64, batch: &KvBatch, at: ClockAnchor, replayed: bool) -> String {
    batch_line(seq, None, batch, at, replayed)
}

/// One drained batch's line: the events of one answer whose ids run from `first_id` to
/// `last_id` without a break, of one rank, summarised (`batch.ts` is the drain's time).
pub fn kv_drained_batch_json(
    first_id: u64,
    last_id: u64,
    batch: &KvBatch,
    at: ClockAnchor,
) -> String {
    batch_line(first_id, Some(last_id), batch, at, false)
}

fn batch_line(
    seq: u64,
    seq_to: Option<u64>,
    batch: &KvBatch,
    at: ClockAnchor,
    replayed: bool,
) -> String {
    let medium = batch.medium();
    to_line(&BatchLine {
        seq,
        seq_to,
        ts: batch.ts,
        t_wall: at.t_wall,
        t_mono_ns: at.t_mono_ns,
        dp_rank: batch.dp_rank,
        events: batch.events,
        stored_blocks: batch.stored_blocks,
        stored_tokens: batch.stored_tokens,
        removed_blocks: batch.removed_blocks,
        cleared: batch.cleared,
        medium: medium.as_deref(),
        other_events: batch.other_events,
        replayed,
    })
}

#[derive(Serialize)]
struct GapLine<'a> {
    gap: &'a str,
    from_seq: u64,
    to_seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dp_rank: Option<i64>,
    t_wall: f64,
    t_mono_ns: i64,
}

/// A gap record: batches `from_seq` to `to_seq` (both included) were never received.
pub fn kv_gap_json(from_seq: u64, to_seq: u64, reason: &str, at: ClockAnchor) -> String {
    kv_rank_gap_json(from_seq, to_seq, None, reason, at)
}

/// A gap record of one rank's numbers, where each rank numbers its own (TensorRT-LLM's
/// event ids under attention data parallelism).
pub fn kv_rank_gap_json(
    from_seq: u64,
    to_seq: u64,
    dp_rank: Option<i64>,
    reason: &str,
    at: ClockAnchor,
) -> String {
    to_line(&GapLine {
        gap: reason,
        from_seq,
        to_seq,
        dp_rank,
        t_wall: at.t_wall,
        t_mono_ns: at.t_mono_ns,
    })
}

#[derive(Serialize)]
struct BadFrameLine<'a> {
    bad_frame: &'a str,
    seq: Option<u64>,
    frames: usize,
    bytes: usize,
    t_wall: f64,
    t_mono_ns: i64,
    #[serde(skip_serializing_if = "is_false")]
    replayed: bool,
}

/// A message that could not be read: why, its sequence number where that could be read,
/// and its size.
pub fn kv_bad_frame_json(
    seq: Option<u64>,
    reason: &str,
    frames: usize,
    bytes: usize,
    at: ClockAnchor,
    replayed: bool,
) -> String {
    to_line(&BadFrameLine {
        bad_frame: reason,
        seq,
        frames,
        bytes,
        t_wall: at.t_wall,
        t_mono_ns: at.t_mono_ns,
        replayed,
    })
}

#[derive(Serialize)]
struct RestartLine {
    restart: String,
    seq: u64,
    t_wall: f64,
    t_mono_ns: i64,
}

/// The sequence began again: batch `seq` came after `last_seq`, at or below it.
pub fn kv_restart_json(last_seq: u64, seq: u64, at: ClockAnchor) -> String {
    to_line(&RestartLine {
        restart: format!(
            "the sequence went back from {last_seq} to {seq}: the publisher started again"
        ),
        seq,
        t_wall: at.t_wall,
        t_mono_ns: at.t_mono_ns,
    })
}

#[derive(Serialize)]
struct NoteLine<'a> {
    note: &'a str,
    t_wall: f64,
    t_mono_ns: i64,
}

/// A note: something the subscriber met that is neither a batch nor a hole.
pub fn kv_note_json(note: &str, at: ClockAnchor) -> String {
    to_line(&NoteLine {
        note,
        t_wall: at.t_wall,
        t_mono_ns: at.t_mono_ns,
    })
}

#[derive(Serialize)]
struct EndLine<'a> {
    end: &'static str,
    t_wall: f64,
    t_mono_ns: i64,
    #[serde(flatten)]
    totals: &'a KvTotals,
}

/// The closing line: the end anchor and the totals.
pub fn kv_end_json(totals: &KvTotals, at: ClockAnchor) -> String {
    to_line(&EndLine {
        end: "stopped",
        t_wall: at.t_wall,
        t_mono_ns: at.t_mono_ns,
        totals,
    })
}

fn to_line(value: &impl Serialize) -> String {
    // Plain structs of numbers and strings: serialising them cannot fail.
    serde_json::to_string(value).unwrap_or_else(|e| format!("{{\"note\": \"{e}\"}}"))
}

/// One batch line, read back.
#[derive(Debug, Clone, PartialEq)]
pub struct KvBatchLine {
    /// Its sequence number.
    pub seq: u64,
    /// The last sequence number it covers: `seq` for a batch numbered as a whole, the
    /// last event id for a drained run of events.
    pub seq_to: u64,
    /// The data-parallel rank, where the line says.
    pub dp_rank: Option<i64>,
    /// The engine's clock, Unix seconds.
    pub ts: f64,
    /// The subscriber's wall clock when it was received.
    pub t_wall: Option<f64>,
    /// Fetched through the replay endpoint.
    pub replayed: bool,
    /// Blocks stored.
    pub stored_blocks: u64,
    /// Tokens stored.
    pub stored_tokens: u64,
    /// Blocks removed.
    pub removed_blocks: u64,
    /// Caches cleared.
    pub cleared: u64,
    /// Events of an unknown type.
    pub other_events: u64,
    /// The medium.
    pub medium: Option<String>,
}

/// One line of a KV event file, read.
#[derive(Debug, Clone, PartialEq)]
pub enum KvLine {
    /// The header.
    Header(KvHeader),
    /// The subscription was made.
    Subscribed {
        /// When.
        at: Option<ClockAnchor>,
        /// Whether the publisher was listening when the subscriber started.
        listening_at_start: Option<bool>,
    },
    /// A batch.
    Batch(KvBatchLine),
    /// A gap record, and the rank whose numbers it names where each rank numbers its own.
    Gap(KvGap, Option<i64>),
    /// A message that could not be read, with its sequence number where it had one.
    BadFrame {
        /// Its sequence number.
        seq: Option<u64>,
        /// Fetched through the replay endpoint.
        replayed: bool,
    },
    /// The sequence began again at `seq`.
    Restart {
        /// The first sequence number after the restart.
        seq: Option<u64>,
    },
    /// A note.
    Note,
    /// The subscriber bound its endpoint for the publisher to connect to.
    Bound,
    /// A publisher connected to the endpoint the subscriber bound.
    PublisherConnected,
    /// The closing line.
    End {
        /// When.
        at: Option<ClockAnchor>,
    },
    /// Not a line of this format (not JSON, or no key it knows, or a value out of
    /// range), with why.
    Unreadable(String),
}

fn anchor_of(o: &Map<String, Value>) -> Option<ClockAnchor> {
    Some(ClockAnchor {
        t_wall: o.get("t_wall")?.as_f64()?,
        t_mono_ns: o.get("t_mono_ns")?.as_i64()?,
    })
}

fn count(o: &Map<String, Value>, key: &str) -> Result<u64, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("{key} is {v}, not a count")),
    }
}

/// Reads one line.
pub fn parse_kv_line(line: &str) -> KvLine {
    let o: Map<String, Value> = match serde_json::from_str(line) {
        Ok(o) => o,
        Err(e) => return KvLine::Unreadable(format!("not a JSON object: {e}")),
    };
    if let Some(schema) = o.get("schema") {
        if schema.as_str() != Some(KV_EVENTS_SCHEMA) {
            return KvLine::Unreadable(format!("schema {schema}, not {KV_EVENTS_SCHEMA}"));
        }
        let (Some(endpoint), Some(anchor)) =
            (o.get("endpoint").and_then(Value::as_str), anchor_of(&o))
        else {
            return KvLine::Unreadable("a header without its endpoint or clocks".into());
        };
        let numbered_by = match o.get("numbered_by").and_then(Value::as_str) {
            None | Some("batch") => KvNumbering::Batch,
            Some("event") => KvNumbering::Event,
            Some(other) => {
                return KvLine::Unreadable(format!(
                    "a header whose numbers count {other:?}, neither batches nor events"
                ))
            }
        };
        return KvLine::Header(KvHeader {
            endpoint: endpoint.to_owned(),
            replay_endpoint: o
                .get("replay_endpoint")
                .and_then(Value::as_str)
                .map(str::to_owned),
            backfill_from: o.get("backfill_from").and_then(Value::as_u64),
            anchor,
            drained: o.get("drained").and_then(Value::as_bool) == Some(true),
            numbered_by,
        });
    }
    if o.contains_key("subscribed") {
        return KvLine::Subscribed {
            at: anchor_of(&o),
            listening_at_start: o.get("listening_at_start").and_then(Value::as_bool),
        };
    }
    if let Some(reason) = o.get("gap") {
        let (Some(from_seq), Some(to_seq)) = (
            o.get("from_seq").and_then(Value::as_u64),
            o.get("to_seq").and_then(Value::as_u64),
        ) else {
            return KvLine::Unreadable("a gap record without its sequence numbers".into());
        };
        if to_seq < from_seq {
            return KvLine::Unreadable(format!("a gap from {from_seq} back to {to_seq}"));
        }
        return KvLine::Gap(
            KvGap {
                from_seq,
                to_seq,
                t_wall: o.get("t_wall").and_then(Value::as_f64),
                reason: reason.as_str().unwrap_or_default().to_owned(),
            },
            o.get("dp_rank").and_then(Value::as_i64),
        );
    }
    if o.contains_key("bad_frame") {
        return KvLine::BadFrame {
            seq: o.get("seq").and_then(Value::as_u64),
            replayed: o.get("replayed").and_then(Value::as_bool) == Some(true),
        };
    }
    if o.contains_key("restart") {
        return KvLine::Restart {
            seq: o.get("seq").and_then(Value::as_u64),
        };
    }
    if o.contains_key("note") {
        return KvLine::Note;
    }
    if o.contains_key("bound") {
        return KvLine::Bound;
    }
    if o.contains_key("publisher_connected") {
        return KvLine::PublisherConnected;
    }
    if o.contains_key("end") {
        return KvLine::End { at: anchor_of(&o) };
    }
    if let Some(seq) = o.get("seq") {
        let Some(seq) = seq.as_u64() else {
            return KvLine::Unreadable(format!("seq is {seq}, not a sequence number"));
        };
        let Some(ts) = o
            .get("ts")
            .and_then(Value::as_f64)
            .filter(|t| t.is_finite())
        else {
            return KvLine::Unreadable(format!("batch {seq} without the engine's ts"));
        };
        let seq_to = match o.get("seq_to") {
            None | Some(Value::Null) => seq,
            Some(v) => match v.as_u64() {
                Some(to) if to >= seq => to,
                _ => return KvLine::Unreadable(format!("batch {seq} runs to {v}")),
            },
        };
        let counts = (|| {
            Ok::<_, String>(KvBatchLine {
                seq,
                seq_to,
                dp_rank: o.get("dp_rank").and_then(Value::as_i64),
                ts,
                t_wall: o.get("t_wall").and_then(Value::as_f64),
                replayed: o.get("replayed").and_then(Value::as_bool) == Some(true),
                stored_blocks: count(&o, "stored_blocks")?,
                stored_tokens: count(&o, "stored_tokens")?,
                removed_blocks: count(&o, "removed_blocks")?,
                cleared: count(&o, "cleared")?,
                other_events: count(&o, "other_events")?,
                medium: o.get("medium").and_then(Value::as_str).map(str::to_owned),
            })
        })();
        return match counts {
            Ok(batch) => KvLine::Batch(batch),
            Err(why) => KvLine::Unreadable(format!("batch {seq}: {why}")),
        };
    }
    KvLine::Unreadable("no key of a KV event record".into())
}

/// The sequence numbers a file accounts for, in file order: a batch, a bad frame with a
/// sequence number, or a gap record each cover a stretch; a stretch that starts past the
/// next expected number leaves a hole no record states.
#[derive(Default)]
struct Sequence {
    /// The next number expected; `None` before the first record and after a restart.
    next: Option<u64>,
}

impl Sequence {
    /// Accounts for `from..=to`; returns the hole before it, if any, and whether the
    /// stretch is new (not at or below numbers already accounted for).
    fn cover(&mut self, from: u64, to: u64) -> (Option<(u64, u64)>, bool) {
        let Some(next) = self.next else {
            self.next = Some(to.saturating_add(1));
            return (None, true);
        };
        if to < next {
            return (None, false);
        }
        let hole = (from > next).then(|| (next, from - 1));
        self.next = Some(to.saturating_add(1));
        (hole, true)
    }
}

/// Reads a KV event file into per-second sums on the engine's clock, the holes stated
/// and the holes found, in memory bounded by the seconds it spans. A line that cannot be
/// read (a cut last line, a line longer than [`MAX_KV_LINE_BYTES`], a record of no known
/// kind, a batch already read) is counted in `skipped`, as is a bad-frame record. A file
/// without the header first is refused.
pub fn read_kv_events(path: &Path) -> Result<KvEvents, FileError> {
    let (file, _) = open_input(path)?;
    read_kv_events_from(path, file)
}

/// [`read_kv_events`] from any reader; `path` names it.
pub fn read_kv_events_from(path: &Path, reader: impl Read) -> Result<KvEvents, FileError> {
    let mut state = Reading {
        events: KvEvents {
            file: shown(path),
            ..KvEvents::default()
        },
        ..Reading::default()
    };
    let mut line_no = 0usize;
    let mut failure = None;
    for_each_line(path, reader, |line| {
        line_no += 1;
        if failure.is_none() {
            if let Err(why) = state.line(line_no, line) {
                failure = Some(why);
            }
        }
    })?;
    if let Some(why) = failure {
        return Err(FileError::invalid(path, why));
    }
    if !state.header {
        return Err(FileError::invalid(
            path,
            format!("empty: not a KV event file ({KV_EVENTS_SCHEMA})"),
        ));
    }
    let mut events = state.events;
    events.seconds = state.seconds.into_values().collect();
    Ok(events)
}

#[derive(Default)]
struct Reading {
    events: KvEvents,
    header: bool,
    seconds: BTreeMap<i64, KvSecond>,
    /// The numbers accounted for: one sequence, or one per rank where each rank numbers
    /// its own events (a drained stream), at most [`MAX_RANKS`] of them.
    sequences: BTreeMap<Option<i64>, Sequence>,
}

/// The most ranks whose numbers a reading follows apart; a line of a rank past them is
/// counted as skipped.
const MAX_RANKS: usize = 1024;

impl Reading {
    /// Folds one line in (`None`: a line too long to hold). An error refuses the file.
    fn line(&mut self, line_no: usize, line: Option<&[u8]>) -> Result<(), String> {
        let parsed = match line.map(std::str::from_utf8) {
            None => KvLine::Unreadable("too long".into()),
            Some(Err(_)) => KvLine::Unreadable("not UTF-8".into()),
            Some(Ok(text)) if text.trim().is_empty() => return Ok(()),
            Some(Ok(text)) => parse_kv_line(text),
        };
        if !self.header {
            return match parsed {
                KvLine::Header(header) => {
                    self.header = true;
                    self.events.endpoint = Some(header.endpoint);
                    self.events.anchor = Some(header.anchor);
                    self.events.drained = header.drained;
                    self.events.numbered_by = header.numbered_by;
                    Ok(())
                }
                _ => Err(format!(
                    "line {line_no}: not a KV event file (its first line is not an {KV_EVENTS_SCHEMA} header)"
                )),
            };
        }
        match parsed {
            KvLine::Header(_) => return Err(format!("line {line_no}: a second header")),
            KvLine::Subscribed { at, .. } => {
                if self.events.subscribed.is_none() {
                    self.events.subscribed = at;
                }
            }
            KvLine::Batch(batch) => self.batch(batch),
            KvLine::Gap(gap, rank) => {
                let Some(sequence) = self.sequence(rank) else {
                    self.events.skipped += 1;
                    return Ok(());
                };
                let (hole, _) = sequence.cover(gap.from_seq, gap.to_seq);
                self.hole(hole, gap.t_wall);
                self.events.gaps.push(gap);
            }
            KvLine::BadFrame { seq, .. } => {
                self.events.skipped += 1;
                if let Some(seq) = seq {
                    if let Some(sequence) = self.sequence(None) {
                        let (hole, _) = sequence.cover(seq, seq);
                        self.hole(hole, None);
                    }
                }
            }
            KvLine::Restart { .. } => {
                self.events.restarts += 1;
                self.sequences.clear();
            }
            KvLine::Note => {}
            KvLine::Bound => {
                self.events.publisher_connected.get_or_insert(false);
            }
            KvLine::PublisherConnected => self.events.publisher_connected = Some(true),
            KvLine::End { at } => self.events.end = at,
            KvLine::Unreadable(_) => self.events.skipped += 1,
        }
        Ok(())
    }

    fn hole(&mut self, hole: Option<(u64, u64)>, t_wall: Option<f64>) {
        if let Some((from_seq, to_seq)) = hole {
            self.events.gaps.push(KvGap {
                from_seq,
                to_seq,
                t_wall,
                reason: UNRECORDED_HOLE.into(),
            });
        }
    }

    /// The sequence a line of `rank` counts in: the rank's own where events are numbered
    /// per rank, else the one sequence; `None` past [`MAX_RANKS`].
    fn sequence(&mut self, rank: Option<i64>) -> Option<&mut Sequence> {
        let key = match self.events.numbered_by {
            KvNumbering::Event => rank,
            KvNumbering::Batch => None,
        };
        if !self.sequences.contains_key(&key) && self.sequences.len() >= MAX_RANKS {
            return None;
        }
        Some(self.sequences.entry(key).or_default())
    }

    fn batch(&mut self, batch: KvBatchLine) {
        let Some(sequence) = self.sequence(batch.dp_rank) else {
            self.events.skipped += 1;
            return;
        };
        let (hole, new) = sequence.cover(batch.seq, batch.seq_to);
        if !new {
            // At or below a number already read, with no restart between: a duplicate
            // or an edit, which cannot be placed.
            self.events.skipped += 1;
            return;
        }
        self.hole(hole, batch.t_wall);
        let second = batch.ts.floor() as i64;
        if !self.seconds.contains_key(&second) && self.seconds.len() >= MAX_KV_SECONDS {
            self.events.skipped += 1;
            return;
        }
        let bin = self.seconds.entry(second).or_insert(KvSecond {
            second,
            ..KvSecond::default()
        });
        bin.stored_blocks += batch.stored_blocks;
        bin.stored_tokens += batch.stored_tokens;
        bin.removed_blocks += batch.removed_blocks;
        bin.cleared += batch.cleared;
        bin.batches += 1;
        let events = &mut self.events;
        events.batches += 1;
        events.numbers_received += batch.seq_to - batch.seq + 1;
        events.replayed += u64::from(batch.replayed);
        events.unknown_events += batch.other_events;
        // The range runs from the first number received (the lowest of any rank's, until
        // the engine starts again) to the last one since its latest start (the highest
        // of any rank's).
        let last = self
            .sequences
            .values()
            .filter_map(|s| s.next)
            .max()
            .map_or(batch.seq_to, |next| next - 1);
        events.seq_range = Some(match events.seq_range {
            None => (batch.seq, last),
            Some((first, _)) if events.restarts == 0 => (first.min(batch.seq), last),
            Some((first, _)) => (first, last),
        });
        if let Some(medium) = batch.medium {
            for m in medium.split('+') {
                if !events.media.iter().any(|known| known == m) && events.media.len() < 8 {
                    events.media.push(m.to_owned());
                }
            }
        }
    }
}

/// Calls `on_line` with each line (without its line break), or `None` for one longer
/// than [`MAX_KV_LINE_BYTES`], which is never held; a last line without a newline (a
/// subscriber killed mid-write) is passed on too.
fn for_each_line(
    path: &Path,
    reader: impl Read,
    on_line: impl FnMut(Option<&[u8]>),
) -> Result<(), FileError> {
    crate::input::for_each_line_within(path, reader, MAX_KV_LINE_BYTES, on_line)
}
