//! The load tool's account of a run: what the client says it sent, what came back and
//! over what time, and each request where its files keep them.
//!
//! Every load tool's result files read into this one model ([`ClientAccount`]), so the
//! checks that compare the client with the server (T15, T18, T20), the insights and the
//! report never ask which tool wrote them. How the tools differ is data: one
//! [`LoadToolInfo`] per tool, as the engines have their
//! [`crate::engine::EngineDescriptor`]. A number a file does not give is `None`, never 0.

use serde::Serialize;

/// A load tool whose result files inferlint reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadTool {
    /// `vllm bench serve` (and the engines' clients that kept its field names).
    VllmBench,
    /// SGLang's `python -m sglang.bench_serving` / `sglang.benchmark.serving`.
    SglangBench,
    /// TensorRT-LLM's `python -m tensorrt_llm.serve.scripts.benchmark_serving`.
    TrtllmBench,
    /// GuideLLM.
    GuideLlm,
    /// NVIDIA AIPerf.
    AiPerf,
    /// kubernetes-sigs inference-perf.
    InferencePerf,
    /// NVIDIA GenAI-Perf.
    GenAiPerf,
    /// Anyscale's LLMPerf.
    LlmPerf,
    /// llm-d's Benchmark Report (0.2 and 0.2.1): a shared format, written by llm-d's
    /// harness from any tool's results and by inference-perf itself, one per stage.
    LlmdBr,
    /// A program's own client, whose counts the program gave through the library
    /// (`inferlint::ClientSummary`): it counts its failures.
    Harness,
}

impl LoadTool {
    /// Every load tool, in the order they are listed.
    pub const ALL: [LoadTool; 10] = [
        LoadTool::VllmBench,
        LoadTool::SglangBench,
        LoadTool::TrtllmBench,
        LoadTool::GuideLlm,
        LoadTool::AiPerf,
        LoadTool::InferencePerf,
        LoadTool::GenAiPerf,
        LoadTool::LlmPerf,
        LoadTool::LlmdBr,
        LoadTool::Harness,
    ];

    /// The tool's table.
    pub fn info(self) -> &'static LoadToolInfo {
        LOAD_TOOLS
            .iter()
            .find(|info| info.tool == self)
            .expect("every load tool has its table")
    }

    /// The tool a key names (`guidellm`), as evidence records it.
    pub fn from_key(key: &str) -> Option<LoadTool> {
        LoadTool::ALL.into_iter().find(|t| t.info().key == key)
    }

    /// How a person names it: `vllm bench serve`, `GuideLLM`.
    pub fn name(self) -> &'static str {
        self.info().name
    }
}

/// How a tool's result file counts the requests that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureCounting {
    /// The file holds a count of failed requests.
    Counted,
    /// Only the per-request records show them (a failed one carries its error), and only
    /// when the tool was asked to keep them.
    PerRequestOnly,
    /// The file counts no failure at all.
    NotCounted,
}

/// What one load tool writes and how, as data.
#[derive(Debug)]
pub struct LoadToolInfo {
    /// The tool.
    pub tool: LoadTool,
    /// A short key for scripts and evidence: `vllm-bench`, `guidellm`.
    pub key: &'static str,
    /// How a person names it: `vllm bench serve`, `GuideLLM`.
    pub name: &'static str,
    /// How its result file counts failed requests.
    pub failures: FailureCounting,
    /// What its throughput and latency figures count, in words after the tool's name.
    pub headline: &'static str,
    /// How to make it keep one record per request (with each failure's error), where a
    /// setting does.
    pub details_flag: Option<&'static str>,
    /// How to make it ask for the whole output length (the server then ignores the
    /// end-of-sequence token).
    pub ignore_eos: &'static str,
    /// How to give it the server's tokenizer.
    pub tokenizer: &'static str,
    /// The untimed request it sends by default before the timed ones, in words, where it
    /// sends one: the server finishes it, the result file does not count it, and only the
    /// tool's console output says it was sent.
    pub test_request: Option<&'static str>,
}

static LOAD_TOOLS: [LoadToolInfo; 10] = [
    LoadToolInfo {
        tool: LoadTool::VllmBench,
        key: "vllm-bench",
        name: "vllm bench serve",
        failures: FailureCounting::Counted,
        headline: "counts only completed requests in its throughput and latency",
        details_flag: Some("`--save-detailed`"),
        ignore_eos: "`--ignore-eos`",
        tokenizer: "`--tokenizer` with the server's model",
        test_request: Some(
            "one request of the benchmark's first prompt, at that prompt's output length, before the timed ones (its console prints \"Starting initial single prompt test run...\")",
        ),
    },
    LoadToolInfo {
        tool: LoadTool::SglangBench,
        key: "sglang-bench",
        name: "SGLang bench_serving",
        failures: FailureCounting::PerRequestOnly,
        headline: "counts only completed requests, in its counts as in its throughput and latency",
        details_flag: Some("`--output-details`"),
        ignore_eos: "leave out `--disable-ignore-eos`",
        tokenizer: "`--tokenizer` with the server's model",
        test_request: None,
    },
    LoadToolInfo {
        tool: LoadTool::TrtllmBench,
        key: "trtllm-bench",
        name: "TensorRT-LLM benchmark_serving",
        failures: FailureCounting::PerRequestOnly,
        headline: "counts only completed requests in its file, its throughput and its latency",
        details_flag: Some("`--save-detailed`"),
        ignore_eos: "`--ignore-eos`",
        tokenizer: "`--tokenizer` with the server's model",
        test_request: None,
    },
    LoadToolInfo {
        tool: LoadTool::GuideLlm,
        key: "guidellm",
        name: "GuideLLM",
        failures: FailureCounting::Counted,
        headline: "reports its latency and output throughput over successful requests",
        details_flag: None,
        ignore_eos: "synthetic data with `output_tokens` (it then sends `ignore_eos`)",
        tokenizer: "`--tokenizer` (or `--processor`) with the server's model",
        test_request: None,
    },
    LoadToolInfo {
        tool: LoadTool::AiPerf,
        key: "aiperf",
        name: "AIPerf",
        failures: FailureCounting::Counted,
        headline: "computes its request_count, latency and throughput over successful requests",
        details_flag: None,
        ignore_eos: "`--extra-inputs ignore_eos:true`",
        tokenizer: "`--tokenizer` with the server's model",
        test_request: None,
    },
    LoadToolInfo {
        tool: LoadTool::InferencePerf,
        key: "inference-perf",
        name: "inference-perf",
        failures: FailureCounting::Counted,
        headline: "reports its latency and throughput over successes only",
        details_flag: Some("`report.request_lifecycle.per_request: true` in its config"),
        ignore_eos: "`server.ignore_eos: true` in its config",
        tokenizer: "`tokenizer.pretrained_model_name_or_path` in its config",
        test_request: None,
    },
    LoadToolInfo {
        tool: LoadTool::GenAiPerf,
        key: "genai-perf",
        name: "GenAI-Perf",
        failures: FailureCounting::NotCounted,
        headline: "counts only successful requests in its request_count, latency and throughput",
        details_flag: None,
        ignore_eos: "`--extra-inputs ignore_eos:true`",
        tokenizer: "`--tokenizer` with the server's model",
        test_request: None,
    },
    LoadToolInfo {
        tool: LoadTool::LlmPerf,
        key: "llmperf",
        name: "LLMPerf",
        failures: FailureCounting::Counted,
        headline: "computes its statistics over successful requests only",
        details_flag: None,
        ignore_eos: "`--additional-sampling-params '{\"ignore_eos\": true}'`",
        tokenizer: "nothing: it always counts tokens with its own Llama tokenizer",
        test_request: None,
    },
    LoadToolInfo {
        tool: LoadTool::LlmdBr,
        key: "llmd-br",
        name: "llm-d Benchmark Report",
        // `results.request_performance.aggregate.requests.failures`.
        failures: FailureCounting::Counted,
        headline: "carries the latency and throughput the tool that measured the run computed (inference-perf's over successful requests)",
        // The format keeps no request's record ("individual traces ... are not captured").
        details_flag: None,
        ignore_eos: "the setting of the tool that made the load (the report keeps it only in `scenario.load.native`)",
        tokenizer: "the setting of the tool that made the load, with the server's model",
        test_request: None,
    },
    LoadToolInfo {
        tool: LoadTool::Harness,
        key: "harness",
        name: "the harness's client",
        failures: FailureCounting::Counted,
        headline: "gave its own counts of completed and failed requests",
        details_flag: None,
        ignore_eos: "`ignore_eos: true` in each request",
        tokenizer: "the server's tokenizer",
        test_request: None,
    },
];

/// How a request ended, as the load tool saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestOutcome {
    /// Came back whole.
    Completed,
    /// An error: an HTTP status, a timeout, a broken stream.
    Failed,
    /// Still in flight or cancelled when the tool stopped.
    Incomplete,
}

/// The clock a file's per-request times are on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestClock {
    /// Seconds since 1970 (`time.time()`).
    Unix,
    /// Seconds on the host's monotonic clock (`time.perf_counter()` on Linux), the clock
    /// inferlint's snapshots and recordings also carry.
    Monotonic,
}

/// An `Option<f64>` in the 8 bytes of an `f64` (an `Option<f64>` takes 16): NaN is
/// `None`. A time a load tool wrote is a JSON number, never NaN, and one computed from
/// it (milliseconds into seconds) is finite, so nothing read is lost; a `Some(NaN)` given
/// is kept as `None` (no time at all).
#[derive(Clone, Copy)]
pub struct OptF64(f64);

impl OptF64 {
    /// No value.
    pub const NONE: OptF64 = OptF64(f64::NAN);

    /// The value, `None` for none (or NaN).
    pub fn get(self) -> Option<f64> {
        (!self.0.is_nan()).then_some(self.0)
    }

    /// Whether there is a value.
    pub fn is_some(self) -> bool {
        !self.0.is_nan()
    }
}

impl Default for OptF64 {
    fn default() -> Self {
        OptF64::NONE
    }
}

impl From<Option<f64>> for OptF64 {
    fn from(value: Option<f64>) -> Self {
        OptF64(value.unwrap_or(f64::NAN))
    }
}

impl From<f64> for OptF64 {
    fn from(value: f64) -> Self {
        OptF64(value)
    }
}

impl PartialEq for OptF64 {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl std::fmt::Debug for OptF64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

impl Serialize for OptF64 {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(serializer)
    }
}

/// An `Option<u64>` in the 8 bytes of a `u64` (an `Option<u64>` takes 16): `u64::MAX`
/// is `None`, and a count of `u64::MAX` is kept as `u64::MAX - 1`. A count read from a
/// load tool's file comes through an `f64`, where no value lies between 2^64 - 2048 and
/// 2^64 (a larger one saturates, its size already lost), so nothing read is lost.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct OptU64(u64);

impl OptU64 {
    /// No value.
    pub const NONE: OptU64 = OptU64(u64::MAX);

    /// The value, `None` for none.
    pub fn get(self) -> Option<u64> {
        (self.0 != u64::MAX).then_some(self.0)
    }

    /// Whether there is a value.
    pub fn is_some(self) -> bool {
        self.0 != u64::MAX
    }
}

impl Default for OptU64 {
    fn default() -> Self {
        OptU64::NONE
    }
}

impl From<Option<u64>> for OptU64 {
    fn from(value: Option<u64>) -> Self {
        value.map_or(OptU64::NONE, OptU64::from)
    }
}

impl From<u64> for OptU64 {
    fn from(value: u64) -> Self {
        OptU64(value.min(u64::MAX - 1))
    }
}

impl std::fmt::Debug for OptU64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

impl Serialize for OptU64 {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(serializer)
    }
}

/// One request as the load tool recorded it. Times are seconds on [`ClientAccount::clock`].
///
/// A result file can hold millions of these, each kept for the whole run, so each is
/// compact: 112 bytes, not the 240 plain `Option`s took (a file of `{}` records took 55
/// times its size). Times and counts are `Option`s packed into 8 bytes each ([`OptF64`],
/// [`OptU64`]: `.get()` is the `Option`), the error text is boxed without spare capacity.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClientRequest {
    /// How it ended, where the tool says.
    pub outcome: Option<RequestOutcome>,
    /// The error the tool recorded for a failed request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Box<str>>,
    /// When the tool meant to send it (its slot or its schedule), where it says.
    pub scheduled_s: OptF64,
    /// When it was sent.
    pub sent_s: OptF64,
    /// When its first token came.
    pub first_token_s: OptF64,
    /// When it ended.
    pub end_s: OptF64,
    /// Time to first token, as the tool measured it.
    pub ttft_s: OptF64,
    /// End-to-end latency, as the tool measured it.
    pub latency_s: OptF64,
    /// Prompt tokens as the tool counted them (its tokenizer, or the usage it was given).
    pub prompt_tokens: OptU64,
    /// Output tokens as the tool counted them.
    pub output_tokens: OptU64,
    /// The usage the server's answer carried, where the tool kept it apart.
    pub server_prompt_tokens: OptU64,
    /// See `server_prompt_tokens`.
    pub server_output_tokens: OptU64,
    /// The output length the request asked for (`max_tokens`).
    pub asked_output_tokens: OptU64,
    /// Streamed chunks that carried output (`vllm bench serve`: its gaps between chunks
    /// plus the first), where the tool keeps them: a chunk can carry several tokens. In
    /// the record's spare bytes: no answer streams four billion chunks, and none streams
    /// none ([`ClientRequest::chunks`] reads it).
    pub chunk_count: Option<std::num::NonZeroU32>,
    /// Whether the request asked the server to ignore the end-of-sequence token.
    pub ignore_eos: Option<bool>,
}

/// The bound the record's doc states: a field added that takes more fails the build.
const _: () = assert!(std::mem::size_of::<ClientRequest>() <= 112);

impl ClientRequest {
    /// Whether it came back whole.
    pub fn completed(&self) -> bool {
        self.outcome == Some(RequestOutcome::Completed)
    }

    /// The first token's time: recorded, else sent + TTFT.
    pub fn first_token_at(&self) -> Option<f64> {
        self.first_token_s
            .get()
            .or_else(|| Some(self.sent_s.get()? + self.ttft_s.get()?))
    }

    /// Streamed chunks that carried output, where the tool keeps them.
    pub fn chunks(&self) -> Option<u64> {
        self.chunk_count.map(|n| u64::from(n.get()))
    }

    /// Records `n` streamed chunks (none for 0; a count past `u32::MAX` is kept as that).
    pub fn set_chunks(&mut self, n: u64) {
        self.chunk_count = std::num::NonZeroU32::new(u32::try_from(n).unwrap_or(u32::MAX));
    }

    /// The end's time: recorded, else sent + latency.
    pub fn end_at(&self) -> Option<f64> {
        self.end_s
            .get()
            .or_else(|| Some(self.sent_s.get()? + self.latency_s.get()?))
    }
}

/// How a reader keeps the request records it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Keep {
    /// Each as a [`ClientRequest`] in [`ClientAccount::requests`], its gaps between
    /// tokens in [`ClientAccount::inter_token_ms`]: what the checks and the report read.
    #[default]
    Records,
    /// Each folded, as it is read, into what the replay of the load reads
    /// ([`ReplayRecord`], 48 bytes, in [`ClientAccount::replay`]), its outcome, error and
    /// times counted as the account's own counts read them: `whatif` of a million
    /// requests. No [`ClientRequest`] and no gap between tokens is kept.
    ForReplay,
}

/// A request record as the replay of the load reads it (`whatif`): its send time, what it
/// measured (its first token and its end, where it completed) and its lengths as served,
/// in 48 bytes where a [`ClientRequest`] takes 112 and its gaps between tokens more.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplayRecord {
    /// When it was sent: always a finite time.
    pub sent_s: f64,
    /// When its first token came (recorded, else sent + TTFT), where it completed.
    pub first_token_s: OptF64,
    /// When it ended (recorded, else sent + latency), where it completed.
    pub end_s: OptF64,
    /// Its prompt as served: the server's usage where the tool kept it apart, else the
    /// tool's count.
    pub prompt: u64,
    /// A completed request's output as served (the server's usage, else the tool's
    /// count); a failed one's length asked for (`max_tokens`), where known.
    pub output: OptU64,
    /// Whether it came back whole.
    pub completed: bool,
}

/// Why a record cannot be replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreplayable {
    /// It has no send time (or one that is not finite).
    NoSendTime,
    /// It has no prompt length.
    NoPromptLength,
}

impl ReplayRecord {
    /// What the replay reads of a record, or why it cannot send it. No time read is
    /// lost: a time a [`ClientRequest`] holds is never NaN, and a first token or end made
    /// from a finite send time and a TTFT or latency that is no NaN is none either.
    pub fn of(r: &ClientRequest) -> Result<ReplayRecord, Unreplayable> {
        let sent_s = r
            .sent_s
            .get()
            .filter(|t| t.is_finite())
            .ok_or(Unreplayable::NoSendTime)?;
        let prompt = r
            .server_prompt_tokens
            .get()
            .or(r.prompt_tokens.get())
            .ok_or(Unreplayable::NoPromptLength)?;
        let completed = r.completed();
        let output = if completed {
            r.server_output_tokens.get().or(r.output_tokens.get())
        } else {
            r.asked_output_tokens.get()
        };
        Ok(ReplayRecord {
            sent_s,
            first_token_s: r.first_token_at().filter(|_| completed).into(),
            end_s: r.end_at().filter(|_| completed).into(),
            prompt,
            output: output.into(),
            completed,
        })
    }
}

/// The bound the record's doc states.
const _: () = assert!(std::mem::size_of::<ReplayRecord>() <= 48);

/// An account's records kept for the replay ([`Keep::ForReplay`]): each replayable one
/// as a [`ReplayRecord`], and of all of them what the account's counts and the result's
/// placement read (how many, by outcome, the failures' errors, the span of their times).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayRecords {
    /// Each record with a send time and a prompt length, in the order kept.
    pub rows: Vec<ReplayRecord>,
    /// Records kept in all.
    pub records: usize,
    /// Records with no send time; with a send time but no prompt length.
    pub no_send_time: usize,
    /// See `no_send_time`.
    pub no_prompt_length: usize,
    completed: usize,
    failed: usize,
    incomplete: usize,
    failure_reasons: Vec<FailureReason>,
    first_sent: Option<f64>,
    last_seen: Option<f64>,
}

impl ReplayRecords {
    /// One more record.
    pub fn fold(&mut self, r: &ClientRequest) {
        self.records += 1;
        match r.outcome {
            Some(RequestOutcome::Completed) => self.completed += 1,
            Some(RequestOutcome::Failed) => {
                self.failed += 1;
                add_reason(
                    &mut self.failure_reasons,
                    r.error.as_deref().unwrap_or("no error text"),
                    1,
                );
            }
            Some(RequestOutcome::Incomplete) => self.incomplete += 1,
            None => {}
        }
        // The span `identity` places a result of Unix times by, folded as it folds it.
        if let Some(t) = r.sent_s.get().or(r.scheduled_s.get()) {
            self.first_sent = Some(self.first_sent.unwrap_or(f64::INFINITY).min(t));
        }
        if let Some(t) = r.end_s.get().or(r.first_token_s.get()).or(r.sent_s.get()) {
            self.last_seen = Some(self.last_seen.unwrap_or(f64::NEG_INFINITY).max(t));
        }
        match ReplayRecord::of(r) {
            Ok(row) => self.rows.push(row),
            Err(Unreplayable::NoSendTime) => self.no_send_time += 1,
            Err(Unreplayable::NoPromptLength) => self.no_prompt_length += 1,
        }
    }
}

/// Failed requests of one kind, as the tool worded the error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailureReason {
    /// The error, as the tool worded it.
    pub reason: String,
    /// Requests that failed so.
    pub count: u64,
}

/// The lengths the run was set up with (its random or synthetic data).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Advertised {
    /// Prompt tokens per request asked for, not counting a shared prefix
    /// ([`Advertised::prefix_tokens`]).
    pub input_tokens: Option<f64>,
    /// Tokens of one shared prefix the tool puts before every prompt, on top of
    /// `input_tokens` (`vllm bench serve --random-prefix-len`: the prompt it sends and
    /// counts is the prefix followed by the random part).
    pub prefix_tokens: Option<f64>,
    /// Output tokens per request asked for.
    pub output_tokens: Option<f64>,
    /// The tool's own range setting, as it wrote it (its meaning is the tool's).
    pub range_ratio: Option<f64>,
    /// Whether requests asked the server to ignore the end-of-sequence token.
    pub ignore_eos: Option<bool>,
    /// The dataset the prompts came from, as the tool names it (`vllm bench serve
    /// --dataset-name random`, `custom`, `sharegpt`); `None` where the file does not say.
    pub dataset: Option<String>,
}

/// What the timed span leaves out.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TimedSpan {
    /// Requests sent outside the timed span that the file itself counts (warm-up), or
    /// that the tool's console output, read beside it, announced (a test request);
    /// `None` when neither says.
    pub untimed_requests: Option<u64>,
    /// Seconds of warm-up and cool-down the tool left out of its figures.
    pub warmup_s: Option<f64>,
    /// See `warmup_s`.
    pub cooldown_s: Option<f64>,
    /// The timed span's ends, on [`ClientAccount::clock`].
    pub start_s: Option<f64>,
    /// See `start_s`.
    pub end_s: Option<f64>,
}

/// The load tool's own account of a run: one model whatever the tool.
///
/// The field names of the counts and figures the engines' clients share
/// (`completed`, `failed`, `total_output_tokens`, `duration`, `output_throughput`,
/// `max_concurrency`, the TTFT and TPOT statistics) are kept as `vllm bench serve`
/// writes them, since T15 and the established tool speak of them so.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientAccount {
    /// The tool that wrote the file.
    pub tool: LoadTool,
    /// Its version, when the file says.
    pub tool_version: Option<String>,
    /// Requests the timed run sent.
    pub sent: Option<i64>,
    /// Requests that came back whole.
    pub completed: Option<i64>,
    /// Requests that failed (an error answer, a timeout, a broken stream).
    pub failed: Option<i64>,
    /// Requests still in flight or cancelled when the tool stopped.
    pub incomplete: Option<i64>,
    /// The failed requests by the error the tool recorded.
    pub failure_reasons: Vec<FailureReason>,
    /// Prompt and output tokens of the completed requests, as the tool counted them.
    pub total_input_tokens: Option<i64>,
    /// See `total_input_tokens`.
    pub total_output_tokens: Option<i64>,
    /// The timed span, in seconds.
    pub duration: Option<f64>,
    /// What the timed span leaves out.
    pub span: TimedSpan,
    /// Output tokens per second over the timed span, as the tool reports it.
    pub output_throughput: Option<f64>,
    /// The concurrency asked for.
    pub max_concurrency: Option<i64>,
    /// The request rate asked for (requests per second); `None` when unlimited or unsaid.
    pub request_rate: Option<f64>,
    /// The tool's backend or endpoint (`openai`, `sglang`, `/v1/chat/completions`).
    pub backend: Option<String>,
    /// Mean time to first token, in milliseconds.
    pub mean_ttft_ms: Option<f64>,
    /// Median time to first token, in milliseconds.
    pub median_ttft_ms: Option<f64>,
    /// 99th percentile of the time to first token, in milliseconds.
    pub p99_ttft_ms: Option<f64>,
    /// Mean time per output token, in milliseconds.
    pub mean_tpot_ms: Option<f64>,
    /// The lengths the run was set up with.
    pub advertised: Advertised,
    /// The thresholds the tool was given for its own goodput, as it printed them
    /// (`vllm bench serve --goodput ttft:500 tpot:50`: milliseconds, each request held to
    /// each); empty when it was given none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub goodput: Vec<String>,
    /// One record per request of the timed run, where the files keep them, in the order
    /// the tool sent them when it says.
    pub requests: Vec<ClientRequest>,
    /// The ids the tool gave its requests, where it says: `vllm bench serve` sends
    /// request `i` of its records as `X-Request-Id: PREFIX{i}` (`--request-id-prefix`,
    /// printed in its settings line), which the server's own records carry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id_prefix: Option<String>,
    /// The clock of the records' times; `None` when they carry no time of day.
    pub clock: Option<RequestClock>,
    /// Every gap between two streamed tokens the records hold, in milliseconds.
    pub inter_token_ms: Vec<f32>,
    /// How the records are kept: as [`ClientRequest`]s (`requests`), or for the replay
    /// alone (`replay`).
    #[serde(skip)]
    pub keep: Keep,
    /// The records kept for the replay, where `keep` says so.
    #[serde(skip)]
    pub replay: ReplayRecords,
    /// Benchmarks, stages or lines of the file summed into this account.
    pub parts: usize,
    /// What a reader should know about how the account was read.
    pub notes: Vec<String>,
    /// What the file says of the run it measured (its model, its times, the server it
    /// addressed), by which `identity` ties it to the server's readings.
    pub identity: ResultIdentity,
}

/// What a result file says of the run it measured, beside its counts: each field as the
/// tool wrote it, `None` where the file does not say.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ResultIdentity {
    /// The model the load addressed (`model_id`, `model`, the served name or a path).
    pub model: Option<String>,
    /// A time of day without a zone that the tool wrote when it saved the file, after
    /// the run (`vllm bench serve`'s `date`, `20260930-204849`): seconds since
    /// 1970-01-01 00:00 read as if the time were UTC. The zone it was written in is
    /// unknown, so `identity` tries every zone that exists.
    pub saved_local_s: Option<f64>,
    /// How finely `saved_local_s` was written, in seconds (1 for `%H%M%S`).
    pub saved_resolution_s: f64,
    /// The run's start and end as Unix times, where the file has them.
    pub start_unix_s: Option<f64>,
    /// See `start_unix_s`.
    pub end_unix_s: Option<f64>,
    /// The server the tool says it measured (SGLang's `server_info`): its model path.
    pub server_model: Option<String>,
    /// Its port.
    pub server_port: Option<u16>,
    /// Its version.
    pub server_version: Option<String>,
}

/// Adds `more` to the end of `kept`, moving it whole when `kept` is empty: a list read as
/// a stream is never copied (appending to an empty list would hold both at once).
fn extend_moving<T>(kept: &mut Vec<T>, mut more: Vec<T>) {
    if kept.is_empty() {
        *kept = more;
    } else {
        kept.append(&mut more);
    }
}

impl ClientAccount {
    /// Keeps a stretch of request records, and the gaps between tokens they point into,
    /// after those already kept (a tool that writes several experiments or lists).
    pub fn keep_records(&mut self, requests: Vec<ClientRequest>, gaps: Vec<f32>) {
        match self.keep {
            Keep::Records => {
                extend_moving(&mut self.requests, requests);
                extend_moving(&mut self.inter_token_ms, gaps);
            }
            Keep::ForReplay => {
                for r in &requests {
                    self.replay.fold(r);
                }
            }
        }
    }

    /// Keeps one request record, as `keep` says.
    pub fn keep_record(&mut self, request: ClientRequest) {
        match self.keep {
            Keep::Records => self.requests.push(request),
            Keep::ForReplay => self.replay.fold(&request),
        }
    }

    /// From now on keeps the records for the replay alone ([`Keep::ForReplay`]): those
    /// already kept are folded, in their order, and their gaps between tokens dropped.
    pub fn keep_for_replay(&mut self) {
        self.keep = Keep::ForReplay;
        for r in std::mem::take(&mut self.requests) {
            self.replay.fold(&r);
        }
        self.inter_token_ms = Vec::new();
    }

    /// Request records kept, however they are kept.
    pub fn record_count(&self) -> usize {
        match self.keep {
            Keep::Records => self.requests.len(),
            Keep::ForReplay => self.replay.records,
        }
    }

    /// The span of the records' times as `identity` places a result of Unix times: the
    /// earliest send (else the time it was meant to be sent), the latest end (else first
    /// token, else send); `None` without both.
    pub fn records_span(&self) -> Option<(f64, f64)> {
        let (first, last) = match self.keep {
            Keep::Records => (
                self.requests
                    .iter()
                    .filter_map(|r| r.sent_s.get().or(r.scheduled_s.get()))
                    .fold(f64::INFINITY, f64::min),
                self.requests
                    .iter()
                    .filter_map(|r| r.end_s.get().or(r.first_token_s.get()).or(r.sent_s.get()))
                    .fold(f64::NEG_INFINITY, f64::max),
            ),
            Keep::ForReplay => (
                self.replay.first_sent.unwrap_or(f64::INFINITY),
                self.replay.last_seen.unwrap_or(f64::NEG_INFINITY),
            ),
        };
        (first.is_finite() && last.is_finite()).then_some((first, last))
    }

    /// An account with nothing known but the tool.
    pub fn new(tool: LoadTool) -> ClientAccount {
        ClientAccount {
            tool,
            tool_version: None,
            sent: None,
            completed: None,
            failed: None,
            incomplete: None,
            failure_reasons: Vec::new(),
            total_input_tokens: None,
            total_output_tokens: None,
            duration: None,
            span: TimedSpan::default(),
            output_throughput: None,
            max_concurrency: None,
            request_rate: None,
            backend: None,
            mean_ttft_ms: None,
            median_ttft_ms: None,
            p99_ttft_ms: None,
            mean_tpot_ms: None,
            advertised: Advertised::default(),
            goodput: Vec::new(),
            requests: Vec::new(),
            request_id_prefix: None,
            clock: None,
            inter_token_ms: Vec::new(),
            keep: Keep::Records,
            replay: ReplayRecords::default(),
            parts: 1,
            notes: Vec::new(),
            identity: ResultIdentity::default(),
        }
    }

    /// `GuideLLM 0.8.1`, or the name alone when the file does not say its version.
    pub fn tool_label(&self) -> String {
        match &self.tool_version {
            Some(v) => format!("{} {v}", self.tool.name()),
            None => self.tool.name().to_owned(),
        }
    }

    /// Requests by outcome in the per-request records.
    pub fn records_with(&self, outcome: RequestOutcome) -> usize {
        match self.keep {
            Keep::Records => self
                .requests
                .iter()
                .filter(|r| r.outcome == Some(outcome))
                .count(),
            Keep::ForReplay => match outcome {
                RequestOutcome::Completed => self.replay.completed,
                RequestOutcome::Failed => self.replay.failed,
                RequestOutcome::Incomplete => self.replay.incomplete,
            },
        }
    }

    /// Failed requests: the file's count, else the records'.
    pub fn failed_count(&self) -> Option<i64> {
        self.failed.or_else(|| {
            (self.record_count() > 0).then(|| self.records_with(RequestOutcome::Failed) as i64)
        })
    }

    /// Incomplete requests: the file's count, else the records'.
    pub fn incomplete_count(&self) -> Option<i64> {
        self.incomplete.or_else(|| {
            (self.record_count() > 0).then(|| self.records_with(RequestOutcome::Incomplete) as i64)
        })
    }

    /// A count no run can have: a negative number of requests or tokens. The readers
    /// refuse the file then (its other counts are in doubt too).
    pub fn impossible_count(&self) -> Option<String> {
        let counts = [
            ("requests sent", self.sent),
            ("completed requests", self.completed),
            ("failed requests", self.failed),
            ("requests cut off", self.incomplete),
            ("prompt tokens", self.total_input_tokens),
            ("output tokens", self.total_output_tokens),
        ];
        counts.into_iter().find_map(|(what, count)| {
            count
                .filter(|c| *c < 0)
                .map(|c| format!("its count of {what} is {c}, which no count can be"))
        })
    }

    /// Where the account's own counts cannot all be true of one run: more requests
    /// completed, failed or cut off than were sent, or more records of an outcome than the
    /// count of it (a tool may keep a sample of its requests, never more than it counted).
    /// Each count alone could be right; which one is wrong cannot be told.
    pub fn contradiction(&self) -> Option<String> {
        let failed = self.failed.unwrap_or(0).max(0);
        let incomplete = self.incomplete.unwrap_or(0).max(0);
        if let (Some(sent), Some(completed)) = (self.sent, self.completed) {
            let ended = completed.max(0) + failed + incomplete;
            if sent >= 0 && ended > sent {
                return Some(format!(
                    "it counts {sent} request{} sent but {ended} that ended ({completed} completed, {failed} failed{})",
                    if sent == 1 { "" } else { "s" },
                    if incomplete > 0 {
                        format!(", {incomplete} cut off")
                    } else {
                        String::new()
                    }
                ));
            }
        }
        if let Some(sent) = self.sent.filter(|s| *s >= 0) {
            if self.record_count() as i64 > sent {
                return Some(format!(
                    "it keeps {} request records but counts {sent} sent",
                    self.record_count()
                ));
            }
        }
        let counted = [
            ("completed", self.completed, RequestOutcome::Completed),
            ("failed", self.failed, RequestOutcome::Failed),
            ("cut off", self.incomplete, RequestOutcome::Incomplete),
        ];
        for (word, count, outcome) in counted {
            let records = self.records_with(outcome) as i64;
            if let Some(count) = count.filter(|c| records > *c) {
                return Some(format!(
                    "it counts {count} {word}, but {records} of its request records are {word}"
                ));
            }
        }
        None
    }

    /// Whether the account can show a failure at all: a count, or a record per request.
    pub fn shows_failures(&self) -> bool {
        self.failed.is_some() || self.record_count() > 0
    }

    /// Adds one failure reason (counting repeats).
    pub fn add_failure_reason(&mut self, reason: &str, count: u64) {
        add_reason(&mut self.failure_reasons, reason, count);
    }

    /// Fills the counts the records can give where the summary did not, and drops the
    /// latency figures of a run with no completed request: tools write them as zeros
    /// (or `NaN`), which measure nothing.
    pub fn count_from_records(&mut self) {
        self.fill_counts_from_records();
        if self.completed == Some(0) {
            self.mean_ttft_ms = None;
            self.median_ttft_ms = None;
            self.p99_ttft_ms = None;
            self.mean_tpot_ms = None;
        }
    }

    fn fill_counts_from_records(&mut self) {
        if self.record_count() == 0 {
            return;
        }
        let completed = self.records_with(RequestOutcome::Completed) as i64;
        let failed = self.records_with(RequestOutcome::Failed) as i64;
        let incomplete = self.records_with(RequestOutcome::Incomplete) as i64;
        self.completed.get_or_insert(completed);
        self.failed.get_or_insert(failed);
        if self.incomplete.is_none() && incomplete > 0 {
            self.incomplete = Some(incomplete);
        }
        self.sent.get_or_insert(self.record_count() as i64);
        if self.failure_reasons.is_empty() && self.keep == Keep::ForReplay {
            // Folded as each record was kept, as the records' reasons are added below.
            self.failure_reasons = self.replay.failure_reasons.clone();
        } else if self.failure_reasons.is_empty() {
            let errors: Vec<String> = self
                .requests
                .iter()
                .filter(|r| r.outcome == Some(RequestOutcome::Failed))
                .map(|r| r.error.as_deref().unwrap_or("no error text").to_owned())
                .collect();
            for e in errors {
                self.add_failure_reason(&e, 1);
            }
        }
    }
}

/// Adds one failure reason to a list (counting repeats), as its line that says what it was.
fn add_reason(reasons: &mut Vec<FailureReason>, reason: &str, count: u64) {
    let reason = one_line(reason, 200);
    match reasons.iter_mut().find(|r| r.reason == reason) {
        Some(r) => r.count += count,
        None => reasons.push(FailureReason { reason, count }),
    }
}

/// The line that says what an error was, at most `max` characters: its first line, or
/// for a Python traceback (`vllm bench serve` keeps the whole traceback of a request
/// that could not connect) its last, where Python names the exception.
pub fn one_line(text: &str, max: usize) -> String {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("");
    let line = if first.starts_with("Traceback (most recent call last)") {
        lines.next_back().unwrap_or(first)
    } else {
        first
    };
    let mut out: String = line.chars().take(max).collect();
    if line.chars().count() > max {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed Options hold every value a file can give, and read and write as the
    /// plain Options did.
    #[test]
    fn packed_options_keep_every_value_a_file_gives() {
        for v in [0.0, -1.5, 1.7e9, f64::MAX, f64::INFINITY, -0.0] {
            assert_eq!(OptF64::from(Some(v)).get(), Some(v));
        }
        assert_eq!(OptF64::from(None).get(), None);
        assert_eq!(OptF64::default().get(), None);
        assert_eq!(OptF64::from(f64::NAN).get(), None);
        for v in [0, 1, u64::MAX - 1, (1u64 << 53) + 1] {
            assert_eq!(OptU64::from(Some(v)).get(), Some(v));
        }
        assert_eq!(OptU64::default().get(), None);
        // The largest count a file gives comes through an f64 and saturates there.
        assert_eq!(OptU64::from(1e30_f64 as u64).get(), Some(u64::MAX - 1));
        let record = ClientRequest {
            sent_s: 1.5.into(),
            output_tokens: 7.into(),
            ..ClientRequest::default()
        };
        let json = serde_json::to_value(&record).unwrap_or_default();
        assert_eq!(json["sent_s"], 1.5);
        assert_eq!(json["output_tokens"], 7);
        assert!(json["end_s"].is_null() && json["prompt_tokens"].is_null());
        assert_eq!(std::mem::size_of::<ClientRequest>(), 112);
    }

    #[test]
    fn an_error_is_named_by_its_line_that_says_what_it_was() {
        assert_eq!(one_line("Bad Request\n<html>", 200), "Bad Request");
        // Python prints the exception last, after the frames.
        let traceback = "Traceback (most recent call last):\n  File \"x.py\", line 3, in f\n    raise e\naiohttp.client_exceptions.ClientConnectorError: Cannot connect to host 127.0.0.1:42557\n\n";
        assert_eq!(
            one_line(traceback, 200),
            "aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host 127.0.0.1:42557"
        );
        assert_eq!(
            one_line("Traceback (most recent call last):", 200),
            "Traceback (most recent call last):"
        );
        assert_eq!(one_line("abcdef", 3), "abc…");
    }

    #[test]
    fn every_tool_has_one_table_with_its_own_key() {
        let mut keys: Vec<&str> = LoadTool::ALL.iter().map(|t| t.info().key).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), LoadTool::ALL.len());
        for tool in LoadTool::ALL {
            assert_eq!(tool.info().tool, tool);
        }
    }

    #[test]
    fn records_fill_the_counts_a_summary_left_out() {
        let mut account = ClientAccount::new(LoadTool::SglangBench);
        account.completed = Some(2);
        for (outcome, error) in [
            (RequestOutcome::Completed, None),
            (RequestOutcome::Failed, Some("Internal Server Error\nmore")),
            (RequestOutcome::Completed, None),
            (RequestOutcome::Failed, Some("Internal Server Error")),
        ] {
            account.requests.push(ClientRequest {
                outcome: Some(outcome),
                error: error.map(str::to_owned).map(Into::into),
                ..ClientRequest::default()
            });
        }
        account.count_from_records();
        assert_eq!(
            (
                account.sent,
                account.completed,
                account.failed,
                account.incomplete
            ),
            (Some(4), Some(2), Some(2), None)
        );
        assert_eq!(
            account.failure_reasons,
            [FailureReason {
                reason: "Internal Server Error".into(),
                count: 2
            }]
        );
    }

    /// An account that keeps its records for the replay alone counts them, names their
    /// failures and places their times as the account of whole records does, whether it
    /// folded them as they were kept or once they all were.
    #[test]
    fn records_kept_for_the_replay_are_counted_as_whole_records_are() {
        let records: Vec<ClientRequest> = (0..40u64)
            .map(|i| {
                let outcome = match i % 5 {
                    0 => Some(RequestOutcome::Failed),
                    1 if i % 3 == 0 => Some(RequestOutcome::Incomplete),
                    2 if i % 7 == 0 => None,
                    _ => Some(RequestOutcome::Completed),
                };
                ClientRequest {
                    outcome,
                    error: (i % 10 == 0).then(|| format!("Bad Request {}\nmore", i % 20).into()),
                    scheduled_s: (i % 4 == 0).then_some(1.7e9 + i as f64).into(),
                    sent_s: (i % 6 != 0).then_some(1.7e9 + 0.5 + i as f64).into(),
                    end_s: (i % 2 == 0).then_some(1.7e9 + 3.0 + i as f64).into(),
                    first_token_s: (i % 3 == 0).then_some(1.7e9 + 1.0 + i as f64).into(),
                    prompt_tokens: (i % 9 != 0).then_some(10 + i).into(),
                    ..ClientRequest::default()
                }
            })
            .collect();
        let mut whole = ClientAccount::new(LoadTool::GuideLlm);
        whole.keep_records(records.clone(), vec![1.0; 80]);
        let mut folded = ClientAccount::new(LoadTool::GuideLlm);
        folded.keep = Keep::ForReplay;
        for r in records.iter().take(10).cloned() {
            folded.keep_record(r);
        }
        folded.keep_records(records[10..].to_vec(), vec![1.0; 60]);
        let mut after = whole.clone();
        after.keep_for_replay();
        for account in [&mut whole, &mut folded, &mut after] {
            account.sent = Some(39);
            account.count_from_records();
        }
        for other in [&folded, &after] {
            assert!(other.requests.is_empty() && other.inter_token_ms.is_empty());
            assert_eq!(other.record_count(), whole.record_count());
            assert_eq!(
                (other.sent, other.completed, other.failed, other.incomplete),
                (whole.sent, whole.completed, whole.failed, whole.incomplete)
            );
            assert_eq!(other.failure_reasons, whole.failure_reasons);
            for outcome in [
                RequestOutcome::Completed,
                RequestOutcome::Failed,
                RequestOutcome::Incomplete,
            ] {
                assert_eq!(other.records_with(outcome), whole.records_with(outcome));
            }
            assert_eq!(other.contradiction(), whole.contradiction());
            assert_eq!(other.records_span(), whole.records_span());
            assert_eq!(other.shows_failures(), whole.shows_failures());
            let rows: Vec<ReplayRecord> = whole
                .requests
                .iter()
                .filter_map(|r| ReplayRecord::of(r).ok())
                .collect();
            assert_eq!(other.replay.rows, rows);
        }
        assert!(whole.contradiction().is_some());
        assert_eq!(
            whole.failure_reasons.len(),
            3,
            "{:?}",
            whole.failure_reasons
        );
        assert_eq!(
            (folded.replay.no_send_time, folded.replay.no_prompt_length),
            (7, 2)
        );
    }

    #[test]
    fn an_error_is_kept_to_one_line() {
        assert_eq!(one_line("\n  Bad Request\n <html>", 9), "Bad Reque…");
        assert_eq!(one_line("", 9), "");
    }
}
