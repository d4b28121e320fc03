//! Secret rules are written in Go's RE2 syntax (gitleaks reads them with Go's `regexp`, and the
//! built-in rules follow it), and compiled with the `regex` crate, whose syntax is the same but
//! for one difference that matters here: Go's Perl classes and word boundaries are ASCII-only
//! (`\d` is `[0-9]`, `\w` is `[0-9A-Za-z_]`, `\s` is `[\t\n\f\r ]`, `\b` sits between an ASCII
//! word character and anything else), the `regex` crate's are Unicode-aware.
//!
//! Read the Unicode way, a rule would judge differently from gitleaks (`\d` matching Arabic-Indic
//! digits, `\b` refusing a key glued to an accented letter) — and cost differently: a Unicode
//! word boundary stops the `regex` crate's fast DFA at the first non-ASCII byte, and the set
//! then runs its NFA simulation, about 150 times slower (a 4 KiB answer of accented text holding
//! one candidate like `ghp_` took ~1 ms instead of ~7 µs; bench/README.md). So each rule is
//! rewritten to Go's meaning before it is compiled: every `\d \D \w \W \s \S` (inside a bracket
//! class too) becomes its ASCII class, and every `\b \B` the ASCII assertion `(?-u:\b)`.

use regex_syntax::ast::{self, Ast, ClassPerlKind, ClassSetItem, Span};

/// `pattern` (Go RE2 syntax) in the `regex` crate's syntax with Go's meaning.
///
/// # Errors
/// The parser's message when `pattern` is not a regex.
pub(crate) fn to_rust(pattern: &str) -> Result<String, String> {
    let parsed = ast::parse::Parser::new()
        .parse(pattern)
        .map_err(|e| e.to_string())?;
    let mut edits =
        ast::visit(&parsed, Edits(Vec::new())).map_err(|()| "cannot read the regex".to_owned())?;
    edits.sort_by_key(|(span, _)| std::cmp::Reverse(span.start.offset));
    let mut out = pattern.to_owned();
    for (span, with) in edits {
        if out.is_char_boundary(span.start.offset) && out.is_char_boundary(span.end.offset) {
            out.replace_range(span.start.offset..span.end.offset, with);
        }
    }
    Ok(out)
}

/// The replacements, by the span of what they replace.
struct Edits(Vec<(Span, &'static str)>);

/// The ASCII class of a Perl class (nested classes are allowed inside brackets).
fn ascii_class(kind: &ClassPerlKind, negated: bool) -> &'static str {
    match (kind, negated) {
        (ClassPerlKind::Digit, false) => "[0-9]",
        (ClassPerlKind::Digit, true) => "[^0-9]",
        (ClassPerlKind::Word, false) => "[0-9A-Za-z_]",
        (ClassPerlKind::Word, true) => "[^0-9A-Za-z_]",
        (ClassPerlKind::Space, false) => "[\\t\\n\\f\\r ]",
        (ClassPerlKind::Space, true) => "[^\\t\\n\\f\\r ]",
    }
}

impl ast::Visitor for Edits {
    type Output = Vec<(Span, &'static str)>;
    type Err = ();

    fn finish(self) -> Result<Self::Output, ()> {
        Ok(self.0)
    }

    fn visit_pre(&mut self, node: &Ast) -> Result<(), ()> {
        match node {
            Ast::ClassPerl(c) => self.0.push((c.span, ascii_class(&c.kind, c.negated))),
            Ast::Assertion(a) => match a.kind {
                ast::AssertionKind::WordBoundary => self.0.push((a.span, "(?-u:\\b)")),
                ast::AssertionKind::NotWordBoundary => self.0.push((a.span, "(?-u:\\B)")),
                _ => {}
            },
            _ => {}
        }
        Ok(())
    }

    fn visit_class_set_item_pre(&mut self, item: &ClassSetItem) -> Result<(), ()> {
        if let ClassSetItem::Perl(c) = item {
            self.0.push((c.span, ascii_class(&c.kind, c.negated)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::to_rust;

    #[test]
    fn perl_classes_and_word_boundaries_mean_what_they_mean_in_go() {
        assert_eq!(
            to_rust(r"\bkey_\d{4}\b").unwrap(),
            r"(?-u:\b)key_[0-9]{4}(?-u:\b)"
        );
        assert_eq!(
            to_rust(r"[\w.-]+\S\B").unwrap(),
            r"[[0-9A-Za-z_].-]+[^\t\n\f\r ](?-u:\B)"
        );
        // Escaped backslashes, literals and Unicode classes stay.
        assert_eq!(to_rust(r"\\b\pL\x41").unwrap(), r"\\b\pL\x41");
        let go = |p: &str| regex::Regex::new(&to_rust(p).unwrap()).unwrap();
        // Go: `\d` is ASCII, `\b` sits beside an accented letter.
        assert!(!go(r"^\d+$").is_match("٣٤"));
        assert!(go(r"\bAKIA[A-Z]{4}\b").is_match("éAKIAABCDé"));
        assert!(!go(r"\bAKIA[A-Z]{4}\b").is_match("xAKIAABCD"));
        assert!(go(r"(?i)\w+").is_match("K"));
        assert!(to_rust("(unclosed").is_err());
    }

    /// No rule, built-in or rewritten, keeps a Unicode word boundary or a Unicode Perl class:
    /// the set's DFA never stops at a non-ASCII byte because of them.
    #[test]
    fn no_rewritten_rule_keeps_a_unicode_word_boundary() {
        let gitleaks_like = [
            r"(?i)\b(api[_-]?key)\s*[:=]\s*['\x22]?([\w-]{32,45})\b",
            r"\B-----BEGIN\b[^\S]*\W\D",
        ];
        let builtins = crate::policy::results::secrets::BUILTIN
            .iter()
            .map(|(_, re, _)| *re);
        for p in builtins.chain(gitleaks_like) {
            let rust = to_rust(p).unwrap();
            let hir = regex_syntax::Parser::new().parse(&rust).unwrap();
            let looks = hir.properties().look_set();
            assert!(!looks.contains_word_unicode(), "{p} -> {rust}");
            assert!(
                !rust.contains(r"\w") && !rust.contains(r"\d") && !rust.contains(r"\s"),
                "{rust}"
            );
        }
    }
}
