//! Finds the server entries of a host configuration and where their members lie in the text, in
//! the one pass of the strict scan (`strict_json::scan_with`): duplicate keys, invalid JSON,
//! non-UTF-8, non-finite numbers and deep nesting are refused there, before anything is read.
//!
//! Keys are compared after decoding escapes (`"comm\u0061nd"` is `command`, as every JSON parser
//! reads it). A key of the top level, of a section or of an entry that is a case or fold variant
//! of a name this module reads (`Command`, `MCPServers`, `ARGS`) is refused: hosts built on
//! case-insensitive decoders (Go's `encoding/json`) read it as that name, so an entry could run
//! a command this rewrite never saw.

use super::error::HostConfigError;
use crate::strict_json::{self, ScanError, Visitor};

/// Nesting limit for a host configuration (deeper is refused as too deep).
const MAX_DEPTH: usize = 64;

/// The two section names (SPEC §10): `mcpServers` (Claude Desktop, Cursor, the Inspector) and
/// `servers` (VS Code).
pub(super) const SECTIONS: [&str; 2] = ["mcpServers", "servers"];
/// The members of an entry this rewrite reads.
const MEMBERS: [&str; 4] = ["command", "args", "url", "type"];

/// A byte range of the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Span {
    pub(super) start: usize,
    pub(super) end: usize,
}

impl Span {
    pub(super) fn of<'t>(&self, text: &'t str) -> &'t str {
        text.get(self.start..self.end).unwrap_or("")
    }
}

/// A member value: where it lies, and its first byte (`"`, `[`, `{`, a digit…).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Value {
    pub(super) span: Span,
    pub(super) first: u8,
}

/// One server entry of a section.
#[derive(Debug, Clone, Default)]
pub(super) struct Entry {
    /// The entry's name (its key, decoded).
    pub(super) name: String,
    /// The entry's value (an object, or not: then it is refused).
    pub(super) value: Option<Value>,
    pub(super) command: Option<Value>,
    pub(super) args: Option<Value>,
    /// `args`' elements, when it is an array.
    pub(super) elements: Vec<Value>,
    pub(super) url: Option<Value>,
    pub(super) r#type: Option<Value>,
    /// A member key that is a lenient variant of a member name: (the key, the name).
    pub(super) variant: Option<(String, &'static str)>,
}

/// A `mcpServers` or `servers` member of the top level, or the `mcpServers` of a Claude Code
/// project (`projects.<path>.mcpServers` in `~/.claude.json`).
#[derive(Debug, Clone)]
pub(super) struct Section {
    pub(super) name: &'static str,
    /// The project (its key under `projects`) for a project's section.
    pub(super) project: Option<String>,
    pub(super) value: Option<Value>,
    pub(super) entries: Vec<Entry>,
}

/// What the scan found.
#[derive(Debug, Default)]
pub(super) struct Located {
    pub(super) top_is_object: bool,
    pub(super) sections: Vec<Section>,
    /// A key of the top level that is a lenient variant of a section name.
    pub(super) variant: Option<(String, &'static str)>,
}

/// A member or element whose key (or position) was seen; `value` replaces it with where its
/// value lies. One left as it is held `true` or `false` (the scan reports no span for those).
const PRESENT: Value = Value {
    span: Span { start: 0, end: 0 },
    first: 0,
};

// Roles of containers and slots of values (the visitor's own numbers; 0 = not of interest).
const ROLE_TOP: u8 = 1;
const ROLE_SECTION: u8 = 2;
const ROLE_ENTRY: u8 = 3;
const ROLE_ARGS: u8 = 4;
const ROLE_PROJECTS: u8 = 5;
const ROLE_PROJECT: u8 = 6;
const SLOT_TOP: u8 = 1;
const SLOT_SECTION: u8 = 2;
const SLOT_ENTRY: u8 = 3;
const SLOT_COMMAND: u8 = 4;
const SLOT_ARGS: u8 = 5;
const SLOT_URL: u8 = 6;
const SLOT_TYPE: u8 = 7;
const SLOT_ELEMENT: u8 = 8;
const SLOT_PROJECTS: u8 = 9;
const SLOT_PROJECT: u8 = 10;

/// Claude Code's top-level member holding per-project settings, each with its own `mcpServers`.
const PROJECTS: &str = "projects";

struct Finder<'a> {
    text: &'a str,
    found: Located,
    /// The project whose members are being read (`projects.<key>`).
    project: Option<String>,
}

impl Finder<'_> {
    fn span(&self, part: &str) -> Span {
        let start = (part.as_ptr() as usize).saturating_sub(self.text.as_ptr() as usize);
        Span {
            start,
            end: start + part.len(),
        }
    }

    fn entry(&mut self) -> Option<&mut Entry> {
        self.found.sections.last_mut()?.entries.last_mut()
    }
}

/// The decoded text of a key's raw contents (escapes resolved); the scan has validated it.
pub(super) fn decode(raw: &str) -> String {
    if !raw.contains('\\') {
        return raw.to_string();
    }
    serde_json::from_str::<String>(&format!("\"{raw}\"")).unwrap_or_else(|_| raw.to_string())
}

/// The name in `names` that `key` is a lenient variant of (equal after case folding and with
/// trailing NULs removed, but not equal).
fn variant_of(key: &str, names: &[&'static str]) -> Option<&'static str> {
    names
        .iter()
        .copied()
        .find(|n| crate::lenient::is_variant(key, n))
}

impl<'a> Visitor<'a> for Finder<'a> {
    fn root(&mut self) -> u8 {
        SLOT_TOP
    }

    fn open(&mut self, slot: u8, object: bool, _at: usize) -> u8 {
        match (slot, object) {
            (SLOT_TOP, true) => {
                self.found.top_is_object = true;
                ROLE_TOP
            }
            (SLOT_SECTION, true) => ROLE_SECTION,
            (SLOT_ENTRY, true) => ROLE_ENTRY,
            (SLOT_ARGS, false) => ROLE_ARGS,
            (SLOT_PROJECTS, true) => ROLE_PROJECTS,
            (SLOT_PROJECT, true) => ROLE_PROJECT,
            _ => 0,
        }
    }

    fn element(&mut self, role: u8) -> u8 {
        if role != ROLE_ARGS {
            return 0;
        }
        // A placeholder, filled in by `value` (which `true` and `false` never reach: an element
        // left with first byte 0 is a boolean).
        if let Some(e) = self.entry() {
            e.elements.push(PRESENT);
        }
        SLOT_ELEMENT
    }

    fn key(&mut self, role: u8, raw: &'a str, _plain: bool, _at: usize) -> Result<u8, ScanError> {
        match role {
            ROLE_TOP => {
                let key = decode(raw);
                if let Some(i) = SECTIONS.iter().position(|s| *s == key) {
                    self.found.sections.push(Section {
                        name: SECTIONS[i],
                        project: None,
                        value: None,
                        entries: Vec::new(),
                    });
                    return Ok(SLOT_SECTION);
                }
                if key == PROJECTS {
                    return Ok(SLOT_PROJECTS);
                }
                if let Some(name) = variant_of(&key, &SECTIONS) {
                    self.found.variant.get_or_insert((key, name));
                }
                Ok(0)
            }
            ROLE_PROJECTS => {
                self.project = Some(decode(raw));
                Ok(SLOT_PROJECT)
            }
            ROLE_PROJECT => {
                if decode(raw) != SECTIONS[0] {
                    return Ok(0);
                }
                self.found.sections.push(Section {
                    name: SECTIONS[0],
                    project: self.project.clone(),
                    value: None,
                    entries: Vec::new(),
                });
                Ok(SLOT_SECTION)
            }
            ROLE_SECTION => {
                if let Some(section) = self.found.sections.last_mut() {
                    section.entries.push(Entry {
                        name: decode(raw),
                        ..Entry::default()
                    });
                }
                Ok(SLOT_ENTRY)
            }
            ROLE_ENTRY => {
                let key = decode(raw);
                let slot = match key.as_str() {
                    "command" => SLOT_COMMAND,
                    "args" => SLOT_ARGS,
                    "url" => SLOT_URL,
                    "type" => SLOT_TYPE,
                    _ => 0,
                };
                if let Some(e) = self.entry() {
                    // Present from its key on; `value` fills in where (never for a boolean).
                    match slot {
                        SLOT_COMMAND => e.command = Some(PRESENT),
                        SLOT_ARGS => e.args = Some(PRESENT),
                        SLOT_URL => e.url = Some(PRESENT),
                        SLOT_TYPE => e.r#type = Some(PRESENT),
                        _ => {}
                    }
                }
                let slot = match slot {
                    0 => {
                        if let Some(name) = variant_of(&key, &MEMBERS) {
                            if let Some(e) = self.entry() {
                                e.variant.get_or_insert((key, name));
                            }
                        }
                        0
                    }
                    s => s,
                };
                Ok(slot)
            }
            _ => Ok(0),
        }
    }

    fn value(&mut self, slot: u8, _role: u8, text: &'a str) -> Result<(), ScanError> {
        let v = Value {
            span: self.span(text),
            first: text.as_bytes().first().copied().unwrap_or(0),
        };
        match slot {
            SLOT_SECTION => {
                if let Some(s) = self.found.sections.last_mut() {
                    s.value = Some(v);
                }
            }
            SLOT_ENTRY => {
                if let Some(e) = self.entry() {
                    e.value = Some(v);
                }
            }
            SLOT_ELEMENT => {
                if let Some(last) = self.entry().and_then(|e| e.elements.last_mut()) {
                    *last = v;
                }
            }
            SLOT_COMMAND | SLOT_ARGS | SLOT_URL | SLOT_TYPE => {
                if let Some(e) = self.entry() {
                    let member = match slot {
                        SLOT_COMMAND => &mut e.command,
                        SLOT_ARGS => &mut e.args,
                        SLOT_URL => &mut e.url,
                        _ => &mut e.r#type,
                    };
                    *member = Some(v);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// 1-based line and column of byte `offset` of `bytes`.
pub(super) fn line_col(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = bytes.get(..offset).unwrap_or(bytes);
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
    (line, col)
}

/// Scans `bytes` strictly and locates the sections and entries.
pub(super) fn locate(bytes: &[u8]) -> Result<(&str, Located), HostConfigError> {
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Err(HostConfigError::Syntax {
            line: 1,
            column: 1,
            problem: "starts with a byte order mark (save it as UTF-8 without BOM)".to_string(),
        });
    }
    let refused = |e: ScanError| {
        let (line, column) = line_col(bytes, e.offset);
        let at = bytes.get(e.offset).copied();
        let before = bytes
            .get(..e.offset)
            .and_then(|b| b.iter().rev().find(|c| !c.is_ascii_whitespace()).copied());
        let problem = match e.kind {
            strict_json::ScanErrorKind::DuplicateKey => "a key appears twice in one object".into(),
            strict_json::ScanErrorKind::TooDeep => format!("nested deeper than {MAX_DEPTH} levels"),
            strict_json::ScanErrorKind::NonFinite => "a number is not finite".into(),
            strict_json::ScanErrorKind::Invalid if at == Some(b'/') => {
                "a comment: only strict JSON is read (remove comments; JSONC is not supported)"
                    .into()
            }
            strict_json::ScanErrorKind::Invalid
                if matches!(at, Some(b'}' | b']')) && before == Some(b',') =>
            {
                "a trailing comma: only strict JSON is read (remove it)".into()
            }
            strict_json::ScanErrorKind::Invalid if std::str::from_utf8(bytes).is_err() => {
                "not valid UTF-8".into()
            }
            strict_json::ScanErrorKind::Invalid => "not valid JSON".into(),
        };
        HostConfigError::Syntax {
            line,
            column,
            problem,
        }
    };
    let text = std::str::from_utf8(bytes).map_err(|e| {
        refused(ScanError {
            kind: strict_json::ScanErrorKind::Invalid,
            offset: e.valid_up_to(),
        })
    })?;
    let mut finder = Finder {
        text,
        found: Located::default(),
        project: None,
    };
    strict_json::scan_with(text, MAX_DEPTH, &mut finder).map_err(refused)?;
    Ok((text, finder.found))
}
