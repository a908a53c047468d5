//! A small well-formedness checker for the report's HTML, shared by this crate's tests and
//! the command's (`#[path]`-included there), so that neither needs an HTML parser.
//!
//! It walks the tags the way the report writes them (maud: double-quoted attributes, no
//! comments, `script` and `style` as raw text) and fails on anything a browser would have
//! to guess at: an unclosed or misnested element, a stray `<`, an unknown entity, an
//! unquoted attribute, a duplicate id, or a raw-text element that ends early.

use std::collections::{BTreeMap, HashSet};

/// Elements with no end tag.
const VOID: [&str; 13] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr",
];

/// An element's attributes, (name, value), in order.
pub type Attributes = Vec<(String, String)>;

/// What a well-formed page held.
#[derive(Debug, Default)]
pub struct Page {
    /// Start tags by element name.
    pub elements: BTreeMap<String, usize>,
    /// The text of every raw-text element (`script`, `style`), with its attributes.
    pub raw: Vec<(String, Attributes, String)>,
    /// Every attribute, as (element, name, value).
    pub attributes: Vec<(String, String, String)>,
}

impl Page {
    pub fn count(&self, element: &str) -> usize {
        self.elements.get(element).copied().unwrap_or(0)
    }
}

fn line_of(html: &str, at: usize) -> usize {
    html[..at].matches('\n').count() + 1
}

/// Checks the page; the error names what is wrong and where.
pub fn check(html: &str) -> Result<Page, String> {
    let doctype = "<!DOCTYPE html>";
    if !html.starts_with(doctype) {
        return Err("the page does not start with <!DOCTYPE html>".into());
    }
    let bytes = html.as_bytes();
    let mut page = Page::default();
    let mut stack: Vec<String> = Vec::new();
    let mut ids: HashSet<String> = HashSet::new();
    let mut i = doctype.len();
    while i < bytes.len() {
        match bytes[i] {
            b'<' => {
                let rest = &html[i..];
                if let Some(close) = rest.strip_prefix("</") {
                    let end = close.find('>').ok_or("an end tag never closes")?;
                    let name = close[..end].to_ascii_lowercase();
                    match stack.pop() {
                        Some(open) if open == name => {}
                        Some(open) => {
                            return Err(format!(
                                "line {}: </{name}> closes <{open}>",
                                line_of(html, i)
                            ))
                        }
                        None => return Err(format!("line {}: stray </{name}>", line_of(html, i))),
                    }
                    i += 2 + end + 1;
                    continue;
                }
                let (name, attributes, self_closing, length) =
                    start_tag(rest).map_err(|e| format!("line {}: {e}", line_of(html, i)))?;
                for (key, value) in &attributes {
                    if key == "id" && !ids.insert(value.clone()) {
                        return Err(format!("duplicate id {value:?}"));
                    }
                    page.attributes
                        .push((name.clone(), key.clone(), value.clone()));
                }
                *page.elements.entry(name.clone()).or_insert(0) += 1;
                i += length;
                if name == "script" || name == "style" {
                    let ending = format!("</{name}");
                    let end = html[i..]
                        .find(&ending)
                        .ok_or_else(|| format!("<{name}> never ends"))?;
                    let text = &html[i..i + end];
                    page.raw.push((name.clone(), attributes, text.to_owned()));
                    i += end + ending.len();
                    if bytes.get(i) != Some(&b'>') {
                        return Err(format!("</{name} is not followed by >"));
                    }
                    i += 1;
                    continue;
                }
                if !VOID.contains(&name.as_str()) && !self_closing {
                    stack.push(name);
                }
            }
            b'&' => {
                let rest = &html[i..];
                let end = rest
                    .find(';')
                    .filter(|e| *e <= 10)
                    .ok_or_else(|| format!("line {}: a bare &", line_of(html, i)))?;
                let entity = &rest[1..end];
                let known = matches!(entity, "amp" | "lt" | "gt" | "quot" | "apos" | "nbsp")
                    || entity
                        .strip_prefix('#')
                        .is_some_and(|n| n.chars().all(|c| c.is_ascii_hexdigit() || c == 'x'));
                if !known {
                    return Err(format!(
                        "line {}: unknown entity &{entity};",
                        line_of(html, i)
                    ));
                }
                i += end + 1;
            }
            b'>' => return Err(format!("line {}: a stray >", line_of(html, i))),
            _ => i += 1,
        }
    }
    if let Some(open) = stack.pop() {
        return Err(format!("<{open}> is never closed"));
    }
    for single in ["html", "head", "body", "main"] {
        if page.count(single) != 1 {
            return Err(format!("{} <{single}> elements", page.count(single)));
        }
    }
    Ok(page)
}

type StartTag = (String, Attributes, bool, usize);

/// Reads `<name a="b" c>` at the start of `text`.
fn start_tag(text: &str) -> Result<StartTag, String> {
    let bytes = text.as_bytes();
    let mut i = 1;
    let name_end = text[i..]
        .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
        .ok_or("a start tag never ends")?
        + i;
    let name = text[i..name_end].to_ascii_lowercase();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(format!("a stray < (tag name {name:?})"));
    }
    i = name_end;
    let mut attributes = Vec::new();
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        match bytes.get(i) {
            None => return Err(format!("<{name}> never ends")),
            Some(b'>') => return Ok((name, attributes, false, i + 1)),
            Some(b'/') if bytes.get(i + 1) == Some(&b'>') => {
                return Ok((name, attributes, true, i + 2))
            }
            _ => {}
        }
        let key_end = text[i..]
            .find(|c: char| c.is_whitespace() || c == '=' || c == '>')
            .ok_or("an attribute never ends")?
            + i;
        let key = text[i..key_end].to_owned();
        if key.is_empty() || key.contains(['"', '\'', '<', '/']) {
            return Err(format!("<{name}>: a bad attribute name {key:?}"));
        }
        i = key_end;
        if bytes.get(i) == Some(&b'=') {
            if bytes.get(i + 1) != Some(&b'"') {
                return Err(format!("<{name}>: attribute {key} is not double-quoted"));
            }
            let end = text[i + 2..]
                .find('"')
                .ok_or_else(|| format!("<{name}>: attribute {key} never ends"))?
                + i
                + 2;
            let value = &text[i + 2..end];
            if value.contains('<') {
                return Err(format!("<{name}>: attribute {key} holds a raw <"));
            }
            attributes.push((key, value.to_owned()));
            i = end + 1;
        } else {
            attributes.push((key, String::new()));
        }
    }
}

#[test]
fn the_checker_catches_what_it_should() {
    let ok = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>a>b{}</style></head><body><main><p id=\"a\">x &amp; y</p></main><script>if (1 < 2) {}</script></body></html>";
    assert!(check(ok).is_ok(), "{:?}", check(ok).err());
    for bad in [
        ok.replace("</p>", ""),
        ok.replace("x &amp; y", "x & y"),
        ok.replace("x &amp; y", "x <y"),
        ok.replace("id=\"a\"", "id=a"),
        ok.replace("<main>", "<main><b id=\"a\"></b>"),
        ok.replace("</p></main>", "</main></p>"),
    ] {
        assert!(check(&bad).is_err(), "accepted: {bad}");
    }
}
