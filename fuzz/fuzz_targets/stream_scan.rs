//! Fuzzes the streaming scanner of over-long server lines (`results.max_bytes`): it never
//! panics, whatever the pieces; on a line the strict rules accept it reads the messages,
//! responses and ids the strict walk reads; on any line every id it takes is text of the line.
//! The first byte picks the piece size (1..=64); the rest is the line.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&first, line)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(first % 64) + 1;
    let (streamed, strict) = assay::fuzzing::stream_scan(line, chunk);
    let (whole, _) = assay::fuzzing::stream_scan(line, line.len().max(1));
    assert_eq!(streamed, whole, "the pieces changed the reading");
    if let Some(strict) = strict {
        assert_eq!(streamed, strict, "the streaming scanner disagrees with the strict walk");
    }
    for id in streamed.iter().filter_map(|(_, id)| id.as_deref()) {
        assert!(
            line.windows(id.len()).any(|w| w == id.as_bytes()),
            "an id that is not in the line: {id}"
        );
    }
});
