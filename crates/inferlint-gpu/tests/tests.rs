//! Integration tests of inferlint-gpu, one module per concern.
#![expect(
    clippy::unwrap_used,
    reason = "a test that cannot read its own inputs should stop there"
)]

/// Where the recordings are; a fake machine (processes, GPUs, clock) for the flows.
mod common;
/// T21's readings from the recorded H200 readings and edited copies, through GpuReader.
mod contention;
/// teardown and the gate on a fake machine: signals, the grace period, PID reuse, the wait.
mod fake_machine;
/// Real processes this test starts: /proc as read here, and signals by PID and start time.
#[cfg(target_os = "linux")]
mod real_processes;
/// The H200's recorded NVML readings and /proc views through the clear-card rule,
/// discovery, the pkill comparison and gpu-inspect's lines.
mod recorded;
