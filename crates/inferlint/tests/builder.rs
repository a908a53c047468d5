//! A run put together from raw `/metrics` text and a client's own counts.

use inferlint::{ClientSummary, Engine, ErrorKind, Outcome, Run, Status, Tripwire};

/// vLLM's counters after `finished` requests of 88 prompt and 1,000 output tokens.
fn vllm_metrics(finished: u64, preempted: u64) -> String {
    format!(
        "# TYPE vllm:request_success_total counter\n\
         vllm:request_success_total{{finished_reason=\"length\",model_name=\"m\"}} {finished}\n\
         vllm:generation_tokens_total{{model_name=\"m\"}} {}\n\
         vllm:prompt_tokens_total{{model_name=\"m\"}} {}\n\
         vllm:num_preemptions_total{{model_name=\"m\"}} {preempted}\n\
         vllm:num_requests_running{{model_name=\"m\"}} 0\n\
         vllm:num_requests_waiting{{model_name=\"m\"}} 0\n",
        finished * 1000,
        finished * 88
    )
}

fn client(completed: u64) -> ClientSummary {
    ClientSummary {
        completed,
        failed: 0,
        output_tokens: completed * 1000,
        duration_s: 90.0,
        ..Default::default()
    }
}

fn status(report: &inferlint::Report, tripwire: Tripwire) -> Option<Status> {
    report
        .results()
        .iter()
        .chain(report.not_checked())
        .find(|r| r.tripwire() == tripwire)
        .map(|r| r.status())
}

/// The client's counts against the server's: agreeing counts pass T15, a client that
/// claims more than the server finished fails it; preemptions fail T1.
#[test]
fn raw_metrics_and_client_counts_are_checked_as_a_run() {
    let agreed = Run::builder()
        .engine(Engine::Vllm)
        .before_metrics_at(&vllm_metrics(0, 0), 1_700_000_000.0)
        .unwrap()
        .after_metrics_at(&vllm_metrics(32, 0), 1_700_000_100.0)
        .unwrap()
        .client(client(32))
        .build()
        .unwrap()
        .check();
    assert_eq!(status(&agreed, Tripwire::T15), Some(Status::Pass));
    assert_eq!(status(&agreed, Tripwire::T1), Some(Status::Pass));
    assert_eq!(status(&agreed, Tripwire::T10), Some(Status::Pass));
    // No boot log and no recording: listed, never passed.
    assert_eq!(status(&agreed, Tripwire::T12), Some(Status::NotChecked));
    assert_eq!(status(&agreed, Tripwire::T8), Some(Status::NotChecked));

    let claimed = Run::builder()
        .before_metrics(&vllm_metrics(0, 0))
        .unwrap()
        .after_metrics(&vllm_metrics(20, 4))
        .unwrap()
        .client(client(32))
        .build()
        .unwrap()
        .check();
    assert_eq!(status(&claimed, Tripwire::T15), Some(Status::Fail));
    assert_eq!(status(&claimed, Tripwire::T1), Some(Status::Fail));
    assert_eq!(claimed.outcome(), Outcome::TripwireFailed);
}

/// Samples folded one at a time give the series checks: a server that never ran more
/// than 10 of the 32 asked for fails T8.
#[test]
fn samples_fold_into_the_series_checks() {
    let mut builder = Run::builder().engine(Engine::Vllm).requested(32);
    for (i, running) in [0, 10, 10, 10, 6, 0].into_iter().enumerate() {
        let text = format!(
            "vllm:num_requests_running{{model_name=\"m\"}} {running}\n\
             vllm:num_requests_waiting{{model_name=\"m\"}} {}\n\
             vllm:kv_cache_usage_perc{{model_name=\"m\"}} {}\n",
            if running > 0 { 22 } else { 0 },
            if running > 0 { 0.95 } else { 0.0 },
        );
        builder
            .sample_metrics(&text, 1_700_000_000.0 + i as f64)
            .unwrap();
    }
    // A sample that goes back in time is refused and not added.
    let back = builder.sample_metrics("vllm:num_requests_running 3\n", 1_600_000_000.0);
    assert_eq!(back.unwrap_err().kind(), ErrorKind::Invalid);
    let report = builder.build().unwrap().check();
    let t8 = report
        .results()
        .iter()
        .find(|r| r.tripwire() == Tripwire::T8)
        .unwrap();
    assert_eq!(t8.status(), Status::Fail, "{}", t8.message());
}

/// Garbage is an error naming the input, never a panic or a pass.
#[test]
fn garbage_is_a_typed_error() {
    for garbage in [
        "",
        "   \n",
        "<html><body>502 Bad Gateway</body></html>",
        "{\"not\": \"metrics\"}",
        "\u{0}\u{1}binary",
    ] {
        let error = Run::builder().before_metrics(garbage).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Invalid, "{garbage:?}: {error}");
        assert_eq!(error.input(), Some("the before metrics"));
        assert!(
            error
                .to_string()
                .starts_with("cannot read the before metrics: "),
            "{error}"
        );
        let mut builder = Run::builder();
        let error = builder.sample_metrics(garbage, 1.0).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Invalid, "{garbage:?}: {error}");
    }
    let error = Run::builder()
        .boot_log("hello, world\n")
        .build()
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Invalid, "{error}");
    assert!(error.to_string().contains("not a server log"), "{error}");
    // Nothing given at all: nothing to check, as report refuses it.
    let error = Run::builder().build().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NothingChecked, "{error}");
    // A std error: it boxes into anyhow-style handling.
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(error);
    assert!(boxed
        .to_string()
        .starts_with("no check could run on nothing"));
}

/// Readings from two engines, or from another than the one named, are refused, as a
/// run folder's are; so are readings in the wrong order.
#[test]
fn readings_of_two_engines_or_out_of_order_are_refused() {
    let sglang =
        "sglang:num_running_reqs{model_name=\"m\"} 0\nsglang:num_queue_reqs{model_name=\"m\"} 0\n";
    let mixed = Run::builder()
        .before_metrics(&vllm_metrics(0, 0))
        .unwrap()
        .after_metrics(sglang)
        .unwrap()
        .build()
        .unwrap_err();
    assert_eq!(mixed.kind(), ErrorKind::Engine, "{mixed}");
    let named = Run::builder()
        .engine(Engine::Sglang)
        .before_metrics(&vllm_metrics(0, 0))
        .unwrap()
        .after_metrics(&vllm_metrics(1, 0))
        .unwrap()
        .build()
        .unwrap_err();
    assert_eq!(named.kind(), ErrorKind::Engine, "{named}");
    assert!(named.to_string().contains("came from vLLM"), "{named}");
    let swapped = Run::builder()
        .before_metrics_at(&vllm_metrics(32, 0), 1_700_000_100.0)
        .unwrap()
        .after_metrics_at(&vllm_metrics(0, 0), 1_700_000_000.0)
        .unwrap()
        .build()
        .unwrap_err();
    assert_eq!(swapped.kind(), ErrorKind::Readings, "{swapped}");
}

/// A run whose prompts the prefix cache mostly served: T16 warns, unless the harness says
/// the run is meant to reuse prefixes, as `report --expect-cache-hits` does.
#[test]
fn a_run_meant_to_reuse_prefixes_passes_t16() {
    let with_cache = |hits: u64, queries: u64| {
        format!(
            "{}vllm:prefix_cache_hits_total{{model_name=\"m\"}} {hits}\n\
             vllm:prefix_cache_queries_total{{model_name=\"m\"}} {queries}\n",
            vllm_metrics(queries / 88, 0)
        )
    };
    let run = Run::builder()
        .engine(Engine::Vllm)
        .before_metrics_at(&with_cache(0, 0), 1_700_000_000.0)
        .unwrap()
        .after_metrics_at(&with_cache(2_640, 2_816), 1_700_000_100.0)
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(status(&run.check(), Tripwire::T16), Some(Status::Warn));
    let expected = run.check_expecting_cache_hits();
    assert_eq!(status(&expected, Tripwire::T16), Some(Status::Pass));
    let t16 = expected
        .results()
        .iter()
        .find(|r| r.tripwire() == Tripwire::T16)
        .unwrap();
    assert!(
        t16.message().contains("--expect-cache-hits"),
        "{}",
        t16.message()
    );
}
