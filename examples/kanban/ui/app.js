// The kanban board: lists as columns, cards in them; people and agents edit the
// same records at once, and every change arrives through the realtime stream.
//
// State is three maps of records as the API returns them. Every write goes
// through api.js; the board is redrawn from the maps after each change, from
// whatever source (this page's own writes, or anyone's through realtime).
// Beside them, the requests this page's person asked agents for, and their
// answers, which are drawn as text only and change nothing until applied.

import * as api from './api.js';

const state = {
  lists: new Map(),
  cards: new Map(),
  members: new Map(),
  /** Field definitions from describe: `{lists: {name: {...}}, cards: {...}}`. */
  fields: {},
  /** What the app may ask an agent for, from describe's `requests`, by name. */
  capabilities: new Map(),
  /** Requests to agents as the queue returns them, by id. */
  requests: new Map(),
};

const ui = {
  /** The card being dragged, if any; redraws wait until the drop. */
  dragging: null,
  redrawPending: false,
  /** Card ids created by someone else while the page was open, to highlight them. */
  fresh: new Set(),
  /** Titles of cards this page is creating now: their realtime echo is not news. */
  creating: new Set(),
};

const $ = (sel, root = document) => root.querySelector(sel);
const board = $('#board');

// ---------------------------------------------------------------- helpers

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function enumValues(entity, field, fallback) {
  return state.fields[entity]?.[field]?.values || fallback;
}

const byPosition = (a, b) => (a.position - b.position) || a.created.localeCompare(b.created) || a.id.localeCompare(b.id);

function sortedLists() {
  return [...state.lists.values()].sort(byPosition);
}

function cardsOf(listId) {
  return [...state.cards.values()].filter((c) => c.list === listId).sort(byPosition);
}

/** A position for a card placed at `index` among `listId`'s cards, the card itself left out. */
function positionAt(listId, index, cardId) {
  const others = cardsOf(listId).filter((c) => c.id !== cardId);
  const prev = others[index - 1];
  const next = others[index];
  if (prev && next) return (prev.position + next.position) / 2;
  if (prev) return prev.position + 1024;
  if (next) return next.position - 1024;
  return 1024;
}

/** The wire datetime (`2026-07-31 09:00:00.000Z`) as a Date, or null. */
function parseWire(s) {
  if (!s) return null;
  const d = new Date(s.replace(' ', 'T'));
  return Number.isNaN(d.getTime()) ? null : d;
}

const pad = (n) => String(n).padStart(2, '0');
const localDay = (d) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
const localTime = (d) => `${pad(d.getHours())}:${pad(d.getMinutes())}`;

function formatDue(d) {
  const now = new Date();
  const opts = { weekday: 'short', day: 'numeric', month: 'short' };
  if (d.getFullYear() !== now.getFullYear()) opts.year = 'numeric';
  let text = d.toLocaleDateString('en-GB', opts);
  if (d.getHours() || d.getMinutes()) text += ` ${localTime(d)}`;
  return text;
}

function dueState(card, d) {
  if (card.done) return 'done';
  const ms = d.getTime() - Date.now();
  if (ms < 0) return 'overdue';
  if (ms < 2 * 24 * 3600 * 1000) return 'soon';
  return 'later';
}

const capital = (s) => s.charAt(0).toUpperCase() + s.slice(1);

function initials(name) {
  return name.split(/\s+/).filter(Boolean).slice(0, 2).map((w) => w[0].toUpperCase()).join('') || '?';
}

let toastTimer;
function toast(message) {
  const t = $('#toast');
  t.textContent = message;
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, 6000);
}

function announce(message) {
  $('#announce').textContent = message;
}

function describeError(e) {
  if (!(e instanceof api.ApiError)) return e.message;
  const first = e.violations.find((v) => v.message)?.message;
  return first || e.message;
}

// ---------------------------------------------------------------- drawing

function requestRedraw() {
  if (ui.dragging) {
    ui.redrawPending = true;
    return;
  }
  draw();
}

function draw() {
  ui.redrawPending = false;
  const focusedCard = document.activeElement?.closest?.('.card')?.dataset.id;
  const lists = sortedLists();
  board.querySelector('.loading')?.remove();

  const wanted = new Set(lists.map((l) => l.id));
  for (const col of board.querySelectorAll('.column[data-list]')) {
    if (!wanted.has(col.dataset.list)) col.remove();
  }
  let before = board.firstElementChild;
  for (const list of lists) {
    let col = board.querySelector(`.column[data-list="${CSS.escape(list.id)}"]`);
    if (!col) col = makeColumn(list.id);
    fillColumn(col, list);
    if (col !== before) board.insertBefore(col, before);
    before = col.nextElementSibling;
  }
  // The list adder follows the last column; it is moved only when it must be,
  // since moving it would take the focus from a name being typed.
  let adder = board.querySelector('.add-list');
  if (!adder) adder = makeListAdder();
  if (before !== adder) board.insertBefore(adder, before);
  let welcome = board.querySelector('.welcome');
  if (lists.length === 0) {
    welcome ||= el('p', { class: 'welcome' },
      'This board is empty. Add a list to start; cards that agents add appear here as they arrive.');
    if (adder.nextElementSibling !== welcome) adder.after(welcome);
  } else {
    welcome?.remove();
  }

  if (focusedCard) board.querySelector(`.card[data-id="${CSS.escape(focusedCard)}"]`)?.focus({ preventScroll: false });
  // Requests name cards and offer to apply a priority: they follow the cards.
  drawRequests();
}

/** A column's frame: header, card area, quick-add form. Kept across redraws. */
function makeColumn(listId) {
  const titleId = `list-title-${listId}`;
  const cards = el('div', { class: 'cards', role: 'list', 'aria-labelledby': titleId });

  const input = el('textarea', { class: 'quick-title', name: 'title', rows: '2', placeholder: 'Card title', 'aria-label': 'New card title' });
  const error = el('p', { class: 'field-error', 'data-error-for': 'title', hidden: true });
  const form = el('form', { class: 'quick-add', hidden: true, novalidate: true },
    input, error,
    el('div', { class: 'quick-actions' },
      el('button', { type: 'submit', class: 'primary' }, 'Add card'),
      el('button', { type: 'button', class: 'quiet', onclick: () => closeQuickAdd(form) }, 'Cancel')));
  const open = el('button', { type: 'button', class: 'add-card', onclick: () => openQuickAdd(form, open) }, '+ Add a card');
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey) { ev.preventDefault(); form.requestSubmit(); }
    if (ev.key === 'Escape') { ev.preventDefault(); closeQuickAdd(form); }
  });
  form.addEventListener('submit', (ev) => { ev.preventDefault(); quickAdd(listId, form); });

  const column = el('section', { class: 'column', dataset: { list: listId }, 'aria-labelledby': titleId },
    el('header', { class: 'column-head' },
      el('h2', { id: titleId, class: 'column-title' }),
      el('span', { class: 'count' }),
      el('button', { type: 'button', class: 'icon-button', 'aria-label': 'Edit list', title: 'Edit list', onclick: () => openListDialog(listId) }, '⋯')),
    cards, form, open);
  // The whole column takes a drop, not only its cards.
  column.addEventListener('dragover', onDragOver);
  column.addEventListener('dragleave', onDragLeave);
  column.addEventListener('drop', onDrop);
  return column;
}

function fillColumn(col, list) {
  const cards = cardsOf(list.id);
  col.dataset.color = list.color || 'gray';
  $('.column-title', col).textContent = list.name;
  $('.count', col).textContent = String(cards.length);
  $('.count', col).setAttribute('aria-label', `${cards.length} card${cards.length === 1 ? '' : 's'}`);
  const area = $('.cards', col);
  area.replaceChildren(...cards.map(cardElement));
  if (!cards.length) area.append(el('p', { class: 'empty' }, 'No cards yet'));
}

function cardElement(card) {
  const due = parseWire(card.due_date);
  const priority = card.priority && card.priority !== 'none' ? card.priority : null;
  const labels = Array.isArray(card.labels) ? card.labels : [];
  const people = (card.assignees || []).map((id) => state.members.get(id)).filter(Boolean);
  const top = [
    priority && el('span', { class: `badge priority priority-${priority}`, title: 'Priority' }, capital(priority)),
    ...labels.map((l) => el('span', { class: `badge label label-${l}` }, l)),
  ].filter(Boolean);

  const done = el('input', { type: 'checkbox', class: 'done-box', 'aria-label': 'Done', title: 'Mark done', tabindex: '-1' });
  done.checked = !!card.done;
  done.addEventListener('click', (ev) => { ev.stopPropagation(); toggleDone(card.id); });

  const node = el('article', {
    class: `card${card.done ? ' is-done' : ''}${ui.fresh.has(card.id) ? ' fresh' : ''}`,
    role: 'listitem',
    tabindex: '0',
    draggable: 'true',
    dataset: { id: card.id },
    'aria-label': `${card.title}${card.done ? ' (done)' : ''}`,
    'aria-keyshortcuts': 'Enter Shift+ArrowLeft Shift+ArrowRight Shift+ArrowUp Shift+ArrowDown M D Delete',
  },
  top.length ? el('div', { class: 'card-badges' }, top) : null,
  el('div', { class: 'card-main' }, done, el('h3', { class: 'card-title' }, card.title)),
  (due || card.points || people.length || card.description)
    ? el('div', { class: 'card-meta' },
      due && el('span', { class: `due due-${dueState(card, due)}`, title: `Due ${due.toLocaleString()}` }, formatDue(due)),
      card.description ? el('span', { class: 'has-description', title: 'Has a description', 'aria-label': 'Has a description' }, '≡') : null,
      card.points ? el('span', { class: 'points', title: 'Points' }, `${card.points} pt${card.points === 1 ? '' : 's'}`) : null,
      people.length ? el('span', { class: 'people' }, people.map((m) => el('span', { class: 'avatar', title: m.name }, initials(m.name)))) : null)
    : null);
  node.addEventListener('click', () => openCardDialog(card.id));
  node.addEventListener('keydown', onCardKey);
  node.addEventListener('dragstart', onDragStart);
  node.addEventListener('dragend', onDragEnd);
  return node;
}

function makeListAdder() {
  const input = el('input', { name: 'name', placeholder: 'List name', autocomplete: 'off', 'aria-label': 'New list name' });
  const error = el('p', { class: 'field-error', 'data-error-for': 'name', hidden: true });
  const form = el('form', { class: 'add-list-form', hidden: true, novalidate: true },
    input, error,
    el('div', { class: 'quick-actions' },
      el('button', { type: 'submit', class: 'primary' }, 'Add list'),
      el('button', { type: 'button', class: 'quiet', onclick: () => { form.hidden = true; open.hidden = false; clearErrors(form); } }, 'Cancel')));
  const open = el('button', { type: 'button', class: 'add-list-button', onclick: () => { form.hidden = false; open.hidden = true; input.focus(); } }, '+ Add a list');
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') { form.hidden = true; open.hidden = false; clearErrors(form); open.focus(); }
  });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const lists = sortedLists();
    const position = lists.length ? Math.max(...lists.map((l) => l.position)) + 1 : 0;
    try {
      const list = await api.create('lists', { name: input.value, position });
      upsert('lists', list);
      input.value = '';
      announce(`Added list ${list.name}`);
      input.focus();
    } catch (e) {
      showErrors(form, e);
    }
  });
  return el('section', { class: 'add-list' }, open, form);
}

// ---------------------------------------------------------------- errors next to fields

function clearErrors(form) {
  for (const p of form.querySelectorAll('[data-error-for]')) {
    p.hidden = true;
    p.textContent = '';
  }
  for (const c of form.querySelectorAll('[aria-invalid]')) c.removeAttribute('aria-invalid');
}

/**
 * Puts each violation next to the control of its field (the same codes and
 * messages an agent gets); what has no control here goes on top of the form.
 * The person's input is left as typed.
 */
function showErrors(form, e) {
  clearErrors(form);
  const violations = e instanceof api.ApiError && e.violations.length
    ? e.violations
    : [{ field: e.field || '', message: describeError(e), code: e.code }];
  let firstControl = null;
  for (const v of violations) {
    const field = v.field || '';
    let slot = form.querySelector(`[data-error-for="${CSS.escape(field)}"]`);
    if (!slot || !field) slot = form.querySelector('[data-error-for=""]') || slot;
    if (!slot) { toast(v.message || describeError(e)); continue; }
    const line = field && !form.querySelector(`[data-error-for="${CSS.escape(field)}"]`) ? `${field}: ${v.message}` : v.message;
    slot.textContent = slot.textContent ? `${slot.textContent} ${line}` : line;
    slot.dataset.code = v.code || '';
    slot.hidden = false;
    const control = field && form.querySelector(`[name="${CSS.escape(field)}"]`);
    if (control) {
      control.setAttribute('aria-invalid', 'true');
      if (!slot.id) slot.id = `err-${form.id || 'f'}-${field}-${Math.random().toString(36).slice(2, 7)}`;
      control.setAttribute('aria-describedby', slot.id);
      firstControl ||= control;
    }
  }
  firstControl?.focus();
}

// ---------------------------------------------------------------- writes

function upsert(entity, record) {
  const map = state[entity];
  if (!map) return;
  map.set(record.id, record);
  requestRedraw();
}

function openQuickAdd(form, opener) {
  form.hidden = false;
  opener.hidden = true;
  $('textarea', form).focus();
}

function closeQuickAdd(form) {
  form.hidden = true;
  clearErrors(form);
  $('textarea', form).value = '';
  const opener = form.nextElementSibling;
  opener.hidden = false;
  opener.focus();
}

async function quickAdd(listId, form) {
  const input = $('textarea', form);
  clearErrors(form);
  const cards = cardsOf(listId);
  const position = cards.length ? cards[cards.length - 1].position + 1024 : 1024;
  const title = input.value.trim();
  ui.creating.add(title);
  try {
    const card = await api.create('cards', { title, list: listId, position });
    upsert('cards', card);
    input.value = '';
    input.focus();
    announce(`Added card ${card.title}`);
  } catch (e) {
    showErrors(form, e);
  } finally {
    ui.creating.delete(title);
  }
}

async function moveTo(cardId, listId, index) {
  const card = state.cards.get(cardId);
  if (!card) return;
  const position = positionAt(listId, index, cardId);
  if (card.list === listId && card.position === position) return;
  const before = card;
  state.cards.set(cardId, { ...card, list: listId, position });
  requestRedraw();
  try {
    const saved = await api.moveCard(cardId, listId, position);
    upsert('cards', saved);
    announce(`Moved ${saved.title} to ${state.lists.get(listId)?.name ?? 'another list'}`);
  } catch (e) {
    if (state.cards.get(cardId)?.position === position) state.cards.set(cardId, before);
    requestRedraw();
    toast(`Could not move “${card.title}”: ${describeError(e)}`);
  }
}

async function toggleDone(cardId) {
  const card = state.cards.get(cardId);
  if (!card) return;
  try {
    upsert('cards', await api.update('cards', cardId, { done: !card.done }));
  } catch (e) {
    toast(`Could not update “${card.title}”: ${describeError(e)}`);
  }
}

function confirmDelete(message) {
  const dialog = $('#confirm-dialog');
  $('#confirm-text').textContent = message;
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true });
  });
}

async function deleteCard(cardId) {
  const card = state.cards.get(cardId);
  if (!card) return false;
  if (!(await confirmDelete(`Delete the card “${card.title}”? This cannot be undone.`))) return false;
  try {
    await api.remove('cards', cardId);
    state.cards.delete(cardId);
    requestRedraw();
    announce(`Deleted ${card.title}`);
    return true;
  } catch (e) {
    toast(`Could not delete “${card.title}”: ${describeError(e)}`);
    return false;
  }
}

// ---------------------------------------------------------------- the card dialog

const cardDialog = $('#card-dialog');
const cardForm = $('#card-form');
let editing = null;

function fillChoices(container, name, values, checked, labelOf = (v) => v) {
  container.replaceChildren(...values.map((v) => {
    const box = el('input', { type: 'checkbox', name, value: v });
    box.checked = checked.includes(v);
    return el('label', { class: `choice choice-${name}-${v}` }, box, ' ', labelOf(v));
  }));
}

function openCardDialog(cardId, focus = 'title') {
  const card = state.cards.get(cardId);
  if (!card) return;
  editing = cardId;
  clearErrors(cardForm);
  const f = cardForm.elements;
  f.title.value = card.title;
  f.description.value = card.description || '';
  f.list.replaceChildren(...sortedLists().map((l) => el('option', { value: l.id }, l.name)));
  f.list.value = card.list;
  f.priority.replaceChildren(...enumValues('cards', 'priority', ['none', 'low', 'medium', 'high', 'urgent'])
    .map((p) => el('option', { value: p }, p === 'none' ? 'No priority' : capital(p))));
  f.priority.value = card.priority || 'none';
  const due = parseWire(card.due_date);
  f.due_date.value = due ? localDay(due) : '';
  f.due_time.value = due && (due.getHours() || due.getMinutes()) ? localTime(due) : '';
  f.points.value = card.points ? String(card.points) : '';
  f.done.checked = !!card.done;
  fillChoices($('#card-labels'), 'labels', enumValues('cards', 'labels', []), card.labels || []);
  const members = [...state.members.values()].sort((a, b) => a.name.localeCompare(b.name));
  $('#card-assignees-field').hidden = members.length === 0;
  fillChoices($('#card-assignees'), 'assignees', members.map((m) => m.id), card.assignees || [], (id) => state.members.get(id)?.name ?? id);
  $('#card-dialog-title').textContent = 'Edit card';
  $('#card-agent').hidden = !state.capabilities.has(PRIORITY);
  drawRequests();
  cardDialog.showModal();
  (f[focus] || f.title).focus();
}

/** The fields the person changed, in the API's vocabulary. */
function cardChanges(card) {
  const f = cardForm.elements;
  const out = {};
  const set = (k, v, old) => { if (JSON.stringify(v) !== JSON.stringify(old)) out[k] = v; };
  set('title', f.title.value, card.title);
  set('description', f.description.value, card.description || '');
  set('priority', f.priority.value, card.priority || 'none');
  set('done', f.done.checked, !!card.done);
  const checked = (name) => [...cardForm.querySelectorAll(`input[name="${name}"]:checked`)].map((b) => b.value);
  set('labels', checked('labels'), card.labels || []);
  if (!$('#card-assignees-field').hidden) set('assignees', checked('assignees'), card.assignees || []);
  // A number as typed: the app's guard, not this page, says what is wrong with it.
  const rawPoints = f.points.value.trim();
  const points = rawPoints === '' ? 0 : (Number.isFinite(Number(rawPoints)) ? Number(rawPoints) : rawPoints);
  set('points', points, card.points || 0);
  // The form shows the due date to the minute, in local time: compare it that way,
  // so saving another field never rewrites a due date the person did not touch.
  const old = parseWire(card.due_date);
  const shownDay = old ? localDay(old) : '';
  const shownTime = old && (old.getHours() || old.getMinutes()) ? localTime(old) : '';
  if (f.due_date.value !== shownDay || f.due_time.value !== shownTime) {
    let due = '';
    if (f.due_date.value) {
      const local = new Date(`${f.due_date.value}T${f.due_time.value || '00:00'}`);
      due = Number.isNaN(local.getTime()) ? f.due_date.value : local.toISOString();
    }
    out.due_date = due;
  }
  return out;
}

// Enter on a list chooser saves too, so "M, arrow, Enter" moves a card.
cardForm.addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && ev.target.tagName === 'SELECT') {
    ev.preventDefault();
    cardForm.requestSubmit();
  }
});

cardForm.addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const card = state.cards.get(editing);
  if (!card) { cardDialog.close(); return; }
  const changes = cardChanges(card);
  const newList = cardForm.elements.list.value;
  const moving = newList !== card.list;
  delete changes.list;
  clearErrors(cardForm);
  try {
    if (Object.keys(changes).length) upsert('cards', await api.update('cards', card.id, changes));
    if (moving) {
      const position = positionAt(newList, cardsOf(newList).length, card.id);
      upsert('cards', await api.moveCard(card.id, newList, position));
    }
    cardDialog.close();
    board.querySelector(`.card[data-id="${CSS.escape(card.id)}"]`)?.focus();
  } catch (e) {
    showErrors(cardForm, e);
  }
});

$('#card-delete').addEventListener('click', async () => {
  const id = editing;
  cardDialog.close();
  if (!(await deleteCard(id))) openCardDialog(id);
});

for (const dialog of [cardDialog, $('#list-dialog')]) {
  for (const b of dialog.querySelectorAll('[data-close]')) b.addEventListener('click', () => dialog.close());
}

cardDialog.addEventListener('close', () => {
  const id = editing;
  editing = null;
  drawRequests();
  if (id && !$('#confirm-dialog').open) board.querySelector(`.card[data-id="${CSS.escape(id)}"]`)?.focus();
});

// ---------------------------------------------------------------- the list dialog

const listDialog = $('#list-dialog');
const listForm = $('#list-form');
let editingList = null;

function openListDialog(listId) {
  const list = state.lists.get(listId);
  if (!list) return;
  editingList = listId;
  clearErrors(listForm);
  listForm.elements.name.value = list.name;
  const colors = enumValues('lists', 'color', ['gray']);
  $('#list-colors').replaceChildren(...colors.map((c) => {
    const radio = el('input', { type: 'radio', name: 'color', value: c });
    radio.checked = (list.color || 'gray') === c;
    return el('label', { class: `swatch swatch-${c}`, title: c }, radio, el('span', {}, capital(c)));
  }));
  listDialog.showModal();
  listForm.elements.name.focus();
}

listForm.addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const list = state.lists.get(editingList);
  if (!list) { listDialog.close(); return; }
  const changes = {};
  const name = listForm.elements.name.value;
  const color = listForm.querySelector('input[name="color"]:checked')?.value;
  if (name !== list.name) changes.name = name;
  if (color && color !== list.color) changes.color = color;
  try {
    if (Object.keys(changes).length) upsert('lists', await api.update('lists', list.id, changes));
    listDialog.close();
  } catch (e) {
    showErrors(listForm, e);
  }
});

$('#list-delete').addEventListener('click', async () => {
  const list = state.lists.get(editingList);
  if (!list) return;
  listDialog.close();
  const n = cardsOf(list.id).length;
  const message = n
    ? `Delete the list “${list.name}” and its ${n} card${n === 1 ? '' : 's'}? This cannot be undone.`
    : `Delete the list “${list.name}”?`;
  if (!(await confirmDelete(message))) return;
  try {
    // A card needs its list, so the app refuses to delete a list that still holds cards.
    for (const card of cardsOf(list.id)) {
      await api.remove('cards', card.id);
      state.cards.delete(card.id);
    }
    await api.remove('lists', list.id);
    state.lists.delete(list.id);
    requestRedraw();
    announce(`Deleted list ${list.name}`);
  } catch (e) {
    requestRedraw();
    toast(`Could not delete “${list.name}”: ${describeError(e)}`);
  }
});

// ---------------------------------------------------------------- asking an agent
//
// What the board may ask an agent for is what describe lists in `requests`;
// the board places two of them, a summary of the board (top bar) and a
// priority for a card (the card dialog), and draws any request it reads. An
// answer comes from outside the app: it is drawn as text, never as markup, and
// the board changes only when the person applies it through the records API.

const SUMMARY = 'summarise_board';
const PRIORITY = 'suggest_priority';
const OPEN = new Set(['pending', 'claimed']);
/** Later states win over earlier ones with the same `updated`. */
const STEP = { pending: 0, claimed: 1, done: 2, failed: 2, cancelled: 2 };
/** Answered or cancelled requests the panel keeps showing. */
const RECENT = 20;

const requestsPanel = $('#requests');
const requestsToggle = $('#requests-toggle');
/** Request items on screen, by id, with what they were drawn from: one map per list. */
const drawnRequests = { panel: new Map(), card: new Map() };

function setUpAsking(capabilities) {
  state.capabilities = new Map(capabilities.map((c) => [c.name, c]));
  if (!state.capabilities.size) return;
  requestsToggle.hidden = false;
  const summary = state.capabilities.get(SUMMARY);
  if (summary) {
    // A choice for each param with listed values (the summary's focus).
    const choices = Object.entries(summary.params || {}).filter(([, p]) => Array.isArray(p.enum) && p.enum.length);
    $('#ask-board-params').replaceChildren(...choices.map(([name, p]) => {
      const select = el('select', { name, 'aria-label': p.description || capital(name) },
        p.enum.map((v) => el('option', { value: String(v) }, capital(String(v)))));
      if (p.default !== undefined) select.value = String(p.default);
      return select;
    }));
    $('#ask-summary').textContent = summary.title;
    $('#ask-summary').title = summary.description;
    $('#ask-board').hidden = false;
  }
  const priority = state.capabilities.get(PRIORITY);
  if (priority) $('#card-suggest').title = priority.description;
}

function showRequests(open) {
  requestsPanel.hidden = !open;
  requestsToggle.setAttribute('aria-expanded', String(open));
}

/** Keeps the newest state of a request: realtime may bring an echo of what this page already has. */
function keepRequest(request) {
  const old = state.requests.get(request.id);
  if (old && (old.updated > request.updated || (old.updated === request.updated && STEP[old.status] > STEP[request.status]))) {
    return false;
  }
  state.requests.set(request.id, request);
  return true;
}

async function ask(capability, params) {
  try {
    const request = await api.askAgent(capability, params);
    keepRequest(request);
    drawRequests();
    return request;
  } catch (e) {
    toast(`Could not ask an agent: ${describeError(e)}`);
    return null;
  }
}

async function cancelAsk(id, node) {
  try {
    keepRequest(await api.cancelRequest(id));
    drawRequests();
  } catch (e) {
    toast(`Could not cancel the request: ${describeError(e)}`);
  }
  node.focus();
}

async function applyPriority(request, node) {
  const card = state.cards.get(request.params?.card);
  const priority = request.result?.priority;
  if (!card) return;
  try {
    upsert('cards', await api.update('cards', card.id, { priority }));
    // The open dialog shows the stored priority, so saving it later keeps it.
    if (editing === card.id) cardForm.elements.priority.value = priority;
    announce(`“${card.title}” now has priority ${capital(priority)}`);
  } catch (e) {
    toast(`Could not apply the priority to “${card.title}”: ${describeError(e)}`);
  }
  node.focus();
}

/** What a request is about, in words: its params, a card's id as its title. */
function requestSubject(request) {
  return Object.entries(request.params || {}).map(([name, value]) => {
    const card = typeof value === 'string' ? state.cards.get(value) : null;
    return `${capital(name)}: ${card ? `“${card.title}”` : (typeof value === 'string' ? value : JSON.stringify(value))}`;
  }).join(' · ');
}

function requestTitle(request) {
  return state.capabilities.get(request.capability)?.title || request.capability;
}

/** The status in words (`label`, then "by `agent`" when an agent took it). */
function requestStatus(request) {
  const agent = request.claimedBy || 'an agent';
  switch (request.status) {
    case 'pending': return { label: 'Waiting for an agent' };
    case 'claimed': return { label: 'Claimed', agent };
    case 'done': return { label: 'Answered', agent };
    case 'failed': return { label: 'Failed, reported', agent };
    case 'cancelled': return { label: 'Cancelled' };
    default: return { label: String(request.status) };
  }
}

const statusText = ({ label, agent }) => (agent ? `${label} by ${agent}` : label);

function formatWhen(wire) {
  const d = parseWire(wire);
  if (!d) return '';
  const time = localTime(d);
  return localDay(d) === localDay(new Date()) ? time : `${d.toLocaleDateString('en-GB', { day: 'numeric', month: 'short' })} ${time}`;
}

/** The answer, as text nodes only. */
function answerNodes(request, node) {
  if (request.status === 'failed') return [el('p', { class: 'request-failure' }, request.failure || '')];
  if (request.status !== 'done' || !request.result) return [];
  const result = request.result;
  if (request.capability === PRIORITY && typeof result.priority === 'string') {
    const priorities = enumValues('cards', 'priority', ['none', 'low', 'medium', 'high', 'urgent']);
    const known = priorities.includes(result.priority);
    const card = state.cards.get(request.params?.card);
    let action;
    if (!card) action = el('p', { class: 'request-note' }, 'The card is gone.');
    else if (!known) action = el('p', { class: 'request-note' }, 'This board has no such priority.');
    else if ((card.priority || 'none') === result.priority) action = el('p', { class: 'request-note' }, 'The card has this priority.');
    else {
      action = el('button', {
        type: 'button', class: 'primary', 'aria-label': `Apply priority ${capital(result.priority)} to “${card.title}”`,
        onclick: () => applyPriority(request, node),
      }, 'Apply');
    }
    return [
      el('p', { class: 'request-result' }, 'Suggested priority: ',
        el('span', { class: `badge priority${known ? ` priority-${result.priority}` : ''}`, 'data-priority': result.priority }, capital(result.priority))),
      typeof result.reason === 'string' ? el('p', { class: 'request-reason' }, result.reason) : null,
      el('div', { class: 'request-actions' }, action),
    ];
  }
  const entries = Object.entries(result);
  if (entries.length === 1 && typeof entries[0][1] === 'string') return [el('p', { class: 'request-result' }, entries[0][1])];
  return [el('dl', { class: 'request-result' }, entries.flatMap(([k, v]) => [
    el('dt', {}, k), el('dd', {}, typeof v === 'string' ? v : JSON.stringify(v)),
  ]))];
}

function fillRequest(node, request) {
  const status = requestStatus(request);
  const subject = requestSubject(request);
  node.dataset.status = request.status;
  node.dataset.capability = request.capability;
  node.setAttribute('aria-label', `${requestTitle(request)}${subject ? `, ${subject}` : ''}`);
  node.replaceChildren(...[
    el('div', { class: 'request-head' },
      el('span', { class: 'request-title' }, requestTitle(request)),
      el('time', { class: 'request-time', datetime: (parseWire(request.created) || new Date(0)).toISOString() }, formatWhen(request.created))),
    subject ? el('p', { class: 'request-subject' }, subject) : null,
    el('p', { class: `request-status status-${request.status}` },
      status.label, status.agent ? ' by ' : null, status.agent ? el('span', { class: 'request-agent' }, status.agent) : null),
    ...answerNodes(request, node),
    OPEN.has(request.status)
      ? el('div', { class: 'request-actions' }, el('button', {
        type: 'button', class: 'quiet', 'aria-label': `Cancel the request: ${requestTitle(request)}`,
        onclick: () => cancelAsk(request.id, node),
      }, 'Cancel'))
      : null,
  ].filter(Boolean));
}

/** What an item is drawn from: it is redrawn only when this changes, so a live region reads only news. */
function requestKey(request) {
  const card = state.cards.get(request.params?.card);
  return JSON.stringify([request.status, request.updated, card?.title, card?.priority, request.params]);
}

/** Puts `requests` in `list` in order, reusing the items already there. */
function fillRequestList(list, drawn, requests) {
  const wanted = new Set(requests.map((r) => r.id));
  for (const [id, entry] of drawn) {
    if (!wanted.has(id)) { entry.node.remove(); drawn.delete(id); }
  }
  let before = list.firstElementChild;
  for (const request of requests) {
    let entry = drawn.get(request.id);
    if (!entry) {
      entry = { node: el('li', { class: 'request', tabindex: '-1', dataset: { request: request.id } }), key: null };
      drawn.set(request.id, entry);
    }
    const key = requestKey(request);
    if (entry.key !== key) { fillRequest(entry.node, request); entry.key = key; }
    if (entry.node !== before) list.insertBefore(entry.node, before);
    before = entry.node.nextElementSibling;
  }
}

function drawRequests() {
  const all = [...state.requests.values()].sort((a, b) => b.created.localeCompare(a.created) || b.id.localeCompare(a.id));
  let closed = 0;
  const shown = all.filter((r) => OPEN.has(r.status) || closed++ < RECENT);
  fillRequestList($('#request-list'), drawnRequests.panel, shown);
  $('#requests-empty').hidden = shown.length > 0;
  const open = all.filter((r) => OPEN.has(r.status)).length;
  const badge = $('#requests-open');
  badge.hidden = open === 0;
  badge.textContent = `${open} open`;
  const forCard = editing ? all.filter((r) => r.capability === PRIORITY && r.params?.card === editing).slice(0, 3) : [];
  fillRequestList($('#card-requests'), drawnRequests.card, forCard);
}

function applyRequestChange({ request }) {
  const before = state.requests.get(request.id);
  if (!keepRequest(request)) return;
  drawRequests();
  // The panel's list is a live region; with the panel closed, say it here.
  if (before && before.status !== request.status && requestsPanel.hidden && request.params?.card !== editing) {
    announce(`${requestTitle(request)}: ${statusText(requestStatus(request))}`);
  }
}

/** The open requests, and the latest closed ones. */
async function loadRequests() {
  if (!state.capabilities.size) return;
  const pages = await Promise.all([
    api.listRequests({ status: 'pending', perPage: 100 }),
    api.listRequests({ status: 'claimed', perPage: 100 }),
    api.listRequests({ perPage: RECENT }),
  ]);
  for (const page of pages) for (const request of page.items) keepRequest(request);
  drawRequests();
}

$('#ask-summary').addEventListener('click', async () => {
  const params = {};
  for (const select of $('#ask-board-params').querySelectorAll('select')) params[select.name] = select.value;
  if (await ask(SUMMARY, params)) showRequests(true);
});

$('#card-suggest').addEventListener('click', () => {
  if (editing) ask(PRIORITY, { card: editing });
});

requestsToggle.addEventListener('click', () => showRequests(requestsPanel.hidden));
$('#requests-close').addEventListener('click', () => { showRequests(false); requestsToggle.focus(); });
requestsPanel.addEventListener('keydown', (ev) => {
  if (ev.key === 'Escape') { showRequests(false); requestsToggle.focus(); }
});

// ---------------------------------------------------------------- keyboard

function columnIndexOf(card) {
  return sortedLists().findIndex((l) => l.id === card.list);
}

function focusCard(id) {
  board.querySelector(`.card[data-id="${CSS.escape(id)}"]`)?.focus();
}

function onCardKey(ev) {
  const id = ev.currentTarget.dataset.id;
  const card = state.cards.get(id);
  if (!card || ev.target !== ev.currentTarget) return;
  const lists = sortedLists();
  const col = columnIndexOf(card);
  const siblings = cardsOf(card.list);
  const index = siblings.findIndex((c) => c.id === id);
  const key = ev.key;
  let handled = true;
  if (key === 'Enter' || key === ' ') {
    openCardDialog(id);
  } else if (ev.shiftKey && (key === 'ArrowLeft' || key === 'ArrowRight')) {
    const target = lists[col + (key === 'ArrowLeft' ? -1 : 1)];
    if (target) moveTo(id, target.id, Math.min(index, cardsOf(target.id).length));
  } else if (ev.shiftKey && (key === 'ArrowUp' || key === 'ArrowDown')) {
    const to = index + (key === 'ArrowUp' ? -1 : 1);
    if (to >= 0 && to < siblings.length) moveTo(id, card.list, to);
  } else if (key === 'ArrowUp' || key === 'ArrowDown') {
    const next = siblings[index + (key === 'ArrowUp' ? -1 : 1)];
    if (next) focusCard(next.id);
  } else if (key === 'ArrowLeft' || key === 'ArrowRight') {
    for (let c = col + (key === 'ArrowLeft' ? -1 : 1); c >= 0 && c < lists.length; c += key === 'ArrowLeft' ? -1 : 1) {
      const there = cardsOf(lists[c].id);
      if (there.length) { focusCard(there[Math.min(index, there.length - 1)].id); break; }
    }
  } else if (key === 'm' || key === 'M') {
    openCardDialog(id, 'list');
  } else if (key === 'd' || key === 'D') {
    toggleDone(id);
  } else if (key === 'Delete' || key === 'Backspace') {
    deleteCard(id).then((gone) => { if (!gone) focusCard(id); });
  } else {
    handled = false;
  }
  if (handled) ev.preventDefault();
}

// ---------------------------------------------------------------- drag and drop

function onDragStart(ev) {
  const id = ev.currentTarget.dataset.id;
  ui.dragging = id;
  ev.dataTransfer.effectAllowed = 'move';
  ev.dataTransfer.setData('text/plain', id);
  requestAnimationFrame(() => ev.target.classList.add('dragging'));
}

function onDragEnd(ev) {
  ev.currentTarget.classList.remove('dragging');
  ui.dragging = null;
  for (const p of board.querySelectorAll('.drop-marker')) p.remove();
  for (const c of board.querySelectorAll('.drag-over')) c.classList.remove('drag-over');
  if (ui.redrawPending) draw();
}

/** Where in `area` a drop at clientY lands: the index among the other cards. */
function dropIndex(area, clientY) {
  const others = [...area.querySelectorAll('.card:not(.dragging)')];
  const i = others.findIndex((c) => {
    const r = c.getBoundingClientRect();
    return clientY < r.top + r.height / 2;
  });
  return i === -1 ? others.length : i;
}

function onDragOver(ev) {
  if (!ui.dragging) return;
  ev.preventDefault();
  ev.dataTransfer.dropEffect = 'move';
  const area = $('.cards', ev.currentTarget);
  area.classList.add('drag-over');
  const index = dropIndex(area, ev.clientY);
  let marker = board.querySelector('.drop-marker');
  if (!marker) marker = el('div', { class: 'drop-marker', 'aria-hidden': 'true' });
  const others = [...area.querySelectorAll('.card:not(.dragging)')];
  const anchor = others[index] || null;
  if (marker.parentNode !== area || marker.nextElementSibling !== anchor) area.insertBefore(marker, anchor);
}

function onDragLeave(ev) {
  if (!ev.currentTarget.contains(ev.relatedTarget)) {
    $('.cards', ev.currentTarget).classList.remove('drag-over');
    board.querySelector('.drop-marker')?.remove();
  }
}

function onDrop(ev) {
  ev.preventDefault();
  const id = ui.dragging || ev.dataTransfer.getData('text/plain');
  const area = $('.cards', ev.currentTarget);
  const listId = ev.currentTarget.dataset.list;
  const index = dropIndex(area, ev.clientY);
  area.classList.remove('drag-over');
  board.querySelector('.drop-marker')?.remove();
  ui.dragging = null;
  if (id) moveTo(id, listId, index);
}

// ---------------------------------------------------------------- live updates

function applyChange({ entity, action, record }) {
  const map = state[entity];
  if (!map) return;
  if (action === 'delete') {
    map.delete(record.id);
  } else {
    if (entity === 'cards' && action === 'create' && !map.has(record.id) && !ui.creating.has(record.title)) {
      ui.fresh.add(record.id);
      setTimeout(() => { ui.fresh.delete(record.id); board.querySelector(`.card[data-id="${CSS.escape(record.id)}"]`)?.classList.remove('fresh'); }, 2500);
    }
    map.set(record.id, record);
  }
  requestRedraw();
}

async function loadAll() {
  const [lists, cards, members] = await Promise.all([
    api.listAll('lists', { sort: 'position,created' }),
    api.listAll('cards', { sort: 'position,created' }),
    api.listAll('members', { sort: 'name' }),
  ]);
  state.lists = new Map(lists.map((r) => [r.id, r]));
  state.cards = new Map(cards.map((r) => [r.id, r]));
  state.members = new Map(members.map((r) => [r.id, r]));
  requestRedraw();
}

function setLive(status) {
  const live = $('#live');
  live.dataset.state = status;
  live.textContent = status === 'live' ? 'Live' : 'Reconnecting…';
}

async function start() {
  try {
    const [who, doc] = await Promise.all([api.identity(), api.describe()]);
    document.title = who.app.name;
    $('#app-name').textContent = who.app.name;
    for (const [name, entity] of Object.entries(doc.entities)) state.fields[name] = entity.fields;
    setUpAsking(Array.isArray(doc.requests) ? doc.requests : []);
  } catch (e) {
    toast(`Could not read the app: ${describeError(e)}`);
  }
  let connectedOnce = false;
  const asking = state.capabilities.size > 0;
  api.subscribe(['lists', 'cards', 'members'], {
    onChange: applyChange,
    onRequest: asking ? applyRequestChange : undefined,
    onStatus: (status) => {
      setLive(status);
      // After a reconnect, reload what may have changed while the stream was down.
      if (status === 'live') {
        if (connectedOnce) {
          loadAll().catch((e) => toast(`Could not reload the board: ${describeError(e)}`));
          loadRequests().catch((e) => toast(`Could not reload the requests to agents: ${describeError(e)}`));
        }
        connectedOnce = true;
        document.body.dataset.live = 'true';
      }
    },
  });
  try {
    await loadAll();
  } catch (e) {
    board.replaceChildren(el('p', { class: 'loading' }, `Could not load the board: ${describeError(e)}`));
    return;
  }
  try {
    await loadRequests();
  } catch (e) {
    toast(`Could not read the requests to agents: ${describeError(e)}`);
  }
  document.body.dataset.ready = 'true';
}

// The keyboard help closes on a click elsewhere or Escape.
document.addEventListener('click', (ev) => {
  const keys = $('.keys');
  if (keys.open && !keys.contains(ev.target)) keys.open = false;
});
document.addEventListener('keydown', (ev) => {
  if (ev.key === 'Escape') $('.keys').open = false;
});

start();
