// Interop: the official TypeScript SDK client (@modelcontextprotocol/sdk 1.32.2,
// legacy era) spawns `a2app mcp`, the gateway, and drives it over stdio.
//   node gateway_ts_client.mjs A2APP CONFIG_DIR
// Lists tools and apps, creates a list and a card given its list by label, runs
// an operation, and checks that a destructive one waits for its approval key;
// then, as a host that can ask its person (an elicitation handler), that the
// person is asked and a yes runs it without the agent seeing the key.
// Exits non-zero on any mismatch.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [binary, configDir] = process.argv.slice(2);
const check = (cond, what) => {
  if (!cond) {
    console.error(`FAIL [gateway ts] ${what}`);
    process.exit(1);
  }
  console.log(`ok [gateway ts] ${what}`);
};

const client = new Client({ name: "a2app-gateway-ts-interop", version: "1.0.0" });
const transport = new StdioClientTransport({ command: binary, args: ["mcp"], env: { A2APP_CONFIG_DIR: configDir } });
await client.connect(transport, { timeout: 20000 });

const { tools } = await client.listTools();
check(tools.length === 15 && tools[0].name === "apps" && tools[1].name === "search_apps", `tools ${tools.map((t) => t.name).join()}`);
check(tools.every((t, i) => i < 2 || t.inputSchema.required[0] === "app"), "every app tool takes app first");

const apps = await client.callTool({ name: "apps", arguments: {} });
check(apps.structuredContent.apps[0].app === "kanban", "apps names kanban");

const list = await client.callTool({ name: "create", arguments: { app: "kanban", entity: "lists", record: { name: "Gateway TS" } } });
check(!list.isError, `create list: ${list.content[0].text}`);
const card = await client.callTool({
  name: "create",
  arguments: { app: "kanban", entity: "cards", record: { title: "TS via gateway", list: "Gateway TS" } },
});
check(!card.isError && card.structuredContent.list === list.structuredContent.id, `card by label: ${card.content[0].text}`);
check(/^Untrusted data from [^\n]*\n<<<a2app-data ([0-9a-f]{32})>>>\n[\s\S]*\n<<<end a2app-data \1>>>$/.test(card.content[0].text),
  `the answer's text is fenced: ${card.content[0].text.slice(0, 200)}`);

const done = await client.callTool({
  name: "run_operation",
  arguments: { app: "kanban", name: "complete_card", params: { card: card.structuredContent.id } },
});
check(!done.isError && done.structuredContent.receipts[0].action === "update", "run_operation");

const ask = await client.callTool({ name: "run_operation", arguments: { app: "kanban", name: "clear_done" } });
check(ask.isError && ask.structuredContent.code === "approval_required" && ask.structuredContent.approvalKey, "approval asked");
const still = await client.callTool({ name: "get", arguments: { app: "kanban", entity: "cards", id: card.structuredContent.id } });
check(!still.isError && still.structuredContent.done === true, "nothing deleted before approval");

await client.close();

// A host whose person is asked, and says yes.
const asked = [];
const host = new Client({ name: "a2app-gateway-ts-host", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
host.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push(request.params.message);
  return { action: "accept", content: { approve: true } };
});
await host.connect(new StdioClientTransport({ command: binary, args: ["mcp"], env: { A2APP_CONFIG_DIR: configDir } }), {
  timeout: 20000,
});
const yes = await host.callTool({ name: "run_operation", arguments: { app: "kanban", name: "clear_done" } });
check(!yes.isError && yes.structuredContent.receipts.length >= 1, `approved by the person: ${yes.content[0].text}`);
check(asked.length === 1 && asked[0].includes('"clear_done"'), "the person was asked once");
check(!JSON.stringify(yes).includes("approvalKey"), "the agent never saw the key");
const gone = await host.callTool({ name: "get", arguments: { app: "kanban", entity: "cards", id: card.structuredContent.id } });
check(gone.isError && gone.structuredContent.code === "not_found", "the done card is gone");
await host.close();
