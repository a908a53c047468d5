//! What judging the mid-run tripwires costs the recorder: a sample folded in (every
//! sample: the statistics and a copy of the scrape's parsed metrics) and a judgement (about
//! once a second: T1, T8, T9, T14, T16, T17, T21 and the limit now). The sampler's schedule
//! leaves the rest of each interval free; these must stay far below the shortest one
//! (50 ms).
//!
//! Run with `cargo bench -p inferlint-live --bench verdicts`. The samples and the scrape are
//! the recorded vLLM 0.28 xray run's (`$INFERLINT_RECORDED`, else `../shared/recorded`
//! beside the repository); without the recordings the benchmark says so and stops.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use inferlint_core::model::{SeriesSample, Snapshot};
use inferlint_core::Engine;
use inferlint_engines::files;
use inferlint_live::verdicts::LiveVerdicts;

fn recorded_folder() -> PathBuf {
    std::env::var_os("INFERLINT_RECORDED")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/recorded")
        })
}

/// The run's samples and its after scrape, or `None` without the recordings.
fn recorded_run() -> Option<(Vec<SeriesSample>, Snapshot)> {
    let dir = recorded_folder().join("vllm-0.28/xray");
    let mut samples = Vec::new();
    files::read_series(&dir.join("run.series.jsonl"), |s| samples.push(*s)).ok()?;
    let scrape = files::read_snapshot(&dir.join("after.snapshot.json")).ok()?;
    Some((samples, scrape))
}

fn bench(c: &mut Criterion) {
    let Some((samples, scrape)) = recorded_run() else {
        eprintln!(
            "{} is not readable: no benchmark",
            recorded_folder().display()
        );
        return;
    };
    let mut group = c.benchmark_group("live_verdicts");
    // One whole recording (402 samples at 0.25 s, judged about 100 times), per sample.
    group.bench_function("fold_and_judge_per_sample", |b| {
        b.iter_custom(|iterations| {
            let start = std::time::Instant::now();
            for _ in 0..iterations {
                let mut live = LiveVerdicts::new(Engine::Vllm, Some(32), None, false);
                for s in &samples {
                    black_box(live.push(s, &scrape));
                }
            }
            start.elapsed() / samples.len() as u32
        });
    });
    // One judgement with the whole recording folded in.
    let mut live = LiveVerdicts::new(Engine::Vllm, Some(32), None, false);
    for s in &samples {
        live.push(s, &scrape);
    }
    live.last_scrape(&scrape);
    group.bench_function("judge_once", |b| b.iter(|| black_box(live.finish())));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
