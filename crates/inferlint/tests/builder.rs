//! A run put together from raw `/metrics` text and a client's own counts.

use inferlint::{CheckOptions, ClientSummary, Engine, ErrorKind, Outcome, Run, Status, Tripwire};

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
    ClientSummary::new(completed, 0, completed * 1000, 90.0)
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
        builder = builder
            .sample_metrics(&text, 1_700_000_000.0 + i as f64)
            .unwrap();
    }
    // A sample that goes back in time is refused.
    let back = Run::builder()
        .sample_metrics("vllm:num_requests_running 3\n", 1_700_000_000.0)
        .unwrap()
        .sample_metrics("vllm:num_requests_running 3\n", 1_600_000_000.0);
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
        let error = Run::builder().sample_metrics(garbage, 1.0).unwrap_err();
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
    let expected = run.check_with(&CheckOptions::default().expect_cache_hits(true));
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

/// The server's readings of a vLLM run of `finished` requests of 88 prompt and 1000
/// output tokens each.
fn vllm_counts(finished: u64) -> String {
    format!(
        "vllm:request_success_total{{finished_reason=\"length\"}} {finished}\n\
         vllm:generation_tokens_total {}\n\
         vllm:prompt_tokens_total {}\n\
         vllm:num_preemptions_total 0\n",
        finished * 1000,
        finished * 88
    )
}

/// The harness's own per-request records stand for its client's counts: 32 records of
/// 1000 output tokens each, beside a server that finished 32 requests and 32 000 tokens,
/// balance (T15 passes); records that say 30 came back whole, of the same 32 the server
/// finished, do not.
#[test]
fn request_records_are_the_clients_account() {
    let t0 = 1_700_000_000.0;
    let records = |failed: usize| {
        (0..32).map(move |i| {
            let start = t0 + 1.0 + i as f64 * 0.5;
            let record = inferlint::RequestRecord::new(start, start + 20.0)
                .first_token(start + 0.25)
                .tokens(88, 1000);
            if i < failed {
                record.failed()
            } else {
                record
            }
        })
    };
    let run = |failed: usize| {
        Run::builder()
            .engine(Engine::Vllm)
            .before_metrics_at(&vllm_counts(0), t0)
            .unwrap()
            .after_metrics_at(&vllm_counts(32), t0 + 60.0)
            .unwrap()
            .requests(records(failed))
            .build()
            .unwrap()
            .check()
    };
    let whole = run(0);
    let t15 = whole
        .results()
        .iter()
        .find(|r| r.tripwire() == Tripwire::T15)
        .unwrap();
    assert_eq!(t15.status(), Status::Pass, "{}", t15.message());
    assert!(
        whole
            .not_checked()
            .iter()
            .all(|r| r.tripwire() != Tripwire::T15),
        "the records are a result: {:?}",
        whole.not_checked()
    );
    // The first tokens came 250 ms after each start: the time to first token is the
    // records'.
    let json = serde_json::to_value(&whole).unwrap();
    assert!(
        json["insights"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["text"].as_str().unwrap().contains("within 250 ms")),
        "{json}"
    );
    // Two of the 32 failed: the server finished two more than the client got whole.
    let short = run(2);
    assert_eq!(status(&short, Tripwire::T15), Some(Status::Fail));
    assert_eq!(status(&short, Tripwire::T18), Some(Status::Fail));
}

/// GPU readings given with the samples are what T21 reads: without them it is not
/// checked; with another process holding 20 GiB on the server's GPU throughout, it is
/// judged, and not as a pass.
#[test]
fn gpu_readings_with_the_samples_are_checked() {
    let sample = |running: u64| {
        format!("vllm:num_requests_running {running}\nvllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 0.5\n")
    };
    let run = |gpu: Option<inferlint::GpuReading>| {
        let mut builder = Run::builder()
            .engine(Engine::Vllm)
            .requested(8)
            .before_metrics_at(&vllm_counts(0), 1_700_000_000.0)
            .unwrap();
        for i in 0..20 {
            let t = 1_700_000_001.0 + i as f64;
            builder = match gpu {
                Some(gpu) => builder.sample_metrics_with_gpu(&sample(8), t, gpu),
                None => builder.sample_metrics(&sample(8), t),
            }
            .unwrap();
        }
        builder
            .after_metrics_at(&vllm_counts(8), 1_700_000_030.0)
            .unwrap()
            .build()
            .unwrap()
            .check()
    };
    let without = run(None);
    assert!(without
        .not_checked()
        .iter()
        .any(|r| r.tripwire() == Tripwire::T21));
    let busy = inferlint::GpuReading::default()
        .util(99.0)
        .other_process(20_480.0, 45.0);
    let with = run(Some(busy));
    let t21 = with
        .results()
        .iter()
        .find(|r| r.tripwire() == Tripwire::T21);
    let t21 = t21.expect("T21 is judged on the readings");
    assert!(
        matches!(t21.status(), Status::Fail | Status::Warn),
        "{}",
        t21.message()
    );
    assert!(
        t21.message().contains("45%") && t21.message().contains("20 of 20"),
        "{}",
        t21.message()
    );
    let quiet = run(Some(
        inferlint::GpuReading::default()
            .util(99.0)
            .other_process(0.0, 0.0),
    ));
    assert_eq!(status(&quiet, Tripwire::T21), Some(Status::Pass));
}

/// A record that cannot be is refused at build(), naming it.
#[test]
fn a_request_record_that_cannot_be_is_refused() {
    let bad = inferlint::RequestRecord::new(10.0, 5.0);
    let error = Run::builder()
        .before_metrics(&vllm_counts(0))
        .unwrap()
        .requests([inferlint::RequestRecord::new(1.0, 2.0), bad])
        .build()
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Invalid);
    assert_eq!(error.input(), Some("request record 2"));
    let early = inferlint::RequestRecord::new(1.0, 2.0).first_token(0.5);
    let error = Run::builder().requests([early]).build().unwrap_err();
    assert_eq!(error.input(), Some("request record 1"), "{error}");
}

/// A run built from the client's records alone holds nothing of the server's: the
/// library refuses it, as docs/library.md says ("nothing to check"), where it came back
/// `Outcome::Passed` from checks of the client's own account.
#[test]
fn a_run_of_the_clients_data_alone_is_refused() {
    let t0 = 1_700_000_000.0;
    let records = (0..8).map(|i| {
        let start = t0 + f64::from(i) * 0.1;
        inferlint::RequestRecord::new(start, start + 2.0)
            .first_token(start + 0.2)
            .tokens(88, 100)
    });
    let error = Run::builder().requests(records).build().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NothingChecked, "{error}");
    assert!(
        error.to_string().contains("only the client's account"),
        "{error}"
    );
    let error = Run::builder().client(client(8)).build().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NothingChecked, "{error}");
    // With the server's readings beside it, it is a run.
    assert!(Run::builder()
        .before_metrics(&vllm_counts(0))
        .unwrap()
        .after_metrics(&vllm_counts(8))
        .unwrap()
        .client(client(8))
        .build()
        .is_ok());
}

/// A load of 8 requests that ran 0.35 s, sampled at the default 250 ms: the two samples
/// read the server before the requests ran and as they began (0 running), and the
/// harness's own records say all 8 were open at once. "Never ran more than 0" rests on
/// one sample inside the load: T8 and T17 cannot tell, naming the coverage.
#[test]
fn a_run_shorter_than_its_samples_can_see_is_cant_tell_for_t8_and_t17() {
    let t0 = 1_700_000_000.0;
    let records = (0..8).map(|i| {
        let start = t0 + 0.05 + f64::from(i) * 0.001;
        inferlint::RequestRecord::new(start, t0 + 0.40)
            .first_token(start + 0.1)
            .tokens(88, 1000)
    });
    let mut builder = Run::builder()
        .engine(Engine::Vllm)
        .requested(8)
        .before_metrics_at(&vllm_metrics(0, 0), t0 - 0.01)
        .unwrap();
    for at in [0.0, 0.25] {
        builder = builder
            .sample_metrics(
                "vllm:num_requests_running{model_name=\"m\"} 0\n\
                 vllm:num_requests_waiting{model_name=\"m\"} 0\n\
                 vllm:kv_cache_usage_perc{model_name=\"m\"} 0.0\n",
                t0 + at,
            )
            .unwrap();
    }
    let report = builder
        .after_metrics_at(&vllm_metrics(8, 0), t0 + 0.41)
        .unwrap()
        .requests(records)
        .build()
        .unwrap()
        .check();
    for tripwire in [Tripwire::T8, Tripwire::T17] {
        let r = report
            .results()
            .iter()
            .find(|r| r.tripwire() == tripwire)
            .unwrap();
        assert_ne!(r.status(), Status::Fail, "{tripwire}: {}", r.message());
        if r.status() == Status::Unknown {
            assert!(
                r.message().starts_with("the recording covered"),
                "{}",
                r.message()
            );
        }
    }
    let t8 = report
        .results()
        .iter()
        .find(|r| r.tripwire() == Tripwire::T8)
        .unwrap();
    assert_eq!(t8.status(), Status::Unknown, "{}", t8.message());
}
