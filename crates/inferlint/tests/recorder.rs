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

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port on 127.0.0.1")
        .port()
}

/// A harness that asks for the server's spans and KV events gets them with the
/// recording. The simulated vLLM exports each request's `llm_request` span (over gRPC,
/// every 100 ms here) and publishes its KV event stream; the recorder listens before
/// the before reading, so all 8 timed requests and the load's test request, each
/// finished during the recording, come back as spans (9), and every batch the server
/// published arrives (none missed: the subscription is made before the load). Joined
/// with the harness's own request records, the client's TTFT is the server's plus the
/// transport (under a millisecond here, T24 passes), each chunk carries one token and the
/// client's counts are the server's (T25 passes), and the stream has no hole (T26 passes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_s_spans_and_kv_events_come_with_the_recording() {
    let (otlp_port, pub_port, replay_port) = (free_port(), free_port(), free_port());
    let mut config = ServerConfig {
        speed: 5.0,
        ..ServerConfig::new(Engine::Vllm)
    };
    let mut otlp = sim::OtlpConfig::new(&format!("http://127.0.0.1:{otlp_port}"));
    otlp.schedule_delay = Duration::from_millis(100);
    config.traces.otlp = Some(otlp);
    config.traces.kv_events = sim::KvConfig::parse(
        &format!(
            r#"{{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:{pub_port}", "replay_endpoint": "tcp://*:{replay_port}"}}"#
        ),
        sim::Encoding::VllmMaps,
    )
    .unwrap();
    let server = sim::spawn(config).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = RecordOptions::default()
        .interval(Duration::from_millis(200))
        .folder(dir.path())
        .spans(otlp_port)
        .kv_events(format!("tcp://127.0.0.1:{pub_port}"))
        .kv_replay(format!("tcp://127.0.0.1:{replay_port}"))
        .requested(4);
    let recorder = Recorder::start(&server.base_url, options).await.unwrap();
    let load = sim::run_in_runtime(&server.base_url, load(8, 4))
        .await
        .unwrap();
    let recording = recorder.finish().await;
    assert_eq!(
        recording.server_requests(),
        Some(9),
        "{:?}",
        recording.notes()
    );
    let (batches, missed) = recording.kv_batches().unwrap();
    assert!(
        batches > 0,
        "the requests filled blocks, and none was published"
    );
    assert_eq!(missed, 0);
    assert!(dir.path().join("spans.otlp.jsonl").is_file());
    assert!(dir.path().join("kv-events.jsonl").is_file());

    let report = Run::from_recording(&recording)
        .client((&load).into())
        .requests(sim::request_records(&load))
        .build()
        .unwrap()
        .check();
    for t in [Tripwire::T24, Tripwire::T25, Tripwire::T26] {
        assert_eq!(
            status(&report, t),
            Some(Status::Pass),
            "{t}: {}",
            report.to_json()
        );
    }
    // Without the harness's request records there is nothing to join the spans with:
    // not checked, naming what is missing; the stream needs no client.
    let counts_only = Run::from_recording(&recording)
        .client((&load).into())
        .build()
        .unwrap()
        .check();
    for t in [Tripwire::T24, Tripwire::T25] {
        let result = counts_only
            .not_checked()
            .iter()
            .find(|r| r.tripwire() == t)
            .unwrap();
        assert_eq!(result.status(), Status::NotChecked, "{}", result.message());
        assert!(
            result.message().contains("record of each request")
                && result.message().contains("keeps none"),
            "{}",
            result.message()
        );
    }
    assert_eq!(status(&counts_only, Tripwire::T26), Some(Status::Pass));
}

/// The receivers write into the run folder and need the port the server was told: asked
/// without a folder, or on port 0, the recorder refuses before it reads the server; a
/// subscriber refused leaves no file behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receivers_without_a_folder_or_a_port_are_refused() {
    let server = sim::spawn(ServerConfig::new(Engine::Vllm)).unwrap();
    let no_folder = Recorder::start(&server.base_url, RecordOptions::default().spans(4318)).await;
    assert_eq!(no_folder.unwrap_err().kind(), ErrorKind::Invalid);
    let dir = tempfile::tempdir().unwrap();
    let port_zero = Recorder::start(
        &server.base_url,
        RecordOptions::default().folder(dir.path()).spans(0),
    )
    .await;
    assert_eq!(port_zero.unwrap_err().kind(), ErrorKind::Invalid);
    let replay_alone = Recorder::start(
        &server.base_url,
        RecordOptions::default()
            .folder(dir.path())
            .kv_replay("tcp://127.0.0.1:5558"),
    )
    .await;
    assert_eq!(replay_alone.unwrap_err().kind(), ErrorKind::Invalid);
    let bad_endpoint = Recorder::start(
        &server.base_url,
        RecordOptions::default()
            .folder(dir.path())
            .spans(free_port())
            .kv_events("ipc:///tmp/kv"),
    )
    .await;
    assert_eq!(bad_endpoint.unwrap_err().kind(), ErrorKind::Invalid);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "a file left behind"
    );
}

/// A run folder that already holds a KV event file (an earlier run's, someone's) is
/// refused as a write, and the file is left as it was; the span receiver started before
/// it removes only the file it made itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_never_replaces_a_file_in_the_folder() {
    let server = sim::spawn(ServerConfig::new(Engine::Vllm)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let earlier = dir.path().join("kv-events.jsonl");
    std::fs::write(&earlier, "an earlier run's events\n").unwrap();
    let refused = Recorder::start(
        &server.base_url,
        RecordOptions::default()
            .folder(dir.path())
            .spans(free_port())
            .kv_events(format!("tcp://127.0.0.1:{}", free_port())),
    )
    .await;
    assert_eq!(refused.unwrap_err().kind(), ErrorKind::Write);
    assert_eq!(
        std::fs::read_to_string(&earlier).unwrap(),
        "an earlier run's events\n"
    );
    assert!(!dir.path().join("spans.otlp.jsonl").exists());
}

/// A step file's header as vLLM's step plugin writes it (docs/steps.md), anchored
/// `ago_s` seconds ago on this host's monotonic clock; and that anchor.
fn steps_header(ago_s: f64) -> (String, i64) {
    let anchor_ns = inferlint_live::clock::monotonic_ns() - (ago_s * 1e9) as i64;
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is past 1970")
        .as_secs_f64()
        - ago_s;
    (
        format!(
            r#"{{"schema":"inferlint.steps/1","plugin":"0.1.0","engine":"vllm","engine_version":"0.32.0","engine_index":0,"pid":4242,"t_wall":{wall:.6},"t_mono_ns":{anchor_ns},"iteration_details":true,"unread":[]}}"#
        ),
        anchor_ns,
    )
}

/// A decode step of 2 requests at `t` s past the anchor: `w` waiting, `gen` tokens
/// generated, `pre` requests preempted.
fn step_line(t: f64, i: u64, w: u64, gen: u64, pre: u64) -> String {
    format!(
        r#"{{"t":{t:.6},"i":{i},"r":2,"w":{w},"d":0,"kv":0.2,"pr":0,"pt":0,"dr":2,"dt":2,"ms":10.0,"gen":{gen},"prompt":0,"pre":{pre}}}"#
    )
}

fn append_to(path: &std::path::Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("the step file opens");
    file.write_all(text.as_bytes())
        .expect("the step file is written");
}

/// A harness recording a vLLM server started with `INFERLINT_STEPS=FILE` gets the steps
/// the server wrote between the readings: the test writes FILE as the plugin would. The
/// two steps written before `start` (an earlier window: 4 requests waiting 2.5 s with
/// nothing generated, and a preemption each) are not copied; the four written after it
/// are, and a line still being written at `finish` is not. From the four: nobody waited
/// (T29 passes), 2 + 1 requests were preempted in two steps 10 ms apart (T31 fails with
/// 3), while the server's counter did not move (the load's 4 requests of 232 tokens at
/// once fit the simulated cache of 2,048: nothing to preempt).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_server_s_steps_come_with_the_recording() {
    let server = sim::spawn(ServerConfig {
        speed: 5.0,
        ..ServerConfig::new(Engine::Vllm)
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("server-steps.jsonl");
    let run = dir.path().join("run");
    let (header, anchor_ns) = steps_header(60.0);
    append_to(
        &source,
        &format!(
            "{header}\n{}\n{}\n",
            step_line(1.0, 1, 4, 0, 1),
            step_line(3.5, 2, 4, 0, 1)
        ),
    );
    let options = RecordOptions::default()
        .interval(Duration::from_millis(100))
        .folder(&run)
        .steps(&source)
        .requested(4);
    let recorder = Recorder::start(&server.base_url, options).await.unwrap();
    let now = (inferlint_live::clock::monotonic_ns() - anchor_ns) as f64 / 1e9;
    let during: Vec<String> = (0..4u64)
        .map(|k| {
            step_line(
                now + 0.01 * k as f64,
                10 + k,
                0,
                2,
                [0, 2, 1, 0][k as usize],
            )
        })
        .collect();
    append_to(&source, &format!("{}\n", during.join("\n")));
    let load = sim::run_in_runtime(&server.base_url, load(4, 4))
        .await
        .unwrap();
    append_to(&source, &step_line(now + 0.05, 14, 0, 2, 5)[..40]);
    let recording = recorder.finish().await;
    assert_eq!(recording.steps(), Some(4), "{:?}", recording.notes());
    let mut expected = vec![header];
    expected.extend(during);
    assert_eq!(
        std::fs::read_to_string(run.join("steps.jsonl")).unwrap(),
        format!("{}\n", expected.join("\n"))
    );
    let report = Run::from_recording(&recording)
        .client((&load).into())
        .build()
        .unwrap()
        .check();
    let result = |t: Tripwire| {
        report
            .results()
            .iter()
            .find(|r| r.tripwire() == t)
            .unwrap_or_else(|| panic!("no {t}: {}", report.to_json()))
            .clone()
    };
    assert_eq!(result(Tripwire::T29).status(), Status::Pass);
    assert_eq!(result(Tripwire::T29).evidence_f64("steps"), Some(4.0));
    let t31 = result(Tripwire::T31);
    assert_eq!(t31.status(), Status::Fail, "{}", t31.message());
    assert_eq!(t31.evidence_f64("preempted"), Some(3.0));
    assert_eq!(t31.evidence_f64("counter_moved"), Some(0.0));
}

/// The steps are copied into the run folder: asked without one, the recorder refuses
/// before it reads the server; a file that is no step file, and a server of another
/// engine than vLLM (whose plugin it is), are refused too, leaving nothing behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_without_a_folder_or_from_no_step_file_are_refused() {
    let server = sim::spawn(ServerConfig::new(Engine::Vllm)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("server-steps.jsonl");
    let run = dir.path().join("run");
    let no_folder =
        Recorder::start(&server.base_url, RecordOptions::default().steps(&source)).await;
    assert_eq!(no_folder.unwrap_err().kind(), ErrorKind::Invalid);
    std::fs::write(&source, "INFO: vLLM API server version 0.32\n").unwrap();
    let not_steps = Recorder::start(
        &server.base_url,
        RecordOptions::default().folder(&run).steps(&source),
    )
    .await;
    let e = not_steps.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.to_string().contains("not a step file"), "{e}");
    std::fs::write(&source, format!("{}\n", steps_header(1.0).0)).unwrap();
    let sglang = sim::spawn(ServerConfig::new(Engine::Sglang)).unwrap();
    let other_engine = Recorder::start(
        &sglang.base_url,
        RecordOptions::default().folder(&run).steps(&source),
    )
    .await;
    let e = other_engine.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Engine, "{e}");
    let named = Recorder::start(
        &server.base_url,
        RecordOptions::default()
            .folder(&run)
            .engine(Engine::Sglang)
            .steps(&source),
    )
    .await;
    let e = named.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Engine, "{e}");
    assert!(e.to_string().contains("the step plugin is vLLM's"), "{e}");
    let left: Vec<_> = std::fs::read_dir(&run)
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "left behind by recordings that never began: {left:?}"
    );
}
