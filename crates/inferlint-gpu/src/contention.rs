//! One reading of the server's GPUs for a recording's sample (T21): who else uses them,
//! how busy they are and whether their clocks are held back.
//!
//! The server's GPUs are those on which one of its processes holds memory. Everything
//! else NVML lists on those GPUs is another tenant. The pure part ([`reading`]) takes a
//! snapshot, the devices' activity and the server's process ids; [`ServerGpuSampler`]
//! takes them from a [`GpuReader`] and the process table.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use inferlint_core::model::GpuReading;

use crate::gpu::{mib, GpuActivity, GpuReader, GpuSnapshot};

/// The reading of one moment. `server`: the server's process ids (its root and every
/// descendant); `None` when they are not known, and then the readings cover every GPU and
/// say nothing of other processes. A server whose processes hold memory on no GPU (its
/// processes are numbered otherwise, in a container) is read the same way.
pub fn reading(
    snapshot: &GpuSnapshot,
    activity: &[GpuActivity],
    server: Option<&BTreeSet<u32>>,
) -> GpuReading {
    let holds = |device: &crate::gpu::GpuDevice, pids: &BTreeSet<u32>| {
        device
            .processes
            .as_ref()
            .is_some_and(|list| list.iter().any(|p| pids.contains(&p.pid)))
    };
    let attributed: Option<(&BTreeSet<u32>, Vec<u32>)> = server.and_then(|pids| {
        let gpus: Vec<u32> = snapshot
            .devices
            .iter()
            .filter(|d| holds(d, pids))
            .map(|d| d.index)
            .collect();
        (!gpus.is_empty()).then_some((pids, gpus))
    });
    let on_server_gpu = |index: u32| match &attributed {
        Some((_, gpus)) => gpus.contains(&index),
        None => true,
    };
    let mut out = GpuReading::default();
    if let Some((pids, _)) = &attributed {
        let mut other_bytes = 0u64;
        let mut listed = true;
        for device in snapshot.devices.iter().filter(|d| on_server_gpu(d.index)) {
            match &device.processes {
                Some(list) => {
                    other_bytes += list
                        .iter()
                        .filter(|p| !pids.contains(&p.pid))
                        .map(|p| p.used_bytes.unwrap_or(0))
                        .sum::<u64>();
                }
                None => listed = false,
            }
        }
        out.other_mib = listed.then_some(mib(other_bytes) as f64);
        let mut known = false;
        let mut most = 0u32;
        for a in activity.iter().filter(|a| on_server_gpu(a.index)) {
            if let Some(list) = &a.process_sm_pct {
                known = true;
                for &(pid, sm) in list {
                    if !pids.contains(&pid) {
                        most = most.max(sm);
                    }
                }
            }
        }
        out.other_util = known.then_some(f64::from(most));
    }
    let busy: Vec<&GpuActivity> = activity.iter().filter(|a| on_server_gpu(a.index)).collect();
    out.util = busy
        .iter()
        .filter_map(|a| a.utilization_pct)
        .max()
        .map(f64::from);
    out.throttle = busy
        .iter()
        .filter_map(|a| a.clock_event_reasons)
        .reduce(|a, b| a | b)
        .map(|bits| bits as f64);
    // The slowest GPU, with its own maximum.
    if let Some(slowest) = busy
        .iter()
        .filter(|a| a.sm_clock_mhz.is_some() && a.sm_clock_max_mhz.is_some_and(|m| m > 0))
        .min_by(|a, b| {
            let share = |x: &&&GpuActivity| {
                f64::from(x.sm_clock_mhz.unwrap_or(0)) / f64::from(x.sm_clock_max_mhz.unwrap_or(1))
            };
            share(a).total_cmp(&share(b))
        })
    {
        out.sm_mhz = slowest.sm_clock_mhz.map(f64::from);
        out.sm_max_mhz = slowest.sm_clock_max_mhz.map(f64::from);
    }
    out
}

/// How often the server's process ids are looked up again: engines start their worker
/// processes after the server does.
const REFRESH: Duration = Duration::from_secs(5);

/// Reads the server's GPUs beside each sample of a recording.
pub struct ServerGpuSampler {
    reader: Box<dyn GpuReader>,
    /// Finds the server's process ids (its root and descendants) now; `None` when they
    /// cannot be found.
    find_server: Box<dyn FnMut() -> Option<BTreeSet<u32>>>,
    server: Option<BTreeSet<u32>>,
    looked: Option<Instant>,
}

impl std::fmt::Debug for ServerGpuSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerGpuSampler")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl ServerGpuSampler {
    /// A sampler that reads through `reader` and finds the server's processes with
    /// `find_server` (looked up again every few seconds).
    pub fn new(
        reader: Box<dyn GpuReader>,
        find_server: Box<dyn FnMut() -> Option<BTreeSet<u32>>>,
    ) -> ServerGpuSampler {
        ServerGpuSampler {
            reader,
            find_server,
            server: None,
            looked: None,
        }
    }

    /// One reading; an empty one when NVML failed this time.
    pub fn sample(&mut self) -> GpuReading {
        if self.looked.is_none_or(|t| t.elapsed() >= REFRESH) {
            self.looked = Some(Instant::now());
            if let Some(found) = (self.find_server)() {
                self.server = Some(found);
            }
        }
        let Ok(snapshot) = self.reader.read() else {
            return GpuReading::default();
        };
        let activity = self.reader.activity().unwrap_or_default();
        reading(&snapshot, &activity, self.server.as_ref())
    }
}

/// The process ids of the process `root` and every process below it, from /proc.
#[cfg(target_os = "linux")]
pub fn process_tree(root: u32) -> Option<BTreeSet<u32>> {
    let table = crate::procs::read_process_table().ok()?;
    table.get(root)?;
    Some(crate::listen::descendants(&table, root))
}

#[cfg(not(target_os = "linux"))]
pub fn process_tree(_root: u32) -> Option<BTreeSet<u32>> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::{GpuDevice, GpuMemory, GpuProcess};

    fn device(index: u32, processes: &[(u32, u64)]) -> GpuDevice {
        GpuDevice {
            index,
            name: Some("NVIDIA H200".into()),
            uuid: None,
            architecture: Some("Hopper".into()),
            compute_capability: Some((9, 0)),
            memory: Some(GpuMemory {
                total: 150_754_820_096,
                used: processes.iter().map(|p| p.1).sum(),
                free: 0,
            }),
            processes: Some(
                processes
                    .iter()
                    .map(|&(pid, bytes)| GpuProcess {
                        pid,
                        used_bytes: Some(bytes),
                        nvml_name: None,
                    })
                    .collect(),
            ),
        }
    }

    fn active(index: u32, sm: u32, bits: u64, processes: &[(u32, u32)]) -> GpuActivity {
        GpuActivity {
            index,
            utilization_pct: Some(97),
            sm_clock_mhz: Some(sm),
            sm_clock_max_mhz: Some(1980),
            clock_event_reasons: Some(bits),
            process_sm_pct: Some(processes.to_vec()),
        }
    }

    #[test]
    fn only_the_servers_gpus_count_and_other_processes_are_tenants() {
        let snapshot = GpuSnapshot {
            driver_version: None,
            devices: vec![
                device(0, &[(438, 22_114_467_840), (900, 20 << 30)]),
                device(1, &[(901, 30 << 30)]),
            ],
        };
        let activity = [
            active(0, 1980, 0, &[(438, 60), (900, 35)]),
            active(1, 800, 0x40, &[(901, 99)]),
        ];
        let server = BTreeSet::from([438, 439]);
        let r = reading(&snapshot, &activity, Some(&server));
        assert_eq!(r.other_mib, Some(20_480.0));
        assert_eq!(r.other_util, Some(35.0));
        // GPU 1 is not the server's: its thermal slowdown is not this run's.
        assert_eq!(r.throttle, Some(0.0));
        assert_eq!((r.sm_mhz, r.sm_max_mhz), (Some(1980.0), Some(1980.0)));
        // Without the server's processes nothing is said of tenants, and every GPU counts.
        let r = reading(&snapshot, &activity, None);
        assert_eq!(r.other_mib, None);
        assert_eq!(r.throttle, Some(64.0));
        assert_eq!(r.sm_mhz, Some(800.0));
    }
}
