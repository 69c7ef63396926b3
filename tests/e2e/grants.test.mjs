// The consent screen for grants on the /_/ dashboard, in headless Chromium
// against the real `agent-app serve`: this test plays agents asking over plain
// HTTP (an Ed25519 public key, a name, scopes; no credential), and a person
// decides on the dashboard. Every decision is read back over HTTP.
//
// One story, in order: nobody waits; an ask appears without a reload, with its
// fingerprint and its scopes in words; a person unticks a scope (the tick
// survives a refresh) and approves, and the grant holds exactly the ticked
// scopes; another is denied; the active one is revoked; a name made of markup
// stays text; a link to `#grant=<id>` opens at that grant.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { eventually, launchBrowser, request, screenshotPath, startApp } from './lib.mjs';

const APP_PORT = 18498;
const MULTI_PORT = 18499;
const EVIL = '<img src=x onerror="window.__pwned=1">Evil & <b>bold</b>';
const WORDS = {
  'data:cards:read': ['Read cards (list, view, follow changes)', false],
  'data:cards:write': ['Create, change and delete cards (and read them)', false],
  'data:lists:read': ['Read lists (list, view, follow changes)', false],
  'op:clear_done': ['Run the operation clear_done: Delete every card marked done. Cannot be undone.', true],
  'op:move_card': ['Run the operation move_card: Move a card to another list, optionally at a position within it.', false],
};

/** A fresh Ed25519 public key as an agent sends it: base64url, no padding, 32 bytes. */
const newKey = () => crypto.generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x;

describe('grants on the dashboard', { timeout: 240000 }, () => {
  let app;
  let context;
  let page;
  const pageErrors = [];
  const consoleErrors = [];
  const grants = (rest = '') => `${app.url}/api/_a2app/grants${rest}`;

  /** An agent asks; the answer is the pending grant. */
  const ask = async (agent, scopes) => {
    const res = await request('POST', grants(), { json: { publicKey: newKey(), agent, scopes } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, 'pending');
    assert.match(res.body.fingerprint, /^[0-9a-f]{16}$/);
    return res.body;
  };
  /** The grant as the agent polls it. */
  const readBack = async (id) => {
    const res = await request('GET', grants(`/${id}`));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  };
  const card = (id) => page.locator(`#grants .grant[data-grant="${id}"]`);
  const pendingCard = (id) => page.locator(`#grants-pending .grant[data-grant="${id}"]`);
  const activeCard = (id) => page.locator(`#grants-active .grant[data-grant="${id}"]`);
  const closedItem = (id) => page.locator(`#grants-closed-list .grant[data-grant="${id}"]`);
  /** A card's scopes as shown: [scope, words, marked destructive, ticked (null without a box)]. */
  const shownScopes = (node) => node.locator('.scope').evaluateAll((items) => items.map((li) => {
    const box = li.querySelector('input[type="checkbox"]');
    return [li.dataset.scope, li.querySelector('.scope-words').textContent, Boolean(li.querySelector('.badge.danger')), box ? box.checked : null];
  }));
  const expected = (scopes, ticked) => scopes.map((s) => [s, WORDS[s][0], WORDS[s][1], ticked]);
  const box = (id, scope) => pendingCard(id).locator(`.scope[data-scope="${scope}"] input[type="checkbox"]`);

  before(async () => {
    app = await startApp({ port: APP_PORT });
    context = await launchBrowser();
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
    await page.goto(`${app.url}/_/`);
    await page.locator('body[data-ready="true"]').waitFor();
  });

  after(async () => {
    await context?.close().catch(() => {});
    await app?.stop();
  });

  test('with no asks, the section says nobody waits; the API lists grants to the page only', async () => {
    assert.ok(await page.locator('#grants-empty').isVisible());
    assert.equal(await page.locator('#grants-count').textContent(), '0 waiting · 0 active');
    assert.ok(await page.locator('#grants-multi-user').isHidden());
    assert.ok(await page.locator('#grants-closed').isHidden());
    // The dashboard's list answers the page (a same-origin fetch) and nobody else.
    assert.equal((await request('GET', `${app.url}/_/grants.json`)).status, 403);
    assert.equal((await request('GET', `${app.url}/_/grants.json`, { headers: { 'Sec-Fetch-Site': 'cross-site' } })).status, 403);
  });

  let first;
  let second;

  test('an ask over HTTP appears without a reload, with its fingerprint and its scopes in words, all ticked', async () => {
    await page.evaluate(() => { window.__sameDocument = true; });
    first = await ask('deploy-bot', ['op:clear_done', 'data:cards:write', 'data:cards:read']);
    const node = pendingCard(first.id);
    await node.waitFor({ timeout: 10000 }); // the page reads the grants every 4 s
    assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload');
    assert.equal(await node.getAttribute('data-status'), 'pending');
    assert.equal(await node.locator('.grant-agent').textContent(), 'deploy-bot');
    assert.equal(await node.locator('.fingerprint').textContent(), first.fingerprint);
    assert.deepEqual(first.scopes.slice().sort(), ['data:cards:read', 'data:cards:write', 'op:clear_done']);
    assert.deepEqual(await shownScopes(node), expected(first.scopes, true));
    // The time alone today; with the day when the expiry falls tomorrow (an ask in the quarter hour before midnight).
    assert.match(
      await node.locator('[data-expires]').textContent(),
      /^in 1[45] min, at (\d{1,2} [A-Z][a-z]{2} )?\d\d:\d\d:\d\d$/,
    );
    assert.equal(await node.getByRole('checkbox', { name: 'Read cards (list, view, follow changes)' }).count(), 1);
    assert.ok(await node.getByRole('button', { name: 'Approve', exact: true }).isEnabled());
    assert.ok(await node.getByRole('button', { name: 'Deny', exact: true }).isEnabled());
    assert.equal(await page.locator('#grants-count').textContent(), '1 waiting · 0 active');
    assert.ok(await page.locator('#grants-empty').isHidden());
  });

  test('a person unticks a scope (which survives a refresh) and approves: the grant holds exactly the ticked scopes', async () => {
    await box(first.id, 'data:cards:write').uncheck();
    // A second ask arriving means the list was read again; the untick stays.
    second = await ask('report-bot', ['data:lists:read', 'op:move_card']);
    await pendingCard(second.id).waitFor({ timeout: 10000 });
    assert.equal(await box(first.id, 'data:cards:write').isChecked(), false);
    assert.equal(await box(first.id, 'data:cards:read').isChecked(), true);

    // With nothing ticked there is nothing to approve.
    const secondApprove = pendingCard(second.id).getByRole('button', { name: 'Approve', exact: true });
    await box(second.id, 'data:lists:read').uncheck();
    await box(second.id, 'op:move_card').uncheck();
    assert.ok(await secondApprove.isDisabled());
    assert.equal(await pendingCard(second.id).locator('.hint').textContent(), 'Tick at least one, or deny.');
    await box(second.id, 'op:move_card').check();
    assert.ok(await secondApprove.isEnabled());

    await pendingCard(first.id).getByRole('button', { name: 'Approve', exact: true }).click();
    const node = activeCard(first.id);
    await node.waitFor();
    const stored = await readBack(first.id);
    assert.equal(stored.status, 'active');
    assert.equal(stored.actsFor, 'owner');
    assert.deepEqual(stored.scopes.slice().sort(), ['data:cards:read', 'op:clear_done']);
    assert.equal(await pendingCard(first.id).count(), 0);
    assert.equal(await node.getAttribute('data-status'), 'active');
    assert.deepEqual(await shownScopes(node), expected(stored.scopes, null));
    assert.equal(await node.locator('.acts-for').textContent(), 'the app\'s owner (you)');
    assert.equal(await node.locator('.fingerprint').textContent(), first.fingerprint);
    assert.equal(await page.locator('#grants-count').textContent(), '1 waiting · 1 active');
    await page.screenshot({ path: screenshotPath('grants.png'), fullPage: true });
  });

  test('Deny closes a grant as denied', async () => {
    await pendingCard(second.id).getByRole('button', { name: 'Deny', exact: true }).click();
    await closedItem(second.id).waitFor({ state: 'attached' });
    assert.equal((await readBack(second.id)).status, 'denied');
    assert.equal(await pendingCard(second.id).count(), 0);
    assert.equal(await closedItem(second.id).getAttribute('data-status'), 'denied');
    assert.equal(await closedItem(second.id).locator('.grant-agent').textContent(), 'report-bot');
    assert.ok(await page.locator('#grants-empty').isVisible());
    assert.equal(await page.locator('#grants-closed-title').textContent(), 'Closed: 1 denied, revoked or expired');
    // A decided grant is not decided again.
    const again = await request('POST', grants(`/${second.id}/approve`), { headers: { Origin: app.url }, json: {} });
    assert.equal(again.status, 409, JSON.stringify(again.body));
    assert.equal(again.body.code, 'request_closed');
  });

  test('Revoke ends an active grant at once', async () => {
    await activeCard(first.id).getByRole('button', { name: 'Revoke', exact: true }).click();
    await closedItem(first.id).waitFor({ state: 'attached' });
    const stored = await readBack(first.id);
    assert.equal(stored.status, 'revoked');
    assert.equal(await activeCard(first.id).count(), 0);
    assert.equal(await closedItem(first.id).getAttribute('data-status'), 'revoked');
    assert.equal(await page.locator('#grants-count').textContent(), '0 waiting · 0 active');
    const closed = await page.locator('#grants-closed-list .grant').evaluateAll((items) => items.map((i) => [i.dataset.grant, i.dataset.status]));
    assert.deepEqual(closed.sort(), [[first.id, 'revoked'], [second.id, 'denied']].sort());
  });

  test('an agent name made of markup is shown as text and makes no element', async () => {
    const evil = await ask(EVIL, ['data:cards:read']);
    assert.equal(evil.agent, EVIL, 'the server keeps the name as given');
    const node = pendingCard(evil.id);
    await node.waitFor({ timeout: 10000 });
    assert.equal(await node.locator('.grant-agent').textContent(), EVIL);
    assert.equal(await page.locator('#grants img, #grants b').count(), 0);
    assert.equal(await page.locator('img').count(), 0);
    await node.getByRole('button', { name: 'Deny', exact: true }).click();
    await closedItem(evil.id).waitFor({ state: 'attached' });
    assert.equal(await closedItem(evil.id).locator('.grant-agent').textContent(), EVIL);
    assert.equal(await page.locator('img').count(), 0);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
  });

  test('a link to #grant=<id> opens the dashboard at that grant', async () => {
    // Enough asks that the linked one, the oldest, is below the fold.
    const linked = await ask('linked-bot', ['data:cards:read']);
    const others = [];
    for (let i = 0; i < 8; i++) others.push(await ask(`other-bot-${i}`, ['data:cards:read', 'data:lists:read']));
    await page.goto(`${app.url}/_/#grant=${linked.id}`);
    await page.locator('body[data-ready="true"]').waitFor();
    const node = pendingCard(linked.id);
    assert.equal(await node.getAttribute('data-linked'), 'true');
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.grant), linked.id);
    const box = await node.boundingBox();
    const viewport = page.viewportSize();
    assert.ok(box.y >= 0 && box.y + box.height <= viewport.height, `in view: ${JSON.stringify(box)}`);
    assert.ok(await page.evaluate(() => window.scrollY) > 0, 'the page scrolled to it');
    assert.equal(await page.locator('#grants .grant[data-linked]').count(), 1);

    // Following another link on the open page moves there.
    await page.evaluate((id) => { window.location.hash = `#grant=${id}`; }, others[3].id);
    await eventually(async () => assert.equal(await page.evaluate(() => document.activeElement?.dataset.grant), others[3].id));
    assert.equal(await pendingCard(others[3].id).getAttribute('data-linked'), 'true');
    assert.equal(await page.locator('#grants .grant[data-linked]').count(), 1);

    // A closed grant's link opens the closed list at it.
    await page.evaluate((id) => { window.location.hash = `#grant=${id}`; }, first.id);
    await eventually(async () => assert.equal(await page.evaluate(() => document.activeElement?.dataset.grant), first.id));
    assert.equal(await page.locator('#grants-closed').getAttribute('open'), '');

    // A link to no grant says so.
    await page.evaluate(() => { window.location.hash = '#grant=nosuchgrant0000'; });
    await page.locator('#grants-error', { hasText: 'The grant in this link (nosuchgrant0000) is not here' }).waitFor();
    assert.equal(await card('nosuchgrant0000').count(), 0);
  });

  test('a flood of asks is denied at once, by source or all together', async () => {
    const listed = await request('GET', grants(), { headers: { Origin: app.url } });
    const waiting = listed.body.items.filter((g) => g.status === 'pending');
    assert.ok(waiting.length >= 2, `${waiting.length} waiting`);
    assert.ok(waiting.every((g) => g.source === '127.0.0.1'), JSON.stringify(waiting.map((g) => g.source)));
    await page.goto(`${app.url}/_/`);
    await page.locator('body[data-ready="true"]').waitFor();
    const all = page.locator('#grants-deny-all button', { hasText: `Deny all ${waiting.length} waiting` });
    await all.waitFor();
    assert.equal(await page.locator('#grants-deny-all button', { hasText: `Deny the ${waiting.length} from 127.0.0.1` }).count(), 1);
    // Each ask shows where it came from.
    assert.equal(await pendingCard(waiting[0].id).locator('code.source').textContent(), '127.0.0.1');
    await all.click();
    await eventually(async () => assert.equal(await page.locator('#grants-pending .grant').count(), 0));
    assert.equal(await page.locator('#grants-deny-all').isHidden(), true);
    for (const g of waiting) assert.equal((await readBack(g.id)).status, 'denied');
  });

  test('the page raised no script error', () => {
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(consoleErrors, []);
  });
});

describe('grants on the dashboard of a multi-user app', { timeout: 120000 }, () => {
  let app;
  let context;

  before(async () => {
    app = await startApp({ port: MULTI_PORT, configure: multiUser });
    context = await launchBrowser();
  });

  after(async () => {
    await context?.close().catch(() => {});
    await app?.stop();
  });

  test('the page says a signed-in user decides, and offers no buttons', async () => {
    const asked = await request('POST', `${app.url}/api/_a2app/grants`, { json: { publicKey: newKey(), agent: 'bot', scopes: ['data:cards:read'] } });
    assert.equal(asked.status, 200, JSON.stringify(asked.body));
    const page = await context.newPage();
    await page.goto(`${app.url}/_/`);
    await page.locator('body[data-ready="true"]').waitFor();
    assert.ok(await page.locator('#grants-multi-user').isVisible());
    assert.match(await page.locator('#grants-multi-user').textContent(), /signed in, on the app's own page/);
    assert.equal(await page.locator('#grants .grant').count(), 0);
    assert.equal(await page.locator('#grants button:visible').count(), 0);
    assert.ok(await page.locator('#grants-empty').isHidden());
    assert.ok(await page.locator('#grants-sign-in').isHidden());
  });

  test('opened at a grant, the page shows it with a sign-in form, and nothing decides before a sign-in', async () => {
    const asked = await request('POST', `${app.url}/api/_a2app/grants`, { json: { publicKey: newKey(), agent: 'bot', scopes: ['data:cards:read'] } });
    assert.equal(asked.status, 200, JSON.stringify(asked.body));
    const page = await context.newPage();
    await page.goto(`${app.url}/_/#grant=${asked.body.id}`);
    await page.locator('body[data-ready="true"]').waitFor();
    const node = page.locator(`#grants-pending .grant[data-grant="${asked.body.id}"]`);
    assert.equal(await node.getAttribute('data-kind'), 'key');
    assert.equal(await node.locator('.fingerprint').textContent(), asked.body.fingerprint);
    assert.ok(await page.locator('#grants-multi-user').isHidden());
    assert.ok(await page.locator('#sign-in').isVisible());
    assert.ok(await node.getByRole('button', { name: 'Approve', exact: true }).isDisabled());
    assert.ok(await node.getByRole('button', { name: 'Deny', exact: true }).isDisabled());
    assert.equal(await node.locator('.hint').textContent(), 'Sign in to approve or deny.');
    assert.equal((await request('GET', `${app.url}/api/_a2app/grants/${asked.body.id}`)).body.status, 'pending');
  });
});

/** Turns the temp copy of the kanban example into a multi-user app. */
function multiUser(dir) {
  const file = path.join(dir, 'app.toml');
  const toml = fs.readFileSync(file, 'utf8');
  assert.ok(toml.includes('auth_mode = "single-user"'), 'the example is single-user');
  fs.writeFileSync(file, toml.replace('auth_mode = "single-user"', 'auth_mode = "multi-user"'));
}
