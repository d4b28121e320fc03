use proptest::prelude::*;

use super::*;
use crate::proxy::tools_list::walk::{self, Hooks, MessageInfo};

/// What the streaming scanner reads of `line`, fed in chunks of `chunk` bytes.
fn streamed(line: &[u8], chunk: usize) -> Vec<(bool, Option<String>)> {
    let mut scan = StreamScan::new();
    let mut out = Vec::new();
    for part in line.chunks(chunk.max(1)) {
        scan.feed(part, &mut |s: Seen<'_>| {
            out.push((s.response, s.id.map(str::to_owned)))
        });
    }
    out
}

/// What the strict walk (the server path's reading of a line it keeps) reads of `line`.
fn strict(line: &str) -> Option<Vec<(bool, Option<String>)>> {
    struct Rec(Vec<(bool, Option<String>)>);
    impl<'a> Hooks<'a> for Rec {
        fn message(&mut self, m: &MessageInfo<'a>) {
            self.0
                .push((m.has_result || m.has_error, m.id.map(str::to_owned)));
        }
    }
    let mut r = Rec(Vec::new());
    walk::walk(line, &mut r).ok()?;
    Some(r.0)
}

/// The strict reading with the ids the streaming scanner refuses to take (not a string or
/// number, or longer than its bound) removed.
fn comparable(v: Vec<(bool, Option<String>)>) -> Vec<(bool, Option<String>)> {
    v.into_iter()
        .map(|(r, id)| {
            let id = id.filter(|id| {
                id.len() <= MAX_ID_BYTES && matches!(id.as_bytes()[0], b'"' | b'-' | b'0'..=b'9')
            });
            (r, id)
        })
        .collect()
}

fn one(line: &str) -> Vec<(bool, Option<String>)> {
    let whole = streamed(line.as_bytes(), line.len());
    for chunk in [1, 2, 3, 7] {
        assert_eq!(
            streamed(line.as_bytes(), chunk),
            whole,
            "chunk {chunk}: {line}"
        );
    }
    whole
}

fn resp(id: &str) -> Vec<(bool, Option<String>)> {
    vec![(true, Some(id.to_owned()))]
}

#[test]
fn reads_the_id_of_a_response_whatever_its_spelling() {
    assert_eq!(one(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#), resp("7"));
    assert_eq!(
        one(r#"{"result":{"x":"y"},"id":"a\"b"}"#),
        resp(r#""a\"b""#)
    );
    assert_eq!(
        one(r#" { "\u0069d" : -1.5e3 , "error" : {} } "#),
        resp("-1.5e3")
    );
    // A lenient variant of the key is the key (as the walk reads it).
    assert_eq!(one(r#"{"ID":1,"Result":2}"#), resp("1"));
    assert_eq!(one(r#"{"id":"\u00e9","result":1}"#), resp(r#""\u00e9""#));
}

#[test]
fn strings_and_nested_objects_do_not_fool_it() {
    let line = r#"{"jsonrpc":"2.0","result":{"id":9,"text":"\"id\":5,{[}]\\","nested":[{"id":3,"error":1}]},"id":2}"#;
    assert_eq!(one(line), resp("2"));
    // A key string holding `id` is not `id`.
    assert_eq!(one(r#"{"x\"id":1,"id":4,"result":"\"id\":8"}"#), resp("4"));
    // A request or notification is no response.
    assert_eq!(
        one(r#"{"id":1,"method":"ping","params":{"result":1}}"#),
        vec![(false, Some("1".to_owned()))]
    );
}

#[test]
fn ambiguous_ids_are_unreadable() {
    // Two ids (by lenient class), an escaped duplicate included.
    assert_eq!(
        one(r#"{"id":1,"\u0069d":2,"result":{}}"#),
        vec![(true, None)]
    );
    assert_eq!(one(r#"{"id":1,"Id":1,"result":{}}"#), vec![(true, None)]);
    // Not a string or a number.
    assert_eq!(one(r#"{"id":{"a":1},"result":{}}"#), vec![(true, None)]);
    assert_eq!(one(r#"{"id":[1],"result":{}}"#), vec![(true, None)]);
    assert_eq!(one(r#"{"id":null,"result":{}}"#), vec![(true, None)]);
    assert_eq!(one(r#"{"id":true,"result":{}}"#), vec![(true, None)]);
    // A raw control character in the id; a key too long to classify.
    assert_eq!(one("{\"id\":\"a\u{1}\",\"result\":{}}"), vec![(true, None)]);
    let long_key = format!(r#"{{"{}":1,"id":1,"result":{{}}}}"#, "k".repeat(300));
    assert_eq!(one(&long_key), vec![(true, None)]);
    // An id at the bound is kept, one byte over is not.
    let at = format!(r#""{}""#, "i".repeat(MAX_ID_BYTES - 2));
    assert_eq!(one(&format!(r#"{{"id":{at},"result":0}}"#)), resp(&at));
    let over = format!(r#""{}""#, "i".repeat(MAX_ID_BYTES - 1));
    assert_eq!(
        one(&format!(r#"{{"id":{over},"result":0}}"#)),
        vec![(true, None)]
    );
}

#[test]
fn broken_lines_report_what_closed_before_the_break() {
    // Unterminated (a line that ends without its newline at EOF, cut short).
    assert_eq!(one(r#"{"id":1,"result":{"text":"abc"#), vec![]);
    // Mismatched brackets.
    assert_eq!(one(r#"{"id":1,"result":[}]"#), vec![]);
    // A second text after the first: the first was read, the second is not.
    assert_eq!(one(r#"{"id":1,"result":1}{"id":2,"result":1}"#), resp("1"));
}

#[test]
fn a_batch_reports_each_element() {
    let line = r#"[{"id":1,"result":{"id":5}},3,"x",{"method":"n"},{"id":"b","error":{}},[{"id":9,"result":1}]]"#;
    assert_eq!(
        one(line),
        vec![
            (true, Some("1".to_owned())),
            (false, None),
            (true, Some("\"b\"".to_owned())),
        ]
    );
    let mut scan = StreamScan::new();
    scan.feed(b" [", &mut |_| {});
    assert_eq!(scan.batch(), Some(true));
}

/// A JSON value of the shapes a server answers with, ids, keys and strings drawn from the
/// spellings that matter.
fn value(depth: u32) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        Just("1".to_owned()),
        Just("-0.5e2".to_owned()),
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just(r#""a\"b\\""#.to_owned()),
        Just(r#""\"id\":1,{[""#.to_owned()),
        Just(r#""\u0069d""#.to_owned()),
        "[a-z0-9 ]{0,6}".prop_map(|s| format!("\"{s}\"")),
    ];
    if depth == 0 {
        return leaf.boxed();
    }
    prop_oneof![
        2 => leaf,
        1 => prop::collection::vec(value(depth - 1), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
        1 => prop::collection::vec((key(), value(depth - 1)), 0..4).prop_map(object),
    ]
    .boxed()
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("id".to_owned()),
        Just(r"\u0069d".to_owned()),
        Just("ID".to_owned()),
        Just("result".to_owned()),
        Just("Error".to_owned()),
        Just(r"res\u0075lt".to_owned()),
        Just("jsonrpc".to_owned()),
        Just("method".to_owned()),
        Just(r#"x\"id"#.to_owned()),
        "[a-z]{1,5}",
    ]
}

fn object(members: Vec<(String, String)>) -> String {
    let body: Vec<String> = members
        .iter()
        .map(|(k, v)| format!("\"{k}\" : {v}"))
        .collect();
    format!("{{ {} }}", body.join(","))
}

fn line() -> impl Strategy<Value = String> {
    let message = prop::collection::vec((key(), value(2)), 0..5)
        .prop_map(object)
        .boxed();
    prop_oneof![
        3 => message.clone(),
        1 => prop::collection::vec(prop_oneof![4 => message, 1 => value(1)], 1..4)
            .prop_map(|v| format!("[{}]", v.join(","))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// On every line the strict rules take, the streaming scanner reads the same messages, the
    /// same responses and the same ids (but for ids it refuses to take: not a string or number),
    /// in chunks of any size; on a line they refuse for a duplicate key it takes no id the
    /// strict reading would not.
    #[test]
    fn the_streaming_scanner_agrees_with_the_strict_walk(line in line(), chunk in 1usize..40) {
        let got = streamed(line.as_bytes(), chunk);
        match strict(&line) {
            Some(expected) => prop_assert_eq!(got, comparable(expected)),
            None => {
                for (_, id) in got.iter() {
                    if let Some(id) = id {
                        prop_assert!(line.contains(id.as_str()));
                    }
                }
            }
        }
    }
}

/// Each message's `method` flag, fed in chunks of every small size.
fn requests(line: &str) -> Vec<(bool, bool, Option<String>)> {
    let read = |chunk: usize| {
        let mut scan = StreamScan::new();
        let mut out = Vec::new();
        for part in line.as_bytes().chunks(chunk) {
            scan.feed(part, &mut |s: Seen<'_>| {
                out.push((s.response, s.request, s.id.map(str::to_owned)))
            });
        }
        out
    };
    let whole = read(line.len().max(1));
    for chunk in [1, 2, 3, 7] {
        assert_eq!(read(chunk), whole, "chunk {chunk}: {line}");
    }
    whole
}

#[test]
fn a_method_member_marks_a_request_or_notification() {
    let some = |s: &str| Some(s.to_owned());
    assert_eq!(
        requests(r#"{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}"#),
        vec![(false, true, some(r#""s1""#))]
    );
    // Escaped and lenient spellings are the key; a `method` inside params or a string is not.
    assert_eq!(
        requests(r#"{"\u006dethod":"x","params":{"data":"\"method\":1"}}"#),
        vec![(false, true, None)]
    );
    assert_eq!(requests(r#"{"Method":"x"}"#), vec![(false, true, None)]);
    assert_eq!(
        requests(r#"{"id":3,"result":{"method":"x"}}"#),
        vec![(true, false, some("3"))]
    );
    // In a batch, element by element.
    assert_eq!(
        requests(r#"[{"method":"a"},{"id":1,"result":{}},{"id":2,"method":"b"}]"#),
        vec![
            (false, true, None),
            (true, false, some("1")),
            (false, true, some("2"))
        ]
    );
}
