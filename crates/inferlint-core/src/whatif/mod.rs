//! What a change would have done: the run's own load replayed through a scheduler model
//! of its server, set up as the run was, then as changed.
//!
//! [`baseline`] reads the server's setup ([`setup`]: its pool, block size, running limit
//! and context limit, each with where it was read), the load ([`load`]: each request's
//! send time and served lengths from the load tool's records, and whether the tool ran a
//! closed loop, a rate or a limit), and fits the per-step cost on the run's own requests
//! ([`inferlint_sched::fit`]). It then replays the run as it was set up and sets the
//! replay's figures beside the measured ones: that error is the band every prediction
//! carries. [`Baseline::predict`] applies changes ([`change`]) and replays again.
//!
//! It abstains, with the reason, where the model cannot speak for the server: no
//! per-request records, a pool or running limit the files do not state, a hybrid model,
//! speculative decoding, several data-parallel schedulers, a restart between the
//! readings.

pub mod change;
pub mod load;
pub mod setup;

use inferlint_sched::fit::{fit_step_cost, Fit, MIN_REQUESTS};
use inferlint_sched::model::EngineModel;
use inferlint_sched::replay::{replay, Arrivals, JobLife, Workload};
use inferlint_sched::stats::Summary;
use serde::Serialize;

pub use change::{Change, Knob};
pub use setup::Setup;

use crate::checks::counters::counter_summary;
use crate::engine::EngineDescriptor;
use crate::fmt;
use crate::run::model::Run;

/// The model's error on the run as it ran, each figure as `model / measured - 1`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Errors {
    /// Output tokens per second.
    pub output_tok_s: Option<f64>,
    /// Median time to first token.
    pub ttft_p50: Option<f64>,
    /// 99th percentile of the time to first token.
    pub ttft_p99: Option<f64>,
    /// Median time per output token.
    pub tpot_p50: Option<f64>,
    /// 99th percentile of the time per output token.
    pub tpot_p99: Option<f64>,
}

impl Errors {
    fn between(model: &Summary, measured: &Summary) -> Errors {
        let rel = |m: Option<f64>, x: Option<f64>| {
            let (m, x) = (m?, x?);
            (x > 0.0).then(|| m / x - 1.0)
        };
        Errors {
            output_tok_s: rel(model.output_tok_s, measured.output_tok_s),
            ttft_p50: rel(model.ttft_p50_s, measured.ttft_p50_s),
            ttft_p99: rel(model.ttft_p99_s, measured.ttft_p99_s),
            tpot_p50: rel(model.tpot_p50_s, measured.tpot_p50_s),
            tpot_p99: rel(model.tpot_p99_s, measured.tpot_p99_s),
        }
    }
}

/// The run as the model holds it, ready to predict from.
#[derive(Debug, Clone, Serialize)]
pub struct Baseline {
    /// The engine's name.
    pub engine: &'static str,
    /// The load tool's name.
    pub tool: &'static str,
    /// The server's setup, as read.
    pub setup: Setup,
    /// The setup in words.
    pub setup_words: String,
    /// How the tool sent the requests.
    pub arrivals: Arrivals,
    /// Requests replayed.
    pub requests: usize,
    /// Records the replay leaves out, with why.
    pub left_out: Vec<String>,
    /// The per-step cost fitted on the run.
    pub fit: Fit,
    /// What the fit was made from.
    pub fit_from: FitFrom,
    /// Seconds from the client's send to the scheduler, fitted on the run's TTFTs.
    pub front_s: f64,
    /// What the run measured: the load tool's records, the server's counters and series.
    pub measured: Summary,
    /// The model's replay of the run as it was set up.
    pub as_run: Summary,
    /// The model's error on the run as it ran.
    pub error: Errors,
    /// The share of prompt tokens the prefix cache served in the run, replayed as cached.
    pub prefix_hit_share: Option<f64>,
    #[serde(skip)]
    workload: Workload,
    #[serde(skip)]
    rate: Option<f64>,
}

/// What the replay predicts for a set of changes.
#[derive(Debug, Clone, Serialize)]
pub struct Prediction {
    /// The changes, as given.
    pub changes: Vec<Change>,
    /// What each did to the model, in words.
    pub applied: Vec<String>,
    /// The changed setup in words.
    pub setup_words: String,
    /// The replay's figures.
    pub predicted: Summary,
}

/// What the per-step cost was fitted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FitFrom {
    /// The server's recording: its generation-token counter against its running gauge,
    /// between readings.
    ServerSeries,
    /// The load tool's records: each request's time per token after the first.
    Requests,
}

/// The run as a model to predict from, or why the model cannot speak for it.
pub fn baseline(run: &Run) -> Result<Baseline, String> {
    if let Some(why) = crate::facts::tuning_withheld(run, &[]) {
        return Err(format!("{why}: the numbers describe no one setup"));
    }
    let (_, account) = run
        .bench
        .as_ref()
        .ok_or("no load tool result file: the replay sends the run's own requests")?;
    let setup = setup::read(run)?;
    let mut load = load::read(account)?;
    load.workload.max_model_len = setup.max_model_len;
    let prefix_hit_share = prefix_hit_share(run);
    if let Some(share) = prefix_hit_share.filter(|s| *s > 0.0) {
        for job in &mut load.workload.jobs {
            job.cached = (job.prompt as f64 * share).floor() as u64;
        }
    }
    let mut measured = Summary::of_lives(&load.lives);
    measured.evictions = measured_evictions(run);
    measured.peak_running = run.series.as_ref().and_then(|s| s.peak_running);
    // Two fits where the run allows them: the server's own stepping (its token counter
    // against its running gauge, between the recording's readings), and each request's
    // time per token as the load tool timed it (which holds the front end's and the
    // network's delays too). The one whose replay of the run as it ran comes closer to
    // what the run measured (output rate and median time per token) is kept.
    let stalls = measured.evictions != Some(0);
    let candidates = [
        run.series
            .as_ref()
            .and_then(|s| s.stepping.fit())
            .map(|f| (f, FitFrom::ServerSeries)),
        fit_step_cost(&load::decodes(&load.lives), stalls).map(|f| (f, FitFrom::Requests)),
    ];
    let mut best: Option<(f64, Fit, FitFrom, f64, Summary)> = None;
    for (fit, from) in candidates.into_iter().flatten() {
        let mut workload = load.workload.clone();
        workload.front_s = fit_front(&setup.model, &fit, &workload, &load.lives);
        let as_run = Summary::of_replay(&replay(setup.model.clone(), fit.cost, &workload));
        let e = Errors::between(&as_run, &measured);
        let score = e.output_tok_s.map_or(1.0, f64::abs) + e.tpot_p50.map_or(1.0, f64::abs);
        if best.as_ref().is_none_or(|(s, ..)| score < *s) {
            best = Some((score, fit, from, workload.front_s, as_run));
        }
    }
    let (_, fit, fit_from, front_s, as_run) = best.ok_or_else(|| {
        format!(
            "fewer than {MIN_REQUESTS} completed requests of two tokens or more, and no recording of the server's stepping: nothing to fit the per-step cost on"
        )
    })?;
    load.workload.front_s = front_s;
    let error = Errors::between(&as_run, &measured);
    Ok(Baseline {
        engine: run.engine.name,
        tool: account.tool.name(),
        setup_words: Setup::describe(&setup.model),
        setup,
        arrivals: load.workload.arrivals,
        requests: load.workload.jobs.len(),
        left_out: load.left_out,
        fit,
        fit_from,
        front_s: load.workload.front_s,
        measured,
        as_run,
        error,
        prefix_hit_share,
        workload: load.workload,
        rate: load.rate,
    })
}

/// Seconds from send to the scheduler (the front end's share of each TTFT): the median
/// of what the measured TTFTs hold beyond the replay's, found in two rounds since the
/// delay itself moves the replay's queue.
fn fit_front(model: &EngineModel, fit: &Fit, workload: &Workload, lives: &[JobLife]) -> f64 {
    let mut w = workload.clone();
    w.front_s = 0.0;
    for _ in 0..2 {
        let r = replay(model.clone(), fit.cost, &w);
        let mut extra: Vec<f64> = r
            .jobs
            .iter()
            .zip(lives)
            .filter(|(m, x)| m.completed() && x.completed())
            .filter_map(|(m, x)| {
                Some((x.first_token_s? - x.sent_s) - (m.first_token_s? - m.sent_s))
            })
            .collect();
        if extra.is_empty() {
            break;
        }
        extra.sort_by(f64::total_cmp);
        w.front_s = (w.front_s + extra[extra.len() / 2]).max(0.0);
    }
    w.front_s
}

/// Preemptions (retractions) the server's counter moved by over the run.
fn measured_evictions(run: &Run) -> Option<u64> {
    let (before, after) = (run.before.as_ref()?, run.after.as_ref()?);
    let s = counter_summary(run.engine, before, after)?;
    s.preemptions
        .filter(|p| p.is_finite() && *p >= 0.0)
        .map(|p| p.round() as u64)
}

/// The share of prompt tokens the prefix cache served between the snapshots.
fn prefix_hit_share(run: &Run) -> Option<f64> {
    let counters = run.engine.prefix_cache?;
    let (before, after) = (run.before.as_ref()?, run.after.as_ref()?);
    let hits = counters.hits_in(&after.metrics)? - counters.hits_in(&before.metrics)?;
    let queries = counters.queries_in(&after.metrics)? - counters.queries_in(&before.metrics)?;
    (queries > 0.0 && hits >= 0.0 && hits <= queries).then(|| hits / queries)
}

impl Baseline {
    /// The replay with `changes` applied, or why it cannot be made.
    pub fn predict(&self, changes: &[Change]) -> Result<Prediction, String> {
        let mut setup = self.setup.clone();
        let mut workload = self.workload.clone();
        let mut applied = Vec::new();
        for change in changes {
            match setup::apply(&setup, change)? {
                Some((next, words)) => {
                    setup = next;
                    applied.push(words);
                }
                None => applied.push(self.change_load(&mut workload, change)?),
            }
        }
        workload.max_model_len = setup.max_model_len;
        self.replay_setup(&setup.model, &workload, changes.to_vec(), applied)
    }

    /// The replay with the KV cache holding `usable` units (blocks, or tokens for a token
    /// pool) and nothing else changed: what more (or less) memory for the cache would do,
    /// whichever setting gives it.
    pub fn predict_pool(&self, usable: u64) -> Result<Prediction, String> {
        let mut model = self.setup.model.clone();
        let was = model.usable_units();
        match &mut model {
            EngineModel::Vllm(c) => c.num_gpu_blocks = usable + (c.num_gpu_blocks - was),
            EngineModel::Sglang(c) => c.max_total_num_tokens = usable,
            EngineModel::Trtllm(c) => c.blocks = usable,
        }
        self.replay_setup(
            &model,
            &self.workload,
            Vec::new(),
            vec![format!("usable KV cache {was} -> {usable}")],
        )
    }

    /// The running limit the model holds.
    pub fn running_limit(&self) -> usize {
        self.setup.model.running_cap()
    }

    /// The pool the model holds, in its units.
    pub fn usable_units(&self) -> u64 {
        self.setup.model.usable_units()
    }

    fn replay_setup(
        &self,
        model: &EngineModel,
        workload: &Workload,
        changes: Vec<Change>,
        applied: Vec<String>,
    ) -> Result<Prediction, String> {
        if model.usable_units() == 0 {
            return Err("the change leaves the KV cache no usable block".to_owned());
        }
        let predicted = Summary::of_replay(&replay(model.clone(), self.fit.cost, workload));
        Ok(Prediction {
            changes,
            applied,
            setup_words: Setup::describe(model),
            predicted,
        })
    }

    /// A prediction in a few words, each figure with its band: `no preemptions, at most 3
    /// running, 1258 output tok/s ±3%, TTFT p50 1.06 s ±8%`.
    pub fn words(&self, p: &Prediction, engine: &EngineDescriptor) -> String {
        let s = &p.predicted;
        let band = |e: Option<f64>| e.map_or(String::new(), |e| format!(" ±{:.0}%", e.abs() * 100.0));
        let mut parts = Vec::new();
        if let Some(n) = s.evictions {
            parts.push(if n == 0 {
                format!("no {}", engine.preemption_words(2.0))
            } else {
                format!("{n} {}", engine.preemption_words(n as f64))
            });
        }
        if let Some(peak) = s.peak_running {
            parts.push(format!("at most {} running", fmt::g(peak)));
        }
        if s.refused > 0 {
            parts.push(format!("{} refused", s.refused));
        }
        if let Some(rate) = s.output_tok_s {
            parts.push(format!("{} output tok/s{}", fmt::g(rate.round()), band(self.error.output_tok_s)));
        }
        if let Some(t) = s.ttft_p50_s {
            parts.push(format!("TTFT p50 {}{}", seconds(t), band(self.error.ttft_p50)));
        }
        parts.join(", ")
    }
}

/// `1.06 s`, `43.4 ms`.
pub fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else {
        format!("{:.1} ms", s * 1000.0)
    }
}

impl Baseline {

    /// The model of the server as the run set it up.
    pub fn model(&self) -> &EngineModel {
        &self.setup.model
    }

    fn change_load(&self, workload: &mut Workload, change: &Change) -> Result<String, String> {
        match change.knob {
            Knob::Concurrency => {
                let n = change.count()?.max(1) as usize;
                let (was, next) = match workload.arrivals {
                    Arrivals::Closed { concurrency } => {
                        (concurrency.to_string(), Arrivals::Closed { concurrency: n })
                    }
                    Arrivals::Timed { max_outstanding } => (
                        max_outstanding.map_or("no limit".to_owned(), |m| m.to_string()),
                        Arrivals::Timed {
                            max_outstanding: Some(n),
                        },
                    ),
                };
                workload.arrivals = next;
                Ok(format!("concurrency {was} -> {n}"))
            }
            Knob::Rate => {
                let rate = change.number()?;
                let limit = match workload.arrivals {
                    Arrivals::Closed { concurrency } => Some(concurrency),
                    Arrivals::Timed { max_outstanding } => max_outstanding,
                };
                let words = if rate.is_infinite() {
                    for job in &mut workload.jobs {
                        job.due_s = 0.0;
                    }
                    "every request sent at once".to_owned()
                } else if let Some(was) = self.rate {
                    for job in &mut workload.jobs {
                        job.due_s *= was / rate;
                    }
                    format!("rate {was} -> {rate} requests/s, the run's own arrival pattern rescaled")
                } else {
                    poisson(workload, rate);
                    format!("rate {rate} requests/s, Poisson arrivals (seed 0) where the run had a closed loop")
                };
                workload.arrivals = Arrivals::Timed {
                    max_outstanding: limit,
                };
                Ok(words)
            }
            _ => Err(format!("{} is not a load setting", change.name)),
        }
    }
}

/// Poisson arrivals at `rate` per second, from a fixed seed (SplitMix64), in the jobs'
/// order: what `vllm bench serve --request-rate` draws, made reproducible.
fn poisson(workload: &mut Workload, rate: f64) {
    let mut state: u64 = 0;
    let mut t = 0.0;
    for job in &mut workload.jobs {
        job.due_s = t;
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // A uniform in (0, 1]: never 0, whose logarithm is infinite.
        let u = ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        t += -u.ln() / rate;
    }
}

/// `model / measured - 1` as `+5%`, for the band a figure carries.
pub fn signed_percent(error: f64) -> String {
    format!("{:+.0}%", error * 100.0)
}
