// Client→server parser differential (SPEC §3 item 6, §5.2, §11): reads the bytes a server
// received the way the official TypeScript SDK servers do — `@modelcontextprotocol/sdk` 1.x and
// `@modelcontextprotocol/server` 2.x: split at "\n", decoded as UTF-8 with replacement, one
// trailing "\r" dropped, `JSON.parse` (the last of duplicate keys wins), the SDK's
// `JSONRPCMessageSchema`, then, for a request of a method it serves, that method's request
// schema (what `setRequestHandler` validates before a handler runs). A JSON array line is not a
// message to either SDK; its object elements are read with the same schemas anyway, as a server
// that accepted batches would.
//
// usage: node client_line_differential.mjs RECEIVED
// Prints one JSON line per message a handler would run with:
//   {"reader":"typescript-v1","line":N,"method":M,"id":ID,"target":T}
// where T is the resource URI (resources/read, resources/subscribe), the prompt name
// (prompts/get) or the tool name (tools/call), as the handler receives it.

import { readFileSync } from "node:fs";
import * as v1 from "@modelcontextprotocol/sdk/types.js";
import { deserializeMessage as deserializeV1 } from "@modelcontextprotocol/sdk/shared/stdio.js";
import { specTypeSchemas, deserializeMessage as deserializeV2 } from "@modelcontextprotocol/server";

const v2 = (name) => {
  const schema = specTypeSchemas[name];
  if (!schema) throw new Error(`@modelcontextprotocol/server has no schema ${name}`);
  return schema;
};

// Per reader: how a line becomes a message, and the request schema of each judged method with
// the member that names its target.
const readers = {
  "typescript-v1": {
    deserialize: deserializeV1,
    message: v1.JSONRPCMessageSchema,
    methods: {
      "resources/read": [v1.ReadResourceRequestSchema, "uri"],
      "resources/subscribe": [v1.SubscribeRequestSchema, "uri"],
      "prompts/get": [v1.GetPromptRequestSchema, "name"],
      "tools/call": [v1.CallToolRequestSchema, "name"],
    },
  },
  "typescript-v2": {
    deserialize: deserializeV2,
    message: v2("JSONRPCMessage"),
    methods: {
      "resources/read": [v2("ReadResourceRequest"), "uri"],
      "resources/subscribe": [v2("SubscribeRequest"), "uri"],
      "prompts/get": [v2("GetPromptRequest"), "name"],
      "tools/call": [v2("CallToolRequest"), "name"],
    },
  },
};

// The lines of `raw` as the SDKs' ReadBuffer cuts them (an unterminated tail is never read).
function lines(raw) {
  const out = [];
  let start = 0;
  for (;;) {
    const nl = raw.indexOf(0x0a, start);
    if (nl === -1) return out;
    out.push(raw.toString("utf8", start, nl).replace(/\r$/, ""));
    start = nl + 1;
  }
}

// The handler's view of one message, or null when no handler would run.
function handled(reader, msg) {
  if (typeof msg?.method !== "string" || !("id" in msg)) return null; // requests only
  const entry = reader.methods[msg.method];
  if (!entry) return null;
  const [schema, member] = entry;
  const parsed = schema.safeParse(msg);
  if (!parsed.success) return null;
  return { method: msg.method, id: msg.id, target: parsed.data.params?.[member] ?? null };
}

const [received] = process.argv.slice(2);
if (!received) {
  process.stderr.write("usage: node client_line_differential.mjs RECEIVED\n");
  process.exit(2);
}
const text = lines(readFileSync(received));
for (const [name, reader] of Object.entries(readers)) {
  text.forEach((line, k) => {
    const seen = [];
    try {
      seen.push(handled(reader, reader.deserialize(line)));
    } catch {
      // Not a message to this SDK. An array is read element by element (see above).
      let value;
      try {
        value = JSON.parse(line);
      } catch {
        return;
      }
      if (!Array.isArray(value)) return;
      for (const element of value) {
        const parsed = reader.message.safeParse(element);
        if (parsed.success) seen.push(handled(reader, parsed.data));
      }
    }
    for (const s of seen) {
      if (s) process.stdout.write(JSON.stringify({ reader: name, line: k + 1, ...s }) + "\n");
    }
  });
}
