//! The decision log writer and its accounting (SPEC §4.1).
//!
//! One `assay.tool.decision` event per evaluated `tools/call`, one NDJSON line each, written with a
//! single `write_all`. The writer counts what it observed: lines whose `write_all` returned `Ok`
//! (`written`), and, after the first failure, every emission it refused (`dropped`). The prefix
//! digest covers exactly the successfully written lines, so a reader can match it against the
//! complete-line prefix of the file. `seq` (assigned by the caller) advances on every emission, written or not.

use std::fs::File;
use std::io::{self, Write};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::event::{Envelope, TYPE_DECISION, hex};
use crate::policy::{Decision, ReasonCode};

/// Where decision lines go. A file in production; tests inject sinks that fail on demand.
pub(crate) trait DecisionSink: Send {
    /// Writes one whole line (one `write_all`).
    fn write_line(&mut self, line: &[u8]) -> io::Result<()>;
}

impl DecisionSink for File {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.write_all(line)
    }
}

/// The accounting of one writer, as recorded in the stop event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogAccounting {
    pub written: u64,
    pub dropped: u64,
    pub prefix_sha256: String,
    pub poisoned: bool,
}

/// One decision to record. Raw arguments never reach the log: only their digest.
pub(crate) struct DecisionEntry<'a> {
    pub tool: Option<&'a str>,
    pub tool_call_id: Option<&'a str>,
    pub decision: Decision,
    pub reason_code: ReasonCode,
    pub reason: &'a str,
    pub matched_rule: Option<&'a str>,
    pub arguments_sha256: Option<&'a str>,
}

#[derive(Serialize)]
struct DecisionData<'a> {
    session_id: &'a str,
    seq: u64,
    tool: Option<&'a str>,
    tool_call_id: Option<&'a str>,
    decision: Decision,
    reason_code: ReasonCode,
    reason: &'a str,
    matched_rule: Option<&'a str>,
    enforced: bool,
    policy_sha256: &'a str,
    arguments_sha256: Option<&'a str>,
}

/// The outcome of one emission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Emitted {
    Written,
    /// This emission failed (the writer is now poisoned).
    Failed,
    /// Refused because an earlier write failed.
    Refused,
}

/// The decision log writer.
pub(crate) struct DecisionLog {
    sink: Box<dyn DecisionSink>,
    session_id: String,
    source: String,
    policy_sha256: String,
    enforced: bool,
    written: u64,
    dropped: u64,
    poisoned: bool,
    hasher: Sha256,
    id_buf: String,
}

impl DecisionLog {
    pub(crate) fn new(
        sink: Box<dyn DecisionSink>,
        session_id: &str,
        source: &str,
        policy_sha256: &str,
        enforced: bool,
    ) -> Self {
        Self {
            sink,
            session_id: session_id.to_string(),
            source: source.to_string(),
            policy_sha256: policy_sha256.to_string(),
            enforced,
            written: 0,
            dropped: 0,
            poisoned: false,
            hasher: Sha256::new(),
            id_buf: String::new(),
        }
    }

    /// Serializes and writes one decision event; updates the accounting.
    /// Emits decision `seq` (the caller numbers every emission, written or not).
    pub(crate) fn emit(
        &mut self,
        seq: u64,
        entry: &DecisionEntry<'_>,
    ) -> (Emitted, Option<io::Error>) {
        if self.poisoned {
            self.dropped += 1;
            return (Emitted::Refused, None);
        }
        use std::fmt::Write as _;
        self.id_buf.clear();
        // Writing into a String cannot fail.
        let _ = write!(self.id_buf, "evt_decision_{}_{seq}", self.session_id);
        let time = super::event::now_rfc3339();
        let event = Envelope::new(
            &self.id_buf,
            TYPE_DECISION,
            &self.source,
            &time,
            DecisionData {
                session_id: &self.session_id,
                seq,
                tool: entry.tool,
                tool_call_id: entry.tool_call_id,
                decision: entry.decision,
                reason_code: entry.reason_code,
                reason: entry.reason,
                matched_rule: entry.matched_rule,
                enforced: self.enforced,
                policy_sha256: &self.policy_sha256,
                arguments_sha256: entry.arguments_sha256,
            },
        );
        let result = match event.to_line() {
            Ok(line) => self.sink.write_line(&line).map(|()| line),
            Err(e) => Err(io::Error::other(e.to_string())),
        };
        match result {
            Ok(line) => {
                self.written += 1;
                self.hasher.update(&line);
                (Emitted::Written, None)
            }
            Err(e) => {
                self.poisoned = true;
                self.dropped += 1;
                (Emitted::Failed, Some(e))
            }
        }
    }

    pub(crate) fn accounting(&self) -> LogAccounting {
        LogAccounting {
            written: self.written,
            dropped: self.dropped,
            prefix_sha256: hex(&self.hasher.clone().finalize()),
            poisoned: self.poisoned,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A sink that keeps what it was given and fails its Nth write after writing half the line,
    /// the way a full disk leaves a partial tail.
    struct FailingSink {
        out: Arc<Mutex<Vec<u8>>>,
        calls: usize,
        fail_on: usize,
    }

    impl DecisionSink for FailingSink {
        fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
            self.calls += 1;
            let mut out = self.out.lock().unwrap();
            if self.calls == self.fail_on {
                out.extend_from_slice(&line[..line.len() / 2]);
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            out.extend_from_slice(line);
            Ok(())
        }
    }

    fn entry() -> DecisionEntry<'static> {
        DecisionEntry {
            tool: Some("read_file"),
            tool_call_id: Some("1"),
            decision: Decision::Allow,
            reason_code: ReasonCode::P_POLICY_ALLOW,
            reason: "allowed",
            matched_rule: Some("allow:*"),
            arguments_sha256: None,
        }
    }

    #[test]
    fn poisoned_writer_counts_and_digest_cover_only_complete_lines() {
        let out = Arc::new(Mutex::new(Vec::new()));
        let sink = FailingSink {
            out: out.clone(),
            calls: 0,
            fail_on: 3,
        };
        let mut log = DecisionLog::new(
            Box::new(sink),
            "0123456789abcdef0123456789abcdef",
            "assay://test",
            "00",
            true,
        );
        let results: Vec<Emitted> = (0..5).map(|seq| log.emit(seq, &entry()).0).collect();
        assert_eq!(
            results,
            [
                Emitted::Written,
                Emitted::Written,
                Emitted::Failed,
                Emitted::Refused,
                Emitted::Refused
            ]
        );
        let acc = log.accounting();
        assert_eq!(acc.written, 2);
        assert_eq!(acc.dropped, 3);
        assert!(acc.poisoned);
        let bytes = out.lock().unwrap().clone();
        // The file holds two complete lines plus a partial tail; the digest covers the two lines.
        let complete_end = bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1)
            .nth(1)
            .unwrap();
        assert!(bytes.len() > complete_end, "partial tail present");
        assert_eq!(
            acc.prefix_sha256,
            super::super::event::sha256_hex(&bytes[..complete_end])
        );
        // seq is contiguous over written and failed emissions.
        let first: serde_json::Value =
            serde_json::from_slice(bytes.split(|b| *b == b'\n').nth(1).unwrap()).unwrap();
        assert_eq!(first["data"]["seq"], 1);
        assert_eq!(
            first["id"],
            "evt_decision_0123456789abcdef0123456789abcdef_1"
        );
        assert!(first["data"].get("arguments").is_none());
    }

    /// A sink that fails its `fail_at`-th write (0-based) after writing `partial` bytes of it,
    /// the way `write_all` leaves a short write behind when the disk fills.
    struct PartialSink {
        out: Arc<Mutex<Vec<u8>>>,
        calls: usize,
        fail_at: usize,
        partial: prop::sample::Index,
    }

    impl DecisionSink for PartialSink {
        fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
            let call = self.calls;
            self.calls += 1;
            let mut out = self.out.lock().unwrap();
            if call == self.fail_at {
                // A failed `write_all` wrote strictly less than the whole line.
                out.extend_from_slice(&line[..self.partial.index(line.len())]);
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            out.extend_from_slice(line);
            Ok(())
        }
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, .. ProptestConfig::default() })]

        /// SPEC §4.1: whatever write fails and however much of it reached the disk, the
        /// accounting describes exactly the complete lines on disk: `written` is their count,
        /// `decision_prefix_sha256` their SHA-256, and every other emission is `dropped`.
        #[test]
        fn prefix_digest_matches_the_complete_lines_on_disk(
            emissions in 0usize..12,
            fail_at in 0usize..14,
            partial in any::<prop::sample::Index>(),
            tools in prop::collection::vec(prop::option::of("[a-z_\"\\\\é\u{1F600}]{0,12}"), 12),
        ) {
            let out = Arc::new(Mutex::new(Vec::new()));
            let sink = PartialSink { out: out.clone(), calls: 0, fail_at, partial };
            let mut log = DecisionLog::new(
                Box::new(sink),
                "0123456789abcdef0123456789abcdef",
                "assay://test",
                "00",
                true,
            );
            for (seq, tool) in tools.iter().take(emissions).enumerate() {
                let mut e = entry();
                e.tool = tool.as_deref();
                log.emit(seq as u64, &e);
            }
            let acc = log.accounting();
            let bytes = out.lock().unwrap().clone();
            let complete_end = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            let complete_lines = bytes[..complete_end].iter().filter(|b| **b == b'\n').count();
            prop_assert_eq!(acc.written as usize, complete_lines);
            prop_assert_eq!(acc.written + acc.dropped, emissions as u64);
            prop_assert_eq!(acc.poisoned, fail_at < emissions);
            prop_assert_eq!(
                &acc.prefix_sha256,
                &super::super::event::sha256_hex(&bytes[..complete_end])
            );
            // Each complete line is one decision event, in seq order.
            for (i, line) in bytes[..complete_end].split(|b| *b == b'\n').take(complete_lines).enumerate() {
                let v: serde_json::Value = serde_json::from_slice(line).unwrap();
                prop_assert_eq!(&v["data"]["seq"], &serde_json::json!(i));
            }
        }
    }
}
