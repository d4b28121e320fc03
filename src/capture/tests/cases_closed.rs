//! Verdict cases: closed and incomplete captures, and files that are missing, not regular or
//! over their bound.

use super::*;

/// Captures that read `closed` or `incomplete`.
pub(super) fn closed_and_incomplete() -> Vec<Case> {
    vec![
        // ---- closed ----
        Case {
            name: "exited 0",
            setup: none,
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        Case {
            name: "a live OTLP export that lost spans (SPEC §4.3 otlp_export)",
            setup: |b| {
                b.edit_stop.push(Box::new(|v| {
                    set(
                        v,
                        "data/otlp_export",
                        json!({"spans": 4, "exported": 1, "dropped": 3}),
                    )
                }))
            },
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        Case {
            name: "exited 7",
            setup: |b| b.exit_code = json!(7),
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        Case {
            name: "signaled 9 no core",
            setup: |b| {
                b.termination = "signaled";
                b.exit_code = Value::Null;
                b.signal = json!(9);
                b.core_dumped = json!(false);
            },
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        Case {
            name: "termination unknown after kill",
            setup: |b| {
                b.termination = "unknown";
                b.exit_code = Value::Null;
                b.edit_stop.push(Box::new(|v| {
                    set(v, "data/assay_kill_requested", json!(true))
                }));
            },
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        Case {
            name: "no decisions",
            setup: |b| b.decisions = 0,
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        Case {
            name: "pretty-printed companions",
            setup: |b| b.pretty = true,
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        Case {
            name: "dry run, nothing enforced",
            setup: |b| b.dry_run = true,
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        Case {
            name: "depth 32 accepted",
            setup: |b| {
                b.edit_context
                    .push(Box::new(|v| set(v, "data/x", nested(30))))
            },
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        Case {
            name: "decision line at depth 32 accepted",
            setup: |b| {
                b.edit_line
                    .push(Box::new(|_, v| set(v, "data/x", nested(30))))
            },
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        Case {
            name: "companion exactly 64 KiB",
            setup: none,
            after: |d| pad_to(d, STOP, MAX_COMPANION_BYTES),
            expect: Closed,
            codes: &[],
        },
        Case {
            name: "log exactly 8 MiB",
            setup: |b| b.pad_log_to = Some(MAX_LOG_BYTES as usize),
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        Case {
            name: "policy without a name",
            setup: |b| {
                b.edit_context
                    .push(Box::new(|v| set(v, "data/policy_name", Value::Null)))
            },
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        Case {
            // SPEC §4.2: contexts with the key (the default builder has none) are accepted too.
            name: "context records hide_refused_tools",
            setup: |b| {
                b.edit_context
                    .push(Box::new(|v| set(v, "data/hide_refused_tools", json!(true))))
            },
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        Case {
            // SPEC §4.1, §5.1: lines with the digest, with null, and without the key (older
            // captures) are all accepted, as are the pinning reason codes.
            name: "decision lines with and without tool_definition_sha256, pins reason codes",
            setup: |b| {
                b.edit_line.push(Box::new(|i, v| match i % 3 {
                    0 => set(v, "data/tool_definition_sha256", json!("ab".repeat(32))),
                    1 => set(v, "data/tool_definition_sha256", Value::Null),
                    _ => {}
                }));
                b.edit_line.push(Box::new(|i, v| {
                    if v["data"]["decision"] == "deny" {
                        let code = ["P_TOOL_UNPINNED", "P_TOOL_DRIFT", "P_TOOL_UNLISTED"][i % 3];
                        set(v, "data/reason_code", json!(code));
                    }
                }));
            },
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        Case {
            name: "context records pins_sha256",
            setup: |b| {
                b.edit_context.push(Box::new(|v| {
                    set(v, "data/pins_sha256", json!("0f".repeat(32)))
                }))
            },
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        Case {
            // SPEC §4.2, §5.2: contexts with `governed` and `record_arguments` (the default
            // builder has neither) are accepted, with and without governed sections.
            name: "context records governed sections and record_arguments",
            setup: |b| {
                b.edit_context.push(Box::new(|v| {
                    set(v, "data/governed", json!(["resources", "prompts"]));
                    set(v, "data/record_arguments", json!(true));
                }))
            },
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        Case {
            name: "context records no governed section",
            setup: |b| {
                b.edit_context.push(Box::new(|v| {
                    set(v, "data/governed", json!([]));
                    set(v, "data/record_arguments", json!(false));
                }))
            },
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        Case {
            name: "context records a null pins_sha256",
            setup: |b| {
                b.edit_context
                    .push(Box::new(|v| set(v, "data/pins_sha256", Value::Null)))
            },
            after: nothing,
            expect: Closed,
            codes: &[],
        },
        // ---- incomplete ----
        Case {
            name: "poisoned writer with a partial tail",
            setup: |b| {
                b.decision_log = "incomplete";
                b.dropped = 2;
                b.tail = b"{\"specversion\":\"1.0\",\"id\":\"evt_dec".to_vec();
            },
            after: nothing,
            expect: Incomplete,
            codes: &[R::DecisionLoss],
        },
        Case {
            name: "poisoned writer, failed write left no bytes",
            setup: |b| {
                b.decision_log = "incomplete";
                b.dropped = 5;
            },
            after: nothing,
            expect: Incomplete,
            codes: &[R::DecisionLoss],
        },
        Case {
            name: "proxy_error, every event written: no decision_loss",
            setup: |b| {
                b.decision_log = "incomplete";
                b.session_end = "proxy_error";
            },
            after: nothing,
            expect: Incomplete,
            codes: &[R::ProxyError],
        },
        Case {
            name: "proxy_error after a poisoned writer: both named",
            setup: |b| {
                b.decision_log = "incomplete";
                b.session_end = "proxy_error";
                b.dropped = 3;
            },
            after: nothing,
            expect: Incomplete,
            codes: &[R::DecisionLoss, R::ProxyError],
        },
    ]
}

/// Missing files, files that are not regular, files over their bound: `unknown`.
pub(super) fn unreadable_files() -> Vec<Case> {
    vec![
        // ---- unknown: missing_file / not_regular_file / too_large ----
        Case {
            name: "stop missing",
            setup: none,
            after: |d| rm(d, STOP),
            expect: Unknown,
            codes: &[R::MissingFile],
        },
        Case {
            name: "log missing",
            setup: none,
            after: |d| rm(d, DECISIONS),
            expect: Unknown,
            codes: &[R::MissingFile],
        },
        Case {
            name: "context missing",
            setup: none,
            after: |d| rm(d, CONTEXT),
            expect: Unknown,
            codes: &[R::MissingFile],
        },
        Case {
            name: "protocol missing",
            setup: none,
            after: |d| rm(d, PROTOCOL),
            expect: Unknown,
            codes: &[R::MissingFile],
        },
        Case {
            name: "symlinked stop",
            setup: none,
            after: |d| symlink_in_place(d, STOP),
            expect: Unknown,
            codes: &[R::NotRegularFile],
        },
        Case {
            name: "symlinked log",
            setup: none,
            after: |d| symlink_in_place(d, DECISIONS),
            expect: Unknown,
            codes: &[R::NotRegularFile],
        },
        Case {
            name: "log is a directory",
            setup: none,
            after: |d| {
                rm(d, DECISIONS);
                std::fs::create_dir(d.join(DECISIONS)).unwrap();
            },
            expect: Unknown,
            codes: &[R::NotRegularFile],
        },
        Case {
            name: "context is a fifo",
            setup: none,
            after: |d| {
                rm(d, CONTEXT);
                nix::unistd::mkfifo(&d.join(CONTEXT), nix::sys::stat::Mode::S_IRWXU).unwrap();
            },
            expect: Unknown,
            codes: &[R::NotRegularFile],
        },
        Case {
            name: "stop one byte over 64 KiB",
            setup: none,
            after: |d| pad_to(d, STOP, MAX_COMPANION_BYTES + 1),
            expect: Unknown,
            codes: &[R::TooLarge],
        },
        Case {
            name: "protocol one byte over 64 KiB",
            setup: none,
            after: |d| pad_to(d, PROTOCOL, MAX_COMPANION_BYTES + 1),
            expect: Unknown,
            codes: &[R::TooLarge],
        },
        Case {
            name: "log one byte over 8 MiB",
            setup: |b| {
                b.pad_log_to = Some(MAX_LOG_BYTES as usize);
                b.decision_log = "incomplete";
                b.dropped = 1;
                b.tail = b"{".to_vec();
            },
            after: nothing,
            expect: Unknown,
            codes: &[R::TooLarge],
        },
    ]
}
