use std::path::PathBuf;

/// The recordings folder, named by `INFERLINT_RECORDED`. The tests that read it are
/// ignored, saying so, unless the build set `cfg(recorded)` (build.rs: `INFERLINT_RECORDED`
/// or `CI` set when the tests were built); one that runs fails here, naming what is
/// missing, so a run with the variable unset or wrong is never a silent pass.
pub fn recorded() -> PathBuf {
    let Some(dir) = std::env::var_os("INFERLINT_RECORDED").map(PathBuf::from) else {
        panic!(
            "INFERLINT_RECORDED is not set: this test reads the recordings beside the \
             checkout (INFERLINT_RECORDED=../shared/recorded)"
        );
    };
    assert!(
        dir.is_dir(),
        "INFERLINT_RECORDED names {}, which is not a folder: this test reads the recordings",
        dir.display()
    );
    dir
}
