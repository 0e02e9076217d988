// transfer_form.test.mjs - the designer's guided transfer form, against real
// PostgreSQL tables of the test stack: a developer builds a pg -> pg
// transfer from the form (data sources, tables found by search, auto-map by
// name, a rename, a skipped column, a cast, a constant, the warning of a
// value that may not fit, the dirty-row limit), previews the first rows
// (the dirty one marked), sees the server's field error for a cast that
// cannot work, saves, runs it through keplerd's backfill and the executor,
// and the target holds the mapped rows. Accessibility checks and
// screenshots at 1440 and 390 px.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { ADMIN, CRON, DEV, RUN_T, T, api, checkA11y, login, open, shot, until, useBrowser } from './lib.mjs';

useBrowser();

const SFX = `${process.pid}`;
const DS = `transfer_form_pg_${SFX}`;
const SRC = `transfer_form_src_${SFX}`;
const DST = `transfer_form_dst_${SFX}`;
const TASK = `transfer_form_${SFX}`;
const PG = process.env.ORRERY_PG_DSN;

const psql = (sql) =>
  execFileSync('psql', [PG, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-Atc', `SET client_min_messages = warning; ${sql}`], { encoding: 'utf8' }).trim();

test('a pg -> pg transfer built in the form: mapping, preview, a server field error, save, run', async (t) => {
  assert.ok(PG, 'ORRERY_PG_DSN is set by the test stack');
  const u = new URL(PG);
  psql(
    `DROP TABLE IF EXISTS ${SRC}, ${DST};` +
      `CREATE TABLE ${SRC} (id bigint PRIMARY KEY, name text, code text, born date, secret text);` +
      `INSERT INTO ${SRC} SELECT g, 'name ' || g, CASE WHEN g = 4 THEN 'n/a' ELSE (g * 10)::text END, date '2024-01-01' + g, 'hidden'` +
      ` FROM generate_series(1, 30) g;` +
      `CREATE TABLE ${DST} (id bigint PRIMARY KEY, label varchar(10), code int, day date, origin text NOT NULL)`,
  );
  t.after(() => psql(`DROP TABLE IF EXISTS ${SRC}, ${DST}`));

  const page = await open(t);
  await login(page, ADMIN);
  const ds = await api(page, 'PUT', `/datasources/${DS}`, {
    kind: 'postgresql',
    params: { host: u.hostname, port: Number(u.port || 5432), user: decodeURIComponent(u.username), database: u.pathname.slice(1) },
    password: decodeURIComponent(u.password),
  });
  assert.ok(ds.status === 200 || ds.status === 201, JSON.stringify(ds.body));

  await login(page, DEV);
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto('/app/tasks/new');
  await page.getByTestId('designer').waitFor({ timeout: T });
  await page.locator('input[name="name"]').fill(TASK);
  await page.locator('input[name="schedule"]').fill(CRON);
  await page.getByRole('radio', { name: 'transfer' }).click();
  const form = page.getByTestId('transfer-config');
  await form.waitFor({ timeout: T });

  // Data sources, then the tables, found by a search.
  await until(async () => (await page.getByTestId('xf-src-ds').locator(`option[value="${DS}"]`).count()) === 1, 'the data source is offered');
  await page.getByTestId('xf-src-ds').selectOption(DS);
  await page.getByTestId('xf-dst-ds').selectOption(DS);
  const srcTable = page.getByTestId('xf-src-table');
  await srcTable.fill(`form_src_${SFX}`);
  await until(async () => (await page.locator(`#xf-src-table-list option[value="public.${SRC}"]`).count()) === 1, 'the search finds the source table');
  await srcTable.fill(`public.${SRC}`);
  await srcTable.press('Tab');
  const dstTable = page.getByTestId('xf-dst-table');
  await dstTable.fill(`public.${DST}`);
  await dstTable.press('Tab');

  // The mapping: auto-map by name takes id and code; label <- name (a
  // rename whose text may not fit varchar(10)), day <- born, code cast to
  // int, origin a constant; secret is skipped.
  await page.getByTestId('xf-row-origin').waitFor({ timeout: T });
  await until(async () => (await page.getByTestId('xf-src-label').locator('option[value="s:name"]').count()) === 1, 'the source columns are loaded');
  await page.getByTestId('xf-automap').click();
  await until(
    async () => (await page.getByTestId('xf-src-id').inputValue()) === 's:id' && (await page.getByTestId('xf-src-code').inputValue()) === 's:code',
    'auto-map by name took id and code',
  );
  await page.getByTestId('xf-src-label').selectOption('s:name');
  await page.getByTestId('xf-src-day').selectOption('s:born');
  await page.getByTestId('xf-cast-code').selectOption('int');
  await page.getByTestId('xf-src-origin').selectOption('const');
  await page.getByTestId('xf-const-origin').fill('crm');
  await until(async () => /text → (varchar|character varying)\(10\)/.test(await page.getByTestId('xf-warn-label').textContent()), 'the warning of a value that may not fit');
  await until(async () => /name, secret|secret/.test(await page.getByTestId('xf-skipped').textContent()), 'the skipped columns listed');
  await page.getByTestId('xf-dirty').fill('5');

  // The job shows live in the spec panel.
  const panel = page.getByTestId('spec-panel');
  await until(async () => /"constant": "crm"/.test(await panel.textContent()), 'the mapping in the spec panel');
  const spec = JSON.parse(await panel.locator('pre').textContent());
  assert.deepEqual(spec.config.writers[0].mapping, [
    { target: 'id', source: 'id' },
    { target: 'label', source: 'name' },
    { target: 'code', source: 'code', cast: 'int' },
    { target: 'day', source: 'born' },
    { target: 'origin', constant: 'crm' },
  ]);
  assert.equal(spec.config.reader.type, 'postgres');
  assert.equal(spec.config.max_dirty_rows, 5);

  // Preview: the first rows as written, the dirty one marked.
  await page.getByTestId('xf-preview').click();
  const pv = page.getByTestId('xf-preview-table');
  await pv.waitFor({ timeout: RUN_T });
  const rows = await pv.locator('tbody tr').count();
  assert.ok(rows > 0 && rows <= 20, `${rows} preview rows`);
  assert.match(await pv.locator('thead').textContent(), /label/);
  assert.match(await page.getByTestId('xf-preview-dirty').textContent(), /dirty.*mapping\[2\]/s);
  await checkA11y(page, 'designer transfer form');
  await shot(page, 'transfer-form');

  // A cast that cannot work: the server names the field, shown in its row.
  await page.getByTestId('xf-cast-day').selectOption('int');
  await page.getByTestId('save-task').click();
  const row = page.getByTestId('xf-row-day');
  await until(async () => /cannot be cast to int/.test(await row.textContent()), 'the field error in the row');
  assert.match(page.url(), /\/tasks\/new$/, 'nothing saved');
  await checkA11y(page, 'designer transfer form with a field error');
  await page.getByTestId('xf-cast-day').selectOption('');

  // Save, then run it once.
  await page.getByTestId('save-task').click();
  await page.waitForURL(/\/app\/tasks\/\d+$/, { timeout: T });
  const tid = Number(page.url().split('/').pop());
  const saved = (await api(page, 'GET', `/tasks/${tid}`)).body;
  assert.equal(saved.spec.config.writers[0].mapping.length, 5);
  const now = Date.now();
  const bf = await api(page, 'POST', `/tasks/${tid}/backfill`, {
    from: new Date(now - 2 * 3600e3).toISOString(),
    to: new Date(now - 1 * 3600e3).toISOString(),
  });
  assert.equal(bf.status, 200, JSON.stringify(bf.body));
  const iid = bf.body.created[0];
  let inst;
  await until(
    async () => {
      inst = (await api(page, 'GET', `/instances/${iid}`)).body;
      return ['success', 'failed', 'timed_out'].includes(inst.state);
    },
    `instance ${iid} ends`,
    RUN_T,
  );
  assert.equal(inst.state, 'success', JSON.stringify(inst));
  assert.equal(psql(`SELECT count(*) FROM ${DST}`), '29');
  assert.equal(psql(`SELECT id, label, code, day, origin FROM ${DST} WHERE id = 7`), '7|name 7|70|2024-01-08|crm');

  // The saved task opens in the form; at 390 px too.
  await page.goto(`/app/tasks/${tid}`);
  await until(async () => (await page.getByTestId('xf-const-origin').inputValue()) === 'crm', 'the saved constant in the form');
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, 'transfer-form-390');
  await checkA11y(page, 'designer transfer form 390');

  const off = await api(page, 'DELETE', `/tasks/${tid}`);
  assert.ok(off.status === 200 || off.status === 204, `deactivated (${off.status})`);
});
