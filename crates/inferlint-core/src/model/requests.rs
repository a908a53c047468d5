//! Each request of the load, lined up with the server's recording.
//!
//! The load tools stamp their requests on one of two clocks: the wall clock (GuideLLM,
//! AIPerf, GenAI-Perf) or the host's monotonic clock (`time.perf_counter()` on Linux:
//! `vllm bench serve`, inference-perf), which is the clock inferlint's snapshots and
//! recordings also carry. Lined up, a request's send, first token and end sit on the same
//! axis as the server's running and waiting gauges: seconds from the recording's first
//! sample, the axis the report draws.
//!
//! A monotonic clock is only shared by programs on one host, and a wall clock can be set
//! differently on two hosts, so the times are trusted only when every request falls inside
//! the recording: a load tool run on another machine, or a recording of another run, gives
//! no timeline rather than a wrong one.

use crate::judging::checks::series::SeriesStats;
use crate::model::client::{ClientAccount, RequestClock, RequestOutcome};
use crate::model::Snapshot;
use crate::story::fmt;

/// One request on the recording's axis: seconds from its first sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestTimes {
    /// The request's place in the account's records.
    pub index: usize,
    /// How it ended.
    pub outcome: Option<RequestOutcome>,
    /// When the tool meant to send it (a slot freed, its schedule), where it says.
    pub scheduled: Option<f64>,
    /// When it was sent, seconds on the recording's clock.
    pub sent: f64,
    /// When its first token came.
    pub first_token: Option<f64>,
    /// When it ended.
    pub end: Option<f64>,
}

impl RequestTimes {
    /// Seconds from send to first token.
    pub fn ttft(&self) -> Option<f64> {
        Some(self.first_token? - self.sent)
    }
}

/// The requests lined up with the recording, in send order.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestTimeline {
    /// Each request, in sending order.
    pub requests: Vec<RequestTimes>,
    /// The clock the requests' times were on.
    pub clock: RequestClock,
    /// The recording's span, seconds.
    pub span_s: f64,
}

impl RequestTimeline {
    /// The first and last send.
    pub fn sent_range(&self) -> Option<(f64, f64)> {
        let first = self.requests.first()?.sent;
        let last = self.requests.last()?.sent;
        Some((first, last))
    }
}

/// Seconds the requests may stray outside the recording and still be trusted: a reading
/// is taken over a scrape's latency, and the recorder samples every quarter second.
const SLACK_S: f64 = 1.0;

/// Lines the account's requests up with the recording; `Err` says why they cannot be.
pub fn line_up(
    account: &ClientAccount,
    series: &SeriesStats,
    before: Option<&Snapshot>,
    after: Option<&Snapshot>,
) -> Result<RequestTimeline, String> {
    let clock = account
        .clock
        .ok_or("the load tool's records carry no time of day")?;
    if account.requests.iter().all(|r| r.sent_s.get().is_none()) {
        return Err("the load tool's records carry no send times".into());
    }
    let span_s = series
        .span_s()
        .filter(|s| s.is_finite() && *s > 0.0)
        .ok_or("the recording has no span")?;
    let to_axis = axis(clock, series, before.or(after))?;
    let mut requests: Vec<RequestTimes> = account
        .requests
        .iter()
        .enumerate()
        .filter_map(|(index, r)| {
            let sent = to_axis(r.sent_s.get()?);
            Some(RequestTimes {
                index,
                outcome: r.outcome,
                scheduled: r.scheduled_s.get().map(&to_axis),
                sent,
                first_token: r.first_token_at().map(&to_axis),
                end: r.end_at().map(&to_axis),
            })
        })
        .filter(|t| t.sent.is_finite())
        .collect();
    requests.sort_by(|a, b| a.sent.total_cmp(&b.sent));
    let first = requests.first().map_or(0.0, |r| r.sent);
    let last = requests
        .iter()
        .map(|r| r.end.unwrap_or(r.sent))
        .fold(f64::NEG_INFINITY, f64::max);
    let slack = SLACK_S.max(span_s * 0.02);
    if first < -slack || last > span_s + slack {
        return Err(format!(
            "the requests' times ({} s to {} s) fall outside the recording (0 to {} s): the load tool's clock is not the recording's",
            fmt::g((first * 10.0).round() / 10.0),
            fmt::g((last * 10.0).round() / 10.0),
            fmt::g((span_s * 10.0).round() / 10.0)
        ));
    }
    Ok(RequestTimeline {
        requests,
        clock,
        span_s,
    })
}

/// The conversion from the tool's clock to the recording's axis.
fn axis(
    clock: RequestClock,
    series: &SeriesStats,
    reading: Option<&Snapshot>,
) -> Result<impl Fn(f64) -> f64, String> {
    let first_wall = series.first_t_wall.ok_or("the recording has no samples")?;
    // The axis is monotonic when every sample carries that clock, else wall.
    let first_mono = series
        .first_t_mono_ns
        .filter(|_| series.all_mono)
        .map(|ns| ns as f64 / 1e9);
    let offset = match (clock, first_mono) {
        (RequestClock::Monotonic, Some(origin)) => origin,
        (RequestClock::Monotonic, None) => {
            // Through a reading that carries both clocks.
            let snapshot = reading.ok_or(
                "the recording has no monotonic clock and no reading pairs it with the wall clock",
            )?;
            let (Some(mono), Some(wall)) = (snapshot.t_mono_ns, snapshot.t_wall) else {
                return Err("no reading carries both clocks".into());
            };
            mono as f64 / 1e9 - wall + first_wall
        }
        // The first sample carries both clocks: the wall axis starts at its wall time.
        (RequestClock::Unix, _) => first_wall,
    };
    Ok(move |t: f64| t - offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::client::{ClientRequest, LoadTool};
    use crate::model::SeriesSample;

    fn series(first_wall: f64, first_mono_s: f64, seconds: usize) -> SeriesStats {
        let mut stats = SeriesStats::new();
        for i in 0..=seconds * 4 {
            stats.push(&SeriesSample {
                t_wall: first_wall + i as f64 * 0.25,
                t_mono_ns: Some(((first_mono_s + i as f64 * 0.25) * 1e9) as i64),
                running: Some(1.0),
                ..SeriesSample::default()
            });
        }
        stats
    }

    fn account(clock: RequestClock, sends: &[f64]) -> ClientAccount {
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        account.clock = Some(clock);
        account.requests = sends
            .iter()
            .map(|s| ClientRequest {
                outcome: Some(RequestOutcome::Completed),
                sent_s: Some(*s).into(),
                ttft_s: Some(0.5).into(),
                latency_s: Some(2.0).into(),
                ..ClientRequest::default()
            })
            .collect();
        account
    }

    #[test]
    fn both_clocks_land_on_the_recordings_axis() {
        let stats = series(1_700_000_000.0, 5_000.0, 20);
        let mono = line_up(
            &account(RequestClock::Monotonic, &[5_003.0, 5_001.0]),
            &stats,
            None,
            None,
        )
        .unwrap();
        assert_eq!(mono.requests[0].sent, 1.0);
        assert_eq!(mono.requests[0].first_token, Some(1.5));
        assert_eq!(mono.requests[1].end, Some(5.0));
        let wall = line_up(
            &account(RequestClock::Unix, &[1_700_000_002.0]),
            &stats,
            None,
            None,
        )
        .unwrap();
        assert_eq!(wall.requests[0].sent, 2.0);
    }

    /// A load tool on another host (or a recording of another run) gives no timeline.
    #[test]
    fn times_outside_the_recording_are_refused() {
        let stats = series(1_700_000_000.0, 5_000.0, 20);
        let e = line_up(
            &account(RequestClock::Monotonic, &[900.0]),
            &stats,
            None,
            None,
        )
        .unwrap_err();
        assert!(e.contains("fall outside the recording"), "{e}");
    }
}
