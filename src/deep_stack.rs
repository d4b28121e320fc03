//! Deep work on a stack of known size (SPEC §3.1b "Small stacks"): a host may call an entry point
//! on a thread with a small stack (musl's default is 128 KiB; hosts set 64 KiB), and compiling a
//! policy — its YAML, the constraint tree, the JSON Schemas of `schemas:` (compiled by a
//! recursive library) — recurses as deep as the deepest admissible policy. That work runs on a
//! thread of the library's own with [`STACK_BYTES`], whatever the caller's stack.
//!
//! One caller keeps the work on its own thread: the main thread of a program that declared it
//! runs on the stack the kernel gave it ([`declare_main_thread_stack`], the `assay` binary), when
//! `RLIMIT_STACK` is at least [`STACK_BYTES`] or unlimited. The kernel grows the main thread's
//! stack on demand up to that limit, and `execve` gives arguments and environment at most a
//! quarter of it: 6 MiB remain, less a few KiB (auxiliary vector, random offset, the frames above
//! the call) — three times what the most stack-hungry admissible policy measured needs in a
//! debug build (the tests below compile it on half of that). Starting the thread was ~10% of the
//! wrapper's start-up (bench/README.md, docs/decisions.md "Start-up: the command line compiles
//! its policy on its own main thread").
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};

/// The stack of the thread deep work runs on: the main thread's usual 8 MiB.
pub(crate) const STACK_BYTES: usize = 8 << 20;

/// Set by [`declare_main_thread_stack`].
static MAIN_THREAD_STACK_DECLARED: AtomicBool = AtomicBool::new(false);

/// Declares that this process's main thread runs on the stack the kernel set up at `execve`
/// (a program's `main` that never switches stacks), so that deep work the main thread asks for
/// (compiling a policy) runs on it when `RLIMIT_STACK` is at least 8 MiB or unlimited, instead of
/// on a thread of the library's own (SPEC §3.1b). Other threads are not affected. The `assay`
/// binary calls this first thing; a library host has no need to. A program whose main thread
/// does run on a stack of its own making must not call it: a deep policy could overflow that
/// stack (the process then dies, as on any overflow).
pub fn declare_main_thread_stack() {
    MAIN_THREAD_STACK_DECLARED.store(true, Ordering::Relaxed);
}

/// Where deep work runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// On the caller's thread: the declared main thread, its stack allowed [`STACK_BYTES`].
    CallingThread,
    /// On a thread of [`STACK_BYTES`] of its own.
    OwnThread,
}

/// The decision: the calling thread only when the program declared its main thread's stack,
/// the caller is that thread, and `RLIMIT_STACK` (`u64::MAX`: unlimited; `None`: unreadable)
/// lets it grow to [`STACK_BYTES`].
fn place(declared: bool, on_main_thread: bool, stack_limit: Option<u64>) -> Place {
    let enough = stack_limit.is_some_and(|limit| limit >= STACK_BYTES as u64);
    if declared && on_main_thread && enough {
        Place::CallingThread
    } else {
        Place::OwnThread
    }
}

/// [`place`] for the calling thread now (no system call unless the main thread was declared).
fn place_now() -> Place {
    if !MAIN_THREAD_STACK_DECLARED.load(Ordering::Relaxed) {
        return Place::OwnThread;
    }
    place(
        true,
        crate::sys::stack::on_main_thread(),
        crate::sys::stack::stack_limit(),
    )
}

/// Runs `work` on the declared main thread when [`place_now`] allows it, else on a new thread
/// with a stack of [`STACK_BYTES`], and returns its result. When no thread can be started
/// (`EAGAIN`), `work` runs on the calling thread instead: a host that cannot start a thread gets
/// its answer on its own stack rather than no answer. A panic in `work` is resumed on the caller
/// (the C ABI's panic boundary catches it).
///
/// `None` only if the work was lost (its slot's lock poisoned), which nothing here can cause.
pub(crate) fn run<T: Send>(work: impl FnOnce() -> T + Send) -> Option<T> {
    if place_now() == Place::CallingThread {
        return Some(work());
    }
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
    use std::path::Path;

    use super::{Place, STACK_BYTES, place};
    use crate::policy::Policy;

    #[test]
    fn work_runs_on_a_stack_of_its_own_and_its_result_comes_back() {
        let name = super::run(|| std::thread::current().name().map(str::to_string));
        assert_eq!(name.flatten().as_deref(), Some("assay-deep"));
    }

    #[test]
    fn only_the_declared_main_thread_with_room_to_grow_keeps_the_work() {
        let eight_mib = STACK_BYTES as u64;
        // `ulimit -s 8192` (the usual default) and `ulimit -s unlimited`.
        assert_eq!(place(true, true, Some(eight_mib)), Place::CallingThread);
        assert_eq!(place(true, true, Some(u64::MAX)), Place::CallingThread);
        // A smaller limit, or one that could not be read.
        assert_eq!(place(true, true, Some(eight_mib - 1)), Place::OwnThread);
        assert_eq!(place(true, true, Some(128 << 10)), Place::OwnThread);
        assert_eq!(place(true, true, None), Place::OwnThread);
        // Any other thread of the program; any thread of a host that declared nothing.
        assert_eq!(place(true, false, Some(u64::MAX)), Place::OwnThread);
        assert_eq!(place(false, true, Some(u64::MAX)), Place::OwnThread);
    }

    #[test]
    fn after_the_declaration_other_threads_still_get_a_thread_of_their_own() {
        // libtest runs this on a thread of its own, never the process's main thread.
        super::declare_main_thread_stack();
        let name = super::run(|| std::thread::current().name().map(str::to_string));
        assert_eq!(name.flatten().as_deref(), Some("assay-deep"));
    }

    /// The deepest nesting (SPEC §5: 64 levels): a schema nesting `properties` to level 64.
    fn deepest_nesting() -> String {
        let mut schema = r#"{"type":"string","enum":["x"]}"#.to_string();
        for _ in (3..63).step_by(2) {
            schema = format!(r#"{{"type":"object","properties":{{"a":{schema}}}}}"#);
        }
        format!(r#"{{"version":"1","schemas":{{"t":{schema}}}}}"#)
    }

    /// A constraint regex of `levels` nested repetitions, `(?:(?:a)*)*`: the regex compiler
    /// recurses through them; 125 is the most its nesting bound (250) admits.
    fn nested_repetitions(levels: usize) -> String {
        let pattern = format!("{}a{}", "(?:".repeat(levels), ")*".repeat(levels));
        format!(
            "version: \"1\"\nconstraints:\n  - tool: x\n    params:\n      \
         p: {{ matches: \"{pattern}\" }}\n"
        )
    }

    /// Compiles `doc` on a thread with a stack of `bytes` (an overflow aborts the test binary).
    fn compile_on_stack(bytes: usize, doc: String, name: &'static str) -> Result<(), String> {
        let compile = move || {
            Policy::from_bytes(doc.as_bytes(), Path::new(name))
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        let thread = std::thread::Builder::new().stack_size(bytes).spawn(compile);
        thread.unwrap().join().unwrap()
    }

    /// The main thread the work stays on has at least three quarters of [`STACK_BYTES`] (`execve`
    /// gives arguments and environment at most a quarter of `RLIMIT_STACK`). The most
    /// stack-hungry admissible policies measured (debug build: the regex 1.5–2 MiB, the nesting
    /// 128–256 KiB) compile on half of that.
    #[test]
    fn the_most_stack_hungry_admissible_policies_compile_on_half_the_main_threads_least() {
        let half = STACK_BYTES * 3 / 8;
        assert_eq!(
            compile_on_stack(half, deepest_nesting(), "deepest.json"),
            Ok(())
        );
        let deepest_regex = nested_repetitions(125);
        assert_eq!(compile_on_stack(half, deepest_regex, "regex.yaml"), Ok(()));
        // One level more is not admissible.
        let refused = compile_on_stack(half, nested_repetitions(126), "regex.yaml");
        assert!(
            refused.as_ref().is_err_and(|e| e.contains("nested")),
            "{refused:?}"
        );
    }
}
