//! Which processes are inference servers: structural rules on argv and comm, one table
//! row per engine, never a substring of the whole command line.
//!
//! A process is a server when
//! - its comm or `argv[0]` starts with the engine's renamed prefix (`VLLM::`, `sglang::`);
//! - `argv[0]` is the engine's program (`vllm serve …`, `sglang serve …`, `trtllm-serve …`),
//!   or a Python interpreter runs that program as a script (`python3 /venv/bin/vllm serve`);
//! - a Python interpreter runs one of the engine's server modules with `-m`;
//! - or it descends from such a process (TensorRT-LLM's MPI workers, vLLM's engine).
//!
//! Never the caller or any of its ancestors, even when they look like servers: that is
//! how `pkill -f "vllm serve"` inside `bash -c "…vllm serve…"` kills its own shell (T3).
//! Signals go to single PIDs, never to a process group.

use std::collections::{BTreeMap, BTreeSet};

use inferlint_core::Engine;

use crate::procs::{ProcessInfo, ProcessTable};

/// How one engine's server processes look. Engine differences are data, here.
#[derive(Debug)]
pub struct ServerSignature {
    /// The engine.
    pub engine: Engine,
    /// Processes the engine renamed (comm or `argv[0]` starts with this).
    pub renamed_prefix: Option<&'static str>,
    /// The engine's program, as `argv[0]` (or a Python script) names it.
    pub program: &'static str,
    /// The word that must follow the program (`serve`), or `None` when the program is
    /// the server whatever follows (`trtllm-serve`).
    pub program_word: Option<&'static str>,
    /// Modules run with `python -m` that are servers, with the word that must follow the
    /// module where it also runs non-server commands (`vllm.entrypoints.cli.main serve`).
    pub modules: &'static [(&'static str, Option<&'static str>)],
    /// What people give `pkill -f` to stop this engine's servers (`vllm serve`).
    pub pkill_pattern: &'static str,
    /// Whether a server started as `python -m MODULE` is stopped by the module's name
    /// instead (`sglang.launch_server`).
    pub pkill_by_module: bool,
}

/// The engines' signatures. The order is also the order of precedence, last first, for
/// the pattern people would give pkill when several engines' servers run
/// ([`usual_pattern`]).
pub const SIGNATURES: [ServerSignature; 3] = [
    ServerSignature {
        engine: Engine::Vllm,
        renamed_prefix: Some("VLLM::"),
        program: "vllm",
        program_word: Some("serve"),
        modules: &[
            ("vllm.entrypoints.openai.api_server", None),
            ("vllm.entrypoints.api_server", None),
            ("vllm.entrypoints.cli.main", Some("serve")),
        ],
        pkill_pattern: "vllm serve",
        pkill_by_module: false,
    },
    ServerSignature {
        engine: Engine::Sglang,
        renamed_prefix: Some("sglang::"),
        program: "sglang",
        program_word: Some("serve"),
        modules: &[("sglang.launch_server", None)],
        pkill_pattern: "sglang serve",
        pkill_by_module: true,
    },
    ServerSignature {
        engine: Engine::Trtllm,
        renamed_prefix: None,
        program: "trtllm-serve",
        program_word: None,
        modules: &[("tensorrt_llm.commands.serve", None)],
        pkill_pattern: "trtllm-serve",
        pkill_by_module: false,
    },
];

/// Why a process counts as a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerMatch {
    /// The engine it serves.
    pub engine: Engine,
    /// Why it counts as that engine's server, in a few words.
    pub why: String,
    /// Started as `python -m MODULE` (the pkill comparison picks its pattern by it).
    pub module: Option<&'static str>,
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// What a Python command line runs: a module (`-m`), a script, or something else
/// (`-c`, stdin, nothing).
enum PythonRuns<'a> {
    Module(&'a str, &'a [String]),
    Script(&'a str, &'a [String]),
    Other,
}

/// Reads the interpreter options before the module or script: flag clusters (`-u`,
/// `-OO`, `-Bu`), options with a value (`-X dev`, `-W ignore`), `-m MODULE` (also
/// `-mMODULE`), `-c` (not a server).
fn python_runs(argv: &[String]) -> PythonRuns<'_> {
    let mut i = 1;
    while let Some(arg) = argv.get(i) {
        if arg == "-" {
            // The program comes from stdin.
            return PythonRuns::Other;
        }
        if !arg.starts_with('-') {
            return PythonRuns::Script(arg, &argv[i + 1..]);
        }
        if arg == "--" {
            return match argv.get(i + 1) {
                Some(script) => PythonRuns::Script(script, &argv[i + 2..]),
                None => PythonRuns::Other,
            };
        }
        if arg.starts_with("--") {
            // Long options; `--check-hash-based-pycs` takes a value.
            i += if arg == "--check-hash-based-pycs" {
                2
            } else {
                1
            };
            continue;
        }
        let cluster = &arg[1..];
        let mut consumed_next = false;
        for (at, letter) in cluster.char_indices() {
            if matches!(letter, 'c' | 'm' | 'W' | 'X') {
                let attached = &cluster[at + 1..];
                let (value, rest_from) = if attached.is_empty() {
                    consumed_next = true;
                    (argv.get(i + 1).map(String::as_str), i + 2)
                } else {
                    (Some(attached), i + 1)
                };
                match letter {
                    'c' => return PythonRuns::Other,
                    'm' => {
                        return match value {
                            Some(module) => {
                                PythonRuns::Module(module, argv.get(rest_from..).unwrap_or(&[]))
                            }
                            None => PythonRuns::Other,
                        }
                    }
                    _ => break,
                }
            }
        }
        i += if consumed_next { 2 } else { 1 };
    }
    PythonRuns::Other
}

/// Whether a process is a server by its own command line or name (descendants aside).
pub fn match_server(p: &ProcessInfo) -> Option<ServerMatch> {
    let argv0 = p.argv.first().map(String::as_str).unwrap_or("");
    for sig in &SIGNATURES {
        if let Some(prefix) = sig.renamed_prefix {
            if argv0.starts_with(prefix) {
                return Some(ServerMatch {
                    engine: sig.engine,
                    why: format!("named {argv0}"),
                    module: None,
                });
            }
            if p.comm.starts_with(prefix) {
                return Some(ServerMatch {
                    engine: sig.engine,
                    why: format!("process name {}", p.comm),
                    module: None,
                });
            }
        }
    }
    if p.argv.is_empty() {
        return None;
    }
    let program = basename(argv0);
    for sig in &SIGNATURES {
        if program == sig.program && word_follows(sig, &p.argv[1..]) {
            return Some(ServerMatch {
                engine: sig.engine,
                why: program_words(sig),
                module: None,
            });
        }
    }
    if !program.starts_with("python") {
        return None;
    }
    match python_runs(&p.argv) {
        PythonRuns::Script(script, rest) => {
            let script = basename(script);
            SIGNATURES
                .iter()
                .find(|sig| script == sig.program && word_follows(sig, rest))
                .map(|sig| ServerMatch {
                    engine: sig.engine,
                    why: format!("{program} runs {}", program_words(sig)),
                    module: None,
                })
        }
        PythonRuns::Module(module, rest) => SIGNATURES.iter().find_map(|sig| {
            sig.modules
                .iter()
                .find(|(name, word)| {
                    *name == module && word.is_none_or(|w| rest.first().is_some_and(|r| r == w))
                })
                .map(|(name, _)| ServerMatch {
                    engine: sig.engine,
                    why: format!("{program} -m {name}"),
                    module: Some(name),
                })
        }),
        PythonRuns::Other => None,
    }
}

fn word_follows(sig: &ServerSignature, rest: &[String]) -> bool {
    match sig.program_word {
        Some(word) => rest.first().is_some_and(|r| r == word),
        None => true,
    }
}

fn program_words(sig: &ServerSignature) -> String {
    match sig.program_word {
        Some(word) => format!("{} {word}", sig.program),
        None => sig.program.to_owned(),
    }
}

/// Which processes discovery looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every process on the machine (what a user runs).
    Everything,
    /// Only processes in this session (the tests use it, so that they never touch a
    /// server outside them; `INFERLINT_SESSION_ONLY=1` in docs/gpu.md).
    Session(u32),
}

impl Scope {
    /// Whether the process is within this scope.
    pub fn contains(self, p: &ProcessInfo) -> bool {
        match self {
            Scope::Everything => true,
            Scope::Session(sid) => p.sid == sid,
        }
    }
}

/// A server process to stop (or that would be stopped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Process id.
    pub pid: u32,
    /// Checked again right before each signal.
    pub start_time: u64,
    /// The engine.
    pub engine: Engine,
    /// What a person recognises it by: the renamed title where there is one
    /// (`VLLM::EngineCore`), else the command line; at most 100 characters.
    pub name: String,
    /// Why it is a server's process.
    pub why: String,
    /// Parent process id.
    pub parent: u32,
    /// Its command line.
    pub command_line: String,
    /// Started as `python -m MODULE`.
    pub module: Option<&'static str>,
}

/// Every server process found in one look at the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    /// In PID order, every engine.
    pub targets: Vec<Target>,
    /// The caller and its ancestors that looked like servers and were left alone.
    pub spared_ancestors: Vec<u32>,
}

/// At most `limit` characters, cut on a character boundary.
fn clip(text: &str, limit: usize) -> String {
    text.chars().take(limit).collect()
}

/// What a person recognises a process by, at most 100 characters: the command line, or
/// the comm where only the comm was renamed (prctl), since the argv of such an engine
/// still reads `python3 -c from multiprocessing.spawn import …`, which says nothing.
pub fn display_name(p: &ProcessInfo) -> String {
    let argv0 = p.argv.first().map(String::as_str).unwrap_or("");
    let comm_renamed = SIGNATURES
        .iter()
        .filter_map(|s| s.renamed_prefix)
        .any(|prefix| p.comm.starts_with(prefix) && !argv0.starts_with(prefix));
    if comm_renamed || p.argv.is_empty() {
        clip(&p.comm, 100)
    } else {
        clip(&p.command_line(), 100)
    }
}

/// Finds every server process: the matching ones, then every descendant of those. The
/// caller (`caller_pid`) and its ancestors are never targets, and neither is anything
/// outside `scope`. Zombies are not listed: they hold nothing and cannot be signalled.
pub fn discover(table: &ProcessTable, caller_pid: u32, scope: Scope) -> Discovery {
    let protected = table.self_and_ancestors(caller_pid);
    let eligible = |p: &ProcessInfo| {
        p.pid > 1 && p.is_alive() && scope.contains(p) && !protected.contains(&p.pid)
    };
    let mut found: BTreeMap<u32, Target> = BTreeMap::new();
    let mut spared = Vec::new();
    for p in table.iter() {
        let Some(m) = match_server(p) else { continue };
        if protected.contains(&p.pid) {
            spared.push(p.pid);
            continue;
        }
        if !eligible(p) {
            continue;
        }
        found.insert(
            p.pid,
            Target {
                pid: p.pid,
                start_time: p.start_time,
                engine: m.engine,
                name: display_name(p),
                why: m.why,
                parent: p.ppid,
                command_line: p.command_line(),
                module: m.module,
            },
        );
    }
    // Every descendant of a server is part of it, and belongs to the nearest server above
    // it. A walk up that meets a protected process can only meet protected ones above it.
    let matched: BTreeMap<u32, Engine> = found.values().map(|t| (t.pid, t.engine)).collect();
    for p in table.iter() {
        if matched.contains_key(&p.pid) || !eligible(p) {
            continue;
        }
        let mut above = p.ppid;
        // At most one step per process, should /proc hold a parent loop mid-change.
        for _ in 0..table.len() {
            if above <= 1 {
                break;
            }
            if let Some(&engine) = matched.get(&above) {
                found.insert(
                    p.pid,
                    Target {
                        pid: p.pid,
                        start_time: p.start_time,
                        engine,
                        name: display_name(p),
                        why: format!("started by {} server pid {above}", engine.name()),
                        parent: p.ppid,
                        command_line: p.command_line(),
                        module: None,
                    },
                );
                break;
            }
            above = table.get(above).map_or(0, |q| q.ppid);
        }
    }
    Discovery {
        targets: found.into_values().collect(),
        spared_ancestors: spared,
    }
}

/// What `pkill -f PATTERN` would have done instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PkillComparison {
    /// The pattern (`vllm`, `sglang`, ...).
    pub pattern: &'static str,
    /// Targets the pattern does not match.
    pub would_miss: Vec<u32>,
    /// Processes the pattern matches that are not targets (the caller's shell, a
    /// `tail -f` on a log named after the server, an editor).
    pub would_wrongly_hit: Vec<u32>,
}

impl PkillComparison {
    /// Whether pkill would have done something else than teardown.
    pub fn differs(&self) -> bool {
        !self.would_miss.is_empty() || !self.would_wrongly_hit.is_empty()
    }

    /// `(pkill -f 'vllm serve' would miss 1 and wrongly hit 0)`.
    pub fn line(&self) -> String {
        format!(
            "(pkill -f '{}' would miss {} and wrongly hit {})",
            self.pattern,
            self.would_miss.len(),
            self.would_wrongly_hit.len()
        )
    }
}

/// The pattern people use to stop these servers: `trtllm-serve` when a TensorRT-LLM
/// server is among them; `sglang.launch_server` when SGLang was started as that module,
/// else `sglang serve`; else `vllm serve`. With no server found, the named engine's.
pub fn usual_pattern(targets: &[Target], named: Option<Engine>) -> &'static str {
    for signature in SIGNATURES.iter().rev() {
        let mut its = targets
            .iter()
            .filter(|t| t.engine == signature.engine)
            .peekable();
        if signature.pkill_by_module {
            if let Some(module) = its.clone().find_map(|t| t.module) {
                return module;
            }
        }
        if its.peek().is_some() || (targets.is_empty() && named == Some(signature.engine)) {
            return signature.pkill_pattern;
        }
    }
    SIGNATURES[0].pkill_pattern
}

/// `pkill -f` matches an extended regular expression against the command line. The
/// usual patterns use no regex syntax but `.`, which matches any character; that is all
/// this matcher implements.
pub fn pattern_matches(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    if pattern.len() > text.len() {
        return false;
    }
    (0..=text.len() - pattern.len()).any(|start| {
        pattern
            .iter()
            .zip(&text[start..])
            .all(|(p, t)| *p == '.' || p == t)
    })
}

/// Compares the targets with what `pkill -f PATTERN` would signal: every process (in
/// scope, alive) whose space-joined argv the pattern matches, except pkill itself, which
/// is here the caller.
pub fn compare_with_pkill(
    table: &ProcessTable,
    caller_pid: u32,
    scope: Scope,
    targets: &[Target],
    named: Option<Engine>,
) -> PkillComparison {
    let pattern = usual_pattern(targets, named);
    let hits: BTreeSet<u32> = table
        .iter()
        .filter(|p| p.pid != caller_pid && p.is_alive() && scope.contains(p))
        .filter(|p| pattern_matches(pattern, &p.command_line()))
        .map(|p| p.pid)
        .collect();
    let target_pids: BTreeSet<u32> = targets.iter().map(|t| t.pid).collect();
    PkillComparison {
        pattern,
        would_miss: target_pids.difference(&hits).copied().collect(),
        would_wrongly_hit: hits.difference(&target_pids).copied().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(pid: u32, ppid: u32, comm: &str, argv: &[&str]) -> ProcessInfo {
        ProcessInfo {
            pid,
            ppid,
            pgid: pid,
            sid: 1,
            state: 'S',
            start_time: u64::from(pid),
            comm: comm.to_owned(),
            argv: argv.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn engine_of(comm: &str, argv: &[&str]) -> Option<Engine> {
        match_server(&proc(5, 1, comm, argv)).map(|m| m.engine)
    }

    #[test]
    fn servers_by_program_module_and_name() {
        use Engine::*;
        let cases: &[(&str, &[&str], Option<Engine>)] = &[
            (
                "vllm",
                &["/venv/bin/vllm", "serve", "Qwen/Qwen3-8B"],
                Some(Vllm),
            ),
            (
                "python3",
                &["python3", "/tmp/bin/vllm", "serve", "m"],
                Some(Vllm),
            ),
            (
                "python3",
                &["python3", "-u", "-X", "dev", "/b/vllm", "serve"],
                Some(Vllm),
            ),
            (
                "python",
                &["python", "-m", "vllm.entrypoints.openai.api_server"],
                Some(Vllm),
            ),
            (
                "python",
                &["python", "-Bm", "vllm.entrypoints.openai.api_server"],
                Some(Vllm),
            ),
            (
                "python",
                &["python3.12", "-mvllm.entrypoints.cli.main", "serve", "m"],
                Some(Vllm),
            ),
            (
                "python",
                &[
                    "python",
                    "-m",
                    "vllm.entrypoints.cli.main",
                    "bench",
                    "serve",
                ],
                None,
            ),
            (
                "VLLM::EngineCor",
                &["python3", "-c", "from multiprocessing.spawn import x"],
                Some(Vllm),
            ),
            ("python3", &["VLLM::Worker_TP1"], Some(Vllm)),
            ("VLLM::EngineCor", &[], Some(Vllm)),
            (
                "sglang",
                &["sglang", "serve", "--model-path", "m"],
                Some(Sglang),
            ),
            (
                "python",
                &["python", "-m", "sglang.launch_server", "--model-path", "m"],
                Some(Sglang),
            ),
            ("sglang::schedul", &["sglang::scheduler_TP0"], Some(Sglang)),
            ("sglang::detoke", &["python3", "-c", "x"], Some(Sglang)),
            (
                "trtllm-serve",
                &["/venv/bin/trtllm-serve", "serve", "m"],
                Some(Trtllm),
            ),
            (
                "trtllm-serve",
                &["trtllm-serve", "/models/m", "--port", "8000"],
                Some(Trtllm),
            ),
            (
                "python",
                &["python", "-m", "tensorrt_llm.commands.serve", "m"],
                Some(Trtllm),
            ),
            // Not servers.
            ("vllm", &["vllm", "bench", "serve", "--model", "m"], None),
            ("bash", &["bash", "-c", "vllm serve m"], None),
            ("grep", &["grep", "vllm serve"], None),
            ("vllm", &["/opt/tools/vllm", "serve-docs"], None),
            ("tail", &["tail", "-f", "logs/vllm serve.log"], None),
            (
                "python3",
                &["python3", "plot.py", "runs/vllm", "serve"],
                None,
            ),
            (
                "python3",
                &["python3", "-c", "import vllm; vllm serve"],
                None,
            ),
            (
                "python3",
                &["python3", "-m", "vllm.entrypoints.openai.api_server_x"],
                None,
            ),
            (
                "python3",
                &["python3", "-m", "sglang.launch_server_test"],
                None,
            ),
            ("python3", &["python3", "-W", "-m", "plot.py"], None),
            ("python3", &["python3"], None),
            ("mpi4py", &["python3", "-m", "mpi4py.futures.server"], None),
            ("kworker/0:1", &[], None),
            ("vllm", &["vllm"], None),
        ];
        for (comm, argv, want) in cases {
            assert_eq!(engine_of(comm, argv), *want, "{comm} {argv:?}");
        }
    }

    /// The established tool's teardown table, in our own numbers: pid 401 is us, under
    /// the shell 400 that mentions `vllm serve`.
    fn table() -> ProcessTable {
        ProcessTable::new([
            proc(1, 0, "init", &["/sbin/init"]),
            proc(100, 1, "bash", &["-bash"]),
            proc(
                200,
                100,
                "python3",
                &["python3", "/venv/bin/vllm", "serve", "m"],
            ),
            proc(201, 200, "VLLM::EngineCor", &["VLLM::EngineCore"]),
            proc(
                202,
                201,
                "python3",
                &[
                    "python3",
                    "-c",
                    "from multiprocessing.resource_tracker import main",
                ],
            ),
            proc(
                300,
                1,
                "VLLM::EngineCor",
                &[
                    "python3",
                    "-c",
                    "from multiprocessing.spawn import spawn_main",
                ],
            ),
            proc(
                400,
                100,
                "bash",
                &["bash", "-c", "pkill -f 'vllm serve'; inferlint teardown"],
            ),
            proc(401, 400, "inferlint", &["inferlint", "teardown"]),
            proc(500, 100, "tail", &["tail", "-f", "vllm serve.log"]),
            proc(
                600,
                1,
                "python3",
                &["python3", "-m", "sglang.launch_server", "--model-path", "m"],
            ),
            proc(601, 600, "sglang::schedul", &["sglang::scheduler"]),
            proc(602, 600, "sglang::detoke", &["sglang::detokenizer"]),
            proc(700, 1, "trtllm-serve", &["trtllm-serve", "serve", "m"]),
            proc(701, 700, "prte", &["prte", "--daemonize"]),
            proc(
                702,
                701,
                "python3",
                &["python3", "-m", "mpi4py.futures.server"],
            ),
        ])
    }

    #[test]
    fn discovery_finds_servers_and_descendants_never_the_caller() {
        let d = discover(&table(), 401, Scope::Everything);
        let pids: Vec<u32> = d.targets.iter().map(|t| t.pid).collect();
        assert_eq!(pids, [200, 201, 202, 300, 600, 601, 602, 700, 701, 702]);
        let t = |pid| d.targets.iter().find(|t| t.pid == pid).unwrap();
        assert_eq!(t(300).name, "VLLM::EngineCor");
        assert_eq!(t(300).why, "process name VLLM::EngineCor");
        assert_eq!(t(201).name, "VLLM::EngineCore");
        assert_eq!(t(202).why, "started by vLLM server pid 201");
        assert_eq!(t(702).engine, Engine::Trtllm);
        assert_eq!(t(702).why, "started by TensorRT-LLM server pid 700");
        assert_eq!(t(200).why, "python3 runs vllm serve");
        assert_eq!(t(600).module, Some("sglang.launch_server"));
        assert!(d.spared_ancestors.is_empty());
    }

    #[test]
    fn an_ancestor_that_looks_like_a_server_is_spared() {
        // inferlint run from a hook of the server itself: the server is our ancestor.
        let mut t = table();
        t = ProcessTable::new(t.iter().cloned().chain([proc(
            203,
            200,
            "inferlint",
            &["inferlint", "teardown"],
        )]));
        let d = discover(&t, 203, Scope::Everything);
        assert!(d.targets.iter().all(|t| t.pid != 200));
        assert_eq!(d.spared_ancestors, [200]);
        // The renamed engine is a server on its own.
        assert!(d.targets.iter().any(|t| t.pid == 201));
    }

    #[test]
    fn pkill_comparison_counts_misses_and_wrong_hits() {
        let table = table();
        let d = discover(&table, 401, Scope::Everything);
        let vllm: Vec<Target> = d
            .targets
            .iter()
            .filter(|t| t.engine == Engine::Vllm)
            .cloned()
            .collect();
        let c = compare_with_pkill(&table, 401, Scope::Everything, &vllm, Some(Engine::Vllm));
        assert_eq!(c.pattern, "vllm serve");
        assert_eq!(c.would_miss, [201, 202, 300]);
        assert_eq!(c.would_wrongly_hit, [400, 500]);
        assert_eq!(
            c.line(),
            "(pkill -f 'vllm serve' would miss 3 and wrongly hit 2)"
        );

        let c = compare_with_pkill(&table, 401, Scope::Everything, &d.targets, None);
        assert_eq!(c.pattern, "trtllm-serve");
        let sglang: Vec<Target> = d
            .targets
            .iter()
            .filter(|t| t.engine == Engine::Sglang)
            .cloned()
            .collect();
        let c = compare_with_pkill(&table, 401, Scope::Everything, &sglang, None);
        assert_eq!(c.pattern, "sglang.launch_server");
        assert_eq!(c.would_miss, [601, 602]);
        assert!(c.would_wrongly_hit.is_empty());
        assert_eq!(usual_pattern(&[], Some(Engine::Sglang)), "sglang serve");
        assert_eq!(usual_pattern(&[], None), "vllm serve");
    }

    #[test]
    fn dot_in_a_pattern_matches_any_character() {
        assert!(pattern_matches(
            "sglang.launch_server",
            "python -m sglang.launch_server"
        ));
        assert!(pattern_matches(
            "sglang.launch_server",
            "sglang/launch_server.py"
        ));
        assert!(!pattern_matches("vllm serve", "vllm bench serve"));
        assert!(!pattern_matches("vllm serve", "vllm"));
    }

    #[test]
    fn zombies_and_other_sessions_are_not_targets() {
        let mut zombie = proc(900, 1, "VLLM::EngineCor", &[]);
        zombie.state = 'Z';
        let mut elsewhere = proc(901, 1, "VLLM::EngineCor", &[]);
        elsewhere.sid = 77;
        let t = ProcessTable::new([zombie, elsewhere]);
        assert_eq!(discover(&t, 1, Scope::Everything).targets.len(), 1);
        assert!(discover(&t, 1, Scope::Session(1)).targets.is_empty());
    }
}
