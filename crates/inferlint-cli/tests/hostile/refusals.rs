//! Refused early and rightly: every input is checked before a server is contacted; a link
//! in a page is `http(s)` or a relative path made safe; a malformed percentage, an empty
//! folder among runs, two lists of addresses and two ports are refused, not read one way.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use crate::common::{
    copy_tree, demo_copy, finish_within, fixtures, inferlint, no_panic, spawn_inferlint, stderr,
    UNUSABLE_INPUT, USAGE,
};

#[track_caller]
fn refused_with(o: &Output, code: i32, needle: &str) {
    no_panic(o);
    assert_eq!(o.status.code(), Some(code), "{}", stderr(o));
    assert!(
        stderr(o).contains(needle),
        "expected '{needle}' in: {}",
        stderr(o)
    );
}

/// A listener on 127.0.0.1 that answers nothing: whether anyone connected to it.
struct Silent(TcpListener);

impl Silent {
    fn new() -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Silent(listener)
    }

    fn url(&self) -> String {
        format!("http://{}", self.0.local_addr().unwrap())
    }

    fn contacted(&self) -> bool {
        self.0.accept().is_ok()
    }
}

/// `xray --url … --boot-log /nonexistent` asked the server first, then exited 1.
#[test]
fn xray_checks_its_boot_log_before_contacting_the_server() {
    let server = Silent::new();
    let tmp = tempfile::tempdir().unwrap();
    let url = server.url();
    let child = spawn_inferlint(
        tmp.path(),
        &[
            "xray",
            "--url",
            &url,
            "--boot-log",
            "no-such-boot.log",
            "-o",
            "run",
            "--",
            "true",
        ],
        Stdio::null(),
    );
    let o = finish_within(child, Duration::from_secs(60));
    refused_with(&o, UNUSABLE_INPUT, "no-such-boot.log");
    assert!(!server.contacted(), "the server was contacted");
    assert!(!tmp.path().join("run").exists(), "no run folder was made");
}

/// A replica folder named `javascript:…` in fleet.json became a real link.
#[test]
fn a_fleet_page_links_only_to_safe_relative_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let fleet = tmp.path().join("fleet");
    demo_copy(&fleet.join("javascript:alert(1)"));
    demo_copy(&fleet.join("b"));
    std::fs::write(
        fleet.join("fleet.json"),
        r#"{"schema":"inferlint-fleet/1","source":"watch","replicas":[
            {"name":"a","folder":"javascript:alert(1)"},{"name":"b","folder":"b"}]}"#,
    )
    .unwrap();
    let o = inferlint(tmp.path(), &["report", "fleet"]);
    no_panic(&o);
    let page = std::fs::read_to_string(fleet.join("report.html")).unwrap();
    assert!(
        !page.to_ascii_lowercase().contains("href=\"javascript:"),
        "{page}"
    );
    assert!(
        page.contains("href=\"javascript%3Aalert%281%29/report.html\""),
        "the replica's page is still linked, as a relative path"
    );
    assert!(page.contains("href=\"b/report.html\""));
}

/// `--max-regression 5%%` was read as 5%.
#[test]
fn a_malformed_percentage_is_refused() {
    let sim = fixtures().join("sim");
    for bad in ["5%%", "%", "5%5", "five%"] {
        let o = inferlint(
            &sim,
            &[
                "compare",
                "vllm-hybrid",
                "sglang-capped",
                "--max-regression",
                bad,
            ],
        );
        refused_with(&o, USAGE, "is not a percentage");
    }
    let o = inferlint(
        &sim,
        &[
            "compare",
            "vllm-hybrid",
            "sglang-capped",
            "--max-regression",
            "5 %",
        ],
    );
    assert_ne!(o.status.code(), Some(USAGE), "{}", stderr(&o));
}

/// `sweep` read a folder of load levels and skipped an empty one without a word.
#[test]
fn sweep_refuses_an_empty_folder_among_its_runs_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("sweep");
    copy_tree(&fixtures().join("sweep"), &sweep);
    let fine = inferlint(tmp.path(), &["sweep", "sweep"]);
    assert_ne!(
        fine.status.code(),
        Some(UNUSABLE_INPUT),
        "{}",
        stderr(&fine)
    );
    std::fs::create_dir(sweep.join("c64")).unwrap();
    let o = inferlint(tmp.path(), &["sweep", "sweep"]);
    refused_with(&o, UNUSABLE_INPUT, "sweep/c64 is an empty folder");
}

/// `watch URL --targets FILE` merged the two lists without a word.
#[test]
fn watch_refuses_addresses_and_a_targets_file_together() {
    let server = Silent::new();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("targets.txt"),
        format!("{}\n", server.url()),
    )
    .unwrap();
    let url = server.url();
    let o = inferlint(
        tmp.path(),
        &[
            "watch",
            &url,
            "--targets",
            "targets.txt",
            "-o",
            "fleet",
            "--duration",
            "1",
        ],
    );
    refused_with(&o, USAGE, "--targets");
    assert!(!server.contacted());
    assert!(!tmp.path().join("fleet").exists());
}

/// `xray --url` of one port with a `--serve` command listening on another was not
/// refused: one server would be started and another recorded.
#[test]
fn xray_refuses_a_url_and_a_serve_command_of_other_ports() {
    let server = Silent::new();
    let tmp = tempfile::tempdir().unwrap();
    let url = server.url();
    let port = url.rsplit(':').next().unwrap().to_owned();
    let other = if port == "9" { "10" } else { "9" };
    let serve = format!("vllm serve some/model --port {other}");
    let o = inferlint(
        tmp.path(),
        &[
            "xray", "--url", &url, "--serve", &serve, "-o", "run", "--", "true",
        ],
    );
    refused_with(&o, USAGE, &format!("port {port}"));
    assert!(
        stderr(&o).contains(&format!("port {other}")),
        "{}",
        stderr(&o)
    );
    assert!(!server.contacted());
    assert!(!Path::new(&tmp.path().join("run")).exists());
}
