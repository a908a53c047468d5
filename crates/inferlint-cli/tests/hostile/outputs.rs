//! Nothing the user did not ask to replace is replaced. A folder is an earlier output of
//! ours only by the marker we write into it, never by what its files say; an output never
//! replaces an input of the same command, `--force` or not; a device, a FIFO or a socket
//! is refused whatever the flags, in a message that does not offer `--force`; a link to a
//! folder is never written through.
//!
//! No test here writes to `/dev/null`, or runs a command that could replace it: the only
//! command aimed at it has no `--force`, and was refused before its fix too. The
//! replacement that `--force` made is tested on FIFOs made in a temporary folder.

use std::path::Path;
use std::process::Output;

use inferlint_core::Engine;
use inferlint_sim::server::{self, ServerConfig, ServerHandle};

use crate::common::{copy_tree, demo_copy, fixtures, inferlint, no_panic, stderr, USAGE};

fn sim() -> ServerHandle {
    server::spawn(ServerConfig::new(Engine::Vllm)).unwrap()
}

#[track_caller]
fn refused(o: &Output, needle: &str) {
    no_panic(o);
    assert_eq!(o.status.code(), Some(USAGE), "{}", stderr(o));
    assert!(
        stderr(o).contains(needle),
        "expected '{needle}' in: {}",
        stderr(o)
    );
}

/// Every file under `dir`, with its bytes, in name order.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut all: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    all.sort();
    all
}

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

#[cfg(unix)]
fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// A load tool's real run recorded from the simulated server has the simulator's boot
/// log: `demo -o` once took it for an earlier demo and wrote over it without `--force`.
#[test]
fn demo_replaces_no_real_run_whose_boot_log_is_the_simulators() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    copy_tree(&fixtures().join("loadtools/guidellm/concurrent-8"), &run);
    let before = contents(&run);
    let o = inferlint(tmp.path(), &["demo", "-o", "run"]);
    refused(&o, "holds no earlier demo");
    assert_eq!(contents(&run), before, "the real run is as it was");
    assert!(!run.join(".inferlint").exists());
}

/// The marker alone makes a folder an earlier demo: demo runs again over its own output.
#[test]
fn demo_writes_again_over_its_own_marked_output_only() {
    let tmp = tempfile::tempdir().unwrap();
    let first = inferlint(tmp.path(), &["demo", "-o", "run"]);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    let marker = std::fs::read_to_string(tmp.path().join("run/.inferlint")).unwrap();
    assert!(marker.starts_with("inferlint demo "), "{marker}");
    let again = inferlint(tmp.path(), &["demo", "-o", "run"]);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    // Another command's marker is not a demo's.
    std::fs::write(tmp.path().join("run/.inferlint"), "inferlint xray 0.1.0\n").unwrap();
    let o = inferlint(tmp.path(), &["demo", "-o", "run"]);
    refused(&o, "holds no earlier demo");
}

/// `demo -o LINK --force` wrote into the folder the link points to.
#[cfg(unix)]
#[test]
fn demo_never_writes_through_a_link_to_a_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    demo_copy(&real);
    std::fs::write(real.join("notes.txt"), "mine").unwrap();
    let before = contents(&real);
    std::os::unix::fs::symlink(&real, tmp.path().join("link")).unwrap();
    // `lstat("link/")` follows the link: the trailing `/` once hid it.
    for (out, extra) in [
        ("link", &[][..]),
        ("link", &["--force"][..]),
        ("link/", &["--force"][..]),
    ] {
        let mut args = vec!["demo", "-o", out];
        args.extend_from_slice(extra);
        let o = inferlint(tmp.path(), &args);
        refused(&o, &format!("{out} is a symbolic link"));
        assert_eq!(contents(&real), before);
    }
}

/// `watch --boot-log X -o X --force` wrote the recording over its own boot log.
#[test]
fn watch_never_writes_over_its_boot_log() {
    let server = sim();
    let tmp = tempfile::tempdir().unwrap();
    let boot = tmp.path().join("boot.log");
    std::fs::copy(fixtures().join("sim/vllm-hybrid/boot.log"), &boot).unwrap();
    let before = std::fs::read(&boot).unwrap();
    for extra in [&[][..], &["--force"][..]] {
        let mut args = vec![
            "watch",
            &server.base_url,
            "--boot-log",
            "boot.log",
            "-o",
            "boot.log",
            "--duration",
            "0.3",
            "--interval",
            "0.1",
        ];
        args.extend_from_slice(extra);
        let o = inferlint(tmp.path(), &args);
        refused(&o, "boot.log is the boot log, which this command reads");
        assert_eq!(std::fs::read(&boot).unwrap(), before);
    }
}

/// `-o FIFO --force` put a regular file in the FIFO's place, in every command that
/// writes a file; without `--force` the refusal offered `--force`.
#[cfg(unix)]
#[test]
fn a_fifo_is_never_replaced_by_any_writer() {
    let server = sim();
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("out.fifo");
    mkfifo(&fifo);
    demo_copy(&tmp.path().join("run"));
    copy_tree(
        &fixtures().join("sim/sglang-capped"),
        &tmp.path().join("other"),
    );
    copy_tree(&fixtures().join("sweep"), &tmp.path().join("sweep"));
    let url = server.base_url.as_str();
    let commands: [&[&str]; 5] = [
        &["report", "run", "-o", "out.fifo"],
        &["compare", "run", "other", "-o", "out.fifo"],
        &["sweep", "sweep", "-o", "out.fifo"],
        &["snapshot", url, "-o", "out.fifo"],
        &[
            "watch",
            url,
            "-o",
            "out.fifo",
            "--duration",
            "0.3",
            "--interval",
            "0.1",
        ],
    ];
    for command in commands {
        for extra in [&[][..], &["--force"][..]] {
            let mut args = command.to_vec();
            args.extend_from_slice(extra);
            let o = inferlint(tmp.path(), &args);
            refused(&o, "out.fifo is a pipe (FIFO), not a regular file");
            assert!(
                !stderr(&o).contains("or --force"),
                "{args:?}: {}",
                stderr(&o)
            );
            assert!(is_fifo(&fifo), "{args:?} replaced the FIFO");
        }
    }
}

/// `/dev/null` is refused as a device, and the refusal does not offer `--force`. Only the
/// command without `--force` is run: it was refused before the fix as well, so it
/// cannot write there; `--force` on a device is tested in the writers' own unit test,
/// which only looks at `/dev/null`.
#[cfg(unix)]
#[test]
fn dev_null_is_refused_as_a_device_without_offering_force() {
    use std::os::unix::fs::FileTypeExt;
    let null = Path::new("/dev/null");
    assert!(std::fs::symlink_metadata(null)
        .unwrap()
        .file_type()
        .is_char_device());
    let tmp = tempfile::tempdir().unwrap();
    demo_copy(&tmp.path().join("run"));
    let o = inferlint(tmp.path(), &["report", "run", "-o", "/dev/null"]);
    refused(&o, "/dev/null is a character device, not a regular file");
    assert!(!stderr(&o).contains("or --force"), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(null)
        .unwrap()
        .file_type()
        .is_char_device());
}

/// A folder that holds nothing.
fn is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

/// `xray -o LINK` wrote its run (its marker first) into the folder the link points to;
/// `watch URL URL … -o LINK` and `report --prometheus --save LINK` did too. Each is a
/// refused output target (the README's table: 64, "an output file refused (… a link)"),
/// with and without `--force` and with a trailing `/`, before any server is asked:
/// nothing listens at the addresses given, and the refusal is all that happens.
#[cfg(unix)]
#[test]
fn no_folder_writer_writes_through_a_link_to_a_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::os::unix::fs::symlink(&real, tmp.path().join("link")).unwrap();
    let nobody = "http://127.0.0.1:9";
    for out in ["link", "link/"] {
        let commands: [Vec<&str>; 4] = [
            vec!["xray", "-o", out, "--url", nobody, "--no-gpu", "--", "true"],
            vec![
                "xray", "-o", out, "--force", "--url", nobody, "--no-gpu", "--", "true",
            ],
            vec![
                "watch",
                nobody,
                "http://127.0.0.1:10",
                "-o",
                out,
                "--duration",
                "0.3",
            ],
            vec![
                "report",
                "--prometheus",
                nobody,
                "--start",
                "1764547200",
                "--end",
                "1764547299",
                "--save",
                out,
            ],
        ];
        for args in commands {
            let o = inferlint(tmp.path(), &args);
            refused(&o, &format!("{out} is a symbolic link;"));
            assert!(
                stderr(&o).contains("never writes a folder through one, --force or not"),
                "{args:?}: {}",
                stderr(&o)
            );
            assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
            assert!(is_empty(&real), "{args:?} wrote through the link");
        }
    }
    // A link above the folder is how disks are often laid out: used, and named.
    let o = inferlint(
        tmp.path(),
        &[
            "xray", "-o", "link/run", "--url", nobody, "--no-gpu", "--", "true",
        ],
    );
    no_panic(&o);
    let real_run = std::fs::canonicalize(&real).unwrap().join("run");
    assert!(
        stderr(&o).contains(&format!(
            "note: link is a symbolic link: -o link/run is written into {}",
            real_run.display()
        )),
        "{}",
        stderr(&o)
    );
}

/// Two simulated vLLM servers, each stopped when dropped.
fn two_sims() -> [ServerHandle; 2] {
    [sim(), sim()]
}

/// `watch URL URL … -o DIR` wrote no marker, so a later run could not tell its own fleet
/// folder from a stranger's. It writes `inferlint watch VERSION` as `demo` and `xray -o`
/// do (docs/limits.md); a folder holding only that marker is new for the next watch, and
/// a refusal says whose files the folder holds: an earlier watch's, another command's,
/// or none of inferlint's.
#[test]
fn a_fleet_recording_is_marked_as_ours_and_a_foreign_folder_refused() {
    let servers = two_sims();
    let tmp = tempfile::tempdir().unwrap();
    let watch = |out: &str| {
        inferlint(
            tmp.path(),
            &[
                "watch",
                &servers[0].base_url,
                &servers[1].base_url,
                "-o",
                out,
                "--interval",
                "0.1",
                "--duration",
                "0.5",
            ],
        )
    };
    let first = watch("fleet");
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let marker = std::fs::read_to_string(tmp.path().join("fleet/.inferlint")).unwrap();
    assert!(marker.starts_with("inferlint watch "), "{marker}");
    assert_eq!(marker.lines().count(), 1, "{marker}");
    // The marker changes nothing `report DIR` reads.
    let report = inferlint(tmp.path(), &["report", "fleet"]);
    no_panic(&report);
    assert!(
        crate::common::stdout(&report).contains("== the fleet: 2 replicas"),
        "{}",
        stderr(&report)
    );
    refused(&watch("fleet"), "holds files of an earlier inferlint watch");
    // Only our marker left (a recording refused before its first file): used again.
    std::fs::create_dir(tmp.path().join("marked")).unwrap();
    std::fs::write(tmp.path().join("marked/.inferlint"), &marker).unwrap();
    let again = watch("marked");
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(tmp.path().join("marked/fleet.json").is_file());
    // Another command's marker is not a fleet's.
    std::fs::create_dir(tmp.path().join("xrayed")).unwrap();
    std::fs::write(
        tmp.path().join("xrayed/.inferlint"),
        "inferlint xray 0.1.0\n",
    )
    .unwrap();
    refused(&watch("xrayed"), "holds files of another command");
    std::fs::create_dir(tmp.path().join("mine")).unwrap();
    std::fs::write(tmp.path().join("mine/notes.txt"), "mine").unwrap();
    refused(&watch("mine"), "holds files that are not inferlint's");
    assert_eq!(contents(&tmp.path().join("mine")).len(), 1);
}

/// `report --prometheus --save DIR` wrote no marker either: it writes `inferlint report
/// VERSION`, a second `--save` there is refused as an earlier report's, and `watch` does
/// not take the folder for a fleet of its own.
#[test]
fn a_saved_prometheus_fleet_is_marked_as_ours() {
    use inferlint_sim::prometheus::{self as fake, FleetHistory};
    let start_ms = 1_764_547_200_000;
    let prometheus = fake::spawn(FleetHistory::new(2, start_ms, 500, 200), 0).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let save = || {
        inferlint(
            tmp.path(),
            &[
                "report",
                "--prometheus",
                &prometheus.base_url,
                "--start",
                "1764547200",
                "--end",
                "1764547299",
                "--save",
                "saved",
            ],
        )
    };
    let first = save();
    no_panic(&first);
    assert!(
        tmp.path().join("saved/report.html").is_file(),
        "{}",
        stderr(&first)
    );
    let marker = std::fs::read_to_string(tmp.path().join("saved/.inferlint")).unwrap();
    assert!(marker.starts_with("inferlint report "), "{marker}");
    refused(&save(), "holds files of an earlier inferlint report");
    let servers = two_sims();
    let o = inferlint(
        tmp.path(),
        &[
            "watch",
            &servers[0].base_url,
            &servers[1].base_url,
            "-o",
            "saved",
            "--duration",
            "0.3",
        ],
    );
    refused(&o, "holds files of another command");
}
