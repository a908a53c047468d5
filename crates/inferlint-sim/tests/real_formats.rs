//! The simulator's KV event batches and spans set against what the real vLLM 0.32 sent
//! (`fixtures/real/vllm-0.32-cpu/kv-events` and `otlp`): every real batch, read back
//! field by field and encoded again by the simulator, is the same bytes; the simulator's
//! request span carries the real span's attributes, with values of the same kinds.

use std::path::PathBuf;

use inferlint_sim::kvblocks::KvEvent;
use inferlint_sim::kvwire::{self, Encoding};
use inferlint_sim::otlp::{self, Processes, RequestRecord};
use inferlint_sim::rng::Rng;
use serde_json::Value;

fn real(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real/vllm-0.32-cpu")
        .join(path)
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The events of one real batch, as the simulator's type holds them; `None` for a batch
/// with something the simulator never makes (a bytes hash, a LoRA).
fn events_of(batch: &Value) -> Option<(f64, Vec<KvEvent>)> {
    let ts = batch[0].as_f64()?;
    let mut events = Vec::new();
    for e in batch[1].as_array()? {
        let hashes = || -> Option<Vec<u64>> {
            e["block_hashes"]
                .as_array()?
                .iter()
                .map(Value::as_u64)
                .collect()
        };
        let group = u32::try_from(e["group_idx"].as_u64().unwrap_or(0)).ok()?;
        events.push(match e["type"].as_str()? {
            "BlockStored" => {
                if !e["lora_id"].is_null() || e["medium"] != "GPU" {
                    return None;
                }
                KvEvent::BlockStored {
                    block_hashes: hashes()?,
                    parent_block_hash: match &e["parent_block_hash"] {
                        Value::Null => None,
                        v => Some(v.as_u64()?),
                    },
                    token_ids: e["token_ids"]
                        .as_array()?
                        .iter()
                        .map(|t| t.as_u64().and_then(|t| u32::try_from(t).ok()))
                        .collect::<Option<_>>()?,
                    block_size: e["block_size"].as_u64()?,
                    group_idx: group,
                }
            }
            "BlockRemoved" => KvEvent::BlockRemoved {
                block_hashes: hashes()?,
                group_idx: group,
            },
            "AllBlocksCleared" => KvEvent::AllBlocksCleared,
            _ => return None,
        });
    }
    Some((ts, events))
}

/// Every batch vLLM 0.32 published in the capture (29, the reset's clear among them),
/// encoded again from its fields, is byte for byte the batch vLLM sent.
#[test]
fn the_simulator_encodes_a_batch_as_vllm_does() {
    let text = std::fs::read_to_string(real("kv-events/frames.hex")).unwrap();
    let mut compared = 0;
    let mut cleared = 0;
    for line in text.lines() {
        // `topic seq payload`, the topic empty.
        let fields: Vec<&str> = line.split(' ').collect();
        assert_eq!(fields.len(), 3, "{line}");
        let payload = unhex(fields[2]);
        let batch: Value = rmp_serde::from_slice(&payload).unwrap();
        let (ts, events) = events_of(&batch).expect("a batch of the simulator's kinds");
        cleared += events
            .iter()
            .filter(|e| **e == KvEvent::AllBlocksCleared)
            .count();
        assert_eq!(
            kvwire::batch(ts, &events, Encoding::VllmMaps),
            payload,
            "batch {}",
            fields[1]
        );
        compared += 1;
    }
    assert_eq!(compared, 29);
    assert_eq!(cleared, 1);
}

/// The replay's messages as vLLM sent them: `["", topic, seq, payload]` and the end
/// marker `["", topic, -1, ""]` (the capture writes the frames after the DEALER's empty
/// delimiter, the topic empty).
#[test]
fn the_replay_frames_are_vllm_s() {
    let text = std::fs::read_to_string(real("kv-events/replay.hex")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let last = lines.last().unwrap();
    let end: Vec<String> = kvwire::end_of_replay(Encoding::VllmMaps)
        .iter()
        .map(|f| f.iter().map(|b| format!("{b:02x}")).collect())
        .collect();
    assert_eq!(end.join(" "), *last);
    let first: Vec<&str> = lines[0].split(' ').collect();
    let seq = u64::from_str_radix(first[2], 16).unwrap();
    let payload = unhex(first[3]);
    let frames: Vec<String> = kvwire::replayed(seq, payload, Encoding::VllmMaps)
        .iter()
        .map(|f| f.iter().map(|b| format!("{b:02x}")).collect())
        .collect();
    assert_eq!(frames.join(" "), lines[0]);
}

/// The real `llm_request` span's attributes, each with its kind of value.
fn attribute_kinds(span: &Value) -> Vec<(String, String)> {
    span["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let kind = a["value"]
                .as_object()
                .unwrap()
                .keys()
                .next()
                .unwrap()
                .clone();
            (a["key"].as_str().unwrap().to_owned(), kind)
        })
        .collect()
}

/// The simulator's request span has the real one's name, kind, flags and attributes in
/// its order, each the same kind of value, and the same scope; its resource has every key
/// of the real API server's resource, and one more that says it is simulated.
#[test]
fn a_request_span_is_shaped_as_vllm_s() {
    let text = std::fs::read_to_string(real("otlp/grpc/spans.otlp.jsonl")).unwrap();
    let (real_span, real_scope, real_resource) = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|line| {
            let rs = line["resourceSpans"].get(0)?.clone();
            let ss = rs["scopeSpans"].get(0)?.clone();
            let span = ss["spans"]
                .as_array()?
                .iter()
                .find(|s| s["name"] == "llm_request")?
                .clone();
            Some((span, ss["scope"].clone(), rs["resource"].clone()))
        })
        .next()
        .unwrap();
    let mut rng = Rng::new(1);
    let processes = Processes::new(100, &mut rng);
    let record = RequestRecord {
        id: "cmpl-x-0-0".into(),
        arrival: 1_796_399_044.5,
        end: 1_796_399_045.0,
        queue_s: 0.001,
        ttft_s: 0.05,
        prefill_s: 0.04,
        decode_s: 0.4,
        e2e_s: 0.45,
        prompt_tokens: 32,
        completion_tokens: 16,
        max_tokens: 16,
    };
    let line = otlp::json_line(&otlp::request_batch(
        &processes,
        vec![otlp::request_span(&record, &mut rng)],
    ));
    let ours: Value = serde_json::from_str(&line).unwrap();
    let rs = &ours["resourceSpans"][0];
    let ss = &rs["scopeSpans"][0];
    let span = &ss["spans"][0];
    assert_eq!(ss["scope"], real_scope);
    for key in ["name", "kind", "flags", "status"] {
        assert_eq!(span[key], real_span[key], "{key}");
    }
    assert_eq!(attribute_kinds(span), attribute_kinds(&real_span));
    let keys = |r: &Value| -> Vec<String> {
        r["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["key"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut expected = keys(&real_resource);
    expected.push(otlp::SIMULATED_ATTRIBUTE.to_owned());
    assert_eq!(keys(&rs["resource"]), expected);
}
