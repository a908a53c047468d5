//! vLLM's boot-log lines (0.28 to 0.33, GPU and CPU builds).

use inferlint_core::model::{PyValue, Settings};

use super::scan::{after, f64_with_unit, leading_number, to_f64, to_u64};
use super::{pyliteral, LineAt, Parse, Rule, Unreadable};

pub(super) static RULES: &[Rule] = &[
    // `Initializing a V1 LLM engine (v0.28.0) with config: ...`
    Rule {
        field: "version",
        anchor: "Initializing a V1 LLM engine (v",
        read: version,
    },
    // `non-default args: {'model': '/m', 'max_num_seqs': 32, ...}`
    Rule {
        field: "non_default_args",
        anchor: "non-default args: ",
        read: non_default_args,
    },
    // `Using FLASH_ATTN attention backend out of potential backends: ['FLASH_ATTN', ...].`
    Rule {
        field: "selected_backends",
        anchor: " attention backend out of potential backends",
        read: backend_choice,
    },
    // `Using AttentionBackendEnum.TRITON_ATTN backend.` (the form when one was asked for)
    Rule {
        field: "selected_backends",
        anchor: "Using AttentionBackendEnum.",
        read: backend_forced,
    },
    Rule {
        field: "drafter_backends",
        anchor: "Loading drafter model",
        read: drafter_starts,
    },
    // `Setting attention block size to 784 tokens to ensure ...`
    Rule {
        field: "attention_block_size",
        anchor: "Setting attention block size to ",
        read: block_size,
    },
    // `Padding mamba page size by 0.13% to ensure ...`
    Rule {
        field: "mamba_page_padding_pct",
        anchor: "Padding mamba page size by ",
        read: mamba_padding,
    },
    // `GPU KV cache size: 31,554 tokens, Maximum concurrency for 16,384 tokens per request: 1.93x`
    // The first word is the device (`"%s KV cache size: %s tokens, "` in
    // kv_cache_utils.py): `CPU` on the CPU build, `XPU` on Intel's.
    Rule {
        field: "kv_pool_tokens",
        anchor: " KV cache size: ",
        read: kv_pool,
    },
    // Releases before the line above was one (0.16, as older GPU builds) print the
    // concurrency on a line of its own, next after it:
    // `Maximum concurrency for 512 tokens per request: 2048.00x`.
    Rule {
        field: "max_concurrency",
        anchor: "Maximum concurrency for ",
        read: max_concurrency_alone,
    },
    // The CPU build's worker, in place of a GPU's profiled `Available KV cache memory`:
    // `Explicitly set (1.0/23.54) GiB for KV cache on node 0.` (VLLM_CPU_KVCACHE_SPACE or
    // --kv-cache-memory-bytes) or `Auto set (3.1/23.54) GiB for KV cache on node 0, ...`.
    Rule {
        field: "available_kv_cache_gib",
        anchor: " GiB for KV cache on node ",
        read: cpu_kv_space,
    },
    // `Available KV cache memory: 2.51 GiB`
    Rule {
        field: "available_kv_cache_gib",
        anchor: "Available KV cache memory: ",
        read: available_kv,
    },
    // `Model loading took 17.71 GiB memory and 75.250819 seconds`
    Rule {
        field: "model_load_gib",
        anchor: "Model loading took ",
        read: model_load,
    },
    // `Estimated CUDA graph memory: 0.20 GiB total`
    Rule {
        field: "cudagraph_estimated_gib",
        anchor: "Estimated CUDA graph memory: ",
        read: cudagraph_estimated,
    },
    // `CUDA graph pool memory: 0.18 GiB (actual), 0.2 GiB (estimated), ...`
    Rule {
        field: "cudagraph_actual_gib",
        anchor: "CUDA graph pool memory: ",
        read: cudagraph_actual,
    },
    // `Actual usage is 17.95 GiB for consumed memory (weights + non-torch), 1.86 GiB for peak activation, ...`
    Rule {
        field: "consumed_gib",
        anchor: "Actual usage is ",
        read: actual_usage,
    },
    // `torch.compile took 4.46 s in total` (once per compiled model; summed)
    Rule {
        field: "compile_s",
        anchor: "torch.compile took ",
        read: compile_time,
    },
    // `CUDAGraphMode.FULL_AND_PIECEWISE is not supported with spec-decode ...; setting cudagraph_mode=PIECEWISE`
    Rule {
        field: "cudagraph_mode_downgrade",
        anchor: " is not supported with spec-decode",
        read: cudagraph_downgrade,
    },
    Rule {
        field: "cudagraphs",
        anchor: "Cudagraph is disabled under eager mode",
        read: eager,
    },
    Rule {
        field: "compiled_fresh",
        anchor: "Compiling a graph for compile range",
        read: compiled_fresh,
    },
    Rule {
        field: "compiled_fresh",
        anchor: "Directly load AOT compilation",
        read: compiled_from_cache,
    },
];

fn version(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let rest = after(at.body, "Initializing a V1 LLM engine (v").ok_or(Unreadable)?;
    let end = rest.find(')').ok_or(Unreadable)?;
    let version = &rest[..end];
    let looks_like_version =
        version.starts_with(|c: char| c.is_ascii_digit()) && !version.contains(char::is_whitespace);
    if !looks_like_version {
        return Err(Unreadable);
    }
    p.set("version", |f| &mut f.version, version.to_owned());
    Ok(())
}

fn non_default_args(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let dict = after(at.body, "non-default args: ").ok_or(Unreadable)?;
    let entries = pyliteral::parse_dict(dict).map_err(|_| Unreadable)?;
    let settings: Settings = entries.into_iter().collect();
    p.set("non_default_args", |f| &mut f.non_default_args, settings);
    Ok(())
}

/// Records a backend choice for the main model, or for the draft model once the drafter
/// started loading.
fn record_backend(p: &mut Parse, name: &str) {
    if p.in_drafter {
        p.facts.drafter_backends.push(name.to_owned());
    } else {
        p.facts.selected_backends.push(name.to_owned());
    }
}

fn is_backend_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn backend_choice(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let before = at
        .body
        .split(" attention backend out of potential backends")
        .next()
        .ok_or(Unreadable)?;
    let name = after(before, "Using ").ok_or(Unreadable)?;
    if !is_backend_name(name) {
        return Err(Unreadable);
    }
    let list = after(at.body, "potential backends: ").ok_or(Unreadable)?;
    let list = list.trim_end().trim_end_matches('.');
    let candidates = match pyliteral::parse_value(list) {
        Ok(PyValue::List(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or(Unreadable))
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err(Unreadable),
    };
    record_backend(p, name);
    if !p.in_drafter {
        p.facts.candidate_backends = candidates;
    }
    Ok(())
}

fn backend_forced(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    // Only the line that ends here is a choice; `Using AttentionBackendEnum.X for
    // MMEncoderAttention.` is a vision encoder's and not ours.
    let Some(head) = at.body.strip_suffix(" backend.") else {
        return Ok(());
    };
    let name = after(head, "Using AttentionBackendEnum.").ok_or(Unreadable)?;
    if !is_backend_name(name) {
        return Err(Unreadable);
    }
    record_backend(p, name);
    Ok(())
}

fn drafter_starts(p: &mut Parse, _at: &LineAt) -> Result<(), Unreadable> {
    p.in_drafter = true;
    Ok(())
}

fn block_size(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let rest = after(at.body, "Setting attention block size to ").ok_or(Unreadable)?;
    let number = leading_number(rest).ok_or(Unreadable)?;
    if !rest[number.len()..].starts_with(" tokens") {
        return Err(Unreadable);
    }
    let size = to_u64(number).ok_or(Unreadable)?;
    p.set(
        "attention_block_size",
        |f| &mut f.attention_block_size,
        size,
    );
    Ok(())
}

fn mamba_padding(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let pct = f64_with_unit(at.body, "Padding mamba page size by ", "%").ok_or(Unreadable)?;
    p.set(
        "mamba_page_padding_pct",
        |f| &mut f.mamba_page_padding_pct,
        pct,
    );
    Ok(())
}

/// The device words vLLM's platforms put before ` KV cache size: `.
const KV_DEVICES: &[&str] = &["GPU", "CPU", "XPU", "TPU", "HPU", "NPU"];

fn kv_pool(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let (head, rest) = at.body.split_once(" KV cache size: ").ok_or(Unreadable)?;
    // Only the engine's own line: the device word ends the text before the anchor.
    let device = head.rsplit(' ').next().unwrap_or(head);
    if !KV_DEVICES.contains(&device) {
        return Err(Unreadable);
    }
    let number = leading_number(rest).ok_or(Unreadable)?;
    if !rest[number.len()..].starts_with(" tokens") {
        return Err(Unreadable);
    }
    let tokens = to_u64(number).ok_or(Unreadable)?;
    let concurrency = match after(rest, "Maximum concurrency for ") {
        None => None,
        Some(tail) => {
            let len_text = leading_number(tail).ok_or(Unreadable)?;
            let request_len = to_u64(len_text).ok_or(Unreadable)?;
            let times = f64_with_unit(tail, "tokens per request: ", "x").ok_or(Unreadable)?;
            Some((request_len, times))
        }
    };
    p.set("kv_pool_tokens", |f| &mut f.kv_pool_tokens, tokens);
    if let Some((request_len, times)) = concurrency {
        p.set(
            "max_concurrency_request_len",
            |f| &mut f.max_concurrency_request_len,
            request_len,
        );
        p.set("max_concurrency", |f| &mut f.max_concurrency, times);
    }
    Ok(())
}

/// The concurrency line alone; the one-line form is [`kv_pool`]'s, which reads it.
fn max_concurrency_alone(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    if at.body.contains(" KV cache size: ") {
        return Ok(());
    }
    let tail = at
        .body
        .trim_start()
        .strip_prefix("Maximum concurrency for ")
        .ok_or(Unreadable)?;
    let request_len = to_u64(leading_number(tail).ok_or(Unreadable)?).ok_or(Unreadable)?;
    let times = f64_with_unit(tail, "tokens per request: ", "x").ok_or(Unreadable)?;
    p.set(
        "max_concurrency_request_len",
        |f| &mut f.max_concurrency_request_len,
        request_len,
    );
    p.set("max_concurrency", |f| &mut f.max_concurrency, times);
    Ok(())
}

fn available_kv(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let gib = f64_with_unit(at.body, "Available KV cache memory: ", " GiB").ok_or(Unreadable)?;
    p.set(
        "available_kv_cache_gib",
        |f| &mut f.available_kv_cache_gib,
        gib,
    );
    Ok(())
}

fn cpu_kv_space(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let head = at
        .body
        .split(" GiB for KV cache on node ")
        .next()
        .ok_or(Unreadable)?;
    let open = head
        .strip_suffix(')')
        .and_then(|h| h.rfind(" set (").map(|i| &h[i + " set (".len()..]))
        .ok_or(Unreadable)?;
    let (given, total) = open.split_once('/').ok_or(Unreadable)?;
    let given = to_f64(given).ok_or(Unreadable)?;
    let total = to_f64(total).ok_or(Unreadable)?;
    if given > total {
        return Err(Unreadable);
    }
    p.set(
        "available_kv_cache_gib",
        |f| &mut f.available_kv_cache_gib,
        given,
    );
    Ok(())
}

fn model_load(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let gib = f64_with_unit(at.body, "Model loading took ", " GiB").ok_or(Unreadable)?;
    let seconds = f64_with_unit(at.body, " memory and ", " seconds").ok_or(Unreadable)?;
    p.set("model_load_gib", |f| &mut f.model_load_gib, gib);
    p.set("model_load_s", |f| &mut f.model_load_s, seconds);
    Ok(())
}

fn cudagraph_estimated(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let gib = f64_with_unit(at.body, "Estimated CUDA graph memory: ", " GiB").ok_or(Unreadable)?;
    p.set(
        "cudagraph_estimated_gib",
        |f| &mut f.cudagraph_estimated_gib,
        gib,
    );
    Ok(())
}

fn cudagraph_actual(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let gib =
        f64_with_unit(at.body, "CUDA graph pool memory: ", " GiB (actual)").ok_or(Unreadable)?;
    p.saw_cudagraph_pool = true;
    p.set("cudagraph_actual_gib", |f| &mut f.cudagraph_actual_gib, gib);
    Ok(())
}

fn actual_usage(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let consumed =
        f64_with_unit(at.body, "Actual usage is ", " GiB for consumed memory").ok_or(Unreadable)?;
    let peak_text =
        after(at.body, "for consumed memory (weights + non-torch), ").ok_or(Unreadable)?;
    let peak_number = leading_number(peak_text).ok_or(Unreadable)?;
    if !peak_text[peak_number.len()..].starts_with(" GiB for peak activation") {
        return Err(Unreadable);
    }
    let peak = to_f64(peak_number).ok_or(Unreadable)?;
    p.set("consumed_gib", |f| &mut f.consumed_gib, consumed);
    p.set("peak_activation_gib", |f| &mut f.peak_activation_gib, peak);
    // The same line, from vLLM 0.2x on, opens with the card's memory at start-up and
    // ends with the KV cache size that would use all of it:
    // `Free memory on device (22.45/23.99 GiB) on startup. ... Replace ... or
    // `--kv-cache-memory=2045183488` (1.9 GiB) to fully utilize gpu memory.`
    // Both are optional: older releases print the usage alone.
    if let Some(rest) = after(at.body, "Free memory on device (") {
        let free = leading_number(rest).and_then(to_f64);
        let total = rest
            .split_once('/')
            .and_then(|(_, t)| leading_number(t))
            .and_then(to_f64);
        if let (Some(free), Some(total)) = (free, total) {
            if free <= total {
                p.set("device_free_gib", |f| &mut f.device_free_gib, free);
                p.set("device_total_gib", |f| &mut f.device_total_gib, total);
            }
        }
    }
    if let Some(end) = at.body.find(" to fully utilize gpu memory") {
        let before = &at.body[..end];
        if let Some(open) = before.rfind("`--kv-cache-memory=") {
            let remedy = &at.body[open..end + " to fully utilize gpu memory".len()];
            if let Some(gib) = after(remedy, "` (")
                .and_then(leading_number)
                .and_then(to_f64)
            {
                p.set("kv_cache_full_gib", |f| &mut f.kv_cache_full_gib, gib);
                p.set("engine_remedy", |f| &mut f.engine_remedy, remedy.to_owned());
            }
        }
    }
    Ok(())
}

fn compile_time(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let seconds = f64_with_unit(at.body, "torch.compile took ", " s").ok_or(Unreadable)?;
    let total = p.facts.compile_s.unwrap_or(0.0) + seconds;
    p.facts.compile_s = Some(super::scan::tidy_sum(total));
    Ok(())
}

fn cudagraph_downgrade(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let head = at
        .body
        .split(" is not supported with spec-decode")
        .next()
        .ok_or(Unreadable)?;
    let from = head.rsplit(' ').next().ok_or(Unreadable)?;
    let from = from.rsplit('.').next().unwrap_or(from);
    let to = super::scan::word_after(at.body, "setting cudagraph_mode=").ok_or(Unreadable)?;
    let to = to.trim_end_matches('.');
    if !is_backend_name(from) || !is_backend_name(to) {
        return Err(Unreadable);
    }
    p.set(
        "cudagraph_mode_downgrade",
        |f| &mut f.cudagraph_mode_downgrade,
        (from.to_owned(), to.to_owned()),
    );
    Ok(())
}

fn eager(p: &mut Parse, _at: &LineAt) -> Result<(), Unreadable> {
    p.set("cudagraphs", |f| &mut f.cudagraphs, false);
    Ok(())
}

fn compiled_fresh(p: &mut Parse, _at: &LineAt) -> Result<(), Unreadable> {
    p.facts.compiled_fresh = Some(true);
    Ok(())
}

fn compiled_from_cache(p: &mut Parse, _at: &LineAt) -> Result<(), Unreadable> {
    p.facts.compiled_fresh.get_or_insert(false);
    Ok(())
}

/// Facts that follow from the settings once every line was read.
pub(super) fn finish(p: &mut Parse) {
    let facts = &mut p.facts;
    if let Some(args) = &facts.non_default_args {
        facts.requested_backend = args
            .get("attention_backend")
            .filter(|v| !v.is_none())
            .and_then(|v| v.as_str().map(str::to_owned));
        facts.speculative = Some(
            args.get(inferlint_core::engine::VLLM.speculation.setting)
                .is_some_and(|v| !v.is_none()),
        );
        if args.get("enforce_eager").is_some_and(PyValue::is_truthy) {
            facts.cudagraphs = Some(false);
        }
        facts.model = args
            .get("model")
            .or_else(|| args.get("model_tag"))
            .and_then(|v| v.as_str().map(str::to_owned));
        let max_num_seqs = args
            .get("max_num_seqs")
            .and_then(PyValue::as_i64)
            .and_then(|n| u64::try_from(n).ok());
        if let Some(n) = max_num_seqs {
            facts.running_cap = Some(n);
            facts.requested_running = Some(n);
        }
    }
    if facts.cudagraphs.is_none() && p.saw_cudagraph_pool {
        facts.cudagraphs = Some(true);
    }
}
