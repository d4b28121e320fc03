//! The companion files of a capture (SPEC §7): protocol.json, the session context and the
//! session stop, each checked field by field, and the stop record's decision-log accounting.

use serde_json::{Map, Value};

use super::decision_line::Expect;
use super::fields::{Fields, Reasons};
use super::judgement::ClosureReasonCode;
use crate::capture_files::{CONTEXT, DECISIONS, PROTOCOL, STOP};
use crate::event_source::is_event_source;
use crate::outcome::{DecisionLogState, SessionEnd, StopData, Termination};

/// protocol.json, checked.
pub(super) struct ProtocolView<'a> {
    pub(super) session_id: &'a str,
    pub(super) event_source: &'a str,
    pub(super) server_id: &'a str,
}

pub(super) fn check_protocol<'a>(
    m: &'a Map<String, Value>,
    r: &mut Reasons,
) -> Option<ProtocolView<'a>> {
    let mut f = Fields::new(PROTOCOL, m, r);
    f.equals("schema", "assay.capture.protocol.v1");
    let session_id = f.session_id("session_id");
    let event_source = f.checked("event_source", is_event_source, "is not an absolute URI");
    let server_id = f.str("server_id");
    f.time("created_at");
    // The reader opens fixed names; a protocol naming other files describes another layout.
    f.equals("decision_log", DECISIONS);
    f.equals("session_context", CONTEXT);
    f.equals("session_stop", STOP);
    f.producer("producer");
    if !f.ok {
        return None;
    }
    Some(ProtocolView {
        session_id: session_id?,
        event_source: event_source?,
        server_id: server_id?,
    })
}

/// The CloudEvents envelope of a companion event (SPEC §4).
pub(super) struct Envelope<'a> {
    pub(super) id: &'a str,
    pub(super) source: &'a str,
    pub(super) data: &'a Map<String, Value>,
}

pub(super) fn check_envelope<'a>(
    name: &str,
    m: &'a Map<String, Value>,
    ty: &str,
    r: &mut Reasons,
) -> Option<Envelope<'a>> {
    let mut f = Fields::new(name, m, r);
    f.equals("specversion", "1.0");
    let id = f.str("id");
    f.equals("type", ty);
    let source = f.checked("source", is_event_source, "is not an absolute URI");
    f.time("time");
    f.equals("datacontenttype", "application/json");
    let data = f.object("data");
    if !f.ok {
        return None;
    }
    Some(Envelope {
        id: id?,
        source: source?,
        data: data?,
    })
}

/// session-context.json, checked (SPEC §4.2: every stable context field is required).
pub(super) struct ContextView<'a> {
    pub(super) id: &'a str,
    pub(super) source: &'a str,
    pub(super) session_id: &'a str,
    pub(super) server_id: &'a str,
    pub(super) server_pid: u64,
    pub(super) policy_sha256: &'a str,
    pub(super) decision_log: &'a str,
    pub(super) session_stop_requested: bool,
    pub(super) dry_run: bool,
}

pub(super) fn check_context<'a>(
    m: &'a Map<String, Value>,
    r: &mut Reasons,
) -> Option<ContextView<'a>> {
    let env = check_envelope(CONTEXT, m, "assay.mcp.session.context.v1", r);
    let data = match &env {
        Some(e) => e.data,
        None => {
            // Still check the data fields when only the envelope is wrong.
            let Some(Value::Object(d)) = m.get("data") else {
                return None;
            };
            d
        }
    };
    let mut f = Fields::new(format!("{CONTEXT} data"), data, r);
    let session_id = f.session_id("session_id");
    let server_id = f.str("server_id");
    let server_pid = f.uint("server_pid", u64::from(u32::MAX));
    f.time("started_at");
    let policy_sha256 = f.sha256("policy_sha256");
    f.opt_str("policy_name");
    let decision_log = f.one_of("decision_log", &["new", "append", "temporary", "absent"]);
    let session_stop_requested = f.bool("session_stop_requested");
    let dry_run = f.bool("dry_run");
    // SPEC §4.2: a boolean when present; contexts written without it are accepted.
    if data
        .get("hide_refused_tools")
        .is_some_and(|v| !v.is_boolean())
    {
        f.bad("hide_refused_tools", "is not a boolean");
    }
    // SPEC §4.2, §5.1: null or 64 lowercase hex when present; older contexts lack it.
    if data
        .get("pins_sha256")
        .is_some_and(|v| !v.is_null() && !v.as_str().is_some_and(|s| super::fields::is_hex(s, 64)))
    {
        f.bad("pins_sha256", "is not 64 lowercase hex characters or null");
    }
    // SPEC §4.2, §5.2: when present, `governed` is an array of section names (strings) and
    // `record_arguments` a boolean; contexts written before the keys existed lack them.
    if data.get("governed").is_some_and(|v| {
        !v.as_array()
            .is_some_and(|items| items.iter().all(Value::is_string))
    }) {
        f.bad("governed", "is not an array of strings");
    }
    if data
        .get("record_arguments")
        .is_some_and(|v| !v.is_boolean())
    {
        f.bad("record_arguments", "is not a boolean");
    }
    f.sha256("command_sha256");
    f.producer("producer");
    f.equals("assertion_basis", "producer_observation");
    f.non_claims("non_claims");
    if !f.ok {
        return None;
    }
    let env = env?;
    Some(ContextView {
        id: env.id,
        source: env.source,
        session_id: session_id?,
        server_id: server_id?,
        server_pid: server_pid?,
        policy_sha256: policy_sha256?,
        decision_log: decision_log?,
        session_stop_requested: session_stop_requested?,
        dry_run: dry_run?,
    })
}

/// session-stop.json, checked (SPEC §4.3: every key always present).
pub(super) struct StopView<'a> {
    pub(super) id: &'a str,
    pub(super) source: &'a str,
    pub(super) data: StopData,
}

/// SPEC §4.3 `otlp_export`: absent (no live exporter ran), or `{spans, exported, dropped}`,
/// unsigned, with `exported + dropped == spans`.
fn check_otlp_export(f: &mut Fields<'_, '_>, v: Option<&Value>) {
    let Some(v) = v else { return };
    let n = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_u64);
    let ok = v.as_object().is_some_and(|m| {
        m.len() == 3
            && matches!(
                (n(m, "spans"), n(m, "exported"), n(m, "dropped")),
                (Some(s), Some(e), Some(d)) if e.checked_add(d) == Some(s)
            )
    });
    if !ok {
        f.bad(
            "otlp_export",
            "is not {spans, exported, dropped} with exported + dropped = spans",
        );
    }
}

pub(super) fn check_stop<'a>(m: &'a Map<String, Value>, r: &mut Reasons) -> Option<StopView<'a>> {
    let env = check_envelope(STOP, m, "assay.mcp.session.stop.v1", r);
    let data = match &env {
        Some(e) => e.data,
        None => {
            let Some(Value::Object(d)) = m.get("data") else {
                return None;
            };
            d
        }
    };
    let mut f = Fields::new(format!("{STOP} data"), data, r);
    f.session_id("session_id");
    f.str("server_id");
    f.uint("server_pid", u64::from(u32::MAX));
    f.opt_str("session_context_id");
    f.one_of("session_end", &["client_closed", "proxy_error"]);
    f.one_of("termination", &["exited", "signaled", "unknown"]);
    f.opt_i32("exit_code");
    f.opt_i32("signal");
    f.opt_bool("core_dumped");
    let kill_requested = f.bool("assay_kill_requested");
    // SPEC §4.3: a boolean when present (records written before it existed lack it); `true`
    // claims other processes were alive at a kill attempt, so it needs one.
    match data.get("group_killed") {
        None | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) if kill_requested != Some(false) => {}
        Some(Value::Bool(true)) => {
            f.bad(
                "group_killed",
                "is true while assay_kill_requested is false",
            );
        }
        Some(_) => f.bad("group_killed", "is not a boolean"),
    }
    f.one_of(
        "decision_log",
        &["complete", "incomplete", "temporary", "absent", "unknown"],
    );
    f.opt_uint("decision_events_written");
    f.opt_uint("decision_events_dropped");
    f.opt_sha256("decision_prefix_sha256");
    check_otlp_export(&mut f, data.get("otlp_export"));
    f.equals("assertion_basis", "producer_observation");
    f.non_claims("non_claims");
    if !f.ok {
        return None;
    }
    let env = env?;
    // Every field was checked above, so this only fails on a bug; report it rather than panic.
    match serde_json::from_value::<StopData>(Value::Object(data.clone())) {
        Ok(data) => Some(StopView {
            id: env.id,
            source: env.source,
            data,
        }),
        Err(e) => {
            r.push(
                ClosureReasonCode::SchemaMismatch,
                format!("{STOP} data: {e}"),
            );
            None
        }
    }
}

/// Stop fields that contradict each other (SPEC §3.2, §4.1, §4.3).
pub(super) fn check_accounting(s: &StopData, r: &mut Reasons) {
    let mut bad = |msg: String| {
        r.push(
            ClosureReasonCode::InconsistentAccounting,
            format!("{STOP}: {msg}"),
        )
    };
    match s.termination {
        Termination::Exited => {
            if !matches!(s.exit_code, Some(0..=255))
                || s.signal.is_some()
                || s.core_dumped.is_some()
            {
                bad(
                    "termination exited needs exit_code 0..=255 and null signal/core_dumped".into(),
                );
            }
        }
        Termination::Signaled => {
            if s.exit_code.is_some()
                || !matches!(s.signal, Some(1..=127))
                || s.core_dumped.is_none()
            {
                bad(
                    "termination signaled needs signal 1..=127, core_dumped set and null exit_code"
                        .into(),
                );
            }
        }
        Termination::Unknown => {
            if s.exit_code.is_some() || s.signal.is_some() || s.core_dumped.is_some() {
                bad("termination unknown needs null exit_code, signal and core_dumped".into());
            }
        }
    }
    let counters = [
        s.decision_events_written.is_some(),
        s.decision_events_dropped.is_some(),
        s.decision_prefix_sha256.is_some(),
    ];
    let all_set = counters.iter().all(|&c| c);
    let none_set = counters.iter().all(|&c| !c);
    if !all_set && !none_set {
        bad("decision accounting fields are neither all set nor all null".into());
    }
    let dropped = s.decision_events_dropped.unwrap_or(0);
    match s.decision_log {
        DecisionLogState::Complete => {
            if !all_set {
                bad("decision_log complete without decision accounting".into());
            }
            if dropped > 0 {
                bad(format!(
                    "decision_log complete with {dropped} dropped decision events"
                ));
            }
            if s.session_end == SessionEnd::ProxyError {
                bad("decision_log complete with session_end proxy_error".into());
            }
        }
        DecisionLogState::Incomplete => {
            if !all_set {
                bad("decision_log incomplete without decision accounting".into());
            }
            if dropped == 0 && s.session_end == SessionEnd::ClientClosed {
                bad(
                    "decision_log incomplete with no dropped events and session_end client_closed"
                        .into(),
                );
            }
        }
        DecisionLogState::Absent | DecisionLogState::Unknown => {
            if !none_set {
                bad(format!(
                    "decision_log {} with decision accounting present",
                    if s.decision_log == DecisionLogState::Absent {
                        "absent"
                    } else {
                        "unknown"
                    }
                ));
            }
        }
        DecisionLogState::Temporary => {}
    }
}

/// What every decision line must agree with, from the best available companion: the stop
/// record's session id and source first, then the context's, then protocol.json's; the policy
/// digest and dry-run flag from the context only.
pub(super) fn expectations<'a>(
    p: Option<&ProtocolView<'a>>,
    c: Option<&ContextView<'a>>,
    s: Option<&'a StopView<'a>>,
) -> Expect<'a> {
    Expect {
        session_id: s
            .map(|s| s.data.session_id.as_str())
            .or(c.map(|c| c.session_id))
            .or(p.map(|p| p.session_id)),
        source: s
            .map(|s| s.source)
            .or(c.map(|c| c.source))
            .or(p.map(|p| p.event_source)),
        policy_sha256: c.map(|c| c.policy_sha256),
        dry_run: c.map(|c| c.dry_run),
    }
}
