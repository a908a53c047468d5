//! What every boot-log parse must hold, whatever the text: no panic, and every line
//! number it reports lies inside the log, every kept text within its stated length.

use inferlint_core::Engine;
use inferlint_engines::bootlog::parse_boot_log;

/// Longest line text kept in an unparsed entry or a failure, and longest failure cause.
const MAX_LINE_CHARS: usize = 300;
const MAX_DETAIL_CHARS: usize = 200;

pub fn check(data: &[u8], hint: Option<Engine>) {
    let text = String::from_utf8_lossy(data);
    let facts = parse_boot_log(&text, hint);
    let lines = facts.line_count;
    let inside = |n: usize| (1..=lines).contains(&n);
    for entry in &facts.unparsed {
        assert!(inside(entry.lineno), "unparsed line {} of {lines}", entry.lineno);
        assert!(entry.text.chars().count() <= MAX_LINE_CHARS);
    }
    if let Some(n) = facts.ready_lineno {
        assert!(inside(n), "ready line {n} of {lines}");
    }
    if let Some(failure) = &facts.failure {
        assert!(inside(failure.lineno), "failure line {} of {lines}", failure.lineno);
        assert!(!failure.kind.is_empty());
        assert!(failure.line.chars().count() <= MAX_LINE_CHARS);
        if let Some(detail) = &failure.detail {
            assert!(detail.chars().count() <= MAX_DETAIL_CHARS, "{detail}");
        }
    }
    serde_json::to_string(&facts).expect("boot facts serialise");
}
