// An MCP host signing in to an app over OAuth 2.1, end to end: the official MCP
// TypeScript client (v2) meets `/mcp` with `[mcp] sign_in = true`, gets the
// 401 challenge, discovers the metadata, registers itself and sends a person's
// browser (headless Chromium) to the authorization endpoint, which opens the
// /_/ dashboard at the grant it created. The person approves (or denies) there
// and the browser returns to the host's loopback redirect URI, served here by a
// tiny node `http` server; the client trades the code for a token and works
// with the app's tools until the person revokes the grant on the dashboard.
//
// The documents and the challenge are also read with plain fetch, so their
// exact form is pinned independently of how the SDK reads them.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';
import { launchBrowser, request, screenshotPath, startApp } from './lib.mjs';
import { startReturnServer, watchReturning } from './oauth_lib.mjs';

const APP_PORT = 18497;
const RETURN_PORT = 18495;
const BASE = `http://127.0.0.1:${APP_PORT}`;
const RETURN_HOST = `127.0.0.1:${RETURN_PORT}`;
const REDIRECT_URI = `http://${RETURN_HOST}/callback`;
/** Every scope the kanban example has, in the order a grant keeps them: reads, writes, operations, each by name. */
const SCOPES = [
  'data:cards:read', 'data:lists:read', 'data:members:read', 'data:cards:write', 'data:lists:write',
  'data:members:write', 'op:cards_in_list', 'op:clear_done', 'op:complete_card', 'op:export_board', 'op:move_card',
];
/** The tools a grant holding every scope is offered: the compact surface and the operation runners, no `show`. */
const TOOLS = ['describe', 'query', 'get', 'create', 'update', 'delete', 'run_operation', 'job_status', 'check_claims'];
const CHALLENGE = `Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp", scope="${SCOPES.join(' ')}"`;

/** Adds `sign_in = true` to the copy's `[mcp]` table, making the table when the example has none. */
function signIn(dir) {
  const file = path.join(dir, 'app.toml');
  const toml = fs.readFileSync(file, 'utf8');
  const table = /^\[mcp\][ \t]*$/m;
  fs.writeFileSync(file, table.test(toml)
    ? toml.replace(table, '[mcp]\nsign_in = true')
    : `${toml.trimEnd()}\n\n[mcp]\nsign_in = true\n`);
}


/**
 * The host's side of OAuth, kept in memory as one session: its registration,
 * the PKCE verifier, the discovery state and the tokens. It records where it
 * was told to send the person instead of going there itself; the test opens
 * that URL in the browser.
 */
class HostSession {
  constructor(name, state) {
    this.name = name;
    this.stateValue = state;
    this.client = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    this.discovery = undefined;
    this.authorizationUrl = null;
    this.invalidated = [];
  }

  get redirectUrl() { return REDIRECT_URI; }

  get clientMetadata() {
    return {
      client_name: this.name,
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state() { return this.stateValue; }
  clientInformation() { return this.client; }
  saveClientInformation(info) { this.client = info; }
  tokens() { return this.saved; }
  saveTokens(tokens) { this.saved = tokens; }
  redirectToAuthorization(url) { this.authorizationUrl = url; }
  saveCodeVerifier(verifier) { this.verifier = verifier; }
  codeVerifier() { return this.verifier; }
  saveDiscoveryState(state) { this.discovery = state; }
  discoveryState() { return this.discovery; }
  invalidateCredentials(scope) {
    this.invalidated.push(scope);
    if (scope === 'all' || scope === 'tokens') this.saved = undefined;
    if (scope === 'all' || scope === 'client') this.client = undefined;
    if (scope === 'all' || scope === 'verifier') this.verifier = undefined;
    if (scope === 'all' || scope === 'discovery') this.discovery = undefined;
  }
}

/** A fetch for the SDK that logs every request it makes as `METHOD /path STATUS`. */
function loggingFetch(log) {
  return async (input, init) => {
    const res = await fetch(input, init);
    const url = new URL(input instanceof Request ? input.url : String(input));
    log.push(`${init?.method || (input instanceof Request ? input.method : 'GET')} ${url.pathname} ${res.status}`);
    return res;
  };
}


const transportFor = (session, log) => new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), {
  authProvider: session,
  fetch: loggingFetch(log),
});

describe('an MCP host signs in over OAuth', { timeout: 240000 }, () => {
  let app;
  let back;
  let context;
  const pageErrors = [];
  const consoleErrors = [];

  /** A fresh dashboard tab; its script errors are collected. */
  const newPage = async () => {
    const page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(`${page.url()}: ${e.message}`));
    page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(`${page.url()}: ${m.text()}`); });
    return page;
  };
  /** The grants as the dashboard reads them (a same-origin request from the page). */
  const grantsSeenBy = (page) => page.evaluate(async () => (await (await fetch('/_/grants.json')).json()).items);

  /**
   * The host connects, is refused, registers and asks where to send the
   * person; the browser goes there and lands on the dashboard at the new,
   * pending grant. Answers the grant as listed and the page.
   */
  const signInAsks = async (session) => {
    const log = [];
    const client = new Client({ name: 'a2app-e2e-oauth-host', version: '1.0.0' });
    const refused = await client.connect(transportFor(session, log)).then(() => null, (e) => e);
    assert.ok(UnauthorizedError.isInstance(refused), `connect is refused for want of a sign-in: ${refused}`);
    assert.deepEqual(log, [
      'POST /mcp 401',
      'GET /.well-known/oauth-protected-resource/mcp 200',
      'GET /.well-known/oauth-authorization-server 200',
      'POST /oauth/register 201',
    ]);
    assert.match(session.client.client_id, /^client_[0-9a-z]{15}$/);

    const asked = session.authorizationUrl;
    assert.equal(`${asked.origin}${asked.pathname}`, `${BASE}/oauth/authorize`);
    const q = Object.fromEntries(asked.searchParams);
    assert.equal(q.response_type, 'code');
    assert.equal(q.client_id, session.client.client_id);
    assert.equal(q.redirect_uri, REDIRECT_URI);
    assert.equal(q.code_challenge_method, 'S256');
    assert.equal(q.code_challenge, crypto.createHash('sha256').update(session.verifier).digest('base64url'));
    assert.equal(q.state, session.stateValue);
    assert.equal(q.resource, `${BASE}/mcp`);
    assert.equal(q.scope, SCOPES.join(' '));

    const page = await newPage();
    await page.goto(asked.href);
    await page.locator('body[data-ready="true"]').waitFor();
    const landed = /^http:\/\/127\.0\.0\.1:18497\/_\/#grant=([A-Za-z0-9_-]+)$/.exec(page.url());
    assert.ok(landed, `the browser is on the dashboard at a grant: ${page.url()}`);
    const id = landed[1];
    const grant = (await grantsSeenBy(page)).find((g) => g.id === id);
    assert.ok(grant, `grant ${id} is listed`);
    return { page, grant };
  };

  before(async () => {
    app = await startApp({ port: APP_PORT, configure: signIn });
    back = await startReturnServer(RETURN_PORT);
    context = await launchBrowser();
  });

  after(async () => {
    await context?.close().catch(() => {});
    await back?.stop();
    await app?.stop();
  });

  test('the copy has the example\'s tables and sign_in = true in [mcp]', () => {
    const toml = fs.readFileSync(path.join(app.dir, 'app.toml'), 'utf8');
    assert.equal(toml.match(/^\[mcp\]$/gm).length, 1);
    assert.ok(toml.endsWith('\n[mcp]\nsign_in = true\n'));
  });

  test('the metadata documents name the resource, the issuer and the endpoints exactly', async () => {
    const resource = {
      resource: `${BASE}/mcp`,
      authorization_servers: [BASE],
      scopes_supported: SCOPES,
      bearer_methods_supported: ['header'],
      resource_name: 'Kanban Board',
    };
    for (const where of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const res = await request('GET', `${BASE}${where}`);
      assert.equal(res.status, 200, where);
      assert.deepEqual(res.body, resource, where);
    }
    const res = await request('GET', `${BASE}/.well-known/oauth-authorization-server`);
    assert.equal(res.status, 200);
    const meta = res.body;
    assert.equal(meta.issuer, BASE);
    assert.equal(meta.authorization_endpoint, `${BASE}/oauth/authorize`);
    assert.equal(meta.token_endpoint, `${BASE}/oauth/token`);
    assert.equal(meta.registration_endpoint, `${BASE}/oauth/register`);
    assert.deepEqual(meta.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(meta.response_types_supported, ['code']);
    assert.deepEqual(meta.grant_types_supported, ['authorization_code', 'refresh_token']);
    assert.deepEqual(meta.token_endpoint_auth_methods_supported, ['none']);
    assert.equal(meta.authorization_response_iss_parameter_supported, true);
  });

  test('/mcp without a credential answers 401 with the challenge that points at the metadata', async () => {
    const res = await fetch(`${BASE}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      signal: AbortSignal.timeout(10000),
    });
    await res.text();
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), CHALLENGE);
    // The app's own agent token still works, as before.
    const own = await fetch(`${BASE}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${app.token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'probe', version: '1' } } }),
      signal: AbortSignal.timeout(10000),
    });
    await own.text();
    assert.equal(own.status, 200);
  });

  test('approve: the host signs in, works with the tools, and a revoke ends it at once', async () => {
    const name = 'Kanban helper (e2e)';
    const session = new HostSession(name, `st-${crypto.randomBytes(12).toString('hex')}`);
    const { page, grant } = await signInAsks(session);
    const clientId = session.client.client_id;

    // The grant, as the dashboard reads it: the app that signs in, no key.
    assert.equal(grant.status, 'pending');
    assert.equal(grant.publicKey, '');
    // The fingerprint is the client id's, as a key's is the key's: the first 8 bytes of its SHA-256.
    assert.equal(grant.fingerprint, crypto.createHash('sha256').update(clientId).digest('hex').slice(0, 16));
    assert.equal(grant.agent, name);
    assert.deepEqual(grant.client, { id: clientId, name, redirectUri: REDIRECT_URI });
    assert.deepEqual(grant.scopes, SCOPES, 'a grant keeps its scopes in the metadata\'s order');

    // The consent screen says who signs in and where the person goes back to.
    const node = page.locator(`#grants-pending .grant[data-grant="${grant.id}"]`);
    assert.equal(await node.getAttribute('data-kind'), 'sign-in');
    assert.equal(await node.getAttribute('data-linked'), 'true');
    assert.equal(await node.locator('.grant-head').textContent(), `${name} asks to sign in`);
    assert.equal(await node.locator('.sign-in-note').textContent(),
      `You are signing in to this app from ${name}. After you decide, you return to ${RETURN_HOST}.`);
    assert.equal(await node.locator('.grant-facts .client-name').textContent(), name);
    assert.equal(await node.locator('.client-id').textContent(), clientId);
    assert.equal(await node.locator('.grant-facts .return-host').textContent(), RETURN_HOST);
    assert.equal(await node.locator('.fingerprint').textContent(), grant.fingerprint);
    assert.deepEqual(await node.locator('.grant-facts dt').allTextContents(),
      ['App', 'Client id', 'Returns to', 'Fingerprint', 'Asked', 'From', 'Unanswered, it expires']);
    assert.equal(await node.locator('input[type="checkbox"]:checked').count(), SCOPES.length);
    await page.screenshot({ path: screenshotPath('oauth-consent.png'), fullPage: true });

    // Approve: the page says where it goes, and the browser returns to the host with a code.
    const shown = await watchReturning(page);
    const returned = back.next();
    // Not awaited: the click waits for the navigation, which the host holds.
    const clicked = node.getByRole('button', { name: 'Approve', exact: true }).click();
    // The host holds its answer: the page being left has said where it goes.
    const { url: at, release } = await returned;
    assert.deepEqual(await shown(), [`Returning to ${RETURN_HOST}…`]);
    release();
    await clicked;
    await page.waitForURL(`${REDIRECT_URI}?**`);
    assert.equal(await page.locator('#back').textContent(), 'Back in the host. You can close this tab.');
    assert.deepEqual([...at.searchParams.keys()].sort(), ['code', 'iss', 'state']);
    assert.equal(at.searchParams.get('state'), session.stateValue);
    assert.equal(at.searchParams.get('iss'), BASE);
    const code = at.searchParams.get('code');
    assert.match(code, /^a2c_[A-Za-z0-9]{40}$/);

    // The host trades the code (PKCE) for tokens and connects again.
    const log = [];
    const first = transportFor(session, log);
    await first.finishAuth(at.searchParams);
    assert.deepEqual(log, ['POST /oauth/token 200']);
    const tokens = session.tokens();
    assert.match(tokens.access_token, /^a2g_[A-Za-z0-9]{40}$/);
    assert.match(tokens.refresh_token, /^a2r_[A-Za-z0-9]{40}$/);
    // `scope`: the grant's scopes, in the same order as everywhere.
    assert.deepEqual({ ...tokens, access_token: 'a2g_…', refresh_token: 'a2r_…' }, {
      access_token: 'a2g_…', token_type: 'Bearer', expires_in: 3600, refresh_token: 'a2r_…',
      scope: SCOPES.join(' '), issuer: BASE,
    });

    const client = new Client({ name: 'a2app-e2e-oauth-host', version: '1.0.0' });
    const calls = [];
    await client.connect(transportFor(session, calls));
    assert.ok(calls.every((c) => c.startsWith('POST /mcp 2') || c.startsWith('GET /mcp ') || c.startsWith('DELETE /mcp ')), calls.join('\n'));

    // Its grant is active on the dashboard and shows the app.
    const dash = await newPage();
    await dash.goto(`${BASE}/_/#grant=${grant.id}`);
    await dash.locator('body[data-ready="true"]').waitFor();
    const active = dash.locator(`#grants-active .grant[data-grant="${grant.id}"]`);
    assert.equal(await active.getAttribute('data-kind'), 'sign-in');
    assert.equal(await active.locator('.grant-agent').textContent(), name);
    assert.equal(await active.locator('.client-id').textContent(), clientId);
    assert.equal(await active.locator('.return-host').textContent(), RETURN_HOST);
    assert.equal(await active.locator('.acts-for').textContent(), 'the app\'s owner (you)');

    // The tools a grant with every scope is offered, and a read and a write through them.
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), TOOLS);
    // A read: a list the owner made over HTTP, exactly as stored.
    const seeded = await request('POST', `${BASE}/api/collections/lists/records`, { headers: { 'X-LUI-Token': app.token }, json: { name: 'Signed in', position: 3 } });
    assert.equal(seeded.status, 200, JSON.stringify(seeded.body));
    const listId = seeded.body.id;
    const lists = await client.callTool({ name: 'query', arguments: { entity: 'lists', fields: 'id,name,position,color' } });
    assert.notEqual(lists.isError, true, JSON.stringify(lists));
    assert.equal(lists.structuredContent.totalItems, 1);
    assert.deepEqual(lists.structuredContent.items, [{ id: listId, name: 'Signed in', position: 3, color: 'gray' }]);
    // A write: a card in that list, then read back through the tools.
    const made = await client.callTool({ name: 'create', arguments: { entity: 'cards', record: { title: 'Written over OAuth', list: listId, priority: 'high', labels: ['docs'], points: 3 } } });
    assert.notEqual(made.isError, true, JSON.stringify(made));
    const cardId = made.structuredContent.id;
    assert.equal(made.structuredContent._receipt.text, 'Added "Written over OAuth" to Signed in');
    const read = await client.callTool({ name: 'query', arguments: { entity: 'cards', filter: `list = "${listId}"`, fields: 'id,title,list,priority,labels,points,done' } });
    assert.notEqual(read.isError, true, JSON.stringify(read));
    assert.equal(read.structuredContent.totalItems, 1);
    assert.deepEqual(read.structuredContent.items, [{ id: cardId, title: 'Written over OAuth', list: listId, priority: 'high', labels: ['docs'], points: 3, done: false }]);
    // Stored as written, read back over HTTP with the app's own token.
    const stored = await request('GET', `${BASE}/api/collections/cards/records/${cardId}?fields=title,list,priority,labels,points,done,description`, { headers: { 'X-LUI-Token': app.token } });
    assert.equal(stored.status, 200, JSON.stringify(stored.body));
    assert.deepEqual(stored.body, { title: 'Written over OAuth', list: listId, priority: 'high', labels: ['docs'], points: 3, done: false, description: '' });

    // Revoke on the dashboard: the access token is refused at once, the refresh token too,
    // and the host is back to needing a sign-in.
    await active.getByRole('button', { name: 'Revoke', exact: true }).click();
    await dash.locator(`#grants-closed-list .grant[data-grant="${grant.id}"][data-status="revoked"]`).waitFor({ state: 'attached' });
    assert.equal(await dash.locator(`#grants-closed-list .grant[data-grant="${grant.id}"] .client-id`).textContent(), clientId);
    const revoked = await fetch(`${BASE}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${tokens.access_token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      signal: AbortSignal.timeout(10000),
    });
    await revoked.text();
    assert.equal(revoked.status, 401);
    assert.equal(revoked.headers.get('www-authenticate'), `${CHALLENGE}, error="invalid_token"`);
    calls.length = 0;
    const after = await client.listTools().then(() => null, (e) => e);
    assert.ok(UnauthorizedError.isInstance(after), `the next call needs a sign-in again: ${after}`);
    // The SDK tries the refresh token once, is refused, drops its tokens and wants a new sign-in.
    assert.deepEqual(calls, ['POST /mcp 401', 'POST /oauth/token 400']);
    assert.deepEqual(session.invalidated, ['tokens']);
    assert.equal(session.tokens(), undefined);
    const refresh = await fetch(`${BASE}/oauth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId }),
      signal: AbortSignal.timeout(10000),
    });
    assert.equal(refresh.status, 400);
    assert.equal((await refresh.json()).error, 'invalid_grant');
    // A code is good once (presented again while its grant lived, it would have ended the grant).
    const replay = await fetch(`${BASE}/oauth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: session.verifier, client_id: clientId, redirect_uri: REDIRECT_URI, resource: `${BASE}/mcp` }),
      signal: AbortSignal.timeout(10000),
    });
    assert.equal(replay.status, 400);
    assert.equal((await replay.json()).error, 'invalid_grant');
    await client.close().catch(() => {});
  });

  test('deny: the browser returns to the host with access_denied and the same state, and the name stays text', async () => {
    const name = 'Evil <img src=x onerror="window.__pwned=1"> & <b>bold</b> host';
    const session = new HostSession(name, `st-${crypto.randomBytes(12).toString('hex')}`);
    const { page, grant } = await signInAsks(session);
    assert.equal(grant.agent, name);
    assert.deepEqual(grant.client, { id: session.client.client_id, name, redirectUri: REDIRECT_URI });
    const node = page.locator(`#grants-pending .grant[data-grant="${grant.id}"]`);
    assert.equal(await node.locator('.grant-agent').textContent(), name);
    assert.equal(await node.locator('.sign-in-note').textContent(),
      `You are signing in to this app from ${name}. After you decide, you return to ${RETURN_HOST}.`);
    assert.equal(await page.locator('#grants img, #grants b').count(), 0);

    const shown = await watchReturning(page);
    const returned = back.next();
    // Not awaited: the click waits for the navigation, which the host holds.
    const clicked = node.getByRole('button', { name: 'Deny', exact: true }).click();
    // The host holds its answer: the page being left has said where it goes.
    const { url: at, release } = await returned;
    assert.deepEqual(await shown(), [`Returning to ${RETURN_HOST}…`]);
    release();
    await clicked;
    await page.waitForURL(`${REDIRECT_URI}?**`);
    assert.deepEqual(Object.fromEntries(at.searchParams),
      { error: 'access_denied', error_description: 'the person denied access', state: session.stateValue, iss: BASE });
    assert.equal(session.tokens(), undefined);

    const dash = await newPage();
    await dash.goto(`${BASE}/_/`);
    await dash.locator('body[data-ready="true"]').waitFor();
    assert.equal((await grantsSeenBy(dash)).find((g) => g.id === grant.id).status, 'denied');
    assert.equal(await dash.locator(`#grants-closed-list .grant[data-grant="${grant.id}"]`).getAttribute('data-status'), 'denied');
    assert.equal(await dash.evaluate(() => window.__pwned), undefined);
  });

  test('the pages raised no script error', () => {
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(consoleErrors, []);
  });
});
