//! A harness as a user writes one, through `inferlint`'s documented API only: the three
//! uses, each in at most 15 lines (from its `pub fn` line to its closing brace, as
//! rustfmt lays it out; `tests/contract.rs` counts them between the `use:` markers and
//! fails past 15):
//!
//! - [`check_folder`]: a recorded run folder, checked offline (7 lines);
//! - [`benchmark`]: a server recorded while the load runs, then checked (14 lines);
//! - [`check_own_data`]: the harness's own readings and request records (14 lines).

use std::path::Path;

use inferlint::live::{Health, RecordOptions, Recorder};
use inferlint::sim::{self, LoadConfig};
use inferlint::{ClientSummary, Engine, Error, Outcome, Report, RequestRecord, Run};

/// What one benchmark run gave: the load's counts, the recording's health and the
/// checked run.
#[derive(Debug)]
pub struct Checked {
    /// The load's own account.
    pub client: ClientSummary,
    /// How the recording went.
    pub health: Health,
    /// The report on the run.
    pub report: Report,
}

// use: offline check begins
pub fn check_folder(dir: &Path) -> Result<Outcome, Error> {
    let report = Run::from_dir(dir)?.check();
    for r in report.results() {
        println!("{} {:?} {}", r.tripwire(), r.status(), r.message());
    }
    Ok(report.outcome())
}
// use: offline check ends

// use: live record-and-check begins
pub async fn benchmark(url: &str, boot_log: &str, load: LoadConfig) -> Result<Checked, Error> {
    let options = RecordOptions::default().requested(load.concurrency as u64);
    let recorder = Recorder::start(url, options).await?; // the before reading is taken
    let result = sim::run_in_runtime(url, load).await; // your load goes here
    let recording = recorder.finish().await; // never an error: the health says
    let client = ClientSummary::from(&result.expect("the simulated load runs"));
    let run = Run::from_recording(&recording).boot_log(boot_log);
    let report = run.client(client.clone()).build()?.check();
    Ok(Checked {
        client,
        health: recording.health().clone(),
        report,
    })
}
// use: live record-and-check ends

// use: own data begins
pub fn check_own_data(
    readings: &[(String, f64)],
    gpu: inferlint::GpuReading,
    requests: &[RequestRecord],
) -> Result<Report, Error> {
    let (first, last) = (&readings[0], &readings[readings.len() - 1]);
    let mut run = Run::builder().engine(Engine::Vllm).requested(8);
    run = run.before_metrics_at(&first.0, first.1)?;
    for (text, t_wall) in &readings[1..readings.len() - 1] {
        run = run.sample_metrics_with_gpu(text, *t_wall, gpu)?;
    }
    let run = run.after_metrics_at(&last.0, last.1)?;
    Ok(run.requests(requests.iter().copied()).build()?.check())
}
// use: own data ends
