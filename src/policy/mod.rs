//! Tool policy: loading (YAML or JSON) and evaluation in the order of SPEC §5.
//!
//! ```yaml
//! version: "1"                 # required; the *string* "1" (a bare 1 is refused)
//! name: example                # optional; defaults to the file stem ("assay" for assay.yaml)
//! allow: ["*"]                 # optional glob list; or tools: {allow: [...], deny: [...]}
//! deny: ["exec", "shell*"]     # optional glob list
//! constraints:                 # optional; see `constraints` below
//!   - tool: read_file
//!     params:
//!       path: { within: "/workspace" }   # or matches: a regex searched in the string
//! schemas:                     # optional; JSON Schema draft 2020-12 per literal tool name
//!   write_file: { type: object, required: [path], properties: { path: { type: string } } }
//! hide_refused_tools: false    # optional boolean; true: tools/list results omit tools refused
//!                              # by name (see `Policy::refuses_by_name`)
//! pins: assay.pins.json        # optional; a pins file (SPEC §5.1), relative to this file
//! resources: { allow: ["file:///workspace/**"], deny: ["file:///workspace/.env"] }
//! prompts: { allow: ["*"], deny: ["debug_*"] }
//! client_features: { sampling: deny, elicitation: allow, roots: allow }
//! limits: { tool_calls: 500, per_tool: { write_file: 20 }, repeated_call: 5 }
//! record_arguments: false      # optional boolean; true: decisions carry redacted arguments
//! redact: ["*token*", "authorization"]
//! record_definitions: false    # optional boolean; true: a capture keeps the listed definitions
//! ```
//!
//! The last six keys are the SPEC §5.2 sections (`sections`): each optional, each `None`
//! ("not governed") when absent.
//!
//! Loading is strict and fails closed: unknown keys anywhere, duplicate keys (YAML and JSON),
//! wrong value types, empty patterns, bad regexes, schemas that do not compile and a missing or
//! different `version` are all [`PolicyError`]s naming the file and the key. `allow`/`deny` may be
//! given at the top level *or* under `tools:`, not both. An `allow` list that is present but
//! empty allows nothing; an absent `allow` list lets every tool that is not denied through the
//! tool-name step.
//!
//! Everything is compiled at load so that [`Policy::evaluate`] — on the proxy's hot path — only
//! matches precompiled globs, runs precompiled regexes and validators, and copies a few strings.
//!
//! Files: `glob` (tool-name patterns), `constraints` (argument rules), `within` (the lexical
//! path containment check), `schema` (argument JSON Schemas), `decide` (verdict types and the
//! evaluation order), `read` (bytes → value, strictly), `by_name` (whether the tool name alone
//! refuses every call, for `hide_refused_tools`); and for SPEC §5.2: `uri_glob` (resource-URI
//! patterns), `resources`, `prompts`, `client_features`, `limits`, `redact` (recorded
//! arguments), `sections` (the compiled §5.2 sections), `governed` (the §5.2 questions on [`Policy`]),
//! `recorded` (what a capture recorded, judged by the same steps: `assay policy replay`); and
//! for SPEC §5.3: `results` (the `results` section: limits, secret rules, strip, deny patterns).
#![forbid(unsafe_code)]

mod by_name;
mod client_features;
mod constraints;
mod decide;
mod decision;
mod document;
mod error;
mod file;
mod glob;
mod governed;
mod json;
mod limits;
mod prescan;
mod prompts;
mod recorded;
mod redact;
mod repeat_counts;
mod resources;
pub mod results;
mod scalar;
mod schema;
mod sections;
pub mod summary;
mod uri_glob;
mod vocabulary;
mod within;
mod yaml;

use std::fmt;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use self::constraints::Constraints;
use self::decide::{RuleList, Rules};
use self::document::Format;
use self::schema::Schemas;

pub use self::client_features::ClientFeature;
pub use self::decision::{Decision, ReasonCode, RecordedArguments, Rejudged, Verdict};
pub(crate) use self::decision::{RejudgedRef, VerdictRef};
pub use self::error::{PolicyError, Refusal};
pub use self::file::MAX_POLICY_BYTES;
pub use self::limits::{CallBudget, Limits, MAX_REPEAT_KEYS};
pub use self::redact::MAX_RECORDED_BYTES;
pub(crate) use self::redact::give_back as give_back_recorded_arguments;
pub(crate) use self::resources::pattern_problem as resource_pattern_problem;

use self::error::Ctx;

/// The only supported value of `version`.
const VERSION: &str = "1";

const TOP_KEYS: &[&str] = &[
    "version",
    "name",
    "allow",
    "deny",
    "tools",
    "constraints",
    "schemas",
    "hide_refused_tools",
    "pins",
    "resources",
    "prompts",
    "client_features",
    "limits",
    "record_arguments",
    "redact",
    "results",
    "record_definitions",
];
const TOOLS_KEYS: &[&str] = &["allow", "deny"];

/// A loaded, compiled tool policy (SPEC §5).
///
/// `Policy` is immutable after load and is `Send + Sync`, so it can be shared by reference or in
/// an `Arc` between the proxy's workers.
pub struct Policy {
    name: String,
    sha256: PolicyDigest,
    /// Boxed, as are the sections: a `Policy` travels by value through the callers' frames
    /// (`wrap_session` on a host thread of 64 KiB, SPEC §3.1b), so it stays a few words.
    rules: Box<Rules>,
    hide_refused_tools: bool,
    sections: Box<self::sections::Sections>,
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("name", &self.name)
            .field("sha256", &self.sha256())
            .finish_non_exhaustive()
    }
}

impl Policy {
    /// Reads and compiles the policy file at `path` (at most [`MAX_POLICY_BYTES`]; a FIFO,
    /// device or directory is refused without blocking).
    ///
    /// A `.json` extension (any case) selects JSON; anything else is read as YAML.
    ///
    /// # Errors
    /// [`PolicyError::Read`] when the file cannot be read or is not a regular file,
    /// [`PolicyError::TooLarge`], or any error of [`Policy::from_bytes`].
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let bytes = file::read_bounded(path)?;
        Policy::from_bytes(&bytes, path)
    }

    /// Compiles a policy from the file's bytes. `path` is used only for messages, for the
    /// format choice (`.json` → JSON, else YAML) and for the default [`Policy::name`].
    ///
    /// # Errors
    /// [`PolicyError::TooLarge`] over [`MAX_POLICY_BYTES`]; otherwise a [`PolicyError`] naming the
    /// file and the offending key, or the line and column of what was refused.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Policy, PolicyError> {
        if bytes.len() as u64 > MAX_POLICY_BYTES {
            return Err(file::too_large(path));
        }
        let ctx = Ctx::new(path);
        let empty = || PolicyError::Empty {
            path: path.to_path_buf(),
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(empty());
        }
        let root = document::parse(&ctx, bytes, Format::for_path(path))?;
        // A YAML file of comments only holds no document (read as null).
        if root.is_null() {
            return Err(empty());
        }
        let sha256 = PolicyDigest(Arc::new(FileDigest {
            bytes: bytes.into(),
            hex: OnceLock::new(),
        }));
        build(&ctx, &root, sha256)
    }

    /// Lowercase hex SHA-256 of the policy file's bytes (SPEC §5 `policy_sha256`), taken on
    /// first use: a session without evidence never asks for it, and its start-up does not pay
    /// for the hash's set-up (issue 50).
    pub fn sha256(&self) -> &str {
        self.sha256.hex()
    }

    /// A handle on [`Policy::sha256`] that outlives the borrow: the decision log's formats take
    /// the digest when they format their first line, not when the session starts.
    pub(crate) fn digest(&self) -> PolicyDigest {
        self.sha256.clone()
    }

    /// The policy's `name`; when the file has none, the file stem (`assay` for `assay.yaml`),
    /// or `policy` when the path has no stem either.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Literal tool names (patterns without `*` or `?`) named anywhere in `allow`, `deny`,
    /// constraint `tool`s or `schemas` keys: sorted, without duplicates. Used for coverage
    /// (SPEC §4.4 `declared_tools`).
    pub fn declared_tools(&self) -> Vec<String> {
        let rules = &self.rules;
        let mut declared: Vec<String> = rules
            .deny
            .globs()
            .globs()
            .iter()
            .chain(rules.allow.iter().flat_map(|a| a.globs().globs()))
            .chain(rules.constraints.tool_globs())
            .filter(|g| g.is_literal())
            .map(|g| g.as_str().to_owned())
            .chain(rules.schemas.tools().map(str::to_owned))
            .collect();
        declared.sort_unstable();
        declared.dedup();
        declared
    }

    /// Evaluates one `tools/call` of `tool` with `params.arguments` (`None` when absent) in the
    /// order of SPEC §5. Never returns [`Decision::Error`], [`ReasonCode::P_MALFORMED`] or
    /// [`ReasonCode::P_BATCH_REFUSED`]; those are the proxy's.
    ///
    /// With `pins` (SPEC §5.1) a pinned tool also needs the definition a session listed for it;
    /// this call knows of no session, so it judges a pinned tool `P_TOOL_UNLISTED`.
    pub fn evaluate(&self, tool: &str, arguments: Option<&Value>) -> Verdict {
        self.rules.evaluate(tool, arguments, None)
    }

    /// [`Policy::evaluate`] in a session that remembers `listed` as the tool's definition digest
    /// (SPEC §5.1), with the texts borrowed from the policy where they can be (no allocation for
    /// a call judged by name alone).
    pub(crate) fn decide(
        &self,
        tool: &str,
        arguments: Option<&Value>,
        listed: Option<&crate::sha256::HexDigest>,
    ) -> VerdictRef<'_> {
        self.rules.decide(tool, arguments, listed)
    }

    /// The pins the policy names (SPEC §5.1 `pins`), if any.
    pub fn pins(&self) -> Option<&crate::pins_file::Pins> {
        self.rules.pins.as_ref()
    }

    /// Whether [`Policy::evaluate`] for `tool` depends on the arguments at all (a constraint or
    /// a schema applies to it). The proxy skips building a `Value` when it does not.
    pub(crate) fn reads_arguments(&self, tool: &str) -> bool {
        self.rules.reads_arguments(tool)
    }

    /// The policy's `hide_refused_tools` (SPEC §5; `false` when absent).
    pub fn hide_refused_tools(&self) -> bool {
        self.hide_refused_tools
    }
}

/// The document tree of a policy file's bytes (for `crate::fuzzing`): what `build` compiles.
pub(crate) fn read_document(bytes: &[u8], json: bool) -> Result<Value, PolicyError> {
    let path = Path::new(if json { "policy.json" } else { "policy.yaml" });
    document::parse(
        &Ctx::new(path),
        bytes,
        if json { Format::Json } else { Format::Yaml },
    )
}

/// The policy file's bytes and, once asked for, their SHA-256 ([`Policy::sha256`]).
struct FileDigest {
    bytes: Box<[u8]>,
    hex: OnceLock<String>,
}

/// The policy's digest, taken on first use and shared with the [`Policy`] it came from
/// ([`Policy::digest`]).
#[derive(Clone)]
pub(crate) struct PolicyDigest(Arc<FileDigest>);

impl PolicyDigest {
    /// [`Policy::sha256`].
    pub(crate) fn hex(&self) -> &str {
        let FileDigest { bytes, hex } = &*self.0;
        hex.get_or_init(|| crate::sha256::digest_hex(bytes))
    }
}

fn build(ctx: &Ctx<'_>, root: &Value, sha256: PolicyDigest) -> Result<Policy, PolicyError> {
    let top = ctx.object(root, "(top level)", "a mapping")?;
    ctx.check_keys(top, "", TOP_KEYS)?;
    check_version(ctx, top)?;
    let name = policy_name(ctx, top)?;

    // SPEC §5: `allow`/`deny` at the top level or under `tools:`, never both.
    let (allow, deny) = match top.get("tools") {
        Some(tools) => {
            if top.contains_key("allow") || top.contains_key("deny") {
                return Err(ctx.invalid(
                    "tools",
                    "cannot be combined with top-level `allow`/`deny`; use one form",
                ));
            }
            let t = ctx.object(tools, "tools", "a mapping with keys allow and deny")?;
            ctx.check_keys(t, "tools", TOOLS_KEYS)?;
            (
                t.get("allow").map(|v| (v, "tools.allow")),
                t.get("deny").map(|v| (v, "tools.deny")),
            )
        }
        None => (
            top.get("allow").map(|v| (v, "allow")),
            top.get("deny").map(|v| (v, "deny")),
        ),
    };
    let allow = match allow {
        Some((v, key)) => Some(ctx.pattern_list(v, key)?),
        None => None,
    };
    let deny = match deny {
        Some((v, key)) => ctx.pattern_list(v, key)?,
        None => Vec::new(),
    };

    let constraints = match top.get("constraints") {
        Some(v) => Constraints::parse(ctx, v)?,
        None => Constraints::default(),
    };
    let schemas = match top.get("schemas") {
        Some(v) => Schemas::parse(ctx, v)?,
        None => Schemas::default(),
    };
    let hide_refused_tools = ctx.flag(top.get("hide_refused_tools"), "hide_refused_tools")?;

    let pins = load_pins(ctx, top)?;

    let rules = Rules {
        deny: RuleList::new("deny", &deny),
        allow: allow.as_deref().map(|a| RuleList::new("allow", a)),
        constraints,
        schemas,
        pins,
    };

    let sections = self::sections::Sections::parse(ctx, top)?;

    Ok(Policy {
        name,
        sha256,
        rules: Box::new(rules),
        hide_refused_tools,
        sections: Box::new(sections),
    })
}

/// `version`: the string `"1"`.
fn check_version(ctx: &Ctx<'_>, top: &serde_json::Map<String, Value>) -> Result<(), PolicyError> {
    match top.get("version") {
        None => return Err(ctx.missing("version", "add `version: \"1\"`")),
        Some(Value::String(v)) if v == VERSION => {}
        Some(Value::String(_)) => {
            return Err(ctx.invalid("version", "is not supported; use `version: \"1\"`"));
        }
        Some(_) => {
            return Err(ctx.invalid(
                "version",
                "must be the string \"1\"; quote it: `version: \"1\"`",
            ));
        }
    }
    Ok(())
}

/// `name`, or the file's stem, or `policy`.
fn policy_name(ctx: &Ctx<'_>, top: &serde_json::Map<String, Value>) -> Result<String, PolicyError> {
    Ok(match top.get("name") {
        Some(v) => {
            let n = ctx.string(v, "name")?;
            if n.is_empty() {
                return Err(ctx.invalid("name", "is empty; give a name or remove the key"));
            }
            n.to_owned()
        }
        None => ctx
            .file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "policy".to_owned()),
    })
}

/// `pins` (SPEC §5.1): a path relative to the policy file, the pins file loaded.
fn load_pins(
    ctx: &Ctx<'_>,
    top: &serde_json::Map<String, Value>,
) -> Result<Option<crate::pins_file::Pins>, PolicyError> {
    Ok(match top.get("pins") {
        None => None,
        Some(v) => {
            let rel = ctx.string(v, "pins")?;
            if rel.is_empty() {
                return Err(ctx.invalid("pins", "is empty; name the pins file or remove the key"));
            }
            let path = ctx.file.parent().unwrap_or(Path::new("")).join(rel);
            Some(
                crate::pins_file::Pins::load(&path).map_err(|e| PolicyError::Pins {
                    path: ctx.file.to_path_buf(),
                    source: Box::new(e),
                })?,
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load_yaml(s: &str) -> Result<Policy, PolicyError> {
        Policy::from_bytes(s.as_bytes(), Path::new("/etc/assay/team.yaml"))
    }

    fn load_json(s: &str) -> Result<Policy, PolicyError> {
        Policy::from_bytes(s.as_bytes(), Path::new("/etc/assay/team.json"))
    }

    fn ok(r: Result<Policy, PolicyError>) -> Policy {
        match r {
            Ok(p) => p,
            Err(e) => panic!("should load: {e}"),
        }
    }

    fn err(r: Result<Policy, PolicyError>) -> PolicyError {
        match r {
            Ok(p) => panic!("should fail: {p:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn policy_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Policy>();
        check::<PolicyError>();
    }

    #[test]
    fn sha256_is_of_the_file_bytes() {
        let body = "version: \"1\"\nallow: [\"*\"]\n";
        let p = ok(load_yaml(body));
        assert_eq!(p.sha256(), crate::sha256::digest_hex(body.as_bytes()));
        assert_eq!(p.sha256().len(), 64);
        assert!(
            p.sha256()
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        );
        // Known vector: SHA-256 of `version: "1"\n`.
        let p = ok(load_yaml("version: \"1\"\n"));
        assert_eq!(p.sha256(), crate::sha256::digest_hex(b"version: \"1\"\n"),);
        assert_eq!(
            crate::sha256::digest_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // Same meaning, different bytes → different digest.
        let q = ok(load_yaml("version: '1'\n"));
        assert_ne!(p.sha256(), q.sha256());
    }

    #[test]
    fn name_defaults_to_file_stem() {
        assert_eq!(ok(load_yaml("version: '1'\n")).name(), "team");
        assert_eq!(ok(load_yaml("version: '1'\nname: prod\n")).name(), "prod");
        let p = ok(Policy::from_bytes(b"version: '1'\n", Path::new("")));
        assert_eq!(p.name(), "policy");
        let p = ok(Policy::from_bytes(
            b"version: '1'\n",
            Path::new("assay.yaml"),
        ));
        assert_eq!(p.name(), "assay");
    }

    #[test]
    fn declared_tools_are_literal_sorted_deduped() {
        let p = ok(load_yaml(
            r#"
version: "1"
tools:
  allow: ["read_file", "list_*", "write_file", "t?"]
  deny: ["exec", "shell*", "read_file"]
constraints:
  - { tool: read_file, params: {} }
  - { tool: "fetch", params: {} }
  - { tool: "*", params: {} }
schemas:
  write_file: {}
  zip: {}
"#,
        ));
        assert_eq!(
            p.declared_tools(),
            ["exec", "fetch", "read_file", "write_file", "zip"]
        );
        assert!(ok(load_yaml("version: '1'\n")).declared_tools().is_empty());
    }

    #[test]
    fn json_and_yaml_agree() {
        let y = ok(load_yaml(
            "version: '1'\nallow: ['*']\ndeny: [exec]\nconstraints: [{tool: r, params: {p: {matches: '^/w/'}}}]\nschemas: {w: {required: [p]}}\n",
        ));
        let j = ok(load_json(
            r#"{"version":"1","allow":["*"],"deny":["exec"],"constraints":[{"tool":"r","params":{"p":{"matches":"^/w/"}}}],"schemas":{"w":{"required":["p"]}}}"#,
        ));
        let cases = [
            ("exec", None),
            ("r", Some(json!({"p": "/w/x"}))),
            ("r", Some(json!({"p": "/x"}))),
            ("w", None),
            ("w", Some(json!({"p": 1}))),
            ("other", None),
        ];
        for (tool, args) in &cases {
            assert_eq!(
                y.evaluate(tool, args.as_ref()),
                j.evaluate(tool, args.as_ref())
            );
        }
        // A JSON body in a .yaml file is read as YAML and works.
        let p = ok(load_yaml(r#"{"version": "1", "deny": ["exec"]}"#));
        assert_eq!(
            p.evaluate("exec", None).reason_code,
            ReasonCode::P_TOOL_DENIED
        );
    }

    #[test]
    fn version_is_required_and_must_be_string_one() {
        let e = err(load_yaml("allow: ['*']\n"));
        assert!(matches!(e, PolicyError::MissingKey { .. }));
        assert_eq!(e.key(), Some("version"));
        let msg = e.to_string();
        assert!(
            msg.contains("team.yaml") && msg.contains("version"),
            "{msg}"
        );
        for bad in [
            "version: 1\n",
            "version: 1.0\n",
            "version: '2'\n",
            "version: ''\n",
            "version: [1]\n",
        ] {
            let e = err(load_yaml(bad));
            assert!(matches!(e, PolicyError::Invalid { .. }), "{bad}");
            assert_eq!(e.key(), Some("version"), "{bad}");
        }
        assert!(matches!(
            err(load_json("{\"version\":1}")),
            PolicyError::Invalid { .. }
        ));
    }

    #[test]
    fn unknown_keys_everywhere() {
        for (doc, key) in [
            ("version: '1'\nallows: ['*']\n", "allows"),
            (
                "version: '1'\ntools: {allow: ['*'], permit: []}\n",
                "tools.permit",
            ),
            (
                "version: '1'\nconstraints: [{tool: t, params: {}, note: x}]\n",
                "constraints[0].note",
            ),
            (
                "version: '1'\nconstraints: [{tool: t, params: {p: {matches: x, anchored: true}}}]\n",
                "constraints[0].params.p.anchored",
            ),
        ] {
            let e = err(load_yaml(doc));
            assert!(matches!(e, PolicyError::UnknownKey { .. }), "{doc}: {e}");
            assert_eq!(e.key(), Some(key));
            let msg = e.to_string();
            assert!(
                msg.contains("/etc/assay/team.yaml") && msg.contains(key),
                "{msg}"
            );
            assert!(msg.contains("remove it"), "{msg}");
        }
        let e = err(load_json(r#"{"version":"1","Deny":[]}"#));
        assert_eq!(e.key(), Some("Deny"));
    }

    #[test]
    fn duplicate_keys_in_yaml_and_json() {
        let e = err(load_yaml("version: '1'\ndeny: [a]\ndeny: [b]\n"));
        assert!(matches!(e, PolicyError::DuplicateKey { .. }));
        assert_eq!(e.key(), Some("deny"));
        let e = err(load_yaml(
            "version: '1'\nschemas:\n  t: {type: object, type: string}\n",
        ));
        assert_eq!(e.key(), Some("schemas.t.type"));
        let e = err(load_json(
            "{\"version\":\"1\",\"deny\":[\"a\"],\"deny\":[]}",
        ));
        assert!(matches!(e, PolicyError::DuplicateKey { .. }));
        assert_eq!(e.key(), Some("deny"));
        let msg = e.to_string();
        assert!(msg.contains("team.json") && msg.contains("`deny`"), "{msg}");
    }

    #[test]
    fn both_forms_refused() {
        for doc in [
            "version: '1'\nallow: ['*']\ntools: {deny: [x]}\n",
            "version: '1'\ndeny: [x]\ntools: {}\n",
        ] {
            let e = err(load_yaml(doc));
            assert_eq!(e.key(), Some("tools"), "{doc}");
            assert!(e.to_string().contains("one form"));
        }
    }

    #[test]
    fn an_empty_file_is_called_empty() {
        for (doc, name) in [
            ("", "p.yaml"),
            ("  \n\n", "p.yaml"),
            ("# only a comment\n", "p.yaml"),
            ("", "p.json"),
        ] {
            let e = Policy::from_bytes(doc.as_bytes(), Path::new(name)).unwrap_err();
            assert!(matches!(e, PolicyError::Empty { .. }), "{doc:?}: {e}");
            assert!(e.to_string().contains("is empty"), "{e}");
        }
    }

    #[test]
    fn wrong_types() {
        for (doc, key) in [
            ("- version\n", "(top level)"),
            ("\"just a string\"\n", "(top level)"),
            ("version: '1'\nname: 5\n", "name"),
            ("version: '1'\nname: ''\n", "name"),
            ("version: '1'\nallow: '*'\n", "allow"),
            ("version: '1'\nallow:\n", "allow"),
            ("version: '1'\ndeny: [1]\n", "deny[0]"),
            ("version: '1'\ndeny: ['']\n", "deny[0]"),
            ("version: '1'\ntools: [allow]\n", "tools"),
            (
                "version: '1'\ntools: {allow: [x, null]}\n",
                "tools.allow[1]",
            ),
            ("version: '1'\nconstraints: {}\n", "constraints"),
            ("version: '1'\nschemas: []\n", "schemas"),
        ] {
            let e = err(load_yaml(doc));
            assert!(matches!(e, PolicyError::Invalid { .. }), "{doc:?}: {e}");
            assert_eq!(e.key(), Some(key), "{doc:?}");
        }
    }

    #[test]
    fn bad_regex_and_bad_schema() {
        let e = err(load_yaml(
            "version: '1'\nconstraints: [{tool: t, params: {path: {matches: '[a-'}}}]\n",
        ));
        assert!(matches!(e, PolicyError::BadRegex { .. }));
        assert_eq!(e.key(), Some("constraints[0].params.path.matches"));
        let msg = e.to_string();
        assert!(!msg.contains('\n') && msg.contains("team.yaml"), "{msg}");
        // Look-around is not Rust regex syntax.
        let e = err(load_yaml(
            "version: '1'\nconstraints: [{tool: t, params: {p: {matches: '(?!x)'}}}]\n",
        ));
        assert!(matches!(e, PolicyError::BadRegex { .. }));

        let e = err(load_yaml("version: '1'\nschemas: {w: {type: 7}}\n"));
        assert!(matches!(e, PolicyError::BadSchema { .. }));
        assert_eq!(e.key(), Some("schemas.w"));
        let msg = e.to_string();
        assert!(!msg.contains('\n') && msg.contains("team.yaml"), "{msg}");
    }

    #[test]
    fn syntax_errors_name_the_file() {
        let e = err(load_yaml("version: '1'\nallow: [\n"));
        assert!(matches!(e, PolicyError::Syntax { format: "YAML", .. }));
        let e = err(load_json("{\"version\": \"1\",}"));
        assert!(matches!(e, PolicyError::Syntax { format: "JSON", .. }));
        assert!(e.to_string().contains("team.json"));
        // YAML in a .json file is JSON-parsed, so it fails.
        assert!(matches!(
            err(load_json("version: '1'\n")),
            PolicyError::Syntax { .. }
        ));
        assert_eq!(e.path(), Path::new("/etc/assay/team.json"));
        assert_eq!(e.key(), None);
    }

    #[test]
    fn messages_are_one_lowercase_line() {
        let errors = [
            err(load_yaml("version: '1'\nallow: [\n")),
            err(load_yaml("version: '1'\nfoo: 1\n")),
            err(load_yaml(
                "version: '1'\nconstraints: [{tool: t, params: {p: {matches: '('}}}]\n",
            )),
            err(load_yaml("version: '1'\nschemas: {t: {type: 7}}\n")),
            err(load_yaml("version: '1'\na: 1\na: 1\n")),
            err(Policy::from_bytes(
                b"version: '1'\nfoo\nbar: 1\n",
                Path::new("we\nird.yaml"),
            )),
        ];
        for e in errors {
            let msg = e.to_string();
            assert!(!msg.contains('\n'), "{msg:?}");
            assert!(msg.starts_with(|c: char| c.is_lowercase()), "{msg:?}");
        }
    }

    #[test]
    fn load_reads_files() {
        let dir = match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => panic!("tempdir: {e}"),
        };
        let path = dir.path().join("ci.json");
        let body = br#"{"version":"1","deny":["exec"]}"#;
        if let Err(e) = std::fs::write(&path, body) {
            panic!("write: {e}");
        }
        let p = ok(Policy::load(&path));
        assert_eq!(p.name(), "ci");
        assert_eq!(p.sha256(), crate::sha256::digest_hex(body));
        assert_eq!(
            p.evaluate("exec", None).reason_code,
            ReasonCode::P_TOOL_DENIED
        );

        let missing = dir.path().join("nope.yaml");
        let e = err(Policy::load(&missing));
        assert!(matches!(e, PolicyError::Read { .. }));
        assert!(e.to_string().contains("nope.yaml"));
        assert_eq!(e.path(), missing.as_path());

        let big = dir.path().join("big.yaml");
        let file = std::fs::File::create(&big).and_then(|f| f.set_len(MAX_POLICY_BYTES + 1));
        if let Err(e) = file {
            panic!("create: {e}");
        }
        assert!(matches!(
            err(Policy::load(&big)),
            PolicyError::TooLarge { .. }
        ));
    }

    #[test]
    fn debug_does_not_dump_rules() {
        let p = ok(load_yaml("version: '1'\nname: nm\n"));
        let d = format!("{p:?}");
        assert!(d.contains("\"nm\"") && d.contains(p.sha256()), "{d}");
    }
}
