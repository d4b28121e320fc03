//! The JSON-RPC members of one server message that tell a response from a request or a
//! notification, read with `serde_json` (a member given twice makes the message unreadable:
//! serde's derive refuses it). Shared by the idle drain's bookkeeping (`pending`) and by
//! `assay mcp pin`'s listing client (`pins::listing`).
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

impl Envelope<'_> {
    /// The id text when this is a response (an id, a result or an error, no method).
    pub(crate) fn response_id(&self) -> Option<&str> {
        let answer = self.result.is_some() || self.error.is_some();
        (answer && self.method.is_none())
            .then_some(self.id)
            .flatten()
            .map(RawValue::get)
    }
}

#[cfg(test)]
mod tests {
    use super::Envelope;

    fn response_id(text: &str) -> Option<String> {
        serde_json::from_str::<Envelope<'_>>(text)
            .ok()?
            .response_id()
            .map(str::to_string)
    }

    #[test]
    fn only_an_answer_without_a_method_is_a_response() {
        assert_eq!(response_id(r#"{"id":1,"result":{}}"#).as_deref(), Some("1"));
        assert_eq!(
            response_id(r#"{"id":"a","error":{"code":1}}"#).as_deref(),
            Some(r#""a""#)
        );
        assert_eq!(response_id(r#"{"id":1,"method":"x","result":{}}"#), None);
        assert_eq!(response_id(r#"{"id":1,"method":"x"}"#), None);
        assert_eq!(response_id(r#"{"result":{}}"#), None);
        // A null id (an error about a request that could not be read) answers no request.
        assert_eq!(response_id(r#"{"id":null,"error":{"code":-32700}}"#), None);
    }

    #[test]
    fn a_member_given_twice_is_unreadable() {
        assert!(serde_json::from_str::<Envelope<'_>>(r#"{"id":1,"id":2,"result":{}}"#).is_err());
        assert!(serde_json::from_str::<Envelope<'_>>(r#"{"id":1,"result":1,"result":2}"#).is_err());
    }
}
