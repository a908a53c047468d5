//! `gpu-inspect`: the GPUs as a person reads them, then T2 as a gate before a server
//! starts. It only looks; it never signals anything.

use serde_json::{json, Value};

use inferlint_core::story::fmt::thousands;
use inferlint_core::CheckResult;

use crate::clear::{Asker, ClearRule};
use crate::gpu::{mib, GpuError, GpuSnapshot};
use crate::pids::{gpu_holders, GpuHolder, PidView};
use crate::system::Machine;
use crate::wait::wait_for_clear_card;

/// `21,090 MiB`, or `? MiB`.
fn mib_text(bytes: Option<u64>) -> String {
    match bytes {
        Some(b) => format!(
            "{} MiB",
            thousands(i64::try_from(mib(b)).unwrap_or(i64::MAX))
        ),
        None => "? MiB".to_owned(),
    }
}

/// One line for a process NVML names.
fn holder_line(h: &GpuHolder) -> String {
    let head = format!("        pid {} holds {}: ", h.pid, mib_text(h.used_bytes));
    let tail = match &h.view {
        PidView::Same { name } | PidView::Unchecked { name } => match h.server {
            Some(engine) => format!("{name} ({} server)", engine.name()),
            None => format!("{name} (not an inference server)"),
        },
        PidView::Missing => "not in this machine's /proc".to_owned(),
        PidView::Different { name } => {
            format!(
                "/proc's pid {} is {name}, which has no NVIDIA device open",
                h.pid
            )
        }
    };
    head + &tail
}

/// The GPU lines: for each GPU its name, its family, compute capability and driver, its
/// memory, and the processes NVML says hold memory on it.
///
/// ```text
/// GPU 0   NVIDIA H200
///         Hopper, compute capability 9.0, driver 580.159.04
///         memory: 143,771 MiB total, 0 MiB used, 143,156 MiB free
/// ```
pub fn gpu_text(reading: &Result<GpuSnapshot, GpuError>, holders: &[GpuHolder]) -> String {
    let snapshot = match reading {
        Ok(s) => s,
        Err(e @ GpuError::NoDriver { .. }) => return format!("{e}\n"),
        Err(e) => return format!("could not {e}\n"),
    };
    if snapshot.devices.is_empty() {
        return "no NVIDIA GPU found: NVML lists none\n".to_owned();
    }
    let mut text = String::new();
    for d in &snapshot.devices {
        let head = format!("GPU {}", d.index);
        text.push_str(&format!("{head:<8}{}\n", d.name.as_deref().unwrap_or("?")));
        let mut facts = Vec::new();
        if let Some(family) = d.family() {
            facts.push(family);
        }
        facts.push(format!(
            "compute capability {}",
            d.compute_capability_text().as_deref().unwrap_or("?")
        ));
        facts.push(format!(
            "driver {}",
            snapshot.driver_version.as_deref().unwrap_or("?")
        ));
        text.push_str(&format!("        {}\n", facts.join(", ")));
        text.push_str(&format!(
            "        memory: {} total, {} used, {} free\n",
            mib_text(d.memory.map(|m| m.total)),
            mib_text(d.memory.map(|m| m.used)),
            mib_text(d.memory.map(|m| m.free)),
        ));
        for h in holders.iter().filter(|h| h.gpu == d.index) {
            text.push_str(&holder_line(h));
            text.push('\n');
        }
    }
    if holders.iter().any(GpuHolder::mismatched) {
        text.push_str(&mismatch_note());
    }
    text
}

/// Said whenever NVML's PIDs and /proc's disagree.
pub fn mismatch_note() -> String {
    "note: NVML names processes by the host's PIDs, and /proc here does not show them as \
     the same processes (as inside a container); inferlint never signals a process by \
     NVML's PID.\n"
        .to_owned()
}

/// The GPUs as evidence: per GPU its facts in MiB and the processes holding memory.
pub fn gpus_evidence(reading: &Result<GpuSnapshot, GpuError>, holders: &[GpuHolder]) -> Value {
    let Ok(snapshot) = reading else {
        return Value::Array(Vec::new());
    };
    let gpus = snapshot.devices.iter().map(|d| {
        let processes: Vec<Value> = holders
            .iter()
            .filter(|h| h.gpu == d.index)
            .map(|h| {
                let (seen_as, name) = match &h.view {
                    PidView::Same { name } => ("same", Some(name.as_str())),
                    PidView::Unchecked { name } => ("unchecked", Some(name.as_str())),
                    PidView::Missing => ("missing", None),
                    PidView::Different { name } => ("different", Some(name.as_str())),
                };
                json!({
                    "pid": h.pid,
                    "used_mib": h.used_bytes.map(mib),
                    "nvml_name": h.nvml_name,
                    "in_proc": seen_as,
                    "proc_name": name,
                    "server": h.server.map(|e| e.key()),
                })
            })
            .collect();
        json!({
            "index": d.index,
            "name": d.name,
            "uuid": d.uuid,
            "memory_total_mib": d.memory.map(|m| mib(m.total)),
            "memory_used_mib": d.memory.map(|m| mib(m.used)),
            "memory_free_mib": d.memory.map(|m| mib(m.free)),
            "driver": snapshot.driver_version,
            "compute_cap": d.compute_capability_text(),
            "family": d.family(),
            "processes": processes,
        })
    });
    Value::Array(gpus.collect())
}

/// Runs gpu-inspect: one reading shown through `out` as soon as it is taken, then the
/// T2 gate (two clear readings in a row by default; 10 s at most).
pub fn gpu_inspect(
    machine: &mut Machine,
    rule: ClearRule,
    out: &mut dyn FnMut(&str),
) -> CheckResult {
    let first = machine.gpus.read();
    let holders = match (&first, machine.processes.as_mut()) {
        (Ok(snapshot), Ok(processes)) => match processes.table() {
            Ok(table) => gpu_holders(snapshot, &table, &|pid| processes.opens_nvidia_device(pid)),
            Err(_) => Vec::new(),
        },
        _ => Vec::new(),
    };
    out(&gpu_text(&first, &holders));
    let result = match machine.processes.as_mut() {
        Err(e) => crate::clear::processes_unreadable(&e.to_string()),
        Ok(processes) => {
            wait_for_clear_card(
                Asker::Gate,
                rule,
                processes.as_mut(),
                machine.gpus.as_mut(),
                machine.clock.as_mut(),
            )
            .result
        }
    };
    result.with("gpus", gpus_evidence(&first, &holders))
}
