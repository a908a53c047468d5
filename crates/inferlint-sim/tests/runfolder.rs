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
                _ => {}
            }
        }
    }
}
