//! `record_arguments` and `redact` (SPEC §4.1a, §5.2): what a `tools/call` decision records of
//! the call's arguments.
//!
//! ```yaml
//! record_arguments: true
//! redact: ["*token*", "*secret*", "*password*", "authorization"]
//! ```
//!
//! With `record_arguments: true`, a decision carries the RFC 8785 canonical JSON of
//! `params.arguments` with the value under every object key (at any depth, in arrays too) that
//! matches a `redact` glob replaced by the string `"[redacted]"`, cut to at most
//! [`MAX_RECORDED_BYTES`] on a UTF-8 character boundary. `redact` globs are the tool-name globs
//! (`*`, `?`, whole-key match), compared case-insensitively (both sides lowercased). `redact`
//! without `record_arguments: true` is accepted and has no effect (a policy may keep its
//! patterns ready for when recording is turned on).

use serde_json::Value;

use super::error::{Ctx, PolicyError};
use super::glob::Glob;

/// At most this many bytes of recorded arguments (4 KiB).
pub const MAX_RECORDED_BYTES: usize = 4096;

/// What replaces a redacted value.
pub(crate) const REDACTED: &str = "[redacted]";

/// The compiled `record_arguments` and `redact`.
#[derive(Default)]
pub(crate) struct ArgumentRecord {
    record: bool,
    written: Vec<String>,
    globs: Vec<Glob>,
}

impl ArgumentRecord {
    /// Compiles the two keys from their values in the policy (either may be absent).
    pub(crate) fn parse(
        ctx: &Ctx<'_>,
        record: Option<&Value>,
        redact: Option<&Value>,
    ) -> Result<ArgumentRecord, PolicyError> {
        let record = match record {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(ctx.invalid(
                    "record_arguments",
                    "must be a boolean: `record_arguments: true` or `false`",
                ));
            }
        };
        let written = match redact {
            Some(v) => ctx.pattern_list(v, "redact")?,
            None => Vec::new(),
        };
        let globs = written
            .iter()
            .map(|p| Glob::new(&p.to_lowercase()))
            .collect();
        Ok(ArgumentRecord {
            record,
            written,
            globs,
        })
    }

    /// `record_arguments`.
    pub(crate) fn record(&self) -> bool {
        self.record
    }

    /// The `redact` patterns as written.
    pub(crate) fn patterns(&self) -> &[String] {
        &self.written
    }

    fn redacts(&self, key: &str) -> bool {
        if self.globs.is_empty() {
            return false;
        }
        let key = key.to_lowercase();
        self.globs.iter().any(|g| g.matches(&key))
    }

    /// `arguments` with every value under a redacted key replaced.
    fn redacted(&self, v: &Value) -> Value {
        match v {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        let v = if self.redacts(k) {
                            Value::String(REDACTED.to_owned())
                        } else {
                            self.redacted(v)
                        };
                        (k.clone(), v)
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|i| self.redacted(i)).collect()),
            other => other.clone(),
        }
    }

    /// The recorded text of `arguments` and whether it was cut (see the module docs). When the
    /// canonical form cannot be built (nesting deeper than the canonicalizer's bound, or
    /// numbers whose canonical digits outgrow the text by more than its slack), the compact
    /// JSON of the redacted value is recorded instead, cut the same way.
    pub(crate) fn recorded(&self, arguments: &Value) -> (String, bool) {
        let redacted = self.redacted(arguments);
        let compact = serde_json::to_string(&redacted).unwrap_or_default();
        let mut text = crate::canonical::canonical_text(&compact).unwrap_or(compact);
        if text.len() <= MAX_RECORDED_BYTES {
            return (text, false);
        }
        let mut end = MAX_RECORDED_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        (text, true)
    }
}
