//! JSON as Python writes it.
//!
//! Python's `json.dumps` writes the floats JSON has no word for as the bare tokens `NaN`,
//! `Infinity` and `-Infinity` (its `allow_nan=True` default). The load tools are Python
//! programs: SGLang's `python -m sglang.bench_serving` stores `"request_rate": Infinity`
//! for every run without `--request-rate`, and the statistics of an empty list (no
//! successful request, no inter-token gap) as `NaN`. A strict JSON parser refuses the
//! whole file for one such value. Here each of those tokens outside a string becomes a
//! string holding the same word, so the value is kept as written and a reader that wants
//! a number sees that it is not one.

use serde_json::Value;

/// The non-standard tokens Python writes, longest first where one is a prefix.
const PYTHON_TOKENS: &[&str] = &["-Infinity", "Infinity", "NaN"];

/// Parses JSON text as Python's `json` module writes it.
pub fn from_str(text: &str) -> Result<Value, serde_json::Error> {
    match serde_json::from_str(text) {
        Ok(value) => Ok(value),
        Err(strict) => match quote_python_tokens(text) {
            Some(rewritten) => serde_json::from_str(&rewritten),
            None => Err(strict),
        },
    }
}

/// The text with every `NaN`, `Infinity` and `-Infinity` token outside a string written
/// as a JSON string; `None` when there is none.
fn quote_python_tokens(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 16);
    let mut copied = 0;
    let mut in_string = false;
    let mut i = 0;
    let mut found = false;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 2,
                b'"' => {
                    in_string = false;
                    i += 1;
                }
                _ => i += 1,
            }
            continue;
        }
        if b == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        let token = PYTHON_TOKENS.iter().find(|t| {
            bytes[i..].starts_with(t.as_bytes())
                && !bytes
                    .get(i + t.len())
                    .is_some_and(|n| n.is_ascii_alphanumeric() || *n == b'_')
                && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
        });
        match token {
            Some(t) => {
                out.push_str(&text[copied..i]);
                out.push('"');
                out.push_str(t);
                out.push('"');
                i += t.len();
                copied = i;
                found = true;
            }
            None => i += 1,
        }
    }
    found.then(|| {
        out.push_str(&text[copied..]);
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_floats_become_their_words() {
        let v =
            from_str(r#"{"request_rate": Infinity, "std_itl_ms": NaN, "low": -Infinity, "n": 3}"#)
                .unwrap();
        assert_eq!(v["request_rate"], "Infinity");
        assert_eq!(v["std_itl_ms"], "NaN");
        assert_eq!(v["low"], "-Infinity");
        assert_eq!(v["n"], 3);
        let list = from_str("[NaN,Infinity, -Infinity]").unwrap();
        assert_eq!(list, serde_json::json!(["NaN", "Infinity", "-Infinity"]));
    }

    #[test]
    fn the_words_inside_strings_stay_as_they_are() {
        let v = from_str(r#"{"label": "NaN \" Infinity", "x": NaN}"#).unwrap();
        assert_eq!(v["label"], "NaN \" Infinity");
        assert_eq!(v["x"], "NaN");
    }

    #[test]
    fn other_bad_json_is_still_refused() {
        assert!(from_str("{\"a\": NaNa}").is_err());
        assert!(from_str("{\"a\": nan}").is_err());
        assert!(from_str("{\"a\": 1").is_err());
    }
}
