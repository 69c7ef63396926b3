// The list queries run against PocketBase and ours. Each row is
//   {name, collection, params, expect?}
// `params` become the query string. `expect` is the status PocketBase must give
// (default 200); it guards the rows themselves (a typo that makes PocketBase answer
// 400 would otherwise compare "equal" for the wrong reason). For a non-200 row the
// status, the body's `status` and the keys of its `data` are compared, not the
// message (ours says what is wrong and where; PocketBase's is generic).
//
// Rules for rows: every 200 row sorts with a unique tiebreaker last (`id`, or
// `@rowid`), never sorts or filters on created/updated, and uses only time macros in
// ways that are stable for the dataset (its dates are years away from today).
import { buildDataset } from './lib/dataset.mjs';

const D = buildDataset();
const L = (name, n = 0) => D.lists.filter((l) => l.name === name)[n].id;
const M = (name) => D.members.find((m) => m.name === name).id;
const someDate = D.cards.find((c) => c.due_date !== '').due_date;
const cardWithMeta = D.cards.find((c) => c.meta && c.meta.a);

const rows = [];
// c(): cards, l(): lists, m(): members. `sort` defaults to "id" so that every row
// has a deterministic order unless it sets its own sort.
const add = (collection) => (name, params = {}, expect = 200) => {
  const p = { ...params };
  if (expect === 200 && p.sort === undefined) p.sort = 'id';
  rows.push({ name, collection, params: p, expect });
};
const c = add('cards');
const l = add('lists');
const m = add('members');

// ---------------------------------------------------------------- full scans, paging
l('lists: all', { perPage: 100 });
m('members: all', { perPage: 100 });
c('cards: all (perPage 500)', { perPage: 500 });
c('cards: default perPage');
c('paging: page 2 of 50', { page: 2, perPage: 50 });
c('paging: last partial page', { page: 4, perPage: 80 });
c('paging: page beyond the end', { page: 7, perPage: 50 });
c('paging: page=0 becomes 1', { page: 0, perPage: 10 });
c('paging: negative page becomes 1', { page: -3, perPage: 10 });
c('paging: perPage=0 becomes default', { perPage: 0 });
c('paging: negative perPage becomes default', { perPage: -5 });
c('paging: perPage>1000 is clamped', { perPage: 5000 });
c('paging: perPage=1000', { perPage: 1000 });
c('paging: perPage=1 last page', { perPage: 1, page: 300 });
c('paging: perPage=7 page 13', { perPage: 7, page: 13 });
c('skipTotal=1', { skipTotal: 1, perPage: 20 });
c('skipTotal=true page 2', { skipTotal: 'true', page: 2, perPage: 20 });
c('skipTotal=0 counts', { skipTotal: 0, perPage: 20 });
c('skipTotal=false with filter', { skipTotal: 'false', filter: 'done = true', perPage: 10 });
c('skipTotal with filter and last page', { skipTotal: 1, filter: 'points > 50', page: 3, perPage: 40 });
c('empty filter is no filter', { filter: '', perPage: 10 });
c('unknown query params are ignored', { perPage: 5, bogus: 'x' });

// ---------------------------------------------------------------- sorts
c('sort: -id', { sort: '-id', perPage: 40 });
c('sort: title,id', { sort: 'title,id', perPage: 300 });
c('sort: -title,id', { sort: '-title,id', perPage: 60 });
c('sort: +title,-id', { sort: '+title,-id', perPage: 60 });
c('sort: -points,id', { sort: '-points,id', perPage: 60 });
c('sort: estimate,-position,id', { sort: 'estimate,-position,id', perPage: 80 });
c('sort: relation path list.name,position,id', { sort: 'list.name,position,id', perPage: 300 });
c('sort: relation path -list.position,id', { sort: '-list.position,id', perPage: 100 });
c('sort: due_date,id (empty dates first)', { sort: 'due_date,id', perPage: 150 });
c('sort: -due_date,id', { sort: '-due_date,id', perPage: 150 });
c('sort: due_day,id', { sort: 'due_day,id', perPage: 150 });
c('sort: priority is a string sort', { sort: 'priority,id', perPage: 300 });
c('sort: done,-points,id', { sort: 'done,-points,id', perPage: 100 });
c('sort: @rowid (insertion order)', { sort: '@rowid', perPage: 300 });
c('sort: -@rowid', { sort: '-@rowid', perPage: 50 });
c('sort: json path meta.a.b,id', { sort: 'meta.a.b,id', perPage: 300 });
c('sort: spaces around keys', { sort: ' -points , id ', perPage: 30 });
c('sort: eight keys', { sort: 'done,priority,points,estimate,position,due_date,title,id', perPage: 100 });
l('lists sort: name,id (two "To Do")', { sort: 'name,id' });
l('lists sort: -position', { sort: '-position' });
m('members sort: email,id (empties first)', { sort: 'email,id' });
m('members sort: -website,name', { sort: '-website,name' });

// ---------------------------------------------------------------- comparison operators
c('op: = number', { filter: 'points = 42', perPage: 100 });
c('op: = 0 on an integer field', { filter: 'points = 0', perPage: 100 });
c('op: != number', { filter: 'points != 50', perPage: 300 });
c('op: > number', { filter: 'points > 90', perPage: 100 });
c('op: >= number', { filter: 'points >= 90', perPage: 100 });
c('op: < number', { filter: 'points < 10', perPage: 100 });
c('op: <= number', { filter: 'points <= 10', perPage: 100 });
c('op: float literal', { filter: 'estimate > 12.5 && estimate < 30', perPage: 100 });
c('op: = 0', { filter: 'estimate = 0', perPage: 300 });
c('op: negative literal', { filter: 'position > -1 && points > 95', perPage: 100 });
c('op: string literal against number (affinity)', { filter: "points > '50'", perPage: 300 });
c('op: literal on the left', { filter: '50 < points && "To Do" != title', perPage: 300 });
c('op: = text', { filter: 'title = "To Do"', perPage: 100 });
c('op: != text', { filter: 'title != "To Do"', perPage: 300 });
c('op: ~ contains', { filter: 'title ~ "alpha"', perPage: 300 });
c('op: ~ is ASCII case-insensitive', { filter: 'title ~ "ALPHA"', perPage: 300 });
c('op: !~', { filter: 'title !~ "a"', perPage: 300 });
c('op: < text', { filter: 'title < "E"', perPage: 300 });
c('op: >= text', { filter: 'title >= "refactor"', perPage: 300 });
c('op: select =', { filter: 'priority = "urgent"', perPage: 300 });
c('op: select !=', { filter: 'priority != "none"', perPage: 300 });
c('op: select ~', { filter: 'priority ~ "ur"', perPage: 300 });
c('op: ?= on a single field', { filter: 'priority ?= "high"', perPage: 300 });
c('op: ?!= on a single field', { filter: 'points ?!= 50', perPage: 300 });
c('op: ?> on a single field', { filter: 'points ?> 95', perPage: 300 });
c('op: ?>= on a single field', { filter: 'points ?>= 99', perPage: 300 });
c('op: ?< on a single field', { filter: 'points ?< 2', perPage: 300 });
c('op: ?<= on a single field', { filter: 'points ?<= 1', perPage: 300 });
c('op: ?~ on a single field', { filter: 'title ?~ "beta"', perPage: 300 });
c('op: ?!~ on a single field', { filter: 'title ?!~ "a"', perPage: 300 });

// ---------------------------------------------------------------- null / true / false / "" 
c('null: description = ""', { filter: 'description = ""', perPage: 300 });
c('null: description = null', { filter: 'description = null', perPage: 300 });
c('null: description != ""', { filter: 'description != ""', perPage: 300 });
c('null: description != null', { filter: 'description != null', perPage: 300 });
c('null: due_date = null', { filter: 'due_date = null', perPage: 300 });
c('null: due_date != ""', { filter: 'due_date != ""', perPage: 300 });
c('null: "" = due_day (literal left)', { filter: '"" = due_day', perPage: 300 });
c('null: NULL keyword is case-insensitive', { filter: 'due_day = NULL', perPage: 300 });
c('null: points = null (0 is not empty)', { filter: 'points = null', perPage: 300 });
c('bool: done = true', { filter: 'done = true', perPage: 300 });
c('bool: done = false', { filter: 'done = false', perPage: 300 });
c('bool: done != true', { filter: 'done != true', perPage: 300 });
c('bool: done = TRUE (case-insensitive)', { filter: 'done = TRUE && points > 80', perPage: 300 });
c('bool: done = 1', { filter: 'done = 1 && points < 20', perPage: 300 });
c('bool: false = done (literal left)', { filter: 'false = done && priority = "high"', perPage: 300 });

// ---------------------------------------------------------------- && || precedence, groups, comments
c('prec: || then && (AND binds tighter)', { filter: 'priority = "high" || priority = "low" && done = true', perPage: 300 });
c('prec: parenthesised ||', { filter: '(priority = "high" || priority = "low") && done = true', perPage: 300 });
c('prec: && then ||', { filter: 'done = true && points > 50 || estimate = 0', perPage: 300 });
c('prec: && (||)', { filter: 'done = true && (points > 50 || estimate = 0)', perPage: 300 });
c('prec: nested groups', { filter: '((points > 10 && points < 20) || (points > 80 && (done = false || estimate > 20)))', perPage: 300 });
c('prec: three-way ||', { filter: 'priority = "urgent" || points = 100 || title = "To Do"', perPage: 300 });
c('comment: line comment between terms', { filter: 'points > 90 // only big ones\n&& done = true', perPage: 300 });
c('comment: trailing comment', { filter: 'done = true // the rest is ignored && points > 1000', perPage: 300 });
c('whitespace: tabs and newlines', { filter: '\n\tpoints > 90\n\t&&\tdone = false\n', perPage: 300 });
c('whitespace: no spaces around operators', { filter: 'points>90&&done=false', perPage: 300 });

// ---------------------------------------------------------------- quoting, escapes, LIKE
c('quote: escaped double quote', { filter: 'title = "say \\"hi\\""', perPage: 300 });
c('quote: escaped single quote', { filter: "title = 'it\\'s fine'", perPage: 300 });
c('quote: single quote inside double', { filter: 'title = "it\'s fine"', perPage: 300 });
c('quote: double quote inside single', { filter: "title = 'say \"hi\"'", perPage: 300 });
c('quote: ~ a double quote', { filter: "title ~ '\"' || description ~ '\"'", perPage: 300 });
c('quote: trailing space is significant', { filter: 'title = "trailing space "', perPage: 300 });
c('like: % makes a raw pattern (starts with)', { filter: 'title ~ "50%"', perPage: 300 });
c('like: raw pattern ends with', { filter: 'title ~ "%done"', perPage: 300 });
c('like: raw pattern with _ wildcard', { filter: 'title ~ "%a_b%"', perPage: 300 });
c('like: _ alone is escaped (contains _)', { filter: 'title ~ "_"', perPage: 300 });
c('like: escaped \\_ inside a raw pattern', { filter: 'title ~ "%\\_%"', perPage: 300 });
c('like: \\% without raw % is literal', { filter: 'title ~ "0\\%"', perPage: 300 });
c('like: single backslash before a letter', { filter: 'title ~ "back\\slash"', perPage: 300 });
c('like: double backslash in a literal', { filter: 'title ~ "\\\\"', perPage: 300 });
c('like: backslash-t in a literal', { filter: 'description ~ "C:\\temp"', perPage: 300 });
c('like: two backslashes before a letter', { filter: 'description ~ "C:\\\\temp"', perPage: 300 });
c('eq: escaped backslash decodes to one', { filter: 'title = "a_b%c\\\\d"', perPage: 300 });
c('eq: unknown escape keeps its backslash', { filter: 'title = "a_b%c\\d"', perPage: 300 });
c('eq: escaped other quote decodes', { filter: "title != 'x\\\"y' && title != \"it\\'s\"", perPage: 300 });
c('like: % in a list name', { filter: 'list.name ~ "Backlog 100%"', perPage: 300 });
c('like: !~ with escaping', { filter: 'description !~ "10%" && description != ""', perPage: 300 });
c('like: percent alone', { filter: 'title ~ "%"', perPage: 300 });
c('unicode: ~ is not case-insensitive beyond ASCII', { filter: 'title ~ "ünïcödé"', perPage: 300 });
c('unicode: exact unicode match', { filter: 'title = "Ünïcödé straße"', perPage: 300 });
c('unicode: CJK contains', { filter: 'title ~ "日本語"', perPage: 300 });
c('unicode: emoji contains', { filter: 'title ~ "🎉"', perPage: 300 });
c('unicode: accented word', { filter: 'title ~ "café"', perPage: 300 });
c('text: multi-line description', { filter: 'description = "multi\nline\ntext"', perPage: 300 });

// ---------------------------------------------------------------- relations
c('rel: list.name = "To Do" (two lists)', { filter: 'list.name = "To Do"', perPage: 300 });
c('rel: list.name != "To Do"', { filter: 'list.name != "To Do"', perPage: 300 });
c('rel: list.position and color', { filter: 'list.position >= 3 && list.color != "red"', perPage: 300 });
c('rel: list = id', { filter: `list = "${L('Doing')}"`, perPage: 300 });
c('rel: list.id = id', { filter: `list.id = "${L('To Do', 1)}"`, perPage: 300 });
c('rel: list.name with quote and backslash', { filter: `list.name = 'Quote "q" and \\ back'`, perPage: 300 });
c('rel: via relation back to cards', { filter: 'list.cards_via_list.points ?> 99', perPage: 300 });
c('multi: assignees.name ?= (any)', { filter: 'assignees.name ?= "Alice"', perPage: 300 });
c('multi: assignees.name = (all)', { filter: 'assignees.name = "Alice"', perPage: 300 });
c('multi: assignees.name != (all)', { filter: 'assignees.name != "Alice"', perPage: 300 });
c('multi: assignees.name ?!= (any)', { filter: 'assignees.name ?!= "Alice"', perPage: 300 });
c('multi: assignees.email ?= ""', { filter: 'assignees.email ?= ""', perPage: 300 });
c('multi: assignees.name ?~', { filter: 'assignees.name ?~ "o"', perPage: 300 });
c('multi: assignees.name ~ (all)', { filter: 'assignees.name ~ "e"', perPage: 300 });
c('multi: assignees.id ?= id', { filter: `assignees.id ?= "${M('Bob')}"`, perPage: 300 });
c('multi: assignees ~ id (LIKE on the raw JSON)', { filter: `assignees ~ "${M('dave')}"`, perPage: 300 });
c('multi: assignees ?= id (raw JSON column)', { filter: `assignees ?= "${M('dave')}"`, perPage: 300 });
c('multi: assignees = "" (empty relation)', { filter: 'assignees = ""', perPage: 300 });
c('multi: assignees:length = 0', { filter: 'assignees:length = 0', perPage: 300 });
c('multi: assignees:length > 2', { filter: 'assignees:length > 2', perPage: 300 });
c('multi: labels:length = 1', { filter: 'labels:length = 1', perPage: 300 });
c('multi: labels:length >= 2', { filter: 'labels:length >= 2', perPage: 300 });
c('multi: labels:each = (all)', { filter: 'labels:each = "bug"', perPage: 300 });
c('multi: labels:each ?= (any)', { filter: 'labels:each ?= "bug"', perPage: 300 });
c('multi: labels:each != (all)', { filter: 'labels:each != "docs"', perPage: 300 });
c('multi: labels:each ?~', { filter: 'labels:each ?~ "ea"', perPage: 300 });
c('multi: labels ?= raw JSON column', { filter: 'labels ?= "bug"', perPage: 300 });
c('multi: labels ~ LIKE on raw JSON', { filter: 'labels ~ "bug"', perPage: 300 });
c('multi: labels = "" (empty select)', { filter: 'labels = ""', perPage: 300 });
c('multi: labels:each and assignees together', { filter: 'labels:each ?= "docs" && assignees.name ?= "Bob"', perPage: 300 });
c('lower: title:lower =', { filter: 'title:lower = "upper lower mixed"', perPage: 300 });
c('lower: title:lower ~', { filter: 'title:lower ~ "upper"', perPage: 300 });
c('lower: list.name:lower', { filter: 'list.name:lower = "to do"', perPage: 300 });
c('lower: assignees.name:lower ?=', { filter: 'assignees.name:lower ?= "alice"', perPage: 300 });
l('back: cards_via_list.done = true (all)', { filter: 'cards_via_list.done = true' });
l('back: cards_via_list.done ?= true (any)', { filter: 'cards_via_list.done ?= true' });
l('back: cards_via_list.points ?> 99', { filter: 'cards_via_list.points ?> 99' });
l('back: cards_via_list.priority ?= and color', { filter: 'cards_via_list.priority ?= "urgent" && color != "red"' });
l('back: cards_via_list.id ?= card id', { filter: `cards_via_list.id ?= "${D.cards[17].id}"` });
l('back: cards_via_list.assignees.name ?=', { filter: 'cards_via_list.assignees.name ?= "Bob"' });
l('back: cards_via_list.title ?~', { filter: 'cards_via_list.title ?~ "alpha"' });
l('back: cards_via_list.points < 101 (all; the empty list does not match)', { filter: 'cards_via_list.points < 101' });
m('back: cards_via_assignees.done ?= true', { filter: 'cards_via_assignees.done ?= true' });
m('back: cards_via_assignees.priority != (all)', { filter: 'cards_via_assignees.priority != "urgent"' });
m('back: cards_via_assignees.points >= 1 (all)', { filter: 'cards_via_assignees.points >= 1' });
m('back: cards_via_assignees.list.name ?=', { filter: 'cards_via_assignees.list.name ?= "Doing"' });
m('back: name:lower and website', { filter: 'name:lower ~ "e" && website != ""' });

// ---------------------------------------------------------------- datetimes
c('date: > wire literal', { filter: 'due_date > "2025-01-01 00:00:00.000Z"', perPage: 300 });
c('date: < wire literal (includes empty)', { filter: 'due_date < "2025-01-01 00:00:00.000Z"', perPage: 300 });
c('date: range', { filter: 'due_date >= "2030-06-15 12:00:00.000Z" && due_date <= "2031-01-01 00:00:00.000Z"', perPage: 300 });
c('date: date-only literal compares as text', { filter: 'due_date > "2030-01-01"', perPage: 300 });
c('date: exact value', { filter: `due_date = "${someDate}"`, perPage: 300 });
c('date: < @now', { filter: 'due_date < @now', perPage: 300 });
c('date: > @now', { filter: 'due_date > @now', perPage: 300 });
c('date: set and < @now', { filter: 'due_date != "" && due_date < @now', perPage: 300 });
c('date: >= @todayStart', { filter: 'due_date >= @todayStart', perPage: 300 });
c('date: <= @todayEnd and set', { filter: 'due_date <= @todayEnd && due_date != ""', perPage: 300 });
c('date: between @yesterday and @tomorrow (none)', { filter: 'due_date > @yesterday && due_date < @tomorrow', perPage: 300 });
c('date: > @yearEnd', { filter: 'due_date > @yearEnd', perPage: 300 });
c('date: < @yearStart', { filter: 'due_date < @yearStart && due_date != null', perPage: 300 });
c('date: > @monthStart || < @monthEnd', { filter: '(due_date > @monthStart || due_date < @monthEnd) && points > 70', perPage: 300 });
c('date: @year number macro', { filter: '@year > 2000 && points > 95', perPage: 300 });
c('date: @month/@day/@hour/@minute/@second/@weekday', { filter: '@month >= 1 && @day >= 1 && @hour >= 0 && @minute >= 0 && @second >= 0 && @weekday >= 0 && points < 5', perPage: 300 });
c('day: text date > "2028"', { filter: 'due_day > "2028"', perPage: 300 });
c('day: empty', { filter: 'due_day = ""', perPage: 300 });
c('day: text < @todayStart', { filter: 'due_day < @todayStart && due_day != ""', perPage: 300 });
c('day: ~ month', { filter: 'due_day ~ "-06-"', perPage: 300 });

// ---------------------------------------------------------------- json paths
c('json: meta.a.b > 10', { filter: 'meta.a.b > 10', perPage: 300 });
c('json: meta.a.b = 5', { filter: 'meta.a.b = 5', perPage: 300 });
c('json: meta.a.b = null', { filter: 'meta.a.b = null', perPage: 300 });
c('json: meta.a.b != null', { filter: 'meta.a.b != null', perPage: 300 });
c('json: meta.a.c = "Zed"', { filter: 'meta.a.c = "Zed"', perPage: 300 });
c('json: meta.a.c = ""', { filter: 'meta.a.c = ""', perPage: 300 });
c('json: meta.a.c ~', { filter: 'meta.a.c ~ "ze"', perPage: 300 });
c('json: array index meta.tags.0', { filter: 'meta.tags.0 = "red"', perPage: 300 });
c('json: meta.tags ~', { filter: 'meta.tags ~ "x_y"', perPage: 300 });
c('json: float meta.n > 50', { filter: 'meta.n > 50', perPage: 300 });
c('json: float equality', { filter: `meta.n = ${D.cards.find((x) => x.meta && typeof x.meta.n === 'number' && x.meta.n % 1 !== 0).meta.n}`, perPage: 300 });
c('json: deep path', { filter: 'meta.deep.k.v = 3', perPage: 300 });
c('json: missing key = null', { filter: 'meta.missing = null', perPage: 300 });
c('json: meta = null', { filter: 'meta = null', perPage: 300 });
c('json: meta != null', { filter: 'meta != null', perPage: 300 });
c('json: scalar string value', { filter: 'meta = "plain string"', perPage: 300 });
c('json: top-level array index', { filter: 'meta.2 = "z"', perPage: 300 });
c('json: value of a known record', { filter: `meta.a.b = ${JSON.stringify(cardWithMeta.meta.a.b)} && meta.a.c = ${JSON.stringify(cardWithMeta.meta.a.c)}`, perPage: 300 });

// ---------------------------------------------------------------- expand
c('expand: list', { expand: 'list', perPage: 20 });
c('expand: assignees', { expand: 'assignees', perPage: 40 });
c('expand: list,assignees with filter', { expand: 'list,assignees', filter: 'assignees:length >= 2', perPage: 30 });
c('expand: nested list.cards_via_list', { expand: 'list.cards_via_list', perPage: 3, fields: 'id,expand.list.id,expand.list.expand.cards_via_list.id' });
c('expand: unknown name is ignored', { expand: 'bogus', perPage: 5 });
c('expand: known and unknown', { expand: 'list,bogus', perPage: 5 });
c('expand: empty relation', { expand: 'assignees', filter: 'assignees:length = 0', perPage: 10 });
l('expand: cards_via_list from lists', { expand: 'cards_via_list', fields: 'id,name,expand.cards_via_list.id,expand.cards_via_list.title' });
l('expand: cards_via_list.assignees', { expand: 'cards_via_list.assignees', filter: 'name = "Doing"', fields: 'id,expand.cards_via_list.id,expand.cards_via_list.expand.assignees.name' });
m('expand: cards_via_assignees', { expand: 'cards_via_assignees', fields: 'id,expand.cards_via_assignees.id' });

// ---------------------------------------------------------------- fields
c('fields: id,title', { fields: 'id,title', perPage: 50 });
c('fields: *', { fields: '*', perPage: 50 });
c('fields: unknown key dropped', { fields: 'id,bogus', perPage: 10 });
c('fields: *,expand.list.name', { fields: '*,expand.list.name', expand: 'list', perPage: 10 });
c('fields: id,expand.list.name', { fields: 'id,expand.list.name', expand: 'list', perPage: 10 });
c('fields: expand.assignees.name', { fields: 'expand.assignees.name,id', expand: 'assignees', perPage: 20 });
c('fields: :excerpt(10,true)', { fields: 'id,description:excerpt(10,true)', perPage: 60 });
c('fields: :excerpt(20)', { fields: 'id,description:excerpt(20)', filter: 'description != ""', perPage: 60 });
c('fields: collectionName,id', { fields: 'collectionName,id', perPage: 5 });
c('fields: with spaces', { fields: ' id , title ', perPage: 5 });

// ---------------------------------------------------------------- more operators on multi-value paths
c('multi: assignees.name ?< (any)', { filter: 'assignees.name ?< "C"', perPage: 300 });
c('multi: assignees.name ?>= (any)', { filter: 'assignees.name ?>= "dave"', perPage: 300 });
c('multi: assignees.name ?<= (any)', { filter: 'assignees.name ?<= "Bob"', perPage: 300 });
c('multi: assignees.name ?> (any)', { filter: 'assignees.name ?> "Eve"', perPage: 300 });
c('multi: assignees.name ?!~ (any)', { filter: 'assignees.name ?!~ "e"', perPage: 300 });
c('multi: assignees.name > (all)', { filter: 'assignees.name > "B"', perPage: 300 });
c('multi: assignees.name !~ (all)', { filter: 'assignees.name !~ "o"', perPage: 300 });
c('multi: assignees.name <= (all)', { filter: 'assignees.name <= "Chloé"', perPage: 300 });
c('multi: labels:each >= (all)', { filter: 'labels:each >= "c"', perPage: 300 });
c('multi: labels:each ?< (any)', { filter: 'labels:each ?< "c"', perPage: 300 });
c('multi: labels:each ?!= (any)', { filter: 'labels:each ?!= "bug"', perPage: 300 });
c('multi: labels:each !~ (all)', { filter: 'labels:each !~ "u"', perPage: 300 });
c('multi: assignees.email:lower ?~', { filter: 'assignees.email:lower ?~ "EXAMPLE.COM"', perPage: 300 });

// ---------------------------------------------------------------- ids, columns on both sides, numbers
c('id: = id', { filter: `id = "${D.cards[42].id}"` });
c('id: ~ prefix', { filter: 'id ~ "c0%"', perPage: 300 });
c('id: > range', { filter: 'id > "cm" && id < "cp"', perPage: 300 });
c('id: list of ids with ||', { filter: D.cards.slice(10, 15).map((x) => `id = "${x.id}"`).join(' || '), perPage: 300 });
c('column vs column: points > estimate', { filter: 'points > estimate', perPage: 300 });
c('column vs column: both empty texts are equal', { filter: 'description = due_day', perPage: 300 });
c('column vs column: ~ column wraps it', { filter: 'title ~ meta.a.c && meta.a.c != ""', perPage: 300 });
c('column vs column: != between relation fields', { filter: 'list.color != list.name', perPage: 5 });
c('number: 42.0 equals 42', { filter: 'points = 42.0', perPage: 300 });
c('number: leading zero literal', { filter: 'points = 042', perPage: 300 });
c('number: != negative', { filter: 'points != -1 && estimate >= 0.5', perPage: 300 });
c('function: strftime year', { filter: "strftime('%Y', due_date) = '2030'", perPage: 300 });

// ---------------------------------------------------------------- more sort / expand / fields / paging variants
c('sort: title:lower,id', { sort: 'title:lower,id', perPage: 300 });
c('sort: labels:length,id', { sort: 'labels:length,-points,id', perPage: 300 });
c('sort: relation color then -name', { sort: 'list.color,-list.name,id', perPage: 300 });
c('expand: spaces around names', { expand: ' list , assignees ', perPage: 5 });
c('fields: expand.list.* wildcard', { fields: 'id,expand.list.*', expand: 'list', perPage: 5 });
c('fields: excerpt of a title', { fields: 'id,title:excerpt(6,true)', perPage: 60 });
c('err: perPage not a number', { perPage: 'abc' }, 400);
c('err: skipTotal not a boolean', { skipTotal: 'abc', perPage: 5 }, 400);
c('err: collectionName is not a filter field', { filter: 'collectionName = "cards"' }, 400);

// ---------------------------------------------------------------- errors (status only)
c('err: missing right operand', { filter: 'title =' }, 400);
c('err: a filter of only whitespace', { filter: '   ' }, 400);
c('err: a filter of only a comment', { filter: '// nothing' }, 400);
c('err: unterminated string', { filter: 'title = "abc' }, 400);
c('err: backslash escapes the closing quote', { filter: 'title ~ "\\"' }, 400);
c('err: unbalanced (', { filter: '(title = "a"' }, 400);
c('err: unbalanced )', { filter: 'title = "a")' }, 400);
c('err: unknown field', { filter: 'bogus = 1' }, 400);
c('err: unknown relation subfield', { filter: 'list.bogus = 1' }, 400);
c('err: == operator', { filter: 'title == "a"' }, 400);
c('err: trailing join', { filter: 'title = "a" &&' }, 400);
c('err: leading join', { filter: '&& title = "a"' }, 400);
c('err: \\r is not whitespace', { filter: 'title = "a"\r\n&& done = true' }, 400);
c('err: identifier ends with a dot', { filter: 'meta.a. = 1' }, 400);
c('err: unknown @macro', { filter: 'due_date > @bogus' }, 400);
c('err: over 200 expressions', { filter: Array.from({ length: 201 }, (_, i) => `points = ${i}`).join(' || ') }, 400);
c('err: filter over 3500 chars', { filter: `title = "${'x'.repeat(3600)}"` }, 400);
c('err: @request is superuser-only', { filter: '@request.auth.id = ""' }, 403);
c('err: @collection is superuser-only', { filter: '@collection.lists.name ?= "Done"' }, 403);
c('err: unknown sort field', { sort: 'bogus' }, 400);
c('err: unknown -sort field after a good one', { sort: 'id,-bogus' }, 400);
c('err: unknown relation sort field', { sort: 'list.bogus,id' }, 400);
c('err: page not a number', { page: 'abc' }, 400);
add('bogus')('err: unknown collection', { perPage: 1 }, 404);

export const QUERIES = rows;
