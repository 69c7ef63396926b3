// An MCP host signing in over OAuth 2.1 to a MULTI-user app: there only a
// signed-in user may decide, and the grant then acts for that user. The host's
// side is plain fetch here (registration, PKCE S256, the authorization URL,
// the code's trade), so every parameter is the test's own; the person's side
// is headless Chromium on the /_/ consent screen, which signs the user in (a
// wrong password first), and approves with a scope unticked, or denies. The
// browser returns to the host's loopback redirect URI, a tiny node `http`
// server, and the token it buys works at `/mcp` within the narrowed scopes.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { launchBrowser, request, screenshotPath, startApp } from './lib.mjs';
import { startReturnServer, watchReturning } from './oauth_lib.mjs';

const APP_PORT = 18493;
const RETURN_PORT = 18489;
const BASE = `http://127.0.0.1:${APP_PORT}`;
const RETURN_HOST = `127.0.0.1:${RETURN_PORT}`;
const REDIRECT_URI = `http://${RETURN_HOST}/callback`;
const MODERN = '2026-07-28';
const EMAIL = 'ann@example.com';
const PASSWORD = 'correct horse battery';
/** What the host asks for, in the order a grant keeps scopes: reads, writes, operations. */
const ASKED = ['data:cards:read', 'data:lists:read', 'data:cards:write', 'op:move_card'];
/** What the person leaves ticked. */
const NARROWED = ['data:cards:read', 'data:lists:read', 'op:move_card'];
/** The tools a grant holding NARROWED is offered: reads and the operation runners, no write tool. */
const TOOLS = ['describe', 'query', 'get', 'run_operation', 'job_status', 'check_claims'];

/** Makes the temp copy of the kanban example multi-user, with `[mcp] sign_in = true`. */
function multiUserSignIn(dir) {
  const file = path.join(dir, 'app.toml');
  const toml = fs.readFileSync(file, 'utf8');
  assert.ok(toml.includes('auth_mode = "single-user"'), 'the example is single-user');
  assert.ok(!/^\[mcp\]/m.test(toml), 'the example has no [mcp] table');
  fs.writeFileSync(file, `${toml.replace('auth_mode = "single-user"', 'auth_mode = "multi-user"').trimEnd()}\n\n[mcp]\nsign_in = true\n`);
}


/**
 * The host's first steps, by hand: register a public client, make a PKCE
 * verifier and a state, and build the authorization URL. Answers what the
 * host keeps for the return.
 */
async function hostAsks(name) {
  const registered = await request('POST', `${BASE}/oauth/register`, {
    json: {
      client_name: name,
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
  });
  assert.equal(registered.status, 201, JSON.stringify(registered.body));
  const clientId = registered.body.client_id;
  assert.match(clientId, /^client_[0-9a-z]{15}$/);
  const verifier = crypto.randomBytes(32).toString('base64url');
  const state = `st-${crypto.randomBytes(12).toString('hex')}`;
  const url = new URL(`${BASE}/oauth/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    code_challenge: crypto.createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state,
    resource: `${BASE}/mcp`,
    scope: ASKED.join(' '),
  }).toString();
  return { clientId, verifier, state, url: url.href };
}

/** A modern MCP request as the other tests send it: the era in the headers and in `_meta`. */
async function mcp(method, bearer, params = {}) {
  const res = await fetch(`${BASE}/mcp`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN,
      'mcp-method': method,
      ...(params.name ? { 'mcp-name': params.name } : {}),
      Authorization: `Bearer ${bearer}`,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method,
      params: { ...params, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} } },
    }),
    signal: AbortSignal.timeout(10000),
  });
  const text = await res.text();
  // A JSON answer, or one SSE event carrying it.
  const data = (res.headers.get('content-type') || '').startsWith('text/event-stream')
    ? text.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('')
    : text;
  let body = null;
  try { body = data ? JSON.parse(data) : null; } catch { body = text; }
  return { status: res.status, body };
}


describe('an MCP host signs in over OAuth to a multi-user app', { timeout: 240000 }, () => {
  let app;
  let back;
  let context;
  let userId;
  const pageErrors = [];
  const consoleErrors = [];

  /** Every refused request of the pages, once each, as `STATUS METHOD path`. */
  const refused = new Set();

  /**
   * A fresh tab; its script errors are collected. A refused request is logged
   * by Chromium as a console error too: those are kept in `refused` instead,
   * and checked there.
   */
  const newPage = async () => {
    const page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(`${page.url()}: ${e.message}`));
    page.on('response', (r) => {
      if (r.status() >= 400) refused.add(`${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`);
    });
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource:')) consoleErrors.push(`${page.url()}: ${m.text()}`);
    });
    return page;
  };

  /** The browser opens the authorization URL and lands on the consent screen at the new grant. */
  const consentFor = async (asked) => {
    const page = await newPage();
    await page.goto(asked.url);
    await page.locator('body[data-ready="true"]').waitFor();
    const landed = /^http:\/\/127\.0\.0\.1:18493\/_\/#grant=([A-Za-z0-9_-]+)$/.exec(page.url());
    assert.ok(landed, `the browser is on the dashboard at a grant: ${page.url()}`);
    const id = landed[1];
    const node = page.locator(`#grants-pending .grant[data-grant="${id}"]`);
    await node.waitFor();
    return { page, id, node };
  };

  /** Signs in on the page's form; answers the token the page was given, as its request's answer carried it. */
  const signIn = async (page, password) => {
    await page.getByLabel('Email', { exact: true }).fill(EMAIL);
    await page.getByLabel('Password', { exact: true }).fill(password);
    const answered = page.waitForResponse((r) => r.url() === `${BASE}/api/collections/users/auth-with-password`);
    await page.locator('#sign-in').getByRole('button', { name: 'Sign in', exact: true }).click();
    const res = await answered;
    return { status: res.status(), body: await res.json() };
  };

  const grantAt = async (id) => {
    const res = await request('GET', `${BASE}/api/_a2app/grants/${id}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  };

  before(async () => {
    app = await startApp({ port: APP_PORT, configure: multiUserSignIn });
    back = await startReturnServer(RETURN_PORT);
    context = await launchBrowser();
    // The owner (the agent token) makes the user, as PocketBase's admin would.
    const made = await request('POST', `${BASE}/api/collections/users/records`, {
      headers: { 'X-LUI-Token': app.token },
      json: { email: EMAIL, password: PASSWORD, passwordConfirm: PASSWORD },
    });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    assert.equal(made.body.email, EMAIL);
    userId = made.body.id;
    assert.match(userId, /^[a-z0-9]{15}$/);
  });

  after(async () => {
    await context?.close().catch(() => {});
    await back?.stop();
    await app?.stop();
  });

  test('the copy is multi-user with sign_in = true in [mcp]', () => {
    const toml = fs.readFileSync(path.join(app.dir, 'app.toml'), 'utf8');
    assert.ok(toml.includes('\nauth_mode = "multi-user"\n'));
    assert.ok(toml.endsWith('\n\n[mcp]\nsign_in = true\n'));
  });

  test('approve: the user signs in on the consent screen, narrows the scopes, and the grant acts for them', async () => {
    const name = 'Kanban helper (multi-user e2e)';
    const asked = await hostAsks(name);
    const { page, id, node } = await consentFor(asked);

    // The consent: who signs in, its client id, where the person returns, the fingerprint, the scopes.
    assert.equal(await node.getAttribute('data-kind'), 'sign-in');
    assert.equal(await node.getAttribute('data-linked'), 'true');
    assert.equal(await node.locator('.grant-head').textContent(), `${name} asks to sign in`);
    assert.equal(await node.locator('.sign-in-note').textContent(),
      `You are signing in to this app from ${name}. After you decide, you return to ${RETURN_HOST}.`);
    assert.deepEqual(await node.locator('.grant-facts dt').allTextContents(),
      ['App', 'Client id', 'Returns to', 'Fingerprint', 'Asked', 'From', 'Unanswered, it expires']);
    assert.equal(await node.locator('.grant-facts .client-name').textContent(), name);
    assert.equal(await node.locator('.client-id').textContent(), asked.clientId);
    assert.equal(await node.locator('.grant-facts .return-host').textContent(), RETURN_HOST);
    assert.equal(await node.locator('.fingerprint').textContent(),
      crypto.createHash('sha256').update(asked.clientId).digest('hex').slice(0, 16));
    assert.deepEqual(await node.locator('.scope').evaluateAll((items) => items.map((li) => [li.dataset.scope, li.querySelector('input').checked])),
      ASKED.map((s) => [s, true]));

    // Nobody is signed in yet: the form shows, the decisions wait for it, today's note does not show.
    const approve = node.getByRole('button', { name: 'Approve', exact: true });
    const deny = node.getByRole('button', { name: 'Deny', exact: true });
    assert.ok(await page.locator('#sign-in').isVisible());
    assert.ok(await page.getByLabel('Email', { exact: true }).isVisible());
    assert.ok(await page.getByLabel('Password', { exact: true }).isVisible());
    assert.ok(await page.locator('#signed-in').isHidden());
    assert.ok(await page.locator('#grants-multi-user').isHidden());
    assert.ok(await approve.isDisabled());
    assert.ok(await deny.isDisabled());
    assert.equal(await node.locator('.hint').textContent(), 'Sign in to approve or deny.');
    // The grant is pending and acts for nobody yet.
    const pending = await grantAt(id);
    assert.equal(pending.status, 'pending');
    assert.equal(pending.actsFor, '');
    assert.deepEqual(pending.client, { id: asked.clientId, name, redirectUri: REDIRECT_URI });
    assert.deepEqual(pending.scopes, ASKED);
    await page.screenshot({ path: screenshotPath('oauth-multiuser-consent.png'), fullPage: true });

    // A wrong password is refused with its code; nothing is enabled and the password field is emptied.
    const wrong = await signIn(page, 'not the password');
    assert.equal(wrong.status, 400);
    const error = page.locator('#sign-in-error');
    await error.waitFor();
    assert.equal(await error.textContent(), 'Could not sign in: Failed to authenticate: wrong identity or password. (auth_failed)');
    assert.equal(await page.getByLabel('Password', { exact: true }).inputValue(), '');
    assert.ok(await page.locator('#signed-in').isHidden());
    assert.ok(await approve.isDisabled());
    assert.ok(await deny.isDisabled());

    // The right one: the page says who is signed in, and the decisions open.
    const right = await signIn(page, PASSWORD);
    assert.equal(right.status, 200);
    assert.equal(right.body.record.id, userId);
    await page.locator('#signed-in').waitFor();
    assert.equal(await page.locator('#signed-in-as').textContent(), `Signed in as ${EMAIL}`);
    assert.ok(await page.locator('#sign-in').isHidden());
    assert.ok(await error.isHidden());
    assert.ok(await approve.isEnabled());
    assert.ok(await deny.isEnabled());
    assert.equal(await node.locator('.hint').textContent(), '');
    // The token is kept in the page's memory only.
    assert.deepEqual(await page.evaluate(() => [localStorage.length, sessionStorage.length, document.cookie]), [0, 0, '']);
    assert.deepEqual(await context.cookies(), []);

    // Untick the write scope and approve: the request carries the user's token and the ticked scopes.
    await node.locator('.scope[data-scope="data:cards:write"] input').uncheck();
    const shown = await watchReturning(page);
    const returned = back.next();
    const sent = page.waitForRequest((r) => r.url() === `${BASE}/api/_a2app/grants/${id}/approve`);
    // Not awaited: the click waits for the navigation, which the host holds.
    const clicked = approve.click();
    const approval = await sent;
    assert.equal(approval.method(), 'POST');
    assert.equal(approval.headers().authorization, right.body.token);
    assert.deepEqual(approval.postDataJSON(), { scopes: NARROWED });

    // The browser returns to the host with a code, the same state and the issuer.
    // The host holds its answer: the page being left has said where it goes.
    const { url: at, release } = await returned;
    assert.deepEqual(await shown(), [`Returning to ${RETURN_HOST}…`]);
    release();
    await clicked;
    await page.waitForURL(`${REDIRECT_URI}?**`);
    assert.equal(await page.locator('#back').textContent(), 'Back in the host. You can close this tab.');
    assert.deepEqual([...at.searchParams.keys()].sort(), ['code', 'iss', 'state']);
    assert.equal(at.searchParams.get('state'), asked.state);
    assert.equal(at.searchParams.get('iss'), BASE);
    const code = at.searchParams.get('code');
    assert.match(code, /^a2c_[A-Za-z0-9]{40}$/);

    // The host trades the code and its verifier for tokens holding exactly the ticked scopes.
    const traded = await fetch(`${BASE}/oauth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code', code, code_verifier: asked.verifier, client_id: asked.clientId,
        redirect_uri: REDIRECT_URI, resource: `${BASE}/mcp`,
      }),
      signal: AbortSignal.timeout(10000),
    });
    assert.equal(traded.status, 200);
    const tokens = await traded.json();
    assert.match(tokens.access_token, /^a2g_[A-Za-z0-9]{40}$/);
    assert.match(tokens.refresh_token, /^a2r_[A-Za-z0-9]{40}$/);
    assert.deepEqual({ ...tokens, access_token: 'a2g_…', refresh_token: 'a2r_…' }, {
      access_token: 'a2g_…', token_type: 'Bearer', expires_in: 3600, refresh_token: 'a2r_…',
      scope: NARROWED.join(' '),
    });

    // The grant is active, acts for the user who approved it, and holds the ticked scopes.
    const active = await grantAt(id);
    assert.equal(active.status, 'active');
    assert.equal(active.actsFor, `user:${userId}`);
    assert.deepEqual(active.scopes, NARROWED);
    assert.deepEqual(active.client, { id: asked.clientId, name, redirectUri: REDIRECT_URI });

    // At /mcp the token is offered the tools of its scopes, no write tool among them.
    const listed = await mcp('tools/list', tokens.access_token);
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.deepEqual(listed.body.result.tools.map((t) => t.name), TOOLS);
    // A call is the user's, not the owner's: the example's lists have no rule for users (locked),
    // so the grant is refused what its user is refused, though `data:lists:read` is among its scopes.
    const read = await mcp('tools/call', tokens.access_token, { name: 'query', arguments: { entity: 'lists' } });
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.equal(read.body.result.isError, true);
    assert.deepEqual(read.body.result.structuredContent, {
      a2app: true, ok: false, code: 'forbidden', status: 403,
      message: 'only the app\'s owner may read lists: its rule is locked', violations: [], data: {},
    });
    const owner = await request('GET', `${BASE}/api/collections/lists/records`, { headers: { 'X-LUI-Token': app.token } });
    assert.equal(owner.status, 200, JSON.stringify(owner.body));
  });

  test('deny: the browser returns to the host with access_denied and the same state', async () => {
    const asked = await hostAsks('Denied host (multi-user e2e)');
    const { page, id, node } = await consentFor(asked);
    const right = await signIn(page, PASSWORD);
    assert.equal(right.status, 200);
    assert.equal(await page.locator('#signed-in-as').textContent(), `Signed in as ${EMAIL}`);

    const shown = await watchReturning(page);
    const returned = back.next();
    const sent = page.waitForRequest((r) => r.url() === `${BASE}/api/_a2app/grants/${id}/deny`);
    const clicked = node.getByRole('button', { name: 'Deny', exact: true }).click();
    assert.equal((await sent).headers().authorization, right.body.token);
    // The host holds its answer: the page being left has said where it goes.
    const { url: at, release } = await returned;
    assert.deepEqual(await shown(), [`Returning to ${RETURN_HOST}…`]);
    release();
    await clicked;
    await page.waitForURL(`${REDIRECT_URI}?**`);
    assert.deepEqual(Object.fromEntries(at.searchParams),
      { error: 'access_denied', error_description: 'the person denied access', state: asked.state, iss: BASE });

    const denied = await grantAt(id);
    assert.equal(denied.status, 'denied');
    assert.equal(denied.actsFor, '');
  });

  test('a grant swapped in by the link while signed in asks to sign in again', async () => {
    const first = await hostAsks('First host (multi-user e2e)');
    const { page } = await consentFor(first);
    assert.equal((await signIn(page, PASSWORD)).status, 200);
    assert.ok(await page.locator('#signed-in').isVisible());
    // Another sign-in's grant, as a page that opened this one would swap it in.
    const second = await hostAsks('Second host (multi-user e2e)');
    // Opened without a browser (fetch would say it is no navigation).
    const started = await new Promise((resolve, reject) => {
      http.get(second.url, (res) => { res.resume(); resolve(res); }).on('error', reject);
    });
    assert.equal(started.statusCode, 303);
    const other = /^\/_\/#grant=([a-z0-9]{15})$/.exec(started.headers.location)[1];
    await page.evaluate((id) => { window.location.hash = `#grant=${id}`; }, other);
    const node = page.locator(`#grants-pending .grant[data-grant="${other}"]`);
    await node.waitFor();
    assert.ok(await page.locator('#sign-in').isVisible());
    assert.ok(await page.locator('#signed-in').isHidden());
    assert.ok(await node.getByRole('button', { name: 'Approve', exact: true }).isDisabled());
  });

  test('without #grant= the page keeps saying that a signed-in user decides, with no form', async () => {
    const page = await newPage();
    await page.goto(`${BASE}/_/`);
    await page.locator('body[data-ready="true"]').waitFor();
    assert.ok(await page.locator('#grants-multi-user').isVisible());
    assert.ok(await page.locator('#grants-sign-in').isHidden());
    assert.equal(await page.locator('#grants .grant').count(), 0);
    assert.equal(await page.locator('#grants button:visible').count(), 0);
  });

  test('the pages raised no script error, and were refused only what a visitor who is no user may not read', () => {
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(consoleErrors, []);
    // The wrong password; and, as before this sign-in existed, the dashboard's reads of receipts
    // and record counts, which a multi-user app answers only to a user (the page sends them none).
    assert.deepEqual([...refused].sort(), [
      '400 POST /api/collections/users/auth-with-password',
      '401 GET /api/_a2app/receipts',
      '403 GET /api/collections/cards/records',
      '403 GET /api/collections/lists/records',
      '403 GET /api/collections/members/records',
    ]);
  });
});
