//! Every MCP method of every revision the product knows (2024-11-05 through 2026-07-28), and
//! what governs it (SPEC §5, §5.1, §5.2): the one table, and the one home of every method name.
//! Each row says who sends the method, which policy section governs it, how its name or URI is
//! read from `params`, which result member holds the list it asks for and how an entry of it is
//! named, which event records it and so which reason codes it can carry. Every module that
//! handles a method asks this table (by the row's `static`, or [`method`] for a name read off a
//! line); no method name is written anywhere else (a test reads the sources and fails when one
//! is). `docs/methods.md` lists the same rows for people, and a test fails when the two disagree
//! or when the proxy judges a method differently from what its row says.
//!
//! Imports only the reason-code table ([`Carrier`]), itself a leaf.

use crate::reason_code::Carrier;

/// What governs a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Governor {
    /// The top-level rules (`allow`, `deny`, `constraints`, `schemas`, `limits`): a `tools/call`.
    Tools,
    /// The listing filter (`hide_refused_tools`, `pins`): what a `tools/list` answer shows.
    ToolsListing,
    /// The `resources` section, by the resource URIs the request names.
    Resources,
    /// The `resources` section under `hide_refused_tools`: what a list answer shows.
    ResourcesListing,
    /// The `prompts` section, by the prompt name.
    Prompts,
    /// The `prompts` section under `hide_refused_tools`: what a `prompts/list` answer shows.
    PromptsListing,
    /// `prompts` or `resources`, by what the request's `ref` names.
    PromptsOrResources,
    /// The `client_features` section: what the server asks of the client.
    ClientFeatures,
    /// `pins`: the server's `instructions` in the answer.
    Instructions,
    /// Nothing: the method reaches nothing a policy governs (the reason is in [`Method::why`]).
    Nothing,
}

impl Governor {
    /// How `docs/methods.md` names it.
    pub fn label(self) -> &'static str {
        match self {
            Governor::Tools => "tools (allow, deny, constraints, schemas, limits)",
            Governor::ToolsListing => "hide_refused_tools, pins",
            Governor::Resources => "resources",
            Governor::ResourcesListing => "resources (hide_refused_tools)",
            Governor::Prompts => "prompts",
            Governor::PromptsListing => "prompts (hide_refused_tools)",
            Governor::PromptsOrResources => "prompts or resources, by its ref",
            Governor::ClientFeatures => "client_features",
            Governor::Instructions => "pins (instructions)",
            Governor::Nothing => "nothing",
        }
    }

    /// Where a judgement of a method it governs is written, and so which reason codes it can
    /// carry (`ReasonCode::carried_by`): `None` for [`Governor::Nothing`].
    pub fn carrier(self) -> Option<Carrier> {
        Some(match self {
            Governor::Tools => Carrier::ToolDecision,
            Governor::Resources
            | Governor::Prompts
            | Governor::PromptsOrResources
            | Governor::ClientFeatures => Carrier::McpDecision,
            Governor::ToolsListing => Carrier::ToolsList,
            Governor::ResourcesListing => Carrier::ResourcesList,
            Governor::PromptsListing => Carrier::PromptsList,
            Governor::Instructions => Carrier::Instructions,
            Governor::Nothing => return None,
        })
    }
}

/// Who sends a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum From {
    /// The client (a request or notification to the server).
    Client,
    /// The server.
    Server,
    /// Either side.
    Both,
}

impl From {
    /// How `docs/methods.md` names it.
    pub fn label(self) -> &'static str {
        match self {
            From::Client => "client",
            From::Server => "server",
            From::Both => "both",
        }
    }
}

/// Something a server asks of the client (SPEC §5.2 `client_features`): the request methods
/// that ask it are the rows whose [`Target`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientFeature {
    /// `sampling/createMessage`, or a sampling input request in an `input_required` result.
    Sampling,
    /// `elicitation/create`, or an elicitation input request.
    Elicitation,
    /// `roots/list`, or a roots input request.
    Roots,
}

impl ClientFeature {
    /// Every feature, in the order the policy documents them.
    pub const ALL: [ClientFeature; 3] = [
        ClientFeature::Sampling,
        ClientFeature::Elicitation,
        ClientFeature::Roots,
    ];

    /// The policy key: `"sampling"`, `"elicitation"` or `"roots"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ClientFeature::Sampling => "sampling",
            ClientFeature::Elicitation => "elicitation",
            ClientFeature::Roots => "roots",
        }
    }
}

/// How the thing a request is judged by is read from its `params`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Nothing is read.
    None,
    /// `params.name` (a tool or prompt name).
    Name,
    /// `params.uri` (a resource URI).
    Uri,
    /// `params.ref`: `{type: ref/prompt, name}` or `{type: ref/resource, uri}`.
    Ref,
    /// `params.notifications.resourceSubscriptions`: resource URIs.
    ResourceSubscriptions,
    /// Nothing is read: the request asks for this client feature.
    Feature(ClientFeature),
}

impl Target {
    /// How `docs/methods.md` names it.
    pub fn label(self) -> &'static str {
        match self {
            Target::None => "-",
            Target::Name => "params.name",
            Target::Uri => "params.uri",
            Target::Ref => "params.ref",
            Target::ResourceSubscriptions => "params.notifications.resourceSubscriptions",
            Target::Feature(f) => f.as_str(),
        }
    }

    /// The client feature a server request asks for.
    pub fn feature(self) -> Option<ClientFeature> {
        match self {
            Target::Feature(f) => Some(f),
            _ => None,
        }
    }
}

/// The member of an entry of a listed list that names it (and that the policy judges).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKey {
    /// `name`: a tool or a prompt.
    Name,
    /// `uri`: a resource.
    Uri,
    /// `uriTemplate`: a resource template.
    UriTemplate,
}

impl EntryKey {
    /// The member name.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKey::Name => "name",
            EntryKey::Uri => "uri",
            EntryKey::UriTemplate => "uriTemplate",
        }
    }
}

/// The list a listing request asks for: where its answer holds it and how an entry is named.
/// An entry is digested as the RFC 8785 canonical form of the whole entry (SPEC §4.1a `shown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct List {
    /// The result member holding the array (`tools`, `resources`, …).
    pub member: &'static str,
    /// The entry member that names it.
    pub key: EntryKey,
    /// What an entry is called in messages for people.
    pub noun: &'static str,
}

/// What an answer the `results` section judges holds for the model (SPEC §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultKind {
    /// A `tools/call` result: `content` parts, `structuredContent`, `isError`.
    ToolResult,
    /// A `resources/read` result: `contents`, each `text` or `blob`.
    ResourceContents,
    /// A `prompts/get` result: `messages`, each with one `content` part.
    PromptMessages,
    /// A `completion/complete` result: `completion.values`.
    Completion,
}

/// What the proxy does with the answer to a request of this method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Forwarded as the server wrote it.
    Passes,
    /// A listing: judged by the listing filter ([`Method::list`] says which list).
    Listing,
    /// May carry the server's `instructions`, judged against the pin.
    Instructions,
    /// The result of a governed request: what the model receives of what it asked for, judged
    /// and recorded under `results` (SPEC §5.3); what it holds.
    Result(ResultKind),
}

impl Answer {
    /// How `docs/methods.md` names it.
    pub fn label(self) -> &'static str {
        match self {
            Answer::Passes => "-",
            Answer::Listing => "listing",
            Answer::Instructions => "instructions",
            Answer::Result(_) => "result",
        }
    }
}

/// One MCP method.
#[derive(Debug, PartialEq, Eq)]
pub struct Method {
    /// The method name.
    pub name: &'static str,
    /// The first revision that has it.
    pub since: &'static str,
    /// Who sends it.
    pub from: From,
    /// What governs it.
    pub governor: Governor,
    /// How the thing it is judged by is read from `params`.
    pub target: Target,
    /// For a listing request: the list its answer holds.
    pub list: Option<List>,
    /// What the proxy does with its answer.
    pub answer: Answer,
    /// Why, in a few words (for [`Governor::Nothing`]: why nothing needs to).
    pub why: &'static str,
}

impl Method {
    /// Whether this row is `other` (rows are `static`s: one address each).
    pub fn is(&self, other: &Method) -> bool {
        std::ptr::eq(self, other)
    }

    /// Where a judgement of it is written (see [`Governor::carrier`]).
    pub fn carrier(&self) -> Option<Carrier> {
        self.governor.carrier()
    }
}

/// The table's name of `name` and what its answer holds, when `results` judges its answers
/// (SPEC §5.3).
pub fn judged_answer(name: &str) -> Option<(&'static str, ResultKind)> {
    let row = method(name)?;
    match row.answer {
        Answer::Result(kind) => Some((row.name, kind)),
        _ => None,
    }
}

/// The carrier of a listing event's removals (SPEC §4.1a) by the `method` it names:
/// [`Carrier::AnyList`] when it names none (a capture written before listing events named their
/// method), `None` when no listing event is written for the method it names.
pub fn listing_carrier(method_name: Option<&str>) -> Option<Carrier> {
    let Some(name) = method_name else {
        return Some(Carrier::AnyList);
    };
    let row = method(name)?;
    matches!(row.answer, Answer::Listing | Answer::Instructions)
        .then(|| row.carrier())
        .flatten()
}

const R0: &str = "2024-11-05";
const R3: &str = "2025-06-18";
const R4: &str = "2025-11-25";
const R5: &str = "2026-07-28";

const fn list(member: &'static str, key: EntryKey, noun: &'static str) -> Option<List> {
    Some(List { member, key, noun })
}

/// The rows: each a `static` named for its method, [`METHODS`] in the order `docs/methods.md`
/// lists them, and [`method`], the lookup of a name read off a line (a `match` the compiler turns
/// into a decision tree: no scan of the table per message).
macro_rules! methods {
    ($( $id:ident = $name:literal, $since:expr, $from:ident, $gov:ident, $target:expr, $list:expr, $answer:expr, $why:literal; )*) => {
        $(
            #[doc = concat!("`", $name, "`: ", $why, ".")]
            pub static $id: Method = Method {
                name: $name,
                since: $since,
                from: From::$from,
                governor: Governor::$gov,
                target: $target,
                list: $list,
                answer: $answer,
                why: $why,
            };
        )*

        /// Every method, in the order `docs/methods.md` lists them.
        pub static METHODS: &[&Method] = &[$(&$id),*];

        /// The row of `name` (the method's decoded JSON string), if the product knows the method.
        pub fn method(name: &str) -> Option<&'static Method> {
            match name {
                $($name => Some(&$id),)*
                _ => None,
            }
        }
    };
}

use ClientFeature as F;
use EntryKey as K;
use ResultKind as R;

methods! {
    INITIALIZE = "initialize", R0, Client, Instructions, Target::None, None, Answer::Instructions,
        "the answer's instructions reach the model; pinned";
    SERVER_DISCOVER = "server/discover", R5, Client, Instructions, Target::None, None, Answer::Instructions,
        "the answer's instructions reach the model; pinned";
    PING = "ping", R0, Both, Nothing, Target::None, None, Answer::Passes, "reaches nothing";
    TOOLS_LIST = "tools/list", R0, Client, ToolsListing, Target::None, list("tools", K::Name, "tool"), Answer::Listing,
        "what the model is shown of the tools";
    TOOLS_CALL = "tools/call", R0, Client, Tools, Target::Name, None, Answer::Result(R::ToolResult), "runs a tool";
    RESOURCES_LIST = "resources/list", R0, Client, ResourcesListing, Target::None,
        list("resources", K::Uri, "resource"), Answer::Listing, "what the model is shown of the resources";
    RESOURCES_TEMPLATES_LIST = "resources/templates/list", R0, Client, ResourcesListing, Target::None,
        list("resourceTemplates", K::UriTemplate, "resource template"), Answer::Listing,
        "what the model is shown of the templates";
    RESOURCES_READ = "resources/read", R0, Client, Resources, Target::Uri, None,
        Answer::Result(R::ResourceContents), "reads a resource";
    RESOURCES_SUBSCRIBE = "resources/subscribe", R0, Client, Resources, Target::Uri, None, Answer::Passes,
        "subscribes to a resource's updates";
    RESOURCES_UNSUBSCRIBE = "resources/unsubscribe", R0, Client, Nothing, Target::None, None, Answer::Passes,
        "only stops updates";
    SUBSCRIPTIONS_LISTEN = "subscriptions/listen", R5, Client, Resources, Target::ResourceSubscriptions,
        None, Answer::Passes, "its resourceSubscriptions subscribe to resources";
    PROMPTS_LIST = "prompts/list", R0, Client, PromptsListing, Target::None,
        list("prompts", K::Name, "prompt"), Answer::Listing, "what the model is shown of the prompts";
    PROMPTS_GET = "prompts/get", R0, Client, Prompts, Target::Name, None,
        Answer::Result(R::PromptMessages), "runs a prompt";
    COMPLETION_COMPLETE = "completion/complete", R0, Client, PromptsOrResources, Target::Ref, None,
        Answer::Result(R::Completion),
        "runs the completer of the prompt or template its ref names";
    LOGGING_SET_LEVEL = "logging/setLevel", R0, Client, Nothing, Target::None, None, Answer::Passes,
        "sets the server's log verbosity";
    SAMPLING_CREATE_MESSAGE = "sampling/createMessage", R0, Server, ClientFeatures,
        Target::Feature(F::Sampling), None, Answer::Passes, "asks the client's model";
    ELICITATION_CREATE = "elicitation/create", R3, Server, ClientFeatures,
        Target::Feature(F::Elicitation), None, Answer::Passes, "asks the user";
    ROOTS_LIST = "roots/list", R0, Server, ClientFeatures, Target::Feature(F::Roots), None, Answer::Passes,
        "asks for the client's directories";
    TASKS_GET = "tasks/get", R4, Both, Nothing, Target::None, None, Answer::Passes,
        "the state of a request judged when it was made";
    TASKS_RESULT = "tasks/result", R4, Both, Nothing, Target::None, None, Answer::Passes,
        "the result of a request judged when it was made";
    TASKS_LIST = "tasks/list", R4, Both, Nothing, Target::None, None, Answer::Passes,
        "lists requests judged when they were made";
    TASKS_CANCEL = "tasks/cancel", R4, Both, Nothing, Target::None, None, Answer::Passes, "only cancels";
    NOTIFICATIONS_INITIALIZED = "notifications/initialized", R0, Client, Nothing, Target::None, None,
        Answer::Passes, "a notification: asks nothing";
    NOTIFICATIONS_CANCELLED = "notifications/cancelled", R0, Both, Nothing, Target::None, None, Answer::Passes,
        "a notification: asks nothing";
    NOTIFICATIONS_PROGRESS = "notifications/progress", R0, Both, Nothing, Target::None, None, Answer::Passes,
        "a notification: asks nothing";
    NOTIFICATIONS_MESSAGE = "notifications/message", R0, Server, Nothing, Target::None, None, Answer::Passes,
        "a notification: asks nothing";
    NOTIFICATIONS_RESOURCES_LIST_CHANGED = "notifications/resources/list_changed", R0, Server, Nothing,
        Target::None, None, Answer::Passes, "a notification: asks nothing";
    NOTIFICATIONS_RESOURCES_UPDATED = "notifications/resources/updated", R0, Server, Nothing,
        Target::None, None, Answer::Passes, "a notification: asks nothing";
    NOTIFICATIONS_PROMPTS_LIST_CHANGED = "notifications/prompts/list_changed", R0, Server, Nothing,
        Target::None, None, Answer::Passes, "a notification: asks nothing";
    NOTIFICATIONS_TOOLS_LIST_CHANGED = "notifications/tools/list_changed", R0, Server, Nothing,
        Target::None, None, Answer::Passes, "a notification: asks nothing";
    NOTIFICATIONS_ROOTS_LIST_CHANGED = "notifications/roots/list_changed", R0, Client, Nothing,
        Target::None, None, Answer::Passes, "a notification: asks nothing";
    NOTIFICATIONS_ELICITATION_COMPLETE = "notifications/elicitation/complete", R4, Server, Nothing,
        Target::None, None, Answer::Passes, "a notification: asks nothing";
    NOTIFICATIONS_TASKS_STATUS = "notifications/tasks/status", R4, Both, Nothing, Target::None, None,
        Answer::Passes, "a notification: asks nothing";
    NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED = "notifications/subscriptions/acknowledged", R5, Server,
        Nothing, Target::None, None, Answer::Passes, "a notification: asks nothing";
}

/// Whether the list a listing event of method `name` judged holds resource URI templates
/// (the row whose list is keyed by [`EntryKey::UriTemplate`]) rather than URIs, prompt names or
/// tool names.
pub fn lists_templates(name: &str) -> bool {
    method(name)
        .and_then(|row| row.list)
        .is_some_and(|list| list.key == EntryKey::UriTemplate)
}

/// Whether a decision on method `name` names more targets than its event records: a request
/// whose target is [`Target::ResourceSubscriptions`] subscribes to a list of resource URIs, and
/// its event records one (the refused one, or the first), so the others cannot be judged again
/// from the capture.
pub fn records_one_of_many_targets(name: &str) -> bool {
    method(name).is_some_and(|row| row.target == Target::ResourceSubscriptions)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names the replay asks about are rows of the table, governed as it assumes.
    #[test]
    fn replay_accessors_name_rows_of_the_table() {
        assert_eq!(
            method(TOOLS_CALL.name).map(|m| m.governor),
            Some(Governor::Tools)
        );
        let templates = METHODS.iter().filter(|m| lists_templates(m.name));
        let templates: Vec<_> = templates.map(|m| m.governor).collect();
        assert_eq!(templates, [Governor::ResourcesListing]);
        let many = METHODS
            .iter()
            .filter(|m| records_one_of_many_targets(m.name));
        let many: Vec<_> = many.map(|m| m.governor).collect();
        assert_eq!(many, [Governor::Resources]);
    }

    /// Every judged answer answers a client request the table knows.
    #[test]
    fn judged_answers_are_client_requests() {
        let judged: Vec<&str> = METHODS
            .iter()
            .filter_map(|m| judged_answer(m.name).map(|(n, _)| n))
            .collect();
        assert_eq!(judged.len(), 4, "{judged:?}");
        for name in judged {
            let m = method(name).unwrap();
            assert_eq!(m.from, From::Client, "{name}");
            assert_ne!(m.governor, Governor::Nothing, "{name}");
        }
    }

    /// Every method once, and [`method`] finds each row by its name.
    #[test]
    fn each_method_once() {
        let mut seen = std::collections::BTreeSet::new();
        for m in METHODS {
            assert!(seen.insert(m.name), "{} twice", m.name);
            assert!(m.name.contains('/') || m.name == INITIALIZE.name || m.name == PING.name);
            assert!(method(m.name).is_some_and(|r| r.is(m)), "{}", m.name);
            // A listing row says which list; no other row does.
            assert_eq!(m.list.is_some(), m.answer == Answer::Listing, "{}", m.name);
            // A server request for a client feature names it, and only those rows do.
            assert_eq!(
                m.target.feature().is_some(),
                m.governor == Governor::ClientFeatures,
                "{}",
                m.name
            );
        }
        assert!(method("Tools/call").is_none() && method("").is_none());
    }

    /// A listing event names its method; the carrier of its removals comes from the row.
    #[test]
    fn listing_carriers() {
        assert_eq!(listing_carrier(None), Some(Carrier::AnyList));
        assert_eq!(
            listing_carrier(Some(PROMPTS_LIST.name)),
            Some(Carrier::PromptsList)
        );
        assert_eq!(
            listing_carrier(Some(RESOURCES_TEMPLATES_LIST.name)),
            Some(Carrier::ResourcesList)
        );
        assert_eq!(
            listing_carrier(Some(SERVER_DISCOVER.name)),
            Some(Carrier::Instructions)
        );
        assert_eq!(listing_carrier(Some(TOOLS_CALL.name)), None);
        assert_eq!(listing_carrier(Some("Tools/list")), None);
    }

    /// One `docs/methods.md` row, as the docs print it.
    fn doc_row(m: &Method) -> Vec<String> {
        let list = m.list.map_or("-".to_string(), |l| {
            format!("{}[].{}", l.member, l.key.as_str())
        });
        vec![
            m.name.to_string(),
            m.since.to_string(),
            m.from.label().to_string(),
            m.governor.label().to_string(),
            m.target.label().to_string(),
            list,
            m.answer.label().to_string(),
            m.why.to_string(),
        ]
    }

    /// `docs/methods.md` lists exactly these rows, in this order, with these labels.
    #[test]
    fn the_docs_list_is_this_table() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(root.join("docs/methods.md")).unwrap();
        let rows: Vec<Vec<String>> = text
            .lines()
            .filter(|l| l.starts_with("| `"))
            .map(|l| {
                l.trim_matches('|')
                    .split(" | ")
                    .map(|c| c.trim().trim_matches('`').to_string())
                    .collect()
            })
            .collect();
        let want: Vec<Vec<String>> = METHODS.iter().map(|m| doc_row(m)).collect();
        assert_eq!(
            rows, want,
            "docs/methods.md and src/methods.rs disagree: update both"
        );
    }

    /// The Rust sources the product is built from, each with its text up to its first
    /// `#[cfg(test)]` (test modules sit at the end of a file and may spell protocol lines).
    fn product_sources() -> Vec<(std::path::PathBuf, String)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut out = Vec::new();
        let mut dirs = vec![
            root.join("src"),
            root.join("crates/assay-cli/src"),
            root.join("crates/assay-capi/src"),
            root.join("bindings/python/src"),
        ];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if path.is_dir() {
                    if name != "tests" {
                        dirs.push(path);
                    }
                    continue;
                }
                let test_file = name == "tests.rs" || name == "testutil.rs";
                if !name.ends_with(".rs") || test_file || path.ends_with("src/methods.rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let product = text.split("#[cfg(test)]").next().unwrap_or("").to_string();
                out.push((path, product));
            }
        }
        out
    }

    /// No method name is written outside this table: a module that handles a method asks the
    /// table for it (issue of one home per fact; adding a governed method is one row here).
    #[test]
    fn no_method_name_outside_the_table() {
        let sources = product_sources();
        assert!(sources.len() > 50, "the sources were not found");
        let mut found = Vec::new();
        for (path, text) in &sources {
            for m in METHODS {
                // As a Rust string literal, or inside one as JSON text (`\"method\":\"ping\"`
                // in a raw string reads `"ping"` too).
                if text.contains(&format!("\"{}\"", m.name)) {
                    found.push(format!("{} in {}", m.name, path.display()));
                }
            }
        }
        assert!(
            found.is_empty(),
            "method names outside src/methods.rs (ask the table instead): {found:#?}"
        );
    }
}
