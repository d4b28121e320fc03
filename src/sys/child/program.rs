//! What the child executes, prepared in the parent before the spawn (the child allocates
//! nothing): the argument vector, a copy of the environment, and the paths to try in order.
//!
//! The search follows `execvp`/`posix_spawnp`: a program name with a `/` is used as it is; a
//! bare name is looked up in each directory of `PATH` (the wrapper's, at spawn time; `/bin:/usr/bin`
//! when unset; an empty entry is the current directory). A file with no `#!` line and no format
//! the kernel knows (`ENOEXEC`) is not handed to `/bin/sh`: the spawn fails as not executable
//! (docs/decisions.md).

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;

use libc::c_char;

/// The search path when `PATH` is unset (glibc's `_CS_PATH`, which its `execvp` uses).
const DEFAULT_PATH: &[u8] = b"/bin:/usr/bin";

/// The longest path the kernel accepts, terminating NUL included.
const PATH_MAX: usize = libc::PATH_MAX as usize;

/// A NULL-terminated array of C strings, and the strings it points into.
pub(super) struct CStrArray {
    /// Owns what `ptrs` points to; never changed after construction.
    _strings: Vec<CString>,
    ptrs: Vec<*const c_char>,
}

impl CStrArray {
    fn new(strings: Vec<CString>) -> Self {
        let mut ptrs: Vec<*const c_char> = strings.iter().map(|s| s.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        Self {
            _strings: strings,
            ptrs,
        }
    }

    /// The NULL-terminated array, valid as long as `self` is.
    pub(super) fn as_ptr(&self) -> *const *const c_char {
        self.ptrs.as_ptr()
    }

    /// How many strings (the terminating NULL not counted).
    pub(super) fn len(&self) -> usize {
        self.ptrs.len() - 1
    }
}

/// Everything the child's `execve` calls need.
pub(super) struct ExecPlan {
    pub argv: CStrArray,
    pub envp: CStrArray,
    /// The paths to `execve`, in order.
    pub candidates: CStrArray,
}

fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "nul byte found in provided data",
        )
    })
}

impl ExecPlan {
    /// Prepares `argv` (the program first) with a copy of this process's environment.
    ///
    /// # Errors
    /// `InvalidInput` for a NUL byte in an argument; `NotFound` (`ENOENT`) for an empty program
    /// name.
    pub(super) fn new<A: AsRef<OsStr>>(argv: &[A]) -> io::Result<Self> {
        let program = argv.first().map_or(OsStr::new(""), AsRef::as_ref);
        if program.is_empty() {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        let args = argv
            .iter()
            .map(|a| c_string(a.as_ref().as_bytes()))
            .collect::<io::Result<Vec<_>>>()?;
        let mut path: Option<OsString> = None;
        let mut env = Vec::new();
        // vars_os reads the environment under the standard library's lock: a copy, so another
        // thread's set_var cannot free what the child is about to read.
        for (key, value) in std::env::vars_os() {
            if key == "PATH" {
                path = Some(value.clone());
            }
            let mut entry = Vec::with_capacity(key.len() + value.len() + 1);
            entry.extend_from_slice(key.as_bytes());
            entry.push(b'=');
            entry.extend_from_slice(value.as_bytes());
            // An entry with a NUL cannot come from the C environment; skip rather than fail.
            if let Ok(c) = CString::new(entry) {
                env.push(c);
            }
        }
        let candidates = candidates(program.as_bytes(), path.as_deref())?;
        Ok(Self {
            argv: CStrArray::new(args),
            envp: CStrArray::new(env),
            candidates: CStrArray::new(candidates),
        })
    }
}

/// The paths `execvp` would try for `program`, in order.
fn candidates(program: &[u8], path: Option<&OsStr>) -> io::Result<Vec<CString>> {
    if program.contains(&b'/') {
        return Ok(vec![c_string(program)?]);
    }
    let path = path.map_or(DEFAULT_PATH, OsStrExt::as_bytes);
    let mut out = Vec::new();
    for dir in path.split(|&b| b == b':') {
        // Like glibc, a directory too long to hold the name is skipped.
        if dir.len() + 1 + program.len() + 1 > PATH_MAX {
            continue;
        }
        let mut full = Vec::with_capacity(dir.len() + 1 + program.len());
        if !dir.is_empty() {
            full.extend_from_slice(dir);
            full.push(b'/');
        }
        full.extend_from_slice(program);
        out.push(c_string(&full)?);
    }
    if out.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: Vec<CString>) -> Vec<String> {
        v.into_iter()
            .map(|c| c.into_string().unwrap())
            .collect::<Vec<_>>()
    }

    #[test]
    fn bare_names_are_searched_in_path_and_paths_are_used_as_given() {
        let path = OsStr::new("/usr/local/bin::/bin");
        assert_eq!(
            strings(candidates(b"srv", Some(path)).unwrap()),
            ["/usr/local/bin/srv", "srv", "/bin/srv"]
        );
        assert_eq!(
            strings(candidates(b"./srv", Some(path)).unwrap()),
            ["./srv"]
        );
        assert_eq!(
            strings(candidates(b"srv", None).unwrap()),
            ["/bin/srv", "/usr/bin/srv"]
        );
    }

    #[test]
    fn empty_program_and_nul_bytes_are_refused_before_spawn() {
        let e = ExecPlan::new(&[String::new()]).err().unwrap();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        let e = ExecPlan::new(&["a\0b".to_string()]).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        let e = ExecPlan::new(&["/bin/true".to_string(), "x\0".to_string()])
            .err()
            .unwrap();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}
