//! T21: the server's GPUs were shared with another process, or their clocks were held
//! back, while the load ran.
//!
//! T2 checks the card before a server starts; nothing checks it during the run. A
//! recorder that reads NVML beside each sample (`watch`, `xray`) stores, per sample, the
//! memory and streaming-multiprocessor share of processes that are not the server's on
//! the server's GPUs, the clock-event (throttle) reasons NVML reports, and the SM clock
//! against its maximum ([`crate::model::GpuReading`]). Only samples taken while requests
//! ran are judged: an idle GPU lowers its clocks (NVML's `GpuIdle` reason) by design.

use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::GpuSampling;
use crate::story::fmt;

use super::series::SeriesStats;

pub use super::gpu_fold::{reasons, GpuStats, CLOCK_SHARE, OTHER_COMPUTE_PCT, POWER_CAP_SHARE};

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
    use crate::model::{GpuReading, SeriesSample};

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
