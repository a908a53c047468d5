//! Our Prometheus text parser: real scrapes from every recorded engine, the corners of the
//! format one case each, and generated expositions that must read back to what was written.

use std::path::{Path, PathBuf};

use inferlint_core::{MetricSet, Sample};
use inferlint_engines::prom::{self, ParseError};
use proptest::prelude::*;

fn sample(name: &str, labels: &[(&str, &str)], value: f64) -> Sample {
    Sample {
        name: name.to_owned(),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        value,
        timestamp_ms: None,
    }
}

/// Parses `text`, which must hold exactly one sample, and returns it.
fn one(text: &str) -> Sample {
    let samples = prom::parse_samples(text).expect("the text parses");
    assert_eq!(samples.len(), 1, "one sample in {text:?}: {samples:?}");
    samples.into_iter().next().expect("one sample")
}

/// The error `text` must give.
fn error(text: &str) -> ParseError {
    match prom::parse_samples(text) {
        Ok(samples) => panic!("{text:?} parsed to {samples:?} where an error was expected"),
        Err(error) => error,
    }
}

/// Equal samples, where a NaN value equals a NaN value.
fn same_samples(left: &[Sample], right: &[Sample]) -> bool {
    left.len() == right.len()
        && left.iter().zip(right).all(|(a, b)| {
            a.name == b.name
                && a.labels == b.labels
                && a.timestamp_ms == b.timestamp_ms
                && (a.value == b.value || (a.value.is_nan() && b.value.is_nan()))
        })
}

/// Every `*.snapshot.json` and `*.prom` file under `dir`, sorted.
fn scrape_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).expect("the recordings folder is readable") {
            let path = entry.expect("a readable folder entry").path();
            let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                pending.push(path);
            } else if file_name.ends_with(".snapshot.json") || file_name.ends_with(".prom") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The exposition text of a snapshot file (its `text` field) or of a bare `.prom` file.
fn exposition_text(path: &Path) -> String {
    let content = std::fs::read_to_string(path).expect("the scrape file is UTF-8");
    if path.to_string_lossy().ends_with(".snapshot.json") {
        let snapshot: serde_json::Value =
            serde_json::from_str(&content).expect("the snapshot is JSON");
        snapshot["text"]
            .as_str()
            .expect("the snapshot has a text field")
            .to_owned()
    } else {
        content
    }
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn vllm_live_scrape_reads_all_430_samples() {
    let dir = crate::common::recorded();
    let text = std::fs::read_to_string(dir.join("vllm-0.28/live/raw_metrics.prom"))
        .expect("the vLLM 0.28 scrape is readable");
    // Counted independently of the parser: every non-blank line that is not a comment.
    let sample_lines = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .count();
    assert_eq!(sample_lines, 430);

    let metrics = prom::parse(&text).expect("the vLLM scrape parses");
    assert_eq!(metrics.len(), 430);
    let cache_info = metrics
        .info("vllm:cache_config_info")
        .expect("vllm:cache_config_info is present");
    assert!(cache_info.iter().any(|(name, _)| name == "num_gpu_blocks"));
    assert!(metrics.has("python_gc_objects_collected_total"));
    assert!(metrics.has("vllm:num_preemptions_total"));
    assert!(
        cache_info.windows(2).all(|pair| pair[0].0 < pair[1].0),
        "labels are sorted by name"
    );
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn every_recorded_scrape_parses() {
    let dir = crate::common::recorded();
    let files = scrape_files(&dir);
    assert!(
        files.len() >= 20,
        "expected the recorded scrapes, found {files:?}"
    );
    for path in &files {
        let text = exposition_text(path);
        let samples = prom::parse_samples(&text)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        assert!(!samples.is_empty(), "{} has no samples", path.display());
    }
}

/// The scrapes of the real vLLM 0.32 CPU runs kept in the repository.
fn scrapes_in_the_repository() -> Vec<PathBuf> {
    scrape_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/real"))
}

#[test]
fn a_narrow_read_gives_every_recorded_scrape_the_same_sample_and_counters() {
    let files = scrapes_in_the_repository();
    assert!(
        files.len() >= 20,
        "expected the real vLLM 0.32 scrapes, found {files:?}"
    );
    narrow_reads_are_whole_reads(&files);
}

/// The same of the recorded scrapes of every engine.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn a_narrow_read_gives_every_scrape_of_the_recordings_the_same_sample_and_counters() {
    let files = scrape_files(&crate::common::recorded());
    assert!(
        files.len() >= 20,
        "expected the recorded scrapes, found {files:?}"
    );
    narrow_reads_are_whole_reads(&files);
}

/// Each scrape read narrowly (the kept names of its engine) gives the whole read's kept
/// samples, the same recorded sample and the same counters.
fn narrow_reads_are_whole_reads(files: &[PathBuf]) {
    use inferlint_core::Engine;
    use inferlint_engines::record;
    for path in files {
        let text = exposition_text(path);
        let whole = prom::read(text.as_bytes()).expect("reads");
        let Some(engine) = Engine::from_metric_names(whole.samples.iter().map(|s| s.name.as_str()))
        else {
            continue;
        };
        let d = engine.descriptor();
        // What each scrape after the first asks, with what the first page said once
        // (a recorder carries it into every sample).
        let mut names = d.recorded_sample_names();
        names.extend(d.static_sample_names());
        let keep = prom::KeptNames::new(names);
        let narrow = prom::read_kept(text.as_bytes(), &keep).expect("reads");
        // Exactly the kept samples of the whole read, in the page's order.
        let expected: Vec<Sample> = whole
            .samples
            .iter()
            .filter(|s| keep.contains(&s.name))
            .cloned()
            .collect();
        assert!(
            same_samples(&narrow.samples, &expected),
            "{}",
            path.display()
        );
        assert!(
            narrow.samples.len() * 3 < whole.samples.len(),
            "{}: a narrow read keeps {} of {} samples, not the small part it should",
            path.display(),
            narrow.samples.len(),
            whole.samples.len()
        );
        // What a recorder writes of the scrape is the same: each sample key, read
        // through the engine's table, from the kept names alone.
        let whole_set = d.scrape_metrics(whole.samples.clone());
        let narrow_set = d.scrape_metrics(narrow.samples.clone());
        let a = record::sample_from_metrics(d, &whole_set, 0.0, None);
        let b = record::sample_from_metrics(d, &narrow_set, 0.0, None);
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "{}", path.display());
        // And every counter a restart is told by, or a verdict reads, is there: each
        // kept family's `_total`, and the request counter's `_created`, as the whole page
        // serves them.
        for name in keep.names() {
            assert_eq!(
                whole_set.total(name).map(f64::to_bits),
                narrow_set.total(name).map(f64::to_bits),
                "{}: {name}",
                path.display()
            );
        }
    }
}

#[test]
fn a_narrow_read_passes_over_what_it_does_not_keep_and_reads_the_rest_as_read_does() {
    let text = "# TYPE vllm:num_requests_running gauge\n\
vllm:num_requests_running{engine=\"0\"} 3\n\
vllm:e2e_request_latency_seconds_bucket{le=\"1.0\"} 5\n\
vllm:kv_cache_usage_perc{engine=\"0\"} not-a-number\n\
vllm:time_to_first_token_seconds_bucket{le=\"1.0\" broken\n\
  vllm:num_requests_waiting 2\n\
{engine=\"0\"} 7\n\
# EOF\n\
vllm:num_requests_waiting 99\n";
    let keep = prom::KeptNames::new([
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
    ]);
    let read = prom::read_kept(text.as_bytes(), &keep).expect("reads");
    let names: Vec<&str> = read.samples.iter().map(|s| s.name.as_str()).collect();
    // The kept gauge with a bad value stands as NaN (a sum over it cannot pass), the
    // bucket and the damaged bucket line are not kept and not counted, the line with no
    // name is skipped and counted as `read` counts it, and `# EOF` ends the page.
    assert_eq!(
        names,
        [
            "vllm:num_requests_running",
            "vllm:kv_cache_usage_perc",
            "vllm:num_requests_waiting"
        ]
    );
    assert_eq!(read.samples[0].value, 3.0);
    assert!(read.samples[1].value.is_nan());
    assert_eq!(read.samples[2].value, 2.0);
    assert_eq!(read.read, 2);
    assert_eq!(read.skipped, 2);
    assert_eq!(read.problems[0].line, 4);
    assert_eq!(read.problems[1].line, 7);
}

#[test]
fn names_with_colons_and_histogram_suffixes() {
    let text = "\
vllm:num_requests_running{engine=\"0\",model_name=\"qwen\"} 3.0
vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\"} 12
vllm:e2e_request_latency_seconds_sum 4.5
vllm:e2e_request_latency_seconds_count 12
vllm:e2e_request_latency_seconds_created 1.79047011896e+09
:leading_colon 1
_leading_underscore 2
";
    let samples = prom::parse_samples(text).expect("the text parses");
    let names: Vec<&str> = samples.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "vllm:num_requests_running",
            "vllm:e2e_request_latency_seconds_bucket",
            "vllm:e2e_request_latency_seconds_sum",
            "vllm:e2e_request_latency_seconds_count",
            "vllm:e2e_request_latency_seconds_created",
            ":leading_colon",
            "_leading_underscore",
        ]
    );
    assert_eq!(
        samples[0],
        sample(
            "vllm:num_requests_running",
            &[("engine", "0"), ("model_name", "qwen")],
            3.0
        )
    );
    assert_eq!(samples[1].label("le"), Some("+Inf"));
}

#[test]
fn label_values_unescape_and_may_hold_delimiters() {
    let got = one(r#"m{a="back\\slash",b="quote\"d",c="new\nline",d="}",e=",",f="=#{"} 1"#);
    assert_eq!(
        got,
        sample(
            "m",
            &[
                ("a", "back\\slash"),
                ("b", "quote\"d"),
                ("c", "new\nline"),
                ("d", "}"),
                ("e", ","),
                ("f", "=#{"),
            ],
            1.0
        )
    );
}

#[test]
fn unknown_escape_keeps_backslash_and_character() {
    assert_eq!(one(r#"m{a="x\ty\\"} 1"#).label("a"), Some("x\\ty\\"));
}

#[test]
fn labels_are_sorted_whatever_order_the_text_used() {
    let got = one(r#"m{zeta="1",alpha="2",mid="3"} 1"#);
    assert_eq!(
        got.labels,
        [
            ("alpha".to_owned(), "2".to_owned()),
            ("mid".to_owned(), "3".to_owned()),
            ("zeta".to_owned(), "1".to_owned())
        ]
    );
}

#[test]
fn trailing_comma_spaces_and_empty_label_sets() {
    let expected = sample("m", &[("a", "1"), ("b", "2")], 5.0);
    assert_eq!(one(r#"m{a="1",b="2",} 5"#), expected);
    assert_eq!(one(r#"m{ a = "1" , b = "2" , } 5"#), expected);
    assert_eq!(one("m {a=\"1\",b=\"2\"}\t5"), expected);
    assert_eq!(one("m{} 5"), sample("m", &[], 5.0));
}

#[test]
fn special_and_unusual_values() {
    assert!(one("m NaN").value.is_nan());
    assert!(one("m nan").value.is_nan());
    assert_eq!(one("m +Inf").value, f64::INFINITY);
    assert_eq!(one("m Inf").value, f64::INFINITY);
    assert_eq!(one("m -Inf").value, f64::NEG_INFINITY);
    assert_eq!(one("m 1.5e+03").value, 1500.0);
    assert_eq!(one("m 2E-2").value, 0.02);
    assert_eq!(one("m +7").value, 7.0);
    assert_eq!(one("m -0.25").value, -0.25);
}

#[test]
fn timestamps_are_kept_in_milliseconds() {
    let got = one("m{a=\"b\"} 1 1712345678901");
    assert_eq!(got.timestamp_ms, Some(1_712_345_678_901));
    assert_eq!(one("m 1 -5").timestamp_ms, Some(-5));
    assert_eq!(one("m 1").timestamp_ms, None);
}

#[test]
fn openmetrics_exemplars_are_ignored() {
    let got = one(r#"m_bucket{le="0.5"} 3 # {trace_id="abc"} 0.4 1712345678.9"#);
    assert_eq!(got, sample("m_bucket", &[("le", "0.5")], 3.0));
    let with_timestamp = one(r#"m_total 3 1000 # {trace_id="abc"} 1.0"#);
    assert_eq!(with_timestamp.timestamp_ms, Some(1000));
}

#[test]
fn comments_blank_lines_and_eof() {
    let text = "\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge

   vllm:num_requests_running 2   \r
#not a standard comment but still skipped
\t# TYPE indented comment
# EOF
this line is after EOF and is never read {{{
";
    let samples = prom::parse_samples(text).expect("the text parses");
    assert_eq!(samples, [sample("vllm:num_requests_running", &[], 2.0)]);
}

#[test]
fn empty_text_gives_no_samples() {
    assert_eq!(prom::parse_samples("").expect("empty parses"), []);
    assert_eq!(
        prom::parse_samples("\n\n  \n# HELP x y\n").expect("parses"),
        []
    );
    assert!(prom::parse("").expect("empty parses").is_empty());
}

#[test]
fn errors_name_the_line_and_the_fault() {
    let text = "# HELP m a metric\nm 1\n\nvllm:foo abc\n";
    assert_eq!(
        error(text),
        ParseError {
            line: 4,
            message: "bad value 'abc' for vllm:foo".to_owned()
        }
    );
    assert_eq!(
        error(text).to_string(),
        "line 4: bad value 'abc' for vllm:foo"
    );

    let cases = [
        ("m", "missing value for m"),
        ("m{a=\"b\"}", "missing value for m"),
        ("1m 2", "bad metric name at '1m'"),
        ("m-x 2", "bad metric name at 'm-x'"),
        ("m{a=\"b\" 2", "expected ',' or '}' after label a of m"),
        ("m{a=\"b", "unterminated value for label a of m"),
        ("m{a=\"b\\", "unterminated value for label a of m"),
        ("m{a=b} 1", "unquoted value for label a of m"),
        ("m{a} 1", "missing '=' after label a of m"),
        ("m{1a=\"b\"} 1", "bad label name at '1a=\"b\"} 1' for m"),
        ("m{a:b=\"c\"} 1", "missing '=' after label a of m"),
        ("m{,} 1", "bad label name at ',} 1' for m"),
        ("m{a=\"1\",a=\"2\"} 1", "duplicate label 'a' for m"),
        ("m{a=\"1\"", "unclosed label set for m"),
        ("m 1 12.5", "bad timestamp '12.5' for m"),
        ("m 1 2 3", "unexpected '3' after the timestamp of m"),
        ("m 1#x", "bad value '1#x' for m"),
    ];
    for (line, message) in cases {
        let got = error(&format!("ok 1\n{line}\n"));
        assert_eq!(got.line, 2, "{line:?}");
        assert_eq!(got.message, message, "{line:?}");
    }
}

#[test]
fn long_bad_tokens_are_cut_in_messages() {
    let long = "x".repeat(1000);
    let got = error(&format!("m {long}"));
    assert_eq!(got.message, format!("bad value '{}' for m", "x".repeat(40)));
}

#[test]
fn binary_garbage_errors_without_panicking() {
    let bytes: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    let text = String::from_utf8_lossy(&bytes);
    let got = error(&text);
    assert_eq!(got.line, 1);
}

#[test]
fn write_sample_prints_exposition_syntax() {
    let mut out = String::new();
    let mut with_timestamp = sample("vllm:x", &[("a", "q\"\\\n}"), ("b", "")], 0.1);
    with_timestamp.timestamp_ms = Some(42);
    prom::write_sample(&mut out, &with_timestamp);
    prom::write_sample(&mut out, &sample("m", &[], f64::NAN));
    prom::write_sample(&mut out, &sample("m", &[], f64::INFINITY));
    prom::write_sample(&mut out, &sample("m", &[], f64::NEG_INFINITY));
    prom::write_sample(&mut out, &sample("m", &[], 1e300));
    assert_eq!(
        out,
        "vllm:x{a=\"q\\\"\\\\\\n}\",b=\"\"} 0.1 42\nm NaN\nm +Inf\nm -Inf\nm 1e300\n"
    );
}

/// A metric name from the format's whole alphabet, `:` included.
fn metric_name() -> impl Strategy<Value = String> {
    "[a-zA-Z_:][a-zA-Z0-9_:]{0,24}"
}

/// Label values drawn from any character, weighted towards the ones that need escaping or
/// that delimit the label set.
fn label_value() -> impl Strategy<Value = String> {
    let character = prop_oneof![
        3 => any::<char>(),
        1 => prop::sample::select(vec!['"', '\\', '\n', '}', '{', ',', '=', '#', ' ', 'n']),
    ];
    prop::collection::vec(character, 0..16).prop_map(|chars| chars.into_iter().collect())
}

fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => any::<f64>(),
        2 => -1e6..1e6f64,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
    ]
}

fn generated_sample() -> impl Strategy<Value = Sample> {
    (
        metric_name(),
        // A map gives distinct label names, already in the sorted order the parser returns.
        prop::collection::btree_map("[a-zA-Z_][a-zA-Z0-9_]{0,12}", label_value(), 0..5),
        value(),
        proptest::option::of(any::<i64>()),
    )
        .prop_map(|(name, labels, value, timestamp_ms)| Sample {
            name,
            labels: labels.into_iter().collect(),
            value,
            timestamp_ms,
        })
}

/// Lines that are not samples, as a scrape interleaves them.
fn noise_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("   \t".to_owned()),
        (metric_name(), "[^\n]{0,30}").prop_map(|(name, help)| format!("# HELP {name} {help}")),
        metric_name().prop_map(|name| format!("# TYPE {name} counter")),
    ]
}

proptest! {
    #[test]
    fn written_samples_read_back_equal(
        entries in prop::collection::vec(
            (prop::collection::vec(noise_line(), 0..3), generated_sample()),
            0..20,
        )
    ) {
        let mut text = String::new();
        let mut written = Vec::new();
        for (noise, generated) in entries {
            for line in noise {
                text.push_str(&line);
                text.push('\n');
            }
            prom::write_sample(&mut text, &generated);
            written.push(generated);
        }
        let read = prom::parse_samples(&text)
            .map_err(|error| TestCaseError::fail(format!("{error} in {text:?}")))?;
        prop_assert!(same_samples(&read, &written), "{read:?} != {written:?} from {text:?}");
    }

    #[test]
    fn a_narrow_read_is_the_whole_read_less_what_it_does_not_keep(
        text in r#"[a-c_:{}="\\,# \t\n.0-9eNaf+-]{0,160}"#,
        kept in prop::collection::vec("[a-c_:]{1,3}", 0..6),
    ) {
        let keep = prom::KeptNames::new(kept);
        if let Ok(whole) = prom::read(text.as_bytes()) {
            let narrow = prom::read_kept(text.as_bytes(), &keep)
                .map_err(|error| TestCaseError::fail(format!("{error} in {text:?}")))?;
            let expected: Vec<Sample> =
                whole.samples.into_iter().filter(|s| keep.contains(&s.name)).collect();
            prop_assert!(same_samples(&narrow.samples, &expected), "{text:?}");
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        let _ = prom::parse_samples(&text);
    }

    #[test]
    fn sample_like_text_never_panics(text in r#"[a-z:_{}="\\,# \t\n.0-9eEINaf+-]{0,120}"#) {
        // Text made of the format's own characters reaches deeper than random Unicode.
        if let Ok(samples) = prom::parse_samples(&text) {
            let mut again = String::new();
            for parsed in &samples {
                prom::write_sample(&mut again, parsed);
            }
            let reread = prom::parse_samples(&again)
                .map_err(|error| TestCaseError::fail(format!("{error} in {again:?}")))?;
            prop_assert!(same_samples(&reread, &samples));
        }
    }
}

/// The set a recorder keeps for a server: a page's kept samples, then what it carries
/// from the first page; `None` when the page does not read cleanly.
fn kept_set(text: &str, keep: &prom::KeptNames, carried: &[Sample]) -> Option<MetricSet> {
    let read = prom::read_kept(text.as_bytes(), keep).ok()?;
    if read.skipped > 0 {
        return None;
    }
    let mut samples = read.samples;
    samples.extend(carried.iter().cloned());
    Some(MetricSet::new(samples))
}

/// A real vLLM 0.32 page read narrowly, then read again with new values: the set holds
/// the new values and keeps what was carried; a page with a series more, a label changed
/// or a damaged line is not read again, and the set is left as it was.
#[test]
fn a_real_page_reads_again_only_when_its_series_are_the_same() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real/vllm-0.32-cpu/healthy-vllm-bench/after.snapshot.json");
    let page = exposition_text(&path);
    let keep = prom::KeptNames::new([
        "vllm:num_requests_running",
        "vllm:generation_tokens_total",
        "vllm:request_success_total",
    ]);
    let carried = [sample(
        "vllm:cache_config_info",
        &[("num_gpu_blocks", "9")],
        1.0,
    )];
    let mut set = kept_set(&page, &keep, &carried).expect("the real page reads");
    let page_samples = set.len() - carried.len();
    // One running gauge, one generation counter, five finished reasons.
    assert_eq!(page_samples, 7);
    let generated = set
        .total("vllm:generation_tokens_total")
        .expect("a counter");
    let moved = page.replace(
        &format!(
            "vllm:generation_tokens_total{{engine=\"0\",model_name=\"tiny-llama\"}} {generated:?}"
        ),
        "vllm:generation_tokens_total{model_name=\"tiny-llama\",engine=\"0\"} 5000.0",
    );
    assert_ne!(moved, page, "the counter's line is in the page as written");
    assert!(prom::reread_kept(
        moved.as_bytes(),
        &keep,
        &mut set,
        page_samples
    ));
    let anew = kept_set(&moved, &keep, &carried).expect("reads");
    assert!(same_samples(set.samples(), anew.samples()));
    assert_eq!(set.total("vllm:generation_tokens_total"), Some(5000.0));
    assert_eq!(set.total("vllm:cache_config_info"), Some(1.0));

    let before = set.clone();
    let unchanged = |set: &MetricSet| same_samples(set.samples(), before.samples());
    let refused = [
        // A series more.
        format!(
            "{moved}vllm:request_success_total{{engine=\"1\",finished_reason=\"stop\",model_name=\"tiny-llama\"}} 1.0\n"
        ),
        // A label changed.
        moved.replace("finished_reason=\"abort\"", "finished_reason=\"cancel\""),
        // A damaged line.
        moved.replace("} 5000.0", "} five"),
    ];
    for page in &refused {
        assert_ne!(page, &moved);
        assert!(!prom::reread_kept(
            page.as_bytes(),
            &keep,
            &mut set,
            page_samples
        ));
        assert!(unchanged(&set), "{page}");
    }
    // A line it does not keep may change as it likes.
    let other = moved.replace(
        "vllm:num_requests_waiting{",
        "vllm:num_requests_waiting{x=\"y\",",
    );
    assert_ne!(other, moved);
    assert!(prom::reread_kept(
        other.as_bytes(),
        &keep,
        &mut set,
        page_samples
    ));
}

/// `series` written as a page, each line's labels in reverse order where `reversed`
/// says, with the reading given and a noise line before it.
fn page_of(series: &[Sample], readings: &[(f64, Option<i64>, bool, String)]) -> String {
    let mut text = String::new();
    for (sample, (value, timestamp_ms, reversed, noise)) in series.iter().zip(readings) {
        text.push_str(noise);
        text.push('\n');
        let mut line = sample.clone();
        line.value = *value;
        line.timestamp_ms = *timestamp_ms;
        if *reversed {
            line.labels.reverse();
        }
        prom::write_sample(&mut text, &line);
    }
    text.push_str("not_kept_at_all{a=\"b\"} 1\n");
    text
}

fn reading() -> impl Strategy<Value = (f64, Option<i64>, bool, String)> {
    (
        value(),
        proptest::option::of(any::<i64>()),
        any::<bool>(),
        noise_line(),
    )
}

proptest! {
    #[test]
    fn a_page_of_the_same_series_reads_again_as_it_reads_anew(
        series in prop::collection::vec(generated_sample(), 1..10),
        first in prop::collection::vec(reading(), 10),
        second in prop::collection::vec(reading(), 10),
        carried in prop::collection::vec(generated_sample(), 0..3),
    ) {
        let keep = prom::KeptNames::new(series.iter().map(|s| s.name.clone()));
        prop_assume!(!keep.contains("not_kept_at_all"));
        let mut set = kept_set(&page_of(&series, &first), &keep, &carried)
            .ok_or_else(|| TestCaseError::fail("the first page reads"))?;
        let again = page_of(&series, &second);
        prop_assert!(prom::reread_kept(again.as_bytes(), &keep, &mut set, series.len()), "{again:?}");
        let anew = kept_set(&again, &keep, &carried)
            .ok_or_else(|| TestCaseError::fail("the second page reads"))?;
        prop_assert!(same_samples(set.samples(), anew.samples()), "{again:?}");
    }

    #[test]
    fn a_page_read_again_is_what_it_reads_anew_or_the_set_is_left_as_it_was(
        series in prop::collection::vec(generated_sample(), 1..6),
        first in prop::collection::vec(reading(), 6),
        edits in prop::collection::vec(
            (any::<prop::sample::Index>(), 0usize..3, r#"[a-c_:{}="\\,# \t\n.0-9eNaf+-]{0,3}"#),
            1..4,
        ),
    ) {
        let keep = prom::KeptNames::new(series.iter().map(|s| s.name.clone()));
        let page = page_of(&series, &first);
        let mut set = kept_set(&page, &keep, &[])
            .ok_or_else(|| TestCaseError::fail("the first page reads"))?;
        let page_samples = set.len();
        let mut edited: Vec<char> = page.chars().collect();
        for (at, removed, inserted) in edits {
            let at = at.index(edited.len() + 1);
            let end = (at + removed).min(edited.len());
            edited.splice(at..end, inserted.chars());
        }
        let edited: String = edited.into_iter().collect();
        let before = set.clone();
        if prom::reread_kept(edited.as_bytes(), &keep, &mut set, page_samples) {
            let anew = kept_set(&edited, &keep, &[])
                .ok_or_else(|| TestCaseError::fail(format!("read again, but not anew: {edited:?}")))?;
            prop_assert!(same_samples(set.samples(), anew.samples()), "{edited:?}");
        } else {
            prop_assert!(same_samples(set.samples(), before.samples()), "{edited:?}");
        }
    }
}

/// SGLang's metrics as sgl-router's `/engine_metrics` serves them (every colon made an
/// underscore: `sglang_num_running_reqs`) or a colon-escaping Prometheus stores them: the
/// same run read from `sglang_` names is the same run. The real SGLang 0.5 recording
/// (`sglang-0.5/capped`) with every `sglang:` of its two scrapes written `sglang_` is told
/// SGLang's and gets every verdict, with every message, that the scrapes as served get.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn sglangs_metrics_with_the_colon_escaped_read_as_its_own() {
    use inferlint_core::run::check_run;
    use inferlint_engines::load::{self, EngineChoice};
    let recorded = crate::common::recorded();
    let served = recorded.join("sglang-0.5/capped");
    let tmp = tempfile::tempdir().unwrap();
    let escaped = tmp.path().join("capped");
    std::fs::create_dir(&escaped).unwrap();
    let mut renamed = 0;
    for entry in std::fs::read_dir(&served).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_owned();
        let mut bytes = std::fs::read(&path).unwrap();
        if name.to_string_lossy().ends_with(".snapshot.json") {
            let text = String::from_utf8(bytes).unwrap();
            renamed += text.matches("sglang:").count();
            bytes = text.replace("sglang:", "sglang_").into_bytes();
        }
        std::fs::write(escaped.join(name), bytes).unwrap();
    }
    assert!(
        renamed > 100,
        "the scrapes name SGLang's metrics ({renamed})"
    );
    let verdicts = |dir: &Path| {
        let files = load::find_run(dir).unwrap_or_else(|e| panic!("{e}"));
        let mut choice = EngineChoice::new(None);
        let run = load::load_run(&mut choice, &files, None, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(run.engine.engine, inferlint_core::Engine::Sglang);
        check_run(&run)
            .into_iter()
            // The folder's own path, which a message may name, is the one difference.
            .map(|r| {
                (
                    r.tripwire,
                    r.status,
                    r.message.replace(&*dir.to_string_lossy(), "DIR"),
                )
            })
            .collect::<Vec<_>>()
    };
    let as_served = verdicts(&served);
    assert!(as_served.len() > 10, "{as_served:?}");
    assert_eq!(verdicts(&escaped), as_served);
}
