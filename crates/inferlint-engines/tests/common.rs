use std::path::PathBuf;

/// The recordings folder. In CI (`CI` set) a missing folder fails the test instead of
/// skipping it; elsewhere the test is skipped with a note, so a user who has only the
/// repository can still run the suite.
pub fn recorded() -> Option<PathBuf> {
    let dir = std::env::var_os("INFERLINT_RECORDED").map(PathBuf::from);
    match dir {
        Some(d) if d.is_dir() => Some(d),
        _ => {
            if std::env::var_os("CI").is_some() {
                panic!("INFERLINT_RECORDED must point at the recordings in CI");
            }
            eprintln!("skipped: INFERLINT_RECORDED is not set to the recordings folder");
            None
        }
    }
}
