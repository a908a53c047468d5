//! The three engines as data. Every metric name, word and quirk an engine has lives in its
//! [`EngineDescriptor`]; checks read the table instead of branching on the engine, so a new
//! engine (or a renamed metric) is a table edit.

use std::fmt;
use std::str::FromStr;

use crate::model::metrics::{MetricSet, Sample};
pub use crate::model::server_records::{
    Drain, JsonPath, RecordClock, RecordFiles, RecordsFrom, RequestRecord,
};
use crate::model::traces::RequestSource;

/// An inference engine inferlint knows. More may come in a minor release, so a `match`
/// outside this crate needs a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Engine {
    /// vLLM (`vllm serve`), metric prefix `vllm:`.
    Vllm,
    /// SGLang (`python -m sglang.launch_server`), metric prefix `sglang:`.
    Sglang,
    /// TensorRT-LLM (`trtllm-serve`), metric prefix `trtllm_`.
    Trtllm,
}

impl Engine {
    /// Every engine, in the order they are listed to a user.
    pub const ALL: [Engine; 3] = [Engine::Vllm, Engine::Sglang, Engine::Trtllm];

    /// The engine an input that does not say is read as: vLLM, whose formats the
    /// established tool's files follow.
    pub const DEFAULT: Engine = Engine::Vllm;

    /// The engine's table: its metric names, words, quirks and settings.
    pub fn descriptor(self) -> &'static EngineDescriptor {
        match self {
            Engine::Vllm => &VLLM,
            Engine::Sglang => &SGLANG,
            Engine::Trtllm => &TRTLLM,
        }
    }

    /// The short key: `vllm`, `sglang`, `trtllm`.
    pub fn key(self) -> &'static str {
        self.descriptor().key
    }

    /// The project's own spelling: `vLLM`, `SGLang`, `TensorRT-LLM`.
    pub fn name(self) -> &'static str {
        self.descriptor().name
    }

    /// The engine whose metric-name prefix most names carry; ties go to vLLM, then SGLang,
    /// then TensorRT-LLM. `None` when no name carries any engine's prefix.
    pub fn from_metric_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<Engine> {
        let mut counts = [0usize; 3];
        for name in names {
            for (slot, engine) in Engine::ALL.iter().enumerate() {
                let d = engine.descriptor();
                if name.starts_with(d.metric_prefix)
                    || d.escaped_prefix.is_some_and(|p| name.starts_with(p))
                {
                    counts[slot] += 1;
                }
            }
        }
        let mut best: Option<(usize, Engine)> = None;
        for (slot, engine) in Engine::ALL.iter().enumerate() {
            if counts[slot] > best.map_or(0, |(n, _)| n) {
                best = Some((counts[slot], *engine));
            }
        }
        best.map(|(_, engine)| engine)
    }

    /// Reads an engine from its key or its display name, in any case, trimmed.
    pub fn parse(text: &str) -> Option<Engine> {
        let wanted = text.trim().to_ascii_lowercase();
        Engine::ALL.into_iter().find(|engine| {
            let d = engine.descriptor();
            wanted == d.key
                || wanted == d.name.to_ascii_lowercase()
                || d.aliases.iter().any(|a| *a == wanted)
        })
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for an engine name that is none of the three.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownEngine(pub String);

impl fmt::Display for UnknownEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown engine '{}' (known: vllm, sglang, trtllm)",
            self.0.trim()
        )
    }
}

impl std::error::Error for UnknownEngine {}

impl FromStr for Engine {
    type Err = UnknownEngine;
    fn from_str(s: &str) -> Result<Engine, UnknownEngine> {
        Engine::parse(s).ok_or_else(|| UnknownEngine(s.to_owned()))
    }
}

/// How an engine's steps are recorded by our stat-logger plugin (`integrations/vllm`):
/// the plugin writes where `INFERLINT_STEPS` names, and each step's batch composition
/// only when the server runs with `iteration_details_flag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepPlugin {
    /// The server flag that fills each step's batch composition (vLLM 0.32:
    /// `--enable-logging-iteration-details`).
    pub iteration_details_flag: &'static str,
}

/// Everything about one engine that a check, a recorder or a report needs to know.
#[derive(Debug)]
pub struct EngineDescriptor {
    /// The engine.
    pub engine: Engine,
    /// Its key: `vllm`, `sglang`, `trtllm`.
    pub key: &'static str,
    /// Its name as people write it: `vLLM`, `SGLang`, `TensorRT-LLM`.
    pub name: &'static str,
    /// Other spellings accepted for `--engine` (lower case).
    pub aliases: &'static [&'static str],
    /// Every metric of this engine starts with this; used to tell the engine from a scrape.
    pub metric_prefix: &'static str,
    /// The prefix as its metrics reach a reader that escapes the colon to an underscore,
    /// where that is known to happen to this engine's metrics: each such name answers
    /// under its own name too ([`MetricSet::answer_escaped`]).
    pub escaped_prefix: Option<&'static str>,

    /// Gauge: requests running now.
    pub running: &'static str,
    /// Gauge: requests waiting to start.
    pub waiting: &'static str,
    /// Gauge: KV cache use, 0 to 1.
    pub kv_usage: &'static str,
    /// Counter of preemptions (retractions), where the engine counts them.
    pub preemption_counter: Option<&'static str>,
    /// A metric whose presence proves the preemption counter would be there had anything
    /// been preempted (SGLang writes its counter only after the first retraction).
    pub preemption_witness: Option<&'static str>,
    /// Histogram of how many times each finished request was preempted, observed when it
    /// finishes (vLLM 0.32: `vllm:request_num_preemptions`, buckets 1, 2, 3, 4, 5, 10, 20):
    /// how the run's preemptions fell on its requests.
    pub request_preemptions_histogram: Option<&'static str>,
    /// Gauge of requests paused for recompute, where the engine has no counter.
    pub paused_gauge: Option<&'static str>,
    /// The waiting gauge split by why the requests wait, where the engine exports it.
    pub waiting_reasons: Option<WaitingReasons>,
    /// Counter: output tokens generated.
    pub generation_tokens: &'static str,
    /// Counter: prompt tokens processed.
    pub prompt_tokens: &'static str,
    /// Counter: requests finished.
    pub request_success: &'static str,
    /// Whether the success counter carries a `finished_reason` label.
    pub success_has_reason: bool,
    /// Histogram: end-to-end request latency.
    pub e2e_latency_histogram: &'static str,
    /// Histogram: time to first token.
    pub ttft_histogram: &'static str,
    /// Histogram: time in the queue.
    pub queue_time_histogram: &'static str,
    /// The info metric that states the KV cache's blocks, and what its labels mean (vLLM
    /// only): T14 reads the block count, the setup its block size.
    pub cache_info: Option<CacheInfo>,

    /// Where the Prometheus text is served.
    pub metrics_path: &'static str,
    /// The port the server listens on unless told otherwise.
    pub default_port: u16,
    /// What the engine calls a preemption.
    pub preemption_word: &'static str,
    /// Whether the engine writes a log line for every eviction.
    pub logs_each_eviction: bool,
    /// Gauges move only when a request completes, so a recording can miss a peak.
    pub gauges_lag: bool,
    /// Token counters move only when a request finishes.
    pub tokens_at_finish: bool,
    /// Versions (or version prefixes) this project has been tested against.
    pub tested_versions: &'static [&'static str],
    /// The flag or setting that requests an attention backend.
    pub backend_flag: &'static str,
    /// What the KV usage gauge measures, as T9 words it.
    pub kv_usage_pool_words: &'static str,
    /// How to make the engine serve metrics at all.
    pub metrics_hint: &'static str,
    /// What to set when the running, waiting and KV gauges are missing.
    pub gauges_hint: Option<&'static str>,
    /// The flag that caps how many requests run at once.
    pub running_cap_flag: &'static str,
    /// The settings advice names, as a user of this engine writes them.
    pub tuning: Tuning,
    /// The setting and value under which the engine evicts running requests at all, where
    /// it evicts only under one: there its scheduler admits every waiting request whose
    /// next step fits (up to the running cap), and evicts when they grow. Under any other
    /// value it admits a request only when its whole output fits, and never evicts.
    pub evicts_only_with: Option<(&'static str, &'static str)>,
    /// Settings that run several copies of the scheduler, each with its own running cap
    /// (data parallelism): an integer multiplies the cap; any other value set makes the
    /// total unknown.
    pub parallel_copies: &'static [&'static str],
    /// Metrics this engine's other releases serve under another name.
    pub renamed_metrics: &'static [MetricRename],
    /// The executor numbers the requests it receives consecutively from its
    /// `max_batch_size` (ids below it are its own warm-up's dummy requests), so a logged
    /// request id says which request it was. TensorRT-LLM 1.x's PyTorch executor:
    /// `ExecutorRequestQueue.next_request_id = max_batch_size`.
    pub request_ids_start_at_max_batch_size: bool,
    /// How the scheduler admits and evicts: which of the replay's models stands for it.
    pub scheduler: SchedulerKind,
    /// The settings a replay (`whatif`) can change, each as this engine writes it.
    pub replay_settings: &'static [(Knob, &'static str)],
    /// Where the engine counts requests it aborted, cancelled or ended with an error
    /// rather than finished: T18's ledger reads them all, the cross-check on T15 the
    /// aborted ones.
    pub failed_requests: &'static [FailedRequests],
    /// The KV block size, in tokens, the engine uses when its log names none (vLLM's
    /// `--block-size` default on CUDA); `None` where no fixed default is known to hold.
    pub default_block_size: Option<u64>,
    /// The settings worth showing from a log that lists every setting (SGLang's server
    /// arguments); empty where the log lists only what was changed (vLLM's non-default
    /// arguments) or the report shows the first ones.
    pub settings_shown: &'static [&'static str],
    /// The line the server logs once it serves (uvicorn's, for all three).
    pub ready_line: &'static str,
    /// The substrings that make a boot log line a kernel compile or graph capture (T19:
    /// after the ready line, start-up work done while requests were served), from the
    /// engine's own source and logs.
    pub compile_lines: &'static [&'static str],
    /// Where the server tells its own version, each answering a JSON object with a
    /// `version` string, in the order to ask.
    pub version_endpoints: &'static [&'static str],
    /// Where this engine states the setup facts `compare` sets side by side.
    pub setup_sources: SetupSources,
    /// The counters of the prompt tokens the prefix cache served (T16, and the share
    /// `compare` sets side by side).
    pub prefix_cache: Option<PrefixCacheCounters>,
    /// How a run shows it was declared disaggregated and what the decode side counts of
    /// the KV it received (T28); `None` where the engine shows neither.
    pub disaggregation: Option<Disaggregation>,
    /// Each engine step recorded inside the server by our stat-logger plugin
    /// (`integrations/vllm`, `steps.jsonl`: T29 to T31); `None` where the engine has no
    /// such plugin interface we use.
    pub step_plugin: Option<StepPlugin>,
    /// The OpenTelemetry span the engine exports for each request it finished, and the
    /// attributes that carry its account of the request; `None` where the engine's spans
    /// carry no such account in a form that holds across its releases.
    pub request_span: Option<RequestSpan>,
    /// How a recorder asks a server of this engine, at its start, to send it its spans
    /// and its KV-cache events (xray adds these flags to `--serve`); `None` where it
    /// sends neither in a form inferlint reads.
    pub trace_flags: Option<TraceFlags>,
    /// The engine's own record of each request beyond its spans (a drained endpoint, a
    /// file it writes), and the fields its account is read from; `None` where it keeps
    /// none inferlint reads.
    pub request_records: Option<RequestRecord>,
    /// The endpoint that hands out the engine's KV-cache events as JSON and forgets
    /// them, where it serves them that way instead of publishing a stream.
    pub kv_events_drain: Option<Drain>,
    /// How the engine is told to speculate and how it counts its drafts (T27).
    pub speculation: Speculation,
}

/// How an engine is told to speculate, and the counters of its drafts (T27), as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Speculation {
    /// The setting that turns speculative decoding on, as the boot log's settings name
    /// it (a value other than `None` means on).
    pub setting: &'static str,
    /// How a user turns it on, in the engine's own words.
    pub turn_on: &'static str,
    /// The key, inside that setting's value, of the draft length (tokens proposed per
    /// draft); `None` where the setting's value is not read for it.
    pub draft_length_key: Option<&'static str>,
    /// The counters of drafts over a run; `None` where the engine serves none (said why
    /// beside its table).
    pub counters: Option<SpecDecodeCounters>,
}

/// The counters of an engine's drafts (T27): their deltas over a run give the acceptance
/// rate (accepted / draft tokens) and the mean accepted length (1 + accepted / drafts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecDecodeCounters {
    /// Counter: drafts proposed (one per request per step that drafted).
    pub drafts: &'static str,
    /// Counter: tokens proposed over all drafts.
    pub draft_tokens: &'static str,
    /// Counter: proposed tokens the target model accepted.
    pub accepted_tokens: &'static str,
    /// Counter of accepted tokens by their position in the draft, and its label (0 for
    /// the first drafted token); `None` where not served.
    pub accepted_per_position: Option<(&'static str, &'static str)>,
    /// The engine registers these counters only when speculation is on: a scrape without
    /// them is a server that was not speculating.
    pub only_when_on: bool,
}

/// The flags that point an engine's spans and KV events at a recorder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceFlags {
    /// The flag naming where its spans go (`--otlp-traces-endpoint URL`, OTLP over gRPC
    /// by default); `None` when its spans are not read.
    pub otlp_endpoint: Option<&'static str>,
    /// The flag taking its KV event publisher's JSON configuration
    /// (`--kv-events-config`); `None` when it publishes none.
    pub kv_events_config: Option<&'static str>,
    /// Whether that configuration must say `"enable_kv_cache_events": true` (vLLM's does;
    /// SGLang's publisher is on once configured).
    pub kv_events_enable_key: bool,
}

impl TraceFlags {
    /// The KV event configuration that makes the engine's publisher connect to
    /// `endpoint` (a subscriber bound there) and bind its replay at `replay`: both
    /// `tcp://127.0.0.1:PORT`, so the stream stays on the loopback. vLLM's publisher
    /// connects to an address without a wildcard and binds its replay at the address
    /// given.
    pub fn kv_events_json(&self, endpoint: &str, replay: &str) -> String {
        /// The engines' configuration, in their field names.
        #[derive(serde::Serialize)]
        struct KvEventsConfig<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            enable_kv_cache_events: Option<bool>,
            publisher: &'a str,
            endpoint: &'a str,
            replay_endpoint: &'a str,
        }
        serde_json::to_string(&KvEventsConfig {
            enable_kv_cache_events: self.kv_events_enable_key.then_some(true),
            publisher: "zmq",
            endpoint,
            replay_endpoint: replay,
        })
        .unwrap_or_default()
    }
}

/// The span an engine exports for each request and the attributes its account is read
/// from (`inferlint-engines`' span reader turns each into a
/// [`crate::model::traces::ServerRequest`]). An attribute the engine does not set is `None`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestSpan {
    /// The span's name.
    pub name: &'static str,
    /// The span starts when the server received the request (its arrival stamp), so the
    /// start is the request's arrival.
    pub starts_at_arrival: bool,
    /// Attribute: the request's id.
    pub id: &'static str,
    /// Attribute: time in the queue before first scheduled.
    pub queue: Option<&'static str>,
    /// Attribute: time from arrival to the first token.
    pub ttft: Option<&'static str>,
    /// Attribute: time from first scheduled to the first token.
    pub prefill: Option<&'static str>,
    /// Attribute: time from the first token to the last.
    pub decode: Option<&'static str>,
    /// Attribute: time from arrival to the end.
    pub e2e: Option<&'static str>,
    /// Attribute: prompt tokens.
    pub prompt_tokens: Option<&'static str>,
    /// Attribute: output tokens.
    pub output_tokens: Option<&'static str>,
    /// Seconds in one unit of the duration attributes (1 where they are seconds).
    pub seconds_per_unit: f64,
}

impl RequestSpan {
    /// The span's name and every attribute it reads.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names = vec![self.name, self.id];
        names.extend(
            [
                self.queue,
                self.ttft,
                self.prefill,
                self.decode,
                self.e2e,
                self.prompt_tokens,
                self.output_tokens,
            ]
            .into_iter()
            .flatten(),
        );
        names
    }
}

/// How an engine's scheduler holds the KV cache and makes room, as the replay models it
/// (`inferlint_sched::model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedulerKind {
    /// Paged blocks allocated as a request grows; the newest running request is preempted
    /// and recomputed when none is free (vLLM).
    PagedRecompute,
    /// A token pool with each running request's remaining output reserved at admission;
    /// retraction when it runs out (SGLang).
    TokenPoolRetract,
    /// Paged blocks under a capacity policy: GUARANTEED_NO_EVICT admits only what fits at
    /// full length, MAX_UTILIZATION pauses (TensorRT-LLM).
    CapacityPolicy,
}

/// What a replayed change sets, whichever engine's name it goes by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Knob {
    /// The most requests run at once.
    MaxRunning,
    /// The KV blocks outright.
    Blocks,
    /// The KV cache in bytes.
    CacheBytes,
    /// The pool in tokens.
    PoolTokens,
    /// The memory share the cache is sized from.
    MemoryFraction,
    /// Tokens per block or page.
    BlockSize,
    /// The KV cache's data type.
    KvDtype,
    /// The context limit.
    MaxModelLen,
    /// The capacity scheduler policy.
    Policy,
    /// The load's concurrency.
    Concurrency,
    /// The load's request rate, requests per second (`inf`: all at once).
    Rate,
}

/// An info metric that states the KV cache's blocks (vLLM's `cache_config_info`): one
/// series per engine core, its values in labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheInfo {
    /// The info metric.
    pub metric: &'static str,
    /// The label that gives the KV blocks the engine core allocated.
    pub blocks_label: &'static str,
    /// The label that gives the block size, in tokens.
    pub block_size_label: &'static str,
    /// The label that tells one engine core (data parallel) from another, on this metric
    /// and on the KV usage gauge.
    pub engine_label: &'static str,
    /// The blocks each engine core holds back from every request (vLLM's null block, a
    /// placeholder for blocks a request skips), which the KV usage gauge's denominator
    /// leaves out.
    pub null_blocks: u64,
}

impl CacheInfo {
    /// The blocks requests can use of `reported` over `engines` engine cores, each holding
    /// back its null blocks; `None` when no more than those are reported.
    pub fn usable_blocks(&self, reported: u64, engines: u64) -> Option<u64> {
        let held = engines.saturating_mul(self.null_blocks);
        (reported > held).then(|| reported - held)
    }
}

/// vLLM's `cache_config_info` (`vllm/v1/metrics/loggers.py`, the `CacheConfig` as labels;
/// `vllm/v1/core/block_pool.py` keeps block 0 as the null block).
const VLLM_CACHE_INFO: CacheInfo = CacheInfo {
    metric: "vllm:cache_config_info",
    blocks_label: "num_gpu_blocks",
    block_size_label: "block_size",
    engine_label: "engine",
    null_blocks: 1,
};

/// Where one fact of the server's setup is written: a setting in the boot log's settings
/// dict, or a label of an info metric in a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupSource {
    /// A setting of the boot log's settings dict, by name.
    Setting(&'static str),
    /// A label of an info metric.
    InfoLabel {
        /// The info metric.
        metric: &'static str,
        /// The label.
        label: &'static str,
    },
}

/// The places each setup fact is read from, tried in order; empty when the engine writes
/// it nowhere a run folder keeps.
#[derive(Debug, Clone, Copy)]
pub struct SetupSources {
    /// Where the KV cache's data type is written.
    pub kv_dtype: &'static [SetupSource],
    /// Where the longest context is written.
    pub max_model_len: &'static [SetupSource],
    /// Where the KV block count is written.
    pub kv_blocks: &'static [SetupSource],
    /// Where the GPU is named.
    pub gpu: &'static [SetupSource],
}

/// How an engine counts the prompt tokens its prefix cache served (T16), as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefixCacheCounters {
    /// Counter: prompt tokens the cache served.
    pub hit_tokens: &'static str,
    /// Counter: prompt tokens looked up in the cache, the share's denominator.
    pub queried_tokens: &'static str,
    /// Counter (a histogram's sum): prompt tokens the cache did not serve, where the
    /// engine keeps one. Without the hit counter, hits are the queried tokens less these.
    pub missed_tokens: Option<&'static str>,
    /// The engine writes the hit counter only once a request had a hit: a scrape that has
    /// the queried counter but neither the hit nor the missed counter reads as 0 hits.
    pub hits_written_at_first_hit: bool,
    /// How a user turns the cache off, in the engine's own words.
    pub turn_off: &'static str,
    /// The settings that turn it off, as its boot log prints them (the setting's name
    /// and the value that means off): a server started so looks nothing up in it.
    pub off_settings: &'static [(&'static str, bool)],
    /// Where the engine says which tier each cached prompt token came from, and how it
    /// shows an offload tier was configured; `None` where it says neither.
    pub tiers: Option<CacheTiers>,
}

/// A setting as a boot log prints it, or one field of a setting printed as a
/// configuration's repr (`KvCacheConfig(host_cache_size=None, ...)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingField {
    /// The setting.
    pub setting: &'static str,
    /// The field of its printed repr, when the value is one field of it.
    pub field: Option<&'static str>,
}

/// The value of `field=...` in a printed repr: a quoted string's inside, else up to the
/// next comma or closing bracket.
pub fn printed_field<'a>(printed: &'a str, field: &str) -> Option<&'a str> {
    let start = ["(", " "].iter().find_map(|before| {
        printed
            .find(&format!("{before}{field}="))
            .map(|at| at + before.len() + field.len() + 1)
    })?;
    let rest = &printed[start..];
    if let Some(quoted) = rest.strip_prefix('\'') {
        return quoted.find('\'').map(|end| &quoted[..end]);
    }
    let end = rest.find([',', ')']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

/// How an engine's KV connector is configured, as its boot log prints the setting: the
/// setting, the field naming the connector and the field naming its role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectorSetting {
    /// The setting (`kv_transfer_config`), printed as the configuration's repr.
    pub setting: &'static str,
    /// The field of that repr naming the connector.
    pub connector_field: &'static str,
    /// The field naming the instance's role in a transfer.
    pub role_field: &'static str,
}

impl ConnectorSetting {
    /// The first of `names` the printed configuration names (a multi-connector's own
    /// connectors included), each written quoted as the repr writes it.
    pub fn names_one_of(&self, printed: &str, names: &[&'static str]) -> Option<&'static str> {
        names
            .iter()
            .find(|name| printed.contains(&format!("'{name}'")))
            .copied()
    }

    /// The instance's role, as printed.
    pub fn role<'a>(&self, printed: &'a str) -> Option<&'a str> {
        printed_field(printed, self.role_field)
    }
}

/// vLLM's KV connector setting: `--kv-transfer-config` (JSON on the command line) is
/// printed among the non-default args as `KVTransferConfig(kv_connector='NixlConnector',
/// ..., kv_role='kv_both', ...)` (`vllm/config/kv_transfer.py`, its dataclass repr).
pub const VLLM_KV_CONNECTOR: ConnectorSetting = ConnectorSetting {
    setting: "kv_transfer_config",
    connector_field: "kv_connector",
    role_field: "kv_role",
};

/// How an engine shows a run was declared disaggregated (prefill and decode on separate
/// instances, the KV moved between them) and what it counts of the KV moved (T28).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disaggregation {
    /// The connector setting that declares it.
    pub connector: ConnectorSetting,
    /// The connectors that move KV from a prefill instance to a decode instance.
    pub connectors: &'static [&'static str],
    /// The role of the instance that prefills and sends its KV.
    pub producer_role: &'static str,
    /// The role of the instance that receives the KV and decodes.
    pub consumer_role: &'static str,
    /// Counter: prompt tokens whose KV came by transfer.
    pub transferred: LabelledCounter,
    /// Counter: prompt tokens this instance prefilled itself.
    pub computed: LabelledCounter,
    /// Counter: prompt tokens served from this instance's own prefix cache.
    pub cached: LabelledCounter,
    /// Gauge: requests waiting, deferred (a KV transfer among the reasons).
    pub deferred_waiting: LabelledCounter,
    /// The transfer library's counters: transfers (a histogram's count), bytes moved (its
    /// sum) and failed transfers; none where the connector keeps none.
    pub transfers: Option<TransferCounters>,
}

/// A KV transfer library's own counters, and what they cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferCounters {
    /// Transfers finished.
    pub count: &'static str,
    /// Bytes they moved.
    pub bytes: &'static str,
    /// Transfers that failed.
    pub failed: &'static str,
    /// What the figures pool, in words.
    pub scope: &'static str,
}

/// Which tier a cached prompt token came from, as T16 groups an engine's tiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheTier {
    /// The accelerator's own prefix cache.
    Device,
    /// Offloaded KV brought back from host memory or disk.
    Offload,
    /// KV from another instance or a connector that does not say which tier it read.
    Peer,
}

/// An engine's waiting gauge split by reason, as data: the requests that wait for room
/// (in the batch or the KV cache, which a higher running limit or a larger cache gives)
/// apart from those held back by something else (a KV transfer, a grammar still compiling,
/// another transient block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitingReasons {
    /// The gauge, one series per reason; its reasons sum to the waiting gauge.
    pub metric: &'static str,
    /// The label naming the reason.
    pub label: &'static str,
    /// The reason of a request waiting for room in the batch or the KV cache.
    pub capacity: &'static str,
    /// The reason of a request held back by something other than room.
    pub deferred: &'static str,
}

/// One counter's series that carry one label value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LabelledCounter {
    /// The counter.
    pub metric: &'static str,
    /// The label.
    pub label: &'static str,
    /// The value that selects the series.
    pub value: &'static str,
}

/// An engine's split of its cached prompt tokens by tier (T16), as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheTiers {
    /// Counter: cached prompt tokens by the tier that supplied them.
    pub metric: &'static str,
    /// Its label naming the tier.
    pub label: &'static str,
    /// Each value of that label, with the group T16 counts it in.
    pub tiers: &'static [(&'static str, CacheTier)],
    /// The prompt tokens computed afresh, where a counter says so.
    pub computed: Option<LabelledCounter>,
    /// Why the split cannot be trusted (a KV manager known to put every hit in one tier),
    /// and the setting and value the boot log shows when the run used a manager that
    /// splits them truly; `None` where the split holds.
    pub misattributed: Option<(&'static str, Option<(SettingField, &'static str)>)>,
    /// The settings whose value, shown in the boot log's settings, means an offload tier
    /// was configured (any value but `None` or 0).
    pub offload_settings: &'static [SettingField],
    /// The info metric's label that shows the same, where one does ("None" when unset).
    pub offload_info_label: Option<(&'static str, &'static str)>,
    /// The KV connector setting, and the connectors that are an offload tier.
    pub offload_connectors: Option<(ConnectorSetting, &'static [&'static str])>,
    /// An offload library's own counters, where its server's metrics carry them.
    pub library_counters: Option<LibraryCounters>,
}

/// A KV offload library's own counters of the tokens asked of it and those it had: one
/// series per worker, each counting the same tokens for its shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LibraryCounters {
    /// The library, as a sentence names it.
    pub library: &'static str,
    /// Counter: tokens requested from it.
    pub requested_tokens: &'static str,
    /// Counter: tokens it had.
    pub hit_tokens: &'static str,
    /// The label naming the worker a series is of.
    pub worker_label: &'static str,
}

impl PrefixCacheCounters {
    /// The prompt tokens the cache served by one scrape: the hit counter, else the
    /// queried tokens less the missed ones, else 0 by the first-hit rule; NaN for a value
    /// no counter can hold.
    pub fn hits_in(&self, metrics: &MetricSet) -> Option<f64> {
        if let Some(v) = metrics.total(self.hit_tokens) {
            return Some(possible_count(v));
        }
        let queried = metrics.total(self.queried_tokens);
        if let (Some(missed), Some(queried)) =
            (self.missed_tokens.and_then(|m| metrics.total(m)), queried)
        {
            let (missed, queried) = (possible_count(missed), possible_count(queried));
            // More missed than looked up: the two do not count the same prompts.
            return Some(if missed <= queried {
                queried - missed
            } else {
                f64::NAN
            });
        }
        (self.hits_written_at_first_hit && queried.is_some()).then_some(0.0)
    }

    /// The queried counter's value in one scrape; NaN for a value no counter can hold.
    pub fn queries_in(&self, metrics: &MetricSet) -> Option<f64> {
        metrics.total(self.queried_tokens).map(possible_count)
    }
}

fn possible_count(v: f64) -> f64 {
    if v.is_finite() && v >= 0.0 {
        v
    } else {
        f64::NAN
    }
}

/// How an engine counts a request that did not finish on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailedKind {
    /// Aborted or cancelled: a client that went away, a timeout.
    Aborted,
    /// Answered with an error.
    Errored,
}

/// A counter of requests that ended without finishing: all of a metric's series, or those
/// with one label value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailedRequests {
    /// The counter.
    pub name: &'static str,
    /// The label and value that select the failed requests, when the counter has one.
    pub label: Option<(&'static str, &'static str)>,
    /// Aborted or ended in an error.
    pub kind: FailedKind,
}

/// One engine setting as advice names it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Setting {
    /// How a user writes it: a command-line flag (`--gpu-memory-utilization`), or a key
    /// of the `--config` YAML file (`kv_cache_config.free_gpu_memory_fraction`).
    pub written: &'static str,
    /// The name under which the boot log prints its value (`gpu_memory_utilization`).
    pub key: &'static str,
    /// The engine's default, where it is a fixed number.
    pub default: Option<f64>,
    /// Set in the `--config` YAML file rather than on the command line.
    pub yaml: bool,
}

impl Setting {
    /// `` `--max-num-seqs` ``, or `` `max_batch_size` in the --config YAML ``.
    pub fn shown(&self) -> String {
        if self.yaml {
            format!("`{}` in the --config YAML", self.written)
        } else {
            format!("`{}`", self.written)
        }
    }
}

/// What makes an engine admit only requests it will not have to evict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NoEviction {
    /// Nothing but a lower running limit (vLLM): admit only as many as fit at full length.
    LowerRunningLimit,
    /// A number to raise: the higher, the fewer requests admitted at once.
    Raise(Setting),
    /// A setting to give a value.
    Set {
        /// The setting.
        setting: Setting,
        /// The value to give it.
        value: &'static str,
    },
}

/// The settings that size an engine's KV cache and its running batch, as data, so that
/// advice names each engine's own (vLLM and SGLang flags, TensorRT-LLM YAML keys).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// The share of GPU memory that sets the KV cache's size.
    pub memory_fraction: Setting,
    /// A setting that sizes the KV cache outright and, when given, makes the share
    /// ignored (vLLM's `--kv-cache-memory-bytes`): the one to raise when the boot log
    /// shows it was set.
    pub cache_size: Option<Setting>,
    /// The most requests run at once.
    pub max_running: Setting,
    /// How to stop evictions (preemptions, retractions, pauses) at the source.
    pub no_eviction: NoEviction,
    /// What gives the KV cache more room when the card has no memory left to give it,
    /// in the engine's own setting names: a smaller KV dtype, the cache spread over more
    /// cards.
    pub more_room: &'static [&'static str],
    /// Whether the scheduler admits a request only when its whole output fits (it
    /// reserves the output up front), so no more start than fit at full length.
    pub admits_at_full_length: bool,
    /// What `memory_fraction` is a share of, so that a cache more GiB larger becomes a
    /// target value of the setting.
    pub fraction_of: FractionOf,
}

/// What an engine's memory share multiplies, as the boot log gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FractionOf {
    /// The card's whole memory (vLLM: the KV cache is the share of the card's total less
    /// the weights, activations and the rest, so one GiB more takes 1/total more share).
    CardTotal,
    /// The memory free when the engine started, before its weights loaded (SGLang: the
    /// KV pool is what the weights left less `(1 - share)` of that memory, its own error
    /// naming `1 - available/pre` as the least share that works).
    FreeAtStart,
    /// Not known from the boot log: the advice names no target value.
    Unknown,
}

impl EngineDescriptor {
    /// The names T1/T10/T15 need, with the word for one event in the plural when `n` != 1.
    pub fn preemption_words(&self, n: f64) -> String {
        format!("{}{}", self.preemption_word, crate::story::fmt::plural(n))
    }

    /// Whether `version` is one this project was tested on (equal, or prefixed `X.`).
    pub fn is_tested_version(&self, version: &str) -> bool {
        self.tested_versions.iter().any(|t| {
            version == *t
                || version.starts_with(&format!("{t}."))
                || version.starts_with(&format!("{t}rc"))
        })
    }

    /// The families a recording reads from each scrape: running, waiting and its split
    /// by reason, KV use, the token and request counters, the preemption counter and its
    /// witness, the paused gauge, the prefix-cache counters.
    fn recorded_families(&self) -> Vec<&'static str> {
        let mut families: Vec<&'static str> = vec![
            self.running,
            self.waiting,
            self.kv_usage,
            self.generation_tokens,
            self.prompt_tokens,
            self.request_success,
        ];
        families.extend(self.preemption_counter);
        families.extend(self.preemption_witness);
        families.extend(self.paused_gauge);
        families.extend(self.waiting_reasons.map(|w| w.metric));
        if let Some(p) = self.prefix_cache {
            families.extend([p.hit_tokens, p.queried_tokens]);
            families.extend(p.missed_tokens);
        }
        families
    }

    /// Every sample name a recording reads from each scrape after its first: what a
    /// series sample holds (running, waiting and its split by reason, KV use, the
    /// preemption counter and its witness, the paused gauge, the token and request
    /// counters, the prefix-cache counters), what the verdicts judged while it runs read (the same), and what tells
    /// a restart (the request counter's `_created` stamp: every counter of a process is
    /// made when it starts, so one stamp tells a new process as well as all of them),
    /// under its current name and the older names of
    /// [`EngineDescriptor::renamed_metrics`]. Sorted, without repeats. What does not
    /// change while a server runs (the cache's info metric) is read from the first,
    /// whole page: [`EngineDescriptor::static_sample_names`].
    ///
    /// A Prometheus exposition names each sample of a family by the family and a suffix:
    /// a counter `F` serves `F_total` and `F_created`, a histogram `F_bucket`, `F_sum`,
    /// `F_count` and `F_created`, a gauge `F` alone. So each family is listed under `F`,
    /// `F_total`, `F_sum` and `F_count` (a name no family serves costs nothing: a filter
    /// ignores it), and never under `F_bucket`: no recorder reads a bucket, and the
    /// buckets are most of a vLLM page.
    pub fn recorded_sample_names(&self) -> Vec<String> {
        let families = self.recorded_families();
        let mut names = self.sample_names(&families, &["", "_total", "_sum", "_count"]);
        names.extend(self.sample_names(&[self.request_success], &["_created"]));
        names.sort();
        names.dedup();
        names
    }

    /// Every metric family this table names, under its current name, in the table's
    /// order without repeats: what the verdicts read (the gauges, counters, histograms,
    /// info metrics and failed-request counters), the prefix-cache, tier, offload-library,
    /// transfer and speculation counters, each written without the suffix Prometheus adds
    /// to a sample (`_total`, `_created`, `_sum`, `_count`, `_bucket`): each sample of the
    /// family is named by it, alone or with one of those. The older names of
    /// [`EngineDescriptor::renamed_metrics`] are not listed; each rename names its current
    /// family.
    pub fn metric_families(&self) -> Vec<&'static str> {
        let mut names = self.recorded_families();
        names.extend([
            self.e2e_latency_histogram,
            self.ttft_histogram,
            self.queue_time_histogram,
        ]);
        names.extend(self.request_preemptions_histogram);
        names.extend(self.cache_info.map(|c| c.metric));
        names.extend(self.failed_requests.iter().map(|f| f.name));
        let sources = &self.setup_sources;
        for source in [
            sources.kv_dtype,
            sources.max_model_len,
            sources.kv_blocks,
            sources.gpu,
        ]
        .into_iter()
        .flatten()
        {
            if let SetupSource::InfoLabel { metric, .. } = source {
                names.push(metric);
            }
        }
        if let Some(p) = self.prefix_cache {
            if let Some(t) = p.tiers {
                names.push(t.metric);
                names.extend(t.computed.map(|c| c.metric));
                names.extend(t.offload_info_label.map(|(metric, _)| metric));
                if let Some(l) = t.library_counters {
                    names.extend([l.requested_tokens, l.hit_tokens]);
                }
            }
        }
        if let Some(d) = self.disaggregation {
            names.extend(
                [d.transferred, d.computed, d.cached, d.deferred_waiting].map(|c| c.metric),
            );
            if let Some(t) = d.transfers {
                names.extend([t.count, t.bytes, t.failed]);
            }
        }
        if let Some(c) = self.speculation.counters {
            names.extend([c.drafts, c.draft_tokens, c.accepted_tokens]);
            names.extend(c.accepted_per_position.map(|(metric, _)| metric));
        }
        let mut families: Vec<&'static str> = Vec::new();
        for name in names {
            let family = ["_total", "_created", "_sum", "_count", "_bucket"]
                .iter()
                .find_map(|suffix| name.strip_suffix(suffix))
                .unwrap_or(name);
            if !families.contains(&family) {
                families.push(family);
            }
        }
        families
    }

    /// The sample names a recording reads once, from its first whole page, and carries
    /// into every sample after it: what a server states once and never changes while it
    /// runs (the cache's info metric, whose labels weigh data-parallel engines' KV use).
    pub fn static_sample_names(&self) -> Vec<String> {
        let families: Vec<&str> = self.cache_info.map(|c| c.metric).into_iter().collect();
        self.sample_names(&families, &[""])
    }

    /// `families` (each under its current name and the names other releases gave it)
    /// with each of `suffixes`, sorted, without repeats.
    fn sample_names(&self, families: &[&str], suffixes: &[&str]) -> Vec<String> {
        let family_of = |name: &str| -> String {
            ["_total", "_created", "_sum", "_count"]
                .iter()
                .find_map(|suffix| name.strip_suffix(suffix))
                .unwrap_or(name)
                .to_owned()
        };
        let mut bases: Vec<String> = families.iter().map(|f| family_of(f)).collect();
        for rename in self.renamed_metrics {
            if bases.iter().any(|b| b == rename.current) {
                bases.push(rename.old.to_owned());
            }
        }
        let mut names: Vec<String> = bases
            .iter()
            .flat_map(|base| suffixes.iter().map(move |suffix| format!("{base}{suffix}")))
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The metrics of one scrape of this engine's server: its samples indexed by name, each
    /// metric that another release of the engine serves under an older name
    /// ([`EngineDescriptor::renamed_metrics`]) answering under its current name too.
    pub fn scrape_metrics(&self, samples: Vec<Sample>) -> MetricSet {
        let mut metrics = MetricSet::new(samples);
        self.answer_renamed(&mut metrics);
        metrics
    }

    /// Makes each of this engine's renamed metrics answer under its current name in a
    /// scrape that has only the old one; a scrape serving both keeps the current one.
    pub fn answer_renamed(&self, metrics: &mut MetricSet) {
        if let Some(escaped) = self.escaped_prefix {
            metrics.answer_escaped(escaped, self.metric_prefix);
        }
        for rename in self.renamed_metrics {
            metrics.answer_renamed(rename.old, rename.current);
        }
    }

    /// The stderr note for an untested version.
    pub fn untested_version_note(&self, version: &str) -> Option<String> {
        (!self.is_tested_version(version)).then(|| {
            format!(
                "{} {version} is not a tested version (tested: {}). If a check says Can't tell or a value looks wrong, a log line or metric may have changed: please report it.",
                self.name,
                self.tested_versions.join(", ")
            )
        })
    }
}

/// A metric that one release renamed. By vLLM's rule a metric deprecated in X.Y is hidden
/// in X.Y+1 (shown again with `--show-hidden-metrics-for-version=X.Y`) and removed in
/// X.Y+2: releases up to `hidden_in` serve the old name, releases from `deprecated_in`
/// the current one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricRename {
    /// The name without the suffixes Prometheus adds (`_total`, `_bucket`, ...).
    pub old: &'static str,
    /// The name the engine uses now.
    pub current: &'static str,
    /// The release that deprecated the old name.
    pub deprecated_in: &'static str,
    /// The release that hid it.
    pub hidden_in: &'static str,
}

/// vLLM's renames (`vllm/v1/metrics/loggers.py`: "Deprecated in 0.9 - Renamed as ...").
pub static VLLM_RENAMES: &[MetricRename] = &[
    MetricRename {
        old: "vllm:gpu_cache_usage_perc",
        current: "vllm:kv_cache_usage_perc",
        deprecated_in: "0.9",
        hidden_in: "0.10",
    },
    MetricRename {
        old: "vllm:gpu_prefix_cache_queries",
        current: "vllm:prefix_cache_queries",
        deprecated_in: "0.9",
        hidden_in: "0.10",
    },
    MetricRename {
        old: "vllm:gpu_prefix_cache_hits",
        current: "vllm:prefix_cache_hits",
        deprecated_in: "0.9",
        hidden_in: "0.10",
    },
    MetricRename {
        old: "vllm:time_per_output_token_seconds",
        current: "vllm:inter_token_latency_seconds",
        deprecated_in: "0.11",
        hidden_in: "0.12",
    },
];

/// The metrics of one scrape whose engine is not known yet (a page or a file just read):
/// the engine is the one whose prefix the scrape's names carry ([`Engine::from_metric_names`],
/// the rule that tells a scrape's engine everywhere), and its renamed metrics answer under
/// their current names ([`EngineDescriptor::scrape_metrics`]). A scrape whose names carry
/// no engine's prefix gets no renames: every renamed name carries its engine's prefix, so
/// none could apply.
pub fn scrape_metrics(samples: Vec<Sample>) -> MetricSet {
    let mut metrics = MetricSet::new(samples);
    if let Some(engine) = Engine::from_metric_names(metrics.names()) {
        engine.descriptor().answer_renamed(&mut metrics);
    }
    metrics
}

/// vLLM's table.
pub static VLLM: EngineDescriptor = EngineDescriptor {
    engine: Engine::Vllm,
    key: "vllm",
    name: "vLLM",
    aliases: &[],
    metric_prefix: "vllm:",
    escaped_prefix: None,
    running: "vllm:num_requests_running",
    waiting: "vllm:num_requests_waiting",
    kv_usage: "vllm:kv_cache_usage_perc",
    preemption_counter: Some("vllm:num_preemptions_total"),
    preemption_witness: None,
    request_preemptions_histogram: Some("vllm:request_num_preemptions"),
    paused_gauge: None,
    // vLLM 0.32 (`vllm/v1/metrics/loggers.py`, `gauge_waiting_by_reason`): the scheduler's
    // waiting requests less those in its `deferred_waiting` set are `capacity`, the set
    // itself `deferred` (`vllm/v1/core/sched/scheduler.py`, `make_stats`): requests the
    // scheduling scan skipped (a LoRA budget, a KV transfer under way) or enqueued in a
    // blocked status (`_is_blocked_waiting_status`: a structured-output grammar still
    // compiling, remote KVs not yet loaded, a streaming request's input). The two
    // sum to `vllm:num_requests_waiting`. The recordings hold it from 0.28 on and not on
    // 0.16 (docs/engine-versions.md); a server without it leaves the split unknown.
    waiting_reasons: Some(WaitingReasons {
        metric: "vllm:num_requests_waiting_by_reason",
        label: "reason",
        capacity: "capacity",
        deferred: "deferred",
    }),
    generation_tokens: "vllm:generation_tokens_total",
    prompt_tokens: "vllm:prompt_tokens_total",
    request_success: "vllm:request_success_total",
    success_has_reason: true,
    e2e_latency_histogram: "vllm:e2e_request_latency_seconds",
    ttft_histogram: "vllm:time_to_first_token_seconds",
    queue_time_histogram: "vllm:request_queue_time_seconds",
    cache_info: Some(VLLM_CACHE_INFO),
    metrics_path: "/metrics",
    default_port: 8000,
    preemption_word: "preemption",
    logs_each_eviction: false,
    gauges_lag: false,
    tokens_at_finish: false,
    tested_versions: &["0.16", "0.28", "0.29", "0.30", "0.32"],
    backend_flag: "--attention-backend",
    kv_usage_pool_words: "the cache",
    metrics_hint:
        "vLLM serves them at /metrics without a flag; check that the address is the server's",
    gauges_hint: None,
    running_cap_flag: "--max-num-seqs",
    tuning: Tuning {
        memory_fraction: Setting {
            written: "--gpu-memory-utilization",
            key: "gpu_memory_utilization",
            default: Some(0.9),
            yaml: false,
        },
        cache_size: Some(Setting {
            written: "--kv-cache-memory-bytes",
            key: "kv_cache_memory_bytes",
            default: None,
            yaml: false,
        }),
        max_running: Setting {
            written: "--max-num-seqs",
            key: "max_num_seqs",
            default: None,
            yaml: false,
        },
        no_eviction: NoEviction::LowerRunningLimit,
        // vLLM's engine arguments: `--kv-cache-dtype fp8` stores each token's KV in half
        // the bytes of bf16; `--tensor-parallel-size` shards the weights, leaving each card
        // more memory for its share of the cache.
        more_room: &[
            "`--kv-cache-dtype fp8` (half the bytes per token)",
            "a larger `--tensor-parallel-size` (the weights spread over more cards)",
        ],
        // vLLM allocates a request's blocks as it grows, and preempts when they run out.
        admits_at_full_length: false,
        fraction_of: FractionOf::CardTotal,
    },
    evicts_only_with: None,
    parallel_copies: &["data_parallel_size"],
    renamed_metrics: VLLM_RENAMES,
    request_ids_start_at_max_batch_size: false,
    scheduler: SchedulerKind::PagedRecompute,
    replay_settings: &[
        (Knob::MaxRunning, "--max-num-seqs"),
        (Knob::Blocks, "--num-gpu-blocks-override"),
        (Knob::CacheBytes, "--kv-cache-memory-bytes"),
        (Knob::MemoryFraction, "--gpu-memory-utilization"),
        (Knob::BlockSize, "--block-size"),
        (Knob::KvDtype, "--kv-cache-dtype"),
        (Knob::MaxModelLen, "--max-model-len"),
    ],
    // vLLM's `FinishReason` (`vllm/v1/engine/__init__.py`): `abort` for a request the
    // client dropped, `error` for one ended by an internal error (answered 500); both are
    // counted in the success counter under their own reason.
    failed_requests: &[
        FailedRequests {
            name: "vllm:request_success_total",
            label: Some(("finished_reason", "abort")),
            kind: FailedKind::Aborted,
        },
        FailedRequests {
            name: "vllm:request_success_total",
            label: Some(("finished_reason", "error")),
            kind: FailedKind::Errored,
        },
    ],
    // vLLM's `CacheConfig.block_size` is 16 on CUDA when `--block-size` is not given.
    default_block_size: Some(16),
    settings_shown: &[],
    ready_line: UVICORN_READY_LINE,
    // Its kernel JIT monitor (`jit_monitor.py`, one line per compile it sees after
    // start-up), the CUDA graph capture and torch.compile.
    compile_lines: &[
        "JIT compilation during inference",
        "Capturing CUDA graphs",
        "Graph capturing finished",
        "Compiling a graph for",
        "torch.compile took",
        "torch.compile takes",
    ],
    version_endpoints: &["/version"],
    setup_sources: SetupSources {
        kv_dtype: &[
            SetupSource::InfoLabel {
                metric: VLLM_CACHE_INFO.metric,
                label: "cache_dtype",
            },
            SetupSource::Setting("kv_cache_dtype"),
        ],
        max_model_len: &[SetupSource::Setting("max_model_len")],
        kv_blocks: &[SetupSource::InfoLabel {
            metric: VLLM_CACHE_INFO.metric,
            label: VLLM_CACHE_INFO.blocks_label,
        }],
        gpu: &[],
    },
    // `vllm/v1/metrics/loggers.py` and `stats.py`: prompt tokens new requests looked up
    // in the prefix cache and those it served (a preempted request's second lookup is
    // counted apart, `PrefixCacheStats.preempted_*`, and not exported); served as
    // `gpu_prefix_cache_*` before 0.9, aliased above.
    prefix_cache: Some(PrefixCacheCounters {
        hit_tokens: "vllm:prefix_cache_hits_total",
        queried_tokens: "vllm:prefix_cache_queries_total",
        missed_tokens: None,
        hits_written_at_first_hit: false,
        turn_off: "start vLLM with `--no-enable-prefix-caching`",
        off_settings: &[("enable_prefix_caching", false)],
        tiers: Some(VLLM_CACHE_TIERS),
    }),
    disaggregation: Some(VLLM_DISAGGREGATION),
    step_plugin: Some(StepPlugin {
        iteration_details_flag: "--enable-logging-iteration-details",
    }),
    request_span: Some(VLLM_REQUEST_SPAN),
    trace_flags: Some(TraceFlags {
        otlp_endpoint: Some("--otlp-traces-endpoint"),
        kv_events_config: Some("--kv-events-config"),
        kv_events_enable_key: true,
    }),
    // Its account of each request is its `llm_request` span (above).
    request_records: None,
    kv_events_drain: None,
    // `vllm/v1/spec_decode/metrics.py` (0.32), `SpecDecodingProm`: the three counters and
    // the per-position one (label `position`, 0 to num_speculative_tokens - 1), each
    // created only when `speculative_config` is set; `SpecDecodingStats.observe_draft`
    // counts one draft per request per step that proposed tokens. The boot log's
    // non-default args print `'speculative_config': {'method': 'ngram',
    // 'num_speculative_tokens': 3, ...}` (as given to `--speculative-config`); the engine
    // config line `speculative_config=SpeculativeConfig(method='ngram', model=None,
    // num_spec_tokens=3)`, or `speculative_config=None`.
    speculation: Speculation {
        setting: "speculative_config",
        turn_on: "--speculative-config '{\"method\": ..., \"num_speculative_tokens\": N}'",
        draft_length_key: Some("num_speculative_tokens"),
        counters: Some(SpecDecodeCounters {
            drafts: "vllm:spec_decode_num_drafts_total",
            draft_tokens: "vllm:spec_decode_num_draft_tokens_total",
            accepted_tokens: "vllm:spec_decode_num_accepted_tokens_total",
            accepted_per_position: Some((
                "vllm:spec_decode_num_accepted_tokens_per_pos_total",
                "position",
            )),
            only_when_on: true,
        }),
    },
};

/// `vllm/v1/metrics/loggers.py` (0.32): `prompt_tokens_cached_by_source` counts each
/// new request's prefix-cache hit tokens by the tier that supplied them, at admission: the
/// device tier with `prefix_cache_hits`, the connector's hits with the tier its
/// `get_external_cache_hit_sources` names (`vllm/v1/metrics/cache_hit_source.py`: `host`
/// for the CPU offloading connector, `disk` for its disk backend, `p2p` for NIXL, Mooncake
/// and MoRIIO, `external_unspecified` for a connector that does not say, LMCache's among
/// them). `prompt_tokens_by_source{source="local_compute"}` counts the tokens prefilled
/// here. `--kv-offloading-size` prints as `kv_offloading_size` among the non-default args
/// and as the label of `vllm:cache_config_info` (`"None"` when unset).
const VLLM_CACHE_TIERS: CacheTiers = CacheTiers {
    metric: "vllm:prompt_tokens_cached_by_source_total",
    label: "source",
    tiers: &[
        ("device", CacheTier::Device),
        ("host", CacheTier::Offload),
        ("disk", CacheTier::Offload),
        ("p2p", CacheTier::Peer),
        ("external_unspecified", CacheTier::Peer),
    ],
    computed: Some(LabelledCounter {
        metric: "vllm:prompt_tokens_by_source_total",
        label: "source",
        value: "local_compute",
    }),
    misattributed: None,
    offload_settings: &[SettingField {
        setting: "kv_offloading_size",
        field: None,
    }],
    offload_info_label: Some(("vllm:cache_config_info", "kv_offloading_size")),
    offload_connectors: Some((
        VLLM_KV_CONNECTOR,
        &[
            "OffloadingConnector",
            "SimpleCPUOffloadConnector",
            "LMCacheConnectorV1",
            "LMCacheMPConnector",
            "MooncakeStoreConnector",
            "FlexKVConnectorV1",
            "HF3FSKVConnector",
        ],
    )),
    // LMCache's own Prometheus logger (`lmcache/observability.py`, `PrometheusLogger`)
    // writes `lmcache:num_requested_tokens` and `lmcache:num_hit_tokens` into the
    // server's multiprocess metrics, labelled `model_name` and `worker_id`, each worker
    // counting its own retrievals.
    library_counters: Some(LibraryCounters {
        library: "LMCache",
        requested_tokens: "lmcache:num_requested_tokens_total",
        hit_tokens: "lmcache:num_hit_tokens_total",
        worker_label: "worker_id",
    }),
};

/// vLLM's disaggregated prefill (`vllm/distributed/kv_transfer/kv_connector/`, 0.32): a
/// connector that moves KV between instances, its role `kv_producer`, `kv_consumer` or
/// `kv_both` (the NIXL examples start both sides `kv_both`; which side a request prefills
/// on is the proxy's `kv_transfer_params`). The decode side counts the prompt tokens whose
/// KV it loaded as `prompt_tokens_by_source{source="external_kv_transfer"}` and those it
/// prefilled as `local_compute` (`vllm/v1/metrics/stats.py` `PromptTokenStats`); a request
/// waiting for its KV is `num_requests_waiting_by_reason{reason="deferred"}`. NIXL's own
/// figures (`nixl/stats.py`) are per transfer, gathered from every worker of the instance.
const VLLM_DISAGGREGATION: Disaggregation = Disaggregation {
    connector: VLLM_KV_CONNECTOR,
    connectors: &[
        "NixlConnector",
        "NixlPullConnector",
        "NixlPushConnector",
        "MooncakeConnector",
        "MoRIIOConnector",
    ],
    producer_role: "kv_producer",
    consumer_role: "kv_consumer",
    transferred: LabelledCounter {
        metric: "vllm:prompt_tokens_by_source_total",
        label: "source",
        value: "external_kv_transfer",
    },
    computed: LabelledCounter {
        metric: "vllm:prompt_tokens_by_source_total",
        label: "source",
        value: "local_compute",
    },
    cached: LabelledCounter {
        metric: "vllm:prompt_tokens_by_source_total",
        label: "source",
        value: "local_cache_hit",
    },
    deferred_waiting: LabelledCounter {
        metric: "vllm:num_requests_waiting_by_reason",
        label: "reason",
        value: "deferred",
    },
    transfers: Some(TransferCounters {
        count: "vllm:nixl_xfer_time_seconds_count",
        bytes: "vllm:nixl_bytes_transferred_sum",
        failed: "vllm:nixl_num_failed_transfers_total",
        scope: "NIXL's figures pool every tensor-parallel worker's transfers of the instance and name no request",
    }),
};

/// TensorRT-LLM's `trtllm_prompt_cache_hit_tokens_total{cache_tier=...}` (gpu, host,
/// disk, remote). Its default V1 KV cache manager never fills the split, and the
/// collector puts every hit in `gpu`; only a server whose `kv_cache_config` shows
/// `use_kv_cache_manager_v2=True` splits them. Host and disk offload are that config's
/// `host_cache_size` and `disk_cache_size`.
const TRTLLM_CACHE_TIERS: CacheTiers = CacheTiers {
    metric: "trtllm_prompt_cache_hit_tokens_total",
    label: "cache_tier",
    tiers: &[
        ("gpu", CacheTier::Device),
        ("host", CacheTier::Offload),
        ("disk", CacheTier::Offload),
        ("remote", CacheTier::Peer),
    ],
    computed: None,
    misattributed: Some((
        "TensorRT-LLM's V1 KV cache manager (the default) puts every hit in the gpu tier, host ones included",
        Some((
            SettingField {
                setting: "kv_cache_config",
                field: Some("use_kv_cache_manager_v2"),
            },
            "True",
        )),
    )),
    // `LLM Args:` prints `kv_cache_config=KvCacheConfig(..., host_cache_size=None,
    // disk_cache_size=None, ...)`.
    library_counters: None,
    offload_settings: &[
        SettingField {
            setting: "kv_cache_config",
            field: Some("host_cache_size"),
        },
        SettingField {
            setting: "kv_cache_config",
            field: Some("disk_cache_size"),
        },
    ],
    offload_info_label: None,
    offload_connectors: None,
};

/// vLLM's `llm_request` span (`--otlp-traces-endpoint`), made by `do_tracing` in
/// `vllm/v1/engine/output_processor.py` (0.32) for each request that finished, with the
/// attribute names of `vllm/tracing/utils.py` `SpanAttributes`. The span starts at
/// `int(arrival_time * 1e9)`, the API server's `time.time()` when the request arrived.
/// The durations are seconds, as floats: the time to first token is
/// `first_token_latency` (the first token's iteration stamp less the arrival, both
/// `time.time()`), the e2e the finishing iteration's stamp less the arrival, and queue,
/// prefill and decode differences of the engine core's `time.monotonic()` stamps
/// (`vllm/v1/metrics/stats.py`); the same values the engine's latency histograms observe.
const VLLM_REQUEST_SPAN: RequestSpan = RequestSpan {
    name: "llm_request",
    starts_at_arrival: true,
    id: "gen_ai.request.id",
    queue: Some("gen_ai.latency.time_in_queue"),
    ttft: Some("gen_ai.latency.time_to_first_token"),
    prefill: Some("gen_ai.latency.time_in_model_prefill"),
    decode: Some("gen_ai.latency.time_in_model_decode"),
    e2e: Some("gen_ai.latency.e2e"),
    prompt_tokens: Some("gen_ai.usage.prompt_tokens"),
    output_tokens: Some("gen_ai.usage.completion_tokens"),
    seconds_per_unit: 1.0,
};

/// SGLang's table.
pub static SGLANG: EngineDescriptor = EngineDescriptor {
    engine: Engine::Sglang,
    key: "sglang",
    name: "SGLang",
    aliases: &["sgl"],
    metric_prefix: "sglang:",
    // sgl-router's `/engine_metrics` joins its workers' metrics with every colon made an
    // underscore (sgl-project/sglang #12618, the router's workaround from #11456), and a
    // Prometheus that escapes colons on ingest stores `sglang_*` (inference-perf #600);
    // SGLang itself writes every metric with the colon.
    escaped_prefix: Some("sglang_"),
    running: "sglang:num_running_reqs",
    waiting: "sglang:num_queue_reqs",
    kv_usage: "sglang:token_usage",
    preemption_counter: Some("sglang:num_retracted_requests_total"),
    preemption_witness: Some("sglang:num_retracted_reqs"),
    request_preemptions_histogram: None,
    paused_gauge: None,
    waiting_reasons: None,
    generation_tokens: "sglang:generation_tokens_total",
    prompt_tokens: "sglang:prompt_tokens_total",
    request_success: "sglang:num_requests_total",
    success_has_reason: false,
    e2e_latency_histogram: "sglang:e2e_request_latency_seconds",
    ttft_histogram: "sglang:time_to_first_token_seconds",
    queue_time_histogram: "sglang:queue_time_seconds",
    cache_info: None,
    metrics_path: "/metrics",
    default_port: 30000,
    preemption_word: "retraction",
    logs_each_eviction: true,
    gauges_lag: false,
    tokens_at_finish: true,
    tested_versions: &["0.5"],
    backend_flag: "--attention-backend",
    kv_usage_pool_words: "the fullest memory pool (KV cache or request state)",
    metrics_hint: "start SGLang with --enable-metrics",
    gauges_hint: None,
    running_cap_flag: "--max-running-requests",
    tuning: Tuning {
        memory_fraction: Setting {
            written: "--mem-fraction-static",
            key: "mem_fraction_static",
            default: None,
            yaml: false,
        },
        cache_size: None,
        max_running: Setting {
            written: "--max-running-requests",
            key: "max_running_requests",
            default: None,
            yaml: false,
        },
        // SGLang's tuning guide: frequent retractions call for a higher
        // `--schedule-conservativeness` (1.0 by default).
        no_eviction: NoEviction::Raise(Setting {
            written: "--schedule-conservativeness",
            key: "schedule_conservativeness",
            default: Some(1.0),
            yaml: false,
        }),
        // SGLang's server arguments: `--kv-cache-dtype fp8_e5m2`, `--tp-size`.
        more_room: &[
            "`--kv-cache-dtype fp8_e5m2` (half the bytes per token)",
            "a larger `--tp-size` (the weights spread over more cards)",
        ],
        // SGLang's scheduler admits a request against its reserved new tokens
        // (`max_new_tokens` scaled by the new-token ratio), and retracts when it erred.
        admits_at_full_length: true,
        fraction_of: FractionOf::FreeAtStart,
    },
    evicts_only_with: None,
    parallel_copies: &["dp_size"],
    // No rename of the metrics read here is known in SGLang's releases. Its retraction
    // counter came after the retraction gauge: T1's witness rule handles that.
    renamed_metrics: &[],
    request_ids_start_at_max_batch_size: false,
    scheduler: SchedulerKind::TokenPoolRetract,
    replay_settings: &[
        (Knob::MaxRunning, "--max-running-requests"),
        (Knob::PoolTokens, "--max-total-tokens"),
        (Knob::MemoryFraction, "--mem-fraction-static"),
        (Knob::BlockSize, "--page-size"),
        (Knob::MaxModelLen, "--context-length"),
    ],
    // SGLang's metrics collector counts aborted requests apart; its request counter has
    // no reason label.
    failed_requests: &[FailedRequests {
        name: "sglang:num_aborted_requests_total",
        label: None,
        kind: FailedKind::Aborted,
    }],
    default_block_size: None,
    // Its server arguments list every setting; these are the ones that shape a run.
    settings_shown: &[
        "attention_backend",
        "chunked_prefill_size",
        "context_length",
        "disable_cuda_graph",
        "disable_radix_cache",
        "kv_cache_dtype",
        "mamba_full_memory_ratio",
        "max_mamba_cache_size",
        "max_queued_requests",
        "max_running_requests",
        "max_total_tokens",
        "mem_fraction_static",
        "page_size",
        "schedule_policy",
        "speculative_algorithm",
    ],
    ready_line: UVICORN_READY_LINE,
    // Its CUDA graph capture (`Capture cuda graph begin`, and from 0.5 `Capture target
    // decode CUDA graph begin`, `... end`).
    compile_lines: &[
        "Capture cuda graph begin",
        "CUDA graph begin",
        "Capture cuda graph end",
        "CUDA graph end",
    ],
    // `/get_server_info`, served as `/server_info` by later releases.
    version_endpoints: &["/get_server_info", "/server_info"],
    setup_sources: SetupSources {
        kv_dtype: &[SetupSource::Setting("kv_cache_dtype")],
        max_model_len: &[SetupSource::Setting("context_length")],
        kv_blocks: &[],
        gpu: &[],
    },
    // `sglang/srt/metrics/collector.py`: each finished request adds its prompt tokens to
    // `prompt_tokens_total` and, only when it had some, its cached tokens to
    // `cached_tokens_total` (labelled by `cache_source` in recent releases): the counter
    // appears at the first hit. Recent releases also observe each request's prompt tokens
    // not served from the radix cache in `uncached_prompt_tokens_histogram`, there from
    // the first request: before the first hit it says how many were served (none).
    prefix_cache: Some(PrefixCacheCounters {
        hit_tokens: "sglang:cached_tokens_total",
        queried_tokens: "sglang:prompt_tokens_total",
        missed_tokens: Some("sglang:uncached_prompt_tokens_histogram_sum"),
        hits_written_at_first_hit: true,
        turn_off: "start SGLang with `--disable-radix-cache`",
        off_settings: &[("disable_radix_cache", true)],
        // `cached_tokens_total`'s `cache_source` label: its values were not established
        // from SGLang's source, so no split is read.
        tiers: None,
    }),
    disaggregation: None,
    step_plugin: None,
    // SGLang's spans (`--enable-trace --otlp-traces-endpoint`,
    // `python/sglang/srt/tracing/trace.py`) carry no account of a request on one span:
    // the request's root span is named after the request itself (`Req 3f2a9c1b`, with a
    // role before it in later releases, the whole id in others) and holds only its id
    // (`rid`); the times are the lengths of child spans, one per stage, whose names and
    // nesting change from release to release (and with `--trace-level`). No table of
    // attributes reads it; a reader would have to rebuild each request from its stages.
    request_span: None,
    // SGLang's KV events are vLLM's format, its spans are not read (their timings are
    // child spans whose names change between releases).
    trace_flags: Some(TraceFlags {
        otlp_endpoint: None,
        kv_events_config: Some("--kv-events-config"),
        kv_events_enable_key: false,
    }),
    request_records: Some(SGLANG_REQUEST_RECORD),
    kv_events_drain: None,
    // `--speculative-algorithm` (EAGLE, EAGLE3, MTP, STANDALONE, NGRAM), printed in
    // `server_args`. Its Prometheus acceptance figures (`sglang:spec_accept_length`,
    // `sglang:spec_accept_rate`, `metrics/collector.py`) are gauges over the scheduler's
    // last logging window, not counters over the run: no delta between two readings
    // gives the run's acceptance, so none is read. Its draft length
    // (`speculative_num_draft_tokens`) counts a tree's nodes with top-k above 1, so it
    // is not read as one draft's length either.
    speculation: Speculation {
        setting: "speculative_algorithm",
        turn_on: "--speculative-algorithm",
        draft_length_key: None,
        counters: None,
    },
};

/// SGLang's per-request metrics files (`--export-metrics-to-file`):
/// `FileRequestMetricsExporter.write_record` (`python/sglang/srt/managers/
/// request_metrics_exporter.py`, `observability/` in later releases) appends one JSON
/// object a line to `sglang-request-metrics-{%Y%m%d_%H}.log` in
/// `--export-metrics-to-file-dir`, a new file each hour, for every finished request but
/// the health checks: `request_parameters` (the request, as a JSON string) and every key
/// of the response's `meta_info`. `TokenizerManager._handle_batch_output` fills
/// `meta_info` with `id` (the request's `rid`), `prompt_tokens`, `completion_tokens`,
/// `cached_tokens`, `num_retractions` and `e2e_latency` (API server's finish less its
/// receipt, `time.perf_counter()` seconds); with `--enable-metrics` it adds the API
/// server's stamps (`APIServerReqTimeStats.convert_to_output_meta_info`:
/// `request_received_ts`, `request_finished_ts`, Unix seconds, and `decode_throughput`,
/// `(completion_tokens - 1) / (finished - first token)`) and the scheduler's
/// (`SchedulerReqTimeStats.convert_to_output_meta_info`: `forward_entry_time` and
/// `prefill_finished_time`, Unix seconds, `queue_time`, seconds from entering the wait
/// queue to the first forward pass). `observability/req_time_stats.py` holds both.
const SGLANG_REQUEST_RECORD: RequestRecord = RequestRecord {
    from: RecordsFrom::Files(RecordFiles {
        flag: "--export-metrics-to-file",
        dir_flag: "--export-metrics-to-file-dir",
        name_prefix: "sglang-request-metrics-",
        name_suffix: ".log",
        needs: "start SGLang with --enable-metrics too: without it the records carry no time stamps and no queue time",
    }),
    source: RequestSource::SglangRequestFile,
    clock: RecordClock::Unix,
    id: &[&["id"]],
    arrival: &[&["request_received_ts"]],
    // `queue_time` is written.
    enqueued: None,
    first_scheduled: Some(&["forward_entry_time"]),
    // The API server's first-token stamp is not written; `decode_throughput` gives it.
    first_token: None,
    prefill_end: Some(&["prefill_finished_time"]),
    last_token: Some(&["request_finished_ts"]),
    queue_s: Some(&["queue_time"]),
    e2e_s: Some(&["e2e_latency"]),
    decode_rate: Some(&["decode_throughput"]),
    prompt_tokens: Some(&["prompt_tokens"]),
    output_tokens: Some(&["completion_tokens"]),
    cached_tokens: Some(&["cached_tokens"]),
    preemptions: &[&["num_retractions"]],
    reused_blocks: None,
    missed_blocks: None,
};

/// TensorRT-LLM's table.
pub static TRTLLM: EngineDescriptor = EngineDescriptor {
    engine: Engine::Trtllm,
    key: "trtllm",
    name: "TensorRT-LLM",
    aliases: &["tensorrt_llm", "tensorrt-llm", "trt-llm", "tensorrtllm", "trt"],
    metric_prefix: "trtllm_",
    escaped_prefix: None,
    running: "trtllm_num_requests_running",
    waiting: "trtllm_num_requests_waiting",
    kv_usage: "trtllm_kv_cache_utilization",
    preemption_counter: None,
    preemption_witness: None,
    request_preemptions_histogram: None,
    paused_gauge: Some("trtllm_num_paused_requests"),
    waiting_reasons: None,
    generation_tokens: "trtllm_generation_tokens_total",
    prompt_tokens: "trtllm_prompt_tokens_total",
    request_success: "trtllm_request_success_total",
    success_has_reason: true,
    e2e_latency_histogram: "trtllm_e2e_request_latency_seconds",
    ttft_histogram: "trtllm_time_to_first_token_seconds",
    queue_time_histogram: "trtllm_request_queue_time_seconds",
    cache_info: None,
    metrics_path: "/prometheus/metrics",
    default_port: 8000,
    preemption_word: "pause",
    logs_each_eviction: true,
    gauges_lag: true,
    tokens_at_finish: true,
    tested_versions: &["1.3"],
    backend_flag: "attn_backend",
    kv_usage_pool_words: "the cache",
    metrics_hint: "put 'return_perf_metrics: true' and 'enable_iter_perf_stats: true' in the YAML file given to trtllm-serve --config; it then serves them at /prometheus/metrics",
    gauges_hint: Some("TensorRT-LLM serves its running, waiting and KV gauges only with 'enable_iter_perf_stats: true' in the YAML file given to trtllm-serve --config"),
    running_cap_flag: "--max-running-requests",
    tuning: Tuning {
        memory_fraction: Setting {
            written: "kv_cache_config.free_gpu_memory_fraction",
            key: "free_gpu_memory_fraction",
            default: Some(0.9),
            yaml: true,
        },
        cache_size: None,
        max_running: Setting {
            written: "max_batch_size",
            key: "max_batch_size",
            default: None,
            yaml: true,
        },
        // Under MAX_UTILIZATION the scheduler pauses running requests when the cache
        // fills; GUARANTEED_NO_EVICT admits a request only when its whole output fits.
        no_eviction: NoEviction::Set {
            setting: Setting {
                written: "scheduler_config.capacity_scheduler_policy",
                key: "capacity_scheduler_policy",
                default: None,
                yaml: true,
            },
            value: "GUARANTEED_NO_EVICT",
        },
        // TensorRT-LLM's LLM API: `kv_cache_config.dtype: fp8`, `tensor_parallel_size`.
        more_room: &[
            "`kv_cache_config.dtype: fp8` in the --config YAML (half the bytes per token)",
            "a larger `tensor_parallel_size` (the weights spread over more cards)",
        ],
        // GUARANTEED_NO_EVICT, the default policy, reserves a request's whole output.
        admits_at_full_length: true,
        // A share of the memory free once the weights loaded, which the log read here
        // does not give.
        fraction_of: FractionOf::Unknown,
    },
    // MaxUtilizationScheduler pauses; GuaranteedNoEvictScheduler (the default) and the
    // static batch scheduler reserve a request's whole output before starting it.
    evicts_only_with: Some(("capacity_scheduler_policy", "MAX_UTILIZATION")),
    // Attention data parallelism gives each rank its own `max_num_requests`.
    parallel_copies: &["enable_attention_dp"],
    // No rename of the trtllm_ metrics read here is known.
    renamed_metrics: &[],
    request_ids_start_at_max_batch_size: true,
    scheduler: SchedulerKind::CapacityPolicy,
    replay_settings: &[
        (Knob::MaxRunning, "max_batch_size"),
        (Knob::MemoryFraction, "kv_cache_config.free_gpu_memory_fraction"),
        (Knob::BlockSize, "tokens_per_block"),
        (Knob::MaxModelLen, "max_seq_len"),
        (Knob::Policy, "scheduler_config.capacity_scheduler_policy"),
    ],
    // `tensorrt_llm/metrics/collector.py`: the success counter's `finished_reason` is the
    // request's finish reason (`cancelled`, `timeout` for one that did not finish on its
    // own), and `trtllm_request_error_total` counts HTTP errors by `http_code`.
    failed_requests: &[
        FailedRequests {
            name: "trtllm_request_success_total",
            label: Some(("finished_reason", "cancelled")),
            kind: FailedKind::Aborted,
        },
        FailedRequests {
            name: "trtllm_request_success_total",
            label: Some(("finished_reason", "timeout")),
            kind: FailedKind::Aborted,
        },
        FailedRequests {
            name: "trtllm_request_error_total",
            label: None,
            kind: FailedKind::Errored,
        },
    ],
    default_block_size: None,
    settings_shown: &[],
    ready_line: UVICORN_READY_LINE,
    // Its warm-up passes' graph capture and autotuner, and `Capturing CUDA graph`.
    compile_lines: &[
        "cuda_graph_capture: start",
        "autotuner: start",
        "Capturing CUDA graph",
    ],
    // trtllm-serve's documented endpoints: /health, /metrics, /version.
    version_endpoints: &["/version"],
    setup_sources: SetupSources {
        kv_dtype: &[SetupSource::InfoLabel {
            metric: "trtllm_kv_cache_config_info",
            label: "cache_dtype",
        }],
        max_model_len: &[
            SetupSource::Setting("max_seq_len"),
            SetupSource::InfoLabel {
                metric: "trtllm_model_config_info",
                label: "max_model_len",
            },
        ],
        kv_blocks: &[],
        gpu: &[SetupSource::InfoLabel {
            metric: "trtllm_model_config_info",
            label: "gpu_type",
        }],
    },
    // `tensorrt_llm/metrics/collector.py`: per finished request, its prompt tokens and
    // those served from the KV cache's reused blocks.
    prefix_cache: Some(PrefixCacheCounters {
        hit_tokens: "trtllm_prompt_cached_tokens_total",
        queried_tokens: "trtllm_prompt_tokens_total",
        missed_tokens: None,
        hits_written_at_first_hit: false,
        turn_off: "set `kv_cache_config.enable_block_reuse: false` in the --config YAML",
        off_settings: &[],
        tiers: Some(TRTLLM_CACHE_TIERS),
    }),
    // Its disaggregated serving (`trtllm-serve disaggregated`, `cache_transceiver_config`)
    // was not examined: no declaration or transfer counter is read.
    disaggregation: None,
    step_plugin: None,
    // Its spans were not examined; its per-request account is `/perf_metrics`
    // (`RequestSource::TrtllmPerfMetrics`).
    request_span: None,
    // TensorRT-LLM serves its KV events and per-request metrics over HTTP, drained by the
    // reader: nothing to point at a recorder.
    trace_flags: None,
    request_records: Some(TRTLLM_REQUEST_RECORD),
    // `OpenAIServer.get_kv_cache_events` (`tensorrt_llm/serve/openai_server.py`, routed
    // for POST) returns every event the executor's queue holds, as
    // `KVCacheEventSerializer` writes them (`tensorrt_llm/_utils.py`), and the queue
    // forgets them. The queue is `KVCacheEventManager`'s
    // (`cpp/tensorrt_llm/batch_manager/kvCacheEventManager.cpp`), which exists only with
    // `event_buffer_max_size` above 0 and drops its oldest events past that many.
    kv_events_drain: Some(Drain {
        path: "/kv_cache_events",
        post: true,
        needs: "put 'kv_cache_config: {event_buffer_max_size: N}' (N above 0: the most events it holds between two reads) in the YAML file given to trtllm-serve --config; blocks are stored for reuse, and their events sent, only with kv_cache_config.enable_block_reuse (on by default)",
    }),
    // `speculative_config` in the LLM API options (the YAML given to `trtllm-serve
    // --config`), printed in its `LLM Args:` line as a call (`Eagle(max_draft_len=3,
    // ...)`). No Prometheus counter of drafts or accepted tokens of 1.3 could be
    // established from its documented metrics (its iteration stats carry them, not its
    // `/prometheus/metrics`), so none is read.
    speculation: Speculation {
        setting: "speculative_config",
        turn_on: "speculative_config in the YAML given to trtllm-serve --config",
        draft_length_key: None,
        counters: None,
    },
};

/// TensorRT-LLM's `/perf_metrics` (`OpenAIServer.get_perf_metrics`,
/// `tensorrt_llm/serve/openai_server.py`): a GET answers the list of the requests finished
/// since the last GET and empties it (the list is a `deque(maxlen=
/// perf_metrics_max_requests)`, kept only with `return_perf_metrics` on and that bound
/// above 0, and it drops its oldest past the bound). Each item is `{"request_id":
/// the executor's id, "perf_metrics": {"first_iter", "last_iter", "timing_metrics":
/// {"server_arrival_time", "arrival_time", "first_scheduled_time", "first_token_time",
/// "server_first_token_time", "last_token_time"}, "kv_cache_metrics":
/// {"num_total_allocated_blocks", "num_new_allocated_blocks", "num_reused_blocks",
/// "num_missed_blocks"}}}` (with `ctx_request_id` and `speculative_decoding` where they
/// apply). The times are seconds of `std::chrono::steady_clock` (the executor's
/// `RequestPerfMetrics` time points, and the API server's
/// `get_steady_clock_now_in_seconds()`: `ServerArrivalTimeMiddleware` stamps the
/// arrival as the HTTP request enters the application), `CLOCK_MONOTONIC` on Linux, plus
/// a disaggregated server's clock offset (0 otherwise). `server_arrival_time` is `null`
/// for a request without an HTTP request. No token count is written.
const TRTLLM_REQUEST_RECORD: RequestRecord = RequestRecord {
    from: RecordsFrom::Drain(Drain {
        path: "/perf_metrics",
        post: false,
        needs: "put 'return_perf_metrics: true' and 'perf_metrics_max_requests: N' (N above 0: the most requests it holds between two reads) in the YAML file given to trtllm-serve --config",
    }),
    source: RequestSource::TrtllmPerfMetrics,
    clock: RecordClock::HostMonotonic,
    id: &[&["request_id"]],
    arrival: &[
        &["perf_metrics", "timing_metrics", "server_arrival_time"],
        &["perf_metrics", "timing_metrics", "arrival_time"],
    ],
    // The executor's arrival: the request entered its queue then, after the API server
    // had tokenized it.
    enqueued: Some(&["perf_metrics", "timing_metrics", "arrival_time"]),
    first_scheduled: Some(&["perf_metrics", "timing_metrics", "first_scheduled_time"]),
    first_token: Some(&["perf_metrics", "timing_metrics", "first_token_time"]),
    prefill_end: None,
    last_token: Some(&["perf_metrics", "timing_metrics", "last_token_time"]),
    queue_s: None,
    e2e_s: None,
    decode_rate: None,
    prompt_tokens: None,
    output_tokens: None,
    cached_tokens: None,
    preemptions: &[],
    reused_blocks: Some(&["perf_metrics", "kv_cache_metrics", "num_reused_blocks"]),
    missed_blocks: Some(&["perf_metrics", "kv_cache_metrics", "num_missed_blocks"]),
};

/// The line uvicorn logs once the application serves; all three engines' HTTP servers
/// run under uvicorn.
const UVICORN_READY_LINE: &str = "Application startup complete";

#[cfg(test)]
mod tests {
    use super::*;

    /// The families cover every sample a recording reads (each is a family, or a family
    /// with a Prometheus suffix, or a renamed family's older name), and reach past them to
    /// what only the verdicts and setup read: SGLang's aborted-request counter
    /// (`sglang:num_aborted_requests_total`), TensorRT-LLM's info metrics, vLLM's NIXL
    /// transfer histogram (its `_count` is read) and speculation counters. No family
    /// keeps a suffix, and none is listed twice (vLLM's `prompt_tokens_by_source` is
    /// named by both its tier split and its disaggregation).
    #[test]
    fn metric_families_cover_every_name_the_tables_read() {
        for engine in Engine::ALL {
            let d = engine.descriptor();
            let families = d.metric_families();
            let olds: Vec<&str> = d.renamed_metrics.iter().map(|r| r.old).collect();
            for name in d
                .recorded_sample_names()
                .iter()
                .chain(&d.static_sample_names())
            {
                let base = ["_total", "_created", "_sum", "_count"]
                    .iter()
                    .find_map(|s| name.strip_suffix(s))
                    .unwrap_or(name);
                assert!(
                    families.contains(&base) || olds.contains(&base),
                    "{name} of {} has no family",
                    d.name
                );
            }
            let mut unique = families.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), families.len(), "{}", d.name);
            for family in &families {
                assert!(
                    !["_total", "_created", "_sum", "_count", "_bucket"]
                        .iter()
                        .any(|s| family.ends_with(s)),
                    "{family}"
                );
            }
        }
        let vllm = VLLM.metric_families();
        for family in [
            "vllm:num_preemptions",
            "vllm:cache_config_info",
            "vllm:nixl_xfer_time_seconds",
            "vllm:spec_decode_num_drafts",
            "vllm:prompt_tokens_by_source",
        ] {
            assert!(vllm.contains(&family), "{family}");
        }
        assert!(SGLANG
            .metric_families()
            .contains(&"sglang:num_aborted_requests"));
        let trtllm = TRTLLM.metric_families();
        for family in ["trtllm_kv_cache_config_info", "trtllm_model_config_info"] {
            assert!(trtllm.contains(&family), "{family}");
        }
    }

    /// vLLM 0.32's `KVEventsConfig` (vllm/config/kv_events.py) publishes only with
    /// `enable_kv_cache_events` true; SGLang's configuration has no such key. Both read
    /// `publisher`, `endpoint` and `replay_endpoint`.
    #[test]
    fn the_kv_events_configuration_is_each_engines_own() {
        let vllm = VLLM
            .trace_flags
            .expect("vLLM publishes")
            .kv_events_json("tcp://127.0.0.1:5557", "tcp://127.0.0.1:5558");
        assert_eq!(
            vllm,
            r#"{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://127.0.0.1:5557","replay_endpoint":"tcp://127.0.0.1:5558"}"#
        );
        let sglang = SGLANG
            .trace_flags
            .expect("SGLang publishes")
            .kv_events_json("tcp://127.0.0.1:1", "tcp://127.0.0.1:2");
        assert!(!sglang.contains("enable_kv_cache_events"), "{sglang}");
        assert!(TRTLLM.trace_flags.is_none());
    }

    /// Every path a record is read from names a key the engine writes: TensorRT-LLM's
    /// `OpenAIServer.get_perf_metrics` writes `request_id` and `perf_metrics` with its
    /// `timing_metrics` and `kv_cache_metrics`; SGLang's exporter writes the keys of
    /// `meta_info` at the top (`id`, `prompt_tokens`, `request_received_ts`, ...). A
    /// misspelt key would read as a field never written.
    #[test]
    fn each_request_record_reads_the_keys_its_engine_writes() {
        let trtllm: &[&[&str]] = &[
            &["request_id"],
            &["perf_metrics", "timing_metrics", "server_arrival_time"],
            &["perf_metrics", "timing_metrics", "arrival_time"],
            &["perf_metrics", "timing_metrics", "first_scheduled_time"],
            &["perf_metrics", "timing_metrics", "first_token_time"],
            &["perf_metrics", "timing_metrics", "last_token_time"],
            &["perf_metrics", "kv_cache_metrics", "num_reused_blocks"],
            &["perf_metrics", "kv_cache_metrics", "num_missed_blocks"],
        ];
        let sglang = [
            "id",
            "request_received_ts",
            "forward_entry_time",
            "prefill_finished_time",
            "request_finished_ts",
            "queue_time",
            "e2e_latency",
            "decode_throughput",
            "prompt_tokens",
            "completion_tokens",
            "cached_tokens",
            "num_retractions",
        ];
        let record = TRTLLM.request_records.expect("TensorRT-LLM keeps records");
        for path in record.paths() {
            assert!(trtllm.contains(&path), "{path:?}");
        }
        assert!(
            matches!(record.from, RecordsFrom::Drain(d) if d.path == "/perf_metrics" && !d.post)
        );
        let record = SGLANG.request_records.expect("SGLang writes records");
        for path in record.paths() {
            assert!(matches!(path, [key] if sglang.contains(key)), "{path:?}");
        }
        assert!(matches!(record.from, RecordsFrom::Files(_)));
        let kv = TRTLLM
            .kv_events_drain
            .expect("TensorRT-LLM serves its KV events");
        assert_eq!((kv.path, kv.post), ("/kv_cache_events", true));
        assert!(VLLM.request_records.is_none() && VLLM.kv_events_drain.is_none());
    }

    #[test]
    fn parses_keys_and_names_in_any_case() {
        assert_eq!(Engine::parse("vllm"), Some(Engine::Vllm));
        assert_eq!(Engine::parse(" TensorRT-LLM "), Some(Engine::Trtllm));
        assert_eq!(Engine::parse("SGLang"), Some(Engine::Sglang));
        assert_eq!(Engine::parse("VLLM"), Some(Engine::Vllm));
        assert_eq!(Engine::parse("tgi"), None);
    }

    #[test]
    fn tested_versions() {
        assert!(VLLM.is_tested_version("0.28.0"));
        assert!(VLLM.is_tested_version("0.30.1"));
        assert!(!VLLM.is_tested_version("0.31.0"));
        assert!(!VLLM.is_tested_version("0.3"));
        assert!(TRTLLM.is_tested_version("1.3.0rc29"));
        assert!(SGLANG.is_tested_version("0.5.20"));
        assert!(SGLANG
            .untested_version_note("0.6.1")
            .is_some_and(|n| n.starts_with("SGLang 0.6.1 is not a tested version")));
    }

    fn s(name: &str, value: f64) -> Sample {
        Sample {
            name: name.into(),
            labels: Vec::new(),
            value,
            timestamp_ms: None,
        }
    }

    #[test]
    fn an_older_releases_name_answers_for_the_current_one() {
        // vLLM before 0.10 served the KV gauge and the prefix-cache counters under their
        // old names only.
        let old = scrape_metrics(vec![
            s("vllm:gpu_cache_usage_perc", 0.5),
            s("vllm:gpu_prefix_cache_queries_total", 10.0),
        ]);
        assert_eq!(old.total("vllm:kv_cache_usage_perc"), Some(0.5));
        assert_eq!(old.total("vllm:prefix_cache_queries_total"), Some(10.0));
        // During the deprecation both are served: the current name keeps its own value.
        let both = VLLM.scrape_metrics(vec![
            s("vllm:gpu_cache_usage_perc", 0.4),
            s("vllm:kv_cache_usage_perc", 0.5),
        ]);
        assert_eq!(both.total("vllm:kv_cache_usage_perc"), Some(0.5));
        assert_eq!(both.names().count(), 2);
    }

    /// A scrape is read with its own engine's renames: another engine's table adds none.
    #[test]
    fn renames_are_the_scrapes_engine_s() {
        let old = || vec![s("vllm:gpu_cache_usage_perc", 0.5)];
        assert_eq!(
            SGLANG
                .scrape_metrics(old())
                .total("vllm:kv_cache_usage_perc"),
            None
        );
        assert_eq!(
            VLLM.scrape_metrics(old()).total("vllm:kv_cache_usage_perc"),
            Some(0.5)
        );
        assert_eq!(
            Engine::from_metric_names(["sglang:num_running_reqs"]),
            Some(Engine::Sglang)
        );
        assert_eq!(
            Engine::from_metric_names(["process_cpu_seconds_total"]),
            None
        );
    }
}
