// The silent-200 corpus: bad writes that a real PocketBase 0.40.6 accepts with 200
// (or refuses with a 400 that does not say what is wrong), and that a2app's guard
// must refuse with one exact code naming the field.
//
// Row: {name, method, collection, id?, body, expect: {code, field, all?}}
//   method      'POST' creates; 'PATCH' updates the seeded record `id` (see SEED).
//   body        a JS value sent as JSON, or a string sent as-is (raw text): the
//               only way to send a body that is not a JSON object or not JSON.
//   expect      what a strict guard answers: the first (top-level) code and the
//               field it names (null: the body as a whole). `all` lists every
//               [code, field] the answer must carry, in body order (bundle rows).
//
// Every expectation was checked against crates/core/src/guard.rs (and the ref
// check in crates/core/src/store/sqlite.rs) before it was written down. The
// POST bodies carry every required field, so the only thing wrong with a row is
// the value it is named after.

/** Fixed ids of the records seeded into both servers before the rows run. */
export const IDS = {
  list: 'lsilent00000001',
  member: 'msilent00000001',
  card: 'csilent00000001',
  // well-formed (15 chars of [a-z0-9]) but no record has it, in any collection
  nobody: 'zzzzzzzzzzzzzzz',
};

/**
 * Seeded once into each server, in this order (targets of refs first). Values are
 * chosen so that a silent coercion is visible when the record is read back:
 * `done` is true (so "yes" -> false shows), `points` is 5 (so "7" -> 7 shows),
 * `position` is 2.5 (so true -> 1 shows), etc.
 */
export const SEED = {
  lists: [{ id: IDS.list, name: 'To Do', position: 0, color: 'gray' }],
  members: [{
    id: IDS.member, name: 'Alice', email: 'alice@example.com', website: 'https://alice.example.com', avatar: '',
  }],
  cards: [{
    id: IDS.card,
    title: 'Seeded card',
    description: 'seeded',
    list: IDS.list,
    due_date: '2026-07-30 10:00:00.000Z',
    due_day: '2026-07-30',
    priority: 'low',
    labels: ['bug'],
    assignees: [IDS.member],
    points: 5,
    estimate: 1.5,
    done: true,
    position: 2.5,
    meta: { k: 1 },
  }],
};

/** The status each guard code is answered with (crates/protocol/src/error.rs). */
export const CODE_STATUS = {
  unknown_field: 400,
  read_only_field: 400,
  required_field: 400,
  invalid_string: 400,
  invalid_text: 400,
  invalid_number: 400,
  invalid_boolean: 400,
  invalid_date: 400,
  invalid_daykey: 400,
  invalid_enum: 400,
  invalid_ref: 400,
  too_long: 400,
  out_of_range: 400,
  invalid_json: 400,
};

// Minimal valid create bodies; a POST row adds or overrides one thing. The test
// checks that each one alone is accepted by both servers.
export const BASES = {
  cards: { title: 'silent row', list: IDS.list },
  lists: { name: 'silent list' },
  members: { name: 'Silent Sam' },
};
const { cards: CARD, lists: LIST, members: MEMBER } = BASES;

const post = (name, collection, body, code, field) => ({ name, method: 'POST', collection, body, expect: { code, field } });
const patch = (name, collection, body, code, field) => {
  const id = { cards: IDS.card, lists: IDS.list, members: IDS.member }[collection];
  return { name, method: 'PATCH', collection, id, body, expect: { code, field } };
};
const card = (name, body, code, field) => patch(name, 'cards', body, code, field);

export const ROWS = [
  // --- unknown_field: PocketBase drops unknown keys without a word.
  post('typo on create: descripton', 'cards', { ...CARD, descripton: 'forgot an i' }, 'unknown_field', 'descripton'),
  card('typo on patch: titel', { titel: 'Renamed' }, 'unknown_field', 'titel'),
  card('typo: due (for due_date)', { due: '2026-08-01' }, 'unknown_field', 'due'),
  post('field of another entity: color on a card', 'cards', { ...CARD, color: 'red' }, 'unknown_field', 'color'),
  patch('field of another entity: email on a list', 'lists', { email: 'team@example.com' }, 'unknown_field', 'email'),
  post('pre-0.23 key: schema on a list', 'lists', { ...LIST, schema: [{ name: 'wip_limit', type: 'number' }] },
    'unknown_field', 'schema'),
  card('pre-0.8 key: @collectionName', { '@collectionName': 'cards' }, 'unknown_field', '@collectionName'),
  card('expand echoed back in a body', { expand: { list: { id: IDS.list, name: 'To Do' } } }, 'unknown_field', 'expand'),

  // --- read_only_field: server-managed keys; PocketBase ignores them.
  post('created on create', 'cards', { ...CARD, created: '2020-01-01 00:00:00.000Z' }, 'read_only_field', 'created'),
  card('updated on patch', { updated: '2020-01-01 00:00:00.000Z' }, 'read_only_field', 'updated'),
  card('collectionName with a wrong value', { collectionName: 'lists' }, 'read_only_field', 'collectionName'),
  post('collectionId with a wrong value', 'cards', { ...CARD, collectionId: 'pbc_0000000000' },
    'read_only_field', 'collectionId'),
  card('id changed on patch', { id: 'cother000000001' }, 'read_only_field', 'id'),

  // --- required_field
  post('missing title on create', 'cards', { list: IDS.list }, 'required_field', 'title'),
  post('missing list on create', 'cards', { title: 'orphan card' }, 'required_field', 'list'),
  post('missing name on create (lists)', 'lists', { position: 3 }, 'required_field', 'name'),
  card('title "" on patch', { title: '' }, 'required_field', 'title'),
  card('list null on patch', { list: null }, 'required_field', 'list'),
  patch('name null on patch (members)', 'members', { name: null }, 'required_field', 'name'),

  // --- invalid_string
  post('number for a string: title 123', 'cards', { ...CARD, title: 123 }, 'invalid_string', 'title'),
  card('object for a string: description', { description: { text: 'x' } }, 'invalid_string', 'description'),
  patch('list for a string: name ["Alice"]', 'members', { name: ['Alice'] }, 'invalid_string', 'name'),
  patch('bad email: "alice at example"', 'members', { email: 'alice at example' }, 'invalid_string', 'email'),
  patch('bad url: no scheme', 'members', { website: 'alice.example.com' }, 'invalid_string', 'website'),
  patch('bad url: ftp scheme', 'members', { website: 'ftp://files.example.com' }, 'invalid_string', 'website'),
  post('bad client id: uppercase', 'cards', { id: 'CSILENT00000002', ...CARD }, 'invalid_string', 'id'),
  post('bad client id: 3 chars', 'lists', { id: 'abc', ...LIST }, 'invalid_string', 'id'),
  post('file field given a filename string', 'members', { ...MEMBER, avatar: 'photo.png' }, 'invalid_string', 'avatar'),

  // --- too_long (schema max: cards.title 255, lists.name 100, members.name 80)
  post('title of 256 chars', 'cards', { ...CARD, title: 't'.repeat(256) }, 'too_long', 'title'),
  patch('list name of 101 chars', 'lists', { name: 'n'.repeat(101) }, 'too_long', 'name'),
  post('member name of 81 chars', 'members', { name: 'm'.repeat(81) }, 'too_long', 'name'),

  // --- invalid_number
  card('points "7"', { points: '7' }, 'invalid_number', 'points'),
  card('estimate "abc"', { estimate: 'abc' }, 'invalid_number', 'estimate'),
  card('position true', { position: true }, 'invalid_number', 'position'),
  card('points 3.5 (integer field)', { points: 3.5 }, 'invalid_number', 'points'),
  post('list position "2"', 'lists', { ...LIST, position: '2' }, 'invalid_number', 'position'),

  // --- invalid_text: control characters a person cannot see, which PocketBase stores
  post('a bell in a title', 'cards', { ...CARD, title: 'ring\u0007' }, 'invalid_text', 'title'),
  card('an escape sequence in a description', { description: 'gone\u001b[2K' }, 'invalid_text', 'description'),
  patch('a lone carriage return in a name', 'members', { name: 'Sam\rSmith' }, 'invalid_text', 'name'),

  // --- out_of_range (points 0..100, estimate >= 0, lists.position >= 0)
  card('points 101', { points: 101 }, 'out_of_range', 'points'),
  card('estimate -1', { estimate: -1 }, 'out_of_range', 'estimate'),
  post('list position -1', 'lists', { ...LIST, position: -1 }, 'out_of_range', 'position'),

  // --- invalid_boolean
  card('done "yes"', { done: 'yes' }, 'invalid_boolean', 'done'),
  card('done 1', { done: 1 }, 'invalid_boolean', 'done'),
  card('done "true"', { done: 'true' }, 'invalid_boolean', 'done'),

  // --- invalid_date: PocketBase stores "" for anything it cannot parse.
  card('due_date "tomorrow"', { due_date: 'tomorrow' }, 'invalid_date', 'due_date'),
  card('due_date "not-a-date"', { due_date: 'not-a-date' }, 'invalid_date', 'due_date'),
  card('due_date 1700000000 (epoch number)', { due_date: 1700000000 }, 'invalid_date', 'due_date'),
  card('due_date "2026-02-30"', { due_date: '2026-02-30' }, 'invalid_date', 'due_date'),
  post('due_date "31/07/2026" on create', 'cards', { ...CARD, due_date: '31/07/2026' }, 'invalid_date', 'due_date'),

  // --- invalid_daykey: due_day is plain text to PocketBase, so anything goes in.
  card('due_day "2026-7-31"', { due_day: '2026-7-31' }, 'invalid_daykey', 'due_day'),
  card('due_day "2026-07-31T00:00:00Z"', { due_day: '2026-07-31T00:00:00Z' }, 'invalid_daykey', 'due_day'),
  card('due_day "tomorrow"', { due_day: 'tomorrow' }, 'invalid_daykey', 'due_day'),
  card('due_day "2026-02-30"', { due_day: '2026-02-30' }, 'invalid_daykey', 'due_day'),

  // --- invalid_enum
  card('priority "asap" (unknown value)', { priority: 'asap' }, 'invalid_enum', 'priority'),
  card('priority "High" (wrong case)', { priority: 'High' }, 'invalid_enum', 'priority'),
  card('priority ["low","high"] (list for a single enum)', { priority: ['low', 'high'] }, 'invalid_enum', 'priority'),
  post('color "purple" on create', 'lists', { ...LIST, color: 'purple' }, 'invalid_enum', 'color'),
  card('labels ["bug","bogus"] (unknown value)', { labels: ['bug', 'bogus'] }, 'invalid_enum', 'labels'),
  card('labels ["bug","bug"] (duplicate)', { labels: ['bug', 'bug'] }, 'invalid_enum', 'labels'),
  card('labels "feature" (bare string)', { labels: 'feature' }, 'invalid_enum', 'labels'),

  // --- invalid_ref: malformed, well-formed but no record, record of the wrong entity
  card('list "nope" (malformed id)', { list: 'nope' }, 'invalid_ref', 'list'),
  card('list: id of no record', { list: IDS.nobody }, 'invalid_ref', 'list'),
  card('list: id of a member (wrong entity)', { list: IDS.member }, 'invalid_ref', 'list'),
  post('list: id of no record, on create', 'cards', { title: 'dangling', list: IDS.nobody }, 'invalid_ref', 'list'),
  card('assignees ["nope"] (malformed id)', { assignees: ['nope'] }, 'invalid_ref', 'assignees'),
  card('assignees: id of no record', { assignees: [IDS.member, IDS.nobody] }, 'invalid_ref', 'assignees'),
  card('assignees: id of a list (wrong entity)', { assignees: [IDS.list] }, 'invalid_ref', 'assignees'),
  card('assignees: bare id string', { assignees: IDS.member }, 'invalid_ref', 'assignees'),
  card('assignees: same id twice', { assignees: [IDS.member, IDS.member] }, 'invalid_ref', 'assignees'),

  // --- invalid_json: sent as raw text; no field to name.
  post('body is a JSON array', 'cards', `[{"title":"x","list":"${IDS.list}"}]`, 'invalid_json', null),
  post('body is malformed JSON', 'cards', `{"title": "x", "list": "${IDS.list}",`, 'invalid_json', null),
  card('body is a JSON string', '"done"', 'invalid_json', null),
  card('body has trailing garbage', '{"done": false} x', 'invalid_json', null),

  // --- one body, six problems: every one must be listed in one answer, in body
  // order, including the ref that only storage can check.
  {
    name: 'bundle: six violations in one create',
    method: 'POST',
    collection: 'cards',
    body: { title: 42, list: IDS.nobody, due_date: 'tomorrow', priority: 'asap', done: 'yes', bogus: 1 },
    expect: {
      code: 'invalid_string',
      field: 'title',
      all: [
        ['invalid_string', 'title'],
        ['invalid_ref', 'list'],
        ['invalid_date', 'due_date'],
        ['invalid_enum', 'priority'],
        ['invalid_boolean', 'done'],
        ['unknown_field', 'bogus'],
      ],
    },
  },
];
