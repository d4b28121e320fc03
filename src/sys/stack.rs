//! The calling thread's stack as the kernel sees it (SPEC §3.1b "Small stacks"): whether the
//! caller is the process's main thread — the one thread whose stack the kernel grows on demand,
//! up to the soft `RLIMIT_STACK` — and that limit. `deep_stack` decides with these where deep
//! work runs.
#![forbid(unsafe_code)]

/// Whether the calling thread is the process's main thread (its thread id is the process id).
pub(crate) fn on_main_thread() -> bool {
    nix::unistd::gettid() == nix::unistd::getpid()
}

/// The soft `RLIMIT_STACK` in bytes, `u64::MAX` when unlimited; `None` when it cannot be read.
pub(crate) fn stack_limit() -> Option<u64> {
    use nix::sys::resource::{RLIM_INFINITY, Resource, getrlimit};
    let (soft, _hard) = getrlimit(Resource::RLIMIT_STACK).ok()?;
    Some(if soft == RLIM_INFINITY {
        u64::MAX
    } else {
        soft
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
