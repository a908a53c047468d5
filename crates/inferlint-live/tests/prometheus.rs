//! A run read from a stand-in Prometheus on 127.0.0.1 (`inferlint_sim::prometheus`),
//! which answers in the API's JSON and refuses, as Prometheus does, a range query of more
//! than 11,000 points per series.

use std::time::Duration;

use inferlint_engines::files::{self, SeriesLine};
use inferlint_engines::fleet;
use inferlint_engines::prometheus as api;
use inferlint_live::http::BaseUrl;
use inferlint_live::prometheus::{fetch_into, FetchOptions, PromError, PromSource};
use inferlint_sim::prometheus::{self as fake, FleetHistory};

const START_MS: i64 = 1_764_547_200_000;

fn options(steps: i64, interval_ms: i64) -> FetchOptions {
    FetchOptions {
        start: START_MS as f64 / 1000.0,
        end: (START_MS + (steps - 1) * interval_ms) as f64 / 1000.0,
        selector: Some("{job=\"vllm\"}".into()),
        engine: None,
        step: None,
        timeout: Duration::from_secs(30),
    }
}

async fn fetch(
    history: FleetHistory,
    options: &FetchOptions,
) -> (
    Result<inferlint_live::prometheus::Fetched, PromError>,
    tempfile::TempDir,
    u64,
) {
    let server = fake::spawn(history, 0).expect("the stand-in listens");
    let dir = tempfile::tempdir().expect("temporary folder");
    let source = PromSource::new(
        BaseUrl::parse(&server.base_url).expect("address"),
        options.timeout,
    );
    let fetched = fetch_into(&source, options, dir.path(), |_, _| {}).await;
    let asked = server
        .max_points_asked
        .load(std::sync::atomic::Ordering::Relaxed);
    (fetched, dir, asked)
}

/// A window of 25,000 scrapes is read in three range queries, none over the limit; every
/// scrape becomes one sample of its replica; the restart inside the window is a restart
/// record and a note; a NaN reading is read as missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_window_is_split_and_every_replica_gets_its_run() {
    let steps = 25_000;
    let mut history = FleetHistory::new(3, START_MS, 100, steps);
    history.imbalanced = true;
    history.restart = Some((1, 20_000));
    history.nan_at = Some((2, 7));
    let (fetched, dir, asked) = fetch(history, &options(steps, 100)).await;
    let fetched = fetched.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fetched.step_ms, 100, "the step is the scrape interval");
    assert_eq!(fetched.range_queries, 3);
    assert!(fetched.max_points_per_query <= 11_000);
    assert!(asked <= 11_000, "the stand-in was asked {asked} points");
    assert_eq!(fetched.samples, 3 * steps as u64);
    assert_eq!(fetched.manifest.replicas.len(), 3);
    assert_eq!(fetched.manifest.replicas[0].name, "replica-0:8000");
    assert!(
        fetched
            .notes
            .iter()
            .any(|n| n.starts_with("replica replica-1:8000 restarted")),
        "{:?}",
        fetched.notes
    );
    let manifest = fleet::read_manifest(dir.path())
        .expect("reads")
        .expect("a fleet folder");
    assert_eq!(manifest, fetched.manifest);
    let folder = dir.path().join(&manifest.replicas[2].folder);
    assert!(folder.join("before.snapshot.json").is_file());
    assert!(folder.join("after.snapshot.json").is_file());
    let mut samples = Vec::new();
    files::read_series(&folder.join("run.series.jsonl"), |s| samples.push(*s)).expect("reads");
    assert_eq!(samples.len(), steps as usize);
    // The API's "NaN" is read; a recording holds no NaN, so the reading is missing
    // (null), never 0, and the rest of the sample stays.
    assert_eq!(samples[7].kv_usage, None);
    assert!(samples[7].running.is_some());
    let restarted = std::fs::read_to_string(
        dir.path()
            .join(&manifest.replicas[1].folder)
            .join("run.series.jsonl"),
    )
    .expect("reads");
    let markers = restarted
        .lines()
        .filter(|l| files::parse_series_line(l) == SeriesLine::Marker)
        .count();
    assert_eq!(markers, 1, "one restart record");
}

/// A fleet too large for 11,000 points a query: 256 replicas of six series over 3,000
/// steps is one answer of at least 256 × 6 × 3,000 points of 17 bytes (`[1764547200,"0"],`,
/// the shortest a point is written), 78 MB, past the 64 MiB an answer may be. The pieces
/// are sized for the series the snapshots show: each answer stays within the bytes it is
/// sized for, and every step of every replica is read exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_fleet_is_read_in_pieces_sized_for_its_series() {
    let steps = 3_000;
    let history = FleetHistory::new(256, START_MS, 1000, steps);
    let (fetched, dir, asked) = fetch(history, &options(steps, 1000)).await;
    let fetched = fetched.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fetched.manifest.replicas.len(), 256);
    assert_eq!(fetched.samples, 256 * steps as u64, "every step once");
    assert!(fetched.range_queries > 1, "{}", fetched.range_queries);
    assert!(
        asked < 3_000,
        "the stand-in was asked {asked} points a series"
    );
    assert!(
        fetched.largest_answer_bytes <= api::RANGE_ANSWER_BYTES,
        "{} bytes",
        fetched.largest_answer_bytes
    );
    assert!(fetched.notes.is_empty(), "{:?}", fetched.notes);
    // Each replica's recording holds every step in order, with no gap.
    let folder = dir.path().join(&fetched.manifest.replicas[255].folder);
    let mut times = Vec::new();
    files::read_series(&folder.join("run.series.jsonl"), |s| times.push(s.t_wall)).expect("reads");
    let expected: Vec<f64> = (0..steps)
        .map(|k| (START_MS + k * 1000) as f64 / 1000.0)
        .collect();
    assert_eq!(times, expected);
}

/// A Prometheus that is down, too slow or refuses the query is one clear error naming
/// the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn down_slow_and_refusing_servers_are_one_clear_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
        l.local_addr().expect("address").port()
    };
    let dir = tempfile::tempdir().expect("temporary folder");
    let down = PromSource::new(
        BaseUrl::parse(&format!("127.0.0.1:{port}")).expect("address"),
        Duration::from_secs(5),
    );
    let e = fetch_into(&down, &options(10, 1000), dir.path(), |_, _| {})
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "cannot read from the Prometheus server at http://127.0.0.1:{port}: connection refused"
        )
    );

    let mut slow = FleetHistory::new(2, START_MS, 1000, 10);
    slow.delay = Duration::from_secs(3);
    let mut quick = options(10, 1000);
    quick.timeout = Duration::from_millis(300);
    let (result, _dir, _) = fetch(slow, &quick).await;
    let e = result.unwrap_err().to_string();
    assert!(e.contains("timed out after 0.3 s"), "{e}");

    let mut refusing = FleetHistory::new(2, START_MS, 1000, 10);
    refusing.refuse = Some("invalid parameter \"query\": 1:1: parse error".into());
    let (result, _dir, _) = fetch(refusing, &options(10, 1000)).await;
    let e = result.unwrap_err().to_string();
    assert!(
        e.contains("refused the query (bad_data): invalid parameter"),
        "{e}"
    );
    assert!(!e.contains('\n'));
}

/// A selector that matches nothing, or an engine named that the series are not, is
/// refused before anything is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_matching_is_refused() {
    let mut other = options(10, 1000);
    other.selector = Some("{job=\"sglang\"}".into());
    let (result, dir, _) = fetch(FleetHistory::new(2, START_MS, 1000, 10), &other).await;
    let e = result.unwrap_err().to_string();
    assert!(
        e.starts_with("no series of vLLM, SGLang, TensorRT-LLM matching {job=\"sglang\"}"),
        "{e}"
    );
    assert!(!dir.path().join(fleet::MANIFEST).exists());
    let mut named = options(10, 1000);
    named.engine = Some(inferlint_core::Engine::Sglang);
    let (result, _, _) = fetch(FleetHistory::new(2, START_MS, 1000, 10), &named).await;
    assert!(result
        .unwrap_err()
        .to_string()
        .starts_with("no series of SGLang"));
}

/// A replica that stopped answering during the window (absent at its end) is still one
/// of the fleet's, with the readings it had.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_gone_before_the_end_is_still_read() {
    let mut history = FleetHistory::new(3, START_MS, 1000, 120);
    history.gone = Some((2, 60));
    let (fetched, dir, _) = fetch(history, &options(120, 1000)).await;
    let fetched = fetched.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fetched.manifest.replicas.len(), 3);
    assert_eq!(fetched.samples, 2 * 120 + 60);
    let gone = dir.path().join(&fetched.manifest.replicas[2].folder);
    assert!(gone.join("before.snapshot.json").is_file());
    assert!(
        !gone.join("after.snapshot.json").exists(),
        "no reading at the end"
    );
}

/// A stand-in for a broken Prometheus on 127.0.0.1: every instant query is answered with
/// one vLLM series of replica `a:1`, as the API writes a vector, and every range query
/// with `range` (a status line, headers and a body, as given). Its thread ends with the
/// test process, holding nothing but its socket.
fn broken_range_answers(range: Vec<u8>) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let running = inferlint_core::Engine::Vllm.descriptor().running;
    let vector = format!(
        r#"{{"status":"success","data":{{"resultType":"vector","result":[{{"metric":{{"__name__":"{running}","instance":"a:1","job":"vllm"}},"value":[1764547200,"3"]}}]}}}}"#
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                match stream.read(&mut byte) {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            let answer = if head.starts_with(b"GET /api/v1/query_range") {
                range.clone()
            } else {
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{vector}",
                    vector.len()
                )
                .into_bytes()
            };
            let _ = stream.write_all(&answer);
        }
    });
    base
}

fn ok_json(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A range answer cut off, holding a value the API does not write, a proxy's error page,
/// or announcing more than the 64 MiB an answer may be: one line naming the server and
/// what is wrong, and nothing read from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_range_answer_is_one_line_naming_the_server() {
    let running = inferlint_core::Engine::Vllm.descriptor().running;
    let series = format!(
        r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{"__name__":"{running}","instance":"a:1"}},"values":[[1764547200,"1"],[1764547201,"#
    );
    let cases: Vec<(Vec<u8>, String)> = vec![
        // Cut off after the second point's time: JSON that ends too soon.
        (ok_json(&series), "EOF while parsing".to_owned()),
        (
            ok_json(&format!(r#"{series}"oops"]]}}]}}}}"#)),
            "a series value \"oops\" is not a number".to_owned(),
        ),
        // Prometheus writes +Inf; `inf` is no value of its API.
        (
            ok_json(&format!(r#"{series}"inf"]]}}]}}}}"#)),
            "a series value \"inf\" is not a number".to_owned(),
        ),
        (
            {
                let page = "<html>bad gateway</html>";
                format!(
                    "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                    page.len()
                )
                .into_bytes()
            },
            "answered HTTP 502 Bad Gateway: <html>bad gateway</html>".to_owned(),
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\nConnection: close\r\n\r\n".to_vec(),
            "the answer is larger than 64 MiB".to_owned(),
        ),
    ];
    for (range, expected) in cases {
        let base = broken_range_answers(range);
        let dir = tempfile::tempdir().expect("temporary folder");
        let source = PromSource::new(
            BaseUrl::parse(&base).expect("address"),
            Duration::from_secs(20),
        );
        let mut options = options(10, 1000);
        options.step = Some(Duration::from_secs(1));
        let e = fetch_into(&source, &options, dir.path(), |_, _| {})
            .await
            .expect_err("a broken answer is an error")
            .to_string();
        assert!(e.contains(&expected), "{e:?} should say {expected:?}");
        assert!(e.contains(&base), "{e:?} names {base}");
        assert!(!e.contains('\n'), "{e:?}");
        // The manifest was written before the range queries: the folder it leaves is
        // refused by name, never read as a fleet of the replicas whose files are there.
        if dir.path().join(fleet::MANIFEST).is_file() {
            let refused = fleet::read_manifest(dir.path())
                .expect_err("an unfinished read is refused")
                .to_string();
            assert!(refused.contains("did not finish"), "{refused}");
            assert!(refused.contains(fleet::INCOMPLETE), "{refused}");
        } else {
            panic!("the manifest is written before the range queries are asked");
        }
    }
}
