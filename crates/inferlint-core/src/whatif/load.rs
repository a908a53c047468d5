//! The run's load as the replay sends it, and what the run's own records measured: each
//! request's send time and served lengths from the load tool's per-request records, how
//! the tool sent them (a closed loop, a rate, a limit), and each request's decode for the
//! per-step fit.

use inferlint_sched::fit::Decode;
use inferlint_sched::replay::{Arrivals, Job, JobLife, Workload};

use crate::client::{ClientAccount, ClientRequest};

/// The load, the decodes and the records' own lives.
#[derive(Debug, Clone)]
pub struct RunLoad {
    /// What the replay sends.
    pub workload: Workload,
    /// The records as lives on the same clock as the replay's (0 at the first send).
    pub lives: Vec<JobLife>,
    /// The request rate the tool was asked for, when it had one.
    pub rate: Option<f64>,
    /// Records left out, with why.
    pub left_out: Vec<String>,
}

/// A request's prompt as served: the server's usage where the tool kept it apart, else
/// the tool's count.
fn prompt_of(r: &ClientRequest) -> Option<u64> {
    r.server_prompt_tokens.get().or(r.prompt_tokens.get())
}

fn output_of(r: &ClientRequest) -> Option<u64> {
    r.server_output_tokens.get().or(r.output_tokens.get())
}

/// The load of the account's records, or why there is none to replay.
pub fn read(account: &ClientAccount) -> Result<RunLoad, String> {
    let tool = account.tool.name();
    if account.requests.is_empty() {
        return Err(format!(
            "{tool}'s file keeps no per-request records: the replay needs each request's send time and lengths"
        ));
    }
    let mut rows: Vec<(f64, &ClientRequest)> = Vec::new();
    let (mut no_time, mut no_length) = (0usize, 0usize);
    for r in &account.requests {
        let Some(sent) = r.sent_s.get().filter(|t| t.is_finite()) else {
            no_time += 1;
            continue;
        };
        if prompt_of(r).is_none() {
            no_length += 1;
            continue;
        }
        rows.push((sent, r));
    }
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
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    let t0 = rows[0].0;
    let mut jobs = Vec::with_capacity(rows.len());
    let mut lives = Vec::with_capacity(rows.len());
    let mut no_output = 0usize;
    for (sent, r) in &rows {
        let completed = r.completed();
        // A completed request generated what it was served; one that failed is sent with
        // the length it asked for, so that the server sees the same load.
        let output = if completed {
            output_of(r)
        } else {
            r.asked_output_tokens
                .get()
                .or(account.advertised.output_tokens.map(|o| o.round() as u64))
        };
        let Some(output) = output.filter(|o| *o > 0) else {
            no_output += 1;
            continue;
        };
        let prompt = prompt_of(r).unwrap_or(0);
        jobs.push(Job {
            due_s: sent - t0,
            prompt,
            output,
            cached: 0,
        });
        let at = |t: Option<f64>| t.map(|t| t - t0);
        lives.push(JobLife {
            sent_s: sent - t0,
            scheduled_s: None,
            first_token_s: at(r.first_token_at()).filter(|_| completed),
            end_s: at(r.end_at()).filter(|_| completed),
            refused: !completed,
            evictions: 0,
            prompt,
            output,
        });
    }
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
        lives,
        rate,
        left_out,
    })
}

/// Each completed request's decode: its steps, the requests decoding beside it on average
/// (every record's first-token-to-end span, which counts a preempted request as running
/// while it waited), and the prompt tokens of requests whose first token came during it
/// (their prefill ran then).
pub fn decodes(lives: &[JobLife]) -> Vec<Decode> {
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
                crate::fmt::g(f)
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
                crate::fmt::g(r),
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
            lives: Vec::new(),
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
        let d = decodes(&lives);
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
