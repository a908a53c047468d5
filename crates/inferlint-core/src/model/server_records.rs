//! The shapes of an engine's own accounts beyond its counters and spans, as the engine
//! tables fill them in (`engine.rs`): where its per-request records come from and which
//! field of a record says what, the HTTP endpoints that hand out what they hold once
//! ("drains"). Types only: every name and
//! path is written in the engine tables.

use crate::model::traces::RequestSource;

/// A path into a JSON record: the keys from its top (`["perf_metrics",
/// "timing_metrics", "arrival_time"]`).
pub type JsonPath = &'static [&'static str];

/// An HTTP endpoint of the server that returns what it holds and forgets it: a second
/// reader gets only what came after the first one's read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drain {
    /// The path, from the server's base address (`/perf_metrics`).
    pub path: &'static str,
    /// Whether it is asked with POST (else GET).
    pub post: bool,
    /// What the server must be started with for the endpoint to hold anything, as a
    /// user of the engine writes it.
    pub needs: &'static str,
}

/// Files the server writes its per-request records into, one JSON object a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordFiles {
    /// The flag that turns the files on (`--export-metrics-to-file`).
    pub flag: &'static str,
    /// The flag naming the folder they are written into.
    pub dir_flag: &'static str,
    /// How each file's name starts; the server starts a new one each hour.
    pub name_prefix: &'static str,
    /// How each file's name ends.
    pub name_suffix: &'static str,
    /// What else the server must be started with for the records to carry their times.
    pub needs: &'static str,
}

/// How a recorder gets an engine's per-request records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordsFrom {
    /// Drained from an HTTP endpoint during the run.
    Drain(Drain),
    /// Written by the server into files.
    Files(RecordFiles),
}

/// The clock the times in a record are read on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordClock {
    /// Seconds of the host's monotonic clock (C++'s `std::chrono::steady_clock`, which is
    /// `CLOCK_MONOTONIC` on Linux): placed on the wall clock through a reading of both,
    /// taken on the same host.
    HostMonotonic,
    /// Unix seconds.
    Unix,
}

/// An engine's per-request record and the fields its account of the request is read
/// from: a time is a moment on [`RequestRecord::clock`], a duration is seconds. A field
/// the engine does not write is `None` (or empty), and every one may be missing from a
/// given record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestRecord {
    /// Where the records come from.
    pub from: RecordsFrom,
    /// What a reader calls them.
    pub source: RequestSource,
    /// The clock of its times.
    pub clock: RecordClock,
    /// The request's id (a string or an integer), the first present.
    pub id: &'static [JsonPath],
    /// Time: when the server received it, the first present.
    pub arrival: &'static [JsonPath],
    /// Time: when it entered the scheduler's queue, where that is later than its
    /// arrival (the API server's work between): the queue time runs from it.
    pub enqueued: Option<JsonPath>,
    /// Time: when it was first scheduled.
    pub first_scheduled: Option<JsonPath>,
    /// Time: its first token.
    pub first_token: Option<JsonPath>,
    /// Time: the end of its prefill, where the first token is not stamped.
    pub prefill_end: Option<JsonPath>,
    /// Time: its last token.
    pub last_token: Option<JsonPath>,
    /// Duration: in the queue before first scheduled.
    pub queue_s: Option<JsonPath>,
    /// Duration: arrival to end.
    pub e2e_s: Option<JsonPath>,
    /// Tokens per second after the first: `(output tokens - 1) / (last token - first
    /// token)`, from which the first token's time is recovered where it is not written.
    pub decode_rate: Option<JsonPath>,
    /// Prompt tokens.
    pub prompt_tokens: Option<JsonPath>,
    /// Output tokens.
    pub output_tokens: Option<JsonPath>,
    /// Prompt tokens served from the prefix cache.
    pub cached_tokens: Option<JsonPath>,
    /// Times it was preempted (retracted), the first present.
    pub preemptions: &'static [JsonPath],
    /// KV blocks it found in the cache (reused).
    pub reused_blocks: Option<JsonPath>,
    /// KV blocks it looked for in the cache and did not find.
    pub missed_blocks: Option<JsonPath>,
}

impl RequestRecord {
    /// Every path the record is read from, for a table's own tests.
    pub fn paths(&self) -> Vec<JsonPath> {
        let mut paths: Vec<JsonPath> = self.id.to_vec();
        paths.extend(self.arrival);
        paths.extend(self.preemptions);
        paths.extend(
            [
                self.enqueued,
                self.first_scheduled,
                self.first_token,
                self.prefill_end,
                self.last_token,
                self.queue_s,
                self.e2e_s,
                self.decode_rate,
                self.prompt_tokens,
                self.output_tokens,
                self.cached_tokens,
                self.reused_blocks,
                self.missed_blocks,
            ]
            .into_iter()
            .flatten(),
        );
        paths
    }
}
