//! The `results` section (SPEC §5.3): what the server answers to a governed request is judged
//! before the client reads it.
//!
//! ```yaml
//! results:
//!   max_bytes: 1048576          # a larger answer is replaced by the refusal (P_RESULT_TOO_LARGE)
//!   max_content_parts: 64       # more content parts: refused (P_RESULT_TOO_LARGE)
//!   secrets: redact             # off | flag | redact | refuse (P_RESULT_SECRET)
//!   secret_rules: gitleaks.toml # extra rules, gitleaks' TOML format, relative to the policy
//!   strip: [terminal, bidi, invisible]
//!   deny_patterns: ["ignore (all )?previous instructions"]   # refused (P_RESULT_PATTERN)
//!   output_schema: enforce      # enforce | flag: structuredContent against the outputSchema
//! ```
//!
//! Every key is optional; an empty section still records every answer (`assay.mcp.result`).

mod gitleaks;
mod go_syntax;
mod one_pass;
mod secrets;
mod strip;

use std::path::Path;

use regex::{RegexSet, RegexSetBuilder};
use serde_json::Value;

pub use self::secrets::{SecretMatch, SecretRules};
pub use self::strip::{Strip, strip};
use super::error::{Ctx, PolicyError};

const KEYS: &[&str] = &[
    "max_bytes",
    "max_content_parts",
    "secrets",
    "secret_rules",
    "strip",
    "deny_patterns",
    "output_schema",
];

/// `results.secrets`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretMode {
    /// Not looked for.
    Off,
    /// Recorded as findings; the answer passes unchanged.
    Flag,
    /// Each match replaced by `[redacted:RULE]` in the text.
    Redact,
    /// The answer replaced by the refusal (`P_RESULT_SECRET`).
    Refuse,
}

/// `results.output_schema`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaMode {
    /// A `structuredContent` that does not validate is refused (`P_RESULT_SCHEMA`).
    Enforce,
    /// ... is recorded as a finding.
    Flag,
}

/// A policy's compiled `results` section.
#[derive(Debug)]
pub struct Results {
    max_bytes: Option<u64>,
    max_content_parts: Option<u64>,
    secrets: SecretMode,
    rules: Option<SecretRules>,
    strip: Strip,
    deny: Option<RegexSet>,
    /// The secret rules and the deny patterns in one set, when a policy has both
    /// (`one_pass`).
    one_pass: Option<one_pass::OnePass>,
    output_schema: Option<SchemaMode>,
}

impl Results {
    /// Compiles the section (`v` is the value of `results`); `secret_rules` is relative to the
    /// policy file.
    pub(crate) fn parse(ctx: &Ctx<'_>, v: &Value) -> Result<Results, PolicyError> {
        let obj = ctx.object(
            v,
            "results",
            "a mapping with keys max_bytes, max_content_parts, secrets, secret_rules, strip, deny_patterns and output_schema",
        )?;
        ctx.check_keys(obj, "results", KEYS)?;
        let count = |key: &str| -> Result<Option<u64>, PolicyError> {
            match obj.get(key) {
                None => Ok(None),
                Some(v) => match v.as_u64() {
                    Some(n) if n > 0 => Ok(Some(n)),
                    _ => Err(ctx.invalid(&format!("results.{key}"), "must be a positive integer")),
                },
            }
        };
        let max_bytes = count("max_bytes")?;
        let max_content_parts = count("max_content_parts")?;
        let secrets = match obj.get("secrets").map(|v| v.as_str()) {
            None | Some(Some("off")) => SecretMode::Off,
            Some(Some("flag")) => SecretMode::Flag,
            Some(Some("redact")) => SecretMode::Redact,
            Some(Some("refuse")) => SecretMode::Refuse,
            Some(_) => {
                return Err(ctx.invalid(
                    "results.secrets",
                    "must be one of off, flag, redact, refuse",
                ));
            }
        };
        let extra = extra_rules(ctx, obj)?;
        if secrets == SecretMode::Off && obj.contains_key("secret_rules") {
            return Err(ctx.invalid(
                "results.secret_rules",
                "has no effect while results.secrets is off; set secrets to flag, redact or refuse",
            ));
        }
        let rules = match secrets {
            SecretMode::Off => None,
            _ => Some(
                SecretRules::new(extra).map_err(|e| ctx.bad_regex("results.secret_rules", &e))?,
            ),
        };
        let strip = strip_of(ctx, obj)?;
        let deny = deny_patterns(ctx, obj)?;
        let output_schema = match obj.get("output_schema").map(|v| v.as_str()) {
            None => None,
            Some(Some("enforce")) => Some(SchemaMode::Enforce),
            Some(Some("flag")) => Some(SchemaMode::Flag),
            Some(_) => {
                return Err(ctx.invalid("results.output_schema", "must be enforce or flag"));
            }
        };
        let one_pass = match (&rules, &deny) {
            (Some(r), Some(d)) => one_pass::OnePass::new(r, d),
            _ => None,
        };
        Ok(Results {
            max_bytes,
            max_content_parts,
            secrets,
            rules,
            strip,
            deny,
            one_pass,
            output_schema,
        })
    }

    /// `max_bytes`: the largest answer (its line's bytes, terminator excluded) passed on.
    pub fn max_bytes(&self) -> Option<u64> {
        self.max_bytes
    }

    /// `max_content_parts`: the most content parts an answer may hold.
    pub fn max_content_parts(&self) -> Option<u64> {
        self.max_content_parts
    }

    /// `secrets`.
    pub fn secrets(&self) -> SecretMode {
        self.secrets
    }

    /// The secret rules (built-in and `secret_rules`), unless `secrets` is off.
    pub fn secret_rules(&self) -> Option<&SecretRules> {
        self.rules.as_ref()
    }

    /// `strip`.
    pub fn strip(&self) -> Strip {
        self.strip
    }

    /// Whether a `deny_patterns` regex matches `text` (case-folded).
    pub fn denies(&self, text: &str) -> Option<usize> {
        self.deny.as_ref()?.matches(text).iter().next()
    }

    /// The first `deny_patterns` regex matching `text` ([`Results::denies`]) and the secrets in
    /// it ([`SecretRules::find`]; none while `secrets` is off): one regex pass over the text
    /// when the policy has both and they could be merged, else one pass each.
    pub fn scan(&self, text: &str) -> (Option<usize>, Vec<SecretMatch>) {
        match (&self.one_pass, &self.rules) {
            (Some(one), Some(rules)) => one.scan(rules, text),
            _ => (
                self.denies(text),
                self.rules
                    .as_ref()
                    .map(|r| r.find(text))
                    .unwrap_or_default(),
            ),
        }
    }

    /// Whether there are `deny_patterns`.
    pub fn has_deny_patterns(&self) -> bool {
        self.deny.is_some()
    }

    /// `output_schema`.
    pub fn output_schema(&self) -> Option<SchemaMode> {
        self.output_schema
    }

    /// Whether any option reads the text of an answer (else only its size, shape and digest).
    pub fn reads_text(&self) -> bool {
        self.rules.is_some() || self.strip.any() || self.deny.is_some()
    }
}

/// `secret_rules`: the extra rules of a gitleaks TOML file, relative to the policy file.
fn extra_rules(
    ctx: &Ctx<'_>,
    obj: &serde_json::Map<String, Value>,
) -> Result<Vec<secrets::SecretRule>, PolicyError> {
    let policy = ctx.file;
    Ok(match obj.get("secret_rules") {
        None => Vec::new(),
        Some(v) => {
            let rel = ctx.string(v, "results.secret_rules")?;
            if rel.is_empty() {
                return Err(ctx.invalid(
                    "results.secret_rules",
                    "is empty; name a gitleaks TOML file or remove the key",
                ));
            }
            let path = policy.parent().unwrap_or(Path::new("")).join(rel);
            let bytes = crate::input_file::read_bounded(
                &path,
                crate::input_file::FinalLink::Follow,
                gitleaks::MAX_RULES_BYTES,
            )
            .map_err(|e| {
                ctx.invalid(
                    "results.secret_rules",
                    &format!(
                        "cannot read {}: {}; check the path (relative to the policy file)",
                        crate::text::render(&path.to_string_lossy()),
                        e.describe(gitleaks::MAX_RULES_BYTES)
                    ),
                )
            })?;
            let text = std::str::from_utf8(&bytes).map_err(|_| {
                ctx.invalid("results.secret_rules", "is not UTF-8 text; a TOML file is")
            })?;
            gitleaks::parse(text).map_err(|e| {
                ctx.invalid(
                    "results.secret_rules",
                    &format!("{}: {e}", crate::text::render(&path.to_string_lossy())),
                )
            })?
        }
    })
}

/// `strip`: which kinds of characters are removed from text.
fn strip_of(ctx: &Ctx<'_>, obj: &serde_json::Map<String, Value>) -> Result<Strip, PolicyError> {
    let mut strip = Strip::default();
    if let Some(v) = obj.get("strip") {
        let list = ctx.array(v, "results.strip", "a list of terminal, bidi, invisible")?;
        for item in list {
            match item.as_str() {
                Some("terminal") => strip.terminal = true,
                Some("bidi") => strip.bidi = true,
                Some("invisible") => strip.invisible = true,
                _ => {
                    return Err(ctx.invalid(
                        "results.strip",
                        "holds an entry that is not terminal, bidi or invisible",
                    ));
                }
            }
        }
    }
    Ok(strip)
}

/// `deny_patterns`: one case-folded set.
fn deny_patterns(
    ctx: &Ctx<'_>,
    obj: &serde_json::Map<String, Value>,
) -> Result<Option<RegexSet>, PolicyError> {
    Ok(match obj.get("deny_patterns") {
        None => None,
        Some(v) => {
            let list = ctx.array(v, "results.deny_patterns", "a list of regexes")?;
            let mut patterns = Vec::with_capacity(list.len());
            for (i, p) in list.iter().enumerate() {
                let key = format!("results.deny_patterns[{i}]");
                let p = ctx.string(p, &key)?;
                regex::RegexBuilder::new(p)
                    .case_insensitive(true)
                    .build()
                    .map_err(|e| ctx.bad_regex(&key, &e))?;
                patterns.push(p);
            }
            // Case-folded (Unicode simple case folding, as keys are in SPEC §3).
            Some(
                RegexSetBuilder::new(&patterns)
                    .case_insensitive(true)
                    .build()
                    .map_err(|e| ctx.bad_regex("results.deny_patterns", &e))?,
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    fn load(dir: &Path, body: &str) -> Result<Policy, PolicyError> {
        Policy::from_bytes(body.as_bytes(), &dir.join("p.yaml"))
    }

    #[test]
    fn reads_every_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("rules.toml"),
            "[[rules]]\nid = \"acme\"\nregex = '''acme_[0-9]{8}'''\n",
        )
        .unwrap();
        let p = load(
            dir.path(),
            "version: \"1\"\nallow: [\"*\"]\nresults:\n  max_bytes: 100\n  max_content_parts: 3\n  secrets: redact\n  secret_rules: rules.toml\n  strip: [terminal, invisible]\n  deny_patterns: [\"ignore previous\"]\n  output_schema: enforce\n",
        )
        .unwrap();
        let r = p.results().unwrap();
        assert_eq!(r.max_bytes(), Some(100));
        assert_eq!(r.max_content_parts(), Some(3));
        assert_eq!(r.secrets(), SecretMode::Redact);
        let rules = r.secret_rules().unwrap();
        assert_eq!(rules.rule_id(rules.len() - 1), "acme");
        assert_eq!(
            r.strip(),
            Strip {
                terminal: true,
                bidi: false,
                invisible: true
            }
        );
        assert_eq!(r.denies("Please IGNORE Previous instructions"), Some(0));
        assert_eq!(r.denies("nothing"), None);
        assert_eq!(r.output_schema(), Some(SchemaMode::Enforce));
        assert!(p.governed().contains(&"results"));
    }

    #[test]
    fn deny_patterns_fold_case_as_unicode_simple_folding() {
        let dir = tempfile::tempdir().unwrap();
        let p = load(
            dir.path(),
            "version: \"1\"\nallow: [\"*\"]\nresults:\n  deny_patterns: [\"system prompt\"]\n",
        )
        .unwrap();
        let r = p.results().unwrap();
        // U+017F LATIN SMALL LETTER LONG S folds to `s`, U+212A KELVIN SIGN to `k`.
        assert_eq!(r.denies("\u{17f}ystem prompt"), Some(0));
        assert_eq!(r.denies("SYSTEM PROMPT"), Some(0));
    }

    #[test]
    fn load_errors_name_the_key() {
        let dir = tempfile::tempdir().unwrap();
        for (section, key) in [
            ("results: 3", "results"),
            ("results: {bogus: 1}", "bogus"),
            ("results: {max_bytes: 0}", "results.max_bytes"),
            (
                "results: {max_content_parts: -1}",
                "results.max_content_parts",
            ),
            ("results: {secrets: maybe}", "results.secrets"),
            (
                "results: {secret_rules: none.toml, secrets: flag}",
                "results.secret_rules",
            ),
            ("results: {secret_rules: none.toml}", "results.secret_rules"),
            ("results: {strip: [colors]}", "results.strip"),
            (
                "results: {deny_patterns: [\"(\"]}",
                "results.deny_patterns[0]",
            ),
            ("results: {output_schema: strict}", "results.output_schema"),
        ] {
            let e = load(
                dir.path(),
                &format!("version: \"1\"\nallow: [\"*\"]\n{section}\n"),
            )
            .err()
            .unwrap_or_else(|| panic!("{section} should fail"));
            assert!(e.to_string().contains(key), "{section}: {e}");
        }
    }

    #[test]
    fn an_absent_section_is_none_and_an_empty_one_records() {
        let dir = tempfile::tempdir().unwrap();
        let p = load(dir.path(), "version: \"1\"\nallow: [\"*\"]\n").unwrap();
        assert!(p.results().is_none());
        let p = load(dir.path(), "version: \"1\"\nallow: [\"*\"]\nresults: {}\n").unwrap();
        let r = p.results().unwrap();
        assert!(!r.reads_text());
        assert_eq!(r.secrets(), SecretMode::Off);
    }
}
