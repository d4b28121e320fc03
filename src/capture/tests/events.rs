//! The other event types of the decision log (SPEC §4.1a): `assay.tool.listing` and
//! `assay.mcp.decision` lines read beside tool decisions, each type's fields checked; every
//! policy reason code written by the decision-log writer reads `closed` on both reader paths.

use super::super::decision_line::{Expect, LineReasons, Parsed};
use super::super::fast_line_parser;
use super::super::log::check_line;
use super::*;
use crate::evidence::decision_log::{
    DecisionEntry, DecisionFormat, Direction, ListingEntry, McpDecisionEntry,
};
use crate::policy::Decision;
use crate::reason_code::{Carrier, ReasonCode};
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

/// A listing line never takes the fast path (it reads tool and MCP decisions only); an MCP
/// decision does, and reads the same on both paths.
#[test]
fn the_fast_path_declines_listings_and_reads_mcp_decisions() {
    let b = Builder::new(3);
    let listing = serde_json::to_string(&b.listing_line(1)).unwrap();
    assert!(fast_line_parser::parse(&listing).is_none(), "{listing}");
    assert!(Parsed::from_line(&listing).is_ok(), "{listing}");
    let mcp = serde_json::to_string(&b.mcp_line(2)).unwrap();
    let fast = fast_line_parser::parse(&mcp).expect("the fast path reads an MCP decision");
    assert_eq!(fast, Parsed::from_line(&mcp).unwrap().view());
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
        // The list a listing names, and what a removal from that list can be (the one table).
        (1, "data/method", json!("tools/call"), R::SchemaMismatch),
        (1, "data/method", json!("Tools/list"), R::SchemaMismatch),
        (1, "data/method", Value::Null, R::SchemaMismatch),
        (1, "data/method", json!(7), R::SchemaMismatch),
        // Its removals are a tool and the instructions: neither is a prompt.
        (1, "data/method", json!("prompts/list"), R::SchemaMismatch),
        // A tools/list answer holds no instructions.
        (1, "data/method", json!("tools/list"), R::SchemaMismatch),
        // A decision on another governed method carries no tool-only code.
        (
            2,
            "data/reason_code",
            json!("P_ARG_SCHEMA"),
            R::SchemaMismatch,
        ),
        (
            2,
            "data/reason_code",
            json!("P_INSTRUCTIONS_DRIFT"),
            R::SchemaMismatch,
        ),
        (
            2,
            "data/reason_code",
            json!("P_REPEATED_CALL"),
            R::SchemaMismatch,
        ),
        // assay.mcp.decision
        (2, "data/direction", json!("sideways"), R::SchemaMismatch),
        (2, "data/direction", json!(1), R::SchemaMismatch),
        (2, "data/direction", Value::Null, R::SchemaMismatch),
        (
            2,
            "data/direction",
            json!("Client_to_server"),
            R::SchemaMismatch,
        ),
        (2, "data/direction", json!("<remove>"), R::SchemaMismatch),
        (2, "data/method", json!("<remove>"), R::SchemaMismatch),
        (2, "data/request_id", json!("<remove>"), R::SchemaMismatch),
        (2, "data/decision", json!("refuse"), R::SchemaMismatch),
        (2, "data/reason_code", json!("<remove>"), R::SchemaMismatch),
        (2, "data/reason", Value::Null, R::SchemaMismatch),
        (2, "data/matched_rule", json!(1), R::SchemaMismatch),
        (2, "data/enforced", json!("true"), R::SchemaMismatch),
        (2, "data/seq", json!("2"), R::SchemaMismatch),
        (2, "data/policy_sha256", json!(1), R::SchemaMismatch),
        (2, "data/params_sha256", json!("00"), R::SchemaMismatch),
        (2, "type", json!("assay.tool.decision"), R::SchemaMismatch),
        (2, "type", json!("assay.mcp.decisions"), R::SchemaMismatch),
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

/// SPEC §4.1a `record_arguments`: `arguments` (a string: the recorded canonical JSON text,
/// possibly cut) and `arguments_truncated` (a boolean) are accepted on a tool decision, both
/// present or both absent, and checked for their types — on the fast path (as written) and on
/// the general path (the same line with a space).
#[test]
fn recorded_arguments_on_tool_decisions() {
    let text = json!("{\"path\":\"/etc/\\\"x\",\"token\":\"[redacted]\"}");
    let control = json!(format!("{{\"a\":\"{}\"}}", char::from(1)));
    for (arguments, truncated, ok) in [
        (text.clone(), json!(false), true),
        (json!("{\"path\":\"/et"), json!(true), true),
        (json!(""), json!(true), true),
        (control, json!(false), true),
        (json!({"path": "[redacted]"}), json!(false), false),
        (json!({}), json!(false), false),
        (Value::Null, json!(false), false),
        (json!(1), json!(false), false),
        (json!([1]), json!(false), false),
        (text.clone(), Value::Null, false),
        (text.clone(), json!("true"), false),
        (text.clone(), json!(0), false),
        (text.clone(), json!("<remove>"), false),
        (json!("<remove>"), json!(true), false),
        (json!("<remove>"), json!(false), false),
        (json!("<remove>"), json!("<remove>"), true),
    ] {
        for spaced in [false, true] {
            let mut b = edited(0, "data/arguments", arguments.clone());
            let t = truncated.clone();
            b.edit_line.push(Box::new(move |i, v| {
                if i == 0 && t != json!("<remove>") {
                    set(v, "data/arguments_truncated", t.clone());
                }
            }));
            let (mut log, _) = b.log_bytes();
            if spaced {
                // The general path: the fast one declines a space after the first brace.
                log.insert(1, b' ');
            }
            let dir = b.build_with_log(&log);
            let v = read_capture(dir.path());
            assert_eq!(
                closed(&v),
                ok,
                "{arguments} / {truncated} ({spaced}): {v:#?}"
            );
            if !ok {
                assert!(
                    v.reasons.iter().any(|r| r.code == R::SchemaMismatch),
                    "{v:#?}"
                );
            }
        }
    }
}

/// Every policy reason code, written by the decision-log writer (a tool decision with it, one
/// with it and recorded arguments, an MCP decision with it in each direction, and a listing
/// removing a tool for it), reads `closed` — on the fast path (the decision lines as written)
/// and on the general path (the same lines with a space the fast path declines).
#[test]
fn every_reason_code_round_trips_through_the_writer_and_both_reader_paths() {
    let b = Builder::new(0);
    let policy = super::super::testutil::POLICY_SHA;
    let mut format = DecisionFormat::new(&b.session_id, &b.source, policy, true);
    let digest = HexDigest::of(b"{\"name\":\"read_file\"}");
    let mut log = Vec::new();
    let mut seq = 0u64;
    // Whether each line takes the fast path (tool and MCP decisions) or not (listings).
    let mut fast: Vec<bool> = Vec::new();
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
            arguments: None,
            arguments_escaped: false,
        };
        // Each code is written only where its event type carries it (the table of `Carrier`).
        if code.carried_by(Carrier::ToolDecision) {
            format.push_line(&mut log, seq, &entry);
            seq += 1;
            let recorded = DecisionEntry {
                arguments: Some((
                    "{\"path\":\"/tmp/\\\"x\",\"token\":\"[redacted]\"}",
                    code == ReasonCode::P_ARG_SCHEMA,
                )),
                ..entry
            };
            format.push_line(&mut log, seq, &recorded);
            seq += 1;
            fast.extend([true, true]);
        }
        if code.carried_by(Carrier::McpDecision) {
            for direction in [Direction::ClientToServer, Direction::ServerToClient] {
                let mcp = McpDecisionEntry {
                    method: "resources/read",
                    direction,
                    target: Some("file:///workspace/\"a\"\u{202e}"),
                    request_id: Some("4"),
                    decision,
                    reason_code: code,
                    reason: "the reason",
                    matched_rule: Some("resources.deny:file:///workspace/**"),
                    params_sha256: Some(&digest),
                };
                format.push_mcp_decision_line(&mut log, seq, &mcp);
                seq += 1;
                fast.push(true);
            }
        }
        // A listing of every list whose removals can carry the code (one of each list when it
        // removes nothing).
        for row in crate::methods::METHODS {
            let Some(carrier) = crate::methods::listing_carrier(Some(row.name)) else {
                continue;
            };
            let method = row.name;
            let removed: Vec<(&str, Option<&HexDigest>, ReasonCode)> =
                if code == ReasonCode::P_POLICY_ALLOW {
                    Vec::new()
                } else if code.carried_by(carrier) {
                    vec![("wr\"ite\u{202e}", Some(&digest), code), ("x", None, code)]
                } else {
                    continue;
                };
            format.push_listing_line(
                &mut log,
                seq,
                &ListingEntry {
                    method,
                    request_id: &seq.to_string(),
                    shown: &[("read_file", &digest), ("t\\\n", &digest)],
                    removed: &removed,
                    replaced_by_error: code == ReasonCode::P_MALFORMED,
                },
            );
            seq += 1;
            fast.push(false);
        }
    }
    let text = String::from_utf8(log.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), fast.len());
    assert_eq!(lines.len() as u64, seq);
    let exp = Expect {
        session_id: Some(&b.session_id),
        source: Some(&b.source),
        policy_sha256: Some(policy),
        dry_run: Some(false),
    };
    for (i, line) in lines.iter().enumerate() {
        // Tool and MCP decisions as written take the fast path; listings the general one.
        assert_eq!(fast_line_parser::parse(line).is_some(), fast[i], "{line}");
        let spaced = line.replacen('{', "{ ", 1);
        assert!(fast_line_parser::parse(&spaced).is_none());
        for l in [*line, spaced.as_str()] {
            let mut lr = LineReasons {
                list: Vec::new(),
                suppressed: 0,
                first_suppressed: None,
            };
            check_line(i, l.as_bytes(), &exp, &mut lr, &mut Default::default());
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

/// Reason codes per event type (the table of [`crate::Carrier`]): a `tools/call` decision
/// claiming a code only another type carries is not `closed`, on either reader path; a listing
/// naming its list accepts that list's codes.
#[test]
fn each_event_type_carries_its_own_reason_codes() {
    let tool_with = |code: ReasonCode| {
        let mut b = Builder::new(4);
        b.other_events = true;
        b.edit_line.push(Box::new(move |i, v| {
            if i == 3 {
                set(v, "data/decision", json!("deny"));
                set(v, "data/reason_code", json!(code.as_str()));
            }
        }));
        b
    };
    for code in [
        ReasonCode::P_INSTRUCTIONS_DRIFT,
        ReasonCode::P_RESOURCE_DENIED,
        ReasonCode::P_PROMPT_NOT_ALLOWED,
        ReasonCode::P_CLIENT_FEATURE_DENIED,
    ] {
        let b = tool_with(code);
        let v = read_capture(b.build().path());
        assert_eq!(v.closure, Unknown, "{code}: {v:#?}");
        assert!(
            v.reasons
                .iter()
                .any(|r| r.code == ClosureReasonCode::SchemaMismatch
                    && r.detail.contains(code.as_str())),
            "{code}: {v:#?}"
        );
        // The general path says the same.
        let (log, _) = tool_with(code).log_bytes();
        let text = String::from_utf8(log).unwrap();
        let line3 = text.lines().nth(3).unwrap().replacen('{', "{ ", 1);
        let mut lr = LineReasons {
            list: Vec::new(),
            suppressed: 0,
            first_suppressed: None,
        };
        let exp = Expect {
            session_id: None,
            source: None,
            policy_sha256: None,
            dry_run: None,
        };
        check_line(3, line3.as_bytes(), &exp, &mut lr, &mut Default::default());
        assert!(
            lr.list
                .iter()
                .any(|r| r.code == ClosureReasonCode::SchemaMismatch),
            "{code}: {:?}",
            lr.list
        );
    }
    for code in [ReasonCode::P_TOOL_DENIED, ReasonCode::P_LIMIT_PER_TOOL] {
        let v = read_capture(tool_with(code).build().path());
        assert!(closed(&v), "{code}: {v:#?}");
    }
    // A listing that names its list, with that list's removals.
    for (method, code) in [
        ("prompts/list", ReasonCode::P_PROMPT_DENIED),
        ("resources/list", ReasonCode::P_RESOURCE_NOT_ALLOWED),
        ("resources/templates/list", ReasonCode::P_RESOURCE_DENIED),
        ("tools/list", ReasonCode::P_TOOL_DRIFT),
        ("initialize", ReasonCode::P_INSTRUCTIONS_DRIFT),
        ("server/discover", ReasonCode::P_INSTRUCTIONS_DRIFT),
    ] {
        let mut b = Builder::new(4);
        b.other_events = true;
        b.edit_line.push(Box::new(move |i, v| {
            if i == 1 {
                set(v, "data/method", json!(method));
                set(
                    v,
                    "data/removed",
                    json!([{"name": "x", "sha256": null, "reason_code": code.as_str()}]),
                );
            }
        }));
        let v = read_capture(b.build().path());
        assert!(closed(&v), "{method} {code}: {v:#?}");
    }
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

/// Hostile spellings of an MCP decision line, read from the bytes: an escaped key is the same
/// key (read on the general path, `closed` when nothing else is wrong), and then a duplicate of
/// the plain one; a duplicate key, a direction of neither value, an escaped direction value.
#[test]
fn hostile_mcp_decision_lines() {
    let mut b = Builder::new(4);
    b.other_events = true;
    let (log, _) = b.log_bytes();
    let text = String::from_utf8(log).unwrap();
    let mcp = text.lines().nth(2).unwrap().to_string();
    assert!(mcp.contains("\"direction\":\"client_to_server\""), "{mcp}");
    let with_line = |line: &str| -> Closure {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines[2] = line.to_string();
        let log: String = lines.iter().map(|l| format!("{l}\n")).collect();
        read_capture(b.build_with_log(log.as_bytes()).path())
    };
    let escaped = mcp.replacen("\"direction\"", "\"\\u0064irection\"", 1);
    assert!(fast_line_parser::parse(&escaped).is_none());
    assert!(closed(&with_line(&escaped)));
    let escaped_value = mcp.replacen("client_to_server", "client\\u005fto_server", 1);
    assert!(closed(&with_line(&escaped_value)));
    for (bad, code) in [
        (
            mcp.replacen(
                "\"direction\"",
                "\"\\u0064irection\":\"server_to_client\",\"direction\"",
                1,
            ),
            R::DuplicateKey,
        ),
        (
            mcp.replacen(
                "\"direction\"",
                "\"direction\":\"client_to_server\",\"direction\"",
                1,
            ),
            R::DuplicateKey,
        ),
        (
            mcp.replacen("\"method\"", "\"method\":\"x\",\"m\\u0065thod\"", 1),
            R::DuplicateKey,
        ),
        (
            mcp.replacen("client_to_server", "client-to-server", 1),
            R::SchemaMismatch,
        ),
        (
            mcp.replacen("\"client_to_server\"", "[\"client_to_server\"]", 1),
            R::SchemaMismatch,
        ),
        (
            mcp.replacen("\"direction\"", "\"Direction\"", 1),
            R::SchemaMismatch,
        ),
    ] {
        assert_ne!(bad, mcp);
        let v = with_line(&bad);
        assert_eq!(v.closure, Unknown, "{bad}");
        assert!(v.reasons.iter().any(|r| r.code == code), "{bad}: {v:#?}");
    }
}
