//! The listing filter of governed lists, judged through the answer gate as the proxy runs it.

use super::*;
use crate::methods;
use crate::proxy::answers::{Gate, judge as gate};
use crate::proxy::pending::{PendingRequests, RequestKind};

fn policy() -> Policy {
    Policy::from_bytes(
        b"version: \"1\"\nallow: [\"*\"]\nhide_refused_tools: true\nprompts:\n  deny: [\"debug_*\"]\n\
          resources:\n  deny: [\"file:///workspace/.env\"]\n",
        std::path::Path::new("p.yaml"),
    )
    .unwrap()
}

/// What the listing filter makes of `line` after the client sent `requests`.
fn through(requests: &[(&str, RequestKind)], line: &str) -> (String, Vec<(ListKind, Listing)>) {
    let pending = PendingRequests::new();
    for (id, kind) in requests {
        pending.note(id, *kind);
    }
    let answered = match gate(line.as_bytes(), &pending).gate {
        Gate::Forward(a) => a,
        Gate::Trimmed(_, a) => a,
        _ => panic!("the gate keeps {line}"),
    };
    match judge(&policy(), line.as_bytes(), &answered) {
        None => (line.to_string(), Vec::new()),
        Some(f) => (
            f.line
                .map(|l| String::from_utf8(l).unwrap())
                .unwrap_or_else(|| line.to_string()),
            f.listings,
        ),
    }
}

/// SPEC §5.2 (issue 46 item 6): a server batch is judged element by element — a list answer
/// is filtered as on its own line, an unreadable one becomes the error for its id alone, and
/// the other answers of the batch reach the client unchanged.
#[test]
fn a_batch_is_judged_element_by_element() {
    let line = r#"[{"jsonrpc":"2.0","id":1,"result":{"prompts":[{"name":"greet"},{"name":"debug_dump"}]}},{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"call answer"}]}},{"jsonrpc":"2.0","id":3,"result":{"Resources":[]}}]"#;
    let (out, listings) = through(
        &[
            ("1", RequestKind::Read(&methods::PROMPTS_LIST)),
            ("2", RequestKind::Other),
            ("3", RequestKind::Read(&methods::RESOURCES_LIST)),
        ],
        &format!("{line}\n"),
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    let a = v.as_array().unwrap();
    assert_eq!(a.len(), 3, "{out}");
    assert_eq!(
        a[0]["result"]["prompts"],
        serde_json::json!([{"name": "greet"}])
    );
    assert_eq!(a[1]["result"]["content"][0]["text"], "call answer", "{out}");
    assert_eq!(a[2]["id"], 3);
    assert_eq!(a[2]["error"]["code"], -32603, "{out}");
    assert_eq!(listings.len(), 2);
    assert_eq!(listings[0].0.method(), methods::PROMPTS_LIST.name);
    assert!(!listings[0].1.replaced_by_error);
    assert_eq!(listings[0].1.removed.len(), 1);
    assert_eq!(listings[1].0.method(), methods::RESOURCES_LIST.name);
    assert!(listings[1].1.replaced_by_error);
    // A batch whose list answers lose nothing is forwarded byte for byte.
    let kept = r#"[{"jsonrpc":"2.0","id":1,"result":{"prompts":[{"name":"greet"}]}},{"jsonrpc":"2.0","id":2,"result":{}}]"#;
    let (out, listings) = through(
        &[
            ("1", RequestKind::Read(&methods::PROMPTS_LIST)),
            ("2", RequestKind::Other),
        ],
        &format!("{kept}\n"),
    );
    assert_eq!(out, format!("{kept}\n"));
    assert_eq!(listings.len(), 1);
}
