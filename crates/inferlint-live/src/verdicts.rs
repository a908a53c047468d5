//! Verdicts while the run goes on: each sample a recorder takes is folded in, and about
//! once a second the mid-run tripwires (T1, T8, T9, T14, T16, T17, T21) are judged again by
//! the core's own check functions ([`inferlint_core::judging::live`]). What changed since the last
//! judgement comes back as [`VerdictChange`]s, for a line in the log and a JSON line for
//! other programs; the latest verdicts and what limits the run now are for the status area.
//!
//! The judging runs after a sample is written and between two slots of the schedule, so
//! the sampler's timing does not depend on it (`scripts/measure-watch.sh` measures both).

use std::collections::BTreeMap;

use inferlint_core::judging::checks::series::SeriesStats;
use inferlint_core::judging::live::{self, LiveInputs};
use inferlint_core::judging::status::{CheckResult, Evidence, Status, Tripwire};
use inferlint_core::model::{BootFacts, SeriesSample, Snapshot};
use inferlint_core::Engine;
use serde::Serialize;

/// How often the verdicts are judged again, in seconds of the recording's clock.
pub const JUDGE_EVERY_S: f64 = 1.0;

/// One verdict that changed.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictChange {
    /// The wall clock of the sample it was judged at, Unix seconds.
    pub t_wall: f64,
    /// The monotonic clock of that sample, nanoseconds.
    pub t_mono_ns: Option<i64>,
    /// `None` for the first verdict a tripwire gets.
    pub previous: Option<Status>,
    /// The verdict now.
    pub result: CheckResult,
    /// What limited the run at that sample.
    pub limit: Option<String>,
}

impl VerdictChange {
    /// The change as one JSON line (without its line break).
    pub fn json_line(&self) -> String {
        // A struct, not `json!`: its keys stay in this order, and the evidence's in the
        // check's, whatever features serde_json was built with.
        let line = ChangeLine {
            t_wall: (self.t_wall * 1e6).round() / 1e6,
            t_mono_ns: self.t_mono_ns,
            tripwire: self.result.tripwire.to_string(),
            status: self.result.status.json_word(),
            previous: self.previous.map(Status::json_word),
            message: &self.result.message,
            evidence: &self.result.evidence,
            limit: self.limit.as_deref(),
        };
        serde_json::to_string(&line).expect("serialising plain data to memory cannot fail")
    }
}

/// A verdict change's JSON line, in its keys' order.
#[derive(Serialize)]
struct ChangeLine<'a> {
    t_wall: f64,
    t_mono_ns: Option<i64>,
    tripwire: String,
    status: &'static str,
    previous: Option<&'static str>,
    message: &'a str,
    evidence: &'a Evidence,
    limit: Option<&'a str>,
}

/// The mid-run verdicts of one recording.
#[derive(Debug)]
pub struct LiveVerdicts {
    engine: Engine,
    requested: Option<u64>,
    boot: Option<BootFacts>,
    expect_cache_hits: bool,
    stats: SeriesStats,
    first: Option<Snapshot>,
    latest: Option<Snapshot>,
    last_sample: Option<SeriesSample>,
    judged_at: Option<f64>,
    shown: BTreeMap<Tripwire, Status>,
    current: Vec<CheckResult>,
    limit: Option<String>,
    /// The recording ended: the last judgement.
    ended: bool,
}

impl LiveVerdicts {
    /// The verdicts of a recording of an `engine` server, judged against the concurrency
    /// the load asks for, the boot log's facts where given, and whether the run is meant
    /// to use the prefix cache.
    pub fn new(
        engine: Engine,
        requested: Option<u64>,
        boot: Option<BootFacts>,
        expect_cache_hits: bool,
    ) -> LiveVerdicts {
        LiveVerdicts {
            engine,
            requested,
            boot,
            expect_cache_hits,
            stats: SeriesStats::new(),
            first: None,
            latest: None,
            last_sample: None,
            judged_at: None,
            shown: BTreeMap::new(),
            current: Vec::new(),
            limit: None,
            ended: false,
        }
    }

    /// Tells the GPU sampling the recording does, as its header says.
    pub fn set_gpu_sampling(&mut self, gpu: Option<inferlint_core::model::GpuSampling>) {
        self.stats.gpu_sampling = gpu;
    }

    /// Folds one sample in (with the scrape it came from) and judges again when a second
    /// has passed since the last judgement. Returns the verdicts that changed.
    pub fn push(&mut self, sample: &SeriesSample, snapshot: &Snapshot) -> Vec<VerdictChange> {
        // A sample that cannot be is left out, as the file reader leaves it out.
        if sample.impossible_reading().is_some() {
            return Vec::new();
        }
        self.stats.push(sample);
        self.last_sample = Some(*sample);
        if self.first.is_none() {
            self.first = Some(without_text(snapshot));
        }
        let now = clock_s(sample);
        let due = self
            .judged_at
            .is_none_or(|at| now - at >= JUDGE_EVERY_S || now < at);
        if !due {
            return Vec::new();
        }
        // Copied only when judged (without its text: the checks read the parsed metrics
        // and the clocks), so that a sample costs the recorder the statistics alone.
        self.latest = Some(without_text(snapshot));
        self.judged_at = Some(now);
        self.judge()
    }

    /// The recording's last scrape, for the last judgement.
    pub fn last_scrape(&mut self, snapshot: &Snapshot) {
        if self.last_sample.is_some() {
            self.latest = Some(without_text(snapshot));
        }
    }

    /// Judges once more with everything folded in (the recording ended).
    pub fn finish(&mut self) -> Vec<VerdictChange> {
        if self.last_sample.is_none() {
            return Vec::new();
        }
        self.ended = true;
        self.judge()
    }

    fn judge(&mut self) -> Vec<VerdictChange> {
        let (Some(first), Some(latest), Some(sample)) =
            (self.first.as_ref(), self.latest.as_ref(), self.last_sample)
        else {
            return Vec::new();
        };
        let engine = self.engine.descriptor();
        let results = live::mid_run(&LiveInputs {
            engine,
            stats: &self.stats,
            first,
            latest,
            requested: self.requested,
            boot: self.boot.as_ref(),
            expect_cache_hits: self.expect_cache_hits,
            ended: self.ended,
        });
        self.limit = live::limit_now(
            engine,
            &sample,
            live::usable_blocks(engine, latest),
            self.requested,
            self.boot.as_ref(),
        );
        let mut changes = Vec::new();
        for r in &results {
            let previous = self.shown.insert(r.tripwire, r.status);
            if previous != Some(r.status) {
                changes.push(VerdictChange {
                    t_wall: sample.t_wall,
                    t_mono_ns: sample.t_mono_ns,
                    previous,
                    result: r.clone(),
                    limit: self.limit.clone(),
                });
            }
        }
        self.current = results;
        changes
    }

    /// The latest verdicts, in the order they are shown.
    pub fn current(&self) -> &[CheckResult] {
        &self.current
    }

    /// What limited the run at the last judgement.
    pub fn limit(&self) -> Option<&str> {
        self.limit.as_deref()
    }

    /// `T1 PASS  T8 TRIPWIRE-FAILED  T9 WARN ...  limit: the KV cache is full (...)`.
    pub fn status_text(&self) -> String {
        let mut parts: Vec<String> = self
            .current
            .iter()
            .map(|r| format!("{} {}", r.tripwire, r.status.terminal_label()))
            .collect();
        if let Some(limit) = &self.limit {
            parts.push(format!("limit: {limit}"));
        }
        parts.join("  ")
    }
}

/// A copy of a scrape without the page's text, which no check reads.
fn without_text(snapshot: &Snapshot) -> Snapshot {
    Snapshot {
        url: snapshot.url.clone(),
        t_wall: snapshot.t_wall,
        t_mono_ns: snapshot.t_mono_ns,
        latency_s: snapshot.latency_s,
        text: String::new(),
        metrics: snapshot.metrics.clone(),
    }
}

/// A sample's time in seconds: its monotonic clock, else its wall clock.
fn clock_s(sample: &SeriesSample) -> f64 {
    sample.t_mono_ns.map_or(sample.t_wall, |ns| ns as f64 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferlint_core::model::metrics::{MetricSet, Sample};
    use serde_json::Value;

    fn scrape(second: f64, preemptions: f64) -> Snapshot {
        Snapshot {
            url: String::new(),
            t_wall: Some(1_700_000_000.0 + second),
            t_mono_ns: Some((second * 1e9) as i64),
            latency_s: Some(0.001),
            text: String::new(),
            metrics: MetricSet::new(vec![Sample {
                name: "vllm:num_preemptions_total".into(),
                labels: Vec::new(),
                value: preemptions,
                timestamp_ms: None,
            }]),
        }
    }

    fn sample(second: f64, running: f64) -> SeriesSample {
        SeriesSample {
            t_wall: 1_700_000_000.0 + second,
            t_mono_ns: Some((second * 1e9) as i64),
            running: Some(running),
            waiting: Some(0.0),
            kv_usage: Some(0.1),
            ..SeriesSample::default()
        }
    }

    #[test]
    fn a_verdict_is_reported_when_it_changes_and_not_again() {
        let mut live = LiveVerdicts::new(Engine::Vllm, Some(4), None, false);
        let first = live.push(&sample(0.0, 2.0), &scrape(0.0, 0.0));
        let t8 = first
            .iter()
            .find(|c| c.result.tripwire == Tripwire::T8)
            .unwrap();
        assert_eq!((t8.previous, t8.result.status), (None, Status::Fail));
        // Within the second: not judged again.
        assert!(live.push(&sample(0.25, 4.0), &scrape(0.25, 0.0)).is_empty());
        let later = live.push(&sample(1.0, 4.0), &scrape(1.0, 2.0));
        let tripwires: Vec<(Tripwire, Option<Status>, Status)> = later
            .iter()
            .map(|c| (c.result.tripwire, c.previous, c.result.status))
            .collect();
        assert!(tripwires.contains(&(Tripwire::T8, Some(Status::Fail), Status::Pass)));
        assert!(
            tripwires.iter().any(|(t, before, now)| *t == Tripwire::T1
                && *now == Status::Fail
                && *before != Some(Status::Fail)),
            "{later:#?}"
        );
        assert!(live.finish().is_empty(), "nothing changed since");
        let line: Value = serde_json::from_str(&later[0].json_line()).unwrap();
        assert!(line["tripwire"]
            .as_str()
            .is_some_and(|t| t.starts_with('T')));
        assert!(live.status_text().contains("T1 TRIPWIRE-FAILED"));
    }

    /// The last judgement reads the recording's last scrape, not the one judged a moment
    /// before it: a preemption between them is not lost.
    #[test]
    fn the_last_judgement_reads_the_last_scrape() {
        let mut live = LiveVerdicts::new(Engine::Vllm, Some(2), None, false);
        live.push(&sample(0.0, 2.0), &scrape(0.0, 0.0));
        live.push(&sample(1.0, 2.0), &scrape(1.0, 0.0));
        // Within the second: folded in, not judged.
        live.push(&sample(1.5, 2.0), &scrape(1.5, 3.0));
        live.last_scrape(&scrape(1.5, 3.0));
        let last = live.finish();
        assert!(
            last.iter()
                .any(|c| c.result.tripwire == Tripwire::T1 && c.result.status == Status::Fail),
            "{last:#?}"
        );
    }
}
