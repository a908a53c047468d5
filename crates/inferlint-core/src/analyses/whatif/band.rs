//! How far a prediction can be trusted: each printed figure's band, calibrated out of
//! sample on real changed runs, never the model's error on the run it was fitted on.
//!
//! The model's error on the run as it ran says how well the fit describes that run; a
//! change moves the server somewhere the fit did not see, and on the real vLLM CPU build
//! that error was no guide to a change's (±3% printed, +43% measured). So the band is
//! made from what predictions of changes got wrong on real engines:
//!
//! - [`TRUTHS`]: each change made for real in `fixtures/real/vllm-0.32-cpu/whatif/`
//!   (`scripts/real-vllm/whatif.sh`), the replay of its baseline with the change against
//!   the changed run's own measurement, as `ln(predicted / measured)` per figure. The
//!   baseline run a second time is a change of nothing: its prediction is the replay as
//!   it ran. This is data, regenerated from the fixtures by the test that checks it
//!   (`INFERLINT_WRITE_WHATIF_TABLE=1 cargo test -p inferlint-cli --test tests whatif::`).
//! - The method (split conformal): the band's half-width, in `ln` units, is the
//!   ⌈0.8 (n + 1)⌉-th smallest of the n calibration errors' sizes, so that a new change
//!   drawn like them falls inside with probability at least 80%; with too few errors for
//!   that order there is no band.
//! - A floor: never narrower than the largest spread of two runs of one setup
//!   ([`SPREADS`], each situation's baseline against `baseline-again`): no prediction can
//!   be held closer than the server repeats itself.
//! - The envelope ([`Envelope`]): the running counts the fit saw. A change that runs
//!   outside them is extrapolated. In the calibration the extrapolated changes' errors
//!   were no larger than the others' (docs/whatif.md's table), so an extrapolated figure
//!   is given the larger of the band of all changes and the band of the extrapolated
//!   changes alone, but only as far as a change was measured to go: beyond the farthest
//!   factor measured, and for a change of a kind no truth made (a block size, a dtype,
//!   a context limit, another engine), the band abstains: `no calibrated band: outside
//!   what was measured`.
//!
//! Leave-one-situation-out ([`half_width`] with `excluding`) gives each calibration
//! situation the band the others alone make: that is how the coverage docs/whatif.md
//! states was measured, on truths the band never saw.

use serde::Serialize;

use crate::engine::Knob;
use inferlint_sched::stats::Summary;

/// The share of new changes' truths a band is made to hold.
pub const COVERAGE_TARGET: f64 = 0.8;

/// A figure a prediction prints with a band, named as in [`Summary`]'s JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Figure {
    /// Output tokens per second.
    #[serde(rename = "output_tok_s")]
    OutputTokS,
    /// Median time to first token.
    #[serde(rename = "ttft_p50_s")]
    TtftP50,
    /// 99th percentile of the time to first token.
    #[serde(rename = "ttft_p99_s")]
    TtftP99,
    /// Median time per output token.
    #[serde(rename = "tpot_p50_s")]
    TpotP50,
    /// 99th percentile of the time per output token.
    #[serde(rename = "tpot_p99_s")]
    TpotP99,
}

impl Figure {
    /// Every banded figure, in the order of [`Truth::log_error`].
    pub const ALL: [Figure; 5] = [
        Figure::OutputTokS,
        Figure::TtftP50,
        Figure::TtftP99,
        Figure::TpotP50,
        Figure::TpotP99,
    ];

    /// The figure in a summary.
    pub fn of(self, s: &Summary) -> Option<f64> {
        match self {
            Figure::OutputTokS => s.output_tok_s,
            Figure::TtftP50 => s.ttft_p50_s,
            Figure::TtftP99 => s.ttft_p99_s,
            Figure::TpotP50 => s.tpot_p50_s,
            Figure::TpotP99 => s.tpot_p99_s,
        }
    }

    /// Its key in [`Summary`]'s JSON.
    pub fn key(self) -> &'static str {
        match self {
            Figure::OutputTokS => "output_tok_s",
            Figure::TtftP50 => "ttft_p50_s",
            Figure::TtftP99 => "ttft_p99_s",
            Figure::TpotP50 => "tpot_p50_s",
            Figure::TpotP99 => "tpot_p99_s",
        }
    }

    fn index(self) -> usize {
        Figure::ALL.iter().position(|f| *f == self).unwrap_or(0)
    }
}

/// What kind of change a calibration truth made: the knobs that move the same thing in the
/// model are one kind, since the model applies them alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Nothing: the same setup run again.
    None,
    /// The load's concurrency.
    Concurrency,
    /// The server's running limit.
    RunningLimit,
    /// The KV cache's size (in blocks, bytes, tokens or a memory share: the model holds
    /// each as the pool's size).
    CacheSize,
    /// The load's request rate.
    Rate,
}

impl Kind {
    /// The kind of change a knob makes, `None` for a knob whose change no calibration
    /// truth made of that kind.
    pub fn of(knob: Knob) -> Option<Kind> {
        match knob {
            Knob::Concurrency => Some(Kind::Concurrency),
            Knob::MaxRunning => Some(Kind::RunningLimit),
            Knob::Blocks | Knob::CacheBytes | Knob::PoolTokens | Knob::MemoryFraction => {
                Some(Kind::CacheSize)
            }
            Knob::Rate => Some(Kind::Rate),
            Knob::BlockSize | Knob::KvDtype | Knob::MaxModelLen | Knob::Policy => None,
        }
    }
}

/// One real change: its prediction's error on each figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Truth {
    /// The situation (the baseline's folder).
    pub situation: &'static str,
    /// The change, as `--set` takes it (empty: the baseline run again).
    pub change: &'static str,
    /// What kind of change it was.
    pub kind: Kind,
    /// How far outside the fit's running counts the prediction ran
    /// ([`Envelope::factor`]): 1 inside.
    pub extrapolation: f64,
    /// `ln(predicted / measured)` for each of [`Figure::ALL`]; `None` where either is missing.
    pub log_error: [Option<f64>; 5],
}

/// Where the calibration was made, for the words that carry a band.
pub const CALIBRATED_ON: &str = "the real vLLM CPU build";

/// The engine the calibration's changes were made on: a prediction for another has no
/// calibrated band.
pub const CALIBRATED_ENGINE: &str = "vLLM";

// calibration data: regenerated by `INFERLINT_WRITE_WHATIF_TABLE=1 cargo test -p inferlint-cli --test tests whatif::`
/// The real changes of `fixtures/real/vllm-0.32-cpu/whatif/`, each prediction's error.
#[rustfmt::skip]
pub const TRUTHS: &[Truth] = &[
    Truth {
        situation: "arrivals",
        change: "",
        kind: Kind::None,
        extrapolation: 1.0000,
        log_error: [Some(0.0029), Some(-0.0995), Some(-0.3082), Some(-0.0578), Some(-0.2518)],
    },
    Truth {
        situation: "arrivals",
        change: "max-num-seqs=4",
        kind: Kind::RunningLimit,
        extrapolation: 1.0000,
        log_error: [Some(0.0126), Some(-0.2176), Some(-2.4156), Some(-0.2514), Some(-0.5571)],
    },
    Truth {
        situation: "arrivals",
        change: "rate=16",
        kind: Kind::Rate,
        extrapolation: 1.7500,
        log_error: [Some(-0.0043), Some(-0.0463), Some(-0.3593), Some(-0.0757), Some(-0.3033)],
    },
    Truth {
        situation: "arrivals",
        change: "rate=4",
        kind: Kind::Rate,
        extrapolation: 1.0000,
        log_error: [Some(0.0003), Some(-0.2013), Some(-0.6690), Some(-0.0448), Some(-0.1186)],
    },
    Truth {
        situation: "healthy",
        change: "",
        kind: Kind::None,
        extrapolation: 1.0000,
        log_error: [Some(0.0864), Some(-0.2688), Some(-0.7377), Some(-0.1330), Some(-0.2094)],
    },
    Truth {
        situation: "healthy",
        change: "concurrency=16",
        kind: Kind::Concurrency,
        extrapolation: 2.0000,
        log_error: [Some(0.2070), Some(-1.3158), Some(-1.6184), Some(-0.1454), Some(-0.2129)],
    },
    Truth {
        situation: "healthy",
        change: "concurrency=2",
        kind: Kind::Concurrency,
        extrapolation: 2.0803,
        log_error: [Some(0.2042), Some(-0.3807), Some(-1.4081), Some(-0.2188), Some(-0.6085)],
    },
    Truth {
        situation: "healthy",
        change: "max-num-seqs=4",
        kind: Kind::RunningLimit,
        extrapolation: 1.0000,
        log_error: [Some(0.1185), Some(-0.1170), Some(-0.1963), Some(-0.1123), Some(-0.2364)],
    },
    Truth {
        situation: "kv-too-small",
        change: "",
        kind: Kind::None,
        extrapolation: 1.0000,
        log_error: [Some(0.1436), Some(0.1095), Some(-0.3560), Some(-0.1472), Some(-0.2503)],
    },
    Truth {
        situation: "kv-too-small",
        change: "kv-cache-memory-bytes=2228224",
        kind: Kind::CacheSize,
        extrapolation: 1.6000,
        log_error: [Some(-0.1776), Some(0.8533), Some(0.7216), Some(0.1332), Some(0.0955)],
    },
    Truth {
        situation: "kv-too-small",
        change: "kv-cache-memory-bytes=1179648",
        kind: Kind::CacheSize,
        extrapolation: 1.6000,
        log_error: [Some(-0.0406), Some(1.1483), Some(-0.0334), Some(-0.0415), Some(-0.0719)],
    },
    Truth {
        situation: "kv-too-small",
        change: "concurrency=2",
        kind: Kind::Concurrency,
        extrapolation: 1.0000,
        log_error: [Some(0.3609), Some(1.9381), Some(1.5296), Some(-0.5822), Some(-0.6926)],
    },
    Truth {
        situation: "kv-too-small",
        change: "max-num-seqs=2",
        kind: Kind::RunningLimit,
        extrapolation: 1.0000,
        log_error: [Some(0.4773), Some(-0.4781), Some(-0.5115), Some(-0.4809), Some(-0.6370)],
    },
    Truth {
        situation: "long-outputs",
        change: "",
        kind: Kind::None,
        extrapolation: 1.0000,
        log_error: [Some(-0.0673), Some(0.1064), Some(0.0035), Some(0.0184), Some(0.0919)],
    },
    Truth {
        situation: "long-outputs",
        change: "kv-cache-memory-bytes=4325376",
        kind: Kind::CacheSize,
        extrapolation: 1.0000,
        log_error: [Some(-0.0485), Some(0.3869), Some(-0.1200), Some(0.0515), Some(-0.0691)],
    },
    Truth {
        situation: "long-outputs",
        change: "concurrency=4",
        kind: Kind::Concurrency,
        extrapolation: 1.0000,
        log_error: [Some(0.1446), Some(0.9490), Some(0.1145), Some(-0.0848), Some(-0.4066)],
    },
    Truth {
        situation: "long-outputs",
        change: "max-num-seqs=2",
        kind: Kind::RunningLimit,
        extrapolation: 1.5000,
        log_error: [Some(0.1697), Some(-0.1955), Some(-0.1974), Some(-0.1622), Some(-0.2598)],
    },
    Truth {
        situation: "long-prompts",
        change: "",
        kind: Kind::None,
        extrapolation: 1.0000,
        log_error: [Some(-0.0148), Some(-0.2573), Some(-1.0490), Some(0.0732), Some(-0.2263)],
    },
    Truth {
        situation: "long-prompts",
        change: "concurrency=2",
        kind: Kind::Concurrency,
        extrapolation: 1.3612,
        log_error: [Some(-0.2739), Some(-0.0898), Some(-0.5701), Some(0.3748), Some(0.0328)],
    },
    Truth {
        situation: "long-prompts",
        change: "concurrency=8",
        kind: Kind::Concurrency,
        extrapolation: 2.0000,
        log_error: [Some(0.2641), Some(-0.4435), Some(-1.1634), Some(-0.2884), Some(-0.6036)],
    },
    Truth {
        situation: "long-prompts",
        change: "max-num-seqs=2",
        kind: Kind::RunningLimit,
        extrapolation: 1.3612,
        log_error: [Some(-0.2365), Some(0.2096), Some(0.0177), Some(0.3162), Some(0.0051)],
    },
    Truth {
        situation: "running-cap",
        change: "",
        kind: Kind::None,
        extrapolation: 1.0000,
        log_error: [Some(0.3768), Some(-0.4532), Some(-0.3910), Some(-0.3977), Some(-0.6152)],
    },
    Truth {
        situation: "running-cap",
        change: "concurrency=2",
        kind: Kind::Concurrency,
        extrapolation: 1.0000,
        log_error: [Some(0.0774), Some(0.7652), Some(-1.0608), Some(-0.0920), Some(-0.4280)],
    },
    Truth {
        situation: "running-cap",
        change: "max-num-seqs=4",
        kind: Kind::RunningLimit,
        extrapolation: 2.0000,
        log_error: [Some(0.0930), Some(-0.1596), Some(-0.2549), Some(-0.0597), Some(-0.3572)],
    },
    Truth {
        situation: "running-cap",
        change: "max-num-seqs=8",
        kind: Kind::RunningLimit,
        extrapolation: 4.0000,
        log_error: [Some(0.2519), Some(0.5307), Some(-0.2438), Some(-0.3007), Some(-0.4832)],
    },
];

/// Each situation's two runs of one setup, `|ln(baseline / baseline-again)|` per figure.
#[rustfmt::skip]
pub const SPREADS: &[(&str, [Option<f64>; 5])] = &[
    ("arrivals", [Some(0.0051), Some(0.0379), Some(0.1388), Some(0.0729), Some(0.0794)]),
    ("healthy", [Some(0.0835), Some(0.1010), Some(0.2266), Some(0.1342), Some(0.0036)]),
    ("kv-too-small", [Some(0.1731), Some(0.0494), Some(0.2124), Some(0.1250), Some(0.2751)]),
    ("long-outputs", [Some(0.0634), Some(0.1951), Some(0.1085), Some(0.0304), Some(0.1251)]),
    ("long-prompts", [Some(0.0500), Some(0.0064), Some(0.0838), Some(0.0578), Some(0.0165)]),
    ("running-cap", [Some(0.3593), Some(0.4948), Some(0.2932), Some(0.3847), Some(0.3581)]),
];
// end of calibration data

/// The running counts the fit saw, and where a prediction ran against them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Envelope {
    /// The fewest running the fit saw (its requests' or readings' mean running count).
    pub running_low: f64,
    /// The most running the run reached (its peak, or the fit's highest mean).
    pub running_high: f64,
}

impl Envelope {
    /// How far outside the envelope a prediction whose running peaked at `peak` ran, as a
    /// factor: 1 inside, 2 at twice the most the run ran or half the fewest the fit saw.
    /// Half a request either side is inside: a count is whole, a mean is not.
    pub fn factor(&self, peak: f64) -> f64 {
        if peak > self.running_high + 0.5 {
            peak / self.running_high.max(1.0)
        } else if peak < self.running_low - 0.5 && peak > 0.0 {
            self.running_low / peak
        } else {
            1.0
        }
    }
}

/// The ⌈target (n + 1)⌉-th smallest of `sizes`: split conformal's quantile at the
/// [`COVERAGE_TARGET`]. `None` when that order is beyond n (too few to hold the target).
pub fn conformal(sizes: Vec<f64>) -> Option<f64> {
    conformal_at(sizes, COVERAGE_TARGET)
}

/// The ⌈level (n + 1)⌉-th smallest of `sizes`, `None` when that order is beyond n.
pub fn conformal_at(mut sizes: Vec<f64>, level: f64) -> Option<f64> {
    sizes.retain(|s| s.is_finite());
    sizes.sort_by(f64::total_cmp);
    let order = (level * (sizes.len() + 1) as f64 - 1e-9).ceil() as usize;
    (order >= 1)
        .then(|| sizes.get(order - 1).copied())
        .flatten()
}

/// The largest spread of two runs of one setup, leaving `excluding` out.
pub fn spread_floor(figure: Figure, excluding: Option<&str>) -> Option<f64> {
    SPREADS
        .iter()
        .filter(|(s, _)| Some(*s) != excluding)
        .filter_map(|(_, spread)| spread[figure.index()])
        .max_by(f64::total_cmp)
}

/// Why a prediction has no calibrated band, where it has none: `changes` are each
/// change's kind (`None`: of no kind measured) and its setting's name.
pub fn withheld(
    engine: &str,
    changes: &[(Option<Kind>, &str)],
    extrapolation: f64,
) -> Option<String> {
    const OUTSIDE: &str = "no calibrated band: outside what was measured";
    if engine != CALIBRATED_ENGINE {
        return Some(format!(
            "{OUTSIDE} (the bands were measured on {CALIBRATED_ENGINE} alone)"
        ));
    }
    if let Some((_, name)) = changes
        .iter()
        .find(|(kind, _)| !kind.is_some_and(|k| measured(k, None)))
    {
        return Some(format!(
            "{OUTSIDE} (no change of {name} was made on a real engine)"
        ));
    }
    let farthest = farthest_extrapolation(None);
    if extrapolation > farthest + 1e-9 {
        return Some(format!(
            "{OUTSIDE} (it runs {extrapolation:.1} times outside the running counts the run saw; the farthest change measured went {farthest:.1} times)"
        ));
    }
    None
}

/// Whether a calibration truth outside `excluding` made a change of `kind`.
pub fn measured(kind: Kind, excluding: Option<&str>) -> bool {
    TRUTHS
        .iter()
        .any(|t| t.kind == kind && Some(t.situation) != excluding)
}

/// The farthest a calibration change ran outside its fit's envelope.
pub fn farthest_extrapolation(excluding: Option<&str>) -> f64 {
    TRUTHS
        .iter()
        .filter(|t| Some(t.situation) != excluding)
        .map(|t| t.extrapolation)
        .fold(1.0, f64::max)
}

/// The quantile levels a band may be drawn at, tried in turn (see [`level`]).
pub const LEVELS: [f64; 4] = [0.80, 0.85, 0.90, 0.95];

/// The quantile level `figure`'s band is drawn at: the lowest of [`LEVELS`] at which
/// leaving each situation out in turn, the band the others make held at least
/// [`COVERAGE_TARGET`] of its truths ([`held_out_coverage_at`]), else the highest.
/// Errors within a situation share one baseline's fit, so they are not exchangeable one
/// by one: a quantile of all of them at 0.8 held fewer than 80% of a new situation's
/// truths (TTFT p50, 19 of 25). The level is chosen on the same truths it is measured
/// on, so the coverage quoted at it is tuned once per figure; changed runs of new
/// situations are the test.
pub fn level(figure: Figure) -> f64 {
    LEVELS
        .iter()
        .copied()
        .find(|l| {
            let (inside, asked, _) = held_out_coverage_at(figure, *l);
            asked > 0 && inside as f64 >= COVERAGE_TARGET * asked as f64
        })
        .unwrap_or(LEVELS[LEVELS.len() - 1])
}

/// The band's half-width for `figure` in `ln` units (the prediction times `exp(±w)`), from
/// the truths outside `excluding`, at the figure's [`level`]; `extrapolated` takes the
/// larger of all changes' band and the extrapolated changes' alone. `None`: too few
/// truths for the level.
pub fn half_width(figure: Figure, excluding: Option<&str>, extrapolated: bool) -> Option<f64> {
    half_width_at(figure, excluding, extrapolated, level(figure))
}

/// [`half_width`] at a given quantile level.
pub fn half_width_at(
    figure: Figure,
    excluding: Option<&str>,
    extrapolated: bool,
    level: f64,
) -> Option<f64> {
    let sizes = |only_extrapolated: bool| {
        TRUTHS
            .iter()
            .filter(|t| Some(t.situation) != excluding)
            .filter(|t| !only_extrapolated || t.extrapolation > 1.0)
            .filter_map(|t| t.log_error[figure.index()].map(f64::abs))
            .collect::<Vec<_>>()
    };
    let mut width = conformal_at(sizes(false), level)?;
    if extrapolated {
        width = width.max(conformal_at(sizes(true), level)?);
    }
    Some(width.max(spread_floor(figure, excluding).unwrap_or(0.0)))
}

/// A figure's band: the prediction and the range the calibration says holds the truth.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Band {
    /// The figure.
    pub figure: Figure,
    /// The predicted value.
    pub predicted: f64,
    /// The band's low end.
    pub low: f64,
    /// The band's high end.
    pub high: f64,
    /// The share of calibration truths a band so made is meant to hold.
    pub coverage_target: f64,
    /// The quantile of the calibration errors it was drawn at ([`level`]).
    pub level: f64,
}

/// The bands of a prediction's figures, or why it has none.
pub fn bands(predicted: &Summary, withheld_why: Option<&str>, extrapolated: bool) -> Vec<Band> {
    if withheld_why.is_some() {
        return Vec::new();
    }
    Figure::ALL
        .iter()
        .filter_map(|f| {
            let v = f.of(predicted).filter(|v| *v > 0.0 && v.is_finite())?;
            let w = half_width(*f, None, extrapolated)?;
            Some(Band {
                figure: *f,
                predicted: v,
                low: v * (-w).exp(),
                high: v * w.exp(),
                coverage_target: COVERAGE_TARGET,
                level: level(*f),
            })
        })
        .collect()
}

/// The band a truth's own prediction would have carried had its situation not been
/// measured: made from the other situations alone, withheld (`None`) where they never
/// went as far outside their fits as it did. The errors of every kind of change are
/// pooled, as the printed band pools them: a situation's changes of a kind the others
/// never made (kv-too-small's cache sizes) are held to the band the others' changes make,
/// which is the question a new situation asks of it.
pub fn held_out_half_width(truth: &Truth, figure: Figure) -> Option<f64> {
    held_out_half_width_at(truth, figure, level(figure))
}

fn held_out_half_width_at(truth: &Truth, figure: Figure, level: f64) -> Option<f64> {
    if truth.extrapolation > farthest_extrapolation(Some(truth.situation)) + 1e-9 {
        return None;
    }
    half_width_at(
        figure,
        Some(truth.situation),
        truth.extrapolation > 1.0,
        level,
    )
}

/// How the calibration held on truths it did not see, at the figure's [`level`]: see
/// [`held_out_coverage_at`].
pub fn held_out_coverage(figure: Figure) -> (usize, usize, Option<f64>) {
    held_out_coverage_at(figure, level(figure))
}

/// How the calibration held on truths it did not see: for `figure`, leaving each
/// situation out in turn, the truths inside the band the others made at `level`, the
/// truths asked (a withheld band holds none of them), and the median half-width (`ln`
/// units) of the bands given.
pub fn held_out_coverage_at(figure: Figure, level: f64) -> (usize, usize, Option<f64>) {
    let (mut inside, mut asked, mut widths) = (0, 0, Vec::new());
    for t in TRUTHS {
        let Some(e) = t.log_error[figure.index()] else {
            continue;
        };
        asked += 1;
        if let Some(w) = held_out_half_width_at(t, figure, level) {
            widths.push(w);
            if e.abs() <= w {
                inside += 1;
            }
        }
    }
    widths.sort_by(f64::total_cmp);
    (inside, asked, widths.get(widths.len() / 2).copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Split conformal's order: of n sizes, the ⌈0.8 (n + 1)⌉-th smallest. Of 4 it is
    /// the 4th (⌈4.0⌉); of 9 the 8th (⌈8.0⌉); of 3 none (⌈3.2⌉ = 4 > 3).
    #[test]
    fn the_band_is_the_conformal_order_statistic_or_none() {
        assert_eq!(conformal(vec![0.4, 0.1, 0.3, 0.2]), Some(0.4));
        let nine: Vec<f64> = (1..=9).map(f64::from).collect();
        assert_eq!(conformal(nine), Some(8.0));
        assert_eq!(conformal(vec![0.1, 0.2, 0.3]), None);
        // At 0.9 of 9: the ⌈9.0⌉-th, the largest; at 0.95 of 9: ⌈9.5⌉ = 10 > 9, none.
        let nine: Vec<f64> = (1..=9).map(f64::from).collect();
        assert_eq!(conformal_at(nine.clone(), 0.9), Some(9.0));
        assert_eq!(conformal_at(nine, 0.95), None);
    }

    /// Each figure's level is the lowest of the levels whose held-out coverage reaches
    /// the target, so every level below it fell short on the truths left out.
    #[test]
    fn a_figures_level_is_the_lowest_that_held_its_held_out_truths() {
        let reaches = |f: Figure, l: f64| {
            let (inside, asked, _) = held_out_coverage_at(f, l);
            inside as f64 >= COVERAGE_TARGET * asked as f64
        };
        for f in Figure::ALL {
            let chosen = level(f);
            assert!(LEVELS.contains(&chosen));
            for lower in LEVELS.iter().filter(|l| **l < chosen) {
                assert!(!reaches(f, *lower), "{f:?} at {lower}");
            }
            if chosen < LEVELS[LEVELS.len() - 1] {
                assert!(reaches(f, chosen), "{f:?} at {chosen}");
            }
        }
    }

    /// The envelope: inside within half a request of what the run ran; twice its peak is
    /// a factor 2, half its lowest a factor 2.
    #[test]
    fn a_prediction_outside_the_running_counts_seen_is_extrapolated_by_a_factor() {
        let e = Envelope {
            running_low: 4.0,
            running_high: 8.0,
        };
        assert_eq!(e.factor(8.0), 1.0);
        assert_eq!(e.factor(4.0), 1.0);
        assert_eq!(e.factor(16.0), 2.0);
        assert_eq!(e.factor(2.0), 2.0);
    }
}
