//! Integration tests driving the real binary, library and C ABI.
