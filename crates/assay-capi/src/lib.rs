//! The C ABI of SPEC §8: seven `extern "C"` functions, JSON in and JSON out, two `#[repr(u32)]`
//! enums. No other Rust type crosses the boundary. `include/assay.h` is generated from this
//! crate's `src/` by cbindgen (see `cbindgen.toml`), so these doc comments are the C
//! documentation.
//!
//! Rules every entry point follows:
//! - its body runs inside the panic boundary (`boundary.rs`): a panic never unwinds into C;
//! - it first forgets this thread's last error (except `assay_last_error`, which reads it) and
//!   sets every non-NULL `char **` output to NULL;
//! - it checks its arguments before doing any work: NULL, non-UTF-8 or bad JSON →
//!   `ASSAY_ERR_INVALID_ARGUMENT` with a message in `assay_last_error`;
//! - strings it returns are allocated here and freed only by `assay_string_free`.
//!
//! Rust callers use the safe API (`assay::wrap_session`, ...) instead.

mod boundary;
mod last_error;
mod status;
mod strings;

use std::ffi::c_char;
use std::path::Path;

pub use status::{AssayClosure, AssayStatus};

use core_api::ClientIo;
use core_api::WrapConfig;
use core_api::{Error, ErrorKind};

/// The version of this C ABI. Bumped on any incompatible change; `ASSAY_ABI_VERSION` in the
/// header must equal it (tests/header.rs checks).
const ABI_VERSION: u32 = 1;

/// The crate version, NUL-terminated for C.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// Maps a result to a status, storing the error's message as this thread's last error, options
/// spelled as `config_json` keys (`event_source`).
fn finish(result: Result<(), Error>) -> AssayStatus {
    match result {
        Ok(()) => AssayStatus::ASSAY_OK,
        Err(e) => {
            last_error::set(&e.render(core_api::OptionSpelling::Key));
            AssayStatus::from(&e)
        }
    }
}

/// Returns the version of this C ABI: 1.
///
/// # Returns
/// The ABI version, equal to the `ASSAY_ABI_VERSION` macro of the header the library was built
/// with. Compare the two at run time to detect a header/library mismatch. 0 only if the call
/// failed internally (it cannot in practice).
///
/// # Memory and lifetimes
/// Nothing is allocated.
#[unsafe(no_mangle)]
pub extern "C" fn assay_abi_version() -> u32 {
    boundary::entry(|| ABI_VERSION)
}

/// Returns the library version (the crate version, e.g. "0.1.0").
///
/// # Returns
/// A static NUL-terminated string; NULL only if the call failed internally.
///
/// # Memory and lifetimes
/// The string is static: valid for the life of the process. Do not free it.
#[unsafe(no_mangle)]
pub extern "C" fn assay_version() -> *const c_char {
    boundary::entry(|| VERSION.as_ptr().cast::<c_char>())
}

/// Runs one wrapped MCP session to its end (SPEC §3) and returns its outcome as JSON.
///
/// The call blocks until the session ends and the server has been cleaned up: the wrapper spawns
/// the server command, forwards JSON-RPC lines both ways, enforces the policy on every
/// `tools/call`, and writes the requested evidence. The session ends when the client closes its
/// input, or at most 2 s after the server closed its output if the client sends nothing more
/// (a client line that can no longer be forwarded ends it as `proxy_error`). When the same
/// process plays the MCP client, run this call on its own thread.
///
/// The server is spawned by the calling thread and asked to receive SIGKILL if that thread dies
/// (`PR_SET_PDEATHSIG`): the server never outlives the session's thread or the process. It
/// inherits exactly descriptors 0, 1 and 2; every other descriptor of the process is marked
/// close-on-exec in the child, including pipes the host made without `FD_CLOEXEC`. While the
/// call runs, `SIGPIPE` and `SIGXFSZ` are blocked on the calling thread (a failed write is an
/// error, not the death of the process); its mask is restored on return. The server starts with
/// `SIGPIPE` and `SIGXFSZ` at their defaults, as a shell would start it (other signals the host
/// ignores stay ignored, as `nohup` expects).
///
/// A library in any host (SPEC §3.1b):
/// - A host with descriptors 0, 1 or 2 closed (a daemon) is fine: no descriptor the library
///   opens (evidence files, pipes) is ever numbered 0, 1 or 2. Its `assay:` diagnostics go to
///   the server's stderr log when there is one (`stderr`, or a capture's `proxy-stderr.log`),
///   else to descriptor 2 only if that was open at the start of the call and is not the same
///   pipe or socket as `stdin`/`stdout`, else nowhere; the server's stderr likewise, else
///   `/dev/null`.
/// - A process the host forks while a session runs (`fork()` without `exec`) keeps none of the
///   session's descriptors (a `pthread_atfork` child handler closes them), so the server still
///   sees the end of its input and the client the end of its output.
/// - Relative paths in `config_json` are resolved once, at the start of the call: a host thread
///   that changes directory during the session does not move the evidence; `paths` in the
///   outcome are absolute.
/// - Policy compilation runs on a thread of the library's own with an 8 MiB stack: the call
///   works from a thread with a small stack (128 KiB, musl's default).
///
/// # Parameters
/// - `config_json`: a NUL-terminated UTF-8 JSON object. Required keys: `command` (non-empty
///   array of strings: the server command and its arguments) and `policy` (path of the policy
///   file). Optional keys: `event_source`, `label`, `decision_log`, `decision_log_new`,
///   `session_context_out`, `session_stop_out`, `coverage_out`, `capture_dir`, `capture_root`,
///   `dry_run`, `drain_timeout` (seconds), `idle_drain` (seconds), `max_line_bytes`, `stdin`,
///   `stdout`, `stderr` (a path, or absent to inherit), `verbose`, `forward_signals`,
///   `sign_key`, `otlp_endpoint`. Unknown or duplicate keys are refused.
///   `sign_key` (needs `capture_dir` or `capture_root`): an Ed25519 private key file (PKCS#8 or
///   a raw 32-byte seed) only its owner may read or write (mode 0600 or 0400, else
///   `ASSAY_ERR_CONFIG` before anything is spawned); after the stop record the capture is
///   signed with it: `attestation.dsse.json`, a DSSE envelope over an in-toto Statement v1 of
///   every other file of the capture (SPEC §4.5).
///   `otlp_endpoint` (an `http://` URL: the session's spans are also sent there as they happen,
///   never slowing the session; docs/export.md).
///   `idle_drain` (default 1, 0 waits forever): after the client closed its input and no request
///   of it is pending, a server that writes nothing for that long and keeps its stdout open is
///   treated as done and ended by the bounded cleanup.
///   `capture_root` gives each call a new capture directory
///   `ROOT/<UTC YYYYMMDDTHHMMSS.ffffffZ>-<session_id>` (mode 0700, created exclusively; `ROOT` is
///   created with mode 0700 when missing and its parent must exist; a symlinked `ROOT` is
///   refused); the outcome's `paths.capture_dir` names it. It cannot be combined with
///   `capture_dir`, `decision_log`, `session_context_out`, `session_stop_out` or
///   `coverage_out`.
///   `stdin` and `stdout` (default 0 and 1) are the descriptor numbers the wrapper reads client
///   messages from and writes responses to. They are borrowed: the library works on duplicates
///   and never closes them. They must stay open until the call returns. The caller signals the
///   end of the session by closing the write end of the pipe that feeds `stdin`; plain
///   `pipe(2)` descriptors are fine (the server does not inherit them).
///   `forward_signals` (default false): while the call runs, SIGTERM, SIGINT and SIGHUP
///   received by the process are sent to the server instead of reaching the host's handlers;
///   the session then ends through its normal path (its stop record shows the server's
///   observed end, e.g. `termination` `signaled`, `signal` 15). The library installs its
///   handler when the first such session starts and, when the last one ends, restores the
///   previous disposition of each signal that still has the library's handler (a handler the
///   host installed meanwhile stays). At most 1024 sessions of one process forward signals at
///   the same time; the next one is refused with `ASSAY_ERR_CONFIG` (option `forward_signals`)
///   before anything is created. When false, no handler is installed and no disposition is
///   changed. In a
///   process forked from the host while such a session runs, the handler puts back the previous
///   dispositions and re-raises the signal (the fork behaves as if it were never installed).
///   Every thread the call started has ended when it returns; none touches `stdin` or `stdout`
///   afterwards.
/// - `outcome_json`: NULL, or where to store the outcome JSON.
///
/// # Returns
/// - `ASSAY_OK`: the session ran. The outcome JSON holds `session_id`, `exit_code` (the exit
///   status `assay mcp wrap` would have: the child's exit code, 128 + signal, or 3 for a wrapper
///   failure such as a `proxy_error` session or a failed evidence write), the session-stop fields
///   (`session_end`, `termination`, `signal`, `decision_log`, ...; the child's own exit code is
///   `child_exit_code`, so no key appears twice), `stop` (the stop record's `data` exactly as
///   recorded, or as it would have been), `paths` (the files written; `paths.no_session` is the
///   `no-session.json` a discovery-only run writes in a capture directory), `stop_written`,
///   `discovery_only`, `evidence_errors`, `proxy_error`, `signed` (with `sign_key`: whether the
///   capture was signed; `null` without) and `signature` (`null` without `sign_key`, else
///   `{"signed", "keyid", "error"}`; a signing failure is also an `evidence_errors` entry and
///   makes `exit_code` 3, never changing the capture's verdict); `paths.attestation` names
///   the attestation when one was written.
/// - `ASSAY_ERR_STOP_WRITE`: the session ran but the requested stop record could not be
///   written; the outcome JSON is still stored (it reports the observed child status).
/// - `ASSAY_ERR_INVALID_ARGUMENT`: `config_json` is NULL, not UTF-8, not JSON, has an unknown,
///   duplicate or mistyped key, or `stdin` / `stdout` is negative or not an open descriptor.
/// - `ASSAY_ERR_CONFIG`: the configuration was rejected (missing or invalid policy, invalid
///   `event_source`, an output path that exists, a NUL byte in a `command` argument, a 1025th
///   concurrent `forward_signals` session, ...); nothing was spawned or created.
/// - `ASSAY_ERR_IO`: the session could not start (command not found or not executable, an I/O
///   failure).
/// - `ASSAY_ERR_PANIC`: an internal panic was caught.
///
/// On any status but `ASSAY_OK`, `assay_last_error()` describes the failure.
///
/// # Memory and lifetimes
/// `config_json` is only read during the call. When `outcome_json` is not NULL, `*outcome_json`
/// is set to NULL first; on `ASSAY_OK` and `ASSAY_ERR_STOP_WRITE` (and only then) it is set to a
/// new NUL-terminated string that the caller owns and must release with `assay_string_free`.
///
/// # Safety
/// `config_json` is NULL or a valid NUL-terminated string; `outcome_json` is NULL or valid for
/// writing one pointer; the `stdin` / `stdout` descriptors stay open during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn assay_wrap_session(
    config_json: *const c_char,
    outcome_json: *mut *mut c_char,
) -> AssayStatus {
    boundary::entry(|| {
        // SAFETY: the caller passes NULL or a pointer valid for writing one pointer (Safety).
        unsafe { strings::clear_out(outcome_json) };
        // SAFETY: the caller passes NULL or a NUL-terminated string valid during the call.
        let json = match unsafe { strings::str_arg(config_json, "config_json") } {
            Ok(json) => json,
            Err(e) => return finish(Err(e)),
        };
        let config = match WrapConfig::from_json(json) {
            Ok(config) => config,
            Err(e) => return finish(Err(e)),
        };
        // A negative or closed descriptor is ASSAY_ERR_INVALID_ARGUMENT (SPEC §8).
        let io = match ClientIo::from_borrowed(config.stdin, config.stdout) {
            Ok(io) => io,
            Err(e) => return finish(Err(e)),
        };
        match core_api::wrap_session(&config, io) {
            // SAFETY: as for clear_out above.
            Ok(outcome) => finish(unsafe { store_json(outcome_json, &outcome, "outcome") }),
            Err(e) => {
                let Some(outcome) = e.outcome() else {
                    return finish(Err(e));
                };
                // SPEC §8: the outcome JSON is still returned with ASSAY_ERR_STOP_WRITE.
                // SAFETY: as for clear_out above.
                match unsafe { store_json(outcome_json, outcome, "outcome") } {
                    Ok(()) => finish(Err(e)),
                    Err(store_err) => finish(Err(store_err)),
                }
            }
        }
    })
}

/// Serializes `value` as compact JSON into the optional output `out`.
///
/// # Safety
/// `out` is NULL or valid for writing one pointer.
unsafe fn store_json<T: serde::Serialize>(
    out: *mut *mut c_char,
    value: &T,
    what: &str,
) -> Result<(), Error> {
    let text = serde_json::to_string(value)
        .map_err(|e| Error::new(ErrorKind::Internal, format!("{what} json: {e}")))?;
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { strings::put_out(out, text) }
}

/// Reads and judges a capture directory (SPEC §7) without trusting anything in it.
///
/// A missing, malformed, oversized or inconsistent capture is not an error: it is the verdict
/// `ASSAY_CLOSURE_UNKNOWN` with reasons in the verdict JSON.
///
/// # Parameters
/// - `capture_dir`: a NUL-terminated UTF-8 path.
/// - `closure`: required; receives the verdict.
/// - `verdict_json`: NULL, or where to store the verdict JSON (`schema`
///   "assay.capture.closure.v1", `closure`, `reasons`, `session_id`, the stop fields, `files`,
///   `non_claims`).
///
/// # Returns
/// - `ASSAY_OK`: `*closure` holds the verdict.
/// - `ASSAY_ERR_INVALID_ARGUMENT`: `capture_dir` or `closure` is NULL, or `capture_dir` is not
///   UTF-8.
/// - `ASSAY_ERR_PANIC`: an internal panic was caught.
///
/// # Memory and lifetimes
/// `capture_dir` is only read during the call. `*closure` is set to `ASSAY_CLOSURE_UNKNOWN`
/// first when `closure` is not NULL, so it never holds a stale verdict. When `verdict_json` is
/// not NULL, `*verdict_json` is set to NULL first and, on `ASSAY_OK` only, to a new string that
/// the caller must release with `assay_string_free`.
///
/// # Safety
/// `capture_dir` is NULL or a valid NUL-terminated string; `closure` is NULL or valid for writing
/// one `AssayClosure`; `verdict_json` is NULL or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn assay_read_capture(
    capture_dir: *const c_char,
    closure: *mut AssayClosure,
    verdict_json: *mut *mut c_char,
) -> AssayStatus {
    boundary::entry(|| {
        // SAFETY: the caller passes NULL or a pointer valid for writing one pointer (Safety).
        unsafe { strings::clear_out(verdict_json) };
        if !closure.is_null() {
            // SAFETY: not NULL, and the caller guarantees it is valid for writing (Safety).
            unsafe { closure.write(AssayClosure::ASSAY_CLOSURE_UNKNOWN) };
        }
        // SAFETY: the caller passes NULL or a NUL-terminated string valid during the call.
        let dir = match unsafe { strings::str_arg(capture_dir, "capture_dir") } {
            Ok(dir) => dir,
            Err(e) => return finish(Err(e)),
        };
        if closure.is_null() {
            return finish(Err(Error::invalid_argument("closure is NULL")));
        }
        let verdict = core_api::read_capture(Path::new(dir));
        // SAFETY: checked not NULL above; valid for writing (Safety).
        unsafe { closure.write(verdict.closure.into()) };
        // SAFETY: as for clear_out above.
        let stored = unsafe { strings::put_out(verdict_json, verdict.to_json()) };
        if stored.is_err() {
            // Keep the documented "UNKNOWN on error" rule.
            // SAFETY: checked not NULL above; valid for writing (Safety).
            unsafe { closure.write(AssayClosure::ASSAY_CLOSURE_UNKNOWN) };
        }
        finish(stored)
    })
}

/// Copies a capture directory into a new directory with a manifest of digests (SPEC §7
/// `package_capture`).
///
/// # Parameters
/// - `src_dir`: the capture directory, a NUL-terminated UTF-8 path.
/// - `dst_dir`: the destination, a NUL-terminated UTF-8 path that must not exist yet.
/// - `manifest_json`: NULL, or where to store the manifest JSON (`schema`
///   "assay.capture.package.v1", the files with their sizes and SHA-256, the producer, the
///   closure verdict at packaging time, `non_claims`). The same JSON is written to
///   `dst_dir/manifest.json`.
///
/// # Returns
/// - `ASSAY_OK`: the package was written.
/// - `ASSAY_ERR_INVALID_ARGUMENT`: a path is NULL or not UTF-8, or `src_dir` does not exist or is
///   not a directory (nothing is created).
/// - `ASSAY_ERR_IO`: a capture file was refused (not a regular file, over its bound), the
///   destination exists, or a write failed.
/// - `ASSAY_ERR_PANIC`: an internal panic was caught.
///
/// On any status but `ASSAY_OK`, `assay_last_error()` describes the failure.
///
/// # Memory and lifetimes
/// The paths are only read during the call. When `manifest_json` is not NULL, `*manifest_json`
/// is set to NULL first and, on `ASSAY_OK` only, to a new string that the caller must release
/// with `assay_string_free`.
///
/// # Safety
/// `src_dir` and `dst_dir` are NULL or valid NUL-terminated strings; `manifest_json` is NULL or
/// valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn assay_package_capture(
    src_dir: *const c_char,
    dst_dir: *const c_char,
    manifest_json: *mut *mut c_char,
) -> AssayStatus {
    boundary::entry(|| {
        // SAFETY: the caller passes NULL or a pointer valid for writing one pointer (Safety).
        unsafe { strings::clear_out(manifest_json) };
        // SAFETY: the caller passes NULL or NUL-terminated strings valid during the call.
        let paths = unsafe {
            strings::str_arg(src_dir, "src_dir")
                .and_then(|src| Ok((src, strings::str_arg(dst_dir, "dst_dir")?)))
        };
        let (src, dst) = match paths {
            Ok(paths) => paths,
            Err(e) => return finish(Err(e)),
        };
        finish(
            core_api::package_capture(Path::new(src), Path::new(dst), &[])
                // SAFETY: as for clear_out above.
                .and_then(|manifest| unsafe { store_json(manifest_json, &manifest, "manifest") }),
        )
    })
}

/// Returns the message of the last failed call on this thread, or NULL.
///
/// # Returns
/// A NUL-terminated, single-line UTF-8 message describing why the last `assay_*` call on this
/// thread did not return `ASSAY_OK` (it names the option or path involved), or NULL when that
/// call succeeded or no call was made yet. Each thread has its own message.
///
/// # Memory and lifetimes
/// The string belongs to the library. It stays valid until the next call of any other `assay_*`
/// function on this thread (every other function forgets the message when it starts); copy it
/// to keep it. Do not free it.
#[unsafe(no_mangle)]
pub extern "C" fn assay_last_error() -> *const c_char {
    boundary::guard(last_error::as_ptr)
}

/// Frees a string returned by `assay_wrap_session`, `assay_read_capture` or
/// `assay_package_capture`.
///
/// # Parameters
/// - `s`: a string returned through one of those functions' `char **` outputs, or NULL (which
///   does nothing).
///
/// # Memory and lifetimes
/// After the call `s` is invalid. Freeing the same string twice, freeing a string from
/// `assay_version` or `assay_last_error`, or freeing memory from any other allocator is undefined
/// behaviour. Never pass these strings to `free(3)`.
///
/// # Safety
/// `s` is NULL or a string returned by this library that has not been freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn assay_string_free(s: *mut c_char) {
    // SAFETY: the caller guarantees `s` is NULL or an unfreed string from `strings::put_out`.
    boundary::entry(|| unsafe { strings::free(s) })
}

#[cfg(test)]
mod tests;
