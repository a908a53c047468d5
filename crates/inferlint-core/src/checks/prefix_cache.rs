//! T16: the share of the run's prompt tokens the prefix cache served.
//!
//! Every engine keeps the KV blocks of earlier prompts and reuses them for a prompt that
//! starts the same way: vLLM's prefix cache, SGLang's radix cache, TensorRT-LLM's block
//! reuse. A benchmark that repeats its "random" prompts (the same seed twice against one
//! server, a warm-up that sends the run's own prompts) measures prefill on a warm cache:
//! prefill throughput and time to first token look better than any fresh prompt gets. Each
//! engine counts the prompt tokens its cache served and those it looked up (see
//! [`crate::engine::PrefixCacheCounters`]); their deltas over the run give the share.

use crate::checks::counters::restart_between;
use crate::engine::{EngineDescriptor, PrefixCacheCounters};
use crate::fmt;
use crate::model::Snapshot;
use crate::status::{CheckResult, Status, Tripwire};

use super::series::SeriesStats;

/// The share of the prompt tokens the cache may serve before T16 warns: a warm-up request
/// that repeats the run's first prompt gives one prompt in every few dozen.
pub const WARN_SHARE: f64 = 0.1;

fn t16(status: Status, message: String) -> CheckResult {
    CheckResult::new(Tripwire::T16, status, message)
}

/// The counters' deltas over the run, from wherever they were read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheDeltas {
    /// Prompt tokens the cache served over the run.
    pub hits: f64,
    /// Prompt tokens looked up in the cache over the run.
    pub queried: f64,
    /// `snapshots` or `series`.
    pub source: &'static str,
}

/// The deltas between two snapshots, or why there are none.
pub fn deltas_between(
    metrics: &PrefixCacheCounters,
    before: &Snapshot,
    after: &Snapshot,
) -> Result<CacheDeltas, String> {
    if let Some(restart) = restart_between(before, after) {
        return Err(restart.message);
    }
    let missing = |name: &str| format!("{name} is missing from a snapshot");
    let hits = (
        metrics.hits_in(&before.metrics),
        metrics.hits_in(&after.metrics),
    );
    let queried = (
        metrics.queries_in(&before.metrics),
        metrics.queries_in(&after.metrics),
    );
    let (Some(h0), Some(h1)) = hits else {
        return Err(missing(metrics.hit_tokens));
    };
    let (Some(q0), Some(q1)) = queried else {
        return Err(missing(metrics.queried_tokens));
    };
    Ok(CacheDeltas {
        hits: h1 - h0,
        queried: q1 - q0,
        source: "snapshots",
    })
}

/// The deltas over a recording's first and last readings, or why there are none.
pub fn deltas_in_series(
    metrics: &PrefixCacheCounters,
    stats: &SeriesStats,
) -> Result<CacheDeltas, String> {
    let (hits, queried) = (&stats.prefix_hits_track, &stats.prefix_queries_track);
    if hits.went_down || queried.went_down {
        return Err(
            "a prefix-cache counter went down in the recording: the server restarted".into(),
        );
    }
    let (Some((_, h0)), Some((_, h1))) = (hits.first, hits.last) else {
        return Err(format!(
            "the recording holds no {} reading",
            metrics.hit_tokens
        ));
    };
    let (Some((_, q0)), Some((_, q1))) = (queried.first, queried.last) else {
        return Err(format!(
            "the recording holds no {} reading",
            metrics.queried_tokens
        ));
    };
    Ok(CacheDeltas {
        hits: h1 - h0,
        queried: q1 - q0,
        source: "series",
    })
}

/// T16 from the counters' deltas. `expected`: the user said the run is meant to reuse
/// prompt prefixes, so a high share is what it measures.
pub fn prefix_cache_share(
    engine: &EngineDescriptor,
    deltas: Result<CacheDeltas, String>,
    expected: bool,
) -> CheckResult {
    let Some(metrics) = engine.prefix_cache else {
        return t16(
            Status::NotApplicable,
            format!("{} serves no prefix-cache counters", engine.name),
        );
    };
    let d = match deltas {
        Ok(d) => d,
        Err(why) => {
            return t16(Status::Unknown, why)
                .with("hit_counter", metrics.hit_tokens)
                .with("queried_counter", metrics.queried_tokens)
        }
    };
    let evidence = |r: CheckResult| {
        r.with("hit_tokens", d.hits)
            .with("queried_tokens", d.queried)
            .with("source", d.source)
            .with("warn_share", WARN_SHARE)
            .with("cache_hits_expected", expected)
    };
    if !(d.hits.is_finite() && d.queried.is_finite()) || d.hits < 0.0 || d.queried < 0.0 {
        return evidence(t16(
            Status::Unknown,
            format!(
                "the prefix-cache counters cannot be read ({} {}, {} {})",
                metrics.hit_tokens,
                fmt::g(d.hits),
                metrics.queried_tokens,
                fmt::g(d.queried)
            ),
        ));
    }
    if d.queried == 0.0 {
        return evidence(t16(
            Status::Unknown,
            format!(
                "{} counted no prompt token over the run, so no share can be taken",
                metrics.queried_tokens
            ),
        ));
    }
    if d.hits > d.queried {
        return evidence(t16(
            Status::Unknown,
            format!(
                "the cache served {} tokens of {} looked up: the two counters do not describe the same prompts",
                fmt::thousands_f(d.hits),
                fmt::thousands_f(d.queried)
            ),
        ));
    }
    let share = d.hits / d.queried;
    let counted = format!(
        "the prefix cache served {} of the run's prompt tokens ({} of {})",
        fmt::percent(share, 1),
        fmt::thousands_f(d.hits),
        fmt::thousands_f(d.queried)
    );
    let result = if share <= WARN_SHARE {
        t16(Status::Pass, counted)
    } else if expected {
        t16(
            Status::Pass,
            format!("{counted}, as the run means to (--expect-cache-hits)"),
        )
    } else {
        t16(
            Status::Warn,
            format!(
                "{counted}: prefill throughput and time to first token were measured on a warm cache, not on prompts computed afresh"
            ),
        )
    };
    evidence(result).with("share", share)
}

/// T16 over a run: the snapshots' deltas where both are there, else the recording's.
pub fn prefix_cache(
    engine: &EngineDescriptor,
    before: Option<&Snapshot>,
    after: Option<&Snapshot>,
    series: Option<&SeriesStats>,
    expected: bool,
) -> Option<CheckResult> {
    let metrics = engine.prefix_cache?;
    let deltas = match (before, after, series) {
        (Some(b), Some(a), _) => deltas_between(&metrics, b, a),
        (_, _, Some(stats)) => deltas_in_series(&metrics, stats),
        _ => return None,
    };
    Some(prefix_cache_share(engine, deltas, expected))
}

/// The setting the boot log shows turned the prefix cache off, and its value, if any.
pub fn turned_off(
    engine: &EngineDescriptor,
    boot: &crate::model::BootFacts,
) -> Option<(&'static str, bool)> {
    let set = |name: &str| {
        [&boot.non_default_args, &boot.server_args]
            .into_iter()
            .flatten()
            .find_map(|settings| match settings.get(name) {
                Some(crate::model::PyValue::Bool(b)) => Some(*b),
                _ => None,
            })
    };
    engine
        .prefix_cache?
        .off_settings
        .iter()
        .find(|(name, off)| set(name) == Some(*off))
        .copied()
}

/// A run that looked up no prompt token in the cache (T16 Can't tell: no share can be
/// taken) on a server its boot log shows started with the cache off: nothing was looked up
/// because there was nothing to look in, and the cache served none of the run's prompts.
/// Any other result is returned as it is.
pub fn off_at_start(
    engine: &EngineDescriptor,
    boot: Option<&crate::model::BootFacts>,
    result: CheckResult,
) -> CheckResult {
    let Some(boot) = boot else {
        return result;
    };
    if result.status != Status::Unknown || result.evidence_f64("queried_tokens") != Some(0.0) {
        return result;
    }
    let Some((name, off)) = turned_off(engine, boot) else {
        return result;
    };
    let mut pass = t16(
        Status::Pass,
        format!(
            "the prefix cache was off ({name} {}, as the boot log shows): it served none of the run's prompt tokens",
            if off { "True" } else { "False" }
        ),
    );
    pass.evidence = result.evidence;
    pass.with("off_setting", name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// vLLM started with `--no-enable-prefix-caching` prints `'enable_prefix_caching':
    /// False` among its non-default args and counts no cache query: T16 passes, since the
    /// cache served nothing. The same silence from a server whose log shows the cache on
    /// (or says nothing) stays Can't tell.
    #[test]
    fn a_cache_off_at_start_served_nothing() {
        let (before, after) = (vllm(0.0, 0.0), vllm(0.0, 0.0));
        let silent = prefix_cache(&VLLM, Some(&before), Some(&after), None, false).unwrap();
        assert_eq!(silent.status, Status::Unknown);
        let boot = |on: bool| crate::model::BootFacts {
            non_default_args: Some(
                [(
                    "enable_prefix_caching".to_owned(),
                    crate::model::PyValue::Bool(on),
                )]
                .into_iter()
                .collect(),
            ),
            ..crate::model::BootFacts::default()
        };
        let off = off_at_start(&VLLM, Some(&boot(false)), silent.clone());
        assert_eq!(off.status, Status::Pass, "{}", off.message);
        assert!(off
            .message
            .starts_with("the prefix cache was off (enable_prefix_caching False"));
        assert_eq!(
            off_at_start(&VLLM, Some(&boot(true)), silent.clone()).status,
            Status::Unknown
        );
        assert_eq!(off_at_start(&VLLM, None, silent).status, Status::Unknown);
    }
    use crate::engine::{SGLANG, TRTLLM, VLLM};
    use crate::testing::plain_snapshot as snapshot;

    fn vllm(hits: f64, queries: f64) -> Snapshot {
        snapshot(&[
            ("vllm:prefix_cache_hits_total", hits),
            ("vllm:prefix_cache_queries_total", queries),
        ])
    }

    #[test]
    fn a_repeated_random_run_warns_unless_the_cache_is_meant() {
        let (before, after) = (vllm(0.0, 63.0), vllm(2_464.0, 2_879.0));
        let r = prefix_cache(&VLLM, Some(&before), Some(&after), None, false).unwrap();
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!(
            r.message.starts_with(
                "the prefix cache served 87.5% of the run's prompt tokens (2,464 of 2,816)"
            ),
            "{}",
            r.message
        );
        let r = prefix_cache(&VLLM, Some(&before), Some(&after), None, true).unwrap();
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        let fresh = prefix_cache(&VLLM, Some(&before), Some(&vllm(0.0, 2_879.0)), None, false);
        assert_eq!(fresh.map(|r| r.status), Some(Status::Pass));
    }

    /// SGLang writes its cached-token counter at the first hit: absent beside the prompt
    /// counter, it reads 0.
    #[test]
    fn sglangs_counter_appears_at_the_first_hit() {
        let before = snapshot(&[("sglang:prompt_tokens_total", 185.0)]);
        let after = snapshot(&[("sglang:prompt_tokens_total", 3_164.0)]);
        let r = prefix_cache(&SGLANG, Some(&before), Some(&after), None, false).unwrap();
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(r.evidence["hit_tokens"], 0.0);
        // TensorRT-LLM's is there from the start: its absence is not a zero.
        let before = snapshot(&[("trtllm_prompt_tokens_total", 63.0)]);
        let after = snapshot(&[("trtllm_prompt_tokens_total", 2_879.0)]);
        let r = prefix_cache(&TRTLLM, Some(&before), Some(&after), None, false).unwrap();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
    }

    /// SGLang's uncached-token histogram says how many were served before the first hit
    /// wrote the cached counter (the recorded SGLang 0.5 qwen3-8b run: 2,885 prompt tokens,
    /// 2,837 not cached, 48 cached), and a hit read from either source is the same.
    #[test]
    fn sglangs_uncached_tokens_count_the_hits_before_the_cached_counter_appears() {
        let before = snapshot(&[
            ("sglang:prompt_tokens_total", 69.0),
            ("sglang:uncached_prompt_tokens_histogram_sum", 69.0),
        ]);
        let after = snapshot(&[
            ("sglang:prompt_tokens_total", 2_885.0),
            ("sglang:uncached_prompt_tokens_histogram_sum", 837.0),
        ]);
        let r = prefix_cache(&SGLANG, Some(&before), Some(&after), None, false).unwrap();
        // 2,048 of the 2,816 looked up were served, though no cached counter was written.
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert_eq!(r.evidence["hit_tokens"], 2_048.0);
        let with_counter = snapshot(&[
            ("sglang:prompt_tokens_total", 2_885.0),
            ("sglang:uncached_prompt_tokens_histogram_sum", 2_837.0),
            ("sglang:cached_tokens_total", 48.0),
        ]);
        let r = prefix_cache(&SGLANG, Some(&before), Some(&with_counter), None, false).unwrap();
        assert_eq!(r.evidence["hit_tokens"], 48.0);
        // More missed than looked up: not a count of the same prompts.
        let odd = snapshot(&[
            ("sglang:prompt_tokens_total", 2_885.0),
            ("sglang:uncached_prompt_tokens_histogram_sum", 3_000.0),
        ]);
        let r = prefix_cache(&SGLANG, Some(&before), Some(&odd), None, false).unwrap();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
    }

    #[test]
    fn nothing_counted_is_not_a_pass() {
        let r = prefix_cache(
            &VLLM,
            Some(&vllm(0.0, 63.0)),
            Some(&vllm(0.0, 63.0)),
            None,
            false,
        );
        assert_eq!(r.map(|r| r.status), Some(Status::Unknown));
    }
}
