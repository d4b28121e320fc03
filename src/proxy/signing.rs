//! Signing the capture at the end of a session (SPEC §4.5): the last file the session writes,
//! after the stop record, with the key read before spawn.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

use crate::attestation::{SessionClaims, SigningKey, sign_capture};
use crate::capture::LogFollower;
use crate::config::SessionPlan;
use crate::diag::Diag;
use crate::evidence::decision_log::{DecisionLog, LineTap};
use crate::outcome::{SignatureOutcome, WrapOutcome};

/// The signing key of a session, what its predicate carries besides the verdict, and the thread
/// following its decision log.
pub(super) struct Signer {
    key: SigningKey,
    policy_sha256: String,
    follow: Option<Follow>,
}

impl Signer {
    pub(super) fn new(key: SigningKey, policy_sha256: &str, follow: Option<Follow>) -> Self {
        Self {
            key,
            policy_sha256: policy_sha256.to_string(),
            follow,
        }
    }
}

/// The capture's decision log, followed by a thread of its own while the session writes it
/// (docs/decisions.md, "Signing reads the log as it is written"): the reader's pass over the log
/// is mostly done when the session stops.
/// Dropped unfinished (a session that ends without signing), it stops and joins the thread.
pub(super) struct Follow {
    halt: Arc<AtomicBool>,
    wake: SyncSender<()>,
    handle: Option<JoinHandle<LogFollower>>,
}

/// Wakes the follower when a line was written (it never waits: a wake already pending covers
/// this line too).
struct Nudge(SyncSender<()>);

impl LineTap for Nudge {
    fn offer(&self, _line: &[u8]) {
        let _ = self.0.try_send(());
    }
}

/// Starts following the capture's decision log (once the context is written: the lines are
/// checked against it), woken by `log` after each line it writes. `None` (the log is read whole
/// at stop) without a capture directory, a log in it, or a thread.
pub(super) fn follow(plan: &SessionPlan, log: Option<&mut DecisionLog>) -> Option<Follow> {
    let (dir, log) = (plan.capture_dir.as_ref()?, log?);
    let mut follower = LogFollower::start(dir)?;
    let (wake, woken) = sync_channel::<()>(1);
    let halt = Arc::new(AtomicBool::new(false));
    let halted = halt.clone();
    let handle = std::thread::Builder::new()
        .name("assay-log-follow".to_string())
        .spawn(move || {
            while woken.recv().is_ok() && !halted.load(Ordering::Acquire) {
                follower.step(&halted);
            }
            follower
        })
        .ok()?;
    log.add_tap(Box::new(Nudge(wake.clone())));
    Some(Follow {
        halt,
        wake,
        handle: Some(handle),
    })
}

impl Follow {
    /// Stops the thread (a read in progress ends at its chunk) and takes its follower.
    fn finish(mut self) -> Option<LogFollower> {
        self.halt();
        self.handle.take()?.join().ok()
    }

    fn halt(&self) {
        self.halt.store(true, Ordering::Release);
        // A wake already pending wakes the thread as well.
        let _ = self.wake.try_send(());
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            self.halt();
            let _ = handle.join();
        }
    }
}

/// SPEC §4.5: once the stop record (or a discovery-only run's marker) is written, the capture is
/// signed — the last file the session writes. A failure is a diagnostic, `signed: false` with
/// its reason, and an evidence error (exit status 3); the capture's verdict is unchanged.
pub(super) fn sign_at_stop(
    plan: &SessionPlan,
    signer: Signer,
    diag: &Diag,
    outcome: &mut WrapOutcome,
) {
    // The follower first: whatever happens next, its thread has ended.
    let follower = signer.follow.and_then(Follow::finish);
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
    match sign_capture(dir, &signer.key, &claims, follower) {
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
