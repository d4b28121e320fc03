// What the server answers (SPEC §5.3 `results`) read by the official TypeScript SDK 1.x client:
// tests/fixtures/results_server.py behind `assay mcp wrap` with a policy that redacts secrets,
// strips terminal, bidi and tag characters and enforces output schemas. The client must accept
// every rewritten answer, and get a schema-violating answer as the wrapper's isError refusal
// (without it, the SDK itself throws on structuredContent that fails the outputSchema).
//
// usage: node results_session.mjs   (environment: ASSAY_BIN, ASSAY_POLICY, ASSAY_WORK, ASSAY_PYTHON)
// Prints one JSON object with what the client saw.

import path from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const SERVER = path.join(here, "..", "fixtures", "results_server.py");

const transport = new StdioClientTransport({
  command: env("ASSAY_BIN"),
  args: ["mcp", "wrap", "--policy", env("ASSAY_POLICY"), "--event-source", "assay://results/ts",
    "--capture-dir", path.join(env("ASSAY_WORK"), "ts"), "--", env("ASSAY_PYTHON"), SERVER],
  stderr: "ignore",
});
const client = new Client({ name: "results-session", version: "1" }, { capabilities: {} });
await client.connect(transport);
await client.listTools();
const say = await client.callTool({
  name: "say",
  arguments: { text: "\u001b[31mkey\u001b[0m AKIAIOSFODNN7EXAMPLE \u202etxt\u{E0041}", parts: 2 },
});
const bad = await client.callTool({ name: "measure", arguments: { n: "many" } });
const good = await client.callTool({ name: "measure", arguments: { n: 3 } });
const read = await client.readResource({ uri: "test://x?text=ghp_abcdefghijklmnopqrstuvwxyz0123456789" });
await client.close();
console.log(JSON.stringify({
  say: say.content.map((c) => c.text),
  bad: { isError: bad.isError, structured: bad.structuredContent ?? null,
    code: bad._meta?.["assay/decision"]?.reason_code ?? null },
  good: good.structuredContent,
  read: read.contents.map((c) => c.text),
}));
