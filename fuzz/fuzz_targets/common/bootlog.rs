//! What every boot-log parse must hold, whatever the text: no panic; every line number it
//! reports lies inside the log; an unparsed line's text stays within its bound; and the
//! failure names the very line it points at (its text is on that line), cut only past
//! the bound that guards against a megabyte line, with `…` where it was cut.

use inferlint_core::Engine;
use inferlint_engines::bootlog::parse_boot_log;

#[path = "lines.rs"]
mod lines;
use lines::lines;

/// Longest line text kept in an unparsed entry.
const MAX_UNPARSED_CHARS: usize = 300;
/// Longest failure line or cause kept, before the `…` that marks a cut.
const MAX_FAILURE_CHARS: usize = 4000;

pub fn check(data: &[u8], hint: Option<Engine>) {
    let text = String::from_utf8_lossy(data);
    let facts = parse_boot_log(&text, hint);
    let raw = lines(&text);
    let count = facts.line_count;
    assert_eq!(count, raw.len(), "line count");
    let inside = |n: usize| (1..=count).contains(&n);
    for entry in &facts.unparsed {
        assert!(inside(entry.lineno), "unparsed line {} of {count}", entry.lineno);
        assert!(entry.text.chars().count() <= MAX_UNPARSED_CHARS);
    }
    if let Some(n) = facts.ready_lineno {
        assert!(inside(n), "ready line {n} of {count}");
    }
    if let Some(failure) = &facts.failure {
        assert!(inside(failure.lineno), "failure line {} of {count}", failure.lineno);
        assert!(!failure.kind.is_empty());
        assert!(failure.line.chars().count() <= MAX_FAILURE_CHARS + 1);
        if let Some(detail) = &failure.detail {
            assert!(detail.chars().count() <= MAX_FAILURE_CHARS + 1, "{detail}");
        }
        // Without escape sequences to strip, the kept text is on the line it names.
        let line = raw[failure.lineno - 1];
        let kept = failure.line.trim_end_matches('…');
        if !line.contains('\u{1b}') {
            assert!(
                line.contains(kept),
                "failure text {kept:?} is not on line {}: {line:?}",
                failure.lineno
            );
        }
    }
    serde_json::to_string(&facts).expect("boot facts serialise");
}
