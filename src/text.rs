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
//! escape. A backslash is written `\\`, so an escape in the output always comes from this
//! function and never from the text itself. The output never holds a line break: a diagnostic
//! rendered here is one line.
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
/// backslash is a punctuation character but is doubled by [`render`] all the same.
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

/// `text` for people: every character [`shown_raw`] refuses written `\u{…}` (lowercase hex), a
/// backslash written `\\`, everything else as it is. The result is one line.
pub fn render(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    render_into(&mut out, text);
    out
}

/// [`render`], appended to `out`.
pub fn render_into(out: &mut String, text: &str) {
    for c in text.chars() {
        if c == '\\' {
            out.push_str("\\\\");
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
    fn a_backslash_is_doubled_so_no_escape_can_be_forged() {
        assert_eq!(render("a\\u{1b}"), "a\\\\u{1b}");
        assert_ne!(render("\\u{1b}"), render("\u{1b}"));
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
