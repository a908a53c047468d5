//! `report` on a run folder with the engine's steps (fixtures/real/vllm-0.32-cpu/
//! steps-preempting: vLLM with 6 KV blocks for 8 requests of 2, which preempted 11
//! requests in 9 steps, by its MADE.md): the step lane on the page and in the trace, each
//! preemption at its step.

use crate::common::{fixtures, inferlint, no_panic};

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// The page draws the lane with one preemption mark per preempting step (9), and the
/// trace has the lane's counters and one instant event per preempting step, whose
/// preemptions add up to the server's counter's move (11).
#[test]
fn the_step_lane_on_the_page_and_in_the_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    copy_dir(
        &fixtures().join("real/vllm-0.32-cpu/steps-preempting"),
        &run,
    );
    let o = inferlint(tmp.path(), &["report", "run", "--trace", "trace.json"]);
    no_panic(&o);
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains("id=\"fig-steps\""));
    // The legend's key is one more.
    assert_eq!(html.matches("class=\"step-preempt\"").count(), 9 + 1);
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("trace.json")).unwrap())
            .unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let preemptions: Vec<_> = events
        .iter()
        .filter(|e| e["ph"] == "i" && e["name"] == "preemption")
        .collect();
    assert_eq!(preemptions.len(), 9);
    let total: u64 = preemptions
        .iter()
        .map(|e| e["args"]["preempted"].as_u64().unwrap())
        .sum();
    assert_eq!(total, 11);
    assert!(events
        .iter()
        .any(|e| e["ph"] == "C" && e["name"] == "step batch (tokens)"));
}
