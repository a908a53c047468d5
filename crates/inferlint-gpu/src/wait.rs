//! Waiting for a clear card: take a reading (GPU memory and live server processes) every
//! two seconds and fold it into [`ClearCardWatch`] until it decides.

use std::collections::BTreeSet;
use std::time::Duration;

use inferlint_core::CheckResult;

use crate::clear::{card_result, processes_unreadable, Asker, ClearCardWatch, ClearRule, Reading};
use crate::gpu::{GpuError, GpuReader, GpuSnapshot};
use crate::pids::{gpu_holders, GpuHolder};
use crate::procs::ProcessTable;
use crate::servers::discover;
use crate::system::{Clock, Processes};

/// The T2 result and what the last reading saw.
#[derive(Debug, Clone)]
pub struct WaitOutcome {
    /// T2's verdict.
    pub result: CheckResult,
    /// The processes NVML named in the last reading, as /proc sees them.
    pub holders: Vec<GpuHolder>,
}

/// Reads until the card is decided. The last reading falls at the timeout exactly: the
/// sleep before it is cut short.
pub fn wait_for_clear_card(
    asker: Asker,
    rule: ClearRule,
    processes: &mut dyn Processes,
    gpus: &mut dyn GpuReader,
    clock: &mut dyn Clock,
) -> WaitOutcome {
    wait_for_clear_card_with(asker, rule, processes, gpus, clock, &|_| Vec::new())
}

/// [`wait_for_clear_card`], counting as alive servers, besides every process that looks
/// like one, the PIDs `also_alive` names in each reading: the processes a stop left of a
/// tree we started, which need not look like a server at all (a daemonised helper still
/// holding the card).
pub fn wait_for_clear_card_with(
    asker: Asker,
    rule: ClearRule,
    processes: &mut dyn Processes,
    gpus: &mut dyn GpuReader,
    clock: &mut dyn Clock,
    also_alive: &dyn Fn(&ProcessTable) -> Vec<u32>,
) -> WaitOutcome {
    let mut watch = ClearCardWatch::new(rule);
    let start = clock.elapsed();
    let timeout = seconds(rule.timeout_s, 0.0);
    let interval = seconds(rule.interval_s, 0.001);
    loop {
        let snapshot: Result<GpuSnapshot, GpuError> = gpus.read();
        let table = match processes.table() {
            Ok(table) => table,
            Err(e) => {
                return WaitOutcome {
                    result: processes_unreadable(&e.to_string()),
                    holders: Vec::new(),
                }
            }
        };
        let mut alive: BTreeSet<u32> = discover(&table, processes.caller(), processes.scope())
            .targets
            .iter()
            .map(|t| t.pid)
            .collect();
        alive.extend(also_alive(&table));
        let elapsed = clock.elapsed().saturating_sub(start);
        let reading = Reading {
            elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            gpu: crate::clear::state_of(&snapshot),
            servers_alive: alive.len(),
        };
        if let Some(verdict) = watch.push(reading) {
            let holders = match &snapshot {
                Ok(s) => gpu_holders(s, &table, &|pid| processes.opens_nvidia_device(pid)),
                Err(_) => Vec::new(),
            };
            return WaitOutcome {
                result: card_result(asker, &watch, &verdict),
                holders,
            };
        }
        clock.sleep(interval.min(timeout.saturating_sub(elapsed)));
    }
}

/// Seconds as a duration, at least `floor`; NaN and infinities (which a caller should
/// have refused) become the floor and a day, never a panic.
fn seconds(value: f64, floor: f64) -> Duration {
    let value = if value.is_nan() {
        floor
    } else {
        value.clamp(floor, 86_400.0)
    };
    Duration::from_secs_f64(value)
}
