//! The simulated runs of `fixtures/sim` (the first is the one `inferlint demo` writes),
//! read and checked as the command would, and a report of each.

use std::path::{Path, PathBuf};

use inferlint_core::run::{check_run, Run};
use inferlint_core::story::account::{self, Account};
use inferlint_core::story::insights::{what_limited_by, Insight};
use inferlint_core::{CheckResult, SeriesSample};
use inferlint_engines::files;
use inferlint_engines::load::{self, EngineChoice};
use inferlint_report::{usable_blocks, Report, Timeline};

/// A simulated run folder of `fixtures/sim`.
pub fn sim_folder(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sim")
        .join(name)
}

/// The folder `inferlint demo` writes, as `cargo xtask regen-fixtures` keeps it.
pub const DEMO: &str = "vllm-hybrid";

/// Every sample of the demo recording.
pub fn demo_samples() -> Vec<SeriesSample> {
    let mut samples = Vec::new();
    files::read_series(&sim_folder(DEMO).join("run.series.jsonl"), |s| {
        samples.push(*s)
    })
    .unwrap();
    samples
}

/// A checked run with its verdicts, insights and timeline.
#[derive(Debug)]
pub struct Checked {
    pub run: Run,
    pub results: Vec<CheckResult>,
    pub insights: Vec<Insight>,
    pub timeline: Option<Timeline>,
    pub made_from: Vec<String>,
}

impl Checked {
    pub fn new(run: Run, samples: &[SeriesSample]) -> Checked {
        let results = check_run(&run);
        let admitted = inferlint_core::judging::identity::admitted(&run);
        let account = account::of(&admitted, &results);
        let insights = what_limited_by(&admitted, &results, &account);
        let timeline =
            Timeline::from_samples(run.engine, usable_blocks(&results), Some(0.25), samples);
        Checked {
            run,
            results,
            insights,
            timeline,
            made_from: vec!["boot.log".into(), "run.series.jsonl".into()],
        }
    }

    /// The run's account, made afresh: a test may change the run or its results first.
    pub fn account(&self) -> Account {
        account::of(
            &inferlint_core::judging::identity::admitted(&self.run),
            &self.results,
        )
    }

    pub fn render(&self) -> String {
        inferlint_report::render(&Report {
            run: &self.run,
            results: &self.results,
            account: &self.account(),
            insights: &self.insights,
            timeline: self.timeline.as_ref(),
            series_url: Some("http://127.0.0.1:8000"),
            title: None,
            made_from: &self.made_from,
            generator: "inferlint (test)",
        })
    }
}

/// The demo run as `inferlint report inferlint-demo` reads it.
pub fn demo() -> Checked {
    sim(DEMO)
}

/// A simulated run folder of `fixtures/sim` (each engine's own formats).
pub fn sim(name: &str) -> Checked {
    folder(&sim_folder(name))
}

/// A run folder as `inferlint report DIR` reads it, through the one loader.
pub fn folder(dir: &Path) -> Checked {
    let files = load::find_run(dir).unwrap();
    let run = load::load_run(&mut EngineChoice::new(None), &files, None, None).unwrap();
    let mut samples = Vec::new();
    if let Some(series) = &files.series {
        files::read_series(series, |s| samples.push(*s)).unwrap();
    }
    Checked::new(run, &samples)
}

/// A day at 4 Hz: the demo recording repeated end to end, its counters carried on, to
/// `count` samples (as `cargo xtask bigseries` builds one from a recording).
pub fn day_of_samples(count: usize) -> Vec<SeriesSample> {
    let one = demo_samples();
    let first = one[0];
    let last = one[one.len() - 1];
    let period_s = last.t_wall - first.t_wall + 0.25;
    let mut out = Vec::with_capacity(count);
    let mut copy = 0.0;
    while out.len() < count {
        for s in &one {
            if out.len() == count {
                break;
            }
            let offset = |v: Option<f64>, end: Option<f64>| match (v, end) {
                (Some(v), Some(e)) => Some(v + copy * e),
                (v, _) => v,
            };
            out.push(SeriesSample {
                t_wall: s.t_wall + copy * period_s,
                t_mono_ns: s.t_mono_ns.map(|m| m + (copy * period_s * 1e9) as i64),
                preemptions: offset(s.preemptions, last.preemptions),
                generation_tokens: offset(s.generation_tokens, last.generation_tokens),
                prompt_tokens: offset(s.prompt_tokens, last.prompt_tokens),
                ..*s
            });
        }
        copy += 1.0;
    }
    out
}

/// The recordings folder (the test kit's rule: a missing one fails, naming it).
pub use inferlint_testkit::recorded;
