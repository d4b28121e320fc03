//! The server's process group (SPEC §3 item 9, §3.1): its leader is the direct child (it calls
//! `setpgid(0, 0)` before exec, in_child.rs), and every process the server starts stays in it
//! unless it leaves on purpose (`setsid`, `setpgid`). Signals go to the whole group
//! (`kill(-pgid, …)`); what is left of it at the end of a session is found, ended and waited for
//! here.
//!
//! **The group's number is ours while the session uses it.** A process group ID cannot be
//! reused while any process — a zombie included — is a member, and the watchdog
//! (watchdog.rs) is a member and the session's own unreaped child until the session retires it.
//! Only after that does the session look at the group by number once more, to learn whether
//! anything is left (`kill(-pgid, 0)`); a reuse in between would need the kernel to hand out the
//! whole PID space within microseconds (docs/decisions.md).

use std::io;

/// What `kill(-pgid, 0)` says of the group.
pub(crate) fn has_members(pgid: libc::pid_t) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill with signal 0 sends nothing; it only reads its arguments.
    let r = unsafe { libc::kill(-pgid, 0) };
    // EPERM: a member exists that we may not signal (a set-user-ID program).
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Sends `sig` to every process of the group; true when it reached one.
pub(crate) fn signal(pgid: libc::pid_t, sig: libc::c_int) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill only reads its arguments; `pgid` is the server's group (module docs).
    unsafe { libc::kill(-pgid, sig) == 0 }
}

/// Collects the status of every child of this process that is a member of the group and has
/// ended (the watchdog, and descendants reparented to a subreaper), so no zombie keeps the
/// group alive. Never blocks. Must not be called while the leader's status is still to be
/// collected: it would take it.
pub(crate) fn reap_members(pgid: libc::pid_t) {
    let Ok(id) = libc::id_t::try_from(pgid) else {
        return;
    };
    loop {
        // SAFETY: a zeroed siginfo_t is valid; waitid writes into it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above; waitid reads its other arguments.
        let r = unsafe { libc::waitid(libc::P_PGID, id, &mut info, libc::WEXITED | libc::WNOHANG) };
        if r != 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        // SAFETY: initialized by the successful waitid (0 when nothing has exited).
        if unsafe { info.si_pid() } == 0 {
            return;
        }
    }
}

/// One line of `/proc/PID/stat`, as far as this module needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    pub pid: libc::pid_t,
    pub state: u8,
    pub ppid: libc::pid_t,
    pub pgrp: libc::pid_t,
}

impl ProcStat {
    /// A process that still runs (not a zombie, not being reaped).
    pub(crate) fn alive(&self) -> bool {
        !matches!(self.state, b'Z' | b'X' | b'x')
    }
}

/// Reads `pid (comm) state ppid pgrp …`; the command name may hold anything, parentheses and
/// spaces included, so the fields are read after its last `)`.
pub(crate) fn parse_stat(line: &[u8]) -> Option<ProcStat> {
    let open = line.iter().position(|&b| b == b'(')?;
    let close = line.iter().rposition(|&b| b == b')')?;
    let pid = std::str::from_utf8(line.get(..open)?)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let rest = std::str::from_utf8(line.get(close + 1..)?).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = *fields.next()?.as_bytes().first()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(ProcStat {
        pid,
        state,
        ppid,
        pgrp,
    })
}

/// Every process `/proc` lists, as far as its `stat` could be read (processes come and go
/// while the directory is read); `None` when `/proc` cannot be read at all.
pub(crate) fn processes() -> Option<Vec<ProcStat>> {
    let dir = std::fs::read_dir("/proc").ok()?;
    let mut out = Vec::new();
    let mut buf = Vec::with_capacity(512);
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        buf.clear();
        let path = format!("/proc/{name}/stat");
        if let Ok(mut f) = std::fs::File::open(&path) {
            use std::io::Read;
            if f.by_ref().take(1024).read_to_end(&mut buf).is_ok() {
                if let Some(s) = parse_stat(&buf) {
                    out.push(s);
                }
            }
        }
    }
    Some(out)
}

/// How many processes of group `pgid` still run, leaving out `except`; `None` when `/proc`
/// cannot be read.
pub(crate) fn live_members(pgid: libc::pid_t, except: &[libc::pid_t]) -> Option<usize> {
    Some(
        processes()?
            .iter()
            .filter(|p| p.pgrp == pgid && p.alive() && !except.contains(&p.pid))
            .count(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_hostile_command_names() {
        let s = parse_stat(b"4242 (node) S 17 4242 4242 0 -1 4194560 0\n").unwrap();
        assert_eq!((s.pid, s.state, s.ppid, s.pgrp), (4242, b'S', 17, 4242));
        assert!(s.alive());
        let s = parse_stat(b"77 (a) Z (b) 1 2 3) Z 5 99 99 0\n").unwrap();
        assert_eq!((s.pid, s.state, s.ppid, s.pgrp), (77, b'Z', 5, 99));
        assert!(!s.alive());
        assert_eq!(parse_stat(b"garbage"), None);
        assert_eq!(parse_stat(b"12 (x)"), None);
    }

    #[test]
    fn this_process_is_listed_in_its_group() {
        let me = std::process::id() as libc::pid_t;
        // SAFETY: getpgrp has no preconditions.
        let pgrp = unsafe { libc::getpgrp() };
        let all = processes().unwrap();
        let mine = all.iter().find(|p| p.pid == me).unwrap();
        assert_eq!(mine.pgrp, pgrp);
        assert!(live_members(pgrp, &[]).unwrap() >= 1);
        assert!(has_members(pgrp));
    }
}
