//! SPEC §5.3 `results.max_bytes` through the real binary and a real server process
//! (tests/fixtures/results_server.py): an answer longer than `max_bytes` — and than the line
//! bound — is read past, never kept, and refused under the id the client wrote, while only
//! judged requests are pending; answers at the bound pass; oversized batches, notifications and
//! server requests in a streamed line; an oversized listing, and an answer written while a
//! listing is pending, kept and judged whole; the session goes on. The evidence is compared with what the client received, digest for
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
/// its refusals as a batch and loses its answer to nobody; an oversized notification (written
/// while only judged requests are pending) is dropped and said so.
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
    // The batch's answer to nobody; the oversized notification is dropped and said so.
    assert!(
        stderr.contains("dropped 1 unsolicited server responses"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "0 server requests in it answered to the server with -32603, 1 notifications in it dropped"
        ),
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

/// SPEC §5.3: a line over `max_bytes` is streamed past only while every pending request is one
/// `results` judges. An oversized `tools/list` answer (the listing is pending when its line
/// passes `max_bytes`) is kept up to the line bound and reaches the client as the listing it is,
/// judged as every listing; it has no result event; the session goes on.
#[test]
fn an_oversized_listing_is_kept_and_reaches_the_client_as_a_listing() {
    let dir = tempdir();
    let lines = vec![
        INIT.to_string(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"flood"}}"#.to_string(),
        say("2", "after", 1),
    ];
    let (out, events, _) = session(dir.path(), Some("{max_bytes: 65536}"), &lines);
    let results = results_checked(&out, &events);
    let one = by_id(&out, 1.into());
    assert!(
        one.get("error").is_none(),
        "not withheld: {}",
        &one.to_string()[..200]
    );
    let tools = one["result"]["tools"].as_array().expect("a listing");
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["name"], "say");
    assert_eq!(tools[0]["description"].as_str().unwrap().len(), 2 << 20);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["request_id"], 2);
    assert_eq!(
        by_id(&out, 2.into())["result"]["content"][0]["text"],
        "after"
    );
    let stderr = std::fs::read_to_string(dir.path().join("cap/proxy-stderr.log")).unwrap();
    assert!(!stderr.contains("withheld"), "{stderr}");
    assert!(!stderr.contains("unsolicited"), "{stderr}");
}

/// An oversized `tools/call` answer written while a listing is still pending (the fixture
/// answers that `tools/list` only after the call) is kept whole, not streamed — its line could
/// have been the listing — and `results` refuses it as every answer over `max_bytes`:
/// `P_RESULT_TOO_LARGE` under the id the client wrote, its event `refused` with the `max_bytes`
/// finding. The listing then reaches the client unchanged.
#[test]
fn an_oversized_call_answer_kept_whole_is_still_refused_as_too_large() {
    let dir = tempdir();
    let lines = vec![
        INIT.to_string(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"later"}}"#.to_string(),
        flood("2", 200_000, "id_first"),
    ];
    let (out, events, _) = session(dir.path(), Some("{max_bytes: 65536}"), &lines);
    let results = results_checked(&out, &events);
    assert_eq!(refused_code(&out, 2.into()), "P_RESULT_TOO_LARGE");
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["request_id"], 2);
    assert_eq!(results[0]["action"], "refused");
    assert_eq!(results[0]["reason_code"], "P_RESULT_TOO_LARGE");
    assert_eq!(results[0]["findings"][0]["rule"], "max_bytes");
    let tools = by_id(&out, 1.into())["result"]["tools"].clone();
    assert_eq!(tools.as_array().map(Vec::len), Some(2), "{tools}");
    let stderr = std::fs::read_to_string(dir.path().join("cap/proxy-stderr.log")).unwrap();
    // Judged whole: not the streamed path's refusal.
    assert!(!stderr.contains("read past, never kept"), "{stderr}");
}

/// A server request inside a streamed line (a batch over `max_bytes`, while only a `tools/call`
/// is pending) is answered to the server at once with `-32603` under its own id — the fixture
/// reads that answer from its stdin and echoes it as its `tools/call` answer — and never reaches
/// the client; the notification beside it is dropped; one diagnostics line names both.
#[test]
fn a_server_request_in_a_streamed_line_is_answered_to_the_server() {
    let dir = tempdir();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "version: \"1\"\nallow: [\"*\"]\nresults: {max_bytes: 65536}\n",
    )
    .unwrap();
    let cap = dir.path().join("cap");
    let (policy, cap) = (policy.display().to_string(), cap.display().to_string());
    let opts = [
        "--policy",
        &policy,
        "--event-source",
        "assay://test/results",
        "--capture-dir",
        &cap,
    ];
    let server = crate::results::server();
    let input = format!("{INIT}\n{}\n", flood("1", 1 << 20, "ask"));
    let r = run_until_answered(
        wrap_command(&opts, &strs(&server)),
        input.as_bytes(),
        &[1.into()],
    );
    assert_eq!(r.status, Some(0), "{}", r.report());
    let out: Vec<String> = String::from_utf8(r.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert!(
        out.iter().all(|l| !l.contains("sampling/createMessage")),
        "the request never reaches the client"
    );
    assert_eq!(
        out.len(),
        2,
        "the initialize and the call answers only: {out:?}"
    );
    let echoed = by_id(&out, 1.into())["result"]["content"][0]["text"].clone();
    let answer: Value = serde_json::from_str(echoed.as_str().unwrap()).unwrap();
    assert_eq!(answer["id"], "ask-1", "{answer}");
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than results.max_bytes"),
        "{answer}"
    );
    let stderr = std::fs::read_to_string(dir.path().join("cap/proxy-stderr.log")).unwrap();
    assert!(
        stderr.contains(
            "1 server requests in it answered to the server with -32603, 1 notifications in it dropped"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("unsolicited"), "{stderr}");
    let events = decision_lines(&dir.path().join("cap/decisions.ndjson"));
    let results = results_checked(&out, &events);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["action"], "forwarded");
}
