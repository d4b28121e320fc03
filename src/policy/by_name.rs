//! Whether a tool's name alone refuses every call of it: what `hide_refused_tools` hides from
//! `tools/list` results (SPEC §5).

use super::Policy;
use super::decision::ReasonCode;

impl Policy {
    /// Whether every call of `tool` is refused whatever its arguments: a `deny` pattern matches
    /// it, or an `allow` list exists and does not match it (SPEC §5 `hide_refused_tools`). A tool
    /// that only constraints or schemas may refuse is not refused by name.
    pub fn refuses_by_name(&self, tool: &str) -> bool {
        self.refusal_by_name(tool).is_some()
    }

    /// The reason code (`P_TOOL_DENIED` or `P_TOOL_NOT_ALLOWED`) when the policy refuses every
    /// call of `tool` by its name alone; `None` otherwise.
    pub fn refusal_by_name(&self, tool: &str) -> Option<ReasonCode> {
        // The name steps come first in the evaluation order (SPEC §5), so the reason code of any
        // call of `tool` says whether the name alone decided: arguments cannot change that.
        let code = self.rules.decide(tool, None, None).reason_code;
        matches!(
            code,
            ReasonCode::P_TOOL_DENIED | ReasonCode::P_TOOL_NOT_ALLOWED
        )
        .then_some(code)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::policy::{Policy, PolicyError};

    fn load(yaml: &str) -> Result<Policy, PolicyError> {
        Policy::from_bytes(yaml.as_bytes(), Path::new("p.yaml"))
    }

    #[test]
    fn deny_matches_and_allow_misses_are_refused_by_name() {
        let p = load(
            r#"
version: "1"
allow: ["read_*", "write_file", "exec"]
deny: ["exec", "shell*"]
constraints:
  - tool: read_file
    params:
      path: { matches: "^/workspace/" }
schemas:
  write_file: { type: object, required: [path] }
"#,
        )
        .unwrap();
        assert!(p.refuses_by_name("exec"), "deny wins over allow");
        assert!(p.refuses_by_name("shell_run"));
        assert!(p.refuses_by_name("fetch"), "not in the allow list");
        // Constraints and schemas may still allow these with the right arguments.
        assert!(!p.refuses_by_name("read_file"));
        assert!(!p.refuses_by_name("write_file"));
        assert!(!p.refuses_by_name("read_other"));
        assert!(!p.hide_refused_tools(), "off by default");
    }

    #[test]
    fn without_an_allow_list_only_deny_refuses_by_name() {
        let p = load("version: \"1\"\ndeny: [\"exec\"]\nhide_refused_tools: true\n").unwrap();
        assert!(p.hide_refused_tools());
        assert!(p.refuses_by_name("exec"));
        assert!(!p.refuses_by_name("anything_else"));
        let empty = load("version: \"1\"\nallow: []\n").unwrap();
        assert!(
            empty.refuses_by_name("echo"),
            "an empty allow list allows nothing"
        );
    }

    #[test]
    fn hide_refused_tools_must_be_a_boolean() {
        for bad in ["\"true\"", "1", "null", "[true]", "yes_please"] {
            let e = load(&format!("version: \"1\"\nhide_refused_tools: {bad}\n")).unwrap_err();
            assert_eq!(e.key(), Some("hide_refused_tools"), "{bad}: {e}");
            assert!(e.to_string().contains("must be a boolean"), "{e}");
        }
        let json = Policy::from_bytes(
            br#"{"version":"1","hide_refused_tools":false}"#,
            Path::new("p.json"),
        )
        .unwrap();
        assert!(!json.hide_refused_tools());
    }
}
