//! Descendants that leave the server's process group (SPEC §3 item 9): a server that
//! daemonizes (`setsid`, a double fork) is out of reach of the group kill. The `assay` command
//! line makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`), so every such process whose
//! parent ends is reparented to it instead of to init; at the end of the session it ends and
//! reaps them in the same window as the group.
//!
//! Only a process that asked for it here acts on orphans: it is then the subreaper *for its
//! sessions*, and every child it has after a session's leader and watchdog are reaped is a
//! descendant of that session's server (the command line runs one session and starts nothing
//! else). The C and Python libraries never change the host's subreaper state: a host's children
//! are its own (docs/decisions.md).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::group;

/// This process asked to be the subreaper of its sessions.
static SUBREAPER: AtomicBool = AtomicBool::new(false);

/// Makes this process a child subreaper on behalf of its sessions (the command line calls it at
/// start, before any session). Not for a library host: every child the process has when a
/// session ends is then taken for a descendant of that session's server and ended.
pub fn become_subreaper() -> io::Result<()> {
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) only changes an attribute of this process.
    let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    SUBREAPER.store(true, Ordering::SeqCst);
    Ok(())
}

/// Whether any child of this process exists (running or not yet reaped).
fn have_children() -> bool {
    loop {
        // SAFETY: a zeroed siginfo_t is valid; waitid writes into it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above; WNOWAIT leaves any status where it is.
        let r = unsafe {
            libc::waitid(
                libc::P_ALL,
                0,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return true;
        }
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return false;
        }
    }
}

/// Collects the status of every child that has ended.
fn reap_any() {
    loop {
        // SAFETY: as in `have_children`, without WNOWAIT: the status is collected.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let r = unsafe { libc::waitid(libc::P_ALL, 0, &mut info, libc::WEXITED | libc::WNOHANG) };
        if r != 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        // SAFETY: initialized by the successful waitid.
        if unsafe { info.si_pid() } == 0 {
            return;
        }
    }
}

/// In a subreaper of its sessions, after a session's leader and watchdog are reaped: ends
/// (SIGKILL) every child this process still has — descendants of the server that left its
/// group — and reaps them, until none is left or `deadline` passes. Returns how many were sent
/// the kill. Elsewhere does nothing.
///
/// A child's PID cannot be reused before this process reaps it, so signalling it by PID is
/// safe; the children of an ended one are reparented here and found on the next round.
pub(crate) fn end_all(deadline: Instant) -> usize {
    if !SUBREAPER.load(Ordering::SeqCst) {
        return 0;
    }
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    let mut ended = std::collections::HashSet::new();
    loop {
        reap_any();
        if !have_children() {
            break;
        }
        if let Some(all) = group::processes() {
            for p in all.iter().filter(|p| p.ppid == me && p.alive()) {
                if ended.insert(p.pid) {
                    // SAFETY: kill only reads its arguments; `p.pid` is our unreaped child.
                    unsafe { libc::kill(p.pid, libc::SIGKILL) };
                }
            }
        }
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        super::nap(Duration::from_millis(2).min(deadline - now));
    }
    ended.len()
}
