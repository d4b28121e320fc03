//! The listing filter of governed lists, judged through the answer gate as the proxy runs it.

use proptest::prelude::*;

use super::*;
use crate::methods;
use crate::proxy::answers::{Gate, judge as gate};
use crate::proxy::pending::{PendingRequests, RequestKind};

fn policy() -> Policy {
    Policy::from_bytes(
        b"version: \"1\"\nallow: [\"*\"]\nhide_refused_tools: true\nprompts:\n  deny: [\"debug_*\"]\n\
          resources:\n  deny: [\"file:///workspace/.env\"]\n",
        std::path::Path::new("p.yaml"),
    )
    .unwrap()
}

const PROMPTS: RequestKind = RequestKind::Read(&methods::PROMPTS_LIST);
const RESOURCES: RequestKind = RequestKind::Read(&methods::RESOURCES_LIST);

/// What the listing filter makes of `line` after the client sent `requests`: what the client
/// gets (the gate's trimmed line when it trimmed one) and the listings.
fn through(requests: &[(&str, RequestKind)], line: &str) -> (String, Vec<(ListKind, Listing)>) {
    let pending = PendingRequests::new();
    for (id, kind) in requests {
        pending.note(id, *kind);
    }
    let (line, answered) = match gate(line.as_bytes(), &pending).gate {
        Gate::Forward(a) => (line.to_string(), a),
        Gate::Trimmed(t, a) => (String::from_utf8(t).unwrap(), a),
        _ => panic!("the gate keeps {line}"),
    };
    match judge(&policy(), line.as_bytes(), &answered) {
        None => (line, Vec::new()),
        Some(f) => (
            f.line
                .map(|l| String::from_utf8(l).unwrap())
                .unwrap_or(line),
            f.listings,
        ),
    }
}

/// The withheld error for request `id` with `why`, as one line.
fn error_line(id: &str, why: &str) -> String {
    let mut e = withheld_error(Some(id), &format!("server answer withheld: {why}"));
    e.push(b'\n');
    String::from_utf8(e).unwrap()
}

fn digest(entry: &str) -> Option<HexDigest> {
    crate::canonical::digest_of(entry)
}

/// SPEC §5.2 (issue 46 item 6): a server batch is judged element by element — a list answer
/// is filtered as on its own line, an unreadable one becomes the error for its id alone, and
/// the other answers of the batch reach the client unchanged.
#[test]
fn a_batch_is_judged_element_by_element() {
    let line = r#"[{"jsonrpc":"2.0","id":1,"result":{"prompts":[{"name":"greet"},{"name":"debug_dump"}]}},{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"call answer"}]}},{"jsonrpc":"2.0","id":3,"result":{"Resources":[]}}]"#;
    let (out, listings) = through(
        &[("1", PROMPTS), ("2", RequestKind::Other), ("3", RESOURCES)],
        &format!("{line}\n"),
    );
    let error = error_line("3", "it cannot be read as a resources/list result");
    // Byte-exact but for the removed prompt and the replaced answer.
    assert_eq!(
        out,
        format!(
            r#"[{{"jsonrpc":"2.0","id":1,"result":{{"prompts":[{{"name":"greet"}}]}}}},{{"jsonrpc":"2.0","id":2,"result":{{"content":[{{"type":"text","text":"call answer"}}]}}}},{}]"#,
            error.trim_end()
        ) + "\n"
    );
    assert_eq!(listings.len(), 2);
    assert_eq!(listings[0].0.method(), methods::PROMPTS_LIST.name);
    assert_eq!(
        listings[0].1,
        Listing {
            request_id: "1".into(),
            shown: vec![("greet".into(), digest(r#"{"name":"greet"}"#))],
            removed: vec![(
                "debug_dump".into(),
                digest(r#"{"name":"debug_dump"}"#),
                ReasonCode::P_PROMPT_DENIED
            )],
            replaced_by_error: false,
        }
    );
    assert_eq!(listings[1].0.method(), methods::RESOURCES_LIST.name);
    assert!(listings[1].1.replaced_by_error);
    // A batch whose list answers lose nothing is forwarded byte for byte.
    let kept = r#"[{"jsonrpc":"2.0","id":1,"result":{"prompts":[{"name":"greet"}]}},{"jsonrpc":"2.0","id":2,"result":{}}]"#;
    let (out, listings) = through(
        &[("1", PROMPTS), ("2", RequestKind::Other)],
        &format!("{kept}\n"),
    );
    assert_eq!(out, format!("{kept}\n"));
    assert_eq!(listings.len(), 1);
}

/// Everything outside the list array is the server's bytes (whitespace, member order, escapes,
/// `\r\n`); inside it, the kept entries byte-exact joined by `,`. An escaped key is the member.
#[test]
fn an_edited_answer_is_byte_exact_outside_the_removed_entries() {
    let line = "{ \"result\" : {\"nextCursor\":\"c\", \"resources\" : [ {\"\\u0075ri\":\"file:///workspace/.env\"} ,\n\t{\"name\":\"a\", \"uri\" : \"file:///w/a\"}\t, {\"uri\":\"file:///workspace/\\u002eenv\"} ] , \"x\":1}, \"id\" : 7 , \"jsonrpc\":\"2.0\" }\r\n";
    let (out, listings) = through(&[("7", RESOURCES)], line);
    assert_eq!(
        out,
        "{ \"result\" : {\"nextCursor\":\"c\", \"resources\" : [{\"name\":\"a\", \"uri\" : \"file:///w/a\"}] , \"x\":1}, \"id\" : 7 , \"jsonrpc\":\"2.0\" }\r\n"
    );
    let l = &listings[0].1;
    assert_eq!(
        l.shown,
        [(
            "file:///w/a".to_string(),
            digest(r#"{"uri":"file:///w/a","name":"a"}"#)
        )]
    );
    assert_eq!(l.removed.len(), 2);
    assert!(
        l.removed
            .iter()
            .all(|(k, _, c)| k == "file:///workspace/.env" && *c == ReasonCode::P_RESOURCE_DENIED)
    );
    // The server's last bytes, without a `\n`: the edited line is `\n` terminated.
    let last = r#"{"id":1,"result":{"prompts":[{"name":"debug_x"},{"name":"a"}]}}"#;
    let (out, _) = through(&[("1", PROMPTS)], last);
    assert_eq!(
        out,
        "{\"id\":1,\"result\":{\"prompts\":[{\"name\":\"a\"}]}}\n"
    );
}

/// An answer that loses nothing, an empty list among them, is forwarded as it is and its
/// listing names every entry with its digest.
#[test]
fn an_answer_that_loses_nothing_is_forwarded() {
    for (line, shown) in [
        ("{\"id\":1,\"result\":{\"prompts\":[]}}\n", vec![]),
        ("{\"id\":1,\"result\":{\"prompts\":[ ]}}\n", vec![]),
        (
            "{\"id\":1,\"result\":{\"prompts\":[ {\"name\":\"a\",\"arguments\":[{\"name\":\"x\"}]} ]}}\n",
            vec![(
                "a".to_string(),
                digest(r#"{"arguments":[{"name":"x"}],"name":"a"}"#),
            )],
        ),
    ] {
        let (out, listings) = through(&[("1", PROMPTS)], line);
        assert_eq!(out, line);
        assert_eq!(listings.len(), 1, "{line}");
        assert_eq!(listings[0].1.shown, shown, "{line}");
        assert!(listings[0].1.removed.is_empty() && !listings[0].1.replaced_by_error);
    }
}

/// What cannot be read as the list's result is replaced by the error for the client's id, its
/// listing `replaced_by_error`: lenient variants of the envelope, the list and the key,
/// duplicate keys, non-object entries, keys that are not strings, a list that is not an array.
#[test]
fn what_cannot_be_read_as_the_list_is_replaced() {
    let list_result = "it cannot be read as a list result";
    let prompts = "it cannot be read as a prompts/list result";
    for (line, why) in [
        (r#"{"id":1,"result":{"prompts":[{"NAME":"a"}]}}"#, prompts),
        (
            r#"{"id":1,"result":{"prompts":[{"nam\u0065":"a","Name":"b"}]}}"#,
            list_result,
        ),
        (
            r#"{"id":1,"result":{"prompts":[{"name":"a","name":"b"}]}}"#,
            list_result,
        ),
        (
            r#"{"id":1,"result":{"prompts":[{"name\u0000":"a"}]}}"#,
            prompts,
        ),
        (r#"{"id":1,"result":{"Prompts":[]}}"#, prompts),
        (
            r#"{"id":1,"result":{"prompts":[],"Prompts":[]}}"#,
            list_result,
        ),
        (r#"{"id":1,"result":{"promptſ":[]}}"#, prompts),
        (r#"{"id":1,"result":{}}"#, prompts),
        (r#"{"id":1,"result":[]}"#, prompts),
        (r#"{"id":1,"result":{"prompts":{}}}"#, prompts),
        (r#"{"id":1,"result":{"prompts":"[]"}}"#, prompts),
        (r#"{"id":1,"result":{"prompts":[1]}}"#, prompts),
        (
            r#"{"id":1,"result":{"prompts":[{"name":"a"},null]}}"#,
            prompts,
        ),
        (r#"{"id":1,"result":{"prompts":[["name","a"]]}}"#, prompts),
        (r#"{"id":1,"result":{"prompts":[{"name":5}]}}"#, prompts),
        (r#"{"id":1,"result":{"prompts":[{"name":null}]}}"#, prompts),
        (r#"{"id":1,"result":{"prompts":[{"name":["a"]}]}}"#, prompts),
        (r#"{"id":1,"result":{"prompts":[{"title":"a"}]}}"#, prompts),
        (r#"{"id":1,"error":{"code":1,"message":"no"}}"#, prompts),
    ] {
        let (out, listings) = through(&[("1", PROMPTS)], &format!("{line}\n"));
        assert_eq!(out, error_line("1", why), "{line}");
        assert_eq!(listings.len(), 1, "{line}");
        assert_eq!(listings[0].1, withheld_listing("1"), "{line}");
    }
}

fn prompts_answer(id: &str, names: impl Iterator<Item = String>) -> String {
    let entries: Vec<String> = names.map(|n| format!(r#"{{"name":"{n}"}}"#)).collect();
    format!(
        r#"{{"id":{id},"result":{{"prompts":[{}]}}}}"#,
        entries.join(",")
    )
}

/// A listing names at most `MAX_LISTED_ENTRIES` entries; the listings of a line at most
/// `MAX_LISTED_PER_LINE`: past either, the answer is replaced by the error.
#[test]
fn listings_are_capped() {
    let at_cap = prompts_answer("1", (0..MAX_LISTED_ENTRIES).map(|i| format!("p{i}")));
    let (out, listings) = through(&[("1", PROMPTS)], &format!("{at_cap}\n"));
    assert_eq!(out, format!("{at_cap}\n"));
    assert_eq!(listings[0].1.shown.len(), MAX_LISTED_ENTRIES);
    let over = prompts_answer("1", (0..=MAX_LISTED_ENTRIES).map(|i| format!("p{i}")));
    let (out, listings) = through(&[("1", PROMPTS)], &format!("{over}\n"));
    assert_eq!(
        out,
        error_line(
            "1",
            "it lists more than 2000 entries, more than the wrapper records of one listing"
        )
    );
    assert_eq!(listings[0].1, withheld_listing("1"));
    // Nine answers of a full listing each, in one batch: the ninth passes the line's bound.
    let answers: Vec<String> = (1..=9)
        .map(|id| {
            prompts_answer(
                &id.to_string(),
                (0..MAX_LISTED_ENTRIES).map(|i| format!("p{i}")),
            )
        })
        .collect();
    let ids: Vec<String> = (1..=9).map(|i| i.to_string()).collect();
    let requests: Vec<(&str, RequestKind)> = ids.iter().map(|i| (i.as_str(), PROMPTS)).collect();
    let (out, listings) = through(&requests, &format!("[{}]\n", answers.join(",")));
    let error = error_line(
        "9",
        "its line lists more than 16000 entries, more than the wrapper records of one line",
    );
    assert_eq!(
        out,
        format!("[{},{}]\n", answers[..8].join(","), error.trim_end())
    );
    assert_eq!(listings.len(), 9);
    assert!(
        listings[..8]
            .iter()
            .all(|(_, l)| l.shown.len() == MAX_LISTED_ENTRIES)
    );
    assert_eq!(listings[8].1, withheld_listing("9"));
}

/// A batch: whitespace around its elements kept, requests, notifications and other values
/// untouched, a response without `result` not judged; answers to nobody are left out by the
/// gate before the filter.
#[test]
fn a_batch_keeps_its_other_elements_as_they_were() {
    let line = "[ {\"method\":\"notifications/x\"}, {\"id\":1 , \"result\":{\"prompts\":[{\"name\":\"debug_a\"} , {\"name\":\"b\"}]}}\t, 5, {\"id\":2,\"error\":{\"code\":1,\"message\":\"m\"}} ]\n";
    let (out, listings) = through(&[("1", PROMPTS), ("2", PROMPTS)], line);
    assert_eq!(
        out,
        "[ {\"method\":\"notifications/x\"}, {\"id\":1 , \"result\":{\"prompts\":[{\"name\":\"b\"}]}}\t, 5, {\"id\":2,\"error\":{\"code\":1,\"message\":\"m\"}} ]\n"
    );
    assert_eq!(listings.len(), 1);
    assert_eq!(listings[0].1.request_id, "1".into());
    assert_eq!(listings[0].1.removed[0].0, "debug_a");
    // Answers to nobody: the gate leaves them out, the filter judges what is left.
    let line = "[{\"id\":\"n\",\"result\":{\"prompts\":[{\"name\":\"debug\"}]}},{\"id\":9,\"result\":{}},{\"id\":1,\"result\":{\"prompts\":[{\"name\":\"debug_b\"}]}}]\n";
    let (out, listings) = through(&[("1", PROMPTS)], line);
    assert_eq!(out, "[{\"id\":1,\"result\":{\"prompts\":[]}}]\n");
    assert_eq!(listings.len(), 1);
    assert_eq!(listings[0].1.removed[0].0, "debug_b");
}

/// What a listing shows: each entry's key and digest.
type Shown = Vec<(String, Option<HexDigest>)>;

/// The former reading, on `serde_json` values: the result written again, what a judged answer
/// showed, and how many entries it removed (`None`: unreadable).
fn oracle(kind: ListKind, line: &str) -> Option<(Value, Shown, usize)> {
    let mut value: Value = crate::strict_json::parse_value(line.trim_end()).ok()?;
    let envelope = value.as_object_mut()?;
    if crate::lenient::has_variant(envelope, &["result"]) {
        return None;
    }
    let result = envelope.get_mut("result")?.as_object_mut()?;
    if crate::lenient::has_variant(result, &[kind.member()]) {
        return None;
    }
    let entries = result.get_mut(kind.member())?.as_array_mut()?;
    let mut shown = Vec::new();
    let mut removed = 0;
    let mut keep = Vec::new();
    for entry in entries.iter() {
        let obj = entry.as_object()?;
        if crate::lenient::has_variant(obj, &[kind.key()]) {
            return None;
        }
        let key = obj.get(kind.key())?.as_str()?;
        let digest = Some(crate::canonical::digest_of(&entry.to_string())?);
        match kind.refuses(&policy(), key) {
            Some(_) => {
                removed += 1;
                keep.push(false);
            }
            None => {
                shown.push((key.to_owned(), digest));
                keep.push(true);
            }
        }
    }
    let mut flags = keep.into_iter();
    entries.retain(|_| flags.next().unwrap_or(false));
    Some((value, shown, removed))
}

fn piece() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        r#""uri":"file:///workspace/.env""#,
        r#""uri":"file:///workspace/\u002eenv""#,
        r#""uri":"file:///w/a""#,
        r#""\u0075ri":"file:///w/b""#,
        r#""URI":"file:///w/c""#,
        r#""uri":5"#,
        r#""name":"n""#,
        r#""size":1.50"#,
        r#""meta":{"k":[1,2.0e1,"\u00e9"]}"#,
    ])
}

fn entry() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::collection::vec(piece(), 0..4).prop_map(|p| format!("{{ {} }}", p.join(" ,"))),
        1 => prop::sample::select(vec!["1".to_string(), "null".into(), "[]".into(), "\"x\"".into()]),
    ]
}

proptest! {
    /// The borrowed reading judges every answer as the former value-based one did: the same
    /// listing, the same result (the entries kept in order), readable or not alike.
    #[test]
    fn the_borrowed_reading_agrees_with_the_value_reading(
        entries in prop::collection::vec(entry(), 0..6),
        space in prop::sample::select(vec!["", " ", "\n\t "]),
    ) {
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",{space}\"result\":{{\"resources\":[{space}{}{space}]}},\"id\":1}}\n",
            entries.join(&format!("{space},{space}"))
        );
        let kind = ListKind::of(RESOURCES).unwrap();
        let (out, listings) = through(&[("1", RESOURCES)], &line);
        match oracle(kind, &line) {
            // Duplicate keys after lenient normalization: the strict scan refuses the line.
            _ if !matches!(
                message::classify(line.as_bytes(), message::Judged::default()),
                ClientLine::Single(_)
            ) => {
                prop_assert_eq!(out, error_line("1", "it cannot be read as a list result"));
                prop_assert!(listings[0].1.replaced_by_error);
            }
            None => {
                prop_assert_eq!(out, error_line("1", "it cannot be read as a resources/list result"));
                prop_assert!(listings[0].1.replaced_by_error);
            }
            Some((value, shown, removed)) => {
                let l = &listings[0].1;
                prop_assert!(!l.replaced_by_error);
                prop_assert_eq!(&l.shown, &shown);
                prop_assert_eq!(l.removed.len(), removed);
                let written: Value = serde_json::from_str(&out).unwrap();
                prop_assert_eq!(written, value);
                if removed == 0 {
                    prop_assert_eq!(out, line);
                }
            }
        }
    }
}
