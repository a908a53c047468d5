//! What one reading of the GPUs holds, and the seam ([`GpuReader`]) through which it is
//! taken: NVML in the binary ([`crate::nvml::NvmlReader`]), recorded readings in the tests
//! ([`crate::recorded::ReplayReader`]).

use thiserror::Error;

pub use inferlint_core::judging::checks::clear_card::{mib, MIB};

/// Every GPU NVML sees at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuSnapshot {
    /// The driver version (`580.159.04`), when NVML could say.
    pub driver_version: Option<String>,
    /// Every GPU, in index order.
    pub devices: Vec<GpuDevice>,
}

/// One GPU. Every fact but the index is optional: a GPU that cannot report one of them is
/// still shown, with `?` where the fact would be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuDevice {
    /// NVML's index.
    pub index: u32,
    /// Its name (`NVIDIA H200`).
    pub name: Option<String>,
    /// Its UUID.
    pub uuid: Option<String>,
    /// NVML's name for the architecture (`Hopper`, `Ada`); `None` when NVML does not know.
    pub architecture: Option<String>,
    /// CUDA compute capability, major and minor.
    pub compute_capability: Option<(u32, u32)>,
    /// `None` when the memory could not be read; such a reading never counts as clear.
    pub memory: Option<GpuMemory>,
    /// The processes with a compute context on this GPU; `None` when NVML could not list
    /// them.
    pub processes: Option<Vec<GpuProcess>>,
}

/// Memory in bytes as NVML reports it. `used` excludes the driver's reserved memory, so an
/// idle card reads 0 used while `total - free` is a few hundred MiB (615 MiB on the H200).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuMemory {
    /// Total memory, bytes.
    pub total: u64,
    /// Memory in use, bytes.
    pub used: u64,
    /// Free memory, bytes.
    pub free: u64,
}

/// A process NVML says holds memory on a GPU. The PID is as the host sees it: inside a
/// container it may name another process or none (see [`crate::pids`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuProcess {
    /// The process id NVML names.
    pub pid: u32,
    /// Bytes this process holds; `None` where NVML cannot say (Windows' WDDM mode).
    pub used_bytes: Option<u64>,
    /// The executable path NVML names (what nvidia-smi prints), where it was asked for.
    pub nvml_name: Option<String>,
}

impl GpuDevice {
    /// The GPU family for a person: NVML's architecture name, else one derived from the
    /// compute capability (the mapping the established tool uses).
    pub fn family(&self) -> Option<String> {
        match self.architecture.as_deref() {
            Some("Ada") => return Some("Ada Lovelace".to_owned()),
            Some(arch) if !arch.is_empty() && arch != "Unknown" => return Some(arch.to_owned()),
            _ => {}
        }
        self.compute_capability
            .and_then(family_from_compute_capability)
            .map(str::to_owned)
    }

    /// `9.0`, or `None`.
    pub fn compute_capability_text(&self) -> Option<String> {
        self.compute_capability
            .map(|(major, minor)| format!("{major}.{minor}"))
    }
}

/// The family a compute capability belongs to: 6.x Pascal, 7.0/7.2 Volta, 7.5 Turing, 8.9
/// Ada Lovelace, other 8.x Ampere, 9.x Hopper, 10.x to 12.x Blackwell.
pub fn family_from_compute_capability((major, minor): (u32, u32)) -> Option<&'static str> {
    Some(match (major, minor) {
        (6, _) => "Pascal",
        (7, 0) | (7, 2) => "Volta",
        (7, 5) => "Turing",
        (8, 9) => "Ada Lovelace",
        (8, _) => "Ampere",
        (9, _) => "Hopper",
        (10..=12, _) => "Blackwell",
        _ => return None,
    })
}

impl GpuSnapshot {
    /// The most memory in use on any one GPU, in bytes. `Err` says why the reading cannot
    /// count as clear: no GPU at all, or a GPU whose memory could not be read.
    pub fn max_used_bytes(&self) -> Result<u64, NotClear> {
        if self.devices.is_empty() {
            return Err(NotClear::NoGpu);
        }
        let mut max = 0;
        for device in &self.devices {
            match device.memory {
                Some(memory) => max = max.max(memory.used),
                None => return Err(NotClear::MemoryUnread(device.index)),
            }
        }
        Ok(max)
    }
}

/// Why a reading of the GPUs cannot count as clear.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum NotClear {
    /// NVML lists no GPU at all.
    #[error("NVML lists no GPU")]
    NoGpu,
    /// The memory of this GPU (its index) could not be read.
    #[error("the memory of GPU {0} could not be read")]
    MemoryUnread(u32),
}

/// Why the GPUs could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GpuError {
    /// No NVIDIA driver on this machine: the library is missing or the kernel driver is not
    /// loaded. Waiting will not change it, so a card verdict is Can't tell at once.
    #[error("no NVIDIA driver found ({detail})")]
    NoDriver {
        /// What the loader or NVML said.
        detail: String,
    },
    /// NVML is there but this reading failed (a GPU fell off the bus, no permission).
    #[error("read the GPUs through NVML: {detail}")]
    Nvml {
        /// What NVML said.
        detail: String,
    },
    /// A file of recorded readings could not be used.
    #[error("read recorded GPU readings from {path}: {detail}")]
    Recorded {
        /// The file.
        path: String,
        /// What is wrong with it.
        detail: String,
    },
}

/// What one GPU is doing at a moment: its load, its SM clock against the maximum, the
/// reasons NVML gives for holding the clock back, and each process's share of its SM.
/// Every fact is `None` where NVML cannot say.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GpuActivity {
    /// NVML's index of the GPU.
    pub index: u32,
    /// NVML's utilisation: the share of the last sample period a kernel ran, percent.
    pub utilization_pct: Option<u32>,
    /// The SM clock now, MHz.
    pub sm_clock_mhz: Option<u32>,
    /// The highest SM clock the GPU can run at, MHz.
    pub sm_clock_max_mhz: Option<u32>,
    /// NVML's clock-event (throttle) reasons, as its bit mask.
    pub clock_event_reasons: Option<u64>,
    /// (pid, SM percent) of each process NVML sampled since the last reading.
    pub process_sm_pct: Option<Vec<(u32, u32)>>,
}

/// Takes one reading of every GPU. The binary uses NVML; tests replay recorded readings.
pub trait GpuReader {
    /// One reading of every GPU.
    fn read(&mut self) -> Result<GpuSnapshot, GpuError>;

    /// What every GPU is doing (for T21). A reader that cannot tell answers an empty
    /// list, and the readings then say nothing of clocks or load.
    fn activity(&mut self) -> Result<Vec<GpuActivity>, GpuError> {
        Ok(Vec::new())
    }
}

/// A reader that always answers the same error: what the binary uses when NVML could not
/// be opened, so the rest of the code has one path.
#[derive(Debug, Clone)]
pub struct UnavailableReader(pub GpuError);

impl GpuReader for UnavailableReader {
    fn read(&mut self) -> Result<GpuSnapshot, GpuError> {
        Err(self.0.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mib_rounds_like_nvidia_smi() {
        // The recorded H200: NVML bytes against what nvidia-smi printed.
        assert_eq!(mib(150_754_820_096), 143_771);
        assert_eq!(mib(22_123_708_416), 21_099);
        assert_eq!(mib(22_114_467_840), 21_090);
        assert_eq!(mib(150_109_880_320), 143_156);
    }

    #[test]
    fn family_prefers_nvml_and_falls_back_to_the_capability() {
        let mut d = GpuDevice {
            index: 0,
            name: None,
            uuid: None,
            architecture: Some("Ada".into()),
            compute_capability: Some((8, 9)),
            memory: None,
            processes: None,
        };
        assert_eq!(d.family().as_deref(), Some("Ada Lovelace"));
        d.architecture = Some("Unknown".into());
        d.compute_capability = Some((8, 0));
        assert_eq!(d.family().as_deref(), Some("Ampere"));
        d.compute_capability = Some((12, 0));
        assert_eq!(d.family().as_deref(), Some("Blackwell"));
        d.compute_capability = Some((5, 2));
        assert_eq!(d.family(), None);
        d.compute_capability = None;
        assert_eq!(d.family(), None);
    }

    #[test]
    fn max_used_needs_every_gpu() {
        let device = |index, used: Option<u64>| GpuDevice {
            index,
            name: None,
            uuid: None,
            architecture: None,
            compute_capability: None,
            memory: used.map(|used| GpuMemory {
                total: 100,
                used,
                free: 100 - used,
            }),
            processes: None,
        };
        let snap = |devices| GpuSnapshot {
            driver_version: None,
            devices,
        };
        assert_eq!(
            snap(vec![device(0, Some(3)), device(1, Some(7))]).max_used_bytes(),
            Ok(7)
        );
        assert!(snap(vec![]).max_used_bytes().is_err());
        assert!(snap(vec![device(0, Some(3)), device(1, None)])
            .max_used_bytes()
            .is_err());
    }
}
