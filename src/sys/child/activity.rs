//! Whether a server is busy, for the idle drain (SPEC §3 item 7, docs/decisions.md): the CPU time
//! its process tree has used, read from `/proc`. A server still starting (an interpreter loading
//! its modules on a loaded machine), or computing, uses CPU; one that only waits uses none.
//!
//! The tree is the server and its descendants (`/proc/PID/task/TID/children`, a breadth-first walk
//! bounded to [`MAX_PROCESSES`]), so a server behind a shell or a launcher (`npx`, `uvx`) counts
//! the work of the real server. Only a server that has not been reaped is read: its PID is still
//! its own.

use std::collections::VecDeque;

/// Processes read at most per look.
const MAX_PROCESSES: usize = 256;

/// The CPU time (user + system, in clock ticks) used so far by `pid` and its descendants, or
/// `None` when `/proc` has nothing for `pid`.
pub(crate) fn tree_cpu_ticks(pid: u32) -> Option<u64> {
    let mut total = own_ticks(pid)?;
    let mut queue: VecDeque<u32> = children(pid).into();
    let mut seen = 1;
    while let Some(p) = queue.pop_front() {
        if seen >= MAX_PROCESSES {
            break;
        }
        seen += 1;
        if let Some(t) = own_ticks(p) {
            total = total.saturating_add(t);
            queue.extend(children(p));
        }
    }
    Some(total)
}

/// `utime + stime + cutime + cstime` of one process (fields 14–17 of `/proc/PID/stat`; the
/// command name, field 2, may hold spaces and parentheses, so fields are counted after its last
/// `)`).
fn own_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    // `rest` starts with field 3 (state): fields 14..=17 are at indices 11..=14.
    let mut sum = 0u64;
    for field in rest.split_whitespace().skip(11).take(4) {
        sum = sum.saturating_add(field.parse::<i64>().ok()?.unsigned_abs());
    }
    Some(sum)
}

/// The children of every thread of `pid`.
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SIGKILL to every descendant of `pid` (this test's own processes).
    fn kill_descendants(pid: u32) {
        for c in children(pid) {
            kill_descendants(c);
            // SAFETY: a process this test started (a child of one of its shells).
            unsafe { libc::kill(c as i32, libc::SIGKILL) };
        }
    }

    #[test]
    fn a_busy_tree_uses_cpu_and_a_waiting_one_does_not() {
        let none = nix::sys::signal::SigSet::empty();
        let argv = |s: &str| vec!["/bin/sh".to_string(), "-c".to_string(), s.to_string()];
        // A shell whose child spins: the shell itself waits, the tree is busy.
        let mut busy =
            super::super::spawn(&argv("sh -c 'while :; do :; done' & wait"), None, &none).unwrap();
        let mut idle = super::super::spawn(&argv("sleep 30 & wait"), None, &none).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        let (b0, i0) = (tree_cpu_ticks(busy.pid), tree_cpu_ticks(idle.pid));
        std::thread::sleep(std::time::Duration::from_millis(600));
        let (b1, i1) = (tree_cpu_ticks(busy.pid), tree_cpu_ticks(idle.pid));
        assert!(b1.unwrap() > b0.unwrap(), "{b0:?} {b1:?}");
        assert_eq!(i1, i0);
        for s in [&mut busy, &mut idle] {
            kill_descendants(s.pid);
            let _ = super::super::cleanup(&mut s.child);
        }
    }
}
