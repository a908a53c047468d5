//! What a recording asks of the server after its first scrape: only the samples it reads,
//! narrowed by the server where it honours prometheus_client's `name[]` filter, and
//! nothing lost by asking for less.
//!
//! The server here serves one fixed page, a real vLLM 0.32 `/metrics` page
//! (`fixtures/real/vllm-0.32-cpu/healthy-vllm-bench/after.snapshot.json`): with the page
//! fixed, every sample a recording takes must read what the whole page says, whatever
//! was asked for, so each sample is held to the one the ordinary whole-page reading
//! (`prom::parse`, then `record::sample_from_metrics`) makes of that page.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use inferlint_core::model::{SeriesHeader, SeriesSample};
use inferlint_core::Engine;
use inferlint_engines::{files, prom, record as engine_record};
use inferlint_live::watch::Pages;
use inferlint_live::{record, RecordOptions};
use inferlint_sim::pages::{serve_pages, NameFilter};

fn real_page() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real/vllm-0.32-cpu/healthy-vllm-bench/after.snapshot.json");
    let text = std::fs::read_to_string(&path).expect("the real page's snapshot");
    let snapshot: serde_json::Value = serde_json::from_str(&text).expect("a snapshot is JSON");
    snapshot["text"]
        .as_str()
        .expect("a snapshot holds its text")
        .to_owned()
}

/// The sample the whole page makes, with no clock.
fn whole_page_sample(page: &str) -> SeriesSample {
    let engine = Engine::Vllm.descriptor();
    let metrics = engine.scrape_metrics(
        prom::parse(page)
            .expect("the real page reads")
            .samples()
            .to_vec(),
    );
    engine_record::sample_from_metrics(engine, &metrics, 0.0, None)
}

fn without_clock(mut sample: SeriesSample) -> SeriesSample {
    sample.t_wall = 0.0;
    sample.t_mono_ns = None;
    sample
}

/// Records the server for a short while into a folder; returns the series' header, its
/// samples and the after reading's text.
async fn recording(
    url: &str,
    pages: Pages,
    dir: &Path,
) -> (SeriesHeader, Vec<SeriesSample>, String) {
    let folder: PathBuf = dir.join(format!("{pages:?}"));
    let options = RecordOptions::default()
        .interval(Duration::from_millis(50))
        .duration(Duration::from_millis(400))
        .engine(Engine::Vllm)
        .pages(pages)
        .folder(&folder);
    let recording = record(url, &options, std::future::pending())
        .await
        .expect("the recording");
    let mut samples = Vec::new();
    let summary = files::read_series(&folder.join("run.series.jsonl"), |s| samples.push(*s))
        .expect("the series reads back");
    (
        summary.header.expect("a header"),
        samples,
        recording.after.text,
    )
}

async fn served(filter: NameFilter) -> String {
    let ports = serve_pages(Arc::new(real_page()), 1, filter)
        .await
        .expect("listening");
    format!("http://127.0.0.1:{}", ports[0])
}

/// A prometheus_client server: the samples after the first are asked of `/metrics/` with
/// `name[]`, the header says so and how many names, and every sample reads what the
/// whole page says. The after reading, which the counter checks read (histograms
/// included), is the whole page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_honours_the_filter_is_asked_for_less_and_nothing_is_lost() {
    let page = real_page();
    let url = served(NameFilter::Honoured).await;
    let dir = tempfile::tempdir().unwrap();
    let (header, samples, after) = recording(&url, Pages::AskForLess, dir.path()).await;
    let pages = header
        .pages
        .expect("the header says how pages were asked for");
    assert_eq!(pages.path, "/metrics/");
    assert_eq!(pages.whole_because, None);
    let asked = pages.filtered_to.expect("a filtered page");
    // Fewer names than the page serves: the page's histogram buckets alone are hundreds.
    let served_names: std::collections::BTreeSet<String> = prom::parse(&page)
        .unwrap()
        .samples()
        .iter()
        .map(|s| s.name.clone())
        .collect();
    assert!(
        asked > 0 && (asked as usize) < served_names.len(),
        "{asked} of {}",
        served_names.len()
    );
    assert!(samples.len() >= 3, "{}", samples.len());
    let expected = whole_page_sample(&page);
    for sample in samples {
        assert_eq!(without_clock(sample), expected);
    }
    assert_eq!(after, page);
}

/// Whole pages asked for: the header says so, and the samples are the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_pages_when_asked_read_the_same() {
    let page = real_page();
    let url = served(NameFilter::Honoured).await;
    let dir = tempfile::tempdir().unwrap();
    let (header, samples, _) = recording(&url, Pages::Whole, dir.path()).await;
    let pages = header.pages.unwrap();
    assert_eq!(pages.path, "/metrics");
    assert_eq!(pages.filtered_to, None);
    assert_eq!(
        pages.whole_because.as_deref(),
        Some("whole pages were asked for")
    );
    let expected = whole_page_sample(&page);
    assert!(samples.len() >= 3);
    for sample in samples {
        assert_eq!(without_clock(sample), expected);
    }
}

/// A server that answers the filtered question with nothing (prometheus_client in
/// multiprocess mode) or with the whole page (an exposition of its own) is not trusted
/// with it: the whole page is read, the header says why, and no sample loses a value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_drops_or_ignores_the_filter_is_read_whole() {
    let page = real_page();
    let expected = whole_page_sample(&page);
    for (filter, words) in [
        (NameFilter::Empty, "drops what it was asked for"),
        (NameFilter::Ignored, "ignores the filter"),
    ] {
        let url = served(filter).await;
        let dir = tempfile::tempdir().unwrap();
        let (header, samples, _) = recording(&url, Pages::AskForLess, dir.path()).await;
        let pages = header.pages.unwrap();
        assert_eq!(pages.path, "/metrics", "{filter:?}");
        assert_eq!(pages.filtered_to, None, "{filter:?}");
        let why = pages.whole_because.unwrap();
        // Both addresses were tried: the path as given ignores the query (vLLM's own
        // handler), and the path with a slash answered as `filter` does.
        assert!(
            why.contains("/metrics?name[]=... ignores the filter"),
            "{why}"
        );
        assert!(
            why.contains(&format!("/metrics/?name[]=... {words}")),
            "{why}"
        );
        assert!(samples.len() >= 3);
        for sample in samples {
            assert_eq!(without_clock(sample), expected, "{filter:?}");
        }
    }
}

/// A data-parallel vLLM page: two engines, the first with 100 usable blocks half full,
/// the second with 300 a tenth full. The server's KV use is the block-weighted mean,
/// (0.5 * 100 + 0.1 * 300) / 400 = 0.2 (a plain mean would say 0.3); the weights are the
/// cache info's block counts, which a filtered page after the first does not carry: the
/// recorder carries them from the first page, so every sample still reads 0.2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_pages_cache_info_weighs_every_sample_after_it() {
    let d = Engine::Vllm.descriptor();
    let info = d.cache_info.expect("vLLM states its cache");
    let page = format!(
        "# TYPE {running} gauge\n{running}{{engine=\"0\"}} 3.0\n{running}{{engine=\"1\"}} 5.0\n\
# TYPE {waiting} gauge\n{waiting}{{engine=\"0\"}} 0.0\n{waiting}{{engine=\"1\"}} 0.0\n\
# TYPE {kv} gauge\n{kv}{{engine=\"0\"}} 0.5\n{kv}{{engine=\"1\"}} 0.1\n\
# TYPE {info_m} gauge\n{info_m}{{{label}=\"0\",{blocks}=\"101\"}} 1.0\n{info_m}{{{label}=\"1\",{blocks}=\"301\"}} 1.0\n",
        running = d.running,
        waiting = d.waiting,
        kv = d.kv_usage,
        info_m = info.metric,
        label = info.engine_label,
        blocks = info.blocks_label,
    );
    let expected = whole_page_sample(&page);
    assert!(
        (expected.kv_usage.unwrap() - 0.2).abs() < 1e-12,
        "{expected:?}"
    );
    let ports = serve_pages(Arc::new(page), 1, NameFilter::Honoured)
        .await
        .expect("listening");
    let url = format!("http://127.0.0.1:{}", ports[0]);
    let dir = tempfile::tempdir().unwrap();
    let (header, samples, _) = recording(&url, Pages::AskForLess, dir.path()).await;
    assert_eq!(header.pages.unwrap().path, "/metrics/");
    assert!(samples.len() >= 3);
    for sample in samples {
        assert_eq!(without_clock(sample), expected);
    }
}

/// A server that takes 120 ms to answer the filtered question, recorded every 50 ms: the
/// choice outlasts an interval, so the samples' schedule starts once it is made. The
/// filter is still taken (not dropped for want of time), and no slot is missed for it:
/// the recording holds no gap record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_choice_delays_the_schedule_and_misses_no_slot() {
    let page = real_page();
    let ports = inferlint_sim::pages::serve_pages_slowly(
        Arc::new(page.clone()),
        1,
        NameFilter::Honoured,
        Duration::from_millis(120),
    )
    .await
    .expect("listening");
    let url = format!("http://127.0.0.1:{}", ports[0]);
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("slow");
    let options = RecordOptions::default()
        .interval(Duration::from_millis(50))
        .duration(Duration::from_millis(1200))
        .engine(Engine::Vllm)
        .pages(Pages::AskForLess)
        .folder(&folder);
    record(&url, &options, std::future::pending())
        .await
        .unwrap();
    let text = std::fs::read_to_string(folder.join("run.series.jsonl")).unwrap();
    let mut samples = Vec::new();
    let summary =
        files::read_series(&folder.join("run.series.jsonl"), |s| samples.push(*s)).unwrap();
    let pages = summary.header.unwrap().pages.unwrap();
    assert_eq!(pages.path, "/metrics/", "{pages:?}");
    assert!(pages.filtered_to.is_some());
    // Each filtered page takes 120 ms, longer than the interval: those slots are gaps the
    // recording states. None may come from the choice: the slot after it is an interval
    // after it, so the first sample after the first scrape is not a gap's neighbour of it.
    let first_gap = text.lines().position(|l| l.starts_with("{\"gap\""));
    assert!(first_gap.is_none_or(|line| line > 2), "{text}");
    assert!(samples.len() >= 2, "{text}");
}
