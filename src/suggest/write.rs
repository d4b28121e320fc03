//! The suggested policy as YAML in the project's own format (SPEC §5, §5.2): every rule with its
//! evidence as a comment, every name quoted as a JSON string (a YAML double-quoted scalar), every
//! peer-written name in a comment rendered ([`crate::text::render`]) so it stays on its line.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::observe::{Evidence, Seen};
use crate::policy::{ClientFeature, Decision, Policy};
use crate::sha256::HexDigest;
use crate::text::render;

/// How much room the suggested limits leave over the largest count one session showed.
pub const HEADROOM: u64 = 2;

/// `s` as a YAML double-quoted scalar, with
/// every character a person would not see as written (controls, format and bidi characters, …:
/// not [`crate::text::shown_raw`]) escaped, so the file reads as what it allows.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if crate::text::shown_raw(c) => out.push(c),
            // YAML's escapes (JSON has no eight-digit one; YAML reads `\\u` surrogates as
            // invalid).
            c if u32::from(c) <= 0xFFFF => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => {
                let _ = write!(out, "\\U{:08X}", u32::from(c));
            }
        }
    }
    out.push('"');
    out
}

/// A tool-name glob that matches exactly `name` (globs have no escape: `*` and `?` are written
/// `?`, one character).
fn tool_literal(name: &str) -> String {
    name.chars()
        .map(|c| if c == '*' || c == '?' { '?' } else { c })
        .collect()
}

fn evidence(what: &str, s: &Seen, of: u64) -> String {
    format!(
        "{} {what} allowed in {} of {of} capture(s)",
        s.uses.allowed, s.captures
    )
}

/// What the suggestion left out, and why (each line becomes a comment).
struct Notes(Vec<String>);

/// Writes the policy; `from` narrows every rule; `pins_file` names the pins file a policy that
/// pins its tools refers to. The pins to write there come back with the policy.
pub(super) fn policy_yaml(
    e: &Evidence,
    from: Option<&Policy>,
    skipped: u64,
    pins_file: Option<&str>,
) -> (String, Option<PinSet>) {
    let mut y = String::new();
    let _ = writeln!(
        y,
        "# Least-privilege policy suggested by `assay policy suggest` from {} closed capture(s){}.",
        e.captures,
        if skipped > 0 {
            format!(" ({skipped} not closed, not read)")
        } else {
            String::new()
        }
    );
    y.push_str("# It allows only what the captures show was used; review it before use.\n");
    if from.is_some() {
        y.push_str("# Narrowed from --from: nothing that policy refuses is allowed here.\n");
    }
    y.push_str("version: \"1\"\nname: \"suggested\"\n");
    let mut notes = Notes(Vec::new());
    let allowed = tools(&mut y, e, from, &mut notes);
    y.push_str("# The model is not shown the tools, resources and prompts this policy refuses.\nhide_refused_tools: true\n");
    if let Some(f) = from {
        from_rules(&mut y, f);
    }
    let pin_set = pins(&mut y, e, from, &allowed, pins_file);
    if e.captures_keeping > 0 || from.is_some_and(Policy::record_definitions) {
        y.push_str("# Captures keep the tool definitions their listings showed (for suggested pins).\nrecord_definitions: true\n");
    }
    resources(&mut y, e, from, &mut notes);
    prompts(&mut y, e, from, &mut notes);
    features(&mut y, e, from);
    limits(&mut y, e, from, &allowed);
    if !notes.0.is_empty() {
        y.push_str("# Left out:\n");
        for n in &notes.0 {
            let _ = writeln!(y, "#   {n}");
        }
    }
    (y, pin_set)
}

/// `allow`: every tool some call was allowed to use (and `from` lets through by name).
fn tools(y: &mut String, e: &Evidence, from: Option<&Policy>, notes: &mut Notes) -> Vec<String> {
    let mut allowed = Vec::new();
    for (tool, s) in &e.calls {
        if s.uses.allowed == 0 {
            notes.0.push(format!(
                "tool {}: {} call(s), every one refused when recorded",
                render(tool),
                s.uses.refused
            ));
        } else if from.is_some_and(|f| f.refuses_by_name(tool)) {
            notes
                .0
                .push(format!("tool {}: refused by --from", render(tool)));
        } else {
            allowed.push(tool.clone());
        }
    }
    for tool in e.definitions.keys() {
        if !e.calls.contains_key(tool) {
            notes
                .0
                .push(format!("tool {}: listed, never called", render(tool)));
        }
    }
    if allowed.is_empty() {
        y.push_str("# No call was allowed in any capture: no tool is allowed.\nallow: []\n");
        return allowed;
    }
    y.push_str("allow:\n");
    for tool in &allowed {
        if let Some(s) = e.calls.get(tool) {
            let _ = writeln!(
                y,
                "  # {}: {}",
                render(tool),
                evidence("call(s)", s, e.captures)
            );
        }
        let _ = writeln!(y, "  - {}", quoted(&tool_literal(tool)));
    }
    allowed
}

/// What `from` says beyond names, kept as it is: `deny`, `constraints`, `schemas`,
/// `hide_refused_tools`, `record_arguments`, `redact`.
fn from_rules(y: &mut String, f: &Policy) {
    let s = f.summary();
    if !s.deny.is_empty() {
        y.push_str("# From --from:\ndeny:\n");
        for d in &s.deny {
            let _ = writeln!(y, "  - {}", quoted(d));
        }
    }
    if !s.constraints.is_empty() {
        y.push_str("constraints:\n");
        for c in &s.constraints {
            let _ = writeln!(y, "  - tool: {}\n    params:", quoted(&c.tool));
            for p in &c.params {
                let mut rule = Vec::new();
                if let Some(m) = &p.matches {
                    rule.push(format!("matches: {}", quoted(m)));
                }
                if let Some(w) = &p.within {
                    let roots: Vec<String> = w.iter().map(|r| quoted(r)).collect();
                    rule.push(format!("within: [{}]", roots.join(", ")));
                }
                let _ = writeln!(y, "      {}: {{ {} }}", quoted(&p.name), rule.join(", "));
            }
        }
    }
    if !s.schemas.is_empty() {
        y.push_str("schemas:\n");
        for (tool, schema) in &s.schemas {
            let _ = writeln!(y, "  {}: {}", quoted(tool), schema);
        }
    }
    if s.record_arguments {
        y.push_str("record_arguments: true\n");
    }
    if !s.redact.is_empty() {
        let r: Vec<String> = s.redact.iter().map(|p| quoted(p)).collect();
        let _ = writeln!(y, "redact: [{}]", r.join(", "));
    }
}

/// The pins a suggestion writes: (tool, digest, canonical definition) for every allowed tool.
pub(super) type PinSet = Vec<(String, HexDigest, String)>;

/// Whether every capture shows one definition of `tool`, every allowed call was made against
/// it, and a capture kept it: the pin, or why there is none.
fn pin_of(e: &Evidence, tool: &str) -> Result<(HexDigest, String), String> {
    if let Some(n) = e.unlisted.get(tool) {
        return Err(format!(
            "{n} allowed call(s) were made before any listing of the session held it"
        ));
    }
    let digests = e.definitions.get(tool).filter(|d| !d.is_empty());
    let Some(digests) = digests else {
        return Err("no listing of any capture held it".to_owned());
    };
    if digests.len() > 1 {
        return Err(format!(
            "its definition changed across captures ({} definitions)",
            digests.len()
        ));
    }
    let Some((digest, _)) = digests.iter().next() else {
        return Err("no listing of any capture held it".to_owned());
    };
    let kept = e.kept.get(&(tool.to_owned(), digest.clone()));
    let hex = HexDigest::from_hex(digest);
    match (kept, hex) {
        (Some(definition), Some(hex)) => Ok((hex, definition.clone())),
        _ => Err(
            "its definition was not kept (the captures were made without `record_definitions: true`)"
                .to_owned(),
        ),
    }
}

/// `pins`: kept from `from` (dropping it would widen). Otherwise the definitions every capture
/// agrees on, as comments with their digests, and — when every allowed tool can be pinned
/// ([`pin_of`]; one that cannot would be refused under pins) and `pins_file` names the file
/// they go to — `pins: pins_file` and the pins to write there.
fn pins(
    y: &mut String,
    e: &Evidence,
    from: Option<&Policy>,
    allowed: &[String],
    pins_file: Option<&str>,
) -> Option<PinSet> {
    let mut set = Vec::new();
    let mut not = Vec::new();
    for tool in allowed {
        match pin_of(e, tool) {
            Ok((digest, definition)) => {
                let n = e.definitions.get(tool).and_then(|d| d.values().next());
                let _ = writeln!(
                    y,
                    "# definition agreed by every capture: {} {} ({} capture(s))",
                    render(tool),
                    digest.as_str(),
                    n.copied().unwrap_or_default()
                );
                set.push((tool.clone(), digest, definition));
            }
            Err(why) => not.push(format!("{}: {why}", render(tool))),
        }
    }
    for n in &not {
        let _ = writeln!(y, "# not pinned: {n}");
    }
    if let Some(p) = from.and_then(Policy::pins) {
        let _ = writeln!(y, "pins: {}", quoted(&p.path().display().to_string()));
        return None;
    }
    if set.is_empty() || !not.is_empty() {
        if !not.is_empty() && !set.is_empty() {
            y.push_str("# No pins: under pins a tool without one is refused, so every allowed tool needs its pin.
");
        }
        return None;
    }
    match pins_file {
        Some(file) => {
            let _ = writeln!(
                y,
                "# Every allowed tool pinned to the definition every capture listed ({} tool(s)).",
                set.len()
            );
            let _ = writeln!(y, "pins: {}", quoted(file));
            Some(set)
        }
        None => {
            y.push_str("# Every allowed tool can be pinned: with --out the pins file is written beside the policy.
");
            None
        }
    }
}

/// The names a section allows, with their evidence, and the notes of what it left out.
fn allowed_names<'a>(
    seen: &'a BTreeMap<String, Seen>,
    what: &str,
    refused_by_from: impl Fn(&str) -> bool,
    notes: &mut Notes,
) -> Vec<(&'a String, &'a Seen)> {
    let mut out = Vec::new();
    for (name, s) in seen {
        if s.uses.allowed == 0 {
            notes
                .0
                .push(format!("{what} {}: refused when recorded", render(name)));
        } else if refused_by_from(name) {
            notes
                .0
                .push(format!("{what} {}: refused by --from", render(name)));
        } else {
            out.push((name, s));
        }
    }
    out
}

/// Whether `from` governs and refuses the verdict's target.
fn refuses(v: Option<crate::policy::Verdict>) -> bool {
    v.is_some_and(|v| v.decision != Decision::Allow)
}

/// `resources.allow`: the URIs read, as literal patterns (or a directory glob, see
/// [`super::generalize`]).
fn resources(y: &mut String, e: &Evidence, from: Option<&Policy>, notes: &mut Notes) {
    let refused = |uri: &str| from.is_some_and(|f| refuses(f.evaluate_resource(Some(uri))));
    let allowed = allowed_names(&e.resources, "resource", refused, notes);
    let globs = super::generalize::resource_patterns(&allowed, e);
    if globs.is_empty() {
        y.push_str(
            "# No resource was read in any capture: none is allowed.\nresources:\n  allow: []\n",
        );
        return;
    }
    y.push_str("resources:\n  allow:\n");
    for (pattern, comment) in globs {
        let _ = writeln!(y, "    # {}", render(&comment));
        let _ = writeln!(y, "    - {}", quoted(&pattern));
    }
}

/// `prompts.allow`: the prompts got, by name.
fn prompts(y: &mut String, e: &Evidence, from: Option<&Policy>, notes: &mut Notes) {
    let refused = |name: &str| from.is_some_and(|f| refuses(f.evaluate_prompt(Some(name))));
    let allowed = allowed_names(&e.prompts, "prompt", refused, notes);
    if allowed.is_empty() {
        y.push_str("# No prompt was got in any capture: none is allowed.\nprompts:\n  allow: []\n");
        return;
    }
    y.push_str("prompts:\n  allow:\n");
    for (name, s) in allowed {
        let _ = writeln!(
            y,
            "    # {}: {}",
            render(name),
            evidence("get(s)", s, e.captures)
        );
        let _ = writeln!(y, "    - {}", quoted(&tool_literal(name)));
    }
}

/// `client_features`: allowed where a server request for it was allowed, denied everywhere else.
fn features(y: &mut String, e: &Evidence, from: Option<&Policy>) {
    y.push_str("client_features:\n");
    for f in ClientFeature::ALL {
        let seen = e.features.get(f.as_str()).filter(|s| s.uses.allowed > 0);
        let from_denies = from.is_some_and(|p| p.client_feature_rule(f) == Some(false));
        match seen {
            Some(s) if !from_denies => {
                let _ = writeln!(
                    y,
                    "  # {}\n  {}: allow",
                    evidence("request(s)", s, e.captures),
                    f.as_str()
                );
            }
            _ => {
                let _ = writeln!(y, "  {}: deny   # not allowed in any capture", f.as_str());
            }
        }
    }
}

/// `limits`: [`HEADROOM`] times the largest per-session count, never above `from`'s.
fn limits(y: &mut String, e: &Evidence, from: Option<&Policy>, allowed: &[String]) {
    if allowed.is_empty() || e.tool_calls_max == 0 {
        return;
    }
    let cap = |n: u64, theirs: Option<u64>| {
        let n = n.saturating_mul(HEADROOM).max(1);
        theirs.map_or(n, |t| n.min(t))
    };
    let fl = from.and_then(Policy::limits);
    let _ = writeln!(
        y,
        "# limits: {HEADROOM}x the largest count one session showed"
    );
    y.push_str("limits:\n");
    let _ = writeln!(
        y,
        "  tool_calls: {}   # at most {} allowed call(s) in one session",
        cap(e.tool_calls_max, fl.and_then(|l| l.tool_calls())),
        e.tool_calls_max
    );
    y.push_str("  per_tool:\n");
    for tool in allowed {
        let Some(s) = e.calls.get(tool) else { continue };
        let theirs = fl.and_then(|l| l.per_tool().get(tool).copied());
        let _ = writeln!(
            y,
            "    {}: {}   # at most {} in one session",
            quoted(tool),
            cap(s.session_max, theirs),
            s.session_max
        );
    }
    if e.repeated_max > 0 {
        let _ = writeln!(
            y,
            "  repeated_call: {}   # the same call at most {} time(s) in one session",
            cap(e.repeated_max, fl.and_then(|l| l.repeated_call())),
            e.repeated_max
        );
    }
}
