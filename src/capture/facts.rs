//! Who ran a judged capture and when (`SessionFacts`), and what its decision lines must agree
//! with, from the companions the verdict judged: each read again through the bounded opener and
//! used only when its SHA-256 equals the digest the verdict recorded and it passes the reader's
//! checks (`capture show`, `capture export`).

use std::path::Path;

use serde_json::{Map, Value};

use super::bounds::{MAX_COMPANION_BYTES, MAX_DECISIONS, MAX_LOG_BYTES};
use super::companions::{
    ContextView, ProtocolView, StopView, check_context, check_protocol, check_stop, expectations,
};
use super::decision_line::OwnedExpect;
use super::fields::{Reasons, digest_of, parse_object, read_file};
use super::judgement::Closure;
use crate::capture_files::{CONTEXT, DECISIONS, PROTOCOL, STOP};
use crate::input_file::{self as bounded, FinalLink};
use crate::outcome::StopData;

/// Who ran the session and when. Each field is `None` when the file holding it was refused,
/// failed its checks, or changed after it was judged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionFacts {
    /// The configured label (`server_id`): a label, not the executable's identity.
    pub server_id: Option<String>,
    /// The CloudEvents `source` of the session's events.
    pub event_source: Option<String>,
    /// The spawned server's PID.
    pub server_pid: Option<u64>,
    /// SHA-256 of the server's argv joined by NUL bytes (the argv itself is not recorded).
    pub command_sha256: Option<String>,
    /// The producer's name and version, e.g. `assay 0.1.0`.
    pub producer: Option<String>,
    /// The policy's name.
    pub policy_name: Option<String>,
    /// SHA-256 of the policy file.
    pub policy_sha256: Option<String>,
    /// The session ran in dry run (refusals logged, not enforced).
    pub dry_run: Option<bool>,
    /// When protocol.json was written (before the server was spawned).
    pub created_at: Option<String>,
    /// When the server was started (the session context's `started_at`).
    pub started_at: Option<String>,
    /// When the stop record was written (its event `time`), after the server's cleanup.
    pub stopped_at: Option<String>,
}

/// What the companions of a judged capture say.
pub(super) struct Facts {
    /// Who ran and when.
    pub(super) session: SessionFacts,
    /// The stop record's `data`, when it passed its checks.
    pub(super) stop: Option<StopData>,
    /// What every decision line must agree with.
    pub(super) expect: OwnedExpect,
}

/// The facts of the capture `dir` the verdict `closure` judged (see the module docs).
pub(super) fn read_facts(dir: &Path, closure: &Closure) -> Facts {
    // The reasons of this second read are the verdict's already; they are not reported twice.
    let mut scratch = Reasons::default();
    let companion = |name: &str, scratch: &mut Reasons| -> Option<Map<String, Value>> {
        let judged = closure.files.get(name)?;
        let bytes = read_file(dir, name, MAX_COMPANION_BYTES, scratch)?;
        if digest_of(&bytes) != *judged {
            return None;
        }
        parse_object(name, &bytes, scratch)
    };
    let protocol = companion(PROTOCOL, &mut scratch);
    let context = companion(CONTEXT, &mut scratch);
    let stop = companion(STOP, &mut scratch);

    let p = protocol
        .as_ref()
        .and_then(|m| check_protocol(m, &mut scratch));
    let c = context
        .as_ref()
        .and_then(|m| check_context(m, &mut scratch));
    let s = stop.as_ref().and_then(|m| check_stop(m, &mut scratch));
    facts_of(
        Companions {
            protocol: protocol.as_ref(),
            context: context.as_ref(),
            stop: stop.as_ref(),
        },
        p.as_ref(),
        c.as_ref(),
        s.as_ref(),
    )
}

/// The companions of a capture as read (parsed objects, before their checks).
#[derive(Clone, Copy)]
pub(super) struct Companions<'m> {
    pub(super) protocol: Option<&'m Map<String, Value>>,
    pub(super) context: Option<&'m Map<String, Value>>,
    pub(super) stop: Option<&'m Map<String, Value>>,
}

/// The facts of companions that passed their checks (`p`, `c`, `s`: the views of those that did).
pub(super) fn facts_of(
    m: Companions<'_>,
    p: Option<&ProtocolView<'_>>,
    c: Option<&ContextView<'_>>,
    s: Option<&StopView<'_>>,
) -> Facts {
    let (protocol, context, stop) = (m.protocol, m.context, m.stop);
    // Each field below was checked for its type and form by `check_*` before it is read here.
    let text =
        |m: &Map<String, Value>, key: &str| m.get(key).and_then(Value::as_str).map(str::to_string);
    let context_data = c
        .and(context)
        .and_then(|m| m.get("data"))
        .and_then(Value::as_object);
    let session = SessionFacts {
        server_id: s
            .map(|s| s.data.server_id.clone())
            .or(c.map(|c| c.server_id.to_string()))
            .or(p.map(|p| p.server_id.to_string())),
        event_source: s
            .map(|s| s.source.to_string())
            .or(c.map(|c| c.source.to_string()))
            .or(p.map(|p| p.event_source.to_string())),
        server_pid: s
            .map(|s| u64::from(s.data.server_pid))
            .or(c.map(|c| c.server_pid)),
        command_sha256: context_data.and_then(|d| text(d, "command_sha256")),
        producer: context_data
            .and_then(|d| d.get("producer"))
            .and_then(Value::as_object)
            .and_then(|p| Some(format!("{} {}", text(p, "name")?, text(p, "version")?))),
        policy_name: context_data.and_then(|d| text(d, "policy_name")),
        policy_sha256: c.map(|c| c.policy_sha256.to_string()),
        dry_run: c.map(|c| c.dry_run),
        created_at: p.and(protocol).and_then(|m| text(m, "created_at")),
        started_at: context_data.and_then(|d| text(d, "started_at")),
        stopped_at: s.and(stop).and_then(|m| text(m, "time")),
    };

    let expect = OwnedExpect::of(&expectations(p, c, s));
    Facts {
        session,
        stop: s.map(|s| s.data.clone()),
        expect,
    }
}

/// The decision log's bytes, when they are the bytes the verdict judged (by SHA-256) and hold
/// no more lines than the reader's bound; why not otherwise.
pub(super) fn judged_log(dir: &Path, closure: &Closure) -> Result<Vec<u8>, String> {
    let Some(judged) = closure.files.get(DECISIONS) else {
        return Err(format!("{DECISIONS} was not read (see the reasons above)"));
    };
    let bytes = bounded::read_bounded(&dir.join(DECISIONS), FinalLink::Refuse, MAX_LOG_BYTES)
        .map_err(|e| format!("{DECISIONS} {}", e.describe(MAX_LOG_BYTES)))?;
    if digest_of(&bytes) != *judged {
        return Err(format!("{DECISIONS} changed after it was judged"));
    }
    let count = memchr::memchr_iter(b'\n', &bytes).count();
    if count > MAX_DECISIONS {
        return Err(format!(
            "{DECISIONS} holds {count} lines, over the reader's {MAX_DECISIONS}-line bound"
        ));
    }
    Ok(bytes)
}
