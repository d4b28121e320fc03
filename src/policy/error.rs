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
        source: Box<crate::pins_file::PinsError>,
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
    /// Something a policy may not contain (SPEC §5: "a policy is read as strictly as a protocol
    /// line"): a YAML anchor, alias, merge key, tag or directive, a scalar YAML readers read
    /// differently, a character they disagree on, or nesting over the bound; at a line and
    /// column (1-based, counted in characters).
    #[error("policy file {}: line {line} column {column}: {what}", shown(path))]
    Refused {
        /// The policy file.
        path: PathBuf,
        /// The line (1-based).
        line: usize,
        /// The column (1-based, in characters).
        column: usize,
        /// What was refused, and what to do instead.
        what: Refusal,
    },
    /// A schema keyword outside the draft 2020-12 vocabularies (SPEC §5): a rule the validator
    /// would silently ignore.
    #[error("policy file {}: key `schemas.{}` uses `{}` at {}, which is not a json schema draft 2020-12 keyword; fix the spelling or remove it", shown(path), tool.escape_debug(), keyword.escape_debug(), pointer_shown(pointer))]
    UnknownSchemaKeyword {
        /// The policy file.
        path: PathBuf,
        /// The tool whose schema holds it.
        tool: String,
        /// The keyword as written.
        keyword: String,
        /// JSON pointer (RFC 6901) to the keyword inside the tool's schema.
        pointer: String,
    },
    /// A schema `$ref` that does not point at a subschema of the same tool's schema (SPEC §5:
    /// a reference into `const`, `default` or `enum` would make a value a rule).
    #[error("policy file {}: key `schemas.{}` has a reference `{}` at {} that {reason}; refer only to subschemas of the same schema (`#`, `#/$defs/name`, an `$anchor`)", shown(path), tool.escape_debug(), reference.escape_debug(), pointer_shown(pointer))]
    BadSchemaReference {
        /// The policy file.
        path: PathBuf,
        /// The tool whose schema holds it.
        tool: String,
        /// The reference as written.
        reference: String,
        /// JSON pointer to the `$ref`/`$dynamicRef` keyword.
        pointer: String,
        /// Why it is refused.
        reason: &'static str,
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
            | PolicyError::Refused { path, .. }
            | PolicyError::UnknownSchemaKeyword { path, .. }
            | PolicyError::BadSchemaReference { path, .. }
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
            | PolicyError::Syntax { .. }
            | PolicyError::Refused { .. }
            | PolicyError::UnknownSchemaKeyword { .. }
            | PolicyError::BadSchemaReference { .. } => None,
        }
    }
}

/// What [`PolicyError::Refused`] refused. `Display` says what it is and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// A YAML anchor (`&name`).
    Anchor,
    /// A YAML alias (`*name`).
    Alias,
    /// A YAML merge key (an unquoted `<<`).
    MergeKey,
    /// A YAML tag (`!!binary`, `!!str`, `!custom`, …), as written.
    Tag(String),
    /// A YAML directive (`%YAML`, `%TAG`).
    Directive,
    /// A second YAML document in the file.
    SecondDocument,
    /// An unquoted scalar that YAML 1.1 readers (PyYAML) and YAML 1.2 readers read
    /// differently: its text and each reading.
    Ambiguous {
        /// The scalar as written.
        text: String,
        /// What YAML 1.1 readers (PyYAML `safe_load`) read.
        yaml11: String,
        /// What YAML 1.2 readers read.
        yaml12: String,
    },
    /// A number JSON cannot hold: `.inf`, `.nan`, or an integer beyond 64 bits.
    NotJsonNumber(String),
    /// A JSON number that JSON readers and YAML readers read as different values (`-0`).
    JsonNumber(String),
    /// A JSON string escape of a UTF-16 surrogate (`\ud83d`): YAML readers decode it differently.
    SurrogateEscape,
    /// A mapping key that is not on one line with its `:`, or too long for YAML 1.1 readers.
    KeyLayout,
    /// An unquoted scalar inside `[...]`/`{...}` that YAML 1.1 readers split or refuse.
    FlowScalar(String),
    /// A block scalar (`|`, `>`) on the last line of a file that does not end with a line break.
    BlockScalarAtEnd,
    /// Nesting deeper than the bound (64 levels).
    TooDeep,
    /// A tab character in a YAML file.
    Tab,
    /// A character YAML readers refuse or read differently.
    Character(char),
    /// A byte order mark after the start of the file.
    ByteOrderMark,
    /// A carriage return not followed by a line feed.
    LoneCarriageReturn,
    /// Bytes that are not UTF-8.
    NotUtf8,
}

/// The shared reason of the YAML features a policy never needs.
const NEVER_NEEDED: &str = "a policy never needs anchors, aliases, merge keys, tags or directives, and YAML readers disagree on them";

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Anchor => write!(f, "YAML anchor (`&`): {NEVER_NEEDED}; write the value out"),
            Refusal::Alias => write!(
                f,
                "YAML alias (`*`): {NEVER_NEEDED}; write the value out where it is used"
            ),
            Refusal::MergeKey => write!(
                f,
                "YAML merge key `<<`: {NEVER_NEEDED}; write the keys out (quote \"<<\" for a literal key)"
            ),
            Refusal::Tag(tag) => write!(
                f,
                "YAML tag `{}`: {NEVER_NEEDED}; remove it (quote the value if it is a string)",
                tag.escape_debug()
            ),
            Refusal::Directive => write!(f, "YAML directive (`%`): {NEVER_NEEDED}; remove it"),
            Refusal::SecondDocument => {
                f.write_str("a second YAML document (`---`); a policy file holds one document")
            }
            Refusal::Ambiguous {
                text,
                yaml11,
                yaml12,
            } => write!(
                f,
                "unquoted `{}` is {yaml11} to YAML 1.1 readers (PyYAML) but {yaml12} to YAML 1.2 readers; quote it, or write it the way both read alike",
                text.escape_debug()
            ),
            Refusal::NotJsonNumber(text) => write!(
                f,
                "`{}` is not a finite number JSON can hold (64-bit integers, finite floats); use a finite number",
                text.escape_debug()
            ),
            Refusal::JsonNumber(text) => write!(
                f,
                "`{}` is one number to JSON readers and another to YAML readers (PyYAML); write it plainly (0, 1.5, 1.5e+3)",
                text.escape_debug()
            ),
            Refusal::SurrogateEscape => f.write_str(
                "a \\u escape of a utf-16 surrogate: YAML readers decode surrogate pairs differently; write the character itself",
            ),
            Refusal::KeyLayout => f.write_str(
                "a mapping key must stand on one line with its `:` (no `?` keys, no line break before the `:`) and be at most 1000 characters; YAML 1.1 readers read such keys differently",
            ),
            Refusal::FlowScalar(text) => write!(
                f,
                "unquoted `{}` inside `[...]` or `{{...}}` is split or refused by YAML 1.1 readers (PyYAML); quote it",
                text.escape_debug()
            ),
            Refusal::BlockScalarAtEnd => f.write_str(
                "a block scalar (`|`, `>`) ends the file without a line break: YAML readers disagree on its last line break; end the file with a line break",
            ),
            Refusal::TooDeep => write!(
                f,
                "nested deeper than {} levels; flatten the policy",
                super::prescan::MAX_DEPTH
            ),
            Refusal::Tab => f.write_str(
                "a tab character: YAML readers disagree on tabs; indent with spaces (inside a double-quoted string write \\t)",
            ),
            Refusal::Character(c) => write!(
                f,
                "character U+{:04X}: YAML readers refuse it or read it differently; remove it (inside a double-quoted string write it as an escape)",
                u32::from(*c)
            ),
            Refusal::ByteOrderMark => {
                f.write_str("a byte order mark (U+FEFF) after the start of the file; remove it")
            }
            Refusal::LoneCarriageReturn => f.write_str(
                "a carriage return without a line feed; end lines with \\n or \\r\\n",
            ),
            Refusal::NotUtf8 => f.write_str("the file is not UTF-8; save it as UTF-8"),
        }
    }
}

/// A JSON pointer for a message: `/` for the whole schema, control characters escaped.
fn pointer_shown(pointer: &str) -> String {
    if pointer.is_empty() {
        "`/` (the schema itself)".to_owned()
    } else {
        format!("`{}`", pointer.escape_debug())
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

/// The 1-based line of byte `offset`.
pub(crate) fn line_of(bytes: &[u8], offset: usize) -> usize {
    bytes
        .get(..offset)
        .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
        + 1
}

/// The 1-based line and column (in characters) of byte `offset` of `text` (clamped to the
/// text; an offset inside a character counts that character).
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let bytes = text.as_bytes();
    let before = bytes.get(..offset).unwrap_or(bytes);
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = before.get(line_start..).map_or(0, |rest| {
        rest.iter().filter(|&&b| (b & 0xC0) != 0x80).count()
    }) + 1;
    (line, column)
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

    pub(crate) fn refused(&self, line: usize, column: usize, what: Refusal) -> PolicyError {
        PolicyError::Refused {
            path: self.path(),
            line,
            column,
            what,
        }
    }

    /// [`Ctx::refused`] at byte `offset` of `text` (line and column counted here: errors only).
    pub(crate) fn refused_at(&self, text: &str, offset: usize, what: Refusal) -> PolicyError {
        let (line, column) = line_column(text, offset);
        self.refused(line, column, what)
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

    /// An optional boolean key (`false` when absent): `key: true` or `false`, nothing else.
    pub(crate) fn flag(&self, v: Option<&Value>, key: &str) -> Result<bool, PolicyError> {
        match v {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => {
                Err(self.invalid(key, &format!("must be a boolean: `{key}: true` or `false`")))
            }
        }
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
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                // The common case without building the key path (a large policy has many).
                Some(s) if !s.is_empty() => out.push(s.to_owned()),
                _ => {
                    self.pattern(item, &format!("{key}[{i}]"))?;
                }
            }
        }
        Ok(out)
    }
}
