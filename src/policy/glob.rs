//! Tool-name globs (SPEC §5): `*` matches any run of characters (including none), `?` matches
//! exactly one character, everything else is literal, and a pattern must match the *whole* tool
//! name.
//!
//! Patterns are compiled once at load. A pattern without wildcards is a plain string compare; a
//! pattern with wildcards is split at its stars into fixed-length segments that are matched
//! anchored at the start and end and leftmost-first in between. Leftmost-first is optimal because
//! every segment has a fixed length, so matching is linear-ish and never backtracks: a hostile
//! tool name cannot make evaluation slow.
//!
//! A "character" is a Unicode scalar value, so `?` matches `é` as one character.

use std::collections::HashMap;

/// One piece of a pattern between stars.
#[derive(Debug, Clone)]
enum Seg {
    /// No `?` in it: plain substring operations, the search compiled once with the pattern
    /// (a search set up per name cost more than the search itself on a short name).
    Lit(String, Box<memchr::memmem::Finder<'static>>),
    /// At least one `?`: `None` is `?`, `Some(c)` is the literal `c`.
    Toks(Vec<Option<char>>),
}

impl Seg {
    fn new(text: &str) -> Seg {
        if text.contains('?') {
            Seg::Toks(text.chars().map(|c| (c != '?').then_some(c)).collect())
        } else {
            Seg::Lit(
                text.to_owned(),
                Box::new(memchr::memmem::Finder::new(text.as_bytes()).into_owned()),
            )
        }
    }

    /// Number of characters this segment consumes.
    fn char_len(&self) -> usize {
        match self {
            Seg::Lit(s, _) => s.chars().count(),
            Seg::Toks(t) => t.len(),
        }
    }

    /// Matches the segment anchored at byte `pos` of `text`; returns the end byte offset.
    fn match_at(&self, text: &str, pos: usize) -> Option<usize> {
        let rest = text.get(pos..)?;
        match self {
            Seg::Lit(s, _) => rest.starts_with(s.as_str()).then(|| pos + s.len()),
            Seg::Toks(toks) => {
                let mut chars = rest.chars();
                let mut end = pos;
                for tok in toks {
                    let c = chars.next()?;
                    if let Some(want) = tok {
                        if *want != c {
                            return None;
                        }
                    }
                    end += c.len_utf8();
                }
                Some(end)
            }
        }
    }

    /// Finds the leftmost match starting at or after `pos` and ending at or before `limit`;
    /// returns its end byte offset.
    fn find_from(&self, text: &str, pos: usize, limit: usize) -> Option<usize> {
        let window = text.get(..limit)?;
        match self {
            // The leftmost match of valid UTF-8 in valid UTF-8 starts on a character boundary.
            Seg::Lit(s, finder) => finder
                .find(window.get(pos..)?.as_bytes())
                .map(|i| pos + i + s.len()),
            Seg::Toks(_) => {
                let tail = window.get(pos..)?;
                tail.char_indices()
                    .map(|(i, _)| pos + i)
                    .find_map(|p| self.match_at(window, p))
            }
        }
    }

    /// Byte offset where this segment must start to end exactly at the end of `text`, if it
    /// matches there.
    fn suffix_start(&self, text: &str) -> Option<usize> {
        match self {
            Seg::Lit(s, _) => text.ends_with(s.as_str()).then(|| text.len() - s.len()),
            Seg::Toks(toks) => {
                let start = if toks.is_empty() {
                    text.len()
                } else {
                    text.char_indices().rev().nth(toks.len() - 1)?.0
                };
                (self.match_at(text, start)? == text.len()).then_some(start)
            }
        }
    }
}

#[derive(Debug, Clone)]
enum Kind {
    /// No wildcard at all: string equality.
    Literal,
    /// Nothing but stars (`*`, `**`, …): every name matches, the empty one too, so nothing is
    /// compared (`allow: ["*"]` is judged on every call).
    Any,
    /// `?` but no `*`: one segment that must cover the whole name.
    Fixed(Box<Seg>),
    /// At least one `*`: `first*middle…*last`, with empty middle segments removed. Boxed, so
    /// a literal name (most of a long list) costs its text and a tag only.
    Star(Box<Star>),
}

/// The parts of a pattern with a `*`.
#[derive(Debug, Clone)]
struct Star {
    first: Seg,
    middle: Vec<Seg>,
    last: Seg,
    /// The fewest characters a matching name can have (a cheap early reject).
    min_chars: usize,
}

/// A compiled tool-name glob.
#[derive(Debug, Clone)]
pub(crate) struct Glob {
    text: String,
    kind: Kind,
}

impl Glob {
    /// Compiles `pattern`. Every string is a valid pattern.
    pub(crate) fn new(pattern: &str) -> Glob {
        let kind = if !pattern.is_empty() && pattern.bytes().all(|b| b == b'*') {
            Kind::Any
        } else if !pattern.contains('*') {
            if pattern.contains('?') {
                Kind::Fixed(Box::new(Seg::new(pattern)))
            } else {
                Kind::Literal
            }
        } else {
            let mut parts: Vec<&str> = pattern.split('*').collect();
            // `split` on a string containing `*` yields at least two parts.
            let last = Seg::new(parts.pop().unwrap_or(""));
            let first = Seg::new(if parts.is_empty() {
                ""
            } else {
                parts.remove(0)
            });
            let middle: Vec<Seg> = parts
                .into_iter()
                .filter(|p| !p.is_empty())
                .map(Seg::new)
                .collect();
            let min_chars = first.char_len()
                + last.char_len()
                + middle.iter().map(Seg::char_len).sum::<usize>();
            Kind::Star(Box::new(Star {
                first,
                middle,
                last,
                min_chars,
            }))
        };
        Glob {
            text: pattern.to_owned(),
            kind,
        }
    }

    /// The pattern as written in the policy.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// True when the pattern has no `*` or `?`, i.e. it names exactly one tool.
    pub(crate) fn is_literal(&self) -> bool {
        matches!(self.kind, Kind::Literal)
    }

    /// No name shorter than this many bytes matches (each character is at least one byte).
    pub(crate) fn min_len(&self) -> usize {
        match &self.kind {
            Kind::Literal => self.text.len(),
            Kind::Any => 0,
            Kind::Fixed(seg) => seg.char_len(),
            Kind::Star(star) => star.min_chars,
        }
    }

    /// True when the pattern matches the whole of `name`.
    pub(crate) fn matches(&self, name: &str) -> bool {
        match &self.kind {
            Kind::Literal => self.text == name,
            Kind::Any => true,
            Kind::Fixed(seg) => seg.match_at(name, 0) == Some(name.len()),
            Kind::Star(star) => {
                let Star {
                    first,
                    middle,
                    last,
                    min_chars,
                } = &**star;
                // Byte length bounds character count from above: a cheap reject before walking.
                if name.len() < *min_chars {
                    return false;
                }
                let Some(mut pos) = first.match_at(name, 0) else {
                    return false;
                };
                let Some(limit) = last.suffix_start(name) else {
                    return false;
                };
                if limit < pos {
                    return false;
                }
                for seg in middle {
                    match seg.find_from(name, pos, limit) {
                        Some(end) => pos = end,
                        None => return false,
                    }
                }
                true
            }
        }
    }
}

/// An ordered list of globs that reports the *first* pattern (in policy order) matching a name.
///
/// Literal patterns are looked up in a hash map, so a long list of plain tool names costs one
/// lookup; wildcard patterns are tried in order, but only those that come before the literal hit.
#[derive(Debug, Clone, Default)]
pub(crate) struct GlobList {
    globs: Vec<Glob>,
    literals: HashMap<String, usize>,
    wild: Vec<usize>,
}

impl GlobList {
    /// Compiles `patterns`, keeping their order.
    pub(crate) fn new<S: AsRef<str>>(patterns: &[S]) -> GlobList {
        let mut list = GlobList {
            globs: Vec::with_capacity(patterns.len()),
            literals: HashMap::with_capacity(patterns.len()),
            wild: Vec::new(),
        };
        for (i, p) in patterns.iter().enumerate() {
            let glob = Glob::new(p.as_ref());
            if glob.is_literal() {
                list.literals.entry(glob.text.clone()).or_insert(i);
            } else {
                list.wild.push(i);
            }
            list.globs.push(glob);
        }
        list
    }

    /// The compiled patterns in policy order.
    pub(crate) fn globs(&self) -> &[Glob] {
        &self.globs
    }

    /// Index of the first pattern that matches `name`.
    pub(crate) fn first_match(&self, name: &str) -> Option<usize> {
        let literal = self.literals.get(name).copied();
        for &i in &self.wild {
            if literal.is_some_and(|l| i > l) {
                break;
            }
            if self.globs.get(i).is_some_and(|g| g.matches(name)) {
                return Some(i);
            }
        }
        literal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        Glob::new(p).matches(s)
    }

    /// A straightforward recursive matcher used as the reference in the property test.
    fn reference(p: &[char], s: &[char]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some(('*', rest)) => (0..=s.len()).any(|i| reference(rest, &s[i..])),
            Some(('?', rest)) => !s.is_empty() && reference(rest, &s[1..]),
            Some((c, rest)) => s.first() == Some(c) && reference(rest, &s[1..]),
        }
    }

    #[test]
    fn literal_matches_whole_name_only() {
        assert!(m("read_file", "read_file"));
        assert!(!m("read_file", "read_file2"));
        assert!(!m("read_file", "xread_file"));
        assert!(!m("read_file", ""));
        assert!(m("", ""));
        assert!(!m("", "a"));
        assert!(Glob::new("read_file").is_literal());
        assert!(!Glob::new("read_*").is_literal());
        assert!(!Glob::new("read_?").is_literal());
    }

    #[test]
    fn star_matches_any_run_including_empty() {
        assert!(m("*", ""));
        assert!(m("*", "anything at all"));
        assert!(m("**", ""));
        assert!(m("**", "a*b?\\\"\u{1}é"));
        assert!(matches!(Glob::new("*").kind, Kind::Any));
        assert!(matches!(Glob::new("***").kind, Kind::Any));
        assert!(!matches!(Glob::new("*?").kind, Kind::Any));
        assert!(m("shell*", "shell"));
        assert!(m("shell*", "shell_exec"));
        assert!(!m("shell*", "myshell"));
        assert!(m("*shell", "myshell"));
        assert!(!m("*shell", "shell_exec"));
        assert!(m("*_file", "read_file"));
        assert!(m("a*b*c", "abc"));
        assert!(m("a*b*c", "aXXbYYc"));
        assert!(!m("a*b*c", "aXXcYYb"));
        assert!(m("a**b", "ab"));
        assert!(m("*a*", "a"));
        assert!(!m("*a*", "b"));
    }

    #[test]
    fn prefix_and_suffix_do_not_overlap() {
        assert!(!m("a*a", "a"));
        assert!(m("a*a", "aa"));
        assert!(!m("ab*bc", "abc"));
        assert!(m("ab*bc", "abbc"));
        assert!(!m("a?*?a", "aba"));
    }

    #[test]
    fn question_mark_is_exactly_one_character() {
        assert!(m("tool?", "tool1"));
        assert!(!m("tool?", "tool"));
        assert!(!m("tool?", "tool12"));
        assert!(m("???", "abc"));
        assert!(!m("???", "ab"));
        assert!(m("?", "é"), "one scalar value, two bytes");
        assert!(m("caf?", "café"));
        assert!(m("*?", "x"));
        assert!(!m("*?", ""));
        assert!(m("a*?c", "abc"));
        assert!(!m("a*?c", "ac"));
        assert!(m("*x?z*", "wwxyzww"));
    }

    #[test]
    fn other_metacharacters_are_literal() {
        assert!(m("a.b", "a.b"));
        assert!(!m("a.b", "axb"));
        assert!(m("[abc]", "[abc]"));
        assert!(!m("[abc]", "a"));
        assert!(m("^x$", "^x$"));
        assert!(m("a\\*", "a\\"), "backslash is not an escape");
        assert!(m("a\\*", "a\\zzz"));
        assert!(m("{a,b}", "{a,b}"));
    }

    #[test]
    fn agrees_with_reference_matcher() {
        let alphabet = ['a', 'b', 'é'];
        let pats = [
            "", "*", "**", "?", "a", "ab", "a*", "*a", "a?b", "*a*b*", "?*?", "**a", "a*?*a",
            "é?*é", "*ab*", "*éa*b", "a*bé*?",
        ];
        // All strings over the alphabet up to length 4.
        let mut strings: Vec<String> = vec![String::new()];
        let mut frontier = strings.clone();
        for _ in 0..4 {
            let mut next = Vec::new();
            for s in &frontier {
                for c in alphabet {
                    next.push(format!("{s}{c}"));
                }
            }
            strings.extend(next.iter().cloned());
            frontier = next;
        }
        for p in pats {
            let pc: Vec<char> = p.chars().collect();
            let g = Glob::new(p);
            for s in &strings {
                let sc: Vec<char> = s.chars().collect();
                assert_eq!(
                    g.matches(s),
                    reference(&pc, &sc),
                    "pattern {p:?} name {s:?}"
                );
                assert!(
                    !g.matches(s) || s.len() >= g.min_len(),
                    "pattern {p:?} matches {s:?}, shorter than its min_len {}",
                    g.min_len()
                );
            }
        }
    }

    #[test]
    fn hostile_name_is_fast() {
        let g = Glob::new("*a*a*a*a*a*a*b");
        let name = "a".repeat(100_000);
        assert!(!g.matches(&name));
    }

    #[test]
    fn list_reports_first_match_in_policy_order() {
        let l = GlobList::new(&["exec", "shell*", "*", "exec"]);
        assert_eq!(l.first_match("exec"), Some(0));
        assert_eq!(l.first_match("shell_run"), Some(1));
        assert_eq!(l.first_match("other"), Some(2));
        let l = GlobList::new(&["*", "read_file"]);
        assert_eq!(
            l.first_match("read_file"),
            Some(0),
            "wildcard before literal wins"
        );
        let l = GlobList::new(&["read_file", "read_*"]);
        assert_eq!(l.first_match("read_file"), Some(0));
        assert_eq!(l.first_match("read_dir"), Some(1));
        assert_eq!(l.first_match("write"), None);
        assert_eq!(GlobList::new::<&str>(&[]).first_match("x"), None);
        assert_eq!(l.globs()[1].as_str(), "read_*");
    }
}
