//! The decision-line types of the capture reader (SPEC §4.1, §7): what every line must agree
//! with, the borrowed views of a parsed line and the per-line reason collector. A leaf shared
//! by the general path (`log`) and the one-pass parser (`fast_line_parser`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{Deserializer, Visitor};

use super::fields::{MAX_LINE_REASONS, Reasons};
use super::judgement::{ClosureReasonCode, Reason};
use crate::capture_files::DECISIONS;
use crate::direction::Direction;
use crate::reason_code::ReasonCode;

/// What every decision line must agree with, from the best available source.
pub(super) struct Expect<'a> {
    pub(super) session_id: Option<&'a str>,
    pub(super) source: Option<&'a str>,
    pub(super) policy_sha256: Option<&'a str>,
    pub(super) dry_run: Option<bool>,
}

/// [`Expect`] owned: what the lines are checked against when the companions it comes from are
/// gone (a capture's facts, `facts`) or the lines come before the stop record (a log followed as
/// it grows, `follow`, from the session's start to its stop).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct OwnedExpect {
    session_id: Option<String>,
    source: Option<String>,
    policy_sha256: Option<String>,
    dry_run: Option<bool>,
}

impl OwnedExpect {
    pub(super) fn of(e: &Expect<'_>) -> Self {
        Self {
            session_id: e.session_id.map(str::to_string),
            source: e.source.map(str::to_string),
            policy_sha256: e.policy_sha256.map(str::to_string),
            dry_run: e.dry_run,
        }
    }

    pub(super) fn view(&self) -> Expect<'_> {
        Expect {
            session_id: self.session_id.as_deref(),
            source: self.source.as_deref(),
            policy_sha256: self.policy_sha256.as_deref(),
            dry_run: self.dry_run,
        }
    }

    /// Whether `e` asks exactly what this does (then lines checked against either are judged
    /// the same).
    pub(super) fn is(&self, e: &Expect<'_>) -> bool {
        self.session_id.as_deref() == e.session_id
            && self.source.as_deref() == e.source
            && self.policy_sha256.as_deref() == e.policy_sha256
            && self.dry_run == e.dry_run
    }
}

/// A JSON string, borrowed from the line unless it holds escapes.
pub(super) struct JStr<'a>(Cow<'a, str>);

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
pub(super) struct IsStr;

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

/// A value read as `T` only when it is a JSON object. `serde`'s derived structs also accept an
/// array of their fields in order; a CloudEvents line, its `data` and a listing's entries are
/// objects, so that reading is refused (the error names the type, as any type error does).
pub(super) struct Obj<T>(pub(super) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(ObjectOnly(d)).map(Obj)
    }
}

/// A deserializer that hands its value to the visitor only as a map ([`NoSeq`]).
struct ObjectOnly<D>(D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for ObjectOnly<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(NoSeq(v))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

/// A visitor that takes a map and refuses everything else (the default `visit_*` methods name
/// the unexpected type and what the inner visitor expects).
struct NoSeq<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for NoSeq<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(map)
    }
}

/// A nullable field that must still be present (plain `Option` would accept a missing key).
pub(super) fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
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

#[derive(Deserialize)]
pub(super) struct DecisionEvent<'a> {
    #[serde(borrow)]
    pub(super) specversion: JStr<'a>,
    #[serde(borrow)]
    pub(super) id: JStr<'a>,
    #[serde(rename = "type", borrow)]
    pub(super) ty: JStr<'a>,
    #[serde(borrow)]
    pub(super) source: JStr<'a>,
    #[serde(borrow)]
    pub(super) time: JStr<'a>,
    #[serde(borrow)]
    pub(super) datacontenttype: JStr<'a>,
    #[serde(borrow)]
    pub(super) data: Obj<DecisionData<'a>>,
}

#[derive(Deserialize)]
pub(super) struct DecisionData<'a> {
    #[serde(borrow)]
    pub(super) session_id: JStr<'a>,
    pub(super) seq: u64,
    #[serde(deserialize_with = "nullable")]
    pub(super) tool: Option<IsStr>,
    #[serde(deserialize_with = "nullable")]
    pub(super) tool_call_id: Option<IsStr>,
    pub(super) decision: Decision,
    pub(super) reason_code: ReasonCode,
    pub(super) reason: IsStr,
    #[serde(deserialize_with = "nullable")]
    pub(super) matched_rule: Option<IsStr>,
    pub(super) enforced: bool,
    #[serde(borrow)]
    pub(super) policy_sha256: JStr<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) arguments_sha256: Option<JStr<'a>>,
    /// SPEC §5.1: present in lines written with pinning support, absent in older ones.
    #[serde(default, borrow)]
    pub(super) tool_definition_sha256: Option<JStr<'a>>,
    /// SPEC §4.1a `record_arguments`: optional; when present a string (the recorded canonical
    /// JSON text, possibly cut), never null.
    #[serde(default, deserialize_with = "present")]
    pub(super) arguments: Option<IsStr>,
    /// SPEC §4.1a: optional; when present a boolean, and present exactly when `arguments` is.
    #[serde(default, deserialize_with = "present")]
    pub(super) arguments_truncated: Option<bool>,
}

/// A field that may be absent but, when present, is never null: absent is `None` (through
/// `#[serde(default)]`), present is read as `T`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// The event types of the decision log (SPEC §4.1, §4.1a; `assay.mcp.result`, SPEC §5.3, is
/// `result_line`'s).
pub(super) const TYPE_TOOL_DECISION: &str = "assay.tool.decision";
/// SPEC §4.1a: what the model was shown.
pub(super) const TYPE_LISTING: &str = "assay.tool.listing";
/// SPEC §4.1a: a decision on a governed method other than `tools/call`.
pub(super) const TYPE_MCP_DECISION: &str = "assay.mcp.decision";

/// Which of the three event types a line is read as. A line whose `type` is neither new type is
/// read as a tool decision (so an older log is judged exactly as before).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LineKind {
    /// `assay.tool.decision` (SPEC §4.1), and any line of another or no `type`.
    Tool,
    /// `assay.tool.listing` (SPEC §4.1a).
    Listing,
    /// `assay.mcp.decision` (SPEC §4.1a).
    Mcp,
    /// `assay.mcp.result` (SPEC §5.3).
    Result,
}

impl LineKind {
    /// The `type` a line of this kind carries.
    pub(super) fn type_name(self) -> &'static str {
        match self {
            LineKind::Tool => TYPE_TOOL_DECISION,
            LineKind::Listing => TYPE_LISTING,
            LineKind::Mcp => TYPE_MCP_DECISION,
            LineKind::Result => TYPE_RESULT,
        }
    }

    /// The prefix of the event `id` before `<session_id>_<seq>`.
    pub(super) fn id_prefix(self) -> &'static str {
        match self {
            LineKind::Tool | LineKind::Mcp => "evt_decision_",
            LineKind::Listing => "evt_listing_",
            LineKind::Result => "evt_result_",
        }
    }
}

/// The `type` of a line, read alone (other members skipped); `None` when absent or not a string.
#[derive(Deserialize)]
struct TypeProbe<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Option<JStr<'a>>,
}

/// The CloudEvents envelope of a new event type around its `data`.
#[derive(Deserialize)]
pub(super) struct Event<'a, D> {
    #[serde(borrow)]
    pub(super) specversion: JStr<'a>,
    #[serde(borrow)]
    pub(super) id: JStr<'a>,
    #[serde(rename = "type", borrow)]
    pub(super) ty: JStr<'a>,
    #[serde(borrow)]
    pub(super) source: JStr<'a>,
    #[serde(borrow)]
    pub(super) time: JStr<'a>,
    #[serde(borrow)]
    pub(super) datacontenttype: JStr<'a>,
    pub(super) data: Obj<D>,
}

/// `data` of an `assay.tool.listing` line (SPEC §4.1a).
#[derive(Deserialize)]
pub(super) struct ListingData<'a> {
    #[serde(borrow)]
    pub(super) session_id: JStr<'a>,
    pub(super) seq: u64,
    /// The method of the request the listing answers; absent in listings written before
    /// listings named it (then a `tools/list` answer or the instructions), never null.
    #[serde(default, borrow, deserialize_with = "present")]
    pub(super) method: Option<JStr<'a>>,
    #[serde(borrow)]
    pub(super) request_id: JStr<'a>,
    #[serde(borrow)]
    pub(super) shown: Vec<Obj<Shown<'a>>>,
    #[serde(borrow)]
    pub(super) removed: Vec<Obj<Removed<'a>>>,
    pub(super) replaced_by_error: bool,
    #[serde(borrow)]
    pub(super) policy_sha256: JStr<'a>,
}

/// One tool a client was shown.
#[derive(Deserialize)]
pub(super) struct Shown<'a> {
    #[serde(borrow)]
    pub(super) name: JStr<'a>,
    #[serde(borrow)]
    pub(super) sha256: JStr<'a>,
}

/// One tool (or `"(instructions)"`) removed from what the client was shown, and why.
#[derive(Deserialize)]
pub(super) struct Removed<'a> {
    #[serde(borrow)]
    pub(super) name: JStr<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) sha256: Option<JStr<'a>>,
    pub(super) reason_code: ReasonCode,
}

/// SPEC §5.3: an answer to a governed request.
pub(super) const TYPE_RESULT: &str = "assay.mcp.result";

/// What the client got of an answer (SPEC §5.3).
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
pub(super) enum Action {
    Forwarded,
    Redacted,
    Refused,
}

/// A request id as recorded: a JSON string or number (never null, a boolean or a container).
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RequestId {
    Str(IsStr),
    Num(serde_json::Number),
}

/// One finding.
#[derive(Deserialize)]
pub(super) struct Finding<'a> {
    #[serde(borrow)]
    pub(super) kind: JStr<'a>,
    #[serde(borrow)]
    pub(super) rule: JStr<'a>,
    #[serde(borrow)]
    pub(super) path: JStr<'a>,
}

/// `data` of an `assay.mcp.result` line.
#[derive(Deserialize)]
pub(super) struct ResultData<'a> {
    #[serde(borrow)]
    pub(super) session_id: JStr<'a>,
    pub(super) seq: u64,
    #[serde(borrow)]
    pub(super) method: JStr<'a>,
    pub(super) request_id: RequestId,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) decision_id: Option<JStr<'a>>,
    #[serde(borrow)]
    pub(super) sha256: JStr<'a>,
    pub(super) bytes: u64,
    pub(super) is_error: bool,
    pub(super) parts: BTreeMap<String, u64>,
    #[serde(borrow)]
    pub(super) findings: Vec<Obj<Finding<'a>>>,
    pub(super) findings_total: u64,
    pub(super) action: Action,
    pub(super) reason_code: ReasonCode,
    pub(super) enforced: bool,
    #[serde(borrow)]
    pub(super) policy_sha256: JStr<'a>,
}

/// `data` of an `assay.mcp.decision` line (SPEC §4.1a).
#[derive(Deserialize)]
pub(super) struct McpData<'a> {
    #[serde(borrow)]
    pub(super) session_id: JStr<'a>,
    pub(super) seq: u64,
    #[serde(borrow)]
    pub(super) method: JStr<'a>,
    pub(super) direction: Direction,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) target: Option<JStr<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) request_id: Option<JStr<'a>>,
    pub(super) decision: Decision,
    pub(super) reason_code: ReasonCode,
    pub(super) reason: IsStr,
    #[serde(deserialize_with = "nullable")]
    pub(super) matched_rule: Option<IsStr>,
    pub(super) enforced: bool,
    #[serde(borrow)]
    pub(super) policy_sha256: JStr<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) params_sha256: Option<JStr<'a>>,
}

/// An `assay.tool.listing` line.
pub(super) type ListingEvent<'a> = Event<'a, ListingData<'a>>;
/// An `assay.mcp.decision` line.
pub(super) type McpEvent<'a> = Event<'a, McpData<'a>>;

/// A line as the general path reads it.
pub(super) enum Parsed<'a> {
    Tool(DecisionEvent<'a>),
    Listing(ListingEvent<'a>),
    Mcp(McpEvent<'a>),
    Result(Event<'a, ResultData<'a>>),
}

impl<'a> Parsed<'a> {
    /// The general path's `serde` parse of a line the strict scan accepted: by its `type`, one of
    /// the three event shapes. A line whose `type` is neither new type (or is absent, or not a
    /// string) is read as a tool decision, as before the new types existed.
    pub(super) fn from_line(line: &'a str) -> Result<Self, serde_json::Error> {
        // An event is a JSON object (the strict scan has checked the JSON; its first byte tells).
        if !line.trim_start().starts_with('{') {
            return Err(serde::de::Error::custom("a log line is not a JSON object"));
        }
        let ty = serde_json::from_str::<TypeProbe<'_>>(line)
            .ok()
            .and_then(|p| p.ty);
        match ty.as_deref() {
            Some(TYPE_LISTING) => serde_json::from_str(line).map(Parsed::Listing),
            Some(TYPE_MCP_DECISION) => serde_json::from_str(line).map(Parsed::Mcp),
            Some(TYPE_RESULT) => serde_json::from_str(line).map(Parsed::Result),
            _ => serde_json::from_str(line).map(Parsed::Tool),
        }
    }

    /// The fields the common checks read, and the kind of line.
    pub(super) fn view(&self) -> (LineView<'_>, LineKind) {
        match self {
            Parsed::Tool(ev) => (LineView::of(ev), LineKind::Tool),
            Parsed::Listing(ev) => {
                let d = &ev.data.0;
                let view = LineView {
                    session_id: &d.session_id,
                    seq: d.seq,
                    policy_sha256: &d.policy_sha256,
                    ..LineView::envelope(ev)
                };
                (view, LineKind::Listing)
            }
            Parsed::Mcp(ev) => {
                let d = &ev.data.0;
                // Fields read only for their presence and type (the direction: for its value).
                let _ = (
                    &d.method,
                    d.direction,
                    &d.target,
                    &d.request_id,
                    &d.reason,
                    &d.matched_rule,
                );
                let view = LineView {
                    session_id: &d.session_id,
                    seq: d.seq,
                    decision: d.decision,
                    reason_code: d.reason_code,
                    enforced: d.enforced,
                    policy_sha256: &d.policy_sha256,
                    arguments_sha256: d.params_sha256.as_deref(),
                    ..LineView::envelope(ev)
                };
                (view, LineKind::Mcp)
            }
            Parsed::Result(ev) => {
                let d = &ev.data.0;
                // No verdict of its own: the view's decision follows the reason code, so the
                // common rule (allow with P_POLICY_ALLOW only) holds; its own rules are
                // `result_line::check_result`'s.
                let view = LineView {
                    session_id: &d.session_id,
                    seq: d.seq,
                    decision: if d.reason_code == ReasonCode::P_POLICY_ALLOW {
                        Decision::Allow
                    } else {
                        Decision::Deny
                    },
                    reason_code: d.reason_code,
                    enforced: d.enforced,
                    policy_sha256: &d.policy_sha256,
                    ..LineView::envelope(ev)
                };
                (view, LineKind::Result)
            }
        }
    }
}

/// Line-level reasons, capped at [`MAX_LINE_REASONS`].
pub(super) struct LineReasons {
    pub(super) list: Vec<Reason>,
    pub(super) suppressed: usize,
    pub(super) first_suppressed: Option<ClosureReasonCode>,
}

impl LineReasons {
    pub(super) fn push(&mut self, code: ClosureReasonCode, line: usize, msg: impl fmt::Display) {
        if self.list.len() < MAX_LINE_REASONS {
            self.list.push(Reason {
                code,
                detail: format!("{DECISIONS} line {}: {msg}", line + 1),
            });
        } else {
            self.suppressed += 1;
            self.first_suppressed.get_or_insert(code);
        }
    }

    pub(super) fn finish(self, r: &mut Reasons) {
        r.0.extend(self.list);
        if let Some(code) = self.first_suppressed {
            r.push(
                code,
                format!(
                    "{DECISIONS}: {} more line problems not listed",
                    self.suppressed
                ),
            );
        }
    }
}

/// `<prefix><session_id>_<seq>` without allocating.
pub(super) fn event_id_matches(id: &str, prefix: &str, session_id: &str, seq: u64) -> bool {
    id.strip_prefix(prefix)
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
#[derive(Debug, PartialEq, Eq)]
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
    pub(super) reason_code: ReasonCode,
    pub(super) enforced: bool,
    pub(super) policy_sha256: &'a str,
    pub(super) arguments_sha256: Option<&'a str>,
    /// `None` when absent or null.
    pub(super) tool_definition_sha256: Option<&'a str>,
    /// A tool decision's recorded `arguments` (SPEC §4.1a) is present.
    pub(super) arguments: bool,
    /// A tool decision's `arguments_truncated`, when present.
    pub(super) arguments_truncated: Option<bool>,
}

impl Default for LineView<'_> {
    fn default() -> Self {
        LineView {
            specversion: "",
            id: "",
            ty: "",
            source: "",
            time: "",
            datacontenttype: "",
            session_id: "",
            seq: 0,
            decision: Decision::default(),
            reason_code: ReasonCode::P_POLICY_ALLOW,
            enforced: false,
            policy_sha256: "",
            arguments_sha256: None,
            tool_definition_sha256: None,
            arguments: false,
            arguments_truncated: None,
        }
    }
}

impl<'a> LineView<'a> {
    /// The envelope fields of a new event type; the `data` fields at their defaults.
    fn envelope<D>(ev: &'a Event<'a, D>) -> Self {
        LineView {
            specversion: &ev.specversion,
            id: &ev.id,
            ty: &ev.ty,
            source: &ev.source,
            time: &ev.time,
            datacontenttype: &ev.datacontenttype,
            ..LineView::default()
        }
    }

    pub(super) fn of(ev: &'a DecisionEvent<'a>) -> Self {
        let d = &ev.data.0;
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
            tool_definition_sha256: d.tool_definition_sha256.as_deref(),
            arguments: d.arguments.is_some(),
            arguments_truncated: d.arguments_truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision_id_matches(id: &str, session_id: &str, seq: u64) -> bool {
        event_id_matches(id, "evt_decision_", session_id, seq)
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
