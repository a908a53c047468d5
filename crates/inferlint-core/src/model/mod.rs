//! The run model: what a server recorded about one benchmark run, as plain data.
//!
//! A run is whichever of these is present: boot logs (as [`BootFacts`]), a before and an
//! after [`Snapshot`], a series of [`SeriesSample`]s, and the load tool's account
//! ([`crate::model::client::ClientAccount`]).

pub mod civil;
pub mod client;
pub mod facts;
pub mod lives;
pub mod metrics;
pub mod object;
pub mod requests;
pub mod server_records;
pub mod steps;
pub mod traces;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::engine::Engine;
use crate::model::metrics::MetricSet;

/// One reading of a server's metrics, with the clocks read around it.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Where it was read (a URL, or `file:NAME` for bare Prometheus text).
    pub url: String,
    /// Wall clock, Unix seconds, midpoint of the request; `None` for bare text.
    pub t_wall: Option<f64>,
    /// Monotonic clock in nanoseconds, midpoint of the request.
    pub t_mono_ns: Option<i64>,
    /// How long the request took; half of it bounds the clock error.
    pub latency_s: Option<f64>,
    /// The exposition text exactly as served.
    pub text: String,
    /// Its samples.
    pub metrics: MetricSet,
}

/// The first line of a series recording.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SeriesHeader {
    /// The address recorded.
    pub url: Option<String>,
    /// The time between two readings, in seconds.
    pub interval_s: Option<f64>,
    /// `None` in older vLLM recordings, read as vLLM's.
    pub engine: Option<Engine>,
    /// An engine key the header named that is none of ours.
    pub unknown_engine: Option<String>,
    /// Whether the recorder read the GPUs beside the metrics (`gpu` in the header); `None`
    /// in recordings that do not say (the Python tool's, older ones of ours).
    pub gpu: Option<GpuSampling>,
    /// How the recorder asked for each page after the first (`pages` in the header);
    /// `None` in recordings that do not say.
    pub pages: Option<PageRequest>,
}

/// How a recorder asked the server for each page after its first, whole one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PageRequest {
    /// The path read (`/metrics/`), without the query.
    pub path: String,
    /// How many sample names the page was narrowed to with prometheus_client's
    /// `name[]` filter; `None` when the whole page was read.
    pub filtered_to: Option<u64>,
    /// Why the whole page was read, when it was: the server ignores the filter, or its
    /// narrowed page lacks a sample the whole one has, or the recorder was told to.
    pub whole_because: Option<String>,
}

/// What a recorder said about the GPUs it read beside the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuSampling {
    /// Every sample carries a reading of the server's GPUs (NVML), where it could be taken.
    Nvml,
    /// The server uses no NVIDIA GPU the recorder could read: none on its machine, no
    /// driver, or the user said so.
    None,
    /// The server was on another machine: its GPUs, whatever they are, were not read.
    Elsewhere,
}

impl GpuSampling {
    /// The header's word: `nvml`, `none`, `elsewhere`.
    pub fn key(self) -> &'static str {
        match self {
            GpuSampling::Nvml => "nvml",
            GpuSampling::None => "none",
            GpuSampling::Elsewhere => "elsewhere",
        }
    }

    /// The header word read back; `None` for a word no recorder writes.
    pub fn parse(word: &str) -> Option<GpuSampling> {
        match word {
            "nvml" => Some(GpuSampling::Nvml),
            "none" => Some(GpuSampling::None),
            "elsewhere" => Some(GpuSampling::Elsewhere),
            _ => None,
        }
    }
}

/// One reading of the server's GPUs taken beside a series sample: who else uses them and
/// whether their clocks were held back. Over several GPUs, memory and use of other
/// processes are summed or the highest, the clock is the lowest (with that GPU's maximum),
/// and the clock-event reasons are all those any GPU had. Every value is `None` where NVML
/// could not say: never 0.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GpuReading {
    /// MiB held by processes that are not the server's, on the server's GPUs.
    pub other_mib: Option<f64>,
    /// The highest share of the streaming multiprocessors (percent) a process that is not
    /// the server's used on one of the server's GPUs, over NVML's last sampling period.
    pub other_util: Option<f64>,
    /// The highest utilisation (percent) of one of the server's GPUs.
    pub util: Option<f64>,
    /// The clock-event (throttle) reasons NVML reported, as its bit mask.
    pub throttle: Option<f64>,
    /// The lowest SM clock of the server's GPUs, in MHz, and that GPU's maximum.
    pub sm_mhz: Option<f64>,
    /// The maximum SM clock of the GPU with the lowest clock, in MHz.
    pub sm_max_mhz: Option<f64>,
}

impl GpuReading {
    /// Whether the reading holds anything.
    pub fn is_empty(&self) -> bool {
        *self == GpuReading::default()
    }

    /// Why this reading cannot be, if it cannot (see [`SeriesSample::impossible_reading`]).
    fn impossible(&self) -> Option<String> {
        let amounts = [
            ("gpu_other_mib", self.other_mib, f64::INFINITY),
            ("gpu_other_util", self.other_util, 100.0),
            ("gpu_util", self.util, 100.0),
            ("gpu_sm_mhz", self.sm_mhz, 100_000.0),
            ("gpu_sm_max_mhz", self.sm_max_mhz, 100_000.0),
        ];
        for (name, value, most) in amounts {
            if let Some(v) = value {
                if !(v.is_finite() && (0.0..=most).contains(&v)) {
                    return Some(format!(
                        "{name} is {v}, which no GPU reading can be (0 to {})",
                        crate::story::fmt::g(most)
                    ));
                }
            }
        }
        if let Some(bits) = self.throttle {
            if !(bits.is_finite() && bits >= 0.0 && bits.fract() == 0.0 && bits <= MAX_EXACT_COUNT)
            {
                return Some(format!(
                    "gpu_throttle is {bits}, which is no bit mask of clock-event reasons"
                ));
            }
        }
        None
    }
}

/// One reading of a series. Every value is `None` when the scrape lacked it: never 0.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SeriesSample {
    /// Wall clock, Unix seconds.
    pub t_wall: f64,
    /// Monotonic clock, nanoseconds.
    pub t_mono_ns: Option<i64>,
    /// Requests running.
    pub running: Option<f64>,
    /// Requests waiting.
    pub waiting: Option<f64>,
    /// Of the waiting requests, those waiting for room in the batch or the KV cache, where
    /// the engine splits its waiting gauge by reason
    /// ([`crate::engine::WaitingReasons::capacity`]).
    pub waiting_capacity: Option<f64>,
    /// Of the waiting requests, those held back by something other than room (a KV
    /// transfer, a grammar still compiling: [`crate::engine::WaitingReasons::deferred`]).
    pub waiting_deferred: Option<f64>,
    /// KV cache use, 0 to 1.
    pub kv_usage: Option<f64>,
    /// The preemption counter.
    pub preemptions: Option<f64>,
    /// The output tokens counter.
    pub generation_tokens: Option<f64>,
    /// The prompt tokens counter.
    pub prompt_tokens: Option<f64>,
    /// TensorRT-LLM: requests paused for recompute.
    pub paused: Option<f64>,
    /// Prompt tokens the prefix cache served (the engine's counters, see
    /// [`crate::engine::PrefixCacheCounters`]).
    pub prefix_hits: Option<f64>,
    /// Prompt tokens looked up in the prefix cache.
    pub prefix_queries: Option<f64>,
    /// The server's GPUs, where the recorder read them.
    pub gpu: GpuReading,
}

/// A fold over a recording's samples that a reader can split: each stretch of the file is
/// folded into its own copy of the empty fold, on a thread of its own, and the stretches
/// are joined in file order. The checks' statistics fold this way, and so does whatever a
/// caller folds in the same pass over the file (the report's charts).
pub trait SampleFold: Clone + Send + Sync {
    /// Folds one sample in; samples arrive in recording order.
    fn push(&mut self, sample: &SeriesSample);

    /// Joins `right`, the fold of the samples that follow, onto `self`, the fold of every
    /// sample before them from the recording's first.
    #[must_use]
    fn merge(self, right: Self) -> Self;
}

/// The largest whole number an `f64` holds exactly: a count above it cannot be a count
/// anything recorded.
pub const MAX_EXACT_COUNT: f64 = 9_007_199_254_740_992.0;

/// The latest wall time a reading may carry, in Unix seconds (about the year 5100): a
/// recording stamped later than that was not made by a clock.
pub const MAX_WALL_TIME: f64 = 1e11;

impl SeriesSample {
    /// Why this reading cannot be what it claims, if it cannot: a wall time that is not
    /// a time; a count of requests (running, waiting, paused) that is not a whole number
    /// from 0 up; a counter that is negative or not finite; a KV usage outside 0 to 1
    /// (with a note when it reads as a percent written where the fraction belongs). The
    /// text names the field and its value, e.g. `running is inf, which no count of
    /// requests can be`.
    pub fn impossible_reading(&self) -> Option<String> {
        if !(0.0..MAX_WALL_TIME).contains(&self.t_wall) {
            return Some(format!(
                "t_wall is {}, which is no Unix time in seconds",
                self.t_wall
            ));
        }
        let counts = [
            ("running", self.running),
            ("waiting", self.waiting),
            ("waiting_capacity", self.waiting_capacity),
            ("waiting_deferred", self.waiting_deferred),
            ("paused", self.paused),
        ];
        for (name, value) in counts {
            if let Some(v) = value {
                if !(v.is_finite() && (0.0..=MAX_EXACT_COUNT).contains(&v) && v.fract() == 0.0) {
                    return Some(format!(
                        "{name} is {v}, which no count of requests can be (a whole number from 0 up)"
                    ));
                }
            }
        }
        let counters = [
            ("preemptions", self.preemptions),
            ("generation_tokens", self.generation_tokens),
            ("prompt_tokens", self.prompt_tokens),
            ("prefix_cache_hits", self.prefix_hits),
            ("prefix_cache_queries", self.prefix_queries),
        ];
        for (name, value) in counters {
            if let Some(v) = value {
                if !(v.is_finite() && v >= 0.0) {
                    return Some(format!(
                        "{name} is {v}, which no counter can be (a finite number from 0 up)"
                    ));
                }
            }
        }
        if let Some(u) = self.kv_usage {
            // A weighted mean over data-parallel engines can land a rounding error above 1.
            if !(u.is_finite() && (-1e-9..=1.0 + 1e-9).contains(&u)) {
                let mut message =
                    format!("kv_usage is {u}, which no share of the cache can be (0 to 1)");
                if u > 1.0 && u <= 100.0 {
                    message.push_str(&format!(
                        "; it reads as a percent ({u}%) written where the fraction ({}) belongs",
                        u / 100.0
                    ));
                }
                return Some(message);
            }
        }
        self.gpu.impossible()
    }
}

/// A value from a Python-literal dict in a boot log (`non-default args: {...}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PyValue {
    /// `None`.
    None,
    /// `True` or `False`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// A list or tuple.
    List(Vec<PyValue>),
    /// A dict, in printed order.
    Dict(Vec<(String, PyValue)>),
    /// Anything else (an enum repr, a call), kept as printed.
    Raw(String),
}

impl PyValue {
    /// The string, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            PyValue::Str(s) | PyValue::Raw(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, if it is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            PyValue::Int(i) => Some(*i),
            PyValue::Str(s) | PyValue::Raw(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// Whether it is `None`.
    pub fn is_none(&self) -> bool {
        match self {
            PyValue::None => true,
            PyValue::Str(s) | PyValue::Raw(s) => s == "None",
            _ => false,
        }
    }

    /// Whether Python would call it true.
    pub fn is_truthy(&self) -> bool {
        match self {
            PyValue::None => false,
            PyValue::Bool(b) => *b,
            PyValue::Int(i) => *i != 0,
            PyValue::Float(f) => *f != 0.0,
            PyValue::Str(s) => !s.is_empty(),
            PyValue::List(l) => !l.is_empty(),
            PyValue::Dict(d) => !d.is_empty(),
            PyValue::Raw(s) => s != "None" && s != "False",
        }
    }

    /// A canonical text form, used to compare settings between boots.
    pub fn canonical(&self) -> String {
        match self {
            PyValue::None => "None".into(),
            PyValue::Bool(b) => if *b { "True" } else { "False" }.into(),
            PyValue::Int(i) => i.to_string(),
            PyValue::Float(f) => format!("{f:?}"),
            PyValue::Str(s) => format!("{s:?}"),
            PyValue::Raw(s) => s.clone(),
            PyValue::List(l) => {
                let items: Vec<String> = l.iter().map(PyValue::canonical).collect();
                format!("[{}]", items.join(", "))
            }
            PyValue::Dict(d) => {
                let mut items: Vec<String> = d
                    .iter()
                    .map(|(k, v)| format!("{k:?}: {}", v.canonical()))
                    .collect();
                items.sort();
                format!("{{{}}}", items.join(", "))
            }
        }
    }
}

/// A settings dict from a boot log, keyed by setting name.
pub type Settings = BTreeMap<String, PyValue>;

/// A line the parser recognised (its anchor matched) but could not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnparsedLine {
    /// The fact the line should have given.
    pub field: String,
    /// 1-based.
    pub lineno: usize,
    /// The line, stripped of its prefix, at most 300 characters.
    pub text: String,
}

/// One `request ID N -> pause` a TensorRT-LLM log shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LoggedPause {
    /// 1-based line number.
    pub lineno: usize,
    /// The executor's request id.
    pub request_id: u64,
    /// The line's time stamp as [`LogClock`] reads it, when the line carries one.
    pub logged_at: Option<i64>,
}

/// A line the engine writes when it compiles kernels or captures CUDA graphs, found after
/// the ready line: work that belongs to start-up, done while requests were being served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServingCompile {
    /// 1-based line number.
    pub lineno: usize,
    /// The line's time stamp, when it carries one.
    pub logged_at: Option<LogTime>,
    /// The line, stripped of its prefix, at most 200 characters.
    pub text: String,
}

/// A log line's time stamp: local time without a zone, with the year where the engine
/// prints one (vLLM's `09-30 20:47:14` has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LogTime {
    /// The year, where the line prints one.
    pub year: Option<i32>,
    /// The month, 1 to 12.
    pub month: u8,
    /// The day of the month.
    pub day: u8,
    /// Seconds since midnight.
    pub second_of_day: u32,
}

impl LogTime {
    /// Seconds since 1970 read as if the stamp were UTC (as [`LogClock`] reads stamps). A
    /// stamp without a year takes the year that puts it nearest `near_utc`, a time it
    /// was written close to (a reading of the same run).
    pub fn naive_seconds(&self, near_utc: f64) -> i64 {
        let at = |year: i64| {
            civil::days_from_civil(year, i64::from(self.month), i64::from(self.day)) * 86_400
                + i64::from(self.second_of_day)
        };
        match self.year {
            Some(year) => at(i64::from(year)),
            None => {
                let approx = 1970 + (near_utc / 31_556_952.0).floor() as i64;
                (approx - 1..=approx + 1)
                    .map(at)
                    .min_by(|a, b| {
                        (*a as f64 - near_utc)
                            .abs()
                            .total_cmp(&(*b as f64 - near_utc).abs())
                    })
                    .unwrap_or_else(|| at(approx))
            }
        }
    }
}

/// The most compile lines after the ready line a log keeps; the rest are only counted.
pub const MAX_SERVING_COMPILES: usize = 64;

/// The dated stamps of a log, as seconds since 1970 read as if the stamps were UTC.
/// Engines stamp local time without a zone: these line up the log with itself, and with
/// another clock only through an offset that must be found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LogClock {
    /// The earliest stamp, seconds since 1970 as the log's clock reads.
    pub earliest: i64,
    /// The latest stamp.
    pub latest: i64,
    /// The HTTP server's `Shutting down` line is in the log and dated lines follow it, so
    /// the latest stamp was written after the server stopped answering.
    pub stamped_after_shutdown: bool,
}

/// When a failure happened relative to the ready line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Before the server said it was ready.
    Boot,
    /// After it: a crash while serving (T7).
    Serving,
}

impl Phase {
    /// The phase as evidence names it: `boot`, `serving`.
    pub fn word(self) -> &'static str {
        match self {
            Phase::Boot => "boot",
            Phase::Serving => "serving",
        }
    }
}

/// The root cause a boot log shows for a failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// `jit_toolchain`, `out_of_memory`, `accelerator_error`, ... `engine_dead`.
    pub kind: String,
    /// When it came.
    pub phase: Phase,
    /// 1-based line number of the line that shows it.
    pub lineno: usize,
    /// That line, stripped of its prefix, whole (the engine's advice is often at its end).
    pub line: String,
    /// The cause: the exception's message or the phrase that names it, whole.
    pub detail: Option<String>,
}

/// Everything a boot log says about how the server set itself up.
///
/// Every field is `None` (or empty) when the log did not say it: a missing fact is never
/// defaulted, and a line that was recognised but unreadable is listed in `unparsed`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BootFacts {
    /// The engine the log's markers name.
    pub engine: Option<Engine>,
    /// The engine's version.
    pub version: Option<String>,
    /// vLLM `non-default args: {...}`.
    pub non_default_args: Option<Settings>,
    /// SGLang `server_args=...`, or TensorRT-LLM's `LLM Args:` settings.
    pub server_args: Option<Settings>,
    /// TensorRT-LLM: the whole `LLM Args:` line.
    pub llm_args: Option<String>,
    /// The model served.
    pub model: Option<String>,
    /// The attention backend asked for.
    pub requested_backend: Option<String>,
    /// The attention backends the server chose.
    pub selected_backends: Vec<String>,
    /// The backends it considered.
    pub candidate_backends: Vec<String>,
    /// The attention backends chosen for the draft model.
    pub drafter_backends: Vec<String>,
    /// The attention block size, in tokens.
    pub attention_block_size: Option<u64>,
    /// The hybrid allocator's page size, in tokens.
    pub page_size: Option<u64>,
    /// The share of each page padded to fit state blocks, in percent.
    pub mamba_page_padding_pct: Option<f64>,
    /// The KV pool, in tokens.
    pub kv_pool_tokens: Option<u64>,
    /// The concurrency the log says the cache holds.
    pub max_concurrency: Option<f64>,
    /// The request length that figure assumes, in tokens.
    pub max_concurrency_request_len: Option<u64>,
    /// Memory left for the KV cache, GiB.
    pub available_kv_cache_gib: Option<f64>,
    /// Memory the weights took, GiB.
    pub model_load_gib: Option<f64>,
    /// Seconds loading the weights took.
    pub model_load_s: Option<f64>,
    /// Memory the CUDA graphs were estimated to take, GiB.
    pub cudagraph_estimated_gib: Option<f64>,
    /// Memory the CUDA graphs took, GiB.
    pub cudagraph_actual_gib: Option<f64>,
    /// Memory the server took before its KV cache, GiB.
    pub consumed_gib: Option<f64>,
    /// The activation peak of the profiling run, GiB.
    pub peak_activation_gib: Option<f64>,
    /// Seconds compiling took.
    pub compile_s: Option<f64>,
    /// (from, to), e.g. (`FULL_AND_PIECEWISE`, `PIECEWISE`).
    pub cudagraph_mode_downgrade: Option<(String, String)>,
    /// Whether CUDA graphs were captured.
    pub cudagraphs: Option<bool>,
    /// Whether speculative decoding ran.
    pub speculative: Option<bool>,
    /// Whether it compiled afresh rather than from the cache.
    pub compiled_fresh: Option<bool>,
    /// 1-based line of the first `Application startup complete`.
    pub ready_lineno: Option<usize>,
    /// The card's memory at start-up as vLLM's log says (`Free memory on device
    /// (22.45/23.99 GiB) on startup`): what was free, and the card's total, in GiB. For
    /// SGLang, what was free before its weights loaded (`Load weight begin. avail
    /// mem=22.37 GB`, its GB being GiB); it gives no total.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_free_gib: Option<f64>,
    /// See `device_free_gib`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_total_gib: Option<f64>,
    /// The KV cache size in GiB that the engine itself says would use all the memory the
    /// card had (vLLM: `` `--kv-cache-memory=2045183488` (1.9 GiB) to fully utilize gpu
    /// memory``).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_cache_full_gib: Option<f64>,
    /// The memory still free on the card once the engine had started, in GiB (SGLang's
    /// last `avail mem=` before the ready line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_left_gib: Option<f64>,
    /// What the engine's own log says to change to raise a limit it hit, as it says it
    /// (SGLang: `increase --mamba-full-memory-ratio or --max-mamba-cache-size, or halve
    /// the state size with --mamba-ssm-dtype bfloat16`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_remedy: Option<String>,
    /// The most requests the server will run at once, as its log says.
    pub running_cap: Option<u64>,
    /// Why the server lowered that cap (e.g. `mamba state cache`).
    pub running_cap_reason: Option<String>,
    /// The running limit the user asked for.
    pub requested_running: Option<u64>,
    /// TensorRT-LLM: requests paused for recompute, from its INFO log; `None` when the log
    /// cannot tell (no INFO lines, or no served request).
    pub pauses: Option<u64>,
    /// SGLang: requests retracted, summed over its `Retract requests.` warnings.
    pub retractions_in_log: Option<u64>,
    /// SGLang and TensorRT-LLM: answered HTTP requests in the log.
    pub served_in_log: Option<u64>,
    /// TensorRT-LLM: the line number of each answered request, in log order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub served_lines: Vec<usize>,
    /// TensorRT-LLM: each pause the log shows, in log order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pause_lines: Vec<LoggedPause>,
    /// TensorRT-LLM: lines holding part of a pause line that cannot be read whole (a log
    /// cut mid-line, or two processes' output spliced inside a line).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pause_fragments: Vec<usize>,
    /// The span of the log's dated time stamps, where its lines carry a year.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_clock: Option<LogClock>,
    /// Process names seen in line prefixes (`APIServer`, `EngineCore`).
    pub processes: Vec<String>,
    /// Process ids the log names (`(APIServer pid=723)`, `[pid=1739]`), sorted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pids: Vec<u64>,
    /// `MM-DD HH:MM:SS` of the first stamped line and of the last stamped line at or
    /// before the ready line.
    pub first_stamp: Option<String>,
    /// The stamp of the ready line.
    pub ready_stamp: Option<String>,
    /// The time stamp of the first stamped line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_time: Option<LogTime>,
    /// The time stamp of the last stamped line at or before the ready line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_time: Option<LogTime>,
    /// The time stamp of the last stamped line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_time: Option<LogTime>,
    /// The 1-based line of the HTTP server's `Shutting down`: the log runs past the
    /// moment the server stopped answering.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shutdown_lineno: Option<usize>,
    /// Compile and graph-capture lines after the ready line (the first
    /// [`MAX_SERVING_COMPILES`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub serving_compiles: Vec<ServingCompile>,
    /// How many compile and graph-capture lines there were after the ready line in all.
    #[serde(skip_serializing_if = "is_zero")]
    pub serving_compiles_total: usize,
    /// Lines recognised but not read.
    pub unparsed: Vec<UnparsedLine>,
    /// Fields seen with several distinct values: every value, in order.
    pub conflicts: BTreeMap<String, Vec<String>>,
    /// The failure the log shows, if any.
    pub failure: Option<Failure>,
    /// How many lines the log had.
    pub line_count: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl BootFacts {
    /// Whether the server said it was ready (`Application startup complete`).
    pub fn ready(&self) -> bool {
        self.ready_lineno.is_some()
    }

    /// The settings dict this engine prints: vLLM's non-default args, else server args.
    pub fn config_args(&self) -> Option<&Settings> {
        self.non_default_args.as_ref().or(self.server_args.as_ref())
    }

    /// One setting, from whichever settings dict the log had.
    pub fn setting(&self, key: &str) -> Option<&PyValue> {
        self.config_args().and_then(|a| a.get(key))
    }

    /// How long the server took to start, by its log's own time stamps: from the first
    /// stamped line to the ready line. `None` when either stamp does not read, or the
    /// span is negative (a start across New Year, whose stamps carry no year).
    pub fn startup(&self) -> Option<Startup> {
        let (first, ready) = (self.first_stamp.as_deref()?, self.ready_stamp.as_deref()?);
        let seconds = stamp_seconds(ready)? - stamp_seconds(first)?;
        (seconds >= 0).then(|| Startup {
            seconds: seconds as f64,
            first_time: stamp_time(first).to_owned(),
            ready_time: stamp_time(ready).to_owned(),
        })
    }
}

/// A server's start-up, by its log ([`BootFacts::startup`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Startup {
    /// Seconds from the first stamped line to the ready line.
    pub seconds: f64,
    /// The time of day of the first stamped line: `17:48:43`.
    pub first_time: String,
    /// The time of day of the ready line.
    pub ready_time: String,
}

/// Seconds since the start of a common year of a boot-log stamp `MM-DD HH:MM:SS`: good
/// enough for a span within one start.
fn stamp_seconds(stamp: &str) -> Option<i64> {
    const BEFORE_MONTH: [i64; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let (date, time) = stamp.trim().split_once(' ')?;
    let (month, day) = date.split_once('-')?;
    let mut hms = time.split(':');
    let mut next = || hms.next()?.parse::<i64>().ok();
    let (h, m, s) = (next()?, next()?, next()?);
    let month: i64 = month.parse().ok()?;
    let day: i64 = day.parse().ok()?;
    let before = *BEFORE_MONTH.get(usize::try_from(month - 1).ok()?)?;
    Some(((before + day) * 24 + h) * 3600 + m * 60 + s)
}

/// The time part of a boot-log stamp: `17:48:43`.
fn stamp_time(stamp: &str) -> &str {
    stamp.trim().split_once(' ').map_or(stamp, |(_, t)| t)
}

/// The readings' wall-clock window, when both carry one.
///
/// Where both carry the monotonic clock (the gate has set aside readings of two boots
/// before this is asked), the window also holds the monotonic span from either end: a
/// wall clock that stepped between the readings moved one end, and the load tool's
/// clock, on that wall clock, may have been read on either side of the step.
pub fn window(before: Option<&Snapshot>, after: Option<&Snapshot>) -> Option<(f64, f64)> {
    let (before, after) = (before?, after?);
    let (start, end) = (before.t_wall?, after.t_wall?);
    match (before.t_mono_ns, after.t_mono_ns) {
        (Some(b), Some(a)) if a > b => {
            let mono = (a - b) as f64 / 1e9;
            Some((start.min(end - mono), end.max(start + mono)))
        }
        _ => Some((start, end)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn startup_from_the_logs_stamps() {
        let facts = |first: &str, ready: &str| BootFacts {
            first_stamp: Some(first.into()),
            ready_stamp: Some(ready.into()),
            ..BootFacts::default()
        };
        let startup = facts("11-30 17:48:43", "11-30 17:50:47").startup();
        assert_eq!(
            startup,
            Some(Startup {
                seconds: 124.0,
                first_time: "17:48:43".into(),
                ready_time: "17:50:47".into(),
            })
        );
        assert_eq!(facts("12-31 23:59:00", "01-01 00:01:00").startup(), None);
        assert_eq!(facts("x", "11-30 17:50:47").startup(), None);
    }

    /// The recorder's extra fields are held to what they can be, as the gauges are: a
    /// reading that cannot be makes the recording untrusted, never a pass.
    #[test]
    fn gpu_and_prefix_readings_that_cannot_be_are_named() {
        let sample = |gpu: GpuReading, hits: Option<f64>| SeriesSample {
            t_wall: 1_700_000_000.0,
            prefix_hits: hits,
            gpu,
            ..SeriesSample::default()
        };
        assert_eq!(
            sample(GpuReading::default(), Some(10.0)).impossible_reading(),
            None
        );
        let busy = GpuReading {
            util: Some(150.0),
            ..GpuReading::default()
        };
        assert!(sample(busy, None)
            .impossible_reading()
            .is_some_and(|m| m.starts_with("gpu_util is 150")));
        let bits = GpuReading {
            throttle: Some(4.5),
            ..GpuReading::default()
        };
        assert!(sample(bits, None).impossible_reading().is_some());
        assert!(sample(GpuReading::default(), Some(-1.0))
            .impossible_reading()
            .is_some_and(|m| m.starts_with("prefix_cache_hits is -1")));
    }
}
