//! One regex pass over a text for both `deny_patterns` and the secret rules, when a policy has
//! both: the secret rules' patterns followed by the deny patterns in one [`RegexSet`], so a text
//! is read once instead of twice (the scan is most of what `results` costs per byte of answer;
//! bench/README.md, "Secret rules on non-ASCII answers").
//!
//! A deny pattern is case-folded on its own (`(?i)` for it alone, as the separate set compiles
//! it): it is parsed case-insensitively by the `regex` crate's own parser and written back from
//! that parse, which is the same regex with its case folding spelled out — no textual wrapping
//! that a `(?x)` comment could swallow. The two sets are merged only when no deny pattern holds a
//! Unicode word boundary: one such boundary makes the regex engine leave its DFA on a non-ASCII
//! byte for the whole set, and the secret rules (ASCII boundaries, `go_syntax`) must not pay for
//! it. Otherwise the two sets stay apart, as before.

use regex::RegexSet;

use super::secrets::{SecretMatch, SecretRules};

/// The merged set and where the deny patterns start in it.
#[derive(Debug)]
pub(crate) struct OnePass {
    set: RegexSet,
    secrets: usize,
}

impl OnePass {
    /// The merged set of `rules` and the `deny` set's patterns, when they can be merged.
    pub(crate) fn new(rules: &SecretRules, deny: &RegexSet) -> Option<OnePass> {
        let mut patterns: Vec<String> = rules.patterns().to_vec();
        let secrets = patterns.len();
        for p in deny.patterns() {
            let hir = regex_syntax::ParserBuilder::new()
                .case_insensitive(true)
                .build()
                .parse(p)
                .ok()?;
            if hir.properties().look_set().contains_word_unicode() {
                return None;
            }
            patterns.push(hir.to_string());
        }
        let set = RegexSet::new(&patterns).ok()?;
        Some(OnePass { set, secrets })
    }

    /// The first deny pattern matching `text` (by its index in `deny_patterns`), and the secrets
    /// `rules` find in it.
    pub(crate) fn scan(
        &self,
        rules: &SecretRules,
        text: &str,
    ) -> (Option<usize>, Vec<SecretMatch>) {
        let hits = self.set.matches(text);
        if !hits.matched_any() {
            return (None, Vec::new());
        }
        let deny = hits
            .iter()
            .find(|&i| i >= self.secrets)
            .map(|i| i - self.secrets);
        let found = rules.find_among(text, hits.iter().take_while(|&i| i < self.secrets));
        (deny, found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deny(patterns: &[&str]) -> RegexSet {
        regex::RegexSetBuilder::new(patterns)
            .case_insensitive(true)
            .build()
            .unwrap()
    }

    fn rules() -> SecretRules {
        SecretRules::new(Vec::new()).unwrap()
    }

    const DENY: &[&str] = &[
        "ignore (all )?previous instructions",
        "(?x) system \\s prompt # a comment that must not swallow anything",
        "[k]elvin",
        "(?-i:CaseKept)",
    ];

    #[test]
    fn merges_only_without_a_unicode_word_boundary() {
        assert!(OnePass::new(&rules(), &deny(DENY)).is_some());
        assert!(OnePass::new(&rules(), &deny(&["\\bpassword\\b"])).is_none());
        assert!(OnePass::new(&rules(), &deny(&["(?-u:\\b)password"])).is_some());
    }

    proptest::proptest! {
        /// The one pass finds exactly what the two passes find, on texts made of secrets,
        /// near misses, deny phrases in any case (Kelvin sign, long s) and non-ASCII letters.
        #[test]
        fn one_pass_finds_what_two_passes_find(parts in proptest::collection::vec(proptest::sample::select(vec![
            "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", "ghp_short", "AKIAABCDEFGHIJKLMNOP", "é",
            " ", "IGNORE previous INSTRUCTIONS", "ignore all previous instructions", "ſystem prompt",
            "SYSTEM\tPROMPT", "\u{212a}elvin", "casekept", "CaseKept", "postgres://u:p@h/db",
            "eyJabcdefghijk.eyJabcdefghijk.abcdefghijk", "-----BEGIN RSA PRIVATE KEY-----", "東京",
        ]), 0..12)) {
            let text: String = parts.concat();
            let (r, d) = (rules(), deny(DENY));
            let one = OnePass::new(&r, &d).unwrap();
            let two = (d.matches(&text).iter().next(), r.find(&text));
            proptest::prop_assert_eq!(one.scan(&r, &text), two);
        }
    }
}
