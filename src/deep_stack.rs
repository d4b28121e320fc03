//! Deep work on a stack of known size (SPEC §3.1b "Small stacks"): a host may call an entry point
//! on a thread with a small stack (musl's default is 128 KiB; hosts set 64 KiB), and compiling a
//! policy — its YAML, the constraint tree, the JSON Schemas of `schemas:` (compiled by a
//! recursive library) — recurses as deep as the deepest admissible policy. That work runs on a
//! thread of the library's own with [`STACK_BYTES`], whatever the caller's stack.
#![forbid(unsafe_code)]

/// The stack of the thread deep work runs on: the main thread's usual 8 MiB.
pub(crate) const STACK_BYTES: usize = 8 << 20;

/// Runs `work` on a new thread with a stack of [`STACK_BYTES`] and returns its result. When no
/// thread can be started (`EAGAIN`), `work` runs on the calling thread instead: a host that
/// cannot start a thread gets its answer on its own stack rather than no answer. A panic in
/// `work` is resumed on the caller (the C ABI's panic boundary catches it).
///
/// `None` only if the work was lost (its slot's lock poisoned), which nothing here can cause.
pub(crate) fn run<T: Send>(work: impl FnOnce() -> T + Send) -> Option<T> {
    let slot = std::sync::Mutex::new(Some(work));
    let take = || slot.lock().ok().and_then(|mut w| w.take());
    let on_own_stack = std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("assay-deep".to_string())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, || take().map(|w| w()));
        match spawned {
            Ok(handle) => match handle.join() {
                Ok(value) => value,
                Err(panic) => std::panic::resume_unwind(panic),
            },
            Err(_) => None,
        }
    });
    // No thread could be started: the work is still in its slot, and runs here.
    on_own_stack.or_else(|| take().map(|w| w()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn work_runs_on_a_stack_of_its_own_and_its_result_comes_back() {
        let name = super::run(|| std::thread::current().name().map(str::to_string));
        assert_eq!(name.flatten().as_deref(), Some("assay-deep"));
    }
}
