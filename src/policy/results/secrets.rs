//! Secret rules (SPEC §5.3 `results.secrets`): the built-in set, extra rules read from a gitleaks
//! TOML file (`gitleaks.rs`), and the one scanner over both — a single [`RegexSet`] pass over a
//! text says which rules match anywhere in it, and only those rules' own regexes then find the
//! matches (their positions, for the finding and for `redact`). A finding names the rule and the
//! place, never the secret.

use regex::{Regex, RegexSet};

/// One rule: a name, a regex, and gitleaks' refinements.
#[derive(Debug, Clone)]
pub struct SecretRule {
    /// The rule id (`aws-access-key-id`, or a gitleaks rule's `id`).
    pub(crate) id: String,
    pub(crate) regex: Regex,
    /// gitleaks `secretGroup`: the capture group that holds the secret (0: the whole match).
    pub(crate) secret_group: usize,
    /// gitleaks `keywords`, lowercased: the rule applies only to a text holding one of them
    /// (case-insensitively); empty: always.
    pub(crate) keywords: Vec<String>,
    /// gitleaks `entropy`: the secret's Shannon entropy (bits per character) must reach it.
    pub(crate) entropy: Option<f64>,
    /// gitleaks allowlist `regexes`: a secret matching one of them is not a finding.
    pub(crate) allow_regexes: Vec<Regex>,
    /// gitleaks allowlist `stopwords`, lowercased: a secret containing one is not a finding.
    pub(crate) stopwords: Vec<String>,
}

/// A built-in rule: id, regex, keywords (lowercase).
type Builtin = (&'static str, &'static str, &'static [&'static str]);

/// The built-in rule set (docs/policy.md lists it with examples), in Go's RE2 syntax and meaning
/// as gitleaks' rules are (`go_syntax`: `\b` is an ASCII word boundary). Each regex is bounded by
/// word boundaries or fixed lengths so a near miss (one character short, a wrong prefix) is no
/// finding.
pub(crate) const BUILTIN: &[Builtin] = &[
    (
        "aws-access-key-id",
        r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b",
        &[],
    ),
    ("github-token", r"\bgh[pousr]_[0-9A-Za-z]{36}\b", &[]),
    (
        "github-fine-grained-token",
        r"\bgithub_pat_[0-9A-Za-z_]{82}\b",
        &[],
    ),
    (
        "gitlab-token",
        r"\bglpat-[0-9A-Za-z_-]{20}(?:\.[0-9a-z]{2}\.[0-9a-z]{9})?\b",
        &[],
    ),
    (
        "slack-token",
        r"\bxox[abposr]-[0-9]{10,13}-[0-9A-Za-z-]{10,}",
        &[],
    ),
    (
        "slack-webhook-url",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56}",
        &[],
    ),
    (
        "discord-webhook-url",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/[A-Za-z0-9_-]{60,68}",
        &[],
    ),
    ("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}\b", &[]),
    (
        "stripe-secret-key",
        r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{24,99}\b",
        &[],
    ),
    (
        "openai-api-key",
        r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}\b",
        &[],
    ),
    (
        "anthropic-api-key",
        r"\bsk-ant-(?:api|admin)[0-9]{2}-[A-Za-z0-9_-]{80,}",
        &[],
    ),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", &[]),
    (
        "sendgrid-api-key",
        r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b",
        &[],
    ),
    ("azure-storage-key", r"AccountKey=[A-Za-z0-9+/]{86}==", &[]),
    (
        "private-key",
        r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----",
        &[],
    ),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
        &[],
    ),
    (
        "connection-string-password",
        r"(?i)\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|redis|rediss|amqps?|mssql|sqlserver|jdbc:[a-z]+)://[^\s:/@]+:[^\s@/]+@[^\s/]+",
        &[],
    ),
];

/// The compiled rules and their one set.
#[derive(Debug, Clone)]
pub struct SecretRules {
    rules: Vec<SecretRule>,
    set: RegexSet,
}

/// One secret found: the rule and the byte range of the match in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretMatch {
    /// The index of the rule in [`SecretRules::rule_id`] order.
    pub rule: usize,
    /// The range of the whole match (what `redact` replaces).
    pub start: usize,
    /// End of the match (exclusive).
    pub end: usize,
}

/// Shannon entropy of `s` in bits per character (gitleaks' `entropy`).
fn shannon(s: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    let mut n = 0usize;
    for c in s.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
        n += 1;
    }
    if n == 0 {
        return 0.0;
    }
    let n = n as f64;
    counts
        .values()
        .map(|&c| {
            let p = c as f64 / n;
            -p * libm::log2(p)
        })
        .sum()
}

impl SecretRules {
    /// The built-in rules followed by `extra` (a gitleaks file's), in one set.
    ///
    /// # Errors
    /// The regex set's compile error (the rules were compiled one by one before, so only a
    /// size limit can fail here).
    pub(crate) fn new(extra: Vec<SecretRule>) -> Result<SecretRules, regex::Error> {
        let mut rules = Vec::with_capacity(BUILTIN.len() + extra.len());
        for (id, re, keywords) in BUILTIN {
            // Go's meaning, as gitleaks' rules (`go_syntax`); the built-in patterns parse.
            let re = super::go_syntax::to_rust(re).unwrap_or_else(|_| (*re).to_owned());
            rules.push(SecretRule {
                id: (*id).to_owned(),
                regex: Regex::new(&re)?,
                secret_group: 0,
                keywords: keywords.iter().map(|k| (*k).to_owned()).collect(),
                entropy: None,
                allow_regexes: Vec::new(),
                stopwords: Vec::new(),
            });
        }
        rules.extend(extra);
        let set = RegexSet::new(rules.iter().map(|r| r.regex.as_str()))?;
        Ok(SecretRules { rules, set })
    }

    /// The id of rule `i`.
    pub fn rule_id(&self, i: usize) -> &str {
        self.rules.get(i).map_or("", |r| r.id.as_str())
    }

    /// How many rules there are (built-in first).
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether there are no rules (never: the built-in set is always there).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Every secret in `text`, in order of position, overlapping matches of later rules dropped
    /// (one pass of the set; only the rules it names run again, to find where).
    pub fn find(&self, text: &str) -> Vec<SecretMatch> {
        let hits = self.set.matches(text);
        if !hits.matched_any() {
            return Vec::new();
        }
        self.find_among(text, hits.iter())
    }

    /// The patterns of the set, in rule order (as compiled: Go's meaning, `go_syntax`).
    pub(crate) fn patterns(&self) -> &[String] {
        self.set.patterns()
    }

    /// [`SecretRules::find`] given the rules a set pass found somewhere in `text` (`hits`):
    /// only those rules run again, to find where.
    pub(crate) fn find_among(
        &self,
        text: &str,
        hits: impl Iterator<Item = usize>,
    ) -> Vec<SecretMatch> {
        let mut lower: Option<String> = None;
        let mut found = Vec::new();
        for i in hits {
            let Some(rule) = self.rules.get(i) else {
                continue;
            };
            if !rule.keywords.is_empty() {
                let l = lower.get_or_insert_with(|| text.to_lowercase());
                if !rule.keywords.iter().any(|k| l.contains(k.as_str())) {
                    continue;
                }
            }
            for caps in rule.regex.captures_iter(text) {
                let (Some(whole), Some(secret)) = (caps.get(0), caps.get(rule.secret_group)) else {
                    continue;
                };
                if rule.admits(secret.as_str()) {
                    found.push(SecretMatch {
                        rule: i,
                        start: whole.start(),
                        end: whole.end(),
                    });
                }
            }
        }
        found.sort_by_key(|m| (m.start, m.rule));
        let mut kept: Vec<SecretMatch> = Vec::with_capacity(found.len());
        for m in found {
            if kept.last().is_none_or(|k| m.start >= k.end) {
                kept.push(m);
            }
        }
        kept
    }
}

impl SecretRule {
    /// Whether `secret` is a finding of this rule: its entropy reaches the bound and no
    /// allowlist entry covers it.
    fn admits(&self, secret: &str) -> bool {
        if self.entropy.is_some_and(|e| shannon(secret) < e) {
            return false;
        }
        if self.allow_regexes.iter().any(|r| r.is_match(secret)) {
            return false;
        }
        if !self.stopwords.is_empty() {
            let l = secret.to_lowercase();
            if self.stopwords.iter().any(|w| l.contains(w.as_str())) {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(rules: &SecretRules, text: &str) -> Vec<String> {
        rules
            .find(text)
            .iter()
            .map(|m| rules.rule_id(m.rule).to_owned())
            .collect()
    }

    /// Every built-in rule: a true positive found (and only by that rule) and near misses not.
    #[test]
    fn every_builtin_rule_has_true_and_near_miss_positives() {
        let rules = SecretRules::new(Vec::new()).unwrap();
        let a36 = "a".repeat(30) + "B1c2D3";
        let cases: &[(&str, String, &[String])] = &[
            (
                "aws-access-key-id",
                "key AKIAIOSFODNN7EXAMPLE here".into(),
                &[
                    "AKIAIOSFODNN7EXAMPL".into(),   // one short
                    "AKIAIOSFODNN7EXAMPLEX".into(), // one long: no word boundary
                    "AKIBIOSFODNN7EXAMPLE".into(),  // wrong prefix
                    "akiaiosfodnn7example".into(),  // lower case
                ],
            ),
            (
                "github-token",
                format!("token=ghp_{a36}"),
                &[
                    format!("ghp_{}", &a36[1..]),
                    format!("ghx_{a36}"),
                    format!("ghp-{a36}"),
                ],
            ),
            (
                "github-fine-grained-token",
                format!("github_pat_{}", "A".repeat(82)),
                &[format!("github_pat_{}", "A".repeat(81))],
            ),
            (
                "gitlab-token",
                "glpat-abcdefghij0123456789".into(),
                &["glpat-abcdefghij012345678".into(), "glpat_abcdefghij0123456789".into()],
            ),
            (
                "slack-token",
                "xoxb-1234567890-abcdefghijkl".into(),
                &["xoxz-1234567890-abcdefghijkl".into(), "xoxb-123-abcdefghijkl".into()],
            ),
            (
                "slack-webhook-url",
                format!("https://hooks.slack.com/services/{}", "T0A/B0B/".to_owned() + &"x".repeat(36)),
                &["https://hooks.slack.com/services/short".into()],
            ),
            (
                "discord-webhook-url",
                format!("https://discord.com/api/webhooks/123456789012345678/{}", "x".repeat(64)),
                &[format!("https://discord.com/api/webhooks/1234/{}", "x".repeat(64))],
            ),
            (
                "google-api-key",
                format!("AIza{}", "b".repeat(35)),
                &[format!("AIza{}", "b".repeat(34)), format!("AIzb{}", "b".repeat(35))],
            ),
            (
                "stripe-secret-key",
                format!("sk_live_{}", "a1".repeat(12)),
                &[format!("pk_live_{}", "a1".repeat(12)), format!("sk_live_{}", "a".repeat(23))],
            ),
            (
                "openai-api-key",
                format!("sk-proj-{}T3BlbkFJ{}", "a".repeat(20), "b".repeat(20)),
                &[format!("sk-proj-{}", "a".repeat(48))],
            ),
            (
                "anthropic-api-key",
                format!("sk-ant-api03-{}", "x".repeat(90)),
                &[format!("sk-ant-api03-{}", "x".repeat(40)), format!("sk-ant-{}", "x".repeat(95))],
            ),
            (
                "npm-token",
                format!("npm_{}", "Z".repeat(36)),
                &[format!("npm_{}", "Z".repeat(35)), format!("npm_{}", "Z".repeat(37))],
            ),
            (
                "sendgrid-api-key",
                format!("SG.{}.{}", "a".repeat(22), "b".repeat(43)),
                &[format!("SG.{}.{}", "a".repeat(21), "b".repeat(43))],
            ),
            (
                "azure-storage-key",
                format!("AccountKey={}==", "k".repeat(86)),
                &[format!("AccountKey={}==", "k".repeat(85))],
            ),
            (
                "private-key",
                "-----BEGIN RSA PRIVATE KEY-----\nMIIE".into(),
                &[
                    "-----BEGIN PUBLIC KEY-----".into(),
                    "-----BEGIN CERTIFICATE-----".into(),
                    "BEGIN RSA PRIVATE KEY".into(),
                ],
            ),
            (
                "jwt",
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U".into(),
                &[
                    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0".into(),
                    "eyJhbGciOiJIUzI1NiJ9.abcdefghijklmnop.dozjgNryP4J3jVmNHl0w".into(),
                ],
            ),
            (
                "connection-string-password",
                "postgres://admin:s3cr3t@db.internal:5432/app".into(),
                &[
                    "postgres://admin@db.internal/app".into(),
                    "postgres://admin:@db.internal/app".into(),
                    "https://user:pass@example.com/".into(),
                ],
            ),
        ];
        assert_eq!(cases.len(), BUILTIN.len(), "every built-in rule is tested");
        for (rule, positive, misses) in cases {
            assert_eq!(ids(&rules, positive), vec![rule.to_string()], "{positive}");
            for miss in *misses {
                assert_eq!(ids(&rules, miss), Vec::<String>::new(), "{rule}: {miss}");
            }
        }
    }

    #[test]
    fn matches_are_positions_in_order_without_overlap() {
        let rules = SecretRules::new(Vec::new()).unwrap();
        let text = "a AKIAIOSFODNN7EXAMPLE b AKIAIOSFODNN7EXAMPLF";
        let m = rules.find(text);
        assert_eq!(m.len(), 2);
        assert_eq!(&text[m[0].start..m[0].end], "AKIAIOSFODNN7EXAMPLE");
        assert_eq!(&text[m[1].start..m[1].end], "AKIAIOSFODNN7EXAMPLF");
        assert!(rules.find("nothing to see").is_empty());
    }

    #[test]
    fn entropy_is_shannon_bits_per_character() {
        assert_eq!(shannon(""), 0.0);
        assert_eq!(shannon("aaaa"), 0.0);
        assert!((shannon("ab") - 1.0).abs() < 1e-9);
        assert!((shannon("abcd") - 2.0).abs() < 1e-9);
    }

    /// The entropy's logarithm (`libm`, in Rust) agrees with the platform's `log2` to within
    /// rounding on every probability a secret of up to 256 characters can give, so a rule's
    /// bound judges as it did.
    #[test]
    fn entropy_logarithm_agrees_with_the_platform() {
        for n in 1..=256u32 {
            for c in 1..=n {
                let p = f64::from(c) / f64::from(n);
                let (ours, platform) = (libm::log2(p), p.log2());
                assert!((ours - platform).abs() <= 2.0 * f64::EPSILON * platform.abs().max(1.0));
            }
        }
    }
}
