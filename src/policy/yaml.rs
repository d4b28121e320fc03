//! Reading a YAML policy into one JSON value, strictly (SPEC §5: "a policy is read as strictly
//! as a protocol line").
//!
//! The bytes first pass the linear pre-scan ([`super::prescan`]: characters, tabs, flow nesting);
//! only then does `saphyr-parser` (an event-level YAML 1.2 parser; safe Rust, no alias
//! expansion) turn the text into events, which this module folds into a `serde_json::Value`
//! one event at a time. Refused, each with the line and column of the node:
//!
//! - anchors, aliases, merge keys (an unquoted `<<`, anywhere), tags (every tag, the standard
//!   `!!binary`/`!!str`/`!!python/…` ones included), directives and a second document: a policy
//!   never needs them and YAML readers disagree on them. Nothing is ever expanded, so an alias
//!   bomb costs what its bytes cost;
//! - unquoted scalars that YAML 1.1 readers (PyYAML `safe_load`) and YAML 1.2 readers read
//!   differently (`yes`, `010`, `1e3`, `2024-01-01`, …; see [`super::scalar`]), numbers JSON
//!   cannot hold (`.inf`, `.nan`, integers beyond 64 bits), and unquoted scalars inside `[...]`
//!   or `{...}` that YAML 1.1 readers split or refuse (`[a?b]`, `[:x]`);
//! - mapping keys that are not strings, not on one line with their `:` (explicit `?` keys
//!   included) or longer than 1000 characters (YAML 1.1 readers stop looking for the `:` after
//!   1024), and duplicate keys (after quoting: `a` and `"a"` are one key);
//! - nesting deeper than [`MAX_DEPTH`] levels (the outermost collection is level 1), counted
//!   exactly here; the event that opens level 65 is the last one read.
//!
//! Quoted and block scalars are strings, as they are to every YAML reader (a block scalar on the
//! last line of a file without a final line break is refused: readers disagree on its end).

use saphyr_parser::{Event, Marker, Parser, ScalarStyle, Span, Tag};
use serde_json::{Map, Value};

use super::error::{Ctx, PolicyError, Refusal};
use super::prescan::{MAX_DEPTH, Mode, PrescanErrorKind, prescan};
use super::scalar::{Disagreement, resolve};

/// The longest mapping key accepted, in characters up to its `:` (PyYAML gives up on a simple
/// key after 1024; the margin keeps clear of how each reader counts).
const MAX_KEY_CHARS: usize = 1000;

/// Reads `bytes` as a YAML policy document.
pub(super) fn parse(ctx: &Ctx<'_>, bytes: &[u8]) -> Result<Value, PolicyError> {
    let text = prescan(bytes, Mode::Yaml).map_err(|e| {
        let what = match e.kind {
            PrescanErrorKind::NotUtf8 => Refusal::NotUtf8,
            PrescanErrorKind::Character(c) => Refusal::Character(c),
            PrescanErrorKind::Tab => Refusal::Tab,
            PrescanErrorKind::ByteOrderMark => Refusal::ByteOrderMark,
            PrescanErrorKind::LoneCarriageReturn => Refusal::LoneCarriageReturn,
            PrescanErrorKind::TooDeep => Refusal::TooDeep,
        };
        // Count lines and columns in the valid prefix (the whole text but for NotUtf8).
        let valid = bytes.get(..e.offset).unwrap_or_default();
        let prefix = std::str::from_utf8(valid).unwrap_or_default();
        ctx.refused_at(prefix, e.offset, what)
    })?;
    let mut reader = Reader::new(ctx, text);
    let mut parser = Parser::new_from_str(text);
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|e| {
            let at = e.marker();
            let found = format!("{} at line {} column {}", e.info(), at.line(), at.col() + 1);
            let rest = text.chars().skip(at.index()).collect::<String>();
            let at_end = rest.lines().all(|l| {
                let l = l.trim_start_matches(' ');
                l.is_empty() || l.starts_with('#')
            });
            let detail = match reader.innermost_flow() {
                // Issue 41: the parser meets an unclosed `[` at the end of the file; the line
                // to fix is where it opened.
                Some((c, line, column)) if at_end => format!(
                    "the `{c}` opened at line {line} column {column} is never closed ({found}, the end of the file)"
                ),
                Some((c, line, column)) => {
                    format!("{found}, inside the `{c}` opened at line {line} column {column}")
                }
                None => found,
            };
            ctx.syntax("YAML", &detail)
        })?;
        if reader.event(event, span)? {
            break;
        }
    }
    // No document at all (only comments): null, as PyYAML reads it; the caller calls that an
    // empty policy.
    Ok(reader.root.take().unwrap_or(Value::Null))
}

/// An open collection.
struct Frame {
    kind: Kind,
    /// Inside `[...]`/`{...}` (flow style).
    flow: bool,
    /// For a collection opened by `[` or `{`: that character and its line and column, so a
    /// syntax error inside it can say where it opened (an unclosed `[` is reported at the end
    /// of the file by the parser).
    opened: Option<(char, usize, usize)>,
    /// How its parent reaches it. Key paths for messages are built from these only when an
    /// error needs one: a path held per collection would cost its depth times its key lengths,
    /// for every collection of a file.
    step: Step,
}

/// One step of a key path.
enum Step {
    Root,
    Key(String),
    Index(usize),
}

enum Kind {
    Seq(Vec<Value>),
    Map {
        map: Map<String, Value>,
        /// The key read, waiting for its value.
        key: Option<String>,
    },
}

/// Turns char indices (saphyr's markers) into byte offsets of the text, walking forward.
struct Offsets<'t> {
    text: &'t str,
    ascii: bool,
    chars: usize,
    bytes: usize,
}

impl<'t> Offsets<'t> {
    fn new(text: &'t str) -> Self {
        Offsets {
            text,
            ascii: text.is_ascii(),
            chars: 0,
            bytes: 0,
        }
    }

    /// The byte offset of character `index` (the text's length past its end). Walks from the
    /// last position, forward or back, so a pass over the events costs the text's length.
    fn byte(&mut self, index: usize) -> usize {
        if self.ascii {
            return index.min(self.text.len());
        }
        if index >= self.chars {
            let rest = self.text.get(self.bytes..).unwrap_or_default();
            let step = rest
                .char_indices()
                .nth(index - self.chars)
                .map_or(rest.len(), |(i, _)| i);
            self.bytes += step;
        } else {
            let before = self.text.get(..self.bytes).unwrap_or_default();
            self.bytes = before
                .char_indices()
                .rev()
                .nth(self.chars - index - 1)
                .map_or(0, |(i, _)| i);
        }
        self.chars = index;
        self.bytes
    }
}

struct Reader<'c, 't> {
    ctx: &'c Ctx<'c>,
    text: &'t str,
    offsets: Offsets<'t>,
    stack: Vec<Frame>,
    root: Option<Value>,
    documents: usize,
}

/// A marker's 1-based line and column.
fn at(m: &Marker) -> (usize, usize) {
    (m.line(), m.col() + 1)
}

/// A tag as its author wrote it (`!!binary`, `!custom`, `!<tag:x>`).
fn tag_text(tag: &Tag) -> String {
    match tag.handle.as_str() {
        "tag:yaml.org,2002:" => format!("!!{}", tag.suffix),
        "!" | "!!" => format!("{}{}", tag.handle, tag.suffix),
        // The non-specific tag `!`.
        "" if tag.suffix == "!" => "!".to_owned(),
        "" => format!("!<{}>", tag.suffix),
        handle if handle.starts_with('!') => format!("{handle}{}", tag.suffix),
        handle => format!("!<{handle}{}>", tag.suffix),
    }
}

impl<'c, 't> Reader<'c, 't> {
    fn new(ctx: &'c Ctx<'c>, text: &'t str) -> Self {
        Reader {
            ctx,
            text,
            offsets: Offsets::new(text),
            stack: Vec::new(),
            root: None,
            documents: 0,
        }
    }

    /// The innermost open collection written with `[` or `{`: the character, its line and column.
    fn innermost_flow(&self) -> Option<(char, usize, usize)> {
        self.stack.iter().rev().find_map(|f| f.opened)
    }

    fn refuse(&self, m: &Marker, what: Refusal) -> PolicyError {
        let (line, column) = at(m);
        self.ctx.refused(line, column, what)
    }

    /// Anchors and tags on a node.
    fn properties(&self, span: &Span, anchor: usize, tag: Option<&Tag>) -> Result<(), PolicyError> {
        if let Some(tag) = tag {
            return Err(self.refuse(&span.start, Refusal::Tag(tag_text(tag))));
        }
        if anchor != 0 {
            return Err(self.refuse(&span.start, Refusal::Anchor));
        }
        Ok(())
    }

    /// Handles one event; `true` when the stream has ended.
    fn event(&mut self, event: Event<'_>, span: Span) -> Result<bool, PolicyError> {
        match event {
            Event::StreamStart | Event::Nothing => {}
            Event::StreamEnd => return Ok(true),
            Event::DocumentStart(explicit) => {
                if self.documents > 0 {
                    return Err(self.refuse(&span.start, Refusal::SecondDocument));
                }
                if explicit {
                    self.directives(&span)?;
                }
            }
            Event::DocumentEnd => self.documents += 1,
            Event::Alias(_) => return Err(self.refuse(&span.start, Refusal::Alias)),
            Event::Scalar(value, style, anchor, tag) => {
                self.properties(&span, anchor, tag.as_deref())?;
                self.scalar(&value, style, &span)?;
            }
            Event::SequenceStart(anchor, tag) => {
                self.properties(&span, anchor, tag.as_deref())?;
                self.open(&span, Kind::Seq(Vec::new()))?;
            }
            Event::MappingStart(anchor, tag) => {
                self.properties(&span, anchor, tag.as_deref())?;
                self.open(
                    &span,
                    Kind::Map {
                        map: Map::new(),
                        key: None,
                    },
                )?;
            }
            Event::SequenceEnd | Event::MappingEnd => self.close(&span)?,
        }
        Ok(false)
    }

    /// Refuses `%` directives before an explicit `---`.
    fn directives(&mut self, span: &Span) -> Result<(), PolicyError> {
        let end = self.offsets.byte(span.start.index());
        let preamble = self.text.get(..end).unwrap_or_default();
        let mut offset = 0;
        for line in preamble.split_inclusive('\n') {
            if line.trim_start_matches('\u{feff}').starts_with('%') {
                return Err(self.ctx.refused_at(self.text, offset, Refusal::Directive));
            }
            offset += line.len();
        }
        Ok(())
    }

    /// The step from the innermost collection to its next value.
    fn next_step(&self) -> Step {
        match self.stack.last() {
            None => Step::Root,
            Some(frame) => match &frame.kind {
                Kind::Seq(items) => Step::Index(items.len()),
                Kind::Map { key: Some(k), .. } => Step::Key(k.clone()),
                Kind::Map { key: None, .. } => Step::Root,
            },
        }
    }

    /// The dotted key path of the next value in the innermost collection (for messages only).
    fn child_path(&self) -> String {
        let mut path = String::new();
        let next = self.next_step();
        for step in self.stack.iter().map(|f| &f.step).chain([&next]) {
            match step {
                Step::Root => {}
                Step::Key(k) if path.is_empty() => path.push_str(k),
                Step::Key(k) => {
                    path.push('.');
                    path.push_str(k);
                }
                Step::Index(i) => path.push_str(&format!("[{i}]")),
            }
        }
        path
    }

    /// Whether the next node is a mapping key.
    fn expects_key(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Frame {
                kind: Kind::Map { key: None, .. },
                ..
            })
        )
    }

    /// A policy is a mapping: any other root is refused at its first event (so a root block
    /// scalar, whose end readers place differently, is never read).
    fn root_is_a_mapping(&self, mapping: bool) -> Result<(), PolicyError> {
        if self.stack.is_empty() && !mapping {
            return Err(self.ctx.invalid("(top level)", "must be a mapping"));
        }
        Ok(())
    }

    fn open(&mut self, span: &Span, kind: Kind) -> Result<(), PolicyError> {
        self.root_is_a_mapping(matches!(kind, Kind::Map { .. }))?;
        if self.expects_key() {
            let path = self.child_path();
            return Err(self.non_string_key(&path));
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(self.refuse(&span.start, Refusal::TooDeep));
        }
        let start = self.offsets.byte(span.start.index());
        let opener = self.text.as_bytes().get(start).copied();
        let flow = matches!(opener, Some(b'[' | b'{'))
            || self.stack.last().is_some_and(|parent| parent.flow);
        let step = self.next_step();
        let opened = match opener {
            Some(c @ (b'[' | b'{')) => {
                let (line, column) = at(&span.start);
                Some((char::from(c), line, column))
            }
            _ => None,
        };
        self.stack.push(Frame {
            kind,
            flow,
            opened,
            step,
        });
        Ok(())
    }

    fn close(&mut self, span: &Span) -> Result<(), PolicyError> {
        let Some(frame) = self.stack.pop() else {
            return Err(self.ctx.syntax(
                "YAML",
                &format!(
                    "unbalanced collection end at line {} column {}",
                    span.start.line(),
                    span.start.col() + 1
                ),
            ));
        };
        let value = match frame.kind {
            Kind::Seq(items) => Value::Array(items),
            Kind::Map { map, .. } => Value::Object(map),
        };
        self.attach(value, span)
    }

    fn non_string_key(&self, path: &str) -> PolicyError {
        self.ctx.invalid(
            if path.is_empty() { "(top level)" } else { path },
            "has a mapping key that is not a string; quote the key",
        )
    }

    /// Puts a finished value where it belongs.
    fn attach(&mut self, value: Value, span: &Span) -> Result<(), PolicyError> {
        match self.stack.last_mut() {
            None => {
                self.root = Some(value);
                Ok(())
            }
            Some(Frame {
                kind: Kind::Seq(items),
                ..
            }) => {
                items.push(value);
                Ok(())
            }
            Some(Frame {
                kind: Kind::Map { map, key },
                ..
            }) => match key.take() {
                Some(k) => {
                    map.insert(k, value);
                    Ok(())
                }
                // A collection in key position is refused in `open`; a scalar key goes through
                // `key`, so this is a parser that broke its own event order.
                None => Err(self.ctx.syntax(
                    "YAML",
                    &format!(
                        "unexpected mapping value at line {} column {}",
                        span.start.line(),
                        span.start.col() + 1
                    ),
                )),
            },
        }
    }

    fn scalar(&mut self, text: &str, style: ScalarStyle, span: &Span) -> Result<(), PolicyError> {
        self.root_is_a_mapping(false)?;
        let value = if style == ScalarStyle::Plain {
            if text == "<<" {
                return Err(self.refuse(&span.start, Refusal::MergeKey));
            }
            if self.stack.last().is_some_and(|f| f.flow) && !flow_plain_agrees(text) {
                return Err(self.refuse(&span.start, Refusal::FlowScalar(text.to_owned())));
            }
            match resolve(text) {
                Ok(v) => v,
                Err(Disagreement::Ambiguous { yaml11, yaml12 }) => {
                    return Err(self.refuse(
                        &span.start,
                        Refusal::Ambiguous {
                            text: text.to_owned(),
                            yaml11,
                            yaml12,
                        },
                    ));
                }
                Err(Disagreement::NotJsonNumber) => {
                    return Err(self.refuse(&span.start, Refusal::NotJsonNumber(text.to_owned())));
                }
            }
        } else {
            if matches!(style, ScalarStyle::Literal | ScalarStyle::Folded)
                && !self.text.ends_with('\n')
            {
                let end = self.offsets.byte(span.end.index());
                if !self.text.get(end..).unwrap_or_default().contains('\n') {
                    return Err(self.refuse(&span.start, Refusal::BlockScalarAtEnd));
                }
            }
            Value::String(text.to_owned())
        };
        if !self.expects_key() {
            return self.attach(value, span);
        }
        let Value::String(key) = value else {
            let path = self.child_path();
            return Err(self.non_string_key(&path));
        };
        self.key_layout(span)?;
        let duplicate = matches!(
            self.stack.last(),
            Some(Frame { kind: Kind::Map { map, .. }, .. }) if map.contains_key(&key)
        );
        if duplicate {
            let frame_path = self.child_path();
            let path = if frame_path.is_empty() {
                key
            } else {
                format!("{frame_path}.{key}")
            };
            return Err(self.ctx.duplicate(&path, Some(at(&span.start).0)));
        }
        if let Some(Frame {
            kind: Kind::Map { key: slot, .. },
            ..
        }) = self.stack.last_mut()
        {
            *slot = Some(key);
        }
        Ok(())
    }

    /// A key stands on one line with its `:` and is short enough for YAML 1.1 readers' simple
    /// keys (SPEC §5: the rules PyYAML reads).
    fn key_layout(&mut self, span: &Span) -> Result<(), PolicyError> {
        let refuse = |m: &Marker| {
            let (line, column) = at(m);
            self.ctx.refused(line, column, Refusal::KeyLayout)
        };
        if span.start.line() != span.end.line() {
            return Err(refuse(&span.start));
        }
        let end = self.offsets.byte(span.end.index());
        let rest = self.text.get(end..).unwrap_or_default();
        let spaces = rest.bytes().take_while(|&b| b == b' ').count();
        let colon = rest.as_bytes().get(spaces) == Some(&b':');
        let length = span.end.index() - span.start.index() + spaces;
        if !colon || length > MAX_KEY_CHARS {
            return Err(refuse(&span.start));
        }
        Ok(())
    }
}

/// Whether PyYAML reads the unquoted `text` inside a flow collection as YAML 1.2 readers do:
/// in flow context PyYAML ends a plain scalar at `?` and cannot start one with `?`, `:`, `|` or
/// `>` (its `check_plain`/`scan_plain`), where YAML 1.2 readers read one plain scalar.
fn flow_plain_agrees(text: &str) -> bool {
    !(text.contains('?') || text.starts_with([':', '|', '>']))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn read(s: &str) -> Result<Value, PolicyError> {
        parse(&Ctx::new(Path::new("p.yaml")), s.as_bytes())
    }

    fn refusal(s: &str) -> (usize, usize, Refusal) {
        match read(s) {
            Err(PolicyError::Refused {
                line, column, what, ..
            }) => (line, column, what),
            other => panic!("{s:?} should be refused: {other:?}"),
        }
    }

    #[test]
    fn values_convert() {
        let v = read("a: [1, -2, 1.5, true, null, ~, 'x', \"y\"]\nb: {c: {}}\nd:\n").ok();
        assert_eq!(
            v,
            Some(json!({"a": [1, -2, 1.5, true, null, null, "x", "y"], "b": {"c": {}}, "d": null}))
        );
        let v = read("{\"version\": \"1\", \"allow\": [\"*\"]}").ok();
        assert_eq!(v, Some(json!({"version": "1", "allow": ["*"]})));
        let v = read("k: |\n  line\n  two\nf: >-\n  a\n  b\n").ok();
        assert_eq!(v, Some(json!({"k": "line\ntwo\n", "f": "a b"})));
        assert_eq!(refusal("k: |+\n  x").2, Refusal::BlockScalarAtEnd);
        assert_eq!(read("k: |+\n  x\n").ok(), Some(json!({"k": "x\n"})));
        let v = read("---\na: 'it''s'\n...\n").ok();
        assert_eq!(v, Some(json!({"a": "it's"})));
        let v = read("\u{feff}a: \"\\u00e9\\t\"\r\nb: é\r\n").ok();
        assert_eq!(v, Some(json!({"a": "é\t", "b": "é"})));
    }

    /// Issue 41: an unclosed `[` or `{` is reported where it opened, not at the end of the file.
    #[test]
    fn an_unclosed_flow_collection_names_the_line_it_opened_on() {
        let detail = |doc: &str| match read(doc) {
            Err(PolicyError::Syntax { detail, .. }) => detail,
            other => panic!("{doc:?}: {other:?}"),
        };
        let d = detail("version: \"1\"\ntools:\n  allow: [a, b\n\n# end\n\n");
        assert!(
            d.starts_with("the `[` opened at line 3 column 10 is never closed"),
            "{d}"
        );
        let d = detail("tools: {allow: [a]\n");
        assert!(
            d.starts_with("the `{` opened at line 1 column 8 is never closed"),
            "{d}"
        );
        // An error inside an open collection, before the end, names both places.
        let d = detail("tools:\n  allow: [a, b\n  deny: []\n");
        assert!(
            d.contains("at line 3 column 7, inside the `[` opened at line 2 column 10"),
            "{d}"
        );
    }

    #[test]
    fn anchors_aliases_merge_keys_tags_and_directives_are_refused_where_they_are() {
        for (doc, line, column, what) in [
            ("a: &x [1]\nb: *x\n", 1, 4, Refusal::Anchor),
            ("a:\n  <<: {b: 1}\n", 2, 3, Refusal::MergeKey),
            ("a: [<<]\n", 1, 5, Refusal::MergeKey),
            (
                "deny: [!!binary ZXhlYw==]\n",
                1,
                8,
                Refusal::Tag("!!binary".into()),
            ),
            ("a: !!str 1\n", 1, 4, Refusal::Tag("!!str".into())),
            ("a: !custom x\n", 1, 4, Refusal::Tag("!custom".into())),
            (
                "a: !!python/object:os.system x\n",
                1,
                4,
                Refusal::Tag("!!python/object:os.system".into()),
            ),
            ("a: !<tag:x> y\n", 1, 4, Refusal::Tag("!<tag:x>".into())),
            ("a: ! y\n", 1, 4, Refusal::Tag("!".into())),
            ("--- !!map\na: 1\n", 1, 5, Refusal::Tag("!!map".into())),
            ("%YAML 1.2\n---\na: 1\n", 1, 1, Refusal::Directive),
            (
                "# c\n%TAG !e! tag:e,2000:\n---\na: 1\n",
                2,
                1,
                Refusal::Directive,
            ),
            ("a: 1\n---\nb: 2\n", 2, 1, Refusal::SecondDocument),
        ] {
            assert_eq!(refusal(doc), (line, column, what), "{doc:?}");
        }
        // An alias needs an anchor, refused first; without one the parser refuses it.
        assert!(
            matches!(read("a: 1\nb: *x\n"), Err(PolicyError::Syntax { detail, .. }) if detail.contains("line 2 column 4"))
        );
        // Quoted, `<<` is an ordinary string (to PyYAML too).
        assert_eq!(read("'<<': 1\n").ok(), Some(json!({"<<": 1})));
    }

    #[test]
    fn ambiguous_scalars_are_refused() {
        for doc in [
            "a: yes\n",
            "a: [no]\n",
            "on: 1\n",
            "a: 010\n",
            "a: 1e3\n",
            "a: 2024-01-01\n",
            "a: 1_000\n",
        ] {
            assert!(
                matches!(refusal(doc).2, Refusal::Ambiguous { .. }),
                "{doc:?}"
            );
        }
        assert_eq!(
            refusal("a: .inf\n").2,
            Refusal::NotJsonNumber(".inf".into())
        );
        assert_eq!(
            read("a: 'yes'\nb: \"010\"\n").ok(),
            Some(json!({"a": "yes", "b": "010"}))
        );
    }

    #[test]
    fn keys_are_one_line_strings() {
        for doc in [
            "? a\n: b\n",
            "{\"a\"\n: 1}\n",
            "{a\n b: 1}\n",
            "{a, b: 1}\n",
        ] {
            assert_eq!(refusal(doc).2, Refusal::KeyLayout, "{doc:?}");
        }
        let long = format!("{}: 1\n", "k".repeat(MAX_KEY_CHARS + 1));
        assert_eq!(refusal(&long).2, Refusal::KeyLayout);
        let ok = format!("{}: 1\n", "k".repeat(MAX_KEY_CHARS));
        assert!(read(&ok).is_ok());
        for (doc, key) in [
            ("1: a\n", "(top level)"),
            ("a: {true: x}\n", "a"),
            ("a: {[1]: x}\n", "a"),
            ("a: {{b: 1}: x}\n", "a"),
            ("~: a\n", "(top level)"),
        ] {
            match read(doc) {
                Err(e @ PolicyError::Invalid { .. }) => assert_eq!(e.key(), Some(key), "{doc}"),
                other => panic!("{doc:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn duplicates_are_refused_with_path_and_line() {
        for (doc, key, line) in [
            ("a: 1\na: 2\n", "a", 2),
            ("tools:\n  allow: [x]\n  allow: [y]\n", "tools.allow", 3),
            ("c:\n  - p: {m: 1, m: 2}\n", "c[0].p.m", 2),
            ("a: 1\n'a': 2\n", "a", 2),
            ("a: 1\n\"\\x61\": 2\n", "a", 2),
        ] {
            match read(doc) {
                Err(PolicyError::DuplicateKey {
                    key: k, line: l, ..
                }) => {
                    assert_eq!((k.as_str(), l), (key, Some(line)), "{doc}")
                }
                other => panic!("{doc:?}: {other:?}"),
            }
        }
        assert!(read("x:\n- a: 1\n- a: 2\n").is_ok());
    }

    #[test]
    fn nesting_is_bounded_exactly() {
        let block = |n: usize| {
            let mut s = String::new();
            for i in 0..n {
                s.push_str(&" ".repeat(i));
                s.push_str("k:\n");
            }
            s.push_str(&" ".repeat(n));
            s.push_str("k: v\n");
            s
        };
        assert!(read(&block(MAX_DEPTH - 1)).is_ok());
        assert_eq!(refusal(&block(MAX_DEPTH)).2, Refusal::TooDeep);
        // `k:` then n compact sequences: 1 + n levels.
        let compact = |n: usize| format!("k:\n{}x\n", "- ".repeat(n));
        assert!(read(&compact(MAX_DEPTH - 1)).is_ok());
        assert_eq!(refusal(&compact(MAX_DEPTH)).2, Refusal::TooDeep);
        let flow = |n: usize| format!("k: {}x{}\n", "[".repeat(n), "]".repeat(n));
        assert!(read(&flow(MAX_DEPTH - 1)).is_ok());
        assert_eq!(refusal(&flow(MAX_DEPTH)).2, Refusal::TooDeep);
        // The pre-scan refuses flow nesting before the parser runs.
        assert_eq!(
            refusal(&"[".repeat(100_000)),
            (1, MAX_DEPTH + 1, Refusal::TooDeep)
        );
    }

    #[test]
    fn characters_are_refused_with_their_position() {
        assert_eq!(refusal("a: 1\nb:\tc\n"), (2, 3, Refusal::Tab));
        assert_eq!(
            refusal("a: é\u{85}\n"),
            (1, 5, Refusal::Character('\u{85}'))
        );
        assert!(matches!(
            read("a: \"\\ud800\"\n"),
            Err(PolicyError::Syntax { .. })
        ));
        let e = parse(&Ctx::new(Path::new("p.yaml")), b"a: b\nc: \xff\n");
        assert!(
            matches!(
                e,
                Err(PolicyError::Refused {
                    line: 2,
                    column: 4,
                    what: Refusal::NotUtf8,
                    ..
                })
            ),
            "{e:?}"
        );
    }

    #[test]
    fn syntax_errors_have_a_position() {
        for doc in [
            "a: [1, 2\n",
            "\tfoo: : :\n",
            "a: b: c\n",
            "a: |\n  x\n b: 1\n",
        ] {
            match read(doc) {
                Err(e @ (PolicyError::Syntax { .. } | PolicyError::Refused { .. })) => {
                    let msg = e.to_string();
                    assert!(
                        msg.contains("p.yaml") && msg.contains("line") && !msg.contains('\n'),
                        "{msg}"
                    );
                }
                other => panic!("{doc:?}: {other:?}"),
            }
        }
    }
}
