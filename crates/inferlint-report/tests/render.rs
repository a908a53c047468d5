//! The demo run's report: well-formed, holding every verdict and insight, loading nothing,
//! and drawing what its data says.

use inferlint_core::Status;
use inferlint_report::{policy, SCRIPT, STYLE};
use serde_json::Value;

use crate::common::demo;
use crate::wellformed::{check, Page};

/// Text as maud writes it into the page.
pub fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The JSON the page's script reads.
pub fn data_block(page: &Page) -> Value {
    let (_, _, text) = page
        .raw
        .iter()
        .find(|(name, attrs, _)| {
            name == "script"
                && attrs
                    .iter()
                    .any(|(k, v)| k == "type" && v == "application/json")
        })
        .expect("a JSON data block");
    serde_json::from_str(text).expect("the data block is JSON")
}

#[test]
fn the_demo_report_is_well_formed_and_holds_every_verdict() {
    let checked = demo();
    let html = checked.render();
    let page = check(&html).unwrap_or_else(|e| panic!("not well-formed: {e}"));
    assert!(checked.results.len() >= 9, "the demo runs nine checks");
    for r in &checked.results {
        assert!(
            html.contains(&escaped(&r.message)),
            "{} message missing: {}",
            r.tripwire,
            r.message
        );
    }
    for status in [Status::Fail, Status::Warn, Status::Pass] {
        assert!(html.contains(status.human()), "{status:?}");
    }
    // Sections in the order the issue gives.
    let order = [
        "id=\"limits\"",
        "id=\"happened\"",
        "id=\"results\"",
        "id=\"server-did\"",
        "id=\"replay\"",
        "id=\"server\"",
        "id=\"guide\"",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|id| html.find(id).unwrap_or_else(|| panic!("no {id}")))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    // Failures first, then warnings, then the passes folded away.
    let t1 = html.find("finding fail").unwrap();
    let t9 = html.find("finding warn").unwrap();
    let passes = checked
        .results
        .iter()
        .filter(|r| r.status == Status::Pass)
        .count();
    let passed = html.find(&format!("{passes} passed")).unwrap();
    assert!(t1 < t9 && t9 < passed);
    let ids: Vec<&str> = html
        .split("<figure class=\"chart\" id=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    // No cache figure: the demo's model is a hybrid, whose cache the tokens-per-request
    // arithmetic does not describe. The demo's load kept each request's record
    // (`--save-detailed`): a lane for each request, its TTFTs and its gaps between
    // tokens; xray subscribed to the KV event stream: its lane.
    assert_eq!(
        ids,
        [
            "fig-requests",
            "fig-kv",
            "fig-tput",
            "fig-levels",
            "fig-each-request",
            "fig-ttft",
            "fig-itl",
            "fig-kv-events",
            "fig-memory"
        ]
    );
    assert_eq!(page.count("figure"), ids.len());
    assert_eq!(
        page.count("table"),
        ids.len() + 1,
        "one per figure, and the verdict glossary"
    );
}

#[test]
fn what_limited_the_run_comes_first_as_core_wrote_it() {
    let checked = demo();
    let html = checked.render();
    let limits = html.find("id=\"limits\"").unwrap();
    let happened = html.find("id=\"happened\"").unwrap();
    let mut last = limits;
    assert_eq!(checked.insights.len(), 3);
    for insight in &checked.insights {
        let at = html[last..]
            .find(&escaped(&insight.text))
            .map(|p| p + last)
            .unwrap_or_else(|| panic!("missing: {}", insight.text));
        assert!(at < happened);
        last = at;
    }
}

#[test]
fn the_page_loads_nothing_and_names_its_own_script_and_style() {
    let html = demo().render();
    let page = check(&html).unwrap();
    let csp = page
        .attributes
        .iter()
        .find(|(el, k, v)| el == "meta" && k == "http-equiv" && v == "Content-Security-Policy")
        .map(|_| {
            let start = html.find("Content-Security-Policy\" content=\"").unwrap() + 34;
            html[start..start + html[start..].find('"').unwrap()].to_owned()
        })
        .expect("a CSP meta element");
    assert_eq!(csp.replace("&#39;", "'"), policy(STYLE, SCRIPT));
    assert!(csp.starts_with("default-src 'none'"));
    let styles: Vec<&String> = page
        .raw
        .iter()
        .filter(|(n, _, _)| n == "style")
        .map(|(_, _, t)| t)
        .collect();
    assert_eq!(styles, [STYLE], "one style sheet, the hashed one");
    let code: Vec<&String> = page
        .raw
        .iter()
        .filter(|(n, attrs, _)| n == "script" && attrs.is_empty())
        .map(|(_, _, t)| t)
        .collect();
    assert_eq!(code, [SCRIPT], "one script, the hashed one");
    for (element, key, value) in &page.attributes {
        if key == "href" || key == "src" || key == "action" {
            assert!(
                value.starts_with('#') || value.starts_with("data:"),
                "<{element} {key}={value:?}> would load or leave the page"
            );
        }
        assert!(
            !key.starts_with("on"),
            "an inline handler: <{element} {key}>"
        );
        assert_ne!(
            key, "style",
            "an inline style on <{element}>; the policy refuses it"
        );
    }
    for forbidden in ["@import", "url(", "http:", "https:"] {
        assert!(
            !STYLE.contains(forbidden),
            "the style sheet has {forbidden}"
        );
    }
    for forbidden in [
        "fetch(",
        "XMLHttpRequest",
        "import(",
        "eval(",
        "innerHTML",
        "http:",
        "https:",
    ] {
        assert!(!SCRIPT.contains(forbidden), "the script has {forbidden}");
    }
}

/// Inline code could end its element early; the constants must never hold an ending.
#[test]
fn the_script_and_style_cannot_end_their_elements_early() {
    for (name, text) in [("style", STYLE), ("script", SCRIPT)] {
        let lower = text.to_ascii_lowercase();
        for bad in ["</style", "</script", "<!--"] {
            assert!(!lower.contains(bad), "{name} holds {bad}");
        }
    }
}

#[test]
fn the_data_and_the_charts_agree_with_the_recording() {
    let checked = demo();
    let html = checked.render();
    let page = check(&html).unwrap();
    let data = data_block(&page);
    let timeline = checked.timeline.as_ref().unwrap();
    assert_eq!(data["t"].as_array().unwrap().len(), timeline.points.len());
    assert_eq!(
        data["running"]["v"].as_array().unwrap().len(),
        timeline.points.len(),
        "a short recording keeps every sample"
    );
    let preempted: f64 = data["pre"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .sum();
    let samples = crate::common::demo_samples();
    let gained = samples.last().unwrap().preemptions.unwrap() - samples[0].preemptions.unwrap();
    assert!(gained > 0.0, "the demo preempts");
    assert_eq!(preempted, gained, "what the series counter gained");
    // Each chart's markers add up to the same count.
    for figure in ["fig-requests", "fig-kv"] {
        let start = html.find(&format!("id=\"{figure}\"")).unwrap();
        let end = start + html[start..].find("</figure>").unwrap();
        let marked: f64 = html[start..end]
            .split("data-n=\"")
            .skip(1)
            .map(|s| s[..s.find('"').unwrap()].parse::<f64>().unwrap())
            .sum();
        assert_eq!(marked, gained, "{figure}");
    }
    // The replay's blocks in use: kv_usage x usable blocks, rounded.
    let usable = inferlint_report::usable_blocks(&checked.results).expect("T14 passed");
    let used = data["used"].as_array().unwrap();
    for (p, u) in timeline.points.iter().zip(used) {
        if let (Some(kv), Some(u)) = (p.kv_usage, u.as_f64()) {
            assert_eq!(u, (kv.last * usable as f64).round(), "at {}", p.t_first);
        }
    }
    assert_eq!(data["cells"], usable);
    assert_eq!(data["blocks"], true);
}

#[test]
fn the_tripwires_checked_and_those_not_here() {
    let html = demo().render();
    // The demo's folder holds the load's per-request record, the server's spans and its
    // KV event stream: T23 to T26 are checked; what is left needs what no single
    // recorded run holds.
    assert!(
        // T21, T27 and T28 judged the run not their own, and say why: no GPU was found,
        // and its boot log starts no speculative decoding and declares no KV connector.
        // T29 to T31 need a step file, which the demo's server was not asked to write.
        html.contains("18 of 31. Not here: T2 and T3 (run at clean-up), T4 and T11 (need two or more boot logs), T7 (needs a live server), T13 (a rule for test scripts), T21 (does not apply: the recorder found no NVIDIA GPU on the server's machine, or it was told the server uses none), T22 (needs the recordings of two or more replicas on one schedule), T27 (does not apply: the boot log shows no speculative setting, so the server did no speculative decoding), T28 (does not apply: the boot log shows no KV connector (kv_transfer_config): the run was not declared disaggregated), T29, T30 and T31 (need each engine step: install integrations/vllm into the server's environment and run xray --steps (docs/steps.md))"),
        "tripwires-checked line"
    );
    for t in ["T23", "T24", "T25", "T26"] {
        assert!(
            !html.contains(&format!("{t} (need")),
            "{t} named as not here"
        );
    }
}

#[test]
fn a_report_without_a_recording_says_so() {
    let mut checked = demo();
    checked.run.series = None;
    checked.timeline = None;
    checked.results = inferlint_core::run::check_run(&checked.run);
    let html = checked.render();
    check(&html).unwrap();
    assert!(html.contains("No recording of the run was given"));
    assert!(!html.contains("id=\"replay\""));
}

/// The finding's "why it matters" speaks of this run's numbers: under "never ran more
/// than 1" (a recorded SGLang run) it used to read the catalogue's fixed example "If the
/// server never ran more than 10 of 32". The simulated SGLang run here ran 5 of 32. The
/// finding also says what to change: its server was started with
/// `--max-running-requests 10` (its boot log), so no cache lets it run the 32 asked, and
/// the advice, replayed, asks for the 5 its pool holds rather than for memory that would
/// not reach 32.
#[test]
fn a_finding_says_why_and_what_to_change_in_the_runs_numbers() {
    let html = crate::common::sim("sglang-capped").render();
    let start = html
        .find("<span class=\"tw\">T8</span>")
        .expect("a T8 finding");
    let end = start + html[start..].find("</article>").expect("its end");
    let finding = &html[start..end];
    assert!(
        finding
            .contains("The server never ran more than 5 of 32, so this run measured concurrency 5"),
        "{finding}"
    );
    assert!(!finding.contains("10 of 32"), "{finding}");
    assert!(finding.contains("What to change: </strong>"), "{finding}");
    assert!(finding.contains("or ask for 5"), "{finding}");
    assert!(!finding.contains("--mem-fraction-static"), "{finding}");
}

/// TensorRT-LLM's gauges move only when a request completes: the page neither replays
/// them as the cache's state nor counts seconds at each number running from them (it
/// used to say "30.7 s with 8 running" and "8 running, holding 0").
#[test]
fn a_lagging_gauge_is_never_drawn_as_what_happened() {
    let checked = crate::common::sim("trtllm-max-utilization");
    assert!(checked.run.engine.gauges_lag);
    let html = checked.render();
    assert!(!html.contains("id=\"fig-levels\""), "levels figure drawn");
    assert!(html.contains("id=\"levels-note\""));
    assert!(html.contains(
        "No replay: TensorRT-LLM updates its running and KV gauges only when a request completes"
    ));
    assert!(!html.contains("id=\"replay-play\""), "replay drawn");
    assert!(!html.contains("with 8 running"));
    // The time charts stay, labelled.
    assert!(html.contains("updates these readings only when a request completes"));
}

/// A tripwire core could not check is shown as not checked, with what it needs.
#[test]
fn not_checked_tripwires_say_what_they_need() {
    let mut run = demo().run;
    run.bench = None;
    run.requested = None;
    let checked = crate::common::Checked::new(run, &crate::common::demo_samples());
    let html = checked.render();
    assert!(
        html.contains("T15, T18, T20, T23, T24 and T25 (need the load tool's result file)"),
        "T15, T18, T20, T23, T24 and T25 not named"
    );
    // Those six and T8 and T17, which need the concurrency the load asked for (taken
    // away here with the file), and T29 to T31, which need a step file no demo run holds:
    // the KV event stream (T26) needs neither and is still checked.
    assert!(html.contains("11 not checked"), "fold line");
    assert!(!html.contains("T26 (need"), "T26 named as not checked");
    assert!(html.contains(Status::NotChecked.human()));
}
