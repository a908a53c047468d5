//! Snapshot, series and result files: both directions of compatibility with the Python
//! tool's files, damaged input, and run-folder discovery.

use std::path::{Path, PathBuf};

use inferlint_core::{Engine, SeriesSample};
use inferlint_engines::files::{self, SeriesLine};

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn recorded_snapshots_read_with_clocks_and_all_samples() {
    let dir = crate::common::recorded();
    let s = files::read_snapshot(&dir.join("vllm-0.28/live/after.snapshot.json")).unwrap();
    assert_eq!(s.url, "http://127.0.0.1:8000/metrics");
    assert!(s.t_wall.is_some() && s.t_mono_ns.is_some() && s.latency_s.is_some());
    assert!(s.metrics.has("vllm:num_preemptions_total"));
    let bare = files::read_snapshot(&dir.join("vllm-0.28/metrics/preempted_after.prom")).unwrap();
    assert_eq!(bare.url, "file:preempted_after.prom");
    assert_eq!(bare.t_wall, None);
    assert_eq!(bare.t_mono_ns, None);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn snapshot_json_round_trips_and_keeps_the_text_unmodified() {
    let dir = crate::common::recorded();
    let path = dir.join("vllm-0.28/live/before.snapshot.json");
    let original = std::fs::read_to_string(&path).unwrap();
    let s = files::read_snapshot(&path).unwrap();
    let written = files::snapshot_json(&s);
    let again = files::parse_snapshot(&written, Path::new("x.json")).unwrap();
    assert_eq!(again.text, s.text);
    assert_eq!(again.t_mono_ns, s.t_mono_ns);
    assert_eq!(again.t_wall, s.t_wall);
    // Same keys, same order, same one-space indent as the Python tool's file.
    let keys = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.starts_with(" \""))
            .map(|l| l.split('"').nth(1).unwrap().to_owned())
            .collect()
    };
    assert_eq!(keys(&written), keys(&original));
    assert_eq!(
        written, original,
        "byte-identical to the Python tool's snapshot file"
    );
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn series_lines_round_trip_in_the_python_layout() {
    let dir = crate::common::recorded();
    let text = std::fs::read_to_string(dir.join("vllm-0.30/live/run.series.jsonl")).unwrap();
    let mut lines = text.lines();
    let header_line = lines.next().unwrap();
    let SeriesLine::Header(header) = files::parse_series_line(header_line) else {
        panic!("no header")
    };
    assert_eq!(files::series_header_json(&header), header_line);
    let engine = header.engine.unwrap_or(Engine::Vllm);
    for line in lines.take(50) {
        let SeriesLine::Sample(s) = files::parse_series_line(line) else {
            panic!("not a sample: {line}")
        };
        assert_eq!(files::series_sample_json(engine, &s), line);
    }
}

#[test]
fn fast_and_full_json_paths_agree() {
    let lines = [
        r#"{"t_wall": 1.5, "t_mono_ns": 7, "running": 2.0, "waiting": null, "kv_usage": 0.25}"#,
        r#"{ "t_wall" : 1.5 , "t_mono_ns" : 7 , "running" : 2.0 , "waiting" : null , "kv_usage" : 0.25 }"#,
        r#"{"kv_usage": 0.25, "running": 2, "t_mono_ns": 7.0, "t_wall": 1.5, "extra": "x\"y"}"#,
    ];
    let parsed: Vec<SeriesLine> = lines.iter().map(|l| files::parse_series_line(l)).collect();
    let expected = SeriesLine::Sample(SeriesSample {
        t_wall: 1.5,
        t_mono_ns: Some(7),
        running: Some(2.0),
        kv_usage: Some(0.25),
        ..SeriesSample::default()
    });
    for p in parsed {
        assert_eq!(p, expected);
    }
}

/// Found by fuzzing (series_line): a gap or restart record whose value is a number or
/// null took the fast path and read as a sample with no readings, so a failed scrape
/// counted as a sample. The key makes the record, whatever its value.
#[test]
fn a_gap_or_restart_record_with_a_number_is_a_marker_not_a_sample() {
    for line in [
        r#"{"t_wall": 1790470252.25, "t_mono_ns": 5, "gap": null}"#,
        r#"{"t_wall": 1790470252.25, "running": 32.0, "restart": 0.0}"#,
        r#"{"gap": 1, "t_wall": 1.5}"#,
    ] {
        assert_eq!(files::parse_series_line(line), SeriesLine::Marker, "{line}");
    }
}

#[test]
fn series_lines_that_are_not_samples_are_skipped() {
    for line in [
        r#"{"t_wall": null}"#,
        r#"{"running": 1}"#,
        "[1, 2]",
        "not json",
        r#"{"t_wall": 1.0, "runn"#,
        r#"{"t_wall": "x"}"#,
    ] {
        assert_eq!(
            files::parse_series_line(line),
            SeriesLine::Skipped,
            "{line}"
        );
    }
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn a_series_cut_mid_line_reads_every_complete_sample() {
    let dir = crate::common::recorded();
    let src = std::fs::read(dir.join("vllm-0.28/live/run.series.jsonl")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("cut.series.jsonl");
    std::fs::write(&path, &src[..src.len() - 30]).unwrap();
    let mut n = 0;
    let summary = files::read_series(&path, |_| n += 1).unwrap();
    assert_eq!(summary.samples, n);
    assert_eq!(summary.skipped, 1);
    assert_eq!(n, 364, "365 samples in the recording, the last one cut");
}

#[test]
fn series_from_another_tools_engine_key_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("x.series.jsonl");
    std::fs::write(
        &path,
        "{\"schema\": \"inferlint.series/1\", \"engine\": \"tgi\"}\n{\"t_wall\": 1.0}\n",
    )
    .unwrap();
    let err = files::read_series(&path, |_| {}).unwrap_err().to_string();
    assert!(err.contains("names engine 'tgi'"), "{err}");
}

#[test]
fn bench_results_json_and_json_lines() {
    let one = r#"{"completed": 32, "failed": 0, "total_output_tokens": 32000, "max_concurrency": 32, "duration": 95.1}"#;
    let b = files::parse_bench_result(one).unwrap();
    assert_eq!(
        (b.completed, b.total_output_tokens, b.max_concurrency),
        (Some(32), Some(32000), Some(32))
    );
    let lines = format!("{{\"completed\": 1}}\n{one}\n\n");
    assert_eq!(
        files::parse_bench_result(&lines).unwrap().completed,
        Some(32)
    );
    // Booleans are not numbers; floats are truncated.
    let odd = files::parse_bench_result(r#"{"completed": true, "failed": 2.9}"#).unwrap();
    assert_eq!((odd.completed, odd.failed), (None, Some(2)));
    assert!(files::parse_bench_result("").is_err());
    assert!(files::parse_bench_result("[1]").is_err());
    assert!(files::parse_bench_result("{\"completed\": 3").is_err());
}

/// SGLang's `python -m sglang.bench_serving` appends one `json.dumps` line per run: a run
/// without `--request-rate` stores `Infinity`, and the statistics of an empty list `NaN`.
#[test]
fn sglang_bench_serving_lines_with_python_floats_read() {
    let first = r#"{"backend": "sglang", "dataset_name": "random", "request_rate": Infinity, "max_concurrency": 32, "duration": 40.0, "completed": 1, "total_input_tokens": 88, "total_output_tokens": 1, "std_itl_ms": NaN, "mean_itl_ms": NaN, "mean_ttft_ms": 12.5}"#;
    let second = r#"{"backend": "sglang", "dataset_name": "random", "request_rate": Infinity, "max_concurrency": 32, "duration": 40.04, "completed": 32, "total_input_tokens": 2816, "total_output_tokens": 32000, "std_itl_ms": 2.31, "mean_ttft_ms": NaN, "p99_ttft_ms": -Infinity}"#;
    let b = files::parse_bench_result(&format!("{first}\n{second}\n")).unwrap();
    assert_eq!(
        (b.completed, b.total_output_tokens, b.max_concurrency),
        (Some(32), Some(32000), Some(32))
    );
    // A statistic that is not a number reads as missing, never as a value.
    assert_eq!((b.mean_ttft_ms, b.p99_ttft_ms), (None, None));
    assert_eq!(b.duration, Some(40.04));
    let single = files::parse_bench_result(first).unwrap();
    assert_eq!(single.completed, Some(1));
}

#[test]
fn untimed_requests_from_the_load_log() {
    assert_eq!(
        files::untimed_requests(
            "Starting initial single prompt test run...\nInitial test run completed.\n"
        ),
        1
    );
    assert_eq!(
        files::untimed_requests("Warming up with 4 requests...\n"),
        4
    );
    assert_eq!(
        files::untimed_requests("Warmup completed with 2 sequences.\n"),
        2
    );
    assert_eq!(files::untimed_requests("nothing here"), 0);
    // Found by fuzzing (load_log): counts past u64 panicked in a debug build and wrapped
    // to a small number in a release build.
    let huge = "Warming up with 18446744073709551615 requests...\n";
    assert_eq!(files::untimed_requests(&huge.repeat(2)), u64::MAX);
}

/// The recorded TensorRT-LLM run's load log: its one initial test request.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn untimed_requests_from_a_recorded_load_log() {
    let dir = crate::common::recorded();
    let log = std::fs::read_to_string(dir.join("trtllm-1.3/no-iter-stats/load.log")).unwrap();
    assert_eq!(files::untimed_requests(&log), 1);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn run_folders_are_found_by_name() {
    let dir = crate::common::recorded();
    let found = files::discover_run(&dir.join("sglang-0.5/qwen3-8b")).unwrap();
    assert_eq!(found.boot_logs.len(), 1);
    assert!(found
        .before
        .as_ref()
        .unwrap()
        .ends_with("before.snapshot.json"));
    assert!(found
        .after
        .as_ref()
        .unwrap()
        .ends_with("after.snapshot.json"));
    assert!(found.series.as_ref().unwrap().ends_with("run.series.jsonl"));
    assert!(found.bench.as_ref().unwrap().ends_with("bench.json"));
    let found = files::discover_run(&dir.join("trtllm-1.3/no-iter-stats")).unwrap();
    assert!(found.load_log.is_some());
}

/// Found by fuzzing (series_file): a sample whose time goes back, at the start of a
/// stretch, was refused by one pass but passed on by its stretch (and the samples after
/// it judged against it), so a file of 4 MiB or more, read on several threads, kept
/// readings a small one would not; and a refusal inside a stretch named the line it went
/// back from by the stretch's count, not the file's. However the file is cut, the
/// samples and the summary are one pass's.
#[test]
fn time_going_back_at_a_stretch_boundary_reads_as_in_one_pass() {
    /// A file's sample times, the ones one pass keeps, and its first refused line, how
    /// many were, and the line its time went back from.
    struct Case {
        times: &'static [f64],
        kept_by_one_pass: &'static [f64],
        refused: (usize, usize, usize),
    }
    let sample = |t: f64| format!(r#"{{"t_wall": {t:.1}, "running": 1.0}}"#);
    let cases = [
        Case {
            times: &[100.0, 50.0, 60.0, 200.0],
            kept_by_one_pass: &[100.0, 200.0],
            refused: (2, 2, 1),
        },
        Case {
            times: &[100.0, 200.0, 300.0, 250.0],
            kept_by_one_pass: &[100.0, 200.0, 300.0],
            refused: (4, 1, 3),
        },
    ];
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.series.jsonl");
    for case in cases {
        let Case {
            times,
            kept_by_one_pass,
            refused: (line, count, from),
        } = case;
        let text: String = times.iter().map(|&t| sample(t) + "\n").collect();
        std::fs::write(&path, text).unwrap();
        let read = |stretches| {
            files::fold_series_in(
                &path,
                stretches,
                Vec::new,
                |kept: &mut Vec<f64>, s| kept.push(s.t_wall),
                |mut a, b| {
                    a.extend(b);
                    a
                },
            )
            .unwrap()
        };
        let (kept, summary) = read(1);
        assert_eq!(kept, kept_by_one_pass);
        let refused = summary.refused.as_ref().unwrap();
        assert_eq!((refused.line, refused.count), (line, count));
        assert!(
            refused.what.contains(&format!("from line {from} ")),
            "{}",
            refused.what
        );
        for stretches in 2..=8 {
            assert_eq!(
                read(stretches),
                (kept.clone(), summary.clone()),
                "{times:?} in {stretches} stretches"
            );
        }
    }
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn folding_in_stretches_equals_one_pass() {
    use inferlint_core::judging::checks::series::{falling_ceiling, SeriesStats};
    let dir = crate::common::recorded();
    let mut text = std::fs::read(dir.join("vllm-0.28/live/run.series.jsonl")).unwrap();
    // A blank line, a garbage line and a cut-off last line, as real files can have.
    text.splice(300..300, b"\n\nnot json\n".iter().copied());
    text.truncate(text.len() - 25);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.series.jsonl");
    std::fs::write(&path, &text).unwrap();
    let key = |s: &SeriesStats| {
        format!(
            "{} {:?} {:?} {:?} {:?} {:?} {:?}",
            s.samples,
            s.peak_running,
            s.preemptions_seen(),
            s.infer_usable_blocks(),
            s.span_s(),
            s.busy_mean_running().map(|v| (v * 1e9).round()),
            falling_ceiling(Engine::Vllm.descriptor(), s, Some(42)).evidence,
        )
    };
    let mut one = SeriesStats::new();
    let sequential = files::read_series(&path, |s| one.push(s)).unwrap();
    for stretches in 1..=9 {
        let (stats, summary) = files::fold_series_in(
            &path,
            stretches,
            SeriesStats::new,
            |a, s| a.push(s),
            SeriesStats::merge,
        )
        .unwrap();
        assert_eq!(key(&stats), key(&one), "{stretches} stretches");
        assert_eq!(
            (summary.samples, summary.skipped),
            (sequential.samples, sequential.skipped)
        );
        assert_eq!(summary.header, sequential.header);
    }
}

/// The recorder's extra keys fold the same in stretches as in one pass: T16's counters
/// over the recording, T17's in-flight samples and T21's GPU readings, on the vLLM 0.28
/// xray series with readings added (another process from the middle on).
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn the_new_tripwires_fold_in_stretches_as_in_one_pass() {
    use inferlint_core::judging::checks::series::SeriesStats;
    use inferlint_core::judging::checks::shortfall::{client_shortfall, ShortfallInputs};
    use inferlint_core::judging::checks::{contention, prefix_cache};
    let dir = crate::common::recorded();
    let original = std::fs::read_to_string(dir.join("vllm-0.28/xray/run.series.jsonl")).unwrap();
    let mut text = String::new();
    let lines: Vec<&str> = original.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        let o = v.as_object_mut().unwrap();
        if o.contains_key("schema") {
            o.insert("gpu".into(), "nvml".into());
        } else if o.contains_key("t_wall") {
            let tenant = if i > lines.len() / 2 { 10_240.0 } else { 0.0 };
            let extra = serde_json::json!({
                "prefix_cache_hits": (i / 3) as f64,
                "prefix_cache_queries": 63.0 + 7.0 * i as f64,
                "gpu_other_mib": tenant, "gpu_other_util": tenant / 512.0,
                "gpu_util": 97.0, "gpu_throttle": 0.0,
                "gpu_sm_mhz": 1980.0 - (i % 7) as f64, "gpu_sm_max_mhz": 1980.0,
            });
            for (k, value) in extra.as_object().unwrap() {
                o.insert(k.clone(), value.clone());
            }
        }
        text.push_str(&v.to_string());
        text.push('\n');
    }
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.series.jsonl");
    std::fs::write(&path, &text).unwrap();
    let engine = Engine::Vllm.descriptor();
    let key = |s: &SeriesStats| {
        let t16 = prefix_cache::deltas_in_series(&engine.prefix_cache.unwrap(), s);
        let t17 = client_shortfall(&ShortfallInputs {
            engine,
            stats: s,
            requested: 32,
            boot: None,
            client: None,
            timeline: None,
        });
        let t21 = contention::gpu_contention(s).unwrap();
        format!(
            "{t16:?} {:?} {} {:?} {} {:?}",
            t17.status, t17.message, t21.status, t21.message, t21.evidence
        )
    };
    let mut one = SeriesStats::new();
    files::read_series(&path, |s| one.push(s)).unwrap();
    assert!(
        key(&one).contains("Fail"),
        "the tenant fails T21: {}",
        key(&one)
    );
    for stretches in 1..=9 {
        let (stats, _) = files::fold_series_in(
            &path,
            stretches,
            SeriesStats::new,
            |a, s| a.push(s),
            SeriesStats::merge,
        )
        .unwrap();
        assert_eq!(key(&stats), key(&one), "{stretches} stretches");
    }
}

/// The first and the last sample one pass passes on, from a full read.
fn ends_by_reading(path: &Path) -> Option<(SeriesSample, SeriesSample)> {
    let mut ends: Option<(SeriesSample, SeriesSample)> = None;
    if let Err(e) = files::read_series(path, |s| match ends.as_mut() {
        Some((_, last)) => *last = *s,
        None => ends = Some((*s, *s)),
    }) {
        panic!("{e}");
    }
    ends
}

/// The ends of a file, read from its head and tail, are the first and the last sample a
/// full read passes on, in every series of the fixtures.
#[test]
fn the_ends_of_every_series_are_its_first_and_last_sample() {
    let series = series_under(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures"));
    assert!(series.len() > 40, "{series:?}");
    ends_are_first_and_last(series);
}

/// The same of every series of the recordings.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn the_ends_of_every_recorded_series_are_its_first_and_last_sample() {
    let series = series_under(&crate::common::recorded());
    assert!(!series.is_empty());
    ends_are_first_and_last(series);
}

/// Every `*.series.jsonl` under `root`.
fn series_under(root: &Path) -> Vec<PathBuf> {
    let mut series = Vec::new();
    let mut folders = vec![root.to_owned()];
    while let Some(dir) = folders.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.to_string_lossy().ends_with(".series.jsonl") {
                series.push(path);
            }
        }
    }
    series
}

/// Each file's ends, read from its head and tail, are those a full read passes on.
fn ends_are_first_and_last(series: Vec<PathBuf>) {
    for path in series {
        let read = ends_by_reading(&path);
        let ends = files::series_ends(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // Only a refused line at an end (a second recording, time going back at the last
        // sample) makes the two differ; the reader then says so.
        if ends != read {
            let mut summary = None;
            let _ = files::read_series(&path, |_| {}).map(|s| summary = Some(s));
            assert!(
                summary.is_some_and(|s| s.refused.is_some()),
                "{}: ends {ends:?}, read {read:?}",
                path.display()
            );
        }
    }
}

fn sample_line(t: f64) -> String {
    format!(
        r#"{{"t_wall": {t:.2}, "t_mono_ns": {}, "running": 1.0}}"#,
        (t * 1e9) as i64
    )
}

/// What the reader passes over at either end, the ends pass over too: a header, a blank
/// line, a line that is not JSON, a reading that cannot be, a line longer than the reader
/// keeps; a cut-off last line that still reads as a sample counts, as the reader counts
/// it. A file larger than the window at each end is read at its ends only.
#[test]
fn the_ends_pass_over_what_the_reader_passes_over() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.series.jsonl");
    let header = r#"{"schema": "inferlint.series/1", "engine": "vllm", "interval_s": 0.25}"#;
    let overlong = format!(r#"{{"t_wall": 99.0, "pad": "{}"}}"#, "x".repeat(70_000));
    let cases: Vec<(String, Option<(f64, f64)>)> = vec![
        (
            [
                header,
                "",
                "not json",
                r#"{"t_wall": 5.0, "running": -1.0}"#,
            ]
            .iter()
            .map(|l| format!("{l}\n"))
            .chain([sample_line(10.0) + "\n", sample_line(11.0) + "\n"])
            .chain(["garbage\n".to_owned(), overlong.clone() + "\n"])
            .collect(),
            Some((10.0, 11.0)),
        ),
        // A last line without its newline, whole: a sample. Cut inside: not one.
        (
            format!("{header}\n{}\n{}", sample_line(10.0), sample_line(12.0)),
            Some((10.0, 12.0)),
        ),
        (
            format!(
                "{header}\n{}\n{}\n{}",
                sample_line(10.0),
                sample_line(11.0),
                &sample_line(12.0)[..20]
            ),
            Some((10.0, 11.0)),
        ),
        (format!("{header}\n"), None),
        (format!("{}\n", overlong), None),
    ];
    for (text, want) in cases {
        std::fs::write(&path, &text).unwrap();
        let ends = files::series_ends(&path).unwrap();
        assert_eq!(ends.map(|(a, b)| (a.t_wall, b.t_wall)), want, "{text:.200}");
        if want.is_some() {
            assert_eq!(ends, ends_by_reading(&path), "{text:.200}");
        }
    }
    // Over 2 MiB: the windows at the head and the tail (256 KiB each) do not meet, and
    // each ends or starts inside a line.
    let text: String = (0..40_000)
        .map(|i| sample_line(1000.0 + i as f64 * 0.25) + "\n")
        .collect();
    assert!(text.len() > 2 << 20);
    std::fs::write(&path, &text).unwrap();
    let ends = files::series_ends(&path).unwrap();
    assert_eq!(
        ends.map(|(a, b)| (a.t_wall, b.t_wall)),
        Some((1000.0, 10999.75))
    );
    assert_eq!(ends, ends_by_reading(&path));
}

/// A fold that keeps the time of every sample it is given, to see what a side fold sees.
#[derive(Debug, Clone, Default, PartialEq)]
struct Times(Vec<f64>);

impl inferlint_core::model::SampleFold for Times {
    fn push(&mut self, sample: &SeriesSample) {
        self.0.push(sample.t_wall);
    }

    fn merge(mut self, right: Times) -> Times {
        self.0.extend(right.0);
        self
    }
}

/// A fold carried beside the checks' statistics sees every sample one pass passes on, in
/// order, once, on a file read on several threads (over 4 MiB) as on a small one; with a
/// refused line the file is folded again in one pass, the side fold with it.
#[test]
fn a_side_fold_sees_what_one_pass_passes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.series.jsonl");
    let mut lines: Vec<String> = (0..70_000)
        .map(|i| sample_line(1000.0 + i as f64 * 0.25))
        .collect();
    for refuse in [false, true] {
        if refuse {
            // Time going back in the middle of the file, where a stretch starts.
            lines[35_000] = sample_line(10.0);
        }
        let text = lines.join("\n") + "\n";
        assert!(text.len() > 4 << 20);
        std::fs::write(&path, text).unwrap();
        let mut one_pass = Vec::new();
        let summary = files::read_series(&path, |s| one_pass.push(s.t_wall)).unwrap();
        assert_eq!(summary.refused.is_some(), refuse);
        for threads in [1, 2, 3] {
            let (stats, with_side, side) =
                files::read_series_stats_with(&path, threads, Some(Times::default()), None)
                    .unwrap();
            assert_eq!(side, Some(Times(one_pass.clone())), "{threads} threads");
            assert_eq!(stats.samples, one_pass.len());
            assert_eq!(with_side, summary);
            let (_, _, none) =
                files::read_series_stats_with::<Times>(&path, threads, None, None).unwrap();
            assert_eq!(none, None);
        }
    }
}

/// Read within the readings' window, the side fold (what the report draws) holds the
/// samples the checks fold and no other: 40 samples a second apart, a window over the
/// middle 20, on one thread and on several.
#[test]
fn a_side_fold_read_within_a_window_sees_only_the_runs_samples() {
    use inferlint_core::judging::checks::series::SeriesWindow;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.series.jsonl");
    let text: String = (0..40)
        .map(|i| sample_line(1000.0 + f64::from(i)) + "\n")
        .collect();
    std::fs::write(&path, text).unwrap();
    let window = SeriesWindow {
        wall: (1009.5, 1029.5),
        mono_ns: None,
        boot_wall: None,
    };
    for threads in [1, 3] {
        let (stats, _, side) =
            files::read_series_stats_with(&path, threads, Some(Times::default()), Some(window))
                .unwrap();
        let expected: Vec<f64> = (10..30).map(|i| 1000.0 + f64::from(i)).collect();
        assert_eq!(side, Some(Times(expected)), "{threads} threads");
        assert_eq!(
            (stats.samples, stats.outside_before, stats.outside_after),
            (20, 10, 10)
        );
    }
}
