//! Which engine a boot log, a server command or a set of metric names came from.
//!
//! Each engine's markers are data in one table per input; the first engine whose markers
//! match wins, in the order TensorRT-LLM, SGLang, vLLM (TensorRT-LLM's and SGLang's logs
//! mention vLLM-like paths, never the other way round).

use inferlint_core::engine::Engine;

/// How much of a log is searched for markers.
const LOG_SEARCH_CHARS: usize = 200_000;

/// A marker in a boot log.
#[derive(Debug, Clone, Copy)]
enum Marker {
    /// Anywhere.
    Text(&'static str),
    /// Only where it starts a word (the character before is not a letter, digit or `_`).
    WordStart(&'static str),
    /// Only as a whole word.
    Word(&'static str),
}

/// Markers per engine, in the order engines are tried.
const LOG_MARKERS: &[(Engine, &[Marker])] = &[
    (
        Engine::Trtllm,
        &[
            Marker::Text("[TensorRT-LLM]"),
            Marker::Word("trtllm-serve"),
            // Not a bare `tensorrt_llm/`: FlashInfer's paths contain that.
            Marker::Text("tensorrt_llm/llmapi/"),
            Marker::Text("tensorrt_llm/serve/"),
            Marker::Text("tensorrt_llm/_torch/"),
            Marker::Text("tensorrt_llm/commands/"),
        ],
    ),
    (
        Engine::Sglang,
        &[
            Marker::Text("server_args={"),
            Marker::WordStart("sglang."),
            Marker::WordStart("sglang/"),
            Marker::Text("sglang::"),
        ],
    ),
    (
        Engine::Vllm,
        &[
            Marker::Text("Initializing a V1 LLM engine"),
            Marker::WordStart("vllm."),
            Marker::WordStart("vllm/"),
            Marker::Text("VLLM::"),
            Marker::Text("(EngineCore pid="),
        ],
    ),
];

/// The engine a boot log names, from its first 200,000 characters; `None` when nothing
/// in it is any engine's.
pub fn engine_from_log(text: &str) -> Option<Engine> {
    let head = match text.char_indices().nth(LOG_SEARCH_CHARS) {
        Some((end, _)) => &text[..end],
        None => text,
    };
    LOG_MARKERS
        .iter()
        .find(|(_, markers)| markers.iter().any(|m| marker_in(head, *m)))
        .map(|(engine, _)| *engine)
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn marker_in(text: &str, marker: Marker) -> bool {
    match marker {
        Marker::Text(m) => text.contains(m),
        Marker::WordStart(m) => text
            .match_indices(m)
            .any(|(at, _)| crate::bootlog::scan::word_start(text, at)),
        Marker::Word(m) => text.match_indices(m).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + m.len()..].chars().next();
            before.is_none_or(|c| !is_name_char(c) && c != '-')
                && after.is_none_or(|c| !is_name_char(c) && c != '-')
        }),
    }
}

/// Module prefixes `python -m MODULE` names, per engine.
const MODULES: &[(Engine, &str)] = &[
    (Engine::Vllm, "vllm"),
    (Engine::Sglang, "sglang"),
    (Engine::Trtllm, "tensorrt_llm"),
];

/// The engine a `--serve` command starts: `trtllm-serve ...`, `vllm serve ...`,
/// `sglang serve ...`, or `python -m vllm.entrypoints...` (also after `env X=1`, or as a
/// path). `None` when it names none, or its quotes do not balance.
pub fn engine_from_command(command: &str) -> Option<Engine> {
    let words = crate::loadcmd::shell_words(command)?;
    let names: Vec<&str> = words
        .iter()
        .map(|w| w.rsplit(['/', '\\']).next().unwrap_or(w))
        .collect();
    for (i, name) in names.iter().enumerate() {
        let next = names.get(i + 1).copied();
        match *name {
            "trtllm-serve" => return Some(Engine::Trtllm),
            "vllm" if next == Some("serve") => return Some(Engine::Vllm),
            "sglang" if next == Some("serve") => return Some(Engine::Sglang),
            "-m" => {
                if let Some(module) = words.get(i + 1) {
                    let engine = MODULES.iter().find(|(_, prefix)| {
                        module == prefix
                            || module
                                .strip_prefix(prefix)
                                .is_some_and(|rest| rest.starts_with('.'))
                    });
                    if let Some((engine, _)) = engine {
                        return Some(*engine);
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// The engine whose metric-name prefix most names carry; ties go to vLLM, then SGLang,
/// then TensorRT-LLM. `None` when no name carries any engine's prefix. The rule is the
/// engine tables' ([`Engine::from_metric_names`]), which read a scrape's renames by it.
pub fn engine_from_metric_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<Engine> {
    Engine::from_metric_names(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands() {
        assert_eq!(engine_from_command("vllm serve m"), Some(Engine::Vllm));
        assert_eq!(
            engine_from_command("env X=1 vllm serve m"),
            Some(Engine::Vllm)
        );
        assert_eq!(
            engine_from_command("/opt/venv/bin/vllm serve m"),
            Some(Engine::Vllm)
        );
        assert_eq!(engine_from_command("vllm bench serve"), None);
        assert_eq!(engine_from_command("python serve.py --model vllm"), None);
        assert_eq!(
            engine_from_command("sglang serve --model-path m"),
            Some(Engine::Sglang)
        );
        assert_eq!(
            engine_from_command("python -m sglang.launch_server --model-path m"),
            Some(Engine::Sglang)
        );
        assert_eq!(
            engine_from_command("python3 -m vllm.entrypoints.openai.api_server"),
            Some(Engine::Vllm)
        );
        assert_eq!(
            engine_from_command("python -m tensorrt_llm.commands.serve m"),
            Some(Engine::Trtllm)
        );
        assert_eq!(engine_from_command("python -m vllmx"), None);
        assert_eq!(
            engine_from_command("trtllm-serve /m --port 8000"),
            Some(Engine::Trtllm)
        );
        assert_eq!(
            engine_from_command(r#""C:\venv\Scripts\trtllm-serve" m"#),
            Some(Engine::Trtllm),
            "a quoted Windows path keeps its backslashes"
        );
        assert_eq!(engine_from_command("trtllm-serve.exe m"), None);
        assert_eq!(engine_from_command("vllm serve 'unbalanced"), None);
        assert_eq!(engine_from_command("bash -c \"vllm serve m"), None);
        assert_eq!(
            engine_from_command("'vllm' \"serve\" m"),
            Some(Engine::Vllm)
        );
        assert_eq!(engine_from_command(""), None);
    }

    #[test]
    fn shell_words() {
        assert_eq!(
            crate::loadcmd::shell_words(r#"a 'b c' "d \"e\"" f\ g"#),
            Some(vec![
                "a".into(),
                "b c".into(),
                "d \"e\"".into(),
                "f g".into()
            ])
        );
        assert_eq!(crate::loadcmd::shell_words("trailing \\"), None);
    }

    #[test]
    fn metric_names() {
        assert_eq!(
            engine_from_metric_names(["vllm:a", "sglang:b", "sglang:c"]),
            Some(Engine::Sglang)
        );
        assert_eq!(
            engine_from_metric_names(["vllm:a", "sglang:b"]),
            Some(Engine::Vllm)
        );
        assert_eq!(
            engine_from_metric_names(["sglang:b", "trtllm_x"]),
            Some(Engine::Sglang)
        );
        assert_eq!(
            engine_from_metric_names(["trtllm_x", "go_gc"]),
            Some(Engine::Trtllm)
        );
        assert_eq!(engine_from_metric_names(["python_gc_objects"]), None);
        assert_eq!(engine_from_metric_names([]), None);
    }

    #[test]
    fn log_markers() {
        assert_eq!(
            engine_from_log("Initializing a V1 LLM engine (v0.28.0)"),
            Some(Engine::Vllm)
        );
        assert_eq!(
            engine_from_log("File \"/x/vllm/engine.py\""),
            Some(Engine::Vllm)
        );
        assert_eq!(engine_from_log("pyvllm.x"), None);
        assert_eq!(
            engine_from_log("[TensorRT-LLM] TensorRT LLM version: 1"),
            Some(Engine::Trtllm)
        );
        assert_eq!(engine_from_log("/site-packages/tensorrt_llm/data/x"), None);
        assert_eq!(
            engine_from_log("run trtllm-serve now"),
            Some(Engine::Trtllm)
        );
        assert_eq!(engine_from_log("run trtllm-serve-x now"), None);
        assert_eq!(
            engine_from_log("server_args={'a': 1}"),
            Some(Engine::Sglang)
        );
        assert_eq!(
            engine_from_log("sglang.srt and vllm/"),
            Some(Engine::Sglang)
        );
        assert_eq!(engine_from_log(""), None);
        let late = format!("{}vllm.x", "é".repeat(LOG_SEARCH_CHARS));
        assert_eq!(
            engine_from_log(&late),
            None,
            "markers past the search window"
        );
    }
}
