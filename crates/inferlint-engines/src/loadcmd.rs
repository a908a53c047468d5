//! The command lines `inferlint xray` runs: the `--serve` command split into words, where
//! that server will listen, and the load command, with the engines' own benchmark clients
//! asked to save their result into the run folder.
//!
//! Pure functions of the words: nothing here starts a process.

use std::path::{Path, PathBuf};

use inferlint_core::Engine;

/// POSIX-shell word splitting: blanks separate words, `'...'` is literal, `"..."` keeps
/// `\"`, `\\`, `\$` and `` \` `` escapes, a bare `\` escapes the next character. No
/// expansion of variables or globs: the command is started without a shell. `None` when a
/// quote is left open or the command ends in a lone backslash.
///
/// The same rule as `detect::engine_from_command` uses (its splitter is private there).
pub fn shell_words(command: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        other => word.push(other),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => {
                            let escaped = chars.next()?;
                            if !matches!(escaped, '"' | '\\' | '$' | '`' | '\n') {
                                word.push('\\');
                            }
                            if escaped != '\n' {
                                word.push(escaped);
                            }
                        }
                        other => word.push(other),
                    }
                }
            }
            '\\' => {
                in_word = true;
                let escaped = chars.next()?;
                if escaped != '\n' {
                    word.push(escaped);
                }
            }
            other => {
                in_word = true;
                word.push(other);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

/// A program to start without a shell: leading `env NAME=VALUE ...` (or bare
/// `NAME=VALUE` words) become environment settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    pub env: Vec<(String, String)>,
    pub program: String,
    pub args: Vec<String>,
}

/// Splits `env A=1 B=2 cmd args` into the settings and the command. `None` when no
/// command is left.
pub fn program(words: &[String]) -> Option<Program> {
    let mut rest = words;
    if rest
        .first()
        .is_some_and(|w| w == "env" || w.ends_with("/env"))
    {
        rest = &rest[1..];
    }
    let mut env = Vec::new();
    while let Some((first, tail)) = rest.split_first() {
        match first.split_once('=') {
            Some((name, value))
                if !name.is_empty()
                    && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
                    && !name.starts_with(|c: char| c.is_ascii_digit()) =>
            {
                env.push((name.to_owned(), value.to_owned()));
                rest = tail;
            }
            _ => break,
        }
    }
    let (program, args) = rest.split_first()?;
    Some(Program {
        env,
        program: program.clone(),
        args: args.to_vec(),
    })
}

/// The value of `--name V` or `--name=V` (the last one given).
pub fn flag_value<'a>(words: &'a [String], name: &str) -> Option<&'a str> {
    let mut found = None;
    let with_equals = format!("{name}=");
    for (i, word) in words.iter().enumerate() {
        if word == name {
            if let Some(v) = words.get(i + 1) {
                found = Some(v.as_str());
            }
        } else if let Some(v) = word.strip_prefix(&with_equals) {
            found = Some(v);
        }
    }
    found
}

fn has_flag(words: &[String], name: &str) -> bool {
    let with_equals = format!("{name}=");
    words
        .iter()
        .any(|w| w == name || w.starts_with(&with_equals))
}

/// The address a `--serve` command will listen on: its `--host` (`0.0.0.0`, `::` or
/// empty read as 127.0.0.1; IPv6 bracketed) and `--port` (digits), else the engine's
/// default port.
pub fn serve_url(words: &[String], engine: Engine) -> String {
    let host = match flag_value(words, "--host").map(str::trim) {
        None | Some("" | "0.0.0.0" | "::" | "[::]") => "127.0.0.1".to_owned(),
        Some(h) if h.contains(':') && !h.starts_with('[') => format!("[{h}]"),
        Some(h) => h.to_owned(),
    };
    let port = flag_value(words, "--port")
        .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap_or(engine.descriptor().default_port);
    format!("http://{host}:{port}")
}

/// One of the three engines' own benchmark clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// `vllm bench serve`
    Vllm,
    /// `python -m sglang.benchmark.serving` or `python -m sglang.bench_serving`
    Sglang,
    /// `python -m tensorrt_llm.serve.scripts.benchmark_serving`
    Trtllm,
}

/// Which benchmark client a load command runs, if one of the three.
pub fn client(words: &[String]) -> Option<Client> {
    let names: Vec<&str> = words
        .iter()
        .map(|w| w.rsplit('/').next().unwrap_or(w))
        .collect();
    for (i, name) in names.iter().enumerate() {
        let next = |k: usize| names.get(i + k).copied();
        if *name == "vllm" && next(1) == Some("bench") && next(2) == Some("serve") {
            return Some(Client::Vllm);
        }
        if *name == "-m" {
            match words.get(i + 1).map(String::as_str) {
                Some("sglang.benchmark.serving" | "sglang.bench_serving") => {
                    return Some(Client::Sglang)
                }
                Some("tensorrt_llm.serve.scripts.benchmark_serving") => {
                    return Some(Client::Trtllm)
                }
                _ => {}
            }
        }
    }
    None
}

/// The load command as xray runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadPlan {
    pub words: Vec<String>,
    pub client: Option<Client>,
    /// Where the client's result will be, when that is known before it runs.
    pub result_file: Option<PathBuf>,
    /// `--save-result` without `--result-filename`: the newest `*.json` in this folder
    /// written during the load is the result.
    pub result_dir_newest: Option<PathBuf>,
    /// `--max-concurrency N` (digits only).
    pub max_concurrency: Option<u64>,
}

/// Adds the flags that make a known client save its result in `dir` (unless the user
/// gave them) and reads the concurrency asked for. Other tools run exactly as given.
pub fn plan_load(words: &[String], dir: &Path) -> LoadPlan {
    let client = client(words);
    let mut plan = LoadPlan {
        words: words.to_vec(),
        client,
        result_file: None,
        result_dir_newest: None,
        max_concurrency: None,
    };
    let Some(client) = client else {
        return plan;
    };
    plan.max_concurrency = flag_value(words, "--max-concurrency")
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|v| v.parse().ok());
    let dir_text = dir.display().to_string();
    match client {
        Client::Vllm | Client::Trtllm => {
            if has_flag(words, "--save-result") {
                let result_dir = PathBuf::from(flag_value(words, "--result-dir").unwrap_or("."));
                match flag_value(words, "--result-filename") {
                    Some(name) => plan.result_file = Some(result_dir.join(name)),
                    None => plan.result_dir_newest = Some(result_dir),
                }
            } else {
                plan.words.extend(
                    [
                        "--save-result",
                        "--result-dir",
                        &dir_text,
                        "--result-filename",
                        "bench.json",
                    ]
                    .map(str::to_owned),
                );
                plan.result_file = Some(dir.join("bench.json"));
            }
        }
        Client::Sglang => match flag_value(words, "--output-file") {
            Some(file) => plan.result_file = Some(PathBuf::from(file)),
            None => {
                let file = dir.join("bench.jsonl");
                plan.words.push("--output-file".to_owned());
                plan.words.push(file.display().to_string());
                plan.result_file = Some(file);
            }
        },
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        shell_words(text).unwrap_or_default()
    }

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(
            words(r#"vllm serve "my model" --x 'a b' c\ d"#),
            ["vllm", "serve", "my model", "--x", "a b", "c d"]
        );
        assert_eq!(shell_words("vllm 'open"), None);
    }

    #[test]
    fn env_settings_before_the_program() {
        let p = program(&words("env CUDA_VISIBLE_DEVICES=1 A=x=y vllm serve m")).unwrap();
        assert_eq!(
            p.env,
            [
                ("CUDA_VISIBLE_DEVICES".to_owned(), "1".to_owned()),
                ("A".to_owned(), "x=y".to_owned())
            ]
        );
        assert_eq!(p.program, "vllm");
        assert_eq!(p.args, ["serve", "m"]);
        assert_eq!(program(&words("env A=1")), None);
    }

    #[test]
    fn where_the_server_listens() {
        assert_eq!(
            serve_url(&words("vllm serve m"), Engine::Vllm),
            "http://127.0.0.1:8000"
        );
        assert_eq!(
            serve_url(&words("sglang serve --model-path m"), Engine::Sglang),
            "http://127.0.0.1:30000"
        );
        assert_eq!(
            serve_url(
                &words("vllm serve m --host 0.0.0.0 --port=9001"),
                Engine::Vllm
            ),
            "http://127.0.0.1:9001"
        );
        assert_eq!(
            serve_url(&words("vllm serve m --host ::1 --port 9"), Engine::Vllm),
            "http://[::1]:9"
        );
    }

    #[test]
    fn known_clients_save_their_result() {
        let dir = Path::new("run");
        let vllm = plan_load(
            &words("vllm bench serve --model m --max-concurrency 32"),
            dir,
        );
        assert_eq!(vllm.client, Some(Client::Vllm));
        assert_eq!(vllm.max_concurrency, Some(32));
        assert!(vllm.words.ends_with(&words(
            "--save-result --result-dir run --result-filename bench.json"
        )));
        assert_eq!(vllm.result_file, Some(dir.join("bench.json")));

        let sglang = plan_load(
            &words("python -m sglang.benchmark.serving --max-concurrency=8"),
            dir,
        );
        assert_eq!(sglang.client, Some(Client::Sglang));
        assert_eq!(sglang.max_concurrency, Some(8));
        assert_eq!(sglang.result_file, Some(dir.join("bench.jsonl")));

        let own = plan_load(
            &words("python3 -m tensorrt_llm.serve.scripts.benchmark_serving --save-result --result-dir out"),
            dir,
        );
        assert_eq!(own.client, Some(Client::Trtllm));
        assert_eq!(own.result_file, None);
        assert_eq!(own.result_dir_newest, Some(PathBuf::from("out")));
        assert_eq!(own.words.len(), 6);
    }

    #[test]
    fn other_tools_run_as_given() {
        let plan = plan_load(&words("my-load --max-concurrency 4"), Path::new("run"));
        assert_eq!(plan.client, None);
        assert_eq!(plan.max_concurrency, None);
        assert_eq!(plan.words, words("my-load --max-concurrency 4"));
    }
}
