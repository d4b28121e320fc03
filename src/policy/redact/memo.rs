//! The last verdicts of `redact` on short keys, kept per thread: a session's calls name the
//! same few argument keys again and again, and matching a key against every glob costs several
//! hundred instructions where a remembered verdict costs a few dozen.
//!
//! A verdict is remembered with the compiled `redact` it was made under ([`MemoId`]: unique for
//! the life of the process, never reused), so a thread that records under several policies (a
//! host running one session after another) never reads one policy's verdict under another. A
//! slot holds one key, compared whole; a key longer than a slot, or one whose slot holds another
//! key, is judged again: keys a client makes collide cost what every key cost before, and
//! never get another key's verdict.
#![forbid(unsafe_code)]

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Keys at most this many bytes long are remembered.
const KEY_BYTES: usize = 31;

/// Slots per thread (a power of two).
const SLOTS: usize = 64;

/// Which compiled `redact` a verdict was made under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct MemoId(u64);

impl MemoId {
    /// An id no other compiled `redact` of this process has had.
    pub(super) fn new() -> MemoId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        MemoId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

impl Default for MemoId {
    fn default() -> MemoId {
        MemoId::new()
    }
}

/// One remembered verdict (`id` 0: none).
#[derive(Clone, Copy)]
struct Slot {
    id: u64,
    len: u8,
    key: [u8; KEY_BYTES],
    redacts: bool,
}

impl Slot {
    const EMPTY: Slot = Slot {
        id: 0,
        len: 0,
        key: [0; KEY_BYTES],
        redacts: false,
    };
}

thread_local! {
    static MEMO: RefCell<[Slot; SLOTS]> = const { RefCell::new([Slot::EMPTY; SLOTS]) };
}

/// `judge(key)` under `id`: remembered from an earlier call on this thread, or judged now (and
/// remembered when `key` fits a slot).
pub(super) fn redacts(id: MemoId, key: &str, judge: impl FnOnce(&str) -> bool) -> bool {
    let bytes = key.as_bytes();
    let (Ok(len), true) = (u8::try_from(bytes.len()), bytes.len() <= KEY_BYTES) else {
        return judge(key);
    };
    let at = slot_of(bytes);
    let same = |s: &Slot| s.id == id.0 && s.len == len && s.key.get(..bytes.len()) == Some(bytes);
    let known = MEMO.with(|m| {
        let slots = m.try_borrow().ok()?;
        slots.get(at).filter(|s| same(s)).map(|s| s.redacts)
    });
    if let Some(redacts) = known {
        return redacts;
    }
    let redacts = judge(key);
    MEMO.with(|m| {
        let Ok(mut slots) = m.try_borrow_mut() else {
            return;
        };
        let Some(slot) = slots.get_mut(at) else {
            return;
        };
        let mut stored = Slot::EMPTY;
        let Some(room) = stored.key.get_mut(..bytes.len()) else {
            return;
        };
        room.copy_from_slice(bytes);
        stored.id = id.0;
        stored.len = len;
        stored.redacts = redacts;
        *slot = stored;
    });
    redacts
}

/// Where `key` is remembered: from its length and three of its bytes (a hash an attacker can
/// aim costs only misses).
fn slot_of(key: &[u8]) -> usize {
    let byte = |i: usize| usize::from(key.get(i).copied().unwrap_or(0));
    let n = key.len();
    (n ^ byte(0).wrapping_mul(31) ^ byte(n / 2).wrapping_mul(7) ^ (byte(n.wrapping_sub(1)) << 3))
        & (SLOTS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_are_kept_apart_by_policy_and_by_whole_key() {
        let (a, b) = (MemoId::new(), MemoId::new());
        assert!(redacts(a, "secret", |_| true));
        // Remembered under `a`: the judge is not asked again.
        assert!(redacts(a, "secret", |_| panic!("judged twice")));
        // Another policy judges for itself; its verdict takes the slot.
        assert!(!redacts(b, "secret", |_| false));
        assert!(!redacts(b, "secret", |_| panic!("judged twice")));
        // The first policy's is gone: judged again, never the other's.
        assert!(redacts(a, "secret", |_| true));
        // Keys that share a slot: length, first, middle and last byte alike.
        assert_eq!(slot_of(b"sXcret"), slot_of(b"sYcret"));
        assert!(redacts(a, "sXcret", |_| true));
        assert!(!redacts(a, "sYcret", |_| false));
        assert!(!redacts(a, "sYcret", |_| panic!("judged twice")));
        assert!(redacts(a, "sXcret", |_| true));
    }

    #[test]
    fn keys_longer_than_a_slot_are_judged_every_time() {
        let id = MemoId::new();
        let long = "k".repeat(KEY_BYTES + 1);
        let mut asked = 0;
        for _ in 0..3 {
            assert!(redacts(id, &long, |_| {
                asked += 1;
                true
            }));
        }
        assert_eq!(asked, 3);
        let fits = "k".repeat(KEY_BYTES);
        assert!(redacts(id, &fits, |_| true));
        assert!(redacts(id, &fits, |_| panic!("judged twice")));
    }
}
