//! The spawn against real processes, by both methods (the shared-memory clone and the fork): what the server inherits
//! (descriptors, signal dispositions, signal mask), the `PATH` search and the exec errors.
//!
//! Tests that change process-wide state (signal handlers, closed standard descriptors, `PATH`)
//! run in a process of their own: the outer test starts this test binary again on one
//! `#[ignore]`d inner test, which reports success by writing a marker file.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use nix::sys::signal::{SigSet, Signal};

use super::clone::Method;
use super::spawn::spawn_with;
use super::{Spawned, cleanup};
use crate::error::ErrorKind;
use crate::outcome::Termination;

const MODES: [Method; 2] = [Method::Vfork, Method::Fork];

/// The environment variable naming the marker file of an inner test.
const MARKER: &str = "ASSAY_SPAWN_TEST_MARKER";

fn strings(argv: &[&str]) -> Vec<String> {
    argv.iter().map(|s| (*s).to_string()).collect()
}

fn start(argv: &[&str], stderr: Option<File>, memory: Method) -> Spawned {
    spawn_with(&strings(argv), stderr, &SigSet::empty(), memory).unwrap()
}

/// Runs `argv` with no input and returns its standard output; the child exits 0.
fn output_of(argv: &[&str], memory: Method) -> String {
    let mut s = start(argv, None, memory);
    drop(s.stdin);
    let mut out = String::new();
    s.stdout.read_to_string(&mut out).unwrap();
    let c = cleanup(&mut s.child);
    assert_eq!(
        c.status.termination,
        Termination::Exited,
        "{memory:?}: {out}"
    );
    assert_eq!(c.status.exit_code, Some(0), "{memory:?}: {out}");
    out
}

/// The value of a `/proc/PID/status` line such as `SigIgn:`, as a bit set.
fn status_bits(status: &str, key: &str) -> u64 {
    let line = status
        .lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("no {key} in {status}"));
    u64::from_str_radix(line[key.len()..].trim(), 16).unwrap()
}

fn bit(sig: libc::c_int) -> u64 {
    1 << (sig - 1)
}

/// Prints which of descriptors 0–9 and `extra` the shell has open (a builtin test: the listing
/// opens no descriptor of its own).
fn fd_listing_script(extra: &str) -> String {
    format!(
        "for n in 0 1 2 3 4 5 6 7 8 9 {extra}; do [ -e /proc/self/fd/$n ] && printf '%s ' $n; done; true"
    )
}

#[test]
fn a_host_descriptor_without_cloexec_is_not_inherited() {
    // SAFETY: a plain open (no O_CLOEXEC, as a C host would leave it) and a duplicate of it.
    let fd = unsafe {
        let fd = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY);
        assert!(fd >= 0);
        let high = libc::fcntl(fd, libc::F_DUPFD, 100);
        libc::close(fd);
        assert!(high >= 100);
        OwnedFd::from_raw_fd(high)
    };
    let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
    // SAFETY: F_GETFD only reads the descriptor's flags.
    assert_eq!(
        unsafe { libc::fcntl(raw, libc::F_GETFD) } & libc::FD_CLOEXEC,
        0
    );
    for memory in MODES {
        let out = output_of(
            &["/bin/sh", "-c", &fd_listing_script(&raw.to_string())],
            memory,
        );
        assert_eq!(out, "0 1 2 ", "{memory:?}");
    }
}

#[test]
fn the_child_starts_with_the_host_threads_original_mask() {
    // A thread of its own: its mask dies with it.
    std::thread::spawn(|| {
        let mut host = SigSet::empty();
        host.add(Signal::SIGUSR2);
        host.thread_block().unwrap();
        let mask = crate::sys::signals::ThreadMask::block_write_signals();
        // At spawn time this thread blocks SIGPIPE and SIGXFSZ too; the child must not.
        let now = SigSet::thread_get_mask().unwrap();
        assert!(now.contains(Signal::SIGPIPE) && now.contains(Signal::SIGUSR2));
        for memory in MODES {
            let mut s = spawn_with(
                &strings(&["grep", "^SigBlk:", "/proc/self/status"]),
                None,
                &mask.original(),
                memory,
            )
            .unwrap();
            drop(s.stdin);
            let mut out = String::new();
            s.stdout.read_to_string(&mut out).unwrap();
            let _ = cleanup(&mut s.child);
            assert_eq!(
                status_bits(&out, "SigBlk:"),
                bit(libc::SIGUSR2),
                "{memory:?}"
            );
        }
        // The spawn leaves the thread's own mask as it found it.
        assert_eq!(SigSet::thread_get_mask().unwrap(), now);
    })
    .join()
    .unwrap();
}

/// SPEC §3.1a: the handle is a pidfd from birth, whichever way the child was created (this
/// machine's kernel has pidfds; the PID fallback runs under tests/fixtures/refuse_spawn.c).
#[test]
fn every_spawn_has_a_pidfd() {
    for memory in MODES {
        let mut s = start(&["/bin/sh", "-c", "exit 3"], None, memory);
        assert!(s.child.has_pidfd(), "{memory:?}");
        assert_eq!(s.method, memory);
        drop(s.stdin);
        assert_eq!(cleanup(&mut s.child).status.exit_code, Some(3));
    }
}

#[test]
fn a_bare_name_is_found_in_path() {
    for memory in MODES {
        assert_eq!(output_of(&["sh", "-c", "echo found"], memory), "found\n");
    }
}

fn executable(path: &Path, text: &[u8], mode: u32) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn spawn_error(argv: &[&str], memory: Method) -> crate::error::Error {
    spawn_with(&strings(argv), None, &SigSet::empty(), memory)
        .err()
        .unwrap_or_else(|| panic!("{argv:?} started ({memory:?})"))
}

#[test]
fn exec_errors_map_to_not_found_and_not_executable() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).display().to_string();
    executable(&dir.path().join("readonly"), b"#!/bin/sh\necho hi\n", 0o644);
    // No `#!` line, no known format: ENOEXEC, not handed to /bin/sh (docs/decisions.md).
    executable(&dir.path().join("shebangless"), b"echo hi\n", 0o755);
    executable(
        &dir.path().join("garbage"),
        &[&[0u8, 1, 2, 3][..], b" not a program"].concat(),
        0o755,
    );
    for memory in MODES {
        let cases = [
            (d("missing"), ErrorKind::CommandNotFound, 127),
            (
                "missing-assay-command-x".to_string(),
                ErrorKind::CommandNotFound,
                127,
            ),
            (String::new(), ErrorKind::CommandNotFound, 127),
            (d("readonly"), ErrorKind::CommandNotExecutable, 126),
            (d(""), ErrorKind::CommandNotExecutable, 126),
            (d("shebangless"), ErrorKind::CommandNotExecutable, 126),
            (d("garbage"), ErrorKind::CommandNotExecutable, 126),
        ];
        for (program, kind, status) in cases {
            let e = spawn_error(&[&program], memory);
            assert_eq!(e.kind(), kind, "{program:?} ({memory:?}): {e}");
            assert_eq!(e.exit_status(), status, "{program:?}");
        }
        // After a failed exec the spawn still works (nothing left half-done).
        assert_eq!(output_of(&["/bin/sh", "-c", "echo ok"], memory), "ok\n");
    }
}

/// Starts this test binary on the inner test `name` with `env`, and checks that it passed.
fn run_isolated(name: &str, env: &[(&str, &str)]) {
    run_isolated_test(&format!("sys::child::spawn_tests::{name}"), env);
}

/// Starts this test binary on the inner test at `path` (e.g. `sys::signals::forward_tests::inner`)
/// with `env`, and checks that it passed.
pub(crate) fn run_isolated_test(path: &str, env: &[(&str, &str)]) {
    let name = path;
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("passed");
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            name,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(MARKER, &marker)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let report = format!(
        "{name}: {:?} {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        std::fs::read_to_string(&marker).ok(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{report}");
    assert_eq!(
        std::fs::read_to_string(&marker).ok().as_deref(),
        Some("passed"),
        "{report}"
    );
}

/// The marker file of an inner test, or `None` when it was not started by [`run_isolated`].
pub(crate) fn inner_marker() -> Option<std::path::PathBuf> {
    std::env::var_os(MARKER).map(std::path::PathBuf::from)
}

/// Reports a failure of an inner test through its marker file too (its standard descriptors
/// may be closed).
pub(crate) fn report_panics_to(marker: &Path) {
    let marker = marker.to_path_buf();
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = std::fs::write(&marker, format!("failed: {info}"));
        default(info);
    }));
}

pub(crate) fn mark_passed(marker: &Path) {
    std::fs::write(marker, "passed").unwrap();
}

extern "C" fn host_handler(_: libc::c_int) {}

#[test]
fn a_host_with_handlers_and_ignored_sigpipe_starts_the_server_with_default_dispositions() {
    run_isolated("inner_dispositions", &[]);
}

#[test]
#[ignore = "runs in a process of its own, started by the test above it"]
fn inner_dispositions() {
    let Some(marker) = inner_marker() else { return };
    report_panics_to(&marker);
    // SAFETY: handlers that do nothing, and SIG_IGN; this process runs this test only.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = host_handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
        for sig in [libc::SIGTERM, libc::SIGUSR1, libc::SIGCHLD] {
            assert_eq!(libc::sigaction(sig, &action, std::ptr::null_mut()), 0);
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
    }
    let own = std::fs::read_to_string("/proc/self/status").unwrap();
    let host_ignored = status_bits(&own, "SigIgn:");
    assert_ne!(host_ignored & bit(libc::SIGPIPE), 0);
    assert_ne!(host_ignored & bit(libc::SIGXFSZ), 0);
    assert_ne!(status_bits(&own, "SigCgt:") & bit(libc::SIGUSR1), 0);
    for memory in MODES {
        // cat installs no handler of its own (grep does: SIGSEGV).
        let out = output_of(&["cat", "/proc/self/status"], memory);
        // No handler survives; ignored signals stay ignored (SIGHUP: nohup), except SIGPIPE and
        // SIGXFSZ, as Python's subprocess does (SPEC §3.1b).
        assert_eq!(status_bits(&out, "SigCgt:"), 0, "{memory:?}: {out}");
        assert_eq!(
            status_bits(&out, "SigIgn:"),
            host_ignored & !bit(libc::SIGPIPE) & !bit(libc::SIGXFSZ),
            "{memory:?}: {out}"
        );
        // A server that writes to a pipe nobody reads dies of SIGPIPE, as it would started by
        // a shell. (It writes once its input ends, after the reading end is gone.)
        let s = start(&["/bin/sh", "-c", "read x; exec echo lost"], None, memory);
        let Spawned {
            mut child,
            stdin,
            stdout,
            ..
        } = s;
        drop(stdout);
        drop(stdin);
        let c = cleanup(&mut child);
        assert_eq!(c.status.termination, Termination::Signaled, "{memory:?}");
        assert_eq!(c.status.signal, Some(libc::SIGPIPE), "{memory:?}");
    }
    mark_passed(&marker);
}

#[test]
fn a_host_with_descriptors_0_1_2_closed_gives_the_server_working_pipes() {
    run_isolated("inner_closed_standard_descriptors", &[]);
}

#[test]
#[ignore = "runs in a process of its own, started by the test above it"]
fn inner_closed_standard_descriptors() {
    let Some(marker) = inner_marker() else { return };
    report_panics_to(&marker);
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: closes this process's standard descriptors; this process runs this test only
    // (the test harness's output is lost, the marker file reports the result).
    unsafe {
        libc::close(0);
        libc::close(1);
        libc::close(2);
    }
    for memory in MODES {
        // With 0–2 free the stderr sink lands on 0 and the stdin pipe on 1 and 2 — or, without
        // the sink, the stdin pipe on 0 and 1.
        for with_sink in [true, false] {
            let sink_path = dir.path().join(format!("stderr-{memory:?}-{with_sink}"));
            let sink = with_sink.then(|| File::create(&sink_path).unwrap());
            let to_stderr = if with_sink {
                "echo \"err:$line\" >&2;"
            } else {
                ""
            };
            let script = format!(
                "read line; echo \"got:$line\"; {to_stderr} {}",
                fd_listing_script("")
            );
            let mut s = start(&["/bin/sh", "-c", &script], sink, memory);
            s.stdin.write_all(b"hi\n").unwrap();
            drop(s.stdin);
            let mut out = String::new();
            s.stdout.read_to_string(&mut out).unwrap();
            let c = cleanup(&mut s.child);
            assert_eq!(c.status.exit_code, Some(0));
            if with_sink {
                assert_eq!(out, "got:hi\n0 1 2 ", "{memory:?}");
                assert_eq!(std::fs::read_to_string(&sink_path).unwrap(), "err:hi\n");
            } else {
                // The host has no descriptor 2, so neither has the server.
                assert_eq!(out, "got:hi\n0 1 ", "{memory:?}");
            }
        }
    }
    mark_passed(&marker);
}

#[test]
fn path_search_skips_what_cannot_run_and_reaps_failed_children() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    // In a: not executable (EACCES: the search goes on), and a file of unknown format
    // (ENOEXEC: the search stops there, as posix_spawnp's does).
    executable(&a.join("srv"), b"#!/bin/sh\necho a\n", 0o644);
    executable(&a.join("only-a"), b"#!/bin/sh\necho a\n", 0o644);
    executable(&a.join("unknown"), b"echo a\n", 0o755);
    executable(&b.join("srv"), b"#!/bin/sh\necho b\n", 0o755);
    executable(&b.join("unknown"), b"#!/bin/sh\necho b\n", 0o755);
    let path = format!("{}:/nonexistent-dir:{}", a.display(), b.display());
    run_isolated("inner_path_search", &[("PATH", &path)]);
}

#[test]
#[ignore = "runs in a process of its own, started by the test above it"]
fn inner_path_search() {
    let Some(marker) = inner_marker() else { return };
    report_panics_to(&marker);
    for memory in MODES {
        assert_eq!(output_of(&["srv"], memory), "b\n", "{memory:?}");
        let cases = [
            ("only-a", ErrorKind::CommandNotExecutable),
            ("unknown", ErrorKind::CommandNotExecutable),
            ("nowhere", ErrorKind::CommandNotFound),
        ];
        for (name, kind) in cases {
            assert_eq!(
                spawn_error(&[name], memory).kind(),
                kind,
                "{name} {memory:?}"
            );
        }
    }
    // Every child is reaped: failed ones by the spawn, the others by the cleanup.
    let mut raw = 0;
    // SAFETY: waitpid for any child, without blocking; writes only `raw`.
    let r = unsafe { libc::waitpid(-1, &mut raw, libc::WNOHANG) };
    assert_eq!(r, -1);
    assert_eq!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::ECHILD)
    );
    // A host that ignores SIGCHLD: the kernel reaps the failed child, and the spawn still
    // returns its error without waiting forever.
    // SAFETY: a disposition change in this process, which runs this test only.
    unsafe { libc::signal(libc::SIGCHLD, libc::SIG_IGN) };
    for memory in MODES {
        assert_eq!(
            spawn_error(&["nowhere"], memory).kind(),
            ErrorKind::CommandNotFound
        );
    }
    mark_passed(&marker);
}
