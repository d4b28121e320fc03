//! [`ClientIo`]: the two descriptors a session reads client messages from and writes responses
//! to, and the constructors every surface uses to get them (SPEC §3, §8, §9).

use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd, RawFd};

use crate::error::{ConfigOption, Error, ErrorKind};
use crate::sys;

/// The client's side of a session: the descriptor the proxy reads client messages from and the
/// one it writes responses to. The session owns (and closes) these descriptors; surfaces that are
/// handed borrowed descriptors duplicate them first, so the caller's own descriptors are never
/// closed.
#[derive(Debug)]
pub struct ClientIo {
    /// Client → wrapper.
    pub input: OwnedFd,
    /// Wrapper → client.
    pub output: OwnedFd,
}

impl ClientIo {
    /// Duplicates of this process's stdin and stdout (close-on-exec).
    ///
    /// # Errors
    /// When the descriptors cannot be duplicated.
    pub fn stdio() -> io::Result<Self> {
        Ok(Self {
            input: io::stdin().as_fd().try_clone_to_owned()?,
            output: io::stdout().as_fd().try_clone_to_owned()?,
        })
    }

    /// Duplicates of two descriptors the caller lends (`stdin` and `stdout` of SPEC §8 and §9):
    /// the session owns and closes the duplicates, and the caller's descriptors stay open and
    /// stay the caller's to close. The one constructor behind the C ABI and the Python module.
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidArgument`], naming `stdin` or `stdout` as its option, when a
    /// descriptor is negative or not open (the latter carries `EBADF` as
    /// [`crate::Error::os_errno`]); [`crate::ErrorKind::Io`] when an open descriptor cannot be
    /// duplicated (e.g. `EMFILE`).
    pub fn from_borrowed(stdin: RawFd, stdout: RawFd) -> crate::error::Result<Self> {
        Ok(Self {
            input: dup_borrowed(stdin, ConfigOption::Stdin)?,
            output: dup_borrowed(stdout, ConfigOption::Stdout)?,
        })
    }

    /// This process's stdin and stdout, taken for a session: a duplicate of each (close-on-exec)
    /// is returned, and descriptor 1 is pointed at `/dev/null`, so the session's output is the
    /// only reference this process keeps to the client's pipe. When the server's output ends and
    /// the session closes its output, the client sees end of file at once (SPEC §3 item 7).
    /// Meant for a process whose stdout carries nothing but the session (the `assay` CLI).
    ///
    /// # Errors
    /// When the descriptors cannot be duplicated or `/dev/null` cannot be opened.
    pub fn take_stdio() -> io::Result<Self> {
        let io = Self::stdio()?;
        io::stdout().flush()?;
        let null = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
        nix::unistd::dup2_stdout(&null)?;
        Ok(io)
    }
}

/// Duplicates a borrowed descriptor (close-on-exec, numbered 3 or above): `option` names it in
/// the error. A bad descriptor is an invalid argument (SPEC §8 `ASSAY_ERR_INVALID_ARGUMENT`).
fn dup_borrowed(fd: RawFd, option: ConfigOption) -> crate::error::Result<OwnedFd> {
    let name = option.identifier();
    if fd < 0 {
        return Err(Error::invalid_option(
            option,
            format!("{name}: file descriptor must be non-negative, got {fd}"),
            None,
        ));
    }
    sys::fd::duplicate_lent(fd).map_err(|e| {
        if e.raw_os_error() == Some(libc::EBADF) {
            Error::invalid_option(
                option,
                format!("{name}: file descriptor {fd} is not open"),
                Some(libc::EBADF),
            )
        } else {
            Error::new(
                ErrorKind::Io,
                format!("{name}: cannot duplicate file descriptor {fd}: {e}"),
            )
            .with_errno(e.raw_os_error())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrowed_descriptors_are_duplicated_and_bad_ones_are_invalid_arguments() {
        let (r, w) = nix::unistd::pipe().unwrap();
        use std::os::fd::AsRawFd;
        let io = ClientIo::from_borrowed(r.as_raw_fd(), w.as_raw_fd()).unwrap();
        assert_ne!(io.input.as_raw_fd(), r.as_raw_fd());
        assert!(io.input.as_raw_fd() >= 3 && io.output.as_raw_fd() >= 3);
        drop(io);
        // The caller's descriptors are still open.
        nix::unistd::write(&w, b"x").unwrap();

        let e = ClientIo::from_borrowed(-1, w.as_raw_fd()).unwrap_err();
        assert_eq!(
            (e.kind(), e.option(), e.os_errno()),
            (ErrorKind::InvalidArgument, Some(ConfigOption::Stdin), None)
        );
        // Above any descriptor limit, so never open (a just-closed number could be reused by a
        // concurrent test).
        let closed = 1 << 30;
        let e = ClientIo::from_borrowed(r.as_raw_fd(), closed).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert_eq!(e.option(), Some(ConfigOption::Stdout));
        assert_eq!(e.os_errno(), Some(libc::EBADF));
        assert!(e.to_string().contains("not open"), "{e}");
    }
}
