//! Finding the processes of a case's tree by the environment marker they inherited, and ending
//! the ones a failed case left behind.

use std::time::{Duration, Instant};

use super::MARK;

/// A case's marker: `ASSAY_LAUNCHER_TEST_MARK=<random>` in the environment of the process the
/// case starts, so every descendant carries it. Dropping it kills whatever still carries it
/// (a failing case must not leave processes to the next one).
pub(super) struct Marked {
    mark: String,
}

/// A live process carrying a marker.
#[derive(Debug, Clone)]
pub(super) struct Proc {
    pid: i32,
    ppid: i32,
    pgrp: i32,
    session: i32,
    state: char,
    cmdline: String,
}

impl Marked {
    pub(super) fn new() -> Marked {
        use std::io::Read;
        let mut bytes = [0u8; 12];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .expect("read /dev/urandom");
        Marked {
            mark: bytes.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }

    pub(super) fn mark(&self) -> &str {
        &self.mark
    }

    /// The live processes (zombies excluded: they run nothing, hold nothing) carrying the mark.
    pub(super) fn alive(&self) -> Vec<Proc> {
        let needle = format!("{MARK}={}", self.mark);
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
            })
            .filter_map(Proc::read)
            .filter(|p| !matches!(p.state, 'Z' | 'X'))
            .collect()
    }

    /// Polls until no process carries the mark or `deadline` passes; returns the survivors at
    /// the deadline, after killing them.
    pub(super) fn wait_gone(&self, deadline: Instant) -> Vec<Proc> {
        loop {
            let left = self.alive();
            if left.is_empty() {
                return left;
            }
            if Instant::now() >= deadline {
                self.kill_all();
                return left;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGKILLs every process carrying the mark, until none is left (bounded).
    pub(super) fn kill_all(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = self.alive();
            if left.is_empty() || Instant::now() >= deadline {
                return;
            }
            for p in &left {
                // SAFETY: kill(2) on a PID just found carrying this case's random marker.
                unsafe { libc::kill(p.pid, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Marked {
    fn drop(&mut self) {
        self.kill_all();
    }
}

impl Proc {
    fn read(pid: i32) -> Option<Proc> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (_, rest) = stat.rsplit_once(") ")?;
        let f: Vec<&str> = rest.split(' ').collect();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        Some(Proc {
            pid,
            state: f.first()?.chars().next()?,
            ppid: f.get(1)?.parse().ok()?,
            pgrp: f.get(2)?.parse().ok()?,
            session: f.get(3)?.parse().ok()?,
            cmdline: cmdline.trim_end().to_string(),
        })
    }

    /// A session leader of its own (`setsid`): it left the server's process group and the
    /// wrapper's session.
    pub(super) fn left_the_session(&self) -> bool {
        self.session == self.pid
    }

    /// One line per process: pid, parent, group, session, state, command line.
    pub(super) fn describe(procs: &[Proc]) -> String {
        procs
            .iter()
            .map(|p| {
                format!(
                    "  pid {} ppid {} pgrp {} sid {} state {}: {}",
                    p.pid, p.ppid, p.pgrp, p.session, p.state, p.cmdline
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}
