//! The server as it was set up, as a scheduler model: its pool, block size and running
//! limit read from the boot log and the readings, each with where it was read; and a
//! change applied to it.

use inferlint_sched::model::{CapacityPolicy, EngineModel, SglangConfig, TrtllmConfig, VllmConfig};
use serde::Serialize;

use super::change::{Change, Knob};
use crate::engine::SchedulerKind;
use crate::model::facts::{self, BlockFrom};
use crate::model::{BootFacts, PyValue};
use crate::run::model::Run;
use crate::story::fmt;

/// vLLM's running limit when no `--max-num-seqs` is given: 256, or 1024 on cards of 70
/// GiB and more (`EngineArgs` in vLLM 0.8 on). A load at or below the lower one is never
/// held by it, whichever applied.
const VLLM_DEFAULT_MAX_NUM_SEQS: (u64, u64) = (256, 1024);

/// SGLang's new-token ratio as the recorded runs show it behaving (the simulator's
/// calibration): it reserves each running request's whole remaining output.
const SGLANG_NEW_TOKEN_RATIO: f64 = 1.0;

/// The server's setup as the model holds it, and what a change needs to rescale it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Setup {
    /// The scheduler model.
    #[serde(skip)]
    pub model: EngineModel,
    /// The context limit: longer requests are refused.
    pub max_model_len: Option<u64>,
    /// GiB the engine gave the KV cache, from its boot log.
    pub kv_gib: Option<f64>,
    /// GiB the card has, from the boot log.
    pub device_total_gib: Option<f64>,
    /// The memory share the cache was sized from (printed, else the engine's default).
    pub memory_fraction: Option<f64>,
    /// The cache's size outright, where `--kv-cache-memory-bytes` gave it.
    pub cache_bytes: Option<f64>,
    /// Bytes per KV element now (2 for bf16 or fp16, 1 for fp8).
    pub kv_dtype_bytes: f64,
    /// Each figure of the model with where it was read, for the reader.
    pub read: Vec<String>,
}

impl Setup {
    /// The pool in the engine's units and the running limit, in words.
    pub fn describe(model: &EngineModel) -> String {
        match model {
            EngineModel::Vllm(c) => format!(
                "{} usable blocks of {} tokens, running limit {}",
                c.num_gpu_blocks.saturating_sub(1),
                c.block_size,
                c.max_num_seqs
            ),
            EngineModel::Sglang(c) => format!(
                "a pool of {} tokens in pages of {}, running limit {}",
                c.max_total_num_tokens,
                c.page_size,
                c.running_cap()
            ),
            EngineModel::Trtllm(c) => format!(
                "{} blocks of {} tokens, running limit {}, {}",
                c.blocks,
                c.tokens_per_block,
                c.max_num_requests,
                c.policy.name()
            ),
        }
    }
}

fn setting_u64(boot: &BootFacts, key: &str) -> Option<u64> {
    match boot.setting(key)? {
        PyValue::Int(i) if *i > 0 => Some(*i as u64),
        PyValue::Float(f) if *f >= 1.0 => Some(*f as u64),
        v => v.as_str()?.trim_matches('\'').parse().ok(),
    }
}

fn setting_f64(boot: &BootFacts, key: &str) -> Option<f64> {
    match boot.setting(key)? {
        PyValue::Int(i) => Some(*i as f64),
        PyValue::Float(f) => Some(*f),
        v => v.as_str()?.trim_matches('\'').parse().ok(),
    }
}

fn setting_str(boot: &BootFacts, key: &str) -> Option<String> {
    boot.setting(key)?
        .as_str()
        .map(|s| s.trim_matches('\'').to_owned())
}

/// Bytes per element of a KV cache dtype as the engines spell it.
pub fn dtype_bytes(name: &str) -> Option<f64> {
    let n = name.to_ascii_lowercase();
    if n.starts_with("fp8") || n == "int8" {
        Some(1.0)
    } else if matches!(
        n.as_str(),
        "auto" | "bfloat16" | "bf16" | "float16" | "fp16" | "half"
    ) {
        Some(2.0)
    } else if matches!(n.as_str(), "float32" | "fp32" | "float") {
        Some(4.0)
    } else {
        None
    }
}

/// The run's setup as a model, or why it cannot be made.
pub fn read(run: &Run) -> Result<Setup, String> {
    let boot = run
        .last_boot()
        .ok_or("no boot log: the pool and running limit the model needs are in it")?;
    if facts::hybrid(boot) {
        return Err(
            "a hybrid (attention and Mamba) model: its cache holds per-request state the scheduler model does not"
                .to_owned(),
        );
    }
    if boot.speculative == Some(true) {
        return Err(
            "speculative decoding: a step makes more than one token, which the model does not"
                .to_owned(),
        );
    }
    let copies = run
        .engine
        .parallel_copies
        .iter()
        .filter_map(|k| setting_u64(boot, k))
        .max()
        .unwrap_or(1);
    if copies > 1 {
        return Err(format!(
            "{copies} data-parallel engine cores, each with its own scheduler; the model is of one"
        ));
    }
    let mut read = Vec::new();
    let kv_dtype = setting_str(boot, "kv_cache_dtype")
        .filter(|d| d != "auto")
        .or_else(|| setting_str(boot, "dtype"))
        .unwrap_or_else(|| "auto".to_owned());
    let kv_dtype_bytes = dtype_bytes(&kv_dtype).unwrap_or(2.0);
    let memory = &run.engine.tuning.memory_fraction;
    let mut setup = Setup {
        model: vllm_placeholder(),
        max_model_len: None,
        kv_gib: boot.available_kv_cache_gib,
        device_total_gib: boot.device_total_gib,
        memory_fraction: setting_f64(boot, memory.key).or(memory.default),
        cache_bytes: run
            .engine
            .tuning
            .cache_size
            .as_ref()
            .and_then(|s| setting_f64(boot, s.key)),
        kv_dtype_bytes,
        read: Vec::new(),
    };
    setup.model = match run.engine.scheduler {
        SchedulerKind::PagedRecompute => paged_recompute(run, boot, &mut read)?,
        SchedulerKind::TokenPoolRetract => token_pool(run, boot, &mut read)?,
        SchedulerKind::CapacityPolicy => capacity_policy(run, boot, &mut read)?,
    };
    setup.max_model_len = ["max_model_len", "context_length", "max_seq_len"]
        .iter()
        .find_map(|k| setting_u64(boot, k));
    if let Some(len) = setup.max_model_len {
        read.push(format!("context limit {len} (the boot log)"));
    }
    setup.read = read;
    Ok(setup)
}

fn vllm_placeholder() -> EngineModel {
    EngineModel::Vllm(VllmConfig {
        block_size: 16,
        num_gpu_blocks: 0,
        kv_groups: 1,
        state_blocks_per_request: 0,
        max_num_seqs: 1,
        max_num_queued_reqs: None,
        prefill_chunk_tokens: None,
    })
}

fn block_words(from: BlockFrom) -> &'static str {
    match from {
        BlockFrom::BootLog => "the boot log",
        BlockFrom::Readings => "the server's cache info",
        BlockFrom::EngineDefault => "the engine's default",
    }
}

fn paged_recompute(
    run: &Run,
    boot: &BootFacts,
    read: &mut Vec<String>,
) -> Result<EngineModel, String> {
    let (block, from) = facts::block_size(run).ok_or("the KV block size is not known")?;
    let info = run.engine.cache_info;
    let stated = info.and_then(|i| {
        run.info_label(i.metric, i.blocks_label)?
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|b| *b > 0)
    });
    let null = info.map_or(1, |i| i.null_blocks);
    let blocks = match (stated, boot.kv_pool_tokens) {
        (Some(b), _) => {
            read.push(format!(
                "{} usable blocks of {block} tokens (the server's cache info states {b}, {null} held back; block size from {})",
                b.saturating_sub(null),
                block_words(from)
            ));
            b
        }
        (None, Some(tokens)) if tokens >= block => {
            let b = tokens / block;
            read.push(format!(
                "{} usable blocks of {block} tokens (the boot log's {tokens}-token cache, {null} held back; block size from {})",
                b.saturating_sub(null),
                block_words(from)
            ));
            b
        }
        _ => return Err("the KV cache's size in blocks is not known: neither the server's cache info nor the boot log states it".to_owned()),
    };
    let requested = run.requested.unwrap_or(0);
    let setting = &run.engine.tuning.max_running;
    let max_num_seqs = match setting_u64(boot, setting.key) {
        Some(n) => {
            read.push(format!("running limit {n} ({}, the boot log)", setting.shown()));
            n
        }
        None if requested <= VLLM_DEFAULT_MAX_NUM_SEQS.0 => {
            read.push(format!(
                "running limit {} (vLLM's default, {} or {} by card: not below this load's {requested})",
                VLLM_DEFAULT_MAX_NUM_SEQS.0, VLLM_DEFAULT_MAX_NUM_SEQS.0, VLLM_DEFAULT_MAX_NUM_SEQS.1
            ));
            VLLM_DEFAULT_MAX_NUM_SEQS.0
        }
        None => {
            return Err(format!(
                "the running limit is vLLM's default, {} or {} by card, and this load of {requested} is above the lower one",
                VLLM_DEFAULT_MAX_NUM_SEQS.0, VLLM_DEFAULT_MAX_NUM_SEQS.1
            ))
        }
    };
    Ok(EngineModel::Vllm(VllmConfig {
        block_size: block,
        num_gpu_blocks: blocks,
        kv_groups: 1,
        state_blocks_per_request: 0,
        max_num_seqs: max_num_seqs as usize,
        max_num_queued_reqs: setting_u64(boot, "max_num_queued_reqs").map(|n| n as usize),
        prefill_chunk_tokens: None,
    }))
}

fn running_limit(run: &Run, boot: &BootFacts, read: &mut Vec<String>) -> Result<u64, String> {
    let setting = &run.engine.tuning.max_running;
    if let Some(cap) = boot.running_cap {
        read.push(format!("running limit {cap} (the boot log)"));
        return Ok(cap);
    }
    if let Some(n) = setting_u64(boot, setting.key) {
        read.push(format!(
            "running limit {n} ({}, the boot log)",
            setting.shown()
        ));
        return Ok(n);
    }
    match setting.default {
        Some(d) => {
            read.push(format!(
                "running limit {} ({}'s default)",
                fmt::g(d),
                setting.shown()
            ));
            Ok(d as u64)
        }
        None => Err(format!(
            "the running limit ({}) is not in the boot log",
            setting.shown()
        )),
    }
}

fn token_pool(run: &Run, boot: &BootFacts, read: &mut Vec<String>) -> Result<EngineModel, String> {
    let pool = boot
        .kv_pool_tokens
        .filter(|p| *p > 0)
        .ok_or("the boot log states no token pool (max_total_num_tokens)")?;
    let page = boot.page_size.unwrap_or(1).max(1);
    read.push(format!(
        "a pool of {pool} tokens in pages of {page} (the boot log)"
    ));
    let cap = running_limit(run, boot, read)?;
    Ok(EngineModel::Sglang(SglangConfig {
        max_total_num_tokens: pool,
        page_size: page,
        max_running_requests: cap as usize,
        mamba_slots: None,
        new_token_ratio: SGLANG_NEW_TOKEN_RATIO,
    }))
}

fn capacity_policy(
    run: &Run,
    boot: &BootFacts,
    read: &mut Vec<String>,
) -> Result<EngineModel, String> {
    let pool = boot
        .kv_pool_tokens
        .filter(|p| *p > 0)
        .ok_or("the boot log states no KV pool in tokens")?;
    let (block, from) = facts::block_size(run).ok_or("the KV block size is not known")?;
    let blocks = pool / block;
    read.push(format!(
        "{blocks} blocks of {block} tokens (the boot log's {pool} tokens; block size from {})",
        block_words(from)
    ));
    let cap = running_limit(run, boot, read)?;
    let policy = match setting_str(boot, "capacity_scheduler_policy").as_deref() {
        Some(p) if p.contains("MAX_UTILIZATION") => CapacityPolicy::MaxUtilization,
        Some(p) if p.contains("GUARANTEED_NO_EVICT") => CapacityPolicy::GuaranteedNoEvict,
        Some(p) => {
            return Err(format!(
                "the capacity policy {p} is not one the model knows"
            ))
        }
        None => CapacityPolicy::GuaranteedNoEvict,
    };
    read.push(format!("{} (the capacity policy)", policy.name()));
    Ok(EngineModel::Trtllm(TrtllmConfig {
        tokens_per_block: block,
        blocks,
        max_num_requests: cap as usize,
        policy,
    }))
}

/// The setup with one engine change applied, and the change in words (`usable blocks
/// 5 -> 11`). Load changes are not the setup's: `Ok(None)`.
pub fn apply(setup: &Setup, change: &Change) -> Result<Option<(Setup, String)>, String> {
    let mut next = setup.clone();
    let words = match (&mut next.model, change.knob) {
        (_, Knob::Concurrency | Knob::Rate) => return Ok(None),
        (m, Knob::MaxRunning) => {
            let n = change.count()? as usize;
            let was = m.running_cap();
            match m {
                EngineModel::Vllm(c) => c.max_num_seqs = n,
                EngineModel::Sglang(c) => c.max_running_requests = n,
                EngineModel::Trtllm(c) => c.max_num_requests = n,
            }
            format!("running limit {was} -> {n}")
        }
        (_, Knob::MaxModelLen) => {
            let n = change.count()?;
            next.max_model_len = Some(n);
            format!(
                "context limit {} -> {n}",
                setup
                    .max_model_len
                    .map_or("unknown".to_owned(), |l| l.to_string())
            )
        }
        (EngineModel::Vllm(c), Knob::Blocks) => {
            let n = change.count()?;
            let was = c.num_gpu_blocks;
            c.num_gpu_blocks = n;
            format!("blocks {was} -> {n}")
        }
        (EngineModel::Vllm(c), Knob::CacheBytes) => {
            let bytes = change.count()? as f64;
            let now = setup
                .cache_bytes
                .or(setup.kv_gib.map(|g| g * GIB))
                .filter(|b| *b > 0.0)
                .ok_or("the cache's size in bytes now is not in the boot log")?;
            let per_block = now / c.num_gpu_blocks as f64;
            let was = c.num_gpu_blocks;
            c.num_gpu_blocks = (bytes / per_block).floor() as u64;
            next.cache_bytes = Some(bytes);
            format!(
                "blocks {was} -> {} ({} bytes a block)",
                c.num_gpu_blocks,
                fmt::g(per_block)
            )
        }
        (m, Knob::MemoryFraction) => {
            if setup.cache_bytes.is_some() && matches!(m, EngineModel::Vllm(_)) {
                return Err("vLLM ignores --gpu-memory-utilization when --kv-cache-memory-bytes sizes the cache, as this run's boot log shows it did".to_owned());
            }
            let share = change.number()?;
            if share > 1.0 {
                return Err(format!("{} is a share of memory, at most 1", change.name));
            }
            let was = setup
                .memory_fraction
                .ok_or("the memory share now is not known")?;
            let kv = setup
                .kv_gib
                .filter(|k| *k > 0.0)
                .ok_or("the boot log gives no KV cache size in GiB")?;
            let new_kv = match m {
                // The share of the memory that is free after the weights: the cache
                // scales with it.
                EngineModel::Trtllm(_) => kv * share / was,
                // A share of the whole card: the cache gains what the share gains.
                _ => {
                    let total = setup
                        .device_total_gib
                        .ok_or("the boot log gives no device total to size the share against")?;
                    kv + (share - was) * total
                }
            };
            if new_kv <= 0.0 {
                return Err(format!(
                    "{} {share} leaves no memory for the KV cache on this card",
                    change.name
                ));
            }
            scale_pool(m, new_kv / kv);
            next.kv_gib = Some(new_kv);
            next.memory_fraction = Some(share);
            format!(
                "KV cache {kv:.2} -> {new_kv:.2} GiB ({} {} -> {share}): {}",
                change.name,
                fmt::g(was),
                Setup::describe(m)
            )
        }
        (m, Knob::BlockSize) => {
            let n = change.count()?;
            if n == 0 {
                return Err(format!("{} must be above 0", change.name));
            }
            let was = match m {
                EngineModel::Vllm(c) => c.block_size,
                EngineModel::Sglang(c) => c.page_size,
                EngineModel::Trtllm(c) => c.tokens_per_block,
            };
            match m {
                EngineModel::Vllm(c) => {
                    c.num_gpu_blocks = c.num_gpu_blocks * was / n;
                    c.block_size = n;
                }
                EngineModel::Sglang(c) => c.page_size = n,
                EngineModel::Trtllm(c) => {
                    c.blocks = c.blocks * was / n;
                    c.tokens_per_block = n;
                }
            }
            format!(
                "block size {was} -> {n} tokens, the same memory: {}",
                Setup::describe(m)
            )
        }
        (m @ EngineModel::Vllm(_), Knob::KvDtype) => {
            let bytes = dtype_bytes(&change.value).ok_or_else(|| {
                format!(
                    "{} {:?} is not a KV dtype the replay knows (auto, bfloat16, float16, fp8)",
                    change.name, change.value
                )
            })?;
            scale_pool(m, setup.kv_dtype_bytes / bytes);
            next.kv_dtype_bytes = bytes;
            format!(
                "{} {} bytes -> {} a value: {}",
                change.name,
                fmt::g(setup.kv_dtype_bytes),
                fmt::g(bytes),
                Setup::describe(m)
            )
        }
        (EngineModel::Sglang(c), Knob::PoolTokens) => {
            let n = change.count()?;
            let was = c.max_total_num_tokens;
            c.max_total_num_tokens = n;
            format!("pool {was} -> {n} tokens")
        }
        (EngineModel::Trtllm(c), Knob::Policy) => {
            let v = change.value.to_ascii_uppercase();
            let was = c.policy;
            c.policy = if v.contains("MAX_UTILIZATION") {
                CapacityPolicy::MaxUtilization
            } else if v.contains("GUARANTEED_NO_EVICT") {
                CapacityPolicy::GuaranteedNoEvict
            } else {
                return Err(format!(
                    "{} is GUARANTEED_NO_EVICT or MAX_UTILIZATION, not {:?}",
                    change.name, change.value
                ));
            };
            format!("{} -> {}", was.name(), c.policy.name())
        }
        (_, knob) => {
            return Err(format!(
                "{} ({knob:?}) does not apply to this engine",
                change.name
            ))
        }
    };
    Ok(Some((next, words)))
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The pool scaled by `factor` (more memory, smaller values), in whole units.
fn scale_pool(model: &mut EngineModel, factor: f64) {
    match model {
        EngineModel::Vllm(c) => {
            c.num_gpu_blocks = (c.num_gpu_blocks as f64 * factor).floor() as u64
        }
        EngineModel::Sglang(c) => {
            c.max_total_num_tokens = (c.max_total_num_tokens as f64 * factor).floor() as u64
        }
        EngineModel::Trtllm(c) => c.blocks = (c.blocks as f64 * factor).floor() as u64,
    }
}
