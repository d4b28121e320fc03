//! The capture reader's field validators (SPEC §7): identifiers, times, event sources, digests,
//! the reason list every check adds to, and reading one companion file through the bounded
//! opener and the strict pre-scan into a JSON object.

use std::path::Path;

use serde_json::{Map, Value};

use super::bounds::MAX_DEPTH;
use super::judgement::{ClosureReasonCode, FileDigest, Reason};
use crate::input_file::{self as bounded, BoundedError, FinalLink};
use crate::strict_json::{self, ScanErrorKind};

/// At most this many reasons come from individual decision lines; the rest are summarized in
/// one extra reason so a hostile 10,000-line log cannot produce a 10,000-entry verdict.
pub(super) const MAX_LINE_REASONS: usize = 16;

/// Collected reasons.
#[derive(Default)]
pub(super) struct Reasons(pub(super) Vec<Reason>);

impl Reasons {
    pub(super) fn push(&mut self, code: ClosureReasonCode, detail: impl Into<String>) {
        self.0.push(Reason {
            code,
            detail: detail.into(),
        });
    }

    /// True when a reason other than the two known-loss ones (`decision_loss`, `proxy_error`)
    /// was found: the verdict is then `unknown`.
    pub(super) fn any_hard(&self) -> bool {
        self.0.iter().any(|r| {
            !matches!(
                r.code,
                ClosureReasonCode::DecisionLoss | ClosureReasonCode::ProxyError
            )
        })
    }
}

pub(crate) fn digest_of(bytes: &[u8]) -> FileDigest {
    FileDigest {
        bytes: bytes.len() as u64,
        sha256: crate::sha256::digest_hex(bytes),
    }
}

pub(super) fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

pub(super) fn is_session_id(s: &str) -> bool {
    is_hex(s, 32)
}

/// RFC 3339 in UTC with `Z`: `YYYY-MM-DDTHH:MM:SS[.fraction]Z` (SPEC §4).
pub(super) fn is_utc_time(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 20 || b.last() != Some(&b'Z') {
        return false;
    }
    let num = |from: usize, to: usize| -> Option<u32> {
        let part = b.get(from..to)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(part.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let seps = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if seps.iter().any(|&(i, c)| b.get(i) != Some(&c)) {
        return false;
    }
    let ok = num(0, 4).is_some()
        && matches!(num(5, 7), Some(1..=12))
        && matches!(num(8, 10), Some(1..=31))
        && matches!(num(11, 13), Some(0..=23))
        && matches!(num(14, 16), Some(0..=59))
        && matches!(num(17, 19), Some(0..=60));
    if !ok {
        return false;
    }
    // After the seconds: `Z`, or `.` and 1..=9 digits and `Z`.
    match b.get(19..b.len() - 1) {
        Some([]) => true,
        Some([b'.', frac @ ..]) => {
            !frac.is_empty() && frac.len() <= 9 && frac.iter().all(u8::is_ascii_digit)
        }
        _ => false,
    }
}

pub(super) fn scan_reason(kind: ScanErrorKind) -> ClosureReasonCode {
    match kind {
        ScanErrorKind::Invalid => ClosureReasonCode::InvalidJson,
        ScanErrorKind::DuplicateKey => ClosureReasonCode::DuplicateKey,
        ScanErrorKind::NonFinite => ClosureReasonCode::NonfiniteNumber,
        ScanErrorKind::TooDeep => ClosureReasonCode::TooDeep,
    }
}

/// Reads `dir/name` within `bound`, turning refusals into reasons.
pub(super) fn read_file(dir: &Path, name: &str, bound: u64, r: &mut Reasons) -> Option<Vec<u8>> {
    match bounded::read_bounded(&dir.join(name), FinalLink::Refuse, bound) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            let code = match e {
                // An unreadable file is as unavailable to the reader as an absent one.
                BoundedError::Missing | BoundedError::Io(_) => ClosureReasonCode::MissingFile,
                BoundedError::NotRegular(_) => ClosureReasonCode::NotRegularFile,
                BoundedError::TooLarge { .. } => ClosureReasonCode::TooLarge,
            };
            r.push(code, format!("{name} {}", e.describe(bound)));
            None
        }
    }
}

/// Strict scan, then parse to a JSON object.
pub(super) fn parse_object(
    name: &str,
    bytes: &[u8],
    r: &mut Reasons,
) -> Option<Map<String, Value>> {
    if let Err(e) = strict_json::scan(bytes, MAX_DEPTH) {
        r.push(scan_reason(e.kind), format!("{name}: {e}"));
        return None;
    }
    // The scan validated UTF-8; parse_value takes every key literally (see its docs).
    let parsed = std::str::from_utf8(bytes)
        .map_err(|e| e.to_string())
        .and_then(|t| strict_json::parse_value(t).map_err(|e| e.to_string()));
    match parsed {
        Ok(Value::Object(m)) => Some(m),
        Ok(_) => {
            r.push(
                ClosureReasonCode::SchemaMismatch,
                format!("{name}: not a JSON object"),
            );
            None
        }
        Err(e) => {
            r.push(ClosureReasonCode::InvalidJson, format!("{name}: {e}"));
            None
        }
    }
}

/// Field-by-field checks on one JSON object; every failure is a `schema_mismatch` reason.
pub(super) struct Fields<'a, 'r> {
    pub(super) what: String,
    pub(super) map: &'a Map<String, Value>,
    pub(super) r: &'r mut Reasons,
    pub(super) ok: bool,
}

impl<'a, 'r> Fields<'a, 'r> {
    pub(super) fn new(
        what: impl Into<String>,
        map: &'a Map<String, Value>,
        r: &'r mut Reasons,
    ) -> Self {
        Self {
            what: what.into(),
            map,
            r,
            ok: true,
        }
    }

    pub(super) fn bad(&mut self, key: &str, msg: &str) {
        self.ok = false;
        self.r.push(
            ClosureReasonCode::SchemaMismatch,
            format!("{}: `{key}` {msg}", self.what),
        );
    }

    pub(super) fn get(&mut self, key: &str) -> Option<&'a Value> {
        let v = self.map.get(key);
        if v.is_none() {
            self.bad(key, "is missing");
        }
        v
    }

    pub(super) fn str(&mut self, key: &str) -> Option<&'a str> {
        match self.get(key)? {
            Value::String(s) => Some(s),
            _ => {
                self.bad(key, "is not a string");
                None
            }
        }
    }

    pub(super) fn opt_str(&mut self, key: &str) -> Option<Option<&'a str>> {
        match self.get(key)? {
            Value::String(s) => Some(Some(s)),
            Value::Null => Some(None),
            _ => {
                self.bad(key, "is not a string or null");
                None
            }
        }
    }

    pub(super) fn checked(
        &mut self,
        key: &str,
        pred: fn(&str) -> bool,
        msg: &str,
    ) -> Option<&'a str> {
        let s = self.str(key)?;
        if pred(s) {
            Some(s)
        } else {
            self.bad(key, msg);
            None
        }
    }

    pub(super) fn equals(&mut self, key: &str, expected: &str) -> Option<&'a str> {
        let s = self.str(key)?;
        if s == expected {
            Some(s)
        } else {
            self.bad(key, &format!("is not {expected:?}"));
            None
        }
    }

    pub(super) fn one_of(&mut self, key: &str, allowed: &[&str]) -> Option<&'a str> {
        let s = self.str(key)?;
        if allowed.contains(&s) {
            Some(s)
        } else {
            self.bad(key, &format!("is not one of {}", allowed.join("|")));
            None
        }
    }

    pub(super) fn sha256(&mut self, key: &str) -> Option<&'a str> {
        self.checked(key, |s| is_hex(s, 64), "is not 64 lowercase hex characters")
    }

    pub(super) fn opt_sha256(&mut self, key: &str) -> Option<Option<&'a str>> {
        let v = self.opt_str(key)?;
        if v.is_some_and(|s| !is_hex(s, 64)) {
            self.bad(key, "is not 64 lowercase hex characters or null");
            return None;
        }
        Some(v)
    }

    pub(super) fn session_id(&mut self, key: &str) -> Option<&'a str> {
        self.checked(key, is_session_id, "is not 32 lowercase hex characters")
    }

    pub(super) fn time(&mut self, key: &str) -> Option<&'a str> {
        self.checked(key, is_utc_time, "is not an RFC 3339 UTC time ending in Z")
    }

    pub(super) fn uint(&mut self, key: &str, max: u64) -> Option<u64> {
        match self.get(key)?.as_u64() {
            Some(n) if n <= max => Some(n),
            _ => {
                self.bad(key, &format!("is not an integer in 0..={max}"));
                None
            }
        }
    }

    pub(super) fn opt_uint(&mut self, key: &str) -> Option<Option<u64>> {
        match self.get(key)? {
            Value::Null => Some(None),
            v => match v.as_u64() {
                Some(n) => Some(Some(n)),
                None => {
                    self.bad(key, "is not a non-negative integer or null");
                    None
                }
            },
        }
    }

    pub(super) fn opt_i32(&mut self, key: &str) -> Option<Option<i32>> {
        match self.get(key)? {
            Value::Null => Some(None),
            v => match v.as_i64().and_then(|n| i32::try_from(n).ok()) {
                Some(n) => Some(Some(n)),
                None => {
                    self.bad(key, "is not a 32-bit integer or null");
                    None
                }
            },
        }
    }

    pub(super) fn bool(&mut self, key: &str) -> Option<bool> {
        match self.get(key)? {
            Value::Bool(b) => Some(*b),
            _ => {
                self.bad(key, "is not a boolean");
                None
            }
        }
    }

    pub(super) fn opt_bool(&mut self, key: &str) -> Option<Option<bool>> {
        match self.get(key)? {
            Value::Bool(b) => Some(Some(*b)),
            Value::Null => Some(None),
            _ => {
                self.bad(key, "is not a boolean or null");
                None
            }
        }
    }

    pub(super) fn object(&mut self, key: &str) -> Option<&'a Map<String, Value>> {
        match self.get(key)? {
            Value::Object(m) => Some(m),
            _ => {
                self.bad(key, "is not an object");
                None
            }
        }
    }

    /// `non_claims`: an array of strings holding at least the four SPEC §4.3 entries.
    pub(super) fn non_claims(&mut self, key: &str) -> Option<()> {
        let Value::Array(items) = self.get(key)? else {
            self.bad(key, "is not an array");
            return None;
        };
        let strs: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
        if strs.len() != items.len() {
            self.bad(key, "holds a non-string");
            return None;
        }
        if let Some(missing) = crate::outcome::NON_CLAIMS
            .iter()
            .find(|c| !strs.contains(c))
        {
            self.bad(key, &format!("lacks {missing:?}"));
            return None;
        }
        Some(())
    }

    /// `producer`: `{name: "assay", version: string}`.
    pub(super) fn producer(&mut self, key: &str) -> Option<()> {
        let m = self.object(key)?;
        let what = format!("{} `{key}`", self.what);
        let mut p = Fields::new(what, m, self.r);
        p.equals("name", "assay");
        p.str("version");
        let ok = p.ok;
        if !ok {
            self.ok = false;
        }
        ok.then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_format() {
        for ok in [
            "2025-01-02T03:04:05Z",
            "2025-12-31T23:59:60.123456789Z",
            "2025-01-02T03:04:05.1Z",
        ] {
            assert!(is_utc_time(ok), "{ok}");
        }
        for bad in [
            "2025-01-02T03:04:05",
            "2025-01-02T03:04:05+00:00",
            "2025-13-02T03:04:05Z",
            "2025-01-02t03:04:05Z",
            "2025-01-02T03:04:05.Z",
            "2025-01-02T03:04:05.1234567890Z",
            "",
            "Z",
        ] {
            assert!(!is_utc_time(bad), "{bad}");
        }
    }
}
