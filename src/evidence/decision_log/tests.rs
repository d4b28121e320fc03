//! The decision-log formatter and writer against serde's serialization and failing sinks.

use super::*;
use crate::evidence::prefix_digest::CHUNK;
use std::sync::{Arc, Mutex};

/// The formatter and the writer together, the way the proxy uses them.
struct Writer {
    format: DecisionFormat,
    log: DecisionLog,
    line: Vec<u8>,
}

fn writer(
    sink: Box<dyn DecisionSink>,
    session_id: &str,
    source: &str,
    policy_sha256: &str,
    enforced: bool,
) -> Writer {
    Writer {
        format: DecisionFormat::new(session_id, source, policy_sha256, enforced),
        log: DecisionLog::new(sink),
        line: Vec::new(),
    }
}

impl Writer {
    fn emit(&mut self, seq: u64, e: &DecisionEntry<'_>) -> (Emitted, Option<io::Error>) {
        self.line.clear();
        self.format.push_line(&mut self.line, seq, e);
        self.log.write(&self.line)
    }
    fn settle(&mut self) {
        self.log.settle();
    }
    fn accounting(&mut self) -> LogAccounting {
        self.log.accounting()
    }
}

/// A sink that keeps what it was given and fails its Nth write after writing half the line,
/// the way a full disk leaves a partial tail.
struct FailingSink {
    out: Arc<Mutex<Vec<u8>>>,
    calls: usize,
    fail_on: usize,
}

impl DecisionSink for FailingSink {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.calls += 1;
        let mut out = self.out.lock().unwrap();
        if self.calls == self.fail_on {
            out.extend_from_slice(&line[..line.len() / 2]);
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        out.extend_from_slice(line);
        Ok(())
    }
}

/// A digest for the entries that carry one.
pub(super) static DIGEST: std::sync::LazyLock<HexDigest> =
    std::sync::LazyLock::new(|| HexDigest::of(b"{}"));

pub(super) fn entry() -> DecisionEntry<'static> {
    DecisionEntry {
        tool: Some("read_file"),
        tool_call_id: Some("1"),
        decision: Decision::Allow,
        reason_code: ReasonCode::P_POLICY_ALLOW,
        reason: "allowed",
        matched_rule: Some("allow:*"),
        arguments_sha256: None,
        tool_definition_sha256: Some(&DIGEST),
        arguments: None,
        arguments_escaped: false,
    }
}

/// The serde shape the hand-written serializer must reproduce byte for byte.
#[derive(serde::Serialize)]
struct DecisionData<'a> {
    session_id: &'a str,
    seq: u64,
    tool: Option<&'a str>,
    tool_call_id: Option<&'a str>,
    decision: Decision,
    reason_code: ReasonCode,
    reason: &'a str,
    matched_rule: Option<&'a str>,
    enforced: bool,
    policy_sha256: &'a str,
    arguments_sha256: Option<&'a str>,
    tool_definition_sha256: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments_truncated: Option<bool>,
}

struct VecSink(Arc<Mutex<Vec<u8>>>);

impl DecisionSink for VecSink {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.0.lock().unwrap().extend_from_slice(line);
        Ok(())
    }
}

#[test]
fn lines_are_the_serde_serialization() {
    let out = Arc::new(Mutex::new(Vec::new()));
    let sid = "0123456789abcdef0123456789abcdef";
    let source = "assay://te\"st/\u{e9}\\x";
    let policy = "ab\ncd";
    // A reason with a tab and U+0001 (built here: the sources hold no U+0001).
    let reason = format!("bad \"name\"\t{}", char::from(1));
    let recorded = format!(
        "{{\"path\":\"/tmp/\\u00e9\u{e9}\",\"token\":\"[redacted]\",\"x\":\"{}\\n\"}}",
        char::from(1)
    );
    let mut log = writer(Box::new(VecSink(out.clone())), sid, source, policy, false);
    let base = [
        entry(),
        DecisionEntry {
            tool: None,
            tool_call_id: None,
            decision: Decision::Error,
            reason_code: ReasonCode::P_MALFORMED,
            reason: &reason,
            matched_rule: None,
            arguments_sha256: Some(&DIGEST),
            tool_definition_sha256: None,
            arguments: None,
            arguments_escaped: false,
        },
        DecisionEntry {
            tool: Some("t\u{7f}\u{1F600}"),
            tool_call_id: Some("\"quoted\\id\""),
            decision: Decision::Deny,
            reason_code: ReasonCode::P_BATCH_REFUSED,
            reason: "",
            matched_rule: Some("deny:x*"),
            arguments_sha256: None,
            tool_definition_sha256: Some(&DIGEST),
            arguments: None,
            arguments_escaped: false,
        },
        // Recorded arguments (SPEC §4.1a): canonical JSON text with quotes, a control
        // character and non-ASCII, whole or cut mid-string; and the empty text.
        DecisionEntry {
            arguments: Some((&recorded, false)),
            ..entry()
        },
        DecisionEntry {
            arguments: Some((&recorded[..recorded.len() - 3], true)),
            arguments_sha256: Some(&DIGEST),
            ..entry()
        },
        DecisionEntry {
            arguments: Some(("", true)),
            tool: None,
            ..entry()
        },
    ];
    // Each entry after each other one (and itself), so every change of tool or verdict
    // between consecutive lines is formatted once; plus the cases that differ only in a
    // null against an empty string.
    let mut entries: Vec<DecisionEntry<'_>> = Vec::new();
    for a in &base {
        for b in &base {
            entries.push(a.clone());
            entries.push(b.clone());
        }
    }
    for (tool, rule) in [
        (None, None),
        (Some(""), None),
        (Some(""), Some("")),
        (None, Some("")),
    ] {
        let mut e = base[0].clone();
        e.tool = tool;
        e.matched_rule = rule;
        entries.push(e);
    }
    let mut e = base[0].clone();
    e.reason = "allowed ";
    entries.push(e.clone());
    e.reason_code = ReasonCode::P_ARG_SCHEMA;
    entries.push(e.clone());
    e.decision = Decision::Deny;
    entries.push(e);
    for (i, e) in entries.iter().enumerate() {
        log.emit([0u64, 9, 10, u64::MAX][i % 4], e);
    }
    let bytes = out.lock().unwrap().clone();
    let lines: Vec<&[u8]> = bytes.split_inclusive(|b| *b == b'\n').collect();
    assert_eq!(lines.len(), entries.len());
    for (i, (line, e)) in lines.iter().zip(&entries).enumerate() {
        let seq = [0u64, 9, 10, u64::MAX][i % 4];
        let parsed: serde_json::Value = serde_json::from_slice(line).unwrap();
        let time = parsed["time"].as_str().unwrap().to_string();
        let id = format!("evt_decision_{sid}_{seq}");
        let want = crate::evidence::event::Envelope::new(
            &id,
            TYPE_DECISION,
            source,
            &time,
            DecisionData {
                session_id: sid,
                seq,
                tool: e.tool,
                tool_call_id: e.tool_call_id,
                decision: e.decision,
                reason_code: e.reason_code,
                reason: e.reason,
                matched_rule: e.matched_rule,
                enforced: false,
                policy_sha256: policy,
                arguments_sha256: e.arguments_sha256.map(HexDigest::as_str),
                tool_definition_sha256: e.tool_definition_sha256.map(HexDigest::as_str),
                arguments: e.arguments.map(|(text, _)| text),
                arguments_truncated: e.arguments.map(|(_, cut)| cut),
            },
        )
        .to_line()
        .unwrap();
        assert_eq!(
            String::from_utf8_lossy(line),
            String::from_utf8_lossy(&want)
        );
    }
    assert_eq!(
        log.accounting().prefix_sha256,
        super::super::event::sha256_hex(&bytes)
    );
}

/// The serde shape of a listing line (SPEC §4.1a) the hand-written one must reproduce.
#[derive(serde::Serialize)]
struct ListingData<'a> {
    session_id: &'a str,
    seq: u64,
    method: &'a str,
    request_id: &'a str,
    shown: Vec<Shown<'a>>,
    removed: Vec<Removed<'a>>,
    replaced_by_error: bool,
    policy_sha256: &'a str,
}

#[derive(serde::Serialize)]
struct Shown<'a> {
    name: &'a str,
    sha256: &'a str,
}

#[derive(serde::Serialize)]
struct Removed<'a> {
    name: &'a str,
    sha256: Option<&'a str>,
    reason_code: ReasonCode,
}

#[test]
fn listing_lines_are_the_serde_serialization() {
    let sid = "0123456789abcdef0123456789abcdef";
    let source = "assay://te\"st/\u{e9}\\x";
    let policy = "ab\ncd";
    let mut format = DecisionFormat::new(sid, source, policy, true);
    let other = HexDigest::of(b"other");
    // Server-written names: quotes, backslashes, control characters, bidi overrides, emoji.
    let odd = format!("a\"b\\c\n{}\u{202e}\u{1F600}", char::from(1));
    let shown_sets: [Vec<(&str, &HexDigest)>; 3] = [
        vec![],
        vec![("read_file", &DIGEST)],
        vec![
            ("read_file", &DIGEST),
            (odd.as_str(), &other),
            ("", &DIGEST),
        ],
    ];
    let removed_sets: [Vec<(&str, Option<&HexDigest>, ReasonCode)>; 3] = [
        vec![],
        vec![("exec", Some(&other), ReasonCode::P_TOOL_DRIFT)],
        vec![
            ("(instructions)", None, ReasonCode::P_INSTRUCTIONS_DRIFT),
            (odd.as_str(), None, ReasonCode::P_TOOL_UNPINNED),
            ("x", Some(&DIGEST), ReasonCode::P_TOOL_DENIED),
        ],
    ];
    let mut n = 0u64;
    for shown in &shown_sets {
        for removed in &removed_sets {
            for (replaced, request_id) in [(false, "1"), (true, "\"x\"\u{7f}")] {
                let seq = [0u64, 7, u64::MAX][(n % 3) as usize];
                let method =
                    ["tools/list", "prompts/list", "resources/templates/list"][(n % 3) as usize];
                n += 1;
                let mut line = Vec::new();
                format.push_listing_line(
                    &mut line,
                    seq,
                    &ListingEntry {
                        method,
                        request_id,
                        shown,
                        removed,
                        replaced_by_error: replaced,
                    },
                );
                let parsed: serde_json::Value = serde_json::from_slice(&line).unwrap();
                let time = parsed["time"].as_str().unwrap().to_string();
                let id = format!("evt_listing_{sid}_{seq}");
                let want = crate::evidence::event::Envelope::new(
                    &id,
                    TYPE_LISTING,
                    source,
                    &time,
                    ListingData {
                        session_id: sid,
                        seq,
                        method,
                        request_id,
                        shown: shown
                            .iter()
                            .map(|(name, d)| Shown {
                                name,
                                sha256: d.as_str(),
                            })
                            .collect(),
                        removed: removed
                            .iter()
                            .map(|(name, d, code)| Removed {
                                name,
                                sha256: d.map(HexDigest::as_str),
                                reason_code: *code,
                            })
                            .collect(),
                        replaced_by_error: replaced,
                        policy_sha256: policy,
                    },
                )
                .to_line()
                .unwrap();
                assert_eq!(
                    String::from_utf8_lossy(&line),
                    String::from_utf8_lossy(&want)
                );
            }
        }
    }
    // Decision and listing lines from one format interleave without disturbing each other.
    let mut a = Vec::new();
    format.push_line(&mut a, 3, &entry());
    let mut b = Vec::new();
    format.push_listing_line(
        &mut b,
        4,
        &ListingEntry {
            method: "tools/list",
            request_id: "2",
            shown: &[],
            removed: &[],
            replaced_by_error: false,
        },
    );
    let mut c = Vec::new();
    format.push_line(&mut c, 5, &entry());
    let strip_time = |l: &[u8]| {
        let mut v: serde_json::Value = serde_json::from_slice(l).unwrap();
        v["time"] = serde_json::Value::Null;
        v["id"] = serde_json::Value::Null;
        v["data"]["seq"] = serde_json::Value::Null;
        v
    };
    assert_eq!(strip_time(&a), strip_time(&c));
    assert_eq!(strip_time(&b)["type"], TYPE_LISTING);
}

/// The serde shape of an MCP decision line (SPEC §4.1a) the hand-written one must reproduce.
#[derive(serde::Serialize)]
struct McpData<'a> {
    session_id: &'a str,
    seq: u64,
    method: &'a str,
    direction: &'a str,
    target: Option<&'a str>,
    request_id: Option<&'a str>,
    decision: Decision,
    reason_code: ReasonCode,
    reason: &'a str,
    matched_rule: Option<&'a str>,
    enforced: bool,
    policy_sha256: &'a str,
    params_sha256: Option<&'a str>,
}

#[test]
fn mcp_decision_lines_are_the_serde_serialization() {
    let sid = "0123456789abcdef0123456789abcdef";
    let source = "assay://te\"st/\u{e9}\\x";
    let policy = "ab\ncd";
    // Peer-written text: a URI with a control character, quotes, a bidi override, emoji.
    let odd = format!("file:///a\"b\\c\n{}\u{202e}\u{1F600}", char::from(1));
    let entries = [
        McpDecisionEntry {
            method: "resources/read",
            direction: Direction::ClientToServer,
            target: Some("file:///workspace/.env"),
            request_id: Some("7"),
            decision: Decision::Deny,
            reason_code: ReasonCode::P_RESOURCE_DENIED,
            reason: "resource matches deny rule",
            matched_rule: Some("resources.deny:file:///workspace/.env"),
            params_sha256: Some(&DIGEST),
        },
        McpDecisionEntry {
            method: "sampling/createMessage",
            direction: Direction::ServerToClient,
            target: Some("sampling"),
            request_id: Some("\"s-1\""),
            decision: Decision::Allow,
            reason_code: ReasonCode::P_POLICY_ALLOW,
            reason: "",
            matched_rule: None,
            params_sha256: None,
        },
        McpDecisionEntry {
            method: odd.as_str(),
            direction: Direction::ClientToServer,
            target: Some(odd.as_str()),
            request_id: None,
            decision: Decision::Error,
            reason_code: ReasonCode::P_MALFORMED,
            reason: "bad \"uri\"\t",
            matched_rule: Some(""),
            params_sha256: Some(&DIGEST),
        },
        McpDecisionEntry {
            method: "prompts/get",
            direction: Direction::ClientToServer,
            target: None,
            request_id: Some(""),
            decision: Decision::Deny,
            reason_code: ReasonCode::P_PROMPT_NOT_ALLOWED,
            reason: "no allow pattern matched",
            matched_rule: None,
            params_sha256: None,
        },
    ];
    for enforced in [true, false] {
        let mut format = DecisionFormat::new(sid, source, policy, enforced);
        for (i, e) in entries.iter().enumerate() {
            let seq = [0u64, 9, 10, u64::MAX][i % 4];
            let mut line = Vec::new();
            format.push_mcp_decision_line(&mut line, seq, e);
            let parsed: serde_json::Value = serde_json::from_slice(&line).unwrap();
            let time = parsed["time"].as_str().unwrap().to_string();
            let id = format!("evt_decision_{sid}_{seq}");
            let want = crate::evidence::event::Envelope::new(
                &id,
                TYPE_MCP_DECISION,
                source,
                &time,
                McpData {
                    session_id: sid,
                    seq,
                    method: e.method,
                    direction: e.direction.as_str(),
                    target: e.target,
                    request_id: e.request_id,
                    decision: e.decision,
                    reason_code: e.reason_code,
                    reason: e.reason,
                    matched_rule: e.matched_rule,
                    enforced,
                    policy_sha256: policy,
                    params_sha256: e.params_sha256.map(HexDigest::as_str),
                },
            )
            .to_line()
            .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&line),
                String::from_utf8_lossy(&want)
            );
        }
        // Interleaved with the other line kinds, the cached segments of tool lines are not
        // disturbed: the tool line after an MCP line is the tool line before it.
        let mut a = Vec::new();
        format.push_line(&mut a, 3, &entry());
        let mut b = Vec::new();
        format.push_mcp_decision_line(&mut b, 4, &entries[0]);
        let mut c = Vec::new();
        format.push_line(&mut c, 5, &entry());
        let strip = |l: &[u8]| {
            let mut v: serde_json::Value = serde_json::from_slice(l).unwrap();
            v["time"] = serde_json::Value::Null;
            v["id"] = serde_json::Value::Null;
            v["data"]["seq"] = serde_json::Value::Null;
            v
        };
        assert_eq!(strip(&a), strip(&c));
        assert_eq!(strip(&b)["type"], TYPE_MCP_DECISION);
    }
}

/// The prefix digest covers exactly the lines written so far, whenever (and whether) the
/// pending lines were hashed: at idle, at a full batch, or only at the accounting.
#[test]
fn digest_is_the_same_whenever_pending_lines_are_hashed() {
    let out = Arc::new(Mutex::new(Vec::new()));
    let mut log = writer(
        Box::new(VecSink(out.clone())),
        "0123456789abcdef0123456789abcdef",
        "assay://test",
        "00",
        true,
    );
    // Enough lines for several full batches; settle at irregular points.
    for seq in 0..1000u64 {
        assert_eq!(log.emit(seq, &entry()).0, Emitted::Written);
        if seq % 7 == 3 || seq % 53 == 0 {
            log.settle();
        }
        if seq % 41 == 0 {
            let bytes = out.lock().unwrap().clone();
            assert_eq!(
                log.accounting().prefix_sha256,
                super::super::event::sha256_hex(&bytes),
                "after line {seq}"
            );
        }
    }
    let bytes = out.lock().unwrap().clone();
    assert!(bytes.len() > 2 * CHUNK);
    assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 1000);
    let acc = log.accounting();
    assert_eq!(acc.written, 1000);
    assert_eq!(acc.prefix_sha256, super::super::event::sha256_hex(&bytes));
    log.settle();
    assert_eq!(log.accounting(), acc);
}

#[test]
fn poisoned_writer_counts_and_digest_cover_only_complete_lines() {
    let out = Arc::new(Mutex::new(Vec::new()));
    let sink = FailingSink {
        out: out.clone(),
        calls: 0,
        fail_on: 3,
    };
    let mut log = writer(
        Box::new(sink),
        "0123456789abcdef0123456789abcdef",
        "assay://test",
        "00",
        true,
    );
    let results: Vec<Emitted> = (0..5).map(|seq| log.emit(seq, &entry()).0).collect();
    assert_eq!(
        results,
        [
            Emitted::Written,
            Emitted::Written,
            Emitted::Failed,
            Emitted::Refused,
            Emitted::Refused
        ]
    );
    let acc = log.accounting();
    assert_eq!(acc.written, 2);
    assert_eq!(acc.dropped, 3);
    assert!(acc.poisoned);
    let bytes = out.lock().unwrap().clone();
    // The file holds two complete lines plus a partial tail; the digest covers the two lines.
    let complete_end = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .nth(1)
        .unwrap();
    assert!(bytes.len() > complete_end, "partial tail present");
    assert_eq!(
        acc.prefix_sha256,
        super::super::event::sha256_hex(&bytes[..complete_end])
    );
    // seq is contiguous over written and failed emissions.
    let first: serde_json::Value =
        serde_json::from_slice(bytes.split(|b| *b == b'\n').nth(1).unwrap()).unwrap();
    assert_eq!(first["data"]["seq"], 1);
    assert_eq!(
        first["id"],
        "evt_decision_0123456789abcdef0123456789abcdef_1"
    );
    assert!(first["data"].get("arguments").is_none());
}

/// A sink that fails its `fail_at`-th write (0-based) after writing `partial` bytes of it,
/// the way `write_all` leaves a short write behind when the disk fills.
struct PartialSink {
    out: Arc<Mutex<Vec<u8>>>,
    calls: usize,
    fail_at: usize,
    partial: prop::sample::Index,
}

impl DecisionSink for PartialSink {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        let call = self.calls;
        self.calls += 1;
        let mut out = self.out.lock().unwrap();
        if call == self.fail_at {
            // A failed `write_all` wrote strictly less than the whole line.
            out.extend_from_slice(&line[..self.partial.index(line.len())]);
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        out.extend_from_slice(line);
        Ok(())
    }
}

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, .. ProptestConfig::default() })]

    /// SPEC §4.1: whatever write fails and however much of it reached the disk, the
    /// accounting describes exactly the complete lines on disk: `written` is their count,
    /// `decision_prefix_sha256` their SHA-256, and every other emission is `dropped`.
    #[test]
    fn prefix_digest_matches_the_complete_lines_on_disk(
        emissions in 0usize..12,
        fail_at in 0usize..14,
        partial in any::<prop::sample::Index>(),
        tools in prop::collection::vec(prop::option::of("[a-z_\"\\\\é\u{1F600}]{0,12}"), 12),
    ) {
        let out = Arc::new(Mutex::new(Vec::new()));
        let sink = PartialSink { out: out.clone(), calls: 0, fail_at, partial };
        let mut log = writer(
            Box::new(sink),
            "0123456789abcdef0123456789abcdef",
            "assay://test",
            "00",
            true,
        );
        for (seq, tool) in tools.iter().take(emissions).enumerate() {
            let mut e = entry();
            e.tool = tool.as_deref();
            log.emit(seq as u64, &e);
        }
        let acc = log.accounting();
        let bytes = out.lock().unwrap().clone();
        let complete_end = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let complete_lines = bytes[..complete_end].iter().filter(|b| **b == b'\n').count();
        prop_assert_eq!(acc.written as usize, complete_lines);
        prop_assert_eq!(acc.written + acc.dropped, emissions as u64);
        prop_assert_eq!(acc.poisoned, fail_at < emissions);
        prop_assert_eq!(
            &acc.prefix_sha256,
            &super::super::event::sha256_hex(&bytes[..complete_end])
        );
        // Each complete line is one decision event, in seq order.
        for (i, line) in bytes[..complete_end].split(|b| *b == b'\n').take(complete_lines).enumerate() {
            let v: serde_json::Value = serde_json::from_slice(line).unwrap();
            prop_assert_eq!(&v["data"]["seq"], &serde_json::json!(i));
        }
    }

    /// SPEC §4.1a: whatever text the peers and the policy put in an MCP decision or in
    /// recorded arguments (control characters, quotes, backslashes, any Unicode), the line
    /// is the `serde_json` serialization of its fields.
    #[test]
    fn peer_text_lines_are_the_serde_serialization(
        method in any::<String>(),
        target in prop::option::of(any::<String>()),
        request_id in prop::option::of(any::<String>()),
        reason in any::<String>(),
        rule in prop::option::of(any::<String>()),
        arguments in any::<String>(),
        cut in any::<bool>(),
        server_to_client in any::<bool>(),
        seq in any::<u64>(),
    ) {
        let sid = "0123456789abcdef0123456789abcdef";
        let mut format = DecisionFormat::new(sid, "assay://t", "00", true);
        let e = McpDecisionEntry {
            method: &method,
            direction: if server_to_client { Direction::ServerToClient } else { Direction::ClientToServer },
            target: target.as_deref(),
            request_id: request_id.as_deref(),
            decision: Decision::Deny,
            reason_code: ReasonCode::P_PROMPT_DENIED,
            reason: &reason,
            matched_rule: rule.as_deref(),
            params_sha256: None,
        };
        let mut line = Vec::new();
        format.push_mcp_decision_line(&mut line, seq, &e);
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        let want = crate::evidence::event::Envelope::new(
            &format!("evt_decision_{sid}_{seq}"),
            TYPE_MCP_DECISION,
            "assay://t",
            v["time"].as_str().unwrap(),
            McpData {
                session_id: sid,
                seq,
                method: &method,
                direction: e.direction.as_str(),
                target: e.target,
                request_id: e.request_id,
                decision: e.decision,
                reason_code: e.reason_code,
                reason: &reason,
                matched_rule: e.matched_rule,
                enforced: true,
                policy_sha256: "00",
                params_sha256: None,
            },
        )
        .to_line()
        .unwrap();
        prop_assert_eq!(&line, &want);

        let t = DecisionEntry { arguments: Some((&arguments, cut)), ..entry() };
        let mut line = Vec::new();
        format.push_line(&mut line, seq, &t);
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        prop_assert_eq!(v["data"]["arguments"].as_str(), Some(arguments.as_str()));
        prop_assert_eq!(&v["data"]["arguments_truncated"], &serde_json::json!(cut));
        let mut plain = Vec::new();
        format.push_line(&mut plain, seq, &entry());
        let tail = serde_json::to_vec(&serde_json::json!({"arguments": arguments})).unwrap();
        // The recorded line is the plain line with the two members inserted before the
        // closing braces, the text escaped as serde escapes it.
        let mut expected = plain[..plain.len() - 3].to_vec();
        expected.push(b',');
        expected.extend_from_slice(&tail[1..tail.len() - 1]);
        expected.extend_from_slice(format!(",\"arguments_truncated\":{cut}}}}}\n").as_bytes());
        // The times of the two lines may differ: compare after the time.
        let after_time = |l: &[u8]| -> Vec<u8> {
            let mark = b"\",\"datacontenttype\"";
            let at = l.windows(mark.len()).position(|w| w == mark).unwrap();
            l[at..].to_vec()
        };
        prop_assert_eq!(after_time(&line), after_time(&expected));
        // Already escaped (the recorded arguments' fast path): copied between the quotes, the
        // same line.
        let escaped = serde_json::to_string(&arguments).unwrap();
        let pre = DecisionEntry {
            arguments: Some((&escaped[1..escaped.len() - 1], cut)),
            arguments_escaped: true,
            ..entry()
        };
        let mut copied = Vec::new();
        format.push_line(&mut copied, seq, &pre);
        prop_assert_eq!(after_time(&copied), after_time(&line));
    }
}
