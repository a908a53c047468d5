//! A log's lines, as the boot-log readers promise to cut them.

/// The log's lines as the parser splits them: at `\n`, `\r\n` or a lone `\r`.
pub fn lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(['\n', '\r']) {
        out.push(&rest[..at]);
        let skip = if rest[at..].starts_with("\r\n") { 2 } else { 1 };
        rest = &rest[at + skip..];
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}
