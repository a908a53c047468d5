//! The requests in flight of a recording against the room its server had, folded one
//! sample at a time into [`FlightStats`]: what T17 reads to tell a client that kept fewer
//! open from a server that could take no more.

use std::collections::BTreeMap;

use crate::model::SeriesSample;

/// Why a sample's server could not have run another request, or that it could.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Room {
    /// Nothing waited and the cache had room for one more request.
    Free,
    /// Requests waited.
    Queue,
    /// Nothing waited, but the cache had no room for one more request.
    CacheFull,
    /// Nothing waited, and the recording has no KV reading.
    CacheUnknown,
}

/// Whether a cache `usage` (0 to 1) used by `running` requests has room for one more
/// request of their average size: the free share is at least the share one holds.
pub fn cache_has_room(usage: f64, running: f64) -> bool {
    if running <= 0.0 {
        return usage < 1.0;
    }
    1.0 - usage + 1e-9 >= usage / running
}

/// The room one sample shows, or `None` without running and waiting readings.
pub fn room_of(sample: &SeriesSample) -> Option<(u32, u32, Room)> {
    let running = sample.running.filter(|r| r.is_finite() && *r >= 0.0)?;
    let waiting = sample.waiting.filter(|w| w.is_finite() && *w >= 0.0)?;
    let in_flight = (running + waiting).min(u32::MAX as f64) as u32;
    let room = if waiting > 0.0 {
        Room::Queue
    } else {
        match sample.kv_usage.filter(|u| u.is_finite()) {
            Some(u) if cache_has_room(u, running) => Room::Free,
            Some(_) => Room::CacheFull,
            None => Room::CacheUnknown,
        }
    };
    Some((in_flight, running.min(u32::MAX as f64) as u32, room))
}

/// Samples by (requests in flight, requests running) and the room the server had, folded
/// one sample at a time. Real recordings have a few hundred distinct keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlightStats {
    counts: BTreeMap<(u32, u32, Room), usize>,
}

impl FlightStats {
    /// Folds one sample in.
    pub fn push(&mut self, sample: &SeriesSample) {
        if let Some(key) = room_of(sample) {
            *self.counts.entry(key).or_insert(0) += 1;
        }
    }

    /// Adds the counts of a later stretch of the series, folded on its own.
    pub fn merge(&mut self, right: FlightStats) {
        for (key, n) in right.counts {
            *self.counts.entry(key).or_insert(0) += n;
        }
    }

    /// Requests running on average over the samples with at least `in_flight` requests at
    /// the server (running and waiting): a closed loop's saturated middle, without the
    /// ramp before its load has opened every request and the tail once it has sent its
    /// last. `None` when no sample held that many.
    pub fn mean_running_with_at_least(&self, in_flight: u64) -> Option<f64> {
        let (mut sum, mut count) = (0.0, 0usize);
        for (&(f, running, _), &n) in &self.counts {
            if u64::from(f) >= in_flight {
                sum += f64::from(running) * n as f64;
                count += n;
            }
        }
        (count > 0).then(|| sum / count as f64)
    }

    /// Samples with fewer than `requested` in flight (and at least one), by room, where the
    /// running count was below `cap`.
    pub(crate) fn below(&self, requested: u64, cap: Option<u64>) -> BTreeMap<Room, usize> {
        let mut by_room = BTreeMap::new();
        for (&(in_flight, running, room), &n) in &self.counts {
            if u64::from(in_flight) >= requested || in_flight == 0 {
                continue;
            }
            let room = match cap {
                Some(cap) if u64::from(running) >= cap => Room::Queue,
                _ => room,
            };
            *by_room.entry(room).or_insert(0) += n;
        }
        by_room
    }

    /// The rooms of the samples with exactly `in_flight` requests in flight.
    pub(crate) fn at(&self, in_flight: u32, cap: Option<u64>) -> BTreeMap<Room, usize> {
        let mut by_room = BTreeMap::new();
        for (&(f, running, room), &n) in &self.counts {
            if f != in_flight {
                continue;
            }
            let room = match cap {
                Some(cap) if u64::from(running) >= cap => Room::Queue,
                _ => room,
            };
            *by_room.entry(room).or_insert(0) += n;
        }
        by_room
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sweep's c04 as recorded: the load tool's single test request first (1 in
    /// flight), then 4 kept at the server until the last wave drains (3, 2, 1): the mean
    /// where 4 were at the server is 4, whatever the ramp and tail; a server that left
    /// some of them waiting ran fewer there.
    #[test]
    fn the_mean_running_where_the_load_kept_its_concurrency() {
        let sample = |running: f64, waiting: f64| SeriesSample {
            running: Some(running),
            waiting: Some(waiting),
            ..SeriesSample::default()
        };
        let mut stats = FlightStats::default();
        for _ in 0..15 {
            stats.push(&sample(1.0, 0.0));
        }
        for _ in 0..34 {
            stats.push(&sample(4.0, 0.0));
        }
        for r in [3.0, 2.0, 1.0] {
            stats.push(&sample(r, 0.0));
        }
        assert_eq!(stats.mean_running_with_at_least(4), Some(4.0));
        stats.push(&sample(2.0, 2.0));
        assert_eq!(stats.mean_running_with_at_least(4), Some(138.0 / 35.0));
        assert_eq!(stats.mean_running_with_at_least(5), None);
    }
}
