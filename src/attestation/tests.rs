//! Signing and verification against hostile captures and envelopes: every single-byte change
//! of an attestation, envelopes signed over hostile payloads (duplicate and escaped keys, path
//! names, too many subjects), and capture entries that are not regular files.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::envelope::Envelope;
use super::*;
use crate::capture_files::ATTESTATION;

fn key(dir: &Path) -> (SigningKey, PublicKey) {
    let files = generate_key_pair(&dir.join("k")).unwrap();
    (
        SigningKey::load(&files.private).unwrap(),
        PublicKey::load(&files.public).unwrap(),
    )
}

fn claims() -> SessionClaims<'static> {
    SessionClaims {
        session_id: "0123456789abcdef0123456789abcdef",
        policy_sha256: "ab",
    }
}

/// A directory with two files, signed.
fn signed_dir(dir: &Path, key: &SigningKey) -> std::path::PathBuf {
    let cap = dir.join("cap");
    std::fs::create_dir(&cap).unwrap();
    std::fs::write(cap.join("a.json"), b"{}").unwrap();
    std::fs::write(cap.join("b.log"), b"line\n").unwrap();
    sign_capture(&cap, key, &claims(), None).unwrap();
    cap
}

fn mismatches(cap: &Path, keys: &[PublicKey]) -> Vec<Mismatch> {
    verify_capture(cap, keys).unwrap_err().0
}

#[test]
fn a_signed_directory_verifies_and_the_attestation_is_new_and_0600() {
    let d = tempfile::tempdir().unwrap();
    let (sk, pk) = key(d.path());
    let cap = signed_dir(d.path(), &sk);
    let meta = std::fs::metadata(cap.join(ATTESTATION)).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let v = verify_capture(&cap, std::slice::from_ref(&pk)).unwrap();
    assert_eq!(v.keyid, pk.keyid());
    let names: Vec<&str> = v.subjects.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a.json", "b.log"]);
    assert_eq!(v.predicate.session_id, claims().session_id);
    assert_eq!(v.predicate.verdict.closure, "unknown");
    assert_eq!(v.predicate.verdict.closure, v.closure.closure.as_str());
    // Signed once: a second signature never replaces the first.
    let e = sign_capture(&cap, &sk, &claims(), None).unwrap_err();
    assert!(matches!(e, SignError::Write { .. }), "{e}");
}

#[test]
fn every_single_byte_change_of_the_attestation_fails() {
    let d = tempfile::tempdir().unwrap();
    let (sk, pk) = key(d.path());
    let cap = signed_dir(d.path(), &sk);
    let path = cap.join(ATTESTATION);
    let good = std::fs::read(&path).unwrap();
    let keys = [pk];
    // The final newline is whitespace around the JSON text, not part of what is signed.
    for at in 0..good.len() - 1 {
        let mut bad = good.clone();
        bad[at] ^= 0x01;
        std::fs::write(&path, &bad).unwrap();
        assert!(
            verify_capture(&cap, &keys).is_err(),
            "byte {at}: {}",
            String::from_utf8_lossy(&bad)
        );
    }
    std::fs::write(&path, &good).unwrap();
    verify_capture(&cap, &keys).unwrap();
}

/// Writes an envelope of `payload`, properly signed, as the capture's attestation.
fn forge(cap: &Path, sk: &SigningKey, payload: &str) {
    let envelope = Envelope::seal(payload.as_bytes(), sk.keyid(), |m| sk.sign(m));
    std::fs::write(
        cap.join(ATTESTATION),
        serde_json::to_vec(&envelope).unwrap(),
    )
    .unwrap();
}

#[test]
fn hostile_statements_under_a_valid_signature_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let (sk, pk) = key(d.path());
    let cap = signed_dir(d.path(), &sk);
    let envelope: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cap.join(ATTESTATION)).unwrap()).unwrap();
    use base64::Engine as _;
    let payload = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(envelope["payload"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    let digest_a = crate::sha256::digest_hex(b"{}");
    let many: Vec<String> = (0..65)
        .map(|i| format!(r#"{{"name":"f{i}","digest":{{"sha256":"{digest_a}"}}}}"#))
        .collect();
    let cases = [
        payload.replacen(r#""_type""#, r#""\u005ftype":"x","_type""#, 1),
        payload.replacen(r#""predicate":{"#, r#""predicate":{"session_id":"x","#, 1),
        payload.replacen(r#""name":"a.json""#, r#""name":"../a.json""#, 1),
        payload.replacen(r#""name":"a.json""#, r#""name":"b.log""#, 1),
        payload.replacen(r#""name":"a.json""#, r#""name":"sub/a.json""#, 1),
        payload.replacen(r#""name":"a.json""#, r#""name":"attestation.dsse.json""#, 1),
        payload.replacen(
            r#""subject":["#,
            &format!(r#""subject":[{},"#, many.join(",")),
            1,
        ),
        payload.replacen(
            "https://assay-stop.dev/capture/v1",
            "https://slsa.dev/provenance/v1",
            1,
        ),
        payload.replacen(r#""sha256""#, r#""SHA256""#, 1),
        "[".repeat(40) + &"]".repeat(40),
        "not json".to_string(),
    ];
    for bad in cases {
        forge(&cap, &sk, &bad);
        let m = mismatches(&cap, std::slice::from_ref(&pk));
        assert!(
            matches!(m.as_slice(), [Mismatch::Attestation(_)]),
            "{bad}: {m:?}"
        );
    }
    // The untouched payload, re-signed, still verifies: the refusals above are the payloads'.
    forge(&cap, &sk, &payload);
    verify_capture(&cap, &[pk]).unwrap();
}

#[test]
fn entries_that_are_not_regular_files_are_never_followed_or_waited_on() {
    let d = tempfile::tempdir().unwrap();
    let (sk, pk) = key(d.path());
    // Signing a capture holding a FIFO or a symlink fails, at once.
    for kind in ["fifo", "symlink", "dir"] {
        let cap = d.path().join(format!("c-{kind}"));
        std::fs::create_dir(&cap).unwrap();
        std::fs::write(cap.join("a.json"), b"{}").unwrap();
        let odd = cap.join("odd");
        match kind {
            "fifo" => nix::unistd::mkfifo(&odd, nix::sys::stat::Mode::S_IRWXU).unwrap(),
            "symlink" => std::os::unix::fs::symlink(cap.join("a.json"), &odd).unwrap(),
            _ => std::fs::create_dir(&odd).unwrap(),
        }
        let e = sign_capture(&cap, &sk, &claims(), None).unwrap_err();
        assert!(e.to_string().contains("odd: is not a regular file"), "{e}");
        assert!(!cap.join(ATTESTATION).exists());
    }
    // A signed file replaced by a symlink to itself is unreadable, not followed.
    let cap = signed_dir(d.path(), &sk);
    let moved = d.path().join("moved");
    std::fs::rename(cap.join("a.json"), &moved).unwrap();
    std::os::unix::fs::symlink(&moved, cap.join("a.json")).unwrap();
    let m = mismatches(&cap, std::slice::from_ref(&pk));
    assert!(
        matches!(m.as_slice(), [Mismatch::Unreadable { name, .. }] if name == "a.json"),
        "{m:?}"
    );
    // An attestation that is a symlink to a good one is refused.
    let cap2 = d.path().join("cap2");
    std::fs::create_dir(&cap2).unwrap();
    std::fs::copy(&moved, cap2.join("a.json")).unwrap();
    std::fs::copy(cap.join("b.log"), cap2.join("b.log")).unwrap();
    std::os::unix::fs::symlink(cap.join(ATTESTATION), cap2.join(ATTESTATION)).unwrap();
    let m = mismatches(&cap2, &[pk]);
    assert!(
        matches!(m.as_slice(), [Mismatch::Attestation(why)] if why.contains("not a regular file")),
        "{m:?}"
    );
}

#[test]
fn a_capture_with_too_many_files_is_not_signed() {
    let d = tempfile::tempdir().unwrap();
    let (sk, _) = key(d.path());
    let cap = d.path().join("cap");
    std::fs::create_dir(&cap).unwrap();
    for i in 0..=MAX_SUBJECTS {
        std::fs::write(cap.join(format!("f{i}")), b"").unwrap();
    }
    let e = sign_capture(&cap, &sk, &claims(), None).unwrap_err();
    assert!(e.to_string().contains("more than 64 files"), "{e}");
}

mod properties {
    use proptest::prelude::*;

    use super::super::envelope::Envelope;
    use super::super::statement::Statement;

    /// JSON-ish bytes: the characters envelopes and statements are made of, so the readers get
    /// past the first byte often.
    fn jsonish() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![
                Just(b'{'),
                Just(b'}'),
                Just(b'['),
                Just(b']'),
                Just(b'"'),
                Just(b':'),
                Just(b','),
                Just(b'\\'),
                any::<u8>()
            ],
            0..256,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

        /// Hostile bytes never panic the envelope or statement readers, and what the envelope
        /// reader accepts is strict JSON.
        #[test]
        fn readers_never_panic(bytes in jsonish()) {
            if Envelope::open(&bytes).is_ok() {
                prop_assert!(crate::strict_json::scan(&bytes, 8).is_ok());
            }
            let _ = Statement::read(&bytes);
        }
    }
}
