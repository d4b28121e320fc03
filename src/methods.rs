//! Every MCP method of every revision the product knows (2024-11-05 through 2026-07-28), and
//! what governs it (SPEC §5, §5.1, §5.2): the one table. `docs/methods.md` lists the same rows
//! for people, and a test fails when the two disagree or when the proxy judges a method
//! differently from what its row says.
//!
//! A leaf: it imports nothing of the crate.

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

/// One MCP method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Method {
    /// The method name.
    pub name: &'static str,
    /// The first revision that has it.
    pub since: &'static str,
    /// Who sends it.
    pub from: From,
    /// What governs it.
    pub governor: Governor,
    /// Why, in a few words (for [`Governor::Nothing`]: why nothing needs to).
    pub why: &'static str,
}

const fn m(
    name: &'static str,
    since: &'static str,
    from: From,
    governor: Governor,
    why: &'static str,
) -> Method {
    Method {
        name,
        since,
        from,
        governor,
        why,
    }
}

const R0: &str = "2024-11-05";
const R3: &str = "2025-06-18";
const R4: &str = "2025-11-25";
const R5: &str = "2026-07-28";

/// Every method, in the order `docs/methods.md` lists them.
pub const METHODS: &[Method] = &[
    m(
        "initialize",
        R0,
        From::Client,
        Governor::Instructions,
        "the answer's instructions reach the model; pinned",
    ),
    m(
        "server/discover",
        R5,
        From::Client,
        Governor::Instructions,
        "the answer's instructions reach the model; pinned",
    ),
    m("ping", R0, From::Both, Governor::Nothing, "reaches nothing"),
    m(
        "tools/list",
        R0,
        From::Client,
        Governor::ToolsListing,
        "what the model is shown of the tools",
    ),
    m(
        "tools/call",
        R0,
        From::Client,
        Governor::Tools,
        "runs a tool",
    ),
    m(
        "resources/list",
        R0,
        From::Client,
        Governor::ResourcesListing,
        "what the model is shown of the resources",
    ),
    m(
        "resources/templates/list",
        R0,
        From::Client,
        Governor::ResourcesListing,
        "what the model is shown of the templates",
    ),
    m(
        "resources/read",
        R0,
        From::Client,
        Governor::Resources,
        "reads a resource",
    ),
    m(
        "resources/subscribe",
        R0,
        From::Client,
        Governor::Resources,
        "subscribes to a resource's updates",
    ),
    m(
        "resources/unsubscribe",
        R0,
        From::Client,
        Governor::Nothing,
        "only stops updates",
    ),
    m(
        "subscriptions/listen",
        R5,
        From::Client,
        Governor::Resources,
        "its resourceSubscriptions subscribe to resources",
    ),
    m(
        "prompts/list",
        R0,
        From::Client,
        Governor::PromptsListing,
        "what the model is shown of the prompts",
    ),
    m(
        "prompts/get",
        R0,
        From::Client,
        Governor::Prompts,
        "runs a prompt",
    ),
    m(
        "completion/complete",
        R0,
        From::Client,
        Governor::PromptsOrResources,
        "runs the completer of the prompt or template its ref names",
    ),
    m(
        "logging/setLevel",
        R0,
        From::Client,
        Governor::Nothing,
        "sets the server's log verbosity",
    ),
    m(
        "sampling/createMessage",
        R0,
        From::Server,
        Governor::ClientFeatures,
        "asks the client's model",
    ),
    m(
        "elicitation/create",
        R3,
        From::Server,
        Governor::ClientFeatures,
        "asks the user",
    ),
    m(
        "roots/list",
        R0,
        From::Server,
        Governor::ClientFeatures,
        "asks for the client's directories",
    ),
    m(
        "tasks/get",
        R4,
        From::Both,
        Governor::Nothing,
        "the state of a request judged when it was made",
    ),
    m(
        "tasks/result",
        R4,
        From::Both,
        Governor::Nothing,
        "the result of a request judged when it was made",
    ),
    m(
        "tasks/list",
        R4,
        From::Both,
        Governor::Nothing,
        "lists requests judged when they were made",
    ),
    m(
        "tasks/cancel",
        R4,
        From::Both,
        Governor::Nothing,
        "only cancels",
    ),
    m(
        "notifications/initialized",
        R0,
        From::Client,
        Governor::Nothing,
        "a notification: asks nothing",
    ),
    m(
        "notifications/cancelled",
        R0,
        From::Both,
        Governor::Nothing,
        "a notification: asks nothing",
    ),
    m(
        "notifications/progress",
        R0,
        From::Both,
        Governor::Nothing,
        "a notification: asks nothing",
    ),
    m(
        "notifications/message",
        R0,
        From::Server,
        Governor::Nothing,
        "a notification: asks nothing",
    ),
    m(
        "notifications/resources/list_changed",
        R0,
        From::Server,
        Governor::Nothing,
        "a notification: asks nothing",
    ),
    m(
        "notifications/resources/updated",
        R0,
        From::Server,
        Governor::Nothing,
        "a notification: asks nothing",
    ),
    m(
        "notifications/prompts/list_changed",
        R0,
        From::Server,
        Governor::Nothing,
        "a notification: asks nothing",
    ),
    m(
        "notifications/tools/list_changed",
        R0,
        From::Server,
        Governor::Nothing,
        "a notification: asks nothing",
    ),
    m(
        "notifications/roots/list_changed",
        R0,
        From::Client,
        Governor::Nothing,
        "a notification: asks nothing",
    ),
    m(
        "notifications/elicitation/complete",
        R4,
        From::Server,
        Governor::Nothing,
        "a notification: asks nothing",
    ),
    m(
        "notifications/tasks/status",
        R4,
        From::Both,
        Governor::Nothing,
        "a notification: asks nothing",
    ),
    m(
        "notifications/subscriptions/acknowledged",
        R5,
        From::Server,
        Governor::Nothing,
        "a notification: asks nothing",
    ),
];

/// The row of `name`, if the product knows the method.
pub fn method(name: &str) -> Option<&'static Method> {
    METHODS.iter().find(|m| m.name == name)
}

/// The method a `tools/call` decision event (SPEC §4.1) stands for: the one the top-level tool
/// rules judge ([`Governor::Tools`]).
pub const TOOLS_CALL: &str = "tools/call";

/// Whether the list a listing event of method `name` judged holds resource URI templates
/// (`resources/templates/list`) rather than URIs, prompt names or tool names.
pub fn lists_templates(name: &str) -> bool {
    name == "resources/templates/list"
}

/// Whether a decision on method `name` names more targets than its event records:
/// `subscriptions/listen` subscribes to a list of resource URIs, and its event records one (the
/// refused one, or the first), so the others cannot be judged again from the capture.
pub fn records_one_of_many_targets(name: &str) -> bool {
    name == "subscriptions/listen"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names the replay asks about are rows of the table, governed as it assumes.
    #[test]
    fn replay_accessors_name_rows_of_the_table() {
        assert_eq!(
            method(TOOLS_CALL).map(|m| m.governor),
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

    /// Every method once.
    #[test]
    fn each_method_once() {
        let mut seen = std::collections::BTreeSet::new();
        for m in METHODS {
            assert!(seen.insert(m.name), "{} twice", m.name);
            assert!(m.name.contains('/') || m.name == "initialize" || m.name == "ping");
        }
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
        let want: Vec<Vec<String>> = METHODS
            .iter()
            .map(|m| {
                vec![
                    m.name.to_string(),
                    m.since.to_string(),
                    m.from.label().to_string(),
                    m.governor.label().to_string(),
                    m.why.to_string(),
                ]
            })
            .collect();
        assert_eq!(
            rows, want,
            "docs/methods.md and src/methods.rs disagree: update both"
        );
    }
}
