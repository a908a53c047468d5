//! T22 (replicas unevenly loaded): a fleet of replicas behind one router, recorded on one
//! schedule, where one replica queued or preempted while another had room.
//!
//! Each replica's series is folded one sample at a time into a [`FleetBalance`], which
//! keeps one byte per replica and schedule slot (a day at one sample a second for eight
//! replicas is under a megabyte). Samples are placed on a common grid by their wall time:
//! `watch` with several addresses scrapes every replica at the same slot of one absolute
//! schedule, and Prometheus' range queries answer on one step grid, so the same slot holds
//! every replica's reading of the same moment.
//!
//! A replica is *under pressure* in a slot when requests waited (`waiting > 0`) or its
//! preemption counter rose since its previous reading. It *has room* when nothing waited,
//! nothing was preempted and its KV cache was less than [`ROOM_USAGE`] full: the router
//! could have sent it the requests that waited elsewhere. Short bursts happen on balanced
//! fleets too (a replica's queue fills for a moment as requests arrive together), so the
//! verdict looks at how often, of the slots where a replica was under pressure, another
//! replica had room at the same moment.

use serde_json::json;

use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::SeriesSample;

/// A replica whose KV cache is less full than this, with nothing waiting, had room.
pub const ROOM_USAGE: f64 = 0.5;
/// T22 fails when, in at least this share of one replica's slots under pressure, another
/// replica had room.
pub const FAIL_SHARE: f64 = 0.5;
/// T22 warns at this share.
pub const WARN_SHARE: f64 = 0.2;
/// Fewer slots than this with one replica under pressure and another with room are too
/// few to call a pattern (a single burst).
pub const MIN_SLOTS: usize = 3;

const READ: u8 = 1;
const PRESSURE: u8 = 2;
const ROOM: u8 = 4;

#[derive(Debug, Clone, Default)]
struct ReplicaTrack {
    name: String,
    /// One byte per slot from the fleet's first: `READ`, `PRESSURE`, `ROOM` flags.
    slots: Vec<u8>,
    last_preemptions: Option<f64>,
    /// Requests the replica's own counter says it finished between its readings.
    finished: Option<f64>,
    waiting_readings: usize,
    kv_readings: usize,
    samples: usize,
}

/// The replicas' readings on one grid, for T22.
#[derive(Debug, Clone)]
pub struct FleetBalance {
    interval_s: f64,
    first_t_wall: f64,
    replicas: Vec<ReplicaTrack>,
}

impl FleetBalance {
    /// A grid of `interval_s` seconds starting at `first_t_wall` (the earliest sample of
    /// any replica), for the replicas named.
    pub fn new(interval_s: f64, first_t_wall: f64, names: &[String]) -> FleetBalance {
        FleetBalance {
            interval_s: if interval_s.is_finite() && interval_s > 0.0 {
                interval_s
            } else {
                1.0
            },
            first_t_wall,
            replicas: names
                .iter()
                .map(|name| ReplicaTrack {
                    name: name.clone(),
                    ..ReplicaTrack::default()
                })
                .collect(),
        }
    }

    /// Folds one sample of replica `index` in; samples of one replica arrive in time
    /// order. A sample before the grid's start or absurdly far after it is ignored.
    pub fn push(&mut self, index: usize, sample: &SeriesSample) {
        let Some(track) = self.replicas.get_mut(index) else {
            return;
        };
        track.samples += 1;
        let preempted = match (sample.preemptions, track.last_preemptions) {
            (Some(now), Some(before)) => now > before,
            _ => false,
        };
        if let Some(p) = sample.preemptions.filter(|p| p.is_finite()) {
            track.last_preemptions = Some(p);
        }
        let offset = ((sample.t_wall - self.first_t_wall) / self.interval_s).round();
        // At most 30 days of slots at the finest interval a recorder takes.
        if !(0.0..=52_000_000.0).contains(&offset) {
            return;
        }
        let slot = offset as usize;
        if track.slots.len() <= slot {
            track.slots.resize(slot + 1, 0);
        }
        let waiting = sample.waiting.filter(|w| w.is_finite());
        if waiting.is_some() {
            track.waiting_readings += 1;
        }
        if sample.kv_usage.is_some_and(f64::is_finite) {
            track.kv_readings += 1;
        }
        let mut flags = READ;
        if waiting.is_some_and(|w| w > 0.0) || preempted {
            flags |= PRESSURE;
        } else if waiting == Some(0.0)
            && sample
                .kv_usage
                .is_some_and(|u| u.is_finite() && u < ROOM_USAGE)
        {
            flags |= ROOM;
        }
        track.slots[slot] |= flags;
    }

    /// The requests replica `index` finished between its before and after readings, by
    /// its own counter ([`finished_between`]); `None` where they do not say.
    pub fn finished(&mut self, index: usize, finished: Option<f64>) {
        if let Some(track) = self.replicas.get_mut(index) {
            track.finished = finished.filter(|f| f.is_finite() && *f >= 0.0);
        }
    }

    /// T22's verdict: from the recordings, moment by moment; where they are too thin to
    /// tell, from the replicas' own finished counters.
    pub fn check(&self) -> CheckResult {
        let verdict = self.check_recordings();
        if verdict.status != Status::Unknown {
            return verdict;
        }
        self.check_counters(&verdict).unwrap_or(verdict)
    }

    /// Where the recordings cannot tell: a replica that queued or preempted (its own
    /// recording says so) and finished requests, while another finished none between its
    /// readings and never queued, was sent the load while the other had room. The counters
    /// count every request of the run, gaps in the recordings or not.
    fn check_counters(&self, recordings: &CheckResult) -> Option<CheckResult> {
        let pressure = |r: &ReplicaTrack| r.slots.iter().filter(|&&f| f & PRESSURE != 0).count();
        let busy = self
            .replicas
            .iter()
            .filter(|r| pressure(r) > 0 && r.finished.is_some_and(|f| f > 0.0))
            .max_by(|a, b| {
                let f = |r: &ReplicaTrack| r.finished.unwrap_or(0.0);
                f(a).total_cmp(&f(b))
            })?;
        let idle = self
            .replicas
            .iter()
            .find(|r| r.finished == Some(0.0) && pressure(r) == 0)?;
        let names: Vec<&str> = self.replicas.iter().map(|r| r.name.as_str()).collect();
        let finished = busy.finished.unwrap_or(0.0);
        let mut result = CheckResult::new(
                Tripwire::T22,
                Status::Fail,
                format!(
                    "replica {} queued or preempted in {} recorded moment(s) and finished {} request{}, while replica {} finished none between its readings and never queued: the load went to one replica while another had room (by the replicas' own counters; the recordings alone could not tell: {})",
                    busy.name,
                    pressure(busy),
                    crate::story::fmt::g(finished),
                    crate::story::fmt::plural(finished),
                    idle.name,
                    recordings.message
                ),
            );
        // What the recordings showed stays in the evidence beside the counters.
        result.evidence = recordings.evidence.clone();
        Some(
            result
                .with("replicas", names)
                .with("busy_replica", busy.name.as_str())
                .with("idle_replica", idle.name.as_str())
                .with("busy_finished", finished)
                .with("idle_finished", 0.0)
                .with("busy_moments", pressure(busy))
                .with("basis", "counters"),
        )
    }

    /// T22 from the recordings alone.
    fn check_recordings(&self) -> CheckResult {
        let t22 = |status, message: String| CheckResult::new(Tripwire::T22, status, message);
        let names: Vec<&str> = self.replicas.iter().map(|r| r.name.as_str()).collect();
        let read: Vec<&ReplicaTrack> = self.replicas.iter().filter(|r| r.samples > 0).collect();
        if read.len() < 2 {
            let message = match (self.replicas.len(), read.len()) {
                (0, _) => "no replica recorded; a fleet's balance needs two or more".to_owned(),
                (1, _) => "one replica only: nothing to compare its load with".to_owned(),
                _ => format!(
                    "{} of {} replicas have a recording; a fleet's balance needs two or more",
                    read.len(),
                    self.replicas.len()
                ),
            };
            return t22(Status::Unknown, message).with("replicas", names);
        }
        if let Some(blind) = read.iter().find(|r| r.waiting_readings == 0) {
            return t22(
                Status::Unknown,
                format!(
                    "replica {} has no waiting-requests readings: whether it queued cannot be told",
                    blind.name
                ),
            )
            .with("replicas", names);
        }
        let slots = read.iter().map(|r| r.slots.len()).max().unwrap_or(0);
        let flag = |r: &ReplicaTrack, slot: usize| r.slots.get(slot).copied().unwrap_or(0);
        let shared = (0..slots)
            .filter(|&s| read.iter().filter(|r| flag(r, s) & READ != 0).count() >= 2)
            .count();
        if shared < MIN_SLOTS {
            return t22(
                Status::Unknown,
                format!(
                    "only {shared} moment(s) with two or more replicas read at once; the recordings do not overlap enough to compare"
                ),
            )
            .with("replicas", names)
            .with("shared_slots", shared);
        }
        // The worst pair: the replica under pressure most often while another had room.
        // Pairs with enough moments to be a pattern rank first, then by share.
        let mut worst: Option<Pair> = None;
        let mut any_pressure = false;
        for (ai, a) in read.iter().enumerate() {
            let pressured: Vec<usize> = (0..slots)
                .filter(|&s| flag(a, s) & PRESSURE != 0)
                .filter(|&s| {
                    read.iter()
                        .enumerate()
                        .any(|(bi, b)| bi != ai && flag(b, s) & READ != 0)
                })
                .collect();
            if pressured.is_empty() {
                continue;
            }
            let unseen =
                (0..slots).filter(|&s| flag(a, s) & PRESSURE != 0).count() - pressured.len();
            any_pressure = true;
            for (bi, b) in read.iter().enumerate() {
                if bi == ai {
                    continue;
                }
                let with_room = pressured
                    .iter()
                    .filter(|&&s| flag(b, s) & ROOM != 0)
                    .count();
                let pair = Pair {
                    busy: &a.name,
                    idle: &b.name,
                    with_room,
                    pressured: pressured.len(),
                    unseen,
                };
                if worst.as_ref().is_none_or(|w| pair.rank() > w.rank()) {
                    worst = Some(pair);
                }
            }
        }
        let base = |r: CheckResult| {
            r.with("replicas", names.clone())
                .with("shared_slots", shared)
                .with("room_usage_below", ROOM_USAGE)
        };
        if !any_pressure {
            return base(t22(
                Status::Pass,
                format!(
                    "no replica queued or preempted while another was read ({} replicas, {shared} moments)",
                    read.len()
                ),
            ));
        }
        // Room is nothing waiting *and* a KV cache with space: a replica whose KV cache
        // was never read never has room, so "no other replica had room" would pass unseen.
        if let Some(blind) = read.iter().find(|r| r.kv_readings == 0) {
            return base(t22(
                Status::Unknown,
                format!(
                    "replica {} has no KV-cache usage readings: whether it had room while another queued cannot be told",
                    blind.name
                ),
            ));
        }
        let Some(Pair {
            busy,
            idle,
            with_room,
            pressured,
            unseen,
        }) = worst
        else {
            return base(t22(
                Status::Pass,
                "replicas queued only when every other replica was busy too".to_owned(),
            ));
        };
        let share = with_room as f64 / pressured as f64;
        // Too few moments to call a pattern (one burst) is a pass, but only when every
        // moment under pressure was compared: when the other replicas' recorders missed
        // enough of them to make a pattern, the moments that were compared lean to
        // imbalance and the rest are unknown, so nothing says the fleet was balanced.
        let status = if share < WARN_SHARE {
            Status::Pass
        } else if with_room < MIN_SLOTS && with_room + unseen >= MIN_SLOTS {
            Status::Unknown
        } else if with_room < MIN_SLOTS {
            Status::Pass
        } else if share < FAIL_SHARE {
            Status::Warn
        } else {
            Status::Fail
        };
        let seconds = with_room as f64 * self.interval_s;
        let message = match status {
            Status::Pass => format!(
                "replicas queued or preempted mostly when the others were busy too (at most {with_room} of {pressured} moments with another replica idle)"
            ),
            Status::Unknown => format!(
                "replica {busy} queued or preempted in {} moment(s), but the other replicas were read in only {pressured} of them (their recorders missed the rest: gaps), and replica {idle} had room in {with_room}: too few compared moments to tell a pattern from one burst",
                pressured + unseen
            ),
            _ => format!(
                "replica {busy} queued or preempted while replica {idle} had room (nothing waiting, KV cache under {:.0}%) in {with_room} of its {pressured} busy moments ({:.0}%, about {} s)",
                ROOM_USAGE * 100.0,
                share * 100.0,
                crate::story::fmt::g(seconds)
            ),
        };
        base(t22(status, message))
            .with("busy_replica", busy)
            .with("idle_replica", idle)
            .with("busy_moments", pressured)
            .with("moments_with_room_elsewhere", with_room)
            .with("busy_moments_not_compared", unseen)
            .with("share", json!((share * 1000.0).round() / 1000.0))
            .with("interval_s", self.interval_s)
    }
}

/// The requests a replica finished between its before and after readings, by its own
/// success counter; `None` when a reading or the counter is missing, or the server
/// restarted between them (its counters then started again).
pub fn finished_between(
    engine: &crate::engine::EngineDescriptor,
    before: Option<&crate::model::Snapshot>,
    after: Option<&crate::model::Snapshot>,
) -> Option<f64> {
    let (before, after) = (before?, after?);
    if super::counters::restart_between(before, after).is_some() {
        return None;
    }
    super::counters::counter_delta(engine, before, after, engine.request_success)
        .filter(|f| f.is_finite() && *f >= 0.0)
}

/// One replica under pressure and another, with the moments the second had room.
#[derive(Debug)]
struct Pair<'a> {
    busy: &'a str,
    idle: &'a str,
    with_room: usize,
    pressured: usize,
    /// The busy replica's moments under pressure when no other replica was read (their
    /// recorders missed the slot): moments that could not be compared.
    unseen: usize,
}

impl Pair<'_> {
    fn rank(&self) -> (bool, f64, usize) {
        (
            self.with_room >= MIN_SLOTS,
            self.with_room as f64 / self.pressured as f64,
            self.with_room,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t: f64, waiting: f64, kv: f64, preemptions: f64) -> SeriesSample {
        SeriesSample {
            t_wall: t,
            running: Some(4.0),
            waiting: Some(waiting),
            kv_usage: Some(kv),
            preemptions: Some(preemptions),
            ..SeriesSample::default()
        }
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("r{i}")).collect()
    }

    /// The recorded fleet-one-idle fleet (vLLM 0.32): the whole load went to one replica
    /// (its counter: 32 finished), which queued; the other finished 0. The recorders missed
    /// most moments of the second while the first queued, so the recordings compare one
    /// moment and cannot tell; the counters say the load went to one replica while the
    /// other had room.
    #[test]
    fn thin_recordings_are_judged_by_the_replicas_finished_counters() {
        let mut fleet = FleetBalance::new(1.0, 0.0, &names(2));
        for t in 0..11 {
            let waiting = if t < 5 { 2.0 } else { 0.0 };
            fleet.push(0, &sample(f64::from(t), waiting, 0.3, 0.0));
        }
        for t in [0, 8, 9, 10] {
            fleet.push(1, &sample(f64::from(t), 0.0, 0.0, 0.0));
        }
        let thin = fleet.check();
        assert_eq!(thin.status, Status::Unknown, "{}", thin.message);
        fleet.finished(0, Some(32.0));
        fleet.finished(1, Some(0.0));
        let r = fleet.check();
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        assert_eq!(r.evidence["busy_replica"], "r0");
        assert_eq!(r.evidence["idle_replica"], "r1");
        assert_eq!(r.evidence["basis"], "counters");
        // Both replicas finished requests: the counters say nothing of who had room.
        fleet.finished(1, Some(3.0));
        assert_eq!(fleet.check().status, Status::Unknown);
    }

    /// One replica preempting and queueing for the whole run while the other idles fails.
    #[test]
    fn one_replica_preempting_while_another_idles_fails() {
        let mut fleet = FleetBalance::new(1.0, 100.0, &names(2));
        for i in 0..20 {
            let t = 100.0 + f64::from(i);
            fleet.push(0, &sample(t + 0.003, 5.0, 0.98, f64::from(i)));
            fleet.push(1, &sample(t + 0.001, 0.0, 0.05, 0.0));
        }
        let r = fleet.check();
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        assert_eq!(r.evidence["busy_replica"], "r0");
        assert_eq!(r.evidence["idle_replica"], "r1");
        assert!(r.message.contains("replica r0 queued"), "{}", r.message);
    }

    /// Preemptions alone (nothing waiting) are pressure too.
    #[test]
    fn preemptions_without_a_queue_are_pressure() {
        let mut fleet = FleetBalance::new(0.5, 0.0, &names(2));
        for i in 0..10 {
            let t = f64::from(i) * 0.5;
            fleet.push(0, &sample(t, 0.0, 0.99, f64::from(i * 2)));
            fleet.push(1, &sample(t, 0.0, 0.1, 0.0));
        }
        assert_eq!(fleet.check().status, Status::Fail);
    }

    /// Every replica queueing together is a saturated fleet, not an unbalanced one.
    #[test]
    fn balanced_fleets_pass() {
        let mut busy = FleetBalance::new(1.0, 0.0, &names(3));
        let mut quiet = FleetBalance::new(1.0, 0.0, &names(3));
        for i in 0..30 {
            let t = f64::from(i);
            for r in 0..3 {
                busy.push(r, &sample(t, 3.0, 0.95, f64::from(i)));
                quiet.push(r, &sample(t, 0.0, 0.3, 0.0));
            }
        }
        let b = busy.check();
        assert_eq!(b.status, Status::Pass, "{}", b.message);
        assert!(b.message.contains("busy too"), "{}", b.message);
        let q = quiet.check();
        assert_eq!(q.status, Status::Pass, "{}", q.message);
        assert!(q.message.contains("no replica queued"), "{}", q.message);
    }

    /// A single burst (two moments) is not a pattern.
    #[test]
    fn a_short_burst_passes() {
        let mut fleet = FleetBalance::new(1.0, 0.0, &names(2));
        for i in 0..40 {
            let t = f64::from(i);
            let waiting = if i < 2 { 2.0 } else { 0.0 };
            fleet.push(0, &sample(t, waiting, 0.4, 0.0));
            fleet.push(1, &sample(t, 0.0, 0.1, 0.0));
        }
        assert_eq!(fleet.check().status, Status::Pass);
    }

    /// Two real vLLM servers on two busy cores (fixtures/real/vllm-0.32-cpu/
    /// fleet-one-idle): the loaded one queued in 7 moments, but the idle one's recorder
    /// missed 6 of them; the one compared had it idle. One moment is no pattern, and the
    /// six unseen could have made one: Can't tell, not the pass of a burst.
    #[test]
    fn moments_the_other_recorder_missed_leave_it_unknown() {
        let mut fleet = FleetBalance::new(1.0, 0.0, &names(2));
        for i in 0..40 {
            let t = f64::from(i);
            let waiting = if (10..17).contains(&i) { 4.0 } else { 0.0 };
            fleet.push(0, &sample(t, waiting, 0.01, 0.0));
            if !(11..17).contains(&i) {
                fleet.push(1, &sample(t, 0.0, 0.0, 0.0));
            }
        }
        let r = fleet.check();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert_eq!(r.evidence["busy_moments_not_compared"], 6);
        assert!(r.message.contains("in 7 moment(s)"), "{}", r.message);
    }

    #[test]
    fn one_replica_or_none_cannot_tell() {
        let mut one = FleetBalance::new(1.0, 0.0, &names(1));
        one.push(0, &sample(0.0, 5.0, 0.9, 0.0));
        let r = one.check();
        assert_eq!(r.status, Status::Unknown);
        assert!(r.message.contains("one replica only"), "{}", r.message);
        let unread = FleetBalance::new(1.0, 0.0, &names(2)).check();
        assert_eq!(unread.status, Status::Unknown);
        assert!(unread.message.contains("0 of 2"), "{}", unread.message);
        assert_eq!(
            FleetBalance::new(1.0, 0.0, &[]).check().status,
            Status::Unknown
        );
    }

    /// Without a waiting gauge a replica's queue cannot be seen: never a pass.
    #[test]
    fn a_replica_without_waiting_readings_cannot_tell() {
        let mut fleet = FleetBalance::new(1.0, 0.0, &names(2));
        for i in 0..10 {
            let t = f64::from(i);
            fleet.push(0, &sample(t, 0.0, 0.1, 0.0));
            fleet.push(
                1,
                &SeriesSample {
                    t_wall: t,
                    running: Some(1.0),
                    ..SeriesSample::default()
                },
            );
        }
        let r = fleet.check();
        assert_eq!(r.status, Status::Unknown);
        assert!(r.message.contains("replica r1"), "{}", r.message);
    }

    /// A replica whose KV cache was never read could have had room while another queued:
    /// Can't tell, never a pass. With nothing queued anywhere, there is nothing to place.
    #[test]
    fn a_replica_without_kv_readings_cannot_tell_once_another_queued() {
        let blind = |t: f64| SeriesSample {
            t_wall: t,
            running: Some(0.0),
            waiting: Some(0.0),
            ..SeriesSample::default()
        };
        let mut queued = FleetBalance::new(1.0, 0.0, &names(2));
        let mut quiet = FleetBalance::new(1.0, 0.0, &names(2));
        for i in 0..20 {
            let t = f64::from(i);
            queued.push(0, &sample(t, 6.0, 0.97, f64::from(i)));
            queued.push(1, &blind(t));
            quiet.push(0, &sample(t, 0.0, 0.2, 0.0));
            quiet.push(1, &blind(t));
        }
        let r = queued.check();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert!(
            r.message
                .contains("replica r1 has no KV-cache usage readings"),
            "{}",
            r.message
        );
        assert_eq!(quiet.check().status, Status::Pass);
    }

    /// Recordings that never overlap in time cannot be compared.
    #[test]
    fn recordings_that_do_not_overlap_cannot_tell() {
        let mut fleet = FleetBalance::new(1.0, 0.0, &names(2));
        for i in 0..10 {
            fleet.push(0, &sample(f64::from(i), 4.0, 0.9, 0.0));
            fleet.push(1, &sample(100.0 + f64::from(i), 0.0, 0.1, 0.0));
        }
        let r = fleet.check();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
    }
}
