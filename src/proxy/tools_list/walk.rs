//! One walk over a server line with the client-line rules (SPEC §3 item 6: strict UTF-8 JSON,
//! no duplicate keys after lenient normalization, finite numbers, the depth bound): the
//! messages the line holds and, inside each, the parts a `tools/list` result is made of.
//!
//! The walk is the strict scanner itself ([`strict_json::scan_with`]) with a visitor, so a
//! server line is judged by exactly the rules a client line is. Keys are recognised by their
//! lenient class: `ID`, `\u0069d` and `id` all name the id (a Go `encoding/json` client reads
//! each of them), but only the exact spelling makes a well-formed result. The scanner refuses
//! two keys of one class in one object, so every member read here is the only one of its class.
//!
//! The walk builds nothing: it reports byte offsets and borrowed text to its [`Hooks`], so the
//! passes over a line (find the candidates, judge their tools, write the result) cost no memory
//! proportional to the line.

use crate::lenient;
use crate::proxy::message::CLIENT_MAX_DEPTH;
use crate::strict_json::{self, ScanError, Visitor};

/// Why an answer to a client's `tools/list` cannot be read as a `tools/list` result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Malformed {
    /// The message's `id` or `result` member is spelled as a lenient variant (`ID`, `Result`).
    EnvelopeVariant,
    /// `result` is not an object.
    ResultNotObject,
    /// `result` has no `tools` member.
    NoTools,
    /// `result` has a lenient variant of `tools` (`Tools`).
    ToolsVariant,
    /// `tools` is not an array.
    ToolsNotArray,
    /// An element of `tools` is not an object.
    ToolNotObject,
    /// A tool has no `name` member.
    NameMissing,
    /// A tool has a lenient variant of `name` (`Name`).
    NameVariant,
    /// A tool's `name` is not a string.
    NameNotString,
    /// Two tools have the same name (after lenient normalization): which definition the model
    /// saw cannot be told (SPEC §5).
    DuplicateName,
    /// More tools than a listing event records ([`crate::proxy::tools_list::MAX_LISTED_TOOLS`]).
    TooManyTools,
    /// A tool's definition has no RFC 8785 digest (its canonical form is longer than the
    /// canonicalizer's bound): what the model would be shown could not be recorded (SPEC §5.1).
    Undigestible,
}

impl Malformed {
    /// What is wrong, for the error that replaces the answer.
    pub(crate) fn text(self) -> &'static str {
        match self {
            Malformed::EnvelopeVariant => "its `id` or `result` key is a case or fold variant",
            Malformed::ResultNotObject => "`result` is not an object",
            Malformed::NoTools => "`result` has no `tools` array",
            Malformed::ToolsVariant => "`result` has a case or fold variant of `tools`",
            Malformed::ToolsNotArray => "`tools` is not an array",
            Malformed::ToolNotObject => "a tool is not an object",
            Malformed::NameMissing => "a tool has no `name`",
            Malformed::NameVariant => "a tool has a case or fold variant of `name`",
            Malformed::NameNotString => "a tool's `name` is not a string",
            Malformed::DuplicateName => "it names the same tool twice",
            Malformed::TooManyTools => {
                "it lists more tools than the wrapper records of one listing"
            }
            Malformed::Undigestible => {
                "a tool's definition has no RFC 8785 digest (its canonical form is over the bound)"
            }
        }
    }
}

/// One message of a line: the top-level object, or an object element of a top-level array.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MessageInfo<'a> {
    /// Byte offset of the message's `{`.
    pub start: usize,
    /// Byte offset just past its `}`.
    pub end: usize,
    /// The raw text of its id member (`id` or a lenient variant), if any.
    pub id: Option<&'a str>,
    /// It has a `result` member (or a lenient variant).
    pub has_result: bool,
    /// It has an `error` member (or a lenient variant).
    pub has_error: bool,
    /// The first reason it is not a well-formed `tools/list` result, if any.
    pub problem: Option<Malformed>,
}

/// What a pass over a line does with what the walk finds. Tools and `tools` arrays are reported
/// for every message, before the walk knows the message's id (members come in any order).
pub(crate) trait Hooks<'a> {
    /// The `tools` array of the message starting at `message` opens at byte `at` (its `[`).
    fn tools_open(&mut self, _message: usize, _at: usize) {}
    /// A tool of that array: its text and the raw text of its string `name` (quotes included).
    fn tool(&mut self, _message: usize, _text: &'a str, _name: &'a str) {}
    /// The `tools` array ends; `at` is the offset of its `]`.
    fn tools_close(&mut self, _message: usize, _at: usize) {}
    /// A message is complete.
    fn message(&mut self, _info: &MessageInfo<'a>) {}
}

/// Walks `text` (one line, UTF-8) with the client-line rules, reporting to `hooks`.
///
/// # Errors
/// The strict scanner's refusal: the line cannot be read.
pub(crate) fn walk<'a, H: Hooks<'a>>(text: &'a str, hooks: &mut H) -> Result<(), ScanError> {
    let mut w = Walker {
        base: text.as_ptr() as usize,
        hooks,
        cur: Current::default(),
        tool_name: None,
        tool_problem: None,
    };
    strict_json::scan_with(text, CLIENT_MAX_DEPTH, &mut w)
}

// Roles of containers and slots of values (see `strict_json::Visitor`).
const ROLE_MESSAGE: u8 = 1;
const ROLE_BATCH: u8 = 2;
const ROLE_RESULT: u8 = 3;
const ROLE_TOOLS: u8 = 4;
const ROLE_TOOL: u8 = 5;
const SLOT_ROOT: u8 = 1;
const SLOT_ELEMENT: u8 = 2;
const SLOT_ID: u8 = 3;
const SLOT_RESULT: u8 = 4;
const SLOT_TOOLS: u8 = 5;
const SLOT_TOOL: u8 = 6;
const SLOT_NAME: u8 = 7;
const SLOT_ERROR: u8 = 8;

#[derive(Default)]
struct Current<'a> {
    start: usize,
    id: Option<&'a str>,
    has_result: bool,
    has_error: bool,
    tools_seen: bool,
    problem: Option<Malformed>,
}

impl Current<'_> {
    fn flag(&mut self, m: Malformed) {
        self.problem.get_or_insert(m);
    }
}

struct Walker<'a, 'h, H> {
    base: usize,
    hooks: &'h mut H,
    cur: Current<'a>,
    tool_name: Option<&'a str>,
    tool_problem: Option<Malformed>,
}

impl<H> Walker<'_, '_, H> {
    fn offset(&self, part: &str) -> usize {
        (part.as_ptr() as usize).saturating_sub(self.base)
    }
}

/// Which member of `names` the raw key is (by lenient class), and whether it is spelled exactly.
pub(crate) fn member(raw: &str, plain: bool, name: &str) -> Option<bool> {
    if plain {
        // ASCII without escapes: a variant is an ASCII case variant of the same length.
        if raw == name {
            return Some(true);
        }
        return (raw.len() == name.len() && raw.eq_ignore_ascii_case(name)).then_some(false);
    }
    if lenient::decodes_to(raw, name) {
        Some(true)
    } else if lenient::same_key(raw, name) {
        Some(false)
    } else {
        None
    }
}

impl<'a, H: Hooks<'a>> Visitor<'a> for Walker<'a, '_, H> {
    const LENIENT: bool = true;

    fn root(&mut self) -> u8 {
        SLOT_ROOT
    }

    fn open(&mut self, slot: u8, object: bool, at: usize) -> u8 {
        match (slot, object) {
            (SLOT_ROOT | SLOT_ELEMENT, true) => {
                self.cur = Current {
                    start: at,
                    ..Current::default()
                };
                ROLE_MESSAGE
            }
            (SLOT_ROOT, false) => ROLE_BATCH,
            (SLOT_RESULT, true) => ROLE_RESULT,
            (SLOT_TOOLS, false) => {
                self.hooks.tools_open(self.cur.start, at);
                ROLE_TOOLS
            }
            (SLOT_TOOL, true) => {
                self.tool_name = None;
                self.tool_problem = None;
                ROLE_TOOL
            }
            _ => 0,
        }
    }

    fn element(&mut self, role: u8) -> u8 {
        match role {
            ROLE_BATCH => SLOT_ELEMENT,
            ROLE_TOOLS => SLOT_TOOL,
            _ => 0,
        }
    }

    fn key(&mut self, role: u8, raw: &'a str, plain: bool, _at: usize) -> Result<u8, ScanError> {
        Ok(match role {
            ROLE_MESSAGE => {
                if let Some(exact) = member(raw, plain, "id") {
                    if !exact {
                        self.cur.flag(Malformed::EnvelopeVariant);
                    }
                    SLOT_ID
                } else if let Some(exact) = member(raw, plain, "result") {
                    if !exact {
                        self.cur.flag(Malformed::EnvelopeVariant);
                    }
                    SLOT_RESULT
                } else if member(raw, plain, "error").is_some() {
                    SLOT_ERROR
                } else {
                    0
                }
            }
            ROLE_RESULT => match member(raw, plain, "tools") {
                Some(true) => SLOT_TOOLS,
                Some(false) => {
                    self.cur.flag(Malformed::ToolsVariant);
                    0
                }
                None => 0,
            },
            ROLE_TOOL => match member(raw, plain, "name") {
                Some(true) => SLOT_NAME,
                Some(false) => {
                    self.tool_problem = Some(Malformed::NameVariant);
                    0
                }
                None => 0,
            },
            _ => 0,
        })
    }

    fn value(&mut self, slot: u8, role: u8, text: &'a str) -> Result<(), ScanError> {
        match slot {
            SLOT_ID => self.cur.id = Some(text),
            SLOT_ERROR => self.cur.has_error = true,
            SLOT_RESULT => {
                self.cur.has_result = true;
                if role != ROLE_RESULT {
                    self.cur.flag(Malformed::ResultNotObject);
                }
            }
            SLOT_TOOLS => {
                self.cur.tools_seen = true;
                if role == ROLE_TOOLS {
                    let close = self.offset(text) + text.len().saturating_sub(1);
                    self.hooks.tools_close(self.cur.start, close);
                } else {
                    self.cur.flag(Malformed::ToolsNotArray);
                }
            }
            SLOT_NAME => {
                if !text.starts_with('"') {
                    self.tool_problem = Some(Malformed::NameNotString);
                }
                self.tool_name = Some(text);
            }
            SLOT_TOOL => match (role, self.tool_problem, self.tool_name) {
                (ROLE_TOOL, None, Some(name)) => self.hooks.tool(self.cur.start, text, name),
                (ROLE_TOOL, Some(problem), _) => self.cur.flag(problem),
                (ROLE_TOOL, None, None) => self.cur.flag(Malformed::NameMissing),
                _ => self.cur.flag(Malformed::ToolNotObject),
            },
            SLOT_ROOT | SLOT_ELEMENT if role == ROLE_MESSAGE => {
                if self.cur.has_result && !self.cur.tools_seen {
                    self.cur.flag(Malformed::NoTools);
                }
                let info = MessageInfo {
                    start: self.cur.start,
                    end: self.cur.start + text.len(),
                    id: self.cur.id,
                    has_result: self.cur.has_result,
                    has_error: self.cur.has_error,
                    problem: self.cur.problem,
                };
                self.hooks.message(&info);
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Record {
        tools: Vec<String>,
        messages: Vec<(Option<String>, bool, Option<Malformed>)>,
        arrays: Vec<(usize, usize)>,
        open: usize,
    }

    impl<'a> Hooks<'a> for Record {
        fn tools_open(&mut self, _m: usize, at: usize) {
            self.open = at;
        }
        fn tool(&mut self, _m: usize, _text: &'a str, name: &'a str) {
            self.tools.push(name.to_string());
        }
        fn tools_close(&mut self, _m: usize, at: usize) {
            self.arrays.push((self.open, at));
        }
        fn message(&mut self, i: &MessageInfo<'a>) {
            self.messages
                .push((i.id.map(str::to_string), i.has_result, i.problem));
        }
    }

    fn walked(line: &str) -> Result<Record, ScanError> {
        let mut r = Record::default();
        walk(line, &mut r).map(|()| r)
    }

    #[test]
    fn reads_messages_and_tools() {
        let line = r#"{"jsonrpc":"2.0","result":{"tools":[{"name":"a"},{"x":1,"name":"b\u0063"}],"nextCursor":"c"},"id":1}"#;
        let r = walked(line).unwrap();
        assert_eq!(r.tools, [r#""a""#, r#""b\u0063""#]);
        assert_eq!(r.messages, [(Some("1".into()), true, None)]);
        let (open, close) = r.arrays[0];
        assert_eq!(&line[open..open + 1], "[");
        assert_eq!(&line[close..close + 1], "]");
    }

    #[test]
    fn finds_every_way_a_result_is_not_a_tools_list() {
        for (line, problem) in [
            (
                r#"{"ID":1,"result":{"tools":[]}}"#,
                Malformed::EnvelopeVariant,
            ),
            (
                r#"{"\u0069d":1,"Result":{"tools":[]}}"#,
                Malformed::EnvelopeVariant,
            ),
            (r#"{"id":1,"result":true}"#, Malformed::ResultNotObject),
            (r#"{"id":1,"result":{}}"#, Malformed::NoTools),
            (r#"{"id":1,"result":{"Tools":[]}}"#, Malformed::ToolsVariant),
            (
                r#"{"id":1,"result":{"tools":{}}}"#,
                Malformed::ToolsNotArray,
            ),
            (
                r#"{"id":1,"result":{"tools":[0]}}"#,
                Malformed::ToolNotObject,
            ),
            (
                r#"{"id":1,"result":{"tools":[true]}}"#,
                Malformed::ToolNotObject,
            ),
            (
                r#"{"id":1,"result":{"tools":[{}]}}"#,
                Malformed::NameMissing,
            ),
            (
                r#"{"id":1,"result":{"tools":[{"Name":"x"}]}}"#,
                Malformed::NameVariant,
            ),
            (
                r#"{"id":1,"result":{"tools":[{"name":1}]}}"#,
                Malformed::NameNotString,
            ),
            (
                r#"{"id":1,"result":{"tools":[{"name\u0000":"x"}]}}"#,
                Malformed::NameVariant,
            ),
        ] {
            let r = walked(line).unwrap();
            assert_eq!(r.messages.len(), 1, "{line}");
            assert_eq!(r.messages[0].2, Some(problem), "{line}");
            assert!(r.messages[0].1, "{line}");
        }
    }

    #[test]
    fn batches_hold_several_messages() {
        let r = walked(r#"[{"id":"a","result":{"tools":[]}}, 3, {"ID":2,"error":{}}, [{"id":9}]]"#)
            .unwrap();
        assert_eq!(
            r.messages,
            [
                (Some(r#""a""#.into()), true, None),
                (Some("2".into()), false, Some(Malformed::EnvelopeVariant)),
            ]
        );
    }

    #[test]
    fn refuses_what_a_client_line_may_not_be() {
        // A name holding U+0001, a control character (built here: the sources hold none).
        let control = format!(
            "{{\"id\":1,\"result\":{{\"tools\":[{{\"name\":\"{}\"}}]}}}}",
            char::from(1)
        );
        for line in [
            r#"{"id":1,"result":{"tools":[],"tools":[]}}"#,
            r#"{"id":1,"Id":2,"result":{"tools":[]}}"#,
            r#"{"id":1,"result":{"tools":[{"name":"a","NAME":"b"}]}}"#,
            r#"{"id":1e400,"result":{"tools":[]}}"#,
            control.as_str(),
        ] {
            assert!(walked(line).is_err(), "{line}");
        }
    }
}
