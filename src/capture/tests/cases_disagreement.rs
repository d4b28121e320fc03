//! Verdict cases: files that disagree with each other, accounting that does not add up, evidence
//! not retained, and one changed byte.

use super::*;

/// Companions and the log disagree: `unknown`.
pub(super) fn disagreement() -> Vec<Case> {
    vec![
        // ---- unknown: disagreement ----
        Case {
            name: "protocol session_id differs",
            setup: |b| {
                b.edit_protocol
                    .push(Box::new(|v| set(v, "session_id", json!("f".repeat(32)))))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::ProtocolMismatch],
        },
        Case {
            name: "protocol server_id differs",
            setup: |b| {
                b.edit_protocol
                    .push(Box::new(|v| set(v, "server_id", json!("other"))))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::ProtocolMismatch],
        },
        Case {
            name: "stop server_pid differs",
            setup: |b| {
                b.edit_stop
                    .push(Box::new(|v| set(v, "data/server_pid", json!(4243))))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::ContextMismatch],
        },
        Case {
            name: "stop source differs",
            setup: |b| {
                b.edit_stop
                    .push(Box::new(|v| set(v, "source", json!("urn://elsewhere"))))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::ContextMismatch, R::ProtocolMismatch],
        },
        Case {
            name: "stop without session_context_id",
            setup: |b| {
                b.edit_stop
                    .push(Box::new(|v| set(v, "data/session_context_id", Value::Null)))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::ContextMismatch],
        },
        Case {
            name: "decision under another policy",
            setup: |b| {
                b.edit_line.push(Box::new(|i, v| {
                    if i == 1 {
                        set(v, "data/policy_sha256", json!("c".repeat(64)))
                    }
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::ContextMismatch],
        },
        Case {
            name: "decision not enforced outside dry run",
            setup: |b| {
                b.edit_line.push(Box::new(|i, v| {
                    if i == 1 {
                        set(v, "data/enforced", json!(false))
                    }
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::ContextMismatch],
        },
        Case {
            name: "stop id wrong",
            setup: |b| {
                b.edit_stop
                    .push(Box::new(|v| set(v, "id", json!("evt_stop_x"))))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::IdMismatch],
        },
        Case {
            name: "context id wrong",
            setup: |b| {
                let id = json!(format!("evt_context_{}", "e".repeat(32)));
                b.edit_context
                    .push(Box::new(move |v| set(v, "id", id.clone())));
                let id = json!(format!("evt_context_{}", "e".repeat(32)));
                b.edit_stop.push(Box::new(move |v| {
                    set(v, "data/session_context_id", id.clone())
                }));
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::IdMismatch],
        },
        Case {
            name: "decision id wrong",
            setup: |b| {
                b.edit_line.push(Box::new(|i, v| {
                    if i == 2 {
                        set(v, "id", json!("evt_decision_x_2"))
                    }
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::IdMismatch],
        },
        Case {
            name: "decision from another session",
            setup: |b| {
                b.edit_line.push(Box::new(|i, v| {
                    if i == 2 {
                        set(v, "data/session_id", json!("d".repeat(32)))
                    }
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::IdMismatch],
        },
        Case {
            name: "written count off by one",
            setup: |b| {
                b.edit_stop.push(Box::new(|v| {
                    set(v, "data/decision_events_written", json!(4))
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::CountMismatch],
        },
        Case {
            name: "seq out of order",
            setup: |b| {
                b.edit_line.push(Box::new(|i, v| {
                    let seq = match i {
                        1 => 2,
                        2 => 1,
                        n => n,
                    };
                    set(v, "data/seq", json!(seq));
                    set(v, "id", json!(format!("evt_decision_{SID}_{seq}")));
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::CountMismatch],
        },
        Case {
            name: "prefix digest wrong",
            setup: |b| {
                b.edit_stop.push(Box::new(|v| {
                    set(v, "data/decision_prefix_sha256", json!("0".repeat(64)))
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::DigestMismatch],
        },
        Case {
            name: "incomplete prefix digest wrong",
            setup: |b| {
                b.decision_log = "incomplete";
                b.dropped = 1;
                b.tail = b"{\"spec".to_vec();
                b.edit_stop.push(Box::new(|v| {
                    set(v, "data/decision_prefix_sha256", json!("0".repeat(64)))
                }));
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::DigestMismatch, R::DecisionLoss],
        },
        Case {
            name: "complete log with a partial tail",
            setup: |b| b.tail = b"{\"specversion\"".to_vec(),
            after: nothing,
            expect: Unknown,
            codes: &[R::PartialLine],
        },
        Case {
            name: "only a partial tail",
            setup: |b| {
                b.decisions = 0;
                b.tail = b"{\"specversion\"".to_vec();
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::PartialLine],
        },
    ]
}

/// Accounting that does not add up, evidence not retained, one changed byte: `unknown`.
pub(super) fn accounting_and_retention() -> Vec<Case> {
    vec![
        // ---- unknown: accounting ----
        Case {
            name: "complete with dropped events",
            setup: |b| b.dropped = 1,
            after: nothing,
            expect: Unknown,
            codes: &[R::InconsistentAccounting],
        },
        Case {
            name: "exited without exit_code",
            setup: |b| b.exit_code = Value::Null,
            after: nothing,
            expect: Unknown,
            codes: &[R::InconsistentAccounting],
        },
        Case {
            name: "signaled with exit_code",
            setup: |b| {
                b.termination = "signaled";
                b.signal = json!(9);
                b.core_dumped = json!(true);
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::InconsistentAccounting],
        },
        Case {
            name: "complete with proxy_error",
            setup: |b| b.session_end = "proxy_error",
            after: nothing,
            expect: Unknown,
            codes: &[R::InconsistentAccounting],
        },
        Case {
            name: "incomplete without any loss",
            setup: |b| b.decision_log = "incomplete",
            after: nothing,
            expect: Unknown,
            codes: &[R::InconsistentAccounting],
        },
        Case {
            name: "proxy_error with a miscounted log",
            setup: |b| {
                b.decision_log = "incomplete";
                b.session_end = "proxy_error";
                b.edit_stop.push(Box::new(|v| {
                    set(v, "data/decision_events_written", json!(99))
                }));
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::CountMismatch, R::ProxyError],
        },
        Case {
            name: "complete with null accounting",
            setup: |b| {
                b.edit_stop.push(Box::new(|v| {
                    set(v, "data/decision_events_written", Value::Null);
                    set(v, "data/decision_events_dropped", Value::Null);
                    set(v, "data/decision_prefix_sha256", Value::Null);
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::InconsistentAccounting],
        },
        // ---- unknown: not retained ----
        Case {
            name: "decision log absent",
            setup: |b| {
                b.decision_log = "absent";
                b.decisions = 0;
                b.edit_context
                    .push(Box::new(|v| set(v, "data/decision_log", json!("absent"))));
            },
            after: |d| rm(d, DECISIONS),
            expect: Unknown,
            codes: &[R::DecisionLogNotRetained, R::MissingFile],
        },
        Case {
            name: "decision log temporary",
            setup: |b| b.decision_log = "temporary",
            after: nothing,
            expect: Unknown,
            codes: &[R::DecisionLogNotRetained],
        },
        Case {
            name: "decision log writer never initialized",
            setup: |b| {
                b.decision_log = "unknown";
                b.decisions = 0;
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::DecisionLogNotRetained],
        },
        Case {
            name: "context says log absent, stop says complete",
            setup: |b| {
                b.edit_context
                    .push(Box::new(|v| set(v, "data/decision_log", json!("absent"))))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::ContextMismatch],
        },
        // ---- unknown: one changed byte ----
        Case {
            name: "one byte changed in the log",
            setup: none,
            after: |d| replace_in(d, DECISIONS, "tool_2", "tool_3"),
            expect: Unknown,
            codes: &[R::DigestMismatch],
        },
        Case {
            name: "one byte changed in the stop",
            setup: none,
            after: |d| replace_in(d, STOP, "\"server_pid\":4242", "\"server_pid\":4241"),
            expect: Unknown,
            codes: &[R::ContextMismatch],
        },
        Case {
            name: "one byte changed in the context",
            setup: none,
            after: |d| replace_in(d, CONTEXT, "default-mcp-server", "default-mcp-servex"),
            expect: Unknown,
            codes: &[R::ContextMismatch, R::ProtocolMismatch],
        },
    ]
}
