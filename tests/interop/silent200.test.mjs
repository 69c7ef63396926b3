// The silent-200 corpus (silent200.mjs) against a real PocketBase 0.40.6 and ours.
//
// PocketBase is only observed: each answer is classed as
//   silent   2xx, the bad value went in (and we read back what it stored),
//   vague    4xx whose body does not name the row's field with a code,
//   precise  4xx naming the field with a code (for the bundle row: every field),
//   partial  the bundle row's 4xx naming only some of its fields.
// Ours is asserted exactly: the code's status, the a2app envelope, the expected
// first code and field, the violation in the list, and nothing written.
//
// Ports: 18390 PocketBase, 18391 ours. The table and the closing line are printed
// and written to tests/interop/out/silent200.txt (gitignored).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { OURS_MODE, REPO_ROOT, SCHEMA_PATH, a2appBin, startOurs } from './lib/a2app.mjs';
import { INTEROP_DIR, startPocketBase } from './lib/pocketbase.mjs';
import { request } from './lib/proc.mjs';
import { BASES, CODE_STATUS, ROWS, SEED } from './silent200.mjs';

const PB_PORT = 18390;
const OURS_PORT = 18391;
const OUT_DIR = path.join(INTEROP_DIR, 'out');
// The point of the corpus; if PocketBase ever stops accepting this much, the
// number must be looked at, not the bar lowered.
const MIN_PB_SILENT = 30;
const MIN_ROWS = 45;

// The two self-check modes (README) put PocketBase, or a proxy to it, in ours' place:
// there is no guard to check then, so the server suite is skipped, not failed.
const SELF_CHECK = OURS_MODE !== 'a2app' || path.basename(a2appBin()) === 'fake-a2app.mjs';

const schema = JSON.parse(fs.readFileSync(SCHEMA_PATH, 'utf8'));
const SERVER_KEYS = ['id', 'created', 'updated', 'collectionId', 'collectionName'];

/** The guard codes as declared in the Rust code table, so a new one needs rows here. */
function guardCodesFromRust() {
  const src = fs.readFileSync(path.join(REPO_ROOT, 'crates', 'protocol', 'src', 'error.rs'), 'utf8');
  const start = src.indexOf('// The guard');
  const end = src.indexOf('// After the store');
  assert.ok(start >= 0 && end > start, 'error.rs no longer has the "The guard" / "After the store" sections');
  return [...src.slice(start, end).matchAll(/\("([a-z_]+)",\s*(\d+)\)/g)].map((m) => [m[1], Number(m[2])]);
}

const recordUrl = (server, collection, id = '') =>
  `${server.url}/api/collections/${collection}/records${id ? `/${id}` : ''}`;

/** Sends one row; a string body goes out as raw text, anything else as JSON. */
function send(server, row) {
  const url = row.method === 'POST' ? recordUrl(server, row.collection) : recordUrl(server, row.collection, row.id);
  const payload = typeof row.body === 'string' ? { raw: row.body } : { json: row.body };
  return request(row.method, url, { headers: server.writeHeaders, ...payload });
}

async function getRecord(server, collection, id) {
  const r = await request('GET', recordUrl(server, collection, id), { headers: server.writeHeaders });
  return r.status === 200 ? r.body : null;
}

async function count(server, collection) {
  const r = await request('GET', `${recordUrl(server, collection)}?perPage=1`, { headers: server.writeHeaders });
  assert.equal(r.status, 200, `count ${collection} on ${server.kind}: ${r.status} ${r.text}`);
  return r.body.totalItems;
}

async function seedBoth(servers) {
  for (const server of servers) {
    for (const [collection, records] of Object.entries(SEED)) {
      for (const rec of records) {
        const r = await request('POST', recordUrl(server, collection), { headers: server.writeHeaders, json: rec });
        if (r.status !== 200 || r.body?.id !== rec.id) {
          throw new Error(`seed ${server.kind} ${collection}/${rec.id}: ${r.status} ${r.text}`);
        }
      }
    }
  }
}

const seedOf = (row) => SEED[row.collection].find((r) => r.id === row.id);

const short = (v, n = 34) => {
  let s = v === undefined ? 'undefined' : JSON.stringify(v);
  if (typeof v === 'string' && v.length > 24) s = `"${v.slice(0, 6)}…" (${v.length} chars)`;
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
};

/**
 * What PocketBase kept of the row's field, in words, from the record read back.
 * A raw body names no field: then the fields that differ from the seeded record.
 */
function describeStored(row, rec, seeded) {
  if (!rec) return 'record not found';
  const field = row.expect.field;
  if (field === null) {
    if (!seeded) return 'created';
    const changed = Object.keys(seeded).filter((k) => !isDeepStrictEqual(rec[k], seeded[k]));
    return changed.length ? changed.map((k) => `${k}=${short(rec[k], 20)}`).join(' ') : 'nothing changed';
  }
  if (!(field in rec)) return 'ignored';
  const sent = row.body[field];
  if (SERVER_KEYS.includes(field) && !isDeepStrictEqual(rec[field], sent)) return 'ignored';
  if (isDeepStrictEqual(rec[field], sent)) return `${short(rec[field])} as sent`;
  return short(rec[field]);
}

/**
 * silent: 2xx. precise: 4xx naming every field the row is about with a code
 * (for a bundle row, all of them). partial: a bundle row's 4xx naming only some.
 * vague: a 4xx naming none of them (always so for a body-level problem).
 * Returns {cls, named} where named lists the fields PocketBase named.
 */
function classifyPocketBase(row, res) {
  if (res.status >= 200 && res.status < 300) return { cls: 'silent', named: [] };
  if (res.status < 400 || res.status >= 500) return { cls: 'other', named: [] };
  const fields = row.expect.all ? row.expect.all.map(([, f]) => f) : [row.expect.field];
  const named = fields.filter((f) => f !== null && typeof res.body?.data?.[f]?.code === 'string');
  if (named.length === 0) return { cls: 'vague', named };
  return { cls: named.length === fields.length ? 'precise' : 'partial', named };
}

describe('silent-200 corpus rows (static)', () => {
  it(`has at least ${MIN_ROWS} rows with unique names`, () => {
    assert.ok(ROWS.length >= MIN_ROWS, `${ROWS.length} rows`);
    assert.equal(new Set(ROWS.map((r) => r.name)).size, ROWS.length, 'duplicate row names');
  });

  it('covers every guard code of the Rust code table, several ways each, with its status', () => {
    const codes = guardCodesFromRust();
    assert.ok(codes.length >= 13, `parsed only ${codes.length} guard codes from error.rs`);
    for (const [code, status] of codes) {
      assert.equal(CODE_STATUS[code], status, `CODE_STATUS.${code} disagrees with error.rs`);
      const n = ROWS.filter((r) => r.expect.code === code).length;
      assert.ok(n >= 2, `guard code ${code} has ${n} rows`);
    }
    for (const r of ROWS) assert.ok(codes.some(([c]) => c === r.expect.code), `${r.name}: ${r.expect.code} is no guard code`);
  });

  it('rows are well formed', () => {
    for (const r of ROWS) {
      const ent = schema.entities[r.collection];
      assert.ok(ent, `${r.name}: no entity ${r.collection}`);
      assert.ok(['POST', 'PATCH'].includes(r.method), `${r.name}: method ${r.method}`);
      if (r.method === 'PATCH') assert.ok(seedOf(r), `${r.name}: PATCH target ${r.id} is not seeded`);
      const { field } = r.expect;
      if (typeof r.body === 'string') {
        assert.equal(field, null, `${r.name}: a raw body names no field`);
      } else {
        // the field is one the body writes, or a required one it leaves out
        assert.ok(field in r.body || ent.fields[field]?.required, `${r.name}: ${field} is not in the body`);
      }
    }
  });
});

describe(`silent-200: pocketbase vs ${OURS_MODE}`, {
  timeout: 120000,
  skip: SELF_CHECK && 'self-check mode: ours is PocketBase or a proxy to it, which has no guard',
}, () => {
  let pb;
  let ours;
  const results = []; // {row, pb: {status, cls, stored}, ours: {status, code, ok}}

  before(async () => {
    const [a, b] = await Promise.allSettled([
      startPocketBase({ port: PB_PORT, schemaPath: SCHEMA_PATH, label: 'silent-pb' }),
      startOurs({ port: OURS_PORT }),
    ]);
    if (a.status === 'fulfilled') pb = a.value;
    if (b.status === 'fulfilled') ours = b.value;
    if (a.status === 'rejected') throw a.reason;
    if (b.status === 'rejected') throw b.reason;
    await seedBoth([pb, ours]);
  }, { timeout: 60000 });

  after(async () => {
    await Promise.allSettled([pb?.stop(), ours?.stop()]);
    if (!results.length) return;
    const n = results.length;
    const silent = results.filter((r) => r.pb.cls === 'silent').length;
    const vague = results.filter((r) => r.pb.cls === 'vague').length;
    const refused = results.filter((r) => r.ours.ok).length;
    const pbCell = (r) => `${r.pb.status} ${r.pb.cls.padEnd(7)} ${r.pb.stored}`;
    const w1 = Math.max(3, ...results.map((r) => r.row.name.length));
    const w2 = Math.max(10, ...results.map((r) => pbCell(r).length));
    const lines = [
      `${'row'.padEnd(w1)}  ${'pocketbase: status, class, what it stored (or its error code)'.padEnd(w2)}  a2app`,
      ...results.map((r) => `${r.row.name.padEnd(w1)}  ${pbCell(r).padEnd(w2)}  `
        + `${r.ours.status} ${r.ours.code}${r.ours.ok ? '' : '  <-- MISMATCH'}`),
      `silent-200: ${n} bad writes; PocketBase accepted ${silent} with 200 and answered ${vague} with a vague 400; `
        + `a2app refused ${refused}/${n} with the exact code`,
    ];
    console.log(lines.join('\n'));
    fs.mkdirSync(OUT_DIR, { recursive: true });
    fs.writeFileSync(path.join(OUT_DIR, 'silent200.txt'), `${lines.join('\n')}\n`);
  }, { timeout: 30000 });

  for (const row of ROWS) {
    it(row.name, { timeout: 15000 }, async () => {
      const result = { row, pb: { status: '-', cls: '-', stored: '' }, ours: { status: '-', code: '-', ok: false } };
      results.push(result);

      // --- PocketBase: put a PATCH target back to its seeded values first, so what
      // it stores is this row's doing and not the previous row's.
      const seeded = row.method === 'PATCH' ? seedOf(row) : null;
      if (seeded) {
        const { id, ...values } = seeded;
        const reset = await request('PATCH', recordUrl(pb, row.collection, id), { headers: pb.writeHeaders, json: values });
        assert.equal(reset.status, 200, `PocketBase reset of ${id}: ${reset.status} ${reset.text}`);
      }
      const a = await send(pb, row);
      result.pb.status = a.status;
      const { cls, named } = classifyPocketBase(row, a);
      result.pb.cls = cls;
      if (cls === 'silent') {
        const id = row.method === 'PATCH' ? row.id : a.body?.id;
        result.pb.stored = describeStored(row, id ? await getRecord(pb, row.collection, id) : null, seeded);
      } else if (cls === 'precise' && !row.expect.all) {
        result.pb.stored = a.body.data[row.expect.field].code; // its code, for the table
      } else if (named.length) {
        result.pb.stored = `names ${named.length}/${row.expect.all.length}: ${named.join(', ')}`;
      }

      // --- ours: refused with the exact code, and nothing written.
      const before = row.method === 'PATCH'
        ? await getRecord(ours, row.collection, row.id)
        : await count(ours, row.collection);
      const b = await send(ours, row);
      result.ours.status = b.status;
      result.ours.code = b.body?.code ?? '-';
      const after = row.method === 'PATCH'
        ? await getRecord(ours, row.collection, row.id)
        : await count(ours, row.collection);

      const { code, field, all } = row.expect;
      const body = b.body ?? {};
      const got = (body.violations ?? []).map((v) => [v.code, v.field ?? null]);
      const ctx = `ours answered ${b.status}: ${b.text.slice(0, 600)}`;
      assert.equal(b.status, CODE_STATUS[code], ctx);
      assert.equal(body.a2app, true, ctx);
      assert.equal(body.ok, false, ctx);
      assert.equal(body.status, b.status, ctx);
      assert.equal(body.code, code, ctx);
      assert.equal(body.field ?? null, field, ctx);
      assert.ok(got.some(([c, f]) => c === code && f === field), `no violation {${code}, ${field}}: ${ctx}`);
      // Exactly these violations: a bundle lists every one in body order; any other
      // row has one, which also proves the rest of its body is valid.
      assert.deepEqual(got, all ?? [[code, field]], `violations differ: ${ctx}`);
      if (row.method === 'PATCH') {
        assert.ok(before, `ours: seeded ${row.collection}/${row.id} is missing`);
        assert.deepEqual(after, before, `ours changed ${row.collection}/${row.id} although it refused the write`);
      } else {
        assert.equal(after, before, `ours: ${row.collection} count changed although the create was refused`);
      }
      result.ours.ok = true;
    });
  }

  // Control, after the rows (it adds records): each POST base alone is valid on both
  // servers, so a refusal above is due to the one thing the row changed.
  it('control: the create bases are accepted by both servers', async () => {
    for (const [collection, body] of Object.entries(BASES)) {
      for (const server of [pb, ours]) {
        const r = await request('POST', recordUrl(server, collection), { headers: server.writeHeaders, json: body });
        assert.equal(r.status, 200, `${server.kind} refused the ${collection} base: ${r.text}`);
      }
    }
  });

  it(`a2app refused every row with the exact code, and PocketBase accepted at least ${MIN_PB_SILENT}`, () => {
    assert.equal(results.length, ROWS.length, 'not every row ran');
    const failed = results.filter((r) => !r.ours.ok).map((r) => r.row.name);
    assert.deepEqual(failed, [], 'rows a2app did not refuse exactly');
    const silent = results.filter((r) => r.pb.cls === 'silent').length;
    assert.ok(silent >= MIN_PB_SILENT, `PocketBase accepted only ${silent} of ${ROWS.length} bad writes with 200`);
  });
});
