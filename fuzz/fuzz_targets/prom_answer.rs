//! An answer of Prometheus' query API through the typed reader, whole (`parse_answer`) and
//! into each replica's samples (`RangeReader`). It must never panic, an answer it refuses
//! is one line, and the two readers read the same series: the samples come from the
//! series `parse_answer` gives, placed by their `pod` or `instance`.

#![no_main]

use inferlint_core::Engine;
use inferlint_engines::prometheus::{parse_answer, RangeReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let whole = parse_answer(data);
    if let Err(e) = &whole {
        assert!(!e.to_string().contains('\n'), "{e}");
    }
    let replicas = ["a".to_owned(), "b:1".to_owned()];
    let mut reader = RangeReader::new(Engine::Vllm.descriptor(), &replicas);
    let read = reader.read(data, i64::MIN, i64::MAX);
    assert_eq!(read.is_ok(), whole.is_ok(), "both read or both refuse");
    let (Ok(read), Ok(series)) = (read, whole) else {
        return;
    };
    assert_eq!(read.series, series.len() as u64);
    let placed = series
        .iter()
        .filter(|s| s.replica().is_some_and(|r| replicas.iter().any(|n| n == r)))
        .count() as u64;
    assert_eq!(read.unplaced, read.series - placed);
    for replica in 0..replicas.len() {
        let mut last = f64::NEG_INFINITY;
        reader
            .samples(replica, |sample| {
                assert!(sample.t_wall >= last, "samples in time order");
                last = sample.t_wall;
                Ok::<(), ()>(())
            })
            .expect("the sink refuses nothing");
    }
});
