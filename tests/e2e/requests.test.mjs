// The app-to-agent queue on the kanban board, in headless Chromium against
// the real `agent-app serve`: a person asks from the page, this test plays the
// agent over plain HTTP with the app's token, and the page follows every step
// through realtime.
//
// One story, in order: the board offers what describe declares; a summary is
// asked, claimed and answered with markup that the page shows as text; a
// priority is asked from the card dialog and the person applies the answer;
// a pending and a claimed request are cancelled and the agent is refused; a
// failure is shown with its reason; a reload lists the queue again.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually, launchBrowser, request, screenshotPath, startApp } from './lib.mjs';

const APP_PORT = 18496;
const AGENT = 'e2e-agent';
const SUMMARY = '<img src=x onerror=alert(1)>Two cards are urgent';
const REASON = 'It blocks <b>every</b> sign-in & nobody can work.';
const FAILURE = 'There are no <script>due dates</script> to read.';

describe('asking an agent from the board', { timeout: 240000 }, () => {
  let app;
  let context;
  let page;
  let list;
  let card;
  const pageErrors = [];
  const consoleErrors = [];
  const dialogs = [];
  const agentHeaders = () => ({ 'X-LUI-Token': app.token, 'X-LUI-Agent': AGENT });
  const queue = (rest = '') => `${app.url}/api/_a2app/requests${rest}`;
  const records = (entity) => `${app.url}/api/collections/${entity}/records`;

  /** The agent's view of the queue: a page of requests matching `query`. */
  const listQueue = async (query) => {
    const res = await request('GET', `${queue()}?${new URLSearchParams(query)}`, { headers: agentHeaders() });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  };
  /** The one pending request the person just asked: waits for it, then asserts there is exactly one. */
  const onlyPending = async (capability) => {
    await eventually(async () => assert.notEqual((await listQueue({ status: 'pending' })).totalItems, 0));
    const page1 = await listQueue({ status: 'pending' });
    assert.equal(page1.totalItems, 1, JSON.stringify(page1));
    assert.equal(page1.items.length, 1);
    const [asked] = page1.items;
    assert.equal(asked.capability, capability);
    assert.equal(asked.status, 'pending');
    assert.equal(asked.requestedBy, 'own_ui');
    return asked;
  };
  const claim = (id) => request('POST', queue(`/${id}/claim`), { headers: agentHeaders(), json: {} });
  const claimed = async (id) => {
    const res = await claim(id);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.request.status, 'claimed');
    assert.equal(res.body.request.claimedBy, AGENT);
    assert.equal(typeof res.body.claimKey, 'string');
    return res.body.claimKey;
  };
  const answer = (id, json) => request('POST', queue(`/${id}/answer`), { headers: agentHeaders(), json });
  const storedCard = async () => {
    const res = await request('GET', `${records('cards')}/${card.id}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  };
  /** An item's blocks, in order; their text is all the item's text (no stray text beside them). */
  const blocks = async (item) => {
    const parts = await item.locator(':scope > *').allTextContents();
    assert.equal(await item.textContent(), parts.join(''), 'an item holds only its blocks');
    return parts;
  };
  const panelItem = (id) => page.locator(`#request-list .request[data-request="${id}"]`);
  const dialogItem = (id) => page.locator(`#card-requests .request[data-request="${id}"]`);

  before(async () => {
    app = await startApp({ port: APP_PORT });
    const made = await request('POST', records('lists'), { headers: agentHeaders(), json: { name: 'To Do' } });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    list = made.body;
    const c = await request('POST', records('cards'), { headers: agentHeaders(), json: { title: 'Fix the login crash', list: list.id } });
    assert.equal(c.status, 200, JSON.stringify(c.body));
    card = c.body;
    context = await launchBrowser();
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
    page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
    await page.goto(`${app.url}/`);
    await page.locator('body[data-ready="true"][data-live="true"]').waitFor();
  });

  after(async () => {
    await context?.close().catch(() => {});
    await app?.stop();
  });

  test('the board offers what describe declares, and an agent cannot ask', async () => {
    const doc = await request('GET', `${app.url}/api/_a2app/describe`);
    assert.equal(doc.status, 200);
    assert.deepEqual(doc.body.requests.map((c) => c.name), ['summarise_board', 'suggest_priority']);
    const ask = page.getByRole('button', { name: 'Summarise this board', exact: true });
    assert.ok(await ask.isVisible());
    const focus = page.getByLabel('Which cards the summary is about.');
    assert.equal(await focus.inputValue(), 'everything');
    assert.deepEqual(await focus.locator('option').evaluateAll((os) => os.map((o) => [o.value, o.textContent])),
      [['everything', 'Everything'], ['overdue', 'Overdue'], ['urgent', 'Urgent']]);
    assert.equal(await page.locator('#requests-toggle').getAttribute('aria-expanded'), 'false');
    assert.ok(await page.locator('#requests').isHidden());

    // Only a person asks: the agent's token is refused, and nothing is queued.
    const refused = await request('POST', queue(), { headers: agentHeaders(), json: { capability: 'summarise_board', params: {} } });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'forbidden');
    assert.equal(refused.body.ok, false);
    assert.equal((await listQueue({})).totalItems, 0);
  });

  test('a person asks for a summary; the agent claims it and answers, and markup stays text', async () => {
    await page.getByRole('button', { name: 'Summarise this board', exact: true }).click();
    await page.locator('#requests').waitFor();
    assert.equal(await page.locator('#requests-toggle').getAttribute('aria-expanded'), 'true');
    assert.equal(await page.locator('#request-list').getAttribute('aria-live'), 'polite');

    const asked = await onlyPending('summarise_board');
    assert.deepEqual(asked.params, { focus: 'everything' });
    const item = panelItem(asked.id);
    await item.locator('.request-status', { hasText: 'Waiting for an agent' }).waitFor();
    assert.equal(await item.getAttribute('data-status'), 'pending');
    assert.equal(await item.locator('.request-subject').textContent(), 'Focus: everything');
    assert.equal(await page.locator('#requests-open').textContent(), '1 open');

    const key = await claimed(asked.id);
    await page.locator(`#request-list .request[data-request="${asked.id}"][data-status="claimed"]`).waitFor();
    assert.equal(await item.locator('.request-status').textContent(), `Claimed by ${AGENT}`);
    assert.equal(await item.locator('.request-agent').textContent(), AGENT);
    assert.equal(await item.getByRole('button', { name: 'Cancel the request: Summarise this board' }).count(), 1);

    const again = await claim(asked.id);
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'request_claimed');

    const done = await answer(asked.id, { claimKey: key, result: { summary: SUMMARY } });
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.equal(done.body.status, 'done');
    assert.deepEqual(done.body.result, { summary: SUMMARY });

    await page.locator(`#request-list .request[data-request="${asked.id}"][data-status="done"]`).waitFor();
    assert.equal(await item.locator('.request-result').textContent(), SUMMARY);
    assert.equal(await item.locator('.request-status').textContent(), `Answered by ${AGENT}`);
    assert.equal(await item.getByRole('button').count(), 0, 'nothing to cancel once answered');
    const time = await item.locator('.request-time').textContent();
    assert.deepEqual(await blocks(item),
      [`Summarise this board${time}`, 'Focus: everything', `Answered by ${AGENT}`, SUMMARY]);
    assert.ok(await page.locator('#requests-open').isHidden(), 'no open request left');
    await page.waitForTimeout(300); // an onerror would have fired by now
    assert.equal(await page.locator('img').count(), 0, 'no element was made from the answer');
    assert.deepEqual(dialogs, []);
    await page.screenshot({ path: screenshotPath('requests-summary.png') });
  });

  test('a person asks for a card\'s priority and applies the answer', async () => {
    const before = await storedCard();
    assert.equal(before.priority, 'none');
    await page.locator('.card', { hasText: 'Fix the login crash' }).click();
    const dialog = page.locator('#card-dialog');
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Suggest a priority' }).click();

    const asked = await onlyPending('suggest_priority');
    assert.deepEqual(asked.params, { card: card.id });
    const item = dialogItem(asked.id);
    await item.locator('.request-status', { hasText: 'Waiting for an agent' }).waitFor();
    assert.equal(await item.locator('.request-subject').textContent(), 'Card: “Fix the login crash”');

    const key = await claimed(asked.id);
    await page.locator(`#card-requests .request[data-request="${asked.id}"][data-status="claimed"]`).waitFor();
    assert.equal(await item.locator('.request-agent').textContent(), AGENT);

    const done = await answer(asked.id, { claimKey: key, result: { priority: 'urgent', reason: REASON } });
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.equal(done.body.status, 'done');
    assert.deepEqual(done.body.result, { priority: 'urgent', reason: REASON });

    await page.locator(`#card-requests .request[data-request="${asked.id}"][data-status="done"]`).waitFor();
    assert.equal(await item.locator('.request-result').textContent(), 'Suggested priority: Urgent');
    assert.equal(await item.locator('.request-reason').textContent(), REASON);
    assert.equal(await item.locator('b').count(), 0);
    await page.screenshot({ path: screenshotPath('requests-card.png') });
    // An answer changes nothing by itself: the agent never writes.
    const untouched = await storedCard();
    assert.equal(untouched.priority, 'none');
    assert.equal(untouched.updated, before.updated);

    await item.getByRole('button', { name: 'Apply priority Urgent to “Fix the login crash”' }).click();
    await eventually(async () => assert.equal((await storedCard()).priority, 'urgent'));
    await item.locator('.request-note', { hasText: 'The card has this priority.' }).waitFor();
    assert.equal(await item.getByRole('button').count(), 0);
    const time = await item.locator('.request-time').textContent();
    assert.deepEqual(await blocks(item), [`Suggest a priority for a card${time}`, 'Card: “Fix the login crash”',
      `Answered by ${AGENT}`, 'Suggested priority: Urgent', REASON, 'The card has this priority.']);
    assert.equal(await page.locator('#card-priority').inputValue(), 'urgent', 'the dialog shows the applied priority');
    // Written by the page (the person), not by the agent.
    const { body } = await request('GET', `${app.url}/api/_a2app/receipts`);
    const writes = body.items.filter((r) => r.entity === 'cards' && r.id === card.id && r.caller === 'own_ui');
    assert.equal(writes.length, 1, JSON.stringify(writes));

    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    await page.locator('.card', { hasText: 'Fix the login crash' }).locator('.priority-urgent', { hasText: 'Urgent' }).waitFor();
    // The board's panel lists it too, newest first.
    assert.deepEqual(await page.locator('#request-list .request').evaluateAll((ns) => ns.map((n) => n.dataset.capability)),
      ['suggest_priority', 'summarise_board']);
  });

  test('a person cancels a pending request, and the agent\'s claim is refused', async () => {
    await page.getByLabel('Which cards the summary is about.').selectOption('urgent');
    await page.getByRole('button', { name: 'Summarise this board', exact: true }).click();
    const asked = await onlyPending('summarise_board');
    assert.deepEqual(asked.params, { focus: 'urgent' });
    const item = panelItem(asked.id);
    await item.locator('.request-status', { hasText: 'Waiting for an agent' }).waitFor();

    await item.getByRole('button', { name: 'Cancel the request: Summarise this board' }).click();
    await page.locator(`#request-list .request[data-request="${asked.id}"][data-status="cancelled"]`).waitFor();
    assert.equal(await item.locator('.request-status').textContent(), 'Cancelled');
    assert.equal(await item.getByRole('button').count(), 0);
    const time = await item.locator('.request-time').textContent();
    // The time alone today; with the day if midnight passed since the ask.
    assert.match(time, /^(\d{1,2} [A-Z][a-z]{2} )?\d\d:\d\d$/);
    assert.deepEqual(await blocks(item), [`Summarise this board${time}`, 'Focus: urgent', 'Cancelled']);
    const stored = await request('GET', queue(`/${asked.id}`));
    assert.equal(stored.status, 200);
    assert.equal(stored.body.status, 'cancelled');

    const refused = await claim(asked.id);
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, 'request_closed');
    assert.equal(refused.body.status, 409);
    assert.equal(refused.body.ok, false);
    assert.equal(refused.body.violations.length, 1);
    assert.equal(refused.body.violations[0].code, 'request_closed');
    assert.equal(refused.body.violations[0].got, 'cancelled');
  });

  test('a person cancels a claimed request, and the agent\'s answer is refused', async () => {
    await page.getByLabel('Which cards the summary is about.').selectOption('everything');
    await page.getByRole('button', { name: 'Summarise this board', exact: true }).click();
    const asked = await onlyPending('summarise_board');
    const key = await claimed(asked.id);
    const item = panelItem(asked.id);
    await page.locator(`#request-list .request[data-request="${asked.id}"][data-status="claimed"]`).waitFor();

    await item.getByRole('button', { name: 'Cancel the request: Summarise this board' }).click();
    await page.locator(`#request-list .request[data-request="${asked.id}"][data-status="cancelled"]`).waitFor();
    const late = await answer(asked.id, { claimKey: key, result: { summary: 'Too late.' } });
    assert.equal(late.status, 409);
    assert.equal(late.body.code, 'request_closed');
    assert.equal(late.body.violations[0].got, 'cancelled');
    assert.equal(await item.locator('.request-result').count(), 0);
  });

  test('a failure is shown as failed, with its reason as text', async () => {
    await page.getByLabel('Which cards the summary is about.').selectOption('overdue');
    await page.getByRole('button', { name: 'Summarise this board', exact: true }).click();
    const asked = await onlyPending('summarise_board');
    assert.deepEqual(asked.params, { focus: 'overdue' });
    const key = await claimed(asked.id);
    const failed = await answer(asked.id, { claimKey: key, failure: FAILURE });
    assert.equal(failed.status, 200, JSON.stringify(failed.body));
    assert.equal(failed.body.status, 'failed');
    assert.equal(failed.body.failure, FAILURE);

    const item = panelItem(asked.id);
    await page.locator(`#request-list .request[data-request="${asked.id}"][data-status="failed"]`).waitFor();
    assert.equal(await item.locator('.request-failure').textContent(), FAILURE);
    assert.equal(await item.locator('.request-status').textContent(), `Failed, reported by ${AGENT}`);
    assert.equal(await item.locator('script').count(), 0);
    assert.equal(await item.getByRole('button').count(), 0);
    const time = await item.locator('.request-time').textContent();
    assert.deepEqual(await blocks(item),
      [`Summarise this board${time}`, 'Focus: overdue', `Failed, reported by ${AGENT}`, FAILURE]);
  });

  test('after a reload the page lists the queue again, open and recent', async () => {
    await page.getByRole('button', { name: 'Summarise this board', exact: true }).click(); // left pending
    const asked = await onlyPending('summarise_board');
    await page.reload();
    await page.locator('body[data-ready="true"][data-live="true"]').waitFor();
    assert.ok(await page.locator('#requests').isHidden());
    assert.equal(await page.locator('#requests-open').textContent(), '1 open');
    await page.getByRole('button', { name: /^Agent requests/ }).click();
    await page.locator('#requests').waitFor();

    const all = await listQueue({});
    assert.equal(all.totalItems, 6);
    const shown = await page.locator('#request-list .request').evaluateAll((ns) => ns.map((n) => [n.dataset.request, n.dataset.status]));
    assert.deepEqual(shown, all.items.map((r) => [r.id, r.status]));
    assert.deepEqual(all.items.map((r) => r.status), ['pending', 'failed', 'cancelled', 'cancelled', 'done', 'done']);
    assert.equal(await panelItem(asked.id).getAttribute('data-status'), 'pending');
    const summary = all.items.find((r) => r.status === 'done' && r.capability === 'summarise_board');
    assert.equal(await panelItem(summary.id).locator('.request-result').textContent(), SUMMARY);
    await page.screenshot({ path: screenshotPath('requests-panel.png') });
  });

  test('no script error, console error or dialog on the page during the whole story', () => {
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(consoleErrors, []);
    assert.deepEqual(dialogs, []);
  });
});
