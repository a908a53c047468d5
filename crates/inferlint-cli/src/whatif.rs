//! `whatif`: a run folder read as `report` reads it, its load replayed by core's
//! [`inferlint_core::analyses::whatif`] as the server was set up and as `--set` changes it, the
//! figures printed side by side.

use inferlint_core::analyses::whatif::band::{self, Figure};
use inferlint_core::analyses::whatif::{self, Baseline, Errors, FitFrom, Prediction};
use inferlint_core::judging::checks::series::SeriesStats;
use inferlint_core::judging::identity::Admitted;
use inferlint_core::model::client::ReplayRecord;
use inferlint_core::run::CheckOptions;
use inferlint_engines::files::RunFiles;
use inferlint_engines::load::{self, shown, EngineChoice, Known};
use inferlint_sched::replay::Arrivals;
use inferlint_sched::stats::Summary;

use crate::cli::WhatifArgs;
use crate::exit::{CliError, ExitCode};
use crate::loaded::noted;
use crate::output::{self, eprint_line};

pub(crate) fn whatif(
    choice: &mut EngineChoice,
    args: &WhatifArgs,
    json: bool,
) -> Result<ExitCode, CliError> {
    let mut found = load::find_run(&args.run)?;
    if let Some(bench) = &args.bench_result {
        found.bench = Some(bench.clone());
        found.bench_candidates.clear();
    }
    let (run, records) = read_for_replay(choice, &found, args.requested)?;
    let run = &run;
    // The changes are parsed before the model is built: a mistyped key is the command
    // line's error (64), whatever the run holds.
    let changes = args
        .set
        .iter()
        .map(|text| whatif::change::parse(run.engine.engine, text).map_err(CliError::usage))
        .collect::<Result<Vec<_>, _>>()?;
    let baseline = match records.map_or_else(
        || whatif::baseline(run),
        |records| whatif::baseline_of_records(run, records),
    ) {
        Ok(b) => b,
        Err(why) => {
            return Err(CliError::Undecided(format!(
                "whatif: the replay cannot speak for this run: {why}"
            )))
        }
    };
    let prediction = if changes.is_empty() {
        None
    } else {
        Some(
            baseline
                .predict(&changes)
                .map_err(|why| CliError::usage(format!("whatif: {why}")))?,
        )
    };
    let text = if json {
        let value = serde_json::json!({
            "run": shown(&args.run),
            "baseline": baseline,
            "prediction": prediction,
        });
        format!(
            "{}\n",
            serde_json::to_string_pretty(&value).expect("plain data")
        )
    } else {
        terminal(&shown(&args.run), &baseline, prediction.as_ref())
    };
    output::emit(&text)?;
    Ok(ExitCode::Passed)
}

/// The run read for the replay: its result file's records folded as they are read into
/// what the replay reads of them (`load_run_for_replay`), and taken out of the account to
/// be moved into the baseline, so that a million requests are never held as records. The
/// run must still allow a check, as every command asks; the checks that read each request
/// see none in a run read so, so where no other check gives a verdict the run is read
/// whole as `report` reads it, and the answer is the one it always was.
fn read_for_replay(
    choice: &mut EngineChoice,
    found: &RunFiles,
    requested: Option<u64>,
) -> Result<(Admitted, Option<Vec<ReplayRecord>>), CliError> {
    let again = choice.clone();
    let given = load::given(found);
    let mut known = Known {
        requested,
        for_replay: true,
        ..Known::default()
    };
    // The notes are shown once the read is kept (`noted` shows them, then the error).
    let loaded = load::check_files(choice, found, &known, &CheckOptions::default(), |_| {
        None::<SeriesStats>
    });
    let notes = choice.take_notes();
    let show = |notes: Vec<String>| {
        for note in notes {
            eprint_line!("note: {note}");
        }
    };
    let (mut model, checked) = match loaded {
        Ok((model, checked, _)) => (model, checked),
        Err(e) => {
            show(notes);
            return Err(e.into());
        }
    };
    if checked.nothing_checked(&given).is_none() {
        show(notes);
        let records = model.take_replay_records();
        return Ok((model, records));
    }
    *choice = again;
    known.for_replay = false;
    let (model, checked, _) = noted(choice, |c| {
        load::check_files(c, found, &known, &CheckOptions::default(), |_| {
            None::<SeriesStats>
        })
    })?;
    match checked.nothing_checked(&given) {
        Some(why) => Err(CliError::Undecided(why)),
        None => Ok((model, None)),
    }
}

fn arrivals_words(a: &Arrivals) -> String {
    match a {
        Arrivals::Closed { concurrency } => format!("{concurrency} at a time in a closed loop"),
        Arrivals::Timed {
            max_outstanding: Some(m),
        } => format!("at their own times, at most {m} at a time"),
        Arrivals::Timed {
            max_outstanding: None,
        } => "at their own times".to_owned(),
    }
}

fn ms(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else {
        format!("{:.1} ms", s * 1000.0)
    }
}

/// The figures as rows: a name, how to show one value, the value in each summary, the
/// model's error on that figure on this run (the fit error), and the figure a band is
/// calibrated for, where one is.
type Row<'a> = (
    &'static str,
    fn(f64) -> String,
    fn(&Summary) -> Option<f64>,
    Option<f64>,
    Option<Figure>,
);

fn rows(error: &Errors) -> Vec<Row<'_>> {
    let count = |v: f64| format!("{v:.0}");
    vec![
        (
            "preemptions",
            count,
            |s| s.evictions.map(|e| e as f64),
            None,
            None,
        ),
        ("peak running", count, |s| s.peak_running, None, None),
        (
            "mean running",
            |v| format!("{v:.1}"),
            |s| s.mean_running,
            None,
            None,
        ),
        ("refused", count, |s| Some(s.refused as f64), None, None),
        (
            "output tok/s",
            |v| format!("{v:.1}"),
            |s| s.output_tok_s,
            error.output_tok_s,
            Some(Figure::OutputTokS),
        ),
        (
            "TTFT p50",
            ms,
            |s| s.ttft_p50_s,
            error.ttft_p50,
            Some(Figure::TtftP50),
        ),
        (
            "TTFT p99",
            ms,
            |s| s.ttft_p99_s,
            error.ttft_p99,
            Some(Figure::TtftP99),
        ),
        (
            "TPOT p50",
            ms,
            |s| s.tpot_p50_s,
            error.tpot_p50,
            Some(Figure::TpotP50),
        ),
        (
            "TPOT p99",
            ms,
            |s| s.tpot_p99_s,
            error.tpot_p99,
            Some(Figure::TpotP99),
        ),
        ("server queue p50", ms, |s| s.queue_p50_s, None, None),
        ("server queue p99", ms, |s| s.queue_p99_s, None, None),
    ]
}

fn terminal(run: &str, b: &Baseline, p: Option<&Prediction>) -> String {
    let mut out = format!(
        "What if: {run} ({}, {}: {} requests, {})\n",
        b.engine,
        b.tool,
        b.requests,
        arrivals_words(&b.arrivals)
    );
    out.push_str(&format!(
        "The server as the model holds it: {}\n",
        b.setup_words
    ));
    for line in &b.setup.read {
        out.push_str(&format!("  {line}\n"));
    }
    if let Some(share) = b.prefix_hit_share.filter(|s| *s > 0.0) {
        out.push_str(&format!(
            "  {:.0}% of prompt tokens served by the prefix cache, replayed as cached\n",
            share * 100.0
        ));
    }
    for assumed in &b.assumed {
        out.push_str(&format!("  assumed: {assumed}\n"));
    }
    for left in &b.left_out {
        out.push_str(&format!("  left out: {left}\n"));
    }
    let f = &b.fit;
    out.push_str(&format!(
        "Per-step cost, fitted on {}: {} a step + {} a running request; rms error {:.0}%{}\n",
        match b.fit_from {
            FitFrom::ServerSeries => format!(
                "the server's recording ({} pairs of readings, its token counter against its running gauge)",
                f.used
            ),
            FitFrom::EngineSteps => format!(
                "the engine's own steps ({} steps of the step file, each one's time against the requests it ran and the prompt tokens it prefilled)",
                f.used
            ),
            FitFrom::Requests => format!(
                "{} of {} requests' time per token{}",
                f.used,
                f.used + f.set_aside,
                if f.set_aside > 0 {
                    format!(" ({} set aside as far slower: preempted or stalled)", f.set_aside)
                } else {
                    String::new()
                }
            ),
        },
        ms(f.cost.fixed_s),
        ms(f.cost.per_running_s),
        f.rms_relative_error * 100.0,
        if f.terms.contains(&"per_running") {
            format!("; running {:.1} to {:.1} in the run", f.running_range.0, f.running_range.1)
        } else {
            "; the running count did not vary enough to measure a cost per running request".to_owned()
        }
    ));
    if b.assumed.is_empty() {
        out.push_str(&format!(
            "From send to the scheduler (the front end), fitted on the TTFTs: {}\n",
            ms(b.front_s)
        ));
    } else {
        out.push_str("From send to the scheduler (the front end): not fitted, 0 (see assumed)\n");
    }
    out.push_str(&format!(
        "What the fit saw: {:.1} to {} running, prompts of {} tokens, outputs of {} tokens, {}\n",
        b.envelope.running_low,
        inferlint_core::story::fmt::g(b.envelope.running_high),
        span(b.prompt_tokens),
        span(b.output_tokens),
        b.request_rate
            .map_or("no request rate".to_owned(), |r| format!(
                "{} requests/s",
                inferlint_core::story::fmt::g(r)
            )),
    ));
    if let Some(p) = p {
        for applied in &p.applied {
            out.push_str(&format!("Change: {applied}\n"));
        }
        if let Some(beyond) = &p.extrapolated {
            out.push_str(&format!("Note: {beyond}\n"));
        }
        if let Some(why) = &p.band_withheld {
            out.push_str(&format!("Note: {why}\n"));
        }
    }
    out.push('\n');
    let mut table = vec![vec![
        String::new(),
        "measured".to_owned(),
        "model, as run (fit error)".to_owned(),
    ]];
    if p.is_some() {
        table[0].push("with the change".to_owned());
        table[0].push(format!("{:.0}% band", band::COVERAGE_TARGET * 100.0));
    }
    for (name, show, get, fit_error, figure) in rows(&b.error) {
        let cell = |v: Option<f64>| v.map_or("-".to_owned(), show);
        let mut row = vec![
            name.to_owned(),
            cell(get(&b.measured)),
            match (get(&b.as_run), fit_error) {
                (Some(v), Some(e)) => format!("{} ({})", show(v), whatif::signed_percent(e)),
                (v, _) => cell(v),
            },
        ];
        if let Some(p) = p {
            row.push(cell(get(&p.predicted)));
            let band = figure.and_then(|f| p.bands.iter().find(|b| b.figure == f));
            row.push(match (band, figure, &p.band_withheld) {
                (Some(b), ..) => format!("{} to {}", show(b.low), show(b.high)),
                (None, Some(_), Some(_)) => "none".to_owned(),
                _ => String::new(),
            });
        }
        table.push(row);
    }
    let widths: Vec<usize> = (0..table[0].len())
        .map(|i| {
            table
                .iter()
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &table {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i == 0 {
                line.push_str(&format!("{cell:<w$}", w = widths[0]));
            } else {
                line.push_str(&format!("  {cell:>w$}", w = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(
        "\nIn brackets: the fit error on this run (the model against the run it was fitted on), not a band.\n",
    );
    if p.is_some() {
        out.push_str(&format!(
            "The {:.0}% band: from the errors of {} predicted changes against their runs on {}, never narrower than two runs of one setup differ (docs/whatif.md).\n",
            band::COVERAGE_TARGET * 100.0,
            band::TRUTHS.len(),
            band::CALIBRATED_ON
        ));
    }
    out
}

/// `32` or `12 to 480`.
fn span((low, high): (u64, u64)) -> String {
    if low == high {
        low.to_string()
    } else {
        format!("{low} to {high}")
    }
}
