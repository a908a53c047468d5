//! A day at 4 Hz (345,600 samples): the report stays under 2 MB and keeps every
//! preemption and every peak. (How long it takes is the benchmark's business:
//! `cargo bench -p inferlint-report`.)

use inferlint_core::engine::VLLM;
use inferlint_report::timeline::{MAX_POINTS, MAX_ROWS};
use inferlint_report::Timeline;

use crate::common::{day_of_samples, demo, Checked};
use crate::wellformed::check;

const DAY: usize = 345_600;
const LIMIT_BYTES: usize = 2 * 1024 * 1024;

#[test]
fn a_day_long_report_is_small_and_loses_nothing() {
    let samples = day_of_samples(DAY);
    let checked = demo();
    let usable = inferlint_report::usable_blocks(&checked.results);
    let timeline = Timeline::from_samples(&VLLM, usable, Some(0.25), &samples).unwrap();
    assert!(timeline.downsampled());
    assert!(timeline.points.len() <= MAX_POINTS);
    assert!(timeline.rows.len() <= MAX_ROWS + 1);
    let peak_running = samples.iter().filter_map(|s| s.running).fold(0.0, f64::max);
    assert_eq!(timeline.peak(|p| p.running), Some(peak_running));
    let gained = samples.last().unwrap().preemptions.unwrap() - samples[0].preemptions.unwrap();
    assert_eq!(timeline.preemptions, gained);

    let day = Checked {
        timeline: Some(timeline),
        ..checked
    };
    let html = day.render();
    assert!(
        html.len() <= LIMIT_BYTES,
        "a day's report is {} bytes, over 2 MB",
        html.len()
    );
    check(&html).unwrap_or_else(|e| panic!("not well-formed: {e}"));
    assert!(html.contains("Downsampled: the chart draws"));
    let start = html.find("id=\"fig-requests\"").unwrap();
    let end = start + html[start..].find("</figure>").unwrap();
    let marked: f64 = html[start..end]
        .split("data-n=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].parse::<f64>().unwrap())
        .sum();
    assert_eq!(marked, gained, "every preemption has its marker");
}
