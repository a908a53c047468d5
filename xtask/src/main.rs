//! Project chores: `cargo xtask docs` regenerates docs/tripwires.md from the catalogue
//! and docs/ARCHITECTURE.md's code map and counts from the tree (`codemap.rs`),
//! `cargo xtask regen-fixtures` the simulated run folders in fixtures/sim (the first is
//! the run `inferlint demo` writes) and the sweep in fixtures/sweep, `cargo xtask man` the
//! man pages in docs/man,
//! `cargo xtask public-api` the library facade's API listing in docs/public-api.txt (and
//! `--check`, in CI, that it is current and names no inner crate's unexported type),
//! `cargo xtask variants` the format variants of the recordings in fixtures/variants, and
//! `cargo xtask bigseries OUT` builds the day-long series the benchmark reads, and
//! `cargo xtask engine-versions` writes docs/engine-versions.md, the versions on which
//! each engine fact was seen in the recordings (`--check`: that it is current).
//!
//! Generated files are checked for freshness by this crate's tests, which fail with the
//! command to run.

mod bigseries;
mod codemap;
mod engine_versions;
mod man;
mod public_api;
mod regen;
mod tidy;
mod variants;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Parser;

/// Project chores: generated docs, fixtures and listings, each with `--check` where CI
/// holds it current.
#[derive(Parser)]
#[command(name = "cargo xtask")]
enum Task {
    /// Write docs/tripwires.md from the catalogue and docs/ARCHITECTURE.md's code map.
    Docs,
    /// Write the simulated run folders in fixtures/sim and the sweep in fixtures/sweep.
    RegenFixtures {
        /// Check that they are current instead of writing them.
        #[arg(long)]
        check: bool,
    },
    /// Write the man pages in docs/man.
    Man {
        /// Check that they are current instead of writing them.
        #[arg(long)]
        check: bool,
    },
    /// Write the facade's public API listing, docs/public-api.txt.
    PublicApi {
        /// Check that it is current and names no inner crate's unexported type.
        #[arg(long)]
        check: bool,
    },
    /// Write the recordings' format variants in fixtures/variants.
    Variants {
        /// Check that they are current instead of writing them.
        #[arg(long)]
        check: bool,
    },
    /// Write docs/engine-versions.md from the recordings (INFERLINT_RECORDED).
    EngineVersions {
        /// Check that it is current instead of writing it.
        #[arg(long)]
        check: bool,
    },
    /// Build the day-long series the benchmark reads.
    Bigseries {
        /// The series to write.
        out: PathBuf,
        /// The recording whose samples it repeats.
        source: Option<PathBuf>,
        /// How many samples to write.
        #[arg(default_value_t = 345_600)]
        samples: usize,
        /// Replace an existing OUT.
        #[arg(long)]
        force: bool,
    },
}

fn main() -> Result<()> {
    match Task::parse() {
        Task::Docs => {
            write(&root().join("docs/tripwires.md"), &docs())?;
            write(
                &root().join("docs/ARCHITECTURE.md"),
                &codemap::architecture(&root())?,
            )
        }
        Task::RegenFixtures { check } => regen::run(&root(), check),
        Task::Man { check } => man::run(&root(), check),
        Task::PublicApi { check } => public_api::run(&root(), check),
        Task::Variants { check } => variants::run(&root(), check),
        Task::EngineVersions { check } => engine_versions::run(&root(), check),
        Task::Bigseries {
            out,
            source,
            samples,
            force,
        } => {
            let source = source.unwrap_or_else(|| {
                root().join("../shared/recorded/vllm-0.28/live/run.series.jsonl")
            });
            bigseries::build(&source, &out, samples, force)
        }
    }
}

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the root")
        .to_owned()
}

fn docs() -> String {
    inferlint_core::story::catalogue::tripwires_markdown()
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ensure_fresh(path: &Path, expected: &str, command: &str) {
        let actual = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            actual == expected,
            "{} is out of date: run `cargo xtask {command}` and commit",
            path.display()
        );
    }

    #[test]
    fn tripwire_docs_are_fresh() {
        ensure_fresh(&root().join("docs/tripwires.md"), &docs(), "docs");
    }

    #[test]
    fn the_code_map_is_fresh() {
        ensure_fresh(
            &root().join("docs/ARCHITECTURE.md"),
            &codemap::architecture(&root()).unwrap(),
            "docs",
        );
    }

    #[test]
    fn man_pages_are_fresh() {
        man::run(&root(), true).unwrap();
    }

    #[test]
    fn simulated_fixtures_are_fresh() {
        regen::run(&root(), true).unwrap();
    }

    /// The recordings these tests read: their absence fails the test, naming it (the
    /// tests run only where the build set `cfg(recorded)`: `INFERLINT_RECORDED` or `CI`).
    fn require_recordings() {
        inferlint_testkit::recorded();
    }

    /// The variants are made from the recordings: the committed corpus must be what the
    /// generator makes.
    #[test]
    #[cfg_attr(
        not(recorded),
        ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
    )]
    fn format_variants_are_fresh() {
        require_recordings();
        variants::run(&root(), true).unwrap();
    }

    /// The versions page is made from the recordings: the committed page must be what the
    /// generator writes.
    #[test]
    #[cfg_attr(
        not(recorded),
        ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
    )]
    fn engine_versions_page_is_fresh() {
        require_recordings();
        engine_versions::run(&root(), true).unwrap();
    }

    /// `bigseries OUT` replaced whatever was at OUT, its source included.
    #[test]
    fn bigseries_keeps_an_existing_file_and_its_source() {
        let tmp = tempfile::tempdir().unwrap();
        let source = root().join("fixtures/sim/vllm-hybrid/run.series.jsonl");
        let out = tmp.path().join("big.jsonl");
        std::fs::write(&out, "mine").unwrap();
        let refused = bigseries::build(&source, &out, 10, false).unwrap_err();
        assert!(refused.to_string().contains("exists"), "{refused}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "mine");
        bigseries::build(&source, &out, 10, true).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 11);
        let copy = tmp.path().join("source.jsonl");
        std::fs::copy(&source, &copy).unwrap();
        let refused = bigseries::build(&copy, &copy, 10, true).unwrap_err();
        assert!(
            refused.to_string().contains("the source recording"),
            "{refused}"
        );
    }
}
