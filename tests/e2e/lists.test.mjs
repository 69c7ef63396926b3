// Managing lists on the board: a guard error on a list's name, rename and
// colour, and deleting a list with its cards after confirming.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { launchBrowser, request, startApp } from './lib.mjs';

const APP_PORT = 18492;

describe('lists on the board', { timeout: 120000 }, () => {
  let app;
  let context;
  let page;
  const errors = [];
  const lists = async () => (await request('GET', `${app.url}/api/collections/lists/records`)).body.items;

  before(async () => {
    app = await startApp({ port: APP_PORT });
    context = await launchBrowser();
    page = await context.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${app.url}/`);
    await page.locator('body[data-ready="true"][data-live="true"]').waitFor();
  });

  after(async () => {
    await context?.close().catch(() => {});
    await app?.stop();
  });

  test('an empty board says how to start', async () => {
    assert.match(await page.locator('.welcome').textContent(), /Add a list/);
  });

  test('a list name that is too long or empty is refused next to the field', async () => {
    await page.getByRole('button', { name: '+ Add a list' }).click();
    const name = page.getByLabel('New list name');
    const error = page.locator('.add-list [data-error-for="name"]');
    await name.fill('x'.repeat(120));
    await name.press('Enter');
    await error.waitFor();
    assert.equal(await error.getAttribute('data-code'), 'too_long');
    assert.equal(await name.inputValue(), 'x'.repeat(120));
    await name.fill('');
    await name.press('Enter');
    await page.locator('.add-list [data-error-for="name"][data-code="required_field"]').waitFor();
    assert.deepEqual(await lists(), []);

    await name.fill('Backlog');
    await name.press('Enter');
    await page.locator('.column-title', { hasText: 'Backlog' }).waitFor();
    assert.ok(await error.isHidden(), 'the error goes once the write succeeds');
    assert.ok(await page.locator('.welcome').count() === 0);
  });

  test('a list is renamed and recoloured', async () => {
    await page.getByRole('button', { name: 'Edit list' }).click();
    await page.locator('#list-name').fill('Icebox');
    await page.locator('.swatch-red').click();
    await page.locator('#list-form').getByRole('button', { name: 'Save' }).click();
    await page.locator('.column[data-color="red"] .column-title', { hasText: 'Icebox' }).waitFor();
    const [list] = await lists();
    assert.equal(list.name, 'Icebox');
    assert.equal(list.color, 'red');
  });

  test('a list with cards is deleted, cards and all, after confirming', async () => {
    const [list] = await lists();
    const res = await request('POST', `${app.url}/api/collections/cards/records`, {
      headers: { 'X-LUI-Token': app.token }, json: { title: 'Someday', list: list.id },
    });
    assert.equal(res.status, 200);
    await page.locator('.card', { hasText: 'Someday' }).waitFor();
    await page.getByRole('button', { name: 'Edit list' }).click();
    await page.locator('#list-delete').click();
    assert.match(await page.locator('#confirm-text').textContent(), /Icebox.*1 card/);
    await page.locator('#confirm-ok').click();
    await page.locator('.column').waitFor({ state: 'detached' });
    assert.deepEqual(await lists(), []);
    const cards = await request('GET', `${app.url}/api/collections/cards/records`);
    assert.equal(cards.body.totalItems, 0);
    assert.deepEqual(errors, []);
  });
});
