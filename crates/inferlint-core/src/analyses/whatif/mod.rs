//! What a change would have done: the run's own load replayed through a scheduler model
//! of its server, set up as the run was, then as changed.
//!
//! [`baseline`] reads the server's setup ([`setup`]: its pool, block size, running limit
//! and context limit, each with where it was read), the load ([`load`]: each request's
//! send time and served lengths from the load tool's records, and whether the tool ran a
//! closed loop, a rate or a limit), and fits the per-step cost on the run's own requests
//! ([`inferlint_sched::fit`]). It then replays the run as it was set up and sets the
//! replay's figures beside the measured ones: that is the fit error on this run, which
//! says how well the run is described, not how far a change's prediction can be trusted.
//! [`Baseline::predict`] applies changes ([`change`]) and replays again; each predicted
//! figure carries the band [`band`] calibrated on real changed runs, out of sample, and
//! says where the change runs outside what the fit saw.
//!
//! It abstains, with the reason, where the model cannot speak for the server: no
//! per-request records, a pool or running limit the files do not state, a hybrid model,
//! speculative decoding, several data-parallel schedulers, a restart between the
//! readings.

pub mod band;
pub mod change;
pub mod load;
pub mod setup;

use inferlint_sched::fit::{fit_step_cost, Fit, MIN_REQUESTS};
use inferlint_sched::model::EngineModel;
use inferlint_sched::replay::{replay_each, Arrivals, Workload};
use inferlint_sched::stats::replay_summary;
use inferlint_sched::stats::{Figures, Summary};
use serde::Serialize;

pub use band::{Band, Envelope};
pub use change::{Change, Knob};
use load::{Measured, RunLoad};
pub use setup::Setup;

use crate::engine::EngineDescriptor;
use crate::judging::checks::counters::counter_summary;
use crate::run::model::Run;
use crate::story::fmt;

/// The model's error on the run as it ran, each figure as `model / measured - 1`: the fit
/// error on this run. It says how well the fit describes the run, not how far a change's
/// prediction can be trusted (that is [`band`]'s, calibrated on real changed runs).
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
    /// What the replay assumed where the load tool kept no per-request records.
    pub assumed: Vec<String>,
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
    /// The model's error on the run as it ran: the fit error on this run, not a band.
    pub error: Errors,
    /// The running counts the fit saw: a change that runs outside them is extrapolated.
    pub envelope: Envelope,
    /// The shortest and longest prompt the load sent, in tokens.
    pub prompt_tokens: (u64, u64),
    /// The shortest and longest output the load was served, in tokens.
    pub output_tokens: (u64, u64),
    /// The rate the load asked for, requests per second, where it had one.
    pub request_rate: Option<f64>,
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
    /// Where the change runs outside the running counts the fit saw, in words: the
    /// per-step cost there is extrapolated from the run's.
    pub extrapolated: Option<String>,
    /// How far outside the fit's running counts the change ran ([`Envelope::factor`]).
    pub extrapolation: f64,
    /// Each figure's band, calibrated on real changed runs ([`band`]); empty where withheld.
    pub bands: Vec<Band>,
    /// Why the figures carry no calibrated band, where they do not.
    pub band_withheld: Option<String>,
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
    /// The engine's own steps (`steps.jsonl`): each step's time against the requests it
    /// ran and the prompt tokens it prefilled, measured rather than inferred.
    EngineSteps,
}

/// The run as a model to predict from, or why the model cannot speak for it.
pub fn baseline(run: &Run) -> Result<Baseline, String> {
    baseline_of(run, None)
}

/// [`baseline`] of a run whose result file was read for the replay alone
/// ([`crate::model::client::Keep::ForReplay`]), its records taken out of the account by the
/// caller ([`std::mem::take`] of its `replay.rows`): they are moved in and dropped as soon
/// as the load is made from them, so that a million of them are not held beside it.
pub fn baseline_of_records(
    run: &Run,
    records: Vec<crate::model::client::ReplayRecord>,
) -> Result<Baseline, String> {
    baseline_of(run, Some(records))
}

fn baseline_of(
    run: &Run,
    records: Option<Vec<crate::model::client::ReplayRecord>>,
) -> Result<Baseline, String> {
    if let Some(why) = crate::model::facts::tuning_withheld(run, &[]) {
        return Err(format!("{why}: the numbers describe no one setup"));
    }
    let (_, account) = run
        .bench
        .as_ref()
        .ok_or("no load tool result file: the replay sends the run's own requests")?;
    let setup = setup::read(run)?;
    // Without per-request records, the load is made from the tool's settings and the
    // server's counted lengths, saying what it assumed.
    let (mut load, assumed) = if account.record_count() == 0 {
        let (mut load, assumed) = load::from_settings(account, served_lengths(run))?;
        if let Some(rate) = load.rate {
            poisson(&mut load.workload, rate);
        }
        let mut assumed = assumed;
        assumed.push(
            "the front end's delay not fitted (no request's own TTFT to tell it from the queue): 0"
                .to_owned(),
        );
        (load, assumed)
    } else {
        (load::read(account, records)?, Vec::new())
    };
    load.workload.max_model_len = setup.max_model_len;
    let prefix_hit_share = prefix_hit_share(run);
    if let Some(share) = prefix_hit_share.filter(|s| *s > 0.0) {
        for job in &mut load.workload.jobs {
            job.cached = (job.prompt as f64 * share).floor() as u64;
        }
    }
    let mut measured = if load.has_lives() {
        let mut figures = Figures::default();
        for life in load.lives() {
            figures.add(&life);
        }
        figures.summary()
    } else {
        summary_of_account(account)
    };
    measured.evictions = measured_evictions(run);
    measured.peak_running = run.series.as_ref().and_then(|s| s.peak_running);
    // Up to three fits where the run allows them: the server's own stepping (its token
    // counter against its running gauge, between the recording's readings), each
    // request's time per token as the load tool timed it (which holds the front end's
    // and the network's delays too), and the engine's own steps where the step plugin
    // recorded them (each step's model time: no front end, no scheduling between steps). The one whose replay of the run as it ran comes closer to
    // what the run measured (output rate and median time per token) is kept.
    let stalls = measured.evictions != Some(0);
    let candidates = [
        run.series
            .as_ref()
            .and_then(|s| s.step_fit())
            .map(|f| (f, FitFrom::ServerSeries)),
        fit_step_cost(&load::decodes(load.lives()), stalls).map(|f| (f, FitFrom::Requests)),
        run.steps
            .as_ref()
            .and_then(|s| s.step_fit())
            .map(|f| (f, FitFrom::EngineSteps)),
    ];
    let mut best: Option<(f64, Fit, FitFrom, f64, Summary)> = None;
    for (fit, from) in candidates.into_iter().flatten() {
        // The load is replayed in place, only its front end's delay set for each fit: a
        // million requests are not copied for each.
        let RunLoad {
            workload,
            measured: records,
            ..
        } = &mut load;
        // Without any request's own TTFT the front end's share cannot be told from the
        // queue's (a median fitted would carry a queue the replay misses into every
        // request): it is left at 0, as the assumptions say.
        workload.front_s = if records.is_empty() {
            0.0
        } else {
            fit_front(&setup.model, &fit, workload, records)
        };
        let as_run = replay_summary(setup.model.clone(), fit.cost, workload);
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
    let envelope = Envelope {
        running_low: fit.running_range.0,
        running_high: measured
            .peak_running
            .or(as_run.peak_running)
            .unwrap_or(0.0)
            .max(fit.running_range.1),
    };
    let range = |of: fn(&inferlint_sched::replay::Job) -> u64| {
        let values = load.workload.jobs.iter().map(of);
        (values.clone().min().unwrap_or(0), values.max().unwrap_or(0))
    };
    let (prompt_tokens, output_tokens) = (range(|j| j.prompt), range(|j| j.output));
    Ok(Baseline {
        engine: run.engine.name,
        tool: account.tool.name(),
        setup_words: Setup::describe(&setup.model),
        setup,
        arrivals: load.workload.arrivals,
        requests: load.workload.jobs.len(),
        left_out: load.left_out,
        assumed,
        fit,
        fit_from,
        front_s: load.workload.front_s,
        measured,
        as_run,
        error,
        envelope,
        prompt_tokens,
        output_tokens,
        request_rate: load.rate,
        prefix_hit_share,
        workload: load.workload,
        rate: load.rate,
    })
}

/// Seconds from send to the scheduler (the front end's share of each TTFT): the lower
/// quartile of what the measured TTFTs hold beyond the replay's, found in two rounds since
/// the delay itself moves the replay's queue. Only the requests the replay admitted at
/// once (within two steps of their arrival) are asked where there are any, and of those
/// the lower quartile: a request that really queued where the replay did not holds the
/// queue's time too, and an error of the queue's taken for the front end's would be added
/// to every request of a change that queues none.
fn fit_front(model: &EngineModel, fit: &Fit, w: &mut Workload, measured: &[Measured]) -> f64 {
    w.front_s = 0.0;
    for _ in 0..2 {
        // Each replayed request's time per token, and beside its record, how much longer
        // the record's TTFT was and how long the replay queued it; the lives come as they
        // end, and every figure below is a sorted list's.
        let mut steps: Vec<f64> = Vec::new();
        let mut pairs: Vec<(f64, f64)> = Vec::new();
        let front_s = w.front_s;
        let jobs = &w.jobs;
        replay_each(model.clone(), fit.cost, w, &mut |job, m| {
            if m.completed() && m.output >= 2 {
                if let (Some(end), Some(first)) = (m.end_s, m.first_token_s) {
                    steps.push((end - first) / (m.output - 1) as f64);
                }
            }
            let x = load::life(&jobs[job], &measured[job]);
            if !(m.completed() && x.completed()) {
                return;
            }
            if let (Some(xf), Some(mf), Some(ms)) =
                (x.first_token_s, m.first_token_s, m.scheduled_s)
            {
                let extra = (xf - x.sent_s) - (mf - m.sent_s);
                let queued = ms - (m.sent_s + front_s);
                pairs.push((extra, queued));
            }
        });
        steps.sort_by(f64::total_cmp);
        let step = steps.get(steps.len() / 2).copied().unwrap_or(0.0);
        let pairs: Vec<(f64, bool)> = pairs
            .into_iter()
            .map(|(extra, queued)| (extra, queued <= 2.0 * step))
            .collect();
        let at_once: Vec<f64> = pairs.iter().filter(|(_, a)| *a).map(|(e, _)| *e).collect();
        let mut extra = if at_once.is_empty() {
            pairs.iter().map(|(e, _)| *e).collect()
        } else {
            at_once
        };
        if extra.is_empty() {
            break;
        }
        extra.sort_by(f64::total_cmp);
        w.front_s = (w.front_s + extra[extra.len() / 4]).max(0.0);
    }
    w.front_s
}

/// What a result file with no per-request records measured: its own summary figures.
fn summary_of_account(account: &crate::model::client::ClientAccount) -> Summary {
    let seconds = |ms: Option<f64>| {
        ms.filter(|v| v.is_finite() && *v >= 0.0)
            .map(|v| v / 1000.0)
    };
    Summary {
        completed: account.completed.unwrap_or(0).max(0) as usize,
        output_tok_s: account.output_throughput,
        duration_s: account.duration,
        ttft_p50_s: seconds(account.median_ttft_ms),
        ttft_p99_s: seconds(account.p99_ttft_ms),
        ..Summary::default()
    }
}

/// The prompt and generation tokens the server's counters moved by, and the requests it
/// finished, between the snapshots: the lengths it served, exactly, in total.
fn served_lengths(run: &Run) -> Option<(f64, f64, f64)> {
    let (before, after) = (run.before.as_ref()?, run.after.as_ref()?);
    let s = counter_summary(run.engine, before, after)?;
    Some((s.prompt_tokens?, s.output_tokens?, s.finished?))
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
        let kinds = changes
            .iter()
            .map(|c| (band::Kind::of(c.knob), c.name))
            .collect();
        self.replay_setup(&setup.model, &workload, changes.to_vec(), applied, kinds)
    }

    /// The replay with the KV cache holding `usable` units (blocks, or tokens for a token
    /// pool) and nothing else changed: what more (or less) memory for the cache would do,
    /// whichever setting gives it.
    pub fn predict_pool(&self, usable: u64) -> Result<Prediction, String> {
        let mut model = self.setup.model.clone();
        let was = model.usable_units();
        match &mut model {
            EngineModel::Vllm(c) => {
                c.num_gpu_blocks = usable.saturating_add(c.num_gpu_blocks.saturating_sub(was))
            }
            EngineModel::Sglang(c) => c.max_total_num_tokens = usable,
            EngineModel::Trtllm(c) => c.blocks = usable,
        }
        self.replay_setup(
            &model,
            &self.workload,
            Vec::new(),
            vec![format!("usable KV cache {was} -> {usable}")],
            vec![(Some(band::Kind::CacheSize), "the KV cache's size")],
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
        kinds: Vec<(Option<band::Kind>, &'static str)>,
    ) -> Result<Prediction, String> {
        if model.usable_units() == 0 {
            return Err("the change leaves the KV cache no usable block".to_owned());
        }
        let predicted = replay_summary(model.clone(), self.fit.cost, workload);
        let extrapolation = predicted
            .peak_running
            .map_or(1.0, |peak| self.envelope.factor(peak));
        let extrapolated = (extrapolation > 1.0).then(|| {
            format!(
                "extrapolated: at most {} running, outside the {:.1} to {} the run's fit saw",
                fmt::g(predicted.peak_running.unwrap_or(0.0)),
                self.envelope.running_low,
                fmt::g(self.envelope.running_high),
            )
        });
        let band_withheld = if self.fit_from == FitFrom::EngineSteps {
            // The bands were measured on changed runs whose baselines had no step file:
            // a fit on the engine's steps was never held to a real change.
            Some("no calibrated band: outside what was measured (the per-step cost was fitted on the engine's own steps, and no replay fitted so was held to a real change)".to_owned())
        } else if self.assumed.is_empty() {
            band::withheld(self.engine, &kinds, extrapolation)
        } else {
            Some("no calibrated band: outside what was measured (the load was made from the tool's settings, with no per-request records, and no such replay was held to a real change)".to_owned())
        };
        let bands = band::bands(&predicted, band_withheld.as_deref(), extrapolation > 1.0);
        Ok(Prediction {
            changes,
            applied,
            setup_words: Setup::describe(model),
            predicted,
            extrapolated,
            extrapolation,
            bands,
            band_withheld,
        })
    }

    /// A prediction in a few words, each figure with its calibrated band: `no preemptions,
    /// at most 3 running, 1258 output tok/s (80% band 861 to 1838), TTFT p50 1.06 s (80%
    /// band 284.2 ms to 3.95 s)`, or the figures and why they have no band.
    pub fn words(&self, p: &Prediction, engine: &EngineDescriptor) -> String {
        let s = &p.predicted;
        let band_of = |f: band::Figure, show: fn(f64) -> String| {
            p.bands
                .iter()
                .find(|b| b.figure == f)
                .map_or(String::new(), |b| {
                    format!(
                        " ({:.0}% band {} to {})",
                        b.coverage_target * 100.0,
                        show(b.low),
                        show(b.high)
                    )
                })
        };
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
            parts.push(format!(
                "{} output tok/s{}",
                fmt::g(rate.round()),
                band_of(band::Figure::OutputTokS, |v| fmt::g(v.round()))
            ));
        }
        if let Some(t) = s.ttft_p50_s {
            parts.push(format!(
                "TTFT p50 {}{}",
                seconds(t),
                band_of(band::Figure::TtftP50, seconds)
            ));
        }
        let mut words = parts.join(", ");
        if let Some(beyond) = &p.extrapolated {
            words.push_str(&format!("; {beyond}"));
        }
        if let Some(why) = &p.band_withheld {
            words.push_str(&format!("; {why}"));
        }
        words
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
                let n = change.count()? as usize;
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
                    format!(
                        "rate {was} -> {rate} requests/s, the run's own arrival pattern rescaled"
                    )
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

#[cfg(test)]
mod tests {
    //! A run made by the scheduler model itself, with a known per-step cost, read back as
    //! the files would give it: the replay must find the setup, the load and the cost
    //! again, replay the run as it ran, and predict a change as the model runs it.

    use inferlint_sched::model::{StepCost, VllmConfig};
    use inferlint_sched::replay::{replay, Job};

    use super::*;
    use crate::engine::{SGLANG, TRTLLM, VLLM};
    use crate::model::client::{ClientAccount, ClientRequest, LoadTool, RequestOutcome};
    use crate::model::{BootFacts, PyValue, Settings};

    const COST: StepCost = StepCost {
        fixed_s: 0.01,
        per_running_s: 0.0,
        per_prefill_token_s: 0.0,
    };

    fn settings(pairs: &[(&str, PyValue)]) -> Option<Settings> {
        Some(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
    }

    /// A closed loop of `n` requests of 15 + 33 tokens, `concurrency` at once, as
    /// `model` runs it; the account holds each request's record as vllm bench keeps it.
    fn run_of(
        engine: &'static crate::engine::EngineDescriptor,
        boot: BootFacts,
        model: EngineModel,
        n: usize,
        concurrency: usize,
    ) -> (Run, inferlint_sched::replay::Replayed) {
        let workload = Workload {
            jobs: vec![
                Job {
                    due_s: 0.0,
                    prompt: 15,
                    output: 33,
                    cached: 0,
                };
                n
            ],
            arrivals: Arrivals::Closed { concurrency },
            max_model_len: None,
            front_s: 0.0,
        };
        let truth = replay(model, COST, &workload);
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        account.max_concurrency = Some(concurrency as i64);
        account.requests = truth
            .jobs
            .iter()
            .map(|j| ClientRequest {
                outcome: Some(RequestOutcome::Completed),
                sent_s: Some(100.0 + j.sent_s).into(),
                ttft_s: Some(j.first_token_s.unwrap() - j.sent_s).into(),
                latency_s: Some(j.end_s.unwrap() - j.sent_s).into(),
                prompt_tokens: Some(j.prompt).into(),
                output_tokens: Some(j.output).into(),
                ..ClientRequest::default()
            })
            .collect();
        let mut run = Run::empty(engine);
        run.boots = vec![("boot.log".into(), boot)];
        run.bench = Some(("bench.json".into(), account));
        run.requested = Some(concurrency as u64);
        (run, truth)
    }

    fn close(a: Option<f64>, b: Option<f64>) -> bool {
        matches!((a, b), (Some(a), Some(b)) if (a - b).abs() <= 1e-6 * b.abs().max(1.0))
    }

    #[test]
    fn a_vllm_run_of_the_model_is_found_again_and_its_change_predicted() {
        // 100 blocks of 16 tokens (99 usable; the boot log's 1,600-token cache), 8
        // requests at once growing to 3 blocks: all fit. The boot log printed the block
        // size and --max-num-seqs 256.
        let boot = BootFacts {
            attention_block_size: Some(16),
            kv_pool_tokens: Some(1600),
            non_default_args: settings(&[("max_num_seqs", PyValue::Int(256))]),
            ..BootFacts::default()
        };
        let vllm = |blocks: u64, max_num_seqs: usize| {
            EngineModel::Vllm(VllmConfig {
                block_size: 16,
                num_gpu_blocks: blocks,
                kv_groups: 1,
                state_blocks_per_request: 0,
                max_num_seqs,
                max_num_queued_reqs: None,
                prefill_chunk_tokens: None,
            })
        };
        let model = vllm(100, 256);
        let (run, truth) = run_of(&VLLM, boot, model.clone(), 24, 8);
        assert_eq!(truth.totals.evictions, 0);
        let base = baseline(&run).unwrap();
        assert_eq!(base.setup.model, model);
        assert_eq!(base.arrivals, Arrivals::Closed { concurrency: 8 });
        // Every step cost 10 ms; the fit says so, and the replay is the run.
        assert!(
            (base.fit.cost.fixed_s - 0.01).abs() < 1e-9,
            "{:?}",
            base.fit
        );
        assert!(base.front_s.abs() < 1e-9);
        let replayed = Summary::of_replay(&truth);
        assert_eq!(base.as_run.evictions, Some(0));
        assert!(
            close(base.as_run.output_tok_s, replayed.output_tok_s),
            "{:?}",
            base.as_run
        );
        assert!(close(base.as_run.ttft_p50_s, replayed.ttft_p50_s));
        // 10 blocks (9 usable) hold 3 at full length: 8 at once preempt; with
        // --max-num-seqs 3 as well, none. Each prediction is the model running the load.
        for (sets, capped) in [
            (&["num-gpu-blocks-override=10"][..], vllm(10, 256)),
            (
                &["num-gpu-blocks-override=10", "max-num-seqs=3"],
                vllm(10, 3),
            ),
        ] {
            let changes: Vec<Change> = sets
                .iter()
                .map(|s| change::parse(crate::Engine::Vllm, s).unwrap())
                .collect();
            let p = base.predict(&changes).unwrap();
            let direct = Summary::of_replay(&replay(capped, base.fit.cost, &base.workload));
            assert_eq!(p.predicted, direct, "{sets:?}");
        }
        let p = base
            .predict(&[change::parse(crate::Engine::Vllm, "num-gpu-blocks-override=10").unwrap()])
            .unwrap();
        assert!(p.predicted.evictions.unwrap() > 0);
        let p = base
            .predict(&[
                change::parse(crate::Engine::Vllm, "num-gpu-blocks-override=10").unwrap(),
                change::parse(crate::Engine::Vllm, "max-num-seqs=3").unwrap(),
            ])
            .unwrap();
        assert_eq!(
            (p.predicted.evictions, p.predicted.peak_running),
            (Some(0), Some(3.0))
        );
    }

    /// The account read for the replay alone ([`crate::model::client::Keep::ForReplay`]), its
    /// records taken out and moved in, gives the baseline and the predictions the
    /// account of whole records gives, to the bit; and records with no send time, no
    /// prompt or no output are left out and counted alike.
    #[test]
    fn records_kept_for_the_replay_give_what_whole_records_give() {
        let boot = BootFacts {
            attention_block_size: Some(16),
            kv_pool_tokens: Some(1600),
            ..BootFacts::default()
        };
        let model = EngineModel::Vllm(VllmConfig {
            block_size: 16,
            num_gpu_blocks: 100,
            kv_groups: 1,
            state_blocks_per_request: 0,
            max_num_seqs: 256,
            max_num_queued_reqs: None,
            prefill_chunk_tokens: None,
        });
        let (mut run, _) = run_of(&VLLM, boot, model, 40, 8);
        let account = &mut run.bench.as_mut().unwrap().1;
        // A failed request (sent with the length it asked for), and records the replay
        // leaves out.
        account.requests[3].outcome = Some(RequestOutcome::Failed);
        account.requests[3].error = Some("Bad Request".into());
        account.requests[3].asked_output_tokens = 33.into();
        account.requests[5].sent_s = None.into();
        account.requests[6].prompt_tokens = None.into();
        account.requests[7].outcome = Some(RequestOutcome::Failed);
        account.requests[8].server_prompt_tokens = 17.into();
        account.count_from_records();
        let whole = baseline(&run).unwrap();
        let mut folded = run.clone();
        let account = &mut folded.bench.as_mut().unwrap().1;
        account.keep_for_replay();
        assert!(account.requests.is_empty() && account.inter_token_ms.is_empty());
        assert_eq!(account.record_count(), 40);
        let records = std::mem::take(&mut account.replay.rows);
        assert_eq!(records.len(), 38);
        let kept = baseline_of_records(&folded, records).unwrap();
        let json = |b: &Baseline| serde_json::to_string(b).unwrap();
        assert_eq!(json(&kept), json(&whole));
        assert_eq!(kept.workload, whole.workload);
        assert_eq!(kept.left_out.len(), 3, "{:?}", kept.left_out);
        // Left in the account, the records are read from it the same.
        let mut unmoved = run.clone();
        unmoved.bench.as_mut().unwrap().1.keep_for_replay();
        assert_eq!(json(&baseline(&unmoved).unwrap()), json(&whole));
        for set in ["max-num-seqs=3", "concurrency=2", "rate=20"] {
            let changes = [change::parse(crate::Engine::Vllm, set).unwrap()];
            let (a, b) = (
                whole.predict(&changes).unwrap(),
                kept.predict(&changes).unwrap(),
            );
            assert_eq!(
                serde_json::to_string(&a).unwrap(),
                serde_json::to_string(&b).unwrap(),
                "{set}"
            );
        }
    }

    #[test]
    fn sglang_and_trtllm_setups_are_read_from_what_their_boot_logs_give() {
        // SGLang: a 2,000-token pool in pages of 1, --max-running-requests 4.
        let boot = BootFacts {
            kv_pool_tokens: Some(2000),
            page_size: Some(1),
            server_args: settings(&[("max_running_requests", PyValue::Int(4))]),
            ..BootFacts::default()
        };
        let model = EngineModel::Sglang(inferlint_sched::model::SglangConfig {
            max_total_num_tokens: 2000,
            page_size: 1,
            max_running_requests: 4,
            mamba_slots: None,
            new_token_ratio: 1.0,
        });
        let (run, _) = run_of(&SGLANG, boot, model.clone(), 12, 6);
        let base = baseline(&run).unwrap();
        assert_eq!(base.setup.model, model);
        let p = base
            .predict(&[change::parse(crate::Engine::Sglang, "--max-running-requests=6").unwrap()])
            .unwrap();
        assert_eq!(p.predicted.peak_running, Some(6.0));
        // TensorRT-LLM: 384 tokens in blocks of 32 (12 blocks), max_batch_size 8, and
        // MAX_UTILIZATION: 8 start in a block each and grow to 2 (16 > 12), so it
        // pauses; GUARANTEED_NO_EVICT admits only the 6 that fit at full length.
        let boot = BootFacts {
            kv_pool_tokens: Some(384),
            page_size: Some(32),
            server_args: settings(&[
                ("max_batch_size", PyValue::Int(8)),
                (
                    "capacity_scheduler_policy",
                    PyValue::Str("MAX_UTILIZATION".into()),
                ),
            ]),
            ..BootFacts::default()
        };
        let model = EngineModel::Trtllm(inferlint_sched::model::TrtllmConfig {
            tokens_per_block: 32,
            blocks: 12,
            max_num_requests: 8,
            policy: inferlint_sched::model::CapacityPolicy::MaxUtilization,
        });
        let (run, truth) = run_of(&TRTLLM, boot, model.clone(), 16, 8);
        let base = baseline(&run).unwrap();
        assert_eq!(base.setup.model, model);
        assert!(truth.totals.evictions > 0);
        assert_eq!(base.as_run.evictions, Some(truth.totals.evictions));
        let p = base
            .predict(&[change::parse(
                crate::Engine::Trtllm,
                "capacity_scheduler_policy=GUARANTEED_NO_EVICT",
            )
            .unwrap()])
            .unwrap();
        assert_eq!(p.predicted.evictions, Some(0));
    }

    #[test]
    fn a_run_the_model_cannot_speak_for_says_why() {
        let (mut run, _) = run_of(
            &VLLM,
            BootFacts {
                attention_block_size: Some(16),
                kv_pool_tokens: Some(1600),
                ..BootFacts::default()
            },
            EngineModel::Vllm(VllmConfig {
                block_size: 16,
                num_gpu_blocks: 100,
                kv_groups: 1,
                state_blocks_per_request: 0,
                max_num_seqs: 256,
                max_num_queued_reqs: None,
                prefill_chunk_tokens: None,
            }),
            8,
            4,
        );
        assert!(baseline(&run).is_ok());
        let mut no_boot = run.clone();
        no_boot.boots.clear();
        assert!(baseline(&no_boot).unwrap_err().contains("no boot log"));
        // A load above vLLM's lower default running limit, none printed: 256 or 1024.
        run.requested = Some(300);
        assert!(baseline(&run).unwrap_err().contains("256 or 1024"));
        run.requested = Some(4);
        run.bench.as_mut().unwrap().1.requests.clear();
        // No records, and no count of the requests completed to make a load from.
        assert!(baseline(&run)
            .unwrap_err()
            .contains("no per-request records"));
        run.bench = None;
        assert!(baseline(&run)
            .unwrap_err()
            .contains("no load tool result file"));
    }
}
