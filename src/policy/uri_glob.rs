//! Resource-URI globs (SPEC §5.2): `*` matches any run of characters other than `/` (it stays
//! inside one path segment), `?` matches exactly one character other than `/`, `**` matches any
//! run of characters, `/` included (it crosses segments), everything else is literal, and a
//! pattern must match the *whole* URI. A "character" is a Unicode scalar value. A pattern that
//! ends in `/**` also matches what it names without the slash: `file:///workspace/secret/**`
//! covers the directory `file:///workspace/secret` itself (a `file:` URI is normalized without
//! its trailing slash, and reading a directory lists what is inside), as `within` counts its
//! root as inside.
//!
//! Matching runs the pattern as a set of positions advanced one character at a time (a
//! Thompson simulation): time is the URI's length times the pattern's, with no backtracking, so
//! a hostile URI cannot make evaluation slow. The same simulation answers the two questions the
//! listing filter asks of a resource template's literal prefix: whether a pattern matches every
//! URI that starts with it, and whether it can match any.

/// One element of a compiled pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    /// This character.
    Char(char),
    /// `?`: one character other than `/`.
    One,
    /// `*`: any run of characters other than `/`.
    Seg,
    /// `**`: any run of characters.
    Any,
}

/// A compiled resource-URI glob.
#[derive(Debug, Clone)]
pub(crate) struct UriGlob {
    toks: Vec<Tok>,
    /// For a pattern ending in `/**`: the pattern without it, which matches too.
    base: Option<Box<UriGlob>>,
}

impl UriGlob {
    /// Compiles `pattern`. Every string is a valid pattern; three or more stars in a row read
    /// as `**`.
    pub(crate) fn new(pattern: &str) -> UriGlob {
        let mut toks: Vec<Tok> = Vec::with_capacity(pattern.len());
        for c in pattern.chars() {
            let tok = match c {
                '*' => match toks.last_mut() {
                    Some(last @ (Tok::Seg | Tok::Any)) => {
                        *last = Tok::Any;
                        continue;
                    }
                    _ => Tok::Seg,
                },
                '?' => Tok::One,
                c => Tok::Char(c),
            };
            toks.push(tok);
        }
        let base = match toks.as_slice() {
            [head @ .., Tok::Char('/'), Tok::Any] => Some(Box::new(UriGlob {
                toks: head.to_vec(),
                base: None,
            })),
            _ => None,
        };
        UriGlob { toks, base }
    }

    /// The positions reached from `start` without consuming a character (a star may match
    /// nothing), added to `set`.
    fn close(&self, set: &mut [bool]) {
        for i in 0..self.toks.len() {
            if set.get(i).copied().unwrap_or(false)
                && matches!(self.toks.get(i), Some(Tok::Seg | Tok::Any))
            {
                if let Some(next) = set.get_mut(i + 1) {
                    *next = true;
                }
            }
        }
    }

    /// The set of pattern positions alive after reading `text` from the start.
    fn run(&self, text: &str) -> Vec<bool> {
        let n = self.toks.len();
        let mut cur = vec![false; n + 1];
        let mut next = vec![false; n + 1];
        if let Some(first) = cur.first_mut() {
            *first = true;
        }
        self.close(&mut cur);
        for c in text.chars() {
            next.iter_mut().for_each(|b| *b = false);
            let mut alive = false;
            for (i, tok) in self.toks.iter().enumerate() {
                if !cur.get(i).copied().unwrap_or(false) {
                    continue;
                }
                let (stay, advance) = match *tok {
                    Tok::Char(want) => (false, want == c),
                    Tok::One => (false, c != '/'),
                    Tok::Seg => (c != '/', false),
                    Tok::Any => (true, false),
                };
                if stay {
                    if let Some(b) = next.get_mut(i) {
                        *b = true;
                        alive = true;
                    }
                }
                if advance {
                    if let Some(b) = next.get_mut(i + 1) {
                        *b = true;
                        alive = true;
                    }
                }
            }
            std::mem::swap(&mut cur, &mut next);
            if !alive {
                break;
            }
            self.close(&mut cur);
        }
        cur
    }

    /// True when the pattern matches the whole of `uri` (or, for a pattern ending in `/**`,
    /// `uri` is what it names).
    pub(crate) fn matches(&self, uri: &str) -> bool {
        self.run(uri).last().copied().unwrap_or(false)
            || self.base.as_ref().is_some_and(|b| b.matches(uri))
    }

    /// True when the pattern matches every string that starts with `prefix` (some position
    /// alive after `prefix` is a `**` followed only by `**`).
    pub(crate) fn matches_every_extension(&self, prefix: &str) -> bool {
        let set = self.run(prefix);
        set.iter().enumerate().any(|(i, &alive)| {
            alive
                && self
                    .toks
                    .get(i..)
                    .is_some_and(|rest| !rest.is_empty() && rest.iter().all(|t| *t == Tok::Any))
        })
    }

    /// True when some string that starts with `prefix` matches the pattern (any position is
    /// still alive after `prefix`: every remaining token can be satisfied).
    pub(crate) fn matches_some_extension(&self, prefix: &str) -> bool {
        self.run(prefix).iter().any(|&alive| alive)
            || self
                .base
                .as_ref()
                .is_some_and(|b| b.matches_some_extension(prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        UriGlob::new(p).matches(s)
    }

    /// The reference with the `/**` rule: the pattern, or the pattern without a final `/**`.
    fn reference(p: &[char], s: &[char]) -> bool {
        plain_reference(p, s)
            || (p.ends_with(&['/', '*', '*']) && plain_reference(&p[..p.len() - 3], s))
    }

    /// A straightforward recursive matcher used as the reference.
    fn plain_reference(p: &[char], s: &[char]) -> bool {
        match p {
            [] => s.is_empty(),
            ['*', '*', rest @ ..] => (0..=s.len()).any(|i| plain_reference(rest, &s[i..])),
            ['*', rest @ ..] => (0..=s.len())
                .take_while(|&i| i == 0 || s[i - 1] != '/')
                .any(|i| plain_reference(rest, &s[i..])),
            ['?', rest @ ..] => {
                s.first().is_some_and(|&c| c != '/') && plain_reference(rest, &s[1..])
            }
            [c, rest @ ..] => s.first() == Some(c) && plain_reference(rest, &s[1..]),
        }
    }

    #[test]
    fn one_star_stays_in_a_segment() {
        assert!(m("file:///workspace/*", "file:///workspace/a.txt"));
        assert!(m("file:///workspace/*", "file:///workspace/"));
        assert!(!m("file:///workspace/*", "file:///workspace/a/b"));
        assert!(!m("file:///workspace/*", "file:///workspace"));
        assert!(m("test://static/resource/*", "test://static/resource/1"));
        assert!(!m("test://static/resource/*", "test://static/resource/1/2"));
        assert!(m("*.txt", "a.txt"));
        assert!(!m("*.txt", "a/b.txt"));
    }

    #[test]
    fn two_stars_cross_segments() {
        assert!(m("file:///workspace/**", "file:///workspace/a/b/c"));
        assert!(m("file:///workspace/**", "file:///workspace/"));
        // The directory a `/**` pattern names is covered too.
        assert!(m("file:///workspace/**", "file:///workspace"));
        assert!(m("file:///workspace/secret/**", "file:///workspace/secret"));
        assert!(!m("file:///workspace/secret/**", "file:///workspace/secre"));
        assert!(!m("file:///workspace/**", "file:///workspac"));
        assert!(!m("file:///workspace/**", "file:///workspacefoo/a"));
        assert!(m("**", ""));
        assert!(m("**", "anything/at/all"));
        assert!(m("file:///**/.env", "file:///a/b/.env"));
        assert!(!m("file:///**/.env", "file:///a/b/.envrc"));
        assert!(m("a/***/b", "a/x/y/b"), "three stars read as two");
    }

    #[test]
    fn question_mark_is_one_character_not_a_slash() {
        assert!(m("a?c", "abc"));
        assert!(m("a?c", "aéc"));
        assert!(!m("a?c", "a/c"));
        assert!(!m("a?c", "ac"));
        assert!(!m("a?c", "abbc"));
    }

    #[test]
    fn agrees_with_reference_matcher() {
        let alphabet = ['a', '/', 'é'];
        let pats = [
            "", "*", "**", "?", "a", "a*", "*a", "a?a", "*/*", "**/a", "a/**", "a**a", "*a*/**",
            "?*?", "**a**",
        ];
        let mut strings = vec![String::new()];
        let mut frontier = strings.clone();
        for _ in 0..5 {
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
            let g = UriGlob::new(p);
            for s in &strings {
                let sc: Vec<char> = s.chars().collect();
                assert_eq!(g.matches(s), reference(&pc, &sc), "{p:?} {s:?}");
            }
            // The prefix questions against brute force over short extensions.
            for prefix in strings.iter().filter(|s| s.chars().count() <= 2) {
                let exts: Vec<String> = strings
                    .iter()
                    .filter(|s| s.chars().count() <= 3)
                    .map(|e| format!("{prefix}{e}"))
                    .collect();
                if g.matches_every_extension(prefix) {
                    assert!(exts.iter().all(|e| g.matches(e)), "{p:?} {prefix:?}");
                }
                if !g.matches_some_extension(prefix) {
                    assert!(!exts.iter().any(|e| g.matches(e)), "{p:?} {prefix:?}");
                }
            }
        }
    }

    #[test]
    fn prefix_questions() {
        let deny = UriGlob::new("file:///etc/**");
        assert!(deny.matches_every_extension("file:///etc/"));
        assert!(deny.matches_every_extension("file:///etc/ssh/"));
        assert!(!deny.matches_every_extension("file:///etc"));
        assert!(!deny.matches_every_extension("file:///"));
        let seg = UriGlob::new("test://static/resource/*");
        assert!(!seg.matches_every_extension("test://static/resource/"));
        assert!(seg.matches_some_extension("test://static/resource/"));
        assert!(seg.matches_some_extension("test://sta"));
        assert!(!seg.matches_some_extension("test://dynamic/"));
        assert!(!seg.matches_some_extension("test://static/resource/a/"));
    }

    #[test]
    fn hostile_uri_is_fast() {
        let g = UriGlob::new("**a**a**a**a**a**a**b");
        let uri = "a".repeat(200_000);
        assert!(!g.matches(&uri));
        let g = UriGlob::new("*a*a*a*a*a*a*b");
        assert!(!g.matches(&uri));
    }
}
