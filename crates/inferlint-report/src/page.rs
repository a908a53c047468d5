//! The shell shared by the pages other than the run report (`compare -o`, `sweep -o`):
//! the same style sheet, favicon and generator mark, and a Content-Security-Policy that
//! allows no script at all, since these pages have none. The run report shares its
//! style sheet, favicon and the showing of bidirectional controls.

use maud::{html, Markup, PreEscaped, DOCTYPE};

use crate::csp;

/// The page's style sheet (ours, constant).
pub const STYLE: &str = include_str!("../assets/report.css");
/// The page's script (ours, constant).
pub const SCRIPT: &str = include_str!("../assets/report.js");

/// A whole page: `title` in the head and as the heading, `body` under it.
pub fn page(title: &str, generator: &str, kind: &str, body: Markup) -> String {
    let page: Markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(csp::policy_without_script(STYLE));
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                meta name="generator" content=(generator);
                title { (title) " \u{2013} inferlint" }
                link rel="icon" href=(FAVICON);
                // Our own constant style sheet; nothing from the runs is in it.
                style { (PreEscaped(STYLE)) }
            }
            body {
                header.top {
                    div.brand {
                        span.logo aria-hidden="true" { "\u{2301}" }
                        span { "inferlint " (kind) }
                    }
                    h1 { (title) }
                }
                main { (body) }
                footer { p.muted { "Written by " (generator) "." } }
            }
        }
    };
    bidi_shown(page.into_string())
}

/// The page with every bidirectional control character (a right-to-left override in a
/// model name, a log line or a file name) written as its escape, `\u{202e}`, so that it
/// is seen and reverses nothing. The script's data escaped its own already
/// ([`crate::data::ScriptJson`]); the style sheet and the script are ours and hold none, so
/// what is left is text and attribute values, where the escape is plain text.
pub fn bidi_shown(page: String) -> String {
    if !page
        .chars()
        .any(inferlint_core::story::fmt::is_bidi_control)
    {
        return page;
    }
    let mut out = String::with_capacity(page.len() + 64);
    for c in page.chars() {
        if inferlint_core::story::fmt::is_bidi_control(c) {
            out.push_str(&inferlint_core::story::fmt::visible_escape(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// An inline SVG favicon (a tripwire across a gauge), as a data URI.
pub const FAVICON: &str = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Crect width='16' height='16' rx='3' fill='%232557a7'/%3E%3Cpath d='M2 11h12' stroke='%23fff' stroke-width='2'/%3E%3Cpath d='M4 8l3-4 2 3 3-4' stroke='%23fdd663' fill='none' stroke-width='1.6'/%3E%3C/svg%3E";
