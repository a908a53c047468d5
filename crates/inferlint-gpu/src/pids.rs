//! NVML's PIDs against /proc's.
//!
//! NVML reports the PIDs the host's kernel gave the processes holding GPU memory. Inside
//! a container /proc numbers processes in the container's own namespace, so NVML's PID
//! may be missing from /proc or name an unrelated process there. Neither command ever
//! signals a process by NVML's PID (teardown signals only what it found in /proc); this
//! module says when the two disagree, so that a card that will not clear is explained.

use inferlint_core::Engine;

use crate::gpu::GpuSnapshot;
use crate::procs::ProcessTable;
use crate::servers::{display_name, match_server};

/// How a PID that NVML names looks in /proc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PidView {
    /// /proc has it, and it has an NVIDIA device open.
    Same {
        /// Its name in /proc.
        name: String,
    },
    /// /proc has a process with that PID, but it could not be checked (no right to read
    /// its open files).
    Unchecked {
        /// Its name in /proc.
        name: String,
    },
    /// /proc has no live process with that PID.
    Missing,
    /// /proc's process with that PID has no NVIDIA device open: another process.
    Different {
        /// Its name in /proc.
        name: String,
    },
}

/// A process NVML says holds memory on a GPU, as /proc sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuHolder {
    /// The GPU's index.
    pub gpu: u32,
    /// The process id NVML names.
    pub pid: u32,
    /// Memory it holds there, bytes, when NVML says.
    pub used_bytes: Option<u64>,
    /// Its name as NVML gives it.
    pub nvml_name: Option<String>,
    /// How the PID looks in /proc.
    pub view: PidView,
    /// The engine, when /proc's process with that PID is a server by its own look.
    pub server: Option<Engine>,
}

impl GpuHolder {
    /// Whether /proc's process is not the one NVML means, or is not there at all.
    pub fn mismatched(&self) -> bool {
        matches!(self.view, PidView::Missing | PidView::Different { .. })
    }
}

/// Looks up every PID NVML names. `opens_nvidia_device` says whether a /proc process has
/// a `/dev/nvidia*` file open (`None`: cannot tell).
pub fn gpu_holders(
    snapshot: &GpuSnapshot,
    table: &ProcessTable,
    opens_nvidia_device: &dyn Fn(u32) -> Option<bool>,
) -> Vec<GpuHolder> {
    let mut holders = Vec::new();
    for device in &snapshot.devices {
        for process in device.processes.iter().flatten() {
            let live = table.get(process.pid).filter(|p| p.is_alive());
            let view = match live {
                None => PidView::Missing,
                Some(p) => {
                    let name = display_name(p);
                    match opens_nvidia_device(p.pid) {
                        Some(true) => PidView::Same { name },
                        Some(false) => PidView::Different { name },
                        None => PidView::Unchecked { name },
                    }
                }
            };
            let server = live
                .filter(|_| !matches!(view, PidView::Different { .. }))
                .and_then(match_server)
                .map(|m| m.engine);
            holders.push(GpuHolder {
                gpu: device.index,
                pid: process.pid,
                used_bytes: process.used_bytes,
                nvml_name: process.nvml_name.clone(),
                view,
                server,
            });
        }
    }
    holders
}
