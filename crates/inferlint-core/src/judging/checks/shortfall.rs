//! T17: the client kept fewer requests in flight than it was asked to, while the server
//! had room for more.
//!
//! T8 says the server never ran the requested concurrency; it cannot tell a server that
//! would not run more from a client that did not send more. The server shows which: a
//! request the client sent is either running or waiting, so `running + waiting` is what
//! the client had open (less the few in transit). When that stayed below the concurrency
//! asked for while nothing waited, the KV cache had room for another request and the
//! running count was below the server's cap, the server would have run more: the
//! shortfall is the client's.
//!
//! The KV room is counted the way the pool is: the gauge is a share of blocks (vLLM,
//! TensorRT-LLM) or tokens (SGLang), so "room for one more" is a free share at least the
//! share one running request holds. With 42 blocks of 784 tokens, 93% used by 10
//! requests leaves 3 blocks while a request holds 4: the cache is full although the gauge
//! reads below 100%.

use std::collections::BTreeMap;

use crate::engine::EngineDescriptor;
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::client::ClientAccount;
use crate::model::requests::RequestTimeline;
use crate::model::BootFacts;
use crate::story::fmt;

use super::series::SeriesStats;

/// The share of the client's sending window during which it may hold fewer than asked
/// (a finished request's slot is refilled a few milliseconds later).
pub const SHORT_SHARE: f64 = 0.1;

pub use super::flight::{cache_has_room, room_of, FlightStats, Room};

/// What the client's own records say about how many it kept open.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientOpen {
    /// The most requests open at once.
    pub most_open: usize,
    /// The share of its sending window (from when it first had the number asked for open
    /// to its last send) with fewer open than asked for.
    pub short_share: f64,
    /// The sending window, seconds.
    pub window_s: f64,
}

/// How many requests the client had open, from its records' send and end times. The
/// sending window starts when the client first had `requested` open (a load opens its
/// first requests one after another within milliseconds) and ends at its last send (after
/// it, fewer open is the run's tail).
pub fn client_open(timeline: &RequestTimeline, requested: u64) -> Option<ClientOpen> {
    let mut events: Vec<(f64, i32)> = Vec::new();
    for r in &timeline.requests {
        let end = r.end?;
        if !(end.is_finite() && end >= r.sent) {
            return None;
        }
        events.push((r.sent, 1));
        events.push((end, -1));
    }
    if events.is_empty() {
        return None;
    }
    // An end before a send at the same instant: a slot refilled at once is not two open.
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (_, last_sent) = timeline.sent_range()?;
    let mut open: i64 = 0;
    let mut most = 0i64;
    let mut reached: Option<f64> = None;
    let mut short = 0.0;
    let mut previous = f64::NEG_INFINITY;
    for &(t, delta) in &events {
        if let Some(start) = reached {
            let (from, to) = (previous.max(start), t.min(last_sent));
            if to > from && (open as u64) < requested {
                short += to - from;
            }
        }
        previous = t;
        open += i64::from(delta);
        most = most.max(open);
        if reached.is_none() && open as u64 >= requested {
            reached = Some(t);
        }
    }
    let window_s = reached.map_or(0.0, |start| (last_sent - start).max(0.0));
    Some(ClientOpen {
        most_open: most.max(0) as usize,
        short_share: if window_s > 0.0 {
            short / window_s
        } else {
            0.0
        },
        window_s,
    })
}

/// The inputs of T17.
#[derive(Debug, Clone, Copy)]
pub struct ShortfallInputs<'a> {
    /// The engine's table.
    pub engine: &'a EngineDescriptor,
    /// The series, folded.
    pub stats: &'a SeriesStats,
    /// The concurrency the load asked for.
    pub requested: u64,
    /// The boot log's facts: the running cap.
    pub boot: Option<&'a BootFacts>,
    /// The load tool's account, and its requests lined up with the recording where they
    /// can be.
    pub client: Option<&'a ClientAccount>,
    /// The load tool's requests placed on the recording's clock.
    pub timeline: Option<&'a RequestTimeline>,
}

fn t17(status: Status, message: String) -> CheckResult {
    CheckResult::new(Tripwire::T17, status, message)
}

/// The running cap the server's log states, times its parallel copies when it says.
fn running_cap(boot: Option<&BootFacts>) -> Option<u64> {
    boot.and_then(|b| b.running_cap)
}

/// The words for the room samples had: `a queue`, `a full cache`.
fn room_words(rooms: &BTreeMap<Room, usize>) -> String {
    let mut words = Vec::new();
    if rooms.contains_key(&Room::Queue) {
        words.push("requests waiting or the running cap reached");
    }
    if rooms.contains_key(&Room::CacheFull) {
        words.push("a KV cache with no room for one more request");
    }
    if rooms.contains_key(&Room::CacheUnknown) {
        words.push("no KV reading");
    }
    words.join(", or ")
}

/// T17: whether the client kept fewer requests in flight than asked for while the server
/// had room for more.
pub fn client_shortfall(inputs: &ShortfallInputs<'_>) -> CheckResult {
    let n = inputs.requested;
    let with = |r: CheckResult| r.with("requested", n);
    if n == 0 {
        return with(t17(
            Status::Unknown,
            "the concurrency asked for is 0; a load keeps at least 1 request open".into(),
        ));
    }
    if let Some(rate) = inputs
        .client
        .and_then(|c| c.request_rate)
        .filter(|r| r.is_finite() && *r > 0.0)
    {
        return with(
            t17(
                Status::Pass,
                format!(
                    "the load was paced at {} requests/s: {n} is the most it may keep open, not a number it was to hold",
                    fmt::g(rate)
                ),
            )
            .with("request_rate", rate),
        );
    }
    // What the load sent: its own count, else every request it accounts for. A file that
    // counts no failure (SGLang's bench_serving without its details) cannot say.
    let sent = inputs
        .client
        .and_then(|c| {
            c.sent.or_else(|| {
                Some(c.completed? + c.failed_count()? + c.incomplete_count().unwrap_or(0))
            })
        })
        .filter(|s| *s >= 0);
    if let Some(sent) = sent.filter(|s| (*s as u64) < n) {
        return with(
            t17(
                Status::Fail,
                format!(
                    "the load sent {sent} requests in all, fewer than the {n} it was to keep open at once: the run never had {n} in flight"
                ),
            )
            .with("sent", sent),
        );
    }
    let cap = running_cap(inputs.boot);
    let flight = &inputs.stats.flight;
    // The client's own records, where they line up with the recording.
    if let Some(open) = inputs.timeline.and_then(|t| client_open(t, n)) {
        let evidence = |r: CheckResult| {
            with(r)
                .with("client_most_open", open.most_open)
                .with("client_short_share", open.short_share)
                .with("sending_window_s", open.window_s)
        };
        let short = (open.most_open as u64) < n || open.short_share > SHORT_SHARE;
        if !short {
            return evidence(t17(
                Status::Pass,
                format!(
                    "the load kept {n} requests open while it sent: its records show {} at most, and fewer than {n} for {} of its sending time",
                    open.most_open,
                    fmt::percent(open.short_share, 1)
                ),
            ));
        }
        let below = flight.below(n, cap);
        let what = if (open.most_open as u64) < n {
            format!(
                "the load never had more than {} of the {n} requests it was asked for open at once",
                open.most_open
            )
        } else {
            format!(
                "the load had fewer than {n} requests open for {} of its sending time",
                fmt::percent(open.short_share, 1)
            )
        };
        return match below.get(&Room::Free) {
            Some(samples) => evidence(
                t17(
                    Status::Fail,
                    format!(
                        "{what}, while the server had room for more ({samples} sample{} with nothing waiting, room in the KV cache and fewer running than its cap): the shortfall is the client's",
                        fmt::plural(*samples as f64)
                    ),
                )
                .with("samples_with_room", *samples),
            ),
            None if below.is_empty() && inputs.stats.running_readings == 0 => evidence(t17(
                Status::Unknown,
                format!(
                    "{what}; the recording has no running or waiting readings to show whether the server had room"
                ),
            )),
            None => evidence(t17(
                Status::Warn,
                format!(
                    "{what}, but whenever fewer were in flight the server had {}: it would not have run more",
                    room_words(&below)
                ),
            )),
        };
    }
    if inputs.stats.running_readings == 0 {
        let mut message = "the recording has no num_requests_running samples".to_owned();
        if let Some(hint) = inputs.engine.gauges_hint {
            message.push_str("; ");
            message.push_str(hint);
        }
        return with(t17(Status::Unknown, message));
    }
    let Some(peak) = inputs.stats.peak_in_flight else {
        return with(t17(
            Status::Unknown,
            "the recording has no waiting readings, so the requests in flight are unknown".into(),
        ));
    };
    let peak_evidence = |r: CheckResult| with(r).with("peak_in_flight", peak);
    if peak >= n as f64 {
        return peak_evidence(t17(
            Status::Pass,
            format!(
                "the server saw {} requests in flight (running and waiting), the {n} asked for",
                fmt::g(peak)
            ),
        ));
    }
    if inputs.engine.gauges_lag {
        return peak_evidence(t17(
            Status::Unknown,
            format!(
                "the recording never showed more than {} of {n} in flight; {} updates its gauges only when a request completes, so it may have had more in between",
                fmt::g(peak),
                inputs.engine.name
            ),
        ));
    }
    if let Some(failed) = inputs
        .client
        .and_then(ClientAccount::failed_count)
        .filter(|f| *f > 0)
    {
        return peak_evidence(
            t17(
                Status::Unknown,
                format!(
                    "the server never had more than {} of {n} in flight, but {failed} requests failed: a failed request leaves the server at once, so the recording cannot show how many the client kept open (the load tool's per-request records can)",
                    fmt::g(peak)
                ),
            )
            .with("failed", failed),
        );
    }
    let at_peak = flight.at(peak as u32, cap);
    match at_peak.get(&Room::Free) {
        Some(samples) => peak_evidence(
            t17(
                Status::Fail,
                format!(
                    "the client never had more than {} of the {n} requests it was asked for in flight, while the server had room for more ({samples} sample{} at that peak with nothing waiting, room in the KV cache and fewer running than its cap): the shortfall is the client's, not the server's",
                    fmt::g(peak),
                    fmt::plural(*samples as f64)
                ),
            )
            .with("samples_with_room", *samples),
        ),
        None => peak_evidence(t17(
            Status::Warn,
            format!(
                "the client never had more than {} of the {n} requests it was asked for in flight, but at that peak the server had {}: it would not have run more",
                fmt::g(peak),
                room_words(&at_peak)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{TRTLLM, VLLM};
    use crate::model::client::{ClientRequest, LoadTool, RequestClock, RequestOutcome};
    use crate::model::requests::RequestTimes;
    use crate::model::SeriesSample;

    fn sample(running: f64, waiting: f64, usage: f64) -> SeriesSample {
        SeriesSample {
            t_wall: 1.0,
            running: Some(running),
            waiting: Some(waiting),
            kv_usage: Some(usage),
            ..SeriesSample::default()
        }
    }

    fn stats(samples: &[SeriesSample]) -> SeriesStats {
        let mut s = SeriesStats::new();
        samples.iter().for_each(|x| s.push(x));
        s
    }

    fn with_client(
        engine: &EngineDescriptor,
        stats: &SeriesStats,
        requested: u64,
        client: &ClientAccount,
    ) -> CheckResult {
        client_shortfall(&ShortfallInputs {
            engine,
            stats,
            requested,
            boot: None,
            client: Some(client),
            timeline: None,
        })
    }

    fn check(stats: &SeriesStats, requested: u64) -> CheckResult {
        client_shortfall(&ShortfallInputs {
            engine: &VLLM,
            stats,
            requested,
            boot: None,
            client: None,
            timeline: None,
        })
    }

    /// The example: at 93% of 42 blocks with 10 running, 3 blocks are free and a
    /// request holds about 4: full. At 50% with 10 running there is room.
    #[test]
    fn cache_room_is_counted_in_blocks() {
        assert!(!cache_has_room(39.0 / 42.0, 10.0));
        assert!(cache_has_room(0.5, 10.0));
        assert!(cache_has_room(0.0, 0.0));
        assert!(!cache_has_room(1.0, 0.0));
    }

    #[test]
    fn a_client_that_never_sent_the_concurrency_while_the_server_had_room_fails() {
        let s = stats(&[
            sample(8.0, 0.0, 0.3),
            sample(8.0, 0.0, 0.35),
            sample(0.0, 0.0, 0.0),
        ]);
        let r = check(&s, 32);
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        assert!(
            r.message.contains("never had more than 8 of the 32"),
            "{}",
            r.message
        );
    }

    #[test]
    fn a_server_that_queued_the_load_passes_t17() {
        // vLLM 0.28 live: 10 running, 22 waiting: the client had all 32 open.
        let s = stats(&[sample(10.0, 22.0, 0.95), sample(7.0, 25.0, 0.98)]);
        assert_eq!(check(&s, 32).status, Status::Pass);
    }

    #[test]
    fn fewer_in_flight_with_a_full_cache_is_not_the_clients_doing() {
        let s = stats(&[sample(10.0, 0.0, 39.0 / 42.0)]);
        let r = check(&s, 32);
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!(r.message.contains("no room for one more"), "{}", r.message);
    }

    #[test]
    fn a_paced_load_and_a_lagging_gauge_are_not_failures() {
        let s = stats(&[sample(3.0, 0.0, 0.1)]);
        let mut paced = ClientAccount::new(LoadTool::VllmBench);
        paced.request_rate = Some(2.0);
        let r = with_client(&VLLM, &s, 32, &paced);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        let r = client_shortfall(&ShortfallInputs {
            engine: &TRTLLM,
            stats: &s,
            requested: 32,
            boot: None,
            client: None,
            timeline: None,
        });
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
    }

    /// A load whose requests fail at once keeps its slots refilled while the server sees
    /// few: the recording alone cannot blame the client.
    #[test]
    fn failures_make_the_recording_alone_undecided() {
        let s = stats(&[sample(3.0, 0.0, 0.1)]);
        let mut failing = ClientAccount::new(LoadTool::VllmBench);
        failing.sent = Some(100);
        failing.failed = Some(40);
        let r = with_client(&VLLM, &s, 32, &failing);
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
    }

    fn timeline(spans: &[(f64, f64)]) -> RequestTimeline {
        RequestTimeline {
            requests: spans
                .iter()
                .enumerate()
                .map(|(index, &(sent, end))| RequestTimes {
                    index,
                    outcome: Some(RequestOutcome::Completed),
                    scheduled: None,
                    sent,
                    first_token: None,
                    end: Some(end),
                })
                .collect(),
            clock: RequestClock::Monotonic,
            span_s: 100.0,
        }
    }

    #[test]
    fn the_clients_records_show_how_many_it_kept_open() {
        // Closed loop at 2: each end refills its slot at once.
        let full = timeline(&[(0.0, 2.0), (0.0, 3.0), (2.0, 5.0), (3.0, 6.0), (5.0, 8.0)]);
        let open = client_open(&full, 2).unwrap();
        assert_eq!(open.most_open, 2);
        assert_eq!(open.short_share, 0.0);
        // Only one at a time although 2 were asked for.
        let serial = timeline(&[(0.0, 2.0), (2.0, 4.0), (4.0, 6.0)]);
        let open = client_open(&serial, 2).unwrap();
        assert_eq!(open.most_open, 1);
        // 32 sent one after another within 31 ms: the ramp is not a shortfall.
        let burst: Vec<(f64, f64)> = (0..32).map(|i| (f64::from(i) * 0.001, 50.0)).collect();
        let open = client_open(&timeline(&burst), 32).unwrap();
        assert_eq!((open.most_open, open.short_share), (32, 0.0));
        // It reached 2, then held 1 for an eighth of its sending time.
        let sagging = timeline(&[(0.0, 1.0), (0.0, 4.0), (2.0, 8.0), (4.0, 9.0), (8.0, 9.0)]);
        let open = client_open(&sagging, 2).unwrap();
        assert_eq!(open.most_open, 2);
        assert!((open.short_share - 0.125).abs() < 1e-9, "{open:?}");
        let s = stats(&[sample(1.0, 0.0, 0.1)]);
        let mut account = ClientAccount::new(LoadTool::GuideLlm);
        account.requests = vec![ClientRequest::default(); 3];
        let r = client_shortfall(&ShortfallInputs {
            engine: &VLLM,
            stats: &s,
            requested: 2,
            boot: None,
            client: Some(&account),
            timeline: Some(&serial),
        });
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        assert_eq!(r.evidence["client_most_open"], 1);
    }

    /// A result file that counts only completed requests (20 of 32 came back) cannot say
    /// how many were sent: the failures it does not count were sent too.
    #[test]
    fn completed_alone_is_not_what_the_load_sent() {
        let s = stats(&[sample(32.0, 0.0, 0.5)]);
        let mut account = ClientAccount::new(LoadTool::SglangBench);
        account.completed = Some(20);
        let r = with_client(&VLLM, &s, 32, &account);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
    }

    #[test]
    fn a_load_with_fewer_requests_than_its_concurrency_never_had_it() {
        let s = stats(&[sample(16.0, 0.0, 0.2)]);
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        account.sent = Some(16);
        let r = with_client(&VLLM, &s, 32, &account);
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        assert!(r.message.starts_with("the load sent 16 requests in all"));
    }
}
