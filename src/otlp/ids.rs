//! Trace and span ids of the OpenTelemetry mapping, derived from the session id and `seq`
//! alone (SHA-256, truncated), so exporting the same capture twice, or exporting a capture
//! whose session also sent its spans live, yields the same ids: a backend sees one trace.

use crate::sha256::{digest, hex};

/// Domain prefixes, so a trace id and a span id are never the same bytes by construction.
const TRACE: &[u8] = b"assay.otlp.trace\0";
const SPAN: &[u8] = b"assay.otlp.span\0";

/// The first `N` bytes of SHA-256(`parts`), never all zero (an all-zero id is invalid in OTLP).
fn truncated<const N: usize>(parts: &[&[u8]]) -> [u8; N] {
    let whole: Vec<u8> = parts.concat();
    let d = digest(&whole);
    let mut id = [0u8; N];
    id.copy_from_slice(&d[..N]);
    if id.iter().all(|&b| b == 0) {
        id[N - 1] = 1;
    }
    id
}

/// The session's trace id: 32 lowercase hex digits.
pub(crate) fn trace_id(session_id: &str) -> String {
    hex(&truncated::<16>(&[TRACE, session_id.as_bytes()]))
}

/// The session span's id: 16 lowercase hex digits.
pub(crate) fn session_span_id(session_id: &str) -> String {
    hex(&truncated::<8>(&[
        SPAN,
        session_id.as_bytes(),
        b"\0session",
    ]))
}

/// The span id of the event `seq` of the session: 16 lowercase hex digits.
pub(crate) fn event_span_id(session_id: &str, seq: u64) -> String {
    hex(&truncated::<8>(&[
        SPAN,
        session_id.as_bytes(),
        b"\0",
        seq.to_string().as_bytes(),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_fixed_by_session_and_seq() {
        let s = "22748cdfe39ef10cae313b386db8f3ee";
        assert_eq!(trace_id(s).len(), 32);
        assert_eq!(session_span_id(s).len(), 16);
        assert_eq!(trace_id(s), trace_id(s));
        assert_eq!(event_span_id(s, 1), event_span_id(s, 1));
        assert_ne!(event_span_id(s, 1), event_span_id(s, 2));
        assert_ne!(event_span_id(s, 1), session_span_id(s));
        assert_ne!(trace_id(s), trace_id("ffffffffffffffffffffffffffffffff"));
        // Pinned: a change of the derivation changes every exported id (docs/export.md).
        let want = {
            let mut v = b"assay.otlp.trace\0".to_vec();
            v.extend_from_slice(s.as_bytes());
            hex(&digest(&v)[..16])
        };
        assert_eq!(trace_id(s), want);
    }
}
