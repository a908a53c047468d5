//! Number formatting in the shapes users of the established tool know: `{:g}`, thousands
//! separators, fixed decimals and signed percentages.

/// Formats like C's `%g` with six significant digits: `22.0` -> `22`, `0.5` -> `0.5`.
pub fn g(value: f64) -> String {
    if value.is_nan() {
        return "nan".into();
    }
    if value.is_infinite() {
        return if value > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    if value == 0.0 {
        return "0".into();
    }
    let exponent = value.abs().log10().floor() as i32;
    if !(-5..6).contains(&exponent) {
        let s = format!("{value:.5e}");
        // Rust prints `1.23450e7`; C prints `1.2345e+07`.
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = trim_zeros(mantissa);
        let exp: i32 = exp.parse().unwrap_or(0);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let decimals = (5 - exponent).max(0) as usize;
    trim_zeros(&format!("{value:.decimals$}")).to_string()
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Groups the integer part in thousands: `32000` -> `32,000`.
pub fn thousands(value: i64) -> String {
    let digits = value.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if value < 0 {
        out.push('-');
    }
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `{:,.0f}`: rounds half to even like Python, then groups.
pub fn thousands_f(value: f64) -> String {
    thousands(round_half_even(value) as i64)
}

/// Python's `round()` to an integer: halves go to the even neighbour.
pub fn round_half_even(value: f64) -> f64 {
    let r = value.round();
    if (value - value.trunc()).abs() == 0.5 {
        2.0 * (value / 2.0).round()
    } else {
        r
    }
}

/// `{:.Np%}` as Python prints it: `0.0943` -> `9.43%`.
pub fn percent(value: f64, decimals: usize) -> String {
    format!("{:.decimals$}%", value * 100.0)
}

/// `{:+.Np%}`: `0.0077` -> `+0.77%`.
pub fn signed_percent(value: f64, decimals: usize) -> String {
    let sign = if value >= 0.0 { "+" } else { "" };
    format!("{sign}{:.decimals$}%", value * 100.0)
}

/// Python's `str(float)`: the shortest text that reads back to the same number, with `.0`
/// on whole numbers and an exponent below 1e-4 or from 1e16 (`5.19`, `32.0`, `1e-05`).
pub fn py_float(value: f64) -> String {
    if !value.is_finite() {
        return g(value);
    }
    let magnitude = value.abs();
    if value == 0.0 || (1e-4..1e16).contains(&magnitude) {
        let text = format!("{value}");
        if text.contains('.') {
            text
        } else {
            format!("{text}.0")
        }
    } else {
        // Rust prints `1e-5` and `1.5e20`; Python prints `1e-05` and `1.5e+20`.
        let text = format!("{value:e}");
        let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

/// A memory size given in GiB, in the unit that shows it: `2.09 GiB`, `2.1 MiB`,
/// `768 KiB` (a size below a tenth of a GiB would print as `0.00 GiB`).
pub fn memory(gib: f64) -> String {
    let mib = gib * 1024.0;
    if gib.abs() >= 0.095 || gib == 0.0 || !gib.is_finite() {
        format!("{gib:.2} GiB")
    } else if mib.abs() >= 0.95 {
        format!("{} MiB", g((mib * 10.0).round() / 10.0))
    } else {
        format!("{} KiB", g((mib * 1024.0).round()))
    }
}

/// A throughput as every output prints it: whole and grouped from 100 up (`1,412`,
/// `323`), one decimal below (`54.4`, `0.5`), so that the terminal, the report and
/// `--json` words give one text for one figure.
pub fn rate(per_s: f64) -> String {
    if per_s.abs() >= 100.0 {
        thousands_f(per_s)
    } else {
        format!("{per_s:.1}")
    }
}

/// The percentile every printed percentile uses (the account's,
/// [`crate::story::account::percentile`], kept here, below every module that prints one, so that
/// the checks read it too): linear interpolation between the two nearest ranks, numpy's
/// default (`numpy.percentile(values, p)`), the definition `vllm
/// bench serve` computes its own median and p99 with, so that a percentile inferlint
/// computes from the tool's records equals the one the tool printed. `sorted` is in
/// ascending order; `p` from 0 to 100.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    inferlint_sched::stats::percentile_of_sorted(sorted, p)
}

/// The median of `values` (sorted in place) by [`percentile`].
pub fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    percentile(values, 50.0)
}

/// `s` when `n` is not one.
pub fn plural(n: f64) -> &'static str {
    if n == 1.0 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real CPU build's kv-too-small run gave its cache `--kv-cache-memory-bytes
    /// 786432` (768 KiB), which its log rounds to `0.0 GiB`; the cache the advice names
    /// for it is 2,228,224 bytes (2.125 MiB).
    #[test]
    fn small_memory_sizes_show_in_a_unit_that_shows_them() {
        let gib = |bytes: f64| bytes / (1024.0 * 1024.0 * 1024.0);
        assert_eq!(memory(gib(786_432.0)), "768 KiB");
        assert_eq!(memory(gib(2_228_224.0)), "2.1 MiB");
        assert_eq!(memory(2.09), "2.09 GiB");
        assert_eq!(memory(0.0), "0.00 GiB");
    }

    #[test]
    fn g_matches_python() {
        assert_eq!(g(22.0), "22");
        assert_eq!(g(0.5), "0.5");
        assert_eq!(g(106.0), "106");
        assert_eq!(g(1234567.0), "1.23457e+06");
        assert_eq!(g(0.0001), "0.0001");
        assert_eq!(g(-3.0), "-3");
        assert_eq!(g(10.0), "10");
    }

    #[test]
    fn thousands_groups() {
        assert_eq!(thousands(32000), "32,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(-1234567), "-1,234,567");
        assert_eq!(thousands_f(34816.0), "34,816");
    }

    #[test]
    fn py_float_matches_python_str() {
        assert_eq!(py_float(5.19), "5.19");
        assert_eq!(py_float(32.0), "32.0");
        assert_eq!(py_float(0.0), "0.0");
        assert_eq!(py_float(1e-5), "1e-05");
        assert_eq!(py_float(1.5e20), "1.5e+20");
        assert_eq!(py_float(-2.5), "-2.5");
        assert_eq!(py_float(0.0001), "0.0001");
    }

    #[test]
    fn percents() {
        assert_eq!(percent(0.0943, 2), "9.43%");
        assert_eq!(signed_percent(0.007744, 2), "+0.77%");
        assert_eq!(signed_percent(-0.0040149, 2), "-0.40%");
    }
}

/// Whether a character reorders the text around it: Unicode's bidirectional controls
/// (the marks, embeddings, overrides and isolates). A right-to-left override in a model
/// name or a log line would make the rest of a line read backwards.
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

/// Whether a character must not reach a terminal as it is: a C0 control other than a
/// newline or a tab (escape sequences start with ESC, `\r` rewrites the line), DEL, a
/// C1 control (some terminals read U+009B as the start of an escape sequence) or a
/// bidirectional control.
pub fn is_unsafe_for_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)
}

/// The escape shown in place of a character kept from a terminal or a page: `\x1b` for
/// an ASCII control, `\u{202e}` for any other.
pub fn visible_escape(c: char) -> String {
    if c.is_ascii() {
        format!("\\x{:02x}", c as u32)
    } else {
        format!("\\u{{{:x}}}", c as u32)
    }
}

/// Text as a terminal may show it: every character [`is_unsafe_for_terminal`] replaced by
/// its [`visible_escape`], so that text from a server, a log or a file cannot move the
/// cursor, set the window title, clear the screen or reverse a line.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_unsafe_for_terminal) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe_for_terminal(c) {
            out.push_str(&visible_escape(c));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A Unix time as `2026-09-27 17:50:52 UTC`; `None` outside 1970 to about 5138.
pub fn utc(unix_seconds: f64) -> Option<String> {
    if !(0.0..=1e11).contains(&unix_seconds) {
        return None;
    }
    let (year, month, day, h, m, s) = crate::model::civil::utc_parts(unix_seconds.floor() as i64);
    Some(format!(
        "{year:04}-{month:02}-{day:02} {h:02}:{m:02}:{s:02} UTC"
    ))
}

#[cfg(test)]
mod date_tests {
    use super::*;

    #[test]
    fn dates_and_times_in_utc() {
        assert_eq!(utc(0.0).as_deref(), Some("1970-01-01 00:00:00 UTC"));
        assert_eq!(
            utc(1_790_470_252.2).as_deref(),
            Some("2026-09-27 00:50:52 UTC")
        );
        assert_eq!(
            crate::model::civil::utc_parts(951_825_600),
            (2000, 2, 29, 12, 0, 0)
        );
        assert_eq!(utc(-1.0), None);
    }
}

#[cfg(test)]
mod escape_tests {
    use super::*;

    /// Guards the terminal against a server's error body that sets the window title and
    /// clears the screen, and against a right-to-left override.
    #[test]
    fn control_and_bidi_characters_are_shown_as_escapes() {
        assert_eq!(
            terminal_safe("a\u{1b}]0;owned\u{7}\u{1b}[2Jb\r\n\tc\u{202e}d\u{9b}"),
            "a\\x1b]0;owned\\x07\\x1b[2Jb\\x0d\n\tc\\u{202e}d\\u{9b}"
        );
        assert!(matches!(
            terminal_safe("plain é text\n"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn rates_are_whole_from_a_hundred_up() {
        assert_eq!(rate(1412.34), "1,412");
        assert_eq!(rate(323.218902), "323");
        assert_eq!(rate(54.377), "54.4");
        assert_eq!(rate(0.5), "0.5");
    }
}
