//! Run folders as xray would leave them (boot.log, before/after snapshots, the series, the
//! load tool's result and its log), written from a simulated load in simulated time. No
//! network and no clock: a case and its seed decide every byte.

use inferlint_core::contract::JsonObject;
use inferlint_core::model::Snapshot;
use inferlint_core::{MetricSet, SeriesHeader};
use inferlint_engines::{files, prom, record};

use crate::bootlog::{self, BootInfo, SIMULATED_LINE};
use crate::cases;
use crate::expo::{self, MetricsState};
use crate::sched::{
    self, CapacityPolicy, EngineModel, Load, LoadRun, ModelEngine, State, StepCost,
};

/// One simulated run: the engine model, the load and what makes the files distinct.
#[derive(Debug, Clone)]
pub struct Case {
    /// The folder name under fixtures/sim.
    pub name: &'static str,
    /// The engine's scheduler model.
    pub model: EngineModel,
    /// How long a step takes.
    pub cost: StepCost,
    /// The load sent.
    pub load: Load,
    /// The seed of the recorder's jitter.
    pub seed: u64,
    /// What the boot log says besides the model.
    pub boot: BootInfo,
}

pub use crate::rng::Rng;

fn boot(model_path: &str, name: &str, port: u16, start_wall: f64) -> BootInfo {
    BootInfo {
        model_path: model_path.to_owned(),
        served_model_name: name.to_owned(),
        pid: 4101,
        port,
        start_wall,
        ready_after_s: 124.0,
        max_model_len: 16_384,
    }
}

/// 2026-12-01 10:00:00 UTC: every simulated server starts at a fixed moment.
const START_WALL: f64 = 1_796_119_200.0;

/// The simulated cases, one or more per engine.
pub fn all_cases() -> Vec<Case> {
    let (vllm, vllm_cost) = cases::vllm_live();
    let (sglang, sglang_cost) = cases::sglang_live();
    let (trt, trt_cost) = cases::trtllm_qwen3_8b();
    let (trt_mu, trt_mu_cost) = cases::trtllm_with(CapacityPolicy::MaxUtilization, 700);
    vec![
        Case {
            name: "vllm-hybrid",
            model: vllm,
            cost: vllm_cost,
            load: cases::standard_load(),
            seed: 28,
            boot: boot("/models/sim-27B-hybrid", "sim-hybrid", 8000, START_WALL),
        },
        Case {
            name: "sglang-capped",
            model: sglang,
            cost: sglang_cost,
            load: cases::standard_load(),
            seed: 5,
            boot: boot(
                "/models/sim-27B-hybrid",
                "sim-hybrid",
                30000,
                START_WALL + 3600.0,
            ),
        },
        Case {
            name: "trtllm-no-evict",
            model: trt,
            cost: trt_cost,
            load: cases::standard_load(),
            seed: 13,
            boot: boot("/models/sim-8B", "sim-8b", 8000, START_WALL + 7200.0),
        },
        Case {
            name: "trtllm-max-utilization",
            model: trt_mu,
            cost: trt_mu_cost,
            load: cases::standard_load(),
            seed: 14,
            boot: boot("/models/sim-8B", "sim-8b", 8000, START_WALL + 10_800.0),
        },
    ]
}

/// The case `inferlint demo` writes.
pub fn demo_case() -> Case {
    all_cases()
        .into_iter()
        .next()
        .expect("the vLLM case is first")
}

/// Seconds from the before snapshot to the load's start, and from its end to the after
/// snapshot.
const LEAD_S: f64 = 0.8;
const TAIL_S: f64 = 0.6;
/// From the ready line to the before snapshot.
const IDLE_AFTER_READY_S: f64 = 30.0;
const INTERVAL_S: f64 = 0.25;

struct Timing {
    before_wall: f64,
    load_wall: f64,
    after_wall: f64,
    mono_offset_ns: i64,
}

impl Timing {
    fn mono_ns(&self, wall: f64) -> i64 {
        self.mono_offset_ns + ((wall - self.before_wall) * 1e9).round() as i64
    }
}

/// The gauges and counters a server would show at simulated time `t` of the load.
fn metrics_state(case: &Case, run: &LoadRun, t: f64, histograms: bool) -> MetricsState {
    let d = case.model.engine().descriptor();
    let now = if t < 0.0 {
        State::default()
    } else {
        run.state_at(t)
    };
    // TensorRT-LLM updates its gauges only when a request completes.
    let gauges = if d.gauges_lag {
        let i = run.timeline.partition_point(|s| s.t <= t);
        run.timeline[..i]
            .iter()
            .rev()
            .find(|s| s.completed_in_step)
            .map(|s| s.gauges_at_completion())
            .unwrap_or_default()
    } else {
        now
    };
    let created = case.boot.start_wall + 61.25;
    let mut m = MetricsState::at(&case.model, &case.boot, created, now, gauges);
    if histograms {
        for r in &run.scheduler.requests {
            if r.finished_at.is_some_and(|finished| finished <= t) {
                m.observe(r);
            }
        }
    }
    m
}

fn metrics_url(case: &Case) -> String {
    let d = case.model.engine().descriptor();
    format!("http://127.0.0.1:{}{}", case.boot.port, d.metrics_path)
}

fn snapshot(case: &Case, run: &LoadRun, timing: &Timing, wall: f64, latency_s: f64) -> String {
    let engine = case.model.engine();
    let m = metrics_state(case, run, wall - timing.load_wall, true);
    let snapshot = Snapshot {
        url: metrics_url(case),
        t_wall: Some(wall),
        t_mono_ns: Some(timing.mono_ns(wall)),
        latency_s: Some(latency_s),
        text: expo::exposition(engine, &m),
        metrics: MetricSet::default(),
    };
    files::snapshot_json(&snapshot)
}

fn series(case: &Case, run: &LoadRun, timing: &Timing, rng: &mut Rng) -> String {
    let engine = case.model.engine();
    let header = SeriesHeader {
        url: Some(format!("http://127.0.0.1:{}", case.boot.port)),
        interval_s: Some(INTERVAL_S),
        engine: Some(engine),
        unknown_engine: None,
        // A simulated server reads no GPU, and its recorder says so (T21 does not apply).
        gpu: Some(inferlint_core::model::GpuSampling::None),
        pages: None,
    };
    let mut out = files::series_header_json(&header);
    out.push('\n');
    let start = timing.load_wall - 0.3;
    let mut k = 0u32;
    loop {
        // A recorder's readings land a little after their scheduled moment.
        let wall = start + f64::from(k) * INTERVAL_S + 0.0008 + 0.004 * rng.unit();
        if wall > timing.after_wall - 0.2 {
            break;
        }
        let m = metrics_state(case, run, wall - timing.load_wall, false);
        let text = expo::exposition(engine, &m);
        let metrics = prom::parse(&text).expect("the simulated exposition parses");
        let sample = record::sample_from_metrics(
            engine.descriptor(),
            &metrics,
            wall,
            Some(timing.mono_ns(wall)),
        );
        out.push_str(&files::series_sample_json(engine, &sample));
        out.push('\n');
        k += 1;
    }
    out
}

pub(crate) fn round(v: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (v * f).round() / f
}

/// numpy's default (linear) percentile.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

pub(crate) fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// TTFT and TPOT as `vllm bench serve` sums them up: mean, median and p99, in
/// milliseconds rounded to six places. The simulated run and the load generator both write
/// these fields.
pub(crate) struct LatencySummary {
    pub mean_ttft_ms: f64,
    pub median_ttft_ms: f64,
    pub p99_ttft_ms: f64,
    pub mean_tpot_ms: f64,
    pub median_tpot_ms: f64,
    pub p99_tpot_ms: f64,
}

impl LatencySummary {
    /// `ttft_ms` and `tpot_ms` sorted ascending.
    pub(crate) fn of(ttft_ms: &[f64], tpot_ms: &[f64]) -> LatencySummary {
        LatencySummary {
            mean_ttft_ms: round(mean(ttft_ms), 6),
            median_ttft_ms: round(percentile(ttft_ms, 50.0), 6),
            p99_ttft_ms: round(percentile(ttft_ms, 99.0), 6),
            mean_tpot_ms: round(mean(tpot_ms), 6),
            median_tpot_ms: round(percentile(tpot_ms, 50.0), 6),
            p99_tpot_ms: round(percentile(tpot_ms, 99.0), 6),
        }
    }
}

/// What the load tool measured, in `vllm bench serve`'s field names.
fn bench(case: &Case, run: &LoadRun, timing: &Timing) -> (String, String) {
    let requests: Vec<&sched::Request> = run
        .timed
        .iter()
        .map(|&i| &run.scheduler.requests[i])
        .collect();
    let done: Vec<&&sched::Request> = requests
        .iter()
        .filter(|r| r.finished_at.is_some())
        .collect();
    let completed = done.len();
    let failed = requests.len() - completed;
    let end = done
        .iter()
        .filter_map(|r| r.finished_at)
        .fold(run.start_s, f64::max);
    let duration = end - run.start_s;
    let input: u64 = done.iter().map(|r| r.prompt).sum();
    let output: u64 = done.iter().map(|r| r.output).sum();
    let mut ttft: Vec<f64> = done
        .iter()
        .filter_map(|r| Some((r.first_token_at? - r.arrived_at) * 1000.0))
        .collect();
    ttft.sort_by(f64::total_cmp);
    let mut tpot: Vec<f64> = done
        .iter()
        .filter_map(|r| {
            Some((r.finished_at? - r.first_token_at?) * 1000.0 / (r.output.max(2) - 1) as f64)
        })
        .collect();
    tpot.sort_by(f64::total_cmp);
    let latencies: Vec<f64> = done
        .iter()
        .filter_map(|r| Some(round(r.finished_at? - r.arrived_at, 6)))
        .collect();
    let model = &case.boot.model_path;
    let summary = LatencySummary::of(&ttft, &tpot);
    // `vllm bench serve` dates its result when the benchmark has returned, in the
    // client's local time (`%Y%m%d-%H%M%S`); the simulated client's zone is UTC.
    let (y, mo, d, h, mi, sec) =
        inferlint_core::fmt::utc_parts((timing.load_wall + end).floor() as i64);
    let date = format!("{y:04}{mo:02}{d:02}-{h:02}{mi:02}{sec:02}");
    let value = JsonObject::from([
        ("note", serde_json::json!("simulated by inferlint-sim: not a real benchmark; the field names are vllm bench serve's")),
        ("date", serde_json::json!(date)),
        ("endpoint_type", serde_json::json!("openai")),
        ("backend", serde_json::json!("openai")),
        ("label", serde_json::json!(null)),
        ("model_id", serde_json::json!(model)),
        ("tokenizer_id", serde_json::json!(model)),
        ("num_prompts", serde_json::json!(case.load.requests)),
        ("request_rate", serde_json::json!("inf")),
        ("burstiness", serde_json::json!(1.0)),
        ("max_concurrency", serde_json::json!(case.load.concurrency)),
        ("duration", serde_json::json!(round(duration, 6))),
        ("completed", serde_json::json!(completed)),
        ("failed", serde_json::json!(failed)),
        ("total_input_tokens", serde_json::json!(input)),
        ("total_output_tokens", serde_json::json!(output)),
        ("request_throughput", serde_json::json!(round(completed as f64 / duration, 6))),
        ("request_goodput", serde_json::json!(null)),
        ("output_throughput", serde_json::json!(round(output as f64 / duration, 6))),
        ("total_token_throughput", serde_json::json!(round((input + output) as f64 / duration, 6))),
        ("latencies", serde_json::json!(latencies)),
        ("mean_ttft_ms", serde_json::json!(summary.mean_ttft_ms)),
        ("median_ttft_ms", serde_json::json!(summary.median_ttft_ms)),
        ("p99_ttft_ms", serde_json::json!(summary.p99_ttft_ms)),
        ("mean_tpot_ms", serde_json::json!(summary.mean_tpot_ms)),
        ("median_tpot_ms", serde_json::json!(summary.median_tpot_ms)),
        ("p99_tpot_ms", serde_json::json!(summary.p99_tpot_ms)),
    ]);
    let mut json = serde_json::to_string_pretty(&value).expect("plain JSON");
    json.push('\n');
    let log = format!(
        "{SIMULATED_LINE}\n\
Namespace(backend='openai', host='127.0.0.1', port={port}, endpoint='/v1/completions', dataset_name='random', max_concurrency={conc}, model='{model}', num_prompts={n}, request_rate=inf, ignore_eos=True, random_input_len={prompt}, random_output_len={out}, save_result=True, result_filename='bench.json')\n\
Starting initial single prompt test run...\n\
Initial test run completed. Starting main benchmark run...\n\
Traffic request rate: inf\n\
Maximum request concurrency: {conc}\n\
============ Serving Benchmark Result ============\n\
Successful requests:                     {completed:<10}\n\
Failed requests:                         {failed:<10}\n\
Benchmark duration (s):                  {duration:<10.2}\n\
Total input tokens:                      {input:<10}\n\
Total generated tokens:                  {output:<10}\n\
Output token throughput (tok/s):         {tput:<10.2}\n\
Mean TTFT (ms):                          {mttft:<10.2}\n\
==================================================\n",
        port = case.boot.port,
        conc = case.load.concurrency,
        n = case.load.requests,
        prompt = case.load.prompt,
        out = case.load.output,
        tput = output as f64 / duration,
        mttft = mean(&ttft),
    );
    (json, log)
}

/// Every file of a case's run folder, by name, in a fixed order.
pub fn run_folder(case: &Case) -> Vec<(&'static str, String)> {
    let run = sched::run_load(case.model.clone(), case.cost, case.load);
    let mut rng = Rng::new(case.seed);
    let before_wall = case.boot.ready_wall() + IDLE_AFTER_READY_S + rng.unit();
    let timing = Timing {
        before_wall,
        load_wall: before_wall + LEAD_S,
        after_wall: before_wall + LEAD_S + run.end_s + TAIL_S,
        mono_offset_ns: 200_000_000_000 + (rng.unit() * 1e11) as i64,
    };
    let mut lines = bootlog::boot_lines(&case.model, &case.boot);
    lines.extend(bootlog::serving_lines(
        &case.model,
        &case.boot,
        &run.scheduler.events,
        timing.load_wall,
    ));
    // xray stops the server after its after snapshot: the log ends with the shutdown.
    lines.extend(bootlog::shutdown_lines(
        &case.model,
        &case.boot,
        timing.after_wall + 1.0,
    ));
    let mut log = format!("{SIMULATED_LINE}\n");
    for (_, line) in &lines {
        log.push_str(line);
        log.push('\n');
    }
    let before = snapshot(
        case,
        &run,
        &timing,
        timing.before_wall,
        0.003 + 0.003 * rng.unit(),
    );
    let after = snapshot(
        case,
        &run,
        &timing,
        timing.after_wall,
        0.003 + 0.003 * rng.unit(),
    );
    let series = series(case, &run, &timing, &mut rng);
    let (bench, load_log) = bench(case, &run, &timing);
    vec![
        ("boot.log", log),
        ("before.snapshot.json", before),
        ("after.snapshot.json", after),
        ("run.series.jsonl", series),
        ("bench.json", bench),
        ("load.log", load_log),
    ]
}
