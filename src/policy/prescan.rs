//! The linear pre-scan of a policy file's bytes, run before any parser (SPEC §5: "nesting deeper
//! than 64 levels is refused by a linear pre-scan before any parser can spend more than linear
//! time").
//!
//! One pass over the text, constant work per character, nothing allocated. It refuses:
//!
//! - bytes that are not UTF-8;
//! - characters YAML readers do not agree on: the characters PyYAML refuses as non-printable
//!   (C0 controls but tab, line feed and carriage return; DEL; C1 controls; U+FFFE, U+FFFF), the
//!   line breaks of YAML 1.1 that YAML 1.2 reads as ordinary characters (U+0085, U+2028,
//!   U+2029), a carriage return that is not followed by a line feed, and a byte order mark
//!   anywhere but at the very start;
//! - tab characters: PyYAML refuses a tab almost everywhere YAML 1.2 readers accept it as white
//!   space, and a JSON policy is read by YAML readers too (write a tab inside a string as `\t`);
//! - in YAML files, flow nesting (`[`/`{`) deeper than [`MAX_DEPTH`] levels.
//!
//! # How the flow nesting is bounded without a parser
//!
//! A YAML parser's scanner keeps one entry per open flow collection and visits all of them for
//! every token (the quadratic cost of hostile input such as 100 KB of `[`), so the bound must hold
//! before the parser runs, and it must never be *lower* than what the parser will see. Whether a
//! `]` closes a collection depends on whether it sits inside a quoted scalar, a comment, a
//! verbatim tag, a directive or a block scalar, and telling which is what a parser is for. The
//! scan therefore follows every reading that the characters seen so far allow: a quote that may
//! start a quoted scalar forks the reading into "quoted" and "not quoted", a `#` that may start a
//! comment into "comment" and "not", and so on. The readings are held by lexical state (plain,
//! single-quoted, double-quoted, comment, verbatim tag, directive), at most one per state, each
//! with the *largest* nesting count any reading in that state has; a `|` or `>` that may start a
//! block scalar (only possible outside flow collections) adds a plain reading at depth 0 at every
//! later line start, which is where such a scalar can end. The parser's own reading is always
//! one of those followed and its nesting never exceeds the count held for its state, so the
//! largest count is an upper bound: a file whose nesting is within the limit may, rarely, be
//! refused (a stray reading that sees unbalanced brackets inside a quoted string as
//! structure), but a file the parser would nest deeper is always refused here. Block
//! nesting (indentation) costs a parser linear time; it is counted exactly by the event reader
//! (`super::yaml`), which stops at the first level over the limit.

/// Deepest nesting accepted in a policy file (the outermost mapping is level 1), in YAML and in
/// JSON files alike.
pub(crate) const MAX_DEPTH: usize = 64;

/// Why the pre-scan refused the bytes; `offset` is where (a byte offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PrescanError {
    pub(super) offset: usize,
    pub(super) kind: PrescanErrorKind,
}

/// The kinds of [`PrescanError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PrescanErrorKind {
    /// The bytes are not UTF-8.
    NotUtf8,
    /// A character no YAML reader should be given (see the module docs).
    Character(char),
    /// A tab (YAML files only).
    Tab,
    /// A byte order mark after the start.
    ByteOrderMark,
    /// A carriage return not followed by a line feed.
    LoneCarriageReturn,
    /// Flow nesting over [`MAX_DEPTH`] (YAML files only).
    TooDeep,
}

/// What the scan checks: a YAML file gets every check; a JSON file (read by the strict JSON
/// scan, which bounds its own nesting) only the character checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Yaml,
    Json,
}

/// Whether PyYAML's reader refuses `c` as non-printable, or YAML 1.1 and 1.2 disagree on it
/// being a line break (SPEC §5: readers must read one policy).
fn disagreeable(c: char) -> bool {
    match c {
        '\t' | '\n' | '\r' => false,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{2028}' | '\u{2029}' | '\u{fffe}' | '\u{ffff}' => true,
        _ => false,
    }
}

/// The nesting counts of the readings in one lexical state: the least and the largest.
type Range = Option<(usize, usize)>;

/// The lexical states a reading can be in, each with the range of counts of its readings.
#[derive(Debug, Clone, Copy, Default)]
struct Readings {
    plain: Range,
    single: Range,
    /// Just after a `'` inside a single-quoted scalar that is followed by another `'`.
    single_pair: Range,
    double: Range,
    /// Just after a `\` inside a double-quoted scalar.
    double_escape: Range,
    comment: Range,
    verbatim_tag: Range,
    directive: Range,
}

/// Adds the readings of `r` to `slot`.
fn join(slot: &mut Range, r: (usize, usize)) {
    *slot = Some(match *slot {
        None => r,
        Some((lo, hi)) => (lo.min(r.0), hi.max(r.1)),
    });
}

/// Whether `c` can only be part of a running plain scalar, anchor or tag name when it precedes
/// another character: after it, no quoted scalar, comment or tag can start.
fn inside_name(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '/')
}

/// What a `'`, `"` or `#` in plain text may be, given the characters before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// Part of a running plain scalar, anchor or tag name.
    Content,
    /// The start of a token: in a flow collection right after `[`, `{` or `,` (a plain scalar
    /// there cannot hold them), or after `: ` anywhere.
    Token,
    /// Either, depending on what the parser made of the text before.
    Either,
}

/// Checks `bytes` as described in the module docs and returns the text.
///
/// # Errors
/// The first problem found, with its byte offset.
pub(super) fn prescan(bytes: &[u8], mode: Mode) -> Result<&str, PrescanError> {
    let text = std::str::from_utf8(bytes).map_err(|e| PrescanError {
        offset: e.valid_up_to(),
        kind: PrescanErrorKind::NotUtf8,
    })?;
    let fail = |offset, kind| Err(PrescanError { offset, kind });
    let yaml = mode == Mode::Yaml;
    let mut now = Readings {
        plain: Some((0, 0)),
        ..Readings::default()
    };
    // A `|` or `>` that may have started a block scalar was seen.
    let mut block_scalar = false;
    let mut prev: Option<char> = None;
    // The last character before this one on the same line that is not a space.
    let mut sig: Option<char> = None;
    for (i, c) in text.char_indices() {
        let next = bytes.get(i + c.len_utf8()).copied();
        match c {
            '\u{feff}' if i > 0 => return fail(i, PrescanErrorKind::ByteOrderMark),
            '\t' => return fail(i, PrescanErrorKind::Tab),
            '\r' if next != Some(b'\n') => return fail(i, PrescanErrorKind::LoneCarriageReturn),
            _ if disagreeable(c) => return fail(i, PrescanErrorKind::Character(c)),
            _ => {}
        }
        let line_start = matches!(prev, None | Some('\n'));
        if line_start {
            sig = None;
            if block_scalar {
                join(&mut now.plain, (0, 0));
            }
        }
        // Letters, digits and spaces change no reading, unless they complete an escape.
        let inert = c.is_ascii_alphanumeric() || c == ' ';
        if !yaml || (inert && now.double_escape.is_none() && now.single_pair.is_none()) {
            prev = Some(c);
            if c != ' ' {
                sig = Some(c);
            }
            continue;
        }
        let mut then = Readings::default();
        if let Some((lo, hi)) = now.plain {
            step_plain(&mut then, (lo, hi), c, prev, sig, next, &mut block_scalar)
                .map_err(|kind| PrescanError { offset: i, kind })?;
        }
        if let Some(r) = now.single {
            match c {
                '\'' if next == Some(b'\'') => join(&mut then.single_pair, r),
                '\'' => join(&mut then.plain, r),
                _ => join(&mut then.single, r),
            }
        }
        if let Some(r) = now.single_pair {
            join(&mut then.single, r);
        }
        if let Some(r) = now.double {
            match c {
                '\\' => join(&mut then.double_escape, r),
                '"' => join(&mut then.plain, r),
                _ => join(&mut then.double, r),
            }
        }
        if let Some(r) = now.double_escape {
            join(&mut then.double, r);
        }
        for (slot, end, stay) in [
            (now.comment, '\n', &mut then.comment),
            (now.directive, '\n', &mut then.directive),
            (now.verbatim_tag, '>', &mut then.verbatim_tag),
        ] {
            if let Some(r) = slot {
                if c == end {
                    join(&mut then.plain, r);
                } else {
                    join(stay, r);
                }
            }
        }
        now = then;
        prev = Some(c);
        if !matches!(c, ' ' | '\n' | '\r') {
            sig = Some(c);
        }
    }
    Ok(text)
}

/// The plain readings `(lo, hi)` meet `c`. `lo` is a lower bound of the parser's flow nesting
/// whenever the parser is in plain text (it only grows where a `[`/`{` certainly opens a
/// collection), `hi` the upper bound the limit is checked against.
fn step_plain(
    then: &mut Readings,
    (lo, hi): (usize, usize),
    c: char,
    prev: Option<char>,
    sig: Option<char>,
    next: Option<u8>,
    block_scalar: &mut bool,
) -> Result<(), PrescanErrorKind> {
    let after_value_indicator = prev == Some(' ') && sig == Some(':');
    // What a quote, a `#` or a `!<` here can be, for the plain readings.
    let start = match (prev, sig) {
        (Some(p), _) if inside_name(p) => Start::Content,
        // In a flow collection (every plain reading has lo >= 1) a plain scalar cannot hold
        // `[`, `{` or `,`: one of them before this on the line, with only spaces between, was
        // structure, and a token starts here.
        (_, Some('[' | '{' | ',')) if lo >= 1 => Start::Token,
        _ if after_value_indicator => Start::Token,
        _ => Start::Either,
    };
    // The plain readings that go on reading `c` as content: after `[`, `{` or `,` only those
    // outside any flow collection can (at depth 0).
    let content = match (start, sig) {
        (Start::Content, _) => Some((lo, hi)),
        (Start::Token, _) => None,
        (Start::Either, Some('[' | '{' | ',')) => Some((0, 0)),
        (Start::Either, _) => Some((lo, hi)),
    };
    let token = (start != Start::Content).then_some((lo, hi));
    let fork = |then: &mut Readings, into: fn(&mut Readings) -> &mut Range| {
        if let Some(r) = content {
            join(&mut then.plain, r);
        }
        if let Some(r) = token {
            join(into(then), r);
        }
    };
    match c {
        '[' | '{' => {
            if hi + 1 > MAX_DEPTH {
                return Err(PrescanErrorKind::TooDeep);
            }
            // Certainly a collection: inside one already, at the start of the text, or right
            // after `: `.
            let certain = lo >= 1 || prev.is_none() || after_value_indicator;
            join(&mut then.plain, (if certain { lo + 1 } else { lo }, hi + 1));
        }
        ']' | '}' => join(
            &mut then.plain,
            (lo.saturating_sub(1), hi.saturating_sub(1)),
        ),
        '\'' => fork(then, |r| &mut r.single),
        '"' => fork(then, |r| &mut r.double),
        // After white space a `#` always starts a comment.
        '#' if matches!(prev, None | Some(' ' | '\n')) => join(&mut then.comment, (lo, hi)),
        '#' => fork(then, |r| &mut r.comment),
        '!' if next == Some(b'<') => fork(then, |r| &mut r.verbatim_tag),
        '%' if matches!(prev, None | Some('\n')) => {
            join(&mut then.plain, (lo, hi));
            join(&mut then.directive, (lo, hi));
        }
        '|' | '>' if matches!(prev, None | Some(' ' | '\n')) => {
            *block_scalar = true;
            join(&mut then.plain, (lo, hi));
        }
        _ => join(&mut then.plain, (lo, hi)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(s: &str) -> Result<&str, PrescanError> {
        prescan(s.as_bytes(), Mode::Yaml)
    }

    fn kind(s: &str) -> Option<PrescanErrorKind> {
        yaml(s).err().map(|e| e.kind)
    }

    fn nest(n: usize) -> String {
        format!("{}x{}", "[".repeat(n), "]".repeat(n))
    }

    #[test]
    fn flow_nesting_bound_is_inclusive() {
        assert!(yaml(&nest(MAX_DEPTH)).is_ok());
        let deep = nest(MAX_DEPTH + 1);
        assert_eq!(
            yaml(&deep).err(),
            Some(PrescanError {
                offset: MAX_DEPTH,
                kind: PrescanErrorKind::TooDeep
            })
        );
        assert_eq!(kind(&"[".repeat(100_000)), Some(PrescanErrorKind::TooDeep));
        assert_eq!(kind(&"{a: ".repeat(100)), Some(PrescanErrorKind::TooDeep));
        // Siblings do not add up.
        let wide = format!("a: [{}]\n", "[x], ".repeat(10_000));
        assert!(yaml(&wide).is_ok());
    }

    /// Brackets inside quotes, comments and block scalars are not structure; the scan must not
    /// count them down (a `]` inside a quoted string must not hide a real `[`).
    #[test]
    fn closers_in_scalars_never_lower_the_count() {
        for unit in [
            "[\"]\", ",
            "['x]', ",
            "[\"\\\"]\", ",
            "['it''s]', ",
            "[ # ]\n",
            "[!<tag:]> x, ",
            "[!t \"]\", ",
        ] {
            let doc = unit.repeat(MAX_DEPTH + 1);
            assert_eq!(kind(&doc), Some(PrescanErrorKind::TooDeep), "{unit:?}");
        }
        let block = format!("a: |\n  \"\nb: {}", "[\"]]\", ".repeat(MAX_DEPTH + 1));
        assert_eq!(kind(&block), Some(PrescanErrorKind::TooDeep));
    }

    /// Valid YAML with flow nesting of a known depth, its scalars full of brackets, quotes and
    /// comment signs in every quoting style: the pre-scan never lets more than 64 levels
    /// through, and refuses next to nothing within the limit.
    #[test]
    fn the_bound_holds_on_generated_documents() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        const SCALARS: &[&str] = &[
            "a",
            "'x]'",
            "\"y]\"",
            "'it''s]]'",
            "\"a\\\"]\"",
            "'#]'",
            "\"#]\"",
            "x#y",
            "don't",
            "a\"b",
            "!t \"]\"",
            "!<t:]> x",
            "'['",
            "\"{\"",
            "-x",
            "a b",
        ];
        let mut refused_within = 0;
        let mut docs = 0;
        for _ in 0..3000 {
            let target = 1 + next(80) as usize;
            // One chain of `target` levels, with siblings that hold scalars and comments.
            let mut doc = String::new();
            if next(3) == 0 {
                doc.push_str("d: |\n  \"\n  ]]]]\n  'x\n");
            }
            doc.push_str("root: ");
            let mut closers = Vec::new();
            for level in 0..target {
                let map = next(2) == 0;
                doc.push(if map { '{' } else { '[' });
                closers.push(if map { '}' } else { ']' });
                for _ in 0..next(3) {
                    if map {
                        doc.push_str(&format!("k{level}_{}: ", next(1000)));
                    }
                    doc.push_str(SCALARS[next(SCALARS.len() as u64) as usize]);
                    doc.push_str(if next(4) == 0 { ", # ]]] '\n  " } else { ", " });
                }
                if map {
                    doc.push_str(&format!("n{level}: "));
                }
            }
            doc.push_str(SCALARS[next(SCALARS.len() as u64) as usize]);
            while let Some(c) = closers.pop() {
                doc.push(c);
            }
            doc.push('\n');
            // The document is valid YAML of exactly that flow depth.
            let mut depth = 0usize;
            let mut deepest = 0usize;
            let mut parser = saphyr_parser::Parser::new_from_str(&doc);
            while let Some(ev) = parser.next_event() {
                match ev {
                    Ok((
                        saphyr_parser::Event::SequenceStart(..)
                        | saphyr_parser::Event::MappingStart(..),
                        _,
                    )) => {
                        depth += 1;
                        deepest = deepest.max(depth);
                    }
                    Ok((
                        saphyr_parser::Event::SequenceEnd | saphyr_parser::Event::MappingEnd,
                        _,
                    )) => depth -= 1,
                    Ok(_) => {}
                    Err(e) => panic!("{doc:?}: {e}"),
                }
            }
            // The root mapping is one level; the block scalar sibling none.
            assert_eq!(deepest, target + 1, "{doc:?}");
            docs += 1;
            match yaml(&doc) {
                Ok(_) => assert!(target <= MAX_DEPTH, "{target} levels passed: {doc:?}"),
                Err(e) => {
                    assert_eq!(e.kind, PrescanErrorKind::TooDeep, "{doc:?}");
                    if target <= MAX_DEPTH {
                        refused_within += 1;
                    }
                }
            }
        }
        assert!(
            refused_within * 100 <= docs,
            "{refused_within} of {docs} refused within the bound"
        );
    }

    #[test]
    fn ordinary_policies_pass() {
        for doc in [
            "version: \"1\"\ndeny: [exec, 'shell*']\n",
            "description: don't [panic\nname: it's\n",
            "c: [{tool: t, params: {p: {matches: '^[a-z]+$'}}}]\n",
            "a: \"[[[[\" # [[[[\n",
            "{\"version\": \"1\", \"schemas\": {\"t\": {\"type\": \"object\"}}}",
            "a: |\n  [[[[[[\n  \"\nb: x\n",
            "\u{feff}a: 1\r\n",
        ] {
            assert!(yaml(doc).is_ok(), "{doc:?}: {:?}", yaml(doc));
        }
        // Many unbalanced brackets inside quoted strings: structure is still balanced.
        let regexes = format!("deny: [{}]\n", "'\\[', ".repeat(500));
        assert!(yaml(&regexes).is_ok());
    }

    #[test]
    fn characters_readers_disagree_on() {
        for (doc, k) in [
            ("a: b\tc", PrescanErrorKind::Tab),
            ("a:\tb", PrescanErrorKind::Tab),
            ("a: b\u{85}c", PrescanErrorKind::Character('\u{85}')),
            ("a: b\u{2028}c", PrescanErrorKind::Character('\u{2028}')),
            ("a: \"\u{2029}\"", PrescanErrorKind::Character('\u{2029}')),
            ("a: b\u{0}", PrescanErrorKind::Character('\u{0}')),
            ("a: \u{7f}", PrescanErrorKind::Character('\u{7f}')),
            ("a: \u{9b}", PrescanErrorKind::Character('\u{9b}')),
            ("# \u{1b}[31m\n", PrescanErrorKind::Character('\u{1b}')),
            ("a: \u{ffff}", PrescanErrorKind::Character('\u{ffff}')),
            ("a: b\u{feff}", PrescanErrorKind::ByteOrderMark),
            ("a: 1\rb: 2", PrescanErrorKind::LoneCarriageReturn),
        ] {
            assert_eq!(kind(doc), Some(k), "{doc:?}");
        }
        let e = prescan(b"a: \xff", Mode::Yaml).err();
        assert_eq!(
            e,
            Some(PrescanError {
                offset: 3,
                kind: PrescanErrorKind::NotUtf8
            })
        );
        // JSON: the same characters (PyYAML cannot read a tab-indented JSON text either).
        assert!(prescan(b"{\n\t\"a\": 1\n}", Mode::Json).is_err());
        assert!(prescan("{\"a\": \"\u{2028}\"}".as_bytes(), Mode::Json).is_err());
        // JSON nesting is the strict JSON scan's business.
        assert!(prescan("[".repeat(1000).as_bytes(), Mode::Json).is_ok());
    }
}
