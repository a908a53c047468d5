//! T21: the server's GPUs were shared with another process, or their clocks were held
//! back, while the load ran.
//!
//! T2 checks the card before a server starts; nothing checks it during the run. A
//! recorder that reads NVML beside each sample (`watch`, `xray`) stores, per sample, the
//! memory and streaming-multiprocessor share of processes that are not the server's on
//! the server's GPUs, the clock-event (throttle) reasons NVML reports, and the SM clock
//! against its maximum ([`crate::model::GpuReading`]). Only samples taken while requests
//! ran are judged: an idle GPU lowers its clocks (NVML's `GpuIdle` reason) by design.

use crate::fmt;
use crate::model::{GpuSampling, SeriesSample};
use crate::status::{CheckResult, Status, Tripwire};

use super::series::SeriesStats;

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

fn t21(status: Status, message: String) -> CheckResult {
    CheckResult::new(Tripwire::T21, status, message)
}

/// T21 from a recording's GPU readings. `None` when the recording says nothing of the
/// GPUs (recorded without reading them): the caller lists T21 as not checked.
pub fn gpu_contention(stats: &SeriesStats) -> Option<CheckResult> {
    let g = &stats.gpu;
    if stats.gpu_sampling == Some(GpuSampling::None) {
        return Some(t21(
            Status::NotApplicable,
            "the recorder found no NVIDIA GPU on the server's machine, or it was told the server uses none".into(),
        ));
    }
    if stats.gpu_sampling == Some(GpuSampling::Elsewhere) {
        return Some(t21(
            Status::Unknown,
            "not sampled: the server was on another machine than the recorder, so its GPUs were not read; record with inferlint watch on the server's machine".into(),
        ));
    }
    if stats.gpu_sampling.is_none() && g.readings == 0 {
        return None;
    }
    let evidence = |r: CheckResult| {
        r.with("gpu_readings", g.readings)
            .with("busy_readings", g.busy_readings)
            .with("other_mib_max", g.other_mib_max)
            .with("other_util_max", g.other_util_max)
            .with("slowdown_readings", g.slowed)
            .with("power_capped_readings", g.power_capped)
            .with("reasons_seen", reasons::names(g.reasons_seen))
            .with("lowest_clock_share", g.lowest_clock_share)
    };
    if g.busy_readings == 0 {
        let why = if g.readings == 0 {
            "the recorder was to read the GPUs, but no sample holds a reading (NVML failed, or the server's GPUs could not be told apart)"
        } else {
            "no GPU reading was taken while requests ran"
        };
        return Some(evidence(t21(Status::Unknown, why.to_owned())));
    }
    let busy = g.busy_readings;
    let share = |n: usize| fmt::percent(n as f64 / busy as f64, 0);
    let mut fails = Vec::new();
    let mut warns = Vec::new();
    if g.other_computing > 0 {
        fails.push(format!(
            "another process used up to {}% of the server's GPU in {} of {busy} readings taken while requests ran",
            fmt::g(g.other_util_max.round()),
            g.other_computing
        ));
    } else if g.other_present > 0 {
        let compute = if g.other_util_known > 0 {
            "without using its compute in any reading"
        } else {
            "(NVML could not say whether it computed)"
        };
        warns.push(format!(
            "another process held up to {} MiB on the server's GPU in {} of {busy} readings taken while requests ran, {compute}",
            fmt::thousands_f(g.other_mib_max.round()),
            g.other_present
        ));
    }
    if g.slowed > 0 {
        fails.push(format!(
            "NVML reported {} in {} of {busy} readings taken while requests ran ({})",
            reasons::names(g.reasons_seen & reasons::SLOWDOWN).join(", "),
            g.slowed,
            share(g.slowed)
        ));
    }
    if g.power_capped as f64 > POWER_CAP_SHARE * busy as f64 {
        warns.push(format!(
            "the power cap held the SM clock below {} of its maximum in {} of {busy} readings taken while requests ran (lowest {})",
            fmt::percent(CLOCK_SHARE, 0),
            g.power_capped,
            fmt::percent(g.lowest_clock_share.unwrap_or(0.0), 0)
        ));
    }
    let unknown_tenants = g.other_known == 0;
    Some(evidence(if !fails.is_empty() {
        let mut all = fails;
        all.extend(warns);
        t21(Status::Fail, all.join("; "))
    } else if !warns.is_empty() {
        t21(Status::Warn, warns.join("; "))
    } else if unknown_tenants && g.throttle_known == 0 {
        t21(
            Status::Unknown,
            "the GPU readings say neither which processes used the server's GPUs nor whether their clocks were held back".into(),
        )
    } else if unknown_tenants {
        t21(
            Status::Unknown,
            format!(
                "no clock held back in {busy} readings taken while requests ran, but the readings cannot say which processes used the server's GPUs (the server's processes were not found)"
            ),
        )
    } else {
        let clock = match g.lowest_clock_share {
            Some(s) => format!(
                "; the SM clock stayed at or above {} of its maximum",
                fmt::percent(s, 0)
            ),
            None => String::new(),
        };
        t21(
            Status::Pass,
            format!(
                "no other process on the server's GPUs and no slowdown in {busy} readings taken while requests ran{clock}"
            ),
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::GpuReading;

    fn sample(running: f64, gpu: GpuReading) -> SeriesSample {
        SeriesSample {
            t_wall: 1.0,
            running: Some(running),
            gpu,
            ..SeriesSample::default()
        }
    }

    fn clean() -> GpuReading {
        GpuReading {
            other_mib: Some(0.0),
            other_util: Some(0.0),
            util: Some(98.0),
            throttle: Some(0.0),
            sm_mhz: Some(1980.0),
            sm_max_mhz: Some(1980.0),
        }
    }

    fn stats(samples: &[SeriesSample]) -> SeriesStats {
        let mut s = SeriesStats::new();
        s.gpu_sampling = Some(GpuSampling::Nvml);
        samples.iter().for_each(|x| s.push(x));
        s
    }

    #[test]
    fn a_clean_card_passes_and_an_idle_clock_is_not_judged() {
        let idle = GpuReading {
            throttle: Some(reasons::GPU_IDLE as f64),
            sm_mhz: Some(375.0),
            ..clean()
        };
        let r = gpu_contention(&stats(&[sample(0.0, idle), sample(8.0, clean())])).unwrap();
        assert_eq!(r.status, Status::Pass, "{}", r.message);
    }

    #[test]
    fn another_tenant_computing_fails_and_one_holding_memory_warns() {
        let tenant = GpuReading {
            other_mib: Some(20_000.0),
            other_util: Some(40.0),
            ..clean()
        };
        let r = gpu_contention(&stats(&[sample(8.0, tenant), sample(8.0, clean())])).unwrap();
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        let idle_tenant = GpuReading {
            other_mib: Some(20_000.0),
            ..clean()
        };
        let r = gpu_contention(&stats(&[sample(8.0, idle_tenant)])).unwrap();
        assert_eq!(r.status, Status::Warn, "{}", r.message);
    }

    #[test]
    fn thermal_slowdown_fails_and_a_power_capped_clock_warns() {
        let hot = GpuReading {
            throttle: Some(reasons::HW_THERMAL_SLOWDOWN as f64),
            sm_mhz: Some(1200.0),
            ..clean()
        };
        let r = gpu_contention(&stats(&[sample(8.0, hot)])).unwrap();
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        assert!(
            r.message.contains("hardware thermal slowdown"),
            "{}",
            r.message
        );
        let capped = GpuReading {
            throttle: Some(reasons::SW_POWER_CAP as f64),
            sm_mhz: Some(1500.0),
            ..clean()
        };
        let r = gpu_contention(&stats(&[sample(8.0, capped), sample(8.0, clean())])).unwrap();
        assert_eq!(r.status, Status::Warn, "{}", r.message);
    }

    #[test]
    fn no_gpu_does_not_apply_and_no_reading_is_not_a_pass() {
        let mut none = SeriesStats::new();
        none.gpu_sampling = Some(GpuSampling::None);
        assert_eq!(
            gpu_contention(&none).map(|r| r.status),
            Some(Status::NotApplicable)
        );
        assert_eq!(gpu_contention(&SeriesStats::new()), None);
        let r = gpu_contention(&stats(&[sample(8.0, GpuReading::default())])).unwrap();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
    }

    /// A server on another machine has GPUs the recorder could not read: not sampled is
    /// Can't tell, never "does not apply".
    #[test]
    fn a_server_elsewhere_is_not_sampled_and_cant_tell() {
        let mut elsewhere = SeriesStats::new();
        elsewhere.gpu_sampling = Some(GpuSampling::Elsewhere);
        let r = gpu_contention(&elsewhere).unwrap();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert!(r.message.starts_with("not sampled: "), "{}", r.message);
    }
}
