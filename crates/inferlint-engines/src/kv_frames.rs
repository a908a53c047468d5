//! The frames of an engine's KV-cache event stream and the batch each carries, read from
//! their bytes. vLLM and SGLang publish the same stream (`--kv-events-config` with
//! `"publisher": "zmq"`): a ZeroMQ PUB socket sends one multipart message per scheduler
//! step that changed the cache, `[topic, seq, payload]`, where `seq` is the publisher's
//! counter (8 bytes, big-endian, from 0 when the publisher starts) and `payload` is one
//! MessagePack `EventBatch` as msgspec encodes it:
//!
//! - the batch is array-like, `[ts, events, dp_rank]`: `ts` the engine's wall clock
//!   (Unix seconds, a float), `dp_rank` its data-parallel rank; trailing fields left at
//!   their default are omitted (`omit_defaults`), so `[ts, events]` is a whole batch;
//! - each event is tagged by its class name, `BlockStored`, `BlockRemoved` or
//!   `AllBlocksCleared`, in one of two encodings: a map with a `type` key and the fields
//!   by name (vLLM 0.32: defaults left out), or an array with the tag first and the
//!   fields in order (older vLLM and SGLang): `["BlockStored", block_hashes,
//!   parent_block_hash, token_ids, block_size, lora_id, medium, ...]`,
//!   `["BlockRemoved", block_hashes, medium, ...]`, `["AllBlocksCleared"]`;
//! - a block hash is an integer or bytes, depending on the version and on vLLM's
//!   `VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES`.
//!
//! A batch is summarised as it is read ([`KvBatch`]): blocks stored and removed, tokens
//! stored, caches cleared, the storage medium named. Token ids and hashes are counted,
//! never held, so a frame costs no memory beyond its own bytes whatever lengths it
//! claims. A frame that cannot be read is an error naming what is wrong, never a panic.
//!
//! The replay endpoint (a ROUTER) answers a DEALER's `["", start_seq]` with every batch
//! it still holds from `start_seq` on, then an end marker whose sequence number is -1.
//! vLLM sends each as `["", topic, seq, payload]`; SGLang leaves the topic out,
//! `["", seq, payload]`. [`replayed_frame`] reads both.

use std::fmt;
use std::io::Cursor;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// The sequence number of the replay's end marker: -1 as 8 big-endian bytes.
pub const END_OF_REPLAY: u64 = u64::MAX;

/// The most storage media one batch's summary keeps by name; more are counted as one
/// more name (`...`). An engine names one or two (the cache and an offload tier).
const MAX_MEDIA: usize = 4;
/// The longest medium name kept; a longer one is cut there.
const MAX_MEDIUM_CHARS: usize = 32;

/// One batch of KV-cache events, summarised.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KvBatch {
    /// The engine's wall clock when it made the batch, Unix seconds.
    pub ts: f64,
    /// The data-parallel rank that published it, where the batch says.
    pub dp_rank: Option<i64>,
    /// Events in the batch.
    pub events: u64,
    /// Blocks stored: the hashes of every `BlockStored` event.
    pub stored_blocks: u64,
    /// Tokens of the blocks stored: the token ids of every `BlockStored` event.
    pub stored_tokens: u64,
    /// Blocks removed: the hashes of every `BlockRemoved` event.
    pub removed_blocks: u64,
    /// `AllBlocksCleared` events.
    pub cleared: u64,
    /// Events of a type this reader does not know, counted and otherwise passed over.
    pub other_events: u64,
    /// The storage media the events named (`GPU`, `CPU`), in the order first seen.
    pub media: Vec<String>,
    /// The block hashes read, by kind.
    pub hashes: HashKinds,
    /// Events encoded as maps (a `type` key) and as arrays (the tag first).
    pub encodings: Encodings,
}

impl KvBatch {
    /// The medium as one word: the one the events named, several joined by `+`, `None`
    /// when no event named one.
    pub fn medium(&self) -> Option<String> {
        (!self.media.is_empty()).then(|| self.media.join("+"))
    }

    fn add_medium(&mut self, medium: Option<String>) {
        let Some(medium) = medium else { return };
        if self.media.contains(&medium) {
            return;
        }
        if self.media.len() < MAX_MEDIA {
            self.media.push(medium);
        } else if !self.media.iter().any(|m| m == "...") {
            self.media.push("...".into());
        }
    }
}

/// Block hashes counted by the kind of value they were.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HashKinds {
    /// Integers.
    pub ints: u64,
    /// Byte strings.
    pub bytes: u64,
    /// Anything else (a string, a float, a list): still a block, counted.
    pub other: u64,
}

/// How a batch's events were encoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Encodings {
    /// As maps with a `type` key (vLLM 0.32).
    pub maps: u64,
    /// As arrays, the tag first (older vLLM, SGLang).
    pub arrays: u64,
}

/// Reads one batch's payload. The error says what is wrong, in a few words.
pub fn decode_batch(payload: &[u8]) -> Result<KvBatch, String> {
    let mut de = rmp_serde::Deserializer::new(Cursor::new(payload));
    let batch = BatchSeed
        .deserialize(&mut de)
        .map_err(|e| format!("not a KV event batch: {e}"))?;
    let read = de.position();
    let left = (payload.len() as u64).saturating_sub(read);
    if left > 0 {
        return Err(format!("{left} bytes after the batch"));
    }
    Ok(batch)
}

/// The sequence number in an 8-byte big-endian frame.
pub fn seq_of(frame: &[u8]) -> Result<u64, String> {
    let bytes: [u8; 8] = frame
        .try_into()
        .map_err(|_| format!("a sequence number of {} bytes (8 expected)", frame.len()))?;
    Ok(u64::from_be_bytes(bytes))
}

/// A message the PUB socket sent, `[topic, seq, payload]`: its sequence number and
/// payload.
pub fn published_frame<'a>(frames: &[&'a [u8]]) -> Result<(u64, &'a [u8]), String> {
    match frames {
        [_topic, seq, payload] => Ok((seq_of(seq)?, payload)),
        _ => Err(format!(
            "{} frames (3 expected: topic, sequence number, batch)",
            frames.len()
        )),
    }
}

/// One message of a replay, as a DEALER receives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replayed<'a> {
    /// A batch the publisher still held.
    Batch {
        /// Its sequence number.
        seq: u64,
        /// Its payload.
        payload: &'a [u8],
    },
    /// The end marker: nothing more follows.
    End,
}

/// Reads one replay message: `["", topic, seq, payload]` (vLLM) or `["", seq, payload]`
/// (SGLang), the end marker being the one whose sequence number is -1.
pub fn replayed_frame<'a>(frames: &[&'a [u8]]) -> Result<Replayed<'a>, String> {
    let rest = match frames {
        [[], rest @ ..] => rest,
        _ => {
            return Err(format!(
                "{} frames without the empty delimiter first",
                frames.len()
            ))
        }
    };
    let (seq, payload) = match rest {
        [_topic, seq, payload] => (seq_of(seq)?, *payload),
        [seq, payload] => (seq_of(seq)?, *payload),
        _ => {
            return Err(format!(
            "{} frames (4 or 3 expected: the delimiter, a topic or not, sequence number, batch)",
            frames.len()
        ))
        }
    };
    if seq == END_OF_REPLAY {
        return Ok(Replayed::End);
    }
    Ok(Replayed::Batch { seq, payload })
}

/// The batch: `[ts, events, dp_rank...]`, or a map of the same names.
struct BatchSeed;

impl<'de> DeserializeSeed<'de> for BatchSeed {
    type Value = KvBatch;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<KvBatch, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for BatchSeed {
    type Value = KvBatch;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an event batch [ts, events, dp_rank]")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<KvBatch, A::Error> {
        let mut batch = KvBatch {
            ts: seq
                .next_element_seed(Ts)?
                .ok_or_else(|| de::Error::custom("an empty batch (no ts)"))?,
            ..KvBatch::default()
        };
        if seq.next_element_seed(Events(&mut batch))?.is_none() {
            return Err(de::Error::custom("a batch without its events"));
        }
        batch.dp_rank = seq.next_element_seed(Rank)?.flatten();
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(batch)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KvBatch, A::Error> {
        let mut batch = KvBatch::default();
        let (mut ts, mut events) = (None, false);
        while let Some(key) = map.next_key_seed(Key)? {
            match key.as_deref() {
                Some("ts") => ts = Some(map.next_value_seed(Ts)?),
                Some("events") => {
                    map.next_value_seed(Events(&mut batch))?;
                    events = true;
                }
                Some("data_parallel_rank" | "attn_dp_rank" | "dp_rank") => {
                    batch.dp_rank = map.next_value_seed(Rank)?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        batch.ts = ts.ok_or_else(|| de::Error::custom("a batch without its ts"))?;
        if !events {
            return Err(de::Error::custom("a batch without its events"));
        }
        Ok(batch)
    }
}

/// The batch's `ts`: a finite number.
struct Ts;

impl<'de> DeserializeSeed<'de> for Ts {
    type Value = f64;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<f64, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Ts {
    type Value = f64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("ts, a number of seconds")
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        if v.is_finite() {
            Ok(v)
        } else {
            Err(E::custom(format!("ts is {v}, not a time")))
        }
    }
    fn visit_f32<E: de::Error>(self, v: f32) -> Result<f64, E> {
        self.visit_f64(f64::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Ok(v as f64)
    }
}

/// The data-parallel rank: an integer or nil.
struct Rank;

impl<'de> DeserializeSeed<'de> for Rank {
    type Value = Option<i64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<i64>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Rank {
    type Value = Option<i64>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a data-parallel rank or nil")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<i64>, E> {
        i64::try_from(v)
            .map(Some)
            .map_err(|_| E::custom(format!("a data-parallel rank of {v}")))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<i64>, E> {
        Ok(Some(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<i64>, E> {
        Ok(None)
    }
    fn visit_none<E: de::Error>(self) -> Result<Option<i64>, E> {
        Ok(None)
    }
}

/// The events: each summarised into the batch.
struct Events<'b>(&'b mut KvBatch);

impl<'de> DeserializeSeed<'de> for Events<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Events<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Event(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

/// What an event's tag says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Stored,
    Removed,
    Cleared,
    Other,
}

/// What one event holds, before its tag is known (a map may name its `type` last).
#[derive(Default)]
struct Fields {
    tag: Option<Tag>,
    hashes: Option<HashKinds>,
    tokens: u64,
    medium: Option<String>,
}

impl Fields {
    fn into_batch<E: de::Error>(self, batch: &mut KvBatch) -> Result<(), E> {
        let tag = self
            .tag
            .ok_or_else(|| E::custom("an event without its type tag"))?;
        let hashes = self.hashes.unwrap_or_default();
        let blocks = hashes.ints + hashes.bytes + hashes.other;
        batch.events += 1;
        match tag {
            Tag::Stored => {
                batch.stored_blocks += blocks;
                batch.stored_tokens += self.tokens;
            }
            Tag::Removed => batch.removed_blocks += blocks,
            Tag::Cleared => batch.cleared += 1,
            Tag::Other => {
                batch.other_events += 1;
                return Ok(());
            }
        }
        batch.hashes.ints += hashes.ints;
        batch.hashes.bytes += hashes.bytes;
        batch.hashes.other += hashes.other;
        batch.add_medium(self.medium);
        Ok(())
    }
}

/// One event, as a map or as an array.
struct Event<'b>(&'b mut KvBatch);

impl<'de> DeserializeSeed<'de> for Event<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Event<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an event: a map with a type, or an array with its tag first")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut fields = Fields {
            tag: Some(
                seq.next_element_seed(TagSeed)?
                    .ok_or_else(|| de::Error::custom("an empty event"))?,
            ),
            ..Fields::default()
        };
        // The fields in the order the classes declare them; an encoder leaves trailing
        // defaults out, so a shorter array is whole.
        match fields.tag {
            Some(Tag::Stored) => {
                fields.hashes = seq.next_element_seed(Hashes)?;
                let _parent: Option<IgnoredAny> = seq.next_element()?;
                fields.tokens = seq.next_element_seed(Count)?.unwrap_or(0);
                let _block_size: Option<IgnoredAny> = seq.next_element()?;
                let _lora_id: Option<IgnoredAny> = seq.next_element()?;
                fields.medium = seq.next_element_seed(Medium)?.flatten();
            }
            Some(Tag::Removed) => {
                fields.hashes = seq.next_element_seed(Hashes)?;
                fields.medium = seq.next_element_seed(Medium)?.flatten();
            }
            _ => {}
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        self.0.encodings.arrays += 1;
        fields.into_batch(self.0)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut fields = Fields::default();
        while let Some(key) = map.next_key_seed(Key)? {
            match key.as_deref() {
                Some("type") => fields.tag = Some(map.next_value_seed(TagSeed)?),
                Some("block_hashes") => fields.hashes = Some(map.next_value_seed(Hashes)?),
                Some("token_ids") => fields.tokens = map.next_value_seed(Count)?,
                Some("medium") => fields.medium = map.next_value_seed(Medium)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        self.0.encodings.maps += 1;
        fields.into_batch(self.0)
    }
}

/// A map key: a short string, or `None` for a key that is not one (passed over).
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<String>, E> {
        // Every field name read is short; a long key is nobody's field.
        Ok((v.len() <= 64).then(|| v.to_owned()))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Option<String>, E> {
        Ok(std::str::from_utf8(v)
            .ok()
            .filter(|s| s.len() <= 64)
            .map(str::to_owned))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<String>, E> {
        Ok(None)
    }
}

/// An event's tag: the class name.
struct TagSeed;

impl<'de> DeserializeSeed<'de> for TagSeed {
    type Value = Tag;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Tag, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TagSeed {
    type Value = Tag;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an event's type tag")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Tag, E> {
        Ok(match v {
            "BlockStored" => Tag::Stored,
            "BlockRemoved" => Tag::Removed,
            "AllBlocksCleared" => Tag::Cleared,
            _ => Tag::Other,
        })
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Tag, E> {
        self.visit_str(std::str::from_utf8(v).unwrap_or(""))
    }
    // msgspec may tag by an integer (`tag=1`); no engine does, but it is still an event.
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Tag, E> {
        Ok(Tag::Other)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Tag, E> {
        Ok(Tag::Other)
    }
}

/// A list's length, its elements passed over; nil is an empty list.
struct Count;

impl<'de> DeserializeSeed<'de> for Count {
    type Value = u64;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Count {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<u64, A::Error> {
        let mut n = 0;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            n += 1;
        }
        Ok(n)
    }
    fn visit_unit<E: de::Error>(self) -> Result<u64, E> {
        Ok(0)
    }
    fn visit_none<E: de::Error>(self) -> Result<u64, E> {
        Ok(0)
    }
}

/// A list of block hashes, counted by kind; nil is an empty list.
struct Hashes;

impl<'de> DeserializeSeed<'de> for Hashes {
    type Value = HashKinds;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<HashKinds, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Hashes {
    type Value = HashKinds;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of block hashes")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<HashKinds, A::Error> {
        let mut kinds = HashKinds::default();
        while let Some(kind) = seq.next_element_seed(HashKind)? {
            match kind {
                Kind::Int => kinds.ints += 1,
                Kind::Bytes => kinds.bytes += 1,
                Kind::Other => kinds.other += 1,
            }
        }
        Ok(kinds)
    }
    fn visit_unit<E: de::Error>(self) -> Result<HashKinds, E> {
        Ok(HashKinds::default())
    }
    fn visit_none<E: de::Error>(self) -> Result<HashKinds, E> {
        Ok(HashKinds::default())
    }
}

enum Kind {
    Int,
    Bytes,
    Other,
}

/// One block hash: what kind of value it is, the value passed over.
struct HashKind;

impl<'de> DeserializeSeed<'de> for HashKind {
    type Value = Kind;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Kind, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for HashKind {
    type Value = Kind;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a block hash")
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Kind, E> {
        Ok(Kind::Int)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Kind, E> {
        Ok(Kind::Int)
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Kind, E> {
        Ok(Kind::Bytes)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Kind, E> {
        Ok(Kind::Other)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Kind, E> {
        Ok(Kind::Other)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Kind, E> {
        Ok(Kind::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Kind, E> {
        Ok(Kind::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Kind, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Kind::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Kind, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Kind::Other)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Kind, D::Error> {
        <IgnoredAny as de::Deserialize>::deserialize(d)?;
        Ok(Kind::Other)
    }
}

/// A storage medium: a short string or nil.
struct Medium;

impl<'de> DeserializeSeed<'de> for Medium {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Medium {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a storage medium or nil")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<String>, E> {
        Ok(Some(v.chars().take(MAX_MEDIUM_CHARS).collect()))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Option<String>, E> {
        self.visit_str(&String::from_utf8_lossy(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_none<E: de::Error>(self) -> Result<Option<String>, E> {
        Ok(None)
    }
}
