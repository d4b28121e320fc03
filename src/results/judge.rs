//! The judge of one answer (SPEC §5.3): the bytes of one JSON-RPC response to a governed
//! request in, what reaches the client and what the evidence says of it out.
//!
//! The text of an answer is every string value under its `result` (or `error`), but the values
//! of `blob` and `mimeType` members and the `data` of a content part (base64 media, not text a
//! model reads as words). Each text is, in this order: stripped (`strip`), matched against
//! `deny_patterns`, scanned for secrets (one `RegexSet` pass; `secrets`). A text that changes
//! (stripped, or a secret redacted) is written back as a new JSON string in place of its token:
//! every byte outside the changed strings stays as the server wrote it.

use std::collections::BTreeMap;

use super::walk::{self, Seg, Visit};
use crate::methods::ResultKind as Answer;
use crate::policy::ReasonCode;
use crate::policy::results::{Results, SchemaMode, SecretMode, strip};

/// Findings recorded per answer at most (the event says how many there were).
pub const MAX_FINDINGS: usize = 64;

/// Content-part kinds recorded per answer at most.
const MAX_KINDS: usize = 16;

/// One thing found in an answer: what kind, which rule, where (a JSON Pointer). Never the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// `secret`, `pattern`, `strip`, `schema`, `parts`, `size` or `unreadable`.
    pub kind: &'static str,
    /// The rule: a secret rule id, `deny_patterns[N]`, a strip class, `outputSchema`,
    /// `max_content_parts`, `max_bytes`.
    pub rule: String,
    /// Where, as a JSON Pointer into the message (`""`: the whole message).
    pub path: String,
}

/// The judgement of one answer.
#[derive(Debug, Default)]
pub struct Judged {
    /// The refusal's code when the answer is refused (the client gets the refusal instead).
    pub refused: Option<ReasonCode>,
    /// The message rewritten (a text stripped or redacted); `None`: unchanged.
    pub rewritten: Option<Vec<u8>>,
    /// The first [`MAX_FINDINGS`] findings.
    pub findings: Vec<Finding>,
    /// How many findings there were.
    pub findings_total: u64,
    /// Content parts by kind (`text`, `image`, `resource`, …; `blob` for a binary resource
    /// content, `value` for a completion value).
    pub parts: BTreeMap<String, u64>,
    /// `result.isError` is `true`, or the message is an error response.
    pub is_error: bool,
}

impl Judged {
    fn find(&mut self, kind: &'static str, rule: impl Into<String>, path: String) {
        self.findings_total += 1;
        if self.findings.len() < MAX_FINDINGS {
            self.findings.push(Finding {
                kind,
                rule: rule.into(),
                path,
            });
        }
    }

    fn refuse(&mut self, code: ReasonCode) {
        self.refused.get_or_insert(code);
    }
}

/// What a governed request asked, as far as its answer's judging and recording depend on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// The method, as the method table names it.
    pub method: &'static str,
    /// What its answer holds.
    pub answer: Answer,
    /// The tool a `tools/call` named.
    pub tool: Option<Box<str>>,
    /// The `seq` of the request's decision event, when it had one.
    pub decision: Option<u64>,
}

impl Asked {
    /// What a request of `method` (decoded) asked, when `results` judges its answers.
    pub fn of(method: &str, tool: Option<&str>, decision: Option<u64>) -> Option<Asked> {
        let (method, answer) = crate::methods::judged_answer(method)?;
        Some(Asked {
            method,
            answer,
            tool: tool
                .filter(|_| answer == Answer::ToolResult)
                .map(Into::into),
            decision,
        })
    }
}

/// The member names under `result` that hold content parts, per method, and the kind of each.
fn part_kind<'p>(answer: Answer, path: &'p [Seg<'_>]) -> Option<PartAt<'p>> {
    match (answer, path) {
        (Answer::ToolResult, [r, c, Seg::Index(_), t])
            if r.is("result") && c.is("content") && t.is("type") =>
        {
            Some(PartAt::Type)
        }
        (Answer::PromptMessages, [r, m, Seg::Index(_), c, t])
            if r.is("result") && m.is("messages") && c.is("content") && t.is("type") =>
        {
            Some(PartAt::Type)
        }
        (Answer::ResourceContents, [r, c, Seg::Index(_), Seg::Key(k)])
            if r.is("result") && c.is("contents") && (k == "text" || k == "blob") =>
        {
            Some(PartAt::Named(k))
        }
        (Answer::Completion, [r, c, v, Seg::Index(_)])
            if r.is("result") && c.is("completion") && v.is("values") =>
        {
            Some(PartAt::Named("value"))
        }
        _ => None,
    }
}

enum PartAt<'p> {
    /// The string value is the part's kind.
    Type,
    /// The part's kind is this name.
    Named(&'p str),
}

/// Whether a string at `path` is text the model reads.
fn is_text(path: &[Seg<'_>]) -> bool {
    let Some(first) = path.first() else {
        return false;
    };
    if !(first.is("result") || first.is("error")) {
        return false;
    }
    match path.last() {
        Some(Seg::Key(k)) if k == "blob" || k == "mimeType" => false,
        // The base64 `data` of an image or audio content part.
        Some(Seg::Key(k)) if k == "data" => {
            !matches!(path, [_, c, Seg::Index(_), _] if c.is("content"))
                && !matches!(path, [_, m, Seg::Index(_), c, _] if m.is("messages") && c.is("content"))
        }
        _ => true,
    }
}

struct Judge<'a, 'r> {
    text: &'a str,
    results: &'r Results,
    answer: Answer,
    out: Judged,
    /// Replacements: the span of a string token and its new token.
    edits: Vec<(usize, usize, String)>,
    structured: Option<(usize, usize)>,
    has_result: bool,
    /// Whether an option reads the texts (strip, deny patterns, secrets): without one, no text
    /// is decoded.
    reads_text: bool,
}

impl<'a> Visit<'a> for Judge<'a, '_> {
    fn string(&mut self, path: &[Seg<'a>], start: usize, end: usize) {
        let raw = self.text.get(start..end).unwrap_or_default();
        match part_kind(self.answer, path) {
            Some(PartAt::Type) => self.part(&walk::decode(raw)),
            Some(PartAt::Named(k)) => self.part(k),
            None => {}
        }
        if path.len() == 2 && path[0].is("result") && path[1].is("structuredContent") {
            self.structured = Some((start, end));
        }
        if path.first().is_some_and(|s| s.is("error")) {
            self.out.is_error = true;
        }
        if self.reads_text && is_text(path) {
            self.text_at(path, start, end, raw);
        }
    }

    fn scalar(&mut self, path: &[Seg<'a>], raw: &'a str) {
        if let Some(PartAt::Named(k)) = part_kind(self.answer, path) {
            self.part(k);
        }
        match path {
            [r, e] if r.is("result") && e.is("isError") && raw == "true" => {
                self.out.is_error = true
            }
            [r, s] if r.is("result") && s.is("structuredContent") => {
                self.structured = Some((0, 0));
            }
            [r, ..] if r.is("result") => self.has_result = true,
            [e, ..] if e.is("error") => self.out.is_error = true,
            _ => {}
        }
    }

    fn close(&mut self, path: &[Seg<'a>], start: usize, end: usize) {
        match path {
            [r] if r.is("result") => self.has_result = true,
            [e] if e.is("error") => self.out.is_error = true,
            [r, s] if r.is("result") && s.is("structuredContent") => {
                self.structured = Some((start, end));
            }
            _ => {}
        }
    }
}

impl Judge<'_, '_> {
    fn part(&mut self, kind: &str) {
        if let Some(n) = self.out.parts.get_mut(kind) {
            *n += 1;
        } else if self.out.parts.len() < MAX_KINDS {
            self.out.parts.insert(kind.to_owned(), 1);
        } else {
            *self.out.parts.entry("(other)".to_owned()).or_insert(0) += 1;
        }
    }

    /// Judges one text: strip, deny patterns, secrets; an edit when it changed.
    fn text_at(&mut self, path: &[Seg<'_>], start: usize, end: usize, raw: &str) {
        let r = self.results;
        let decoded = walk::decode(raw);
        let mut text: std::borrow::Cow<'_, str> = std::borrow::Cow::Borrowed(&decoded);
        let mut changed = false;
        if r.strip().any() {
            if let Some((stripped, found)) = strip(&text, r.strip()) {
                for class in found.names() {
                    self.out.find("strip", class, walk::pointer(path));
                }
                text = std::borrow::Cow::Owned(stripped);
                changed = true;
            }
        }
        let (denied, found) = r.scan(&text);
        if let Some(i) = denied {
            self.out.find(
                "pattern",
                format!("deny_patterns[{i}]"),
                walk::pointer(path),
            );
            self.out.refuse(ReasonCode::P_RESULT_PATTERN);
        }
        if let Some(rules) = r.secret_rules() {
            if !found.is_empty() {
                for m in &found {
                    self.out
                        .find("secret", rules.rule_id(m.rule), walk::pointer(path));
                }
                match r.secrets() {
                    SecretMode::Refuse => self.out.refuse(ReasonCode::P_RESULT_SECRET),
                    SecretMode::Redact => {
                        let mut out = String::with_capacity(text.len());
                        let mut at = 0;
                        for m in &found {
                            out.push_str(text.get(at..m.start).unwrap_or_default());
                            out.push_str("[redacted:");
                            out.push_str(rules.rule_id(m.rule));
                            out.push(']');
                            at = m.end;
                        }
                        out.push_str(text.get(at..).unwrap_or_default());
                        text = std::borrow::Cow::Owned(out);
                        changed = true;
                    }
                    SecretMode::Flag | SecretMode::Off => {}
                }
            }
        }
        if changed {
            let token = serde_json::to_string(&*text).unwrap_or_else(|_| "\"\"".to_owned());
            self.edits.push((start, end, token));
        }
    }
}

/// The judgement of an answer over `results.max_bytes`: refused, with its `size` finding.
pub fn too_large() -> Judged {
    let mut out = Judged::default();
    out.find("size", "max_bytes", String::new());
    out.refuse(ReasonCode::P_RESULT_TOO_LARGE);
    out
}

/// The judgement of an answer the strict rules refuse: refused, with its `unreadable` finding.
pub fn unreadable() -> Judged {
    let mut out = Judged::default();
    out.find("unreadable", "strict", String::new());
    out.refuse(ReasonCode::P_RESULT_UNREADABLE);
    out
}

/// Judges one message `msg` (a JSON-RPC response, no terminator) answering `asked`, against
/// `results`; `schema` validates the `structuredContent` of a `tools/call` answer (the tool's
/// `outputSchema`, when one is known).
pub fn judge(
    msg: &[u8],
    asked: &Asked,
    results: &Results,
    schema: Option<&jsonschema::Validator>,
) -> Judged {
    if results
        .max_bytes()
        .is_some_and(|max| msg.len() as u64 > max)
    {
        return too_large();
    }
    let Ok(text) = std::str::from_utf8(msg) else {
        return unreadable();
    };
    let mut j = Judge {
        text,
        results,
        answer: asked.answer,
        out: Judged::default(),
        edits: Vec::new(),
        structured: None,
        has_result: false,
        reads_text: results.reads_text(),
    };
    // One pass: the strict scan walks the answer as it reads it; what the judge saw of a
    // refused answer is dropped.
    if walk::scan_walk(text, walk::MAX_DEPTH, &mut j).is_err() {
        return unreadable();
    }
    let Judge {
        mut out,
        edits,
        structured,
        has_result,
        ..
    } = j;
    if let Some(max) = results.max_content_parts() {
        if out.parts.values().sum::<u64>() > max {
            out.find("parts", "max_content_parts", "/result".to_owned());
            out.refuse(ReasonCode::P_RESULT_TOO_LARGE);
        }
    }
    if let (Some(mode), Some(schema), true) = (results.output_schema(), schema, has_result) {
        let valid = match structured {
            // A tool with an outputSchema must answer with structuredContent unless isError.
            None => out.is_error,
            Some((s, e)) => text
                .get(s..e)
                .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
                .is_some_and(|v| schema.is_valid(&v)),
        };
        if !valid {
            out.find(
                "schema",
                "outputSchema",
                "/result/structuredContent".to_owned(),
            );
            if mode == SchemaMode::Enforce {
                out.refuse(ReasonCode::P_RESULT_SCHEMA);
            }
        }
    }
    if out.refused.is_none() && !edits.is_empty() {
        let mut line = Vec::with_capacity(msg.len());
        let mut at = 0;
        for (s, e, token) in &edits {
            line.extend_from_slice(msg.get(at..*s).unwrap_or_default());
            line.extend_from_slice(token.as_bytes());
            at = *e;
        }
        line.extend_from_slice(msg.get(at..).unwrap_or_default());
        out.rewritten = Some(line);
    }
    out
}
