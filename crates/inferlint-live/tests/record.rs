//! `record` beside a load, inside the caller's own runtime, as a harness runs it.

use std::time::Duration;

use inferlint_core::Engine;
use inferlint_engines::files;
use inferlint_live::{record, RecordError, RecordOptions, Stop};
use inferlint_sim::load::{self, LoadConfig};
use inferlint_sim::server::{self, ServerConfig};

use crate::common::samples_written;

fn load_config() -> LoadConfig {
    LoadConfig {
        requests: 16,
        concurrency: 8,
        prompt_tokens: 32,
        output_tokens: 200,
        ..LoadConfig::default()
    }
}

/// The recording spans the load: the server's counters moved by every request the load
/// completed, the series saw requests running, and the engine is the server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_beside_a_load_holds_the_load() {
    // Slow enough (two waves of about 0.8 s) for readings every 50 ms to see requests
    // running.
    let server = server::spawn(ServerConfig {
        speed: 5.0,
        ..ServerConfig::new(Engine::Vllm)
    })
    .unwrap();
    let url = server.base_url.clone();
    let stop = Stop::new();
    let dir = tempfile::tempdir().unwrap();
    let series = dir.path().join("run").join("run.series.jsonl");
    let options = RecordOptions::default()
        .interval(Duration::from_millis(50))
        .folder(dir.path().join("run"));
    let recording = {
        let stop = stop.clone();
        let url = url.clone();
        tokio::spawn(async move { record(&url, &options, stop.stopped()).await })
    };
    // The load starts once the before reading is taken (it is the first sample), not when a spawned task happens to have run: the 17
    // requests below are then all between the readings, on any machine.
    samples_written(&series, 1).await;
    let load = load::run_in_runtime(&url, load_config()).await.unwrap();
    stop.stop();
    let recording = recording.await.unwrap().unwrap();
    assert_eq!(recording.engine, Engine::Vllm);
    assert_eq!(load.completed(), 16);
    let finished = |s: &inferlint_core::Snapshot| {
        s.metrics
            .total_matching(Engine::Vllm.descriptor().request_success, &[])
            .unwrap()
    };
    // The load's 16 timed requests and its untimed test request.
    assert_eq!(
        finished(&recording.after) - finished(&recording.before),
        17.0
    );
    assert!(recording.samples.len() >= 2, "{}", recording.samples.len());
    assert_eq!(recording.samples.len() as u64, recording.progress.samples);
    assert!(recording.series.peak_running.unwrap() >= 1.0);
    // A slot missed because a scrape outran the 50 ms interval is a gap the recording
    // states (2 shared cores under a parallel test run can do that); any other note is not.
    let unexpected: Vec<&String> = recording
        .notes
        .iter()
        .filter(|n| !n.starts_with("gap: "))
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:?}");
}

/// Asked for a folder, the recording is also written where `inferlint report DIR`
/// reads it, and the file reads back to the samples held in memory.
#[tokio::test]
async fn a_recording_is_written_to_a_run_folder_when_asked() {
    let server = server::spawn(ServerConfig::new(Engine::Sglang)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("run");
    let options = RecordOptions::default()
        .interval(Duration::from_millis(50))
        .engine(Engine::Sglang)
        .folder(&folder);
    // Stopped once the file holds three samples: what is read back is then at least
    // those, on any machine.
    let series = folder.join("run.series.jsonl");
    let recording = record(&server.base_url, &options, samples_written(&series, 3))
        .await
        .unwrap();
    let mut read_back = Vec::new();
    files::read_series(&series, |s| read_back.push(*s)).unwrap();
    assert!(read_back.len() >= 3, "{} samples", read_back.len());
    assert_eq!(read_back.len(), recording.samples.len());
    assert_eq!(
        files::read_snapshot(&folder.join("after.snapshot.json"))
            .unwrap()
            .t_wall,
        recording.after.t_wall
    );
    assert!(folder.join("before.snapshot.json").is_file());
    // A second recording into the same folder is refused: it would replace the first.
    let again = record(&server.base_url, &options, std::future::ready(())).await;
    assert!(matches!(again, Err(RecordError::Output(_))), "{again:?}");
}

/// A server of another engine than the one asked for, an address that is no server
/// and one where nothing listens: errors that say so.
#[tokio::test]
async fn what_is_not_the_asked_server_is_an_error() {
    let server = server::spawn(ServerConfig::new(Engine::Trtllm)).unwrap();
    let options = RecordOptions::default().engine(Engine::Vllm);
    let wrong = record(&server.base_url, &options, std::future::ready(())).await;
    let message = wrong.as_ref().unwrap_err().to_string();
    assert!(matches!(wrong, Err(RecordError::Mismatch(_))), "{message}");
    assert!(message.contains("runs TensorRT-LLM"), "{message}");

    let garbage = record("ftp://x", &RecordOptions::default(), std::future::ready(())).await;
    assert!(
        matches!(garbage, Err(RecordError::Address(_))),
        "{garbage:?}"
    );

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let nothing = record(
        &format!("127.0.0.1:{port}"),
        &RecordOptions::default(),
        std::future::ready(()),
    )
    .await;
    assert!(
        matches!(nothing, Err(RecordError::NoMetrics { .. })),
        "{nothing:?}"
    );
}
