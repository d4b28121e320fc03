//! Fuzzes the strict JSON pre-scan: it never panics, and it agrees with `serde_json` plus an
//! independent duplicate-key and depth check. The first byte picks the depth limit (1..=100, below
//! `serde_json`'s own recursion limit); the rest is the document.
#![no_main]

#[path = "common.rs"]
mod common;

use assay::strict_json::{ScanErrorKind, scan, scan_str};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let max_depth = usize::from(first % 100) + 1;
    let result = scan(input, max_depth);
    if let Ok(text) = std::str::from_utf8(input) {
        assert_eq!(
            scan_str(text, max_depth),
            result,
            "scan and scan_str disagree"
        );
    } else {
        assert_eq!(result.map_err(|e| e.kind), Err(ScanErrorKind::Invalid));
    }
    let reference = common::reference(input);
    match result {
        Ok(()) => {
            let info = reference.expect("scan accepted what serde_json refuses");
            assert!(!info.duplicate_key, "scan accepted a duplicate key");
            assert!(
                info.depth <= max_depth,
                "scan accepted depth {}",
                info.depth
            );
            assert!(common::literal_value(input).is_some());
            let text = std::str::from_utf8(input).expect("scan accepted invalid UTF-8");
            assert_eq!(
                assay::strict_json::parse_value(text).ok(),
                common::literal_value(input)
            );
        }
        Err(e) => {
            assert!(e.offset <= input.len());
            if let Some(info) = reference {
                assert!(
                    info.duplicate_key || info.depth > max_depth,
                    "scan refused ({e}) what serde_json accepts: {info:?}"
                );
                match e.kind {
                    ScanErrorKind::DuplicateKey => assert!(info.duplicate_key),
                    ScanErrorKind::TooDeep => assert!(info.depth > max_depth),
                    // serde_json refuses non-finite numbers and invalid text itself.
                    ScanErrorKind::NonFinite | ScanErrorKind::Invalid => {
                        panic!("scan says {e} but serde_json accepts")
                    }
                }
            }
        }
    }
});
