//! A call that returns while the interpreter finalizes never takes the GIL back (SPEC §3.1b,
//! "Interpreter shutdown").
//!
//! CPython before 3.14 ends a thread that waits for the GIL once finalization has begun with
//! `pthread_exit`; its forced unwind runs through the Rust frames of the waiting call and crashes
//! the host. Asking `Py_IsFinalizing` before taking the GIL back is not enough: a thread that asked
//! too early then waits in `take_gil`, and finalization begins while it waits. So the question and
//! the wait are made one step by a gate that finalization itself passes through:
//!
//! - Every call releases the GIL for its work ([`detach`]). When the work is done, the thread takes
//!   a *pass* (still without the GIL), takes the GIL back, builds its Python result and only then
//!   gives the pass back. A thread that finds the gate closed takes no pass: it parks until the
//!   process exits (it is a daemon thread: Python no longer waits for it), as CPython 3.14 does.
//! - The module registers an `atexit` hook ([`close`]). CPython runs `atexit` hooks before it marks
//!   the runtime finalizing, with the GIL held by the finalizing thread. The hook closes the gate,
//!   releases the GIL and waits until every pass is back. So no thread of ours is waiting for the
//!   GIL, or running Python code between two of our frames, when finalization begins: the ones
//!   with a pass finished before, every later one parks.
//!
//! The finalizing thread itself may still call in (a later `atexit` hook, a `__del__`): it is never
//! ended by `take_gil`, so it always passes, as does a call nested inside a call that holds a pass.
//! Without the hook (it was unregistered, or `atexit` cleared), `Py_IsFinalizing` is asked instead
//! and a thread other than the process's main thread parks: the narrower guard of old.

use std::cell::Cell;
use std::ffi::{CStr, c_int};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, Once, OnceLock, PoisonError};

use pyo3::prelude::*;

/// The gate's "closed" bit; the bits below it count the passes out.
const CLOSED: usize = 1 << (usize::BITS - 1);

/// The gate: [`CLOSED`] once the `atexit` hook ran, and the number of passes out.
static GATE: AtomicUsize = AtomicUsize::new(0);

/// Wakes the hook when a pass comes back after the gate closed.
static RETURNED: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());

thread_local! {
    /// How many passes this thread holds (more than one when a call runs inside another's
    /// result building, e.g. from a `__del__`).
    static HELD: Cell<usize> = const { Cell::new(0) };
    /// Whether this thread ran the `atexit` hook: the thread that finalizes the interpreter.
    static FINALIZER: Cell<bool> = const { Cell::new(false) };
}

/// Runs `work` with the GIL released, then `finish` with the GIL held to build the call's Python
/// result. Once the interpreter has begun to exit, a thread whose work is done parks until the
/// process exits instead of taking the GIL back. A panic in `work` resumes once the GIL is held
/// (PyO3 turns it into `PanicException`).
pub(crate) fn detach<'py, T, R, W, F>(py: Python<'py>, work: W, finish: F) -> PyResult<R>
where
    T: Send,
    W: Send + FnOnce() -> T,
    F: FnOnce(Python<'py>, T) -> PyResult<R>,
{
    let (out, pass) = py.detach(move || {
        let out = panic::catch_unwind(AssertUnwindSafe(work));
        match Pass::take() {
            Some(pass) => (out, pass),
            None => park_forever(),
        }
    });
    let out = match out {
        Ok(value) => value,
        // `pass` is given back as the panic unwinds.
        Err(payload) => panic::resume_unwind(payload),
    };
    let result = finish(py, out);
    if let Err(e) = &result {
        // The exception object is made now, while the pass is held, not in PyO3's return path.
        e.value(py);
    }
    drop(pass);
    result
}

/// Registers the hook that closes the gate at exit, and the fork handler that opens it again in
/// a child. Called from the module's initialization.
pub(crate) fn install(m: &Bound<'_, PyModule>) -> PyResult<()> {
    static AT_FORK: Once = Once::new();
    AT_FORK.call_once(|| {
        // SAFETY: registers a handler that only stores to an atomic and this thread's
        // thread-locals, which is allowed in a child between fork and exec.
        unsafe { libc::pthread_atfork(None, None, Some(reopen_in_child)) };
    });
    let hook = wrap_pyfunction!(close, m)?;
    m.py().import("atexit")?.call_method1("register", (hook,))?;
    Ok(())
}

/// The `atexit` hook: closes the gate and waits, with the GIL released, until every pass is back.
#[pyfunction]
#[pyo3(name = "_close_gate_at_exit")]
fn close(py: Python<'_>) {
    FINALIZER.set(true);
    let own = HELD.get();
    py.detach(move || {
        GATE.fetch_or(CLOSED, Ordering::SeqCst);
        let (lock, returned) = &RETURNED;
        let mut guard = lock.lock().unwrap_or_else(PoisonError::into_inner);
        while GATE.load(Ordering::SeqCst) & !CLOSED > own {
            guard = returned.wait(guard).unwrap_or_else(PoisonError::into_inner);
        }
    });
}

/// A fork child has only the forking thread: the passes of the parent's other threads are not
/// out there, and the child's own exit closes its gate again.
extern "C" fn reopen_in_child() {
    GATE.store(HELD.get(), Ordering::SeqCst);
    FINALIZER.set(false);
}

/// Permission to take the GIL back and run Python code: held from the end of a call's work until
/// its Python result is built.
struct Pass;

impl Pass {
    /// A pass, or `None` when this thread must not take the GIL back (park instead).
    fn take() -> Option<Pass> {
        let exempt = HELD.get() > 0 || FINALIZER.get();
        let mut gate = GATE.load(Ordering::SeqCst);
        loop {
            if !exempt && gate & CLOSED != 0 {
                return None;
            }
            if !exempt && finalizing_without_hook() {
                return None;
            }
            match GATE.compare_exchange(gate, gate + 1, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => break,
                Err(now) => gate = now,
            }
        }
        HELD.set(HELD.get() + 1);
        Some(Pass)
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        HELD.set(HELD.get().saturating_sub(1));
        let before = GATE.fetch_sub(1, Ordering::SeqCst);
        if before & CLOSED != 0 {
            // Taking the lock orders this wake-up after the hook's check (no lost wake-up).
            let (lock, returned) = &RETURNED;
            drop(lock.lock().unwrap_or_else(PoisonError::into_inner));
            returned.notify_all();
        }
    }
}

fn park_forever() -> ! {
    loop {
        std::thread::park();
    }
}

/// Whether the interpreter finalizes although the hook never ran, seen from a thread other than
/// the process's main thread (the one that finalizes when no hook says otherwise).
fn finalizing_without_hook() -> bool {
    if !finalizing() {
        return false;
    }
    // SAFETY: getpid and the gettid system call take no argument and cannot fail.
    let (pid, tid) = unsafe { (libc::getpid(), libc::syscall(libc::SYS_gettid)) };
    libc::c_long::from(pid) != tid
}

type IsFinalizing = unsafe extern "C" fn() -> c_int;

/// `Py_IsFinalizing` (3.13+) or `_Py_IsFinalizing` (3.9–3.12), looked up in the running
/// interpreter: neither is in the limited API the module is built against.
fn lookup() -> Option<IsFinalizing> {
    const NAMES: [&CStr; 2] = [c"Py_IsFinalizing", c"_Py_IsFinalizing"];
    NAMES.iter().find_map(|name| {
        // SAFETY: dlsym with RTLD_DEFAULT only reads the loaded objects' symbol tables; the name
        // is a NUL-terminated string.
        let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
        // SAFETY: both symbols are CPython functions `int (void)`; a null pointer is `None`.
        (!sym.is_null())
            .then(|| unsafe { std::mem::transmute::<*mut libc::c_void, IsFinalizing>(sym) })
    })
}

/// Whether the interpreter is finalizing (`false` when it cannot be told).
fn finalizing() -> bool {
    static FUNCTION: OnceLock<Option<IsFinalizing>> = OnceLock::new();
    match FUNCTION.get_or_init(lookup) {
        // SAFETY: the function takes no argument, reads one runtime field and may be called
        // without the GIL (CPython calls it so itself).
        Some(f) => unsafe { f() != 0 },
        None => false,
    }
}
