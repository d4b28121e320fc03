//! `forward_signals` (SPEC §3 item 9, §3.1a): SIGTERM, SIGINT and SIGHUP received by the process
//! while a session runs are sent on to that session's server, which then ends (or not) on its
//! own; the session ends through its normal path and records what it observed.
//!
//! - **Installed only when asked**, when the first forwarding session of the process starts, with
//!   `SA_ONSTACK` (Go hosts via cgo require it) and `SA_RESTART`; the dispositions in place before
//!   are restored when the last one ends — each only if it still is this handler (SPEC §3.1b): a
//!   handler the host installed while sessions ran stays. While installed the three signals go
//!   to the servers, not to the host's handlers.
//! - **At most [`SLOTS`] sessions at once** (1024) per process; one more is refused with
//!   [`InstallError::Full`] (a configuration error of `forward_signals`), before its server
//!   starts.
//! - **One handle per server.** Each session has a slot naming its server's pidfd (or, on kernels
//!   before 5.3, its PID). A pidfd can never reach a process that reused the server's PID. The
//!   PID is cleared before the server is reaped (child/process.rs), and a pidfd number is cleared
//!   — and every handler that may have read it has finished ([`quiesce`]) — before the descriptor
//!   is closed, so a handler never signals a descriptor number that now names something else.
//! - **Fork-safe.** In a process forked from the host while a session runs (`os.fork`,
//!   `multiprocessing`), the handler puts back the dispositions that were in place before the
//!   session (the host's handlers or the defaults) and raises the signal again, so the child
//!   behaves as if the wrapper had never been there: it never signals the parent's server. The
//!   registry's lock is fork-safe too (a lock held at the moment of a fork is taken over by the
//!   child, where its holder does not exist).
//!
//! The handler is async-signal-safe: atomics, `getpid`, and one `pidfd_send_signal` (or `kill`)
//! per session; in a forked child `sigaction` and `raise`. It preserves `errno`.

use std::cell::UnsafeCell;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering::SeqCst};

/// How many sessions of one process can forward signals at the same time (documented in the C
/// header and the Python docs: the session after them is a configuration error).
pub(crate) const SLOTS: usize = 1024;

/// The forwarded signals.
const FORWARDED: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

static CLAIMED: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];
static TARGET_PIDFD: [AtomicI32; SLOTS] = [const { AtomicI32::new(-1) }; SLOTS];
static TARGET_PID: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];
/// The server's process group, when the session aims at the whole group (SPEC §3 item 9): the
/// signal goes to every process of it. Cleared before the group's watchdog, which keeps the
/// number in use, is retired (child/group.rs).
static TARGET_PGID: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];
static RECEIVED: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];

/// The process that installed the handler. A handler running in any other process runs in a
/// fork of it.
static OWNER: AtomicI32 = AtomicI32::new(0);
/// Forwarding sessions of [`OWNER`] (changed under [`lock`]).
static SESSIONS: AtomicUsize = AtomicUsize::new(0);

/// Handlers in progress, counted per epoch (see [`quiesce`]).
static EPOCH: AtomicUsize = AtomicUsize::new(0);
static ACTIVE: [AtomicUsize; 2] = [const { AtomicUsize::new(0) }; 2];

/// The dispositions in place before the handler was installed, one per [`FORWARDED`] signal.
/// Written under [`lock`] before the handler is installed and never while it is; read only by a
/// handler running in a forked child (its own copy of this memory).
struct Previous(UnsafeCell<[MaybeUninit<libc::sigaction>; 3]>);

// SAFETY: see the type's documentation: writes happen under the registry lock while no handler
// of ours is installed in this process, so no read can race with them.
unsafe impl Sync for Previous {}

static PREVIOUS: Previous = Previous(UnsafeCell::new([MaybeUninit::zeroed(); 3]));
/// [`PREVIOUS`] holds what a fork must restore.
static PREVIOUS_SET: AtomicBool = AtomicBool::new(false);

/// The registry lock: the PID of the process whose thread holds it, 0 when free.
static HOLDER: AtomicI32 = AtomicI32::new(0);

fn getpid() -> libc::pid_t {
    // SAFETY: getpid has no preconditions and is async-signal-safe.
    unsafe { libc::getpid() }
}

/// Holds the registry lock until dropped.
struct Locked;

/// Takes the registry lock. A value left by another process (the lock was held when this
/// process was forked from it, and its holder does not exist here) is taken over.
fn lock() -> Locked {
    let me = getpid();
    loop {
        match HOLDER.compare_exchange(0, me, SeqCst, SeqCst) {
            Ok(_) => return Locked,
            Err(holder) if holder != me => {
                if HOLDER.compare_exchange(holder, me, SeqCst, SeqCst).is_ok() {
                    return Locked;
                }
            }
            Err(_) => std::thread::yield_now(),
        }
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        HOLDER.store(0, SeqCst);
    }
}

fn send(slot: usize, sig: libc::c_int) {
    let pgid = TARGET_PGID[slot].load(SeqCst);
    if pgid > 1 {
        // SAFETY: kill(2) is async-signal-safe and only reads its arguments; the group's number
        // stays the server's while it is set (its watchdog, an unreaped child of ours, is a
        // member until after the number is cleared).
        unsafe {
            libc::kill(-pgid, sig);
        }
        return;
    }
    let fd = TARGET_PIDFD[slot].load(SeqCst);
    if fd >= 0 {
        // SAFETY: pidfd_send_signal only reads its arguments; a NULL siginfo sends the signal as
        // kill(2) would. The number names the server's pidfd: it is cleared, and this handler
        // waited for (`quiesce`), before the descriptor is closed.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd,
                sig,
                std::ptr::null::<libc::siginfo_t>(),
                0u32,
            );
        }
        return;
    }
    let pid = TARGET_PID[slot].load(SeqCst);
    if pid > 0 {
        // SAFETY: kill(2) is async-signal-safe and only reads its arguments; the PID is cleared
        // before the server is reaped, so it is still the server's.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// Waits until every handler that may have read a target before it was cleared has finished.
/// Handlers count themselves in the current epoch; this moves the epoch on and waits for the
/// count of the one before to reach zero. A handler that starts later reads the cleared target.
fn quiesce() {
    let old = EPOCH.fetch_add(1, SeqCst) & 1;
    while ACTIVE[old].load(SeqCst) != 0 {
        std::thread::yield_now();
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    // SAFETY: __errno_location returns this thread's errno slot; it is saved and restored so
    // the interrupted code never sees the handler's system calls.
    let saved = unsafe { *libc::__errno_location() };
    if getpid() == OWNER.load(SeqCst) {
        let epoch = EPOCH.load(SeqCst) & 1;
        ACTIVE[epoch].fetch_add(1, SeqCst);
        for slot in 0..SLOTS {
            if CLAIMED[slot].load(SeqCst) {
                RECEIVED[slot].store(sig, SeqCst);
                send(slot, sig);
            }
        }
        ACTIVE[epoch].fetch_sub(1, SeqCst);
    } else {
        as_if_never_installed(sig);
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = saved };
}

/// In a process forked from the host: the dispositions from before the session come back, and
/// `sig` is raised again. It is blocked while this handler runs, so it is delivered (to the
/// host's handler, or with its default action) as soon as the handler returns.
fn as_if_never_installed(sig: libc::c_int) {
    let previous = PREVIOUS.0.get().cast::<libc::sigaction>();
    for (i, s) in FORWARDED.iter().enumerate() {
        // SAFETY: PREVIOUS_SET says the entries hold what sigaction returned for each signal;
        // otherwise a zeroed sigaction is SIG_DFL. sigaction is async-signal-safe and changes
        // only this process's dispositions.
        unsafe {
            if PREVIOUS_SET.load(SeqCst) {
                libc::sigaction(*s, previous.add(i), std::ptr::null_mut());
            } else {
                let default: libc::sigaction = std::mem::zeroed();
                libc::sigaction(*s, &default, std::ptr::null_mut());
            }
        }
    }
    // SAFETY: raise is async-signal-safe.
    unsafe { libc::raise(sig) };
}

/// A claimed slot; released (targets cleared, handlers quiesced) when the last holder drops it:
/// the session's [`Forwarding`] and the server process's [`ForwardTarget`].
struct Claim {
    slot: usize,
}

impl Claim {
    fn clear_target(&self) {
        TARGET_PGID[self.slot].store(0, SeqCst);
        TARGET_PIDFD[self.slot].store(-1, SeqCst);
        TARGET_PID[self.slot].store(0, SeqCst);
        quiesce();
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.clear_target();
        RECEIVED[self.slot].store(0, SeqCst);
        CLAIMED[self.slot].store(false, SeqCst);
    }
}

/// Where one session's forwarded signals go: held by the server's process handle, which aims it
/// at the server and clears it before the server is reaped and before its pidfd is closed.
pub(crate) struct ForwardTarget {
    claim: Arc<Claim>,
}

impl ForwardTarget {
    /// Points the forwarding at the server (`pidfd`, or `pid` where there is none), and forwards
    /// a signal that arrived before it had a target.
    ///
    /// With `pgid` the signals go to the server's whole process group (SPEC §3 item 9), until
    /// [`clear_group`](Self::clear_group); the leader's handle is the target after that.
    pub(crate) fn aim(&self, pidfd: Option<RawFd>, pid: libc::pid_t, pgid: Option<libc::pid_t>) {
        let slot = self.claim.slot;
        match pidfd {
            Some(fd) => TARGET_PIDFD[slot].store(fd, SeqCst),
            None => TARGET_PID[slot].store(pid, SeqCst),
        }
        if let Some(pgid) = pgid {
            TARGET_PGID[slot].store(pgid, SeqCst);
        }
        let early = RECEIVED[slot].load(SeqCst);
        if early != 0 {
            send(slot, early);
        }
    }

    /// No signal goes to the server any more; returns once no handler can still be using the
    /// target (so its pidfd may be closed, or its PID reaped).
    pub(crate) fn clear(&self) {
        self.claim.clear_target();
    }

    /// Signals go to the leader's handle only from here on; returns once no handler can still
    /// be using the group's number (so the process that keeps it in use may be retired).
    pub(crate) fn clear_group(&self) {
        TARGET_PGID[self.claim.slot].store(0, SeqCst);
        quiesce();
    }
}

/// Why forwarding could not be installed for a session.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InstallError {
    /// Every slot is taken by a running session.
    #[error(
        "at most {SLOTS} sessions of one process can forward signals at the same time; wait for one to end, or start this one without forward_signals"
    )]
    Full,
    /// A `sigaction` call failed.
    #[error("{0}")]
    Os(io::Error),
}

/// One session's forwarding; dropping it uninstalls the handler when it was the last session
/// using it (the slot itself is released once the server's handle is gone too).
pub(crate) struct Forwarding {
    claim: Arc<Claim>,
}

impl Forwarding {
    /// Claims a slot and installs the handler if no other session of this process has. Called
    /// before spawn, so a signal that arrives while the server starts is forwarded once the
    /// server exists ([`ForwardTarget::aim`]).
    pub(crate) fn install() -> Result<Self, InstallError> {
        let _locked = lock();
        let me = getpid();
        let owner = OWNER.load(SeqCst);
        if owner == 0 {
            // First use in a process that never installed (OWNER is set, to a non-zero PID, by
            // every install and copied by a fork): the registry holds its initial values, so
            // its 5,120 atomics are not stored again (issue 50: ~40 µs of every start-up).
            OWNER.store(me, SeqCst);
        } else if owner != me {
            // A fork of a process that used it: the sessions and slots of the parent do not
            // exist here.
            SESSIONS.store(0, SeqCst);
            for slot in 0..SLOTS {
                TARGET_PIDFD[slot].store(-1, SeqCst);
                TARGET_PID[slot].store(0, SeqCst);
                TARGET_PGID[slot].store(0, SeqCst);
                RECEIVED[slot].store(0, SeqCst);
                CLAIMED[slot].store(false, SeqCst);
            }
            OWNER.store(me, SeqCst);
        }
        let slot = (0..SLOTS)
            .find(|&i| {
                CLAIMED[i]
                    .compare_exchange(false, true, SeqCst, SeqCst)
                    .is_ok()
            })
            .ok_or(InstallError::Full)?;
        RECEIVED[slot].store(0, SeqCst);
        let claim = Arc::new(Claim { slot });
        if SESSIONS.load(SeqCst) == 0 {
            install_handler().map_err(InstallError::Os)?;
        }
        SESSIONS.fetch_add(1, SeqCst);
        Ok(Self { claim })
    }

    /// The target the server's process handle aims at the server.
    pub(crate) fn target(&self) -> ForwardTarget {
        ForwardTarget {
            claim: self.claim.clone(),
        }
    }

    /// The last forwarded signal, if any arrived.
    pub(crate) fn received(&self) -> Option<i32> {
        received(&self.claim)
    }

    /// A handle the session's end watches: whether a signal was forwarded (SPEC §3 item 9: the
    /// session then ends).
    pub(crate) fn probe(&self) -> SignalProbe {
        SignalProbe {
            claim: self.claim.clone(),
        }
    }
}

/// Whether a forwarded signal arrived in one session (see [`Forwarding::probe`]).
pub(crate) struct SignalProbe {
    claim: Arc<Claim>,
}

impl SignalProbe {
    /// The last forwarded signal, if any arrived.
    pub(crate) fn received(&self) -> Option<i32> {
        received(&self.claim)
    }
}

fn received(claim: &Claim) -> Option<i32> {
    match RECEIVED[claim.slot].load(SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Records the current dispositions in [`PREVIOUS`] and installs [`on_signal`] for the three
/// signals. A disposition that already is ours (inherited from the process this one was forked
/// from) keeps the record made there. Called under the lock with no session installed.
fn install_handler() -> io::Result<()> {
    let previous = PREVIOUS.0.get().cast::<libc::sigaction>();
    let ours = our_action();
    for (i, &sig) in FORWARDED.iter().enumerate() {
        // SAFETY: sigaction with a NULL new action only reads the current one into `current`;
        // PREVIOUS is written under the lock while our handler is not installed in this process
        // (see `Previous`).
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut current) != 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::other(format!(
                    "forward_signals: cannot read the disposition of signal {sig}: {e}"
                )));
            }
            if current.sa_sigaction != ours.sa_sigaction {
                previous.add(i).write(current);
            }
        }
    }
    PREVIOUS_SET.store(true, SeqCst);
    for (i, &sig) in FORWARDED.iter().enumerate() {
        // SAFETY: installs an async-signal-safe handler (see `on_signal`); the previous action is
        // recorded in PREVIOUS and restored by `restore`.
        if unsafe { libc::sigaction(sig, &ours, std::ptr::null_mut()) } != 0 {
            let e = io::Error::last_os_error();
            restore(i);
            return Err(io::Error::other(format!(
                "forward_signals: cannot handle signal {sig}: {e}"
            )));
        }
    }
    Ok(())
}

fn our_action() -> libc::sigaction {
    // SAFETY: a zeroed sigaction is a valid value; the fields set below make it our handler, with
    // the three forwarded signals blocked while it runs.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART | libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        for sig in FORWARDED {
            libc::sigaddset(&mut action.sa_mask, sig);
        }
        action
    }
}

/// Restores the recorded dispositions of the first `count` forwarded signals, each only if it
/// still is [`on_signal`] (compare before restore, SPEC §3.1b): a disposition the host set while
/// the handler was installed is the host's now and stays.
fn restore(count: usize) {
    let previous = PREVIOUS.0.get().cast::<libc::sigaction>();
    let ours = our_action().sa_sigaction;
    for (i, &sig) in FORWARDED.iter().enumerate().take(count) {
        // SAFETY: sigaction with a NULL new action only reads the current one into `current`;
        // the restore writes exactly the action recorded for this signal.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut current) != 0
                || current.sa_sigaction != ours
            {
                continue;
            }
            libc::sigaction(sig, previous.add(i), std::ptr::null_mut());
        }
    }
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        let _locked = lock();
        if OWNER.load(SeqCst) != getpid() {
            return;
        }
        let left = SESSIONS.load(SeqCst).saturating_sub(1);
        SESSIONS.store(left, SeqCst);
        if left == 0 {
            restore(FORWARDED.len());
        }
    }
}
