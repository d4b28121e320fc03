//! The JSON-RPC members of one server message that tell a response from a request or a
//! notification, read with `serde_json` (a member given twice makes the message unreadable:
//! serde's derive refuses it), for `assay mcp pin`'s listing client (`pins::listing`).
#![forbid(unsafe_code)]

use serde::Deserialize;
use serde_json::value::RawValue;

/// A server message's `id`, `method`, `result` and `error`, borrowed from its text.
#[derive(Deserialize)]
pub(crate) struct Envelope<'a> {
    #[serde(borrow)]
    pub(crate) id: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) method: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) result: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) error: Option<&'a RawValue>,
}

#[cfg(test)]
mod tests {
    use super::Envelope;

    #[test]
    fn a_member_given_twice_is_unreadable() {
        assert!(serde_json::from_str::<Envelope<'_>>(r#"{"id":1,"id":2,"result":{}}"#).is_err());
        assert!(serde_json::from_str::<Envelope<'_>>(r#"{"id":1,"result":1,"result":2}"#).is_err());
    }
}
