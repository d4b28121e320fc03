//! The forwarding handler against real processes and real signals, in a process of its own
//! (the handler is process-wide): a pidfd number the handler may be using is never closed under
//! it, so a signal never reaches a process whose pidfd got the number afterwards.

use std::time::{Duration, Instant};

use nix::sys::signal::SigSet;

use super::Forwarding;
use crate::sys::child::spawn_tests::{
    inner_marker, mark_passed, report_panics_to, run_isolated_test,
};
use crate::sys::child::{cleanup, spawn};

/// A stderr sink that holds no pipe of the test harness open.
fn null() -> Option<std::fs::File> {
    Some(std::fs::File::create("/dev/null").unwrap())
}

#[test]
fn a_closed_target_is_never_signalled_under_a_storm_of_signals() {
    run_isolated_test("sys::signals::forward_tests::inner_storm", &[]);
}

#[test]
#[ignore = "runs in a process of its own, started by the test above it"]
fn inner_storm() {
    let Some(marker) = inner_marker() else { return };
    report_panics_to(&marker);
    let forwarding = Forwarding::install().unwrap();
    // Installed with SA_ONSTACK (Go hosts via cgo require it) and SA_RESTART.
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: reads the current disposition only.
        let flags = unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            assert_eq!(libc::sigaction(sig, std::ptr::null(), &mut old), 0);
            old.sa_flags
        };
        assert_ne!(flags & libc::SA_ONSTACK, 0, "signal {sig}");
        assert_ne!(flags & libc::SA_RESTART, 0, "signal {sig}");
    }
    let none = SigSet::empty();
    let argv = |s: &str| vec!["/bin/sh".to_string(), "-c".to_string(), s.to_string()];
    // SIGTERM to this process, as fast as it goes, while targets come and go.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let storm = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut sent = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // SAFETY: kill(2) to this very process; the forwarding handler is installed.
                unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
                sent += 1;
            }
            sent
        })
    };
    let mut victims = Vec::new();
    let started = Instant::now();
    for _ in 0..100 {
        // A server that survives the forwarded SIGTERMs; then its handle (and pidfd) go away...
        let mut server = spawn(
            &argv("trap '' TERM; echo ready; exec sleep 60"),
            null(),
            &none,
        )
        .unwrap();
        let mut ready = [0u8; 6];
        std::io::Read::read_exact(&mut server.stdout, &mut ready).unwrap();
        server.child.forward_signals_to(forwarding.target());
        // Not `thread::sleep`, which resumes with the kernel's remaining time under the storm
        // (see `child::nap`).
        let until = Instant::now() + Duration::from_millis(2);
        while Instant::now() < until {
            crate::sys::child::nap(Duration::from_millis(2));
        }
        let c = cleanup(&mut server.child);
        assert!(c.kill_requested);
        drop(server);
        // ...and a process that dies of SIGTERM gets a pidfd, likely with the same number.
        victims.push(spawn(&argv("sleep 60"), null(), &none).unwrap());
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let sent = storm.join().unwrap();
    assert!(sent > 100, "{sent} signals sent");
    assert!(forwarding.received() == Some(libc::SIGTERM));
    for v in &mut victims {
        let st = v.child.try_wait().unwrap();
        assert!(
            st.is_none(),
            "a process that was never a target got a signal: {st:?}"
        );
        let c = cleanup(&mut v.child);
        assert_eq!(c.status.signal, Some(libc::SIGKILL));
    }
    assert!(started.elapsed() < Duration::from_secs(60));
    drop(forwarding);
    mark_passed(&marker);
}

extern "C" fn host_handler(_: libc::c_int) {}

/// The disposition of `sig` (its handler address, `SIG_DFL` or `SIG_IGN`).
fn disposition(sig: libc::c_int) -> libc::sighandler_t {
    // SAFETY: reads the current disposition only.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        assert_eq!(libc::sigaction(sig, std::ptr::null(), &mut old), 0);
        old.sa_sigaction
    }
}

#[test]
fn a_handler_the_host_installs_during_a_session_stays_and_the_slots_have_a_documented_limit() {
    run_isolated_test(
        "sys::signals::forward_tests::inner_host_handler_and_limit",
        &[],
    );
}

#[test]
#[ignore = "runs in a process of its own, started by the test above it"]
fn inner_host_handler_and_limit() {
    let Some(marker) = inner_marker() else { return };
    report_panics_to(&marker);
    let host = host_handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SIGTERM: the host installs its handler mid-session; SIGINT: left alone (at its default,
    // set here: a test run started as a background job inherits SIGINT ignored); SIGHUP: ignored
    // by the host before the session.
    // SAFETY: SIG_DFL and SIG_IGN install no handler.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
    }
    let forwarding = Forwarding::install().unwrap();
    assert_ne!(disposition(libc::SIGTERM), libc::SIG_DFL);
    // SAFETY: a handler that does nothing.
    unsafe { libc::signal(libc::SIGTERM, host) };
    drop(forwarding);
    assert_eq!(disposition(libc::SIGTERM), host, "the host's handler stays");
    assert_eq!(disposition(libc::SIGINT), libc::SIG_DFL);
    assert_eq!(disposition(libc::SIGHUP), libc::SIG_IGN);

    // Every slot taken: one more session is refused as `Full` (a configuration error), and a
    // slot freed is usable again.
    let mut all: Vec<Forwarding> = (0..super::forward::SLOTS)
        .map(|_| Forwarding::install().unwrap())
        .collect();
    assert!(matches!(
        Forwarding::install(),
        Err(super::InstallError::Full)
    ));
    all.pop();
    let again = Forwarding::install().unwrap();
    drop(again);
    drop(all);
    // The host's handler, installed before these sessions, is back.
    assert_eq!(disposition(libc::SIGTERM), host);
    mark_passed(&marker);
}
