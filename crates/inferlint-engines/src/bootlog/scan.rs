//! Small text scanners shared by the engine tables: a number after a phrase, a word after
//! a phrase, with thousands commas allowed. Each returns `None` rather than guess.

/// The text right after the first `phrase` in `line`.
pub(crate) fn after<'a>(line: &'a str, phrase: &str) -> Option<&'a str> {
    line.find(phrase).map(|i| &line[i + phrase.len()..])
}

/// The leading number of `text` (digits, `.`, thousands commas, a leading `-`), as printed.
pub(crate) fn leading_number(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let mut end = usize::from(bytes.first() == Some(&b'-'));
    while end < bytes.len() {
        let b = bytes[end];
        let comma_in_number = b == b','
            && end > 0
            && bytes[end - 1].is_ascii_digit()
            && bytes.get(end + 1).is_some_and(u8::is_ascii_digit);
        if b.is_ascii_digit() || b == b'.' || comma_in_number {
            end += 1;
        } else {
            break;
        }
    }
    let number = text[..end].trim_end_matches('.');
    number.bytes().any(|b| b.is_ascii_digit()).then_some(number)
}

/// A whole number, thousands commas allowed.
pub(crate) fn to_u64(number: &str) -> Option<u64> {
    number.replace(',', "").parse().ok()
}

/// A decimal number, thousands commas allowed.
pub(crate) fn to_f64(number: &str) -> Option<f64> {
    number
        .replace(',', "")
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
}

/// The whole number right after `phrase`.
pub(crate) fn u64_after(line: &str, phrase: &str) -> Option<u64> {
    to_u64(leading_number(after(line, phrase)?)?)
}

/// The decimal number right after `phrase`, which must be followed by `unit`
/// (`0.18 GiB`), so that a changed unit is noticed rather than misread.
pub(crate) fn f64_with_unit(line: &str, phrase: &str, unit: &str) -> Option<f64> {
    let rest = after(line, phrase)?;
    let number = leading_number(rest)?;
    rest[number.len()..]
        .starts_with(unit)
        .then(|| to_f64(number))
        .flatten()
}

/// The identifier (letters, digits, `_`, `-`, `.`) right after `phrase`.
pub(crate) fn word_after<'a>(line: &'a str, phrase: &str) -> Option<&'a str> {
    let rest = after(line, phrase)?;
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// `text` cut to at most `max` characters.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => text[..end].to_owned(),
        None => text.to_owned(),
    }
}

/// `text` cut to at most `max` characters, at the end of a word, with `…` when cut: a
/// reader sees that something was left out, and no word is cut in two.
pub(crate) fn truncate_at_word(text: &str, max: usize) -> String {
    let Some((end, _)) = text.char_indices().nth(max) else {
        return text.to_owned();
    };
    let head = &text[..end];
    let cut = head.rfind(char::is_whitespace).unwrap_or(head.len());
    format!("{}…", head[..cut].trim_end())
}

/// Rounds away the float noise a sum of printed decimals picks up (1.73 + 0.01).
pub(crate) fn tidy_sum(value: f64) -> f64 {
    (value * 1e9).round() / 1e9
}

/// Whether `text[at]` starts a word: the character before it is not part of a name.
pub(crate) fn word_start(text: &str, at: usize) -> bool {
    at == 0
        || text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
}

/// The process ids a line names as `pid=N` (`(APIServer pid=723)`, `[startup][pid=1739]`).
pub(crate) fn pids(line: &str) -> impl Iterator<Item = u64> + '_ {
    line.match_indices("pid=").filter_map(move |(at, _)| {
        if !word_start(line, at) {
            return None;
        }
        let digits: &str = &line[at + 4..];
        let end = digits.bytes().take_while(u8::is_ascii_digit).count();
        digits[..end].parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_with_commas_and_units() {
        assert_eq!(
            u64_after("GPU KV cache size: 31,554 tokens", "size: "),
            Some(31554)
        );
        assert_eq!(
            f64_with_unit("pool memory: 0.18 GiB (actual)", "memory: ", " GiB"),
            Some(0.18)
        );
        assert_eq!(
            f64_with_unit("pool memory: 0.18 MiB (actual)", "memory: ", " GiB"),
            None
        );
        assert_eq!(u64_after("x: abc", "x: "), None);
        assert_eq!(u64_after("block size to 784.", "to "), Some(784));
        assert_eq!(leading_number("1,2"), Some("1,2"));
        assert_eq!(leading_number("3, 4"), Some("3"));
        assert_eq!(
            word_after("Use flashinfer backend", "Use "),
            Some("flashinfer")
        );
        assert_eq!(truncate("héllo", 2), "hé");
        assert_eq!(tidy_sum(1.73 + 0.01), 1.74);
        assert!(word_start("a sglang.x", 2));
        assert_eq!(
            pids("(APIServer pid=723) x [warmup][pid=1896] ppid=4 pid=").collect::<Vec<_>>(),
            [723, 1896]
        );
        assert!(!word_start("pysglang.x", 2));
    }
}
