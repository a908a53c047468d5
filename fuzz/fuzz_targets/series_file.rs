//! A whole series file through the streaming reader, cut into 1 to 8 stretches read on
//! threads of their own. However the file is cut, the samples come out the same and in
//! the same order, and the summary counts agree: a stretch boundary may fall anywhere,
//! inside a line, on a newline, in a run of blank lines or in a cut-off last line.

#![no_main]

use std::path::PathBuf;

use inferlint_core::model::SeriesSample;
use inferlint_engines::files::{fold_series_in, SeriesSummary};
use libfuzzer_sys::fuzz_target;

/// Every sample in order, with the summary (the error's text when the file is refused).
fn read(path: &PathBuf, stretches: usize) -> Result<(Vec<String>, SeriesSummary), String> {
    fold_series_in(
        path,
        stretches,
        Vec::new,
        |samples: &mut Vec<String>, s: &SeriesSample| samples.push(format!("{s:?}")),
        |mut left, right| {
            left.extend(right);
            left
        },
    )
    .map_err(|e| e.to_string())
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, text)) = data.split_first() else {
        return;
    };
    let stretches = usize::from(first % 8) + 1;
    let path = std::env::temp_dir().join(format!("inferlint-fuzz-{}.jsonl", std::process::id()));
    std::fs::write(&path, text).expect("the fuzz file is written");
    let whole = read(&path, 1);
    let cut = read(&path, stretches);
    assert_eq!(whole, cut, "{stretches} stretches");
});
