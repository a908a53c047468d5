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

/// A fleet's slot 0 is every replica's first scrape, however long before the schedule
/// it was taken: a large fleet's page choices can take more than half an interval, and
/// the sum then said that replicas which had answered were not read in slot 0.
#[test]
fn a_fleet_sums_slot_0_from_every_first_scrape_however_early() {
    use inferlint_live::fleet_watch::Member;
    use inferlint_live::watch::{Pages, WatchOptions};
    use inferlint_live::BaseUrl;

    let servers: Vec<_> = (0..3)
        .map(|_| server::spawn(ServerConfig::new(Engine::Vllm)).expect("a simulated server"))
        .collect();
    let recorder = Recorder::new().expect("a recorder");
    let first_of = |base: &str| {
        let mut scraper = recorder.scraper(BaseUrl::parse(base).expect("a base URL"));
        let (first, engine) = recorder.first_scrape(&mut scraper).expect("a first scrape");
        assert_eq!(engine, Engine::Vllm);
        (scraper, first)
    };
    // Two replicas answer their first scrape four intervals before the schedule starts,
    // the third just before it.
    let mut firsts = vec![
        first_of(&servers[0].base_url),
        first_of(&servers[1].base_url),
    ];
    std::thread::sleep(Duration::from_millis(400));
    firsts.push(first_of(&servers[2].base_url));
    let members: Vec<Member<Vec<u8>>> = firsts
        .into_iter()
        .map(|(scraper, first)| Member {
            scraper,
            first,
            out: Vec::new(),
        })
        .collect();
    let options = WatchOptions {
        interval: Duration::from_millis(100),
        duration: Some(Duration::from_millis(600)),
        pages: Pages::AskForLess,
    };
    let mut sum = Vec::new();
    let (progress, series) = recorder
        .watch_fleet(
            members,
            Engine::Vllm,
            &options,
            &mut sum,
            std::future::pending(),
        )
        .expect("a fleet recording");
    let sum = String::from_utf8(sum).expect("UTF-8");
    let lines: Vec<&str> = sum.lines().collect();
    // Every replica answered for slot 0, so the sum's first record after its header is a
    // sample of all three, not a gap.
    assert!(
        lines[1].starts_with("{\"t_wall\""),
        "slot 0 of the sum: {}",
        lines[1]
    );
    for replica in &series {
        let text = std::str::from_utf8(replica).expect("UTF-8");
        assert!(!text.contains("\"gap\""), "{text}");
    }
    assert!(
        progress.replicas.iter().all(|r| r.gaps == 0),
        "{progress:?}"
    );
    assert_eq!(progress.sum_gaps, 0, "{sum}");
    assert!(progress.summed >= 5, "{sum}");
}
