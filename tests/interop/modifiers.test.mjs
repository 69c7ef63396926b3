// PocketBase 0.40.6 vs ours: writes that use PocketBase's set modifiers
// (`points+`, `points-`, `labels+`, `+labels`, `labels-`, the same on a
// relation list). The same writes go to both servers, with the same record
// ids; after each, the stored records must be identical (created/updated and
// our `_receipt` aside), and a write PocketBase refuses must be refused by ours.
//
// Ports: 18295 PocketBase, 18296 ours (INTEROP_OURS=pocketbase: a second PocketBase).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OURS_MODE, SCHEMA_PATH, startOurs } from './lib/a2app.mjs';
import { canonical } from './lib/compare.mjs';
import { startPocketBase } from './lib/pocketbase.mjs';
import { request } from './lib/proc.mjs';

const PB_PORT = 18295;
const OURS_PORT = 18296;
const CARD = 'mod00000000card';

/** A record as both servers store it, without what necessarily differs. */
function stored(record) {
  const out = { ...record };
  for (const key of ['created', 'updated', '_receipt']) delete out[key];
  return out;
}

// Each step: one write, sent as is to both servers. Multiple modifiers on one
// field are sent in separate writes: PocketBase applies a body's keys in Go
// map order, which is not fixed.
const STEPS = [
  ['create with modifiers', 'POST', '', { id: CARD, title: 'Count', list: 'modlist00000001', priority: 'none', 'points+': 5, 'labels+': ['bug'], 'assignees+': 'modmember000001' }],
  ['add to a number', 'PATCH', CARD, { 'points+': 3 }],
  ['subtract from a number', 'PATCH', CARD, { 'points-': 2 }],
  ['add a fraction', 'PATCH', CARD, { 'estimate+': 0.25 }],
  ['append to a list, one already there', 'PATCH', CARD, { 'labels+': ['chore', 'bug'] }],
  ['prepend to a list', 'PATCH', CARD, { '+labels': 'docs' }],
  ['prepend a value already there', 'PATCH', CARD, { '+labels': 'chore' }],
  ['remove from a list', 'PATCH', CARD, { 'labels-': 'bug' }],
  ['append a relation', 'PATCH', CARD, { 'assignees+': ['modmember000002'] }],
  ['prepend a relation', 'PATCH', CARD, { '+assignees': 'modmember000003' }],
  ['remove a relation', 'PATCH', CARD, { 'assignees-': ['modmember000001'] }],
  ['modifiers on two fields at once', 'PATCH', CARD, { 'points+': 10, 'labels-': ['docs', 'chore'] }],
  ['below the number\'s minimum', 'PATCH', CARD, { 'points-': 500 }],
  ['past the number\'s maximum', 'PATCH', CARD, { 'points+': 500 }],
];

describe(`set modifiers: pocketbase vs ${OURS_MODE}`, { timeout: 300000 }, () => {
  let pb;
  let ours;
  const send = (server, method, id, body) => request(method,
    `${server.url}/api/collections/cards/records${id ? `/${id}` : ''}`, { headers: server.writeHeaders, json: body });

  before(async () => {
    const [a, b] = await Promise.allSettled([
      startPocketBase({ port: PB_PORT, schemaPath: SCHEMA_PATH, label: 'pb-mod' }),
      startOurs({ port: OURS_PORT }),
    ]);
    if (a.status === 'fulfilled') pb = a.value;
    if (b.status === 'fulfilled') ours = b.value;
    if (a.status === 'rejected') throw a.reason;
    if (b.status === 'rejected') throw b.reason;
    for (const server of [pb, ours]) {
      const made = [
        ['lists', { id: 'modlist00000001', name: 'To Do' }],
        ['members', { id: 'modmember000001', name: 'Ann' }],
        ['members', { id: 'modmember000002', name: 'Bob' }],
        ['members', { id: 'modmember000003', name: 'Cy' }],
      ];
      for (const [entity, body] of made) {
        const r = await request('POST', `${server.url}/api/collections/${entity}/records`, { headers: server.writeHeaders, json: body });
        assert.equal(r.status, 200, `${server.kind} ${entity}: ${r.text}`);
      }
    }
  }, { timeout: 120000 });

  after(async () => {
    await Promise.allSettled([pb?.stop(), ours?.stop()]);
  }, { timeout: 30000 });

  // The steps build on each other: run in order, one test each.
  for (const [name, method, id, body] of STEPS) {
    it(name, { timeout: 30000 }, async () => {
      const a = await send(pb, method, id, body);
      const b = await send(ours, method, id, body);
      assert.equal(b.status, a.status, `status: pocketbase=${a.status} ours=${b.status}: ${b.text}`);
      const [na, nb] = await Promise.all([pb, ours].map((s) => request('GET', `${s.url}/api/collections/cards/records/${CARD}`)));
      assert.equal(na.status, 200);
      assert.equal(canonical(stored(nb.body)), canonical(stored(na.body)), `${name}: stored records differ`);
      if (a.status === 200) {
        assert.equal(canonical(stored(b.body)), canonical(stored(a.body)), `${name}: answers differ`);
      }
    });
  }

  it('what the steps made', async () => {
    const r = await request('GET', `${ours.url}/api/collections/cards/records/${CARD}`);
    assert.deepEqual(
      [r.body.points, r.body.estimate, r.body.labels, r.body.assignees],
      [16, 0.25, [], ['modmember000003', 'modmember000002']],
    );
  });
});
