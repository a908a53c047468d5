//! Which of the tests' inputs from outside the repository this build runs the tests
//! that need them with. A test that needs one is `#[ignore]`d, with the reason, unless
//! its cfg is set here, so that a run without it lists the test as ignored (never as a
//! silent pass); with the cfg set, a missing input fails the test, naming it.
//!
//! - `recorded`: the recordings beside the checkout, named by `INFERLINT_RECORDED`.
//! - `python3`: that program, found on `PATH` when this script last ran (it runs again
//!   when `CI` or `INFERLINT_RECORDED` changes, or after `touch build.rs`; not on every
//!   change of `PATH`, which would rebuild every crate that depends on this one).
//!
//! In CI (`CI` set, as `.ci/run` sets it) every cfg is set: there each input must be
//! present, and a missing one is a failure.

fn main() {
    for cfg in ["recorded", "python3"] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    for variable in ["CI", "INFERLINT_RECORDED"] {
        println!("cargo::rerun-if-env-changed={variable}");
    }
    let ci = std::env::var_os("CI").is_some();
    if ci || std::env::var_os("INFERLINT_RECORDED").is_some() {
        println!("cargo::rustc-cfg=recorded");
    }
    if ci || found("python3") {
        println!("cargo::rustc-cfg=python3");
    }
}

/// Whether `name` is a file in a folder of `PATH`.
fn found(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(name).is_file()))
}
