//! The clear-card rule (T2) is core's (`inferlint_core::judging::checks::clear_card`, re-exported
//! here): this crate takes the readings, and says what one reading of the GPUs is in the
//! rule's terms.

pub use inferlint_core::judging::checks::clear_card::*;

use crate::gpu::{GpuError, GpuSnapshot};

/// What one reading of the GPUs says: the most any one uses, or why it cannot count.
pub fn state_of(reading: &Result<GpuSnapshot, GpuError>) -> GpuState {
    match reading {
        Ok(snapshot) => match snapshot.max_used_bytes() {
            Ok(bytes) => GpuState::MaxUsed(bytes),
            Err(why) => GpuState::Unreadable(why.to_string()),
        },
        Err(e @ GpuError::NoDriver { .. }) => GpuState::NoDriver(e.to_string()),
        Err(e) => GpuState::Unreadable(format!("could not {e}")),
    }
}
