//! The shell shared by the pages other than the run report (`compare -o`, `sweep -o`):
//! the same style sheet, favicon and generator mark, and a Content-Security-Policy that
//! allows no script at all, since these pages have none.

use maud::{html, Markup, PreEscaped, DOCTYPE};

use crate::{bidi_shown, csp, FAVICON, STYLE};

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
