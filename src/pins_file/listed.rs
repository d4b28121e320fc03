//! What a server listed (SPEC §5.1): the tools of a `tools/list` listing with their definition
//! digests, and the server's `serverInfo` and `instructions`. The live listing that fills it
//! (`pins/listing.rs`) sits above the proxy; the pins file and its diff read it here.

use serde::Deserialize;

use crate::sha256::HexDigest;

/// One listed tool.
#[derive(Debug, Clone)]
pub struct ListedTool {
    /// The tool's name.
    pub name: String,
    /// Its definition digest (SPEC §5.1): SHA-256 of the RFC 8785 form of the tool object.
    pub(crate) sha256: HexDigest,
    /// The tool object exactly as the server listed it.
    pub definition: String,
}

impl ListedTool {
    /// The definition digest, 64 lowercase hex digits.
    pub fn sha256(&self) -> &str {
        self.sha256.as_str()
    }

    /// The first line of the tool's `description` (empty when it has none).
    pub fn summary(&self) -> String {
        #[derive(Deserialize)]
        struct D {
            description: Option<String>,
        }
        serde_json::from_str::<D>(&self.definition)
            .ok()
            .and_then(|d| d.description)
            .and_then(|d| d.lines().next().map(str::to_string))
            .unwrap_or_default()
    }
}

/// What a server listed.
#[derive(Debug, Clone)]
pub struct ToolListing {
    /// The protocol revision the server answered `initialize` with.
    pub protocol_version: String,
    /// The server's `serverInfo`, when it gave one (JSON text).
    pub server_info: Option<String>,
    /// The server's `instructions` text, when it gave one (SPEC §5.1).
    pub instructions: Option<String>,
    /// Every tool of every page, in the server's order.
    pub tools: Vec<ListedTool>,
    /// The server's resources and prompts, when they were asked for
    /// (`assay mcp pin --policy-template`); `None` otherwise.
    pub catalog: Option<ServerCatalog>,
}

/// What a server offers besides tools (SPEC §5.2), as a client listing it sees it: each list is
/// `None` when the server did not declare the capability (`resources`, `prompts`) in its
/// `initialize` result, else every entry of every page, in the server's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerCatalog {
    /// The `uri` of every `resources/list` entry.
    pub resources: Option<Vec<String>>,
    /// The `uriTemplate` of every `resources/templates/list` entry.
    pub resource_templates: Option<Vec<String>>,
    /// The `name` of every `prompts/list` entry.
    pub prompts: Option<Vec<String>>,
}
