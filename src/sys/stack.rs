//! The calling thread's stack as the kernel sees it (SPEC §3.1b "Small stacks"): whether the
//! caller is the process's main thread — the one thread whose stack the kernel grows on demand,
//! up to the soft `RLIMIT_STACK` — and that limit. `deep_stack` decides with these where deep
//! work runs.

/// Whether the calling thread is the process's main thread (its thread id is the process id).
pub(crate) fn on_main_thread() -> bool {
    nix::unistd::gettid() == nix::unistd::getpid()
}

/// The soft `RLIMIT_STACK` in bytes, `u64::MAX` when unlimited; `None` when it cannot be read.
pub(crate) fn stack_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one `rlimit` into the live, exclusively borrowed `limit`.
    let r = unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut limit) };
    if r != 0 {
        return None;
    }
    Some(if limit.rlim_cur == libc::RLIM_INFINITY {
        u64::MAX
    } else {
        limit.rlim_cur
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_test_thread_is_not_the_main_thread_and_the_limit_reads() {
        // libtest runs each test on a thread of its own.
        let on_main = std::thread::current().name() == Some("main");
        assert_eq!(super::on_main_thread(), on_main);
        assert!(super::stack_limit().is_some_and(|l| l > 0));
    }
}
