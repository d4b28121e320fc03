//! RFC 8785 (JCS) canonical JSON and its SHA-256, from untrusted text: `arguments_sha256`
//! (SPEC §4.1) and the tool definition digest of pins and `tool_definition_sha256` (SPEC §5.1).
//!
//! Two writers of one form: [`simple`] transcribes the common subset (ASCII keys without
//! escapes, strings without escapes, short integers) straight from the text; [`full`] handles
//! every text as a visitor of the strict scanner. Neither builds a `serde_json::Value`, and the
//! general one is bounded: a canonical form longer than the text plus [`SLACK`] (only numbers
//! written in exponent form grow, `1e20` → `100000000000000000000`) is refused rather than built.
//! Both write the form as a `String`, from pieces of the text and ASCII: whoever reads it as text
//! (the recorded arguments of SPEC §5.2, a tool definition's canonical text) does not validate
//! it again.
#![forbid(unsafe_code)]

mod full;
mod simple;

use crate::sha256::HexDigest;

/// How much longer than its text a canonical form may be.
pub(crate) const SLACK: usize = 64 * 1024;

/// Scratch buffers kept between calls at most this large.
const KEPT: usize = 64 * 1024;

/// The SHA-256 of the canonical form of `text` (one JSON value), using `scratch` as the buffer
/// (reused call after call). `None` when `text` is not strict JSON or its canonical form would
/// be longer than `text.len() + SLACK`.
#[cfg(test)]
pub(crate) fn digest(text: &str, scratch: &mut String) -> Option<HexDigest> {
    digest_and(text, scratch, |_| ()).map(|(d, ())| d)
}

/// [`digest`], and what `then` makes of the canonical form when the simple transcription
/// ([`simple`]) wrote it: `then` is given that form, or `None` when the general canonicalizer
/// wrote it. `None` (and `then` not called) when there is no canonical form.
fn digest_and<R>(
    text: &str,
    scratch: &mut String,
    then: impl FnOnce(Option<&str>) -> R,
) -> Option<(HexDigest, R)> {
    let out = write_form(text, scratch).map(|simple| {
        let form: &str = scratch;
        (HexDigest::of(form.as_bytes()), then(simple.then_some(form)))
    });
    if scratch.capacity() > KEPT {
        // Do not keep a huge text's buffer.
        *scratch = String::new();
    }
    out
}

/// The canonical form of `text` (one JSON value) as a string: `None` when `text` is not strict
/// JSON or its canonical form would be longer than `text.len() + SLACK`.
pub(crate) fn canonical_text(text: &str) -> Option<String> {
    let mut out = String::new();
    write_form(text, &mut out).map(|_| out)
}

/// Writes the canonical form of `text` into `out` (cleared first): `Some(true)` when the simple
/// transcription wrote it, `Some(false)` when the general canonicalizer did, `None` when there
/// is none.
fn write_form(text: &str, out: &mut String) -> Option<bool> {
    let limit = bound(text);
    if simple::canonicalize_simple(text, out, limit) {
        return Some(true);
    }
    full::canonicalize(text, out, limit).then_some(false)
}

/// The longest canonical form of `text` either writer writes: [`SLACK`] more than the text.
fn bound(text: &str) -> usize {
    text.len().saturating_add(SLACK)
}

/// [`digest`] with a buffer the calling thread keeps.
pub(crate) fn digest_of(text: &str) -> Option<HexDigest> {
    digest_of_and(text, |_| ()).map(|(d, ())| d)
}

/// [`digest_of`], and what `then` makes of the canonical form when the simple transcription
/// wrote it (`then` is given `None` when the general canonicalizer did): the recorded
/// arguments are made from the transcription the digest hashes.
pub(crate) fn digest_of_and<R>(
    text: &str,
    then: impl FnOnce(Option<&str>) -> R,
) -> Option<(HexDigest, R)> {
    thread_local! {
        static SCRATCH: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    SCRATCH.with(|s| match s.try_borrow_mut() {
        Ok(mut scratch) => digest_and(text, &mut scratch, then),
        Err(_) => digest_and(text, &mut String::new(), then),
    })
}

/// The forms the two writers make of `text`: the simple transcription's (`None` when it
/// declines) and the general canonicalizer's (`None` when it refuses), for the fuzz target that
/// holds them to each other (`crate::fuzzing::canonical_summary`).
pub(crate) fn both_forms(text: &str) -> (Option<String>, Option<String>) {
    let mut simple_form = String::new();
    let mut full_form = String::new();
    (
        simple::canonicalize_simple(text, &mut simple_form, bound(text)).then_some(simple_form),
        full::canonicalize(text, &mut full_form, bound(text)).then_some(full_form),
    )
}

#[cfg(test)]
mod tests;
