//! The repeat counts of `limits.repeated_call` (SPEC §5.2): how many times a session made each
//! call, a call being a tool name with its `arguments_sha256` (or with none: a call without
//! readable arguments is a key of its own).
//!
//! The common case costs one keyed hash of the tool name and one of the 32-byte digest: the
//! first [`NAMED_TOOLS`] tools whose names are at most [`NAMED_TOOL_BYTES`] long get a map of
//! their own, keyed by the raw digest. Any other tool (a longer name, or one first counted once
//! that many tools are named) is counted under the SHA-256 of its name and digest, 32 bytes
//! whatever the name, so a client inventing long tool names cannot make the counts hold more
//! than their bound of keys ([`super::MAX_REPEAT_KEYS`]) times a fixed size. A tool's place is
//! fixed by its first counted call (names never leave the named map), so every pair is counted
//! in exactly one place. The maps keep std's keyed SipHash: their keys are the client's.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crate::sha256::HexDigest;

/// Tools counted by name, at most.
pub(super) const NAMED_TOOLS: usize = 64;

/// The longest tool name counted by name.
pub(super) const NAMED_TOOL_BYTES: usize = 64;

/// The counts of one named tool.
#[derive(Debug, Clone, Default)]
struct ToolCounts {
    /// By the raw arguments digest.
    by_arguments: HashMap<[u8; 32], u64>,
    /// Calls without readable arguments (0: none counted yet).
    unread: u64,
}

/// A session's repeat counts. Every count held is at least 1.
#[derive(Debug, Clone, Default)]
pub(super) struct RepeatCounts {
    /// Where each named tool's counts are in `counts` (a place never changes).
    named: HashMap<String, usize>,
    counts: Vec<ToolCounts>,
    /// Tools not named: by the SHA-256 of the tool name and its hex digest.
    hashed: HashMap<[u8; 32], u64>,
    /// Distinct calls counted, in both maps.
    keys: usize,
}

/// Why a call is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// The call was made `max` times already.
    Repeated,
    /// A call not counted yet, with `max_keys` calls counted.
    Full,
}

/// The SHA-256 key of a call of a tool not named: of the tool, then NUL and the 64 hex digits
/// of its digest, or `\x01` without one.
pub(super) fn hashed_key(tool: &str, arguments_sha256: Option<&HexDigest>) -> [u8; 32] {
    let mut h = crate::sha256::Sha256::new();
    h.update(tool.as_bytes());
    match arguments_sha256 {
        Some(d) => {
            h.update(b"\0");
            h.update(d.as_bytes());
        }
        None => h.update(b"\x01"),
    }
    h.finalize()
}

/// Judges one more call against its count `n` (0: not counted yet) and counts it when
/// admitted.
fn bump(n: &mut u64, keys: &mut usize, max: u64, max_keys: usize) -> Result<(), Refused> {
    if *n == 0 {
        if *keys >= max_keys {
            return Err(Refused::Full);
        }
        *keys += 1;
    } else if *n >= max {
        return Err(Refused::Repeated);
    }
    *n = n.saturating_add(1);
    Ok(())
}

impl RepeatCounts {
    /// Judges one more call of `tool` with `arguments_sha256` against `max` repeats and
    /// `max_keys` distinct calls, and counts it when admitted. A refused call is not counted
    /// (nor is a key made for it). `slot`: where `tool`'s counts are, when the caller knows
    /// (what an earlier call of the same tool returned), so its name is not looked up again.
    /// Returns where `tool`'s counts are when it is counted by name.
    pub(super) fn admit(
        &mut self,
        tool: &str,
        slot: Option<usize>,
        arguments_sha256: Option<&HexDigest>,
        max: u64,
        max_keys: usize,
    ) -> Result<Option<usize>, Refused> {
        let keys = &mut self.keys;
        let slot = slot.or_else(|| self.named.get(tool).copied());
        if let Some(counts) = slot.and_then(|i| self.counts.get_mut(i)) {
            match arguments_sha256 {
                Some(d) => match counts.by_arguments.entry(d.raw()) {
                    Entry::Occupied(mut o) => bump(o.get_mut(), keys, max, max_keys)?,
                    Entry::Vacant(v) => {
                        let mut n = 0;
                        bump(&mut n, keys, max, max_keys)?;
                        v.insert(n);
                    }
                },
                None => bump(&mut counts.unread, keys, max, max_keys)?,
            }
            return Ok(slot);
        }
        if tool.len() <= NAMED_TOOL_BYTES && self.named.len() < NAMED_TOOLS {
            let mut counts = ToolCounts::default();
            match arguments_sha256 {
                Some(d) => {
                    let mut n = 0;
                    bump(&mut n, keys, max, max_keys)?;
                    counts.by_arguments.insert(d.raw(), n);
                }
                None => bump(&mut counts.unread, keys, max, max_keys)?,
            }
            self.counts.push(counts);
            let at = self.counts.len() - 1;
            self.named.insert(tool.to_owned(), at);
            return Ok(Some(at));
        }
        match self.hashed.entry(hashed_key(tool, arguments_sha256)) {
            Entry::Occupied(mut o) => bump(o.get_mut(), keys, max, max_keys)?,
            Entry::Vacant(v) => {
                let mut n = 0;
                bump(&mut n, keys, max, max_keys)?;
                v.insert(n);
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
impl RepeatCounts {
    /// Distinct calls counted.
    pub(super) fn keys(&self) -> usize {
        self.keys
    }
}
