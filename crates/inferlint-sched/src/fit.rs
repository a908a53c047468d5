//! The per-step cost, calibrated on a run's own requests.
//!
//! A request that decodes `n` tokens after its first takes `n` engine steps (one token a
//! step; no speculative decoding). Each step costs `fixed + per_running x running +
//! per_prefill_token x prefilled`, so the request's decode takes
//!
//! `seconds = fixed x n + per_running x (n x mean running) + per_prefill_token x P`
//!
//! where `mean running` is the running count over its decode and `P` the prompt tokens
//! other requests prefilled meanwhile. Each completed request is one such equation,
//! divided by its steps (seconds per token, so that long requests do not outweigh short
//! ones and the fixed cost alone is the mean time per token); the fixed and per-request
//! costs are found by least squares, neither negative (the prefill cost is not fitted
//! from requests: see `per_token_fit`). A term is kept only when it lowers the error
//! clearly: a run whose running count never varied cannot tell the per-request cost from
//! the fixed one, and the fit then says so by leaving it at zero.
//!
//! Requests the engine preempted decode for longer than the steps they took (they waited,
//! then recomputed): they stand far above the first fit, are set aside and counted, and the
//! costs are fitted again without them.

use serde::Serialize;

use crate::model::StepCost;

/// One request's decode, as the run's records show it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Decode {
    /// Tokens after the first (engine steps).
    pub steps: f64,
    /// Requests running over its decode, on average.
    pub mean_running: f64,
    /// Prompt tokens other requests prefilled during its decode.
    pub prefill_tokens: f64,
    /// Seconds from its first token to its last.
    pub seconds: f64,
}

/// The costs found, and how well they describe the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fit {
    /// The per-step cost.
    pub cost: StepCost,
    /// Which terms the fit kept (`fixed` always; `per_running` where it lowered the
    /// error clearly).
    pub terms: Vec<&'static str>,
    /// Requests the fit used.
    pub used: usize,
    /// Requests set aside as far slower than the rest (preempted, or stalled).
    pub set_aside: usize,
    /// The root-mean-square relative error of the fitted decode times.
    pub rms_relative_error: f64,
    /// The lowest and highest mean running count among the requests used: the range the
    /// per-request cost was measured over.
    pub running_range: (f64, f64),
}

/// The fewest requests a fit is made from.
pub const MIN_REQUESTS: usize = 3;

/// A term must lower the squared error by this share to be kept.
const KEEP_TERM_GAIN: f64 = 0.10;

/// A request whose decode took this much longer than the first fit says (relative) is
/// set aside; the bound rises with the first fit's own spread.
const SET_ASIDE_ABOVE: f64 = 0.5;

/// Fits the per-step cost; `None` with fewer than [`MIN_REQUESTS`] usable requests.
/// `stalls` says whether the run may hold stalled requests (the server preempted, or its
/// count is unknown): only then are requests far slower than the first fit set aside;
/// in a run that preempted none, a slow request is the cost the fit must describe.
pub fn fit_step_cost(decodes: &[Decode], stalls: bool) -> Option<Fit> {
    let usable_one = |d: &Decode| {
        d.steps >= 1.0
            && d.seconds > 0.0
            && d.mean_running.is_finite()
            && d.prefill_tokens.is_finite()
    };
    // The decodes themselves where all are usable (a million of them are not copied).
    let usable: std::borrow::Cow<[Decode]> = if decodes.iter().all(usable_one) {
        std::borrow::Cow::Borrowed(decodes)
    } else {
        std::borrow::Cow::Owned(decodes.iter().copied().filter(usable_one).collect())
    };
    if usable.len() < MIN_REQUESTS {
        return None;
    }
    let first = per_token_fit(&usable)?;
    let residuals: Vec<f64> = usable
        .iter()
        .map(|d| d.seconds / predict(&first.cost, d) - 1.0)
        .collect();
    let mut spread: Vec<f64> = residuals.iter().map(|r| r.abs()).collect();
    spread.sort_by(f64::total_cmp);
    let bound = SET_ASIDE_ABOVE.max(3.0 * spread[spread.len() / 2]);
    drop(spread);
    let kept_one = |r: &f64| !stalls || *r <= bound;
    let kept_count = residuals.iter().filter(|r| kept_one(r)).count();
    let kept: Vec<Decode>;
    let (fit, used): (Fit, &[Decode]) = if kept_count >= MIN_REQUESTS && kept_count < usable.len() {
        kept = usable
            .iter()
            .zip(&residuals)
            .filter(|(_, r)| kept_one(r))
            .map(|(d, _)| *d)
            .collect();
        (per_token_fit(&kept)?, &kept)
    } else {
        (first, &usable)
    };
    // The error of the decode times, relative to each.
    let sse: f64 = used
        .iter()
        .map(|d| (predict(&fit.cost, d) / d.seconds - 1.0).powi(2))
        .sum();
    let range = used
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), d| {
            (lo.min(d.mean_running), hi.max(d.mean_running))
        });
    Some(Fit {
        used: used.len(),
        set_aside: usable.len() - used.len(),
        rms_relative_error: (sse / used.len() as f64).sqrt(),
        running_range: range,
        ..fit
    })
}

fn predict(cost: &StepCost, d: &Decode) -> f64 {
    cost.fixed_s * d.steps
        + cost.per_running_s * d.steps * d.mean_running
        + cost.per_prefill_token_s * d.prefill_tokens
}

/// Each request's equation in seconds per token, every request weighing the same (so
/// that the fixed cost alone is the mean time per token), fitted as [`StepSums::fit`]
/// fits a recording's. The prefill term is not offered (see the module's note): in a
/// decode's equation the prompts prefilled meanwhile stand for every cost a new request
/// brings (the front end's CPU, on a shared host), and on the real runs of short prompts
/// the fit loaded all of it onto the prefill token, a third of a second for a 32-token
/// prompt, which then made every admission that slow.
fn per_token_fit(decodes: &[Decode]) -> Option<Fit> {
    let mut sums = StepSums::default();
    for d in decodes {
        sums.add(d.mean_running, 0.0, d.seconds / d.steps);
    }
    sums.fit()
}

/// The sums a per-step fit of `seconds per step = fixed + per_running x running +
/// per_prefill_token x prompt tokens per step` needs, gathered one observation at a time
/// (a recording's consecutive readings), so that a day-long recording is fitted in
/// constant memory and two halves read on two cores add up.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepSums {
    /// The Gram matrix of the features (1, running, prompt tokens per step) and the
    /// target (seconds per step): `g[i][j]` is the sum of `x_i x_j`, index 3 the target.
    g: [[f64; 4]; 4],
    r_min: f64,
    r_max: f64,
}

impl StepSums {
    /// One observation: `running` requests ran, `prompt_per_step` prompt tokens were
    /// prefilled per step on average, each step took `seconds_per_step`.
    pub fn add(&mut self, running: f64, prompt_per_step: f64, seconds_per_step: f64) {
        let x = [1.0, running, prompt_per_step, seconds_per_step];
        if !(x.iter().all(|v| v.is_finite()) && seconds_per_step > 0.0 && prompt_per_step >= 0.0) {
            return;
        }
        if self.g[0][0] == 0.0 {
            (self.r_min, self.r_max) = (running, running);
        }
        for (i, xi) in x.iter().enumerate() {
            for (j, xj) in x.iter().enumerate() {
                self.g[i][j] += xi * xj;
            }
        }
        self.r_min = self.r_min.min(running);
        self.r_max = self.r_max.max(running);
    }

    /// The sums of two stretches.
    pub fn merge(&mut self, other: &StepSums) {
        if other.g[0][0] == 0.0 {
            return;
        }
        if self.g[0][0] == 0.0 {
            *self = *other;
            return;
        }
        for i in 0..4 {
            for j in 0..4 {
                self.g[i][j] += other.g[i][j];
            }
        }
        self.r_min = self.r_min.min(other.r_min);
        self.r_max = self.r_max.max(other.r_max);
    }

    /// Observations added.
    pub fn count(&self) -> usize {
        self.g[0][0] as usize
    }

    /// The fit: the simplest of the fixed cost alone (the mean seconds per step), with a
    /// cost per running request, per prefilled prompt token or both, each extra term kept
    /// only where it lowers the squared error by a tenth, none negative;
    /// `None` with fewer than [`MIN_REQUESTS`] observations. Its error is the
    /// root-mean-square residual over the mean seconds per step.
    pub fn fit(&self) -> Option<Fit> {
        let n = self.g[0][0];
        if n < MIN_REQUESTS as f64 {
            return None;
        }
        let names = ["fixed", "per_running", "per_prefill_token"];
        let mut best: Option<([f64; 3], f64, Vec<&'static str>)> = None;
        for subset in [&[0usize][..], &[0, 1], &[0, 2], &[0, 1, 2]] {
            let k = subset.len();
            // The normal equations of the subset, from the Gram matrix.
            let mut a = vec![vec![0.0; k + 1]; k];
            for (i, &fi) in subset.iter().enumerate() {
                for (j, &fj) in subset.iter().enumerate() {
                    a[i][j] = self.g[fi][fj];
                }
                a[i][k] = self.g[fi][3];
            }
            let Some(coef) = solve(a, k) else {
                continue;
            };
            if coef[0] <= 0.0 || coef.iter().any(|c| *c < 0.0 || !c.is_finite()) {
                continue;
            }
            let mut all = [0.0; 3];
            for (&i, c) in subset.iter().zip(&coef) {
                all[i] = *c;
            }
            // SSE = sum (z - w.x)^2 = zz - 2 w.(xz) + w' G w.
            let mut sse = self.g[3][3];
            for i in 0..3 {
                sse -= 2.0 * all[i] * self.g[i][3];
                for j in 0..3 {
                    sse += all[i] * all[j] * self.g[i][j];
                }
            }
            let sse = sse.max(0.0);
            let better = match &best {
                None => true,
                Some((_, b, _)) => sse < b * (1.0 - KEEP_TERM_GAIN),
            };
            if better {
                best = Some((all, sse, subset.iter().map(|&i| names[i]).collect()));
            }
        }
        let (w, sse, terms) = best?;
        let mean_z = self.g[0][3] / n;
        Some(Fit {
            cost: StepCost {
                fixed_s: w[0],
                per_running_s: w[1],
                per_prefill_token_s: w[2],
            },
            terms,
            used: self.count(),
            set_aside: 0,
            rms_relative_error: (sse / n).sqrt() / mean_z,
            running_range: (self.r_min, self.r_max),
        })
    }
}

/// Solves the `k` normal equations in `a` (each row its coefficients, then its right
/// side) by Gaussian elimination with partial pivoting; `None` when singular.
fn solve(mut a: Vec<Vec<f64>>, k: usize) -> Option<Vec<f64>> {
    for col in 0..k {
        let pivot = (col..k).max_by(|&p, &q| a[p][col].abs().total_cmp(&a[q][col].abs()))?;
        let scale = a.iter().map(|r| r[col].abs()).fold(0.0, f64::max);
        if a[pivot][col].abs() <= 1e-12 * scale.max(f64::MIN_POSITIVE) {
            return None;
        }
        a.swap(col, pivot);
        let pivot_row = a[col].clone();
        for (row, r) in a.iter_mut().enumerate() {
            if row != col {
                let f = r[col] / pivot_row[col];
                for (x, p) in r.iter_mut().zip(&pivot_row).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    Some((0..k).map(|i| a[i][k] / a[i][i]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(cost: &StepCost, steps: f64, running: f64, prefill: f64) -> Decode {
        let mut d = Decode {
            steps,
            mean_running: running,
            prefill_tokens: prefill,
            seconds: 0.0,
        };
        d.seconds = predict(cost, &d);
        d
    }

    #[test]
    fn costs_that_made_the_times_are_found_again() {
        // Decode times made exactly from 5 ms a step and 0.5 ms a running request, over
        // running counts 2 to 8 (the prefills beside them cost nothing).
        let truth = StepCost {
            fixed_s: 0.005,
            per_running_s: 0.0005,
            per_prefill_token_s: 0.0,
        };
        let ds: Vec<Decode> = (0..12)
            .map(|i| {
                decode(
                    &truth,
                    100.0 + i as f64,
                    2.0 + (i % 7) as f64,
                    50.0 * (i % 4) as f64,
                )
            })
            .collect();
        let fit = fit_step_cost(&ds, true).unwrap();
        assert!((fit.cost.fixed_s - 0.005).abs() < 1e-9, "{fit:?}");
        assert!((fit.cost.per_running_s - 0.0005).abs() < 1e-9);
        assert_eq!(fit.cost.per_prefill_token_s, 0.0);
        assert_eq!(fit.terms, vec!["fixed", "per_running"]);
        assert!(fit.rms_relative_error < 1e-9);
        assert_eq!(fit.running_range, (2.0, 8.0));
    }

    #[test]
    fn a_running_count_that_never_varied_keeps_the_fixed_cost_alone() {
        // Every request ran beside 4 others with no prefill: 6 ms a step explains all,
        // and nothing in the run can split it between the fixed and per-request costs.
        let truth = StepCost {
            fixed_s: 0.006,
            per_running_s: 0.0,
            per_prefill_token_s: 0.0,
        };
        let ds: Vec<Decode> = (0..6)
            .map(|i| decode(&truth, 50.0 + i as f64, 4.0, 0.0))
            .collect();
        let fit = fit_step_cost(&ds, true).unwrap();
        assert_eq!(fit.terms, vec!["fixed"]);
        assert!((fit.cost.fixed_s - 0.006).abs() < 1e-12);
    }

    #[test]
    fn a_preempted_request_is_set_aside_not_fitted() {
        let truth = StepCost {
            fixed_s: 0.004,
            per_running_s: 0.0,
            per_prefill_token_s: 0.0,
        };
        let mut ds: Vec<Decode> = (0..8)
            .map(|i| decode(&truth, 60.0 + i as f64, 3.0, 0.0))
            .collect();
        // It waited 1 s beside its 60 steps: 0.24 s of decode became 1.24 s.
        ds[3].seconds += 1.0;
        let fit = fit_step_cost(&ds, true).unwrap();
        assert_eq!((fit.used, fit.set_aside), (7, 1));
        assert!((fit.cost.fixed_s - 0.004).abs() < 1e-12);
    }

    #[test]
    fn the_sums_fit_what_the_observations_fit_and_add_up_in_halves() {
        // Steps of 4 ms + 1 ms a running request, at running counts 1 to 6.
        let mut whole = StepSums::default();
        let (mut left, mut right) = (StepSums::default(), StepSums::default());
        for (i, r) in [1.0, 2.0, 3.0, 4.0, 5.0, 6.0].into_iter().enumerate() {
            let z = 0.004 + 0.001 * r;
            whole.add(r, 0.0, z);
            if i < 3 {
                left.add(r, 0.0, z)
            } else {
                right.add(r, 0.0, z)
            }
        }
        left.merge(&right);
        let halves = left.fit().unwrap();
        let fit = whole.fit().unwrap();
        assert_eq!(left.count(), whole.count());
        assert!((halves.cost.fixed_s - fit.cost.fixed_s).abs() < 1e-15);
        assert!((halves.cost.per_running_s - fit.cost.per_running_s).abs() < 1e-15);
        assert!((fit.cost.fixed_s - 0.004).abs() < 1e-12, "{fit:?}");
        assert!((fit.cost.per_running_s - 0.001).abs() < 1e-12);
        assert_eq!(fit.running_range, (1.0, 6.0));
        // One running count only: nothing tells the two costs apart.
        let mut flat = StepSums::default();
        for z in [0.009, 0.011, 0.010] {
            flat.add(4.0, 0.0, z);
        }
        let fit = flat.fit().unwrap();
        assert_eq!(fit.terms, vec!["fixed"]);
        assert!((fit.cost.fixed_s - 0.010).abs() < 1e-12);
        // Prompt tokens prefilled beside the steps cost 20 us each.
        let mut prefill = StepSums::default();
        for (r, p) in [(2.0, 0.0), (2.0, 10.0), (4.0, 0.0), (4.0, 25.0), (6.0, 5.0)] {
            prefill.add(r, p, 0.004 + 0.001 * r + 0.00002 * p);
        }
        let fit = prefill.fit().unwrap();
        assert_eq!(fit.terms, vec!["fixed", "per_running", "per_prefill_token"]);
        assert!(
            (fit.cost.per_prefill_token_s - 0.00002).abs() < 1e-12,
            "{fit:?}"
        );
    }

    #[test]
    fn too_few_requests_give_no_fit() {
        let truth = StepCost {
            fixed_s: 0.004,
            per_running_s: 0.0,
            per_prefill_token_s: 0.0,
        };
        let ds = [
            decode(&truth, 10.0, 1.0, 0.0),
            decode(&truth, 0.0, 1.0, 0.0),
        ];
        assert_eq!(fit_step_cost(&ds, true), None);
    }
}
