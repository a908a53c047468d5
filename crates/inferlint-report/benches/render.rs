//! Writing a day-long run's report: folding 345,600 samples (a day at 4 Hz) into the
//! timeline, and rendering the page from it.
//!
//! Run with `cargo bench -p inferlint-report --bench render`. The day is the recording of
//! the run `inferlint demo` writes (`fixtures/sim/vllm-hybrid`) repeated end to end with
//! its counters carried on, the way `cargo xtask bigseries` builds the command-line
//! benchmark's file. The whole command on
//! such a file is measured as `docs/report.md` says (`bench/report.sh`).

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use inferlint_core::engine::VLLM;
use inferlint_core::judging::checks::series::SeriesStats;
use inferlint_core::model::SampleFold;
use inferlint_core::run::check_run;
use inferlint_core::SeriesSample;
use inferlint_engines::files;
use inferlint_engines::load::{self, EngineChoice};
use inferlint_report::{Report, Timeline, TimelineBuilder, TimelinePass, TimelineSetup};

const DAY: usize = 345_600;

fn demo_folder() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/sim/vllm-hybrid"
    ))
}

fn day_of_samples() -> Vec<SeriesSample> {
    let mut one = Vec::new();
    let path = demo_folder().join("run.series.jsonl");
    if let Err(e) = files::read_series(&path, |s| one.push(*s)) {
        panic!("cannot read {}: {e}", path.display());
    }
    let (first, last) = (one[0], one[one.len() - 1]);
    let period_s = last.t_wall - first.t_wall + 0.25;
    let carry = |v: Option<f64>, end: Option<f64>, copy: f64| match (v, end) {
        (Some(v), Some(e)) => Some(v + copy * e),
        (v, _) => v,
    };
    (0..DAY)
        .map(|i| {
            let (copy, s) = ((i / one.len()) as f64, one[i % one.len()]);
            SeriesSample {
                t_wall: s.t_wall + copy * period_s,
                t_mono_ns: s.t_mono_ns.map(|m| m + (copy * period_s * 1e9) as i64),
                preemptions: carry(s.preemptions, last.preemptions, copy),
                generation_tokens: carry(s.generation_tokens, last.generation_tokens, copy),
                prompt_tokens: carry(s.prompt_tokens, last.prompt_tokens, copy),
                ..s
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let samples = day_of_samples();
    let mut stats = SeriesStats::new();
    for s in &samples {
        stats.push(s);
    }
    // The demo's folder as `report DIR` loads it, with the day's recording in place of
    // its own.
    let files = load::find_run(demo_folder()).unwrap_or_else(|e| panic!("{e}"));
    let mut run = load::load_run(&mut EngineChoice::new(None), &files, None, None)
        .unwrap_or_else(|e| panic!("{e}"));
    run.series = Some(stats.clone());
    let results = check_run(&run);
    let admitted = inferlint_core::judging::identity::admitted(&run);
    let account = inferlint_core::story::account::of(&admitted, &results);
    let insights = inferlint_core::story::insights::what_limited_by(&admitted, &results, &account);
    let usable = inferlint_report::usable_blocks(&results);

    let mut group = c.benchmark_group("day_at_4hz");
    group.throughput(Throughput::Elements(DAY as u64));
    group.bench_function("fold_timeline", |b| {
        b.iter(|| {
            let setup = TimelineSetup::new(&stats, &VLLM, usable, Some(0.25));
            let mut builder = TimelineBuilder::new(setup.unwrap_or_else(|| unreachable!()));
            for s in &samples {
                builder.push(black_box(s));
            }
            builder.finish()
        })
    });
    // The same fold as the checks' pass makes it, in two stretches joined (a 2-core
    // machine's threads), with the fit in the cache folded with and without the block
    // count.
    let (first, last) = (samples[0], samples[samples.len() - 1]);
    let empty = TimelinePass::new(&first, &last, run.after.as_ref())
        .unwrap_or_else(|| unreachable!("the demo's recording has a span"));
    group.bench_function("fold_timeline_pass", |b| {
        b.iter(|| {
            let (left, right) = samples.split_at(samples.len() / 2);
            let half = |part: &[SeriesSample]| {
                let mut pass = empty.clone();
                for s in part {
                    pass.push(black_box(s));
                }
                pass
            };
            half(left).merge(half(right)).finish(&stats, &VLLM, usable)
        })
    });
    let timeline = Timeline::from_samples(&VLLM, usable, Some(0.25), &samples);
    let made_from = vec!["boot.log".to_owned(), "run.series.jsonl".to_owned()];
    group.bench_function("render_page", |b| {
        b.iter(|| {
            inferlint_report::render(black_box(&Report {
                run: &run,
                results: &results,
                account: &account,
                insights: &insights,
                timeline: timeline.as_ref(),
                series_url: None,
                title: None,
                made_from: &made_from,
                generator: "inferlint (bench)",
            }))
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
