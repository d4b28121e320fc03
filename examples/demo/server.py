#!/usr/bin/env python3
"""A small MCP stdio server (standard library only) used by the demo and the tests.

It speaks newline-delimited JSON-RPC 2.0 on stdin/stdout, answers `initialize`, `ping`,
`tools/list` and `tools/call` for a handful of tools, and ends at stdin EOF. It never writes
anything but protocol to stdout; notes go to stderr.
"""
import json
import os
import sys

PROTOCOL_VERSION = "2025-06-18"

TOOLS = [
    {
        "name": "echo",
        "description": "Echo the given text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "read_file",
        "description": "Pretend to read a file under /workspace.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
    {
        "name": "write_file",
        "description": "Pretend to write a file.",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path"],
        },
    },
    {
        "name": "exec",
        "description": "Run a shell command (the demo policy denies it).",
        "inputSchema": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    },
]


def text_result(text, is_error=False):
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def call_tool(name, args):
    if name == "echo":
        return text_result(str(args.get("text", "")))
    if name == "read_file":
        return text_result("contents of %s" % args.get("path"))
    if name == "write_file":
        return text_result("wrote %d bytes to %s" % (len(str(args.get("content", ""))), args.get("path")))
    if name == "exec":
        return text_result("executed %r" % args.get("cmd"))
    return text_result("unknown tool %s" % name, is_error=True)


def handle(msg):
    """Returns the response object for a request, or None for notifications and responses."""
    method = msg.get("method")
    if method is None or "id" not in msg:
        return None
    mid = msg["id"]
    if method == "initialize":
        result = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "assay-demo-server", "version": "1.0"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        params = msg.get("params") or {}
        result = call_tool(params.get("name"), params.get("arguments") or {})
    else:
        return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found: %s" % method}}
    return {"jsonrpc": "2.0", "id": mid, "result": result}


def send(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def serve(on_message=None):
    """Reads requests until EOF. `on_message(msg)` may return False to skip the default reply."""
    for raw in sys.stdin:
        raw = raw.strip()
        if not raw:
            continue
        try:
            msg = json.loads(raw)
        except ValueError:
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            continue
        items = msg if isinstance(msg, list) else [msg]
        replies = []
        for item in items:
            if not isinstance(item, dict):
                continue
            if on_message is not None and on_message(item) is False:
                continue
            reply = handle(item)
            if reply is not None:
                replies.append(reply)
        if isinstance(msg, list):
            if replies:
                send(replies)
        elif replies:
            send(replies[0])


if __name__ == "__main__":
    print("assay-demo-server: pid %d ready" % os.getpid(), file=sys.stderr, flush=True)
    serve()
