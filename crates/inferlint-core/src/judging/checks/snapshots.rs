//! Checks on a before and an after snapshot: T1 (silent preemption), T10 (integer-second
//! timing) and T15 (client and server counts disagree).

use super::counters::{clock_deltas, counter_delta, out_of_order, restart_between, same_process};
use super::series::SeriesStats;
use crate::engine::EngineDescriptor;
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::client::ClientAccount;
use crate::model::{BootFacts, Snapshot};
use crate::story::fmt;

/// T1: requests preempted (retracted, paused) during the run.
///
/// Engines that count preemptions are judged from the counter delta. TensorRT-LLM counts
/// none: its pauses are counted from its INFO log when that covers served requests, else
/// the recording's paused gauge can show that some happened, never that none did.
pub fn preemption(
    engine: &EngineDescriptor,
    before: &Snapshot,
    after: &Snapshot,
    series: Option<&SeriesStats>,
    boot: Option<&BootFacts>,
) -> CheckResult {
    let t1 = |status, message: String| CheckResult::new(Tripwire::T1, status, message);
    if let Some(order) = out_of_order(before, after) {
        return t1(Status::Unknown, order).with("swapped", true);
    }
    if let Some(message) = no_window(before, after) {
        return t1(Status::Unknown, message).with("engine", engine.key);
    }
    if let Some(counter) = engine.preemption_counter {
        if let Some(restart) = restart_between(before, after) {
            return t1(Status::Fail, restart.message).with_evidence(restart.evidence);
        }
        let Some(n) = counter_delta(engine, before, after, counter) else {
            return t1(
                Status::Unknown,
                format!(
                    "{counter} absent from a snapshot; {}s cannot be ruled out",
                    engine.preemption_word
                ),
            )
            .with("engine", engine.key)
            .with("series", counter);
        };
        if !n.is_finite() {
            return t1(
                Status::Unknown,
                format!(
                    "{counter} is not a count in a snapshot (negative, infinite or not a number); {}s cannot be ruled out",
                    engine.preemption_word
                ),
            )
            .with("engine", engine.key)
            .with("series", counter);
        }
        if n == 0.0 && after.metrics.total(counter).is_none() {
            if let Some(unsure) = witnessed_zero(engine, counter, after, boot) {
                return unsure;
            }
        }
        let result =
            if n > 0.0 {
                let mut message = format!(
                    "{} {} during the run",
                    fmt::g(n),
                    engine.preemption_words(n)
                );
                let spread = super::counters::preempted_requests(engine, before, after);
                if let Some(spread) = spread.as_ref().filter(|s| s.finished > 0.0) {
                    if spread.preemptions == n {
                        message.push_str(&format!(", {}", spread.words()));
                    } else {
                        // Preempted requests still running at the after reading carry the
                        // rest: the histogram observes a request when it finishes.
                        message.push_str(&format!(
                            "; {} of them on requests that finished: {}",
                            fmt::g(spread.preemptions),
                            spread.words()
                        ));
                    }
                }
                if engine.logs_each_eviction {
                    message.push_str(&format!(" ({} logs a warning for each)", engine.name));
                }
                let result = t1(Status::Fail, message);
                match spread {
                    Some(spread) => result
                        .with("finished_requests_histogram", spread.finished)
                        .with("preemptions_on_finished", spread.preemptions)
                        .with("requests_preempted", spread.preempted())
                        .with(
                            "preempted_times",
                            spread
                                .by_times
                                .iter()
                                .map(|(k, n)| serde_json::json!({"times": k, "requests": n}))
                                .chain(spread.beyond.map(
                                    |(k, n)| serde_json::json!({"more_than": k, "requests": n}),
                                ))
                                .collect::<Vec<_>>(),
                        ),
                    None => result,
                }
            } else {
                t1(Status::Pass, format!("no {}s", engine.preemption_word))
            };
        let mut result = result
            .with("engine", engine.key)
            .with("series", counter)
            .with("preemptions", n);
        if let Some(logged) = boot.and_then(|f| f.retractions_in_log) {
            result = result.with("retractions_in_log", logged);
        }
        return result;
    }

    // No counter (TensorRT-LLM): the log, then the paused gauge.
    let gauge = engine.paused_gauge.unwrap_or("");
    let base = |status, message: String| {
        t1(status, message)
            .with("engine", engine.key)
            .with("series", gauge)
    };
    if let Some(result) =
        boot.and_then(|facts| super::pauses::from_log(engine, before, after, facts))
    {
        return result;
    }
    if let Some(refused) = series.and_then(|s| s.refused.as_ref()) {
        return base(Status::Unknown, refused.message()).with("refused_line", refused.line);
    }
    let readings = series.map_or(0, |s| s.paused_readings);
    if readings == 0 {
        return base(
            Status::Unknown,
            format!(
                "{} counts no pauses; it logs each one, so the server log saved until after the run is needed to count them",
                engine.name
            ),
        );
    }
    let stats = series.expect("readings > 0 implies a series");
    if stats.paused_nonzero > 0 {
        return base(
            Status::Fail,
            format!(
                "requests were paused for recompute in {} of {} readings, up to {} at once ({} counts no pauses, so the number is unknown)",
                stats.paused_nonzero,
                readings,
                fmt::g(stats.paused_max),
                engine.name
            ),
        )
        .with("paused_readings", stats.paused_nonzero)
        .with("readings", readings);
    }
    let policy = boot
        .and_then(|f| f.setting("capacity_scheduler_policy"))
        .and_then(|v| v.as_str())
        .map(str::to_owned);
    if policy.as_deref() == Some("GUARANTEED_NO_EVICT") {
        return base(
            Status::Pass,
            format!(
                "no paused request in {readings} readings, and the scheduler policy (GUARANTEED_NO_EVICT) admits a request only when its whole output fits"
            ),
        )
        .with("readings", readings);
    }
    base(
        Status::Unknown,
        format!(
            "no paused request in {readings} readings; {} counts no pauses, so one between readings cannot be ruled out without the server log saved until after the run",
            engine.name
        ),
    )
    .with("readings", readings)
}

/// A zero read through the witness rule (the counter is absent, its witness gauge is
/// there), or why it cannot be trusted.
///
/// SGLang writes its retraction counter at the first retraction, and serves the witness
/// gauge from the start; but releases from mid-2025 served the gauge
/// (`sglang:num_retracted_reqs`, added first) before the counter existed at all. The
/// scrape does not say which release served it, so the missing counter means "none" only
/// when a second fact agrees: the server log covers the run's answers and shows no
/// retraction (SGLang logs each one: `KV cache pool is full. Retract requests.`).
fn witnessed_zero(
    engine: &EngineDescriptor,
    counter: &str,
    after: &Snapshot,
    boot: Option<&BootFacts>,
) -> Option<CheckResult> {
    let unknown = |message: String| {
        CheckResult::new(Tripwire::T1, Status::Unknown, message)
            .with("engine", engine.key)
            .with("series", counter)
    };
    let word = engine.preemption_word;
    if let Some(witness) = engine.preemption_witness {
        if let Some(now) = after.metrics.total(witness).filter(|v| *v > 0.0) {
            return Some(unknown(format!(
                "{counter} is absent, but {witness} reads {} in the after snapshot: requests were {word}ed, how many is unknown",
                fmt::g(now)
            )));
        }
    }
    let finished = after.metrics.total(engine.request_success);
    let covered = boot
        .and_then(|f| f.served_in_log)
        .zip(finished)
        .is_some_and(|(served, finished)| served as f64 >= finished);
    let logged = boot.and_then(|f| f.retractions_in_log).unwrap_or(0);
    if !covered {
        return Some(unknown(format!(
            "{counter} is absent: {} writes it at the first {word} on releases that have it, but earlier releases serve only the gauge; the server log, saved until after the run, would show each {word}",
            engine.name
        )));
    }
    if logged > 0 {
        return Some(
            unknown(format!(
                "{counter} is absent, yet the server log shows {logged} {}: the two disagree",
                engine.preemption_words(logged as f64)
            ))
            .with("retractions_in_log", logged),
        );
    }
    None
}

/// Why two snapshots enclose no run, when their clocks say so: read at the same moment
/// (the same snapshot given twice). Nothing counted over no time can rule anything out.
/// Snapshots in the wrong order are [`out_of_order`]'s.
fn no_window(before: &Snapshot, after: &Snapshot) -> Option<String> {
    let span = span_between(before, after).ok()?;
    (span.seconds == 0.0).then(|| {
        "the two snapshots were read at the same moment, so no run lies between them (the same snapshot given twice?); give the one taken before the run and the one taken after".into()
    })
}

/// The span between two snapshots and how sure we are of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    /// Seconds between the readings.
    pub seconds: f64,
    /// How far that may be off, from the readings' latencies.
    pub uncertainty_s: Option<f64>,
    /// Seconds the wall clock moved beyond the monotonic span (negative: it stepped
    /// back), when the two disagree and the monotonic clocks are known to be of one boot.
    pub wall_step_s: Option<f64>,
}

/// Whether the two readings' monotonic stamps come from one boot of one host, as the
/// readings show it: both scraped a server on the recorder's own host (a loopback
/// address, so the server runs under the kernel whose monotonic clock stamped them), and
/// that server is one process through both (its `*_created` stamps did not move). A
/// reboot ends every process, so a process that outlived the span ran on one boot, and
/// so did the clock that stamped both readings.
fn one_boot(before: &Snapshot, after: &Snapshot) -> bool {
    loopback(&before.url) && loopback(&after.url) && same_process(before, after)
}

/// Whether a URL names this host: `localhost`, `127.0.0.0/8` or `::1`.
fn loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host_port.split(':').next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The time between two snapshots: monotonic when both have it (cross-checked against
/// the wall clocks), else wall.
///
/// Monotonic and wall spans more than a second apart mean either readings from two boots
/// (unrelated monotonic clocks) or a wall clock that stepped (NTP, a resumed VM). Only
/// when the readings show one boot (`one_boot`) is it the step: the span is then the
/// monotonic clock's, and the step is kept in [`Span::wall_step_s`]. Otherwise no span
/// can be trusted.
pub fn span_between(before: &Snapshot, after: &Snapshot) -> Result<Span, String> {
    let uncertainty_s = match (before.latency_s, after.latency_s) {
        (Some(a), Some(b)) => Some((a + b) / 2.0),
        _ => None,
    };
    let (mono, wall) = clock_deltas(before, after);
    let mut wall_step_s = None;
    let seconds = match (mono, wall) {
        (Some(m), Some(w)) if (m - w).abs() > 1.0 => {
            if m > 0.0 && one_boot(before, after) {
                wall_step_s = Some(w - m);
                m
            } else {
                return Err(format!(
                    "monotonic span {m:.3}s and wall span {w:.3}s disagree; snapshots from different host boots, or the wall clock stepped"
                ));
            }
        }
        (Some(m), _) => m,
        (None, Some(w)) => w,
        (None, None) => {
            return Err("snapshots carry no clock (bare Prometheus text); no span available".into())
        }
    };
    Ok(Span {
        seconds,
        uncertainty_s,
        wall_step_s,
    })
}

/// What T10's rate is, in its message and wherever it is printed.
pub const SERVERS_WINDOW: &str = "the server's count over the readings' window";

/// T10: the generation rate over the run, and what a timer that rounds to whole seconds
/// would have reported instead.
pub fn rate(
    engine: &EngineDescriptor,
    before: &Snapshot,
    after: &Snapshot,
    counter: Option<&str>,
) -> CheckResult {
    measure_rate(engine, before, after, counter, false)
}

/// T10 in a whole run's check, where a load tool's figures may stand beside it: the
/// message says the rate is the server's count over the readings' window
/// ([`SERVERS_WINDOW`]), never the run's throughput (the load tool's, over the requests it
/// timed). `rate` alone, on two readings, prints the rate as the established tool does.
pub fn run_rate(engine: &EngineDescriptor, before: &Snapshot, after: &Snapshot) -> CheckResult {
    measure_rate(engine, before, after, None, true)
}

fn measure_rate(
    engine: &EngineDescriptor,
    before: &Snapshot,
    after: &Snapshot,
    counter: Option<&str>,
    labelled: bool,
) -> CheckResult {
    let t10 = |status, message: String| CheckResult::new(Tripwire::T10, status, message);
    let counter = counter.unwrap_or(engine.generation_tokens);
    if let Some(order) = out_of_order(before, after) {
        return t10(Status::Unknown, order).with("swapped", true);
    }
    if let Some(restart) = restart_between(before, after) {
        return t10(Status::Unknown, restart.message).with_evidence(restart.evidence);
    }
    let span = match span_between(before, after) {
        Ok(span) => span,
        Err(message) => return t10(Status::Unknown, message),
    };
    let Some(tokens) = counter_delta(engine, before, after, counter) else {
        return t10(Status::Unknown, format!("{counter} absent from a snapshot"))
            .with("counter", counter);
    };
    if !tokens.is_finite() {
        return t10(
            Status::Unknown,
            format!("{counter} is not a count in a snapshot (negative, infinite or not a number)"),
        )
        .with("counter", counter);
    }
    if !span.seconds.is_finite() {
        return t10(
            Status::Unknown,
            "the snapshots' clocks are not numbers".into(),
        );
    }
    if span.seconds <= 0.0 {
        return t10(
            Status::Unknown,
            format!("non-positive span {:.3}s", span.seconds),
        )
        .with("tokens", tokens)
        .with("span_s", span.seconds);
    }
    // Each snapshot stores the midpoint of its scrape, and the server read its counters at
    // some moment within the scrape, so each reading's time is off by at most half its
    // latency, and the span by at most the sum of the halves. When that reaches the span,
    // the time between the readings may be nothing at all: no rate is measured.
    if let (Some(a), Some(b)) = (before.latency_s, after.latency_s) {
        let uncertainty = (a + b) / 2.0;
        if !(a.is_finite() && b.is_finite() && a >= 0.0 && b >= 0.0) {
            return t10(
                Status::Unknown,
                format!(
                    "a snapshot's scrape latency is not a time a request can take ({a} s before, {b} s after); the readings cannot be placed in time"
                ),
            )
            .with("tokens", tokens)
            .with("span_s", span.seconds);
        }
        if uncertainty >= span.seconds {
            return t10(
                Status::Unknown,
                format!(
                    "the snapshots are {:.3}s apart, but their scrapes took {a:.3}s and {b:.3}s: each reading lies somewhere within its scrape, so the span is known only to ±{uncertainty:.3}s and may be nothing; no rate is measured",
                    span.seconds
                ),
            )
            .with("tokens", tokens)
            .with("span_s", span.seconds)
            .with("span_uncertainty_s", uncertainty);
        }
    }
    let rate = tokens / span.seconds;
    let mut message = format!("{rate:.2} tokens/s over {:.3}s", span.seconds);
    if labelled {
        // The readings' window also holds the load tool's start, warm-up and wind-down:
        // the rate is never to be taken for the run's throughput.
        message.push_str(", ");
        message.push_str(SERVERS_WINDOW);
    }
    if let Some(step) = span.wall_step_s {
        message.push_str(&format!(
            "{} on the monotonic clock; the wall clock stepped {} {:.1} s between the snapshots, while one server process on this host answered both",
            if labelled { "," } else { "" },
            if step < 0.0 { "back" } else { "forward" },
            step.abs()
        ));
    }
    let mut result = t10(Status::Pass, message)
        .with("tokens", tokens)
        .with("span_s", span.seconds)
        .with("span_uncertainty_s", span.uncertainty_s)
        .with("rate_per_s", rate);
    if let Some(step) = span.wall_step_s {
        // The whole-second comparison reads the wall clocks, which carry the step, not
        // only the rounding it is meant to show.
        return result.with("wall_step_s", step);
    }
    if let (Some(a), Some(b)) = (before.t_wall, after.t_wall) {
        let integer_span = (b.trunc() as i64).saturating_sub(a.trunc() as i64);
        result = result.with("integer_second_span_s", integer_span);
        if integer_span > 0 {
            let naive = tokens / integer_span as f64;
            let error = if rate != 0.0 { naive / rate - 1.0 } else { 0.0 };
            result = result
                .with("integer_second_rate_per_s", naive)
                .with("integer_second_error", error);
            result.terminal_suffix = Some(format!(
                "; an integer-second timer would say {naive:.2} ({})",
                fmt::signed_percent(error, 2)
            ));
        }
    }
    result
}

/// T15: the load tool's own counts against the server's.
///
/// `expected_extra` is the number of untimed requests the load tool announced (a test
/// request, warm-up), which the server also finished.
pub fn client_server(
    engine: &EngineDescriptor,
    before: &Snapshot,
    after: &Snapshot,
    bench: &ClientAccount,
    result_file: &str,
    expected_extra: u64,
) -> CheckResult {
    let t15 = |status, message: String| CheckResult::new(Tripwire::T15, status, message);
    if let Some(order) = out_of_order(before, after) {
        return t15(Status::Unknown, order).with("swapped", true);
    }
    if let Some(restart) = restart_between(before, after) {
        return t15(Status::Unknown, restart.message).with_evidence(restart.evidence);
    }
    let finished = counter_delta(engine, before, after, engine.request_success);
    let output = counter_delta(engine, before, after, engine.generation_tokens);
    let (Some(server_finished), Some(server_output)) = (finished, output) else {
        return t15(
            Status::Unknown,
            "a server counter is missing from a snapshot".into(),
        )
        .with("server_finished", finished)
        .with("server_output_tokens", output);
    };
    if !server_finished.is_finite() || !server_output.is_finite() {
        return t15(
            Status::Unknown,
            "a server counter is not a count in a snapshot (negative, infinite or not a number)"
                .into(),
        );
    }
    let (Some(completed), Some(client_output)) = (bench.completed, bench.total_output_tokens)
    else {
        return t15(
            Status::Unknown,
            "the result file has no completed or output-token count".into(),
        )
        .with("result_file", result_file);
    };
    let expected = expected_extra as i64;
    let extra = server_finished.trunc() as i64 - completed;
    let extra_tokens = server_output - client_output as f64;
    let evidence = |r: CheckResult| {
        r.with("client_completed", completed)
            .with("client_failed", bench.failed)
            .with("client_output_tokens", client_output)
            .with("server_finished", server_finished)
            .with("server_output_tokens", server_output)
            .with("expected_extra_requests", expected)
            .with("result_file", result_file)
            .with("extra_requests", extra)
            .with("extra_output_tokens", extra_tokens)
    };
    // The load tool's own untimed test request, when nothing said whether it was sent:
    // one request more, of one of this load's requests' size, is its shape.
    let announced = bench.span.untimed_requests.is_some();
    let test_request = bench.tool.info().test_request.filter(|_| !announced);
    if let (Some(shape), 1) = (test_request, extra - expected) {
        let server_prompt = counter_delta(engine, before, after, engine.prompt_tokens);
        match one_request_of_this_load(bench, extra_tokens, server_prompt) {
            Ok(()) => {
                return evidence(t15(
                    Status::Pass,
                    format!(
                        "client and server agree: {completed} requests, {} output tokens, plus 1 untimed request of {} output tokens: the shape of {}'s test request, {shape}; its console output, saved as load.log beside the result file, would say so",
                        fmt::thousands(client_output),
                        fmt::thousands_f(extra_tokens),
                        bench.tool.info().name
                    ),
                ))
                .with("untimed_request_by_shape", true);
            }
            Err(why) => {
                return evidence(t15(
                    Status::Unknown,
                    format!(
                        "the server finished 1 more request than the load tool counted; {} sends {shape} by default, but {why}, and without its console output (save it as load.log beside the result file) whether it sent one cannot be told",
                        bench.tool.info().name
                    ),
                ))
                .with("console_missing", "load.log");
            }
        }
    }
    if extra > expected {
        let n = extra - expected;
        return evidence(t15(
            Status::Fail,
            format!(
                "the server finished {n} more request{} than the load tool sent; other traffic shared the server during the run",
                fmt::plural(n as f64)
            ),
        ))
        .with("other_requests", n);
    }
    if extra < expected {
        let n = expected - extra;
        return evidence(t15(
            Status::Fail,
            format!(
                "the load tool counted {n} more completed request{} than the server finished",
                fmt::plural(n as f64)
            ),
        ));
    }
    let per_request = if completed > 0 {
        (client_output as f64 / completed as f64).max(1.0)
    } else {
        1.0
    };
    let allowed = expected as f64 * per_request * 1.5;
    if !(0.0..=allowed).contains(&extra_tokens) {
        return evidence(t15(
            Status::Warn,
            format!(
                "requests agree, but the server generated {} output tokens and the load tool counted {}",
                fmt::thousands_f(server_output),
                fmt::thousands(client_output)
            ),
        ));
    }
    let mut message = format!(
        "client and server agree: {completed} requests, {} output tokens",
        fmt::thousands(client_output)
    );
    if extra > 0 {
        message.push_str(&format!(
            ", plus {extra} untimed request{} (test or warm-up)",
            fmt::plural(extra as f64)
        ));
    }
    evidence(t15(Status::Pass, message))
}

/// Whether one request more than the load tool counted has the size of one of the
/// load's own: its output tokens more than none and at most one and a half times the
/// load's mean (or its longest recorded request), and its prompt tokens, where the server
/// counts them, the same. `Err` says what does not fit.
fn one_request_of_this_load(
    bench: &ClientAccount,
    extra_output: f64,
    server_prompt: Option<f64>,
) -> Result<(), String> {
    let completed = bench
        .completed
        .filter(|&c| c > 0)
        .ok_or("the load completed no request")?;
    let largest =
        |total: Option<i64>, each: &dyn Fn(&crate::model::client::ClientRequest) -> Option<u64>| {
            let recorded = bench.requests.iter().filter_map(each).max();
            let mean = total.map(|t| t as f64 / completed as f64 * 1.5);
            match (recorded, mean) {
                (Some(r), Some(m)) => Some((r as f64).max(m)),
                (Some(r), None) => Some(r as f64),
                (None, m) => m,
            }
        };
    let output_bound = largest(bench.total_output_tokens, &|r| r.output_tokens.get())
        .ok_or("the result file counts no output tokens")?;
    if !(extra_output > 0.0 && extra_output <= output_bound) {
        return Err(format!(
            "the extra request's {} output tokens are not those of one of this load's requests (at most {})",
            fmt::thousands_f(extra_output),
            fmt::thousands_f(output_bound.floor())
        ));
    }
    if let (Some(server), Some(client)) = (server_prompt, bench.total_input_tokens) {
        let extra_prompt = server - client as f64;
        let bound = largest(Some(client), &|r| r.prompt_tokens.get()).unwrap_or(0.0);
        if !(extra_prompt > 0.0 && extra_prompt <= bound) {
            return Err(format!(
                "the extra request's {} prompt tokens are not those of one of this load's prompts (at most {})",
                fmt::thousands_f(extra_prompt),
                fmt::thousands_f(bound.floor())
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{SGLANG, VLLM};
    use crate::model::client::LoadTool;
    use crate::testing::assert_unknown_saying;
    use crate::testing::plain_snapshot as snapshot;

    fn sglang_log(served: u64, retractions: Option<u64>) -> BootFacts {
        BootFacts {
            served_in_log: Some(served),
            retractions_in_log: retractions,
            ..BootFacts::default()
        }
    }

    /// The README's step-by-step run of the recorded vLLM 0.30 load (32 requests of 88
    /// prompt and 1,000 output tokens, `vllm bench serve`): the readings bracket the
    /// load command, so the server also finished the tool's untimed test request, one
    /// request of the first prompt at its output length, which the result file does not
    /// count. `extra` is what the server finished beyond the 32.
    fn readme_run(extra: (f64, f64, f64), untimed: Option<u64>, tool: LoadTool) -> CheckResult {
        let counters = |(n, prompt, out): (f64, f64, f64)| {
            snapshot(&[
                (VLLM.request_success, n),
                (VLLM.prompt_tokens, prompt),
                (VLLM.generation_tokens, out),
            ])
        };
        let before = counters((0.0, 0.0, 0.0));
        let after = counters((32.0 + extra.0, 2816.0 + extra.1, 32000.0 + extra.2));
        let mut bench = ClientAccount {
            completed: Some(32),
            failed: Some(0),
            total_input_tokens: Some(2816),
            total_output_tokens: Some(32000),
            ..ClientAccount::new(tool)
        };
        bench.span.untimed_requests = untimed;
        client_server(
            &VLLM,
            &before,
            &after,
            &bench,
            "bench.json",
            untimed.unwrap_or(0),
        )
    }

    #[test]
    fn t15_knows_the_load_tools_test_request_by_its_shape() {
        // Without the console: one request of one prompt's size is the test request.
        let r = readme_run((1.0, 88.0, 1000.0), None, LoadTool::VllmBench);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert!(
            r.message
                .contains("plus 1 untimed request of 1,000 output tokens"),
            "{}",
            r.message
        );
        // With the console saved (load.log), announcing it: the same pass as before.
        let r = readme_run((1.0, 88.0, 1000.0), Some(1), LoadTool::VllmBench);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        // A console that announced none: the request was someone else's.
        let r = readme_run((1.0, 88.0, 1000.0), Some(0), LoadTool::VllmBench);
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        // One request far larger than any of the load's: not its shape, and only the
        // console could say; T15 names it.
        let r = readme_run((1.0, 88.0, 5000.0), None, LoadTool::VllmBench);
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert!(r.message.contains("load.log"), "{}", r.message);
        let r = readme_run((1.0, 4000.0, 1000.0), None, LoadTool::VllmBench);
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        // Two requests more are not one test request; a tool that sends none has none.
        let r = readme_run((2.0, 176.0, 2000.0), None, LoadTool::VllmBench);
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        let r = readme_run((1.0, 88.0, 1000.0), None, LoadTool::GuideLlm);
        assert_eq!(r.status, Status::Fail, "{}", r.message);
    }

    /// The recorded SGLang 0.5.20 shape: the retraction gauge, no counter.
    fn witnessed(gauge: f64) -> (Snapshot, Snapshot) {
        (
            snapshot(&[
                ("sglang:num_retracted_reqs", 0.0),
                ("sglang:num_requests_total", 10.0),
            ]),
            snapshot(&[
                ("sglang:num_retracted_reqs", gauge),
                ("sglang:num_requests_total", 42.0),
            ]),
        )
    }

    #[test]
    fn a_missing_retraction_counter_passes_only_with_the_log_agreeing() {
        let (before, after) = witnessed(0.0);
        let with_log = preemption(&SGLANG, &before, &after, None, Some(&sglang_log(44, None)));
        assert_eq!(
            (with_log.status, with_log.message.as_str()),
            (Status::Pass, "no retractions")
        );
        // Releases that served only the gauge never write the counter: alone, the gauge
        // proves nothing.
        let alone = preemption(&SGLANG, &before, &after, None, None);
        assert_eq!(alone.status, Status::Unknown, "{}", alone.message);
        // A log that stops before the run's answers does not cover it.
        let short = preemption(&SGLANG, &before, &after, None, Some(&sglang_log(12, None)));
        assert_eq!(short.status, Status::Unknown, "{}", short.message);
        // The log's retraction lines and the missing counter disagree.
        let logged = preemption(
            &SGLANG,
            &before,
            &after,
            None,
            Some(&sglang_log(44, Some(3))),
        );
        assert_unknown_saying(&logged, "3 retractions");
    }

    /// A vLLM reading on this host, `seconds` into the run on the monotonic clock and at
    /// `wall` on the wall clock, by the process whose counters were created at
    /// `created`.
    fn local(seconds: f64, wall: f64, created: f64, generated: f64) -> Snapshot {
        use crate::testing::sample;
        let mut s = crate::testing::snapshot(
            Some(wall),
            vec![
                sample("vllm:generation_tokens_total", &[], generated),
                sample("vllm:generation_tokens_created", &[], created),
            ],
        );
        s.url = "http://127.0.0.1:8000/metrics".into();
        s.t_mono_ns = Some(((1000.0 + seconds) * 1e9) as i64);
        s
    }

    /// The wall clock stepped back 30 s mid-run (NTP, a resumed VM); T10 said Can't tell,
    /// "snapshots from different host boots, or the wall clock stepped". One server
    /// process on this host answered both readings, so one boot stamped them: the rate
    /// is measured on the monotonic clock, and the step is named.
    #[test]
    fn t10_judges_a_wall_step_on_the_monotonic_clock_when_one_boot_is_shown() {
        use crate::engine::VLLM;
        let t0 = 1_790_000_000.0;
        let before = local(0.0, t0, t0 - 50.0, 100.0);
        let after = local(100.0, t0 + 70.0, t0 - 50.0, 10_100.0);
        let r = rate(&VLLM, &before, &after, None);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(
            r.message,
            "100.00 tokens/s over 100.000s on the monotonic clock; the wall clock stepped back 30.0 s between the snapshots, while one server process on this host answered both"
        );
        assert_eq!(r.evidence["wall_step_s"], -30.0);
        assert!(r.evidence.get("integer_second_span_s").is_none());
        // Another process answered the second reading (it restarted): refused, as a
        // restart is (its counters start again).
        let restarted = local(100.0, t0 + 70.0, t0 + 20.0, 10_100.0);
        assert_eq!(
            rate(&VLLM, &before, &restarted, None).status,
            Status::Unknown
        );
        // A server on another host: its process says nothing of the recorder's boots.
        let (mut far_before, mut far_after) = (before.clone(), after.clone());
        far_before.url = "http://10.0.0.7:8000/metrics".into();
        far_after.url = "http://10.0.0.7:8000/metrics".into();
        assert_unknown_saying(
            &rate(&VLLM, &far_before, &far_after, None),
            "snapshots from different host boots, or the wall clock stepped",
        );
        // No creation stamps to show one process: refused.
        let bare = |s: &Snapshot| {
            let mut s = s.clone();
            s.metrics = crate::model::metrics::MetricSet::new(vec![crate::testing::sample(
                "vllm:generation_tokens_total",
                &[],
                s.metrics.total("vllm:generation_tokens_total").unwrap(),
            )]);
            s
        };
        assert_eq!(
            rate(&VLLM, &bare(&before), &bare(&after), None).status,
            Status::Unknown
        );
    }

    /// A scrape that took longer than the span between the snapshots: T10 passed with a
    /// rate. Each reading lies within its scrape (the midpoint is stored), so the span is
    /// known to ±(latency before + latency after) / 2; at or beyond the span it may be
    /// nothing.
    #[test]
    fn t10_measures_no_rate_when_the_scrapes_outlast_the_span() {
        use crate::engine::VLLM;
        let t0 = 1_790_000_000.0;
        let pair = |latency_before: f64, latency_after: f64| {
            let mut before = local(0.0, t0, t0 - 50.0, 100.0);
            let mut after = local(1.0, t0 + 1.0, t0 - 50.0, 200.0);
            before.latency_s = Some(latency_before);
            after.latency_s = Some(latency_after);
            rate(&VLLM, &before, &after, None)
        };
        let r = pair(3.0, 0.004);
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert_eq!(
            r.message,
            "the snapshots are 1.000s apart, but their scrapes took 3.000s and 0.004s: each reading lies somewhere within its scrape, so the span is known only to ±1.502s and may be nothing; no rate is measured"
        );
        assert_eq!(
            pair(1.0, 1.0).status,
            Status::Unknown,
            "the bound reaches the span"
        );
        let r = pair(1.0, 0.99);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(r.evidence["span_uncertainty_s"], 0.995);
        assert_unknown_saying(&pair(-0.5, 0.004), "not a time a request can take");
        assert_unknown_saying(&pair(f64::NAN, 0.004), "not a time a request can take");
    }

    #[test]
    fn loopback_addresses() {
        for url in [
            "http://127.0.0.1:8000/metrics",
            "http://localhost/metrics",
            "https://[::1]:9/x",
            "http://127.3.2.1",
            "http://user@127.0.0.1:1/",
        ] {
            assert!(loopback(url), "{url}");
        }
        for url in [
            "",
            "file:after.prom",
            "http://10.0.0.7:8000/metrics",
            "http://127.0.0.1.example.com/",
            "http://[::2]:1/",
            "http://localhost.example/",
        ] {
            assert!(!loopback(url), "{url}");
        }
    }

    #[test]
    fn a_nonzero_retraction_gauge_is_never_no_retraction() {
        let (before, after) = witnessed(2.0);
        let r = preemption(&SGLANG, &before, &after, None, Some(&sglang_log(44, None)));
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
    }
}
