//! Boot-log checks: T4, T5, T6, T7/T12 and T11.
//!
//! Each check reads [`BootFacts`] only. A fact the log did not give makes the check answer
//! Can't tell (or take the branch that needs nothing), never a default value. Engine
//! differences (the backend flag, the engine's name) come from the engine's descriptor.

use serde_json::{json, Map, Value};

use crate::engine::Engine;
use crate::judging::status::{CheckResult, Evidence, Status, Tripwire};
use crate::model::{BootFacts, PyValue};
use crate::story::fmt;

/// Settings that differ between otherwise identical starts and say nothing about them.
const VOLATILE_SETTINGS: &[&str] = &["random_seed"];

/// T7 or T12 from the failure the classifier found: T12 PASS when there is none, T7 FAIL
/// when the server failed after it was ready, T12 FAIL when it failed before.
///
/// A log that shows no failure but ends before the server said it was ready (uvicorn's
/// `Application startup complete`, which all three engines print) does not say how the
/// boot ended: it was copied too early, or the process died without a word.
pub fn failure_check(facts: &BootFacts) -> CheckResult {
    let Some(failure) = &facts.failure else {
        if !facts.ready() {
            return CheckResult::new(
                Tripwire::T12,
                Status::Unknown,
                "no failure in log, but it ends before the server said it was ready (Application startup complete): how the boot ended is not in it",
            )
            .with("lines", facts.line_count);
        }
        return CheckResult::new(Tripwire::T12, Status::Pass, "no failure in log");
    };
    let tripwire = match failure.phase {
        crate::model::Phase::Serving => Tripwire::T7,
        crate::model::Phase::Boot => Tripwire::T12,
    };
    let shown = failure.detail.as_deref().unwrap_or(&failure.line);
    CheckResult::new(
        tripwire,
        Status::Fail,
        format!("{} during {}: {shown}", failure.kind, failure.phase.word()),
    )
    .with("kind", failure.kind.as_str())
    .with("phase", failure.phase.word())
    .with("lineno", failure.lineno)
    .with("line", failure.line.as_str())
}

/// T12 for a server that never came up and whose log names no cause: it could not be
/// started at all (`vllm: command not found`), or it exited before it was ready. A
/// caller that started the server knows this; the log alone may be empty.
pub fn start_failure(cause: &str) -> CheckResult {
    CheckResult::new(
        Tripwire::T12,
        Status::Fail,
        format!("could not start: {cause}"),
    )
    .with("kind", "start_failure")
    .with("phase", "boot")
}

/// T12 Can't tell when the log had lines the parser recognised but could not read: a
/// release changed a line's shape, and a fact may be missing because of it.
pub fn unparsed_check(facts: &BootFacts) -> Option<CheckResult> {
    if facts.unparsed.is_empty() {
        return None;
    }
    let lines: Vec<Value> = facts
        .unparsed
        .iter()
        .map(|u| json!({"field": u.field, "lineno": u.lineno, "text": u.text}))
        .collect();
    Some(
        CheckResult::new(
            Tripwire::T12,
            Status::Unknown,
            format!(
                "{} recognised line(s) in an unknown format",
                facts.unparsed.len()
            ),
        )
        .with("unparsed", lines),
    )
}

/// T5: a block size forced above the one asked for (hybrid models pad attention pages up
/// to the Mamba state size), which makes every request hold KV in large units.
pub fn block_size_check(facts: &BootFacts) -> CheckResult {
    if let Some(block_size) = facts.attention_block_size {
        let requested = facts
            .non_default_args
            .as_ref()
            .and_then(|args| args.get("block_size"))
            .and_then(PyValue::as_i64)
            .and_then(|b| u64::try_from(b).ok());
        // The line is vLLM's; a log that names no engine is read as vLLM's.
        let default = facts
            .engine
            .unwrap_or(Engine::DEFAULT)
            .descriptor()
            .default_block_size;
        let expected = requested.or(default).unwrap_or(block_size);
        let mut evidence = Evidence::new();
        evidence.insert("block_size".into(), json!(block_size));
        evidence.insert("requested".into(), json!(requested));
        evidence.insert(
            "mamba_page_padding_pct".into(),
            json!(facts.mamba_page_padding_pct),
        );
        if let Some(pool) = facts.kv_pool_tokens {
            evidence.insert("pool_blocks".into(), json!(pool as f64 / block_size as f64));
        }
        let result = if block_size == expected {
            CheckResult::new(
                Tripwire::T5,
                Status::Pass,
                format!("block size {block_size}"),
            )
        } else {
            CheckResult::new(
                Tripwire::T5,
                Status::Warn,
                format!(
                    "attention block size forced to {block_size} tokens (requested {expected}); each request's KV is allocated in {block_size}-token units"
                ),
            )
        };
        return result.with_evidence(evidence);
    }
    if let Some(page) = facts.page_size {
        return CheckResult::new(
            Tripwire::T5,
            Status::Pass,
            format!("page size {page} token{}, as set", fmt::plural(page as f64)),
        )
        .with("page_size", page);
    }
    if facts.ready() {
        CheckResult::new(Tripwire::T5, Status::Pass, "no block-size override printed")
    } else {
        CheckResult::new(
            Tripwire::T5,
            Status::Unknown,
            "boot did not get far enough to size blocks",
        )
    }
}

/// T6: the attention backend asked for against the one the main model and the draft
/// model actually picked.
pub fn backend_check(facts: &BootFacts) -> CheckResult {
    if facts.config_args().is_none() {
        return CheckResult::new(
            Tripwire::T6,
            Status::Unknown,
            "no arguments line in the log; cannot tell what was requested",
        );
    }
    let descriptor = facts.engine.unwrap_or(Engine::DEFAULT).descriptor();
    let target = distinct(&facts.selected_backends);
    let drafter = distinct(&facts.drafter_backends);
    let mut evidence = Evidence::new();
    evidence.insert("requested".into(), json!(facts.requested_backend));
    evidence.insert("target".into(), json!(facts.selected_backends));
    evidence.insert("drafter".into(), json!(facts.drafter_backends));
    evidence.insert("speculative".into(), json!(facts.speculative));

    let Some(requested) = facts.requested_backend.as_deref() else {
        // Some builds name no choice at all (vLLM's CPU build has one attention
        // implementation and prints no selection line): say so, not a placeholder.
        let chosen = if target.is_empty() {
            " (the log does not name it)".to_owned()
        } else {
            format!(" ({})", target.join(", "))
        };
        let mut message = format!(
            "nothing to check: the server was started without {}, so {} chose its own{chosen} and nothing could be ignored",
            descriptor.backend_flag, descriptor.name
        );
        if facts.speculative == Some(false) {
            message.push_str("; there was no draft model either");
        }
        return CheckResult::new(Tripwire::T6, Status::Pass, message).with_evidence(evidence);
    };
    if target.is_empty() && drafter.is_empty() {
        return CheckResult::new(
            Tripwire::T6,
            Status::Unknown,
            "no backend selection line in the log",
        )
        .with_evidence(evidence);
    }
    let others = |picked: &[&str]| -> Vec<String> {
        picked
            .iter()
            .filter(|b| **b != requested)
            .map(|b| (*b).to_owned())
            .collect()
    };
    let target_others = others(&target);
    if !target_others.is_empty() {
        return CheckResult::new(
            Tripwire::T6,
            Status::Fail,
            format!(
                "{requested} was requested, but the main model used {}",
                target_others.join(", ")
            ),
        )
        .with_evidence(evidence);
    }
    let drafter_others = others(&drafter);
    if !drafter_others.is_empty() {
        return CheckResult::new(
            Tripwire::T6,
            Status::Fail,
            format!(
                "{requested} was requested and the main model uses it, but the draft model (speculative decoding) picked {}",
                drafter_others.join(", ")
            ),
        )
        .with_evidence(evidence);
    }
    CheckResult::new(
        Tripwire::T6,
        Status::Pass,
        format!("{requested} was requested and used"),
    )
    .with_evidence(evidence)
}

/// The values in first-seen order, each once.
fn distinct(values: &[String]) -> Vec<&str> {
    let mut seen: Vec<&str> = Vec::new();
    for v in values {
        if !seen.contains(&v.as_str()) {
            seen.push(v);
        }
    }
    seen
}

/// T4 and T11 across boot logs: boots that reached ready and were started with the same
/// flags are compared; every T4 result comes first, then every T11 result. Empty when no
/// two boots are comparable.
pub fn across_boots(boots: &[(String, &BootFacts)]) -> Vec<CheckResult> {
    let groups = same_flag_groups(boots);
    if groups.is_empty() {
        return Vec::new();
    }
    let grouped: Vec<usize> = groups.iter().flatten().copied().collect();
    let not_compared: Vec<Value> = (0..boots.len())
        .filter(|i| !grouped.contains(i))
        .map(|i| Value::from(boots[i].0.as_str()))
        .collect();
    let mut results: Vec<CheckResult> = groups
        .iter()
        .map(|g| pool_check(boots, g, &not_compared))
        .collect();
    results.extend(
        groups
            .iter()
            .map(|g| kv_memory_check(boots, g, &not_compared)),
    );
    results
}

/// Indices of boots grouped by engine and settings, in first-seen order; only groups of
/// two or more.
fn same_flag_groups(boots: &[(String, &BootFacts)]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, (_, facts)) in boots.iter().enumerate() {
        let Some(key) = flags_key(facts) else {
            continue;
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    groups
        .into_iter()
        .filter(|(_, members)| members.len() >= 2)
        .map(|(_, members)| members)
        .collect()
}

/// What makes two starts "the same flags": the engine and its settings dict (order does
/// not matter; the random seed is left out), plus TensorRT-LLM's whole `LLM Args` line.
/// `None` for a boot that never became ready or printed no settings.
fn flags_key(facts: &BootFacts) -> Option<String> {
    if !facts.ready() {
        return None;
    }
    let args = facts.config_args()?;
    let settings: Vec<(String, PyValue)> = args
        .iter()
        .filter(|(k, _)| !VOLATILE_SETTINGS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let engine = facts.engine.map_or("", |e| e.key());
    Some(format!(
        "{engine}\n{}\n{}",
        PyValue::Dict(settings).canonical(),
        facts.llm_args.as_deref().unwrap_or("")
    ))
}

fn labels_of(boots: &[(String, &BootFacts)], group: &[usize]) -> String {
    group
        .iter()
        .map(|&i| boots[i].0.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Per-label evidence map of one fact.
fn per_label<T: Into<Value>>(
    boots: &[(String, &BootFacts)],
    group: &[usize],
    fact: impl Fn(&BootFacts) -> Option<T>,
) -> Value {
    let mut map = Map::new();
    for &i in group {
        let value = fact(boots[i].1).map_or(Value::Null, Into::into);
        map.insert(boots[i].0.clone(), value);
    }
    Value::Object(map)
}

/// T4 for one group of same-flag boots.
fn pool_check(
    boots: &[(String, &BootFacts)],
    group: &[usize],
    not_compared: &[Value],
) -> CheckResult {
    let pools = per_label(boots, group, |f| f.kv_pool_tokens);
    let missing: Vec<&str> = group
        .iter()
        .filter(|&&i| boots[i].1.kv_pool_tokens.is_none())
        .map(|&i| boots[i].0.as_str())
        .collect();
    let evidence = |r: CheckResult| {
        r.with("pools", pools.clone())
            .with("not_compared", not_compared.to_vec())
    };
    if !missing.is_empty() {
        return evidence(CheckResult::new(
            Tripwire::T4,
            Status::Unknown,
            format!("no KV pool line in: {}", missing.join(", ")),
        ));
    }
    let mut levels: Vec<u64> = group
        .iter()
        .filter_map(|&i| boots[i].1.kv_pool_tokens)
        .collect();
    levels.sort_unstable();
    levels.dedup();
    let labels = labels_of(boots, group);
    match levels.as_slice() {
        [only] => evidence(CheckResult::new(
            Tripwire::T4,
            Status::Pass,
            format!(
                "same flags, same pool ({} tokens): {labels}",
                fmt::thousands(*only as i64)
            ),
        )),
        _ => {
            let lo = levels[0];
            let hi = levels[levels.len() - 1];
            let apart = (hi - lo) as f64 / lo as f64;
            evidence(CheckResult::new(
                Tripwire::T4,
                Status::Warn,
                format!(
                    "same flags, {} different pools: {} to {} tokens ({} apart) across {labels}; compare results only within one pool",
                    levels.len(),
                    fmt::thousands(lo as i64),
                    fmt::thousands(hi as i64),
                    fmt::percent(apart, 2)
                ),
            ))
            .with("levels", levels)
        }
    }
}

/// The lowest and highest of the known values, when they differ.
fn spread(values: impl Iterator<Item = Option<f64>>) -> Option<(f64, f64)> {
    let known: Vec<f64> = values.flatten().collect();
    let lo = known.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = known.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (known.len() >= 2 && lo < hi).then_some((lo, hi))
}

/// T11 for one group of same-flag boots.
fn kv_memory_check(
    boots: &[(String, &BootFacts)],
    group: &[usize],
    not_compared: &[Value],
) -> CheckResult {
    let members: Vec<&BootFacts> = group.iter().map(|&i| boots[i].1).collect();
    let base = |r: CheckResult| {
        r.with(
            "available_kv_cache_gib",
            per_label(boots, group, |f| f.available_kv_cache_gib),
        )
        .with(
            "cudagraph_actual_gib",
            per_label(boots, group, |f| f.cudagraph_actual_gib),
        )
        .with("not_compared", not_compared.to_vec())
    };
    if members.iter().any(|f| f.available_kv_cache_gib.is_none()) {
        return base(CheckResult::new(
            Tripwire::T11,
            Status::Unknown,
            "a boot log lacks 'Available KV cache memory'",
        ));
    }
    let Some((lo, hi)) = spread(members.iter().map(|f| f.available_kv_cache_gib)) else {
        let value = members[0].available_kv_cache_gib.unwrap_or_default();
        return base(CheckResult::new(
            Tripwire::T11,
            Status::Pass,
            format!(
                "same flags, {} GiB for KV cache on every boot",
                fmt::py_float(value)
            ),
        ));
    };
    let mut parts = Vec::new();
    if let Some((a, b)) = spread(members.iter().map(|f| f.consumed_gib)) {
        parts.push(format!(
            "weights and non-torch memory {} to {} GiB",
            fmt::py_float(a),
            fmt::py_float(b)
        ));
    }
    if let Some((a, b)) = spread(members.iter().map(|f| f.peak_activation_gib)) {
        parts.push(format!(
            "peak activation {} to {} GiB",
            fmt::py_float(a),
            fmt::py_float(b)
        ));
    }
    let fresh = members
        .iter()
        .filter(|f| f.compiled_fresh == Some(true))
        .count();
    let cached = members
        .iter()
        .filter(|f| f.compiled_fresh == Some(false))
        .count();
    if fresh > 0 && cached > 0 {
        parts.push(format!(
            "{fresh} of {} starts compiled the model from scratch",
            members.len()
        ));
    }
    let mut message = format!(
        "same flags, KV cache memory varied: {} to {} GiB",
        fmt::py_float(lo),
        fmt::py_float(hi)
    );
    if !parts.is_empty() {
        message.push_str(&format!(" ({})", parts.join("; ")));
    }
    base(CheckResult::new(Tripwire::T11, Status::Warn, message))
        .with("consumed_gib", per_label(boots, group, |f| f.consumed_gib))
        .with(
            "peak_activation_gib",
            per_label(boots, group, |f| f.peak_activation_gib),
        )
        .with(
            "compiled_fresh",
            per_label(boots, group, |f| f.compiled_fresh),
        )
}

/// Labels for several boot logs: the shortest path suffix (in whole components) that
/// tells them apart, the same length for all, e.g. `run1/boot.log` and `run2/boot.log`,
/// or bare file names when those already differ.
pub fn labels_for(paths: &[&str]) -> Vec<String> {
    let parts: Vec<Vec<&str>> = paths
        .iter()
        .map(|p| {
            p.split(['/', '\\'])
                .filter(|c| !c.is_empty() && *c != ".")
                .collect()
        })
        .collect();
    let suffix = |components: &[&str], n: usize| -> String {
        components[components.len().saturating_sub(n)..].join("/")
    };
    let longest = parts.iter().map(Vec::len).max().unwrap_or(0).max(1);
    for n in 1..=longest {
        let labels: Vec<String> = parts.iter().map(|c| suffix(c, n)).collect();
        let all_distinct = labels
            .iter()
            .enumerate()
            .all(|(i, l)| !labels[..i].contains(l));
        if all_distinct {
            return labels;
        }
    }
    // The same file named twice: nothing tells them apart, so show each path as given.
    paths.iter().map(|p| (*p).to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_use_the_shortest_distinct_suffix() {
        assert_eq!(
            labels_for(&["a/run1/boot.log", "a/run2/boot.log"]),
            ["run1/boot.log", "run2/boot.log"]
        );
        assert_eq!(
            labels_for(&["x/boot_hi.log", "x/boot_lo.log"]),
            ["boot_hi.log", "boot_lo.log"]
        );
        assert_eq!(
            labels_for(&["same.log", "same.log"]),
            ["same.log", "same.log"]
        );
        assert_eq!(
            labels_for(&["C:\\runs\\a\\boot.log", "b/boot.log"]),
            ["a/boot.log", "b/boot.log"]
        );
    }
}
