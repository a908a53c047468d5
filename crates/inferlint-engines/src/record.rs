//! One series sample from one scrape: the gauges and counters a recorder writes, read
//! through the engine's table.
//!
//! Data-parallel vLLM serves one series per engine (an `engine` label with several
//! values). Counts (running, waiting, counters) are summed. KV usage is the share of all
//! usable blocks in use: each engine's usage weighted by its usable blocks from
//! `cache_config_info` when every engine reports them, else the plain mean. Several
//! usage series never make the sample fail.

use inferlint_core::judging::checks::counters;
use inferlint_core::{EngineDescriptor, MetricSet, Sample, SeriesSample};

/// Builds the series sample of one scrape.
pub fn sample_from_metrics(
    engine: &EngineDescriptor,
    metrics: &MetricSet,
    t_wall: f64,
    t_mono_ns: Option<i64>,
) -> SeriesSample {
    SeriesSample {
        t_wall,
        t_mono_ns,
        running: metrics.total(engine.running),
        waiting: metrics.total(engine.waiting),
        waiting_capacity: engine
            .waiting_reasons
            .and_then(|w| metrics.total_matching(w.metric, &[(w.label, w.capacity)])),
        waiting_deferred: engine
            .waiting_reasons
            .and_then(|w| metrics.total_matching(w.metric, &[(w.label, w.deferred)])),
        kv_usage: kv_usage(engine, metrics),
        preemptions: engine
            .preemption_counter
            .and_then(|c| counters::counter_value_in(engine, metrics, c)),
        generation_tokens: metrics.total(engine.generation_tokens),
        prompt_tokens: metrics.total(engine.prompt_tokens),
        paused: engine.paused_gauge.and_then(|g| metrics.total(g)),
        prefix_hits: engine.prefix_cache.and_then(|p| p.hits_in(metrics)),
        prefix_queries: engine.prefix_cache.and_then(|p| p.queries_in(metrics)),
        gpu: Default::default(),
    }
}

/// KV usage over every engine of the server, 0 to 1.
pub fn kv_usage(engine: &EngineDescriptor, metrics: &MetricSet) -> Option<f64> {
    let series: Vec<_> = metrics.series(engine.kv_usage).collect();
    match series.as_slice() {
        [] => None,
        [one] => Some(one.value),
        several => {
            // Weight each engine's usage by its usable blocks when every engine says.
            let blocks = |usage: &Sample| -> Option<f64> {
                let cache = engine.cache_info?;
                let id = usage.label(cache.engine_label);
                let info = metrics
                    .series(cache.metric)
                    .find(|s| s.label(cache.engine_label) == id)?;
                let n: f64 = info.label(cache.blocks_label)?.parse().ok()?;
                let held = cache.null_blocks as f64;
                (n > held).then_some(n - held)
            };
            let weights: Option<Vec<f64>> = several.iter().map(|s| blocks(s)).collect();
            match weights {
                Some(w) => {
                    let total: f64 = w.iter().sum();
                    Some(
                        several
                            .iter()
                            .zip(&w)
                            .map(|(s, w)| s.value * w)
                            .sum::<f64>()
                            / total,
                    )
                }
                None => Some(several.iter().map(|s| s.value).sum::<f64>() / several.len() as f64),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferlint_core::Engine;

    fn scrape(text: &str) -> MetricSet {
        crate::prom::parse(text).expect("test scrape parses")
    }

    #[test]
    fn data_parallel_counts_are_summed_and_usage_weighted() {
        let m = scrape(
            "vllm:num_requests_running{engine=\"0\"} 3\n\
             vllm:num_requests_running{engine=\"1\"} 5\n\
             vllm:num_requests_waiting{engine=\"0\"} 1\n\
             vllm:num_requests_waiting{engine=\"1\"} 0\n\
             vllm:kv_cache_usage_perc{engine=\"0\"} 0.5\n\
             vllm:kv_cache_usage_perc{engine=\"1\"} 0.25\n\
             vllm:num_preemptions_total{engine=\"0\"} 2\n\
             vllm:num_preemptions_total{engine=\"1\"} 1\n\
             vllm:cache_config_info{engine=\"0\",num_gpu_blocks=\"11\"} 1\n\
             vllm:cache_config_info{engine=\"1\",num_gpu_blocks=\"31\"} 1\n",
        );
        let s = sample_from_metrics(Engine::Vllm.descriptor(), &m, 1.0, None);
        assert_eq!(s.running, Some(8.0));
        assert_eq!(s.waiting, Some(1.0));
        assert_eq!(s.preemptions, Some(3.0));
        // 5 of 10 blocks and 7.5 of 30: 12.5 of 40.
        assert_eq!(s.kv_usage, Some(12.5 / 40.0));
    }

    #[test]
    fn several_usage_series_without_block_counts_average() {
        let m = scrape(
            "vllm:kv_cache_usage_perc{engine=\"0\"} 0.5\nvllm:kv_cache_usage_perc{engine=\"1\"} 0.25\n",
        );
        assert_eq!(kv_usage(Engine::Vllm.descriptor(), &m), Some(0.375));
    }

    #[test]
    fn missing_gauges_are_none_and_the_sglang_witness_reads_zero() {
        let m = scrape("sglang:num_retracted_reqs 0\nsglang:num_running_reqs 4\n");
        let s = sample_from_metrics(Engine::Sglang.descriptor(), &m, 1.0, Some(5));
        assert_eq!(s.running, Some(4.0));
        assert_eq!(s.waiting, None);
        assert_eq!(s.kv_usage, None);
        assert_eq!(s.preemptions, Some(0.0));
        let t = sample_from_metrics(
            Engine::Trtllm.descriptor(),
            &scrape("trtllm_num_paused_requests 2\n"),
            1.0,
            None,
        );
        assert_eq!((t.paused, t.preemptions), (Some(2.0), None));
    }

    /// vLLM 0.32 writes `vllm:num_requests_waiting_by_reason` once per engine and reason
    /// (`vllm/v1/metrics/loggers.py`); its reasons sum to the waiting gauge. Two
    /// data-parallel engines with 2 + 1 waiting for room and 0 + 3 deferred read as 3 and
    /// 3, the waiting gauge's 6. A scrape without the gauge (vLLM before 0.32) reads none.
    #[test]
    fn the_waiting_split_is_summed_by_reason() {
        let m = scrape(
            "vllm:num_requests_waiting{engine=\"0\"} 2\n\
             vllm:num_requests_waiting{engine=\"1\"} 4\n\
             vllm:num_requests_waiting_by_reason{engine=\"0\",reason=\"capacity\"} 2\n\
             vllm:num_requests_waiting_by_reason{engine=\"0\",reason=\"deferred\"} 0\n\
             vllm:num_requests_waiting_by_reason{engine=\"1\",reason=\"capacity\"} 1\n\
             vllm:num_requests_waiting_by_reason{engine=\"1\",reason=\"deferred\"} 3\n",
        );
        let s = sample_from_metrics(Engine::Vllm.descriptor(), &m, 1.0, None);
        assert_eq!(
            (s.waiting, s.waiting_capacity, s.waiting_deferred),
            (Some(6.0), Some(3.0), Some(3.0))
        );
        let old = scrape("vllm:num_requests_waiting 6\n");
        let s = sample_from_metrics(Engine::Vllm.descriptor(), &old, 1.0, None);
        assert_eq!((s.waiting_capacity, s.waiting_deferred), (None, None));
        assert!(Engine::Vllm
            .descriptor()
            .recorded_sample_names()
            .contains(&"vllm:num_requests_waiting_by_reason".to_owned()));
    }
}
