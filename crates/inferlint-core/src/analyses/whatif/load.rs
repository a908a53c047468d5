//! The run's load as the replay sends it, and what the run's own records measured: each
//! request's send time and served lengths from the load tool's per-request records, how
//! the tool sent them (a closed loop, a rate, a limit), and each request's decode for the
//! per-step fit.

use inferlint_sched::fit::Decode;
use inferlint_sched::replay::{Arrivals, Job, JobLife, Workload};

use crate::model::client::{ClientAccount, Keep, OptF64, ReplayRecord, ReplayRecords};

/// What a record measured of its request, beside its job in the workload (which holds its
/// send time and lengths): 24 bytes, where its whole life takes 80.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// When its first token came, where it completed.
    pub first_token_s: OptF64,
    /// When it ended, where it completed.
    pub end_s: OptF64,
    /// Whether it came back whole.
    pub completed: bool,
}

/// The load, the decodes and the records' own lives.
#[derive(Debug, Clone)]
pub struct RunLoad {
    /// What the replay sends.
    pub workload: Workload,
    /// What each record measured, beside its job in `workload` (empty where the load was
    /// made from the tool's settings): [`RunLoad::life`] is its life on the same clock as
    /// the replay's (0 at the first send).
    pub measured: Vec<Measured>,
    /// The request rate the tool was asked for, when it had one.
    pub rate: Option<f64>,
    /// Records left out, with why.
    pub left_out: Vec<String>,
}

/// A record's life on the replay's clock: its job's send time and lengths, and what it
/// measured.
pub fn life(j: &Job, m: &Measured) -> JobLife {
    JobLife {
        sent_s: j.due_s,
        scheduled_s: None,
        first_token_s: m.first_token_s.get(),
        end_s: m.end_s.get(),
        refused: !m.completed,
        evictions: 0,
        prompt: j.prompt,
        output: j.output,
    }
}

impl RunLoad {
    /// The record of job `job` as a life.
    pub fn life(&self, job: usize) -> JobLife {
        life(&self.workload.jobs[job], &self.measured[job])
    }

    /// The records as lives, in the workload's order.
    pub fn lives(&self) -> impl Iterator<Item = JobLife> + Clone + '_ {
        (0..self.measured.len()).map(|job| self.life(job))
    }

    /// Whether the load has the records' own lives.
    pub fn has_lives(&self) -> bool {
        !self.measured.is_empty()
    }
}

/// The load of the account's records, or why there is none to replay. The records are
/// the account's own, as [`ClientRequest`](crate::model::client::ClientRequest)s or kept for the
/// replay ([`Keep::ForReplay`]); `taken` are the latter where the caller took them out of
/// the account, to be dropped here once the load is made.
pub fn read(account: &ClientAccount, taken: Option<Vec<ReplayRecord>>) -> Result<RunLoad, String> {
    let tool = account.tool.name();
    if account.record_count() == 0 {
        return Err(format!(
            "{tool}'s file keeps no per-request records: the replay needs each request's send time and lengths"
        ));
    }
    let (mut rows, no_time, no_length) = match (account.keep, taken) {
        (_, Some(rows)) => (
            rows,
            account.replay.no_send_time,
            account.replay.no_prompt_length,
        ),
        (Keep::ForReplay, None) => (
            account.replay.rows.clone(),
            account.replay.no_send_time,
            account.replay.no_prompt_length,
        ),
        (Keep::Records, None) => {
            let mut kept = ReplayRecords::default();
            for r in &account.requests {
                kept.fold(r);
            }
            (kept.rows, kept.no_send_time, kept.no_prompt_length)
        }
    };
    if rows.is_empty() {
        return Err(format!(
            "{tool}'s records carry no send time and prompt length together: nothing to replay"
        ));
    }
    let mut left_out = Vec::new();
    if no_time > 0 {
        left_out.push(format!("{no_time} records with no send time"));
    }
    if no_length > 0 {
        left_out.push(format!("{no_length} records with no prompt length"));
    }
    // Sending order; a stable sort keeps the tool's order among equal times.
    rows.sort_by(|a, b| a.sent_s.total_cmp(&b.sent_s));
    let t0 = rows[0].sent_s;
    let mut jobs = Vec::with_capacity(rows.len());
    let mut measured = Vec::with_capacity(rows.len());
    let mut no_output = 0usize;
    let advertised = account.advertised.output_tokens.map(|o| o.round() as u64);
    for r in &rows {
        // A completed request generated what it was served; one that failed is sent with
        // the length it asked for, so that the server sees the same load.
        let output = if r.completed {
            r.output.get()
        } else {
            r.output.get().or(advertised)
        };
        let Some(output) = output.filter(|o| *o > 0) else {
            no_output += 1;
            continue;
        };
        jobs.push(Job {
            due_s: r.sent_s - t0,
            prompt: r.prompt,
            output,
            cached: 0,
        });
        let at = |t: OptF64| OptF64::from(t.get().map(|t| t - t0));
        measured.push(Measured {
            first_token_s: at(r.first_token_s),
            end_s: at(r.end_s),
            completed: r.completed,
        });
    }
    drop(rows);
    if no_output > 0 {
        left_out.push(format!("{no_output} records with no output length"));
    }
    let (rate, concurrency) = stated_pace(account);
    let arrivals = match (rate, concurrency) {
        (None, Some(c)) => Arrivals::Closed { concurrency: c },
        (_, c) => Arrivals::Timed { max_outstanding: c },
    };
    Ok(RunLoad {
        workload: Workload {
            jobs,
            arrivals,
            max_model_len: None,
            front_s: 0.0,
        },
        measured,
        rate,
        left_out,
    })
}

/// Each completed request's decode: its steps, the requests decoding beside it on average
/// (every record's first-token-to-end span, which counts a preempted request as running
/// while it waited), and the prompt tokens of requests whose first token came during it
/// (their prefill ran then). `lives` is gone through twice and never held.
pub fn decodes(lives: impl Iterator<Item = JobLife> + Clone) -> Vec<Decode> {
    let spans = lives
        .clone()
        .filter(|l| l.completed())
        .filter_map(|l| Some((l.first_token_s?, l.end_s?, l.prompt)))
        .filter(|(a, b, _)| b >= a);
    // The first tokens in time order, each with its prompt tokens (then with those of it
    // and every one before it), and the ends in time order.
    let mut firsts: Vec<(f64, u64)> = spans.clone().map(|(a, _, p)| (a, p)).collect();
    firsts.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut sum = 0u64;
    for (_, p) in &mut firsts {
        sum += *p;
        *p = sum;
    }
    let mut ends: Vec<f64> = spans.map(|(_, b, _)| b).collect();
    ends.sort_by(f64::total_cmp);
    // The running count integrated over time, as breakpoints: +1 at each first token, -1
    // at each end, an end before a first token at the same time. `areas[k]` is the area
    // up to the k-th breakpoint in that order, which is the two lists merged.
    let mut areas = Vec::with_capacity(firsts.len() + ends.len());
    let (mut area, mut count, mut last) = (0.0f64, 0i64, f64::NEG_INFINITY);
    let (mut i, mut j) = (0, 0);
    while i < firsts.len() || j < ends.len() {
        let end_first =
            j < ends.len() && (i == firsts.len() || ends[j].total_cmp(&firsts[i].0).is_le());
        let (t, d) = if end_first {
            j += 1;
            (ends[j - 1], -1)
        } else {
            i += 1;
            (firsts[i - 1].0, 1)
        };
        if last.is_finite() {
            area += count as f64 * (t - last);
        }
        count += d;
        last = t;
        areas.push(area);
    }
    // The area up to `t`: that of the last breakpoint at or before it, and the count after
    // that breakpoint over the rest.
    let area_at = |t: f64| -> f64 {
        let started = firsts.partition_point(|(x, _)| *x <= t);
        let ended = ends.partition_point(|x| *x <= t);
        if started + ended == 0 {
            return 0.0;
        }
        // The later of the last first token and the last end in the merged order (the
        // first token, at the same time).
        let x = match (started.checked_sub(1), ended.checked_sub(1)) {
            (Some(s), Some(e)) if ends[e].total_cmp(&firsts[s].0).is_gt() => ends[e],
            (Some(s), _) => firsts[s].0,
            (None, Some(e)) => ends[e],
            (None, None) => unreachable!("a breakpoint at or before t"),
        };
        let c = started as i64 - ended as i64;
        areas[started + ended - 1] + c as f64 * (t - x)
    };
    let prompts_before = |k: usize| if k == 0 { 0 } else { firsts[k - 1].1 };
    let prompts_between = |a: f64, b: f64| -> u64 {
        let lo = firsts.partition_point(|(t, _)| *t <= a);
        let hi = firsts.partition_point(|(t, _)| *t <= b);
        prompts_before(hi) - prompts_before(lo.min(hi))
    };
    lives
        .filter(|l| l.completed() && l.output >= 2)
        .filter_map(|l| {
            let (a, b) = (l.first_token_s?, l.end_s?);
            let seconds = b - a;
            (seconds > 0.0).then(|| Decode {
                steps: (l.output - 1) as f64,
                mean_running: (area_at(b) - area_at(a)) / seconds,
                prefill_tokens: prompts_between(a, b) as f64,
                seconds,
            })
        })
        .collect()
}

/// The load of a result file that kept no per-request records, from what it and the
/// server did keep: the requests sent, the concurrency and rate the tool was given, and
/// each request's lengths as the server's counters served them (`served`: its prompt and
/// generation tokens and the requests it finished, between the snapshots), else the
/// tool's totals. Every request is replayed at the mean lengths: the replay cannot know
/// how they spread. What it assumed is returned in words. A rate's send times are left
/// at 0 for the caller to draw.
pub fn from_settings(
    account: &ClientAccount,
    served: Option<(f64, f64, f64)>,
) -> Result<(RunLoad, Vec<String>), String> {
    let tool = account.tool.name();
    let no_records = format!("{tool}'s file keeps no per-request records (send time and lengths)");
    let completed = account.completed.filter(|c| *c > 0).ok_or_else(|| {
        format!("{no_records}, and no count of completed requests to replay it from")
    })?;
    let sent = account
        .sent
        .filter(|s| *s >= completed)
        .unwrap_or(completed + account.failed.unwrap_or(0).max(0));
    let mut assumed = Vec::new();
    let per_request = |total: f64, count: f64| (total / count).round().max(0.0) as u64;
    let (prompt, output, from) = match served.filter(|(_, o, f)| *f > 0.0 && *o > 0.0) {
        Some((p, o, f)) => (
            per_request(p, f),
            per_request(o, f),
            format!(
                "the server's counters ({} requests finished)",
                crate::story::fmt::g(f)
            ),
        ),
        None => {
            let (Some(p), Some(o)) = (account.total_input_tokens, account.total_output_tokens)
            else {
                return Err(format!(
                    "{no_records}, and neither the server's counters nor its totals give the lengths served"
                ));
            };
            (
                per_request(p as f64, completed as f64),
                per_request(o as f64, completed as f64),
                format!("{tool}'s totals"),
            )
        }
    };
    if output == 0 {
        return Err(format!(
            "{no_records}, and the lengths served give no output"
        ));
    }
    assumed.push(format!(
        "no per-request records: {sent} requests replayed, each of {prompt} prompt and {output} output tokens, the mean of {from}; how the lengths spread is not known"
    ));
    let (rate, concurrency) = stated_pace(account);
    let arrivals = match (rate, concurrency) {
        (None, Some(c)) => {
            assumed.push(format!(
                "sent {c} at a time in a closed loop, as the tool was set"
            ));
            Arrivals::Closed { concurrency: c }
        }
        (None, None) => {
            assumed.push("every request sent at once (no rate, no concurrency limit)".to_owned());
            Arrivals::Timed {
                max_outstanding: None,
            }
        }
        (Some(r), c) => {
            assumed.push(format!(
                "sent at {} requests/s, Poisson arrivals drawn again (seed 0){}",
                crate::story::fmt::g(r),
                c.map_or(String::new(), |c| format!(", at most {c} at a time"))
            ));
            Arrivals::Timed { max_outstanding: c }
        }
    };
    let jobs = vec![
        Job {
            due_s: 0.0,
            prompt,
            output,
            cached: 0,
        };
        sent as usize
    ];
    Ok((
        RunLoad {
            workload: Workload {
                jobs,
                arrivals,
                max_model_len: None,
                front_s: 0.0,
            },
            measured: Vec::new(),
            rate,
            left_out: Vec::new(),
        },
        assumed,
    ))
}

/// The request rate and the concurrency limit the load tool was set to, where it states
/// them: a rate that is a positive number, a limit of at least one.
fn stated_pace(account: &ClientAccount) -> (Option<f64>, Option<usize>) {
    let concurrency = account
        .max_concurrency
        .filter(|c| *c > 0)
        .and_then(|c| usize::try_from(c).ok());
    let rate = account.request_rate.filter(|r| r.is_finite() && *r > 0.0);
    (rate, concurrency)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn life(first: f64, end: f64, prompt: u64, output: u64) -> JobLife {
        JobLife {
            sent_s: 0.0,
            scheduled_s: None,
            first_token_s: Some(first),
            end_s: Some(end),
            refused: false,
            evictions: 0,
            prompt,
            output,
        }
    }

    /// `decodes` as it was before it stopped holding the lives and the integral's
    /// breakpoints: the one it must agree with.
    fn decodes_as_before(lives: &[JobLife]) -> Vec<Decode> {
        let spans: Vec<(f64, f64, u64)> = lives
            .iter()
            .filter(|l| l.completed())
            .filter_map(|l| Some((l.first_token_s?, l.end_s?, l.prompt)))
            .filter(|(a, b, _)| b >= a)
            .collect();
        // The running count integrated over time, as breakpoints: at each start +1, each end -1.
        let mut edges: Vec<(f64, i64)> = spans
            .iter()
            .flat_map(|(a, b, _)| [(*a, 1), (*b, -1)])
            .collect();
        edges.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        let mut integral = Vec::with_capacity(edges.len());
        let (mut area, mut count, mut last) = (0.0f64, 0i64, f64::NEG_INFINITY);
        for (t, d) in &edges {
            if last.is_finite() {
                area += count as f64 * (t - last);
            }
            count += d;
            last = *t;
            integral.push((*t, area, count));
        }
        let area_at = |t: f64| -> f64 {
            let i = integral.partition_point(|(x, _, _)| *x <= t);
            if i == 0 {
                return 0.0;
            }
            let (x, a, c) = integral[i - 1];
            a + c as f64 * (t - x)
        };
        let mut firsts: Vec<(f64, u64)> = spans.iter().map(|(a, _, p)| (*a, *p)).collect();
        firsts.sort_by(|x, y| x.0.total_cmp(&y.0));
        let mut prefix = vec![0u64; firsts.len() + 1];
        for (i, (_, p)) in firsts.iter().enumerate() {
            prefix[i + 1] = prefix[i] + p;
        }
        let prompts_between = |a: f64, b: f64| -> u64 {
            let lo = firsts.partition_point(|(t, _)| *t <= a);
            let hi = firsts.partition_point(|(t, _)| *t <= b);
            prefix[hi] - prefix[lo.min(hi)]
        };
        lives
            .iter()
            .filter(|l| l.completed() && l.output >= 2)
            .filter_map(|l| {
                let (a, b) = (l.first_token_s?, l.end_s?);
                let seconds = b - a;
                (seconds > 0.0).then(|| Decode {
                    steps: (l.output - 1) as f64,
                    mean_running: (area_at(b) - area_at(a)) / seconds,
                    prefill_tokens: prompts_between(a, b) as f64,
                    seconds,
                })
            })
            .collect()
    }

    /// On drawn lives, with first tokens and ends often at the same times (ties between
    /// starts, between ends, and of a start with an end), spans of no length, failed and
    /// unfinished records: each decode is the one the former code gave, to the bit.
    #[test]
    fn decodes_are_what_they_were_to_the_bit() {
        let mut state = 1u64;
        let mut draw = |n: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % n
        };
        for round in 0..200 {
            let n = 1 + draw(80);
            let grid = [0.25, 0.1, 0.037][round % 3];
            let lives: Vec<JobLife> = (0..n)
                .map(|_| {
                    let a = draw(40) as f64 * grid;
                    let b = a + draw(12) as f64 * grid;
                    let mut l = life(a, b, 1 + draw(100), 1 + draw(30));
                    match draw(10) {
                        0 => l.refused = true,
                        1 => l.end_s = None,
                        2 => l.first_token_s = None,
                        3 => l.end_s = Some(a - grid),
                        _ => {}
                    }
                    l
                })
                .collect();
            let now = decodes(lives.iter().copied());
            let before = decodes_as_before(&lives);
            assert_eq!(now.len(), before.len());
            for (x, y) in now.iter().zip(&before) {
                assert_eq!(
                    (
                        x.steps.to_bits(),
                        x.mean_running.to_bits(),
                        x.prefill_tokens.to_bits(),
                        x.seconds.to_bits()
                    ),
                    (
                        y.steps.to_bits(),
                        y.mean_running.to_bits(),
                        y.prefill_tokens.to_bits(),
                        y.seconds.to_bits()
                    ),
                    "{lives:?}"
                );
            }
        }
    }

    #[test]
    fn a_decode_counts_who_ran_beside_it_and_who_was_prefilled_meanwhile() {
        // A decodes over [0, 2]; B over [1, 3] (its first token inside A's span, so its
        // 100-token prompt was prefilled then); C over [5, 6], alone.
        // A: 2 s alone for 1 s and with B for 1 s -> 1.5 on average; B's prompt counted.
        // B: with A for 1 s, alone for 1 s -> 1.5; no first token inside (1, 3].
        let lives = [
            life(0.0, 2.0, 50, 11),
            life(1.0, 3.0, 100, 21),
            life(5.0, 6.0, 10, 2),
        ];
        let d = decodes(lives.iter().copied());
        assert_eq!(d.len(), 3);
        assert_eq!(
            (d[0].steps, d[0].mean_running, d[0].prefill_tokens),
            (10.0, 1.5, 100.0)
        );
        assert_eq!(
            (d[1].steps, d[1].mean_running, d[1].prefill_tokens),
            (20.0, 1.5, 0.0)
        );
        assert_eq!(
            (d[2].steps, d[2].mean_running, d[2].prefill_tokens),
            (1.0, 1.0, 0.0)
        );
    }
}
