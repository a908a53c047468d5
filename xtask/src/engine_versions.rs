//! docs/engine-versions.md: for each engine, each metric family its table names and each
//! boot-log line its table reads, with the versions in whose recordings it was seen.
//!
//! The facts come from the tables themselves ([`EngineDescriptor::metric_families`],
//! [`bootlog::rule_anchors`]) and the evidence from the real recordings: the repository's
//! `fixtures/real/*` and the folders in `INFERLINT_RECORDED`. Simulated runs are no
//! engine's and are not read.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use inferlint_core::engine::{Engine, EngineDescriptor};
use inferlint_engines::{bootlog, prom};

/// The page, under the repository root.
pub const DOC: &str = "docs/engine-versions.md";

/// The suffixes Prometheus adds to a family's name to name its samples.
const SUFFIXES: [&str; 5] = ["_total", "_created", "_sum", "_count", "_bucket"];

/// Writes the page, or with `check` fails when the committed one differs.
pub fn run(root: &Path, check: bool) -> Result<()> {
    let Some(recorded) = crate::variants::recorded() else {
        bail!("INFERLINT_RECORDED must name the recordings folder (the page reads them)");
    };
    let text = page(root, &recorded)?;
    let path = root.join(DOC);
    if check {
        let actual = std::fs::read_to_string(&path).unwrap_or_default();
        if actual != text {
            bail!("{DOC} is out of date: run `cargo xtask engine-versions` and commit");
        }
        return Ok(());
    }
    crate::write(&path, &text)
}

/// What one engine's recordings of one version showed.
#[derive(Default)]
struct Seen {
    /// Every sample name of every scrape.
    samples: BTreeSet<String>,
    /// The anchors of the engine's line shapes found in a boot log.
    anchors: BTreeSet<&'static str>,
    /// Where they are, as the page names them, with how many boot logs and scrapes.
    places: BTreeMap<String, (usize, usize)>,
    /// Whether the version was stated by a boot log (else it is a folder name's).
    stated: bool,
}

impl Seen {
    /// Whether a scrape held a sample of `family`: its name, alone or with a suffix.
    fn has_family(&self, family: &str) -> bool {
        self.samples.iter().any(|name| {
            name == family
                || name
                    .strip_prefix(family)
                    .is_some_and(|rest| SUFFIXES.contains(&rest))
        })
    }
}

/// A recording folder's files, read.
struct Folder {
    /// As the page names it (`fixtures/real/vllm-0.32-cpu`).
    name: String,
    engine: Engine,
    /// The version its name carries (`0.32` of `vllm-0.32-cpu`).
    named_version: String,
    /// Each directory's boot logs (their text and stated version) and scrapes (sample
    /// names), by the directory's path.
    dirs: BTreeMap<PathBuf, Dir>,
}

#[derive(Default)]
struct Dir {
    boot_logs: Vec<(String, Option<String>)>,
    scrapes: Vec<BTreeSet<String>>,
}

fn page(root: &Path, recorded: &Path) -> Result<String> {
    let mut folders = Vec::new();
    folders.extend(folders_in(&root.join("fixtures/real"), "fixtures/real")?);
    folders.extend(folders_in(recorded, "$INFERLINT_RECORDED")?);
    let mut seen: BTreeMap<Engine, BTreeMap<Version, Seen>> = BTreeMap::new();
    for folder in &folders {
        // A stated version: the directory's own boot logs', else the whole folder's, when
        // they name one version; else the folder name's.
        let one = |versions: BTreeSet<&String>| -> Option<String> {
            let mut versions = versions.into_iter();
            match (versions.next(), versions.next()) {
                (Some(v), None) => Some(v.clone()),
                _ => None,
            }
        };
        let folder_stated = one(folder
            .dirs
            .values()
            .flat_map(|d| d.boot_logs.iter().filter_map(|(_, v)| v.as_ref()))
            .collect());
        let anchors = bootlog::rule_anchors(folder.engine);
        for dir in folder.dirs.values() {
            let dir_stated = one(dir
                .boot_logs
                .iter()
                .filter_map(|(_, v)| v.as_ref())
                .collect())
            .or_else(|| folder_stated.clone());
            let version_of = |own: Option<&String>| match own.or(dir_stated.as_ref()) {
                Some(v) => (Version(v.clone()), true),
                None => (Version(folder.named_version.clone()), false),
            };
            let engine = seen.entry(folder.engine).or_default();
            for (text, own) in &dir.boot_logs {
                let (version, stated) = version_of(own.as_ref());
                let s = engine.entry(version).or_default();
                s.stated |= stated;
                s.places.entry(folder.name.clone()).or_default().0 += 1;
                s.anchors.extend(
                    anchors
                        .iter()
                        .filter(|(_, anchor)| text.contains(anchor))
                        .map(|(_, anchor)| *anchor),
                );
            }
            for names in &dir.scrapes {
                let (version, stated) = version_of(None);
                let s = engine.entry(version).or_default();
                s.stated |= stated;
                s.places.entry(folder.name.clone()).or_default().1 += 1;
                s.samples.extend(names.iter().cloned());
            }
        }
    }
    let mut out = String::from(INTRO);
    for engine in Engine::ALL {
        let versions = seen.remove(&engine).unwrap_or_default();
        section(&mut out, engine.descriptor(), &versions);
    }
    Ok(out)
}

const INTRO: &str = "<!-- generated by `cargo xtask engine-versions` (xtask/src/engine_versions.rs), do not edit -->
# Engine facts, and the versions they were seen on

Each engine's table (`crates/inferlint-core/src/engine.rs`) names the metrics the checks
read, and its boot-log table (`crates/inferlint-engines/src/bootlog/`) the log lines they
read. This page lists each of them with the versions in whose recordings it was seen, as
`cargo xtask engine-versions` found them, and a test keeps it current.

**What was read.** The real recordings: the repository's `fixtures/real/*` (vLLM's CPU
build, run for this project) and the folders of `INFERLINT_RECORDED` (GPU recordings; see
their `PROVENANCE.md`). Simulated runs (`fixtures/sim`, anything `inferlint-sim` made) are
no engine's and are not read. A metric family was seen on a version when a scrape of that
version (a `*.snapshot.json`'s page or a `*.prom` file) holds a sample named by the family,
alone or with a suffix Prometheus adds (`_total`, `_created`, `_sum`, `_count`,
`_bucket`); a renamed metric's older name is a row of its own. A log line was seen when
the text its table looks for is in a server log of that version (`boot*.log`, `run_*.log`).

**Which version.** A recording's version is the one its boot log states (the version fact
the boot-log reader gives: vLLM's `Initializing a V1 LLM engine (v0.32.0)`,
TensorRT-LLM's `TensorRT LLM version: 1.3.0rc29`), read from the log itself, else from the logs beside it, else
from its folder's logs when they state one version; only where no log states one is it
the version its folder's name carries (`sglang-0.5` gives 0.5: SGLang does not print its
version in its log). Each engine's list of recordings below says which versions were
stated and which are folder names'.

**Seen, not absent.** The table says \"seen on\" and \"not seen in any recording\", never
that a version lacks a metric or a line. A recording shows what that one run made its
server write: a metric is created at its first event (SGLang's `cached_tokens` at the
first prefix-cache hit, vLLM's speculation counters only with speculation on, a KV
transfer's counters only with a connector that transfers), and a log line only under the
settings, model and card that print it (a drafter line needs a draft model, SGLang's
`Retract requests.` a retraction). So a version missing from a row means no recording of
that version showed it, and a row with no version is a fact the tables hold from the engine's
source or documentation that no recording here has shown yet; only a recording made to
provoke it could say more.
";

fn section(out: &mut String, d: &EngineDescriptor, versions: &BTreeMap<Version, Seen>) {
    let _ = writeln!(out, "\n## {}\n", d.name);
    if versions.is_empty() {
        let _ = writeln!(out, "No recording of {} was read.", d.name);
    } else {
        let _ = writeln!(out, "Recordings read:\n");
        for (version, s) in versions {
            let how = if s.stated {
                "stated by the boot log"
            } else {
                "from the folder's name"
            };
            let places: Vec<String> = s
                .places
                .iter()
                .map(|(name, (logs, scrapes))| {
                    format!("`{name}`: {logs} server logs, {scrapes} scrapes")
                })
                .collect();
            let _ = writeln!(out, "- {} ({how}): {}", version.0, places.join("; "));
        }
    }
    let on = |seen: &dyn Fn(&Seen) -> bool| -> String {
        let list: Vec<&str> = versions
            .iter()
            .filter(|(_, s)| seen(s))
            .map(|(v, _)| v.0.as_str())
            .collect();
        if list.is_empty() {
            "not seen in any recording".to_owned()
        } else {
            list.join(", ")
        }
    };
    let _ = writeln!(out, "\n| metric family | seen on |\n|---|---|");
    for family in d.metric_families() {
        let _ = writeln!(
            out,
            "| `{family}` | {} |",
            on(&|s: &Seen| s.has_family(family))
        );
        for rename in d.renamed_metrics.iter().filter(|r| r.current == family) {
            let _ = writeln!(
                out,
                "| `{}` (older name of the above: deprecated in {}, hidden in {}) | {} |",
                rename.old,
                rename.deprecated_in,
                rename.hidden_in,
                on(&|s: &Seen| s.has_family(rename.old))
            );
        }
    }
    let anchors = bootlog::rule_anchors(d.engine);
    let _ = writeln!(
        out,
        "\n| boot-log fact | line holds | seen on |\n|---|---|---|"
    );
    if anchors.is_empty() {
        let _ = writeln!(out, "| (no boot-log table) | | |");
    }
    for (field, anchor) in anchors {
        let _ = writeln!(
            out,
            "| {field} | `{}` | {} |",
            anchor.replace('|', "\\|"),
            on(&|s: &Seen| s.anchors.contains(anchor))
        );
    }
}

/// A version, ordered by its numbers (`0.9` before `0.16`, `1.3.0rc9` before `1.3.0rc29`).
#[derive(Clone, PartialEq, Eq)]
struct Version(String);

impl Version {
    fn numbers(&self) -> Vec<u64> {
        self.0
            .split(|c: char| !c.is_ascii_digit())
            .filter(|part| !part.is_empty())
            .map(|part| part.parse().unwrap_or(u64::MAX))
            .collect()
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.numbers()
            .cmp(&other.numbers())
            .then_with(|| self.0.cmp(&other.0))
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The recording folders in `dir`: each named `ENGINE-VERSION...` (`vllm-0.28`,
/// `vllm-0.16-cpu`); other folders (a GPU's readings) are no engine's recording.
fn folders_in(dir: &Path, shown: &str) -> Result<Vec<Folder>> {
    let mut folders = Vec::new();
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    paths.sort();
    for path in paths.into_iter().filter(|p| p.is_dir()) {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let mut parts = name.splitn(3, '-');
        let (Some(engine), Some(version)) = (parts.next().and_then(Engine::parse), parts.next())
        else {
            continue;
        };
        let mut folder = Folder {
            name: format!("{shown}/{name}"),
            engine,
            named_version: version.to_owned(),
            dirs: BTreeMap::new(),
        };
        read_tree(&path, &mut folder)?;
        folders.push(folder);
    }
    Ok(folders)
}

/// Reads the server logs and scrapes under `dir` into `folder`.
fn read_tree(dir: &Path, folder: &mut Folder) -> Result<()> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    paths.sort();
    for path in paths {
        if path.is_dir() {
            read_tree(&path, folder)?;
            continue;
        }
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let is_log =
            name.ends_with(".log") && (name.starts_with("boot") || name.starts_with("run_"));
        let page = if name.ends_with(".snapshot.json") {
            let json: serde_json::Value = serde_json::from_str(&read(&path)?)
                .with_context(|| format!("{} is not JSON", path.display()))?;
            let text = json["text"]
                .as_str()
                .with_context(|| format!("{} holds no page (\"text\")", path.display()))?;
            Some(text.to_owned())
        } else if name.ends_with(".prom") {
            Some(read(&path)?)
        } else {
            None
        };
        let entry = folder.dirs.entry(dir.to_owned()).or_default();
        if is_log {
            let text = read(&path)?;
            let version = bootlog::parse_boot_log(&text, Some(folder.engine)).version;
            entry.boot_logs.push((text, version));
        } else if let Some(page) = page {
            let samples = prom::parse_samples(&page)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            entry
                .scrapes
                .push(samples.into_iter().map(|s| s.name).collect());
        }
    }
    Ok(())
}

fn read(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A family's samples are its name alone or with one Prometheus suffix; a longer name
    /// that starts with it is another family (vLLM 0.32 serves both
    /// `vllm:prompt_tokens_total` and `vllm:prompt_tokens_by_source_total`).
    #[test]
    fn a_family_is_seen_only_through_its_own_samples() {
        let seen = |names: &[&str]| Seen {
            samples: names.iter().map(|n| n.to_string()).collect(),
            ..Seen::default()
        };
        let other = seen(&["vllm:prompt_tokens_by_source_total"]);
        assert!(!other.has_family("vllm:prompt_tokens"));
        assert!(other.has_family("vllm:prompt_tokens_by_source"));
        assert!(seen(&["vllm:prompt_tokens_total"]).has_family("vllm:prompt_tokens"));
        assert!(seen(&["vllm:e2e_request_latency_seconds_bucket"])
            .has_family("vllm:e2e_request_latency_seconds"));
        assert!(seen(&["trtllm_kv_cache_utilization"]).has_family("trtllm_kv_cache_utilization"));
    }

    /// Versions sort by their numbers, not their text: 0.9 came before 0.16, and
    /// TensorRT-LLM's release candidates count up (rc9 before rc29).
    #[test]
    fn versions_sort_by_their_numbers() {
        let v = |s: &str| Version(s.to_owned());
        assert!(v("0.9") < v("0.16.0"));
        assert!(v("0.16.0") < v("0.28.0"));
        assert!(v("1.3.0rc9") < v("1.3.0rc29"));
    }
}
