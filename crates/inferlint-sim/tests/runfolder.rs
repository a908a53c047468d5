//! Simulated run folders: the same bytes every time, marked as simulated, and read by our
//! own parsers without a single unreadable line.

use inferlint_engines::{bootlog, files, prom};
use inferlint_sim::runfolder::{all_cases, run_folder};
use inferlint_sim::sched::ModelEngine;

#[test]
fn run_folders_are_identical_on_every_run() {
    for case in all_cases() {
        assert_eq!(run_folder(&case), run_folder(&case), "{}", case.name);
    }
}

#[test]
fn every_file_says_it_is_simulated() {
    for case in all_cases() {
        for (name, text) in run_folder(&case) {
            let marked = match name {
                "boot.log" | "load.log" => text.starts_with("# simulated by inferlint-sim"),
                "bench.json" => text.contains("\"note\": \"simulated by inferlint-sim"),
                "before.snapshot.json" | "after.snapshot.json" => {
                    text.contains("# simulated by inferlint-sim")
                }
                // Every resource the spans came from, and the stream's note.
                "spans.otlp.jsonl" => text.lines().skip(1).all(|l| {
                    l.matches("\"resource\":").count()
                        == l.matches(inferlint_sim::otlp::SIMULATED_NOTE).count()
                }),
                "kv-events.jsonl" => text.contains(inferlint_sim::runtraces::KV_NOTE),
                _ => true,
            };
            assert!(marked, "{}/{name} does not say it is simulated", case.name);
        }
    }
}

#[test]
fn our_parsers_read_every_simulated_file_completely() {
    for case in all_cases() {
        let engine = case.model.engine();
        for (name, text) in run_folder(&case) {
            match name {
                "boot.log" => {
                    let facts = bootlog::parse_boot_log(&text, Some(engine));
                    assert!(
                        facts.unparsed.is_empty(),
                        "{}: {:?}",
                        case.name,
                        facts.unparsed
                    );
                    assert!(facts.ready_lineno.is_some(), "{}: no ready line", case.name);
                    assert!(facts.kv_pool_tokens.is_some(), "{}: no pool", case.name);
                }
                "before.snapshot.json" | "after.snapshot.json" => {
                    let s = files::parse_snapshot(&text, std::path::Path::new(name)).unwrap();
                    prom::parse(&s.text).unwrap();
                }
                "bench.json" => {
                    let b = files::parse_bench_result(&text).unwrap();
                    assert_eq!(b.completed, Some(32));
                }
                "spans.otlp.jsonl" => {
                    let spans = files::read_spans_from(
                        std::path::Path::new(name),
                        text.as_bytes(),
                        engine.descriptor(),
                    )
                    .unwrap();
                    assert_eq!(
                        (spans.skipped, spans.unreadable_values, spans.repeated),
                        (0, 0, 0),
                        "{}: {:?}",
                        case.name,
                        spans.first_problem
                    );
                    // The standard load's 32 requests and its test request, and the
                    // loaders' spans of the boot.
                    assert_eq!(spans.requests.len(), 33, "{}", case.name);
                    assert_eq!(
                        spans.other_records,
                        inferlint_sim::otlp::BOOT_SPAN_COUNT as u64
                    );
                    assert!(spans.anchor.is_some());
                }
                "kv-events.jsonl" => {
                    let path = std::path::Path::new(name);
                    let kv = files::read_kv_events_from(path, text.as_bytes()).unwrap();
                    assert_eq!(kv.skipped, 0, "{}", case.name);
                    assert!(kv.gaps.is_empty() && kv.end.is_some(), "{}", case.name);
                    assert_eq!(kv.seq_range.map(|(a, _)| a), Some(0));
                }
                _ => {}
            }
        }
    }
}

/// The demo's KV event stream, from its setup: a hybrid model holds 3 groups of 784-token
/// blocks (and a state block); a request of 88 + 1,000 tokens computes 1,087 (its last
/// token never), so it fills one block in each group: the 33 requests (32 and the test)
/// store at least 99. Every block removed was stored, and the blocks still cached at the
/// end fit the 42 usable blocks. Its spans are one per request, the timed ones named
/// after the load's ids.
#[test]
fn the_demo_stream_and_spans_follow_from_its_setup() {
    let case = inferlint_sim::runfolder::demo_case();
    let folder = run_folder(&case);
    let file = |name: &str| {
        folder
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| t.clone())
            .unwrap()
    };
    let kv = files::read_kv_events_from(
        std::path::Path::new("kv-events.jsonl"),
        file("kv-events.jsonl").as_bytes(),
    )
    .unwrap();
    let (stored, removed) = (kv.stored_blocks(), kv.removed_blocks());
    assert!(stored >= 33 * 3, "{stored}");
    assert!(
        removed <= stored && stored - removed <= 42,
        "{stored} {removed}"
    );
    assert_eq!(kv.stored_tokens(), stored * 784);
    let (first, last) = kv.seq_range.unwrap();
    assert_eq!((first, last + 1), (0, kv.batches));
    let spans = files::read_spans_from(
        std::path::Path::new("spans.otlp.jsonl"),
        file("spans.otlp.jsonl").as_bytes(),
        case.model.engine().descriptor(),
    )
    .unwrap();
    let log = file("load.log");
    let prefix = log
        .split("request_id_prefix='")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .unwrap();
    for i in 0..32 {
        let id = format!("cmpl-{prefix}{i}-0");
        let r = spans
            .requests
            .iter()
            .find(|r| r.id.as_deref() == Some(id.as_str()))
            .unwrap_or_else(|| panic!("no span {id}"));
        assert_eq!((r.prompt_tokens, r.output_tokens), (Some(88), Some(1000)));
        // The server's own account adds up: in the queue, then prefill, then decode.
        let sum = r.queue_s.unwrap() + r.prefill_s.unwrap() + r.decode_s.unwrap();
        assert!((sum - r.e2e_s.unwrap()).abs() < 1e-9, "{id}");
    }
}
