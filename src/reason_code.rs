//! The policy reason codes (SPEC §4.1, §4.1a, §5.1, §5.2): their one home.
//!
//! Every writer of a decision line (`evidence/decision_log.rs`), the policy that chooses a code
//! (`policy/`), and both paths of the capture reader (`capture/decision_line.rs`, the `serde`
//! parse; `capture/fast_line_parser.rs`, [`ReasonCode::parse`]) use this one list. A code is
//! spelled once, as its variant name: the SPEC string is that name (`stringify!`), and `serde`
//! writes and reads the same name. The tests below run every code through the writer and both
//! reader paths, and refuse a `"P_…"` string literal anywhere else in the library sources.
//!
//! A leaf: it imports nothing of the crate.

use serde::{Deserialize, Serialize};

/// Declares [`ReasonCode`] from one list of variants, with its docs, and [`ReasonCode::ALL`],
/// [`ReasonCode::as_str`] and [`ReasonCode::parse`] from the same list.
macro_rules! reason_codes {
    ($( $(#[doc = $doc:literal])+ $code:ident, )+) => {
        /// Why a decision was made (the `reason_code` of SPEC §4.1, §4.1a, §5.1, §5.2). Variants
        /// are spelled exactly as the SPEC strings, and serialize as those strings.
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum ReasonCode {
            $( $(#[doc = $doc])+ $code, )+
        }

        impl ReasonCode {
            /// Every code, in declaration order.
            pub const ALL: &'static [ReasonCode] = &[ $( ReasonCode::$code, )+ ];

            /// The SPEC string, e.g. `"P_TOOL_DENIED"`.
            pub fn as_str(&self) -> &'static str {
                match self {
                    $( ReasonCode::$code => stringify!($code), )+
                }
            }

            /// The code spelled `s` exactly (the SPEC string), or `None`.
            pub fn parse(s: &str) -> Option<ReasonCode> {
                match s {
                    $( stringify!($code) => Some(ReasonCode::$code), )+
                    _ => None,
                }
            }
        }
    };
}

reason_codes! {
    /// Every check passed (also: an allowed message of a governed method, SPEC §5.2).
    P_POLICY_ALLOW,
    /// A `deny` pattern matched the tool name.
    P_TOOL_DENIED,
    /// An `allow` list exists and no pattern in it matched the tool name.
    P_TOOL_NOT_ALLOWED,
    /// A constraint on an argument failed (missing, not a string, or no regex match).
    P_ARG_CONSTRAINT,
    /// The arguments do not validate against the tool's JSON Schema.
    P_ARG_SCHEMA,
    /// The `tools/call` was malformed (`params.name` missing or not a string). Proxy only.
    P_MALFORMED,
    /// An allowed call refused because its batch held a denied call. Proxy only.
    P_BATCH_REFUSED,
    /// The policy has pins and the tool is not pinned (SPEC §5.1).
    P_TOOL_UNPINNED,
    /// The tool's definition as this session last listed it differs from its pin (SPEC §5.1).
    P_TOOL_DRIFT,
    /// No `tools/list` result of this session has listed the pinned tool (SPEC §5.1).
    P_TOOL_UNLISTED,
    /// The server's `instructions` differ from the pinned ones (SPEC §5.1, §4.1a).
    P_INSTRUCTIONS_DRIFT,
    /// A `resources.deny` pattern matched the resource URI (SPEC §5.2).
    P_RESOURCE_DENIED,
    /// A `resources.allow` list exists and no pattern in it matched the URI (SPEC §5.2).
    P_RESOURCE_NOT_ALLOWED,
    /// A `prompts.deny` pattern matched the prompt name (SPEC §5.2).
    P_PROMPT_DENIED,
    /// A `prompts.allow` list exists and no pattern in it matched the prompt name (SPEC §5.2).
    P_PROMPT_NOT_ALLOWED,
    /// The server asked the client for a feature the policy denies (SPEC §5.2 `client_features`).
    P_CLIENT_FEATURE_DENIED,
    /// The session's `limits.tool_calls` is used up (SPEC §5.2).
    P_LIMIT_TOOL_CALLS,
    /// The session's `limits.per_tool` for this tool is used up (SPEC §5.2).
    P_LIMIT_PER_TOOL,
    /// The same tool with the same arguments more than `limits.repeated_call` times (SPEC §5.2).
    P_REPEATED_CALL,
    /// An answer over `results.max_bytes` or `results.max_content_parts` (SPEC §5.3).
    P_RESULT_TOO_LARGE,
    /// An answer holding a secret under `results.secrets: refuse` (SPEC §5.3).
    P_RESULT_SECRET,
    /// An answer whose text matches a `results.deny_patterns` regex (SPEC §5.3).
    P_RESULT_PATTERN,
    /// A `structuredContent` that does not validate against the tool's `outputSchema` under
    /// `results.output_schema: enforce` (SPEC §5.3).
    P_RESULT_SCHEMA,
    /// An answer that cannot be read strictly, so it cannot be judged (SPEC §5.3).
    P_RESULT_UNREADABLE,
}

/// Where a reason code is written (SPEC §4.1, §4.1a): each event type, and each list a listing
/// event can remove entries from. [`ReasonCode::carried_by`] is the one table of which codes
/// each can carry; the writers only write those, and both capture readers refuse any other (an
/// edited capture claiming, say, a `tools/call` denied for instructions drift is not `closed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Carrier {
    /// An `assay.tool.decision` (a `tools/call`).
    ToolDecision,
    /// An `assay.mcp.decision` (another governed method, either direction).
    McpDecision,
    /// A `removed` entry of an `assay.tool.listing` of a `tools/list` answer.
    ToolsList,
    /// ... of a `resources/list` or `resources/templates/list` answer.
    ResourcesList,
    /// ... of a `prompts/list` answer.
    PromptsList,
    /// ... of an `initialize` or `server/discover` answer: the pinned `instructions`.
    Instructions,
    /// ... of a listing written before listing events named their `method`: any list.
    AnyList,
    /// An `assay.mcp.result` (an answer to a governed request, SPEC §5.3).
    Result,
}

impl ReasonCode {
    /// Whether an event of `carrier` can carry this code (the table of [`Carrier`]).
    pub fn carried_by(self, carrier: Carrier) -> bool {
        use Carrier as C;
        use ReasonCode as R;
        let tool_list_removal = matches!(
            self,
            R::P_TOOL_DENIED | R::P_TOOL_NOT_ALLOWED | R::P_TOOL_UNPINNED | R::P_TOOL_DRIFT
        );
        let resource = matches!(self, R::P_RESOURCE_DENIED | R::P_RESOURCE_NOT_ALLOWED);
        let prompt = matches!(self, R::P_PROMPT_DENIED | R::P_PROMPT_NOT_ALLOWED);
        match carrier {
            C::ToolDecision => matches!(
                self,
                R::P_POLICY_ALLOW
                    | R::P_TOOL_DENIED
                    | R::P_TOOL_NOT_ALLOWED
                    | R::P_ARG_CONSTRAINT
                    | R::P_ARG_SCHEMA
                    | R::P_MALFORMED
                    | R::P_BATCH_REFUSED
                    | R::P_TOOL_UNPINNED
                    | R::P_TOOL_DRIFT
                    | R::P_TOOL_UNLISTED
                    | R::P_LIMIT_TOOL_CALLS
                    | R::P_LIMIT_PER_TOOL
                    | R::P_REPEATED_CALL
            ),
            C::McpDecision => {
                resource
                    || prompt
                    || matches!(
                        self,
                        R::P_POLICY_ALLOW
                            | R::P_MALFORMED
                            | R::P_BATCH_REFUSED
                            | R::P_CLIENT_FEATURE_DENIED
                    )
            }
            C::ToolsList => tool_list_removal,
            C::ResourcesList => resource,
            C::PromptsList => prompt,
            C::Instructions => self == R::P_INSTRUCTIONS_DRIFT,
            C::AnyList => {
                tool_list_removal || resource || prompt || self == R::P_INSTRUCTIONS_DRIFT
            }
            C::Result => matches!(
                self,
                R::P_POLICY_ALLOW
                    | R::P_RESULT_TOO_LARGE
                    | R::P_RESULT_SECRET
                    | R::P_RESULT_PATTERN
                    | R::P_RESULT_SCHEMA
                    | R::P_RESULT_UNREADABLE
            ),
        }
    }
}

impl std::fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::ReasonCode;

    #[test]
    fn as_str_parse_and_serde_agree() {
        let mut seen = std::collections::BTreeSet::new();
        for &code in ReasonCode::ALL {
            let s = code.as_str();
            assert!(s.starts_with("P_"), "{s}");
            assert!(seen.insert(s), "{s} twice");
            assert_eq!(ReasonCode::parse(s), Some(code));
            assert_eq!(serde_json::to_string(&code).unwrap(), format!("\"{s}\""));
            assert_eq!(
                serde_json::from_str::<ReasonCode>(&format!("\"{s}\"")).unwrap(),
                code
            );
            assert_eq!(code.to_string(), s);
        }
        assert_eq!(ReasonCode::parse("p_tool_denied"), None);
        assert_eq!(ReasonCode::parse("P_TOOL_DENIED "), None);
        assert_eq!(ReasonCode::parse(""), None);
    }

    /// The SPEC's list (§4.1, §5.1, §5.2, §5.3), all of it here.
    #[test]
    fn holds_every_spec_code() {
        let spec = "P_POLICY_ALLOW P_TOOL_DENIED P_TOOL_NOT_ALLOWED P_ARG_CONSTRAINT P_ARG_SCHEMA \
                    P_MALFORMED P_BATCH_REFUSED P_TOOL_UNPINNED P_TOOL_DRIFT P_TOOL_UNLISTED \
                    P_RESOURCE_DENIED P_RESOURCE_NOT_ALLOWED P_PROMPT_DENIED P_PROMPT_NOT_ALLOWED \
                    P_CLIENT_FEATURE_DENIED P_LIMIT_TOOL_CALLS P_LIMIT_PER_TOOL P_REPEATED_CALL \
                    P_INSTRUCTIONS_DRIFT P_RESULT_TOO_LARGE P_RESULT_SECRET P_RESULT_PATTERN \
                    P_RESULT_SCHEMA P_RESULT_UNREADABLE";
        for s in spec.split_whitespace() {
            assert!(ReasonCode::parse(s).is_some(), "{s} missing");
        }
        assert_eq!(ReasonCode::ALL.len(), spec.split_whitespace().count());
    }

    /// Every code is carried by some event type; no removal is an allow; a listing that names
    /// no method accepts exactly what the named lists accept between them.
    #[test]
    fn every_code_has_a_carrier_and_the_lists_add_up() {
        use super::Carrier;
        let all = [
            Carrier::ToolDecision,
            Carrier::McpDecision,
            Carrier::ToolsList,
            Carrier::ResourcesList,
            Carrier::PromptsList,
            Carrier::Instructions,
            Carrier::Result,
        ];
        for &code in ReasonCode::ALL {
            assert!(
                all.iter().any(|&c| code.carried_by(c)),
                "{code} has no carrier"
            );
            let named = [
                Carrier::ToolsList,
                Carrier::ResourcesList,
                Carrier::PromptsList,
                Carrier::Instructions,
            ]
            .iter()
            .any(|c| code.carried_by(*c));
            assert_eq!(code.carried_by(Carrier::AnyList), named, "{code}");
        }
        assert!(!ReasonCode::P_POLICY_ALLOW.carried_by(Carrier::AnyList));
        assert!(ReasonCode::P_RESULT_SECRET.carried_by(Carrier::Result));
        assert!(!ReasonCode::P_RESULT_SECRET.carried_by(Carrier::ToolDecision));
        assert!(!ReasonCode::P_TOOL_DENIED.carried_by(Carrier::Result));
        assert!(!ReasonCode::P_INSTRUCTIONS_DRIFT.carried_by(Carrier::ToolDecision));
        assert!(!ReasonCode::P_ARG_SCHEMA.carried_by(Carrier::McpDecision));
        assert!(!ReasonCode::P_PROMPT_DENIED.carried_by(Carrier::ToolsList));
    }

    /// The library code of a source file: without its `#[cfg(test)]` module (at the end) and
    /// without comment lines.
    fn library_code(text: &str) -> String {
        let lines: Vec<&str> = text.lines().collect();
        // The first `#[cfg(test)]` followed by a `mod … {` line starts the test module.
        let end = (0..lines.len())
            .find(|&i| {
                lines[i].trim() == "#[cfg(test)]"
                    && lines.get(i + 1).is_some_and(|next| {
                        let next = next.trim();
                        next.ends_with('{') && (next.starts_with("mod ") || next.contains(" mod "))
                    })
            })
            .unwrap_or(lines.len());
        lines[..end]
            .iter()
            .filter(|l| !l.trim_start().starts_with("//"))
            .copied()
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// One home: no library source of the workspace spells a policy reason code as a string
    /// literal (`"P_…`) outside this file. Test files (`tests/`, `tests.rs`, `testutil.rs`,
    /// `#[cfg(test)]` modules) may. A second list would drift from this one silently (a code the
    /// reader does not know makes a valid capture `unknown`); use [`ReasonCode`] instead.
    #[test]
    fn no_second_copy_of_the_list() {
        fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                if path.is_dir() {
                    if name != "tests" && name != "target" {
                        walk(&path, out);
                    }
                } else if name.ends_with(".rs") && name != "tests.rs" && name != "testutil.rs" {
                    out.push(path);
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for dir in ["src", "crates", "bindings/python/src"] {
            walk(&root.join(dir), &mut files);
        }
        assert!(
            files.len() > 50,
            "the sources were not found under {root:?}"
        );
        let home = root.join("src/reason_code.rs");
        let mut copies = Vec::new();
        for f in files.iter().filter(|f| **f != home) {
            let text = std::fs::read_to_string(f).unwrap();
            for (n, line) in library_code(&text).lines().enumerate() {
                if line.contains("\"P_") {
                    copies.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
                }
            }
        }
        assert!(
            copies.is_empty(),
            "policy reason codes spelled outside src/reason_code.rs (use assay::ReasonCode):\n{}",
            copies.join("\n")
        );
    }
}
