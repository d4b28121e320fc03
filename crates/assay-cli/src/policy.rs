//! `assay policy check FILE` (SPEC §10): loads the policy exactly as `mcp wrap` does, spawning
//! nothing, and prints the library's [`PolicySummary`] for people (text) or programs (JSON).
//! An invalid policy is exit 2 with the message `mcp wrap` prints for the same file.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use assay::config::load_policy;
use assay::policy::summary::{PatternsSummary, PolicySummary};
use assay::text;

use super::args::PolicyFormat;
use super::exit;
use super::messages::Failure;

/// Checks `file`; prints the summary on stdout. The status says whether the policy is valid,
/// so a summary that cannot be printed (stdout gone) still ends with 0.
pub(crate) fn check(file: &Path, format: PolicyFormat) -> Result<ExitCode, Failure> {
    let summary = load_policy(file).map_err(Failure::library)?.summary();
    let text = match format {
        PolicyFormat::Json => {
            let mut t = serde_json::to_string_pretty(&summary).unwrap_or_default();
            t.push('\n');
            t
        }
        PolicyFormat::Text => render(file, &summary),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(Failure::output(exit::OK))?;
    Ok(exit::code(exit::OK))
}

/// Patterns as a comma-separated list, each rendered for people ([`assay::text::render`],
/// SPEC §10: a name cannot forge a line or a terminal sequence).
fn list(items: &[String]) -> String {
    items
        .iter()
        .map(|s| text::render(s))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The summary for people: one line per rule kind, in the order rules apply (SPEC §5).
fn render(file: &Path, s: &PolicySummary) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "policy {}: valid (name {}, sha256 {})",
        text::render(&file.display().to_string()),
        text::render(&s.name),
        s.sha256
    );
    let _ = writeln!(
        t,
        "deny: {}",
        if s.deny.is_empty() {
            "no tool".to_owned()
        } else {
            list(&s.deny)
        }
    );
    let _ = writeln!(
        t,
        "allow: {}",
        match &s.allow {
            None => "every tool not denied (no allow list)".to_owned(),
            Some(a) if a.is_empty() => "no tool (the allow list is empty)".to_owned(),
            Some(a) => list(a),
        }
    );
    if s.constraints.is_empty() {
        let _ = writeln!(t, "constraints: none");
    } else {
        let _ = writeln!(t, "constraints:");
        for c in &s.constraints {
            let rules: Vec<String> = c
                .params
                .iter()
                .map(|p| {
                    let mut parts = Vec::new();
                    if let Some(w) = &p.within {
                        parts.push(format!("within {}", list(w)));
                    }
                    if let Some(m) = &p.matches {
                        parts.push(format!("matches {}", text::render(m)));
                    }
                    format!("{} {}", text::render(&p.name), parts.join(" and "))
                })
                .collect();
            let rules = if rules.is_empty() {
                "no argument rule".to_owned()
            } else {
                rules.join("; ")
            };
            let _ = writeln!(t, "  {}: {rules}", text::render(&c.tool));
        }
    }
    let tools: Vec<String> = s.schemas.keys().cloned().collect();
    let _ = writeln!(
        t,
        "schemas: {}",
        if tools.is_empty() {
            "none".to_owned()
        } else {
            list(&tools)
        }
    );
    let _ = writeln!(t, "hide_refused_tools: {}", s.hide_refused_tools);
    match &s.pins {
        None => {
            let _ = writeln!(t, "pins: none");
        }
        Some(p) => {
            let _ = writeln!(
                t,
                "pins: {} (sha256 {}): {} tool(s); unpinned and drifted tools are removed from listings and refused",
                text::render(&p.path),
                p.sha256,
                p.tools.len()
            );
            for (name, digest) in &p.tools {
                let _ = writeln!(t, "  {} {}", text::render(name), &digest[..12]);
            }
        }
    }
    sections(&mut t, s);
    t
}

/// `N pattern(s) (a, b)`.
fn counted(items: &[String]) -> String {
    let noun = if items.len() == 1 {
        "pattern"
    } else {
        "patterns"
    };
    format!("{} {noun} ({})", items.len(), list(items))
}

/// One line for `resources` or `prompts` (SPEC §5.2): what is governed, in words.
fn patterns_line(t: &mut String, section: &str, what: &str, p: Option<&PatternsSummary>) {
    let Some(p) = p else {
        let _ = writeln!(t, "{section}: not governed ({})", unjudged(section));
        return;
    };
    let allow = match &p.allow {
        None => format!("every {what} not denied (no allow list)"),
        Some(a) if a.is_empty() => format!("no {what} (the allow list is empty)"),
        Some(a) => counted(a),
    };
    let deny = if p.deny.is_empty() {
        "none".to_owned()
    } else {
        counted(&p.deny)
    };
    let _ = writeln!(t, "{section}: allow {allow}; deny {deny}");
}

/// What a policy without `section` leaves unjudged, in words: the methods the one method table
/// (`assay::methods`, docs/methods.md) says it governs.
fn unjudged(section: &str) -> String {
    use assay::methods::{Governor as G, METHODS};
    let names: Vec<&str> = METHODS
        .iter()
        .filter(|m| match section {
            "resources" => matches!(
                m.governor,
                G::Resources | G::ResourcesListing | G::PromptsOrResources
            ),
            "prompts" => matches!(
                m.governor,
                G::Prompts | G::PromptsListing | G::PromptsOrResources
            ),
            _ => m.governor == G::ClientFeatures,
        })
        .map(|m| m.name)
        .collect();
    format!("{} pass unjudged", names.join(", "))
}

/// The SPEC §5.2 sections, one line each; an absent section is said to be not governed.
fn sections(t: &mut String, s: &PolicySummary) {
    patterns_line(t, "resources", "URI", s.resources.as_ref());
    patterns_line(t, "prompts", "prompt", s.prompts.as_ref());
    let features = match &s.client_features {
        None => format!("not governed ({})", unjudged("client_features")),
        Some(named) => ["sampling", "elicitation", "roots"]
            .iter()
            .map(|f| match named.get(*f) {
                Some(rule) => format!("{f} {}", text::render(rule)),
                None => format!("{f} not governed"),
            })
            .collect::<Vec<_>>()
            .join(", "),
    };
    let _ = writeln!(t, "client_features: {features}");
    let limits = match &s.limits {
        None => "none".to_owned(),
        Some(l) => {
            let mut parts = Vec::new();
            if let Some(n) = l.tool_calls {
                parts.push(format!("tool_calls {n}"));
            }
            for (tool, n) in &l.per_tool {
                parts.push(format!("per_tool {} {n}", text::render(tool)));
            }
            if let Some(n) = l.repeated_call {
                parts.push(format!("repeated_call {n}"));
            }
            parts.join(", ")
        }
    };
    let _ = writeln!(t, "limits: {limits}");
    let record = match (s.record_arguments, s.redact.is_empty()) {
        (false, true) => "off".to_owned(),
        (false, false) => format!("off (redact {} take effect when it is on)", list(&s.redact)),
        (true, true) => "on, nothing redacted".to_owned(),
        (true, false) => format!("on, redact {}", list(&s.redact)),
    };
    let _ = writeln!(t, "record_arguments: {record}");
}
