// Normalisation and comparison of list responses.
//
// PocketBase emits JSON keys in no stable order (Go maps) and `created`/`updated`
// are wall-clock autodates that necessarily differ between two servers, so results
// are compared as parsed JSON with those two keys removed from every record
// (top-level items and everything under `expand`), and keys sorted.

/** Remove created/updated from a record and, recursively, from its expand tree. */
function stripRecord(rec) {
  if (!rec || typeof rec !== 'object' || Array.isArray(rec)) return rec;
  const out = { ...rec };
  delete out.created;
  delete out.updated;
  if (out.expand && typeof out.expand === 'object') {
    const exp = {};
    for (const [k, v] of Object.entries(out.expand)) {
      exp[k] = Array.isArray(v) ? v.map(stripRecord) : stripRecord(v);
    }
    out.expand = exp;
  }
  return out;
}

/** Normalise a list response body (leaves non-list bodies, e.g. errors, alone). */
export function normalizeList(body) {
  if (!body || typeof body !== 'object' || !Array.isArray(body.items)) return body;
  return { ...body, items: body.items.map(stripRecord) };
}

/** JSON with object keys sorted at every depth; array order is significant. */
export function canonical(value) {
  const sort = (v) => {
    if (Array.isArray(v)) return v.map(sort);
    if (v && typeof v === 'object') {
      return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sort(v[k])]));
    }
    return v;
  };
  return JSON.stringify(sort(value));
}

/**
 * Where two normalised list bodies first differ: {text, index} where text is a short
 * human hint and index the first differing item (or -1).
 */
export function firstDifference(a, b) {
  const text = diffText(a, b);
  const m = /^items\[(\d+)\]/.exec(text);
  return { text, index: m ? Number(m[1]) : -1 };
}

function diffText(a, b) {
  if (!a || !b || typeof a !== 'object' || typeof b !== 'object') return 'bodies differ';
  for (const k of ['page', 'perPage', 'totalItems', 'totalPages']) {
    if (a[k] !== b[k]) return `${k}: pocketbase=${JSON.stringify(a[k])} ours=${JSON.stringify(b[k])}`;
  }
  const ai = a.items || [];
  const bi = b.items || [];
  if (ai.length !== bi.length) return `items.length: pocketbase=${ai.length} ours=${bi.length}`;
  for (let i = 0; i < ai.length; i++) {
    if (canonical(ai[i]) === canonical(bi[i])) continue;
    if (ai[i]?.id !== bi[i]?.id) return `items[${i}].id: pocketbase=${ai[i]?.id} ours=${bi[i]?.id} (order or membership)`;
    const keys = new Set([...Object.keys(ai[i] || {}), ...Object.keys(bi[i] || {})]);
    for (const k of [...keys].sort()) {
      if (canonical(ai[i][k]) !== canonical(bi[i][k])) {
        return `items[${i}] (id ${ai[i].id}).${k}: pocketbase=${canonical(ai[i][k])} ours=${canonical(bi[i][k])}`;
      }
    }
  }
  const extra = Object.keys({ ...a, ...b }).filter((k) => canonical(a[k]) !== canonical(b[k]));
  return extra.length ? `top-level keys differ: ${extra.join(', ')}` : 'bodies differ';
}
