//! The Prometheus text each engine serves, with the real metric names (from the engine
//! tables in `inferlint_core::engine`), labels, `*_created` stamps (vLLM) and vLLM's
//! `cache_config_info`. Numbers are written as the Python client writes them.

use crate::bootlog::BootInfo;
use crate::sched::{EngineModel, ModelEngine, Request, State};
use inferlint_core::Engine;

/// The first line of every simulated exposition.
pub const SIMULATED_MARK: &str = "# simulated by inferlint-sim";

/// What a server knows at one moment, whatever the engine.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MetricsState {
    /// The served model name, as the metrics label it.
    pub model_name: String,
    /// The server's process id.
    pub pid: u32,
    /// Unix seconds the counters were created (the server's start; moves on restart).
    pub created: f64,
    /// Requests running.
    pub running: f64,
    /// Requests waiting.
    pub waiting: f64,
    /// KV cache use, 0 to 1.
    pub kv_usage: f64,
    /// vLLM preemptions or SGLang retractions.
    pub evictions: u64,
    /// TensorRT-LLM's paused gauge.
    pub paused: f64,
    /// Output tokens generated.
    pub generation_tokens: u64,
    /// Prompt tokens processed.
    pub prompt_tokens: u64,
    /// Prompt tokens looked up in the prefix cache (vLLM counts at admission, the
    /// others at finish).
    pub prefix_queries: u64,
    /// Prompt tokens the prefix cache served.
    pub prefix_hits: u64,
    /// Unix seconds the serving process started (vLLM's `process_start_time_seconds`).
    pub process_start: f64,
    /// Requests finished.
    pub finished: u64,
    /// Observations, seconds.
    pub e2e: Vec<f64>,
    /// Times to first token, seconds.
    pub ttft: Vec<f64>,
    /// Times in the queue, seconds.
    pub queue: Vec<f64>,
    /// vLLM: block size and the reported block count (usable + 1).
    pub block_size: u64,
    /// See `block_size`.
    pub num_gpu_blocks: u64,
    /// SGLang: the pool in tokens; TensorRT-LLM: blocks and tokens per block.
    pub pool_tokens: u64,
    /// See `pool_tokens`.
    pub pool_blocks: u64,
    /// Blocks in use (TensorRT-LLM).
    pub used_blocks: u64,
}

impl MetricsState {
    /// What a server of `model` shows without its histograms: counters as of `now`, gauges
    /// as of `gauges` (TensorRT-LLM's trail behind; the other engines pass `now` again).
    /// The simulated server and the simulated run folders both build their state here.
    pub fn at(
        model: &EngineModel,
        boot: &BootInfo,
        created: f64,
        now: State,
        gauges: State,
    ) -> MetricsState {
        let engine = model.engine();
        let d = engine.descriptor();
        let usage = gauges.used_units as f64 / model.usable_units().max(1) as f64;
        let kv_usage = match engine {
            Engine::Sglang => (usage * 100.0).round() / 100.0,
            _ => usage,
        };
        let (generation_tokens, prompt_tokens, prefix_hits) = if d.tokens_at_finish {
            (
                now.finished_output_tokens,
                now.finished_prompt_tokens,
                now.finished_prefix_hits,
            )
        } else {
            (now.generated_tokens, now.prompt_tokens, now.prefix_hits)
        };
        let mut m = MetricsState {
            model_name: boot.served_model_name.clone(),
            pid: boot.pid,
            created,
            running: gauges.running as f64,
            waiting: gauges.waiting as f64,
            kv_usage,
            evictions: now.evictions,
            paused: gauges.paused as f64,
            generation_tokens,
            prompt_tokens,
            prefix_queries: prompt_tokens,
            prefix_hits,
            process_start: boot.start_wall,
            finished: now.finished,
            ..MetricsState::default()
        };
        m.set_pool(model, gauges.used_units);
        m
    }

    /// Adds a finished request's end-to-end, first-token and queue times to the
    /// histograms.
    pub fn observe(&mut self, r: &Request) {
        if let (Some(finished), Some(first), Some(scheduled)) =
            (r.finished_at, r.first_token_at, r.first_scheduled_at)
        {
            self.e2e.push(finished - r.arrived_at);
            self.ttft.push(first - r.arrived_at);
            self.queue.push(scheduled - r.arrived_at);
        }
    }

    /// The pool's size (and, for TensorRT-LLM, its blocks in use) as the engine reports it.
    pub fn set_pool(&mut self, model: &EngineModel, used_units: u64) {
        match model {
            EngineModel::Vllm(c) => {
                self.block_size = c.block_size;
                self.num_gpu_blocks = c.num_gpu_blocks;
            }
            EngineModel::Sglang(c) => self.pool_tokens = c.max_total_num_tokens,
            EngineModel::Trtllm(c) => {
                self.block_size = c.tokens_per_block;
                self.pool_blocks = c.blocks;
                self.used_blocks = used_units;
            }
        }
    }
}

/// A number as Python's prometheus_client writes it (`floatToGoString`).
pub fn go_float(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let s = python_repr(v);
    if let Some(dot) = s.find('.') {
        if v > 0.0 && dot > 6 && !s.contains('e') {
            let digits: String = s.chars().filter(|c| *c != '.').collect();
            let mantissa = format!("{}.{}", &digits[..1], &digits[1..]);
            let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
            return format!("{mantissa}e+0{}", dot - 1);
        }
    }
    s
}

/// Python's `repr` of a float, for the values a server writes.
fn python_repr(v: f64) -> String {
    let s = format!("{v:?}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

struct Writer {
    text: String,
}

impl Writer {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        self.text
            .push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
    }
    /// A counter family with its one sample.
    fn counter(&mut self, name: &str, help: &str, labels: &[(&str, String)], value: u64) {
        self.family(name, "counter", help);
        self.sample(name, labels, value as f64);
    }
    fn sample(&mut self, name: &str, labels: &[(&str, String)], value: f64) {
        let mut sorted: Vec<&(&str, String)> = labels.iter().collect();
        sorted.sort_by_key(|(k, _)| *k);
        let body: Vec<String> = sorted.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        if body.is_empty() {
            self.text.push_str(&format!("{name} {}\n", go_float(value)));
        } else {
            self.text.push_str(&format!(
                "{name}{{{}}} {}\n",
                body.join(","),
                go_float(value)
            ));
        }
    }
    fn histogram(&mut self, name: &str, help: &str, labels: &[(&str, String)], obs: &[f64]) {
        self.family(name, "histogram", help);
        let mut cumulative = 0;
        for le in [0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 120.0, f64::INFINITY] {
            cumulative = obs.iter().filter(|&&o| o <= le).count().max(cumulative);
            let mut l = labels.to_vec();
            l.push(("le", go_float(le)));
            self.sample(&format!("{name}_bucket"), &l, cumulative as f64);
        }
        self.sample(&format!("{name}_count"), labels, obs.len() as f64);
        self.sample(&format!("{name}_sum"), labels, obs.iter().sum());
    }
}

fn with(
    base: &[(&'static str, String)],
    extra: &[(&'static str, &str)],
) -> Vec<(&'static str, String)> {
    let mut l = base.to_vec();
    l.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
    l
}

/// The exposition text a server of `engine` serves in state `m`.
///
/// # Panics
///
/// For an engine the simulator has no model of (the engine of every
/// [`EngineModel`] has an exposition).
pub fn exposition(engine: Engine, m: &MetricsState) -> String {
    let d = engine.descriptor();
    let mut w = Writer {
        text: format!("{SIMULATED_MARK}: not a real server\n"),
    };
    match engine {
        Engine::Vllm => {
            // The Python client's process collector, in the API server that serves this.
            w.family(
                "process_start_time_seconds",
                "gauge",
                "Start time of the process since unix epoch in seconds.",
            );
            w.sample("process_start_time_seconds", &[], m.process_start);
            let base = vec![
                ("engine", "0".to_owned()),
                ("model_name", m.model_name.clone()),
            ];
            let created = |w: &mut Writer, name: &str, help: &str, labels: &[(&str, String)]| {
                let stem = name.strip_suffix("_total").unwrap_or(name);
                w.family(&format!("{stem}_created"), "gauge", help);
                w.sample(&format!("{stem}_created"), labels, m.created);
            };
            let gauge = |w: &mut Writer, name: &str, help: &str, v: f64| {
                w.family(name, "gauge", help);
                w.sample(name, &base, v);
            };
            gauge(
                &mut w,
                d.running,
                "Number of requests in model execution batches.",
                m.running,
            );
            gauge(
                &mut w,
                d.waiting,
                "Number of requests waiting to be processed.",
                m.waiting,
            );
            gauge(
                &mut w,
                d.kv_usage,
                "KV-cache usage. 1 means 100 percent usage.",
                m.kv_usage,
            );
            let counter = |w: &mut Writer, name: &str, help: &str, v: u64| {
                w.counter(name, help, &base, v);
                created(w, name, help, &base);
            };
            if let Some(p) = d.preemption_counter {
                counter(
                    &mut w,
                    p,
                    "Cumulative number of preemption from the engine.",
                    m.evictions,
                );
            }
            counter(
                &mut w,
                d.prompt_tokens,
                "Number of prefill tokens processed.",
                m.prompt_tokens,
            );
            counter(
                &mut w,
                d.generation_tokens,
                "Number of generation tokens processed.",
                m.generation_tokens,
            );
            if let Some(p) = d.prefix_cache {
                counter(
                    &mut w,
                    p.queried_tokens,
                    "Prefix cache queries, in terms of number of queried tokens.",
                    m.prefix_queries,
                );
                counter(
                    &mut w,
                    p.hit_tokens,
                    "Prefix cache hits, in terms of number of cached tokens.",
                    m.prefix_hits,
                );
            }
            let help = "Count of successfully processed requests.";
            w.family(d.request_success, "counter", help);
            let reasons = ["stop", "length", "abort", "error", "repetition"];
            for r in reasons {
                let n = if r == "length" { m.finished } else { 0 };
                w.sample(
                    d.request_success,
                    &with(&base, &[("finished_reason", r)]),
                    n as f64,
                );
            }
            let stem = d.request_success.trim_end_matches("_total");
            w.family(&format!("{stem}_created"), "gauge", help);
            for r in reasons {
                w.sample(
                    &format!("{stem}_created"),
                    &with(&base, &[("finished_reason", r)]),
                    m.created,
                );
            }
            for (name, help, obs) in [
                (
                    d.e2e_latency_histogram,
                    "Histogram of e2e request latency in seconds.",
                    &m.e2e,
                ),
                (
                    d.ttft_histogram,
                    "Histogram of time to first token in seconds.",
                    &m.ttft,
                ),
                (
                    d.queue_time_histogram,
                    "Histogram of time spent in WAITING phase for request.",
                    &m.queue,
                ),
            ] {
                w.histogram(name, help, &base, obs);
                created(&mut w, name, help, &base);
            }
            if let Some(info) = d.cache_info.map(|c| c.metric) {
                w.family(info, "gauge", "Information of the LLMEngine CacheConfig");
                let labels = vec![
                    ("block_size", m.block_size.to_string()),
                    ("cache_dtype", "auto".to_owned()),
                    ("enable_prefix_caching", "True".to_owned()),
                    ("engine", "0".to_owned()),
                    ("gpu_memory_utilization", "0.9".to_owned()),
                    ("num_cpu_blocks", "None".to_owned()),
                    ("num_gpu_blocks", m.num_gpu_blocks.to_string()),
                    ("num_gpu_blocks_override", "None".to_owned()),
                ];
                w.sample(info, &labels, 1.0);
            }
        }
        Engine::Sglang => {
            let sched = vec![
                ("engine_type", "unified".to_owned()),
                ("model_name", m.model_name.clone()),
                ("moe_ep_rank", "0".to_owned()),
                ("pp_rank", "0".to_owned()),
                ("tp_rank", "0".to_owned()),
            ];
            let client = vec![
                ("engine_type", "unified".to_owned()),
                ("is_streaming", "true".to_owned()),
                ("model_name", m.model_name.clone()),
            ];
            let gauge = |w: &mut Writer, name: &str, help: &str, v: f64| {
                w.family(name, "gauge", help);
                w.sample(name, &sched, v);
            };
            gauge(
                &mut w,
                "sglang:max_total_num_tokens",
                "Maximum total number of tokens in the KV cache pool.",
                m.pool_tokens as f64,
            );
            gauge(
                &mut w,
                "sglang:page_size",
                "The page size of the KV cache.",
                1.0,
            );
            gauge(
                &mut w,
                d.running,
                "The number of running requests.",
                m.running,
            );
            gauge(
                &mut w,
                d.waiting,
                "The number of requests in the waiting queue.",
                m.waiting,
            );
            gauge(&mut w, d.kv_usage, "The token usage.", m.kv_usage);
            if let Some(witness) = d.preemption_witness {
                let mut l = sched.clone();
                l.push(("pid", m.pid.to_string()));
                w.family(witness, "gauge", "The number of retracted requests.");
                w.sample(witness, &l, 0.0);
            }
            // SGLang creates its retraction counter at the first retraction.
            if let (Some(counter), true) = (d.preemption_counter, m.evictions > 0) {
                w.counter(
                    counter,
                    "Total number of retracted requests due to kvcache full.",
                    &sched,
                    m.evictions,
                );
            }
            w.counter(
                d.prompt_tokens,
                "Number of prefill tokens processed.",
                &client,
                m.prompt_tokens,
            );
            w.counter(
                d.generation_tokens,
                "Number of generation tokens processed.",
                &client,
                m.generation_tokens,
            );
            // SGLang creates its cached-token counter at the first request with a hit.
            if let (Some(p), true) = (d.prefix_cache, m.prefix_hits > 0) {
                w.counter(
                    p.hit_tokens,
                    "Number of cached prompt tokens.",
                    &client,
                    m.prefix_hits,
                );
            }
            w.counter(
                d.request_success,
                "Number of requests processed.",
                &client,
                m.finished,
            );
            w.histogram(
                d.ttft_histogram,
                "Histogram of time to first token in seconds.",
                &client,
                &m.ttft,
            );
            w.histogram(
                d.e2e_latency_histogram,
                "Histogram of End-to-end request latency in seconds",
                &client,
                &m.e2e,
            );
            w.histogram(
                d.queue_time_histogram,
                "Histogram of queueing time in seconds.",
                &sched,
                &m.queue,
            );
        }
        Engine::Trtllm => {
            let gauges = vec![
                ("engine_type", "pytorch".to_owned()),
                ("model_name", m.model_name.clone()),
                ("pid", m.pid.to_string()),
            ];
            let counters = vec![
                ("engine_type", "pytorch".to_owned()),
                ("model_name", m.model_name.clone()),
            ];
            let gauge = |w: &mut Writer, name: &str, help: &str, v: f64| {
                w.family(name, "gauge", help);
                w.sample(name, &gauges, v);
            };
            gauge(
                &mut w,
                d.running,
                "Number of requests currently running",
                m.running,
            );
            gauge(&mut w, d.waiting, "Number of requests waiting", m.waiting);
            gauge(&mut w, d.kv_usage, "KV cache utilization", m.kv_usage);
            gauge(
                &mut w,
                "trtllm_kv_cache_max_blocks",
                "Maximum number of KV cache blocks",
                m.pool_blocks as f64,
            );
            gauge(
                &mut w,
                "trtllm_kv_cache_free_blocks",
                "Number of free KV cache blocks",
                (m.pool_blocks - m.used_blocks) as f64,
            );
            gauge(
                &mut w,
                "trtllm_kv_cache_used_blocks",
                "Number of used KV cache blocks",
                m.used_blocks as f64,
            );
            gauge(
                &mut w,
                "trtllm_kv_cache_tokens_per_block",
                "Number of tokens per KV cache block",
                m.block_size as f64,
            );
            if let Some(paused) = d.paused_gauge {
                gauge(&mut w, paused, "Number of paused requests", m.paused);
            }
            w.counter(
                d.request_success,
                "Count of successfully processed requests",
                &with(&counters, &[("finished_reason", "length")]),
                m.finished,
            );
            w.counter(
                d.prompt_tokens,
                "Number of prefill tokens processed",
                &counters,
                m.prompt_tokens,
            );
            w.counter(
                d.generation_tokens,
                "Number of generation tokens processed",
                &counters,
                m.generation_tokens,
            );
            if let Some(p) = d.prefix_cache {
                w.counter(
                    p.hit_tokens,
                    "Process-lifetime total prompt tokens served from KV cache.",
                    &counters,
                    m.prefix_hits,
                );
            }
            w.histogram(
                d.e2e_latency_histogram,
                "Histogram of end to end request latency in seconds",
                &counters,
                &m.e2e,
            );
            w.histogram(
                d.ttft_histogram,
                "Histogram of time to first token in seconds",
                &counters,
                &m.ttft,
            );
            w.histogram(
                d.queue_time_histogram,
                "Histogram of time spent in WAITING phase for request",
                &counters,
                &m.queue,
            );
        }
        _ => panic!("the simulator has no exposition of {engine}"),
    }
    w.text
}
