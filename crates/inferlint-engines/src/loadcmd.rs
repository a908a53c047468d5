//! The command lines `inferlint xray` runs: the `--serve` command split into words, where
//! that server will listen, and the load command: which load tool it runs and where that
//! tool writes its result, with the engines' own benchmark clients asked to save theirs
//! into the run folder.
//!
//! Pure functions of the words (and, for inference-perf, of the config file the command
//! names): nothing here starts a process.

use std::path::{Path, PathBuf};

use inferlint_core::model::client::LoadTool;
use inferlint_core::Engine;

/// POSIX-shell word splitting: blanks separate words, `'...'` is literal, `"..."` keeps
/// `\"`, `\\`, `\$` and `` \` `` escapes, a bare `\` escapes the next character. No
/// expansion of variables or globs: the command is started without a shell. `None` when a
/// quote is left open or the command ends in a lone backslash.
///
/// The same rule as `detect::engine_from_command` uses (its splitter is private there).
///
/// Not the `shell-words` crate, whose `split` answers three cases otherwise, each of which
/// would change what xray starts: it reads a `#` at the start of a word as a comment and
/// drops the rest of the command (here it is an argument: no shell runs the words, and a
/// dropped flag value goes unnoticed), keeps a lone trailing backslash as a word of its
/// own (here a command cut off there is refused), and keeps a carriage return inside the
/// last word (here it is a blank, so a command pasted with Windows line ends starts
/// clean).
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
    /// The environment settings, in order.
    pub env: Vec<(String, String)>,
    /// The program to run.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
}

/// Splits `env A=1 B=2 cmd args` into the settings and the command. `None` when no
/// command is left. An `env` given options of its own (`env -u NAME cmd`, `env -i ...`)
/// is the program itself: it does what they say, which settings alone cannot.
pub fn program(words: &[String]) -> Option<Program> {
    let mut rest = words;
    if rest
        .first()
        .is_some_and(|w| w == "env" || w.ends_with("/env"))
    {
        if rest.get(1).is_some_and(|w| w.starts_with('-')) {
            let (program, args) = rest.split_first()?;
            return Some(Program {
                env: Vec::new(),
                program: program.clone(),
                args: args.to_vec(),
            });
        }
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

impl Client {
    /// The load tool this client is.
    pub fn tool(self) -> LoadTool {
        match self {
            Client::Vllm => LoadTool::VllmBench,
            Client::Sglang => LoadTool::SglangBench,
            Client::Trtllm => LoadTool::TrtllmBench,
        }
    }
}

/// Which load tool a command runs: the engines' own clients, GuideLLM (`guidellm run` or
/// `guidellm benchmark`), AIPerf (`aiperf profile`), GenAI-Perf (`genai-perf profile`),
/// inference-perf (`inference-perf`, `python -m inference_perf`) or LLMPerf
/// (`token_benchmark_ray.py`).
pub fn tool(words: &[String]) -> Option<LoadTool> {
    if let Some(client) = client(words) {
        return Some(client.tool());
    }
    let names: Vec<&str> = words
        .iter()
        .map(|w| w.rsplit('/').next().unwrap_or(w))
        .collect();
    for (i, name) in names.iter().enumerate() {
        let module = (*name == "-m")
            .then(|| words.get(i + 1).map(String::as_str))
            .flatten();
        let found = match (*name, module) {
            ("guidellm", _) | (_, Some("guidellm")) => Some(LoadTool::GuideLlm),
            ("aiperf", _) | (_, Some("aiperf")) => Some(LoadTool::AiPerf),
            ("genai-perf", _) | (_, Some("genai_perf")) => Some(LoadTool::GenAiPerf),
            ("inference-perf", _) | (_, Some("inference_perf")) => Some(LoadTool::InferencePerf),
            ("token_benchmark_ray.py", _) | (_, Some("token_benchmark_ray")) => {
                Some(LoadTool::LlmPerf)
            }
            _ => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

/// The load command as xray runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadPlan {
    /// The command's words, as xray runs them.
    pub words: Vec<String>,
    /// The load tool it runs, when xray knows it.
    pub tool: Option<LoadTool>,
    /// The engine's own benchmark client, when it is one.
    pub client: Option<Client>,
    /// Where the client's result will be, when that is known before it runs.
    pub result_file: Option<PathBuf>,
    /// `--save-result` without `--result-filename`: the newest `*.json` in this folder
    /// written during the load is the result.
    pub result_dir_newest: Option<PathBuf>,
    /// Folders the tool writes its results into (its output or artifact folder), searched
    /// after the load for a result written during it.
    pub result_dirs: Vec<PathBuf>,
    /// `--max-concurrency N` (digits only).
    pub max_concurrency: Option<u64>,
    /// `--request-rate R` with R a finite rate above 0: the load is paced by its
    /// arrivals, and `--max-concurrency` is a cap on what they keep open, not a number
    /// the server is to reach.
    pub paced_by_rate: bool,
}

/// Adds the flags that make a known client save its result in `dir` (unless the user
/// gave them) and reads the concurrency asked for. Other tools run exactly as given.
pub fn plan_load(words: &[String], dir: &Path) -> LoadPlan {
    let client = client(words);
    let mut plan = LoadPlan {
        words: words.to_vec(),
        tool: tool(words),
        client,
        result_file: None,
        result_dir_newest: None,
        result_dirs: Vec::new(),
        max_concurrency: None,
        paced_by_rate: false,
    };
    let Some(client) = client else {
        plan.result_dirs = other_tools_output(words, plan.tool);
        return plan;
    };
    plan.max_concurrency = flag_value(words, "--max-concurrency")
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|v| v.parse().ok());
    plan.paced_by_rate = flag_value(words, "--request-rate")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .is_some_and(|r| r.is_finite() && r > 0.0);
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

/// Where a load tool other than the engines' clients writes its results, from its own
/// flags (and defaults). xray runs these tools exactly as given: their options differ
/// between releases, so it adds none.
fn other_tools_output(words: &[String], tool: Option<LoadTool>) -> Vec<PathBuf> {
    let path = |p: &str| PathBuf::from(p);
    match tool {
        // 0.8: `--output kind=json,path=FILE`; earlier: `--output-path FILE_OR_DIR`.
        Some(LoadTool::GuideLlm) => {
            let mut dirs = Vec::new();
            for (i, word) in words.iter().enumerate() {
                let value = match word.as_str() {
                    "--output" | "--outputs" => words.get(i + 1).map(String::as_str),
                    w => w
                        .strip_prefix("--output=")
                        .or_else(|| w.strip_prefix("--outputs=")),
                };
                if let Some(file) =
                    value.and_then(|v| v.split(',').find_map(|kv| kv.strip_prefix("path=")))
                {
                    dirs.push(parent_or_self(file));
                }
            }
            if let Some(p) =
                flag_value(words, "--output-path").or_else(|| flag_value(words, "--output-dir"))
            {
                dirs.push(parent_or_self(p));
            }
            if dirs.is_empty() {
                dirs.push(path("."));
            }
            dirs
        }
        Some(LoadTool::AiPerf | LoadTool::GenAiPerf) => vec![path(
            flag_value(words, "--artifact-dir")
                .or_else(|| flag_value(words, "--artifact-directory"))
                .unwrap_or("artifacts"),
        )],
        Some(LoadTool::LlmPerf) => vec![path(flag_value(words, "--results-dir").unwrap_or("."))],
        Some(LoadTool::InferencePerf) => {
            let config = flag_value(words, "--config_file").or_else(|| flag_value(words, "-c"));
            config
                .and_then(|c| std::fs::read_to_string(c).ok())
                .and_then(|yaml| local_storage_path(&yaml))
                .map(PathBuf::from)
                .into_iter()
                .collect()
        }
        _ => Vec::new(),
    }
}

/// A file's folder (a path ending in `.json`), else the path itself.
fn parent_or_self(path: &str) -> PathBuf {
    let p = PathBuf::from(path);
    if path.ends_with(".json") || path.ends_with(".jsonl") {
        match p.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
            _ => PathBuf::from("."),
        }
    } else {
        p
    }
}

/// `storage.local_storage.path` of an inference-perf config, read line by line: the key
/// `path:` indented under `local_storage:`.
pub fn local_storage_path(yaml: &str) -> Option<String> {
    let mut inside: Option<usize> = None;
    for line in yaml.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        match inside {
            Some(level) if indent > level => {
                if let Some(value) = trimmed.strip_prefix("path:") {
                    let value = value.trim().trim_matches(['"', '\'']);
                    return (!value.is_empty()).then(|| value.to_owned());
                }
            }
            Some(_) => inside = None,
            None => {}
        }
        if trimmed == "local_storage:" {
            inside = Some(indent);
        }
    }
    None
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

    /// Where a shell would comment, keep a backslash or keep a carriage return, xray's
    /// words do not: no shell runs them (see `shell_words`).
    #[test]
    fn a_hash_is_an_argument_a_lone_backslash_is_refused_a_carriage_return_is_a_blank() {
        assert_eq!(
            words("vllm serve m --api-key #k"),
            ["vllm", "serve", "m", "--api-key", "#k"]
        );
        assert_eq!(shell_words("vllm serve m \\"), None);
        assert_eq!(words("vllm serve m\r\n"), ["vllm", "serve", "m"]);
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
    fn an_env_with_options_of_its_own_is_the_program() {
        // `env -u NAME cmd` removes NAME from cmd's environment: only env can do that, so
        // it runs as it is, and the tool after it is still the one the command runs.
        let command = words("env -u HF_HUB_OFFLINE /v/bin/aiperf profile --model m");
        let p = program(&command).unwrap();
        assert_eq!(p.program, "env");
        assert_eq!(
            p.args,
            [
                "-u",
                "HF_HUB_OFFLINE",
                "/v/bin/aiperf",
                "profile",
                "--model",
                "m"
            ]
        );
        assert!(p.env.is_empty());
        assert_eq!(tool(&command), Some(LoadTool::AiPerf));
        assert_eq!(
            program(&words("/usr/bin/env -i")).unwrap().program,
            "/usr/bin/env"
        );
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
        assert!(!vllm.paced_by_rate);
        // A rate paces the load; `inf` (the tools' default) sends everything at once.
        let paced = |rate: &str| {
            plan_load(
                &words(&format!(
                    "vllm bench serve --max-concurrency 32 --request-rate {rate}"
                )),
                Path::new("run"),
            )
            .paced_by_rate
        };
        assert!(paced("8"));
        assert!(paced("0.5"));
        assert!(!paced("inf"));
        assert!(!paced("0"));
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
        assert_eq!(plan.tool, None);
        assert_eq!(plan.max_concurrency, None);
        assert_eq!(plan.words, words("my-load --max-concurrency 4"));
    }

    /// The other load tools are named and their output folders found, and their commands
    /// run exactly as given.
    #[test]
    fn other_load_tools_and_where_they_write() {
        let dir = Path::new("run");
        let cases: [(&str, LoadTool, &[&str]); 7] = [
            (
                "/v/bin/guidellm run --profile kind=concurrent,streams=8 --output kind=json,path=out/g.json",
                LoadTool::GuideLlm,
                &["out"],
            ),
            ("guidellm benchmark --target x --output-path results/", LoadTool::GuideLlm, &["results/"]),
            ("aiperf profile --model m --artifact-dir run/aiperf", LoadTool::AiPerf, &["run/aiperf"]),
            ("genai-perf profile -m m", LoadTool::GenAiPerf, &["artifacts"]),
            ("python -m aiperf profile --artifact-dir=a", LoadTool::AiPerf, &["a"]),
            (
                "python token_benchmark_ray.py --model m --results-dir result_outputs",
                LoadTool::LlmPerf,
                &["result_outputs"],
            ),
            ("inference-perf --config_file /nonexistent.yml", LoadTool::InferencePerf, &[]),
        ];
        for (command, tool, dirs) in cases {
            let plan = plan_load(&words(command), dir);
            assert_eq!(plan.tool, Some(tool), "{command}");
            assert_eq!(plan.words, words(command), "{command}");
            let expected: Vec<PathBuf> = dirs.iter().map(PathBuf::from).collect();
            assert_eq!(plan.result_dirs, expected, "{command}");
        }
        assert_eq!(
            tool(&words("vllm bench serve --model m")),
            Some(LoadTool::VllmBench)
        );
    }

    #[test]
    fn inference_perf_storage_path_from_its_config() {
        let yaml = "load:\n  type: concurrent\nstorage:\n  local_storage:\n    path: /tmp/out/ip\n    report_file_prefix: null\nreport:\n  path: nope\n";
        assert_eq!(local_storage_path(yaml).as_deref(), Some("/tmp/out/ip"));
        assert_eq!(
            local_storage_path("storage:\n  local_storage:\n  other: 1\npath: x\n"),
            None
        );
    }
}
