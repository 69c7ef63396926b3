// The app's MCP Apps view (`ui://kanban/view`) in a real host: the official
// MCP TypeScript client (v2) talks to the real `agent-app serve`, declaring the
// `io.modelcontextprotocol/ui` extension; the official ext-apps AppBridge mounts
// the view in a sandboxed iframe under the extension's default CSP, in headless
// Chromium; every call the view makes goes back through the host to the app.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import path from 'node:path';
import { REPO_ROOT, startApp, launchBrowser, screenshotPath, tempDir } from './lib.mjs';
import { hostScript } from './mcp_apps_host.mjs';

const PORT = 18494;
const VIEW = 'ui://kanban/view';
const MIME = 'text/html;profile=mcp-app';
const UI = 'io.modelcontextprotocol/ui';
const XSS = '<img src=x onerror="document.documentElement.dataset.pwned=1">';

let app, client, context, page, html, todo;
// Where the host sends the view's tool calls: the app's /mcp, or a gateway.
let target;
async function page_calls_to(c) {
  target = c;
  await page.evaluate(() => { window.host.calls = []; });
}
const page_calls = () => page.evaluate(() => window.host.calls);
const errors = [];

async function connect(mode, extensions) {
  const c = new Client({ name: 'a2app-e2e-host', version: '1.0.0' },
    { capabilities: { extensions }, versionNegotiation: { mode } });
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`),
    { requestInit: { headers: { Authorization: `Bearer ${app.token}` } } });
  await c.connect(transport);
  return c;
}

async function tool(name, args) {
  return client.callTool({ name, arguments: args });
}

async function create(entity, record) {
  const r = await tool('create', { entity, record });
  assert.notEqual(r.isError, true, JSON.stringify(r));
  return r.structuredContent;
}

/** Mounts the view for one tool call and its result, as a host does after the call. */
async function mount(name, args, result, theme = 'light') {
  return mountPage(html, name, args, result, theme);
}

async function mountPage(text, name, args, result, theme = 'light') {
  await page.evaluate((a) => window.mountView(a), { html: text, tool: name, args, result, theme });
  return page.frameLocator('#view');
}

const texts = (locator) => locator.evaluateAll((els) => els.map((e) => e.textContent));

before(async () => {
  app = await startApp({ port: PORT });
  client = await connect('auto', { [UI]: { mimeTypes: [MIME] } });
  target = client;
  todo = (await create('lists', { name: 'To Do' })).id;
  const done = (await create('lists', { name: 'Done' })).id;
  for (let i = 1; i <= 25; i++) await create('cards', { title: `Card ${String(i).padStart(2, '0')}`, list: todo });
  await create('cards', { title: XSS, list: todo, priority: 'high' });
  await create('cards', { title: 'Old 1', list: done, done: true });
  await create('cards', { title: 'Old 2', list: done, done: true });

  context = await launchBrowser();
  page = await context.newPage();
  // Any script error in the host page or the view fails the last test.
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.exposeFunction('hostCallTool', (params) => target.callTool(params));
  await page.setContent('<!doctype html><meta charset="utf-8"><title>host</title><div id="slot"></div>');
  await page.addScriptTag({ content: await hostScript() });
});

after(async () => {
  await context?.close();
  await client?.close();
  await app?.stop();
});

test('the record tools name the view, and the view is an MCP Apps resource', async () => {
  const { tools } = await client.listTools();
  const linked = tools.filter((t) => t._meta?.ui?.resourceUri === VIEW).map((t) => t.name);
  assert.deepEqual(linked, ['query', 'get', 'create', 'update', 'delete', 'run_operation', 'job_status', 'show']);
  assert.equal(tools.find((t) => t.name === 'describe')._meta, undefined);

  const { resources } = await client.listResources();
  const entry = resources.find((r) => r.uri === VIEW);
  assert.equal(entry.mimeType, MIME);
  const read = await client.readResource({ uri: VIEW });
  assert.equal(read.contents.length, 1);
  assert.equal(read.contents[0].mimeType, MIME);
  assert.deepEqual(read.contents[0]._meta, { ui: { prefersBorder: true } });
  html = read.contents[0].text;
  assert.match(html, /^<!doctype html>/);

  // A host that did not declare the extension, in the legacy era, gets no link.
  const plain = await connect('legacy', undefined);
  const plainTools = (await plain.listTools()).tools;
  assert.equal(plainTools.filter((t) => t._meta?.ui).length, 0);
  assert.equal(plainTools.length, tools.length - 1, 'show is listed only for hosts that draw the view');
  await plain.close();
  // The same host declaring it in initialize does.
  const legacy = await connect('legacy', { [UI]: {} });
  const legacyLinked = (await legacy.listTools()).tools.filter((t) => t._meta?.ui?.resourceUri === VIEW);
  assert.equal(legacyLinked.length, 8);
  await legacy.close();
});

test('a query is drawn as a table that pages, opens records and goes back through the host', async () => {
  const args = { entity: 'cards', filter: `list = "${todo}"`, sort: 'title', perPage: 10, expand: 'list' };
  const result = await tool('query', args);
  assert.equal(result.structuredContent.totalItems, 26);
  const view = await mount('query', args, result, 'dark');

  const position = view.locator('[data-role=position]');
  await position.waitFor();
  assert.equal(await position.textContent(), 'Page 1 of 3');
  assert.equal(await view.locator('h2').textContent(), 'cards · 26 records');
  assert.deepEqual(await texts(view.locator('thead th')), ['title', 'description', 'list', 'due_date', 'due_day', 'priority']);
  const rows = view.locator('tbody tr');
  assert.equal(await rows.count(), 10);
  // A title holding markup is text: no element was made of it, no script ran.
  assert.deepEqual(await texts(rows.nth(0).locator('td')), [XSS, '', 'To Do', '', '', 'high']);
  assert.equal(await view.locator('img').count(), 0);
  assert.equal(await view.locator('html').getAttribute('data-pwned'), null);
  assert.deepEqual(await texts(view.locator('tbody tr td:first-child')),
    [XSS, 'Card 01', 'Card 02', 'Card 03', 'Card 04', 'Card 05', 'Card 06', 'Card 07', 'Card 08', 'Card 09']);
  assert.equal(await view.locator('[data-role=previous]').isDisabled(), true);
  assert.equal(await view.locator('html').getAttribute('data-theme'), 'dark');
  await page.screenshot({ path: screenshotPath('mcp-apps-query.png') });

  // Next: the view asks the host to call query again, one page on.
  await view.locator('[data-role=next]').click();
  await view.getByText('Page 2 of 3').waitFor();
  assert.deepEqual(await page.evaluate(() => window.host.calls), [{ name: 'query', arguments: { ...args, page: 2 } }]);
  assert.equal(await rows.nth(0).locator('td').nth(0).textContent(), 'Card 10');
  await view.locator('[data-role=next]').click();
  await view.getByText('Page 3 of 3').waitFor();
  assert.deepEqual(await texts(view.locator('tbody tr td:first-child')),
    ['Card 20', 'Card 21', 'Card 22', 'Card 23', 'Card 24', 'Card 25']);
  assert.equal(await view.locator('[data-role=next]').isDisabled(), true);

  // A row opens its record with get, keeping the query's expand.
  await rows.filter({ hasText: 'Card 21' }).click();
  const record = view.locator('[data-role=record]');
  await record.waitFor();
  const calls = await page.evaluate(() => window.host.calls);
  assert.equal(calls.length, 3);
  assert.equal(calls[2].name, 'get');
  assert.equal(calls[2].arguments.expand, 'list');
  const fields = Object.fromEntries(await record.locator('tr').evaluateAll((trs) =>
    trs.map((tr) => [tr.querySelector('th').textContent, tr.querySelector('td').textContent])));
  assert.equal(fields.title, 'Card 21');
  assert.equal(fields.list, 'To Do');
  assert.equal(fields.done, 'no');
  assert.equal(fields.id, calls[2].arguments.id);
  // Back shows the page it came from, without another call.
  await view.locator('[data-role=back]').click();
  await view.getByText('Page 3 of 3').waitFor();
  assert.equal(await page.evaluate(() => window.host.calls.length), 3);

  const sizes = await page.evaluate(() => window.host.sizes);
  assert.ok(sizes.length >= 1 && sizes.at(-1).height > 0, JSON.stringify(sizes));

  // A host echoing the view's own call (tool-input, tool-result) does not
  // draw it twice: one Back from the record is the list again.
  await page.evaluate(() => { window.host.echo = true; });
  await rows.filter({ hasText: 'Card 22' }).click();
  await view.locator('[data-role=record]').waitFor();
  await view.locator('[data-role=back]').click();
  await view.getByText('Page 3 of 3').waitFor();
  assert.equal(await view.locator('[data-role=record]').count(), 0);
  await page.evaluate(() => { window.host.echo = false; });

  // After the view's own calls, a new call by the host is paged with the
  // host's tool (query), not the view's last one (get).
  const again = { entity: 'cards', sort: 'title', perPage: 5 };
  const fresh = await tool('query', again);
  await page.evaluate(async ({ a, r }) => {
    await window.host.bridge.sendToolInput({ arguments: a });
    await window.host.bridge.sendToolResult(r);
  }, { a: again, r: fresh });
  await view.getByText('Page 1 of 6').waitFor();
  await view.locator('[data-role=next]').click();
  await view.getByText('Page 2 of 6').waitFor();
  assert.deepEqual((await page.evaluate(() => window.host.calls)).at(-1), { name: 'query', arguments: { ...again, page: 2 } });
});

test('a write is drawn from its receipt, a refusal with every violation', async () => {
  const args = { entity: 'cards', record: { title: 'Written by an agent', list: todo, priority: 'urgent' } };
  const written = await tool('create', args);
  let view = await mount('create', args, written);
  const receipt = view.locator('[data-role=receipt]');
  await receipt.waitFor();
  assert.equal(await receipt.textContent(), written.content[0].text);
  assert.equal(await receipt.count(), 1);
  const record = view.locator('[data-role=record]');
  assert.equal(await record.locator('tr', { hasText: 'priority' }).locator('td').textContent(), 'urgent');

  const bad = { entity: 'cards', record: { title: 'x'.repeat(300), points: 150 } };
  const refused = await tool('create', bad);
  assert.equal(refused.isError, true);
  const body = refused.structuredContent;
  assert.equal(body.violations.length, 3, JSON.stringify(body));
  view = await mount('create', bad, refused);
  await view.locator('[data-role=error]').waitFor();
  assert.equal(await view.locator('[data-role=code]').textContent(), body.code);
  assert.deepEqual(await texts(view.locator('[data-role=violation] .code')),
    body.violations.map((v) => `${v.field}: ${v.code}`));
  assert.equal(await view.locator('[data-role=approve]').count(), 0);
});

test('a destructive operation is approved in the view by the person, then runs once', async () => {
  const args = { name: 'clear_done', params: {} };
  const asked = await tool('run_operation', args);
  assert.equal(asked.isError, true);
  assert.equal(asked.structuredContent.code, 'approval_required');
  const key = asked.structuredContent.approvalKey;
  const view = await mount('run_operation', args, asked);
  await view.locator('[data-role=approve]').waitFor();
  // The person is shown what the key is bound to: the operation and its params,
  // not the message meant for the agent (which names the key).
  assert.equal(await view.locator('[data-role=approval]').textContent(), 'Run clear_done (no params)?');
  assert.ok(!(await view.locator('body').textContent()).includes(key));
  const before = await page.evaluate(() => window.host.calls.length);

  await view.locator('[data-role=approve]').click();
  const receipts = view.locator('[data-role=receipt]');
  await receipts.first().waitFor();
  const calls = await page.evaluate(() => window.host.calls);
  assert.equal(calls.length, before + 1);
  assert.deepEqual(calls.at(-1), { name: 'run_operation', arguments: { ...args, approvalKey: key } });
  assert.equal(await receipts.count(), 2);
  const said = await texts(receipts);
  assert.ok(said.some((t) => t.includes('Old 1')) && said.some((t) => t.includes('Old 2')), said.join(' | '));
  // Back to the question: the key is spent, so no second approval is offered.
  await view.locator('[data-role=back]').click();
  await view.locator('[data-role=approved]').waitFor();
  assert.equal(await view.locator('[data-role=approve]').count(), 0);

  const left = await tool('query', { entity: 'cards', filter: 'done = true' });
  assert.equal(left.structuredContent.totalItems, 0);
});

test('the gateway (a2app mcp) serves the view, which learns the app describe through the host', async () => {
  const bin = process.env.A2APP_BIN || path.join(REPO_ROOT, 'target', 'debug', 'agent-app');
  const home = tempDir('gateway-home');
  const gateway = new Client({ name: 'a2app-e2e-host', version: '1.0.0' },
    { capabilities: { extensions: { [UI]: { mimeTypes: [MIME] } } }, versionNegotiation: { mode: 'legacy' } });
  await gateway.connect(new StdioClientTransport({
    command: path.join(path.dirname(bin), 'a2app'),
    args: ['mcp', app.url],
    env: { ...getDefaultEnvironment(), HOME: home, XDG_CONFIG_HOME: path.join(home, 'config'), A2APP_TOKEN: app.token },
    stderr: 'ignore',
  }));
  try {
    const GW_VIEW = 'ui://a2app-gateway/view';
    const { tools } = await gateway.listTools();
    assert.equal(tools.find((t) => t.name === 'query')._meta.ui.resourceUri, GW_VIEW);
    const page = (await gateway.readResource({ uri: GW_VIEW })).contents[0];
    assert.equal(page.mimeType, MIME);

    // The view's calls go to the gateway now.
    await page_calls_to(gateway);
    const args = { app: app.url, entity: 'cards', filter: `list = "${todo}"`, sort: 'title', perPage: 10, expand: 'list' };
    const result = await gateway.callTool({ name: 'query', arguments: args });
    assert.equal(result.structuredContent.totalItems, 27);
    const view = await mountPage(page.text, 'query', args, result);
    await view.getByText('Page 1 of 3').waitFor();
    // Its first call asked the app's describe, with the app the result came from.
    assert.deepEqual(await page_calls(), [{ name: 'describe', arguments: { app: app.url } }]);
    assert.deepEqual(await texts(view.locator('thead th')), ['title', 'description', 'list', 'due_date', 'due_day', 'priority']);
    assert.deepEqual(await texts(view.locator('tbody tr').nth(1).locator('td')), ['Card 01', '', 'To Do', '', '', 'none']);

    await view.locator('[data-role=next]').click();
    await view.getByText('Page 2 of 3').waitFor();
    await view.locator('tbody tr', { hasText: 'Card 12' }).click();
    await view.locator('[data-role=record]').waitFor();
    const calls = await page_calls();
    assert.deepEqual(calls.map((c) => c.name), ['describe', 'query', 'get']);
    assert.deepEqual(calls[1].arguments, { ...args, page: 2 });
    assert.equal(calls[2].arguments.app, app.url);
    assert.equal(calls[2].arguments.expand, 'list');
    assert.equal(await view.locator('[data-role=record] tr', { hasText: 'title' }).locator('td').textContent(), 'Card 12');
  } finally {
    await page_calls_to(client);
    await gateway.close();
  }
});

test('an A2UI surface an agent shows is drawn from the catalog, and its button writes once the person confirmed', async () => {
  const surface = [{ version: 'v1.0', createSurface: {
    surfaceId: 'quick-add', catalogId: 'urn:a2app:a2ui:catalog:v1',
    dataModel: { title: '', priority: ['none'], urgent: false, hints: [{ name: 'Short titles read best' }, { name: XSS }] },
    components: [
      { id: 'root', component: 'Column', children: ['heading', 'title', 'priority', 'urgent', 'hints', 'save'] },
      { id: 'heading', component: 'Text', text: 'Add a card to To Do' },
      { id: 'title', component: 'TextField', label: 'Title', value: { path: '/title' } },
      { id: 'priority', component: 'ChoicePicker', label: 'Priority', variant: 'mutuallyExclusive', value: { path: '/priority' },
        options: [{ label: 'None', value: 'none' }, { label: 'High', value: 'high' }] },
      { id: 'urgent', component: 'CheckBox', label: 'Mark done', value: { '@path': '/urgent' } },
      { id: 'hints', component: 'List', children: { componentId: 'hint', path: '/hints' } },
      { id: 'hint', component: 'Text', text: { path: 'name' } },
      { id: 'save', component: 'Button', child: 'save-label', variant: 'primary', action: { event: { name: 'create',
        context: { entity: 'cards', record: { title: { path: '/title' }, list: todo, priority: { path: '/priority/0' }, done: { path: '/urgent' } } } } } },
      { id: 'save-label', component: 'Text', text: 'Add card' },
    ] } }];
  const shown = await tool('show', { messages: surface });
  assert.notEqual(shown.isError, true, JSON.stringify(shown));
  const view = await mount('show', { messages: surface }, shown);
  const drawn = view.locator('[data-surface=quick-add]');
  await drawn.waitFor();
  assert.equal(await drawn.locator('.a2-text').first().textContent(), 'Add a card to To Do');
  // The template drew one Text per item of /hints, the markup one as text.
  assert.deepEqual(await texts(drawn.locator('[role=list] .a2-text')), ['Short titles read best', XSS]);
  assert.equal(await view.locator('img').count(), 0);
  assert.equal(await drawn.locator('input[type=radio][value=none]').isChecked(), true);

  // The person fills it in and presses the button: nothing runs before they confirm.
  await drawn.locator('.a2-field input').fill('Made on a surface');
  await drawn.locator('input[type=radio][value=high]').check();
  await drawn.locator('input[type=checkbox]').check();
  const before = (await page_calls()).length;
  await drawn.locator('[data-component=save]').click();
  const sheet = view.locator('[data-role=confirm]');
  await sheet.waitFor();
  const record = { title: 'Made on a surface', list: todo, priority: 'high', done: true };
  assert.deepEqual(JSON.parse(await sheet.locator('[data-role=confirm-args]').textContent()), { entity: 'cards', record });
  await page.screenshot({ path: screenshotPath('mcp-apps-surface.png') });
  await sheet.locator('[data-role=cancel]').click();
  assert.equal(await view.locator('[data-role=confirm]').count(), 0);
  assert.equal((await page_calls()).length, before, 'a cancelled press calls nothing');

  // Meanwhile the agent changes another part of the model: the press keeps it.
  const note = [{ version: 'v1.0', updateDataModel: { surfaceId: 'quick-add', path: '/note', value: 'from the agent' } }];
  assert.notEqual((await tool('show', { messages: note })).isError, true);
  await drawn.locator('[data-component=save]').click();
  await view.locator('[data-role=confirm-run]').click();
  const receipt = view.locator('[data-role=receipt]');
  await receipt.waitFor();
  const calls = (await page_calls()).slice(before);
  assert.deepEqual(calls.map((c) => c.name), ['show', 'create']);
  assert.deepEqual(calls[1].arguments, { entity: 'cards', record });
  assert.match(await receipt.textContent(), /Made on a surface/);
  const made = await tool('query', { entity: 'cards', filter: 'title = "Made on a surface"' });
  assert.equal(made.structuredContent.totalItems, 1);
  assert.equal(made.structuredContent.items[0].priority, 'high');

  // The agent reads back what the person entered; Back shows the surface as they left it.
  const read = await tool('show', { surfaceId: 'quick-add' });
  const kept = read.structuredContent.surfaces[0].createSurface.dataModel;
  assert.equal(kept.title, 'Made on a surface');
  assert.deepEqual(kept.priority, ['high']);
  assert.equal(kept.urgent, true);
  assert.equal(kept.note, 'from the agent');
  assert.deepEqual(calls[0].arguments.messages.map((m) => m.updateDataModel.path).sort(), ['/priority', '/title', '/urgent']);
  await view.locator('[data-role=back]').click();
  await view.locator('[data-surface=quick-add]').waitFor();
  assert.equal(await view.locator('[data-surface=quick-add] .a2-field input').inputValue(), 'Made on a surface');

  // A surface outside the catalog never reaches the view: the agent gets every problem.
  const bad = structuredClone(surface);
  bad[0].createSurface.components[1] = { id: 'heading', component: 'Script', src: 'https://example.com/x.js' };
  const refused = await tool('show', { messages: bad });
  assert.equal(refused.isError, true);
  assert.equal(refused.structuredContent.code, 'unknown_component');
});

test('neither the host page nor the view logged an error', () => {
  assert.deepEqual(errors, []);
});
