//! `assay mcp doctor`: the processes an entry left behind. Every process of an entry's run
//! inherits the marker the doctor set in its environment (`ASSAY_DOCTOR_MARK=<value>`), so after
//! the close the doctor reads `/proc/<pid>/environ` of every process it may read (others are
//! skipped; each read is bounded) and finds those still carrying it, whatever their process
//! group, session or parent. A process that cleared its environment is not found (say so in
//! the docs). The doctor then ends what it found (SIGKILL) and says so.

use std::io::Read;
use std::time::{Duration, Instant};

use super::doctor_plan::MARK;

/// The most of one process's environment read.
const MAX_ENVIRON: u64 = 1024 * 1024;

/// How long the doctor waits for the processes it killed to be gone.
const END_WAIT: Duration = Duration::from_secs(2);

/// Whether process `pid` carries `MARK=mark` (exactly, as one environment entry).
fn carries(pid: i32, mark: &str) -> bool {
    let Ok(f) = std::fs::File::open(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let mut bytes = Vec::new();
    if f.take(MAX_ENVIRON).read_to_end(&mut bytes).is_err() {
        return false;
    }
    let want = format!("{MARK}={mark}");
    bytes.split(|&b| b == 0).any(|e| e == want.as_bytes())
}

/// Every process (other than this one) carrying the marker `mark`, by pid.
pub(crate) fn marked(mark: &str) -> Vec<i32> {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<i32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me && carries(pid, mark))
        .collect();
    pids.sort_unstable();
    pids
}

/// Kills each of `pids` that still carries `mark`, then waits up to 2 s for them to be gone (a
/// zombie carries nothing); returns those still alive.
pub(crate) fn end(pids: &[i32], mark: &str) -> Vec<i32> {
    for &pid in pids {
        if carries(pid, mark) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    let deadline = Instant::now() + END_WAIT;
    loop {
        let alive: Vec<i32> = pids.iter().copied().filter(|&p| carries(p, mark)).collect();
        if alive.is_empty() || Instant::now() >= deadline {
            return alive;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
