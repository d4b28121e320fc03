//! The generalization rule of `assay policy suggest` for resource URIs (docs/decisions.md,
//! "Suggested resource patterns"): the narrowest patterns covering the URIs read.
//!
//! Each URI read is written as literal patterns (one per reading the judge gives it,
//! [`Policy::resource_literals`]). The literals under one directory `D` become the one glob
//! `D/*` only when all of these hold: the captures' `resources/list` listings named at least
//! two entries directly under `D`; every entry they named there was read and allowed; no URI
//! directly under `D` was refused (read or listing); `D` has a path segment of its own (never a
//! glob at a scheme's root); and every URI read under `D` has a single reading. `*` stays within
//! one segment, so nothing below `D` is covered, and `**` is never written.

use std::collections::{BTreeMap, BTreeSet};

use super::observe::{Evidence, Seen};
use crate::policy::Policy;

/// The directory part of a URI (up to its last `/`), when it has a path segment of its own:
/// `test://static/resource/1` → `test://static/resource`; `file:///a` → `None`.
fn directory(uri: &str) -> Option<&str> {
    let cut = uri.rfind('/')?;
    let dir = uri.get(..cut)?;
    let after_scheme = dir.split_once("://").map_or(dir, |(_, rest)| rest);
    // An authority (possibly empty) and at least one segment.
    let (_, path) = after_scheme.split_once('/')?;
    (!path.is_empty() && !path.contains('*') && !path.contains('?')).then_some(dir)
}

/// `(pattern, evidence comment)` for every resource allowed, in pattern order.
pub(super) fn resource_patterns(
    allowed: &[(&String, &Seen)],
    e: &Evidence,
) -> Vec<(String, String)> {
    let refused_dirs: BTreeSet<&str> = e
        .resources
        .iter()
        .filter(|(_, s)| s.uses.refused > 0)
        .filter_map(|(uri, _)| directory(uri))
        .collect();
    let read: BTreeSet<&str> = allowed.iter().map(|(u, _)| u.as_str()).collect();
    let mut listed_by_dir: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for uri in &e.resources_listed {
        if let Some(d) = directory(uri) {
            listed_by_dir.entry(d).or_default().push(uri);
        }
    }
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut globbed: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for (uri, s) in allowed {
        let literals = Policy::resource_literals(uri);
        let dir = directory(uri).filter(|d| {
            literals.len() == 1
                && !refused_dirs.contains(d)
                && listed_by_dir
                    .get(d)
                    .is_some_and(|l| l.len() >= 2 && l.iter().all(|x| read.contains(x)))
        });
        match dir {
            Some(d) => {
                let g = globbed.entry(d).or_default();
                g.0 += 1;
                g.1 += s.uses.allowed;
            }
            None => {
                for l in literals {
                    out.insert(
                        l,
                        format!(
                            "{uri}: {} read(s) allowed in {} of {} capture(s)",
                            s.uses.allowed, s.captures, e.captures
                        ),
                    );
                }
            }
        }
    }
    for (d, (uris, reads)) in globbed {
        out.insert(
            format!("{d}/*"),
            format!(
                "{d}/*: every one of the {uris} entries the server listed there was read ({reads} read(s)), none refused"
            ),
        );
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_have_a_segment_of_their_own() {
        assert_eq!(
            directory("test://static/resource/1"),
            Some("test://static/resource")
        );
        assert_eq!(directory("file:///workspace/a"), Some("file:///workspace"));
        assert_eq!(directory("file:///a"), None);
        assert_eq!(directory("test://static/1"), None, "the authority's root");
        assert_eq!(directory("x"), None);
    }
}
