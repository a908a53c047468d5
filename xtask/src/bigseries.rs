//! The benchmark's day-long series: a real recording repeated end to end, times and
//! counters shifted so that it reads as one continuous run.

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use inferlint_core::SeriesSample;
use inferlint_engines::files::{self, SeriesLine};
use inferlint_engines::output;

pub fn build(source: &Path, out: &Path, samples: usize, force: bool) -> Result<()> {
    // OUT is a path the user gave: an existing file is kept unless --force, and the
    // source is never written over.
    let rule = output::Rule {
        force,
        reads: &[(source, "the source recording")],
        ours: None,
    };
    output::check(out, &rule)?;
    let text = std::fs::read_to_string(source)
        .with_context(|| format!("cannot read {}", source.display()))?;
    let mut header = None;
    let mut base: Vec<SeriesSample> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match files::parse_series_line(line) {
            SeriesLine::Header(h) => header = Some(h),
            SeriesLine::Sample(s) => base.push(s),
            SeriesLine::Marker | SeriesLine::Skipped => {}
        }
    }
    if base.len() < 2 {
        bail!("{} has fewer than two samples", source.display());
    }
    let mut header = header.unwrap_or_default();
    let engine = header.engine.unwrap_or(inferlint_core::Engine::Vllm);
    header.engine = Some(engine);
    let first = base[0];
    let last = base[base.len() - 1];
    let interval = header.interval_s.unwrap_or(0.25);
    let lap_wall = last.t_wall - first.t_wall + interval;
    let lap_mono = last
        .t_mono_ns
        .zip(first.t_mono_ns)
        .map(|(l, f)| l - f + (interval * 1e9) as i64);
    let counter_step = |f: fn(&SeriesSample) -> Option<f64>| match (f(&first), f(&last)) {
        (Some(a), Some(b)) => b - a,
        _ => 0.0,
    };
    let d_pre = counter_step(|s| s.preemptions);
    let d_gen = counter_step(|s| s.generation_tokens);
    let d_prompt = counter_step(|s| s.prompt_tokens);
    let mut out_file = BufWriter::new(output::create_stream(out, &rule)?);
    writeln!(out_file, "{}", files::series_header_json(&header))?;
    for i in 0..samples {
        let lap = (i / base.len()) as f64;
        let lap_i = (i / base.len()) as i64;
        let mut s = base[i % base.len()];
        s.t_wall += lap * lap_wall;
        s.t_mono_ns = s.t_mono_ns.zip(lap_mono).map(|(t, l)| t + lap_i * l);
        s.preemptions = s.preemptions.map(|v| v + lap * d_pre);
        s.generation_tokens = s.generation_tokens.map(|v| v + lap * d_gen);
        s.prompt_tokens = s.prompt_tokens.map(|v| v + lap * d_prompt);
        writeln!(out_file, "{}", files::series_sample_json(engine, &s))?;
    }
    out_file.flush()?;
    eprintln!("wrote {samples} samples to {}", out.display());
    Ok(())
}
