//! The two clocks a recording carries: wall time (Unix seconds, to line samples up with
//! other tools' logs) and the monotonic clock (nanoseconds, for intervals a wall-clock
//! step cannot bend).

use std::time::{SystemTime, UNIX_EPOCH};

/// Both clocks read at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// Wall clock, Unix seconds.
    pub wall_s: f64,
    /// Monotonic clock (`CLOCK_MONOTONIC`), nanoseconds.
    pub mono_ns: i64,
}

/// What a request's clocks are stored as: the midpoints of the readings before and
/// after, and the time between them (half of it bounds the error of the midpoint).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stamp {
    /// The wall clock's midpoint, Unix seconds.
    pub t_wall: f64,
    /// The monotonic clock's midpoint, nanoseconds.
    pub t_mono_ns: i64,
    /// Seconds between the readings before and after the request.
    pub latency_s: f64,
}

/// Reads both clocks, monotonic first and last around the wall clock so that the pair
/// is as close as two calls can be.
pub fn now() -> Reading {
    Reading {
        mono_ns: monotonic_ns(),
        wall_s: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
    }
}

/// The stamp of a request whose clocks were read just `before` and just `after` it.
pub fn midpoint(before: Reading, after: Reading) -> Stamp {
    Stamp {
        t_wall: (before.wall_s + after.wall_s) / 2.0,
        // Integer division, floored, as the Python tool's `//`.
        t_mono_ns: (before.mono_ns + after.mono_ns).div_euclid(2),
        latency_s: (after.mono_ns - before.mono_ns) as f64 / 1e9,
    }
}

/// CLOCK_MONOTONIC in nanoseconds since boot: the same clock the Python tool's
/// `time.monotonic_ns()` reads, so its recordings and ours share a time base.
#[cfg(unix)]
pub fn monotonic_ns() -> i64 {
    use nix::time::{clock_gettime, ClockId};
    match clock_gettime(ClockId::CLOCK_MONOTONIC) {
        Ok(t) => t.tv_sec() * 1_000_000_000 + t.tv_nsec(),
        // clock_gettime(CLOCK_MONOTONIC) cannot fail on Linux; the fallback keeps the
        // clock monotonic whatever happens.
        Err(_) => fallback_ns(),
    }
}

#[cfg(not(unix))]
pub fn monotonic_ns() -> i64 {
    fallback_ns()
}

/// Nanoseconds since the first call: monotonic, but not comparable across processes.
fn fallback_ns() -> i64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static START: OnceLock<Instant> = OnceLock::new();
    let start = *START.get_or_init(Instant::now);
    i64::try_from(start.elapsed().as_nanos()).unwrap_or(i64::MAX)
}

/// The two clocks read together now, as the anchor a file's header carries: every time
/// in the file is placed on the wall clock through it.
pub fn anchor_now() -> inferlint_core::model::traces::ClockAnchor {
    let now = now();
    inferlint_core::model::traces::ClockAnchor {
        t_wall: now.wall_s,
        t_mono_ns: now.mono_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn midpoints_and_latency() {
        let s = midpoint(
            Reading {
                wall_s: 100.0,
                mono_ns: 1_000,
            },
            Reading {
                wall_s: 100.5,
                mono_ns: 500_001_001,
            },
        );
        assert_eq!(s.t_wall, 100.25);
        assert_eq!(s.t_mono_ns, 250_001_000);
        assert_eq!(s.latency_s, 0.500_000_001);
    }

    #[test]
    fn the_monotonic_clock_never_goes_back() {
        let a = monotonic_ns();
        let b = monotonic_ns();
        assert!(a > 0 && b >= a);
    }
}
