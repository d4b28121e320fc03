//! Which way a governed message travelled (SPEC §4.1a `direction` of an `assay.mcp.decision`):
//! its one home, shared by the decision-log writer (`evidence/decision_log.rs`) and both paths
//! of the capture reader (`capture/decision_line.rs`, `capture/fast_line_parser.rs`).
//!
//! A leaf: it imports nothing of the crate.

use serde::Deserialize;

/// The direction of a message the policy judged: a client request to the server
/// (`resources/read`, `prompts/get`), or a server request to the client
/// (`sampling/createMessage`, `elicitation/create`, `roots/list`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Direction {
    /// `client_to_server`.
    ClientToServer,
    /// `server_to_client`.
    ServerToClient,
}

impl Direction {
    /// Both directions.
    pub(crate) const ALL: [Direction; 2] = [Direction::ClientToServer, Direction::ServerToClient];

    /// The SPEC string: `client_to_server` or `server_to_client`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Direction::ClientToServer => "client_to_server",
            Direction::ServerToClient => "server_to_client",
        }
    }

    /// The direction spelled `s` exactly, or `None`.
    pub(crate) fn parse(s: &str) -> Option<Direction> {
        Direction::ALL.into_iter().find(|d| d.as_str() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::Direction;

    #[test]
    fn as_str_parse_and_serde_agree() {
        for d in Direction::ALL {
            let s = d.as_str();
            assert_eq!(Direction::parse(s), Some(d));
            assert_eq!(
                serde_json::from_str::<Direction>(&format!("\"{s}\"")).unwrap(),
                d
            );
        }
        for bad in [
            "",
            "ClientToServer",
            "client_to_server ",
            "CLIENT_TO_SERVER",
            "both",
        ] {
            assert_eq!(Direction::parse(bad), None, "{bad}");
            assert!(serde_json::from_str::<Direction>(&format!("\"{bad}\"")).is_err());
        }
    }
}
