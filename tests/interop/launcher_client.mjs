// A host as the official TypeScript SDK 1.x client is one (tests/launchers.rs): it starts the
// command given on its command line with StdioClientTransport, runs initialize, tools/list and
// one tools/call, and closes the way the SDK closes (its own close(): end stdin, wait up to 2 s
// for the process to exit, SIGTERM, up to 2 s more, SIGKILL).
//
// usage: node launcher_client.mjs TOOL ARGUMENTS_JSON COMMAND [ARG...]
// The child gets this process's whole environment (the test sets a marker in it that every
// process of the server's tree inherits) and its working directory. stderr is inherited.
// Prints one JSON object: the tools listed, the call's result, the wrapper's PID, and how long
// close() took (close_ms) and whether the process had exited before the SDK's SIGTERM.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [tool, argumentsJson, command, ...args] = process.argv.slice(2);
if (!command) {
  console.error("usage: node launcher_client.mjs TOOL ARGUMENTS_JSON COMMAND [ARG...]");
  process.exit(2);
}

const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" });
const client = new Client({ name: "assay-launcher-test", version: "1" }, { capabilities: {} });
await client.connect(transport);
const pid = transport.pid;
const tools = (await client.listTools()).tools.map((t) => t.name).sort();
const call = await client.callTool({ name: tool, arguments: JSON.parse(argumentsJson) });
const started = performance.now();
await client.close();
const closeMs = performance.now() - started;
console.log(
  JSON.stringify({
    tools,
    call,
    pid,
    close_ms: Math.round(closeMs),
    // The SDK sends SIGTERM 2 s after ending stdin when the process has not exited by then.
    before_sigterm: closeMs < 2000,
  }),
);
