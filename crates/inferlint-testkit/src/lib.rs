//! What the workspace's tests share that is not code under test: where the recordings
//! beside the checkout are, found one way by every crate's tests.
//!
//! A test that reads the recordings is `#[ignore]`d, saying so, unless its crate's build
//! script set `cfg(recorded)` (`INFERLINT_RECORDED` or `CI` set when the tests were
//! built). One that runs calls [`recorded`], which fails naming what is missing, so a run
//! with the variable unset or wrong is never a silent pass. The build scripts stay one
//! per crate: a published crate's build script cannot depend on this unpublished one.

use std::path::PathBuf;

/// The variable that names the recordings folder.
pub const RECORDED_VARIABLE: &str = "INFERLINT_RECORDED";

/// The recordings folder, named by `INFERLINT_RECORDED`, as it was written (not made
/// canonical). Panics, naming the variable and what is wrong with it, when it is unset or
/// names no folder.
pub fn recorded() -> PathBuf {
    let Some(dir) = std::env::var_os(RECORDED_VARIABLE).map(PathBuf::from) else {
        panic!(
            "{RECORDED_VARIABLE} is not set: this test reads the recordings beside the \
             checkout ({RECORDED_VARIABLE}=../shared/recorded)"
        );
    };
    assert!(
        dir.is_dir(),
        "{RECORDED_VARIABLE} names {}, which is not a folder: this test reads the recordings",
        dir.display()
    );
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unset, naming no folder, naming one: the two failures name the variable and what
    /// is wrong, the folder comes back as written. One test, since the variable is the
    /// process's.
    #[test]
    fn the_recordings_folder_or_a_failure_that_names_it() {
        let message = |outcome: std::thread::Result<PathBuf>| {
            let payload = outcome.expect_err("should have failed");
            payload
                .downcast_ref::<String>()
                .cloned()
                .unwrap_or_default()
        };
        std::env::remove_var(RECORDED_VARIABLE);
        let unset = message(std::panic::catch_unwind(recorded));
        assert!(unset.contains("INFERLINT_RECORDED is not set"), "{unset}");
        let dir = std::env::temp_dir();
        let missing = dir.join("inferlint-testkit-no-such-folder");
        std::env::set_var(RECORDED_VARIABLE, &missing);
        let not_a_folder = message(std::panic::catch_unwind(recorded));
        assert!(
            not_a_folder.contains(&format!(
                "names {}, which is not a folder",
                missing.display()
            )),
            "{not_a_folder}"
        );
        std::env::set_var(RECORDED_VARIABLE, &dir);
        assert_eq!(recorded(), dir);
    }
}
