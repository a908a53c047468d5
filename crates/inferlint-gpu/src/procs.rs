//! The process table, read by hand from /proc: for each process its argv, comm, parent,
//! process group, session, state and start time.
//!
//! The start time (clock ticks after boot, field 22 of `/proc/PID/stat`) is what makes a
//! PID safe to signal later: a PID freed and reused between the listing and the signal
//! belongs to a process with another start time, and [`send_signal`] checks it right
//! before signalling.
//!
//! The parsers are pure and public, so tests read the recorded /proc views of the H200;
//! reading /proc itself and signalling exist on Linux only.

use std::collections::{BTreeMap, BTreeSet};

use thiserror::Error;

/// One process, as /proc shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Process group id.
    pub pgid: u32,
    /// Session id.
    pub sid: u32,
    /// The one-letter state (`S`, `R`, `Z` for a zombie, …).
    pub state: char,
    /// Clock ticks after boot at which the process started.
    pub start_time: u64,
    /// The kernel's name for the process: at most 15 characters, so vLLM's engine reads
    /// `VLLM::EngineCor` here.
    pub comm: String,
    /// The command line, split on NUL, empty parts dropped and each part trimmed (a
    /// process that renames itself pads `argv[0]` with spaces).
    pub argv: Vec<String>,
}

/// The fields of `/proc/PID/stat` this crate uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatFields {
    /// Process id.
    pub pid: u32,
    /// Its name (`comm`).
    pub comm: String,
    /// Its state letter (`R`, `S`, `Z`, ...).
    pub state: char,
    /// Parent process id.
    pub ppid: u32,
    /// Process group id.
    pub pgid: u32,
    /// Session id.
    pub sid: u32,
    /// Start time, in clock ticks since boot: with the pid, it names one process.
    pub start_time: u64,
}

/// Parses `/proc/PID/stat`. The comm sits in parentheses and may itself hold spaces and
/// parentheses, so the fields are counted from the *last* `)`.
pub fn parse_stat(text: &str) -> Option<StatFields> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    if close < open {
        return None;
    }
    let pid = text[..open].trim().parse().ok()?;
    let comm = text[open + 1..close].to_owned();
    let rest: Vec<&str> = text[close + 1..].split_ascii_whitespace().collect();
    // rest[0] is field 3 (state); field N is rest[N - 3].
    let field = |n: usize| rest.get(n - 3).copied();
    Some(StatFields {
        pid,
        comm,
        state: field(3)?.chars().next()?,
        ppid: field(4)?.parse().ok()?,
        pgid: field(5)?.parse().ok()?,
        sid: field(6)?.parse().ok()?,
        start_time: field(22)?.parse().ok()?,
    })
}

/// Splits `/proc/PID/cmdline` on NUL, dropping empty parts and trimming each. A process
/// that rewrote its title may leave one space-padded string with no NUL at all.
pub fn split_cmdline(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|&b| b == 0)
        .map(|part| String::from_utf8_lossy(part).trim().to_owned())
        .filter(|part| !part.is_empty())
        .collect()
}

impl ProcessInfo {
    /// Builds a process from the text of its `stat` file and the bytes of its `cmdline`.
    pub fn from_proc_files(stat: &str, cmdline: &[u8]) -> Option<ProcessInfo> {
        let s = parse_stat(stat)?;
        Some(ProcessInfo {
            pid: s.pid,
            ppid: s.ppid,
            pgid: s.pgid,
            sid: s.sid,
            state: s.state,
            start_time: s.start_time,
            comm: s.comm,
            argv: split_cmdline(cmdline),
        })
    }

    /// A zombie (`Z`) or dead (`X`) process holds no memory and cannot be signalled: it
    /// only waits for its parent to collect it.
    pub fn is_alive(&self) -> bool {
        !matches!(self.state, 'Z' | 'X')
    }

    /// The argv joined with spaces, as `pkill -f` and `ps` show it; the comm in brackets
    /// when there is no argv (kernel threads, some renamed processes).
    pub fn command_line(&self) -> String {
        if self.argv.is_empty() {
            format!("[{}]", self.comm)
        } else {
            self.argv.join(" ")
        }
    }
}

/// Every process at one moment, by PID.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessTable {
    processes: BTreeMap<u32, ProcessInfo>,
}

impl ProcessTable {
    /// A table of these processes.
    pub fn new(processes: impl IntoIterator<Item = ProcessInfo>) -> ProcessTable {
        ProcessTable {
            processes: processes.into_iter().map(|p| (p.pid, p)).collect(),
        }
    }

    /// The process with this pid.
    pub fn get(&self, pid: u32) -> Option<&ProcessInfo> {
        self.processes.get(&pid)
    }

    /// The processes in PID order.
    pub fn iter(&self) -> impl Iterator<Item = &ProcessInfo> {
        self.processes.values()
    }

    /// How many processes.
    pub fn len(&self) -> usize {
        self.processes.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.processes.is_empty()
    }

    /// `pid` and every process above it, following parent links (stops at a PID the table
    /// does not hold, and at a loop should /proc change under us).
    pub fn self_and_ancestors(&self, pid: u32) -> BTreeSet<u32> {
        let mut chain = BTreeSet::new();
        let mut current = pid;
        while current != 0 && chain.insert(current) {
            match self.get(current) {
                Some(p) => current = p.ppid,
                None => break,
            }
        }
        chain
    }

    /// Parent PID -> its children, in PID order.
    pub fn children(&self) -> BTreeMap<u32, Vec<u32>> {
        let mut map: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for p in self.iter() {
            if p.ppid != p.pid {
                map.entry(p.ppid).or_default().push(p.pid);
            }
        }
        map
    }

    /// The process with this PID if it is still the same process (same start time) and
    /// still alive.
    pub fn same_alive(&self, pid: u32, start_time: u64) -> Option<&ProcessInfo> {
        self.get(pid)
            .filter(|p| p.start_time == start_time && p.is_alive())
    }
}

/// Why the process table could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProcError {
    /// Windows, macOS: there is no /proc to find the servers in.
    #[error("{what} needs Linux: it finds the server's processes in /proc. Run it where the server runs.")]
    NotLinux {
        /// The command that needs /proc.
        what: String,
    },
    /// /proc could not be read.
    #[error("read the process list in /proc: {detail}")]
    Io {
        /// What the system said.
        detail: String,
    },
}

/// The two signals teardown sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    /// SIGTERM: stop, cleanly.
    Term,
    /// SIGKILL: stop now.
    Kill,
}

impl StopSignal {
    /// The signal's name: `SIGTERM`, `SIGKILL`.
    pub fn name(self) -> &'static str {
        match self {
            StopSignal::Term => "SIGTERM",
            StopSignal::Kill => "SIGKILL",
        }
    }
}

/// What happened when a signal was to be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignalOutcome {
    /// Sent.
    Sent,
    /// The process had already exited (or is a zombie).
    Gone,
    /// The PID now belongs to another process (its start time changed): left alone.
    Reused,
    /// The kernel refused (another user's process without the right to signal it).
    Failed(String),
}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;

    /// Reads one process; `None` when it has gone or cannot be read.
    pub fn read_process(pid: u32) -> Option<ProcessInfo> {
        let dir = format!("/proc/{pid}");
        let stat = std::fs::read_to_string(format!("{dir}/stat")).ok()?;
        // A kernel thread or a process exiting right now has an empty cmdline; it is
        // still listed, by its comm.
        let cmdline = std::fs::read(format!("{dir}/cmdline")).unwrap_or_default();
        ProcessInfo::from_proc_files(&stat, &cmdline)
    }

    /// Reads every process in /proc. Entries that vanish or cannot be read while the
    /// listing runs are skipped.
    pub fn read_process_table() -> Result<ProcessTable, ProcError> {
        let entries = std::fs::read_dir("/proc").map_err(|e| ProcError::Io {
            detail: e.to_string(),
        })?;
        let processes = entries.filter_map(|entry| {
            let name = entry.ok()?.file_name();
            let pid: u32 = name.to_str()?.parse().ok()?;
            read_process(pid)
        });
        Ok(ProcessTable::new(processes))
    }

    /// Sends `signal` to `pid` only if it is still the process that started at
    /// `start_time`: the start time is read again right before the signal.
    pub fn send_signal(pid: u32, start_time: u64, signal: StopSignal) -> SignalOutcome {
        use nix::errno::Errno;
        use nix::sys::signal::{kill, Signal};
        use nix::unistd::Pid;

        let Ok(raw) = i32::try_from(pid) else {
            return SignalOutcome::Gone;
        };
        // PIDs 0 and 1 and negative values mean groups or init to kill(2); never those.
        if raw <= 1 {
            return SignalOutcome::Failed(format!("refusing to signal pid {pid}"));
        }
        match read_process(pid) {
            None => return SignalOutcome::Gone,
            Some(p) if p.start_time != start_time => return SignalOutcome::Reused,
            Some(p) if !p.is_alive() => return SignalOutcome::Gone,
            Some(_) => {}
        }
        let signal = match signal {
            StopSignal::Term => Signal::SIGTERM,
            StopSignal::Kill => Signal::SIGKILL,
        };
        match kill(Pid::from_raw(raw), signal) {
            Ok(()) => SignalOutcome::Sent,
            Err(Errno::ESRCH) => SignalOutcome::Gone,
            Err(e) => SignalOutcome::Failed(e.desc().to_lowercase()),
        }
    }
}

#[cfg(target_os = "linux")]
pub use linux::{read_process, read_process_table, send_signal};

#[cfg(test)]
mod tests {
    use super::*;

    // The engine line of recorded/gpu-h200/proc-loaded.txt.
    const ENGINE_STAT: &str = "438 (VLLM::EngineCor) S 434 434 434 0 -1 4194560 90066 0 318 0 638 78 0 0 20 0 18 0 2401 39772094464 157075 18446744073709551615 4325376 7352253 140721714571168 0 0 0 0 16781318 0 0 0 0 17 0 0 0 0 0 0 10653128 12216448 1012592640 140721714576085 140721714576229 140721714576229 140721714581467 0";

    #[test]
    fn stat_fields_count_from_the_last_parenthesis() {
        let s = parse_stat(ENGINE_STAT).unwrap();
        assert_eq!(
            s,
            StatFields {
                pid: 438,
                comm: "VLLM::EngineCor".into(),
                state: 'S',
                ppid: 434,
                pgid: 434,
                sid: 434,
                start_time: 2401,
            }
        );
        // A comm may hold spaces and parentheses.
        let tricky = ENGINE_STAT.replace("(VLLM::EngineCor)", "(a) b (c)");
        assert_eq!(parse_stat(&tricky).unwrap().comm, "a) b (c");
        assert_eq!(parse_stat(&tricky).unwrap().start_time, 2401);
        assert_eq!(parse_stat("438 (x) S 1 2"), None);
        assert_eq!(parse_stat(""), None);
    }

    #[test]
    fn cmdline_parts_are_trimmed_and_empty_ones_dropped() {
        assert_eq!(
            split_cmdline(b"python3\0/tmp/bin/vllm\0serve\0Qwen/Qwen3-8B\0"),
            ["python3", "/tmp/bin/vllm", "serve", "Qwen/Qwen3-8B"]
        );
        // setproctitle pads the new title with spaces over the old argv.
        assert_eq!(
            split_cmdline(b"VLLM::EngineCore        "),
            ["VLLM::EngineCore"]
        );
        assert_eq!(split_cmdline(b"VLLM::Worker\0\0\0  \0"), ["VLLM::Worker"]);
        assert!(split_cmdline(b"").is_empty());
    }

    #[test]
    fn ancestors_stop_at_unknown_parents_and_loops() {
        let p = |pid, ppid| ProcessInfo {
            pid,
            ppid,
            pgid: pid,
            sid: pid,
            state: 'S',
            start_time: 1,
            comm: "x".into(),
            argv: vec![],
        };
        let table = ProcessTable::new([p(1, 0), p(10, 1), p(11, 10), p(20, 21), p(21, 20)]);
        assert_eq!(
            table.self_and_ancestors(11).into_iter().collect::<Vec<_>>(),
            [1, 10, 11]
        );
        assert_eq!(table.self_and_ancestors(20).len(), 2);
        assert_eq!(table.children()[&10], [11]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_process_from_proc() {
        let table = read_process_table().unwrap();
        let me = table.get(std::process::id()).unwrap();
        assert!(me.is_alive());
        assert!(!me.argv.is_empty());
        assert!(table.self_and_ancestors(me.pid).contains(&me.ppid));
    }
}
