// Deterministic kanban dataset, seeded identically into both servers.
//
// Everything comes from one seeded PRNG, so two runs (and the two servers) see
// byte-identical input. Ids are supplied on create (15 chars of [a-z0-9], which
// PocketBase accepts); they start with a kind letter and are otherwise random so that
// `sort=id` and `sort=@rowid` (insertion order) give different orders.
//
// Dates are kept years away from "today" (2019-2024 and 2028-2033) so that filters on
// @now/@todayStart/@yearStart/... select the same rows whenever the suite runs
// within the next year or so.
import { request } from './proc.mjs';

/** mulberry32: tiny, well-known 32-bit PRNG; the seed fixes the whole dataset. */
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const SEED = 20261129;
const ALNUM = 'abcdefghijklmnopqrstuvwxyz0123456789';

const pad = (n, w = 2) => String(n).padStart(w, '0');

export function buildDataset(seed = SEED) {
  const rnd = mulberry32(seed);
  const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1)); // inclusive
  const pick = (arr) => arr[Math.floor(rnd() * arr.length)];
  const chance = (p) => rnd() < p;
  const usedIds = new Set();
  const makeId = (prefix) => {
    for (;;) {
      let id = prefix;
      while (id.length < 15) id += ALNUM[Math.floor(rnd() * ALNUM.length)];
      if (!usedIds.has(id)) { usedIds.add(id); return id; }
    }
  };
  const subset = (values, max) => {
    // random order on purpose: multi-value fields must keep the order they were given
    const pool = [...values];
    const out = [];
    const n = Math.min(max, pool.length);
    for (let i = 0; i < n; i++) out.push(pool.splice(Math.floor(rnd() * pool.length), 1)[0]);
    return out;
  };

  // --- lists: two named "To Do"; one ("Archive") never gets a card, one ("Done")
  // gets only done cards, for match-all vs any checks on cards_via_list.
  const listSpecs = [
    ['To Do', 0, 'gray'],
    ['Doing', 1, 'blue'],
    ['Done', 2, 'green'],
    ['To Do', 3, 'yellow'],
    ['Backlog 100%', 4, 'red'],
    ['snake_case_list', 5, 'gray'],
    ['Café ☕ Ünïcode', 6, 'blue'],
    ['Quote "q" and \\ back', 7, 'yellow'],
    ['Archive', 8, 'red'],
  ];
  const lists = listSpecs.map(([name, position, color]) => ({ id: makeId('l'), name, position, color }));
  const byListName = (n) => lists.filter((l) => l.name === n);

  // --- members: empty and non-empty email/website, unicode, quotes, %.
  const memberSpecs = [
    ['Alice', 'alice@example.com', 'https://alice.example.com'],
    ['Bob', '', ''],
    ['Chloé', 'chloe@example.org', ''],
    ['dave', 'dave@example.net', 'https://example.net/~dave'],
    ["Eve O'Neil", '', 'https://eve.example.com/profile?x=1'],
    ['Zoë 100%', 'zoe@example.com', ''],
  ];
  const members = memberSpecs.map(([name, email, website]) => ({ id: makeId('m'), name, email, website, avatar: '' }));

  // --- cards
  const specialTitles = [
    '50% done',
    '100% sure',
    'under_score_title',
    'back\\slash',
    'double \\\\ backslash',
    'say "hi"',
    "it's fine",
    'UPPER lower MiXeD',
    'Ünïcödé straße',
    '日本語のカード',
    'emoji 🎉 party',
    'percent % alone',
    'a_b%c\\d',
    'trailing space ',
    'To Do',
  ];
  const words = ['alpha', 'beta', 'gamma', 'delta', 'Fix', 'Add', 'Remove', 'refactor', 'login', 'API',
    'report', 'Bug', 'docs', 'café', 'résumé', 'naïve', 'cache', 'deploy', 'test', 'UI'];
  const descriptions = [
    'Simple description.',
    'Has a 10% discount',
    'snake_case and under_scores',
    'path C:\\temp\\file',
    'He said "yes" and \'no\'',
    'multi\nline\ntext',
    'ÀÉÎÕÜ accents',
    'tab\tseparated',
    'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.',
  ];
  const priorities = ['none', 'low', 'medium', 'high', 'urgent'];
  const labelValues = ['bug', 'feature', 'chore', 'docs'];
  const metaTags = ['red', 'green', 'blue', 'x_y', '50%'];

  const dateTime = () => {
    const year = chance(0.5) ? int(2019, 2024) : int(2028, 2033);
    return `${year}-${pad(int(1, 12))}-${pad(int(1, 28))} ${pad(int(0, 23))}:${pad(int(0, 59))}:${pad(int(0, 59))}.${pad(int(0, 999), 3)}Z`;
  };
  const day = () => {
    const year = chance(0.5) ? int(2019, 2024) : int(2028, 2033);
    return `${year}-${pad(int(1, 12))}-${pad(int(1, 28))}`;
  };
  const meta = (i) => {
    const r = rnd();
    if (r < 0.25) return null;
    if (r < 0.30) return {};
    if (r < 0.35) return [int(0, 9), int(0, 9), 'z'];
    if (r < 0.38) return 'plain string';
    if (r < 0.40) return int(0, 50);
    const m = { a: { b: int(0, 20), c: pick(['x', 'y', 'Zed', '']) }, tags: subset(metaTags, int(0, 3)) };
    if (chance(0.4)) m.n = int(0, 400) / 4; // exact binary fractions: no float noise
    if (chance(0.2)) m.a.b = null;
    if (chance(0.3)) m.deep = { k: { v: i % 7 } };
    return m;
  };

  const doneList = byListName('Done')[0];
  const cardLists = lists.filter((l) => l.name !== 'Archive');
  const cards = [];
  for (let i = 0; i < 300; i++) {
    const list = i < 8 ? cardLists[i % cardLists.length] : pick(cardLists);
    let title;
    if (i % 9 === 0) title = specialTitles[(i / 9) % specialTitles.length];
    else title = `${pick(words)} ${pick(words)} ${i % 40}`; // duplicates on purpose
    const labelsN = rnd();
    const assigneesN = rnd();
    cards.push({
      id: makeId('c'),
      title,
      description: chance(0.4) ? '' : pick(descriptions),
      list: list.id,
      due_date: chance(0.35) ? '' : dateTime(),
      due_day: chance(0.4) ? '' : day(),
      priority: i < priorities.length ? priorities[i] : pick(priorities), // every value appears
      labels: labelsN < 0.35 ? [] : labelsN < 0.7 ? subset(labelValues, 1) : subset(labelValues, int(2, 4)),
      assignees: assigneesN < 0.3 ? [] : assigneesN < 0.65 ? [pick(members).id] : subset(members.map((m) => m.id), int(2, 4)),
      points: i % 50 === 0 ? 0 : i % 50 === 1 ? 100 : int(0, 100),
      estimate: pick([0, int(1, 40), int(0, 400) / 8, int(0, 5000) / 100]),
      done: list.id === doneList.id ? true : chance(0.4),
      position: int(0, 10000) / 10,
      meta: meta(i),
    });
  }
  return { lists, members, cards };
}

/** The collections in creation order (targets of relations first). */
export const SEED_ORDER = ['lists', 'members', 'cards'];

/**
 * Create every record through the records API, in the same order on every server.
 * Throws on the first non-200 answer or if the echoed id differs.
 */
export async function seed(server, data = buildDataset()) {
  for (const collection of SEED_ORDER) {
    for (const rec of data[collection]) {
      const r = await request('POST', `${server.url}/api/collections/${collection}/records`, {
        headers: server.writeHeaders,
        json: rec,
      });
      if (r.status !== 200 || r.body?.id !== rec.id) {
        throw new Error(`seed ${server.kind} ${collection}/${rec.id}: ${r.status} ${r.text}`);
      }
    }
  }
  return data;
}
