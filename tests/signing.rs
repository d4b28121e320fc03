//! Signed captures (SPEC §4.5) through the real binary and real sessions: `assay keygen`,
//! `assay mcp wrap --sign-key`, `assay capture verify` and `assay capture package`. Every
//! tampering — a byte of the log, a stop record swapped in from another capture, a file added,
//! a file removed, another key, an attestation copied from another capture, an envelope read
//! leniently — is exit 4 naming what failed; a capture that verifies is exit 0 when closed and 1
//! when not; keys others may read are refused before anything runs. (Third-party verification of
//! the same captures with securesystemslib and in-toto-attestation: python/tests/test_signing.py.)

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::util::*;

const ATTESTATION: &str = "attestation.dsse.json";

fn keygen(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let key = dir.join(name);
    let r = run(
        &["keygen".into(), "--out".into(), key.display().to_string()],
        b"",
    );
    r.expect_status(0);
    let public = dir.join(format!("{name}.pub"));
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    assert!(
        out.contains(&format!("public key: {}", public.display())),
        "{out}"
    );
    (key, public)
}

fn session() -> Vec<u8> {
    script(&[
        INIT,
        &call(2, "echo", r#"{"text":"a"}"#),
        &call(3, "exec", "{}"),
    ])
}

/// A real session into `cap`, signed with `key`, with `extra` options.
fn signed_session(cap: &Path, key: &Path, extra: &[&str], input: &[u8]) -> Run {
    let mut opts = capture_opts(cap);
    opts.extend(["--sign-key".to_string(), key.display().to_string()]);
    opts.extend(extra.iter().map(|s| s.to_string()));
    run(
        &wrap_args(&strs(&opts), &["python3", &fault_server(), "normal"]),
        input,
    )
}

fn verify(cap: &Path, keys: &[&Path]) -> Run {
    let mut args = vec![
        "capture".to_string(),
        "verify".into(),
        cap.display().to_string(),
        "--pub".into(),
    ];
    args.extend(keys.iter().map(|k| k.display().to_string()));
    run(&args, b"")
}

/// Two signed captures of real sessions by the same key, and the key pair.
struct Signed {
    _dir: tempfile::TempDir,
    cap: PathBuf,
    other: PathBuf,
    public: PathBuf,
    dir: PathBuf,
}

fn two_signed() -> Signed {
    let d = tempdir();
    let (key, public) = keygen(d.path(), "k");
    let cap = d.path().join("cap");
    let other = d.path().join("other");
    signed_session(&cap, &key, &[], &session()).expect_status(0);
    signed_session(&other, &key, &[], &session()).expect_status(0);
    Signed {
        dir: d.path().to_path_buf(),
        _dir: d,
        cap,
        other,
        public,
    }
}

#[test]
fn a_signed_session_verifies_and_reads_as_it_would_unsigned() {
    let s = two_signed();
    let att = s.cap.join(ATTESTATION);
    assert_eq!(
        std::fs::metadata(&att).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let r = verify(&s.cap, &[&s.public]);
    r.expect_status(0);
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    let (_, v) = read_verdict(&s.cap);
    assert!(
        out.contains(&format!("session: {}", v["session_id"].as_str().unwrap())),
        "{out}"
    );
    assert!(out.contains("files: 5 signed"), "{out}");
    assert!(out.ends_with("closure: closed\n"), "{out}");
    // The verdict of the signed capture is that of the same files without the attestation.
    let copy = s.dir.join("copy");
    std::fs::create_dir(&copy).unwrap();
    for e in std::fs::read_dir(&s.cap).unwrap() {
        let e = e.unwrap();
        if e.file_name() != ATTESTATION {
            std::fs::copy(e.path(), copy.join(e.file_name())).unwrap();
        }
    }
    let (_, unsigned) = read_verdict(&copy);
    assert_eq!(v, unsigned);
    // The unsigned copy does not verify: nothing to verify.
    let r = verify(&copy, &[&s.public]);
    r.expect_status(4);
    assert!(
        r.stderr
            .contains("attestation.dsse.json: missing: the capture is not signed"),
        "{}",
        r.report()
    );
}

/// A tampering: its name, what it does, and the text `capture verify`'s stderr must hold.
type Tampering = (&'static str, fn(&Signed), &'static str);

fn tamperings() -> Vec<Tampering> {
    vec![
        (
            "byte",
            |s| {
                let p = s.cap.join("decisions.ndjson");
                let mut b = std::fs::read(&p).unwrap();
                b[10] ^= 1;
                std::fs::write(&p, b).unwrap();
            },
            "decisions.ndjson: its SHA-256 is",
        ),
        (
            "swapped stop",
            |s| {
                std::fs::copy(
                    s.other.join("session-stop.json"),
                    s.cap.join("session-stop.json"),
                )
                .unwrap();
            },
            "session-stop.json: its SHA-256 is",
        ),
        (
            "added",
            |s| std::fs::write(s.cap.join("notes.txt"), "x").unwrap(),
            "notes.txt: in the capture but not signed: added after signing",
        ),
        (
            "removed",
            |s| std::fs::remove_file(s.cap.join("proxy-stderr.log")).unwrap(),
            "proxy-stderr.log: signed, but missing from the capture",
        ),
        (
            "replayed",
            |s| {
                std::fs::copy(s.other.join(ATTESTATION), s.cap.join(ATTESTATION)).unwrap();
            },
            "an attestation of another capture",
        ),
        (
            "duplicate key",
            |s| {
                let p = s.cap.join(ATTESTATION);
                let text = std::fs::read_to_string(&p).unwrap();
                let text = text.replacen(
                    '{',
                    r#"{"payloadT\u0079pe":"application/vnd.in-toto+json","#,
                    1,
                );
                std::fs::write(&p, text).unwrap();
            },
            "attestation.dsse.json: not strict JSON",
        ),
    ]
}

#[test]
fn every_tampering_is_exit_4_naming_what_failed() {
    for (what, tamper, expect) in tamperings() {
        let s = two_signed();
        tamper(&s);
        let r = verify(&s.cap, &[&s.public]);
        assert_eq!(r.status, Some(4), "{what}: {}", r.report());
        assert!(r.stdout.is_empty(), "{what}: {}", r.report());
        assert!(r.stderr.contains(expect), "{what}: {}", r.report());
        assert!(r.stderr.lines().all(|l| l.starts_with("assay: ")), "{what}");
    }
}

#[test]
fn another_key_is_exit_4_and_one_of_several_keys_is_enough() {
    let s = two_signed();
    let (_, other_pub) = keygen(&s.dir, "other-key");
    let r = verify(&s.cap, &[&other_pub]);
    r.expect_status(4);
    assert!(
        r.stderr.contains("none of the given public keys"),
        "{}",
        r.report()
    );
    verify(&s.cap, &[&other_pub, &s.public]).expect_status(0);
    // A raw 32-byte public key file is read as well as the PEM one.
    let pem = std::fs::read_to_string(&s.public).unwrap();
    let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64_decode(&b64);
    let raw = s.dir.join("raw.pub");
    std::fs::write(&raw, &der[12..]).unwrap();
    verify(&s.cap, &[&raw]).expect_status(0);
}

#[test]
fn a_signed_capture_that_is_not_closed_verifies_with_exit_1() {
    let d = tempdir();
    let (key, public) = keygen(d.path(), "k");
    let cap = d.path().join("cap");
    let long = call(4, "echo", &format!(r#"{{"text":"{}"}}"#, "x".repeat(300)));
    let mut input = session();
    input.extend_from_slice(&script(&[&long]));
    signed_session(&cap, &key, &["--max-line-bytes", "200"], &input);
    let r = verify(&cap, &[&public]);
    r.expect_status(1);
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    assert!(
        out.contains("closure: incomplete\n  proxy_error: "),
        "{out}"
    );
}

#[test]
fn a_discovery_only_run_is_signed_and_verifies_as_not_closed() {
    let d = tempdir();
    let (key, public) = keygen(d.path(), "k");
    let cap = d.path().join("cap");
    let discover = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#;
    signed_session(&cap, &key, &[], &script(&[discover]));
    assert!(cap.join("no-session.json").is_file());
    let r = verify(&cap, &[&public]);
    r.expect_status(1);
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    assert!(out.contains("closure: unknown\n  no_session: "), "{out}");
}

#[test]
fn keys_others_may_use_and_keys_without_a_capture_are_usage_errors_before_spawn() {
    let d = tempdir();
    let (key, _) = keygen(d.path(), "k");
    for mode in [0o644, 0o640, 0o604, 0o660, 0o606] {
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).unwrap();
        let cap = d.path().join("cap");
        let r = signed_session(&cap, &key, &[], &session());
        r.expect_status(2);
        assert!(
            r.stderr.starts_with("assay: --sign-key: signing key ")
                && r.stderr.contains(&format!("has mode {mode:04o}"))
                && r.stderr.contains("chmod 600"),
            "{}",
            r.report()
        );
        assert!(!cap.exists());
    }
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400)).unwrap();
    let opts = evidence_opts(&["--sign-key".into(), key.display().to_string()]);
    let r = run(
        &wrap_args(&strs(&opts), &["python3", &fault_server(), "normal"]),
        &session(),
    );
    r.expect_status(2);
    assert!(
        r.stderr
            .starts_with("assay: --sign-key: signs a capture: give a capture directory"),
        "{}",
        r.report()
    );
    let garbage = d.path().join("garbage");
    std::fs::write(&garbage, b"not a key").unwrap();
    std::fs::set_permissions(&garbage, std::fs::Permissions::from_mode(0o600)).unwrap();
    let r = signed_session(&d.path().join("cap"), &garbage, &[], &session());
    r.expect_status(2);
    assert!(
        r.stderr.contains("is not an Ed25519 private key"),
        "{}",
        r.report()
    );
    assert!(!d.path().join("cap").exists());
}

/// The verdict an attestation signed (its predicate's `closure` and reason codes).
fn signed_verdict(cap: &Path) -> (String, Vec<String>) {
    let envelope = read_json(&cap.join(ATTESTATION));
    let payload = base64_decode(envelope["payload"].as_str().unwrap());
    let statement: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    let verdict = &statement["predicate"]["verdict"];
    let codes = verdict["reasons"].as_array().unwrap();
    (
        verdict["closure"].as_str().unwrap().to_string(),
        codes
            .iter()
            .map(|r| r["code"].as_str().unwrap().to_string())
            .collect(),
    )
}

/// A longer session (calls allowed and refused, enforced and in dry run) whose log the signing
/// session follows while it is written: the verdict signed is the one `capture read` gives, and
/// the capture verifies.
#[test]
fn a_long_signed_session_signs_the_verdict_capture_read_gives() {
    let d = tempdir();
    let (key, public) = keygen(d.path(), "k");
    let mut lines = vec![INIT.to_string()];
    for id in 2..402 {
        let tool = if id % 7 == 0 { "exec" } else { "echo" };
        lines.push(call(
            id,
            tool,
            &format!(r#"{{"text":"{}"}}"#, "y".repeat(id as usize)),
        ));
    }
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    for (name, extra) in [("enforced", &[][..]), ("dry", &["--dry-run"][..])] {
        let cap = d.path().join(name);
        signed_session(&cap, &key, extra, &script(&refs)).expect_status(0);
        verify(&cap, &[&public]).expect_status(0);
        let (_, v) = read_verdict(&cap);
        assert_eq!(v["closure"], "closed", "{name}: {v}");
        assert_eq!(
            signed_verdict(&cap),
            ("closed".to_string(), Vec::new()),
            "{name}"
        );
        assert_eq!(decision_lines(&cap.join("decisions.ndjson")).len(), 400);
    }
}

#[test]
fn a_signing_failure_is_exit_3_and_leaves_the_verdict_closed() {
    let d = tempdir();
    let (key, _) = keygen(d.path(), "k");
    let cap = d.path().join("cap");
    // The server takes the attestation's name inside the capture while the session runs.
    let mut opts = capture_opts(&cap);
    opts.extend(["--sign-key".to_string(), key.display().to_string()]);
    let squat = format!(
        "echo squatter > '{}' && exec python3 '{}' normal",
        cap.join(ATTESTATION).display(),
        fault_server()
    );
    let r = run(&wrap_args(&strs(&opts), &["sh", "-c", &squat]), &session());
    r.expect_status(3);
    assert!(
        r.stderr
            .contains("assay: evidence write failed: capture not signed: cannot write ")
            && r.stderr.contains("File exists"),
        "{}",
        r.report()
    );
    assert_eq!(std::fs::read(cap.join(ATTESTATION)).unwrap(), b"squatter\n");
    let (r, v) = read_verdict(&cap);
    r.expect_status(0);
    assert_eq!(v["closure"], "closed", "{v}");
}

#[test]
fn a_package_keeps_the_attestation_names_it_and_verifies() {
    let s = two_signed();
    let pkg = s.dir.join("pkg");
    let r = package(&s.cap, &pkg, &[]);
    r.expect_status(0);
    let manifest = read_json(&pkg.join("manifest.json"));
    let names: Vec<&str> = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&ATTESTATION), "{manifest}");
    assert_eq!(
        std::fs::read(pkg.join(ATTESTATION)).unwrap(),
        std::fs::read(s.cap.join(ATTESTATION)).unwrap()
    );
    verify(&pkg, &[&s.public]).expect_status(0);
    // A manifest that does not list the package's files is not the package's.
    let text = std::fs::read_to_string(pkg.join("manifest.json")).unwrap();
    std::fs::write(
        pkg.join("manifest.json"),
        text.replace(&sha256_file(&pkg.join(ATTESTATION)), &"0".repeat(64)),
    )
    .unwrap();
    let r = verify(&pkg, &[&s.public]);
    r.expect_status(4);
    assert!(r.stderr.contains("manifest.json ("), "{}", r.report());
}

#[test]
fn verify_usage_errors_are_exit_2() {
    let s = two_signed();
    let missing = s.dir.join("nope");
    let r = verify(&missing, &[&s.public]);
    r.expect_status(2);
    assert!(
        r.stderr.contains("missing capture directory"),
        "{}",
        r.report()
    );
    let r = run(
        &[
            "capture".into(),
            "verify".into(),
            s.cap.display().to_string(),
        ],
        b"",
    );
    r.expect_status(2);
    let bad = s.dir.join("bad.pub");
    std::fs::write(
        &bad,
        b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
    )
    .unwrap();
    let r = verify(&s.cap, &[&bad]);
    r.expect_status(2);
    assert!(
        r.stderr.contains("is not an Ed25519 public key"),
        "{}",
        r.report()
    );
    // keygen never replaces a key.
    let r = run(
        &[
            "keygen".into(),
            "--out".into(),
            s.dir.join("k").display().to_string(),
        ],
        b"",
    );
    r.expect_status(2);
    assert!(r.stderr.contains("never replaced"), "{}", r.report());
}

fn base64_decode(s: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = Vec::new();
    for c in s.bytes().filter(|&c| c != b'=') {
        let v = ALPHABET.iter().position(|&a| a == c).unwrap() as u32;
        bits = (bits << 6) | v;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
        }
    }
    out
}
