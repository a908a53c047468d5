//! What a server recorded of each request and of its KV cache beyond its counters: its
//! own account of each request (an OpenTelemetry span, SGLang's per-request metrics,
//! TensorRT-LLM's `/perf_metrics`) and the KV-cache event stream (blocks stored and
//! removed, the cache cleared). Plain data: `inferlint-live` receives them during a run,
//! `inferlint-engines` reads the files the receivers wrote (and an OpenTelemetry
//! Collector's), and the request timeline (`lives`) joins each request's server record
//! with the load tool's row.
//!
//! Clocks. A server stamps its records on its own wall clock (Unix seconds); a receiver
//! also stamps what it received with its wall and monotonic clocks, and each file says
//! both at its start ([`ClockAnchor`]), so a record can be placed on the recording's axis
//! whichever clock its source used.

use serde::Serialize;

/// A moment read on both of the recorder's clocks at once, so that a file's wall-clock
/// times can be placed on the monotonic clock the recording and the load tools share.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ClockAnchor {
    /// Unix seconds.
    pub t_wall: f64,
    /// The host's monotonic clock, nanoseconds.
    pub t_mono_ns: i64,
}

/// Where a server's account of one request came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestSource {
    /// An OpenTelemetry span the server exported (vLLM's `llm_request`, SGLang's
    /// request span).
    OtlpSpan,
    /// SGLang's per-request JSON lines (`--export-metrics-to-file`).
    SglangRequestFile,
    /// TensorRT-LLM's `/perf_metrics` entries.
    TrtllmPerfMetrics,
    /// The finished-request lines of the step file (`inferlint.steps/1`, vLLM's
    /// `FinishedRequestStats`): the engine's times, from its queue on, not the API
    /// server's.
    StepFileFinished,
}

impl RequestSource {
    /// A few words naming it.
    pub fn words(self) -> &'static str {
        match self {
            RequestSource::OtlpSpan => "the server's OpenTelemetry spans",
            RequestSource::SglangRequestFile => "the server's per-request metrics file",
            RequestSource::TrtllmPerfMetrics => "the server's /perf_metrics",
            RequestSource::StepFileFinished => "the engine's finished requests in its step file",
        }
    }

    /// What a record's arrival is, in a sentence's words: the API server's receipt, or,
    /// for the step file's finished requests (which carry no receipt), the moment the
    /// engine queued the request.
    pub fn arrival_words(self) -> &'static str {
        match self {
            RequestSource::StepFileFinished => "queued by the engine",
            _ => "received",
        }
    }
}

/// One request as the server recorded it. Times are Unix seconds on the server's wall
/// clock; durations are seconds. A field the source does not carry is `None`, never 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerRequest {
    /// The request's id as the server knew it (`gen_ai.request.id`, SGLang's `rid`,
    /// TensorRT-LLM's `request_id`): the load tool's id where it sent one
    /// (`X-Request-Id`, vLLM bench's `--request-id-prefix`), often with the server's own
    /// prefix and suffix around it (`cmpl-ID-0`).
    pub id: Option<String>,
    /// When the server received it (the API server's arrival stamp).
    pub arrival: Option<f64>,
    /// Seconds it waited in the server's queue before it was first scheduled.
    pub queue_s: Option<f64>,
    /// Seconds from arrival to its first token, as the server measured it.
    pub ttft_s: Option<f64>,
    /// Seconds from its first scheduling to its first token (what a server that times
    /// from scheduling calls its TTFT: vLLM's per-request metrics in responses).
    pub ttft_from_scheduling_s: Option<f64>,
    /// Seconds in prefill: first scheduled to first token.
    pub prefill_s: Option<f64>,
    /// Seconds in decode: first token to last.
    pub decode_s: Option<f64>,
    /// Seconds from arrival to its end, as the server measured it.
    pub e2e_s: Option<f64>,
    /// Prompt tokens the server processed.
    pub prompt_tokens: Option<u64>,
    /// Output tokens the server generated.
    pub output_tokens: Option<u64>,
    /// Prompt tokens served from the prefix cache, where the source says.
    pub cached_tokens: Option<u64>,
    /// Times it was preempted (retracted, evicted and recomputed), where the source
    /// says.
    pub preemptions: Option<u64>,
    /// KV blocks of its prompt found in the cache and reused, where the source says
    /// (TensorRT-LLM counts blocks, not tokens).
    pub reused_blocks: Option<u64>,
    /// KV blocks of its prompt looked for in the cache and not found, where the source
    /// says.
    pub missed_blocks: Option<u64>,
}

/// A server record's phases on a clock whose zero is `origin` (Unix seconds): arrival,
/// first scheduled (arrival plus its time in the queue), first token (its TTFT, else
/// first scheduled plus its prefill) and end (its end-to-end time, else first token plus
/// its decode). Each `None` where the record does not give it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phases {
    /// When the server received it.
    pub arrival: f64,
    /// When its scheduler first ran it.
    pub scheduled: Option<f64>,
    /// When its first token came.
    pub first_token: Option<f64>,
    /// When it ended.
    pub end: Option<f64>,
}

impl ServerRequest {
    /// Its phases with `origin` as zero; `None` without an arrival stamp.
    pub fn phases(&self, origin: f64) -> Option<Phases> {
        let arrival = self.arrival? - origin;
        let scheduled = self.queue_s.map(|q| arrival + q);
        let first_token = self
            .ttft_s
            .map(|t| arrival + t)
            .or_else(|| Some(scheduled? + self.prefill_s?));
        let end = self
            .e2e_s
            .map(|e| arrival + e)
            .or_else(|| Some(first_token? + self.decode_s?));
        Some(Phases {
            arrival,
            scheduled,
            first_token,
            end,
        })
    }
}

/// The server's per-request records of a run, from one source.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerRequests {
    /// Where they came from.
    pub source: RequestSource,
    /// The file they were read from, as shown to a reader.
    pub file: String,
    /// When the receiver started, on both clocks, where the file says.
    pub anchor: Option<ClockAnchor>,
    /// Each request, in the order received.
    pub requests: Vec<ServerRequest>,
    /// Records that could not be read as a request (a line that is not JSON, a span of
    /// the request's kind that is not whole), counted.
    pub skipped: u64,
    /// Records of another kind, not requests (the server's other spans, a Collector's
    /// metrics beside its traces), counted: not damage, and no request is missing.
    pub other_records: u64,
    /// Records of a request received again (an exporter that sent a batch a second time
    /// after an answer it did not get), kept once and counted.
    pub repeated: u64,
    /// Values of a request that were there but could not be read (a duration that is
    /// negative or not a number), each left `None` in its request and counted.
    pub unreadable_values: u64,
    /// Where and why the first record was skipped or a value could not be read, as a
    /// reader names it (`line 4: not JSON`).
    pub first_problem: Option<String>,
}

impl ServerRequests {
    /// No request yet, from `source`, read from `file`.
    pub fn new(source: RequestSource, file: impl Into<String>) -> ServerRequests {
        ServerRequests {
            source,
            file: file.into(),
            anchor: None,
            requests: Vec::new(),
            skipped: 0,
            other_records: 0,
            repeated: 0,
            unreadable_values: 0,
            first_problem: None,
        }
    }
}

/// KV-cache events summed over one second of the server's clock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct KvSecond {
    /// The second: Unix seconds, floored.
    pub second: i64,
    /// Blocks stored (a `BlockStored` event's hashes).
    pub stored_blocks: u64,
    /// Tokens in the blocks stored (a `BlockStored` event's token ids).
    pub stored_tokens: u64,
    /// Blocks removed (evicted).
    pub removed_blocks: u64,
    /// Times the whole cache was cleared.
    pub cleared: u64,
    /// Event batches received.
    pub batches: u64,
}

/// Numbers of the KV event stream that were never received: a hole in its sequence
/// numbers that the replay (where there is one) did not fill.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KvGap {
    /// The first sequence number missed.
    pub from_seq: u64,
    /// The last sequence number missed.
    pub to_seq: u64,
    /// Unix seconds of the receiver's clock when the hole was found.
    pub t_wall: Option<f64>,
    /// Why, in a few words (`the replay endpoint did not answer`).
    pub reason: String,
}

/// What a KV event stream's sequence numbers count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KvNumbering {
    /// Each batch the publisher sent has its number (vLLM's and SGLang's `seq`).
    #[default]
    Batch,
    /// Each event has its number (TensorRT-LLM's `event_id`), and a received batch (a
    /// drain's answer) covers a run of them.
    Event,
}

impl KvNumbering {
    /// What one number counts: `batch`, `event`.
    pub fn unit(self) -> &'static str {
        match self {
            KvNumbering::Batch => "batch",
            KvNumbering::Event => "event",
        }
    }

    /// What the numbers count, in a sentence: `KV event batches`, `KV events`.
    pub fn units(self) -> &'static str {
        match self {
            KvNumbering::Batch => "KV event batches",
            KvNumbering::Event => "KV events",
        }
    }
}

/// The KV-cache event stream of a run, as received.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct KvEvents {
    /// The file it was read from, as shown to a reader.
    pub file: String,
    /// The address subscribed to.
    pub endpoint: Option<String>,
    /// When the subscriber started, on both clocks.
    pub anchor: Option<ClockAnchor>,
    /// When the subscription was made, on both clocks: a batch the engine published
    /// before it was not received, and is no hole unless the file says so.
    pub subscribed: Option<ClockAnchor>,
    /// When the subscriber stopped, on both clocks, where the file says (a file cut off
    /// mid-run does not).
    pub end: Option<ClockAnchor>,
    /// Whether the events were drained from an endpoint that forgets what it returns
    /// (TensorRT-LLM's `/kv_cache_events`) rather than published: each batch is one
    /// answer, stamped with the recorder's clock (the events carry no time).
    pub drained: bool,
    /// What the sequence numbers count.
    pub numbered_by: KvNumbering,
    /// Sequence numbers the received batches cover: the batches themselves where each
    /// has its number, the events where each event has one.
    pub numbers_received: u64,
    /// Batches received, whole run.
    pub batches: u64,
    /// Batches received through the replay endpoint (after a hole), of `batches`.
    pub replayed: u64,
    /// The first and last sequence numbers received.
    pub seq_range: Option<(u64, u64)>,
    /// Each second that had events, in order. Every storage medium is summed in; the
    /// media the stream named are in `media`.
    pub seconds: Vec<KvSecond>,
    /// The storage media the events named (`GPU`; an offload tier adds `CPU`), in the
    /// order first seen.
    pub media: Vec<String>,
    /// Events of a type the reader does not know, counted and otherwise passed over.
    pub unknown_events: u64,
    /// Times the publisher's sequence began again (the engine restarted while the
    /// subscriber ran): the sequence numbers before and after are different counts.
    pub restarts: u64,
    /// Whether the engine's publisher connected, where the subscriber bound its endpoint
    /// for it to connect to (`Some(false)`: it never did); `None` when the subscriber
    /// connected to a publisher that binds (its subscription says it reached it).
    pub publisher_connected: Option<bool>,
    /// The holes in the sequence that stayed holes.
    pub gaps: Vec<KvGap>,
    /// Lines or frames that could not be read, counted.
    pub skipped: u64,
}

impl KvEvents {
    /// Blocks stored over the whole stream.
    pub fn stored_blocks(&self) -> u64 {
        self.seconds.iter().map(|s| s.stored_blocks).sum()
    }

    /// Tokens in the blocks stored over the whole stream.
    pub fn stored_tokens(&self) -> u64 {
        self.seconds.iter().map(|s| s.stored_tokens).sum()
    }

    /// Blocks removed over the whole stream.
    pub fn removed_blocks(&self) -> u64 {
        self.seconds.iter().map(|s| s.removed_blocks).sum()
    }

    /// Sequence numbers missed and never recovered: batches, or events where each event
    /// is numbered ([`KvEvents::numbered_by`]).
    pub fn missed_batches(&self) -> u64 {
        self.gaps
            .iter()
            .map(|g| g.to_seq.saturating_sub(g.from_seq) + 1)
            .sum()
    }
}
