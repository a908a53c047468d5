//! The real GPU reader: NVML through nvml-wrapper, which loads `libnvidia-ml.so.1`
//! (`nvml.dll` on Windows) when [`NvmlReader::open`] runs, not when the program starts. A
//! machine without NVIDIA's driver therefore runs the binary fine and gets
//! [`GpuError::NoDriver`] here.

use std::fmt;

use std::collections::HashMap;

use nvml_wrapper::enum_wrappers::device::Clock;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;

use crate::gpu::{GpuActivity, GpuDevice, GpuError, GpuMemory, GpuProcess, GpuReader, GpuSnapshot};

/// NVML, opened once and read as often as the clear-card wait or a recorder needs.
pub struct NvmlReader {
    nvml: Nvml,
    /// Per GPU, the time stamp of the last process-utilisation sample read, so that each
    /// reading covers the time since the one before.
    last_process_sample: HashMap<u32, u64>,
}

impl fmt::Debug for NvmlReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("NvmlReader")
    }
}

/// How long a process path NVML may return (it truncates to this).
const PROCESS_NAME_LEN: usize = 256;

impl NvmlReader {
    /// Loads the library and initialises NVML. A missing library or an unloaded kernel
    /// driver is [`GpuError::NoDriver`]; anything else is [`GpuError::Nvml`].
    pub fn open() -> Result<NvmlReader, GpuError> {
        match Nvml::init() {
            Ok(nvml) => Ok(NvmlReader {
                nvml,
                last_process_sample: HashMap::new(),
            }),
            Err(e) => Err(open_error(e)),
        }
    }

    fn device(&self, index: u32) -> Result<GpuDevice, NvmlError> {
        let device = self.nvml.device_by_index(index)?;
        let memory = device.memory_info().ok().map(|m| GpuMemory {
            total: m.total,
            used: m.used,
            free: m.free,
        });
        let processes = device.running_compute_processes().ok().map(|list| {
            list.into_iter()
                .map(|p| GpuProcess {
                    pid: p.pid,
                    used_bytes: match p.used_gpu_memory {
                        UsedGpuMemory::Used(bytes) => Some(bytes),
                        UsedGpuMemory::Unavailable => None,
                    },
                    nvml_name: self
                        .nvml
                        .sys_process_name(p.pid, PROCESS_NAME_LEN)
                        .ok()
                        .filter(|name| !name.is_empty()),
                })
                .collect()
        });
        // A GPU that does not know its architecture still has a compute capability,
        // from which the family is derived.
        let architecture = device
            .architecture()
            .ok()
            .map(|a| a.to_string())
            .filter(|a| a != "Unknown");
        Ok(GpuDevice {
            index,
            name: device.name().ok(),
            uuid: device.uuid().ok(),
            architecture,
            compute_capability: device.cuda_compute_capability().ok().and_then(|cc| {
                Some((u32::try_from(cc.major).ok()?, u32::try_from(cc.minor).ok()?))
            }),
            memory,
            processes,
        })
    }
}

impl NvmlReader {
    fn device_activity(&mut self, index: u32) -> Result<GpuActivity, NvmlError> {
        let device = self.nvml.device_by_index(index)?;
        let since = self.last_process_sample.get(&index).copied();
        // Not every GPU samples per-process utilisation (NotSupported): then it is unknown.
        let process_sm_pct = device.process_utilization_stats(since).ok().map(|samples| {
            let mut by_pid: HashMap<u32, u32> = HashMap::new();
            let mut latest = since.unwrap_or(0);
            for s in samples {
                latest = latest.max(s.timestamp);
                let e = by_pid.entry(s.pid).or_insert(0);
                *e = (*e).max(s.sm_util);
            }
            self.last_process_sample.insert(index, latest);
            let mut list: Vec<(u32, u32)> = by_pid.into_iter().collect();
            list.sort_unstable();
            list
        });
        Ok(GpuActivity {
            index,
            utilization_pct: device.utilization_rates().ok().map(|u| u.gpu),
            sm_clock_mhz: device.clock_info(Clock::SM).ok(),
            sm_clock_max_mhz: device.max_clock_info(Clock::SM).ok(),
            clock_event_reasons: device.current_throttle_reasons().ok().map(|r| r.bits()),
            process_sm_pct,
        })
    }
}

impl GpuReader for NvmlReader {
    fn activity(&mut self) -> Result<Vec<GpuActivity>, GpuError> {
        let count = self.nvml.device_count().map_err(read_error)?;
        (0..count)
            .map(|index| {
                self.device_activity(index).map_err(|e| GpuError::Nvml {
                    detail: format!("GPU {index}: {e}"),
                })
            })
            .collect()
    }

    fn read(&mut self) -> Result<GpuSnapshot, GpuError> {
        let count = self.nvml.device_count().map_err(read_error)?;
        let mut devices = Vec::with_capacity(count as usize);
        for index in 0..count {
            devices.push(self.device(index).map_err(|e| GpuError::Nvml {
                detail: format!("GPU {index}: {e}"),
            })?);
        }
        Ok(GpuSnapshot {
            driver_version: self.nvml.sys_driver_version().ok(),
            devices,
        })
    }
}

fn open_error(e: NvmlError) -> GpuError {
    match e {
        NvmlError::LibloadingError(inner) => GpuError::NoDriver {
            detail: inner.to_string(),
        },
        NvmlError::LibraryNotFound => GpuError::NoDriver {
            detail: "the NVML library was not found".to_owned(),
        },
        NvmlError::DriverNotLoaded => GpuError::NoDriver {
            detail: "the NVIDIA kernel driver is not loaded".to_owned(),
        },
        NvmlError::NoPermission => GpuError::Nvml {
            detail: "no permission to talk to the NVIDIA driver".to_owned(),
        },
        other => GpuError::Nvml {
            detail: other.to_string(),
        },
    }
}

fn read_error(e: NvmlError) -> GpuError {
    GpuError::Nvml {
        detail: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_no_driver() {
        assert!(matches!(
            open_error(NvmlError::DriverNotLoaded),
            GpuError::NoDriver { .. }
        ));
        assert!(matches!(
            open_error(NvmlError::LibraryNotFound),
            GpuError::NoDriver { .. }
        ));
        assert!(matches!(
            open_error(NvmlError::NoPermission),
            GpuError::Nvml { .. }
        ));
    }
}
