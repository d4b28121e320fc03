//! The `resources` section (SPEC §5.2): which resource URIs `resources/read` and
//! `resources/subscribe` may name, and which entries `resources/list` and
//! `resources/templates/list` keep under `hide_refused_tools`.
//!
//! ```yaml
//! resources:
//!   allow: ["file:///workspace/**", "test://static/resource/*"]
//!   deny: ["file:///workspace/.env"]
//! ```
//!
//! A URI is judged in every way a server may read it (docs/decisions.md, "Every reading of a
//! resource URI"), each a [`Reading`]:
//! - **as written**;
//! - **as the server's URL parser reads it**: its WHATWG URL serialization (the `url` crate),
//!   what Node's `new URL(uri).toString()` gives and the TypeScript SDK's `McpServer` looks a
//!   resource up by (leading and trailing C0-or-space stripped, tab and newline removed, the
//!   scheme and special hosts lowercased, the host percent-decoded and IDNA-mapped, default ports
//!   dropped, `\` read as `/` in special schemes, `.` and `..` segments resolved). A URI the
//!   parser refuses has no such reading: a TypeScript server cannot look it up either;
//! - **percent-decoded**: every `%XX` decoded once, as the Python SDK 2.x template matcher reads
//!   a variable (`%31` is `1`); a result that is not UTF-8 or holds a control character is
//!   unreadable;
//! - the two in either order (the WHATWG form percent-decoded, the percent-decoded form parsed).
//!
//! Each reading is then read by its scheme (RFC 3986: a letter, then letters, digits, `+`, `-`,
//! `.`, then `:`):
//! - `file:` (any case): normalized exactly as `within` does ([`super::within::resolve_as`], one
//!   function for both): control characters raw or percent-decoded, a non-empty authority, a
//!   query or fragment, a malformed escape, a relative path, a backslash or a `..` above the root
//!   make the reading unreadable; otherwise it is matched as `file://` + the normalized path.
//!   `within` already decodes every escape once, so a `file:` URI has no separate
//!   percent-decoded readings (decoding twice is a reading no server makes).
//! - any other scheme: matched as it reads, after the same control-character rule (raw only
//!   for a percent-decoded reading, whose `%XX` are literal text).
//!
//! A URI with no scheme, or one that cannot be read as written, is refused with
//! [`ReasonCode::P_RESOURCE_NOT_ALLOWED`] and a reason naming the problem, whatever the
//! patterns say: it is never allowed. Patterns are globs ([`super::uri_glob`]); a pattern whose
//! scheme is `file:` is normalized the same way at load (a `?` in it stays a wildcard), and one
//! that cannot be is a load error. Patterns are otherwise matched as written: write them in the
//! form the server's URL parser gives (`test://…`, not `TEST://…`).
//!
//! Order: the URI cannot be read as written → not allowed; a `deny` pattern matches some
//! reading → [`ReasonCode::P_RESOURCE_DENIED`]; some reading is unreadable, or an `allow` list
//! exists and matches no pattern for some reading → [`ReasonCode::P_RESOURCE_NOT_ALLOWED`];
//! otherwise [`ReasonCode::P_POLICY_ALLOW`]. A reason that is not about the URI as written
//! names the reading and its text.

use std::borrow::Cow;

use serde_json::Value;

use super::decision::{Decision, ReasonCode, Verdict};
use super::error::{Ctx, PolicyError};
use super::uri_glob::UriGlob;
use super::within::{self, Form};

const KEYS: &[&str] = &["allow", "deny"];

/// One compiled pattern with its rule label (`resources.deny:…`) and its text as written.
struct Rule {
    glob: UriGlob,
    written: String,
    label: String,
}

/// The compiled `resources` section.
pub(crate) struct Resources {
    allow: Option<Vec<Rule>>,
    deny: Vec<Rule>,
}

/// The scheme of `uri` (RFC 3986 `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"`), without
/// the colon.
fn scheme(uri: &str) -> Option<&str> {
    let (scheme, _) = uri.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

/// The form of `uri` that patterns are matched against, or why it has none.
fn normalize(uri: &str, form: Form) -> Result<Cow<'_, str>, &'static str> {
    match scheme(uri) {
        Some(s) if s.eq_ignore_ascii_case("file") => {
            let rest = uri.get(s.len() + 1..).unwrap_or("");
            if !rest.starts_with("//") {
                return Err("is a file URI without an empty authority (use file:///…)");
            }
            let path = within::resolve_as(&format!("file:{rest}"), form)?;
            Ok(Cow::Owned(format!("file://{path}")))
        }
        Some(_) => match within::control_problem(uri) {
            Some(problem) => Err(problem),
            None => Ok(Cow::Borrowed(uri)),
        },
        None => Err("has no scheme (a URI starts with a scheme such as file: or https:)"),
    }
}

/// The normalized form of a resource URI (what patterns are matched against), or why the URI
/// is refused. For the property tests and the listing filter.
pub(crate) fn normalize_uri(uri: &str) -> Result<Cow<'_, str>, &'static str> {
    normalize(uri, Form::Value)
}

/// One way a server may read a resource URI (SPEC §5.2; docs/decisions.md, "Every reading of a
/// resource URI").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    /// The URI as the client wrote it.
    Written,
    /// Its WHATWG URL serialization (Node's `new URL(uri).toString()`).
    Whatwg,
    /// Every `%XX` decoded once (the Python SDK 2.x template matcher).
    Decoded,
    /// The WHATWG serialization, then percent-decoded.
    WhatwgDecoded,
    /// Percent-decoded, then its WHATWG serialization.
    DecodedWhatwg,
}

impl Reading {
    /// How a reason names the reading.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Reading::Written => "as written",
            Reading::Whatwg => "as the server's URL parser reads it (WHATWG)",
            Reading::Decoded => "percent-decoded",
            Reading::WhatwgDecoded => {
                "as the server's URL parser reads it (WHATWG), then percent-decoded"
            }
            Reading::DecodedWhatwg => {
                "percent-decoded, then as the server's URL parser reads it (WHATWG)"
            }
        }
    }

    /// Whether the reading ends percent-decoded (its `%XX` are literal text).
    fn decoded(self) -> bool {
        matches!(self, Reading::Decoded | Reading::WhatwgDecoded)
    }
}

/// The WHATWG URL serialization of `uri` (what Node's `new URL(uri).toString()` gives), or
/// `None` when the URL parser refuses it.
fn whatwg(uri: &str) -> Option<String> {
    url::Url::parse(uri).ok().map(String::from)
}

/// `s` with every `%XX` decoded once (a `%` not followed by two hex digits stays), or why the
/// result cannot be read: not UTF-8, or holding a control character.
fn percent_decoded(s: &str) -> Result<Cow<'_, str>, &'static str> {
    let b = s.as_bytes();
    if memchr::memchr(b'%', b).is_none() {
        return Ok(Cow::Borrowed(s));
    }
    let hex = |c: u8| char::from(c).to_digit(16);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let escape = match (c, b.get(i + 1), b.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) => hex(h).zip(hex(l)),
            _ => None,
        };
        match escape {
            // Two hex digits: at most 0xff.
            Some((h, l)) => {
                out.push(u8::try_from(h * 16 + l).unwrap_or(u8::MAX));
                i += 3;
            }
            None => {
                out.push(c);
                i += 1;
            }
        }
    }
    let decoded = String::from_utf8(out).map_err(|_| "is not UTF-8 once percent-decoded")?;
    if within::has_control(&decoded) {
        return Err("contains a control character once percent-decoded");
    }
    Ok(Cow::Owned(decoded))
}

/// The form of `text` (one reading of a URI) that patterns are matched against, or why it has
/// none.
fn judged_form(text: &str, reading: Reading) -> Result<Cow<'_, str>, &'static str> {
    if reading.decoded() {
        // Only non-`file:` URIs have decoded readings; their `%XX` are literal text now.
        if within::has_control(text) {
            return Err("contains a control character");
        }
        return Ok(Cow::Borrowed(text));
    }
    normalize(text, Form::Value)
}

/// Every reading of `uri` other than as written, each with the text patterns are matched
/// against or why it cannot be read; readings equal to an earlier one are left out, and so is
/// a WHATWG reading the URL parser refuses. `uri` must be readable as written.
fn other_readings(uri: &str, written: &str) -> Vec<(Reading, Result<String, &'static str>)> {
    let mut out: Vec<(Reading, Result<String, &'static str>)> = Vec::new();
    let mut push = |reading: Reading, form: Result<Cow<'_, str>, &'static str>| {
        let form = form.map(Cow::into_owned);
        let seen = match &form {
            Ok(f) => f == written || out.iter().any(|(_, o)| o.as_ref() == Ok(f)),
            Err(_) => false,
        };
        if !seen {
            out.push((reading, form));
        }
    };
    let file = scheme(uri).is_some_and(|s| s.eq_ignore_ascii_case("file"));
    let parsed = whatwg(uri);
    if let Some(w) = &parsed {
        push(Reading::Whatwg, judged_form(w, Reading::Whatwg));
    }
    if file {
        // `within` reads every escape of a `file:` URI once already.
        return out;
    }
    let decoded = percent_decoded(uri);
    match &decoded {
        Ok(d) => push(Reading::Decoded, judged_form(d, Reading::Decoded)),
        Err(problem) => push(Reading::Decoded, Err(*problem)),
    }
    if let Some(w) = &parsed {
        match percent_decoded(w) {
            Ok(wd) => push(
                Reading::WhatwgDecoded,
                judged_form(&wd, Reading::WhatwgDecoded),
            ),
            Err(problem) => push(Reading::WhatwgDecoded, Err(problem)),
        }
    }
    if let Some(dw) = decoded.ok().as_deref().and_then(whatwg) {
        push(
            Reading::DecodedWhatwg,
            judged_form(&dw, Reading::DecodedWhatwg),
        );
    }
    out
}

/// Every reading of `uri` with the text patterns are matched against, or why it cannot be
/// read: as written first. For the tests and for literal patterns (`assay policy suggest`).
pub(crate) fn readings(uri: &str) -> Vec<(Reading, Result<String, &'static str>)> {
    let written = normalize_uri(uri).map(Cow::into_owned);
    let mut all = Vec::new();
    if let Ok(w) = &written {
        all = other_readings(uri, w);
    }
    all.insert(0, (Reading::Written, written));
    all
}

/// Why `pattern` cannot be a `resources` pattern (the load rule), or `None`.
pub(crate) fn pattern_problem(pattern: &str) -> Option<&'static str> {
    if pattern.is_empty() {
        return Some("is empty");
    }
    match scheme(pattern) {
        Some(_) => normalize(pattern, Form::Pattern).err(),
        None => within::control_problem(pattern),
    }
}

fn verdict(
    decision: Decision,
    reason_code: ReasonCode,
    reason: String,
    rule: Option<&str>,
) -> Verdict {
    Verdict {
        decision,
        reason_code,
        reason,
        matched_rule: rule.map(str::to_owned),
    }
}

/// Every reading must be allowed by a rule of `allow`; the verdict names the rule that allows
/// the first reading, as written.
fn allowed<'a>(allow: &[Rule], readable: impl Iterator<Item = (Reading, &'a str)>) -> Verdict {
    let mut allowed_by = None;
    for (reading, form) in readable {
        match allow.iter().find(|r| r.glob.matches(form)) {
            Some(rule) => {
                allowed_by.get_or_insert(rule);
            }
            None => {
                let reason = match reading {
                    Reading::Written => "resource matches no resources.allow rule".to_owned(),
                    other => format!(
                        "resource matches no resources.allow rule {}: `{}`",
                        other.describe(),
                        form.escape_debug()
                    ),
                };
                return verdict(
                    Decision::Deny,
                    ReasonCode::P_RESOURCE_NOT_ALLOWED,
                    reason,
                    None,
                );
            }
        }
    }
    match allowed_by {
        Some(rule) => verdict(
            Decision::Allow,
            ReasonCode::P_POLICY_ALLOW,
            format!("resource allowed by rule `{}`", rule.written.escape_debug()),
            Some(&rule.label),
        ),
        // Unreachable: the reading as written is always judged.
        None => verdict(
            Decision::Deny,
            ReasonCode::P_RESOURCE_NOT_ALLOWED,
            "resource matches no resources.allow rule".to_owned(),
            None,
        ),
    }
}

impl Resources {
    /// Compiles the section (`v` is the value of `resources`).
    pub(crate) fn parse(ctx: &Ctx<'_>, v: &Value) -> Result<Resources, PolicyError> {
        let obj = ctx.object(v, "resources", "a mapping with keys allow and deny")?;
        ctx.check_keys(obj, "resources", KEYS)?;
        let list = |kind: &str| -> Result<Option<Vec<Rule>>, PolicyError> {
            let key = format!("resources.{kind}");
            let Some(v) = obj.get(kind) else {
                return Ok(None);
            };
            let items = ctx.array(v, &key, "a list of resource URI patterns")?;
            let mut rules = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let item_key = format!("{key}[{i}]");
                let written = ctx.string(item, &item_key)?;
                if written.is_empty() {
                    return Err(ctx.invalid(
                        &item_key,
                        "is an empty pattern; name a URI or use `**` for every URI",
                    ));
                }
                let normalized = match scheme(written) {
                    Some(_) => normalize(written, Form::Pattern).map_err(|problem| {
                        ctx.invalid(
                            &item_key,
                            &format!("{problem}; write the pattern as a normalized URI"),
                        )
                    })?,
                    // A pattern may start with a wildcard (`**`): only the control rule applies.
                    None => match within::control_problem(written) {
                        Some(problem) => {
                            return Err(ctx.invalid(
                                &item_key,
                                &format!("{problem}; remove it from the pattern"),
                            ));
                        }
                        None => Cow::Borrowed(written),
                    },
                };
                rules.push(Rule {
                    glob: UriGlob::new(&normalized),
                    written: written.to_owned(),
                    label: format!("{key}:{written}"),
                });
            }
            Ok(Some(rules))
        };
        Ok(Resources {
            allow: list("allow")?,
            deny: list("deny")?.unwrap_or_default(),
        })
    }

    /// The patterns as written: `(allow, deny)`, `allow` `None` when absent.
    pub(crate) fn patterns(&self) -> (Option<Vec<String>>, Vec<String>) {
        let written = |rules: &[Rule]| rules.iter().map(|r| r.written.clone()).collect();
        (self.allow.as_deref().map(written), written(&self.deny))
    }

    /// Judges a `resources/read` or `resources/subscribe` of `uri` (SPEC §5.2).
    pub(crate) fn evaluate(&self, uri: Option<&str>) -> Verdict {
        let Some(uri) = uri else {
            return verdict(
                Decision::Error,
                ReasonCode::P_MALFORMED,
                "the request has no string params.uri".to_owned(),
                None,
            );
        };
        let normalized = match normalize_uri(uri) {
            Ok(n) => n,
            Err(problem) => {
                return verdict(
                    Decision::Deny,
                    ReasonCode::P_RESOURCE_NOT_ALLOWED,
                    format!("the resource URI {problem}"),
                    None,
                );
            }
        };
        let others = other_readings(uri, &normalized);
        // A deny pattern matching any reading decides first.
        let readable = std::iter::once((Reading::Written, normalized.as_ref())).chain(
            others
                .iter()
                .filter_map(|(r, f)| Some((*r, f.as_deref().ok()?))),
        );
        if let Some(denied) = self.denied(readable.clone()) {
            return denied;
        }
        // Then a reading that cannot be read.
        if let Some((reading, Err(problem))) = others.iter().find(|(_, f)| f.is_err()) {
            return verdict(
                Decision::Deny,
                ReasonCode::P_RESOURCE_NOT_ALLOWED,
                format!("the resource URI {}: it {problem}", reading.describe()),
                None,
            );
        }
        let Some(allow) = &self.allow else {
            return verdict(
                Decision::Allow,
                ReasonCode::P_POLICY_ALLOW,
                "no resources.deny rule matched and resources has no allow list".to_owned(),
                None,
            );
        };
        allowed(allow, readable)
    }

    /// The verdict of the first deny rule that matches a reading, in order, if one does.
    fn denied<'a>(&self, readable: impl Iterator<Item = (Reading, &'a str)>) -> Option<Verdict> {
        for (reading, form) in readable {
            if let Some(rule) = self.deny.iter().find(|r| r.glob.matches(form)) {
                let written = rule.written.escape_debug();
                let reason = match reading {
                    Reading::Written => format!("resource matches deny rule `{written}`"),
                    other => format!(
                        "resource matches deny rule `{written}` {}: `{}`",
                        other.describe(),
                        form.escape_debug()
                    ),
                };
                return Some(verdict(
                    Decision::Deny,
                    ReasonCode::P_RESOURCE_DENIED,
                    reason,
                    Some(&rule.label),
                ));
            }
        }
        None
    }

    /// The reason code when every read of `uri` is refused (it always is: a resource's URI is
    /// all there is to judge), `None` when it is allowed.
    pub(crate) fn refuses(&self, uri: &str) -> Option<ReasonCode> {
        let v = self.evaluate(Some(uri));
        (v.decision != Decision::Allow).then_some(v.reason_code)
    }

    /// Whether every URI `template` (RFC 6570) can expand to is refused. Judged on the literal
    /// text before the first `{` (the whole template when it has none), conservatively: a
    /// template is refused only when refusal is certain.
    ///
    /// - No `{`: the template is one URI, judged as [`Resources::refuses`].
    /// - A control character anywhere in the template (raw or percent-encoded), or a prefix that
    ///   cannot begin a scheme: refused as unreadable ([`ReasonCode::P_RESOURCE_NOT_ALLOWED`]).
    /// - A `file:` template: an expansion may hold `..` (percent-encoded or not), which reaches
    ///   any path once normalized, so the prefix is taken as `file:///`: refused when a deny
    ///   pattern matches every `file:///…` URI, or an allow list exists and no pattern can match
    ///   any `file:///…` URI.
    /// - Other schemes: refused when a deny pattern matches every URI that starts with the
    ///   prefix, or an allow list exists and no pattern can match any URI that starts with it.
    pub(crate) fn refuses_template(&self, template: &str) -> Option<ReasonCode> {
        let Some(brace) = template.find('{') else {
            return self.refuses(template);
        };
        // Literal text is copied into every expansion: a control character anywhere in the
        // template is in every URI it can expand to.
        if within::control_problem(template).is_some() {
            return Some(ReasonCode::P_RESOURCE_NOT_ALLOWED);
        }
        let prefix = template.get(..brace).unwrap_or("");
        let prefix = match scheme(prefix) {
            Some(s) if s.eq_ignore_ascii_case("file") => "file:///",
            Some(_) => prefix,
            None => {
                // The scheme may be (partly) a variable: nothing is certain unless the
                // template starts with a character no scheme can start with.
                let mut chars = prefix.chars();
                let starts_like_a_scheme = chars.next().is_none_or(|c| c.is_ascii_alphabetic())
                    && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
                return (!starts_like_a_scheme).then_some(ReasonCode::P_RESOURCE_NOT_ALLOWED);
            }
        };
        if self
            .deny
            .iter()
            .any(|r| r.glob.matches_every_extension(prefix))
        {
            return Some(ReasonCode::P_RESOURCE_DENIED);
        }
        match &self.allow {
            Some(allow) if !allow.iter().any(|r| r.glob.matches_some_extension(prefix)) => {
                Some(ReasonCode::P_RESOURCE_NOT_ALLOWED)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
