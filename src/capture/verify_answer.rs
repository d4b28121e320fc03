//! `assay capture verify-answer` (SPEC §5.3): is a transcript's message the answer a capture
//! recorded for a request? The file's bytes (one trailing `\n` or `\r\n` excluded: a line of a
//! transcript) are hashed as they are read, never held whole, and compared with the `sha256` of
//! the `assay.mcp.result` lines whose `request_id` is the given id — compared as JSON values of
//! the same type: `"0"` (a string) and `0` (a number) are different requests.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::judgement::ClosureKind;
use super::rows::LogLine;
use super::show::show_capture;
use super::show_result::ResultRow;
use crate::input_file::{self as bounded, BoundedError, FinalLink};

/// The largest answer file read (a transcript line is at most the wrapper's line bound, 16 MiB
/// by default; this leaves room for a raised bound).
pub const MAX_ANSWER_FILE_BYTES: u64 = 1 << 30;

/// What [`verify_answer`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerCheck {
    /// The result event whose digest the file's bytes have, if one does.
    pub matched: Option<ResultRow>,
    /// Every result event recorded for the request id (the answers the capture knows of it).
    pub recorded: Vec<ResultRow>,
    /// SHA-256 of the file's bytes as compared.
    pub sha256: String,
    /// The capture's verdict: rows of an `unknown` capture are read, not vouched for.
    pub closure: ClosureKind,
}

/// The request id as given on the command line: JSON text (`0`, `"0"`), or, when it is not JSON,
/// the string it spells (`abc` is `"abc"`). `None` for JSON that is no id (not a string or number).
pub fn request_id_value(given: &str) -> Option<Value> {
    match serde_json::from_str::<Value>(given) {
        Ok(v) if v.is_string() || v.is_number() => Some(v),
        Ok(_) => None,
        Err(_) => Some(Value::String(given.to_owned())),
    }
}

/// SHA-256 of the bytes of `path` without one trailing `\n` or `\r\n`, streamed.
fn file_digest(path: &Path) -> Result<String, BoundedError> {
    let (file, _) = bounded::open_regular(path, FinalLink::Follow, MAX_ANSWER_FILE_BYTES)?;
    let mut reader = file.take(MAX_ANSWER_FILE_BYTES + 1);
    let mut h = crate::sha256::Sha256::new();
    // The last two bytes are held back until more follows: they may be the terminator.
    let mut held: Vec<u8> = Vec::with_capacity(2);
    let mut buf = vec![0u8; 64 * 1024];
    let mut total: u64 = 0;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(BoundedError::Io(e)),
        };
        total += n as u64;
        if total > MAX_ANSWER_FILE_BYTES {
            return Err(BoundedError::TooLarge { seen: total });
        }
        held.extend_from_slice(buf.get(..n).unwrap_or_default());
        let keep = held.len().saturating_sub(2);
        h.update(held.get(..keep).unwrap_or_default());
        held.drain(..keep);
    }
    let tail: &[u8] = match held.as_slice() {
        [rest @ .., b'\r', b'\n'] => rest,
        [rest @ .., b'\n'] => rest,
        all => all,
    };
    h.update(tail);
    Ok(h.finalize_hex())
}

/// Whether the bytes of `file` are the answer `dir` recorded for the request `request_id`.
///
/// # Errors
/// The answer file cannot be read (missing, not a regular file, over
/// [`MAX_ANSWER_FILE_BYTES`]): the message says which and why.
pub fn verify_answer(
    dir: &Path,
    request_id: &Value,
    file: &Path,
) -> Result<AnswerCheck, std::io::Error> {
    let sha256 = file_digest(file).map_err(|e| e.into_io(MAX_ANSWER_FILE_BYTES))?;
    let report = show_capture(dir);
    let recorded: Vec<ResultRow> = report
        .decisions
        .lines
        .into_iter()
        .filter_map(|l| match l {
            LogLine::Result(row) => Some(row),
            _ => None,
        })
        .filter(|row| {
            serde_json::from_str::<Value>(&row.request_id).ok().as_ref() == Some(request_id)
        })
        .collect();
    let matched = recorded.iter().find(|r| r.sha256 == sha256).cloned();
    Ok(AnswerCheck {
        matched,
        recorded,
        sha256,
        closure: report.closure.closure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_json_values_and_other_text_is_a_string() {
        assert_eq!(request_id_value("0"), Some(Value::from(0)));
        assert_eq!(request_id_value("\"0\""), Some(Value::from("0")));
        assert_eq!(request_id_value("abc"), Some(Value::from("abc")));
        assert_eq!(request_id_value("null"), None);
        assert_eq!(request_id_value("[1]"), None);
    }

    #[test]
    fn the_digest_leaves_out_one_terminator() {
        let dir = tempfile::tempdir().unwrap();
        let digest = |bytes: &[u8]| {
            let p = dir.path().join("a");
            std::fs::write(&p, bytes).unwrap();
            file_digest(&p).unwrap()
        };
        let want = crate::sha256::digest_hex(b"{\"id\":1}");
        assert_eq!(digest(b"{\"id\":1}"), want);
        assert_eq!(digest(b"{\"id\":1}\n"), want);
        assert_eq!(digest(b"{\"id\":1}\r\n"), want);
        assert_ne!(digest(b"{\"id\":1}\n\n"), want);
        let big = vec![b'x'; 200_000];
        assert_eq!(
            digest(&[big.as_slice(), b"\n"].concat()),
            crate::sha256::digest_hex(&big)
        );
    }
}
