//! The in-toto Statement v1 a capture's envelope carries
//! (<https://github.com/in-toto/attestation/blob/main/spec/v1/statement.md>): the capture's files
//! as subjects and the producer's claims about the session as the predicate
//! ([`PREDICATE_TYPE`], docs/evidence/attestation.md).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::subjects::{MAX_SUBJECTS, Subject, is_plain_name};

/// The Statement's `_type`.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";

/// The predicate type of a signed capture: the claims of [`Predicate`].
pub const PREDICATE_TYPE: &str = "https://assay-stop.dev/capture/v1";

/// Deepest nesting of a statement (it has five levels).
const MAX_STATEMENT_DEPTH: usize = 8;

/// The statement as written and read (unknown members refused).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Statement {
    #[serde(rename = "_type")]
    pub statement_type: String,
    pub subject: Vec<StatementSubject>,
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    pub predicate: Predicate,
}

/// A subject: a file name and its digest set (SHA-256 only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StatementSubject {
    pub name: String,
    pub digest: DigestSet,
}

/// The digest set of a subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DigestSet {
    pub sha256: String,
}

/// What the producer vouches for about the session (predicate type [`PREDICATE_TYPE`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Predicate {
    /// The session id (32 lowercase hex digits).
    pub session_id: String,
    /// The verdict the reader (SPEC §7) gave the capture when it was signed.
    pub verdict: SignedVerdict,
    /// SHA-256 of the policy file the session enforced.
    pub policy_sha256: String,
    /// The program that wrote and signed the capture.
    pub producer: SignedProducer,
}

/// The verdict part of a [`Predicate`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SignedVerdict {
    /// `closed`, `incomplete` or `unknown`.
    pub closure: String,
    /// The reasons behind it (empty for `closed`).
    pub reasons: Vec<SignedReason>,
}

/// One reason of a [`SignedVerdict`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SignedReason {
    /// The reason code (SPEC §7).
    pub code: String,
    /// Its one-line description.
    pub detail: String,
}

/// The producer of a [`Predicate`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SignedProducer {
    /// Always `assay`.
    pub name: String,
    /// Its version.
    pub version: String,
}

impl Statement {
    /// The statement over `subjects` with `predicate`.
    pub(crate) fn new(subjects: &[Subject], predicate: Predicate) -> Self {
        Statement {
            statement_type: STATEMENT_TYPE.to_string(),
            subject: subjects
                .iter()
                .map(|s| StatementSubject {
                    name: s.name.clone(),
                    digest: DigestSet {
                        sha256: s.sha256.clone(),
                    },
                })
                .collect(),
            predicate_type: PREDICATE_TYPE.to_string(),
            predicate,
        }
    }

    /// Reads a payload strictly: strict JSON (duplicate keys refused), exactly the members
    /// written, the Statement v1 type and this predicate type, 1 to [`MAX_SUBJECTS`] subjects
    /// with distinct plain file names and lowercase hex SHA-256 digests.
    pub(crate) fn read(payload: &[u8]) -> Result<(Vec<Subject>, Predicate), String> {
        crate::strict_json::scan(payload, MAX_STATEMENT_DEPTH)
            .map_err(|e| format!("the payload is not strict JSON: {e}"))?;
        let s: Statement = serde_json::from_slice(payload)
            .map_err(|e| format!("the payload is not this in-toto Statement: {e}"))?;
        if s.statement_type != STATEMENT_TYPE {
            return Err(format!(
                "the statement's _type is {:?}, not {STATEMENT_TYPE:?}",
                crate::text::render(&s.statement_type)
            ));
        }
        if s.predicate_type != PREDICATE_TYPE {
            return Err(format!(
                "the predicateType is {:?}, not {PREDICATE_TYPE:?}",
                crate::text::render(&s.predicate_type)
            ));
        }
        if s.subject.is_empty() || s.subject.len() > MAX_SUBJECTS {
            return Err(format!(
                "the statement names {} subjects (1 to {MAX_SUBJECTS})",
                s.subject.len()
            ));
        }
        let mut seen = BTreeSet::new();
        let mut subjects = Vec::with_capacity(s.subject.len());
        for subject in s.subject {
            let name = crate::text::render(&subject.name);
            if !is_plain_name(&subject.name) || subject.name == crate::capture_files::ATTESTATION {
                return Err(format!("subject {name:?} is not a file of the capture"));
            }
            if !seen.insert(subject.name.clone()) {
                return Err(format!("subject {name:?} is named twice"));
            }
            let hex = &subject.digest.sha256;
            if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                return Err(format!(
                    "subject {name:?}: its sha256 is not 64 lowercase hex digits"
                ));
            }
            subjects.push(Subject {
                name: subject.name,
                sha256: subject.digest.sha256,
            });
        }
        Ok((subjects, s.predicate))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn predicate() -> Predicate {
        Predicate {
            session_id: "0".repeat(32),
            verdict: SignedVerdict {
                closure: "closed".into(),
                reasons: vec![],
            },
            policy_sha256: "a".repeat(64),
            producer: SignedProducer {
                name: "assay".into(),
                version: "0".into(),
            },
        }
    }

    #[test]
    fn reads_what_it_writes_and_refuses_the_rest() {
        let subjects = vec![Subject {
            name: "protocol.json".into(),
            sha256: "b".repeat(64),
        }];
        let text = serde_json::to_string(&Statement::new(&subjects, predicate())).unwrap();
        let (s, p) = Statement::read(text.as_bytes()).unwrap();
        assert_eq!(s, subjects);
        assert_eq!(p, predicate());
        let b64 = "b".repeat(64);
        let bad = [
            text.replace(STATEMENT_TYPE, "https://in-toto.io/Statement/v0.1"),
            text.replace(PREDICATE_TYPE, "https://slsa.dev/provenance/v1"),
            text.replace("protocol.json", "../protocol.json"),
            text.replace("protocol.json", "attestation.dsse.json"),
            text.replace("protocol.json", ""),
            text.replace(&b64, &"B".repeat(64)),
            text.replace(&b64, &"b".repeat(63)),
            text.replace(r#""subject":["#, r#""subject":[{"name":"protocol.json","digest":{"sha256":"0000000000000000000000000000000000000000000000000000000000000000"}},"#),
            text.replace(r#""sha256":"b"#, r#""sha512":"b"#),
            text.replace(r#""_type""#, r#""extra":1,"_type""#),
            text.replace(r#""session_id""#, r#""session_id":"x","session_id""#),
            text.replace(r#""session_id""#, r#""s\u0065ssion_id":"x","session_id""#),
            text.replace(r#""policy_sha256""#, r#""extra":1,"policy_sha256""#),
        ];
        for b in bad {
            assert!(Statement::read(b.as_bytes()).is_err(), "{b}");
        }
        let none = text.replace(
            &serde_json::to_string(&Statement::new(&subjects, predicate()).subject).unwrap(),
            "[]",
        );
        assert!(Statement::read(none.as_bytes()).is_err(), "{none}");
    }
}
