//! Extra secret rules in gitleaks' TOML format (SPEC §5.3 `results.secret_rules`): the format
//! users already maintain for their repositories. Read strictly: a key gitleaks does not define is
//! a load error, and so is a rule without a `regex` (a `path`-only rule judges file names, and an
//! answer has none). Each rule's regex is compiled once with the `regex` crate (RE2 syntax, as
//! gitleaks' Go `regexp`), with Go's ASCII meaning of `\d \w \s \b` (`go_syntax`).
//!
//! What is used of a rule: `id`, `regex`, `secretGroup`, `entropy`, `keywords`, and its allowlists
//! (`[rules.allowlist]` and `[[rules.allowlists]]`: `regexes` and `stopwords`). The file's global
//! `[allowlist]` `regexes` and `stopwords` apply to every rule of the file. `description`,
//! `tags`, `title`, `[extend]`, and an allowlist's `paths`, `commits`, `regexTarget` and
//! `condition` are accepted and have no effect (there are no paths or commits in an answer; the
//! built-in rules always apply).

use regex::Regex;
use serde::Deserialize;

use super::secrets::SecretRule;

/// The largest gitleaks file read (gitleaks' own default file is about 100 KiB).
pub(crate) const MAX_RULES_BYTES: u64 = 1024 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    #[allow(dead_code)]
    title: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    extend: Option<toml::Table>,
    #[serde(default)]
    allowlist: Option<Allowlist>,
    #[serde(default)]
    rules: Vec<Rule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Rule {
    id: String,
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default)]
    regex: Option<String>,
    #[serde(default)]
    secret_group: Option<usize>,
    #[serde(default)]
    entropy: Option<f64>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    #[allow(dead_code)]
    tags: Vec<String>,
    #[serde(default)]
    #[allow(dead_code)]
    path: Option<String>,
    #[serde(default)]
    allowlist: Option<Allowlist>,
    #[serde(default)]
    allowlists: Vec<Allowlist>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Allowlist {
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    stopwords: Vec<String>,
    #[serde(default)]
    #[allow(dead_code)]
    paths: Vec<String>,
    #[serde(default)]
    #[allow(dead_code)]
    commits: Vec<String>,
    #[serde(default)]
    #[allow(dead_code)]
    regex_target: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    condition: Option<String>,
}

/// Reads the rules of a gitleaks TOML text; the error says what is wrong (the caller names the
/// file and the policy key).
pub(crate) fn parse(text: &str) -> Result<Vec<SecretRule>, String> {
    let file: File = toml::from_str(text).map_err(|e| {
        format!(
            "is not a gitleaks TOML file: {}",
            e.message().replace('\n', " ")
        )
    })?;
    let global = file.allowlist.unwrap_or_default();
    let mut rules = Vec::with_capacity(file.rules.len());
    let mut seen = std::collections::HashSet::new();
    for (i, r) in file.rules.into_iter().enumerate() {
        let at = format!("rule {} (`{}`)", i + 1, r.id.escape_debug());
        if r.id.is_empty() {
            return Err(format!(
                "rule {} has an empty id; give every rule an id",
                i + 1
            ));
        }
        if !seen.insert(r.id.clone()) {
            return Err(format!(
                "{at}: the id is used twice; give each rule its own id"
            ));
        }
        let Some(src) = r.regex.as_deref() else {
            return Err(format!(
                "{at} has no regex; a path-only rule cannot judge an answer, remove it"
            ));
        };
        let regex = go_regex(src).map_err(|e| format!("{at}: the regex does not compile: {e}"))?;
        let secret_group = r.secret_group.unwrap_or(0);
        if secret_group >= regex.captures_len() {
            return Err(format!(
                "{at}: secretGroup {secret_group} is not a group of the regex"
            ));
        }
        if r.entropy.is_some_and(|e| !e.is_finite() || e < 0.0) {
            return Err(format!("{at}: entropy must be a non-negative number"));
        }
        let mut allow_regexes = Vec::new();
        let mut stopwords = Vec::new();
        for a in r.allowlist.iter().chain(&r.allowlists).chain([&global]) {
            for re in &a.regexes {
                allow_regexes.push(
                    go_regex(re)
                        .map_err(|e| format!("{at}: an allowlist regex does not compile: {e}"))?,
                );
            }
            stopwords.extend(a.stopwords.iter().map(|w| w.to_lowercase()));
        }
        rules.push(SecretRule {
            id: r.id,
            regex,
            secret_group,
            keywords: r.keywords.iter().map(|k| k.to_lowercase()).collect(),
            entropy: r.entropy,
            allow_regexes,
            stopwords,
        });
    }
    Ok(rules)
}

/// A regex of the file (Go RE2 syntax), compiled with Go's meaning (`go_syntax`); the error on
/// one line.
fn go_regex(src: &str) -> Result<Regex, String> {
    let one_line = |e: String| e.replace('\n', " ");
    let rust = super::go_syntax::to_rust(src).map_err(one_line)?;
    Regex::new(&rust).map_err(|e| one_line(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::super::secrets::SecretRules;
    use super::*;

    const FILE: &str = r#"
title = "team rules"
[extend]
useDefault = true

[allowlist]
stopwords = ["example"]

[[rules]]
id = "acme-token"
description = "ACME API token"
regex = '''acme_(?:live|test)_([a-z0-9]{16})'''
secretGroup = 1
keywords = ["ACME_"]
tags = ["acme"]
[rules.allowlist]
regexes = ['''^0{16}$''']

[[rules]]
id = "high-entropy-hex"
regex = '''\bhx([0-9a-f]{12})\b'''
secretGroup = 1
entropy = 3.0
"#;

    #[test]
    fn reads_rules_keywords_groups_entropy_and_allowlists() {
        let extra = parse(FILE).unwrap();
        assert_eq!(extra.len(), 2);
        let rules = SecretRules::new(extra).unwrap();
        let found = |t: &str| -> Vec<String> {
            rules
                .find(t)
                .iter()
                .map(|m| rules.rule_id(m.rule).to_owned())
                .collect()
        };
        assert_eq!(found("x acme_live_0123456789abcdef y"), ["acme-token"]);
        // allowlisted secret, stopword, low entropy
        assert!(found("acme_live_0000000000000000").is_empty());
        assert!(found("acme_live_example123456789").is_empty());
        assert_eq!(found("hx0123456789ab"), ["high-entropy-hex"]);
        assert!(found("hx000000000000").is_empty());
    }

    #[test]
    fn refuses_what_it_cannot_apply() {
        for (text, says) in [
            (
                "[[rules]]\nid = \"a\"\npath = '''\\.env'''\n",
                "has no regex",
            ),
            (
                "[[rules]]\nid = \"a\"\nregex = '''('''\n",
                "does not compile",
            ),
            (
                "[[rules]]\nid = \"a\"\nregex = 'x'\nsecretGroup = 2\n",
                "secretGroup 2",
            ),
            (
                "[[rules]]\nid = \"a\"\nregex = 'x'\nbogus = 1\n",
                "not a gitleaks TOML file",
            ),
            (
                "[[rules]]\nid = \"a\"\nregex = 'x'\n[[rules]]\nid = \"a\"\nregex = 'y'\n",
                "used twice",
            ),
            ("rules = 3", "not a gitleaks TOML file"),
        ] {
            let e = parse(text).err().unwrap_or_default();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
