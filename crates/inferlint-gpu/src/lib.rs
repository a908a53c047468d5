//! GPU readings (NVML) and server-process discovery (/proc) for `inferlint gpu-inspect`
//! and `inferlint teardown` (T2, T3).
//!
//! Key design decision: everything that decides is a pure function of data. The server
//! rules ([`servers`]) take a process table, the clear-card rule ([`clear`]) takes
//! readings, and the three things that touch the machine (the process table and signals,
//! the GPUs, time) sit behind the small traits of [`system`] and [`gpu::GpuReader`]. The
//! binary wires /proc, NVML and the wall clock; the tests wire the H200's recorded
//! readings, recorded /proc views and a clock that does not sleep, and run the same code.
//!
//! NVML is loaded at run time (nvml-wrapper opens `libnvidia-ml.so.1` when asked), so the
//! binary runs on a machine without NVIDIA's driver and says so. Reading /proc and sending
//! signals exist on Linux only; elsewhere both commands answer Can't tell with the reason.

#![deny(missing_docs)]

pub mod cgroup;
pub mod clear;
pub mod contention;
pub mod gpu;
pub mod inspect;
pub mod listen;
pub mod nvml;
pub mod pids;
pub mod procs;
pub mod recorded;
pub mod servers;
pub mod system;
pub mod teardown;
pub mod tree;
pub mod wait;

pub use clear::ClearRule;
pub use gpu::{GpuActivity, GpuError, GpuReader, GpuSnapshot};
pub use system::Machine;
