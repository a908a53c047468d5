//! A benchmark harness that checks every run it makes: it starts the simulated vLLM
//! server in-process, records it while a load runs at two concurrencies, checks each run
//! and prints its report as JSON.
//!
//! ```sh
//! cargo run -p inferlint --features live,sim --example harness
//! ```
//!
//! It exits 1 when a run failed a tripwire, 2 when a run could not be told, 0 otherwise.
//! Against a real server, replace `sim::spawn` with the server's address and the
//! simulated load with your own.

use std::time::Duration;

use inferlint::live::{RecordOptions, Recorder};
use inferlint::sim::{self, LoadConfig, ServerConfig};
use inferlint::{ClientSummary, Engine, Outcome, Run};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut worst = Outcome::Passed;
    for concurrency in [4, 16] {
        let report = one_run(concurrency).await?;
        println!("{}", serde_json::to_string_pretty(&report)?);
        worst = match (worst, report.outcome()) {
            (Outcome::TripwireFailed, _) | (_, Outcome::TripwireFailed) => Outcome::TripwireFailed,
            (Outcome::Undecided, _) | (_, Outcome::Undecided) => Outcome::Undecided,
            _ => Outcome::Passed,
        };
    }
    std::process::exit(match worst {
        Outcome::Passed => 0,
        Outcome::TripwireFailed => 1,
        // Undecided, and any outcome a later release adds: not a pass.
        _ => 2,
    });
}

/// Starts a fresh server, records it while the load runs, and checks the run.
async fn one_run(
    concurrency: usize,
) -> Result<inferlint::Report, Box<dyn std::error::Error + Send + Sync>> {
    // A small simulated vLLM on 127.0.0.1 (a pool of eight 256-token requests), slowed
    // so that the recording sees requests running. It stops when dropped.
    let server = sim::spawn(ServerConfig {
        speed: 10.0,
        ..ServerConfig::new(Engine::Vllm)
    })?;
    let url = server.base_url.clone();
    let options = RecordOptions::default()
        .interval(Duration::from_millis(50))
        .engine(Engine::Vllm)
        .requested(concurrency as u64)
        // However long the load takes, the series ends.
        .duration(Duration::from_secs(120));
    // Returns once the before reading is taken: the load below cannot run ahead of it.
    let recorder = Recorder::start(&url, options).await?;
    let load = sim::run_in_runtime(
        &url,
        LoadConfig {
            requests: 16,
            concurrency,
            prompt_tokens: 32,
            output_tokens: 200,
            ..LoadConfig::default()
        },
    )
    .await?;
    let recording = recorder.finish().await;
    let run = Run::from_recording(&recording)
        .boot_log(&server.boot_log())
        .client(ClientSummary::from(&load))
        .build()?;
    for note in run.notes() {
        eprintln!("note: {note}");
    }
    Ok(run.check())
}
