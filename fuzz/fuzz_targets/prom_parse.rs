//! Feeds arbitrary bytes, read as lossy UTF-8, to the Prometheus text parser. The parser
//! must never panic, and whatever it accepts must survive a round trip: printed again with
//! `write_sample` and parsed again, it gives the same samples (a NaN value equal to a NaN).

#![no_main]

use inferlint_engines::prom;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(samples) = prom::parse_samples(&text) else {
        return;
    };
    let mut printed = String::new();
    for sample in &samples {
        prom::write_sample(&mut printed, sample);
    }
    let reparsed = match prom::parse_samples(&printed) {
        Ok(reparsed) => reparsed,
        Err(error) => panic!("printed samples do not parse: {error}\n{printed}"),
    };
    assert_eq!(samples.len(), reparsed.len(), "{printed}");
    for (first, second) in samples.iter().zip(&reparsed) {
        assert_eq!(first.name, second.name);
        assert_eq!(first.labels, second.labels);
        assert_eq!(first.timestamp_ms, second.timestamp_ms);
        let same_value =
            first.value == second.value || (first.value.is_nan() && second.value.is_nan());
        assert!(same_value, "{} read back as {}", first.value, second.value);
        // The sign of zero survives too, so printing is exact, not merely equal. (A NaN's
        // sign does not: every NaN prints as `NaN`.)
        if !first.value.is_nan() {
            assert_eq!(
                first.value.is_sign_negative(),
                second.value.is_sign_negative()
            );
        }
    }
});
