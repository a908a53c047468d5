//! A GPU for the simulated server, as NVML readings in a file that inferlint replays
//! (`INFERLINT_NVML_READINGS`, docs/gpu.md): the server's own process holds memory on one
//! H200, and another tenant arrives on request. The file is rewritten whole (written
//! beside and renamed) each time the card's state changes, so a reader never sees half of
//! it, and rewritten idle when the server stops.

use std::path::Path;

use serde_json::{json, Value};

/// The tenant's process id: no process of this machine has it.
pub const TENANT_PID: u32 = 4_194_301;

/// One reading: the server's process (when it runs) and the tenant (when it came).
pub fn reading(server_pid: Option<u32>, tenant: bool) -> Value {
    let gib = 1u64 << 30;
    let mut processes = Vec::new();
    let mut utilization = Vec::new();
    if let Some(pid) = server_pid {
        processes.push(json!({"pid": pid, "used_gpu_memory": 20 * gib}));
        utilization.push(json!({"pid": pid, "sm": 60}));
    }
    if tenant {
        processes.push(json!({"pid": TENANT_PID, "used_gpu_memory": 10 * gib}));
        utilization.push(json!({"pid": TENANT_PID, "sm": 35}));
    }
    let used: u64 = processes
        .iter()
        .filter_map(|p| p["used_gpu_memory"].as_u64())
        .sum();
    let total = 150_754_820_096u64;
    json!({
        "note": "simulated by inferlint-sim: not a real GPU",
        "driver_version": "580.159.04",
        "devices": [{
            "index": 0,
            "name": "NVIDIA H200",
            "uuid": "GPU-00000000-0000-0000-0000-000000000000",
            "architecture": "Hopper",
            "compute_capability": "9.0",
            "memory": {"total": total, "used": used, "free": total - used},
            "compute_processes": processes,
            "utilization": {"gpu": if server_pid.is_some() { 95 } else { 0 }, "memory": 0},
            "clocks": {"sm": 1980, "sm_max": 1980},
            "clocks_event_reasons": if server_pid.is_some() { 0 } else { 1 },
            "process_utilization": utilization,
        }],
    })
}

/// Writes a reading into `path` whole: beside it, then renamed over it.
pub fn write(path: &Path, reading: &Value) -> std::io::Result<()> {
    let mut beside = path.as_os_str().to_owned();
    beside.push(".writing");
    let beside = std::path::PathBuf::from(beside);
    std::fs::write(&beside, format!("{reading}\n"))?;
    std::fs::rename(&beside, path)
}
