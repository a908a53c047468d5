//! The architecture's rules that a test can hold (docs/ARCHITECTURE.md says which rule
//! each test guards), in the manner of rust-analyzer's `xtask/src/tidy.rs`: read the
//! manifests and the sources, fail naming the file and line that breaks a rule.

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::root;

    /// Every `.rs` file under `dir`, in path order.
    fn rust_files(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_owned()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
        out.sort();
        out
    }

    /// A source file without its unit tests (from the first `#[cfg(test)]` module on).
    fn without_tests(text: &str) -> &str {
        let mut at = 0;
        for line in text.lines() {
            if line.trim() == "#[cfg(test)]" {
                let rest = &text[at + line.len()..];
                if rest.trim_start().starts_with("mod ") {
                    return &text[..at];
                }
            }
            at += line.len() + 1;
        }
        text
    }

    /// Whether a line branches on an engine: compares with, matches on, or defaults to one
    /// of the three by name, or compares an engine's key with a literal.
    fn branches_on_an_engine(line: &str) -> bool {
        const ENGINES: [&str; 3] = ["Engine::Vllm", "Engine::Sglang", "Engine::Trtllm"];
        let code = line.split("//").next().unwrap_or(line);
        let named = ENGINES.iter().any(|e| code.contains(e));
        let compared = ["== ", "!= ", "==Some(", "== Some(", "!= Some("]
            .iter()
            .any(|op| {
                ENGINES.iter().any(|e| {
                    code.contains(&format!("{op}{e}")) || code.contains(&format!("{op}{e})"))
                })
            });
        let arm = ENGINES.iter().any(|e| {
            code.contains(&format!("{e} =>"))
                || code.contains(&format!("{e}) =>"))
                || code.contains(&format!("{e} |"))
                || code.contains(&format!("| {e}"))
        });
        let defaulted = ENGINES
            .iter()
            .any(|e| code.contains(&format!("unwrap_or({e})")));
        let tested = named && (code.contains("matches!(") || code.contains("if let "));
        let keyed = ["\"vllm\"", "\"sglang\"", "\"trtllm\""].iter().any(|k| {
            code.contains(&format!("key() == {k}")) || code.contains(&format!("key == {k}"))
        });
        compared || arm || defaulted || tested || keyed
    }

    /// Engine differences are data: no code branches on an engine outside the engine
    /// tables (core's `engine.rs`), the engines crate's format tables (the boot-log
    /// parsers and `detect.rs`, which say what each engine prints and serves) and the
    /// simulator (whose per-engine models and formats are its tables). Everything else
    /// reads an `EngineDescriptor` field.
    #[test]
    fn no_engine_branch_outside_the_engine_tables() {
        let allowed = [
            "crates/inferlint-core/src/engine.rs",
            "crates/inferlint-engines/src/bootlog/",
            "crates/inferlint-engines/src/detect.rs",
            "crates/inferlint-sim/src/",
        ];
        let mut found = Vec::new();
        for crate_dir in std::fs::read_dir(root().join("crates")).unwrap() {
            let src = crate_dir.unwrap().path().join("src");
            if !src.is_dir() {
                continue;
            }
            for file in rust_files(&src) {
                let relative = file
                    .strip_prefix(root())
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                if allowed.iter().any(|a| relative.starts_with(a)) {
                    continue;
                }
                let text = std::fs::read_to_string(&file).unwrap();
                for (i, line) in without_tests(&text).lines().enumerate() {
                    if branches_on_an_engine(line) {
                        found.push(format!("{relative}:{}: {}", i + 1, line.trim()));
                    }
                }
            }
        }
        assert!(
            found.is_empty(),
            "engine branches outside the engine tables (put the fact in EngineDescriptor):\n{}",
            found.join("\n")
        );
    }

    #[test]
    fn the_branch_finder_finds_branches() {
        for line in [
            "if engine.engine == Engine::Vllm {",
            "(boot.engine == Some(Engine::Vllm) || x)",
            "            Engine::Sglang => 1,",
            "let e = engine.unwrap_or(Engine::Trtllm);",
            "matches!(e, Engine::Vllm)",
            "if d.key() == \"vllm\" {",
        ] {
            assert!(branches_on_an_engine(line), "{line}");
        }
        for line in [
            "for engine in Engine::ALL {",
            "(Engine::Sglang, \"a note\"),",
            "let e = engine.unwrap_or(Engine::DEFAULT);",
            "// compares engine == Engine::Vllm in a comment",
        ] {
            assert!(!branches_on_an_engine(line), "{line}");
        }
        assert_eq!(
            without_tests("fn a() {}\n#[cfg(test)]\nmod tests {\n    x == Engine::Vllm\n}\n"),
            "fn a() {}\n"
        );
    }

    /// The files declared as test modules (`#[cfg(test)] mod testing;`) under the folders
    /// given: wholly test code, like a `#[cfg(test)]` module inside a file.
    fn test_module_files(dirs: &[PathBuf]) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for file in dirs.iter().flat_map(|d| rust_files(d)) {
            let text = std::fs::read_to_string(&file).unwrap();
            let lines: Vec<&str> = text.lines().map(str::trim).collect();
            for pair in lines.windows(2) {
                if pair[0] != "#[cfg(test)]" {
                    continue;
                }
                let Some(name) = pair[1]
                    .strip_prefix("mod ")
                    .or_else(|| pair[1].strip_prefix("pub(crate) mod "))
                    .and_then(|rest| rest.strip_suffix(';'))
                else {
                    continue;
                };
                let stem = file.file_stem().unwrap().to_string_lossy();
                let dir = file.parent().unwrap();
                let base = if ["lib", "main", "mod"].contains(&stem.as_ref()) {
                    dir.to_owned()
                } else {
                    dir.join(stem.as_ref())
                };
                out.push(base.join(format!("{name}.rs")));
                out.push(base.join(name).join("mod.rs"));
            }
        }
        out
    }

    /// The string literals of Rust code with the line each starts on (from 1): comments,
    /// character literals and lifetimes are passed over, escapes are kept as written, and
    /// raw strings (`r"..."`, `r#"..."#`) are read to their own end.
    fn string_literals(code: &str) -> Vec<(usize, String)> {
        let bytes = code.as_bytes();
        let mut out = Vec::new();
        let (mut i, mut line) = (0, 1);
        while i < bytes.len() {
            match bytes[i] {
                b'\n' => line += 1,
                b'/' if bytes.get(i + 1) == Some(&b'/') => {
                    while i < bytes.len() && bytes[i] != b'\n' {
                        i += 1;
                    }
                    continue;
                }
                b'/' if bytes.get(i + 1) == Some(&b'*') => {
                    i += 2;
                    while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                        line += usize::from(bytes[i] == b'\n');
                        i += 1;
                    }
                    i += 2;
                    continue;
                }
                // A character literal ('"', '\'', 'x'); a lifetime has no closing quote.
                b'\'' => {
                    if bytes.get(i + 1) == Some(&b'\\') {
                        if let Some(end) = code[i + 2..].find('\'') {
                            i += end + 3;
                            continue;
                        }
                    } else if bytes.get(i + 2) == Some(&b'\'') {
                        i += 3;
                        continue;
                    }
                }
                b'r' if matches!(bytes.get(i + 1), Some(b'"' | b'#'))
                    && (i == 0
                        || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')) =>
                {
                    let hashes = bytes[i + 1..].iter().take_while(|b| **b == b'#').count();
                    if bytes.get(i + 1 + hashes) == Some(&b'"') {
                        let start = i + 2 + hashes;
                        let close = format!("\"{}", "#".repeat(hashes));
                        let end = code[start..].find(&close).map_or(code.len(), |e| start + e);
                        out.push((line, code[start..end].to_owned()));
                        line += code[start..end].matches('\n').count();
                        i = end + close.len();
                        continue;
                    }
                }
                b'"' => {
                    let start = i + 1;
                    let mut end = start;
                    while end < bytes.len() && bytes[end] != b'"' {
                        end += if bytes[end] == b'\\' { 2 } else { 1 };
                    }
                    let end = end.min(bytes.len());
                    out.push((line, code[start..end].to_owned()));
                    line += code[start..end].matches('\n').count();
                    i = end + 1;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        out
    }

    /// What the engine tables name, as code would spell it: each engine's metric-name
    /// prefix, and the label names the tables read.
    struct EngineVocabulary {
        prefixes: Vec<&'static str>,
        labels: Vec<&'static str>,
        /// The request spans' names and the attributes read from them.
        span_names: Vec<&'static str>,
    }

    impl EngineVocabulary {
        fn of_the_tables() -> EngineVocabulary {
            use inferlint_core::engine::SetupSource;
            let mut vocabulary = EngineVocabulary {
                prefixes: Vec::new(),
                labels: Vec::new(),
                span_names: Vec::new(),
            };
            for engine in inferlint_core::Engine::ALL {
                let d = engine.descriptor();
                vocabulary.prefixes.push(d.metric_prefix);
                if let Some(span) = d.request_span {
                    vocabulary.span_names.extend(span.names());
                }
                if let Some(info) = d.cache_info {
                    vocabulary.labels.extend([
                        info.blocks_label,
                        info.block_size_label,
                        info.engine_label,
                    ]);
                }
                let s = &d.setup_sources;
                for source in [s.kv_dtype, s.max_model_len, s.kv_blocks, s.gpu].concat() {
                    if let SetupSource::InfoLabel { label, .. } = source {
                        vocabulary.labels.push(label);
                    }
                }
                for failed in d.failed_requests {
                    vocabulary
                        .labels
                        .extend(failed.label.map(|(label, _)| label));
                }
            }
            vocabulary.labels.sort_unstable();
            vocabulary.labels.dedup();
            vocabulary
        }

        /// A metric's name of one of the engines: its prefix, then a Prometheus name
        /// (a letter first: `sglang::` is a process name, not a metric).
        fn is_metric_name(&self, text: &str) -> bool {
            self.prefixes.iter().any(|p| {
                text.strip_prefix(p).is_some_and(|rest| {
                    rest.starts_with(|c: char| c.is_ascii_lowercase())
                        && rest
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':')
                })
            })
        }

        /// A request span's name or one of the attributes the tables read from it, written
        /// whole: those names are the engines' own and nothing else spells them.
        fn is_span_name(&self, text: &str) -> bool {
            self.span_names.contains(&text)
        }

        /// A label name of the tables, on a line that reads a sample's labels. Elsewhere
        /// the same words are evidence keys, setup keys or settings, which are not labels.
        fn is_label_read(&self, text: &str, line: &str) -> bool {
            const READS_LABELS: [&str; 4] = ["label(", "labels", "total_matching(", ".info("];
            self.labels.contains(&text) && READS_LABELS.iter().any(|r| line.contains(r))
        }
    }

    /// Every engine metric or label name written as a literal in the non-test code of
    /// the crates under `root` that read scrapes, outside the engine tables, as
    /// `file:line: name`.
    fn engine_names_outside_the_tables(root: &Path) -> Vec<String> {
        let vocabulary = EngineVocabulary::of_the_tables();
        let dirs: Vec<PathBuf> = [
            "crates/inferlint-core/src",
            "crates/inferlint-engines/src",
            "crates/inferlint-live/src",
            "crates/inferlint-cli/src",
        ]
        .iter()
        .map(|d| root.join(d))
        .collect();
        let test_modules = test_module_files(&dirs);
        let mut found = Vec::new();
        for file in dirs.iter().flat_map(|d| rust_files(d)) {
            let relative = file
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if relative == "crates/inferlint-core/src/engine.rs" || test_modules.contains(&file) {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            let code = without_tests(&text);
            let lines: Vec<&str> = code.lines().collect();
            for (line, literal) in string_literals(code) {
                let line_text = lines.get(line - 1).copied().unwrap_or_default();
                if vocabulary.is_metric_name(&literal)
                    || vocabulary.is_label_read(&literal, line_text)
                    || vocabulary.is_span_name(&literal)
                {
                    found.push(format!("{relative}:{line}: \"{literal}\""));
                }
            }
        }
        found
    }

    /// Engine facts live in the engine tables (core's `engine.rs`): code that looks up a
    /// metric or a label by name reads it from an `EngineDescriptor`. The pattern follows
    /// the engines' formats: every vLLM metric is named `vllm:...` (its Prometheus logger
    /// prefixes them), every SGLang metric `sglang:...`, and every TensorRT-LLM metric
    /// `trtllm_...` as its table spells them (`a_table_name_carries_its_engine_s_prefix`
    /// holds the tables to it); the label names are those the tables read. Prose that
    /// names a metric in a sentence, evidence keys and settings of the same words are
    /// not lookups and pass. Test code, the simulator (it plays the engines, so it prints
    /// their names), fixtures and docs are not read.
    #[test]
    fn no_engine_metric_or_label_name_outside_the_engine_tables() {
        let found = engine_names_outside_the_tables(&root());
        assert!(
            found.is_empty(),
            "engine metric or label names outside the engine tables (read them from the EngineDescriptor):\n{}",
            found.join("\n")
        );
    }

    /// Every metric name the tables hold carries its engine's prefix, so the prefix is
    /// what finds one written elsewhere.
    #[test]
    fn a_table_name_carries_its_engine_s_prefix() {
        let vocabulary = EngineVocabulary::of_the_tables();
        for engine in inferlint_core::Engine::ALL {
            let d = engine.descriptor();
            let mut names = vec![
                d.running,
                d.waiting,
                d.kv_usage,
                d.generation_tokens,
                d.prompt_tokens,
                d.request_success,
                d.e2e_latency_histogram,
                d.ttft_histogram,
                d.queue_time_histogram,
            ];
            names.extend(d.preemption_counter);
            names.extend(d.preemption_witness);
            names.extend(d.paused_gauge);
            names.extend(d.cache_info.map(|c| c.metric));
            names.extend(d.failed_requests.iter().map(|f| f.name));
            names.extend(d.renamed_metrics.iter().flat_map(|r| [r.old, r.current]));
            if let Some(p) = d.prefix_cache {
                names.extend([p.hit_tokens, p.queried_tokens]);
                names.extend(p.missed_tokens);
            }
            for name in names {
                assert!(name.starts_with(d.metric_prefix), "{}: {name}", d.name);
                assert!(vocabulary.is_metric_name(name), "{name}");
            }
        }
    }

    /// A span's attribute written in code is found; the same words in a sentence are not
    /// (vLLM's request span is the one the tables name).
    #[test]
    fn the_name_finder_finds_span_attributes_in_code() {
        let vocabulary = EngineVocabulary::of_the_tables();
        let span = inferlint_core::Engine::Vllm
            .descriptor()
            .request_span
            .expect("vLLM's table names its request span");
        assert!(vocabulary.span_names.contains(&span.name));
        let code = format!(
            "let a = attrs.get(\"{}\");\nlet b = \"the span's {} is seconds\";\n",
            span.ttft.unwrap(),
            span.ttft.unwrap()
        );
        let found: Vec<(usize, String)> = string_literals(&code)
            .into_iter()
            .filter(|(_, text)| vocabulary.is_span_name(text))
            .collect();
        assert_eq!(found, [(1, span.ttft.unwrap().to_owned())]);
    }

    #[test]
    fn the_name_finder_finds_names_in_code_not_in_words() {
        let vocabulary = EngineVocabulary::of_the_tables();
        assert!(
            vocabulary.labels.contains(&"num_gpu_blocks"),
            "{:?}",
            vocabulary.labels
        );
        let code = concat!(
            "let a = m.total(\"vllm:num_requests_running\");\n",
            "let b = s.label(\"num_gpu_blocks\");\n",
            "// m.total(\"sglang:num_running_reqs\") in a comment\n",
            "let c = '\"'; let d = r#\"trtllm_kv_cache_utilization\"#;\n",
            "let e = \"the gauge `vllm:kv_cache_usage_perc` is a share\";\n",
            "r.with(\"block_size\", 16); Marker::Text(\"sglang::\");\n",
        );
        let found: Vec<(usize, String)> = string_literals(code)
            .into_iter()
            .filter(|(line, text)| {
                let line_text = code.lines().nth(line - 1).unwrap();
                vocabulary.is_metric_name(text) || vocabulary.is_label_read(text, line_text)
            })
            .collect();
        assert_eq!(
            found,
            [
                (1, "vllm:num_requests_running".to_owned()),
                (2, "num_gpu_blocks".to_owned()),
                (4, "trtllm_kv_cache_utilization".to_owned()),
            ]
        );
    }

    /// The core crate stays pure: no I/O, async, GPU or HTML dependency sneaks in.
    #[test]
    fn core_dependencies_stay_on_the_allow_list() {
        // inferlint-sched is the workspace's pure scheduler model (no I/O, no other
        // dependency but serde): the replay the advice checks its cures with. chrono and
        // chrono-tz are pure data and arithmetic (no clock is read through them): the
        // IANA database's offsets, against which a zoneless saved time is placed.
        const ALLOWED: &[&str] = &[
            "serde",
            "serde_json",
            "inferlint-sched",
            "chrono",
            "chrono-tz",
        ];
        let manifest =
            std::fs::read_to_string(root().join("crates/inferlint-core/Cargo.toml")).unwrap();
        let mut in_deps = false;
        for line in manifest.lines().map(str::trim) {
            if line.starts_with('[') {
                in_deps = line == "[dependencies]";
                continue;
            }
            if in_deps && !line.is_empty() && !line.starts_with('#') {
                let name = line.split(['=', '.']).next().unwrap().trim();
                assert!(
                    ALLOWED.contains(&name),
                    "inferlint-core may depend only on {ALLOWED:?}; found {name}. Put I/O in another crate."
                );
            }
        }
    }

    /// Core turns on no feature of serde_json (`preserve_order`, `float_roundtrip`): a
    /// feature is switched on for every crate in a build that links core, and changes how
    /// the user's own maps and numbers behave. The `--json` key order is kept by
    /// `contract::JsonObject` instead.
    #[test]
    fn core_forces_no_serde_json_feature_on_its_users() {
        for manifest in ["Cargo.toml", "crates/inferlint-core/Cargo.toml"] {
            let text = std::fs::read_to_string(root().join(manifest)).unwrap();
            for line in text.lines().map(str::trim) {
                if line.starts_with("serde_json") {
                    assert!(
                        !line.contains("features"),
                        "{manifest}: {line}: core's users must not get serde_json features"
                    );
                }
            }
        }
    }

    /// The evidence keys a check writes (`.with("key", ..)`, `insert("key".into(), ..)`)
    /// in every crate that makes results, outside unit tests.
    fn evidence_keys_written() -> Vec<(String, PathBuf)> {
        let mut keys = Vec::new();
        for krate in [
            "inferlint-core",
            "inferlint-gpu",
            "inferlint-live",
            "inferlint-cli",
        ] {
            for file in rust_files(&root().join("crates").join(krate).join("src")) {
                let text = std::fs::read_to_string(&file).unwrap();
                let code = without_tests(&text);
                for opener in [".with(", "insert("] {
                    for (at, _) in code.match_indices(opener) {
                        let rest = code[at + opener.len()..].trim_start();
                        let Some(quoted) = rest.strip_prefix('"') else {
                            continue;
                        };
                        let Some(end) = quoted.find('"') else {
                            continue;
                        };
                        let key = &quoted[..end];
                        let tail = &quoted[end + 1..];
                        let is_key = key
                            .bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
                        // `insert` takes the key as a String.
                        let written = opener == ".with(" || tail.starts_with(".into()");
                        if is_key && !key.is_empty() && written {
                            keys.push((key.to_owned(), file.clone()));
                        }
                    }
                }
            }
        }
        keys
    }

    /// Every evidence key a check writes is listed, with its meaning, in core's
    /// `evidence::KEYS`, which the library's docs point a harness to.
    #[test]
    fn every_evidence_key_is_documented() {
        let written = evidence_keys_written();
        assert!(
            written.len() > 100,
            "the key finder finds keys: {written:?}"
        );
        for (key, file) in written {
            // The doc examples of `CheckResult::with` and of the contract write made-up keys.
            if file.ends_with("status.rs") || file.ends_with("contract.rs") {
                continue;
            }
            assert!(
                inferlint_core::judging::evidence::get(&key).is_some(),
                "{}: evidence key `{key}` is not listed in inferlint-core/src/judging/evidence.rs",
                file.display()
            );
        }
    }

    /// The code spans of a Markdown text (between single backticks).
    fn code_spans(text: &str) -> Vec<&str> {
        text.split('`').skip(1).step_by(2).collect()
    }

    /// Every Rust source under `crates/` and `xtask/src`, read once.
    fn all_sources(root: &Path) -> String {
        let mut all = String::new();
        for dir in [root.join("crates"), root.join("xtask/src")] {
            for path in rust_files(&dir) {
                all.push_str(&std::fs::read_to_string(path).unwrap());
                all.push('\n');
            }
        }
        all
    }

    /// CONTRIBUTING.md says where each kind of change goes: every path it names exists,
    /// every type it names is defined, and every function, field or test it names is
    /// written somewhere in the code, so the guide cannot drift from the tree.
    #[test]
    fn contributing_names_only_files_that_exist() {
        let root = root();
        let guide = std::fs::read_to_string(root.join("CONTRIBUTING.md")).unwrap();
        let sources = all_sources(&root);
        let mut wrong = Vec::new();
        for span in code_spans(&guide) {
            let word = span.trim();
            let is_path = [
                "crates/",
                "fixtures/",
                "docs/",
                "xtask/",
                "scripts/",
                ".ci/",
            ]
            .iter()
            .any(|p| word.starts_with(p));
            let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
            if is_path {
                if !root.join(word).exists() {
                    wrong.push(format!("no such file or folder: {word}"));
                }
            } else if word.chars().all(ident)
                && word.starts_with(|c: char| c.is_ascii_uppercase())
                && word.chars().any(|c| c.is_ascii_lowercase())
            {
                let defined = ["struct", "enum", "type", "trait"]
                    .iter()
                    .any(|k| sources.contains(&format!("{k} {word}")));
                if !defined {
                    wrong.push(format!("no type named {word}"));
                }
            } else if word.chars().all(ident)
                && word.contains('_')
                && word.chars().all(|c| !c.is_ascii_uppercase())
            {
                let written = sources.contains(&format!("fn {word}("))
                    || sources.contains(&format!("fn {word}<"))
                    || sources.contains(&format!("pub {word}:"));
                if !written {
                    wrong.push(format!("no function, field or test named {word}"));
                }
            }
        }
        assert!(wrong.is_empty(), "CONTRIBUTING.md: {wrong:#?}");
    }

    #[test]
    fn the_guide_check_reads_code_spans() {
        assert_eq!(
            code_spans("a `crates/x.rs` b `LoadTool` c"),
            ["crates/x.rs", "LoadTool"]
        );
        assert!(code_spans("no spans").is_empty());
    }

    /// A file's module path in its crate: `src/lib.rs` is `[]`, `src/a.rs` and
    /// `src/a/mod.rs` are `[a]`, `src/a/b.rs` is `[a, b]`.
    fn module_path(src: &Path, file: &Path) -> Vec<String> {
        let rel = file.strip_prefix(src).unwrap().with_extension("");
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if matches!(
            parts.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            parts.pop();
        }
        parts
    }

    /// The file that holds module `path` of the crate at `src`, if one does (an inline
    /// module, a type or a function gives none).
    fn module_file(src: &Path, path: &[String]) -> Option<PathBuf> {
        if path.is_empty() {
            return None;
        }
        let joined: PathBuf = path.iter().collect();
        [
            src.join(&joined).with_extension("rs"),
            src.join(&joined).join("mod.rs"),
        ]
        .into_iter()
        .find(|p| p.is_file())
    }

    /// The module paths a file's code names (`crate::a::b`, `super::c`), each as far as it
    /// goes in lower-case segments; `use` groups (`crate::{a, b::c}`) are opened one level.
    /// A directory module's own children (`mod d;` and `d::…` in `a/mod.rs`) are its
    /// parts, not imports.
    fn named_paths(code: &str, here: &[String]) -> Vec<Vec<String>> {
        let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let mut out = Vec::new();
        let bytes: Vec<char> = code.chars().collect();
        let mut i = 0;
        let read_path = |start: usize| -> (Vec<String>, usize) {
            let mut segs = Vec::new();
            let mut j = start;
            loop {
                let k = j;
                while j < bytes.len() && ident(bytes[j]) {
                    j += 1;
                }
                if j == k {
                    break;
                }
                segs.push(bytes[k..j].iter().collect::<String>());
                if j + 1 < bytes.len() && bytes[j] == ':' && bytes[j + 1] == ':' {
                    j += 2;
                } else {
                    break;
                }
            }
            (segs, j)
        };
        while i < bytes.len() {
            let starts_word = i == 0 || !ident(bytes[i - 1]) && bytes[i - 1] != ':';
            if !starts_word || !ident(bytes[i]) {
                i += 1;
                continue;
            }
            let (segs, end) = read_path(i);
            // `crate::…` from the root; each leading `super::` one module up.
            let supers = segs.iter().take_while(|s| *s == "super").count();
            let base: Option<(Vec<String>, usize)> = if segs.first().is_some_and(|s| s == "crate") {
                Some((Vec::new(), 1))
            } else if supers > 0 {
                let mut b = here.to_vec();
                for _ in 0..supers {
                    b.pop();
                }
                Some((b, supers))
            } else {
                None
            };
            if let Some((base, skip)) = base {
                let rest: Vec<String> = segs[skip..]
                    .iter()
                    .take_while(|s| s.chars().all(|c| !c.is_ascii_uppercase()))
                    .cloned()
                    .collect();
                let mut full = base.clone();
                full.extend(rest);
                out.push(full.clone());
                // `crate::{a, b::c}`: each item of the group, one level deep.
                if end + 1 < bytes.len() && bytes[end] == '{' {
                    let close = bytes[end..].iter().position(|c| *c == '}').map(|p| end + p);
                    if let Some(close) = close {
                        let group: String = bytes[end + 1..close].iter().collect();
                        for item in group.split(',') {
                            let item = item.trim().trim_start_matches('{');
                            let mut p = full.clone();
                            p.extend(
                                item.split("::")
                                    .map(str::trim)
                                    .take_while(|s| {
                                        !s.is_empty()
                                            && s.chars()
                                                .all(|c| ident(c) && !c.is_ascii_uppercase())
                                    })
                                    .map(str::to_owned),
                            );
                            out.push(p);
                        }
                    }
                }
            }
            i = end.max(i + 1);
        }
        out
    }

    /// The circles of files that import each other inside one crate's `src`.
    fn file_circles(src: &Path) -> Vec<Vec<PathBuf>> {
        let files = rust_files(src);
        let index = |p: &Path| files.iter().position(|f| f == p);
        let mut edges: Vec<Vec<usize>> = vec![Vec::new(); files.len()];
        for (from, file) in files.iter().enumerate() {
            let text = std::fs::read_to_string(file).unwrap();
            let here = module_path(src, file);
            // Comments name paths (intra-doc links) without importing them.
            let code: String = without_tests(&text)
                .lines()
                .map(|l| l.split("//").next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n");
            for path in named_paths(&code, &here) {
                // The longest prefix of the path that is a file.
                let target = (1..=path.len())
                    .rev()
                    .find_map(|n| module_file(src, &path[..n]));
                if let Some(to) = target.and_then(|t| index(&t)) {
                    if to != from && !edges[from].contains(&to) {
                        edges[from].push(to);
                    }
                }
            }
        }
        // Tarjan's strongly connected components.
        struct State {
            index: Vec<Option<usize>>,
            low: Vec<usize>,
            on_stack: Vec<bool>,
            stack: Vec<usize>,
            next: usize,
            circles: Vec<Vec<usize>>,
        }
        fn visit(v: usize, edges: &[Vec<usize>], s: &mut State) {
            s.index[v] = Some(s.next);
            s.low[v] = s.next;
            s.next += 1;
            s.stack.push(v);
            s.on_stack[v] = true;
            for &w in &edges[v] {
                match s.index[w] {
                    None => {
                        visit(w, edges, s);
                        s.low[v] = s.low[v].min(s.low[w]);
                    }
                    Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                    Some(_) => {}
                }
            }
            if Some(s.low[v]) == s.index[v] {
                let mut circle = Vec::new();
                while let Some(w) = s.stack.pop() {
                    s.on_stack[w] = false;
                    circle.push(w);
                    if w == v {
                        break;
                    }
                }
                if circle.len() > 1 {
                    s.circles.push(circle);
                }
            }
        }
        let n = files.len();
        let mut state = State {
            index: vec![None; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            next: 0,
            circles: Vec::new(),
        };
        for v in 0..n {
            if state.index[v].is_none() {
                visit(v, &edges, &mut state);
            }
        }
        state
            .circles
            .into_iter()
            .map(|c| c.into_iter().map(|i| files[i].clone()).collect())
            .collect()
    }

    /// Files import downward: no file of a crate imports a file that imports it back,
    /// directly or through others (docs/ARCHITECTURE.md, "Bird's-eye view").
    #[test]
    fn no_circle_of_files_in_any_crate() {
        let root = root();
        let mut circles = Vec::new();
        for entry in std::fs::read_dir(root.join("crates")).unwrap() {
            let src = entry.unwrap().path().join("src");
            if src.is_dir() {
                circles.extend(file_circles(&src));
            }
        }
        assert!(
            circles.is_empty(),
            "files that import each other: {circles:#?}"
        );
    }

    #[test]
    fn the_circle_finder_finds_a_circle_and_reads_paths() {
        let dir = std::env::temp_dir().join(format!("tidy-circle-{}", std::process::id()));
        let src = dir.join("src");
        std::fs::create_dir_all(src.join("c")).unwrap();
        std::fs::write(src.join("lib.rs"), "pub mod a;\npub mod b;\npub mod c;\n").unwrap();
        std::fs::write(src.join("a.rs"), "use crate::b::B;\n").unwrap();
        std::fs::write(src.join("b.rs"), "use crate::{c::d::D, x};\n").unwrap();
        std::fs::write(src.join("c/mod.rs"), "pub mod d;\n").unwrap();
        std::fs::write(src.join("c/d.rs"), "use super::super::a::A;\n").unwrap();
        let circles = file_circles(&src);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(circles.len(), 1, "{circles:?}");
        let mut names: Vec<String> = circles[0]
            .iter()
            .map(|p| p.strip_prefix(&src).unwrap().display().to_string())
            .collect();
        names.sort();
        assert_eq!(names, ["a.rs", "b.rs", "c/d.rs"]);
    }
}
