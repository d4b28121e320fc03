// Interop (SPEC §11): the official MCP TypeScript SDK clients drive the published reference
// servers (SDK 1.x client, initialize handshake) and official Python and TypeScript SDK servers
// (SDK 2.x client, on the initialize handshake and on 2026-07-28 through server/discover), once
// directly and once through `assay mcp wrap`, and compare the responses call by call. Refusals
// must come back as isError tool results (callTool returns, never throws), also for tools with
// an output schema.
//
// usage: node interop.mjs   (environment: ASSAY_BIN, ASSAY_WORK (a scratch directory),
//                            ASSAY_PYTHON (a Python with mcp 2.3), ASSAY_SDK_SERVER (its server))
// Prints one line per check; exits 1 on the first difference.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { Client as Client2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioClientTransport2 } from "@modelcontextprotocol/client/stdio";

const here = path.dirname(fileURLToPath(import.meta.url));
const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const ASSAY = env("ASSAY_BIN");
const WORK = env("ASSAY_WORK");
const PYTHON = env("ASSAY_PYTHON");
const SDK_SERVER = env("ASSAY_SDK_SERVER");
const EVERYTHING = path.join(here, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const FILESYSTEM = path.join(here, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");

const POLICY = path.join(WORK, "policy.yaml");
fs.writeFileSync(
  POLICY,
  [
    'version: "1"',
    "name: interop",
    'allow: ["*"]',
    // get-structured-content and write_file declare an output schema; exec is the Python one.
    'deny: ["get-env", "get-structured-content", "write_file", "exec"]',
    "",
  ].join("\n"),
);

let captures = 0;
/** The server argv, run directly or behind the wrapper with a fresh capture directory. */
function launch(wrapped, command, args) {
  if (!wrapped) return { command, args };
  const cap = path.join(WORK, `cap-${captures++}`);
  // No `--`: the server command starts at the first argument that is not an option.
  return {
    command: ASSAY,
    args: ["mcp", "wrap", "--policy", POLICY, "--event-source", "assay://interop/ts",
      "--capture-dir", cap, command, ...args],
    cap,
  };
}

function ok(what) {
  console.log(`ok ${what}`);
}

/** Drops members that legitimately differ between two runs of the same server. */
function stable(v) {
  return JSON.parse(JSON.stringify(v, (k, x) => (k === "timestamp" ? undefined : x)));
}

function assertRefusal(result, code) {
  assert.equal(result.isError, true, JSON.stringify(result));
  assert.equal(result.structuredContent, undefined);
  const d = result._meta["assay/decision"];
  assert.equal(d.decision, "deny");
  assert.equal(d.reason_code, code);
  assert.match(d.decision_id, /^evt_decision_[0-9a-f]{32}_\d+$/);
  assert.match(result.content[0].text, new RegExp(code));
}

function decisions(cap) {
  return fs
    .readFileSync(path.join(cap, "decisions.ndjson"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l).data);
}

// ---- server-everything: tools, output schemas, progress, sampling, elicitation, resources ----

async function everything(wrapped) {
  const { command, args, cap } = launch(wrapped, process.execPath, [EVERYTHING, "stdio"]);
  const client = new Client(
    { name: "assay-interop", version: "1" },
    { capabilities: { sampling: {}, elicitation: { form: {} } } },
  );
  const sampled = [];
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    sampled.push(req.params.messages.length);
    return { role: "assistant", content: { type: "text", text: "sampled" }, model: "m" };
  });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "decline" }));
  const transport = new StdioClientTransport({ command, args, stderr: process.env.ASSAY_INTEROP_STDERR ?? "ignore" });
  await client.connect(transport);
  const out = { protocol: client.getServerVersion()?.name };
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  out.echo = await client.callTool({ name: "echo", arguments: { message: "hi" } });
  out.sum = await client.callTool({ name: "get-sum", arguments: { a: 2, b: 3 } });
  const progress = [];
  out.longRunning = await client.callTool(
    { name: "trigger-long-running-operation", arguments: { duration: 0.3, steps: 3 } },
    undefined,
    { onprogress: (p) => progress.push([p.progress, p.total]) },
  );
  out.progress = progress;
  out.sampling = await client.callTool({
    name: "trigger-sampling-request",
    arguments: { prompt: "p", maxTokens: 5 },
  });
  out.sampled = sampled;
  out.elicitation = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
  out.resources = (await client.listResources()).resources.slice(0, 3);
  out.read = await client.readResource({ uri: out.resources[0].uri });
  out.concurrent = await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      client.callTool({ name: "echo", arguments: { message: `m${i}` } }),
    ),
  );
  // Denied tools: a refusal result, not an exception (get-structured-content has an
  // outputSchema the SDK validates structuredContent against, even on errors).
  out.denied = await client.callTool({ name: "get-structured-content", arguments: { location: "New York" } });
  out.deniedPlain = await client.callTool({ name: "get-env", arguments: {} });
  await client.close();
  return { out, cap };
}

// ---- server-everything under a policy that governs resources, prompts and sampling (SPEC §5.2) --

const GOVERNED = path.join(WORK, "governed.yaml");
fs.writeFileSync(
  GOVERNED,
  [
    'version: "1"',
    "name: interop-governed",
    'allow: ["*"]',
    "hide_refused_tools: true",
    "resources:",
    '  allow: ["demo://resource/static/document/*"]',
    '  deny: ["demo://resource/static/document/instructions.md"]',
    "prompts:",
    '  allow: ["*"]',
    '  deny: ["args-*"]',
    "client_features:",
    "  sampling: deny",
    "  elicitation: allow",
    "",
  ].join("\n"),
);

/** The error a refused request rejects with: the SPEC §5.2 refusal code and decision. */
async function refusedWith(promise, code) {
  try {
    await promise;
  } catch (e) {
    assert.equal(e.code, -32010, String(e));
    assert.equal(e.data["assay/decision"].reason_code, code);
    return e.message;
  }
  assert.fail(`not refused (${code})`);
}

async function everythingGoverned() {
  const cap = path.join(WORK, "cap-governed");
  const client = new Client(
    { name: "assay-interop", version: "1" },
    { capabilities: { sampling: {}, elicitation: { form: {} } } },
  );
  const sampled = [];
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    sampled.push(req.params.messages.length);
    return { role: "assistant", content: { type: "text", text: "sampled" }, model: "m" };
  });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "decline" }));
  const transport = new StdioClientTransport({
    command: ASSAY,
    args: ["mcp", "wrap", "--policy", GOVERNED, "--event-source", "assay://interop/ts",
      "--capture-dir", cap, process.execPath, EVERYTHING, "stdio"],
    stderr: process.env.ASSAY_INTEROP_STDERR ?? "ignore",
  });
  await client.connect(transport);
  const out = {};
  out.resources = (await client.listResources()).resources.map((r) => r.uri);
  out.read = await client.readResource({ uri: "demo://resource/static/document/architecture.md" });
  out.deniedRead = await refusedWith(
    client.readResource({ uri: "demo://resource/static/document/instructions.md" }), "P_RESOURCE_DENIED");
  out.notAllowedRead = await refusedWith(
    client.readResource({ uri: "demo://resource/dynamic/text/1" }), "P_RESOURCE_NOT_ALLOWED");
  out.prompts = (await client.listPrompts()).prompts.map((p) => p.name);
  out.prompt = await client.getPrompt({ name: "simple-prompt" });
  out.deniedPrompt = await refusedWith(
    client.getPrompt({ name: "args-prompt", arguments: { city: "x" } }), "P_PROMPT_DENIED");
  out.sampling = await client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "p", maxTokens: 5 } });
  out.sampled = sampled;
  out.elicitation = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
  await client.close();
  return { out, cap };
}

// ---- server-filesystem: output schemas on every tool, a multi-megabyte result ----------------

async function filesystem(wrapped, root) {
  const { command, args, cap } = launch(wrapped, process.execPath, [FILESYSTEM, root]);
  const client = new Client({ name: "assay-interop", version: "1" });
  const transport = new StdioClientTransport({ command, args, stderr: process.env.ASSAY_INTEROP_STDERR ?? "ignore" });
  await client.connect(transport);
  const out = {};
  out.tools = (await client.listTools()).tools.map((t) => [t.name, Boolean(t.outputSchema)]).sort();
  out.big = await client.callTool({ name: "read_text_file", arguments: { path: path.join(root, "big.txt") } });
  out.list = await client.callTool({ name: "list_directory", arguments: { path: root } });
  out.denied = await client.callTool({
    name: "write_file",
    arguments: { path: path.join(root, "new.txt"), content: "x" },
  });
  await client.close();
  return { out, cap };
}

// ---- server-filesystem asking for the client's roots under `client_features: {roots: deny}` ---

/** A client offering a root the policy does not let the server ask for: the server keeps the
 * directory it was started with, the client's handler is never called. */
async function filesystemRootsDenied(root, offered) {
  const policy = path.join(WORK, "roots-deny.yaml");
  fs.writeFileSync(policy, 'version: "1"\nallow: ["*"]\nclient_features:\n  roots: deny\n');
  const cap = path.join(WORK, "cap-roots");
  const client = new Client({ name: "assay-interop", version: "1" }, { capabilities: { roots: { listChanged: true } } });
  const asked = [];
  client.setRequestHandler(ListRootsRequestSchema, async () => {
    asked.push(1);
    return { roots: [{ uri: `file://${offered}`, name: "offered" }] };
  });
  const transport = new StdioClientTransport({
    command: ASSAY,
    args: ["mcp", "wrap", "--policy", policy, "--event-source", "assay://interop/ts", "--capture-dir", cap,
      process.execPath, FILESYSTEM, root],
    stderr: process.env.ASSAY_INTEROP_STDERR ?? "ignore",
  });
  await client.connect(transport);
  const dirs = await client.callTool({ name: "list_allowed_directories", arguments: {} });
  await client.close();
  return { dirs, asked, cap };
}

// ---- 2026-07-28: server/discover, resultType, input_required and the re-issued call ----------

/** Like `launch`, but a new capture directory for every start of the command: in `auto` mode
 * the SDK probes `server/discover` on a short-lived sibling process started from the same
 * parameters before the session proper. Returns the directory prefix. */
function launchPerRun(wrapped, tag, command, args) {
  if (!wrapped) return { command, args };
  const prefix = path.join(WORK, `${tag}-`);
  const script = 'exec "$0" mcp wrap --policy "$1" --event-source assay://interop/ts --capture-dir "$2$$" "$3" "$4"';
  return { command: "/bin/sh", args: ["-c", script, ASSAY, POLICY, prefix, command, ...args], prefix };
}

/** The capture directories a per-run launch left, by whether they hold a stop record. */
function perRunCaptures(tag) {
  const dirs = fs.readdirSync(WORK).filter((n) => n.startsWith(`${tag}-`)).map((n) => path.join(WORK, n));
  return {
    sessions: dirs.filter((d) => fs.existsSync(path.join(d, "session-stop.json"))),
    probes: dirs.filter((d) => !fs.existsSync(path.join(d, "session-stop.json"))),
  };
}

async function modern(wrapped, tag, server, mode) {
  const { command, args } = launchPerRun(wrapped, tag, server[0], server.slice(1));
  const client = new Client2(
    { name: "assay-interop", version: "1" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode } },
  );
  client.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { ok: true } }));
  const transport = new StdioClientTransport2({ command, args, stderr: process.env.ASSAY_INTEROP_STDERR ?? "ignore" });
  await client.connect(transport);
  const out = { era: client.getProtocolEra(), version: client.getNegotiatedProtocolVersion() };
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  out.echo = await client.callTool({ name: "echo", arguments: { text: "hi" } });
  out.typed = await client.callTool({ name: "typed", arguments: { n: 7 } });
  out.confirm = await client.callTool({ name: "confirm", arguments: {} });
  out.denied = await client.callTool({ name: "exec", arguments: { cmd: "id" } });
  await client.close();
  return { out };
}

function sameExceptDenied(direct, wrapped, skip) {
  for (const key of Object.keys(direct)) {
    if (skip.includes(key)) continue;
    assert.deepEqual(stable(wrapped[key]), stable(direct[key]), `${key} differs`);
  }
}

async function main() {
  {
    const d = await everything(false);
    const w = await everything(true);
    // The server sends its last progress notification right before the result, and the SDK
    // drops progress that arrives after the result: direct sessions race the same way.
    sameExceptDenied(d.out, w.out, ["denied", "deniedPlain", "progress"]);
    for (const p of [d.out.progress, w.out.progress]) {
      assert.ok(p.length >= 2, `progress notifications arrived: ${JSON.stringify(p)}`);
      assert.deepEqual(p, [[1, 3], [2, 3], [3, 3]].slice(0, p.length));
    }
    assert.deepEqual(w.out.sampled, [1]);
    assert.equal(w.out.concurrent.length, 40);
    assert.equal(d.out.denied.isError ?? false, false, "the direct call succeeds");
    assertRefusal(w.out.denied, "P_TOOL_DENIED");
    assertRefusal(w.out.deniedPlain, "P_TOOL_DENIED");
    const calls = decisions(w.cap).map((x) => `${x.tool}:${x.decision}`);
    assert.equal(calls.length, 5 + 40 + 2);
    assert.equal(calls.filter((c) => c.endsWith(":deny")).length, 2);
    ok("server-everything: tools, progress, sampling, elicitation, resources, 40 concurrent calls match; 2 refusals returned");
  }
  {
    const { out, cap } = await everythingGoverned();
    assert.ok(out.resources.includes("demo://resource/static/document/architecture.md"), JSON.stringify(out.resources));
    assert.ok(!out.resources.includes("demo://resource/static/document/instructions.md"), "the denied resource is hidden");
    assert.match(out.read.contents[0].text, /./);
    assert.match(out.deniedRead, /assay: refused by policy \(P_RESOURCE_DENIED\)/);
    assert.ok(out.prompts.includes("simple-prompt") && !out.prompts.includes("args-prompt"), JSON.stringify(out.prompts));
    assert.ok(out.prompt.messages.length > 0);
    // The refused sampling request never reached the client; the server saw the refusal.
    assert.deepEqual(out.sampled, []);
    assert.equal(out.sampling.isError, true, JSON.stringify(out.sampling));
    assert.match(out.sampling.content[0].text, /P_CLIENT_FEATURE_DENIED/);
    assert.equal(out.elicitation.isError ?? false, false, JSON.stringify(out.elicitation));
    const events = fs.readFileSync(path.join(cap, "decisions.ndjson"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
    const mcp = events.filter((e) => e.type === "assay.mcp.decision").map((e) => `${e.data.method}:${e.data.target}:${e.data.reason_code}`);
    assert.deepEqual(mcp, [
      "resources/read:demo://resource/static/document/architecture.md:P_POLICY_ALLOW",
      "resources/read:demo://resource/static/document/instructions.md:P_RESOURCE_DENIED",
      "resources/read:demo://resource/dynamic/text/1:P_RESOURCE_NOT_ALLOWED",
      "prompts/get:simple-prompt:P_POLICY_ALLOW",
      "prompts/get:args-prompt:P_PROMPT_DENIED",
      "sampling/createMessage:sampling:P_CLIENT_FEATURE_DENIED",
      "elicitation/create:elicitation:P_POLICY_ALLOW",
    ]);
    const listings = events.filter((e) => e.type === "assay.tool.listing");
    assert.ok(listings.some((e) => e.data.removed.some((r) => r.name === "demo://resource/static/document/instructions.md")));
    ok(`server-everything under a governing policy: resources, prompts, sampling and elicitation judged; ${mcp.length} assay.mcp.decision events`);
  }
  {
    // One directory per run, with the same content: the direct run really writes.
    const line = "0123456789abcdef".repeat(8) + "\n";
    const makeRoot = () => {
      const root = fs.mkdtempSync(path.join(WORK, "fs-"));
      fs.writeFileSync(path.join(root, "big.txt"), line.repeat(Math.ceil((3 * 1024 * 1024) / line.length)));
      return root;
    };
    const [directRoot, wrappedRoot] = [makeRoot(), makeRoot()];
    const d = await filesystem(false, directRoot);
    const w = await filesystem(true, wrappedRoot);
    sameExceptDenied(d.out, w.out, ["denied"]);
    assert.ok(w.out.tools.some(([name, schema]) => name === "write_file" && schema), "write_file has an outputSchema");
    // The text in content and again in structuredContent: a response line of over 6 MiB.
    assert.ok(w.out.big.content[0].text.length >= 3 * 1024 * 1024);
    assert.equal(d.out.denied.isError ?? false, false);
    assert.ok(fs.existsSync(path.join(directRoot, "new.txt")), "the direct call wrote");
    assertRefusal(w.out.denied, "P_TOOL_DENIED");
    assert.ok(!fs.existsSync(path.join(wrappedRoot, "new.txt")), "the refused call never reached the server");
    ok("server-filesystem: 3 MiB read_text_file (a 6 MiB line) matches; write_file (outputSchema) refusal returned");
  }
  {
    const root = fs.mkdtempSync(path.join(WORK, "roots-root-"));
    const offered = fs.mkdtempSync(path.join(WORK, "roots-offered-"));
    const { dirs, asked, cap } = await filesystemRootsDenied(root, offered);
    assert.deepEqual(asked, [], "the refused roots/list never reached the client");
    const text = dirs.content.map((c) => c.text).join("\n");
    assert.ok(text.includes(fs.realpathSync(root)), text);
    assert.ok(!text.includes(path.basename(offered)), text);
    const events = fs.readFileSync(path.join(cap, "decisions.ndjson"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
    const roots = events.filter((e) => e.type === "assay.mcp.decision");
    assert.deepEqual(roots.map((e) => [e.data.method, e.data.target, e.data.decision, e.data.reason_code]),
      [["roots/list", "roots", "deny", "P_CLIENT_FEATURE_DENIED"]]);
    ok("server-filesystem under client_features roots: deny: the roots request refused to the server, its directories unchanged");
  }
  const servers = [
    ["python", "an official Python SDK server (mcp 2.3)", [PYTHON, SDK_SERVER]],
    ["ts", "an official TypeScript SDK server (@modelcontextprotocol/server 2.4)", [process.execPath, path.join(here, "modern_server.mjs")]],
  ];
  for (const [name, what, server] of servers) {
    for (const mode of ["auto", "legacy"]) {
      const tag = `${name}-${mode}`;
      const d = await modern(false, tag, server, mode);
      const w = await modern(true, tag, server, mode);
      const modernEra = mode === "auto";
      assert.equal(d.out.era, modernEra ? "modern" : "legacy");
      assert.equal(d.out.version, modernEra ? "2026-07-28" : "2025-11-25");
      sameExceptDenied(d.out, w.out, ["denied"]);
      assert.match(w.out.confirm.content[0].text, /^confirmed: [Tt]rue$/);
      assertRefusal(w.out.denied, "P_TOOL_DENIED");
      assert.equal(w.out.denied.resultType ?? "complete", "complete");
      const { sessions, probes } = perRunCaptures(tag);
      assert.equal(sessions.length, 1, "one session");
      // The SDK's server/discover probe runs as its own discovery-only run: no stop record, no
      // decisions (SPEC §3 item 8).
      assert.equal(probes.length, modernEra ? 1 : 0);
      for (const p of probes) assert.equal(fs.readFileSync(path.join(p, "decisions.ndjson"), "utf8"), "");
      const calls = decisions(sessions[0]).map((x) => `${x.tool}:${x.decision}`);
      // On 2026-07-28 confirm answers input_required and the client re-issues the tools/call
      // with inputResponses: a second call, with its own decision. Earlier revisions elicit
      // mid-call instead (one call).
      const confirm = modernEra ? ["confirm:allow", "confirm:allow"] : ["confirm:allow"];
      assert.deepEqual(calls, ["echo:allow", "typed:allow", ...confirm, "exec:deny"]);
      ok(`${mode === "auto" ? "2026-07-28 (server/discover)" : "2025-11-25 (initialize)"}, @modelcontextprotocol/client 2.4 and ${what}: calls match; refusal returned; ${calls.length} decisions`);
    }
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e?.stack ?? String(e));
    process.exit(1);
  },
);
