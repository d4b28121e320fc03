//! The one pass against the passes it replaced: the answer gate's glance (quotes and
//! backslashes by `memchr2`) and `client_features`' look for a request (a byte loop).

use super::*;
use proptest::prelude::*;

// The glance as it was, the oracle.
/// What a glance at a line tells.
#[derive(Debug, PartialEq, Eq)]
enum OldGlance {
    /// No key is a `result` or an `error`: no message of the line is a response.
    NoResponse,
    /// Exactly one id key and one answer key: a single response if its spelling is the common
    /// one.
    Single,
    /// The walk decides.
    Unsure,
}

/// Looks at the keys of a line without backslashes (see the module documentation).
fn old_glance(line: &[u8]) -> OldGlance {
    let byte = |at: usize| line.get(at).copied();
    let mut marks = QuotesAndEscapes { line, at: 0 };
    let mut quote = || match marks.next() {
        Some(at) if byte(at) == Some(b'"') => Ok(Some(at)),
        Some(_) => Err(()),
        None => Ok(None),
    };
    let (mut ids, mut answers) = (0usize, 0usize);
    loop {
        let (open, close) = match (quote(), quote()) {
            (Err(()), _) | (_, Err(())) => return OldGlance::Unsure,
            (Ok(Some(open)), Ok(Some(close))) => (open, close),
            (Ok(None), _) => break,
            // An unterminated string: not a JSON text; the tolerant reading decides.
            (Ok(Some(_)), Ok(None)) => return OldGlance::Unsure,
        };
        if byte(skip_ws(line, close + 1)) != Some(b':') {
            continue;
        }
        // Lenient variants of `id`, `result` and `error` are at most a few bytes longer.
        let raw = line.get(open + 1..close).unwrap_or(&[]);
        if raw.len() > 16 {
            continue;
        }
        // A raw control character (a NUL that lenient normalization strips included): the
        // line is no JSON text a strict reader takes, and the tolerant reading decides.
        let Some(key) = std::str::from_utf8(raw)
            .ok()
            .filter(|k| !k.bytes().any(|b| b < 0x20))
        else {
            return OldGlance::Unsure;
        };
        let plain = key.is_ascii();
        if crate::proxy::tools_list::walk::member(key, plain, "id").is_some() {
            ids += 1;
        } else if crate::proxy::tools_list::walk::member(key, plain, "result").is_some()
            || crate::proxy::tools_list::walk::member(key, plain, "error").is_some()
        {
            answers += 1;
        }
    }
    // A response has a `result` or an `error` member: without one anywhere, nothing is.
    match (ids, answers) {
        (_, 0) => OldGlance::NoResponse,
        (1, 1) => OldGlance::Single,
        _ => OldGlance::Unsure,
    }
}

/// The positions of `"` and `\` in a line, in order: a short stretch is searched byte by byte
/// (an answer's keys sit a few bytes apart, and a fresh vectorized search per quote costs more
/// than the bytes it skips), a long one with `memchr2`.
struct QuotesAndEscapes<'a> {
    line: &'a [u8],
    at: usize,
}

impl Iterator for QuotesAndEscapes<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        const SHORT: usize = 32;
        let rest = self.line.get(self.at..)?;
        let head = rest.get(..SHORT).unwrap_or(rest);
        let found = match head.iter().position(|b| matches!(b, b'"' | b'\\')) {
            Some(i) => i,
            None if rest.len() > SHORT => SHORT + memchr::memchr2(b'"', b'\\', rest.get(SHORT..)?)?,
            None => return None,
        };
        let at = self.at + found;
        self.at = at + 1;
        Some(at)
    }
}

fn skip_ws(line: &[u8], mut at: usize) -> usize {
    while matches!(line.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// The look for a request as it was (`client_features::may_hold_request`), the oracle.
fn old_may_hold_request(line: &[u8]) -> bool {
    line.iter().enumerate().any(|(at, b)| match b {
        b'\\' | 0x80..=0xff => true,
        b'm' | b'M' => line
            .get(at..at + WORD.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(WORD)),
        _ => false,
    })
}

fn same(line: &[u8]) -> Result<(), TestCaseError> {
    let old = match old_glance(line) {
        OldGlance::NoResponse => Glance::NoResponse,
        OldGlance::Single => Glance::Single,
        OldGlance::Unsure => Glance::Unsure,
    };
    let without = read(line, false);
    prop_assert_eq!(without.glance, old);
    prop_assert_eq!(without.may_hold_request, None);
    let with = read(line, true);
    prop_assert_eq!(with.glance, old);
    prop_assert_eq!(with.may_hold_request, Some(old_may_hold_request(line)));
    Ok(())
}

/// Bytes that are marks, parts of keys, and anything.
fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            Just(b'"'),
            Just(b'\\'),
            Just(b':'),
            Just(b' '),
            Just(b'm'),
            Just(b'M'),
            Just(b'e'),
            Just(b't'),
            Just(b'h'),
            Just(b'o'),
            Just(b'd'),
            Just(b'i'),
            Just(b'r'),
            Just(b's'),
            Just(0xc4),
            Just(0xb1),
            Just(0),
            any::<u8>()
        ],
        0..120,
    )
}

/// Lines made of keys and values: ids, answers, methods, decoys.
fn lines() -> impl Strategy<Value = Vec<u8>> {
    let key = prop::sample::select(vec![
        "id",
        "ID",
        "\u{131}d",
        "\\u0069d",
        "result",
        "eRRor",
        "error",
        "method",
        "METHOD",
        "m\u{e9}thod",
        "x",
        "resultType",
        "a_long_key_of_many_bytes",
    ]);
    let value = prop::sample::select(vec!["1", "\"a\"", "{}", "[]", "\"method\"", "null"]);
    prop::collection::vec(
        (key, value, prop::sample::select(vec!["", " ", "\t"])),
        0..8,
    )
    .prop_map(|members| {
        let m: Vec<String> = members
            .into_iter()
            .map(|(k, v, ws)| format!("\"{k}\"{ws}:{ws}{v}"))
            .collect();
        format!("{{\"jsonrpc\":\"2.0\",{}}}\n", m.join(",")).into_bytes()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn one_pass_is_the_glance_and_the_look_on_any_bytes(line in bytes()) {
        same(&line)?;
    }

    #[test]
    fn one_pass_is_the_glance_and_the_look_on_lines(
        line in lines(),
        flip in prop::option::of((any::<prop::sample::Index>(), any::<u8>())),
    ) {
        let mut line = line;
        if let Some((at, b)) = flip {
            let i = at.index(line.len());
            line[i] = b;
        }
        same(&line)?;
    }
}

#[test]
fn the_look_reads_past_where_the_glance_stops() {
    for (line, held) in [
        (
            &br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#[..],
            Some(false),
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"result":{"text":"meth od"}}"#,
            Some(false),
        ),
        (
            br#"{"jsonrpc":"2.0","id":"s","METHOD":"roots/list"}"#,
            Some(true),
        ),
        (
            br#"{"jsonrpc":"2.0","id":"s","m\u0065thod":"x"}"#,
            Some(true),
        ),
        (br#"{"x":"trailing Metho"}method"#, Some(true)),
        ("{\"m\u{e9}thod\":1}".as_bytes(), Some(true)),
        // A raw control character in a key stops the glance before the end: the look goes on.
        (b"{\"a\x01\":1,\"b\":2}", Some(false)),
        (b"{\"a\x01\":1,\"method\":2}", Some(true)),
        (b"", Some(false)),
    ] {
        assert_eq!(
            read(line, true).may_hold_request,
            held,
            "{}",
            String::from_utf8_lossy(line)
        );
    }
}
