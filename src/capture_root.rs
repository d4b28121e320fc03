//! Capture roots (SPEC §10): `capture_root` gives every run a new capture directory
//! `ROOT/<UTC YYYYMMDDTHHMMSS.ffffffZ>-<session_id>`, so a host that starts the same configured
//! command again and again (reconnects, version probes, per-request bridges) never collides with
//! an earlier run, and the names sort by start time.
//!
//! Planning (`WrapConfig::plan` in the configuration module) only `stat`s: the configuration is validated as a whole first (SPEC §3
//! item 1, a config error creates no file). Creating the root and the run directory
//! ([`place_run`]) happens once the session id exists, right where the session starts creating
//! files; from then on the run directory is used exactly as a `capture_dir`.
#![forbid(unsafe_code)]

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, open, openat};
use nix::sys::stat::{Mode, fchmod, mkdirat};

use crate::config::{LogMode, SessionPlan, StderrSink};
use crate::diag::Diag;
use crate::error::{Error, Result};

/// The run directory's name: `YYYYMMDDTHHMMSS.ffffffZ-<session_id>` in UTC (SPEC §10). Fixed
/// width, so names sort by start time.
pub(crate) fn run_dir_name(t: time::OffsetDateTime, session_id: &str) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}.{:06}Z-{session_id}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    )
}

fn io_err(path: &Path, what: &str, e: Errno) -> Error {
    Error::io(path, what, &std::io::Error::from(e))
}

/// Opens the root (creating it with mode 0700 when missing) without following a final symlink.
/// Also says whether this call created it.
fn open_root(root: &Path) -> Result<(OwnedFd, bool)> {
    // Two launches may race to create the root: EEXIST is fine, the open below decides.
    let created = match nix::unistd::mkdir(root, Mode::S_IRWXU) {
        Ok(()) => true,
        Err(Errno::EEXIST) => false,
        Err(e) => return Err(io_err(root, "cannot create capture root", e)),
    };
    let fd = open(
        root,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io_err(root, "cannot open capture root", e))?;
    let fd = crate::sys::fd::above_stdio(fd)
        .map_err(|e| Error::io(root, "cannot open capture root", &e))?;
    if created {
        // mkdir's mode is filtered by the umask; a root the wrapper creates is exactly 0700.
        // An existing root keeps the mode its owner gave it.
        fchmod(&fd, Mode::S_IRWXU).map_err(|e| io_err(root, "cannot set mode of", e))?;
    }
    Ok((fd, created))
}

/// Where a run was placed: the new run directory, and the root when this run created it.
struct RunDir {
    dir: PathBuf,
    created_root: Option<PathBuf>,
}

/// Creates `root` if needed and the new run directory `root/name` (exclusively, mode exactly
/// 0700), relative to the opened root so a root swapped for a symlink is never followed. A root
/// this call created is removed again when the run directory cannot be made (SPEC §10: a run
/// that leaves nothing leaves no root either).
fn create_run_dir(root: &Path, name: &str) -> Result<RunDir> {
    let (root_fd, created) = open_root(root)?;
    let made = make_run_dir(&root_fd, root, name);
    if made.is_err() && created {
        let _ = std::fs::remove_dir(root);
    }
    Ok(RunDir {
        dir: made?,
        created_root: created.then(|| root.to_path_buf()),
    })
}

/// The run directory `name` under the opened root: new, mode exactly 0700.
fn make_run_dir(root_fd: &OwnedFd, root: &Path, name: &str) -> Result<PathBuf> {
    let dir = root.join(name);
    // mkdirat fails with EEXIST when anything already has that name: the directory is new.
    mkdirat(root_fd, name, Mode::S_IRWXU)
        .map_err(|e| io_err(&dir, "cannot create capture directory", e))?;
    let fd = openat(
        root_fd,
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io_err(&dir, "cannot open capture directory", e))?;
    let fd = crate::sys::fd::above_stdio(fd)
        .map_err(|e| Error::io(&dir, "cannot open capture directory", &e))?;
    fchmod(&fd, Mode::S_IRWXU).map_err(|e| io_err(&dir, "cannot set mode of", e))?;
    Ok(dir)
}

/// For a capture-root plan: creates the run directory for `session_id` and points every capture
/// output into it, exactly as `capture_dir` does. Any other plan is returned unchanged. With
/// `verbose`, names the directory on the host's stderr (SPEC §10), when it was checked to be one
/// (`host_stderr`, SPEC §3.1b). Also returns the root when this run created it, for the caller
/// to remove again with the run directory should the server not start (SPEC §10, 126/127).
pub(crate) fn place_run(
    mut plan: SessionPlan,
    session_id: &str,
    host_stderr: Option<&std::fs::File>,
) -> Result<(SessionPlan, Option<PathBuf>)> {
    let Some(root) = plan.capture_root.clone() else {
        return Ok((plan, None));
    };
    let name = run_dir_name(time::OffsetDateTime::now_utc(), session_id);
    let RunDir { dir, created_root } = create_run_dir(&root, &name)?;
    if plan.verbose {
        let sink = host_stderr.and_then(|f| f.try_clone().ok());
        Diag::new(sink, true).say(&format!("capture directory {}", dir.display()));
    }
    use crate::capture_files::*;
    plan.decision_log = Some(dir.join(DECISIONS));
    plan.log_mode = LogMode::New;
    plan.context_out = Some(dir.join(CONTEXT));
    plan.stop_out = Some(dir.join(STOP));
    plan.protocol_out = Some(dir.join(PROTOCOL));
    if plan.stderr.is_none() {
        plan.stderr = Some(StderrSink::New(dir.join(STDERR)));
    }
    plan.capture_dir = Some(dir);
    Ok((plan, created_root))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::check_root;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn names_are_fixed_width_utc_with_microseconds() {
        let t = time::OffsetDateTime::from_unix_timestamp_nanos(1_700_000_000_123_456_789)
            .unwrap()
            .to_offset(time::UtcOffset::from_hms(5, 30, 0).unwrap());
        let sid = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            run_dir_name(t, sid),
            format!("20231114T221320.123456Z-{sid}")
        );
        let early = time::OffsetDateTime::from_unix_timestamp(0).unwrap();
        assert_eq!(
            run_dir_name(early, sid),
            format!("19700101T000000.000000Z-{sid}")
        );
        assert!(run_dir_name(early, sid) < run_dir_name(t, sid));
    }

    #[test]
    fn run_directories_are_new_and_0700() {
        // (The umask is process-wide, so tests/capture_root.rs checks a hostile umask on the
        // real binary instead of changing it under the other unit tests.)
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        let made = create_run_dir(&root, "a");
        let again = create_run_dir(&root, "a");
        let made = made.unwrap();
        assert_eq!(made.created_root.as_deref(), Some(root.as_path()));
        let dir = made.dir;
        assert_eq!(dir, root.join("a"));
        for p in [&root, &dir] {
            let mode = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", p.display());
        }
        assert!(again.is_err(), "a run directory is created exclusively");
        // An existing root is not this run's: it is never reported as created.
        let other = create_run_dir(&root, "b").unwrap();
        assert_eq!(other.created_root, None);
    }

    #[test]
    fn a_symlinked_root_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(check_root(&link).is_err());
        assert!(create_run_dir(&link, "a").is_err());
        assert!(!real.join("a").exists());
        assert!(check_root(&real).is_ok());
        assert!(check_root(&d.path().join("new")).is_ok());
        assert!(check_root(&d.path().join("missing/new")).is_err());
    }
}
