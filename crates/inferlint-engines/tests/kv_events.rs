//! The KV-cache event stream: batches decoded from their MessagePack bytes in both of the
//! engines' encodings (written here byte by byte from the format), the frames around
//! them, and the file a subscriber writes, read back with its holes.

// The helpers below unwrap as the tests do: a failure is the test failing.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::Path;

use inferlint_core::model::traces::ClockAnchor;
use inferlint_engines::files::{
    kv_bad_frame_json, kv_batch_json, kv_end_json, kv_gap_json, kv_header_json, kv_restart_json,
    kv_subscribed_json, read_kv_events, read_kv_events_from, KvHeader, KvTotals, UNRECORDED_HOLE,
};
use inferlint_engines::kv_frames::{
    decode_batch, published_frame, replayed_frame, KvBatch, Replayed, END_OF_REPLAY,
};

/// A MessagePack value, written as msgspec writes it.
#[derive(Clone)]
pub enum M {
    Nil,
    U(u64),
    I(i64),
    F(f64),
    S(&'static str),
    B(Vec<u8>),
    A(Vec<M>),
    Map(Vec<(&'static str, M)>),
}

impl M {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut Vec<u8>) {
        use rmp::encode::*;
        match self {
            M::Nil => write_nil(out).unwrap(),
            M::U(v) => {
                write_uint(out, *v).unwrap();
            }
            M::I(v) => {
                write_sint(out, *v).unwrap();
            }
            M::F(v) => write_f64(out, *v).unwrap(),
            M::S(s) => write_str(out, s).unwrap(),
            M::B(b) => write_bin(out, b).unwrap(),
            M::A(items) => {
                write_array_len(out, items.len() as u32).unwrap();
                for item in items {
                    item.write(out);
                }
            }
            M::Map(entries) => {
                write_map_len(out, entries.len() as u32).unwrap();
                for (k, v) in entries {
                    write_str(out, k).unwrap();
                    v.write(out);
                }
            }
        }
    }
}

fn tokens(n: u64) -> M {
    M::A((0..n).map(|t| M::U(1000 + t)).collect())
}

fn int_hashes(n: usize) -> M {
    // msgspec writes Python ints as the smallest MessagePack int: big ones as uint64,
    // negative ones (SGLang's Python hash()) as int64.
    M::A(
        (0..n)
            .map(|i| {
                if i % 2 == 0 {
                    M::U(0xF000_0000_0000_0000 + i as u64)
                } else {
                    M::I(-(i as i64) - 7)
                }
            })
            .collect(),
    )
}

fn bytes_hashes(n: usize) -> M {
    M::A((0..n).map(|i| M::B(vec![i as u8; 32])).collect())
}

/// vLLM 0.32's BlockStored: a map, `type` first, defaults (extra_keys, group_idx, ...)
/// left out, the fields without defaults present even when nil.
fn stored_map(hashes: M, block_size: u64, n_tokens: u64) -> M {
    M::Map(vec![
        ("type", M::S("BlockStored")),
        ("block_hashes", hashes),
        ("parent_block_hash", M::Nil),
        ("token_ids", tokens(n_tokens)),
        ("block_size", M::U(block_size)),
        ("lora_id", M::Nil),
        ("medium", M::S("GPU")),
        ("lora_name", M::Nil),
        ("group_idx", M::U(0)),
    ])
}

#[test]
fn vllm_032_map_encoding_is_summarised() {
    // Two blocks of 16 stored (32 token ids), one removed, the cache cleared once.
    let payload = M::A(vec![
        M::F(1_764_860_000.25),
        M::A(vec![
            stored_map(int_hashes(2), 16, 32),
            M::Map(vec![
                ("type", M::S("BlockRemoved")),
                ("block_hashes", int_hashes(1)),
                ("medium", M::S("GPU")),
            ]),
            M::Map(vec![("type", M::S("AllBlocksCleared"))]),
        ]),
        M::U(0),
    ])
    .encode();
    let batch = decode_batch(&payload).unwrap();
    assert_eq!(batch.ts, 1_764_860_000.25);
    assert_eq!(batch.dp_rank, Some(0));
    assert_eq!(batch.events, 3);
    assert_eq!(batch.stored_blocks, 2);
    assert_eq!(batch.stored_tokens, 32);
    assert_eq!(batch.removed_blocks, 1);
    assert_eq!(batch.cleared, 1);
    assert_eq!(batch.medium().as_deref(), Some("GPU"));
    assert_eq!(batch.encodings.maps, 3);
    assert_eq!(batch.encodings.arrays, 0);
    // The three hashes: ints, the unsigned and the negative alike.
    assert_eq!(batch.hashes.ints, 3);
}

#[test]
fn a_map_may_name_its_type_last() {
    // msgspec writes the tag first, but a map is a map: the fields before the tag are
    // kept until it is read.
    let payload = M::A(vec![
        M::F(5.0),
        M::A(vec![M::Map(vec![
            ("block_hashes", int_hashes(3)),
            ("token_ids", tokens(48)),
            ("type", M::S("BlockStored")),
        ])]),
    ])
    .encode();
    let batch = decode_batch(&payload).unwrap();
    assert_eq!((batch.stored_blocks, batch.stored_tokens), (3, 48));
    assert_eq!(batch.medium(), None);
}

#[test]
fn the_array_encoding_of_older_vllm_is_read_by_position() {
    // vLLM 0.9's array_like events: [tag, block_hashes, parent_block_hash, token_ids,
    // block_size, lora_id, medium]; BlockRemoved [tag, block_hashes, medium].
    let payload = M::A(vec![
        M::F(100.5),
        M::A(vec![
            M::A(vec![
                M::S("BlockStored"),
                int_hashes(4),
                M::U(77),
                tokens(64),
                M::U(16),
                M::Nil,
                M::S("GPU"),
            ]),
            M::A(vec![M::S("BlockRemoved"), int_hashes(2), M::S("CPU")]),
            M::A(vec![M::S("AllBlocksCleared")]),
        ]),
        M::U(1),
    ])
    .encode();
    let batch = decode_batch(&payload).unwrap();
    assert_eq!(batch.dp_rank, Some(1));
    assert_eq!((batch.stored_blocks, batch.stored_tokens), (4, 64));
    assert_eq!(batch.removed_blocks, 2);
    assert_eq!(batch.cleared, 1);
    assert_eq!(batch.encodings.arrays, 3);
    // Two media named, in the order met.
    assert_eq!(batch.medium().as_deref(), Some("GPU+CPU"));
}

#[test]
fn sglang_batches_without_the_trailing_fields_are_whole() {
    // SGLang's classes: BlockStored [tag, block_hashes, parent_block_hash, token_ids,
    // block_size, lora_id] (no medium), BlockRemoved [tag, block_hashes]; its
    // EventBatch [ts, events] with attn_dp_rank omitted when it is the default.
    let payload = M::A(vec![
        M::F(200.0),
        M::A(vec![
            M::A(vec![
                M::S("BlockStored"),
                int_hashes(1),
                M::Nil,
                tokens(1),
                M::U(1),
                M::Nil,
            ]),
            M::A(vec![M::S("BlockRemoved"), int_hashes(5)]),
        ]),
    ])
    .encode();
    let batch = decode_batch(&payload).unwrap();
    assert_eq!(batch.dp_rank, None);
    assert_eq!((batch.stored_blocks, batch.stored_tokens), (1, 1));
    assert_eq!(batch.removed_blocks, 5);
    assert_eq!(batch.medium(), None);
    // A BlockStored cut after its hashes (every later field at its default) still
    // counts its blocks.
    let short = M::A(vec![
        M::F(1.0),
        M::A(vec![M::A(vec![M::S("BlockStored"), int_hashes(2)])]),
    ])
    .encode();
    let batch = decode_batch(&short).unwrap();
    assert_eq!((batch.stored_blocks, batch.stored_tokens), (2, 0));
}

#[test]
fn block_hashes_as_bytes_count_as_blocks() {
    // VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0: each hash the 32 bytes of its digest.
    let payload = M::A(vec![
        M::F(3.0),
        M::A(vec![stored_map(bytes_hashes(3), 16, 48)]),
        M::U(0),
    ])
    .encode();
    let batch = decode_batch(&payload).unwrap();
    assert_eq!(batch.stored_blocks, 3);
    assert_eq!((batch.hashes.bytes, batch.hashes.ints), (3, 0));
}

#[test]
fn an_event_of_an_unknown_type_is_counted_not_summed() {
    let payload = M::A(vec![
        M::F(3.0),
        M::A(vec![
            M::Map(vec![
                ("type", M::S("BlockUpdated")),
                ("block_hashes", int_hashes(9)),
            ]),
            M::A(vec![M::S("SomethingNew"), M::U(1)]),
            stored_map(int_hashes(1), 16, 16),
        ]),
    ])
    .encode();
    let batch = decode_batch(&payload).unwrap();
    assert_eq!(batch.events, 3);
    assert_eq!(batch.other_events, 2);
    assert_eq!(batch.stored_blocks, 1);
    assert_eq!(batch.removed_blocks, 0);
}

#[test]
fn what_is_not_a_batch_is_an_error_never_a_panic() {
    let valid = M::A(vec![
        M::F(1.0),
        M::A(vec![stored_map(int_hashes(1), 16, 16)]),
    ])
    .encode();
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("a string", M::S("hello").encode()),
        ("an empty array", M::A(vec![]).encode()),
        ("no events", M::A(vec![M::F(1.0)]).encode()),
        ("events not a list", M::A(vec![M::F(1.0), M::U(3)]).encode()),
        ("ts a string", M::A(vec![M::S("x"), M::A(vec![])]).encode()),
        (
            "ts not finite",
            M::A(vec![M::F(f64::NAN), M::A(vec![])]).encode(),
        ),
        (
            "an event without its tag",
            M::A(vec![
                M::F(1.0),
                M::A(vec![M::Map(vec![("block_hashes", int_hashes(1))])]),
            ])
            .encode(),
        ),
        ("cut short", valid[..valid.len() - 3].to_vec()),
        ("bytes after it", [valid.clone(), vec![0xc0]].concat()),
        // An array that claims four billion elements and holds none.
        (
            "a lying length",
            vec![
                0x92, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0xdd, 0xff, 0xff, 0xff, 0xff,
            ],
        ),
        // A bin that claims 4 GiB.
        (
            "a lying bin",
            vec![0x92, 0x01, 0x91, 0xc6, 0xff, 0xff, 0xff, 0xff],
        ),
    ];
    // Deep nesting, past the decoder's depth limit.
    cases.push(("nested 100,000 deep", vec![0x91; 100_000]));
    for (what, bytes) in cases {
        let result = decode_batch(&bytes);
        assert!(result.is_err(), "{what}: read as {result:?}");
        let why = result.unwrap_err();
        assert!(!why.is_empty() && !why.contains('\n'), "{what}: {why:?}");
    }
    assert!(decode_batch(&valid).is_ok());
}

#[test]
fn frames_as_published_and_as_replayed() {
    let payload = M::A(vec![M::F(1.0), M::A(vec![])]).encode();
    let seq = 41u64.to_be_bytes();
    // PUB: [topic, seq, payload].
    assert_eq!(
        published_frame(&[b"", &seq, &payload]).unwrap(),
        (41, payload.as_slice())
    );
    assert!(published_frame(&[&seq, &payload]).is_err());
    assert!(published_frame(&[b"", &seq[..7], &payload]).is_err());
    // vLLM's replay: ["", topic, seq, payload], end ["", "", -1, ""].
    let end = (-1i64).to_be_bytes();
    assert_eq!(END_OF_REPLAY.to_be_bytes(), end);
    assert_eq!(
        replayed_frame(&[b"", b"kv", &seq, &payload]).unwrap(),
        Replayed::Batch {
            seq: 41,
            payload: &payload
        }
    );
    assert_eq!(
        replayed_frame(&[b"", b"", &end, b""]).unwrap(),
        Replayed::End
    );
    // SGLang's replay leaves the topic out: ["", seq, payload], end ["", -1, ""].
    assert_eq!(
        replayed_frame(&[b"", &seq, &payload]).unwrap(),
        Replayed::Batch {
            seq: 41,
            payload: &payload
        }
    );
    assert_eq!(replayed_frame(&[b"", &end, b""]).unwrap(), Replayed::End);
    // Without the delimiter, or too few frames: errors.
    assert!(replayed_frame(&[b"x", &seq, &payload]).is_err());
    assert!(replayed_frame(&[b""]).is_err());
    assert!(replayed_frame(&[]).is_err());
}

const ANCHOR: ClockAnchor = ClockAnchor {
    t_wall: 1_000.0,
    t_mono_ns: 5_000_000_000,
};

fn batch(ts: f64, stored: u64, removed: u64, cleared: u64) -> KvBatch {
    KvBatch {
        ts,
        dp_rank: Some(0),
        events: stored.min(1) + removed.min(1) + cleared,
        stored_blocks: stored,
        stored_tokens: stored * 16,
        removed_blocks: removed,
        cleared,
        media: vec!["GPU".into()],
        ..KvBatch::default()
    }
}

fn header() -> String {
    kv_header_json(&KvHeader {
        endpoint: "tcp://127.0.0.1:5557".into(),
        replay_endpoint: Some("tcp://127.0.0.1:5558".into()),
        backfill_from: None,
        anchor: ANCHOR,
        drained: false,
        numbered_by: inferlint_core::model::traces::KvNumbering::Batch,
    })
}

fn at(t: f64) -> ClockAnchor {
    ClockAnchor {
        t_wall: t,
        t_mono_ns: (t * 1e9) as i64,
    }
}

fn write(dir: &Path, name: &str, lines: &[String]) -> std::path::PathBuf {
    let path = dir.join(name);
    let mut f = std::fs::File::create(&path).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    path
}

#[test]
fn a_whole_file_reads_into_seconds_holes_and_totals() {
    let dir = tempfile::tempdir().unwrap();
    // Batches 0..=2 in second 1000, 3 and the gap record for 4..=5 in 1001, 6 (replayed
    // 7 came through replay before 8) in 1002.
    let lines = vec![
        header(),
        kv_subscribed_json("tcp://127.0.0.1:5557", false, at(1000.1)),
        kv_batch_json(0, &batch(1000.2, 2, 0, 0), at(1000.2), false),
        kv_batch_json(1, &batch(1000.5, 1, 1, 0), at(1000.5), false),
        kv_batch_json(2, &batch(1000.9, 0, 3, 0), at(1000.9), false),
        kv_batch_json(3, &batch(1001.0, 4, 0, 0), at(1001.0), false),
        kv_gap_json(
            4,
            5,
            "the replay endpoint did not answer within 2 s",
            at(1001.5),
        ),
        kv_batch_json(6, &batch(1002.1, 1, 0, 0), at(1002.1), false),
        kv_batch_json(7, &batch(1002.2, 0, 0, 1), at(1002.6), true),
        kv_batch_json(8, &batch(1002.7, 1, 0, 0), at(1002.7), false),
        kv_end_json(&KvTotals::default(), at(1003.0)),
    ];
    let path = write(dir.path(), "kv.jsonl", &lines);
    let kv = read_kv_events(&path).unwrap();
    assert_eq!(kv.endpoint.as_deref(), Some("tcp://127.0.0.1:5557"));
    assert_eq!(kv.anchor, Some(ANCHOR));
    assert_eq!(kv.subscribed, Some(at(1000.1)));
    assert_eq!(kv.end, Some(at(1003.0)));
    // 0 to 3 and 6 to 8: seven batches, 4 and 5 never received.
    assert_eq!(kv.batches, 7);
    assert_eq!(kv.replayed, 1);
    assert_eq!(kv.seq_range, Some((0, 8)));
    assert_eq!(kv.skipped, 0);
    assert_eq!(kv.media, vec!["GPU".to_owned()]);
    let seconds: Vec<(i64, u64, u64, u64, u64)> = kv
        .seconds
        .iter()
        .map(|s| {
            (
                s.second,
                s.stored_blocks,
                s.removed_blocks,
                s.cleared,
                s.batches,
            )
        })
        .collect();
    assert_eq!(
        seconds,
        vec![(1000, 3, 4, 0, 3), (1001, 4, 0, 0, 1), (1002, 2, 0, 1, 3)]
    );
    assert_eq!(kv.stored_blocks(), 9);
    assert_eq!(kv.stored_tokens(), 9 * 16);
    assert_eq!(kv.removed_blocks(), 4);
    // Only the stated hole: 4 and 5.
    assert_eq!(kv.gaps.len(), 1);
    assert_eq!((kv.gaps[0].from_seq, kv.gaps[0].to_seq), (4, 5));
    assert_eq!(
        kv.gaps[0].reason,
        "the replay endpoint did not answer within 2 s"
    );
    assert_eq!(kv.missed_batches(), 2);
}

#[test]
fn a_hole_without_a_gap_record_is_found_and_named() {
    // A file edited (lines 3 to 5 deleted) or spliced: the reader states the hole.
    let dir = tempfile::tempdir().unwrap();
    let lines = vec![
        header(),
        kv_batch_json(10, &batch(1.0, 1, 0, 0), at(1.0), false),
        kv_batch_json(11, &batch(1.1, 1, 0, 0), at(1.1), false),
        kv_batch_json(15, &batch(2.0, 1, 0, 0), at(2.0), false),
        kv_gap_json(
            18,
            19,
            "missed, and no replay endpoint was given to ask for them",
            at(2.5),
        ),
        kv_batch_json(20, &batch(3.0, 1, 0, 0), at(3.0), false),
    ];
    let kv = read_kv_events(&write(dir.path(), "kv.jsonl", &lines)).unwrap();
    let holes: Vec<(u64, u64, &str)> = kv
        .gaps
        .iter()
        .map(|g| (g.from_seq, g.to_seq, g.reason.as_str()))
        .collect();
    // 12..=14 between 11 and 15, 16..=17 between 15 and the record of 18..=19; the
    // first batch at 10 is no hole (the subscriber states one when there is one).
    assert_eq!(
        holes,
        vec![
            (12, 14, UNRECORDED_HOLE),
            (16, 17, UNRECORDED_HOLE),
            (
                18,
                19,
                "missed, and no replay endpoint was given to ask for them"
            ),
        ]
    );
    assert_eq!(kv.missed_batches(), 3 + 2 + 2);
    assert_eq!(kv.batches, 4);
    assert_eq!(kv.seq_range, Some((10, 20)));
    // Cut off: no closing line, so no end.
    assert_eq!(kv.end, None);
}

#[test]
fn a_restart_begins_a_new_sequence_and_a_duplicate_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let lines = vec![
        header(),
        kv_batch_json(0, &batch(1.0, 1, 0, 0), at(1.0), false),
        kv_batch_json(1, &batch(1.1, 1, 0, 0), at(1.1), false),
        // The same line twice (an edit): not counted again.
        kv_batch_json(1, &batch(1.1, 1, 0, 0), at(1.1), false),
        kv_restart_json(1, 0, at(5.0)),
        kv_batch_json(0, &batch(5.0, 2, 0, 0), at(5.0), false),
        kv_batch_json(1, &batch(5.1, 2, 0, 0), at(5.1), false),
        // A bad frame with a sequence number accounts for its number: no hole at 2.
        kv_bad_frame_json(Some(2), "not a KV event batch: x", 3, 40, at(5.2), false),
        kv_batch_json(3, &batch(5.3, 2, 0, 0), at(5.3), false),
    ];
    let kv = read_kv_events(&write(dir.path(), "kv.jsonl", &lines)).unwrap();
    assert_eq!(kv.restarts, 1);
    assert_eq!(kv.batches, 5);
    assert_eq!(kv.stored_blocks(), 1 + 1 + 2 + 2 + 2);
    assert!(kv.gaps.is_empty(), "{:?}", kv.gaps);
    // The duplicate and the bad frame.
    assert_eq!(kv.skipped, 2);
}

#[test]
fn a_cut_last_line_and_lines_of_no_kind_are_counted() {
    let whole = kv_batch_json(1, &batch(1.5, 5, 0, 0), at(1.5), false);
    let mut text = format!(
        "{}\n{}\nnot json\n{{\"what\": 1}}\n{}\n{}",
        header(),
        kv_batch_json(0, &batch(1.0, 1, 0, 0), at(1.0), false),
        "x".repeat(70_000),
        &whole[..whole.len() / 2],
    );
    let kv = read_kv_events_from(Path::new("cut.jsonl"), text.as_bytes()).unwrap();
    assert_eq!(kv.batches, 1);
    assert_eq!(kv.stored_blocks(), 1);
    // "not json", the object of no kind, the overlong line, the cut line.
    assert_eq!(kv.skipped, 4);
    // The same file with its last line whole reads that batch.
    text.truncate(text.len() - whole.len() / 2);
    text.push_str(&whole);
    let kv = read_kv_events_from(Path::new("whole.jsonl"), text.as_bytes()).unwrap();
    assert_eq!((kv.batches, kv.stored_blocks(), kv.skipped), (2, 6, 3));
}

#[test]
fn a_file_that_is_not_a_kv_event_file_is_refused_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("empty.jsonl", String::new()),
        (
            "series.jsonl",
            "{\"schema\": \"inferlint.series/1\", \"url\": \"http://x\"}\n".to_owned(),
        ),
        (
            "no-header.jsonl",
            kv_batch_json(0, &batch(1.0, 1, 0, 0), at(1.0), false),
        ),
        ("two-headers.jsonl", format!("{}\n{}\n", header(), header())),
    ];
    for (name, text) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let err = read_kv_events(&path).unwrap_err().to_string();
        assert!(err.contains(name) && !err.contains('\n'), "{name}: {err}");
    }
}

#[test]
fn the_lines_hold_no_token_ids() {
    // A batch storing 2,000 blocks of 16 tokens is one short line.
    let big = batch(1.0, 2_000, 0, 0);
    let line = kv_batch_json(7, &big, ANCHOR, false);
    assert!(line.len() < 300, "{line}");
    assert!(line.contains("\"stored_tokens\":32000"));
}

/// The real vLLM 0.32 CPU build's stream (fixtures/real/vllm-0.32-cpu/kv-events,
/// scripts/real-vllm/kv-events.sh; its MADE.md holds what the server counted).
fn real(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real/vllm-0.32-cpu/kv-events")
        .join(name)
}

/// The messages of a capture: one a line, frames in hex separated by single spaces.
fn messages(name: &str) -> Vec<Vec<Vec<u8>>> {
    let text = std::fs::read_to_string(real(name)).unwrap();
    text.lines()
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

/// Each published message's sequence number and batch.
fn published(name: &str) -> Vec<(u64, KvBatch)> {
    messages(name)
        .iter()
        .map(|frames| {
            let frames: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
            let (seq, payload) = published_frame(&frames).unwrap();
            (seq, decode_batch(payload).unwrap())
        })
        .collect()
}

// What the server did (MADE.md): blocks of 32 tokens; a cache of 1,536 tokens, 48
// blocks of which one is vLLM's null block, so 47 hold blocks; 32 requests of 96 prompt
// tokens and 40 output tokens, ignore_eos, no test request; the prefix cache served 64
// prompt tokens; one POST /reset_prefix_cache between the two loads of 16.
const BLOCK: u64 = 32;
const USABLE_BLOCKS: u64 = 1_536 / BLOCK - 1;
const REQUESTS: u64 = 32;
const PROMPT: u64 = 96;
const OUTPUT: u64 = 40;
const HIT_TOKENS: u64 = 64;

/// Blocks a request computes itself: its prompt and every output token but the last
/// (sampled, never fed back) fill floor((96 + 39) / 32) = 4 blocks.
const BLOCKS_PER_REQUEST: u64 = (PROMPT + OUTPUT - 1) / BLOCK;

#[test]
fn the_real_stream_decodes_whole_and_adds_up_to_what_the_server_did() {
    let batches = published("frames.hex");
    // The capture was connected before the engine started, and the engine publishes
    // nothing before a request runs: every batch from 0, none missed.
    let seqs: Vec<u64> = batches.iter().map(|(s, _)| *s).collect();
    assert_eq!(seqs, (0..batches.len() as u64).collect::<Vec<_>>());
    let sum = |f: fn(&KvBatch) -> u64| batches.iter().map(|(_, b)| f(b)).sum::<u64>();
    // Every block a request filled was stored, but those the prefix cache served.
    let stored = REQUESTS * BLOCKS_PER_REQUEST - HIT_TOKENS / BLOCK;
    assert_eq!(stored, 126);
    assert_eq!(sum(|b| b.stored_blocks), stored);
    assert_eq!(sum(|b| b.stored_tokens), stored * BLOCK);
    // One reset of the prefix cache.
    assert_eq!(sum(|b| b.cleared), 1);
    assert_eq!(sum(|b| b.other_events), 0);
    for (seq, b) in &batches {
        // vLLM 0.32: every event a map; block hashes as integers (its default,
        // VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1); one engine, data-parallel rank 0;
        // the block pool's medium is GPU whatever the device.
        assert_eq!(b.encodings.arrays, 0, "batch {seq}");
        assert_eq!(b.encodings.maps, b.events, "batch {seq}");
        assert_eq!((b.hashes.bytes, b.hashes.other), (0, 0), "batch {seq}");
        assert_eq!(b.dp_rank, Some(0), "batch {seq}");
        assert_eq!(b.medium().as_deref(), Some("GPU"), "batch {seq}");
        assert_eq!(b.stored_tokens, b.stored_blocks * BLOCK, "batch {seq}");
    }
    // Removals: the cache holds at most 47 hashed blocks, so counting stored minus
    // removed since the start or the reset (a reset forgets every hash without a
    // BlockRemoved; it came between the loads, so before the stores of its batch)
    // never leaves 0..=47.
    let mut held: i64 = 0;
    let mut stored_per_load = vec![0u64];
    let mut removed_per_load = vec![0u64];
    for (seq, b) in &batches {
        if b.cleared > 0 {
            held = 0;
            stored_per_load.push(0);
            removed_per_load.push(0);
        }
        held += b.stored_blocks as i64 - b.removed_blocks as i64;
        *stored_per_load.last_mut().unwrap() += b.stored_blocks;
        *removed_per_load.last_mut().unwrap() += b.removed_blocks;
        assert!(
            (0..=USABLE_BLOCKS as i64).contains(&held),
            "batch {seq}: {held} blocks held"
        );
    }
    // Each load stored 16 * 4 blocks less the hits (62 or 64) into 47: at least the
    // difference was removed.
    assert_eq!(stored_per_load.len(), 2);
    for (stored, removed) in stored_per_load.iter().zip(&removed_per_load) {
        assert!(*stored >= 16 * BLOCKS_PER_REQUEST - HIT_TOKENS / BLOCK);
        assert!(*removed >= stored - USABLE_BLOCKS, "{removed} of {stored}");
    }
}

#[test]
fn the_real_stream_with_block_hashes_as_bytes() {
    // The second server: VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0, 4 requests of 96 + 40,
    // no prefix hit (its counters), a cache of 47 blocks that holds all 16.
    let batches = published("frames-bytes-hashes.hex");
    let stored: u64 = batches.iter().map(|(_, b)| b.stored_blocks).sum();
    assert_eq!(stored, 4 * BLOCKS_PER_REQUEST);
    let bytes: u64 = batches.iter().map(|(_, b)| b.hashes.bytes).sum();
    let ints: u64 = batches.iter().map(|(_, b)| b.hashes.ints).sum();
    assert_eq!((bytes, ints), (stored, 0));
    assert_eq!(
        batches.iter().map(|(_, b)| b.removed_blocks).sum::<u64>(),
        0
    );
}

#[test]
fn the_real_replay_answers_with_the_bytes_it_published() {
    // Asked from the third-last batch: those three, then the end marker, each as vLLM
    // sends a replay, ["", topic, seq, payload].
    let published = messages("frames.hex");
    let last = published.len() as u64 - 1;
    let replay = messages("replay.hex");
    assert_eq!(replay.len(), 4);
    for (i, frames) in replay.iter().enumerate() {
        assert_eq!(frames.len(), 4);
        let frames: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
        match replayed_frame(&frames).unwrap() {
            Replayed::Batch { seq, payload } => {
                assert_eq!(seq, last - 2 + i as u64);
                assert_eq!(payload, published[seq as usize][2].as_slice());
            }
            Replayed::End => assert_eq!(i, 3),
        }
    }
}

fn subscribed_line(name: &str) -> (Option<bool>, ClockAnchor) {
    let text = std::fs::read_to_string(real(name)).unwrap();
    text.lines()
        .find_map(|l| match inferlint_engines::files::parse_kv_line(l) {
            inferlint_engines::files::KvLine::Subscribed {
                at: Some(at),
                listening_at_start,
            } => Some((listening_at_start, at)),
            _ => None,
        })
        .unwrap()
}

/// Each batch line of a subscriber's file.
fn batch_lines(name: &str) -> Vec<inferlint_engines::files::KvBatchLine> {
    std::fs::read_to_string(real(name))
        .unwrap()
        .lines()
        .filter_map(|l| match inferlint_engines::files::parse_kv_line(l) {
            inferlint_engines::files::KvLine::Batch(b) => Some(b),
            _ => None,
        })
        .collect()
}

#[test]
fn the_subscriber_started_before_the_engine_wrote_every_batch_it_published() {
    let raw = published("frames.hex");
    let kv = read_kv_events(&real("early.kv-events.jsonl")).unwrap();
    // Started before the server: the publisher was not listening, so it would have
    // stated a hole from 0; it received every batch, 0 to the last.
    assert_eq!(subscribed_line("early.kv-events.jsonl").0, Some(false));
    assert_eq!(kv.batches, raw.len() as u64);
    assert_eq!(kv.seq_range, Some((0, raw.len() as u64 - 1)));
    assert!(kv.gaps.is_empty() && kv.skipped == 0 && kv.replayed == 0);
    assert!(kv.end.is_some());
    assert_eq!(kv.media, vec!["GPU".to_owned()]);
    // Line by line the same batches as the raw capture decoded here.
    let lines = batch_lines("early.kv-events.jsonl");
    assert_eq!(lines.len(), raw.len());
    for (line, (seq, b)) in lines.iter().zip(&raw) {
        assert_eq!(line.seq, *seq);
        assert_eq!(line.ts, b.ts);
        assert_eq!(
            (
                line.stored_blocks,
                line.stored_tokens,
                line.removed_blocks,
                line.cleared
            ),
            (
                b.stored_blocks,
                b.stored_tokens,
                b.removed_blocks,
                b.cleared
            ),
            "batch {seq}"
        );
    }
    assert_eq!(kv.stored_blocks(), 126);
    assert_eq!(
        kv.removed_blocks(),
        raw.iter().map(|(_, b)| b.removed_blocks).sum::<u64>()
    );
    assert_eq!(kv.seconds.iter().map(|s| s.cleared).sum::<u64>(), 1);
}

#[test]
fn the_subscriber_started_late_fetched_what_came_before_it_by_replay() {
    let raw = published("frames.hex");
    let kv = read_kv_events(&real("late.kv-events.jsonl")).unwrap();
    let (listening, subscribed) = subscribed_line("late.kv-events.jsonl");
    // It joined after the first load and the reset, the engine listening, and was told
    // to backfill from 0: the batches the engine published before the subscription
    // (engine and subscriber on one host, one wall clock) came by replay, the rest live.
    assert_eq!(listening, Some(true));
    let before = raw.iter().filter(|(_, b)| b.ts < subscribed.t_wall).count() as u64;
    assert!(before >= 1 && before < raw.len() as u64, "{before}");
    assert_eq!(kv.replayed, before);
    let lines = batch_lines("late.kv-events.jsonl");
    for line in &lines {
        assert_eq!(line.replayed, line.seq < before, "batch {}", line.seq);
    }
    // Nothing missed: the engine's buffer (10,000 batches) held them all.
    assert_eq!(kv.batches, raw.len() as u64);
    assert!(kv.gaps.is_empty());
    assert_eq!(kv.stored_blocks(), 126);
    let early = read_kv_events(&real("early.kv-events.jsonl")).unwrap();
    assert_eq!(kv.seconds, early.seconds);
}
