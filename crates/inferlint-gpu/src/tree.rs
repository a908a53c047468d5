//! The whole process tree of something we started, found and stopped, daemons included.
//!
//! A process group does not hold a server's tree: a child that calls `setsid` (and forks
//! twice, as a daemon does) leaves the group, and its parent, and would outlive a stop
//! that signals the group. So the tree is anchored two ways:
//! - the **anchor**, a supervisor process of ours that is a child subreaper
//!   (`PR_SET_CHILD_SUBREAPER`): every process below it stays below it, because an
//!   orphan is re-parented to the nearest subreaper above it instead of to init. The
//!   tree is every process that descends from the anchor in the process table;
//! - where the machine allows one, a **cgroup** ([`crate::cgroup`]) the server joined
//!   before it started its program: everything it ever starts is in `cgroup.procs`, and
//!   `cgroup.kill` ends all of it at once.
//!
//! The members are the union of both, less the anchor itself, the caller and the
//! caller's ancestors. Every signal goes to one PID, and only while that PID still has
//! the start time it was listed with, so a PID freed and reused by an unrelated process
//! between the listing and the signal is left alone (see [`crate::procs`]).
//!
//! The listing reads `/proc` one process at a time, so one look can miss a process whose
//! parent exits (and which is re-parented) while the look runs; a tree is called empty
//! only after two looks in a row find no member.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::listen::descendants;
use crate::procs::{ProcError, ProcessTable, SignalOutcome, StopSignal};
use crate::system::{Clock, Processes};

/// One process of the tree, as listed: signalled only while it keeps this start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Member {
    /// Process id.
    pub pid: u32,
    /// Start time, clock ticks since boot: with the pid, it names one process.
    pub start_time: u64,
}

/// How a tree's members are found.
pub trait TreeSource {
    /// PIDs in the tree's cgroup right now (empty without a cgroup, or when it cannot be
    /// read).
    fn cgroup_pids(&self) -> Vec<u32>;
    /// Ends every process in the cgroup at once; `false` when there is no cgroup or the
    /// kernel cannot (no `cgroup.kill`).
    fn kill_cgroup(&self) -> bool;
    /// The anchor (the subreaper supervisor), if there is one.
    fn anchor(&self) -> Option<Member>;
}

/// The live members of a tree in one look at the process table: every process below the
/// anchor (while the anchor is still the process it was, by start time) and every
/// process in the cgroup, never the anchor, `caller` or an ancestor of `caller`.
pub fn members(table: &ProcessTable, source: &dyn TreeSource, caller: u32) -> Vec<Member> {
    let protected = table.self_and_ancestors(caller);
    let mut pids: BTreeSet<u32> = source.cgroup_pids().into_iter().collect();
    if let Some(anchor) = source.anchor() {
        if table.same_alive(anchor.pid, anchor.start_time).is_some() {
            pids.extend(descendants(table, anchor.pid));
        }
        pids.remove(&anchor.pid);
    }
    pids.iter()
        .filter(|pid| !protected.contains(pid))
        .filter_map(|&pid| table.get(pid))
        .filter(|p| p.is_alive())
        .map(|p| Member {
            pid: p.pid,
            start_time: p.start_time,
        })
        .collect()
}

/// How long each part of a stop may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopTimes {
    /// After SIGTERM, before SIGKILL.
    pub grace: Duration,
    /// After SIGKILL, before giving up.
    pub kill_wait: Duration,
    /// Between looks at the process table.
    pub poll: Duration,
}

/// What a stop did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeStop {
    /// Distinct processes sent SIGTERM.
    pub terminated: usize,
    /// Distinct processes still alive after the grace period, sent SIGKILL.
    pub killed: usize,
    /// Whether the cgroup was killed whole (`cgroup.kill`).
    pub cgroup_killed: bool,
    /// Still alive when the stop gave up.
    pub survivors: Vec<Member>,
    /// Signals the kernel refused: the PID and why.
    pub failed: Vec<(u32, String)>,
    /// The process table could not be read (the stop could not see the tree).
    pub unreadable: Option<String>,
}

impl TreeStop {
    /// The stop ended with no member alive.
    pub fn complete(&self) -> bool {
        self.survivors.is_empty() && self.unreadable.is_none()
    }
}

/// Stops every process of the tree: SIGTERM to each member (and to members that appear
/// later, while the grace period runs), until the tree is empty or `grace` has passed;
/// then the cgroup is killed whole where it can be, and SIGKILL goes to each member left,
/// until the tree is empty or `kill_wait` has passed.
pub fn stop_tree(
    source: &dyn TreeSource,
    processes: &mut dyn Processes,
    clock: &mut dyn Clock,
    times: StopTimes,
) -> TreeStop {
    let mut stop = TreeStop::default();
    let mut sent_term: BTreeSet<Member> = BTreeSet::new();
    let mut sent_kill: BTreeSet<Member> = BTreeSet::new();
    let caller = processes.caller();
    let start = clock.elapsed();
    // Two empty looks in a row end a phase (see the module's note).
    let mut empty_looks = 0;
    let mut killing = false;
    loop {
        let table = match processes.table() {
            Ok(table) => table,
            Err(e) => {
                stop.unreadable = Some(describe(&e));
                return stop;
            }
        };
        let now = members(&table, source, caller);
        if now.is_empty() {
            empty_looks += 1;
            if empty_looks >= 2 {
                return stop;
            }
        } else {
            empty_looks = 0;
        }
        let elapsed = clock.elapsed().saturating_sub(start);
        if !killing && elapsed >= times.grace && !now.is_empty() {
            killing = true;
            // Every member alive now is killed, whether by the cgroup at once (then the
            // signals below find most of them gone) or by its own SIGKILL.
            sent_kill.extend(now.iter().copied());
            stop.cgroup_killed = source.kill_cgroup();
        }
        for member in &now {
            let (signal, sent) = if killing {
                (StopSignal::Kill, &mut sent_kill)
            } else {
                (StopSignal::Term, &mut sent_term)
            };
            // SIGKILL is sent again on every look (a process may still be leaving its
            // signal handler); SIGTERM once per process.
            if signal == StopSignal::Term && sent.contains(member) {
                continue;
            }
            match processes.signal(member.pid, member.start_time, signal) {
                SignalOutcome::Sent => {
                    sent.insert(*member);
                }
                SignalOutcome::Failed(why) => {
                    if !stop.failed.iter().any(|(pid, _)| *pid == member.pid) {
                        stop.failed
                            .push((member.pid, format!("{}: {why}", signal.name())));
                    }
                }
                SignalOutcome::Gone | SignalOutcome::Reused => {}
            }
        }
        stop.terminated = sent_term.len();
        stop.killed = sent_kill.len();
        if killing && elapsed >= times.grace + times.kill_wait {
            stop.survivors = now;
            return stop;
        }
        let phase_end = if killing {
            times.grace + times.kill_wait
        } else {
            times.grace
        };
        clock.sleep(times.poll.min(phase_end.saturating_sub(elapsed)).max(
            // A look right after the deadline still needs a moment to pass.
            Duration::from_millis(1),
        ));
    }
}

fn describe(e: &ProcError) -> String {
    format!("could not {e}")
}

/// A tree held by a subreaper anchor and, where the machine allowed one, a cgroup.
#[cfg(target_os = "linux")]
#[derive(Debug, Clone)]
pub struct Contained {
    /// The subreaper that holds the tree, if any.
    pub anchor: Option<Member>,
    /// The cgroup the tree was put in, where the machine allowed one.
    pub cgroup: Option<crate::cgroup::OwnCgroup>,
}

#[cfg(target_os = "linux")]
impl TreeSource for Contained {
    fn cgroup_pids(&self) -> Vec<u32> {
        self.cgroup
            .as_ref()
            .and_then(|c| c.pids().ok())
            .unwrap_or_default()
    }

    fn kill_cgroup(&self) -> bool {
        self.cgroup
            .as_ref()
            .is_some_and(|c| c.kill_all().unwrap_or(false))
    }

    fn anchor(&self) -> Option<Member> {
        self.anchor
    }
}

/// The members of `survivors` still alive in `table` (with the start times they were
/// listed with), and every live process below one of them: what keeps a card from
/// clearing after a stop that gave up. A survivor the kernel would not let us signal
/// still runs, and what it starts after the stop holds the card as well as it does.
pub fn still_alive(table: &ProcessTable, survivors: &[Member]) -> Vec<u32> {
    let mut alive = BTreeSet::new();
    for m in survivors {
        if table.same_alive(m.pid, m.start_time).is_some() {
            alive.extend(descendants(table, m.pid));
        }
    }
    alive
        .into_iter()
        .filter(|&pid| table.get(pid).is_some_and(|p| p.is_alive()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procs::ProcessInfo;
    use crate::servers::Scope;
    use std::cell::RefCell;
    use std::collections::BTreeMap;
    use std::rc::Rc;

    fn process(pid: u32, ppid: u32, start_time: u64) -> ProcessInfo {
        ProcessInfo {
            pid,
            ppid,
            pgid: pid,
            sid: pid,
            state: 'S',
            start_time,
            comm: "x".into(),
            argv: vec![format!("p{pid}")],
        }
    }

    type Table = Rc<RefCell<BTreeMap<u32, ProcessInfo>>>;

    struct Source {
        anchor: Option<Member>,
        cgroup: Vec<u32>,
        cgroup_kill: bool,
        /// Where `cgroup.kill` ends the cgroup's processes, as the kernel would.
        machine: Option<Table>,
    }

    impl TreeSource for Source {
        fn cgroup_pids(&self) -> Vec<u32> {
            self.cgroup.clone()
        }
        fn kill_cgroup(&self) -> bool {
            if let (true, Some(table)) = (self.cgroup_kill, &self.machine) {
                table
                    .borrow_mut()
                    .retain(|pid, _| !self.cgroup.contains(pid));
            }
            self.cgroup_kill
        }
        fn anchor(&self) -> Option<Member> {
            self.anchor
        }
    }

    fn anchored(pid: u32, start_time: u64) -> Source {
        Source {
            anchor: Some(Member { pid, start_time }),
            cgroup: Vec::new(),
            cgroup_kill: false,
            machine: None,
        }
    }

    // init 1 ─ shell 10 ─ xray 20 ─ anchor 30 ─ server 40 ─ worker 41
    //                                        └─ daemon 50 (re-parented to the anchor)
    //        └─ bystander 60 (same command line as the daemon, not ours)
    fn machine() -> ProcessTable {
        ProcessTable::new([
            process(1, 0, 1),
            process(10, 1, 5),
            process(20, 10, 6),
            process(30, 20, 7),
            process(40, 30, 8),
            process(41, 40, 9),
            process(50, 30, 10),
            process(60, 1, 11),
        ])
    }

    fn pids(members: &[Member]) -> Vec<u32> {
        members.iter().map(|m| m.pid).collect()
    }

    #[test]
    fn the_tree_is_everything_below_the_anchor_not_the_anchor_or_a_bystander() {
        let found = members(&machine(), &anchored(30, 7), 20);
        assert_eq!(pids(&found), [40, 41, 50]);
    }

    #[test]
    fn a_reused_anchor_pid_does_not_lend_its_new_owner_s_tree() {
        // PID 30 now belongs to a process that started later: its children are not ours.
        let found = members(&machine(), &anchored(30, 999), 20);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn the_cgroup_adds_members_but_never_the_caller_or_its_ancestors() {
        let source = Source {
            anchor: None,
            // Someone moved the shell and xray into our cgroup.
            cgroup: vec![10, 20, 40, 41, 50, 7777],
            cgroup_kill: false,
            machine: None,
        };
        let found = members(&machine(), &source, 20);
        assert_eq!(pids(&found), [40, 41, 50]);
    }

    #[test]
    fn zombies_are_not_members() {
        let mut zombie = process(41, 40, 9);
        zombie.state = 'Z';
        let table = ProcessTable::new([process(30, 20, 7), process(40, 30, 8), zombie]);
        assert_eq!(pids(&members(&table, &anchored(30, 7), 20)), [40]);
    }

    /// A machine whose processes react to signals as a script says.
    struct Fake {
        table: Table,
        /// PIDs that ignore SIGTERM.
        ignores_term: BTreeSet<u32>,
        /// PID -> a child it forks when it gets SIGTERM (once).
        forks_on_term: BTreeMap<u32, ProcessInfo>,
        /// No signal ends anything (a process stuck in the kernel).
        unkillable: bool,
        /// This PID exits and goes to an unrelated process between the look and the
        /// signal.
        reused_at_signal: Option<u32>,
        signals: Vec<(u32, StopSignal)>,
    }

    impl Fake {
        fn new(table: ProcessTable) -> Fake {
            Fake {
                table: Rc::new(RefCell::new(
                    table.iter().map(|p| (p.pid, p.clone())).collect(),
                )),
                ignores_term: BTreeSet::new(),
                forks_on_term: BTreeMap::new(),
                unkillable: false,
                reused_at_signal: None,
                signals: Vec::new(),
            }
        }
    }

    impl Processes for Fake {
        fn table(&mut self) -> Result<ProcessTable, ProcError> {
            Ok(ProcessTable::new(self.table.borrow().values().cloned()))
        }
        fn caller(&self) -> u32 {
            20
        }
        fn scope(&self) -> Scope {
            Scope::Everything
        }
        fn signal(&mut self, pid: u32, start_time: u64, signal: StopSignal) -> SignalOutcome {
            let mut table = self.table.borrow_mut();
            if self.reused_at_signal == Some(pid) {
                table.insert(pid, process(pid, 1, 500));
            }
            match table.get(&pid) {
                None => return SignalOutcome::Gone,
                Some(p) if p.start_time != start_time => return SignalOutcome::Reused,
                Some(_) => {}
            }
            self.signals.push((pid, signal));
            if self.unkillable {
                return SignalOutcome::Sent;
            }
            if signal == StopSignal::Term {
                if let Some(child) = self.forks_on_term.remove(&pid) {
                    table.insert(child.pid, child);
                }
                if self.ignores_term.contains(&pid) {
                    return SignalOutcome::Sent;
                }
            }
            table.remove(&pid);
            // Its children go to the anchor, as to a subreaper.
            for p in table.values_mut() {
                if p.ppid == pid {
                    p.ppid = 30;
                }
            }
            SignalOutcome::Sent
        }
        fn opens_nvidia_device(&self, _pid: u32) -> Option<bool> {
            None
        }
    }

    struct FakeClock(Duration);

    impl Clock for FakeClock {
        fn elapsed(&self) -> Duration {
            self.0
        }
        fn sleep(&mut self, duration: Duration) {
            self.0 += duration;
        }
    }

    const TIMES: StopTimes = StopTimes {
        grace: Duration::from_secs(30),
        kill_wait: Duration::from_secs(10),
        poll: Duration::from_millis(100),
    };

    /// Stops the tree of [`machine`] below its anchor, 30, on a clock that does not wait.
    fn stop_anchored(fake: &mut Fake) -> TreeStop {
        stop_tree(
            &anchored(30, 7),
            fake,
            &mut FakeClock(Duration::ZERO),
            TIMES,
        )
    }

    #[test]
    fn every_member_gets_sigterm_and_the_bystander_nothing() {
        let mut fake = Fake::new(machine());
        let stop = stop_anchored(&mut fake);
        assert!(stop.complete(), "{stop:?}");
        assert_eq!(stop.terminated, 3);
        assert_eq!(stop.killed, 0);
        let signalled: BTreeSet<u32> = fake.signals.iter().map(|(pid, _)| *pid).collect();
        assert_eq!(signalled, BTreeSet::from([40, 41, 50]));
    }

    #[test]
    fn a_member_that_ignores_sigterm_is_killed_after_the_grace_period() {
        let mut fake = Fake::new(machine());
        fake.ignores_term.insert(50);
        let mut clock = FakeClock(Duration::ZERO);
        let stop = stop_tree(&anchored(30, 7), &mut fake, &mut clock, TIMES);
        assert!(stop.complete(), "{stop:?}");
        assert_eq!(stop.killed, 1);
        assert!(fake.signals.contains(&(50, StopSignal::Kill)));
        assert!(
            clock.0 >= TIMES.grace,
            "killed before the grace period ended"
        );
    }

    #[test]
    fn a_child_forked_during_the_stop_is_stopped_too() {
        let mut fake = Fake::new(machine());
        fake.forks_on_term.insert(40, process(42, 40, 12));
        fake.ignores_term.insert(40);
        let stop = stop_anchored(&mut fake);
        assert!(stop.complete(), "{stop:?}");
        assert!(fake.signals.contains(&(42, StopSignal::Term)));
    }

    /// `cgroup.kill` ends the members before their own SIGKILL can reach them; they
    /// were still killed, not stopped by SIGTERM.
    #[test]
    fn members_the_cgroup_kill_ends_count_as_killed() {
        let mut fake = Fake::new(machine());
        fake.ignores_term.extend([40, 41, 50]);
        let source = Source {
            anchor: Some(Member {
                pid: 30,
                start_time: 7,
            }),
            cgroup: vec![40, 41, 50],
            cgroup_kill: true,
            machine: Some(Rc::clone(&fake.table)),
        };
        let stop = stop_tree(&source, &mut fake, &mut FakeClock(Duration::ZERO), TIMES);
        assert!(stop.complete(), "{stop:?}");
        assert!(stop.cgroup_killed);
        assert_eq!(stop.killed, 3, "{stop:?}");
        assert!(!fake.signals.iter().any(|(_, s)| *s == StopSignal::Kill));
    }

    #[test]
    fn a_process_that_never_dies_is_reported_as_a_survivor() {
        let mut stuck = Fake::new(machine());
        stuck.unkillable = true;
        let mut clock = FakeClock(Duration::ZERO);
        let stop = stop_tree(&anchored(30, 7), &mut stuck, &mut clock, TIMES);
        assert_eq!(pids(&stop.survivors), [40, 41, 50]);
        assert!(!stop.complete());
        assert!(clock.0 >= TIMES.grace + TIMES.kill_wait);
        assert!(clock.0 < TIMES.grace + TIMES.kill_wait + Duration::from_secs(1));
        let table = machine();
        assert_eq!(still_alive(&table, &stop.survivors), [40, 41, 50]);
    }

    /// A survivor still runs after the stop and may start processes of its own (a
    /// daemon's helper, a restarted worker): they hold the card too. A PID reused by a
    /// process that is not the survivor lends nothing.
    #[test]
    fn what_a_survivor_starts_after_the_stop_counts_as_alive() {
        // 50 survived; it then started 70, which started 71. 41's PID went to 99's child.
        let table = ProcessTable::new([
            process(1, 0, 1),
            process(50, 30, 10),
            process(70, 50, 20),
            process(71, 70, 21),
            process(99, 1, 22),
            process(41, 99, 23),
        ]);
        let survivors = [
            Member {
                pid: 50,
                start_time: 10,
            },
            Member {
                pid: 41,
                start_time: 9,
            },
        ];
        assert_eq!(still_alive(&table, &survivors), [50, 70, 71]);
    }

    #[test]
    fn a_reused_pid_is_never_signalled() {
        let mut reusing = Fake::new(machine());
        // Between the look and the signal, 41 exits and its PID goes to someone else.
        reusing.reused_at_signal = Some(41);
        let stop = stop_anchored(&mut reusing);
        assert!(!reusing.signals.iter().any(|(pid, _)| *pid == 41));
        assert!(stop.complete(), "{stop:?}");
    }
}
