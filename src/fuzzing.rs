//! Thin public entry points for the fuzz targets in `fuzz/` (SPEC §11: "the reader and the
//! client-line parser are fuzzed"). Not API: hidden from the docs, no stability promise. Each
//! function only calls the crate-private code it names and summarizes the result, so a fuzz
//! target can check invariants without reaching into private types.
#![forbid(unsafe_code)]

use crate::proxy::message::{ClientLine, Judged, Message, classify, for_each_message};
use crate::strict_json::ScanErrorKind;

/// What the client-line classifier (SPEC §3 item 6) made of one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientLineSummary {
    /// Empty or whitespace-only: forwarded unchanged.
    Blank,
    /// Refused with -32700 for this reason.
    ParseError(ScanErrorKind),
    /// Refused with -32700: a key of the envelope or of a `tools/call`'s `params` (at this
    /// offset) is a lenient variant of a member name.
    KeyVariant(usize),
    /// A carriage return inside the line (at this offset): refused with -32700.
    CarriageReturn(usize),
    /// Valid JSON that is neither an object nor an array: refused with -32600.
    NotObject,
    /// One message (an object).
    Single(MessageSummary),
    /// A batch: one entry per element that is an object, in order.
    Batch(Vec<MessageSummary>),
}

/// The members of one message the proxy looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageSummary {
    /// `method` is the string `tools/call` (after unescaping): the proxy evaluates it.
    pub is_tools_call: bool,
    /// The raw text of `method`, if present.
    pub method: Option<String>,
    /// The raw text of `id`, if present (`null` included).
    pub id: Option<String>,
    /// The raw text of `params.name`, if `params` is an object holding it.
    pub name: Option<String>,
    /// The raw text of `params.arguments`, if `params` is an object holding it.
    pub arguments: Option<String>,
}

fn summarize(head: &Message<'_>) -> MessageSummary {
    MessageSummary {
        is_tools_call: head.is(&crate::methods::TOOLS_CALL),
        method: head.method.map(str::to_string),
        id: head.id.map(str::to_string),
        name: head.name.map(str::to_string),
        arguments: head.arguments.map(str::to_string),
    }
}

/// Classifies one client line (newline included) exactly as the proxy does.
pub fn classify_client_line(line: &[u8]) -> ClientLineSummary {
    match classify(line, Judged::default()) {
        ClientLine::Blank => ClientLineSummary::Blank,
        ClientLine::ParseError(e) => ClientLineSummary::ParseError(e.kind),
        ClientLine::KeyVariant(at) => ClientLineSummary::KeyVariant(at),
        ClientLine::CarriageReturn(at) => ClientLineSummary::CarriageReturn(at),
        ClientLine::NotObject => ClientLineSummary::NotObject,
        ClientLine::Single(h) => ClientLineSummary::Single(summarize(&h)),
        ClientLine::Batch(text) => {
            let mut items = Vec::new();
            for_each_message(text, Judged::default(), |m| items.push(summarize(m)));
            ClientLineSummary::Batch(items)
        }
    }
}

/// The nesting bound the proxy applies to client lines.
pub const CLIENT_MAX_DEPTH: usize = crate::proxy::message::CLIENT_MAX_DEPTH;

/// The lenient key folding of SPEC §3 item 6 (one character).
pub fn fold(c: char) -> char {
    crate::lenient::fold(c)
}

/// The checked-in lenient folding table.
pub fn fold_table() -> &'static [(u32, u32)] {
    crate::lenient::fold_table()
}

/// A decoded key after lenient normalization (SPEC §3 item 6): trailing U+0000 removed, every
/// character folded.
pub fn normalize_key(key: &str) -> String {
    crate::lenient::normalize(key)
}

/// The server→client path of a session, without processes (SPEC §5): the client's requests as
/// the client→server worker notes them, and what the client receives of each server line.
pub struct ServerPath {
    pending: crate::proxy::pending::PendingRequests,
    watch: crate::proxy::tools_list::ToolsListWatch,
    policy: crate::policy::Policy,
}

impl ServerPath {
    /// A path whose policy refuses exactly the tools named in `refused` (a deny list, every
    /// other tool allowed; names are matched as globs), with hiding on.
    ///
    /// # Panics
    /// When `refused` cannot make a policy (a name that is not a valid glob).
    pub fn hiding(refused: &[&str]) -> Self {
        Self::with_policy(serde_json::json!({
            "version": "1",
            "allow": ["*"],
            "deny": refused,
            "hide_refused_tools": true,
        }))
    }

    /// As [`ServerPath::hiding`] with the tools `refused`, and a `prompts` section denying the
    /// prompt name globs `refused_prompts`: answers to `prompts/list` are filtered too.
    ///
    /// # Panics
    /// When the names cannot make a policy (a name that is not a valid glob).
    pub fn governing_prompts(refused: &[&str], refused_prompts: &[&str]) -> Self {
        Self::with_policy(serde_json::json!({
            "version": "1",
            "allow": ["*"],
            "deny": refused,
            "hide_refused_tools": true,
            "prompts": {"deny": refused_prompts},
        }))
    }

    fn with_policy(policy: serde_json::Value) -> Self {
        let policy = crate::policy::Policy::from_bytes(
            policy.to_string().as_bytes(),
            std::path::Path::new("fuzz.json"),
        )
        .unwrap_or_else(|e| panic!("fuzz policy: {e}"));
        ServerPath {
            pending: crate::proxy::pending::PendingRequests::new(),
            watch: crate::proxy::tools_list::ToolsListWatch::new(true, false),
            policy,
        }
    }

    /// The client sent a request with this id (raw JSON text) and method, and the wrapper
    /// forwarded it.
    pub fn request(&self, id: &str, method: &str) {
        let row = crate::methods::method(method);
        if row.is_some_and(|r| r.is(&crate::methods::TOOLS_LIST)) {
            self.watch.note_request();
        }
        // As the client worker notes it: in its batch's notes, carried out before it is
        // forwarded.
        let mut notes = crate::proxy::pending::Notes::default();
        notes.asked(id, crate::proxy::pending::RequestKind::of(row), None);
        self.pending.note_all(&mut notes);
    }

    /// What the client receives for one server line: `None`, the line unchanged; `Some(bytes)`,
    /// these bytes instead (empty: nothing).
    pub fn server_line(&self, line: &[u8]) -> Option<Vec<u8>> {
        use crate::proxy::answers::{Gate, judge_marked};
        use crate::proxy::tools_list::{ServerLine, on_server_line};
        // The one pass as a session that governs `client_features` makes it (both marks).
        let marks = crate::proxy::line_marks::read(line, true);
        let judged = judge_marked(line, &marks, &self.pending);
        let (mut text, answered, mut changed) = match judged.gate {
            Gate::Drop => return Some(Vec::new()),
            Gate::Replace(errors, _) => return Some(errors),
            Gate::Forward(a) => (line.to_vec(), a, false),
            Gate::Trimmed(t, a) => (t, a, true),
        };
        // The governed-list filter first, as the server→client path runs them (it judges
        // nothing when the policy governs no list).
        if let Some(f) = crate::proxy::governed_lists::judge(&self.policy, &text, &answered) {
            match f.line {
                Some(bytes) if f.edited => {
                    text = bytes;
                    changed = true;
                }
                Some(bytes) => return Some(bytes),
                None => {}
            }
        }
        match on_server_line(&self.watch, &self.policy, &text, &answered).line {
            ServerLine::Forward if changed => Some(text),
            ServerLine::Forward => None,
            ServerLine::Rewrite(r) => {
                let mut out = Vec::new();
                // Writing to memory cannot fail.
                let _ = r.write_to(&mut out);
                Some(out)
            }
        }
    }
}

/// What the client receives for one server line while hiding is on (SPEC §5, "Reading the
/// server fails closed too"): the client sent `tools/list` requests with the ids `requests`
/// (raw JSON texts), still pending, and the policy refuses exactly the tools named in `refused`
/// (see [`ServerPath::hiding`]). `None`: the line is forwarded unchanged. `Some(bytes)`: what
/// is written instead (empty: nothing).
///
/// # Panics
/// When `refused` cannot make a policy (a name that is not a valid glob).
pub fn filter_server_line(requests: &[&str], refused: &[&str], line: &[u8]) -> Option<Vec<u8>> {
    let path = ServerPath::hiding(refused);
    for id in requests {
        path.request(id, crate::methods::TOOLS_LIST.name);
    }
    path.server_line(line)
}

/// What the client receives for one server line when the policy governs prompts and hides
/// what it refuses (SPEC §5, §5.2): the client sent the requests `requests` (raw JSON id text,
/// method), still pending; the policy refuses the tools `exec` and `shell` and the prompts
/// `debug*` and `secret*` ([`ServerPath::governing_prompts`]). `None`: forwarded unchanged;
/// `Some(bytes)`: written instead (empty: nothing).
///
/// # Panics
/// Never for any input (the policy is fixed and valid).
pub fn filter_governed_line(requests: &[(&str, &str)], line: &[u8]) -> Option<Vec<u8>> {
    let path = ServerPath::governing_prompts(&["exec", "shell"], &["debug*", "secret*"]);
    for (id, method) in requests {
        path.request(id, method);
    }
    path.server_line(line)
}

/// How the SDKs read a string id (SPEC §5): JavaScript's `Number(s)` (`None` for `NaN`) and
/// Python's `int(s)` as canonical decimal text (`None` where it raises).
pub fn id_string_readings(s: &str) -> (Option<f64>, Option<String>) {
    crate::proxy::rpc_id::string_readings(s)
}

/// pydantic's lax integer reading of a string id, as canonical decimal text (the official
/// Python SDK before python-sdk #1178; SPEC §5): `None` where it raises.
pub fn id_lax_int_reading(s: &str) -> Option<String> {
    crate::proxy::rpc_id::lax_int_reading(s)
}

/// The value the policy reader makes of a policy file's bytes (before any policy rule is
/// checked), or its one-line error: the tree SPEC §5 says must equal what PyYAML `safe_load`
/// reads. `json` selects the `.json` reader, as the extension does.
pub fn policy_document(bytes: &[u8], json: bool) -> Result<serde_json::Value, String> {
    crate::policy::read_document(bytes, json).map_err(|e| e.to_string())
}

/// What a reader made of a server line's messages, in order: whether each is a response, and
/// the raw text of its id (`None`: none, or one the streaming scanner does not take).
pub type ServerMessages = Vec<(bool, Option<String>)>;

/// The streaming scanner of a server line too long to keep (`results.max_bytes`, SPEC §5.3) fed
/// `line` in pieces of `chunk` bytes, and the strict walk's reading of the same line when the
/// strict rules accept it, with the ids the scanner never takes (not a string or a number,
/// longer than its bound) as `None`.
pub fn stream_scan(line: &[u8], chunk: usize) -> (ServerMessages, Option<ServerMessages>) {
    use crate::proxy::stream_scan::{MAX_ID_BYTES, Seen, StreamScan};
    use crate::proxy::tools_list::walk::{self, Hooks, MessageInfo};
    let mut scan = StreamScan::new();
    let mut streamed = Vec::new();
    for piece in line.chunks(chunk.max(1)) {
        scan.feed(piece, &mut |s: Seen<'_>| {
            streamed.push((s.response, s.id.map(str::to_owned)));
        });
    }
    struct Rec(ServerMessages);
    impl<'a> Hooks<'a> for Rec {
        fn message(&mut self, m: &MessageInfo<'a>) {
            let id = m.id.filter(|id| {
                id.len() <= MAX_ID_BYTES
                    && matches!(id.as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9'))
            });
            self.0
                .push((m.has_result || m.has_error, id.map(str::to_owned)));
        }
    }
    let strict = std::str::from_utf8(line).ok().and_then(|text| {
        let mut r = Rec(Vec::new());
        walk::walk(text, &mut r).ok().map(|()| r.0)
    });
    (streamed, strict)
}

/// What the canonical writers (SPEC §4.1 `arguments_sha256`) and the recorded arguments
/// (SPEC §5.2 `record_arguments`) make of one JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalSummary {
    /// The simple transcription's form; `None` when it declines.
    pub simple: Option<String>,
    /// The general canonicalizer's form; `None` when it refuses.
    pub full: Option<String>,
    /// The recorded text (and whether it was cut) made from the simple transcription, as a
    /// `tools/call` decision records it under [`RECORDING_POLICY`]; `None` when it falls back.
    pub recorded_fast: Option<(String, bool)>,
    /// The same text as the decision line's JSON string holds it, when that path is taken.
    pub recorded_escaped: Option<String>,
    /// The recorded text made from the parsed value, the path the fast ones stand in for;
    /// `None` when `text` is not strict JSON.
    pub recorded_value: Option<(String, bool)>,
}

/// The policy [`canonical_summary`] records arguments under.
pub const RECORDING_POLICY: &str = concat!(
    "version: \"1\"\nrecord_arguments: true\n",
    "redact: [\"secret\", \"*token*\", \"api?key\", \"authorization\"]\n",
);

/// [`CanonicalSummary`] of `text`.
pub fn canonical_summary(text: &str) -> CanonicalSummary {
    static POLICY: std::sync::OnceLock<Option<crate::policy::Policy>> = std::sync::OnceLock::new();
    let policy = POLICY.get_or_init(|| {
        crate::policy::Policy::from_bytes(
            RECORDING_POLICY.as_bytes(),
            std::path::Path::new("fuzz.yaml"),
        )
        .ok()
    });
    let (simple, full) = crate::canonical::both_forms(text);
    let (recorded_fast, recorded_escaped) = match (policy, simple.as_deref()) {
        (Some(p), Some(form)) => (
            p.recorded_canonical_arguments(form),
            p.recorded_canonical_arguments_escaped(form),
        ),
        _ => (None, None),
    };
    let recorded_value = policy.as_ref().and_then(|p| {
        crate::strict_json::parse_value(text)
            .ok()
            .map(|v| p.recorded_arguments(&v))
    });
    CanonicalSummary {
        simple,
        full,
        recorded_fast,
        recorded_escaped,
        recorded_value,
    }
}
