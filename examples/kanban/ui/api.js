// The board's only link to the app: the records API, the realtime stream, the
// contract documents and the app-to-agent request queue, all on the page's own
// origin.
//
// The page sends no token. The app lets its own loopback origin write (the
// browser adds `Origin` to every write); an agent's token never reaches a page.

/** A refusal from the app: the A2App error envelope, kept whole. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message || `HTTP ${status}`);
    this.status = status;
    this.code = body?.code || 'http_error';
    this.violations = Array.isArray(body?.violations) ? body.violations : [];
    this.body = body;
  }
}

const TIMEOUT_MS = 15000;

async function call(method, path, body) {
  const init = { method, headers: { Accept: 'application/json' }, signal: AbortSignal.timeout(TIMEOUT_MS) };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, { code: 'unreachable', message: `The app did not answer (${e.message}).` });
  }
  if (res.status === 204) return null;
  const text = await res.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = { message: text }; }
  if (!res.ok) throw new ApiError(res.status, json);
  return json;
}

const records = (entity) => `/api/collections/${encodeURIComponent(entity)}/records`;

export const identity = () => call('GET', '/api/_a2app');
export const describe = () => call('GET', '/api/_a2app/describe');

/** Every record of an entity, following pages. */
export async function listAll(entity, { sort = '', filter = '' } = {}) {
  const out = [];
  for (let page = 1; page <= 100; page++) {
    const q = new URLSearchParams({ page: String(page), perPage: '500', sort });
    if (filter) q.set('filter', filter);
    const res = await call('GET', `${records(entity)}?${q}`);
    out.push(...res.items);
    if (res.items.length < 500) break;
  }
  return out;
}

export const create = (entity, fields) => call('POST', records(entity), fields);
export const update = (entity, id, fields) => call('PATCH', `${records(entity)}/${encodeURIComponent(id)}`, fields);
export const remove = (entity, id) => call('DELETE', `${records(entity)}/${encodeURIComponent(id)}`);

/**
 * Moves a card to a list at a position through the app's `move_card`
 * operation, the verb agents use: a person's move gets the same guard,
 * receipt and audit entry ("Ran operation move_card"). Resolves to the
 * stored card.
 */
export async function moveCard(cardId, listId, position) {
  const done = await call('POST', '/api/ops/move_card', { card: cardId, list: listId, position });
  return done.result;
}

// ---------------------------------------------------------------- asking an agent
//
// The person asks, from this page, for one of the capabilities describe lists
// (`requests`); an agent linked to the app claims the request and answers it.
// The page never claims or answers: that takes the agent's token.

const REQUESTS = '/api/_a2app/requests';
/** The realtime topic of the request queue. */
const REQUESTS_TOPIC = '_a2app_requests/*';

/** Asks for `capability` with `params`; resolves to the pending request. */
export const askAgent = (capability, params) => call('POST', REQUESTS, { capability, params });

/** A page of requests, newest first: `{page, perPage, totalItems, totalPages, items}`. */
export function listRequests({ status = '', capability = '', perPage = 30 } = {}) {
  const q = new URLSearchParams({ perPage: String(perPage) });
  if (status) q.set('status', status);
  if (capability) q.set('capability', capability);
  return call('GET', `${REQUESTS}?${q}`);
}

/** Takes back a request not answered yet; resolves to the cancelled request. */
export const cancelRequest = (id) => call('POST', `${REQUESTS}/${encodeURIComponent(id)}/cancel`);

/**
 * Subscribes to changes of `entities` through PocketBase's realtime protocol
 * (SSE, no polling). `onChange({entity, action, record})` gets every change;
 * `onStatus('live' | 'connecting')` follows the connection, and a reconnect
 * is reported as 'live' again so the caller can reload what it may have missed.
 * With `onRequest({action, request})`, the same stream carries the request
 * queue's changes too.
 * Returns a function that closes the stream.
 */
export function subscribe(entities, { onChange, onStatus, onRequest }) {
  const source = new EventSource('/api/realtime');
  const topics = entities.map((e) => `${e}/*`);
  onStatus('connecting');
  source.addEventListener('PB_CONNECT', async (ev) => {
    try {
      const { clientId } = JSON.parse(ev.data);
      const subscriptions = onRequest ? [...topics, REQUESTS_TOPIC] : topics;
      await call('POST', '/api/realtime', { clientId, subscriptions });
      onStatus('live');
    } catch {
      onStatus('connecting');
    }
  });
  const listen = (topic, handle) => source.addEventListener(topic, (ev) => {
    let data;
    try { data = JSON.parse(ev.data); } catch { return; }
    if (data?.record?.id) handle(data);
  });
  for (const topic of topics) {
    const entity = topic.slice(0, -2);
    listen(topic, (data) => onChange({ entity, action: data.action, record: data.record }));
  }
  if (onRequest) listen(REQUESTS_TOPIC, (data) => onRequest({ action: data.action, request: data.record }));
  source.onerror = () => onStatus('connecting');
  return () => source.close();
}
