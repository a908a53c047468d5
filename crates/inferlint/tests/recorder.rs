//! The recorder as a harness runs it: started before the load, finished after it, and
//! never losing what it read. Every server here is the simulated one on 127.0.0.1, and
//! stops when its handle drops, on every path.

use std::time::Duration;

use inferlint::live::{RecordEvent, RecordOptions, Recorder};
use inferlint::sim::{self, Faults, LoadConfig, ServerConfig};
use inferlint::{Engine, ErrorKind, Run, Status, Tripwire};

fn load(requests: usize, concurrency: usize) -> LoadConfig {
    LoadConfig {
        requests,
        concurrency,
        prompt_tokens: 32,
        output_tokens: 200,
        ..LoadConfig::default()
    }
}

fn status(report: &inferlint::Report, tripwire: Tripwire) -> Option<Status> {
    report
        .results()
        .iter()
        .find(|r| r.tripwire() == tripwire)
        .map(|r| r.status())
}

/// `start` returns with the before reading taken, so a load started after it is all
/// between the readings even when `/metrics` answers slowly (300 ms here): the client's
/// 16 timed requests and its test request are the 17 the server counted, and T15 and
/// T18 pass. The events stream the samples and the mid-run verdicts, and end with the
/// series.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_started_after_start_is_all_between_the_readings() {
    let server = sim::spawn(ServerConfig {
        speed: 5.0,
        faults: Faults {
            slow_metrics_ms: Some(300),
            ..Faults::default()
        },
        ..ServerConfig::new(Engine::Vllm)
    })
    .unwrap();
    let options = RecordOptions::default()
        .interval(Duration::from_millis(400))
        .requested(8);
    let mut recorder = Recorder::start(&server.base_url, options).await.unwrap();
    assert_eq!(recorder.engine(), Engine::Vllm);
    let mut events = recorder.events();
    let listener = tokio::spawn(async move {
        let (mut samples, mut verdicts) = (0u64, 0u64);
        while let Some(event) = events.next().await {
            match event {
                RecordEvent::Sample(_) => samples += 1,
                RecordEvent::Verdict(_) => verdicts += 1,
                _ => {}
            }
        }
        (samples, verdicts)
    });
    let result = sim::run_in_runtime(&server.base_url, load(16, 8))
        .await
        .unwrap();
    let recording = recorder.finish().await;
    let (samples, verdicts) = listener.await.unwrap();
    assert!(recording.after().is_ok());
    let health = recording.health();
    assert_eq!(health.failed(), 0);
    // The first sample may come before the stream is made; none after it is lost.
    assert!(
        samples + 1 >= health.samples() && samples <= health.samples(),
        "{samples} of {health:?}"
    );
    assert!(
        verdicts >= 1,
        "the last judgement gives each mid-run tripwire its verdict"
    );
    let report = Run::from_recording(&recording)
        .client((&result).into())
        .build()
        .unwrap()
        .check();
    assert_eq!(
        status(&report, Tripwire::T15),
        Some(Status::Pass),
        "{}",
        report.to_text()
    );
    assert_eq!(
        status(&report, Tripwire::T18),
        Some(Status::Pass),
        "{}",
        report.to_text()
    );
}

/// A server that dies on request 6 of 16: the after reading fails, and the recording
/// keeps the before reading and every sample. Checked, the tripwires that need the
/// after reading say Can't tell naming it, and those of the series are judged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_mid_run_leaves_a_recording_checked_for_what_it_can_judge() {
    let server = sim::spawn(ServerConfig {
        speed: 5.0,
        faults: Faults {
            die_on_request: Some(6),
            ..Faults::default()
        },
        ..ServerConfig::new(Engine::Vllm)
    })
    .unwrap();
    let options = RecordOptions::default()
        .interval(Duration::from_millis(50))
        .requested(4);
    let recorder = Recorder::start(&server.base_url, options).await.unwrap();
    let result = sim::run_in_runtime(&server.base_url, load(16, 4)).await;
    assert!(server.is_dead());
    let recording = recorder.finish().await;
    let error = recording.after().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Server);
    assert!(
        error
            .to_string()
            .starts_with("cannot take the after reading: "),
        "{error}"
    );
    assert!(recording.health().samples() >= 1);
    assert!(recording.before_t_wall().is_some());
    let mut builder = Run::from_recording(&recording);
    if let Ok(result) = &result {
        builder = builder.client(result.into());
    }
    let report = builder.build().unwrap().check();
    let t1 = report
        .results()
        .iter()
        .find(|r| r.tripwire() == Tripwire::T1)
        .expect("T1 is a verdict, not a tripwire left unchecked");
    assert_eq!(t1.status(), Status::Unknown);
    assert!(
        t1.message().contains("the after reading"),
        "{}",
        t1.message()
    );
    assert!(report
        .not_checked()
        .iter()
        .all(|r| r.tripwire() != Tripwire::T1));
    // The series is judged: T8 on the samples taken while the load ran.
    assert!(
        report
            .results()
            .iter()
            .any(|r| r.tripwire() == Tripwire::T8),
        "{}",
        report.to_text()
    );
    // T15 compares the client's counts with the server's change between the readings:
    // without the after reading it cannot.
    if result.is_ok() {
        assert_eq!(status(&report, Tripwire::T15), Some(Status::Unknown));
        // The client's own account is judged: most of its requests failed.
        assert_eq!(
            status(&report, Tripwire::T18),
            Some(Status::Fail),
            "{}",
            report.to_text()
        );
    }
    assert_ne!(report.outcome(), inferlint::Outcome::Passed);
}

/// An interval of 0 ms is refused before anything is read, as a typed error.
#[tokio::test(flavor = "current_thread")]
async fn an_interval_of_zero_is_refused() {
    let options = RecordOptions::default().interval(Duration::ZERO);
    // No server: the options are refused before an address is tried.
    let error = Recorder::start("127.0.0.1:9", options).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Invalid, "{error}");
    assert_eq!(error.input(), Some("the interval"));
    let options = RecordOptions::default().duration(Duration::ZERO);
    let error = Recorder::start("127.0.0.1:9", options).await.unwrap_err();
    assert_eq!(error.input(), Some("the duration"));
}

/// `finish` while a scrape is under way (each takes 700 ms; `finish` comes 300 ms into
/// the third) ends the series there: no gap, no failed scrape, and the after reading
/// is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_stop_mid_scrape_is_no_gap() {
    let server = sim::spawn(ServerConfig {
        faults: Faults {
            slow_metrics_ms: Some(700),
            ..Faults::default()
        },
        ..ServerConfig::new(Engine::Vllm)
    })
    .unwrap();
    let options = RecordOptions::default().interval(Duration::from_secs(1));
    let recorder = Recorder::start(&server.base_url, options).await.unwrap();
    // Slot 0 is the before reading; slot 1's scrape begins 1 s after it was asked for
    // and ends 700 ms later.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while recorder.health().samples() < 2 {
        assert!(std::time::Instant::now() < deadline, "no second sample");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Slot 2's scrape begins about 300 ms after slot 1's sample: 600 ms in, it is
    // under way.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let recording = recorder.finish().await;
    let health = recording.health();
    assert_eq!(
        (health.gaps(), health.failed(), health.missed_slots()),
        (0, 0, 0),
        "{health:?}"
    );
    assert!(
        recording.notes().iter().all(|n| !n.starts_with("gap")),
        "{:?}",
        recording.notes()
    );
    assert!(recording.after().is_ok());
}

/// A recorder dropped without `finish` stops its series: the run folder's series file
/// grows while it runs and not after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorder_dropped_without_finish_stops_sampling() {
    let server = sim::spawn(ServerConfig::new(Engine::Vllm)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let series = dir.path().join("run.series.jsonl");
    let options = RecordOptions::default()
        .interval(Duration::from_millis(50))
        .folder(dir.path());
    let recorder = Recorder::start(&server.base_url, options).await.unwrap();
    let lines = || std::fs::read_to_string(&series).map_or(0, |t| t.lines().count());
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    // The header and three samples (or gaps).
    while lines() < 4 {
        assert!(
            std::time::Instant::now() < deadline,
            "the series never grew"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(recorder);
    // Any scrape under way is abandoned at once; give the task a moment to see the stop.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stopped_at = lines();
    // Ten more slots' time.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        lines(),
        stopped_at,
        "the series went on after the recorder was dropped"
    );
    assert!(!dir.path().join("after.snapshot.json").exists());
}

/// Scrapes that take 180 ms on a 50 ms schedule let three slots in four pass: the health
/// counts them as overruns (no scrape failed), says the series has too many holes, and
/// the events stream each such gap as an overrun.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_scrapes_are_overruns_in_the_health_and_the_events() {
    let server = sim::spawn(ServerConfig {
        faults: Faults {
            slow_metrics_ms: Some(180),
            ..Faults::default()
        },
        ..ServerConfig::new(Engine::Vllm)
    })
    .unwrap();
    let options = RecordOptions::default().interval(Duration::from_millis(50));
    let mut recorder = Recorder::start(&server.base_url, options).await.unwrap();
    let mut events = recorder.events();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while recorder.health().samples() < 4 {
        assert!(std::time::Instant::now() < deadline, "no fourth sample");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let recording = recorder.finish().await;
    let health = recording.health();
    assert_eq!(health.failed(), 0, "{health:?}");
    // At least two slots pass per 180 ms scrape after the first.
    assert!(
        health.overruns() >= 2 * (health.samples() - 1) - 1,
        "{health:?}"
    );
    assert!(health.too_many_missed(), "{health:?}");
    let mut overruns = 0;
    while let Some(event) = events.next().await {
        if let RecordEvent::Gap(gap) = event {
            assert!(
                gap.is_overrun() && gap.reason().contains("slot(s) missed"),
                "{gap:?}"
            );
            overruns += 1;
        }
    }
    assert!(overruns >= 1);
}
