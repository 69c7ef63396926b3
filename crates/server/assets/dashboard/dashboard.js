// The a2app dashboard at /_/: identity, describe, the receipts of recent
// writes (live, through the realtime stream), how to connect an agent, and the
// consent screen for grants. Its only writes are a person's decisions on
// grants (approve, deny, revoke); it never sees the agent token. In a
// multi-user app it signs a user in to decide on the grant it was opened at,
// and keeps that user's token in this page's memory only.
//
// Everything an app or an agent wrote (an agent's name above all) is put in the
// page as text, through `el` and `textContent`; never as markup.

const $ = (sel) => document.querySelector(sel);
const TIMEOUT_MS = 15000;
const KEEP = 200;

/** An answer's JSON body; a refusal throws with the envelope's message and code. */
async function answered(res) {
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const e = new Error(body?.message || `HTTP ${res.status}`);
    e.code = body?.code;
    throw e;
  }
  return body;
}

async function get(path) {
  return answered(await fetch(path, { headers: { Accept: 'application/json' }, signal: AbortSignal.timeout(TIMEOUT_MS) }));
}

/**
 * A person's decision: POST with an optional JSON body, and in a multi-user
 * app the signed-in user's token; a refusal throws with its code.
 */
async function post(path, json, token) {
  const init = { method: 'POST', headers: { Accept: 'application/json' }, signal: AbortSignal.timeout(TIMEOUT_MS) };
  if (json !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(json);
  }
  if (token) init.headers.Authorization = token;
  return answered(await fetch(path, init));
}

/** How a refusal reads on the page: its message, then its code. */
const refusal = (e) => `${e.message}${e.code ? ` (${e.code})` : ''}`;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

// ---------------------------------------------------------------- receipts

/** Newest last, deduplicated; `at` is the wire datetime. */
let receipts = [];
const seen = new Set();
const keyOf = (r) => `${r.at}|${r.action}|${r.entity}|${r.id}`;

/** The `since` for the next read: one millisecond before the newest receipt, so equal times are not lost. */
function nextSince() {
  const last = receipts[receipts.length - 1];
  if (!last) return '';
  const t = new Date(last.at.replace(' ', 'T')).getTime() - 1;
  return new Date(t).toISOString();
}

let reading = null;
let again = false;

/** Reads the receipts written since the newest one shown; one read at a time. */
function readReceipts() {
  if (reading) { again = true; return reading; }
  reading = (async () => {
    try {
      for (let i = 0; i < 50; i++) {
        const since = nextSince();
        const q = new URLSearchParams({ limit: '1000' });
        if (since) q.set('since', since);
        const { items } = await get(`/api/_a2app/receipts?${q}`);
        let added = 0;
        for (const r of items) {
          const k = keyOf(r);
          if (seen.has(k)) continue;
          seen.add(k);
          receipts.push(r);
          added++;
        }
        if (items.length < 1000 || added === 0) break;
      }
      if (receipts.length > KEEP) {
        for (const r of receipts.slice(0, receipts.length - KEEP)) seen.delete(keyOf(r));
        receipts = receipts.slice(-KEEP);
      }
      drawReceipts();
    } catch (e) {
      $('#activity-count').textContent = `could not read the receipts: ${e.message}`;
    } finally {
      reading = null;
      if (again) { again = false; readReceipts(); }
    }
  })();
  return reading;
}

function when(at) {
  const d = new Date(at.replace(' ', 'T'));
  if (Number.isNaN(d.getTime())) return at;
  const today = new Date().toDateString() === d.toDateString();
  return today
    ? d.toLocaleTimeString('en-GB')
    : `${d.toLocaleDateString('en-GB', { day: 'numeric', month: 'short' })} ${d.toLocaleTimeString('en-GB')}`;
}

function who(r) {
  if (r.caller === 'agent') {
    return el('span', { class: 'who who-agent', title: 'An agent, with the app\'s token' }, r.agent || 'agent (unnamed)');
  }
  if (r.caller === 'own_ui') {
    return el('span', { class: 'who who-person', title: 'A person, on the app\'s own page' }, r.agent ? `page (${r.agent})` : 'person · app page');
  }
  return el('span', { class: `who who-${r.caller}` }, r.agent || r.caller);
}

function drawReceipts() {
  const agentsOnly = $('#agents-only').checked;
  const shown = receipts.filter((r) => !agentsOnly || r.caller === 'agent').slice().reverse();
  $('#receipts').replaceChildren(...shown.map((r) => el('tr', { class: `receipt receipt-${r.caller}`, 'data-agent': r.agent || '' },
    el('td', { class: 'when', title: r.at }, when(r.at)),
    el('td', {}, who(r)),
    el('td', {}, el('span', { class: `action action-${r.action}` }, r.action), ' ', el('span', { class: 'entity' }, r.entity)),
    el('td', { class: 'text' }, r.text))));
  $('#receipts-empty').hidden = shown.length > 0;
  const agents = new Set(receipts.filter((r) => r.caller === 'agent').map((r) => r.agent || '(unnamed)'));
  $('#activity-count').textContent = `${receipts.length} write${receipts.length === 1 ? '' : 's'}` +
    (agents.size ? ` · agents: ${[...agents].join(', ')}` : '');
}

// ---------------------------------------------------------------- describe

function constraints(f) {
  const out = [];
  if (f.required) out.push('required');
  if (f.readOnly) out.push('read-only');
  if (f.entity) out.push(`→ ${f.entity}`);
  if (f.values) out.push(f.values.join(' | '));
  if (f.format) out.push(f.format);
  if (f.integer) out.push('integer');
  if (f.min !== undefined) out.push(`min ${f.min}`);
  if (f.max !== undefined) out.push(`max ${f.max}`);
  if (f.pattern) out.push(`/${f.pattern}/`);
  if (f.maxSize !== undefined) out.push(`≤ ${f.maxSize} bytes`);
  if (f.default !== undefined) out.push(`default ${JSON.stringify(f.default)}`);
  return out.join(', ');
}

async function countOf(name) {
  try {
    const page = await get(`/api/collections/${encodeURIComponent(name)}/records?perPage=1&fields=id`);
    return `${page.totalItems} record${page.totalItems === 1 ? '' : 's'}`;
  } catch {
    return '';
  }
}

let counting = null;
/** Recounts the records of every entity shown; at most one recount at a time. */
function refreshCounts() {
  counting ||= (async () => {
    await new Promise((r) => setTimeout(r, 250)); // one recount for a burst of changes
    counting = null;
    for (const span of document.querySelectorAll('[data-count]')) span.textContent = await countOf(span.dataset.count);
  })();
}

async function drawDescribe(doc) {
  const entities = Object.entries(doc.entities);
  $('#entities').replaceChildren(...entities.map(([name, e]) => el('article', { class: 'entity-card' },
    el('h3', {}, name, ' ', el('span', { class: 'muted small', 'data-count': name }), e.label ? el('span', { class: 'muted small' }, ` · label: ${e.label}`) : null),
    el('table', { class: 'fields' },
      el('tbody', {}, Object.entries(e.fields).map(([fname, f]) => el('tr', {},
        el('th', { scope: 'row' }, fname),
        el('td', { class: 'type' }, f.type),
        el('td', { class: 'muted' }, constraints(f)))))),
    el('p', { class: 'muted small' }, el('code', {}, e.records)))));
  await Promise.all([...document.querySelectorAll('[data-count]')].map(async (span) => {
    span.textContent = await countOf(span.dataset.count);
  }));
  const ops = doc.operations || [];
  $('#operations').replaceChildren(ops.length
    ? el('div', {}, el('h3', {}, 'Operations'), el('ul', { class: 'ops' }, ops.map((op) => el('li', {},
      el('code', {}, op.name), op.destructive ? el('span', { class: 'badge danger' }, 'destructive') : null, ' ', op.description))))
    : el('p', { class: 'muted small' }, 'No operations declared.'));
}

function drawIdentity(id) {
  const rows = [
    ['App id', id.app.id],
    ['Name', id.app.name],
    ['Protocol', id.protocol],
    ['Adapter', id.adapterVersion],
    ['PocketBase API', id.app.pbVersion],
    ['Schema version', id.schemaVersion],
    ['Server time', id.serverNow],
    ['Time zone offset', `${id.serverTzOffsetMinutes} min`],
  ];
  $('#identity').replaceChildren(...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, el('code', {}, v))]));
}

// ---------------------------------------------------------------- grants

const GRANTS_EVERY_MS = 4000;
/** describe, for putting scopes in words; set by start(). */
let described = { operations: [] };
/**
 * A multi-user app's grants are decided by a signed-in user: this page lists
 * none, and signs a user in only to decide on the grant it was opened at.
 */
let multiUser = false;
/** In a multi-user app, who is signed in on this page: `{token, record}`, kept in memory only, never stored. */
let signedIn = null;
/** In a multi-user app, the grant this page was opened at (`#grant=<id>`). */
let linkedGrant = null;
/** Pending and active grants drawn: id → {sig, node}. A node is kept while its grant is unchanged, so ticks survive a refresh. */
const grantNodes = new Map();
let closedSig = '';
/** The grant named by `#grant=<id>`, until it has been shown. */
let wantedGrant = null;

function grantFromHash() {
  const m = /^#grant=([A-Za-z0-9_-]{1,64})$/.exec(window.location.hash);
  return m ? m[1] : null;
}

/** A scope in words a person can consent to, from describe. */
function scopeWords(scope) {
  const data = /^data:(.+):(read|write)$/.exec(scope);
  if (data) {
    const [, entity, how] = data;
    return { text: how === 'read' ? `Read ${entity} (list, view, follow changes)` : `Create, change and delete ${entity} (and read them)`, destructive: false };
  }
  const op = /^op:(.+)$/.exec(scope);
  if (op) {
    const found = (described.operations || []).find((o) => o.name === op[1]);
    return {
      text: found?.description ? `Run the operation ${op[1]}: ${found.description}` : `Run the operation ${op[1]}`,
      destructive: Boolean(found?.destructive),
    };
  }
  return { text: scope, destructive: false };
}

/** A scope as shown: its words, a mark when destructive, and the scope itself. */
function scopeText(scope) {
  const w = scopeWords(scope);
  return el('span', { class: 'scope-text' },
    el('span', { class: 'scope-words' }, w.text),
    w.destructive ? el('span', { class: 'badge danger' }, 'destructive') : null,
    ' ',
    el('code', { class: 'scope-code' }, scope));
}

function actsForWords(actsFor) {
  if (actsFor === 'owner') return 'the app\'s owner (you)';
  if (signedIn && actsFor === `user:${signedIn.record.id}`) return `you (${signedIn.record.email || signedIn.record.id})`;
  if (actsFor.startsWith('user:')) return `user ${actsFor.slice(5)}`;
  return actsFor || 'nobody yet';
}

function expiresWords(at) {
  const t = new Date(at.replace(' ', 'T')).getTime();
  if (Number.isNaN(t)) return at;
  const minutes = Math.round((t - Date.now()) / 60000);
  const rel = minutes > 1 ? `in ${minutes} min` : minutes >= 0 ? 'in a minute' : 'now';
  return `${rel}, at ${when(at)}`;
}

/**
 * Where a person lands after deciding on an app's sign-in: the host of an
 * http(s) redirect URI, or the scheme of an app's own (private-use) one.
 */
function returnPlace(uri) {
  try {
    const url = new URL(uri);
    return url.host || url.protocol;
  } catch {
    return uri;
  }
}

/**
 * The URL a decision's answer sends the browser to, or null when this page
 * must not open it: only http:, https: and an app's private-use scheme, which
 * is a reverse domain name (RFC 8252 7.1) and so holds a dot; `javascript:`,
 * `data:` and their kind never do.
 */
function returnUrl(raw) {
  let url;
  try { url = new URL(raw); } catch { return null; }
  if (url.protocol === 'http:' || url.protocol === 'https:') return url;
  return /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/.test(url.protocol) ? url : null;
}

/** The name a grant goes by: an app signing in by its registered name, an agent by the name it sent. */
const grantName = (g) => (g.client ? g.client.name || g.agent || '(unnamed app)' : g.agent || '(unnamed agent)');

/**
 * A grant's facts. A key's grant starts with the key's fingerprint; an app's
 * sign-in (OAuth) with the app: its name, client id and where the person
 * returns, then the fingerprint derived from that client id.
 */
function facts(g, rows) {
  const who = g.client
    ? [
      el('dt', {}, 'App'), el('dd', {}, el('span', { class: 'client-name' }, grantName(g))),
      el('dt', {}, 'Client id'), el('dd', {}, el('code', { class: 'client-id' }, g.client.id)),
      el('dt', {}, 'Returns to'), el('dd', {}, el('code', { class: 'return-host' }, returnPlace(g.client.redirectUri))),
      el('dt', {}, 'Fingerprint'), el('dd', {}, el('code', { class: 'fingerprint' }, g.fingerprint)),
    ]
    : [el('dt', {}, 'Key fingerprint'), el('dd', {}, el('code', { class: 'fingerprint' }, g.fingerprint))];
  return el('dl', { class: 'grant-facts' }, who, rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
}

/** For an app's sign-in: what the person is deciding on, in words. */
function signInNote(g) {
  if (!g.client) return null;
  return el('p', { class: 'small sign-in-note' },
    'You are signing in to this app from ', el('strong', { class: 'client-name' }, grantName(g)),
    '. After you decide, you return to ', el('strong', { class: 'return-host' }, returnPlace(g.client.redirectUri)), '.');
}

/** Sends the browser back to the app that asked, after a decision whose answer names where. */
function returnTo(raw) {
  const status = $('#grants-returning');
  const url = returnUrl(raw);
  if (!url) {
    status.textContent = 'The app\'s return address is not one this page opens; close this tab and go back to the app.';
    status.hidden = false;
    return;
  }
  status.textContent = `Returning to ${returnPlace(url.href)}…`;
  status.hidden = false;
  window.location.assign(url.href);
}

/** Whether this page may decide now: always in a single-user app, once a user signed in in a multi-user one. */
const mayDecide = () => !multiUser || signedIn !== null;

/** Lets every pending grant shown set its buttons again (after a sign-in, a sign-out or a refusal). */
function refreshDecisions() {
  for (const node of document.querySelectorAll('#grants-pending .grant')) node.dispatchEvent(new Event('decisions'));
}

/** Runs a decision on grant `g` from `node`; a refusal is shown, and the grants are read again either way. */
async function decide(node, g, verb, body) {
  const buttons = node.querySelectorAll('button');
  for (const b of buttons) b.disabled = true;
  const error = $('#grants-error');
  let answer = null;
  try {
    answer = await post(`/api/_a2app/grants/${encodeURIComponent(g.id)}/${verb}`, body, signedIn?.token);
    error.hidden = true;
  } catch (e) {
    error.textContent = `Could not ${verb} the grant of ${grantName(g)}: ${refusal(e)}`;
    error.hidden = false;
    for (const b of buttons) b.disabled = false;
    // A user's token that no longer holds is forgotten, so the form asks again.
    if (multiUser && e.code === 'unauthorized') signOut();
    node.dispatchEvent(new Event('decisions'));
  }
  await (multiUser ? readLinkedGrant() : readGrants());
  // An app's sign-in goes on in the app: the answer says where (with the code, or the refusal).
  if (verb !== 'revoke' && typeof answer?.redirect === 'string') returnTo(answer.redirect);
}

function pendingGrant(g) {
  const list = el('ul', { class: 'scopes' }, g.scopes.map((scope) => el('li', { class: 'scope', 'data-scope': scope },
    el('label', {}, el('input', { type: 'checkbox', checked: true, value: scope }), scopeText(scope)))));
  const approve = el('button', { type: 'button', class: 'primary', 'data-action': 'approve' }, 'Approve');
  const deny = el('button', { type: 'button', class: 'danger', 'data-action': 'deny' }, 'Deny');
  const hint = el('span', { class: 'muted small hint' });
  const checked = () => [...list.querySelectorAll('input[type="checkbox"]')].filter((b) => b.checked).map((b) => b.value);
  const buttons = () => {
    const none = checked().length === 0;
    approve.disabled = none || !mayDecide();
    deny.disabled = !mayDecide();
    hint.textContent = !mayDecide() ? 'Sign in to approve or deny.' : none ? 'Tick at least one, or deny.' : '';
  };
  list.addEventListener('change', buttons);
  const node = el('article', { class: 'grant grant-pending', 'data-grant': g.id, 'data-status': g.status, 'data-kind': g.client ? 'sign-in' : 'key', tabindex: '-1' },
    el('h3', { class: 'grant-head' }, el('span', { class: 'grant-agent' }, grantName(g)), el('span', { class: 'muted small' }, g.client ? ' asks to sign in' : ' asks for access')),
    signInNote(g),
    facts(g, [['Asked', when(g.created)], ['From', el('code', { class: 'source' }, g.source || 'unknown')], ['Unanswered, it expires', el('span', { 'data-expires': g.expires }, expiresWords(g.expires))]]),
    el('fieldset', { class: 'scope-set' }, el('legend', {}, 'Allow it to:'), list),
    el('div', { class: 'grant-actions' }, approve, deny, hint));
  approve.addEventListener('click', () => decide(node, g, 'approve', { scopes: checked() }));
  deny.addEventListener('click', () => decide(node, g, 'deny'));
  node.addEventListener('decisions', buttons);
  buttons();
  return node;
}

function activeGrant(g) {
  const revoke = el('button', { type: 'button', class: 'danger', 'data-action': 'revoke' }, 'Revoke');
  const node = el('article', { class: 'grant grant-active', 'data-grant': g.id, 'data-status': g.status, 'data-kind': g.client ? 'sign-in' : 'key', tabindex: '-1' },
    el('h3', { class: 'grant-head' }, el('span', { class: 'grant-agent' }, grantName(g)), el('span', { class: 'badge ok' }, 'active'), g.client ? el('span', { class: 'badge client' }, 'signed in from an app') : null),
    facts(g, [['Acts for', el('span', { class: 'acts-for' }, actsForWords(g.actsFor))], ['Approved', when(g.updated)]]),
    el('ul', { class: 'scopes' }, g.scopes.map((scope) => el('li', { class: 'scope', 'data-scope': scope }, scopeText(scope)))),
    el('div', { class: 'grant-actions' }, revoke, el('span', { class: 'muted small' }, 'Its tokens stop working at once.')));
  revoke.addEventListener('click', () => decide(node, g, 'revoke'));
  return node;
}

function closedGrant(g) {
  return el('li', { class: 'grant grant-closed', 'data-grant': g.id, 'data-status': g.status, 'data-kind': g.client ? 'sign-in' : 'key', tabindex: '-1' },
    el('span', { class: 'grant-agent' }, grantName(g)), ' ',
    g.client ? el('code', { class: 'client-id' }, g.client.id) : null, g.client ? ' ' : null,
    el('span', { class: `badge status-${g.status}` }, g.status), ' ',
    el('code', { class: 'fingerprint' }, g.fingerprint), ' ',
    el('span', { class: 'muted small' }, `${when(g.updated)} · ${g.scopes.join(', ')}`));
}

/**
 * Offers to deny every waiting ask at once, or a source's, when more than one waits: a stranger's flood is
 * cleared in one step instead of a button per ask.
 */
function drawDenyAll(pending) {
  const box = $('#grants-deny-all');
  const bySource = new Map();
  for (const g of pending) bySource.set(g.source || '', (bySource.get(g.source || '') || 0) + 1);
  box.hidden = multiUser || pending.length < 2;
  if (box.hidden) return;
  const sig = JSON.stringify([...bySource]);
  if (box.dataset.sig === sig) return;
  box.dataset.sig = sig;
  const button = (label, body) => {
    const b = el('button', { type: 'button', class: 'danger' }, label);
    b.addEventListener('click', () => denyPending(box, body));
    return b;
  };
  const sources = [...bySource].filter(([source, n]) => source && n > 1).sort((a, b) => b[1] - a[1]);
  box.replaceChildren(
    button(`Deny all ${pending.length} waiting`, {}),
    ...sources.map(([source, n]) => button(`Deny the ${n} from ${source}`, { source })));
}

async function denyPending(box, body) {
  for (const b of box.querySelectorAll('button')) b.disabled = true;
  const error = $('#grants-error');
  try {
    await post('/api/_a2app/grants/deny-pending', body, signedIn?.token);
    error.hidden = true;
  } catch (e) {
    error.textContent = `Could not deny the waiting asks: ${refusal(e)}`;
    error.hidden = false;
  }
  delete box.dataset.sig;
  await readGrants();
}

/** Puts `nodes` in `parent` in order, touching the DOM only when something changed (a moved node loses focus). */
function place(parent, nodes) {
  const now = [...parent.children];
  if (now.length === nodes.length && now.every((n, i) => n === nodes[i])) return;
  parent.replaceChildren(...nodes);
}

function drawGrants(items) {
  const kept = new Map();
  const drawn = (g, make) => {
    const sig = JSON.stringify([g.status, g.updated, g.scopes, g.actsFor, g.agent]);
    const old = grantNodes.get(g.id);
    const node = old && old.sig === sig ? old.node : make(g);
    kept.set(g.id, { sig, node });
    return node;
  };
  const pending = items.filter((g) => g.status === 'pending');
  const active = items.filter((g) => g.status === 'active');
  const closed = items.filter((g) => g.status !== 'pending' && g.status !== 'active');
  place($('#grants-pending'), pending.map((g) => drawn(g, pendingGrant)));
  place($('#grants-active'), active.map((g) => drawn(g, activeGrant)));
  grantNodes.clear();
  for (const [id, v] of kept) grantNodes.set(id, v);

  const sig = JSON.stringify(closed.map((g) => [g.id, g.status, g.updated]));
  if (sig !== closedSig) {
    closedSig = sig;
    $('#grants-closed-list').replaceChildren(...closed.map(closedGrant));
    $('#grants-closed-title').textContent = `Closed: ${closed.length} denied, revoked or expired`;
  }
  $('#grants-closed').hidden = closed.length === 0;
  for (const span of document.querySelectorAll('[data-expires]')) span.textContent = expiresWords(span.dataset.expires);
  $('#grants-empty').hidden = pending.length > 0;
  drawDenyAll(pending);
  $('#grants-count').textContent = `${pending.length} waiting · ${active.length} active`;
  document.body.dataset.pendingGrants = String(pending.length);

  if (wantedGrant) {
    const node = grantNodes.get(wantedGrant)?.node
      || [...document.querySelectorAll('#grants-closed-list [data-grant]')].find((n) => n.dataset.grant === wantedGrant);
    if (node) {
      if (node.closest('details')) node.closest('details').open = true;
      for (const n of document.querySelectorAll('.grant[data-linked]')) delete n.dataset.linked;
      node.dataset.linked = 'true';
      node.scrollIntoView({ block: 'center' });
      node.focus({ preventScroll: true });
    } else {
      const error = $('#grants-error');
      error.textContent = `The grant in this link (${wantedGrant}) is not here: it may have been removed, or the link is wrong.`;
      error.hidden = false;
    }
    wantedGrant = null;
  }
}

let grantsReading = null;
let grantsAgain = false;

/** Reads the grants and draws them; one read at a time. */
function readGrants() {
  if (multiUser) return Promise.resolve();
  if (grantsReading) { grantsAgain = true; return grantsReading; }
  grantsReading = (async () => {
    try {
      const { items } = await get('/_/grants.json');
      drawGrants(items);
      await readApprovals();
      $('#grants-count').dataset.failed = '';
    } catch (e) {
      $('#grants-count').textContent = `could not read the grants: ${e.message}`;
      $('#grants-count').dataset.failed = 'true';
    } finally {
      grantsReading = null;
      if (grantsAgain) { grantsAgain = false; readGrants(); }
    }
  })();
  return grantsReading;
}

// ---------------------------------------------------------------- calls waiting for the person

/** Reads the destructive calls waiting for this person's yes (`destructive_consent = "person"`). */
async function readApprovals() {
  try {
    const { items } = await get('/_/approvals.json');
    drawApprovals(items);
  } catch (e) {
    $('#approvals-error').textContent = `could not read the calls waiting for you: ${refusal(e)}`;
    $('#approvals-error').hidden = false;
  }
}

function drawApprovals(items) {
  const box = $('#approvals');
  box.hidden = items.length === 0;
  const sig = JSON.stringify(items.map((a) => [a.key, a.status]));
  if (box.dataset.sig === sig) return;
  box.dataset.sig = sig;
  $('#approvals-list').replaceChildren(...items.map((a) => {
    const approve = el('button', { type: 'button', class: 'primary', 'data-action': 'approve' }, 'Let it run once');
    const deny = el('button', { type: 'button', class: 'danger', 'data-action': 'deny' }, 'Refuse');
    const node = el('article', { class: 'grant approval', 'data-approval': a.key, tabindex: '-1' },
      el('h3', { class: 'grant-head' }, el('span', { class: 'grant-agent' }, a.agent || 'An agent'),
        el('span', { class: 'muted small' }, ' wants to run '), el('code', {}, a.operation)),
      el('dl', { class: 'grant-facts' },
        el('dt', {}, 'With'), el('dd', {}, el('code', { class: 'params' }, JSON.stringify(a.params))),
        el('dt', {}, 'Asked'), el('dd', {}, when(a.created)),
        el('dt', {}, 'Unanswered, it expires'), el('dd', {}, expiresWords(a.expires))),
      el('div', { class: 'grant-actions' }, approve, deny));
    const decide = async (verb) => {
      for (const b of node.querySelectorAll('button')) b.disabled = true;
      try {
        await post(`/api/_a2app/approvals/${encodeURIComponent(a.key)}/${verb}`, undefined, signedIn?.token);
        $('#approvals-error').hidden = true;
      } catch (e) {
        $('#approvals-error').textContent = `Could not ${verb} the call of ${a.operation}: ${refusal(e)}`;
        $('#approvals-error').hidden = false;
      }
      delete box.dataset.sig;
      await readApprovals();
    };
    approve.addEventListener('click', () => decide('approve'));
    deny.addEventListener('click', () => decide('deny'));
    return node;
  }));
  const wanted = new URLSearchParams(window.location.hash.slice(1)).get('approval');
  if (wanted) document.querySelector(`[data-approval="${CSS.escape(wanted)}"]`)?.focus();
}

// ---------------------------------------------------------------- signing in (multi-user)

let linkedReading = null;

/** Reads the grant this page was opened at, by its id (pending grants are listed to nobody but the owner). */
function readLinkedGrant() {
  if (!linkedGrant) return Promise.resolve();
  linkedReading ||= (async () => {
    const id = linkedGrant;
    try {
      const g = await get(`/api/_a2app/grants/${encodeURIComponent(id)}`);
      if (id === linkedGrant) drawGrants([g]);
      $('#grants-count').dataset.failed = '';
    } catch (e) {
      wantedGrant = null;
      // A grant linked before is not this link's: nothing is left to decide on.
      if (id === linkedGrant) drawGrants([]);
      const error = $('#grants-error');
      error.textContent = `The grant in this link (${id}) could not be read: ${refusal(e)}`;
      error.hidden = false;
      $('#grants-count').dataset.failed = 'true';
    } finally {
      linkedReading = null;
      // The link changed while this read was out: read the grant it names now.
      if (linkedGrant !== id) readLinkedGrant();
    }
  })();
  return linkedReading;
}

/** Shows who is signed in (or the form), and lets the grants shown set their buttons. */
function drawSignedIn() {
  $('#sign-in').hidden = signedIn !== null;
  $('#signed-in').hidden = signedIn === null;
  $('#signed-in-as').textContent = signedIn ? `Signed in as ${signedIn.record.email || signedIn.record.id}` : '';
  refreshDecisions();
}

function signOut() {
  signedIn = null;
  drawSignedIn();
}

/** The sign-in form: the user's token goes to this page's memory, nowhere else. */
async function signIn(event) {
  event.preventDefault();
  const form = $('#sign-in');
  const error = $('#sign-in-error');
  const submit = form.querySelector('button[type="submit"]');
  submit.disabled = true;
  try {
    const answer = await post('/api/collections/users/auth-with-password', {
      identity: $('#sign-in-email').value.trim(),
      password: $('#sign-in-password').value,
    });
    signedIn = { token: answer.token, record: answer.record };
    error.hidden = true;
  } catch (e) {
    error.textContent = `Could not sign in: ${refusal(e)}`;
    error.hidden = false;
  } finally {
    $('#sign-in-password').value = '';
    submit.disabled = false;
  }
  drawSignedIn();
}

/** A multi-user app's page opened at a grant: that grant, and a form to sign in and decide on it. */
function startLinkedGrant() {
  linkedGrant = wantedGrant;
  $('#grants-sign-in').hidden = false;
  $('#sign-in').addEventListener('submit', signIn);
  $('#sign-out').addEventListener('click', signOut);
  $('#grants-refresh').addEventListener('click', () => readLinkedGrant());
  window.addEventListener('hashchange', () => {
    const id = grantFromHash();
    if (!id || id === linkedGrant) return;
    linkedGrant = id;
    wantedGrant = id;
    $('#grants-error').hidden = true;
    // Another grant: the person signs in again to decide on it, so a grant
    // swapped in under a signed-in session is never approved by habit.
    signedIn = null;
    drawSignedIn();
    readLinkedGrant();
  });
  drawSignedIn();
  return readLinkedGrant();
}

function startGrants(doc) {
  described = doc;
  multiUser = doc.app?.authMode === 'multi-user';
  wantedGrant = grantFromHash();
  if (multiUser && wantedGrant) return startLinkedGrant();
  if (multiUser) {
    $('#grants-multi-user').hidden = false;
    $('#grants-refresh').hidden = true;
    $('#grants-empty').hidden = true;
    // A link to a grant opened in this tab later opens it as a first load would.
    const opened = () => {
      wantedGrant = grantFromHash();
      if (!wantedGrant) return;
      window.removeEventListener('hashchange', opened);
      $('#grants-multi-user').hidden = true;
      $('#grants-refresh').hidden = false;
      startLinkedGrant();
    };
    window.addEventListener('hashchange', opened);
    return Promise.resolve();
  }
  $('#grants-refresh').addEventListener('click', () => readGrants());
  // A new ask shows up without a reload: every few seconds while the page is
  // seen, and at once when the person comes back to it.
  setInterval(() => { if (!document.hidden) readGrants(); }, GRANTS_EVERY_MS);
  window.addEventListener('focus', () => readGrants());
  document.addEventListener('visibilitychange', () => { if (!document.hidden) readGrants(); });
  window.addEventListener('hashchange', () => {
    wantedGrant = grantFromHash();
    if (wantedGrant) readGrants();
  });
  return readGrants();
}

// ---------------------------------------------------------------- live

function subscribe(entities) {
  const live = $('#live');
  const setLive = (state) => {
    live.dataset.state = state;
    live.textContent = state === 'live' ? 'Live' : 'Reconnecting…';
  };
  const source = new EventSource('/api/realtime');
  const topics = entities.map((e) => `${e}/*`);
  source.addEventListener('PB_CONNECT', async (ev) => {
    try {
      const { clientId } = JSON.parse(ev.data);
      const res = await fetch('/api/realtime', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ clientId, subscriptions: topics }),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      setLive('live');
      document.body.dataset.live = 'true';
      readReceipts(); // anything written while the stream was down
    } catch {
      setLive('connecting');
    }
  });
  // Every change is a write, and every write has a receipt.
  for (const t of topics) source.addEventListener(t, () => { readReceipts(); refreshCounts(); });
  source.onerror = () => setLive('connecting');
}

// ---------------------------------------------------------------- start

async function start() {
  const origin = window.location.origin;
  $('#mcp-url').textContent = `${origin}/mcp`;
  $('#cli-command').textContent = `a2app ${origin}`;
  for (const b of document.querySelectorAll('[data-copy]')) {
    b.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(document.getElementById(b.dataset.copy).textContent);
        b.textContent = 'Copied';
      } catch {
        b.textContent = 'Select and copy';
      }
      setTimeout(() => { b.textContent = 'Copy'; }, 1500);
    });
  }
  $('#agents-only').addEventListener('change', drawReceipts);
  $('#refresh').addEventListener('click', () => readReceipts());

  const [identity, doc, connect] = await Promise.all([
    get('/api/_a2app'), get('/api/_a2app/describe'), get('/_/connect.json'),
  ]);
  document.title = `${identity.app.name} · a2app dashboard`;
  $('#app-name').textContent = identity.app.name;
  // On this machine the gateway finds the app by its id (and its own token);
  // from elsewhere, by URL.
  const host = window.location.hostname;
  const local = ['localhost', '127.0.0.1', '[::1]'].includes(host) || host.endsWith('.localhost');
  $('#gateway-command').textContent = `a2app mcp ${local ? identity.app.id : origin}`;
  $('#token-path').textContent = connect.tokenPath;
  $('#app-dir').textContent = connect.appDir;
  $('#open-app').hidden = !connect.hasUi;
  drawIdentity(identity);
  subscribe(Object.keys(doc.entities));
  await Promise.all([drawDescribe(doc), readReceipts(), startGrants(doc)]);
  document.body.dataset.ready = 'true';
}

start().catch((e) => {
  $('#activity-count').textContent = `could not read the app: ${e.message}`;
});
