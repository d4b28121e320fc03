//! The responses the proxy itself sends: policy refusals (an `isError` tool result carrying the
//! decision in `_meta` for a `tools/call`; the [`REFUSED`] error carrying it in `data` for any
//! other governed request, to the client or — for a server's request — to the server), -32700 /
//! -32600 errors for lines that cannot be evaluated, and the batch refusal. Ids are echoed
//! byte-exact from the request.
//!
//! Every shape is valid under each MCP revision from 2024-11-05 through 2026-07-28 (SPEC §3
//! item 5): the refusal has no `structuredContent` (a tool's `outputSchema` must never apply to
//! it) and carries `resultType: "complete"` (required on every 2026-07-28 result, ignored as an
//! unknown member by earlier revisions).

use serde::Serialize;
use serde_json::value::RawValue;

use crate::policy::ReasonCode;

#[derive(Serialize)]
struct Response<'a, R: Serialize> {
    jsonrpc: &'static str,
    /// `None` serializes as `null`.
    id: Option<&'a RawValue>,
    #[serde(flatten)]
    body: R,
}

#[derive(Serialize)]
struct ResultBody<'a> {
    result: ToolResult<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolResult<'a> {
    content: [TextContent<'a>; 1],
    is_error: bool,
    result_type: &'static str,
    #[serde(rename = "_meta")]
    meta: Meta<'a>,
}

#[derive(Serialize)]
struct TextContent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct Meta<'a> {
    #[serde(rename = "assay/decision")]
    decision: AssayDecision<'a>,
}

#[derive(Serialize)]
struct AssayDecision<'a> {
    decision: &'static str,
    reason_code: ReasonCode,
    decision_id: &'a str,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: ErrorObject<'a>,
}

#[derive(Serialize)]
struct ErrorObject<'a> {
    code: i32,
    message: &'a str,
}

fn to_vec<T: Serialize>(v: &T) -> Vec<u8> {
    // Serializing these plain structs into memory cannot fail; an empty object would still be a
    // well-formed line if it ever did.
    serde_json::to_vec(v).unwrap_or_else(|_| b"{}".to_vec())
}

/// A refused `tools/call` (without trailing newline). SPEC §3 item 5.
pub(crate) fn refused_call(
    id: &RawValue,
    decision: &'static str,
    reason_code: ReasonCode,
    text: &str,
    decision_id: &str,
) -> Vec<u8> {
    to_vec(&Response {
        jsonrpc: "2.0",
        id: Some(id),
        body: ResultBody {
            result: ToolResult {
                content: [TextContent { kind: "text", text }],
                is_error: true,
                result_type: "complete",
                meta: Meta {
                    decision: AssayDecision {
                        decision,
                        reason_code,
                        decision_id,
                    },
                },
            },
        },
    })
}

#[derive(Serialize)]
struct RefusedBody<'a> {
    error: RefusedError<'a>,
}

#[derive(Serialize)]
struct RefusedError<'a> {
    code: i32,
    message: &'a str,
    data: RefusedData<'a>,
}

#[derive(Serialize)]
struct RefusedData<'a> {
    #[serde(rename = "assay/decision")]
    decision: AssayDecision<'a>,
}

/// A refused request other than a `tools/call` (SPEC §5.2), without trailing newline:
/// `{"jsonrpc":"2.0","id":ID,"error":{"code":-32010,"message":"assay: refused by policy (CODE)",
/// "data":{"assay/decision":{"decision","reason_code","decision_id"}}}}`.
pub(crate) fn refused_request(
    id: &RawValue,
    decision: &'static str,
    reason_code: ReasonCode,
    decision_id: &str,
) -> Vec<u8> {
    let message = format!("assay: refused by policy ({})", reason_code.as_str());
    to_vec(&Response {
        jsonrpc: "2.0",
        id: Some(id),
        body: RefusedBody {
            error: RefusedError {
                code: REFUSED,
                message: &message,
                data: RefusedData {
                    decision: AssayDecision {
                        decision,
                        reason_code,
                        decision_id,
                    },
                },
            },
        },
    })
}

/// A JSON-RPC error response (without trailing newline). `id` of `None` means `null`.
pub(crate) fn error(id: Option<&RawValue>, code: i32, message: &str) -> Vec<u8> {
    to_vec(&Response {
        jsonrpc: "2.0",
        id,
        body: ErrorBody {
            error: ErrorObject { code, message },
        },
    })
}

/// JSON-RPC parse error.
pub(crate) const PARSE_ERROR: i32 = -32700;
/// JSON-RPC invalid request.
pub(crate) const INVALID_REQUEST: i32 = -32600;
/// JSON-RPC internal error: a server answer the wrapper withheld (SPEC §5).
pub(crate) const INTERNAL_ERROR: i32 = -32603;
/// The error code of every policy refusal that is an error response (SPEC §5.2): a refused
/// request other than `tools/call` (to the client, or to the server for its own request), and
/// the batch refusal (SPEC §3 item 6). In the implementation-defined band -32000..-32019, and
/// none of the codes MCP SDKs give a meaning there: -32000 (ConnectionClosed), -32001
/// (RequestTimeout), -32002 (resource not found). docs/decisions.md, "One refusal code".
pub(crate) const REFUSED: i32 = -32010;
/// A batch refused because one of its calls was not allowed: the refusal code.
pub(crate) const BATCH_REFUSED: i32 = REFUSED;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let id = RawValue::from_string("\"abc\"".into()).unwrap();
        let r = refused_call(
            &id,
            "deny",
            ReasonCode::P_TOOL_DENIED,
            "no",
            "evt_decision_x_0",
        );
        let v: serde_json::Value = serde_json::from_slice(&r).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"jsonrpc":"2.0","id":"abc","result":{"content":[{"type":"text","text":"no"}],"isError":true,"resultType":"complete","_meta":{"assay/decision":{"decision":"deny","reason_code":"P_TOOL_DENIED","decision_id":"evt_decision_x_0"}}}})
        );
        // The exact bytes (member order included) of SPEC §3 item 5.
        assert_eq!(
            String::from_utf8(r).unwrap(),
            r#"{"jsonrpc":"2.0","id":"abc","result":{"content":[{"type":"text","text":"no"}],"isError":true,"resultType":"complete","_meta":{"assay/decision":{"decision":"deny","reason_code":"P_TOOL_DENIED","decision_id":"evt_decision_x_0"}}}}"#
        );
        assert_eq!(
            String::from_utf8(error(None, PARSE_ERROR, "bad")).unwrap(),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}"#
        );
    }
}
