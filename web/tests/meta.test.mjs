// meta.test.mjs - the data-sources page's catalog browser: a PostgreSQL data
// source of the test stack browsed by a viewer (reading table and column
// names needs no more): its tables with row estimates, a search that
// narrows them, a table's columns (type, kind, NOT NULL, primary key), and
// "Refresh" showing a column added in the database since the cached answer.
// Accessibility checks and screenshots at 1440 and 390 px.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { ADMIN, T, VIEWER, api, checkA11y, login, open, shot, until, useBrowser } from './lib.mjs';

useBrowser();

const PG = process.env.ORRERY_PG_DSN;
const SFX = `${process.pid}`;
const DS = `meta_pg_${SFX}`;
const SCHEMA = `meta_${SFX}`;
const psql = (sql) =>
  execFileSync('psql', [PG, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-Atc', `SET client_min_messages = warning; ${sql}`], { encoding: 'utf8' });

test('data sources: browse a source, search its tables, read a table, refresh', async (t) => {
  assert.ok(PG, 'ORRERY_PG_DSN is set by the test stack');
  const u = new URL(PG);
  psql(
    `DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE; CREATE SCHEMA ${SCHEMA};` +
      `CREATE TABLE ${SCHEMA}.orders (id bigint PRIMARY KEY, code varchar(12) NOT NULL, amount numeric(12,2), at timestamptz);` +
      `CREATE TABLE ${SCHEMA}.customers (id int PRIMARY KEY, name text);` +
      `CREATE VIEW ${SCHEMA}.big_orders AS SELECT id, amount FROM ${SCHEMA}.orders WHERE amount > 10;` +
      `INSERT INTO ${SCHEMA}.orders SELECT g, 'c' || g, g, now() FROM generate_series(1, 30) g;` +
      `ANALYZE ${SCHEMA}.orders; ANALYZE ${SCHEMA}.customers`,
  );
  t.after(() => psql(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`));

  const page = await open(t);
  await login(page, ADMIN);
  const ds = await api(page, 'PUT', `/datasources/${DS}`, {
    kind: 'postgresql',
    params: { host: u.hostname, port: Number(u.port || 5432), user: decodeURIComponent(u.username), database: u.pathname.slice(1) },
    password: decodeURIComponent(u.password),
  });
  assert.ok(ds.status === 200 || ds.status === 201, JSON.stringify(ds.body));

  await login(page, VIEWER);
  await page.goto('/app/admin/datasources');
  const row = page.locator(`tr[data-ds="${DS}"]`);
  await row.waitFor({ timeout: T });
  await row.getByRole('button', { name: 'Browse' }).click();
  const browser = page.getByTestId('meta-browser');
  const list = browser.getByTestId('meta-table-list');
  await list.locator(`tr[data-table="${SCHEMA}.orders"]`).waitFor({ timeout: T });
  // Estimates from the catalog; a view has none.
  assert.match(await list.locator(`tr[data-table="${SCHEMA}.orders"]`).textContent(), /≈ 30/);
  assert.match(await list.locator(`tr[data-table="${SCHEMA}.big_orders"]`).textContent(), /view.*—/);
  assert.match(await browser.getByTestId('meta-fetched').first().textContent(), /fetched/);

  // The search narrows the list (any case) and the count says so.
  await browser.getByLabel('Search tables').fill(`${SCHEMA.toUpperCase()}.ORD`);
  await until(async () => (await list.locator('tbody tr').count()) === 1, 'one table left', T);
  assert.match(await browser.getByTestId('meta-count').textContent(), /^1 of \d+ tables and views/);

  await list.getByRole('button', { name: `${SCHEMA}.orders` }).click();
  const cols = browser.getByTestId('meta-column-table');
  await cols.waitFor({ timeout: T });
  const id = cols.locator('tr[data-column="id"]');
  assert.match(await id.textContent(), /bigint/);
  assert.match(await id.textContent(), /PK 1/);
  assert.match(await cols.locator('tr[data-column="code"]').textContent(), /character varying\(12\).*text.*NOT NULL/);
  assert.match(await cols.locator('tr[data-column="amount"]').textContent(), /numeric\(12,2\).*numeric.*yes/);
  assert.match(await browser.getByTestId('meta-columns').textContent(), /primary key id/);
  await shot(page, 'meta-browser');
  await checkA11y(page, 'data-source browser');

  // The answer is cached: a column added since shows after "Refresh".
  psql(`ALTER TABLE ${SCHEMA}.orders ADD COLUMN note text`);
  const again = await api(page, 'GET', `/datasources/${DS}/tables/${SCHEMA}.orders`);
  assert.equal(again.status, 200);
  assert.ok(!again.body.columns.some((c) => c.name === 'note'), 'the cached answer is served');
  await browser.getByTestId('meta-table-refresh').click();
  await cols.locator('tr[data-column="note"]').waitFor({ timeout: T });

  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, 'meta-browser-390');
  await checkA11y(page, 'data-source browser, 390 px');
});
