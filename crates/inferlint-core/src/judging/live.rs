//! Verdicts while a run is still going: the tripwires a recording can judge before the
//! load ends (T1, T8, T9, T14, T16, T17, T21), through the same check functions the
//! files are judged with, and what limits the run at this moment.
//!
//! A recorder folds each sample into [`SeriesStats`] as it arrives and keeps its first
//! scrape as the "before" reading and its latest as the "after": T1 and T16 are then the
//! counters' deltas so far, T14 reads the latest scrape's block count, T8, T9, T17 and T21
//! the statistics so far. A verdict can change as the run goes on (T8 passes once the
//! server reaches the concurrency; T1 fails at the first preemption).

use crate::engine::EngineDescriptor;
use crate::judging::checks::series::{self, SeriesStats};
use crate::judging::checks::shortfall::{self, ShortfallInputs};
use crate::judging::checks::{contention, counters, prefix_cache, registry, snapshots};
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::{BootFacts, SeriesSample, Snapshot};
use crate::story::fmt;

/// What the live checks read.
#[derive(Debug, Clone, Copy)]
pub struct LiveInputs<'a> {
    /// The engine's table.
    pub engine: &'static EngineDescriptor,
    /// The series so far, folded.
    pub stats: &'a SeriesStats,
    /// The recorder's first scrape and its latest.
    pub first: &'a Snapshot,
    /// The recorder's latest scrape.
    pub latest: &'a Snapshot,
    /// The concurrency the load asks for (T8, T17).
    pub requested: Option<u64>,
    /// The boot log's facts, where the recorder was given the log.
    pub boot: Option<&'a BootFacts>,
    /// The user said the run is meant to use the prefix cache (T16 does not warn).
    pub expect_cache_hits: bool,
    /// The recording ended: nothing more will come to change a verdict.
    pub ended: bool,
}

/// Every mid-run verdict the recording allows so far; a tripwire that does not apply or
/// lacks an input is left out, and so is one whose evidence has not begun: the
/// concurrency, the ceiling and the block count before any request ran, the cache's share
/// before any prompt was looked up, the counters before a second scrape.
pub fn mid_run(inputs: &LiveInputs<'_>) -> Vec<CheckResult> {
    let LiveInputs {
        engine,
        stats,
        first,
        latest,
        boot,
        expect_cache_hits,
        ..
    } = *inputs;
    let mut results = Vec::new();
    if stats.samples > 1 {
        results.push(snapshots::preemption(
            engine,
            first,
            latest,
            Some(stats),
            boot,
        ));
    }
    let load_began = stats.peak_running.is_some_and(|p| p > 0.0)
        || stats.peak_in_flight.is_some_and(|p| p > 0.0);
    if load_began {
        load_checks(inputs, &mut results);
    }
    if let Some(metrics) = engine.prefix_cache {
        let deltas = prefix_cache::deltas_between(&metrics, first, latest);
        if !deltas.as_ref().is_ok_and(|d| d.queried <= 0.0) && stats.samples > 1 {
            results.push(prefix_cache::prefix_cache_share(
                engine,
                deltas,
                expect_cache_hits,
                None,
            ));
        }
    }
    results.extend(contention::gpu_contention(stats));
    results.retain(|r| r.status.is_verdict());
    // Only what the registry declares live, in its order.
    let live: Vec<Tripwire> = registry::live().collect();
    results.retain(|r| live.contains(&r.tripwire));
    results.sort_by_key(|r| live.iter().position(|t| *t == r.tripwire));
    results
}

/// T14, T9, T8 and T17, once requests have run.
fn load_checks(inputs: &LiveInputs<'_>, results: &mut Vec<CheckResult>) {
    let LiveInputs {
        engine,
        stats,
        latest,
        requested,
        boot,
        ..
    } = *inputs;
    let mut usable_blocks = None;
    if engine.cache_info.is_some() {
        let (t14, blocks) = series::null_block(engine, stats, latest);
        if t14.status == Status::Pass {
            usable_blocks = blocks;
        }
        results.push(t14);
    }
    results.push(series::falling_ceiling(engine, stats, usable_blocks));
    if let Some(n) = requested {
        let t8 = series::concurrency(engine, stats, n, boot);
        let t17 = shortfall::client_shortfall(&ShortfallInputs {
            engine,
            stats,
            requested: n,
            boot,
            client: None,
            timeline: None,
        });
        // "Fewer than N in flight" is a finding only once the load could have had them:
        // a load sends an untimed request alone first and opens its N in a ramp. Until the
        // server has finished N requests (one wave), a shortfall is held back, never shown
        // as a pass; at the end of the recording it is shown whatever was finished.
        // A counter the first scrape lacks had counted nothing yet (some engines write a
        // series at its first request); without it in the latest, nothing is held back.
        let finished = counters::counter_value(engine, latest, engine.request_success).map(|now| {
            now - counters::counter_value(engine, inputs.first, engine.request_success)
                .unwrap_or(0.0)
        });
        let wave_done = inputs.ended || finished.is_none_or(|f| f.is_nan() || f >= n as f64);
        for r in [t8, t17] {
            if wave_done || r.status == Status::Pass {
                results.push(r);
            }
        }
    }
}

/// The usable blocks of the latest scrape's cache info (vLLM: `num_gpu_blocks` less one
/// null block per engine), for reading the KV gauge in blocks.
pub fn usable_blocks(engine: &EngineDescriptor, latest: &Snapshot) -> Option<u64> {
    let info = engine.cache_info?;
    let per_engine: Vec<u64> = latest
        .metrics
        .series(info.metric)
        .filter_map(|s| s.label(info.blocks_label)?.parse().ok())
        .collect();
    info.usable_blocks(per_engine.iter().sum(), per_engine.len() as u64)
}

/// What limits the run at this sample, in a few words: the KV cache (counted in blocks
/// where the pool is paged, so a gauge below 100% can be full), the running cap, the
/// queue, or the client keeping fewer open than asked. `None` while nothing runs.
pub fn limit_now(
    engine: &EngineDescriptor,
    sample: &SeriesSample,
    usable_blocks: Option<u64>,
    requested: Option<u64>,
    boot: Option<&BootFacts>,
) -> Option<String> {
    let running = sample.running.filter(|r| r.is_finite())?;
    let waiting = sample.waiting.filter(|w| w.is_finite()).unwrap_or(0.0);
    if running <= 0.0 && waiting <= 0.0 {
        return None;
    }
    let cache = sample.kv_usage.filter(|u| u.is_finite()).map(|u| {
        let full = !shortfall::cache_has_room(u, running);
        let words = match usable_blocks {
            Some(b) => {
                let used = fmt::round_half_even(u * b as f64);
                let each = if running > 0.0 { used / running } else { 0.0 };
                format!(
                    "{} of {b} blocks used, about {} per request",
                    fmt::g(used),
                    fmt::g((each * 10.0).round() / 10.0)
                )
            }
            None => format!(
                "{} of {} used",
                fmt::percent(u, 0),
                engine.kv_usage_pool_words
            ),
        };
        (full, words)
    });
    let cap = boot.and_then(|b| b.running_cap);
    let queued = if waiting > 0.0 {
        format!("; {} waiting", fmt::g(waiting))
    } else {
        String::new()
    };
    if let Some((true, words)) = &cache {
        return Some(format!("the KV cache is full ({words}){queued}"));
    }
    if let Some(cap) = cap.filter(|c| running >= *c as f64) {
        return Some(format!(
            "the running cap ({} {cap}){queued}",
            engine.running_cap_flag
        ));
    }
    if waiting > 0.0 {
        let room = cache.map(|(_, w)| format!(", KV {w}")).unwrap_or_default();
        return Some(format!(
            "the server's admission: {} waiting with {} running{room}",
            fmt::g(waiting),
            fmt::g(running)
        ));
    }
    match requested {
        Some(n) if running < n as f64 => Some(format!(
            "the client: {} of {n} in flight, nothing waiting, room to run more",
            fmt::g(running)
        )),
        Some(n) => Some(format!("nothing: {} running of {n} asked", fmt::g(running))),
        None => Some(format!("{} running, nothing waiting", fmt::g(running))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::VLLM;
    use crate::model::metrics::MetricSet;
    use crate::testing::sample as metric;

    fn snapshot(preemptions: f64, hits: f64, queries: f64, blocks: u64) -> Snapshot {
        let blocks = blocks.to_string();
        Snapshot {
            t_mono_ns: Some(1_000_000_000 + preemptions as i64),
            latency_s: Some(0.001),
            ..crate::testing::snapshot(
                Some(1_700_000_000.0 + preemptions),
                vec![
                    metric("vllm:num_preemptions_total", &[], preemptions),
                    metric("vllm:prefix_cache_hits_total", &[], hits),
                    metric("vllm:prefix_cache_queries_total", &[], queries),
                    metric(
                        "vllm:cache_config_info",
                        &[("num_gpu_blocks", &blocks)],
                        1.0,
                    ),
                ],
            )
        }
    }

    fn sample(running: f64, waiting: f64, usage: f64) -> SeriesSample {
        SeriesSample {
            t_wall: 1_700_000_001.0,
            running: Some(running),
            waiting: Some(waiting),
            kv_usage: Some(usage),
            ..SeriesSample::default()
        }
    }

    /// The same functions as the files: T1 fails at the first preemption, T8 fails
    /// while the server holds fewer than asked, T16 reads the counters so far.
    #[test]
    fn mid_run_verdicts_come_from_the_file_checks() {
        let mut stats = SeriesStats::new();
        stats.push(&sample(10.0, 22.0, 39.0 / 42.0));
        stats.push(&sample(10.0, 22.0, 39.0 / 42.0));
        let first = snapshot(0.0, 0.0, 63.0, 43);
        let latest = snapshot(3.0, 0.0, 943.0, 43);
        let results = mid_run(&LiveInputs {
            engine: &VLLM,
            stats: &stats,
            first: &first,
            latest: &latest,
            requested: Some(32),
            boot: None,
            expect_cache_hits: false,
            ended: false,
        });
        let status = |t: Tripwire| results.iter().find(|r| r.tripwire == t).map(|r| r.status);
        assert_eq!(status(Tripwire::T1), Some(Status::Fail));
        assert_eq!(status(Tripwire::T8), Some(Status::Fail));
        assert_eq!(status(Tripwire::T16), Some(Status::Pass));
        assert_eq!(status(Tripwire::T17), Some(Status::Pass));
        // Before any request ran, only what has evidence is judged.
        let mut idle = SeriesStats::new();
        idle.push(&sample(0.0, 0.0, 0.0));
        let early = mid_run(&LiveInputs {
            engine: &VLLM,
            stats: &idle,
            first: &first,
            latest: &first,
            requested: Some(32),
            boot: None,
            expect_cache_hits: false,
            ended: false,
        });
        assert!(early.is_empty(), "{early:#?}");
        let order: Vec<Tripwire> = results.iter().map(|r| r.tripwire).collect();
        let mut sorted = order.clone();
        let live: Vec<Tripwire> = registry::live().collect();
        sorted.sort_by_key(|t| live.iter().position(|l| l == t));
        assert_eq!(order, sorted);
    }

    /// A load's untimed first request runs alone before the load opens its concurrency:
    /// "never more than 1 of 32" is held back until the server finished a wave of 32
    /// requests, or the recording ended.
    #[test]
    fn a_shortfall_waits_for_a_wave_of_requests() {
        let with_finished = |finished: f64| {
            let mut s = snapshot(0.0, 0.0, 63.0, 43);
            let mut samples = s.metrics.samples().to_vec();
            samples.push(metric(
                "vllm:request_success_total",
                &[("finished_reason", "length")],
                finished,
            ));
            s.metrics = MetricSet::new(samples);
            s
        };
        let mut stats = SeriesStats::new();
        stats.push(&sample(1.0, 0.0, 0.02));
        let first = with_finished(0.0);
        let judged = |latest: &Snapshot, ended: bool| {
            let results = mid_run(&LiveInputs {
                engine: &VLLM,
                stats: &stats,
                first: &first,
                latest,
                requested: Some(32),
                boot: None,
                expect_cache_hits: false,
                ended,
            });
            let status = |t: Tripwire| results.iter().find(|r| r.tripwire == t).map(|r| r.status);
            (status(Tripwire::T8), status(Tripwire::T17))
        };
        assert_eq!(judged(&with_finished(1.0), false), (None, None));
        assert_eq!(
            judged(&with_finished(32.0), false),
            (Some(Status::Fail), Some(Status::Fail))
        );
        assert_eq!(
            judged(&with_finished(1.0), true),
            (Some(Status::Fail), Some(Status::Fail))
        );
    }

    /// The example: a gauge at 93% with 784-token blocks is a full cache.
    #[test]
    fn the_limit_is_counted_in_blocks() {
        let limit = limit_now(
            &VLLM,
            &sample(10.0, 22.0, 39.0 / 42.0),
            Some(42),
            Some(32),
            None,
        );
        assert_eq!(
            limit.as_deref(),
            Some("the KV cache is full (39 of 42 blocks used, about 3.9 per request); 22 waiting")
        );
        let client = limit_now(&VLLM, &sample(8.0, 0.0, 0.3), Some(42), Some(32), None);
        assert!(client.is_some_and(|l| l.starts_with("the client: 8 of 32")));
        assert_eq!(
            limit_now(&VLLM, &sample(0.0, 0.0, 0.0), None, Some(32), None),
            None
        );
        assert_eq!(usable_blocks(&VLLM, &snapshot(0.0, 0.0, 0.0, 43)), Some(42));
    }
}
