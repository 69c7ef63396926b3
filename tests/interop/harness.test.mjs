// Unit checks of the harness itself (no servers): the dataset is deterministic and
// covers what the queries rely on, the schema translation follows the documented
// mapping, and the comparator ignores exactly what it should and nothing more.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, it } from 'node:test';
import { SCHEMA_PATH } from './lib/a2app.mjs';
import { canonical, firstDifference, normalizeList } from './lib/compare.mjs';
import { buildDataset } from './lib/dataset.mjs';
import { schemaToCollections, schemaToMigration } from './lib/schema-to-pb.mjs';
import { QUERIES } from './queries.mjs';

describe('dataset', () => {
  const d = buildDataset();

  it('is deterministic', () => {
    assert.equal(JSON.stringify(buildDataset()), JSON.stringify(d));
    assert.notEqual(JSON.stringify(buildDataset(1)), JSON.stringify(d));
  });

  it('has unique 15-char [a-z0-9] ids', () => {
    const ids = [...d.lists, ...d.members, ...d.cards].map((r) => r.id);
    assert.equal(new Set(ids).size, ids.length);
    for (const id of ids) assert.match(id, /^[a-z0-9]{15}$/);
  });

  it('covers the value classes the queries rely on', () => {
    const c = d.cards;
    assert.equal(c.length, 300);
    assert.equal(d.lists.filter((l) => l.name === 'To Do').length, 2);
    assert.ok(d.lists.some((l) => !c.some((x) => x.list === l.id)), 'a list without cards');
    const some = (pred, what) => assert.ok(c.some(pred), what);
    some((x) => x.description === '', 'empty description');
    some((x) => /[%_\\"']/.test(x.title), 'LIKE/quote specials in titles');
    some((x) => /[^\x00-\x7f]/.test(x.title), 'unicode titles');
    for (const p of ['none', 'low', 'medium', 'high', 'urgent']) some((x) => x.priority === p, `priority ${p}`);
    for (const n of [0, 1, 2, 3]) some((x) => x.labels.length === n, `${n} labels`);
    for (const n of [0, 1, 2]) some((x) => x.assignees.length === n, `${n} assignees`);
    some((x) => x.points === 0, 'points 0');
    some((x) => x.points === 100, 'points 100 (max)');
    some((x) => !Number.isInteger(x.estimate), 'float estimate');
    some((x) => x.due_date === '', 'empty due_date');
    some((x) => x.due_day === '', 'empty due_day');
    some((x) => x.meta === null, 'null meta');
    some((x) => Array.isArray(x.meta), 'array meta');
    some((x) => x.meta && x.meta.a && typeof x.meta.a.b === 'number', 'nested meta');
    for (const x of c) {
      assert.ok(x.points >= 0 && x.points <= 100 && Number.isInteger(x.points));
      assert.ok(x.estimate >= 0 && x.position >= 0);
      if (x.due_date) assert.match(x.due_date, /^(2019|202[0-4]|20(2[89]|3[0-3]))-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z$/);
      if (x.due_day) assert.match(x.due_day, /^\d{4}-\d\d-\d\d$/);
    }
  });
});

describe('schema-to-pb', () => {
  const schema = JSON.parse(fs.readFileSync(SCHEMA_PATH, 'utf8'));
  const cols = Object.fromEntries(schemaToCollections(schema).map((c) => [c.name, c]));
  const field = (c, n) => [...cols[c].fields, ...cols[c].relations].find((f) => f.name === n);

  it('maps every field type as documented', () => {
    assert.deepEqual(field('cards', 'title'), { name: 'title', required: true, type: 'text', max: 255 });
    assert.equal(field('members', 'email').type, 'email');
    assert.equal(field('members', 'website').type, 'url');
    assert.equal(field('cards', 'due_day').type, 'text');
    assert.deepEqual(field('cards', 'points'), { name: 'points', required: false, type: 'number', onlyInt: true, min: 0, max: 100 });
    assert.equal(field('cards', 'done').type, 'bool');
    assert.equal(field('cards', 'due_date').type, 'date');
    assert.equal(field('cards', 'priority').maxSelect, 1);
    assert.equal(field('cards', 'labels').maxSelect, 4);
    assert.deepEqual([field('cards', 'list').maxSelect, field('cards', 'list').target], [1, 'lists']);
    assert.deepEqual([field('cards', 'assignees').maxSelect, field('cards', 'assignees').target], [999, 'members']);
    assert.equal(field('cards', 'meta').type, 'json');
    assert.equal(field('members', 'avatar').type, 'file');
    assert.deepEqual(field('cards', 'created'), { name: 'created', type: 'autodate', onCreate: true, onUpdate: false });
    assert.deepEqual(field('cards', 'updated'), { name: 'updated', type: 'autodate', onCreate: true, onUpdate: true });
  });

  it('creates the same indexes', () => {
    assert.deepEqual(cols.cards.indexes, [
      'CREATE INDEX `idx_cards_list_position` ON `cards` (`list`, `position`)',
      'CREATE INDEX `idx_cards_priority_due_date` ON `cards` (`priority`, `due_date`)',
      'CREATE INDEX `idx_cards_done` ON `cards` (`done`)',
    ]);
  });

  it('emits a migration with open rules', () => {
    const js = schemaToMigration(schema);
    assert.match(js, /^\/\/ Generated/);
    assert.match(js, /"deleteRule":""/);
  });
});

describe('comparator', () => {
  const rec = (extra) => ({ id: 'a', created: 'x', updated: 'y', ...extra });

  it('drops created/updated at every record depth, keeps key order irrelevant', () => {
    const a = normalizeList({ page: 1, items: [rec({ n: 1, expand: { list: rec({}), many: [rec({ z: 1 })] } })] });
    const b = normalizeList({ items: [{ expand: { many: [{ z: 1, id: 'a', created: 'q' }], list: { id: 'a' } }, n: 1, id: 'a' }], page: 1 });
    assert.equal(canonical(a), canonical(b));
  });

  it('keeps array order and json content significant', () => {
    const a = normalizeList({ items: [rec({ labels: ['x', 'y'], meta: { created: 1 } })] });
    const b = normalizeList({ items: [rec({ labels: ['y', 'x'], meta: { created: 1 } })] });
    const c = normalizeList({ items: [rec({ labels: ['x', 'y'], meta: {} })] });
    assert.notEqual(canonical(a), canonical(b));
    assert.notEqual(canonical(a), canonical(c));
    assert.equal(firstDifference(a, b).index, 0);
  });

  it('reports page metadata and order differences', () => {
    assert.match(firstDifference({ page: 1, items: [] }, { page: 2, items: [] }).text, /^page:/);
    const d = firstDifference({ items: [{ id: 'a' }, { id: 'b' }] }, { items: [{ id: 'a' }, { id: 'c' }] });
    assert.deepEqual([d.index, /order or membership/.test(d.text)], [1, true]);
  });
});

describe('queries', () => {
  it('has at least 120 uniquely named rows with a deterministic order', () => {
    assert.ok(QUERIES.length >= 120, `${QUERIES.length} rows`);
    assert.equal(new Set(QUERIES.map((q) => q.name)).size, QUERIES.length);
    for (const q of QUERIES) {
      const text = `${q.params.filter || ''} ${q.params.sort || ''}`;
      assert.ok(!/\b(created|updated)\b/.test(text), `${q.name}: must not use created/updated`);
      if (q.expect === 200) {
        const keys = q.params.sort.split(',').map((s) => s.trim().replace(/^[-+]/, ''));
        assert.ok(['id', '@rowid', 'name', 'position'].includes(keys.at(-1)), `${q.name}: unique tiebreaker last`);
      }
    }
  });
});
