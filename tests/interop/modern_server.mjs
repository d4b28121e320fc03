// An MCP stdio server on the official TypeScript SDK 2.x (@modelcontextprotocol/server), serving
// both eras from one factory: the initialize handshake and 2026-07-28 (server/discover, resultType,
// input_required). Tools: echo; typed and exec (output schemas; exec is denied by the interop
// policy and reports on stderr if it is ever reached); confirm (asks the client through
// input_required on 2026-07-28, then answers from the re-issued call's inputResponses).
import * as z from "zod";
import { McpServer, inputRequired, acceptedContent } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";

serveStdio(() => {
  const server = new McpServer({ name: "assay-interop-ts", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.registerTool("echo", { inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({
    content: [{ type: "text", text: `echo: ${text}` }],
  }));
  const value = z.object({ value: z.number() });
  server.registerTool("typed", { inputSchema: z.object({ n: z.number() }), outputSchema: value }, async ({ n }) => ({
    content: [{ type: "text", text: String(n) }], structuredContent: { value: n },
  }));
  server.registerTool("exec", { inputSchema: z.object({ cmd: z.string() }), outputSchema: value }, async () => {
    process.stderr.write("EXEC REACHED\n");
    return { content: [{ type: "text", text: "0" }], structuredContent: { value: 0 } };
  });
  server.registerTool("confirm", { inputSchema: z.object({}) }, async (_args, ctx) => {
    const schema = z.object({ ok: z.boolean() });
    const answer = acceptedContent(ctx.mcpReq.inputResponses, "ok", schema);
    if (answer === undefined) {
      return inputRequired({ inputRequests: { ok: inputRequired.elicit({ message: "Proceed?", requestedSchema: schema }) } });
    }
    return { content: [{ type: "text", text: `confirmed: ${answer.ok}` }] };
  });
  return server;
});
