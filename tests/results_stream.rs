//! SPEC §5.3 `results.max_bytes` through the real binary and a real server process
//! (tests/fixtures/results_server.py): an answer longer than `max_bytes` — and than the line
//! bound — is read past, never kept, and refused under the id the client wrote; answers at the
//! bound pass; oversized batches, notifications and answers to requests `results` does not judge;
//! the session goes on. The evidence is compared with what the client received, digest for
//! digest. (Memory: tests/memory.rs.)

use serde_json::Value;

use crate::results::{INIT, by_id, results_checked, say, session};
use crate::util::*;

fn flood(id: &str, bytes: usize, shape: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"flood","arguments":{{"bytes":{bytes},"shape":"{shape}"}}}}}}"#
    )
}

/// The reason code of the refusal the client got for request `id`.
fn refused_code(out: &[String], id: Value) -> Value {
    by_id(out, id)["result"]["_meta"]["assay/decision"]["reason_code"].clone()
}

/// SPEC §5.3 `max_bytes`: an answer longer than `max_bytes` is read past, never kept — longer
/// than the line bound too — and refused under the id the client wrote; the session goes on.
/// An answer of exactly `max_bytes` passes, one byte more is refused. An oversized batch gets
/// its refusals as a batch and loses its answer to nobody; an oversized notification is dropped
/// and counted.
#[test]
fn answers_longer_than_max_bytes_are_read_past_and_refused_and_the_session_goes_on() {
    const MAX: usize = 1 << 20;
    let head = r#"{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":""#;
    let tail = r#""}]}}"#;
    let at_bound = MAX - head.len() - tail.len();
    let dir = tempdir();
    let lines = vec![
        INIT.to_string(),
        // Longer than the 16 MiB line bound.
        flood("1", 17 << 20, "id_first"),
        flood("\"s\"", 2 * MAX, "id_last"),
        flood("3", 2 * MAX, "batch"),
        flood("4", 2 * MAX, "notify"),
        say("5", "ok", 1),
        flood("6", at_bound, "id_first"),
        flood("7", at_bound + 1, "id_first"),
    ];
    let (out, events, _) = session(dir.path(), Some(&format!("{{max_bytes: {MAX}}}")), &lines);
    // In a capture directory the wrapper's diagnostics go to proxy-stderr.log.
    let stderr = std::fs::read_to_string(dir.path().join("cap/proxy-stderr.log")).unwrap();
    let results = results_checked(&out, &events);
    let action = |id: Value| {
        results
            .iter()
            .find(|d| d["request_id"] == id)
            .unwrap_or_else(|| panic!("no event for {id}"))["action"]
            .clone()
    };
    for id in [json_id("1"), json_id("\"s\""), json_id("3"), json_id("7")] {
        assert_eq!(refused_code(&out, id.clone()), "P_RESULT_TOO_LARGE", "{id}");
        assert_eq!(action(id), "refused");
    }
    let batch = out.iter().find(|l| l.starts_with('[')).expect("a batch");
    let batch: Vec<Value> = serde_json::from_str(batch).unwrap();
    assert_eq!(batch.len(), 1, "the answer to nobody is dropped");
    assert_eq!(
        by_id(&out, 4.into())["result"]["content"],
        serde_json::json!([])
    );
    assert_eq!(by_id(&out, 5.into())["result"]["content"][0]["text"], "ok");
    let six = out
        .iter()
        .find(|l| l.starts_with(head))
        .expect("id 6 forwarded");
    assert_eq!(six.len(), MAX);
    assert_eq!(action(6.into()), "forwarded");
    assert_eq!(results.len(), 7, "one event per answer");
    let r1 = results.iter().find(|d| d["request_id"] == 1).unwrap();
    assert_eq!(r1["findings"][0]["rule"], "max_bytes");
    assert!(
        stderr.contains(&format!(
            "its line of {} bytes",
            head.len() + tail.len() + (17 << 20)
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("dropped 2 unsolicited server responses"),
        "{stderr}"
    );
}

/// An oversized answer the server ends without a newline (its last bytes) is refused all the
/// same, and the session ends closed.
#[test]
fn an_oversized_last_answer_without_newline_is_refused() {
    let dir = tempdir();
    let lines = vec![INIT.to_string(), flood("1", 3 << 20, "eof")];
    let (out, events, _) = session(dir.path(), Some("{max_bytes: 65536}"), &lines);
    let results = results_checked(&out, &events);
    assert_eq!(refused_code(&out, 1.into()), "P_RESULT_TOO_LARGE");
    assert_eq!(results.len(), 1);
}

fn json_id(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

/// An oversized line answering a request `results` does not judge (a `tools/list`) is not kept
/// either: the request gets the `-32603` withheld error and no result event, and the session
/// goes on.
#[test]
fn an_oversized_answer_to_a_request_not_judged_is_withheld() {
    let dir = tempdir();
    let lines = vec![
        INIT.to_string(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"flood"}}"#.to_string(),
        say("2", "after", 1),
    ];
    let (out, events, _) = session(dir.path(), Some("{max_bytes: 65536}"), &lines);
    let results = results_checked(&out, &events);
    let one = by_id(&out, 1.into());
    assert_eq!(one["error"]["code"], -32603, "{one}");
    assert!(
        one["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than results.max_bytes"),
        "{one}"
    );
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["request_id"], 2);
    assert_eq!(
        by_id(&out, 2.into())["result"]["content"][0]["text"],
        "after"
    );
}
