//! Are two runs comparable, and what moved between them.
//!
//! The runs come in sides: the first side is the baseline, each other side is compared
//! with it, and a side of several runs is a set of repeats whose spread is the run-to-run
//! noise. First the gate, item by item: the server's setup (engine and version, model, KV
//! pool, block size, attention backend, KV dtype, max model length, running cap, GPU) and
//! the load asked for (the tool, concurrency, rate, lengths). Any item that differs makes
//! the runs not comparable; an item one run records and another does not is "cannot
//! tell" for that item, never "same". An item no run records is listed as a reservation:
//! it cannot make the runs differ, but it is not called the same either (`--strict`
//! makes it cannot tell, as does one of the items nothing can be compared without).
//! Then what happened in each run (concurrency reached, preemptions, prefix cache,
//! failures, warm-up), each difference saying how it moves the numbers; then the figures
//! (throughput, TTFT, TPOT, ITL, latency), and, with a margin, the regression gate.

use serde::Serialize;

use crate::analyses::profile::{Better, RunProfile, FIGURES};
use crate::analyses::slo::{
    goodput_gate, GateVerdict as SloGateVerdict, GoodputGate, RunSlo, ServiceLevel,
};
use crate::story::fmt;

/// The version of `compare --json`'s shape; its `schema` field names it.
pub const COMPARE_SCHEMA: &str = "inferlint.compare/1";

/// The runs of one side: one run, or repeats of one setup.
#[derive(Debug, Clone)]
pub struct Side {
    /// The side's label (`--baseline`, a folder).
    pub label: String,
    /// Its runs (repeats of one setup).
    pub runs: Vec<RunProfile>,
}

/// Whether the runs may be compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The runs may be compared.
    Comparable,
    /// They may not: their setup or load differs.
    NotComparable,
    /// A fact one run records and the other does not.
    CannotTell,
}

impl Verdict {
    /// The verdict in words, as the terminal shows it.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Comparable => "comparable",
            Verdict::NotComparable => "not comparable",
            Verdict::CannotTell => "cannot tell",
        }
    }
}

/// One gate item across every run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemState {
    /// Every run records it, with one value.
    Same,
    /// Every run that records it does, and the values differ.
    Differs,
    /// Some runs record it and others do not: cannot tell.
    OneSided,
    /// No run records it.
    NotRecorded,
}

impl ItemState {
    /// The state as the terminal shows it.
    pub fn label(self) -> &'static str {
        match self {
            ItemState::Same => "same",
            ItemState::Differs => "DIFFERS",
            ItemState::OneSided => "CAN'T TELL",
            ItemState::NotRecorded => "not recorded",
        }
    }
}

/// One line of the gate, or of what happened in the runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Item {
    /// The item's key, for scripts.
    pub key: &'static str,
    /// `setup`, `load` or `run`.
    pub group: &'static str,
    /// The item in words.
    pub words: &'static str,
    /// Same, differs, one-sided, or not recorded.
    pub state: ItemState,
    /// One value per run, in the order of the sides and their runs; `null` when that run
    /// does not record it.
    pub values: Vec<Option<String>>,
    /// How a difference moves the numbers, when the values differ or cannot be told.
    pub effect: Option<&'static str>,
}

/// One figure on one side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideFigure {
    /// The mean over the side's runs that measured it.
    pub mean: f64,
    /// The lowest over the side's runs.
    pub min: f64,
    /// The highest over the side's runs.
    pub max: f64,
    /// Runs that measured it.
    pub runs: usize,
    /// `(max - min) / mean`, with two runs or more: the run-to-run noise.
    pub noise: Option<f64>,
    /// The relative change against the baseline side (absent on the baseline).
    pub change: Option<f64>,
    /// Whether the change is in the worse direction.
    pub worse: Option<bool>,
    /// Whether the change is within the larger noise of the two sides.
    pub within_noise: Option<bool>,
}

/// One figure across the sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Moved {
    /// The figure's key, for scripts.
    pub key: &'static str,
    /// The figure in words.
    pub words: &'static str,
    /// Its unit.
    pub unit: &'static str,
    /// Which way is better.
    pub better: Better,
    /// Where each side's value comes from (`load tool (summary)`, ...).
    pub source: &'static str,
    /// One per side, `null` where no run of the side measured it.
    pub sides: Vec<Option<SideFigure>>,
}

/// The regression gate's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateVerdict {
    /// Every figure is within the margin, the noise included.
    Passed,
    /// A figure got worse by more than the margin even at the near edge of its noise.
    Regressed,
    /// A figure may have got worse by more than the margin, but the noise (measured, or
    /// unknown with one run a side) cannot tell it from a repeat.
    Inconclusive,
    /// The runs are not comparable, so there is no gate.
    CannotGate,
}

/// One figure of one side held to the margin.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GatedFigure {
    /// The figure's key.
    pub key: &'static str,
    /// The side held to the baseline.
    pub side: String,
    /// How much worse than the baseline (negative: better), as a fraction.
    pub worse_by: f64,
    /// The noise the difference is read with (the larger `(max - min) / mean` of the two
    /// sides' repeats); `None` with one run a side.
    pub noise: Option<f64>,
    /// Its answer: `passed`, `regressed` or `inconclusive`.
    pub verdict: GateVerdict,
    /// The figure's line, as printed.
    pub words: String,
}

/// The regression gate: the margin, its verdict and each figure's difference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gate {
    /// The margin, as a fraction (`0.05` for 5%).
    pub max_regression: f64,
    /// Its answer.
    pub verdict: GateVerdict,
    /// One sentence per figure that got worse by more than the margin beyond its noise.
    pub regressions: Vec<String>,
    /// Each figure held to the margin, with its interval and answer.
    pub figures: Vec<GatedFigure>,
    /// The largest run-to-run noise measured on repeats, `None` with one run a side.
    pub noise: Option<f64>,
    /// What a reader of the verdict must know: the noise unknown, a margin below it.
    pub warnings: Vec<String>,
    /// Why the gate could not decide.
    pub reason: Option<String>,
}

/// The whole comparison, as `compare --json` prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The JSON schema's id.
    pub schema: &'static str,
    /// May the runs be compared?
    pub verdict: Verdict,
    /// Why not comparable, or why it cannot be told: one sentence each.
    pub reasons: Vec<String>,
    /// Items no run records.
    pub reservations: Vec<String>,
    /// Each side and its runs.
    pub sides: Vec<SideRuns>,
    /// The setup and load items, one per fact.
    pub items: Vec<Item>,
    /// What happened in each run.
    pub runs: Vec<Item>,
    /// The figures that moved.
    pub moved: Vec<Moved>,
    /// The regression gate, when a margin was given.
    pub gate: Option<Gate>,
    /// The service level held to every run and the goodput gate under it, when one was
    /// given (`compare --slo`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_level: Option<CompareSlo>,
}

/// A service level held to a comparison: each run, by side, and each other side's
/// goodput against the baseline's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareSlo {
    /// The service level, as written.
    pub spec: String,
    /// Each side's label and its runs.
    pub sides: Vec<(String, Vec<RunSlo>)>,
    /// Each other side's goodput gate against the first (the baseline).
    pub gates: Vec<GoodputGate>,
}

/// Holds a service level to the comparison's runs (`sides`: each side's label and its
/// runs, as [`crate::analyses::slo::hold`] made them) and gates each other side's goodput against
/// the baseline's: a fall beyond the noise of repeats fails; `margin`, when given, is a
/// floor under the noise and stands in for it with one run a side
/// ([`crate::analyses::slo::goodput_gate`]). Runs that cannot be compared cannot be gated.
pub fn with_service_level(
    c: &mut Comparison,
    level: &ServiceLevel,
    sides: Vec<(String, Vec<RunSlo>)>,
    margin: Option<f64>,
) {
    let refused = match c.verdict {
        Verdict::Comparable => None,
        verdict => Some(format!("{}: {}", verdict.words(), c.reasons.join("; "))),
    };
    let mut gates = Vec::new();
    if let Some((_, base)) = sides.first() {
        let base: Vec<&RunSlo> = base.iter().collect();
        for (label, runs) in sides.iter().skip(1) {
            let runs: Vec<&RunSlo> = runs.iter().collect();
            gates.push(goodput_gate(
                label,
                &base,
                &runs,
                margin,
                refused.as_deref(),
            ));
        }
    }
    c.service_level = Some(CompareSlo {
        spec: level.spec(),
        sides,
        gates,
    });
}

/// The worst of the goodput gates, when a service level was given.
pub fn goodput_verdict(c: &Comparison) -> Option<SloGateVerdict> {
    let gates = &c.service_level.as_ref()?.gates;
    let worst = |v: SloGateVerdict| gates.iter().any(|g| g.verdict == v);
    Some(if worst(SloGateVerdict::Regressed) {
        SloGateVerdict::Regressed
    } else if worst(SloGateVerdict::CannotGate) || gates.is_empty() {
        SloGateVerdict::CannotGate
    } else {
        SloGateVerdict::Passed
    })
}

fn service_level_lines(out: &mut String, level: &CompareSlo) {
    out.push_str(&format!(
        "service level {}: over every request, a failed or unfinished one as +infinity\n",
        level.spec
    ));
    for (side, runs) in &level.sides {
        for r in runs {
            let bounds: Vec<String> = r
                .bounds
                .iter()
                .map(|b| {
                    let v = if b.infinite {
                        "infinite".to_owned()
                    } else {
                        b.value_ms
                            .map_or("can't tell".into(), |v| format!("{v:.1} ms"))
                    };
                    format!("{} {v}", b.bound)
                })
                .collect();
            out.push_str(&format!(
                "  {side} {}: {} ({} of {} requests missed); goodput {}; {}\n",
                r.label,
                r.verdict.words(),
                r.counted.misses(),
                r.counted.requests,
                r.goodput.as_ref().map_or("can't tell".into(), |g| format!(
                    "{:.3} req/s",
                    g.requests_per_s
                )),
                bounds.join(", ")
            ));
        }
    }
    for g in &level.gates {
        out.push_str(&g.words);
        out.push('\n');
    }
}

/// A side's label and the labels of its runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideRuns {
    /// The side's label.
    pub label: String,
    /// Its runs' labels.
    pub runs: Vec<String>,
}

/// The items nothing can be compared without: with one of them unknown to every run,
/// the comparison cannot tell.
const ESSENTIAL: &[&str] = &["engine", "model", "kv_pool_tokens"];

/// How each item's difference moves the numbers.
const EFFECTS: &[(&str, &str)] = &[
    ("engine", "another engine schedules, batches and counts differently: every figure moves"),
    ("version", "engine releases change kernels, scheduling and defaults: a change in the figures may be the release"),
    ("model", "another model has another size per token and another speed: no figure carries over"),
    ("kv_pool_tokens", "the pool decides how many requests fit at once and when preemption starts: a gain or a loss may be nothing but the pool (T4)"),
    ("kv_blocks", "the block count decides how many requests fit at once and when preemption starts (T4, T14)"),
    ("block_size", "larger blocks waste more of each request's last block, so fewer requests fit (T5)"),
    ("attention_backend", "another attention kernel moves prefill and decode speed, and TTFT and TPOT with them (T6)"),
    ("kv_dtype", "an 8-bit KV cache holds about twice the tokens of a 16-bit one and runs other kernels"),
    ("max_model_len", "the longest request allowed changes how the engine sizes and splits its cache"),
    ("running_cap", "the cap bounds how many requests run at once: throughput and queueing move with it (T8)"),
    ("gpu", "another GPU: every figure moves"),
    ("tool", "load tools time different spans and count different requests: TTFT, TPOT and throughput are not the same measures"),
    ("requested_concurrency", "more requests at once raise throughput until the server saturates, and raise TTFT and TPOT"),
    ("request_rate", "another arrival rate is another load: queueing, TTFT and throughput move with it"),
    ("input_tokens", "longer prompts cost more prefill and more cache per request: TTFT rises, fewer fit"),
    ("output_tokens", "longer answers hold their cache longer and count more tokens: throughput, TPOT and what fits move"),
    ("requests", "with fewer requests the p99 is a handful of requests, and the ramp up and down weigh more"),
    ("achieved", "a run that ran more requests at once shows more throughput and longer TPOT; one held below its asked concurrency measured a smaller load (T8)"),
    ("preemptions", "preempted requests recompute their cache: throughput falls and latency tails grow (T1)"),
    ("prefix_cache", "prompt tokens served from the prefix cache skip prefill: TTFT and throughput look better than for new prompts"),
    ("failures", "failed requests leave the figures, which then cover fewer, often the quicker, requests (T18)"),
    ("warmup", "without a warm-up the first requests pay for compilation and graph capture: TTFT and latency tails rise"),
    ("benchmark", "a run that was not a benchmark measured nothing to compare"),
    ("tripwires", "a failed tripwire means that run's figures measure something other than they say (its report tells what)"),
];

/// What a count of running requests that cannot be told means for the comparison.
const RUNNING_UNTOLD: &str = "how many ran at once cannot be told for every run, so no difference in it is a gain or a loss: read the figures without it";

fn effect(key: &str) -> Option<&'static str> {
    EFFECTS.iter().find(|(k, _)| *k == key).map(|(_, e)| *e)
}

fn item_words(key: &str) -> &'static str {
    match key {
        "engine" => "engine",
        "version" => "engine version",
        "model" => "model",
        "kv_pool_tokens" => "KV pool (tokens)",
        "kv_blocks" => "KV pool (blocks)",
        "block_size" => "block size (tokens)",
        "attention_backend" => "attention backend",
        "kv_dtype" => "KV cache dtype",
        "max_model_len" => "max model length",
        "running_cap" => "running cap",
        "gpu" => "GPU",
        "tool" => "load tool",
        "requested_concurrency" => "concurrency asked",
        "request_rate" => "request rate asked (req/s)",
        "input_tokens" => "input tokens per request",
        "output_tokens" => "output tokens per request",
        "requests" => "requests timed",
        "achieved" => "ran at once (peak, busy mean)",
        "preemptions" => "preemptions",
        "prefix_cache" => "prefix-cache share of prompt tokens",
        "failures" => "failed requests",
        "warmup" => "untimed warm-up requests",
        "benchmark" => "a benchmark?",
        "tripwires" => "tripwires failed",
        _ => "",
    }
}

/// A value that compares: text exactly, numbers within a relative tolerance.
#[derive(Debug, Clone)]
enum Fact {
    Text(String),
    Number { value: f64, tolerance: f64 },
}

impl Fact {
    fn shown(&self) -> String {
        match self {
            Fact::Text(t) => t.clone(),
            Fact::Number { value, .. } if value.fract() == 0.0 && value.abs() < 1e15 => {
                fmt::thousands(*value as i64)
            }
            Fact::Number { value, .. } => fmt::g(*value),
        }
    }

    fn same(&self, other: &Fact) -> bool {
        match (self, other) {
            (Fact::Text(a), Fact::Text(b)) => a == b,
            (
                Fact::Number {
                    value: a,
                    tolerance,
                },
                Fact::Number { value: b, .. },
            ) => {
                let scale = a.abs().max(b.abs());
                scale == 0.0 || (a - b).abs() <= tolerance * scale
            }
            _ => false,
        }
    }
}

fn text(v: &Option<String>) -> Option<Fact> {
    v.clone().map(Fact::Text)
}

fn exact(v: Option<u64>) -> Option<Fact> {
    v.map(|v| Fact::Number {
        value: v as f64,
        tolerance: 0.0,
    })
}

/// Lengths within 5% are the same load (T20's tolerance): a tool's mean of random
/// lengths moves a little from run to run.
fn length(v: Option<f64>) -> Option<Fact> {
    v.map(|value| Fact::Number {
        value,
        tolerance: 0.05,
    })
}

fn item(key: &'static str, group: &'static str, facts: Vec<Option<Fact>>) -> Item {
    let known: Vec<&Fact> = facts.iter().flatten().collect();
    let state = if known.is_empty() {
        ItemState::NotRecorded
    } else if known.iter().any(|f| !f.same(known[0])) {
        ItemState::Differs
    } else if known.len() < facts.len() {
        ItemState::OneSided
    } else {
        ItemState::Same
    };
    Item {
        key,
        group,
        words: item_words(key),
        state,
        values: facts.iter().map(|f| f.as_ref().map(Fact::shown)).collect(),
        effect: matches!(state, ItemState::Differs | ItemState::OneSided)
            .then(|| effect(key))
            .flatten(),
    }
}

/// The gate items of every run, in order.
fn gate_items(runs: &[&RunProfile]) -> Vec<Item> {
    let each = |f: &dyn Fn(&RunProfile) -> Option<Fact>| runs.iter().map(|r| f(r)).collect();
    vec![
        item(
            "engine",
            "setup",
            each(&|r| Some(Fact::Text(r.setup.engine.clone()))),
        ),
        item("version", "setup", each(&|r| text(&r.setup.version))),
        item("model", "setup", each(&|r| text(&r.setup.model))),
        item(
            "kv_pool_tokens",
            "setup",
            each(&|r| exact(r.setup.kv_pool_tokens)),
        ),
        item("kv_blocks", "setup", each(&|r| exact(r.setup.kv_blocks))),
        item("block_size", "setup", each(&|r| exact(r.setup.block_size))),
        item(
            "attention_backend",
            "setup",
            each(&|r| text(&r.setup.attention_backend)),
        ),
        item("kv_dtype", "setup", each(&|r| text(&r.setup.kv_dtype))),
        item(
            "max_model_len",
            "setup",
            each(&|r| exact(r.setup.max_model_len)),
        ),
        item(
            "running_cap",
            "setup",
            each(&|r| exact(r.setup.running_cap)),
        ),
        item("gpu", "setup", each(&|r| text(&r.setup.gpu))),
        item("tool", "load", each(&|r| text(&r.load.tool))),
        item(
            "requested_concurrency",
            "load",
            each(&|r| exact(r.load.requested_concurrency)),
        ),
        item(
            "request_rate",
            "load",
            each(&|r| {
                r.load.request_rate.map(|value| Fact::Number {
                    value,
                    tolerance: 0.01,
                })
            }),
        ),
        item(
            "input_tokens",
            "load",
            each(&|r| length(r.load.input_tokens)),
        ),
        item(
            "output_tokens",
            "load",
            each(&|r| length(r.load.output_tokens)),
        ),
    ]
}

fn shown_count(v: Option<f64>) -> Option<String> {
    v.map(fmt::g)
}

/// What happened in each run: never a reason to refuse, always a reason to read the
/// figures with care.
fn run_items(runs: &[&RunProfile]) -> Vec<Item> {
    let shown = |key: &'static str, values: Vec<Option<String>>, differ: bool| {
        let known = values.iter().flatten().count();
        let state = if known == 0 {
            ItemState::NotRecorded
        } else if differ {
            ItemState::Differs
        } else if known < values.len() {
            ItemState::OneSided
        } else {
            ItemState::Same
        };
        Item {
            key,
            group: "run",
            words: item_words(key),
            state,
            values,
            effect: matches!(state, ItemState::Differs | ItemState::OneSided)
                .then(|| effect(key))
                .flatten(),
        }
    };
    let numbers = |f: &dyn Fn(&RunProfile) -> Option<f64>| -> Vec<Option<f64>> {
        runs.iter().map(|r| f(r)).collect()
    };
    let spread = |values: &[Option<f64>], relative: f64, absolute: f64| {
        let known: Vec<f64> = values.iter().flatten().copied().collect();
        let lo = known.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = known.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        known.len() >= 2 && hi - lo > absolute.max(relative * hi.abs())
    };

    let peaks = numbers(&|r| r.happened.peak_running);
    let achieved: Vec<Option<String>> = runs
        .iter()
        .map(|r| {
            if let Some(why) = &r.happened.running_unknown {
                return Some(why.clone());
            }
            let peak = r.happened.peak_running?;
            let mut s = format!("{} at most", fmt::g(peak));
            if let Some(mean) = r.happened.mean_running {
                s.push_str(&format!(", {:.1} on average", mean));
            }
            if let Some(asked) = r.load.requested_concurrency {
                s.push_str(&format!(" of {asked}"));
            }
            Some(s)
        })
        .collect();
    let means = numbers(&|r| r.happened.mean_running);
    // A run whose count cannot be told has no value to differ from: the item then says
    // it cannot tell, never that one run ran more than another.
    let untold = runs.iter().any(|r| r.happened.running_unknown.is_some());
    let achieved_differ = !untold && (spread(&peaks, 0.0, 0.5) || spread(&means, 0.1, 0.5));
    let achieved_item = {
        let mut item = shown("achieved", achieved, achieved_differ);
        if untold {
            item.state = ItemState::OneSided;
            item.effect = Some(RUNNING_UNTOLD);
        }
        item
    };

    let preemptions = numbers(&|r| r.happened.preemptions);
    let any_preempted = preemptions.iter().flatten().any(|p| *p > 0.0);
    let none_preempted = preemptions.iter().flatten().any(|p| *p == 0.0);

    let shares = numbers(&|r| r.happened.prefix_cache_share);
    let failures: Vec<Option<f64>> = numbers(&|r| r.happened.failed.map(|f| f as f64));
    let failed_shown: Vec<Option<String>> = runs
        .iter()
        .map(|r| {
            let failed = r.happened.failed?;
            Some(match r.happened.completed {
                Some(c) => format!("{failed} (of {})", c + failed),
                None => failed.to_string(),
            })
        })
        .collect();
    let warmups = numbers(&|r| r.happened.untimed_requests.map(|u| u as f64));
    let warm_shown: Vec<Option<String>> = runs
        .iter()
        .map(|r| {
            let n = r.happened.untimed_requests?;
            Some(match r.happened.warmup_s {
                Some(s) => format!("{n}, {} s left out", fmt::g(s)),
                None => n.to_string(),
            })
        })
        .collect();
    let requests = numbers(&|r| r.load.requests.map(|n| n as f64));
    let benchmark: Vec<Option<String>> = runs
        .iter()
        .map(|r| {
            Some(match &r.happened.not_a_benchmark {
                Some(why) => format!("no: {why}"),
                None => "yes".to_owned(),
            })
        })
        .collect();
    let failed_tripwires: Vec<Option<String>> = runs
        .iter()
        .map(|r| {
            let failed: Vec<&str> = r
                .verdicts
                .iter()
                .filter(|(_, s)| s == "fail")
                .map(|(t, _)| t.as_str())
                .collect();
            Some(if failed.is_empty() {
                "none".to_owned()
            } else {
                failed.join(" ")
            })
        })
        .collect();
    let differ_text = |values: &[Option<String>]| {
        let known: Vec<&String> = values.iter().flatten().collect();
        known.iter().any(|v| *v != known[0])
    };

    vec![
        achieved_item,
        shown(
            "preemptions",
            preemptions.iter().map(|p| shown_count(*p)).collect(),
            any_preempted && none_preempted || spread(&preemptions, 0.1, 0.5),
        ),
        shown(
            "prefix_cache",
            shares
                .iter()
                .map(|s| s.map(|s| fmt::percent(s, 1)))
                .collect(),
            spread(&shares, 0.0, 0.01),
        ),
        shown("failures", failed_shown, spread(&failures, 0.0, 0.5)),
        shown(
            "warmup",
            warm_shown,
            warmups.iter().flatten().any(|w| *w == 0.0)
                && warmups.iter().flatten().any(|w| *w > 0.0),
        ),
        shown(
            "requests",
            requests.iter().map(|r| shown_count(*r)).collect(),
            spread(&requests, 0.0, 0.5),
        ),
        shown("benchmark", benchmark.clone(), differ_text(&benchmark)),
        shown(
            "tripwires",
            failed_tripwires.clone(),
            differ_text(&failed_tripwires),
        ),
    ]
}

fn side_figure(values: &[f64]) -> Option<SideFigure> {
    if values.is_empty() {
        return None;
    }
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some(SideFigure {
        mean,
        min,
        max,
        runs: n,
        noise: (n >= 2 && mean > 0.0).then(|| (max - min) / mean),
        change: None,
        worse: None,
        within_noise: None,
    })
}

fn moved(sides: &[Side]) -> Vec<Moved> {
    let mut out = Vec::new();
    for (key, unit, words, better) in FIGURES {
        let mut source = None;
        let mut per_side: Vec<Option<SideFigure>> = sides
            .iter()
            .map(|side| {
                let values: Vec<f64> = side
                    .runs
                    .iter()
                    .filter_map(|r| r.figures.get(key))
                    .map(|f| {
                        source.get_or_insert(f.source);
                        f.value
                    })
                    .collect();
                side_figure(&values)
            })
            .collect();
        if per_side.iter().flatten().count() == 0 {
            continue;
        }
        let base = per_side[0].clone();
        for figure in per_side.iter_mut().skip(1).flatten() {
            let Some(base) = &base else { continue };
            if base.mean == 0.0 {
                continue;
            }
            let change = (figure.mean - base.mean) / base.mean;
            figure.change = Some(change);
            figure.worse = Some(match better {
                Better::Higher => change < 0.0,
                Better::Lower => change > 0.0,
            });
            let noise = base
                .noise
                .into_iter()
                .chain(figure.noise)
                .fold(None, |a: Option<f64>, n| Some(a.map_or(n, |a| a.max(n))));
            figure.within_noise = noise.map(|n| change.abs() <= n);
        }
        out.push(Moved {
            key,
            words,
            unit,
            better: *better,
            source: source.unwrap_or(""),
            sides: per_side,
        });
    }
    out
}

/// The verdict on a set of gate items: not comparable when one differs, cannot tell when
/// one is recorded by some runs only (or, essential or under `strict`, by none); the
/// reasons, and the items no run records.
pub fn assess(items: &[Item], strict: bool) -> (Verdict, Vec<String>, Vec<String>) {
    let mut not_comparable = Vec::new();
    let mut cannot_tell = Vec::new();
    let mut reservations = Vec::new();
    for item in items {
        let values = || {
            item.values
                .iter()
                .map(|v| v.clone().unwrap_or_else(|| "not recorded".to_owned()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match item.state {
            ItemState::Same => {}
            ItemState::Differs => {
                not_comparable.push(format!("{} differs ({})", item.words, values()));
            }
            ItemState::OneSided => cannot_tell.push(format!(
                "{} is recorded by some runs only ({})",
                item.words,
                values()
            )),
            ItemState::NotRecorded if ESSENTIAL.contains(&item.key) || strict => {
                cannot_tell.push(format!("no run records the {}", item.words));
            }
            ItemState::NotRecorded => reservations.push(item.words.to_owned()),
        }
    }
    if !not_comparable.is_empty() {
        (Verdict::NotComparable, not_comparable, reservations)
    } else if !cannot_tell.is_empty() {
        (Verdict::CannotTell, cannot_tell, reservations)
    } else {
        (Verdict::Comparable, Vec::new(), reservations)
    }
}

/// The gate items (setup and load) of runs, in order.
pub fn setup_and_load(runs: &[&RunProfile]) -> Vec<Item> {
    gate_items(runs)
}

/// Compares the sides: the first is the baseline. `strict` makes an item no run
/// records a reason to say cannot tell.
pub fn compare(sides: &[Side], strict: bool) -> Comparison {
    let runs: Vec<&RunProfile> = sides.iter().flat_map(|s| s.runs.iter()).collect();
    let items = gate_items(&runs);
    let (verdict, reasons, reservations) = assess(&items, strict);
    Comparison {
        schema: COMPARE_SCHEMA,
        verdict,
        reasons,
        reservations,
        sides: sides
            .iter()
            .map(|s| SideRuns {
                label: s.label.clone(),
                runs: s.runs.iter().map(|r| r.label.clone()).collect(),
            })
            .collect(),
        items,
        runs: run_items(&runs),
        moved: moved(sides),
        gate: None,
        service_level: None,
    }
}

/// The regression gate: with comparable runs, each figure of every other side against
/// the baseline, read with its noise. A figure's difference is `worse_by ± noise`, the
/// noise being the larger `(max - min) / mean` of the two sides' repeats (one side's
/// stands for both where only it has repeats: one setup on one machine). It fails the
/// gate only when worse by more than `max_regression` (a fraction) at the interval's
/// better edge; it passes when worse by no more at its worse edge; else it is
/// inconclusive. With one run a side the noise is unknown: a figure past the margin is
/// inconclusive, never a certain regression, since two runs of one quiet setup on the real
/// vLLM CPU build differed by 8 to 64% (docs/whatif.md), and one within it passes, with a
/// warning that the noise was not measured.
pub fn gate(comparison: &Comparison, max_regression: f64) -> Gate {
    let cannot = |reason: String| Gate {
        max_regression,
        verdict: GateVerdict::CannotGate,
        regressions: Vec::new(),
        figures: Vec::new(),
        noise: None,
        warnings: Vec::new(),
        reason: Some(reason),
    };
    if comparison.verdict != Verdict::Comparable {
        return cannot(format!(
            "the runs are {}: {}",
            comparison.verdict.words(),
            comparison.reasons.join("; ")
        ));
    }
    let mut figures = Vec::new();
    let mut largest_noise: Option<(f64, &'static str)> = None;
    for m in &comparison.moved {
        let Some(base) = &m.sides[0] else { continue };
        for (i, side) in m.sides.iter().enumerate().skip(1) {
            let Some(side) = side else { continue };
            let Some(change) = side.change else { continue };
            let worse_by = match m.better {
                Better::Higher => -change,
                Better::Lower => change,
            };
            let noise = base
                .noise
                .into_iter()
                .chain(side.noise)
                .fold(None, |a: Option<f64>, n| Some(a.map_or(n, |a| a.max(n))));
            if let Some(n) = noise {
                if largest_noise.is_none_or(|(l, _)| n > l) {
                    largest_noise = Some((n, m.words));
                }
            }
            let verdict = match noise {
                Some(n) if worse_by - n > max_regression => GateVerdict::Regressed,
                Some(n) if worse_by + n > max_regression => GateVerdict::Inconclusive,
                None if worse_by > max_regression => GateVerdict::Inconclusive,
                _ => GateVerdict::Passed,
            };
            let values = format!(
                "{} -> {} {}",
                fmt::g(round_to(base.mean, 3)),
                fmt::g(round_to(side.mean, 3)),
                m.unit
            );
            let direction = if worse_by > 0.0 {
                format!("{} worse", fmt::percent(worse_by, 1))
            } else if worse_by < 0.0 {
                format!("{} better", fmt::percent(-worse_by, 1))
            } else {
                "the same".to_owned()
            };
            let difference = match noise {
                Some(n) => format!("{direction} ± {}", fmt::percent(n, 1)),
                None => format!("{direction}, noise unknown"),
            };
            let margin = fmt::percent(max_regression, 1);
            let words = match verdict {
                GateVerdict::Regressed => format!(
                    "{} of {} got worse by {} ({values}), more than the {margin} allowed beyond its noise of {}",
                    m.words,
                    comparison.sides[i].label,
                    fmt::percent(worse_by, 1),
                    fmt::percent(noise.unwrap_or(0.0), 1),
                ),
                _ => format!(
                    "{} of {}: {difference} ({values}), {margin} allowed",
                    m.words, comparison.sides[i].label
                ),
            };
            figures.push(GatedFigure {
                key: m.key,
                side: comparison.sides[i].label.clone(),
                worse_by,
                noise,
                verdict,
                words,
            });
        }
    }
    if figures.is_empty() {
        return cannot(
            "no figure is measured on both sides (the load tool's result file gives them)".into(),
        );
    }
    let mut warnings = Vec::new();
    match largest_noise {
        None => warnings.push(
            "the run-to-run noise is unknown (one run a side): a difference past the margin may be nothing but a repeat's (two runs of one quiet setup on the real vLLM CPU build differed by 8 to 64%), so none is called a regression; give repeats (a folder of runs per side) to measure it".to_owned(),
        ),
        Some((noise, words)) if noise > max_regression => warnings.push(format!(
            "the margin {} is below the noise measured on the repeats ({} on {words}): a figure that moved less than the noise can neither pass nor fail; set a margin above it or run more repeats",
            fmt::percent(max_regression, 1),
            fmt::percent(noise, 1)
        )),
        Some(_) => {}
    }
    let any = |v: GateVerdict| figures.iter().any(|f| f.verdict == v);
    let verdict = if any(GateVerdict::Regressed) {
        GateVerdict::Regressed
    } else if any(GateVerdict::Inconclusive) {
        GateVerdict::Inconclusive
    } else {
        GateVerdict::Passed
    };
    Gate {
        max_regression,
        verdict,
        regressions: figures
            .iter()
            .filter(|f| f.verdict == GateVerdict::Regressed)
            .map(|f| f.words.clone())
            .collect(),
        noise: largest_noise.map(|(n, _)| n),
        figures,
        warnings,
        reason: None,
    }
}

fn round_to(v: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (v * f).round() / f
}

/// The values of one item, grouped by side: `A 26,093 | B 29,127`, repeats joined with
/// commas.
fn by_side(comparison: &Comparison, values: &[Option<String>]) -> String {
    let mut i = 0;
    let mut parts = Vec::new();
    for side in &comparison.sides {
        let shown: Vec<String> = side
            .runs
            .iter()
            .map(|_| {
                let v = values.get(i).cloned().flatten();
                i += 1;
                v.unwrap_or_else(|| "-".to_owned())
            })
            .collect();
        parts.push(format!("{} {}", side.label, shown.join(", ")));
    }
    parts.join(" | ")
}

fn figure_value(v: f64, unit: &str) -> String {
    let shown = if v >= 100.0 {
        fmt::thousands_f(v)
    } else {
        format!("{v:.2}")
    };
    format!("{shown} {unit}")
}

/// The comparison as terminal lines.
pub fn terminal_text(c: &Comparison) -> String {
    let mut out = String::new();
    let sides: Vec<String> = c
        .sides
        .iter()
        .map(|s| {
            if s.runs.len() == 1 {
                format!("{} = {}", s.label, s.runs[0])
            } else {
                format!(
                    "{} = {} ({} runs)",
                    s.label,
                    s.runs.join(", "),
                    s.runs.len()
                )
            }
        })
        .collect();
    out.push_str(&format!("compare: {}\n", sides.join("; ")));
    let groups = [
        ("setup", "The server's setup"),
        ("load", "The load asked for"),
    ];
    for (group, heading) in groups {
        out.push_str(&format!("{heading}:\n"));
        for item in c.items.iter().filter(|i| i.group == group) {
            item_lines(&mut out, c, item);
        }
    }
    out.push_str("The runs:\n");
    for item in &c.runs {
        item_lines(&mut out, c, item);
    }
    if !c.moved.is_empty() {
        let against = c.sides.first().map_or("", |s| s.label.as_str());
        out.push_str(&format!("What moved (against {against}):\n"));
        for m in &c.moved {
            let cells: Vec<String> = c
                .sides
                .iter()
                .zip(&m.sides)
                .map(|(side, f)| match f {
                    None => format!("{} -", side.label),
                    Some(f) => {
                        let mut s = format!("{} {}", side.label, figure_value(f.mean, m.unit));
                        if let Some(noise) = f.noise {
                            s.push_str(&format!(
                                " (±{} over {} runs)",
                                fmt::percent(noise / 2.0, 1),
                                f.runs
                            ));
                        }
                        if let Some(change) = f.change {
                            let word = match (f.worse, f.within_noise) {
                                (_, Some(true)) => "within noise",
                                (Some(true), _) => "worse",
                                (Some(false), _) if change != 0.0 => "better",
                                _ => "same",
                            };
                            s.push_str(&format!(" {} {word}", fmt::signed_percent(change, 1)));
                        }
                        s
                    }
                })
                .collect();
            out.push_str(&format!("  {:<20} {}\n", m.words, cells.join(" | ")));
        }
        if c.sides.iter().all(|s| s.runs.len() < 2) {
            out.push_str("  (one run per side: run-to-run noise unknown; give a folder of repeats per side to measure it)\n");
        }
    }
    match c.verdict {
        Verdict::Comparable => {
            out.push_str("comparable");
            if !c.reservations.is_empty() {
                out.push_str(&format!(" (no run records: {})", c.reservations.join(", ")));
            }
            out.push('\n');
        }
        verdict => out.push_str(&format!("{}: {}\n", verdict.words(), c.reasons.join("; "))),
    }
    if let Some(gate) = &c.gate {
        gate_text(&mut out, gate);
    }
    if let Some(level) = &c.service_level {
        service_level_lines(&mut out, level);
    }
    out
}

/// The gate's lines: each figure with its difference, interval and answer, the warnings,
/// then the verdict.
fn gate_text(out: &mut String, gate: &Gate) {
    let margin = fmt::percent(gate.max_regression, 1);
    for f in &gate.figures {
        let word = match f.verdict {
            GateVerdict::Regressed => "REGRESSION",
            GateVerdict::Inconclusive => "INCONCLUSIVE",
            _ => "pass",
        };
        out.push_str(&format!("gate: {word} {}\n", f.words));
    }
    for w in &gate.warnings {
        out.push_str(&format!("gate: warning: {w}\n"));
    }
    match gate.verdict {
        GateVerdict::Passed => out.push_str(&format!(
            "gate: PASS: no figure got worse by more than {margin}{}\n",
            if gate.noise.is_some() {
                ", its noise included"
            } else {
                ""
            }
        )),
        GateVerdict::Regressed => out.push_str(&format!(
            "gate: FAIL: {} figure(s) got worse by more than {margin} beyond the noise of the repeats\n",
            gate.regressions.len()
        )),
        GateVerdict::Inconclusive => out.push_str(&format!(
            "gate: INCONCLUSIVE: {} figure(s) may have got worse by more than {margin}, within what the noise {} allows\n",
            gate.figures
                .iter()
                .filter(|f| f.verdict == GateVerdict::Inconclusive)
                .count(),
            if gate.noise.is_some() {
                "measured on the repeats"
            } else {
                "(unknown with one run a side)"
            }
        )),
        GateVerdict::CannotGate => out.push_str(&format!(
            "gate: cannot gate: {}\n",
            gate.reason.as_deref().unwrap_or("")
        )),
    }
}

fn item_lines(out: &mut String, c: &Comparison, item: &Item) {
    out.push_str(&format!(
        "  {:<12} {:<36} {}\n",
        item.state.label(),
        item.words,
        by_side(c, &item.values)
    ));
    if let Some(effect) = item.effect {
        out.push_str(&format!("  {:<12} {effect}\n", ""));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyses::profile::{Figure, Figures, Happened, LoadShape, Setup};

    fn profile(label: &str, pool: Option<u64>, throughput: f64) -> RunProfile {
        RunProfile {
            label: label.to_owned(),
            setup: Setup {
                engine: "vLLM".into(),
                version: Some("0.28.0".into()),
                model: Some("m".into()),
                kv_pool_tokens: pool,
                ..Setup::default()
            },
            load: LoadShape {
                requested_concurrency: Some(32),
                ..LoadShape::default()
            },
            happened: Happened::default(),
            figures: Figures(vec![
                Figure {
                    key: "output_throughput",
                    value: throughput,
                    source: "load tool (summary)",
                },
                Figure {
                    key: "ttft_p50_ms",
                    value: 100.0,
                    source: "load tool (summary)",
                },
            ]),
            verdicts: Vec::new(),
        }
    }

    fn side(label: &str, runs: Vec<RunProfile>) -> Side {
        Side {
            label: label.into(),
            runs,
        }
    }

    #[test]
    fn a_fact_one_run_lacks_is_cannot_tell_never_same() {
        let c = compare(
            &[
                side("A", vec![profile("a", Some(26_093), 300.0)]),
                side("B", vec![profile("b", None, 300.0)]),
            ],
            false,
        );
        assert_eq!(c.verdict, Verdict::CannotTell);
        let pool = c.items.iter().find(|i| i.key == "kv_pool_tokens").unwrap();
        assert_eq!(pool.state, ItemState::OneSided);
        assert!(c.reasons[0].contains("KV pool (tokens)"), "{:?}", c.reasons);
    }

    #[test]
    fn a_different_pool_is_not_comparable_and_says_why() {
        let c = compare(
            &[
                side("A", vec![profile("a", Some(26_093), 300.0)]),
                side("B", vec![profile("b", Some(29_127), 300.0)]),
            ],
            false,
        );
        assert_eq!(c.verdict, Verdict::NotComparable);
        assert_eq!(c.reasons, ["KV pool (tokens) differs (26,093, 29,127)"]);
        let g = gate(&c, 0.05);
        assert_eq!(g.verdict, GateVerdict::CannotGate);
    }

    #[test]
    fn facts_no_run_records_are_reservations_unless_strict_or_essential() {
        let sides = [
            side("A", vec![profile("a", Some(1), 300.0)]),
            side("B", vec![profile("b", Some(1), 300.0)]),
        ];
        let c = compare(&sides, false);
        assert_eq!(c.verdict, Verdict::Comparable);
        assert!(c.reservations.contains(&"GPU".to_owned()));
        assert_eq!(compare(&sides, true).verdict, Verdict::CannotTell);
        let mut no_model = sides.clone();
        for s in &mut no_model {
            s.runs[0].setup.model = None;
        }
        let c = compare(&no_model, false);
        assert_eq!(c.verdict, Verdict::CannotTell);
        assert_eq!(c.reasons, ["no run records the model"]);
    }

    #[test]
    fn the_gate_fails_past_the_margin_and_passes_within() {
        // One run a side: 300 -> 280 tok/s is 6.7% worse, past 5%, but the noise is not
        // measured: inconclusive, with the warning; within 10% it passes, warned as well.
        let c = compare(
            &[
                side("A", vec![profile("a", Some(1), 300.0)]),
                side("B", vec![profile("b", Some(1), 280.0)]),
            ],
            false,
        );
        let g = gate(&c, 0.05);
        assert_eq!(g.verdict, GateVerdict::Inconclusive);
        assert!(g.regressions.is_empty());
        assert!(g.figures[0]
            .words
            .starts_with("output throughput of B: 6.7% worse, noise unknown"));
        assert!(
            g.warnings[0].contains("noise is unknown"),
            "{:?}",
            g.warnings
        );
        let g = gate(&c, 0.10);
        assert_eq!(g.verdict, GateVerdict::Passed);
        assert!(g.warnings[0].contains("noise is unknown"));
    }

    /// With repeats, a difference is read with its noise: A at 300 and 306 (mean 303), B
    /// at 280 and 286 (mean 283): 6.6% worse, and the larger spread is B's 6 / 283 =
    /// 2.1%. Worse than 3% even at 4.5%: a regression. Against 5% the interval 4.5 to
    /// 8.7% straddles it: inconclusive. Against 10% it is inside: passed. A margin of 1%,
    /// below the noise, is warned.
    #[test]
    fn with_repeats_the_gate_reads_each_difference_with_its_noise() {
        let c = compare(
            &[
                side(
                    "A",
                    vec![profile("a1", Some(1), 300.0), profile("a2", Some(1), 306.0)],
                ),
                side(
                    "B",
                    vec![profile("b1", Some(1), 280.0), profile("b2", Some(1), 286.0)],
                ),
            ],
            false,
        );
        let tok = |g: &Gate| {
            g.figures
                .iter()
                .find(|f| f.key == "output_throughput")
                .unwrap()
                .clone()
        };
        let g = gate(&c, 0.03);
        assert_eq!(g.verdict, GateVerdict::Regressed);
        assert!((tok(&g).noise.unwrap() - 6.0 / 283.0).abs() < 1e-12);
        assert!((tok(&g).worse_by - 20.0 / 303.0).abs() < 1e-12);
        assert!(g.warnings.is_empty(), "{:?}", g.warnings);
        assert_eq!(gate(&c, 0.05).verdict, GateVerdict::Inconclusive);
        assert_eq!(tok(&gate(&c, 0.05)).verdict, GateVerdict::Inconclusive);
        let g = gate(&c, 0.10);
        assert_eq!(g.verdict, GateVerdict::Passed);
        assert!(g.warnings.is_empty());
        let g = gate(&c, 0.01);
        assert!(
            g.warnings[0].contains("below the noise"),
            "{:?}",
            g.warnings
        );
    }

    /// A run whose count of running requests cannot be told (TensorRT-LLM's gauges move
    /// only when a request completes) has no count to differ from: the item says it
    /// cannot tell, whatever the other run's count, and names no gain or loss.
    #[test]
    fn a_count_of_running_that_cannot_be_told_never_differs() {
        let told = |label: &str, peak: f64, mean: f64| {
            let mut p = profile(label, Some(1), 300.0);
            p.happened.peak_running = Some(peak);
            p.happened.mean_running = Some(mean);
            p
        };
        let untold = |label: &str| {
            let mut p = profile(label, Some(1), 300.0);
            p.happened.running_unknown = Some(
                "cannot be told: TensorRT-LLM updates its running gauge only when a request completes"
                    .into(),
            );
            p
        };
        let achieved = |a: RunProfile, b: RunProfile| {
            let c = compare(&[side("A", vec![a]), side("B", vec![b])], false);
            c.runs.into_iter().find(|i| i.key == "achieved").unwrap()
        };
        // Two counts 8 apart differ: the control that the item can say so.
        let both = achieved(told("a", 32.0, 30.0), told("b", 24.0, 22.0));
        assert_eq!(both.state, ItemState::Differs);
        for item in [
            achieved(told("a", 32.0, 30.0), untold("b")),
            achieved(untold("a"), untold("b")),
        ] {
            assert_eq!(item.state, ItemState::OneSided, "{item:?}");
            assert_eq!(item.effect, Some(RUNNING_UNTOLD));
            assert!(
                item.values
                    .iter()
                    .flatten()
                    .any(|v| v.starts_with("cannot be told")),
                "{item:?}"
            );
        }
    }

    #[test]
    fn repeats_give_the_noise_and_a_change_inside_it_is_said_to_be() {
        let c = compare(
            &[
                side(
                    "A",
                    vec![profile("a1", Some(1), 300.0), profile("a2", Some(1), 330.0)],
                ),
                side("B", vec![profile("b", Some(1), 310.0)]),
            ],
            false,
        );
        let t = c
            .moved
            .iter()
            .find(|m| m.key == "output_throughput")
            .unwrap();
        let a = t.sides[0].as_ref().unwrap();
        assert_eq!(a.mean, 315.0);
        assert!((a.noise.unwrap() - 30.0 / 315.0).abs() < 1e-12);
        let b = t.sides[1].as_ref().unwrap();
        assert_eq!(b.within_noise, Some(true));
        assert_eq!(b.worse, Some(true));
    }
}
