//! The blocking recorder refuses to run inside a runtime: it used to panic there
//! (tokio's "Cannot start a runtime from within a runtime").

use std::time::Duration;

use inferlint_core::Engine;
use inferlint_live::{blocking, RecordError, RecordOptions, Recorder, Stop};
use inferlint_sim::server::{self, ServerConfig};

use crate::common::wait_for_samples;

#[tokio::test]
async fn inside_a_runtime_the_blocking_api_is_an_error_not_a_panic() {
    assert!(matches!(Recorder::new(), Err(RecordError::InsideRuntime)));
    let result = blocking::record("127.0.0.1:1", &RecordOptions::default(), async {});
    let error = result.unwrap_err();
    assert!(matches!(error, RecordError::InsideRuntime), "{error}");
    assert!(error.to_string().contains("await inferlint_live::record"));
}

/// Outside one, it records, stopped from another thread once the recording's file holds
/// three samples.
#[test]
fn outside_a_runtime_the_blocking_api_records() {
    let server = server::spawn(ServerConfig::new(Engine::Vllm)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let series = dir.path().join("run").join("run.series.jsonl");
    let stop = Stop::new();
    let remote = stop.clone();
    let stopper = std::thread::spawn({
        let series = series.clone();
        move || {
            wait_for_samples(&series, 3);
            remote.stop();
        }
    });
    let options = RecordOptions::default()
        .interval(Duration::from_millis(50))
        .folder(dir.path().join("run"));
    let recording = blocking::record(&server.base_url, &options, stop.stopped()).unwrap();
    stopper.join().unwrap();
    assert_eq!(recording.engine, Engine::Vllm);
    assert!(recording.samples.len() >= 3, "{}", recording.samples.len());
}
