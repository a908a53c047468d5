//! A recording's GPU readings folded one sample at a time into [`GpuStats`]: what T21
//! reads of other processes and held-back clocks on the server's GPUs.

use crate::model::SeriesSample;

/// NVML's clock-event reasons (`nvmlClocksEventReason*`, formerly `ClocksThrottleReason*`),
/// as the bit mask `nvmlDeviceGetCurrentClocksEventReasons` returns.
pub mod reasons {
    /// The GPU is idle.
    pub const GPU_IDLE: u64 = 0x1;
    /// The clocks were set by the applications-clocks setting.
    pub const APPLICATIONS_CLOCKS_SETTING: u64 = 0x2;
    /// Held back by the software power cap.
    pub const SW_POWER_CAP: u64 = 0x4;
    /// Held back by the hardware (heat, power brake, power supply).
    pub const HW_SLOWDOWN: u64 = 0x8;
    /// Held back to stay in sync with other GPUs' boost.
    pub const SYNC_BOOST: u64 = 0x10;
    /// Held back by the driver for heat.
    pub const SW_THERMAL_SLOWDOWN: u64 = 0x20;
    /// Held back by the hardware for heat.
    pub const HW_THERMAL_SLOWDOWN: u64 = 0x40;
    /// Held back by the hardware's power brake.
    pub const HW_POWER_BRAKE_SLOWDOWN: u64 = 0x80;
    /// Held back by the display clock setting.
    pub const DISPLAY_CLOCK_SETTING: u64 = 0x100;

    /// Reasons that slow a GPU below what its load asks for, for heat or a hardware
    /// fault: never part of a healthy run.
    pub const SLOWDOWN: u64 =
        HW_SLOWDOWN | SW_THERMAL_SLOWDOWN | HW_THERMAL_SLOWDOWN | HW_POWER_BRAKE_SLOWDOWN;

    /// The names of the reasons set in `bits`, in NVML's words.
    pub fn names(bits: u64) -> Vec<&'static str> {
        [
            (GPU_IDLE, "GPU idle"),
            (APPLICATIONS_CLOCKS_SETTING, "applications clocks setting"),
            (SW_POWER_CAP, "software power cap"),
            (HW_SLOWDOWN, "hardware slowdown"),
            (SYNC_BOOST, "sync boost"),
            (SW_THERMAL_SLOWDOWN, "software thermal slowdown"),
            (HW_THERMAL_SLOWDOWN, "hardware thermal slowdown"),
            (HW_POWER_BRAKE_SLOWDOWN, "hardware power brake"),
            (DISPLAY_CLOCK_SETTING, "display clock setting"),
        ]
        .into_iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|(_, name)| name)
        .collect()
    }
}

/// A process of another owner using at least this share of the SM (percent) in a busy
/// sample shares the GPU's compute with the server.
pub const OTHER_COMPUTE_PCT: f64 = 5.0;
/// An SM clock below this share of its maximum under the power cap is a held-back clock.
pub const CLOCK_SHARE: f64 = 0.9;
/// Busy samples in which a clock may be held back under the power cap before T21 warns.
pub const POWER_CAP_SHARE: f64 = 0.1;

/// The GPU readings of a recording, folded one sample at a time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuStats {
    /// Samples with any GPU reading.
    pub readings: usize,
    /// Samples with a reading taken while requests ran (or with no running reading).
    pub busy_readings: usize,
    /// Busy samples that say whether other processes held memory.
    pub other_known: usize,
    /// Busy samples in which other processes held memory, and the most they held (MiB).
    pub other_present: usize,
    /// The most memory other processes held in a busy sample, in MiB.
    pub other_mib_max: f64,
    /// Busy samples with other processes' SM use known, those with use at or above
    /// [`OTHER_COMPUTE_PCT`], and the highest.
    pub other_util_known: usize,
    /// Busy samples with other processes' SM use at or above [`OTHER_COMPUTE_PCT`].
    pub other_computing: usize,
    /// The highest SM use of another process in a busy sample, percent.
    pub other_util_max: f64,
    /// Busy samples with a clock-event reading, those with a slowdown reason, those held
    /// below [`CLOCK_SHARE`] of the maximum under the power cap.
    pub throttle_known: usize,
    /// Busy samples with a slowdown reason (heat, hardware).
    pub slowed: usize,
    /// Busy samples held below [`CLOCK_SHARE`] of the maximum under the power cap.
    pub power_capped: usize,
    /// Every reason seen in a busy sample.
    pub reasons_seen: u64,
    /// The lowest SM clock over its maximum in a busy sample.
    pub lowest_clock_share: Option<f64>,
}

impl GpuStats {
    /// Folds one sample in.
    pub fn push(&mut self, sample: &SeriesSample) {
        let gpu = &sample.gpu;
        if gpu.is_empty() {
            return;
        }
        self.readings += 1;
        // A recording without a running gauge cannot show idle moments: every reading
        // counts.
        if sample.running.is_some_and(|r| r <= 0.0) {
            return;
        }
        self.busy_readings += 1;
        if let Some(mib) = gpu.other_mib {
            self.other_known += 1;
            if mib > 0.0 {
                self.other_present += 1;
                self.other_mib_max = self.other_mib_max.max(mib);
            }
        }
        if let Some(util) = gpu.other_util {
            self.other_util_known += 1;
            if util >= OTHER_COMPUTE_PCT {
                self.other_computing += 1;
            }
            self.other_util_max = self.other_util_max.max(util);
        }
        let clock_share = match (gpu.sm_mhz, gpu.sm_max_mhz) {
            (Some(now), Some(max)) if max > 0.0 => Some(now / max),
            _ => None,
        };
        if let Some(bits) = gpu.throttle {
            let bits = bits as u64;
            self.throttle_known += 1;
            self.reasons_seen |= bits;
            if bits & reasons::SLOWDOWN != 0 {
                self.slowed += 1;
            }
            if bits & reasons::SW_POWER_CAP != 0 && clock_share.is_some_and(|s| s < CLOCK_SHARE) {
                self.power_capped += 1;
            }
            if bits & reasons::GPU_IDLE == 0 {
                if let Some(share) = clock_share {
                    self.lowest_clock_share =
                        Some(self.lowest_clock_share.map_or(share, |l: f64| l.min(share)));
                }
            }
        }
    }

    /// Adds the counts of a later stretch of the series, folded on its own.
    pub fn merge(&mut self, right: GpuStats) {
        self.readings += right.readings;
        self.busy_readings += right.busy_readings;
        self.other_known += right.other_known;
        self.other_present += right.other_present;
        self.other_mib_max = self.other_mib_max.max(right.other_mib_max);
        self.other_util_known += right.other_util_known;
        self.other_computing += right.other_computing;
        self.other_util_max = self.other_util_max.max(right.other_util_max);
        self.throttle_known += right.throttle_known;
        self.slowed += right.slowed;
        self.power_capped += right.power_capped;
        self.reasons_seen |= right.reasons_seen;
        self.lowest_clock_share = match (self.lowest_clock_share, right.lowest_clock_share) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}
