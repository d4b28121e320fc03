//! The CloudEvents 1.0 envelope shared by every evidence record, plus ids, timestamps and
//! digests (SPEC §4).

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, ErrorKind, Result};

/// Event type of a decision line.
pub(crate) const TYPE_DECISION: &str = "assay.tool.decision";
/// Event type of the session context.
pub(crate) const TYPE_CONTEXT: &str = "assay.mcp.session.context.v1";
/// Event type of the session stop.
pub(crate) const TYPE_STOP: &str = "assay.mcp.session.stop.v1";

/// A CloudEvents 1.0 structured-mode event.
#[derive(Serialize)]
pub(crate) struct Envelope<'a, D: Serialize> {
    pub specversion: &'static str,
    pub id: &'a str,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub source: &'a str,
    pub time: &'a str,
    pub datacontenttype: &'static str,
    pub data: D,
}

impl<'a, D: Serialize> Envelope<'a, D> {
    pub(crate) fn new(
        id: &'a str,
        kind: &'static str,
        source: &'a str,
        time: &'a str,
        data: D,
    ) -> Self {
        Self {
            specversion: "1.0",
            id,
            kind,
            source,
            time,
            datacontenttype: "application/json",
            data,
        }
    }

    /// Compact JSON followed by `\n`.
    pub(crate) fn to_line(&self) -> Result<Vec<u8>> {
        let mut v = serde_json::to_vec(self)
            .map_err(|e| Error::new(ErrorKind::Internal, format!("serializing event: {e}")))?;
        v.push(b'\n');
        Ok(v)
    }
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    s
}

/// Lowercase hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// A new session id: 32 lowercase hex characters from the OS random source (SPEC §2).
pub(crate) fn new_session_id() -> Result<String> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("cannot read the OS random source for a session id: {e}"),
        )
    })?;
    Ok(hex(&b))
}

/// The current time as RFC 3339 in UTC with a `Z` suffix.
pub(crate) fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    now.format(&time::format_description::well_known::Rfc3339)
        // Formatting a current UTC timestamp cannot fail (year is within 0..=9999); fall back to
        // the Unix epoch text rather than panic if it ever does.
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string())
}

/// SHA-256 of argv joined by NUL bytes (SPEC §4.2 `command_sha256`).
pub(crate) fn command_sha256(argv: &[String]) -> String {
    let mut h = Sha256::new();
    for (i, a) in argv.iter().enumerate() {
        if i > 0 {
            h.update([0u8]);
        }
        h.update(a.as_bytes());
    }
    hex(&h.finalize())
}

/// The producer object of context events and protocol.json.
#[derive(Serialize)]
pub(crate) struct Producer {
    pub name: &'static str,
    pub version: &'static str,
}

pub(crate) const PRODUCER: Producer = Producer {
    name: "assay",
    version: env!("CARGO_PKG_VERSION"),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_digests() {
        let id = new_session_id().unwrap();
        assert_eq!(id.len(), 32);
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        assert_ne!(id, new_session_id().unwrap());
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            command_sha256(&["a".into(), "b".into()]),
            sha256_hex(b"a\0b")
        );
        let t = now_rfc3339();
        assert!(t.ends_with('Z'), "{t}");
    }
}
