//! The demo run shipped in fixtures/demo: SYNTHETIC, made by a small deterministic
//! simulation of a vLLM-style scheduler, not recorded from a real server.
//!
//! The setup is chosen to show the traps the tool exists for, the way the tutorial's
//! recorded run does: 32 requests asked for at once, a KV cache of 160 usable 16-token
//! blocks (161 reported, one held back as the null block), answers of 400 tokens. The
//! cache fits 22 requests at the start and only 5 at full length, so the scheduler runs
//! fewer than asked, preempts running requests as answers grow, and logs none of it.

use inferlint_core::model::Snapshot;
use inferlint_core::{Engine, MetricSet, SeriesSample};
use inferlint_engines::files;

const BLOCK: u64 = 16;
const NUM_GPU_BLOCKS: u64 = 161;
const USABLE_BLOCKS: u64 = NUM_GPU_BLOCKS - 1;
const REQUESTS: usize = 32;
const PROMPT: u64 = 100;
const OUTPUT: u64 = 400;
const MAX_NUM_SEQS: usize = 32;
const INTERVAL_S: f64 = 0.25;
/// The wall clock at the before snapshot (2026-11-30 00:10:00.412 UTC).
const T0_WALL: f64 = 1_795_997_400.412;
const T0_MONO_NS: i64 = 5_000_000_000_000;
const SERVER_START_WALL: f64 = T0_WALL - 540.0;
/// Requests a probe sent before the before snapshot (they are in both snapshots).
const PROBE_REQUESTS: u64 = 9;
const PROBE_OUTPUT: u64 = 16;
const PROBE_PROMPT: u64 = 10;

#[derive(Debug, Clone)]
struct Request {
    generated: u64,
    blocks: u64,
    admitted_at: Option<f64>,
    first_token_at: Option<f64>,
    finished_at: Option<f64>,
    admissions: u32,
}

fn blocks_for(tokens: u64) -> u64 {
    tokens.div_ceil(BLOCK)
}

/// Gauges and counters at one moment of the simulation.
#[derive(Debug, Clone, Copy, Default)]
struct State {
    running: usize,
    waiting: usize,
    used_blocks: u64,
    preemptions: u64,
    generated: u64,
    prompt: u64,
    finished: u64,
}

struct Simulation {
    /// (time since the load started, state after the step that ended then)
    timeline: Vec<(f64, State)>,
    requests: Vec<Request>,
    end_s: f64,
}

fn simulate() -> Simulation {
    let mut requests: Vec<Request> = (0..REQUESTS)
        .map(|_| Request {
            generated: 0,
            blocks: 0,
            admitted_at: None,
            first_token_at: None,
            finished_at: None,
            admissions: 0,
        })
        .collect();
    let mut waiting: std::collections::VecDeque<usize> = (0..REQUESTS).collect();
    let mut running: Vec<usize> = Vec::new();
    let mut free = USABLE_BLOCKS;
    let mut state = State::default();
    let mut now = 0.0;
    let mut timeline = vec![(
        0.0,
        State {
            waiting: REQUESTS,
            ..State::default()
        },
    )];
    while !(waiting.is_empty() && running.is_empty()) {
        // Running requests first: each needs room for its next token. Without room, the
        // newest running request is preempted (its blocks freed, recomputed later).
        let mut i = 0;
        while i < running.len() {
            let id = running[i];
            let need = blocks_for(PROMPT + requests[id].generated + 1);
            while need > requests[id].blocks + free {
                let victim = *running.last().expect("the request itself is running");
                running.pop();
                free += requests[victim].blocks;
                requests[victim].blocks = 0;
                waiting.push_front(victim);
                state.preemptions += 1;
                if victim == id {
                    break;
                }
            }
            if running.get(i) == Some(&id) {
                free -= need - requests[id].blocks;
                requests[id].blocks = need;
                i += 1;
            }
        }
        // Then admit waiting requests, oldest first, while their blocks fit.
        let mut prefill_tokens = 0;
        while running.len() < MAX_NUM_SEQS {
            let Some(&id) = waiting.front() else { break };
            let need = blocks_for(PROMPT + requests[id].generated + 1);
            if need > free {
                break;
            }
            waiting.pop_front();
            free -= need;
            requests[id].blocks = need;
            if requests[id].admitted_at.is_none() {
                // Like vLLM, the prompt counter counts a prompt once; recomputing a
                // preempted request's KV is not new prompt.
                requests[id].admitted_at = Some(now);
                state.prompt += PROMPT;
            }
            requests[id].admissions += 1;
            prefill_tokens += PROMPT + requests[id].generated;
            running.push(id);
        }
        // One step: every running request generates a token.
        let step = 0.012 + 0.0004 * running.len() as f64 + 0.00002 * prefill_tokens as f64;
        now += step;
        let mut still = Vec::with_capacity(running.len());
        for &id in &running {
            let r = &mut requests[id];
            r.generated += 1;
            state.generated += 1;
            r.first_token_at.get_or_insert(now);
            if r.generated == OUTPUT {
                r.finished_at = Some(now);
                free += r.blocks;
                r.blocks = 0;
                state.finished += 1;
            } else {
                still.push(id);
            }
        }
        running = still;
        state.running = running.len();
        state.waiting = waiting.len();
        state.used_blocks = USABLE_BLOCKS - free;
        timeline.push((now, state));
    }
    Simulation {
        timeline,
        requests,
        end_s: now,
    }
}

/// The state at time `t` (after the last step that ended by then).
fn state_at(sim: &Simulation, t: f64) -> State {
    let i = sim.timeline.partition_point(|(at, _)| *at <= t);
    sim.timeline[i.saturating_sub(1)].1
}

/// Seconds from the before snapshot to the start of the load.
const LOAD_START: f64 = 0.8;

fn metrics_text(sim: &Simulation, state: &State, done: &[&Request]) -> String {
    let labels = "engine=\"0\",model_name=\"demo-model\"";
    let mut t = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, lines: &[(String, f64)]| {
        t.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        for (suffix_labels, value) in lines {
            t.push_str(&format!("{name}{suffix_labels} {value:?}\n"));
        }
    };
    let l = |extra: &str| {
        if extra.is_empty() {
            format!("{{{labels}}}")
        } else {
            format!("{{{labels},{extra}}}")
        }
    };
    let created = SERVER_START_WALL + 31.25;
    metric(
        "vllm:num_requests_running",
        "gauge",
        "Number of requests in model execution batches.",
        &[(l(""), state.running as f64)],
    );
    metric(
        "vllm:num_requests_waiting",
        "gauge",
        "Number of requests waiting to be processed.",
        &[(l(""), state.waiting as f64)],
    );
    metric(
        "vllm:kv_cache_usage_perc",
        "gauge",
        "KV-cache usage. 1 means 100 percent usage.",
        &[(l(""), state.used_blocks as f64 / USABLE_BLOCKS as f64)],
    );
    metric(
        "vllm:num_preemptions_total",
        "counter",
        "Cumulative number of preemption from the engine.",
        &[(l(""), state.preemptions as f64)],
    );
    metric(
        "vllm:num_preemptions_created",
        "gauge",
        "Cumulative number of preemption from the engine.",
        &[(l(""), created)],
    );
    metric(
        "vllm:prompt_tokens_total",
        "counter",
        "Number of prefill tokens processed.",
        &[(l(""), (state.prompt + PROBE_REQUESTS * PROBE_PROMPT) as f64)],
    );
    metric(
        "vllm:prompt_tokens_created",
        "gauge",
        "Number of prefill tokens processed.",
        &[(l(""), created)],
    );
    metric(
        "vllm:generation_tokens_total",
        "counter",
        "Number of generation tokens processed.",
        &[(
            l(""),
            (state.generated + PROBE_REQUESTS * PROBE_OUTPUT) as f64,
        )],
    );
    metric(
        "vllm:generation_tokens_created",
        "gauge",
        "Number of generation tokens processed.",
        &[(l(""), created)],
    );
    let reasons = ["stop", "length", "abort", "error", "repetition"];
    metric(
        "vllm:request_success_total",
        "counter",
        "Count of successfully processed requests.",
        &reasons
            .iter()
            .map(|r| {
                let n = if *r == "length" {
                    state.finished + PROBE_REQUESTS
                } else {
                    0
                };
                (l(&format!("finished_reason=\"{r}\"")), n as f64)
            })
            .collect::<Vec<_>>(),
    );
    metric(
        "vllm:request_success_created",
        "gauge",
        "Count of successfully processed requests.",
        &reasons
            .iter()
            .map(|r| (l(&format!("finished_reason=\"{r}\"")), created))
            .collect::<Vec<_>>(),
    );
    // Histograms: the probe's requests took 0.4 s each, with 0.05 s to the first token.
    let probe = PROBE_REQUESTS as f64;
    let hist = |values: Vec<f64>, probe_each: f64| -> (f64, f64) {
        (
            values.iter().sum::<f64>() + probe * probe_each,
            values.len() as f64 + probe,
        )
    };
    let e2e = hist(
        done.iter().map(|r| r.finished_at.unwrap_or(0.0)).collect(),
        0.4,
    );
    let ttft = hist(
        done.iter()
            .map(|r| r.first_token_at.unwrap_or(0.0))
            .collect(),
        0.05,
    );
    let queue = hist(
        done.iter().map(|r| r.admitted_at.unwrap_or(0.0)).collect(),
        0.0,
    );
    for (name, help, (sum, count)) in [
        (
            "vllm:e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds.",
            e2e,
        ),
        (
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            ttft,
        ),
        (
            "vllm:request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request.",
            queue,
        ),
    ] {
        metric(
            name,
            "histogram",
            help,
            &[
                (format!("_count{}", l("")), count),
                (format!("_sum{}", l("")), sum),
            ],
        );
        metric(
            &format!("{name}_created"),
            "gauge",
            help,
            &[(l(""), created)],
        );
    }
    metric(
        "vllm:cache_config_info",
        "gauge",
        "Information of the LLMEngine CacheConfig",
        &[(
            format!(
                "{{block_size=\"{BLOCK}\",cache_dtype=\"auto\",enable_prefix_caching=\"True\",engine=\"0\",gpu_memory_utilization=\"0.9\",num_cpu_blocks=\"None\",num_gpu_blocks=\"{NUM_GPU_BLOCKS}\",num_gpu_blocks_override=\"None\"}}"
            ),
            1.0,
        )],
    );
    let _ = sim;
    t
}

fn snapshot(sim: &Simulation, offset_s: f64, latency_s: f64) -> String {
    let t_load = offset_s - LOAD_START;
    let state = if t_load < 0.0 {
        State::default()
    } else {
        state_at(sim, t_load)
    };
    let done: Vec<&Request> = sim
        .requests
        .iter()
        .filter(|r| r.finished_at.is_some_and(|f| t_load >= f))
        .collect();
    let text = metrics_text(sim, &state, &done);
    let snapshot = Snapshot {
        url: "http://127.0.0.1:8000/metrics".into(),
        t_wall: Some(T0_WALL + offset_s),
        t_mono_ns: Some(T0_MONO_NS + (offset_s * 1e9).round() as i64),
        latency_s: Some(latency_s),
        text,
        metrics: MetricSet::default(),
    };
    files::snapshot_json(&snapshot)
}

fn series(sim: &Simulation) -> String {
    let header = inferlint_core::SeriesHeader {
        url: Some("http://127.0.0.1:8000".into()),
        interval_s: Some(INTERVAL_S),
        engine: Some(Engine::Vllm),
        unknown_engine: None,
        gpu: None,
    };
    let mut out = files::series_header_json(&header);
    out.push('\n');
    let start = LOAD_START - 0.3;
    let end = LOAD_START + sim.end_s + 0.3;
    let mut k = 0;
    loop {
        let offset = start + k as f64 * INTERVAL_S;
        if offset > end {
            break;
        }
        // A recorder's readings land a little after their scheduled moment.
        let jitter = 0.0009 + 0.0004 * ((k * 7) % 5) as f64;
        let at = offset + jitter;
        let t_load = at - LOAD_START;
        let s = if t_load < 0.0 {
            State { ..State::default() }
        } else {
            state_at(sim, t_load)
        };
        let sample = SeriesSample {
            t_wall: T0_WALL + at,
            t_mono_ns: Some(T0_MONO_NS + (at * 1e9).round() as i64),
            running: Some(s.running as f64),
            waiting: Some(if t_load < 0.0 { 0.0 } else { s.waiting as f64 }),
            kv_usage: Some(s.used_blocks as f64 / USABLE_BLOCKS as f64),
            preemptions: Some(s.preemptions as f64),
            generation_tokens: Some((s.generated + PROBE_REQUESTS * PROBE_OUTPUT) as f64),
            prompt_tokens: Some((s.prompt + PROBE_REQUESTS * PROBE_PROMPT) as f64),
            ..SeriesSample::default()
        };
        out.push_str(&files::series_sample_json(Engine::Vllm, &sample));
        out.push('\n');
        k += 1;
    }
    out
}

fn boot_log() -> String {
    let lines = [
        "# SYNTHETIC: written by `cargo xtask demo` for inferlint's demo run; not from a real server.",
        "(APIServer pid=4101) INFO 11-30 00:01:00 [api_server.py:1] vLLM API server version 0.28.0",
        "(APIServer pid=4101) INFO 11-30 00:01:00 [utils.py:1] non-default args: {'model_tag': 'demo-model', 'model': 'demo-model', 'max_model_len': 4096, 'max_num_seqs': 32}",
        "(EngineCore pid=4180) INFO 11-30 00:01:06 [core.py:1] Initializing a V1 LLM engine (v0.28.0) with config: model='demo-model', speculative_config=None, max_seq_len=4096, enforce_eager=False",
        "(EngineCore pid=4180) INFO 11-30 00:01:09 [cuda.py:1] Using FLASH_ATTN attention backend out of potential backends: ['FLASH_ATTN', 'FLASHINFER', 'TRITON_ATTN', 'FLEX_ATTENTION'].",
        "(EngineCore pid=4180) INFO 11-30 00:01:31 [gpu_model_runner.py:1] Model loading took 15.27 GiB memory and 21.503311 seconds",
        "(EngineCore pid=4180) INFO 11-30 00:01:36 [gpu_worker.py:1] Available KV cache memory: 0.35 GiB",
        "(EngineCore pid=4180) INFO 11-30 00:01:36 [kv_cache_utils.py:1] GPU KV cache size: 2,576 tokens, Maximum concurrency for 4,096 tokens per request: 0.63x",
        "(EngineCore pid=4180) INFO 11-30 00:01:40 [gpu_model_runner.py:1] Graph capturing finished in 4 secs, took 0.12 GiB",
        "(EngineCore pid=4180) INFO 11-30 00:01:40 [gpu_worker.py:1] CUDA graph pool memory: 0.12 GiB (actual), 0.13 GiB (estimated), difference: 0.01 GiB (7.7%).",
        "(APIServer pid=4101) INFO 11-30 00:01:44 [api_server.py:1] Starting vLLM server on http://127.0.0.1:8000",
        "(APIServer pid=4101) INFO:     Started server process [4101]",
        "(APIServer pid=4101) INFO:     Waiting for application startup.",
        "(APIServer pid=4101) INFO:     Application startup complete.",
    ];
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

fn bench(sim: &Simulation) -> String {
    let mut ttft: Vec<f64> = sim
        .requests
        .iter()
        .filter_map(|r| r.first_token_at)
        .map(|t| t * 1000.0)
        .collect();
    ttft.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        let rank = p * (ttft.len() - 1) as f64;
        let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
        ttft[lo] + (ttft[hi] - ttft[lo]) * (rank - lo as f64)
    };
    let tpot: Vec<f64> = sim
        .requests
        .iter()
        .filter_map(|r| Some((r.finished_at? - r.first_token_at?) * 1000.0 / (OUTPUT - 1) as f64))
        .collect();
    let duration = sim.end_s + 0.004;
    let round = |v: f64, d: i32| (v * 10f64.powi(d)).round() / 10f64.powi(d);
    let value = serde_json::json!({
        "note": "SYNTHETIC: written by `cargo xtask demo`; the field names are vllm bench serve's",
        "backend": "vllm",
        "model_id": "demo-model",
        "num_prompts": REQUESTS,
        "max_concurrency": REQUESTS,
        "duration": round(duration, 6),
        "completed": REQUESTS,
        "failed": 0,
        "total_input_tokens": REQUESTS as u64 * PROMPT,
        "total_output_tokens": REQUESTS as u64 * OUTPUT,
        "output_throughput": round((REQUESTS as u64 * OUTPUT) as f64 / duration, 3),
        "mean_ttft_ms": round(ttft.iter().sum::<f64>() / ttft.len() as f64, 3),
        "median_ttft_ms": round(pct(0.5), 3),
        "p99_ttft_ms": round(pct(0.99), 3),
        "mean_tpot_ms": round(tpot.iter().sum::<f64>() / tpot.len() as f64, 3),
    });
    let mut text = serde_json::to_string_pretty(&value).expect("plain JSON");
    text.push('\n');
    text
}

fn readme(sim: &Simulation) -> String {
    let peak = sim
        .timeline
        .iter()
        .map(|(_, s)| s.running)
        .max()
        .unwrap_or(0);
    let preemptions = sim.timeline.last().map_or(0, |(_, s)| s.preemptions);
    let retries = sim.requests.iter().filter(|r| r.admissions > 1).count();
    format!(
        "<!-- generated by `cargo xtask demo`, do not edit -->\n\
# The demo run (synthetic)\n\n\
These files are **synthetic**: `cargo xtask demo` writes them from a small deterministic\n\
simulation of a vLLM-style scheduler (paged KV blocks, admission while blocks remain,\n\
the newest running request preempted when a running one needs a block and none is\n\
free). They are not a recording of a real server; the recorded runs live outside the\n\
repository. They exist so that `inferlint report fixtures/demo` works on any machine.\n\n\
The setup: {REQUESTS} requests of {PROMPT} prompt and {OUTPUT} output tokens, all sent at once;\n\
a KV cache of {NUM_GPU_BLOCKS} blocks of {BLOCK} tokens ({USABLE_BLOCKS} usable, one held back);\n\
`--max-num-seqs {MAX_NUM_SEQS}`. What the simulation did: at most {peak} requests ran at once,\n\
{preemptions} preemptions ({retries} requests were preempted at least once), {:.2} s of load.\n\n\
| file | what |\n|---|---|\n\
| boot.log | the server's start-up lines inferlint reads |\n\
| before.snapshot.json, after.snapshot.json | /metrics before and after the load |\n\
| run.series.jsonl | running, waiting, KV use and counters every 0.25 s |\n\
| bench.json | the load tool's result, with `vllm bench serve`'s field names |\n",
        sim.end_s
    )
}

/// Every file of the demo run, by name.
pub fn files() -> Vec<(&'static str, String)> {
    let sim = simulate();
    let after_offset = LOAD_START + sim.end_s + 0.6;
    vec![
        ("README.md", readme(&sim)),
        ("boot.log", boot_log()),
        ("before.snapshot.json", snapshot(&sim, 0.0, 0.0042)),
        ("after.snapshot.json", snapshot(&sim, after_offset, 0.0051)),
        ("run.series.jsonl", series(&sim)),
        ("bench.json", bench(&sim)),
    ]
}
