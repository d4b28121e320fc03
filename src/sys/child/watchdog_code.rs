//! The code the watchdog process runs (SPEC §3 item 9): it joins the server's process group,
//! closes every descriptor but the read end of its alarm pipe, and blocks reading it. The
//! session holds the only write end; when the wrapper process ends — however it ends, SIGKILL
//! included — the kernel closes that end, the read returns, and the watchdog sends SIGKILL to
//! its own process group: every process of the server's group, itself included. The session
//! retires the watchdog at its end with a SIGKILL of the watchdog alone.
//!
//! The watchdog normally shares the wrapper's memory (`clone(CLONE_VM)` without
//! `CLONE_VFORK`: no page table is copied and no copy-on-write fault is left for a host with a
//! large heap) while the wrapper's threads go on running. So this module is stricter than
//! `in_child.rs`: it calls **no libc function at all** — not even a system-call wrapper, which
//! would write a failure's `errno` into the thread-local slot of the thread that spawned it — but
//! makes raw system calls (`asm!`), allocates nothing, takes no lock and cannot panic (the same
//! lints, and a test that reads this file). Every signal is blocked in it from birth (the
//! spawning thread blocks them around the clone), so no handler of the host ever runs on its
//! memory; only SIGKILL reaches it.
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unreachable,
    clippy::todo,
    clippy::unimplemented,
    clippy::string_slice,
    clippy::missing_asserts_for_indexing,
    clippy::panic_in_result_fn,
    clippy::std_instead_of_core
)]

use core::ffi::{c_int, c_void};

/// A raw system call with up to four arguments: the kernel's result (a negative value is
/// `-errno`). Touches no thread-local state.
///
/// # Safety
/// The caller passes arguments valid for system call `n`.
#[cfg(target_arch = "x86_64")]
unsafe fn raw(n: libc::c_long, a: usize, b: usize, c: usize, d: usize) -> isize {
    let ret: isize;
    // SAFETY: the x86_64 Linux system-call convention; rcx and r11 are clobbered by `syscall`.
    unsafe {
        core::arch::asm!(
            "syscall",
            inlateout("rax") n as isize => ret,
            in("rdi") a,
            in("rsi") b,
            in("rdx") c,
            in("r10") d,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// See the x86_64 version.
///
/// # Safety
/// The caller passes arguments valid for system call `n`.
#[cfg(target_arch = "aarch64")]
unsafe fn raw(n: libc::c_long, a: usize, b: usize, c: usize, d: usize) -> isize {
    let ret: isize;
    // SAFETY: the aarch64 Linux system-call convention (number in x8, result in x0).
    unsafe {
        core::arch::asm!(
            "svc 0",
            in("x8") n,
            inlateout("x0") a as isize => ret,
            in("x1") b,
            in("x2") c,
            in("x3") d,
            options(nostack),
        );
    }
    ret
}

/// Whether the raw system calls of this module exist on this architecture: elsewhere the
/// watchdog is always a plain fork, which may use libc.
pub(super) const SHARED_MEMORY_OK: bool =
    cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
unsafe fn raw(n: libc::c_long, a: usize, b: usize, c: usize, d: usize) -> isize {
    // SAFETY: only ever reached in a forked watchdog (SHARED_MEMORY_OK is false), whose errno
    // is its own.
    let r = unsafe { libc::syscall(n, a, b, c, d) };
    if r < 0 {
        // SAFETY: as above.
        -(unsafe { *libc::__errno_location() } as isize)
    } else {
        r as isize
    }
}

/// A system call interrupted by a signal, as the kernel returns it.
const NEG_EINTR: isize = -4;
const _: () = assert!(libc::EINTR == 4);

/// Packs what the watchdog needs into its one argument: no memory is read after the clone,
/// so nothing of the parent's must stay alive for it.
pub(super) fn pack(pgid: libc::pid_t, alarm: c_int) -> usize {
    let pgid = u32::try_from(pgid).unwrap_or(0);
    let alarm = u32::try_from(alarm).unwrap_or(0);
    ((u64::from(pgid) << 32) | u64::from(alarm)) as usize
}

/// The watchdog's entry point for `clone` with a stack of its own.
pub(super) extern "C" fn watchdog_entry(arg: *mut c_void) -> c_int {
    watchdog_main(arg as usize)
}

/// Joins the group, keeps only the alarm pipe, waits for its end and ends the group.
pub(super) fn watchdog_main(packed: usize) -> ! {
    let packed = packed as u64;
    let pgid = (packed >> 32) as usize;
    let alarm = (packed & 0xffff_ffff) as usize;
    // SAFETY: setpgid(0, pgid) changes only this process's group (the parent also sets it, as
    // shells do, so whichever runs first wins and neither can race the other).
    unsafe { raw(libc::SYS_setpgid, 0, pgid, 0, 0) };
    keep_only(alarm);
    let mut byte = 0u8;
    loop {
        // SAFETY: reads at most one byte into a live local.
        let r = unsafe {
            raw(
                libc::SYS_read,
                alarm,
                core::ptr::from_mut(&mut byte) as usize,
                1,
                0,
            )
        };
        if r == NEG_EINTR || r == 1 {
            continue;
        }
        break;
    }
    // End of file (the wrapper is gone) or an error: fail closed. kill(0, SIGKILL) reaches
    // every process of this process's group, this one included.
    // SAFETY: kill only reads its arguments.
    unsafe { raw(libc::SYS_kill, 0, libc::SIGKILL as usize, 0, 0) };
    loop {
        // SAFETY: exit ends this process; reached only if the kill above did not.
        unsafe { raw(libc::SYS_exit, 0, 0, 0, 0) };
    }
}

/// Closes every descriptor but `keep`: the watchdog has a copy of the spawning process's
/// descriptor table, and a copy of the session's end of the server's stdin (or of a host's
/// pipe) would keep its reader from ever seeing end of file. `close_range` (Linux 5.9), else the
/// entries of `/proc/self/fd`.
fn keep_only(keep: usize) {
    let below = keep.checked_sub(1);
    let above = keep.saturating_add(1);
    // SAFETY: close_range closes descriptors of this process's own table.
    let r1 = match below {
        Some(last) => unsafe { raw(libc::SYS_close_range, 0, last, 0, 0) },
        None => 0,
    };
    // SAFETY: as above.
    let r2 = unsafe { raw(libc::SYS_close_range, above, u32::MAX as usize, 0, 0) };
    if r1 == 0 && r2 == 0 {
        return;
    }
    close_listed(keep);
}

/// The directory of this process's open descriptors.
const PROC_SELF_FD: &core::ffi::CStr = c"/proc/self/fd";
/// Size of the `getdents64` buffer on the watchdog's stack.
const DIRENT_BUFFER: usize = 1024;
/// Offsets in a `linux_dirent64` record: `d_reclen` and the NUL-terminated name.
const RECLEN_AT: usize = 16;
const NAME_AT: usize = 19;

/// Closes every descriptor `/proc/self/fd` lists but `keep` and the directory itself.
fn close_listed(keep: usize) {
    // SAFETY: opens a directory read-only; the path is a static NUL-terminated string.
    let dir = unsafe {
        raw(
            libc::SYS_openat,
            libc::AT_FDCWD as usize,
            PROC_SELF_FD.as_ptr() as usize,
            (libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) as usize,
            0,
        )
    };
    let Ok(dir) = usize::try_from(dir) else {
        return;
    };
    let mut buf = [0u8; DIRENT_BUFFER];
    loop {
        // SAFETY: getdents64 writes at most `buf.len()` bytes of records into `buf`.
        let n = unsafe {
            raw(
                libc::SYS_getdents64,
                dir,
                buf.as_mut_ptr() as usize,
                buf.len(),
                0,
            )
        };
        if n == NEG_EINTR {
            continue;
        }
        let Ok(n) = usize::try_from(n) else { break };
        let Some(listed) = buf.get(..n).filter(|l| !l.is_empty()) else {
            break;
        };
        let mut at = 0usize;
        while let Some(record) = listed.get(at..) {
            let Some(&[lo, hi]) = record.get(RECLEN_AT..RECLEN_AT.saturating_add(2)) else {
                break;
            };
            let len = usize::from(u16::from_ne_bytes([lo, hi]));
            if len == 0 {
                break;
            }
            if let Some(fd) = record
                .get(NAME_AT..len.min(record.len()))
                .and_then(super::in_child::descriptor_number)
                .and_then(|fd| usize::try_from(fd).ok())
            {
                if fd != keep && fd != dir {
                    // SAFETY: closes a descriptor of this process's own table.
                    unsafe { raw(libc::SYS_close, fd, 0, 0, 0) };
                }
            }
            at = at.saturating_add(len);
        }
    }
    // SAFETY: closes the directory descriptor opened above.
    unsafe { raw(libc::SYS_close, dir, 0, 0, 0) };
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::std_instead_of_core)]
mod tests {
    use super::*;

    #[test]
    fn packing_keeps_both_numbers() {
        let p = pack(123_456, 17) as u64;
        assert_eq!(p >> 32, 123_456);
        assert_eq!(p & 0xffff_ffff, 17);
    }

    /// The module's promise beyond what the lints see: no libc call outside `raw`'s fallback,
    /// no allocating or panicking construct.
    #[test]
    fn source_calls_no_libc_function_and_allocates_nothing() {
        let source = include_str!("watchdog_code.rs");
        let code = source.split("#[cfg(test)]").next().unwrap();
        // The fallback `raw` of other architectures is the one place libc is called.
        let code: String = code
            .split("#[cfg(not(any(target_arch")
            .enumerate()
            .map(|(i, part)| {
                if i == 0 {
                    part.to_string()
                } else {
                    part.split_once("\n}\n")
                        .map_or("", |(_, rest)| rest)
                        .to_string()
                }
            })
            .collect();
        let code: String = code
            .lines()
            .filter(|l| {
                let t = l.trim_start();
                !(t.starts_with("//") || t.starts_with("#!") || t.starts_with("clippy::"))
            })
            .collect::<Vec<_>>()
            .join("\n");
        for forbidden in [
            "libc::syscall",
            "libc::read",
            "libc::write",
            "libc::close(",
            "libc::kill(",
            "libc::_exit",
            "__errno_location",
            "Vec",
            "String",
            "Box",
            "vec!",
            "format!",
            "print",
            "std::",
            "alloc",
            "panic",
            "unwrap(",
            "expect(",
            "Mutex",
        ] {
            assert!(
                !code.contains(forbidden),
                "watchdog_code.rs uses `{forbidden}` outside its tests"
            );
        }
    }
}
