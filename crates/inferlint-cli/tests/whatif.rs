//! `whatif`: the replay of a run's own load, on the real vLLM CPU build's runs.
//!
//! The proof: `fixtures/real/vllm-0.32-cpu/whatif/<situation>/` holds a baseline run and,
//! for each change, the same load run again with the change made for real
//! (`scripts/real-vllm/whatif.sh`; each change folder's CHANGE file names the change as
//! `--set` does). The table in docs/whatif.md sets what the replay of the baseline
//! predicts beside what the changed run measured; this file checks the table is the one
//! the fixtures give (`INFERLINT_WRITE_WHATIF_TABLE=1` rewrites it) and that wherever the
//! replay predicts the trap gone (no preemption) the real run had none.

use std::path::{Path, PathBuf};

use serde_json::Value;

use inferlint_core::analyses::whatif::band::{self, Figure};

use crate::common::{fixtures, inferlint, no_panic, stderr, stdout};

fn proof_root() -> PathBuf {
    fixtures().join("real/vllm-0.32-cpu/whatif")
}

fn whatif_json(args: &[&str]) -> Value {
    let out = inferlint(Path::new("."), &[&["whatif", "--json"], args].concat());
    no_panic(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "whatif {args:?}: {}",
        stderr(&out)
    );
    serde_json::from_str(&stdout(&out)).unwrap()
}

fn figure(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

/// One change of the proof: what the replay of the baseline predicted, what the changed
/// run measured.
struct Row {
    situation: String,
    change: String,
    predicted: Value,
    measured: Value,
    /// The baseline's fit error on itself (in-sample).
    band: Value,
    /// The prediction's calibrated bands, as printed (`prediction.bands`).
    bands: Value,
    /// How far outside the baseline's fit the change ran (1 inside).
    extrapolation: f64,
    /// The baseline's own measurement.
    baseline_measured: Value,
    /// The share of the CPUs build tools took while the baseline's and the changed run's
    /// loads ran (quiet.sh's quiet.txt), where it was measured.
    disturbed: (Option<f64>, Option<f64>),
}

/// What quiet.sh wrote of a run: the share of the CPUs build tools took while its load ran.
fn build_share(dir: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(dir.join("quiet.txt")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("CPU share of build tools while it ran: "))
        .and_then(|v| v.trim().parse().ok())
}

/// A run beside which build tools took more than this share of the CPUs measured them
/// too: the table marks it.
const DISTURBED_ABOVE: f64 = 0.05;

/// The proof's rows, read once per test process: four tests hold the same rows to their
/// own promises (the docs' table, the calibration, the bands, the preemptions).
fn rows() -> &'static [Row] {
    static ROWS: std::sync::OnceLock<Vec<Row>> = std::sync::OnceLock::new();
    ROWS.get_or_init(read_rows)
}

fn read_rows() -> Vec<Row> {
    let mut rows = Vec::new();
    let mut situations: Vec<PathBuf> = std::fs::read_dir(proof_root())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    situations.sort();
    for situation in situations {
        let baseline = situation.join("baseline");
        let mut changes: Vec<PathBuf> = std::fs::read_dir(&situation)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("CHANGE").is_file() || p.ends_with("baseline-again"))
            .collect();
        changes.sort();
        for dir in changes {
            let sets: Vec<String> = std::fs::read_to_string(dir.join("CHANGE"))
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            let mut args = vec![baseline.to_str().unwrap().to_owned()];
            for s in &sets {
                args.push("--set".to_owned());
                args.push(s.clone());
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let predicted = whatif_json(&args);
            let measured = whatif_json(&[dir.to_str().unwrap()]);
            let band = predicted["baseline"]["error"].clone();
            let bands = predicted["prediction"]["bands"].clone();
            let extrapolation = predicted["prediction"]["extrapolation"]
                .as_f64()
                .unwrap_or(1.0);
            let baseline_measured = predicted["baseline"]["measured"].clone();
            let predicted = if sets.is_empty() {
                // The baseline run again: the replay of the baseline as it ran.
                predicted["baseline"]["as_run"].clone()
            } else {
                predicted["prediction"]["predicted"].clone()
            };
            rows.push(Row {
                situation: situation
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                change: if sets.is_empty() {
                    "(none: the baseline run again)".to_owned()
                } else {
                    sets.join(" ")
                },
                predicted,
                measured: measured["baseline"]["measured"].clone(),
                band,
                bands,
                extrapolation,
                baseline_measured,
                disturbed: (build_share(&baseline), build_share(&dir)),
            });
        }
    }
    rows
}

fn error(predicted: Option<f64>, measured: Option<f64>) -> Option<f64> {
    let (p, m) = (predicted?, measured?);
    (m > 0.0).then(|| p / m - 1.0)
}

fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_owned(), |v| format!("{v:.digits$}"))
}

/// `quiet`, or the share build tools took where it is above [`DISTURBED_ABOVE`]: `**31%**, quiet`.
fn disturbed((baseline, change): (Option<f64>, Option<f64>)) -> String {
    let one = |s: Option<f64>| match s {
        None => "not measured".to_owned(),
        Some(s) if s > DISTURBED_ABOVE => format!("**{:.0}%**", s * 100.0),
        Some(_) => "quiet".to_owned(),
    };
    format!("{}, {}", one(baseline), one(change))
}

fn pct(e: Option<f64>) -> String {
    e.map_or("-".to_owned(), |e| format!("{:+.0}%", e * 100.0))
}

/// The table of docs/whatif.md, made from the fixtures.
fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| situation | change | preemptions predicted / measured | peak running predicted / measured | output tok/s predicted / measured (error) | TTFT p50 ms predicted / measured (error) | TTFT p99 ms predicted / measured (error) | fit error on the baseline (tok/s, TTFT p50) | held-out band (tok/s; TTFT p50) | builds beside the loads (baseline, change) |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let (p, m) = (&r.predicted, &r.measured);
        let ms = |v: Option<f64>| v.map(|s| s * 1000.0);
        out.push_str(&format!(
            "| {} | `{}` | {} / {} | {} / {} | {} / {} ({}) | {} / {} ({}) | {} / {} ({}) | {}, {} | {}; {} | {} |\n",
            r.situation,
            r.change,
            cell(figure(p, "evictions"), 0),
            cell(figure(m, "evictions"), 0),
            cell(figure(p, "peak_running"), 0),
            cell(figure(m, "peak_running"), 0),
            cell(figure(p, "output_tok_s"), 0),
            cell(figure(m, "output_tok_s"), 0),
            pct(error(figure(p, "output_tok_s"), figure(m, "output_tok_s"))),
            cell(ms(figure(p, "ttft_p50_s")), 0),
            cell(ms(figure(m, "ttft_p50_s")), 0),
            pct(error(figure(p, "ttft_p50_s"), figure(m, "ttft_p50_s"))),
            cell(ms(figure(p, "ttft_p99_s")), 0),
            cell(ms(figure(m, "ttft_p99_s")), 0),
            pct(error(figure(p, "ttft_p99_s"), figure(m, "ttft_p99_s"))),
            pct(figure(&r.band, "output_tok_s")),
            pct(figure(&r.band, "ttft_p50")),
            held_out_cell(r, Figure::OutputTokS),
            held_out_cell(r, Figure::TtftP50),
            disturbed(r.disturbed),
        ));
    }
    out.push('\n');
    out.push_str(&calibration_table());
    out
}

/// The calibration truth of a row of the proof.
fn truth_of(r: &Row) -> &'static band::Truth {
    let change = if r.change.starts_with('(') {
        ""
    } else {
        &r.change
    };
    band::TRUTHS
        .iter()
        .find(|t| t.situation == r.situation && t.change == change)
        .expect("every row of the proof is a calibration truth")
}

/// `-31%..+46% in`: the band the other situations alone make for this row's prediction,
/// and whether the changed run's measurement fell inside it.
fn held_out_cell(r: &Row, f: Figure) -> String {
    let truth = truth_of(r);
    let error = truth.log_error[Figure::ALL.iter().position(|x| *x == f).unwrap()];
    match (band::held_out_half_width(truth, f), error) {
        (Some(w), Some(e)) => format!(
            "{}..{} {}",
            pct(Some((-w).exp() - 1.0)),
            pct(Some(w.exp() - 1.0)),
            if e.abs() <= w { "in" } else { "**out**" }
        ),
        (None, _) => "none (outside what was measured)".to_owned(),
        (_, None) => "-".to_owned(),
    }
}

/// The bands `whatif` prints, and how they held on truths they did not see.
fn calibration_table() -> String {
    let mut out = String::from(
        "| figure | band printed (inside the envelope) | band printed (extrapolated) | quantile level | held-out truths inside the band | held-out at the 0.8 quantile | median held-out band | largest spread of two runs of one setup |\n|---|---|---|---|---|---|---|---|\n",
    );
    let range = |w: Option<f64>| {
        w.map_or("none".to_owned(), |w| {
            format!(
                "{}..{}",
                pct(Some((-w).exp() - 1.0)),
                pct(Some(w.exp() - 1.0))
            )
        })
    };
    let share = |(inside, asked): (usize, usize)| {
        format!(
            "{inside} of {asked} ({:.0}%)",
            100.0 * inside as f64 / asked.max(1) as f64
        )
    };
    for f in Figure::ALL {
        let (inside, asked, median) = band::held_out_coverage(f);
        let (plain_inside, plain_asked, _) = band::held_out_coverage_at(f, 0.8);
        out.push_str(&format!(
            "| {} | {} | {} | {:.2} | {} | {} | {} | {} |\n",
            f.key(),
            range(band::half_width(f, None, false)),
            range(band::half_width(f, None, true)),
            band::level(f),
            share((inside, asked)),
            share((plain_inside, plain_asked)),
            range(median),
            range(band::spread_floor(f, None)),
        ));
    }
    out
}

const BEGIN: &str = "<!-- whatif table: made by `INFERLINT_WRITE_WHATIF_TABLE=1 cargo test -p inferlint-cli --test tests whatif::` -->\n";
const END: &str = "<!-- end of whatif table -->";

#[test]
fn the_docs_table_is_the_one_the_real_runs_give() {
    let rows = rows();
    assert!(
        rows.len() >= 8,
        "at least eight changes are proved: {}",
        rows.len()
    );
    let made = table(rows);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/whatif.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (start, end) = (
        doc.find(BEGIN)
            .expect("docs/whatif.md holds the table's start marker")
            + BEGIN.len(),
        doc.find(END)
            .expect("docs/whatif.md holds the table's end marker"),
    );
    if std::env::var_os("INFERLINT_WRITE_WHATIF_TABLE").is_some() {
        let new = format!("{}{made}{}", &doc[..start], &doc[end..]);
        std::fs::write(&path, new).unwrap();
        return;
    }
    assert_eq!(
        &doc[start..end],
        made,
        "docs/whatif.md's table is not the fixtures' (INFERLINT_WRITE_WHATIF_TABLE=1 rewrites it)"
    );
}

/// The promise the advice rests on: wherever the replay says a change stops the
/// preemptions, the real engine, changed, preempted nothing; and wherever it says they go
/// on, they went on.
#[test]
fn where_the_replay_predicts_no_preemption_the_real_run_had_none() {
    for r in rows() {
        let (Some(p), Some(m)) = (
            figure(&r.predicted, "evictions"),
            figure(&r.measured, "evictions"),
        ) else {
            panic!(
                "{} {}: preemptions predicted and measured",
                r.situation, r.change
            );
        };
        assert_eq!(
            p == 0.0,
            m == 0.0,
            "{} {}: the replay predicted {p} preemptions, the real run had {m}",
            r.situation,
            r.change
        );
    }
}

/// The baseline's figures argued from its files: vLLM's cache info states 6 blocks of
/// 128 tokens (one held back: 5 usable); each request of 32 + 224 tokens holds 1 block
/// when it starts and 2 at full length. With `--max-num-seqs 2` two run at full length
/// in 4 blocks and nothing is preempted; with 17 blocks (16 usable) all 8 fit at full
/// length. The replay must say so.
#[test]
fn the_replay_of_a_too_small_cache_follows_the_block_arithmetic() {
    let base = proof_root().join("kv-too-small/baseline");
    let base = base.to_str().unwrap();
    let capped = whatif_json(&[base, "--set", "max-num-seqs=2"]);
    let p = &capped["prediction"]["predicted"];
    assert_eq!(
        (figure(p, "evictions"), figure(p, "peak_running")),
        (Some(0.0), Some(2.0))
    );
    let grown = whatif_json(&[base, "--set", "kv-cache-memory-bytes=2228224"]);
    let p = &grown["prediction"]["predicted"];
    assert_eq!(
        (figure(p, "evictions"), figure(p, "peak_running")),
        (Some(0.0), Some(8.0))
    );
    assert!(
        grown["prediction"]["applied"][0]
            .as_str()
            .unwrap()
            .starts_with("blocks 6 -> 17"),
        "{}",
        grown["prediction"]["applied"]
    );
    // As it ran: 5 usable blocks can start 5 and hold 2 at full length, so it preempts.
    let b = &capped["baseline"]["as_run"];
    assert!(figure(b, "evictions").unwrap() > 0.0);
    assert_eq!(figure(b, "peak_running"), Some(5.0));
}

/// The advice on a run the replay can speak for: every cure it gives stops the trap in
/// the replay, as its own note says.
#[test]
fn every_cure_the_advice_gives_is_one_its_replay_says_works() {
    for case in ["kv-too-small", "running-cap"] {
        let dir = fixtures().join("real/vllm-0.32-cpu").join(case);
        let tmp = tempfile::tempdir().unwrap();
        let page = tmp.path().join("report.html");
        let out = inferlint(
            tmp.path(),
            &[
                "report",
                "--json",
                "-o",
                page.to_str().unwrap(),
                dir.to_str().unwrap(),
            ],
        );
        no_panic(&out);
        let results: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
        let mut notes = 0;
        for r in &results {
            let tripwire = r["tripwire"].as_str().unwrap_or_default();
            for line in r["advice"].as_array().into_iter().flatten() {
                let line = line.as_str().unwrap();
                for note in line.split("(replayed on this run's load: ").skip(1) {
                    notes += 1;
                    assert!(
                        note.starts_with("no preemptions"),
                        "{case} {tripwire}: a cure whose replay still preempts: {line}"
                    );
                }
            }
        }
        assert!(notes > 0, "{case}: the advice carries its replay");
    }
}

/// Where the model cannot speak for a run it says why, as a Can't tell (exit 2), never a
/// number: a hybrid model, a restart between the readings.
#[test]
fn it_abstains_with_the_reason_where_the_model_cannot_speak() {
    for (dir, why) in [
        (fixtures().join("sim/vllm-hybrid"), "hybrid"),
        (
            fixtures().join("real/vllm-0.32-cpu/restart-mid-run"),
            "restarted",
        ),
    ] {
        let out = inferlint(Path::new("."), &["whatif", dir.to_str().unwrap()]);
        no_panic(&out);
        assert_eq!(out.status.code(), Some(2), "{}", dir.display());
        // The refusal is one line (a reader's notes on the files may come before it).
        let err = stderr(&out);
        let refusals: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("inferlint: "))
            .collect();
        assert_eq!(refusals.len(), 1, "{err}");
        assert!(
            refusals[0].contains("cannot speak") && refusals[0].contains(why),
            "{err}"
        );
        assert!(stdout(&out).is_empty());
    }
}

/// A mistyped change is the command line's error (64), one line naming what it knows.
#[test]
fn a_change_it_does_not_know_is_a_usage_error() {
    let base = fixtures().join("real/vllm-0.32-cpu/kv-too-small");
    let base = base.to_str().unwrap();
    for (set, says) in [
        ("max-running-requests=4", "SGLang's setting"),
        ("tensor-parallel-size=2", "--max-num-seqs"),
        ("max-num-seqs", "KEY=VALUE"),
        ("max-num-seqs=lots", "whole number"),
        // No server runs 0 at once and no load keeps 0 open: refused, not run as 1.
        ("max-num-seqs=0", "at least 1"),
        ("concurrency=0", "at least 1"),
        ("concurrency=-1", "whole number"),
        (
            "gpu-memory-utilization=0.95",
            "ignores --gpu-memory-utilization",
        ),
    ] {
        let out = inferlint(Path::new("."), &["whatif", base, "--set", set]);
        no_panic(&out);
        assert_eq!(out.status.code(), Some(64), "{set}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{set}: {}", stderr(&out));
    }
}

/// The knob a change of the proof turns, as the calibration names its kind.
fn kind_of(sets: &str) -> &'static str {
    use inferlint_core::analyses::whatif::band::Kind;
    let Some(first) = sets.split_whitespace().next() else {
        return "Kind::None";
    };
    let change =
        inferlint_core::analyses::whatif::change::parse(inferlint_core::Engine::Vllm, first)
            .expect("each CHANGE file names a change --set takes");
    match Kind::of(change.knob) {
        Some(Kind::Concurrency) => "Kind::Concurrency",
        Some(Kind::RunningLimit) => "Kind::RunningLimit",
        Some(Kind::CacheSize) => "Kind::CacheSize",
        Some(Kind::Rate) => "Kind::Rate",
        Some(Kind::None) | None => panic!("{sets}: a change the calibration has no kind for"),
    }
}

fn log_error(p: Option<f64>, m: Option<f64>) -> String {
    match (p, m) {
        (Some(p), Some(m)) if p > 0.0 && m > 0.0 => format!("Some({:.4})", (p / m).ln()),
        _ => "None".to_owned(),
    }
}

const FIGURE_KEYS: [&str; 5] = [
    "output_tok_s",
    "ttft_p50_s",
    "ttft_p99_s",
    "tpot_p50_s",
    "tpot_p99_s",
];

/// The calibration data of `inferlint_core::analyses::whatif::band`, made from the proof's rows: each
/// change's `ln(predicted / measured)` per figure, and each situation's two runs of one
/// setup.
fn calibration_source(rows: &[Row]) -> String {
    let mut out = String::from(
        "/// The real changes of `fixtures/real/vllm-0.32-cpu/whatif/`, each prediction's error.\n#[rustfmt::skip]\npub const TRUTHS: &[Truth] = &[\n",
    );
    let mut spreads = String::from(
        "/// Each situation's two runs of one setup, `|ln(baseline / baseline-again)|` per figure.\n#[rustfmt::skip]\npub const SPREADS: &[(&str, [Option<f64>; 5])] = &[\n",
    );
    for r in rows {
        let change = if r.change.starts_with('(') {
            ""
        } else {
            &r.change
        };
        let errors: Vec<String> = FIGURE_KEYS
            .iter()
            .map(|k| log_error(figure(&r.predicted, k), figure(&r.measured, k)))
            .collect();
        out.push_str(&format!(
            "    Truth {{\n        situation: {:?},\n        change: {:?},\n        kind: {},\n        extrapolation: {:.4},\n        log_error: [{}],\n    }},\n",
            r.situation,
            change,
            kind_of(change),
            r.extrapolation,
            errors.join(", ")
        ));
        if change.is_empty() {
            let sizes: Vec<String> = FIGURE_KEYS
                .iter()
                .map(
                    |k| match (figure(&r.baseline_measured, k), figure(&r.measured, k)) {
                        // Rounded up: a floor written rounded down would let a band
                        // be a hair narrower than the two runs' own spread.
                        (Some(a), Some(b)) if a > 0.0 && b > 0.0 => {
                            format!("Some({:.4})", ((a / b).ln().abs() * 1e4).ceil() / 1e4)
                        }
                        _ => "None".to_owned(),
                    },
                )
                .collect();
            spreads.push_str(&format!(
                "    ({:?}, [{}]),\n",
                r.situation,
                sizes.join(", ")
            ));
        }
    }
    out.push_str("];\n\n");
    spreads.push_str("];\n");
    out + &spreads
}

const CALIBRATION_BEGIN: &str = "// calibration data: regenerated by `INFERLINT_WRITE_WHATIF_TABLE=1 cargo test -p inferlint-cli --test tests whatif::`\n";
const CALIBRATION_END: &str = "// end of calibration data";

/// The bands `whatif` prints are calibrated on the real changed runs: the committed data
/// must be what the fixtures give today, or a change to the model would keep printing
/// bands measured on another model.
#[test]
fn the_committed_calibration_is_the_one_the_real_runs_give() {
    let made = calibration_source(rows());
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../inferlint-core/src/analyses/whatif/band.rs");
    let code = std::fs::read_to_string(&path).unwrap();
    let start = code
        .find(CALIBRATION_BEGIN)
        .expect("band.rs holds the data's start marker")
        + CALIBRATION_BEGIN.len();
    let end = code
        .find(CALIBRATION_END)
        .expect("band.rs holds the data's end marker");
    if std::env::var_os("INFERLINT_WRITE_WHATIF_TABLE").is_some() {
        std::fs::write(&path, format!("{}{made}{}", &code[..start], &code[end..])).unwrap();
        return;
    }
    assert_eq!(
        &code[start..end],
        made,
        "band.rs's calibration is not the fixtures' (INFERLINT_WRITE_WHATIF_TABLE=1 rewrites it)"
    );
}

/// A printed band is never narrower than the server's own repeat: the same setup run
/// twice (each situation's baseline and `baseline-again`) moved its output rate and TTFTs
/// by 5 to 64%, so a band narrower than that claims more than two runs of the engine
/// agree on (the band once printed was the fit's error on the run itself: ±0% on a setup
/// that moved 8% between two runs). And where a band is printed, it is the one the
/// calibration makes for that change.
#[test]
fn a_printed_band_is_never_narrower_than_two_runs_of_one_setup() {
    let rows = rows();
    let mut checked = 0;
    for r in rows.iter().filter(|r| !r.bands.is_null()) {
        let again = rows
            .iter()
            .find(|a| a.situation == r.situation && a.change.starts_with('('))
            .expect("each situation ran its baseline twice");
        for b in r.bands.as_array().unwrap() {
            let key = b["figure"].as_str().unwrap();
            let (low, high) = (b["low"].as_f64().unwrap(), b["high"].as_f64().unwrap());
            let predicted = figure(&r.predicted, key).unwrap();
            assert!(
                low < predicted && predicted < high,
                "{} {}: {b}",
                r.situation,
                r.change
            );
            let (one, two) = (
                figure(&again.baseline_measured, key).unwrap(),
                figure(&again.measured, key).unwrap(),
            );
            let spread = (one / two).ln().abs();
            let half = (high / predicted).ln();
            assert!(
                half >= spread - 1e-9,
                "{} {} {key}: band ±{half:.3} (ln) is narrower than the two runs' {spread:.3}",
                r.situation,
                r.change
            );
            checked += 1;
        }
    }
    assert!(checked >= 30, "bands checked: {checked}");
}

/// A band is only what was measured: no block size was ever changed on the real engine,
/// and the farthest a measured change ran outside its baseline's running counts was 4
/// times (running-cap, 2 -> 8 at once). A block-size change, and kv-too-small's 24 requests all open
/// at once (concurrency 32, a cache for all of them) from a run that ran at most 5 (4.8
/// times), print their figures with no calibrated band, saying why, and the second says
/// it is extrapolated.
#[test]
fn a_change_outside_what_was_measured_has_no_calibrated_band() {
    let root = proof_root();
    let healthy = root.join("healthy/baseline");
    let small = root.join("kv-too-small/baseline");
    for (args, why) in [
        (
            vec![healthy.to_str().unwrap(), "--set", "block-size=64"],
            "no change of --block-size was made on a real engine",
        ),
        (
            vec![
                small.to_str().unwrap(),
                "--set",
                "concurrency=32",
                "--set",
                "kv-cache-memory-bytes=8912896",
            ],
            "the farthest change measured went 4.0 times",
        ),
    ] {
        let p = &whatif_json(&args)["prediction"];
        assert_eq!(p["bands"].as_array().map(Vec::len), Some(0), "{args:?}");
        let withheld = p["band_withheld"].as_str().unwrap_or_default();
        assert!(
            withheld.starts_with("no calibrated band: outside what was measured")
                && withheld.contains(why),
            "{args:?}: {withheld}"
        );
        assert!(figure(&p["predicted"], "output_tok_s").is_some());
    }
    let p = &whatif_json(&[
        small.to_str().unwrap(),
        "--set",
        "concurrency=32",
        "--set",
        "kv-cache-memory-bytes=8912896",
    ])["prediction"];
    assert!(p["extrapolated"]
        .as_str()
        .unwrap()
        .starts_with("extrapolated: at most 24 running"));
    // Text: the figure is printed, and the band says why it has none.
    let out = inferlint(
        Path::new("."),
        &[
            "whatif",
            healthy.to_str().unwrap(),
            "--set",
            "block-size=64",
        ],
    );
    assert!(
        stdout(&out).contains("Note: no calibrated band: outside what was measured"),
        "{}",
        stdout(&out)
    );
}

/// A plain `vllm bench serve` result (no `--save-detailed`) keeps no per-request records,
/// but its settings (24 prompts, 8 at a time, no rate) and the server's counters (768
/// prompt and 5,376 generation tokens over 24 requests: 32 + 224 each) say what was
/// sent. kv-too-small's baseline, its records taken out, is replayed from them: 5 usable
/// blocks cannot hold 8 requests of 2 blocks, so it preempts, as the server's counter
/// did (17); with `--max-num-seqs 2` or a cache for all 8 it preempts nothing, as the
/// real changed runs did. It says what it assumed, and claims no calibrated band.
#[test]
fn a_result_without_records_is_replayed_from_the_loads_settings_and_says_what_it_assumed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("plain");
    crate::common::copy_tree(&proof_root().join("kv-too-small/baseline"), &dir);
    let bench = dir.join("bench.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&bench).unwrap()).unwrap();
    for key in [
        "input_lens",
        "output_lens",
        "ttfts",
        "itls",
        "latencies",
        "start_times",
        "queue_times",
        "generated_texts",
        "errors",
    ] {
        v.as_object_mut().unwrap().remove(key);
    }
    std::fs::write(&bench, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let dir = dir.to_str().unwrap();
    let base = whatif_json(&[dir]);
    let assumed: Vec<&str> = base["baseline"]["assumed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        assumed[0].contains("24 requests replayed, each of 32 prompt and 224 output tokens"),
        "{assumed:?}"
    );
    assert!(
        assumed.iter().any(|a| a.contains("8 at a time")),
        "{assumed:?}"
    );
    assert!(figure(&base["baseline"]["as_run"], "evictions").unwrap() > 0.0);
    for set in ["max-num-seqs=2", "kv-cache-memory-bytes=2228224"] {
        let p = &whatif_json(&[dir, "--set", set])["prediction"];
        assert_eq!(figure(&p["predicted"], "evictions"), Some(0.0), "{set}");
        assert!(p["band_withheld"]
            .as_str()
            .unwrap()
            .contains("tool's settings"));
    }
}

/// docs/whatif.md lists every setting `--set` takes, in each engine's own spelling: the
/// engine tables are where a setting is added (CONTRIBUTING's recipe), and a setting the
/// page does not name is one a reader cannot find.
#[test]
fn the_docs_name_every_setting_set_takes() {
    let page =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/whatif.md"))
            .unwrap();
    for engine in [
        inferlint_core::Engine::Vllm,
        inferlint_core::Engine::Sglang,
        inferlint_core::Engine::Trtllm,
    ] {
        for name in inferlint_core::analyses::whatif::change::accepted(engine) {
            assert!(
                page.contains(&format!("`{name}`")),
                "docs/whatif.md does not name {engine:?}'s `{name}`"
            );
        }
    }
}
