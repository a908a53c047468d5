//! What only each engine step shows (`steps.jsonl`, docs/steps.md): T29 (the scheduler
//! stalled while requests waited), T30 (prefills scheduled beside decodes slowed them),
//! T31 (each preemption at its step, against the server's counter).

use serde_json::json;

use crate::engine::EngineDescriptor;
use crate::judging::checks::counters::counter_delta;
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::steps::{ms_bin_floor, Steps, MIN_STRETCH_S};
use crate::model::Snapshot;
use crate::story::fmt;

/// T29's threshold, as a multiple of the slowest 1% of steps' time: an engine whose own
/// steps are long pauses longer between them without stalling.
pub const STALL_STEP_MULTIPLE: f64 = 20.0;

/// T30 warns when the steps that carried a prefill beside decodes ran at least this many
/// times as long as decode-only steps of a similar decode batch: each decode in them
/// waited half as long again for its token.
pub const PREFILL_SLOWDOWN: f64 = 1.5;

/// T31: preemptions within this long of the first of a run of them, and within
/// [`BURST_STEPS`] steps of it, are one burst, which the recording (a sample every
/// 250 ms) shows as one move of its counter.
pub const BURST_WINDOW_S: f64 = 0.25;

/// T31: a burst's preemptions lie within this many steps of its first (a few steps: the
/// cache ran out at one moment, not steadily).
pub const BURST_STEPS: u64 = 8;

/// When `t` was, on the wall clock and in the step file (to the millisecond).
fn at(steps: &Steps, t: f64) -> String {
    let into = format!("{} s into the step file", fmt::g(round_to(t, 3)));
    match fmt::utc(steps.wall(t)) {
        Some(utc) => format!("{utc}, {into}"),
        None => into,
    }
}

fn round_to(x: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (x * scale).round() / scale
}

fn count(n: u64) -> String {
    fmt::thousands(i64::try_from(n).unwrap_or(i64::MAX))
}

/// T29: requests waiting or deferred while no step ran, or while the steps that ran
/// admitted and generated nothing, for longer than the threshold: the larger of
/// [`MIN_STRETCH_S`] and [`STALL_STEP_MULTIPLE`] times the slowest 1% of the steps' time.
pub fn scheduler_stall(steps: &Steps) -> CheckResult {
    let t = Tripwire::T29;
    if steps.steps == 0 {
        return CheckResult::new(t, Status::Unknown, "the step file holds no step")
            .with("steps", 0);
    }
    let p99_ms = steps.step_ms_p99();
    let threshold = p99_ms
        .map(|ms| ms / 1e3 * STALL_STEP_MULTIPLE)
        .unwrap_or(0.0)
        .max(MIN_STRETCH_S);
    let over: Vec<_> = steps
        .stretches
        .iter()
        .filter(|s| s.seconds() >= threshold)
        .collect();
    let longest = over
        .iter()
        .copied()
        .max_by(|a, b| a.seconds().total_cmp(&b.seconds()));
    let base = |r: CheckResult| {
        r.with("steps", steps.steps)
            .with("queued_steps", steps.queued_steps)
            .with("threshold_s", round_to(threshold, 3))
            .with("dropped_steps", steps.dropped)
    };
    let Some(longest) = longest else {
        let message = if steps.queued_steps == 0 {
            format!(
                "no request waited in any of the {} steps",
                count(steps.steps)
            )
        } else {
            format!(
                "requests waited in {} of {} steps, and a step that admitted or generated came within {} s every time",
                count(steps.queued_steps),
                count(steps.steps),
                fmt::g(threshold)
            )
        };
        return base(CheckResult::new(t, Status::Pass, message)).with("stalls", 0);
    };
    let what = match (longest.waiting, longest.deferred) {
        (w, 0) => format!("{w} waiting"),
        (0, d) => format!("{d} deferred"),
        (w, d) => format!("{w} waiting and {d} deferred"),
    };
    let how = if longest.idle_steps == 0 {
        "no step ran".to_owned()
    } else {
        format!(
            "{} steps ran and admitted or generated nothing",
            count(longest.idle_steps)
        )
    };
    let ended = if steps.last_t.is_some_and(|l| l <= longest.to) {
        ", to the file's end"
    } else {
        ""
    };
    base(CheckResult::new(
        t,
        Status::Fail,
        format!(
            "requests waited {} s while {how}: from {}{ended}, {what} at most; {} such stretch{} of {} s or more",
            fmt::g(round_to(longest.seconds(), 3)),
            at(steps, longest.from),
            over.len(),
            if over.len() == 1 { "" } else { "es" },
            fmt::g(threshold)
        ),
    ))
    .with("stalls", over.len())
    .with("longest_stall_s", round_to(longest.seconds(), 3))
    .with("stall_from_wall", round_to(steps.wall(longest.from), 3))
    .with("waiting", longest.waiting)
    .with("deferred", longest.deferred)
    .with("idle_steps", longest.idle_steps)
}

/// T30: the decode steps that carried prefill tokens beside them against decode-only
/// steps of a similar decode batch, and the share of the slowest 1% of decode steps (at
/// least one; steps of one 2% time bin are not parted) that carried a prefill.
pub fn prefill_stalls_decode(steps: &Steps) -> CheckResult {
    let t = Tripwire::T30;
    if steps.detailed == 0 {
        return CheckResult::new(
            t,
            Status::Unknown,
            "the step file gives no step's batch composition: the server ran without --enable-logging-iteration-details",
        )
        .with("steps", steps.steps);
    }
    let (mut mixed, mut pure) = (0u64, 0u64);
    let (mut mixed_ms, mut expected_ms) = (0.0, 0.0);
    for b in steps.mix.values() {
        mixed += b.mixed;
        pure += b.pure;
        if b.mixed > 0 && b.pure > 0 {
            mixed_ms += b.mixed_ms;
            expected_ms += b.mixed as f64 * b.pure_ms / b.pure as f64;
        }
    }
    if mixed + pure == 0 {
        return CheckResult::new(t, Status::Unknown, "no step of the file decoded")
            .with("steps", steps.steps);
    }
    // The slowest 1% (at least one step): whole bins from the top down until they hold
    // that many; the last bin's lower edge is the p99 step time.
    let total = mixed + pure;
    let wanted = total.div_ceil(100).max(1);
    let (mut tail, mut tail_mixed, mut p99_bin) = (0u64, 0u64, None);
    for (bin, (n, m)) in steps.ms_hist.iter().rev() {
        if tail >= wanted {
            break;
        }
        tail += n;
        tail_mixed += m;
        p99_bin = Some(*bin);
    }
    let Some(p99_bin) = p99_bin else {
        return CheckResult::new(t, Status::Unknown, "no decode step gave its time");
    };
    let p99_ms = ms_bin_floor(p99_bin);
    let slowdown = (expected_ms > 0.0).then(|| mixed_ms / expected_ms);
    let evidence = |r: CheckResult| {
        r.with("decode_steps", mixed + pure)
            .with("prefill_beside_decode_steps", mixed)
            .with("decode_only_steps", pure)
            .with("slowdown", slowdown.map(|s| round_to(s, 3)))
            .with("p99_step_ms", round_to(p99_ms, 3))
            .with("tail_steps", tail)
            .with("tail_with_prefill", tail_mixed)
    };
    if mixed == 0 {
        return evidence(CheckResult::new(
            t,
            Status::Pass,
            format!(
                "no prefill ran beside decodes in {} decode steps",
                count(pure)
            ),
        ));
    }
    let tail_words = format!(
        "{} of the {} slowest decode steps (the slowest 1%, {} ms or more) carried a prefill",
        count(tail_mixed),
        count(tail),
        fmt::g(round_to(p99_ms, 2))
    );
    let most = tail_mixed * 2 > tail;
    let Some(slowdown) = slowdown else {
        let status = if most { Status::Unknown } else { Status::Pass };
        return evidence(CheckResult::new(
            t,
            status,
            format!("{tail_words}; no decode-only step had a decode batch like theirs to compare them with"),
        ));
    };
    let slower = format!(
        "the {} decode steps with a prefill beside ran {}x as long as decode-only steps of a similar decode batch",
        count(mixed),
        fmt::g(round_to(slowdown, 2))
    );
    let status = if most && slowdown >= PREFILL_SLOWDOWN {
        Status::Warn
    } else {
        Status::Pass
    };
    evidence(CheckResult::new(
        t,
        status,
        format!("{slower}; {tail_words}"),
    ))
}

/// T31: each step's preemptions between the readings (the whole file without them),
/// summed against the server's counter, where and when they happened, and the bursts
/// the 4 Hz recording could not resolve.
pub fn preemption_located(
    steps: &Steps,
    engine: &EngineDescriptor,
    readings: Option<(&Snapshot, &Snapshot)>,
) -> CheckResult {
    let t = Tripwire::T31;
    if steps.pre_steps == 0 {
        return CheckResult::new(
            t,
            Status::Unknown,
            "the step file gives no step's preemptions (pre): the server's iteration stats were not read",
        )
        .with("steps", steps.steps);
    }
    // The readings' span on the step file's clock: the host's monotonic clock where both
    // readings give it, else their wall clock.
    let window = readings.and_then(|(b, a)| {
        let mono = b
            .t_mono_ns
            .zip(a.t_mono_ns)
            .map(|(b, a)| (steps.t_of_mono(b), steps.t_of_mono(a)));
        let wall = b
            .t_wall
            .zip(a.t_wall)
            .map(|(b, a)| (b - steps.anchor.t_wall, a - steps.anchor.t_wall));
        mono.or(wall).filter(|(b, a)| a > b)
    });
    let within = |x: f64| window.is_none_or(|(b, a)| x >= b && x <= a);
    let kept: Vec<_> = steps.preemptions.iter().filter(|p| within(p.t)).collect();
    let located: u64 = kept.iter().map(|p| p.n).sum();
    // Past the bound on kept steps, some preemptions or gaps were counted, not kept.
    let kept_total: u64 = steps.preemptions.iter().map(|p| p.n).sum();
    let overflowed = kept_total != steps.preempted || steps.gaps.len() as u64 != steps.gap_lines;
    let dropped: u64 = steps
        .gaps
        .iter()
        .filter(|g| within(g.t))
        .map(|g| g.steps)
        .sum();
    let counter = readings.and_then(|(b, a)| {
        let name = engine.preemption_counter?;
        Some((name, counter_delta(engine, b, a, name)?))
    });
    // Bursts: preemptions within BURST_STEPS steps and BURST_WINDOW_S of the first of a
    // run of them.
    let mut bursts: Vec<(usize, usize, u64)> = Vec::new();
    let mut k = 0;
    while k < kept.len() {
        let mut end = k;
        let mut n = kept[k].n;
        while end + 1 < kept.len()
            && kept[end + 1].t - kept[k].t <= BURST_WINDOW_S
            && kept[end + 1].step - kept[k].step <= BURST_STEPS
        {
            end += 1;
            n += kept[end].n;
        }
        if n >= 2 {
            bursts.push((k, end, n));
        }
        k = end + 1;
    }
    let burst_evidence: Vec<_> = bursts
        .iter()
        .take(64)
        .map(|&(from, to, n)| {
            json!({
                "preempted": n,
                "from_step": kept[from].step,
                "to_step": kept[to].step,
                "t_wall": round_to(steps.wall(kept[from].t), 3),
                "span_ms": round_to((kept[to].t - kept[from].t) * 1e3, 1),
            })
        })
        .collect();
    let at_evidence: Vec<_> = kept
        .iter()
        .take(64)
        .map(|p| json!({"step": p.step, "i": p.i, "t_wall": round_to(steps.wall(p.t), 3), "preempted": p.n}))
        .collect();
    let scope = if window.is_some() {
        "between the readings"
    } else {
        "in the step file"
    };
    let against = match counter {
        Some((name, moved)) if (moved - located as f64).abs() < 0.5 => {
            format!(" ({name} moved {}: equal)", fmt::g(moved))
        }
        Some((name, moved)) => format!(
            " ({name} moved {}: {} {} than the steps say)",
            fmt::g(moved),
            fmt::g((moved - located as f64).abs()),
            if moved > located as f64 {
                "more"
            } else {
                "fewer"
            }
        ),
        None => String::new(),
    };
    let result = |status, message: String| {
        CheckResult::new(t, status, message)
            .with("preempted", located)
            .with("preempting_steps", kept.len())
            .with("counter_moved", counter.map(|(_, m)| m))
            .with("dropped_steps", dropped)
            .with("bursts", burst_evidence.clone())
            .with("preempted_at", at_evidence.clone())
    };
    if dropped > 0 || overflowed {
        return result(
            Status::Unknown,
            format!(
                "{} steps {scope} were dropped by the step plugin (gap lines): preemptions among them cannot be located; {located} located{against}",
                count(dropped)
            ),
        );
    }
    let counter_moved = counter.map_or(0.0, |(_, m)| m);
    if located == 0 && counter_moved < 0.5 {
        return result(
            Status::Pass,
            format!("no step preempted a request {scope}{against}"),
        );
    }
    if located == 0 {
        return result(
            Status::Fail,
            format!("no step line says it preempted{against}"),
        );
    }
    let (first, last) = (kept[0], kept[kept.len() - 1]);
    let mut message = format!(
        "{located} requests preempted in {} steps {scope}{against}, the first at {} (step {}), the last at {} (step {})",
        kept.len(),
        at(steps, first.t),
        first.step,
        at(steps, last.t),
        last.step
    );
    if !bursts.is_empty() {
        let shown: Vec<String> = bursts
            .iter()
            .take(3)
            .map(|&(from, to, n)| {
                if from == to {
                    format!("{n} in step {}", kept[from].step)
                } else {
                    format!(
                        "{n} in steps {} to {} within {} ms",
                        kept[from].step,
                        kept[to].step,
                        fmt::g(round_to((kept[to].t - kept[from].t) * 1e3, 1))
                    )
                }
            })
            .collect();
        message.push_str(&format!(
            "; {} burst{} (within {BURST_STEPS} steps) the 4 Hz recording cannot resolve: {}",
            bursts.len(),
            if bursts.len() == 1 { "" } else { "s" },
            shown.join(", ")
        ));
    }
    result(Status::Fail, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judging::status::Status;
    use crate::model::steps::StepLine;
    use crate::model::traces::ClockAnchor;

    fn steps() -> Steps {
        Steps::new(
            "steps.jsonl".into(),
            ClockAnchor {
                t_wall: 1_796_524_949.0,
                t_mono_ns: 0,
            },
        )
    }

    /// A decode step of `dr` requests, with `pt` prefill tokens beside, of `ms`.
    fn decode(t: f64, dr: u64, pt: u64, ms: f64, w: u64) -> StepLine {
        StepLine {
            t,
            r: Some(dr),
            w: Some(w),
            d: Some(0),
            pr: Some(u64::from(pt > 0)),
            pt: Some(pt),
            dr: Some(dr),
            dt: Some(dr),
            ms: Some(ms),
            gen: Some(dr),
            prompt: Some(pt),
            pre: Some(0),
            ..StepLine::default()
        }
    }

    /// Four requests wait, and from 10 s no step runs until one at 25 s (its own step
    /// 5 ms): a stall of 15 s, far over the 2 s floor (the steps' p99 is 5 ms, 20 times
    /// which is 0.1 s). The same steps without the hole pass: every waiting step
    /// generated.
    #[test]
    fn requests_waiting_with_no_step_for_15_s_is_a_stall() {
        let mut s = steps();
        for k in 0..100 {
            s.step(&decode(k as f64 * 0.1, 4, 0, 5.0, 4));
        }
        s.step(&decode(25.0, 4, 0, 5.0, 4));
        s.step(&decode(25.01, 4, 0, 5.0, 0));
        s.finish();
        let r = scheduler_stall(&s);
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        let longest = r.evidence_f64("longest_stall_s").unwrap();
        assert!((longest - (25.0 - 0.005 - 9.9)).abs() < 1e-6, "{longest}");
        assert_eq!(r.evidence_f64("waiting"), Some(4.0));
        assert!(r.message.contains("no step ran"), "{}", r.message);

        let mut s = steps();
        for k in 0..300 {
            s.step(&decode(k as f64 * 0.1, 4, 0, 5.0, 4));
        }
        s.finish();
        let r = scheduler_stall(&s);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
    }

    /// Steps that run but process nothing while requests wait (a scheduler spinning
    /// without admitting) stall as surely as no step.
    #[test]
    fn steps_that_process_nothing_while_requests_wait_stall_too() {
        let mut s = steps();
        s.step(&decode(0.0, 1, 0, 5.0, 2));
        for k in 1..=50 {
            let mut idle = decode(k as f64 * 0.1, 0, 0, 1.0, 2);
            idle.gen = Some(0);
            idle.dt = Some(0);
            s.step(&idle);
        }
        s.step(&decode(6.0, 2, 64, 5.0, 0));
        s.finish();
        let r = scheduler_stall(&s);
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        assert_eq!(r.evidence_f64("idle_steps"), Some(50.0));
    }

    /// Decode-only steps of 4 requests take 10 ms; those that carry a 512-token prefill
    /// take 30 ms and are the whole slowest 1%: Warn, 3x. With the prefill steps at
    /// 11 ms (barely slower) and the tail made of decode-only steps, Pass.
    #[test]
    fn prefills_beside_decodes_that_make_the_tail_warn() {
        let mut s = steps();
        for k in 0..990 {
            s.step(&decode(k as f64 * 0.01, 4, 0, 10.0, 0));
        }
        for k in 0..10 {
            s.step(&decode(10.0 + k as f64 * 0.05, 4, 512, 30.0, 0));
        }
        let r = prefill_stalls_decode(&s);
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!((r.evidence_f64("slowdown").unwrap() - 3.0).abs() < 1e-9);
        assert_eq!(r.evidence_f64("tail_with_prefill"), Some(10.0));

        let mut s = steps();
        for k in 0..990 {
            let ms = if k % 50 == 0 { 40.0 } else { 10.0 };
            s.step(&decode(k as f64 * 0.01, 4, 0, ms, 0));
        }
        for k in 0..10 {
            s.step(&decode(10.0 + k as f64 * 0.05, 4, 512, 11.0, 0));
        }
        let r = prefill_stalls_decode(&s);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(r.evidence_f64("tail_with_prefill"), Some(0.0));
    }

    /// Without the batch composition there is nothing to compare: Can't tell.
    #[test]
    fn steps_without_iteration_details_cannot_tell_t30() {
        let mut s = steps();
        s.step(&StepLine {
            t: 1.0,
            r: Some(1),
            gen: Some(1),
            ..StepLine::default()
        });
        assert_eq!(prefill_stalls_decode(&s).status, Status::Unknown);
    }

    /// Three preemptions in two steps 20 ms apart are one burst; a fourth 2 s later is
    /// not. Fail, located; a gap line inside the file makes it Can't tell; none is Pass.
    #[test]
    fn preemptions_are_located_and_bursts_found() {
        let engine = &crate::engine::VLLM;
        let mut s = steps();
        let mut k = 0.0;
        let mut next = |s: &mut Steps, pre: u64| {
            let mut line = decode(k, 2, 0, 5.0, 1);
            line.pre = Some(pre);
            s.step(&line);
            k += 0.01;
        };
        for _ in 0..10 {
            next(&mut s, 0);
        }
        next(&mut s, 1);
        next(&mut s, 0);
        next(&mut s, 2);
        for _ in 0..200 {
            next(&mut s, 0);
        }
        next(&mut s, 1);
        let r = preemption_located(&s, engine, None);
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        assert_eq!(r.evidence_f64("preempted"), Some(4.0));
        assert_eq!(r.evidence["bursts"].as_array().unwrap().len(), 1);
        assert_eq!(r.evidence["bursts"][0]["preempted"], 3);
        assert_eq!(r.evidence["bursts"][0]["from_step"], 10);
        assert_eq!(r.evidence["bursts"][0]["to_step"], 12);
        s.gap(crate::model::steps::StepGap {
            t: 1.0,
            steps: 5,
            reason: "queue full".into(),
        });
        assert_eq!(preemption_located(&s, engine, None).status, Status::Unknown);
        let mut none = steps();
        none.step(&decode(0.0, 1, 0, 5.0, 0));
        assert_eq!(preemption_located(&none, engine, None).status, Status::Pass);
    }
}
