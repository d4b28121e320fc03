//! A maximal capture, decision-log chunk boundaries, and the `capture read` exit statuses.

use super::*;

/// Maximal capture timing (release):
/// `cargo test --release --lib capture::tests::maximal_capture_timing -- --ignored --nocapture`
#[test]
#[ignore]
fn maximal_capture_timing() {
    let mut b = Builder::new(MAX_DECISIONS);
    b.reason_len = 255;
    let dir = b.build();
    let size = std::fs::metadata(dir.path().join(DECISIONS)).unwrap().len();
    assert!(
        size <= MAX_LOG_BYTES && size > MAX_LOG_BYTES * 9 / 10,
        "{size}"
    );
    let mut times = Vec::new();
    for _ in 0..30 {
        let t = std::time::Instant::now();
        let v = read_capture(dir.path());
        times.push(t.elapsed());
        assert!(v.is_closed(), "{:?}", v.reasons);
    }
    times.sort();
    println!(
        "maximal capture ({size} bytes, {MAX_DECISIONS} decisions): min {:?} median {:?} max {:?}",
        times[0],
        times[times.len() / 2],
        times[times.len() - 1]
    );
}

/// The log is read in 64 KiB chunks: lines longer than a chunk, lines ending exactly at a chunk
/// boundary, and a partial tail spanning chunks are judged as if the file were read whole.
#[test]
fn log_chunk_boundaries() {
    const CHUNK: usize = 64 * 1024;
    // Each line is longer than a chunk.
    let mut b = Builder::new(3);
    b.reason_len = CHUNK + 100;
    assert!(read_capture(b.build().path()).is_closed());
    // The prefix ends exactly at a chunk boundary, then at one byte either side of it.
    for target in [2 * CHUNK - 1, 2 * CHUNK, 2 * CHUNK + 1] {
        let mut b = Builder::new(40);
        b.pad_log_to = Some(target);
        let v = read_capture(b.build().path());
        assert!(v.is_closed(), "{target}: {:?}", v.reasons);
        // A flipped byte on the last line is still caught.
        let d = b.build();
        let p = d.path().join(DECISIONS);
        let mut log = std::fs::read(&p).unwrap();
        let n = log.len();
        log[n - 3] = b'x';
        std::fs::write(&p, log).unwrap();
        let v = read_capture(d.path());
        assert_eq!(v.closure, Unknown);
        assert!(
            v.reasons.iter().any(|r| r.code == R::DigestMismatch),
            "{:?}",
            v.reasons
        );
    }
    // A partial tail longer than a chunk after a prefix that ends mid-chunk.
    let mut b = Builder::new(5);
    b.decision_log = "incomplete";
    b.dropped = 1;
    b.tail = vec![b'{'; CHUNK * 2 + 7];
    let v = read_capture(b.build().path());
    assert_eq!(v.closure, Incomplete, "{:?}", v.reasons);
    let d = b.build();
    let size = std::fs::metadata(d.path().join(DECISIONS)).unwrap().len();
    assert_eq!(v.files[DECISIONS].bytes, size);
}

#[test]
fn closure_exit_status_is_the_capture_read_rule() {
    // SPEC §10: `capture read` exits 0 closed, 1 incomplete, 3 unknown.
    assert_eq!(ClosureKind::Closed.exit_status(), 0);
    assert_eq!(ClosureKind::Incomplete.exit_status(), 1);
    assert_eq!(ClosureKind::Unknown.exit_status(), 3);
}
