//! Fuzzes the canonical form of a tool call's arguments (SPEC §4.1 `arguments_sha256`) and the
//! arguments a decision records (SPEC §5.2 `record_arguments`, `redact`): never a panic, and on
//! every text the client-line bound accepts as strict JSON:
//! - the simple transcription, when it takes the text, writes the form the general
//!   canonicalizer writes, and the general one writes a form for every such text;
//! - the recorded text made from the transcription, when that path is taken, is the one made
//!   from the parsed value (cut included), and it is taken whenever the transcription is;
//! - the escaped recorded text, when taken, is `serde_json`'s escape of the recorded text
//!   (what the decision line's writer writes), and it is taken whenever that text is uncut.
#![no_main]

use assay::fuzzing::canonical_summary;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let s = canonical_summary(text);
    // Only texts a client line can carry: strict JSON within the client-line depth bound.
    if assay::strict_json::scan_str(text, 64).is_err() {
        return;
    }
    let full = s.full.as_ref().expect("the general canonicalizer refused strict JSON");
    if let Some(simple) = &s.simple {
        assert_eq!(simple, full, "the two canonical writers disagree on {text:?}");
    }
    let value = s.recorded_value.as_ref().expect("strict JSON that does not parse");
    match (&s.simple, &s.recorded_fast) {
        (Some(_), Some(fast)) => assert_eq!(fast, value, "recorded texts differ on {text:?}"),
        (Some(_), None) => panic!("a simple form whose recorded text fell back: {text:?}"),
        (None, _) => assert!(s.recorded_escaped.is_none(), "escaped without a form: {text:?}"),
    }
    match (&s.recorded_fast, &s.recorded_escaped) {
        (Some((t, false)), Some(e)) => {
            let want = serde_json::to_string(t).expect("a string serializes");
            assert_eq!(want, format!("\"{e}\""), "escaped text differs on {text:?}");
        }
        (Some((_, false)), None) => panic!("an uncut recorded text not escaped: {text:?}"),
        (Some((_, true)) | None, Some(e)) => panic!("escaped {e:?} of a cut or absent text"),
        _ => {}
    }
});
