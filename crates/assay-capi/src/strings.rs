//! Strings across the boundary: reading the caller's `const char *` arguments, handing out
//! `char *` results allocated here, and taking them back in `assay_string_free`.
//!
//! Every string handed to C is a `CString` turned into a raw pointer with `CString::into_raw`;
//! `assay_string_free` is the only place that turns one back (`CString::from_raw`), so C must
//! never free these with `free(3)` and Rust never frees memory it did not allocate.

use std::ffi::{CStr, CString, c_char};
use std::ptr;

use core_api::{Error, ErrorKind};

/// Reads a required string argument.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] when `p` is NULL or the bytes are not UTF-8.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that stays valid and unchanged for `'a`.
pub(crate) unsafe fn str_arg<'a>(p: *const c_char, name: &str) -> Result<&'a str, Error> {
    if p.is_null() {
        return Err(Error::invalid_argument(format!("{name} is NULL")));
    }
    // SAFETY: `p` is not NULL, and the caller guarantees it is NUL-terminated and valid for 'a.
    let bytes = unsafe { CStr::from_ptr(p) };
    bytes
        .to_str()
        .map_err(|e| Error::invalid_argument(format!("{name} is not valid UTF-8: {e}")))
}

/// Sets an optional `char **` output to NULL (done first thing, so every error path leaves NULL).
///
/// # Safety
/// `out` is NULL or valid for writing one pointer.
pub(crate) unsafe fn clear_out(out: *mut *mut c_char) {
    if !out.is_null() {
        // SAFETY: `out` is not NULL and the caller guarantees it is writable.
        unsafe { out.write(ptr::null_mut()) };
    }
}

/// Hands `text` to C through the optional output `out`. Does nothing when `out` is NULL.
///
/// # Errors
/// [`ErrorKind::Internal`] when `text` holds a NUL byte (JSON from serde never does: it escapes
/// U+0000 as `\u0000`).
///
/// # Safety
/// `out` is NULL or valid for writing one pointer.
pub(crate) unsafe fn put_out(out: *mut *mut c_char, text: String) -> Result<(), Error> {
    if out.is_null() {
        return Ok(());
    }
    let owned = CString::new(text)
        .map_err(|_| Error::new(ErrorKind::Internal, "result text holds a NUL byte"))?;
    // SAFETY: `out` is not NULL and the caller guarantees it is writable.
    unsafe { out.write(owned.into_raw()) };
    Ok(())
}

/// Frees a string made by [`put_out`]. NULL is ignored.
///
/// # Safety
/// `s` is NULL or a pointer returned through [`put_out`] that has not been freed yet.
pub(crate) unsafe fn free(s: *mut c_char) {
    if !s.is_null() {
        // SAFETY: the caller guarantees `s` came from `CString::into_raw` in `put_out` and is
        // freed only once, so ownership returns to the CString that allocated it.
        drop(unsafe { CString::from_raw(s) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_and_outputs() {
        // SAFETY: NULL is allowed.
        let err = unsafe { str_arg(ptr::null(), "x") }.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        let bad = c"\xff\xfe";
        // SAFETY: a static NUL-terminated string.
        let err = unsafe { str_arg(bad.as_ptr(), "x") }.unwrap_err();
        assert!(err.to_string().contains("UTF-8"), "{err}");
        // SAFETY: as above.
        assert_eq!(unsafe { str_arg(c"ok".as_ptr(), "x") }.unwrap(), "ok");

        let mut out: *mut c_char = ptr::dangling_mut();
        // SAFETY: `out` is a local, writable slot.
        unsafe { clear_out(&mut out) };
        assert!(out.is_null());
        // SAFETY: as above; then `out` holds a string from put_out, freed once.
        unsafe {
            put_out(&mut out, "hello".into()).unwrap();
            assert_eq!(CStr::from_ptr(out).to_str().unwrap(), "hello");
            free(out);
            free(ptr::null_mut());
            put_out(ptr::null_mut(), "ignored".into()).unwrap();
        }
    }
}
