// The official PocketBase JS SDK (0.28.1) against OUR server only. Expected values
// are computed from the seeded dataset, so every count and value is exact.
//
// Port 18292 (INTEROP_OURS=pocketbase runs it against a real PocketBase instead,
// which is how this file itself was validated).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { EventSource } from 'eventsource';
import PocketBase, { ClientResponseError } from 'pocketbase';
import { OURS_MODE, startOurs } from './lib/a2app.mjs';
import { buildDataset, seed } from './lib/dataset.mjs';
import { sleep } from './lib/proc.mjs';

// Node 20 has no global EventSource; without it subscribe() dies with an uncaught
// ReferenceError. eventsource@5 needs Node >= 22, hence the 4.1.1 pin.
globalThis.EventSource = EventSource;

const PORT = 18292;
const WIRE_DATE = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z$/;
const CARD_FIELDS = ['id', 'title', 'description', 'list', 'due_date', 'due_day', 'priority', 'labels',
  'assignees', 'points', 'estimate', 'done', 'position', 'meta'];

const byId = (a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const pick = (rec, keys) => Object.fromEntries(keys.map((k) => [k, rec[k]]));

/** Wait (bounded) until pred() holds; fail with `what` otherwise. */
async function waitFor(pred, what, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) assert.fail(`timeout after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

describe(`JS SDK 0.28.1 against ${OURS_MODE}`, { timeout: 180000 }, () => {
  let server;
  let pb;
  let data;
  const listName = (id) => data.lists.find((l) => l.id === id).name;

  before(async () => {
    server = await startOurs({ port: PORT });
    data = await seed(server, buildDataset());
    pb = new PocketBase(server.url);
    // Tests here issue overlapping requests on purpose; the SDK would otherwise
    // auto-cancel duplicates.
    pb.autoCancellation(false);
    // Our server authenticates agent writes with X-LUI-Token; in self-check mode the
    // same hook carries PocketBase's superuser Authorization header instead.
    pb.beforeSend = (url, options) => {
      options.headers = { ...options.headers, ...server.writeHeaders };
      return { url, options };
    };
  }, { timeout: 120000 }); // servers start in <30 s each, seeding takes ~1 s

  after(async () => {
    try { await pb?.realtime.unsubscribe(); } catch { /* server may be gone */ }
    await server?.stop();
  }, { timeout: 30000 });

  it('getList with pb.filter, sort and expand', async () => {
    const filter = pb.filter('list.name = {:name} && points >= {:min}', { name: 'To Do', min: 50 });
    const expected = data.cards
      .filter((c) => listName(c.list) === 'To Do' && c.points >= 50)
      .sort((a, b) => b.points - a.points || byId(a, b));
    assert.ok(expected.length > 10, 'dataset should give more than one page');
    const res = await pb.collection('cards').getList(1, 10, { filter, sort: '-points,id', expand: 'list' });
    assert.equal(res.page, 1);
    assert.equal(res.perPage, 10);
    assert.equal(res.totalItems, expected.length);
    assert.equal(res.totalPages, Math.ceil(expected.length / 10));
    assert.deepEqual(res.items.map((r) => r.id), expected.slice(0, 10).map((c) => c.id));
    for (const [i, rec] of res.items.entries()) {
      assert.deepEqual(pick(rec, CARD_FIELDS), expected[i]);
      assert.equal(rec.collectionName, 'cards');
      assert.equal(rec.expand.list.id, rec.list);
      assert.equal(rec.expand.list.name, 'To Do');
      assert.match(rec.created, WIRE_DATE);
      assert.match(rec.updated, WIRE_DATE);
    }
  });

  it('getList with a quoted string param and skipTotal', async () => {
    const expected = data.cards.filter((c) => c.title.includes('"')).sort(byId);
    const res = await pb.collection('cards').getList(1, 50, {
      filter: pb.filter('title ~ {:q}', { q: '"' }), sort: 'id', skipTotal: true,
    });
    assert.equal(res.totalItems, -1);
    assert.equal(res.totalPages, -1);
    assert.deepEqual(res.items.map((r) => r.id), expected.map((c) => c.id));
  });

  it('pb.filter with a Date param and fields', async () => {
    // The SDK formats a Date as "YYYY-MM-DD HH:MM:SS.sssZ", the wire format, so the
    // comparison is the same string comparison the server does.
    const since = new Date('2030-01-01T00:00:00Z');
    const expected = data.cards.filter((c) => c.due_date > '2030-01-01 00:00:00.000Z').sort(byId);
    assert.ok(expected.length > 0);
    const res = await pb.collection('cards').getList(1, 500, {
      filter: pb.filter('due_date > {:since}', { since }), sort: 'id', fields: 'id,due_date',
    });
    assert.equal(res.totalItems, expected.length);
    assert.deepEqual(res.items, expected.map((c) => ({ id: c.id, due_date: c.due_date })));
  });

  it('getFullList pages through every matching record', async () => {
    const expected = data.cards.filter((c) => c.done).sort(byId);
    const all = await pb.collection('cards').getFullList({ filter: 'done = true', sort: 'id', batch: 40 });
    assert.equal(all.length, expected.length);
    assert.deepEqual(all.map((r) => pick(r, CARD_FIELDS)), expected);
  });

  it('getFullList of lists with back-relation expand', async () => {
    const lists = await pb.collection('lists').getFullList({ sort: 'position,id', expand: 'cards_via_list' });
    assert.deepEqual(lists.map((l) => l.name), [...data.lists].sort((a, b) => a.position - b.position).map((l) => l.name));
    for (const l of lists) {
      const expectedIds = data.cards.filter((c) => c.list === l.id).map((c) => c.id).sort();
      const got = (l.expand?.cards_via_list || []).map((c) => c.id).sort();
      assert.deepEqual(got, expectedIds, `cards_via_list of ${l.name}`);
    }
  });

  it('getFirstListItem', async () => {
    const expected = data.cards.filter((c) => c.title === 'say "hi"').sort(byId)[0];
    const rec = await pb.collection('cards').getFirstListItem(pb.filter('title = {:t}', { t: 'say "hi"' }), { sort: 'id' });
    assert.deepEqual(pick(rec, CARD_FIELDS), expected);
  });

  it('getOne with expand of a multi relation keeps order', async () => {
    const card = data.cards.find((c) => c.assignees.length >= 3);
    const rec = await pb.collection('cards').getOne(card.id, { expand: 'assignees,list' });
    assert.deepEqual(pick(rec, CARD_FIELDS), card);
    assert.deepEqual(rec.expand.assignees.map((m) => m.id), card.assignees);
    assert.deepEqual(rec.expand.assignees.map((m) => m.name),
      card.assignees.map((id) => data.members.find((m) => m.id === id).name));
    assert.equal(rec.expand.list.name, listName(card.list));
  });

  it('getOne of a missing id rejects with a 404 ClientResponseError', async () => {
    await assert.rejects(pb.collection('cards').getOne('zzzzzzzzzzzzzzz'), (err) => {
      assert.ok(err instanceof ClientResponseError, `expected ClientResponseError, got ${err}`);
      assert.equal(err.status, 404);
      assert.equal(err.response.status, 404);
      assert.deepEqual(err.response.data, {});
      return true;
    });
  });

  it('create, update, delete round trip', async () => {
    const input = {
      id: 'sdkroundtrip001',
      title: 'SDK round trip ✓',
      description: 'made by sdk.test.mjs',
      list: data.lists[1].id,
      due_date: '2031-02-03 04:05:06.789Z',
      due_day: '2031-02-03',
      priority: 'high',
      labels: ['docs', 'bug'],
      assignees: [data.members[2].id, data.members[0].id],
      points: 13,
      estimate: 2.5,
      done: false,
      position: 1.25,
      meta: { source: 'sdk', nested: { ok: true, list: [1, 'two', null] } },
    };
    const created = await pb.collection('cards').create(input);
    assert.deepEqual(pick(created, CARD_FIELDS), input);
    assert.equal(created.collectionName, 'cards');
    assert.match(created.created, WIRE_DATE);
    assert.equal(created.created, created.updated);

    const fetched = await pb.collection('cards').getOne(input.id);
    assert.deepEqual(pick(fetched, CARD_FIELDS), input);

    const updated = await pb.collection('cards').update(input.id, { title: 'SDK renamed', done: true, labels: [] });
    assert.deepEqual(pick(updated, CARD_FIELDS), { ...input, title: 'SDK renamed', done: true, labels: [] });
    assert.equal(updated.created, created.created);
    assert.ok(updated.updated >= created.updated);

    const count = await pb.collection('cards').getList(1, 1, { filter: 'title = "SDK renamed"' });
    assert.equal(count.totalItems, 1);

    assert.equal(await pb.collection('cards').delete(input.id), true);
    await assert.rejects(pb.collection('cards').getOne(input.id), (err) => err instanceof ClientResponseError && err.status === 404);
    await assert.rejects(pb.collection('cards').delete(input.id), (err) => err instanceof ClientResponseError && err.status === 404);
  });

  it('realtime subscribe("*") receives create, update and delete with the full record', async () => {
    const events = [];
    const unsubscribe = await pb.collection('cards').subscribe('*', (e) => events.push(e));
    try {
      const input = {
        id: 'sdkrealtime0001',
        title: 'realtime card',
        description: '',
        list: data.lists[0].id,
        due_date: '',
        due_day: '',
        priority: 'low',
        labels: ['feature'],
        assignees: [data.members[3].id],
        points: 7,
        estimate: 0,
        done: false,
        position: 3,
        meta: null,
      };
      await pb.collection('cards').create(input);
      await waitFor(() => events.length >= 1, 'the create event');
      await pb.collection('cards').update(input.id, { title: 'realtime card v2', points: 8 });
      await waitFor(() => events.length >= 2, 'the update event');
      await pb.collection('cards').delete(input.id);
      await waitFor(() => events.length >= 3, 'the delete event');
      await sleep(300); // catch duplicates or stray events

      assert.deepEqual(events.map((e) => [e.action, e.record.id]), [
        ['create', input.id], ['update', input.id], ['delete', input.id],
      ]);
      const v2 = { ...input, title: 'realtime card v2', points: 8 };
      assert.deepEqual(pick(events[0].record, CARD_FIELDS), input);
      assert.deepEqual(pick(events[1].record, CARD_FIELDS), v2);
      assert.deepEqual(pick(events[2].record, CARD_FIELDS), v2);
      for (const e of events) {
        assert.equal(e.record.collectionName, 'cards');
        assert.match(e.record.created, WIRE_DATE);
        assert.match(e.record.updated, WIRE_DATE);
      }
    } finally {
      await unsubscribe();
    }
  });

  it('realtime subscribe with a filter option receives only the changes it matches', async () => {
    const events = [];
    const unsubscribe = await pb.collection('cards').subscribe('*', (e) => events.push(e), {
      filter: 'points >= 40 && title ~ "filtered"',
    });
    try {
      const base = { list: data.lists[0].id, priority: 'low' };
      await pb.collection('cards').create({ ...base, id: 'sdkfiltered0001', title: 'filtered small', points: 1 });
      await pb.collection('cards').create({ ...base, id: 'sdkfiltered0002', title: 'filtered big', points: 41 });
      await pb.collection('cards').create({ ...base, id: 'sdkfiltered0003', title: 'other big', points: 42 });
      await waitFor(() => events.length >= 1, 'the matching create');
      await sleep(300); // catch events that should not come
      assert.deepEqual(events.map((e) => [e.action, e.record.id]), [['create', 'sdkfiltered0002']]);
    } finally {
      await unsubscribe();
      for (const id of ['sdkfiltered0001', 'sdkfiltered0002', 'sdkfiltered0003']) {
        await pb.collection('cards').delete(id);
      }
    }
  });

  it('a file upload (FormData: text parts, one @jsonPayload per object value) stores every value', async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    const created = await pb.collection('members').create({
      name: 'SDK Uploader',
      website: null,
      email: null,
      avatar: new File([png], 'me.png', { type: 'image/png' }),
    });
    try {
      assert.equal(created.name, 'SDK Uploader');
      assert.equal(created.website, '');
      assert.equal(created.email, '');
      assert.match(created.avatar, /^me[a-z0-9_]+\.png$/); // a stem kept, a random part added
      const res = await fetch(pb.files.getURL(created, created.avatar));
      assert.equal(res.status, 200);
      assert.deepEqual(new Uint8Array(await res.arrayBuffer()), png);
    } finally {
      await pb.collection('members').delete(created.id);
    }
  });
});
