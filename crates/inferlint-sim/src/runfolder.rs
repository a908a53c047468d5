//! Run folders as xray would leave them (boot.log, before/after snapshots, the series, the
//! load tool's result and its log), written from a simulated load in simulated time. No
//! network and no clock: a case and its seed decide every byte.

use inferlint_core::model::Snapshot;
use inferlint_core::story::contract::JsonObject;
use inferlint_core::{MetricSet, SeriesHeader};
use inferlint_engines::{files, prom, record};

use inferlint_core::model::traces::ClockAnchor;

use crate::bootlog::{self, BootInfo, SIMULATED_LINE};
use crate::cases;
use crate::expo::{self, MetricsState};
use crate::kvblocks::{KvBlocks, Tally};
use crate::otlp::RequestRecord;
use crate::runtraces::{self, KvRun, SpansRun};
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
    /// The load kept each request's record (`vllm bench serve --save-detailed`): its
    /// per-request lists and its request ids are in the result file and its log.
    pub save_detailed: bool,
    /// xray recorded the server's spans and KV events beside it (`--otlp --kv-events`:
    /// `spans.otlp.jsonl`, `kv-events.jsonl`). vLLM's cases only: only vLLM's spans are
    /// read.
    pub traces: bool,
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
            // The demo: the whole record, so that the report draws each request's phases
            // and the KV cache, and T23 to T26 are judged.
            save_detailed: true,
            traces: true,
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
            save_detailed: false,
            traces: false,
        },
        Case {
            name: "trtllm-no-evict",
            model: trt,
            cost: trt_cost,
            load: cases::standard_load(),
            seed: 13,
            boot: boot("/models/sim-8B", "sim-8b", 8000, START_WALL + 7200.0),
            save_detailed: false,
            traces: false,
        },
        Case {
            name: "trtllm-max-utilization",
            model: trt_mu,
            cost: trt_mu_cost,
            load: cases::standard_load(),
            seed: 14,
            boot: boot("/models/sim-8B", "sim-8b", 8000, START_WALL + 10_800.0),
            save_detailed: false,
            traces: false,
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

/// The percentile every printed percentile uses (core's, numpy's linear one); 0 of none.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    inferlint_core::story::fmt::percentile(sorted, p).unwrap_or(0.0)
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

/// One timed request as the load tool saw it, in seconds of the load's clock (from its
/// start, as the scheduler's): sent a little before the server stamped its arrival, each
/// token received a little after the step that made it.
struct ClientRow {
    sent: f64,
    /// Each chunk with text (one token a chunk).
    chunks: Vec<f64>,
    /// When the answer ended, if it did.
    end: Option<f64>,
    prompt: u64,
    output: u64,
}

/// The timed requests as the load tool saw them, in sending order. `token_times` holds
/// each request's tokens' step ends. With `transport`, each way to and from the server
/// takes a fraction of a millisecond (drawn from `rng`); without, none.
fn client_rows(
    run: &LoadRun,
    token_times: &[Vec<f64>],
    transport: bool,
    rng: &mut Rng,
) -> Vec<ClientRow> {
    run.timed
        .iter()
        .map(|&i| {
            let r = &run.scheduler.requests[i];
            let (up, down) = if transport {
                (0.0004 + 0.0004 * rng.unit(), 0.0002 + 0.0002 * rng.unit())
            } else {
                (0.0, 0.0)
            };
            let chunks: Vec<f64> = token_times
                .get(i)
                .map(|times| times.iter().map(|&t| t + down).collect())
                .unwrap_or_default();
            ClientRow {
                sent: r.arrived_at - up,
                end: r.finished_at.map(|t| t + down),
                chunks,
                prompt: r.prompt,
                output: r.generated,
            }
        })
        .collect()
}

/// JSON on one line with Python's `json.dumps` separators (`", "`, `": "`), as `vllm
/// bench serve` writes its result.
fn python_json(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_json(item, out);
            }
            out.push(']');
        }
        Value::Object(members) => {
            out.push('{');
            for (i, (key, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push_str(": ");
                python_json(item, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The prefix of the simulated load's request ids, `vllm bench serve`'s shape.
fn request_id_prefix(case: &Case) -> String {
    format!("bench-{:08x}-", Rng::new(case.seed).next_u64() >> 32)
}

/// What the load tool measured, in `vllm bench serve`'s field names, and what it printed.
/// With `detailed` (`--save-detailed`), the per-request lists too, in the tool's own
/// layout (one line, Python's separators); without, a readable layout and the latencies
/// of the completed requests.
fn bench(
    case: &Case,
    run: &LoadRun,
    rows: &[ClientRow],
    timing: &Timing,
    detailed: bool,
) -> (String, String) {
    let done: Vec<&ClientRow> = rows.iter().filter(|r| r.end.is_some()).collect();
    let completed = done.len();
    let failed = rows.len() - completed;
    // The benchmark's clock starts as the load starts (with the requests' own records, a
    // moment before the first goes out, as vllm bench serve's does).
    let start = if detailed {
        rows.iter().map(|r| r.sent).fold(f64::INFINITY, f64::min) - 0.0005
    } else {
        run.start_s
    };
    let end = done.iter().filter_map(|r| r.end).fold(start, f64::max);
    let duration = end - start;
    let input: u64 = done.iter().map(|r| r.prompt).sum();
    let output: u64 = done.iter().map(|r| r.output).sum();
    let ttft_s = |r: &ClientRow| r.chunks.first().map(|f| f - r.sent);
    let mut ttft: Vec<f64> = done
        .iter()
        .filter_map(|r| Some(ttft_s(r)? * 1000.0))
        .collect();
    ttft.sort_by(f64::total_cmp);
    let mut tpot: Vec<f64> = done
        .iter()
        .filter_map(|r| Some((r.end? - r.chunks.first()?) * 1000.0 / (r.output.max(2) - 1) as f64))
        .collect();
    tpot.sort_by(f64::total_cmp);
    let model = &case.boot.model_path;
    let summary = LatencySummary::of(&ttft, &tpot);
    // `vllm bench serve` dates its result when the benchmark has returned, in the
    // client's local time (`%Y%m%d-%H%M%S`); the simulated client's zone is UTC.
    let (y, mo, d, h, mi, sec) =
        inferlint_core::model::civil::utc_parts((timing.load_wall + end).floor() as i64);
    let date = format!("{y:04}{mo:02}{d:02}-{h:02}{mi:02}{sec:02}");
    let list = |f: &dyn Fn(&ClientRow) -> serde_json::Value| -> serde_json::Value {
        serde_json::Value::Array(rows.iter().map(f).collect())
    };
    let ok = |r: &ClientRow, v: f64| {
        if r.end.is_some() {
            serde_json::json!(round(v, 6))
        } else {
            serde_json::json!(0.0)
        }
    };
    let mut value = JsonObject::from([
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
    ]);
    if detailed {
        let lists = [
            ("input_lens", list(&|r| serde_json::json!(r.prompt))),
            (
                "output_lens",
                list(&|r| serde_json::json!(if r.end.is_some() { r.output } else { 0 })),
            ),
            ("ttfts", list(&|r| ok(r, ttft_s(r).unwrap_or(0.0)))),
            (
                "itls",
                list(&|r| {
                    let gaps: Vec<f64> =
                        r.chunks.windows(2).map(|w| round(w[1] - w[0], 6)).collect();
                    if r.end.is_some() {
                        serde_json::json!(gaps)
                    } else {
                        serde_json::json!([])
                    }
                }),
            ),
            (
                "latencies",
                list(&|r| ok(r, r.end.unwrap_or(r.sent) - r.sent)),
            ),
            (
                "start_times",
                list(&|r| {
                    let wall = timing.load_wall + r.sent;
                    serde_json::json!(round(timing.mono_ns(wall) as f64 / 1e9, 9))
                }),
            ),
            (
                "queue_times",
                list(&|r| serde_json::json!(round(r.sent - start, 6))),
            ),
            (
                "errors",
                list(&|r| {
                    serde_json::json!(if r.end.is_some() {
                        ""
                    } else {
                        "the request never finished"
                    })
                }),
            ),
        ];
        for (key, v) in lists {
            value.insert(key.into(), v);
        }
    } else {
        let latencies: Vec<f64> = done
            .iter()
            .filter_map(|r| Some(round(r.end? - r.sent, 6)))
            .collect();
        value.insert("latencies".into(), serde_json::json!(latencies));
    }
    for (key, v) in [
        ("mean_ttft_ms", summary.mean_ttft_ms),
        ("median_ttft_ms", summary.median_ttft_ms),
        ("p99_ttft_ms", summary.p99_ttft_ms),
        ("mean_tpot_ms", summary.mean_tpot_ms),
        ("median_tpot_ms", summary.median_tpot_ms),
        ("p99_tpot_ms", summary.p99_tpot_ms),
    ] {
        value.insert(key.into(), serde_json::json!(v));
    }
    let json = if detailed {
        // The object's members in their order (a JSON map would sort them).
        let mut json = String::from("{");
        for (i, (key, item)) in value.iter().enumerate() {
            if i > 0 {
                json.push_str(", ");
            }
            json.push_str(&serde_json::Value::from(key.as_str()).to_string());
            json.push_str(": ");
            python_json(item, &mut json);
        }
        json.push('}');
        json
    } else {
        let mut json = serde_json::to_string_pretty(&value).expect("plain JSON");
        json.push('\n');
        json
    };
    let detail = if detailed {
        format!(
            ", save_detailed=True, result_filename='bench.json', request_id_prefix='{}')",
            request_id_prefix(case)
        )
    } else {
        ", result_filename='bench.json')".to_owned()
    };
    let log = format!(
        "{SIMULATED_LINE}\n\
Namespace(backend='openai', host='127.0.0.1', port={port}, endpoint='/v1/completions', dataset_name='random', max_concurrency={conc}, model='{model}', num_prompts={n}, request_rate=inf, ignore_eos=True, random_input_len={prompt}, random_output_len={out}, save_result=True{detail}\n\
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

/// The token at `position` of request `index` of a simulated run: every prompt its own
/// (a random dataset's), every answer its own words.
fn run_token(seed: u64, index: usize, position: u64) -> u32 {
    let mut rng = Rng::new(seed ^ ((index as u64) << 32) ^ position.wrapping_mul(0x9E37_79B9));
    1000 + (rng.next_u64() % 31_000) as u32
}

/// What the load's steps left besides the states: each request's tokens' times, and each
/// step's KV events (where the run folder holds them).
struct Observed {
    token_times: Vec<Vec<f64>>,
    kv_batches: Vec<(f64, Tally)>,
}

/// Runs the case's load, keeping what [`Observed`] holds.
fn observed_run(case: &Case) -> (LoadRun, Observed) {
    let mut kv = case.traces.then(|| KvBlocks::new(&case.model));
    let mut seen = Observed {
        token_times: Vec::new(),
        kv_batches: Vec::new(),
    };
    let run = sched::run_load_observed(case.model.clone(), case.cost, case.load, &mut |s| {
        let now = s.now();
        if seen.token_times.len() < s.requests.len() {
            seen.token_times.resize(s.requests.len(), Vec::new());
        }
        for (times, r) in seen.token_times.iter_mut().zip(&s.requests) {
            while (times.len() as u64) < r.generated {
                times.push(now);
            }
        }
        if let Some(kv) = &mut kv {
            let events = kv.step(s, &|i, p| run_token(case.seed, i, p));
            if !events.is_empty() {
                seen.kv_batches.push((now, Tally::of(&events)));
            }
        }
    });
    (run, seen)
}

/// The clocks of a run folder's recorder.
struct RecorderClocks<'a>(&'a Timing);

impl crate::runtraces::Clocks for RecorderClocks<'_> {
    fn at(&self, wall: f64) -> ClockAnchor {
        ClockAnchor {
            t_wall: wall,
            t_mono_ns: self.0.mono_ns(wall),
        }
    }
}

/// Every file of a case's run folder, by name, in a fixed order.
pub fn run_folder(case: &Case) -> Vec<(&'static str, String)> {
    let (run, observed) = observed_run(case);
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
    let stop_wall = timing.after_wall + 1.0;
    lines.extend(bootlog::shutdown_lines(&case.model, &case.boot, stop_wall));
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
    // The load tool's and the receivers' own draws, apart from the recorder's above.
    let mut client_rng = Rng::new(case.seed ^ 0x5eed_c11e);
    let rows = client_rows(
        &run,
        &observed.token_times,
        case.save_detailed,
        &mut client_rng,
    );
    let (bench, load_log) = bench(case, &run, &rows, &timing, case.save_detailed);
    let mut files = vec![
        ("boot.log", log),
        ("before.snapshot.json", before),
        ("after.snapshot.json", after),
        ("run.series.jsonl", series),
        ("bench.json", bench),
        ("load.log", load_log),
    ];
    if case.traces {
        let clocks = RecorderClocks(&timing);
        // xray starts its receivers before the server.
        let receivers_start = case.boot.start_wall - 0.4;
        let spans = spans_run(case, &run, &timing, &observed.token_times);
        let ports = (
            40_000 + (case.seed % 1000) as u16,
            41_000 + (case.seed % 1000) as u16,
        );
        files.push((
            "spans.otlp.jsonl",
            runtraces::spans_file(
                &SpansRun {
                    receiver_start: receivers_start,
                    port: ports.0 + 2000,
                    boot: (case.boot.start_wall, case.boot.ready_wall()),
                    pid: case.boot.pid,
                    requests: &spans,
                    stop: stop_wall,
                },
                &clocks,
                &mut client_rng,
            ),
        ));
        let batches: Vec<(f64, Tally)> = observed
            .kv_batches
            .iter()
            .map(|(t, tally)| (timing.load_wall + t, *tally))
            .collect();
        files.push((
            "kv-events.jsonl",
            runtraces::kv_file(
                &KvRun {
                    subscriber_start: receivers_start + 0.002,
                    ports,
                    // The engine core starts its publisher a third of the way into the boot.
                    publisher_connected: case.boot.start_wall + case.boot.ready_after_s / 3.0,
                    batches: &batches,
                    // After the after snapshot and the wait for the last spans.
                    stop: timing.after_wall + 0.3,
                },
                &clocks,
                &mut client_rng,
            ),
        ));
    }
    files
}

/// Each finished request's span record, with the wall time it finished, in the order
/// they finished: the timed ones named after the load's ids (`cmpl-PREFIX{i}-0`), the
/// test request after the server's own.
fn spans_run(
    case: &Case,
    run: &LoadRun,
    timing: &Timing,
    token_times: &[Vec<f64>],
) -> Vec<(f64, RequestRecord)> {
    let prefix = request_id_prefix(case);
    let mut out: Vec<(f64, RequestRecord)> = run
        .scheduler
        .requests
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let (scheduled, first, finished) =
                (r.first_scheduled_at?, r.first_token_at?, r.finished_at?);
            let id = match run.timed.iter().position(|&t| t == i) {
                Some(row) => format!("cmpl-{prefix}{row}-0"),
                None => format!("cmpl-{:08x}{i:024x}-0", case.boot.pid),
            };
            let wall = |t: f64| timing.load_wall + t;
            let record = RequestRecord {
                id,
                arrival: wall(r.arrived_at),
                // do_tracing runs after the step that finished the request.
                end: wall(finished) + 0.0004,
                queue_s: scheduled - r.arrived_at,
                ttft_s: first - r.arrived_at,
                prefill_s: first - scheduled,
                decode_s: finished - first,
                e2e_s: finished - r.arrived_at,
                prompt_tokens: r.prompt,
                completion_tokens: token_times.get(i).map_or(r.generated, |t| t.len() as u64),
                max_tokens: r.output,
            };
            Some((wall(finished), record))
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}
