//! The KV event stream's bytes, as each engine encodes them: one MessagePack
//! `EventBatch` per message (`[ts, events, dp_rank]`), its events in the engine's own
//! form, and the ZeroMQ frames around it (the reader is `inferlint_engines::kv_frames`).
//!
//! - vLLM 0.32 (`vllm/distributed/kv_events.py`, msgspec): each event a map with a `type`
//!   tag and its fields by name, in the order of the real capture
//!   (`fixtures/real/vllm-0.32-cpu/kv-events/frames.hex`): `BlockStored` with
//!   `block_hashes`, `parent_block_hash`, `token_ids`, `block_size`, `lora_id`, `medium`,
//!   `lora_name`, `extra_keys`, `group_idx`, `kv_cache_spec_kind`; `BlockRemoved` with
//!   `block_hashes`, `medium`, `group_idx`; `AllBlocksCleared` with its tag alone. Hashes
//!   are integers (`VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES`, on by default), the batch ends
//!   with its data-parallel rank, 0.
//! - SGLang: each event an array with the tag first and the fields in order
//!   (`["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id,
//!   medium]`, `["BlockRemoved", block_hashes, medium]`, `["AllBlocksCleared"]`), the
//!   batch `[ts, events]` (no rank: msgspec leaves out a field at its default).
//!
//! Integers take the fewest bytes, as msgspec writes them.

use crate::kvblocks::KvEvent;

/// How an engine encodes its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// vLLM 0.32: maps with a `type` tag.
    VllmMaps,
    /// SGLang: arrays with the tag first.
    SglangArrays,
}

/// The medium every simulated block is in.
const MEDIUM: &str = "GPU";

/// One batch's payload.
pub fn batch(ts: f64, events: &[KvEvent], encoding: Encoding) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + 16 * events.len());
    let fields = match encoding {
        Encoding::VllmMaps => 3,
        Encoding::SglangArrays => 2,
    };
    array(&mut out, fields);
    // Writing into a Vec cannot fail.
    let _ = rmp::encode::write_f64(&mut out, ts);
    array(&mut out, events.len());
    for event in events {
        match encoding {
            Encoding::VllmMaps => vllm_event(&mut out, event),
            Encoding::SglangArrays => sglang_event(&mut out, event),
        }
    }
    if encoding == Encoding::VllmMaps {
        uint(&mut out, 0);
    }
    out
}

/// A published message: `[topic, seq, payload]`, the topic empty (both engines' default).
pub fn published(seq: u64, payload: Vec<u8>) -> Vec<Vec<u8>> {
    vec![Vec::new(), seq.to_be_bytes().to_vec(), payload]
}

/// A replayed message after the DEALER's identity: vLLM's `["", topic, seq, payload]`,
/// SGLang's `["", seq, payload]`.
pub fn replayed(seq: u64, payload: Vec<u8>, encoding: Encoding) -> Vec<Vec<u8>> {
    match encoding {
        Encoding::VllmMaps => vec![Vec::new(), Vec::new(), seq.to_be_bytes().to_vec(), payload],
        Encoding::SglangArrays => vec![Vec::new(), seq.to_be_bytes().to_vec(), payload],
    }
}

/// The replay's end marker: sequence number -1 and an empty payload.
pub fn end_of_replay(encoding: Encoding) -> Vec<Vec<u8>> {
    replayed(u64::MAX, Vec::new(), encoding)
}

fn array(out: &mut Vec<u8>, len: usize) {
    let _ = rmp::encode::write_array_len(out, u32::try_from(len).unwrap_or(u32::MAX));
}

fn map(out: &mut Vec<u8>, len: u32) {
    let _ = rmp::encode::write_map_len(out, len);
}

fn string(out: &mut Vec<u8>, s: &str) {
    let _ = rmp::encode::write_str(out, s);
}

fn uint(out: &mut Vec<u8>, v: u64) {
    let _ = rmp::encode::write_uint(out, v);
}

fn nil(out: &mut Vec<u8>) {
    let _ = rmp::encode::write_nil(out);
}

fn uints(out: &mut Vec<u8>, values: impl ExactSizeIterator<Item = u64>) {
    array(out, values.len());
    for v in values {
        uint(out, v);
    }
}

fn optional(out: &mut Vec<u8>, v: Option<u64>) {
    match v {
        Some(v) => uint(out, v),
        None => nil(out),
    }
}

fn vllm_event(out: &mut Vec<u8>, event: &KvEvent) {
    match event {
        KvEvent::BlockStored {
            block_hashes,
            parent_block_hash,
            token_ids,
            block_size,
            group_idx,
        } => {
            map(out, 11);
            string(out, "type");
            string(out, "BlockStored");
            string(out, "block_hashes");
            uints(out, block_hashes.iter().copied());
            string(out, "parent_block_hash");
            optional(out, *parent_block_hash);
            string(out, "token_ids");
            uints(out, token_ids.iter().map(|&t| u64::from(t)));
            string(out, "block_size");
            uint(out, *block_size);
            string(out, "lora_id");
            nil(out);
            string(out, "medium");
            string(out, MEDIUM);
            string(out, "lora_name");
            nil(out);
            string(out, "extra_keys");
            array(out, block_hashes.len());
            for _ in block_hashes {
                nil(out);
            }
            string(out, "group_idx");
            uint(out, u64::from(*group_idx));
            string(out, "kv_cache_spec_kind");
            string(out, "full_attention");
        }
        KvEvent::BlockRemoved {
            block_hashes,
            group_idx,
        } => {
            map(out, 4);
            string(out, "type");
            string(out, "BlockRemoved");
            string(out, "block_hashes");
            uints(out, block_hashes.iter().copied());
            string(out, "medium");
            string(out, MEDIUM);
            string(out, "group_idx");
            uint(out, u64::from(*group_idx));
        }
        KvEvent::AllBlocksCleared => {
            map(out, 1);
            string(out, "type");
            string(out, "AllBlocksCleared");
        }
    }
}

fn sglang_event(out: &mut Vec<u8>, event: &KvEvent) {
    match event {
        KvEvent::BlockStored {
            block_hashes,
            parent_block_hash,
            token_ids,
            block_size,
            ..
        } => {
            array(out, 7);
            string(out, "BlockStored");
            uints(out, block_hashes.iter().copied());
            optional(out, *parent_block_hash);
            uints(out, token_ids.iter().map(|&t| u64::from(t)));
            uint(out, *block_size);
            nil(out);
            string(out, MEDIUM);
        }
        KvEvent::BlockRemoved { block_hashes, .. } => {
            array(out, 3);
            string(out, "BlockRemoved");
            uints(out, block_hashes.iter().copied());
            string(out, MEDIUM);
        }
        KvEvent::AllBlocksCleared => {
            array(out, 1);
            string(out, "AllBlocksCleared");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferlint_engines::kv_frames::{decode_batch, published_frame, replayed_frame, Replayed};

    fn events() -> Vec<KvEvent> {
        vec![
            KvEvent::AllBlocksCleared,
            KvEvent::BlockStored {
                block_hashes: vec![u64::MAX - 3, 7],
                parent_block_hash: Some(1 << 40),
                token_ids: (0..32).collect(),
                block_size: 16,
                group_idx: 0,
            },
            KvEvent::BlockRemoved {
                block_hashes: vec![12],
                group_idx: 0,
            },
        ]
    }

    /// The engines' reader reads both encodings to the same counts.
    #[test]
    fn the_reader_reads_both_encodings() {
        for encoding in [Encoding::VllmMaps, Encoding::SglangArrays] {
            let payload = batch(1_796_398_872.25, &events(), encoding);
            let b = decode_batch(&payload).expect("a batch");
            assert_eq!(b.ts, 1_796_398_872.25);
            assert_eq!(
                (
                    b.events,
                    b.stored_blocks,
                    b.stored_tokens,
                    b.removed_blocks,
                    b.cleared
                ),
                (3, 2, 32, 1, 1)
            );
            assert_eq!(b.medium().as_deref(), Some("GPU"));
            assert_eq!(b.hashes.ints, 3);
            match encoding {
                Encoding::VllmMaps => {
                    assert_eq!(b.encodings.maps, 3);
                    assert_eq!(b.dp_rank, Some(0));
                }
                Encoding::SglangArrays => {
                    assert_eq!(b.encodings.arrays, 3);
                    assert_eq!(b.dp_rank, None);
                }
            }
            let frames = published(5, payload.clone());
            let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
            assert_eq!(published_frame(&refs), Ok((5, payload.as_slice())));
            let frames = replayed(6, payload.clone(), encoding);
            let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
            assert_eq!(
                replayed_frame(&refs),
                Ok(Replayed::Batch {
                    seq: 6,
                    payload: payload.as_slice()
                })
            );
            let end = end_of_replay(encoding);
            let refs: Vec<&[u8]> = end.iter().map(Vec::as_slice).collect();
            assert_eq!(replayed_frame(&refs), Ok(Replayed::End));
        }
    }
}
