//! The thread-local message behind `assay_last_error` (SPEC §8).
//!
//! Held like librustls/src/userdata.rs holds per-thread state: `thread_local!` + `RefCell`. The
//! message text is always the error's `Display`; a status is returned even when no message can be
//! stored (for example during thread teardown).

use std::cell::RefCell;
use std::ffi::{CString, c_char};
use std::ptr;

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// Forgets the message of an earlier call on this thread.
pub(crate) fn clear() {
    let _ = LAST_ERROR.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            *slot = None;
        }
    });
}

/// Stores `message` as this thread's last error. Interior NUL bytes (which a C string cannot
/// hold) are shown as `\0`.
pub(crate) fn set(message: &str) {
    let text = if message.contains('\0') {
        message.replace('\0', "\\0")
    } else {
        message.to_owned()
    };
    let Ok(text) = CString::new(text) else {
        return;
    };
    let _ = LAST_ERROR.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            *slot = Some(text);
        }
    });
}

/// A pointer to this thread's message, or NULL. The bytes live in the thread-local `CString`,
/// which stays in place until the next [`clear`] or [`set`] on this thread.
pub(crate) fn as_ptr() -> *const c_char {
    LAST_ERROR
        .try_with(|slot| match slot.try_borrow() {
            Ok(slot) => slot.as_ref().map_or(ptr::null(), |s| s.as_ptr()),
            Err(_) => ptr::null(),
        })
        .unwrap_or(ptr::null())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn set_clear_and_nul_bytes() {
        clear();
        assert!(as_ptr().is_null());
        set("a\0b");
        let p = as_ptr();
        assert!(!p.is_null());
        // SAFETY: `p` points into the thread-local CString, which nothing replaces before the read.
        let text = unsafe { CStr::from_ptr(p) };
        assert_eq!(text.to_str().unwrap(), "a\\0b");
        clear();
        assert!(as_ptr().is_null());
    }

    #[test]
    fn per_thread() {
        set("here");
        std::thread::spawn(|| assert!(as_ptr().is_null()))
            .join()
            .unwrap();
        assert!(!as_ptr().is_null());
        clear();
    }
}
