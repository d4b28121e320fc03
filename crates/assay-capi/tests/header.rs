//! The checked-in C header `include/assay.h` must be exactly what the pinned cbindgen generates
//! from this crate's `src/` with its `cbindgen.toml` (STYLE "Generate the header, commit it, check
//! it for drift").
//!
//! Regenerate after changing the C ABI (`crates/assay-capi/src`), from the repository root:
//!
//! ```text
//! cargo test --test tests regenerate_header -- --ignored
//! ```

use std::path::{Path, PathBuf};

/// The repository root (this crate lives in `crates/assay-capi`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/assay-capi sits two levels below the repository root")
        .to_path_buf()
}

/// This crate's directory.
fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const REGENERATE: &str = "cargo test --test tests regenerate_header -- --ignored";

fn header_path() -> PathBuf {
    root().join("include/assay.h")
}

/// The header as cbindgen generates it now.
fn generate() -> String {
    let dir = crate_dir();
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen generates the header");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("header is UTF-8")
}

fn checked_in() -> String {
    std::fs::read_to_string(header_path()).unwrap_or_default()
}

#[test]
fn header_is_up_to_date() {
    let generated = generate();
    let committed = checked_in();
    if generated != committed {
        let gen_lines: Vec<&str> = generated.lines().collect();
        let com_lines: Vec<&str> = committed.lines().collect();
        let first = gen_lines
            .iter()
            .zip(&com_lines)
            .position(|(a, b)| a != b)
            .unwrap_or(gen_lines.len().min(com_lines.len()));
        panic!(
            "include/assay.h is out of date with crates/assay-capi/src and cbindgen.toml.\n\
             first difference at line {}:\n  checked in: {:?}\n  generated:  {:?}\n\
             ({} lines checked in, {} generated)\n\
             regenerate it with:\n  {REGENERATE}",
            first + 1,
            com_lines.get(first).copied().unwrap_or("<end of file>"),
            gen_lines.get(first).copied().unwrap_or("<end of file>"),
            com_lines.len(),
            gen_lines.len(),
        );
    }
}

/// Writes the generated header to include/assay.h. Run on purpose only (see the module docs).
#[test]
#[ignore = "writes include/assay.h; run explicitly to regenerate it"]
fn regenerate_header() {
    std::fs::write(header_path(), generate()).expect("write include/assay.h");
    eprintln!("wrote {}", header_path().display());
}

#[test]
fn enum_names_and_values_are_the_spec_ones() {
    let header = checked_in();
    // SPEC §8, spelled exactly.
    for (name, value) in [
        ("ASSAY_OK", 0),
        ("ASSAY_ERR_INVALID_ARGUMENT", 1),
        ("ASSAY_ERR_CONFIG", 2),
        ("ASSAY_ERR_IO", 3),
        ("ASSAY_ERR_STOP_WRITE", 4),
        ("ASSAY_ERR_PANIC", 5),
        ("ASSAY_CLOSURE_CLOSED", 0),
        ("ASSAY_CLOSURE_INCOMPLETE", 1),
        ("ASSAY_CLOSURE_UNKNOWN", 2),
    ] {
        let line = format!("{name} = {value},");
        assert!(
            header.lines().any(|l| l.trim() == line),
            "include/assay.h lacks `{line}`"
        );
    }
    for ty in ["AssayStatus", "AssayClosure"] {
        assert!(
            header.contains(&format!("typedef uint32_t {ty};")),
            "include/assay.h lacks the fixed-width typedef of {ty}"
        );
    }
}

#[test]
fn the_seven_functions_are_declared() {
    let header = checked_in();
    // SPEC §8 signatures, modulo cbindgen's spacing.
    for decl in [
        "uint32_t assay_abi_version(void);",
        "const char *assay_version(void);",
        "AssayStatus assay_wrap_session(const char *config_json, char **outcome_json);",
        "AssayStatus assay_read_capture(const char *capture_dir,",
        "AssayStatus assay_package_capture(const char *src_dir,",
        "const char *assay_last_error(void);",
        "void assay_string_free(char *s);",
    ] {
        assert!(header.contains(decl), "include/assay.h lacks `{decl}`");
    }
}
