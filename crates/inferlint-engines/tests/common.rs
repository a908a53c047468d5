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
            skipped("INFERLINT_RECORDED is not set to the recordings folder");
            None
        }
    }
}

/// Says that the running test was skipped and why, past the test harness's capture of
/// `eprintln!` (which shows a passing test's output to no one): a test that returns early
/// would otherwise read as a silent pass. The line names the test.
pub fn skipped(why: &str) {
    use std::io::Write;
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    // One write: stderr is unbuffered, and the tests beside this one print too.
    let line = format!("skipped: {test}: {why}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
