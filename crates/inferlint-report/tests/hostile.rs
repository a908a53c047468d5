//! A run whose model name, log lines, file names, title and evidence carry markup and
//! script: all of it must reach the page as text.

use inferlint_core::model::{Failure, Phase, UnparsedLine};
use inferlint_core::run::Run;
use inferlint_core::{CheckResult, Status, Tripwire};

use crate::common::{demo, Checked};
use crate::render::data_block;
use crate::wellformed::check;

pub const MODEL: &str = "<script>document.documentElement.dataset.pwned='model'</script>";
pub const LINE: &str = "RuntimeError: <img src=x onerror=\"document.documentElement.dataset.pwned='log'\"> </script><script>alert(1)</script>";

fn hostile() -> (Checked, &'static str) {
    let mut checked = demo();
    let run: &mut Run = &mut checked.run;
    let boot = &mut run.boots[0].1;
    boot.model = Some(MODEL.into());
    boot.version = Some("0.28.0\"><script>alert('version')</script>".into());
    boot.failure = Some(Failure {
        kind: "runtime_error".into(),
        phase: Phase::Serving,
        lineno: 7,
        line: LINE.into(),
        detail: Some(LINE.into()),
    });
    boot.unparsed = vec![UnparsedLine {
        field: "kv_pool_tokens".into(),
        lineno: 9,
        text: "\u{2028}</style><svg onload=alert(1)>\u{2029}".into(),
    }];
    run.boots[0].0 = "<svg onload=alert(1)>.log".into();
    checked.results = inferlint_core::run::check_run(&checked.run);
    checked.results.push(
        CheckResult::new(Tripwire::T15, Status::Warn, LINE)
            .with("line", LINE)
            .with("<b onmouseover=alert(1)>", MODEL),
    );
    checked.made_from = vec!["<iframe src=javascript:alert(1)>.log".into()];
    (checked, "</title><script>alert('title')</script>")
}

#[test]
fn markup_from_logs_and_names_is_text() {
    let (checked, title) = hostile();
    let html = inferlint_report::render(&inferlint_report::Report {
        run: &checked.run,
        results: &checked.results,
        account: &checked.account(),
        insights: &checked.insights,
        timeline: checked.timeline.as_ref(),
        series_url: Some("javascript:alert('url')"),
        title: Some(title),
        made_from: &checked.made_from,
        generator: "inferlint (test)",
    });
    let page = check(&html).unwrap_or_else(|e| panic!("not well-formed: {e}"));
    assert_eq!(
        page.count("script"),
        2,
        "the data block and our script, no more"
    );
    for element in ["img", "iframe", "b"] {
        assert_eq!(page.count(element), 0, "<{element}> came through");
    }
    assert!(page.count("svg") > 0);
    for (element, key, value) in &page.attributes {
        assert!(!key.starts_with("on"), "<{element} {key}={value:?}>");
        assert!(
            !value.contains("javascript:"),
            "<{element} {key}={value:?}>"
        );
    }
    for raw in [
        "<script>document",
        "<img src",
        "<svg onload",
        "<iframe",
        "<b onmouseover",
    ] {
        assert!(!html.contains(raw), "{raw} is in the page as markup");
    }
    assert!(html
        .contains("&lt;script&gt;document.documentElement.dataset.pwned='model'&lt;/script&gt;"));
    assert!(html.contains("&lt;img src=x onerror=&quot;"));
    // The model name reaches the script only as JSON data, with nothing that ends a script.
    let data = page
        .raw
        .iter()
        .find(|(n, a, _)| n == "script" && !a.is_empty())
        .map(|(_, _, t)| t.clone())
        .unwrap();
    for bad in ['<', '>', '&', '\u{2028}', '\u{2029}'] {
        assert!(!data.contains(bad), "{bad:?} in the data block");
    }
    data_block(&page);
}
