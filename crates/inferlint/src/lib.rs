//! Checks an LLM inference benchmark run (vLLM, SGLang, TensorRT-LLM) against what the
//! server itself recorded: the crate a benchmark harness adds.
//!
//! ```toml
//! [dependencies]
//! inferlint = { path = "../inferlint/crates/inferlint" }                     # file checks only
//! inferlint = { path = "../inferlint/crates/inferlint", features = ["live"] } # and recording
//! ```
//!
//! A run is what the server and the load left: the server's boot log, its Prometheus
//! `/metrics` read before and after the load, a series sampled during it, and the load's
//! own account. Checking it answers each tripwire (T1 to T31; T22 on a fleet) with
//! **Pass**, **Warning**, **Tripwire failed**, **Can't tell** (never silently a pass) or
//! **Does not apply**, and lists each tripwire whose input was missing as not checked.
//! The checks are the ones the `inferlint` command line runs: the same run gives the same
//! verdicts through either.
//!
//! # Three uses
//!
//! Each is at most 15 lines as a harness writes it: `examples/external-harness/src/lib.rs`
//! holds them as functions of 7, 14 and 14 lines (counted from the `fn` line to the
//! closing brace, as rustfmt lays them out), and its contract test fails when one grows
//! past 15. Below they are the same calls, run as this crate's tests.
//!
//! **A recorded run folder**, read as `inferlint report DIR` reads it:
//!
//! ```
//! # let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/sim/vllm-hybrid");
//! let report = inferlint::Run::from_dir(dir)?.check();
//! for r in report.results() {
//!     println!("{} {:?} {}", r.tripwire(), r.status(), r.message());
//! }
//! for missing in report.not_checked() {
//!     println!("{} not checked: {}", missing.tripwire(), missing.message());
//! }
//! assert_eq!(report.outcome(), inferlint::Outcome::TripwireFailed);
//! # Ok::<(), inferlint::Error>(())
//! ```
//!
//! **Live** (features `live`; `sim` for the simulated server here): the recorder returns
//! once the before reading is taken, your load runs, and `finish` always gives the
//! recording back, with its health and the after reading as a `Result`:
//!
//! ```
//! # #[cfg(not(all(feature = "live", feature = "sim")))] fn main() {}
//! # #[cfg(all(feature = "live", feature = "sim"))]
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), inferlint::Error> {
//! # use inferlint::sim;
//! # let server = sim::spawn(sim::ServerConfig::new(inferlint::Engine::Vllm)).unwrap();
//! # let (url, boot_log) = (server.base_url.clone(), server.boot_log());
//! use inferlint::live::{RecordOptions, Recorder};
//!
//! let recorder = Recorder::start(&url, RecordOptions::default().requested(4)).await?;
//! let load = sim::LoadConfig { requests: 8, concurrency: 4, ..Default::default() };
//! let result = sim::run_in_runtime(&url, load).await.expect("your load goes here");
//! let recording = recorder.finish().await; // never an error: the health says
//! assert_eq!(recording.health().failed(), 0);
//! let run = inferlint::Run::from_recording(&recording).boot_log(&boot_log);
//! let report = run.client((&result).into()).build()?.check();
//! println!("{}", report.to_json());
//! # Ok(())
//! # }
//! ```
//!
//! A recording whose after reading failed (the server died) is checked all the same:
//! the checks that need the after reading say Can't tell and name why it is missing;
//! the boot log's, the series' and the client's are judged. `live::Recorder::events`
//! streams the samples, gaps, restarts and mid-run verdicts while the load runs.
//!
//! **Your own data**: the `/metrics` text your harness read, a GPU reading with each
//! sample, and one record per request its client sent:
//!
//! ```
//! use inferlint::{Engine, GpuReading, RequestRecord, Run, Status, Tripwire};
//! # let counts = |done: u64| format!("vllm:request_success_total {done}\nvllm:generation_tokens_total {}\nvllm:prompt_tokens_total {}\nvllm:num_preemptions_total 0\n", done * 1000, done * 50);
//! # let (before, after) = (counts(0), counts(8));
//! # let busy = "vllm:num_requests_running 8\nvllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 0.4\n";
//! # let t0 = 1_700_000_000.0;
//! # let samples: Vec<(&str, f64)> = (1..=10).map(|i| (busy, t0 + i as f64)).collect();
//! # let requests: Vec<RequestRecord> = (0..8).map(|i| { let s = t0 + 0.5 + i as f64 * 0.01; RequestRecord::new(s, s + 10.0).first_token(s + 0.1).tokens(50, 1000) }).collect();
//! let gpu = GpuReading::default().util(95.0).other_process(0.0, 0.0);
//! let mut run = Run::builder().engine(Engine::Vllm).requested(8);
//! run = run.before_metrics_at(&before, t0)?;
//! for (text, t_wall) in samples {
//!     run = run.sample_metrics_with_gpu(text, t_wall, gpu)?;
//! }
//! let run = run.after_metrics_at(&after, t0 + 12.0)?.requests(requests).build()?;
//! let report = run.check();
//! let t15 = report.results().iter().find(|r| r.tripwire() == Tripwire::T15).unwrap();
//! assert_eq!(t15.status(), Status::Pass); // 8 requests, 8000 tokens on both sides
//! # Ok::<(), inferlint::Error>(())
//! ```
//!
//! A [`ClientSummary`] stands for the request records when the client kept only its
//! counts. Garbage is an error, never a panic and never a pass:
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
//! A fleet folder (`fleet.json` and one run folder per replica, as `inferlint watch URL
//! URL …` writes it) is read with [`Fleet::from_dir`] and checked with [`Fleet::check`]:
//! each replica's [`Report`], and T22 (replicas unevenly loaded) on the fleet's grid.
//! [`FleetReader`] reads the same fleet one replica at a time, holding one replica's run
//! where [`Fleet`] holds them all: for hundreds of replicas over a day.
//! [`repeats`] finds the run folders of one side of a comparison: the folder itself, or
//! each of its subfolders that holds a run.
//!
//! # When to take the boot log
//!
//! Give [`RunBuilder::boot_log`] the server's output from its start until after the
//! load, not only until it is ready: T19 (cold engine) fails on compile or graph-capture
//! lines logged inside the run's window, which a log cut at the ready line cannot hold;
//! T1 on TensorRT-LLM counts preemptions from the log saved until after the run; T7 fails
//! on a failure logged after the ready line.
//!
//! # Features
//!
//! | feature | adds | pulls in |
//! |---|---|---|
//! | (default) | run folders, your own data, every check, the report as data and JSON | serde, serde_json, thiserror, memchr, rmp-serde (KV event batches), nix (the monotonic clock on Unix), chrono and chrono-tz |
//! | `live` | `live::Recorder` (async), `live::blocking::record`, `Run::from_recording` | tokio (rt, net, time, signal, sync), hyper and hyper-util (HTTP/1 client), zeromq (KV events), opentelemetry-proto and prost (OTLP spans), flate2, base64 |
//! | `report` | `Run::html`: the self-contained HTML report | maud, sha2 and base64 (the Content-Security-Policy's hashes) |
//! | `gpu` | `gpu::free_card`: T2 on this machine's NVIDIA GPUs | nvml-wrapper (NVML loaded at run time, no link to the driver), rustix |
//! | `sim` | the `sim` module: the simulated server and load, for a harness's tests | tokio, hyper (server and client), opentelemetry-proto and prost, zeromq, rmp; no clap |
//!
//! # Errors
//!
//! Every fallible call returns [`Error`]: a [`ErrorKind`] to match on (non-exhaustive),
//! the path or input it concerns, and a one-line message. A check that cannot decide is
//! not an error: it is a result with status [`Status::Unknown`] (Can't tell) and the
//! reason in its message. `From<std::io::Error>` lets a harness put its own I/O under
//! the same type.
//!
//! # Blocking
//!
//! Nothing here is async but the live recorder. The calls that read files or wait on the
//! network or a device block the calling thread until they are done, and say so under
//! **Blocking**: [`Run::from_dir`] and [`Run::from_dir_as`], `Run::html` (which may read
//! the recording again), [`Fleet::from_dir`] and [`Fleet::check`],
//! [`FleetReader::from_dir`], [`FleetReader::next_replica`] and [`FleetReader::finish`],
//! [`repeats`], `gpu::free_card` and `live::blocking::record`. [`Run::check`] reads
//! nothing but is CPU work over the whole run. An async harness calls them inside
//! `tokio::task::spawn_blocking` (or its runtime's equivalent):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), inferlint::Error> {
//! # let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/sim/vllm-hybrid");
//! let checked = tokio::task::spawn_blocking(move || {
//!     inferlint::Run::from_dir(dir).map(|run| run.check())
//! });
//! let report = checked.await.expect("the check ran to its end")?;
//! # let _: &inferlint::Report = &report;
//! # Ok(())
//! # }
//! ```
//!
//! `live::Recorder` is async and does its own blocking work (starting the span receiver
//! and the KV subscriber, waiting for the server's last spans) on tokio's blocking
//! threads.
//!
//! # What is stable
//!
//! This crate's own items follow semver from 0.1: [`Run`], [`RunBuilder`],
//! [`CheckOptions`], [`ClientSummary`], [`RequestRecord`], [`GpuReading`], [`Report`],
//! [`Error`], [`ErrorKind`], [`Fleet`], [`Replica`], [`FleetReader`], [`FleetReport`],
//! [`repeats`], the `live` and `gpu` items, and the re-exported [`CheckResult`] and
//! [`Insight`] methods, [`Status`], [`Tripwire`], [`Outcome`], [`Engine`] and
//! [`FleetGrid`]. Within 0.x a breaking change bumps the minor version. The enums and the
//! structs that may grow are `#[non_exhaustive]` ([`Status`], [`Outcome`],
//! [`ErrorKind`], [`Engine`], `live::RecordEvent`, [`CheckOptions`],
//! `live::RecordOptions`, `gpu::ClearRule`, [`ClientSummary`], [`RequestRecord`],
//! [`GpuReading`], [`CheckResult`], [`Insight`], [`FleetGrid`]): match with a wildcard
//! arm, make them with their constructors and setters. No signature of this crate's own
//! items names a type of the workspace's other crates that it does not export (CI holds
//! it: `cargo xtask public-api --check` lists every public item, every feature on, in
//! the repository's `docs/public-api.txt`, and fails on such a type or a stale list;
//! items hidden from these docs are outside it); of the
//! re-exported core types, the methods that do are outside the stable API, as their
//! types are (`Engine::descriptor`, `Engine`'s `FromStr` error: use [`Engine::parse`];
//! `FleetGrid::of`, `FleetGrid::balance`). Stable too: the JSON a [`Report`] serialises
//! to (but its `account`), and the `--json` contract ([`Report::to_json`]).
//!
//! Not stable: the messages' wording (match on statuses, tripwire ids and evidence keys,
//! not on text); the evidence keys a check writes, which may grow; the public fields of
//! `CheckResult` and of [`Insight`] (read them through their methods); the `sim` module;
//! the [`slo`] and [`whatif`] modules (new, re-exported from core, their fields may still
//! change); and the workspace's other crates
//! (`inferlint-core`, `inferlint-engines`, `inferlint-live`, `inferlint-report`,
//! `inferlint-gpu`, `inferlint-sim`), whose APIs serve the command line and change with
//! it. The command line does not reach into this crate: it reads and checks a run
//! through the one path this crate's [`Run::check`] takes too (the engines crate's
//! `load::check_files` over core's `run::check`).

#![cfg_attr(docsrs, feature(doc_cfg))]
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
#[cfg_attr(docsrs, doc(cfg(feature = "gpu")))]
pub mod gpu;
#[cfg(feature = "live")]
#[cfg_attr(docsrs, doc(cfg(feature = "live")))]
pub mod live;
#[cfg(feature = "sim")]
#[cfg_attr(docsrs, doc(cfg(feature = "sim")))]
pub mod sim;
pub mod slo;
pub mod whatif;

/// `docs/library.md`, whose code blocks run as this crate's tests.
#[cfg(all(doctest, feature = "live", feature = "sim"))]
#[doc = include_str!("../../../docs/library.md")]
mod library_md {}

pub use error::{Error, ErrorKind};
pub use fleet::{Fleet, FleetReader, FleetReport, Replica};
pub use inferlint_core::analyses::fleet_grid::FleetGrid;
pub use inferlint_core::judging::status::{CheckResult, Evidence, Outcome, Status, Tripwire};
pub use inferlint_core::story::insights::Insight;
pub use inferlint_core::Engine;
pub use own_data::{GpuReading, RequestRecord};
pub use repeats::repeats;
pub use report::Report;
pub use run::{CheckOptions, ClientSummary, Run, RunBuilder};
