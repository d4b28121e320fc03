//! The pins file (`assay.pins.v1`, SPEC §5.1): reading it strictly, and writing it.
//!
//! ```json
//! {"schema":"assay.pins.v1",
//!  "server":{"name":"…","version":"…"}, "created_at":"…", "producer":{"name":"assay","version":"…"},
//!  "tools":{"echo":{"sha256":"<hex>","definition":{"name":"echo", …}}},
//!  "instructions":{"sha256":"<hex>","text":"…"}}
//! ```
//!
//! `instructions` (SPEC §5.1, "Instructions are pinned too") is the server's `instructions` text
//! with the SHA-256 of its UTF-8 bytes, or `null` when the server gave none; a file without the
//! member (written before it existed) does not judge instructions.
//!
//! Reading refuses, as a load error naming the file and the key: a file over [`MAX_PINS_BYTES`],
//! anything the strict JSON rules refuse (duplicate keys included), unknown members at the top
//! level or in an entry, an entry whose key differs from its `definition.name`, a `sha256` that is
//! not 64 lowercase hex digits or is not the digest of its `definition`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::sha256::HexDigest;

/// Largest pins file accepted (SPEC §5.1).
pub const MAX_PINS_BYTES: u64 = 16 * 1024 * 1024;

/// The `schema` of a pins file.
pub const PINS_SCHEMA: &str = "assay.pins.v1";

/// Nesting accepted in a pins file (the client-line bound).
const MAX_DEPTH: usize = 100;

/// Why a pins file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PinsError {
    /// The file cannot be read.
    #[error("pins file {}: cannot read: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_PINS_BYTES`].
    #[error("pins file {}: larger than {limit} bytes", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The bound.
        limit: u64,
    },
    /// The file is not a valid pins file.
    #[error("pins file {}: {what}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the key.
        what: String,
    },
}

/// One pinned tool.
#[derive(Debug, Clone)]
pub struct Pin {
    /// The definition digest (SPEC §5.1), lowercase hex.
    pub(crate) sha256: HexDigest,
    /// The pinned tool object, as JSON text.
    pub(crate) definition: Box<RawValue>,
}

impl Pin {
    /// The pinned definition digest (64 lowercase hex digits).
    pub fn sha256(&self) -> &str {
        self.sha256.as_str()
    }

    /// The pinned tool object as JSON text.
    pub fn definition(&self) -> &str {
        self.definition.get()
    }
}

/// What a pins file says of the server's `instructions` (SPEC §5.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstructionsPin {
    /// The file has no `instructions` member: instructions are not judged.
    NotJudged,
    /// The server gave no instructions (`null`): any instructions are a drift.
    None,
    /// The reviewed text and the SHA-256 of its UTF-8 bytes.
    Text {
        /// SHA-256 of the text's UTF-8 bytes, 64 lowercase hex digits.
        sha256: String,
        /// The text.
        text: String,
    },
}

impl InstructionsPin {
    /// Whether a server's `instructions` text (`None`: it gave none) is what was reviewed.
    pub fn admits(&self, text: Option<&str>) -> bool {
        match (self, text) {
            (InstructionsPin::NotJudged, _) | (_, None) => true,
            (InstructionsPin::None, Some(_)) => false,
            (InstructionsPin::Text { sha256, .. }, Some(t)) => {
                HexDigest::of(t.as_bytes()).as_str() == sha256
            }
        }
    }
}

/// A loaded pins file: the reviewed definition of every pinned tool.
#[derive(Debug, Clone)]
pub struct Pins {
    path: PathBuf,
    sha256: HexDigest,
    tools: BTreeMap<String, Pin>,
    instructions: InstructionsPin,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileIn<'a> {
    schema: String,
    #[serde(borrow)]
    tools: BTreeMap<String, EntryIn<'a>>,
    #[serde(default, borrow)]
    server: Option<&'a RawValue>,
    #[serde(default)]
    created_at: Option<String>,
    #[serde(default, borrow)]
    producer: Option<&'a RawValue>,
    /// Absent: not judged; `null`: none were given.
    #[serde(default, borrow)]
    instructions: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InstructionsIn {
    sha256: String,
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryIn<'a> {
    sha256: String,
    #[serde(borrow)]
    definition: &'a RawValue,
}

#[derive(Deserialize)]
struct Named {
    name: Option<String>,
}

impl Pins {
    /// Reads and checks the pins file at `path`.
    ///
    /// # Errors
    /// A [`PinsError`] naming the file and what is wrong.
    pub fn load(path: &Path) -> Result<Pins, PinsError> {
        use crate::input_file::{self, BoundedError, FinalLink};
        // The one opener: a FIFO or device is refused at once, never waited on.
        let bytes = input_file::read_bounded(path, FinalLink::Follow, MAX_PINS_BYTES).map_err(
            |e| match e {
                BoundedError::TooLarge { .. } => PinsError::TooLarge {
                    path: path.to_path_buf(),
                    limit: MAX_PINS_BYTES,
                },
                other => PinsError::Read {
                    path: path.to_path_buf(),
                    source: other.into_io(MAX_PINS_BYTES),
                },
            },
        )?;
        Pins::from_bytes(&bytes, path)
    }

    /// Checks a pins file's bytes; `path` is used for messages.
    ///
    /// # Errors
    /// A [`PinsError`] naming the file and what is wrong.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Pins, PinsError> {
        let invalid = |what: String| PinsError::Invalid {
            path: path.to_path_buf(),
            what,
        };
        crate::strict_json::scan(bytes, MAX_DEPTH)
            .map_err(|e| invalid(format!("not strict JSON: {e}")))?;
        let text = std::str::from_utf8(bytes).map_err(|e| invalid(format!("not UTF-8: {e}")))?;
        let file: FileIn<'_> = serde_json::from_str(text)
            .map_err(|e| invalid(format!("not an {PINS_SCHEMA} file: {e}")))?;
        if file.schema != PINS_SCHEMA {
            return Err(invalid(format!(
                "`schema` is {:?}; expected {PINS_SCHEMA:?}",
                file.schema
            )));
        }
        let _ = (&file.server, &file.created_at, &file.producer);
        let mut tools = BTreeMap::new();
        for (name, entry) in file.tools {
            let key = format!("tools.{}", name.escape_debug());
            let definition = entry.definition.get();
            if !definition.starts_with('{') {
                return Err(invalid(format!("`{key}.definition` is not an object")));
            }
            let named: Named = serde_json::from_str(definition)
                .map_err(|_| invalid(format!("`{key}.definition.name` is not a string")))?;
            if named.name.as_deref() != Some(name.as_str()) {
                return Err(invalid(format!(
                    "`{key}` differs from its `definition.name`; the key must be the tool's name"
                )));
            }
            if !is_lower_hex_64(&entry.sha256) {
                return Err(invalid(format!(
                    "`{key}.sha256` is not 64 lowercase hex digits"
                )));
            }
            let digest = crate::canonical::digest_of(definition)
                .ok_or_else(|| invalid(format!("`{key}.definition` cannot be canonicalized")))?;
            if digest.as_str() != entry.sha256 {
                return Err(invalid(format!(
                    "`{key}.sha256` is not the digest of its definition (it is {}); the file was edited by hand — write it again with `assay mcp pin --out`",
                    digest.as_str()
                )));
            }
            tools.insert(
                name,
                Pin {
                    sha256: digest,
                    definition: entry.definition.to_owned(),
                },
            );
        }
        let instructions = match file.instructions.map(RawValue::get) {
            None => InstructionsPin::NotJudged,
            Some("null") => InstructionsPin::None,
            Some(raw) => {
                let i: InstructionsIn = serde_json::from_str(raw).map_err(|e| {
                    invalid(format!(
                        "`instructions` is not null or {{\"sha256\",\"text\"}}: {e}"
                    ))
                })?;
                let digest = HexDigest::of(i.text.as_bytes());
                if digest.as_str() != i.sha256 {
                    return Err(invalid(format!(
                        "`instructions.sha256` is not the SHA-256 of its `text` (it is {}); write the file again with `assay mcp pin --out`",
                        digest.as_str()
                    )));
                }
                InstructionsPin::Text {
                    sha256: digest.as_str().to_string(),
                    text: i.text,
                }
            }
        };
        Ok(Pins {
            path: path.to_path_buf(),
            sha256: HexDigest::of(bytes),
            tools,
            instructions,
        })
    }

    /// The file the pins were read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// SHA-256 of the pins file's bytes (SPEC §4.2 `pins_sha256`).
    pub fn sha256(&self) -> &str {
        self.sha256.as_str()
    }

    /// The pin of `tool`, if it is pinned.
    pub fn get(&self, tool: &str) -> Option<&Pin> {
        self.tools.get(tool)
    }

    /// Every pin, by tool name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Pin)> {
        self.tools.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// How many tools are pinned.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is pinned.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// What the file says of the server's `instructions`.
    pub fn instructions(&self) -> &InstructionsPin {
        &self.instructions
    }

    /// Whether `digest` is the pin of `tool`.
    pub(crate) fn matches(&self, tool: &str, digest: &HexDigest) -> bool {
        self.tools
            .get(tool)
            .is_some_and(|p| p.sha256.as_bytes() == digest.as_bytes())
    }
}

fn is_lower_hex_64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[derive(Serialize)]
struct FileOut<'a> {
    schema: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<&'a serde_json::Value>,
    created_at: &'a str,
    producer: Producer,
    tools: BTreeMap<&'a str, EntryOut>,
    /// `null` when the server gave none (SPEC §5.1); left out when instructions are not judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<Option<InstructionsOut<'a>>>,
}

#[derive(Serialize)]
struct InstructionsOut<'a> {
    sha256: String,
    text: &'a str,
}

#[derive(Serialize)]
struct Producer {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct EntryOut {
    sha256: String,
    definition: serde_json::Value,
}

/// The bytes of a pins file for `tools` (name, digest, definition text), pretty-printed so a
/// review reads it line by line; `server` is the server's `serverInfo`, when it gave one;
/// `instructions` the server's text (`Some(None)`: it gave none), or `None` to leave them
/// unjudged (the member is left out).
pub(crate) fn render(
    tools: &[(String, HexDigest, String)],
    server: Option<&serde_json::Value>,
    instructions: Option<Option<&str>>,
    created_at: &str,
) -> Result<Vec<u8>, String> {
    let mut out = BTreeMap::new();
    for (name, digest, definition) in tools {
        let value = crate::strict_json::parse_value(definition)
            .map_err(|e| format!("tool {name:?}: {e}"))?;
        out.insert(
            name.as_str(),
            EntryOut {
                sha256: digest.as_str().to_string(),
                definition: value,
            },
        );
    }
    let file = FileOut {
        schema: PINS_SCHEMA,
        server,
        created_at,
        producer: Producer {
            name: "assay",
            version: env!("CARGO_PKG_VERSION"),
        },
        tools: out,
        instructions: instructions.map(|i| {
            i.map(|text| InstructionsOut {
                sha256: HexDigest::of(text.as_bytes()).as_str().to_string(),
                text,
            })
        }),
    };
    let mut bytes = serde_json::to_vec_pretty(&file).map_err(|e| e.to_string())?;
    bytes.push(b'\n');
    Ok(bytes)
}
