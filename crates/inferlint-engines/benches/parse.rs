//! Parsing speed of what `watch` and `xray` read over and over: a /metrics scrape every
//! half second, and the series files they write.
//!
//! Run with `cargo bench -p inferlint-engines --bench parse`. The scrape is the recorded
//! vLLM 0.28 one (`$INFERLINT_RECORDED`, else `../shared/recorded` beside the repository);
//! without the recordings a generated exposition of the same size stands in.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use inferlint_core::Sample;
use inferlint_engines::prom;

/// The recordings folder, from the environment or beside the repository.
fn recorded_folder() -> PathBuf {
    std::env::var_os("INFERLINT_RECORDED")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/recorded")
        })
}

/// The recorded vLLM scrape, or a generated exposition of about 50 KB.
fn vllm_scrape() -> (String, &'static str) {
    let path = recorded_folder().join("vllm-0.28/live/raw_metrics.prom");
    match std::fs::read_to_string(&path) {
        Ok(text) => (text, "vllm_0_28_live"),
        Err(_) => {
            eprintln!(
                "{} is not readable; benchmarking a generated exposition",
                path.display()
            );
            (generated_exposition(50_000), "generated_50kb")
        }
    }
}

/// HELP and TYPE lines and histogram samples shaped like vLLM's, up to `size` bytes.
fn generated_exposition(size: usize) -> String {
    let mut text = String::with_capacity(size + 256);
    let mut metric = 0;
    while text.len() < size {
        let name = format!("vllm:generated_metric_{metric}_seconds");
        text.push_str(&format!("# HELP {name} A generated histogram.\n"));
        text.push_str(&format!("# TYPE {name} histogram\n"));
        for (bucket, le) in ["0.01", "0.1", "1.0", "10.0", "+Inf"].iter().enumerate() {
            let sample = Sample {
                name: format!("{name}_bucket"),
                labels: vec![
                    ("engine".to_owned(), "0".to_owned()),
                    ("le".to_owned(), (*le).to_owned()),
                    ("model_name".to_owned(), "Qwen/Qwen3-8B".to_owned()),
                ],
                value: (metric * 10 + bucket) as f64,
                timestamp_ms: None,
            };
            prom::write_sample(&mut text, &sample);
        }
        metric += 1;
    }
    text
}

fn prom_benches(c: &mut Criterion) {
    let (text, label) = vllm_scrape();
    let mut group = c.benchmark_group("prom");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function(format!("parse_samples/{label}"), |b| {
        b.iter(|| prom::parse_samples(black_box(&text)))
    });
    group.bench_function(format!("parse/{label}"), |b| {
        b.iter(|| prom::parse(black_box(&text)))
    });
    group.finish();
}

/// The series pass: read a recording line by line and fold it into the statistics the
/// T8, T9 and T14 checks use, then run the checks. The input is the recording of the run
/// `inferlint demo` writes, as fixtures/sim keeps it (so the benchmark runs anywhere),
/// repeated to 100,000 samples.
fn series_benches(c: &mut Criterion) {
    use inferlint_core::judging::checks::series::SeriesStats;
    use inferlint_core::run::series_checks;
    use inferlint_engines::files;

    let demo = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sim/vllm-hybrid/run.series.jsonl");
    let text =
        std::fs::read_to_string(&demo).expect("the demo recording ships with the repository");
    let mut lines = text.lines();
    let header = lines.next().expect("a header line");
    let samples: Vec<&str> = lines.collect();
    let mut big = String::with_capacity(100_000 * 200);
    big.push_str(header);
    big.push('\n');
    for i in 0..100_000 {
        big.push_str(samples[i % samples.len()]);
        big.push('\n');
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("big.series.jsonl");
    std::fs::write(&path, &big).expect("write the benchmark series");

    let mut group = c.benchmark_group("series");
    group.throughput(Throughput::Bytes(big.len() as u64));
    group.sample_size(20);
    group.bench_function("read_and_check_100k_samples", |b| {
        b.iter(|| {
            let mut stats = SeriesStats::new();
            files::read_series(&path, |s| stats.push(s)).expect("the series reads");
            black_box(series_checks(
                inferlint_core::Engine::Vllm.descriptor(),
                &stats,
                None,
                Some(32),
                None,
            ))
        })
    });
    group.bench_function("parse_line", |b| {
        b.iter(|| {
            black_box(files::parse_series_line(black_box(
                samples[samples.len() / 2],
            )))
        })
    });
    group.finish();
}

/// The load tools' result files: the largest real fixture (inference-perf's per-request
/// report, which keeps every streamed chunk) read with its summary, and GuideLLM's report
/// grown to 4,096 request records (its per-request records copied), read whole.
fn loadtools_benches(c: &mut Criterion) {
    use inferlint_engines::loadtools;

    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/loadtools");
    let mut group = c.benchmark_group("loadtools");
    group.sample_size(20);
    let records = fixtures
        .join("inference-perf/concurrent-8/inference-perf/per_request_lifecycle_metrics.json");
    let bytes = std::fs::metadata(&records).map(|m| m.len()).unwrap_or(0);
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("inference_perf_32_requests", |b| {
        b.iter(|| loadtools::read_result(black_box(&records)).expect("the fixture reads"))
    });

    let text = std::fs::read_to_string(fixtures.join("guidellm/concurrent-8/guidellm.json"))
        .expect("the GuideLLM fixture ships with the repository");
    let mut report: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let successful = report["benchmarks"][0]["requests"]["successful"]
        .as_array()
        .cloned()
        .expect("records");
    let grown: Vec<serde_json::Value> = successful.iter().cycle().take(4096).cloned().collect();
    report["benchmarks"][0]["requests"]["successful"] = serde_json::Value::from(grown);
    let big = serde_json::to_vec(&report).expect("JSON");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("guidellm.json");
    std::fs::write(&path, &big).expect("write the benchmark report");
    group.throughput(Throughput::Bytes(big.len() as u64));
    group.bench_function("guidellm_4096_requests", |b| {
        b.iter(|| loadtools::read_result(black_box(&path)).expect("the grown report reads"))
    });
    group.finish();
}

criterion_group!(benches, prom_benches, series_benches, loadtools_benches);
criterion_main!(benches);
