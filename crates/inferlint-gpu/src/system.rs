//! The machine, behind three seams: the process table and signals ([`Processes`]), the
//! GPUs ([`GpuReader`]) and time ([`Clock`]). [`Machine::real`] wires the real ones; tests
//! wire fakes and drive the very same teardown and gate code without sleeping or
//! signalling anything they did not start.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::gpu::{GpuError, GpuReader, UnavailableReader};
use crate::nvml::NvmlReader;
use crate::procs::{ProcError, ProcessTable, SignalOutcome, StopSignal};
use crate::recorded::ReplayReader;
use crate::servers::Scope;

/// The process table and signals.
pub trait Processes {
    /// A fresh look at every process.
    fn table(&mut self) -> Result<ProcessTable, ProcError>;
    /// Our own PID: never a target, and neither are its ancestors.
    fn caller(&self) -> u32;
    /// Which processes the table holds: all, or only our session's.
    fn scope(&self) -> Scope;
    /// Signals `pid` if it is still the process that started at `start_time`.
    fn signal(&mut self, pid: u32, start_time: u64, signal: StopSignal) -> SignalOutcome;
    /// Whether the process has an NVIDIA device open (`/dev/nvidia*`); `None` when that
    /// cannot be seen (another user's process, a vanished one).
    fn opens_nvidia_device(&self, pid: u32) -> Option<bool>;
}

/// Time, so that tests can wait two minutes in no time.
pub trait Clock {
    /// Time since some fixed start.
    fn elapsed(&self) -> Duration;
    /// Waits `duration`.
    fn sleep(&mut self, duration: Duration);
}

/// The wall clock.
#[derive(Debug)]
pub struct SystemClock {
    start: Instant,
}

impl SystemClock {
    /// The wall clock, from now.
    pub fn new() -> SystemClock {
        SystemClock {
            start: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> SystemClock {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    fn sleep(&mut self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

/// /proc and kill(2).
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub struct LinuxProcesses {
    caller: u32,
    scope: Scope,
}

#[cfg(target_os = "linux")]
impl LinuxProcesses {
    /// `session_only` narrows every look to the caller's own session.
    pub fn new(session_only: bool) -> Result<LinuxProcesses, ProcError> {
        let caller = std::process::id();
        let scope = if session_only {
            let me = crate::procs::read_process(caller).ok_or_else(|| ProcError::Io {
                detail: format!("/proc/{caller}/stat cannot be read"),
            })?;
            Scope::Session(me.sid)
        } else {
            Scope::Everything
        };
        Ok(LinuxProcesses { caller, scope })
    }
}

#[cfg(target_os = "linux")]
impl Processes for LinuxProcesses {
    fn table(&mut self) -> Result<ProcessTable, ProcError> {
        crate::procs::read_process_table()
    }

    fn caller(&self) -> u32 {
        self.caller
    }

    fn scope(&self) -> Scope {
        self.scope
    }

    fn signal(&mut self, pid: u32, start_time: u64, signal: StopSignal) -> SignalOutcome {
        crate::procs::send_signal(pid, start_time, signal)
    }

    fn opens_nvidia_device(&self, pid: u32) -> Option<bool> {
        let entries = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
        Some(entries.filter_map(Result::ok).any(|entry| {
            std::fs::read_link(entry.path())
                .is_ok_and(|target| target.to_string_lossy().starts_with("/dev/nvidia"))
        }))
    }
}

/// The process table of this machine, or why there is none (not Linux). `what` names the
/// command in that message.
pub fn system_processes(what: &str, session_only: bool) -> Result<Box<dyn Processes>, ProcError> {
    #[cfg(target_os = "linux")]
    {
        let _ = what;
        Ok(Box::new(LinuxProcesses::new(session_only)?))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = session_only;
        Err(ProcError::NotLinux {
            what: what.to_owned(),
        })
    }
}

/// NVML when it opens; otherwise a reader that answers why not, every time.
pub fn system_gpu_reader() -> Box<dyn GpuReader> {
    match NvmlReader::open() {
        Ok(reader) => Box::new(reader),
        Err(e) => Box::new(UnavailableReader(e)),
    }
}

/// Everything gpu-inspect and teardown touch.
pub struct Machine {
    /// `Err` where there is no /proc (Windows, macOS): the GPUs can still be shown.
    pub processes: Result<Box<dyn Processes>, ProcError>,
    /// The GPUs.
    pub gpus: Box<dyn GpuReader>,
    /// Time.
    pub clock: Box<dyn Clock>,
}

impl std::fmt::Debug for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Machine")
            .field("processes", &self.processes.as_ref().map(|p| p.scope()))
            .finish_non_exhaustive()
    }
}

impl Machine {
    /// This machine: /proc (narrowed to our session with `session_only`), NVML or a file
    /// of recorded readings, the wall clock. `what` names the command for the message a
    /// machine without /proc gets.
    pub fn real(
        what: &str,
        session_only: bool,
        recorded_readings: Option<&Path>,
    ) -> Result<Machine, GpuError> {
        let gpus = match recorded_readings {
            Some(path) => Box::new(ReplayReader::from_file(path)?) as Box<dyn GpuReader>,
            None => system_gpu_reader(),
        };
        Ok(Machine {
            processes: system_processes(what, session_only),
            gpus,
            clock: Box::new(SystemClock::new()),
        })
    }
}
