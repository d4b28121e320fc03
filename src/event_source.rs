//! The one rule for an `event_source` (SPEC §2), used both where a configuration is checked
//! before a session and where the capture reader checks the records: the two must never
//! disagree about which sources are valid.
#![forbid(unsafe_code)]

/// True when `s` is an absolute URI `scheme://…` (SPEC §2): a scheme of a letter then letters,
/// digits, `+`, `-` or `.`; then `://`; then at least one character; and no whitespace or control
/// character anywhere. An empty remainder (`assay://`) names nothing and is refused (recorded in
/// docs/decisions.md).
pub(crate) fn is_event_source(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once("://") else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::is_event_source;

    #[test]
    fn event_source_syntax() {
        for ok in [
            "assay://example/session",
            "urn+x-1.a://h",
            "a://b",
            "urn+x://host/path",
            "file:///tmp/x",
        ] {
            assert!(is_event_source(ok), "{ok}");
        }
        for bad in [
            "",
            "example/session",
            "1x://h",
            "a b://h",
            "assay://",
            "assay://has space",
            "x://a\tb",
            "x://a\u{7f}",
            "x://a\u{85}",
            "://x",
            "as_say://x",
            "x:/a",
        ] {
            assert!(!is_event_source(bad), "{bad:?}");
        }
    }
}
