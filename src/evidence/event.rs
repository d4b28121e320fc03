//! The CloudEvents 1.0 envelope shared by every evidence record, plus ids, timestamps and
//! digests (SPEC §4).

use serde::Serialize;

use crate::error::{Error, ErrorKind, Result};
use crate::sha256::Sha256;
// The hex helpers live with the one SHA-256; the evidence writers reach them from here.
pub(crate) use crate::sha256::{HexDigest, hex};

/// Event type of a decision line.
pub(crate) const TYPE_DECISION: &str = "assay.tool.decision";
/// Event type of a listing line (SPEC §4.1a): what a client was shown of a `tools/list` result.
pub(crate) const TYPE_LISTING: &str = "assay.tool.listing";
/// Event type of a decision on a governed method other than `tools/call` (SPEC §4.1a, §5.2).
pub(crate) const TYPE_MCP_DECISION: &str = "assay.mcp.decision";
/// Event type of an answer to a governed request (SPEC §5.3).
pub(crate) const TYPE_RESULT: &str = "assay.mcp.result";
/// The prefix of an answer event's id: `evt_result_<session_id>_<seq>`.
pub(crate) const RESULT_ID_PREFIX: &str = "evt_result_";
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

/// Lowercase hex SHA-256 of `bytes`.
#[cfg(test)]
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    crate::sha256::digest_hex(bytes)
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

/// RFC 3339 timestamps for the per-line hot path: the same text as [`now_rfc3339`], but the
/// `YYYY-MM-DDTHH:MM:SS` part is formatted once per second and the sub-second digits by hand.
pub(crate) struct Clock {
    second: Option<i64>,
    prefix: String,
}

impl Clock {
    pub(crate) fn new() -> Self {
        Self {
            second: None,
            prefix: String::new(),
        }
    }

    /// Appends the current time (UTC, `Z`) to `out`.
    pub(crate) fn push_now(&mut self, out: &mut Vec<u8>) {
        let (secs, nanos) = match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)
        {
            Ok(d) => (
                i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                d.subsec_nanos(),
            ),
            // A clock before 1970: let the general formatter handle it.
            Err(_) => {
                out.extend_from_slice(now_rfc3339().as_bytes());
                return;
            }
        };
        self.push(secs, nanos, out);
    }

    fn push(&mut self, secs: i64, nanos: u32, out: &mut Vec<u8>) {
        if self.second != Some(secs) {
            let whole = time::OffsetDateTime::from_unix_timestamp(secs)
                .ok()
                .and_then(|t| {
                    t.format(&time::format_description::well_known::Rfc3339)
                        .ok()
                });
            match whole {
                // Formatted without a fraction (nanos are 0): "…:SSZ".
                Some(text) if text.ends_with('Z') => {
                    self.prefix.clear();
                    self.prefix.push_str(&text[..text.len() - 1]);
                    self.second = Some(secs);
                }
                _ => {
                    self.second = None;
                    out.extend_from_slice(b"1970-01-01T00:00:00Z");
                    return;
                }
            }
        }
        out.extend_from_slice(self.prefix.as_bytes());
        // As the time crate does: the nanoseconds with trailing zeros removed, omitted when 0.
        if nanos != 0 {
            let mut digits = [b'0'; 9];
            let mut n = nanos;
            for d in digits.iter_mut().rev() {
                *d = b'0' + (n % 10) as u8;
                n /= 10;
            }
            let len = 9 - digits.iter().rev().take_while(|d| **d == b'0').count();
            out.push(b'.');
            out.extend_from_slice(&digits[..len]);
        }
        out.push(b'Z');
    }
}

/// Appends `s` as a JSON string, escaped exactly as `serde_json` escapes it (short escapes for
/// `\b \t \n \f \r`, `\u00xx` with lowercase hex for other control characters, nothing else).
/// A string with something to escape (the recorded arguments: every quote) is escaped a run at
/// a time: the next byte that needs an escape is found eight bytes at a time
/// ([`crate::strict_json::plain_run`]) and the run before it copied whole.
pub(crate) fn push_json_str(out: &mut Vec<u8>, s: &str) {
    let mut rest = s.as_bytes();
    out.push(b'"');
    // Most strings (tool names, reasons, ids) need no escape: one vectorizable pass, one copy.
    // (A fold without early exit, so the check is vectorized.)
    if !rest.iter().fold(false, |acc, &b| {
        acc | (b < 0x20) | (b == b'"') | (b == b'\\')
    }) {
        out.extend_from_slice(rest);
        out.push(b'"');
        return;
    }
    loop {
        let run = crate::strict_json::plain_run(rest);
        // `run` is at most `rest.len()`.
        let (plain, tail) = rest.split_at_checked(run).unwrap_or((rest, &[]));
        out.extend_from_slice(plain);
        let Some((&b, after)) = tail.split_first() else {
            break;
        };
        push_escape(out, b);
        rest = after;
    }
    out.push(b'"');
}

/// Appends the escape of `b` (`"`, `\\` or a control character) as `serde_json` writes it.
fn push_escape(out: &mut Vec<u8>, b: u8) {
    let short: &[u8] = match b {
        b'"' => b"\\\"",
        b'\\' => b"\\\\",
        0x08 => b"\\b",
        0x09 => b"\\t",
        0x0a => b"\\n",
        0x0c => b"\\f",
        0x0d => b"\\r",
        _ => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
            return;
        }
    };
    out.extend_from_slice(short);
}

/// The escaper [`push_json_str`] replaced (a byte at a time), kept as its test oracle.
#[cfg(test)]
pub(crate) fn push_json_str_bytewise(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x09 => b"\\t",
            0x0a => b"\\n",
            0x0c => b"\\f",
            0x0d => b"\\r",
            0x00..=0x1f => {
                out.extend_from_slice(&bytes[start..i]);
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// SHA-256 of argv joined by NUL bytes (SPEC §4.2 `command_sha256`).
pub(crate) fn command_sha256(argv: &[std::ffi::OsString]) -> String {
    let mut h = Sha256::new();
    for (i, a) in argv.iter().enumerate() {
        if i > 0 {
            h.update(&[0u8]);
        }
        h.update(std::os::unix::ffi::OsStrExt::as_bytes(a.as_os_str()));
    }
    h.finalize_hex()
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
        for input in [&b""[..], b"a\0b", &[0xff; 200]] {
            assert_eq!(HexDigest::of(input).as_str(), sha256_hex(input));
        }
        assert_eq!(
            command_sha256(&["a".into(), "b".into()]),
            sha256_hex(b"a\0b")
        );
        let t = now_rfc3339();
        assert!(t.ends_with('Z'), "{t}");
    }

    #[test]
    fn clock_matches_the_time_crate() {
        let mut clock = Clock::new();
        for (secs, nanos) in [
            (0i64, 0u32),
            (1_700_000_000, 1),
            (1_700_000_000, 120_000_000),
            (1_700_000_000, 999_999_999),
            (1_700_000_001, 500),
            (4_102_444_799, 123_456_780),
        ] {
            let mut got = Vec::new();
            clock.push(secs, nanos, &mut got);
            let want = time::OffsetDateTime::from_unix_timestamp_nanos(
                i128::from(secs) * 1_000_000_000 + i128::from(nanos),
            )
            .unwrap()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap();
            assert_eq!(String::from_utf8(got).unwrap(), want);
        }
        let mut live = Vec::new();
        clock.push_now(&mut live);
        let live = String::from_utf8(live).unwrap();
        assert!(live.ends_with('Z') && live.len() >= 20, "{live}");
    }

    #[test]
    fn json_strings_match_serde_json() {
        let mut samples: Vec<String> = vec![
            String::new(),
            "plain".into(),
            "quote \" backslash \\ slash /".into(),
            "é ü 日本 \u{1F600} \u{7f}".into(),
        ];
        samples.push((0u8..0x20).map(char::from).collect());
        for s in samples {
            let mut got = Vec::new();
            push_json_str(&mut got, &s);
            assert_eq!(got, serde_json::to_vec(&s).unwrap(), "{s:?}");
        }
    }

    /// Strings weighted toward what needs escaping: every control character, quotes,
    /// backslashes, DEL, multi-byte characters, at every offset within an eight-byte word.
    fn hostile_string() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let ch = prop_oneof![
            3 => (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap_or('x')),
            2 => prop::sample::select(vec!['"', '\\', '/', '\u{7f}', 'a', ' ']),
            1 => any::<char>(),
            2 => prop::char::range('a', 'z'),
        ];
        prop::collection::vec(ch, 0..80).prop_map(|v| v.into_iter().collect())
    }

    proptest::proptest! {
        /// The run-at-a-time escaper writes what serde_json writes, and what the byte-at-a-time
        /// escaper it replaced wrote, after whatever the buffer already held.
        #[test]
        fn json_strings_match_serde_json_and_the_bytewise_escaper(
            s in hostile_string(),
            prefix in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..9),
        ) {
            let mut got = prefix.clone();
            push_json_str(&mut got, &s);
            let mut old = prefix.clone();
            push_json_str_bytewise(&mut old, &s);
            let mut want = prefix;
            want.extend_from_slice(&serde_json::to_vec(&s).unwrap());
            proptest::prop_assert_eq!(&got, &want);
            proptest::prop_assert_eq!(&got, &old);
        }
    }

    /// Every byte value that needs an escape, alone and at each position of a 17-byte string
    /// (both sides of the eight-byte words and the tail).
    #[test]
    fn every_escape_at_every_offset() {
        let specials = (0u8..0x20).chain([b'"', b'\\']);
        for b in specials {
            for at in 0..17 {
                let mut s = vec![b'a'; 17];
                s[at] = b;
                let s = String::from_utf8(s).unwrap();
                let mut got = Vec::new();
                push_json_str(&mut got, &s);
                assert_eq!(got, serde_json::to_vec(&s).unwrap(), "{s:?}");
            }
        }
    }
}
