//! TensorRT-LLM's KV-cache events as `/kv_cache_events` answers them, read into the
//! summaries the KV event file keeps ([`KvBatch`]), one per run of consecutive event
//! ids of one rank.
//!
//! `OpenAIServer.get_kv_cache_events` (`tensorrt_llm/serve/openai_server.py`) answers a
//! JSON list of every event the executor held, which it then forgets, each as
//! `KVCacheEventSerializer.to_json_str` writes it (`tensorrt_llm/_utils.py`):
//!
//! ```json
//! {"event_id": 7, "window_size": 4096, "attention_dp_rank": 0,
//!  "data": {"type": "stored", "parent_hash": 12, "blocks": [
//!     {"type": "stored_block", "block_hash": 13, "cache_level": 0, "priority": 35,
//!      "tokens": [{"type": "unique_token", "token_id": 9, "token_extra_id": 0}]}]}}
//! ```
//!
//! with `data` one of `created` (`num_blocks_per_cache_level`), `stored` (`parent_hash`,
//! `blocks`), `removed` (`block_hashes`) and `updated` (`block_hash`, `cache_level`,
//! `priority`, each `{"type": "event_diff", "new_value", "old_value"}`);
//! `attention_dp_rank` is there only under attention data parallelism. The ids come from
//! `KVCacheEventManager` (`cpp/tensorrt_llm/batch_manager/kvCacheEventManager.cpp`):
//! `mEventId++` for each event from 0 as the manager starts (removals of one step are
//! merged into one event), each rank its own counter; the manager keeps at most
//! `event_buffer_max_size` of them and drops its oldest past that. A block's
//! `cache_level` is 0 for the primary pool (GPU memory) and 1 for the secondary (host
//! memory), `kPrimaryLevel` and `kSecondaryLevel` in
//! `cpp/include/tensorrt_llm/batch_manager/kvCacheManager.h`.
//!
//! Token lists and hashes are counted, never held. An answer that is not a JSON list is
//! an error; an event without its id or of no known shape is counted, never a panic.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;

use crate::kv_frames::KvBatch;

/// The medium of cache level 0 (the primary pool, in GPU memory).
const PRIMARY: &str = "GPU";
/// The medium of cache level 1 (the secondary pool, in host memory).
const SECONDARY: &str = "CPU";

/// A run of events of one rank whose ids follow each other, summarised.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRun {
    /// The first event id.
    pub first_id: u64,
    /// The last event id.
    pub last_id: u64,
    /// The events, summarised; `ts` is left for the caller (the events carry no time).
    pub batch: KvBatch,
}

/// One answer of the endpoint, read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DrainedEvents {
    /// The runs of consecutive ids, in the order the answer gave them (per rank).
    pub runs: Vec<EventRun>,
    /// Events that could not be read (no id, no known shape).
    pub unreadable: u64,
    /// Why the first of them could not be.
    pub first_problem: Option<String>,
}

impl DrainedEvents {
    /// Events read.
    pub fn events(&self) -> u64 {
        self.runs.iter().map(|r| r.batch.events).sum()
    }
}

/// A list whose elements are counted and passed over.
#[derive(Debug, Default, Clone, Copy)]
struct Count(u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Count, D::Error> {
        struct Counting;
        impl<'de> Visitor<'de> for Counting {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Count, E> {
                Ok(Count(0))
            }
        }
        d.deserialize_any(Counting)
    }
}

#[derive(Deserialize)]
struct StoredBlock {
    #[serde(default)]
    tokens: Count,
    #[serde(default)]
    cache_level: Option<i64>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Data {
    Created {},
    Stored {
        #[serde(default)]
        blocks: Vec<StoredBlock>,
    },
    Removed {
        #[serde(default)]
        block_hashes: Count,
    },
    Updated {},
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct Event {
    event_id: Option<u64>,
    data: Option<Data>,
    #[serde(default)]
    attention_dp_rank: Option<i64>,
}

/// Reads one answer of `/kv_cache_events`. Events are grouped into runs of
/// consecutive ids per rank, in the order given; an id that does not follow its rank's
/// last one starts a new run (the caller finds the holes between runs).
pub fn read_drained_events(body: &[u8]) -> Result<DrainedEvents, String> {
    let items: Vec<serde_json::Value> = match serde_json::from_slice(body) {
        Ok(serde_json::Value::Array(items)) => items,
        Ok(other) => {
            return Err(format!(
                "the answer is {}, not a list of events",
                kind_of(&other)
            ))
        }
        Err(e) => return Err(format!("the answer is not JSON: {e}")),
    };
    let mut read = DrainedEvents::default();
    for (i, item) in items.into_iter().enumerate() {
        let problem = |why: String| format!("event {} of the answer: {why}", i + 1);
        let event: Event = match serde_json::from_value(item) {
            Ok(e) => e,
            Err(e) => {
                read.unreadable += 1;
                read.first_problem
                    .get_or_insert_with(|| problem(e.to_string()));
                continue;
            }
        };
        let (Some(id), Some(data)) = (event.event_id, event.data) else {
            read.unreadable += 1;
            read.first_problem
                .get_or_insert_with(|| problem("no event_id or no data".into()));
            continue;
        };
        let rank = event.attention_dp_rank;
        let open = read
            .runs
            .iter()
            .rposition(|r| r.batch.dp_rank == rank)
            .filter(|&at| read.runs[at].last_id.checked_add(1) == Some(id));
        let at = match open {
            Some(at) => at,
            None => {
                read.runs.push(EventRun {
                    first_id: id,
                    last_id: id,
                    batch: KvBatch {
                        dp_rank: rank,
                        ..KvBatch::default()
                    },
                });
                read.runs.len() - 1
            }
        };
        let run = &mut read.runs[at];
        run.last_id = id;
        let batch = &mut run.batch;
        batch.events += 1;
        match data {
            Data::Stored { blocks } => {
                for block in blocks {
                    batch.stored_blocks += 1;
                    batch.stored_tokens += block.tokens.0;
                    add_medium(batch, block.cache_level);
                }
            }
            Data::Removed { block_hashes } => batch.removed_blocks += block_hashes.0,
            // The cache made (its blocks per level) and a block's priority or level
            // changed: neither stores nor removes one.
            Data::Created {} | Data::Updated {} | Data::Other => batch.other_events += 1,
        }
    }
    Ok(read)
}

fn add_medium(batch: &mut KvBatch, level: Option<i64>) {
    let medium = match level {
        Some(0) => PRIMARY.to_owned(),
        Some(1) => SECONDARY.to_owned(),
        Some(n) => format!("level {n}"),
        None => return,
    };
    if !batch.media.contains(&medium) && batch.media.len() < 4 {
        batch.media.push(medium);
    }
}

fn kind_of(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events in the shapes `KVCacheEventSerializer` writes: the cache created (id 0), a
    /// stored event of two blocks of 32 tokens each in the primary pool (id 1), a removal
    /// of three blocks (id 2). One run from 0 to 2: 2 stored, 64 tokens, 3 removed, the
    /// creation passed over as another kind.
    #[test]
    fn the_serializers_shapes_are_summarised() {
        let tokens: Vec<_> = (0..32)
            .map(
                |t| serde_json::json!({"type": "unique_token", "token_id": t, "token_extra_id": 0}),
            )
            .collect();
        let block = |hash: u64| {
            serde_json::json!({"type": "stored_block", "block_hash": hash, "tokens": tokens,
                "cache_level": 0, "priority": 35})
        };
        let body = serde_json::json!([
            {"event_id": 0, "data": {"type": "created", "num_blocks_per_cache_level": [1180, 0]}, "window_size": 40960},
            {"event_id": 1, "data": {"type": "stored", "parent_hash": null, "blocks": [block(11), block(12)]}, "window_size": 40960},
            {"event_id": 2, "data": {"type": "removed", "block_hashes": [11, 12, 13]}, "window_size": 40960},
        ]);
        let read = read_drained_events(body.to_string().as_bytes()).unwrap();
        assert_eq!(read.runs.len(), 1);
        let run = &read.runs[0];
        assert_eq!((run.first_id, run.last_id), (0, 2));
        assert_eq!(run.batch.events, 3);
        assert_eq!(run.batch.stored_blocks, 2);
        assert_eq!(run.batch.stored_tokens, 64);
        assert_eq!(run.batch.removed_blocks, 3);
        assert_eq!(run.batch.other_events, 1);
        assert_eq!(run.batch.media, ["GPU"]);
    }

    /// Ids 4 and 5, then 9: two runs (6 to 8 never came); a rank's own counter makes its
    /// own runs.
    #[test]
    fn a_jump_in_the_ids_starts_another_run() {
        let removed = |id: u64, rank: Option<i64>| {
            let mut e = serde_json::json!({"event_id": id, "data": {"type": "removed", "block_hashes": [1]}, "window_size": 64});
            if let Some(r) = rank {
                e["attention_dp_rank"] = r.into();
            }
            e
        };
        let body = serde_json::json!([removed(4, None), removed(5, None), removed(9, None)]);
        let read = read_drained_events(body.to_string().as_bytes()).unwrap();
        let ids: Vec<_> = read.runs.iter().map(|r| (r.first_id, r.last_id)).collect();
        assert_eq!(ids, [(4, 5), (9, 9)]);
        let body = serde_json::json!([
            removed(0, Some(0)),
            removed(0, Some(1)),
            removed(1, Some(0))
        ]);
        let read = read_drained_events(body.to_string().as_bytes()).unwrap();
        let ids: Vec<_> = read
            .runs
            .iter()
            .map(|r| (r.batch.dp_rank, r.first_id, r.last_id))
            .collect();
        assert_eq!(ids, [(Some(0), 0, 1), (Some(1), 0, 0)]);
    }

    /// Not a list, not JSON: an error naming it; an event without its id is counted.
    #[test]
    fn what_cannot_be_read_is_said() {
        assert!(read_drained_events(b"{\"error\": 1}")
            .unwrap_err()
            .contains("an object"));
        assert!(read_drained_events(b"[{\"event_id\": 1,")
            .unwrap_err()
            .contains("not JSON"));
        let read = read_drained_events(br#"[{"data": {"type": "removed"}}, 7]"#).unwrap();
        assert_eq!(read.unreadable, 2);
        assert!(read.runs.is_empty());
    }
}
