//! The decision-line types of the capture reader (SPEC §4.1, §7): what every line must agree
//! with, the borrowed views of a parsed line and the per-line reason collector. A leaf shared
//! by the general path (`log`) and the one-pass parser (`fast_line_parser`).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{Deserializer, Visitor};

use super::fields::{MAX_LINE_REASONS, Reasons};
use super::judgement::{ClosureReasonCode, Reason};
use crate::capture_files::DECISIONS;
use crate::reason_code::ReasonCode;

/// What every decision line must agree with, from the best available source.
pub(super) struct Expect<'a> {
    pub(super) session_id: Option<&'a str>,
    pub(super) source: Option<&'a str>,
    pub(super) policy_sha256: Option<&'a str>,
    pub(super) dry_run: Option<bool>,
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
    pub(super) data: DecisionData<'a>,
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

/// `evt_decision_<session_id>_<seq>` without allocating.
pub(super) fn decision_id_matches(id: &str, session_id: &str, seq: u64) -> bool {
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
        }
    }
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
            tool_definition_sha256: d.tool_definition_sha256.as_deref(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
