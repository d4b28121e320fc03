// Server→client parser differential (SPEC §5, §11): the official TypeScript SDK clients
// (`@modelcontextprotocol/sdk` 1.x and `@modelcontextprotocol/client` 2.x, legacy handshake)
// list the tools of a hostile server (tests/fixtures/hostile_list_server.py MODE), directly and
// through `assay mcp wrap` with each policy, and report what `listTools` showed them.
//
// usage: node list_differential.mjs MODE...
//   (environment: ASSAY_BIN, ASSAY_PATHS, ASSAY_PYTHON, ASSAY_HOSTILE_SERVER)
//   ASSAY_PATHS: PATH[,PATH...], each `direct` or NAME=POLICY (through `assay mcp wrap --policy`)
// Prints one JSON line per client, mode and path:
//   {"client":"typescript-v1","mode":M,"wrapped":true,"policy":NAME,"tools":[names]}
//   or {..., "error":"…"}; a direct row has "wrapped":false and "policy":null.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Client as Client2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioClientTransport2 } from "@modelcontextprotocol/client/stdio";

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const ASSAY = env("ASSAY_BIN");
const PATHS = env("ASSAY_PATHS")
  .split(",")
  .map((p) => (p === "direct" ? null : p.split(/=(.*)/s).slice(0, 2)));
const PYTHON = env("ASSAY_PYTHON");
const SERVER = env("ASSAY_HOSTILE_SERVER");
const TIMEOUT = 4000;

function launch(policy, mode) {
  const server = [PYTHON, SERVER, mode];
  return policy
    ? { command: ASSAY, args: ["mcp", "wrap", "--policy", policy[1], "--", ...server] }
    : { command: server[0], args: server.slice(1) };
}

const clients = {
  "typescript-v1": async ({ command, args }) => {
    const client = new Client({ name: "list-differential", version: "1" }, { capabilities: {} });
    const transport = new StdioClientTransport({ command, args, stderr: "ignore" });
    await client.connect(transport, { timeout: TIMEOUT });
    try {
      return (await client.listTools({}, { timeout: TIMEOUT })).tools.map((t) => t.name);
    } finally {
      await client.close();
    }
  },
  "typescript-v2": async ({ command, args }) => {
    const client = new Client2(
      { name: "list-differential", version: "1" },
      { capabilities: {}, versionNegotiation: { mode: "legacy" } },
    );
    const transport = new StdioClientTransport2({ command, args, stderr: "ignore" });
    await client.connect(transport, { timeout: TIMEOUT });
    try {
      return (await client.listTools({}, { timeout: TIMEOUT })).tools.map((t) => t.name);
    } finally {
      await client.close();
    }
  },
};

async function one(name, mode, policy) {
  const row = { client: name, mode, wrapped: policy !== null, policy: policy && policy[0] };
  try {
    row.tools = await clients[name](launch(policy, mode));
  } catch (e) {
    row.error = String(e?.message ?? e).slice(0, 200);
  }
  return row;
}

const jobs = [];
for (const mode of process.argv.slice(2)) {
  for (const policy of PATHS) {
    for (const name of Object.keys(clients)) jobs.push([name, mode, policy]);
  }
}
// A few sessions at a time: each is a node client, a Python server and maybe the wrapper (those
// that time out wait without work: more of them than there are cores).
const rows = [];
let next = 0;
async function worker() {
  while (next < jobs.length) {
    const job = jobs[next++];
    rows.push(await one(...job));
  }
}
await Promise.all(Array.from({ length: 8 }, worker));
for (const row of rows) console.log(JSON.stringify(row));
