//! Why a policy could not be loaded ([`PolicyError`]) and the context that builds those errors
//! with the file attached (`Ctx`). A leaf: the readers and the rule compilers all use it.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Why a policy could not be loaded. `Display` is one lowercase line naming the file and, where
/// there is one, the key (as a path like `constraints[0].params.path.matches`), and says what to
/// do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The pins file the policy names (`pins:`) cannot be used.
    #[error("policy file {}: key `pins`: {source}", shown(path))]
    Pins {
        /// The policy file.
        path: PathBuf,
        /// What is wrong with the pins file.
        source: Box<crate::pins::PinsError>,
    },
    /// The file could not be opened or read.
    #[error(
        "cannot read policy file {}: {source}; check the path and its permissions",
        shown(path)
    )]
    Read {
        /// The policy file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is larger than [`super::MAX_POLICY_BYTES`].
    #[error(
        "policy file {} is larger than {limit} bytes; point --policy at the policy file",
        shown(path)
    )]
    TooLarge {
        /// The policy file.
        path: PathBuf,
        /// The limit in bytes.
        limit: u64,
    },
    /// The file holds no document: nothing but whitespace (or, in YAML, comments).
    #[error(
        "policy file {} is empty; write a policy in it (at least `version: \"1\"` and an `allow` list)",
        shown(path)
    )]
    Empty {
        /// The policy file.
        path: PathBuf,
    },
    /// The file is not valid YAML or JSON.
    #[error(
        "policy file {} is not valid {format}: {detail}; fix the syntax",
        shown(path)
    )]
    Syntax {
        /// The policy file.
        path: PathBuf,
        /// `"YAML"` or `"JSON"`.
        format: &'static str,
        /// The parser's message, on one line.
        detail: String,
    },
    /// A mapping holds the same key twice.
    #[error("policy file {}: duplicate key `{}`{}; keep only one", shown(path), key.escape_debug(), line.map(|l| format!(" at line {l}")).unwrap_or_default())]
    DuplicateKey {
        /// The policy file.
        path: PathBuf,
        /// The repeated key (a full key path for YAML, the key itself for JSON).
        key: String,
        /// The line of the repeated key (JSON files; for YAML the key path is exact instead).
        line: Option<usize>,
    },
    /// A key that the policy format does not define.
    #[error("policy file {}: unknown key `{}`; remove it or use one of: {expected}", shown(path), key.escape_debug())]
    UnknownKey {
        /// The policy file.
        path: PathBuf,
        /// The unknown key's path.
        key: String,
        /// The keys allowed there.
        expected: String,
    },
    /// A required key is absent.
    #[error("policy file {}: missing key `{}`; {hint}", shown(path), key.escape_debug())]
    MissingKey {
        /// The policy file.
        path: PathBuf,
        /// The missing key's path.
        key: String,
        /// What to add.
        hint: &'static str,
    },
    /// A value of the wrong type or an unacceptable value.
    #[error("policy file {}: key `{}` {message}", shown(path), key.escape_debug())]
    Invalid {
        /// The policy file.
        path: PathBuf,
        /// The key's path.
        key: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// A constraint's `matches` is not a valid Rust regex.
    #[error("policy file {}: key `{}` is not a valid regex ({detail}); fix the pattern (Rust regex syntax)", shown(path), key.escape_debug())]
    BadRegex {
        /// The policy file.
        path: PathBuf,
        /// The key's path.
        key: String,
        /// The regex compiler's message, on one line.
        detail: String,
    },
    /// A schema does not compile as JSON Schema draft 2020-12.
    #[error("policy file {}: key `{}` is not a valid json schema (draft 2020-12): {detail}; fix the schema", shown(path), key.escape_debug())]
    BadSchema {
        /// The policy file.
        path: PathBuf,
        /// The key's path (`schemas.<tool>`).
        key: String,
        /// The schema compiler's message, on one line.
        detail: String,
    },
}

impl PolicyError {
    /// The policy file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            PolicyError::Read { path, .. }
            | PolicyError::TooLarge { path, .. }
            | PolicyError::Empty { path }
            | PolicyError::Syntax { path, .. }
            | PolicyError::DuplicateKey { path, .. }
            | PolicyError::UnknownKey { path, .. }
            | PolicyError::MissingKey { path, .. }
            | PolicyError::Invalid { path, .. }
            | PolicyError::BadRegex { path, .. }
            | PolicyError::BadSchema { path, .. }
            | PolicyError::Pins { path, .. } => path,
        }
    }

    /// The offending key's path, when the error is about one key.
    pub fn key(&self) -> Option<&str> {
        match self {
            PolicyError::DuplicateKey { key, .. }
            | PolicyError::UnknownKey { key, .. }
            | PolicyError::MissingKey { key, .. }
            | PolicyError::Invalid { key, .. }
            | PolicyError::BadRegex { key, .. }
            | PolicyError::BadSchema { key, .. } => Some(key),
            PolicyError::Pins { .. } => Some("pins"),
            PolicyError::Read { .. }
            | PolicyError::TooLarge { .. }
            | PolicyError::Empty { .. }
            | PolicyError::Syntax { .. } => None,
        }
    }
}

/// A path for a one-line message: control characters escaped.
fn shown(path: &Path) -> String {
    path.display().to_string().escape_debug().to_string()
}

/// A library message flattened to one line (regex errors span several, with a caret diagram).
fn one_line(msg: &str) -> String {
    // regex syntax errors end with a line `error: <what>`; that line is the useful part.
    if let Some(what) = msg.lines().find_map(|l| l.trim().strip_prefix("error: ")) {
        return what.to_owned();
    }
    msg.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Error construction and typed access to the parsed value, with the file attached.
pub(crate) struct Ctx<'a> {
    pub(crate) file: &'a Path,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(file: &'a Path) -> Ctx<'a> {
        Ctx { file }
    }

    fn path(&self) -> PathBuf {
        self.file.to_path_buf()
    }

    pub(crate) fn syntax(&self, format: &'static str, detail: &str) -> PolicyError {
        PolicyError::Syntax {
            path: self.path(),
            format,
            detail: one_line(detail),
        }
    }

    pub(crate) fn duplicate(&self, key: &str, line: Option<usize>) -> PolicyError {
        PolicyError::DuplicateKey {
            path: self.path(),
            key: key.to_owned(),
            line,
        }
    }

    pub(crate) fn missing(&self, key: &str, hint: &'static str) -> PolicyError {
        PolicyError::MissingKey {
            path: self.path(),
            key: key.to_owned(),
            hint,
        }
    }

    pub(crate) fn invalid(&self, key: &str, message: &str) -> PolicyError {
        PolicyError::Invalid {
            path: self.path(),
            key: key.to_owned(),
            message: message.to_owned(),
        }
    }

    pub(crate) fn bad_regex(&self, key: &str, err: &regex::Error) -> PolicyError {
        PolicyError::BadRegex {
            path: self.path(),
            key: key.to_owned(),
            detail: one_line(&err.to_string()),
        }
    }

    pub(crate) fn bad_schema(&self, key: &str, detail: &str) -> PolicyError {
        PolicyError::BadSchema {
            path: self.path(),
            key: key.to_owned(),
            detail: one_line(detail),
        }
    }

    /// Refuses any key of `obj` not in `allowed`; `prefix` is the mapping's own key path.
    pub(crate) fn check_keys(
        &self,
        obj: &Map<String, Value>,
        prefix: &str,
        allowed: &[&str],
    ) -> Result<(), PolicyError> {
        match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
            None => Ok(()),
            Some(k) => Err(PolicyError::UnknownKey {
                path: self.path(),
                key: if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                },
                expected: allowed.join(", "),
            }),
        }
    }

    pub(crate) fn object<'v>(
        &self,
        v: &'v Value,
        key: &str,
        what: &str,
    ) -> Result<&'v Map<String, Value>, PolicyError> {
        v.as_object()
            .ok_or_else(|| self.invalid(key, &format!("must be {what}")))
    }

    pub(crate) fn array<'v>(
        &self,
        v: &'v Value,
        key: &str,
        what: &str,
    ) -> Result<&'v Vec<Value>, PolicyError> {
        v.as_array()
            .ok_or_else(|| self.invalid(key, &format!("must be {what}")))
    }

    pub(crate) fn string<'v>(&self, v: &'v Value, key: &str) -> Result<&'v str, PolicyError> {
        v.as_str()
            .ok_or_else(|| self.invalid(key, "must be a string; quote it"))
    }

    /// A non-empty glob pattern.
    pub(crate) fn pattern<'v>(&self, v: &'v Value, key: &str) -> Result<&'v str, PolicyError> {
        let s = self.string(v, key)?;
        if s.is_empty() {
            return Err(self.invalid(key, "is an empty pattern; name a tool or use `*`"));
        }
        Ok(s)
    }

    /// A list of non-empty glob patterns.
    pub(crate) fn pattern_list(&self, v: &Value, key: &str) -> Result<Vec<String>, PolicyError> {
        let items = self.array(v, key, "a list of tool-name patterns")?;
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                self.pattern(item, &format!("{key}[{i}]"))
                    .map(str::to_owned)
            })
            .collect()
    }
}
