use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use inferlint_gpu::gpu::{GpuError, GpuReader, GpuSnapshot};
use inferlint_gpu::procs::{ProcError, ProcessInfo, ProcessTable, SignalOutcome, StopSignal};
use inferlint_gpu::servers::Scope;
use inferlint_gpu::system::{Clock, Processes};
use inferlint_gpu::Machine;

/// The recordings folder (the test kit's rule: a missing one fails, naming it).
pub use inferlint_testkit::recorded;

/// `recorded/gpu-h200/NAME`, read to text.
pub fn h200(recorded: &std::path::Path, name: &str) -> String {
    std::fs::read_to_string(recorded.join("gpu-h200").join(name))
        .expect("the recording is readable")
}

pub fn process(pid: u32, ppid: u32, comm: &str, argv: &[&str]) -> ProcessInfo {
    ProcessInfo {
        pid,
        ppid,
        pgid: pid,
        sid: 1,
        state: 'S',
        start_time: 1000 + u64::from(pid),
        comm: comm.to_owned(),
        argv: argv.iter().map(|s| s.to_string()).collect(),
    }
}

/// How a fake process answers a signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Exits this many milliseconds after SIGTERM (SIGKILL: at once).
    ExitsAfterTerm(u64),
    /// Ignores SIGTERM; only SIGKILL ends it.
    IgnoresTerm,
}

#[derive(Debug)]
struct FakeProcess {
    info: ProcessInfo,
    answer: Answer,
    /// When it exits (fake milliseconds), once a signal decided that.
    exits_at: Option<u64>,
}

/// The state the fake processes, GPUs and clock share.
#[derive(Debug, Default)]
pub struct World {
    pub now_ms: u64,
    processes: Vec<FakeProcess>,
    /// Every signal sent, in order: (pid, signal, at ms).
    pub signals: Vec<(u32, StopSignal, u64)>,
    /// Timed GPU readings: the latest one at or before `now_ms` is what NVML reads.
    readings: Vec<(u64, Result<GpuSnapshot, GpuError>)>,
    /// Replaces a process with a new one of the same PID (a reused PID) at this moment.
    pub reuse_pid_on_first_signal: Option<u32>,
}

pub type SharedWorld = Rc<RefCell<World>>;

impl World {
    pub fn new() -> SharedWorld {
        Rc::new(RefCell::new(World::default()))
    }
}

pub fn add_process(world: &SharedWorld, info: ProcessInfo, answer: Answer) {
    world.borrow_mut().processes.push(FakeProcess {
        info,
        answer,
        exits_at: None,
    });
}

pub fn add_reading(world: &SharedWorld, at_ms: u64, reading: Result<GpuSnapshot, GpuError>) {
    world.borrow_mut().readings.push((at_ms, reading));
}

/// Whether the fake process is alive now.
pub fn alive(world: &SharedWorld, pid: u32) -> bool {
    let w = world.borrow();
    w.processes
        .iter()
        .any(|p| p.info.pid == pid && p.exits_at.is_none_or(|t| t > w.now_ms))
}

struct FakeProcesses {
    world: SharedWorld,
    caller: u32,
}

impl Processes for FakeProcesses {
    fn table(&mut self) -> Result<ProcessTable, ProcError> {
        let w = self.world.borrow();
        Ok(ProcessTable::new(
            w.processes
                .iter()
                .filter(|p| p.exits_at.is_none_or(|t| t > w.now_ms))
                .map(|p| p.info.clone()),
        ))
    }

    fn caller(&self) -> u32 {
        self.caller
    }

    fn scope(&self) -> Scope {
        Scope::Everything
    }

    fn signal(&mut self, pid: u32, start_time: u64, signal: StopSignal) -> SignalOutcome {
        let mut w = self.world.borrow_mut();
        if w.reuse_pid_on_first_signal == Some(pid) {
            w.reuse_pid_on_first_signal = None;
            for p in w.processes.iter_mut().filter(|p| p.info.pid == pid) {
                p.info.start_time += 1;
                p.info.comm = "bash".into();
                p.info.argv = vec!["bash".into()];
            }
        }
        let now = w.now_ms;
        let Some(p) = w
            .processes
            .iter_mut()
            .find(|p| p.info.pid == pid && p.exits_at.is_none_or(|t| t > now))
        else {
            return SignalOutcome::Gone;
        };
        if p.info.start_time != start_time {
            return SignalOutcome::Reused;
        }
        let exit = match (signal, p.answer) {
            (StopSignal::Kill, _) => Some(now),
            (StopSignal::Term, Answer::ExitsAfterTerm(ms)) => Some(now + ms),
            (StopSignal::Term, Answer::IgnoresTerm) => None,
        };
        if let Some(at) = exit {
            p.exits_at = Some(p.exits_at.map_or(at, |t| t.min(at)));
        }
        w.signals.push((pid, signal, now));
        SignalOutcome::Sent
    }

    fn opens_nvidia_device(&self, pid: u32) -> Option<bool> {
        Some(
            self.world
                .borrow()
                .processes
                .iter()
                .any(|p| p.info.pid == pid),
        )
    }
}

struct FakeGpus {
    world: SharedWorld,
}

impl GpuReader for FakeGpus {
    fn read(&mut self) -> Result<GpuSnapshot, GpuError> {
        let w = self.world.borrow();
        w.readings
            .iter()
            .rev()
            .find(|(at, _)| *at <= w.now_ms)
            .or(w.readings.first())
            .map(|(_, r)| r.clone())
            .unwrap_or(Err(GpuError::NoDriver {
                detail: "the test gave no reading".into(),
            }))
    }
}

struct FakeClock {
    world: SharedWorld,
}

impl Clock for FakeClock {
    fn elapsed(&self) -> Duration {
        Duration::from_millis(self.world.borrow().now_ms)
    }

    fn sleep(&mut self, duration: Duration) {
        // Rounded up, so that a sleep of less than a millisecond still moves time on.
        let ms = u64::try_from(duration.as_micros().div_ceil(1000)).unwrap_or(u64::MAX);
        self.world.borrow_mut().now_ms += ms;
    }
}

/// A machine made of the world: its processes, its timed GPU readings and its clock.
/// `caller` is the PID teardown runs as.
pub fn machine(world: &SharedWorld, caller: u32) -> Machine {
    Machine {
        processes: Ok(Box::new(FakeProcesses {
            world: world.clone(),
            caller,
        })),
        gpus: Box::new(FakeGpus {
            world: world.clone(),
        }),
        clock: Box::new(FakeClock {
            world: world.clone(),
        }),
    }
}
