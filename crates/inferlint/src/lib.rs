//! Checks an LLM inference benchmark run (vLLM, SGLang, TensorRT-LLM) against what the
//! server itself recorded: the crate a benchmark harness adds.
//!
//! A run is what the server and the load left: the server's boot log, its Prometheus
//! `/metrics` read before and after the load, a series sampled during it, and the load's
//! own account. Checking it answers each tripwire (T1 to T21) with **Pass**,
//! **Warning**, **Tripwire failed**, **Can't tell** (never silently a pass) or **Does not
//! apply**, and lists each tripwire whose input was missing as not checked. The checks
//! are the ones the `inferlint` command line runs: the same run gives the same verdicts
//! through either.
//!
//! # Quick start
//!
//! A run folder, as `inferlint report DIR` reads it:
//!
//! ```
//! # let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/sim/vllm-hybrid");
//! let run = inferlint::Run::from_dir(dir)?;
//! let report = run.check();
//! for result in report.results() {
//!     println!("{} {:?} {}", result.tripwire(), result.status(), result.message());
//! }
//! for missing in report.not_checked() {
//!     println!("{} not checked: {}", missing.tripwire(), missing.message());
//! }
//! assert_eq!(report.outcome(), inferlint::Outcome::TripwireFailed);
//! # Ok::<(), inferlint::Error>(())
//! ```
//!
//! Your own data: the `/metrics` text your harness scraped, and its client's counts.
//!
//! ```
//! use inferlint::{ClientSummary, Engine, Run, Status, Tripwire};
//!
//! let metrics = |finished: u64, tokens: u64, preempted: u64| {
//!     format!(
//!         "vllm:request_success_total{{finished_reason=\"length\"}} {finished}\n\
//!          vllm:generation_tokens_total {tokens}\n\
//!          vllm:prompt_tokens_total {}\n\
//!          vllm:num_preemptions_total {preempted}\n",
//!         finished * 88
//!     )
//! };
//! let run = Run::builder()
//!     .engine(Engine::Vllm)
//!     .before_metrics_at(&metrics(0, 0, 0), 1_700_000_000.0)?
//!     .after_metrics_at(&metrics(32, 32_000, 16), 1_700_000_120.0)?
//!     .client(ClientSummary {
//!         completed: 32,
//!         failed: 0,
//!         output_tokens: 32_000,
//!         duration_s: 99.0,
//!         ..Default::default()
//!     })
//!     .build()?;
//! let report = run.check();
//! let t1 = report.results().iter().find(|r| r.tripwire() == Tripwire::T1).unwrap();
//! assert_eq!(t1.status(), Status::Fail);
//! assert_eq!(t1.evidence_f64("preemptions"), Some(16.0));
//! println!("{}", serde_json::to_string_pretty(&report).unwrap());
//! # Ok::<(), inferlint::Error>(())
//! ```
//!
//! Garbage is an error, never a panic and never a pass:
//!
//! ```
//! let error = inferlint::Run::builder().after_metrics("<html>502 Bad Gateway</html>");
//! let error = error.unwrap_err();
//! assert_eq!(error.kind(), inferlint::ErrorKind::Invalid);
//! assert_eq!(error.input(), Some("the after metrics"));
//!
//! let missing = inferlint::Run::from_dir("/no/such/run").unwrap_err();
//! assert_eq!(missing.kind(), inferlint::ErrorKind::NoRun);
//! assert_eq!(missing.to_string(), "/no/such/run is not a folder");
//! ```
//!
//! Live (feature `live`): record a server while your load runs, inside your own tokio
//! runtime, then check the recording (the `live` module, compiled in with the feature,
//! says more; `examples/harness.rs` records the simulated server under a load and prints
//! the report as JSON):
//!
//! ```no_run
//! # #[cfg(feature = "live")]
//! # async fn harness(my_load: impl std::future::Future<Output = ()>) -> Result<(), inferlint::Error> {
//! use inferlint::live::{record, RecordOptions, Stop};
//!
//! let stop = Stop::new();
//! let options = RecordOptions::default();
//! let recorder = record("http://127.0.0.1:8000", &options, stop.stopped());
//! let load = async {
//!     my_load.await;
//!     stop.stop();
//! };
//! let (recording, ()) = tokio::join!(recorder, load);
//! let report = inferlint::Run::from_recording(&recording?)
//!     .requested(32)
//!     .build()?
//!     .check();
//! println!("{}", report.to_json());
//! # Ok(())
//! # }
//! ```
//!
//! A fleet folder (`fleet.json` and one run folder per replica, as `inferlint watch URL
//! URL …` writes it) is read with [`Fleet::from_dir`] and checked with [`Fleet::check`]:
//! each replica's [`Report`], and T22 (replicas unevenly loaded) on the fleet's grid.
//! [`repeats`] finds the run folders of one side of a comparison: the folder itself, or
//! each of its subfolders that holds a run.
//!
//! # Features
//!
//! | feature | adds |
//! |---|---|
//! | (default) | reading run folders and your own data, every check, the report as data and JSON |
//! | `live` | `live::record` (async), `live::blocking::record`, `Run::from_recording` |
//! | `report` | `Run::html`: the self-contained HTML report |
//! | `gpu` | `gpu::free_card`: T2 on this machine's NVIDIA GPUs |
//! | `sim` | the `sim` module: the simulated server and load, for a harness's tests |
//!
//! # Errors
//!
//! Every fallible call returns [`Error`]: a [`ErrorKind`] to match on (non-exhaustive),
//! the path or input it concerns, and the one-line message `inferlint` prints for the
//! same failure. A check that cannot decide is not an error: it is a result with status
//! [`Status::Unknown`] (Can't tell) and the reason in its message.
//!
//! # What is stable
//!
//! This crate's own items follow semver from 0.1: [`Run`], [`RunBuilder`],
//! [`ClientSummary`], [`Report`], [`Error`], [`ErrorKind`], [`Fleet`] (but
//! [`Fleet::read`] and [`Replica::files`]), [`FleetReport`], [`repeats`], the `live` and
//! `gpu` functions, and the re-exported [`CheckResult`] methods, [`Status`], [`Tripwire`],
//! [`Outcome`], [`Engine`] and [`Insight`]. Within 0.x a breaking change bumps the minor
//! version. Stable too: the JSON a [`Report`] serialises to, and the `--json` contract
//! ([`Report::to_json`], versioned by `inferlint_core::contract::JSON_CONTRACT_VERSION`).
//!
//! Not stable: the messages' wording (match on statuses, tripwire ids and evidence keys,
//! not on text); the evidence keys a check writes, which may grow (`inferlint_core`'s
//! `evidence` module lists them); the public fields of `CheckResult`, of [`Insight`] and
//! of `live::Recording` (read them through the methods where there are some); the
//! `sim` module; [`Run::model`]; and the workspace's other crates (`inferlint-core`,
//! `inferlint-engines`, `inferlint-live`, `inferlint-report`, `inferlint-gpu`,
//! `inferlint-sim`), whose APIs serve the command line and change with it.

#![deny(missing_docs)]

mod error;
mod fleet;
#[cfg(feature = "report")]
mod html;
mod own_data;
mod repeats;
mod report;
mod run;

#[cfg(feature = "gpu")]
pub mod gpu;
#[cfg(feature = "live")]
pub mod live;
#[cfg(feature = "sim")]
pub mod sim;

pub use error::{Error, ErrorKind};
pub use fleet::{Fleet, FleetReport, Replica};
pub use inferlint_core::fleet_grid::FleetGrid;
pub use inferlint_core::insights::Insight;
pub use inferlint_core::status::{CheckResult, Evidence, Outcome, Status, Tripwire};
pub use inferlint_core::Engine;
pub use own_data::{GpuReading, RequestRecord};
pub use repeats::repeats;
pub use report::Report;
pub use run::{CheckOptions, ClientSummary, Run, RunBuilder};
