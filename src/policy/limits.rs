//! The `limits` section (SPEC §5.2): per-session budgets of allowed tool calls.
//!
//! ```yaml
//! limits:
//!   tool_calls: 500            # allowed tools/call decisions in the session
//!   per_tool: { write_file: 20 }
//!   repeated_call: 5           # the same tool with the same arguments_sha256
//! ```
//!
//! Every limit is a positive integer N and admits N calls: the N+1-th is refused (for
//! `repeated_call`, a call made "more than N times"). Only calls every other rule allowed are
//! judged here and counted; a refused call is not counted. `per_tool` keys are literal tool
//! names (no globs). The section must name at least one limit; `per_tool`, when present, at
//! least one tool.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::decision::{Decision, ReasonCode, Verdict};
use super::error::{Ctx, PolicyError};
use super::repeat_counts::{Refused, RepeatCounts};
use crate::sha256::HexDigest;

const KEYS: &[&str] = &["tool_calls", "per_tool", "repeated_call"];

/// A policy's `limits` (SPEC §5.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    tool_calls: Option<u64>,
    per_tool: BTreeMap<String, u64>,
    repeated_call: Option<u64>,
}

/// A positive integer, or a load error naming `key`.
fn positive(ctx: &Ctx<'_>, v: &Value, key: &str) -> Result<u64, PolicyError> {
    match v.as_u64() {
        Some(n) if n > 0 => Ok(n),
        _ => Err(ctx.invalid(
            key,
            "must be a positive integer (a count of calls); to refuse a tool, deny it",
        )),
    }
}

impl Limits {
    /// Compiles the section (`v` is the value of `limits`).
    pub(crate) fn parse(ctx: &Ctx<'_>, v: &Value) -> Result<Limits, PolicyError> {
        let obj = ctx.object(
            v,
            "limits",
            "a mapping with keys tool_calls, per_tool and repeated_call",
        )?;
        ctx.check_keys(obj, "limits", KEYS)?;
        if obj.is_empty() {
            return Err(ctx.invalid(
                "limits",
                "is empty; set tool_calls, per_tool or repeated_call, or remove the key",
            ));
        }
        let tool_calls = match obj.get("tool_calls") {
            Some(v) => Some(positive(ctx, v, "limits.tool_calls")?),
            None => None,
        };
        let repeated_call = match obj.get("repeated_call") {
            Some(v) => Some(positive(ctx, v, "limits.repeated_call")?),
            None => None,
        };
        let mut per_tool = BTreeMap::new();
        if let Some(v) = obj.get("per_tool") {
            let tools = ctx.object(
                v,
                "limits.per_tool",
                "a mapping of tool names to positive integers",
            )?;
            if tools.is_empty() {
                return Err(ctx.invalid(
                    "limits.per_tool",
                    "is empty; name a tool and its limit, or remove the key",
                ));
            }
            for (tool, n) in tools {
                let key = format!("limits.per_tool.{tool}");
                if tool.is_empty() {
                    return Err(ctx.invalid(&key, "names no tool; use the tool's name"));
                }
                per_tool.insert(tool.clone(), positive(ctx, n, &key)?);
            }
        }
        Ok(Limits {
            tool_calls,
            per_tool,
            repeated_call,
        })
    }

    /// `tool_calls`: allowed calls in a session, if limited.
    pub fn tool_calls(&self) -> Option<u64> {
        self.tool_calls
    }

    /// `per_tool`: allowed calls of each named tool in a session, by tool name.
    pub fn per_tool(&self) -> &BTreeMap<String, u64> {
        &self.per_tool
    }

    /// `repeated_call`: how many times a session may make the same call (same tool, same
    /// `arguments_sha256`), if limited.
    pub fn repeated_call(&self) -> Option<u64> {
        self.repeated_call
    }

    /// Fresh counters for one session (one wrapper run), all at zero.
    pub fn budget(&self) -> CallBudget {
        CallBudget {
            tool_calls_max: self.tool_calls,
            repeated_call: self.repeated_call,
            tool_calls: 0,
            per_tool: self
                .per_tool
                .values()
                .map(|&max| ToolBudget { max, calls: 0 })
                .collect(),
            per_tool_at: self
                .per_tool
                .keys()
                .enumerate()
                .map(|(at, tool)| (tool.clone(), at))
                .collect(),
            repeats: RepeatCounts::default(),
            last: None,
        }
    }
}

/// Distinct (tool, arguments) pairs a session counts for `repeated_call` (about 3 MiB). Past
/// it, a call of a pair not counted yet is refused (`P_REPEATED_CALL`): its repeats could no
/// longer be counted, and a limit that could be outrun by first making many distinct calls would
/// not be a limit.
pub const MAX_REPEAT_KEYS: usize = 65_536;

/// The `per_tool` limit of one tool and its count.
#[derive(Debug, Clone)]
struct ToolBudget {
    max: u64,
    calls: u64,
}

/// One session's counters against a policy's [`Limits`]. Pure, with no locking: the proxy's
/// client worker owns it.
///
/// Memory grows with the distinct calls a session makes: one entry (32 bytes and a count, and 4
/// bytes of index) per distinct (tool, arguments) pair while `repeated_call` is set, at most
/// [`MAX_REPEAT_KEYS`], and the names of at most 64 tools of at most 64 bytes
/// (`repeat_counts`); one per limited tool for `per_tool`.
#[derive(Debug, Clone)]
pub struct CallBudget {
    tool_calls_max: Option<u64>,
    repeated_call: Option<u64>,
    tool_calls: u64,
    /// Every tool `per_tool` limits, with its count.
    per_tool: Vec<ToolBudget>,
    /// Where each tool `per_tool` limits is in `per_tool`.
    per_tool_at: HashMap<String, usize>,
    repeats: RepeatCounts,
    /// The tool of the last call judged and where its counts are.
    last: Option<LastTool>,
}

/// The tool of the last call [`CallBudget::admit`] judged (a name of at most
/// [`LAST_TOOL_BYTES`]) and where its counts are: a call of the same tool, the common case,
/// finds them by comparing the name, without hashing it once per map.
#[derive(Debug, Clone, Default)]
struct LastTool {
    name: String,
    /// Its `per_tool` place.
    per_tool: Option<usize>,
    /// Its repeat counts' place, once it is counted by name (`repeat_counts`).
    named: Option<usize>,
}

/// The longest tool name [`LastTool`] keeps.
const LAST_TOOL_BYTES: usize = 64;

fn over(code: ReasonCode, reason: String, rule: String) -> Option<Verdict> {
    Some(Verdict {
        decision: Decision::Deny,
        reason_code: code,
        reason,
        matched_rule: Some(rule),
    })
}

impl CallBudget {
    /// Judges a `tools/call` of `tool` whose policy verdict (every other rule, pins included)
    /// is allow. `None` when the call is within every limit — it is then counted (`tool_calls`,
    /// `per_tool`, and the repeat count of (`tool`, `arguments_sha256`)); otherwise the refusing
    /// [`Verdict`] (deny), checking `tool_calls` ([`ReasonCode::P_LIMIT_TOOL_CALLS`]), then
    /// `per_tool` ([`ReasonCode::P_LIMIT_PER_TOOL`]), then `repeated_call`
    /// ([`ReasonCode::P_REPEATED_CALL`]), and counting nothing.
    pub fn admit(&mut self, tool: &str, arguments_sha256: Option<&HexDigest>) -> Option<Verdict> {
        self.admit_within(tool, arguments_sha256, MAX_REPEAT_KEYS)
    }

    /// [`CallBudget::admit`] with at most `max_keys` distinct calls counted.
    fn admit_within(
        &mut self,
        tool: &str,
        arguments_sha256: Option<&HexDigest>,
        max_keys: usize,
    ) -> Option<Verdict> {
        if let Some(max) = self.tool_calls_max {
            if self.tool_calls >= max {
                return over(
                    ReasonCode::P_LIMIT_TOOL_CALLS,
                    format!(
                        "the session has made its {max} allowed tool calls (limits.tool_calls)"
                    ),
                    "limits.tool_calls".to_owned(),
                );
            }
        }
        let (per_tool_at, named_at) = match &self.last {
            Some(last) if last.name == tool => (last.per_tool, last.named),
            _ => (self.per_tool_at.get(tool).copied(), None),
        };
        let per_tool = per_tool_at.and_then(|at| self.per_tool.get_mut(at));
        if let Some(ToolBudget { max, calls }) = per_tool.as_deref() {
            if calls >= max {
                return over(
                    ReasonCode::P_LIMIT_PER_TOOL,
                    format!(
                        "the session has made its {max} allowed calls of this tool (limits.per_tool)"
                    ),
                    format!("limits.per_tool.{tool}"),
                );
            }
        }
        let mut named_at = named_at;
        if let Some(max) = self.repeated_call {
            // Counted here when admitted: the last of the three checks.
            let counted = self
                .repeats
                .admit(tool, named_at, arguments_sha256, max, max_keys);
            match counted {
                Ok(at) => named_at = at,
                Err(refused) => {
                    let reason = match refused {
                        Refused::Full => format!(
                            "the session has made {max_keys} distinct calls; the repeats of another could not be counted (limits.repeated_call)"
                        ),
                        Refused::Repeated => format!(
                            "the session has made this call (same tool, same arguments) {max} times (limits.repeated_call)"
                        ),
                    };
                    return over(
                        ReasonCode::P_REPEATED_CALL,
                        reason,
                        "limits.repeated_call".to_owned(),
                    );
                }
            }
        }
        self.tool_calls = self.tool_calls.saturating_add(1);
        if let Some(t) = per_tool {
            t.calls = t.calls.saturating_add(1);
        }
        self.remember(tool, per_tool_at, named_at);
        None
    }

    /// Remembers where the counts of `tool` (just admitted) are, for its next call.
    fn remember(&mut self, tool: &str, per_tool: Option<usize>, named: Option<usize>) {
        if tool.len() > LAST_TOOL_BYTES {
            self.last = None;
            return;
        }
        let last = self.last.get_or_insert_with(LastTool::default);
        if last.name != tool {
            last.name.clear();
            last.name.push_str(tool);
        }
        last.per_tool = per_tool;
        last.named = named;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    /// The `CallBudget` this one replaced (a SHA-256 of tool and digest per call as the repeat
    /// key, in one map), kept as the oracle: `admit` as it was, with `max_keys` for
    /// `MAX_REPEAT_KEYS`.
    struct Oracle {
        limits: Limits,
        tool_calls: u64,
        per_tool: HashMap<String, u64>,
        repeats: HashMap<[u8; 32], u64>,
    }

    /// The old repeat key was the SHA-256 the counts still use for tools not named.
    use crate::policy::repeat_counts::hashed_key as repeat_key;

    impl Oracle {
        fn admit(
            &mut self,
            tool: &str,
            arguments_sha256: Option<&HexDigest>,
            max_keys: usize,
        ) -> Option<Verdict> {
            if let Some(max) = self.limits.tool_calls {
                if self.tool_calls >= max {
                    return over(
                        ReasonCode::P_LIMIT_TOOL_CALLS,
                        format!(
                            "the session has made its {max} allowed tool calls (limits.tool_calls)"
                        ),
                        "limits.tool_calls".to_owned(),
                    );
                }
            }
            let per_tool_max = self.limits.per_tool.get(tool).copied();
            if let Some(max) = per_tool_max {
                if self.per_tool.get(tool).copied().unwrap_or(0) >= max {
                    return over(
                        ReasonCode::P_LIMIT_PER_TOOL,
                        format!(
                            "the session has made its {max} allowed calls of this tool (limits.per_tool)"
                        ),
                        format!("limits.per_tool.{tool}"),
                    );
                }
            }
            let key = self
                .limits
                .repeated_call
                .map(|max| (repeat_key(tool, arguments_sha256), max));
            if let Some((key, max)) = &key {
                let seen = self.repeats.get(key).copied();
                if seen.is_none() && self.repeats.len() >= max_keys {
                    return over(
                        ReasonCode::P_REPEATED_CALL,
                        format!(
                            "the session has made {max_keys} distinct calls; the repeats of another could not be counted (limits.repeated_call)"
                        ),
                        "limits.repeated_call".to_owned(),
                    );
                }
                if seen.unwrap_or(0) >= *max {
                    return over(
                        ReasonCode::P_REPEATED_CALL,
                        format!(
                            "the session has made this call (same tool, same arguments) {max} times (limits.repeated_call)"
                        ),
                        "limits.repeated_call".to_owned(),
                    );
                }
            }
            self.tool_calls = self.tool_calls.saturating_add(1);
            if per_tool_max.is_some() {
                let n = self.per_tool.entry(tool.to_owned()).or_insert(0);
                *n = n.saturating_add(1);
            }
            if let Some((key, _)) = key {
                let n = self.repeats.entry(key).or_insert(0);
                *n = n.saturating_add(1);
            }
            None
        }
    }

    /// Tool names: a few short ones (two of them limited per tool), more than
    /// `repeat_counts::NAMED_TOOLS` distinct ones, names at and past
    /// `repeat_counts::NAMED_TOOL_BYTES`, a name with a NUL, the empty name.
    fn tool() -> impl Strategy<Value = String> {
        use super::super::repeat_counts::NAMED_TOOL_BYTES;
        prop_oneof![
            4 => prop::sample::select(vec!["a", "b", "c", "a\0", ""]).prop_map(str::to_owned),
            3 => (0..90u32).prop_map(|n| format!("t{n}")),
            1 => (0..3usize).prop_map(|n| "x".repeat(NAMED_TOOL_BYTES - 1 + n)),
            1 => (0..3usize).prop_map(|n| format!("{}{n}", "y".repeat(NAMED_TOOL_BYTES + 5))),
        ]
    }

    /// Argument digests: a few repeating ones, or none.
    fn digest() -> impl Strategy<Value = Option<HexDigest>> {
        prop::option::weighted(0.8, (0..4u8).prop_map(|n| HexDigest::of(&[n])))
    }

    fn limits() -> impl Strategy<Value = Limits> {
        (
            prop::option::of(1..200u64),
            prop::option::of(1..6u64),
            prop::option::of(1..4u64),
        )
            .prop_map(|(tool_calls, per_tool, repeated_call)| Limits {
                tool_calls,
                per_tool: per_tool
                    .map(|n| [("a".to_owned(), n), ("t7".to_owned(), n + 1)].into())
                    .unwrap_or_default(),
                repeated_call,
            })
    }

    proptest! {
        /// Verdict for verdict, the budget refuses and admits exactly what the one it replaced
        /// did, the bound of distinct calls included.
        #[test]
        fn admits_and_refuses_what_the_sha256_keyed_budget_did(
            limits in limits(),
            calls in prop::collection::vec((tool(), digest()), 1..400),
            max_keys in prop_oneof![0..8usize, Just(MAX_REPEAT_KEYS)],
        ) {
            let mut budget = limits.budget();
            let mut oracle = Oracle {
                limits,
                tool_calls: 0,
                per_tool: HashMap::new(),
                repeats: HashMap::new(),
            };
            for (tool, d) in &calls {
                let got = budget.admit_within(tool, d.as_ref(), max_keys);
                let want = oracle.admit(tool, d.as_ref(), max_keys);
                prop_assert_eq!(got, want, "{:?} {:?}", tool, d);
            }
            prop_assert_eq!(budget.repeats.keys(), oracle.repeats.len());
        }
    }

    /// More distinct short names than are counted by name: the later ones are counted by
    /// digest, each pair still once.
    #[test]
    fn tools_past_the_named_ones_are_counted_exactly() {
        let limits = Limits {
            tool_calls: None,
            per_tool: BTreeMap::new(),
            repeated_call: Some(2),
        };
        let mut b = limits.budget();
        let names: Vec<String> = (0..200).map(|n| format!("tool{n}")).collect();
        for round in 0..3 {
            for name in &names {
                let v = b.admit(name, None);
                assert_eq!(v.is_some(), round == 2, "{name} in round {round}");
            }
        }
        assert_eq!(b.repeats.keys(), 200);
    }
}
