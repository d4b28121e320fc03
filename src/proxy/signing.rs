//! Signing the capture at the end of a session (SPEC §4.5): the last file the session writes,
//! after the stop record, with the key read before spawn.

use crate::attestation::{SessionClaims, SigningKey, sign_capture};
use crate::config::SessionPlan;
use crate::diag::Diag;
use crate::outcome::{SignatureOutcome, WrapOutcome};

/// The signing key of a session and what its predicate carries besides the verdict.
pub(super) struct Signer {
    key: SigningKey,
    policy_sha256: String,
}

impl Signer {
    pub(super) fn new(key: SigningKey, policy_sha256: &str) -> Self {
        Self {
            key,
            policy_sha256: policy_sha256.to_string(),
        }
    }
}

/// SPEC §4.5: once the stop record (or a discovery-only run's marker) is written, the capture is
/// signed — the last file the session writes. A failure is a diagnostic, `signed: false` with
/// its reason, and an evidence error (exit status 3); the capture's verdict is unchanged.
pub(super) fn sign_at_stop(
    plan: &SessionPlan,
    signer: &Signer,
    diag: &Diag,
    outcome: &mut WrapOutcome,
) {
    let Some(dir) = &plan.capture_dir else {
        return;
    };
    let keyid = signer.key.keyid().to_string();
    if !outcome.stop_written && outcome.paths.no_session.is_none() {
        // The failed stop write is the error already; there is nothing to vouch for.
        outcome.signature = Some(SignatureOutcome {
            signed: false,
            keyid,
            error: Some("not signed: the stop record was not written".to_string()),
        });
        return;
    }
    let claims = SessionClaims {
        session_id: &outcome.session_id,
        policy_sha256: &signer.policy_sha256,
    };
    match sign_capture(dir, &signer.key, &claims) {
        Ok(path) => {
            outcome.paths.attestation = Some(path);
            outcome.signature = Some(SignatureOutcome {
                signed: true,
                keyid,
                error: None,
            });
        }
        Err(e) => {
            let msg = format!("capture not signed: {e}");
            diag.say(&msg);
            outcome.evidence_errors.push(msg.clone());
            outcome.signature = Some(SignatureOutcome {
                signed: false,
                keyid,
                error: Some(msg),
            });
        }
    }
}

/// Reads the signing key at `path` (SPEC §4.5) as a configuration error on the `sign_key`
/// option: a missing or unreadable file, a mode that lets others read or write it, or bytes
/// that are not an Ed25519 private key. Read when the session is prepared, before anything is
/// created or spawned.
pub(super) fn load_sign_key(path: &std::path::Path) -> crate::error::Result<SigningKey> {
    SigningKey::load(path).map_err(|e| {
        crate::error::Error::config(crate::error::ConfigOption::SignKey, e.to_string())
    })
}
