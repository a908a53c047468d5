//! The KV-cache event stream: a message's frames, the MessagePack batch in it, and a line
//! of the file a subscriber writes. Nothing may panic, and a batch that decodes holds
//! what its lengths say: never more tokens than its bytes could carry.

#![no_main]

use inferlint_engines::files::parse_kv_line;
use inferlint_engines::kv_frames::{decode_batch, published_frame, replayed_frame};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(batch) = decode_batch(data) {
        assert!(batch.ts.is_finite());
        // Each token id, block hash and event is at least one byte of the frame.
        assert!(batch.stored_tokens <= data.len() as u64);
        assert!(batch.stored_blocks + batch.removed_blocks <= data.len() as u64);
        assert!(batch.events <= data.len() as u64);
    }
    // The same bytes cut into frames at each 0xff, as a message and as a replay.
    let frames: Vec<&[u8]> = data.split(|b| *b == 0xff).collect();
    if let Ok((_, payload)) = published_frame(&frames) {
        let _ = decode_batch(payload);
    }
    let _ = replayed_frame(&frames);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse_kv_line(text);
    }
});
