// The a2app dashboard at /_/: identity, describe, the receipts of recent
// writes (live, through the realtime stream), and how to connect an agent.
// Read-only: it writes nothing, and it never sees the agent token.

const $ = (sel) => document.querySelector(sel);
const TIMEOUT_MS = 15000;
const KEEP = 200;

async function get(path) {
  const res = await fetch(path, { headers: { Accept: 'application/json' }, signal: AbortSignal.timeout(TIMEOUT_MS) });
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new Error(body?.message || `HTTP ${res.status}`);
  return body;
}

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
  await Promise.all([drawDescribe(doc), readReceipts()]);
  document.body.dataset.ready = 'true';
}

start().catch((e) => {
  $('#activity-count').textContent = `could not read the app: ${e.message}`;
});
