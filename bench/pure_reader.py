#!/usr/bin/env python3
"""A straightforward pure-Python capture reader: the SPEC §11 comparison point for the Rust
reader (`assay capture read`).

It performs the same checks as docs/capture-reader.md describes, written as idiomatic standard
library Python (no third-party modules, no micro-optimization): bounded no-follow regular-file
reads (at most bound + 1 bytes), strict JSON (UTF-8, duplicate keys via `object_pairs_hook`,
non-finite numbers via `parse_constant`/`parse_float`/`parse_int`, lone surrogates, depth ≤ 32),
the envelope/context/stop/protocol schema and agreement checks, every decision line (complete
line, valid decision event, seq 0..n-1, ids, session ids, source, policy digest, enforced),
accounting, SHA-256 of the log against `decision_prefix_sha256`, the line count against
`decision_events_written`, and the verdict `closed` / `incomplete` / `unknown`.

Reason codes agree with the Rust reader; reason details are shorter. The verdict object carries
`closure`, `reasons`, `session_id` and `files` (enough to compare with `assay capture read`).

    python3 bench/pure_reader.py DIR              # verdict JSON; exit 0 closed, 1 incomplete, 3 unknown
    python3 bench/pure_reader.py --time DIR       # also prints `inprocess_ms=<read+judge time>` on stderr
"""
from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import re
import stat
import sys
import time

PROTOCOL = "protocol.json"
CONTEXT = "session-context.json"
STOP = "session-stop.json"
LOG = "decisions.ndjson"

MAX_COMPANION_BYTES = 64 * 1024
MAX_LOG_BYTES = 8 * 1024 * 1024
MAX_DECISIONS = 10_000
MAX_DEPTH = 32
MAX_LINE_REASONS = 16

NON_CLAIMS = ["not_execution_proof", "not_authentication", "not_global_coverage", "not_durable_storage_proof"]
CLOSURE_NON_CLAIMS = NON_CLAIMS + ["not_producer_authentication"]
DECISIONS = {"allow", "deny", "error"}
# The Rust reader's one list is src/reason_code.rs; this independent reader keeps its own copy
# (python/tests/test_pure_reader.py checks it against that file).
POLICY_CODES = {
    "P_POLICY_ALLOW", "P_TOOL_DENIED", "P_TOOL_NOT_ALLOWED", "P_ARG_CONSTRAINT",
    "P_ARG_SCHEMA", "P_MALFORMED", "P_BATCH_REFUSED", "P_TOOL_UNPINNED", "P_TOOL_DRIFT",
    "P_TOOL_UNLISTED", "P_INSTRUCTIONS_DRIFT", "P_RESOURCE_DENIED", "P_RESOURCE_NOT_ALLOWED",
    "P_PROMPT_DENIED", "P_PROMPT_NOT_ALLOWED", "P_CLIENT_FEATURE_DENIED", "P_LIMIT_TOOL_CALLS",
    "P_LIMIT_PER_TOOL", "P_REPEATED_CALL", "P_RESULT_TOO_LARGE", "P_RESULT_SECRET",
    "P_RESULT_PATTERN", "P_RESULT_SCHEMA", "P_RESULT_UNREADABLE",
}

# Which codes each event type carries (SPEC §4.1a; the Rust reader's table is `Carrier` in
# src/reason_code.rs, python/tests/test_pure_reader.py holds the two together).
TOOL_DECISION_CODES = {
    "P_POLICY_ALLOW", "P_TOOL_DENIED", "P_TOOL_NOT_ALLOWED", "P_ARG_CONSTRAINT", "P_ARG_SCHEMA",
    "P_MALFORMED", "P_BATCH_REFUSED", "P_TOOL_UNPINNED", "P_TOOL_DRIFT", "P_TOOL_UNLISTED",
    "P_LIMIT_TOOL_CALLS", "P_LIMIT_PER_TOOL", "P_REPEATED_CALL",
}
MCP_DECISION_CODES = {
    "P_POLICY_ALLOW", "P_MALFORMED", "P_BATCH_REFUSED", "P_RESOURCE_DENIED",
    "P_RESOURCE_NOT_ALLOWED", "P_PROMPT_DENIED", "P_PROMPT_NOT_ALLOWED", "P_CLIENT_FEATURE_DENIED",
}
# An answer's event (SPEC §5.3 `assay.mcp.result`).
RESULT_CODES = {
    "P_POLICY_ALLOW", "P_RESULT_TOO_LARGE", "P_RESULT_SECRET", "P_RESULT_PATTERN", "P_RESULT_SCHEMA",
    "P_RESULT_UNREADABLE",
}
# The methods whose answers are judged (src/methods.rs `JUDGED_ANSWERS`).
JUDGED_METHODS = {"tools/call", "resources/read", "prompts/get", "completion/complete"}
FINDING_KINDS = {"secret", "pattern", "strip", "schema", "parts", "size", "unreadable"}
RESULT_ACTIONS = {"forwarded", "redacted", "refused"}
MAX_FINDINGS = 64
_TOOLS_REMOVED = {"P_TOOL_DENIED", "P_TOOL_NOT_ALLOWED", "P_TOOL_UNPINNED", "P_TOOL_DRIFT"}
_RESOURCES_REMOVED = {"P_RESOURCE_DENIED", "P_RESOURCE_NOT_ALLOWED"}
_INSTRUCTIONS_REMOVED = {"P_INSTRUCTIONS_DRIFT"}
# A listing's `method` and the codes its removals can carry; a listing without `method` (written
# before listings named it) may remove anything a named list can.
LISTING_REMOVAL_CODES = {
    "tools/list": _TOOLS_REMOVED,
    "resources/list": _RESOURCES_REMOVED,
    "resources/templates/list": _RESOURCES_REMOVED,
    "prompts/list": {"P_PROMPT_DENIED", "P_PROMPT_NOT_ALLOWED"},
    "initialize": _INSTRUCTIONS_REMOVED,
    "server/discover": _INSTRUCTIONS_REMOVED,
}
ANY_LIST_REMOVAL_CODES = set().union(*LISTING_REMOVAL_CODES.values())

HEX64 = re.compile(r"[0-9a-f]{64}")
SESSION_ID = re.compile(r"[0-9a-f]{32}")
UTC_TIME = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?Z")
EVENT_SOURCE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://\S*")
DECIMAL = re.compile(r"0|[1-9][0-9]*")


class Bad(Exception):
    """A refused file or JSON text: a reason code and a detail."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


# --- bounded reads --------------------------------------------------------------------------------

def read_bounded(path: str, bound: int) -> bytes:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EMLINK, errno.ENXIO):
            raise Bad("not_regular_file", f"{path} is not a regular file") from None
        raise Bad("missing_file", f"{path} cannot be opened: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Bad("not_regular_file", f"{path} is not a regular file")
        if st.st_size > bound:
            raise Bad("too_large", f"{path} holds {st.st_size} bytes, over {bound}")
        chunks = []
        left = bound + 1
        while left > 0:
            try:
                chunk = os.read(fd, min(left, 1 << 20))
            except OSError as e:
                raise Bad("missing_file", f"{path} cannot be read: {e.strerror}") from None
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > bound:
            raise Bad("too_large", f"{path} holds more than {bound} bytes")
        return data
    finally:
        os.close(fd)


# --- strict JSON ----------------------------------------------------------------------------------

def _pairs(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise Bad("duplicate_key", f"duplicate object key {key!r}")
        obj[key] = value
    return obj


def _constant(name):
    raise Bad("nonfinite_number", f"non-finite number {name}")


def _float(text):
    value = float(text)
    if math.isinf(value):
        raise Bad("nonfinite_number", f"number {text[:20]} overflows a double")
    return value


def _int(text):
    if len(text) > 15 and math.isinf(float(text)):
        raise Bad("nonfinite_number", f"number {text[:20]} overflows a double")
    return int(text)


def _depth_and_strings(value, level=0):
    """Nesting depth of a parsed value; refuses lone surrogates (not UTF-8 once decoded)."""
    if isinstance(value, dict):
        for k in value:
            _utf8(k)
        return max([level + 1] + [_depth_and_strings(v, level + 1) for v in value.values()])
    if isinstance(value, list):
        return max([level + 1] + [_depth_and_strings(v, level + 1) for v in value])
    if isinstance(value, str):
        _utf8(value)
    return level


def _utf8(s):
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise Bad("invalid_json", "lone surrogate escape") from None


def parse_json(data: bytes):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Bad("invalid_json", f"invalid JSON at byte {e.start}") from None
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant,
                           parse_float=_float, parse_int=_int)
    except RecursionError:
        raise Bad("too_deep", "nesting too deep") from None
    except ValueError as e:
        raise Bad("invalid_json", f"invalid JSON: {e}") from None
    if _depth_and_strings(value) > MAX_DEPTH:
        raise Bad("too_deep", "nesting too deep")
    return value


# --- field checks ---------------------------------------------------------------------------------

def is_utc_time(s) -> bool:
    m = isinstance(s, str) and UTC_TIME.fullmatch(s)
    if not m:
        return False
    _, mo, d, h, mi, sec, _ = m.groups()
    return 1 <= int(mo) <= 12 and 1 <= int(d) <= 31 and int(h) <= 23 and int(mi) <= 59 and int(sec) <= 60


def is_event_source(s) -> bool:
    return isinstance(s, str) and EVENT_SOURCE.fullmatch(s) is not None and s.isprintable()


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class Fields:
    """Field-by-field checks on one object; every failure is a schema_mismatch reason."""

    def __init__(self, what: str, obj: dict, reasons: list) -> None:
        self.what, self.obj, self.reasons, self.ok = what, obj, reasons, True

    def bad(self, key, msg):
        self.ok = False
        self.reasons.append(("schema_mismatch", f"{self.what}: `{key}` {msg}"))

    def check(self, key, pred, msg):
        if key not in self.obj:
            self.bad(key, "is missing")
            return None
        value = self.obj[key]
        if not pred(value):
            self.bad(key, msg)
            return None
        return value

    def str(self, key):
        return self.check(key, lambda v: isinstance(v, str), "is not a string")

    def equals(self, key, expected):
        return self.check(key, lambda v: v == expected and isinstance(v, str), f"is not {expected!r}")

    def one_of(self, key, allowed):
        return self.check(key, lambda v: isinstance(v, str) and v in allowed, "is not allowed")

    def sha256(self, key):
        return self.check(key, lambda v: isinstance(v, str) and HEX64.fullmatch(v), "is not 64 hex")

    def session_id(self, key):
        return self.check(key, lambda v: isinstance(v, str) and SESSION_ID.fullmatch(v), "is not 32 hex")

    def time(self, key):
        return self.check(key, is_utc_time, "is not an RFC 3339 UTC time")

    def non_claims(self, key):
        return self.check(key, lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)
                          and all(c in v for c in NON_CLAIMS), "is not a non_claims list")

    def producer(self, key):
        def ok(v):
            return (isinstance(v, dict) and v.get("name") == "assay"
                    and isinstance(v.get("version"), str))
        return self.check(key, ok, "is not an assay producer")


def check_protocol(m, reasons):
    f = Fields(PROTOCOL, m, reasons)
    f.equals("schema", "assay.capture.protocol.v1")
    sid = f.session_id("session_id")
    source = f.check("event_source", is_event_source, "is not an absolute URI")
    server_id = f.str("server_id")
    f.time("created_at")
    f.equals("decision_log", LOG)
    f.equals("session_context", CONTEXT)
    f.equals("session_stop", STOP)
    f.producer("producer")
    return {"session_id": sid, "event_source": source, "server_id": server_id} if f.ok else None


def check_envelope(name, m, ty, reasons):
    f = Fields(name, m, reasons)
    f.equals("specversion", "1.0")
    f.str("id")
    f.equals("type", ty)
    f.check("source", is_event_source, "is not an absolute URI")
    f.time("time")
    f.equals("datacontenttype", "application/json")
    f.check("data", lambda v: isinstance(v, dict), "is not an object")
    return f.ok


def check_context(m, reasons):
    env_ok = check_envelope(CONTEXT, m, "assay.mcp.session.context.v1", reasons)
    data = m.get("data")
    if not isinstance(data, dict):
        return None
    f = Fields(f"{CONTEXT} data", data, reasons)
    f.session_id("session_id")
    f.str("server_id")
    f.check("server_pid", lambda v: is_int(v) and 0 <= v <= 2**32 - 1, "is not a u32")
    f.time("started_at")
    f.sha256("policy_sha256")
    f.check("policy_name", lambda v: v is None or isinstance(v, str), "is not a string or null")
    f.one_of("decision_log", {"new", "append", "temporary", "absent"})
    f.check("session_stop_requested", lambda v: isinstance(v, bool), "is not a boolean")
    f.check("dry_run", lambda v: isinstance(v, bool), "is not a boolean")
    if "hide_refused_tools" in data:
        f.check("hide_refused_tools", lambda v: isinstance(v, bool), "is not a boolean")
    if "pins_sha256" in data:
        f.check("pins_sha256", lambda v: v is None or (isinstance(v, str) and HEX64.fullmatch(v)),
                "is not 64 hex or null")
    if "governed" in data:
        f.check("governed", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
                "is not an array of strings")
    if "record_arguments" in data:
        f.check("record_arguments", lambda v: isinstance(v, bool), "is not a boolean")
    f.sha256("command_sha256")
    f.producer("producer")
    f.equals("assertion_basis", "producer_observation")
    f.non_claims("non_claims")
    if not (f.ok and env_ok):
        return None
    return {"id": m["id"], "source": m["source"], **data}


def _opt(pred):
    return lambda v: v is None or pred(v)


def check_stop(m, reasons):
    env_ok = check_envelope(STOP, m, "assay.mcp.session.stop.v1", reasons)
    data = m.get("data")
    if not isinstance(data, dict):
        return None
    i32 = lambda v: is_int(v) and -2**31 <= v < 2**31  # noqa: E731
    u64 = lambda v: is_int(v) and 0 <= v < 2**64  # noqa: E731
    f = Fields(f"{STOP} data", data, reasons)
    f.session_id("session_id")
    f.str("server_id")
    f.check("server_pid", lambda v: is_int(v) and 0 <= v <= 2**32 - 1, "is not a u32")
    f.check("session_context_id", _opt(lambda v: isinstance(v, str)), "is not a string or null")
    f.one_of("session_end", {"client_closed", "proxy_error"})
    f.one_of("termination", {"exited", "signaled", "unknown"})
    f.check("exit_code", _opt(i32), "is not a 32-bit integer or null")
    f.check("signal", _opt(i32), "is not a 32-bit integer or null")
    f.check("core_dumped", _opt(lambda v: isinstance(v, bool)), "is not a boolean or null")
    f.check("assay_kill_requested", lambda v: isinstance(v, bool), "is not a boolean")
    # SPEC §4.3: a boolean when present (older records lack it); true needs a kill attempt.
    if "group_killed" in data:
        gk = data["group_killed"]
        if not isinstance(gk, bool):
            f.bad("group_killed", "is not a boolean")
        elif gk and data.get("assay_kill_requested") is False:
            f.bad("group_killed", "is true while assay_kill_requested is false")
    f.one_of("decision_log", {"complete", "incomplete", "temporary", "absent", "unknown"})
    f.check("decision_events_written", _opt(u64), "is not a u64 or null")
    f.check("decision_events_dropped", _opt(u64), "is not a u64 or null")
    f.check("decision_prefix_sha256", _opt(lambda v: isinstance(v, str) and HEX64.fullmatch(v)),
            "is not 64 hex or null")
    # SPEC §4.3 otlp_export: absent, or {spans, exported, dropped} with exported + dropped = spans.
    if "otlp_export" in data:
        ox = data["otlp_export"]
        if not (isinstance(ox, dict) and set(ox) == {"spans", "exported", "dropped"}
                and all(u64(ox[k]) for k in ox) and ox["exported"] + ox["dropped"] == ox["spans"]):
            f.bad("otlp_export", "is not {spans, exported, dropped} with exported + dropped = spans")
    f.equals("assertion_basis", "producer_observation")
    f.non_claims("non_claims")
    if not (f.ok and env_ok):
        return None
    return {"id": m["id"], "source": m["source"], **data}


def check_accounting(s, reasons):
    def bad(msg):
        reasons.append(("inconsistent_accounting", f"{STOP}: {msg}"))

    code, sig, core = s["exit_code"], s["signal"], s["core_dumped"]
    if s["termination"] == "exited":
        if code is None or not 0 <= code <= 255 or sig is not None or core is not None:
            bad("termination exited needs exit_code 0..=255 and null signal/core_dumped")
    elif s["termination"] == "signaled":
        if code is not None or sig is None or not 1 <= sig <= 127 or core is None:
            bad("termination signaled needs signal 1..=127, core_dumped set, null exit_code")
    elif code is not None or sig is not None or core is not None:
        bad("termination unknown needs null exit_code, signal and core_dumped")
    counters = [s[k] is not None for k in
                ("decision_events_written", "decision_events_dropped", "decision_prefix_sha256")]
    all_set, none_set = all(counters), not any(counters)
    if not all_set and not none_set:
        bad("decision accounting fields are neither all set nor all null")
    dropped = s["decision_events_dropped"] or 0
    log = s["decision_log"]
    if log == "complete":
        if not all_set:
            bad("decision_log complete without decision accounting")
        if dropped > 0:
            bad(f"decision_log complete with {dropped} dropped decision events")
        if s["session_end"] == "proxy_error":
            bad("decision_log complete with session_end proxy_error")
    elif log == "incomplete":
        if not all_set:
            bad("decision_log incomplete without decision accounting")
        if dropped == 0 and s["session_end"] == "client_closed":
            bad("decision_log incomplete with no dropped events and session_end client_closed")
    elif log in ("absent", "unknown") and not none_set:
        bad(f"decision_log {log} with decision accounting present")


def check_agreement(p, c, s, reasons):
    if c and c["id"] != f"evt_context_{c['session_id']}":
        reasons.append(("id_mismatch", f"{CONTEXT}: id is not evt_context_<session_id>"))
    if s and s["id"] != f"evt_stop_{s['session_id']}":
        reasons.append(("id_mismatch", f"{STOP}: id is not evt_stop_<session_id>"))
    if c and s:
        for field in ("session_id", "source", "server_id", "server_pid"):
            if s[field] != c[field]:
                reasons.append(("context_mismatch", f"{field}: stop and context differ"))
        if s["session_context_id"] != c["id"]:
            reasons.append(("context_mismatch", "session_context_id is not the context id"))
        if not c["session_stop_requested"]:
            reasons.append(("context_mismatch", "session_stop_requested is false"))
        if s["decision_log"] in ("complete", "incomplete") and c["decision_log"] in ("absent", "temporary"):
            reasons.append(("context_mismatch", "context decision_log contradicts the stop"))
    if p:
        for name, ev in ((CONTEXT, c), (STOP, s)):
            if ev is None:
                continue
            for field, theirs, ours in (("session_id", ev["session_id"], p["session_id"]),
                                        ("event_source/source", ev["source"], p["event_source"]),
                                        ("server_id", ev["server_id"], p["server_id"])):
                if theirs != ours:
                    reasons.append(("protocol_mismatch", f"{field}: {PROTOCOL} and {name} differ"))


# --- the decision log -----------------------------------------------------------------------------

DATA_KEYS = ("session_id", "seq", "tool", "tool_call_id", "decision", "reason_code", "reason",
             "matched_rule", "enforced", "policy_sha256", "arguments_sha256")
ENVELOPE_KEYS = ("specversion", "id", "type", "source", "time", "datacontenttype", "data")


def decision_line_problems(i, line, expect, decisions=None):
    """Reason (code, detail) pairs for decision line i (0-based): a tool decision, or one of the
    other event types of SPEC §4.1a, §5.3 (a line of any other type is read as a tool decision).
    `decisions`: the seqs of decision lines read so far (a result line names one; a decision
    line joins them)."""
    if decisions is None:
        decisions = set()
    try:
        ev = parse_json(line)
    except Bad as e:
        return [(e.code, e.detail)]
    ty = ev.get("type") if isinstance(ev, dict) else None
    if ty == "assay.tool.listing":
        return listing_line_problems(i, ev, expect)
    if ty == "assay.mcp.result":
        return result_line_problems(i, ev, expect, decisions)
    if ty == "assay.mcp.decision":
        out = mcp_line_problems(i, ev, expect)
        if not (out and out[0][1] == "an MCP decision field has the wrong type or value"):
            decisions.add(ev["data"]["seq"])
        return out
    # The typed shape of a decision event (a deserialization failure is one schema_mismatch).
    if not isinstance(ev, dict) or any(k not in ev for k in ENVELOPE_KEYS):
        return [("schema_mismatch", "not a decision event")]
    d = ev["data"]
    if not isinstance(d, dict) or any(k not in d for k in DATA_KEYS):
        return [("schema_mismatch", "data lacks a decision field")]
    typed = (
        all(isinstance(ev[k], str) for k in ENVELOPE_KEYS[:6])
        and isinstance(d["session_id"], str)
        and is_int(d["seq"]) and 0 <= d["seq"] < 2**64
        and all(d[k] is None or isinstance(d[k], str) for k in ("tool", "tool_call_id", "matched_rule", "arguments_sha256"))
        and d["decision"] in DECISIONS
        and d["reason_code"] in POLICY_CODES
        and isinstance(d["reason"], str)
        and isinstance(d["enforced"], bool)
        and isinstance(d["policy_sha256"], str)
        and (d.get("tool_definition_sha256") is None or isinstance(d["tool_definition_sha256"], str))
        and ("arguments" not in d or isinstance(d["arguments"], str))
        and ("arguments_truncated" not in d or isinstance(d["arguments_truncated"], bool))
    )
    if not typed:
        return [("schema_mismatch", "a decision field has the wrong type or value")]
    decisions.add(d["seq"])
    out = []
    if ev["specversion"] != "1.0":
        out.append(("schema_mismatch", "specversion is not 1.0"))
    if ev["type"] != "assay.tool.decision":
        out.append(("schema_mismatch", "type is not assay.tool.decision"))
    if ev["datacontenttype"] != "application/json":
        out.append(("schema_mismatch", "datacontenttype is not application/json"))
    if not is_utc_time(ev["time"]):
        out.append(("schema_mismatch", "time is not an RFC 3339 UTC time"))
    if not SESSION_ID.fullmatch(d["session_id"]):
        out.append(("schema_mismatch", "data.session_id is not 32 hex"))
    if not HEX64.fullmatch(d["policy_sha256"]):
        out.append(("schema_mismatch", "data.policy_sha256 is not 64 hex"))
    if d["arguments_sha256"] is not None and not HEX64.fullmatch(d["arguments_sha256"]):
        out.append(("schema_mismatch", "data.arguments_sha256 is not 64 hex or null"))
    tds = d.get("tool_definition_sha256")
    if tds is not None and not HEX64.fullmatch(tds):
        out.append(("schema_mismatch", "data.tool_definition_sha256 is not 64 hex or null"))
    if ("arguments" in d) != ("arguments_truncated" in d):
        out.append(("schema_mismatch", "data.arguments and data.arguments_truncated go together"))
    if (d["decision"] == "allow") != (d["reason_code"] == "P_POLICY_ALLOW"):
        out.append(("schema_mismatch", "decision allow goes with P_POLICY_ALLOW only"))
    if d["reason_code"] not in TOOL_DECISION_CODES:
        out.append(("schema_mismatch", f"a tool decision does not carry {d['reason_code']}"))
    if d["seq"] != i:
        out.append(("count_mismatch", f"seq {d['seq']} where {i} was expected"))
    sid = expect["session_id"] or d["session_id"]
    if d["session_id"] != sid:
        out.append(("id_mismatch", "data.session_id is not this session's"))
    prefix = f"evt_decision_{sid}_"
    n = ev["id"][len(prefix):] if ev["id"].startswith(prefix) else ""
    if not (DECIMAL.fullmatch(n) and int(n) == d["seq"]):
        out.append(("id_mismatch", "id is not evt_decision_<session_id>_<seq>"))
    if expect["source"] is not None:
        if ev["source"] != expect["source"]:
            out.append(("context_mismatch", "source differs from the session's"))
    elif not is_event_source(ev["source"]):
        out.append(("schema_mismatch", "source is not an absolute URI"))
    if expect["policy_sha256"] is not None and d["policy_sha256"] != expect["policy_sha256"]:
        out.append(("context_mismatch", "data.policy_sha256 differs from the context's"))
    if expect["dry_run"] is not None and d["enforced"] == expect["dry_run"]:
        out.append(("context_mismatch", "data.enforced contradicts the context's dry_run"))
    return out


def _is_str(v):
    return isinstance(v, str)


def _nullable_str(v):
    return v is None or isinstance(v, str)


def common_problems(i, ev, d, expect, ty, id_prefix, enforced):
    """The checks every log line shares (envelope, session, seq, id, source, policy, dry run)."""
    out = []
    if ev["specversion"] != "1.0":
        out.append(("schema_mismatch", "specversion is not 1.0"))
    if ev["type"] != ty:
        out.append(("schema_mismatch", f"type is not {ty}"))
    if ev["datacontenttype"] != "application/json":
        out.append(("schema_mismatch", "datacontenttype is not application/json"))
    if not is_utc_time(ev["time"]):
        out.append(("schema_mismatch", "time is not an RFC 3339 UTC time"))
    if not SESSION_ID.fullmatch(d["session_id"]):
        out.append(("schema_mismatch", "data.session_id is not 32 hex"))
    if not HEX64.fullmatch(d["policy_sha256"]):
        out.append(("schema_mismatch", "data.policy_sha256 is not 64 hex"))
    if d["seq"] != i:
        out.append(("count_mismatch", f"seq {d['seq']} where {i} was expected"))
    sid = expect["session_id"] or d["session_id"]
    if d["session_id"] != sid:
        out.append(("id_mismatch", "data.session_id is not this session's"))
    prefix = f"{id_prefix}{sid}_"
    n = ev["id"][len(prefix):] if ev["id"].startswith(prefix) else ""
    if not (DECIMAL.fullmatch(n) and int(n) == d["seq"]):
        out.append(("id_mismatch", f"id is not {id_prefix}<session_id>_<seq>"))
    if expect["source"] is not None:
        if ev["source"] != expect["source"]:
            out.append(("context_mismatch", "source differs from the session's"))
    elif not is_event_source(ev["source"]):
        out.append(("schema_mismatch", "source is not an absolute URI"))
    if expect["policy_sha256"] is not None and d["policy_sha256"] != expect["policy_sha256"]:
        out.append(("context_mismatch", "data.policy_sha256 differs from the context's"))
    if enforced is not None and expect["dry_run"] is not None and enforced == expect["dry_run"]:
        out.append(("context_mismatch", "data.enforced contradicts the context's dry_run"))
    return out


def _typed_envelope(ev, keys):
    if any(k not in ev for k in ENVELOPE_KEYS):
        return None
    d = ev["data"]
    if not isinstance(d, dict) or any(k not in d for k in keys):
        return None
    if not all(isinstance(ev[k], str) for k in ENVELOPE_KEYS[:6]):
        return None
    if not (isinstance(d["session_id"], str) and is_int(d["seq"]) and 0 <= d["seq"] < 2**64
            and isinstance(d["policy_sha256"], str)):
        return None
    return d


LISTING_KEYS = ("session_id", "seq", "request_id", "shown", "removed", "replaced_by_error", "policy_sha256")


def listing_line_problems(i, ev, expect):
    """An `assay.tool.listing` line (SPEC §4.1a)."""
    d = _typed_envelope(ev, LISTING_KEYS)
    typed = (
        d is not None
        and _is_str(d["request_id"])
        and isinstance(d["shown"], list)
        and all(isinstance(t, dict) and _is_str(t.get("name")) and _is_str(t.get("sha256")) for t in d["shown"])
        and isinstance(d["removed"], list)
        and all(isinstance(t, dict) and _is_str(t.get("name")) and "sha256" in t and _nullable_str(t["sha256"])
                and _is_str(t.get("reason_code")) and t["reason_code"] in POLICY_CODES for t in d["removed"])
        and isinstance(d["replaced_by_error"], bool)
        and ("method" not in d or _is_str(d["method"]))
    )
    if not typed:
        return [("schema_mismatch", "a listing field has the wrong type or value")]
    out = common_problems(i, ev, d, expect, "assay.tool.listing", "evt_listing_", None)
    if any(not HEX64.fullmatch(t["sha256"]) for t in d["shown"]):
        out.append(("schema_mismatch", "a data.shown sha256 is not 64 hex"))
    if any(t["sha256"] is not None and not HEX64.fullmatch(t["sha256"]) for t in d["removed"]):
        out.append(("schema_mismatch", "a data.removed sha256 is not 64 hex or null"))
    if any(t["reason_code"] == "P_POLICY_ALLOW" for t in d["removed"]):
        out.append(("schema_mismatch", "a data.removed reason_code is P_POLICY_ALLOW"))
    method = d.get("method")
    if method is None:
        carried = ANY_LIST_REMOVAL_CODES
    elif method in LISTING_REMOVAL_CODES:
        carried = LISTING_REMOVAL_CODES[method]
    else:
        carried = None
        out.append(("schema_mismatch", "data.method is not a method a listing answers"))
    if carried is not None and any(t["reason_code"] != "P_POLICY_ALLOW" and t["reason_code"] not in carried
                                   for t in d["removed"]):
        out.append(("schema_mismatch", "a data.removed reason_code is not one this list carries"))
    return out


MCP_KEYS = ("session_id", "seq", "method", "direction", "target", "request_id", "decision", "reason_code",
            "reason", "matched_rule", "enforced", "policy_sha256", "params_sha256")


def mcp_line_problems(i, ev, expect):
    """An `assay.mcp.decision` line (SPEC §4.1a)."""
    d = _typed_envelope(ev, MCP_KEYS)
    typed = (
        d is not None
        and _is_str(d["method"])
        and _is_str(d["direction"]) and d["direction"] in ("client_to_server", "server_to_client")
        and all(_nullable_str(d[k]) for k in ("target", "request_id", "matched_rule", "params_sha256"))
        and _is_str(d["decision"]) and d["decision"] in DECISIONS
        and _is_str(d["reason_code"]) and d["reason_code"] in POLICY_CODES
        and _is_str(d["reason"])
        and isinstance(d["enforced"], bool)
    )
    if not typed:
        return [("schema_mismatch", "an MCP decision field has the wrong type or value")]
    out = common_problems(i, ev, d, expect, "assay.mcp.decision", "evt_decision_", d["enforced"])
    if d["params_sha256"] is not None and not HEX64.fullmatch(d["params_sha256"]):
        out.append(("schema_mismatch", "data.params_sha256 is not 64 hex or null"))
    if (d["decision"] == "allow") != (d["reason_code"] == "P_POLICY_ALLOW"):
        out.append(("schema_mismatch", "decision allow goes with P_POLICY_ALLOW only"))
    if d["reason_code"] not in MCP_DECISION_CODES:
        out.append(("schema_mismatch", f"an MCP decision does not carry {d['reason_code']}"))
    return out


RESULT_KEYS = ("session_id", "seq", "method", "request_id", "decision_id", "sha256", "bytes", "is_error",
               "parts", "findings", "findings_total", "action", "reason_code", "enforced", "policy_sha256")


def _is_u64(v):
    return is_int(v) and 0 <= v < 2**64


def result_line_problems(i, ev, expect, decisions):
    """An `assay.mcp.result` line (SPEC §5.3)."""
    d = _typed_envelope(ev, RESULT_KEYS)
    typed = (
        d is not None
        and _is_str(d["method"])
        and (_is_str(d["request_id"]) or (isinstance(d["request_id"], (int, float)) and not isinstance(d["request_id"], bool)))
        and _nullable_str(d["decision_id"])
        and _is_str(d["sha256"])
        and _is_u64(d["bytes"])
        and isinstance(d["is_error"], bool)
        and isinstance(d["parts"], dict) and all(_is_u64(n) for n in d["parts"].values())
        and isinstance(d["findings"], list)
        and all(isinstance(f, dict) and all(_is_str(f.get(k)) for k in ("kind", "rule", "path")) for f in d["findings"])
        and _is_u64(d["findings_total"])
        and _is_str(d["action"]) and d["action"] in RESULT_ACTIONS
        and _is_str(d["reason_code"]) and d["reason_code"] in POLICY_CODES
        and isinstance(d["enforced"], bool)
    )
    if not typed:
        return [("schema_mismatch", "a result field has the wrong type or value")]
    out = common_problems(i, ev, d, expect, "assay.mcp.result", "evt_result_", d["enforced"])
    if d["reason_code"] not in RESULT_CODES:
        out.append(("schema_mismatch", f"a result event does not carry {d['reason_code']}"))
    if d["method"] not in JUDGED_METHODS:
        out.append(("schema_mismatch", "data.method is not a method whose answers are judged"))
    if not HEX64.fullmatch(d["sha256"]):
        out.append(("schema_mismatch", "data.sha256 is not 64 hex"))
    allow = d["reason_code"] == "P_POLICY_ALLOW"
    if d["action"] == "refused" and allow:
        out.append(("schema_mismatch", "action refused goes with a refusing reason_code"))
    elif d["action"] == "redacted" and not allow:
        out.append(("schema_mismatch", "action redacted goes with P_POLICY_ALLOW"))
    elif d["action"] == "forwarded" and not allow and d["enforced"]:
        out.append(("schema_mismatch", "an enforced answer with a refusing code is not forwarded"))
    n = len(d["findings"])
    if n > MAX_FINDINGS or n > d["findings_total"]:
        out.append(("schema_mismatch", "data.findings holds more entries than findings_total"))
    if d["findings_total"] > 0 and n == 0:
        out.append(("schema_mismatch", "data.findings is empty but findings_total is not"))
    if any(f["kind"] not in FINDING_KINDS for f in d["findings"]):
        out.append(("schema_mismatch", "a finding's kind is not a kind of finding"))
    if d["decision_id"] is not None:
        prefix = f"evt_decision_{d['session_id']}_"
        n = d["decision_id"][len(prefix):] if d["decision_id"].startswith(prefix) else ""
        if not (DECIMAL.fullmatch(n) and int(n) < i and int(n) in decisions):
            out.append(("id_mismatch", "data.decision_id names no decision line before it"))
    return out


def check_log(data, expect, stop, reasons, files):
    split = data.rfind(b"\n") + 1
    prefix, tail = data[:split], data[split:]
    prefix_sha = hashlib.sha256(prefix).hexdigest()
    file_sha = hashlib.sha256(data).hexdigest()
    files[LOG] = {"bytes": len(data), "sha256": file_sha}

    lines = prefix.split(b"\n")[:-1]
    if len(lines) > MAX_DECISIONS:
        reasons.append(("too_many_decisions", f"{LOG} holds {len(lines)} lines"))
    else:
        problems = []
        decisions = set()
        for i, line in enumerate(lines):
            problems.extend(decision_line_problems(i, line, expect, decisions))
        reasons.extend(problems[:MAX_LINE_REASONS])
        if len(problems) > MAX_LINE_REASONS:
            reasons.append((problems[MAX_LINE_REASONS][0],
                            f"{LOG}: {len(problems) - MAX_LINE_REASONS} more line problems not listed"))

    if stop is None or stop["decision_log"] not in ("complete", "incomplete"):
        return
    full = stop["decision_log"] == "complete"
    if full and tail:
        reasons.append(("partial_line", f"{LOG} ends without a newline"))
    written = stop["decision_events_written"]
    if written is not None and written != len(lines):
        reasons.append(("count_mismatch", f"{LOG} holds {len(lines)} lines, written is {written}"))
    want = stop["decision_prefix_sha256"]
    if want is not None and (file_sha if full else prefix_sha) != want:
        reasons.append(("digest_mismatch", f"{LOG}: SHA-256 differs from decision_prefix_sha256"))


# --- the verdict ----------------------------------------------------------------------------------

def read_capture(directory: str) -> dict:
    reasons: list = []
    files: dict = {}

    def load(name, bound):
        try:
            data = read_bounded(os.path.join(directory, name), bound)
        except Bad as e:
            reasons.append((e.code, e.detail))
            return None
        return data

    def companion(name):
        data = load(name, MAX_COMPANION_BYTES)
        if data is None:
            return None
        files[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        try:
            value = parse_json(data)
        except Bad as e:
            reasons.append((e.code, f"{name}: {e.detail}"))
            return None
        if not isinstance(value, dict):
            reasons.append(("schema_mismatch", f"{name}: not a JSON object"))
            return None
        return value

    protocol, context, stop = companion(PROTOCOL), companion(CONTEXT), companion(STOP)
    p = check_protocol(protocol, reasons) if protocol is not None else None
    c = check_context(context, reasons) if context is not None else None
    s = check_stop(stop, reasons) if stop is not None else None
    if s:
        check_accounting(s, reasons)
    check_agreement(p, c, s, reasons)

    def first(key_s, key_c, key_p):
        for view, key in ((s, key_s), (c, key_c), (p, key_p)):
            if view:
                return view[key]
        return None

    expect = {
        "session_id": first("session_id", "session_id", "session_id"),
        "source": first("source", "source", "event_source"),
        "policy_sha256": c["policy_sha256"] if c else None,
        "dry_run": c["dry_run"] if c else None,
    }
    log = load(LOG, MAX_LOG_BYTES)
    if log is not None:
        check_log(log, expect, s, reasons, files)

    hard = any(code not in ("decision_loss", "proxy_error") for code, _ in reasons)
    state = s["decision_log"] if s else None
    if state is None:
        closure = "unknown"
    elif state == "complete":
        closure = "unknown" if hard else "closed"
    elif state == "incomplete":
        # decision_loss only when events were not written; proxy_error names the ending.
        if (s["decision_events_dropped"] or 0) > 0:
            reasons.append(("decision_loss", f"{STOP}: {s['decision_events_dropped']} decision events were not written"))
        if s["session_end"] == "proxy_error":
            reasons.append(("proxy_error", f"{STOP}: session_end is proxy_error"))
        closure = "unknown" if hard else "incomplete"
    else:
        reasons.append(("decision_log_not_retained", f"{STOP}: decision_log is {state}"))
        closure = "unknown"
    if closure == "unknown" and not reasons:
        reasons.append(("schema_mismatch", f"{STOP}: no usable stop record"))

    sid = expect["session_id"]
    return {
        "schema": "assay.capture.closure.v1",
        "closure": closure,
        "reasons": [{"code": code, "detail": detail} for code, detail in reasons],
        "session_id": sid if isinstance(sid, str) and SESSION_ID.fullmatch(sid) else None,
        "files": files,
        "non_claims": CLOSURE_NON_CLAIMS,
    }


def main(argv):
    report_time = "--time" in argv
    args = [a for a in argv if a != "--time"]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    verdict = read_capture(args[0])
    elapsed = time.perf_counter() - t0
    print(json.dumps(verdict))
    if report_time:
        print(f"inprocess_ms={elapsed * 1e3:.3f}", file=sys.stderr)
    return {"closed": 0, "incomplete": 1}.get(verdict["closure"], 3)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
