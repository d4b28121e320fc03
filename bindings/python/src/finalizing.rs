//! A call that returns while the interpreter finalizes never takes the GIL back (SPEC §3.1b,
//! "Interpreter shutdown").
//!
//! CPython before 3.14 ends a thread that asks for the GIL during finalization with
//! `pthread_exit`; its forced unwind runs through the Rust frames of the returning call and
//! crashes the host (SIGSEGV), PyO3 0.30 included. So every call that releases the GIL asks,
//! before it takes it back, whether the interpreter is finalizing, and if so parks its thread
//! until the process exits (a daemon thread: Python no longer waits for it), as CPython 3.14 does
//! itself. Finalization that begins between the question and the re-acquisition is not covered:
//! that window is a few instructions long.

use std::ffi::{CStr, c_int};
use std::sync::OnceLock;

use pyo3::Python;

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

/// Runs `f` with the GIL released ([`Python::detach`]) and takes the GIL back only when the
/// interpreter is not finalizing; otherwise the thread parks until the process exits.
pub(crate) fn detach<T: Send, F: Send + FnOnce() -> T>(py: Python<'_>, f: F) -> T {
    py.detach(move || {
        let out = f();
        if finalizing() {
            loop {
                std::thread::park();
            }
        }
        out
    })
}
