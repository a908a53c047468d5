//! What the run's own files say of the server's setup, read once for every part that
//! needs it (the advice, the account, the profile, the replay): the KV block size and
//! where it was read, whether the model is a hybrid, and whether the numbers describe one
//! setup at all.

use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::BootFacts;
use crate::run::model::Run;

/// A model whose attention block is larger than this pads its KV pages to a Mamba (or
/// linear-attention) state, so tokens-per-request arithmetic says nothing about it.
pub const HYBRID_BLOCK_ABOVE: u64 = 64;

/// Where a run's KV block size was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockFrom {
    /// The boot log printed it (a page size, or the attention block size).
    BootLog,
    /// The readings' info metric states it (vLLM's `vllm:cache_config_info`
    /// `block_size`).
    Readings,
    /// Neither did: the engine's documented default.
    EngineDefault,
}

/// The KV block size requests are allocated in: the page size, else the attention block
/// size the boot log printed, else the one the readings' cache info states, else the
/// engine's default (with a boot log to show it was not changed). vLLM prints no block size unless it changes it, and its default is
/// not one number: 16 on GPUs, 128 on its CPU build (0.32), which says so only in
/// `vllm:cache_config_info`.
pub fn block_size(run: &Run) -> Option<(u64, BlockFrom)> {
    let boot = run.last_boot();
    let printed = boot
        .and_then(|b| b.page_size.or(b.attention_block_size))
        .map(|b| (b, BlockFrom::BootLog));
    let stated = || {
        let info = run.engine.cache_info?;
        run.info_label(info.metric, info.block_size_label)?
            .trim()
            .parse::<u64>()
            .ok()
            .map(|b| (b, BlockFrom::Readings))
    };
    printed
        .or_else(stated)
        .or_else(|| {
            // The default stands for a server whose boot log shows it changed nothing.
            boot?;
            run.engine
                .default_block_size
                .map(|b| (b, BlockFrom::EngineDefault))
        })
        .filter(|(b, _)| *b > 0)
}

/// A hybrid (attention plus Mamba) model: its cache holds per-request state as well as
/// tokens, so the tokens-per-request arithmetic does not describe it.
pub fn hybrid(boot: &BootFacts) -> bool {
    boot.running_cap_reason.is_some()
        || boot
            .attention_block_size
            .is_some_and(|s| s > HYBRID_BLOCK_ABOVE)
}

/// Why no setting of this run's can be advised from its numbers, if none can: the server
/// restarted between the readings, the boot logs are of different versions, or another
/// process shared the GPU (T21). The numbers then describe no one setup.
pub fn tuning_withheld(run: &Run, results: &[CheckResult]) -> Option<String> {
    if let (Some(before), Some(after)) = (&run.before, &run.after) {
        if crate::judging::checks::counters::restart_between(before, after).is_some() {
            return Some("the server restarted between the readings".to_owned());
        }
    }
    let mut versions: Vec<&str> = run
        .boots
        .iter()
        .filter_map(|(_, b)| b.version.as_deref())
        .collect();
    versions.dedup();
    if versions.len() > 1 {
        return Some(format!(
            "the boot logs are of different versions ({})",
            versions.join(", ")
        ));
    }
    results
        .iter()
        .any(|r| r.tripwire == Tripwire::T21 && r.status == Status::Fail)
        .then(|| "another process shared the GPU (T21)".to_owned())
}
