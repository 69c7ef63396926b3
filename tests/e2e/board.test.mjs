// The kanban example as a person and an agent use it at once, in headless
// Chromium against the real `agent-app serve`.
//
// One story, in order (each step builds on the last): a person makes lists and
// a card, moves it by drag and drop and by keyboard, is told by the app what is
// wrong with a bad value, marks done and deletes; an agent writes over plain
// HTTP and the open page shows it within a second; /_/ lists the agent's
// receipt; a page from another origin is refused.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  eventually, launchBrowser, request, screenshotPath, startApp, startForeignSite,
} from './lib.mjs';

const APP_PORT = 18490;
const FOREIGN_PORT = 18491;
const AGENT = 'e2e-agent';

describe('kanban board in a browser', { timeout: 240000 }, () => {
  let app;
  let foreign;
  let context;
  let page;
  const pageErrors = [];
  const agentHeaders = () => ({ 'X-LUI-Token': app.token, 'X-LUI-Agent': AGENT });
  const records = (entity) => `${app.url}/api/collections/${entity}/records`;
  const find = async (entity, filter) => {
    const q = new URLSearchParams({ filter, perPage: '100' });
    const res = await request('GET', `${records(entity)}?${q}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.items;
  };
  const one = async (entity, filter) => {
    const items = await find(entity, filter);
    assert.equal(items.length, 1, `one ${entity} where ${filter}, got ${JSON.stringify(items)}`);
    return items[0];
  };
  const column = (name) => page.locator('.column', { has: page.locator('.column-title', { hasText: new RegExp(`^${name}$`) }) });
  const card = (title) => page.locator('.card', { has: page.locator('.card-title', { hasText: title }) });

  before(async () => {
    app = await startApp({ port: APP_PORT });
    foreign = await startForeignSite({ port: FOREIGN_PORT, target: app.url });
    context = await launchBrowser();
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(`${app.url}/`);
    await page.locator('body[data-ready="true"][data-live="true"]').waitFor();
  });

  after(async () => {
    await context?.close().catch(() => {});
    await foreign?.stop();
    await app?.stop();
  });

  test('the page is the app, announces its catalog, and carries no token', async () => {
    assert.equal(await page.title(), 'Kanban Board');
    const catalog = page.locator('link[rel="ai-catalog"]');
    assert.equal(await catalog.getAttribute('type'), 'application/ai-catalog+json');
    assert.equal(await catalog.getAttribute('href'), '/.well-known/ai-catalog.json');
    const html = await page.content();
    assert.ok(!html.includes(app.token), 'the agent token is not in the page');
  });

  test('a person creates lists and a card', async () => {
    await page.getByRole('button', { name: '+ Add a list' }).click();
    const name = page.getByLabel('New list name');
    for (const n of ['To Do', 'Doing']) {
      await name.fill(n);
      await name.press('Enter');
      await column(n).waitFor();
    }
    await name.press('Escape');

    await column('To Do').getByRole('button', { name: '+ Add a card' }).click();
    const title = column('To Do').getByLabel('New card title');
    await title.fill('Write the release notes');
    await title.press('Enter');
    await card('Write the release notes').waitFor();
    await title.press('Escape');

    const todo = await one('lists', 'name = "To Do"');
    const doing = await one('lists', 'name = "Doing"');
    assert.ok(doing.position > todo.position, 'lists keep the order they were added in');
    const c = await one('cards', 'title = "Write the release notes"');
    assert.equal(c.list, todo.id);
    // Written from the page's own origin with no token: the receipt says so.
    const { body } = await request('GET', `${app.url}/api/_a2app/receipts`);
    const mine = body.items.find((r) => r.entity === 'cards' && r.id === c.id);
    assert.equal(mine.caller, 'own_ui');
  });

  test('a person moves the card by drag and drop', async () => {
    const doing = await one('lists', 'name = "Doing"');
    await card('Write the release notes').dragTo(column('Doing').locator('.cards'));
    await column('Doing').locator('.card', { hasText: 'Write the release notes' }).waitFor();
    await eventually(async () => {
      assert.equal((await one('cards', 'title = "Write the release notes"')).list, doing.id);
    });
    // The board moves cards through the app's move_card operation, as agents do.
    const { body } = await request('GET', `${app.url}/api/_a2app/receipts`);
    const runs = body.items.filter((r) => r.action === 'operation' && r.id === 'move_card');
    assert.equal(runs.length, 1);
    assert.equal(runs[0].caller, 'own_ui');
    assert.equal(runs[0].text, 'Ran operation move_card (1 records written)');
    assert.equal(runs[0].fields.list, doing.id);
  });

  test('a person moves the card with the keyboard', async () => {
    const todo = await one('lists', 'name = "To Do"');
    const doing = await one('lists', 'name = "Doing"');
    await card('Write the release notes').focus();
    await page.keyboard.press('Shift+ArrowLeft');
    await column('To Do').locator('.card', { hasText: 'Write the release notes' }).waitFor();
    await eventually(async () => {
      assert.equal((await one('cards', 'title = "Write the release notes"')).list, todo.id);
    });
    // Focus follows the card, so the next key acts on it again.
    assert.equal(await page.evaluate(() => document.activeElement?.querySelector('.card-title')?.textContent), 'Write the release notes');

    // "Move to…": M opens the card with its list chooser focused.
    await page.keyboard.press('m');
    const dialog = page.locator('#card-dialog');
    await dialog.waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'card-list');
    await page.locator('#card-list').selectOption({ label: 'Doing' });
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'hidden' });
    await column('Doing').locator('.card', { hasText: 'Write the release notes' }).waitFor();
    await eventually(async () => {
      assert.equal((await one('cards', 'title = "Write the release notes"')).list, doing.id);
    });
  });

  test('a bad value gets the app\'s guard error next to its field, and the input is kept', async () => {
    const before = await one('cards', 'title = "Write the release notes"');
    await card('Write the release notes').click();
    const dialog = page.locator('#card-dialog');
    await dialog.waitFor();
    const longTitle = 'Release notes '.repeat(20); // 280 characters; the schema allows 255
    await page.locator('#card-title').fill(longTitle);
    await page.locator('#card-points').fill('150'); // points are 0..100
    await dialog.getByRole('button', { name: 'Save' }).click();

    const titleError = dialog.locator('[data-error-for="title"]');
    const pointsError = dialog.locator('[data-error-for="points"]');
    await titleError.waitFor();
    await pointsError.waitFor();
    assert.equal(await titleError.getAttribute('data-code'), 'too_long');
    assert.equal(await pointsError.getAttribute('data-code'), 'out_of_range');
    assert.match(await titleError.textContent(), /255/);
    assert.equal(await page.locator('#card-title').getAttribute('aria-invalid'), 'true');
    assert.equal(await page.locator('#card-title').inputValue(), longTitle, 'the person\'s input is kept');
    assert.ok(await dialog.isVisible(), 'the dialog stays open');
    await page.screenshot({ path: screenshotPath('card-guard-error.png') });
    const after = await one('cards', `id = "${before.id}"`);
    assert.equal(after.title, before.title, 'nothing was stored');
    assert.equal(after.updated, before.updated);

    // Fixed, it saves and the errors go.
    await page.locator('#card-title').fill('Write the release notes');
    await page.locator('#card-points').fill('3');
    await page.locator('#card-priority').selectOption('high');
    await dialog.getByLabel('feature').check();
    await page.locator('#card-due-day').fill('2030-03-15');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.waitFor({ state: 'hidden' });
    const saved = await one('cards', `id = "${before.id}"`);
    assert.equal(saved.points, 3);
    assert.equal(saved.priority, 'high');
    assert.deepEqual(saved.labels, ['feature']);
    assert.equal(saved.due_date, '2030-03-15 00:00:00.000Z');
    const shown = card('Write the release notes');
    assert.match(await shown.textContent(), /High/);
    assert.match(await shown.textContent(), /15 Mar 2030/);
  });

  test('a person marks a card done and deletes one after confirming', async () => {
    const todo = await one('lists', 'name = "To Do"');
    const created = await request('POST', records('cards'), { headers: agentHeaders(), json: { title: 'Throwaway', list: todo.id } });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    await card('Throwaway').waitFor();

    await card('Throwaway').focus();
    await page.keyboard.press('d');
    await page.locator('.card.is-done', { hasText: 'Throwaway' }).waitFor();
    await eventually(async () => assert.equal((await one('cards', 'title = "Throwaway"')).done, true));

    const confirm = page.locator('#confirm-dialog');
    await card('Throwaway').focus();
    await page.keyboard.press('Delete');
    await confirm.waitFor();
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'hidden' });
    assert.equal((await find('cards', 'title = "Throwaway"')).length, 1, 'cancel keeps the card');

    await card('Throwaway').focus();
    await page.keyboard.press('Delete');
    await confirm.waitFor();
    await confirm.getByRole('button', { name: 'Delete' }).click();
    await card('Throwaway').waitFor({ state: 'detached' });
    assert.equal((await find('cards', 'title = "Throwaway"')).length, 0);
  });

  test('an agent adds a card and the open page shows it within a second, without reload', async () => {
    await page.evaluate(() => { window.__sameDocument = true; });
    const todo = await one('lists', 'name = "To Do"');
    const shown = column('To Do').locator('.card', { hasText: 'Triage the crash report' });
    assert.equal(await shown.count(), 0);
    const t0 = Date.now(); // from before the agent's request, not after its answer
    const res = await request('POST', records('cards'), {
      headers: agentHeaders(),
      json: { title: 'Triage the crash report', list: todo.id, priority: 'urgent', labels: ['bug'], due_date: '2030-03-02T09:30:00Z' },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body._receipt.agent, AGENT);
    await shown.waitFor({ timeout: Math.max(1, 1000 - (Date.now() - t0)) });
    const ms = Date.now() - t0;
    assert.ok(ms < 1000, `shown ${ms} ms after the agent's request`);
    console.log(`the agent's card was on the page ${ms} ms after the request was sent`);
    assert.equal(await page.evaluate(() => window.__sameDocument), true, 'the page was not reloaded');
  });

  test('/_/ lists the agent\'s receipt, and new ones live', async () => {
    const dash = await context.newPage();
    try {
      await dash.goto(`${app.url}/_/`);
      await dash.locator('body[data-ready="true"]').waitFor();
      const row = dash.locator(`tr[data-agent="${AGENT}"]`, { hasText: 'Triage the crash report' });
      await row.waitFor();
      assert.match(await row.textContent(), /e2e-agent/);
      assert.match(await row.textContent(), /create/);
      // Connection help: URLs and the token's path, never the token.
      assert.equal(await dash.locator('#mcp-url').textContent(), `${app.url}/mcp`);
      assert.equal(await dash.locator('#cli-command').textContent(), `a2app ${app.url}`);
      assert.equal(await dash.locator('#gateway-command').textContent(), 'a2app mcp kanban');
      assert.equal(await dash.locator('#token-path').textContent(), `${app.dir}/.agent-token`);
      assert.ok(await dash.getByRole('link', { name: 'Open the app' }).isVisible());
      assert.ok(!(await dash.content()).includes(app.token), 'the token is not on the dashboard');
      // Describe is shown: the cards entity and one of its fields.
      const cardsEntity = dash.locator('.entity-card', { hasText: 'cards' });
      await cardsEntity.locator('th', { hasText: 'due_date' }).waitFor();
      assert.match(await cardsEntity.locator('[data-count="cards"]').textContent(), /^\d+ records?$/);

      // A later agent write shows up without a reload (realtime).
      await dash.locator('body[data-live="true"]').waitFor();
      const todo = await one('lists', 'name = "To Do"');
      const res = await request('POST', records('cards'), {
        headers: agentHeaders(), json: { title: 'Check the dashboard updates', list: todo.id },
      });
      assert.equal(res.status, 200);
      await dash.locator(`tr[data-agent="${AGENT}"]`, { hasText: 'Check the dashboard updates' }).waitFor({ timeout: 3000 });
      const cardCount = (await find('cards', 'id != ""')).length;
      await dash.locator('[data-count="cards"]', { hasText: `${cardCount} records` }).waitFor({ timeout: 3000 });
      await dash.screenshot({ path: screenshotPath('dashboard.png'), fullPage: true });
    } finally {
      await dash.close();
    }
  });

  test('a page from another origin, in the same browser, is refused', async () => {
    const foreignPage = await context.newPage();
    const writes = [];
    foreignPage.on('response', (r) => {
      if (r.url() === records('cards') && r.request().method() === 'POST') writes.push(r);
    });
    try {
      await foreignPage.goto(`${foreign.url}/`);
      await foreignPage.locator('body[data-done="true"]').waitFor();
      await eventually(() => assert.equal(writes.length, 2, 'the fetch and the form post both reached the app'));
      for (const w of writes) assert.equal(w.status(), 403);
      // The form's answer is a navigation of the frame, so its body is readable here.
      const form = writes.find((w) => w.frame() !== foreignPage.mainFrame());
      const refusal = await form.json();
      assert.equal(refusal.code, 'forbidden_origin');
      assert.ok(refusal.message.includes(foreign.url), `the refusal names the foreign origin: ${refusal.message}`);
      assert.match(await foreignPage.locator('#result').textContent(), /read: blocked/);
    } finally {
      await foreignPage.close();
    }
    assert.equal((await find('cards', 'title = "written by a foreign form"')).length, 0, 'no record was created');
    assert.equal((await find('cards', 'title = "written by a foreign page"')).length, 0, 'no record was created');
  });

  test('screenshot of a busy board', async () => {
    const todo = await one('lists', 'name = "To Do"');
    const doing = await one('lists', 'name = "Doing"');
    const post = async (entity, json) => {
      const res = await request('POST', records(entity), { headers: agentHeaders(), json });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body;
    };
    for (const [list, color] of [[todo, 'blue'], [doing, 'yellow']]) {
      const res = await request('PATCH', `${records('lists')}/${list.id}`, { headers: agentHeaders(), json: { color } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.color, color);
    }
    const done = await post('lists', { name: 'Done', position: 5, color: 'green' });
    const ann = await post('members', { name: 'Ann Lee' });
    const bo = await post('members', { name: 'Bo Park' });
    await post('cards', { title: 'Sketch the onboarding flow', list: todo.id, priority: 'medium', labels: ['feature'], points: 5, assignees: [ann.id], position: 5000 });
    await post('cards', { title: 'Update the API docs for filters', list: todo.id, priority: 'low', labels: ['docs'], due_date: '2030-04-01T00:00:00Z', position: 6000 });
    await post('cards', { title: 'Fix flaky login test', list: doing.id, priority: 'high', labels: ['bug', 'chore'], assignees: [ann.id, bo.id], points: 2, description: 'Fails one run in twenty on CI.' });
    await post('cards', { title: 'Set up the staging database', list: done.id, labels: ['chore'], done: true, points: 3, assignees: [bo.id] });
    await post('cards', { title: 'Write the launch announcement', list: done.id, priority: 'medium', labels: ['docs'], done: true });
    await page.locator('.card', { hasText: 'Write the launch announcement' }).waitFor();
    // Members arrive by realtime too: each card assigned to Bo shows his avatar.
    await page.locator('.card', { hasText: 'Set up the staging database' }).locator('.avatar[title="Bo Park"]').waitFor();
    assert.equal(await page.locator('.card .avatar[title="Bo Park"]').count(), 2, 'both of Bo\'s cards show him');
    await page.mouse.move(0, 0);
    await page.waitForTimeout(2600); // let the "new card" highlight fade
    await page.screenshot({ path: screenshotPath('board.png') });
    assert.deepEqual(pageErrors, [], 'no script error on the board during the whole story');
  });
});
