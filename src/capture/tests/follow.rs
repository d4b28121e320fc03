//! The log followed as it is written (`follow`) gives the verdict of the full reader: every case
//! of the verdict table, and captures with listings, MCP decisions, result events, dry run,
//! partial lines and losses, their logs written a few bytes at a time between the follower's
//! reads; and a log that is truncated, replaced, or read against other expectations at stop is
//! read whole again.

use std::io::Write;
use std::sync::atomic::AtomicBool;

use super::super::testutil::POLICY_SHA;
use super::super::{LogFollower, LogPassUsed};
use super::*;
use crate::evidence::decision_log::DecisionFormat;
use crate::evidence::result_event::{Action, ResultEntry, push_result_line};
use crate::sha256::HexDigest;

/// Piece sizes the log is written in: a line split anywhere, several lines at once, more than
/// one read chunk at once.
const PIECES: [usize; 6] = [1, 97, 7, 333, 64 * 1024 + 5, 2];

fn append_to(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

/// Empties the capture's log (same file), follows it while its bytes are written back in
/// pieces, and finishes: the verdict and how the log was judged. `None` when nothing can be
/// followed (the log is not a regular file within its bound at the start).
fn followed(dir: &Path) -> Option<(Closure, LogPassUsed)> {
    let path = dir.join(DECISIONS);
    let regular = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
    let bytes = if regular {
        std::fs::read(&path).unwrap()
    } else {
        Vec::new()
    };
    if regular {
        std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .unwrap();
    }
    let halt = AtomicBool::new(false);
    let mut follower = LogFollower::start(dir)?;
    let mut at = 0;
    for len in PIECES.iter().cycle() {
        if at >= bytes.len() {
            break;
        }
        let end = (at + len).min(bytes.len());
        append_to(&path, &bytes[at..end]);
        at = end;
        follower.step(&halt);
    }
    Some(follower.finish())
}

/// The follower's verdict is the full reader's; `Some(used)` says how the log was judged.
fn same_as_full_reader(dir: &Path) -> Option<LogPassUsed> {
    let (got, used) = followed(dir)?;
    let want = read_capture(dir);
    assert_eq!(got, want, "{}", dir.display());
    Some(used)
}

#[test]
fn every_case_of_the_verdict_table_reads_the_same_followed() {
    let mut followed_cases = 0;
    for decisions in [CASE_DECISIONS, LARGE_CASE_DECISIONS] {
        for case in cases() {
            let mut b = Builder::new(decisions);
            (case.setup)(&mut b);
            let dir = b.build();
            (case.after)(dir.path());
            if same_as_full_reader(dir.path()) == Some(LogPassUsed::Followed) {
                followed_cases += 1;
            }
        }
    }
    // Most cases are judged from the followed pass (the others: no log to follow, a log past
    // its bound, a stop record that names another session or source).
    assert!(
        followed_cases * 10 >= cases().len() * 2 * 8,
        "{followed_cases}"
    );
}

/// A log of tool decisions with a result event at line 3 naming decision 0 (SPEC §5.3).
fn log_with_result(b: &Builder) -> Vec<u8> {
    let mut f = DecisionFormat::new(&b.session_id, &b.source, POLICY_SHA, !b.dry_run);
    let mut log = Vec::new();
    for i in 0..b.decisions {
        if i == 3 {
            let decision = crate::evidence::decision_log::decision_id(&b.session_id, 0);
            let entry = ResultEntry {
                method: "tools/call",
                request_id: "\"r0\"",
                decision_id: Some(&decision),
                sha256: &HexDigest::of(b"answer"),
                bytes: 6,
                judged: &crate::results::Judged::default(),
                action: Action::Forwarded,
                reason_code: crate::policy::ReasonCode::P_POLICY_ALLOW,
                enforced: !b.dry_run,
            };
            push_result_line(&mut f, &mut log, 3, &entry);
        } else {
            serde_json::to_writer(&mut log, &b.line(i)).unwrap();
            log.push(b'\n');
        }
    }
    log
}

#[test]
fn captures_of_every_kind_read_the_same_followed() {
    let mut kinds: Vec<(&str, tempfile::TempDir)> = Vec::new();
    for dry_run in [false, true] {
        let mut b = Builder::new(40);
        b.other_events = true;
        b.dry_run = dry_run;
        kinds.push(("listings and MCP decisions", b.build()));
        let mut b = Builder::new(6);
        b.dry_run = dry_run;
        let log = log_with_result(&b);
        kinds.push(("a result event", b.build_with_log(&log)));
    }
    let mut b = Builder::new(9);
    b.decision_log = "incomplete";
    b.dropped = 2;
    b.tail = b"{\"specversion\":\"1.0\",\"id\":".to_vec();
    kinds.push(("a failed write's partial line", b.build()));
    let mut b = Builder::new(9);
    b.tail = b"{\"partial".to_vec();
    kinds.push(("a partial line in a complete log", b.build()));
    let mut b = Builder::new(3000);
    b.reason_len = 900;
    kinds.push(("a large log", b.build()));
    kinds.push(("an empty log", Builder::new(0).build()));
    for (what, dir) in &kinds {
        assert_eq!(
            same_as_full_reader(dir.path()),
            Some(LogPassUsed::Followed),
            "{what}"
        );
    }
    // The result event is checked as the reader checks it, and reads closed.
    let b = Builder::new(6);
    let dir = b.build_with_log(&log_with_result(&b));
    assert_eq!(read_capture(dir.path()).closure, Closed);
}

/// An alteration of a capture directory.
type Change = dyn Fn(&Path);

/// Follows `dir`'s log to its end, then lets `change` alter the capture before the finish.
fn changed_after_reading(dir: &Path, change: impl FnOnce(&Path)) -> (Closure, LogPassUsed) {
    let path = dir.join(DECISIONS);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, b"").unwrap();
    let mut follower = LogFollower::start(dir).unwrap();
    append_to(&path, &bytes);
    follower.step(&AtomicBool::new(false));
    change(dir);
    follower.finish()
}

#[test]
fn a_log_changed_under_the_follower_is_read_whole_again() {
    let replace = |d: &Path| {
        let p = d.join(DECISIONS);
        let bytes = std::fs::read(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        std::fs::write(&p, bytes).unwrap();
    };
    let shorten = |d: &Path| {
        let p = d.join(DECISIONS);
        let len = std::fs::metadata(&p).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(len - 10)
            .unwrap();
    };
    let other_policy = |d: &Path| replace_in(d, CONTEXT, POLICY_SHA, &"c".repeat(64));
    let other_session = |d: &Path| {
        let text = std::fs::read_to_string(d.join(STOP)).unwrap();
        std::fs::write(d.join(STOP), text.replace(SID, &"d".repeat(32))).unwrap();
    };
    let changes: [(&str, &Change); 4] = [
        ("replaced", &replace),
        ("shortened", &shorten),
        ("the context's policy changed", &other_policy),
        ("the stop record names another session", &other_session),
    ];
    for (what, change) in changes {
        let dir = Builder::new(20).build();
        let (got, used) = changed_after_reading(dir.path(), change);
        assert_eq!(used, LogPassUsed::Full, "{what}");
        assert_eq!(got, read_capture(dir.path()), "{what}");
    }
    // Unchanged, the same capture is judged from the followed pass.
    let dir = Builder::new(20).build();
    let (got, used) = changed_after_reading(dir.path(), |_| {});
    assert_eq!(used, LogPassUsed::Followed);
    assert_eq!(got, read_capture(dir.path()));
    assert_eq!(got.closure, Closed);
}

/// Once halted, a step reads nothing; the finish reads the rest.
#[test]
fn a_halted_follower_leaves_the_rest_to_the_finish() {
    let dir = Builder::new(30).build();
    let path = dir.path().join(DECISIONS);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let mut follower = LogFollower::start(dir.path()).unwrap();
    follower.step(&AtomicBool::new(false));
    append_to(&path, &bytes[bytes.len() / 2..]);
    follower.step(&AtomicBool::new(true));
    let (got, used) = follower.finish();
    assert_eq!(used, LogPassUsed::Followed);
    assert_eq!(got, read_capture(dir.path()));
    assert_eq!(got.closure, Closed);
}
