//! The sampling schedule and how well a recording kept to it.
//!
//! Slot `k` is due at `start + k × interval` on the monotonic clock. The time a sample is
//! taken never moves the slots after it, so lateness cannot add up into drift. A scrape
//! that runs past the next slot makes that slot (and any after it that also passed)
//! missed: the sampler skips them and says so in a gap record, rather than taking a burst
//! of late samples to catch up.

/// A fixed-rate schedule on the monotonic clock, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// Slot 0, on the monotonic clock.
    pub start_ns: i64,
    /// Time between two slots (at least 1).
    pub interval_ns: i64,
}

/// The slot to sample next, after the slots skipped to reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Next {
    /// The slot's number, from 0 at `start_ns`.
    pub slot: u64,
    /// Slots between the last one done and `slot` that passed unsampled.
    pub missed: u64,
}

impl Schedule {
    /// A schedule from `start_ns`, one slot every `interval_ns` (at least 1).
    pub fn new(start_ns: i64, interval_ns: i64) -> Schedule {
        Schedule {
            start_ns,
            interval_ns: interval_ns.max(1),
        }
    }

    /// When slot `k` is due.
    pub fn due_ns(&self, slot: u64) -> i64 {
        self.start_ns.saturating_add(
            self.interval_ns
                .saturating_mul(i64::try_from(slot).unwrap_or(i64::MAX)),
        )
    }

    /// A slot is still taken, late, when `now` is within a tenth of an interval of it;
    /// later than that it is missed.
    pub fn grace_ns(&self) -> i64 {
        self.interval_ns / 10
    }

    /// The slot after `done` to sample, given that it is now `now_ns`: the next one, or,
    /// when the scrape of `done` ran past it by more than the grace, the first slot not
    /// yet due (or just due).
    pub fn next_after(&self, done: u64, now_ns: i64) -> Next {
        let next = done + 1;
        let late = now_ns - self.due_ns(next);
        if late <= self.grace_ns() {
            return Next {
                slot: next,
                missed: 0,
            };
        }
        // The first slot whose due time plus the grace is still ahead of `now`.
        let behind = (late - self.grace_ns()) as u64;
        let skip = behind.div_ceil(self.interval_ns as u64);
        Next {
            slot: next + skip,
            missed: skip,
        }
    }

    /// Whether slot `k` is due before `end_ns` (the end of a `--duration`).
    pub fn due_before(&self, slot: u64, end_ns: Option<i64>) -> bool {
        end_ns.is_none_or(|end| self.due_ns(slot) < end)
    }
}

/// How well a recording kept to its schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScheduleStats {
    /// Samples measured.
    pub samples: usize,
    /// Slots the recording spans (last slot − first slot + 1).
    pub slots: u64,
    /// The mean interval between samples, over the nominal interval, minus 1: 0.001 is
    /// 0.1% slow.
    pub drift: f64,
    /// Distance of a sample from its slot, in milliseconds.
    pub p50_ms: f64,
    /// Its 99th percentile, in milliseconds.
    pub p99_ms: f64,
    /// Its largest, in milliseconds.
    pub max_ms: f64,
}

/// Measures a recording's times (monotonic ns, in order) against a schedule of
/// `interval_ns`. Each sample is matched to its nearest slot counted from the first
/// sample, so a skipped slot is not counted as drift. The schedule's phase is the median
/// offset of the samples from their slots (the first sample alone would carry its own
/// latency into every distance: it opens the connection), and the drift is the slope of
/// a least-squares line through (slot, time) against the nominal interval. `None` for
/// fewer than two samples or two that share a slot.
pub fn schedule_stats(times_ns: &[i64], interval_ns: i64) -> Option<ScheduleStats> {
    let (&first, &last) = (times_ns.first()?, times_ns.last()?);
    if times_ns.len() < 2 || interval_ns <= 0 {
        return None;
    }
    let interval = interval_ns as f64;
    let slot_of = |t: i64| ((t - first) as f64 / interval).round().max(0.0);
    let last_slot = slot_of(last);
    if last_slot == 0.0 {
        return None;
    }
    let points: Vec<(f64, f64)> = times_ns
        .iter()
        .map(|&t| (slot_of(t), (t - first) as f64))
        .collect();
    let n = points.len() as f64;
    let mean_k = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_t = points.iter().map(|p| p.1).sum::<f64>() / n;
    let spread: f64 = points.iter().map(|p| (p.0 - mean_k).powi(2)).sum();
    let slope = points
        .iter()
        .map(|p| (p.0 - mean_k) * (p.1 - mean_t))
        .sum::<f64>()
        / spread;
    let mut offsets: Vec<f64> = points.iter().map(|(k, t)| t - k * interval).collect();
    offsets.sort_by(f64::total_cmp);
    let phase = offsets[offsets.len() / 2];
    let mut distances: Vec<f64> = offsets.iter().map(|o| (o - phase).abs() / 1e6).collect();
    distances.sort_by(f64::total_cmp);
    let quantile = |q: f64| {
        let i = ((distances.len() - 1) as f64 * q).round() as usize;
        distances[i]
    };
    Some(ScheduleStats {
        samples: times_ns.len(),
        slots: last_slot as u64 + 1,
        drift: slope / interval - 1.0,
        p50_ms: quantile(0.5),
        p99_ms: quantile(0.99),
        max_ms: distances.last().copied().unwrap_or(0.0),
    })
}

/// Drift the way a recorder that sleeps `interval` after each sample suffers it: the
/// mean gap between consecutive samples against the nominal interval, and the largest
/// distance of a gap from it (ms). Used to compare other tools' recordings, which carry
/// no slot numbers.
pub fn interval_stats(times_ns: &[i64], interval_ns: i64) -> Option<(f64, f64)> {
    if times_ns.len() < 2 || interval_ns <= 0 {
        return None;
    }
    let gaps: Vec<i64> = times_ns.windows(2).map(|w| w[1] - w[0]).collect();
    let mean = gaps.iter().sum::<i64>() as f64 / gaps.len() as f64;
    let worst = gaps
        .iter()
        .map(|&g| (g - interval_ns).abs() as f64 / 1e6)
        .fold(0.0, f64::max);
    Some((mean / interval_ns as f64 - 1.0, worst))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    #[test]
    fn slots_are_absolute() {
        let s = Schedule::new(1_000 * MS, 250 * MS);
        assert_eq!(s.due_ns(0), 1_000 * MS);
        assert_eq!(s.due_ns(4), 2_000 * MS);
        // A sample taken 30 ms late does not move the next slot.
        assert_eq!(s.next_after(0, 1_030 * MS), Next { slot: 1, missed: 0 });
        assert_eq!(s.due_ns(1), 1_250 * MS);
    }

    #[test]
    fn a_late_slot_within_the_grace_is_still_taken() {
        let s = Schedule::new(0, 250 * MS);
        // The scrape of slot 0 ended 20 ms after slot 1 was due: take slot 1 late.
        assert_eq!(s.next_after(0, 270 * MS), Next { slot: 1, missed: 0 });
        assert_eq!(s.next_after(0, 275 * MS), Next { slot: 1, missed: 0 });
    }

    #[test]
    fn an_overrun_skips_the_slots_it_passed() {
        let s = Schedule::new(0, 250 * MS);
        // Slot 0's scrape took 600 ms: slots 1 and 2 passed, 3 is next.
        assert_eq!(s.next_after(0, 600 * MS), Next { slot: 3, missed: 2 });
        // Ended just past slot 2's grace: slot 2 is missed too.
        assert_eq!(s.next_after(0, 526 * MS), Next { slot: 3, missed: 2 });
        // Within slot 2's grace: slot 2 is taken late.
        assert_eq!(s.next_after(0, 524 * MS), Next { slot: 2, missed: 1 });
        // A ten-second timeout at 0.25 s.
        assert_eq!(
            s.next_after(7, 7 * 250 * MS + 10_000 * MS),
            Next {
                slot: 47,
                missed: 39
            }
        );
    }

    #[test]
    fn a_fake_clock_run_keeps_to_the_schedule() {
        // Scrapes that take 1..=40 ms, and one that takes 700 ms at slot 10: every slot
        // sampled is on time whatever happened before it.
        let s = Schedule::new(5 * MS, 250 * MS);
        let mut slot = 0;
        let mut taken = vec![];
        let mut missed = 0;
        while s.due_before(slot, Some(s.due_ns(40))) {
            let start = s.due_ns(slot);
            taken.push(start);
            let cost = if slot == 10 {
                700 * MS
            } else {
                (slot as i64 % 40 + 1) * MS
            };
            let next = s.next_after(slot, start + cost);
            missed += next.missed;
            slot = next.slot;
        }
        assert_eq!(missed, 2);
        assert_eq!(taken.len() as u64 + missed, 40);
        let stats = schedule_stats(&taken, 250 * MS).expect("enough samples");
        assert!(stats.drift.abs() < 1e-12, "{}", stats.drift);
        assert_eq!(stats.max_ms, 0.0);
        assert_eq!(stats.slots, 40);
    }

    #[test]
    fn the_end_of_a_duration() {
        let s = Schedule::new(0, 500 * MS);
        let end = Some(2_000 * MS);
        assert!(s.due_before(3, end));
        assert!(!s.due_before(4, end));
        assert!(s.due_before(1_000_000, None));
    }

    #[test]
    fn stats_of_a_drifting_recorder() {
        // Sleeping 250 ms after a 10 ms scrape: every gap is 260 ms.
        let times: Vec<i64> = (0..100).map(|i| i * 260 * MS).collect();
        let (drift, worst) = interval_stats(&times, 250 * MS).expect("enough");
        assert!((drift - 0.04).abs() < 1e-12);
        assert!((worst - 10.0).abs() < 1e-9);
        // And against a schedule, with a skipped slot and a 3 ms late sample.
        let times = [0, 250 * MS, 753 * MS, 1_000 * MS];
        let st = schedule_stats(&times, 250 * MS).expect("enough");
        assert_eq!((st.samples, st.slots), (4, 5));
        // The least-squares slope through the four is 250.3 ms.
        assert!((st.drift - 0.0012).abs() < 1e-9, "{}", st.drift);
        assert!((st.max_ms - 3.0).abs() < 1e-9);
        // A first sample that came late (it opened the connection) does not make every
        // other sample look late.
        let times: Vec<i64> = (0..100)
            .map(|i| i * 250 * MS + if i == 0 { 2 * MS } else { 0 })
            .collect();
        let st = schedule_stats(&times, 250 * MS).expect("enough");
        assert!((st.p99_ms, st.p50_ms) == (0.0, 0.0), "{st:?}");
        assert!(st.drift.abs() < 1e-4);
    }
}
