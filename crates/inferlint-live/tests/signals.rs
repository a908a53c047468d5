//! A recording installs no signal handler: after it, Ctrl-C still ends the process. The
//! recorder used to install SIGINT and SIGTERM handlers that outlived it, so a harness
//! that recorded once could no longer be stopped with Ctrl-C.
//!
//! A signal's default action ends the whole process, so the test runs in a child: this
//! test binary again, running only `child_records_then_raises_sigint` with the variable
//! below set. The child records, then raises SIGINT; with no handler left behind, the
//! child dies of it.

#[cfg(unix)]
const CHILD: &str = "INFERLINT_LIVE_SIGNAL_CHILD";

#[cfg(unix)]
#[test]
fn ctrl_c_still_ends_a_process_that_recorded() {
    use std::os::unix::process::ExitStatusExt;
    // The child starts with SIGINT's default action whatever this test run inherited
    // (a script's background job or `nohup` starts it ignored, and an ignored signal
    // stays ignored across exec): coreutils' `env --default-signal` resets it, so the
    // test asks only whether our code left a handler installed.
    let status = std::process::Command::new("env")
        .arg("--default-signal=INT")
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "signals::child_records_then_raises_sigint",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .status()
        .unwrap();
    assert_eq!(
        status.signal(),
        Some(nix::sys::signal::Signal::SIGINT as i32),
        "the child survived SIGINT: a handler was left installed ({status:?})"
    );
}

/// The child's part (does nothing unless run by the test above).
#[cfg(unix)]
#[test]
fn child_records_then_raises_sigint() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let server = inferlint_sim::server::spawn(inferlint_sim::server::ServerConfig::new(
        inferlint_core::Engine::Vllm,
    ))
    .unwrap();
    let options =
        inferlint_live::RecordOptions::default().interval(std::time::Duration::from_millis(50));
    // Stopped at once: the recording still takes its readings and its first sample,
    // which is all it takes to have installed a handler, if it did.
    inferlint_live::blocking::record(&server.base_url, &options, std::future::ready(())).unwrap();
    // The recorder's own watch, which used to install the handlers.
    let recorder = inferlint_live::Recorder::new().unwrap();
    let base = inferlint_live::BaseUrl::parse(&server.base_url).unwrap();
    let mut scraper = recorder.scraper(base);
    let (first, engine) = recorder.first_scrape(&mut scraper).unwrap();
    let watch = inferlint_live::watch::WatchOptions {
        interval: std::time::Duration::from_millis(50),
        duration: Some(std::time::Duration::from_millis(150)),
        pages: inferlint_live::watch::Pages::default(),
    };
    recorder
        .watch(
            &mut scraper,
            first,
            engine,
            &watch,
            &mut std::io::sink(),
            std::future::pending::<()>(),
            |_, _| {},
        )
        .unwrap();
    nix::sys::signal::raise(nix::sys::signal::Signal::SIGINT).unwrap();
    // Not a wait for anything: SIGINT's default action ends the process inside raise,
    // so this line runs only when a handler was left, and then says so.
    std::thread::sleep(std::time::Duration::from_secs(5));
    panic!("still alive 5 s after SIGINT");
}

#[cfg(unix)]
const TWICE: &str = "INFERLINT_LIVE_SIGNAL_TWICE";

/// A second signal that arrives while the first is being answered (between one
/// `Interrupts::next` and the next call) is kept for that next call, not lost: xray's
/// second Ctrl-C, pressed quickly, stops at once. Run in a child, since it installs the
/// process's handlers for good.
#[cfg(unix)]
#[test]
fn a_second_signal_while_the_first_is_answered_is_not_lost() {
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "signals::child_answers_two_signals",
            "--nocapture",
        ])
        .env(TWICE, "1")
        .status()
        .unwrap();
    assert!(status.success(), "the child lost a signal: {status:?}");
}

/// The child's part (does nothing unless run by the test above).
#[cfg(unix)]
#[test]
fn child_answers_two_signals() {
    use nix::sys::signal::{raise, Signal};
    use std::time::Duration;
    if std::env::var_os(TWICE).is_none() {
        return;
    }
    let runtime = inferlint_live::runtime().unwrap();
    let mut interrupts = {
        let _inside = runtime.enter();
        inferlint_live::interrupts()
    };
    let within = |interrupts: &mut inferlint_live::Interrupts| {
        runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(5), interrupts.next())
                .await
                .is_ok()
        })
    };
    // Another runtime at work on another thread, as xray's recorder is: its driver takes
    // a signal off the process's pipe and hands it to the listeners there are at that
    // moment. Listeners made afresh for each wait (as xray once did) are not there
    // between two waits, and this test then fails: the signal is gone.
    std::thread::spawn(|| {
        let other = inferlint_live::runtime().unwrap();
        other.block_on(async {
            for _ in 0..3000 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
    });
    raise(Signal::SIGINT).unwrap();
    assert!(within(&mut interrupts), "the first SIGINT never arrived");
    // Raised while nothing waits, and given time to be handed out: the handlers are the
    // ones the first wait had, so the next wait sees it.
    raise(Signal::SIGTERM).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        within(&mut interrupts),
        "the SIGTERM raised between two waits was lost"
    );
}
