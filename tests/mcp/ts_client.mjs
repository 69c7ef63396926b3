// Interop: the official TypeScript SDK client (@modelcontextprotocol/sdk 1.32.2,
// legacy era 2025-11-25) drives agent-app's /mcp.
//   node ts_client.mjs URL TOKEN
// Lists tools, reads the describe resource, queries, creates a valid record (then
// reads it over the plain HTTP records API) and sends an invalid one (an isError
// result carrying invalid_date). Exits non-zero on any mismatch.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token] = process.argv.slice(2);
const check = (cond, what) => {
  if (!cond) {
    console.error(`FAIL [ts] ${what}`);
    process.exit(1);
  }
  console.log(`ok [ts] ${what}`);
};

const client = new Client({ name: "a2app-ts-interop", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport, { timeout: 20000 });
check(transport.sessionId !== undefined, "a legacy session was opened");

const { tools } = await client.listTools();
check(tools.map((t) => t.name).join() === "describe,query,get,create,update,delete,run_operation,job_status,check_claims", "tools listed in order");
check(tools.find((t) => t.name === "delete").annotations.destructiveHint === true, "delete is destructive");

const describe = await client.readResource({ uri: "a2app://describe" });
check(JSON.parse(describe.contents[0].text).app.id === "kanban", "describe resource names the app");

const list = await client.callTool({ name: "create", arguments: { entity: "lists", record: { name: "TS list" } } });
check(!list.isError, `create list: ${list.content[0].text}`);
const card = await client.callTool({
  name: "create",
  arguments: { entity: "cards", record: { title: "TS card", list: list.structuredContent.id, due_day: "2026-07-31" } },
});
check(!card.isError && card.content[0].text.startsWith("Added"), `create card: ${card.content[0].text}`);

const base = url.replace(/\/mcp$/, "");
const overHttp = await (await fetch(`${base}/api/collections/cards/records/${card.structuredContent.id}`)).json();
check(overHttp.title === "TS card", "the card is seen over plain HTTP");

const page = await client.callTool({ name: "query", arguments: { entity: "cards", filter: `title = "TS card"` } });
check(page.structuredContent.totalItems === 1, "query finds it");

const done = await client.callTool({ name: "run_operation", arguments: { name: "complete_card", params: { card: card.structuredContent.id } } });
check(!done.isError && done.structuredContent.receipts[0].action === "update", "run_operation");

const bad = await client.callTool({
  name: "create",
  arguments: { entity: "cards", record: { title: "x", list: list.structuredContent.id, due_date: "tomorrow" } },
});
check(bad.isError === true && bad.structuredContent.code === "invalid_date", "invalid create is an isError invalid_date");

await transport.terminateSession().catch(() => {});
await client.close();
