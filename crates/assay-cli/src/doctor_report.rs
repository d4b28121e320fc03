//! `assay mcp doctor`: one entry's findings — what the doctor saw, each failing reason in
//! words, the pins judged from what the host was shown — and their two forms: a table row for
//! people (every string through the one renderer, [`assay::text::render`]) and a JSON object.

use std::collections::BTreeSet;
use std::time::Duration;

use assay::capture::{ClosureKind, LogLine};
use assay::pins::{ChangedTool, PinCheck};
use assay::text;
use serde_json::{Value, json};

use super::doctor_close::{EndedBy, GRACE};
use super::doctor_plan::Plan;
use super::doctor_run::Ran;

/// The pins of a wrapped entry's policy, judged from the doctor's capture.
pub(crate) enum PinsState {
    /// What the host was shown is exactly what is pinned.
    Current { file: String },
    /// Something was added, removed or changed (the per-tool lines of `mcp pin --check`).
    Drifted { file: String, check: PinCheck },
    /// No listing was recorded to judge.
    Unknown { file: String, why: String },
}

/// One entry's findings.
pub(crate) struct Finding {
    pub label: String,
    pub name: String,
    pub wrapped: bool,
    pub policy_written: Option<String>,
    pub policy_name: Option<String>,
    /// The entry's own evidence options, left out of the doctor's run.
    pub replaced: Vec<String>,
    pub started: bool,
    pub initialized: bool,
    pub protocol_version: Option<String>,
    pub tools: Option<Vec<String>>,
    /// Tools removed from what the host was shown, with the reason code.
    pub hidden: Vec<(String, String)>,
    pub prompts: Option<usize>,
    pub resources: Option<usize>,
    pub pins: Option<PinsState>,
    pub ended_by: Option<EndedBy>,
    pub close_to_exit: Option<Duration>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// The verdict of each of the doctor's captures, with its reason codes.
    pub captures: Vec<(ClosureKind, Vec<String>)>,
    pub left_behind: Vec<i32>,
    pub not_ended: Vec<i32>,
    pub stderr_last: Option<String>,
    /// Each failing reason, in words (unrendered: rendered where printed).
    pub reasons: Vec<String>,
    pub notes: Vec<String>,
}

impl Finding {
    /// `healthy`, `unhealthy` or `not protected`.
    pub(crate) fn status(&self) -> &'static str {
        match (self.wrapped, self.reasons.is_empty()) {
            (false, _) => "not protected",
            (true, true) => "healthy",
            (true, false) => "unhealthy",
        }
    }
}

/// Builds the finding of `plan`'s run `ran`.
pub(crate) fn finding(plan: &Plan, ran: &Ran) -> Finding {
    let policy = plan.wrap.as_ref().and_then(|w| w.policy.as_ref().ok());
    let listings: Vec<&assay::capture::ListingRow> = ran
        .captures
        .iter()
        .flat_map(|(_, r)| &r.decisions.lines)
        .filter_map(|l| match l {
            LogLine::Listing(row) => Some(row),
            _ => None,
        })
        .collect();
    let mut hidden: Vec<(String, String)> = Vec::new();
    // Tools: the removals of `tools/list` answers (a hidden prompt or resource is not a tool).
    for r in listings
        .iter()
        .filter(|l| l.lists_tools())
        .flat_map(|l| &l.removed)
    {
        let entry = (r.name.clone(), r.reason_code.clone());
        if r.name != "(instructions)" && !hidden.contains(&entry) {
            hidden.push(entry);
        }
    }
    let status = ran.closed.and_then(|c| c.status);
    use std::os::unix::process::ExitStatusExt as _;
    let mut f = Finding {
        label: plan.label.clone(),
        name: plan.name.clone(),
        wrapped: plan.wrap.is_some(),
        policy_written: plan.wrap.as_ref().map(|w| w.policy_written.clone()),
        policy_name: policy.map(|p| p.name().to_string()),
        replaced: plan
            .wrap
            .as_ref()
            .map(|w| w.replaced.clone())
            .unwrap_or_default(),
        started: ran.spawn_error.is_none(),
        initialized: ran.initialized,
        protocol_version: ran.listing.as_ref().map(|l| l.protocol_version.clone()),
        tools: ran
            .listing
            .as_ref()
            .map(|l| l.tools.iter().map(|t| t.name.clone()).collect()),
        hidden,
        prompts: ran.prompts.as_ref().and_then(|p| p.as_ref().ok().copied()),
        resources: ran
            .resources
            .as_ref()
            .and_then(|r| r.as_ref().ok().copied()),
        pins: policy
            .and_then(|p| p.pins())
            .map(|pins| pins_state(pins, &listings)),
        ended_by: ran.closed.map(|c| c.ended_by),
        close_to_exit: ran.closed.and_then(|c| c.close_to_exit),
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        captures: ran
            .captures
            .iter()
            .map(|(_, r)| {
                let codes = r
                    .closure
                    .reasons
                    .iter()
                    .map(|x| x.code.as_str().to_string());
                (r.closure.closure, codes.collect())
            })
            .collect(),
        left_behind: ran.left_behind.clone(),
        not_ended: ran.not_ended.clone(),
        stderr_last: ran.stderr_last.clone(),
        reasons: Vec::new(),
        notes: plan.notes.clone(),
    };
    // A wrapper that exits 2, 126 or 127 before any answer did not start the server.
    if f.wrapped && !f.initialized && matches!(f.exit_code, Some(2 | 126 | 127)) {
        f.started = false;
    }
    f.reasons = reasons(plan, ran, &f);
    f
}

/// The pins judged from the listings the wrapper recorded (SPEC §4.1a): every tool the host was
/// shown matches its pin (the wrapper shows nothing else); a tool removed as `P_TOOL_DRIFT` was
/// changed, as `P_TOOL_UNPINNED` added; a pinned tool neither shown nor removed is gone.
fn pins_state(pins: &assay::pins::Pins, listings: &[&assay::capture::ListingRow]) -> PinsState {
    let file = pins.path().display().to_string();
    // Pins cover the tools and the instructions: a listing of resources or prompts says nothing
    // of them.
    let listings: Vec<&assay::capture::ListingRow> = listings
        .iter()
        .copied()
        .filter(|l| l.lists_tools() || l.lists_instructions())
        .collect();
    if listings.is_empty() {
        return PinsState::Unknown {
            file,
            why: "the capture records no tools/list result".into(),
        };
    }
    let mut c = PinCheck::default();
    let mut seen = BTreeSet::new();
    for row in &listings {
        for t in &row.shown {
            if seen.insert(t.name.clone()) {
                c.matching.push(t.name.clone());
            }
        }
        for r in &row.removed {
            if r.name == "(instructions)" {
                c.instructions = Some(String::new());
                continue;
            }
            if !seen.insert(r.name.clone()) {
                continue;
            }
            match assay::ReasonCode::parse(&r.reason_code) {
                Some(assay::ReasonCode::P_TOOL_DRIFT) => c.changed.push(ChangedTool {
                    name: r.name.clone(),
                    pinned_sha256: pins
                        .get(&r.name)
                        .map_or_else(String::new, |p| p.sha256().to_string()),
                    listed_sha256: r.sha256.clone().unwrap_or_default(),
                    diff: String::new(),
                }),
                Some(assay::ReasonCode::P_TOOL_UNPINNED) => c.added.push(r.name.clone()),
                _ => {}
            }
        }
    }
    for (name, _) in pins.iter() {
        if !seen.contains(name) {
            c.removed.push(name.to_string());
        }
    }
    if c.clean() {
        PinsState::Current { file }
    } else {
        PinsState::Drifted { file, check: c }
    }
}

/// `exit code N` or `signal N`.
fn status_words(f: &Finding) -> String {
    match (f.exit_code, f.signal) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("signal {s}"),
        (None, None) => "status unknown".into(),
    }
}

fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// Each failing reason of the entry, in words.
fn reasons(plan: &Plan, ran: &Ran, f: &Finding) -> Vec<String> {
    let mut out: Vec<String> = plan.problems.clone();
    start_reasons(plan, ran, f, &mut out);
    for (what, r) in [
        (assay::methods::PROMPTS_LIST.name, &ran.prompts),
        (assay::methods::RESOURCES_LIST.name, &ran.resources),
    ] {
        if let Some(Err(e)) = r {
            out.push(format!("{what} failed: {e}"));
        }
    }
    pins_reason(ran, f, &mut out);
    close_reasons(ran, f, &mut out);
    evidence_reasons(f, &mut out);
    out
}

/// Why the entry did not start, initialize or list its tools, if it did not.
fn start_reasons(plan: &Plan, ran: &Ran, f: &Finding, out: &mut Vec<String>) {
    let stderr = || {
        f.stderr_last
            .as_ref()
            .map(|l| format!("; its last line on stderr: {l}"))
            .unwrap_or_default()
    };
    if let Some(Err(e)) = plan.wrap.as_ref().map(|w| &w.policy) {
        out.push(format!("its policy cannot be loaded: {e}"));
    }
    if let Some(e) = &ran.spawn_error {
        out.push(format!("it did not start: {e}"));
    } else if !f.started {
        out.push(format!(
            "the wrapper did not start the server (exit {}){}",
            f.exit_code.unwrap_or_default(),
            stderr()
        ));
    } else if let (Some(_), Some(EndedBy::BeforeClose), false) =
        (&ran.list_error, f.ended_by, f.initialized)
    {
        out.push(format!(
            "it exited ({}) before answering initialize{}",
            status_words(f),
            stderr()
        ));
    } else if let Some(e) = &ran.list_error {
        let what = if f.initialized {
            "its tools could not be listed"
        } else {
            "it did not answer initialize"
        };
        out.push(format!("{what}: {e}{}", stderr()));
    }
}

/// The entry's tools differ from its pins, or the pins could not be judged.
fn pins_reason(ran: &Ran, f: &Finding, out: &mut Vec<String>) {
    match &f.pins {
        Some(PinsState::Drifted { file, check }) => out.push(format!(
            "its tools differ from the pins in {file}: {} added, {} removed, {} changed{} (the \
             host is not shown them; `assay mcp pin --check` shows the diff)",
            check.added.len(),
            check.removed.len(),
            check.changed.len(),
            if check.instructions.is_some() {
                ", instructions changed"
            } else {
                ""
            }
        )),
        Some(PinsState::Unknown { file, why }) if f.started && ran.list_error.is_none() => {
            out.push(format!("its pins in {file} could not be judged: {why}"))
        }
        _ => {}
    }
}

/// How the entry ended when it did not exit on its input's close.
fn close_reasons(ran: &Ran, f: &Finding, out: &mut Vec<String>) {
    let ms = f.close_to_exit.map_or(0, |d| d.as_millis());
    let grace = GRACE.as_secs();
    match f.ended_by {
        Some(EndedBy::BeforeClose) if ran.list_error.is_none() && f.started => out.push(
            "it exited by itself before the host closed its input (a host sees the server crash)"
                .into(),
        ),
        Some(EndedBy::Sigterm) => out.push(format!(
            "it did not exit within {grace} s of its input's close: the SDKs' SIGTERM ended it \
             ({ms} ms after the close)"
        )),
        Some(EndedBy::Sigkill) => out.push(format!(
            "it exited neither on its input's close nor on SIGTERM: SIGKILL ended it ({ms} ms \
             after the close)"
        )),
        Some(EndedBy::NotEnded) => out.push("it did not exit even after SIGKILL".into()),
        _ => {}
    }
}

/// A wrapped entry's capture that is missing or not closed, and processes left behind.
fn evidence_reasons(f: &Finding, out: &mut Vec<String>) {
    if f.wrapped && f.started {
        if f.captures.is_empty() {
            out.push("the wrapper wrote no capture".into());
        }
        for (closure, codes) in &f.captures {
            if *closure != ClosureKind::Closed {
                out.push(format!(
                    "its capture reads {} ({})",
                    closure.as_str(),
                    codes.join(", ")
                ));
            }
        }
    }
    if !f.left_behind.is_empty() {
        let pids = |p: &[i32]| p.iter().map(i32::to_string).collect::<Vec<_>>().join(" ");
        out.push(format!(
            "it left {} behind after the close (pid {}): {}",
            plural(f.left_behind.len(), "process"),
            pids(&f.left_behind),
            if f.not_ended.is_empty() {
                "the doctor ended them".to_string()
            } else {
                format!("the doctor could not end pid {}", pids(&f.not_ended))
            }
        ));
    }
}

/// The table's header.
pub(crate) const HEADER: [&str; 9] = [
    "ENTRY", "WRAPPED", "STARTED", "TOOLS", "PINS", "CLOSE", "CAPTURE", "LEFT", "STATUS",
];

/// The entry's table row (rendered).
pub(crate) fn row(f: &Finding) -> Vec<String> {
    let yes = |b: bool| if b { "yes" } else { "no" }.to_string();
    let wrapped = match (&f.policy_name, &f.policy_written) {
        (Some(name), _) => format!("yes ({})", text::render(name)),
        (None, Some(path)) => format!("yes ({})", text::render(path)),
        _ => "no".into(),
    };
    let tools = match (&f.tools, f.hidden.len()) {
        (None, _) => "-".to_string(),
        (Some(t), 0) => t.len().to_string(),
        (Some(t), h) => format!("{} ({h} hidden)", t.len()),
    };
    let pins = match &f.pins {
        None => "-",
        Some(PinsState::Current { .. }) => "current",
        Some(PinsState::Drifted { .. }) => "drifted",
        Some(PinsState::Unknown { .. }) => "unknown",
    };
    let ms = f.close_to_exit.map(|d| d.as_millis());
    let close = match (f.ended_by, ms) {
        (None, _) => "-".to_string(),
        (Some(EndedBy::BeforeClose), _) => "exited before".to_string(),
        (Some(EndedBy::NotEnded), _) => "not ended".to_string(),
        (Some(EndedBy::InputClosed), Some(ms)) => format!("{ms} ms"),
        (Some(EndedBy::Sigterm), Some(ms)) => format!("{ms} ms (SIGTERM)"),
        (Some(_), Some(ms)) => format!("{ms} ms (SIGKILL)"),
        (Some(_), None) => "-".to_string(),
    };
    let capture = match (f.wrapped, f.captures.as_slice()) {
        (false, _) => "-".to_string(),
        (true, []) => "none".to_string(),
        (true, c) => c
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>()
            .join(","),
    };
    let left = match (f.left_behind.len(), f.not_ended.len()) {
        (0, _) => "0".to_string(),
        (n, 0) => format!("{n} (ended)"),
        (n, m) => format!("{n} ({m} alive)"),
    };
    vec![
        text::render(&f.label),
        wrapped,
        yes(f.started),
        tools,
        pins.to_string(),
        close,
        capture,
        left,
        f.status().to_string(),
    ]
}

/// The entry as one JSON object (docs/hosts.md lists its members).
pub(crate) fn json(f: &Finding, config: &str, kept: Option<&str>) -> Value {
    let pins = f.pins.as_ref().map(|p| match p {
        PinsState::Current { file } => json!({"file": file, "state": "current"}),
        PinsState::Unknown { file, why } => json!({"file": file, "state": "unknown", "why": why}),
        PinsState::Drifted { file, check } => json!({
            "file": file,
            "state": "drifted",
            "added": check.added,
            "removed": check.removed,
            "changed": check.changed.iter().map(|c| json!({
                "name": c.name, "pinned_sha256": c.pinned_sha256, "listed_sha256": c.listed_sha256,
            })).collect::<Vec<_>>(),
            "instructions_changed": check.instructions.is_some(),
        }),
    });
    let captures: Vec<Value> = f
        .captures
        .iter()
        .map(|(k, codes)| json!({"closure": k.as_str(), "reasons": codes}))
        .collect();
    json!({
        "entry": f.label,
        "name": f.name,
        "config": config,
        "wrapped": f.wrapped,
        "policy": f.policy_written,
        "policy_name": f.policy_name,
        "evidence_options_replaced": f.replaced,
        "status": f.status(),
        "healthy": f.reasons.is_empty(),
        "started": f.started,
        "initialized": f.initialized,
        "protocol_version": f.protocol_version,
        "tools": f.tools,
        "tools_hidden": f.hidden.iter().map(|(n, c)| json!({"name": n, "reason_code": c})).collect::<Vec<_>>(),
        "prompts": f.prompts,
        "resources": f.resources,
        "pins": pins,
        "ended_by": f.ended_by.map(EndedBy::as_str),
        "close_to_exit_ms": f.close_to_exit.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        "exit_code": f.exit_code,
        "signal": f.signal,
        "captures": if f.wrapped { Value::from(captures) } else { Value::Null },
        "captures_kept_in": kept,
        "left_behind": {"count": f.left_behind.len(), "pids": f.left_behind, "still_alive": f.not_ended},
        "stderr_last": f.stderr_last,
        "reasons": f.reasons,
        "notes": f.notes,
    })
}
