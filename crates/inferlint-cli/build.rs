//! Which of the tests' inputs from outside the repository this build runs the tests
//! that need them with. A test that needs one is `#[ignore]`d, with the reason, unless
//! its cfg is set here, so that a run without it lists the test as ignored (never as a
//! silent pass); with the cfg set, a missing input fails the test, naming it.
//!
//! - `recorded`: the recordings beside the checkout, named by `INFERLINT_RECORDED`.
//! - `prometheus`, `chromium`, `python3`: those programs, found on `PATH` when this
//!   script last ran (it runs again when one of the variables below changes, or after
//!   `touch build.rs`; not on every change of `PATH`).
//! - `real_vllm`: the real vLLM build's environment, named by `INFERLINT_REAL_VLLM`.
//!
//! In CI (`CI` set, as `.ci/run` sets it) every cfg but `real_vllm` is set: there each
//! input must be present, and a missing one is a failure.

use std::env;
use std::path::Path;

fn main() {
    for cfg in ["recorded", "prometheus", "chromium", "python3", "real_vllm"] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    for variable in ["CI", "INFERLINT_RECORDED", "INFERLINT_REAL_VLLM"] {
        println!("cargo::rerun-if-env-changed={variable}");
    }
    let ci = env::var_os("CI").is_some();
    if ci || env::var_os("INFERLINT_RECORDED").is_some() {
        println!("cargo::rustc-cfg=recorded");
    }
    // Debian's prometheus package installs to /usr/bin, which a service's PATH may lack.
    let programs: [(&str, &[&str]); 3] = [
        ("prometheus", &["prometheus", "/usr/bin/prometheus"]),
        ("chromium", &["chromium"]),
        ("python3", &["python3"]),
    ];
    for (cfg, names) in programs {
        if ci || names.iter().any(|name| found(name)) {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
    if env::var_os("INFERLINT_REAL_VLLM").is_some() {
        println!("cargo::rustc-cfg=real_vllm");
    }
}

/// Whether `name` is an absolute path to a file, or a file in a folder of `PATH`.
fn found(name: &str) -> bool {
    if Path::new(name).is_absolute() {
        return Path::new(name).is_file();
    }
    env::var_os("PATH")
        .is_some_and(|paths| env::split_paths(&paths).any(|dir| dir.join(name).is_file()))
}
