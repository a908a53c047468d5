//! Every figure a reader copies from the page is the run's own: the throughput is the load
//! tool's, a percentile is the load tool's definition of it, the load's span is the one
//! the load tool timed, a simulated run says so, a hybrid model's pool says what it
//! counts, and the charts draw the load, not the time around it. Each expectation is read
//! from the run's own files (`vllm bench serve`'s result keys, the boot log's lines), never
//! from what the page printed before.

use std::path::Path;

use inferlint_core::story::insights::format_duration_ms;
use inferlint_report::STYLE;
use serde_json::Value;

use crate::common::{demo, folder, sim_folder, DEMO};

/// `vllm bench serve`'s result file of a run folder.
fn result_file(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("bench.json")).unwrap()).unwrap()
}

/// The value of the tile labelled `label`, and the tile's whole markup.
fn tile<'a>(html: &'a str, label: &str) -> Option<(&'a str, &'a str)> {
    let at = html.find(&format!("<span class=\"label\">{label}</span>"))?;
    let start = html[..at].rfind("<li class=\"tile\">")?;
    let end = at + html[at..].find("</li>")?;
    let whole = &html[start..end];
    let value = whole
        .split("<span class=\"value\">")
        .nth(1)?
        .split("</span>")
        .next()?;
    Some((value, whole))
}

/// A figure as printed (`1,412`, `323`, `20.1`) read back as a number.
fn number(text: &str) -> f64 {
    text.replace(',', "").parse().unwrap()
}

/// The headline "Output tokens per second" is the load tool's `output_throughput` (its
/// output tokens over the requests it timed), not T10's rate over the readings' window
/// (276 in the demo, whose window also holds a warm-up request and the tool's start and
/// wind-down); T10's figure sits in its own tile, labelled as the server's count, with
/// T10's verdict.
#[test]
fn the_headline_throughput_is_the_load_tools() {
    let html = demo().render();
    let bench = result_file(&sim_folder(DEMO));
    let expected = bench["output_throughput"].as_f64().unwrap();
    let (value, whole) = tile(&html, "Output tokens per second").expect("a throughput tile");
    assert!(
        (number(value) - expected).abs() < 0.5,
        "the headline says {value}, the load tool measured {expected}"
    );
    assert!(
        !whole.contains("class=\"badge"),
        "no T10 badge on the load tool's figure"
    );
    let (_, t10) = tile(&html, "The server's count over the readings' window")
        .expect("T10's rate in a tile of its own");
    assert!(t10.contains("Pass"), "T10's verdict with its figure: {t10}");
}

/// Without the load tool's result, the headline is the server's count over the readings'
/// window, and says so and that no load tool timed the run.
#[test]
fn without_a_load_tool_the_headline_says_whose_count_it_is() {
    let mut checked = demo();
    checked.run.bench = None;
    let html = checked.render();
    let (value, whole) = tile(&html, "Output tokens per second").expect("a throughput tile");
    let t10 = checked
        .results
        .iter()
        .find(|r| r.tripwire == inferlint_core::Tripwire::T10)
        .unwrap();
    let rate = t10.evidence_as::<f64>("rate_per_s").unwrap();
    assert_eq!(value, format!("{rate:.2}"));
    assert!(
        whole.contains("the server&#x27;s count over the readings&#x27; window")
            || whole.contains("the server's count over the readings' window"),
        "{whole}"
    );
    assert!(whole.contains("no load tool"), "{whole}");
}

/// The time-to-first-token histogram's median and p99 are the ones `vllm bench serve`
/// printed (`median_ttft_ms`, `p99_ttft_ms`, numpy's linear percentiles over the same
/// requests), so the histogram and the card agree: 32 requests whose TTFTs fall in two
/// groups have a median half-way between the 16th and 17th, not the 16th (23.9 s).
#[test]
fn the_ttft_histogram_gives_the_load_tools_percentiles() {
    let html = demo().render();
    let bench = result_file(&sim_folder(DEMO));
    let median = format_duration_ms(bench["median_ttft_ms"].as_f64().unwrap());
    let p99 = format_duration_ms(bench["p99_ttft_ms"].as_f64().unwrap());
    let figure = &html[html.find("id=\"fig-ttft\"").expect("a TTFT histogram")..];
    let caption = &figure[..figure.find("</figcaption>").unwrap()];
    assert!(
        caption.contains(&format!("Median {median}, p99 {p99},")),
        "the load tool's median {median} and p99 {p99}: {caption}"
    );
    let (card, _) = tile(&html, "Time to first token, median").unwrap();
    assert_eq!(card, median);
}

/// "The load tool kept N requests open for ..." gives the load tool's timed `duration`
/// (99.0 s), not the readings' window (2 min 0 s), which also holds its start, warm-up
/// and wind-down.
#[test]
fn the_loads_span_is_the_one_the_load_tool_timed() {
    let html = demo().render();
    let bench = result_file(&sim_folder(DEMO));
    let duration = bench["duration"].as_f64().unwrap();
    let concurrency = bench["max_concurrency"].as_u64().unwrap();
    assert!(
        html.contains(&format!(
            "The load tool kept {concurrency} requests open for {duration:.1} s"
        )),
        "the load's span is {duration:.1} s"
    );
}

/// The simulator writes `# simulated by inferlint-sim` at the head of each reading: the
/// page says "simulated" in its title and header. A real recording's page does not.
#[test]
fn a_simulated_run_says_so_and_a_real_one_does_not() {
    let before = std::fs::read_to_string(sim_folder(DEMO).join("before.snapshot.json")).unwrap();
    assert!(before.contains("# simulated by inferlint-sim"));
    let html = demo().render();
    let title = &html[html.find("<title>").unwrap()..html.find("</title>").unwrap()];
    assert!(title.contains("Simulated"), "{title}");
    let header = &html[html.find("<header").unwrap()..html.find("</header>").unwrap()];
    assert!(header.contains("class=\"simulated-badge\""), "{header}");
    assert!(header.contains("made by inferlint-sim"), "{header}");

    let real = folder(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/real/vllm-0.32-cpu/healthy-vllm-bench"),
    )
    .render();
    assert!(!real.contains("class=\"simulated-badge\""));
    assert!(!real.contains("A simulated run."));
}

/// The demo's hybrid model: vLLM's log says "GPU KV cache size: 24,696 tokens, Maximum
/// concurrency for 16,384 tokens per request: 1.51x" (its tokens are that concurrency
/// times that length, each request also holding its state blocks), while 42 usable
/// blocks of 784 tokens are 32,928 tokens of blocks. The header says both, each with what
/// it counts.
#[test]
fn a_hybrid_models_pool_says_what_it_counts() {
    let boot = std::fs::read_to_string(sim_folder(DEMO).join("boot.log")).unwrap();
    assert!(boot.contains(
        "GPU KV cache size: 24,696 tokens, Maximum concurrency for 16,384 tokens per request: 1.51x"
    ));
    assert!(boot.contains("Setting attention block size to 784 tokens"));
    let html = demo().render();
    let meta = &html[html.find("<p class=\"meta\">").unwrap()..];
    let meta = &meta[..meta.find("</p>").unwrap()];
    assert!(
        meta.contains("24,696-token KV pool as vLLM&#x27;s log counts it: 1.51 requests of 16,384 tokens, each also holding its own state blocks")
            || meta.contains("24,696-token KV pool as vLLM's log counts it: 1.51 requests of 16,384 tokens, each also holding its own state blocks"),
        "{meta}"
    );
    assert!(
        meta.contains(&format!(
            "42 usable blocks of 784 tokens ({} tokens of blocks",
            inferlint_core::story::fmt::thousands(42 * 784)
        )),
        "{meta}"
    );
}

/// `data-from` and `data-span` of the time chart `id`.
fn drawn_window(html: &str, id: &str) -> (f64, f64) {
    let at = html
        .find(&format!("data-chart=\"{id}\""))
        .unwrap_or_else(|| panic!("a {id} chart"));
    let tag = &html[html[..at].rfind('<').unwrap()..at + html[at..].find('>').unwrap()];
    let attr = |name: &str| -> f64 {
        let from = tag.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        tag[from..from + tag[from..].find('"').unwrap()]
            .parse()
            .unwrap()
    };
    (attr("data-from"), attr("data-span"))
}

/// A real run whose load took 2.3 s of a 10 s recording (`vllm bench serve`'s `duration`):
/// the server was idle before it, and the time charts draw the load's span, marking the
/// idle rest as left out, rather than squeezing the load into the right quarter.
#[test]
fn the_time_charts_draw_the_loads_span() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real/vllm-0.32-cpu/traced-kv-too-small");
    let duration = result_file(&dir)["duration"].as_f64().unwrap();
    let checked = folder(&dir);
    let recording = checked.timeline.as_ref().unwrap().span_s();
    assert!(duration < recording / 2.0, "the fixture's load is short");
    let html = checked.render();
    for chart in ["requests", "kv"] {
        let (from, span) = drawn_window(&html, chart);
        assert!(from > 0.0, "{chart}: drawn from {from} s");
        // The load's span, with a little room either side, not the recording's.
        assert!(
            span >= duration && span <= duration * 1.1 + 0.6,
            "{chart}: draws {span} s for a load of {duration} s in {recording} s"
        );
    }
    assert!(html.contains("idle, not drawn"));
}

/// The "fit in the cache" line runs along the running line when the cache is full (the
/// requests that fit are the ones running): its colour must stand apart from the running
/// line's in hue, in the light theme and the dark one, so that both read.
#[test]
fn the_fit_line_stands_apart_from_the_running_line() {
    fn hue(hex: &str) -> f64 {
        let v = |i: usize| f64::from(u8::from_str_radix(&hex[i..i + 2], 16).unwrap()) / 255.0;
        let (r, g, b) = (v(1), v(3), v(5));
        let (max, min) = (r.max(g).max(b), r.min(g).min(b));
        let d = max - min;
        if d == 0.0 {
            0.0
        } else if max == r {
            60.0 * (((g - b) / d).rem_euclid(6.0))
        } else if max == g {
            60.0 * ((b - r) / d + 2.0)
        } else {
            60.0 * ((r - g) / d + 4.0)
        }
    }
    let colours = |name: &str| -> Vec<String> {
        STYLE
            .match_indices(&format!("--{name}: #"))
            .map(|(i, m)| STYLE[i + m.len() - 1..i + m.len() + 6].to_owned())
            .collect()
    };
    let (fit, running) = (colours("fit"), colours("running"));
    assert_eq!(fit.len(), running.len());
    assert!(!fit.is_empty());
    for (f, r) in fit.iter().zip(&running) {
        let apart = (hue(f) - hue(r)).abs();
        let apart = apart.min(360.0 - apart);
        assert!(
            apart >= 60.0,
            "fit {f} and running {r} are {apart:.0} degrees apart"
        );
    }
    assert!(STYLE.contains(".s-fit {"), "the fit line has its own style");
}

/// `--json` carries no account: the run's throughput rides in T10's evidence beside its
/// rate, the load tool's `output_throughput` and said to be the result file's.
#[test]
fn the_json_gives_the_runs_throughput_beside_t10s_rate() {
    let checked = demo();
    let bench = result_file(&sim_folder(DEMO));
    let t10 = checked
        .results
        .iter()
        .find(|r| r.tripwire == inferlint_core::Tripwire::T10)
        .unwrap();
    assert_eq!(
        t10.evidence_as::<f64>("run_output_throughput"),
        bench["output_throughput"].as_f64()
    );
    assert_eq!(
        t10.evidence_as::<String>("run_output_throughput_from")
            .as_deref(),
        Some("result_file")
    );
    assert!(t10
        .message
        .ends_with(", the server's count over the readings' window"));
}

/// SGLang keeps a hybrid model's state in a pool of its own (its mamba state cache, which
/// caps the running requests) and its "KV Cache is allocated ... #tokens: N" states no
/// concurrency: the header gives the pool as the log does, with no claim of what a
/// request holds in it. (The recorded SGLang run, where `INFERLINT_RECORDED` names the
/// recordings.)
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn a_pool_whose_log_states_no_concurrency_is_said_as_the_log_says_it() {
    let recorded = crate::common::recorded();
    let dir = recorded.join("sglang-0.5/capped");
    let boot: String = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.ok()?.path();
            (p.extension()? == "log").then(|| std::fs::read_to_string(p).unwrap())
        })
        .collect();
    assert!(boot.contains("by the mamba state cache"));
    assert!(boot.contains("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 17675"));
    assert!(!boot.contains("Maximum concurrency"));
    let html = folder(&dir).render();
    let meta = &html[html.find("<p class=\"meta\">").unwrap()..];
    let meta = &meta[..meta.find("</p>").unwrap()];
    assert!(meta.contains("17,675-token KV pool \u{b7}"), "{meta}");
    assert!(!meta.contains("counts it"), "{meta}");
}
