//! T16: the share of the run's prompt tokens the prefix cache served.
//!
//! Every engine keeps the KV blocks of earlier prompts and reuses them for a prompt that
//! starts the same way: vLLM's prefix cache, SGLang's radix cache, TensorRT-LLM's block
//! reuse. A benchmark that repeats its "random" prompts (the same seed twice against one
//! server, a warm-up that sends the run's own prompts) measures prefill on a warm cache:
//! prefill throughput and time to first token look better than any fresh prompt gets. Each
//! engine counts the prompt tokens its cache served and those it looked up (see
//! [`crate::engine::PrefixCacheCounters`]); their deltas over the run give the share.
//!
//! Where the engine also says which tier each cached token came from (vLLM 0.32's
//! `prompt_tokens_cached_by_source`), T16 gives the split: the device's own cache, KV
//! offloaded to host memory or disk and brought back, KV from a peer or a connector that
//! does not say which tier, and the tokens computed afresh. A run on a server started with
//! an offload tier (`--kv-offloading-size`, an offloading connector) whose tier served
//! nothing measured no offload at all, the commonest reason offload "does not help": T16
//! warns. A split from a KV manager known to put every hit in one tier is no evidence.

use crate::engine::{
    printed_field, CacheTier, CacheTiers, ConnectorSetting, EngineDescriptor, LibraryCounters,
    PrefixCacheCounters, SettingField,
};
use crate::judging::checks::counters::restart_between;
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::{BootFacts, PyValue, Snapshot};
use crate::story::fmt;

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

/// Looked-up tokens beyond the prompt tokens counted over the same window, past which the
/// lookups are not the run's prompts alone: counters read a moment apart differ by a
/// request's worth at most, well under a twentieth of a run.
const LOOKUPS_BEYOND_PROMPTS: f64 = 1.05;

/// T16 from the counters' deltas. `expected`: the user said the run is meant to reuse
/// prompt prefixes, so a high share is what it measures. `prompt_tokens`: the engine's
/// prompt-token counter over the same window, where it was read: vLLM 0.16 looks a
/// preempted request's prompt and output up again when it recomputes it (0.32 does not),
/// so its lookups can outnumber the run's prompt tokens, and the share is then one of
/// lookups, said as such.
pub fn prefix_cache_share(
    engine: &EngineDescriptor,
    deltas: Result<CacheDeltas, String>,
    expected: bool,
    prompt_tokens: Option<f64>,
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
    let beyond = prompt_tokens
        .filter(|p| p.is_finite() && *p > 0.0 && d.queried > p * LOOKUPS_BEYOND_PROMPTS);
    let counted = match beyond {
        None => format!(
            "the prefix cache served {} of the run's prompt tokens ({} of {})",
            fmt::percent(share, 1),
            fmt::thousands_f(d.hits),
            fmt::thousands_f(d.queried)
        ),
        Some(prompts) => format!(
            "the prefix cache served {} of the {} tokens looked up in it ({}), more lookups than the run's {} prompt tokens: a request recomputed after a preemption is looked up again",
            fmt::percent(share, 1),
            fmt::thousands_f(d.queried),
            fmt::thousands_f(d.hits),
            fmt::thousands_f(prompts)
        ),
    };
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
    let prompt_tokens = before.zip(after).and_then(|(b, a)| {
        Some(a.metrics.total(engine.prompt_tokens)? - b.metrics.total(engine.prompt_tokens)?)
    });
    Some(prefix_cache_share(engine, deltas, expected, prompt_tokens))
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

/// A setting's value as the boot log printed it (a string's quotes taken off), or one
/// field of it where the setting is printed as a configuration's repr.
pub fn read_setting(boot: &BootFacts, setting: &SettingField) -> Option<String> {
    match (boot.setting(setting.setting), setting.field) {
        (Some(PyValue::Str(s)), None) => Some(s.clone()),
        (Some(value), None) => Some(value.canonical()),
        (Some(value), Some(field)) => printed_field(&value.canonical(), field).map(str::to_owned),
        // TensorRT-LLM's settings keep a few of its `LLM Args:`; a configuration printed
        // as a repr (`kv_cache_config=KvCacheConfig(...)`) is read from the whole line.
        (None, Some(field)) => {
            let args = boot.llm_args.as_deref()?;
            let at = args.find(&format!("{}=", setting.setting))?;
            printed_field(&args[at..], field).map(str::to_owned)
        }
        (None, None) => None,
    }
}

/// The KV connector's configuration as the boot log printed it, where it shows one
/// (`None` printed means no connector).
pub fn connector_printed(boot: &BootFacts, connector: &ConnectorSetting) -> Option<String> {
    let value = boot.setting(connector.setting)?;
    (!value.is_none()).then(|| value.canonical())
}

/// The run's cached prompt tokens by the tier that served them, and those computed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TierSplit {
    /// From the device's own prefix cache.
    pub device: f64,
    /// From KV offloaded to host memory or disk.
    pub offload: f64,
    /// From a peer instance, or a connector that does not say which tier.
    pub peer: f64,
    /// Computed afresh, where the engine counts them.
    pub computed: Option<f64>,
}

/// The split between two snapshots: `None` where the after reading has no split counter
/// (a release before it), an error where the counters cannot be subtracted.
pub fn tier_split(
    tiers: &CacheTiers,
    before: &Snapshot,
    after: &Snapshot,
) -> Option<Result<TierSplit, String>> {
    if !after.metrics.has(tiers.metric) {
        return None;
    }
    if let Some(restart) = restart_between(before, after) {
        return Some(Err(restart.message));
    }
    let delta = |metric: &str, label: &str, value: &str| -> Result<f64, String> {
        let subset = [(label, value)];
        let after_value = after.metrics.total_matching(metric, &subset);
        let before_value = before.metrics.total_matching(metric, &subset);
        match (before_value, after_value) {
            (Some(b), Some(a)) if a.is_finite() && b.is_finite() && a >= b => Ok(a - b),
            (Some(_), Some(_)) => Err(format!(
                "{metric}{{{label}=\"{value}\"}} went down or cannot be read"
            )),
            // A tier the engine never wrote served nothing on either reading.
            (None, None) => Ok(0.0),
            _ => Err(format!(
                "{metric}{{{label}=\"{value}\"}} is in one reading and not the other"
            )),
        }
    };
    let mut split = TierSplit {
        device: 0.0,
        offload: 0.0,
        peer: 0.0,
        computed: None,
    };
    for &(value, tier) in tiers.tiers {
        let tokens = match delta(tiers.metric, tiers.label, value) {
            Ok(tokens) => tokens,
            Err(why) => return Some(Err(why)),
        };
        match tier {
            CacheTier::Device => split.device += tokens,
            CacheTier::Offload => split.offload += tokens,
            CacheTier::Peer => split.peer += tokens,
        }
    }
    if let Some(c) = tiers.computed {
        split.computed = match delta(c.metric, c.label, c.value) {
            Ok(tokens)
                if after
                    .metrics
                    .total_matching(c.metric, &[(c.label, c.value)])
                    .is_some() =>
            {
                Some(tokens)
            }
            Ok(_) => None,
            Err(why) => return Some(Err(why)),
        };
    }
    Some(Ok(split))
}

/// How the run's server shows an offload tier was configured, in words; `None` where
/// nothing shows one.
pub fn offload_configured(
    tiers: &CacheTiers,
    boot: Option<&BootFacts>,
    after: Option<&Snapshot>,
) -> Option<String> {
    let unset = |v: &str| matches!(v, "None" | "0" | "0.0" | "" | "False");
    if let Some(boot) = boot {
        for setting in tiers.offload_settings {
            if let Some(value) = read_setting(boot, setting).filter(|v| !unset(v)) {
                let name = setting.field.unwrap_or(setting.setting);
                return Some(format!("{name} {value}, as the boot log shows"));
            }
        }
        if let Some((connector, names)) = tiers.offload_connectors {
            if let Some(name) = connector_printed(boot, &connector)
                .and_then(|printed| connector.names_one_of(&printed, names))
            {
                return Some(format!(
                    "the {name} in {}, as the boot log shows",
                    connector.setting
                ));
            }
        }
    }
    let (metric, label) = tiers.offload_info_label?;
    let value = after?
        .metrics
        .info(metric)?
        .iter()
        .find(|(name, _)| name == label)
        .map(|(_, value)| value.as_str())
        .filter(|v| !unset(v))?;
    Some(format!("{label} {value}, as {metric} shows"))
}

/// An offload library's own count over the run: the tokens asked of it and those it had,
/// as one worker counted them (each worker counts its own shard of the same tokens, so the
/// workers' series are not added: the most any worker counted stands for the instance).
/// `None` where the after reading has no series of it. A worker's series the before
/// reading lacks had counted nothing: the library writes a series at its first count.
pub fn library_deltas(
    library: &LibraryCounters,
    before: &Snapshot,
    after: &Snapshot,
) -> Option<Result<(f64, f64), String>> {
    if !after.metrics.has(library.hit_tokens) {
        return None;
    }
    let most = |name: &str| -> Result<f64, String> {
        let mut most: f64 = 0.0;
        for sample in after.metrics.series(name) {
            let worker = sample.label(library.worker_label).unwrap_or_default();
            let start = before
                .metrics
                .series(name)
                .find(|s| s.label(library.worker_label).unwrap_or_default() == worker)
                .map_or(0.0, |s| s.value);
            if !(sample.value.is_finite() && start.is_finite()) || sample.value < start {
                return Err(format!("{name} went down or cannot be read"));
            }
            most = most.max(sample.value - start);
        }
        Ok(most)
    };
    Some(most(library.requested_tokens).and_then(|r| Ok((r, most(library.hit_tokens)?))))
}

/// Why the boot log leaves the split untrusted, if it does.
pub fn split_untrusted(tiers: &CacheTiers, boot: Option<&BootFacts>) -> Option<&'static str> {
    let (why, trusted) = tiers.misattributed?;
    let shown_trusted = trusted.is_some_and(|(setting, value)| {
        boot.and_then(|b| read_setting(b, &setting)).as_deref() == Some(value)
    });
    (!shown_trusted).then_some(why)
}

/// T16 with the tier split where the engine gives one: the split in the evidence (and the
/// message where anything came from beyond the device or an offload tier was
/// configured), a Warn where a configured offload tier served nothing, Can't tell for the
/// split where its KV manager is known to misattribute it. A run without the split's
/// counters keeps its result as it is.
pub fn with_tiers(
    engine: &EngineDescriptor,
    before: Option<&Snapshot>,
    after: Option<&Snapshot>,
    boot: Option<&BootFacts>,
    result: CheckResult,
) -> CheckResult {
    let Some(tiers) = engine.prefix_cache.and_then(|p| p.tiers) else {
        return result;
    };
    let offload = offload_configured(&tiers, boot, after);
    let split = match (before, after) {
        (Some(b), Some(a)) => tier_split(&tiers, b, a),
        _ => None,
    };
    let mut result = match &offload {
        Some(how) => result.with("offload_tier", how.as_str()),
        None => result,
    };
    if let (Some(library), Some(b), Some(a)) = (tiers.library_counters, before, after) {
        match library_deltas(&library, b, a) {
            Some(Ok((requested, hits))) => {
                result = result
                    .with("library", library.library)
                    .with("library_requested_tokens", requested)
                    .with("library_hit_tokens", hits);
            }
            Some(Err(why)) => result = result.with("library_unknown", why),
            None => {}
        }
    }
    let split = match split {
        None => return result,
        Some(Err(why)) => return result.with("tier_split_unknown", why),
        Some(Ok(split)) => split,
    };
    if let Some(why) = split_untrusted(&tiers, boot) {
        result = result.with("tier_split_unknown", why);
        result.message = format!(
            "{}; which tier served the cached tokens cannot be told: {why}",
            result.message
        );
        if offload.is_some() && result.status == Status::Pass {
            result.status = Status::Unknown;
        }
        return result;
    }
    result = result
        .with("device_tokens", split.device)
        .with("offload_tokens", split.offload)
        .with("peer_tokens", split.peer);
    if let Some(computed) = split.computed {
        result = result.with("computed_tokens", computed);
    }
    let beyond_device = split.offload + split.peer;
    let words = split_words(&split);
    match offload {
        Some(how) if beyond_device == 0.0 && result.status != Status::Unknown => {
            let nothing = format!(
                "an offload tier was configured ({how}) and served none of the run's prompt tokens ({words}): the run measured no offload"
            );
            result.message = if result.status == Status::Warn {
                format!("{}; and {nothing}", result.message)
            } else {
                nothing
            };
            result.status = Status::Warn;
        }
        Some(_) => result.message = format!("{} ({words})", result.message),
        None if beyond_device > 0.0 => result.message = format!("{} ({words})", result.message),
        None => {}
    }
    result
}

/// The split in words: each tier's tokens, then those computed.
fn split_words(split: &TierSplit) -> String {
    let mut parts = vec![
        format!("device cache {}", fmt::thousands_f(split.device)),
        format!("host or disk offload {}", fmt::thousands_f(split.offload)),
        format!(
            "peer or external connector {}",
            fmt::thousands_f(split.peer)
        ),
    ];
    if let Some(computed) = split.computed {
        parts.push(format!("computed {}", fmt::thousands_f(computed)));
    }
    parts.join(", ")
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

    /// vLLM 0.16 under preemption (fixtures/real/vllm-0.16-cpu/kv-too-small): 16
    /// requests of 32 prompt tokens, 512 in all by `vllm:prompt_tokens_total`, and 15,840
    /// tokens looked up in the cache, each recompute after a preemption looking the
    /// request's prompt and output so far up again. The share is of those lookups, and T16
    /// says so; where the lookups are the prompts (0.32 counts only the first), the words
    /// stay the run's prompt tokens.
    #[test]
    fn lookups_beyond_the_prompts_are_named_as_lookups() {
        let with_prompts = |hits: f64, queries: f64, prompts: f64| {
            snapshot(&[
                ("vllm:prefix_cache_hits_total", hits),
                ("vllm:prefix_cache_queries_total", queries),
                ("vllm:prompt_tokens_total", prompts),
            ])
        };
        let before = with_prompts(0.0, 0.0, 0.0);
        let r = prefix_cache(
            &VLLM,
            Some(&before),
            Some(&with_prompts(0.0, 15_840.0, 512.0)),
            None,
            false,
        )
        .unwrap();
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert!(
            r.message.starts_with(
                "the prefix cache served 0.0% of the 15,840 tokens looked up in it (0), more lookups than the run's 512 prompt tokens"
            ),
            "{}",
            r.message
        );
        let r = prefix_cache(
            &VLLM,
            Some(&before),
            Some(&with_prompts(0.0, 512.0, 512.0)),
            None,
            false,
        )
        .unwrap();
        assert!(
            r.message
                .starts_with("the prefix cache served 0.0% of the run's prompt tokens (0 of 512)"),
            "{}",
            r.message
        );
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

    /// A vLLM 0.32 reading: the prefix-cache counters, the cached tokens by tier (device,
    /// host, disk, p2p, external_unspecified, as `CacheHitSource` names them) and the
    /// prompt tokens prefilled here (`local_compute`).
    fn vllm_tiers(hits: f64, queries: f64, by_tier: [f64; 5], computed: f64) -> Snapshot {
        use crate::testing::{sample, snapshot};
        let mut samples = vec![
            sample("vllm:prefix_cache_hits_total", &[], hits),
            sample("vllm:prefix_cache_queries_total", &[], queries),
            sample(
                "vllm:prompt_tokens_by_source_total",
                &[("source", "local_compute")],
                computed,
            ),
        ];
        for (tier, tokens) in ["device", "host", "disk", "p2p", "external_unspecified"]
            .into_iter()
            .zip(by_tier)
        {
            samples.push(sample(
                "vllm:prompt_tokens_cached_by_source_total",
                &[("source", tier)],
                tokens,
            ));
        }
        snapshot(None, samples)
    }

    fn boot_with(settings: &[(&str, crate::model::PyValue)]) -> BootFacts {
        BootFacts {
            non_default_args: Some(
                settings
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), v.clone()))
                    .collect(),
            ),
            ..BootFacts::default()
        }
    }

    fn t16_with_tiers(
        before: &Snapshot,
        after: &Snapshot,
        boot: Option<&BootFacts>,
    ) -> CheckResult {
        let r = prefix_cache(&VLLM, Some(before), Some(after), None, false).unwrap();
        with_tiers(&VLLM, Some(before), Some(after), boot, r)
    }

    /// `--kv-offloading-size 4` prints `'kv_offloading_size': 4.0` among vLLM's
    /// non-default args. A run of 9,216 fresh prompt tokens that all were prefilled here
    /// (the device cache served 0, no tier beyond it anything) measured no offload: T16
    /// warns, though its share (0 of 9,216) alone passes. The same run where the host tier
    /// served 2,048 tokens (a connector's hits count in its tier, not in
    /// `prefix_cache_hits`) passes and says the split.
    #[test]
    fn an_offload_tier_that_served_nothing_warns() {
        use crate::model::PyValue;
        let boot = boot_with(&[("kv_offloading_size", PyValue::Float(4.0))]);
        let before = vllm_tiers(0.0, 0.0, [0.0; 5], 0.0);
        let nothing = vllm_tiers(0.0, 9_216.0, [0.0; 5], 9_216.0);
        let r = t16_with_tiers(&before, &nothing, Some(&boot));
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert_eq!(
            r.message,
            "an offload tier was configured (kv_offloading_size 4.0, as the boot log shows) \
             and served none of the run's prompt tokens (device cache 0, host or disk offload 0, \
             peer or external connector 0, computed 9,216): the run measured no offload"
        );
        assert_eq!(r.evidence_f64("computed_tokens"), Some(9_216.0));
        let served = vllm_tiers(0.0, 9_216.0, [0.0, 2_048.0, 0.0, 0.0, 0.0], 7_168.0);
        let r = t16_with_tiers(&before, &served, Some(&boot));
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert!(
            r.message.ends_with(
                "(device cache 0, host or disk offload 2,048, peer or external connector 0, computed 7,168)"
            ),
            "{}",
            r.message
        );
        assert_eq!(r.evidence_f64("offload_tokens"), Some(2_048.0));
        // Without an offload tier configured, a run the device alone served keeps its
        // verdict and its words; the split is evidence only.
        let plain = prefix_cache(&VLLM, Some(&before), Some(&nothing), None, false).unwrap();
        let r = t16_with_tiers(&before, &nothing, None);
        assert_eq!((r.status, &r.message), (plain.status, &plain.message));
        assert_eq!(r.evidence_f64("device_tokens"), Some(0.0));
    }

    /// LMCache's connector does not say which tier it read: its hits count as
    /// `external_unspecified`, beyond the device, so a configured LMCache that served
    /// them is no Warn. The connector shows in the printed `KVTransferConfig`.
    #[test]
    fn an_lmcache_connector_counts_its_hits_beyond_the_device() {
        use crate::model::PyValue;
        let boot = boot_with(&[(
            "kv_transfer_config",
            PyValue::Raw(
                "KVTransferConfig(kv_connector='LMCacheConnectorV1', engine_id='e', kv_role='kv_both')"
                    .into(),
            ),
        )]);
        let before = vllm_tiers(0.0, 0.0, [0.0; 5], 0.0);
        let after = vllm_tiers(0.0, 9_216.0, [0.0, 0.0, 0.0, 0.0, 4_096.0], 5_120.0);
        let r = t16_with_tiers(&before, &after, Some(&boot));
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(r.evidence_f64("peer_tokens"), Some(4_096.0));
        let nothing = vllm_tiers(0.0, 9_216.0, [0.0; 5], 9_216.0);
        let r = t16_with_tiers(&before, &nothing, Some(&boot));
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!(
            r.message
                .contains("LMCacheConnectorV1 in kv_transfer_config"),
            "{}",
            r.message
        );
        // LMCache's own counters, one series per worker (tensor parallel 2: each worker
        // retrieves its shard of the same 4,096 tokens of the 5,120 asked), written at
        // its first count, so the before reading has none: the instance's figure is one
        // worker's, not the two added.
        let mut samples = after.metrics.samples().to_vec();
        for worker in ["0", "1"] {
            samples.push(crate::testing::sample(
                "lmcache:num_requested_tokens_total",
                &[("model_name", "m"), ("worker_id", worker)],
                5_120.0,
            ));
            samples.push(crate::testing::sample(
                "lmcache:num_hit_tokens_total",
                &[("model_name", "m"), ("worker_id", worker)],
                4_096.0,
            ));
        }
        let with_library = crate::testing::snapshot(None, samples);
        let r = t16_with_tiers(&before, &with_library, Some(&boot));
        assert_eq!(r.evidence_f64("library_hit_tokens"), Some(4_096.0));
        assert_eq!(r.evidence_f64("library_requested_tokens"), Some(5_120.0));
        assert_eq!(r.evidence["library"], "LMCache");
    }

    /// A recording from before the split counters (vLLM 0.28 has `prompt_tokens_by_source`
    /// but no `prompt_tokens_cached_by_source`) keeps today's verdict, an offload tier
    /// configured or not.
    #[test]
    fn a_run_without_the_split_keeps_its_verdict() {
        use crate::model::PyValue;
        let boot = boot_with(&[("kv_offloading_size", PyValue::Float(4.0))]);
        let (before, after) = (vllm(0.0, 63.0), vllm(0.0, 2_879.0));
        let plain = prefix_cache(&VLLM, Some(&before), Some(&after), None, false).unwrap();
        let r = with_tiers(
            &VLLM,
            Some(&before),
            Some(&after),
            Some(&boot),
            plain.clone(),
        );
        assert_eq!((r.status, &r.message), (plain.status, &plain.message));
    }

    /// TensorRT-LLM's default V1 KV cache manager puts every hit in the gpu tier: its
    /// split is no evidence. With host offload configured (`host_cache_size` in the
    /// printed `KvCacheConfig`) a share that passes becomes Can't tell; a server whose
    /// config shows `use_kv_cache_manager_v2=True` has its split read, and its host tier
    /// served none of the 512 cached tokens: T16 warns that it measured no offload.
    #[test]
    fn a_split_from_a_manager_known_to_misattribute_cannot_be_told() {
        use crate::testing::{sample, snapshot};
        let reading = |cached: f64, gpu: f64, host: f64| {
            snapshot(
                None,
                vec![
                    sample("trtllm_prompt_tokens_total", &[], 9_216.0),
                    sample("trtllm_prompt_cached_tokens_total", &[], cached),
                    sample(
                        "trtllm_prompt_cache_hit_tokens_total",
                        &[("cache_tier", "gpu")],
                        gpu,
                    ),
                    sample(
                        "trtllm_prompt_cache_hit_tokens_total",
                        &[("cache_tier", "host")],
                        host,
                    ),
                ],
            )
        };
        // As TensorRT-LLM 1.3's `LLM Args:` line prints it (the recorded qwen3-8b run's,
        // with a host cache set).
        let boot = |v2: &str| {
            BootFacts {
            llm_args: Some(format!(
                "model='m' kv_cache_config=KvCacheConfig(enable_block_reuse=True, host_cache_size=4000000000, disk_cache_size=None, use_kv_cache_manager_v2={v2}, enable_swa_scratch_reuse=False) max_batch_size=64"
            )),
            ..BootFacts::default()
        }
        };
        let before = snapshot(
            None,
            vec![
                sample("trtllm_prompt_tokens_total", &[], 0.0),
                sample("trtllm_prompt_cached_tokens_total", &[], 0.0),
                sample(
                    "trtllm_prompt_cache_hit_tokens_total",
                    &[("cache_tier", "gpu")],
                    0.0,
                ),
                sample(
                    "trtllm_prompt_cache_hit_tokens_total",
                    &[("cache_tier", "host")],
                    0.0,
                ),
            ],
        );
        let after = reading(512.0, 512.0, 0.0);
        let t16 = |boot: &BootFacts| {
            let r = prefix_cache(&TRTLLM, Some(&before), Some(&after), None, false).unwrap();
            with_tiers(&TRTLLM, Some(&before), Some(&after), Some(boot), r)
        };
        let v1 = t16(&boot("False"));
        assert_eq!(v1.status, Status::Unknown, "{}", v1.message);
        assert!(
            v1.message
                .contains("cannot be told: TensorRT-LLM's V1 KV cache manager"),
            "{}",
            v1.message
        );
        assert_eq!(v1.evidence_f64("device_tokens"), None);
        let v2 = t16(&boot("True"));
        assert_eq!(v2.status, Status::Warn, "{}", v2.message);
        assert_eq!(v2.evidence_f64("device_tokens"), Some(512.0));
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
