//! What to change: advice attached to each finding, in the engine's own setting names
//! (from its [`crate::engine::Tuning`] table) and, where the run gives them, the run's own numbers.
//!
//! Advice is only given where a setting changes the outcome and the direction is known:
//! a KV cache too small for the load (more memory for the cache, or a lower load), a
//! running limit below the load (raise it), evictions (stop them at admission), and a
//! ceiling that moved (cap the running limit where it was lowest), a prefix cache that
//! served the run (the engine's switch for it), a client that kept fewer open (its own
//! limits) and a cold engine (an untimed warm-up). Findings with no setting behind them (a
//! restart, other traffic, a gauge that changed meaning, another tenant on the GPU) get
//! none: their message says what to do.

use serde_json::Value;

use crate::analyses::whatif;
use crate::engine::{EngineDescriptor, FractionOf, NoEviction, Setting};
use crate::judging::checks::counters::counter_summary;
use crate::judging::status::{CheckResult, Status, Tripwire};
pub use crate::model::facts::{block_size, hybrid, tuning_withheld, BlockFrom, HYBRID_BLOCK_ABOVE};
use crate::model::{BootFacts, PyValue};
use crate::run::model::Run;
use crate::story::fmt;
use crate::story::replayed::{self, Replay};

/// What the KV cache is counted in.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Usable blocks (T14) of this many tokens, with each request's share measured by T9.
    Blocks {
        /// Usable blocks.
        usable: u64,
        /// Tokens per block, when known.
        block_tokens: Option<u64>,
    },
    /// The pool in tokens from the boot log, each request holding its prompt and output
    /// rounded up to whole blocks.
    Tokens {
        /// The pool in tokens.
        pool: u64,
    },
}

/// How the load compares with the KV cache.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Capacity {
    /// Requests the load kept open at once.
    pub requested: u64,
    /// What the cache is counted in.
    pub unit: Unit,
    /// Units one request holds when it starts, and at full length.
    pub per_request_start: f64,
    /// See `per_request_start`.
    pub per_request_full: f64,
    /// How many such requests fit at once when they start, and at full length.
    pub fit_start: u64,
    /// See `fit_start`.
    pub fit_full: u64,
    /// GiB the engine gave its KV cache, when the boot log says.
    pub kv_gib: Option<f64>,
    /// Whether the sizes per request were measured in the recording (a hybrid model's
    /// pages, or lengths unknown) rather than computed from the requests' lengths: a
    /// request preempted before it grew to full length held less than it needs, so a
    /// measured full length is a lower bound and `fit_full` an upper bound.
    pub measured: bool,
    /// How much more memory the card can give the KV cache, from the boot log.
    pub headroom: Option<Headroom>,
    /// What the cache was counted from.
    pub from: CapacityFrom,
    /// The cache in tokens, as counted here: the usable blocks times the block size, or
    /// the boot log's pool; `None` where the sizes were measured.
    pub cache_tokens: Option<f64>,
    /// Prompt and output tokens per request (the account's lengths); `None` where the
    /// sizes were measured.
    pub request_tokens: Option<f64>,
}

/// What a [`Capacity`] counted the cache from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacityFrom {
    /// T14's usable blocks (read from the recording), each request's prompt and output
    /// counted in whole blocks.
    UsableBlocks,
    /// The boot log's pool in tokens, each request rounded up to whole blocks.
    BootLogPool,
    /// T9's shares of the cache per request, measured in the recording.
    MeasuredShares,
}

/// The memory side of a cure.
enum Cure {
    /// Raise the engine's memory setting: the card has the memory.
    Raise(String),
    /// The card has no more memory to give: why, and what makes room instead.
    NoMoreMemory(String),
}

/// The most memory the KV cache can still be given on this card, from the boot log's
/// own totals.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Headroom {
    /// GiB more the cache could have at most (0 when the card has none to give).
    pub more_gib: f64,
    /// Where the figure comes from, in the log's own numbers.
    pub from: String,
}

impl Headroom {
    /// `at most 1.1 GiB more`, or `none to spare`.
    fn spare(&self) -> String {
        if self.none() {
            "none to spare".to_owned()
        } else {
            format!("at most {} more", about_gib(self.more_gib))
        }
    }

    /// Whether the card has nothing worth giving.
    fn none(&self) -> bool {
        self.more_gib < 0.05
    }
}

/// A size in GiB said to about a tenth: `4.3 GiB`, or in the unit that shows a smaller
/// one (`768 KiB`).
fn about_gib(gib: f64) -> String {
    if gib >= 0.095 {
        format!("{gib:.1} GiB")
    } else {
        fmt::memory(gib)
    }
}

/// Bytes in a GiB.
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The KV cache's size in GiB, from the boot log: the size it was given outright in
/// bytes where the log shows it (vLLM's `--kv-cache-memory-bytes`, exact where the log's
/// own line rounds it away: the CPU build's `0.0/23.54 GiB` for 768 KiB), else the memory
/// the engine says it gave the cache.
pub fn cache_gib(engine: &EngineDescriptor, boot: &BootFacts) -> Option<f64> {
    engine
        .tuning
        .cache_size
        .as_ref()
        .and_then(|size| printed(Some(boot), size))
        .and_then(|bytes| bytes.parse::<f64>().ok())
        .filter(|bytes| *bytes > 0.0)
        .map(|bytes| bytes / GIB)
        .or(boot.available_kv_cache_gib)
}

/// What the boot log says the card has left for the KV cache, from its own totals, the
/// least of what they say where they say several things (so two runs of one setup are
/// told the same, and never more than the engine itself allows): vLLM's figure of the
/// cache that would use all free memory, and its start-up totals (free memory less
/// weights, activations, graphs and the cache it has); SGLang's memory left free once it
/// started. `None` when the log gives none of them.
pub fn headroom(engine: &EngineDescriptor, boot: &BootFacts) -> Option<Headroom> {
    let kv = cache_gib(engine, boot)?;
    let mut said: Vec<Headroom> = Vec::new();
    if let Some(full) = boot.kv_cache_full_gib {
        // The engine's own remedy is quoted only where it grows the cache: a size below
        // the one it has would shrink it.
        let beside = match boot.engine_remedy.as_deref() {
            Some(r) if full > kv => format!(": {r}"),
            _ if full <= kv => format!(", no more than the {} it already has", fmt::memory(kv)),
            _ => String::new(),
        };
        said.push(Headroom {
            more_gib: (full - kv).max(0.0),
            from: format!(
                "{}'s log puts the largest cache this card allows at {}{beside}",
                engine.name,
                fmt::memory(full)
            ),
        });
    }
    if let (Some(free), Some(total), Some(consumed), Some(peak)) = (
        boot.device_free_gib,
        boot.device_total_gib,
        boot.consumed_gib,
        boot.peak_activation_gib,
    ) {
        let graphs = boot
            .cudagraph_actual_gib
            .or(boot.cudagraph_estimated_gib)
            .unwrap_or(0.0);
        let taken = consumed + peak + graphs;
        said.push(Headroom {
            more_gib: (free - taken - kv).max(0.0),
            from: format!(
                "{free:.2} of the card's {total:.2} GiB were free at start-up, and weights, activations and graphs took {taken:.2} GiB beside the cache's {}",
                fmt::memory(kv)
            ),
        });
    }
    if let Some(left) = boot.memory_left_gib {
        said.push(Headroom {
            more_gib: left.max(0.0),
            from: format!(
                "the card had {} left once {} had started",
                fmt::memory(left),
                engine.name
            ),
        });
    }
    said.into_iter()
        .min_by(|a, b| a.more_gib.total_cmp(&b.more_gib))
}

/// What makes room for the KV cache on this engine when the card has no memory to give:
/// `; what makes room on vLLM: ...`, or nothing where the table names nothing.
fn more_room(engine: &EngineDescriptor) -> String {
    if engine.tuning.more_room.is_empty() {
        return String::new();
    }
    format!(
        "; what makes room on {}: {}",
        engine.name,
        engine.tuning.more_room.join(", ")
    )
}

/// The memory side of a cure when the load's need is not known: the engine's memory
/// setting raised, up to what the card can give where its log says, or why the card has
/// nothing to give and what makes room instead.
fn memory_without_need(engine: &EngineDescriptor, boot: Option<&BootFacts>) -> Cure {
    let setting = memory_setting(engine, boot);
    match boot.and_then(|b| headroom(engine, b)) {
        Some(h) if h.none() => Cure::NoMoreMemory(format!(
            "the card has no more memory to give the KV cache ({}; none to spare){}",
            h.from,
            more_room(engine)
        )),
        Some(h) => {
            let upto = fraction_for(engine, boot, h.more_gib, Round::Down)
                .map(|(now, most)| {
                    format!("raise {} from {now} to at most {most}", setting.shown())
                })
                .unwrap_or_else(|| raise(boot, setting));
            Cure::Raise(format!("{upto} ({}; {})", h.from, h.spare()))
        }
        None => Cure::Raise(raise(boot, setting)),
    }
}

/// Which way a share is rounded to a thousandth: up for a target that must give at
/// least what is needed, down for a bound that must not ask for more than the card has.
#[derive(Clone, Copy)]
enum Round {
    Up,
    Down,
}

/// The engine's memory share now and the share that gives the KV cache `more_gib` more,
/// where the boot log gives what the share multiplies (the engine table's `fraction_of`)
/// and the share sizes the cache (not an outright size). Rounded to a thousandth as
/// `round` says, and `None` at a whole card or more, or no higher than now.
fn fraction_for(
    engine: &EngineDescriptor,
    boot: Option<&BootFacts>,
    more_gib: f64,
    round: Round,
) -> Option<(String, String)> {
    let setting = &engine.tuning.memory_fraction;
    if memory_setting(engine, boot) != setting {
        return None;
    }
    let boot = boot?;
    let base = match engine.tuning.fraction_of {
        FractionOf::CardTotal => boot.device_total_gib,
        FractionOf::FreeAtStart => boot.device_free_gib,
        FractionOf::Unknown => None,
    }
    .filter(|b| *b > 0.0)?;
    let (now, words) = match printed(Some(boot), setting) {
        Some(p) => (p.parse::<f64>().ok()?, p),
        None => {
            let d = setting.default?;
            (d, format!("its default {}", fmt::g(d)))
        }
    };
    let thousandths = (now + more_gib / base) * 1000.0;
    let target = match round {
        Round::Up => thousandths.ceil(),
        Round::Down => thousandths.floor(),
    } / 1000.0;
    (target > now && target < 1.0).then(|| (words, fmt::g(target)))
}

impl Capacity {
    /// The cache in the unit's words: `42 usable blocks of 784 tokens`, `the
    /// 32,096-token pool`.
    fn cache_words(&self) -> String {
        match self.unit {
            Unit::Blocks {
                usable,
                block_tokens: Some(b),
            } => format!(
                "{usable} usable blocks of {} tokens",
                fmt::thousands(b as i64)
            ),
            Unit::Blocks { usable, .. } => format!("{usable} usable blocks"),
            Unit::Tokens { pool } => format!("the {}-token pool", fmt::thousands(pool as i64)),
        }
    }

    /// `4 blocks`, `1,088 tokens`.
    fn amount(&self, units: f64) -> String {
        match self.unit {
            Unit::Blocks { .. } => {
                // T9 measures a share averaged over the running requests, so a count of
                // blocks can come out between two whole numbers.
                let rounded = (units * 10.0).round() / 10.0;
                let about = if rounded.fract() == 0.0 { "" } else { "about " };
                format!("{about}{} block{}", fmt::g(rounded), fmt::plural(units))
            }
            Unit::Tokens { .. } => format!("{} tokens", fmt::thousands_f(units)),
        }
    }

    fn have(&self) -> f64 {
        match self.unit {
            Unit::Blocks { usable, .. } => usable as f64,
            Unit::Tokens { pool } => pool as f64,
        }
    }

    /// `6 blocks each`, or `at least about 6.5 blocks each, as measured` where the sizes
    /// were measured (a request preempted early held less than its full length needs).
    fn full_words(&self) -> String {
        if self.measured {
            format!(
                "at least {} each, as the recording measured",
                self.amount(self.per_request_full)
            )
        } else {
            format!("{} each", self.amount(self.per_request_full))
        }
    }

    /// The memory side of a cure for `need` units: the engine's memory setting raised,
    /// with how much more the cache needs, where the card can give it; else why it
    /// cannot, and what does make room on this engine.
    fn memory_cure(&self, engine: &EngineDescriptor, boot: Option<&BootFacts>, need: f64) -> Cure {
        match self.no_more_memory(engine, need) {
            Some(no) => Cure::NoMoreMemory(no),
            None => match self.cache_bytes_for(engine, boot, need) {
                Some((now, target)) => Cure::Raise(format!(
                    "raise {} from {now} to {target}",
                    memory_setting(engine, boot).shown()
                )),
                None => {
                    let setting = memory_setting(engine, boot);
                    let raise = self
                        .more_gib(need)
                        .and_then(|more| fraction_for(engine, boot, more, Round::Up))
                        .map(|(now, target)| {
                            format!("raise {} from {now} to {target}", setting.shown())
                        })
                        .unwrap_or_else(|| raise(boot, setting));
                    Cure::Raise(format!("{raise}{}", self.more_memory(need)))
                }
            },
        }
    }

    /// Where the boot log shows the cache was sized outright in bytes (vLLM's
    /// `--kv-cache-memory-bytes`): that size now, and the size that holds `need` usable
    /// blocks, at the bytes a block takes now (the engine's held-back blocks counted in
    /// both, since the bytes pay for them too).
    fn cache_bytes_for(
        &self,
        engine: &EngineDescriptor,
        boot: Option<&BootFacts>,
        need: f64,
    ) -> Option<(u64, u64)> {
        let size = engine.tuning.cache_size.as_ref()?;
        let now: u64 = printed(boot, size)?.parse().ok()?;
        let Unit::Blocks { usable, .. } = self.unit else {
            return None;
        };
        let held = engine.cache_info.map_or(0, |i| i.null_blocks);
        let per_block = now as f64 / (usable + held) as f64;
        let target = (per_block * (need.ceil() + held as f64)).ceil() as u64;
        (target > now).then_some((now, target))
    }

    /// GiB more the KV cache needs for `need` units, when the memory it has is known.
    fn more_gib(&self, need: f64) -> Option<f64> {
        let gib = self.kv_gib.filter(|g| *g > 0.0)?;
        (need > self.have()).then(|| gib * (need / self.have() - 1.0))
    }

    /// Whether the card can give the KV cache what `need` units take: `false` only when
    /// the boot log's totals say it cannot.
    fn card_can_give(&self, need: f64) -> bool {
        match (self.more_gib(need), &self.headroom) {
            (Some(more), Some(h)) => more <= h.more_gib,
            _ => true,
        }
    }

    /// ` to give the KV cache about 4.3 GiB more than its 2.09 GiB (the card has 5.1 GiB
    /// left)`, when the memory it has is known and more is needed for `need` units.
    fn more_memory(&self, need: f64) -> String {
        let (Some(more), Some(gib)) = (self.more_gib(need), self.kv_gib) else {
            return String::new();
        };
        let left = match &self.headroom {
            Some(h) => format!(" ({}; {})", h.from, h.spare()),
            None => String::new(),
        };
        format!(
            " to give the KV cache about {} more than its {}{left}",
            about_gib(more),
            fmt::memory(gib)
        )
    }

    /// `the card cannot give the KV cache the 4.3 GiB more these requests need (...)`,
    /// and what does help on this engine, when the boot log's totals rule more memory out.
    fn no_more_memory(&self, engine: &EngineDescriptor, need: f64) -> Option<String> {
        if self.card_can_give(need) {
            return None;
        }
        let (more, h) = (self.more_gib(need)?, self.headroom.as_ref()?);
        Some(format!(
            "the card cannot give the KV cache the {} more these requests need ({}; {}){}",
            about_gib(more),
            h.from,
            h.spare(),
            more_room(engine)
        ))
    }
}

/// The load against the cache: how many requests fit when they start and at full length.
/// The one place this is computed; T1's, T8's and T9's advice and "What limited this run"
/// all read it.
///
/// Where the requests' lengths are known and the model's cache holds tokens only, each
/// request is counted in whole blocks of its prompt (plus its first token) at start and
/// of its prompt and output at full length, against T14's usable blocks (else the boot
/// log's pool). Only for a hybrid model (whose pages hold per-request state too), or
/// without the lengths, are T9's measured shares used; they are then marked measured,
/// since a request preempted before it grew held less than its full length needs.
/// `None` when the numbers are not there.
pub fn capacity(run: &Run, results: &[CheckResult]) -> Option<Capacity> {
    let requested = run.requested.filter(|n| *n > 0)?;
    let boot = run.last_boot();
    let kv_gib = boot.and_then(|b| cache_gib(run.engine, b));
    let headroom = boot.and_then(|b| headroom(run.engine, b));
    let evidence = |tripwire: Tripwire, key: &str| {
        results
            .iter()
            .find(|r| r.tripwire == tripwire && r.status.is_verdict())
            .and_then(|r| r.evidence.get(key))
            .and_then(Value::as_f64)
    };
    let usable = evidence(Tripwire::T9, "usable_blocks").filter(|u| *u > 0.0);
    let block = block_size(run).map(|(b, _)| b);
    let lengths = tokens_per_request(
        run,
        crate::judging::other_traffic::requests(results).is_some(),
    )
    .filter(|(_, total)| *total > 0.0);
    // An engine that reserves a request's whole output when it admits it starts no more
    // than fit at full length.
    let at_full = run.engine.tuning.admits_at_full_length;
    let make = |unit: Unit, start: f64, full: f64, have: f64, from: CapacityFrom| Capacity {
        requested,
        unit,
        per_request_start: if at_full { full } else { start },
        per_request_full: full,
        fit_start: (have / if at_full { full } else { start }).floor().max(0.0) as u64,
        fit_full: (have / full).floor().max(0.0) as u64,
        kv_gib,
        measured: from == CapacityFrom::MeasuredShares,
        headroom: headroom.clone(),
        from,
        cache_tokens: match (from, unit) {
            (CapacityFrom::MeasuredShares, _) => None,
            (
                _,
                Unit::Blocks {
                    usable,
                    block_tokens,
                },
            ) => block_tokens.map(|b| (usable * b) as f64),
            (_, Unit::Tokens { pool }) => Some(pool as f64),
        },
        request_tokens: lengths
            .map(|(_, total)| total)
            .filter(|_| from != CapacityFrom::MeasuredShares),
    };
    if let (Some(boot), Some((prompt, total))) = (boot, lengths) {
        if !hybrid(boot) {
            match (block, usable, boot.kv_pool_tokens.filter(|p| *p > 0)) {
                (Some(b), Some(usable), _) => {
                    let blocks = |tokens: f64| (tokens / b as f64).ceil().max(1.0);
                    return Some(make(
                        Unit::Blocks {
                            usable: usable as u64,
                            block_tokens: Some(b),
                        },
                        blocks(prompt + 1.0),
                        blocks(total),
                        usable,
                        CapacityFrom::UsableBlocks,
                    ));
                }
                (block, _, Some(pool)) => {
                    let round_up = |tokens: f64| match block {
                        Some(b) => (tokens / b as f64).ceil() * b as f64,
                        None => tokens,
                    };
                    return Some(make(
                        Unit::Tokens { pool },
                        round_up(prompt + 1.0),
                        round_up(total),
                        pool as f64,
                        CapacityFrom::BootLogPool,
                    ));
                }
                _ => {}
            }
        }
    }
    if run.engine.gauges_lag {
        return None;
    }
    let (start, full) = (
        evidence(Tripwire::T9, "blocks_per_request_min")?,
        evidence(Tripwire::T9, "blocks_per_request_max")?,
    );
    let usable = usable?;
    (start > 0.0 && full > 0.0).then(|| {
        make(
            Unit::Blocks {
                usable: usable as u64,
                block_tokens: block,
            },
            start,
            full,
            usable,
            CapacityFrom::MeasuredShares,
        )
    })
}

/// Prompt tokens and prompt-plus-output tokens per request: from the server's counters,
/// else (or where they hold another client's requests too, `other_traffic`: T15) from
/// the load tool's result file.
pub fn tokens_per_request(run: &Run, other_traffic: bool) -> Option<(f64, f64)> {
    let from_server = match (&run.before, &run.after) {
        _ if other_traffic => None,
        (Some(before), Some(after)) => counter_summary(run.engine, before, after).and_then(|s| {
            let finished = s.finished.filter(|f| *f > 0.0)?;
            let prompt = s.prompt_tokens? / finished;
            Some((prompt, prompt + s.output_tokens? / finished))
        }),
        _ => None,
    };
    from_server.or_else(|| {
        let (_, b) = run.bench.as_ref()?;
        let completed = b.completed.filter(|c| *c > 0)? as f64;
        let prompt = b.total_input_tokens? as f64 / completed;
        Some((prompt, prompt + b.total_output_tokens? as f64 / completed))
    })
}

/// Attaches each result's advice. Tuning advice (T1, T8, T9) is withheld where
/// [`tuning_withheld`] says the numbers describe no one setup; where the replay can speak
/// for the run ([`Replay`]), each of its cures is replayed first, given only where the
/// replay says it removes the trap, and carries the replay's prediction.
///
/// `capacity` is the run's account's ([`crate::story::account::capacity`]): the advice names the
/// count every other output names.
pub fn attach(run: &Run, results: &mut [CheckResult], capacity: Option<&Capacity>) {
    let withheld = tuning_withheld(run, results).is_some();
    let tuned = |r: &CheckResult| matches!(r.tripwire, Tripwire::T1 | Tripwire::T8 | Tripwire::T9);
    // The replay is made only for a run whose tuning advice it would check.
    let replay = (!withheld
        && results
            .iter()
            .any(|r| tuned(r) && matches!(r.status, Status::Fail | Status::Warn)))
    .then(|| Replay::of(run))
    .flatten();
    let advice: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            if withheld && tuned(r) {
                Vec::new()
            } else {
                advice_for(run, r, capacity, replay.as_ref())
            }
        })
        .collect();
    for (result, advice) in results.iter_mut().zip(advice) {
        result.advice = advice;
    }
}

/// The advice for one result; `replay` checks the tuning advice's cures where given.
pub fn advice_for(
    run: &Run,
    result: &CheckResult,
    capacity: Option<&Capacity>,
    replay: Option<&Replay>,
) -> Vec<String> {
    let engine = run.engine;
    let boot = run.last_boot();
    let number = |key: &str| result.evidence.get(key).and_then(Value::as_f64);
    match (result.tripwire, result.status) {
        (Tripwire::T8, Status::Fail) => {
            let (Some(requested), Some(peak)) = (number("requested"), number("peak_running"))
            else {
                return Vec::new();
            };
            let tuning = concurrency_advice(engine, boot, requested as u64, peak, capacity, replay);
            match (number("waiting_deferred_share"), number("peak_waiting_deferred")) {
                // Most of the waiting was deferred: a higher limit or a larger cache would
                // not have started those requests. The tuning advice stays where some
                // waited for room too.
                (Some(share), Some(deferred)) if share > 0.5 => {
                    let mut advice = vec![format!(
                        "{} of the waiting requests were deferred (at most {} at once), held by a transient block (a KV connector's transfer, a structured-output grammar still compiling, a LoRA budget), which a higher running limit or a larger KV cache does not end: find what held them (the connector's log and T28 on a disaggregated server; for grammars, fewer distinct schemas or a warm-up that compiles them) before changing a limit",
                        if share == 1.0 { "all".to_owned() } else { format!("most ({})", fmt::percent(share, 0)) },
                        fmt::g(deferred)
                    )];
                    if share < 1.0 {
                        advice.extend(tuning);
                    }
                    advice
                }
                // Most of the waiting was for room: the limit or the cache is the cure.
                (Some(share), _) if share < 0.5 => vec![match tuning {
                    Some(t) => format!(
                        "the waiting requests waited for room in the batch or the KV cache, not for a KV transfer: {t}"
                    ),
                    None => format!(
                        "the waiting requests waited for room in the batch or the KV cache, not for a KV transfer: raise {} or give the KV cache more memory",
                        engine.running_cap_flag
                    ),
                }],
                _ => tuning.into_iter().collect(),
            }
        }
        (Tripwire::T1, Status::Fail) if number("preemptions").is_none_or(|k| k > 0.0) => {
            vec![eviction_advice(engine, boot, capacity, replay)]
        }
        (Tripwire::T9, Status::Warn) if !engine.gauges_lag => {
            let (Some(lo), Some(hi)) = (number("ceiling_min"), number("ceiling_max")) else {
                return Vec::new();
            };
            // The cap that keeps every request at full length, as T1's advice gives it,
            // lowered further where the replay says that one still preempts.
            let cap = capacity
                .filter(|c| c.fit_full > 0)
                .map_or(lo, |c| c.fit_full as f64);
            let report = format!(
                "report this run's concurrency as {} to {}",
                fmt::g(lo),
                fmt::g(hi)
            );
            let capped = match replay {
                None => Some((cap, String::new())),
                Some(r) => r
                    .largest_limit_without_evictions(cap.max(1.0) as u64)
                    .map(|(n, p)| (n as f64, r.note(&p))),
            };
            vec![match capped {
                Some((n, note)) => format!(
                    "for one concurrency through the whole run, cap {} at {}{}{note}; otherwise {report}",
                    engine.tuning.max_running.shown(),
                    fmt::g(n),
                    if n == cap {
                        ", the most that fit at full length"
                    } else {
                        ", the most the replay of this run's load runs without eviction"
                    }
                ),
                None => format!(
                    "{report}: the replay of this run's load finds no running limit that keeps one concurrency through the run"
                ),
            }]
        }
        (Tripwire::T18 | Tripwire::T20, _) => crate::judging::checks::ledger::advice(result),
        (Tripwire::T23, _) => crate::judging::checks::client_wait::advice(result),
        (Tripwire::T24 | Tripwire::T25, _) => crate::judging::checks::server_view::advice(result),
        (Tripwire::T26, _) => crate::judging::checks::kv_stream::advice(result, engine),
        (Tripwire::T27, _) => crate::judging::checks::spec_decode::advice(result, engine),
        (Tripwire::T28, _) => crate::judging::checks::disaggregation::advice(result),
        (Tripwire::T29, Status::Fail) => vec![
            "read the server's log at the stall's time (a worker that stopped, a tokenizer or a request that blocked the engine's loop); a stall is no engine speed, so measure again once it is gone".to_owned(),
        ],
        (Tripwire::T30, Status::Warn) => vec![format!(
            "to measure decode speed apart from prefills, send prompts of one length or lower {} so that a prefill is cut into smaller chunks beside the decodes; to keep long prompts from slowing decodes at all, serve prefill and decode apart",
            "--max-num-batched-tokens"
        )],
        (Tripwire::T16, Status::Warn) => engine
            .prefix_cache
            .map(|p| {
                vec![format!(
                    "measure fresh prompts: {}, or send prompts this server has not seen (another seed, a freshly started server); if the run is meant to reuse prefixes, say so with --expect-cache-hits",
                    p.turn_off
                )]
            })
            .unwrap_or_default(),
        (Tripwire::T17, Status::Fail) => {
            let Some(n) = number("requested") else {
                return Vec::new();
            };
            vec![format!(
                "make the load keep {} requests open (its workers, processes and connection limits must allow them), or report the run at the concurrency it had",
                fmt::g(n)
            )]
        }
        (Tripwire::T19, Status::Fail | Status::Warn) => vec![
            "send untimed warm-up requests at the run's concurrency and lengths before the timed ones, so that the engine compiles what the run needs first".to_owned(),
        ],
        _ => Vec::new(),
    }
}

/// A setting's value as the boot log printed it.
fn printed(boot: Option<&BootFacts>, setting: &Setting) -> Option<String> {
    match boot.and_then(|b| b.setting(setting.key)) {
        Some(PyValue::Int(i)) => Some(i.to_string()),
        Some(PyValue::Float(f)) => Some(fmt::g(*f)),
        Some(v) if !v.is_none() => v.as_str().map(|s| s.trim_matches('\'').to_owned()),
        _ => None,
    }
}

/// The setting that sizes this server's KV cache: the outright size when the boot log
/// shows it was given (vLLM then ignores `--gpu-memory-utilization`, so raising that would
/// change nothing), else the memory share.
fn memory_setting<'e>(engine: &'e EngineDescriptor, boot: Option<&BootFacts>) -> &'e Setting {
    match &engine.tuning.cache_size {
        Some(size) if printed(boot, size).is_some() => size,
        _ => &engine.tuning.memory_fraction,
    }
}

/// A setting's value as the boot log printed it, else the engine's default.
fn current(boot: Option<&BootFacts>, setting: &Setting) -> Option<String> {
    printed(boot, setting).or_else(|| setting.default.map(fmt::g))
}

/// `raise `--gpu-memory-utilization` above 0.93`, `... above 0.9 (its default)` when the
/// log printed no value (vLLM prints only the settings that differ from the default), or
/// without a value when neither is known.
fn raise(boot: Option<&BootFacts>, setting: &Setting) -> String {
    match (printed(boot, setting), setting.default) {
        (Some(value), _) => format!("raise {} above {value}", setting.shown()),
        (None, Some(default)) => format!(
            "raise {} above {} (its default)",
            setting.shown(),
            fmt::g(default)
        ),
        (None, None) => format!("raise {}", setting.shown()),
    }
}

/// Why the server ran fewer at once than the load sent, and what to change: a running
/// limit below the load, else a KV cache too small for it. With `replay`, each cure is
/// given only where the replay runs the load's concurrency with it.
fn concurrency_advice(
    engine: &EngineDescriptor,
    boot: Option<&BootFacts>,
    requested: u64,
    peak: f64,
    capacity: Option<&Capacity>,
    replay: Option<&Replay>,
) -> Option<String> {
    if let Some(cap) = boot.and_then(|b| b.running_cap).filter(|c| *c < requested) {
        if peak >= cap as f64 {
            let facts = boot?;
            return Some(match (&facts.running_cap_reason, facts.requested_running) {
                // The engine's log names its own remedy for the limit it set: quote it.
                (Some(reason), _) if facts.engine_remedy.is_some() => format!(
                    "{} lowered its running limit to {cap} because of the {reason}; to raise it, its log says: {}; or ask for {cap}",
                    engine.name,
                    facts.engine_remedy.as_deref().unwrap_or_default()
                ),
                (Some(reason), Some(asked)) if asked > cap => {
                    match memory_without_need(engine, boot) {
                        Cure::Raise(raise) => format!(
                            "{} lowered its running limit to {cap} because of the {reason}: {raise} to give it room, or ask for {cap}",
                            engine.name,
                        ),
                        Cure::NoMoreMemory(why) => format!(
                            "{} lowered its running limit to {cap} because of the {reason}: {why}; or ask for {cap}",
                            engine.name,
                        ),
                    }
                }
                _ => running_cap_advice(engine, cap, requested, replay),
            });
        }
    }
    let c = capacity?;
    if c.fit_start >= requested && c.fit_full >= requested {
        return None;
    }
    let need = requested as f64 * c.per_request_full;
    let verb = if matches!(c.unit, Unit::Tokens { .. }) {
        "holds"
    } else {
        "hold"
    };
    let holds = if c.fit_full < c.fit_start {
        format!(
            "{} {verb} at most {} of these requests when they start ({} each) and {} at full length ({})",
            c.cache_words(),
            c.fit_start,
            c.amount(c.per_request_start),
            c.fit_full,
            c.full_words()
        )
    } else {
        format!(
            "{} {verb} at most {} of these requests ({} at full length)",
            c.cache_words(),
            c.fit_full,
            c.full_words()
        )
    };
    let (cure, or) = match (c.memory_cure(engine, boot, need), replay) {
        (Cure::Raise(text), None) => (text, ", or"),
        (Cure::Raise(_), Some(r)) => match replayed_pool(c, r, need, replayed::runs(requested)) {
            Some((units, note)) => match c.memory_cure(engine, boot, units) {
                Cure::Raise(text) => (format!("{text}{note}"), ", or"),
                Cure::NoMoreMemory(text) => (text, "; or"),
            },
            None => (
                format!(
                    "the replay of this run's load runs {requested} at once with no cache up to {} times this one",
                    replayed::POOL_SEARCH_FACTOR
                ),
                "; or",
            ),
        },
        (Cure::NoMoreMemory(text), _) => (text, "; or"),
    };
    let ask = match (c.fit_full, replay) {
        (0, _) => String::new(),
        (n, None) => format!("{or} ask for {n}"),
        (n, Some(r)) => match r.largest_calm(n, |k| r.concurrency(k)) {
            Some((k, p)) => format!("{or} ask for {k}{}", r.note(&p)),
            None => String::new(),
        },
    };
    // `amount` says `about` itself where the count falls between whole blocks.
    let need_words = c.amount(need);
    let about = if need_words.starts_with("about ") {
        ""
    } else {
        "about "
    };
    Some(format!(
        "{holds}; {requested} need {about}{need_words}: {cure}{ask}"
    ))
}

/// The cache the replay says meets `good`, at least `need` of the capacity's units: in
/// those units, with the replay's note. The replay counts a pool in its own units (a
/// token pool's tokens may be blocks to it), so the two are scaled by what each holds.
fn replayed_pool(
    c: &Capacity,
    r: &Replay,
    need: f64,
    good: impl Fn(&whatif::Prediction) -> bool,
) -> Option<(f64, String)> {
    let scale = r.usable_units() as f64 / c.have();
    if !(scale.is_finite() && scale > 0.0) {
        return None;
    }
    let (units, p) = r.smallest_pool((need * scale).ceil() as u64, good)?;
    Some((units as f64 / scale, r.note(&p)))
}

/// `raise --max-num-seqs from 2 to 8, or ask for 2`, each cure replayed where the replay
/// can speak for the run.
fn running_cap_advice(
    engine: &EngineDescriptor,
    cap: u64,
    requested: u64,
    replay: Option<&Replay>,
) -> String {
    let setting = engine.tuning.max_running.shown();
    let Some(r) = replay else {
        return format!("raise {setting} from {cap} to {requested}, or ask for {cap}");
    };
    let ask = r
        .concurrency(cap)
        .map(|p| format!("ask for {cap}{}", r.note(&p)))
        .unwrap_or_else(|| format!("ask for {cap}"));
    match r.running_limit(requested) {
        Some(p) if replayed::runs(requested)(&p) => {
            format!(
                "raise {setting} from {cap} to {requested}{}, or {ask}",
                r.note(&p)
            )
        }
        Some(p) => format!(
            "{ask}; raising {setting} to {requested} would not run them all{}",
            r.note(&p)
        ),
        None => format!("raise {setting} from {cap} to {requested}, or {ask}"),
    }
}

/// How to stop evictions, in the engine's own setting, with the run's numbers when the
/// load is known against the cache. With `replay`, a running limit is lowered as far as
/// the replay says stops them, a cache grown to the size it says suffices, and a cure it
/// says would not stop them is left out.
fn eviction_advice(
    engine: &EngineDescriptor,
    boot: Option<&BootFacts>,
    capacity: Option<&Capacity>,
    replay: Option<&Replay>,
) -> String {
    let tuning = &engine.tuning;
    let fits = capacity.filter(|c| c.fit_full < c.requested && c.fit_full > 0);
    let full_length = |c: &Capacity| {
        format!(
            "{} of these requests fit at full length ({})",
            c.fit_full,
            c.full_words()
        )
    };
    // `lower X to N`, with N the replay's where it differs from the arithmetic's.
    let lower = |c: &Capacity| -> Option<String> {
        let Some(r) = replay else {
            return Some(format!(
                "lower {} to {} so that none is {}",
                tuning.max_running.shown(),
                c.fit_full,
                preempted(engine)
            ));
        };
        let (n, p) = r.largest_limit_without_evictions(c.fit_full)?;
        let why = if n == c.fit_full {
            format!("so that none is {}", preempted(engine))
        } else {
            format!(
                "(the replay of this run's load still has {} {} at {})",
                r.running_limit(c.fit_full)
                    .and_then(|p| p.predicted.evictions)
                    .map_or("some".to_owned(), |e| e.to_string()),
                preempted(engine),
                c.fit_full
            )
        };
        Some(format!(
            "lower {} to {n} {why}{}",
            tuning.max_running.shown(),
            r.note(&p)
        ))
    };
    match tuning.no_eviction {
        NoEviction::LowerRunningLimit => match fits {
            Some(c) => {
                let need = c.requested as f64 * c.per_request_full;
                let memory = match (c.memory_cure(engine, boot, need), replay) {
                    (Cure::Raise(raise), None) => Some(Cure::Raise(raise)),
                    (Cure::Raise(_), Some(r)) => replayed_pool(c, r, need, replayed::evicts_none)
                        .map(|(units, note)| match c.memory_cure(engine, boot, units) {
                            Cure::Raise(text) => Cure::Raise(format!("{text}{note}")),
                            other => other,
                        }),
                    (no, _) => Some(no),
                };
                match (lower(c), memory) {
                    (Some(lower), Some(Cure::Raise(raise))) => {
                        format!("{}: {lower}, or {raise}", full_length(c))
                    }
                    (Some(lower), Some(Cure::NoMoreMemory(why))) => {
                        format!("{}: {lower}; {why}", full_length(c))
                    }
                    (Some(lower), None) => format!("{}: {lower}", full_length(c)),
                    (None, Some(Cure::Raise(raise))) => format!(
                        "{}, yet the replay of this run's load preempts at every lower {}: {raise}",
                        full_length(c),
                        tuning.max_running.shown()
                    ),
                    (None, _) => format!(
                        "{}, yet the replay of this run's load finds no running limit or cache size here that stops the {}",
                        full_length(c),
                        engine.preemption_words(2.0)
                    ),
                }
            }
            None => {
                let lower = format!(
                    "lower {} to the number of requests that fit at full length",
                    tuning.max_running.shown()
                );
                match memory_without_need(engine, boot) {
                    Cure::Raise(raise) => format!("{lower}, or {raise}"),
                    Cure::NoMoreMemory(why) => format!("{lower}; {why}"),
                }
            }
        },
        NoEviction::Raise(setting) => {
            // The replay does not vary this setting: only the running limit is replayed.
            let mut text = format!(
                "{} so that {} admits fewer requests at once{}",
                raise(boot, &setting),
                engine.name,
                if replay.is_some() {
                    " (not replayed: the model does not vary it)"
                } else {
                    ""
                }
            );
            match fits {
                Some(c) if replay.is_none() => text.push_str(&format!(
                    ", or lower {} to {}: {}",
                    tuning.max_running.shown(),
                    c.fit_full,
                    full_length(c)
                )),
                Some(c) => match lower(c) {
                    Some(lower) => text.push_str(&format!(", or {lower}: {}", full_length(c))),
                    None => text.push_str(&format!("; {}", full_length(c))),
                },
                None => match memory_without_need(engine, boot) {
                    Cure::Raise(raise) => text.push_str(&format!(", or {raise}")),
                    Cure::NoMoreMemory(why) => text.push_str(&format!("; {why}")),
                },
            }
            text
        }
        NoEviction::Set { setting, value } => {
            let mut text = format!("set {} to {value}", setting.shown());
            if let Some(now) = current(boot, &setting).filter(|now| now != value) {
                text.push_str(&format!(" (this run used {now})"));
            }
            text.push_str(": a request then starts only when its whole output fits");
            if let Some(p) = replay.and_then(|r| r.policy(setting.written, value).map(|p| (r, p))) {
                text.push_str(&p.0.note(&p.1));
            }
            if let Some(c) = fits {
                text.push_str(&format!("; {}", full_length(c)));
            }
            text
        }
    }
}

/// `preempted`, `retracted`, `paused`: the engine's word as a past participle.
pub fn preempted(engine: &EngineDescriptor) -> String {
    let word = engine.preemption_word;
    if let Some(stem) = word.strip_suffix("ion") {
        format!("{stem}ed")
    } else if word.ends_with('e') {
        format!("{word}d")
    } else {
        format!("{word}ed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{SGLANG, TRTLLM, VLLM};
    use crate::model::client::{ClientAccount, LoadTool};
    use crate::model::Settings;

    fn run(
        engine: &'static EngineDescriptor,
        boot: BootFacts,
        bench: Option<ClientAccount>,
    ) -> Run {
        Run {
            engine,
            boots: vec![("boot.log".into(), boot)],
            before: None,
            after: None,
            series: None,
            bench: bench.map(|b| ("bench.json".into(), b)),
            expected_extra_requests: 0,
            requested: Some(32),
            load_failure: None,
            rejected: Vec::new(),
            server_requests: None,
            kv_events: None,
            steps: None,
            notes: Vec::new(),
        }
    }

    fn settings(pairs: &[(&str, PyValue)]) -> Option<Settings> {
        Some(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
    }

    fn t8(peak: f64) -> CheckResult {
        CheckResult::new(Tripwire::T8, Status::Fail, "held back")
            .with("requested", 32)
            .with("peak_running", peak)
    }

    fn advice(run: &Run, results: &[CheckResult]) -> Vec<Vec<String>> {
        let mut results = results.to_vec();
        let capacity = capacity(run, &results);
        attach(run, &mut results, capacity.as_ref());
        results.into_iter().map(|r| r.advice).collect()
    }

    /// T16, T17 and T19 name what changes them: the engine's own switch for its prefix
    /// cache, the load's limits, an untimed warm-up; T21 has no setting to give.
    #[test]
    fn the_new_traps_name_what_changes_them() {
        let engines = [
            (&VLLM, "--no-enable-prefix-caching"),
            (&SGLANG, "--disable-radix-cache"),
            (&TRTLLM, "enable_block_reuse: false"),
        ];
        for (engine, switch) in engines {
            let r = run(engine, BootFacts::default(), None);
            let warm_cache = CheckResult::new(Tripwire::T16, Status::Warn, "87%");
            let a = advice(&r, &[warm_cache]);
            assert!(a[0][0].contains(switch), "{}: {:?}", engine.name, a);
        }
        let r = run(&VLLM, BootFacts::default(), None);
        let short = CheckResult::new(Tripwire::T17, Status::Fail, "8 of 32").with("requested", 32);
        let cold = CheckResult::new(Tripwire::T19, Status::Fail, "compiled");
        let shared = CheckResult::new(Tripwire::T21, Status::Fail, "tenant");
        let a = advice(&r, &[short, cold, shared]);
        assert!(
            a[0][0].starts_with("make the load keep 32 requests open"),
            "{a:?}"
        );
        assert!(
            a[1][0].starts_with("send untimed warm-up requests"),
            "{a:?}"
        );
        assert!(a[2].is_empty());
    }

    /// vLLM with a hybrid model: the usable blocks (T14) and each request's share of them
    /// (T9) give how many fit and how much more KV memory the load needs.
    #[test]
    fn vllm_kv_limited_concurrency_names_the_memory_flag_and_the_numbers() {
        let boot = BootFacts {
            attention_block_size: Some(784),
            kv_pool_tokens: Some(26093),
            available_kv_cache_gib: Some(2.09),
            non_default_args: settings(&[("gpu_memory_utilization", PyValue::Float(0.93))]),
            ..BootFacts::default()
        };
        let t9 = CheckResult::new(Tripwire::T9, Status::Warn, "moved")
            .with("ceiling_min", 7)
            .with("ceiling_max", 10)
            .with("usable_blocks", 42)
            .with("blocks_per_request_min", 4.0)
            .with("blocks_per_request_max", 6.0);
        let t1 = CheckResult::new(Tripwire::T1, Status::Fail, "22").with("preemptions", 22.0);
        let all = advice(&run(&VLLM, boot, None), &[t8(10.0), t9, t1]);
        // A hybrid model: tokens say nothing of its pages, so T9's measured shares count
        // (4 blocks at start, 6 at the fullest; a preempted request never grew further, so
        // 6 is a lower bound). 42 / 4 = 10 start, 42 / 6 = 7 reach full length; the 32
        // need 32 x 6 = 192 blocks, 2.09 GiB x (192 / 42 - 1) = 7.5 GiB more. Asking for
        // 10 would preempt: the advice asks for the 7 that fit whole, as T1 and T9 do.
        assert_eq!(
            all[0],
            ["42 usable blocks of 784 tokens hold at most 10 of these requests when they start (4 blocks each) and 7 at full length (at least 6 blocks each, as the recording measured); 32 need about 192 blocks: raise `--gpu-memory-utilization` above 0.93 to give the KV cache about 7.5 GiB more than its 2.09 GiB, or ask for 7"]
        );
        assert_eq!(
            all[1],
            ["for one concurrency through the whole run, cap `--max-num-seqs` at 7, the most that fit at full length; otherwise report this run's concurrency as 7 to 10"]
        );
        assert_eq!(
            all[2],
            ["7 of these requests fit at full length (at least 6 blocks each, as the recording measured): lower `--max-num-seqs` to 7 so that none is preempted, or raise `--gpu-memory-utilization` above 0.93 to give the KV cache about 7.5 GiB more than its 2.09 GiB"]
        );
    }

    /// A `vllm bench serve` account of 32 completed requests of these lengths.
    fn thirty_two(prompt: i64, output: i64) -> ClientAccount {
        ClientAccount {
            completed: Some(32),
            total_input_tokens: Some(32 * prompt),
            total_output_tokens: Some(32 * output),
            ..ClientAccount::new(LoadTool::VllmBench)
        }
    }

    /// A plain model whose requests preemption kept short: T9 measured at most 18 of
    /// 128 usable blocks per request (ceilings 7 to 10), but each request's 88 prompt and
    /// 300 output tokens are 388 tokens, 25 blocks of 16, so 128 / 25 = 5 fit at full
    /// length, and 128 / 6 = 21 at start (89 tokens, 6 blocks). T1, T8 and T9 all say 5.
    #[test]
    fn preemption_that_kept_requests_short_does_not_shrink_full_length() {
        let boot = BootFacts {
            kv_pool_tokens: Some(2048),
            available_kv_cache_gib: Some(1.0),
            ..BootFacts::default()
        };
        let bench = thirty_two(88, 300);
        let t9 = CheckResult::new(Tripwire::T9, Status::Warn, "moved")
            .with("ceiling_min", 7)
            .with("ceiling_max", 10)
            .with("usable_blocks", 128)
            .with("blocks_per_request_min", 12.0)
            .with("blocks_per_request_max", 18.0);
        let t1 = CheckResult::new(Tripwire::T1, Status::Fail, "30").with("preemptions", 30.0);
        let all = advice(&run(&VLLM, boot, Some(bench)), &[t8(10.0), t9, t1]);
        assert!(
            all[0][0].contains("21 of these requests when they start (6 blocks each) and 5 at full length (25 blocks each)")
                && all[0][0].ends_with("or ask for 5"),
            "{all:?}"
        );
        assert!(all[1][0].contains("cap `--max-num-seqs` at 5"), "{all:?}");
        assert!(
            all[2][0].starts_with("5 of these requests fit at full length (25 blocks each): lower `--max-num-seqs` to 5"),
            "{all:?}"
        );
    }

    /// A card with no memory left: the engine's own log puts the largest cache it allows
    /// below the cache it has, so no advice raises the memory setting; it says so and
    /// names what makes room on the engine. The engine's own `--kv-cache-memory` remedy
    /// is not quoted: its 1.9 GiB is less than the 2.09 GiB the cache has, so pasting it
    /// would shrink the cache.
    #[test]
    fn advice_never_asks_for_memory_the_card_does_not_have() {
        let boot = BootFacts {
            kv_pool_tokens: Some(2048),
            available_kv_cache_gib: Some(2.09),
            kv_cache_full_gib: Some(1.9),
            engine_remedy: Some(
                "`--kv-cache-memory=2045183488` (1.9 GiB) to fully utilize gpu memory".into(),
            ),
            ..BootFacts::default()
        };
        let bench = thirty_two(88, 300);
        let t1 = CheckResult::new(Tripwire::T1, Status::Fail, "30").with("preemptions", 30.0);
        let all = advice(
            &run(&VLLM, boot.clone(), Some(bench.clone())),
            &[t8(10.0), t1],
        );
        for a in &all {
            assert!(!a[0].contains("raise `--gpu-memory-utilization`"), "{a:?}");
            assert!(
                a[0].contains("the card cannot give the KV cache")
                    && a[0].contains("none to spare")
                    && !a[0].contains("--kv-cache-memory=")
                    && a[0].contains("`--kv-cache-dtype fp8`"),
                "{a:?}"
            );
        }
        // With room on the card, the raise is bounded by it: 32 x 128 tokens against a
        // 2,800-token pool need 2.09 GiB x (4,096 / 2,800 - 1) = 1.0 GiB more, of the
        // 3.59 - 2.09 = 1.5 GiB the card allows.
        let roomy = BootFacts {
            kv_pool_tokens: Some(2800),
            kv_cache_full_gib: Some(3.59),
            engine_remedy: None,
            ..boot
        };
        let bench = ClientAccount {
            total_output_tokens: Some(32 * 40),
            ..bench
        };
        let a = advice(&run(&VLLM, roomy, Some(bench)), &[t8(24.0)]);
        assert!(
            a[0][0].contains("raise `--gpu-memory-utilization` above 0.9 (its default)")
                && a[0][0].contains("at most 1.5 GiB more"),
            "{a:?}"
        );
    }

    /// vLLM 0.28's boot log on the recorded 24 GiB card (`Free memory on device
    /// (22.45/23.99 GiB) on startup ... 18.16 GiB for consumed memory, 2.06 GiB for peak
    /// activation, and 0.18 GiB for CUDAGraph memory ... `--kv-cache-memory=2045183488`
    /// (1.9 GiB) to fully utilize gpu memory. Current kv cache memory in use is 2.09
    /// GiB`), with `gpu_memory_utilization` 0.93.
    fn vllm_028_card() -> BootFacts {
        BootFacts {
            available_kv_cache_gib: Some(2.09),
            device_free_gib: Some(22.45),
            device_total_gib: Some(23.99),
            consumed_gib: Some(18.16),
            peak_activation_gib: Some(2.06),
            cudagraph_actual_gib: Some(0.18),
            kv_cache_full_gib: Some(2045183488.0 / GIB),
            // `GPU KV cache size: 26,093 tokens`
            kv_pool_tokens: Some(26093),
            engine_remedy: Some(
                "`--kv-cache-memory=2045183488` (1.9 GiB) to fully utilize gpu memory".into(),
            ),
            server_args: settings(&[("gpu_memory_utilization", PyValue::Float(0.93))]),
            ..BootFacts::default()
        }
    }

    /// Two runs of one setup on one card are told the same of its memory, whether the
    /// run gives the load's numbers or not: the engine's own log says the largest cache
    /// the card allows (1.90 GiB) is below the 2.09 GiB the cache has, so neither is told
    /// to raise `--gpu-memory-utilization`, nor to paste the smaller size.
    #[test]
    fn one_card_gets_one_memory_answer_with_or_without_the_load() {
        let t1 = CheckResult::new(Tripwire::T1, Status::Fail, "22").with("preemptions", 22.0);
        let without_load = advice(
            &run(&VLLM, vllm_028_card(), None),
            std::slice::from_ref(&t1),
        );
        // 32 requests of 1,088 tokens need 34,816 of the 26,093-token pool.
        let with_load = advice(
            &run(&VLLM, vllm_028_card(), Some(thirty_two(88, 1000))),
            &[t1],
        );
        assert!(
            with_load[0][0].starts_with("23 of these requests fit at full length"),
            "{with_load:?}"
        );
        let said = "(vLLM's log puts the largest cache this card allows at 1.90 GiB, no more than the 2.09 GiB it already has; none to spare)";
        for a in [&without_load[0][0], &with_load[0][0]] {
            assert!(a.contains(said), "{a}");
            assert!(!a.contains("raise `--gpu-memory-utilization`"), "{a}");
            assert!(!a.contains("--kv-cache-memory="), "{a}");
        }
    }

    /// Where the card has memory to give, the share is raised to a target: vLLM's KV
    /// cache is the card's total times `--gpu-memory-utilization` less what else it took
    /// (0.93 x 23.99 - 18.16 - 2.06 = 2.09 GiB in the log above), so each GiB more is
    /// 1 / 23.99 more share.
    #[test]
    fn a_raise_names_its_target_share() {
        let roomy = BootFacts {
            kv_pool_tokens: Some(2800),
            kv_cache_full_gib: Some(3.59),
            engine_remedy: None,
            consumed_gib: None,
            ..vllm_028_card()
        };
        // 32 requests of 128 tokens need 4,096 tokens of the 2,800-token pool: 2.09 x
        // (4,096 / 2,800 - 1) = 0.968 GiB more; 0.93 + 0.968 / 23.99 = 0.9703, up to 0.971.
        let bench = ClientAccount {
            total_output_tokens: Some(32 * 40),
            ..thirty_two(88, 300)
        };
        let a = advice(&run(&VLLM, roomy, Some(bench)), &[t8(24.0)]);
        assert!(
            a[0][0].contains("raise `--gpu-memory-utilization` from 0.93 to 0.971 to give the KV cache about 1.0 GiB more than its 2.09 GiB"),
            "{a:?}"
        );
    }

    /// Without the load's numbers, a raise is bounded by what the card has: with the
    /// graphs left out of the 0.28 log above, 22.45 - (18.16 + 2.06) - 2.09 = 0.14 GiB
    /// is free beside the cache, and 0.93 + 0.14 / 23.99 = 0.9358, so the share may go
    /// to 0.935 but not to 0.936 (which would ask for 0.144 GiB).
    #[test]
    fn a_bounded_raise_rounds_down() {
        let card = BootFacts {
            cudagraph_actual_gib: None,
            kv_cache_full_gib: None,
            engine_remedy: None,
            ..vllm_028_card()
        };
        let t1 = CheckResult::new(Tripwire::T1, Status::Fail, "22").with("preemptions", 22.0);
        let a = advice(&run(&VLLM, card, None), &[t1]);
        assert!(
            a[0][0].starts_with("lower `--max-num-seqs` to the number of requests that fit at full length, or raise `--gpu-memory-utilization` from 0.93 to at most 0.935 ("),
            "{a:?}"
        );
        assert!(a[0][0].ends_with("; at most 0.1 GiB more)"), "{a:?}");
    }

    /// SGLang's `--mem-fraction-static` is a share of the memory free before the weights
    /// load: its pool is what the weights left less `(1 - share)` of that memory (the
    /// recorded Qwen3-8B start: 7.09 - 22.37 x 0.12 = 4.40 GiB, its K and V sizes). The
    /// 34,816 tokens 32 requests of 1,088 need against the 32,096-token pool take 4.40 x
    /// (34,816 / 32,096 - 1) = 0.373 GiB more: 0.88 + 0.373 / 22.37 = 0.8967, up to
    /// 0.897. SGLang's log says GB for sizes it counts in GiB (2^30 bytes; it logs 22.37
    /// free on the 24 GiB card where vLLM logs 22.45 GiB), so the advice says GiB.
    #[test]
    fn sglang_names_a_target_share_in_gib() {
        let boot = BootFacts {
            page_size: Some(1),
            kv_pool_tokens: Some(32096),
            available_kv_cache_gib: Some(4.4),
            device_free_gib: Some(22.37),
            memory_left_gib: Some(1.08),
            server_args: settings(&[("mem_fraction_static", PyValue::Float(0.88))]),
            ..BootFacts::default()
        };
        let bench = ClientAccount {
            completed: Some(32),
            total_input_tokens: Some(32 * 88),
            total_output_tokens: Some(32 * 1000),
            ..ClientAccount::new(LoadTool::VllmBench)
        };
        let a = advice(&run(&SGLANG, boot, Some(bench)), &[t8(29.0)]);
        assert!(
            a[0][0].contains("raise `--mem-fraction-static` from 0.88 to 0.897 to give the KV cache about 0.4 GiB more than its 4.40 GiB (the card had 1.08 GiB left once SGLang had started; at most 1.1 GiB more)"),
            "{a:?}"
        );
        assert!(!a[0][0].contains(" GB"), "{a:?}");
    }

    /// A measured share between whole blocks says `about` once.
    #[test]
    fn a_measured_need_says_about_once() {
        let boot = BootFacts {
            available_kv_cache_gib: Some(2.31),
            ..BootFacts::default()
        };
        let t9 = CheckResult::new(Tripwire::T9, Status::Warn, "moved")
            .with("ceiling_min", 7)
            .with("ceiling_max", 11)
            .with("usable_blocks", 47)
            .with("blocks_per_request_min", 4.0)
            .with("blocks_per_request_max", 6.43);
        let a = advice(&run(&VLLM, boot, None), &[t8(11.0), t9]);
        assert!(a[0][0].contains("32 need about 205.8 blocks"), "{a:?}");
        assert!(!a[0][0].contains("about about"), "{a:?}");
    }

    /// No tuning advice from a run whose numbers describe no one setup: a server that
    /// restarted between the readings.
    #[test]
    fn a_restart_gets_no_tuning_advice() {
        let mut r = run(&VLLM, BootFacts::default(), None);
        let reading = |created: f64, total: f64| {
            let text = format!(
                "vllm:num_preemptions_created 1.0e9\nvllm:num_preemptions_total {total}\nvllm:request_success_created {created}\n"
            );
            crate::model::Snapshot {
                url: "http://127.0.0.1:8000/metrics".into(),
                t_wall: None,
                t_mono_ns: None,
                latency_s: None,
                metrics: crate::model::metrics::MetricSet::new(
                    text.lines()
                        .map(|l| {
                            let (name, value) = l.split_once(' ').unwrap();
                            crate::model::metrics::Sample {
                                name: name.into(),
                                labels: Vec::new(),
                                value: value.parse().unwrap(),
                                timestamp_ms: None,
                            }
                        })
                        .collect(),
                ),
                text,
            }
        };
        r.before = Some(reading(1.0e9, 5.0));
        r.after = Some(reading(2.0e9, 1.0));
        let t1 = CheckResult::new(Tripwire::T1, Status::Fail, "22").with("preemptions", 22.0);
        let t9 = CheckResult::new(Tripwire::T9, Status::Warn, "moved")
            .with("ceiling_min", 7)
            .with("ceiling_max", 10);
        assert!(tuning_withheld(&r, &[]).is_some());
        let all = advice(&r, &[t8(10.0), t1, t9]);
        assert!(all.iter().all(Vec::is_empty), "{all:?}");
    }

    /// SGLang with a plain model: the pool in tokens against each request's prompt and
    /// output, at full length (SGLang reserves a request's output when it admits it).
    #[test]
    fn sglang_kv_limited_concurrency_counts_tokens() {
        let boot = BootFacts {
            page_size: Some(1),
            kv_pool_tokens: Some(32096),
            available_kv_cache_gib: Some(4.4),
            server_args: settings(&[
                ("mem_fraction_static", PyValue::Float(0.88)),
                ("schedule_conservativeness", PyValue::Float(1.0)),
            ]),
            ..BootFacts::default()
        };
        let bench = ClientAccount {
            completed: Some(32),
            total_input_tokens: Some(2816),
            total_output_tokens: Some(32000),
            ..ClientAccount::new(LoadTool::VllmBench)
        };
        let t1 = CheckResult::new(Tripwire::T1, Status::Fail, "3").with("preemptions", 3.0);
        let all = advice(&run(&SGLANG, boot, Some(bench)), &[t8(29.0), t1]);
        assert_eq!(
            all[0],
            ["the 32,096-token pool holds at most 29 of these requests (1,088 tokens each at full length); 32 need about 34,816 tokens: raise `--mem-fraction-static` above 0.88 to give the KV cache about 0.4 GiB more than its 4.40 GiB, or ask for 29"]
        );
        assert_eq!(
            all[1],
            ["raise `--schedule-conservativeness` above 1 so that SGLang admits fewer requests at once, or lower `--max-running-requests` to 29: 29 of these requests fit at full length (1,088 tokens each)"]
        );
    }

    /// A running limit below the load: raise it, or, where the engine lowered it itself,
    /// give what it lowered it for more room.
    #[test]
    fn a_running_limit_names_its_own_setting() {
        let capped = BootFacts {
            running_cap: Some(1),
            running_cap_reason: Some("mamba state cache".into()),
            requested_running: Some(32),
            server_args: settings(&[("mem_fraction_static", PyValue::Float(0.88))]),
            ..BootFacts::default()
        };
        assert_eq!(
            advice(&run(&SGLANG, capped, None), &[t8(1.0)])[0],
            ["SGLang lowered its running limit to 1 because of the mamba state cache: raise `--mem-fraction-static` above 0.88 to give it room, or ask for 1"]
        );
        let limited = BootFacts {
            running_cap: Some(16),
            ..BootFacts::default()
        };
        assert_eq!(
            advice(&run(&TRTLLM, limited.clone(), None), &[t8(16.0)])[0],
            ["raise `max_batch_size` in the --config YAML from 16 to 32, or ask for 16"]
        );
        assert_eq!(
            advice(&run(&VLLM, limited, None), &[t8(16.0)])[0],
            ["raise `--max-num-seqs` from 16 to 32, or ask for 16"]
        );
    }

    /// TensorRT-LLM pauses requests only under MAX_UTILIZATION: the advice names the
    /// YAML key and the policy this run used.
    #[test]
    fn trtllm_pauses_name_the_scheduler_policy() {
        let boot = BootFacts {
            server_args: settings(&[(
                "capacity_scheduler_policy",
                PyValue::Str("MAX_UTILIZATION".into()),
            )]),
            ..BootFacts::default()
        };
        let t1 = CheckResult::new(Tripwire::T1, Status::Fail, "13 paused").with("preemptions", 13);
        assert_eq!(
            advice(&run(&TRTLLM, boot, None), &[t1])[0],
            ["set `scheduler_config.capacity_scheduler_policy` in the --config YAML to GUARANTEED_NO_EVICT (this run used MAX_UTILIZATION): a request then starts only when its whole output fits"]
        );
    }

    /// Advice only where a setting changes the outcome: none on a pass, none for a
    /// lagging gauge's ceiling, none without the numbers a limit needs.
    #[test]
    fn no_advice_without_a_finding_or_its_numbers() {
        let boot = BootFacts::default();
        let results = [
            CheckResult::new(Tripwire::T8, Status::Pass, "reached")
                .with("requested", 32)
                .with("peak_running", 32.0),
            CheckResult::new(Tripwire::T8, Status::Unknown, "lagging")
                .with("requested", 32)
                .with("peak_running", 8.0),
            CheckResult::new(Tripwire::T9, Status::Warn, "moved")
                .with("ceiling_min", 1)
                .with("ceiling_max", 3),
            t8(10.0),
        ];
        let all = advice(&run(&TRTLLM, boot, None), &results);
        assert!(all.iter().all(Vec::is_empty), "{all:?}");
    }
}
