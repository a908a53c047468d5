//! The run model: whatever a run left, already read, and what a reader of it asks first
//! (is it a benchmark at all; the server's account of it; its requests on the recording).

use crate::engine::EngineDescriptor;
use crate::judging::checks::counters::{counter_delta, out_of_order, restart_between};
use crate::judging::checks::ledger::{self, ServerOutcomes};
use crate::judging::checks::series::SeriesStats;
use crate::model::client::ClientAccount;
use crate::model::lives::{self, Lives};
use crate::model::requests::{self, RequestTimeline};
use crate::model::traces::{KvEvents, ServerRequests};
use crate::model::{BootFacts, Snapshot};

/// The inputs a not-checked tripwire can name, as `evidence.needs` spells them.
pub mod input {
    /// The server's boot log.
    pub const BOOT_LOG: &str = "boot_log";
    /// The before reading.
    pub const BEFORE: &str = "before";
    /// The after reading.
    pub const AFTER: &str = "after";
    /// A recording of the run.
    pub const SERIES: &str = "series";
    /// The load tool's result file.
    pub const BENCH_RESULT: &str = "bench_result";
    /// The concurrency the load asked for.
    pub const REQUESTED: &str = "requested";
    /// A load that sent requests: the run was not a benchmark.
    pub const LOAD: &str = "load";
    /// NVML readings of the server's GPUs beside the recording's samples.
    pub const GPU_READINGS: &str = "gpu_readings";
    /// The probe's requests to a live server (T7), which xray sends unless told not to.
    pub const PROBE: &str = "probe";
    /// The server's own record of each request (its spans, its per-request metrics).
    pub const SERVER_REQUESTS: &str = "server_requests";
    /// The KV-cache event stream a recorder received.
    pub const KV_EVENTS: &str = "kv_events";
    /// Each engine step, as the server's step plugin recorded it.
    pub const STEPS: &str = "steps";
}

/// What the user said about how the run is meant to be read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// The run is meant to reuse prompt prefixes (a multi-turn or shared-prefix workload):
    /// T16 reports the cache's share without warning.
    pub expect_cache_hits: bool,
    /// The boot log is the live output of a server still running (xray checks before it
    /// stops the server): everything logged until now is in it, so it covers the run.
    pub live_log: bool,
}

/// Whatever a run left, already read. Every part is optional.
#[derive(Debug, Clone)]
pub struct Run {
    /// The engine's table.
    pub engine: &'static EngineDescriptor,
    /// Boot logs with the label each is shown under.
    pub boots: Vec<(String, BootFacts)>,
    /// The reading before the load.
    pub before: Option<Snapshot>,
    /// The reading after it.
    pub after: Option<Snapshot>,
    /// The recording, folded.
    pub series: Option<SeriesStats>,
    /// The load tool's result and the name it is shown under.
    pub bench: Option<(String, ClientAccount)>,
    /// Untimed requests the load tool announced (test request, warm-up).
    pub expected_extra_requests: u64,
    /// The concurrency the load asked for.
    pub requested: Option<u64>,
    /// Why the load command failed (`the load command exited with code 1`), when the
    /// caller ran it and it did.
    pub load_failure: Option<String>,
    /// The server's own account of each request (spans, per-request records), where the
    /// run kept one.
    pub server_requests: Option<ServerRequests>,
    /// The KV-cache event stream, where the run subscribed to it.
    pub kv_events: Option<KvEvents>,
    /// Each engine step, where the server's step plugin recorded them (`steps.jsonl`).
    pub steps: Option<crate::model::steps::Steps>,
    /// Inputs given for the run that are not of it (another run's result file, the next
    /// run's recording): set aside by [`crate::judging::identity::admit`] before any check, and
    /// read by nothing but the Can't tell of the checks that needed them.
    pub rejected: Vec<Rejected>,
    /// What a reader should know about how the inputs were placed (a wall clock that
    /// stepped, a result file left out).
    pub notes: Vec<String>,
}

impl Run {
    /// A run of `engine` with nothing given yet: a builder fills in what the run left.
    pub fn empty(engine: &'static EngineDescriptor) -> Run {
        Run {
            engine,
            boots: Vec::new(),
            before: None,
            after: None,
            series: None,
            bench: None,
            expected_extra_requests: 0,
            requested: None,
            load_failure: None,
            rejected: Vec::new(),
            server_requests: None,
            kv_events: None,
            steps: None,
            notes: Vec::new(),
        }
    }

    /// The value of `label` on the info metric `metric` (a setting the engine states as a
    /// label, like vLLM's `vllm:cache_config_info`), from the after reading, else the
    /// before one; `None` when absent, empty or Python's `None`.
    pub fn info_label(&self, metric: &str, label: &str) -> Option<String> {
        [self.after.as_ref(), self.before.as_ref()]
            .into_iter()
            .flatten()
            .find_map(|s| {
                s.metrics
                    .info(metric)?
                    .iter()
                    .find(|(k, _)| k == label)
                    .map(|(_, v)| v.clone())
            })
            .filter(|v| !v.is_empty() && v != "None")
    }

    /// The boot log that covers the run: the last one given.
    pub fn last_boot(&self) -> Option<&BootFacts> {
        self.boots.last().map(|(_, f)| f)
    }

    /// The server's account of the run from its counters, or why the snapshots give none;
    /// `None` without both snapshots.
    pub fn server_outcomes(&self) -> Option<Result<ServerOutcomes, String>> {
        let (before, after) = (self.before.as_ref()?, self.after.as_ref()?);
        Some(ledger::server_outcomes(self.engine, before, after))
    }

    /// The load tool's requests lined up with the recording, or why they cannot be;
    /// `None` without a result file or a recording.
    pub fn request_timeline(&self) -> Option<Result<RequestTimeline, String>> {
        let (_, account) = self.bench.as_ref()?;
        let series = self.series.as_ref()?;
        if account.requests.is_empty() {
            return None;
        }
        Some(requests::line_up(
            account,
            series,
            self.before.as_ref(),
            self.after.as_ref(),
        ))
    }

    /// The offset from the host's monotonic clock to its wall clock, seconds (`wall =
    /// mono + offset`), from the recording's first sample or a reading that carries both.
    pub fn mono_to_wall(&self) -> Option<f64> {
        // The first sample's two clocks, when every sample carries both.
        let from_series = self.series.as_ref().filter(|s| s.all_mono).and_then(|s| {
            let mono = s.first_t_mono_ns?;
            Some(s.first_t_wall? - mono as f64 / 1e9)
        });
        from_series.or_else(|| {
            [self.before.as_ref(), self.after.as_ref()]
                .into_iter()
                .flatten()
                .find_map(|r| Some(r.t_wall? - r.t_mono_ns? as f64 / 1e9))
        })
    }

    /// The load tool's rows joined with the server's own records of its requests;
    /// `None` without both.
    pub fn lives(&self) -> Option<Lives> {
        let (_, account) = self.bench.as_ref()?;
        let server = self.server_requests.as_ref()?;
        Some(lives::join(account, server, self.mono_to_wall()))
    }
}

/// Why the run is not a benchmark, if it is not: the load command failed, the load
/// tool's result counts no completed request, or the server finished none between its
/// readings (or, without readings, its recording shows none running).
pub fn not_a_benchmark(run: &Run) -> Option<String> {
    if let Some(failure) = &run.load_failure {
        return Some(failure.clone());
    }
    if let Some((name, bench)) = &run.bench {
        if bench.completed == Some(0) {
            return Some(format!(
                "the load tool's result file {name} counts no completed request"
            ));
        }
    }
    if let (Some(before), Some(after)) = (&run.before, &run.after) {
        // Readings that cannot be compared say nothing here; their checks say why.
        if restart_between(before, after).is_some() || out_of_order(before, after).is_some() {
            return None;
        }
        let finished = counter_delta(run.engine, before, after, run.engine.request_success);
        return (finished == Some(0.0)).then(|| {
            "the server finished no request between the before and the after reading".to_owned()
        });
    }
    // A lagging gauge can miss every request; only a live one shows that none ran. A
    // load tool that counts completed requests saw them answered: a recording that
    // caught none running (a server that died early, samples too sparse) missed them.
    if run
        .bench
        .as_ref()
        .is_some_and(|(_, b)| b.completed.is_some_and(|c| c > 0))
    {
        return None;
    }
    let stats = run.series.as_ref().filter(|_| !run.engine.gauges_lag)?;
    let idle = stats.running_readings > 0
        && stats.peak_running == Some(0.0)
        && stats.peak_in_flight.is_none_or(|p| p <= 0.0);
    idle.then(|| "the recording shows no request running or waiting".to_owned())
}

/// An input given for the run that is not of it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Rejected {
    /// Which input, as [`input`] names it.
    pub input: &'static str,
    /// Its name as the user gave it (`bench.json`, `the before reading`).
    pub name: String,
    /// Why it is not of this run, e.g. `it was saved at 2025-09-30 20:48:49 (in any time
    /// zone), outside the readings' 2026-10-01 03:47:07 to 03:48:49 UTC`.
    pub why: String,
    /// Whether it was set aside for what it holds, not for where it lies: a recording
    /// whose reader refused a line (`why` is then the reader's own sentence).
    pub untrusted: bool,
}

impl Rejected {
    /// `bench.json is not of this run: ...`, or the reader's sentence for an input that
    /// cannot be trusted.
    pub fn sentence(&self) -> String {
        if self.untrusted {
            self.why.clone()
        } else {
            format!("{} is not of this run: {}", self.name, self.why)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::VLLM;
    use crate::model::client::LoadTool;
    use crate::model::SeriesSample;

    /// A server that died early in the load: the recording's samples, before the
    /// requests ran and after the server stopped answering, show none running, and no
    /// after reading came; the client counts 16 completed requests, which the server
    /// answered. The run is a benchmark; a client that completed none and the same
    /// recording is not.
    #[test]
    fn a_server_that_died_early_with_completed_requests_is_a_benchmark() {
        let mut run = crate::testing::empty_run(&VLLM);
        let mut series = SeriesStats::new();
        for i in 0..4 {
            series.push(&SeriesSample {
                t_wall: 1000.0 + f64::from(i) * 0.25,
                running: Some(0.0),
                waiting: Some(0.0),
                kv_usage: Some(0.0),
                ..SeriesSample::default()
            });
        }
        run.series = Some(series);
        let account = |completed| ClientAccount {
            completed: Some(completed),
            ..ClientAccount::new(LoadTool::Harness)
        };
        run.bench = Some(("the client summary".into(), account(16)));
        assert_eq!(not_a_benchmark(&run), None);
        run.bench = Some(("the client summary".into(), account(0)));
        assert!(not_a_benchmark(&run).is_some());
        run.bench = None;
        assert_eq!(
            not_a_benchmark(&run).as_deref(),
            Some("the recording shows no request running or waiting")
        );
    }
}
