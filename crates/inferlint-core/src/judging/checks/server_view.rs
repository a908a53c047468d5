//! T24 and T25: the load tool's figures set against the server's own record of the same
//! requests ([`crate::model::lives`]), request by request.
//!
//! - T24: what "time to first token" means on each side. The load tool counts from its
//!   send; the server from its receipt (vLLM's `gen_ai.latency.time_to_first_token`) or
//!   from its first scheduling (per-request metrics in responses). The load tool's TTFT
//!   is the server's plus the transport and the front end's work before the server's
//!   stamp, never less: a tool whose TTFT is shorter than the server's starts its clock
//!   late or stops it early.
//! - T25: what a streamed "token" is. A chunk can carry several tokens; a tool that
//!   counts its chunks counts fewer tokens than the server generated.

use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::client::{ClientAccount, ClientRequest, LoadTool};
use crate::model::lives::Lives;
use crate::model::traces::{RequestSource, ServerRequest, ServerRequests};
use crate::story::fmt;

/// The medians may differ by this much, and by [`TTFT_SHARE`] of the server's, before
/// the two TTFTs count as different figures: a localhost round trip and an API server's
/// parsing are a few milliseconds.
const TTFT_FLOOR_S: f64 = 0.025;
/// See [`TTFT_FLOOR_S`].
const TTFT_SHARE: f64 = 0.10;
/// The fewest joined requests a comparison rests on.
const MIN_JOINED: usize = 3;
/// A tool's output count is its chunk count on this share of the joined requests or more
/// before it is said to count chunks.
const CHUNK_COUNTED_SHARE: f64 = 0.9;
/// The server's tokens may exceed the tool's count by this share before the counts differ.
const TOKENS_SHARE: f64 = 0.05;
/// Chunks carrying this many tokens on average make the tool's inter-token gaps per chunk.
const TOKENS_PER_CHUNK_WARN: f64 = 1.5;

/// What T24 and T25 read.
#[derive(Debug, Clone, Copy)]
pub struct ServerViewInputs<'a> {
    /// The load tool's account.
    pub account: &'a ClientAccount,
    /// The result file's name.
    pub result_file: &'a str,
    /// The server's records.
    pub server: &'a ServerRequests,
    /// The two joined.
    pub lives: &'a Lives,
}

impl ServerViewInputs<'_> {
    fn pairs(&self) -> impl Iterator<Item = (&ClientRequest, &ServerRequest)> + '_ {
        self.lives.pairs.iter().map(|p| {
            (
                &self.account.requests[p.client],
                &self.server.requests[p.server],
            )
        })
    }

    /// Not checked for `tripwire` when the result holds no request of its own to join
    /// (a summary's counts only, or a tool that keeps no per-request rows): what is
    /// missing is named, as T23 names it. Rows that are there and cannot be joined are
    /// [`ServerViewInputs::too_few`]'s Can't tell.
    fn no_rows(&self, tripwire: Tripwire) -> Option<CheckResult> {
        if !self.account.requests.is_empty() {
            return None;
        }
        let tool = self.account.tool;
        let flag = tool
            .info()
            .details_flag
            .map(|f| format!(" ({} {f})", tool.name()))
            .unwrap_or_default();
        Some(
            CheckResult::not_checked(
                tripwire,
                format!(
                    "needs the load tool's record of each request{flag} to set against the server's: {} keeps none",
                    self.result_file
                ),
                &[crate::run::input::BENCH_RESULT],
            )
            .with("tool", tool.info().key),
        )
    }

    /// Can't tell for `tripwire`, or `None` when enough requests were joined.
    fn too_few(&self, tripwire: Tripwire, joined: usize, what: &str) -> Option<CheckResult> {
        if let Some(result) = self.no_rows(tripwire) {
            return Some(result);
        }
        let base = |message: String| {
            CheckResult::new(tripwire, Status::Unknown, message)
                .with("tool", self.account.tool.info().key)
                .with("joined", joined as u64)
                .with("requests", self.lives.client_rows as u64)
        };
        if let Some(why) = self.lives.foreign(&self.server.file) {
            return Some(base(why));
        }
        let half = self.lives.client_rows.div_ceil(2);
        if joined < MIN_JOINED || joined < half {
            return Some(base(format!(
                "only {joined} of the {} requests in {} could be joined with {} with {what} on both sides ({})",
                self.lives.client_rows,
                self.result_file,
                self.server.source.words(),
                self.lives.summary()
            )));
        }
        None
    }
}

fn ms(s: f64) -> String {
    format!("{} ms", fmt::g((s * 1e3).round()))
}

fn round_ms(s: f64) -> f64 {
    (s * 1e3).round() / 1e3
}

/// T24.
pub fn ttft_definitions(inputs: &ServerViewInputs) -> CheckResult {
    let tool = inputs.account.tool;
    let mut client = Vec::new();
    let mut from_arrival = Vec::new();
    let mut diffs = Vec::new();
    let mut from_scheduling = Vec::new();
    for (row, record) in inputs.pairs() {
        let Some(c) = row
            .ttft_s
            .get()
            .or_else(|| Some(row.first_token_at()? - row.sent_s.get()?))
        else {
            continue;
        };
        if let Some(s) = record.ttft_s {
            client.push(c);
            from_arrival.push(s);
            diffs.push(c - s);
        }
        if let Some(s) = record.ttft_from_scheduling_s {
            from_scheduling.push(s);
        }
    }
    if let Some(unknown) = inputs.too_few(Tripwire::T24, diffs.len(), "a TTFT") {
        return unknown;
    }
    let (Some(client_p50), Some(server_p50), Some(diff_p50)) = (
        fmt::median(&mut client),
        fmt::median(&mut from_arrival),
        fmt::median(&mut diffs),
    ) else {
        unreachable!("at least MIN_JOINED values");
    };
    let tolerance = TTFT_FLOOR_S.max(TTFT_SHARE * server_p50);
    let mut result = CheckResult::new(Tripwire::T24, Status::Pass, String::new())
        .with("tool", tool.info().key)
        .with("joined", diffs.len() as u64)
        .with("requests", inputs.lives.client_rows as u64)
        .with("client_ttft_p50_s", round_ms(client_p50))
        .with("server_ttft_p50_s", round_ms(server_p50))
        .with("difference_p50_s", round_ms(diff_p50))
        .with("tolerance_s", round_ms(tolerance));
    let scheduling_p50 = fmt::median(&mut from_scheduling);
    if let Some(s) = scheduling_p50 {
        result = result.with("server_ttft_from_scheduling_p50_s", round_ms(s));
    }
    let name = tool.name();
    // The step file's finished lines carry no receipt: the engine's TTFT starts at its
    // queue, after the API server's work.
    let (start, receipt, left_out) = match inputs.server.source {
        RequestSource::StepFileFinished => (
            "its engine queued",
            "from its engine's queue",
            "which the engine's times leave out",
        ),
        _ => (
            "it received",
            "from its receipt",
            "which the server's TTFT histogram leaves out",
        ),
    };
    let joined = format!(
        "over {} requests joined with {}",
        diffs.len(),
        inputs.server.source.words()
    );
    let scheduling_words = scheduling_p50
        .filter(|s| (server_p50 - s).abs() > tolerance)
        .map(|s| {
            format!(
                "; counted from its first scheduling, as its per-request metrics count, it is {}, leaving out {} in the server's queue",
                ms(s),
                ms(server_p50 - s)
            )
        })
        .unwrap_or_default();
    if diff_p50 < -tolerance {
        result.status = Status::Fail;
        result.message = format!(
            "{name}'s median TTFT is {}, {} shorter than the server's own {} from the moment {start} each request ({joined}): the tool's clock starts after the request reached the server, or stops before its first token{scheduling_words}",
            ms(client_p50),
            ms(-diff_p50),
            ms(server_p50)
        );
    } else if diff_p50 > tolerance || !scheduling_words.is_empty() {
        result.status = Status::Warn;
        result.message = if diff_p50 > tolerance {
            format!(
                "{name}'s median TTFT is {}, the server's own {receipt} {} ({joined}): {} of each request's TTFT is transport and the front end, {left_out}{scheduling_words}",
                ms(client_p50),
                ms(server_p50),
                ms(diff_p50)
            )
        } else {
            format!(
                "{name}'s median TTFT is {} and the server's {receipt} {} ({joined}){scheduling_words}",
                ms(client_p50),
                ms(server_p50)
            )
        };
    } else {
        result.message = format!(
            "{name}'s median TTFT is {} and the server's own {} ({joined}): they differ by {}, within {}",
            ms(client_p50),
            ms(server_p50),
            ms(diff_p50.abs()),
            ms(tolerance)
        );
    }
    result
}

/// T25.
pub fn chunks_as_tokens(inputs: &ServerViewInputs) -> CheckResult {
    let tool = inputs.account.tool;
    let mut counted = 0u64;
    let mut generated = 0u64;
    let mut chunks = 0u64;
    let mut with_chunks = 0usize;
    let mut count_is_chunks = 0usize;
    let mut joined = 0usize;
    for (row, record) in inputs.pairs() {
        let (Some(c), Some(s)) = (row.output_tokens.get(), record.output_tokens) else {
            continue;
        };
        joined += 1;
        counted += c;
        generated += s;
        if let Some(k) = row.chunks() {
            with_chunks += 1;
            chunks += k;
            if k == c {
                count_is_chunks += 1;
            }
        }
    }
    if let Some(unknown) = inputs.too_few(Tripwire::T25, joined, "an output count") {
        return unknown;
    }
    let name = tool.name();
    let mut result = CheckResult::new(Tripwire::T25, Status::Pass, String::new())
        .with("tool", tool.info().key)
        .with("joined", joined as u64)
        .with("requests", inputs.lives.client_rows as u64)
        .with("tool_counted_tokens", counted)
        .with("server_generated_tokens", generated);
    if with_chunks > 0 {
        result = result.with("chunks", chunks);
    }
    let more = generated as f64 > counted as f64 * (1.0 + TOKENS_SHARE);
    let counts_chunks =
        with_chunks > 0 && count_is_chunks as f64 >= CHUNK_COUNTED_SHARE * joined as f64;
    let per_chunk = (with_chunks == joined && chunks > 0).then(|| generated as f64 / chunks as f64);
    if let Some(t) = per_chunk {
        result = result.with("tokens_per_chunk", (t * 100.0).round() / 100.0);
    }
    let over = format!(
        "over {joined} requests joined with {}",
        inputs.server.source.words()
    );
    if counts_chunks && more {
        result.status = Status::Fail;
        result.message = format!(
            "{name} counted {} output tokens, one a streamed chunk, where the server generated {} ({over}): its output tokens, tokens per second and time per token are off by {}x",
            fmt::thousands(counted as i64),
            fmt::thousands(generated as i64),
            fmt::g((generated as f64 / counted.max(1) as f64 * 100.0).round() / 100.0)
        );
    } else if let Some(t) = per_chunk.filter(|t| *t >= TOKENS_PER_CHUNK_WARN) {
        result.status = Status::Warn;
        result.message = format!(
            "{name} counted {} output tokens as the server did ({}), but they came in {} chunks, {} tokens a chunk ({over}): its inter-token latency is the gap between chunks, not tokens",
            fmt::thousands(counted as i64),
            fmt::thousands(generated as i64),
            fmt::thousands(chunks as i64),
            fmt::g((t * 100.0).round() / 100.0)
        );
    } else if more {
        result.message = format!(
            "{name} counted {} output tokens and the server generated {} ({over}), but not one a chunk: the difference is how {name} counts tokens (T20), not its chunks",
            fmt::thousands(counted as i64),
            fmt::thousands(generated as i64)
        );
    } else {
        let chunk_words = per_chunk
            .map(|t| {
                let t = (t * 100.0).round() / 100.0;
                format!(", {} token{} a chunk", fmt::g(t), fmt::plural(t))
            })
            .unwrap_or_default();
        result.message = format!(
            "{name} counted {} output tokens and the server generated {} ({over}){chunk_words}",
            fmt::thousands(counted as i64),
            fmt::thousands(generated as i64)
        );
    }
    result
}

/// What to change after T24 or T25 warned or failed.
pub fn advice(result: &CheckResult) -> Vec<String> {
    let tool = result
        .evidence_str("tool")
        .and_then(LoadTool::from_key)
        .map_or("the load tool", LoadTool::name);
    match (result.tripwire, result.status) {
        (Tripwire::T24, Status::Fail) => vec![format!(
            "find where {tool} starts and stops its TTFT clock (a first chunk without text, the response headers, a time taken after the request was queued in the client) and quote the server's TTFT beside it until they agree"
        )],
        (Tripwire::T24, Status::Warn) => vec![
            "say which TTFT a figure is (the load tool's from send, the server's from receipt, or from scheduling) and compare runs only on the same one".to_owned(),
        ],
        (Tripwire::T25, Status::Fail) => vec![format!(
            "count output tokens from the server's usage (stream_options include_usage) or a tokenizer, not from {tool}'s chunks, and recompute tokens per second and time per token"
        )],
        (Tripwire::T25, Status::Warn) => vec![
            "report time per output token (latency minus TTFT over tokens) rather than inter-token latency, or say that the latter is per chunk".to_owned(),
        ],
        _ => Vec::new(),
    }
}
