//! The tool definitions a session's listings showed, kept in its capture directory
//! (`tool-definitions.ndjson`) when the policy says `record_definitions: true`, so that `assay
//! policy suggest` can write the pins every capture agrees on (a pins file carries each
//! definition, SPEC §5.1; the decision log carries only its digest).
//!
//! One line per distinct definition, in the order the session first saw it:
//!
//! ```json
//! {"schema":"assay.tool_definition.v1","name":"echo","sha256":"<hex>","definition":{…}}
//! ```
//!
//! `definition` is the RFC 8785 canonical form of the tool object as the server listed it, so
//! `sha256` is the SHA-256 of exactly those bytes. The file is not part of the log's accounting:
//! it is content-addressed by the digests the closed log records. A reader ([`read_kept`]) takes
//! a line only when its digest is the digest of its definition and its name is the definition's
//! `name`; `policy suggest` then takes a definition only for a digest that capture's log recorded
//! for that name, so a line the log does not vouch for is never used.
//!
//! Bounded: at most [`MAX_KEPT_DEFINITIONS`] definitions and [`MAX_KEPT_BYTES`] per session; past
//! either, further definitions are not kept (said once on the diagnostics). A failed write stops
//! the keeping (said once); the session goes on.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::diag::Diag;
use crate::sha256::HexDigest;

/// The `schema` of each line.
pub const DEFINITION_SCHEMA: &str = "assay.tool_definition.v1";

/// Most definitions one session keeps.
pub const MAX_KEPT_DEFINITIONS: usize = 2_000;

/// Most bytes one session's definitions file holds (the log's own bound, SPEC §7).
pub const MAX_KEPT_BYTES: u64 = 8 * 1024 * 1024;

/// Nesting accepted in a line (the client-line bound, as in a pins file).
const MAX_DEPTH: usize = 100;

/// The writer of one session's definitions file: created at the first definition
/// (`O_EXCL`, mode 0600, as every evidence file).
pub(crate) struct Keeper {
    state: Mutex<State>,
    diag: Arc<Diag>,
}

struct State {
    path: PathBuf,
    file: Option<File>,
    kept: HashSet<String>,
    bytes: u64,
    /// Why nothing more is kept (said once).
    stopped: bool,
}

impl Keeper {
    /// A keeper writing to `path` (the file is created when the first definition comes).
    pub(crate) fn new(path: PathBuf, diag: Arc<Diag>) -> Keeper {
        Keeper {
            state: Mutex::new(State {
                path,
                file: None,
                kept: HashSet::new(),
                bytes: 0,
                stopped: false,
            }),
            diag,
        }
    }

    /// Keeps the definition `tool` (the tool object's JSON text as listed, whose canonical
    /// digest is `digest`) of the tool `name`, unless a definition with that digest is kept
    /// already or a bound is reached.
    pub(crate) fn keep(&self, name: &str, digest: &HexDigest, tool: &str) {
        let Ok(mut s) = self.state.lock() else { return };
        if s.stopped || s.kept.contains(digest.as_str()) {
            return;
        }
        let Some(canonical) = crate::canonical::canonical_text(tool) else {
            return;
        };
        let line = line(name, digest, &canonical);
        if s.kept.len() >= MAX_KEPT_DEFINITIONS
            || s.bytes.saturating_add(line.len() as u64) > MAX_KEPT_BYTES
        {
            s.stopped = true;
            self.diag.say(&format!(
                "tool definitions past {MAX_KEPT_DEFINITIONS} or {MAX_KEPT_BYTES} bytes are not kept in {}",
                s.path.display()
            ));
            return;
        }
        if let Err(e) = s.write(line.as_bytes()) {
            s.stopped = true;
            self.diag.say(&format!(
                "cannot keep tool definitions in {}: {e}; later ones are not kept",
                s.path.display()
            ));
            return;
        }
        s.bytes += line.len() as u64;
        s.kept.insert(digest.as_str().to_owned());
    }
}

impl State {
    fn write(&mut self, line: &[u8]) -> std::io::Result<()> {
        let file = match &mut self.file {
            Some(f) => f,
            None => self.file.insert(super::file::create_new(&self.path)?),
        };
        file.write_all(line)
    }
}

/// One line of the file (`\n` included); `canonical` is the definition's canonical JSON.
fn line(name: &str, digest: &HexDigest, canonical: &str) -> String {
    let mut out = String::with_capacity(canonical.len() + name.len() + 140);
    out.push_str("{\"schema\":\"");
    out.push_str(DEFINITION_SCHEMA);
    out.push_str("\",\"name\":");
    out.push_str(&serde_json::Value::from(name).to_string());
    out.push_str(",\"sha256\":\"");
    out.push_str(digest.as_str());
    out.push_str("\",\"definition\":");
    out.push_str(canonical);
    out.push_str("}\n");
    out
}

/// A kept definition: the canonical JSON text of the tool object.
pub type KeptDefinition = String;

/// The definitions kept in the capture directory `dir`, by (tool name, digest): only lines
/// whose digest is the digest of their definition, whose name is the definition's `name`, and
/// whose keys are exactly the four of the format; anything else (a missing or over-bound file,
/// a partial or malformed line) is left out, never guessed. Read through the bounded opener
/// without following a link.
pub fn read_kept(dir: &Path) -> BTreeMap<(String, String), KeptDefinition> {
    let mut out = BTreeMap::new();
    let path = dir.join(crate::capture_files::DEFINITIONS);
    let Ok(bytes) = crate::input_file::read_bounded(
        &path,
        crate::input_file::FinalLink::Refuse,
        MAX_KEPT_BYTES,
    ) else {
        return out;
    };
    for raw in bytes.split_inclusive(|b| *b == b'\n') {
        let Some(raw) = raw.strip_suffix(b"\n") else {
            break; // a partial tail
        };
        if let Some((name, digest, definition)) = parse_line(raw) {
            out.entry((name, digest)).or_insert(definition);
        }
    }
    out
}

/// One line, checked: (name, digest, canonical definition).
fn parse_line(raw: &[u8]) -> Option<(String, String, KeptDefinition)> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Line<'a> {
        schema: &'a str,
        name: String,
        sha256: &'a str,
        #[serde(borrow)]
        definition: &'a serde_json::value::RawValue,
    }
    #[derive(serde::Deserialize)]
    struct Named {
        name: String,
    }
    let text = std::str::from_utf8(raw).ok()?;
    // Strictly (duplicate keys, non-finite numbers and over-deep nesting refused) before serde.
    crate::strict_json::scan_str(text, MAX_DEPTH).ok()?;
    let l: Line<'_> = serde_json::from_str(text).ok()?;
    if l.schema != DEFINITION_SCHEMA {
        return None;
    }
    let canonical = crate::canonical::canonical_text(l.definition.get())?;
    if HexDigest::of(canonical.as_bytes()).as_str() != l.sha256 {
        return None;
    }
    let named: Named = serde_json::from_str(&canonical).ok()?;
    (named.name == l.name).then(|| (l.name, l.sha256.to_owned(), canonical))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keeper(dir: &Path) -> Keeper {
        Keeper::new(
            dir.join(crate::capture_files::DEFINITIONS),
            Arc::new(Diag::new(None, false)),
        )
    }

    #[test]
    fn keeps_each_definition_once_and_reads_back_only_what_its_digest_vouches_for() {
        let d = tempfile::tempdir().unwrap();
        let k = keeper(d.path());
        let tool =
            r#"{ "name": "echo", "inputSchema": {"type":"object"}, "description": "e\u0301" }"#;
        let digest = crate::canonical::digest_of(tool).unwrap();
        k.keep("echo", &digest, tool);
        k.keep("echo", &digest, tool);
        let path = d.path().join(crate::capture_files::DEFINITIONS);
        let written = std::fs::read_to_string(&path).unwrap();
        assert_eq!(written.lines().count(), 1);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        let kept = read_kept(d.path());
        let def = kept
            .get(&("echo".to_owned(), digest.as_str().to_owned()))
            .unwrap();
        assert_eq!(
            crate::canonical::digest_of(def).unwrap().as_str(),
            digest.as_str()
        );

        // A forged line (a digest of something else), a renamed one, an unknown key and a
        // partial tail are all left out.
        let other = crate::canonical::digest_of(r#"{"name":"x"}"#).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        let forged = line("evil", &other, r#"{"name":"evil","description":"changed"}"#);
        let renamed = line("other", &digest, def);
        let extra = line("echo", &digest, def).replace("{\"schema\"", "{\"x\":1,\"schema\"");
        write!(f, "{forged}{renamed}{extra}{{\"schema\"").unwrap();
        let kept = read_kept(d.path());
        assert_eq!(kept.len(), 1, "{kept:?}");
    }

    proptest::proptest! {
        /// Any bytes: never a panic, and a line is taken only with its digest vouching for it.
        #[test]
        fn any_line_is_taken_only_when_its_digest_is_its_definitions(
            raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            name in "[a-z\u{e9}\\\"]{0,8}",
            extra in "[ -~]{0,40}",
        ) {
            if let Some((n, d, def)) = parse_line(&raw) {
                proptest::prop_assert_eq!(HexDigest::of(def.as_bytes()).as_str().to_owned(), d);
                let _ = n;
            }
            let tool = format!("{{\"name\":{},\"description\":{}}}",
                serde_json::Value::from(name.as_str()), serde_json::Value::from(extra.as_str()));
            let digest = crate::canonical::digest_of(&tool).unwrap();
            let canonical = crate::canonical::canonical_text(&tool).unwrap();
            let good = line(&name, &digest, &canonical);
            let got = parse_line(good.trim_end().as_bytes());
            proptest::prop_assert_eq!(got.map(|(n, d, _)| (n, d)), Some((name.clone(), digest.as_str().to_owned())));
            // Any one byte changed inside the definition: refused or still vouched for.
            let at = good.find("\"definition\":").unwrap() + 14;
            for i in at..good.len() - 2 {
                let mut b = good.clone().into_bytes();
                b[i] ^= 0x01;
                if let Some((_, d, def)) = parse_line(&b[..b.len() - 1]) {
                    proptest::prop_assert_eq!(HexDigest::of(def.as_bytes()).as_str().to_owned(), d);
                }
            }
        }
    }

    #[test]
    fn stops_at_the_count_bound() {
        let d = tempfile::tempdir().unwrap();
        let k = keeper(d.path());
        for i in 0..MAX_KEPT_DEFINITIONS + 5 {
            let tool = format!(r#"{{"name":"t{i}"}}"#);
            let digest = crate::canonical::digest_of(&tool).unwrap();
            k.keep(&format!("t{i}"), &digest, &tool);
        }
        assert_eq!(read_kept(d.path()).len(), MAX_KEPT_DEFINITIONS);
    }
}
