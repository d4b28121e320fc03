//! The C entry points of this run's `libassay.so` (the crate `crates/assay-capi`, built next to
//! this test binary as a dev-dependency), loaded with `dlopen` and called from Rust exactly as a C
//! host calls them. Status values are the `AssayStatus` constants of `include/assay.h` (SPEC §8).

use std::ffi::{CString, c_char, c_void};
use std::sync::OnceLock;

/// `ASSAY_OK`.
pub const ASSAY_OK: u32 = 0;
/// `ASSAY_ERR_CONFIG`.
pub const ASSAY_ERR_CONFIG: u32 = 2;

type WrapSession = unsafe extern "C" fn(*const c_char, *mut *mut c_char) -> u32;
type StringFree = unsafe extern "C" fn(*mut c_char);

/// The entry points the tests call.
pub struct CLibrary {
    /// `assay_wrap_session`.
    pub wrap_session: WrapSession,
    /// `assay_string_free`.
    pub string_free: StringFree,
}

/// `libassay.so`, loaded once for the test binary (never unloaded).
pub fn c_library() -> &'static CLibrary {
    static LIB: OnceLock<CLibrary> = OnceLock::new();
    LIB.get_or_init(|| {
        let path = crate::c_abi::lib_dir().join("libassay.so");
        let path = CString::new(path.display().to_string()).unwrap();
        // SAFETY (test): a NUL-terminated path; the handle is kept for the process's life.
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        assert!(!handle.is_null(), "dlopen libassay.so failed");
        let symbol = |name: &str| -> *mut c_void {
            let name = CString::new(name).unwrap();
            // SAFETY (test): a live handle and a NUL-terminated symbol name.
            let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
            assert!(!p.is_null(), "libassay.so lacks {name:?}");
            p
        };
        // SAFETY (test): the symbols are the header's functions, with these exact signatures.
        unsafe {
            CLibrary {
                wrap_session: std::mem::transmute::<*mut c_void, WrapSession>(symbol(
                    "assay_wrap_session",
                )),
                string_free: std::mem::transmute::<*mut c_void, StringFree>(symbol(
                    "assay_string_free",
                )),
            }
        }
    })
}
