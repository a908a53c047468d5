//! The free-card check on this machine's NVIDIA GPUs (feature `gpu`): T2, as
//! `inferlint gpu-inspect` runs it before a server starts.
//!
//! NVML is loaded at run time, so a program built with this feature runs on a machine
//! without NVIDIA's driver; the check then says Can't tell, naming why.

pub use inferlint_gpu::ClearRule;

use inferlint_core::judging::status::CheckResult;

use crate::error::{Error, ErrorKind};

/// Reads the GPUs until the card is clear (no GPU uses more than
/// [`ClearRule::max_used_mib`], [`ClearRule::consecutive`] readings in a row) or
/// [`ClearRule::timeout_s`] passes: T2's verdict, with each GPU and the processes that
/// hold it in its `gpus` evidence. `ClearRule::gate()` is `gpu-inspect`'s default (800
/// MiB, 2 in a row, 10 s); set its fields to change them.
///
/// # Blocking
///
/// Loads NVML and reads the GPUs and their processes on the calling thread, sleeping
/// between readings until the card is clear or the timeout passes (10 s with
/// `ClearRule::gate()`): from async code, call it inside `tokio::task::spawn_blocking`.
pub fn free_card(rule: ClearRule) -> Result<CheckResult, Error> {
    let mut machine = inferlint_gpu::Machine::real("the free-card check", false, None)
        .map_err(|e| Error::new(ErrorKind::Io, format!("cannot {e}")))?;
    Ok(inferlint_gpu::inspect::gpu_inspect(
        &mut machine,
        rule,
        &mut |_| {},
    ))
}
