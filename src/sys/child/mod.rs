//! The server process (SPEC §3 item 3, §3.1, §3.1a, §3.2): spawn with piped stdin/stdout
//! (spawn.rs, clone.rs, in_child.rs), its handle (process.rs), observation of its status and the
//! bounded cleanup (preserving upstream #3419) here.
//!
//! The server is spawned with `clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD)`: the child borrows
//! the wrapper's memory until it execs, so the spawn copies no page table — in a host with a
//! large heap that is the difference between ~2 ms and ~100 ms plus a copy-on-write fault for
//! every page the host touches afterwards (bench/README.md, "Spawn"). When a sandbox or an
//! emulator refuses that clone (`EPERM`, `ENOSYS`, `EINVAL`), a plain fork runs the same child
//! code. The process handle is a pidfd from birth, used for every wait and kill (and by the
//! signal forwarding); only kernels before 5.3 fall back to the PID.
//!
//! Everything is prepared before the spawn (program.rs: argument vector, environment copy,
//! `PATH` candidates; the pipes; the child's stack). The calling thread blocks every signal
//! around it. Between spawn and exec the child (in_child.rs: async-signal-safe system calls
//! only, no allocation, no panic — enforced by lints), in this order:
//! - installs its pipe ends as descriptors 0 and 1 and the stderr sink as 2 (inherited when
//!   there is none), inheritable even where a descriptor already had its number;
//! - gives every signal that has a handler its default disposition (a handler of the host must
//!   never run in the child), and `SIGPIPE` its default unconditionally;
//! - asks the kernel for SIGKILL when the thread that spawned it dies (`PR_SET_PDEATHSIG`), and
//!   exits at once if the wrapper is already gone — the session's thread spawns it and lives
//!   until the session ends, so the server never outlives the wrapper, whatever ends it
//!   (SPEC §3 item 9);
//! - marks every descriptor from 3 up close-on-exec, visiting only descriptors that exist
//!   (`close_range`, or the entries of `/proc/self/fd`), so it inherits exactly its stdin,
//!   stdout and stderr — even descriptors a C host made without `FD_CLOEXEC` (SPEC §3 item 3);
//! - starts with the signal mask the host thread had before the session blocked `SIGPIPE` and
//!   `SIGXFSZ` for its own writes;
//! - execs the first candidate that runs, or writes `errno` to a close-on-exec error pipe and
//!   exits with 127; the parent reads that pipe to its end (end of file: the exec succeeded),
//!   reaps a failed child and returns the typed error (not found → 127, not executable → 126).
//!
//! Cleanup never blocks without bound: `try_wait`, then at most one kill attempt (SIGKILL), then
//! at most [`KILL_POLL_BOUND`] of polling. The bound applies to cleanup only, never to a live
//! tool call.

mod activity;
mod clone;
pub(crate) mod group;
mod in_child;
pub(crate) mod orphans;
mod process;
mod program;
mod spawn;
#[cfg(test)]
pub(crate) mod spawn_tests;
mod watchdog;
mod watchdog_code;

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::thread;
use std::time::{Duration, Instant};

use crate::outcome::{ChildStatus, Termination};

pub(crate) use activity::tree_cpu_ticks;
pub(crate) use clone::Method;
pub(crate) use process::ServerProcess;
pub(crate) use spawn::{Spawned, spawn};

/// How long cleanup polls for a status after the kill attempt (SPEC §3.1).
pub(crate) const KILL_POLL_BOUND: Duration = Duration::from_secs(2);
/// Polling interval after the kill attempt.
const KILL_POLL_INTERVAL: Duration = Duration::from_millis(10);
/// After both I/O workers finish, how long `try_wait` is retried (from 20 µs, doubling up to 2 ms)
/// before cleanup concludes there is no status. A child closes its stdout while exiting a few microseconds before the kernel makes
/// its exit status available; without this short grace a normally exiting child would routinely
/// be recorded with `assay_kill_requested: true`. It is a sequence of non-blocking `try_wait`
/// calls, so the cleanup stays bounded.
pub(crate) const EXIT_GRACE: Duration = Duration::from_millis(50);
/// [`EXIT_GRACE`] once the server's output has reached its end (its last holder closed it: the
/// server is exiting, or closed its output on purpose). A large process — a launcher's `node`
/// behind `npx`, the last holder of the pipe — closes its descriptors early in its exit and is
/// waitable only once its memory is torn down, which on two busy CPUs was seen to take longer
/// than 50 ms. The wait ends as soon as the status is there (it watches the pidfd), so only a
/// server that closed its output and keeps running waits this long for its kill; well inside the
/// 2 s after which MCP clients send SIGTERM.
pub(crate) const OUTPUT_CLOSED_EXIT_GRACE: Duration = Duration::from_millis(500);

/// Maps an OS exit status to the observed fields of SPEC §3.2.
pub(crate) fn observe(status: ExitStatus) -> ChildStatus {
    if let Some(code) = status.code() {
        ChildStatus {
            termination: Termination::Exited,
            exit_code: Some(code),
            signal: None,
            core_dumped: None,
        }
    } else if let Some(sig) = status.signal() {
        ChildStatus {
            termination: Termination::Signaled,
            exit_code: None,
            signal: Some(sig),
            core_dumped: Some(status.core_dumped()),
        }
    } else {
        ChildStatus::UNKNOWN
    }
}

/// What cleanup observed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cleanup {
    pub status: ChildStatus,
    /// The wrapper sent the group kill (SPEC §4.3 `assay_kill_requested`).
    pub kill_requested: bool,
    /// Processes of the server's group other than its leader (and the watchdog) still ran when
    /// the kill attempt was made (SPEC §4.3 `group_killed`).
    pub group_killed: bool,
    /// Processes that had left the server's group and were ended by the subreaper (the CLI).
    pub orphans_ended: usize,
    /// When the kill attempt was made (the start of the 2 s window), if it was.
    pub window_start: Instant,
}

/// What polling the child's status found.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Polled {
    /// The child's status.
    Status(ExitStatus),
    /// No status yet: the child is still running.
    Running,
    /// No status can ever be collected: someone else reaped the child (`ECHILD`, e.g. a host
    /// that ignores `SIGCHLD`). Its PID may already belong to another process.
    Unobservable,
}

/// Polls `try_wait` until a status arrives or `bound` passes: a brief look first, then
/// [`EndWaits`] from `first` doubling up to `every` (a child already exiting is seen at once,
/// and a long wait still costs few wake-ups).
pub(crate) fn poll_status(
    child: &mut ServerProcess,
    bound: Duration,
    first: Duration,
    every: Duration,
) -> Polled {
    let deadline = Instant::now() + bound;
    let mut waits = EndWaits::new(first, every);
    // A child that is already exiting becomes waitable within microseconds.
    spin_until(deadline, || !matches!(child.try_wait(), Ok(None)));
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Polled::Status(s),
            Ok(None) => {}
            // ECHILD and the like: no status can ever be observed.
            Err(_) => return Polled::Unobservable,
        }
        let now = Instant::now();
        if now >= deadline {
            return Polled::Running;
        }
        waits.wait(child.exit_fd(), deadline - now);
    }
}

/// The waits of a loop that looks for a process's end until its own deadline (the server's
/// status, the watchdog's end): each at most `first`, doubling up to `every`, on the process's
/// pidfd when there is one (it turns readable the moment the process has exited: the wake-up
/// is the event, not a nap that oversleeps it by the timer's slack), else a nap. Once the pidfd
/// said "exited" and the loop still found no end, it is not trusted again: naps keep the loop
/// from spinning on a readiness that never turns into an end.
pub(crate) struct EndWaits {
    interval: Duration,
    every: Duration,
    pidfd_said_exited: bool,
}

impl EndWaits {
    pub(crate) fn new(first: Duration, every: Duration) -> Self {
        Self {
            interval: first,
            every,
            pidfd_said_exited: false,
        }
    }

    /// Waits the next interval, never longer than `left`, or less when the process ends or a
    /// signal arrives: the caller looks again and loops on its own deadline.
    pub(crate) fn wait(&mut self, pidfd: Option<std::os::fd::BorrowedFd<'_>>, left: Duration) {
        let wait = self.interval.min(left);
        match pidfd {
            Some(fd) if !self.pidfd_said_exited => self.pidfd_said_exited = wait_readable(fd, wait),
            _ => nap(wait),
        }
        self.interval = (self.interval * 2).min(self.every);
    }
}

/// How long a wait for an end expected within microseconds (a process whose output just closed,
/// or that was just sent SIGKILL) keeps looking, giving up its CPU in between, before it sleeps:
/// on a virtual machine the wake-up of a sleeping thread was measured at ~100 µs, longer than
/// such an end takes (docs/decisions.md, "Start-up and shutdown without sleeps").
const SPIN: Duration = Duration::from_micros(100);

/// Looks at `done` until it holds, [`SPIN`] has passed or `deadline` has come, yielding the CPU
/// between looks (so the process being waited for can run here when the other CPUs are busy).
/// True when `done` held.
pub(crate) fn spin_until(deadline: Instant, mut done: impl FnMut() -> bool) -> bool {
    let until = (Instant::now() + SPIN).min(deadline);
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        thread::yield_now();
    }
}

/// Waits at most `at_most` for `fd` to turn readable (a pidfd does when its process has
/// exited), or for a signal to arrive. True when `fd` was readable.
fn wait_readable(fd: std::os::fd::BorrowedFd<'_>, at_most: Duration) -> bool {
    use nix::poll::{PollFd, PollFlags, ppoll};
    use nix::sys::time::TimeSpec;
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    matches!(ppoll(&mut fds, Some(TimeSpec::from_duration(at_most)), None), Ok(n) if n > 0)
}

/// Sleeps at most `d`, and less when a signal arrives: the caller loops on its own deadline.
///
/// Not `thread::sleep`, which resumes an interrupted sleep with the remaining time the kernel
/// reports: under a storm of signals (a host's, or forwarded ones) that time was seen to grow
/// instead of shrink on this project's test machine, and a 50 ms grace never ended. An absolute
/// deadline on the monotonic clock cannot drift; nor does this touch the thread's park token,
/// which a Rust host may be using.
pub(crate) fn nap(d: Duration) {
    use nix::sys::time::TimeSpec;
    use nix::time::{ClockId, ClockNanosleepFlags, clock_gettime, clock_nanosleep};
    match clock_gettime(ClockId::CLOCK_MONOTONIC) {
        Ok(now) => {
            let until = now + TimeSpec::from_duration(d);
            // EINTR ends the nap early, as documented; any other error too (the caller's
            // deadline still bounds its loop).
            let _ = clock_nanosleep(
                ClockId::CLOCK_MONOTONIC,
                ClockNanosleepFlags::TIMER_ABSTIME,
                &until,
            );
        }
        Err(_) => thread::sleep(d),
    }
}

/// The bounded cleanup of SPEC §3.1, over the server's process group (§3 item 9): the
/// leader's status is observed as before; whatever else of the group still runs is ended with
/// one SIGKILL to the whole group, and the session waits (at most [`KILL_POLL_BOUND`] from the
/// kill) until no process of the group is left. In a process that is the subreaper of its
/// sessions (the CLI), descendants that left the group are ended in the same window.
pub(crate) fn cleanup(child: &mut ServerProcess) -> Cleanup {
    cleanup_within(child, EXIT_GRACE)
}

/// [`cleanup`], the leader's status awaited for `grace` before the kill attempt.
pub(crate) fn cleanup_within(child: &mut ServerProcess, grace: Duration) -> Cleanup {
    let polled = poll_status(
        child,
        grace,
        Duration::from_micros(20),
        Duration::from_millis(2),
    );
    let mut c = match polled {
        Polled::Status(s) => after_leader_exit(child, observe(s)),
        // SPEC §3.1: ECHILD → unknown, and never a kill by PID: the PID may belong to another
        // process. The group's number is still ours while its watchdog runs, so the rest of the
        // group is ended through it.
        Polled::Unobservable => {
            let mut c = kill_group(child, false);
            c.status = ChildStatus::UNKNOWN;
            c
        }
        Polled::Running => kill_group(child, true),
    };
    c.orphans_ended = orphans::end_all(c.window_start + KILL_POLL_BOUND);
    c
}

/// The leader exited by itself: the rest of its group, if any runs, is ended.
fn after_leader_exit(child: &mut ServerProcess, status: ChildStatus) -> Cleanup {
    let quiet = Cleanup {
        status,
        kill_requested: false,
        group_killed: false,
        orphans_ended: 0,
        window_start: Instant::now(),
    };
    let Some(pgid) = child.group_id() else {
        return quiet;
    };
    // The watchdog is a member: without it, what is left of the group is exactly the rest of
    // the server (group.rs on why the number stays ours meanwhile).
    child.retire_watchdog();
    group::reap_members(pgid);
    if !group::has_members(pgid) {
        return quiet;
    }
    // Something is left: zombies waiting for their reaper, or processes that still run.
    if group::live_members(pgid, &[]) == Some(0) {
        wait_group_empty(pgid, quiet.window_start + KILL_POLL_BOUND);
        return quiet;
    }
    group::signal(pgid, libc::SIGKILL);
    let window_start = Instant::now();
    wait_group_empty(pgid, window_start + KILL_POLL_BOUND);
    Cleanup {
        status,
        kill_requested: true,
        group_killed: true,
        orphans_ended: 0,
        window_start,
    }
}

/// One kill attempt (SIGKILL) for the whole group while its watchdog keeps the group's number
/// ours; then the leader's status is polled for at most [`KILL_POLL_BOUND`] (when
/// `observe_leader`), and the group waited for within the same window. When the leader's
/// status can never be observed (`observe_leader` false: someone else reaped it), the group is
/// killed only if a process of it other than the watchdog still runs.
fn kill_group(child: &mut ServerProcess, observe_leader: bool) -> Cleanup {
    let leader = libc::pid_t::try_from(child.id()).unwrap_or(0);
    let (others, sent) = match (child.live_group(), child.watchdog_pid()) {
        (Some(pgid), Some(dog)) => {
            let others = group::live_members(pgid, &[leader, dog]).is_none_or(|n| n > 0);
            let send = observe_leader || others;
            (others, send && group::signal(pgid, libc::SIGKILL))
        }
        _ => (false, false),
    };
    // Without a group (or should the group kill fail), the leader through its own handle —
    // never by PID once its status is unobservable.
    if !sent && observe_leader {
        let _ = child.kill();
    }
    let window_start = Instant::now();
    let status = if observe_leader {
        match poll_status(
            child,
            KILL_POLL_BOUND,
            KILL_POLL_INTERVAL,
            KILL_POLL_INTERVAL,
        ) {
            Polled::Status(s) => observe(s),
            Polled::Running | Polled::Unobservable => ChildStatus::UNKNOWN,
        }
    } else {
        ChildStatus::UNKNOWN
    };
    child.retire_watchdog();
    if let Some(pgid) = child.group_id() {
        wait_group_empty(pgid, window_start + KILL_POLL_BOUND);
    }
    Cleanup {
        status,
        kill_requested: sent || observe_leader,
        group_killed: sent && others,
        orphans_ended: 0,
        window_start,
    }
}

/// Waits (until `deadline`) until no process of the group runs, collecting the status of every
/// member that is a child of this process (the leader's is collected already). A zombie is no
/// running process: one whose parent ended waits for its reaper (init, or a host's subreaper),
/// which may take its time; it keeps the group's number from reuse meanwhile.
fn wait_group_empty(pgid: libc::pid_t, deadline: Instant) {
    loop {
        group::reap_members(pgid);
        if !group::has_members(pgid) || group::live_members(pgid, &[]) == Some(0) {
            return;
        }
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        nap(Duration::from_millis(2).min(deadline - now));
    }
}

/// Last-resort cleanup if a session is abandoned by an early return: the same bounded kill, never
/// an unbounded `wait()`.
pub(crate) struct ChildGuard(pub Option<ServerProcess>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = cleanup(child);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn sh(script: &str) -> Spawned {
        spawn(
            &["/bin/sh", "-c", script],
            None,
            &nix::sys::signal::SigSet::empty(),
        )
        .unwrap()
    }

    #[test]
    fn observes_exit_codes_and_signals() {
        let mut s = sh("exit 7");
        drop(s.stdin);
        let c = cleanup(&mut s.child);
        assert!(!c.kill_requested);
        assert_eq!(c.status.termination, Termination::Exited);
        assert_eq!(c.status.exit_code, Some(7));

        let mut s = sh("kill -SEGV $$");
        let c = cleanup(&mut s.child);
        assert_eq!(c.status.termination, Termination::Signaled);
        assert_eq!(c.status.signal, Some(libc::SIGSEGV));
        assert!(c.status.core_dumped.is_some());
        assert_eq!(c.status.exit_code, None);
    }

    /// The wait on the pidfd ends at the child's exit (an event, not a nap), says so, and a
    /// status follows; while the child runs it says nothing and none is there.
    #[test]
    fn the_wait_for_an_exit_is_woken_by_the_exit() {
        let mut s = sh("exec cat >/dev/null");
        assert!(s.child.has_pidfd(), "this kernel gives pidfds");
        let fd = s.child.exit_fd().expect("a pidfd to wait on");
        assert!(!wait_readable(fd, Duration::from_millis(20)));
        assert!(matches!(s.child.try_wait(), Ok(None)));
        // cat exits at end of its input: that, not a timer, ends the next wait.
        drop(s.stdin);
        let mut woke = false;
        let deadline = Instant::now() + Duration::from_secs(30);
        while !woke && Instant::now() < deadline {
            let fd = s.child.exit_fd().expect("a pidfd to wait on");
            woke = wait_readable(fd, Duration::from_secs(30));
        }
        assert!(woke);
        assert!(matches!(s.child.try_wait(), Ok(Some(st)) if st.success()));
        // Reaped: no pidfd to wait on any more.
        assert!(s.child.exit_fd().is_none());
    }

    /// A pidfd that said "exited" with no end following is not trusted by the next wait (a
    /// descriptor that is always readable stands in for it here).
    #[test]
    fn a_readiness_without_an_end_is_not_trusted_again() {
        use std::io::Write;
        use std::os::fd::AsFd;
        let (read, write) = crate::sys::fd::pipe().unwrap();
        std::fs::File::from(write).write_all(b"x").unwrap();
        let mut waits = EndWaits::new(Duration::from_micros(20), Duration::from_millis(2));
        assert!(!waits.pidfd_said_exited);
        waits.wait(Some(read.as_fd()), Duration::from_secs(30));
        assert!(waits.pidfd_said_exited);
        waits.wait(Some(read.as_fd()), Duration::from_secs(30));
        assert!(waits.pidfd_said_exited);
        assert_eq!(waits.interval, Duration::from_micros(80));
    }

    /// `poll_status` sees a child that exits while it waits, through the same wake-up.
    #[test]
    fn a_status_that_arrives_during_the_poll_is_seen() {
        let mut s = sh("exec cat >/dev/null");
        let stdin = s.stdin;
        let closer = std::thread::spawn(move || drop(stdin));
        let polled = poll_status(
            &mut s.child,
            Duration::from_secs(30),
            Duration::from_micros(20),
            Duration::from_millis(2),
        );
        closer.join().unwrap();
        assert!(matches!(polled, Polled::Status(st) if st.success()));
    }

    #[test]
    fn kill_path_is_bounded() {
        let mut s = sh("trap '' TERM; sleep 30");
        let started = Instant::now();
        let c = cleanup(&mut s.child);
        assert!(c.kill_requested);
        assert_eq!(c.status.termination, Termination::Signaled);
        assert_eq!(c.status.signal, Some(libc::SIGKILL));
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn missing_and_non_executable_commands() {
        let none = nix::sys::signal::SigSet::empty();
        let e = spawn(&["/nonexistent/assay-x"], None, &none).err().unwrap();
        assert_eq!(e.kind(), ErrorKind::CommandNotFound);
        assert_eq!(e.exit_status(), 127);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("noexec");
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        let e = spawn(&[p.display().to_string()], None, &none)
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::CommandNotExecutable);
        assert_eq!(e.exit_status(), 126);
    }
}
