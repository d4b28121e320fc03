//! Verdict cases: JSON over the reader's bounds, and malformed companions and decision lines.

use super::*;

/// Bounds inside JSON (depth, sizes): `unknown`.
pub(super) fn json_bounds() -> Vec<Case> {
    vec![
        // ---- unknown: bounds inside JSON ----
        Case {
            name: "too many decisions",
            setup: |b| b.decisions = MAX_DECISIONS + 1,
            after: nothing,
            expect: Unknown,
            codes: &[R::TooManyDecisions],
        },
        Case {
            name: "context depth 33",
            setup: |b| {
                b.edit_context
                    .push(Box::new(|v| set(v, "data/x", nested(31))))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::TooDeep],
        },
        Case {
            name: "decision line depth 33",
            setup: |b| {
                b.edit_line.push(Box::new(|i, v| {
                    if i == 1 {
                        set(v, "data/x", nested(31))
                    }
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::TooDeep],
        },
        Case {
            name: "duplicate key in stop",
            setup: none,
            after: |d| {
                replace_in(
                    d,
                    STOP,
                    "\"session_end\":",
                    "\"session_end\":\"proxy_error\",\"session_end\":",
                )
            },
            expect: Unknown,
            codes: &[R::DuplicateKey],
        },
        Case {
            name: "escaped duplicate key in context",
            setup: none,
            after: |d| {
                replace_in(
                    d,
                    CONTEXT,
                    "\"dry_run\":",
                    "\"dry\\u005frun\":true,\"dry_run\":",
                )
            },
            expect: Unknown,
            codes: &[R::DuplicateKey],
        },
        Case {
            name: "NaN in stop",
            setup: none,
            after: |d| replace_in(d, STOP, "\"exit_code\":0", "\"exit_code\":NaN"),
            expect: Unknown,
            codes: &[R::NonfiniteNumber],
        },
        Case {
            name: "overflowing number in a decision line",
            setup: |b| {
                b.edit_line.push(Box::new(|i, v| {
                    if i == 2 {
                        set(v, "data/x", json!(1))
                    }
                }))
            },
            after: |d| replace_in(d, DECISIONS, "\"x\":1", "\"x\":1e400"),
            expect: Unknown,
            codes: &[R::NonfiniteNumber],
        },
    ]
}

/// Malformed companions and decision lines: `unknown`.
pub(super) fn malformed() -> Vec<Case> {
    vec![
        // ---- unknown: malformed ----
        Case {
            name: "empty stop file",
            setup: none,
            after: |d| std::fs::write(d.join(STOP), b"").unwrap(),
            expect: Unknown,
            codes: &[R::InvalidJson],
        },
        Case {
            name: "truncated stop file",
            setup: none,
            after: |d| truncate(d, STOP, 40),
            expect: Unknown,
            codes: &[R::InvalidJson],
        },
        Case {
            name: "garbage decision line",
            setup: none,
            after: |d| append(d, DECISIONS, b"not json\n"),
            expect: Unknown,
            codes: &[R::InvalidJson, R::CountMismatch, R::DigestMismatch],
        },
        Case {
            name: "stop is an array",
            setup: none,
            after: |d| std::fs::write(d.join(STOP), b"[]\n").unwrap(),
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "stop lacks core_dumped",
            setup: |b| {
                b.edit_stop
                    .push(Box::new(|v| remove(v, "data/core_dumped")))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "stop decision_log out of domain",
            setup: |b| {
                b.edit_stop
                    .push(Box::new(|v| set(v, "data/decision_log", json!("done"))))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "stop otlp_export that does not add up",
            setup: |b| {
                b.edit_stop.push(Box::new(|v| {
                    set(
                        v,
                        "data/otlp_export",
                        json!({"spans": 4, "exported": 4, "dropped": 1}),
                    )
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "stop otlp_export with another key",
            setup: |b| {
                b.edit_stop.push(Box::new(|v| {
                    set(
                        v,
                        "data/otlp_export",
                        json!({"spans": 1, "exported": 1, "dropped": 0, "x": 0}),
                    )
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "stop otlp_export not an object",
            setup: |b| {
                b.edit_stop
                    .push(Box::new(|v| set(v, "data/otlp_export", json!(null))))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "stop time without Z",
            setup: |b| {
                b.edit_stop.push(Box::new(|v| {
                    set(v, "time", json!("2025-06-01T12:00:00+00:00"))
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "context lacks command_sha256",
            setup: |b| {
                b.edit_context
                    .push(Box::new(|v| remove(v, "data/command_sha256")))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "tool_definition_sha256 is not lowercase hex",
            setup: |b| {
                b.edit_line.push(Box::new(|i, v| {
                    if i == 1 {
                        set(v, "data/tool_definition_sha256", json!("AB".repeat(32)))
                    }
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "tool_definition_sha256 is a number",
            setup: |b| {
                b.edit_line.push(Box::new(|i, v| {
                    if i == 2 {
                        set(v, "data/tool_definition_sha256", json!(7))
                    }
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "context pins_sha256 is not 64 hex",
            setup: |b| {
                b.edit_context
                    .push(Box::new(|v| set(v, "data/pins_sha256", json!("abc"))))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "context hide_refused_tools is not a boolean",
            setup: |b| {
                b.edit_context.push(Box::new(|v| {
                    set(v, "data/hide_refused_tools", json!("yes"))
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "context governed is not an array",
            setup: |b| {
                b.edit_context
                    .push(Box::new(|v| set(v, "data/governed", json!("resources"))))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "context governed holds a non-string",
            setup: |b| {
                b.edit_context.push(Box::new(|v| {
                    set(v, "data/governed", json!(["resources", 1]))
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "context governed is null",
            setup: |b| {
                b.edit_context
                    .push(Box::new(|v| set(v, "data/governed", Value::Null)))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "context record_arguments is not a boolean",
            setup: |b| {
                b.edit_context
                    .push(Box::new(|v| set(v, "data/record_arguments", json!("true"))))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "context record_arguments is null",
            setup: |b| {
                b.edit_context
                    .push(Box::new(|v| set(v, "data/record_arguments", Value::Null)))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "context server_pid is a string",
            setup: |b| {
                b.edit_context
                    .push(Box::new(|v| set(v, "data/server_pid", json!("4242"))))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "protocol names another log",
            setup: |b| {
                b.edit_protocol
                    .push(Box::new(|v| set(v, "decision_log", json!("other.ndjson"))))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "decision line lacks nullable tool",
            setup: |b| {
                b.edit_line.push(Box::new(|i, v| {
                    if i == 0 {
                        remove(v, "data/tool")
                    }
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "decision with unknown reason code",
            setup: |b| {
                b.edit_line.push(Box::new(|i, v| {
                    if i == 1 {
                        set(v, "data/reason_code", json!("P_NOPE"))
                    }
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
        Case {
            name: "allow with a deny reason code",
            setup: |b| {
                b.edit_line.push(Box::new(|i, v| {
                    if i == 0 {
                        set(v, "data/reason_code", json!("P_TOOL_DENIED"))
                    }
                }))
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::SchemaMismatch],
        },
    ]
}
