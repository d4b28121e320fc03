//! The agreement rules of the capture reader (SPEC §7) and the verdict.
//!
//! Order of work: read each required file through the bounded opener; run the strict pre-scan;
//! only then materialize JSON. Companions (≤ 64 KiB) become `serde_json::Value`s and are checked
//! field by field so every problem is reported. The log (≤ 8 MiB, ≤ 10,000 lines) is read in
//! 64 KiB chunks through the same bounded opener: each chunk is hashed once while it is in cache
//! and its complete lines are checked, each line in one pass by
//! `fastline` when it has the wrapper's shape, else by the strict pre-scan and a `serde` parse
//! into a small borrowed struct. Line reasons are kept only when the whole log was read within
//! its bound and holds at most 10,000 lines, so the reasons are those of reading the whole file
//! first. The decisions taken where SPEC is silent are in `docs/capture-reader.md`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::marker::PhantomData;
use std::path::Path;

use serde::Deserialize;
use serde::de::{Deserializer, Visitor};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::bounded::{self, BoundedError};
use super::fastline;
use super::no_session;
use super::{
    CLOSURE_NON_CLAIMS, CLOSURE_SCHEMA, CONTEXT, Closure, ClosureKind, FileDigest, LOG,
    MAX_COMPANION_BYTES, MAX_DECISIONS, MAX_DEPTH, MAX_LOG_BYTES, PROTOCOL, Reason, ReasonCode,
    STOP,
};
use crate::outcome::{DecisionLogState, SessionEnd, StopData, Termination};
use crate::strict_json::{self, ScanErrorKind};

/// At most this many reasons come from individual decision lines; the rest are summarized in
/// one extra reason so a hostile 10,000-line log cannot produce a 10,000-entry verdict.
const MAX_LINE_REASONS: usize = 16;

/// Collected reasons.
#[derive(Default)]
pub(super) struct Reasons(Vec<Reason>);

impl Reasons {
    pub(super) fn push(&mut self, code: ReasonCode, detail: impl Into<String>) {
        self.0.push(Reason {
            code,
            detail: detail.into(),
        });
    }

    fn any_hard(&self) -> bool {
        self.0.iter().any(|r| r.code != ReasonCode::DecisionLoss)
    }
}

/// Lowercase hex of a digest.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(HEX[usize::from(b >> 4)]));
        s.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    s
}

pub(crate) fn digest_of(bytes: &[u8]) -> FileDigest {
    FileDigest {
        bytes: bytes.len() as u64,
        sha256: hex(&Sha256::digest(bytes)),
    }
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

pub(super) fn is_session_id(s: &str) -> bool {
    is_hex(s, 32)
}

/// RFC 3339 in UTC with `Z`: `YYYY-MM-DDTHH:MM:SS[.fraction]Z` (SPEC §4).
fn is_utc_time(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 20 || b.last() != Some(&b'Z') {
        return false;
    }
    let num = |from: usize, to: usize| -> Option<u32> {
        let part = b.get(from..to)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(part.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let seps = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if seps.iter().any(|&(i, c)| b.get(i) != Some(&c)) {
        return false;
    }
    let ok = num(0, 4).is_some()
        && matches!(num(5, 7), Some(1..=12))
        && matches!(num(8, 10), Some(1..=31))
        && matches!(num(11, 13), Some(0..=23))
        && matches!(num(14, 16), Some(0..=59))
        && matches!(num(17, 19), Some(0..=60));
    if !ok {
        return false;
    }
    // After the seconds: `Z`, or `.` and 1..=9 digits and `Z`.
    match b.get(19..b.len() - 1) {
        Some([]) => true,
        Some([b'.', frac @ ..]) => {
            !frac.is_empty() && frac.len() <= 9 && frac.iter().all(u8::is_ascii_digit)
        }
        _ => false,
    }
}

/// An absolute URI `scheme://…` with no whitespace (SPEC §2).
fn is_event_source(s: &str) -> bool {
    let Some((scheme, _)) = s.split_once("://") else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn scan_reason(kind: ScanErrorKind) -> ReasonCode {
    match kind {
        ScanErrorKind::Invalid => ReasonCode::InvalidJson,
        ScanErrorKind::DuplicateKey => ReasonCode::DuplicateKey,
        ScanErrorKind::NonFinite => ReasonCode::NonfiniteNumber,
        ScanErrorKind::TooDeep => ReasonCode::TooDeep,
    }
}

/// Reads `dir/name` within `bound`, turning refusals into reasons.
pub(super) fn read_file(dir: &Path, name: &str, bound: u64, r: &mut Reasons) -> Option<Vec<u8>> {
    match bounded::read_bounded(&dir.join(name), bound) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            let code = match e {
                // An unreadable file is as unavailable to the reader as an absent one.
                BoundedError::Missing | BoundedError::Io(_) => ReasonCode::MissingFile,
                BoundedError::NotRegular(_) => ReasonCode::NotRegularFile,
                BoundedError::TooLarge { .. } => ReasonCode::TooLarge,
            };
            r.push(code, format!("{name} {}", e.describe(bound)));
            None
        }
    }
}

/// Strict scan, then parse to a JSON object.
pub(super) fn parse_object(
    name: &str,
    bytes: &[u8],
    r: &mut Reasons,
) -> Option<Map<String, Value>> {
    if let Err(e) = strict_json::scan(bytes, MAX_DEPTH) {
        r.push(scan_reason(e.kind), format!("{name}: {e}"));
        return None;
    }
    // The scan validated UTF-8; parse_value takes every key literally (see its docs).
    let parsed = std::str::from_utf8(bytes)
        .map_err(|e| e.to_string())
        .and_then(|t| strict_json::parse_value(t).map_err(|e| e.to_string()));
    match parsed {
        Ok(Value::Object(m)) => Some(m),
        Ok(_) => {
            r.push(
                ReasonCode::SchemaMismatch,
                format!("{name}: not a JSON object"),
            );
            None
        }
        Err(e) => {
            r.push(ReasonCode::InvalidJson, format!("{name}: {e}"));
            None
        }
    }
}

/// Field-by-field checks on one JSON object; every failure is a `schema_mismatch` reason.
struct Fields<'a, 'r> {
    what: String,
    map: &'a Map<String, Value>,
    r: &'r mut Reasons,
    ok: bool,
}

impl<'a, 'r> Fields<'a, 'r> {
    fn new(what: impl Into<String>, map: &'a Map<String, Value>, r: &'r mut Reasons) -> Self {
        Self {
            what: what.into(),
            map,
            r,
            ok: true,
        }
    }

    fn bad(&mut self, key: &str, msg: &str) {
        self.ok = false;
        self.r.push(
            ReasonCode::SchemaMismatch,
            format!("{}: `{key}` {msg}", self.what),
        );
    }

    fn get(&mut self, key: &str) -> Option<&'a Value> {
        let v = self.map.get(key);
        if v.is_none() {
            self.bad(key, "is missing");
        }
        v
    }

    fn str(&mut self, key: &str) -> Option<&'a str> {
        match self.get(key)? {
            Value::String(s) => Some(s),
            _ => {
                self.bad(key, "is not a string");
                None
            }
        }
    }

    fn opt_str(&mut self, key: &str) -> Option<Option<&'a str>> {
        match self.get(key)? {
            Value::String(s) => Some(Some(s)),
            Value::Null => Some(None),
            _ => {
                self.bad(key, "is not a string or null");
                None
            }
        }
    }

    fn checked(&mut self, key: &str, pred: fn(&str) -> bool, msg: &str) -> Option<&'a str> {
        let s = self.str(key)?;
        if pred(s) {
            Some(s)
        } else {
            self.bad(key, msg);
            None
        }
    }

    fn equals(&mut self, key: &str, expected: &str) -> Option<&'a str> {
        let s = self.str(key)?;
        if s == expected {
            Some(s)
        } else {
            self.bad(key, &format!("is not {expected:?}"));
            None
        }
    }

    fn one_of(&mut self, key: &str, allowed: &[&str]) -> Option<&'a str> {
        let s = self.str(key)?;
        if allowed.contains(&s) {
            Some(s)
        } else {
            self.bad(key, &format!("is not one of {}", allowed.join("|")));
            None
        }
    }

    fn sha256(&mut self, key: &str) -> Option<&'a str> {
        self.checked(key, |s| is_hex(s, 64), "is not 64 lowercase hex characters")
    }

    fn opt_sha256(&mut self, key: &str) -> Option<Option<&'a str>> {
        let v = self.opt_str(key)?;
        if v.is_some_and(|s| !is_hex(s, 64)) {
            self.bad(key, "is not 64 lowercase hex characters or null");
            return None;
        }
        Some(v)
    }

    fn session_id(&mut self, key: &str) -> Option<&'a str> {
        self.checked(key, is_session_id, "is not 32 lowercase hex characters")
    }

    fn time(&mut self, key: &str) -> Option<&'a str> {
        self.checked(key, is_utc_time, "is not an RFC 3339 UTC time ending in Z")
    }

    fn uint(&mut self, key: &str, max: u64) -> Option<u64> {
        match self.get(key)?.as_u64() {
            Some(n) if n <= max => Some(n),
            _ => {
                self.bad(key, &format!("is not an integer in 0..={max}"));
                None
            }
        }
    }

    fn opt_uint(&mut self, key: &str) -> Option<Option<u64>> {
        match self.get(key)? {
            Value::Null => Some(None),
            v => match v.as_u64() {
                Some(n) => Some(Some(n)),
                None => {
                    self.bad(key, "is not a non-negative integer or null");
                    None
                }
            },
        }
    }

    fn opt_i32(&mut self, key: &str) -> Option<Option<i32>> {
        match self.get(key)? {
            Value::Null => Some(None),
            v => match v.as_i64().and_then(|n| i32::try_from(n).ok()) {
                Some(n) => Some(Some(n)),
                None => {
                    self.bad(key, "is not a 32-bit integer or null");
                    None
                }
            },
        }
    }

    fn bool(&mut self, key: &str) -> Option<bool> {
        match self.get(key)? {
            Value::Bool(b) => Some(*b),
            _ => {
                self.bad(key, "is not a boolean");
                None
            }
        }
    }

    fn opt_bool(&mut self, key: &str) -> Option<Option<bool>> {
        match self.get(key)? {
            Value::Bool(b) => Some(Some(*b)),
            Value::Null => Some(None),
            _ => {
                self.bad(key, "is not a boolean or null");
                None
            }
        }
    }

    fn object(&mut self, key: &str) -> Option<&'a Map<String, Value>> {
        match self.get(key)? {
            Value::Object(m) => Some(m),
            _ => {
                self.bad(key, "is not an object");
                None
            }
        }
    }

    /// `non_claims`: an array of strings holding at least the four SPEC §4.3 entries.
    fn non_claims(&mut self, key: &str) -> Option<()> {
        let Value::Array(items) = self.get(key)? else {
            self.bad(key, "is not an array");
            return None;
        };
        let strs: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
        if strs.len() != items.len() {
            self.bad(key, "holds a non-string");
            return None;
        }
        if let Some(missing) = crate::outcome::NON_CLAIMS
            .iter()
            .find(|c| !strs.contains(c))
        {
            self.bad(key, &format!("lacks {missing:?}"));
            return None;
        }
        Some(())
    }

    /// `producer`: `{name: "assay", version: string}`.
    fn producer(&mut self, key: &str) -> Option<()> {
        let m = self.object(key)?;
        let what = format!("{} `{key}`", self.what);
        let mut p = Fields::new(what, m, self.r);
        p.equals("name", "assay");
        p.str("version");
        let ok = p.ok;
        if !ok {
            self.ok = false;
        }
        ok.then_some(())
    }
}

/// protocol.json, checked.
struct ProtocolView<'a> {
    session_id: &'a str,
    event_source: &'a str,
    server_id: &'a str,
}

fn check_protocol<'a>(m: &'a Map<String, Value>, r: &mut Reasons) -> Option<ProtocolView<'a>> {
    let mut f = Fields::new(PROTOCOL, m, r);
    f.equals("schema", "assay.capture.protocol.v1");
    let session_id = f.session_id("session_id");
    let event_source = f.checked("event_source", is_event_source, "is not an absolute URI");
    let server_id = f.str("server_id");
    f.time("created_at");
    // The reader opens fixed names; a protocol naming other files describes another layout.
    f.equals("decision_log", LOG);
    f.equals("session_context", CONTEXT);
    f.equals("session_stop", STOP);
    f.producer("producer");
    if !f.ok {
        return None;
    }
    Some(ProtocolView {
        session_id: session_id?,
        event_source: event_source?,
        server_id: server_id?,
    })
}

/// The CloudEvents envelope of a companion event (SPEC §4).
struct Envelope<'a> {
    id: &'a str,
    source: &'a str,
    data: &'a Map<String, Value>,
}

fn check_envelope<'a>(
    name: &str,
    m: &'a Map<String, Value>,
    ty: &str,
    r: &mut Reasons,
) -> Option<Envelope<'a>> {
    let mut f = Fields::new(name, m, r);
    f.equals("specversion", "1.0");
    let id = f.str("id");
    f.equals("type", ty);
    let source = f.checked("source", is_event_source, "is not an absolute URI");
    f.time("time");
    f.equals("datacontenttype", "application/json");
    let data = f.object("data");
    if !f.ok {
        return None;
    }
    Some(Envelope {
        id: id?,
        source: source?,
        data: data?,
    })
}

/// session-context.json, checked (SPEC §4.2: every stable context field is required).
struct ContextView<'a> {
    id: &'a str,
    source: &'a str,
    session_id: &'a str,
    server_id: &'a str,
    server_pid: u64,
    policy_sha256: &'a str,
    decision_log: &'a str,
    session_stop_requested: bool,
    dry_run: bool,
}

fn check_context<'a>(m: &'a Map<String, Value>, r: &mut Reasons) -> Option<ContextView<'a>> {
    let env = check_envelope(CONTEXT, m, "assay.mcp.session.context.v1", r);
    let data = match &env {
        Some(e) => e.data,
        None => {
            // Still check the data fields when only the envelope is wrong.
            let Some(Value::Object(d)) = m.get("data") else {
                return None;
            };
            d
        }
    };
    let mut f = Fields::new(format!("{CONTEXT} data"), data, r);
    let session_id = f.session_id("session_id");
    let server_id = f.str("server_id");
    let server_pid = f.uint("server_pid", u64::from(u32::MAX));
    f.time("started_at");
    let policy_sha256 = f.sha256("policy_sha256");
    f.opt_str("policy_name");
    let decision_log = f.one_of("decision_log", &["new", "append", "temporary", "absent"]);
    let session_stop_requested = f.bool("session_stop_requested");
    let dry_run = f.bool("dry_run");
    // SPEC §4.2: a boolean when present; contexts written without it are accepted.
    if data
        .get("hide_refused_tools")
        .is_some_and(|v| !v.is_boolean())
    {
        f.bad("hide_refused_tools", "is not a boolean");
    }
    f.sha256("command_sha256");
    f.producer("producer");
    f.equals("assertion_basis", "producer_observation");
    f.non_claims("non_claims");
    if !f.ok {
        return None;
    }
    let env = env?;
    Some(ContextView {
        id: env.id,
        source: env.source,
        session_id: session_id?,
        server_id: server_id?,
        server_pid: server_pid?,
        policy_sha256: policy_sha256?,
        decision_log: decision_log?,
        session_stop_requested: session_stop_requested?,
        dry_run: dry_run?,
    })
}

/// session-stop.json, checked (SPEC §4.3: every key always present).
struct StopView<'a> {
    id: &'a str,
    source: &'a str,
    data: StopData,
}

fn check_stop<'a>(m: &'a Map<String, Value>, r: &mut Reasons) -> Option<StopView<'a>> {
    let env = check_envelope(STOP, m, "assay.mcp.session.stop.v1", r);
    let data = match &env {
        Some(e) => e.data,
        None => {
            let Some(Value::Object(d)) = m.get("data") else {
                return None;
            };
            d
        }
    };
    let mut f = Fields::new(format!("{STOP} data"), data, r);
    f.session_id("session_id");
    f.str("server_id");
    f.uint("server_pid", u64::from(u32::MAX));
    f.opt_str("session_context_id");
    f.one_of("session_end", &["client_closed", "proxy_error"]);
    f.one_of("termination", &["exited", "signaled", "unknown"]);
    f.opt_i32("exit_code");
    f.opt_i32("signal");
    f.opt_bool("core_dumped");
    f.bool("assay_kill_requested");
    f.one_of(
        "decision_log",
        &["complete", "incomplete", "temporary", "absent", "unknown"],
    );
    f.opt_uint("decision_events_written");
    f.opt_uint("decision_events_dropped");
    f.opt_sha256("decision_prefix_sha256");
    f.equals("assertion_basis", "producer_observation");
    f.non_claims("non_claims");
    if !f.ok {
        return None;
    }
    let env = env?;
    // Every field was checked above, so this only fails on a bug; report it rather than panic.
    match serde_json::from_value::<StopData>(Value::Object(data.clone())) {
        Ok(data) => Some(StopView {
            id: env.id,
            source: env.source,
            data,
        }),
        Err(e) => {
            r.push(ReasonCode::SchemaMismatch, format!("{STOP} data: {e}"));
            None
        }
    }
}

/// Stop fields that contradict each other (SPEC §3.2, §4.1, §4.3).
fn check_accounting(s: &StopData, r: &mut Reasons) {
    let mut bad =
        |msg: String| r.push(ReasonCode::InconsistentAccounting, format!("{STOP}: {msg}"));
    match s.termination {
        Termination::Exited => {
            if !matches!(s.exit_code, Some(0..=255))
                || s.signal.is_some()
                || s.core_dumped.is_some()
            {
                bad(
                    "termination exited needs exit_code 0..=255 and null signal/core_dumped".into(),
                );
            }
        }
        Termination::Signaled => {
            if s.exit_code.is_some()
                || !matches!(s.signal, Some(1..=127))
                || s.core_dumped.is_none()
            {
                bad(
                    "termination signaled needs signal 1..=127, core_dumped set and null exit_code"
                        .into(),
                );
            }
        }
        Termination::Unknown => {
            if s.exit_code.is_some() || s.signal.is_some() || s.core_dumped.is_some() {
                bad("termination unknown needs null exit_code, signal and core_dumped".into());
            }
        }
    }
    let counters = [
        s.decision_events_written.is_some(),
        s.decision_events_dropped.is_some(),
        s.decision_prefix_sha256.is_some(),
    ];
    let all_set = counters.iter().all(|&c| c);
    let none_set = counters.iter().all(|&c| !c);
    if !all_set && !none_set {
        bad("decision accounting fields are neither all set nor all null".into());
    }
    let dropped = s.decision_events_dropped.unwrap_or(0);
    match s.decision_log {
        DecisionLogState::Complete => {
            if !all_set {
                bad("decision_log complete without decision accounting".into());
            }
            if dropped > 0 {
                bad(format!(
                    "decision_log complete with {dropped} dropped decision events"
                ));
            }
            if s.session_end == SessionEnd::ProxyError {
                bad("decision_log complete with session_end proxy_error".into());
            }
        }
        DecisionLogState::Incomplete => {
            if !all_set {
                bad("decision_log incomplete without decision accounting".into());
            }
            if dropped == 0 && s.session_end == SessionEnd::ClientClosed {
                bad(
                    "decision_log incomplete with no dropped events and session_end client_closed"
                        .into(),
                );
            }
        }
        DecisionLogState::Absent | DecisionLogState::Unknown => {
            if !none_set {
                bad(format!(
                    "decision_log {} with decision accounting present",
                    if s.decision_log == DecisionLogState::Absent {
                        "absent"
                    } else {
                        "unknown"
                    }
                ));
            }
        }
        DecisionLogState::Temporary => {}
    }
}

/// What every decision line must agree with, from the best available source.
struct Expect<'a> {
    session_id: Option<&'a str>,
    source: Option<&'a str>,
    policy_sha256: Option<&'a str>,
    dry_run: Option<bool>,
}

/// A JSON string, borrowed from the line unless it holds escapes.
struct JStr<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for JStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = JStr<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<JStr<'a>, E> {
                Ok(JStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<JStr<'a>, E> {
                Ok(JStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<JStr<'a>, E> {
                Ok(JStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V(PhantomData))
    }
}

/// A JSON string that is checked for its type only, never stored (no allocation for escapes).
struct IsStr;

impl<'de> Deserialize<'de> for IsStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = IsStr;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<IsStr, E> {
                Ok(IsStr)
            }
        }
        d.deserialize_str(V)
    }
}

impl std::ops::Deref for JStr<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// A nullable field that must still be present (plain `Option` would accept a missing key).
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d)
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Default, Debug)]
#[serde(rename_all = "lowercase")]
pub(super) enum Decision {
    #[default]
    Allow,
    Deny,
    Error,
}

/// SPEC §4.1 reason codes.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Default, Debug)]
pub(super) enum PolicyCode {
    #[serde(rename = "P_POLICY_ALLOW")]
    #[default]
    PolicyAllow,
    #[serde(rename = "P_TOOL_DENIED")]
    ToolDenied,
    #[serde(rename = "P_TOOL_NOT_ALLOWED")]
    ToolNotAllowed,
    #[serde(rename = "P_ARG_CONSTRAINT")]
    ArgConstraint,
    #[serde(rename = "P_ARG_SCHEMA")]
    ArgSchema,
    #[serde(rename = "P_MALFORMED")]
    Malformed,
    #[serde(rename = "P_BATCH_REFUSED")]
    BatchRefused,
}

#[derive(Deserialize)]
pub(super) struct DecisionEvent<'a> {
    #[serde(borrow)]
    specversion: JStr<'a>,
    #[serde(borrow)]
    id: JStr<'a>,
    #[serde(rename = "type", borrow)]
    ty: JStr<'a>,
    #[serde(borrow)]
    source: JStr<'a>,
    #[serde(borrow)]
    time: JStr<'a>,
    #[serde(borrow)]
    datacontenttype: JStr<'a>,
    #[serde(borrow)]
    data: DecisionData<'a>,
}

#[derive(Deserialize)]
struct DecisionData<'a> {
    #[serde(borrow)]
    session_id: JStr<'a>,
    seq: u64,
    #[serde(deserialize_with = "nullable")]
    tool: Option<IsStr>,
    #[serde(deserialize_with = "nullable")]
    tool_call_id: Option<IsStr>,
    decision: Decision,
    reason_code: PolicyCode,
    reason: IsStr,
    #[serde(deserialize_with = "nullable")]
    matched_rule: Option<IsStr>,
    enforced: bool,
    #[serde(borrow)]
    policy_sha256: JStr<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    arguments_sha256: Option<JStr<'a>>,
}

/// Line-level reasons, capped at [`MAX_LINE_REASONS`].
struct LineReasons {
    list: Vec<Reason>,
    suppressed: usize,
    first_suppressed: Option<ReasonCode>,
}

impl LineReasons {
    fn push(&mut self, code: ReasonCode, line: usize, msg: impl fmt::Display) {
        if self.list.len() < MAX_LINE_REASONS {
            self.list.push(Reason {
                code,
                detail: format!("{LOG} line {}: {msg}", line + 1),
            });
        } else {
            self.suppressed += 1;
            self.first_suppressed.get_or_insert(code);
        }
    }

    fn finish(self, r: &mut Reasons) {
        r.0.extend(self.list);
        if let Some(code) = self.first_suppressed {
            r.push(
                code,
                format!("{LOG}: {} more line problems not listed", self.suppressed),
            );
        }
    }
}

/// `evt_decision_<session_id>_<seq>` without allocating.
fn decision_id_matches(id: &str, session_id: &str, seq: u64) -> bool {
    id.strip_prefix("evt_decision_")
        .and_then(|s| s.strip_prefix(session_id))
        .and_then(|s| s.strip_prefix('_'))
        .is_some_and(|n| {
            !n.is_empty()
                && (n == "0" || !n.starts_with('0'))
                && n.bytes().all(|b| b.is_ascii_digit())
                && n.parse::<u64>() == Ok(seq)
        })
}

/// The fields of a decision line that the checks read, borrowed from the line (or from the
/// general path's parse).
#[derive(Default, Debug, PartialEq, Eq)]
pub(super) struct LineView<'a> {
    pub(super) specversion: &'a str,
    pub(super) id: &'a str,
    pub(super) ty: &'a str,
    pub(super) source: &'a str,
    pub(super) time: &'a str,
    pub(super) datacontenttype: &'a str,
    pub(super) session_id: &'a str,
    pub(super) seq: u64,
    pub(super) decision: Decision,
    pub(super) reason_code: PolicyCode,
    pub(super) enforced: bool,
    pub(super) policy_sha256: &'a str,
    pub(super) arguments_sha256: Option<&'a str>,
}

impl<'a> LineView<'a> {
    pub(super) fn of(ev: &'a DecisionEvent<'a>) -> Self {
        let d = &ev.data;
        // Fields read only for their presence and type.
        let _ = (&d.tool, &d.tool_call_id, &d.reason, &d.matched_rule);
        LineView {
            specversion: &ev.specversion,
            id: &ev.id,
            ty: &ev.ty,
            source: &ev.source,
            time: &ev.time,
            datacontenttype: &ev.datacontenttype,
            session_id: &d.session_id,
            seq: d.seq,
            decision: d.decision,
            reason_code: d.reason_code,
            enforced: d.enforced,
            policy_sha256: &d.policy_sha256,
            arguments_sha256: d.arguments_sha256.as_deref(),
        }
    }
}

fn check_line(i: usize, line: &[u8], exp: &Expect<'_>, lr: &mut LineReasons) {
    let line = match std::str::from_utf8(line) {
        Ok(t) => t,
        Err(e) => {
            lr.push(
                ReasonCode::InvalidJson,
                i,
                format_args!("invalid JSON at byte {}", e.valid_up_to()),
            );
            return;
        }
    };
    // The common shape in one pass; anything else through the strict scan and serde, which
    // also name the problem.
    if let Some(v) = fastline::parse(line) {
        check_fields(i, &v, exp, lr);
        return;
    }
    if let Err(e) = strict_json::scan_str(line, MAX_DEPTH) {
        lr.push(scan_reason(e.kind), i, e);
        return;
    }
    let ev: DecisionEvent<'_> = match serde_json::from_str(line) {
        Ok(ev) => ev,
        Err(e) => {
            lr.push(ReasonCode::SchemaMismatch, i, e);
            return;
        }
    };
    check_fields(i, &LineView::of(&ev), exp, lr);
}

/// The checks on a parsed decision line (line `i`, 0-based).
fn check_fields(i: usize, d: &LineView<'_>, exp: &Expect<'_>, lr: &mut LineReasons) {
    let mut schema = |what: &str| lr.push(ReasonCode::SchemaMismatch, i, what);
    if d.specversion != "1.0" {
        schema("specversion is not \"1.0\"");
    }
    if d.ty != "assay.tool.decision" {
        schema("type is not \"assay.tool.decision\"");
    }
    if d.datacontenttype != "application/json" {
        schema("datacontenttype is not \"application/json\"");
    }
    if !is_utc_time(d.time) {
        schema("time is not an RFC 3339 UTC time ending in Z");
    }
    if !is_session_id(d.session_id) {
        schema("data.session_id is not 32 lowercase hex characters");
    }
    if !is_hex(d.policy_sha256, 64) {
        schema("data.policy_sha256 is not 64 lowercase hex characters");
    }
    if d.arguments_sha256.is_some_and(|s| !is_hex(s, 64)) {
        schema("data.arguments_sha256 is not 64 lowercase hex characters or null");
    }
    if (d.decision == Decision::Allow) != (d.reason_code == PolicyCode::PolicyAllow) {
        schema("decision allow goes with reason_code P_POLICY_ALLOW and only with it");
    }
    if d.seq != i as u64 {
        lr.push(
            ReasonCode::CountMismatch,
            i,
            format_args!("seq {} where {i} was expected", d.seq),
        );
    }
    let sid = exp.session_id.unwrap_or(d.session_id);
    if d.session_id != sid {
        lr.push(
            ReasonCode::IdMismatch,
            i,
            "data.session_id is not this session's",
        );
    }
    if !decision_id_matches(d.id, sid, d.seq) {
        lr.push(
            ReasonCode::IdMismatch,
            i,
            "id is not evt_decision_<session_id>_<seq>",
        );
    }
    match exp.source {
        Some(src) if d.source != src => lr.push(
            ReasonCode::ContextMismatch,
            i,
            "source differs from the session's",
        ),
        None if !is_event_source(d.source) => lr.push(
            ReasonCode::SchemaMismatch,
            i,
            "source is not an absolute URI",
        ),
        _ => {}
    }
    if exp.policy_sha256.is_some_and(|p| d.policy_sha256 != p) {
        lr.push(
            ReasonCode::ContextMismatch,
            i,
            "data.policy_sha256 differs from the context's",
        );
    }
    if exp.dry_run.is_some_and(|dry| d.enforced == dry) {
        lr.push(
            ReasonCode::ContextMismatch,
            i,
            format_args!(
                "data.enforced {} contradicts the context's dry_run",
                d.enforced
            ),
        );
    }
}

/// The log is read in chunks of this size: no file-sized buffer (whose fresh pages would cost
/// more to fault in than the bytes cost to copy), and each chunk is still in cache when its lines
/// are checked and it is hashed.
const LOG_CHUNK: usize = 64 * 1024;

/// SHA-256 of the log and of its complete-line prefix, in one pass: the running hash is
/// snapshotted after the last `\n` of every chunk.
struct LogHash {
    all: Sha256,
    prefix: Sha256,
}

impl LogHash {
    fn new() -> Self {
        Self {
            all: Sha256::new(),
            prefix: Sha256::new(),
        }
    }

    fn update(&mut self, chunk: &[u8]) {
        match memchr::memrchr(b'\n', chunk) {
            Some(p) => {
                let (head, rest) = chunk.split_at(p + 1);
                self.all.update(head);
                self.prefix = self.all.clone();
                self.all.update(rest);
            }
            None => self.all.update(chunk),
        }
    }

    /// (SHA-256 of the whole file, SHA-256 of the bytes up to and including the last `\n`).
    fn finish(self) -> (String, String) {
        (hex(&self.all.finalize()), hex(&self.prefix.finalize()))
    }
}

/// Counts complete lines and checks the first [`MAX_DECISIONS`] of them.
struct Lines<'e> {
    exp: &'e Expect<'e>,
    count: usize,
    lr: LineReasons,
}

impl Lines<'_> {
    fn line(&mut self, bytes: &[u8]) {
        if self.count < MAX_DECISIONS {
            check_line(self.count, bytes, self.exp, &mut self.lr);
        }
        self.count += 1;
    }
}

/// Reads the decision log in chunks through the bounded opener, hashing each chunk once and
/// checking lines as they complete; records its digest in `files` when the whole file was read within the
/// bound. Same reasons, in the same order, as reading the whole file first: an over-bound or
/// unreadable log yields only its `too_large` / `missing_file` reason, and more than
/// [`MAX_DECISIONS`] lines yield only `too_many_decisions` (the line reasons gathered are dropped).
fn check_log_file(
    dir: &Path,
    exp: &Expect<'_>,
    stop: Option<&StopData>,
    r: &mut Reasons,
    files: &mut BTreeMap<String, FileDigest>,
) {
    let refused = |e: BoundedError, r: &mut Reasons| {
        let code = match e {
            BoundedError::Missing | BoundedError::Io(_) => ReasonCode::MissingFile,
            BoundedError::NotRegular(_) => ReasonCode::NotRegularFile,
            BoundedError::TooLarge { .. } => ReasonCode::TooLarge,
        };
        r.push(code, format!("{LOG} {}", e.describe(MAX_LOG_BYTES)));
    };
    let file = match bounded::open_regular(&dir.join(LOG), MAX_LOG_BYTES) {
        Ok((file, _)) => file,
        Err(e) => return refused(e, r),
    };
    let mut reader = file.take(MAX_LOG_BYTES + 1);
    let mut lines = Lines {
        exp,
        count: 0,
        lr: LineReasons {
            list: Vec::new(),
            suppressed: 0,
            first_suppressed: None,
        },
    };
    // A line split across chunks is assembled here; at the end it holds the partial tail.
    let mut carry: Vec<u8> = Vec::new();
    let mut total: u64 = 0;

    let mut hash = LogHash::new();
    let mut buf = vec![0u8; LOG_CHUNK];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return refused(BoundedError::Io(e), r),
        };
        total += n as u64;
        if total > MAX_LOG_BYTES {
            return refused(BoundedError::TooLarge { seen: total }, r);
        }
        let chunk = buf.get(..n).unwrap_or_default();
        hash.update(chunk);
        let mut rest = chunk;
        if !carry.is_empty() {
            let Some(p) = memchr::memchr(b'\n', rest) else {
                carry.extend_from_slice(rest);
                continue;
            };
            carry.extend_from_slice(&rest[..p]);
            lines.line(&carry);
            carry.clear();
            rest = &rest[p + 1..];
        }
        let mut start = 0;
        for p in memchr::memchr_iter(b'\n', rest) {
            lines.line(&rest[start..p]);
            start = p + 1;
        }
        carry.extend_from_slice(&rest[start..]);
    }
    let (file_sha, prefix_sha) = hash.finish();
    files.insert(
        LOG.to_string(),
        FileDigest {
            bytes: total,
            sha256: file_sha.clone(),
        },
    );
    let tail = carry;
    let count = lines.count;
    if count > MAX_DECISIONS {
        r.push(
            ReasonCode::TooManyDecisions,
            format!("{LOG} holds {count} decision lines, over the {MAX_DECISIONS}-line bound"),
        );
    } else {
        lines.lr.finish(r);
    }

    let Some(stop) = stop else { return };
    let full = match stop.decision_log {
        DecisionLogState::Complete => true,
        DecisionLogState::Incomplete => false,
        _ => return,
    };
    if full && !tail.is_empty() {
        r.push(
            ReasonCode::PartialLine,
            format!(
                "{LOG} ends with {} bytes without a newline but decision_log is complete",
                tail.len()
            ),
        );
    }
    if let Some(written) = stop.decision_events_written {
        if written != count as u64 {
            r.push(
                ReasonCode::CountMismatch,
                format!("{LOG} holds {count} complete lines, decision_events_written is {written}"),
            );
        }
    }
    if let Some(want) = &stop.decision_prefix_sha256 {
        let (got, what) = if full {
            (&file_sha, "the file")
        } else {
            (&prefix_sha, "the complete-line prefix")
        };
        if got != want {
            r.push(
                ReasonCode::DigestMismatch,
                format!("{LOG}: SHA-256 of {what} is {got}, decision_prefix_sha256 is {want}"),
            );
        }
    }
}

/// Cross-file agreement (SPEC §7).
fn check_agreement(
    p: Option<&ProtocolView<'_>>,
    c: Option<&ContextView<'_>>,
    s: Option<&StopView<'_>>,
    r: &mut Reasons,
) {
    if let Some(c) = c {
        if c.id.strip_prefix("evt_context_") != Some(c.session_id) {
            r.push(
                ReasonCode::IdMismatch,
                format!("{CONTEXT}: id {:?} is not evt_context_<session_id>", c.id),
            );
        }
    }
    if let Some(s) = s {
        if s.id.strip_prefix("evt_stop_") != Some(s.data.session_id.as_str()) {
            r.push(
                ReasonCode::IdMismatch,
                format!("{STOP}: id {:?} is not evt_stop_<session_id>", s.id),
            );
        }
    }
    if let (Some(c), Some(s)) = (c, s) {
        let d = &s.data;
        let mut mismatch = |field: &str, stop: &dyn fmt::Display, ctx: &dyn fmt::Display| {
            r.push(
                ReasonCode::ContextMismatch,
                format!("{field}: stop has {stop}, context has {ctx}"),
            );
        };
        if d.session_id != c.session_id {
            mismatch("session_id", &d.session_id, &c.session_id);
        }
        if s.source != c.source {
            mismatch("source", &s.source, &c.source);
        }
        if d.server_id != c.server_id {
            mismatch("server_id", &d.server_id, &c.server_id);
        }
        if u64::from(d.server_pid) != c.server_pid {
            mismatch("server_pid", &d.server_pid, &c.server_pid);
        }
        if d.session_context_id.as_deref() != Some(c.id) {
            let got = d.session_context_id.as_deref().unwrap_or("null");
            mismatch("session_context_id / context id", &got, &c.id);
        }
        if !c.session_stop_requested {
            r.push(
                ReasonCode::ContextMismatch,
                format!("{CONTEXT}: session_stop_requested is false but a stop record exists"),
            );
        }
        let retained = matches!(
            d.decision_log,
            DecisionLogState::Complete | DecisionLogState::Incomplete
        );
        if retained && matches!(c.decision_log, "absent" | "temporary") {
            r.push(
                ReasonCode::ContextMismatch,
                format!(
                    "context decision_log {} contradicts a retained stop decision_log",
                    c.decision_log
                ),
            );
        }
    }
    if let Some(p) = p {
        let mut against = |file: &str, sid: &str, source: &str, server_id: &str| {
            for (field, theirs, ours) in [
                ("session_id", sid, p.session_id),
                ("event_source/source", source, p.event_source),
                ("server_id", server_id, p.server_id),
            ] {
                if theirs != ours {
                    r.push(
                        ReasonCode::ProtocolMismatch,
                        format!("{field}: {PROTOCOL} has {ours:?}, {file} has {theirs:?}"),
                    );
                }
            }
        };
        if let Some(c) = c {
            against(CONTEXT, c.session_id, c.source, c.server_id);
        }
        if let Some(s) = s {
            against(STOP, &s.data.session_id, s.source, &s.data.server_id);
        }
    }
}

/// The loss behind an `incomplete` log (always at least one reason).
fn loss_reason(s: &StopData, r: &mut Reasons) {
    let dropped = s.decision_events_dropped.unwrap_or(0);
    let mut causes = Vec::new();
    if dropped > 0 {
        causes.push(format!(
            "the writer was poisoned and {dropped} decision events were dropped"
        ));
    }
    if s.session_end == SessionEnd::ProxyError {
        causes.push("the session ended with proxy_error".to_string());
    }
    if causes.is_empty() {
        causes.push("decision_log is incomplete".to_string());
    }
    r.push(ReasonCode::DecisionLoss, causes.join("; "));
}

/// The whole reader: files, checks, verdict.
pub(super) fn judge(dir: &Path) -> Closure {
    let mut r = Reasons::default();
    let mut files = BTreeMap::new();
    // SPEC §10: a discovery-only run leaves no-session.json instead of a stop record.
    let marker = no_session::read(dir, &mut r, &mut files);

    let mut companion = |name: &str, r: &mut Reasons| {
        let bytes = read_file(dir, name, MAX_COMPANION_BYTES, r)?;
        files.insert(name.to_string(), digest_of(&bytes));
        parse_object(name, &bytes, r)
    };
    let protocol = companion(PROTOCOL, &mut r);
    let context = companion(CONTEXT, &mut r);
    let stop = match &marker {
        Some(m) if !m.stop_entry => None,
        _ => companion(STOP, &mut r),
    };

    let p = protocol.as_ref().and_then(|m| check_protocol(m, &mut r));
    let c = context.as_ref().and_then(|m| check_context(m, &mut r));
    let s = stop.as_ref().and_then(|m| check_stop(m, &mut r));
    if let Some(s) = &s {
        check_accounting(&s.data, &mut r);
    }
    check_agreement(p.as_ref(), c.as_ref(), s.as_ref(), &mut r);

    let exp = Expect {
        session_id: s
            .as_ref()
            .map(|s| s.data.session_id.as_str())
            .or(c.as_ref().map(|c| c.session_id))
            .or(p.as_ref().map(|p| p.session_id)),
        source: s
            .as_ref()
            .map(|s| s.source)
            .or(c.as_ref().map(|c| c.source))
            .or(p.as_ref().map(|p| p.event_source)),
        policy_sha256: c.as_ref().map(|c| c.policy_sha256),
        dry_run: c.as_ref().map(|c| c.dry_run),
    };
    check_log_file(dir, &exp, s.as_ref().map(|s| &s.data), &mut r, &mut files);
    if let Some(m) = &marker {
        no_session::check(m, dir, p.as_ref().map(|p| p.session_id), &files, &mut r);
    }

    let closure = match s.as_ref().map(|s| s.data.decision_log) {
        None => ClosureKind::Unknown,
        Some(DecisionLogState::Complete) => {
            if r.any_hard() {
                ClosureKind::Unknown
            } else {
                ClosureKind::Closed
            }
        }
        Some(DecisionLogState::Incomplete) => {
            if let Some(s) = &s {
                loss_reason(&s.data, &mut r);
            }
            if r.any_hard() {
                ClosureKind::Unknown
            } else {
                ClosureKind::Incomplete
            }
        }
        Some(state) => {
            let name = match state {
                DecisionLogState::Temporary => "temporary",
                DecisionLogState::Absent => "absent",
                _ => "unknown",
            };
            r.push(
                ReasonCode::DecisionLogNotRetained,
                format!("{STOP}: decision_log is {name}"),
            );
            ClosureKind::Unknown
        }
    };

    // Defensive: a verdict other than closed must say why (SPEC §7: empty only for closed).
    if closure == ClosureKind::Unknown && r.0.is_empty() {
        r.push(
            ReasonCode::SchemaMismatch,
            format!("{STOP}: no usable stop record"),
        );
    }

    let session_id = exp
        .session_id
        .filter(|sid| is_session_id(sid))
        .map(str::to_string);
    let stop_fields = s
        .as_ref()
        .and_then(|s| match serde_json::to_value(&s.data) {
            Ok(Value::Object(mut m)) => {
                m.remove("session_id");
                m.remove("non_claims");
                Some(m)
            }
            _ => None,
        });

    Closure {
        schema: CLOSURE_SCHEMA,
        closure,
        reasons: r.0,
        session_id,
        stop: stop_fields,
        files,
        non_claims: CLOSURE_NON_CLAIMS.iter().map(|s| s.to_string()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_format() {
        for ok in [
            "2025-01-02T03:04:05Z",
            "2025-12-31T23:59:60.123456789Z",
            "2025-01-02T03:04:05.1Z",
        ] {
            assert!(is_utc_time(ok), "{ok}");
        }
        for bad in [
            "2025-01-02T03:04:05",
            "2025-01-02T03:04:05+00:00",
            "2025-13-02T03:04:05Z",
            "2025-01-02t03:04:05Z",
            "2025-01-02T03:04:05.Z",
            "2025-01-02T03:04:05.1234567890Z",
            "",
            "Z",
        ] {
            assert!(!is_utc_time(bad), "{bad}");
        }
    }

    #[test]
    fn event_source_format() {
        assert!(is_event_source("urn+x://host/path"));
        assert!(is_event_source("file:///tmp/x"));
        assert!(!is_event_source("1x://a"));
        assert!(!is_event_source("x:/a"));
        assert!(!is_event_source("x://a b"));
        assert!(!is_event_source("://a"));
    }

    #[test]
    fn decision_ids() {
        let sid = "0123456789abcdef0123456789abcdef";
        assert!(decision_id_matches(
            &format!("evt_decision_{sid}_0"),
            sid,
            0
        ));
        assert!(decision_id_matches(
            &format!("evt_decision_{sid}_12"),
            sid,
            12
        ));
        assert!(!decision_id_matches(
            &format!("evt_decision_{sid}_012"),
            sid,
            12
        ));
        assert!(!decision_id_matches(
            &format!("evt_decision_{sid}_"),
            sid,
            0
        ));
        assert!(!decision_id_matches(
            &format!("evt_decision_{sid}_+1"),
            sid,
            1
        ));
        assert!(!decision_id_matches(
            &format!("evt_decision_{sid}x_1"),
            sid,
            1
        ));
    }
}
