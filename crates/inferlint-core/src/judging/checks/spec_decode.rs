//! T27: speculative decoding measured on content it was never meant for.
//!
//! A speculating engine proposes a few tokens a step (a draft model, an EAGLE or MTP
//! head, or n-gram lookup in the request's own text) and the target model accepts the
//! prefix it agrees with. How much it speeds a run up is the acceptance, and acceptance
//! is a property of the content: prose a drafter was trained on, code, text the answer
//! repeats. Random token ids, a trace replay's hashed prompts, or an answer forced past
//! its end (`ignore_eos`) measure a drafter on text nobody asks it for, and the speed-up
//! (or the slow-down) says nothing of the deployment. An engine that counts its drafts
//! ([`crate::engine::SpecDecodeCounters`]) gives over the run, from the two readings'
//! deltas, the acceptance rate (accepted / draft tokens) and the mean accepted length
//! (1 + accepted / drafts: the bonus token the target model adds to every verified
//! draft, as vLLM's own log line counts it); per position where the engine exports it.

use crate::engine::{EngineDescriptor, SpecDecodeCounters};
use crate::judging::checks::counters::restart_between;
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::client::ClientAccount;
use crate::model::{BootFacts, PyValue, Snapshot};
use crate::story::fmt;

/// A gap between two streamed events below this many milliseconds is two events of one
/// engine step, not two steps. Each step schedules, runs a forward pass of the whole
/// model, samples and writes its events to the connection; the load tool times each
/// event as it parses it (`vllm bench serve`: `time.perf_counter()` per SSE event), so
/// events written together are parsed microseconds apart, while no engine decodes a
/// step of a served model in a tenth of a millisecond.
pub const NEAR_ZERO_GAP_MS: f64 = 0.1;

/// The share of near-zero gaps, or of tokens that arrived in a chunk with others, from
/// which the tool's inter-token latency percentiles describe bursts rather than tokens:
/// one in twenty, the share T25 allows between a tool's token count and the server's. At
/// that share the tool's median gap sits 2.5 percentile points from the per-token one and
/// its mean is 5% off.
pub const BURST_SHARE: f64 = 0.05;

/// The datasets whose prompts are not text anyone writes, by the name the load tools
/// give them: random token ids (`vllm bench serve` `random`, `random-mm`,
/// `random-rerank`, `prefix_repetition`; SGLang's `bench_serving` `random`, `random-ids`,
/// `generated-shared-prefix`; GuideLLM's `synthetic_text`; AIPerf's `synthetic`), or a
/// trace's lengths filled with random or hashed ids (`burstgpt`, `timed_trace`). A
/// drafter meets none of them in a deployment.
pub const SYNTHETIC_DATASETS: &[&str] = &[
    "random",
    "random-mm",
    "random-rerank",
    "random-ids",
    "prefix_repetition",
    "generated-shared-prefix",
    "synthetic_text",
    "synthetic",
    "burstgpt",
    "timed_trace",
];

fn t27(status: Status, message: String) -> CheckResult {
    CheckResult::new(Tripwire::T27, status, message)
}

/// The draft counters' deltas over the run.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecDeltas {
    /// Drafts proposed.
    pub drafts: f64,
    /// Tokens proposed.
    pub draft_tokens: f64,
    /// Proposed tokens accepted.
    pub accepted: f64,
    /// Accepted tokens by draft position (0 first), where the engine exports them.
    pub per_position: Vec<f64>,
    /// How many positions the engine exports (its draft length, for vLLM).
    pub positions: usize,
}

/// The deltas between two readings: `Ok(None)` when neither reading has the counters,
/// an error naming what is missing when only one has them or the server restarted.
pub fn deltas_between(
    counters: &SpecDecodeCounters,
    before: &Snapshot,
    after: &Snapshot,
) -> Result<Option<SpecDeltas>, String> {
    let names = [
        counters.drafts,
        counters.draft_tokens,
        counters.accepted_tokens,
    ];
    let in_before = names.map(|n| before.metrics.total(n));
    let in_after = names.map(|n| after.metrics.total(n));
    if in_before.iter().chain(&in_after).all(Option::is_none) {
        return Ok(None);
    }
    if let Some(restart) = restart_between(before, after) {
        return Err(restart.message);
    }
    let mut delta = [0.0; 3];
    for (i, name) in names.iter().enumerate() {
        match (in_before[i], in_after[i]) {
            (Some(b), Some(a)) => delta[i] = a - b,
            _ => return Err(format!("{name} is missing from a snapshot")),
        }
    }
    let (mut per_position, mut positions) = (Vec::new(), 0);
    if let Some((name, label)) = counters.accepted_per_position {
        let by_position = |s: &Snapshot| -> Vec<(usize, f64)> {
            s.metrics
                .series(name)
                .filter_map(|x| Some((x.label(label)?.parse::<usize>().ok()?, x.value)))
                .collect()
        };
        let (b, a) = (by_position(before), by_position(after));
        positions = a.iter().map(|(p, _)| p + 1).max().unwrap_or(0);
        per_position = (0..positions)
            .map(|p| {
                let sum = |v: &[(usize, f64)]| -> Option<f64> {
                    let hits: Vec<f64> = v.iter().filter(|(q, _)| *q == p).map(|x| x.1).collect();
                    (!hits.is_empty()).then(|| hits.iter().sum())
                };
                match (sum(&b), sum(&a)) {
                    (Some(b), Some(a)) => a - b,
                    _ => f64::NAN,
                }
            })
            .collect();
        if per_position.iter().any(|v| v.is_nan()) {
            per_position.clear();
        }
    }
    Ok(Some(SpecDeltas {
        drafts: delta[0],
        draft_tokens: delta[1],
        accepted: delta[2],
        per_position,
        positions,
    }))
}

/// Whether the boot log shows speculation on (`Some(true)`), off, or cannot say; and the
/// draft length its setting gives.
pub fn configured(
    engine: &EngineDescriptor,
    boot: Option<&BootFacts>,
) -> (Option<bool>, Option<u64>) {
    let Some(boot) = boot else {
        return (None, None);
    };
    let spec = engine.speculation;
    let setting = [&boot.non_default_args, &boot.server_args]
        .into_iter()
        .flatten()
        .find_map(|s| s.get(spec.setting));
    let length = match (setting, spec.draft_length_key) {
        (Some(PyValue::Dict(items)), Some(key)) => items.iter().find_map(|(k, v)| match v {
            PyValue::Int(n) if k == key && *n > 0 => Some(*n as u64),
            _ => None,
        }),
        _ => None,
    };
    (boot.speculative, length)
}

/// What the load's content says of the measured acceptance.
#[derive(Debug, Clone, Default, PartialEq)]
struct Content {
    dataset: Option<String>,
    ignore_eos: Option<bool>,
    /// Output tokens per request: the mean of the completed ones, else asked for.
    output_tokens: Option<f64>,
    /// Tokens per chunk and the share of tokens that shared a chunk.
    tokens: u64,
    chunks: u64,
    near_zero_gaps: usize,
    gaps: usize,
    itl_p50_ms: Option<f64>,
    itl_p99_ms: Option<f64>,
}

fn content(load: &ClientAccount) -> Content {
    let requested_eos = load.requests.iter().any(|r| r.ignore_eos == Some(true));
    let ignore_eos = match load.advertised.ignore_eos {
        Some(true) => Some(true),
        _ if requested_eos => Some(true),
        other => other,
    };
    // What the answers were: the mean of the completed ones, else what was asked.
    let output_tokens = match (load.total_output_tokens, load.completed) {
        (Some(t), Some(c)) if c > 0 => Some(t as f64 / c as f64),
        _ => load.advertised.output_tokens,
    };
    let (mut tokens, mut chunks) = (0, 0);
    for r in load.requests.iter().filter(|r| r.completed()) {
        if let (Some(out), Some(n)) = (r.output_tokens.get(), r.chunks()) {
            tokens += out;
            chunks += n;
        }
    }
    let mut gaps: Vec<f64> = load.inter_token_ms.iter().map(|&g| f64::from(g)).collect();
    gaps.retain(|g| g.is_finite());
    gaps.sort_by(f64::total_cmp);
    Content {
        dataset: load.advertised.dataset.clone(),
        ignore_eos,
        output_tokens,
        tokens,
        chunks,
        near_zero_gaps: gaps.iter().filter(|g| **g < NEAR_ZERO_GAP_MS).count(),
        gaps: gaps.len(),
        itl_p50_ms: fmt::percentile(&gaps, 50.0),
        itl_p99_ms: fmt::percentile(&gaps, 99.0),
    }
}

/// What T27 reads.
#[derive(Debug, Clone, Copy)]
pub struct SpecInputs<'a> {
    /// The engine.
    pub engine: &'a EngineDescriptor,
    /// The readings around the load.
    pub before: Option<&'a Snapshot>,
    /// See `before`.
    pub after: Option<&'a Snapshot>,
    /// The server's boot log.
    pub boot: Option<&'a BootFacts>,
    /// The load tool's account.
    pub load: Option<&'a ClientAccount>,
}

/// T27 over a run; `None` when it has too little to say even whether the server
/// speculated (no readings with the counters and no boot log).
pub fn speculative_decoding(inputs: &SpecInputs) -> Option<CheckResult> {
    let engine = inputs.engine;
    let spec = engine.speculation;
    let (on, draft_length) = configured(engine, inputs.boot);
    let not_speculating = |why: &str| {
        t27(
            Status::NotApplicable,
            format!("{why}, so the server did no speculative decoding"),
        )
    };
    let boot_says_off = "the boot log shows no speculative setting";
    let Some(counters) = spec.counters else {
        return match on {
            Some(true) => Some(
                t27(
                    Status::Unknown,
                    format!(
                        "speculative decoding is on ({} in the boot log), but {} serves no counter of its drafts over a run, so its acceptance cannot be measured",
                        spec.setting, engine.name
                    ),
                )
                .with("speculative_setting", spec.setting),
            ),
            Some(false) => Some(not_speculating(boot_says_off)),
            None => Some(CheckResult::not_checked(
                Tripwire::T27,
                format!(
                    "needs the server's boot log: {} serves no counter of drafts, so only its boot log says whether it speculated",
                    engine.name
                ),
                &[crate::run::model::input::BOOT_LOG],
            )),
        };
    };
    let (Some(before), Some(after)) = (inputs.before, inputs.after) else {
        return match on {
            Some(true) => Some(t27(
                Status::Unknown,
                format!(
                    "speculative decoding is on ({} in the boot log), but its acceptance needs the before and after readings",
                    spec.setting
                ),
            )),
            Some(false) => Some(not_speculating(boot_says_off)),
            None => None,
        };
    };
    let deltas = match deltas_between(&counters, before, after) {
        Err(why) => return Some(t27(Status::Unknown, why).with("drafts_counter", counters.drafts)),
        Ok(None) => {
            return Some(match on {
                Some(true) => t27(
                    Status::Unknown,
                    format!(
                    "speculative decoding is on ({} in the boot log), but neither reading has {}",
                    spec.setting, counters.drafts
                ),
                )
                .with("drafts_counter", counters.drafts),
                Some(false) => not_speculating(boot_says_off),
                None if counters.only_when_on => not_speculating(&format!(
                    "neither reading has {}, which {} serves only when speculating",
                    counters.drafts, engine.name
                )),
                None => t27(
                    Status::Unknown,
                    format!(
                        "neither reading has {} and no boot log says whether the server speculated",
                        counters.drafts
                    ),
                ),
            })
        }
        Ok(Some(d)) => d,
    };
    // The draft length: the boot log's setting, else one series per position.
    let draft_length = draft_length.or((deltas.positions > 0).then_some(deltas.positions as u64));
    let figures = |r: CheckResult| {
        let r = r
            .with("drafts", deltas.drafts)
            .with("draft_tokens", deltas.draft_tokens)
            .with("accepted_tokens", deltas.accepted);
        match draft_length {
            Some(k) => r.with("draft_length", k),
            None => r,
        }
    };
    let sane = |v: f64| v.is_finite() && v >= 0.0;
    if !(sane(deltas.drafts) && sane(deltas.draft_tokens) && sane(deltas.accepted))
        || deltas.accepted > deltas.draft_tokens
        || deltas.draft_tokens < deltas.drafts
    {
        return Some(figures(t27(
            Status::Unknown,
            format!(
                "the draft counters do not describe one set of drafts ({} drafts, {} draft tokens, {} accepted)",
                fmt::g(deltas.drafts),
                fmt::g(deltas.draft_tokens),
                fmt::g(deltas.accepted)
            ),
        )));
    }
    if deltas.drafts == 0.0 {
        return Some(figures(t27(
            Status::Unknown,
            format!(
                "speculative decoding is on, but {} did not move over the run: no draft was proposed, so no acceptance was measured",
                counters.drafts
            ),
        )));
    }
    let rate = deltas.accepted / deltas.draft_tokens;
    let mean_length = 1.0 + deltas.accepted / deltas.drafts;
    let per_position: Vec<f64> = deltas
        .per_position
        .iter()
        .map(|a| a / deltas.drafts)
        .collect();
    let mut measured = format!(
        "acceptance {} ({} of {} draft tokens), mean accepted length {}",
        fmt::percent(rate, 0),
        fmt::thousands_f(deltas.accepted),
        fmt::thousands_f(deltas.draft_tokens),
        one_decimal(mean_length)
    );
    if let Some(k) = draft_length {
        measured.push_str(&format!(" of {}", k + 1));
    }
    if !per_position.is_empty() {
        let rates: Vec<String> = per_position.iter().map(|r| fmt::percent(*r, 0)).collect();
        measured.push_str(&format!(" (by position {})", rates.join(", ")));
    }
    let evidence = |r: CheckResult| {
        figures(r)
            .with("acceptance_rate", rate)
            .with("mean_accepted_length", mean_length)
            .with("acceptance_by_position", per_position.clone())
    };
    let Some(load) = inputs.load else {
        return Some(evidence(t27(
            Status::Unknown,
            format!(
                "{measured}; what it was measured on cannot be told without the load tool's result file"
            ),
        )));
    };
    let c = content(load);
    let mut problems: Vec<String> = Vec::new();
    let mut on_what: Vec<String> = Vec::new();
    match &c.dataset {
        Some(d) if SYNTHETIC_DATASETS.contains(&d.as_str()) => {
            on_what.push(format!("{d} prompts"));
            problems.push("synthetic prompts are not the content a drafter serves".into());
        }
        Some(d) => on_what.push(format!("the {d} dataset")),
        None => {}
    }
    match c.ignore_eos {
        Some(true) => {
            on_what.push("with ignore_eos".into());
            problems
                .push("ignore_eos runs answers past their end, into text no request reads".into());
        }
        Some(false) => on_what.push("without ignore_eos".into()),
        None => {}
    }
    // A draft proposes up to k tokens after the last one accepted; an answer shorter than
    // k ends inside its first draft, so the positions past its length are never verified
    // and the per-position figures there count nothing the deployment's answers will.
    if let (Some(out), Some(k)) = (c.output_tokens, draft_length) {
        if out < k as f64 {
            problems.push(format!(
                "answers of {} tokens are shorter than a draft of {k}: its last positions are never reached",
                fmt::g(out)
            ));
        }
    }
    let shared = if c.tokens > 0 && c.chunks > 0 && c.tokens > c.chunks {
        (c.tokens - c.chunks) as f64 / c.tokens as f64
    } else {
        0.0
    };
    let near_zero = if c.gaps > 0 {
        c.near_zero_gaps as f64 / c.gaps as f64
    } else {
        0.0
    };
    if c.gaps > 0 && near_zero >= BURST_SHARE {
        let (p50, p99) = (
            c.itl_p50_ms.unwrap_or(f64::NAN),
            c.itl_p99_ms.unwrap_or(f64::NAN),
        );
        problems.push(format!(
            "{} of the inter-token gaps are under {} ms (accepted drafts arriving as bursts), so the tool's ITL p50 {} ms and p99 {} ms describe bursts, not tokens",
            fmt::percent(near_zero, 0),
            fmt::g(NEAR_ZERO_GAP_MS),
            one_decimal(p50),
            one_decimal(p99)
        ));
    }
    let bursty = c.gaps > 0 && near_zero >= BURST_SHARE;
    let evidence = |r: CheckResult| {
        let mut r = evidence(r)
            .with("bursty", bursty)
            .with("near_zero_gaps", c.near_zero_gaps)
            .with("itl_gaps", c.gaps)
            .with("burst_share", BURST_SHARE);
        if let Some(d) = &c.dataset {
            r = r.with("dataset", d.as_str());
        }
        if let Some(e) = c.ignore_eos {
            r = r.with("ignore_eos", e);
        }
        if let Some(o) = c.output_tokens {
            r = r.with("output_tokens_per_request", o);
        }
        if c.chunks > 0 {
            r = r.with("load_tokens_per_chunk", c.tokens as f64 / c.chunks as f64);
            r = r.with("shared_chunk_share", shared);
        }
        r
    };
    let mut said = match (c.dataset.is_some(), on_what.is_empty()) {
        (_, true) => measured.clone(),
        (true, false) => format!("{measured}, measured on {}", on_what.join(" ")),
        (false, false) => format!("{measured}, measured {}", on_what.join(" ")),
    };
    // Accepted drafts streamed as one chunk: the tool's gaps are between chunks. Said, not
    // judged: it is what speculation does, and T25 judges a tool's chunks against tokens.
    if shared >= BURST_SHARE && c.chunks > 0 {
        said.push_str(&format!(
            " (its answers arrived {} tokens a chunk on average, so the load tool's inter-token gaps are between chunks)",
            one_decimal(c.tokens as f64 / c.chunks as f64)
        ));
    }
    if !problems.is_empty() {
        return Some(evidence(t27(
            Status::Warn,
            format!(
                "{said}: {}; the speed-up it gives says nothing of the content it will serve",
                problems.join("; ")
            ),
        )));
    }
    if c.dataset.is_none() || c.ignore_eos.is_none() {
        let unsaid = match (c.dataset.is_none(), c.ignore_eos.is_none()) {
            (true, true) => "which dataset the load sent, nor whether it asked for ignore_eos",
            (true, false) => "which dataset the load sent",
            _ => "whether the load asked for ignore_eos",
        };
        return Some(evidence(t27(
            Status::Unknown,
            format!("{said}; the load tool's file does not say {unsaid}"),
        )));
    }
    Some(evidence(t27(Status::Pass, said)))
}

fn one_decimal(v: f64) -> String {
    format!("{v:.1}")
}

/// What to change when T27 warns: measure on the content the drafter will serve.
pub fn advice(result: &CheckResult, engine: &EngineDescriptor) -> Vec<String> {
    if result.status != Status::Warn {
        return Vec::new();
    }
    let mut advice = vec![format!(
        "measure speculative decoding on prompts like the ones it will serve (a custom dataset of real requests), without ignore_eos, with answers longer than a draft, and beside it a run on the same prompts without {}",
        engine.speculation.turn_on
    )];
    if result.evidence_as::<bool>("bursty") == Some(true) {
        advice.push(
            "report time per output token (TPOT) beside the inter-token latency percentiles: a burst of accepted tokens arrives at once, and its gaps of zero are not a token's latency".to_owned(),
        );
    }
    advice
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{SGLANG, VLLM};
    use crate::model::client::LoadTool;
    use crate::testing::{sample, snapshot};

    const DRAFTS: &str = "vllm:spec_decode_num_drafts_total";
    const DRAFT_TOKENS: &str = "vllm:spec_decode_num_draft_tokens_total";
    const ACCEPTED: &str = "vllm:spec_decode_num_accepted_tokens_total";
    const PER_POS: &str = "vllm:spec_decode_num_accepted_tokens_per_pos_total";

    /// A vLLM reading with its three counters and one series per position, as
    /// `SpecDecodingProm` writes them (`position` 0 to num_speculative_tokens - 1).
    fn vllm(drafts: f64, tokens: f64, accepted: f64, per_pos: &[f64]) -> Snapshot {
        let mut samples = vec![
            sample(DRAFTS, &[("engine", "0")], drafts),
            sample(DRAFT_TOKENS, &[("engine", "0")], tokens),
            sample(ACCEPTED, &[("engine", "0")], accepted),
        ];
        for (p, v) in per_pos.iter().enumerate() {
            let p = p.to_string();
            samples.push(sample(PER_POS, &[("engine", "0"), ("position", &p)], *v));
        }
        snapshot(None, samples)
    }

    /// vLLM's boot log: `'speculative_config': {'method': 'ngram',
    /// 'num_speculative_tokens': 3}` among its non-default args, or none.
    fn boot(speculating: bool) -> BootFacts {
        let mut args = crate::model::Settings::new();
        if speculating {
            args.insert(
                "speculative_config".into(),
                PyValue::Dict(vec![
                    ("method".into(), PyValue::Str("ngram".into())),
                    ("num_speculative_tokens".into(), PyValue::Int(3)),
                ]),
            );
        }
        BootFacts {
            non_default_args: Some(args),
            speculative: Some(speculating),
            ..BootFacts::default()
        }
    }

    fn load(dataset: &str, ignore_eos: bool, output: f64) -> ClientAccount {
        let mut a = ClientAccount::new(LoadTool::VllmBench);
        a.advertised.dataset = Some(dataset.into());
        a.advertised.ignore_eos = Some(ignore_eos);
        a.advertised.output_tokens = Some(output);
        a
    }

    fn judge(
        before: Option<&Snapshot>,
        after: Option<&Snapshot>,
        boot: Option<&BootFacts>,
        load: Option<&ClientAccount>,
    ) -> Option<CheckResult> {
        speculative_decoding(&SpecInputs {
            engine: &VLLM,
            before,
            after,
            boot,
            load,
        })
    }

    /// 1,800 drafts of 3 tokens at most, 5,366 tokens proposed and 1,234 accepted: 23%,
    /// and each verified draft yields 1 + 1,234 / 1,800 = 1.7 tokens of the 4 a whole
    /// accepted draft gives (3 drafted and the target model's own). Measured on random
    /// prompts with ignore_eos, it warns; the same counters on a custom dataset without
    /// ignore_eos and 32-token answers pass.
    #[test]
    fn acceptance_on_random_prompts_with_ignore_eos_warns() {
        let before = vllm(0.0, 0.0, 0.0, &[0.0, 0.0, 0.0]);
        let after = vllm(1_800.0, 5_366.0, 1_234.0, &[700.0, 354.0, 180.0]);
        let on = boot(true);
        let random = load("random", true, 32.0);
        let r = judge(Some(&before), Some(&after), Some(&on), Some(&random)).unwrap();
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!(
            r.message.starts_with(
                "acceptance 23% (1,234 of 5,366 draft tokens), mean accepted length 1.7 of 4 (by position 39%, 20%, 10%), measured on random prompts with ignore_eos: "
            ),
            "{}",
            r.message
        );
        assert_eq!(r.evidence_as::<u64>("draft_length"), Some(3));
        let custom = load("custom", false, 32.0);
        let r = judge(Some(&before), Some(&after), Some(&on), Some(&custom)).unwrap();
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert!(r
            .message
            .ends_with("measured on the custom dataset without ignore_eos"));
        // The draft length from the position series alone, without a boot log.
        let r = judge(Some(&before), Some(&after), None, Some(&custom)).unwrap();
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(r.evidence_as::<u64>("draft_length"), Some(3));
    }

    /// Answers of 2 tokens cannot reach a draft's third position; the tool's records of
    /// one burst split into back-to-back events (gaps of 0.01 ms beside 5 ms steps)
    /// make its ITL percentiles describe bursts.
    #[test]
    fn short_answers_and_bursty_gaps_warn() {
        let before = vllm(0.0, 0.0, 0.0, &[]);
        let after = vllm(100.0, 300.0, 150.0, &[]);
        let on = boot(true);
        let short = load("custom", false, 2.0);
        let r = judge(Some(&before), Some(&after), Some(&on), Some(&short)).unwrap();
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!(r
            .message
            .contains("answers of 2 tokens are shorter than a draft of 3"));
        // 32 asked, but the 10 answers stopped at 20 tokens in all: what they were counts.
        let mut stopped = load("custom", false, 32.0);
        (stopped.completed, stopped.total_output_tokens) = (Some(10), Some(20));
        let r = judge(Some(&before), Some(&after), Some(&on), Some(&stopped)).unwrap();
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert_eq!(r.evidence_f64("output_tokens_per_request"), Some(2.0));
        let mut bursty = load("custom", false, 32.0);
        bursty.inter_token_ms = [5.0, 0.01, 0.01].repeat(10);
        let r = judge(Some(&before), Some(&after), Some(&on), Some(&bursty)).unwrap();
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!(
            r.message
                .contains("67% of the inter-token gaps are under 0.1 ms"),
            "{}",
            r.message
        );
        assert_eq!(r.evidence_as::<bool>("bursty"), Some(true));
        // Every gap a step apart: no burst.
        let mut steady = load("custom", false, 32.0);
        steady.inter_token_ms = vec![5.0; 30];
        let r = judge(Some(&before), Some(&after), Some(&on), Some(&steady)).unwrap();
        assert_eq!(r.status, Status::Pass, "{}", r.message);
    }

    /// vLLM registers its draft counters only with a speculative config: readings
    /// without them, and a boot log without the setting, are a server that did not
    /// speculate.
    #[test]
    fn no_speculation_does_not_apply() {
        let plain = snapshot(None, vec![sample("vllm:num_requests_running", &[], 0.0)]);
        let off = boot(false);
        let r = judge(Some(&plain), Some(&plain), Some(&off), None).unwrap();
        assert_eq!(r.status, Status::NotApplicable, "{}", r.message);
        let r = judge(Some(&plain), Some(&plain), None, None).unwrap();
        assert_eq!(r.status, Status::NotApplicable, "{}", r.message);
        let r = judge(None, None, Some(&off), None).unwrap();
        assert_eq!(r.status, Status::NotApplicable, "{}", r.message);
        // Nothing to tell from: no verdict of its own.
        assert!(judge(None, None, None, None).is_none());
    }

    #[test]
    fn speculation_on_without_its_counters_cannot_be_told() {
        let on = boot(true);
        let custom = load("custom", false, 32.0);
        let plain = snapshot(None, vec![sample("vllm:num_requests_running", &[], 0.0)]);
        let r = judge(Some(&plain), Some(&plain), Some(&on), Some(&custom)).unwrap();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert!(r
            .message
            .contains("neither reading has vllm:spec_decode_num_drafts_total"));
        // One reading has them, the other not.
        let with = vllm(10.0, 30.0, 15.0, &[]);
        let r = judge(Some(&plain), Some(&with), Some(&on), Some(&custom)).unwrap();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert!(
            r.message.contains("is missing from a snapshot"),
            "{}",
            r.message
        );
        // No draft over the run.
        let r = judge(Some(&with), Some(&with), Some(&on), Some(&custom)).unwrap();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        // No readings at all.
        let r = judge(None, None, Some(&on), Some(&custom)).unwrap();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        // More accepted than proposed: not one set of drafts.
        let odd = vllm(10.0, 30.0, 40.0, &[]);
        let r = judge(
            Some(&vllm(0.0, 0.0, 0.0, &[])),
            Some(&odd),
            Some(&on),
            Some(&custom),
        );
        assert_eq!(r.map(|r| r.status), Some(Status::Unknown));
    }

    /// 10 answers of 32 tokens streamed in 16 chunks each (accepted drafts sent together):
    /// 2.0 tokens a chunk, said beside the pass.
    #[test]
    fn drafts_streamed_together_are_said() {
        let (before, after) = (vllm(0.0, 0.0, 0.0, &[]), vllm(100.0, 300.0, 150.0, &[]));
        let mut chunked = load("custom", false, 32.0);
        chunked.requests = (0..10)
            .map(|_| crate::model::client::ClientRequest {
                outcome: Some(crate::model::client::RequestOutcome::Completed),
                output_tokens: 32.into(),
                chunk_count: std::num::NonZeroU32::new(16),
                ..Default::default()
            })
            .collect();
        let r = judge(
            Some(&before),
            Some(&after),
            Some(&boot(true)),
            Some(&chunked),
        )
        .unwrap();
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert!(
            r.message
                .ends_with("(its answers arrived 2.0 tokens a chunk on average, so the load tool's inter-token gaps are between chunks)"),
            "{}",
            r.message
        );
    }

    /// Measured, but on what the load's file does not say: no pass.
    #[test]
    fn a_load_that_does_not_say_its_content_is_not_a_pass() {
        let (before, after) = (vllm(0.0, 0.0, 0.0, &[]), vllm(100.0, 300.0, 150.0, &[]));
        let on = boot(true);
        let mut unsaid = load("custom", false, 32.0);
        unsaid.advertised.dataset = None;
        let r = judge(Some(&before), Some(&after), Some(&on), Some(&unsaid)).unwrap();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert!(
            r.message
                .ends_with("does not say which dataset the load sent"),
            "{}",
            r.message
        );
        let r = judge(Some(&before), Some(&after), Some(&on), None).unwrap();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
    }

    /// SGLang's acceptance is a gauge over its last window: speculating, it cannot be
    /// measured over the run; not speculating, T27 does not apply.
    #[test]
    fn an_engine_without_draft_counters() {
        let settings = |on: bool| BootFacts {
            speculative: Some(on),
            ..BootFacts::default()
        };
        let judge = |b: &BootFacts| {
            speculative_decoding(&SpecInputs {
                engine: &SGLANG,
                before: None,
                after: None,
                boot: Some(b),
                load: None,
            })
            .map(|r| r.status)
        };
        assert_eq!(judge(&settings(true)), Some(Status::Unknown));
        assert_eq!(judge(&settings(false)), Some(Status::NotApplicable));
        // Without a boot log nothing says whether it speculated: not checked, naming it.
        let r = speculative_decoding(&SpecInputs {
            engine: &SGLANG,
            before: None,
            after: None,
            boot: None,
            load: None,
        })
        .unwrap();
        assert_eq!(r.status, Status::NotChecked);
        assert!(
            r.message.starts_with("needs the server's boot log"),
            "{}",
            r.message
        );
    }
}
