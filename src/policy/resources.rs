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
//! A URI is read in one of two ways, by its scheme (RFC 3986: a letter, then letters, digits,
//! `+`, `-`, `.`, then `:`):
//! - `file:` (any case): normalized exactly as `within` does ([`super::within::resolve_as`], one
//!   function for both): control characters raw or percent-decoded, a non-empty authority, a
//!   query or fragment, a malformed escape, a relative path, a backslash or a `..` above the root
//!   make the URI unreadable; otherwise it is matched as `file://` + the normalized path.
//! - any other scheme: matched as written, after the same control-character rule.
//!
//! A URI with no scheme, or one that cannot be read, is refused with
//! [`ReasonCode::P_RESOURCE_NOT_ALLOWED`] and a reason naming the problem, whatever the
//! patterns say: it is never allowed. Patterns are globs ([`super::uri_glob`]); a pattern whose
//! scheme is `file:` is normalized the same way at load (a `?` in it stays a wildcard), and one
//! that cannot be is a load error.
//!
//! Order: the URI cannot be read → not allowed; a `deny` pattern matches →
//! [`ReasonCode::P_RESOURCE_DENIED`]; an `allow` list exists and no pattern matches →
//! [`ReasonCode::P_RESOURCE_NOT_ALLOWED`]; otherwise [`ReasonCode::P_POLICY_ALLOW`].

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
        if let Some(rule) = self.deny.iter().find(|r| r.glob.matches(&normalized)) {
            return verdict(
                Decision::Deny,
                ReasonCode::P_RESOURCE_DENIED,
                format!(
                    "resource matches deny rule `{}`",
                    rule.written.escape_debug()
                ),
                Some(&rule.label),
            );
        }
        match &self.allow {
            None => verdict(
                Decision::Allow,
                ReasonCode::P_POLICY_ALLOW,
                "no resources.deny rule matched and resources has no allow list".to_owned(),
                None,
            ),
            Some(allow) => match allow.iter().find(|r| r.glob.matches(&normalized)) {
                Some(rule) => verdict(
                    Decision::Allow,
                    ReasonCode::P_POLICY_ALLOW,
                    format!("resource allowed by rule `{}`", rule.written.escape_debug()),
                    Some(&rule.label),
                ),
                None => verdict(
                    Decision::Deny,
                    ReasonCode::P_RESOURCE_NOT_ALLOWED,
                    "resource matches no resources.allow rule".to_owned(),
                    None,
                ),
            },
        }
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
