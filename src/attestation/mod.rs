//! Signed captures (SPEC §4.5): the producer vouches for a capture with an Ed25519 signature
//! that third parties verify without this code — a DSSE envelope (`attestation.dsse.json`)
//! over an in-toto Statement v1 whose subjects are every other file of the capture and whose
//! predicate ([`PREDICATE_TYPE`]) carries the session id, the reader's verdict at signing time,
//! the policy digest and the producer. The format is in docs/evidence/attestation.md.
//!
//! - `key.rs`: the keys ([`SigningKey`], [`PublicKey`]), their files and key id, `assay keygen`
//!   ([`generate_key_pair`]);
//! - `subjects.rs`: the capture's files listed and hashed, the same way for signer and verifier;
//! - `envelope.rs`: DSSE (PAE, the envelope written and read strictly);
//! - `statement.rs`: the in-toto Statement and the predicate;
//! - `sign.rs`: signing at stop (called by the session after its stop record);
//! - `verify.rs`: [`verify_capture`] (`assay capture verify`).
#![forbid(unsafe_code)]

mod envelope;
mod key;
mod sign;
mod statement;
mod subjects;
mod verify;

pub use envelope::PAYLOAD_TYPE;
pub use key::{KeyError, KeyPairFiles, PublicKey, SigningKey, generate_key_pair};
pub use sign::SignError;
pub(crate) use sign::{SessionClaims, sign_capture};
pub use statement::{
    PREDICATE_TYPE, Predicate, STATEMENT_TYPE, SignedProducer, SignedReason, SignedVerdict,
};
pub use subjects::{MAX_SUBJECT_BYTES, MAX_SUBJECTS, Subject, SubjectError};
pub use verify::{Mismatch, Unverified, Verified, verify_capture};

#[cfg(test)]
mod tests;
