//! `package_capture`: raw copies, the manifest, refusals that create nothing.

use serde_json::{Value, json};

use super::*;

#[test]
fn package_copies_raw_bytes_and_writes_manifest() {
    use std::os::unix::fs::PermissionsExt;
    let b = Builder::new(4);
    let src = b.build();
    std::fs::write(src.path().join(STDERR), b"child stderr\n").unwrap();
    let extra_dir = tempfile::tempdir().unwrap();
    let helper = extra_dir.path().join("session_stop.py");
    std::fs::write(&helper, b"print('hi')\n").unwrap();
    let out = tempfile::tempdir().unwrap();
    let dst = out.path().join("pkg");
    let typed = package_capture(src.path(), &dst, std::slice::from_ref(&helper)).unwrap();
    assert_eq!(typed.closure.closure, ClosureKind::Closed);
    assert_eq!(typed.schema, PACKAGE_SCHEMA);
    // The typed manifest serializes to exactly what manifest.json holds (checked below).
    let manifest = serde_json::to_value(&typed).unwrap();

    assert_eq!(manifest["schema"], "assay.capture.package.v1");
    assert_eq!(manifest["closure"]["closure"], "closed");
    assert_eq!(manifest["producer"]["name"], "assay");
    assert_eq!(manifest["producer"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        manifest["producer"]["binary_sha256"]
            .as_str()
            .unwrap()
            .len(),
        64
    );
    assert!(
        manifest["non_claims"]
            .as_array()
            .unwrap()
            .contains(&json!("not_producer_authentication"))
    );
    let names: Vec<&str> = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [PROTOCOL, CONTEXT, STOP, DECISIONS, STDERR]);
    for f in manifest["files"].as_array().unwrap() {
        let name = f["name"].as_str().unwrap();
        let a = std::fs::read(src.path().join(name)).unwrap();
        let c = std::fs::read(dst.join(name)).unwrap();
        assert_eq!(a, c, "{name}");
        assert_eq!(f["bytes"], a.len());
        let mode = std::fs::metadata(dst.join(name))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert_eq!(
        std::fs::metadata(&dst).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert_eq!(manifest["extra_files"][0]["bytes"], 12);
    assert_eq!(
        manifest["extra_files"][0]["path"],
        helper.to_string_lossy().as_ref()
    );
    let on_disk: Value =
        serde_json::from_slice(&std::fs::read(dst.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(on_disk, manifest);

    // dst must not exist.
    let err = package_capture(src.path(), &dst, &[]).unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::Io);
    assert!(err.to_string().contains("pkg"), "{err}");
}

#[test]
fn package_refuses_symlinks_and_creates_nothing() {
    let src = Builder::new(1).build();
    symlink_in_place(src.path(), DECISIONS);
    let out = tempfile::tempdir().unwrap();
    let dst = out.path().join("pkg");
    let err = package_capture(src.path(), &dst, &[]).unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::Io);
    assert!(err.to_string().contains(DECISIONS), "{err}");
    assert!(!dst.exists());

    // A bad extra file also fails before anything is created.
    let src = Builder::new(1).build();
    let err = package_capture(src.path(), &dst, &[out.path().join("missing.py")]).unwrap_err();
    assert!(err.to_string().contains("missing.py"), "{err}");
    assert!(!dst.exists());
}

#[test]
fn package_of_an_unknown_capture_records_the_verdict() {
    let src = Builder::new(2).build();
    rm(src.path(), STOP);
    let out = tempfile::tempdir().unwrap();
    let dst = out.path().join("pkg");
    let manifest = serde_json::to_value(package_capture(src.path(), &dst, &[]).unwrap()).unwrap();
    assert_eq!(manifest["closure"]["closure"], "unknown");
    assert_eq!(manifest["files"].as_array().unwrap().len(), 3);
}
