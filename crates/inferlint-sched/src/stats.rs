//! The figures a replay is judged by, made the same way from the model's requests and
//! from the load tool's records, so that the two can be set side by side.

use serde::Serialize;

use crate::model::{EngineModel, StepCost};
use crate::replay::{replay_each, JobLife, Replayed, Totals, Workload};

/// The `q`-th percentile (0 to 100) of `values`, interpolated linearly between the two
/// nearest ranks: numpy's default, which `vllm bench serve` and most load tools use for
/// the figures they print. `None` for no values.
pub fn percentile(values: &[f64], q: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    percentile_of_sorted(&v, q)
}

/// [`percentile`] of values already in ascending order: the one formula every printed
/// percentile of the workspace is computed with.
pub fn percentile_of_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q / 100.0).clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64))
}

/// A run's figures: the load's latencies and throughput, and the server's evictions and
/// running count where known.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Requests that came back whole.
    pub completed: usize,
    /// Requests the server refused.
    pub refused: usize,
    /// Preemptions, retractions or pauses.
    pub evictions: Option<u64>,
    /// The most requests running at once.
    pub peak_running: Option<f64>,
    /// Requests running, averaged over the busy time.
    pub mean_running: Option<f64>,
    /// Seconds from the first send to the last end.
    pub duration_s: Option<f64>,
    /// Output tokens of the completed requests per second of `duration_s`.
    pub output_tok_s: Option<f64>,
    /// Time to first token, from the client's send: median and 99th percentile.
    pub ttft_p50_s: Option<f64>,
    /// See `ttft_p50_s`.
    pub ttft_p99_s: Option<f64>,
    /// Time per output token after the first: median and 99th percentile.
    pub tpot_p50_s: Option<f64>,
    /// See `tpot_p50_s`.
    pub tpot_p99_s: Option<f64>,
    /// Seconds from send to first scheduling (the server's queue), where known.
    pub queue_p50_s: Option<f64>,
    /// See `queue_p50_s`.
    pub queue_p99_s: Option<f64>,
}

/// The figures of requests' lives gathered one life at a time, in any order: what
/// [`Summary::of_lives`] makes of a list, for lives that are never all held at once (a
/// replay's, handed over as each request ends). Each figure is a count, a sum of whole
/// numbers, an extreme or a percentile of the sorted values, so the order the lives come
/// in changes none of them.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    completed: usize,
    refused: usize,
    ttft: Vec<f64>,
    tpot: Vec<f64>,
    queue: Vec<f64>,
    first_sent: Option<f64>,
    last_end: Option<f64>,
    output: u64,
}

impl Figures {
    /// One more life.
    pub fn add(&mut self, j: &JobLife) {
        if j.refused {
            self.refused += 1;
        }
        if !j.completed() {
            return;
        }
        self.completed += 1;
        if let Some(first) = j.first_token_s {
            self.ttft.push(first - j.sent_s);
        }
        if j.output >= 2 {
            if let (Some(end), Some(first)) = (j.end_s, j.first_token_s) {
                self.tpot.push((end - first) / (j.output - 1) as f64);
            }
        }
        if let Some(scheduled) = j.scheduled_s {
            self.queue.push(scheduled - j.sent_s);
        }
        self.first_sent = Some(match self.first_sent {
            Some(f) if f.total_cmp(&j.sent_s).is_le() => f,
            _ => j.sent_s,
        });
        if let Some(end) = j.end_s {
            self.last_end = Some(match self.last_end {
                Some(l) if l.total_cmp(&end).is_ge() => l,
                _ => end,
            });
        }
        self.output += j.output;
    }

    /// The figures: latencies from each completed life, throughput over the span from
    /// the first send to the last end.
    pub fn summary(&self) -> Summary {
        let duration = self
            .first_sent
            .zip(self.last_end)
            .map(|(a, b)| b - a)
            .filter(|d| *d > 0.0);
        Summary {
            completed: self.completed,
            refused: self.refused,
            evictions: None,
            peak_running: None,
            mean_running: None,
            duration_s: duration,
            output_tok_s: duration.map(|d| self.output as f64 / d),
            ttft_p50_s: percentile(&self.ttft, 50.0),
            ttft_p99_s: percentile(&self.ttft, 99.0),
            tpot_p50_s: percentile(&self.tpot, 50.0),
            tpot_p99_s: percentile(&self.tpot, 99.0),
            queue_p50_s: percentile(&self.queue, 50.0),
            queue_p99_s: percentile(&self.queue, 99.0),
        }
    }
}

impl Summary {
    /// The figures of requests' lives: latencies from each completed one, throughput over
    /// the span from the first send to the last end.
    pub fn of_lives(lives: &[JobLife]) -> Summary {
        let mut figures = Figures::default();
        for life in lives {
            figures.add(life);
        }
        figures.summary()
    }

    /// A replay's figures, with the server's side the model knows.
    pub fn of_replay(r: &Replayed) -> Summary {
        let mut figures = Figures::default();
        for life in &r.jobs {
            figures.add(life);
        }
        Summary::of_replay_totals(&figures, &r.totals)
    }

    /// [`Summary::of_replay`] of a replay whose lives were gathered as they ended
    /// ([`crate::replay::replay_each`]).
    pub fn of_replay_totals(figures: &Figures, totals: &Totals) -> Summary {
        Summary {
            evictions: Some(totals.evictions),
            peak_running: Some(totals.peak_running as f64),
            mean_running: Some(totals.mean_running),
            ..figures.summary()
        }
    }
}

/// The figures of a replay ([`Summary::of_replay`]) of
/// [`replay_each`], each life folded in as it ends
/// rather than all held: what a million requests replayed several times needs.
pub fn replay_summary(model: EngineModel, cost: StepCost, workload: &Workload) -> Summary {
    let mut figures = Figures::default();
    let totals = replay_each(model, cost, workload, &mut |_, life| figures.add(life));
    Summary::of_replay_totals(&figures, &totals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_between_ranks_as_numpy_does() {
        // numpy.percentile([1, 2, 3, 4], 50) == 2.5; 99 -> 3 + 0.97 * (4 - 3).
        assert_eq!(percentile(&[4.0, 1.0, 3.0, 2.0], 50.0), Some(2.5));
        let p99 = percentile(&[1.0, 2.0, 3.0, 4.0], 99.0).unwrap();
        assert!((p99 - 3.97).abs() < 1e-12);
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn the_figures_count_completed_requests_only() {
        let life = |sent: f64, first: f64, end: f64, output: u64| JobLife {
            sent_s: sent,
            scheduled_s: None,
            first_token_s: Some(first),
            end_s: Some(end),
            refused: false,
            evictions: 0,
            prompt: 10,
            output,
        };
        let mut refused = life(0.5, 0.5, 0.5, 5);
        refused.refused = true;
        // Two requests: TTFTs 0.1 and 0.3 s; TPOTs (1.1 - 0.1) / 10 = 0.1 and
        // (2.3 - 0.3) / 10 = 0.2 s; 22 tokens over the 2.3 s from 0 to the last end.
        let s = Summary::of_lives(&[life(0.0, 0.1, 1.1, 11), refused, life(0.0, 0.3, 2.3, 11)]);
        assert_eq!((s.completed, s.refused), (2, 1));
        assert!((s.ttft_p50_s.unwrap() - 0.2).abs() < 1e-12);
        assert!((s.tpot_p50_s.unwrap() - 0.15).abs() < 1e-12);
        assert!((s.output_tok_s.unwrap() - 22.0 / 2.3).abs() < 1e-12);
        assert_eq!(s.queue_p50_s, None);
    }

    /// Lives gathered one at a time, in any order, give the list's figures to the bit.
    #[test]
    fn figures_gathered_in_any_order_are_those_of_the_list() {
        let lives: Vec<JobLife> = (0..50u64)
            .map(|i| {
                let sent = (i * 7 % 13) as f64 * 0.1;
                JobLife {
                    sent_s: sent,
                    scheduled_s: (i % 3 != 0).then_some(sent + 0.01 * i as f64),
                    first_token_s: (i % 5 != 0).then_some(sent + 0.3 / (i + 1) as f64),
                    end_s: (i % 7 != 0).then_some(sent + 1.0 + (i % 4) as f64 * 0.25),
                    refused: i % 11 == 0,
                    evictions: 0,
                    prompt: 10,
                    output: i % 6,
                }
            })
            .collect();
        let whole = Summary::of_lives(&lives);
        for order in [
            lives.iter().rev().collect::<Vec<_>>(),
            lives
                .iter()
                .step_by(2)
                .chain(lives.iter().skip(1).step_by(2))
                .collect(),
        ] {
            let mut f = Figures::default();
            for life in order {
                f.add(life);
            }
            assert_eq!(f.summary(), whole);
        }
        assert!(whole.completed > 10 && whole.refused > 0 && whole.tpot_p50_s.is_some());
    }
}
