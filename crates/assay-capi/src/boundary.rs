//! The panic boundary every C entry point goes through (the idea of librustls/src/panic.rs).
//!
//! Unwinding into C is undefined behaviour, so each `extern "C"` body runs inside [`guard`], which
//! catches a panic and returns the fallback chosen by the return type ([`PanicFallback`]):
//! `ASSAY_ERR_PANIC` for a status, NULL for a `const char *`, 0 for the ABI version, nothing for
//! `assay_string_free`. This needs `panic = "unwind"` in every shipped profile (Cargo.toml); with
//! `panic = "abort"` a panic would end the host process instead.

use std::any::Any;
use std::ffi::c_char;
use std::panic::{self, AssertUnwindSafe};
use std::ptr;

use super::last_error;
use super::status::AssayStatus;

/// The value an entry point returns when its body panicked.
pub(crate) trait PanicFallback {
    /// The fallback value.
    fn on_panic() -> Self;
}

impl PanicFallback for AssayStatus {
    fn on_panic() -> Self {
        AssayStatus::ASSAY_ERR_PANIC
    }
}

impl PanicFallback for *const c_char {
    fn on_panic() -> Self {
        ptr::null()
    }
}

impl PanicFallback for u32 {
    fn on_panic() -> Self {
        0
    }
}

impl PanicFallback for () {
    fn on_panic() -> Self {}
}

/// Runs `body`, turning a panic into the return type's fallback and a last-error message.
///
/// `AssertUnwindSafe` is sound here: after a panic nothing the closure captured is used again,
/// and the library's shared state (the thread-local message) is only replaced, never observed
/// half-updated.
pub(crate) fn guard<T: PanicFallback>(body: impl FnOnce() -> T) -> T {
    match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            last_error::set(&format!("internal error: panic: {}", panic_text(&*payload)));
            T::on_panic()
        }
    }
}

/// [`guard`] for an entry point that starts by forgetting this thread's last error (every entry
/// point except `assay_last_error`, which reads it).
pub(crate) fn entry<T: PanicFallback>(body: impl FnOnce() -> T) -> T {
    guard(|| {
        last_error::clear();
        body()
    })
}

fn panic_text(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(no message)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn fallbacks() {
        let status: AssayStatus = guard(|| panic!("boom {}", 1));
        let p: *const c_char = guard(|| panic!("boom"));
        let v: u32 = guard(|| panic!("boom"));
        guard::<()>(|| panic!("boom"));
        assert_eq!(status, AssayStatus::ASSAY_ERR_PANIC);
        assert!(p.is_null());
        assert_eq!(v, 0);
        let msg = last_error::as_ptr();
        assert!(!msg.is_null());
        // SAFETY: points into the thread-local message, unchanged until the next set/clear.
        let msg = unsafe { CStr::from_ptr(msg) }.to_str().unwrap().to_owned();
        assert_eq!(msg, "internal error: panic: boom");
        assert_eq!(guard(|| AssayStatus::ASSAY_OK), AssayStatus::ASSAY_OK);
        last_error::clear();
    }
}
