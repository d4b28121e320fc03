//! Server lines that cannot answer any of the client's `tools/list` requests, told without the
//! walk — for the session that only *learns* from answers (no filter in effect).
//!
//! Without the filter, every server line is forwarded byte-exact whatever it holds (a line the
//! strict rules cannot read included); the walk only finds the well-formed candidates whose tools
//! the session remembers (SPEC §5.1). A candidate is a message with an id member (`id` or a
//! lenient variant, [`walk::member`]) whose value the id set matches. So a line in which no such
//! member's value matches holds no candidate, and the walk can be skipped.
//!
//! The check reads only lines without a backslash. In a JSON text without escapes every `"`
//! opens or closes a string, so the strings are the texts between consecutive pairs of quotes,
//! and a string followed by `:` (after whitespace) is an object key. For every key the walk
//! would take for an id, at any depth (a superset of the message-level ones), the value that
//! follows is looked up as the walk would look it up: a string from quote to quote, a number as
//! its token. A value of any other kind is no id at all ([`IdSet::find`] finds none). A line
//! that is not a JSON text holds no candidate either (the walk refuses it, and without the
//! filter it is forwarded unchanged), whatever the check says.
//!
//! Anything the check is unsure of — a backslash, a key or string that is not UTF-8 — leaves
//! the line to the walk.
#![forbid(unsafe_code)]

use super::walk;
use crate::proxy::rpc_id::{IdSet, number_token_len};

/// Whether `line` certainly holds no message that answers one of `ids`. `false` means "maybe":
/// the walk decides.
pub(super) fn answers_none(line: &[u8], ids: &IdSet) -> bool {
    let byte = |at: usize| line.get(at).copied();
    // Every quote and backslash, in order, in one pass.
    let mut marks = memchr::memchr2_iter(b'"', b'\\', line);
    let mut quote = || match marks.next() {
        Some(at) if byte(at) == Some(b'"') => Ok(Some(at)),
        Some(_) => Err(()),
        None => Ok(None),
    };
    loop {
        // A backslash: escapes, the walk decides. No quote left, or an unterminated string
        // (not a JSON text): nothing is an answer.
        let (open, close) = match (quote(), quote()) {
            (Err(()), _) | (_, Err(())) => return false,
            (Ok(Some(open)), Ok(Some(close))) => (open, close),
            _ => return true,
        };
        let after = skip_ws(line, close + 1);
        if byte(after) != Some(b':') {
            continue;
        }
        // The walk's id keys are two characters (a raw NUL, which lenient normalization would
        // strip, makes the text unreadable): at most eight bytes.
        let raw = line.get(open + 1..close).unwrap_or(&[]);
        if raw.len() > 8 {
            continue;
        }
        let Ok(key) = std::str::from_utf8(raw) else {
            return false;
        };
        if walk::member(key, key.is_ascii(), "id").is_none() {
            continue;
        }
        let start = skip_ws(line, after + 1);
        let end = match byte(start) {
            // Only whitespace and `:` lie between the key and its value: the next quote opens it.
            Some(b'"') => match (quote(), quote()) {
                (Ok(Some(open)), Ok(Some(close))) if open == start => close + 1,
                (Ok(None), _) | (Ok(Some(_)), Ok(None)) => return true,
                _ => return false,
            },
            Some(b'-' | b'0'..=b'9') => start + number_token_len(line.get(start..).unwrap_or(&[])),
            // An object, an array, a literal: no id any client matches.
            _ => continue,
        };
        let Ok(value) = std::str::from_utf8(line.get(start..end).unwrap_or(&[])) else {
            return false;
        };
        if ids.find(value).is_some() {
            return false;
        }
    }
}

fn skip_ws(line: &[u8], mut at: usize) -> usize {
    while matches!(line.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::super::{Finder, candidates::Candidates};
    use super::*;

    /// Whether the walk finds a candidate in `line` (what the check must never deny).
    fn walk_finds_one(line: &[u8], ids: &IdSet) -> bool {
        let Ok(text) = std::str::from_utf8(line) else {
            return false;
        };
        let mut finder = Finder {
            ids,
            out: Candidates::default(),
            spelled: BTreeMap::new(),
        };
        walk::walk(text, &mut finder).is_ok() && !finder.out.list.is_empty()
    }

    /// Keys the walk reads as ids, decoys, and the members of an answer.
    const KEYS: &[&str] = &[
        "id", "ID", "Id", "\u{131}d", "\u{130}D", "\\u0069d", "i", "idd", "result", "Result",
        "tools", "name", "x", "\u{e9}",
    ];

    /// Ids of every kind and spelling, and values that are no ids.
    const SCALARS: &[&str] = &[
        "0",
        "-0",
        "0.0",
        "0e3",
        "1",
        "7",
        "7.0",
        "70e-1",
        "0.7E+1",
        "1e400",
        "\"0\"",
        "\" 0\"",
        "\"0x0\"",
        "\"a\"",
        "\"A\"",
        "\"7\"",
        "\"id\"",
        "\"\\u0030\"",
        "null",
        "true",
        "\"\u{e9}\"",
    ];

    const SPACES: &[&str] = &["", " ", "\t", "\r\n "];

    /// JSON texts built of those pieces, nested a few levels.
    fn json() -> impl Strategy<Value = String> {
        let leaf = prop::sample::select(SCALARS).prop_map(str::to_string);
        leaf.prop_recursive(4, 32, 6, |inner| {
            let space = prop::sample::select(SPACES);
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec((prop::sample::select(KEYS), space, inner), 0..5).prop_map(
                    |members| {
                        let m: Vec<String> = members
                            .into_iter()
                            .map(|(k, ws, v)| format!("\"{k}\"{ws}:{ws}{v}"))
                            .collect();
                        format!("{{{}}}", m.join(","))
                    }
                ),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        /// Whatever the line, a line the check lets pass holds no candidate the walk would find.
        #[test]
        fn never_denies_a_candidate_the_walk_finds(
            text in json(),
            id in (prop::sample::select(&KEYS[..6]), prop::sample::select(SCALARS)),
            shaped in any::<bool>(),
            batch in any::<bool>(),
            flip in prop::option::of((any::<prop::sample::Index>(), any::<u8>())),
            which in 0usize..4,
        ) {
            // Often an answer's envelope around the text, with an id member.
            let text = if shaped {
                format!("{{\"{}\":{},\"result\":{{\"tools\":[{text}]}}}}", id.0, id.1)
            } else {
                text
            };
            let mut line = if batch { format!("[{text}]\n") } else { format!("{text}\n") }.into_bytes();
            // Sometimes one byte changed: lines that are not JSON texts, or other ones.
            if let Some((at, b)) = flip {
                let i = at.index(line.len());
                line[i] = b;
            }
            let set = ids(&[["0", "\"a\"", "7", "\"0\""][which]]);
            if answers_none(&line, &set) {
                prop_assert!(!walk_finds_one(&line, &set), "{}", String::from_utf8_lossy(&line));
            }
        }

        /// Well-formed answers with the id member in any of its spellings and places.
        #[test]
        fn answers_with_a_matching_id_go_to_the_walk(
            key in prop::sample::select(vec!["id", "ID", "Id", "iD", "\u{131}d"]),
            id in prop::sample::select(vec!["0", "-0", "0.0", "0e5", "\"0\"", "\" 0 \"", "\"0.0\""]),
            ws in prop::sample::select(vec!["", " ", "\t", " \n "]),
            first in any::<bool>(),
        ) {
            let member = format!("\"{key}\"{ws}:{ws}{id}");
            let body = "\"result\":{\"tools\":[{\"name\":\"t\"}]}";
            let line = if first {
                format!("{{{member},{body}}}\n")
            } else {
                format!("{{{body},{member}}}\n")
            };
            let set = ids(&["0"]);
            prop_assert!(walk_finds_one(line.as_bytes(), &set), "{line}");
            prop_assert!(!answers_none(line.as_bytes(), &set), "{line}");
        }
    }

    fn ids(list: &[&str]) -> IdSet {
        let mut s = IdSet::new(16);
        for id in list {
            s.insert(id);
        }
        s
    }

    #[test]
    fn tells_other_answers_apart_and_leaves_the_rest_to_the_walk() {
        let set = ids(&["0", "\"a\""]);
        for (line, none) in [
            (r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#, true),
            (r#"{"jsonrpc":"2.0","id":0,"result":{"tools":[]}}"#, false),
            // The ways a client matches the id 0 or "a".
            (r#"{"id" : -0.0e1 ,"result":{}}"#, false),
            (r#"{"id":"0","result":{}}"#, false),
            (r#"{"ID":0,"result":{}}"#, false),
            (r#"{"iD":"a","result":{}}"#, false),
            ("{\"\u{131}d\":0,\"result\":{}}", false),
            // At any depth.
            (r#"{"id":5,"result":{"x":[{"id":0}]}}"#, false),
            // Escapes: the walk decides.
            (r#"{"\u0069d":7,"result":{}}"#, false),
            (r#"{"id":7,"result":{"t":"\""}}"#, false),
            // Not ids: a string value "id", ids of other kinds, other numbers.
            (r#"{"id":2,"result":{"k":"id","v":["id", 0]}}"#, true),
            (r#"{"id":null,"error":{}}"#, true),
            (r#"{"id":{"x":0},"result":{}}"#, true),
            (r#"{"id":"b","result":{}}"#, true),
        ] {
            assert_eq!(answers_none(line.as_bytes(), &set), none, "{line}");
        }
        let saturated = {
            let mut s = IdSet::new(1);
            s.insert("1");
            s.insert("2");
            s
        };
        assert!(!answers_none(br#"{"id":9,"result":{}}"#, &saturated));
        assert!(answers_none(br#"{"result":{}}"#, &saturated));
    }
}
