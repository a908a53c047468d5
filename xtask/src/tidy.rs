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

    /// The core crate stays pure: no I/O, async, GPU or HTML dependency sneaks in.
    #[test]
    fn core_dependencies_stay_on_the_allow_list() {
        const ALLOWED: &[&str] = &["serde", "serde_json"];
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
                inferlint_core::evidence::get(&key).is_some(),
                "{}: evidence key `{key}` is not listed in inferlint-core/src/evidence.rs",
                file.display()
            );
        }
    }
}
