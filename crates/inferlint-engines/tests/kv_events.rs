//! The KV-cache event stream: batches decoded from their MessagePack bytes in both of the
//! engines' encodings (written here byte by byte from the format), the frames around
//! them, and the file a subscriber writes, read back with its holes.

// The helpers below unwrap as the tests do: a failure is the test failing.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::Path;

use inferlint_core::traces::ClockAnchor;
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
