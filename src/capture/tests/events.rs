//! The other event types of the decision log (SPEC §4.1a): `assay.tool.listing` and
//! `assay.mcp.decision` lines read beside tool decisions, each type's fields checked; every
//! policy reason code written by the decision-log writer reads `closed` on both reader paths.

use super::super::decision_line::{Expect, LineReasons, Parsed};
use super::super::fast_line_parser;
use super::super::log::check_line;
use super::*;
use crate::evidence::decision_log::{DecisionEntry, DecisionFormat};
use crate::policy::Decision;
use crate::reason_code::ReasonCode;
use crate::sha256::HexDigest;

fn closed(v: &Closure) -> bool {
    v.closure == Closed && v.reasons.is_empty()
}

#[test]
fn a_log_with_listing_and_mcp_decision_lines_is_closed() {
    for dry_run in [false, true] {
        let mut b = Builder::new(13);
        b.other_events = true;
        b.dry_run = dry_run;
        let v = read_capture(b.build().path());
        assert!(closed(&v), "{v:#?}");
    }
}

/// The lines of the new types never take the fast path (it reads tool decisions only).
#[test]
fn the_fast_path_declines_the_new_types() {
    let b = Builder::new(3);
    for line in [b.listing_line(1), b.mcp_line(2)] {
        let text = serde_json::to_string(&line).unwrap();
        assert!(fast_line_parser::parse(&text).is_none(), "{text}");
        assert!(Parsed::from_line(&text).is_ok(), "{text}");
    }
}

/// An edit of line 1 (a listing) or line 2 (an MCP decision) in a mixed log of 4 lines.
fn edited(seq: usize, path: &'static str, value: Value) -> Builder {
    let mut b = Builder::new(4);
    b.other_events = true;
    b.edit_line.push(Box::new(move |i, v| {
        if i == seq {
            if value == json!("<remove>") {
                remove(v, path);
            } else {
                set(v, path, value.clone());
            }
        }
    }));
    b
}

#[test]
fn each_new_types_fields_are_checked() {
    let hex = crate::sha256::digest_hex(b"x");
    let cases: Vec<(usize, &str, Value, ClosureReasonCode)> = vec![
        // assay.tool.listing
        (1, "data/request_id", json!(1), R::SchemaMismatch),
        (1, "data/request_id", Value::Null, R::SchemaMismatch),
        (1, "data/request_id", json!("<remove>"), R::SchemaMismatch),
        (1, "data/shown", json!({}), R::SchemaMismatch),
        (1, "data/shown", json!([{"name": "a"}]), R::SchemaMismatch),
        (
            1,
            "data/shown",
            json!([{"name": 1, "sha256": hex}]),
            R::SchemaMismatch,
        ),
        (
            1,
            "data/shown",
            json!([{"name": "a", "sha256": null}]),
            R::SchemaMismatch,
        ),
        (
            1,
            "data/shown",
            json!([{"name": "a", "sha256": hex.to_uppercase()}]),
            R::SchemaMismatch,
        ),
        (
            1,
            "data/shown",
            json!([{"name": "a", "sha256": &hex[1..]}]),
            R::SchemaMismatch,
        ),
        (
            1,
            "data/removed",
            json!([{"name": "a", "sha256": null}]),
            R::SchemaMismatch,
        ),
        (
            1,
            "data/removed",
            json!([{"name": "a", "sha256": null, "reason_code": "P_NOPE"}]),
            R::SchemaMismatch,
        ),
        (
            1,
            "data/removed",
            json!([{"name": "a", "sha256": null, "reason_code": "P_POLICY_ALLOW"}]),
            R::SchemaMismatch,
        ),
        (
            1,
            "data/removed",
            json!([{"name": "a", "sha256": "00", "reason_code": "P_TOOL_DRIFT"}]),
            R::SchemaMismatch,
        ),
        (
            1,
            "data/removed",
            json!([{"name": "a", "reason_code": "P_TOOL_DRIFT"}]),
            R::SchemaMismatch,
        ),
        (
            1,
            "data/replaced_by_error",
            json!("false"),
            R::SchemaMismatch,
        ),
        (
            1,
            "data/replaced_by_error",
            json!("<remove>"),
            R::SchemaMismatch,
        ),
        (1, "data/policy_sha256", json!(hex), R::ContextMismatch),
        (1, "data/seq", json!(2), R::CountMismatch),
        (
            1,
            "data/session_id",
            json!("fedcba9876543210fedcba9876543210"),
            R::IdMismatch,
        ),
        (
            1,
            "id",
            json!(format!("evt_decision_{SID}_1")),
            R::IdMismatch,
        ),
        (1, "type", json!("assay.tool.listings"), R::SchemaMismatch),
        // assay.mcp.decision
        (2, "data/direction", json!("sideways"), R::SchemaMismatch),
        (2, "data/method", Value::Null, R::SchemaMismatch),
        (2, "data/target", json!(3), R::SchemaMismatch),
        (2, "data/target", json!("<remove>"), R::SchemaMismatch),
        (2, "data/request_id", json!(7), R::SchemaMismatch),
        (
            2,
            "data/reason_code",
            json!("P_TOOL_DENIED "),
            R::SchemaMismatch,
        ),
        (2, "data/decision", json!("allow"), R::SchemaMismatch),
        (
            2,
            "data/params_sha256",
            json!(hex.to_uppercase()),
            R::SchemaMismatch,
        ),
        (
            2,
            "data/params_sha256",
            json!("<remove>"),
            R::SchemaMismatch,
        ),
        (2, "data/enforced", json!(false), R::ContextMismatch),
        (2, "data/seq", json!(1), R::CountMismatch),
        (
            2,
            "id",
            json!(format!("evt_listing_{SID}_2")),
            R::IdMismatch,
        ),
    ];
    for (seq, path, value, code) in cases {
        let what = format!("line {seq}: {path} = {value}");
        let v = read_capture(edited(seq, path, value).build().path());
        assert_eq!(v.closure, Unknown, "{what}: {v:#?}");
        assert!(v.reasons.iter().any(|r| r.code == code), "{what}: {v:#?}");
    }
    // What the SPEC allows reads closed.
    for (seq, path, value) in [
        (1, "data/removed", json!([])),
        (1, "data/shown", json!([])),
        (1, "data/replaced_by_error", json!(true)),
        (2, "data/target", Value::Null),
        (2, "data/request_id", Value::Null),
        (2, "data/params_sha256", Value::Null),
        (2, "data/matched_rule", Value::Null),
        (2, "data/direction", json!("server_to_client")),
        (2, "data/decision", json!("error")),
    ] {
        let what = format!("line {seq}: {path} = {value}");
        let v = read_capture(edited(seq, path, value).build().path());
        assert!(closed(&v), "{what}: {v:#?}");
    }
    let mut b = edited(
        2,
        "data/reason_code",
        json!(ReasonCode::P_POLICY_ALLOW.as_str()),
    );
    b.edit_line.push(Box::new(|i, v| {
        if i == 2 {
            set(v, "data/decision", json!("allow"));
        }
    }));
    assert!(closed(&read_capture(b.build().path())));
}

/// SPEC §4.1a `record_arguments`: `arguments` (an object or a string) and `arguments_truncated`
/// (a boolean) are accepted on a tool decision when present, and checked for their types.
#[test]
fn recorded_arguments_on_tool_decisions() {
    for (path, value, ok) in [
        (
            "data/arguments",
            json!({"path": "[redacted]", "n": [1, {"a": null}]}),
            true,
        ),
        ("data/arguments", json!({}), true),
        ("data/arguments", json!("{\"path\":\"/etc"), true),
        ("data/arguments", Value::Null, false),
        ("data/arguments", json!(1), false),
        ("data/arguments", json!([1]), false),
        ("data/arguments_truncated", json!(true), true),
        ("data/arguments_truncated", json!(false), true),
        ("data/arguments_truncated", Value::Null, false),
        ("data/arguments_truncated", json!("true"), false),
    ] {
        let v = read_capture(edited(0, path, value.clone()).build().path());
        assert_eq!(closed(&v), ok, "{path} = {value}: {v:#?}");
        if !ok {
            assert!(v.reasons.iter().any(|r| r.code == R::SchemaMismatch));
        }
    }
}

/// Every policy reason code, written by the decision-log writer (a tool decision with it, and
/// a listing removing a tool for it), reads `closed` — on the fast path (the lines as written)
/// and on the general path (the same lines with a space the fast path declines).
#[test]
fn every_reason_code_round_trips_through_the_writer_and_both_reader_paths() {
    let b = Builder::new(0);
    let policy = super::super::testutil::POLICY_SHA;
    let mut format = DecisionFormat::new(&b.session_id, &b.source, policy, true);
    let digest = HexDigest::of(b"{\"name\":\"read_file\"}");
    let mut log = Vec::new();
    let mut seq = 0u64;
    for &code in ReasonCode::ALL {
        let decision = if code == ReasonCode::P_POLICY_ALLOW {
            Decision::Allow
        } else {
            Decision::Deny
        };
        let entry = DecisionEntry {
            tool: Some("read_file"),
            tool_call_id: Some("1"),
            decision,
            reason_code: code,
            reason: "the reason",
            matched_rule: None,
            arguments_sha256: Some(&digest),
            tool_definition_sha256: None,
        };
        format.push_line(&mut log, seq, &entry);
        seq += 1;
        let removed: Vec<(&str, Option<&HexDigest>, ReasonCode)> =
            if code == ReasonCode::P_POLICY_ALLOW {
                Vec::new()
            } else {
                vec![
                    ("wr\"ite\u{202e}", Some(&digest), code),
                    ("(instructions)", None, code),
                ]
            };
        format.push_listing_line(
            &mut log,
            seq,
            &seq.to_string(),
            &[("read_file", &digest), ("t\\\n", &digest)],
            &removed,
            code == ReasonCode::P_MALFORMED,
        );
        seq += 1;
    }
    let text = String::from_utf8(log.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2 * ReasonCode::ALL.len());
    let exp = Expect {
        session_id: Some(&b.session_id),
        source: Some(&b.source),
        policy_sha256: Some(policy),
        dry_run: Some(false),
    };
    for (i, line) in lines.iter().enumerate() {
        // Tool decisions as written take the fast path; listings the general one.
        assert_eq!(
            fast_line_parser::parse(line).is_some(),
            i % 2 == 0,
            "{line}"
        );
        let spaced = line.replacen('{', "{ ", 1);
        assert!(fast_line_parser::parse(&spaced).is_none());
        for l in [*line, spaced.as_str()] {
            let mut lr = LineReasons {
                list: Vec::new(),
                suppressed: 0,
                first_suppressed: None,
            };
            check_line(i, l.as_bytes(), &exp, &mut lr);
            assert!(lr.list.is_empty(), "{l}: {:?}", lr.list);
        }
    }
    let mut b = b;
    b.decisions = lines.len();
    let v = read_capture(b.build_with_log(&log).path());
    assert!(closed(&v), "{v:#?}");
    // The general path for every line: a space after each line's first brace.
    let spaced: String = lines
        .iter()
        .map(|l| format!("{}\n", l.replacen('{', "{ ", 1)))
        .collect();
    let v = read_capture(b.build_with_log(spaced.as_bytes()).path());
    assert!(closed(&v), "{v:#?}");
}

/// A CloudEvents line is a JSON object, and so are its `data` and the listing's entries: `serde`
/// would otherwise read a struct from an array of its fields in order.
#[test]
fn array_forms_are_refused() {
    let b = Builder::new(3);
    let order = [
        "specversion",
        "id",
        "type",
        "source",
        "time",
        "datacontenttype",
        "data",
    ];
    let positional =
        |v: &Value| -> Value { Value::Array(order.iter().map(|k| v[*k].clone()).collect()) };
    let data_fields =
        |d: &Value| -> Value { Value::Array(d.as_object().unwrap().values().cloned().collect()) };
    let tool = b.line(0);
    let mut data_as_array = tool.clone();
    data_as_array["data"] = data_fields(&tool["data"]);
    let mut listing = b.listing_line(1);
    let entry = listing["data"]["shown"][0].clone();
    listing["data"]["shown"][0] = data_fields(&entry);
    let mut removed = b.listing_line(1);
    let entry = removed["data"]["removed"][0].clone();
    removed["data"]["removed"][0] = data_fields(&entry);
    for (seq, bad) in [
        (0, positional(&tool)),
        (0, data_as_array),
        (1, positional(&b.listing_line(1))),
        (1, listing),
        (1, removed),
        (2, positional(&b.mcp_line(2))),
    ] {
        let text = serde_json::to_string(&bad).unwrap();
        assert!(fast_line_parser::parse(&text).is_none(), "{text}");
        assert!(Parsed::from_line(&text).is_err(), "{text}");
        let mut b = Builder::new(3);
        b.other_events = true;
        b.edit_line.push(Box::new(move |i, v| {
            if i == seq {
                *v = bad.clone();
            }
        }));
        let v = read_capture(b.build().path());
        assert_eq!(v.closure, Unknown, "{text}");
        assert!(
            v.reasons.iter().any(|r| r.code == R::SchemaMismatch),
            "{v:#?}"
        );
    }
}
