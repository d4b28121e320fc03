//! Text for people (SPEC §10): the one renderer of text a client, a server or a file wrote, for
//! every human-facing output — `capture show`, `capture summary --format table`, `mcp pin`,
//! `policy check`, `wrap-config`, and every `assay:` diagnostic line.
//!
//! A character is printed as it is only when it is a letter, mark, number, punctuation or symbol
//! (Unicode general categories L, M, N, P, S) or U+0020 SPACE, and is neither a
//! Default_Ignorable_Code_Point nor a Bidi_Control. Everything else — controls (`\n`, ESC, BEL),
//! C1 controls (U+009B), format characters (U+00AD, U+061C, U+180E, U+2060–U+206F, U+202E), tag
//! characters, variation selectors, private use, unassigned code points, line and paragraph
//! separators and every space other than U+0020 — is written `\u{…}` with the code point in
//! lowercase hex and no leading zeros (`\u{1b}`, `\u{202e}`), the spelling of a Rust string
//! escape. A backslash is printed as it is (a Windows path or a regex reads as written, issue
//! 41), except a run of backslashes right before an escape or before a literal `u{`, which is
//! doubled: so every `\u{…}` escape in the output comes from this function and never from the
//! text itself, and the output reads back to exactly one text ([`render`]). The output never
//! holds a line break: a diagnostic rendered here is one line.
//!
//! Data: general categories from the `unicode-general-category` crate (Unicode 16.0.0); the
//! Default_Ignorable_Code_Point and Bidi_Control ranges below are those of Unicode 16.0.0
//! (`DerivedCoreProperties.txt` and `PropList.txt`), checked in the tests against the tables of
//! `regex` (also Unicode 16.0.0).
#![forbid(unsafe_code)]

use std::fmt::Write as _;

use unicode_general_category::get_general_category;

/// Default_Ignorable_Code_Point, Unicode 16.0.0 (`DerivedCoreProperties.txt`), inclusive ranges.
const DEFAULT_IGNORABLE: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
];

/// Bidi_Control, Unicode 16.0.0 (`PropList.txt`), inclusive ranges.
const BIDI_CONTROL: &[(u32, u32)] = &[
    (0x061C, 0x061C),
    (0x200E, 0x200F),
    (0x202A, 0x202E),
    (0x2066, 0x2069),
];

fn in_ranges(c: char, ranges: &[(u32, u32)]) -> bool {
    let c = u32::from(c);
    ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

/// Whether [`render`] prints `c` as it is (SPEC §10): U+0020, or a character of general category
/// L, M, N, P or S that is neither a Default_Ignorable_Code_Point nor a Bidi_Control. A
/// backslash is a punctuation character, shown raw except before an escape ([`render`]).
pub fn shown_raw(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    let category = get_general_category(c).abbreviation();
    matches!(
        category.as_bytes().first(),
        Some(b'L' | b'M' | b'N' | b'P' | b'S')
    ) && !in_ranges(c, DEFAULT_IGNORABLE)
        && !in_ranges(c, BIDI_CONTROL)
}

/// `text` for people: every character [`shown_raw`] refuses written `\u{…}` (lowercase hex),
/// everything else as it is — a backslash too, except that a run of N backslashes followed by a
/// character written `\u{…}` or by a literal `u{` is written as 2N backslashes. The result is
/// one line, and it reads back unambiguously: in a run of backslashes before `u{`, an odd count
/// means the last one starts an escape and the others stand for half as many; an even count
/// stands for half as many before a literal `u{`; any other run stands for itself.
pub fn render(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    render_into(&mut out, text);
    out
}

/// [`render`], appended to `out`. Printable ASCII other than the backslash (U+0020–U+007E:
/// letters, digits, punctuation, symbols and the space, all shown as they are) is copied a run
/// at a time; every other character goes through [`shown_raw`] and the backslash rule.
pub fn render_into(out: &mut String, text: &str) {
    let mut rest = text;
    loop {
        let run = rest.bytes().take_while(|&b| plain_ascii(b)).count();
        // An ASCII byte ends a character: the split is on a boundary.
        let (plain, tail) = rest.split_at_checked(run).unwrap_or((rest, ""));
        out.push_str(plain);
        let mut chars = tail.chars();
        let Some(c) = chars.next() else {
            return;
        };
        rest = chars.as_str();
        if c == '\\' {
            let more = rest.bytes().take_while(|&b| b == b'\\').count();
            rest = rest.get(more..).unwrap_or("");
            // What follows the run: an escape, or a literal `u{`, would read as one.
            let before_escape =
                rest.starts_with("u{") || rest.chars().next().is_some_and(|next| !shown_raw(next));
            let run = 1 + more;
            let width = if before_escape { 2 * run } else { run };
            out.extend(std::iter::repeat_n('\\', width));
        } else if shown_raw(c) {
            out.push(c);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
}

/// Printable ASCII other than the backslash: shown as it is whatever follows.
fn plain_ascii(b: u8) -> bool {
    (0x20..=0x7e).contains(&b) && b != b'\\'
}

/// The renderer [`render_into`] replaced (a character at a time), kept as its test oracle.
#[cfg(test)]
fn render_into_charwise(out: &mut String, text: &str) {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let mut run = 1;
            while chars.next_if_eq(&'\\').is_some() {
                run += 1;
            }
            let mut ahead = chars.clone();
            let before_escape = match ahead.next() {
                Some('u') => ahead.next() == Some('{'),
                Some(next) => !shown_raw(next),
                None => false,
            };
            let width = if before_escape { 2 * run } else { run };
            out.extend(std::iter::repeat_n('\\', width));
        } else if shown_raw(c) {
            out.push(c);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_text_is_as_written() {
        assert_eq!(render("echo tool-é 名前 ½ € ✓"), "echo tool-é 名前 ½ € ✓");
        assert_eq!(
            render("e\u{301}"),
            "e\u{301}",
            "a combining mark (M) is shown"
        );
    }

    #[test]
    fn everything_else_is_escaped() {
        for (raw, shown) in [
            ("a\u{1b}[31mb", "a\\u{1b}[31mb"),
            ("\u{7}", "\\u{7}"),
            ("\u{1b}]52;c;aGk=\u{7}", "\\u{1b}]52;c;aGk=\\u{7}"),
            ("x\ny\r", "x\\u{a}y\\u{d}"),
            ("\t", "\\u{9}"),
            ("\u{9b}31m", "\\u{9b}31m"),
            ("\u{202e}txt", "\\u{202e}txt"),
            ("soft\u{ad}hyphen", "soft\\u{ad}hyphen"),
            ("\u{61c}", "\\u{61c}"),
            ("\u{180e}", "\\u{180e}"),
            ("\u{2060}\u{2066}\u{206f}", "\\u{2060}\\u{2066}\\u{206f}"),
            ("\u{e0041}\u{e007f}", "\\u{e0041}\\u{e007f}"),
            ("\u{e000}", "\\u{e000}"),
            ("\u{378}", "\\u{378}"),
            ("\u{2028}\u{2029}", "\\u{2028}\\u{2029}"),
            ("\u{a0}\u{3000}", "\\u{a0}\\u{3000}"),
            ("\u{fe0f}", "\\u{fe0f}"),
            ("\u{3164}", "\\u{3164}"),
        ] {
            assert_eq!(render(raw), shown, "{raw:?}");
        }
    }

    #[test]
    fn a_backslash_is_doubled_only_before_an_escape_so_none_can_be_forged() {
        assert_eq!(render("a\\u{1b}"), "a\\\\u{1b}");
        assert_ne!(render("\\u{1b}"), render("\u{1b}"));
        assert_eq!(render("\\\u{1b}"), "\\\\\\u{1b}");
        assert_ne!(render("\\\u{1b}"), render("\\u{1b}"));
    }

    #[test]
    fn windows_paths_and_regexes_read_as_written() {
        for written in [
            "C:\\Users\\me\\**",
            "\\\\server\\share",
            "^https://docs\\.example\\.com/",
            "^C:\\\\Users\\\\",
            "a\\",
            "\\users",
            "tail\\\\",
        ] {
            assert_eq!(render(written), written);
        }
    }

    /// Reads rendered text back by the rule [`render`] documents.
    fn read_back(shown: &str) -> String {
        let chars: Vec<char> = shown.chars().collect();
        let mut out = String::new();
        let mut i = 0;
        while i < chars.len() {
            if chars[i] != '\\' {
                out.push(chars[i]);
                i += 1;
                continue;
            }
            let start = i;
            while i < chars.len() && chars[i] == '\\' {
                i += 1;
            }
            let run = i - start;
            if chars.get(i..i + 2) != Some(&['u', '{']) {
                out.extend(std::iter::repeat_n('\\', run));
                continue;
            }
            out.extend(std::iter::repeat_n('\\', run / 2));
            if run % 2 == 1 {
                let close = (i..chars.len()).find(|&j| chars[j] == '}').unwrap();
                let hex: String = chars[i + 2..close].iter().collect();
                out.push(char::from_u32(u32::from_str_radix(&hex, 16).unwrap()).unwrap());
                i = close + 1;
            }
        }
        out
    }

    #[test]
    fn every_short_text_reads_back_to_itself() {
        let alphabet = ['\\', 'u', '{', '1', 'b', '}', '\u{1b}', 'x'];
        let mut n = 0;
        for len in 0..=5u32 {
            for mut k in 0..alphabet.len().pow(len) {
                let mut text = String::new();
                for _ in 0..len {
                    text.push(alphabet[k % alphabet.len()]);
                    k /= alphabet.len();
                }
                assert_eq!(
                    read_back(&render(&text)),
                    text,
                    "{text:?} -> {:?}",
                    render(&text)
                );
                n += 1;
            }
        }
        assert_eq!(n, 37_449);
    }

    #[test]
    fn printable_ascii_but_the_backslash_is_shown_raw() {
        for b in 0u8..=0x7f {
            if plain_ascii(b) {
                assert!(shown_raw(char::from(b)), "{b:#x}");
            }
        }
    }

    /// Text weighted toward what the renderer treats apart: backslashes, `u{`, controls,
    /// format characters, non-ASCII letters, and runs of printable ASCII between them.
    fn hostile_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let piece = prop_oneof![
            3 => prop::sample::select(vec![
                "\\", "\\\\", "u{", "u", "{", "}", "\\u{1b}", "\\u{", "\u{1b}", "a", " ", "~",
            ])
            .prop_map(str::to_owned),
            2 => (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap_or('x').to_string()),
            2 => prop::sample::select(vec![
                '\u{7f}', '\u{9b}', '\u{ad}', '\u{202e}', '\u{2028}', '\u{a0}', 'é', '名', '\u{1F600}',
            ])
            .prop_map(String::from),
            1 => any::<char>().prop_map(String::from),
            2 => "[ -~]{0,12}",
        ];
        prop::collection::vec(piece, 0..24).prop_map(|v| v.concat())
    }

    proptest::proptest! {
        /// The run-at-a-time renderer writes what the character-at-a-time one it replaced wrote,
        /// after whatever the buffer already held.
        #[test]
        fn renders_as_the_charwise_renderer(text in hostile_text(), prefix in "[ -~]{0,4}") {
            let mut got = prefix.clone();
            render_into(&mut got, &text);
            let mut want = prefix;
            render_into_charwise(&mut want, &text);
            proptest::prop_assert_eq!(got, want);
        }
    }

    /// Every code point, against an independent statement of the rule in `regex`'s Unicode
    /// tables (also Unicode 16.0.0).
    #[test]
    fn agrees_with_the_unicode_tables_of_regex() {
        let raw = regex::Regex::new(
            r"^[[\p{L}\p{M}\p{N}\p{P}\p{S} ]--[\p{Default_Ignorable_Code_Point}\p{Bidi_Control}]]$",
        )
        .unwrap();
        let mut buf = [0u8; 4];
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            assert_eq!(
                shown_raw(c),
                raw.is_match(c.encode_utf8(&mut buf)),
                "U+{:04X}",
                u32::from(c)
            );
        }
    }
}
