//! Fuzzes the resource-URI judge (SPEC §5.2; issue 46 item 1; docs/decisions.md, "Every reading
//! of a resource URI"): under a policy that denies three canonical URIs, no URI is allowed that a
//! server's SDK reads as one of them — as written, as the WHATWG URL parser serializes it (what
//! the TypeScript SDK looks resources up by), percent-decoded once (the Python SDK 2.x template
//! matcher), or the two combined. The readings are recomputed here, independently of the
//! wrapper's composition of them; a `file:` URI is decoded once (by `within`), so the form
//! decoded and then parsed — a second decoding — is not one of its readings. The judge never
//! panics and never answers `error` for a string URI.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use assay::{Decision, Policy};
use libfuzzer_sys::fuzz_target;

const POLICY: &str = "version: \"1\"\nallow: [\"*\"]\nresources:\n  deny: [\"test://static/resource/1\", \"https://internal.example/secret\", \"file:///workspace/.env\"]\n";
const DENIED: [&str; 3] = [
    "test://static/resource/1",
    "https://internal.example/secret",
    "file:///workspace/.env",
];

fn policy() -> &'static Policy {
    static P: OnceLock<Policy> = OnceLock::new();
    P.get_or_init(|| Policy::from_bytes(POLICY.as_bytes(), Path::new("fuzz.yaml")).expect("policy"))
}

/// Node's `new URL(s).toString()`, or `None` when it throws.
fn whatwg(s: &str) -> Option<String> {
    url::Url::parse(s).ok().map(String::from)
}

/// Every `%XX` decoded once; `None` when the result is not UTF-8.
fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .filter(|h| b[i] == b'%' && h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

fuzz_target!(|data: &[u8]| {
    let Ok(uri) = std::str::from_utf8(data) else {
        return;
    };
    let verdict = policy()
        .evaluate_resource(Some(uri))
        .expect("the resources section is governed");
    assert_ne!(verdict.decision, Decision::Error, "{uri:?}");
    if verdict.decision != Decision::Allow {
        return;
    }
    let file = uri
        .split_once(':')
        .is_some_and(|(s, _)| s.eq_ignore_ascii_case("file"));
    let mut readings = vec![uri.to_owned()];
    if let Some(w) = whatwg(uri) {
        readings.extend(decode(&w));
        readings.push(w);
    }
    if let Some(d) = decode(uri) {
        if !file {
            readings.extend(whatwg(&d));
        }
        readings.push(d);
    }
    for r in &readings {
        assert!(
            !DENIED.contains(&r.as_str()),
            "{uri:?} is allowed, but a server reads it as the denied {r:?}"
        );
    }
});
