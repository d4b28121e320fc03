//! `results.strip` (SPEC §5.3): characters removed from the text of an answer before the model
//! reads it. Removed, not escaped: an escape (`\u{1b}`, `␛`) would still put the sequence's
//! letters in front of the model (`[31m`), and an ESC sequence is removed whole, its parameters
//! and final byte with it.
//!
//! - `terminal`: C0 controls but tab and line feed (a carriage return too, unless it ends a line
//!   before a line feed), DEL, C1 controls (U+0080–U+009F), and whole ESC sequences: CSI
//!   (`ESC [` parameters, intermediates, final byte), OSC / DCS / SOS / PM / APC strings up to
//!   their terminator (BEL or `ESC \`; the rest of the text when unterminated), other two-byte
//!   `ESC x`.
//! - `bidi`: the bidirectional controls U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069.
//! - `invisible`: zero-width and invisible format characters U+200B–U+200D, U+2060–U+2064,
//!   U+FEFF, and the tag characters U+E0000–U+E007F.

/// Which classes to remove, and which were found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Strip {
    /// Terminal controls and escape sequences.
    pub terminal: bool,
    /// Bidirectional controls.
    pub bidi: bool,
    /// Zero-width and tag characters.
    pub invisible: bool,
}

impl Strip {
    /// Whether any class is on.
    pub fn any(self) -> bool {
        self.terminal || self.bidi || self.invisible
    }

    /// The class names that are on, in the order `terminal`, `bidi`, `invisible`.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        [
            (self.terminal, "terminal"),
            (self.bidi, "bidi"),
            (self.invisible, "invisible"),
        ]
        .into_iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| n)
    }
}

fn is_bidi(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200D}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{E0000}'..='\u{E007F}')
}

/// A terminal control other than an ESC (handled with its sequence); `next`: the character after.
fn is_terminal(c: char, next: Option<char>) -> bool {
    match c {
        '\t' | '\n' => false,
        '\r' => next != Some('\n'),
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        _ => false,
    }
}

/// The length in bytes of the ESC sequence at the start of `s` (which starts with ESC).
fn escape_len(s: &str) -> usize {
    let b = s.as_bytes();
    match b.get(1) {
        None => 1,
        Some(b'[') => {
            // CSI: parameters 0x30–0x3F, intermediates 0x20–0x2F, one final byte 0x40–0x7E.
            let mut i = 2;
            while b.get(i).is_some_and(|c| (0x30..=0x3f).contains(c)) {
                i += 1;
            }
            while b.get(i).is_some_and(|c| (0x20..=0x2f).contains(c)) {
                i += 1;
            }
            if b.get(i).is_some_and(|c| (0x40..=0x7e).contains(c)) {
                i += 1;
            }
            i
        }
        Some(b']' | b'P' | b'X' | b'^' | b'_') => {
            // A string up to BEL or ST (`ESC \`).
            let mut i = 2;
            while let Some(&c) = b.get(i) {
                if c == 0x07 {
                    return i + 1;
                }
                if c == 0x1b && b.get(i + 1) == Some(&b'\\') {
                    return i + 2;
                }
                i += 1;
            }
            b.len()
        }
        Some(c) if c.is_ascii() => 2,
        // ESC before a non-ASCII character: the ESC alone.
        Some(_) => 1,
    }
}

/// The length of the leading run of `bytes` that no class ever removes: printable ASCII, tab
/// and line feed (every removed character is another ASCII control, or not ASCII).
fn kept_run(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .position(|&b| !matches!(b, 0x20..=0x7e | b'\t' | b'\n'))
        .unwrap_or(bytes.len())
}

/// The byte offset of the first character of `text` that `hit` (given the character after it)
/// removes; runs no class removes are skipped a byte at a time.
fn first_hit(text: &str, hit: impl Fn(char, Option<char>) -> bool) -> Option<usize> {
    let mut i = 0;
    loop {
        i += kept_run(text.as_bytes().get(i..)?);
        let c = text.get(i..)?.chars().next()?;
        let next = text.get(i + c.len_utf8()..).and_then(|r| r.chars().next());
        if hit(c, next) {
            return Some(i);
        }
        i += c.len_utf8();
    }
}

/// `text` with the classes of `strip` removed, and the classes found (`None`: nothing found,
/// the text is unchanged).
pub fn strip(text: &str, strip: Strip) -> Option<(String, Strip)> {
    let hit = |c: char, next: Option<char>| {
        (strip.terminal && (c == '\u{1b}' || is_terminal(c, next)))
            || (strip.bidi && is_bidi(c))
            || (strip.invisible && is_invisible(c))
    };
    let first = first_hit(text, hit)?;
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..first]);
    let mut found = Strip::default();
    let mut i = first;
    while let Some(c) = text[i..].chars().next() {
        let next = text[i + c.len_utf8()..].chars().next();
        if strip.terminal && c == '\u{1b}' {
            found.terminal = true;
            i += escape_len(&text[i..]);
            continue;
        }
        if strip.terminal && is_terminal(c, next) {
            found.terminal = true;
        } else if strip.bidi && is_bidi(c) {
            found.bidi = true;
        } else if strip.invisible && is_invisible(c) {
            found.invisible = true;
        } else {
            out.push(c);
        }
        i += c.len_utf8();
    }
    Some((out, found))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Strip = Strip {
        terminal: true,
        bidi: true,
        invisible: true,
    };

    fn s(text: &str, on: Strip) -> String {
        strip(text, on).map_or_else(|| text.to_owned(), |(t, _)| t)
    }

    /// The search for the first removed character as it was: every character looked at.
    fn first_hit_one_by_one(text: &str, on: Strip) -> Option<usize> {
        let hit = |c: char, next: Option<char>| {
            (on.terminal && (c == '\u{1b}' || is_terminal(c, next)))
                || (on.bidi && is_bidi(c))
                || (on.invisible && is_invisible(c))
        };
        let mut chars = text.char_indices().peekable();
        loop {
            let (i, c) = chars.next()?;
            if hit(c, chars.peek().map(|(_, n)| *n)) {
                return Some(i);
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn skipping_kept_runs_finds_the_same_first_character(
            text in "[a-z \t\n\r\u{0}\u{1b}\u{7f}\u{85}\u{9b}\u{e9}\u{200b}\u{202e}\u{feff}\u{e0041}]{0,40}",
            terminal: bool,
            bidi: bool,
            invisible: bool,
        ) {
            let on = Strip { terminal, bidi, invisible };
            let hit = |c: char, next: Option<char>| {
                (on.terminal && (c == '\u{1b}' || is_terminal(c, next)))
                    || (on.bidi && is_bidi(c))
                    || (on.invisible && is_invisible(c))
            };
            proptest::prop_assert_eq!(first_hit(&text, hit), first_hit_one_by_one(&text, on));
        }
    }

    #[test]
    fn terminal_sequences_go_whole() {
        assert_eq!(s("\u{1b}[31mred\u{1b}[0m", ALL), "red");
        assert_eq!(
            s("a\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{1b}\\b", ALL),
            "alinkb"
        );
        assert_eq!(s("a\u{1b}]0;title", ALL), "a");
        assert_eq!(s("a\u{1b}c b", ALL), "a b");
        assert_eq!(s("x\u{0}y\u{8}z\u{7f}\u{9b}", ALL), "xyz");
        assert_eq!(
            s("keep\ttabs\nand\r\nlines\rnot", ALL),
            "keep\ttabs\nand\r\nlinesnot"
        );
        assert_eq!(s("trailing\u{1b}", ALL), "trailing");
        assert!(strip("plain text\n", ALL).is_none());
    }

    #[test]
    fn bidi_and_invisible_by_class() {
        let text = "a\u{202E}b\u{2066}c\u{200B}d\u{E0041}\u{E007F}e\u{FEFF}";
        assert_eq!(s(text, ALL), "abcde");
        let bidi = Strip {
            bidi: true,
            ..Strip::default()
        };
        assert_eq!(s(text, bidi), "abc\u{200B}d\u{E0041}\u{E007F}e\u{FEFF}");
        let (_, found) = strip(text, ALL).unwrap();
        assert_eq!(
            found,
            Strip {
                terminal: false,
                bidi: true,
                invisible: true
            }
        );
        // A class that is off is not looked for.
        assert!(strip("\u{1b}[1m", bidi).is_none());
    }
}
