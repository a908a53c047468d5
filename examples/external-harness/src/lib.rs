//! A harness as a user writes one: it records a server while its load runs, on its own
//! tokio runtime, and checks the run. Only `inferlint`'s public API is used.

use std::time::Duration;

use inferlint::live::{record, RecordOptions, Stop};
use inferlint::sim::{self, LoadConfig};
use inferlint::{ClientSummary, Error, Report, Run};

/// What one benchmark run gave: the load's counts and the checked run.
#[derive(Debug)]
pub struct Checked {
    /// The load's own account.
    pub client: ClientSummary,
    /// The report on the run.
    pub report: Report,
}

/// Runs `load` against the server at `url` while recording it, then checks the run
/// with the server's boot log.
pub async fn benchmark(url: &str, boot_log: &str, load: LoadConfig) -> Result<Checked, Error> {
    let stop = Stop::new();
    let options = RecordOptions::default()
        .interval(Duration::from_millis(50))
        .duration(Duration::from_secs(120));
    let requested = load.concurrency as u64;
    let recorder = record(url, &options, stop.stopped());
    let load = async {
        let result = sim::run_in_runtime(url, load).await;
        stop.stop();
        result
    };
    let (recording, load) = tokio::join!(recorder, load);
    let load = load.expect("the simulated load runs");
    let client = ClientSummary::from(&load);
    let report = Run::from_recording(&recording?)
        .boot_log(boot_log)
        .client(client.clone())
        .requested(requested)
        .build()?
        .check();
    Ok(Checked { client, report })
}
