//! The sampler behind `watch`: one scrape per slot of an absolute schedule, each turned
//! into a series line and written as soon as it is taken.
//!
//! Besides the header and the samples, a recording holds two kinds of record that are
//! not samples (our series reader skips both, by their key):
//! - `{"gap": "REASON", "t_wall": ..., "t_mono_ns": ...}`: a scrape that failed (when it
//!   was tried and why) or slots skipped because a scrape ran past them. A failed scrape
//!   is never written as zeros.
//! - `{"restart": "WHAT MOVED", "t_wall": ..., "t_mono_ns": ...}`: between the last good
//!   scrape and this one a counter went down or a `*_created` stamp moved; recording
//!   goes on, and the samples after it belong to the new process.

use std::future::Future;
use std::io::{self, Write};
use std::time::Duration;

use inferlint_core::judging::checks::counters;
use inferlint_core::model::{
    GpuReading, GpuSampling, PageRequest, SeriesHeader, SeriesSample, Snapshot,
};
use inferlint_core::Engine;
use inferlint_engines::{files, record};
use serde_json::Value;

use crate::clock;
use crate::schedule::Schedule;
use crate::scrape::{Scrape, Scraper};

/// The shortest interval `watch` takes.
pub const MIN_INTERVAL: Duration = Duration::from_millis(50);
/// The longest interval `watch` takes: an hour between readings records nothing a check
/// could use.
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);
/// The longest `--duration`: 30 days, longer than any benchmark run.
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 86_400);
/// Above this share of failed scrapes `watch` ends with a non-zero status: the recording
/// has too many holes for a peak to be trusted (see [`Progress::too_many_failed`]).
pub const MAX_FAILED_SHARE: f64 = 0.1;

/// The last stretch of each wait is slept on the thread, not on tokio's timer, whose
/// one-millisecond wheel wakes up to a millisecond late.
const FINE_SLEEP: Duration = Duration::from_millis(2);

/// How to sample.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchOptions {
    /// Time between two slots of the schedule.
    pub interval: Duration,
    /// Stop after this long; `None` runs until `stop` resolves.
    pub duration: Option<Duration>,
    /// What each scrape after the first asks of the server.
    pub pages: Pages,
}

/// What each scrape after the first asks of the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Pages {
    /// Only the samples a recording reads: narrowed by the server where it honours
    /// `name[]` (prometheus_client), else the whole page read narrowly
    /// ([`Scraper::ask_for_less`]).
    #[default]
    AskForLess,
    /// The whole page, read whole, as the first scrape is.
    Whole,
}

/// The longest the choice of [`Pages::AskForLess`] may take: its requests run after the
/// first scrape and before the schedule of the samples after it starts.
pub const PAGE_CHOICE_AT_MOST: Duration = Duration::from_secs(5);

/// What the recording holds so far (the status line shows it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    /// Samples written.
    pub samples: u64,
    /// Scrapes tried, the first one included (a slot skipped by an overrun is not tried).
    pub attempts: u64,
    /// Scrapes that failed (no answer, an error status, a body that could not be read).
    pub failed: u64,
    /// Scrapes read with some of their lines skipped (not UTF-8, bad syntax).
    pub damaged: u64,
    /// Gap records written.
    pub gaps: u64,
    /// Restarts of the server seen (its counters went back).
    pub restarts: u64,
    /// Slots that passed unsampled (failed scrapes and overruns).
    pub missed_slots: u64,
    /// Requests running at the last sample.
    pub running: Option<f64>,
    /// Requests waiting at the last sample.
    pub waiting: Option<f64>,
    /// KV cache use at the last sample, 0 to 1.
    pub kv_usage: Option<f64>,
    /// The engine's preemption counter (or TensorRT-LLM's paused gauge, below) since
    /// the first sample, across restarts.
    pub preemptions: Option<f64>,
    /// TensorRT-LLM: requests paused for recompute at the last sample.
    pub paused: Option<f64>,
}

impl Progress {
    /// Whether more than [`MAX_FAILED_SHARE`] of the scrapes tried failed.
    pub fn too_many_failed(&self) -> bool {
        self.attempts > 0 && self.failed as f64 > MAX_FAILED_SHARE * self.attempts as f64
    }
}

/// Something the caller may want to show as it happens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event<'a> {
    /// A sample, as written to the file.
    Sample(&'a SeriesSample),
    /// A failed scrape, with the reason written to the file.
    Gap(&'a str),
    /// Slots skipped because a scrape ran past them.
    Missed(&'a str),
    /// The server restarted, and how that showed.
    Restart(&'a str),
    /// The first scrape with lines that could not be read, and what they were; later
    /// ones are only counted ([`Progress::damaged`]).
    Skipped(&'a str),
}

/// What a recorder adds to each sample besides the metrics, and who sees each sample as
/// it is taken. The recorder knows no GPU: the caller reads it ([`Observer::extra`]).
pub trait Observer {
    /// What the recording's header says of GPU readings; `None` writes nothing.
    fn gpu_sampling(&self) -> Option<GpuSampling> {
        None
    }

    /// Readings taken right after a scrape, stored in its sample.
    fn extra(&mut self) -> GpuReading {
        GpuReading::default()
    }

    /// Each sample as written, with the scrape it came from.
    fn sampled(&mut self, _sample: &SeriesSample, _scrape: &Snapshot) {}

    /// The recording ended; `last` is its last good scrape.
    fn ended(&mut self, _last: &Snapshot) {}
}

/// An observer that adds nothing and sees nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}

/// A gap record's line.
pub fn gap_json(reason: &str, t_wall: f64, t_mono_ns: i64) -> String {
    marker_json("gap", reason, t_wall, t_mono_ns)
}

/// A restart record's line.
pub fn restart_json(what: &str, t_wall: f64, t_mono_ns: i64) -> String {
    marker_json("restart", what, t_wall, t_mono_ns)
}

/// `{"KEY": "TEXT", "t_wall": ..., "t_mono_ns": ...}`, spaced as the sample lines are.
fn marker_json(key: &str, text: &str, t_wall: f64, t_mono_ns: i64) -> String {
    format!(
        "{{\"{key}\": {}, \"t_wall\": {}, \"t_mono_ns\": {t_mono_ns}}}",
        Value::from(text),
        Value::from((t_wall * 1e6).round() / 1e6)
    )
}

/// Counts preemptions across restarts: each process's counter from where we first saw
/// it (the first sample, or zero after a restart).
#[derive(Debug, Default)]
struct PreemptionTally {
    before_this_process: f64,
    base: Option<f64>,
    latest: Option<f64>,
}

impl PreemptionTally {
    fn push(&mut self, value: Option<f64>) {
        if let Some(v) = value {
            self.base.get_or_insert(v);
            self.latest = Some(v);
        }
    }

    fn restarted(&mut self) {
        if let (Some(base), Some(latest)) = (self.base, self.latest) {
            self.before_this_process += latest - base;
        }
        self.base = Some(0.0);
        self.latest = None;
    }

    fn so_far(&self) -> Option<f64> {
        match (self.base, self.latest) {
            (Some(base), Some(latest)) => Some(self.before_this_process + latest - base),
            _ => None,
        }
    }
}

/// Writes one line and pushes it to the file at once: a recorder killed after this
/// returns has lost nothing, and one killed during it loses at most this line.
fn put(out: &mut impl Write, line: &str) -> io::Result<()> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    out.write_all(&bytes)?;
    out.flush()
}

/// Maps the monotonic clock onto tokio's, whose instants cannot be built from numbers.
#[derive(Debug, Clone, Copy)]
struct Timebase {
    instant: tokio::time::Instant,
    mono_ns: i64,
}

impl Timebase {
    fn now() -> Timebase {
        Timebase {
            instant: tokio::time::Instant::now(),
            mono_ns: clock::monotonic_ns(),
        }
    }

    fn instant(&self, mono_ns: i64) -> tokio::time::Instant {
        let delta = mono_ns - self.mono_ns;
        if delta >= 0 {
            self.instant + Duration::from_nanos(delta as u64)
        } else {
            self.instant
                .checked_sub(Duration::from_nanos(delta.unsigned_abs()))
                .unwrap_or(self.instant)
        }
    }
}

/// Waits until the monotonic clock reads `due_ns`: on tokio's timer (where a stop can
/// interrupt it) until shortly before, then a short sleep on the thread for the rest.
async fn sleep_until_mono(timebase: &Timebase, due_ns: i64) {
    let coarse = due_ns - FINE_SLEEP.as_nanos() as i64;
    if clock::monotonic_ns() < coarse {
        tokio::time::sleep_until(timebase.instant(coarse)).await;
    }
    let left = due_ns - clock::monotonic_ns();
    if left > 0 {
        std::thread::sleep(Duration::from_nanos(left as u64));
    }
}

/// Records a series: the header and `first` (the scrape that found the engine, taken
/// as slot 0), then one scrape per slot until the duration ends or `stop` resolves.
/// Returns what was recorded; an error only when the file cannot be written.
pub async fn watch<W: Write>(
    scraper: &mut Scraper,
    first: Scrape,
    engine: Engine,
    options: &WatchOptions,
    out: &mut W,
    stop: impl Future<Output = ()>,
    on_event: impl FnMut(Event<'_>, &Progress),
) -> io::Result<Progress> {
    watch_observed(
        scraper,
        first,
        engine,
        options,
        out,
        stop,
        on_event,
        &mut NoObserver,
    )
    .await
}

/// [`watch`], with an [`Observer`] that adds readings to each sample and sees it.
#[expect(
    clippy::too_many_arguments,
    reason = "the recorder's inputs, each of its own kind; a struct would only rename them"
)]
pub async fn watch_observed<W: Write, O: Observer + ?Sized>(
    scraper: &mut Scraper,
    first: Scrape,
    engine: Engine,
    options: &WatchOptions,
    out: &mut W,
    stop: impl Future<Output = ()>,
    on_event: impl FnMut(Event<'_>, &Progress),
    // Generic, so that `watch` (with `NoObserver`) stays `Send` for a caller that spawns
    // the recording on a multi-threaded runtime.
    observer: &mut O,
) -> io::Result<Progress> {
    watch_session(
        scraper,
        first,
        engine,
        options,
        out,
        stop,
        on_event,
        observer,
        StopMidScrape::Gap,
    )
    .await
}

/// What the stop does to a scrape under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopMidScrape {
    /// It is cut short and leaves a gap record, as `watch` and xray record it (the
    /// recording's last slot went unsampled).
    Gap,
    /// It is abandoned without one: the caller ends the recording and takes its after
    /// reading at once, so no slot is lost (a library session).
    NoGap,
}

/// [`watch_observed`], with what a stop mid-scrape leaves said.
#[expect(
    clippy::too_many_arguments,
    reason = "watch_observed's arguments, and what a stop mid-scrape leaves"
)]
pub(crate) async fn watch_session<W: Write, O: Observer + ?Sized>(
    scraper: &mut Scraper,
    first: Scrape,
    engine: Engine,
    options: &WatchOptions,
    out: &mut W,
    stop: impl Future<Output = ()>,
    mut on_event: impl FnMut(Event<'_>, &Progress),
    observer: &mut O,
    mid_scrape: StopMidScrape,
) -> io::Result<Progress> {
    let stop_is_gap = mid_scrape == StopMidScrape::Gap;
    tokio::pin!(stop);
    let descriptor = engine.descriptor();
    let interval_ns = i64::try_from(options.interval.as_nanos()).unwrap_or(i64::MAX);
    let end_ns = options.duration.map(|d| {
        first
            .requested_ns
            .saturating_add(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    });
    let timebase = Timebase::now();
    // Wall time of a monotonic reading, for records of slots nobody scraped.
    let (wall0, mono0) = (first.stamp.t_wall, first.stamp.t_mono_ns);
    let wall_of = |mono_ns: i64| wall0 + (mono_ns - mono0) as f64 / 1e9;

    // How the samples after slot 0 ask for the page is chosen before the header is
    // written, which says so. A choice made before (a fleet makes every replica's before
    // its one schedule starts) is taken as it is; one made here starts the schedule once
    // it is made, so that its requests take no slot's place (slot 0 is the first scrape,
    // slot 1 an interval after the choice), and never takes longer than
    // PAGE_CHOICE_AT_MOST.
    let mut stopped = false;
    let mut origin_ns = first.requested_ns;
    let pages = match (options.pages, scraper.page_choice().cloned()) {
        (Pages::Whole, _) => PageRequest {
            path: scraper.path().to_owned(),
            filtered_to: None,
            whole_because: Some("whole pages were asked for".into()),
        },
        (Pages::AskForLess, Some(chosen)) => chosen,
        (Pages::AskForLess, None) => {
            let by = tokio::time::Instant::now() + PAGE_CHOICE_AT_MOST;
            let path = scraper.path().to_owned();
            let took_too_long = || PageRequest {
                path: path.clone(),
                filtered_to: None,
                whole_because: Some(format!(
                    "the filtered page was not read within {} s",
                    PAGE_CHOICE_AT_MOST.as_secs()
                )),
            };
            let chosen = tokio::select! {
                chosen = tokio::time::timeout_at(by, scraper.ask_for_less(engine, &first.snapshot)) => {
                    chosen.unwrap_or_else(|_| took_too_long())
                }
                () = &mut stop => {
                    stopped = true;
                    took_too_long()
                }
            };
            origin_ns = origin_ns.max(clock::monotonic_ns());
            chosen
        }
    };
    let schedule = Schedule::new(origin_ns, interval_ns);
    let header = SeriesHeader {
        url: Some(scraper.base().to_string()),
        interval_s: Some(options.interval.as_secs_f64()),
        engine: Some(engine),
        unknown_engine: None,
        gpu: observer.gpu_sampling(),
        pages: Some(pages),
    };
    put(out, &files::series_header_json(&header))?;

    let mut progress = Progress::default();
    let mut tally = PreemptionTally::default();
    let record_sample = |scrape: &Scrape,
                         progress: &mut Progress,
                         tally: &mut PreemptionTally,
                         out: &mut W,
                         observer: &mut O|
     -> io::Result<SeriesSample> {
        if scrape.skipped.is_some() {
            progress.damaged += 1;
        }
        let mut sample = record::sample_from_metrics(
            descriptor,
            &scrape.snapshot.metrics,
            scrape.stamp.t_wall,
            Some(scrape.stamp.t_mono_ns),
        );
        sample.gpu = observer.extra();
        put(out, &files::series_sample_json(engine, &sample))?;
        observer.sampled(&sample, &scrape.snapshot);
        tally.push(sample.preemptions);
        progress.samples += 1;
        progress.running = sample.running;
        progress.waiting = sample.waiting;
        progress.kv_usage = sample.kv_usage;
        progress.preemptions = tally.so_far();
        progress.paused = sample.paused;
        Ok(sample)
    };

    progress.attempts += 1;
    let sample = record_sample(&first, &mut progress, &mut tally, out, observer)?;
    on_event(Event::Sample(&sample), &progress);
    let mut noted_skipped = false;
    if let Some(note) = &first.skipped {
        on_event(Event::Skipped(note), &progress);
        noted_skipped = true;
    }
    let mut last_good: Snapshot = first.snapshot;
    let mut slot = 0u64;
    // Slot 0's attempt is the first scrape: how long it took, as its stamp says.
    let mut last_attempt_took_ns = (first.stamp.latency_s * 1e9).round() as i64;

    // A stop that came while the pages were being chosen ends the recording at slot 0.
    if !stopped {
        loop {
            let now = clock::monotonic_ns();
            let next = schedule.next_after(slot, now);
            if next.missed > 0 {
                // What made the slots pass: the last scrape's length, or, when it began
                // later than its slot was due (a fleet's slot 0 is the earliest replica's
                // first request), that too.
                let began_late_ns = now - schedule.due_ns(slot) - last_attempt_took_ns;
                let reason = if began_late_ns > interval_ns {
                    format!(
                    "{} slot(s) missed: the scrape began {:.3} s after its slot was due and took {:.3} s",
                    next.missed,
                    began_late_ns as f64 / 1e9,
                    last_attempt_took_ns as f64 / 1e9
                )
                } else {
                    format!(
                        "{} slot(s) missed: the scrape took {:.3} s",
                        next.missed,
                        last_attempt_took_ns as f64 / 1e9
                    )
                };
                // Stamped when it is written, not at the first missed slot: the overrunning
                // sample before it may be stamped later than that slot, and a recording's
                // records must stay in time order.
                put(out, &gap_json(&reason, wall_of(now), now))?;
                progress.gaps += 1;
                progress.missed_slots += next.missed;
                on_event(Event::Missed(&reason), &progress);
            }
            slot = next.slot;
            if !schedule.due_before(slot, end_ns) {
                break;
            }
            tokio::select! {
                () = sleep_until_mono(&timebase, schedule.due_ns(slot)) => {}
                () = &mut stop => break,
            }
            let before = clock::now();
            let end_of_run = async {
                match end_ns {
                    Some(end) => tokio::time::sleep_until(timebase.instant(end)).await,
                    None => std::future::pending().await,
                }
            };
            let attempt = tokio::select! {
                result = scraper.scrape_sample() => Some(result),
                () = end_of_run => None,
                () = &mut stop => {
                    // A session's caller ended the recording and takes its after reading at
                    // once: no slot is lost, and no gap is written.
                    if !stop_is_gap {
                        break;
                    }
                    None
                }
            };
            let after = clock::now();
            // A scrape the end of the recording cut short is not counted as tried.
            progress.attempts += u64::from(attempt.is_some());
            last_attempt_took_ns = after.mono_ns - before.mono_ns;
            let stamp = clock::midpoint(before, after);
            match attempt {
                Some(Ok(scrape)) => {
                    if let Some(restart) = counters::restart_between(&last_good, &scrape.snapshot) {
                        put(
                            out,
                            &restart_json(
                                &restart.message,
                                scrape.stamp.t_wall,
                                scrape.stamp.t_mono_ns,
                            ),
                        )?;
                        progress.restarts += 1;
                        tally.restarted();
                        on_event(Event::Restart(&restart.message), &progress);
                    }
                    let sample = record_sample(&scrape, &mut progress, &mut tally, out, observer)?;
                    on_event(Event::Sample(&sample), &progress);
                    if let (Some(note), false) = (&scrape.skipped, noted_skipped) {
                        on_event(Event::Skipped(note), &progress);
                        noted_skipped = true;
                    }
                    // The sample before is read into again at the next scrape.
                    let previous = std::mem::replace(&mut last_good, scrape.snapshot);
                    scraper.recycle(previous);
                }
                Some(Err(error)) => {
                    let reason = error.to_string();
                    put(out, &gap_json(&reason, stamp.t_wall, stamp.t_mono_ns))?;
                    progress.failed += 1;
                    progress.gaps += 1;
                    progress.missed_slots += 1;
                    on_event(Event::Gap(&reason), &progress);
                }
                None => {
                    // The run ended (or was stopped) while the server had not answered: the
                    // slot is lost, and the file says so.
                    let reason = format!(
                        "no answer from {} after {:.3} s when recording ended",
                        scraper.base(),
                        last_attempt_took_ns as f64 / 1e9
                    );
                    put(out, &gap_json(&reason, stamp.t_wall, stamp.t_mono_ns))?;
                    progress.gaps += 1;
                    progress.missed_slots += 1;
                    on_event(Event::Gap(&reason), &progress);
                    break;
                }
            }
        }
    }
    observer.ended(&last_good);
    Ok(progress)
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferlint_engines::files::{parse_series_line, SeriesLine};

    #[test]
    fn gap_and_restart_records_are_not_samples() {
        let gap = gap_json(
            "http://127.0.0.1:1/metrics: connection refused",
            1790470252.238873,
            42,
        );
        assert_eq!(
            gap,
            "{\"gap\": \"http://127.0.0.1:1/metrics: connection refused\", \"t_wall\": 1790470252.238873, \"t_mono_ns\": 42}"
        );
        assert_eq!(parse_series_line(&gap), SeriesLine::Marker);
        let restart = restart_json("vllm:num_preemptions_total went down (3 -> 0)", 5.0, 7);
        assert_eq!(parse_series_line(&restart), SeriesLine::Marker);
        let v: Value = serde_json::from_str(&restart).expect("valid JSON");
        assert_eq!(
            v["restart"],
            "vllm:num_preemptions_total went down (3 -> 0)"
        );
        assert_eq!(v["t_mono_ns"], 7);
    }

    #[test]
    fn preemptions_add_up_across_a_restart() {
        let mut t = PreemptionTally::default();
        t.push(Some(10.0));
        t.push(Some(14.0));
        assert_eq!(t.so_far(), Some(4.0));
        t.restarted();
        assert_eq!(t.so_far(), None);
        t.push(Some(3.0));
        assert_eq!(t.so_far(), Some(7.0));
        let mut none = PreemptionTally::default();
        none.push(None);
        assert_eq!(none.so_far(), None);
    }
}
