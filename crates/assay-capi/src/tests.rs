//! The C ABI entry points called from Rust (the C compilers drive them in tests/c_abi.rs; the
//! header is checked in tests/header.rs):
//! - `assay_wrap_session`: the status for a stop write that fails mid-session is
//!   `ASSAY_ERR_STOP_WRITE`, and the outcome JSON still comes back with the observed child status
//!   (SPEC §8);
//! - `assay_wrap_session` with `sign_key`: the capture is signed and the outcome says so
//!   (`signed`, `signature`, `paths.attestation`); a key others may read is `ASSAY_ERR_CONFIG`;
//! - the version macros of the checked-in `include/assay.h` equal what the library reports.

use std::ffi::{CStr, CString};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::time::Duration;

use std::path::{Path, PathBuf};

use crate::{
    AssayStatus, assay_abi_version, assay_last_error, assay_string_free, assay_version,
    assay_wrap_session,
};

/// The repository root (this crate lives in `crates/assay-capi`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/assay-capi sits two levels below the repository root")
        .to_path_buf()
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

fn demo_policy() -> PathBuf {
    root().join("examples/demo/policy.yaml")
}

fn fault_server() -> String {
    root()
        .join("tests/fixtures/fault_server.py")
        .display()
        .to_string()
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// A tools/call line.
fn call(id: u64, tool: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#
    )
}

/// Joins lines with `\n` and a final newline.
fn script(lines: &[&str]) -> Vec<u8> {
    let mut s = lines.join("\n");
    s.push('\n');
    s.into_bytes()
}

fn decision_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read(path)
        .unwrap()
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

/// The value of `#define NAME VALUE` in the header.
fn define(header: &str, name: &str) -> Option<String> {
    header.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("#define ")?;
        let (key, value) = rest.split_once(char::is_whitespace)?;
        (key == name).then(|| value.trim().to_string())
    })
}

#[test]
fn abi_and_library_versions_match() {
    let header = std::fs::read_to_string(root().join("include/assay.h")).unwrap_or_default();
    assert_eq!(
        define(&header, "ASSAY_ABI_VERSION"),
        Some(assay_abi_version().to_string()),
        "ASSAY_ABI_VERSION in include/assay.h (cbindgen.toml after_includes) != assay_abi_version()"
    );
    assert_eq!(
        define(&header, "ASSAY_VERSION"),
        Some(format!("\"{}\"", env!("CARGO_PKG_VERSION"))),
        "ASSAY_VERSION in cbindgen.toml after_includes != Cargo.toml version; edit it and \
         regenerate the header (tests/header.rs)"
    );
    let version = assay_version();
    assert!(!version.is_null());
    // SAFETY: assay_version returns a static NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(version) };
    assert_eq!(version.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
}

#[test]
fn stop_write_failure_returns_status_4_with_the_outcome() {
    let dir = tempdir();
    let stop_dir = dir.path().join("stopdir");
    std::fs::create_dir(&stop_dir).unwrap();
    let log = dir.path().join("decisions.ndjson");
    let (client_in_r, mut client_in_w) = std::io::pipe().unwrap();
    let (client_out_r, client_out_w) = std::io::pipe().unwrap();
    let config = serde_json::json!({
        "command": ["python3", fault_server(), "exit7"],
        "policy": demo_policy(),
        "event_source": "assay://t/ffi",
        "decision_log": log,
        "decision_log_new": true,
        "session_stop_out": stop_dir.join("stop.json"),
        "stdin": client_in_r.as_raw_fd(),
        "stdout": client_out_w.as_raw_fd(),
        "stderr": dir.path().join("stderr.log"),
    });
    let config = CString::new(config.to_string()).unwrap();
    // Drain the client output so the wrapper never blocks on it.
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut r = client_out_r;
        std::io::Read::read_to_end(&mut r, &mut out).unwrap();
        out
    });
    let session = std::thread::spawn(move || {
        let mut out: *mut std::os::raw::c_char = std::ptr::null_mut();
        // SAFETY (test): a valid NUL-terminated config and a valid out pointer.
        let status = unsafe { assay_wrap_session(config.as_ptr(), &mut out) };
        let last_ptr = assay_last_error();
        let last = if last_ptr.is_null() {
            String::from("(no last error)")
        } else {
            // SAFETY (test): a NUL-terminated string owned by the library, read before any
            // other `assay_*` call on this thread (`assay_string_free` included).
            unsafe { CStr::from_ptr(last_ptr) }
                .to_string_lossy()
                .into_owned()
        };
        let outcome = (!out.is_null()).then(|| {
            // SAFETY (test): the library returned a NUL-terminated string it allocated.
            let s = unsafe { CStr::from_ptr(out) }.to_str().unwrap().to_owned();
            // SAFETY (test): `out` came from the library and is freed once, after its last read.
            unsafe { assay_string_free(out) };
            s
        });
        // The descriptors were lent: the library worked on duplicates; ours close here.
        drop(client_in_r);
        drop(client_out_w);
        (status, outcome, last)
    });
    client_in_w
        .write_all(&script(&[INIT, &call(2, "echo", r#"{"text":"a"}"#)]))
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    std::fs::remove_dir(&stop_dir).unwrap();
    drop(client_in_w);
    let (status, outcome, last) = session.join().unwrap();
    let _ = reader.join().unwrap();
    assert_eq!(
        status,
        AssayStatus::ASSAY_ERR_STOP_WRITE,
        "{last} {outcome:?}"
    );
    assert!(last.contains("child exited with status 7"), "{last}");
    let outcome = outcome.expect("outcome JSON is returned with ASSAY_ERR_STOP_WRITE");
    core_api::strict_json::scan(outcome.as_bytes(), 16).expect("no duplicate keys");
    let v: serde_json::Value = serde_json::from_str(&outcome).unwrap();
    assert_eq!(v["exit_code"], 3);
    assert_eq!(v["child_exit_code"], 7);
    assert_eq!(v["termination"], "exited");
    assert_eq!(v["stop_written"], false);
    assert_eq!(v["decision_log"], "complete");
    // Earlier evidence is intact.
    assert_eq!(decision_lines(&log).len(), 1);
}

/// Runs one session through `assay_wrap_session` with `config` (its `stdin`/`stdout` set here)
/// and the client lines `input`; returns the status, the outcome JSON and the last error.
fn wrap_with(
    mut config: serde_json::Value,
    input: &[u8],
) -> (AssayStatus, Option<serde_json::Value>, String) {
    let (client_in_r, mut client_in_w) = std::io::pipe().unwrap();
    let (client_out_r, client_out_w) = std::io::pipe().unwrap();
    config["stdin"] = client_in_r.as_raw_fd().into();
    config["stdout"] = client_out_w.as_raw_fd().into();
    let config = CString::new(config.to_string()).unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut r = client_out_r;
        std::io::Read::read_to_end(&mut r, &mut out).unwrap();
    });
    client_in_w.write_all(input).unwrap();
    drop(client_in_w);
    let mut out: *mut std::os::raw::c_char = std::ptr::null_mut();
    // SAFETY (test): a valid NUL-terminated config and a valid out pointer.
    let status = unsafe { assay_wrap_session(config.as_ptr(), &mut out) };
    let last_ptr = assay_last_error();
    let last = if last_ptr.is_null() {
        String::new()
    } else {
        // SAFETY (test): read before any other `assay_*` call on this thread.
        unsafe { CStr::from_ptr(last_ptr) }
            .to_string_lossy()
            .into_owned()
    };
    let outcome = (!out.is_null()).then(|| {
        // SAFETY (test): the library returned a NUL-terminated string it allocated.
        let s = unsafe { CStr::from_ptr(out) }.to_str().unwrap().to_owned();
        // SAFETY (test): `out` came from the library and is freed once, after its last read.
        unsafe { assay_string_free(out) };
        core_api::strict_json::scan(s.as_bytes(), 16).expect("no duplicate keys");
        serde_json::from_str(&s).unwrap()
    });
    drop(client_in_r);
    drop(client_out_w);
    reader.join().unwrap();
    (status, outcome, last)
}

#[test]
fn sign_key_signs_the_capture_and_a_key_others_may_read_is_a_config_error() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir();
    let key = dir.path().join("k");
    let files = core_api::attestation::generate_key_pair(&key).unwrap();
    let cap = dir.path().join("cap");
    let config = serde_json::json!({
        "command": ["python3", fault_server(), "normal"],
        "policy": demo_policy(),
        "event_source": "assay://t/ffi",
        "capture_dir": cap,
        "sign_key": key,
    });
    let input = script(&[INIT, &call(2, "echo", r#"{"text":"a"}"#)]);
    let (status, outcome, last) = wrap_with(config.clone(), &input);
    assert_eq!(status, AssayStatus::ASSAY_OK, "{last}");
    let v = outcome.unwrap();
    assert_eq!(v["signed"], true, "{v}");
    assert_eq!(
        v["signature"],
        serde_json::json!({"signed": true, "keyid": files.keyid, "error": null})
    );
    assert_eq!(
        v["paths"]["attestation"],
        cap.join("attestation.dsse.json").display().to_string()
    );
    let public = core_api::attestation::PublicKey::load(&files.public).unwrap();
    let verified = core_api::attestation::verify_capture(&cap, &[public]).unwrap();
    assert_eq!(verified.keyid, files.keyid);
    assert_eq!(
        verified.predicate.session_id,
        v["session_id"].as_str().unwrap()
    );

    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut config = config;
    config["capture_dir"] = dir.path().join("cap2").display().to_string().into();
    let (status, outcome, last) = wrap_with(config, &input);
    assert_eq!(status, AssayStatus::ASSAY_ERR_CONFIG);
    assert!(outcome.is_none());
    assert!(last.starts_with("sign_key: signing key "), "{last}");
    assert!(!dir.path().join("cap2").exists());
}
