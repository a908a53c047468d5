//! Which of the tests' inputs from outside the repository this build runs the tests
//! that need them with. A test that needs one is `#[ignore]`d, with the reason, unless
//! its cfg is set here, so that a run without it lists the test as ignored (never as a
//! silent pass); with the cfg set, a missing input fails the test, naming it.
//!
//! - `recorded`: the recordings beside the checkout, named by `INFERLINT_RECORDED`.
//!
//! In CI (`CI` set, as `.ci/run` sets it) every cfg is set: there each input must be
//! present, and a missing one is a failure.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(recorded)");
    for variable in ["CI", "INFERLINT_RECORDED"] {
        println!("cargo::rerun-if-env-changed={variable}");
    }
    let ci = std::env::var_os("CI").is_some();
    if ci || std::env::var_os("INFERLINT_RECORDED").is_some() {
        println!("cargo::rustc-cfg=recorded");
    }
}
