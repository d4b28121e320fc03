//! `package_capture`: copy a capture's raw bytes into a new directory with a manifest (SPEC §7).
//!
//! The source directory is opened once (a missing one is a usage error, never an empty
//! package) and every source is opened relative to it with the bounded no-follow opener and
//! streamed through a bound, so a hostile capture costs no more than its bounds. The package
//! directory is created, opened once without following links, and every file is created
//! relative to that descriptor (SPEC §7). Everything that can fail before writing —
//! opening the sources, hashing extra files and the producer binary — happens before `dst` is
//! created. The verdict in the manifest is `read_capture` run on the *copied* files, so it
//! describes exactly the bytes in the package.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, open};
use nix::sys::stat::Mode;

use serde::Serialize;

use super::bounds::{MAX_COMPANION_BYTES, MAX_LOG_BYTES};
use super::judgement::Closure;
use super::reader::judge;
use crate::capture_files::{
    ATTESTATION, CONTEXT, COVERAGE, DECISIONS, DEFINITIONS, MANIFEST, NO_SESSION, PROTOCOL, STDERR,
    STOP,
};
use crate::error::{Error, ErrorKind, Result};
use crate::input_file::{self as bounded, BoundedError, FinalLink};
use crate::sha256::Sha256;

/// The `schema` of `manifest.json`.
pub const PACKAGE_SCHEMA: &str = "assay.capture.package.v1";

/// Bound for `coverage.json` when packaging (SPEC sets none; the reader does not read it).
const MAX_COVERAGE_BYTES: u64 = 8 * 1024 * 1024;
/// Bound for `proxy-stderr.log` when packaging (SPEC sets none; the reader does not read it).
const MAX_STDERR_BYTES: u64 = 64 * 1024 * 1024;
/// Bound for an extra file named by the caller and for the producer binary.
const MAX_EXTRA_BYTES: u64 = 1024 * 1024 * 1024;

/// The files a package may hold, in manifest order, with their bounds.
const PACKAGED: [(&str, u64); 9] = [
    (PROTOCOL, MAX_COMPANION_BYTES),
    (CONTEXT, MAX_COMPANION_BYTES),
    (STOP, MAX_COMPANION_BYTES),
    (DECISIONS, MAX_LOG_BYTES),
    (STDERR, MAX_STDERR_BYTES),
    (COVERAGE, MAX_COVERAGE_BYTES),
    (NO_SESSION, MAX_COMPANION_BYTES),
    (
        DEFINITIONS,
        crate::evidence::tool_definitions::MAX_KEPT_BYTES,
    ),
    // A signed capture's attestation (SPEC §4.5), copied byte for byte so the package verifies.
    (ATTESTATION, MAX_COMPANION_BYTES),
];

/// The manifest's `non_claims`.
const PACKAGE_NON_CLAIMS: [&str; 5] = [
    "not_producer_authentication",
    "not_execution_proof",
    "not_authentication",
    "not_global_coverage",
    "not_durable_storage_proof",
];

/// The manifest [`package_capture`] writes as `manifest.json` and returns
/// (`assay.capture.package.v1`, SPEC §7). It serializes to exactly the content of that file.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PackageManifest {
    /// Always [`PACKAGE_SCHEMA`].
    pub schema: &'static str,
    /// The copied capture files, in the order of SPEC §7's list of names.
    pub files: Vec<PackagedFile>,
    /// What wrote the package.
    pub producer: Producer,
    /// The files the caller asked to have on record (hashed, not copied), in the order given.
    pub extra_files: Vec<ExtraFile>,
    /// The closure verdict of the packaged (copied) files.
    pub closure: Closure,
    /// What the package does not claim, among them `not_producer_authentication`: file/digest
    /// agreement does not authenticate a producer.
    pub non_claims: [&'static str; 5],
}

/// A capture file copied into the package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PackagedFile {
    /// The capture file name (`protocol.json`, `decisions.ndjson`, …).
    pub name: &'static str,
    /// Its length in bytes.
    pub bytes: u64,
    /// The SHA-256 of its bytes, lowercase hex.
    pub sha256: String,
}

/// An extra file named by the caller (a helper or source file), hashed, not copied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ExtraFile {
    /// The path as the caller gave it (lossy UTF-8).
    pub path: String,
    /// Its length in bytes.
    pub bytes: u64,
    /// The SHA-256 of its bytes, lowercase hex.
    pub sha256: String,
}

/// The producer of a package: this library and the file holding its code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Producer {
    /// Always `assay`.
    pub name: &'static str,
    /// The library version.
    pub version: &'static str,
    /// The binary holding this code: the `.so` for the C ABI and the Python module, the
    /// executable when linked statically (lossy UTF-8).
    pub binary_path: String,
    /// How `binary_path` was found: `proc_self_maps` or, failing that, `current_exe`.
    pub binary_source: &'static str,
    /// The SHA-256 of `binary_path`, lowercase hex.
    pub binary_sha256: String,
}

fn io_msg(path: &Path, msg: String) -> Error {
    Error::new(ErrorKind::Io, format!("{}: {msg}", path.display()))
}

fn bounded_err(path: &Path, bound: u64, e: BoundedError) -> Error {
    match e {
        BoundedError::Io(io) => Error::io(path, "cannot read", &io),
        other => io_msg(path, other.describe(bound)),
    }
}

/// Copies (or, with `out == None`, only hashes) at most `bound` bytes of `src`; fails if there
/// are more. Returns `(bytes, sha256)`.
fn stream(
    mut src: impl Read,
    src_path: &Path,
    bound: u64,
    mut out: Option<(&mut File, &Path)>,
) -> Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let mut limited = (&mut src).take(bound.saturating_add(1));
    let mut buf = vec![0u8; 64 * 1024];
    let mut total: u64 = 0;
    loop {
        let n = match limited.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(src_path, "cannot read", &e)),
        };
        total += n as u64;
        if total > bound {
            return Err(io_msg(
                src_path,
                format!("grew over the {bound}-byte bound while being read"),
            ));
        }
        let chunk = buf.get(..n).unwrap_or_default();
        hasher.update(chunk);
        if let Some((f, p)) = out.as_mut() {
            f.write_all(chunk)
                .map_err(|e| Error::io(*p, "cannot write", &e))?;
        }
    }
    Ok((total, hasher.finalize_hex()))
}

/// A new file `name` in the package directory `dir` through the one exclusive evidence opener
/// (`O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC`, mode exactly 0600); `path` is for messages.
fn create_new_at(dir: &OwnedFd, name: &str, path: &Path) -> Result<File> {
    crate::evidence::file::create_new_at(dir, name)
        .map_err(|e| Error::io(path, "cannot create", &e))
}

/// The file holding the code of this library: the mapping of `/proc/self/maps` that contains
/// this function's address (the `.so` for the C ABI and Python module, the executable when the
/// library is linked statically). Falls back to `current_exe`.
fn producer_binary() -> Option<PathBuf> {
    let addr = producer_binary as fn() -> Option<PathBuf> as usize;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        // start-end perms offset dev inode pathname
        let mut parts = line.split_whitespace();
        let range = parts.next()?;
        let (lo, hi) = range.split_once('-')?;
        let lo = usize::from_str_radix(lo, 16).ok()?;
        let hi = usize::from_str_radix(hi, 16).ok()?;
        if !(lo..hi).contains(&addr) {
            return None;
        }
        // Skip perms, offset, dev, inode; the rest is the path (may contain spaces).
        let path = line.splitn(6, char::is_whitespace).nth(5)?.trim_start();
        // A replaced file shows as "(deleted)": hashing the new file would be wrong.
        (path.starts_with('/') && !path.ends_with(" (deleted)")).then(|| PathBuf::from(path))
    })
}

fn hash_path(path: &Path, follow: bool) -> Result<(u64, String)> {
    let link = if follow {
        FinalLink::Follow
    } else {
        FinalLink::Refuse
    };
    let file = bounded::open_regular(path, link, MAX_EXTRA_BYTES)
        .map_err(|e| bounded_err(path, MAX_EXTRA_BYTES, e))?
        .0;
    stream(file, path, MAX_EXTRA_BYTES, None)
}

/// Removes what a failed packaging created (best effort; the error already names the cause).
fn cleanup(dst: &Path, dir: &OwnedFd, created: &[&str]) {
    for name in created {
        let _ = nix::unistd::unlinkat(dir, *name, nix::unistd::UnlinkatFlags::NoRemoveDir);
    }
    let _ = std::fs::remove_dir(dst);
}

/// Opens the capture directory `src`: a missing path or one that is not a directory is a usage
/// error (SPEC §7: "never an empty package"), like a missing root for `read_captures`.
fn open_source(src: &Path) -> Result<OwnedFd> {
    open(
        src,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::ENOENT => Error::invalid_argument(format!(
            "capture directory {} does not exist",
            src.display()
        )),
        Errno::ENOTDIR => Error::invalid_argument(format!(
            "capture directory {} is not a directory",
            src.display()
        )),
        e => Error::io(
            src,
            "cannot open capture directory",
            &std::io::Error::from(e),
        ),
    })
}

/// Creates `dst` (mode 0700, must not exist) and opens it without following a symlink: every
/// file of the package is then created relative to this descriptor.
fn create_destination(dst: &Path) -> Result<OwnedFd> {
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dst)
        .map_err(|e| Error::io(dst, "cannot create package directory", &e))?;
    open(
        dst,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        let _ = std::fs::remove_dir(dst);
        Error::io(
            dst,
            "cannot open the package directory it created",
            &std::io::Error::from(e),
        )
    })
}

/// Copies the capture in `src` into the new directory `dst` and writes `dst/manifest.json`.
///
/// `src` must be an existing directory. `dst` must not exist; it is created with mode 0700 and
/// opened once, and every file is created relative to that descriptor (`openat`, never
/// re-resolved by path), as the sources are opened relative to `src`'s. Each capture file
/// present in `src` (`protocol.json`, `session-context.json`, `session-stop.json`,
/// `decisions.ndjson`, `proxy-stderr.log`, `coverage.json`, `no-session.json`) is copied byte
/// for byte to a new 0600 file. A missing file is skipped (the embedded verdict reports it); a
/// file that is a symlink, not a regular file or over its bound is an error. `extra_files`
/// (helper or source files the caller wants on record) are hashed, not copied. Returns the
/// manifest that was written.
///
/// The manifest records the producer's version and the SHA-256 of the binary holding this
/// code (see `docs/capture-reader.md`), the closure verdict of the packaged files, and
/// `non_claims` including `not_producer_authentication`: file/digest agreement does not
/// authenticate the producer.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] when `src` does not exist or is not a directory (a usage
/// error, exit status 2; nothing is created); [`ErrorKind::Io`] naming the path when `dst`
/// exists or cannot be created, a source cannot be read or is refused, or a copy cannot be
/// written. After a failure nothing is left in `dst` that this call created.
pub fn package_capture(src: &Path, dst: &Path, extra_files: &[PathBuf]) -> Result<PackageManifest> {
    // 1. Open every source first, so a refused file fails before anything is created.
    let src_dir = open_source(src)?;
    let mut sources = Vec::new();
    for (name, bound) in PACKAGED {
        let path = src.join(name);
        match bounded::open_regular_at(&src_dir, name, bound) {
            Ok((file, _)) => sources.push((name, bound, path, file)),
            Err(BoundedError::Missing) => {}
            Err(e) => return Err(bounded_err(&path, bound, e)),
        }
    }
    let mut extras = Vec::new();
    for path in extra_files {
        let (bytes, sha256) = hash_path(path, false)?;
        extras.push(ExtraFile {
            path: path.to_string_lossy().into_owned(),
            bytes,
            sha256,
        });
    }
    let (binary_path, binary_source) = match producer_binary() {
        Some(p) => (p, "proc_self_maps"),
        None => (
            std::env::current_exe()
                .map_err(|e| Error::io("current executable", "cannot locate", &e))?,
            "current_exe",
        ),
    };
    let (_, binary_sha256) = hash_path(&binary_path, true)?;

    // 2. Create dst (must not exist), hold it open, and copy into it.
    let dir = create_destination(dst)?;
    let mut created: Vec<&str> = Vec::new();
    let result = (|| {
        let mut files = Vec::new();
        for (name, bound, path, file) in sources {
            let out_path = dst.join(name);
            let mut out = create_new_at(&dir, name, &out_path)?;
            created.push(name);
            let (bytes, sha256) = stream(file, &path, bound, Some((&mut out, &out_path)))?;
            files.push(PackagedFile {
                name,
                bytes,
                sha256,
            });
        }
        // The verdict of exactly the files written: read through the held descriptor where
        // /proc is available.
        let proc_path = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
        let judged = if proc_path.is_dir() {
            judge(&proc_path)
        } else {
            judge(dst)
        };
        let manifest = PackageManifest {
            schema: PACKAGE_SCHEMA,
            files,
            producer: Producer {
                name: "assay",
                version: env!("CARGO_PKG_VERSION"),
                binary_path: binary_path.to_string_lossy().into_owned(),
                binary_source,
                binary_sha256,
            },
            extra_files: extras,
            closure: judged,
            non_claims: PACKAGE_NON_CLAIMS,
        };
        let mut text = serde_json::to_vec_pretty(&manifest)
            .map_err(|e| Error::new(ErrorKind::Internal, format!("manifest: {e}")))?;
        text.push(b'\n');
        let manifest_path = dst.join(MANIFEST);
        let mut out = create_new_at(&dir, MANIFEST, &manifest_path)?;
        created.push(MANIFEST);
        out.write_all(&text)
            .map_err(|e| Error::io(&manifest_path, "cannot write", &e))?;
        Ok(manifest)
    })();
    if result.is_err() {
        cleanup(dst, &dir, &created);
    }
    result
}

#[cfg(test)]
mod tests {
    #[test]
    fn packages_every_capture_file_in_the_one_list_order() {
        assert_eq!(
            super::PACKAGED.map(|(name, _)| name),
            crate::capture_files::ALL
        );
    }
}
