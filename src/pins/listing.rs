//! Listing a live server's tools as an MCP client would (SPEC §10 `assay mcp pin`): start the
//! server, `initialize` (proposing the newest revision assay knows, accepting any known revision
//! the server answers with, declaring the client capabilities a desktop host declares unless
//! told otherwise), `notifications/initialized`, `tools/list` following `nextCursor`, then end
//! the server with the bounded cleanup of SPEC §3.1. For a starter policy
//! ([`list_server_catalog_as`]) it also lists the server's resources, resource templates and
//! prompts (SPEC §5.2), each only when the server declared the capability.
//!
//! Servers may offer tools only to clients with some capability (server-everything offers
//! `get-roots-list` only to clients with `roots`), so a listing without them would pin less than
//! the host is shown. With [`ClientCapabilities::Host`] the server's requests are answered as a
//! host that has nothing to give answers them: `roots/list` with no roots, `sampling/createMessage`
//! and `elicitation/create` declined with a JSON-RPC error, `ping` with `{}`.
//!
//! Every line the server writes is read with the strict rules of the wrapper (SPEC §5, the
//! `tools/list` walk): a duplicate key, a lenient variant of a member name, a tool without a
//! string `name`, a non-finite number — anything the wrapper would refuse in a session — is an
//! error, never a pin.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::pins_file::{ListedTool, ServerCatalog, ToolListing};
use crate::proxy::envelope::Envelope;
use crate::proxy::rpc_id::IdKeys;
use crate::proxy::tools_list::walk::{self, Hooks, MessageInfo};

/// The revisions assay knows, oldest first; the last is proposed.
pub const PROTOCOL_REVISIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// Longest server line read (the proxy's default bound).
const MAX_LINE: usize = 16 * 1024 * 1024;

/// Pages of `tools/list` followed at most.
const MAX_PAGES: usize = 10_000;

/// The client capabilities declared in `initialize` (SPEC §10 `--client-capabilities`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientCapabilities {
    /// What a desktop host declares: `roots` (`listChanged`), `sampling` and `elicitation`.
    #[default]
    Host,
    /// None (`"capabilities":{}`).
    None,
}

impl ClientCapabilities {
    /// The `capabilities` object of `initialize`.
    fn json(self) -> &'static str {
        match self {
            ClientCapabilities::Host => {
                r#"{"roots":{"listChanged":true},"sampling":{},"elicitation":{}}"#
            }
            ClientCapabilities::None => "{}",
        }
    }

    /// The answer (the JSON-RPC member after the id) to a request the server sent.
    fn answer(self, method: &str) -> &'static str {
        use crate::methods::{ClientFeature, PING, Target};
        let row = crate::methods::method(method);
        match (self, row.map(|r| r.target)) {
            _ if row.is_some_and(|r| r.is(&PING)) => r#""result":{}"#,
            (ClientCapabilities::Host, Some(Target::Feature(ClientFeature::Roots))) => {
                r#""result":{"roots":[]}"#
            }
            (ClientCapabilities::Host, Some(Target::Feature(_))) => {
                r#""error":{"code":-1,"message":"declined: assay mcp pin only lists tools"}"#
            }
            _ => r#""error":{"code":-32601,"message":"method not found"}"#,
        }
    }
}

/// Why a server could not be listed (`assay mcp pin` exit 3).
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// The server could not be started (126/127 for the CLI's spawn errors).
    #[error("cannot start the server: {0}")]
    Spawn(crate::error::Error),
    /// The server ended, closed its output or could not be written to.
    #[error("the server {0}")]
    Ended(String),
    /// No answer within the timeout.
    #[error("no answer to {what} within {seconds} s (--timeout)")]
    Timeout {
        /// The request that was not answered.
        what: &'static str,
        /// The bound.
        seconds: f64,
    },
    /// The server answered with a JSON-RPC error.
    #[error("the server answered {what} with an error: {error}")]
    Refused {
        /// The request.
        what: &'static str,
        /// The error object as the server sent it.
        error: String,
    },
    /// The server sent something the strict rules refuse.
    #[error("the server sent a line the strict rules refuse ({0}); nothing is pinned from it")]
    Unreadable(String),
}

/// Lists the tools of the server `command` (argv) within `timeout`. The server's stderr goes to
/// `stderr` (inherited when `None`).
///
/// # Errors
/// [`ListError`] when the server cannot be started, ends early, times out, answers an error or
/// sends anything the strict rules refuse.
pub fn list_server_tools(
    command: &[String],
    timeout: Duration,
    stderr: Option<File>,
) -> Result<ToolListing, ListError> {
    list_server_tools_as(command, timeout, stderr, ClientCapabilities::Host)
}

/// [`list_server_tools`] declaring `capabilities`.
///
/// # Errors
/// As [`list_server_tools`].
pub fn list_server_tools_as(
    command: &[String],
    timeout: Duration,
    stderr: Option<File>,
    capabilities: ClientCapabilities,
) -> Result<ToolListing, ListError> {
    list_server(command, timeout, stderr, capabilities, false)
}

/// [`list_server_tools_as`], and the server's resources, resource templates and prompts
/// ([`ToolListing::catalog`]): `resources/list` and `resources/templates/list` when its
/// `initialize` result declares `resources`, `prompts/list` when it declares `prompts`, each
/// following `nextCursor`, read as strictly as `tools/list`.
///
/// # Errors
/// As [`list_server_tools`]; also when a declared list answers an error or is unreadable.
pub fn list_server_catalog_as(
    command: &[String],
    timeout: Duration,
    stderr: Option<File>,
    capabilities: ClientCapabilities,
) -> Result<ToolListing, ListError> {
    list_server(command, timeout, stderr, capabilities, true)
}

fn list_server(
    command: &[String],
    timeout: Duration,
    stderr: Option<File>,
    capabilities: ClientCapabilities,
    catalog: bool,
) -> Result<ToolListing, ListError> {
    let mask = nix::sys::signal::SigSet::empty();
    let spawned = crate::sys::child::spawn(command, stderr, &mask).map_err(ListError::Spawn)?;
    let mut guard = crate::sys::child::ChildGuard(Some(spawned.child));
    let stdout = spawned.stdout;
    let (tx, rx) = mpsc::channel();
    // The reader ends when the server's output closes (at the latest after the cleanup's kill).
    std::thread::spawn(move || read_lines(stdout, &tx));
    let mut client = Client {
        stdin: Some(spawned.stdin),
        lines: rx,
        deadline: Instant::now() + timeout,
        timeout,
        next_id: 1,
        capabilities,
        catalog,
        initialized: false,
    };
    let listed = client.list();
    // Close the server's input first, as MCP clients do, then the bounded cleanup (SPEC §3.1).
    client.stdin = None;
    if let Some(mut child) = guard.0.take() {
        let _ = crate::sys::child::cleanup(&mut child);
    }
    listed
}

/// An MCP client over the pipes of a server the caller started and ends (`assay mcp doctor`):
/// the requests, answers to the server's requests and strict reading of [`list_server_tools`],
/// without spawning or ending the server. Its reader thread ends when the server's output closes.
pub struct PipeClient {
    client: Client,
    declared: Vec<String>,
}

impl PipeClient {
    /// A client writing to the server's `stdin` and reading its `stdout`; every answer must
    /// come within `timeout` of this call.
    pub fn new(
        stdin: File,
        stdout: File,
        timeout: Duration,
        capabilities: ClientCapabilities,
    ) -> Self {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || read_lines(stdout, &tx));
        Self {
            client: Client {
                stdin: Some(stdin),
                lines: rx,
                deadline: Instant::now() + timeout,
                timeout,
                next_id: 1,
                capabilities,
                catalog: false,
                initialized: false,
            },
            declared: Vec::new(),
        }
    }

    /// `initialize`, `notifications/initialized` and every page of `tools/list`, as
    /// [`list_server_tools`] sends them (no catalog).
    ///
    /// # Errors
    /// As [`list_server_tools`], but for starting the server.
    pub fn list_tools(&mut self) -> Result<ToolListing, ListError> {
        let (listing, declared) = self.client.tools()?;
        self.declared = declared;
        Ok(listing)
    }

    /// Whether the server answered `initialize` with a revision assay knows.
    pub fn initialized(&self) -> bool {
        self.client.initialized
    }

    /// Whether the server's `initialize` result declared `capability` (`prompts`, `resources`).
    pub fn declares(&self, capability: &str) -> bool {
        self.declared.iter().any(|d| d == capability)
    }

    /// Every page of `prompts/list`: the prompts' names.
    ///
    /// # Errors
    /// As [`list_server_tools`] for its requests.
    pub fn list_prompts(&mut self) -> Result<Vec<String>, ListError> {
        self.client.list_names(&crate::methods::PROMPTS_LIST)
    }

    /// Every page of `resources/list`: the resources' URIs.
    ///
    /// # Errors
    /// As [`list_server_tools`] for its requests.
    pub fn list_resources(&mut self) -> Result<Vec<String>, ListError> {
        self.client.list_names(&crate::methods::RESOURCES_LIST)
    }

    /// Closes the server's input (an MCP client's first step of ending a server).
    pub fn close_input(&mut self) {
        self.client.stdin = None;
    }
}

fn read_lines(stdout: File, tx: &mpsc::Sender<Result<Vec<u8>, String>>) {
    let mut r = BufReader::new(stdout);
    loop {
        let mut line = Vec::new();
        match (&mut r)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(0) => return,
            Ok(_) if line.len() > MAX_LINE => {
                let _ = tx.send(Err(format!("a line longer than {MAX_LINE} bytes")));
                return;
            }
            Ok(_) => {
                if tx.send(Ok(line)).is_err() {
                    return;
                }
            }
            Err(e) => {
                let _ = tx.send(Err(format!("output could not be read: {e}")));
                return;
            }
        }
    }
}

struct Client {
    stdin: Option<File>,
    lines: mpsc::Receiver<Result<Vec<u8>, String>>,
    deadline: Instant,
    timeout: Duration,
    next_id: u64,
    capabilities: ClientCapabilities,
    /// Also list resources, resource templates and prompts.
    catalog: bool,
    /// The server answered `initialize` with a revision assay knows.
    initialized: bool,
}

#[derive(Deserialize)]
struct InitializeResult<'a> {
    #[serde(rename = "protocolVersion")]
    protocol_version: String,
    #[serde(rename = "serverInfo", borrow)]
    server_info: Option<&'a RawValue>,
    #[serde(default)]
    instructions: Option<String>,
    #[serde(default, borrow)]
    capabilities: Option<&'a RawValue>,
}

/// The tools of a response line, and its messages.
#[derive(Default)]
struct Collect {
    tools: Vec<(String, String)>,
    problem: Option<walk::Malformed>,
    messages: usize,
}

impl<'a> Hooks<'a> for Collect {
    fn tool(&mut self, _m: usize, text: &'a str, name: &'a str) {
        let name = crate::proxy::message::as_str(name).map(std::borrow::Cow::into_owned);
        self.tools
            .push((name.unwrap_or_default(), text.to_string()));
    }
    fn message(&mut self, m: &MessageInfo<'a>) {
        self.messages += 1;
        if self.problem.is_none() {
            self.problem = m.problem;
        }
    }
}

impl Client {
    fn send(&mut self, line: &str) -> Result<(), ListError> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| ListError::Ended("input is closed".into()))?;
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|e| ListError::Ended(format!("cannot be written to: {e}")))
    }

    /// Sends a request and waits for its response line; answers the server's own requests
    /// meanwhile ([`ClientCapabilities::answer`]) and skips its notifications.
    fn request(
        &mut self,
        what: &'static str,
        method: &str,
        params: &str,
    ) -> Result<(Vec<u8>, Collect), ListError> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
        ))?;
        let want = IdKeys::of_json(&id.to_string());
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(Ok(line)) => line,
                Ok(Err(e)) => return Err(ListError::Ended(e)),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(ListError::Timeout {
                        what,
                        seconds: self.timeout.as_secs_f64(),
                    });
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(ListError::Ended(format!(
                        "closed its output before answering {what}"
                    )));
                }
            };
            let text = std::str::from_utf8(&line).map_err(|e| {
                ListError::Unreadable(format!("invalid UTF-8 at byte {}", e.valid_up_to()))
            })?;
            if text.trim().is_empty() {
                continue;
            }
            let mut collect = Collect::default();
            walk::walk(text, &mut collect).map_err(|e| ListError::Unreadable(e.to_string()))?;
            if !text.trim_start().starts_with('{') {
                return Err(ListError::Unreadable(
                    "a batch or a value that is not a JSON-RPC message".into(),
                ));
            }
            let env: Envelope<'_> =
                serde_json::from_str(text).map_err(|e| ListError::Unreadable(e.to_string()))?;
            if collect.problem == Some(walk::Malformed::EnvelopeVariant) {
                return Err(ListError::Unreadable(
                    "an `id` or `result` key spelled as a case or fold variant".into(),
                ));
            }
            match (env.id, env.method) {
                // A request from the server.
                (Some(sid), Some(method)) => {
                    let method: String = serde_json::from_str(method.get()).unwrap_or_default();
                    self.send(&format!(
                        r#"{{"jsonrpc":"2.0","id":{},{}}}"#,
                        sid.get(),
                        self.capabilities.answer(&method)
                    ))?;
                    continue;
                }
                (None, _) => continue, // a notification
                (Some(sid), None) => {
                    let answers = match (&want, IdKeys::of_json(sid.get())) {
                        (Some(w), Some(k)) => w.matches(&k),
                        _ => false,
                    };
                    if !answers {
                        continue;
                    }
                    if let Some(err) = env.error.filter(|_| env.result.is_none()) {
                        return Err(ListError::Refused {
                            what,
                            error: err.get().to_string(),
                        });
                    }
                    if env.result.is_none() {
                        return Err(ListError::Unreadable(format!(
                            "the answer to {what} has neither `result` nor `error`"
                        )));
                    }
                    return Ok((line, collect));
                }
            }
        }
    }

    /// `initialize`, `notifications/initialized` and every page of `tools/list`; the listing
    /// has no catalog, and the capability names the server declared are returned beside it.
    fn tools(&mut self) -> Result<(ToolListing, Vec<String>), ListError> {
        let (mut listing, declared) = self.initialize()?;
        listing.tools = self.pages()?;
        Ok((listing, declared))
    }

    /// `initialize` in the newest revision, then `notifications/initialized`: the listing
    /// without tools or catalog, and the capability names the server declared.
    fn initialize(&mut self) -> Result<(ToolListing, Vec<String>), ListError> {
        let newest = PROTOCOL_REVISIONS[PROTOCOL_REVISIONS.len() - 1];
        let params = format!(
            r#"{{"protocolVersion":"{newest}","capabilities":{},"clientInfo":{{"name":"assay","version":"{}"}}}}"#,
            self.capabilities.json(),
            env!("CARGO_PKG_VERSION")
        );
        let initialize = crate::methods::INITIALIZE.name;
        let (line, _) = self.request(initialize, initialize, &params)?;
        let (protocol_version, server_info, instructions, declared) = {
            let text = String::from_utf8_lossy(&line);
            let env: Envelope<'_> =
                serde_json::from_str(&text).map_err(|e| ListError::Unreadable(e.to_string()))?;
            let init: InitializeResult<'_> = env
                .result
                .ok_or_else(|| ListError::Unreadable("no initialize result".into()))
                .and_then(|r| {
                    serde_json::from_str(r.get())
                        .map_err(|e| ListError::Unreadable(format!("initialize result: {e}")))
                })?;
            // The capability names the server declared (an object's keys; anything else: none).
            let declared: Vec<String> = init
                .capabilities
                .and_then(|c| {
                    serde_json::from_str::<std::collections::BTreeMap<String, &RawValue>>(c.get())
                        .ok()
                })
                .map(|m| m.into_keys().collect())
                .unwrap_or_default();
            (
                init.protocol_version,
                init.server_info.map(|s| s.get().to_string()),
                init.instructions,
                declared,
            )
        };
        if !PROTOCOL_REVISIONS.contains(&protocol_version.as_str()) {
            return Err(ListError::Refused {
                what: initialize,
                error: format!(
                    "protocol revision {protocol_version:?}, which assay does not know (it knows {})",
                    PROTOCOL_REVISIONS.join(", ")
                ),
            });
        }
        self.initialized = true;
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","method":"{}"}}"#,
            crate::methods::NOTIFICATIONS_INITIALIZED.name
        ))?;
        Ok((
            ToolListing {
                protocol_version,
                server_info,
                instructions,
                tools: Vec::new(),
                catalog: None,
            },
            declared,
        ))
    }

    /// Every page of `tools/list` (at most [`MAX_PAGES`], no cursor twice): every tool with
    /// its definition digest, no name twice.
    fn pages(&mut self) -> Result<Vec<ListedTool>, ListError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen_cursors = std::collections::HashSet::new();
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => serde_json::json!({ "cursor": c }).to_string(),
                None => "{}".to_string(),
            };
            let tools_list = crate::methods::TOOLS_LIST.name;
            let (line, collect) = self.request(tools_list, tools_list, &params)?;
            if let Some(problem) = collect.problem {
                return Err(ListError::Unreadable(format!(
                    "tools/list result: {}",
                    problem.text()
                )));
            }
            for (name, definition) in collect.tools {
                let sha256 = crate::canonical::digest_of(&definition).ok_or_else(|| {
                    ListError::Unreadable(format!("tool {name:?} cannot be canonicalized"))
                })?;
                tools.push(ListedTool {
                    name,
                    sha256,
                    definition,
                });
            }
            cursor = next_cursor(&line, tools_list)?;
            match &cursor {
                None => break,
                Some(c) if !seen_cursors.insert(c.clone()) => {
                    return Err(ListError::Unreadable(format!(
                        "tools/list returned the cursor {c:?} twice (pagination would not end)"
                    )));
                }
                Some(_) => {}
            }
        }
        if cursor.is_some() {
            return Err(ListError::Unreadable(format!(
                "tools/list did not end within {MAX_PAGES} pages"
            )));
        }
        let mut names = std::collections::HashSet::new();
        for t in &tools {
            if !names.insert(t.name.as_str()) {
                return Err(ListError::Unreadable(format!(
                    "tool {:?} is listed twice",
                    t.name
                )));
            }
        }
        Ok(tools)
    }

    fn list(&mut self) -> Result<ToolListing, ListError> {
        let (mut listing, declared) = self.tools()?;
        if self.catalog {
            let has = |c: &str| declared.iter().any(|d| d == c);
            let resources = has("resources");
            listing.catalog = Some(ServerCatalog {
                resources: if resources {
                    Some(self.list_names(&crate::methods::RESOURCES_LIST)?)
                } else {
                    None
                },
                resource_templates: if resources {
                    Some(self.list_names(&crate::methods::RESOURCES_TEMPLATES_LIST)?)
                } else {
                    None
                },
                prompts: if has("prompts") {
                    Some(self.list_names(&crate::methods::PROMPTS_LIST)?)
                } else {
                    None
                },
            });
        }
        Ok(listing)
    }

    /// Every page of the list the listing request `row` asks for: the string naming each entry
    /// of the result's list (the row says which member holds it and how an entry is named), in
    /// order.
    fn list_names(
        &mut self,
        row: &'static crate::methods::Method,
    ) -> Result<Vec<String>, ListError> {
        let method = row.name;
        let (member, key) = row
            .list
            .map(|l| (l.member, l.key.as_str()))
            .ok_or_else(|| ListError::Unreadable(format!("{method} is not a listing request")))?;
        let mut names = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen_cursors = std::collections::HashSet::new();
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => serde_json::json!({ "cursor": c }).to_string(),
                None => "{}".to_string(),
            };
            let (line, _) = self.request(method, method, &params)?;
            names.extend(entries(&line, method, member, key)?);
            cursor = next_cursor(&line, method)?;
            match &cursor {
                None => return Ok(names),
                Some(c) if !seen_cursors.insert(c.clone()) => {
                    return Err(ListError::Unreadable(format!(
                        "{method} returned the cursor {c:?} twice (pagination would not end)"
                    )));
                }
                Some(_) => {}
            }
        }
        Err(ListError::Unreadable(format!(
            "{method} did not end within {MAX_PAGES} pages"
        )))
    }
}

/// The members of a response line's `result` (already read strictly), refusing lenient
/// variants of `expected` names (readers disagree on them).
fn result_members<'a>(
    text: &'a str,
    method: &str,
    expected: &[&str],
) -> Result<Option<std::collections::BTreeMap<String, &'a RawValue>>, ListError> {
    let env: Envelope<'_> =
        serde_json::from_str(text).map_err(|e| ListError::Unreadable(e.to_string()))?;
    let Some(result) = env.result else {
        return Ok(None);
    };
    let members: std::collections::BTreeMap<String, &RawValue> = serde_json::from_str(result.get())
        .map_err(|_| ListError::Unreadable(format!("{method} result is not an object")))?;
    for key in members.keys() {
        if let Some(name) = expected
            .iter()
            .find(|name| key != **name && crate::lenient::same(key, name))
        {
            return Err(ListError::Unreadable(format!(
                "{method} result has {key:?}, a variant of `{name}`"
            )));
        }
    }
    Ok(Some(members))
}

/// The string `key` of each object of the result's `member` array (absent: none).
fn entries(line: &[u8], method: &str, member: &str, key: &str) -> Result<Vec<String>, ListError> {
    let text = String::from_utf8_lossy(line);
    let Some(members) = result_members(&text, method, &[member])? else {
        return Ok(Vec::new());
    };
    let Some(list) = members.get(member) else {
        return Ok(Vec::new());
    };
    let items: Vec<std::collections::BTreeMap<String, &RawValue>> =
        serde_json::from_str(list.get()).map_err(|_| {
            ListError::Unreadable(format!(
                "{method} result: `{member}` is not a list of objects"
            ))
        })?;
    items
        .iter()
        .map(|item| {
            for k in item.keys() {
                if k != key && crate::lenient::same(k, key) {
                    return Err(ListError::Unreadable(format!(
                        "{method} result: an entry has {k:?}, a variant of `{key}`"
                    )));
                }
            }
            item.get(key)
                .and_then(|v| serde_json::from_str::<String>(v.get()).ok())
                .ok_or_else(|| {
                    ListError::Unreadable(format!(
                        "{method} result: an entry without a string `{key}`"
                    ))
                })
        })
        .collect()
}

/// The `nextCursor` of a list response line (already read strictly): a string, or
/// absent/null. A lenient variant of the key (`NextCursor`) is refused: readers disagree on it.
fn next_cursor(line: &[u8], method: &str) -> Result<Option<String>, ListError> {
    let text = String::from_utf8_lossy(line);
    let Some(members) = result_members(&text, method, &["nextCursor"])? else {
        return Ok(None);
    };
    match members.get("nextCursor").map(|v| v.get()) {
        None | Some("null") => Ok(None),
        Some(raw) => serde_json::from_str::<String>(raw)
            .map(Some)
            .map_err(|_| ListError::Unreadable("`nextCursor` is not a string".into())),
    }
}
