// PocketBase 0.40.6 vs ours: the same dataset, the same list queries, identical
// answers (parsed JSON, created/updated removed, key order ignored).
//
// Ports: 18290 PocketBase, 18291 ours (INTEROP_OURS=pocketbase: a second PocketBase).
// On a mismatch the row fails with a short diff, and both full bodies are written to
// tests/interop/out/<row>.{pocketbase,ours}.json (gitignored).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { OURS_MODE, SCHEMA_PATH, startOurs } from './lib/a2app.mjs';
import { canonical, firstDifference, normalizeList } from './lib/compare.mjs';
import { buildDataset, seed } from './lib/dataset.mjs';
import { INTEROP_DIR, startPocketBase } from './lib/pocketbase.mjs';
import { request } from './lib/proc.mjs';
import { QUERIES } from './queries.mjs';

const PB_PORT = 18290;
const OURS_PORT = 18291;
const OUT_DIR = path.join(INTEROP_DIR, 'out');
const VERBOSE = process.env.INTEROP_VERBOSE === '1';
// INTEROP_ONLY=substring runs only the rows whose name contains it (debugging aid).
const ONLY = process.env.INTEROP_ONLY || '';

const rows = QUERIES.filter((r) => r.name.includes(ONLY));
const names = new Set();
for (const r of QUERIES) {
  assert.ok(!names.has(r.name), `duplicate query name: ${r.name}`);
  names.add(r.name);
}

const clip = (s, n = 1500) => (s.length > n ? `${s.slice(0, n)}... (${s.length} chars)` : s);
const slug = (s) => s.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '').slice(0, 80);
const listUrl = (server, row) => {
  const qs = new URLSearchParams(Object.entries(row.params).map(([k, v]) => [k, String(v)]));
  return `${server.url}/api/collections/${row.collection}/records?${qs}`;
};

describe(`interop compare: pocketbase vs ${OURS_MODE}`, { timeout: 600000 }, () => {
  let pb;
  let ours;
  let identical = 0;
  let ran = 0;
  // Circuit breaker: a server that stops answering would otherwise cost one HTTP
  // timeout per remaining row; after a few, the rest fail at once.
  let oursTimeouts = 0;
  const MAX_TIMEOUTS = 3;
  const getOurs = async (url) => {
    if (oursTimeouts >= MAX_TIMEOUTS) throw new Error(`ours timed out ${oursTimeouts} times; not asking again`);
    try {
      return await request('GET', url);
    } catch (err) {
      if (err.name === 'TimeoutError') oursTimeouts++;
      throw err;
    }
  };

  before(async () => {
    fs.rmSync(OUT_DIR, { recursive: true, force: true });
    // Start both at once (each waits on its own health check), but make sure a
    // failure of one still stops the other.
    const [a, b] = await Promise.allSettled([
      startPocketBase({ port: PB_PORT, schemaPath: SCHEMA_PATH, label: 'pb' }),
      startOurs({ port: OURS_PORT }),
    ]);
    if (a.status === 'fulfilled') pb = a.value;
    if (b.status === 'fulfilled') ours = b.value;
    if (a.status === 'rejected') throw a.reason;
    if (b.status === 'rejected') throw b.reason;
    const data = buildDataset();
    await Promise.all([seed(pb, data), seed(ours, data)]);
  }, { timeout: 120000 }); // servers start in <30 s each, seeding takes ~1 s

  after(async () => {
    await Promise.allSettled([pb?.stop(), ours?.stop()]);
    // The summary line the brief asks for; also written to out/ for CI logs.
    const line = `interop: ${ran} queries, ${identical} identical`;
    console.log(line);
    fs.mkdirSync(OUT_DIR, { recursive: true });
    fs.writeFileSync(path.join(OUT_DIR, 'summary.txt'), `${line}\n`);
  }, { timeout: 30000 });

  for (const [n, row] of rows.entries()) {
    it(row.name, { timeout: 30000 }, async () => {
      ran++;
      const [a, b] = await Promise.all([request('GET', listUrl(pb, row)), getOurs(listUrl(ours, row))]);
      if (VERBOSE) {
        console.log(`${row.name}: pb ${a.status} total=${a.body?.totalItems} items=${a.body?.items?.length}`);
      }
      // Guard the row itself: PocketBase is the reference and must answer as declared.
      assert.equal(a.status, row.expect,
        `row is wrong: PocketBase answered ${a.status}, row expects ${row.expect}: ${clip(a.text, 400)}`);
      const report = [`${row.collection} ${JSON.stringify(row.params)}`];
      if (row.expect !== 200) {
        // An error answer: the HTTP status, the body's own `status`, and the
        // keys of its `data` (the fields it names) must agree; the message is
        // ours to word (it says what is wrong and where) and is not compared.
        const shape = (r) => JSON.stringify([r.status, r.body?.status, Object.keys(r.body?.data ?? {}).sort()]);
        if (shape(a) === shape(b)) { identical++; return; }
        report.push(`error shape: pocketbase=${shape(a)} ours=${shape(b)}`, `ours body: ${clip(b.text, 600)}`);
        assert.fail(report.join('\n'));
      }
      const na = normalizeList(a.body);
      const nb = b.status === 200 ? normalizeList(b.body) : null;
      if (nb && canonical(na) === canonical(nb)) { identical++; return; }

      const base = path.join(OUT_DIR, `${String(n).padStart(3, '0')}_${slug(row.name)}`);
      fs.mkdirSync(OUT_DIR, { recursive: true });
      fs.writeFileSync(`${base}.pocketbase.json`, JSON.stringify(na, null, 2));
      fs.writeFileSync(`${base}.ours.json`, nb ? JSON.stringify(nb, null, 2) : b.text);
      if (!nb) {
        report.push(`status: pocketbase=200 ours=${b.status}`, `ours body: ${clip(b.text, 600)}`);
      } else {
        const d = firstDifference(na, nb);
        report.push(`first difference: ${clip(d.text, 600)}`);
        // Show the first differing item of each side (or the page head) rather than
        // the start of two long, mostly equal bodies.
        const show = (body) => (d.index >= 0
          ? `items[${d.index}] ${clip(canonical(body.items[d.index] ?? null), 1200)}`
          : clip(canonical({ ...body, items: `(${body.items?.length} items)` }), 1200));
        report.push(`pocketbase: ${show(na)}`, `ours:       ${show(nb)}`);
      }
      report.push(`full bodies: ${base}.{pocketbase,ours}.json`);
      assert.fail(report.join('\n'));
    });
  }
});
