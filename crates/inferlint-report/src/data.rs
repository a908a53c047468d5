//! Data for the page's script, embedded as JSON in a `<script type="application/json">`
//! element: never interpolated into code.
//!
//! The HTML parser ends a script element at the first `</script`, whatever JSON thinks of
//! it, and U+2028/U+2029 once broke JavaScript string literals. [`ScriptJson`] is the only
//! way text reaches such an element, and its one constructor writes `<`, `>`, `&`, U+2028
//! and U+2029 as JSON `\u` escapes, which `JSON.parse` reads back unchanged.

use std::fmt::Write;

use maud::Render;

/// JSON text made safe to sit inside a `<script>` element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptJson(String);

impl ScriptJson {
    /// Escapes JSON text for a script element. The input must already be JSON: every
    /// character escaped here is either inside a string (where `\uXXXX` means the same
    /// character) or not valid JSON outside one.
    pub fn new(json: &str) -> ScriptJson {
        let mut out = String::with_capacity(json.len() + 16);
        for ch in json.chars() {
            match ch {
                '<' => out.push_str("\\u003c"),
                '>' => out.push_str("\\u003e"),
                '&' => out.push_str("\\u0026"),
                '\u{2028}' => out.push_str("\\u2028"),
                '\u{2029}' => out.push_str("\\u2029"),
                // Shown, not obeyed: the page's script puts this text into the page,
                // where a right-to-left override would reverse what follows it. A JSON
                // `\\` keeps the escape's backslash as text.
                ch if inferlint_core::story::fmt::is_bidi_control(ch) => {
                    out.push('\\');
                    out.push_str(&inferlint_core::story::fmt::visible_escape(ch));
                }
                _ => out.push(ch),
            }
        }
        ScriptJson(out)
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Render for ScriptJson {
    fn render_to(&self, buffer: &mut String) {
        // Safe by construction: the text holds no `<`, `>` or `&` at all.
        buffer.push_str(&self.0);
    }
}

/// Builds a JSON object by hand: the report's data is a few long arrays of numbers, and
/// writing them straight into one string keeps a day-long recording's report fast.
#[derive(Debug, Default)]
pub struct JsonWriter {
    out: String,
    first: bool,
}

impl JsonWriter {
    /// An empty object.
    pub fn object() -> JsonWriter {
        JsonWriter {
            out: String::from("{"),
            first: true,
        }
    }

    fn key(&mut self, key: &str) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        self.out.push_str(&string(key));
        self.out.push(':');
    }

    /// A number, or `null` when it is missing or not finite.
    pub fn number(&mut self, key: &str, value: Option<f64>, decimals: usize) {
        self.key(key);
        push_number(&mut self.out, value, decimals);
    }

    /// A string.
    pub fn text(&mut self, key: &str, value: &str) {
        self.key(key);
        self.out.push_str(&string(value));
    }

    /// `true` or `false`.
    pub fn boolean(&mut self, key: &str, value: bool) {
        self.key(key);
        self.out.push_str(if value { "true" } else { "false" });
    }

    /// An array of numbers, `null` for the missing ones.
    pub fn numbers(
        &mut self,
        key: &str,
        values: impl IntoIterator<Item = Option<f64>>,
        decimals: usize,
    ) {
        self.key(key);
        self.out.push('[');
        for (i, v) in values.into_iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            push_number(&mut self.out, v, decimals);
        }
        self.out.push(']');
    }

    /// A nested object, written by `inner`.
    pub fn nested(&mut self, key: &str, inner: impl FnOnce(&mut JsonWriter)) {
        self.key(key);
        let mut child = JsonWriter::object();
        inner(&mut child);
        self.out.push_str(&child.finish());
    }

    /// The object's text, closed.
    pub fn finish(mut self) -> String {
        self.out.push('}');
        self.out
    }
}

/// A JSON string literal (serde_json's escaping).
fn string(value: &str) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "\"\"".to_owned())
}

/// Writes a number with at most `decimals` decimals and no trailing zeros.
fn push_number(out: &mut String, value: Option<f64>, decimals: usize) {
    match value {
        Some(v) if v.is_finite() => {
            let start = out.len();
            let _ = write!(out, "{v:.decimals$}");
            if out[start..].contains('.') {
                while out.ends_with('0') {
                    out.pop();
                }
                if out.ends_with('.') {
                    out.pop();
                }
            }
            if &out[start..] == "-0" {
                out.truncate(start);
                out.push('0');
            }
        }
        _ => out.push_str("null"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_that_ends_a_script_survives() {
        let raw = serde_json::to_string("</script><!-- & \u{2028}\u{2029} >").unwrap();
        let safe = ScriptJson::new(&raw);
        for bad in ['<', '>', '&', '\u{2028}', '\u{2029}'] {
            assert!(!safe.as_str().contains(bad), "{bad:?} in {}", safe.as_str());
        }
        let back: String = serde_json::from_str(safe.as_str()).unwrap();
        assert_eq!(back, "</script><!-- & \u{2028}\u{2029} >");
    }

    #[test]
    fn numbers_are_short() {
        let mut w = JsonWriter::object();
        w.numbers(
            "a",
            [Some(1.0), Some(0.25), None, Some(f64::NAN), Some(-0.0001)],
            3,
        );
        w.text("name", "x\"y");
        assert_eq!(w.finish(), r#"{"a":[1,0.25,null,null,0],"name":"x\"y"}"#);
    }
}
