//! How well a series file kept to its schedule: `cargo run --release -p inferlint-live
//! --example schedule_stats -- FILE [INTERVAL_S]`. Reads our recordings and the Python
//! tool's alike (the interval comes from the header unless given), the schedule from the
//! second sample on (see below). The numbers in docs/recording.md were measured with it.

use std::path::PathBuf;

use inferlint_engines::files;
use inferlint_live::schedule::{interval_stats, schedule_stats};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = PathBuf::from(
        args.next()
            .ok_or("usage: schedule_stats FILE [INTERVAL_S]")?,
    );
    let given: Option<f64> = args.next().map(|a| a.parse()).transpose()?;
    let mut times = Vec::new();
    let summary = files::read_series(&path, |s| times.extend(s.t_mono_ns))?;
    let interval_s = given
        .or(summary.header.and_then(|h| h.interval_s))
        .ok_or("the header gives no interval: pass it")?;
    let interval_ns = (interval_s * 1e9).round() as i64;
    // Our recordings' first sample is the scrape that found the engine, taken before the
    // schedule starts (once the page choice is made: for a large fleet, every replica's),
    // so the schedule is measured on the samples after it; another tool's recording
    // loses one sample of many.
    let scheduled = times.get(1..).unwrap_or_default();
    let stats = schedule_stats(scheduled, interval_ns).ok_or("fewer than three samples")?;
    let (mean_gap_drift, worst_gap_ms) =
        interval_stats(scheduled, interval_ns).ok_or("fewer than three samples")?;
    println!("{}", path.display());
    println!(
        "  {} samples, the {} after the first over {} slots of {interval_s} s ({} skipped lines)",
        times.len(),
        stats.samples,
        stats.slots,
        summary.skipped
    );
    println!(
        "  drift against the schedule      {:+.4}%",
        stats.drift * 100.0
    );
    println!(
        "  distance from the schedule      p50 {:.3} ms  p99 {:.3} ms  max {:.3} ms",
        stats.p50_ms, stats.p99_ms, stats.max_ms
    );
    println!(
        "  consecutive gaps                mean {:+.4}% off, worst {:.3} ms off",
        mean_gap_drift * 100.0,
        worst_gap_ms
    );
    Ok(())
}
