//! SGLang's boot-log lines (0.5). SGLang does not print its version; the recorder takes it
//! from the server.

use inferlint_core::model::{PyValue, Settings};

use super::lines::Line;
use super::scan::{after, f64_with_unit, tidy_sum, u64_after, word_after};
use super::{pyliteral, LineAt, Parse, Rule, Unreadable};

pub(super) static RULES: &[Rule] = &[
    // `server_args={'model_path': '/m', 'page_size': 1, ...}` (about 500 settings)
    Rule {
        field: "server_args",
        anchor: "server_args=",
        read: server_args,
    },
    // `Attention backend not specified. Use flashinfer backend by default.`
    Rule {
        field: "selected_backends",
        anchor: "Attention backend not specified. Use ",
        read: default_backend,
    },
    // `KV Cache is allocated. dtype: torch.bfloat16, #tokens: 17675, K size: 0.54 GB, V size: 0.54 GB`
    Rule {
        field: "kv_pool_tokens",
        anchor: "KV Cache is allocated.",
        read: kv_allocated,
    },
    // `Load weight begin. avail mem=22.37 GB`: the memory free before the weights, the
    // memory `--mem-fraction-static` is a share of
    Rule {
        field: "device_free_gib",
        anchor: "Load weight begin.",
        read: free_at_start,
    },
    // `Load weight end. elapsed=71.25 s, type=..., avail mem=4.72 GB, mem usage=17.65 GB.`
    Rule {
        field: "model_load_gib",
        anchor: "Load weight end.",
        read: weights_loaded,
    },
    // `Capture target prefill CUDA graph end. elapsed=214.09 s, mem usage=1.73 GB, ...` (summed)
    Rule {
        field: "cudagraph_actual_gib",
        anchor: "CUDA graph end.",
        read: cuda_graph_end,
    },
    // `Memory pool end. avail mem=2.57 GB`: what the card has left once the pools are made
    Rule {
        field: "memory_left_gib",
        anchor: "Memory pool end.",
        read: memory_left,
    },
    // `max_running_requests is capped to 1 by the mamba state cache (max_mamba_cache_size=5, ...`
    Rule {
        field: "running_cap",
        anchor: "max_running_requests is capped to ",
        read: running_capped,
    },
    // `KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_token_ratio: ...`
    // (a WARNING for each retraction; summed)
    Rule {
        field: "retractions_in_log",
        anchor: "Retract requests.",
        read: retracted,
    },
    // `max_total_num_tokens=17675, chunked_prefill_size=4096, ..., max_running_requests=1, ...`
    Rule {
        field: "kv_pool_tokens",
        anchor: "max_total_num_tokens=",
        read: totals,
    },
];

fn retracted(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let n = u64_after(at.body, "#retracted_reqs: ").ok_or(Unreadable)?;
    *p.facts.retractions_in_log.get_or_insert(0) += n;
    Ok(())
}

/// Settings that change between identical starts are still kept here; T4 drops them.
fn server_args(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let dict = after(at.body, "server_args=").ok_or(Unreadable)?;
    let entries = pyliteral::parse_dict(dict).map_err(|_| Unreadable)?;
    let settings: Settings = entries.into_iter().collect();
    p.set("server_args", |f| &mut f.server_args, settings);
    Ok(())
}

fn default_backend(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let name = word_after(at.body, "Attention backend not specified. Use ").ok_or(Unreadable)?;
    let rest = after(at.body, name).unwrap_or("");
    if !rest.starts_with(" backend by default") {
        return Err(Unreadable);
    }
    p.facts.selected_backends.push(name.to_owned());
    p.default_backend = Some(name.to_owned());
    Ok(())
}

fn kv_allocated(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let tokens = u64_after(at.body, "#tokens: ").ok_or(Unreadable)?;
    let k = f64_with_unit(at.body, "K size: ", " GB").ok_or(Unreadable)?;
    let v = f64_with_unit(at.body, "V size: ", " GB").ok_or(Unreadable)?;
    p.set("kv_pool_tokens", |f| &mut f.kv_pool_tokens, tokens);
    let gib = ((k + v) * 100.0).round() / 100.0;
    p.set(
        "available_kv_cache_gib",
        |f| &mut f.available_kv_cache_gib,
        gib,
    );
    Ok(())
}

fn weights_loaded(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let seconds = f64_with_unit(at.body, "elapsed=", " s").ok_or(Unreadable)?;
    let gib = f64_with_unit(at.body, "mem usage=", " GB").ok_or(Unreadable)?;
    p.set("model_load_gib", |f| &mut f.model_load_gib, gib);
    p.set("model_load_s", |f| &mut f.model_load_s, seconds);
    Ok(())
}

/// The card's free memory before the weights load. SGLang's "GB" are GiB: it divides
/// bytes by 2^30 (on a 24 GiB card it logs 22.37 free where vLLM logs 22.45/23.99 GiB).
fn free_at_start(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let gib = f64_with_unit(at.body, "avail mem=", " GB").ok_or(Unreadable)?;
    p.set("device_free_gib", |f| &mut f.device_free_gib, gib);
    Ok(())
}

/// The card's free memory after a start-up step: the last one before the ready line is
/// what the engine left free (the CUDA graphs are captured after the memory pool).
fn memory_left(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let gib = f64_with_unit(at.body, "avail mem=", " GB").ok_or(Unreadable)?;
    p.facts.memory_left_gib = Some(gib);
    Ok(())
}

fn cuda_graph_end(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let gib = f64_with_unit(at.body, "mem usage=", " GB").ok_or(Unreadable)?;
    if let Some(left) = f64_with_unit(at.body, "avail mem=", " GB") {
        p.facts.memory_left_gib = Some(left);
    }
    let total = p.facts.cudagraph_actual_gib.unwrap_or(0.0) + gib;
    p.facts.cudagraph_actual_gib = Some(tidy_sum(total));
    Ok(())
}

fn running_capped(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let cap = u64_after(at.body, "max_running_requests is capped to ").ok_or(Unreadable)?;
    let reason = after(at.body, " by the ")
        .and_then(|rest| rest.split(" (").next())
        .map(|r| r.trim_end_matches('.').trim())
        .filter(|r| !r.is_empty())
        .ok_or(Unreadable)?;
    p.set("running_cap", |f| &mut f.running_cap, cap);
    // `To raise it: increase --mamba-full-memory-ratio or --max-mamba-cache-size, or
    // halve the state size with --mamba-ssm-dtype bfloat16.`: SGLang's own remedy.
    if let Some(remedy) = after(at.body, "To raise it: ")
        .map(|r| r.trim().trim_end_matches('.'))
        .filter(|r| !r.is_empty())
    {
        p.set("engine_remedy", |f| &mut f.engine_remedy, remedy.to_owned());
    }
    p.set(
        "running_cap_reason",
        |f| &mut f.running_cap_reason,
        reason.to_owned(),
    );
    Ok(())
}

fn totals(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let tokens = u64_after(at.body, "max_total_num_tokens=").ok_or(Unreadable)?;
    let running = match after(at.body, "max_running_requests=") {
        Some(_) => Some(u64_after(at.body, "max_running_requests=").ok_or(Unreadable)?),
        None => None,
    };
    p.set("kv_pool_tokens", |f| &mut f.kv_pool_tokens, tokens);
    if let Some(n) = running {
        p.set("running_cap", |f| &mut f.running_cap, n);
    }
    Ok(())
}

fn setting_u64(args: &Settings, key: &str) -> Option<u64> {
    args.get(key)
        .and_then(PyValue::as_i64)
        .and_then(|n| u64::try_from(n).ok())
}

/// Facts that follow from `server_args` once every line was read.
/// Counts the answered requests: whether the log covers a run is judged by them (a log
/// that holds the run's answers also holds its `Retract requests.` lines).
pub(super) fn on_line(p: &mut Parse, line: &Line<'_>, _lineno: usize) {
    if super::classify::is_served_request(line.clean.as_ref()) {
        p.served += 1;
    }
}

pub(super) fn finish(p: &mut Parse) {
    p.facts.served_in_log = Some(p.served);
    let facts = &mut p.facts;
    let Some(args) = &facts.server_args else {
        return;
    };
    facts.page_size = setting_u64(args, "page_size");
    facts.requested_running = setting_u64(args, "max_running_requests");
    facts.model = args
        .get("model_path")
        .and_then(|v| v.as_str().map(str::to_owned));
    facts.speculative = Some(
        args.get(inferlint_core::engine::SGLANG.speculation.setting)
            .is_some_and(|v| !v.is_none()),
    );
    facts.cudagraphs = args.get("disable_cuda_graph").map(|v| !v.is_truthy());
    // SGLang fills `attention_backend` with its own default; only a backend it did not
    // announce as its default was asked for.
    if p.default_backend.is_none() {
        facts.requested_backend = args
            .get("attention_backend")
            .filter(|v| !v.is_none())
            .and_then(|v| v.as_str().map(str::to_owned));
    }
}
